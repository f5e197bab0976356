/*
 * fake_discord_gateway.c -- the Discord gateway (v10, JSON text frames, no
 * compression) of the fake Discord, on the REST port through MHD's
 * connection upgrade. One thread per websocket: it alone reads and writes
 * the socket; other threads queue frames for it and wake it with an
 * eventfd, so a slow reader never blocks a REST request.
 */
#include "fake_discord_gateway.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
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

/* A client message above this is refused with 1009; Discord itself takes
 * at most 4096 bytes, so this leaves room without inviting abuse. */
#define GW_MAX_MESSAGE (64 * 1024)
/* Dispatches kept per session for RESUME replay (oldest dropped first). */
#define GW_HISTORY 1000
/* How long a close handshake or a blocked write may take. */
#define GW_IO_TIMEOUT_MS 2000

typedef struct gw_out {
    uint8_t *buf;
    size_t len;
    struct gw_out *next;
} gw_out;

typedef struct gw_sent {
    long s;
    char *text;
} gw_sent;

typedef struct gw_conn gw_conn;

typedef struct gw_session {
    char id[40];
    char user[24];
    long seq;
    gw_sent *hist; /* ring of GW_HISTORY */
    size_t n_hist, first;
    gw_conn *conn; /* attached websocket or NULL */
    struct gw_session *next;
} gw_session;

struct gw_conn {
    fd_gateway *g;
    int sock;
    struct MHD_UpgradeResponseHandle *urh;
    pthread_t thread;
    int efd;
    int64_t connected_ms;
    uint8_t *in; /* thread only */
    size_t in_len, in_cap;
    /* under the lock: */
    gw_out *out_head, *out_tail;
    gw_session *sess;
    int identified;
    int closing; /* a close frame is queued; no more dispatches */
    int done;    /* the thread has ended; join and free */
    struct gw_conn *next;
};

struct fd_gateway {
    fake_discord *fd;
    long heartbeat_ms;
    int stopping;
    uint64_t next_sid;
    gw_conn *conns;
    gw_session *sessions;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- output (locked) ------------------------------------------------------------- */

static void wake(gw_conn *c)
{
    uint64_t one = 1;
    ssize_t w = write(c->efd, &one, sizeof one);
    (void)w; /* the counter saturating still wakes the thread */
}

static void queue_frame(gw_conn *c, int opcode, const void *p, size_t len)
{
    gw_out *o = calloc(1, sizeof *o);
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

static void queue_text(gw_conn *c, const char *text)
{
    if (!c->closing)
        queue_frame(c, WS_OP_TEXT, text, strlen(text));
}

static void queue_json(gw_conn *c, json_t *j)
{
    char *t = json_dumps(j, JSON_COMPACT);
    if (t)
        queue_text(c, t);
    free(t);
    json_decref(j);
}

/* Queue a close frame; the thread ends the connection once it is sent and
 * the client answered (or GW_IO_TIMEOUT_MS passed). */
static void queue_close(gw_conn *c, int code, const char *reason)
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

static void session_send(gw_session *s, const char *t, json_t *d)
{
    json_t *p =
        json_pack("{s:i, s:s, s:I, s:O}", "op", 0, "t", t, "s", (json_int_t)++s->seq, "d", d);
    char *text = p ? json_dumps(p, JSON_COMPACT) : NULL;
    json_decref(p);
    if (!text)
        return;
    if (s->n_hist == GW_HISTORY) {
        free(s->hist[s->first].text);
        s->first = (s->first + 1) % GW_HISTORY;
        s->n_hist--;
    }
    gw_sent *e = &s->hist[(s->first + s->n_hist) % GW_HISTORY];
    e->s = s->seq;
    e->text = text;
    s->n_hist++;
    if (s->conn && s->conn->identified)
        queue_text(s->conn, text);
}

/* ---- the protocol (locked) -------------------------------------------------------- */

static void send_ready(fd_gateway *g, gw_conn *c, gw_session *s)
{
    fake_discord *fd = g->fd;
    char resume[64];
    snprintf(resume, sizeof resume, "ws://127.0.0.1:%d", fdi_port(fd));
    json_t *user = fdi_user_json(fd, s->user);
    json_object_set_new(user, "verified", json_true());
    json_object_set_new(user, "mfa_enabled", json_false());
    json_object_set_new(user, "flags", json_integer(0));
    json_t *ready = json_pack(
        "{s:i, s:o, s:[{s:s, s:b}], s:s, s:s, s:s, s:{s:s, s:i}, s:[i,i], s:[], s:[], s:[], "
        "s:{}, s:[s]}",
        "v", 10, "user", user, "guilds", "id", fake_discord_guild_id(fd), "unavailable", 1,
        "session_id", s->id, "session_type", "normal", "resume_gateway_url", resume, "application",
        "id", s->user, "flags", fdi_app_flags(), "shard", 0, 1, "private_channels", "presences",
        "relationships", "user_settings", "_trace", "fake-discord");
    c->identified = 1;
    session_send(s, "READY", ready);
    json_decref(ready);
    json_t *guild = fdi_guild_create(fd);
    session_send(s, "GUILD_CREATE", guild);
    json_decref(guild);
    fdi_changed(fd);
}

static void op_identify(fd_gateway *g, gw_conn *c, json_t *d)
{
    if (c->sess) {
        queue_close(c, 4005, "Already authenticated.");
        return;
    }
    const char *user = fdi_user_for_token(g->fd, json_string_value(json_object_get(d, "token")));
    if (!user) {
        queue_close(c, 4004, "Authentication failed.");
        return;
    }
    gw_session *s = calloc(1, sizeof *s);
    if (s)
        s->hist = calloc(GW_HISTORY, sizeof *s->hist);
    if (!s || !s->hist) {
        free(s);
        queue_close(c, 4000, "Unknown error.");
        return;
    }
    /* Unique within this fake; looks like Discord's 32 hex digits. */
    uint64_t n = ++g->next_sid;
    snprintf(s->id, sizeof s->id, "%016llx%016llx", (unsigned long long)(0x5eed0000ull + n),
             (unsigned long long)(n * 0x9E3779B97F4A7C15ull));
    snprintf(s->user, sizeof s->user, "%s", user);
    s->conn = c;
    s->next = g->sessions;
    g->sessions = s;
    c->sess = s;
    send_ready(g, c, s);
}

static void op_resume(fd_gateway *g, gw_conn *c, json_t *d)
{
    const char *user = fdi_user_for_token(g->fd, json_string_value(json_object_get(d, "token")));
    const char *sid = json_string_value(json_object_get(d, "session_id"));
    long seq = (long)json_integer_value(json_object_get(d, "seq"));
    gw_session *s = g->sessions;
    while (s && !(sid && user && !strcmp(s->id, sid) && !strcmp(s->user, user)))
        s = s->next;
    if (!s || c->sess) {
        /* d:false: the session cannot be resumed, identify anew. */
        queue_json(c, json_pack("{s:i, s:b, s:n, s:n}", "op", 9, "d", 0, "s", "t"));
        return;
    }
    if (s->conn && s->conn != c) {
        s->conn->sess = NULL;
        s->conn->identified = 0;
        queue_close(s->conn, 4009, "Session resumed on another connection.");
    }
    s->conn = c;
    c->sess = s;
    c->identified = 1;
    for (size_t i = 0; i < s->n_hist; i++) {
        gw_sent *e = &s->hist[(s->first + i) % GW_HISTORY];
        if (e->s > seq)
            queue_text(c, e->text);
    }
    json_t *empty = json_object();
    session_send(s, "RESUMED", empty);
    json_decref(empty);
    fdi_changed(g->fd);
}

static void handle_message(fd_gateway *g, gw_conn *c, const char *text, size_t len)
{
    json_t *p = json_loadb(text, len, 0, NULL);
    json_t *opv = json_object_get(p, "op");
    if (!json_is_object(p) || !json_is_integer(opv)) {
        json_decref(p);
        queue_close(c, 4002, "Error while decoding payload.");
        return;
    }
    int op = (int)json_integer_value(opv);
    json_t *d = json_object_get(p, "d");
    if (op != 1 && op != 2 && op != 6 && !c->identified) {
        queue_close(c, 4003, "Not authenticated.");
    } else if (op == 1) {
        queue_json(c, json_pack("{s:i}", "op", 11));
    } else if (op == 2) {
        op_identify(g, c, d);
    } else if (op == 6) {
        op_resume(g, c, d);
    } else if (op == 3 || op == 4 || op == 8) {
        /* presence, voice state, member requests: accepted, nothing to say */
    } else {
        queue_close(c, 4001, "Unknown opcode.");
    }
    json_decref(p);
}

/* ---- the connection thread -------------------------------------------------------- */

/* Write all of buf within GW_IO_TIMEOUT_MS; 0 or -1. Without the lock. */
static int write_all(int sock, const uint8_t *buf, size_t len)
{
    int64_t until = now_ms() + GW_IO_TIMEOUT_MS;
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(sock, buf + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
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

/* Flush the queue; 1 when a close frame went out. -1 on a dead socket. */
static int flush(gw_conn *c)
{
    fake_discord *fd = c->g->fd;
    fdi_lock(fd);
    gw_out *o = c->out_head;
    c->out_head = c->out_tail = NULL;
    fdi_unlock(fd);
    int rc = 0, sent_close = 0;
    while (o) {
        gw_out *n = o->next;
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

/* Take the complete frames out of c->in. Returns 1 when the client closed
 * (its close is answered), 0 to go on. Without the lock (takes it). */
static int consume(gw_conn *c, uint8_t **msg, size_t *msg_len, int *msg_op)
{
    fake_discord *fd = c->g->fd;
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
        if (bad || h.len > GW_MAX_MESSAGE || *msg_len + h.len > GW_MAX_MESSAGE) {
            fdi_lock(fd);
            if (bad)
                queue_close(c, 1002, "Protocol error.");
            else
                queue_close(c, 1009, "Message too big.");
            fdi_unlock(fd);
            c->in_len = 0; /* nothing after it is read */
            return 0;
        }
        if (c->in_len - at - h.hdr_len < h.len)
            break;
        uint8_t *p = c->in + at + h.hdr_len;
        ws_frame_unmask(p, (size_t)h.len, h.mask);
        at += h.hdr_len + (size_t)h.len;
        fdi_lock(fd);
        if (h.opcode == WS_OP_PING) {
            queue_frame(c, WS_OP_PONG, p, (size_t)h.len);
        } else if (h.opcode == WS_OP_CLOSE) {
            /* Echo the code (RFC 6455 5.5.1) unless ours went out first. */
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
                    handle_message(c->g, c, (const char *)nm, *msg_len);
                    *msg_len = 0;
                    *msg_op = 0;
                }
            }
        }
        fdi_unlock(fd);
    }
    memmove(c->in, c->in + at, c->in_len - at);
    c->in_len -= at;
    return closed;
}

static void *conn_main(void *arg)
{
    gw_conn *c = arg;
    fd_gateway *g = c->g;
    fake_discord *fd = g->fd;
    uint8_t *msg = NULL;
    size_t msg_len = 0;
    int msg_op = 0;
    int64_t close_deadline = 0;
    int client_closed = 0;

    fdi_lock(fd);
    char hello[96];
    snprintf(hello, sizeof hello,
             "{\"op\":10,\"d\":{\"heartbeat_interval\":%ld},\"s\":null,\"t\":null}",
             g->heartbeat_ms);
    queue_text(c, hello);
    fdi_unlock(fd);
    /* Bytes MHD read past the HTTP request belong to the websocket. */
    if (c->in_len)
        client_closed = consume(c, &msg, &msg_len, &msg_op);

    for (;;) {
        fdi_lock(fd);
        int stopping = g->stopping;
        if (stopping)
            queue_close(c, 1001, "Server stopping.");
        int closing = c->closing;
        fdi_unlock(fd);
        int f = flush(c);
        /* On stop the close frame is sent but its answer not awaited (RFC
         * 6455 lets the server end TCP first): stop stays prompt. */
        if (f < 0 || client_closed || stopping)
            break;
        if (closing && !close_deadline)
            close_deadline = now_ms() + GW_IO_TIMEOUT_MS;
        int64_t wait = 1000;
        if (close_deadline) {
            wait = close_deadline - now_ms();
            if (wait <= 0)
                break;
        }
        struct pollfd pf[2] = {{c->sock, POLLIN, 0}, {c->efd, POLLIN, 0}};
        if (poll(pf, 2, (int)wait) < 0 && errno != EINTR)
            break;
        if (pf[1].revents & POLLIN) {
            uint64_t v;
            ssize_t r = read(c->efd, &v, sizeof v);
            (void)r;
        }
        if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (c->in_cap - c->in_len < 4096) {
                size_t cap = c->in_cap ? c->in_cap * 2 : 8192;
                if (cap > 4 * GW_MAX_MESSAGE)
                    cap = 4 * GW_MAX_MESSAGE;
                uint8_t *ni = cap > c->in_cap ? realloc(c->in, cap) : NULL;
                if (ni) {
                    c->in = ni;
                    c->in_cap = cap;
                }
            }
            if (c->in_cap == c->in_len)
                break; /* cannot happen with the bound above; do not spin */
            ssize_t r = recv(c->sock, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                break;
            if (r > 0) {
                c->in_len += (size_t)r;
                client_closed = consume(c, &msg, &msg_len, &msg_op);
            }
        }
    }
    free(msg);
    fdi_lock(fd);
    if (c->sess && c->sess->conn == c)
        c->sess->conn = NULL;
    c->sess = NULL;
    c->identified = 0;
    c->done = 1;
    while (c->out_head) {
        gw_out *n = c->out_head->next;
        free(c->out_head->buf);
        free(c->out_head);
        c->out_head = n;
    }
    c->out_tail = NULL;
    fdi_changed(fd);
    fdi_unlock(fd);
    /* Hands the socket back to MHD, which closes it. */
    MHD_upgrade_action(c->urh, MHD_UPGRADE_ACTION_CLOSE);
    return NULL;
}

static void conn_free(gw_conn *c)
{
    if (c->efd >= 0)
        close(c->efd);
    free(c->in);
    free(c);
}

/* Join and free connections whose thread ended. Without the lock. */
static void reap(fd_gateway *g, int all)
{
    for (;;) {
        fdi_lock(g->fd);
        gw_conn **pp = &g->conns, *c = NULL;
        while (*pp && !((*pp)->done || all))
            pp = &(*pp)->next;
        if (*pp) {
            c = *pp;
            *pp = c->next;
        }
        fdi_unlock(g->fd);
        if (!c)
            return;
        pthread_join(c->thread, NULL);
        conn_free(c);
    }
}

static void on_upgraded(void *cls, struct MHD_Connection *connection, void *con_cls,
                        const char *extra_in, size_t extra_in_size, MHD_socket sock,
                        struct MHD_UpgradeResponseHandle *urh)
{
    (void)connection;
    (void)con_cls;
    fd_gateway *g = cls;
    gw_conn *c = calloc(1, sizeof *c);
    if (c) {
        c->g = g;
        c->sock = sock;
        c->urh = urh;
        c->connected_ms = now_ms();
        c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (extra_in_size && (c->in = malloc(extra_in_size + 8192))) {
            memcpy(c->in, extra_in, extra_in_size);
            c->in_len = extra_in_size;
            c->in_cap = extra_in_size + 8192;
        }
    }
    if (!c || c->efd < 0 || (extra_in_size && !c->in)) {
        if (c) {
            if (c->efd >= 0)
                close(c->efd);
            free(c->in);
            free(c);
        }
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        return;
    }
    fdi_lock(g->fd);
    int stopping = g->stopping;
    int ok = !stopping && pthread_create(&c->thread, NULL, conn_main, c) == 0;
    if (ok) {
        c->next = g->conns;
        g->conns = c;
        fdi_changed(g->fd);
    }
    fdi_unlock(g->fd);
    if (!ok) {
        /* Upgraded just as stop began: say so as every other socket hears. */
        static const uint8_t bye[] = {0x88, 0x02, 0x03, 0xE9}; /* close 1001 */
        if (stopping)
            write_all(sock, bye, sizeof bye);
        conn_free(c);
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
    }
}

/* ---- public (internal) API ----------------------------------------------------------- */

static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, const char *why)
{
    char *body = NULL;
    if (asprintf(&body, "{\"message\":\"fake-discord gateway: %s\",\"code\":0}", why) < 0)
        return MHD_NO;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result fdg_upgrade(fd_gateway *g, struct MHD_Connection *c)
{
    reap(g, 0);
    const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Key");
    const char *ver = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Version");
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "v");
    const char *enc = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "encoding");
    const char *comp = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "compress");
    if (!key || !ver || strcmp(ver, "13") != 0)
        return refuse(c, 400, "need Sec-WebSocket-Key and Sec-WebSocket-Version 13");
    if (v && strcmp(v, "10") != 0)
        return refuse(c, 400, "only gateway version v=10 is served");
    if (enc && strcmp(enc, "json") != 0)
        return refuse(c, 400, "only encoding=json is served (no etf)");
    if (comp)
        return refuse(c, 400, "compression (compress=...) is not supported; connect without it");
    char accept[29];
    ws_accept_key(key, accept);
    struct MHD_Response *r = MHD_create_response_for_upgrade(on_upgraded, g);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_UPGRADE, "websocket");
    MHD_add_response_header(r, "Sec-WebSocket-Accept", accept);
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, r);
    MHD_destroy_response(r);
    return ret;
}

fd_gateway *fdg_new(fake_discord *fd, long heartbeat_ms)
{
    fd_gateway *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->fd = fd;
    g->heartbeat_ms = heartbeat_ms > 0 ? heartbeat_ms : 41250;
    return g;
}

void fdg_shutdown(fd_gateway *g)
{
    if (!g)
        return;
    fdi_lock(g->fd);
    g->stopping = 1;
    for (gw_conn *c = g->conns; c; c = c->next)
        wake(c);
    fdi_unlock(g->fd);
    reap(g, 1);
}

void fdg_free(fd_gateway *g)
{
    if (!g)
        return;
    while (g->sessions) {
        gw_session *s = g->sessions;
        g->sessions = s->next;
        for (size_t i = 0; i < s->n_hist; i++)
            free(s->hist[(s->first + i) % GW_HISTORY].text);
        free(s->hist);
        free(s);
    }
    free(g);
}

void fdg_dispatch(fd_gateway *g, const char *t, json_t *d, const char *channel_id)
{
    if (!g)
        return;
    for (gw_session *s = g->sessions; s; s = s->next)
        if (!channel_id || fdi_can_view(g->fd, channel_id, s->user))
            session_send(s, t, d);
}

json_t *fdg_sessions(fd_gateway *g)
{
    json_t *arr = json_array();
    for (gw_conn *c = g ? g->conns : NULL; c; c = c->next) {
        if (c->done)
            continue;
        gw_session *s = c->sess;
        json_t *o =
            json_pack("{s:s?, s:s?, s:I, s:b, s:I}", "userId", s ? s->user : NULL, "sessionId",
                      s ? s->id : NULL, "seq", (json_int_t)(s ? s->seq : 0), "identified",
                      c->identified, "connectedAtMs", (json_int_t)c->connected_ms);
        if (o && !s) {
            json_object_set_new(o, "userId", json_null());
            json_object_set_new(o, "sessionId", json_null());
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

size_t fdg_identified(fd_gateway *g)
{
    size_t n = 0;
    for (gw_conn *c = g ? g->conns : NULL; c; c = c->next)
        n += !c->done && c->identified;
    return n;
}
