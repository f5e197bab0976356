/*
 * check_noreply.c -- build/dirigent-noreply as a black box: started as a
 * subprocess on port 0 (its first stdout line is the URL), spoken to with
 * libcurl on 127.0.0.1 only. Covers plain and SSE completions, the model
 * list, the bearer token, bad input, the body bound, arguments and signals.
 */
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

extern Suite *make_noreply_suite(void);

typedef struct nr_proc {
    pid_t pid;
    char url[160]; /* http://127.0.0.1:PORT/v1 */
} nr_proc;

static const char *nr_bin(void)
{
    static char path[512];
    const char *dir = getenv("DG_BUILD_DIR");
    snprintf(path, sizeof path, "%s/dirigent-noreply", dir && *dir ? dir : "build");
    return path;
}

/* Start the server with extra args (NULL-terminated) and an optional
 * DIRIGENT_NOREPLY_TOKEN. Returns 0 with p->url set, or the child's exit
 * status (>0) when it exits before printing a URL. The child dies with the
 * test process (PR_SET_PDEATHSIG), so a failed assertion leaks nothing. */
static int nr_spawn(nr_proc *p, const char *const *extra, const char *env_token)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t parent = getpid();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        dup2(fds[1], STDOUT_FILENO);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        const char *argv[16] = {nr_bin()};
        int n = 1;
        for (; extra && *extra && n < 15; extra++)
            argv[n++] = *extra;
        argv[n] = NULL;
        if (env_token)
            setenv("DIRIGENT_NOREPLY_TOKEN", env_token, 1);
        else
            unsetenv("DIRIGENT_NOREPLY_TOKEN");
        execv(argv[0], (char *const *)argv);
        _exit(126);
    }
    close(fds[1]);
    p->pid = pid;
    size_t len = 0;
    p->url[0] = '\0';
    /* Generous bound: a loaded 2-core machine may be slow to exec. */
    for (int waited = 0; waited < 20000;) {
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int r = poll(&pfd, 1, 200);
        if (r < 0 && errno == EINTR)
            continue;
        waited += 200;
        if (r <= 0)
            continue;
        ssize_t got = read(fds[0], p->url + len, sizeof p->url - 1 - len);
        if (got <= 0)
            break;
        len += (size_t)got;
        p->url[len] = '\0';
        char *nl = strchr(p->url, '\n');
        if (nl) {
            *nl = '\0';
            close(fds[0]);
            return 0;
        }
        if (len == sizeof p->url - 1)
            break;
    }
    close(fds[0]);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    p->pid = 0;
    ck_assert_msg(WIFEXITED(st), "dirigent-noreply died without printing a URL");
    ck_assert_msg(WEXITSTATUS(st) != 0, "dirigent-noreply exited 0 without a URL");
    return WEXITSTATUS(st);
}

static void nr_start(nr_proc *p, const char *const *extra, const char *env_token)
{
    ck_assert_msg(nr_spawn(p, extra, env_token) == 0,
                  "dirigent-noreply (%s) did not start; run make first", nr_bin());
    ck_assert_msg(strncmp(p->url, "http://127.0.0.1:", 17) == 0,
                  "first stdout line is not a loopback URL: \"%s\"", p->url);
    ck_assert_msg(strlen(p->url) > 20 && strcmp(p->url + strlen(p->url) - 3, "/v1") == 0,
                  "URL does not end in /v1: \"%s\"", p->url);
}

/* Send sig and wait (bounded) for the exit; returns the exit status or -1. */
static int nr_stop(nr_proc *p, int sig)
{
    if (p->pid <= 0)
        return -1;
    kill(p->pid, sig);
    for (int i = 0; i < 200; i++) {
        int st;
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid) {
            p->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        usleep(50 * 1000);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, NULL, 0);
    p->pid = 0;
    return -1;
}

/* ---- HTTP through libcurl ------------------------------------------------------ */

typedef struct nr_resp {
    long status;
    char *body;
    size_t len;
    char ctype[128];
    char allow[64];
} nr_resp;

static size_t nr_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    nr_resp *r = ud;
    size_t n = size * nmemb;
    char *nb = realloc(r->body, r->len + n + 1);
    if (!nb)
        return 0;
    r->body = nb;
    memcpy(r->body + r->len, ptr, n);
    r->len += n;
    r->body[r->len] = '\0';
    return n;
}

static size_t nr_header(char *buf, size_t size, size_t nitems, void *ud)
{
    nr_resp *r = ud;
    size_t n = size * nitems;
    if (n > 13 && strncasecmp(buf, "Content-Type:", 13) == 0)
        snprintf(r->ctype, sizeof r->ctype, "%.*s", (int)(n - 13), buf + 13);
    if (n > 6 && strncasecmp(buf, "Allow:", 6) == 0)
        snprintf(r->allow, sizeof r->allow, "%.*s", (int)(n - 6), buf + 6);
    return n;
}

typedef struct nr_chunked_src {
    size_t left;
} nr_chunked_src;

static size_t nr_read(char *buf, size_t size, size_t nitems, void *ud)
{
    nr_chunked_src *src = ud;
    size_t n = size * nitems;
    if (n > src->left)
        n = src->left;
    memset(buf, ' ', n);
    src->left -= n;
    return n;
}

/* method "GET"/"POST"/...; path appended to base (which may be a /v1 URL or
 * the bare origin); auth NULL = no header. body NULL = no body. chunked > 0:
 * send that many bytes with chunked encoding instead of body. */
static nr_resp nr_http(const char *base, const char *method, const char *path, const char *auth,
                       const char *body, size_t chunked)
{
    nr_resp r;
    memset(&r, 0, sizeof r);
    char url[256];
    snprintf(url, sizeof url, "%s%s", base, path);
    CURL *c = curl_easy_init();
    ck_assert_ptr_nonnull(c);
    struct curl_slist *h = NULL;
    char authh[200];
    if (auth) {
        snprintf(authh, sizeof authh, "Authorization: %s", auth);
        h = curl_slist_append(h, authh);
    }
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    nr_chunked_src src = {chunked};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 15000L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, nr_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, nr_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    if (chunked) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, nr_read);
        curl_easy_setopt(c, CURLOPT_READDATA, &src);
    } else if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    }
    CURLcode rc = curl_easy_perform(c);
    ck_assert_msg(rc == CURLE_OK, "%s %s failed: %s", method, url, curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (!r.body)
        r.body = calloc(1, 1);
    return r;
}

static json_t *nr_json(const nr_resp *r)
{
    json_error_t e;
    json_t *j = json_loads(r->body, 0, &e);
    ck_assert_msg(j != NULL, "response is not JSON (%s): %s", e.text, r->body);
    return j;
}

/* Status must match, body must be an OpenAI error whose message contains
 * `needle` and whose param (when given) names the field. */
static void nr_expect_error(const nr_resp *r, long status, const char *needle, const char *param)
{
    ck_assert_msg(r->status == status, "status %ld, want %ld: %s", r->status, status, r->body);
    json_t *j = nr_json(r);
    const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
    ck_assert_msg(msg && strstr(msg, needle), "error message lacks \"%s\": %s", needle, r->body);
    if (param)
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "param")),
                         param);
    json_decref(j);
}

static void nr_check_zero_usage(const json_t *usage)
{
    ck_assert_msg(json_is_object(usage), "usage missing");
    ck_assert_int_eq(json_integer_value(json_object_get(usage, "prompt_tokens")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(usage, "completion_tokens")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(usage, "total_tokens")), 0);
    ck_assert(json_is_integer(json_object_get(usage, "total_tokens")));
}

static const char *const QUIET[] = {"--quiet", NULL};
static const char REQ[] =
    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]%s}";

/* ---- tests ------------------------------------------------------------------------ */

START_TEST(test_models)
{
    nr_proc p;
    nr_start(&p, QUIET, NULL);
    for (int i = 0; i < 2; i++) {
        /* /v1/models, then the same without the prefix. */
        char base[160];
        snprintf(base, sizeof base, "%.*s", (int)(strlen(p.url) - (i ? 3 : 0)), p.url);
        nr_resp r = nr_http(base, "GET", "/models", NULL, NULL, 0);
        ck_assert_int_eq(r.status, 200);
        ck_assert_msg(strstr(r.ctype, "application/json"), "content type %s", r.ctype);
        json_t *j = nr_json(&r);
        ck_assert_str_eq(json_string_value(json_object_get(j, "object")), "list");
        json_t *m = json_array_get(json_object_get(j, "data"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(m, "id")), "no-reply");
        ck_assert_str_eq(json_string_value(json_object_get(m, "object")), "model");
        json_decref(j);
        free(r.body);
    }
    nr_resp r = nr_http(p.url, "GET", "/models/any-model", NULL, NULL, 0);
    ck_assert_int_eq(r.status, 200);
    json_t *j = nr_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "id")), "any-model");
    json_decref(j);
    free(r.body);
    ck_assert_int_eq(nr_stop(&p, SIGTERM), 0);
}
END_TEST

START_TEST(test_plain_completion)
{
    nr_proc p;
    nr_start(&p, QUIET, NULL);
    const char *models[] = {"no-reply", "silent/model-7"};
    for (int i = 0; i < 2; i++) {
        char body[256], base[160];
        snprintf(body, sizeof body, REQ, models[i], ",\"stream\":false");
        snprintf(base, sizeof base, "%.*s", (int)(strlen(p.url) - (i ? 3 : 0)), p.url);
        nr_resp r = nr_http(base, "POST", "/chat/completions", NULL, body, 0);
        ck_assert_msg(r.status == 200, "status %ld: %s", r.status, r.body);
        json_t *j = nr_json(&r);
        ck_assert_str_eq(json_string_value(json_object_get(j, "object")), "chat.completion");
        ck_assert_str_eq(json_string_value(json_object_get(j, "model")), models[i]);
        ck_assert(json_string_length(json_object_get(j, "id")) > 0);
        json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
        ck_assert_int_eq(json_array_size(json_object_get(j, "choices")), 1);
        json_t *msg = json_object_get(ch, "message");
        ck_assert_str_eq(json_string_value(json_object_get(msg, "role")), "assistant");
        ck_assert_str_eq(json_string_value(json_object_get(msg, "content")), "NO_REPLY");
        ck_assert_str_eq(json_string_value(json_object_get(ch, "finish_reason")), "stop");
        nr_check_zero_usage(json_object_get(j, "usage"));
        json_decref(j);
        free(r.body);
    }
    /* No "stream" key at all is a plain answer too. */
    char body[256];
    snprintf(body, sizeof body, REQ, "x", "");
    nr_resp r = nr_http(p.url, "POST", "/chat/completions", NULL, body, 0);
    ck_assert_int_eq(r.status, 200);
    json_t *j = nr_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "object")), "chat.completion");
    json_decref(j);
    free(r.body);
    ck_assert_int_eq(nr_stop(&p, SIGTERM), 0);
}
END_TEST

START_TEST(test_stream_completion)
{
    nr_proc p;
    nr_start(&p, QUIET, NULL);
    char body[256];
    snprintf(body, sizeof body, REQ, "provider-x/echo-me", ",\"stream\":true");
    nr_resp r = nr_http(p.url, "POST", "/chat/completions", NULL, body, 0);
    ck_assert_msg(r.status == 200, "status %ld: %s", r.status, r.body);
    ck_assert_msg(strstr(r.ctype, "text/event-stream"), "content type %s", r.ctype);

    /* Walk the events: every one is "data: <json>\n\n" until "data: [DONE]". */
    char text[64] = "";
    int chunks = 0, finishes = 0;
    bool done = false, usage_seen = false;
    const char *id0 = NULL;
    json_t *first = NULL;
    for (char *ev = r.body, *next; ev && *ev; ev = next) {
        next = strstr(ev, "\n\n");
        ck_assert_msg(next != NULL, "event not terminated by a blank line: %s", ev);
        *next = '\0';
        next += 2;
        ck_assert_msg(strncmp(ev, "data: ", 6) == 0, "not a data line: %s", ev);
        ck_assert_msg(!done, "event after [DONE]: %s", ev);
        if (strcmp(ev + 6, "[DONE]") == 0) {
            done = true;
            continue;
        }
        json_error_t e;
        json_t *c = json_loads(ev + 6, 0, &e);
        ck_assert_msg(c != NULL, "chunk not JSON: %s", ev);
        chunks++;
        ck_assert_str_eq(json_string_value(json_object_get(c, "object")), "chat.completion.chunk");
        ck_assert_str_eq(json_string_value(json_object_get(c, "model")), "provider-x/echo-me");
        if (!first) {
            first = c;
            id0 = json_string_value(json_object_get(c, "id"));
            ck_assert_ptr_nonnull(id0);
        } else {
            ck_assert_str_eq(json_string_value(json_object_get(c, "id")), id0);
        }
        json_t *ch = json_array_get(json_object_get(c, "choices"), 0);
        ck_assert_ptr_nonnull(ch);
        const char *piece =
            json_string_value(json_object_get(json_object_get(ch, "delta"), "content"));
        ck_assert_msg(finishes == 0, "chunk after the finishing chunk");
        if (piece)
            strncat(text, piece, sizeof text - strlen(text) - 1);
        json_t *fin = json_object_get(ch, "finish_reason");
        if (json_is_string(fin)) {
            ck_assert_str_eq(json_string_value(fin), "stop");
            finishes++;
            nr_check_zero_usage(json_object_get(c, "usage"));
            usage_seen = true;
        }
        if (c != first)
            json_decref(c);
    }
    ck_assert_msg(done, "stream did not end with data: [DONE]");
    ck_assert_int_ge(chunks, 2);
    ck_assert_int_eq(finishes, 1);
    ck_assert(usage_seen);
    ck_assert_str_eq(text, "NO_REPLY");
    json_decref(first);
    free(r.body);
    ck_assert_int_eq(nr_stop(&p, SIGINT), 0);
}
END_TEST

START_TEST(test_auth_flag)
{
    nr_proc p;
    const char *args[] = {"--quiet", "--token", "s3cret", NULL};
    nr_start(&p, args, NULL);
    char body[256];
    snprintf(body, sizeof body, REQ, "m", "");
    const char *bad[] = {NULL,           "Bearer wrong", "Bearer s3cre", "Bearer s3crett",
                         "Basic s3cret", "s3cret"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nr_resp r = nr_http(p.url, "POST", "/chat/completions", bad[i], body, 0);
        nr_expect_error(&r, 401, "bearer token", NULL);
        ck_assert_msg(!strstr(r.body, "s3cret"), "401 body leaks the token: %s", r.body);
        free(r.body);
        r = nr_http(p.url, "GET", "/models", bad[i], NULL, 0);
        ck_assert_int_eq(r.status, 401);
        free(r.body);
    }
    nr_resp r = nr_http(p.url, "POST", "/chat/completions", "Bearer s3cret", body, 0);
    ck_assert_int_eq(r.status, 200);
    free(r.body);
    r = nr_http(p.url, "GET", "/models", "Bearer s3cret", NULL, 0);
    ck_assert_int_eq(r.status, 200);
    free(r.body);
    ck_assert_int_eq(nr_stop(&p, SIGTERM), 0);
}
END_TEST

START_TEST(test_auth_env)
{
    nr_proc p;
    nr_start(&p, QUIET, "from-env");
    char body[256];
    snprintf(body, sizeof body, REQ, "m", "");
    nr_resp r = nr_http(p.url, "POST", "/chat/completions", NULL, body, 0);
    ck_assert_int_eq(r.status, 401);
    free(r.body);
    r = nr_http(p.url, "POST", "/chat/completions", "Bearer from-env", body, 0);
    ck_assert_int_eq(r.status, 200);
    free(r.body);
    ck_assert_int_eq(nr_stop(&p, SIGTERM), 0);

    /* Without a token any caller is served, whatever it sends. */
    nr_start(&p, QUIET, NULL);
    r = nr_http(p.url, "POST", "/chat/completions", "Bearer anything", body, 0);
    ck_assert_int_eq(r.status, 200);
    free(r.body);
    ck_assert_int_eq(nr_stop(&p, SIGTERM), 0);
}
END_TEST

START_TEST(test_bad_input)
{
    nr_proc p;
    nr_start(&p, QUIET, NULL);
    struct {
        const char *body, *needle, *param;
    } cases[] = {
        {"{\"model\":\"m\",", "not valid JSON", NULL},
        {"not json at all", "not valid JSON", NULL},
        {"", "empty", NULL},
        {"[1,2]", "JSON object", NULL},
        {"{\"messages\":[]}", "\"model\" is required", "model"},
        {"{\"model\":\"\",\"messages\":[]}", "\"model\" is required", "model"},
        {"{\"model\":7,\"messages\":[]}", "\"model\" is required", "model"},
        {"{\"model\":\"m\"}", "\"messages\" is required", "messages"},
        {"{\"model\":\"m\",\"messages\":{}}", "\"messages\" is required", "messages"},
        {"{\"model\":\"m\",\"messages\":[],\"stream\":\"yes\"}", "\"stream\"", "stream"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nr_resp r = nr_http(p.url, "POST", "/chat/completions", NULL, cases[i].body, 0);
        nr_expect_error(&r, 400, cases[i].needle, cases[i].param);
        free(r.body);
    }
    nr_resp r = nr_http(p.url, "GET", "/chat/completions", NULL, NULL, 0);
    nr_expect_error(&r, 405, "use POST", NULL);
    ck_assert_msg(strstr(r.allow, "POST"), "Allow header: %s", r.allow);
    free(r.body);
    r = nr_http(p.url, "POST", "/models", NULL, "{}", 0);
    nr_expect_error(&r, 405, "use GET", NULL);
    free(r.body);
    r = nr_http(p.url, "GET", "/embeddings", NULL, NULL, 0);
    nr_expect_error(&r, 404, "unknown path", NULL);
    free(r.body);
    /* The server still answers after all that. */
    char body[256];
    snprintf(body, sizeof body, REQ, "m", "");
    r = nr_http(p.url, "POST", "/chat/completions", NULL, body, 0);
    ck_assert_int_eq(r.status, 200);
    free(r.body);
    ck_assert_int_eq(nr_stop(&p, SIGTERM), 0);
}
END_TEST

/* Bytes that are not UTF-8 in the request line cannot go into a JSON
 * answer as they are: still a JSON error, never a dropped connection. */
START_TEST(test_non_utf8_request_line)
{
    nr_proc p;
    nr_start(&p, QUIET, NULL);
    nr_resp r = nr_http(p.url, "GET", "/models/%ff%fe", NULL, NULL, 0);
    nr_expect_error(&r, 400, "not valid UTF-8", "model");
    free(r.body);
    r = nr_http(p.url, "\xff", "/models", NULL, NULL, 0);
    nr_expect_error(&r, 405, "use GET", NULL);
    free(r.body);
    r = nr_http(p.url, "\xc3", "/chat/completions", NULL, NULL, 0);
    nr_expect_error(&r, 405, "use POST", NULL);
    free(r.body);
    /* A valid UTF-8 id is echoed as it is. */
    r = nr_http(p.url, "GET", "/models/%e8%ae%a8%e8%ae%ba", NULL, NULL, 0);
    ck_assert_int_eq(r.status, 200);
    json_t *j = nr_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "id")), "讨论");
    json_decref(j);
    free(r.body);
    ck_assert_int_eq(nr_stop(&p, SIGTERM), 0);
}
END_TEST

START_TEST(test_body_limit)
{
    nr_proc p;
    const char *args[] = {"--quiet", "--max-body", "1000", NULL};
    nr_start(&p, args, NULL);
    char big[2200];
    int n = snprintf(big, sizeof big, "{\"model\":\"m\",\"messages\":[],\"pad\":\"");
    memset(big + n, 'x', 2000);
    strcpy(big + n + 2000, "\"}");
    nr_resp r = nr_http(p.url, "POST", "/chat/completions", NULL, big, 0);
    nr_expect_error(&r, 413, "larger than 1000 bytes", NULL);
    free(r.body);
    /* Chunked upload: no Content-Length to refuse up front. */
    r = nr_http(p.url, "POST", "/chat/completions", NULL, NULL, 5000);
    nr_expect_error(&r, 413, "--max-body", NULL);
    free(r.body);
    /* Just under the bound passes. */
    char fits[1001];
    n = snprintf(fits, sizeof fits, "{\"model\":\"m\",\"messages\":[],\"pad\":\"");
    memset(fits + n, 'y', 1000 - (size_t)n - 2);
    strcpy(fits + 998, "\"}");
    ck_assert_uint_eq(strlen(fits), 1000);
    r = nr_http(p.url, "POST", "/chat/completions", NULL, fits, 0);
    ck_assert_msg(r.status == 200, "status %ld: %s", r.status, r.body);
    free(r.body);
    ck_assert_int_eq(nr_stop(&p, SIGTERM), 0);
}
END_TEST

START_TEST(test_bad_args)
{
    nr_proc p;
    const char *a1[] = {"--port", "70000", NULL};
    ck_assert_int_eq(nr_spawn(&p, a1, NULL), 2);
    const char *a2[] = {"--host", "localhost.example", NULL};
    ck_assert_int_eq(nr_spawn(&p, a2, NULL), 2);
    const char *a3[] = {"--max-body", "0", NULL};
    ck_assert_int_eq(nr_spawn(&p, a3, NULL), 2);
    const char *a4[] = {"--token", "", NULL};
    ck_assert_int_eq(nr_spawn(&p, a4, NULL), 2);
    const char *a5[] = {"stray", NULL};
    ck_assert_int_eq(nr_spawn(&p, a5, NULL), 2);

    /* A port already taken: a clear failure, not a hang. */
    nr_start(&p, QUIET, NULL);
    const char *port = strrchr(p.url, ':') + 1;
    char portbuf[8];
    snprintf(portbuf, sizeof portbuf, "%.*s", (int)strcspn(port, "/"), port);
    const char *a6[] = {"--quiet", "--port", portbuf, NULL};
    nr_proc q;
    ck_assert_int_eq(nr_spawn(&q, a6, NULL), 1);
    ck_assert_int_eq(nr_stop(&p, SIGTERM), 0);
}
END_TEST

/* ---- --check URL and the systemd unit ---------------------------------------------- */

/* Run dirigent-noreply --check URL [extra...] (env_token: its
 * DIRIGENT_NOREPLY_TOKEN, or none); exit status, stdout+stderr in out. */
static int nr_check_run(const char *url, const char *extra, const char *env_token, char *out,
                        size_t outlen)
{
    char *dir = tu_mkdtemp();
    char *of = tu_path(dir, "out");
    char envtok[200];
    snprintf(envtok, sizeof envtok, "DIRIGENT_NOREPLY_TOKEN=%s", env_token ? env_token : "");
    const char *argv[10] = {"env", env_token ? envtok : "-u",
                            env_token ? nr_bin() : "DIRIGENT_NOREPLY_TOKEN"};
    int n = 3;
    if (!env_token)
        argv[n++] = nr_bin();
    argv[n++] = "--check";
    argv[n++] = url;
    if (extra) {
        argv[n++] = "--token";
        argv[n++] = extra;
    }
    argv[n] = NULL;
    int st = tu_run_wait(argv, of, of, NULL, 20000);
    FILE *f = fopen(of, "r");
    ck_assert_ptr_nonnull(f);
    size_t k = fread(out, 1, outlen - 1, f);
    out[k] = '\0';
    fclose(f);
    tu_rmtree(dir);
    free(dir);
    free(of);
    return st;
}

START_TEST(test_check)
{
    nr_proc p;
    const char *args[] = {"--quiet", "--token", "s3cret", NULL};
    nr_start(&p, args, NULL);
    char out[2048];
    ck_assert_msg(nr_check_run(p.url, "s3cret", NULL, out, sizeof out) == 0, "--check: %s", out);
    ck_assert_msg(strstr(out, "answers"), "--check says nothing on success: %s", out);
    ck_assert_msg(nr_check_run(p.url, NULL, "s3cret", out, sizeof out) == 0,
                  "--check with the token from the environment: %s", out);
    /* A trailing slash is the same base URL. */
    char slash[200];
    snprintf(slash, sizeof slash, "%s/", p.url);
    ck_assert_msg(nr_check_run(slash, "s3cret", NULL, out, sizeof out) == 0, "%s: %s", slash, out);
    /* Wrong or missing token: 1, and the reason. */
    ck_assert_int_eq(nr_check_run(p.url, "wrong", NULL, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "401") && strstr(out, "token"), "no reason for a 401: %s", out);
    ck_assert_int_eq(nr_check_run(p.url, NULL, NULL, out, sizeof out), 1);
    /* Something that answers, but not with our model list: the root is a 404. */
    char root[200];
    snprintf(root, sizeof root, "%.*s/nothing", (int)(strlen(p.url) - 3), p.url);
    ck_assert_int_eq(nr_check_run(root, "s3cret", NULL, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "HTTP 404"), "no status for a wrong path: %s", out);
    ck_assert_int_eq(nr_stop(&p, SIGTERM), 0);
    /* Nothing listening any more. */
    ck_assert_int_eq(nr_check_run(p.url, "s3cret", NULL, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "no answer"), "no reason for a refused connection: %s", out);
    /* Not a URL at all: a usage error naming the rule. */
    ck_assert_int_eq(nr_check_run("127.0.0.1:18790", NULL, NULL, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "http://"), "no rule for a bad URL: %s", out);
}
END_TEST

/* The value of KEY= in a KEY=VALUE file (malloc'd) or NULL. */
static char *nr_env_value(const char *text, const char *key)
{
    size_t kl = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, key, kl) == 0 && l[kl] == '=')
            return strndup(l + kl + 1, strcspn(l + kl + 1, "\n"));
    return NULL;
}

static char *nr_slurp(const char *file)
{
    FILE *f = fopen(file, "r");
    ck_assert_msg(f, "cannot read %s", file);
    char *text = NULL;
    size_t cap = 0;
    ck_assert(getdelim(&text, &cap, '\0', f) > 0);
    fclose(f);
    return text;
}

START_TEST(test_systemd_unit)
{
    /* The unit reads its token and port from an environment file, and its
     * ExecStart runs dirigent-noreply with options the server accepts: started
     * here with that command line (port 0 instead of the file's) and the
     * file's token, a --check with the same token answers. */
    char *unit = nr_slurp("servers/dirigent-noreply.service");
    char *env = nr_slurp("servers/dirigent-noreply.env");
    ck_assert_msg(strstr(unit, "\nEnvironmentFile="), "the unit reads no environment file");
    char *token = nr_env_value(env, "DIRIGENT_NOREPLY_TOKEN");
    char *port = nr_env_value(env, "DIRIGENT_NOREPLY_PORT");
    ck_assert_msg(token && *token && port && *port,
                  "the environment file sets no DIRIGENT_NOREPLY_TOKEN or DIRIGENT_NOREPLY_PORT");
    char *exec = nr_env_value(strstr(unit, "\nExecStart=") + 1, "ExecStart");
    ck_assert_msg(exec, "the unit has no ExecStart");
    char *bin = strstr(exec, "/dirigent-noreply ");
    ck_assert_msg(bin, "ExecStart does not run dirigent-noreply: %s", exec);
    ck_assert_msg(strstr(exec, "--port ${DIRIGENT_NOREPLY_PORT}"),
                  "ExecStart ignores the port of the file: %s", exec);
    const char *args[12];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(bin + strlen("/dirigent-noreply "), " ", &save);
         t && n < 11; t = strtok_r(NULL, " ", &save))
        args[n++] = strcmp(t, "${DIRIGENT_NOREPLY_PORT}") == 0 ? "0" : t;
    args[n] = NULL;
    nr_proc p;
    nr_start(&p, args, token);
    char out[2048];
    ck_assert_msg(nr_check_run(p.url, NULL, token, out, sizeof out) == 0, "--check: %s", out);
    ck_assert_int_eq(nr_stop(&p, SIGTERM), 0);
    free(exec), free(port), free(token), free(env), free(unit);
}
END_TEST

Suite *make_noreply_suite(void)
{
    Suite *s = suite_create("noreply");
    TCase *tc = tcase_create("server");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_models);
    tcase_add_test(tc, test_plain_completion);
    tcase_add_test(tc, test_stream_completion);
    tcase_add_test(tc, test_auth_flag);
    tcase_add_test(tc, test_auth_env);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_non_utf8_request_line);
    tcase_add_test(tc, test_body_limit);
    tcase_add_test(tc, test_bad_args);
    tcase_add_test(tc, test_check);
    tcase_add_test(tc, test_systemd_unit);
    suite_add_tcase(s, tc);
    return s;
}
