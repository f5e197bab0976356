/*
 * check_fake_discord.c -- the fake Discord itself: it must refuse what
 * Discord refuses, honour enforce_nonce, inject faults as told, and be
 * drivable over its /_fake/ control endpoints and as build/fake-discord.
 */
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_discord.h"
#include "testutil.h"

#define TOKEN "tok-fake-test"
#define USER "200000000000000001"

typedef struct http_res {
    long status;
    CURLcode cc;
    char *body;
    size_t len;
    char *headers;
    size_t hlen;
} http_res;

static size_t grab(char *p, size_t sz, size_t n, void *ud, int hdr)
{
    http_res *r = ud;
    char **buf = hdr ? &r->headers : &r->body;
    size_t *len = hdr ? &r->hlen : &r->len;
    char *nb = realloc(*buf, *len + sz * n + 1);
    if (!nb)
        return 0;
    memcpy(nb + *len, p, sz * n);
    *len += sz * n;
    nb[*len] = '\0';
    *buf = nb;
    return sz * n;
}

static size_t grab_body(char *p, size_t sz, size_t n, void *ud)
{
    return grab(p, sz, n, ud, 0);
}

static size_t grab_hdr(char *p, size_t sz, size_t n, void *ud)
{
    return grab(p, sz, n, ud, 1);
}

/* One request; token NULL: no Authorization. Result owned by the caller
 * (http_free). */
static http_res http(const char *method, const char *url, const char *token, const char *body)
{
    http_res r;
    memset(&r, 0, sizeof r);
    CURL *c = curl_easy_init();
    ck_assert_ptr_nonnull(c);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    char auth[128];
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bot %s", token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, grab_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, grab_hdr);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    r.cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return r;
}

static void http_free(http_res *r)
{
    free(r->body);
    free(r->headers);
}

static json_t *body_json(const http_res *r)
{
    ck_assert_msg(r->body, "no body (curl %d)", r->cc);
    return tu_json(r->body);
}

static fake_discord *start(char *chan)
{
    fake_discord *fd = NULL;
    char err[200];
    ck_assert_msg(fake_discord_start(NULL, &fd, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(fake_discord_add_user(fd, TOKEN, USER, "agent", 1), 0);
    if (chan)
        ck_assert_int_eq(fake_discord_add_channel(fd, NULL, "general", chan), 0);
    ck_assert(!strncmp(fake_discord_url(fd), "http://127.0.0.1:", 17));
    ck_assert_int_gt(fake_discord_port(fd), 0);
    return fd;
}

static char *url_of(fake_discord *fd, const char *path)
{
    char *u = NULL;
    ck_assert_int_ge(asprintf(&u, "%s%s", fake_discord_url(fd), path), 0);
    return u;
}

/* Control URL (outside /api/v10). */
static char *ctl_of(fake_discord *fd, const char *path)
{
    char *u = NULL;
    ck_assert_int_ge(asprintf(&u, "http://127.0.0.1:%d%s", fake_discord_port(fd), path), 0);
    return u;
}

/* POST body to API path; expect status and Discord error code (-1: any). */
static void expect(fake_discord *fd, const char *method, const char *path, const char *token,
                   const char *body, long status, long code, const char *field)
{
    char *u = url_of(fd, path);
    http_res r = http(method, u, token, body);
    ck_assert_msg(r.status == status, "%s %s: want %ld got %ld: %s", method, path, status, r.status,
                  r.body ? r.body : "");
    if (code >= 0) {
        json_t *j = body_json(&r);
        ck_assert_msg(json_is_string(json_object_get(j, "message")), "%s", r.body);
        ck_assert_int_eq(json_integer_value(json_object_get(j, "code")), code);
        if (field)
            ck_assert_msg(json_object_get(json_object_get(j, "errors"), field),
                          "errors.%s missing: %s", field, r.body);
        json_decref(j);
    }
    http_free(&r);
    free(u);
}

START_TEST(refuses_what_discord_refuses)
{
    char chan[24];
    fake_discord *fd = start(chan);
    char gpath[64], mpath[64];
    snprintf(gpath, sizeof gpath, "/guilds/%s/channels", fake_discord_guild_id(fd));
    snprintf(mpath, sizeof mpath, "/channels/%s/messages", chan);

    expect(fd, "POST", gpath, TOKEN, "{\"name\":\"Has Upper\"}", 400, 50035, "name");
    expect(fd, "POST", gpath, TOKEN, "{\"name\":\"has space\"}", 400, 50035, "name");
    expect(fd, "POST", gpath, TOKEN, "{\"name\":\"\"}", 400, 50035, "name");
    char *longname = NULL;
    ck_assert_int_ge(asprintf(&longname, "{\"name\":\"%0101d\"}", 0), 0);
    expect(fd, "POST", gpath, TOKEN, longname, 400, 50035, "name");
    free(longname);
    expect(fd, "POST", gpath, TOKEN, "{\"name\":\"ok\",\"permission_overwrites\":[{\"id\":\"x\"}]}",
           400, 50035, "permission_overwrites");
    expect(fd, "POST", "/guilds/123456789012345678/channels", TOKEN, "{\"name\":\"ok\"}", 404,
           10004, NULL);
    expect(fd, "POST", gpath, TOKEN, "not json", 400, 50109, NULL);
    expect(fd, "POST", gpath, TOKEN, "{\"name\":\"fine-name\"}", 201, -1, NULL);

    char *big = malloc(2100);
    memcpy(big, "{\"content\":\"", 12);
    memset(big + 12, 'x', 2001);
    strcpy(big + 12 + 2001, "\"}");
    expect(fd, "POST", mpath, TOKEN, big, 400, 50035, "content");
    free(big);
    /* 2000 characters of 2 bytes each are fine: characters count, not bytes. */
    char *wide = malloc(4100);
    strcpy(wide, "{\"content\":\"");
    for (int i = 0; i < 2000; i++)
        strcat(wide + 12 + 2 * i, "\xc3\xa9");
    strcat(wide, "\"}");
    expect(fd, "POST", mpath, TOKEN, wide, 200, -1, NULL);
    free(wide);
    expect(fd, "POST", mpath, TOKEN, "{\"content\":\"x\",\"nonce\":\"12345678901234567890123456\"}",
           400, 50035, "nonce");
    expect(fd, "POST", mpath, TOKEN, "{\"content\":\"  \"}", 400, 50006, NULL);
    expect(fd, "POST", mpath, TOKEN,
           "{\"content\":\"x\",\"allowed_mentions\":{\"parse\":[\"users\"],\"users\":[\"1\"]}}",
           400, 50035, "allowed_mentions");
    expect(fd, "POST", "/channels/123456789012345678/messages", TOKEN, "{\"content\":\"x\"}", 404,
           10003, NULL);
    expect(fd, "POST", mpath, NULL, "{\"content\":\"x\"}", 401, 0, NULL);
    expect(fd, "POST", mpath, "tok-unknown", "{\"content\":\"x\"}", 401, 0, NULL);
    char lpath[96];
    snprintf(lpath, sizeof lpath, "/channels/%s/messages?limit=101", chan);
    expect(fd, "GET", lpath, TOKEN, NULL, 400, 50035, "limit");
    /* Only the two good posts left a trace. */
    ck_assert_uint_eq(fake_discord_message_count(fd, chan), 1);
    fake_discord_stop(fd);
}
END_TEST

START_TEST(enforce_nonce_returns_first_message)
{
    char chan[24], chan2[24];
    fake_discord *fd = start(chan);
    ck_assert_int_eq(fake_discord_add_channel(fd, NULL, "other", chan2), 0);
    char *u = NULL, *u2 = NULL;
    ck_assert_int_ge(asprintf(&u, "%s/channels/%s/messages", fake_discord_url(fd), chan), 0);
    ck_assert_int_ge(asprintf(&u2, "%s/channels/%s/messages", fake_discord_url(fd), chan2), 0);
    const char *b1 = "{\"content\":\"one\",\"nonce\":\"n1\",\"enforce_nonce\":true}";
    const char *b2 = "{\"content\":\"two\",\"nonce\":\"n1\",\"enforce_nonce\":true}";
    http_res r1 = http("POST", u, TOKEN, b1);
    http_res r2 = http("POST", u, TOKEN, b2);
    ck_assert_int_eq(r1.status, 200);
    ck_assert_int_eq(r2.status, 200);
    json_t *j1 = body_json(&r1), *j2 = body_json(&r2);
    ck_assert(json_equal(j1, j2)); /* the first message, "one" */
    ck_assert_str_eq(json_string_value(json_object_get(j2, "content")), "one");
    ck_assert_uint_eq(fake_discord_message_count(fd, chan), 1);
    /* Without enforce_nonce, or in another channel, it is a new message. */
    http_res r3 = http("POST", u, TOKEN, "{\"content\":\"three\",\"nonce\":\"n1\"}");
    http_res r4 = http("POST", u2, TOKEN, b1);
    ck_assert_int_eq(r3.status, 200);
    ck_assert_int_eq(r4.status, 200);
    ck_assert_uint_eq(fake_discord_message_count(fd, chan), 2);
    ck_assert_uint_eq(fake_discord_message_count(fd, chan2), 1);
    /* A nonce is per author: another author's same nonce is a new message,
     * and the first author still gets its own newest one ("three"), also
     * after the other author's message is deleted. */
    ck_assert_int_eq(fake_discord_add_user(fd, "tok-other", "200000000000000002", "other", 1), 0);
    json_t *j3 = body_json(&r3);
    const char *three = json_string_value(json_object_get(j3, "id"));
    http_res r5 = http("POST", u, "tok-other", b1);
    ck_assert_int_eq(r5.status, 200);
    json_t *j5 = body_json(&r5);
    ck_assert_str_ne(json_string_value(json_object_get(j5, "id")), three);
    ck_assert_uint_eq(fake_discord_message_count(fd, chan), 3);
    for (int round = 0; round < 2; round++) {
        http_res r6 = http("POST", u, TOKEN, b2);
        json_t *j6 = body_json(&r6);
        ck_assert_str_eq(json_string_value(json_object_get(j6, "id")), three);
        json_decref(j6);
        http_free(&r6);
        if (round == 0) {
            char *del = NULL;
            ck_assert_int_ge(
                asprintf(&del, "%s/%s", u, json_string_value(json_object_get(j5, "id"))), 0);
            http_res rd = http("DELETE", del, "tok-other", NULL);
            ck_assert_int_eq(rd.status, 204);
            http_free(&rd);
            free(del);
        }
    }
    ck_assert_uint_eq(fake_discord_message_count(fd, chan), 2);
    http_res r7 = http("POST", u, "tok-other", b1); /* its first one is gone: new again */
    ck_assert_int_eq(r7.status, 200);
    ck_assert_uint_eq(fake_discord_message_count(fd, chan), 3);
    json_decref(j1);
    json_decref(j2);
    json_decref(j3);
    json_decref(j5);
    http_free(&r1);
    http_free(&r2);
    http_free(&r3);
    http_free(&r4);
    http_free(&r5);
    http_free(&r7);
    free(u);
    free(u2);
    fake_discord_stop(fd);
}
END_TEST

START_TEST(lean_answers_in_full_and_keeps_little)
{
    /* The benches' lean mode: the same answer to a post, the same nonce
     * rule and counts, but no bodies or request records kept. */
    fake_discord *fd = NULL;
    char err[200], chan[24];
    fake_discord_options o = {.lean = 1};
    ck_assert_msg(fake_discord_start(&o, &fd, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(fake_discord_add_user(fd, TOKEN, USER, "agent", 1), 0);
    ck_assert_int_eq(fake_discord_add_channel(fd, NULL, "general", chan), 0);
    char *u = NULL;
    ck_assert_int_ge(asprintf(&u, "%s/channels/%s/messages", fake_discord_url(fd), chan), 0);
    const char *b1 = "{\"content\":\"one <@" USER ">\",\"nonce\":\"n1\",\"enforce_nonce\":true,"
                     "\"allowed_mentions\":{\"parse\":[],\"users\":[\"" USER "\"]}}";
    http_res r1 = http("POST", u, TOKEN, b1);
    http_res r2 = http("POST", u, TOKEN, b1);
    ck_assert_int_eq(r1.status, 200);
    ck_assert_int_eq(r2.status, 200);
    json_t *j1 = body_json(&r1), *j2 = body_json(&r2);
    ck_assert_str_eq(json_string_value(json_object_get(j1, "content")), "one <@" USER ">");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j1, "author"), "id")), USER);
    ck_assert_int_eq(json_array_size(json_object_get(j1, "mentions")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(j1, "nonce")), "n1");
    /* As Discord: a mention inside code pings nobody. */
    const char *b3 = "{\"content\":\"`<@" USER ">` and ```\\n<@" USER ">\\n``` @everyone\","
                     "\"allowed_mentions\":{\"parse\":[\"users\",\"everyone\"]}}";
    http_res r3 = http("POST", u, TOKEN, b3);
    ck_assert_int_eq(r3.status, 200);
    json_t *j3 = body_json(&r3);
    ck_assert_int_eq(json_array_size(json_object_get(j3, "mentions")), 0);
    ck_assert(json_is_true(json_object_get(j3, "mention_everyone")));
    json_decref(j3);
    http_free(&r3);
    const char *b4 = "{\"content\":\"`@everyone` <@" USER ">\","
                     "\"allowed_mentions\":{\"parse\":[\"users\",\"everyone\"]}}";
    http_res r4 = http("POST", u, TOKEN, b4);
    json_t *j4 = body_json(&r4);
    ck_assert_int_eq(json_array_size(json_object_get(j4, "mentions")), 1);
    ck_assert(json_is_false(json_object_get(j4, "mention_everyone")));
    json_decref(j4);
    http_free(&r4);
    ck_assert_str_eq(json_string_value(json_object_get(j2, "id")),
                     json_string_value(json_object_get(j1, "id")));
    ck_assert_uint_eq(fake_discord_message_count(fd, chan), 3);
    ck_assert_uint_eq(fake_discord_request_count(fd), 4);
    json_t *reqs = fake_discord_requests(fd, 0);
    ck_assert_int_eq(json_array_size(reqs), 0);
    json_decref(reqs);
    json_t *msgs = fake_discord_messages(fd, chan);
    ck_assert_int_eq(json_array_size(msgs), 0);
    json_decref(msgs);
    fake_discord_clear_requests(fd);
    ck_assert_uint_eq(fake_discord_request_count(fd), 0);
    json_decref(j1);
    json_decref(j2);
    http_free(&r1);
    http_free(&r2);
    free(u);
    fake_discord_stop(fd);
}
END_TEST

/* Response latency (the outbox bench's Discord-like rows): an answer
 * leaves no sooner than latency_us after its request; the sleeping
 * connection holds no server lock (the control calls below take it), and
 * stop ends the sleep (else stop would wait on the connection's thread and
 * the test time out). Only a lower bound on time is asserted. */
typedef struct lat_post {
    const char *url;
    http_res r;
} lat_post;

static void *lat_post_run(void *arg)
{
    lat_post *lp = arg;
    lp->r = http("POST", lp->url, TOKEN, "{\"content\":\"slow\"}");
    return NULL;
}

START_TEST(latency_answers_late_without_the_lock)
{
    for (int pass = 0; pass < 2; pass++) {
        fake_discord *fd = NULL;
        char err[200], chan[24];
        /* pass 0: 200 ms, answered; pass 1: ten minutes, ended by stop. */
        fake_discord_options o = {.latency_us = pass == 0 ? 200000L : 600000000L};
        ck_assert_msg(fake_discord_start(&o, &fd, err, sizeof err) == 0, "%s", err);
        ck_assert_int_eq(fake_discord_add_user(fd, TOKEN, USER, "agent", 1), 0);
        ck_assert_int_eq(fake_discord_add_channel(fd, NULL, "general", chan), 0);
        char *u = NULL;
        ck_assert_int_ge(asprintf(&u, "%s/channels/%s/messages", fake_discord_url(fd), chan), 0);
        lat_post lp = {.url = u};
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, lat_post_run, &lp), 0);
        ck_assert_int_eq(fake_discord_wait_messages(fd, chan, 1, 10000), 0);
        ck_assert_uint_eq(fake_discord_message_count(fd, chan), 1); /* takes the lock */
        if (pass == 1)
            fake_discord_stop(fd);
        pthread_join(th, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (pass == 0) {
            long ms = (long)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
            ck_assert_int_eq(lp.r.status, 200);
            ck_assert_msg(ms >= 200, "answered after %ld ms, before the 200 ms latency", ms);
            fake_discord_stop(fd);
        }
        http_free(&lp.r);
        free(u);
    }
}
END_TEST

START_TEST(messages_read_like_discord)
{
    char chan[24];
    fake_discord *fd = start(chan);
    char ids[5][24];
    for (int i = 0; i < 5; i++) {
        char text[8];
        snprintf(text, sizeof text, "m%d", i);
        ck_assert_int_eq(fake_discord_inject_message(fd, chan, "555555555555555555", text, ids[i]),
                         0);
        if (i)
            ck_assert(strlen(ids[i]) > strlen(ids[i - 1]) ||
                      strcmp(ids[i], ids[i - 1]) > 0); /* increasing snowflakes */
    }
    char *u = NULL;
    ck_assert_int_ge(asprintf(&u, "%s/channels/%s/messages?after=%s&limit=2", fake_discord_url(fd),
                              chan, ids[0]),
                     0);
    http_res r = http("GET", u, TOKEN, NULL);
    ck_assert_int_eq(r.status, 200);
    json_t *j = body_json(&r);
    ck_assert_uint_eq(json_array_size(j), 2); /* m1 and m2, newest first */
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 0), "id")), ids[2]);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 1), "id")), ids[1]);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(json_array_get(j, 0), "author"), "id")),
        "555555555555555555");
    json_decref(j);
    http_free(&r);
    free(u);
    ck_assert_int_ge(asprintf(&u, "%s/channels/%s/messages?before=%s&limit=10",
                              fake_discord_url(fd), chan, ids[2]),
                     0);
    r = http("GET", u, TOKEN, NULL);
    j = body_json(&r);
    ck_assert_uint_eq(json_array_size(j), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 0), "id")), ids[1]);
    json_decref(j);
    http_free(&r);
    free(u);

    /* Across channels, the control view is oldest first too. */
    char other[24], late[24];
    ck_assert_int_eq(fake_discord_add_channel(fd, NULL, "other", other), 0);
    ck_assert_int_eq(fake_discord_inject_message(fd, other, "555555555555555555", "o", NULL), 0);
    ck_assert_int_eq(fake_discord_inject_message(fd, chan, "555555555555555555", "late", late), 0);
    u = ctl_of(fd, "/_fake/messages");
    r = http("GET", u, NULL, NULL);
    j = body_json(&r);
    ck_assert_uint_eq(json_array_size(j), 7);
    for (size_t i = 1; i < 7; i++)
        ck_assert(
            strtoull(json_string_value(json_object_get(json_array_get(j, i - 1), "id")), NULL, 10) <
            strtoull(json_string_value(json_object_get(json_array_get(j, i), "id")), NULL, 10));
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 6), "id")), late);
    json_decref(j);
    http_free(&r);
    free(u);
    fake_discord_stop(fd);
}
END_TEST

START_TEST(faults_as_told)
{
    char chan[24];
    fake_discord *fd = start(chan);
    char *u = NULL;
    ck_assert_int_ge(asprintf(&u, "%s/channels/%s/messages", fake_discord_url(fd), chan), 0);
    const char *b = "{\"content\":\"x\"}";
    ck_assert_int_eq(
        fake_discord_add_fault(fd, "POST /channels/{id}/messages", FD_FAULT_429, 1, 0.25, 0), 0);
    ck_assert_int_eq(fake_discord_add_fault(fd, "*", FD_FAULT_GLOBAL_429, 1, 0.5, 0), 0);
    ck_assert_int_eq(fake_discord_add_fault(fd, "*", FD_FAULT_500, 1, 0, 0), 0);
    ck_assert_int_eq(fake_discord_add_fault(fd, "*", FD_FAULT_403, 1, 0, 0), 0);
    ck_assert_int_eq(fake_discord_add_fault(fd, "*", FD_FAULT_DROP, 1, 0, 0), 0);
    ck_assert_int_eq(fake_discord_add_fault(fd, "*", FD_FAULT_500_AFTER, 1, 0, 0), 0);
    ck_assert_int_eq(fake_discord_add_fault(fd, "GET /channels/{id}", FD_FAULT_500, 1, 0, 0), 0);

    http_res r = http("POST", u, TOKEN, b);
    ck_assert_int_eq(r.status, 429);
    ck_assert_msg(strcasestr(r.headers, "X-RateLimit-Remaining: 0") &&
                      strcasestr(r.headers, "X-RateLimit-Reset-After: 0.250") &&
                      strcasestr(r.headers, "Retry-After: 1") &&
                      strcasestr(r.headers, "X-RateLimit-Bucket:"),
                  "%s", r.headers);
    json_t *j = body_json(&r);
    ck_assert(json_real_value(json_object_get(j, "retry_after")) == 0.25);
    ck_assert(json_is_false(json_object_get(j, "global")));
    json_decref(j);
    http_free(&r);

    r = http("POST", u, TOKEN, b);
    ck_assert_int_eq(r.status, 429);
    ck_assert_msg(strcasestr(r.headers, "X-RateLimit-Global: true"), "%s", r.headers);
    j = body_json(&r);
    ck_assert(json_is_true(json_object_get(j, "global")));
    json_decref(j);
    http_free(&r);

    r = http("POST", u, TOKEN, b);
    ck_assert_int_eq(r.status, 500);
    http_free(&r);
    r = http("POST", u, TOKEN, b);
    ck_assert_int_eq(r.status, 403);
    j = body_json(&r);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "code")), 50013);
    json_decref(j);
    http_free(&r);
    ck_assert_uint_eq(fake_discord_message_count(fd, chan), 0);

    r = http("POST", u, TOKEN, b);
    ck_assert_int_eq(r.cc, CURLE_GOT_NOTHING);
    http_free(&r);
    ck_assert_uint_eq(fake_discord_message_count(fd, chan), 0);

    r = http("POST", u, TOKEN, b); /* accepted, then 500 */
    ck_assert_int_eq(r.status, 500);
    http_free(&r);
    ck_assert_uint_eq(fake_discord_message_count(fd, chan), 1);

    r = http("POST", u, TOKEN, b); /* faults used up; the GET one untouched */
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strcasestr(r.headers, "X-RateLimit-Limit:"), "%s", r.headers);
    http_free(&r);
    free(u);
    ck_assert_int_ge(asprintf(&u, "%s/channels/%s", fake_discord_url(fd), chan), 0);
    r = http("GET", u, TOKEN, NULL);
    ck_assert_int_eq(r.status, 500);
    http_free(&r);
    r = http("GET", u, TOKEN, NULL);
    ck_assert_int_eq(r.status, 200);
    http_free(&r);

    json_t *reqs = fake_discord_requests(fd, 0);
    ck_assert_uint_eq(json_array_size(reqs), 9);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(reqs, 0), "fault")), "429");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(reqs, 4), "status")), -1);
    ck_assert(json_is_null(json_object_get(json_array_get(reqs, 6), "fault")));
    json_decref(reqs);

    /* A delay holds the answer; stopping the fake cuts it short. */
    ck_assert_int_eq(fake_discord_add_fault(fd, "*", FD_FAULT_DELAY, 1, 0, 250), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r = http("GET", u, TOKEN, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_int_eq(r.status, 200);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    ck_assert_msg(ms >= 250, "delay of 250 ms answered after %ld ms", ms);
    http_free(&r);
    free(u);
    fake_discord_stop(fd);
}
END_TEST

/* Statuses of n posts under a fail rate. */
static void fail_pattern(unsigned seed, int n, char *out)
{
    char chan[24];
    fake_discord *fd = start(chan);
    fake_discord_set_fail_rate(fd, 0.3, seed, 0.01);
    char *u = NULL;
    ck_assert_int_ge(asprintf(&u, "%s/channels/%s/messages", fake_discord_url(fd), chan), 0);
    for (int i = 0; i < n; i++) {
        http_res r = http("POST", u, TOKEN, "{\"content\":\"x\"}");
        out[i] = r.status == 200 ? '.' : r.status == 429 ? 'r' : r.status == 500 ? 'e' : '?';
        http_free(&r);
    }
    out[n] = '\0';
    free(u);
    fake_discord_stop(fd);
}

START_TEST(fail_rate_seeded)
{
    char a[201], b[201];
    fail_pattern(42, 200, a);
    fail_pattern(42, 200, b);
    ck_assert_str_eq(a, b); /* reproducible */
    int fails = 0, r = 0, e = 0;
    for (int i = 0; i < 200; i++) {
        fails += a[i] != '.';
        r += a[i] == 'r';
        e += a[i] == 'e';
        ck_assert(a[i] != '?');
    }
    ck_assert_msg(fails >= 40 && fails <= 80, "%d of 200 failed at rate 0.3: %s", fails, a);
    ck_assert_msg(r > 0 && e > 0, "a mix of 429 and 500: %s", a);
}
END_TEST

START_TEST(control_endpoints)
{
    fake_discord *fd = start(NULL);
    char *c = ctl_of(fd, "/_fake/users");
    http_res r = http("POST", c, NULL, "{\"token\":\"tok-b\",\"userId\":\"777777777777777777\"}");
    ck_assert_int_eq(r.status, 200);
    http_free(&r);
    free(c);
    c = ctl_of(fd, "/_fake/users");
    r = http("POST", c, NULL, "{\"token\":\"tok-b\"}");
    ck_assert_int_eq(r.status, 400);
    http_free(&r);
    free(c);

    c = ctl_of(fd, "/_fake/channels");
    r = http("POST", c, NULL, "{\"id\":\"888888888888888888\",\"name\":\"lobby\"}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    http_free(&r);
    r = http("POST", c, NULL, "{\"id\":\"888888888888888888\"}");
    ck_assert_int_eq(r.status, 400); /* duplicate */
    http_free(&r);
    free(c);

    char *u = url_of(fd, "/channels/888888888888888888/messages");
    r = http("POST", u, "tok-b", "{\"content\":\"hi from b\"}");
    ck_assert_int_eq(r.status, 200);
    http_free(&r);
    free(u);

    c = ctl_of(fd, "/_fake/messages");
    r = http("POST", c, NULL,
             "{\"channelId\":\"888888888888888888\",\"authorId\":\"123123123123123123\","
             "\"content\":\"a human\"}");
    ck_assert_int_eq(r.status, 200);
    http_free(&r);
    free(c);
    c = ctl_of(fd, "/_fake/messages?channel=888888888888888888");
    r = http("GET", c, NULL, NULL);
    json_t *j = body_json(&r);
    ck_assert_uint_eq(json_array_size(j), 2);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(json_array_get(j, 0), "author"), "id")),
        "777777777777777777");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 1), "content")),
                     "a human");
    json_decref(j);
    http_free(&r);
    free(c);

    c = ctl_of(fd, "/_fake/requests");
    r = http("GET", c, NULL, NULL);
    j = body_json(&r);
    ck_assert_uint_eq(json_array_size(j), 1);
    json_t *rec = json_array_get(j, 0);
    ck_assert_str_eq(json_string_value(json_object_get(rec, "authUserId")), "777777777777777777");
    ck_assert_str_eq(json_string_value(json_object_get(rec, "path")),
                     "/channels/888888888888888888/messages");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(rec, "body"), "content")),
                     "hi from b");
    ck_assert_int_eq(json_integer_value(json_object_get(rec, "status")), 200);
    json_decref(j);
    http_free(&r);
    r = http("DELETE", c, NULL, NULL);
    http_free(&r);
    r = http("GET", c, NULL, NULL);
    ck_assert_str_eq(r.body, "[]");
    http_free(&r);
    free(c);

    c = ctl_of(fd, "/_fake/faults");
    r = http("POST", c, NULL, "{\"route\":\"*\",\"kind\":\"500\",\"count\":1}");
    ck_assert_int_eq(r.status, 200);
    http_free(&r);
    r = http("POST", c, NULL, "{\"kind\":\"teapot\"}");
    ck_assert_int_eq(r.status, 400);
    http_free(&r);
    free(c);
    u = url_of(fd, "/channels/888888888888888888");
    r = http("GET", u, "tok-b", NULL);
    ck_assert_int_eq(r.status, 500);
    http_free(&r);
    r = http("GET", u, "tok-b", NULL);
    ck_assert_int_eq(r.status, 200);
    http_free(&r);
    r = http("DELETE", u, "tok-b", NULL);
    ck_assert_int_eq(r.status, 200);
    http_free(&r);
    r = http("GET", u, "tok-b", NULL);
    ck_assert_int_eq(r.status, 404);
    http_free(&r);
    free(u);

    c = ctl_of(fd, "/_fake/fail-rate");
    r = http("POST", c, NULL, "{\"rate\":2}");
    ck_assert_int_eq(r.status, 400);
    http_free(&r);
    free(c);
    c = ctl_of(fd, "/_fake/health");
    r = http("GET", c, NULL, NULL);
    ck_assert_int_eq(r.status, 200);
    http_free(&r);
    free(c);
    fake_discord_stop(fd);
}
END_TEST

START_TEST(private_channel_enforced)
{
    char chan[24];
    fake_discord *fd = start(chan);
    ck_assert_int_eq(fake_discord_add_user(fd, "tok-out", "444444444444444444", NULL, 1), 0);
    char *g = NULL;
    ck_assert_int_ge(
        asprintf(&g, "%s/guilds/%s/channels", fake_discord_url(fd), fake_discord_guild_id(fd)), 0);
    char *body = NULL;
    ck_assert_int_ge(asprintf(&body,
                              "{\"name\":\"secret\",\"permission_overwrites\":["
                              "{\"id\":\"%s\",\"type\":0,\"allow\":\"0\",\"deny\":\"1024\"},"
                              "{\"id\":\"%s\",\"type\":1,\"allow\":\"68608\",\"deny\":\"0\"}]}",
                              fake_discord_guild_id(fd), USER),
                     0);
    http_res r = http("POST", g, TOKEN, body);
    ck_assert_int_eq(r.status, 201);
    json_t *ch = body_json(&r);
    const char *id = json_string_value(json_object_get(ch, "id"));
    char *u = NULL;
    ck_assert_int_ge(asprintf(&u, "%s/channels/%s/messages", fake_discord_url(fd), id), 0);
    http_res a = http("POST", u, TOKEN, "{\"content\":\"member\"}");
    http_res b = http("POST", u, "tok-out", "{\"content\":\"outsider\"}");
    http_res c = http("GET", u, "tok-out", NULL);
    ck_assert_int_eq(a.status, 200);
    ck_assert_int_eq(b.status, 403);
    ck_assert_int_eq(c.status, 403);
    json_t *bj = body_json(&b);
    ck_assert_int_eq(json_integer_value(json_object_get(bj, "code")), 50001);
    json_decref(bj);
    json_decref(ch);
    http_free(&r);
    http_free(&a);
    http_free(&b);
    http_free(&c);
    free(u);
    free(g);
    free(body);
    fake_discord_stop(fd);
}
END_TEST

/* ---- build/fake-discord ------------------------------------------------------------------ */

START_TEST(cli_serves_and_stops)
{
    char *dir = tu_mkdtemp();
    char *urlfile = tu_path(dir, "url");
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
        execl(bin, bin, "--port", "0", "--guild", "111111111111111111", "--user",
              "tok-cli=222222222222222222", "--channel", "333333333333333333", "--url-file",
              urlfile, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    char line[128] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    line[strcspn(line, "\n")] = '\0';
    ck_assert_msg(!strncmp(line, "http://127.0.0.1:", 17) && strstr(line, "/api/v10"), "%s", line);
    FILE *uf = fopen(urlfile, "r");
    ck_assert_ptr_nonnull(uf);
    char line2[128] = "";
    ck_assert_ptr_nonnull(fgets(line2, sizeof line2, uf));
    fclose(uf);
    line2[strcspn(line2, "\n")] = '\0';
    ck_assert_str_eq(line, line2);

    char *u = NULL;
    ck_assert_int_ge(asprintf(&u, "%s/channels/333333333333333333/messages", line), 0);
    http_res r = http("POST", u, "tok-cli", "{\"content\":\"via the binary\"}");
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body ? r.body : "");
    json_t *j = body_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "author"), "id")),
                     "222222222222222222");
    ck_assert_str_eq(json_string_value(json_object_get(j, "guild_id")), "111111111111111111");
    json_decref(j);
    http_free(&r);
    free(u);

    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    int status = 0;
    for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) == 0; i++)
        usleep(10000);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    fclose(f);

    /* Bad arguments: a clear refusal, exit 2. */
    pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", 1);
        dup2(devnull, 2);
        execl(bin, bin, "--port", "99999", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    ck_assert_int_eq(WEXITSTATUS(status), 2);
    free(bin);
    tu_rmtree(dir);
    free(urlfile);
    free(dir);
}
END_TEST

Suite *make_fake_discord_suite(void)
{
    Suite *s = suite_create("fake_discord");
    TCase *tc = tcase_create("fake");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, refuses_what_discord_refuses);
    tcase_add_test(tc, enforce_nonce_returns_first_message);
    tcase_add_test(tc, lean_answers_in_full_and_keeps_little);
    tcase_add_test(tc, latency_answers_late_without_the_lock);
    tcase_add_test(tc, messages_read_like_discord);
    tcase_add_test(tc, faults_as_told);
    tcase_add_test(tc, fail_rate_seeded);
    tcase_add_test(tc, control_endpoints);
    tcase_add_test(tc, private_channel_enforced);
    tcase_add_test(tc, cli_serves_and_stops);
    suite_add_tcase(s, tc);
    return s;
}
