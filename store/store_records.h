/*
 * store_records.h -- the records the store keeps, as plain C: a session
 * scope, a discussion row, a scope's turn state, and the few constructors
 * and destructors that belong to them. No behaviour beyond that: the rules
 * that make and change these records live above the store (scope.h,
 * discuss.h, turns.h, which include this header and keep their names), so
 * the store can keep them without seeing those rules.
 */
#ifndef DG_STORE_RECORDS_H
#define DG_STORE_RECORDS_H

#include <stddef.h>
#include <stdint.h>

/* ---- Session scope (scope.h: how an event's scope is derived) ------------ */

/* Longest channel id / root accepted, NUL included. Discord snowflakes are
 * at most 20 digits, NIP-10 ids 64 hex digits. */
#define DG_SCOPE_ID_MAX 96
/* "thread:" + channel + ":" + root + NUL */
#define DG_SCOPE_KEY_MAX (8 + 2 * DG_SCOPE_ID_MAX)

typedef enum dg_scope_kind { DG_SCOPE_CONVERSATION = 0, DG_SCOPE_THREAD = 1 } dg_scope_kind;

typedef struct dg_scope {
    dg_scope_kind kind;
    char channel_id[DG_SCOPE_ID_MAX];
    char root[DG_SCOPE_ID_MAX]; /* lower-case; "" for a conversation */
} dg_scope;

/* Conversation(channel) / Thread(channel, root) built directly (root is
 * lower-cased). DG_OK or DG_ERR_INVALID. Any thread. */
int dg_scope_conversation(const char *channel_id, dg_scope *out);
int dg_scope_thread(const char *channel_id, const char *root, dg_scope *out);

/* Lower-case ASCII copy of id into out (cap bytes); DG_OK or
 * DG_ERR_INVALID when empty, too long, or holding ':' or a control
 * character. Any thread. */
int dg_scope_normalize_root(const char *id, char *out, size_t cap);

/* ---- Discussion row (discuss.h: the discussion's life cycle) ------------- */

typedef enum dg_discussion_status {
    DG_DISCUSSION_NONE = 0, /* the channel is not a discussion channel */
    DG_DISCUSSION_ACTIVE = 1,
    DG_DISCUSSION_CLOSED = 2
} dg_discussion_status;

/*
 * One discussion row: every field of a discussion (mode is always
 * "discussion") plus the initiator's workspace, the participants and the
 * turn order. Strings owned by the struct (all but platform):
 * dg_discussion_clear().
 */
typedef struct dg_discussion {
    int64_t id;
    char *discussion_channel_id;
    char *origin_channel_id; /* callbackChannelId */
    char *initiator_agent_id;
    char *initiator_session_key;
    char *initiator_session_id; /* ctx sessionId, else the session key */
    char *initiator_workspace;  /* absolute path, as the host gave it */
    char *discuss_guide;
    dg_discussion_status status;
    int64_t created_at_ms;
    int64_t completed_at_ms; /* 0 while active */
    char *summary_path;      /* relative to the workspace; NULL while active */
    char **participants;     /* agent ids invited (initiator excluded) */
    size_t n_participants;
    char **turn_order; /* agent ids, initiator first */
    size_t n_turn_order;
    /* Timers (store v7; read only, not written by insert). */
    int64_t last_activity_ms; /* latest human/agent message; 0: none yet */
    int64_t reminded_for_ms;  /* quiet period reminded (its last activity); -1: none */
    int64_t wrapup_at_ms;     /* lifetime wrap-up request queued at; 0: not yet */
    char end_status[16];      /* closed: "completed" / "expired" / "closed-by-admin" */
    /* The chat platform of its channels: "discord" or "slack" (store v19;
     * discussions opened before it are Discord's). Read back as the
     * store's own static string, never freed (dg_discussion_clear leaves
     * it); on insert NULL means "discord". */
    const char *platform;
} dg_discussion;

/* Free the strings of d and zero it; safe on a zeroed struct and on NULL.
 * Any thread. */
void dg_discussion_clear(dg_discussion *d);

/* ---- Turn state (turns.h: the rules that change it) ---------------------- */

/* Members of one channel's turn order, at most this many (bit masks). */
#define DG_TURN_MAX_MEMBERS 64
#define DG_NOBODY (-1)

typedef enum dg_channel_mode {
    DG_MODE_NORMAL = 0,
    DG_MODE_DISCUSSION = 1, /* idle round -> reminder to the initiator */
    DG_MODE_CLOSED = 2      /* nothing wakes; everybody swapped to no-reply */
} dg_channel_mode;

/*
 * The turn state of one scope. Plain data: the store saves and loads it
 * as is. Bit i of a mask is member position i.
 */
typedef struct dg_turn_state {
    int active;            /* 0 = dormant: nobody speaks */
    int speaker;           /* position, or DG_NOBODY = derived: the next
                                eligible member after `anchor` (used while the
                                order is too short to pin a speaker) */
    int anchor;            /* who the turn passes on from; DG_NOBODY = start */
    uint64_t silent;       /* passed (NO_REPLY / timed out) in this cycle */
    uint64_t mention;      /* human @mention: only these take turns ... */
    uint64_t mention_done; /* ... until each of them has spoken or passed */
    uint64_t consumed;     /* ran to the end since the latest message */
    uint64_t owed;         /* ended its turn speaking; its message has not
                                arrived yet (the turn already moved on) */
    int64_t agent_msgs;    /* agent messages since the last human one */
    int rested;            /* put to rest by the loop guard (notice sent) */
    int idle_reminded;     /* discussion: reminder sent in this idle period */
    int handoff;           /* pending moderator hand-off target, DG_NOBODY */
    int permit;            /* finished speaker whose message may still be sent */
    int64_t permit_ms;
    int64_t last_change_ms;  /* when the speaker last changed (timeouts) */
    int64_t msg_seq;         /* non-moderator messages ingested (in memory
                                only: it relates the scope to runs in flight) */
    int budget;              /* a budget's breaker holds the scope: the dg_budget_kind
                                reached (config.h), 0 = none. Every run is claimed
                                (or swapped) until an admin resumes it ... */
    int64_t budget_until_ms; /* ... or until this time (the budget's window end), 0:
                                only `!dirigent resume` lifts it */
    uint64_t awaiting;       /* in memory only (never stored, not compared by
                                dg_turn_state_same): the speaker was granted the
                                turn together with a moderator message meant to
                                wake it (hand-off, idle reminder, kickoff, admin
                                wake/skip) that has not reached its session yet.
                                At most one bit, always the speaker's. */
} dg_turn_state;

/* A fresh, dormant state. Any thread. */
void dg_turn_state_init(dg_turn_state *s);

#endif
