/*
 * chat.h -- the chat platform as the core sees it.
 *
 * The chat/ part: one interface of the operations the turn engine, the
 * discussions and the outbox need from a chat platform, and one
 * implementation per platform (chat_discord.c on the discord/ client,
 * chat_slack.c on the slack/ client). The core includes this header and
 * nothing of a platform: the build gives plugin/ and hooks/ no include
 * path to discord/ or slack/.
 *
 *   post as the moderator with an idempotency key, alone or pipelined;
 *   find a post by its key (platforms without server-side idempotency);
 *   create a private room with given members, find it again by name after
 *   a lost answer, remove it (delete, or archive where bots cannot delete);
 *   mention syntax, room-name rules, the text limit, user names.
 *
 * Errors come back as one dg_chat_err whatever the platform, with the
 * dg_status of status.h. Every function may be called from any thread
 * unless it says otherwise; a pipe belongs to the one thread that drives it.
 */
#ifndef DG_CHAT_H
#define DG_CHAT_H

#include <stddef.h>
#include <stdint.h>
#include "status.h"
#include "must_check.h"

typedef enum dg_platform {
    DG_PLATFORM_DISCORD = 1,
    DG_PLATFORM_SLACK = 2,
} dg_platform;

#define DG_CHAT_ID_MAX 32      /* a user, room or message id of any platform, NUL included */
#define DG_CHAT_KEY_MAX 25     /* idempotency key, bytes (Discord's nonce is the smallest) */
#define DG_CHAT_TOPIC_MAX 1024 /* characters of a room topic */

typedef struct dg_chat dg_chat;

/* Log sink: level is OC_LOG_*; the message never holds a token. Called on
 * the thread that makes the request. */
typedef void (*dg_chat_log_fn)(void *log_state, int level, const char *message);

/* Options; strings are copied by dg_chat_new. Zero means the platform's
 * default. */
typedef struct dg_chat_options {
    dg_platform platform;
    const char *api_base; /* NULL: the platform's own (Discord requires one) */
    const char *token;    /* the moderator's bot token (never echoed) */
    const char *space_id; /* Discord: the guild rooms are made in; Slack: unused (the
                             token's workspace) */
    long timeout_ms;      /* bound of one whole call */
    long connect_timeout_ms;
    int max_attempts;     /* HTTP attempts for 5xx and transport errors */
    long backoff_base_ms; /* first back-off before jitter */
    long backoff_max_ms;
    int no_pacing;      /* Slack: no pacing ahead of its limits (tests, benches) */
    dg_chat_log_fn log; /* optional */
    void *log_state;
} dg_chat_options;

/* What kind of failure a call met, whatever the platform: the core acts
 * on this, never on a platform's HTTP status or code. */
typedef enum dg_chat_err_kind {
    DG_CHAT_ERR_NONE = 0,   /* no failure */
    DG_CHAT_ERR_AUTH,       /* the platform refuses the moderator's token itself (wrong,
                               revoked, expired, the app removed): no call passes until an
                               operator fixes it */
    DG_CHAT_ERR_PERMISSION, /* the token is good but lacks a right or scope for this call
                               or room (not a member, a missing permission) */
    DG_CHAT_ERR_RATE,       /* rate-limited past the call's bound: retry_after_ms */
    DG_CHAT_ERR_GONE,       /* the room, thread, message or user does not exist (deleted,
                               archived, never was) */
    DG_CHAT_ERR_TRANSIENT,  /* no usable answer: transport, timeout, the platform failing,
                               shutdown's abort; the same call may pass later */
    DG_CHAT_ERR_INVALID,    /* the request itself is refused (a bad field, a taken name,
                               too long), here or by the platform */
    DG_CHAT_ERR_LOCAL,      /* out of memory, or nothing this platform does: not asked */
} dg_chat_err_kind;

/* "auth", "permission", "rate", "gone", "transient", "invalid", "local";
 * "none" for DG_CHAT_ERR_NONE. Static. */
const char *dg_chat_err_kind_name(dg_chat_err_kind kind);

/* What went wrong, filled by every call that takes one (may be NULL). */
typedef struct dg_chat_err {
    dg_chat_err_kind kind;
    char code[64];       /* the platform's own code ("50013", "missing_scope"), "": for
                            messages, never compared above chat/ */
    int retryable;       /* 1: the same call may succeed later */
    long retry_after_ms; /* rate-limited beyond the call's bound: wait this long */
    int attempts;        /* HTTP requests made by the call */
    char message[512];   /* a sentence with the platform's message and what to do */
} dg_chat_err;

/*
 * A client for o->platform. DG_ERR_INVALID (a missing or bad option, named
 * in err, never the token), DG_ERR_UNSUPPORTED (no such platform) or
 * DG_ERR_NOMEM. *out is owned by the caller: dg_chat_free(). No request is
 * made.
 */
int dg_chat_new(const dg_chat_options *o, dg_chat **out, char *err, size_t err_len) DG_MUST_CHECK;

/* Free the client; no call may be running on it. NULL is fine. */
void dg_chat_free(dg_chat *c);

dg_platform dg_chat_platform(const dg_chat *c);

/* "discord", "slack"; "unknown" otherwise. Static. */
const char *dg_platform_name(dg_platform platform);

/* The platform's name for people: "Discord", "Slack"; "an unknown platform"
 * otherwise. Static. */
const char *dg_platform_title(dg_platform platform);

/* Abort switch for shutdown: on=1 ends transfers and waits within about
 * 50 ms and fails later calls at once (DG_ERR_IO, retryable); on=0 lets
 * calls run again. */
void dg_chat_set_abort(dg_chat *c, int on);

/* The longest text one post may carry, in characters. */
size_t dg_chat_max_text(const dg_chat *c);

/* What a platform fixes whatever the client (no client needed: rows are
 * checked where no client is at hand). dg_platform_max_text: the default
 * text limit of one post, characters (a client may be configured lower:
 * dg_chat_max_text); the id checks: whether id has the shape of the
 * platform's user or channel id. 0 for no such platform. */
size_t dg_platform_max_text(dg_platform platform);
int dg_platform_user_id_valid(dg_platform platform, const char *id);
int dg_platform_channel_id_valid(dg_platform platform, const char *id);

/* The platform whose channel (or user) id has id's shape: the two never
 * overlap (Discord: digits; Slack: a letter then upper-case letters and
 * digits). 0 for neither. Any thread. */
dg_platform dg_platform_of_channel(const char *id);
dg_platform dg_platform_of_user(const char *id);

/*
 * Where the moderator posts, as one string the core can keep: a channel
 * id, or a thread. A Discord thread is a channel of its own, so its target
 * is the thread's id; a Slack thread lives in its channel under its parent
 * message's ts, so its target is "<channel>/<ts>".
 */
#define DG_CHAT_TARGET_MAX 64

/* The target of thread (NULL or "": the channel itself) of channel into
 * out. DG_OK, or DG_ERR_INVALID when channel is no channel id of either
 * platform or a Slack thread is no ts (out ""). Any thread. */
int dg_chat_target_make(const char *channel, const char *thread, char *out, size_t cap);

/* Split a target into its channel and thread ("" when none), each
 * DG_CHAT_ID_MAX bytes. The platform, or 0 when target is neither
 * platform's (channel and thread ""). Any thread. */
dg_platform dg_chat_target_split(const char *target, char channel[DG_CHAT_ID_MAX],
                                 char thread[DG_CHAT_ID_MAX]);

/* The text that mentions user_id ("<@id>" on both platforms) into out.
 * DG_OK, or DG_ERR_INVALID for an id of the wrong shape (out ""). */
int dg_chat_format_mention(const dg_chat *c, const char *user_id, char *out, size_t out_len);

/* Check a room name against the platform's rules for names we send (no
 * client needed: a tool call is checked before the token is). DG_OK or
 * DG_ERR_INVALID with the rule (and, where the platform folds names, the
 * name it would accept) in why; DG_ERR_UNSUPPORTED for no such platform. */
int dg_platform_check_room_name(dg_platform platform, const char *name, char *why, size_t why_len);

/* ---- posts -------------------------------------------------------------------------- */

/* A post as the moderator. All borrowed for the call (copied by
 * dg_chat_post_prepare). */
typedef struct dg_chat_post_spec {
    const char *channel_id;         /* required */
    const char *thread_id;          /* NULL: the channel itself; Slack: a thread's ts */
    const char *text;               /* 1..dg_chat_max_text characters */
    const char *const *mention_ids; /* the only users the text may ping (Discord: the
                                       rest are shown, not pinged; Slack pings every
                                       mention written in the text) */
    size_t n_mentions;
    const char *key;  /* NULL, or 1..DG_CHAT_KEY_MAX-1 bytes: the post's
                                      idempotency key (Discord: its nonce; Slack: its
                                      metadata, found again by dg_chat_find_by_key) */
    int maybe_posted; /* 1: an earlier attempt with this key may have
                                      reached the platform (a crash, a lost answer);
                                      where the platform does not deduplicate by key,
                                      the key is looked up before posting again */
} dg_chat_post_spec;

/*
 * Post. On DG_OK message_id (DG_CHAT_ID_MAX bytes, may be NULL) holds the
 * new message's id (Slack: its ts), or the earlier message's when the key
 * found one.
 */
int dg_chat_post(dg_chat *c, const dg_chat_post_spec *p, char *message_id,
                 dg_chat_err *err) DG_MUST_CHECK;

/*
 * Whether the moderator's post carrying key is among the channel's (or the
 * thread's) recent messages: *found 1 and message_id (may be NULL) its id,
 * or *found 0. DG_ERR_UNSUPPORTED where the platform deduplicates by key
 * itself (Discord's nonce) and keeps no key to search.
 */
int dg_chat_find_by_key(dg_chat *c, const char *channel_id, const char *thread_id, const char *key,
                        int *found, char *message_id, dg_chat_err *err) DG_MUST_CHECK;

/* ---- rooms -------------------------------------------------------------------------- */

/* A private room: only the members (and the moderator, which must be
 * among them on Discord) see it. All borrowed. */
typedef struct dg_chat_room_spec {
    const char *name;      /* dg_chat_check_room_name rules */
    const char *topic;     /* NULL or <= 1024 characters (Slack: not set) */
    const char *parent_id; /* NULL, or a Discord category */
    const char *const *member_ids;
    size_t n_members;
} dg_chat_room_spec;

/* Create it. On DG_OK room_id (DG_CHAT_ID_MAX bytes) has its id. Not
 * repeated once the request may have reached the platform: after a lost
 * answer, dg_chat_room_find. */
int dg_chat_room_create(dg_chat *c, const dg_chat_room_spec *spec, char *room_id,
                        dg_chat_err *err) DG_MUST_CHECK;

/* The newest room named name whose topic holds topic_needle (NULL: any;
 * Slack keeps no topic here and names are unique there, so the name
 * decides). *found 1 and room_id its id, else *found 0. */
int dg_chat_room_find(dg_chat *c, const char *name, const char *topic_needle, int *found,
                      char *room_id, dg_chat_err *err) DG_MUST_CHECK;

/* Make sure every member of spec is in room_id, a room made with spec
 * whose creation may have ended early (a crash between Slack's
 * conversations.create and conversations.invite): Slack invites them
 * again (one already in is fine); on Discord the members come with the
 * room's creation itself, so there is nothing to do. */
int dg_chat_room_admit(dg_chat *c, const char *room_id, const dg_chat_room_spec *spec,
                       dg_chat_err *err) DG_MUST_CHECK;

/* Remove a room the moderator made (Discord: deleted; Slack: archived,
 * which bots can do and deleting they cannot). */
int dg_chat_room_remove(dg_chat *c, const char *room_id, dg_chat_err *err) DG_MUST_CHECK;

/* ---- users -------------------------------------------------------------------------- */

/* The user's handle and display name, cut to fit; display "" when the
 * user has none. DG_ERR_NOT_FOUND: no such user (not retryable). */
int dg_chat_user_names(dg_chat *c, const char *user_id, char *handle, size_t handle_len,
                       char *display, size_t display_len, dg_chat_err *err) DG_MUST_CHECK;

/* ---- pipelined posts ---------------------------------------------------------------- */

/*
 * Up to cap posts in flight at once, driven by the one thread that owns the
 * pipe (only dg_chat_pipe_wakeup may come from another). Every post keeps
 * the rules of dg_chat_post and needs a key. The client must outlive the
 * pipe. *out is owned by the caller: dg_chat_pipe_free() (posts still in
 * flight are abandoned). cap 1..256.
 */
typedef struct dg_chat_pipe dg_chat_pipe;
typedef struct dg_chat_prepared dg_chat_prepared;

int dg_chat_pipe_new(dg_chat *c, size_t cap, dg_chat_pipe **out) DG_MUST_CHECK;
void dg_chat_pipe_free(dg_chat_pipe *p);

/* A post made ready ahead of its turn (checked, its request built), so the
 * time from one answer to the next request on a channel is only the
 * transport's. *out is the caller's until dg_chat_pipe_submit takes it; an
 * unused one goes with dg_chat_post_free. */
int dg_chat_post_prepare(dg_chat *c, const dg_chat_post_spec *spec, dg_chat_prepared **out,
                         dg_chat_err *err) DG_MUST_CHECK;
void dg_chat_post_free(dg_chat_prepared *post);

/* Start a prepared post identified by tag; the pipe takes post in every
 * case (freed here when refused: pipe full, err says so). DG_OK: its
 * result comes from dg_chat_pipe_run. */
int dg_chat_pipe_submit(dg_chat_pipe *p, uint64_t tag, dg_chat_prepared *post,
                        dg_chat_err *err) DG_MUST_CHECK;

/* A post that ended. */
typedef struct dg_chat_done {
    uint64_t tag;
    int rc; /* as dg_chat_prepared */
    char message_id[DG_CHAT_ID_MAX];
    dg_chat_err err;
} dg_chat_done;

/* Posts started and not ended yet. */
size_t dg_chat_pipe_busy(const dg_chat_pipe *p);

/* Drive the posts for at most wait_ms: returns as soon as one or more
 * ended (done has room for cap), or 0 after wait_ms, after a wakeup, or at
 * once when nothing is in flight. */
size_t dg_chat_pipe_run(dg_chat_pipe *p, long wait_ms, dg_chat_done *done);

/* Make a dg_chat_pipe_run in progress return early. Any thread. */
void dg_chat_pipe_wakeup(dg_chat_pipe *p);

#endif
