/*
 * fake_slack_socket.c -- Socket Mode of the fake Slack: apps.connections.open,
 * the websocket it points at (ws_server's own loopback listener: a plain
 * HTTP/1.1 head, then RFC 6455; one thread per connection, frames queued by
 * any thread, so a slow client never blocks a Web API call), event
 * envelopes fanned out from the fake's message listener, acks, and the
 * control endpoints.
 */
#include "fake_slack_socket.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ws_frame.h"
#include "ws_server.h"

#define SS_MAX_APPS 32
#define SS_TICKETS 256
/* How long a request head, a close handshake or a blocked write may take. */
#define SS_IO_TIMEOUT_MS 5000

typedef struct ss_app {
    char *token, *app_id, *user_id;
} ss_app;

typedef struct ss_ticket {
    char id[48];
    int app; /* index into apps, -1 when free or used */
} ss_ticket;

/* A connection's state (its ws_conn_data). app: set by the upgrade (the
 * connection's thread, before the websocket is listed), then read under
 * mu; hello: under mu. */
typedef struct ss_conn {
    int app;
    int hello;
} ss_conn;

struct fake_slack_socket {
    fake_slack *fs;
    char *team; /* the fake's team id, copied: no fake_slack_* call under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int port;
    ws_server *ws; /* its connections are Socket Mode's websockets */
    /* under mu: */
    ss_app apps[SS_MAX_APPS];
    size_t n_apps;
    ss_ticket tickets[SS_TICKETS];
    size_t next_ticket;
    long next_env;
    uint64_t rnd;
    json_t *envelopes; /* records, oldest first */
    size_t acked;
};

static ss_conn *conn_state(ws_conn *c)
{
    return ws_conn_data(c);
}

/* xorshift64*: tickets and envelope ids only need to differ (locked). */
static uint64_t next_rand(fake_slack_socket *s)
{
    s->rnd ^= s->rnd >> 12;
    s->rnd ^= s->rnd << 25;
    s->rnd ^= s->rnd >> 27;
    return s->rnd * 0x2545F4914F6CDD1Dull;
}

/* ---- apps and envelopes (locked) --------------------------------------------------- */

static int app_by(fake_slack_socket *s, const char *token, const char *app_id)
{
    for (size_t i = 0; i < s->n_apps; i++)
        if ((token && !strcmp(s->apps[i].token, token)) ||
            (app_id && !strcmp(s->apps[i].app_id, app_id)))
            return (int)i;
    return -1;
}

static size_t app_connections(fake_slack_socket *s, int app)
{
    size_t n = 0;
    for (ws_conn *c = ws_server_next(s->ws, NULL); c; c = ws_server_next(s->ws, c))
        n += !ws_conn_closing(c) && conn_state(c)->hello && (app < 0 || conn_state(c)->app == app);
    return n;
}

/* The newest open websocket of app, or NULL. */
static ws_conn *app_conn(fake_slack_socket *s, int app)
{
    for (ws_conn *c = ws_server_next(s->ws, NULL); c; c = ws_server_next(s->ws, c))
        if (!ws_conn_closing(c) && conn_state(c)->hello && conn_state(c)->app == app)
            return c;
    return NULL;
}

/* Wrap event (stolen) in an Events API body and an events_api envelope
 * for app; send it on the app's newest websocket and record it. */
static void deliver(fake_slack_socket *s, int app, json_t *event)
{
    ss_app *a = &s->apps[app];
    const char *team = s->team;
    long seq = ++s->next_env;
    uint64_t r = next_rand(s);
    char env_id[48], event_id[32];
    snprintf(env_id, sizeof env_id, "%08llx-%04llx-4%03llx-a%03llx-%012llx",
             (unsigned long long)(r >> 32), (unsigned long long)(r >> 16 & 0xffff),
             (unsigned long long)(r >> 4 & 0xfff), (unsigned long long)(seq & 0xfff),
             (unsigned long long)seq);
    snprintf(event_id, sizeof event_id, "Ev%010ld", seq);
    if (!json_object_get(event, "team"))
        json_object_set_new(event, "team", json_string(team));
    const char *type = json_string_value(json_object_get(event, "type"));
    char *etype = strdup(type ? type : "");
    json_t *body = json_pack(
        "{s:s, s:s, s:s, s:s, s:O, s:s, s:s, s:I, s:[{s:n, s:s, s:s, s:b, s:b}], s:b, s:s}",
        "token", "fake-verification-token", "team_id", team, "context_team_id", team, "api_app_id",
        a->app_id, "event", event, "type", "event_callback", "event_id", event_id, "event_time",
        (json_int_t)time(NULL), "authorizations", "enterprise_id", "team_id", team, "user_id",
        a->user_id, "is_bot", 1, "is_enterprise_install", 0, "is_ext_shared_channel", 0,
        "event_context", env_id);
    json_t *env = json_pack("{s:s, s:o, s:s, s:b, s:i, s:s}", "envelope_id", env_id, "payload",
                            body, "type", "events_api", "accepts_response_payload", 0,
                            "retry_attempt", 0, "retry_reason", "");
    ws_conn *c = app_conn(s, app);
    json_t *rec =
        json_pack("{s:I, s:s, s:s, s:I, s:s, s:s, s:O?, s:O?, s:O?, s:I, s:b, s:n, s:n}", "seq",
                  (json_int_t)seq, "envelopeId", env_id, "appId", a->app_id, "connId",
                  (json_int_t)(c ? ws_conn_id(c) : 0), "eventType", etype ? etype : "", "eventId",
                  event_id, "channel", json_object_get(event, "channel"), "ts",
                  json_object_get(event, "ts"), "user", json_object_get(event, "user"), "sentAtMs",
                  (json_int_t)ws_now_ms(), "acked", 0, "ackedAtMs", "ackPayload");
    free(etype);
    json_decref(event);
    if (rec)
        json_array_append_new(s->envelopes, rec);
    if (c)
        ws_conn_send_json(c, env);
    else
        json_decref(env);
    pthread_cond_broadcast(&s->cv);
}

static int is_member(const fake_slack_event *ev, const char *user)
{
    for (size_t i = 0; i < ev->n_members; i++)
        if (ev->members[i] && !strcmp(ev->members[i], user))
            return 1;
    return 0;
}

/* "<@U123>" or "<@U123|name>" in text. */
static int mentions(const char *text, const char *user)
{
    size_t ul = strlen(user);
    for (const char *p = text ? strstr(text, "<@") : NULL; p; p = strstr(p + 2, "<@"))
        if (!strncmp(p + 2, user, ul) && (p[2 + ul] == '>' || p[2 + ul] == '|'))
            return 1;
    return 0;
}

/* The `message` event of a stored message, as Slack's Events API has it. */
static json_t *message_event(const fake_slack_event *ev)
{
    json_t *m = json_deep_copy(ev->message);
    if (!m)
        return NULL;
    json_object_del(m, "metadata"); /* only for message_metadata subscribers */
    json_object_set_new(m, "type", json_string("message"));
    json_object_set_new(m, "channel", json_string(ev->channel_id));
    json_object_set_new(m, "channel_type", json_string(ev->channel_type));
    json_t *ts = json_object_get(m, "ts");
    if (ts)
        json_object_set(m, "event_ts", ts);
    return m;
}

/* app_mention carries no channel_type (Slack's does not either). */
static json_t *mention_event(const fake_slack_event *ev)
{
    json_t *m = message_event(ev);
    if (m) {
        json_object_set_new(m, "type", json_string("app_mention"));
        json_object_del(m, "channel_type");
    }
    return m;
}

/* The fake's listener: any thread, without the fake's lock. */
static void on_event(void *ud, const fake_slack_event *ev)
{
    fake_slack_socket *s = ud;
    int is_msg = !strcmp(ev->type, "message");
    int is_join = !strcmp(ev->type, "member_joined_channel");
    if ((!is_msg || !ev->message) && !is_join)
        return;
    const char *text = is_msg ? json_string_value(json_object_get(ev->message, "text")) : NULL;
    char now_ts[32];
    snprintf(now_ts, sizeof now_ts, "%lld.000000", (long long)time(NULL));
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n_apps && !ws_server_stopping(s->ws); i++) {
        const char *bot = s->apps[i].user_id;
        if (!is_member(ev, bot))
            continue;
        if (is_join) {
            /* Slack's member_joined_channel says "C" or "G", not "channel". */
            deliver(s, (int)i,
                    json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "member_joined_channel", "user",
                              ev->user_id ? ev->user_id : "", "channel", ev->channel_id,
                              "channel_type", !strcmp(ev->channel_type, "group") ? "G" : "C",
                              "event_ts", now_ts));
            continue;
        }
        deliver(s, (int)i, message_event(ev));
        if (mentions(text, bot) && !(ev->user_id && !strcmp(ev->user_id, bot)))
            deliver(s, (int)i, mention_event(ev));
    }
    pthread_mutex_unlock(&s->mu);
}

/* apps.connections.open: a fake_slack connection thread, without the lock. */
static json_t *open_method(void *ud, const fake_slack_call *call, int *http_status)
{
    (void)http_status;
    fake_slack_socket *s = ud;
    pthread_mutex_lock(&s->mu);
    int app = call->token ? app_by(s, call->token, NULL) : -1;
    if (app < 0) {
        pthread_mutex_unlock(&s->mu);
        const char *e = !call->token    ? "not_authed"
                        : call->user_id ? "not_allowed_token_type"
                                        : "invalid_auth";
        return json_pack("{s:b, s:s}", "ok", 0, "error", e);
    }
    ss_ticket *t = &s->tickets[s->next_ticket++ % SS_TICKETS];
    uint64_t a = next_rand(s), b = next_rand(s);
    snprintf(t->id, sizeof t->id, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
    t->app = app;
    char url[160];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/link/?ticket=%s&app_id=%s", s->port, t->id,
             s->apps[app].app_id);
    pthread_mutex_unlock(&s->mu);
    return json_pack("{s:b, s:s}", "ok", 1, "url", url);
}

/* ---- the websocket's input --------------------------------------------------------- */

/* An ack {"envelope_id":..., "payload":...} (locked); anything else is
 * ignored, as Slack ignores what it does not expect. */
static void handle_text(fake_slack_socket *s, const char *text, size_t len)
{
    json_t *j = json_loadb(text, len, 0, NULL);
    const char *id = json_string_value(json_object_get(j, "envelope_id"));
    for (size_t i = json_array_size(s->envelopes); id && i-- > 0;) {
        json_t *r = json_array_get(s->envelopes, i);
        if (strcmp(json_string_value(json_object_get(r, "envelopeId")), id) != 0)
            continue;
        if (!json_is_true(json_object_get(r, "acked"))) {
            json_object_set_new(r, "acked", json_true());
            json_object_set_new(r, "ackedAtMs", json_integer(ws_now_ms()));
            json_t *p = json_object_get(j, "payload");
            json_object_set(r, "ackPayload", p ? p : json_null());
            s->acked++;
            pthread_cond_broadcast(&s->cv);
        }
        break;
    }
    json_decref(j);
}

static int respond_json(ws_conn *c, int status, const char *reason, json_t *j)
{
    char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    int rc = ws_conn_respond(c, status, reason, t ? t : "{\"ok\":false,\"error\":\"no memory\"}");
    free(t);
    return rc;
}

static json_t *connections_locked(fake_slack_socket *s)
{
    json_t *arr = json_array();
    for (ws_conn *c = ws_server_next(s->ws, NULL); c; c = ws_server_next(s->ws, c)) {
        const ss_conn *sc = conn_state(c);
        json_array_append_new(arr,
                              json_pack("{s:I, s:s, s:s, s:I, s:b}", "id",
                                        (json_int_t)ws_conn_id(c), "appId", s->apps[sc->app].app_id,
                                        "userId", s->apps[sc->app].user_id, "connectedAtMs",
                                        (json_int_t)ws_conn_opened_ms(c), "helloSent", sc->hello));
    }
    return arr;
}

static json_t *envelopes_locked(fake_slack_socket *s, long since)
{
    json_t *arr = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(s->envelopes, i, r) {
        if (json_integer_value(json_object_get(r, "seq")) > since)
            json_array_append_new(arr, json_deep_copy(r));
    }
    return arr;
}

/* The control endpoints; the connection closes after the answer. */
static void control(fake_slack_socket *s, ws_conn *c, const char *method, const char *target)
{
    char path[128], v[64], app[64];
    size_t pl = strcspn(target, "?");
    snprintf(path, sizeof path, "%.*s", (int)(pl < sizeof path ? pl : sizeof path - 1), target);
    int get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    json_t *out = NULL;
    if (get && !strcmp(path, "/_fake/socket/health")) {
        char url[64];
        snprintf(url, sizeof url, "ws://127.0.0.1:%d", s->port);
        out = json_pack("{s:b, s:s}", "ok", 1, "url", url);
    } else if (get && !strcmp(path, "/_fake/socket/connections")) {
        pthread_mutex_lock(&s->mu);
        out = connections_locked(s);
        pthread_mutex_unlock(&s->mu);
    } else if (get && !strcmp(path, "/_fake/socket/envelopes")) {
        long since = ws_http_query(target, "since", v, sizeof v) == 0 ? atol(v) : 0;
        pthread_mutex_lock(&s->mu);
        out = envelopes_locked(s, since);
        pthread_mutex_unlock(&s->mu);
    } else if (post && !strcmp(path, "/_fake/socket/disconnect")) {
        int has_app = ws_http_query(target, "app", app, sizeof app) == 0;
        if (ws_http_query(target, "reason", v, sizeof v) != 0)
            snprintf(v, sizeof v, "refresh_requested");
        size_t n = fake_slack_socket_disconnect(s, has_app ? app : NULL, v);
        out = json_pack("{s:I}", "disconnected", (json_int_t)n);
    } else {
        ws_conn_respond(
            c, 404, "Not Found",
            "{\"ok\":false,\"error\":\"fake-slack socket: unknown control endpoint; GET "
            "/_fake/socket/{health,connections,envelopes}, POST /_fake/socket/disconnect\"}");
        return;
    }
    respond_json(c, 200, "OK", out);
}

/* Check the upgrade request and answer 101; the app's index, or -1 after
 * a refusal was sent (or the 101 could not be). */
static int upgrade(fake_slack_socket *s, ws_conn *c, const char *head, const char *target)
{
    char ticket[48];
    if (!ws_http_is_upgrade(head)) {
        ws_conn_respond(c, 400, "Bad Request",
                        "{\"ok\":false,\"error\":\"fake-slack socket: need Upgrade: websocket, "
                        "Sec-WebSocket-Key and Sec-WebSocket-Version 13\"}");
        return -1;
    }
    int app = -1;
    pthread_mutex_lock(&s->mu);
    if (ws_http_query(target, "ticket", ticket, sizeof ticket) == 0)
        for (size_t i = 0; i < SS_TICKETS && app < 0; i++)
            if (s->tickets[i].app >= 0 && !strcmp(s->tickets[i].id, ticket)) {
                app = s->tickets[i].app;
                s->tickets[i].app = -1; /* once */
            }
    pthread_mutex_unlock(&s->mu);
    if (app < 0) {
        ws_conn_respond(c, 401, "Unauthorized",
                        "{\"ok\":false,\"error\":\"fake-slack socket: unknown or used ticket; "
                        "call apps.connections.open for a new URL\"}");
        return -1;
    }
    return ws_conn_upgrade(c, head) == 0 ? app : -1;
}

/* ---- ws_server's callbacks ------------------------------------------------------------ */

/* A request on the socket port: the connection's thread, without mu. 1
 * when it became a websocket (the 101 went out). */
static int on_request(void *ud, ws_conn *c, const char *method, const char *target,
                      const char *head)
{
    fake_slack_socket *s = ud;
    if (!strncmp(target, "/_fake/", 7)) {
        control(s, c, method, target);
    } else if (!strcmp(method, "GET") && !strncmp(target, "/link", 5)) {
        int app = upgrade(s, c, head, target);
        if (app >= 0) {
            conn_state(c)->app = app;
            return 1;
        }
    } else {
        ws_conn_respond(c, 404, "Not Found",
                        "{\"ok\":false,\"error\":\"fake-slack socket: GET /link/?ticket=... "
                        "(from apps.connections.open) or /_fake/socket/...\"}");
    }
    return 0;
}

/* hello, counting this connection: the connection's thread, mu held. */
static void on_opened(void *ud, ws_conn *c)
{
    fake_slack_socket *s = ud;
    ss_conn *sc = conn_state(c);
    sc->hello = 1;
    json_t *hello =
        json_pack("{s:s, s:I, s:{s:s, s:i, s:i}, s:{s:s}}", "type", "hello", "num_connections",
                  (json_int_t)app_connections(s, sc->app), "debug_info", "host", "fake-slack",
                  "build_number", 1, "approximate_connection_time", 18060, "connection_info",
                  "app_id", s->apps[sc->app].app_id);
    ws_conn_send_json(c, hello);
    pthread_cond_broadcast(&s->cv);
}

/* Text is an ack or ignored; binary is ignored, as Slack sends none: the
 * connection's thread, mu held. */
static void on_message(void *ud, ws_conn *c, int opcode, const char *p, size_t len)
{
    (void)c;
    if (opcode == WS_OP_TEXT)
        handle_text(ud, p, len);
}

/* ---- public -------------------------------------------------------------------------- */

int fake_slack_socket_start(fake_slack *fs, int port, fake_slack_socket **out, char *err,
                            size_t err_len)
{
    *out = NULL;
    if (!fs || port < 0 || port > 65535) {
        snprintf(err, err_len, "fake-slack socket: need a started fake_slack and a port 0..65535");
        return -1;
    }
    fake_slack_socket *s = calloc(1, sizeof *s);
    if (!s || !(s->envelopes = json_array())) {
        free(s);
        snprintf(err, err_len, "fake-slack socket: out of memory");
        return -1;
    }
    s->fs = fs;
    s->rnd = (uint64_t)ws_now_ms() * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() ^ (uintptr_t)s;
    if (!s->rnd)
        s->rnd = 1;
    for (size_t i = 0; i < SS_TICKETS; i++)
        s->tickets[i].app = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->team = strdup(fake_slack_team_id(fs));
    const ws_server_cbs cbs = {on_request, on_opened, on_message, NULL};
    s->ws = ws_server_new(&s->mu, &s->cv, &cbs, s, sizeof(ss_conn), SS_IO_TIMEOUT_MS);
    if (!s->ws) {
        snprintf(err, err_len, "fake-slack socket: out of memory");
        fake_slack_socket_stop(s);
        return -1;
    }
    /* Listening (and accepting) before anything is registered with fs: a
     * start that fails here leaves fs as it was. */
    if (ws_server_listen(s->ws, port, &s->port) != 0) {
        snprintf(err, err_len, "fake-slack socket: cannot listen on 127.0.0.1:%d: %s", port,
                 strerror(errno));
        fake_slack_socket_stop(s);
        return -1;
    }
    if (!s->team || fake_slack_add_method(fs, "apps.connections.open", open_method, s) != 0 ||
        fake_slack_on_message(fs, on_event, s) != 0) {
        snprintf(err, err_len,
                 "fake-slack socket: cannot register apps.connections.open or the message "
                 "listener (no memory, or the fake is full)");
        fake_slack_socket_stop(s);
        return -1;
    }
    *out = s;
    return 0;
}

void fake_slack_socket_stop(fake_slack_socket *s)
{
    if (!s)
        return;
    ws_server_shutdown(s->ws);
    ws_server_free(s->ws);
    for (size_t i = 0; i < s->n_apps; i++) {
        free(s->apps[i].token);
        free(s->apps[i].app_id);
        free(s->apps[i].user_id);
    }
    json_decref(s->envelopes);
    free(s->team);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int fake_slack_socket_port(const fake_slack_socket *s)
{
    return s ? s->port : 0;
}

int fake_slack_socket_add_app(fake_slack_socket *s, const char *app_token, const char *app_id,
                              const char *bot_user_id)
{
    if (!s || !app_token || !*app_token || !app_id || !*app_id || !bot_user_id || !*bot_user_id)
        return -1;
    pthread_mutex_lock(&s->mu);
    int rc = -1;
    if (s->n_apps < SS_MAX_APPS && app_by(s, app_token, NULL) < 0) {
        ss_app *a = &s->apps[s->n_apps];
        a->token = strdup(app_token);
        a->app_id = strdup(app_id);
        a->user_id = strdup(bot_user_id);
        if (a->token && a->app_id && a->user_id) {
            s->n_apps++;
            rc = 0;
        } else {
            free(a->token);
            free(a->app_id);
            free(a->user_id);
            memset(a, 0, sizeof *a);
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (rc == 0 && fake_slack_add_app_token(s->fs, app_token, app_id) != 0)
        rc = -1; /* the app stays listed: its token just cannot reach the Web API */
    return rc;
}

size_t fake_slack_socket_connected(fake_slack_socket *s, const char *app_id)
{
    pthread_mutex_lock(&s->mu);
    int app = app_id ? app_by(s, NULL, app_id) : -1;
    size_t n = app_id && app < 0 ? 0 : app_connections(s, app);
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Wait on the socket's condition until cond_fn holds or timeout_ms pass. */
static int wait_until(fake_slack_socket *s, int (*cond_fn)(fake_slack_socket *, const void *),
                      const void *arg, long timeout_ms)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->mu);
    int ok;
    while (!(ok = cond_fn(s, arg)))
        if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT) {
            ok = cond_fn(s, arg);
            break;
        }
    pthread_mutex_unlock(&s->mu);
    return ok ? 0 : -1;
}

typedef struct conn_want {
    const char *app_id;
    size_t n;
} conn_want;

static int have_connected(fake_slack_socket *s, const void *arg)
{
    const conn_want *w = arg;
    int app = w->app_id ? app_by(s, NULL, w->app_id) : -1;
    return !(w->app_id && app < 0) && app_connections(s, app) >= w->n;
}

int fake_slack_socket_wait_connected(fake_slack_socket *s, const char *app_id, size_t n,
                                     long timeout_ms)
{
    conn_want w = {app_id, n};
    return wait_until(s, have_connected, &w, timeout_ms);
}

json_t *fake_slack_socket_connections(fake_slack_socket *s)
{
    pthread_mutex_lock(&s->mu);
    json_t *a = connections_locked(s);
    pthread_mutex_unlock(&s->mu);
    return a;
}

json_t *fake_slack_socket_envelopes(fake_slack_socket *s, long since)
{
    pthread_mutex_lock(&s->mu);
    json_t *a = envelopes_locked(s, since);
    pthread_mutex_unlock(&s->mu);
    return a;
}

size_t fake_slack_socket_acked(fake_slack_socket *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->acked;
    pthread_mutex_unlock(&s->mu);
    return n;
}

typedef struct env_want {
    size_t n;
    int acked;
} env_want;

static int have_envelopes(fake_slack_socket *s, const void *arg)
{
    const env_want *w = arg;
    return (w->acked ? s->acked : json_array_size(s->envelopes)) >= w->n;
}

int fake_slack_socket_wait_envelopes(fake_slack_socket *s, size_t n, int acked, long timeout_ms)
{
    env_want w = {n, acked};
    return wait_until(s, have_envelopes, &w, timeout_ms);
}

size_t fake_slack_socket_disconnect(fake_slack_socket *s, const char *app_id, const char *reason)
{
    size_t n = 0;
    pthread_mutex_lock(&s->mu);
    int app = app_id ? app_by(s, NULL, app_id) : -1;
    for (ws_conn *c = app_id && app < 0 ? NULL : ws_server_next(s->ws, NULL); c;
         c = ws_server_next(s->ws, c)) {
        if (ws_conn_closing(c) || !conn_state(c)->hello || (app >= 0 && conn_state(c)->app != app))
            continue;
        ws_conn_send_json(c, json_pack("{s:s, s:s, s:{s:s}}", "type", "disconnect", "reason",
                                       reason ? reason : "refresh_requested", "debug_info", "host",
                                       "fake-slack"));
        n++;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}
