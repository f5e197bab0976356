/*
 * slack_int.h -- the Slack client's private header: the client record and
 * what the transport lends the operation files. Only slack/ includes it:
 *   transport.c  form bodies, pacing and 429s, retries, answers and their
 *                error messages, over the shared request core
 *                (http_client.h: handles and their pool, transfers,
 *                back-off, waits, log)
 *   client.c     options, token check, new/free, abort, log
 *   messages.c   text limit, post, find by key
 *   channels.c   channel names, create private, invite, archive
 *   users.c      auth.test, users.info
 *   mentions.c   ids, mention syntax and parsing
 * The functions here run on the thread that called the public API
 * (slack.h) they serve.
 */
#ifndef DG_SLACK_INT_H
#define DG_SLACK_INT_H

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "buf.h"
#include "http_client.h"
#include "slack.h"
#include "str_map.h"
#include "must_check.h"

#define DGS_MAX_429_PER_CALL 16  /* a server answering 429 forever still ends */
#define DGS_MAX_WAIT_MS 3600000L /* longest Retry-After believed */
#define DGS_MAX_PACES 1024       /* pace states kept before idle ones are forgotten */

/* Pacing state of one key: a method, or chat.postMessage and a channel.
 * A token bucket (tokens refill at rate per ms up to burst) and the end of
 * a 429's Retry-After. */
typedef struct dgs_pace {
    char key[96];
    double tokens, burst, rate;
    int64_t last_ms;
    int64_t blocked_until; /* monotonic ms; 0: not blocked */
} dgs_pace;

struct dg_slack {
    char *token; /* the shared core's secret: scrubbed from messages */
    char *user_agent;
    int no_pacing;
    double pace_scale;
    size_t max_text;

    /* The shared request core: base URL, fixed headers (the token's
     * Authorization, Content-Type), limits, log, abort switch, handle pool,
     * the back-off's jitter. */
    dgh_client http;

    pthread_mutex_t mu;  /* guards everything below (and http's jitter) */
    pthread_cond_t cond; /* pacing state changed, or abort (CLOCK_MONOTONIC) */
    dg_map paces;        /* key -> dgs_pace (malloc'd, owns its key) */
    uint64_t rng;
    char self_id[DG_SLACK_ID_LEN]; /* the moderator's user id once auth.test said */
};

/* ---- transport.c ---------------------------------------------------------------- */

/* Fill e (when not NULL) and return rc: status, HTTP status, whether a
 * retry may help, the message (printf format). */
int dgs_fail(dg_slack_err *e, int rc, long http, int retryable, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Append "&key=value" (percent-encoded; the first without '&') to a
 * form body. 0, or -1 out of memory. */
int dgs_form_add(dg_buf *form, const char *key, const char *value) DG_MUST_CHECK;

/*
 * Call a Web API method with a form body under every rule (pacing, 429s,
 * retries, the call's time bound, abort). pace_channel: for
 * chat.postMessage, the channel whose per-channel pace applies (NULL
 * otherwise). idempotent: 1 lets a transfer that may have reached Slack be
 * repeated. On DG_OK *answer is the {"ok":true,...} object (the caller
 * decrefs); otherwise the error is in e (Slack's code, the hint) and
 * *answer is NULL.
 */
int dgs_call(dg_slack *s, const char *method, const char *pace_channel, const char *form,
             int idempotent, json_t **answer, dg_slack_err *e) DG_MUST_CHECK;

/* The pace-key table's free callback (dg_map_each). */
void dgs_pace_free(void *val, void *unused);

/* Copy a string member of o into out (cut to fit; "" when absent). */
void dgs_copy_str(const json_t *o, const char *key, char *out, size_t out_len);

#endif
