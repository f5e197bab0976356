/*
 * check_slack.c -- the Slack client (slack/) against the in-process fake
 * Slack on 127.0.0.1: every operation, the keyed post found again after
 * its answer was lost (no duplicate), 429 Retry-After and tier pacing
 * (judged by the fake's recorded arrival times and request counts, never
 * by wall-clock bounds), missing_scope, archived channels, name
 * sanitising, the mention table, and the token never echoed.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_slack.h"
#include "slack.h"
#include "slack_int.h"

#define MOD_TOKEN "xoxb-1111-2222-ModeratorSecretToken"
#define MOD "UMOD0001"
#define AG1 "UAG00001"
#define AG2 "UAG00002"
#define AG3 "UAG00003"
#define ALICE "UALICE01"
#define NARROW_TOKEN "xoxb-3333-4444-NarrowScopesToken"
#define NARROW "UNARROW1"

typedef struct env {
    fake_slack *fs;
    dg_slack *s;
    char work[16]; /* public #work: moderator, agents, alice */
    pthread_mutex_t mu;
    char log[1 << 15];
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

static void add_bot(fake_slack *fs, const char *id, const char *token, const char *scopes)
{
    fake_slack_user_spec u = {.user_id = id, .token = token, .bot = 1, .scopes = scopes};
    ck_assert_int_eq(fake_slack_add_user(fs, &u), 0);
}

/* A client of the moderator (or another token) on the fake. */
static dg_slack *client(env *e, const char *token, const dg_slack_options *tune)
{
    dg_slack_options o = tune ? *tune : (dg_slack_options){0};
    o.api_base = fake_slack_url(e->fs);
    o.token = token;
    if (!tune)
        o.no_pacing = 1;
    if (!o.timeout_ms)
        o.timeout_ms = 5000;
    o.backoff_base_ms = 10;
    o.backoff_max_ms = 40;
    o.log = capture;
    o.log_state = e;
    dg_slack *s = NULL;
    char err[512];
    ck_assert_msg(dg_slack_new(&o, &s, err, sizeof err) == DG_OK, "%s", err);
    return s;
}

static env *env_open(const dg_slack_options *tune)
{
    env *e = calloc(1, sizeof *e);
    ck_assert_ptr_nonnull(e);
    pthread_mutex_init(&e->mu, NULL);
    char err[256];
    ck_assert_msg(fake_slack_start(NULL, &e->fs, err, sizeof err) == 0, "%s", err);
    add_bot(e->fs, MOD, MOD_TOKEN, NULL);
    add_bot(e->fs, AG1, "xoxb-agent-one-token", NULL);
    add_bot(e->fs, AG2, "xoxb-agent-two-token", NULL);
    add_bot(e->fs, AG3, "xoxb-agent-three-token", NULL);
    add_bot(e->fs, NARROW, NARROW_TOKEN, "channels:history,channels:read");
    fake_slack_user_spec alice = {.user_id = ALICE, .name = "alice"};
    ck_assert_int_eq(fake_slack_add_user(e->fs, &alice), 0);
    const char *members[] = {MOD, AG1, AG2, ALICE, NARROW, NULL};
    ck_assert_int_eq(fake_slack_add_channel(e->fs, NULL, "work", 0, members, e->work), 0);
    e->s = client(e, MOD_TOKEN, tune);
    return e;
}

static void env_close(env *e)
{
    dg_slack_free(e->s);
    fake_slack_stop(e->fs);
    /* The token never reaches a log line. */
    ck_assert_msg(!strstr(e->log, "ModeratorSecret"), "token in the log:\n%s", e->log);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

/* The recorded requests of one API method (NEW array). */
static json_t *requests_of(env *e, const char *method)
{
    json_t *all = fake_slack_requests(e->fs, 0), *out = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(all, i, r) {
        if (!strcmp(json_string_value(json_object_get(r, "method")), method))
            json_array_append(out, r);
    }
    json_decref(all);
    return out;
}

static long long t_ms(json_t *rec)
{
    return (long long)json_integer_value(json_object_get(rec, "tMs"));
}

/* ---- local rules ------------------------------------------------------------------ */

START_TEST(token_shape_is_checked_and_never_echoed)
{
    static const struct {
        const char *token;
        int ok;
        const char *says;
    } cases[] = {
        {NULL, 0, "missing"},
        {"", 0, "missing"},
        {"xoxp-1234-5678-UserTokenSecretValue", 0, "user token"},
        {"xapp-1-A123-456-AppLevelSecretValue", 0, "app-level"},
        {"Bearer xoxb-1111-2222-SomethingSecret", 0, "xoxb-"},
        {"xoxb-1111-2222-Some thingSecret", 0, "copy the token again"},
        {"xoxb-1111-2222-SomethingSecret\n", 0, "byte 31"},
        {"xoxb-12", 0, "15..255"},
        {MOD_TOKEN, 1, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char why[400];
        int rc = dg_slack_check_token(cases[i].token, why, sizeof why);
        ck_assert_msg((rc == DG_OK) == cases[i].ok, "case %zu: rc %d (%s)", i, rc, why);
        ck_assert_msg(strstr(why, cases[i].says), "case %zu: \"%s\" lacks \"%s\"", i, why,
                      cases[i].says);
        ck_assert_msg(!strstr(why, "Secret"), "case %zu echoes the token: %s", i, why);
    }
}
END_TEST

START_TEST(options_refused_without_echoing_the_token)
{
    dg_slack *s = NULL;
    char err[512];
    dg_slack_options o = {.token = MOD_TOKEN, .api_base = "http://example.com/api"};
    ck_assert_int_eq(dg_slack_new(&o, &s, err, sizeof err), DG_ERR_INVALID);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(err, "https://"));
    o.api_base = NULL;
    o.max_text = DG_SLACK_TEXT_HARD + 1;
    ck_assert_int_eq(dg_slack_new(&o, &s, err, sizeof err), DG_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "max_text"));
    o.max_text = 0;
    o.token = "xoxp-9999-8888-SecretUserToken";
    ck_assert_int_eq(dg_slack_new(&o, &s, err, sizeof err), DG_ERR_INVALID);
    ck_assert_ptr_null(strstr(err, "Secret"));
    o.token = MOD_TOKEN;
    ck_assert_int_eq(dg_slack_new(&o, &s, err, sizeof err), DG_OK);
    dg_slack_free(s);
}
END_TEST

START_TEST(channel_names_sanitised)
{
    static const struct {
        const char *in, *out;
        int changed;
    } cases[] = {
        {"design-review", "design-review", 0},
        {"Design Review: Q3.plan", "design-review-q3-plan", 1},
        {"  spaces  around  ", "spaces-around", 1},
        {"a..b__c--d", "a-b__c-d", 1},
        {"Ünïcode name", "n-code-name", 1},
        {"discussion_7", "discussion_7", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[DG_SLACK_MAX_CHANNEL_NAME + 1], why[300];
        int changed = -1;
        ck_assert_int_eq(
            dg_slack_sanitize_channel_name(cases[i].in, out, sizeof out, &changed, why, sizeof why),
            DG_OK);
        ck_assert_str_eq(out, cases[i].out);
        ck_assert_int_eq(changed, cases[i].changed);
    }
    char longname[200], out[DG_SLACK_MAX_CHANNEL_NAME + 1], why[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    ck_assert_int_eq(dg_slack_sanitize_channel_name(longname, out, sizeof out, NULL, why, 300),
                     DG_OK);
    ck_assert_uint_eq(strlen(out), DG_SLACK_MAX_CHANNEL_NAME);
    ck_assert_int_eq(
        dg_slack_sanitize_channel_name("...!!! ???", out, sizeof out, NULL, why, sizeof why),
        DG_ERR_INVALID);
    ck_assert_str_eq(out, "");
    ck_assert_ptr_nonnull(strstr(why, "letters or digits"));
}
END_TEST

START_TEST(mentions_table)
{
    static const struct {
        const char *text;
        const char *ids; /* space-separated, in order */
    } cases[] = {
        {"<@U123AB> hi", "U123AB"},
        {"<@U123AB|bob> and <@U123AB> again", "U123AB"},
        {"`<@U999XX>` not in code", ""},
        {"```\n<@U888YY>\n``` fenced, <@W0123> outside", "W0123"},
        {"<@u12> <@U1> <@C1234> <#C1234> <!here> <@U12", ""},
        {"<@UAAA|name with spaces> <@UBBB>", "UAAA UBBB"},
        {"<@UAAA|unclosed", ""},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dg_slack_mention ids[8];
        long n = dg_slack_parse_mentions(cases[i].text, ids, 8);
        char got[128] = "";
        for (long k = 0; k < n; k++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", k ? " " : "", ids[k].id);
        ck_assert_msg(!strcmp(got, cases[i].ids), "case %zu: got \"%s\", want \"%s\"", i, got,
                      cases[i].ids);
    }
    dg_slack_mention one[1];
    ck_assert_int_eq(dg_slack_parse_mentions("<@UA1> <@UB2> <@UA1> <@UC3>", one, 1), 3);
    ck_assert_str_eq(one[0].id, "UA1");
    char m[40];
    ck_assert_int_eq(dg_slack_format_mention("U0123ABCD", m, sizeof m), DG_OK);
    ck_assert_str_eq(m, "<@U0123ABCD>");
    ck_assert_int_eq(dg_slack_format_mention("bob", m, sizeof m), DG_ERR_INVALID);
    ck_assert_str_eq(m, "");
}
END_TEST

/* ---- requests -------------------------------------------------------------------------- */

START_TEST(auth_test_and_users_info)
{
    env *e = env_open(NULL);
    dg_slack_identity me;
    dg_slack_err err;
    ck_assert_int_eq(dg_slack_auth_test(e->s, &me, &err), DG_OK);
    ck_assert_str_eq(me.user_id, MOD);
    ck_assert_str_eq(me.bot_id, "BMOD0001");
    ck_assert_str_eq(me.team_id, fake_slack_team_id(e->fs));
    dg_slack_user u;
    ck_assert_int_eq(dg_slack_user_info(e->s, AG1, &u, &err), DG_OK);
    ck_assert_str_eq(u.id, AG1);
    ck_assert_int_eq(u.is_bot, 1);
    ck_assert_str_eq(u.bot_id, "BAG00001");
    ck_assert_int_eq(dg_slack_user_info(e->s, ALICE, &u, &err), DG_OK);
    ck_assert_str_eq(u.name, "alice");
    ck_assert_int_eq(u.is_bot, 0);
    ck_assert_int_eq(dg_slack_user_info(e->s, "UNOBODY1", &u, &err), DG_ERR_NOT_FOUND);
    ck_assert_str_eq(err.error, "user_not_found");
    ck_assert_ptr_nonnull(strstr(err.message, "users.info"));
    size_t before = fake_slack_request_count(e->fs, NULL);
    ck_assert_int_eq(dg_slack_user_info(e->s, "bob", &u, &err), DG_ERR_INVALID);
    ck_assert_uint_eq(fake_slack_request_count(e->fs, NULL), before); /* refused locally */
    /* The token travels in the header only, as a form post. */
    json_t *rq = requests_of(e, "users.info");
    json_t *r0 = json_array_get(rq, 0);
    ck_assert_str_eq(json_string_value(json_object_get(r0, "authorization")), "Bearer " MOD_TOKEN);
    ck_assert_str_eq(json_string_value(json_object_get(r0, "contentType")),
                     "application/x-www-form-urlencoded");
    ck_assert_ptr_null(strstr(json_string_value(json_object_get(r0, "body")), "Secret"));
    json_decref(rq);
    env_close(e);
}
END_TEST

START_TEST(post_carries_key_in_metadata_and_threads)
{
    env *e = env_open(NULL);
    dg_slack_post_spec p = {
        .channel_id = e->work, .text = "<@UAG00001> your turn & more", .key = "ob-42"};
    dg_slack_posted at;
    dg_slack_err err;
    ck_assert_msg(dg_slack_post(e->s, &p, &at, &err) == DG_OK, "%s", err.message);
    ck_assert_str_eq(at.channel_id, e->work);
    ck_assert(dg_slack_ts_valid(at.ts));
    dg_slack_post_spec r = {.channel_id = e->work, .thread_ts = at.ts, .text = "in the thread"};
    dg_slack_posted at2;
    ck_assert_int_eq(dg_slack_post(e->s, &r, &at2, &err), DG_OK);
    ck_assert_int_gt(strcmp(at2.ts, at.ts), 0); /* same length: later sorts higher */
    json_t *msgs = fake_slack_messages(e->fs, e->work);
    ck_assert_uint_eq(json_array_size(msgs), 2);
    json_t *m0 = json_array_get(msgs, 0), *m1 = json_array_get(msgs, 1);
    ck_assert_str_eq(json_string_value(json_object_get(m0, "text")),
                     "<@UAG00001> your turn & more");
    ck_assert_str_eq(json_string_value(json_object_get(m0, "user")), MOD);
    json_t *meta = json_object_get(m0, "metadata");
    ck_assert_str_eq(json_string_value(json_object_get(meta, "event_type")), DG_SLACK_OUTBOX_EVENT);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(meta, "event_payload"), "key")), "ob-42");
    ck_assert_str_eq(json_string_value(json_object_get(m1, "thread_ts")), at.ts);
    ck_assert_ptr_null(json_object_get(m1, "metadata"));
    json_decref(msgs);
    env_close(e);
}
END_TEST

START_TEST(text_limit_enforced_before_any_request)
{
    env *e = env_open(NULL);
    ck_assert_uint_eq(dg_slack_max_text(e->s), DG_SLACK_TEXT_DEFAULT);
    char *big = malloc(DG_SLACK_TEXT_HARD + 2);
    memset(big, 'a', DG_SLACK_TEXT_DEFAULT + 1);
    big[DG_SLACK_TEXT_DEFAULT + 1] = '\0';
    dg_slack_post_spec p = {.channel_id = e->work, .text = big};
    dg_slack_err err;
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, &err), DG_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.message, "split it"));
    big[DG_SLACK_TEXT_DEFAULT] = '\0'; /* exactly the limit */
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, &err), DG_OK);
    p.text = "";
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, &err), DG_ERR_INVALID);
    p.text = "x";
    p.key = "has space";
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, &err), DG_ERR_INVALID);
    p.key = NULL;
    p.channel_id = "#work";
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, &err), DG_ERR_INVALID);
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "chat.postMessage"), 1);
    /* A client allowed Slack's hard limit posts what the default refuses. */
    dg_slack_options wide = {.max_text = DG_SLACK_TEXT_HARD, .no_pacing = 1};
    dg_slack *s2 = client(e, MOD_TOKEN, &wide);
    memset(big, 'b', DG_SLACK_TEXT_HARD);
    big[DG_SLACK_TEXT_HARD] = '\0';
    dg_slack_post_spec q = {.channel_id = e->work, .text = big};
    ck_assert_msg(dg_slack_post(s2, &q, NULL, &err) == DG_OK, "%s", err.message);
    dg_slack_free(s2);
    free(big);
    env_close(e);
}
END_TEST

START_TEST(lost_answer_found_by_key_no_duplicate)
{
    env *e = env_open(NULL);
    dg_slack_identity me;
    ck_assert_int_eq(dg_slack_auth_test(e->s, &me, NULL), DG_OK);
    ck_assert_int_eq(
        fake_slack_add_fault(e->fs, "chat.postMessage", FS_FAULT_DROP_AFTER, 1, 0, 0, NULL), 0);
    dg_slack_post_spec p = {.channel_id = e->work, .text = "hand-off", .key = "row-7"};
    dg_slack_err err;
    int rc = dg_slack_post(e->s, &p, NULL, &err);
    ck_assert_int_eq(rc, DG_ERR_IO);
    ck_assert_int_eq(err.retryable, 1);
    ck_assert_ptr_nonnull(strstr(err.message, "look before"));
    /* Slack stored it; the client did not send it twice. */
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "chat.postMessage"), 1);
    ck_assert_uint_eq(fake_slack_message_count(e->fs, e->work), 1);
    /* What a resend does first: look. Found, so no second post. */
    int found = -1;
    dg_slack_posted at;
    ck_assert_int_eq(dg_slack_find_by_key(e->s, e->work, NULL, "row-7", NULL, &found, &at, &err),
                     DG_OK);
    ck_assert_int_eq(found, 1);
    json_t *msgs = fake_slack_messages(e->fs, e->work);
    ck_assert_str_eq(at.ts, json_string_value(json_object_get(json_array_get(msgs, 0), "ts")));
    json_decref(msgs);
    ck_assert_uint_eq(fake_slack_message_count(e->fs, e->work), 1);
    /* A key never posted is not found. */
    ck_assert_int_eq(dg_slack_find_by_key(e->s, e->work, NULL, "row-8", NULL, &found, NULL, &err),
                     DG_OK);
    ck_assert_int_eq(found, 0);
    /* The lookups asked for metadata. */
    json_t *h = requests_of(e, "conversations.history");
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_array_get(h, 0), "args"), "include_all_metadata")),
                     "true");
    json_decref(h);
    env_close(e);
}
END_TEST

START_TEST(find_by_key_pages_are_bounded)
{
    env *e = env_open(NULL);
    dg_slack_post_spec p = {.channel_id = e->work, .text = "keyed", .key = "deep"};
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, NULL), DG_OK);
    for (int i = 0; i < 250; i++)
        ck_assert_int_eq(fake_slack_inject(e->fs, e->work, ALICE, "chatter", NULL, NULL), 0);
    int found = -1;
    dg_slack_find_opts two = {.page_size = 100, .max_pages = 2};
    ck_assert_int_eq(dg_slack_find_by_key(e->s, e->work, NULL, "deep", &two, &found, NULL, NULL),
                     DG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "conversations.history"), 2);
    dg_slack_find_opts three = {.page_size = 100, .max_pages = 3};
    ck_assert_int_eq(dg_slack_find_by_key(e->s, e->work, NULL, "deep", &three, &found, NULL, NULL),
                     DG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "conversations.history"), 5);
    env_close(e);
}
END_TEST

START_TEST(find_by_key_in_thread_and_only_own)
{
    env *e = env_open(NULL);
    dg_slack_identity me;
    ck_assert_int_eq(dg_slack_auth_test(e->s, &me, NULL), DG_OK);
    char parent[32];
    ck_assert_int_eq(fake_slack_inject(e->fs, e->work, ALICE, "a question", NULL, parent), 0);
    dg_slack_post_spec p = {
        .channel_id = e->work, .thread_ts = parent, .text = "in thread", .key = "t-1"};
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, NULL), DG_OK);
    int found = -1;
    ck_assert_int_eq(dg_slack_find_by_key(e->s, e->work, NULL, "t-1", NULL, &found, NULL, NULL),
                     DG_OK);
    ck_assert_int_eq(found, 0); /* replies are not in the channel's history */
    ck_assert_int_eq(dg_slack_find_by_key(e->s, e->work, parent, "t-1", NULL, &found, NULL, NULL),
                     DG_OK);
    ck_assert_int_eq(found, 1);
    /* Another app's message with the same key is not the moderator's. */
    dg_slack *other = client(e, "xoxb-agent-one-token", NULL);
    dg_slack_post_spec q = {.channel_id = e->work, .text = "imitation", .key = "k-2"};
    ck_assert_int_eq(dg_slack_post(other, &q, NULL, NULL), DG_OK);
    dg_slack_free(other);
    ck_assert_int_eq(dg_slack_find_by_key(e->s, e->work, NULL, "k-2", NULL, &found, NULL, NULL),
                     DG_OK);
    ck_assert_int_eq(found, 0);
    env_close(e);
}
END_TEST

START_TEST(retry_after_honoured)
{
    env *e = env_open(NULL);
    ck_assert_int_eq(fake_slack_add_fault(e->fs, "chat.postMessage", FS_FAULT_429, 1, 1, 0, NULL),
                     0);
    dg_slack_post_spec p = {.channel_id = e->work, .text = "after the wait"};
    dg_slack_err err;
    ck_assert_msg(dg_slack_post(e->s, &p, NULL, &err) == DG_OK, "%s", err.message);
    json_t *rq = requests_of(e, "chat.postMessage");
    ck_assert_uint_eq(json_array_size(rq), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(rq, 0), "status")), 429);
    /* The fake's own arrival times: the retry came no sooner than 1 s. */
    ck_assert_int_ge(t_ms(json_array_get(rq, 1)) - t_ms(json_array_get(rq, 0)), 1000);
    json_decref(rq);
    ck_assert_uint_eq(fake_slack_message_count(e->fs, e->work), 1);
    env_close(e);
}
END_TEST

START_TEST(retry_after_beyond_bound_fails_at_once)
{
    dg_slack_options o = {.no_pacing = 1, .timeout_ms = 1500};
    env *e = env_open(&o);
    ck_assert_int_eq(fake_slack_add_fault(e->fs, "users.info", FS_FAULT_429, 1, 30, 0, NULL), 0);
    dg_slack_user u;
    dg_slack_err err;
    ck_assert_int_eq(dg_slack_user_info(e->s, AG1, &u, &err), DG_ERR_IO);
    ck_assert_int_eq(err.retryable, 1);
    ck_assert_int_gt(err.retry_after_ms, 28000);
    ck_assert_ptr_nonnull(strstr(err.message, "users.info"));
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "users.info"), 1);
    /* The 429 held users.info back, not other methods. */
    dg_slack_identity me;
    ck_assert_int_eq(dg_slack_auth_test(e->s, &me, &err), DG_OK);
    ck_assert_int_eq(dg_slack_user_info(e->s, AG1, &u, &err), DG_ERR_IO);
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "users.info"), 1); /* held, not sent */
    env_close(e);
}
END_TEST

START_TEST(posts_paced_per_channel)
{
    /* pace_scale 20: one post per 20 s per channel, so a second post in
     * the same channel cannot be made within the call's 1.5 s, while the
     * first in each other channel goes at once. */
    dg_slack_options o = {.pace_scale = 20, .timeout_ms = 1500};
    env *e = env_open(&o);
    char ch[3][16];
    const char *members[] = {MOD, NULL};
    const char *names[] = {"one", "two", "three"};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(fake_slack_add_channel(e->fs, NULL, names[i], 0, members, ch[i]), 0);
    dg_slack_post_spec p = {.channel_id = e->work, .text = "first"};
    dg_slack_err err;
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, &err), DG_OK);
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, &err), DG_ERR_IO);
    ck_assert_int_eq(err.retryable, 1);
    ck_assert_int_gt(err.retry_after_ms, 1500);
    ck_assert_ptr_nonnull(strstr(err.message, "tier"));
    for (int i = 0; i < 3; i++) {
        p.channel_id = ch[i];
        ck_assert_msg(dg_slack_post(e->s, &p, NULL, &err) == DG_OK, "%s", err.message);
    }
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "chat.postMessage"), 4);
    env_close(e);
}
END_TEST

START_TEST(history_paced_by_tier)
{
    /* Tier 3: 50 a minute with a burst of 5. Scaled by 20 the next token
     * comes 24 s after the burst, beyond the call's 1.5 s: five lookups go
     * at once, the sixth is refused without a request. Counts, not clocks. */
    dg_slack_options o = {.pace_scale = 20, .timeout_ms = 1500};
    env *e = env_open(&o);
    int found;
    dg_slack_err err;
    for (int i = 0; i < 5; i++)
        ck_assert_msg(dg_slack_find_by_key(e->s, e->work, NULL, "none", NULL, &found, NULL, &err) ==
                          DG_OK,
                      "%d: %s", i, err.message);
    ck_assert_int_eq(dg_slack_find_by_key(e->s, e->work, NULL, "none", NULL, &found, NULL, &err),
                     DG_ERR_IO);
    ck_assert_int_eq(err.retryable, 1);
    ck_assert_int_gt(err.retry_after_ms, 20000);
    ck_assert_ptr_nonnull(strstr(err.message, "conversations.history"));
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "conversations.history"), 5);
    /* Another method has a bucket of its own. */
    dg_slack_user u;
    ck_assert_int_eq(dg_slack_user_info(e->s, AG1, &u, &err), DG_OK);
    env_close(e);
}
END_TEST

START_TEST(missing_scope_names_the_scope)
{
    env *e = env_open(NULL);
    dg_slack *narrow = client(e, NARROW_TOKEN, NULL);
    dg_slack_post_spec p = {.channel_id = e->work, .text = "hello"};
    dg_slack_err err;
    ck_assert_int_eq(dg_slack_post(narrow, &p, NULL, &err), DG_ERR_DENIED);
    ck_assert_str_eq(err.error, "missing_scope");
    ck_assert_str_eq(err.needed, "chat:write");
    ck_assert_ptr_nonnull(strstr(err.message, "chat.postMessage"));
    ck_assert_ptr_nonnull(strstr(err.message, "add the bot token scope chat:write"));
    ck_assert_ptr_nonnull(strstr(err.message, "reinstall"));
    ck_assert_int_eq(err.retryable, 0);
    dg_slack_free(narrow);
    env_close(e);
}
END_TEST

START_TEST(private_channel_made_with_members)
{
    env *e = env_open(NULL);
    const char *members[] = {AG1, MOD, AG2, AG1};
    char id[DG_SLACK_ID_LEN], name[DG_SLACK_MAX_CHANNEL_NAME + 1];
    dg_slack_err err;
    ck_assert_msg(dg_slack_create_private_channel(e->s, "Design Review: Q3.plan", members, 4, id,
                                                  name, &err) == DG_OK,
                  "%s", err.message);
    ck_assert_str_eq(name, "design-review-q3-plan");
    ck_assert_ptr_nonnull(strstr(e->log, "design-review-q3-plan"));
    json_t *ch = fake_slack_channel(e->fs, id);
    ck_assert_ptr_nonnull(ch);
    ck_assert(json_is_true(json_object_get(ch, "is_private")));
    ck_assert_str_eq(json_string_value(json_object_get(ch, "name")), name);
    json_t *mem = json_object_get(ch, "members");
    ck_assert_uint_eq(json_array_size(mem), 3);
    ck_assert_str_eq(json_string_value(json_array_get(mem, 0)), MOD);
    json_decref(ch);
    json_t *inv = requests_of(e, "conversations.invite");
    ck_assert_uint_eq(json_array_size(inv), 1);
    ck_assert_str_eq(json_string_value(
                         json_object_get(json_object_get(json_array_get(inv, 0), "args"), "users")),
                     AG1 "," AG2);
    json_decref(inv);
    /* The same name again: name_taken. */
    char id2[DG_SLACK_ID_LEN];
    ck_assert_int_eq(
        dg_slack_create_private_channel(e->s, "design-review-q3-plan", members, 1, id2, NULL, &err),
        DG_ERR_CONFLICT);
    ck_assert_str_eq(err.error, "name_taken");
    ck_assert_ptr_nonnull(strstr(err.message, "choose another name"));
    /* Nothing usable in the name: refused before any request. */
    size_t before = fake_slack_request_count(e->fs, NULL);
    ck_assert_int_eq(dg_slack_create_private_channel(e->s, "...", members, 1, id2, NULL, &err),
                     DG_ERR_INVALID);
    ck_assert_uint_eq(fake_slack_request_count(e->fs, NULL), before);
    /* An invite of one in and one out gets the other in. */
    const char *more[] = {AG1, AG3};
    ck_assert_msg(dg_slack_invite(e->s, id, more, 2, &err) == DG_OK, "%s", err.message);
    ch = fake_slack_channel(e->fs, id);
    ck_assert_uint_eq(json_array_size(json_object_get(ch, "members")), 4);
    json_decref(ch);
    env_close(e);
}
END_TEST

START_TEST(archived_channel_refuses_posts)
{
    env *e = env_open(NULL);
    const char *members[] = {AG1};
    char id[DG_SLACK_ID_LEN];
    dg_slack_err err;
    ck_assert_int_eq(dg_slack_create_private_channel(e->s, "closing", members, 1, id, NULL, &err),
                     DG_OK);
    ck_assert_int_eq(dg_slack_archive(e->s, id, &err), DG_OK);
    dg_slack_post_spec p = {.channel_id = id, .text = "too late"};
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, &err), DG_ERR_CONFLICT);
    ck_assert_str_eq(err.error, "is_archived");
    ck_assert_ptr_nonnull(strstr(err.message, "archived"));
    ck_assert_int_eq(dg_slack_archive(e->s, id, &err), DG_OK); /* already_archived is fine */
    ck_assert_uint_eq(fake_slack_message_count(e->fs, id), 0);
    env_close(e);
}
END_TEST

START_TEST(not_in_channel_says_invite)
{
    env *e = env_open(NULL);
    const char *members[] = {AG1, NULL};
    char outside[16];
    ck_assert_int_eq(fake_slack_add_channel(e->fs, NULL, "elsewhere", 0, members, outside), 0);
    dg_slack_post_spec p = {.channel_id = outside, .text = "hi"};
    dg_slack_err err;
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, &err), DG_ERR_DENIED);
    ck_assert_str_eq(err.error, "not_in_channel");
    ck_assert_ptr_nonnull(strstr(err.message, "/invite"));
    p.channel_id = "CNOSUCH1";
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, &err), DG_ERR_NOT_FOUND);
    ck_assert_str_eq(err.error, "channel_not_found");
    env_close(e);
}
END_TEST

/* An added users.info that echoes the request's token back in every
 * field it can: a hostile or mistaken server. */
static json_t *echo_token(void *ud, const fake_slack_call *call, int *http)
{
    (void)http;
    return json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "error", ud ? "missing_scope" : call->token,
                     "needed", call->token, "provided", call->token);
}

START_TEST(token_never_echoed)
{
    env *e = env_open(NULL);
    ck_assert_int_eq(fake_slack_add_method(e->fs, "users.info", echo_token, NULL), 0);
    dg_slack_user u;
    dg_slack_err err;
    ck_assert_int_ne(dg_slack_user_info(e->s, AG1, &u, &err), DG_OK);
    ck_assert_msg(!strstr(err.message, "ModeratorSecret"), "%s", err.message);
    ck_assert_msg(!strstr(err.error, "ModeratorSecret"), "%s", err.error);
    ck_assert_msg(!strstr(err.needed, "ModeratorSecret"), "%s", err.needed);
    ck_assert_ptr_nonnull(strstr(err.message, "users.info"));
    static int scope = 1;
    ck_assert_int_eq(fake_slack_add_method(e->fs, "auth.test", echo_token, &scope), 0);
    dg_slack_identity me;
    ck_assert_int_eq(dg_slack_auth_test(e->s, &me, &err), DG_ERR_DENIED);
    ck_assert_str_eq(err.error, "missing_scope");
    ck_assert_msg(!strstr(err.needed, "ModeratorSecret"), "%s", err.needed);
    ck_assert_msg(!strstr(err.message, "ModeratorSecret"), "%s", err.message);
    env_close(e);
}
END_TEST

START_TEST(server_errors_retried_only_when_safe)
{
    env *e = env_open(NULL);
    ck_assert_int_eq(
        fake_slack_add_fault(e->fs, "conversations.history", FS_FAULT_500, 2, 0, 0, NULL), 0);
    int found;
    dg_slack_err err;
    ck_assert_int_eq(dg_slack_find_by_key(e->s, e->work, NULL, "x", NULL, &found, NULL, &err),
                     DG_OK);
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "conversations.history"), 3);
    ck_assert_int_eq(fake_slack_add_fault(e->fs, "chat.postMessage", FS_FAULT_500, 1, 0, 0, NULL),
                     0);
    dg_slack_post_spec p = {.channel_id = e->work, .text = "once", .key = "k"};
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, &err), DG_ERR_IO);
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "chat.postMessage"), 1);
    ck_assert_int_eq(
        fake_slack_add_fault(e->fs, "chat.postMessage", FS_FAULT_ERROR, 1, 0, 0, "internal_error"),
        0);
    ck_assert_int_eq(dg_slack_post(e->s, &p, NULL, &err), DG_ERR_IO);
    ck_assert_int_eq(err.retryable, 1);
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "chat.postMessage"), 2);
    env_close(e);
}
END_TEST

START_TEST(timeout_and_abort_bound_a_call)
{
    dg_slack_options o = {.no_pacing = 1, .timeout_ms = 400};
    env *e = env_open(&o);
    ck_assert_int_eq(fake_slack_add_fault(e->fs, "users.info", FS_FAULT_DELAY, 1, 0, 3000, NULL),
                     0);
    dg_slack_user u;
    dg_slack_err err;
    ck_assert_int_eq(dg_slack_user_info(e->s, AG1, &u, &err), DG_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.message, "timed out"));
    dg_slack_set_abort(e->s, 1);
    ck_assert_int_eq(dg_slack_user_info(e->s, AG1, &u, &err), DG_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.message, "aborted"));
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "users.info"), 1);
    dg_slack_set_abort(e->s, 0);
    ck_assert_int_eq(dg_slack_user_info(e->s, AG1, &u, &err), DG_OK);
    env_close(e);
}
END_TEST

START_TEST(pace_states_stay_bounded)
{
    /* One pace state per channel posted to; idle ones are forgotten past
     * the bound, so a long run over many channels keeps a bounded table. */
    env *e = env_open(NULL);
    const char *members[] = {MOD, NULL};
    dg_slack_err err;
    for (int i = 0; i < DGS_MAX_PACES + 80; i++) {
        char name[32], id[16];
        snprintf(name, sizeof name, "c%d", i);
        ck_assert_int_eq(fake_slack_add_channel(e->fs, NULL, name, 0, members, id), 0);
        dg_slack_post_spec p = {.channel_id = id, .text = "x"};
        ck_assert_msg(dg_slack_post(e->s, &p, NULL, &err) == DG_OK, "%d: %s", i, err.message);
    }
    pthread_mutex_lock(&e->s->mu);
    size_t n = e->s->paces.n;
    pthread_mutex_unlock(&e->s->mu);
    ck_assert_uint_le(n, DGS_MAX_PACES + 1);
    env_close(e);
}
END_TEST

START_TEST(lost_create_found_by_name)
{
    env *e = env_open(NULL);
    const char *mine[] = {MOD, AG2, NULL};
    ck_assert_int_eq(fake_slack_add_channel(e->fs, NULL, "earlier", 1, mine, NULL), 0);
    ck_assert_int_eq(
        fake_slack_add_fault(e->fs, "conversations.create", FS_FAULT_DROP_AFTER, 1, 0, 0, NULL), 0);
    const char *members[] = {AG1};
    char id[DG_SLACK_ID_LEN];
    dg_slack_err err;
    ck_assert_int_eq(
        dg_slack_create_private_channel(e->s, "Discussion 7", members, 1, id, NULL, &err),
        DG_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.message, "look before"));
    ck_assert_uint_eq(fake_slack_request_count(e->fs, "conversations.create"), 1);
    /* The retry looks first and finds the channel Slack made. */
    int found = -1;
    dg_slack_channel ch;
    ck_assert_msg(dg_slack_find_private_channel(e->s, "Discussion 7", &found, &ch, &err) == DG_OK,
                  "%s", err.message);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(ch.name, "discussion-7");
    ck_assert_int_eq(ch.is_private, 1);
    ck_assert_str_eq(ch.creator, MOD);
    char fid[16];
    ck_assert_int_eq(fake_slack_channel_by_name(e->fs, "discussion-7", fid), 0);
    ck_assert_str_eq(ch.id, fid);
    dg_slack_channel info;
    ck_assert_int_eq(dg_slack_channel_info(e->s, ch.id, &info, &err), DG_OK);
    ck_assert_str_eq(info.name, "discussion-7");
    ck_assert_int_eq(info.is_archived, 0);
    /* Archived, it is no longer found; another one's private channel never is. */
    ck_assert_int_eq(dg_slack_archive(e->s, ch.id, &err), DG_OK);
    ck_assert_int_eq(dg_slack_find_private_channel(e->s, "discussion-7", &found, NULL, &err),
                     DG_OK);
    ck_assert_int_eq(found, 0);
    const char *theirs[] = {AG1, NULL};
    ck_assert_int_eq(fake_slack_add_channel(e->fs, NULL, "theirs", 1, theirs, NULL), 0);
    ck_assert_int_eq(dg_slack_find_private_channel(e->s, "theirs", &found, NULL, &err), DG_OK);
    ck_assert_int_eq(found, 0);
    env_close(e);
}
END_TEST

Suite *make_slack_suite(void)
{
    Suite *s = suite_create("slack");
    TCase *tc = tcase_create("client");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, token_shape_is_checked_and_never_echoed);
    tcase_add_test(tc, options_refused_without_echoing_the_token);
    tcase_add_test(tc, channel_names_sanitised);
    tcase_add_test(tc, mentions_table);
    tcase_add_test(tc, auth_test_and_users_info);
    tcase_add_test(tc, post_carries_key_in_metadata_and_threads);
    tcase_add_test(tc, text_limit_enforced_before_any_request);
    tcase_add_test(tc, lost_answer_found_by_key_no_duplicate);
    tcase_add_test(tc, find_by_key_pages_are_bounded);
    tcase_add_test(tc, find_by_key_in_thread_and_only_own);
    tcase_add_test(tc, retry_after_honoured);
    tcase_add_test(tc, retry_after_beyond_bound_fails_at_once);
    tcase_add_test(tc, posts_paced_per_channel);
    tcase_add_test(tc, history_paced_by_tier);
    tcase_add_test(tc, missing_scope_names_the_scope);
    tcase_add_test(tc, private_channel_made_with_members);
    tcase_add_test(tc, archived_channel_refuses_posts);
    tcase_add_test(tc, not_in_channel_says_invite);
    tcase_add_test(tc, token_never_echoed);
    tcase_add_test(tc, server_errors_retried_only_when_safe);
    tcase_add_test(tc, timeout_and_abort_bound_a_call);
    tcase_add_test(tc, pace_states_stay_bounded);
    tcase_add_test(tc, lost_create_found_by_name);
    suite_add_tcase(s, tc);
    return s;
}
