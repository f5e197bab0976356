/*
 * store_turns.h -- the SQL of the turn manager (schema v2, v6, v14-v17;
 * store_turns*.c; turn_channels' platform column is v19, store_platform.c).
 *
 * Tables:
 *   turn_channels  one row per channel: mode (normal/discussion/closed),
 *                  discussion initiator, the latest top-level thread root
 *                  (thread policy), closed-notice ping-pong guard, the
 *                  chat platform (v19; 'discord' unless set);
 *   turn_members   the channel's turn order: (channel, position, agent id),
 *                  positions 0.. in first-seen order, only ever appended
 *                  (or replaced whole by a discussion prefill);
 *   turn_ledger    per channel, under one key: a dedup mark per ingested
 *                  message id (several accounts report one message) and
 *                  the turn state of each scope of the channel (key "~conv"
 *                  or "~thread:<root>"), pending hand-off and the Discord
 *                  channel its moderator messages go to included. Marks
 *                  and states of a channel sit side by side, so an ingest
 *                  usually writes one page.
 *   turn_seen      (schema v15) the dedup marks that carry nothing (no
 *                  transition, no state), written by a store alone on its
 *                  file: three columns, the size of a bare insert. A mark
 *                  is in one of the two tables; every check reads both.
 *   turn_command_hints (schema v16) per channel, when the moderator last
 *                  hinted at a mistyped `!dirigent` (its cooldown).
 *   turn_runs      (schema slot v6) agent_end runs already handled:
 *                  (session key, runId), so a replayed agent_end (same
 *                  runId, e.g. a host resuming after a crash) is ignored.
 *
 * Every function runs inside a store transaction (caller holds
 * dg_store_begin .. commit/rollback) and returns DG_OK or a negative
 * dg_status (DG_ERR_IO on SQLite errors: dg_store_errmsg() says why).
 * Statements are prepared once and cached (dg_store_stmt).
 */
#ifndef DG_STORE_TURNS_H
#define DG_STORE_TURNS_H

#include <stddef.h>
#include <stdint.h>
#include "store.h"
#include "store_records.h"
#include "must_check.h"

/*
 * Where a member stands in its channel's turn order. The host shows which
 * agents can receive a channel's messages (each agent account reports the
 * messages it gets; an agent runs only where it reads): an agent a human
 * merely @mentioned may be one that cannot, and must not hold the turn.
 */
typedef enum dg_member_standing {
    DG_MEMBER_NEW = 0,     /* in the order, not yet shown to receive the channel
                               (added by a human's @mention) */
    DG_MEMBER_READS = 1,   /* a message of the channel reached its session */
    DG_MEMBER_RAN = 2,     /* it ran or posted in the channel */
    DG_MEMBER_LEFT = 3,    /* out of the order: it could not receive the channel, or
                               timed out without ever running there; back when it
                               runs or posts there, or a human @mentions it */
    DG_MEMBER_REMOVED = 4, /* out of the order by an admin's `!dirigent remove`;
                               back only by `!dirigent add` */
    DG_MEMBER_STANDINGS = 5
} dg_member_standing;

/* A channel row with its members. Owned strings: dg_turn_channel_row_clear. */
typedef struct dg_turn_channel_row {
    dg_channel_mode mode;
    char *initiator;         /* agent id, NULL unless discussion/closed */
    char *top_root;          /* latest top-level thread root, NULL if none */
    int bot_noticed;         /* a closed notice answered a bot since the last human */
    char **members;          /* agent ids by position */
    unsigned char *standing; /* dg_member_standing by position */
    size_t n_members;
    const char *platform; /* "discord" or "slack" (the store's static string,
                             never freed); NULL when the channel has no row */
} dg_turn_channel_row;

void dg_turn_channel_row_clear(dg_turn_channel_row *r);

/* Channel row of channel_id with its members. DG_ERR_NOT_FOUND when none
 * (then *out is zeroed: a normal channel without members). */
int dg_store_turns_channel_load(dg_store *st, const char *channel_id,
                                dg_turn_channel_row *out) DG_MUST_CHECK;

/* The command hint of channel_id is due at now_ms when none was posted
 * there within cooldown_ms: then it is recorded as posted now and
 * *claimed is 1; else nothing changes and *claimed is 0. */
int dg_store_turns_hint_claim(dg_store *st, const char *channel_id, int64_t now_ms,
                              int64_t cooldown_ms, int *claimed) DG_MUST_CHECK;

/* Insert or update the channel row (members untouched). An update keeps
 * the row's platform; an insert makes it "discord". */
int dg_store_turns_channel_save(dg_store *st, const char *channel_id, dg_channel_mode mode,
                                const char *initiator, const char *top_root, int bot_noticed,
                                int64_t now_ms) DG_MUST_CHECK;

/* Set the chat platform of channel_id's row ("discord" or "slack"; NULL:
 * "discord"), inserting the row (a normal channel) when there is none;
 * nothing else of it changes. DG_ERR_INVALID (nothing written) for any
 * other name. Inside a transaction. */
int dg_store_turns_channel_platform_set(dg_store *st, const char *channel_id, const char *platform,
                                        int64_t now_ms) DG_MUST_CHECK;

/* Append agent_id at position pos (pos = current member count). */
int dg_store_turns_member_add(dg_store *st, const char *channel_id, int pos, const char *agent_id,
                              dg_member_standing standing) DG_MUST_CHECK;

/* The host reports each message per agent session (message_received with
 * ctx.sessionKey): remembered across restarts, so who cannot receive a
 * channel is known before the first report of a new run of the plugin.
 * dg_store_turns_per_agent_get sets *yes. Inside a transaction. */
int dg_store_turns_per_agent_note(dg_store *st) DG_MUST_CHECK;
int dg_store_turns_per_agent_get(dg_store *st, int *yes) DG_MUST_CHECK;

/* How many members channel_id has in the store (*n). */
int dg_store_turns_member_count(dg_store *st, const char *channel_id, int *n) DG_MUST_CHECK;

/* Set the standing of the member at position pos. Inside a transaction. */
int dg_store_turns_member_standing(dg_store *st, const char *channel_id, int pos,
                                   dg_member_standing standing) DG_MUST_CHECK;

/* Remove every member of channel_id (a prefill replaces the order). */
int dg_store_turns_members_clear(dg_store *st, const char *channel_id) DG_MUST_CHECK;

/* The ledger key of sc's state row ("~conv", "~thread:<root>") into buf;
 * returns buf. The cost ledger names scopes the same way. */
const char *dg_store_turns_state_key(const dg_scope *sc, char *buf, size_t len);

/* Turn state of scope sc into *s (msg_seq, not stored, reads 0), its post channel (malloc'd, caller frees;
 * may be NULL) into *post_channel. DG_ERR_NOT_FOUND when none. */
int dg_store_turns_scope_load(dg_store *st, const dg_scope *sc, dg_turn_state *s,
                              char **post_channel) DG_MUST_CHECK;

/* Write the state row of scope sc: replaced when exists is 1 (the row was
 * loaded or saved before; written whole either way), inserted when 0.
 * DG_ERR_INTERNAL when an insert finds the row already there (the caller's
 * belief about it was wrong). */
int dg_store_turns_scope_save(dg_store *st, const dg_scope *sc, const char *post_channel,
                              const dg_turn_state *s, int exists, int64_t now_ms) DG_MUST_CHECK;

/* dg_store_turns_scope_save for a change message_id caused. When that
 * message's mark is still to be written (dg_store_turns_seen_claim_hinted,
 * the store alone on its file) and the scope stays awake (was_active and
 * s->active, its row existing), the mark carries the new state instead of a
 * second row write; dg_store_turns_scope_load reads the newer of the two. */
int dg_store_turns_scope_save_for(dg_store *st, const dg_scope *sc, const char *post_channel,
                                  const dg_turn_state *s, int exists, int was_active,
                                  const char *message_id, int64_t now_ms) DG_MUST_CHECK;

/* Remove every scope of channel_id (a prefill starts the channel over). */
int dg_store_turns_scopes_clear(dg_store *st, const char *channel_id) DG_MUST_CHECK;

/* Record (channel_id, message_id) as ingested: *fresh = 1 the first time,
 * 0 when it was already there. DG_ERR_INVALID for an empty id or one that
 * starts with '~' (reserved for state rows). */
int dg_store_turns_seen_claim(dg_store *st, const char *channel_id, const char *message_id,
                              int64_t now_ms, int *fresh) DG_MUST_CHECK;

/* What a caller remembers of one channel's marks between transactions (the
 * engine keeps one per channel record; all zero: nothing). Valid while the
 * store stays alone on its file: then a message id above the newest mark
 * is new without a read. Only the store writes it. */
typedef struct dg_mark_hint {
    uint64_t epoch;               /* the store's alone epoch it was read in; 0: none */
    char newest[DG_SCOPE_ID_MAX]; /* the channel's greatest mark key, in either
                                    * table ("" none) */
    int since_snap;               /* marks claimed since the oldest one still carrying
                                    * a scope state (schema v14); -1: none carries one */
} dg_mark_hint;

/* A mark carrying a scope state stays among the channel's newest this many
 * marks: readers look no further (the state is folded into its row before
 * it would sink below). */
#define DG_SNAP_WINDOW 16

/* Read the hint of channel_id afresh (a channel record being loaded): one
 * read of its newest mark. Best effort: on failure the hint stays empty. */
void dg_store_turns_hint_load(dg_store *st, const char *channel_id, dg_mark_hint *hint);

/* dg_store_turns_seen_claim, and when the store is alone on its file the
 * fresh mark is written at commit instead (with the transition the message
 * causes: dg_store_transition_add puts it there, one write of the row);
 * hint (may be NULL) spares the read of the dedup check. */
int dg_store_turns_seen_claim_hinted(dg_store *st, const char *channel_id, const char *message_id,
                                     int64_t now_ms, dg_mark_hint *hint, int *fresh) DG_MUST_CHECK;

/* What the store knows of message_id of channel_id (instances sharing
 * it): *at_ms = when it was recorded as ingested (0: it is not), *newer = 1
 * when a later message of the channel (a snowflake: a longer id, or as
 * long and greater) is recorded already, taken in by another instance. */
int dg_store_turns_seen_since(dg_store *st, const char *channel_id, const char *message_id,
                              int64_t *at_ms, int *newer) DG_MUST_CHECK;

/* Forget dedup rows older than before_ms (a message is reported within
 * seconds; rows are kept for days). *removed may be NULL. */
int dg_store_turns_seen_prune(dg_store *st, int64_t before_ms, long *removed) DG_MUST_CHECK;

/* Forget the state rows of dormant thread scopes last written before
 * before_ms (under policy "thread" every thread has one; a later message
 * there starts it afresh). Conversation rows stay: one per channel.
 * *removed may be NULL. */
int dg_store_turns_states_prune(dg_store *st, int64_t before_ms, long *removed) DG_MUST_CHECK;

/* Record run_id of session_key as handled: *fresh = 1 the first time, 0
 * when it was already there. DG_ERR_INVALID for an empty key or id. */
int dg_store_turns_run_claim(dg_store *st, const char *session_key, const char *run_id,
                             int64_t now_ms, int *fresh) DG_MUST_CHECK;

/* Forget handled runs older than before_ms. *removed may be NULL. */
int dg_store_turns_runs_prune(dg_store *st, int64_t before_ms, long *removed) DG_MUST_CHECK;

/* Every scope whose state row is awake (active), for the turn-timeout
 * sweeper after a start: *out (malloc'd, caller frees; NULL when none)
 * gets *n scopes. Rows whose key is not a scope key are skipped. */
int dg_store_turns_active_scopes(dg_store *st, dg_scope **out, size_t *n) DG_MUST_CHECK;

/* Every scope with a state row (active_only 0) or only the awake ones, by
 * channel then scope key; same ownership (the operator's CLI lists them). */
int dg_store_turns_scopes(dg_store *st, int active_only, dg_scope **out, size_t *n) DG_MUST_CHECK;

/* Counts for tests and diagnostics: what = "seen" (dedup marks), "scopes"
 * (state rows) or "members". */
int dg_store_turns_count(dg_store *st, const char *what, long *out) DG_MUST_CHECK;

#endif
