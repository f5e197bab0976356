/*
 * check_admin.c -- admin commands (`!dirigent status|rest|wake|skip`, config
 * `admins`) through the real hooks: the plugin runs in the turn test host
 * (turn_test_host.c); the moderator's replies are read from the outbox.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "openclaw/plugin.h"
#include "discuss.h"
#include "faultvfs.h"
#include "scope.h"
#include "store.h"
#include "store_test.h"
#include "store_discuss.h"
#include "store_int.h"
#include "store_outbox.h"
#include "testutil.h"
#include "turn_test_host.h"
#include "turns.h"
#include "turns_engine.h"
#include "turns_engine_test.h"

#define CH1 "300000000000000001"
#define CH2 "300000000000000002"
#define ORIGIN "300000000000000077"
#define TH1 "310000000000000001"
#define ADMIN_UID "200000000000000042"
#define ADMINS "\"admins\":[\"" ADMIN_UID "\"]"

static tth H;
static int next_msg = 1;

static const char *mid(char *buf)
{
    snprintf(buf, 24, "4%017d", next_msg++);
    return buf;
}

static void human_says(const char *channel, const char *thread, const char *text)
{
    char id[24];
    ck_assert_int_eq(tth_msg(&H, channel, thread, mid(id), TTH_HUMAN_UID, 0, text, NULL), OC_OK);
}

/* The admin posts text (mentions: NULL-terminated user ids or NULL). */
static void admin_says(const char *channel, const char *thread, const char *text,
                       const char *const *mentions)
{
    char id[24];
    ck_assert_int_eq(tth_msg(&H, channel, thread, mid(id), ADMIN_UID, 0, text, mentions), OC_OK);
}

static int run(const char *agent, const char *channel, const char *thread, const char *out)
{
    char id[24];
    return tth_run(&H, agent, channel, thread, out, mid(id));
}

static const char *const ABC[] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};

static void join3(const char *channel, const char *thread)
{
    for (int i = 0; i < 3; i++)
        ck_assert_int_ge(tth_resolve(&H, ABC[i], channel, thread), 0);
}

/* Which of alpha, bravo, charlie would get a real model run (-1: none). */
static int who_speaks(const char *channel, const char *thread)
{
    int speaker = -1;
    for (int i = 0; i < 3; i++) {
        int r = tth_resolve(&H, ABC[i], channel, thread);
        ck_assert_int_ge(r, 0);
        if (r == 0) {
            ck_assert_msg(speaker < 0, "two speakers: %s and %s", ABC[speaker], ABC[i]);
            speaker = i;
        }
    }
    return speaker;
}

static dg_turn_state peek_scope(const dg_scope *sc, dg_channel_mode *mode)
{
    dg_turn_state st;
    int rc = dg_turns_peek(tth_plugin(&H)->turns, sc, &st, mode, NULL);
    ck_assert_msg(rc == OC_OK, "scope has no state (%s)", oc_status_name(rc));
    return st;
}

static dg_turn_state peek(const char *channel, const char *thread)
{
    dg_scope sc;
    if (thread)
        ck_assert_int_eq(dg_scope_thread(channel, thread, &sc), OC_OK);
    else
        ck_assert_int_eq(dg_scope_conversation(channel, &sc), OC_OK);
    return peek_scope(&sc, NULL);
}

/* The outbox rows (all channels), in order. */
static dg_outbox_row *outbox(size_t *n)
{
    dg_plugin *p = tth_plugin(&H);
    dg_outbox_row *rows = NULL;
    *n = 0;
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    int rc = dg_store_outbox_list(p->store, NULL, &rows, n);
    dg_store_rollback(p->store);
    ck_assert_int_eq(rc, OC_OK);
    return rows;
}

/* Exactly `want` rows; the last one has content, channel and mentions. */
static void expect_last_reply(size_t want, const char *channel, const char *content,
                              const char *mentions)
{
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    ck_assert_uint_eq(n, want);
    ck_assert_uint_ge(n, 1);
    ck_assert_str_eq(rows[n - 1].content, content);
    ck_assert_str_eq(rows[n - 1].channel_id, channel);
    ck_assert_str_eq(rows[n - 1].mentions, mentions);
    dg_outbox_rows_free(rows, n);
}

/* The moderator's reply comes back through message_received, as on Discord. */
static void echo_last_reply(const char *channel, const char *thread)
{
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    ck_assert_uint_ge(n, 1);
    char id[24];
    ck_assert_int_eq(
        tth_msg(&H, channel, thread, mid(id), TTH_MOD_UID, 1, rows[n - 1].content, NULL), OC_OK);
    dg_outbox_rows_free(rows, n);
}

static void assert_same(const dg_turn_state *a, const dg_turn_state *b)
{
    ck_assert_msg(dg_turn_state_same(a, b), "turn state changed");
    ck_assert_int_eq(a->msg_seq, b->msg_seq); /* not a new message either */
}

/* before_agent_reply of agent in channel with prompt (the run's
 * cleanedBody) and run id run_id: 1 claimed, 0 not. */
static int claim_prompt(const char *agent, const char *channel, const char *prompt,
                        const char *run_id)
{
    char key[256];
    json_t *ctx =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "agentId", agent, "sessionKey",
                  tth_session_key(key, sizeof key, agent, channel, NULL), "channelId", channel,
                  "accountId", agent, "messageProvider", "discord", "runId", run_id);
    json_t *ev = json_pack("{s:s}", "cleanedBody", prompt);
    json_t *r = NULL;
    ck_assert_int_eq(tth_call(&H, "before_agent_reply", ev, ctx, &r), OC_OK);
    int claimed = r && json_is_true(json_object_get(r, "handled"));
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return claimed;
}

static void setup_channel(void)
{
    tth_start(&H, "channel", "\"turn\":{\"maxAgentMessages\":5,\"timeoutSec\":60}," ADMINS);
}

static void setup_thread(void)
{
    tth_start(&H, "thread", "\"turn\":{\"maxAgentMessages\":5,\"timeoutSec\":60}," ADMINS);
    /* The engine prunes week-old dormant threads at start by the real clock
     * (the test clock is installed after init): keep the test clock near it
     * so a restart keeps what the test rests. */
    atomic_store(&H.now_ms, (int64_t)time(NULL) * 1000);
}

static void teardown(void)
{
    tth_free(&H);
}

static const char HELP[] =
    "Dirigent (admin): commands: `!dirigent status` (this scope's turn state), `!dirigent rest` "
    "(put it to sleep now), `!dirigent wake [@agent]` (give the first agent, or the one "
    "mentioned, the turn), `!dirigent skip` (pass the current speaker's turn on), "
    "`!dirigent close [summaryPath]` (in a discussion channel: close it now, status "
    "closed-by-admin), `!dirigent rotate` (end this scope's sessions: the next message opens "
    "fresh ones), `!dirigent cancel` (abort the speaker's run in flight), `!dirigent order` "
    "(this channel's turn order and who is out of it), `!dirigent add @agent` / `!dirigent "
    "remove @agent` (put an agent into the turn order, or take it out), `!dirigent resume` (lift "
    "a budget's hold and wake the conversation), `!dirigent cost` (what this channel cost and "
    "saved, the last 7 days).";
static const char RESTED[] =
    "Dirigent (admin): resting now; no agent takes a turn here until the next message.";
static const char CLOSED[] =
    "Dirigent (admin): this discussion channel is closed; no command changes anything here.";

/* ---- channel policy ------------------------------------------------------------- */

START_TEST(test_status_shows_the_scope_and_changes_nothing)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "count with me");
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "one"), 1);      /* agent message 1 */
    ck_assert_int_eq(run(TTH_BRAVO, CH1, NULL, "NO_REPLY"), 0); /* bravo passes */
    dg_turn_state before = peek(CH1, NULL);
    admin_says(CH1, NULL, "  !DIRIGENT Status  ", NULL);
    expect_last_reply(1, CH1,
                      "Dirigent (admin): status\n"
                      "policy: channel, scope: conversation\n"
                      "mode: normal\n"
                      "turn order: alpha, bravo, charlie\n"
                      "speaker: charlie\n"
                      "passed this cycle: alpha, bravo\n"
                      "agent messages: 1/5\n"
                      "judge: none (today's order)",
                      "");
    dg_turn_state after = peek(CH1, NULL);
    assert_same(&before, &after);
    /* Its echo neither ends the agent stretch nor wakes anything. */
    echo_last_reply(CH1, NULL);
    after = peek(CH1, NULL);
    assert_same(&before, &after);
    ck_assert_int_eq(who_speaks(CH1, NULL), 2);
    ck_assert(tth_log_has(&H, "admin " ADMIN_UID " ran \"!dirigent status\""));

    /* Dormant, then resting by the loop guard. */
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "NO_REPLY"), 0);
    ck_assert_int_eq(peek(CH1, NULL).active, 0);
    admin_says(CH1, NULL, "!dirigent status", NULL);
    /* 2 rows: the first status and this one (alpha, the author of the
     * latest message, is not woken to pass on it). */
    expect_last_reply(2, CH1,
                      "Dirigent (admin): status\n"
                      "policy: channel, scope: conversation\n"
                      "mode: normal\n"
                      "turn order: alpha, bravo, charlie\n"
                      "speaker: dormant\n"
                      "passed this cycle: alpha, bravo, charlie\n"
                      "agent messages: 1/5\n"
                      "judge: none (today's order)",
                      "");
}
END_TEST

/* Under the channel policy a Discord thread belongs to its channel's
 * conversation, and the moderator answers in the thread where the human
 * wrote: the command's reply, and the hand-off after the human's next
 * message there. A top-level message brings the posts back to the channel. */
START_TEST(test_channel_policy_answers_in_the_thread_where_the_human_wrote)
{
    join3(CH1, NULL);
    human_says(CH1, TH1, "a question in the thread");
    ck_assert_int_eq(who_speaks(CH1, TH1), 0);
    admin_says(CH1, TH1, "!dirigent skip", NULL);
    expect_last_reply(
        1, TH1, "Dirigent (admin): alpha's turn is skipped; <@" TTH_BRAVO_UID ">, it is your turn.",
        TTH_BRAVO_UID);
    admin_says(CH1, TH1, "!dirigent status", NULL);
    expect_last_reply(2, TH1,
                      "Dirigent (admin): status\n"
                      "policy: channel, scope: conversation\n"
                      "mode: normal\n"
                      "turn order: alpha, bravo, charlie\n"
                      "speaker: bravo\n"
                      "passed this cycle: alpha\n"
                      "agent messages: 0/5\n"
                      "judge: none (today's order)",
                      "");
    /* Nobody answers the thread's next question: the hand-off is in the thread. */
    human_says(CH1, TH1, "anyone?");
    ck_assert_int_eq(run(TTH_ALPHA, CH1, TH1, "NO_REPLY"), 0);
    ck_assert_int_eq(run(TTH_BRAVO, CH1, TH1, "NO_REPLY"), 0);
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, TH1, "NO_REPLY"), 0);
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(rows[2].channel_id, TH1);
    dg_outbox_rows_free(rows, n);
    /* Back at the top level: the channel again. */
    human_says(CH1, NULL, "and at the top level?");
    admin_says(CH1, NULL, "!dirigent rest", NULL);
    expect_last_reply(4, CH1, RESTED, "");
}
END_TEST

START_TEST(test_status_shows_the_loop_guard_rest)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go");
    for (int i = 0; i < 5; i++)
        run(ABC[i % 3], CH1, NULL, "more");
    dg_turn_state st = peek(CH1, NULL);
    ck_assert_int_eq(st.rested, 1);
    ck_assert_int_eq(st.active, 0);
    admin_says(CH1, NULL, "!dirigent status", NULL);
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    ck_assert_uint_eq(n, 2); /* the rest notice, then the status */
    ck_assert_ptr_nonnull(strstr(rows[1].content, "\nspeaker: resting (loop guard)\n"));
    ck_assert_ptr_nonnull(strstr(rows[1].content, "\nagent messages: 5/5"));
    dg_outbox_rows_free(rows, n);
}
END_TEST

START_TEST(test_rest_sleeps_the_scope_across_a_restart)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "hello");
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
    dg_turn_state before = peek(CH1, NULL);
    admin_says(CH1, NULL, "!dirigent rest", NULL);
    expect_last_reply(1, CH1, RESTED, "");
    dg_turn_state st = peek(CH1, NULL);
    ck_assert_int_eq(st.active, 0);
    ck_assert_int_eq(st.msg_seq, before.msg_seq); /* not a message: no new cycle */
    ck_assert_int_eq(who_speaks(CH1, NULL), -1);
    /* The former speaker may not post any more; its run ending moves nothing. */
    ck_assert_int_eq(tth_send(&H, TTH_ALPHA, CH1, NULL, "late words"), 1);
    ck_assert_int_eq(tth_end(&H, TTH_ALPHA, CH1, NULL, "NO_REPLY", 0), OC_OK);
    /* The reply's echo does not wake it; neither does time. */
    echo_last_reply(CH1, NULL);
    tth_advance(&H, 3600 * 1000);
    ck_assert_int_eq(who_speaks(CH1, NULL), -1);
    tth_restart(&H);
    ck_assert_int_eq(peek(CH1, NULL).active, 0);
    ck_assert_int_eq(who_speaks(CH1, NULL), -1);
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    ck_assert_uint_eq(n, 1); /* no reminder, no hand-off */
    dg_outbox_rows_free(rows, n);
    /* The next human message wakes it by the usual rules. */
    human_says(CH1, NULL, "back again");
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
}
END_TEST

START_TEST(test_wake_hands_the_turn_to_the_first_or_mentioned_agent)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "go");
    for (int i = 0; i < 5; i++)
        run(ABC[i % 3], CH1, NULL, "more");
    ck_assert_int_eq(peek(CH1, NULL).rested, 1);
    admin_says(CH1, NULL, "!dirigent wake", NULL);
    expect_last_reply(2, CH1, "Dirigent (admin): awake; <@" TTH_ALPHA_UID ">, it is your turn.",
                      TTH_ALPHA_UID);
    dg_turn_state st = peek(CH1, NULL);
    ck_assert_int_eq(st.active, 1);
    ck_assert_int_eq(st.rested, 0);
    ck_assert_int_eq(st.agent_msgs, 0);
    ck_assert_int_eq(st.silent, 0);
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
    echo_last_reply(CH1, NULL); /* the hand-off: changes nothing */
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);

    /* Put to rest, then woken with a mention: that agent speaks. */
    admin_says(CH1, NULL, "!dirigent rest", NULL);
    const char *const who[] = {TTH_HUMAN_UID, TTH_CHARLIE_UID, TTH_BRAVO_UID, NULL};
    admin_says(CH1, NULL, "!dirigent wake <@" TTH_CHARLIE_UID "> <@" TTH_BRAVO_UID ">", who);
    expect_last_reply(4, CH1, "Dirigent (admin): awake; <@" TTH_CHARLIE_UID ">, it is your turn.",
                      TTH_CHARLIE_UID);
    ck_assert_int_eq(who_speaks(CH1, NULL), 2);
    /* Charlie's run consumes the hand-off and passes the turn on. */
    ck_assert_int_eq(run(TTH_CHARLIE, CH1, NULL, "here"), 1);
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);

    /* A mention of someone who is no agent (a human, an unknown id):
     * the reply names that id, and nobody else is woken instead. */
    admin_says(CH1, NULL, "!dirigent rest", NULL);
    const char *const human[] = {TTH_HUMAN_UID, NULL};
    admin_says(CH1, NULL, "!dirigent wake <@" TTH_HUMAN_UID ">", human);
    expect_last_reply(6, CH1,
                      "Dirigent (admin): `" TTH_HUMAN_UID "` is not one of this gateway's agents; "
                      "nothing was woken (`!dirigent order` lists this channel's).",
                      "");
    const char *const unknown[] = {"999999999999999999", NULL};
    admin_says(CH1, NULL, "!dirigent wake <@999999999999999999>", unknown);
    expect_last_reply(7, CH1,
                      "Dirigent (admin): `999999999999999999` is not one of this gateway's "
                      "agents; nothing was woken (`!dirigent order` lists this channel's).",
                      "");
    ck_assert_int_eq(who_speaks(CH1, NULL), -1);
}
END_TEST

START_TEST(test_wake_without_agents_changes_nothing)
{
    admin_says(CH1, NULL, "!dirigent wake", NULL);
    expect_last_reply(1, CH1,
                      "Dirigent (admin): no agent is in this channel's turn order yet; "
                      "nothing to wake.",
                      "");
}
END_TEST

START_TEST(test_skip_passes_the_turn_with_a_mention)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "hello");
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
    admin_says(CH1, NULL, "!dirigent skip", NULL);
    expect_last_reply(
        1, CH1, "Dirigent (admin): alpha's turn is skipped; <@" TTH_BRAVO_UID ">, it is your turn.",
        TTH_BRAVO_UID);
    dg_turn_state st = peek(CH1, NULL);
    ck_assert_int_eq(st.silent, 1); /* alpha passed, as on a timeout */
    ck_assert_int_eq(who_speaks(CH1, NULL), 1);
    /* alpha's late message is not allowed out. */
    ck_assert_int_eq(tth_send(&H, TTH_ALPHA, CH1, NULL, "late"), 1);
    admin_says(CH1, NULL, "!dirigent skip", NULL);
    expect_last_reply(2, CH1,
                      "Dirigent (admin): bravo's turn is skipped; <@" TTH_CHARLIE_UID
                      ">, it is your turn.",
                      TTH_CHARLIE_UID);
    admin_says(CH1, NULL, "!dirigent skip", NULL);
    expect_last_reply(3, CH1,
                      "Dirigent (admin): charlie's turn is skipped; nobody else is left "
                      "in this cycle, so the scope is dormant.",
                      "");
    ck_assert_int_eq(who_speaks(CH1, NULL), -1);
    dg_turn_state before = peek(CH1, NULL);
    admin_says(CH1, NULL, "!dirigent skip", NULL);
    expect_last_reply(4, CH1,
                      "Dirigent (admin): nobody holds the turn here (dormant); nothing "
                      "to skip.",
                      "");
    dg_turn_state after = peek(CH1, NULL);
    assert_same(&before, &after);
}
END_TEST

START_TEST(test_unknown_or_missing_subcommand_lists_the_commands)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "hello");
    dg_turn_state before = peek(CH1, NULL);
    admin_says(CH1, NULL, "!dirigent", NULL);
    expect_last_reply(1, CH1, HELP, "");
    admin_says(CH1, NULL, "!Dirigent help", NULL);
    expect_last_reply(2, CH1, HELP, "");
    dg_turn_state after = peek(CH1, NULL);
    assert_same(&before, &after);
    /* Not a command: ordinary speech of the admin (a new cycle). */
    admin_says(CH1, NULL, "!dirigentstatus", NULL);
    admin_says(CH1, NULL, "please !dirigent status", NULL);
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    ck_assert_uint_eq(n, 2);
    dg_outbox_rows_free(rows, n);
    ck_assert_int_eq(peek(CH1, NULL).msg_seq, before.msg_seq + 2);
}
END_TEST

/* An unknown subcommand is named, the nearest known one suggested when it
 * is close, and the commands listed; nothing changes. */
START_TEST(test_unknown_subcommand_says_so_and_suggests)
{
    static const char LIST[] = "\ncommands: `!dirigent status`";
    join3(CH1, NULL);
    human_says(CH1, NULL, "hello");
    dg_turn_state before = peek(CH1, NULL);
    const struct {
        const char *text, *want;
    } cases[] = {
        {"!dirigent stauts", "Dirigent (admin): unknown command `stauts`; did you mean "
                             "`status`?"},
        {"!DIRIGENT Staus now", "Dirigent (admin): unknown command `Staus`; did you mean "
                                "`status`?"},
        {"!dirigent wak", "Dirigent (admin): unknown command `wak`; did you mean `wake`?"},
        {"!dirigent rot", "Dirigent (admin): unknown command `rot`; did you mean `rotate`?"},
        {"!dirigent cancle", "Dirigent (admin): unknown command `cancle`; did you mean "
                             "`cancel`?"},
        {"!dirigent hepl", "Dirigent (admin): unknown command `hepl`; did you mean `help`?"},
        {"!dirigent frobnicate", "Dirigent (admin): unknown command `frobnicate`."},
        {"!dirigent `x`yz", "Dirigent (admin): unknown command `xyz`."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        admin_says(CH1, NULL, cases[i].text, NULL);
        size_t n;
        dg_outbox_row *rows = outbox(&n);
        ck_assert_uint_eq(n, i + 1);
        const char *got = rows[n - 1].content;
        size_t w = strlen(cases[i].want);
        ck_assert_msg(strncmp(got, cases[i].want, w) == 0, "%s: got \"%s\"", cases[i].text, got);
        ck_assert_msg(strncmp(got + w, LIST, strlen(LIST)) == 0,
                      "%s: no command list in "
                      "\"%s\"",
                      cases[i].text, got);
        ck_assert_str_eq(got + w + 1, HELP + strlen("Dirigent (admin): "));
        ck_assert_str_eq(rows[n - 1].mentions, "");
        dg_outbox_rows_free(rows, n);
    }
    dg_turn_state after = peek(CH1, NULL);
    assert_same(&before, &after);
    ck_assert(tth_log_has(&H, "ran \"!dirigent (unknown)\""));
}
END_TEST

/* The unknown-command replies are templates like the others. */
START_TEST(test_unknown_subcommand_reply_is_overridable)
{
    tth_free(&H);
    char *dir = tu_mkdtemp(), path[512];
    snprintf(path, sizeof path, "%s/admin_unknown_suggest.md", dir);
    ck_assert_int_eq(tu_write_file(path, "no such thing as {command}, try {suggestion}\n"), 0);
    snprintf(path, sizeof path, "%s/admin_help.md", dir);
    ck_assert_int_eq(tu_write_file(path, "ask the operator\n"), 0);
    char extra[600];
    snprintf(extra, sizeof extra, "\"templatesDir\":\"%s\",\"turn\":{\"timeoutSec\":60}," ADMINS,
             dir);
    tth_start(&H, "channel", extra);
    admin_says(CH1, NULL, "!dirigent stats", NULL);
    expect_last_reply(1, CH1,
                      "Dirigent (admin): no such thing as stats, try status\n"
                      "ask the operator",
                      "");
    tu_rmtree(dir);
    free(dir);
}
END_TEST

/* A `!dirigent` command from a human not in `admins` is answered in one
 * line (only admins may) and is no speech: no agent gets the turn for it. */
START_TEST(test_non_admin_command_is_refused_in_one_line)
{
    static const char REFUSED[] = "Dirigent (admin): only admins may use `!dirigent` commands "
                                  "(the plugin's `admins`); no agent answers this message.";
    join3(CH1, NULL);
    human_says(CH1, NULL, "!dirigent rest");
    expect_last_reply(1, CH1, REFUSED, "");
    ck_assert(tth_log_has(&H, "is not in `admins`; refused in one line"));
    ck_assert_int_eq(who_speaks(CH1, NULL), -1);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "Resting? Let me answer."), 0);
    human_says(CH1, NULL, "!dirigent wake");
    expect_last_reply(2, CH1, REFUSED, "");
    ck_assert_int_eq(who_speaks(CH1, NULL), -1);
    /* An agent or another bot with such a text is no admin either, and
     * gets no answer. */
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), TTH_BOT_UID, 1, "!dirigent rest", NULL),
                     OC_OK);
    ck_assert_int_eq(tth_outbox_count(&H, NULL), 2);
    /* An ordinary message still wakes the scope. */
    human_says(CH1, NULL, "hello");
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
}
END_TEST

/* A mistyped `!dirigent` from a human gets a one-line hint, at most once
 * per channel an hour (kept across a restart); the message still counts
 * as an ordinary one. */
START_TEST(test_mistyped_command_word_gets_a_hint_once_an_hour)
{
    static const char HINT[] = "Did you mean `!dirigent status`? Commands start with `!dirigent`.";
    join3(CH1, NULL);
    join3(CH2, NULL);
    human_says(CH1, NULL, "hello");
    admin_says(CH1, NULL, "!dirigent rest", NULL);
    ck_assert_int_eq(who_speaks(CH1, NULL), -1);
    int64_t seq = peek(CH1, NULL).msg_seq;
    human_says(CH1, NULL, "!dirignet status");
    expect_last_reply(2, CH1, HINT, "");
    ck_assert(tth_log_has(&H, "starts like a mistyped !dirigent"));
    /* Ordinary: it woke the dormant scope like any human message. */
    ck_assert_int_eq(peek(CH1, NULL).msg_seq, seq + 1);
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
    /* Within the hour: no second hint in that channel, restart or not. */
    atomic_fetch_add(&H.now_ms, DG_ADMIN_HINT_COOLDOWN_MS - 1000);
    human_says(CH1, NULL, "!Dirigetn stauts");
    ck_assert_int_eq(tth_outbox_count(&H, NULL), 2);
    tth_restart(&H);
    human_says(CH1, NULL, "!dirgent wake");
    ck_assert_int_eq(tth_outbox_count(&H, NULL), 2);
    /* Another channel has its own hour. */
    human_says(CH2, NULL, "  !DIRIGNET");
    expect_last_reply(3, CH2, "Did you mean `!dirigent`? Commands start with `!dirigent`.", "");
    /* Not near misses: the command itself, a longer word, far words. */
    atomic_fetch_add(&H.now_ms, 1000);
    human_says(CH1, NULL, "!dirigentfoo status");
    human_says(CH1, NULL, "!dirigentstatus");
    human_says(CH1, NULL, "dirignet status");
    human_says(CH1, NULL, "!direct status");
    human_says(CH1, NULL, "please !dirignet status");
    ck_assert_int_eq(tth_outbox_count(&H, NULL), 3);
    /* An hour after the first one: hinted again (the subcommand mended). */
    human_says(CH1, NULL, "!dirigen stats please");
    expect_last_reply(4, CH1, HINT, "");
    /* Agents' and bots' messages never get one. */
    atomic_fetch_add(&H.now_ms, DG_ADMIN_HINT_COOLDOWN_MS);
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), TTH_BOT_UID, 1, "!dirignet rest", NULL),
                     OC_OK);
    ck_assert_int_eq(run(TTH_ALPHA, CH1, NULL, "!dirignet skip"), 1); /* it spoke */
    ck_assert_int_eq(tth_outbox_count(&H, NULL), 4);
}
END_TEST

START_TEST(test_command_runs_once_across_reporting_accounts)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "hello");
    char id[24];
    mid(id);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tth_msg(&H, CH1, NULL, id, ADMIN_UID, 0, "!dirigent skip", NULL), OC_OK);
    expect_last_reply(
        1, CH1, "Dirigent (admin): alpha's turn is skipped; <@" TTH_BRAVO_UID ">, it is your turn.",
        TTH_BRAVO_UID);
    ck_assert_int_eq(who_speaks(CH1, NULL), 1);
    mid(id);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tth_msg(&H, CH1, NULL, id, ADMIN_UID, 0, "!dirigent status", NULL), OC_OK);
    ck_assert_int_eq(tth_outbox_count(&H, NULL), 2);
}
END_TEST

static void open_and_close_discussion(const char *channel)
{
    dg_plugin *p = tth_plugin(&H);
    static const char *const BC[] = {TTH_BRAVO, TTH_CHARLIE};
    char *order[] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};
    dg_discussion d = {
        .discussion_channel_id = (char *)channel,
        .origin_channel_id = ORIGIN,
        .initiator_agent_id = TTH_ALPHA,
        .initiator_session_key = "agent:x",
        .initiator_session_id = "sid",
        .initiator_workspace = "/tmp/ws",
        .discuss_guide = "Decide the release date.",
        .status = DG_DISCUSSION_ACTIVE,
        .created_at_ms = dg_now_ms(p),
        .turn_order = order,
        .n_turn_order = 3,
    };
    int64_t id = 0;
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_discussion_insert(p->store, &d, &id), OC_OK);
    ck_assert_int_eq(dg_turns_prefill_discussion(p->turns, channel, TTH_ALPHA, BC, 2, dg_now_ms(p)),
                     OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_discussion_close(p->store, id, "plans/d.md", dg_now_ms(p)), OC_OK);
    ck_assert_int_eq(dg_turns_close_channel(p->turns, channel, dg_now_ms(p)), OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
}

START_TEST(test_closed_channel_answers_closed)
{
    open_and_close_discussion(CH2);
    dg_turn_state before = peek(CH2, NULL);
    admin_says(CH2, NULL, "!dirigent wake", NULL);
    expect_last_reply(1, CH2, CLOSED, "");
    admin_says(CH2, NULL, "!dirigent rest", NULL);
    expect_last_reply(2, CH2, CLOSED, "");
    admin_says(CH2, NULL, "!dirigent skip", NULL);
    expect_last_reply(3, CH2, CLOSED, "");
    admin_says(CH2, NULL, "!dirigent help", NULL);
    expect_last_reply(4, CH2, CLOSED, "");
    admin_says(CH2, NULL, "!dirigent status", NULL);
    expect_last_reply(5, CH2,
                      "Dirigent (admin): status\n"
                      "policy: channel, scope: conversation\n"
                      "mode: closed\n"
                      "turn order: alpha, bravo, charlie\n"
                      "speaker: none (closed)\n"
                      "passed this cycle: none\n"
                      "agent messages: 0/5\n"
                      "this discussion channel is closed: rest, wake and skip change nothing "
                      "here\n"
                      "judge: none (today's order)",
                      "");
    dg_turn_state after = peek(CH2, NULL);
    assert_same(&before, &after);
    /* The echo of a reply gets no closed notice. */
    echo_last_reply(CH2, NULL);
    ck_assert_int_eq(tth_outbox_count(&H, NULL), 5);
    ck_assert_int_eq(who_speaks(CH2, NULL), -1);
}
END_TEST

/* ---- forced close ---------------------------------------------------------------- */

/* An active discussion in channel whose initiator (alpha) works in ws. */
static void open_active_discussion(const char *channel, const char *ws)
{
    dg_plugin *p = tth_plugin(&H);
    static const char *const BC[] = {TTH_BRAVO, TTH_CHARLIE};
    char *order[] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};
    dg_discussion d = {
        .discussion_channel_id = (char *)channel,
        .origin_channel_id = ORIGIN,
        .initiator_agent_id = TTH_ALPHA,
        .initiator_session_key = "agent:x",
        .initiator_session_id = "sid",
        .initiator_workspace = (char *)ws,
        .discuss_guide = "Decide the release date.",
        .status = DG_DISCUSSION_ACTIVE,
        .created_at_ms = dg_now_ms(p),
        .turn_order = order,
        .n_turn_order = 3,
    };
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_discussion_insert(p->store, &d, NULL), OC_OK);
    ck_assert_int_eq(dg_turns_prefill_discussion(p->turns, channel, TTH_ALPHA, BC, 2, dg_now_ms(p)),
                     OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
}

static dg_discussion row_of(const char *channel)
{
    dg_plugin *p = tth_plugin(&H);
    dg_discussion d;
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_store_discussion_by_channel(p->store, channel, &d), OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
    return d;
}

/* The last outbox row's content contains needle. */
static int last_reply_has(const char *needle)
{
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    int has = n > 0 && strstr(rows[n - 1].content, needle) != NULL;
    dg_outbox_rows_free(rows, n);
    return has;
}

START_TEST(test_admin_close_with_summary_closes_like_a_callback)
{
    char *ws = tu_mkdtemp();
    char *dir = tu_path(ws, "plans");
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    char *file = tu_path(dir, "d.md");
    ck_assert_int_eq(tu_write_file(file, "## Decision\nFriday.\n"), 0);
    open_active_discussion(CH2, ws);
    admin_says(CH2, NULL, "!dirigent close plans/d.md", NULL);
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    ck_assert_uint_eq(n, 2);
    /* The result to the origin, then the admin's reply. */
    ck_assert_str_eq(rows[0].channel_id, ORIGIN);
    ck_assert_ptr_nonnull(strstr(rows[0].content, "[Discussion Result Ready]"));
    ck_assert_ptr_nonnull(strstr(rows[0].content, "closed-by-admin"));
    ck_assert_ptr_nonnull(strstr(rows[0].content, "plans/d.md"));
    /* The preview (discussion.previewChars, default 400) comes along. */
    ck_assert_ptr_nonnull(strstr(rows[0].content, "Summary preview:\n> ## Decision\n> Friday."));
    ck_assert_str_eq(rows[0].mentions, TTH_ALPHA_UID);
    ck_assert_str_eq(rows[1].channel_id, CH2);
    ck_assert_ptr_nonnull(strstr(rows[1].content, "discussion closed"));
    dg_outbox_rows_free(rows, n);
    dg_discussion d = row_of(CH2);
    ck_assert_int_eq(d.status, DG_DISCUSSION_CLOSED);
    ck_assert_str_eq(d.end_status, "closed-by-admin");
    ck_assert_str_eq(d.summary_path, "plans/d.md");
    dg_discussion_clear(&d);
    dg_channel_mode mode;
    dg_scope sc;
    ck_assert_int_eq(dg_scope_conversation(CH2, &sc), OC_OK);
    peek_scope(&sc, &mode);
    ck_assert_int_eq(mode, DG_MODE_CLOSED);
    /* The origin is woken for the initiator; later words get the closed notice. */
    ck_assert_int_eq(who_speaks(ORIGIN, NULL), 0);
    echo_last_reply(CH2, NULL);
    human_says(CH2, NULL, "one more thing");
    ck_assert(last_reply_has("[Channel Closed]"));
    /* A second close changes nothing. */
    admin_says(CH2, NULL, "!dirigent close", NULL);
    expect_last_reply(4, CH2, CLOSED, "");
    tu_rmtree(ws);
    free(file);
    free(dir);
    free(ws);
}
END_TEST

/* With discussion.archiveChannelId the admin's close appends the index line. */
START_TEST(test_admin_close_appends_archive_line)
{
    tth_free(&H);
    tth_start(&H, "channel",
              "\"discussion\":{\"archiveChannelId\":\"300000000000000099\"}," ADMINS);
    char *ws = tu_mkdtemp();
    open_active_discussion(CH2, ws);
    admin_says(CH2, NULL, "!dirigent close", NULL);
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].channel_id, "300000000000000099") == 0) {
            lines++;
            ck_assert_ptr_nonnull(strstr(rows[i].content, "| <#" CH2 "> | closed-by-admin | "
                                                          "summary `none`"));
        }
    ck_assert_int_eq(lines, 1);
    dg_outbox_rows_free(rows, n);
    tu_rmtree(ws);
    free(ws);
}
END_TEST

START_TEST(test_admin_close_refusals_change_nothing)
{
    char *ws = tu_mkdtemp();
    char *file = tu_path(ws, "blank.md");
    ck_assert_int_eq(tu_write_file(file, "  \n"), 0);
    open_active_discussion(CH2, ws);
    const char *bad[] = {"!dirigent close ../outside.md", "!dirigent close missing.md",
                         "!dirigent close /etc/passwd", "!dirigent close blank.md"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        admin_says(CH2, NULL, bad[i], NULL);
        ck_assert_msg(last_reply_has("the summary path is refused"), "%s", bad[i]);
        dg_discussion d = row_of(CH2);
        ck_assert_int_eq(d.status, DG_DISCUSSION_ACTIVE);
        dg_discussion_clear(&d);
    }
    /* A path longer than the command takes. */
    char longcmd[1200] = "!dirigent close ";
    memset(longcmd + strlen(longcmd), 'a', 1100);
    longcmd[sizeof longcmd - 1] = '\0';
    admin_says(CH2, NULL, longcmd, NULL);
    ck_assert(last_reply_has("the summary path is longer than 1023 bytes; nothing changed."));
    dg_discussion dl = row_of(CH2);
    ck_assert_int_eq(dl.status, DG_DISCUSSION_ACTIVE);
    dg_discussion_clear(&dl);
    ck_assert_int_eq(tth_outbox_count(&H, ORIGIN), 0);
    /* Not a discussion channel. */
    join3(CH1, NULL);
    admin_says(CH1, NULL, "!dirigent close", NULL);
    ck_assert(last_reply_has("not a discussion channel"));
    /* Not an admin: an ordinary message. */
    human_says(CH2, NULL, "!dirigent close");
    dg_discussion d = row_of(CH2);
    ck_assert_int_eq(d.status, DG_DISCUSSION_ACTIVE);
    dg_discussion_clear(&d);
    /* Without a path: closed, the result says there is no summary. */
    admin_says(CH2, NULL, "!dirigent close", NULL);
    d = row_of(CH2);
    ck_assert_int_eq(d.status, DG_DISCUSSION_CLOSED);
    ck_assert_str_eq(d.end_status, "closed-by-admin");
    ck_assert_ptr_null(d.summary_path);
    dg_discussion_clear(&d);
    ck_assert_int_eq(tth_outbox_count(&H, ORIGIN), 1);
    char *text = tth_outbox_content(&H, ORIGIN, 0, NULL);
    ck_assert_ptr_nonnull(strstr(text, "closed-by-admin"));
    ck_assert_ptr_nonnull(strstr(text, "without a summary"));
    free(text);
    tu_rmtree(ws);
    free(file);
    free(ws);
}
END_TEST

/* ---- thread policy -------------------------------------------------------------- */

/* Rows in the outbox now. */
static size_t outbox_n(void)
{
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    dg_outbox_rows_free(rows, n);
    return n;
}

/* ---- rotate / cancel: owner commands per scope (ABI 1.1 host calls) --------------- */

/* What sessions_list answers: alpha, bravo in CH1; alpha in thread TH1 too. */
static void host_sessions(void)
{
    char k1[200], k2[200], k3[200];
    tth_session_key(k1, sizeof k1, TTH_ALPHA, CH1, NULL);
    tth_session_key(k2, sizeof k2, TTH_BRAVO, CH1, NULL);
    tth_session_key(k3, sizeof k3, TTH_ALPHA, CH1, TH1);
    json_decref(H.sessions);
    H.sessions =
        json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s,s:s}]", "sessionKey", k1, "agentId",
                  TTH_ALPHA, "channelId", CH1, "sessionKey", k2, "agentId", TTH_BRAVO, "channelId",
                  CH1, "sessionKey", k3, "agentId", TTH_ALPHA, "channelId", CH1, "threadId", TH1);
}

static const char *last_reply(void)
{
    static char text[1024];
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    ck_assert_uint_ge(n, 1);
    snprintf(text, sizeof text, "%s", rows[n - 1].content);
    dg_outbox_rows_free(rows, n);
    return text;
}

START_TEST(test_rotate_resets_the_channels_sessions)
{
    host_sessions();
    join3(CH1, NULL);
    human_says(CH1, NULL, "hello");
    dg_turn_state before = peek(CH1, NULL);
    admin_says(CH1, NULL, "!dirigent rotate", NULL);
    /* Policy channel: the scope is the whole channel, threads included. */
    ck_assert_str_eq(H.resets, "agent:alpha:discord:channel:" CH1 "\n"
                               "agent:bravo:discord:channel:" CH1 "\n"
                               "agent:alpha:discord:channel:" CH1 ":thread:" TH1 "\n");
    ck_assert_str_eq(last_reply(), "Dirigent (admin): rotated 3 session(s) of this channel; "
                                   "the next message opens fresh ones.");
    dg_turn_state after = peek(CH1, NULL);
    assert_same(&before, &after);
}
END_TEST

START_TEST(test_cancel_aborts_the_speakers_run_or_says_why_not)
{
    host_sessions();
    join3(CH1, NULL);
    admin_says(CH1, NULL, "!dirigent cancel", NULL);
    ck_assert_str_eq(last_reply(), "Dirigent (admin): nobody holds the turn in this channel; "
                                   "there is no run to cancel.");
    ck_assert_str_eq(H.aborts, "");
    human_says(CH1, NULL, "hello");
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
    admin_says(CH1, NULL, "!dirigent cancel", NULL);
    ck_assert_str_eq(H.aborts, "agent:alpha:discord:channel:" CH1 "\n"
                               "agent:alpha:discord:channel:" CH1 ":thread:" TH1 "\n");
    ck_assert_str_eq(last_reply(), "Dirigent (admin): alpha's run was aborted.");
    H.abort_status = OC_ERR_NOT_FOUND;
    admin_says(CH1, NULL, "!dirigent cancel", NULL);
    ck_assert_str_eq(last_reply(), "Dirigent (admin): alpha holds the turn but has no run in "
                                   "flight; nothing to cancel.");
    ck_assert_int_eq(who_speaks(CH1, NULL), 0); /* the turn stays */
}
END_TEST

START_TEST(test_rotate_and_cancel_when_the_host_fails)
{
    /* The host cannot list the sessions: said, nothing reset or aborted. */
    host_sessions();
    join3(CH1, NULL);
    human_says(CH1, NULL, "hello");
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
    H.list_fails = 1;
    admin_says(CH1, NULL, "!dirigent rotate", NULL);
    ck_assert_ptr_nonnull(strstr(last_reply(), "rotate: the host could not list the sessions"));
    admin_says(CH1, NULL, "!dirigent cancel", NULL);
    ck_assert_ptr_nonnull(strstr(last_reply(), "cancel: the host could not list the sessions"));
    ck_assert_str_eq(H.resets, "");
    ck_assert_str_eq(H.aborts, "");
    H.list_fails = 0;
    /* Its resets and aborts fail: counted, logged by session, and the reply
     * says so. */
    H.reset_status = OC_ERR_IO;
    admin_says(CH1, NULL, "!dirigent rotate", NULL);
    ck_assert(tth_log_has(&H, "admin rotate: session_reset(agent:alpha:discord:channel:" CH1
                              ") failed: OC_ERR_IO"));
    ck_assert_ptr_nonnull(strstr(last_reply(), "rotated 0 session(s) of this channel; 3 could "
                                               "not be reset"));
    H.abort_status = OC_ERR_IO;
    admin_says(CH1, NULL, "!dirigent cancel", NULL);
    ck_assert(tth_log_has(&H, "admin cancel: run_abort(agent:alpha:discord:channel:" CH1
                              ") failed: OC_ERR_IO"));
    ck_assert_ptr_nonnull(strstr(last_reply(), "aborting alpha's run failed"));
    ck_assert_int_eq(who_speaks(CH1, NULL), 0); /* the turn stays */
    /* A list that is no array, or entries without a key, are no sessions. */
    H.reset_status = OC_OK;
    json_decref(H.sessions);
    H.sessions = json_string("not a list");
    admin_says(CH1, NULL, "!dirigent rotate", NULL);
    ck_assert(tth_log_has(&H, "did not return an array; taken as no sessions"));
    ck_assert_str_eq(last_reply(), "Dirigent (admin): rotated 0 session(s) of this channel; "
                                   "the next message opens fresh ones.");
    json_decref(H.sessions);
    H.sessions = json_pack("[{s:s},{s:s,s:s}]", "agentId", TTH_ALPHA, "sessionKey", "", "agentId",
                           TTH_BRAVO);
    H.resets[0] = '\0';
    admin_says(CH1, NULL, "!dirigent rotate", NULL);
    ck_assert_str_eq(H.resets, "");
}
END_TEST

static void setup_faulty(void)
{
    ck_assert_int_eq(fv_install(), 0); /* before the plugin opens its database */
    setup_channel();
}

START_TEST(test_commands_under_read_faults_run_once)
{
    /* The nth read of the database fails while an owner's command runs
     * (faultvfs.h), for n = 1, 2, ... until the command read less: it
     * fails with OC_ERR_IO and nothing (no reply, no change), or runs; the
     * host delivering it again runs it once. Each command ends with exactly
     * one reply more than before. _i = 1: each step on a restarted instance
     * (its mirror empty), so the reads behind the engine's lookups fail too. */
    join3(CH1, NULL);
    human_says(CH1, NULL, "hello");
    static const char *const cmds[] = {"!dirigent status", "!dirigent skip", "!dirigent rest",
                                       "!dirigent wake", "!dirigent help"};
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        long n;
        for (n = 1; n < 300; n++) {
            size_t before = outbox_n();
            char id[24];
            mid(id);
            if (_i) { /* cold: a fresh instance, its mirror empty */
                tth_restart(&H);
            }
            dg_store_test_drop_pages(tth_plugin(&H)->store);
            fv_fail_read_nth(n);
            int rc = tth_msg(&H, CH1, NULL, id, ADMIN_UID, 0, cmds[c], NULL);
            int hit = fv_fail_read_nth_hit();
            fv_fail_read_nth(0);
            size_t after = outbox_n();
            if (rc != OC_OK) {
                ck_assert_msg(rc == OC_ERR_IO, "%s, read %ld: %s", cmds[c], n, oc_status_name(rc));
                ck_assert_uint_eq(after, before);
                ck_assert_int_eq(tth_msg(&H, CH1, NULL, id, ADMIN_UID, 0, cmds[c], NULL), OC_OK);
                after = outbox_n();
            }
            ck_assert_msg(after == before + 1, "%s, read %ld: %zu replies", cmds[c], n,
                          after - before);
            if (!hit)
                break;
        }
        ck_assert_int_lt(n, 300);
    }
}
END_TEST

/* A 1.0 host (its oc_host_api ends before session_reset): said, nothing done. */
START_TEST(test_rotate_and_cancel_on_an_abi_1_0_host)
{
    host_sessions();
    H.api.struct_size = (uint32_t)offsetof(oc_host_api, session_reset);
    tth_restart(&H); /* the plugin reads what its host has at init */
    join3(CH1, NULL);
    human_says(CH1, NULL, "hello");
    admin_says(CH1, NULL, "!dirigent rotate", NULL);
    ck_assert_ptr_nonnull(strstr(last_reply(), "rotate is not supported by this host"));
    admin_says(CH1, NULL, "!dirigent cancel", NULL);
    ck_assert_ptr_nonnull(strstr(last_reply(), "cancel is not supported by this host"));
    ck_assert_str_eq(H.resets, "");
    ck_assert_str_eq(H.aborts, "");
}
END_TEST

/* Policy thread: inside a thread the command acts on that thread only; at
 * the top level on the channel's own sessions. */
START_TEST(test_thread_policy_rotate_and_cancel_act_on_their_thread)
{
    host_sessions();
    join3(CH1, TH1);
    human_says(CH1, TH1, "in the thread");
    ck_assert_int_eq(who_speaks(CH1, TH1), 0);
    admin_says(CH1, TH1, "!dirigent rotate", NULL);
    ck_assert_str_eq(H.resets, "agent:alpha:discord:channel:" CH1 ":thread:" TH1 "\n");
    ck_assert_str_eq(last_reply(), "Dirigent (admin): rotated 1 session(s) of this thread; "
                                   "the next message opens fresh ones.");
    admin_says(CH1, TH1, "!dirigent cancel", NULL);
    ck_assert_str_eq(H.aborts, "agent:alpha:discord:channel:" CH1 ":thread:" TH1 "\n");
    H.resets[0] = '\0';
    admin_says(CH1, NULL, "!dirigent rotate", NULL);
    ck_assert_str_eq(H.resets, "agent:alpha:discord:channel:" CH1 "\n"
                               "agent:bravo:discord:channel:" CH1 "\n");
}
END_TEST

START_TEST(test_thread_policy_command_acts_in_its_discord_thread)
{
    join3(CH1, TH1);
    human_says(CH1, TH1, "in the thread");
    ck_assert_int_eq(who_speaks(CH1, TH1), 0);
    admin_says(CH1, TH1, "!dirigent skip", NULL);
    /* Posted in the thread, where the command was. */
    expect_last_reply(
        1, TH1, "Dirigent (admin): alpha's turn is skipped; <@" TTH_BRAVO_UID ">, it is your turn.",
        TTH_BRAVO_UID);
    ck_assert_int_eq(who_speaks(CH1, TH1), 1);
    admin_says(CH1, TH1, "!dirigent status", NULL);
    expect_last_reply(2, TH1,
                      "Dirigent (admin): status\n"
                      "policy: thread, scope: thread:31000000\n"
                      "mode: normal\n"
                      "turn order: alpha, bravo, charlie\n"
                      "speaker: bravo\n"
                      "passed this cycle: alpha\n"
                      "agent messages: 0/5\n"
                      "judge: none (today's order)",
                      "");
    admin_says(CH1, TH1, "!dirigent rest", NULL);
    expect_last_reply(3, TH1, RESTED, "");
    tth_restart(&H);
    ck_assert_int_eq(peek(CH1, TH1).active, 0);
    ck_assert_int_eq(who_speaks(CH1, TH1), -1);
}
END_TEST

START_TEST(test_thread_policy_top_level_command_acts_on_the_latest_thread)
{
    join3(CH1, NULL);
    char top[24];
    mid(top);
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, top, TTH_HUMAN_UID, 0, "a new topic", NULL), OC_OK);
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
    dg_scope sc;
    ck_assert_int_eq(dg_scope_thread(CH1, top, &sc), OC_OK);
    dg_turn_state before = peek_scope(&sc, NULL);
    /* A top-level status opens no thread of its own: the topic stays current. */
    admin_says(CH1, NULL, "!dirigent status", NULL);
    char want[512];
    snprintf(want, sizeof want,
             "Dirigent (admin): status\n"
             "policy: thread, scope: thread:%.8s\n"
             "mode: normal\n"
             "turn order: alpha, bravo, charlie\n"
             "speaker: alpha\n"
             "passed this cycle: none\n"
             "agent messages: 0/5\n"
             "judge: none (today's order)",
             top);
    expect_last_reply(1, CH1, want, "");
    dg_turn_state after = peek_scope(&sc, NULL);
    assert_same(&before, &after);
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
    echo_last_reply(CH1, NULL);
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
    /* rest puts that thread to sleep, also across a restart. */
    admin_says(CH1, NULL, "!dirigent rest", NULL);
    expect_last_reply(2, CH1, RESTED, "");
    ck_assert_int_eq(peek_scope(&sc, NULL).active, 0);
    ck_assert_int_eq(who_speaks(CH1, NULL), -1);
    tth_restart(&H);
    ck_assert_int_eq(peek_scope(&sc, NULL).active, 0);
    ck_assert_int_eq(who_speaks(CH1, NULL), -1);
    /* wake gives it back to the first agent. */
    admin_says(CH1, NULL, "!dirigent wake", NULL);
    expect_last_reply(3, CH1, "Dirigent (admin): awake; <@" TTH_ALPHA_UID ">, it is your turn.",
                      TTH_ALPHA_UID);
    ck_assert_int_eq(peek_scope(&sc, NULL).active, 1);
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
}
END_TEST

/*
 * Not reached by any test (make coverage), each an error path:
 *  - turns_admin.c:reply_add, member_list, admin_status, turns_admin_locked
 *    ("b.nomem", the thread's strdup): out of memory while a reply is
 *    built; the allocation sweeps of message_received (check_hook_errors.c)
 *    use a plain message, and owner commands are not swept.
 *  - turns_admin.c:reply_tpl: a template that cannot be rendered (every
 *    admin_*.md exists in the embedded set and in any accepted templatesDir).
 *  - turns_admin.c:admin_cmd_name (DG_ADMIN_NONE): only called for a command.
 *  - turns_admin.c:turns_owner_reply (its begin failing, the reply not queued):
 *    the read-fault sweep above fails reads inside the command's own
 *    transaction; this second, short transaction reads cached pages.
 *  - turns_admin.c:turns_admin_locked (turns_message_scope, scope lookups, the
 *    close's rc): a store statement failing on a cached page (the
 *    engine answers from its mirror; see check_turn_hooks.c, kind (a)).
 *  - discuss.c:dg_host_sessions (no sessions call): the entry point's table
 *    always has it (hooks/host_api.c); only a hand-built dg_plugin lacks it.
 */

/* A command is answered by the moderator: in a channel with one agent
 * (where the plugin holds nobody back) the agent's runs for the command
 * and for the moderator's reply are claimed, with no model call; its run
 * for the next question is not. A non-admin's `!dirigent` is refused in
 * one line and starts no run either. */
START_TEST(test_command_starts_no_run_in_a_one_agent_channel)
{
    ck_assert_int_eq(claim_prompt(TTH_ALPHA, CH2, "hello", "r0"), 0);
    admin_says(CH2, NULL, "!dirigent status", NULL);
    ck_assert_int_eq(claim_prompt(TTH_ALPHA, CH2, "!dirigent status", "r1"), 1);
    ck_assert(tth_log_has(&H, "answers an admin's `!dirigent` command"));
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(claim_prompt(TTH_ALPHA, CH2, rows[0].content, "r2"), 1);
    dg_outbox_rows_free(rows, n);
    human_says(CH2, NULL, "what next?");
    ck_assert_int_eq(claim_prompt(TTH_ALPHA, CH2, "what next?", "r3"), 0);
    human_says(CH2, NULL, "!dirigent cost");
    ck_assert_int_eq(claim_prompt(TTH_ALPHA, CH2, "!dirigent cost", "r4"), 1);
}
END_TEST

/* In a managed channel the speaker's run for a command (or the reply)
 * is claimed with no effect on the turn: it still holds it, and its run
 * for the question counts. An agent the reply hands the turn (wake) runs. */
START_TEST(test_command_starts_no_run_of_the_speaker)
{
    join3(CH1, NULL);
    human_says(CH1, NULL, "a question");
    ck_assert_int_eq(who_speaks(CH1, NULL), 0);
    dg_turn_state before = peek(CH1, NULL);
    admin_says(CH1, NULL, "!dirigent status", NULL);
    ck_assert_int_eq(claim_prompt(TTH_ALPHA, CH1, "!dirigent status", "a1"), 1);
    echo_last_reply(CH1, NULL);
    size_t n;
    dg_outbox_row *rows = outbox(&n);
    ck_assert_int_eq(claim_prompt(TTH_ALPHA, CH1, rows[n - 1].content, "a2"), 1);
    dg_outbox_rows_free(rows, n);
    dg_turn_state after = peek(CH1, NULL);
    assert_same(&before, &after);
    ck_assert_int_eq(claim_prompt(TTH_ALPHA, CH1, "a question", "a3"), 0);
    const char *const mention[] = {TTH_CHARLIE_UID, NULL};
    admin_says(CH1, NULL, "!dirigent wake <@" TTH_CHARLIE_UID ">", mention);
    rows = outbox(&n);
    ck_assert_int_eq(claim_prompt(TTH_CHARLIE, CH1, rows[n - 1].content, "c1"), 0);
    dg_outbox_rows_free(rows, n);
}
END_TEST

Suite *make_admin_suite(void)
{
    Suite *s = suite_create("admin");
    TCase *ch = tcase_create("channel_policy");
    tcase_add_checked_fixture(ch, setup_channel, teardown);
    tcase_set_timeout(ch, 60);
    tcase_add_test(ch, test_status_shows_the_scope_and_changes_nothing);
    tcase_add_test(ch, test_channel_policy_answers_in_the_thread_where_the_human_wrote);
    tcase_add_test(ch, test_status_shows_the_loop_guard_rest);
    tcase_add_test(ch, test_rest_sleeps_the_scope_across_a_restart);
    tcase_add_test(ch, test_wake_hands_the_turn_to_the_first_or_mentioned_agent);
    tcase_add_test(ch, test_wake_without_agents_changes_nothing);
    tcase_add_test(ch, test_skip_passes_the_turn_with_a_mention);
    tcase_add_test(ch, test_unknown_or_missing_subcommand_lists_the_commands);
    tcase_add_test(ch, test_unknown_subcommand_says_so_and_suggests);
    tcase_add_test(ch, test_unknown_subcommand_reply_is_overridable);
    tcase_add_test(ch, test_non_admin_command_is_refused_in_one_line);
    tcase_add_test(ch, test_command_starts_no_run_in_a_one_agent_channel);
    tcase_add_test(ch, test_command_starts_no_run_of_the_speaker);
    tcase_add_test(ch, test_mistyped_command_word_gets_a_hint_once_an_hour);
    tcase_add_test(ch, test_command_runs_once_across_reporting_accounts);
    tcase_add_test(ch, test_closed_channel_answers_closed);
    tcase_add_test(ch, test_admin_close_with_summary_closes_like_a_callback);
    tcase_add_test(ch, test_admin_close_refusals_change_nothing);
    tcase_add_test(ch, test_admin_close_appends_archive_line);
    suite_add_tcase(s, ch);

    tcase_add_test(ch, test_rotate_resets_the_channels_sessions);
    tcase_add_test(ch, test_cancel_aborts_the_speakers_run_or_says_why_not);
    tcase_add_test(ch, test_rotate_and_cancel_when_the_host_fails);
    tcase_add_test(ch, test_rotate_and_cancel_on_an_abi_1_0_host);

    TCase *rf = tcase_create("read_faults");
    tcase_add_checked_fixture(rf, setup_faulty, teardown);
    tcase_set_timeout(rf, 120);
    tcase_add_loop_test(rf, test_commands_under_read_faults_run_once, 0, 2);
    suite_add_tcase(s, rf);
    TCase *th = tcase_create("thread_policy");
    tcase_add_checked_fixture(th, setup_thread, teardown);
    tcase_add_test(th, test_thread_policy_rotate_and_cancel_act_on_their_thread);
    tcase_set_timeout(th, 60);
    tcase_add_test(th, test_thread_policy_command_acts_in_its_discord_thread);
    tcase_add_test(th, test_thread_policy_top_level_command_acts_on_the_latest_thread);
    suite_add_tcase(s, th);
    return s;
}
