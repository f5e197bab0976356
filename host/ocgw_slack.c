/*
 * ocgw_slack.c -- the gateway's own Slack Web API caller: one bot token,
 * form-encoded POSTs to <apiBase>/<method> on the shared request core
 * (http/http_client.h), Slack's {"ok": ...} answers. The agents and the
 * scripted humans of a Slack gateway read and post with it, as OpenClaw's
 * Slack plugin does with each app's bot token; the moderator's posts are
 * the plugin's (its own client, slack/).
 *
 * Reads (conversations.*) are tried up to three times on a transport
 * failure or a 5xx; a post is tried once (Slack has no nonce: a post whose
 * answer was lost may have been stored). A 429 or ratelimited is never
 * waited out here: the caller's loop tries again later (e->retryable).
 * Single-threaded: one ocgw_slack is used by the gateway's loop only.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "http_client.h"
#include "ocgw.h"

struct ocgw_slack {
    dgh_client http;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    char *token; /* for the scrub of log lines; wiped at free */
    dgh_body body;
    char doubted[64]; /* the nonce of a post that may exist (ocgw_slack_doubt); "" none */
};

static const dgh_limits limits = {.timeout_ms = 15000,
                                  .connect_ms = 5000,
                                  .backoff_base_ms = 50,
                                  .backoff_max_ms = 1000,
                                  .max_attempts = 3,
                                  .max_idle = 2};

int ocgw_slack_new(const char *api_base, const char *token, long timeout_ms, ocgw_slack **out,
                   char *err, size_t n)
{
    *out = NULL;
    if (dgh_global_init() != CURLE_OK) {
        snprintf(err, n, "libcurl did not initialise");
        return OC_ERR_INTERNAL;
    }
    ocgw_slack *s = calloc(1, sizeof *s);
    if (!s || !(s->token = strdup(token))) {
        free(s);
        snprintf(err, n, "out of memory");
        return OC_ERR_NOMEM;
    }
    dgh_limits given = limits, lim;
    given.timeout_ms = timeout_ms;
    dgh_limits_pick(&lim, &given, &limits);
    if (dgh_init(&s->http, &lim, NULL, NULL, &s->mu, &s->cond) != 0) {
        free(s->token);
        free(s);
        snprintf(err, n, "out of memory");
        return OC_ERR_NOMEM;
    }
    s->http.secret = s->token;
    char *auth = dg_sprintf("Authorization: Bearer %s", token);
    const char *lines[] = {auth ? auth : "",
                           "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                           "User-Agent: ocgw/" DG_VERSION};
    int rc = auth ? dgh_set_endpoint(&s->http, api_base, lines, 3) : -1;
    if (auth) {
        memset(auth, 0, strlen(auth));
        free(auth);
    }
    if (rc != 0) {
        ocgw_slack_free(s);
        snprintf(err, n, "out of memory");
        return OC_ERR_NOMEM;
    }
    *out = s;
    return OC_OK;
}

void ocgw_slack_doubt(ocgw_slack *s, const char *nonce)
{
    snprintf(s->doubted, sizeof s->doubted, "%s", nonce ? nonce : "");
}

int ocgw_slack_doubted(const ocgw_slack *s, const char *nonce)
{
    return s->doubted[0] && nonce && !strcmp(s->doubted, nonce);
}

void ocgw_slack_free(ocgw_slack *s)
{
    if (!s)
        return;
    dgh_destroy(&s->http);
    dgh_body_free(&s->body);
    if (s->token) {
        memset(s->token, 0, strlen(s->token));
        free(s->token);
    }
    free(s);
}

/* "k=v&k=v" of the NULL-terminated pairs, values URL-encoded; malloc'd. */
static char *form_of(const char *const *args)
{
    dg_buf f = {0};
    if (dg_buf_add(&f, "", 0))
        return NULL;
    for (size_t i = 0; args && args[i] && args[i + 1]; i += 2) {
        char *v = curl_easy_escape(NULL, args[i + 1], 0);
        int bad = !v || dg_buf_adds(&f, i ? "&" : "") || dg_buf_adds(&f, args[i]) ||
                  dg_buf_adds(&f, "=") || dg_buf_adds(&f, v);
        curl_free(v);
        if (bad) {
            dg_buf_free(&f);
            return NULL;
        }
    }
    return f.s;
}

static int failed(ocgw_slack_err *e, int retryable, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int failed(ocgw_slack_err *e, int retryable, const char *code, const char *fmt, ...)
{
    e->retryable = retryable;
    snprintf(e->code, sizeof e->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return retryable ? OC_ERR_IO : OC_ERR_INVALID;
}

int ocgw_slack_call(ocgw_slack *s, const char *method, const char *const *args, json_t **answer,
                    ocgw_slack_err *e)
{
    memset(e, 0, sizeof *e);
    *answer = NULL;
    int is_read = !strncmp(method, "conversations.", 14) || !strncmp(method, "users.", 6) ||
                  !strcmp(method, "auth.test");
    char *form = form_of(args);
    char *url = dg_sprintf("%s/%s", s->http.base, method);
    if (!form || !url) {
        free(form);
        free(url);
        return failed(e, 1, "nomem", "%s: out of memory", method);
    }
    int64_t deadline = dgh_mono_ms() + s->http.timeout_ms;
    int rc = OC_ERR_IO;
    for (int attempt = 1;; attempt++) {
        dgh_request q = {.method = "POST", .url = url, .body = form, .fresh = !is_read};
        long http = 0;
        char cerr[CURL_ERROR_SIZE] = "";
        dgh_body_clear(&s->body);
        CURLcode cc = dgh_exchange(&s->http, deadline, &q, &s->body, &http, cerr);
        e->attempts++;
        int again = 0;
        if (cc != CURLE_OK) {
            rc = failed(e, 1, "transport", "%s: %s", method, dgh_reason(cc, &s->body, cerr));
            again = is_read;
        } else if (http == 429) {
            rc = failed(e, 1, "ratelimited", "%s: rate limited by Slack (HTTP 429)", method);
        } else if (http >= 500) {
            rc = failed(e, 1, "http_5xx", "%s: HTTP %ld from Slack", method, http);
            again = is_read;
        } else {
            json_t *j = json_loads(s->body.s ? s->body.s : "", 0, NULL);
            if (!json_is_object(j)) {
                rc = failed(e, 0, "bad_answer", "%s: HTTP %ld and an answer that is not JSON",
                            method, http);
            } else if (!json_is_true(json_object_get(j, "ok"))) {
                const char *code = json_string_value(json_object_get(j, "error"));
                int retry =
                    code && (!strcmp(code, "ratelimited") || !strcmp(code, "internal_error") ||
                             !strcmp(code, "service_unavailable"));
                rc = failed(e, retry, code ? code : "unknown", "%s: Slack answered %s", method,
                            code ? code : "ok=false without an error code");
            } else {
                *answer = j;
                j = NULL;
                rc = OC_OK;
            }
            json_decref(j);
        }
        if (!again || attempt >= s->http.max_attempts || dgh_mono_ms() >= deadline)
            break;
        if (dgh_sleep_until(&s->http, dgh_mono_ms() + dgh_backoff_ms(&s->http, attempt)) < 0)
            break;
    }
    dgh_scrub(&s->http, e->message);
    free(form);
    free(url);
    return rc;
}
