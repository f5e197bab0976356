/*
 * check_fake_slack.c -- the fake Slack's own semantics, by raw HTTP
 * (libcurl, form and JSON bodies) so that the slack/ client's tests stand
 * on a fake that behaves as Slack documents: tokens, scopes, private
 * channels, archive, ts order, history pages and metadata, threads,
 * faults, the control endpoints, and the extension points (added methods,
 * event listeners) Socket Mode builds on.
 */
#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "buf.h"
#include "fake_slack.h"

#define MOD_TOKEN "xoxb-mod-0000-token"
#define AG1_TOKEN "xoxb-ag1-0000-token"
#define APP_TOKEN "xapp-1-AMOD0001-0000-token"
#define MOD "UMOD0001"
#define AG1 "UAG00001"
#define ALICE "UALICE01"

typedef struct answer {
    long status;
    long retry_after; /* seconds; -1 when absent */
    CURLcode cc;
    json_t *body; /* NULL when not JSON */
} answer;

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    return dg_buf_add(ud, p, size * n) == 0 ? size * n : 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    answer *a = ud;
    if (!strncasecmp(p, "Retry-After:", 12))
        a->retry_after = atol(p + 12);
    return size * n;
}

/* One request: method "GET"/"POST"/"DELETE", path after the port
 * ("/api/chat.postMessage"), body with its content type (NULL: none),
 * token into the Authorization header (NULL: none). */
static answer req(fake_slack *fs, const char *method, const char *path, const char *ctype,
                  const char *body, const char *token)
{
    answer a = {.retry_after = -1};
    char url[256], auth[128], ct[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", fake_slack_port(fs), path);
    CURL *h = curl_easy_init();
    struct curl_slist *hd = NULL;
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hd = curl_slist_append(hd, auth);
    }
    if (ctype) {
        snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
        hd = curl_slist_append(hd, ct);
    }
    dg_buf b = {0};
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
    a.cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a.status);
    a.body = b.len ? json_loadb(b.s, b.len, 0, NULL) : NULL;
    dg_buf_free(&b);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return a;
}

/* A form-bodied Web API call as token. */
static answer api(fake_slack *fs, const char *method, const char *form, const char *token)
{
    char path[96];
    snprintf(path, sizeof path, "/api/%s", method);
    return req(fs, "POST", path, "application/x-www-form-urlencoded", form, token);
}

static const char *err_of(const answer *a)
{
    const char *e = json_string_value(json_object_get(a->body, "error"));
    return e ? e : "";
}

static int ok_of(const answer *a)
{
    return a->status == 200 && json_is_true(json_object_get(a->body, "ok"));
}

static fake_slack *start(void)
{
    fake_slack *fs = NULL;
    char err[200];
    ck_assert_msg(fake_slack_start(NULL, &fs, err, sizeof err) == 0, "%s", err);
    fake_slack_user_spec mod = {.user_id = MOD, .token = MOD_TOKEN, .bot = 1};
    fake_slack_user_spec ag1 = {.user_id = AG1, .token = AG1_TOKEN, .bot = 1};
    fake_slack_user_spec alice = {.user_id = ALICE};
    ck_assert_int_eq(fake_slack_add_user(fs, &mod), 0);
    ck_assert_int_eq(fake_slack_add_user(fs, &ag1), 0);
    ck_assert_int_eq(fake_slack_add_user(fs, &alice), 0);
    ck_assert_int_eq(fake_slack_add_app_token(fs, APP_TOKEN, "AMOD0001"), 0);
    return fs;
}

START_TEST(tokens_and_methods)
{
    fake_slack *fs = start();
    answer a = api(fs, "auth.test", "", NULL);
    ck_assert_str_eq(err_of(&a), "not_authed");
    json_decref(a.body);
    a = api(fs, "auth.test", "", "xoxb-nobody");
    ck_assert_str_eq(err_of(&a), "invalid_auth");
    json_decref(a.body);
    a = api(fs, "auth.test", "", APP_TOKEN);
    ck_assert_str_eq(err_of(&a), "not_allowed_token_type");
    json_decref(a.body);
    a = api(fs, "no.such", "", MOD_TOKEN);
    ck_assert_str_eq(err_of(&a), "unknown_method");
    ck_assert_int_eq(a.status, 200);
    json_decref(a.body);
    a = api(fs, "auth.test", "token=" MOD_TOKEN, NULL); /* the token as an argument */
    ck_assert(ok_of(&a));
    ck_assert_str_eq(json_string_value(json_object_get(a.body, "user_id")), MOD);
    ck_assert_str_eq(json_string_value(json_object_get(a.body, "bot_id")), "BMOD0001");
    json_decref(a.body);
    json_t *rq = fake_slack_requests(fs, 0);
    ck_assert_uint_eq(json_array_size(rq), 5);
    json_t *last = json_array_get(rq, 4);
    ck_assert_str_eq(json_string_value(json_object_get(last, "method")), "auth.test");
    ck_assert_str_eq(json_string_value(json_object_get(last, "userId")), MOD);
    ck_assert(json_is_true(json_object_get(last, "ok")));
    json_decref(rq);
    fake_slack_stop(fs);
}
END_TEST

START_TEST(private_channels_members_archive)
{
    fake_slack *fs = start();
    answer a = api(fs, "conversations.create", "name=room&is_private=true", MOD_TOKEN);
    ck_assert(ok_of(&a));
    char id[16], form[96];
    snprintf(id, sizeof id, "%s",
             json_string_value(json_object_get(json_object_get(a.body, "channel"), "id")));
    ck_assert(json_is_true(json_object_get(json_object_get(a.body, "channel"), "is_private")));
    json_decref(a.body);
    snprintf(form, sizeof form, "channel=%s", id);
    a = api(fs, "conversations.info", form, AG1_TOKEN); /* not a member: it does not exist */
    ck_assert_str_eq(err_of(&a), "channel_not_found");
    json_decref(a.body);
    snprintf(form, sizeof form, "channel=%s&users=%s%%2C%s", id, AG1, ALICE);
    a = api(fs, "conversations.invite", form, MOD_TOKEN);
    ck_assert(ok_of(&a));
    json_decref(a.body);
    a = api(fs, "conversations.invite", form, MOD_TOKEN);
    ck_assert_str_eq(err_of(&a), "already_in_channel");
    json_decref(a.body);
    snprintf(form, sizeof form, "channel=%s&text=hi", id);
    a = api(fs, "chat.postMessage", form, AG1_TOKEN);
    ck_assert(ok_of(&a));
    json_decref(a.body);
    snprintf(form, sizeof form, "channel=%s", id);
    a = api(fs, "conversations.archive", form, MOD_TOKEN);
    ck_assert(ok_of(&a));
    json_decref(a.body);
    a = api(fs, "conversations.archive", form, MOD_TOKEN);
    ck_assert_str_eq(err_of(&a), "already_archived");
    json_decref(a.body);
    snprintf(form, sizeof form, "channel=%s&text=late", id);
    a = api(fs, "chat.postMessage", form, AG1_TOKEN);
    ck_assert_str_eq(err_of(&a), "is_archived");
    json_decref(a.body);
    static const struct {
        const char *form, *error;
    } names[] = {
        {"name=", "invalid_name_required"},    {"name=Bad+Name", "invalid_name_specials"},
        {"name=a.b", "invalid_name_specials"}, {"name=---", "invalid_name_punctuation"},
        {"name=room", "name_taken"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        a = api(fs, "conversations.create", names[i].form, MOD_TOKEN);
        ck_assert_msg(!strcmp(err_of(&a), names[i].error), "%s: %s", names[i].form, err_of(&a));
        json_decref(a.body);
    }
    /* conversations.list: a private channel only to its members. */
    a = api(fs, "conversations.list", "types=private_channel%2Cpublic_channel", AG1_TOKEN);
    ck_assert(ok_of(&a));
    ck_assert_uint_eq(json_array_size(json_object_get(a.body, "channels")), 1);
    json_decref(a.body);
    a = api(fs, "conversations.list", "types=private_channel&exclude_archived=true", AG1_TOKEN);
    ck_assert_uint_eq(json_array_size(json_object_get(a.body, "channels")), 0);
    json_decref(a.body);
    fake_slack_user_spec outsider = {.user_id = "UOUT0001", .token = "xoxb-out", .bot = 1};
    ck_assert_int_eq(fake_slack_add_user(fs, &outsider), 0);
    a = api(fs, "conversations.list", "types=private_channel", "xoxb-out");
    ck_assert_uint_eq(json_array_size(json_object_get(a.body, "channels")), 0);
    json_decref(a.body);
    char longname[100];
    snprintf(longname, sizeof longname, "name=%081d", 0);
    a = api(fs, "conversations.create", longname, MOD_TOKEN);
    ck_assert_str_eq(err_of(&a), "invalid_name_maxlength");
    json_decref(a.body);
    fake_slack_stop(fs);
}
END_TEST

START_TEST(public_channel_needs_membership_and_scopes)
{
    fake_slack *fs = start();
    const char *members[] = {ALICE, NULL};
    char id[16], form[96];
    ck_assert_int_eq(fake_slack_add_channel(fs, NULL, "open", 0, members, id), 0);
    snprintf(form, sizeof form, "channel=%s&text=hi", id);
    answer a = api(fs, "chat.postMessage", form, MOD_TOKEN);
    ck_assert_str_eq(err_of(&a), "not_in_channel");
    json_decref(a.body);
    snprintf(form, sizeof form, "channel=%s", id);
    a = api(fs, "conversations.info", form, MOD_TOKEN); /* public: visible */
    ck_assert(ok_of(&a));
    json_decref(a.body);
    fake_slack_user_spec narrow = {
        .user_id = "UNARROW1", .token = "xoxb-narrow", .bot = 1, .scopes = "channels:read"};
    ck_assert_int_eq(fake_slack_add_user(fs, &narrow), 0);
    snprintf(form, sizeof form, "channel=%s&text=hi", id);
    a = api(fs, "chat.postMessage", form, "xoxb-narrow");
    ck_assert_str_eq(err_of(&a), "missing_scope");
    ck_assert_str_eq(json_string_value(json_object_get(a.body, "needed")), "chat:write");
    ck_assert_str_eq(json_string_value(json_object_get(a.body, "provided")), "channels:read");
    json_decref(a.body);
    fake_slack_stop(fs);
}
END_TEST

START_TEST(history_order_pages_metadata_threads)
{
    fake_slack *fs = start();
    const char *members[] = {MOD, ALICE, NULL};
    char id[16], form[256], prev[32] = "";
    ck_assert_int_eq(fake_slack_add_channel(fs, NULL, "work", 0, members, id), 0);
    for (int i = 0; i < 5; i++) {
        /* JSON and form bodies alike; metadata an object or JSON text. */
        answer a;
        if (i % 2) {
            snprintf(form, sizeof form,
                     "{\"channel\":\"%s\",\"text\":\"m%d\",\"metadata\":{\"event_type\":\"t\","
                     "\"event_payload\":{\"n\":%d}}}",
                     id, i, i);
            a = req(fs, "POST", "/api/chat.postMessage", "application/json; charset=utf-8", form,
                    MOD_TOKEN);
        } else {
            snprintf(form, sizeof form,
                     "channel=%s&text=m%d&metadata=%%7B%%22event_type%%22%%3A%%22t%%22%%7D", id, i);
            a = api(fs, "chat.postMessage", form, MOD_TOKEN);
        }
        ck_assert_msg(ok_of(&a), "%d: %s", i, err_of(&a));
        const char *ts = json_string_value(json_object_get(a.body, "ts"));
        ck_assert_uint_eq(strlen(ts), 17);
        ck_assert_int_gt(strcmp(ts, prev), 0); /* strictly increasing */
        snprintf(prev, sizeof prev, "%s", ts);
        json_decref(a.body);
    }
    /* Newest first, two a page, all five through the cursor; metadata only
     * when asked for. */
    char cursor[64] = "";
    int seen = 0, with_meta = 0;
    for (int page = 0; page < 4; page++) {
        snprintf(form, sizeof form, "channel=%s&limit=2&include_all_metadata=%s&cursor=%s", id,
                 page ? "true" : "false", cursor);
        answer a = api(fs, "conversations.history", form, MOD_TOKEN);
        ck_assert(ok_of(&a));
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(a.body, "messages"), i, m) {
            char want[16];
            snprintf(want, sizeof want, "m%d", 4 - seen++);
            ck_assert_str_eq(json_string_value(json_object_get(m, "text")), want);
            with_meta += json_object_get(m, "metadata") != NULL;
        }
        snprintf(cursor, sizeof cursor, "%s",
                 json_string_value(
                     json_object_get(json_object_get(a.body, "response_metadata"), "next_cursor")));
        int more = json_is_true(json_object_get(a.body, "has_more"));
        json_decref(a.body);
        if (!more)
            break;
    }
    ck_assert_int_eq(seen, 5);
    ck_assert_int_eq(with_meta, 3); /* pages 2 and 3 asked: m2, m1, m0 */
    /* A thread: replies are not in the history, the parent counts them. */
    char parent[32], reply[32];
    ck_assert_int_eq(fake_slack_inject(fs, id, ALICE, "question", NULL, parent), 0);
    ck_assert_int_eq(fake_slack_inject(fs, id, ALICE, "more", parent, reply), 0);
    ck_assert_int_eq(fake_slack_inject(fs, id, ALICE, "more", "1.000001", NULL), -1);
    snprintf(form, sizeof form, "channel=%s&limit=1", id);
    answer a = api(fs, "conversations.history", form, MOD_TOKEN);
    json_t *top = json_array_get(json_object_get(a.body, "messages"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(top, "ts")), parent);
    ck_assert_int_eq(json_integer_value(json_object_get(top, "reply_count")), 1);
    json_decref(a.body);
    snprintf(form, sizeof form, "channel=%s&ts=%s", id, reply);
    a = api(fs, "conversations.replies", form, MOD_TOKEN);
    ck_assert_uint_eq(json_array_size(json_object_get(a.body, "messages")), 2);
    json_decref(a.body);
    fake_slack_stop(fs);
}
END_TEST

START_TEST(faults_shape_and_count)
{
    fake_slack *fs = start();
    const char *members[] = {MOD, NULL};
    char id[16], form[96];
    ck_assert_int_eq(fake_slack_add_channel(fs, NULL, "work", 0, members, id), 0);
    snprintf(form, sizeof form, "channel=%s&text=x", id);
    ck_assert_int_eq(fake_slack_add_fault(fs, "chat.postMessage", FS_FAULT_429, 2, 7, 0, NULL), 0);
    ck_assert_int_eq(fake_slack_add_fault(fs, "*", FS_FAULT_DROP_AFTER, 1, 0, 0, NULL), 0);
    for (int i = 0; i < 2; i++) {
        answer a = api(fs, "chat.postMessage", form, MOD_TOKEN);
        ck_assert_int_eq(a.status, 429);
        ck_assert_int_eq(a.retry_after, 7);
        ck_assert_str_eq(err_of(&a), "ratelimited");
        json_decref(a.body);
    }
    ck_assert_uint_eq(fake_slack_message_count(fs, id), 0);
    answer a = api(fs, "chat.postMessage", form, MOD_TOKEN);
    ck_assert_int_eq(a.cc, CURLE_GOT_NOTHING); /* stored, answer lost */
    ck_assert_uint_eq(fake_slack_message_count(fs, id), 1);
    a = api(fs, "chat.postMessage", form, MOD_TOKEN);
    ck_assert(ok_of(&a));
    json_decref(a.body);
    json_t *rq = fake_slack_requests(fs, 0);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rq, 0), "fault")), "429");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(rq, 2), "status")), -1);
    ck_assert(json_is_null(json_object_get(json_array_get(rq, 3), "fault")));
    json_decref(rq);
    fake_slack_stop(fs);
}
END_TEST

START_TEST(control_endpoints)
{
    fake_slack *fs = NULL;
    ck_assert_int_eq(fake_slack_start(NULL, &fs, NULL, 0), 0);
    answer a = req(fs, "POST", "/_fake/users", "application/json",
                   "{\"user_id\":\"UBOT0001\",\"token\":\"xoxb-b1\",\"bot\":true}", NULL);
    ck_assert(ok_of(&a));
    json_decref(a.body);
    a = req(fs, "POST", "/_fake/users", "application/json", "{\"user_id\":\"UHUMAN01\"}", NULL);
    json_decref(a.body);
    a = req(fs, "POST", "/_fake/channels", "application/json",
            "{\"name\":\"general\",\"members\":[\"UBOT0001\",\"UHUMAN01\"]}", NULL);
    ck_assert(ok_of(&a));
    char id[16], body[200], path[64];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(a.body, "id")));
    json_decref(a.body);
    snprintf(body, sizeof body, "{\"channel\":\"%s\",\"user\":\"UHUMAN01\",\"text\":\"hello\"}",
             id);
    a = req(fs, "POST", "/_fake/messages", "application/json", body, NULL);
    ck_assert(ok_of(&a));
    json_decref(a.body);
    a = req(fs, "POST", "/_fake/users", "application/json", "{\"user_id\":\"bad\"}", NULL);
    ck_assert_int_eq(a.status, 400);
    json_decref(a.body);
    snprintf(path, sizeof path, "/_fake/messages?channel=%s", id);
    a = req(fs, "GET", path, NULL, NULL, NULL);
    ck_assert_uint_eq(json_array_size(a.body), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(a.body, 0), "text")),
                     "hello");
    json_decref(a.body);
    a = api(fs, "auth.test", "", "xoxb-b1");
    json_decref(a.body);
    a = req(fs, "GET", "/_fake/requests?since=0", NULL, NULL, NULL);
    ck_assert_uint_eq(json_array_size(a.body), 1); /* control calls are not recorded */
    json_decref(a.body);
    a = req(fs, "DELETE", "/_fake/requests", NULL, NULL, NULL);
    json_decref(a.body);
    ck_assert_uint_eq(fake_slack_request_count(fs, NULL), 0);
    a = req(fs, "POST", "/_fake/faults", "application/json",
            "{\"method\":\"auth.test\",\"kind\":\"error\",\"error\":\"fatal_error\"}", NULL);
    ck_assert(ok_of(&a));
    json_decref(a.body);
    a = api(fs, "auth.test", "", "xoxb-b1");
    ck_assert_str_eq(err_of(&a), "fatal_error");
    json_decref(a.body);
    fake_slack_stop(fs);
}
END_TEST

/* ---- extension points ---------------------------------------------------------------- */

typedef struct seen {
    pthread_mutex_t mu;
    char log[2048];
    fake_slack *fs;
    int injected;
} seen;

static json_t *connections_open(void *ud, const fake_slack_call *call, int *http)
{
    (void)http;
    seen *s = ud;
    pthread_mutex_lock(&s->mu);
    snprintf(s->log + strlen(s->log), sizeof s->log - strlen(s->log), "call %s %s;", call->method,
             call->app_id ? call->app_id : "-");
    pthread_mutex_unlock(&s->mu);
    return json_pack("{s:s}", "url", "ws://127.0.0.1:1/link");
}

static void on_event(void *ud, const fake_slack_event *ev)
{
    seen *s = ud;
    const char *text = ev->message ? json_string_value(json_object_get(ev->message, "text")) : "";
    pthread_mutex_lock(&s->mu);
    int first = !s->injected && ev->message;
    s->injected |= first;
    pthread_mutex_unlock(&s->mu);
    /* The fake may be called from a listener; what that causes is
     * delivered after this call returns (so it is logged after it). */
    (void)fake_slack_message_count(s->fs, NULL);
    int bad = first && fake_slack_inject(s->fs, ev->channel_id, ALICE, "echo", NULL, NULL) != 0;
    pthread_mutex_lock(&s->mu);
    snprintf(s->log + strlen(s->log), sizeof s->log - strlen(s->log), "%s %s %s %s %zu;%s",
             ev->type, ev->channel_type, ev->user_id, text, ev->n_members,
             bad ? "inject failed;" : "");
    pthread_mutex_unlock(&s->mu);
}

START_TEST(added_methods_and_listeners)
{
    fake_slack *fs = start();
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER, .fs = fs};
    ck_assert_int_eq(fake_slack_add_method(fs, "apps.connections.open", connections_open, &s), 0);
    ck_assert_int_eq(fake_slack_on_message(fs, on_event, &s), 0);
    answer a = api(fs, "apps.connections.open", "", APP_TOKEN);
    ck_assert(ok_of(&a)); /* "ok": true added */
    ck_assert_str_eq(json_string_value(json_object_get(a.body, "url")), "ws://127.0.0.1:1/link");
    json_decref(a.body);
    a = api(fs, "conversations.create", "name=side&is_private=1", MOD_TOKEN);
    char id[16], form[96];
    snprintf(id, sizeof id, "%s",
             json_string_value(json_object_get(json_object_get(a.body, "channel"), "id")));
    json_decref(a.body);
    snprintf(form, sizeof form, "channel=%s&users=%s", id, AG1);
    a = api(fs, "conversations.invite", form, MOD_TOKEN);
    json_decref(a.body);
    snprintf(form, sizeof form, "channel=%s&text=first", id);
    a = api(fs, "chat.postMessage", form, MOD_TOKEN);
    json_decref(a.body);
    ck_assert_int_eq(fake_slack_wait_messages(fs, id, 2, 5000), 0);
    /* The echo is stored before its own event is delivered: wait for it. */
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&s.mu);
        int done = strstr(s.log, "echo") != NULL;
        pthread_mutex_unlock(&s.mu);
        if (done)
            break;
        usleep(10000);
    }
    pthread_mutex_lock(&s.mu);
    ck_assert_str_eq(s.log, "call apps.connections.open AMOD0001;"
                            "member_joined_channel group UMOD0001  1;"
                            "member_joined_channel group UAG00001  2;"
                            "message group UMOD0001 first 2;"
                            "message group UALICE01 echo 2;");
    pthread_mutex_unlock(&s.mu);
    fake_slack_stop(fs);
}
END_TEST

Suite *make_fake_slack_suite(void)
{
    Suite *s = suite_create("fake_slack");
    TCase *tc = tcase_create("fake");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, tokens_and_methods);
    tcase_add_test(tc, private_channels_members_archive);
    tcase_add_test(tc, public_channel_needs_membership_and_scopes);
    tcase_add_test(tc, history_order_pages_metadata_threads);
    tcase_add_test(tc, faults_shape_and_count);
    tcase_add_test(tc, control_endpoints);
    tcase_add_test(tc, added_methods_and_listeners);
    suite_add_tcase(s, tc);
    return s;
}
