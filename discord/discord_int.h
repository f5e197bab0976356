/*
 * discord_int.h -- the Discord client's private header: the client record
 * and what the transport lends the endpoint files. Only discord/ includes it:
 *   transport.c  requests and answers, rate-limit routes, 429/5xx/transport
 *                retries, over the shared request core (http_client.h:
 *                handles and their pool, transfers, back-off, waits, log)
 *   client.c     the client's options, headers, abort switch, free, and
 *                the raw request
 *   pipe.c       the pipelined posts
 *   channels.c   the channel-name rule, create a private channel, find one
 *   messages.c   post and read messages, and the post body the pipe shares
 *   users.c      a user's names
 * The functions here run on the thread that called the public API
 * (discord.h) they serve.
 */
#ifndef DG_DISCORD_INT_H
#define DG_DISCORD_INT_H

#include <assert.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discord.h"
#include "http_client.h"
#include "str_map.h"
#include "must_check.h"

/* Rate-limit state of one route (method + template + major id). */
typedef struct dgd_route {
    char key[192];
    char bucket[72]; /* X-RateLimit-Bucket, for logs */
    int known;       /* limit/remaining/reset_at came from headers */
    long limit;
    long remaining;
    int64_t reset_at; /* monotonic ms */
    int inflight;
} dgd_route;

struct dg_discord {
    char *guild_id;
    /* The shared request core: base URL, fixed headers, limits, log, abort
     * switch, handle pool, the back-off's jitter; its secret is the token
     * in short_headers. Its headers (read-only after new): "Expect:" (no
     * 100-continue wait for a large body), then the token's Authorization,
     * Content-Type and User-Agent. */
    dgh_client http;
    /* http.headers from its second node, for a body curl would not add
     * Expect to (each header of the list costs every request a scan by
     * curl for the headers it would set itself); its first carries the
     * token. */
    struct curl_slist *short_headers;

    pthread_mutex_t mu;   /* guards everything below (and http's jitter) */
    pthread_cond_t cond;  /* rate-limit state changed, or abort */
    int64_t global_until; /* monotonic ms */
    dg_map routes;        /* route key -> dgd_route (malloc'd, owns its key):
                                    a lookup per request, whatever the number of
                                    channels posted to */
};

/* What a comment's "d->mu held" says, checked: the mutex is taken. A
 * plain mutex cannot tell by whom, so this catches a caller that took no
 * lock at all; when the mutex was free the trylock takes it and the assert
 * stops the program anyway. */
#define DGD_ASSERT_LOCKED(mu) assert(pthread_mutex_trylock(mu) == EBUSY)

/* ---- transport.c: what client.c and pipe.c share with it ---------------- */

#define DGD_AUTH_PREFIX "Authorization: Bot "
#define DGD_MAX_429_PER_CALL 64 /* a server answering 429 forever still ends */

/* The rate-limit headers of one answer. */
typedef struct dgd_hdrs {
    char bucket[72];
    int has_limit, has_remaining, has_reset, has_retry_after;
    long limit, remaining;
    double reset_after, retry_after;
    int global;
    char scope[16];
} dgd_hdrs;

/* One transfer's answer: its body (the transfer's owner frees it,
 * dgh_body_free) and headers. */
typedef struct dgd_xfer {
    dgh_body body;
    dgd_hdrs h;
} dgd_xfer;

/* The rate-limit route of a request: "POST /channels/123/messages/{id}". */
void dgd_route_key(const char *method, const char *path, char *out, size_t out_len);

/* A route state of d->routes freed (dg_map_each callback). */
void dgd_route_free(void *val, void *unused);

/* Route state for key; created when missing, NULL out of memory. Caller
 * holds d->mu; never keep the pointer across an unlock. */
dgd_route *dgd_route_get(dg_discord *d, const char *key);

/* The error of a call cancelled by the abort switch, set in e. */
int dgd_aborted_err(dg_discord_err *e, const char *route);

/* Give a route's permit back and learn from the answer's headers (http 0:
 * no answer). retry_after_ms > 0 for a 429. Takes d->mu. */
void dgd_rl_release(dg_discord *d, const char *route, const dgd_hdrs *h, long http,
                    long retry_after_ms, int global);

/* curl's header callback filling a dgd_xfer's rate-limit headers (ud).
 * curl's thread: the one running the transfer. */
size_t dgd_on_header(char *line, size_t size, size_t nmemb, void *ud);

/* Discord's message for an answer that is not 2xx into out (the token
 * scrubbed from x's body), its JSON error code into *code. */
void dgd_discord_message(const dg_discord *d, dgd_xfer *x, long http, char *out, size_t out_len,
                         int *code);

/* The status for an HTTP refusal (404: DG_ERR_NOT_FOUND, ...). */
int dgd_status_rc(long http);

/* retry_after of a 429 in ms, rounded up, from body or headers. */
long dgd_retry_after_of(const dgd_xfer *x, int *global);

/* Fill e (when not NULL) and return rc: the error code, the HTTP status,
 * whether a retry may help, and the message (printf format). */
static inline int dgd_set_err(dg_discord_err *e, int rc, long http, int retryable, const char *fmt,
                              ...) __attribute__((format(printf, 5, 6)));

static inline int dgd_set_err(dg_discord_err *e, int rc, long http, int retryable, const char *fmt,
                              ...)
{
    if (e) {
        e->http_status = http;
        e->retryable = retryable;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof e->message, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static inline char *dgd_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The request body as text (malloc'd, the caller frees), or NULL when it
 * cannot be made; takes j. bad: a member could not be added while
 * building j (out of memory), so j is not the request meant. */
char *dgd_dump_checked(json_t *j, int bad);

/* One request under every rule of the transport (rate limits, retries, the
 * call's time bound, the abort switch). json: the body or NULL, not taken.
 * *response (when response is not NULL): the answer, the caller decrefs. */
int dgd_do_request(dg_discord *d, const char *method, const char *path, const char *json,
                   int idempotent, json_t **response, dg_discord_err *e) DG_MUST_CHECK;

/* GET path and check the answer's shape: a JSON value of type want
 * (JSON_ARRAY or JSON_OBJECT). *out: the answer, the caller decrefs; NULL
 * on error. what names the operation in the error ("get messages"). */
static inline int dgd_get_json(dg_discord *d, const char *what, const char *path, json_type want,
                               json_t **out, dg_discord_err *err)
{
    json_t *resp = NULL;
    int rc = dgd_do_request(d, "GET", path, NULL, 1, &resp, err);
    *out = NULL;
    if (rc != DG_OK)
        return rc;
    if (!resp || json_typeof(resp) != want) {
        json_decref(resp);
        return dgd_set_err(err, DG_ERR_IO, err ? err->http_status : 0, 1,
                           "%s: Discord's answer is not %s", what,
                           want == JSON_ARRAY ? "an array" : "an object");
    }
    *out = resp;
    return DG_OK;
}

/* Check a post's arguments and build its JSON body into *json (malloc'd,
 * the caller frees). Returns DG_OK or the error set in err. Shared by
 * dg_discord_post_message and the pipe (pipe.c). */
int dgd_post_body(const char *channel_id, const char *content, const char *const *mention_ids,
                  size_t n_mentions, const char *nonce, char **json,
                  dg_discord_err *err) DG_MUST_CHECK;

#endif
