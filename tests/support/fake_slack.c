/*
 * fake_slack.c -- in-process fake Slack Web API on libmicrohttpd: the
 * model's plumbing, request parsing, recording, faults, listeners, the
 * control endpoints and the public API. The methods themselves are in
 * fake_slack_api.c. See fake_slack.h for what it serves.
 */
#include "fake_slack_int.h"
#include "buf.h"
#include "http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#define MAX_BODY (1u << 20)

static const char *const fault_names[FS_FAULT_KIND_COUNT] = {
    "429", "error", "500", "delay", "drop", "dropafter", "delayafter"};

const char *fake_slack_fault_name(fake_slack_fault_kind k)
{
    return (unsigned)k < FS_FAULT_KIND_COUNT ? fault_names[k] : "?";
}

int fake_slack_fault_parse(const char *name)
{
    for (int i = 0; name && i < FS_FAULT_KIND_COUNT; i++)
        if (!strcmp(name, fault_names[i]))
            return i;
    return -1;
}

long long fsi_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- requests ---------------------------------------------------------------------- */

typedef struct fs_req {
    dg_http_body body;
} fs_req;

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Percent-decode s[0..n) ('+' is a space) into a new string. */
static char *form_decode(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    size_t o = 0;
    for (size_t i = 0; out && i < n; i++) {
        if (s[i] == '+') {
            out[o++] = ' ';
        } else if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            out[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    if (out)
        out[o] = '\0';
    return out;
}

/* "a=1&b=x%20y" into args (string values). */
static void parse_form(const char *s, size_t len, json_t *args)
{
    const char *end = s + len;
    while (s < end) {
        const char *amp = memchr(s, '&', (size_t)(end - s));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(s, '=', (size_t)(stop - s));
        char *k = form_decode(s, (size_t)((eq ? eq : stop) - s));
        char *v = eq ? form_decode(eq + 1, (size_t)(stop - eq - 1)) : strdup("");
        if (k && v && *k) {
            json_t *js = json_string(v); /* NULL: not UTF-8 */
            json_object_set_new(args, k, js ? js : json_null());
        }
        free(k);
        free(v);
        s = stop + 1;
    }
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    if (key && json_object_set_new(cls, key, json_string(value ? value : "")) != 0)
        json_object_set_new(cls, key, json_null());
    return MHD_YES;
}

/* The merged arguments of a request (NEW object). */
static json_t *request_args(struct MHD_Connection *c, const char *ct, const fs_req *rq)
{
    json_t *args = json_object();
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, args);
    if (!rq->body.buf.len)
        return args;
    if (ct && !strncasecmp(ct, "application/json", 16)) {
        json_t *b = json_loadb(rq->body.buf.s, rq->body.buf.len, 0, NULL);
        if (json_is_object(b))
            json_object_update(args, b);
        json_decref(b);
    } else {
        parse_form(rq->body.buf.s, rq->body.buf.len, args);
    }
    return args;
}

/* ---- the Web API ----------------------------------------------------------------- */

/* Wait until stop or delay_ms passed (fs->mu held). */
static void delay_locked(fake_slack *fs, long delay_ms)
{
    long long until = fsi_mono_ms() + delay_ms + 1;
    while (!fs->stopping && fsi_mono_ms() < until) {
        struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
        pthread_cond_timedwait(&fs->cond, &fs->mu, &ts);
    }
}

/* The next fault for method, or -1 (fs->mu held); *f gets a copy. */
static int take_fault(fake_slack *fs, const char *method, fs_fault *out)
{
    for (size_t i = 0; i < fs->n_faults; i++) {
        fs_fault *f = &fs->faults[i];
        if (strcmp(f->method, "*") && strcmp(f->method, method))
            continue;
        *out = *f;
        if (--f->count <= 0) {
            memmove(f, f + 1, (fs->n_faults - i - 1) * sizeof *f);
            fs->n_faults--;
        }
        return out->kind;
    }
    return -1;
}

/* One answer on its way out. */
typedef struct reply {
    int status;       /* HTTP */
    json_t *body;     /* owned; NULL with status 500 */
    int retry_after;  /* > 0: Retry-After header */
    int drop;         /* close without an answer */
    char scopes[512]; /* x-oauth-scopes (a known token's, as Slack sends it); "" none */
} reply;

/* What Slack's x-oauth-scopes lists for a token with every scope. */
#define FS_EVERY_SCOPE                                                                             \
    "app_mentions:read,channels:history,channels:manage,channels:read,chat:write,"                 \
    "groups:history,groups:read,groups:write,reactions:write,users:read"

static enum MHD_Result send_reply(struct MHD_Connection *c, reply *r)
{
    char *text = r->body ? json_dumps(r->body, JSON_COMPACT) : strdup("");
    json_decref(r->body);
    r->body = NULL;
    if (!text)
        return MHD_NO;
    struct MHD_Response *resp = dg_http_response(text, strlen(text), "application/json");
    if (!resp)
        return MHD_NO;
    if (r->retry_after > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", r->retry_after);
        MHD_add_response_header(resp, "Retry-After", v);
    }
    if (r->scopes[0])
        MHD_add_response_header(resp, "x-oauth-scopes", r->scopes);
    return dg_http_queue(c, (unsigned)r->status, resp);
}

/* The added handler of method, or NULL (fs->mu held). */
const fs_method *fsi_added_method(fake_slack *fs, const char *method)
{
    for (size_t i = 0; i < fs->n_methods; i++)
        if (!strcmp(fs->methods[i].name, method))
            return &fs->methods[i];
    return NULL;
}

/* Run the method itself (fs->mu held; an added handler runs unlocked). */
static void run_method(fake_slack *fs, const char *method, const char *token, const json_t *args,
                       reply *r)
{
    fs_user *u = fsi_user_by_token(fs, token);
    const char *app = u ? (u->bot ? u->app_id : NULL) : fsi_app_of_token(fs, token);
    const fs_method *m = fsi_added_method(fs, method);
    if (m) {
        fs_method copy = *m;
        char uid[24] = "", aid[24] = "";
        snprintf(uid, sizeof uid, "%s", u && u->bot ? u->id : "");
        snprintf(aid, sizeof aid, "%s", app ? app : "");
        fake_slack_call call = {method, token, uid[0] ? uid : NULL, aid[0] ? aid : NULL, args};
        int http = 200;
        pthread_mutex_unlock(&fs->mu);
        json_t *b = copy.fn(copy.ud, &call, &http);
        pthread_mutex_lock(&fs->mu);
        if (json_is_object(b) && !json_object_get(b, "ok"))
            json_object_set_new(b, "ok", json_true());
        r->status = b ? http : 500;
        r->body = b;
        return;
    }
    r->status = 200;
    if (u && u->scopes) /* ",a,b," -> "a,b" */
        snprintf(r->scopes, sizeof r->scopes, "%.*s", (int)strlen(u->scopes) - 2, u->scopes + 1);
    else if (u)
        snprintf(r->scopes, sizeof r->scopes, "%s", FS_EVERY_SCOPE);
    fs_answer a = {NULL};
    if (!token || !*token)
        r->body = fsi_err("not_authed");
    else if (!u && app)
        r->body = fsi_err("not_allowed_token_type");
    else if (!u)
        r->body = fsi_err("invalid_auth");
    else if (fsa_call(fs, method, u, args, &a))
        r->body = a.body;
    else
        r->body = fsi_err("unknown_method");
    if (!r->body)
        r->status = 500;
}

/* A new record of a request, in fs->requests (fs->mu held); borrowed. */
static json_t *record(fake_slack *fs, const char *http_method, const char *method, const char *auth,
                      const char *token, const char *ct, const json_t *args, const fs_req *rq)
{
    fs_user *u = fsi_user_by_token(fs, token);
    json_t *rec =
        json_pack("{s:I, s:I, s:s, s:s, s:s?, s:s?, s:s?, s:s?, s:O, s:i}", "seq",
                  (json_int_t)++fs->seq, "tMs", (json_int_t)fsi_mono_ms(), "httpMethod",
                  http_method, "method", method, "authorization", auth, "token", token, "userId",
                  u ? u->id : NULL, "contentType", ct, "args", args, "status", 0);
    if (!rec)
        return NULL;
    json_object_set_new(rec, "body",
                        rq->body.buf.len ? json_stringn_nocheck(rq->body.buf.s, rq->body.buf.len)
                                         : json_null());
    json_object_set_new(rec, "ok", json_null());
    json_object_set_new(rec, "error", json_null());
    json_object_set_new(rec, "fault", json_null());
    json_array_append_new(fs->requests, rec);
    pthread_cond_broadcast(&fs->cond);
    return rec;
}

/* Apply a fault that answers instead of the method; 1 when it did. */
static int fault_answer(const fs_fault *f, int kind, reply *r)
{
    switch (kind) {
    case FS_FAULT_429:
        r->status = 429;
        r->retry_after = f->retry_after > 0 ? f->retry_after : 1;
        r->body = fsi_err("ratelimited");
        return 1;
    case FS_FAULT_ERROR:
        r->status = 200;
        r->body = fsi_err(f->error[0] ? f->error : "internal_error");
        return 1;
    case FS_FAULT_500: r->status = 500; return 1;
    case FS_FAULT_DROP: r->drop = 1; return 1;
    default: return 0;
    }
}

static void latency_wait(fake_slack *fs)
{
    if (fs->latency_us <= 0)
        return;
    struct timespec ts = {(time_t)(fs->latency_us / 1000000), (fs->latency_us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static enum MHD_Result api(fake_slack *fs, struct MHD_Connection *c, const char *http_method,
                           const char *method, fs_req *rq)
{
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    json_t *args = request_args(c, ct, rq);
    const char *token = NULL;
    if (auth && !strncasecmp(auth, "Bearer ", 7))
        token = auth + 7;
    else
        token = json_string_value(json_object_get(args, "token"));

    reply r = {0};
    pthread_mutex_lock(&fs->mu);
    json_t *rec = record(fs, http_method, method, auth, token, ct, args, rq);
    fs_fault f;
    memset(&f, 0, sizeof f);
    int kind = take_fault(fs, method, &f);
    if (rec && kind >= 0)
        json_object_set_new(rec, "fault", json_string(fault_names[kind]));
    json_incref(rec);
    if (!fault_answer(&f, kind, &r)) {
        if (kind == FS_FAULT_DELAY)
            delay_locked(fs, f.delay_ms);
        if (fs->stopping) {
            r.drop = 1;
        } else {
            run_method(fs, method, token, args, &r);
            if (kind == FS_FAULT_DROP_AFTER)
                r.drop = 1;
            else if (kind == FS_FAULT_DELAY_AFTER)
                delay_locked(fs, f.delay_ms);
            if (fs->stopping)
                r.drop = 1;
        }
    }
    if (rec) {
        json_object_set_new(rec, "status", json_integer(r.drop ? -1 : r.status));
        json_t *okv = json_object_get(r.body, "ok");
        if (json_is_boolean(okv))
            json_object_set(rec, "ok", okv);
        json_t *err = json_object_get(r.body, "error");
        if (json_is_string(err))
            json_object_set(rec, "error", err);
        json_decref(rec);
    }
    pthread_cond_broadcast(&fs->cond);
    pthread_mutex_unlock(&fs->mu);
    json_decref(args);
    fsi_deliver(fs);
    if (r.drop) {
        json_decref(r.body);
        return MHD_NO;
    }
    latency_wait(fs);
    return send_reply(c, &r);
}

/* ---- control endpoints ------------------------------------------------------------ */

static enum MHD_Result answer_json(struct MHD_Connection *c, int status, json_t *body)
{
    reply r = {.status = body ? status : 500, .body = body};
    return send_reply(c, &r);
}

static enum MHD_Result control_bad(struct MHD_Connection *c, const char *why)
{
    return answer_json(c, 400, json_pack("{s:b, s:s}", "ok", 0, "error", why));
}

const char *fsi_jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* POST /_fake/users, /_fake/app-tokens, /_fake/channels, /_fake/messages,
 * /_fake/faults: a JSON object in, {"ok":true,...} out. */
static enum MHD_Result control_post(fake_slack *fs, struct MHD_Connection *c, const char *what,
                                    const json_t *b)
{
    int rc = -1;
    json_t *out = json_pack("{s:b}", "ok", 1);
    if (!strcmp(what, "users")) {
        fake_slack_user_spec u = {fsi_jstr(b, "user_id"), fsi_jstr(b, "name"),
                                  fsi_jstr(b, "token"),   json_is_true(json_object_get(b, "bot")),
                                  fsi_jstr(b, "bot_id"),  fsi_jstr(b, "app_id"),
                                  fsi_jstr(b, "scopes")};
        rc = fake_slack_add_user(fs, &u);
    } else if (!strcmp(what, "app-tokens")) {
        rc = fake_slack_add_app_token(fs, fsi_jstr(b, "token"), fsi_jstr(b, "app_id"));
    } else if (!strcmp(what, "channels")) {
        json_t *mem = json_object_get(b, "members");
        size_t n = json_array_size(mem);
        const char **ids = calloc(n + 1, sizeof *ids);
        for (size_t i = 0; ids && i < n; i++)
            ids[i] = json_string_value(json_array_get(mem, i));
        char id[16];
        rc = ids ? fake_slack_add_channel(fs, fsi_jstr(b, "id"), fsi_jstr(b, "name"),
                                          json_is_true(json_object_get(b, "is_private")), ids, id)
                 : -1;
        free(ids);
        if (rc == 0)
            json_object_set_new(out, "id", json_string(id));
    } else if (!strcmp(what, "messages")) {
        char ts[24];
        rc = fake_slack_inject(fs, fsi_jstr(b, "channel"), fsi_jstr(b, "user"), fsi_jstr(b, "text"),
                               fsi_jstr(b, "thread_ts"), ts);
        if (rc == 0)
            json_object_set_new(out, "ts", json_string(ts));
    } else if (!strcmp(what, "faults")) {
        int kind = fake_slack_fault_parse(fsi_jstr(b, "kind"));
        json_t *cnt = json_object_get(b, "count");
        rc = kind < 0
                 ? -1
                 : fake_slack_add_fault(fs, fsi_jstr(b, "method") ? fsi_jstr(b, "method") : "*",
                                        kind, cnt ? (int)json_integer_value(cnt) : 1,
                                        (int)json_integer_value(json_object_get(b, "retryAfter")),
                                        (long)json_integer_value(json_object_get(b, "delayMs")),
                                        fsi_jstr(b, "error"));
    } else {
        json_decref(out);
        return answer_json(c, 404, json_pack("{s:b, s:s}", "ok", 0, "error", "unknown_control"));
    }
    if (rc != 0) {
        json_decref(out);
        return control_bad(c, "refused: see tests/support/fake_slack.h for the fields");
    }
    return answer_json(c, 200, out);
}

static enum MHD_Result control(fake_slack *fs, struct MHD_Connection *c, const char *method,
                               const char *what, fs_req *rq)
{
    if (!strcmp(method, "POST")) {
        json_t *b = rq->body.buf.len ? json_loadb(rq->body.buf.s, rq->body.buf.len, 0, NULL) : NULL;
        if (!json_is_object(b)) {
            json_decref(b);
            return control_bad(c, "the body must be a JSON object");
        }
        enum MHD_Result res = control_post(fs, c, what, b);
        json_decref(b);
        return res;
    }
    if (!strcmp(method, "DELETE") && !strcmp(what, "requests")) {
        fake_slack_clear_requests(fs);
        return answer_json(c, 200, json_pack("{s:b}", "ok", 1));
    }
    if (!strcmp(method, "DELETE") && !strcmp(what, "faults")) {
        fake_slack_clear_faults(fs);
        return answer_json(c, 200, json_pack("{s:b}", "ok", 1));
    }
    if (strcmp(method, "GET") != 0)
        return control_bad(c, "GET, POST or DELETE");
    if (!strcmp(what, "health"))
        return answer_json(c, 200, json_pack("{s:b, s:s}", "ok", 1, "team", fs->team));
    if (!strcmp(what, "requests")) {
        const char *since = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
        return answer_json(c, 200, fake_slack_requests(fs, since ? atol(since) : 0));
    }
    if (!strcmp(what, "messages")) {
        const char *ch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "channel");
        return answer_json(c, 200, fake_slack_messages(fs, ch));
    }
    if (!strcmp(what, "channels"))
        return answer_json(c, 200, fake_slack_channels(fs));
    return answer_json(c, 404, json_pack("{s:b, s:s}", "ok", 0, "error", "unknown_control"));
}

/* ---- libmicrohttpd glue --------------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    fake_slack *fs = cls;
    fs_req *rq = *con_cls;
    if (!rq) {
        if (!(rq = calloc(1, sizeof *rq)))
            return MHD_NO;
        *con_cls = rq;
        return MHD_YES;
    }
    if (*upload_data_size)
        return dg_http_body_take(&rq->body, upload_data, upload_data_size, MAX_BODY - 1) ? MHD_NO
                                                                                         : MHD_YES;
    if (rq->body.too_large)
        return answer_json(c, 413, fsi_err("request_too_large"));
    if (!strncmp(url, "/_fake/", 7))
        return control(fs, c, method, url + 7, rq);
    if (strncmp(url, "/api/", 5) != 0)
        return answer_json(c, 404, fsi_err("unknown_method"));
    const char *m = url + 5;
    while (*m == '/')
        m++;
    return api(fs, c, method, m, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    fs_req *rq = *con_cls;
    if (rq) {
        dg_http_body_free(&rq->body);
        free(rq);
        *con_cls = NULL;
    }
}

/* ---- public API ------------------------------------------------------------------------ */

int fake_slack_start(const fake_slack_options *o, fake_slack **out, char *err, size_t err_len)
{
    char scratch[4];
    if (!err || !err_len) {
        err = scratch;
        err_len = sizeof scratch;
    }
    *out = NULL;
    fake_slack_options def = {0};
    if (!o)
        o = &def;
    if (o->port < 0 || o->port > 65535) {
        snprintf(err, err_len, "fake-slack: port must be 0..65535");
        return -1;
    }
    fake_slack *fs = calloc(1, sizeof *fs);
    if (!fs) {
        snprintf(err, err_len, "fake-slack: out of memory");
        return -1;
    }
    snprintf(fs->team, sizeof fs->team, "%s", o->team_id ? o->team_id : "T00000001");
    snprintf(fs->team_name, sizeof fs->team_name, "%s",
             o->team_name ? o->team_name : "dirigent-test");
    fs->latency_us = o->latency_us > 0 ? o->latency_us : 0;
    fs->requests = json_array();
    fs->events = json_array();
    pthread_mutex_init(&fs->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&fs->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (!fs->requests || !fs->events) {
        snprintf(err, err_len, "fake-slack: out of memory");
        fake_slack_stop(fs);
        return -1;
    }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)o->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fs->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
                               NULL, NULL, on_request, fs, MHD_OPTION_SOCK_ADDR,
                               (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
                               fs, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_END);
    if (!fs->mhd) {
        snprintf(err, err_len, "fake-slack: cannot listen on 127.0.0.1:%d (in use?)", o->port);
        fake_slack_stop(fs);
        return -1;
    }
    fs->port = (int)dg_http_bound_port(fs->mhd, (unsigned)o->port);
    snprintf(fs->url, sizeof fs->url, "http://127.0.0.1:%d/api", fs->port);
    *out = fs;
    return 0;
}

void fake_slack_stop(fake_slack *fs)
{
    if (!fs)
        return;
    pthread_mutex_lock(&fs->mu);
    fs->stopping = 1;
    pthread_cond_broadcast(&fs->cond);
    pthread_mutex_unlock(&fs->mu);
    if (fs->mhd)
        MHD_stop_daemon(fs->mhd);
    for (size_t i = 0; i < fs->n_users; i++)
        fsi_user_free(&fs->users[i]);
    free(fs->users);
    for (size_t i = 0; i < fs->n_app_tokens; i++)
        free(fs->app_tokens[i].token);
    free(fs->app_tokens);
    for (size_t i = 0; i < fs->n_chans; i++) {
        fs_chan *ch = fs->chans[i];
        for (size_t j = 0; j < ch->n; j++)
            json_decref(ch->msgs[j].obj);
        free(ch->msgs);
        free(ch->name);
        json_decref(ch->members);
        free(ch);
    }
    free(fs->chans);
    free(fs->faults);
    json_decref(fs->requests);
    json_decref(fs->events);
    pthread_cond_destroy(&fs->cond);
    pthread_mutex_destroy(&fs->mu);
    free(fs);
}

int fake_slack_port(const fake_slack *fs)
{
    return fs->port;
}

const char *fake_slack_url(const fake_slack *fs)
{
    return fs->url;
}

const char *fake_slack_team_id(const fake_slack *fs)
{
    return fs->team;
}
