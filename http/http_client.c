/*
 * http_client.c -- the request core of the chat-platform clients: global
 * init, limits, the abort switch and waits, back-off, log, header lists,
 * the handle pool, the body buffer and one transfer. See http_client.h.
 */
#include "http_client.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scrub.h"
#include "status.h"

/* ---- process, clock, limits -------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_OK;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

CURLcode dgh_global_init(void)
{
    pthread_once(&curl_once, curl_init_once);
    return curl_init_rc;
}

int64_t dgh_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void dgh_limits_pick(dgh_limits *out, const dgh_limits *given, const dgh_limits *dflt)
{
    out->timeout_ms = given->timeout_ms ? given->timeout_ms : dflt->timeout_ms;
    out->connect_ms = given->connect_ms ? given->connect_ms : dflt->connect_ms;
    if (out->connect_ms > out->timeout_ms)
        out->connect_ms = out->timeout_ms;
    out->backoff_base_ms = given->backoff_base_ms ? given->backoff_base_ms : dflt->backoff_base_ms;
    out->backoff_max_ms = given->backoff_max_ms ? given->backoff_max_ms : dflt->backoff_max_ms;
    out->max_attempts = given->max_attempts ? given->max_attempts : dflt->max_attempts;
    out->max_idle = given->max_idle ? given->max_idle : dflt->max_idle;
}

/* ---- the client's life, the abort switch, waits --------------------------------- */

int dgh_init(dgh_client *h, const dgh_limits *lim, dgh_log_fn log, void *log_state,
             pthread_mutex_t *mu, pthread_cond_t *cond)
{
    h->idle = calloc((size_t)lim->max_idle, sizeof *h->idle);
    if (!h->idle)
        return DG_ERR_NOMEM;
    h->timeout_ms = lim->timeout_ms;
    h->connect_ms = lim->connect_ms;
    h->backoff_base_ms = lim->backoff_base_ms;
    h->backoff_max_ms = lim->backoff_max_ms;
    h->max_attempts = lim->max_attempts;
    h->max_idle = lim->max_idle;
    h->log = log;
    h->log_state = log_state;
    h->mu = mu;
    h->cond = cond;
    /* Jitter only: distinct per client and process is all it needs. */
    h->rng = (uint64_t)dgh_mono_ms() * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)h ^
             (uint64_t)getpid();
    if (!h->rng)
        h->rng = 1;
    atomic_init(&h->abort, 0);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(mu, NULL);
    pthread_mutex_init(&h->pool_mu, NULL);
    return DG_OK;
}

/* Wipe every line of a header list (one carries the token) and free it. */
static void headers_free(struct curl_slist *list)
{
    for (struct curl_slist *n = list; n; n = n->next)
        memset(n->data, 0, strlen(n->data));
    curl_slist_free_all(list);
}

static void slot_drop(dgh_slot s)
{
    if (s.easy)
        curl_easy_cleanup(s.easy);
    if (s.multi)
        curl_multi_cleanup(s.multi);
}

void dgh_destroy(dgh_client *h)
{
    for (size_t i = 0; i < h->n_idle; i++)
        slot_drop(h->idle[i]);
    h->n_idle = 0;
    free(h->idle);
    h->idle = NULL;
    pthread_cond_destroy(h->cond);
    pthread_mutex_destroy(h->mu);
    pthread_mutex_destroy(&h->pool_mu);
    headers_free(h->headers);
    h->headers = NULL;
    free(h->base);
    h->base = NULL;
}

void dgh_set_abort(dgh_client *h, int on)
{
    /* Stored under the lock: a waiter that has just seen the switch off
     * is then already waiting when the broadcast comes. */
    pthread_mutex_lock(h->mu);
    atomic_store(&h->abort, on ? 1 : 0);
    pthread_cond_broadcast(h->cond);
    pthread_mutex_unlock(h->mu);
}

void dgh_wait_until(dgh_client *h, int64_t until)
{
    /* What "the caller holds *mu" says, checked: a plain mutex cannot tell
     * by whom, so this catches a caller that took no lock at all. */
    assert(pthread_mutex_trylock(h->mu) == EBUSY);
    struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
    pthread_cond_timedwait(h->cond, h->mu, &ts);
}

int dgh_sleep_until(dgh_client *h, int64_t until)
{
    pthread_mutex_lock(h->mu);
    while (!atomic_load(&h->abort) && dgh_mono_ms() < until)
        dgh_wait_until(h, until);
    int ab = atomic_load(&h->abort);
    pthread_mutex_unlock(h->mu);
    return ab ? -1 : 0;
}

long dgh_backoff_ms(dgh_client *h, int failures)
{
    long b = h->backoff_base_ms;
    for (int i = 1; i < failures && b < h->backoff_max_ms; i++)
        b *= 2;
    if (b > h->backoff_max_ms)
        b = h->backoff_max_ms;
    pthread_mutex_lock(h->mu);
    /* xorshift64*: jitter only, no need for more. */
    h->rng ^= h->rng >> 12;
    h->rng ^= h->rng << 25;
    h->rng ^= h->rng >> 27;
    uint64_t r = h->rng * 0x2545F4914F6CDD1Dull;
    pthread_mutex_unlock(h->mu);
    long half = b / 2;
    return half + (long)(r % (uint64_t)(b - half + 1));
}

/* ---- the secret and the log ------------------------------------------------------ */

void dgh_scrub(const dgh_client *h, char *text)
{
    /* Also a piece of it (a truncated echo), in any case (scrub.h). */
    if (h->secret && text)
        dg_scrub_secret(text, h->secret);
}

void dgh_log(dgh_client *h, int level, const char *fmt, ...)
{
    if (!h->log)
        return;
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    dgh_scrub(h, buf);
    h->log(h->log_state, level, buf);
}

/* ---- the endpoint ------------------------------------------------------------------- */

int dgh_set_endpoint(dgh_client *h, const char *base, const char *const *lines, size_t n)
{
    char *b = strdup(base);
    if (!b)
        return DG_ERR_NOMEM;
    size_t bl = strlen(b);
    while (bl > 0 && b[bl - 1] == '/')
        b[--bl] = '\0';
    struct curl_slist *list = NULL;
    for (size_t i = 0; i < n; i++) {
        struct curl_slist *next = curl_slist_append(list, lines[i]);
        if (!next) {
            headers_free(list);
            free(b);
            return DG_ERR_NOMEM;
        }
        list = next;
    }
    h->base = b;
    h->headers = list;
    return DG_OK;
}

/* ---- the handle pool ------------------------------------------------------------------ */

/* A handle from h's pool, or a new one; {NULL, NULL} out of memory. Give
 * it back with slot_put. */
static dgh_slot slot_get(dgh_client *h)
{
    dgh_slot s = {NULL, NULL};
    pthread_mutex_lock(&h->pool_mu);
    if (h->n_idle)
        s = h->idle[--h->n_idle];
    pthread_mutex_unlock(&h->pool_mu);
    if (!s.easy) {
        s.multi = curl_multi_init();
        s.easy = curl_easy_init();
        if (!s.multi || !s.easy) {
            slot_drop(s);
            s.multi = NULL;
            s.easy = NULL;
        } else {
            curl_multi_setopt(s.multi, CURLMOPT_MAXCONNECTS, 2L);
        }
    }
    return s;
}

/* Return s to h's pool, or clean it up when the pool is full. */
static void slot_put(dgh_client *h, dgh_slot s)
{
    pthread_mutex_lock(&h->pool_mu);
    if ((int)h->n_idle < h->max_idle) {
        h->idle[h->n_idle++] = s;
        s.easy = NULL;
        s.multi = NULL;
    }
    pthread_mutex_unlock(&h->pool_mu);
    slot_drop(s);
}

/* ---- the body ------------------------------------------------------------------------- */

size_t dgh_on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    dgh_body *b = ud;
    size_t n = size * nmemb;
    if (b->len + n + 1 > DGH_MAX_BODY) {
        b->too_big = 1;
        return 0;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *nb = realloc(b->s, cap);
        if (!nb)
            return 0;
        b->s = nb;
        b->cap = cap;
    }
    memcpy(b->s + b->len, ptr, n);
    b->len += n;
    b->s[b->len] = '\0';
    return n;
}

void dgh_body_clear(dgh_body *b)
{
    if (b->cap > (64u << 10)) {
        free(b->s);
        b->s = NULL;
        b->cap = 0;
    }
    b->len = 0;
    b->too_big = 0;
    if (b->s)
        b->s[0] = '\0';
}

void dgh_body_free(dgh_body *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

/* ---- one transfer ----------------------------------------------------------------------- */

void dgh_easy_setup(CURL *e, long connect_ms, dgh_body *body, curl_write_callback on_header,
                    void *header_data, char *cerr, int fresh)
{
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, dgh_on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, body);
    if (on_header) {
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, header_data);
    }
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, fresh ? 1L : 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}

const char *dgh_reason(CURLcode cc, const dgh_body *body, char *cerr)
{
    if (cc == CURLE_WRITE_ERROR && body->too_big)
        snprintf(cerr, CURL_ERROR_SIZE, "answer larger than %u bytes", DGH_MAX_BODY);
    return cerr[0] ? cerr : curl_easy_strerror(cc);
}

/* Run e on multi until it ends or the abort switch is on (polled every
 * DGH_POLL_MS): curl's code for e, or DGH_ABORTED. */
static CURLcode run_polled(dgh_client *h, CURLM *multi, CURL *e)
{
    if (curl_multi_add_handle(multi, e) != CURLM_OK)
        return CURLE_FAILED_INIT;
    CURLcode cc = CURLE_OK;
    int running = 1, aborted = 0;
    while (running) {
        if (curl_multi_perform(multi, &running) != CURLM_OK) {
            cc = CURLE_FAILED_INIT;
            break;
        }
        if (!running)
            break;
        if (atomic_load(&h->abort)) {
            aborted = 1;
            break;
        }
        curl_multi_poll(multi, NULL, 0, DGH_POLL_MS, NULL);
    }
    if (!aborted && cc == CURLE_OK) {
        int left;
        CURLMsg *m;
        cc = CURLE_GOT_NOTHING;
        while ((m = curl_multi_info_read(multi, &left)))
            if (m->msg == CURLMSG_DONE && m->easy_handle == e)
                cc = m->data.result;
    }
    curl_multi_remove_handle(multi, e);
    return aborted ? DGH_ABORTED : cc;
}

/* One transfer of r on slot s, tmo ms at most. */
static CURLcode perform(dgh_client *h, dgh_slot *s, const dgh_request *r, long tmo, dgh_body *body,
                        long *http, char *cerr)
{
    CURL *e = s->easy;
    curl_easy_reset(e);
    dgh_easy_setup(e, h->connect_ms < tmo ? h->connect_ms : tmo, body, r->on_header, r->header_data,
                   cerr, r->fresh);
    curl_easy_setopt(e, CURLOPT_URL, r->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->headers);
    if (r->user_agent)
        curl_easy_setopt(e, CURLOPT_USERAGENT, r->user_agent);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, tmo);
    if (!strcmp(r->method, "GET")) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
        if (strcmp(r->method, "POST") != 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)(r->body ? strlen(r->body) : 0));
    }
    CURLcode cc = run_polled(h, s->multi, e);
    *http = 0;
    if (cc == DGH_ABORTED)
        return cc;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, http);
    (void)dgh_reason(cc, body, cerr);
    return cc;
}

CURLcode dgh_exchange(dgh_client *h, int64_t deadline, const dgh_request *r, dgh_body *body,
                      long *http, char *cerr)
{
    *http = 0;
    cerr[0] = '\0';
    long tmo = (long)(deadline - dgh_mono_ms());
    if (tmo <= 0)
        return DGH_NO_TIME;
    dgh_slot s = slot_get(h);
    if (!s.easy)
        return DGH_NO_HANDLE;
    CURLcode cc = perform(h, &s, r, tmo, body, http, cerr);
    slot_put(h, s);
    return cc;
}
