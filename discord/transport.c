/*
 * transport.c -- the Discord client's transport on libcurl: rate limits,
 * retries, a pool of reusable handles, an abort switch for shutdown, the
 * raw request and the pipelined posts. The endpoints (channels.c,
 * messages.c, users.c) call it through discord_int.h. See discord.h.
 *
 * Self-contained on purpose (libcurl, jansson, pthreads only): the reference
 * gateway links this library into its own binary.
 */
#include "buf.h"
#include "discord_int.h"

#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "scrub.h"

#ifndef DG_VERSION
#define DG_VERSION "0.0.0"
#endif

#define DEFAULT_TIMEOUT_MS 15000L
#define DEFAULT_CONNECT_MS 5000L
#define DEFAULT_ATTEMPTS 5
#define DEFAULT_BACKOFF_MS 250L
#define DEFAULT_BACKOFF_MAX_MS 4000L
#define DEFAULT_IDLE 4
#define MAX_429_PER_CALL 64      /* a server answering 429 forever still ends */
#define MAX_BODY (8u << 20)      /* answers larger than this are refused */
#define MAX_ROUTES 1024          /* idle route states beyond this are forgotten */
#define POLL_MS 50               /* abort latency of a transfer in flight */
#define MAX_WAIT_MS (3600L * 1000) /* longest rate-limit wait believed from a server: a
                                    value beyond is an error or hostile, and a double
                                    that big would not even fit the integer maths */

/* ---- small helpers ----------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_OK;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define AUTH_PREFIX "Authorization: Bot "

/* Overwrite every copy of the token in text with '*'. A server may echo the
 * request (a proxy's error page, an apiBase pointing at the wrong thing), and
 * what it says travels on into err->message: tool results an agent sees, the
 * outbox's stored last_error, logs. The token lives only in one header. */
static void scrub_token(const dg_discord *d, char *text)
{
    if (!d->short_headers || !text)
        return;
    /* Also a piece of it (a truncated echo), in any case (scrub.h). */
    dg_scrub_secret(text, d->short_headers->data + strlen(AUTH_PREFIX));
}

static void logf_(dg_discord *d, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void logf_(dg_discord *d, int level, const char *fmt, ...)
{
    if (!d->log)
        return;
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    scrub_token(d, buf);
    d->log(d->log_state, level, buf);
}

/* Seconds as Discord writes them ("1", "0.350"), read the same whatever
 * LC_NUMERIC the host runs with (strtod would stop at the '.' under a
 * decimal-comma locale); -1 for anything else. */
static double parse_secs(const char *v)
{
    double x = 0, scale = 1;
    int digits = 0;
    const char *p = v;
    for (; *p >= '0' && *p <= '9'; p++, digits++)
        x = x * 10 + (*p - '0');
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            x += (*p - '0') * (scale /= 10);
    return digits && !*p ? x : -1;
}

/* Seconds from a server -> milliseconds, rounded up (a wait never ends
 * early), capped at MAX_WAIT_MS; -1 when not a usable number. */
static long secs_to_ms(double s)
{
    if (!(s >= 0))
        return -1;   /* negative or NaN */
    if (s * 1000.0 >= (double)MAX_WAIT_MS)
        return MAX_WAIT_MS;
    long ms = (long)(s * 1000.0);
    if ((double)ms < s * 1000.0)
        ms++;
    return ms;
}

/* "POST /channels/123/messages/456?x" -> "POST /channels/123/messages/{id}":
 * the first id after channels/guilds/webhooks is the major parameter and
 * stays; other ids become {id}; the query goes. */
static void route_key(const char *method, const char *path, char *out, size_t out_len)
{
    size_t o = (size_t)snprintf(out, out_len, "%s ", method);
    int have_major = 0;
    const char *prev = "", *p = path;
    size_t prev_len = 0;
    while (*p && *p != '?' && o + 1 < out_len) {
        if (*p == '/') {
            out[o++] = *p++;
            continue;
        }
        const char *seg = p;
        while (*p && *p != '/' && *p != '?')
            p++;
        size_t len = (size_t)(p - seg);
        int digits = len > 0;
        for (size_t i = 0; i < len; i++)
            if (seg[i] < '0' || seg[i] > '9')
                digits = 0;
        int major_ctx = (prev_len == 8 && !strncmp(prev, "channels", 8)) ||
                        (prev_len == 6 && !strncmp(prev, "guilds", 6)) ||
                        (prev_len == 8 && !strncmp(prev, "webhooks", 8));
        const char *put = seg;
        size_t put_len = len;
        if (digits && !(major_ctx && !have_major)) {
            put = "{id}";
            put_len = 4;
        } else if (digits) {
            have_major = 1;
        }
        if (o + put_len >= out_len)
            put_len = out_len - o - 1;
        memcpy(out + o, put, put_len);
        o += put_len;
        prev = seg;
        prev_len = len;
    }
    out[o] = '\0';
}

/* ---- rate-limit state ------------------------------------------------------------ */

/* An idle route whose window is over: forgetting it loses nothing (it
 * starts again as unknown, the cautious state). dg_map_retain's keep. */
static int route_in_use(void *val, void *now_ms)
{
    const dgd_route *r = val;
    return r->inflight > 0 || r->reset_at > *(const int64_t *)now_ms;
}

static void route_free(void *val, void *unused)
{
    (void)unused;
    free(val);
}

/* Route state for key; created when missing. Caller holds d->mu. A route
 * may be forgotten by a later call (route_in_use): never keep the pointer
 * across an unlock. */
static dgd_route *route_get(dg_discord *d, const char *key)
{
    dgd_route *r = dg_map_get(&d->routes, key);
    if (r)
        return r;
    if (d->routes.n >= MAX_ROUTES) {
        int64_t now = mono_ms();
        /* Out of memory: all are kept, and the table outgrows the bound. */
        (void)dg_map_retain(&d->routes, route_in_use, route_free, &now);
    }
    if (!(r = calloc(1, sizeof *r)))
        return NULL;
    snprintf(r->key, sizeof r->key, "%s", key);
    if (dg_map_put(&d->routes, r->key, r) != OC_OK) {
        free(r);
        return NULL;
    }
    return r;
}

static void abs_time(int64_t mono_deadline, struct timespec *ts)
{
    ts->tv_sec = (time_t)(mono_deadline / 1000);
    ts->tv_nsec = (long)(mono_deadline % 1000) * 1000000L;
}

/* Wait on d->cond until `until` (monotonic ms) at the latest. d->mu held. */
static void cond_wait_until(dg_discord *d, int64_t until)
{
    struct timespec ts;
    abs_time(until, &ts);
    pthread_cond_timedwait(&d->cond, &d->mu, &ts);
}

static int aborted_err(dg_discord_err *e, const char *route)
{
    return dgd_set_err(e, OC_ERR_IO, 0, 1, "aborted: %s was cancelled because the client is "
                                       "shutting down",
                   route);
}

/*
 * Take a permit for route: waits for the global limit, the route's window,
 * or (unknown bucket) the request already in flight. Fails when the wait
 * would end after deadline or the client is aborted.
 */
static int rl_acquire(dg_discord *d, const char *route, int64_t deadline, dg_discord_err *e)
{
    pthread_mutex_lock(&d->mu);
    for (;;) {
        if (atomic_load(&d->abort)) {
            pthread_mutex_unlock(&d->mu);
            return aborted_err(e, route);
        }
        int64_t now = mono_ms();
        int64_t until;
        const char *what;
        if (d->global_until > now) {
            until = d->global_until;
            what = "the global rate limit";
        } else {
            dgd_route *r = route_get(d, route);
            if (!r) {
                pthread_mutex_unlock(&d->mu);
                return dgd_set_err(e, OC_ERR_NOMEM, 0, 1, "out of memory for rate-limit state");
            }
            if (!r->known) {
                if (r->inflight == 0) {
                    r->inflight++;
                    pthread_mutex_unlock(&d->mu);
                    return OC_OK;
                }
                until = -1; /* woken when that request ends */
                what = "another request on a route whose bucket is not known yet";
            } else {
                if (r->remaining <= 0 && r->reset_at <= now)
                    r->remaining = r->limit > 0 ? r->limit : 1;
                if (r->remaining > 0) {
                    r->remaining--;
                    r->inflight++;
                    pthread_mutex_unlock(&d->mu);
                    return OC_OK;
                }
                until = r->reset_at;
                what = "the route's rate limit";
            }
        }
        if (until > deadline) {
            pthread_mutex_unlock(&d->mu);
            if (e)
                e->retry_after_ms = (long)(until - now);
            return dgd_set_err(e, OC_ERR_IO, e ? e->http_status : 0, 1,
                               "rate limited: %s is held back by %s for another %lld ms, longer "
                               "than this call may wait; try again later",
                               route, what, (long long)(until - now));
        }
        if (until < 0 && now >= deadline) {
            pthread_mutex_unlock(&d->mu);
            return dgd_set_err(e, OC_ERR_IO, 0, 1,
                               "timed out: %s waited for %s; try again later", route, what);
        }
        cond_wait_until(d, until < 0 ? deadline : until);
    }
}

typedef struct hdrs {
    char bucket[72];
    int has_limit, has_remaining, has_reset, has_retry_after;
    long limit, remaining;
    double reset_after, retry_after;
    int global;
    char scope[16];
} hdrs;

/* Give the permit back and learn from the answer's headers (http 0: no
 * answer). retry_after_ms > 0 for a 429. */
static void rl_release(dg_discord *d, const char *route, const hdrs *h, long http,
                       long retry_after_ms, int global)
{
    pthread_mutex_lock(&d->mu);
    /* +1: mono_ms truncates, and a wait must never end early. */
    int64_t now = mono_ms() + 1;
    dgd_route *r = route_get(d, route);
    if (r) {
        if (r->inflight > 0)
            r->inflight--;
        if (http && h->has_limit && h->has_remaining && h->has_reset) {
            r->known = 1;
            r->limit = h->limit;
            r->remaining = h->remaining;
            r->reset_at = now + secs_to_ms(h->reset_after);
            if (h->bucket[0])
                snprintf(r->bucket, sizeof r->bucket, "%s", h->bucket);
        }
        if (http == 429 && !global) {
            if (!r->known) {
                r->known = 1;
                r->limit = 1;
            }
            r->remaining = 0;
            if (r->reset_at < now + retry_after_ms)
                r->reset_at = now + retry_after_ms;
        }
    }
    if (http == 429 && global && d->global_until < now + retry_after_ms)
        d->global_until = now + retry_after_ms;
    pthread_cond_broadcast(&d->cond);
    pthread_mutex_unlock(&d->mu);
}

/* Sleep until `until` unless aborted; returns 0, or -1 when aborted. */
static int sleep_until(dg_discord *d, int64_t until)
{
    pthread_mutex_lock(&d->mu);
    while (!atomic_load(&d->abort) && mono_ms() < until)
        cond_wait_until(d, until);
    int ab = atomic_load(&d->abort);
    pthread_mutex_unlock(&d->mu);
    return ab ? -1 : 0;
}

static long backoff_ms(dg_discord *d, int failures)
{
    long b = d->backoff_base_ms;
    for (int i = 1; i < failures && b < d->backoff_max_ms; i++)
        b *= 2;
    if (b > d->backoff_max_ms)
        b = d->backoff_max_ms;
    pthread_mutex_lock(&d->mu);
    /* xorshift64*: jitter only, no need for more. */
    d->rng ^= d->rng >> 12;
    d->rng ^= d->rng << 25;
    d->rng ^= d->rng >> 27;
    uint64_t r = d->rng * 0x2545F4914F6CDD1Dull;
    pthread_mutex_unlock(&d->mu);
    /* Equal jitter: at least half the step, so retries still spread out. */
    long half = b / 2;
    return half + (long)(r % (uint64_t)(b - half + 1));
}

/* ---- handles and transfers --------------------------------------------------------- */

static dgd_slot slot_get(dg_discord *d)
{
    dgd_slot s = {NULL, NULL};
    pthread_mutex_lock(&d->pool_mu);
    if (d->n_idle)
        s = d->idle[--d->n_idle];
    pthread_mutex_unlock(&d->pool_mu);
    if (!s.easy) {
        s.multi = curl_multi_init();
        s.easy = curl_easy_init();
        if (!s.multi || !s.easy) {
            if (s.multi)
                curl_multi_cleanup(s.multi);
            if (s.easy)
                curl_easy_cleanup(s.easy);
            s.multi = NULL;
            s.easy = NULL;
        } else {
            curl_multi_setopt(s.multi, CURLMOPT_MAXCONNECTS, 2L);
        }
    }
    return s;
}

static void slot_drop(dgd_slot s)
{
    if (s.easy)
        curl_easy_cleanup(s.easy);
    if (s.multi)
        curl_multi_cleanup(s.multi);
}

static void slot_put(dg_discord *d, dgd_slot s)
{
    pthread_mutex_lock(&d->pool_mu);
    if ((int)d->n_idle < d->max_idle) {
        d->idle[d->n_idle++] = s;
        s.easy = NULL;
    }
    pthread_mutex_unlock(&d->pool_mu);
    if (s.easy)
        slot_drop(s);
}

typedef struct xfer {
    char *body;
    size_t len, cap;
    int too_big;
    hdrs h;
} xfer;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (x->len + n + 1 > MAX_BODY) {
        x->too_big = 1;
        return 0;
    }
    if (x->len + n + 1 > x->cap) {
        size_t cap = x->cap ? x->cap : 1024;
        while (cap < x->len + n + 1)
            cap *= 2;
        char *nb = realloc(x->body, cap);
        if (!nb)
            return 0;
        x->body = nb;
        x->cap = cap;
    }
    memcpy(x->body + x->len, ptr, n);
    x->len += n;
    x->body[x->len] = '\0';
    return n;
}

/* Header value for name (case-insensitive) into val, or 0. */
static int header_is(const char *line, size_t len, const char *name, char *val, size_t val_len)
{
    size_t nl = strlen(name);
    if (len <= nl || line[nl] != ':' || strncasecmp(line, name, nl) != 0)
        return 0;
    const char *v = line + nl + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t n = (size_t)(end - v);
    if (n >= val_len)
        n = val_len - 1;
    memcpy(val, v, n);
    val[n] = '\0';
    return 1;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    char v[96];
    /* Most lines of an answer (Date, Content-Type, Connection, ...) are
     * none of ours: the X-RateLimit- prefix is compared once, not once per
     * name (issue 14 profile: this callback was 3k instructions a post). */
    static const char rl[] = "X-RateLimit-";
    const size_t rn = sizeof rl - 1;
    if (n >= 5 && !strncmp(line, "HTTP/", 5)) {
        memset(&x->h, 0, sizeof x->h); /* a new response (after 1xx) */
    } else if (n > rn && (line[0] | 0x20) == 'x' && !strncasecmp(line, rl, rn)) {
        const char *l = line + rn;
        size_t ln = n - rn;
        if (header_is(l, ln, "Bucket", x->h.bucket, sizeof x->h.bucket)) {
            /* stored in place */
        } else if (header_is(l, ln, "Limit", v, sizeof v)) {
            x->h.limit = strtol(v, NULL, 10);
            x->h.has_limit = 1;
        } else if (header_is(l, ln, "Remaining", v, sizeof v)) {
            x->h.remaining = strtol(v, NULL, 10);
            x->h.has_remaining = 1;
        } else if (header_is(l, ln, "Reset-After", v, sizeof v)) {
            x->h.reset_after = parse_secs(v);
            x->h.has_reset = x->h.reset_after >= 0;
        } else if (header_is(l, ln, "Global", v, sizeof v)) {
            x->h.global = !strcasecmp(v, "true");
        } else if (header_is(l, ln, "Scope", x->h.scope, sizeof x->h.scope)) {
            /* stored in place */
        }
    } else if (header_is(line, n, "Retry-After", v, sizeof v)) {
        x->h.retry_after = parse_secs(v);
        x->h.has_retry_after = x->h.retry_after >= 0;
    }
    return n;
}

#define CURLE_DG_ABORTED ((CURLcode)-1)

/* One HTTP exchange on slot s; returns the curl code (CURLE_DG_ABORTED when
 * the abort switch ended it) and the HTTP status in *http. */
static CURLcode perform(dg_discord *d, dgd_slot *s, const char *method, const char *url,
                        const char *json, int idempotent, long tmo_ms, xfer *x, long *http,
                        char *cerr)
{
    CURL *e = s->easy;
    curl_easy_reset(e);
    cerr[0] = '\0';
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, d->headers);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, tmo_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, d->connect_ms < tmo_ms ? d->connect_ms : tmo_ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    /* libcurl silently sends a request again when a reused keep-alive
     * connection dies before any answer; for a request that must not run
     * twice (no nonce) use a fresh connection so that never happens. */
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, idempotent ? 0L : 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    if (!strcmp(method, "GET")) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, json ? json : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)(json ? strlen(json) : 0));
    }

    if (curl_multi_add_handle(s->multi, e) != CURLM_OK)
        return CURLE_FAILED_INIT;
    CURLcode cc = CURLE_OK;
    int running = 1, aborted = 0;
    while (running) {
        if (curl_multi_perform(s->multi, &running) != CURLM_OK) {
            cc = CURLE_FAILED_INIT;
            break;
        }
        if (!running)
            break;
        if (atomic_load(&d->abort)) {
            aborted = 1;
            break;
        }
        curl_multi_poll(s->multi, NULL, 0, POLL_MS, NULL);
    }
    if (!aborted && cc == CURLE_OK) {
        int left;
        CURLMsg *m;
        cc = CURLE_GOT_NOTHING;
        while ((m = curl_multi_info_read(s->multi, &left)))
            if (m->msg == CURLMSG_DONE && m->easy_handle == e)
                cc = m->data.result;
    }
    curl_multi_remove_handle(s->multi, e);
    *http = 0;
    if (aborted)
        return CURLE_DG_ABORTED;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, http);
    if (cc == CURLE_WRITE_ERROR && x->too_big)
        snprintf(cerr, CURL_ERROR_SIZE, "answer larger than %u bytes", MAX_BODY);
    return cc;
}

/* Connection never reached the server: safe to retry any request. */
static int not_sent(CURLcode cc)
{
    return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
           cc == CURLE_COULDNT_RESOLVE_PROXY;
}

/* First "_errors" message below j, with its path ("content"). */
static int first_form_error(json_t *j, char *path, size_t path_len, const char **msg)
{
    if (!json_is_object(j))
        return 0;
    json_t *errs = json_object_get(j, "_errors");
    if (json_is_array(errs) && json_array_size(errs) > 0) {
        const char *m = json_string_value(json_object_get(json_array_get(errs, 0), "message"));
        if (m) {
            *msg = m;
            return 1;
        }
    }
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) {
        if (!strcmp(k, "_errors"))
            continue;
        size_t used = strlen(path);
        snprintf(path + used, path_len - used, "%s%s", used ? "." : "", k);
        if (first_form_error(v, path, path_len, msg))
            return 1;
        path[used] = '\0';
    }
    return 0;
}

/* Longest piece of a response body that reaches a message or a log line. */
#define BODY_TEXT_MAX 200

/* What is said of a 401/403 instead of its body: Discord's code, by name. */
static const char *refusal_text(long http, int code)
{
    switch (code) {
    case 50001: return "Missing Access";
    case 50013: return "Missing Permissions";
    case 40001: return "Unauthorized";
    default: return http == 401 ? "401: Unauthorized" : "403: Forbidden";
    }
}

/*
 * Discord's message (and form-error detail) from an error body (issue 12
 * bug 5). A 401/403 body is never repeated (it answers a request that
 * carried the token; a proxy may echo it in any spelling): only its code,
 * by name. Otherwise the text is taken JSON-decoded (a cut-off or non-JSON
 * body has its escapes decoded too), scrubbed of any piece of the token,
 * and cut to BODY_TEXT_MAX bytes.
 */
static void discord_message(const dg_discord *d, xfer *x, long http, char *out,
                            size_t out_len, int *code)
{
    out[0] = '\0';
    *code = 0;
    /* Before anything is cut to length: a cut token would leak its start. */
    scrub_token(d, x->body);
    json_t *j = x->body ? json_loads(x->body, 0, NULL) : NULL;
    const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
    char text[2048];  /* decoded and scrubbed before the cut */
    if (j)
        *code = (int)json_integer_value(json_object_get(j, "code"));
    if (http == 401 || http == 403) {
        snprintf(out, out_len, "%s (the body of a %ld is never shown)", refusal_text(http, *code),
                 http);
        json_decref(j);
        return;
    }
    if (m) {
        char path[128] = "";
        const char *detail = NULL;
        if (first_form_error(json_object_get(j, "errors"), path, sizeof path, &detail))
            snprintf(text, sizeof text, "%s (%s: %s)", m, path, detail);
        else
            snprintf(text, sizeof text, "%s", m);
    } else if (x->body && x->len) {
        snprintf(text, sizeof text, "%s", x->body);
        dg_unescape_json_text(text);
    } else {
        snprintf(text, sizeof text, "no error text");
    }
    json_decref(j);
    scrub_token(d, text);   /* a token spelt with JSON escapes, now decoded */
    dg_cut_for_log(text, BODY_TEXT_MAX);
    size_t l = strlen(text);
    if (l >= out_len)
        l = out_len - 1;
    memcpy(out, text, l);
    out[l] = '\0';
}

static int status_rc(long http)
{
    switch (http) {
    case 400: return OC_ERR_INVALID;
    case 401:
    case 403: return OC_ERR_DENIED;
    case 404: return OC_ERR_NOT_FOUND;
    default: return OC_ERR_IO;
    }
}

/* retry_after of a 429 in ms, rounded up, from body or headers. */
static long retry_after_of(const xfer *x, int *global)
{
    double ra = -1;
    int g = x->h.global || !strcasecmp(x->h.scope, "global");
    json_t *j = x->body ? json_loads(x->body, 0, NULL) : NULL;
    json_t *v = j ? json_object_get(j, "retry_after") : NULL;
    if (json_is_number(v))
        ra = json_number_value(v);
    if (json_is_true(json_object_get(j, "global")))
        g = 1;
    json_decref(j);
    if (ra < 0 && x->h.has_retry_after)
        ra = x->h.retry_after;
    if (ra < 0 && x->h.has_reset)
        ra = x->h.reset_after;
    if (ra < 0)
        ra = 1.0; /* a 429 without any hint: be patient for a second */
    *global = g;
    long ms = secs_to_ms(ra);
    return ms > 0 ? ms : 1;
}

/* What one request carries from attempt to attempt. */
typedef struct req_run {
    const char *method, *url, *json, *route;
    int idempotent;
    int64_t deadline;  /* monotonic ms: the call's time bound */
    int failures;      /* 5xx answers and transport failures so far */
    int n429;          /* 429 answers in a row */
} req_run;

/* An attempt's outcome besides OC_OK and the OC_ERR_* codes: try again. */
#define ATTEMPT_AGAIN 1

/* The back-off before the next attempt after a transport failure (http 0)
 * or a 5xx answer: logged, then slept unless the call's time would run out
 * first. ATTEMPT_AGAIN, or the error set in e. why: curl's reason or
 * Discord's message. */
static int backoff_wait(dg_discord *d, const req_run *r, long http, const char *why,
                        dg_discord_err *e)
{
    long wait = backoff_ms(d, r->failures);
    if (http)
        logf_(d, OC_LOG_WARN, "discord: %s answered %ld (%s); retry %d of %d in %ld ms",
              r->route, http, why, r->failures, d->max_attempts - 1, wait);
    else
        logf_(d, OC_LOG_WARN, "discord: %s failed (%s); retry %d of %d in %ld ms", r->route,
              why, r->failures, d->max_attempts - 1, wait);
    if (mono_ms() + wait >= r->deadline) {
        if (http)
            return dgd_set_err(e, OC_ERR_IO, http, 1,
                               "Discord answered %ld to %s: %s; no time left in %ld ms to retry",
                               http, r->route, why, d->timeout_ms);
        return dgd_set_err(e, OC_ERR_IO, 0, 1,
                           "timed out: %s failed (%s) and no time is left in its %ld ms to "
                           "retry",
                           r->route, why, d->timeout_ms);
    }
    if (sleep_until(d, mono_ms() + wait) < 0)
        return aborted_err(e, r->route);
    return ATTEMPT_AGAIN;
}

/* A transfer that got no answer: out of time, out of attempts, not safe to
 * repeat (a request that may have been sent and is not idempotent), or
 * ATTEMPT_AGAIN after the back-off. */
static int on_no_answer(dg_discord *d, req_run *r, CURLcode cc, const char *cerr,
                        dg_discord_err *e)
{
    r->failures++;
    int timed_out = cc == CURLE_OPERATION_TIMEDOUT || mono_ms() >= r->deadline;
    const char *why = cerr[0] ? cerr : curl_easy_strerror(cc);
    if (timed_out)
        return dgd_set_err(e, OC_ERR_IO, 0, 1,
                           "timed out: %s got no answer within %ld ms (%s); try again later",
                           r->route, d->timeout_ms, why);
    if ((!r->idempotent && !not_sent(cc)) || r->failures >= d->max_attempts)
        return dgd_set_err(e, OC_ERR_IO, 0, 1,
                           "no answer from Discord for %s after %d attempt%s: %s", r->route,
                           e->attempts, e->attempts == 1 ? "" : "s", why);
    return backoff_wait(d, r, 0, why, e);
}

/* A 2xx answer: its body as JSON (null when empty) into *response, or
 * decref'd when response is NULL. */
static int on_success(const req_run *r, const xfer *x, long http, json_t **response,
                      dg_discord_err *e)
{
    json_t *j = NULL;
    if (x->len == 0) {
        j = json_null();
    } else {
        json_error_t je;
        j = json_loadb(x->body, x->len, 0, &je);
    }
    if (!j)
        return dgd_set_err(e, OC_ERR_IO, http, 1,
                           "Discord answered %ld to %s with a body that is not JSON", http,
                           r->route);
    if (response)
        *response = j;
    else
        json_decref(j);
    e->message[0] = '\0';
    return OC_OK;
}

/* An answer that is not 2xx: 429 and 5xx are tried again within their
 * bounds, anything else is Discord's refusal. ra, global: the 429's wait. */
static int on_refusal(dg_discord *d, req_run *r, xfer *x, long http, long ra, int global,
                      dg_discord_err *e)
{
    char dmsg[400];
    discord_message(d, x, http, dmsg, sizeof dmsg, &e->discord_code);
    if (http == 429) {
        r->n429++;
        logf_(d, OC_LOG_DEBUG, "discord: %s rate limited (%s), waiting %ld ms", r->route,
              global ? "global" : "route", ra);
        if (r->n429 >= MAX_429_PER_CALL)
            return dgd_set_err(e, OC_ERR_IO, http, 1,
                               "rate limited: %s answered 429 %d times in a row; try again "
                               "later",
                               r->route, r->n429);
        return ATTEMPT_AGAIN; /* rl_acquire waits retry_after, or fails past the bound */
    }
    if (http >= 500) {
        r->failures++;
        if (r->failures >= d->max_attempts)
            return dgd_set_err(e, OC_ERR_IO, http, 1,
                               "Discord answered %ld to %s %d times: %s; try again later", http,
                               r->route, r->failures, dmsg);
        return backoff_wait(d, r, http, dmsg, e);
    }
    int rc = dgd_set_err(e, status_rc(http), http, 0, "Discord refused %s with %ld: %s%s",
                         r->route, http, dmsg,
                         http == 403   ? "; give the bot that permission in the channel or guild"
                         : http == 401 ? "; check the bot token"
                                       : "");
    if (e->discord_code) {
        size_t used = strlen(e->message);
        snprintf(e->message + used, sizeof e->message - used, " (Discord code %d)",
                 e->discord_code);
    }
    return rc;
}

/* One attempt: a rate-limit permit, a handle, the transfer, and what its
 * answer means. OC_OK, ATTEMPT_AGAIN, or the error set in e. */
static int attempt(dg_discord *d, req_run *r, json_t **response, dg_discord_err *e)
{
    int rc = rl_acquire(d, r->route, r->deadline, e);
    if (rc != OC_OK)
        return rc;
    long tmo = (long)(r->deadline - mono_ms());
    if (tmo <= 0) {
        rl_release(d, r->route, NULL, 0, 0, 0);
        return dgd_set_err(e, OC_ERR_IO, e->http_status, 1,
                           "timed out: %s got no answer within %ld ms; try again later",
                           r->route, d->timeout_ms);
    }
    dgd_slot s = slot_get(d);
    if (!s.easy) {
        rl_release(d, r->route, NULL, 0, 0, 0);
        return dgd_set_err(e, OC_ERR_NOMEM, 0, 1, "out of memory for a transfer handle");
    }
    xfer x;
    memset(&x, 0, sizeof x);
    long http = 0;
    char cerr[CURL_ERROR_SIZE];
    CURLcode cc = perform(d, &s, r->method, r->url, r->json, r->idempotent, tmo, &x, &http,
                          cerr);
    e->attempts++;
    long ra = 0;
    int global = 0;
    if (cc == CURLE_OK && http == 429)
        ra = retry_after_of(&x, &global);
    rl_release(d, r->route, cc == CURLE_OK ? &x.h : NULL, cc == CURLE_OK ? http : 0, ra,
               global);
    slot_put(d, s);

    if (cc == CURLE_DG_ABORTED)
        rc = aborted_err(e, r->route);
    else if (cc != CURLE_OK)
        rc = on_no_answer(d, r, cc, cerr, e);
    else if ((e->http_status = http) >= 200 && http < 300)
        rc = on_success(r, &x, http, response, e);
    else
        rc = on_refusal(d, r, &x, http, ra, global, e);
    free(x.body);
    return rc;
}

int dgd_do_request(dg_discord *d, const char *method, const char *path, const char *json,
                   int idempotent, json_t **response, dg_discord_err *e)
{
    dg_discord_err local;
    if (!e)
        e = &local;
    memset(e, 0, sizeof *e);
    if (response)
        *response = NULL;

    char route[192];
    route_key(method, path, route, sizeof route);
    size_t ulen = strlen(d->base) + strlen(path) + 1;
    char *url = malloc(ulen);
    if (!url)
        return dgd_set_err(e, OC_ERR_NOMEM, 0, 1, "out of memory");
    snprintf(url, ulen, "%s%s", d->base, path);

    req_run r = {.method = method, .url = url, .json = json, .route = route,
                 .idempotent = idempotent, .deadline = mono_ms() + d->timeout_ms};
    int rc;
    while ((rc = attempt(d, &r, response, e)) == ATTEMPT_AGAIN)
        ;
    free(url);
    scrub_token(d, e->message);
    return rc;
}

/* ---- public API ------------------------------------------------------------------ */

/* The options' rules, checked before anything is made: OC_OK, or
 * OC_ERR_INVALID with the field and its rule in err. */
static int check_options(const dg_discord_options *o, char *err, size_t err_len)
{
    if (!o || !o->api_base || (strncmp(o->api_base, "https://", 8) != 0 &&
                               strncmp(o->api_base, "http://", 7) != 0)) {
        snprintf(err, err_len, "discord.apiBase must be an http:// or https:// URL such as "
                               "https://discord.com/api/v10");
        return OC_ERR_INVALID;
    }
    if (!o->token || !*o->token || strpbrk(o->token, "\r\n \t")) {
        snprintf(err, err_len, "discord.moderatorToken is missing or contains whitespace; set "
                               "the bot token (without the \"Bot \" prefix)");
        return OC_ERR_INVALID;
    }
    if (o->guild_id && !dg_snowflake_valid(o->guild_id)) {
        snprintf(err, err_len, "discord.guildId must be a snowflake (1-20 digits)");
        return OC_ERR_INVALID;
    }
    if (o->timeout_ms < 0 || o->connect_timeout_ms < 0 || o->max_attempts < 0 ||
        o->backoff_base_ms < 0 || o->backoff_max_ms < 0 || o->max_idle_handles < 0) {
        snprintf(err, err_len, "discord: timeouts, attempts and back-off must not be negative");
        return OC_ERR_INVALID;
    }
    return OC_OK;
}

/* The limits of d from o (0: the default), the log callback and the
 * back-off's random seed. */
static void set_limits(dg_discord *d, const dg_discord_options *o)
{
    d->timeout_ms = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
    d->connect_ms = o->connect_timeout_ms ? o->connect_timeout_ms : DEFAULT_CONNECT_MS;
    if (d->connect_ms > d->timeout_ms)
        d->connect_ms = d->timeout_ms;
    d->max_attempts = o->max_attempts ? o->max_attempts : DEFAULT_ATTEMPTS;
    d->backoff_base_ms = o->backoff_base_ms ? o->backoff_base_ms : DEFAULT_BACKOFF_MS;
    d->backoff_max_ms = o->backoff_max_ms ? o->backoff_max_ms : DEFAULT_BACKOFF_MAX_MS;
    if (d->backoff_max_ms < d->backoff_base_ms)
        d->backoff_max_ms = d->backoff_base_ms;
    d->max_idle = o->max_idle_handles ? o->max_idle_handles : DEFAULT_IDLE;
    d->log = o->log;
    d->log_state = o->log_state;
    d->rng = (uint64_t)mono_ms() * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)d ^
             (uint64_t)getpid();
    if (!d->rng)
        d->rng = 1;
}

/* The fixed headers of every request, in the order struct dg_discord
 * describes: "Expect:", the token's Authorization, Content-Type,
 * User-Agent. The User-Agent is one more header of the list, not
 * CURLOPT_USERAGENT: curl formats that option into a new string on every
 * transfer, a header of the list is copied as it is. Returns the list (the
 * client frees it, wiping the token's node first) or NULL out of memory;
 * the token's other copies are wiped before they are freed. */
static struct curl_slist *build_headers(const char *token, const char *user_agent)
{
    size_t al = strlen(token) + 32, ul = strlen(user_agent) + sizeof "User-Agent: ";
    char *auth = malloc(al), *ua = malloc(ul);
    struct curl_slist *h = NULL;
    if (auth && ua) {
        snprintf(auth, al, AUTH_PREFIX "%s", token);
        snprintf(ua, ul, "User-Agent: %s", user_agent);
        const char *const lines[] = {"Expect:", auth, "Content-Type: application/json", ua};
        for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
            struct curl_slist *n = curl_slist_append(h, lines[i]);
            if (!n) {
                if (h && h->next)
                    memset(h->next->data, 0, strlen(h->next->data));
                curl_slist_free_all(h);
                h = NULL;
                break;
            }
            h = n;
        }
    }
    if (auth)
        memset(auth, 0, al);
    free(auth);
    free(ua);
    return h;
}

int dg_discord_new(const dg_discord_options *o, dg_discord **out, char *err, size_t err_len)
{
    char scratch[4];
    if (!err || !err_len) {
        err = scratch;
        err_len = sizeof scratch;
    }
    err[0] = '\0';
    if (!out) {
        snprintf(err, err_len, "discord: no place to store the client");
        return OC_ERR_INVALID;
    }
    *out = NULL;
    int rc = check_options(o, err, err_len);
    if (rc != OC_OK)
        return rc;
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK) {
        snprintf(err, err_len, "discord: libcurl failed to initialise: %s",
                 curl_easy_strerror(curl_init_rc));
        return OC_ERR_INTERNAL;
    }

    dg_discord *d = calloc(1, sizeof *d);
    if (!d)
        goto nomem;
    set_limits(d, o);
    d->base = dgd_strdup(o->api_base);
    d->guild_id = dgd_strdup(o->guild_id);
    d->user_agent = o->user_agent ? dgd_strdup(o->user_agent)
                                  : dgd_strdup("DiscordBot (dirigent, " DG_VERSION ")");
    d->idle = calloc((size_t)d->max_idle, sizeof *d->idle);
    if (!d->base || !d->user_agent || !d->idle || (o->guild_id && !d->guild_id))
        goto nomem_free;
    size_t bl = strlen(d->base);
    while (bl > 0 && d->base[bl - 1] == '/')
        d->base[--bl] = '\0';
    if (!(d->headers = build_headers(o->token, d->user_agent)))
        goto nomem_free;
    d->short_headers = d->headers->next;

    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&d->mu, NULL);
    pthread_mutex_init(&d->pool_mu, NULL);
    atomic_init(&d->abort, 0);
    *out = d;
    return OC_OK;

nomem_free:
    free(d->base);
    free(d->guild_id);
    free(d->user_agent);
    free(d->idle);
    free(d);
nomem:
    snprintf(err, err_len, "discord: out of memory creating the client");
    return OC_ERR_NOMEM;
}

void dg_discord_free(dg_discord *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n_idle; i++)
        slot_drop(d->idle[i]);
    free(d->idle);
    /* The token's header: wiped before it goes back. */
    if (d->short_headers)
        memset(d->short_headers->data, 0, strlen(d->short_headers->data));
    curl_slist_free_all(d->headers);
    dg_map_each(&d->routes, route_free, NULL);
    dg_map_clear(&d->routes);
    free(d->base);
    free(d->guild_id);
    free(d->user_agent);
    pthread_cond_destroy(&d->cond);
    pthread_mutex_destroy(&d->mu);
    pthread_mutex_destroy(&d->pool_mu);
    free(d);
}

void dg_discord_set_abort(dg_discord *d, int on)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    atomic_store(&d->abort, on ? 1 : 0);
    pthread_cond_broadcast(&d->cond);
    pthread_mutex_unlock(&d->mu);
}

const char *dg_discord_guild_id(const dg_discord *d)
{
    return d ? d->guild_id : NULL;
}

/* The request body as text, or NULL when it cannot be made; takes j.
 * bad: a member could not be added while building j (out of memory), so
 * j is not the request meant. The text is read back and compared:
 * jansson 2.14's json_dumps can return text without an object key (which
 * Discord refuses as invalid JSON) when one of its allocations fails. */
char *dgd_dump_checked(json_t *j, int bad)
{
    char *s = j && !bad ? json_dumps(j, JSON_COMPACT) : NULL;
    json_t *back = s ? json_loads(s, 0, NULL) : NULL;
    if (s && !json_equal(back, j)) {
        free(s);
        s = NULL;
    }
    json_decref(back);
    json_decref(j);
    return s;
}

int dg_discord_request(dg_discord *d, const char *method, const char *path, const json_t *body,
                       int idempotent, json_t **response, dg_discord_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (response)
        *response = NULL;
    if (!d || !method || !path || path[0] != '/')
        return dgd_set_err(err, OC_ERR_INVALID, 0, 0,
                           "discord request: method and a path starting with '/' are required");
    if (body && !json_is_object(body) && !json_is_array(body))
        return dgd_set_err(err, OC_ERR_INVALID, 0, 0,
                           "discord request: the body must be a JSON object or array");
    char *json = NULL;
    if (body && !(json = dgd_dump_checked(json_incref((json_t *)body), 0)))
        return dgd_set_err(err, OC_ERR_NOMEM, 0, 1,
                           "discord request: out of memory encoding the body");
    int rc = dgd_do_request(d, method, path, json, idempotent, response, err);
    free(json);
    return rc;
}

/* ---- pipelined posts (issue 14) ----------------------------------------------------
 *
 * Several message posts in flight at once on one curl multi, driven by the
 * caller's thread. Each post keeps every rule of dg_discord_post_message:
 * rate-limit permits (never waited for here: a post whose permit is not
 * there yet waits on its own timer while the others go on), 429 retries,
 * 5xx and transport retries with the client's back-off, the call's time
 * bound, the abort switch. Handles are configured once; per attempt only
 * the URL, the body and the remaining time are set. */

/* A post's request (dg_discord_post_prepare): its body is owned. */
struct dg_discord_post {
    char route[96];
    char url[256];
    char *json;
    size_t json_len;
};

typedef struct preq {
    int used;                  /* 1: a post owns this entry */
    int active;                /* its transfer is in the multi */
    uint64_t tag;
    dg_discord_post req;       /* taken over from dg_discord_pipe_submit */
    int64_t deadline, not_before;
    int failures, n429;
    CURL *easy;                /* configured once at pipe_new */
    xfer x;
    char cerr[CURL_ERROR_SIZE];
    dg_discord_err e;
} preq;

struct dg_discord_pipe {
    dg_discord *d;
    CURLM *multi;
    size_t cap, busy;
    preq *reqs;
    atomic_int woken;          /* set by dg_discord_pipe_wakeup */
    int settled;               /* the last call ended on a curl_multi_perform that
                                  left nothing to read: the next may poll first */
};

/* Take route's permit without waiting. 1: taken; 0: not before *until
 * (monotonic ms; -1: when another request of the route ends); -1: aborted;
 * -2: out of memory. */
static int rl_try(dg_discord *d, const char *route, int64_t *until)
{
    pthread_mutex_lock(&d->mu);
    int rc = 0;
    int64_t now = mono_ms();
    if (atomic_load(&d->abort)) {
        rc = -1;
    } else if (d->global_until > now) {
        *until = d->global_until;
    } else {
        dgd_route *r = route_get(d, route);
        if (!r) {
            rc = -2;
        } else if (!r->known) {
            if (r->inflight == 0) {
                r->inflight++;
                rc = 1;
            } else {
                *until = -1;
            }
        } else {
            if (r->remaining <= 0 && r->reset_at <= now)
                r->remaining = r->limit > 0 ? r->limit : 1;
            if (r->remaining > 0) {
                r->remaining--;
                r->inflight++;
                rc = 1;
            } else {
                *until = r->reset_at;
            }
        }
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

int dg_discord_pipe_new(dg_discord *d, size_t cap, dg_discord_pipe **out)
{
    *out = NULL;
    if (!d || cap == 0 || cap > 256)
        return OC_ERR_INVALID;
    dg_discord_pipe *p = calloc(1, sizeof *p);
    if (!p)
        return OC_ERR_NOMEM;
    p->d = d;
    p->cap = cap;
    p->reqs = calloc(cap, sizeof *p->reqs);
    p->multi = curl_multi_init();
    if (!p->reqs || !p->multi) {
        dg_discord_pipe_free(p);
        return OC_ERR_NOMEM;
    }
    curl_multi_setopt(p->multi, CURLMOPT_MAXCONNECTS, (long)cap + 2);
    for (size_t i = 0; i < cap; i++) {
        preq *q = &p->reqs[i];
        CURL *e = q->easy = curl_easy_init();
        if (!e) {
            dg_discord_pipe_free(p);
            return OC_ERR_NOMEM;
        }
        curl_easy_setopt(e, CURLOPT_PRIVATE, q);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, d->connect_ms < d->timeout_ms
                                                           ? d->connect_ms : d->timeout_ms);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &q->x);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, &q->x);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, q->cerr);
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        /* Every post here carries a nonce: a resend on a dead keep-alive
         * connection returns the first message, so reuse is safe. */
        curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#else
        curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
        curl_easy_setopt(e, CURLOPT_POST, 1L);
    }
    *out = p;
    return OC_OK;
}

/* Forget q's last answer; its buffer stays for the next one (no
 * allocation per post) unless an unusually large answer grew it. */
static void xfer_clear(xfer *x)
{
    if (x->cap > (64u << 10)) {
        free(x->body);
        x->body = NULL;
        x->cap = 0;
    }
    x->len = 0;
    x->too_big = 0;
    if (x->body)
        x->body[0] = '\0';
    memset(&x->h, 0, sizeof x->h);
}

/* End q: its result into *done; the entry is free again. */
static void preq_finish(dg_discord_pipe *p, preq *q, int rc, char *message_id,
                        dg_discord_done *done)
{
    if (q->active) {
        curl_multi_remove_handle(p->multi, q->easy);
        q->active = 0;
    }
    scrub_token(p->d, q->e.message);
    done->tag = q->tag;
    done->rc = rc;
    done->message_id = message_id;
    done->err = q->e;
    free(q->req.json);
    q->req.json = NULL;
    xfer_clear(&q->x);
    q->used = 0;
    p->busy--;
}

void dg_discord_pipe_free(dg_discord_pipe *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->reqs && i < p->cap; i++) {
        preq *q = &p->reqs[i];
        if (q->active) {
            curl_multi_remove_handle(p->multi, q->easy);
            rl_release(p->d, q->req.route, NULL, 0, 0, 0);
        }
        free(q->req.json);
        free(q->x.body);
        if (q->easy)
            curl_easy_cleanup(q->easy);
    }
    free(p->reqs);
    if (p->multi)
        curl_multi_cleanup(p->multi);
    free(p);
}

size_t dg_discord_pipe_busy(const dg_discord_pipe *p)
{
    return p ? p->busy : 0;
}

void dg_discord_pipe_wakeup(dg_discord_pipe *p)
{
#if LIBCURL_VERSION_NUM >= 0x074400
    if (p) {
        atomic_store(&p->woken, 1);
        curl_multi_wakeup(p->multi);
    }
#else
    if (p)
        atomic_store(&p->woken, 1);
#endif
}

int dg_discord_post_prepare(const dg_discord *d, const char *channel_id, const char *content,
                            const char *const *mention_ids, size_t n_mentions, const char *nonce,
                            dg_discord_post **out, dg_discord_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    *out = NULL;
    if (!d || !nonce)
        return dgd_set_err(err, OC_ERR_INVALID, 0, 0, "post message: a pipelined post needs a "
                                                  "nonce");
    dg_discord_post *post = malloc(sizeof *post);
    if (!post)
        return dgd_set_err(err, OC_ERR_NOMEM, 0, 1, "post message: out of memory");
    int rc = dgd_post_body(channel_id, content, mention_ids, n_mentions, nonce, &post->json, err);
    if (rc != OC_OK) {
        free(post);
        return rc;
    }
    post->json_len = strlen(post->json);
    char path[64];
    snprintf(path, sizeof path, "/channels/%s/messages", channel_id);
    route_key("POST", path, post->route, sizeof post->route);
    snprintf(post->url, sizeof post->url, "%s%s", d->base, path);
    *out = post;
    return OC_OK;
}

void dg_discord_post_free(dg_discord_post *post)
{
    if (post) {
        free(post->json);
        free(post);
    }
}

int dg_discord_pipe_submit(dg_discord_pipe *p, uint64_t tag, dg_discord_post *post,
                           dg_discord_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!p || !post) {
        dg_discord_post_free(post);
        return dgd_set_err(err, OC_ERR_INVALID, 0, 0, "post message: no pipe or no post");
    }
    if (p->busy == p->cap) {
        dg_discord_post_free(post);
        return dgd_set_err(err, OC_ERR_INVALID, 0, 1, "post message: the pipe is full");
    }
    preq *q = NULL;
    for (size_t i = 0; i < p->cap && !q; i++)
        if (!p->reqs[i].used)
            q = &p->reqs[i];
    q->used = 1;
    q->active = 0;
    q->tag = tag;
    q->req = *post; /* the body with it */
    free(post);
    int64_t now = mono_ms();
    q->deadline = now + p->d->timeout_ms;
    q->not_before = now;
    q->failures = q->n429 = 0;
    memset(&q->e, 0, sizeof q->e);
    xfer_clear(&q->x);
    p->busy++;
    return OC_OK;
}

int dg_discord_pipe_post(dg_discord_pipe *p, uint64_t tag, const char *channel_id,
                         const char *content, const char *const *mention_ids, size_t n_mentions,
                         const char *nonce, dg_discord_err *err)
{
    if (!p) {
        if (err)
            memset(err, 0, sizeof *err);
        return dgd_set_err(err, OC_ERR_INVALID, 0, 0, "post message: no pipe");
    }
    dg_discord_post *post = NULL;
    int rc = dg_discord_post_prepare(p->d, channel_id, content, mention_ids, n_mentions, nonce,
                                     &post, err);
    return rc == OC_OK ? dg_discord_pipe_submit(p, tag, post, err) : rc;
}

/* Start q's next attempt if it is due and has its permit; otherwise
 * push its timer. Returns 1 when q ended (result in *done). */
static int preq_start(dg_discord_pipe *p, preq *q, int64_t now, dg_discord_done *done)
{
    dg_discord *d = p->d;
    int64_t until = 0;
    int r = rl_try(d, q->req.route, &until);
    if (r == -1) {
        aborted_err(&q->e, q->req.route);
        preq_finish(p, q, OC_ERR_IO, NULL, done);
        return 1;
    }
    if (r == -2) {
        dgd_set_err(&q->e, OC_ERR_NOMEM, 0, 1, "out of memory for rate-limit state");
        preq_finish(p, q, OC_ERR_NOMEM, NULL, done);
        return 1;
    }
    if (r == 0) {
        if (until > q->deadline) {
            q->e.retry_after_ms = (long)(until - now);
            dgd_set_err(&q->e, OC_ERR_IO, q->e.http_status, 1,
                        "rate limited: %s is held back for another %lld ms, longer than this call "
                        "may wait; try again later",
                        q->req.route, (long long)(until - now));
            preq_finish(p, q, OC_ERR_IO, NULL, done);
            return 1;
        }
        if (until < 0 && now >= q->deadline) {
            dgd_set_err(&q->e, OC_ERR_IO, 0, 1, "timed out: %s waited for another request on a "
                                            "route whose bucket is not known yet; try again later",
                    q->req.route);
            preq_finish(p, q, OC_ERR_IO, NULL, done);
            return 1;
        }
        q->not_before = until < 0 ? now + 2 : until;
        return 0;
    }
    long tmo = (long)(q->deadline - now);
    if (tmo <= 0) {
        rl_release(d, q->req.route, NULL, 0, 0, 0);
        dgd_set_err(&q->e, OC_ERR_IO, q->e.http_status, 1,
                    "timed out: %s got no answer within %ld ms; try again later", q->req.route,
                    d->timeout_ms);
        preq_finish(p, q, OC_ERR_IO, NULL, done);
        return 1;
    }
    q->cerr[0] = '\0';
    xfer_clear(&q->x);
    curl_easy_setopt(q->easy, CURLOPT_URL, q->req.url);
    curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, q->req.json);
    curl_easy_setopt(q->easy, CURLOPT_POSTFIELDSIZE, (long)q->req.json_len);
    /* "Expect:" only where a curl may add "Expect: 100-continue" and wait
     * up to a second for the server's 100: bodies over 1 KB in older curl
     * (the curl of Debian 12 does it only past 1 MB, which no post reaches). */
    curl_easy_setopt(q->easy, CURLOPT_HTTPHEADER,
                     q->req.json_len >= 1024 ? d->headers : d->short_headers);
    curl_easy_setopt(q->easy, CURLOPT_TIMEOUT_MS, tmo);
    if (curl_multi_add_handle(p->multi, q->easy) != CURLM_OK) {
        rl_release(d, q->req.route, NULL, 0, 0, 0);
        dgd_set_err(&q->e, OC_ERR_IO, 0, 1, "%s could not be started", q->req.route);
        preq_finish(p, q, OC_ERR_IO, NULL, done);
        return 1;
    }
    q->active = 1;
    return 0;
}

/* A retry of q after a failure: wait, or end q when no time is left.
 * Returns 1 when q ended. */
static int preq_retry(dg_discord_pipe *p, preq *q, long http, const char *why,
                      dg_discord_done *done)
{
    dg_discord *d = p->d;
    if (q->failures >= d->max_attempts) {
        if (http)
            dgd_set_err(&q->e, OC_ERR_IO, http, 1, "Discord answered %ld to %s %d times: %s; try "
                                               "again later",
                    http, q->req.route, q->failures, why);
        else
            dgd_set_err(&q->e, OC_ERR_IO, 0, 1, "no answer from Discord for %s after %d attempt%s: "
                                            "%s",
                    q->req.route, q->e.attempts, q->e.attempts == 1 ? "" : "s", why);
        preq_finish(p, q, OC_ERR_IO, NULL, done);
        return 1;
    }
    long wait = backoff_ms(d, q->failures);
    if (http)
        logf_(d, OC_LOG_WARN, "discord: %s answered %ld (%s); retry %d of %d in %ld ms",
              q->req.route, http, why, q->failures, d->max_attempts - 1, wait);
    else
        logf_(d, OC_LOG_WARN, "discord: %s failed (%s); retry %d of %d in %ld ms", q->req.route,
              why, q->failures, d->max_attempts - 1, wait);
    if (mono_ms() + wait >= q->deadline) {
        dgd_set_err(&q->e, OC_ERR_IO, http, 1, "timed out: %s failed (%s) and no time is left in "
                                           "its %ld ms to retry",
                q->req.route, why, d->timeout_ms);
        preq_finish(p, q, OC_ERR_IO, NULL, done);
        return 1;
    }
    q->not_before = mono_ms() + wait;
    return 0;
}

/* Skip one JSON string at *p (at its opening quote); 0 or -1. */
static int skip_string(const char **p, const char *end)
{
    const char *s = *p + 1;
    while (s < end && *s != '"')
        s += *s == '\\' ? 2 : 1;
    if (s >= end)
        return -1;
    *p = s + 1;
    return 0;
}

/*
 * The "id" member of a JSON object's top level, copied into out, without
 * building the object: a posted message comes back as ~1.5 KB of nested
 * author, member and mention objects, and parsing and freeing them all was
 * most of the dispatcher's CPU per message (issue 14 profile). Nested
 * values are skipped by bracket depth, strings by their quotes. Returns 0,
 * or -1 when the text is not an object with a plain (escape-free) string
 * id: the caller then parses it properly.
 */
static int top_level_id(const char *s, size_t len, char *out, size_t out_len)
{
    const char *p = s, *end = s + len;
    while (p < end && strchr(" \t\r\n", *p))
        p++;
    if (p >= end || *p++ != '{')
        return -1;
    int depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            const char *k = p;
            if (skip_string(&p, end) != 0)
                return -1;
            if (depth > 0)
                continue;
            size_t kl = (size_t)(p - k);
            while (p < end && strchr(" \t\r\n", *p))
                p++;
            if (p >= end || *p != ':')
                continue; /* a string value of the top level, not a key */
            p++;
            while (p < end && strchr(" \t\r\n", *p))
                p++;
            if (kl == 4 && !memcmp(k, "\"id\"", 4) && p < end && *p == '"') {
                const char *v = p + 1, *ve = memchr(v, '"', (size_t)(end - v));
                if (!ve || memchr(v, '\\', (size_t)(ve - v)) || ve == v ||
                    (size_t)(ve - v) >= out_len)
                    return -1;
                memcpy(out, v, (size_t)(ve - v));
                out[ve - v] = '\0';
                return 0;
            }
            continue;
        }
        if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']') {
            if (depth-- == 0)
                return -1; /* the object ended without an id */
        }
        p++;
    }
    return -1;
}

/* q's transfer ended with cc. Returns 1 when q ended (result in *done). */
static int preq_done(dg_discord_pipe *p, preq *q, CURLcode cc, dg_discord_done *done)
{
    dg_discord *d = p->d;
    curl_multi_remove_handle(p->multi, q->easy);
    q->active = 0;
    long http = 0;
    if (cc == CURLE_OK)
        curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &http);
    q->e.attempts++;
    long ra = 0;
    int global = 0;
    if (cc == CURLE_OK && http == 429)
        ra = retry_after_of(&q->x, &global);
    rl_release(d, q->req.route, cc == CURLE_OK ? &q->x.h : NULL, cc == CURLE_OK ? http : 0, ra,
               global);
    if (cc != CURLE_OK) {
        q->failures++;
        if (cc == CURLE_WRITE_ERROR && q->x.too_big)
            snprintf(q->cerr, CURL_ERROR_SIZE, "answer larger than %u bytes", MAX_BODY);
        const char *why = q->cerr[0] ? q->cerr : curl_easy_strerror(cc);
        if (cc == CURLE_OPERATION_TIMEDOUT || mono_ms() >= q->deadline) {
            dgd_set_err(&q->e, OC_ERR_IO, 0, 1,
                        "timed out: %s got no answer within %ld ms (%s); try again later",
                        q->req.route, d->timeout_ms, why);
            preq_finish(p, q, OC_ERR_IO, NULL, done);
            return 1;
        }
        char whyc[CURL_ERROR_SIZE];
        snprintf(whyc, sizeof whyc, "%s", why);
        return preq_retry(p, q, 0, whyc, done);
    }
    q->e.http_status = http;
    if (http >= 200 && http < 300) {
        char idb[72];
        const char *id = NULL;
        json_t *j = NULL;
        if (q->x.len && top_level_id(q->x.body, q->x.len, idb, sizeof idb) == 0)
            id = idb;
        else if (q->x.len)
            id = json_string_value(json_object_get(j = json_loadb(q->x.body, q->x.len, 0, NULL),
                                                   "id"));
        char *mid = id ? strdup(id) : NULL;
        json_decref(j);
        if (!mid) {
            dgd_set_err(&q->e, OC_ERR_IO, http, 1, id ? "post message: out of memory"
                                                  : "post message: Discord's answer has no "
                                                    "message id");
            preq_finish(p, q, OC_ERR_IO, NULL, done);
            return 1;
        }
        q->e.message[0] = '\0';
        preq_finish(p, q, OC_OK, mid, done);
        return 1;
    }
    char dmsg[400];
    discord_message(d, &q->x, http, dmsg, sizeof dmsg, &q->e.discord_code);
    if (http == 429) {
        q->n429++;
        logf_(d, OC_LOG_DEBUG, "discord: %s rate limited (%s), waiting %ld ms", q->req.route,
              global ? "global" : "route", ra);
        if (q->n429 >= MAX_429_PER_CALL) {
            dgd_set_err(&q->e, OC_ERR_IO, http, 1,
                        "rate limited: %s answered 429 %d times in a row; try again later",
                        q->req.route, q->n429);
            preq_finish(p, q, OC_ERR_IO, NULL, done);
            return 1;
        }
        q->not_before = mono_ms(); /* the permit waits retry_after */
        return 0;
    }
    if (http >= 500) {
        q->failures++;
        return preq_retry(p, q, http, dmsg, done);
    }
    int rc = dgd_set_err(&q->e, status_rc(http), http, 0, "Discord refused %s with %ld: %s%s",
                         q->req.route, http, dmsg,
                         http == 403   ? "; give the bot that permission in the channel or guild"
                         : http == 401 ? "; check the bot token"
                                   : "");
    if (q->e.discord_code) {
        size_t used = strlen(q->e.message);
        snprintf(q->e.message + used, sizeof q->e.message - used, " (Discord code %d)",
                 q->e.discord_code);
    }
    preq_finish(p, q, rc, NULL, done);
    return 1;
}

size_t dg_discord_pipe_run(dg_discord_pipe *p, long wait_ms, dg_discord_done *done)
{
    if (!p || p->busy == 0)
        return 0;
    dg_discord *d = p->d;
    int64_t until = mono_ms() + (wait_ms > 0 ? wait_ms : 0);
    size_t nd = 0;
    /* Called again to wait right after a call whose perform left the
     * transfers settled, nothing started since: poll before performing
     * again. A perform there only found nothing to read (one system call
     * and a pass over curl's state per post, issue 14). */
    int skip_perform = p->settled && wait_ms > 0;
    p->settled = 0;
    for (;;) {
        int64_t now = mono_ms(), wake = until;
        int ab = atomic_load(&d->abort);
        for (size_t i = 0; i < p->cap; i++) {
            preq *q = &p->reqs[i];
            if (!q->used || q->active)
                continue;
            if (ab) {
                aborted_err(&q->e, q->req.route);
                preq_finish(p, q, OC_ERR_IO, NULL, &done[nd++]);
            } else if (q->not_before <= now) {
                nd += (size_t)preq_start(p, q, now, &done[nd]);
                skip_perform = 0; /* a transfer to put on the wire */
            }
            if (q->used && !q->active && q->not_before < wake)
                wake = q->not_before;
        }
        if (!skip_perform || ab || nd) {
            int running = 0;
            curl_multi_perform(p->multi, &running);
            CURLMsg *m;
            int left;
            while ((m = curl_multi_info_read(p->multi, &left))) {
                if (m->msg != CURLMSG_DONE)
                    continue;
                preq *q = NULL;
                curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&q);
                if (q && q->active)
                    nd += (size_t)preq_done(p, q, m->data.result, &done[nd]);
            }
        }
        skip_perform = 0;
        if (ab) {
            /* Transfers in flight are abandoned; their posts stay unsent. */
            for (size_t i = 0; i < p->cap; i++) {
                preq *q = &p->reqs[i];
                if (q->used && q->active) {
                    rl_release(d, q->req.route, NULL, 0, 0, 0);
                    aborted_err(&q->e, q->req.route);
                    preq_finish(p, q, OC_ERR_IO, NULL, &done[nd++]);
                }
            }
        }
        if (nd || p->busy == 0 || atomic_exchange(&p->woken, 0))
            return nd;
        now = mono_ms();
        if (now >= until) {
            p->settled = 1; /* performed just now, nothing ended, nothing started after */
            return 0;
        }
        /* Any not-yet-started post that became due goes round again. */
        int due = 0;
        for (size_t i = 0; i < p->cap && !due; i++)
            due = p->reqs[i].used && !p->reqs[i].active && p->reqs[i].not_before <= now;
        if (due)
            continue;
        int64_t t = (wake < until ? wake : until) - now;
        if (t > POLL_MS)
            t = POLL_MS;
        if (t < 0)
            t = 0;
        curl_multi_poll(p->multi, NULL, 0, (int)t, NULL);
    }
}
