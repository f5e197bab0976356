/*
 * slack.h -- Slack Web API client for the moderator app, on libcurl.
 *
 * The slack/ part: a static library (build/libdgslack.a) beside discord/,
 * for the chat-platform operations the core needs on Slack: post as the
 * moderator (with an idempotency key), find a post by its key after a
 * crash, create a private channel with given members, archive it, look up
 * users, mention syntax and parsing, text limits. It depends only on
 * libcurl, jansson, pthreads and common/; JSON stays inside the part: every
 * operation takes and gives plain structs. It knows no turn, discussion or
 * host and never calls dg_log or the store.
 *
 * Slack's Web API: POST <api_base>/<method>, a form body (arguments; the
 * metadata object as URL-encoded JSON text, as Slack documents it),
 * "Authorization: Bearer xoxb-...". Every answer is HTTP 200 with
 * {"ok":true,...} or {"ok":false,"error":"<code>"}, except 429.
 *
 * Behaviour:
 *   - Rate limits. Slack limits each method per app per workspace in tiers
 *     (Tier 2 20+/min, Tier 3 50+/min, Tier 4 100+/min) and chat.postMessage
 *     to about one message per second per channel. Calls are paced ahead
 *     of that: a token bucket per method (per method and channel for
 *     chat.postMessage) with a small burst; a call waits on a condition
 *     variable until its bucket has a token (no busy waiting). An HTTP 429
 *     holds the whole method back for its Retry-After (never less), then
 *     the call tries again. A wait that would end past the call's time
 *     bound is not started: the call fails with err->retryable = 1 and
 *     err->retry_after_ms set.
 *   - Retries. Transport errors and HTTP 5xx are retried with bounded
 *     exponential back-off for methods that are safe to repeat (reads,
 *     archive, invite); chat.postMessage and conversations.create are only
 *     retried when the request surely never reached Slack (connection
 *     refused): after a crash or a lost answer, dg_slack_find_by_key tells
 *     whether a post happened. Slack's own refusals (ok:false) are never
 *     retried, except ratelimited.
 *   - Every call is bounded by options.timeout_ms as a whole (attempts,
 *     back-off and rate-limit waits included).
 *   - Thread-safe: any thread, several at once. Connections are reused
 *     through a small pool of libcurl handles.
 *   - The token goes into the Authorization header and nowhere else; no
 *     message produced here (err->message, log lines) contains it, not even
 *     when a server echoes the request.
 *
 * Status mapping (the dg_status returned; err->error has Slack's code):
 *   not_authed, invalid_auth, account_inactive, token_revoked,
 *   token_expired, not_allowed_token_type, missing_scope, no_permission,
 *   restricted_action, not_in_channel            -> DG_ERR_DENIED
 *   channel_not_found, user_not_found, thread_not_found,
 *   message_not_found                            -> DG_ERR_NOT_FOUND
 *   is_archived, name_taken                      -> DG_ERR_CONFLICT
 *   invalid_*, no_text, msg_too_long, too_many_users, and arguments
 *   refused before any request (http_status 0)   -> DG_ERR_INVALID
 *   ratelimited beyond the call's bound, 5xx, transport errors, timeouts,
 *   abort, internal_error, fatal_error and any other code -> DG_ERR_IO
 */
#ifndef DG_SLACK_H
#define DG_SLACK_H

#include <stddef.h>
#include "status.h"
#include "must_check.h"

typedef struct dg_slack dg_slack;

#define DG_SLACK_API_BASE "https://slack.com/api"
/* Slack truncates chat.postMessage text above 40,000 characters and
 * advises keeping it to 4,000 for best results: the default limit is the
 * advice, the hard one Slack's. */
#define DG_SLACK_TEXT_DEFAULT 4000
#define DG_SLACK_TEXT_HARD 40000
#define DG_SLACK_MAX_CHANNEL_NAME 80            /* characters */
#define DG_SLACK_MAX_KEY 128                    /* bytes of an idempotency key */
#define DG_SLACK_OUTBOX_EVENT "dirigent_outbox" /* metadata event_type of keyed posts */

#define DG_SLACK_ID_LEN 32 /* room for a user, bot, team or channel id */
#define DG_SLACK_TS_LEN 32 /* room for a message ts ("1700000000.000100") */

/* Log sink: level is DG_LOG_* (log_level.h); message has no newline and
 * never the token. Called on the thread that makes the request. */
typedef void (*dg_slack_log_fn)(void *log_state, int level, const char *message);

/* Options; strings are copied by dg_slack_new. Zero means default. */
typedef struct dg_slack_options {
    const char *api_base;    /* default DG_SLACK_API_BASE; a trailing '/' is
                                dropped; http:// only for 127.0.0.1 and localhost
                                (tests, a local proxy) */
    const char *token;       /* required: the moderator app's bot token, "xoxb-..." */
    long timeout_ms;         /* bound of one whole call; default 15000 */
    long connect_timeout_ms; /* default min(5000, timeout_ms) */
    int max_attempts;        /* HTTP attempts for 5xx/transport errors; default 4 */
    long backoff_base_ms;    /* default 250 */
    long backoff_max_ms;     /* default 4000 */
    size_t max_text;         /* text limit, characters; default DG_SLACK_TEXT_DEFAULT,
                                at most DG_SLACK_TEXT_HARD */
    int no_pacing;           /* 1: no pacing ahead of Slack's limits (429s are still
                                honoured); for tests and benches against a fake */
    double pace_scale;       /* > 0: every pacing interval multiplied by this
                                (tests: 0.01 makes a 1 s interval 10 ms); 0: 1 */
    int max_idle_handles;    /* connection handles kept for reuse; default 4 */
    const char *user_agent;  /* default "dirigent/<version> (slack)" */
    dg_slack_log_fn log;     /* optional */
    void *log_state;
} dg_slack_options;

/* What went wrong, filled by every call that takes one (may be NULL). */
typedef struct dg_slack_err {
    long http_status;    /* last HTTP status; 0: none (local or transport) */
    char error[64];      /* Slack's error code ("missing_scope"), "" when none */
    char needed[128];    /* missing_scope: the scope(s) Slack says are needed */
    int retryable;       /* 1: the same call may succeed later */
    long retry_after_ms; /* rate-limited beyond the call's bound: wait this long */
    int attempts;        /* HTTP requests made by the call */
    char message[512];   /* a sentence naming the method, Slack's code and what
                            to do; "" on DG_OK */
} dg_slack_err;

/*
 * Check a bot token's shape without ever repeating it: "xoxb-" then
 * letters, digits and '-', 15..255 bytes in all. A user token (xoxp-), an
 * app-level token (xapp-) or anything else is refused with the rule in why
 * (which never contains the token). DG_OK or DG_ERR_INVALID. Any thread.
 */
int dg_slack_check_token(const char *token, char *why, size_t why_len);

/*
 * Create a client. DG_ERR_INVALID (a missing or bad option, named in err,
 * never the token) or DG_ERR_NOMEM. *out is owned by the caller:
 * dg_slack_free(). No request is made. Any thread.
 */
int dg_slack_new(const dg_slack_options *o, dg_slack **out, char *err,
                 size_t err_len) DG_MUST_CHECK;

/* Free the client. No call may be running on it. NULL is fine. */
void dg_slack_free(dg_slack *s);

/* Abort switch for shutdown: on=1 ends transfers and waits within about
 * 50 ms and fails later calls at once (DG_ERR_IO, retryable, "aborted");
 * on=0 lets calls run again. Any thread. */
void dg_slack_set_abort(dg_slack *s, int on);

/* The text limit in force (characters). */
size_t dg_slack_max_text(const dg_slack *s);

/* ---- ids, mentions, names (no requests; any thread) ----------------------------- */

/* A user id: 'U' or 'W' then 2..20 of [A-Z0-9]. */
int dg_slack_user_id_valid(const char *id);

/* A conversation id: 'C', 'G' or 'D' then 2..20 of [A-Z0-9]. */
int dg_slack_channel_id_valid(const char *id);

/* A message ts: digits '.' six digits. */
int dg_slack_ts_valid(const char *ts);

/* "<@U123>" into out (>= DG_SLACK_ID_LEN + 4). DG_OK, or DG_ERR_INVALID
 * for a bad id (out ""). */
int dg_slack_format_mention(const char *user_id, char *out, size_t out_len);

/* One user id. */
typedef struct dg_slack_mention {
    char id[DG_SLACK_ID_LEN];
} dg_slack_mention;

/*
 * The users mentioned in text: "<@U123>" and "<@U123|name>", each once, in
 * order of first appearance, at most max into ids; those inside code
 * (`inline`, ```fenced```, md_code.h) are no mentions. Returns how many
 * were found (may exceed max: only max are written), or -1 when out of
 * memory. text NULL: 0.
 */
long dg_slack_parse_mentions(const char *text, dg_slack_mention *ids, size_t max);

/*
 * A channel name Slack accepts, made from any text: lower case, every run
 * of other characters than [a-z0-9_-] (spaces, periods, upper-case
 * letters folded first) becomes one '-', leading and trailing '-' trimmed,
 * at most DG_SLACK_MAX_CHANNEL_NAME characters. *changed (may be NULL) is
 * 1 when the result differs from in. DG_OK, or DG_ERR_INVALID when
 * nothing usable is left (out "", why says so). out_len >= 81.
 */
int dg_slack_sanitize_channel_name(const char *in, char *out, size_t out_len, int *changed,
                                   char *why, size_t why_len);

/* Check text against limit (characters, well-formed UTF-8, not empty).
 * DG_OK or DG_ERR_INVALID with the rule in why. */
int dg_slack_check_text(const char *text, size_t limit, char *why, size_t why_len);

/* ---- requests (any thread; bounded by options.timeout_ms) ------------------------ */

/* Who the token is (auth.test). */
typedef struct dg_slack_identity {
    char user_id[DG_SLACK_ID_LEN]; /* the moderator's own user id */
    char bot_id[DG_SLACK_ID_LEN];  /* "" for a token that is no bot's */
    char team_id[DG_SLACK_ID_LEN];
    char team[128];
    char user[128];
} dg_slack_identity;

int dg_slack_auth_test(dg_slack *s, dg_slack_identity *out, dg_slack_err *err) DG_MUST_CHECK;

/* A user (users.info; scope users:read). Strings cut to fit. */
typedef struct dg_slack_user {
    char id[DG_SLACK_ID_LEN];
    char name[128];
    char real_name[128];
    char display_name[128];
    int is_bot;
    char bot_id[DG_SLACK_ID_LEN];
} dg_slack_user;

int dg_slack_user_info(dg_slack *s, const char *user_id, dg_slack_user *out,
                       dg_slack_err *err) DG_MUST_CHECK;

/* A post. All borrowed for the call. */
typedef struct dg_slack_post_spec {
    const char *channel_id; /* required */
    const char *thread_ts;  /* NULL: top level; else the thread's parent ts */
    const char *text;       /* 1..max_text characters */
    const char *key;        /* NULL, or 1..DG_SLACK_MAX_KEY bytes: carried as
                               metadata {event_type DG_SLACK_OUTBOX_EVENT,
                               event_payload {"key": key}} for dg_slack_find_by_key */
} dg_slack_post_spec;

/* Where a message is. */
typedef struct dg_slack_posted {
    char channel_id[DG_SLACK_ID_LEN];
    char ts[DG_SLACK_TS_LEN];
} dg_slack_posted;

/*
 * chat.postMessage as the moderator (scope chat:write). On DG_OK *out (may
 * be NULL) says where. Never repeated once it may have reached Slack: on
 * DG_ERR_IO with a key, ask dg_slack_find_by_key before posting again.
 */
int dg_slack_post(dg_slack *s, const dg_slack_post_spec *p, dg_slack_posted *out,
                  dg_slack_err *err) DG_MUST_CHECK;

/* How far dg_slack_find_by_key looks back. Zero: default. */
typedef struct dg_slack_find_opts {
    int page_size;      /* messages per page; default 100 (Slack's), at most 999 */
    int max_pages;      /* default 3 */
    const char *oldest; /* NULL, or a ts: nothing older is read (e.g. a little
                           before the outbox row was made) */
} dg_slack_find_opts;

/*
 * Look for the moderator's message carrying key (dg_slack_post_spec.key)
 * in a channel's recent history (the moderator's: once dg_slack_auth_test
 * has run on this client, messages of other authors are passed over;
 * before that any author's counts, so call it once at start) (conversations.history with
 * include_all_metadata, newest first, bounded pages; scope
 * channels:history or groups:history), or among a thread's replies when
 * thread_ts is not NULL (conversations.replies). *found is 1 and *out (may
 * be NULL) says where when it is there, else *found is 0 (within the pages
 * read). opts may be NULL.
 */
int dg_slack_find_by_key(dg_slack *s, const char *channel_id, const char *thread_ts,
                         const char *key, const dg_slack_find_opts *opts, int *found,
                         dg_slack_posted *out, dg_slack_err *err) DG_MUST_CHECK;

/*
 * A private channel with the given members: conversations.create
 * (is_private; scope groups:write), then conversations.invite of the
 * members (the moderator itself is left out: it is in as the creator).
 * name goes through dg_slack_sanitize_channel_name first; the name used is
 * written to name_out (>= 81 bytes, may be NULL). On DG_OK channel_id (>=
 * DG_SLACK_ID_LEN) has the id. When the invite fails after the channel was
 * made, channel_id has the id too and the error says so (archive it or
 * invite again). name_taken -> DG_ERR_CONFLICT.
 */
int dg_slack_create_private_channel(dg_slack *s, const char *name, const char *const *member_ids,
                                    size_t n_members, char *channel_id, char *name_out,
                                    dg_slack_err *err) DG_MUST_CHECK;

/* A channel as Slack describes it. */
typedef struct dg_slack_channel {
    char id[DG_SLACK_ID_LEN];
    char name[DG_SLACK_MAX_CHANNEL_NAME + 1];
    int is_private;
    int is_archived;
    char creator[DG_SLACK_ID_LEN];
} dg_slack_channel;

/* conversations.info (scope channels:read, groups:read for a private one).
 * A private channel the moderator is not in is channel_not_found. */
int dg_slack_channel_info(dg_slack *s, const char *channel_id, dg_slack_channel *out,
                          dg_slack_err *err) DG_MUST_CHECK;

/*
 * The private channel named name (after dg_slack_sanitize_channel_name)
 * among those the moderator is in and that are not archived
 * (conversations.list types=private_channel, at most 10 pages of 200;
 * scope groups:read). Lets a caller that may have created a channel
 * without hearing the answer (a crash, a lost answer, name_taken on the
 * retry) find it instead of making a second one. *found 1 and *out (may
 * be NULL) when there is one, else *found 0.
 */
int dg_slack_find_private_channel(dg_slack *s, const char *name, int *found, dg_slack_channel *out,
                                  dg_slack_err *err) DG_MUST_CHECK;

/* conversations.invite (scope groups:write or channels:manage); members
 * already in are fine. */
int dg_slack_invite(dg_slack *s, const char *channel_id, const char *const *member_ids,
                    size_t n_members, dg_slack_err *err) DG_MUST_CHECK;

/* conversations.archive: the channel is closed for good. An archived one
 * is fine (already_archived -> DG_OK). */
int dg_slack_archive(dg_slack *s, const char *channel_id, dg_slack_err *err) DG_MUST_CHECK;

/* ---- keyed posts and the pipe (pipe.c) ----------------------------------------- */

/* auth.test once per client, so dg_slack_find_by_key passes over other
 * authors' messages; later calls return DG_OK at once. */
int dg_slack_identify(dg_slack *s, dg_slack_err *err) DG_MUST_CHECK;

/*
 * Post p once: when it may have reached Slack already (maybe_posted: an
 * earlier attempt's answer was lost, or a process died after sending it)
 * and it carries a key, the moderator's message with that key is looked
 * for first and, found, is the answer; else p is posted. Slack has no
 * nonce: this lookup is what keeps a resend from showing twice. *out (may
 * be NULL) says where on DG_OK.
 */
int dg_slack_post_once(dg_slack *s, const dg_slack_post_spec *p, int maybe_posted,
                       dg_slack_posted *out, dg_slack_err *err) DG_MUST_CHECK;

/* A post's own copy for the pipe (dg_slack_post_once's arguments). */
typedef struct dg_slack_job dg_slack_job;

/* Copy p (checked by the caller) into *out, owned by the caller until
 * dg_slack_pipe_submit takes it (else dg_slack_job_free). DG_OK or
 * DG_ERR_NOMEM. */
int dg_slack_job_new(const dg_slack_post_spec *p, int maybe_posted,
                     dg_slack_job **out) DG_MUST_CHECK;
void dg_slack_job_free(dg_slack_job *job);

/*
 * Posts on worker threads: Slack answers each post on its own and the
 * client is thread-safe, so up to 8 go at once (a caller that needs order,
 * as the outbox within a channel, keeps one of that order in flight). The
 * thread that owns the pipe submits and collects; dg_slack_pipe_wakeup
 * may be called from any thread. *out owned by the caller:
 * dg_slack_pipe_free(), which ends the posts under way first (the client's
 * abort switch or time bound ends them). cap: 1..256 posts submitted and
 * not yet collected. s must outlive the pipe.
 */
typedef struct dg_slack_pipe dg_slack_pipe;

int dg_slack_pipe_new(dg_slack *s, size_t cap, dg_slack_pipe **out) DG_MUST_CHECK;
void dg_slack_pipe_free(dg_slack_pipe *p);

/* Start job (dg_slack_post_once) identified by tag. The pipe takes job in
 * every case (freed here when refused: the pipe full, err says so). */
int dg_slack_pipe_submit(dg_slack_pipe *p, uint64_t tag, dg_slack_job *job,
                         dg_slack_err *err) DG_MUST_CHECK;

/* A post that ended. */
typedef struct dg_slack_done {
    uint64_t tag;
    int rc;                   /* as dg_slack_post_once */
    char ts[DG_SLACK_TS_LEN]; /* DG_OK: the message's ts */
    dg_slack_err err;
} dg_slack_done;

/* Posts submitted and not yet collected. */
size_t dg_slack_pipe_busy(const dg_slack_pipe *p);

/* Collect ended posts into done (room for cap): returns as soon as one or
 * more ended, or 0 after wait_ms, after a wakeup, or at once when nothing
 * is in flight. */
size_t dg_slack_pipe_run(dg_slack_pipe *p, long wait_ms, dg_slack_done *done);

/* Make a dg_slack_pipe_run in progress return early. Any thread. */
void dg_slack_pipe_wakeup(dg_slack_pipe *p);

#endif
