/*
 * http_client.h -- the request core the chat-platform clients (discord/,
 * slack/) share, on libcurl: the once-only global init, the base URL and
 * the fixed headers, a pool of reusable transfer handles, one transfer that the abort
 * switch ends within DGH_POLL_MS, the answer's body collected into a
 * buffer, bounded exponential back-off with jitter, abort-aware waits on
 * the monotonic clock, and the client's secret scrubbed from its log
 * lines. It knows no platform: what a status, a header or a body means,
 * which request may be repeated and what the messages say are the
 * client's.
 *
 * Depends on libcurl, pthreads and common/ only. Every function may be
 * called from any thread unless it says otherwise; a dgh_client is shared
 * by the threads of its platform client.
 */
#ifndef DG_HTTP_CLIENT_H
#define DG_HTTP_CLIENT_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "must_check.h"

#define DGH_MAX_BODY (8u << 20) /* answers larger than this are refused */
#define DGH_POLL_MS 50          /* abort latency of a transfer in flight */

/* dgh_exchange's results besides curl's own codes (which none of these
 * values is): the abort switch ended the transfer; the call's time was
 * up before it began; no transfer handle could be made (out of memory).
 * With the last two nothing was sent. */
#define DGH_ABORTED ((CURLcode)-1)
#define DGH_NO_TIME ((CURLcode)-2)
#define DGH_NO_HANDLE ((CURLcode)-3)

/* A log sink: the same shape as the platform clients' own (discord.h,
 * slack.h), so theirs is stored here as it is. Called on the thread that
 * logs: the one making the request. */
typedef void (*dgh_log_fn)(void *log_state, int level, const char *message);

/* The bounds of a client's requests, resolved (no zero left) by the
 * platform client from its options and defaults (dgh_limits_pick). */
typedef struct dgh_limits {
    long timeout_ms;      /* bound of one whole call */
    long connect_ms;      /* TCP+TLS connect bound, at most timeout_ms */
    long backoff_base_ms; /* first back-off step before jitter */
    long backoff_max_ms;  /* back-off cap */
    int max_attempts;     /* HTTP attempts for 5xx and transport failures */
    int max_idle;         /* idle transfer handles kept for reuse */
} dgh_limits;

/* One reusable transfer handle. The multi handle keeps the connection
 * cache, so a slot reuses its keep-alive connection across requests, and
 * lets a transfer be polled for the abort switch. */
typedef struct dgh_slot {
    CURLM *multi;
    CURL *easy;
} dgh_slot;

/*
 * The shared part of a platform client, embedded in its record. The
 * lock and condition are the client's (its rate-limit state lives under
 * the same lock, and its waits must wake on abort): dgh_init initialises
 * them, dgh_destroy destroys them.
 */
typedef struct dgh_client {
    /* Read-only after dgh_init. */
    long timeout_ms, connect_ms, backoff_base_ms, backoff_max_ms;
    int max_attempts, max_idle;
    dgh_log_fn log; /* NULL: no log */
    void *log_state;
    /* Scrubbed from every log line (dgh_scrub); set once by the platform
     * client before its first request, owned by it and outliving h. */
    const char *secret;
    char *base;                 /* the API's base URL, no trailing '/' */
    struct curl_slist *headers; /* the fixed headers of every request */
    pthread_mutex_t *mu;        /* the client's lock: guards rng here */
    /* The client's condition (CLOCK_MONOTONIC): its state changed, or the
     * abort switch. */
    pthread_cond_t *cond;

    atomic_int abort;

    uint64_t rng; /* back-off jitter; *mu */

    pthread_mutex_t pool_mu; /* guards idle, n_idle */
    dgh_slot *idle;          /* max_idle entries */
    size_t n_idle;
} dgh_client;

/* libcurl's curl_global_init, once per process whatever the number of
 * clients and threads; the first call's result, CURLE_OK on success. */
CURLcode dgh_global_init(void);

/* Monotonic clock, ms. */
int64_t dgh_mono_ms(void);

/* The limits a platform client's options give (0: its default), from the
 * fields its options struct shares with the others (timeout_ms,
 * connect_timeout_ms, backoff_base_ms, backoff_max_ms, max_attempts,
 * max_idle_handles). */
#define DGH_LIMITS_GIVEN(o)                                                                        \
    {                                                                                              \
        .timeout_ms = (o)->timeout_ms, .connect_ms = (o)->connect_timeout_ms,                      \
        .backoff_base_ms = (o)->backoff_base_ms, .backoff_max_ms = (o)->backoff_max_ms,            \
        .max_attempts = (o)->max_attempts, .max_idle = (o)->max_idle_handles                       \
    }

/* out from given, each zero field taken from dflt; connect_ms capped at
 * timeout_ms. */
void dgh_limits_pick(dgh_limits *out, const dgh_limits *given, const dgh_limits *dflt);

/* Make h (zeroed by the caller) with lim, the log sink (log may be NULL)
 * and the client's lock and condition, which are initialised here. DG_OK,
 * or DG_ERR_NOMEM with nothing made (h, *mu and *cond untouched). What is
 * made here is h's: dgh_destroy frees it. */
int dgh_init(dgh_client *h, const dgh_limits *lim, dgh_log_fn log, void *log_state,
             pthread_mutex_t *mu, pthread_cond_t *cond) DG_MUST_CHECK;

/* Free what dgh_init and dgh_set_endpoint made: the idle handles and the
 * pool, the lock and condition, the base URL, the header list (its lines
 * wiped first: one carries the token). No request may be in flight. */
void dgh_destroy(dgh_client *h);

/* The abort switch: on ends waits and transfers in flight (their callers
 * see an abort), and stops new ones; off lets requests run again. Wakes
 * every waiter on *cond. */
void dgh_set_abort(dgh_client *h, int on);

/* 1 while the abort switch is on. */
static inline int dgh_aborted(dgh_client *h)
{
    return atomic_load(&h->abort);
}

/* Wait on *cond until `until` (monotonic ms) at the latest, or a
 * broadcast. The caller holds *mu. */
void dgh_wait_until(dgh_client *h, int64_t until);

/* Sleep until `until` (monotonic ms) unless the abort switch is on
 * first: 0, or -1 when aborted. Takes *mu. */
int dgh_sleep_until(dgh_client *h, int64_t until);

/* The back-off before retry number failures (1: the first), ms: the step
 * base * 2^(failures-1) capped at backoff_max_ms, with equal jitter (at
 * least half the step, so retries still spread out). Takes *mu. */
long dgh_backoff_ms(dgh_client *h, int failures);

/* Overwrite every piece of h->secret in text with '*' (NULL text or no
 * secret: no-op). */
void dgh_scrub(const dgh_client *h, char *text);

/* A line to h's log sink, if any, the secret scrubbed from it. */
void dgh_log(dgh_client *h, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Set h's base URL (copied, trailing '/' dropped) and the fixed headers
 * of every request (n lines, copied in order; the caller wipes its own
 * copy of a secret one). The copies are h's: dgh_destroy frees them. Once,
 * before the first request. DG_OK, or DG_ERR_NOMEM with h unchanged. */
int dgh_set_endpoint(dgh_client *h, const char *base, const char *const *lines,
                     size_t n) DG_MUST_CHECK;

/* An answer's body: NUL-terminated once anything came (s is NULL
 * before). Start from {0}; the owner frees s (dgh_body_free). */
typedef struct dgh_body {
    char *s;
    size_t len, cap;
    int too_big; /* the answer passed DGH_MAX_BODY: the transfer failed */
} dgh_body;

/* curl's write callback filling a dgh_body (ud). Called by curl on the
 * thread running the transfer. */
size_t dgh_on_body(char *ptr, size_t size, size_t nmemb, void *ud);

/* Forget b's content for the next answer; the buffer stays (no
 * allocation per answer) unless an unusually large answer grew it. */
void dgh_body_clear(dgh_body *b);

/* Free b->s and reset b to empty. */
void dgh_body_free(dgh_body *b);

/* The options every transfer of the core has, set on e: no signals, the
 * connect bound, the body into body, each header line to on_header with
 * header_data (curl calls it on the thread running the transfer; NULL:
 * headers are not read), curl's error text into cerr (CURL_ERROR_SIZE
 * bytes, as long as e uses it), no redirects, http and https only, and a
 * fresh connection when fresh: libcurl silently sends a request again when
 * a reused keep-alive connection dies before any answer, which a request
 * that must not run twice cannot have. */
void dgh_easy_setup(CURL *e, long connect_ms, dgh_body *body, curl_write_callback on_header,
                    void *header_data, char *cerr, int fresh);

/* One request as dgh_exchange sends it. */
typedef struct dgh_request {
    const char *method;     /* "GET", "POST" or another verb */
    const char *url;        /* sent with h's fixed headers */
    const char *user_agent; /* NULL: none set here (the headers may carry it) */
    const char *body;       /* sent by every method but GET; NULL: an empty one */
    int fresh;              /* 1: a new connection (see dgh_easy_setup) */
    curl_write_callback on_header;
    void *header_data;
} dgh_request;

/*
 * One HTTP exchange of r (the platform's rate-limit permit already
 * taken) within the call's time bound: the transfer may take what is left
 * until deadline (monotonic ms), on a handle of h's pool, and its body
 * goes into body. Returns curl's code or one of DGH_ABORTED, DGH_NO_TIME,
 * DGH_NO_HANDLE; the HTTP status in *http (0: none); curl's error text in
 * cerr (CURL_ERROR_SIZE bytes; "" when curl said none). The caller's
 * thread runs the transfer and its callbacks.
 */
CURLcode dgh_exchange(dgh_client *h, int64_t deadline, const dgh_request *r, dgh_body *body,
                      long *http, char *cerr);

/* Why a transfer that ended with cc failed, for a message: curl's error
 * text in cerr, replaced by the answer's size when body passed
 * DGH_MAX_BODY, else curl's name for cc. Points into cerr or static
 * storage. */
const char *dgh_reason(CURLcode cc, const dgh_body *body, char *cerr);

#endif
