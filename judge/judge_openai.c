/*
 * judge_openai.c -- the judge's OpenAI-compatible client (judge.h): one
 * POST to <base>/chat/completions per question on http/'s request core,
 * bounded as a whole, never retried (a late answer is worth nothing).
 */
#include "judge.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "http_client.h"
#include "log_level.h"
#include "status.h"

struct dgj_openai {
    dgh_client http;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    char *model;
    char *key; /* scrubbed from every log line; wiped before free */
    char *url;
};

static const dgh_limits limits = {
    .timeout_ms = 60000,
    .connect_ms = 5000,
    .backoff_base_ms = 250,
    .backoff_max_ms = 1000,
    .max_attempts = 1,
    .max_idle = 2,
};

static void wipe_free(char *p)
{
    if (p) {
        volatile char *v = p;
        while (*v)
            *v++ = '\0';
        free(p);
    }
}

static int fail(char *err, size_t err_len, int rc, const char *what)
{
    if (err && err_len)
        snprintf(err, err_len, "%s", what);
    return rc;
}

static int endpoint(dgj_openai *c, const char *base)
{
    char *auth = c->key ? dg_sprintf("Authorization: Bearer %s", c->key) : NULL;
    if (c->key && !auth)
        return DG_ERR_NOMEM;
    const char *lines[2] = {"Content-Type: application/json", auth};
    int rc = dgh_set_endpoint(&c->http, base, lines, auth ? 2 : 1);
    wipe_free(auth);
    return rc;
}

int dgj_openai_new(const char *base_url, const char *model, const char *api_key, dgj_log_fn log,
                   void *log_state, dgj_openai **out, char *err, size_t err_len)
{
    *out = NULL;
    if (!base_url ||
        (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0))
        return fail(err, err_len, DG_ERR_INVALID, "judge: the base URL must start with http(s)://");
    if (!model || !*model)
        return fail(err, err_len, DG_ERR_INVALID, "judge: a model must be named");
    if (dgh_global_init() != CURLE_OK)
        return fail(err, err_len, DG_ERR_IO, "judge: libcurl could not be initialised");
    dgj_openai *c = calloc(1, sizeof *c);
    if (!c)
        return DG_ERR_NOMEM;
    if (dgh_init(&c->http, &limits, log, log_state, &c->mu, &c->cond) != DG_OK) {
        free(c);
        return DG_ERR_NOMEM;
    }
    c->model = strdup(model);
    c->key = api_key && *api_key ? strdup(api_key) : NULL;
    c->http.secret = c->key;
    int rc = c->model && (c->key || !(api_key && *api_key)) ? endpoint(c, base_url) : DG_ERR_NOMEM;
    if (rc == DG_OK && !(c->url = dg_sprintf("%s/chat/completions", c->http.base)))
        rc = DG_ERR_NOMEM;
    if (rc != DG_OK) {
        dgj_openai_free(c);
        return rc;
    }
    *out = c;
    return DG_OK;
}

void dgj_openai_abort(dgj_openai *c)
{
    if (c)
        dgh_set_abort(&c->http, 1);
}

void dgj_openai_free(dgj_openai *c)
{
    if (!c)
        return;
    dgh_destroy(&c->http);
    free(c->model);
    wipe_free(c->key);
    free(c->url);
    free(c);
}

/* The transfer's failure as a sentence into err. */
static int transfer_failed(dgj_openai *c, CURLcode cc, long http, const dgh_body *body, char *cerr,
                           dgj_answer *out, char *err, size_t err_len)
{
    if (cc == DGH_ABORTED)
        snprintf(err, err_len, "judge: the request was aborted (shutdown)");
    else if (cc == CURLE_OPERATION_TIMEDOUT || cc == DGH_NO_TIME) {
        out->timed_out = 1;
        snprintf(err, err_len, "judge: no answer within the time allowed");
    } else if (cc != CURLE_OK)
        snprintf(err, err_len, "judge: the request failed: %s", dgh_reason(cc, body, cerr));
    else
        snprintf(err, err_len, "judge: the endpoint answered HTTP %ld", http);
    dgh_scrub(&c->http, err);
    return DG_ERR_IO;
}

int dgj_openai_ask(dgj_openai *c, const char *const *labels, size_t n, const char *context,
                   long timeout_ms, dgj_answer *out, int64_t *latency_ms, char *err, size_t err_len)
{
    char scratch[4];
    if (!err || !err_len) {
        err = scratch;
        err_len = sizeof scratch;
    }
    err[0] = '\0';
    int64_t start = dgh_mono_ms();
    if (latency_ms)
        *latency_ms = 0;
    json_t *req = dgj_chat_request(c->model, labels, n, context);
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!text)
        return fail(err, err_len, DG_ERR_NOMEM, "judge: out of memory");
    dgh_body body = {0};
    char cerr[CURL_ERROR_SIZE];
    long http = 0;
    dgh_request q = {.method = "POST", .url = c->url, .user_agent = "dirigent-judge", .body = text};
    CURLcode cc = dgh_exchange(&c->http, start + timeout_ms, &q, &body, &http, cerr);
    free(text);
    int rc;
    if (cc != CURLE_OK || http != 200)
        rc = transfer_failed(c, cc, http, &body, cerr, out, err, err_len);
    else
        rc = dgj_parse_chat_completion(body.s, body.len, labels, n, out, err, err_len);
    dgh_body_free(&body);
    if (latency_ms)
        *latency_ms = dgh_mono_ms() - start;
    return rc;
}
