/*
 * discord.h -- Discord REST client (API v10) on libcurl.
 *
 * The discord/ part: a static library (build/libdgdiscord.a) linked by the
 * plugin (moderator bot: channel creation, the outbox) and by the reference
 * gateway (agent bots post and poll). It depends only on libcurl, jansson,
 * pthreads, include/ and common/ (scrub.h); it knows no turn, discussion or
 * host, and never calls dg_log or the store.
 *
 * Behaviour:
 *   - Rate limits: state per route (method + route template, major id kept)
 *     learnt from X-RateLimit-* headers; a route whose bucket is not known
 *     yet runs one request at a time; a 429 waits retry_after (never less)
 *     and retries; a global 429 holds back every route of this client.
 *     Times from the server are read independently of the locale and
 *     believed up to one hour (a larger value counts as one hour).
 *   - 5xx and transport errors are retried with bounded exponential
 *     back-off and full jitter; 400/401/403/404 (and any other 4xx but 429)
 *     are never retried and come back with Discord's own message.
 *   - Every call is bounded by options.timeout_ms as a whole (attempts,
 *     back-off and rate-limit waits included). A rate-limit wait that would
 *     end past that bound is not started: the call fails with
 *     err->retryable = 1 and err->retry_after_ms set.
 *   - Thread-safe: any thread, several at once. Connections are reused
 *     through a small pool of libcurl handles.
 *   - The token goes into the Authorization header and nowhere else; no
 *     message produced here (err->message, log lines) contains it, not even
 *     when a server echoes the request back in its answer.
 *   - curl_global_init runs once (pthread_once); curl_global_cleanup never.
 *
 * Status mapping (the dg_status returned; err->http_status has the code):
 *   400 -> DG_ERR_INVALID   Discord refused the request's content
 *   401 -> DG_ERR_DENIED    the token is wrong
 *   403 -> DG_ERR_DENIED    the bot lacks a permission ("Missing Permissions")
 *   404 -> DG_ERR_NOT_FOUND unknown channel/guild/message
 *   other 4xx, 5xx after the last retry, 429 beyond the call's bound,
 *   transport errors, timeouts, abort   -> DG_ERR_IO
 *   arguments refused before any request -> DG_ERR_INVALID (http_status 0)
 */
#ifndef DG_DISCORD_H
#define DG_DISCORD_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "log_level.h"
#include "status.h"
#include "snowflake.h"
#include "must_check.h"

typedef struct dg_discord dg_discord;

#define DG_DISCORD_MAX_CONTENT 2000 /* characters (Unicode code points) */
#define DG_DISCORD_MAX_NONCE 25     /* bytes */
#define DG_DISCORD_MAX_NAME 100     /* channel name, characters */
#define DG_DISCORD_MAX_TOPIC 1024

#define DG_PERM_VIEW_CHANNEL (1ull << 10)
#define DG_PERM_SEND_MESSAGES (1ull << 11)
#define DG_PERM_READ_MESSAGE_HISTORY (1ull << 16)

/* Log sink: level is OC_LOG_*; message has no newline and never the token.
 * Called on the thread that makes the request. */
typedef void (*dg_discord_log_fn)(void *log_state, int level, const char *message);

/* Options; the strings are copied by dg_discord_new. Zero means default. */
typedef struct dg_discord_options {
    const char *api_base;    /* required, e.g. "https://discord.com/api/v10"; a
                                 trailing '/' is dropped; http:// only for tests */
    const char *token;       /* required: bot token, without the "Bot " prefix */
    const char *guild_id;    /* default guild for channel creation; may be NULL */
    long timeout_ms;         /* bound of one whole call; default 15000 */
    long connect_timeout_ms; /* TCP+TLS connect bound; default min(5000, timeout_ms) */
    int max_attempts;        /* HTTP attempts for 5xx/transport errors; default 5 */
    long backoff_base_ms;    /* first back-off before jitter; default 250 */
    long backoff_max_ms;     /* back-off cap; default 4000 */
    int max_idle_handles;    /* connection handles kept for reuse; default 4 */
    const char *user_agent;  /* default "DiscordBot (dirigent, <version>)" */
    dg_discord_log_fn log;   /* optional */
    void *log_state;
} dg_discord_options;

/* What went wrong, filled by every call that takes one (may be NULL). */
typedef struct dg_discord_err {
    long http_status;    /* last HTTP status seen; 0: none (local or transport) */
    int discord_code;    /* Discord's JSON "code"; 0 when absent */
    int retryable;       /* 1: the same request may succeed later (429, 5xx,
                                 transport, timeout, abort); 0: it never will */
    long retry_after_ms; /* rate-limited beyond the call's bound: wait this long */
    int attempts;        /* HTTP requests made by the call */
    char message[512];   /* a sentence with Discord's own message, "" on DG_OK */
} dg_discord_err;

/*
 * Create a client. On failure returns DG_ERR_INVALID (a missing or bad
 * option, named in err) or DG_ERR_NOMEM. *out is owned by the caller:
 * dg_discord_free(). Any thread.
 */
int dg_discord_new(const dg_discord_options *o, dg_discord **out, char *err,
                   size_t err_len) DG_MUST_CHECK;

/* Free the client. No call may be running on it (abort and join first).
 * NULL is fine. */
void dg_discord_free(dg_discord *d);

/*
 * Abort switch for shutdown. on=1: every transfer in flight ends within
 * about 50 ms, every rate-limit or back-off wait ends at once, and every
 * later call fails at once; all with DG_ERR_IO, retryable=1, message
 * "aborted". on=0 lets calls run again. Any thread, never blocks for long.
 */
void dg_discord_set_abort(dg_discord *d, int on);

/* The default guild id given in the options, or NULL. Borrowed. */
const char *dg_discord_guild_id(const dg_discord *d);

/*
 * Check a text-channel name the way Discord does for what we send:
 * 1..100 characters, no upper-case letters, no whitespace or control
 * characters. Returns DG_OK or DG_ERR_INVALID with the rule in why.
 */
int dg_discord_check_channel_name(const char *name, char *why, size_t why_len);

/* A private text channel: @everyone (role id = guild id) denied
 * VIEW_CHANNEL; each member (type 1) allowed VIEW_CHANNEL | SEND_MESSAGES |
 * READ_MESSAGE_HISTORY. All strings borrowed for the call. */
typedef struct dg_discord_channel_spec {
    const char *guild_id;          /* NULL: options.guild_id */
    const char *name;              /* dg_discord_check_channel_name rules */
    const char *topic;             /* NULL or <= 1024 characters */
    const char *parent_id;         /* NULL or a category snowflake */
    const char *const *member_ids; /* snowflakes; duplicates dropped. Include
                                         the moderator bot itself: Discord
                                         hides the channel from it otherwise */
    size_t n_members;
} dg_discord_channel_spec;

/*
 * POST /guilds/{guild}/channels. On DG_OK *channel_id is a new string the
 * caller frees. Not idempotent: a transfer that broke after the request
 * was sent is not retried (it may have created the channel); refused
 * connections, 429 and 5xx are. Any thread.
 */
int dg_discord_create_private_channel(dg_discord *d, const dg_discord_channel_spec *spec,
                                      char **channel_id, dg_discord_err *err) DG_MUST_CHECK;

/*
 * GET /guilds/{guild}/channels, then the newest text channel (type 0) named
 * `name` whose topic contains topic_needle (NULL: any topic, none
 * included). guild_id NULL: options.guild_id. Lets a caller that may have
 * created a channel without hearing the answer (a crash, a broken transfer)
 * find it again instead of creating a second one. On DG_OK *channel_id is
 * a new string the caller frees, or NULL when no channel matches. Any
 * thread.
 */
int dg_discord_find_channel(dg_discord *d, const char *guild_id, const char *name,
                            const char *topic_needle, char **channel_id,
                            dg_discord_err *err) DG_MUST_CHECK;

/*
 * POST /channels/{channel_id}/messages with
 *   {"content", "allowed_mentions": {"parse": [], "users": mention_ids}}
 * and, when nonce is not NULL, "nonce" + "enforce_nonce": true, which makes
 * every retry (here or after a crash) return the first message instead of a
 * duplicate. mention_ids: the only users the text may ping (at most 100);
 * @everyone/@here and roles never ping. content: 1..2000 characters.
 * nonce: 1..25 bytes or NULL (then only refused connections, 429 and 5xx
 * are retried). On DG_OK *message_id (if message_id is not NULL) is a new
 * string the caller frees. Any thread.
 */
int dg_discord_post_message(dg_discord *d, const char *channel_id, const char *content,
                            const char *const *mention_ids, size_t n_mentions, const char *nonce,
                            char **message_id, dg_discord_err *err) DG_MUST_CHECK;

/* One message as read back. Every string is owned by the array. */
typedef struct dg_discord_message {
    char *id;
    char *channel_id;
    char *author_id;
    int author_bot; /* author.bot was true */
    char *content;
    char *nonce;        /* NULL when the message has none */
    char **mention_ids; /* users mentioned (and allowed to be pinged) */
    size_t n_mentions;
} dg_discord_message;

/*
 * GET /channels/{channel_id}/messages?after=<after_id>&limit=<limit>.
 * after_id NULL: the latest messages. limit 1..100. On DG_OK *msgs (NULL
 * when *n is 0) is sorted oldest first (ascending id) and owned by the
 * caller: dg_discord_messages_free(*msgs, *n). Any thread.
 */
int dg_discord_get_messages(dg_discord *d, const char *channel_id, const char *after_id, int limit,
                            dg_discord_message **msgs, size_t *n,
                            dg_discord_err *err) DG_MUST_CHECK;

void dg_discord_messages_free(dg_discord_message *msgs, size_t n);

/*
 * GET /users/{user_id}: the user's username and global (display) name,
 * copied (cut to fit) into the caller's buffers; global_name "" when the
 * user has none. DG_OK, or the failure in err (404: no such user, not
 * retryable). Any thread.
 */
int dg_discord_get_user_names(dg_discord *d, const char *user_id, char *username,
                              size_t username_len, char *global_name, size_t global_len,
                              dg_discord_err *err) DG_MUST_CHECK;

/*
 * Any other request, with the same rate limiting and retries. method
 * "GET"/"POST"/"PATCH"/"PUT"/"DELETE"; path starts with '/' and is
 * appended to api_base (query allowed); body borrowed, may be NULL.
 * idempotent: 1 lets broken transfers be retried too. On DG_OK *response
 * (if not NULL) is a new reference (JSON null for an empty 2xx body) that
 * the caller decrefs. Any thread.
 */
int dg_discord_request(dg_discord *d, const char *method, const char *path, const json_t *body,
                       int idempotent, json_t **response, dg_discord_err *err) DG_MUST_CHECK;

/*
 * Pipelined posts: up to `cap` message posts in flight at once
 * on one curl multi, driven by the one thread that owns the pipe (it is not
 * thread-safe, except dg_discord_pipe_wakeup). Every post keeps the rules
 * of dg_discord_post_message (rate limits, 429/5xx/transport retries,
 * options.timeout_ms bound, abort switch) but never makes the others wait:
 * a post waiting for its route's window or a back-off does so on its own
 * timer. Posts need a nonce (a resend is then harmless). The handles are
 * configured once. *out is owned by the caller: dg_discord_pipe_free()
 * (posts still in flight are abandoned). cap 1..256. The client must
 * outlive the pipe.
 */
typedef struct dg_discord_pipe dg_discord_pipe;

int dg_discord_pipe_new(dg_discord *d, size_t cap, dg_discord_pipe **out) DG_MUST_CHECK;
void dg_discord_pipe_free(dg_discord_pipe *p);

/* Start a post identified by tag (arguments as dg_discord_post_message,
 * copied). DG_OK: its result comes from dg_discord_pipe_run. Otherwise the
 * post was refused at once (bad argument, pipe full: err says why). */
int dg_discord_pipe_post(dg_discord_pipe *p, uint64_t tag, const char *channel_id,
                         const char *content, const char *const *mention_ids, size_t n_mentions,
                         const char *nonce, dg_discord_err *err) DG_MUST_CHECK;

/*
 * A post made ready ahead of its turn: body built and checked, URL and
 * rate-limit route worked out. A caller that knows its next post while an
 * earlier one is in flight prepares it then, and the time from an answer to
 * the next request is only curl's (on one channel that time is the whole
 * rate). Arguments as dg_discord_post_message (copied). *out is
 * the caller's until dg_discord_pipe_submit takes it; an unused one goes
 * with dg_discord_post_free. Any thread: it reads only what the client
 * fixed at dg_discord_new.
 */
typedef struct dg_discord_post dg_discord_post;

int dg_discord_post_prepare(const dg_discord *d, const char *channel_id, const char *content,
                            const char *const *mention_ids, size_t n_mentions, const char *nonce,
                            dg_discord_post **out, dg_discord_err *err) DG_MUST_CHECK;
void dg_discord_post_free(dg_discord_post *post);

/* Start a prepared post identified by tag. The pipe takes post in every
 * case (freed here when refused: pipe full, err says so). DG_OK: its
 * result comes from dg_discord_pipe_run. */
int dg_discord_pipe_submit(dg_discord_pipe *p, uint64_t tag, dg_discord_post *post,
                           dg_discord_err *err) DG_MUST_CHECK;

/* A post that ended. message_id (DG_OK only) is owned by the receiver. */
typedef struct dg_discord_done {
    uint64_t tag;
    int rc; /* as dg_discord_post_message */
    char *message_id;
    dg_discord_err err;
} dg_discord_done;

/* Posts started and not ended yet. */
size_t dg_discord_pipe_busy(const dg_discord_pipe *p);

/*
 * Drive the posts for at most wait_ms: returns as soon as one or more
 * ended (their results in done[0..n-1]; done has room for `cap`), or 0
 * after wait_ms, after a wakeup, or at once when nothing is in flight.
 */
size_t dg_discord_pipe_run(dg_discord_pipe *p, long wait_ms, dg_discord_done *done);

/* Make a dg_discord_pipe_run in progress return early. Any thread. */
void dg_discord_pipe_wakeup(dg_discord_pipe *p);

#endif
