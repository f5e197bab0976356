/*
 * transport.c -- the Discord client's transport on libcurl: rate limits,
 * retries, a pool of reusable handles, and one request under all of them
 * (dgd_do_request). The client's life (client.c), the pipelined posts
 * (pipe.c) and the endpoints (channels.c, messages.c, users.c) use it
 * through discord_int.h. See discord.h.
 *
 * The request machinery itself (handles, transfers, back-off, waits, the
 * log) is the shared core's (http/http_client.h); what is Discord's stays
 * here: routes and their X-RateLimit buckets, the global 429, Discord's
 * error bodies and messages.
 *
 * Depends on libcurl, jansson, pthreads, http/ and common/ (buf, scrub,
 * str_map) only: the reference gateway links this library into its own
 * binary.
 */
#include "buf.h"
#include "discord_int.h"

#include <strings.h>

#include "scrub.h"

#define MAX_ROUTES 1024 /* idle route states beyond this are forgotten */
#define MAX_WAIT_MS                                                                                \
    (3600L * 1000) /* longest rate-limit wait believed from a server: a
                                    value beyond is an error or hostile, and a double
                                    that big would not even fit the integer maths */

/* ---- small helpers ----------------------------------------------------------- */

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
        return -1; /* negative or NaN */
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
void dgd_route_key(const char *method, const char *path, char *out, size_t out_len)
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

void dgd_route_free(void *val, void *unused)
{
    (void)unused;
    free(val);
}

/* Route state for key; created when missing. Caller holds d->mu. A route
 * may be forgotten by a later call (route_in_use): never keep the pointer
 * across an unlock. */
dgd_route *dgd_route_get(dg_discord *d, const char *key)
{
    DGD_ASSERT_LOCKED(&d->mu);
    dgd_route *r = dg_map_get(&d->routes, key);
    if (r)
        return r;
    if (d->routes.n >= MAX_ROUTES) {
        int64_t now = dgh_mono_ms();
        /* Out of memory: all are kept, and the table outgrows the bound. */
        (void)dg_map_retain(&d->routes, route_in_use, dgd_route_free, &now);
    }
    if (!(r = calloc(1, sizeof *r)))
        return NULL;
    snprintf(r->key, sizeof r->key, "%s", key);
    if (dg_map_put(&d->routes, r->key, r) != DG_OK) {
        free(r);
        return NULL;
    }
    return r;
}

int dgd_aborted_err(dg_discord_err *e, const char *route)
{
    return dgd_set_err(e, DG_ERR_IO, 0, 1,
                       "aborted: %s was cancelled because the client is "
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
        if (dgh_aborted(&d->http)) {
            pthread_mutex_unlock(&d->mu);
            return dgd_aborted_err(e, route);
        }
        int64_t now = dgh_mono_ms();
        int64_t until;
        const char *what;
        if (d->global_until > now) {
            until = d->global_until;
            what = "the global rate limit";
        } else {
            dgd_route *r = dgd_route_get(d, route);
            if (!r) {
                pthread_mutex_unlock(&d->mu);
                return dgd_set_err(e, DG_ERR_NOMEM, 0, 1, "out of memory for rate-limit state");
            }
            if (!r->known) {
                if (r->inflight == 0) {
                    r->inflight++;
                    pthread_mutex_unlock(&d->mu);
                    return DG_OK;
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
                    return DG_OK;
                }
                until = r->reset_at;
                what = "the route's rate limit";
            }
        }
        if (until > deadline) {
            pthread_mutex_unlock(&d->mu);
            if (e)
                e->retry_after_ms = (long)(until - now);
            return dgd_set_err(e, DG_ERR_IO, e ? e->http_status : 0, 1,
                               "rate limited: %s is held back by %s for another %lld ms, longer "
                               "than this call may wait; try again later",
                               route, what, (long long)(until - now));
        }
        if (until < 0 && now >= deadline) {
            pthread_mutex_unlock(&d->mu);
            return dgd_set_err(e, DG_ERR_IO, 0, 1, "timed out: %s waited for %s; try again later",
                               route, what);
        }
        dgh_wait_until(&d->http, until < 0 ? deadline : until);
    }
}

/* Give the permit back and learn from the answer's headers (http 0: no
 * answer). retry_after_ms > 0 for a 429. */
void dgd_rl_release(dg_discord *d, const char *route, const dgd_hdrs *h, long http,
                    long retry_after_ms, int global)
{
    pthread_mutex_lock(&d->mu);
    /* +1: dgh_mono_ms truncates, and a wait must never end early. */
    int64_t now = dgh_mono_ms() + 1;
    dgd_route *r = dgd_route_get(d, route);
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

/* ---- handles and transfers --------------------------------------------------------- */

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

size_t dgd_on_header(char *line, size_t size, size_t nmemb, void *ud)
{
    dgd_xfer *x = ud;
    size_t n = size * nmemb;
    char v[96];
    /* Most lines of an answer (Date, Content-Type, Connection, ...) are
     * none of ours: the X-RateLimit- prefix is compared once, not once per
     * name (this callback runs for every header line of every answer). */
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

/* What one request carries from attempt to attempt. */
typedef struct req_run {
    const char *method, *url, *json, *route;
    int idempotent;
    int64_t deadline; /* monotonic ms: the call's time bound */
    int failures;     /* 5xx answers and transport failures so far */
    int n429;         /* 429 answers in a row */
} req_run;

/* One HTTP exchange of r within its time bound (dgh_exchange): the curl
 * code or DGH_*, and the HTTP status in *http. */
static CURLcode perform(dg_discord *d, const req_run *r, dgd_xfer *x, long *http, char *cerr)
{
    dgh_request q = {.method = r->method,
                     .url = r->url,
                     .body = r->json,
                     .fresh = !r->idempotent,
                     .on_header = dgd_on_header,
                     .header_data = x};
    return dgh_exchange(&d->http, r->deadline, &q, &x->body, http, cerr);
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
 * Discord's message (and form-error detail) from an error body. A 401/403
 * body is never repeated (it answers a request that carried the token; a
 * proxy may echo it in any spelling): only its code, by name. Otherwise
 * the text is taken JSON-decoded (a cut-off or non-JSON body has its
 * escapes decoded too), scrubbed of any piece of the token, and cut to
 * BODY_TEXT_MAX bytes.
 */
void dgd_discord_message(const dg_discord *d, dgd_xfer *x, long http, char *out, size_t out_len,
                         int *code)
{
    out[0] = '\0';
    *code = 0;
    /* Before anything is cut to length: a cut token would leak its start. */
    dgh_scrub(&d->http, x->body.s);
    json_t *j = x->body.s ? json_loads(x->body.s, 0, NULL) : NULL;
    const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
    char text[2048]; /* decoded and scrubbed before the cut */
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
    } else if (x->body.s && x->body.len) {
        snprintf(text, sizeof text, "%s", x->body.s);
        dg_unescape_json_text(text);
    } else {
        snprintf(text, sizeof text, "no error text");
    }
    json_decref(j);
    dgh_scrub(&d->http, text); /* a token spelt with JSON escapes, now decoded */
    dg_cut_for_log(text, BODY_TEXT_MAX);
    size_t l = strlen(text);
    if (l >= out_len)
        l = out_len - 1;
    memcpy(out, text, l);
    out[l] = '\0';
}

int dgd_status_rc(long http)
{
    switch (http) {
    case 400: return DG_ERR_INVALID;
    case 401:
    case 403: return DG_ERR_DENIED;
    case 404: return DG_ERR_NOT_FOUND;
    default: return DG_ERR_IO;
    }
}

/* retry_after of a 429 in ms, rounded up, from body or headers. */
long dgd_retry_after_of(const dgd_xfer *x, int *global)
{
    double ra = -1;
    int g = x->h.global || !strcasecmp(x->h.scope, "global");
    json_t *j = x->body.s ? json_loads(x->body.s, 0, NULL) : NULL;
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


/* An attempt's outcome besides DG_OK and the OC_ERR_* codes: try again. */
#define ATTEMPT_AGAIN 1

/* The back-off before the next attempt after a transport failure (http 0)
 * or a 5xx answer: logged, then slept unless the call's time would run out
 * first. ATTEMPT_AGAIN, or the error set in e. why: curl's reason or
 * Discord's message. */
static int backoff_wait(dg_discord *d, const req_run *r, long http, const char *why,
                        dg_discord_err *e)
{
    long wait = dgh_backoff_ms(&d->http, r->failures);
    if (http)
        dgh_log(&d->http, DG_LOG_WARN, "discord: %s answered %ld (%s); retry %d of %d in %ld ms",
                r->route, http, why, r->failures, d->http.max_attempts - 1, wait);
    else
        dgh_log(&d->http, DG_LOG_WARN, "discord: %s failed (%s); retry %d of %d in %ld ms",
                r->route, why, r->failures, d->http.max_attempts - 1, wait);
    if (dgh_mono_ms() + wait >= r->deadline) {
        if (http)
            return dgd_set_err(e, DG_ERR_IO, http, 1,
                               "Discord answered %ld to %s: %s; no time left in %ld ms to retry",
                               http, r->route, why, d->http.timeout_ms);
        return dgd_set_err(e, DG_ERR_IO, 0, 1,
                           "timed out: %s failed (%s) and no time is left in its %ld ms to "
                           "retry",
                           r->route, why, d->http.timeout_ms);
    }
    if (dgh_sleep_until(&d->http, dgh_mono_ms() + wait) < 0)
        return dgd_aborted_err(e, r->route);
    return ATTEMPT_AGAIN;
}

/* A transfer that got no answer: out of time, out of attempts, not safe to
 * repeat (a request that may have been sent and is not idempotent), or
 * ATTEMPT_AGAIN after the back-off. */
static int on_no_answer(dg_discord *d, req_run *r, CURLcode cc, const char *cerr, dg_discord_err *e)
{
    r->failures++;
    int timed_out = cc == CURLE_OPERATION_TIMEDOUT || dgh_mono_ms() >= r->deadline;
    const char *why = cerr[0] ? cerr : curl_easy_strerror(cc);
    if (timed_out)
        return dgd_set_err(e, DG_ERR_IO, 0, 1,
                           "timed out: %s got no answer within %ld ms (%s); try again later",
                           r->route, d->http.timeout_ms, why);
    if ((!r->idempotent && !not_sent(cc)) || r->failures >= d->http.max_attempts)
        return dgd_set_err(e, DG_ERR_IO, 0, 1,
                           "no answer from Discord for %s after %d attempt%s: %s", r->route,
                           e->attempts, e->attempts == 1 ? "" : "s", why);
    return backoff_wait(d, r, 0, why, e);
}

/* A 2xx answer: its body as JSON (null when empty) into *response, or
 * decref'd when response is NULL. */
static int on_success(const req_run *r, const dgd_xfer *x, long http, json_t **response,
                      dg_discord_err *e)
{
    json_t *j = NULL;
    if (x->body.len == 0) {
        j = json_null();
    } else {
        json_error_t je;
        j = json_loadb(x->body.s, x->body.len, 0, &je);
    }
    if (!j)
        return dgd_set_err(e, DG_ERR_IO, http, 1,
                           "Discord answered %ld to %s with a body that is not JSON", http,
                           r->route);
    if (response)
        *response = j;
    else
        json_decref(j);
    e->message[0] = '\0';
    return DG_OK;
}

/* An answer that is not 2xx: 429 and 5xx are tried again within their
 * bounds, anything else is Discord's refusal. ra, global: the 429's wait. */
static int on_refusal(dg_discord *d, req_run *r, dgd_xfer *x, long http, long ra, int global,
                      dg_discord_err *e)
{
    char dmsg[400];
    dgd_discord_message(d, x, http, dmsg, sizeof dmsg, &e->discord_code);
    if (http == 429) {
        r->n429++;
        dgh_log(&d->http, DG_LOG_DEBUG, "discord: %s rate limited (%s), waiting %ld ms", r->route,
                global ? "global" : "route", ra);
        if (r->n429 >= DGD_MAX_429_PER_CALL)
            return dgd_set_err(e, DG_ERR_IO, http, 1,
                               "rate limited: %s answered 429 %d times in a row; try again "
                               "later",
                               r->route, r->n429);
        return ATTEMPT_AGAIN; /* rl_acquire waits retry_after, or fails past the bound */
    }
    if (http >= 500) {
        r->failures++;
        if (r->failures >= d->http.max_attempts)
            return dgd_set_err(e, DG_ERR_IO, http, 1,
                               "Discord answered %ld to %s %d times: %s; try again later", http,
                               r->route, r->failures, dmsg);
        return backoff_wait(d, r, http, dmsg, e);
    }
    int rc = dgd_set_err(e, dgd_status_rc(http), http, 0, "Discord refused %s with %ld: %s%s",
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
 * answer means. DG_OK, ATTEMPT_AGAIN, or the error set in e. */
static int attempt(dg_discord *d, req_run *r, json_t **response, dg_discord_err *e)
{
    int rc = rl_acquire(d, r->route, r->deadline, e);
    if (rc != DG_OK)
        return rc;
    dgd_xfer x;
    memset(&x, 0, sizeof x);
    long http = 0;
    char cerr[CURL_ERROR_SIZE];
    CURLcode cc = perform(d, r, &x, &http, cerr);
    if (cc == DGH_NO_TIME || cc == DGH_NO_HANDLE) {
        dgd_rl_release(d, r->route, NULL, 0, 0, 0);
        if (cc == DGH_NO_HANDLE)
            return dgd_set_err(e, DG_ERR_NOMEM, 0, 1, "out of memory for a transfer handle");
        return dgd_set_err(e, DG_ERR_IO, e->http_status, 1,
                           "timed out: %s got no answer within %ld ms; try again later", r->route,
                           d->http.timeout_ms);
    }
    e->attempts++;
    long ra = 0;
    int global = 0;
    if (cc == CURLE_OK && http == 429)
        ra = dgd_retry_after_of(&x, &global);
    dgd_rl_release(d, r->route, cc == CURLE_OK ? &x.h : NULL, cc == CURLE_OK ? http : 0, ra,
                   global);

    if (cc == DGH_ABORTED)
        rc = dgd_aborted_err(e, r->route);
    else if (cc != CURLE_OK)
        rc = on_no_answer(d, r, cc, cerr, e);
    else if ((e->http_status = http) >= 200 && http < 300)
        rc = on_success(r, &x, http, response, e);
    else
        rc = on_refusal(d, r, &x, http, ra, global, e);
    dgh_body_free(&x.body);
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
    dgd_route_key(method, path, route, sizeof route);
    size_t ulen = strlen(d->http.base) + strlen(path) + 1;
    char *url = malloc(ulen);
    if (!url)
        return dgd_set_err(e, DG_ERR_NOMEM, 0, 1, "out of memory");
    snprintf(url, ulen, "%s%s", d->http.base, path);

    req_run r = {.method = method,
                 .url = url,
                 .json = json,
                 .route = route,
                 .idempotent = idempotent,
                 .deadline = dgh_mono_ms() + d->http.timeout_ms};
    int rc;
    while ((rc = attempt(d, &r, response, e)) == ATTEMPT_AGAIN)
        ;
    free(url);
    dgh_scrub(&d->http, e->message);
    return rc;
}
