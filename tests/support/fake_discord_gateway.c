/*
 * fake_discord_gateway.c -- the Discord gateway (v10, JSON text frames, no
 * compression) of the fake Discord, on the REST port through MHD's
 * connection upgrade; the websocket itself is ws_server's (one thread per
 * connection, frames queued by any thread), this file speaks the opcodes.
 */
#include "fake_discord_gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ws_accept.h"
#include "ws_server.h"

/* Dispatches kept per session for RESUME replay (oldest dropped first). */
#define GW_HISTORY 1000
/* How long a close handshake or a blocked write may take. */
#define GW_IO_TIMEOUT_MS 2000

typedef struct gw_sent {
    long s;
    char *text;
} gw_sent;

typedef struct gw_session {
    char id[40];
    char user[24];
    long seq;
    gw_sent *hist; /* ring of GW_HISTORY */
    size_t n_hist, first;
    ws_conn *conn; /* attached websocket or NULL */
    struct gw_session *next;
} gw_session;

/* A websocket's state (its ws_conn_data; under the lock). */
typedef struct gw_conn {
    gw_session *sess;
    int identified;
} gw_conn;

struct fd_gateway {
    fake_discord *fd;
    long heartbeat_ms;
    uint64_t next_sid;
    ws_server *ws;
    gw_session *sessions;
};

static gw_conn *conn_state(ws_conn *c)
{
    return ws_conn_data(c);
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
    if (s->conn && conn_state(s->conn)->identified)
        ws_conn_send_text(s->conn, text);
}

/* ---- the protocol (locked) -------------------------------------------------------- */

static void send_ready(fd_gateway *g, ws_conn *wc, gw_session *s)
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
    conn_state(wc)->identified = 1;
    session_send(s, "READY", ready);
    json_decref(ready);
    json_t *guild = fdi_guild_create(fd);
    session_send(s, "GUILD_CREATE", guild);
    json_decref(guild);
    fdi_changed(fd);
}

static void op_identify(fd_gateway *g, ws_conn *wc, json_t *d)
{
    gw_conn *c = conn_state(wc);
    if (c->sess) {
        ws_conn_close(wc, 4005, "Already authenticated.");
        return;
    }
    const char *user = fdi_user_for_token(g->fd, json_string_value(json_object_get(d, "token")));
    if (!user) {
        ws_conn_close(wc, 4004, "Authentication failed.");
        return;
    }
    gw_session *s = calloc(1, sizeof *s);
    if (s)
        s->hist = calloc(GW_HISTORY, sizeof *s->hist);
    if (!s || !s->hist) {
        free(s);
        ws_conn_close(wc, 4000, "Unknown error.");
        return;
    }
    /* Unique within this fake; looks like Discord's 32 hex digits. */
    uint64_t n = ++g->next_sid;
    snprintf(s->id, sizeof s->id, "%016llx%016llx", (unsigned long long)(0x5eed0000ull + n),
             (unsigned long long)(n * 0x9E3779B97F4A7C15ull));
    snprintf(s->user, sizeof s->user, "%s", user);
    s->conn = wc;
    s->next = g->sessions;
    g->sessions = s;
    c->sess = s;
    send_ready(g, wc, s);
}

static void op_resume(fd_gateway *g, ws_conn *wc, json_t *d)
{
    gw_conn *c = conn_state(wc);
    const char *user = fdi_user_for_token(g->fd, json_string_value(json_object_get(d, "token")));
    const char *sid = json_string_value(json_object_get(d, "session_id"));
    long seq = (long)json_integer_value(json_object_get(d, "seq"));
    gw_session *s = g->sessions;
    while (s && !(sid && user && !strcmp(s->id, sid) && !strcmp(s->user, user)))
        s = s->next;
    if (!s || c->sess) {
        /* d:false: the session cannot be resumed, identify anew. */
        ws_conn_send_json(wc, json_pack("{s:i, s:b, s:n, s:n}", "op", 9, "d", 0, "s", "t"));
        return;
    }
    if (s->conn && s->conn != wc) {
        conn_state(s->conn)->sess = NULL;
        conn_state(s->conn)->identified = 0;
        ws_conn_close(s->conn, 4009, "Session resumed on another connection.");
    }
    s->conn = wc;
    c->sess = s;
    c->identified = 1;
    for (size_t i = 0; i < s->n_hist; i++) {
        gw_sent *e = &s->hist[(s->first + i) % GW_HISTORY];
        if (e->s > seq)
            ws_conn_send_text(wc, e->text);
    }
    json_t *empty = json_object();
    session_send(s, "RESUMED", empty);
    json_decref(empty);
    fdi_changed(g->fd);
}

/* A whole client message (text or binary: either must be a JSON payload):
 * the connection's thread, lock held (ws_server's `message`). */
static void on_message(void *ud, ws_conn *wc, int opcode, const char *text, size_t len)
{
    (void)opcode;
    fd_gateway *g = ud;
    json_t *p = json_loadb(text, len, 0, NULL);
    json_t *opv = json_object_get(p, "op");
    if (!json_is_object(p) || !json_is_integer(opv)) {
        json_decref(p);
        ws_conn_close(wc, 4002, "Error while decoding payload.");
        return;
    }
    int op = (int)json_integer_value(opv);
    json_t *d = json_object_get(p, "d");
    if (op != 1 && op != 2 && op != 6 && !conn_state(wc)->identified) {
        ws_conn_close(wc, 4003, "Not authenticated.");
    } else if (op == 1) {
        ws_conn_send_json(wc, json_pack("{s:i}", "op", 11));
    } else if (op == 2) {
        op_identify(g, wc, d);
    } else if (op == 6) {
        op_resume(g, wc, d);
    } else if (op == 3 || op == 4 || op == 8) {
        /* presence, voice state, member requests: accepted, nothing to say */
    } else {
        ws_conn_close(wc, 4001, "Unknown opcode.");
    }
    json_decref(p);
}

/* HELLO with the heartbeat interval: the connection's thread, lock held
 * (ws_server's `opened`). */
static void on_opened(void *ud, ws_conn *wc)
{
    fd_gateway *g = ud;
    char hello[96];
    snprintf(hello, sizeof hello,
             "{\"op\":10,\"d\":{\"heartbeat_interval\":%ld},\"s\":null,\"t\":null}",
             g->heartbeat_ms);
    ws_conn_send_text(wc, hello);
}

/* The session stays for a RESUME, detached (waiters hear of it from
 * ws_server's broadcast): the connection's thread, lock held (ws_server's
 * `closed`). */
static void on_closed(void *ud, ws_conn *wc)
{
    (void)ud;
    gw_conn *c = conn_state(wc);
    if (c->sess && c->sess->conn == wc)
        c->sess->conn = NULL;
    c->sess = NULL;
    c->identified = 0;
}

/* Hands the socket back to MHD, which closes it. */
static void release_upgraded(void *urh)
{
    MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

static void on_upgraded(void *cls, struct MHD_Connection *connection, void *con_cls,
                        const char *extra_in, size_t extra_in_size, MHD_socket sock,
                        struct MHD_UpgradeResponseHandle *urh)
{
    (void)connection;
    (void)con_cls;
    fd_gateway *g = cls;
    ws_server_adopt(g->ws, sock, extra_in, extra_in_size, release_upgraded, urh);
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
    ws_server_reap(g->ws);
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
    const ws_server_cbs cbs = {NULL, on_opened, on_message, on_closed};
    g->ws = ws_server_new(fdi_mutex(fd), fdi_cond(fd), &cbs, g, sizeof(gw_conn), GW_IO_TIMEOUT_MS);
    if (!g->ws) {
        free(g);
        return NULL;
    }
    return g;
}

void fdg_shutdown(fd_gateway *g)
{
    if (g)
        ws_server_shutdown(g->ws);
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
    ws_server_free(g->ws);
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
    for (ws_conn *wc = g ? ws_server_next(g->ws, NULL) : NULL; wc; wc = ws_server_next(g->ws, wc)) {
        gw_conn *c = conn_state(wc);
        gw_session *s = c->sess;
        json_t *o =
            json_pack("{s:s?, s:s?, s:I, s:b, s:I}", "userId", s ? s->user : NULL, "sessionId",
                      s ? s->id : NULL, "seq", (json_int_t)(s ? s->seq : 0), "identified",
                      c->identified, "connectedAtMs", (json_int_t)ws_conn_opened_ms(wc));
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
    for (ws_conn *wc = g ? ws_server_next(g->ws, NULL) : NULL; wc; wc = ws_server_next(g->ws, wc))
        n += conn_state(wc)->identified;
    return n;
}
