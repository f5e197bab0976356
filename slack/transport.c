/*
 * transport.c -- the Slack client's transport on libcurl: form bodies,
 * pacing ahead of Slack's rate-limit tiers, 429 Retry-After, retries of
 * what is safe to repeat, a pool of reusable handles, and Slack's answers
 * turned into a dg_status and a sentence (dgs_call). The request
 * machinery itself (handles, transfers, back-off, waits, the log) is the
 * shared core's (http/http_client.h). See slack.h.
 */
#include "slack_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log_level.h"

int dgs_fail(dg_slack_err *e, int rc, long http, int retryable, const char *fmt, ...)
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

void dgs_copy_str(const json_t *o, const char *key, char *out, size_t out_len)
{
    const char *v = json_string_value(json_object_get(o, key));
    snprintf(out, out_len, "%s", v ? v : "");
}

/* ---- form bodies ---------------------------------------------------------------- */

static int form_escape(dg_buf *b, const char *v)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        char enc[3] = {(char)*p, 0, 0};
        size_t n = 1;
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.' || *p == '~';
        if (!plain) {
            enc[0] = '%';
            enc[1] = hex[*p >> 4];
            enc[2] = hex[*p & 15];
            n = 3;
        }
        if (dg_buf_add(b, enc, n) != 0)
            return -1;
    }
    return 0;
}

int dgs_form_add(dg_buf *form, const char *key, const char *value)
{
    if (form->len && dg_buf_adds(form, "&") != 0)
        return -1;
    if (dg_buf_adds(form, key) != 0 || dg_buf_adds(form, "=") != 0)
        return -1;
    if (!form->s && dg_buf_adds(form, "") != 0)
        return -1;
    return form_escape(form, value ? value : "");
}

/* ---- pacing ---------------------------------------------------------------------- */

/* Requests per minute and burst of a method's tier (Slack's method
 * pages); chat.postMessage is paced per channel at one a second. */
static void tier_of(const char *method, double *per_minute, double *burst)
{
    static const struct {
        const char *method;
        double per_minute, burst;
    } tiers[] = {
        {"chat.postMessage", 60, 1},        /* special: ~1 per second per channel */
        {"conversations.create", 20, 2},    /* Tier 2 */
        {"conversations.archive", 20, 2},   /* Tier 2 */
        {"conversations.list", 20, 2},      /* Tier 2 */
        {"conversations.invite", 50, 5},    /* Tier 3 */
        {"conversations.info", 50, 5},      /* Tier 3 */
        {"conversations.history", 50, 5},   /* Tier 3 */
        {"conversations.replies", 50, 5},   /* Tier 3 */
        {"conversations.members", 100, 10}, /* Tier 4 */
        {"users.info", 100, 10},            /* Tier 4 */
        {"auth.test", 100, 10},             /* special, generous */
    };
    for (size_t i = 0; i < sizeof tiers / sizeof tiers[0]; i++)
        if (!strcmp(tiers[i].method, method)) {
            *per_minute = tiers[i].per_minute;
            *burst = tiers[i].burst;
            return;
        }
    *per_minute = 50; /* an unknown method: Tier 3's pace */
    *burst = 5;
}

void dgs_pace_free(void *val, void *unused)
{
    (void)unused;
    free(val);
}

/* A pace state that would start over the same if forgotten: its bucket
 * refilled by now and no Retry-After pending. dg_map_retain's keep. */
static int pace_in_use(void *val, void *now_ms)
{
    const dgs_pace *p = val;
    int64_t now = *(const int64_t *)now_ms;
    return p->blocked_until > now || p->tokens + (double)(now - p->last_ms) * p->rate < p->burst;
}

/* Idle states beyond DGS_MAX_PACES forgotten (one a channel posted to:
 * a long run makes many). s->mu held; no pace pointer may be kept across
 * this call. */
static void pace_prune(dg_slack *s)
{
    if (s->paces.n < DGS_MAX_PACES)
        return;
    int64_t now = dgh_mono_ms();
    /* Out of memory: all are kept, and the table outgrows the bound. */
    (void)dg_map_retain(&s->paces, pace_in_use, dgs_pace_free, &now);
}

/* The pace state of key (created full); NULL out of memory. s->mu held.
 * Never forgets a state: pointers from earlier calls stay valid until
 * pace_prune. */
static dgs_pace *pace_get(dg_slack *s, const char *key, const char *method)
{
    dgs_pace *p = dg_map_get(&s->paces, key);
    if (p)
        return p;
    if (!(p = calloc(1, sizeof *p)))
        return NULL;
    snprintf(p->key, sizeof p->key, "%s", key);
    double per_minute, burst;
    tier_of(method, &per_minute, &burst);
    p->rate = per_minute / 60000.0 / s->pace_scale;
    p->burst = burst;
    p->tokens = burst;
    p->last_ms = dgh_mono_ms();
    if (dg_map_put(&s->paces, p->key, p) != DG_OK) {
        free(p);
        return NULL;
    }
    return p;
}

/*
 * Wait for the method's 429 block to end and (unless pacing is off) a
 * token of key's bucket. Fails when the wait would end after deadline or
 * the client is aborted.
 */
static int pace_acquire(dg_slack *s, const char *method, const char *key, int64_t deadline,
                        dg_slack_err *e)
{
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (dgh_aborted(&s->http)) {
            pthread_mutex_unlock(&s->mu);
            return dgs_fail(e, DG_ERR_IO, 0, 1, "aborted: %s was cancelled: shutting down", method);
        }
        pace_prune(s); /* before the lookups: m and k stay valid below */
        int64_t now = dgh_mono_ms();
        dgs_pace *m = pace_get(s, method, method);
        dgs_pace *k = key == method || !strcmp(key, method) ? m : pace_get(s, key, method);
        if (!m || !k) {
            pthread_mutex_unlock(&s->mu);
            return dgs_fail(e, DG_ERR_NOMEM, 0, 1, "out of memory for %s's pacing", method);
        }
        int64_t until = m->blocked_until > now ? m->blocked_until : 0;
        const char *what = "Slack's Retry-After";
        if (!until && !s->no_pacing) {
            k->tokens += (double)(now - k->last_ms) * k->rate;
            if (k->tokens > k->burst)
                k->tokens = k->burst;
            k->last_ms = now;
            if (k->tokens >= 1.0) {
                k->tokens -= 1.0;
                pthread_mutex_unlock(&s->mu);
                return DG_OK;
            }
            until = now + (int64_t)((1.0 - k->tokens) / k->rate) + 1;
            what = "the pace of Slack's rate-limit tier";
        } else if (!until) {
            pthread_mutex_unlock(&s->mu);
            return DG_OK;
        }
        if (until > deadline) {
            pthread_mutex_unlock(&s->mu);
            if (e)
                e->retry_after_ms = (long)(until - now);
            return dgs_fail(e, DG_ERR_IO, e ? e->http_status : 0, 1,
                            "rate limited: %s is held back by %s for another %lld ms, longer "
                            "than this call may wait; try again later",
                            method, what, (long long)(until - now));
        }
        dgh_wait_until(&s->http, until);
    }
}

/* A 429 holds the whole method back for retry_ms. */
static void pace_block(dg_slack *s, const char *method, long retry_ms)
{
    pthread_mutex_lock(&s->mu);
    dgs_pace *m = pace_get(s, method, method);
    int64_t until = dgh_mono_ms() + retry_ms + 1;
    if (m && m->blocked_until < until)
        m->blocked_until = until;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
}

/* ---- handles and one transfer ------------------------------------------------------ */

/* One answer: body and the Retry-After header. */
typedef struct xfer {
    dgh_body body;
    long retry_after_ms; /* -1: no header */
} xfer;

/* Retry-After: whole seconds (Slack's), read without strtod's locale.
 * curl's header callback, on the thread running the transfer. */
static size_t on_header(char *line, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    static const char name[] = "retry-after:";
    if (n > sizeof name - 1 && !strncasecmp(line, name, sizeof name - 1)) {
        long v = 0;
        int digits = 0;
        for (size_t i = sizeof name - 1; i < n; i++) {
            if (line[i] >= '0' && line[i] <= '9') {
                if (v < DGS_MAX_WAIT_MS / 1000)
                    v = v * 10 + (line[i] - '0');
                digits++;
            } else if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '\n') {
                break;
            }
        }
        if (digits)
            x->retry_after_ms = v * 1000;
    }
    return n;
}

/* What one request carries from attempt to attempt. */
typedef struct run {
    const char *method, *key, *url, *form;
    int idempotent;
    int64_t deadline;
    int failures, n429;
} run;

/* One transfer of r's form within its time bound (dgh_exchange): the
 * curl code or DGH_*, and the HTTP status in *http. */
static CURLcode perform(dg_slack *s, const run *r, xfer *x, long *http, char *cerr)
{
    /* libcurl resends a request on its own when a reused connection dies
     * before any answer: a post must never go twice, so one that is not
     * idempotent gets a fresh connection. */
    dgh_request q = {.method = "POST",
                     .url = r->url,
                     .user_agent = s->user_agent,
                     .body = r->form,
                     .fresh = !r->idempotent,
                     .on_header = on_header,
                     .header_data = x};
    return dgh_exchange(&s->http, r->deadline, &q, &x->body, http, cerr);
}

/* ---- Slack's answers ------------------------------------------------------------------ */

/* The status of one of Slack's error codes (slack.h's table). */
static int status_of(const char *code)
{
    static const char *const denied[] = {
        "not_authed",     "invalid_auth",           "account_inactive",  "token_revoked",
        "token_expired",  "missing_scope",          "no_permission",     "restricted_action",
        "not_in_channel", "not_allowed_token_type", "ekm_access_denied", NULL};
    static const char *const not_found[] = {"channel_not_found", "user_not_found",
                                            "thread_not_found", "message_not_found", NULL};
    static const char *const invalid[] = {"no_text", "msg_too_long",     "too_many_users",
                                          "no_user", "cant_invite_self", NULL};
    for (const char *const *c = denied; *c; c++)
        if (!strcmp(code, *c))
            return DG_ERR_DENIED;
    for (const char *const *c = not_found; *c; c++)
        if (!strcmp(code, *c))
            return DG_ERR_NOT_FOUND;
    for (const char *const *c = invalid; *c; c++)
        if (!strcmp(code, *c))
            return DG_ERR_INVALID;
    if (!strncmp(code, "invalid_", 8))
        return DG_ERR_INVALID;
    if (!strcmp(code, "is_archived") || !strcmp(code, "name_taken"))
        return DG_ERR_CONFLICT;
    return DG_ERR_IO;
}

/* What the reader does about a code: a clause after "; ". */
static const char *hint_of(const char *code)
{
    static const struct {
        const char *code, *hint;
    } hints[] = {
        {"not_authed", "the request carried no token: set the moderator's bot token (xoxb-)"},
        {"invalid_auth", "the moderator's bot token is wrong: copy the Bot User OAuth Token "
                         "(xoxb-) again from the app's OAuth & Permissions page"},
        {"token_revoked", "the moderator's bot token was revoked: reinstall the app and use its "
                          "new Bot User OAuth Token (xoxb-)"},
        {"token_expired", "the moderator's bot token expired: use a non-expiring Bot User OAuth "
                          "Token (xoxb-) or refresh it"},
        {"account_inactive", "the app was removed from the workspace: install it again"},
        {"not_allowed_token_type", "this method needs the bot token (xoxb-), not a user or "
                                   "app-level token"},
        {"not_in_channel", "invite the moderator app into the channel first (/invite @app in "
                           "the channel)"},
        {"channel_not_found", "check the channel id; a private channel exists for the "
                              "moderator only when it is a member"},
        {"user_not_found", "check the user id (U... or W...)"},
        {"thread_not_found", "check the thread's ts: it must be a message of that channel"},
        {"is_archived", "the channel is archived: unarchive it in Slack or use another one"},
        {"name_taken", "a channel of that name exists (archived ones count too): choose "
                       "another name"},
        {"msg_too_long", "shorten the text or split it into several messages"},
        {"no_text", "give the message some text"},
        {"restricted_action", "a workspace setting forbids the app this: ask a workspace admin"},
        {"no_permission", "the app lacks a permission for this: ask a workspace admin"},
        {"ratelimited", "Slack limits this method: try again later"},
        {"internal_error", "Slack failed: try again later"},
        {"fatal_error", "Slack failed: try again later"},
    };
    for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++)
        if (!strcmp(hints[i].code, code))
            return hints[i].hint;
    return NULL;
}

/* An {"ok":false} answer into e: Slack's code, the needed scope, the
 * status and the sentence. */
static int on_refusal(dg_slack *s, const char *method, const json_t *ans, long http,
                      dg_slack_err *e)
{
    dgs_copy_str(ans, "error", e->error, sizeof e->error);
    if (!e->error[0])
        snprintf(e->error, sizeof e->error, "unknown_error");
    /* Slack's codes are short identifiers: anything else is not repeated. */
    for (char *p = e->error; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            *p = '?';
    int rc = status_of(e->error);
    if (!strcmp(e->error, "missing_scope")) {
        dgs_copy_str(ans, "needed", e->needed, sizeof e->needed);
        dgh_scrub(&s->http, e->needed);
        return dgs_fail(e, rc, http, 0,
                        "Slack refused %s: missing_scope (needed: %s); add the bot token scope "
                        "%s to the moderator app (OAuth & Permissions > Bot Token Scopes) and "
                        "reinstall it to the workspace",
                        method, e->needed[0] ? e->needed : "not said",
                        e->needed[0] ? e->needed : "that Slack's page of the method names");
    }
    const char *hint = hint_of(e->error);
    int retryable = rc == DG_ERR_IO &&
                    (!strcmp(e->error, "internal_error") || !strcmp(e->error, "fatal_error") ||
                     !strcmp(e->error, "ratelimited") || !strcmp(e->error, "service_unavailable") ||
                     !strcmp(e->error, "request_timeout"));
    if (hint)
        return dgs_fail(e, rc, http, retryable, "Slack refused %s: %s; %s", method, e->error, hint);
    return dgs_fail(e, rc, http, retryable,
                    "Slack refused %s: %s; see Slack's page of %s for what that error means",
                    method, e->error, method);
}


#define AGAIN 1

/* Transport failure or 5xx: back off and try again when allowed. */
static int retry_or_fail(dg_slack *s, run *r, long http, int sent, const char *why, dg_slack_err *e)
{
    r->failures++;
    if (dgh_mono_ms() >= r->deadline)
        return dgs_fail(e, DG_ERR_IO, http, 1,
                        "timed out: %s got no answer within %ld ms (%s); try again later",
                        r->method, s->http.timeout_ms, why);
    if ((sent && !r->idempotent) || r->failures >= s->http.max_attempts)
        return dgs_fail(
            e, DG_ERR_IO, http, 1, "no usable answer from Slack for %s after %d attempt%s (%s)%s",
            r->method, e->attempts, e->attempts == 1 ? "" : "s", why,
            sent && !r->idempotent ? "; it may have been done: look before doing it again"
                                   : "; try again later");
    long wait = dgh_backoff_ms(&s->http, r->failures);
    dgh_log(&s->http, DG_LOG_WARN, "slack: %s failed (%s); retry %d of %d in %ld ms", r->method,
            why, r->failures, s->http.max_attempts - 1, wait);
    if (dgh_mono_ms() + wait >= r->deadline)
        return dgs_fail(e, DG_ERR_IO, http, 1,
                        "timed out: %s failed (%s) and no time is left in its %ld ms to retry",
                        r->method, why, s->http.timeout_ms);
    if (dgh_sleep_until(&s->http, dgh_mono_ms() + wait) < 0)
        return dgs_fail(e, DG_ERR_IO, 0, 1, "aborted: %s was cancelled: shutting down", r->method);
    return AGAIN;
}

/* An HTTP answer: 429, 5xx, 200 with ok true or false, anything else. */
static int on_answer(dg_slack *s, run *r, xfer *x, long http, json_t **answer, dg_slack_err *e)
{
    e->http_status = http;
    if (http == 429) {
        long ra = x->retry_after_ms >= 0 ? x->retry_after_ms : 1000;
        dgh_log(&s->http, DG_LOG_DEBUG, "slack: %s rate limited, waiting %ld ms", r->method, ra);
        pace_block(s, r->method, ra);
        snprintf(e->error, sizeof e->error, "ratelimited");
        if (++r->n429 >= DGS_MAX_429_PER_CALL)
            return dgs_fail(e, DG_ERR_IO, http, 1,
                            "rate limited: %s answered 429 %d times in a row; try again later",
                            r->method, r->n429);
        return AGAIN; /* pace_acquire waits out the Retry-After or fails past the bound */
    }
    if (http >= 500) {
        char why[32];
        snprintf(why, sizeof why, "HTTP %ld", http);
        return retry_or_fail(s, r, http, 1, why, e);
    }
    json_t *j = x->body.len ? json_loadb(x->body.s, x->body.len, 0, NULL) : NULL;
    if (http != 200 || !json_is_object(j)) {
        json_decref(j);
        return dgs_fail(e, DG_ERR_IO, http, 0,
                        "Slack answered %s with HTTP %ld and %s; check the API base URL "
                        "(default %s)",
                        r->method, http, j ? "JSON that is no object" : "no JSON",
                        DG_SLACK_API_BASE);
    }
    if (json_is_true(json_object_get(j, "ok"))) {
        *answer = j;
        e->message[0] = '\0';
        e->error[0] = '\0';
        return DG_OK;
    }
    int rc = on_refusal(s, r->method, j, http, e);
    json_decref(j);
    return rc;
}

/* One attempt: pace, handle, transfer, answer. DG_OK, AGAIN or the error. */
static int attempt(dg_slack *s, run *r, json_t **answer, dg_slack_err *e)
{
    int rc = pace_acquire(s, r->method, r->key, r->deadline, e);
    if (rc != DG_OK)
        return rc;
    xfer x = {.retry_after_ms = -1};
    long http = 0;
    char cerr[CURL_ERROR_SIZE];
    CURLcode cc = perform(s, r, &x, &http, cerr);
    if (cc == DGH_NO_TIME)
        return dgs_fail(e, DG_ERR_IO, e->http_status, 1,
                        "timed out: %s got no answer within %ld ms; try again later", r->method,
                        s->http.timeout_ms);
    if (cc == DGH_NO_HANDLE)
        return dgs_fail(e, DG_ERR_NOMEM, 0, 1, "out of memory for a transfer handle");
    e->attempts++;
    if (cc == DGH_ABORTED)
        rc = dgs_fail(e, DG_ERR_IO, 0, 1, "aborted: %s was cancelled: shutting down", r->method);
    else if (cc != CURLE_OK)
        rc = retry_or_fail(s, r, 0,
                           !(cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST),
                           cerr[0] ? cerr : curl_easy_strerror(cc), e);
    else
        rc = on_answer(s, r, &x, http, answer, e);
    dgh_body_free(&x.body);
    return rc;
}

int dgs_call(dg_slack *s, const char *method, const char *pace_channel, const char *form,
             int idempotent, json_t **answer, dg_slack_err *e)
{
    dg_slack_err local;
    if (!e)
        e = &local;
    memset(e, 0, sizeof *e);
    *answer = NULL;
    char key[96];
    if (pace_channel)
        snprintf(key, sizeof key, "%s %s", method, pace_channel);
    else
        snprintf(key, sizeof key, "%s", method);
    char *url = dg_sprintf("%s/%s", s->http.base, method);
    if (!url)
        return dgs_fail(e, DG_ERR_NOMEM, 0, 1, "out of memory");
    run r = {.method = method,
             .key = key,
             .url = url,
             .form = form ? form : "",
             .idempotent = idempotent,
             .deadline = dgh_mono_ms() + s->http.timeout_ms};
    int rc;
    while ((rc = attempt(s, &r, answer, e)) == AGAIN)
        ;
    free(url);
    dgh_scrub(&s->http, e->message);
    return rc;
}
