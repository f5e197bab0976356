/*
 * check_chat.c -- the chat platform interface (chat/) on both platforms:
 * each test runs the same calls against the fake Discord and the fake
 * Slack on 127.0.0.1 and checks that they mean the same thing there (a
 * keyed post lands once even when its answer was lost, a private room is
 * made, found again and removed, user names, the pipe, errors), and what
 * each platform fixes without a client (names, ids, text limits).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "fake_discord.h"
#include "fake_slack.h"

#define D_MOD_TOKEN "Mz.moderator-token-for-chat-tests"
#define D_MOD "910000000000000001"
#define D_AG1 "910000000000000002"
#define D_AG2 "910000000000000003"
#define S_MOD_TOKEN "xoxb-1111-2222-ChatModeratorSecret"
#define S_MOD "UMOD0001"
#define S_AG1 "UAG00001"
#define S_AG2 "UAG00002"
#define S_NARROW_TOKEN "xoxb-3333-4444-ChatNarrowScopes"

/* One platform's fake and a moderator client on it. */
typedef struct penv {
    dg_platform platform;
    fake_discord *fd;
    fake_slack *fs;
    dg_chat *chat;
    char work[32]; /* a public channel the moderator may post in */
    const char *mod, *ag1, *ag2;
} penv;

static dg_chat *client_on(penv *e, const char *token)
{
    dg_chat_options o = {
        .platform = e->platform,
        .api_base = e->fd ? fake_discord_url(e->fd) : fake_slack_url(e->fs),
        .token = token,
        .space_id = e->fd ? fake_discord_guild_id(e->fd) : NULL,
        .timeout_ms = 5000,
        .backoff_base_ms = 5,
        .backoff_max_ms = 20,
        .no_pacing = 1,
    };
    dg_chat *c = NULL;
    char err[512];
    ck_assert_msg(dg_chat_new(&o, &c, err, sizeof err) == DG_OK, "%s", err);
    ck_assert_int_eq(dg_chat_platform(c), e->platform);
    return c;
}

static penv *penv_open(dg_platform platform)
{
    penv *e = calloc(1, sizeof *e);
    ck_assert_ptr_nonnull(e);
    e->platform = platform;
    char err[256];
    if (platform == DG_PLATFORM_DISCORD) {
        ck_assert_msg(fake_discord_start(NULL, &e->fd, err, sizeof err) == 0, "%s", err);
        ck_assert_int_eq(fake_discord_add_user(e->fd, D_MOD_TOKEN, D_MOD, "moderator", 1), 0);
        ck_assert_int_eq(fake_discord_add_user(e->fd, "T-ag1", D_AG1, "planner", 1), 0);
        ck_assert_int_eq(fake_discord_add_user(e->fd, "T-ag2", D_AG2, "reviewer", 1), 0);
        ck_assert_int_eq(fake_discord_add_channel(e->fd, NULL, "work", e->work), 0);
        e->mod = D_MOD, e->ag1 = D_AG1, e->ag2 = D_AG2;
        e->chat = client_on(e, D_MOD_TOKEN);
    } else {
        ck_assert_msg(fake_slack_start(NULL, &e->fs, err, sizeof err) == 0, "%s", err);
        fake_slack_user_spec mod = {.user_id = S_MOD, .token = S_MOD_TOKEN, .bot = 1};
        fake_slack_user_spec a1 = {
            .user_id = S_AG1, .name = "planner", .token = "xoxb-ag-1", .bot = 1};
        fake_slack_user_spec a2 = {
            .user_id = S_AG2, .name = "reviewer", .token = "xoxb-ag-2", .bot = 1};
        fake_slack_user_spec narrow = {
            .user_id = "UNARROW1", .token = S_NARROW_TOKEN, .bot = 1, .scopes = "chat:write"};
        ck_assert_int_eq(fake_slack_add_user(e->fs, &mod), 0);
        ck_assert_int_eq(fake_slack_add_user(e->fs, &a1), 0);
        ck_assert_int_eq(fake_slack_add_user(e->fs, &a2), 0);
        ck_assert_int_eq(fake_slack_add_user(e->fs, &narrow), 0);
        const char *members[] = {S_MOD, S_AG1, S_AG2, "UNARROW1", NULL};
        ck_assert_int_eq(fake_slack_add_channel(e->fs, NULL, "work", 0, members, e->work), 0);
        e->mod = S_MOD, e->ag1 = S_AG1, e->ag2 = S_AG2;
        e->chat = client_on(e, S_MOD_TOKEN);
    }
    return e;
}

static void penv_close(penv *e)
{
    dg_chat_free(e->chat);
    fake_discord_stop(e->fd);
    fake_slack_stop(e->fs);
    free(e);
}

static size_t messages_in(penv *e, const char *channel)
{
    return e->fd ? fake_discord_message_count(e->fd, channel)
                 : fake_slack_message_count(e->fs, channel);
}

/* The last message's text in channel (malloc'd). */
static char *last_text(penv *e, const char *channel)
{
    json_t *all =
        e->fd ? fake_discord_messages(e->fd, channel) : fake_slack_messages(e->fs, channel);
    json_t *m = json_array_get(all, json_array_size(all) - 1);
    const char *t = json_string_value(json_object_get(m, e->fd ? "content" : "text"));
    char *out = strdup(t ? t : "");
    json_decref(all);
    return out;
}

/* The next post request answered by nothing after the platform took it. */
static void lose_next_post_answer(penv *e)
{
    if (e->fd)
        ck_assert_int_eq(fake_discord_add_fault(e->fd, "POST /channels/{id}/messages",
                                                FD_FAULT_DROP_AFTER, 1, 0, 0),
                         0);
    else
        ck_assert_int_eq(
            fake_slack_add_fault(e->fs, "chat.postMessage", FS_FAULT_DROP_AFTER, 1, 0, 0, NULL), 0);
}

/* Post text to channel with client c; the status, err filled. */
static int post_to(dg_chat *c, const char *channel, dg_chat_err *err)
{
    char id[DG_CHAT_ID_MAX];
    dg_chat_post_spec p = {.channel_id = channel, .text = "hello", .key = "k-kind"};
    memset(err, 0, sizeof *err);
    return dg_chat_post(c, &p, id, err);
}

static dg_platform platform_of(int i)
{
    return i == 0 ? DG_PLATFORM_DISCORD : DG_PLATFORM_SLACK;
}

START_TEST(keyed_post_lands_once_when_its_answer_is_lost)
{
    penv *e = penv_open(platform_of(_i));
    const char *who = dg_platform_name(e->platform);
    char mention[64], text[128], id[DG_CHAT_ID_MAX], again[DG_CHAT_ID_MAX];
    ck_assert_int_eq(dg_chat_format_mention(e->chat, e->ag1, mention, sizeof mention), DG_OK);
    snprintf(text, sizeof text, "%s, it is your turn.", mention);
    const char *ids[] = {e->ag1};
    dg_chat_post_spec p = {
        .channel_id = e->work, .text = text, .mention_ids = ids, .n_mentions = 1, .key = "k-one"};
    dg_chat_err err;
    ck_assert_msg(dg_chat_post(e->chat, &p, id, &err) == DG_OK, "%s: %s", who, err.message);
    ck_assert_msg(id[0], "%s: no message id", who);
    ck_assert_uint_eq(messages_in(e, e->work), 1);
    char *t = last_text(e, e->work);
    ck_assert_str_eq(t, text);
    free(t);

    /* The platform takes the next post and its answer never comes. */
    lose_next_post_answer(e);
    p.key = "k-two";
    p.text = "second";
    int rc = dg_chat_post(e->chat, &p, id, &err);
    if (e->platform == DG_PLATFORM_DISCORD) {
        /* The nonce makes the client's own resend safe: Discord answers it
         * with the first message. */
        ck_assert_msg(rc == DG_OK, "%s: %s", who, err.message);
    } else {
        /* No nonce: a post that may have landed is never sent blind. */
        ck_assert_int_ne(rc, DG_OK);
        ck_assert_msg(err.retryable, "%s: a lost answer is worth another try: %s", who,
                      err.message);
    }
    ck_assert_uint_eq(messages_in(e, e->work), 2);
    /* The try again, told it may have been posted, finds it: no duplicate. */
    p.maybe_posted = 1;
    ck_assert_msg(dg_chat_post(e->chat, &p, again, &err) == DG_OK, "%s: %s", who, err.message);
    if (e->platform == DG_PLATFORM_DISCORD)
        ck_assert_str_eq(again, id);
    ck_assert_msg(again[0], "%s: no message id", who);
    ck_assert_msg(messages_in(e, e->work) == 2, "%s: the post was made twice", who);
    penv_close(e);
}
END_TEST

START_TEST(find_by_key_where_the_platform_keeps_keys)
{
    penv *e = penv_open(platform_of(_i));
    dg_chat_post_spec p = {.channel_id = e->work, .text = "keyed", .key = "find-me"};
    char id[DG_CHAT_ID_MAX], got[DG_CHAT_ID_MAX];
    dg_chat_err err;
    ck_assert_int_eq(dg_chat_post(e->chat, &p, id, &err), DG_OK);
    int found = -1;
    int rc = dg_chat_find_by_key(e->chat, e->work, NULL, "find-me", &found, got, &err);
    if (e->platform == DG_PLATFORM_DISCORD) {
        /* Discord deduplicates by nonce itself and keeps no key to search. */
        ck_assert_int_eq(rc, DG_ERR_UNSUPPORTED);
        ck_assert_int_eq(found, 0);
        ck_assert_ptr_nonnull(strstr(err.message, "discord"));
    } else {
        ck_assert_msg(rc == DG_OK, "%s", err.message);
        ck_assert_int_eq(found, 1);
        ck_assert_str_eq(got, id);
        ck_assert_int_eq(
            dg_chat_find_by_key(e->chat, e->work, NULL, "not-there", &found, got, &err), DG_OK);
        ck_assert_int_eq(found, 0);
    }
    penv_close(e);
}
END_TEST

START_TEST(private_room_made_found_and_removed)
{
    penv *e = penv_open(platform_of(_i));
    const char *who = dg_platform_name(e->platform);
    const char *members[] = {e->mod, e->ag1, e->ag2};
    dg_chat_room_spec spec = {.name = "design-review",
                              .topic = "dirigent discussion d-1",
                              .member_ids = members,
                              .n_members = 3};
    char room[DG_CHAT_ID_MAX], found_id[DG_CHAT_ID_MAX];
    dg_chat_err err;
    ck_assert_msg(dg_chat_room_create(e->chat, &spec, room, &err) == DG_OK, "%s: %s", who,
                  err.message);
    ck_assert_msg(room[0], "%s: no room id", who);
    json_t *ch = e->fd ? fake_discord_channel(e->fd, room) : fake_slack_channel(e->fs, room);
    ck_assert_msg(ch, "%s: the room is not there", who);
    ck_assert_str_eq(json_string_value(json_object_get(ch, "name")), "design-review");
    if (e->fs) {
        ck_assert(json_is_true(json_object_get(ch, "is_private")));
        ck_assert_uint_eq(json_array_size(json_object_get(ch, "members")), 3);
    } else {
        ck_assert_uint_ge(json_array_size(json_object_get(ch, "permission_overwrites")), 4);
    }
    json_decref(ch);
    /* Found again by name (after a lost answer), and not when absent. */
    int found = 0;
    ck_assert_msg(dg_chat_room_find(e->chat, "design-review", "d-1", &found, found_id, &err) ==
                      DG_OK,
                  "%s: %s", who, err.message);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(found_id, room);
    ck_assert_int_eq(dg_chat_room_find(e->chat, "no-such-room", NULL, &found, found_id, &err),
                     DG_OK);
    ck_assert_int_eq(found, 0);
    /* Removed: deleted on Discord, archived on Slack (bots cannot delete). */
    ck_assert_msg(dg_chat_room_remove(e->chat, room, &err) == DG_OK, "%s: %s", who, err.message);
    if (e->fd) {
        ch = fake_discord_channel(e->fd, room);
        ck_assert_ptr_null(ch);
    } else {
        ch = fake_slack_channel(e->fs, room);
        ck_assert(json_is_true(json_object_get(ch, "is_archived")));
        json_decref(ch);
    }
    penv_close(e);
}
END_TEST

START_TEST(user_names_and_mentions)
{
    penv *e = penv_open(platform_of(_i));
    char handle[64], display[64], at[64];
    dg_chat_err err;
    ck_assert_msg(dg_chat_user_names(e->chat, e->ag1, handle, sizeof handle, display,
                                     sizeof display, &err) == DG_OK,
                  "%s", err.message);
    ck_assert_str_eq(handle, "planner");
    ck_assert_int_eq(dg_chat_format_mention(e->chat, e->ag2, at, sizeof at), DG_OK);
    char want[64];
    snprintf(want, sizeof want, "<@%s>", e->ag2);
    ck_assert_str_eq(at, want);
    /* Another platform's id is no user here. */
    const char *foreign = e->fd ? S_AG1 : D_AG1;
    ck_assert_int_eq(dg_chat_format_mention(e->chat, foreign, at, sizeof at), DG_ERR_INVALID);
    ck_assert_str_eq(at, "");
    penv_close(e);
}
END_TEST

START_TEST(pipe_posts_in_order_per_channel)
{
    penv *e = penv_open(platform_of(_i));
    char other[32];
    if (e->fd)
        ck_assert_int_eq(fake_discord_add_channel(e->fd, NULL, "other", other), 0);
    else {
        const char *m[] = {e->mod, NULL};
        ck_assert_int_eq(fake_slack_add_channel(e->fs, NULL, "other", 0, m, other), 0);
    }
    dg_chat_pipe *pipe = NULL;
    ck_assert_int_eq(dg_chat_pipe_new(e->chat, 4, &pipe), DG_OK);
    dg_chat_done done[4];
    const char *texts[] = {"one", "two", "three"};
    size_t ended = 0;
    for (int round = 0; round < 3; round++) {
        const char *chans[] = {e->work, other};
        for (int k = 0; k < 2; k++) {
            char key[16];
            snprintf(key, sizeof key, "p-%d-%d", round, k);
            dg_chat_post_spec s = {.channel_id = chans[k], .text = texts[round], .key = key};
            dg_chat_prepared *prep = NULL;
            dg_chat_err err;
            ck_assert_msg(dg_chat_post_prepare(e->chat, &s, &prep, &err) == DG_OK, "%s",
                          err.message);
            ck_assert_int_eq(dg_chat_pipe_submit(pipe, (uint64_t)(round * 2 + k), prep, &err),
                             DG_OK);
        }
        /* One post per channel at a time, as the outbox does. */
        size_t want = ended + 2;
        for (int spins = 0; ended < want && spins < 1000; spins++) {
            size_t n = dg_chat_pipe_run(pipe, 100, done);
            for (size_t i = 0; i < n; i++) {
                ck_assert_msg(done[i].rc == DG_OK, "%s", done[i].err.message);
                ck_assert_msg(done[i].message_id[0], "no message id");
                ck_assert_uint_lt(done[i].tag, 6);
            }
            ended += n;
        }
        ck_assert_uint_eq(ended, want);
    }
    ck_assert_uint_eq(dg_chat_pipe_busy(pipe), 0);
    ck_assert_uint_eq(dg_chat_pipe_run(pipe, 10, done), 0); /* nothing in flight: at once */
    ck_assert_uint_eq(messages_in(e, e->work), 3);
    ck_assert_uint_eq(messages_in(e, other), 3);
    char *t = last_text(e, other);
    ck_assert_str_eq(t, "three");
    free(t);
    /* A post refused before any request says why; nothing is sent. */
    dg_chat_prepared *prep = NULL;
    dg_chat_err err;
    dg_chat_post_spec empty = {.channel_id = e->work, .text = "", .key = "x"};
    ck_assert_int_eq(dg_chat_post_prepare(e->chat, &empty, &prep, &err), DG_ERR_INVALID);
    ck_assert_ptr_null(prep);
    ck_assert_msg(err.message[0], "no reason given");
    dg_chat_pipe_free(pipe);
    penv_close(e);
}
END_TEST

/* The kind of a failure is the same word on both platforms, so the core
 * never reads a platform's status or code: a refused token, a channel that
 * does not exist, a call refused before any request. */
START_TEST(errors_say_their_kind_on_both_platforms)
{
    penv *e = penv_open(platform_of(_i));
    const char *who = dg_platform_name(e->platform);
    dg_chat_err err;
    dg_chat *stranger = client_on(e, e->fd ? "Mz.a-token-nobody-issued" : "xoxb-9999-9999-Nobody");
    ck_assert_int_ne(post_to(stranger, e->work, &err), DG_OK);
    dg_chat_free(stranger);
    ck_assert_msg(err.kind == DG_CHAT_ERR_AUTH, "%s: a refused token is %s: %s", who,
                  dg_chat_err_kind_name(err.kind), err.message);
    ck_assert_int_ne(post_to(e->chat, e->fd ? "910000000000000999" : "CGONE0001", &err), DG_OK);
    ck_assert_msg(err.kind == DG_CHAT_ERR_GONE, "%s: a missing channel is %s: %s", who,
                  dg_chat_err_kind_name(err.kind), err.message);
    ck_assert_int_eq(post_to(e->chat, "not a channel", &err), DG_ERR_INVALID);
    ck_assert_str_eq(dg_chat_err_kind_name(err.kind), "invalid");
    ck_assert_int_eq(post_to(e->chat, e->work, &err), DG_OK);
    penv_close(e);
}
END_TEST

START_TEST(errors_name_the_platform_code)
{
    penv *e = penv_open(platform_of(_i));
    const char *members[] = {e->mod, e->ag1};
    dg_chat_room_spec spec = {.name = "no-rights", .member_ids = members, .n_members = 2};
    char room[DG_CHAT_ID_MAX];
    dg_chat_err err;
    int rc;
    if (e->fd) {
        ck_assert_int_eq(fake_discord_add_fault(e->fd, "*", FD_FAULT_403, 1, 0, 0), 0);
        rc = dg_chat_room_create(e->chat, &spec, room, &err);
        ck_assert_str_eq(err.code, "50013");
    } else {
        dg_chat *narrow = client_on(e, S_NARROW_TOKEN);
        rc = dg_chat_room_create(narrow, &spec, room, &err);
        dg_chat_free(narrow);
        ck_assert_str_eq(err.code, "missing_scope");
        ck_assert_ptr_nonnull(strstr(err.message, "groups:write"));
    }
    ck_assert_int_eq(rc, DG_ERR_DENIED);
    ck_assert_int_eq(err.kind, DG_CHAT_ERR_PERMISSION);
    ck_assert_int_eq(err.retryable, 0);
    ck_assert_ptr_null(strstr(err.message, e->fd ? D_MOD_TOKEN : S_MOD_TOKEN));
    penv_close(e);
}
END_TEST

START_TEST(slack_room_whose_invite_fails_is_archived_again)
{
    penv *e = penv_open(DG_PLATFORM_SLACK);
    ck_assert_int_eq(fake_slack_add_fault(e->fs, "conversations.invite", FS_FAULT_ERROR, 1, 0, 0,
                                          "user_not_found"),
                     0);
    const char *members[] = {e->mod, e->ag1};
    dg_chat_room_spec spec = {.name = "half-made", .member_ids = members, .n_members = 2};
    char room[DG_CHAT_ID_MAX];
    dg_chat_err err;
    ck_assert_int_eq(dg_chat_room_create(e->chat, &spec, room, &err), DG_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err.message, "was archived again"), "%s", err.message);
    char id[16];
    ck_assert_int_eq(fake_slack_channel_by_name(e->fs, "half-made", id), 0);
    json_t *ch = fake_slack_channel(e->fs, id);
    ck_assert(json_is_true(json_object_get(ch, "is_archived")));
    json_decref(ch);
    penv_close(e);
}
END_TEST

START_TEST(what_each_platform_fixes_without_a_client)
{
    char why[256];
    ck_assert_int_eq(
        dg_platform_check_room_name(DG_PLATFORM_DISCORD, "design-review", why, sizeof why), DG_OK);
    ck_assert_int_eq(
        dg_platform_check_room_name(DG_PLATFORM_DISCORD, "Design Review", why, sizeof why),
        DG_ERR_INVALID);
    ck_assert_int_eq(
        dg_platform_check_room_name(DG_PLATFORM_SLACK, "design-review", why, sizeof why), DG_OK);
    ck_assert_int_eq(
        dg_platform_check_room_name(DG_PLATFORM_SLACK, "Design Review", why, sizeof why),
        DG_ERR_INVALID);
    ck_assert_msg(strstr(why, "use 'design-review'"), "%s", why);
    ck_assert_int_eq(dg_platform_check_room_name((dg_platform)9, "x", why, sizeof why),
                     DG_ERR_UNSUPPORTED);
    ck_assert_uint_eq(dg_platform_max_text(DG_PLATFORM_DISCORD), 2000);
    ck_assert_uint_eq(dg_platform_max_text(DG_PLATFORM_SLACK), 4000);
    ck_assert_uint_eq(dg_platform_max_text((dg_platform)9), 0);
    ck_assert(dg_platform_user_id_valid(DG_PLATFORM_DISCORD, D_AG1));
    ck_assert(!dg_platform_user_id_valid(DG_PLATFORM_DISCORD, S_AG1));
    ck_assert(dg_platform_user_id_valid(DG_PLATFORM_SLACK, S_AG1));
    ck_assert(!dg_platform_user_id_valid(DG_PLATFORM_SLACK, D_AG1));
    ck_assert(dg_platform_channel_id_valid(DG_PLATFORM_SLACK, "C0123ABC"));
    ck_assert(!dg_platform_channel_id_valid(DG_PLATFORM_SLACK, NULL));
    ck_assert_str_eq(dg_platform_name(DG_PLATFORM_SLACK), "slack");
    ck_assert_str_eq(dg_platform_name((dg_platform)9), "unknown");
    /* A client for no known platform, and a bad token, are refused by name. */
    dg_chat *c = NULL;
    char err[256];
    dg_chat_options o = {.platform = (dg_platform)9, .token = "x"};
    ck_assert_int_eq(dg_chat_new(&o, &c, err, sizeof err), DG_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "discord, slack"));
    o.platform = DG_PLATFORM_SLACK;
    o.token = "xoxp-1234-5678-UserTokenSecretValue";
    ck_assert_int_eq(dg_chat_new(&o, &c, err, sizeof err), DG_ERR_INVALID);
    ck_assert_ptr_null(c);
    ck_assert_ptr_null(strstr(err, "UserTokenSecretValue"));
}
END_TEST

Suite *make_chat_suite(void)
{
    Suite *s = suite_create("chat");
    TCase *both = tcase_create("both_platforms");
    tcase_set_timeout(both, 60);
    tcase_add_loop_test(both, keyed_post_lands_once_when_its_answer_is_lost, 0, 2);
    tcase_add_loop_test(both, find_by_key_where_the_platform_keeps_keys, 0, 2);
    tcase_add_loop_test(both, private_room_made_found_and_removed, 0, 2);
    tcase_add_loop_test(both, user_names_and_mentions, 0, 2);
    tcase_add_loop_test(both, pipe_posts_in_order_per_channel, 0, 2);
    tcase_add_loop_test(both, errors_name_the_platform_code, 0, 2);
    tcase_add_loop_test(both, errors_say_their_kind_on_both_platforms, 0, 2);
    tcase_add_test(both, slack_room_whose_invite_fails_is_archived_again);
    suite_add_tcase(s, both);
    TCase *rules = tcase_create("rules");
    tcase_add_test(rules, what_each_platform_fixes_without_a_client);
    suite_add_tcase(s, rules);
    return s;
}
