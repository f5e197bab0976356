/*
 * check_discord.c -- the Discord REST client against the in-process fake:
 * happy paths, permission overwrites, mentions, rate limits (route, global,
 * unknown bucket, known bucket), retries, refusals, timeouts, abort, and
 * the token never leaving the Authorization header.
 */
#include <arpa/inet.h>
#include <check.h>
#include <locale.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "discord.h"
#include "discord_int.h"
#include "failalloc.h"
#include "scrub.h"
#include "fake_discord.h"
#include "outbox_env.h"

#define TOKEN "tok-Agent.ZZ-secret"
#define USER "200000000000000001"
#define OTHER_TOKEN "tok-outsider"
#define OTHER "200000000000000099"
#define MEMBER1 "300000000000000001"
#define MEMBER2 "300000000000000002"
#define MEMBER3 "300000000000000003"

typedef struct env {
    fake_discord *fd;
    dg_discord *d;
    char chan[24];
    char chan2[24];
    pthread_mutex_t mu;
    char log[1 << 16];
    size_t log_len;
} env;

static void capture(void *state, int level, const char *message)
{
    env *e = state;
    pthread_mutex_lock(&e->mu);
    int n = snprintf(e->log + e->log_len, sizeof e->log - e->log_len, "%d %s\n", level, message);
    if (n > 0 && (size_t)n < sizeof e->log - e->log_len)
        e->log_len += (size_t)n;
    pthread_mutex_unlock(&e->mu);
}

/* Fake + client; tune may be NULL. Short back-off so retries stay fast. */
static env *env_open(const dg_discord_options *tune)
{
    env *e = calloc(1, sizeof *e);
    ck_assert_ptr_nonnull(e);
    pthread_mutex_init(&e->mu, NULL);
    char err[256];
    ck_assert_msg(fake_discord_start(NULL, &e->fd, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(fake_discord_add_user(e->fd, TOKEN, USER, "agent", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(e->fd, OTHER_TOKEN, OTHER, "outsider", 1), 0);
    ck_assert_int_eq(fake_discord_add_channel(e->fd, NULL, "general", e->chan), 0);
    ck_assert_int_eq(fake_discord_add_channel(e->fd, NULL, "random", e->chan2), 0);
    dg_discord_options o;
    memset(&o, 0, sizeof o);
    if (tune)
        o = *tune;
    if (!o.backoff_base_ms)
        o.backoff_base_ms = 10;
    if (!o.backoff_max_ms)
        o.backoff_max_ms = 40;
    if (!o.timeout_ms)
        o.timeout_ms = 10000;
    o.api_base = fake_discord_url(e->fd);
    o.token = TOKEN;
    o.guild_id = fake_discord_guild_id(e->fd);
    o.log = capture;
    o.log_state = e;
    ck_assert_msg(dg_discord_new(&o, &e->d, err, sizeof err) == OC_OK, "%s", err);
    return e;
}

static void env_close(env *e)
{
    /* Whatever happened, the token never reached a log line. */
    pthread_mutex_lock(&e->mu);
    ck_assert_msg(!strstr(e->log, TOKEN), "token found in the client's log: %s", e->log);
    pthread_mutex_unlock(&e->mu);
    dg_discord_free(e->d);
    fake_discord_stop(e->fd);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

static json_t *req_at(json_t *reqs, size_t i)
{
    ck_assert_uint_gt(json_array_size(reqs), i);
    return json_array_get(reqs, i);
}

static long long req_ms(json_t *reqs, size_t i)
{
    return (long long)json_integer_value(json_object_get(req_at(reqs, i), "tMs"));
}

static long req_status(json_t *reqs, size_t i)
{
    return (long)json_integer_value(json_object_get(req_at(reqs, i), "status"));
}

static const char *jstr(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* ---- happy paths ----------------------------------------------------------------------- */

/* The post body is written by hand (the jansson tree and dump
 * were a third of the outbox's CPU per message); it must be the very text
 * jansson's compact dump gives, for texts that need every kind of escape. */
START_TEST(post_body_is_jansson_text)
{
    const char *texts[] = {
        "plain",
        "quote \" backslash \\ slash / tab \t nl \n cr \r bs \b ff \f",
        "controls \x01\x02\x1f\x7f end",
        "utf-8 \xc3\xa9t\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x8e\xb5 <@" MEMBER1 ">",
        "\\\\\"\"\n",
    };
    const char *m2[] = {MEMBER1, "300000000000000002", MEMBER1};
    for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
        for (int variant = 0; variant < 3; variant++) {
            size_t nm = variant == 0 ? 0 : variant == 1 ? 1 : 3;
            const char *nonce = variant == 1 ? NULL : "n\"x\\1";
            char *got = NULL;
            dg_discord_err err;
            memset(&err, 0, sizeof err);
            ck_assert_int_eq(dgd_post_body("123", texts[t], m2, nm, nonce, &got, &err), OC_OK);
            json_t *users = json_array();
            for (size_t i = 0; i < nm && i < 2; i++)
                json_array_append_new(users, json_string(m2[i]));
            json_t *want = json_pack("{s:s, s:{s:[], s:o}}", "content", texts[t],
                                     "allowed_mentions", "parse", "users", users);
            if (nonce) {
                json_object_set_new(want, "nonce", json_string(nonce));
                json_object_set_new(want, "enforce_nonce", json_true());
            }
            char *ws = json_dumps(want, JSON_COMPACT);
            ck_assert_msg(!strcmp(got, ws), "text %zu variant %d:\n got  %s\n want %s", t, variant,
                          got, ws);
            free(ws);
            free(got);
            json_decref(want);
        }
    }
}
END_TEST

START_TEST(post_message_happy)
{
    env *e = env_open(NULL);
    const char *mentions[] = {MEMBER1};
    char *mid = NULL;
    dg_discord_err err;
    int rc = dg_discord_post_message(e->d, e->chan, "hello <@" MEMBER1 ">", mentions, 1,
                                     "nonce-happy-1", &mid, &err);
    ck_assert_msg(rc == OC_OK, "%s", err.message);
    ck_assert_str_eq(err.message, "");
    ck_assert_int_eq(err.attempts, 1);
    ck_assert_ptr_nonnull(mid);

    json_t *msgs = fake_discord_messages(e->fd, e->chan);
    ck_assert_uint_eq(json_array_size(msgs), 1);
    json_t *m = json_array_get(msgs, 0);
    ck_assert_str_eq(jstr(m, "id"), mid);
    ck_assert_str_eq(jstr(json_object_get(m, "author"), "id"), USER);
    ck_assert_str_eq(jstr(m, "content"), "hello <@" MEMBER1 ">");
    ck_assert_str_eq(jstr(m, "nonce"), "nonce-happy-1");

    json_t *reqs = fake_discord_requests(e->fd, 0);
    ck_assert_uint_eq(json_array_size(reqs), 1);
    json_t *r = req_at(reqs, 0);
    ck_assert_str_eq(jstr(r, "method"), "POST");
    ck_assert_str_eq(jstr(r, "route"), "POST /channels/{id}/messages");
    ck_assert_str_eq(jstr(r, "authorization"), "Bot " TOKEN);
    ck_assert_str_eq(jstr(r, "contentType"), "application/json");
    ck_assert_msg(!strncmp(jstr(r, "userAgent"), "DiscordBot (", 12), "%s", jstr(r, "userAgent"));
    json_t *body = json_object_get(r, "body");
    ck_assert(json_is_true(json_object_get(body, "enforce_nonce")));
    ck_assert_str_eq(jstr(body, "nonce"), "nonce-happy-1");
    json_t *want = json_pack("{s:[], s:[s]}", "parse", "users", MEMBER1);
    ck_assert(json_equal(json_object_get(body, "allowed_mentions"), want));
    json_decref(want);
    json_decref(reqs);
    json_decref(msgs);
    free(mid);
    env_close(e);
}
END_TEST

START_TEST(get_messages_after)
{
    env *e = env_open(NULL);
    char *ids[5];
    for (int i = 0; i < 5; i++) {
        char text[16], nonce[16];
        snprintf(text, sizeof text, "m%d", i);
        snprintf(nonce, sizeof nonce, "n%d", i);
        ck_assert_int_eq(
            dg_discord_post_message(e->d, e->chan, text, NULL, 0, nonce, &ids[i], NULL), OC_OK);
    }
    dg_discord_message *ms = NULL;
    size_t n = 0;
    dg_discord_err err;
    ck_assert_int_eq(dg_discord_get_messages(e->d, e->chan, ids[1], 2, &ms, &n, &err), OC_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(ms[0].id, ids[2]); /* oldest first */
    ck_assert_str_eq(ms[1].id, ids[3]);
    ck_assert_str_eq(ms[0].content, "m2");
    ck_assert_str_eq(ms[0].author_id, USER);
    ck_assert_int_eq(ms[0].author_bot, 1);
    ck_assert_str_eq(ms[0].nonce, "n2");
    ck_assert_str_eq(ms[0].channel_id, e->chan);
    dg_discord_messages_free(ms, n);

    ck_assert_int_eq(dg_discord_get_messages(e->d, e->chan, NULL, 100, &ms, &n, &err), OC_OK);
    ck_assert_uint_eq(n, 5);
    for (int i = 0; i < 5; i++)
        ck_assert_str_eq(ms[i].id, ids[i]);
    dg_discord_messages_free(ms, n);

    ck_assert_int_eq(dg_discord_get_messages(e->d, e->chan, ids[4], 10, &ms, &n, &err), OC_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(ms);
    ck_assert_int_eq(dg_discord_get_messages(e->d, e->chan, NULL, 0, &ms, &n, &err),
                     OC_ERR_INVALID);
    ck_assert_int_eq(dg_discord_get_messages(e->d, e->chan, "12x", 10, &ms, &n, &err),
                     OC_ERR_INVALID);
    for (int i = 0; i < 5; i++)
        free(ids[i]);
    env_close(e);
}
END_TEST

START_TEST(private_channel_overwrites_exact)
{
    env *e = env_open(NULL);
    /* The agent bot itself is one of the members, so it can post afterwards;
     * a duplicate is dropped. */
    const char *members[] = {MEMBER1, USER, MEMBER2, MEMBER1};
    dg_discord_channel_spec spec = {
        .name = "design-review",
        .topic = "talk it through",
        .member_ids = members,
        .n_members = 4,
    };
    char *cid = NULL;
    dg_discord_err err;
    int rc = dg_discord_create_private_channel(e->d, &spec, &cid, &err);
    ck_assert_msg(rc == OC_OK, "%s", err.message);
    ck_assert(dg_snowflake_valid(cid));

    json_t *reqs = fake_discord_requests(e->fd, 0);
    ck_assert_uint_eq(json_array_size(reqs), 1);
    json_t *r = req_at(reqs, 0);
    char path[64];
    snprintf(path, sizeof path, "/guilds/%s/channels", fake_discord_guild_id(e->fd));
    ck_assert_str_eq(jstr(r, "path"), path);
    json_t *body = json_object_get(r, "body");
    ck_assert_str_eq(jstr(body, "name"), "design-review");
    ck_assert_int_eq(json_integer_value(json_object_get(body, "type")), 0);
    ck_assert_str_eq(jstr(body, "topic"), "talk it through");
    json_t *want =
        json_pack("[{s:s, s:i, s:s, s:s}, {s:s, s:i, s:s, s:s}, {s:s, s:i, s:s, s:s},"
                  " {s:s, s:i, s:s, s:s}]",
                  "id", fake_discord_guild_id(e->fd), "type", 0, "allow", "0", "deny", "1024", "id",
                  MEMBER1, "type", 1, "allow", "68608", "deny", "0", "id", USER, "type", 1, "allow",
                  "68608", "deny", "0", "id", MEMBER2, "type", 1, "allow", "68608", "deny", "0");
    char *got = json_dumps(json_object_get(body, "permission_overwrites"), JSON_COMPACT);
    ck_assert_msg(json_equal(json_object_get(body, "permission_overwrites"), want), "%s", got);
    free(got);
    json_decref(want);
    json_decref(reqs);

    /* The fake created it private: members post, an outsider is refused. */
    ck_assert_int_eq(dg_discord_post_message(e->d, cid, "member speaks", NULL, 0, NULL, NULL, &err),
                     OC_OK);
    dg_discord_options o;
    memset(&o, 0, sizeof o);
    o.api_base = fake_discord_url(e->fd);
    o.token = OTHER_TOKEN;
    dg_discord *outsider = NULL;
    char ebuf[128];
    ck_assert_int_eq(dg_discord_new(&o, &outsider, ebuf, sizeof ebuf), OC_OK);
    rc = dg_discord_post_message(outsider, cid, "let me in", NULL, 0, NULL, NULL, &err);
    ck_assert_int_eq(rc, OC_ERR_DENIED);
    ck_assert_int_eq(err.http_status, 403);
    ck_assert_msg(strstr(err.message, "Missing Access"), "%s", err.message);
    dg_discord_free(outsider);
    free(cid);
    env_close(e);
}
END_TEST

/* GET /guilds/{id}/channels: the newest text channel of that name whose
 * topic holds the needle, or none; a wrong guild is Discord's 404. */
START_TEST(find_channel_by_name_and_topic)
{
    env *e = env_open(NULL);
    const char *members[] = {USER};
    dg_discord_channel_spec spec = {
        .name = "side", .topic = "notes\ndg-call:1", .member_ids = members, .n_members = 1};
    char *a = NULL, *b = NULL, *c = NULL, *found = NULL;
    dg_discord_err err;
    ck_assert_int_eq(dg_discord_create_private_channel(e->d, &spec, &a, &err), OC_OK);
    spec.topic = "dg-call:2";
    ck_assert_int_eq(dg_discord_create_private_channel(e->d, &spec, &b, &err), OC_OK);
    spec.topic = "notes\ndg-call:1";
    spec.name = "other";
    ck_assert_int_eq(dg_discord_create_private_channel(e->d, &spec, &c, &err), OC_OK);

    ck_assert_int_eq(dg_discord_find_channel(e->d, NULL, "side", "dg-call:1", &found, &err), OC_OK);
    ck_assert_str_eq(found, a);
    free(found);
    ck_assert_int_eq(dg_discord_find_channel(e->d, NULL, "side", NULL, &found, &err), OC_OK);
    ck_assert_str_eq(found, b); /* the newest */
    free(found);
    ck_assert_int_eq(dg_discord_find_channel(e->d, NULL, "side", "dg-call:3", &found, &err), OC_OK);
    ck_assert_ptr_null(found);
    ck_assert_int_eq(dg_discord_find_channel(e->d, "123", "side", NULL, &found, &err),
                     OC_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err.message, "Unknown Guild"), "%s", err.message);
    ck_assert_ptr_null(found);
    json_t *reqs = fake_discord_requests(e->fd, 0);
    json_t *r = req_at(reqs, 3);
    ck_assert_str_eq(jstr(r, "route"), "GET /guilds/{id}/channels");
    ck_assert_str_eq(jstr(r, "method"), "GET");
    json_decref(reqs);
    free(a);
    free(b);
    free(c);
    env_close(e);
}
END_TEST

START_TEST(channel_spec_refused_locally)
{
    env *e = env_open(NULL);
    const char *bad_member[] = {"not-a-snowflake"};
    dg_discord_channel_spec spec = {.name = "Bad Name"};
    char *cid = NULL;
    dg_discord_err err;
    ck_assert_int_eq(dg_discord_create_private_channel(e->d, &spec, &cid, &err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err.message, "upper-case"), "%s", err.message);
    spec.name = "ok-name";
    spec.member_ids = bad_member;
    spec.n_members = 1;
    ck_assert_int_eq(dg_discord_create_private_channel(e->d, &spec, &cid, &err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err.message, "member 0"), "%s", err.message);
    ck_assert_uint_eq(fake_discord_request_count(e->fd), 0);

    char why[128];
    ck_assert_int_eq(dg_discord_check_channel_name("a b", why, sizeof why), OC_ERR_INVALID);
    ck_assert_int_eq(dg_discord_check_channel_name("", why, sizeof why), OC_ERR_INVALID);
    char longname[120];
    memset(longname, 'a', 101);
    longname[101] = '\0';
    ck_assert_int_eq(dg_discord_check_channel_name(longname, why, sizeof why), OC_ERR_INVALID);
    longname[100] = '\0';
    ck_assert_int_eq(dg_discord_check_channel_name(longname, why, sizeof why), OC_OK);
    ck_assert_int_eq(dg_discord_check_channel_name("überlegung-2", why, sizeof why), OC_OK);
    /* Emoji sequences (joiner, variation selector) are not invisible marks;
     * a zero-width space and a capital of another script are refused. */
    ck_assert_int_eq(dg_discord_check_channel_name("\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f"
                                                   "\x91\xa9-team",
                                                   why, sizeof why),
                     OC_OK);
    ck_assert_int_eq(
        dg_discord_check_channel_name("\xe2\x9d\xa4\xef\xb8\x8f-fans", why, sizeof why), OC_OK);
    ck_assert_int_eq(dg_discord_check_channel_name("a\xe2\x80\x8b"
                                                   "b",
                                                   why, sizeof why),
                     OC_ERR_INVALID);
    ck_assert_int_eq(dg_discord_check_channel_name("\xc3\x9c"
                                                   "berlegung",
                                                   why, sizeof why),
                     OC_ERR_INVALID);
    ck_assert_msg(strstr(why, "U+00DC"), "%s", why);
    ck_assert(dg_snowflake_valid("18446744073709551615"));
    ck_assert(!dg_snowflake_valid("18446744073709551616"));
    ck_assert(!dg_snowflake_valid("0123"));
    ck_assert(!dg_snowflake_valid(""));
    ck_assert(!dg_snowflake_valid(NULL));
    env_close(e);
}
END_TEST

START_TEST(everyone_and_here_never_ping)
{
    env *e = env_open(NULL);
    const char *mentions[] = {MEMBER1};
    dg_discord_err err;
    ck_assert_int_eq(dg_discord_post_message(
                         e->d, e->chan, "@everyone @here look <@" MEMBER1 "> and <@" MEMBER2 ">",
                         mentions, 1, "n-everyone", NULL, &err),
                     OC_OK);
    json_t *reqs = fake_discord_requests(e->fd, 0);
    json_t *am = json_object_get(json_object_get(req_at(reqs, 0), "body"), "allowed_mentions");
    ck_assert(json_is_array(json_object_get(am, "parse")));
    ck_assert_uint_eq(json_array_size(json_object_get(am, "parse")), 0);
    ck_assert_uint_eq(json_array_size(json_object_get(am, "users")), 1);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(am, "users"), 0)), MEMBER1);
    json_t *msgs = fake_discord_messages(e->fd, e->chan);
    json_t *m = json_array_get(msgs, 0);
    ck_assert(json_is_false(json_object_get(m, "mention_everyone")));
    json_t *pinged = json_object_get(m, "mentions");
    ck_assert_uint_eq(json_array_size(pinged), 1);
    ck_assert_str_eq(jstr(json_array_get(pinged, 0), "id"), MEMBER1);
    json_decref(msgs);
    json_decref(reqs);

    /* Without a mention list nobody is pinged at all. */
    ck_assert_int_eq(dg_discord_post_message(e->d, e->chan, "@everyone <@" MEMBER1 ">", NULL, 0,
                                             NULL, NULL, &err),
                     OC_OK);
    msgs = fake_discord_messages(e->fd, e->chan);
    m = json_array_get(msgs, 1);
    ck_assert(json_is_false(json_object_get(m, "mention_everyone")));
    ck_assert_uint_eq(json_array_size(json_object_get(m, "mentions")), 0);
    json_decref(msgs);
    env_close(e);
}
END_TEST

/* ---- rate limits ---------------------------------------------------------------------------- */

START_TEST(route_429_waits_retry_after)
{
    env *e = env_open(NULL);
    ck_assert_int_eq(
        fake_discord_add_fault(e->fd, "POST /channels/{id}/messages", FD_FAULT_429, 1, 0.3, 0), 0);
    dg_discord_err err;
    char *mid = NULL;
    int rc =
        dg_discord_post_message(e->d, e->chan, "after the limit", NULL, 0, "n-429", &mid, &err);
    ck_assert_msg(rc == OC_OK, "%s", err.message);
    json_t *reqs = fake_discord_requests(e->fd, 0);
    ck_assert_uint_eq(json_array_size(reqs), 2);
    ck_assert_int_eq(req_status(reqs, 0), 429);
    ck_assert_int_eq(req_status(reqs, 1), 200);
    long long gap = req_ms(reqs, 1) - req_ms(reqs, 0);
    ck_assert_msg(gap >= 300, "retried after %lld ms, retry_after was 300 ms", gap);
    ck_assert_uint_eq(fake_discord_message_count(e->fd, e->chan), 1);
    ck_assert_int_eq(err.attempts, 2);
    json_decref(reqs);
    free(mid);
    env_close(e);
}
END_TEST

typedef struct post_job {
    env *e;
    const char *chan;
    const char *nonce;
    int rc;
    dg_discord_err err;
} post_job;

static void *post_thread(void *arg)
{
    post_job *j = arg;
    j->rc = dg_discord_post_message(j->e->d, j->chan, "from a thread", NULL, 0, j->nonce, NULL,
                                    &j->err);
    return NULL;
}

/* Index of the first recorded request with status, or -1. */
static int find_status(fake_discord *fd, long status, long long wait_ms)
{
    long long until = obe_mono_ms() + wait_ms;
    do {
        json_t *reqs = fake_discord_requests(fd, 0);
        for (size_t i = 0; i < json_array_size(reqs); i++) {
            if (req_status(reqs, i) == status) {
                json_decref(reqs);
                return (int)i;
            }
        }
        json_decref(reqs);
        usleep(2000);
    } while (obe_mono_ms() < until);
    return -1;
}

START_TEST(global_429_blocks_every_route)
{
    env *e = env_open(NULL);
    /* Learn both routes' buckets first, so only the global limit can hold
     * the second request back. */
    ck_assert_int_eq(dg_discord_post_message(e->d, e->chan, "warm a", NULL, 0, NULL, NULL, NULL),
                     OC_OK);
    ck_assert_int_eq(dg_discord_post_message(e->d, e->chan2, "warm b", NULL, 0, NULL, NULL, NULL),
                     OC_OK);
    fake_discord_clear_requests(e->fd);
    char route[64];
    snprintf(route, sizeof route, "POST /channels/%s/messages", e->chan);
    ck_assert_int_eq(fake_discord_add_fault(e->fd, route, FD_FAULT_GLOBAL_429, 1, 0.5, 0), 0);

    post_job a = {.e = e, .chan = e->chan, .nonce = "n-global-a"};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, post_thread, &a), 0);
    ck_assert_msg(find_status(e->fd, 429, 5000) == 0, "no 429 recorded");
    /* Give the client a moment to read the 429 before the other route goes. */
    usleep(50 * 1000);
    dg_discord_err err;
    int rc =
        dg_discord_post_message(e->d, e->chan2, "other route", NULL, 0, "n-global-b", NULL, &err);
    ck_assert_msg(rc == OC_OK, "%s", err.message);
    pthread_join(t, NULL);
    ck_assert_msg(a.rc == OC_OK, "%s", a.err.message);

    json_t *reqs = fake_discord_requests(e->fd, 0);
    ck_assert_uint_eq(json_array_size(reqs), 3);
    long long t429 = req_ms(reqs, 0);
    for (size_t i = 1; i < 3; i++) {
        long long gap = req_ms(reqs, i) - t429;
        ck_assert_msg(gap >= 500, "request %zu (%s) went %lld ms after a global 429 of 500 ms", i,
                      jstr(req_at(reqs, i), "path"), gap);
        ck_assert_int_eq(req_status(reqs, i), 200);
    }
    ck_assert_uint_eq(fake_discord_message_count(e->fd, e->chan), 2);
    ck_assert_uint_eq(fake_discord_message_count(e->fd, e->chan2), 2);
    json_decref(reqs);
    env_close(e);
}
END_TEST

START_TEST(unknown_bucket_one_at_a_time)
{
    env *e = env_open(NULL);
    /* The first request is held 300 ms by the fake; a second one on the same
     * route (bucket still unknown) must wait for its answer. */
    ck_assert_int_eq(fake_discord_add_fault(e->fd, "*", FD_FAULT_DELAY, 1, 0, 300), 0);
    post_job a = {.e = e, .chan = e->chan, .nonce = "n-unk-a"};
    post_job b = {.e = e, .chan = e->chan, .nonce = "n-unk-b"};
    pthread_t ta, tb;
    ck_assert_int_eq(pthread_create(&ta, NULL, post_thread, &a), 0);
    ck_assert_int_eq(fake_discord_wait_requests(e->fd, 1, 5000), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, post_thread, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_int_eq(a.rc, OC_OK);
    ck_assert_int_eq(b.rc, OC_OK);
    json_t *reqs = fake_discord_requests(e->fd, 0);
    ck_assert_uint_eq(json_array_size(reqs), 2);
    long long gap = req_ms(reqs, 1) - req_ms(reqs, 0);
    ck_assert_msg(gap >= 300, "second request overlapped the first (%lld ms)", gap);
    json_decref(reqs);
    env_close(e);
}
END_TEST

START_TEST(known_bucket_waits_for_reset)
{
    env *e = env_open(NULL);
    fake_discord_set_rate_limit(e->fd, 2, 0.6);
    for (int i = 0; i < 3; i++) {
        char nonce[16];
        snprintf(nonce, sizeof nonce, "n-bucket-%d", i);
        ck_assert_int_eq(
            dg_discord_post_message(e->d, e->chan, "within limits", NULL, 0, nonce, NULL, NULL),
            OC_OK);
    }
    json_t *reqs = fake_discord_requests(e->fd, 0);
    /* The client read Remaining: 0 and waited: no 429 at all. */
    ck_assert_uint_eq(json_array_size(reqs), 3);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(req_status(reqs, i), 200);
    long long gap = req_ms(reqs, 2) - req_ms(reqs, 0);
    ck_assert_msg(gap >= 550, "third request %lld ms after the first; window is 600 ms", gap);
    json_decref(reqs);
    env_close(e);
}
END_TEST

/* ---- retries and refusals ------------------------------------------------------------------- */

START_TEST(server_error_three_times_then_success)
{
    env *e = env_open(NULL);
    ck_assert_int_eq(fake_discord_add_fault(e->fd, "*", FD_FAULT_500, 3, 0, 0), 0);
    dg_discord_err err;
    char *mid = NULL;
    int rc = dg_discord_post_message(e->d, e->chan, "eventually", NULL, 0, "n-500", &mid, &err);
    ck_assert_msg(rc == OC_OK, "%s", err.message);
    ck_assert_int_eq(err.attempts, 4);
    ck_assert_uint_eq(fake_discord_request_count(e->fd), 4);
    ck_assert_uint_eq(fake_discord_message_count(e->fd, e->chan), 1);
    free(mid);
    pthread_mutex_lock(&e->mu);
    ck_assert_msg(strstr(e->log, "answered 500"), "retries are logged: %s", e->log);
    /* Counted from 1: the first retry is "retry 1", the third the last. */
    ck_assert_msg(strstr(e->log, "retry 1 of ") && strstr(e->log, "retry 3 of ") &&
                      !strstr(e->log, "retry 4 of "),
                  "retries miscounted: %s", e->log);
    pthread_mutex_unlock(&e->mu);
    env_close(e);
}
END_TEST

START_TEST(server_errors_bounded)
{
    dg_discord_options o = {.max_attempts = 3};
    env *e = env_open(&o);
    ck_assert_int_eq(fake_discord_add_fault(e->fd, "*", FD_FAULT_500, 10, 0, 0), 0);
    dg_discord_err err;
    int rc = dg_discord_post_message(e->d, e->chan, "never", NULL, 0, "n-500b", NULL, &err);
    ck_assert_int_eq(rc, OC_ERR_IO);
    ck_assert_int_eq(err.retryable, 1);
    ck_assert_int_eq(err.http_status, 500);
    ck_assert_int_eq(err.attempts, 3);
    ck_assert_uint_eq(fake_discord_request_count(e->fd), 3);
    env_close(e);
}
END_TEST

/* Every GET (dgd_get_json): a 2xx answer of the wrong JSON shape is an
 * error naming the call, not a crash or an empty success; outputs untouched. */
START_TEST(get_answer_of_wrong_shape_refused)
{
    env *e = env_open(NULL);
    dg_discord_err err;
    dg_discord_message *ms = (dg_discord_message *)1;
    size_t n = 7;
    ck_assert_int_eq(fake_discord_add_fault(e->fd, "*", FD_FAULT_SHAPE_AFTER, 3, 0, 0), 0);
    ck_assert_int_eq(dg_discord_get_messages(e->d, e->chan, NULL, 10, &ms, &n, &err), OC_ERR_IO);
    ck_assert_msg(strstr(err.message, "get messages: Discord's answer is not an array"), "%s",
                  err.message);
    ck_assert_ptr_null(ms);
    ck_assert_uint_eq(n, 0);
    char *found = (char *)"x";
    ck_assert_int_eq(dg_discord_find_channel(e->d, NULL, "side", NULL, &found, &err), OC_ERR_IO);
    ck_assert_msg(strstr(err.message, "find channel: Discord's answer is not an array"), "%s",
                  err.message);
    ck_assert_ptr_null(found);
    char user[64] = "x", global[64] = "y";
    ck_assert_int_eq(
        dg_discord_get_user_names(e->d, USER, user, sizeof user, global, sizeof global, &err),
        OC_ERR_IO);
    ck_assert_msg(strstr(err.message, "get user: Discord's answer is not an object"), "%s",
                  err.message);
    ck_assert_str_eq(user, "");
    ck_assert_str_eq(global, "");
    ck_assert_uint_eq(fake_discord_request_count(e->fd), 3); /* not retried */
    env_close(e);
}
END_TEST

START_TEST(forbidden_not_retried)
{
    env *e = env_open(NULL);
    ck_assert_int_eq(fake_discord_add_fault(e->fd, "*", FD_FAULT_403, 5, 0, 0), 0);
    dg_discord_err err;
    int rc = dg_discord_post_message(e->d, e->chan, "denied", NULL, 0, "n-403", NULL, &err);
    ck_assert_int_eq(rc, OC_ERR_DENIED);
    ck_assert_int_eq(err.http_status, 403);
    ck_assert_int_eq(err.discord_code, 50013);
    ck_assert_int_eq(err.retryable, 0);
    ck_assert_msg(strstr(err.message, "Missing Permissions"), "%s", err.message);
    ck_assert_uint_eq(fake_discord_request_count(e->fd), 1);
    ck_assert_uint_eq(fake_discord_message_count(e->fd, NULL), 0);
    env_close(e);
}
END_TEST

START_TEST(not_found_and_unauthorized)
{
    env *e = env_open(NULL);
    dg_discord_err err;
    int rc = dg_discord_post_message(e->d, "123456789012345678", "x", NULL, 0, NULL, NULL, &err);
    ck_assert_int_eq(rc, OC_ERR_NOT_FOUND);
    ck_assert_int_eq(err.http_status, 404);
    ck_assert_int_eq(err.discord_code, 10003);
    ck_assert_msg(strstr(err.message, "Unknown Channel"), "%s", err.message);

    dg_discord_options o;
    memset(&o, 0, sizeof o);
    o.api_base = fake_discord_url(e->fd);
    o.token = "tok-nobody-knows";
    dg_discord *bad = NULL;
    char ebuf[128];
    ck_assert_int_eq(dg_discord_new(&o, &bad, ebuf, sizeof ebuf), OC_OK);
    rc = dg_discord_post_message(bad, e->chan, "x", NULL, 0, "n-401", NULL, &err);
    ck_assert_int_eq(rc, OC_ERR_DENIED);
    ck_assert_int_eq(err.http_status, 401);
    ck_assert_int_eq(err.retryable, 0);
    ck_assert_msg(strstr(err.message, "Unauthorized"), "%s", err.message);
    ck_assert_msg(!strstr(err.message, "tok-nobody-knows"), "%s", err.message);
    dg_discord_free(bad);
    ck_assert_uint_eq(fake_discord_request_count(e->fd), 2);
    env_close(e);
}
END_TEST

START_TEST(bad_request_carries_discords_message)
{
    env *e = env_open(NULL);
    /* The client refuses an over-long content itself, without a request... */
    char big[2100];
    memset(big, 'x', 2001);
    big[2001] = '\0';
    dg_discord_err err;
    ck_assert_int_eq(dg_discord_post_message(e->d, e->chan, big, NULL, 0, NULL, NULL, &err),
                     OC_ERR_INVALID);
    ck_assert_int_eq(dg_discord_post_message(e->d, e->chan, "ok", NULL, 0,
                                             "12345678901234567890123456", NULL, &err),
                     OC_ERR_INVALID);
    ck_assert_uint_eq(fake_discord_request_count(e->fd), 0);
    /* ...and surfaces Discord's own words when it refuses one. */
    json_t *body = json_pack("{s:s}", "content", big);
    char path[64];
    snprintf(path, sizeof path, "/channels/%s/messages", e->chan);
    int rc = dg_discord_request(e->d, "POST", path, body, 0, NULL, &err);
    json_decref(body);
    ck_assert_int_eq(rc, OC_ERR_INVALID);
    ck_assert_int_eq(err.http_status, 400);
    ck_assert_int_eq(err.discord_code, 50035);
    ck_assert_msg(strstr(err.message, "Invalid Form Body") &&
                      strstr(err.message, "content: Must be 2000 or fewer in length."),
                  "%s", err.message);
    ck_assert_uint_eq(fake_discord_request_count(e->fd), 1);
    env_close(e);
}
END_TEST

START_TEST(dropped_connection_retried_with_nonce)
{
    env *e = env_open(NULL);
    /* Accepted, then the answer is lost: the retry carries the same nonce
     * and Discord returns the first message. */
    ck_assert_int_eq(fake_discord_add_fault(e->fd, "*", FD_FAULT_DROP_AFTER, 1, 0, 0), 0);
    ck_assert_int_eq(fake_discord_add_fault(e->fd, "*", FD_FAULT_DROP, 1, 0, 0), 0);
    dg_discord_err err;
    char *mid = NULL;
    int rc = dg_discord_post_message(e->d, e->chan, "once", NULL, 0, "n-drop", &mid, &err);
    ck_assert_msg(rc == OC_OK, "%s", err.message);
    ck_assert_int_eq(err.attempts, 3);
    ck_assert_uint_eq(fake_discord_message_count(e->fd, e->chan), 1);
    json_t *msgs = fake_discord_messages(e->fd, e->chan);
    ck_assert_str_eq(jstr(json_array_get(msgs, 0), "id"), mid);
    json_decref(msgs);
    free(mid);

    /* Without a nonce a broken transfer is not retried: it may have posted. */
    ck_assert_int_eq(fake_discord_add_fault(e->fd, "*", FD_FAULT_DROP_AFTER, 1, 0, 0), 0);
    rc = dg_discord_post_message(e->d, e->chan, "maybe", NULL, 0, NULL, NULL, &err);
    ck_assert_int_eq(rc, OC_ERR_IO);
    ck_assert_int_eq(err.attempts, 1);
    ck_assert_int_eq(err.retryable, 1);
    env_close(e);
}
END_TEST

START_TEST(timeout_bounded)
{
    dg_discord_options o = {.timeout_ms = 400};
    env *e = env_open(&o);
    ck_assert_int_eq(fake_discord_add_fault(e->fd, "*", FD_FAULT_DELAY, 5, 0, 5000), 0);
    dg_discord_err err;
    long long t0 = obe_mono_ms();
    int rc = dg_discord_post_message(e->d, e->chan, "slow", NULL, 0, "n-slow", NULL, &err);
    long long took = obe_mono_ms() - t0;
    ck_assert_int_eq(rc, OC_ERR_IO);
    ck_assert_int_eq(err.retryable, 1);
    ck_assert_msg(strstr(err.message, "timed out"), "%s", err.message);
    ck_assert_msg(took >= 390 && took < 2500, "call took %lld ms with a 400 ms bound", took);
    env_close(e);
}
END_TEST

START_TEST(rate_limit_beyond_bound_fails_fast)
{
    dg_discord_options o = {.timeout_ms = 500};
    env *e = env_open(&o);
    ck_assert_int_eq(fake_discord_add_fault(e->fd, "*", FD_FAULT_429, 1, 30.0, 0), 0);
    dg_discord_err err;
    long long t0 = obe_mono_ms();
    int rc = dg_discord_post_message(e->d, e->chan, "later", NULL, 0, "n-later", NULL, &err);
    long long took = obe_mono_ms() - t0;
    ck_assert_int_eq(rc, OC_ERR_IO);
    ck_assert_int_eq(err.retryable, 1);
    ck_assert_msg(err.retry_after_ms > 29000, "retry_after_ms %ld", err.retry_after_ms);
    ck_assert_msg(took < 2000, "took %lld ms", took);
    ck_assert_uint_eq(fake_discord_request_count(e->fd), 1);
    env_close(e);
}
END_TEST

typedef struct abort_job {
    env *e;
    int rc;
    dg_discord_err err;
    long long ended;
} abort_job;

static void *abort_thread(void *arg)
{
    abort_job *j = arg;
    j->rc = dg_discord_post_message(j->e->d, j->e->chan, "hang", NULL, 0, "n-hang", NULL, &j->err);
    j->ended = obe_mono_ms();
    return NULL;
}

START_TEST(abort_ends_transfer_quickly)
{
    env *e = env_open(NULL);
    ck_assert_int_eq(fake_discord_add_fault(e->fd, "*", FD_FAULT_DELAY, 1, 0, 20000), 0);
    abort_job j = {.e = e};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, abort_thread, &j), 0);
    ck_assert_int_eq(fake_discord_wait_requests(e->fd, 1, 5000), 0);
    long long t0 = obe_mono_ms();
    dg_discord_set_abort(e->d, 1);
    pthread_join(t, NULL);
    ck_assert_int_eq(j.rc, OC_ERR_IO);
    ck_assert_msg(strstr(j.err.message, "aborted"), "%s", j.err.message);
    ck_assert_msg(j.ended - t0 < 1000, "abort took %lld ms", j.ended - t0);
    /* Calls fail at once while aborted, and work again after. */
    dg_discord_err err;
    ck_assert_int_eq(dg_discord_post_message(e->d, e->chan, "x", NULL, 0, NULL, NULL, &err),
                     OC_ERR_IO);
    dg_discord_set_abort(e->d, 0);
    ck_assert_int_eq(dg_discord_post_message(e->d, e->chan, "x", NULL, 0, NULL, NULL, &err), OC_OK);
    env_close(e);
}
END_TEST

START_TEST(options_refused)
{
    dg_discord *d = NULL;
    char err[200];
    dg_discord_options o;
    memset(&o, 0, sizeof o);
    o.api_base = "ftp://x";
    o.token = "t";
    ck_assert_int_eq(dg_discord_new(&o, &d, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "apiBase"), "%s", err);
    o.api_base = "http://127.0.0.1:1";
    o.token = "has space";
    ck_assert_int_eq(dg_discord_new(&o, &d, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "moderatorToken"), "%s", err);
    ck_assert_msg(!strstr(err, "has space"), "%s", err);
    o.token = "t";
    o.guild_id = "abc";
    ck_assert_int_eq(dg_discord_new(&o, &d, err, sizeof err), OC_ERR_INVALID);
    ck_assert_ptr_null(d);
}
END_TEST

START_TEST(connection_refused_is_retryable)
{
    dg_discord_options o;
    memset(&o, 0, sizeof o);
    o.api_base = "http://127.0.0.1:1/api/v10"; /* nothing listens on port 1 */
    o.token = "t";
    o.max_attempts = 2;
    o.backoff_base_ms = 10;
    dg_discord *d = NULL;
    char ebuf[128];
    ck_assert_int_eq(dg_discord_new(&o, &d, ebuf, sizeof ebuf), OC_OK);
    dg_discord_err err;
    int rc = dg_discord_post_message(d, "123456789012345678", "x", NULL, 0, NULL, NULL, &err);
    ck_assert_int_eq(rc, OC_ERR_IO);
    ck_assert_int_eq(err.retryable, 1);
    ck_assert_int_eq(err.attempts, 2);
    ck_assert_int_eq(err.http_status, 0);
    dg_discord_free(d);
}
END_TEST

/* Many threads on one client: every message arrives once. */
typedef struct many_job {
    env *e;
    int base;
    int failures;
} many_job;

static void *many_thread(void *arg)
{
    many_job *j = arg;
    for (int i = 0; i < 20; i++) {
        char nonce[24], text[32];
        snprintf(nonce, sizeof nonce, "t%d-%d", j->base, i);
        snprintf(text, sizeof text, "thread %d msg %d", j->base, i);
        if (dg_discord_post_message(j->e->d, (j->base & 1) ? j->e->chan : j->e->chan2, text, NULL,
                                    0, nonce, NULL, NULL) != OC_OK)
            j->failures++;
    }
    return NULL;
}

START_TEST(concurrent_callers)
{
    env *e = env_open(NULL);
    fake_discord_set_fail_rate(e->fd, 0.2, 7, 0.01);
    many_job jobs[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (many_job){.e = e, .base = i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, many_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(jobs[i].failures, 0);
    }
    ck_assert_uint_eq(fake_discord_message_count(e->fd, NULL), 80);
    env_close(e);
}
END_TEST

START_TEST(connections_reused)
{
    env *e = env_open(NULL);
    for (int i = 0; i < 5; i++) {
        char nonce[16];
        snprintf(nonce, sizeof nonce, "n-reuse-%d", i);
        ck_assert_int_eq(
            dg_discord_post_message(e->d, e->chan, "same wire", NULL, 0, nonce, NULL, NULL), OC_OK);
    }
    dg_discord_message *ms = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_discord_get_messages(e->d, e->chan, NULL, 10, &ms, &n, NULL), OC_OK);
    dg_discord_messages_free(ms, n);
    /* A request that must not run twice gets a fresh connection. */
    ck_assert_int_eq(dg_discord_post_message(e->d, e->chan, "no nonce", NULL, 0, NULL, NULL, NULL),
                     OC_OK);
    json_t *reqs = fake_discord_requests(e->fd, 0);
    ck_assert_uint_eq(json_array_size(reqs), 7);
    json_int_t port = json_integer_value(json_object_get(req_at(reqs, 0), "clientPort"));
    ck_assert_int_gt(port, 0);
    for (size_t i = 1; i < 6; i++)
        ck_assert_int_eq(json_integer_value(json_object_get(req_at(reqs, i), "clientPort")), port);
    ck_assert_int_ne(json_integer_value(json_object_get(req_at(reqs, 6), "clientPort")), port);
    json_decref(reqs);
    env_close(e);
}
END_TEST

/* ---- a scripted server: answers exactly what a test says ---------------------------- */

/* For answers the fake never gives (odd headers, bodies echoing the request):
 * every request gets `status`, `body` (each "%AUTH%" replaced by the request's
 * Authorization header) and the headers in hdr; arrival times are kept. */
typedef struct script_srv {
    struct MHD_Daemon *mhd;
    char url[64];
    pthread_mutex_t mu;
    int status;
    char body[512];
    const char *hdr[8][2];
    int n_hdr;
    int count;
    long long t_ms[256];
} script_srv;

static enum MHD_Result script_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                         const char *method, const char *version,
                                         const char *upload, size_t *upload_size, void **con)
{
    (void)url;
    (void)method;
    (void)version;
    (void)upload;
    script_srv *s = cls;
    static int marker;
    if (!*con) {
        *con = &marker;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    char body[1024] = "";
    pthread_mutex_lock(&s->mu);
    if (s->count < 256)
        s->t_ms[s->count] = obe_mono_ms();
    s->count++;
    const char *b = s->body;
    size_t o = 0;
    while (*b && o + 1 < sizeof body) {
        if (!strncmp(b, "%AUTH%", 6)) {
            o += (size_t)snprintf(body + o, sizeof body - o, "%s", auth ? auth : "");
            b += 6;
        } else {
            body[o++] = *b++;
        }
    }
    body[o < sizeof body ? o : sizeof body - 1] = '\0';
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
    for (int i = 0; i < s->n_hdr; i++)
        MHD_add_response_header(r, s->hdr[i][0], s->hdr[i][1]);
    int status = s->status;
    pthread_mutex_unlock(&s->mu);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static script_srv *script_start(int status, const char *body)
{
    script_srv *s = calloc(1, sizeof *s);
    ck_assert_ptr_nonnull(s);
    pthread_mutex_init(&s->mu, NULL);
    s->status = status;
    snprintf(s->body, sizeof s->body, "%s", body);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
                              NULL, NULL, script_on_request, s, MHD_OPTION_SOCK_ADDR,
                              (struct sockaddr *)&sa, MHD_OPTION_END);
    ck_assert_ptr_nonnull(s->mhd);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%u/api/v10", (unsigned)di->port);
    return s;
}

static void script_header(script_srv *s, const char *name, const char *value)
{
    ck_assert_int_lt(s->n_hdr, 8);
    s->hdr[s->n_hdr][0] = name;
    s->hdr[s->n_hdr][1] = value;
    s->n_hdr++;
}

/* Forget the headers given so far (between requests: none in flight). */
static void script_headers_clear(script_srv *s)
{
    pthread_mutex_lock(&s->mu);
    s->n_hdr = 0;
    pthread_mutex_unlock(&s->mu);
}

static int script_count(script_srv *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->count;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void script_stop(script_srv *s)
{
    MHD_stop_daemon(s->mhd);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static dg_discord *script_client(script_srv *s, long timeout_ms)
{
    dg_discord_options o = {
        .api_base = s->url,
        .token = TOKEN,
        .timeout_ms = timeout_ms,
        .backoff_base_ms = 10,
        .backoff_max_ms = 40,
    };
    dg_discord *d = NULL;
    char err[256];
    ck_assert_msg(dg_discord_new(&o, &d, err, sizeof err) == OC_OK, "%s", err);
    return d;
}

START_TEST(huge_retry_after_fails_fast)
{
    /* A retry_after too large for a long: the call must give up at once with
     * the wait in retry_after_ms, not hammer the server with 1 ms waits. */
    script_srv *s = script_start(429, "{\"message\":\"You are being rate limited.\","
                                      "\"retry_after\":1e300,\"global\":false}");
    dg_discord *d = script_client(s, 2000);
    dg_discord_err err;
    int rc = dg_discord_post_message(d, "400000000000000001", "x", NULL, 0, "n-huge", NULL, &err);
    ck_assert_int_eq(rc, OC_ERR_IO);
    ck_assert_int_eq(err.retryable, 1);
    /* The hold is capped at an hour from the first answer; the time between
     * the two calls (milliseconds, more on a loaded machine) is already
     * spent when the second one asks. */
    ck_assert_msg(err.retry_after_ms >= 3500L * 1000, "retry_after_ms %ld", err.retry_after_ms);
    ck_assert_int_eq(script_count(s), 1);
    ck_assert_int_eq(err.attempts, 1);
    dg_discord_free(d);
    script_stop(s);
}
END_TEST

START_TEST(huge_reset_after_holds_the_route)
{
    /* X-RateLimit-Reset-After beyond any int64 of milliseconds: the route is
     * exhausted for (at least) as long as the client can wait, so the next
     * call fails fast without a request. */
    script_srv *s = script_start(200, "{\"id\":\"500000000000000001\"}");
    script_header(s, "X-RateLimit-Bucket", "b1");
    script_header(s, "X-RateLimit-Limit", "1");
    script_header(s, "X-RateLimit-Remaining", "0");
    script_header(s, "X-RateLimit-Reset-After", "99999999999999999999999.5");
    dg_discord *d = script_client(s, 2000);
    dg_discord_err err;
    ck_assert_int_eq(
        dg_discord_post_message(d, "400000000000000001", "one", NULL, 0, "n-1", NULL, &err), OC_OK);
    int rc = dg_discord_post_message(d, "400000000000000001", "two", NULL, 0, "n-2", NULL, &err);
    ck_assert_int_eq(rc, OC_ERR_IO);
    ck_assert_int_eq(err.retryable, 1);
    /* The hold is capped at an hour from the first answer; the time between
     * the two calls (milliseconds, more on a loaded machine) is already
     * spent when the second one asks. */
    ck_assert_msg(err.retry_after_ms >= 3500L * 1000, "retry_after_ms %ld", err.retry_after_ms);
    ck_assert_int_eq(script_count(s), 1);
    dg_discord_free(d);
    script_stop(s);
}
END_TEST

START_TEST(forgetting_idle_routes_keeps_a_held_one)
{
    /* More routes than the client keeps (1024): idle ones whose window is
     * over are forgotten, a route still held by its limit never is, and a
     * forgotten route works again (as unknown). */
    script_srv *s = script_start(200, "{\"id\":\"500000000000000001\"}");
    script_header(s, "X-RateLimit-Limit", "1");
    script_header(s, "X-RateLimit-Remaining", "0");
    script_header(s, "X-RateLimit-Reset-After", "3600");
    dg_discord *d = script_client(s, 2000);
    dg_discord_err err;
    const char *held = "400000000000000001";
    ck_assert_int_eq(dg_discord_post_message(d, held, "hold", NULL, 0, "n-h", NULL, &err), OC_OK);
    script_headers_clear(s);
    script_header(s, "X-RateLimit-Limit", "5");
    script_header(s, "X-RateLimit-Remaining", "4");
    script_header(s, "X-RateLimit-Reset-After", "0.001");
    char ch[24], nonce[24];
    for (int i = 0; i < 1100; i++) {
        snprintf(ch, sizeof ch, "4100000000000%05d", i);
        snprintf(nonce, sizeof nonce, "n-%d", i);
        if (i % 64 == 0)
            usleep(2000); /* the windows before are over: those routes are idle */
        ck_assert_msg(dg_discord_post_message(d, ch, "x", NULL, 0, nonce, NULL, &err) == OC_OK,
                      "channel %d: %s", i, err.message);
    }
    int before = script_count(s);
    ck_assert_int_eq(dg_discord_post_message(d, held, "again", NULL, 0, "n-h2", NULL, &err),
                     OC_ERR_IO);
    ck_assert_int_eq(err.retryable, 1);
    ck_assert_msg(err.retry_after_ms >= 3500L * 1000, "retry_after_ms %ld", err.retry_after_ms);
    ck_assert_int_eq(script_count(s), before); /* refused without a request */
    snprintf(ch, sizeof ch, "4100000000000%05d", 0);
    ck_assert_int_eq(dg_discord_post_message(d, ch, "y", NULL, 0, "n-y", NULL, &err), OC_OK);
    ck_assert_int_eq(script_count(s), before + 1);
    dg_discord_free(d);
    script_stop(s);
}
END_TEST

/* Build a de_DE.UTF-8 locale (decimal comma) under dir with localedef;
 * 0 when it is usable through LOCPATH. */
static int make_comma_locale(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8' >/dev/null 2>&1", dir);
    if (system(cmd) != 0)
        return -1;
    setenv("LOCPATH", dir, 1);
    return setlocale(LC_NUMERIC, "de_DE.UTF-8") ? 0 : -1;
}

START_TEST(reset_after_read_the_same_in_any_locale)
{
    /* A host may run with a decimal-comma locale; "0.600" still means 600 ms. */
    char dir[] = "/tmp/dg-locale-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    if (make_comma_locale(dir) != 0) {
        fprintf(stderr, "reset_after_read_the_same_in_any_locale: no localedef/de_DE here, "
                        "skipped\n");
        char rm[128];
        snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
        ck_assert_int_eq(system(rm), 0);
        return;
    }
    ck_assert_double_eq(strtod("0.5", NULL), 0.0); /* the locale is really in force */
    script_srv *s = script_start(200, "{\"id\":\"500000000000000001\"}");
    script_header(s, "X-RateLimit-Bucket", "b1");
    script_header(s, "X-RateLimit-Limit", "1");
    script_header(s, "X-RateLimit-Remaining", "0");
    script_header(s, "X-RateLimit-Reset-After", "0.600");
    dg_discord *d = script_client(s, 5000);
    ck_assert_int_eq(
        dg_discord_post_message(d, "400000000000000001", "one", NULL, 0, "n-1", NULL, NULL), OC_OK);
    ck_assert_int_eq(
        dg_discord_post_message(d, "400000000000000001", "two", NULL, 0, "n-2", NULL, NULL), OC_OK);
    ck_assert_int_eq(script_count(s), 2);
    long long gap = s->t_ms[1] - s->t_ms[0];
    setlocale(LC_NUMERIC, "C");
    ck_assert_msg(gap >= 590, "second request after %lld ms, before the bucket's reset", gap);
    dg_discord_free(d);
    script_stop(s);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(rm), 0);
}
END_TEST

START_TEST(token_echoed_by_server_never_in_error)
{
    /* A proxy or a misconfigured apiBase may echo the request; the token
     * must not travel on in err->message (tool results, the outbox's
     * last_error, logs). */
    const char *bodies[] = {
        "bad gateway: you sent %AUTH%",
        "{\"message\":\"denied for %AUTH%\",\"code\":0}",
    };
    for (int i = 0; i < 2; i++) {
        script_srv *s = script_start(400, bodies[i]);
        dg_discord *d = script_client(s, 2000);
        dg_discord_err err;
        int rc =
            dg_discord_post_message(d, "400000000000000001", "x", NULL, 0, "n-echo", NULL, &err);
        ck_assert_int_eq(rc, OC_ERR_INVALID);
        ck_assert_int_eq(script_count(s), 1);
        ck_assert_msg(!strstr(err.message, TOKEN), "token in error text: %s", err.message);
        ck_assert_msg(strstr(err.message, "Bot "), "the rest of the text is kept: %s", err.message);
        dg_discord_free(d);
        script_stop(s);
    }
}
END_TEST

/* One pipelined post answered by the script server; its result. */
static dg_discord_done pipe_post_once(script_srv *s)
{
    dg_discord *d = script_client(s, 2000);
    dg_discord_pipe *p = NULL;
    ck_assert_int_eq(dg_discord_pipe_new(d, 1, &p), OC_OK);
    dg_discord_err err;
    ck_assert_int_eq(dg_discord_pipe_post(p, 7, "400000000000000001", "x", NULL, 0, "n-pipe", &err),
                     OC_OK);
    dg_discord_done done;
    memset(&done, 0, sizeof done);
    size_t n = 0;
    for (int i = 0; i < 100 && n == 0; i++)
        n = dg_discord_pipe_run(p, 100, &done);
    ck_assert_int_eq((int)n, 1);
    ck_assert_int_eq((int)done.tag, 7);
    dg_discord_pipe_free(p);
    dg_discord_free(d);
    return done;
}

START_TEST(pipe_takes_the_top_level_id)
{
    /* The answer's id is read without parsing the whole message: ids of
     * nested objects, an "id" inside a string and key order must not
     * fool it; an escaped id is read by the full parser. */
    static const struct {
        const char *body, *id;
    } cases[] = {
        {"{\"author\":{\"id\":\"111\",\"x\":[{\"id\":\"9\"}]},\"content\":\"a "
         "\\\"id\\\":\\\"333\\\" "
         "b\",\"mentions\":[{\"id\":\"222\"}],\"id\":\"444555\",\"n\":[1,{\"id\":\"7\"}]}",
         "444555"},
        {" {\"id\" : \"1234\", \"author\": {\"id\": \"5\"}}", "1234"},
        {"{\"author\":{\"id\":\"5\"},\"id\":\"12\\u0033\"}", "123"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        script_srv *s = script_start(200, cases[i].body);
        dg_discord_done done = pipe_post_once(s);
        ck_assert_msg(done.rc == OC_OK, "case %zu: %s", i, done.err.message);
        ck_assert_str_eq(done.message_id, cases[i].id);
        free(done.message_id);
        script_stop(s);
    }
    /* Only nested ids: no message id, an error that says so. */
    script_srv *s = script_start(200, "{\"author\":{\"id\":\"5\"},\"mentions\":[{\"id\":\"6\"}]}");
    dg_discord_done done = pipe_post_once(s);
    ck_assert_int_ne(done.rc, OC_OK);
    ck_assert_ptr_null(done.message_id);
    ck_assert_msg(strstr(done.err.message, "no message id"), "%s", done.err.message);
    script_stop(s);
}
END_TEST

/* The pipe's posts go with one of two header lists (client.c: the one
 * without "Expect:" is the other's tail): a short body and one over 1 KB
 * both carry the token, Content-Type and User-Agent and neither asks for
 * 100-continue; a prepared post that the pipe refuses (full) is taken and
 * freed, with an error that says why. */
START_TEST(pipe_posts_carry_the_headers_and_no_expect)
{
    env *e = env_open(NULL);
    dg_discord_pipe *p = NULL;
    ck_assert_int_eq(dg_discord_pipe_new(e->d, 1, &p), OC_OK);
    static char longtext[1500];
    memset(longtext, 'l', sizeof longtext - 1);
    const char *texts[] = {"short", longtext};
    for (int i = 0; i < 2; i++) {
        dg_discord_err err;
        dg_discord_post *post = NULL;
        char nonce[16];
        snprintf(nonce, sizeof nonce, "n-hdr-%d", i);
        ck_assert_int_eq(
            dg_discord_post_prepare(e->d, e->chan, texts[i], NULL, 0, nonce, &post, &err), OC_OK);
        ck_assert_int_eq(dg_discord_pipe_submit(p, (uint64_t)i + 1, post, &err), OC_OK);
        if (i == 0) {
            dg_discord_post *extra = NULL;
            ck_assert_int_eq(
                dg_discord_post_prepare(e->d, e->chan, "extra", NULL, 0, "n-x", &extra, &err),
                OC_OK);
            ck_assert_int_ne(dg_discord_pipe_submit(p, 99, extra, &err), OC_OK);
            ck_assert_msg(strstr(err.message, "full"), "%s", err.message);
        }
        dg_discord_done done;
        size_t n = 0;
        for (int k = 0; k < 100 && n == 0; k++)
            n = dg_discord_pipe_run(p, 100, &done);
        ck_assert_int_eq((int)n, 1);
        ck_assert_msg(done.rc == OC_OK, "%s", done.err.message);
        ck_assert_int_eq((int)done.tag, i + 1);
        free(done.message_id);
    }
    json_t *reqs = fake_discord_requests(e->fd, 0);
    ck_assert_int_eq((int)json_array_size(reqs), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *r = req_at(reqs, i);
        const char *expect = json_string_value(json_object_get(r, "expect"));
        ck_assert_msg(!expect, "request %zu asks for Expect: %s", i, expect);
        ck_assert_str_eq(json_string_value(json_object_get(r, "contentType")), "application/json");
        ck_assert_ptr_nonnull(
            strstr(json_string_value(json_object_get(r, "userAgent")), "DiscordBot"));
        ck_assert_str_eq(json_string_value(json_object_get(r, "authUserId")), USER);
    }
    ck_assert_int_eq((int)strlen(json_string_value(
                         json_object_get(json_object_get(req_at(reqs, 1), "body"), "content"))),
                     (int)sizeof longtext - 1);
    json_decref(reqs);
    dg_discord_pipe_free(p);
    env_close(e);
}
END_TEST

/* ---- altered echoes of the token --------------------------------------------------------- */

typedef struct echo_log {
    pthread_mutex_t mu;
    char text[16384];
    size_t len;
} echo_log;

static void echo_capture(void *state, int level, const char *message)
{
    echo_log *l = state;
    pthread_mutex_lock(&l->mu);
    int n = snprintf(l->text + l->len, sizeof l->text - l->len, "%d %s\n", level, message);
    if (n > 0 && (size_t)n < sizeof l->text - l->len)
        l->len += (size_t)n;
    pthread_mutex_unlock(&l->mu);
}

/* Some 8-character piece of TOKEN (any case) in text: the piece, else NULL. */
static const char *token_piece_in(const char *text)
{
    static char piece[16];
    size_t n = strlen(TOKEN);
    for (size_t i = 0; i + 8 <= n; i++) {
        snprintf(piece, sizeof piece, "%.8s", TOKEN + i);
        if (strcasestr(text, piece))
            return piece;
    }
    return NULL;
}

/* TOKEN with every character as a JSON \u escape (in a C string: one
 * backslash each), into out. */
static void escaped_token(char *out, size_t len, size_t chars)
{
    size_t o = 0;
    for (size_t i = 0; TOKEN[i] && i < chars && o + 7 < len; i++)
        o += (size_t)snprintf(out + o, len - o, "\\u%04x", (unsigned char)TOKEN[i]);
    out[o] = '\0';
}

START_TEST(token_altered_echo_never_logged)
{
    /* A server answering with a piece of the token (a truncated "Bot xxxx"),
     * a JSON-escaped spelling, another case, or a cut-off body: none of it
     * may reach the error text or a log line; 401/403 bodies are never
     * repeated at all; what is kept is cut short. */
    char esc[256], esc_half[128], bodies[7][512];
    escaped_token(esc, sizeof esc, 99);
    escaped_token(esc_half, sizeof esc_half, 12);
    snprintf(bodies[0], sizeof bodies[0], "{\"message\":\"invalid Bot %.12s\",\"code\":0}", TOKEN);
    snprintf(bodies[1], sizeof bodies[1], "{\"message\":\"denied for Bot %s\",\"code\":0}", esc);
    snprintf(bodies[2], sizeof bodies[2], "{\"message\":\"cut off: Bot %s", esc_half);
    snprintf(bodies[3], sizeof bodies[3], "proxy error for BOT TOK-AGENT.ZZ-SECRET");
    snprintf(bodies[4], sizeof bodies[4],
             "{\"message\":\"ECHO-MARKER %%AUTH%% %s\",\"code\":50013}", esc);
    snprintf(bodies[5], sizeof bodies[5], "ECHO-MARKER bad token %.10s", TOKEN + 4);
    memset(bodies[6], 'x', 450);
    bodies[6][450] = '\0';
    static const int status[] = {400, 404, 500, 400, 403, 401, 400};
    for (int i = 0; i < 7; i++) {
        script_srv *s = script_start(status[i], bodies[i]);
        echo_log *lg = calloc(1, sizeof *lg);
        pthread_mutex_init(&lg->mu, NULL);
        dg_discord_options o = {
            .api_base = s->url,
            .token = TOKEN,
            .timeout_ms = 5000,
            .backoff_base_ms = 5,
            .backoff_max_ms = 10,
            .max_attempts = 2,
            .log = echo_capture,
            .log_state = lg,
        };
        dg_discord *d = NULL;
        char ebuf[256];
        ck_assert_msg(dg_discord_new(&o, &d, ebuf, sizeof ebuf) == OC_OK, "%s", ebuf);
        dg_discord_err err;
        int rc =
            dg_discord_post_message(d, "400000000000000001", "x", NULL, 0, "n-echo", NULL, &err);
        ck_assert_int_ne(rc, OC_OK);
        ck_assert_int_eq(err.http_status, status[i]);
        const char *p1 = token_piece_in(err.message);
        ck_assert_msg(!p1, "body %d: token piece '%s' in error text: %s", i, p1, err.message);
        const char *p2 = token_piece_in(lg->text);
        ck_assert_msg(!p2, "body %d: token piece '%s' in the log: %s", i, p2, lg->text);
        ck_assert_msg(!strstr(err.message, "\\u00"), "body %d: escapes left: %s", i, err.message);
        if (status[i] == 401 || status[i] == 403) {
            ck_assert_msg(!strstr(err.message, "ECHO-MARKER") && !strstr(lg->text, "ECHO-MARKER"),
                          "body %d: a %d body was repeated: %s", i, status[i], err.message);
            ck_assert_msg(
                strstr(err.message, status[i] == 403 ? "Missing Permissions" : "Unauthorized"),
                "%s", err.message);
        }
        if (i == 6) {
            ck_assert_msg(strstr(err.message, "xxx...") && !strstr(err.message, bodies[6]),
                          "long body not cut short: %s", err.message);
        }
        if (i == 0)
            ck_assert_msg(strstr(err.message, "invalid Bot "), "rest kept: %s", err.message);
        dg_discord_free(d);
        script_stop(s);
        pthread_mutex_destroy(&lg->mu);
        free(lg);
    }
}
END_TEST

/* ---- the scrubber (scrub.h), which transport.c runs on every body it logs */

START_TEST(scrub_decodes_json_escapes)
{
    /* Every simple escape, \u of 1, 2, 3 and 4 UTF-8 bytes (a surrogate
     * pair), a lone surrogate, \u0000 and malformed escapes kept as written. */
    char t[] = "a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti \\u0041\\u00e9\\u20ac\\ud83d\\ude00"
               " \\ud83dx \\ude00 \\u0000| \\u12G4 \\q \\";
    dg_unescape_json_text(t);
    ck_assert_str_eq(t, "a\"b\\c/d\be\ff\ng\rh\ti A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
                        " ?x ?  | \\u12G4 \\q \\");
    dg_unescape_json_text(NULL); /* nothing to do */
}
END_TEST

START_TEST(scrub_masks_escaped_and_cut_token)
{
    const char *tok = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.abcdefghijklmnopqrstuvwxyz012345";
    /* A JSON-escaped spelling (\u0041 for a letter) becomes readable only
     * once decoded; then the scrubber masks it, and a cut "Bot MTIz..." too. */
    char body[256];
    snprintf(body, sizeof body,
             "{\"message\":\"bad \\u004dTIzNDU2Nzg5MDEyMzQ1Njc4.GhIj\","
             "\"echo\":\"Bot %.20s\"}",
             tok);
    dg_unescape_json_text(body);
    dg_scrub_secret(body, tok);
    ck_assert_ptr_null(strstr(body, "MTIzNDU2Nzg5"));
    ck_assert_ptr_nonnull(strstr(body, "**********"));
    char keep[] = "no secret here";
    dg_scrub_secret(keep, NULL);
    dg_scrub_secret(keep, "");
    ck_assert_str_eq(keep, "no secret here");
}
END_TEST

START_TEST(scrub_cut_for_log)
{
    /* Control characters become spaces; a cut never splits a UTF-8
     * sequence and is marked with "...". */
    char a[32] = "x\ty\nz\x7f";
    dg_cut_for_log(a, 20);
    ck_assert_str_eq(a, "x y z ");
    char b[32] = "ab\xc3\xa9\xc3\xa9zzzz"; /* a b é é z z z z */
    dg_cut_for_log(b, 3);                  /* byte 3 is inside the first é */
    ck_assert_str_eq(b, "ab...");
    char c[32] = "abcdef";
    dg_cut_for_log(c, 3);
    ck_assert_str_eq(c, "abc...");
    dg_cut_for_log(NULL, 3);
}
END_TEST

/* ---- out of memory ------------------------------------------------------------------------
 * Each call of the client once per allocation it makes (its own and
 * jansson's; libcurl's and the fake's threads are not counted), that
 * allocation failing: a status, never a crash, a leak (SANITIZE=1) or a
 * half-filled result; the client still works afterwards. A post that
 * Discord accepted may still answer OC_ERR_NOMEM: the nonce makes the
 * caller's resend return the same message.
 */
typedef struct oom_out {
    int rc;
    int bad_result; /* an OC_OK answer without its result, or an error with one */
    char message[600];
} oom_out;

/* No Check assertion in here: Check is linked in, its allocations count. */
static void oom_call(env *e, int k, oom_out *o)
{
    dg_discord_err err;
    memset(&err, 0, sizeof err);
    char *id = NULL;
    int rc, want_id = 1;
    const char *mentions[] = {MEMBER1, MEMBER2};
    switch (k) {
    case 0:
        rc = dg_discord_post_message(e->d, e->chan, "hi <@" MEMBER1 ">", mentions, 2, "oom-nonce-1",
                                     &id, &err);
        break;
    case 1: {
        dg_discord_message *m = NULL;
        size_t n = 0;
        rc = dg_discord_get_messages(e->d, e->chan, NULL, 50, &m, &n, &err);
        want_id = 0;
        o->bad_result = rc == OC_OK ? n > 0 && !m : m != NULL;
        dg_discord_messages_free(m, n);
        break;
    }
    case 2: {
        const char *members[] = {MEMBER1, MEMBER2, MEMBER1};
        dg_discord_channel_spec spec = {
            .name = "oom-room", .topic = "t-oom", .member_ids = members, .n_members = 3};
        rc = dg_discord_create_private_channel(e->d, &spec, &id, &err);
        break;
    }
    case 3: rc = dg_discord_find_channel(e->d, NULL, "general", NULL, &id, &err); break;
    default: {
        dg_discord_pipe *p = NULL;
        want_id = 0;
        rc = dg_discord_pipe_new(e->d, 4, &p);
        if (rc == OC_OK) {
            rc = dg_discord_pipe_post(p, 7, e->chan, "piped", NULL, 0, "oom-nonce-2", &err);
            dg_discord_done done[4];
            for (int i = 0; rc == OC_OK && dg_discord_pipe_busy(p) && i < 100; i++) {
                size_t got = dg_discord_pipe_run(p, 100, done);
                for (size_t j = 0; j < got; j++) {
                    rc = done[j].rc;
                    if (rc != OC_OK)
                        err = done[j].err;
                    o->bad_result |= (rc == OC_OK) != (done[j].message_id != NULL);
                    free(done[j].message_id);
                }
            }
            dg_discord_pipe_free(p);
        }
        break;
    }
    }
    if (want_id)
        o->bad_result = (rc == OC_OK) != (id != NULL);
    free(id);
    o->rc = rc;
    snprintf(o->message, sizeof o->message, "%s", err.message);
}

START_TEST(out_of_memory_each_call)
{
    ck_assert_msg(fa_available(), "check_all was linked without the allocation wrappers");
    env *e = env_open(NULL);
    long n;
    for (n = 1; n < 100000; n++) {
        oom_out o = {0};
        fa_arm_own(n);
        oom_call(e, _i, &o);
        int hit = fa_disarm();
        ck_assert_msg(o.rc == OC_OK || o.rc == OC_ERR_NOMEM || o.rc == OC_ERR_IO,
                      "call %d, allocation %ld: status %d (%s)", _i, n, o.rc, o.message);
        ck_assert_msg(!o.bad_result, "call %d, allocation %ld: status %d and result disagree", _i,
                      n, o.rc);
        if (!hit) {
            ck_assert_int_eq(o.rc, OC_OK);
            break;
        }
    }
    ck_assert_int_gt(n, 1);
    env_close(e);
}
END_TEST

Suite *make_discord_suite(void)
{
    Suite *s = suite_create("discord");
    TCase *tc = tcase_create("client");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, scrub_decodes_json_escapes);
    tcase_add_test(tc, scrub_masks_escaped_and_cut_token);
    tcase_add_test(tc, scrub_cut_for_log);
    tcase_add_test(tc, post_message_happy);
    tcase_add_test(tc, post_body_is_jansson_text);
    tcase_add_test(tc, get_messages_after);
    tcase_add_test(tc, private_channel_overwrites_exact);
    tcase_add_test(tc, find_channel_by_name_and_topic);
    tcase_add_test(tc, channel_spec_refused_locally);
    tcase_add_test(tc, everyone_and_here_never_ping);
    tcase_add_test(tc, route_429_waits_retry_after);
    tcase_add_test(tc, global_429_blocks_every_route);
    tcase_add_test(tc, unknown_bucket_one_at_a_time);
    tcase_add_test(tc, known_bucket_waits_for_reset);
    tcase_add_test(tc, server_error_three_times_then_success);
    tcase_add_test(tc, server_errors_bounded);
    tcase_add_test(tc, forbidden_not_retried);
    tcase_add_test(tc, get_answer_of_wrong_shape_refused);
    tcase_add_test(tc, not_found_and_unauthorized);
    tcase_add_test(tc, bad_request_carries_discords_message);
    tcase_add_test(tc, dropped_connection_retried_with_nonce);
    tcase_add_test(tc, timeout_bounded);
    tcase_add_test(tc, rate_limit_beyond_bound_fails_fast);
    tcase_add_test(tc, abort_ends_transfer_quickly);
    tcase_add_test(tc, options_refused);
    tcase_add_test(tc, connection_refused_is_retryable);
    tcase_add_test(tc, concurrent_callers);
    tcase_add_test(tc, connections_reused);
    tcase_add_test(tc, huge_retry_after_fails_fast);
    tcase_add_test(tc, huge_reset_after_holds_the_route);
    tcase_add_test(tc, forgetting_idle_routes_keeps_a_held_one);
    tcase_add_test(tc, reset_after_read_the_same_in_any_locale);
    tcase_add_test(tc, token_echoed_by_server_never_in_error);
    tcase_add_test(tc, pipe_takes_the_top_level_id);
    tcase_add_test(tc, pipe_posts_carry_the_headers_and_no_expect);
    tcase_add_test(tc, token_altered_echo_never_logged);
    suite_add_tcase(s, tc);
    TCase *oom = tcase_create("oom");
    tcase_set_timeout(oom, 300);
    tcase_add_loop_test(oom, out_of_memory_each_call, 0, 5);
    suite_add_tcase(s, oom);
    return s;
}
