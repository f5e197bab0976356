/*
 * check_slack_turns.c -- the plugin managing a Slack channel: the real
 * plugin in the turn test host (hooks called with Slack's ids and OpenClaw's
 * lower-cased Slack session keys, hand-moved clock), its Slack moderator
 * posting through the outbox to the fake Slack on 127.0.0.1:
 *   - one speaker at a time, the hand-off posted by the moderator's token
 *     with the outbox key in the message metadata, in the channel or, for
 *     a thread scope, in the thread (thread_ts);
 *   - a session known only by its lower-cased key;
 *   - Discord and Slack rows in one outbox, each sent by its own platform's
 *     dispatcher;
 *   - a discussion on Slack: a private channel with the members invited, the
 *     kickoff, the callback, the result in the origin channel, the channel
 *     archived; refusals naming the Slack rule;
 *   - under the channel policy, the moderator answers in the Slack thread
 *     where the human wrote;
 *   - a hand-off that never reaches the next speaker (its app was away,
 *     before or after a restart) brings the stall nudge after turn.nudgeSec;
 *   - a creation killed (-9) between any two of its Slack calls and then
 *     repeated with the same toolCallId: it finishes with the first
 *     attempt's channel, members in, one kickoff.
 * Every wait is bounded.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "discuss.h"
#include "fake_slack.h"
#include "outbox.h"
#include "store.h"
#include "store_outbox.h"
#include "store_turns.h"
#include "testutil.h"
#include "turn_test_host.h"
#include "turns_engine_test.h"

#define MOD_ID "U0MODERATR"
#define MOD_TOKEN "xoxb-moderator-0001"
#define ALPHA_ID "U0ALPHA1"
#define BRAVO_ID "U0BRAVO2"
#define CHARLIE_ID "U0CHARL3"
#define HUMAN_ID "U0HUMAN1"

#define AGENTS                                                                                     \
    "{\"alpha\":{\"slackUserId\":\"" ALPHA_ID "\"},"                                               \
    "\"bravo\":{\"slackUserId\":\"" BRAVO_ID "\"},"                                                \
    "\"charlie\":{\"slackUserId\":\"" CHARLIE_ID "\",\"discordUserId\":\"100000000000000003\"}}"

static tth H;
static fake_slack *FS;
static char WORK[16];

static const char *const ABC[] = {"alpha", "bravo", "charlie"};

static void start(const char *policy)
{
    char err[256];
    ck_assert_msg(fake_slack_start(NULL, &FS, err, sizeof err) == 0, "%s", err);
    fake_slack_user_spec mod = {
        .user_id = MOD_ID, .name = "moderator", .token = MOD_TOKEN, .bot = 1};
    ck_assert_int_eq(fake_slack_add_user(FS, &mod), 0);
    static const char *const ids[] = {ALPHA_ID, BRAVO_ID, CHARLIE_ID};
    for (int i = 0; i < 3; i++) {
        fake_slack_user_spec a = {.user_id = ids[i], .name = ABC[i], .bot = 1};
        ck_assert_int_eq(fake_slack_add_user(FS, &a), 0);
    }
    fake_slack_user_spec human = {.user_id = HUMAN_ID, .name = "alice"};
    ck_assert_int_eq(fake_slack_add_user(FS, &human), 0);
    const char *members[] = {MOD_ID, ALPHA_ID, BRAVO_ID, CHARLIE_ID, HUMAN_ID, NULL};
    ck_assert_int_eq(fake_slack_add_channel(FS, NULL, "work", 0, members, WORK), 0);
    setenv("DIRIGENT_SLACK_MODERATOR_TOKEN", MOD_TOKEN, 1);
    char extra[512];
    snprintf(extra, sizeof extra,
             "\"slack\":{\"moderatorUserId\":\"" MOD_ID "\",\"apiBase\":\"%s\"},"
             "\"admins\":[\"" HUMAN_ID "\"],"
             "\"turn\":{\"maxAgentMessages\":1000},\"discussion\":{\"reminderAfterSec\":0}",
             fake_slack_url(FS));
    tth_start_agents(&H, policy, AGENTS, extra, 0);
    ck_assert_ptr_nonnull(tth_plugin(&H)->slack);
    ck_assert_ptr_nonnull(tth_plugin(&H)->slack_outbox);
}

static void setup_channel(void)
{
    start("channel");
}

static void setup_thread(void)
{
    start("thread");
}

static void teardown(void)
{
    tth_free(&H);
    fake_slack_stop(FS);
    FS = NULL;
    unsetenv("DIRIGENT_SLACK_MODERATOR_TOKEN");
}

/* A message in Slack (the fake stores it and gives its ts), then handed to
 * the plugin as OpenClaw's Slack channel would: ts as the message id. */
static void says(const char *user, int bot, const char *thread, const char *text,
                 const char *const *mentions, char ts[24])
{
    ck_assert_int_eq(fake_slack_inject(FS, WORK, user, text, thread, ts), 0);
    ck_assert_int_eq(tth_msg(&H, WORK, thread, ts, user, bot, text, mentions), OC_OK);
}

/* Wait for the moderator's posts to reach the fake, then the newest one
 * (a new reference), or NULL when it posted nothing. */
static json_t *moderator_post(size_t *count)
{
    ck_assert_int_eq(dg_outbox_wait_idle(tth_plugin(&H)->slack_outbox, 10000), OC_OK);
    json_t *all = fake_slack_messages(FS, WORK);
    json_t *last = NULL;
    size_t n = 0, i;
    json_t *m;
    json_array_foreach(all, i, m) {
        const char *u = json_string_value(json_object_get(m, "user"));
        if (u && strcmp(u, MOD_ID) == 0) {
            n++;
            json_decref(last);
            last = json_incref(m);
        }
    }
    json_decref(all);
    *count = n;
    return last;
}

/* Which of the three gets a real model run (-1: none); two fail the test. */
static int who_speaks(const char *thread)
{
    int speaker = -1;
    for (int i = 0; i < 3; i++) {
        int r = tth_resolve(&H, ABC[i], WORK, thread);
        ck_assert_int_ge(r, 0);
        if (r == 0) {
            ck_assert_msg(speaker < 0, "two speakers: %s and %s", ABC[speaker], ABC[i]);
            speaker = i;
        }
    }
    return speaker;
}

/* A human message nobody answers: the first speaker passes, the turn moves
 * to the next, who read the message silently, so the Slack moderator wakes
 * it with a bare mention -- in the thread when the scope is one. */
static void handoff_on_slack(const char *thread)
{
    char ts[24];
    says(HUMAN_ID, 0, thread, "Anyone around? Which of you takes the release notes?", NULL, ts);
    ck_assert_int_eq(who_speaks(thread), 0); /* alpha: first seen */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tth_end(&H, ABC[i], WORK, thread, "NO_REPLY", 0), OC_OK);
    size_t n = 0;
    json_t *post = moderator_post(&n);
    ck_assert_msg(post != NULL, "the Slack moderator posted no hand-off");
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(json_string_value(json_object_get(post, "text")), "<@" BRAVO_ID ">");
    json_t *md = json_object_get(post, "metadata");
    ck_assert_str_eq(json_string_value(json_object_get(md, "event_type")), "dirigent_outbox");
    ck_assert(json_is_string(json_object_get(json_object_get(md, "event_payload"), "key")));
    const char *tts = json_string_value(json_object_get(post, "thread_ts"));
    if (thread)
        ck_assert_msg(tts && strcmp(tts, thread) == 0, "hand-off not in the thread: %s",
                      tts ? tts : "(top level)");
    else
        ck_assert_ptr_null(tts);
    /* Posted with the moderator's own token. */
    json_t *reqs = fake_slack_requests(FS, 0);
    size_t i;
    json_t *r;
    int posts = 0;
    json_array_foreach(reqs, i, r) {
        if (strcmp(json_string_value(json_object_get(r, "method")), "chat.postMessage") != 0)
            continue;
        posts++;
        ck_assert_str_eq(json_string_value(json_object_get(r, "token")), MOD_TOKEN);
    }
    json_decref(reqs);
    ck_assert_int_eq(posts, 1);
    /* The hand-off comes back as the moderator's message: bravo speaks. */
    const char *mention[] = {BRAVO_ID, NULL};
    ck_assert_int_eq(tth_msg(&H, WORK, thread, json_string_value(json_object_get(post, "ts")),
                             MOD_ID, 1, "<@" BRAVO_ID ">", mention),
                     OC_OK);
    ck_assert_int_eq(who_speaks(thread), 1);
    json_decref(post);
}

START_TEST(test_slack_channel_handoff_posted_by_the_slack_moderator)
{
    handoff_on_slack(NULL);
    /* The channel's turn record knows its platform. */
    dg_store *st = tth_plugin(&H)->store;
    dg_turn_channel_row row;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_channel_load(st, WORK, &row), OC_OK);
    dg_store_rollback(st);
    ck_assert_str_eq(row.platform, "slack");
    dg_turn_channel_row_clear(&row);
}
END_TEST

START_TEST(test_slack_thread_handoff_posted_in_the_thread)
{
    char parent[24];
    ck_assert_int_eq(fake_slack_inject(FS, WORK, HUMAN_ID, "release thread", NULL, parent), 0);
    handoff_on_slack(parent);
    /* The thread's outbox row names the channel and the thread. */
    dg_store *st = tth_plugin(&H)->store;
    dg_outbox_row *rows = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_outbox_list(st, WORK, &rows, &n), OC_OK);
    dg_store_rollback(st);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].platform, "slack");
    ck_assert_str_eq(rows[0].thread_id, parent);
    dg_outbox_rows_free(rows, n);
}
END_TEST

/* A message with an agent's mention gives that agent the turn; the others
 * are held, whatever their session keys look like (OpenClaw lower-cases
 * them; a context may carry no channelId at all). */
START_TEST(test_slack_mention_and_lower_case_session_keys)
{
    char ts[24];
    const char *m[] = {CHARLIE_ID, NULL};
    says(HUMAN_ID, 0, NULL, "<@" CHARLIE_ID "> can you check the build?", m, ts);
    for (int i = 0; i < 3; i++) {
        char key[128];
        snprintf(key, sizeof key, "agent:%s:slack:channel:%s", ABC[i], WORK);
        for (char *q = key; *q; q++)
            if (*q >= 'A' && *q <= 'Z')
                *q = (char)(*q - 'A' + 'a');
        json_t *ctx = json_pack("{s:s, s:s}", "agentId", ABC[i], "sessionKey", key);
        json_t *ev = json_pack("{s:s}", "prompt", "can you check the build?");
        json_t *res = NULL;
        ck_assert_int_eq(tth_call(&H, "before_model_resolve", ev, ctx, &res), OC_OK);
        ck_assert_msg((res != NULL) == (i != 2), "%s: %s", ABC[i], res ? "swapped" : "not swapped");
        json_decref(res);
        json_decref(ev);
        json_decref(ctx);
    }
    ck_assert_int_eq(who_speaks(NULL), 2);
}
END_TEST

/* A Slack admin's commands are answered on Slack, with Slack mentions, and
 * an agent named by Slack's <@U...|name> form is found. */
START_TEST(test_slack_admin_commands_answered_on_slack)
{
    char ts[24];
    says(HUMAN_ID, 0, NULL, "Plan the release, please.", NULL, ts);
    ck_assert_int_eq(who_speaks(NULL), 0);
    says(HUMAN_ID, 0, NULL, "!dirigent skip", NULL, ts);
    size_t n = 0;
    json_t *post = moderator_post(&n);
    ck_assert_ptr_nonnull(post);
    const char *text = json_string_value(json_object_get(post, "text"));
    ck_assert_msg(strstr(text, "alpha's turn is skipped; <@" BRAVO_ID ">, it is your turn"), "%s",
                  text);
    json_decref(post);
    /* Named in the text only (a host that lists no mentions). */
    says(HUMAN_ID, 0, NULL, "!dirigent remove <@" CHARLIE_ID "|charlie>", NULL, ts);
    post = moderator_post(&n);
    text = json_string_value(json_object_get(post, "text"));
    ck_assert_msg(strstr(text, "charlie is out of this channel's turn order"), "%s", text);
    json_decref(post);
    /* A bot (another app) is no admin, whatever it writes. */
    size_t before = n;
    says(CHARLIE_ID, 1, NULL, "!dirigent rest", NULL, ts);
    post = moderator_post(&n);
    json_decref(post);
    ck_assert_uint_eq(n, before);
}
END_TEST

/* Under the channel policy a Slack thread belongs to the channel's
 * conversation, and the moderator answers in the thread (thread_ts) where
 * the human wrote: a command's reply, and the hand-off after a question
 * there nobody took up. */
START_TEST(test_slack_channel_policy_answers_in_the_thread)
{
    char top[24], ts[24];
    says(HUMAN_ID, 0, NULL, "Release thread: questions below.", NULL, top);
    says(HUMAN_ID, 0, top, "!dirigent status", NULL, ts);
    size_t n = 0;
    json_t *post = moderator_post(&n);
    ck_assert_ptr_nonnull(post);
    const char *tts = json_string_value(json_object_get(post, "thread_ts"));
    ck_assert_msg(tts && strcmp(tts, top) == 0, "status answered at %s, not in thread %s",
                  tts ? tts : "the top level", top);
    json_decref(post);
    says(HUMAN_ID, 0, top, "Which of you writes the notes?", NULL, ts);
    ck_assert_int_ge(who_speaks(top), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tth_end(&H, ABC[i], WORK, top, "NO_REPLY", 0), OC_OK);
    size_t before = n;
    post = moderator_post(&n);
    ck_assert_uint_eq(n, before + 1);
    ck_assert(strncmp(json_string_value(json_object_get(post, "text")), "<@", 2) == 0);
    tts = json_string_value(json_object_get(post, "thread_ts"));
    ck_assert_msg(tts && strcmp(tts, top) == 0, "hand-off at %s, not in thread %s",
                  tts ? tts : "the top level", top);
    json_decref(post);
}
END_TEST

/* One plugin, both platforms: each row goes out through its own platform's
 * dispatcher; a Discord row waits for a Discord token, a Slack row does not. */
START_TEST(test_discord_and_slack_rows_each_sent_by_their_own_dispatcher)
{
    dg_plugin *p = tth_plugin(&H);
    ck_assert_ptr_null(p->chat); /* no Discord token in this config */
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_outbox_enqueue(p->store, "300000000000000001", "to discord", NULL, 0, 1),
                     OC_OK);
    ck_assert_int_eq(dg_outbox_enqueue(p->store, WORK, "to slack", NULL, 0, 1), OC_OK);
    /* A mention of the other platform's user is refused, nothing written. */
    const char *discord_user[] = {"100000000000000003"};
    ck_assert_int_eq(dg_outbox_enqueue(p->store, WORK, "x", discord_user, 1, 1), OC_ERR_INVALID);
    char bad_thread[64];
    snprintf(bad_thread, sizeof bad_thread, "%s/notats", WORK);
    ck_assert_int_eq(dg_outbox_enqueue(p->store, bad_thread, "x", NULL, 0, 1), OC_ERR_INVALID);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
    dg_outbox_kick_all(p);
    size_t n = 0;
    json_t *post = moderator_post(&n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(json_string_value(json_object_get(post, "text")), "to slack");
    json_decref(post);
    dg_outbox_row *rows = NULL;
    size_t nr = 0;
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_outbox_list(p->store, NULL, &rows, &nr), OC_OK);
    dg_store_rollback(p->store);
    ck_assert_uint_eq(nr, 2);
    for (size_t i = 0; i < nr; i++) {
        int slack = strcmp(rows[i].channel_id, WORK) == 0;
        ck_assert_str_eq(rows[i].platform, slack ? "slack" : "discord");
        ck_assert_int_eq(rows[i].state, slack ? DG_OUTBOX_SENT : DG_OUTBOX_PENDING);
    }
    dg_outbox_rows_free(rows, nr);
}
END_TEST

/* A discussion opened from a Slack channel is a private Slack channel. */
START_TEST(test_slack_discussion_from_open_to_archive)
{
    dg_plugin *p = tth_plugin(&H);
    char *ws = tu_mkdtemp();
    char key[128];
    tth_session_key(key, sizeof key, "alpha", WORK, NULL);
    dg_caller alpha = {.agent_id = "alpha",
                       .session_key = key,
                       .session_id = "s-alpha",
                       .workspace_dir = ws,
                       .channel_id = WORK};
    const char *parts[] = {"bravo"};
    dg_channel_request req = {.name = "Release-Notes",
                              .participants = parts,
                              .n_participants = 1,
                              .callback_channel_id = WORK,
                              .discuss_guide = "Agree on the release notes; one page."};
    dg_channel_created made;
    char err[512] = "";
    /* Slack folds names, Discord's rule is not Slack's: a bad name is named. */
    ck_assert_int_eq(dg_discuss_create_channel(p, &alpha, &req, &made, err, sizeof err),
                     OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "Slack channel name"), "%s", err);
    req.name = "release-notes";
    req.parent_id = "400000000000000001";
    ck_assert_int_eq(dg_discuss_create_channel(p, &alpha, &req, &made, err, sizeof err),
                     OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "parentId") && strstr(err, "Slack"), "%s", err);
    req.parent_id = NULL;
    const char *discord_user[] = {"200000000000000001"};
    req.allowed_user_ids = discord_user;
    req.n_allowed_user_ids = 1;
    ck_assert_int_eq(dg_discuss_create_channel(p, &alpha, &req, &made, err, sizeof err),
                     OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "allowedUserIds[0]") && strstr(err, "Slack user id"), "%s", err);
    req.allowed_user_ids = NULL;
    req.n_allowed_user_ids = 0;
    ck_assert_uint_eq(fake_slack_request_count(FS, "conversations.create"), 0);

    ck_assert_int_eq(dg_discuss_create_channel(p, &alpha, &req, &made, err, sizeof err), OC_OK);
    ck_assert(made.is_discussion);
    char room[16];
    ck_assert_int_eq(fake_slack_channel_by_name(FS, "release-notes", room), 0);
    ck_assert_str_eq(made.channel_id, room);
    json_t *ch = fake_slack_channel(FS, room);
    ck_assert(json_is_true(json_object_get(ch, "is_private")));
    json_t *members = json_object_get(ch, "members");
    int seen = 0;
    size_t i;
    json_t *v;
    json_array_foreach(members, i, v) {
        const char *u = json_string_value(v);
        seen |= (strcmp(u, ALPHA_ID) == 0 ? 1 : 0) | (strcmp(u, BRAVO_ID) == 0 ? 2 : 0) |
                (strcmp(u, MOD_ID) == 0 ? 4 : 0) | (strcmp(u, CHARLIE_ID) == 0 ? 8 : 0);
    }
    json_decref(ch);
    ck_assert_int_eq(seen, 7); /* initiator, participant, moderator; not charlie */
    ck_assert_int_eq(dg_outbox_wait_idle(p->slack_outbox, 10000), OC_OK);
    json_t *kick = fake_slack_messages(FS, room);
    ck_assert_uint_eq(json_array_size(kick), 1);
    const char *text = json_string_value(json_object_get(json_array_get(kick, 0), "text"));
    ck_assert_msg(strstr(text, "<@" ALPHA_ID ">") && strstr(text, "<@" BRAVO_ID ">"), "%s", text);
    json_decref(kick);

    /* The summary in the initiator's workspace, then the callback. */
    char dir[512], file[600];
    snprintf(dir, sizeof dir, "%s/plans", ws);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(dir, sizeof dir, "%s/plans/discussions", ws);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(file, sizeof file, "%s/release-notes.md", dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fputs("# Release notes\nOne page, agreed.\n", f);
    fclose(f);
    char rkey[128];
    tth_session_key(rkey, sizeof rkey, "alpha", room, NULL);
    dg_caller in_room = alpha;
    in_room.channel_id = room;
    in_room.session_key = rkey;
    dg_session_refs none = {0};
    dg_callback_result res;
    ck_assert_int_eq(dg_discuss_callback(p, &in_room, "plans/discussions/release-notes.md", &none,
                                         &res, err, sizeof err),
                     OC_OK);
    dg_callback_result_clear(&res);
    ch = fake_slack_channel(FS, room);
    ck_assert_msg(json_is_true(json_object_get(ch, "is_archived")),
                  "the closed discussion channel is not archived");
    json_decref(ch);
    ck_assert_int_eq(dg_outbox_wait_idle(p->slack_outbox, 10000), OC_OK);
    json_t *work = fake_slack_messages(FS, WORK);
    const char *last =
        json_string_value(json_object_get(json_array_get(work, json_array_size(work) - 1), "text"));
    ck_assert_msg(last && strstr(last, "release-notes.md"), "no result in the origin: %s",
                  last ? last : "(none)");
    json_decref(work);
    dg_channel_created_clear(&made);
    tu_rmtree(ws);
    free(ws);
}
END_TEST

/* An agent without a Slack user id cannot join a Slack discussion. */
START_TEST(test_slack_discussion_refuses_an_agent_without_a_slack_id)
{
    tth_free(&H);
    char extra[512];
    snprintf(extra, sizeof extra,
             "\"slack\":{\"moderatorUserId\":\"" MOD_ID "\",\"apiBase\":\"%s\"}",
             fake_slack_url(FS));
    tth_start_agents(&H, "channel",
                     "{\"alpha\":{\"slackUserId\":\"" ALPHA_ID "\"},"
                     "\"delta\":{\"discordUserId\":\"100000000000000004\"}}",
                     extra, 0);
    char *ws = tu_mkdtemp();
    char key[128];
    tth_session_key(key, sizeof key, "alpha", WORK, NULL);
    dg_caller alpha = {.agent_id = "alpha",
                       .session_key = key,
                       .session_id = "s-alpha",
                       .workspace_dir = ws,
                       .channel_id = WORK};
    const char *parts[] = {"delta"};
    dg_channel_request req = {.name = "plan",
                              .participants = parts,
                              .n_participants = 1,
                              .callback_channel_id = WORK,
                              .discuss_guide = "Plan it."};
    dg_channel_created made;
    char err[512] = "";
    ck_assert_int_eq(
        dg_discuss_create_channel(tth_plugin(&H), &alpha, &req, &made, err, sizeof err),
        OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "participants[0] 'delta'") && strstr(err, "slackUserId"), "%s", err);
    ck_assert_uint_eq(fake_slack_request_count(FS, "conversations.create"), 0);
    tu_rmtree(ws);
    free(ws);
}
END_TEST

/* The moderator's posts in #work so far (outbox idle first). */
static size_t moderator_posts(json_t **last)
{
    size_t n = 0;
    json_t *post = moderator_post(&n);
    if (last)
        *last = post;
    else
        json_decref(post);
    return n;
}

/* A hand-off posted while the next speaker's app was away (Slack's Socket
 * Mode does not replay it; here: never handed to the plugin), in a running
 * gateway (_i 0) and across a restart right after it (_i 1): the moderator
 * mentions that speaker again after turn.nudgeSec (20 s), not only when
 * turn.timeoutSec (60 s) passes it over. The wait is measured on the
 * plugin's clock, one sweeper pass a second. */
START_TEST(test_slack_handoff_never_delivered_is_nudged)
{
    /* The start is behind us (its arming of every speaker is done). */
    dg_turns_sweep_now(tth_plugin(&H)->turns);
    char ts[24];
    says(HUMAN_ID, 0, NULL, "Who writes the changelog?", NULL, ts);
    ck_assert_int_eq(who_speaks(NULL), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tth_end(&H, ABC[i], WORK, NULL, "NO_REPLY", 0), OC_OK);
    json_t *post = NULL;
    size_t before = moderator_posts(&post);
    ck_assert_uint_eq(before, 1);
    ck_assert_str_eq(json_string_value(json_object_get(post, "text")), "<@" BRAVO_ID ">");
    json_decref(post);
    if (_i)
        tth_restart(&H);
    int waited = 0;
    size_t n = before;
    while (n == before && waited < 75) {
        tth_advance(&H, 1000);
        waited++;
        dg_turns_sweep_now(tth_plugin(&H)->turns);
        n = moderator_posts(&post);
        if (n == before)
            json_decref(post);
    }
    fprintf(stderr, "slack_turns: hand-off never delivered%s: the next mention came after %d s\n",
            _i ? ", then a restart" : "", waited);
    ck_assert_msg(n > before, "no mention within %d s", waited);
    const char *text = json_string_value(json_object_get(post, "text"));
    ck_assert_msg(strcmp(text, "<@" BRAVO_ID ">") == 0 && waited <= 22,
                  "after %d s the moderator posted \"%s\", not the nudge of bravo at 20 s", waited,
                  text);
    /* The nudge arrives: bravo's run now counts. */
    const char *mention[] = {BRAVO_ID, NULL};
    ck_assert_int_eq(tth_msg(&H, WORK, NULL, json_string_value(json_object_get(post, "ts")), MOD_ID,
                             1, text, mention),
                     OC_OK);
    json_decref(post);
    ck_assert_int_eq(who_speaks(NULL), 1);
}
END_TEST

/* The discussion request of the kill test and its caller (alpha in #work,
 * with a toolCallId, so that a repeat is the same call). */
static const char *const KILL_PARTS[] = {"bravo"};
static const dg_channel_request KILL_REQ = {.name = "release-plan",
                                            .participants = KILL_PARTS,
                                            .n_participants = 1,
                                            .callback_channel_id = NULL,
                                            .discuss_guide = "Plan the release; one page."};

static int create_as_alpha(const char *ws, dg_channel_created *made, char *err, size_t err_len)
{
    char key[128];
    tth_session_key(key, sizeof key, "alpha", WORK, NULL);
    dg_caller alpha = {.agent_id = "alpha",
                       .session_key = key,
                       .session_id = "s-alpha",
                       .workspace_dir = ws,
                       .channel_id = WORK,
                       .tool_call_id = "call-release-plan-1"};
    dg_channel_request req = KILL_REQ;
    req.callback_channel_id = WORK;
    return dg_discuss_create_channel(tth_plugin(&H), &alpha, &req, made, err, err_len);
}

/* The gateway dies (kill -9) while Slack holds the answer of one call of a
 * discussion's creation -- conversations.create, conversations.invite, or
 * the kickoff's chat.postMessage -- and the host repeats the tool call
 * after the restart: the discussion finishes with the channel the first
 * attempt made, every member in, one kickoff, nothing archived. */
static const char *const KILLED_IN[] = {"conversations.create", "conversations.invite",
                                        "chat.postMessage"};

/* Start a creation in a child gateway on H's state and kill it (-9) while
 * Slack holds the answer of method; then H runs again on that state. */
static void creation_killed_in(const char *method, const char *ws)
{
    ck_assert_int_eq(fake_slack_add_fault(FS, method, FS_FAULT_DELAY_AFTER, 1, 0, 60000, NULL), 0);
    size_t before = fake_slack_request_count(FS, method);
    tth_stop_plugin(&H);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(60); /* never outlive a failed test */
        tth_restart(&H);
        dg_channel_created made;
        char err[512];
        (void)create_as_alpha(ws, &made, err, sizeof err);
        for (;;)
            pause();
    }
    int reached = 0;
    for (int i = 0; i < 3000 && !reached; i++) {
        reached = fake_slack_request_count(FS, method) > before;
        if (!reached)
            usleep(10000);
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert_msg(reached, "%s never reached Slack (child status %d)", method, status);
    ck_assert(WIFSIGNALED(status));
    fake_slack_clear_faults(FS);
    tth_restart(&H);
}

START_TEST(test_slack_creation_killed_between_calls_finishes_with_its_channel)
{
    const char *method = KILLED_IN[_i];
    char *ws = tu_mkdtemp();
    creation_killed_in(method, ws);
    dg_channel_created made;
    char err[512] = "";
    ck_assert_msg(create_as_alpha(ws, &made, err, sizeof err) == OC_OK, "%s", err);
    ck_assert(made.is_discussion);
    char room[16];
    ck_assert_int_eq(fake_slack_channel_by_name(FS, "release-plan", room), 0);
    ck_assert_str_eq(made.channel_id, room);
    ck_assert_uint_eq(fake_slack_request_count(FS, "conversations.create"), 1);
    json_t *ch = fake_slack_channel(FS, room);
    ck_assert_msg(!json_is_true(json_object_get(ch, "is_archived")), "%s: channel archived",
                  method);
    int seen = 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(ch, "members"), i, v) {
        const char *u = json_string_value(v);
        seen |= (strcmp(u, ALPHA_ID) == 0 ? 1 : 0) | (strcmp(u, BRAVO_ID) == 0 ? 2 : 0) |
                (strcmp(u, MOD_ID) == 0 ? 4 : 0);
    }
    json_decref(ch);
    ck_assert_msg(seen == 7, "killed in %s: members %d of 7 (alpha 1, bravo 2, moderator 4)",
                  method, seen);
    ck_assert_int_eq(dg_outbox_wait_idle(tth_plugin(&H)->slack_outbox, 10000), OC_OK);
    ck_assert_uint_eq(fake_slack_message_count(FS, room), 1);
    dg_channel_created_clear(&made);
    tu_rmtree(ws);
    free(ws);
}
END_TEST

/* The same crash, and the host never repeats the call (OpenClaw does not
 * replay a run's tool call after a restart): after the grace the channel
 * the dead attempt made is archived, the intent forgotten, and #work told;
 * nothing half-made stays; the notice mentions the initiator. */
START_TEST(test_slack_creation_killed_and_not_repeated_is_undone)
{
    const char *method = KILLED_IN[_i];
    char *ws = tu_mkdtemp();
    creation_killed_in(method, ws);
    char room[16];
    ck_assert_int_eq(fake_slack_channel_by_name(FS, "release-plan", room), 0);
    size_t in_work = fake_slack_message_count(FS, WORK);
    dg_turns_sweep_now(tth_plugin(&H)->turns);
    ck_assert_int_eq(dg_outbox_wait_idle(tth_plugin(&H)->slack_outbox, 10000), OC_OK);
    ck_assert_uint_eq(fake_slack_message_count(FS, WORK), in_work); /* within the grace */
    tth_advance(&H, 11 * 60 * 1000);
    dg_turns_sweep_now(tth_plugin(&H)->turns);
    ck_assert_int_eq(dg_outbox_wait_idle(tth_plugin(&H)->slack_outbox, 10000), OC_OK);
    json_t *ch = fake_slack_channel(FS, room);
    ck_assert_msg(json_is_true(json_object_get(ch, "is_archived")),
                  "killed in %s: the half-made channel is not archived", method);
    json_decref(ch);
    json_t *work = fake_slack_messages(FS, WORK);
    ck_assert_uint_eq(json_array_size(work), in_work + 1);
    const char *text = json_string_value(json_object_get(json_array_get(work, in_work), "text"));
    ck_assert_msg(strstr(text, room) && strstr(text, "removed again") &&
                      strstr(text, "<@" ALPHA_ID ">"),
                  "the origin was told without mentioning alpha: %s", text);
    json_decref(work);
    ck_assert(tth_log_has(&H, "was not repeated within 600 s"));
    tu_rmtree(ws);
    free(ws);
}
END_TEST

Suite *make_slack_turns_suite(void)
{
    Suite *s = suite_create("slack_turns");
    TCase *tc = tcase_create("channel");
    tcase_add_checked_fixture(tc, setup_channel, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_slack_channel_handoff_posted_by_the_slack_moderator);
    tcase_add_test(tc, test_slack_mention_and_lower_case_session_keys);
    tcase_add_test(tc, test_slack_admin_commands_answered_on_slack);
    tcase_add_test(tc, test_slack_channel_policy_answers_in_the_thread);
    tcase_add_test(tc, test_discord_and_slack_rows_each_sent_by_their_own_dispatcher);
    tcase_add_test(tc, test_slack_discussion_from_open_to_archive);
    tcase_add_test(tc, test_slack_discussion_refuses_an_agent_without_a_slack_id);
    tcase_add_loop_test(tc, test_slack_handoff_never_delivered_is_nudged, 0, 2);
    tcase_add_loop_test(tc, test_slack_creation_killed_between_calls_finishes_with_its_channel, 0,
                        3);
    tcase_add_loop_test(tc, test_slack_creation_killed_and_not_repeated_is_undone, 0, 2);
    suite_add_tcase(s, tc);
    TCase *th = tcase_create("thread");
    tcase_add_checked_fixture(th, setup_thread, teardown);
    tcase_set_timeout(th, 60);
    tcase_add_test(th, test_slack_thread_handoff_posted_in_the_thread);
    suite_add_tcase(s, th);
    return s;
}
