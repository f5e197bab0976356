/*
 * fake_slack_socket.c -- Socket Mode of the fake Slack: apps.connections.open,
 * the websocket it points at (own loopback listener: a plain HTTP/1.1 head,
 * then RFC 6455), event envelopes fanned out from the fake's message
 * listener, acks, and the control endpoints. One thread per connection: it
 * alone reads and writes its socket; other threads queue frames for it and
 * wake it with an eventfd, so a slow client never blocks a Web API call.
 */
#include "fake_slack_socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ws_accept.h"
#include "ws_frame.h"

#define SS_MAX_APPS 32
#define SS_TICKETS 256
/* A client message above this is refused with 1009 (acks are tiny). */
#define SS_MAX_MESSAGE (64 * 1024)
#define SS_MAX_HEAD 8192
/* How long a request head, a close handshake or a blocked write may take. */
#define SS_IO_TIMEOUT_MS 5000

typedef struct ss_out {
    uint8_t *buf;
    size_t len;
    struct ss_out *next;
} ss_out;

typedef struct ss_app {
    char *token, *app_id, *user_id;
} ss_app;

typedef struct ss_ticket {
    char id[48];
    int app; /* index into apps, -1 when free or used */
} ss_ticket;

typedef struct ss_conn ss_conn;

struct fake_slack_socket {
    fake_slack *fs;
    char *team; /* the fake's team id, copied: no fake_slack_* call under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int lfd, port, stop_efd;
    pthread_t accept_thread;
    int accept_started;
    /* under mu: */
    int stopping;
    ss_app apps[SS_MAX_APPS];
    size_t n_apps;
    ss_ticket tickets[SS_TICKETS];
    size_t next_ticket;
    ss_conn *conns; /* newest first */
    long next_conn, next_env;
    uint64_t rnd;
    json_t *envelopes; /* records, oldest first */
    size_t acked;
};

struct ss_conn {
    fake_slack_socket *s;
    int sock, efd;
    pthread_t thread;
    long id;
    int64_t connected_ms;
    uint8_t *in; /* thread only */
    size_t in_len, in_cap;
    /* under mu: */
    int app; /* -1 until the websocket is up */
    int hello, closing, done;
    ss_out *out_head, *out_tail;
    ss_conn *next;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* xorshift64*: tickets and envelope ids only need to differ (locked). */
static uint64_t next_rand(fake_slack_socket *s)
{
    s->rnd ^= s->rnd >> 12;
    s->rnd ^= s->rnd << 25;
    s->rnd ^= s->rnd >> 27;
    return s->rnd * 0x2545F4914F6CDD1Dull;
}

/* ---- output (locked) ------------------------------------------------------------- */

static void wake(ss_conn *c)
{
    uint64_t one = 1;
    ssize_t w = write(c->efd, &one, sizeof one);
    (void)w; /* a saturated counter still wakes the thread */
}

static void queue_frame(ss_conn *c, int opcode, const void *p, size_t len)
{
    ss_out *o = calloc(1, sizeof *o);
    if (!o)
        return;
    o->buf = ws_frame_build(1, opcode, p, len, NULL, &o->len);
    if (!o->buf) {
        free(o);
        return;
    }
    if (c->out_tail)
        c->out_tail->next = o;
    else
        c->out_head = o;
    c->out_tail = o;
    wake(c);
}

/* Queue j (stolen) as a text frame unless the connection is closing. */
static void queue_json(ss_conn *c, json_t *j)
{
    char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (t && !c->closing)
        queue_frame(c, WS_OP_TEXT, t, strlen(t));
    free(t);
    json_decref(j);
}

static void queue_close(ss_conn *c, int code, const char *reason)
{
    if (c->closing)
        return;
    uint8_t p[125];
    size_t rl = strlen(reason);
    if (rl > sizeof p - 2)
        rl = sizeof p - 2;
    p[0] = (uint8_t)(code >> 8);
    p[1] = (uint8_t)code;
    memcpy(p + 2, reason, rl);
    queue_frame(c, WS_OP_CLOSE, p, rl + 2);
    c->closing = 1;
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
    for (ss_conn *c = s->conns; c; c = c->next)
        n += !c->done && !c->closing && c->hello && (app < 0 || c->app == app);
    return n;
}

/* The newest open websocket of app, or NULL. */
static ss_conn *app_conn(fake_slack_socket *s, int app)
{
    for (ss_conn *c = s->conns; c; c = c->next)
        if (!c->done && !c->closing && c->hello && c->app == app)
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
    ss_conn *c = app_conn(s, app);
    json_t *rec =
        json_pack("{s:I, s:s, s:s, s:I, s:s, s:s, s:O?, s:O?, s:O?, s:I, s:b, s:n, s:n}", "seq",
                  (json_int_t)seq, "envelopeId", env_id, "appId", a->app_id, "connId",
                  (json_int_t)(c ? c->id : 0), "eventType", etype ? etype : "", "eventId", event_id,
                  "channel", json_object_get(event, "channel"), "ts", json_object_get(event, "ts"),
                  "user", json_object_get(event, "user"), "sentAtMs", (json_int_t)now_ms(), "acked",
                  0, "ackedAtMs", "ackPayload");
    free(etype);
    json_decref(event);
    if (rec)
        json_array_append_new(s->envelopes, rec);
    if (c)
        queue_json(c, env);
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
    for (size_t i = 0; i < s->n_apps && !s->stopping; i++) {
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
            json_object_set_new(r, "ackedAtMs", json_integer(now_ms()));
            json_t *p = json_object_get(j, "payload");
            json_object_set(r, "ackPayload", p ? p : json_null());
            s->acked++;
            pthread_cond_broadcast(&s->cv);
        }
        break;
    }
    json_decref(j);
}

/* Take complete frames out of c->in; 1 when the client closed. Without the
 * lock (takes it). */
static int consume(ss_conn *c, uint8_t **msg, size_t *msg_len, int *msg_op)
{
    fake_slack_socket *s = c->s;
    size_t at = 0;
    int closed = 0;
    while (!closed) {
        ws_frame_hdr h;
        if (!ws_frame_parse(c->in + at, c->in_len - at, &h))
            break;
        int control = h.opcode >= 8;
        int bad = h.rsv || !h.masked || (control && (!h.fin || h.len > 125)) ||
                  (h.opcode != WS_OP_CONT && h.opcode != WS_OP_TEXT && h.opcode != WS_OP_BINARY &&
                   !control) ||
                  (h.opcode == WS_OP_CONT && !*msg_op) ||
                  ((h.opcode == WS_OP_TEXT || h.opcode == WS_OP_BINARY) && *msg_op);
        if (bad || h.len > SS_MAX_MESSAGE || *msg_len + h.len > SS_MAX_MESSAGE) {
            pthread_mutex_lock(&s->mu);
            queue_close(c, bad ? 1002 : 1009, bad ? "Protocol error." : "Message too big.");
            pthread_mutex_unlock(&s->mu);
            c->in_len = 0;
            return 0;
        }
        if (c->in_len - at - h.hdr_len < h.len)
            break;
        uint8_t *p = c->in + at + h.hdr_len;
        ws_frame_unmask(p, (size_t)h.len, h.mask);
        at += h.hdr_len + (size_t)h.len;
        pthread_mutex_lock(&s->mu);
        if (h.opcode == WS_OP_PING) {
            queue_frame(c, WS_OP_PONG, p, (size_t)h.len);
        } else if (h.opcode == WS_OP_CLOSE) {
            if (!c->closing) {
                uint8_t code[2] = {0x03, 0xE8}; /* 1000 */
                if (h.len >= 2)
                    memcpy(code, p, 2);
                queue_frame(c, WS_OP_CLOSE, code, 2);
                c->closing = 1;
            }
            closed = 1;
        } else if (h.opcode != WS_OP_PONG && !c->closing) {
            uint8_t *nm = realloc(*msg, *msg_len + (size_t)h.len + 1);
            if (nm) {
                *msg = nm;
                memcpy(nm + *msg_len, p, (size_t)h.len);
                *msg_len += (size_t)h.len;
                if (h.opcode != WS_OP_CONT)
                    *msg_op = h.opcode;
                if (h.fin) {
                    if (*msg_op == WS_OP_TEXT)
                        handle_text(s, (const char *)nm, *msg_len);
                    *msg_len = 0;
                    *msg_op = 0;
                }
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    memmove(c->in, c->in + at, c->in_len - at);
    c->in_len -= at;
    return closed;
}

/* ---- socket I/O (without the lock) -------------------------------------------------- */

static int write_all(int sock, const void *buf, size_t len)
{
    const uint8_t *b = buf;
    int64_t until = now_ms() + SS_IO_TIMEOUT_MS;
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(sock, b + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        int64_t left = until - now_ms();
        if (left <= 0)
            return -1;
        struct pollfd pf = {sock, POLLOUT, 0};
        poll(&pf, 1, (int)left);
    }
    return 0;
}

/* Flush the queue: 1 when a close frame went out, -1 on a dead socket. */
static int flush(ss_conn *c)
{
    pthread_mutex_lock(&c->s->mu);
    ss_out *o = c->out_head;
    c->out_head = c->out_tail = NULL;
    pthread_mutex_unlock(&c->s->mu);
    int rc = 0, sent_close = 0;
    while (o) {
        ss_out *n = o->next;
        if (rc == 0 && write_all(c->sock, o->buf, o->len) != 0)
            rc = -1;
        if (rc == 0 && (o->buf[0] & 0x0F) == WS_OP_CLOSE)
            sent_close = 1;
        free(o->buf);
        free(o);
        o = n;
    }
    return rc ? -1 : sent_close;
}

/* Read more bytes into c->in (grown up to a bound); -1 on end or error. */
static int read_some(ss_conn *c)
{
    if (c->in_cap - c->in_len < 4096) {
        size_t cap = c->in_cap ? c->in_cap * 2 : 8192;
        if (cap > 4 * SS_MAX_MESSAGE)
            cap = 4 * SS_MAX_MESSAGE;
        uint8_t *ni = cap > c->in_cap ? realloc(c->in, cap) : NULL;
        if (ni) {
            c->in = ni;
            c->in_cap = cap;
        }
    }
    if (c->in_cap == c->in_len)
        return -1;
    ssize_t r = recv(c->sock, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        return -1;
    if (r > 0)
        c->in_len += (size_t)r;
    return 0;
}

/* ---- the HTTP head ------------------------------------------------------------------ */

/* Value of header name in head (case-insensitive) into out; 0 or -1. */
static int header(const char *head, const char *name, char *out, size_t n)
{
    size_t nl = strlen(name);
    for (const char *l = strstr(head, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
        const char *h = l + 2;
        if (strncasecmp(h, name, nl) != 0 || h[nl] != ':')
            continue;
        h += nl + 1;
        while (*h == ' ' || *h == '\t')
            h++;
        size_t len = strcspn(h, "\r\n");
        while (len && (h[len - 1] == ' ' || h[len - 1] == '\t'))
            len--;
        if (len >= n)
            return -1;
        memcpy(out, h, len);
        out[len] = '\0';
        return 0;
    }
    return -1;
}

/* Query parameter key of target into out (no percent-decoding: the values
 * here are ids); 0 or -1. */
static int query_param(const char *target, const char *key, char *out, size_t n)
{
    const char *q = strchr(target, '?');
    size_t kl = strlen(key);
    for (const char *p = q; p && *p; p = strchr(p + 1, '&')) {
        const char *k = p + 1;
        if (strncmp(k, key, kl) != 0 || k[kl] != '=')
            continue;
        size_t len = strcspn(k + kl + 1, "&# ");
        if (len >= n)
            return -1;
        memcpy(out, k + kl + 1, len);
        out[len] = '\0';
        return 0;
    }
    return -1;
}

static int respond(ss_conn *c, int status, const char *reason, const char *body)
{
    char head[256];
    size_t bl = strlen(body);
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      status, reason, bl);
    if (hl < 0 || (size_t)hl >= sizeof head)
        return -1;
    if (write_all(c->sock, head, (size_t)hl) != 0)
        return -1;
    return write_all(c->sock, body, bl);
}

static int respond_json(ss_conn *c, int status, const char *reason, json_t *j)
{
    char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    int rc = respond(c, status, reason, t ? t : "{\"ok\":false,\"error\":\"no memory\"}");
    free(t);
    return rc;
}

static json_t *connections_locked(fake_slack_socket *s)
{
    json_t *arr = json_array();
    for (ss_conn *c = s->conns; c; c = c->next) {
        if (c->done || c->app < 0)
            continue;
        json_array_append_new(arr, json_pack("{s:I, s:s, s:s, s:I, s:b}", "id", (json_int_t)c->id,
                                             "appId", s->apps[c->app].app_id, "userId",
                                             s->apps[c->app].user_id, "connectedAtMs",
                                             (json_int_t)c->connected_ms, "helloSent", c->hello));
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
static void control(ss_conn *c, const char *method, const char *target)
{
    fake_slack_socket *s = c->s;
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
        long since = query_param(target, "since", v, sizeof v) == 0 ? atol(v) : 0;
        pthread_mutex_lock(&s->mu);
        out = envelopes_locked(s, since);
        pthread_mutex_unlock(&s->mu);
    } else if (post && !strcmp(path, "/_fake/socket/disconnect")) {
        int has_app = query_param(target, "app", app, sizeof app) == 0;
        if (query_param(target, "reason", v, sizeof v) != 0)
            snprintf(v, sizeof v, "refresh_requested");
        size_t n = fake_slack_socket_disconnect(s, has_app ? app : NULL, v);
        out = json_pack("{s:I}", "disconnected", (json_int_t)n);
    } else {
        respond(c, 404, "Not Found",
                "{\"ok\":false,\"error\":\"fake-slack socket: unknown control endpoint; GET "
                "/_fake/socket/{health,connections,envelopes}, POST /_fake/socket/disconnect\"}");
        return;
    }
    respond_json(c, 200, "OK", out);
}

/* Check the upgrade request and answer 101; the app's index, or -1 after
 * a refusal was sent. */
static int upgrade(ss_conn *c, const char *head, const char *target)
{
    fake_slack_socket *s = c->s;
    char key[64], ver[8], up[32], ticket[48];
    if (header(head, "Sec-WebSocket-Key", key, sizeof key) != 0 ||
        header(head, "Sec-WebSocket-Version", ver, sizeof ver) != 0 || strcmp(ver, "13") != 0 ||
        header(head, "Upgrade", up, sizeof up) != 0 || strcasecmp(up, "websocket") != 0) {
        respond(c, 400, "Bad Request",
                "{\"ok\":false,\"error\":\"fake-slack socket: need Upgrade: websocket, "
                "Sec-WebSocket-Key and Sec-WebSocket-Version 13\"}");
        return -1;
    }
    int app = -1;
    pthread_mutex_lock(&s->mu);
    if (query_param(target, "ticket", ticket, sizeof ticket) == 0)
        for (size_t i = 0; i < SS_TICKETS && app < 0; i++)
            if (s->tickets[i].app >= 0 && !strcmp(s->tickets[i].id, ticket)) {
                app = s->tickets[i].app;
                s->tickets[i].app = -1; /* once */
            }
    pthread_mutex_unlock(&s->mu);
    if (app < 0) {
        respond(c, 401, "Unauthorized",
                "{\"ok\":false,\"error\":\"fake-slack socket: unknown or used ticket; call "
                "apps.connections.open for a new URL\"}");
        return -1;
    }
    char accept[29], resp[256];
    ws_accept_key(key, accept);
    int n = snprintf(resp, sizeof resp,
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
                     accept);
    if (write_all(c->sock, resp, (size_t)n) != 0)
        return -1;
    return app;
}

/* Read the request head (leftover bytes stay in c->in); 0 or -1. */
static int read_head(ss_conn *c, char *head, size_t n)
{
    int64_t until = now_ms() + SS_IO_TIMEOUT_MS;
    for (;;) {
        if (c->in_len) {
            void *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
            if (end) {
                size_t hl = (size_t)((uint8_t *)end - c->in) + 4;
                if (hl >= n)
                    return -1;
                memcpy(head, c->in, hl);
                head[hl] = '\0';
                memmove(c->in, c->in + hl, c->in_len - hl);
                c->in_len -= hl;
                return 0;
            }
            if (c->in_len >= SS_MAX_HEAD)
                return -1;
        }
        int64_t left = until - now_ms();
        if (left <= 0)
            return -1;
        struct pollfd pf[2] = {{c->sock, POLLIN, 0}, {c->efd, POLLIN, 0}};
        if (poll(pf, 2, (int)left) < 0 && errno != EINTR)
            return -1;
        if (pf[1].revents & POLLIN)
            return -1; /* stopping */
        if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) && read_some(c) != 0)
            return -1;
    }
}

/* The websocket's life: hello, then frames until either side closes. */
static void serve_ws(ss_conn *c, int app)
{
    fake_slack_socket *s = c->s;
    uint8_t *msg = NULL;
    size_t msg_len = 0;
    int msg_op = 0, client_closed = 0;
    int64_t close_deadline = 0;
    pthread_mutex_lock(&s->mu);
    c->app = app;
    c->hello = 1;
    c->connected_ms = now_ms();
    json_t *hello = json_pack(
        "{s:s, s:I, s:{s:s, s:i, s:i}, s:{s:s}}", "type", "hello", "num_connections",
        (json_int_t)app_connections(s, app), "debug_info", "host", "fake-slack", "build_number", 1,
        "approximate_connection_time", 18060, "connection_info", "app_id", s->apps[app].app_id);
    queue_json(c, hello);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (c->in_len)
        client_closed = consume(c, &msg, &msg_len, &msg_op);
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int stopping = s->stopping;
        if (stopping)
            queue_close(c, 1001, "Server stopping.");
        int closing = c->closing;
        pthread_mutex_unlock(&s->mu);
        int f = flush(c);
        if (f < 0 || client_closed || stopping)
            break;
        if (closing && !close_deadline)
            close_deadline = now_ms() + SS_IO_TIMEOUT_MS;
        int64_t wait = 1000;
        if (close_deadline && (wait = close_deadline - now_ms()) <= 0)
            break;
        struct pollfd pf[2] = {{c->sock, POLLIN, 0}, {c->efd, POLLIN, 0}};
        if (poll(pf, 2, (int)wait) < 0 && errno != EINTR)
            break;
        if (pf[1].revents & POLLIN) {
            uint64_t v;
            ssize_t r = read(c->efd, &v, sizeof v);
            (void)r;
        }
        if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (read_some(c) != 0)
                break;
            client_closed = consume(c, &msg, &msg_len, &msg_op);
        }
    }
    free(msg);
}

static void *conn_main(void *arg)
{
    ss_conn *c = arg;
    fake_slack_socket *s = c->s;
    char head[SS_MAX_HEAD + 1], method[8], target[512];
    if (read_head(c, head, sizeof head) == 0 &&
        sscanf(head, "%7s %511s HTTP/1.1", method, target) == 2) {
        if (!strncmp(target, "/_fake/", 7)) {
            control(c, method, target);
        } else if (!strcmp(method, "GET") && !strncmp(target, "/link", 5)) {
            int app = upgrade(c, head, target);
            if (app >= 0)
                serve_ws(c, app);
        } else {
            respond(c, 404, "Not Found",
                    "{\"ok\":false,\"error\":\"fake-slack socket: GET /link/?ticket=... (from "
                    "apps.connections.open) or /_fake/socket/...\"}");
        }
    }
    pthread_mutex_lock(&s->mu);
    c->done = 1;
    while (c->out_head) {
        ss_out *n = c->out_head->next;
        free(c->out_head->buf);
        free(c->out_head);
        c->out_head = n;
    }
    c->out_tail = NULL;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    shutdown(c->sock, SHUT_RDWR);
    return NULL;
}

static void conn_free(ss_conn *c)
{
    close(c->sock);
    if (c->efd >= 0)
        close(c->efd);
    free(c->in);
    free(c);
}

/* Join and free finished connections (all of them when `all`). */
static void reap(fake_slack_socket *s, int all)
{
    for (;;) {
        pthread_mutex_lock(&s->mu);
        ss_conn **pp = &s->conns, *c = NULL;
        while (*pp && !((*pp)->done || all))
            pp = &(*pp)->next;
        if (*pp) {
            c = *pp;
            *pp = c->next;
        }
        pthread_mutex_unlock(&s->mu);
        if (!c)
            return;
        pthread_join(c->thread, NULL);
        conn_free(c);
    }
}

static void *accept_main(void *arg)
{
    fake_slack_socket *s = arg;
    for (;;) {
        struct pollfd pf[2] = {{s->lfd, POLLIN, 0}, {s->stop_efd, POLLIN, 0}};
        if (poll(pf, 2, 1000) < 0 && errno != EINTR)
            break;
        if (pf[1].revents & POLLIN)
            break;
        reap(s, 0);
        if (!(pf[0].revents & POLLIN))
            continue;
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        ss_conn *c = calloc(1, sizeof *c);
        if (c) {
            c->s = s;
            c->sock = fd;
            c->app = -1;
            c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        }
        if (!c || c->efd < 0) {
            if (c)
                free(c);
            close(fd);
            continue;
        }
        pthread_mutex_lock(&s->mu);
        c->id = ++s->next_conn;
        int ok = !s->stopping && pthread_create(&c->thread, NULL, conn_main, c) == 0;
        if (ok) {
            c->next = s->conns;
            s->conns = c;
        }
        pthread_mutex_unlock(&s->mu);
        if (!ok)
            conn_free(c);
    }
    return NULL;
}

/* ---- public -------------------------------------------------------------------------- */

static int listen_loopback(int port, int *out_port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
        close(fd);
        return -1;
    }
    *out_port = ntohs(a.sin_port);
    return fd;
}

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
    s->lfd = s->stop_efd = -1;
    s->rnd = (uint64_t)now_ms() * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() ^ (uintptr_t)s;
    if (!s->rnd)
        s->rnd = 1;
    for (size_t i = 0; i < SS_TICKETS; i++)
        s->tickets[i].app = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->team = strdup(fake_slack_team_id(fs));
    s->lfd = listen_loopback(port, &s->port);
    if (s->lfd < 0) {
        snprintf(err, err_len, "fake-slack socket: cannot listen on 127.0.0.1:%d: %s", port,
                 strerror(errno));
        fake_slack_socket_stop(s);
        return -1;
    }
    s->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->stop_efd < 0 || !s->team ||
        fake_slack_add_method(fs, "apps.connections.open", open_method, s) != 0 ||
        fake_slack_on_message(fs, on_event, s) != 0 ||
        pthread_create(&s->accept_thread, NULL, accept_main, s) != 0) {
        snprintf(err, err_len,
                 "fake-slack socket: cannot register apps.connections.open, the listener or the "
                 "accept thread (no memory, or the fake is full)");
        fake_slack_socket_stop(s);
        return -1;
    }
    s->accept_started = 1;
    *out = s;
    return 0;
}

void fake_slack_socket_stop(fake_slack_socket *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    for (ss_conn *c = s->conns; c; c = c->next)
        wake(c);
    pthread_mutex_unlock(&s->mu);
    if (s->accept_started) {
        uint64_t one = 1;
        ssize_t w = write(s->stop_efd, &one, sizeof one);
        (void)w;
        pthread_join(s->accept_thread, NULL);
    }
    reap(s, 1);
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->stop_efd >= 0)
        close(s->stop_efd);
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
    for (ss_conn *c = s->conns; c && !(app_id && app < 0); c = c->next) {
        if (c->done || c->closing || !c->hello || (app >= 0 && c->app != app))
            continue;
        queue_json(c, json_pack("{s:s, s:s, s:{s:s}}", "type", "disconnect", "reason",
                                reason ? reason : "refresh_requested", "debug_info", "host",
                                "fake-slack"));
        n++;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}
