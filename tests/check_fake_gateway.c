/*
 * check_fake_gateway.c -- the fake Discord's gateway websocket: the
 * handshake, HELLO/IDENTIFY/READY/GUILD_CREATE, heartbeats, close codes,
 * MESSAGE_CREATE fan-out by visibility, RESUME, frame rules, threads, the
 * REST routes a gateway client needs, and a prompt stop with clients on.
 * Every wait is bounded; nothing depends on timing beyond those bounds.
 */
#include <check.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_discord.h"
#include "testutil.h"
#include "ws_client.h"
#include "ws_frame.h"

#define TOK_A "tok-gw-a"
#define TOK_B "tok-gw-b"
#define BOT_A "300000000000000001"
#define BOT_B "300000000000000002"
#define HUMAN "400000000000000001"
#define WAIT_MS 5000

typedef struct hres {
    long status;
    char *body;
    size_t len;
} hres;

static size_t grab(char *p, size_t sz, size_t n, void *ud)
{
    hres *r = ud;
    char *nb = realloc(r->body, r->len + sz * n + 1);
    if (!nb)
        return 0;
    memcpy(nb + r->len, p, sz * n);
    r->len += sz * n;
    nb[r->len] = '\0';
    r->body = nb;
    return sz * n;
}

/* One request to http://127.0.0.1:PORT<path>; token NULL: none. The
 * caller frees .body. */
static hres req(fake_discord *fd, const char *method, const char *path, const char *token,
                const char *body)
{
    hres r = {0, NULL, 0};
    char url[512], auth[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", fake_discord_port(fd), path);
    CURL *c = curl_easy_init();
    ck_assert_ptr_nonnull(c);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bot %s", token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, grab);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode cc = curl_easy_perform(c);
    ck_assert_msg(cc == CURLE_OK, "%s %s: curl %d", method, path, cc);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return r;
}

/* A request expected to answer status; returns its JSON body (NULL when
 * empty), a NEW reference. */
static json_t *req_json(fake_discord *fd, const char *method, const char *path, const char *token,
                        const char *body, long status)
{
    hres r = req(fd, method, path, token, body);
    ck_assert_msg(r.status == status, "%s %s: want %ld got %ld: %s", method, path, status, r.status,
                  r.body ? r.body : "");
    json_t *j = r.len ? tu_json(r.body) : NULL;
    free(r.body);
    return j;
}

static fake_discord *start(long heartbeat_ms, char *chan)
{
    fake_discord_options o;
    memset(&o, 0, sizeof o);
    o.heartbeat_ms = heartbeat_ms;
    fake_discord *fd = NULL;
    char err[200];
    ck_assert_msg(fake_discord_start(&o, &fd, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(fake_discord_add_user(fd, TOK_A, BOT_A, "alpha", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(fd, TOK_B, BOT_B, "beta", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(fd, NULL, HUMAN, "alice", 0), 0);
    ck_assert_int_eq(fake_discord_add_channel(fd, NULL, "general", chan), 0);
    return fd;
}

static ws_client *connect_ws(fake_discord *fd)
{
    int st = 0;
    ws_client *c = ws_client_connect(fake_discord_port(fd), "/?v=10&encoding=json", WAIT_MS, &st);
    ck_assert_msg(c != NULL, "websocket handshake failed (HTTP %d)", st);
    return c;
}

/* Connect, take HELLO, identify with token, take READY and GUILD_CREATE.
 * The READY payload goes to *ready (NEW, may be NULL to drop it). */
static ws_client *bot_online(fake_discord *fd, const char *token, json_t **ready)
{
    ws_client *c = connect_ws(fd);
    json_t *hello = ws_client_next_json(c, WAIT_MS, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(hello, "op")), 10);
    json_decref(hello);
    json_t *id = json_pack("{s:i, s:{s:s, s:i, s:{s:s}}}", "op", 2, "d", "token", token, "intents",
                           33281, "properties", "os", "linux");
    ck_assert_int_eq(ws_client_send_json(c, id), 0);
    json_decref(id);
    json_t *r = ws_client_wait_dispatch(c, "READY", WAIT_MS);
    ck_assert_msg(r != NULL, "no READY");
    json_t *g = ws_client_wait_dispatch(c, "GUILD_CREATE", WAIT_MS);
    ck_assert_msg(g != NULL, "no GUILD_CREATE");
    json_decref(g);
    if (ready)
        *ready = r;
    else
        json_decref(r);
    return c;
}

START_TEST(hello_identify_ready_heartbeat)
{
    char chan[24];
    fake_discord *fd = start(750, chan);
    ws_client *c = connect_ws(fd);
    json_t *hello = ws_client_next_json(c, WAIT_MS, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(hello, "op")), 10);
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(hello, "d"), "heartbeat_interval")),
        750);
    json_decref(hello);
    ck_assert_int_eq(ws_client_send(c, 1, WS_OP_TEXT, "{\"op\":1,\"d\":null}", 17), 0);
    json_t *ack = ws_client_next_json(c, WAIT_MS, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(ack, "op")), 11);
    json_decref(ack);

    json_t *id = json_pack("{s:i, s:{s:s, s:i}}", "op", 2, "d", "token", TOK_A, "intents", 0);
    ws_client_send_json(c, id);
    json_decref(id);
    json_t *ready = ws_client_next_json(c, WAIT_MS, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(ready, "t")), "READY");
    ck_assert_int_eq(json_integer_value(json_object_get(ready, "s")), 1);
    json_t *d = json_object_get(ready, "d");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "v")), 10);
    json_t *user = json_object_get(d, "user");
    ck_assert_str_eq(json_string_value(json_object_get(user, "id")), BOT_A);
    ck_assert_str_eq(json_string_value(json_object_get(user, "username")), "alpha");
    ck_assert(json_is_true(json_object_get(user, "bot")));
    ck_assert_str_eq(json_string_value(json_object_get(user, "discriminator")), "0");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "application"), "id")),
                     BOT_A);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_array_get(json_object_get(d, "guilds"), 0), "id")),
        fake_discord_guild_id(fd));
    char want[64];
    snprintf(want, sizeof want, "ws://127.0.0.1:%d", fake_discord_port(fd));
    ck_assert_str_eq(json_string_value(json_object_get(d, "resume_gateway_url")), want);
    const char *sid = json_string_value(json_object_get(d, "session_id"));
    ck_assert(sid && strlen(sid) >= 16);

    json_t *gc = ws_client_next_json(c, WAIT_MS, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(gc, "t")), "GUILD_CREATE");
    ck_assert_int_eq(json_integer_value(json_object_get(gc, "s")), 2);
    json_t *g = json_object_get(gc, "d");
    ck_assert_str_eq(json_string_value(json_object_get(g, "id")), fake_discord_guild_id(fd));
    ck_assert(json_is_false(json_object_get(g, "unavailable")));
    ck_assert_str_eq(
        json_string_value(json_object_get(json_array_get(json_object_get(g, "channels"), 0), "id")),
        chan);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_array_get(json_object_get(g, "roles"), 0), "id")),
        fake_discord_guild_id(fd));
    ck_assert_int_eq(json_array_size(json_object_get(g, "members")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(g, "member_count")), 3);
    ck_assert(json_is_array(json_object_get(g, "voice_states")));
    ck_assert(json_is_array(json_object_get(g, "threads")));

    ck_assert_int_eq(fake_discord_wait_gateway(fd, 1, WAIT_MS), 0);
    json_t *ss = fake_discord_gateway_sessions(fd);
    ck_assert_int_eq(json_array_size(ss), 1);
    json_t *s0 = json_array_get(ss, 0);
    ck_assert_str_eq(json_string_value(json_object_get(s0, "userId")), BOT_A);
    ck_assert_str_eq(json_string_value(json_object_get(s0, "sessionId")), sid);
    ck_assert(json_is_true(json_object_get(s0, "identified")));
    ck_assert_int_eq(json_integer_value(json_object_get(s0, "seq")), 2);
    json_decref(ss);
    json_t *ctl = req_json(fd, "GET", "/_fake/gateway", NULL, NULL, 200);
    ck_assert_int_eq(json_array_size(ctl), 1);
    json_decref(ctl);

    /* A second IDENTIFY on the same socket is refused. */
    id = json_pack("{s:i, s:{s:s}}", "op", 2, "d", "token", TOK_A);
    ws_client_send_json(c, id);
    json_decref(id);
    int code = 0;
    ck_assert_ptr_null(ws_client_next_json(c, WAIT_MS, &code));
    ck_assert_int_eq(code, 4005);
    json_decref(ready);
    json_decref(gc);
    ws_client_close(c);
    fake_discord_stop(fd);
}
END_TEST

START_TEST(close_codes)
{
    char chan[24];
    fake_discord *fd = start(0, chan);
    struct {
        const char *send;
        int code;
    } cases[] = {
        {"{\"op\":2,\"d\":{\"token\":\"nope\"}}", 4004},
        {"{\"op\":3,\"d\":{}}", 4003},
        {"not json", 4002},
    };
    for (size_t i = 0; i < 3; i++) {
        ws_client *c = connect_ws(fd);
        json_t *hello = ws_client_next_json(c, WAIT_MS, NULL);
        ck_assert_ptr_nonnull(hello);
        json_decref(hello);
        ws_client_send(c, 1, WS_OP_TEXT, cases[i].send, strlen(cases[i].send));
        int code = 0;
        json_t *j;
        while ((j = ws_client_next_json(c, WAIT_MS, &code)))
            json_decref(j);
        ck_assert_msg(code == cases[i].code, "%s: want close %d got %d", cases[i].send,
                      cases[i].code, code);
        ws_client_close(c);
    }
    /* Unknown opcode after IDENTIFY. */
    ws_client *c = bot_online(fd, TOK_A, NULL);
    ws_client_send(c, 1, WS_OP_TEXT, "{\"op\":77}", 9);
    int code = 0;
    ck_assert_ptr_null(ws_client_next_json(c, WAIT_MS, &code));
    ck_assert_int_eq(code, 4001);
    ws_client_close(c);
    /* What the fake does not serve is refused at the handshake. */
    int st = 0;
    ck_assert_ptr_null(ws_client_connect(
        fake_discord_port(fd), "/?v=10&encoding=json&compress=zlib-stream", WAIT_MS, &st));
    ck_assert_int_eq(st, 400);
    ck_assert_ptr_null(ws_client_connect(fake_discord_port(fd), "/?v=9", WAIT_MS, &st));
    ck_assert_int_eq(st, 400);
    fake_discord_stop(fd);
}
END_TEST

START_TEST(messages_fan_out_to_every_bot_that_sees_them)
{
    char chan[24];
    fake_discord *fd = start(0, chan);
    ws_client *a = bot_online(fd, TOK_A, NULL);
    ws_client *b = bot_online(fd, TOK_B, NULL);
    ck_assert_int_eq(fake_discord_wait_gateway(fd, 2, WAIT_MS), 0);

    /* A posts over REST: both get it, A's own connection included. */
    char path[96], body[256];
    snprintf(path, sizeof path, "/api/v10/channels/%s/messages", chan);
    snprintf(body, sizeof body, "{\"content\":\"hello <@!%s>\",\"nonce\":\"n-1\"}", BOT_B);
    json_t *posted = req_json(fd, "POST", path, TOK_A, body, 200);
    ws_client *both[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        json_t *m = ws_client_wait_dispatch(both[i], "MESSAGE_CREATE", WAIT_MS);
        ck_assert_msg(m != NULL, "bot %d: no MESSAGE_CREATE", i);
        json_t *d = json_object_get(m, "d");
        ck_assert_str_eq(json_string_value(json_object_get(d, "id")),
                         json_string_value(json_object_get(posted, "id")));
        ck_assert_str_eq(json_string_value(json_object_get(d, "channel_id")), chan);
        ck_assert_str_eq(json_string_value(json_object_get(d, "guild_id")),
                         fake_discord_guild_id(fd));
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "author"), "id")),
                         BOT_A);
        ck_assert(json_is_true(json_object_get(json_object_get(d, "author"), "bot")));
        ck_assert_str_eq(json_string_value(json_object_get(d, "nonce")), "n-1");
        ck_assert(json_is_null(json_object_get(d, "edited_timestamp")));
        ck_assert(json_is_array(json_object_get(json_object_get(d, "member"), "roles")));
        json_t *men = json_object_get(d, "mentions");
        ck_assert_int_eq(json_array_size(men), 1);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(men, 0), "id")), BOT_B);
        json_decref(m);
    }
    json_decref(posted);

    /* A human message injected with explicit mentions. */
    json_t *inj = req_json(fd, "POST", "/_fake/messages", NULL, "{\"channelId\":\"", 400);
    json_decref(inj);
    snprintf(body, sizeof body,
             "{\"channelId\":\"%s\",\"authorId\":\"%s\",\"content\":\"hi all\","
             "\"mentions\":[\"%s\",\"%s\"]}",
             chan, HUMAN, BOT_A, BOT_B);
    inj = req_json(fd, "POST", "/_fake/messages", NULL, body, 200);
    json_decref(inj);
    for (int i = 0; i < 2; i++) {
        json_t *m = ws_client_wait_dispatch(both[i], "MESSAGE_CREATE", WAIT_MS);
        ck_assert_ptr_nonnull(m);
        json_t *d = json_object_get(m, "d");
        ck_assert_str_eq(
            json_string_value(json_object_get(json_object_get(d, "author"), "username")), "alice");
        ck_assert(json_is_false(json_object_get(json_object_get(d, "author"), "bot")));
        ck_assert_int_eq(json_array_size(json_object_get(d, "mentions")), 2);
        json_decref(m);
    }

    /* A private channel (A only): CHANNEL_CREATE and its messages reach A,
     * never B. B's next MESSAGE_CREATE is the public one posted after. */
    snprintf(path, sizeof path, "/api/v10/guilds/%s/channels", fake_discord_guild_id(fd));
    snprintf(body, sizeof body,
             "{\"name\":\"secret\",\"permission_overwrites\":[{\"id\":\"%s\",\"type\":0,"
             "\"allow\":\"0\",\"deny\":\"1024\"},{\"id\":\"%s\",\"type\":1,\"allow\":\"3072\","
             "\"deny\":\"0\"}]}",
             fake_discord_guild_id(fd), BOT_A);
    json_t *priv = req_json(fd, "POST", path, TOK_A, body, 201);
    const char *pid = json_string_value(json_object_get(priv, "id"));
    json_t *cc = ws_client_wait_dispatch(a, "CHANNEL_CREATE", WAIT_MS);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(cc, "d"), "id")), pid);
    json_decref(cc);
    snprintf(path, sizeof path, "/api/v10/channels/%s/messages", pid);
    json_decref(req_json(fd, "POST", path, TOK_A, "{\"content\":\"private\"}", 200));
    snprintf(path, sizeof path, "/api/v10/channels/%s/messages", chan);
    json_decref(req_json(fd, "POST", path, TOK_A, "{\"content\":\"public\"}", 200));
    json_t *ma = ws_client_wait_dispatch(a, "MESSAGE_CREATE", WAIT_MS);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ma, "d"), "content")),
                     "private");
    json_decref(ma);
    json_t *mb = ws_client_next_json(b, WAIT_MS, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(mb, "t")), "MESSAGE_CREATE");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(mb, "d"), "content")),
                     "public");
    json_decref(mb);

    /* Deleting it tells A only, too. */
    snprintf(path, sizeof path, "/api/v10/channels/%s", pid);
    json_decref(req_json(fd, "DELETE", path, TOK_A, NULL, 200));
    json_t *cd = ws_client_wait_dispatch(a, "CHANNEL_DELETE", WAIT_MS);
    ck_assert_ptr_nonnull(cd);
    json_decref(cd);
    json_decref(priv);
    ws_client_close(a);
    ws_client_close(b);
    fake_discord_stop(fd);
}
END_TEST

START_TEST(resume_replays_missed_dispatches)
{
    char chan[24];
    fake_discord *fd = start(0, chan);
    json_t *ready = NULL;
    ws_client *a = bot_online(fd, TOK_A, &ready);
    char sid[64];
    snprintf(sid, sizeof sid, "%s",
             json_string_value(json_object_get(json_object_get(ready, "d"), "session_id")));
    json_decref(ready);
    ws_client_close(a); /* seq 2 seen (READY, GUILD_CREATE) */
    char id1[24], id2[24];
    ck_assert_int_eq(fake_discord_inject_message(fd, chan, HUMAN, "missed one", id1), 0);
    ck_assert_int_eq(fake_discord_inject(fd, chan, HUMAN, "missed two", NULL, id2), 0);

    a = connect_ws(fd);
    json_decref(ws_client_next_json(a, WAIT_MS, NULL)); /* HELLO */
    json_t *res = json_pack("{s:i, s:{s:s, s:s, s:i}}", "op", 6, "d", "token", TOK_A, "session_id",
                            sid, "seq", 2);
    ws_client_send_json(a, res);
    json_decref(res);
    const char *want[] = {id1, id2};
    for (int i = 0; i < 2; i++) {
        json_t *m = ws_client_next_json(a, WAIT_MS, NULL);
        ck_assert_str_eq(json_string_value(json_object_get(m, "t")), "MESSAGE_CREATE");
        ck_assert_int_eq(json_integer_value(json_object_get(m, "s")), 3 + i);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "d"), "id")),
                         want[i]);
        json_decref(m);
    }
    json_t *r = ws_client_next_json(a, WAIT_MS, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(r, "t")), "RESUMED");
    json_decref(r);
    ck_assert_int_eq(fake_discord_wait_gateway(fd, 1, WAIT_MS), 0);
    /* Live again: new messages flow. */
    fake_discord_inject_message(fd, chan, HUMAN, "live", NULL);
    json_t *m = ws_client_wait_dispatch(a, "MESSAGE_CREATE", WAIT_MS);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "d"), "content")),
                     "live");
    json_decref(m);
    ws_client_close(a);

    /* An unknown session, or a known one with another bot's token: op 9. */
    const char *bad[][2] = {{TOK_A, "00000000deadbeef"}, {TOK_B, sid}};
    for (int i = 0; i < 2; i++) {
        ws_client *c = connect_ws(fd);
        json_decref(ws_client_next_json(c, WAIT_MS, NULL));
        res = json_pack("{s:i, s:{s:s, s:s, s:i}}", "op", 6, "d", "token", bad[i][0], "session_id",
                        bad[i][1], "seq", 1);
        ws_client_send_json(c, res);
        json_decref(res);
        json_t *inv = ws_client_next_json(c, WAIT_MS, NULL);
        ck_assert_int_eq(json_integer_value(json_object_get(inv, "op")), 9);
        ck_assert(json_is_false(json_object_get(inv, "d")));
        json_decref(inv);
        ws_client_close(c);
    }
    fake_discord_stop(fd);
}
END_TEST

START_TEST(frames_fragments_ping_close_and_limits)
{
    char chan[24];
    fake_discord *fd = start(0, chan);
    ws_client *c = connect_ws(fd);
    json_decref(ws_client_next_json(c, WAIT_MS, NULL));
    /* IDENTIFY in three fragments with a ping between them. */
    const char *msg = "{\"op\":2,\"d\":{\"token\":\"" TOK_A "\"}}";
    size_t n = strlen(msg);
    ck_assert_int_eq(ws_client_send(c, 0, WS_OP_TEXT, msg, 5), 0);
    ck_assert_int_eq(ws_client_send(c, 1, WS_OP_PING, "png", 3), 0);
    ck_assert_int_eq(ws_client_send(c, 0, WS_OP_CONT, msg + 5, 10), 0);
    ck_assert_int_eq(ws_client_send(c, 1, WS_OP_CONT, msg + 15, n - 15), 0);
    char *p;
    size_t len;
    ck_assert_int_eq(ws_client_read(c, WAIT_MS, &p, &len), WS_OP_PONG);
    ck_assert_int_eq(len, 3);
    ck_assert(!memcmp(p, "png", 3));
    free(p);
    json_t *r = ws_client_wait_dispatch(c, "READY", WAIT_MS);
    ck_assert_ptr_nonnull(r);
    json_decref(r);
    /* The close handshake: our 1000 is echoed, then the server hangs up. */
    ck_assert_int_eq(ws_client_send(c, 1, WS_OP_CLOSE, "\x03\xe8", 2), 0);
    int op;
    while ((op = ws_client_read(c, WAIT_MS, &p, &len)) == WS_OP_TEXT)
        free(p);
    ck_assert_int_eq(op, WS_OP_CLOSE);
    ck_assert_int_eq(((unsigned char)p[0] << 8) | (unsigned char)p[1], 1000);
    free(p);
    ck_assert_int_eq(ws_client_read(c, WAIT_MS, &p, &len), -2);
    ws_client_close(c);

    /* Too big: 1009. */
    c = connect_ws(fd);
    json_decref(ws_client_next_json(c, WAIT_MS, NULL));
    size_t big = 70000;
    char *blob = malloc(big);
    ck_assert_ptr_nonnull(blob);
    memset(blob, ' ', big);
    ws_client_send(c, 1, WS_OP_TEXT, blob, big);
    free(blob);
    int code = 0;
    ck_assert_ptr_null(ws_client_next_json(c, WAIT_MS, &code));
    ck_assert_int_eq(code, 1009);
    ws_client_close(c);
    fake_discord_stop(fd);
}
END_TEST

START_TEST(threads_and_client_routes)
{
    char chan[24];
    fake_discord *fd = start(0, chan);
    ws_client *a = bot_online(fd, TOK_A, NULL);
    char path[160];
    /* A thread from a message: id = the message's, THREAD_CREATE, and
     * messages in it carry the thread as channel_id. */
    char mid[24];
    ck_assert_int_eq(fake_discord_inject_message(fd, chan, HUMAN, "start here", mid), 0);
    json_decref(ws_client_wait_dispatch(a, "MESSAGE_CREATE", WAIT_MS));
    snprintf(path, sizeof path, "/api/v10/channels/%s/messages/%s/threads", chan, mid);
    json_t *t = req_json(fd, "POST", path, TOK_A, "{\"name\":\"topic\"}", 201);
    ck_assert_str_eq(json_string_value(json_object_get(t, "id")), mid);
    ck_assert_int_eq(json_integer_value(json_object_get(t, "type")), 11);
    ck_assert_str_eq(json_string_value(json_object_get(t, "parent_id")), chan);
    json_decref(t);
    json_t *tc = ws_client_wait_dispatch(a, "THREAD_CREATE", WAIT_MS);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(tc, "d"), "id")), mid);
    json_decref(tc);
    snprintf(path, sizeof path, "/api/v10/channels/%s/messages", mid);
    json_t *own = req_json(fd, "POST", path, TOK_A, "{\"content\":\"in thread\"}", 200);
    json_t *m = ws_client_wait_dispatch(a, "MESSAGE_CREATE", WAIT_MS);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "d"), "channel_id")),
                     mid);
    json_decref(m);
    /* Edit the own message, not another's; delete it. */
    snprintf(path, sizeof path, "/api/v10/channels/%s/messages/%s", mid,
             json_string_value(json_object_get(own, "id")));
    json_t *ed = req_json(fd, "PATCH", path, TOK_A, "{\"content\":\"edited\"}", 200);
    ck_assert(json_is_string(json_object_get(ed, "edited_timestamp")));
    json_decref(ed);
    m = ws_client_wait_dispatch(a, "MESSAGE_UPDATE", WAIT_MS);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "d"), "content")),
                     "edited");
    json_decref(m);
    ck_assert_ptr_null(req_json(fd, "DELETE", path, TOK_A, NULL, 204));
    m = ws_client_wait_dispatch(a, "MESSAGE_DELETE", WAIT_MS);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "d"), "id")),
                     json_string_value(json_object_get(own, "id")));
    json_decref(m);
    json_decref(own);
    json_decref(req_json(fd, "GET", path, TOK_A, NULL, 404));
    snprintf(path, sizeof path, "/api/v10/channels/%s/messages/%s", chan, mid);
    json_t *e5 = req_json(fd, "PATCH", path, TOK_A, "{\"content\":\"x\"}", 403);
    ck_assert_int_eq(json_integer_value(json_object_get(e5, "code")), 50005);
    json_decref(e5);
    /* A standalone thread over REST, one over the control API with a message. */
    snprintf(path, sizeof path, "/api/v10/channels/%s/threads", chan);
    t = req_json(fd, "POST", path, TOK_A, "{\"name\":\"side\",\"type\":11}", 201);
    json_decref(t);
    json_decref(req_json(fd, "POST", path, TOK_A, "{\"name\":\"\"}", 400));
    char body[256];
    snprintf(body, sizeof body,
             "{\"channelId\":\"%s\",\"authorId\":\"%s\",\"content\":\"q\",\"createThread\":\"qq\"}",
             chan, HUMAN);
    json_t *inj = req_json(fd, "POST", "/_fake/messages", NULL, body, 200);
    const char *tid = json_string_value(json_object_get(json_object_get(inj, "thread"), "id"));
    ck_assert_str_eq(tid, json_string_value(json_object_get(inj, "id")));
    snprintf(body, sizeof body, "{\"threadId\":\"%s\",\"authorId\":\"%s\",\"content\":\"reply\"}",
             tid, HUMAN);
    json_decref(req_json(fd, "POST", "/_fake/messages", NULL, body, 200));
    ck_assert_int_eq(fake_discord_message_count(fd, tid), 1);
    json_decref(inj);

    /* The routes a gateway client calls. */
    json_t *gb = req_json(fd, "GET", "/api/v10/gateway/bot", TOK_A, NULL, 200);
    char want[64];
    snprintf(want, sizeof want, "ws://127.0.0.1:%d", fake_discord_port(fd));
    ck_assert_str_eq(json_string_value(json_object_get(gb, "url")), want);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(gb, "session_start_limit"),
                                                        "max_concurrency")),
                     1);
    json_decref(gb);
    json_decref(req_json(fd, "GET", "/api/v10/gateway/bot", NULL, NULL, 401));
    json_t *me = req_json(fd, "GET", "/api/v10/users/%40me", TOK_B, NULL, 200);
    ck_assert_str_eq(json_string_value(json_object_get(me, "id")), BOT_B);
    json_decref(me);
    json_t *app = req_json(fd, "GET", "/api/v10/oauth2/applications/@me", TOK_A, NULL, 200);
    ck_assert_str_eq(json_string_value(json_object_get(app, "id")), BOT_A);
    json_decref(app);
    snprintf(path, sizeof path, "/api/v10/applications/%s/commands", BOT_A);
    json_t *cmds = req_json(fd, "GET", path, TOK_A, NULL, 200);
    ck_assert_int_eq(json_array_size(cmds), 0);
    json_decref(cmds);
    cmds = req_json(fd, "PUT", path, TOK_A, "[{\"name\":\"ask\",\"description\":\"d\"}]", 200);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(cmds, 0), "application_id")),
                     BOT_A);
    json_decref(cmds);
    cmds = req_json(fd, "GET", path, TOK_A, NULL, 200);
    ck_assert_int_eq(json_array_size(cmds), 1);
    json_decref(cmds);
    snprintf(path, sizeof path, "/api/v10/guilds/%s", fake_discord_guild_id(fd));
    json_t *g = req_json(fd, "GET", path, TOK_A, NULL, 200);
    ck_assert_str_eq(json_string_value(json_object_get(g, "name")), "Fake Guild");
    json_decref(g);
    snprintf(path, sizeof path, "/api/v10/guilds/%s/members/%s", fake_discord_guild_id(fd), HUMAN);
    json_t *mem = req_json(fd, "GET", path, TOK_A, NULL, 200);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(mem, "user"), "username")),
                     "alice");
    json_decref(mem);
    snprintf(path, sizeof path, "/api/v10/channels/%s/messages/%s", chan, mid);
    json_t *one = req_json(fd, "GET", path, TOK_A, NULL, 200);
    ck_assert_str_eq(json_string_value(json_object_get(one, "content")), "start here");
    json_decref(one);
    snprintf(path, sizeof path, "/api/v10/channels/%s/messages/123", chan);
    json_t *e = req_json(fd, "GET", path, TOK_A, NULL, 404);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "code")), 10008);
    json_decref(e);
    snprintf(path, sizeof path, "/api/v10/channels/%s/typing", chan);
    ck_assert_ptr_null(req_json(fd, "POST", path, TOK_A, NULL, 204));
    snprintf(path, sizeof path, "/api/v10/channels/%s/messages/%s/reactions/%%F0%%9F%%91%%80/@me",
             chan, mid);
    ck_assert_ptr_null(req_json(fd, "PUT", path, TOK_A, NULL, 204));
    /* Unknown routes: Discord's 404 shape, and recorded. */
    fake_discord_clear_requests(fd);
    e = req_json(fd, "GET", "/api/v10/no/such/route", TOK_A, NULL, 404);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "code")), 0);
    json_decref(e);
    json_t *recs = fake_discord_requests(fd, 0);
    ck_assert_int_eq(json_array_size(recs), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(recs, 0), "status")), 404);
    json_decref(recs);
    ws_client_close(a);
    fake_discord_stop(fd);
}
END_TEST

START_TEST(stop_with_clients_connected_is_prompt)
{
    char chan[24];
    fake_discord *fd = start(0, chan);
    ws_client *c[3];
    c[0] = bot_online(fd, TOK_A, NULL);
    c[1] = bot_online(fd, TOK_B, NULL);
    c[2] = connect_ws(fd); /* never identifies */
    json_t *hello = ws_client_next_json(c[2], WAIT_MS, NULL);
    ck_assert_ptr_nonnull(hello);
    json_decref(hello);
    ck_assert_int_eq(fake_discord_wait_gateway(fd, 2, WAIT_MS), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fake_discord_stop(fd);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    /* The close frames go out, their answers are not awaited: no client
     * can hold stop up (generous bound for valgrind and a loaded box). */
    ck_assert_msg(ms < 1500, "stop took %ld ms", ms);
    for (int i = 0; i < 3; i++) {
        int code = 0;
        json_t *j;
        while ((j = ws_client_next_json(c[i], WAIT_MS, &code)))
            json_decref(j);
        ck_assert_int_eq(code, 1001);
        ws_client_close(c[i]);
    }
}
END_TEST

/* build/fake-discord with the gateway options: --user with a name,
 * --human, --heartbeat-ms; SIGTERM with a websocket open ends it cleanly. */
START_TEST(cli_gateway_options)
{
    char *bin = NULL;
    ck_assert_int_ge(asprintf(&bin, "%s/fake-discord", tu_build_dir()), 0);
    ck_assert_msg(access(bin, X_OK) == 0, "%s is not built", bin);
    int out[2];
    ck_assert_int_eq(pipe(out), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(out[1], 1);
        int quiet = open("/dev/null", O_WRONLY);
        dup2(quiet, 2);
        close(out[0]);
        close(out[1]);
        execl(bin, bin, "--port", "0", "--user", TOK_A "=" BOT_A "=alpha", "--human",
              HUMAN "=alice", "--heartbeat-ms", "1234", "--channel", "333333333333333333",
              (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    char line[128] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    int port = 0;
    ck_assert_int_eq(sscanf(line, "http://127.0.0.1:%d/api/v10", &port), 1);
    ws_client *c = ws_client_connect(port, "/?v=10&encoding=json", WAIT_MS, NULL);
    ck_assert_ptr_nonnull(c);
    json_t *hello = ws_client_next_json(c, WAIT_MS, NULL);
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(hello, "d"), "heartbeat_interval")),
        1234);
    json_decref(hello);
    json_t *id = json_pack("{s:i, s:{s:s}}", "op", 2, "d", "token", TOK_A);
    ws_client_send_json(c, id);
    json_decref(id);
    json_t *ready = ws_client_wait_dispatch(c, "READY", WAIT_MS);
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(ready, "d"), "user"), "username")),
                     "alpha");
    json_decref(ready);
    json_t *gc = ws_client_wait_dispatch(c, "GUILD_CREATE", WAIT_MS);
    json_t *members = json_object_get(json_object_get(gc, "d"), "members");
    int alice = 0;
    size_t i;
    json_t *m;
    json_array_foreach(members, i, m) {
        json_t *u = json_object_get(m, "user");
        alice |= !strcmp(json_string_value(json_object_get(u, "id")), HUMAN) &&
                 !strcmp(json_string_value(json_object_get(u, "username")), "alice") &&
                 json_is_false(json_object_get(u, "bot"));
    }
    ck_assert_msg(alice, "the --human member is missing from GUILD_CREATE");
    json_decref(gc);

    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    int code = 0;
    json_t *j;
    while ((j = ws_client_next_json(c, WAIT_MS, &code)))
        json_decref(j);
    ck_assert_int_eq(code, 1001);
    int status = 0;
    pid_t w = 0;
    for (int k = 0; k < 500 && (w = waitpid(pid, &status, WNOHANG)) == 0; k++)
        usleep(10000);
    if (w != pid) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        ck_abort_msg("fake-discord did not stop within 5 s of SIGTERM");
    }
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    ws_client_close(c);
    fclose(f);
    free(bin);
}
END_TEST

Suite *make_fake_gateway_suite(void)
{
    Suite *s = suite_create("fake_gateway");
    TCase *tc = tcase_create("gateway");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, hello_identify_ready_heartbeat);
    tcase_add_test(tc, close_codes);
    tcase_add_test(tc, messages_fan_out_to_every_bot_that_sees_them);
    tcase_add_test(tc, resume_replays_missed_dispatches);
    tcase_add_test(tc, frames_fragments_ping_close_and_limits);
    tcase_add_test(tc, threads_and_client_routes);
    tcase_add_test(tc, stop_with_clients_connected_is_prompt);
    tcase_add_test(tc, cli_gateway_options);
    suite_add_tcase(s, tc);
    return s;
}
