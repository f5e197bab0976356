/*
 * dirigent-noreply -- an OpenAI-compatible model server that always stays
 * silent.
 *
 * Dirigent routes every agent that must not speak to a "no-reply" provider
 * (config keys noReplyProvider/noReplyModel). Pointing that provider at a
 * real model burns tokens on silence; this server answers every chat
 * completion with the silent token NO_REPLY and zero usage, in microseconds.
 *
 *   dirigent-noreply [--host 127.0.0.1] [--port 0] [--token T]
 *                    [--max-body BYTES] [--quiet]
 *   dirigent-noreply --check URL [--token T]
 *
 * Endpoints (with and without the /v1 prefix):
 *   GET  /v1/models               {"object":"list","data":[{"id":"no-reply",...}]}
 *   GET  /v1/models/<id>          that model (any id: every model is silent)
 *   POST /v1/chat/completions     plain JSON, or SSE when "stream": true;
 *                                 the requested model id is echoed back
 * The first stdout line is the base URL to configure (http://HOST:PORT/v1),
 * flushed at once, so a caller that asked for port 0 learns the port.
 * Bearer token: --token or env DIRIGENT_NOREPLY_TOKEN; when set, a request
 * without "Authorization: Bearer <token>" gets 401. SIGTERM/SIGINT stop the
 * server cleanly (exit 0). One line per request on stderr unless --quiet.
 * --check URL asks a running instance at URL (the base URL it printed) for
 * its model list with the same token, and exits 0 when it answers as this
 * server does, 1 (with the reason on stderr) otherwise: a health check for
 * systemd, scripts and monitoring.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "http_server.h"

#define NR_SILENT_TEXT "NO_REPLY"
#define NR_DEFAULT_MODEL "no-reply"
#define NR_DEFAULT_MAX_BODY (8u * 1024u * 1024u) /* a long agent context fits */
#define NR_MAX_BODY_LIMIT (256u * 1024u * 1024u)
#define NR_CONN_TIMEOUT_SEC 60u
#define NR_CONN_LIMIT 256u

typedef struct nr_server {
    const char *token; /* NULL: no authentication */
    size_t max_body;
    bool quiet;
    atomic_uint_fast64_t seq; /* completion ids */
    char id_prefix[32];
} nr_server;

/* Per-request state, allocated on the first callback, freed by nr_completed. */
typedef struct nr_request {
    dg_http_body body;
} nr_request;

/* ---- small helpers ---------------------------------------------------------- */

static void nr_log(const nr_server *s, const char *method, const char *url, unsigned status,
                   const char *detail)
{
    if (s->quiet)
        return;
    fprintf(stderr, "dirigent-noreply: %s %s -> %u%s%s\n", method, url, status, detail ? " " : "",
            detail ? detail : "");
}

/* True when s is valid UTF-8 (jansson's own check): text from the request
 * line that goes into a JSON answer must be, or the answer cannot be built. */
static bool nr_utf8(const char *s)
{
    json_t *j = json_string(s);
    json_decref(j);
    return j != NULL;
}

/* Queue a JSON response; steals `body`. A body that could not be built
 * still gets an answer (500 with a fixed text), never a dropped connection. */
static enum MHD_Result nr_send_json(struct MHD_Connection *c, unsigned status, json_t *body)
{
    static const char fallback[] =
        "{\"error\":{\"message\":\"dirigent-noreply could not build its answer (out of "
        "memory?)\",\"type\":\"server_error\",\"param\":null,\"code\":\"internal_error\"}}";
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    struct MHD_Response *r;
    if (text) {
        r = dg_http_response(text, strlen(text), "application/json");
    } else {
        r = MHD_create_response_from_buffer(sizeof fallback - 1, (void *)fallback,
                                            MHD_RESPMEM_PERSISTENT);
        if (r)
            MHD_add_response_header(r, "Content-Type", "application/json");
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
    return r ? dg_http_queue(c, status, r) : MHD_NO;
}

/* OpenAI-shaped error: {"error":{"message","type","param","code"}}. */
static enum MHD_Result nr_send_error(const nr_server *s, struct MHD_Connection *c,
                                     const char *method, const char *url, unsigned status,
                                     const char *type, const char *code, const char *param,
                                     const char *message)
{
    nr_log(s, method, url, status, message);
    json_t *err = json_pack("{s:{s:s, s:s, s:s?, s:s?}}", "error", "message", message, "type", type,
                            "param", param, "code", code);
    return nr_send_json(c, status, err);
}

/* Constant-time comparison so the token cannot be guessed byte by byte. */
static bool nr_token_ok(const nr_server *s, struct MHD_Connection *c)
{
    if (!s->token)
        return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    const char *got = h + 7;
    size_t gl = strlen(got), tl = strlen(s->token);
    unsigned char diff = (unsigned char)(gl != tl);
    for (size_t i = 0; i < tl; i++)
        diff |= (unsigned char)(s->token[i] ^ (i < gl ? got[i] : 0));
    return diff == 0;
}

/* The path without its optional "/v1" prefix (a pointer into url). */
static const char *nr_route(const char *url)
{
    if (strncmp(url, "/v1/", 4) == 0)
        return url + 3;
    return url;
}

static json_t *nr_model_object(const char *id)
{
    return json_pack("{s:s, s:s, s:i, s:s}", "id", id, "object", "model", "created", 0, "owned_by",
                     "dirigent");
}

static json_t *nr_zero_usage(void)
{
    return json_pack("{s:i, s:i, s:i}", "prompt_tokens", 0, "completion_tokens", 0, "total_tokens",
                     0);
}

/* ---- chat completions ------------------------------------------------------------ */

static json_t *nr_chunk(const char *id, json_int_t created, const char *model, json_t *delta,
                        const char *finish)
{
    json_t *choice = json_pack("{s:i, s:o, s:o}", "index", 0, "delta", delta, "finish_reason",
                               finish ? json_string(finish) : json_null());
    return json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", id, "object", "chat.completion.chunk",
                     "created", created, "model", model, "choices", choice);
}

/* Append "data: <json>\n\n" to the SSE text; steals chunk. */
static int nr_sse_append(dg_buf *b, json_t *chunk)
{
    char *text = chunk ? json_dumps(chunk, JSON_COMPACT) : NULL;
    json_decref(chunk);
    if (!text)
        return -1;
    int rc = dg_buf_adds(b, "data: ") || dg_buf_adds(b, text) || dg_buf_adds(b, "\n\n") ? -1 : 0;
    free(text);
    return rc;
}

static enum MHD_Result nr_send_stream(struct MHD_Connection *c, const char *id, json_int_t created,
                                      const char *model)
{
    dg_buf buf = {0};
    json_t *last = nr_chunk(id, created, model, json_object(), "stop");
    if (last)
        json_object_set_new(last, "usage", nr_zero_usage());
    if (nr_sse_append(&buf, nr_chunk(id, created, model,
                                     json_pack("{s:s, s:s}", "role", "assistant", "content", ""),
                                     NULL)) != 0 ||
        nr_sse_append(&buf, nr_chunk(id, created, model,
                                     json_pack("{s:s}", "content", NR_SILENT_TEXT), NULL)) != 0 ||
        nr_sse_append(&buf, last) != 0 || dg_buf_adds(&buf, "data: [DONE]\n\n") != 0) {
        dg_buf_free(&buf);
        return MHD_NO;
    }
    struct MHD_Response *r = dg_http_response(buf.s, buf.len, "text/event-stream");
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    return dg_http_queue(c, MHD_HTTP_OK, r);
}

static enum MHD_Result nr_completion(nr_server *s, struct MHD_Connection *c, const char *method,
                                     const char *url, const nr_request *rq)
{
    if (rq->body.too_large) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "request body is larger than %zu bytes; raise --max-body if "
                 "your agents send longer contexts",
                 s->max_body);
        return nr_send_error(s, c, method, url, MHD_HTTP_CONTENT_TOO_LARGE, "invalid_request_error",
                             "request_too_large", NULL, msg);
    }
    json_error_t jerr;
    const dg_buf *in = &rq->body.buf;
    json_t *req = in->len ? json_loadb(in->s, in->len, 0, &jerr) : NULL;
    if (!req) {
        char msg[300];
        if (!in->len)
            snprintf(msg, sizeof msg,
                     "request body is empty; send a JSON "
                     "object with \"model\" and \"messages\"");
        else
            snprintf(msg, sizeof msg, "request body is not valid JSON: %s (line %d, column %d)",
                     jerr.text, jerr.line, jerr.column);
        return nr_send_error(s, c, method, url, MHD_HTTP_BAD_REQUEST, "invalid_request_error",
                             "invalid_json", NULL, msg);
    }
    const char *field = NULL, *rule = NULL;
    json_t *model = json_object_get(req, "model");
    json_t *stream = json_object_get(req, "stream");
    if (!json_is_object(req)) {
        rule = "request body must be a JSON object with \"model\" and \"messages\"";
    } else if (!json_is_string(model) || json_string_length(model) == 0) {
        field = "model";
        rule = "\"model\" is required and must be a non-empty string";
    } else if (!json_is_array(json_object_get(req, "messages"))) {
        field = "messages";
        rule = "\"messages\" is required and must be an array";
    } else if (stream && !json_is_boolean(stream) && !json_is_null(stream)) {
        field = "stream";
        rule = "\"stream\" must be true or false";
    }
    if (rule) {
        enum MHD_Result r = nr_send_error(s, c, method, url, MHD_HTTP_BAD_REQUEST,
                                          "invalid_request_error", "invalid_value", field, rule);
        json_decref(req);
        return r;
    }
    char id[64];
    snprintf(id, sizeof id, "chatcmpl-%s-%" PRIuFAST64, s->id_prefix,
             atomic_fetch_add(&s->seq, 1) + 1);
    json_int_t created = (json_int_t)time(NULL);
    bool sse = json_is_true(stream);
    char detail[200];
    snprintf(detail, sizeof detail, "model=%.150s stream=%s", json_string_value(model),
             sse ? "true" : "false");
    nr_log(s, method, url, MHD_HTTP_OK, detail);
    enum MHD_Result ret;
    if (sse) {
        ret = nr_send_stream(c, id, created, json_string_value(model));
    } else {
        json_t *body =
            json_pack("{s:s, s:s, s:I, s:O, s:[{s:i, s:{s:s, s:s}, s:s, s:n}], s:o}", "id", id,
                      "object", "chat.completion", "created", created, "model", model, "choices",
                      "index", 0, "message", "role", "assistant", "content", NR_SILENT_TEXT,
                      "finish_reason", "stop", "logprobs", "usage", nr_zero_usage());
        ret = nr_send_json(c, MHD_HTTP_OK, body);
    }
    json_decref(req);
    return ret;
}

/* ---- dispatch -------------------------------------------------------------------- */

/* Called by MHD's polling thread, once per request header and once per body
 * piece; see libmicrohttpd's MHD_AccessHandlerCallback. */
static enum MHD_Result nr_handle(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    (void)version;
    nr_server *s = cls;
    const char *path = nr_route(url);
    bool is_post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
    bool is_get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
    bool completions = strcmp(path, "/chat/completions") == 0;
    bool models = strcmp(path, "/models") == 0;
    bool one_model = strncmp(path, "/models/", 8) == 0 && path[8] != '\0';

    nr_request *rq = *con_cls;
    if (!rq) {
        /* First call: headers only. Refuse early what needs no body, so an
         * unauthenticated or oversized upload is never read. */
        if (!completions && !models && !one_model)
            return nr_send_error(s, c, method, url, MHD_HTTP_NOT_FOUND, "invalid_request_error",
                                 "not_found", NULL,
                                 "unknown path; this server offers GET /v1/models "
                                 "and POST /v1/chat/completions");
        if ((completions && !is_post) || (!completions && !is_get)) {
            const char *allowed = completions ? "POST" : "GET";
            char msg[120];
            snprintf(msg, sizeof msg, "method %s not allowed here; use %s",
                     strlen(method) <= 40 && nr_utf8(method) ? method : "(unusual)", allowed);
            nr_log(s, method, url, MHD_HTTP_METHOD_NOT_ALLOWED, msg);
            json_t *err = json_pack("{s:{s:s, s:s, s:s}}", "error", "message", msg, "type",
                                    "invalid_request_error", "code", "method_not_allowed");
            char *text = err ? json_dumps(err, JSON_COMPACT) : NULL;
            json_decref(err);
            if (!text)
                return MHD_NO;
            struct MHD_Response *r = dg_http_response(text, strlen(text), "application/json");
            if (!r)
                return MHD_NO;
            MHD_add_response_header(r, "Allow", allowed);
            return dg_http_queue(c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
        }
        if (!nr_token_ok(s, c))
            return nr_send_error(s, c, method, url, MHD_HTTP_UNAUTHORIZED, "invalid_request_error",
                                 "invalid_api_key", NULL,
                                 "missing or wrong bearer token; send "
                                 "\"Authorization: Bearer <token>\" with the token "
                                 "this server was started with");
        if (one_model && !nr_utf8(path + 8))
            return nr_send_error(s, c, method, url, MHD_HTTP_BAD_REQUEST, "invalid_request_error",
                                 "invalid_value", "model",
                                 "the model id in the path is not valid UTF-8; "
                                 "percent-encode the UTF-8 bytes of the id");
        if (!completions) {
            json_t *body = models ? json_pack("{s:s, s:[o]}", "object", "list", "data",
                                              nr_model_object(NR_DEFAULT_MODEL))
                                  : nr_model_object(path + 8);
            nr_log(s, method, url, MHD_HTTP_OK, NULL);
            return nr_send_json(c, MHD_HTTP_OK, body);
        }
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->max_body) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "request body is larger than %zu bytes; raise --max-body if "
                     "your agents send longer contexts",
                     s->max_body);
            return nr_send_error(s, c, method, url, MHD_HTTP_CONTENT_TOO_LARGE,
                                 "invalid_request_error", "request_too_large", NULL, msg);
        }
        rq = calloc(1, sizeof *rq);
        if (!rq)
            return MHD_NO;
        *con_cls = rq;
        return MHD_YES;
    }
    if (*upload_data_size) /* past max_body: keep draining, answer 413 at the end */
        return dg_http_body_take(&rq->body, upload_data, upload_data_size, s->max_body) ? MHD_NO
                                                                                        : MHD_YES;
    return nr_completion(s, c, method, url, rq);
}

/* MHD's polling thread, when a request ends (answered or aborted). */
static void nr_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    nr_request *rq = *con_cls;
    if (rq) {
        dg_http_body_free(&rq->body);
        free(rq);
        *con_cls = NULL;
    }
}

/* ---- main ------------------------------------------------------------------------ */

static void nr_usage(FILE *f)
{
    fprintf(f,
            "usage: dirigent-noreply [options]\n"
            "  --host ADDR      address to bind (default 127.0.0.1; IPv4 or IPv6)\n"
            "  --port N         TCP port, 0 = any free port (default 0)\n"
            "  --token T        require \"Authorization: Bearer T\" (env DIRIGENT_NOREPLY_TOKEN)\n"
            "  --max-body B     largest request body accepted (default %u)\n"
            "  --quiet          no per-request line on stderr\n"
            "  --check URL      exit 0 when a running instance at URL (its base URL)\n"
            "                   answers (with --token / env DIRIGENT_NOREPLY_TOKEN), else 1\n"
            "  -h, --help       this text\n"
            "  --version        the version\n"
            "Prints the base URL (http://HOST:PORT/v1) as the first stdout line.\n",
            NR_DEFAULT_MAX_BODY);
}

/* ---- --check URL ------------------------------------------------------------------ */

#define NR_CHECK_TIMEOUT_MS 5000L
#define NR_CHECK_MAX_BODY (64u * 1024u)

typedef struct nr_buf {
    char data[NR_CHECK_MAX_BODY + 1];
    size_t len;
} nr_buf;

static size_t nr_check_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    nr_buf *b = ud;
    size_t n = size * nmemb;
    if (n > NR_CHECK_MAX_BODY - b->len)
        return 0; /* a model list is small; anything larger is not us */
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

/* GET <url>/models with the bearer token; 0 when the answer is this
 * server's model list, 1 otherwise, 2 for a URL that cannot be one. */
static int nr_check(const char *url, const char *token)
{
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
        fprintf(stderr,
                "dirigent-noreply --check: the URL must start with http:// or "
                "https:// (the base URL the server printed, e.g. "
                "http://127.0.0.1:18790/v1), got \"%s\"\n",
                url);
        return 2;
    }
    size_t ul = strlen(url);
    if (ul > 2000) {
        fprintf(stderr, "dirigent-noreply --check: the URL is longer than 2000 bytes\n");
        return 2;
    }
    char target[2100];
    snprintf(target, sizeof target, "%.*s/models", (int)(ul && url[ul - 1] == '/' ? ul - 1 : ul),
             url);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "dirigent-noreply --check: libcurl did not initialise\n");
        return 1;
    }
    static nr_buf body;
    body.len = 0;
    body.data[0] = '\0';
    char auth[600];
    struct curl_slist *hdr = NULL;
    if (token) {
        if (strlen(token) > 500) {
            fprintf(stderr, "dirigent-noreply --check: the token is longer than 500 bytes\n");
            curl_global_cleanup();
            return 2;
        }
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdr = curl_slist_append(NULL, auth);
    }
    CURL *h = curl_easy_init();
    int rc = 1;
    if (!h || (token && !hdr)) {
        fprintf(stderr, "dirigent-noreply --check: out of memory\n");
        goto out;
    }
    char err[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, target);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, nr_check_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, NR_CHECK_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*"); /* the instance is local; no proxy in between */
    CURLcode res = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (res != CURLE_OK) {
        fprintf(stderr, "dirigent-noreply --check: %s: no answer (%s)\n", target,
                *err ? err : curl_easy_strerror(res));
        goto out;
    }
    if (status == 401) {
        fprintf(stderr,
                "dirigent-noreply --check: %s: 401, the instance wants another "
                "token (--token or env DIRIGENT_NOREPLY_TOKEN)\n",
                target);
        goto out;
    }
    if (status != 200) {
        fprintf(stderr, "dirigent-noreply --check: %s: HTTP %ld, not a model list\n", target,
                status);
        goto out;
    }
    json_t *j = json_loads(body.data, 0, NULL);
    json_t *first = json_array_get(json_object_get(j, "data"), 0);
    const char *owner = json_string_value(json_object_get(first, "owned_by"));
    if (!owner || strcmp(owner, "dirigent") != 0)
        fprintf(stderr,
                "dirigent-noreply --check: %s answers 200 but not with "
                "dirigent-noreply's model list\n",
                target);
    else {
        printf("dirigent-noreply --check: %s answers\n", url);
        rc = 0;
    }
    json_decref(j);
out:
    if (h)
        curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
    curl_global_cleanup();
    return rc;
}

static int nr_parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v > max)
        return -1;
    *out = v;
    return 0;
}

/* The command line. */
typedef struct nr_opts {
    const char *host;
    const char *check_url;
    unsigned long port, max_body;
} nr_opts;

/* An option that is not one, or lacks its value: said on stderr; exit code 2. */
static int nr_bad_option(int ch, char **argv)
{
    if (ch == ':')
        fprintf(stderr, "dirigent-noreply: option %s needs a value\n", argv[optind - 1]);
    else if (optopt)
        fprintf(stderr, "dirigent-noreply: unknown option -%c\n", optopt);
    else
        fprintf(stderr, "dirigent-noreply: unknown option %s\n", argv[optind - 1]);
    nr_usage(stderr);
    return 2;
}

/* One option into o or srv: -1 to go on, else the exit code. */
static int nr_take_option(int ch, char **argv, nr_opts *o, nr_server *srv)
{
    switch (ch) {
    case 'A': o->host = optarg; return -1;
    case 'p':
        if (nr_parse_ulong(optarg, 65535, &o->port) != 0) {
            fprintf(stderr,
                    "dirigent-noreply: --port must be 0..65535, got "
                    "\"%s\"\n",
                    optarg);
            return 2;
        }
        return -1;
    case 't':
        if (!*optarg) {
            fprintf(stderr, "dirigent-noreply: --token must not be empty; "
                            "leave it out to accept any caller\n");
            return 2;
        }
        srv->token = optarg;
        return -1;
    case 'm':
        if (nr_parse_ulong(optarg, NR_MAX_BODY_LIMIT, &o->max_body) != 0 || o->max_body == 0) {
            fprintf(stderr,
                    "dirigent-noreply: --max-body must be 1..%u bytes, "
                    "got \"%s\"\n",
                    NR_MAX_BODY_LIMIT, optarg);
            return 2;
        }
        return -1;
    case 'q': srv->quiet = true; return -1;
    case 'c': o->check_url = optarg; return -1;
    case 'h':
    case 'H': nr_usage(stdout); return 0;
    case 'V': printf("dirigent-noreply %s\n", DG_VERSION); return 0;
    default: return nr_bad_option(ch, argv);
    }
}

/* The command line into o and srv: -1 to go on, else the exit code. */
static int nr_parse_args(int argc, char **argv, nr_opts *o, nr_server *srv)
{
    static const struct option opts[] = {{"host", required_argument, NULL, 'A'},
                                         {"port", required_argument, NULL, 'p'},
                                         {"token", required_argument, NULL, 't'},
                                         {"max-body", required_argument, NULL, 'm'},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"check", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'H'},
                                         {"version", no_argument, NULL, 'V'},
                                         {NULL, 0, NULL, 0}};
    int ch, rc;
    opterr = 0; /* our own words for a bad option */
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1)
        if ((rc = nr_take_option(ch, argv, o, srv)) >= 0)
            return rc;
    if (optind < argc) {
        fprintf(stderr, "dirigent-noreply: unexpected argument \"%s\"\n", argv[optind]);
        nr_usage(stderr);
        return 2;
    }
    return -1;
}

/* host and port as a socket address: 0, or -1 when host is no numeric
 * address. *v6 and the MHD flag for IPv6. */
static int nr_listen_addr(const char *host, unsigned long port, struct sockaddr_storage *ss,
                          bool *v6, unsigned *flags)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    *v6 = false;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        return 0;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *flags |= MHD_USE_IPv6;
        *v6 = true;
        return 0;
    }
    return -1;
}

/* Serve until SIGTERM or SIGINT: the exit code. */
static int nr_serve(nr_server *srv, const nr_opts *o)
{
    struct sockaddr_storage ss;
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD;
    bool v6;
    if (nr_listen_addr(o->host, o->port, &ss, &v6, &flags) != 0) {
        fprintf(stderr,
                "dirigent-noreply: --host must be a numeric IPv4 or IPv6 "
                "address, got \"%s\"\n",
                o->host);
        return 2;
    }
    /* Block the stop signals before MHD starts its thread, so only sigwait
     * below receives them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct MHD_Daemon *d =
        MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, nr_handle, srv, MHD_OPTION_SOCK_ADDR,
                         (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, nr_completed, NULL,
                         MHD_OPTION_CONNECTION_TIMEOUT, NR_CONN_TIMEOUT_SEC,
                         MHD_OPTION_CONNECTION_LIMIT, NR_CONN_LIMIT, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr,
                "dirigent-noreply: cannot listen on %s port %lu (%s); pick "
                "another --port or --host\n",
                o->host, o->port, strerror(errno));
        return 1;
    }
    unsigned bound = dg_http_bound_port(d, (unsigned)o->port);
    printf(v6 ? "http://[%s]:%u/v1\n" : "http://%s:%u/v1\n", o->host, bound);
    fflush(stdout);

    int sig = 0;
    while (sigwait(&stop, &sig) != 0)
        ;
    MHD_stop_daemon(d);
    if (!srv->quiet)
        fprintf(stderr, "dirigent-noreply: stopped by signal %d\n", sig);
    return 0;
}

int main(int argc, char **argv)
{
    static nr_server srv;
    nr_opts o = {.host = "127.0.0.1", .max_body = NR_DEFAULT_MAX_BODY};
    const char *env_token = getenv("DIRIGENT_NOREPLY_TOKEN");
    srv.token = env_token && *env_token ? env_token : NULL;
    int rc = nr_parse_args(argc, argv, &o, &srv);
    if (rc >= 0)
        return rc;
    if (o.check_url)
        return nr_check(o.check_url, srv.token);
    srv.max_body = o.max_body;
    snprintf(srv.id_prefix, sizeof srv.id_prefix, "noreply%ld", (long)getpid());
    return nr_serve(&srv, &o);
}
