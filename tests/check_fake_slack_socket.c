/*
 * check_fake_slack_socket.c -- Socket Mode of the fake Slack
 * (fake_slack_socket.h) as @slack/socket-mode speaks it: apps.connections.open
 * and its one-time tickets, hello, events_api envelopes fanned out by channel
 * membership (message, app_mention, member_joined_channel), acks, pings,
 * disconnect, close, the control endpoints, a prompt stop, build/fake-slack;
 * and the extra methods OpenClaw's plugin calls (fake_slack_openclaw.h).
 * Loopback only; every wait is bounded.
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

#include "fake_slack.h"
#include "fake_slack_openclaw.h"
#include "fake_slack_socket.h"
#include "testutil.h"
#include "ws_client.h"
#include "ws_frame.h"

#define WAIT_MS 5000
#define CHAN "C0GENERAL1"
#define PRIV "C0SECRET01"
#define HUMAN "U0ALICE001"
/* Three bot users with an app each; C is not in CHAN. */
#define BOT_A "U0AAAAAAA1"
#define BOT_B "U0BBBBBBB2"
#define BOT_C "U0CCCCCCC3"
#define APP_A "A0AAAAAAA1"
#define APP_B "A0BBBBBBB2"
#define APP_C "A0CCCCCCC3"
#define XOXB_A "xoxb-a"
#define XOXB_B "xoxb-b"
#define XOXB_C "xoxb-c"
#define XAPP_A "xapp-1-A0AAAAAAA1-1-a"
#define XAPP_B "xapp-1-A0BBBBBBB2-1-b"
#define XAPP_C "xapp-1-A0CCCCCCC3-1-c"

typedef struct env {
    fake_slack *fs;
    fake_slack_socket *ss;
    fake_slack_openclaw *oc;
} env;

static env start(void)
{
    env e = {0};
    char err[256];
    ck_assert_msg(fake_slack_start(NULL, &e.fs, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(fake_slack_socket_start(e.fs, 0, &e.ss, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(fake_slack_openclaw_start(e.fs, &e.oc), 0);
    const char *bots[][3] = {
        {BOT_A, XOXB_A, "alpha"}, {BOT_B, XOXB_B, "beta"}, {BOT_C, XOXB_C, "gamma"}};
    for (int i = 0; i < 3; i++) {
        fake_slack_user_spec u = {
            .user_id = bots[i][0], .name = bots[i][2], .token = bots[i][1], .bot = 1};
        ck_assert_int_eq(fake_slack_add_user(e.fs, &u), 0);
    }
    fake_slack_user_spec h = {.user_id = HUMAN, .name = "alice"};
    ck_assert_int_eq(fake_slack_add_user(e.fs, &h), 0);
    ck_assert_int_eq(fake_slack_socket_add_app(e.ss, XAPP_A, APP_A, BOT_A), 0);
    ck_assert_int_eq(fake_slack_socket_add_app(e.ss, XAPP_B, APP_B, BOT_B), 0);
    ck_assert_int_eq(fake_slack_socket_add_app(e.ss, XAPP_C, APP_C, BOT_C), 0);
    ck_assert_int_eq(fake_slack_socket_add_app(e.ss, XAPP_C, APP_C, BOT_C), -1); /* twice */
    const char *members[] = {HUMAN, BOT_A, BOT_B, NULL};
    ck_assert_int_eq(fake_slack_add_channel(e.fs, CHAN, "general", 0, members, NULL), 0);
    const char *priv[] = {HUMAN, BOT_A, NULL};
    ck_assert_int_eq(fake_slack_add_channel(e.fs, PRIV, "secret", 1, priv, NULL), 0);
    return e;
}

static void stop(env *e)
{
    fake_slack_stop(e->fs);
    fake_slack_socket_stop(e->ss);
    fake_slack_openclaw_free(e->oc);
}

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

/* One HTTP request; token NULL: none, form NULL: GET. Caller frees .body. */
static hres http(const char *method, const char *url, const char *token, const char *form)
{
    hres r = {0, NULL, 0};
    char auth[128];
    CURL *c = curl_easy_init();
    ck_assert_ptr_nonnull(c);
    struct curl_slist *h = NULL;
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (form)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, form);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, grab);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode cc = curl_easy_perform(c);
    ck_assert_msg(cc == CURLE_OK, "%s %s: curl %d", method, url, cc);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return r;
}

/* A Web API call (form-encoded, as @slack/web-api sends); NEW JSON. */
static json_t *api(env *e, const char *method, const char *token, const char *form)
{
    char url[256];
    snprintf(url, sizeof url, "%s/%s", fake_slack_url(e->fs), method);
    hres r = http("POST", url, token, form ? form : "");
    ck_assert_msg(r.status == 200, "%s: HTTP %ld %s", method, r.status, r.body ? r.body : "");
    json_t *j = tu_json(r.body);
    free(r.body);
    return j;
}

/* The first line of a small file, NEW (caller frees). */
static char *first_line(const char *path)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
    fclose(f);
    return strdup(buf);
}

static const char *err_of(json_t *j)
{
    return json_string_value(json_object_get(j, "error"));
}

/* A control endpoint of the socket port; NEW JSON, status checked. */
static json_t *control(env *e, const char *method, const char *path, long status)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", fake_slack_socket_port(e->ss), path);
    hres r = http(method, url, NULL, NULL);
    ck_assert_msg(r.status == status, "%s %s: want %ld got %ld: %s", method, path, status, r.status,
                  r.body ? r.body : "");
    json_t *j = tu_json(r.body);
    free(r.body);
    return j;
}

/* apps.connections.open's URL split into port and path; the ticket in *ticket. */
static void open_url(env *e, const char *xapp, int *port, char *path, size_t n)
{
    json_t *o = api(e, "apps.connections.open", xapp, NULL);
    ck_assert_msg(json_is_true(json_object_get(o, "ok")), "%s", err_of(o));
    const char *url = json_string_value(json_object_get(o, "url"));
    int off = 0;
    ck_assert_int_eq(sscanf(url, "ws://127.0.0.1:%d%n", port, &off), 1);
    snprintf(path, n, "%s", url + off);
    json_decref(o);
}

/* Connect an app and take its hello (NEW into *hello when not NULL). */
static ws_client *app_online(env *e, const char *xapp, json_t **hello)
{
    int port = 0, st = 0;
    char path[256];
    open_url(e, xapp, &port, path, sizeof path);
    ck_assert_int_eq(port, fake_slack_socket_port(e->ss));
    ws_client *c = ws_client_connect(port, path, WAIT_MS, &st);
    ck_assert_msg(c != NULL, "websocket handshake failed (HTTP %d)", st);
    json_t *h = ws_client_next_json(c, WAIT_MS, NULL);
    ck_assert_ptr_nonnull(h);
    ck_assert_str_eq(json_string_value(json_object_get(h, "type")), "hello");
    if (hello)
        *hello = h;
    else
        json_decref(h);
    return c;
}

/* The next envelope on c (NEW), or NULL within ms. */
static json_t *next_envelope(ws_client *c, long ms)
{
    return ws_client_next_json(c, ms, NULL);
}

static const char *event_type(json_t *envelope)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(envelope, "payload"), "event"), "type"));
}

static void ack(ws_client *c, json_t *envelope, const char *payload_json)
{
    char buf[256];
    int n = snprintf(buf, sizeof buf, "{\"envelope_id\":\"%s\",\"payload\":%s}",
                     json_string_value(json_object_get(envelope, "envelope_id")), payload_json);
    ck_assert_int_eq(ws_client_send(c, 1, WS_OP_TEXT, buf, (size_t)n), 0);
}

START_TEST(connections_open_tickets_and_hello)
{
    env e = start();
    /* Only an app-level token of a known app gets a URL. */
    json_t *j = api(&e, "apps.connections.open", XOXB_A, NULL);
    ck_assert_str_eq(err_of(j), "not_allowed_token_type");
    json_decref(j);
    j = api(&e, "apps.connections.open", NULL, NULL);
    ck_assert_str_eq(err_of(j), "not_authed");
    json_decref(j);
    j = api(&e, "apps.connections.open", "xapp-1-A0NOPE-1-x", NULL);
    ck_assert_str_eq(err_of(j), "invalid_auth");
    json_decref(j);

    int port = 0, st = 0;
    char path[256];
    open_url(&e, XAPP_A, &port, path, sizeof path);
    ck_assert_ptr_nonnull(strstr(path, "/link/?ticket="));
    ws_client *c1 = ws_client_connect(port, path, WAIT_MS, &st);
    ck_assert_int_eq(st, 101);
    json_t *hello = ws_client_next_json(c1, WAIT_MS, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(hello, "type")), "hello");
    ck_assert_int_eq(json_integer_value(json_object_get(hello, "num_connections")), 1);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(hello, "connection_info"), "app_id")),
        APP_A);
    json_decref(hello);
    /* A ticket works once; an invented one never. */
    ck_assert_ptr_null(ws_client_connect(port, path, WAIT_MS, &st));
    ck_assert_int_eq(st, 401);
    ck_assert_ptr_null(ws_client_connect(port, "/link/?ticket=0123456789abcdef", WAIT_MS, &st));
    ck_assert_int_eq(st, 401);
    /* A second websocket of the same app is counted in its hello. */
    json_t *h2 = NULL;
    ws_client *c2 = app_online(&e, XAPP_A, &h2);
    ck_assert_int_eq(json_integer_value(json_object_get(h2, "num_connections")), 2);
    json_decref(h2);
    ck_assert_int_eq(fake_slack_socket_wait_connected(e.ss, APP_A, 2, WAIT_MS), 0);
    ck_assert_uint_eq(fake_slack_socket_connected(e.ss, APP_B), 0);
    /* The Web API recorded the calls with the app token as sent. */
    json_t *reqs = fake_slack_requests(e.fs, 0);
    size_t i, opened = 0;
    json_t *r;
    json_array_foreach(reqs, i, r) {
        if (!strcmp(json_string_value(json_object_get(r, "method")), "apps.connections.open") &&
            json_is_true(json_object_get(r, "ok")))
            opened++;
    }
    ck_assert_uint_eq(opened, 2);
    json_decref(reqs);
    ws_client_close(c1);
    ws_client_close(c2);
    stop(&e);
}
END_TEST

START_TEST(envelopes_follow_membership_and_mentions)
{
    env e = start();
    ws_client *a = app_online(&e, XAPP_A, NULL);
    ws_client *b = app_online(&e, XAPP_B, NULL);
    ws_client *c = app_online(&e, XAPP_C, NULL);
    /* A human mentions B in #general: A and B get `message`, B also
     * app_mention; C is not a member and gets nothing. */
    char ts[24];
    ck_assert_int_eq(fake_slack_inject(e.fs, CHAN, HUMAN, "hi <@" BOT_B "> and all", NULL, ts), 0);
    json_t *ea = next_envelope(a, WAIT_MS);
    ck_assert_ptr_nonnull(ea);
    ck_assert_str_eq(json_string_value(json_object_get(ea, "type")), "events_api");
    ck_assert(json_is_false(json_object_get(ea, "accepts_response_payload")));
    json_t *p = json_object_get(ea, "payload");
    ck_assert_str_eq(json_string_value(json_object_get(p, "type")), "event_callback");
    ck_assert_str_eq(json_string_value(json_object_get(p, "api_app_id")), APP_A);
    ck_assert_str_eq(json_string_value(json_object_get(p, "team_id")), fake_slack_team_id(e.fs));
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(p, "authorizations"), 0), "user_id")),
                     BOT_A);
    ck_assert_ptr_nonnull(json_string_value(json_object_get(p, "event_id")));
    json_t *ev = json_object_get(p, "event");
    ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "message");
    ck_assert_str_eq(json_string_value(json_object_get(ev, "channel")), CHAN);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "channel_type")), "channel");
    ck_assert_str_eq(json_string_value(json_object_get(ev, "user")), HUMAN);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "ts")), ts);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "event_ts")), ts);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "text")), "hi <@" BOT_B "> and all");
    json_t *eb1 = next_envelope(b, WAIT_MS), *eb2 = next_envelope(b, WAIT_MS);
    ck_assert_str_eq(event_type(eb1), "message");
    ck_assert_str_eq(event_type(eb2), "app_mention");
    json_t *men = json_object_get(json_object_get(eb2, "payload"), "event");
    ck_assert_str_eq(json_string_value(json_object_get(men, "ts")), ts);
    ck_assert_ptr_null(json_object_get(men, "channel_type"));
    ck_assert_ptr_null(next_envelope(a, 300)); /* no app_mention for A */
    ck_assert_ptr_null(next_envelope(c, 300));

    /* Acks are recorded with their payload; B's are not sent. */
    ack(a, ea, "{}");
    ck_assert_int_eq(fake_slack_socket_wait_envelopes(e.ss, 1, 1, WAIT_MS), 0);
    json_t *recs = fake_slack_socket_envelopes(e.ss, 0);
    size_t i, acked = 0, sent = 0;
    json_t *r;
    json_array_foreach(recs, i, r) {
        if (!json_is_string(json_object_get(r, "ts")) ||
            strcmp(json_string_value(json_object_get(r, "ts")), ts) != 0)
            continue;
        sent++;
        if (json_is_true(json_object_get(r, "acked"))) {
            acked++;
            ck_assert_str_eq(json_string_value(json_object_get(r, "appId")), APP_A);
            ck_assert(json_is_object(json_object_get(r, "ackPayload")));
        }
    }
    ck_assert_uint_eq(sent, 3);
    ck_assert_uint_eq(acked, 1);
    json_decref(recs);

    /* A bot's own post: every member app gets it (Slack sends an app its
     * own messages), with bot_id; no app_mention for a self-mention. */
    json_t *posted =
        api(&e, "chat.postMessage", XOXB_A, "channel=" CHAN "&text=me+%3C%40" BOT_A "%3E");
    ck_assert_msg(json_is_true(json_object_get(posted, "ok")), "%s", err_of(posted));
    json_decref(posted);
    json_t *own = next_envelope(a, WAIT_MS);
    ck_assert_str_eq(event_type(own), "message");
    json_t *oev = json_object_get(json_object_get(own, "payload"), "event");
    ck_assert_str_eq(json_string_value(json_object_get(oev, "user")), BOT_A);
    ck_assert_ptr_nonnull(json_string_value(json_object_get(oev, "bot_id")));
    ck_assert_ptr_null(next_envelope(a, 300));
    json_t *seen = next_envelope(b, WAIT_MS);
    ck_assert_str_eq(event_type(seen), "message");

    /* A private channel says "group"; B is not in it. */
    ck_assert_int_eq(fake_slack_inject(e.fs, PRIV, HUMAN, "psst", NULL, NULL), 0);
    json_t *pa = next_envelope(a, WAIT_MS);
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(pa, "payload"), "event"), "channel_type")),
                     "group");
    ck_assert_ptr_null(next_envelope(b, 300));
    json_decref(ea);
    json_decref(eb1);
    json_decref(eb2);
    json_decref(own);
    json_decref(seen);
    json_decref(pa);
    ws_client_close(a);
    ws_client_close(b);
    ws_client_close(c);
    stop(&e);
}
END_TEST

START_TEST(joins_and_envelopes_without_a_websocket)
{
    env e = start();
    ws_client *b = app_online(&e, XAPP_B, NULL);
    /* C joins #general: B (a member) hears member_joined_channel, and so
     * does C's app, which has no websocket: recorded as undelivered. */
    json_t *j = api(&e, "conversations.invite", XOXB_A, "channel=" CHAN "&users=" BOT_C);
    ck_assert_msg(json_is_true(json_object_get(j, "ok")), "%s", err_of(j));
    json_decref(j);
    json_t *jb = next_envelope(b, WAIT_MS);
    ck_assert_str_eq(event_type(jb), "member_joined_channel");
    json_t *ev = json_object_get(json_object_get(jb, "payload"), "event");
    ck_assert_str_eq(json_string_value(json_object_get(ev, "user")), BOT_C);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "channel_type")), "C");
    json_decref(jb);
    json_t *recs = control(&e, "GET", "/_fake/socket/envelopes", 200);
    size_t i, to_c = 0;
    long last = 0;
    json_t *r;
    json_array_foreach(recs, i, r) {
        last = (long)json_integer_value(json_object_get(r, "seq"));
        if (!strcmp(json_string_value(json_object_get(r, "appId")), APP_C)) {
            to_c++;
            ck_assert_int_eq(json_integer_value(json_object_get(r, "connId")), 0);
            ck_assert(json_is_false(json_object_get(r, "acked")));
        }
    }
    ck_assert_uint_eq(to_c, 1);
    json_decref(recs);
    char path[64];
    snprintf(path, sizeof path, "/_fake/socket/envelopes?since=%ld", last);
    recs = control(&e, "GET", path, 200);
    ck_assert_uint_eq(json_array_size(recs), 0);
    json_decref(recs);
    ws_client_close(b);
    stop(&e);
}
END_TEST

START_TEST(pings_disconnect_close_and_frame_rules)
{
    env e = start();
    ws_client *a = app_online(&e, XAPP_A, NULL);
    /* A ping is answered with a pong carrying its payload. */
    ck_assert_int_eq(ws_client_send(a, 1, WS_OP_PING, "p-1", 3), 0);
    char *out = NULL;
    size_t len = 0;
    ck_assert_int_eq(ws_client_read(a, WAIT_MS, &out, &len), WS_OP_PONG);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(memcmp(out, "p-1", 3), 0);
    free(out);
    /* A fragmented ack is one message. */
    ck_assert_int_eq(fake_slack_inject(e.fs, CHAN, HUMAN, "frag", NULL, NULL), 0);
    json_t *en = next_envelope(a, WAIT_MS);
    char buf[160];
    int n = snprintf(buf, sizeof buf, "{\"envelope_id\":\"%s\",\"payload\":{}}",
                     json_string_value(json_object_get(en, "envelope_id")));
    ck_assert_int_eq(ws_client_send(a, 0, WS_OP_TEXT, buf, 10), 0);
    ck_assert_int_eq(ws_client_send(a, 1, WS_OP_CONT, buf + 10, (size_t)n - 10), 0);
    ck_assert_int_eq(fake_slack_socket_wait_envelopes(e.ss, 1, 1, WAIT_MS), 0);
    json_decref(en);
    /* Slack asks the app to reconnect: the disconnect message, by app. */
    json_t *d = control(&e, "POST", "/_fake/socket/disconnect?app=" APP_B, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "disconnected")), 0);
    json_decref(d);
    d = control(&e, "POST", "/_fake/socket/disconnect?app=" APP_A "&reason=warning", 200);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "disconnected")), 1);
    json_decref(d);
    json_t *msg = ws_client_next_json(a, WAIT_MS, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(msg, "type")), "disconnect");
    ck_assert_str_eq(json_string_value(json_object_get(msg, "reason")), "warning");
    json_decref(msg);
    /* The client closes: its code is echoed and the websocket is gone. */
    uint8_t code[2] = {0x03, 0xE8};
    ck_assert_int_eq(ws_client_send(a, 1, WS_OP_CLOSE, code, 2), 0);
    int got = 0;
    ck_assert_ptr_null(ws_client_next_json(a, WAIT_MS, &got));
    ck_assert_int_eq(got, 1000);
    ws_client_close(a);
    for (int i = 0; i < 50 && fake_slack_socket_connected(e.ss, APP_A) > 0; i++)
        usleep(100 * 1000);
    ck_assert_uint_eq(fake_slack_socket_connected(e.ss, APP_A), 0);
    /* A frame the protocol forbids (a control frame in pieces) ends it. */
    ws_client *b = app_online(&e, XAPP_B, NULL);
    ck_assert_int_eq(ws_client_send(b, 0, WS_OP_PING, "x", 1), 0);
    got = 0;
    ck_assert_ptr_null(ws_client_next_json(b, WAIT_MS, &got));
    ck_assert_int_eq(got, 1002);
    ws_client_close(b);
    stop(&e);
}
END_TEST

START_TEST(control_endpoints)
{
    env e = start();
    ws_client *b = app_online(&e, XAPP_B, NULL);
    json_t *h = control(&e, "GET", "/_fake/socket/health", 200);
    char want[64];
    snprintf(want, sizeof want, "ws://127.0.0.1:%d", fake_slack_socket_port(e.ss));
    ck_assert_str_eq(json_string_value(json_object_get(h, "url")), want);
    json_decref(h);
    json_t *cs = control(&e, "GET", "/_fake/socket/connections", 200);
    ck_assert_uint_eq(json_array_size(cs), 1);
    json_t *c0 = json_array_get(cs, 0);
    ck_assert_str_eq(json_string_value(json_object_get(c0, "appId")), APP_B);
    ck_assert_str_eq(json_string_value(json_object_get(c0, "userId")), BOT_B);
    ck_assert(json_is_true(json_object_get(c0, "helloSent")));
    json_decref(cs);
    json_t *nf = control(&e, "GET", "/_fake/socket/nothing", 404);
    ck_assert(json_is_false(json_object_get(nf, "ok")));
    json_decref(nf);
    nf = control(&e, "GET", "/elsewhere", 404);
    json_decref(nf);
    ws_client_close(b);
    stop(&e);
}
END_TEST

START_TEST(stop_with_clients_connected_is_prompt)
{
    env e = start();
    ws_client *a = app_online(&e, XAPP_A, NULL);
    ws_client *b = app_online(&e, XAPP_B, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    stop(&e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    ck_assert_msg(ms < 3000, "stop took %ld ms", ms);
    ws_client *both[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        int code = 0;
        json_t *j;
        while ((j = ws_client_next_json(both[i], WAIT_MS, &code)))
            json_decref(j);
        ck_assert_int_eq(code, 1001);
        ws_client_close(both[i]);
    }
}
END_TEST

START_TEST(reactions_and_session_status)
{
    env e = start();
    char ts[24];
    ck_assert_int_eq(fake_slack_inject(e.fs, CHAN, HUMAN, "look", NULL, ts), 0);
    char form[160];
    snprintf(form, sizeof form, "channel=%s&timestamp=%s&name=eyes", CHAN, ts);
    json_t *j = api(&e, "reactions.add", XOXB_A, form);
    ck_assert_msg(json_is_true(json_object_get(j, "ok")), "%s", err_of(j));
    json_decref(j);
    j = api(&e, "reactions.add", XOXB_A, form);
    ck_assert_str_eq(err_of(j), "already_reacted");
    json_decref(j);
    j = api(&e, "reactions.add", XAPP_A, form);
    ck_assert_str_eq(err_of(j), "not_allowed_token_type");
    json_decref(j);
    j = api(&e, "reactions.add", XOXB_A, "channel=" CHAN "&timestamp=1.000001&name=eyes");
    ck_assert_str_eq(err_of(j), "message_not_found");
    json_decref(j);
    snprintf(form, sizeof form, "channel=%s&timestamp=%s&name=%%3Aeyes%%3A", CHAN, ts);
    j = api(&e, "reactions.add", XOXB_A, form);
    ck_assert_str_eq(err_of(j), "invalid_name");
    json_decref(j);
    json_t *rs = fake_slack_openclaw_reactions(e.oc);
    ck_assert_uint_eq(json_array_size(rs), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rs, 0), "user")), BOT_A);
    json_decref(rs);
    snprintf(form, sizeof form, "channel=%s&timestamp=%s&name=eyes", CHAN, ts);
    j = api(&e, "reactions.remove", XOXB_A, form);
    ck_assert(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
    j = api(&e, "reactions.remove", XOXB_A, form);
    ck_assert_str_eq(err_of(j), "no_reaction");
    json_decref(j);

    snprintf(form, sizeof form, "channel_id=%s&thread_ts=%s&status=is+thinking&title=Plan", CHAN,
             ts);
    j = api(&e, "agents.sessions.setStatus", XOXB_B, form);
    ck_assert_msg(json_is_true(json_object_get(j, "ok")), "%s", err_of(j));
    ck_assert_str_eq(json_string_value(json_object_get(j, "title")), "Plan");
    json_decref(j);
    j = api(&e, "agents.sessions.setStatus", XOXB_B, "channel_id=" CHAN);
    ck_assert_str_eq(err_of(j), "invalid_arguments");
    json_decref(j);
    json_t *st = fake_slack_openclaw_statuses(e.oc);
    ck_assert_uint_eq(json_array_size(st), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(st, 0), "status")),
                     "is thinking");
    json_decref(st);
    stop(&e);
}
END_TEST

/* build/fake-slack: the Web API URL on stdout, the socket base in the file,
 * an app that connects and hears a channel message; SIGTERM ends it. */
START_TEST(cli)
{
    char *bin = NULL, *tmp = tu_mkdtemp(), *file = tu_path(tmp, "socket.url");
    ck_assert_int_ge(asprintf(&bin, "%s/fake-slack", tu_build_dir()), 0);
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
        execl(bin, bin, "--team", "T0CLI00001", "--bot", XOXB_A "=" BOT_A "=alpha", "--human",
              HUMAN "=alice", "--app", XAPP_A "=" APP_A "=" BOT_A, "--channel",
              CHAN "=general=" HUMAN "," BOT_A, "--socket-url-file", file, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    char line[128] = "", api_url[128];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    int port = 0;
    ck_assert_int_eq(sscanf(line, "http://127.0.0.1:%d/api", &port), 1);
    snprintf(api_url, sizeof api_url, "http://127.0.0.1:%d/api/apps.connections.open", port);
    char *sock = first_line(file);
    int sport = 0;
    ck_assert_int_eq(sscanf(sock, "http://127.0.0.1:%d", &sport), 1);
    free(sock);
    hres r = http("POST", api_url, XAPP_A, "");
    json_t *o = tu_json(r.body);
    free(r.body);
    const char *url = json_string_value(json_object_get(o, "url"));
    ck_assert_ptr_nonnull(url);
    int wport = 0, off = 0;
    ck_assert_int_eq(sscanf(url, "ws://127.0.0.1:%d%n", &wport, &off), 1);
    ck_assert_int_eq(wport, sport);
    ws_client *c = ws_client_connect(wport, url + off, WAIT_MS, NULL);
    ck_assert_ptr_nonnull(c);
    json_decref(o);
    json_t *hello = ws_client_next_json(c, WAIT_MS, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(hello, "type")), "hello");
    json_decref(hello);
    char inj[128], body[160];
    snprintf(inj, sizeof inj, "http://127.0.0.1:%d/_fake/messages", port);
    snprintf(body, sizeof body,
             "{\"channel\":\"" CHAN "\",\"user\":\"" HUMAN "\",\"text\":\"hello <@" BOT_A ">\"}");
    r = http("POST", inj, NULL, body);
    ck_assert_int_eq(r.status, 200);
    free(r.body);
    json_t *m = next_envelope(c, WAIT_MS);
    json_t *p = json_object_get(m, "payload");
    ck_assert_str_eq(json_string_value(json_object_get(p, "team_id")), "T0CLI00001");
    ck_assert_str_eq(event_type(m), "message");
    json_decref(m);
    m = next_envelope(c, WAIT_MS);
    ck_assert_str_eq(event_type(m), "app_mention");
    json_decref(m);
    kill(pid, SIGTERM);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ws_client_close(c);
    fclose(f);
    /* A bad option is a usage error. */
    pid = fork();
    if (pid == 0) {
        int quiet = open("/dev/null", O_WRONLY);
        dup2(quiet, 1);
        dup2(quiet, 2);
        execl(bin, bin, "--app", "no-fields", (char *)NULL);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    free(bin);
    free(file);
    tu_rmtree(tmp);
    free(tmp);
}
END_TEST

Suite *make_fake_slack_socket_suite(void)
{
    Suite *s = suite_create("fake_slack_socket");
    TCase *tc = tcase_create("socket");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, connections_open_tickets_and_hello);
    tcase_add_test(tc, envelopes_follow_membership_and_mentions);
    tcase_add_test(tc, joins_and_envelopes_without_a_websocket);
    tcase_add_test(tc, pings_disconnect_close_and_frame_rules);
    tcase_add_test(tc, control_endpoints);
    tcase_add_test(tc, stop_with_clients_connected_is_prompt);
    tcase_add_test(tc, reactions_and_session_status);
    tcase_add_test(tc, cli);
    suite_add_tcase(s, tc);
    return s;
}
