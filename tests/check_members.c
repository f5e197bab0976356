/*
 * check_members.c -- who is in a channel's turn order (plugin/turns_members.c)
 * through the real hooks in the turn test host: an agent a human @mentions
 * that cannot read the channel never holds it up, an agent that never ran
 * there leaves the order when its turn times out, and admins see and
 * correct the order with `!dirigent order | add | remove`.
 *
 * The host reports each message once per agent session that receives it
 * (ctx.sessionKey), as OpenClaw and ocgw do, unless a test says otherwise.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "turn_test_host.h"
#include "turns_engine.h"
#include "turns_engine_test.h"

#define CH1 "300000000000000001"
#define ADMIN_UID "200000000000000009"
#define TIMEOUT_MS 60000
/* turns_int.h: a decision drops a speaker not shown receiving the channel
 * only this long after it got the turn; the sweeper after UNREACHED_MS. */
#define GRACE_MS 10000
#define UNREACHED_MS 10000

static tth H;
static int next_msg = 1;

static void setup(void)
{
    tth_start(&H, "channel", "\"turn\":{\"timeoutSec\":60},\"admins\":[\"" ADMIN_UID "\"]");
}

static void teardown(void)
{
    tth_free(&H);
}

static const char *mid(char *buf)
{
    snprintf(buf, 24, "5%017d", next_msg++);
    return buf;
}

/* Message msg_id from sender with content and mentions (NULL-terminated
 * user ids, or NULL), reported to the session of each agent of readers
 * (NULL-terminated), in that order; with readers NULL, reported once
 * without a session (a host that does not report per agent). */
static void post_to(const char *const *readers, const char *msg_id, const char *sender, int is_bot,
                    const char *content, const char *const *mentions)
{
    json_t *m = json_array();
    for (size_t i = 0; mentions && mentions[i]; i++)
        json_array_append_new(m, json_string(mentions[i]));
    json_t *ev = json_pack("{s:s, s:s, s:b, s:s, s:b, s:s, s:o}", "messageId", msg_id, "channelId",
                           CH1, "isDm", 0, "senderId", sender, "senderIsBot", is_bot, "content",
                           content, "mentions", m);
    if (!readers) {
        json_t *ctx = json_pack("{s:s}", "channelId", CH1);
        ck_assert_int_eq(tth_call(&H, "message_received", ev, ctx, NULL), OC_OK);
        json_decref(ctx);
    }
    for (size_t i = 0; readers && readers[i]; i++) {
        if (!strcmp(tth_uid(readers[i]), sender))
            continue; /* a host never reports an agent's own message to it */
        char key[256];
        json_t *ctx =
            json_pack("{s:s, s:s, s:s}", "channelId", CH1, "accountId", readers[i], "sessionKey",
                      tth_session_key(key, sizeof key, readers[i], CH1, NULL));
        ck_assert_int_eq(tth_call(&H, "message_received", ev, ctx, NULL), OC_OK);
        json_decref(ctx);
    }
    json_decref(ev);
}

static void human_says(const char *const *readers, const char *content, const char *const *mentions)
{
    char id[24];
    post_to(readers, mid(id), "200000000000000001", 0, content, mentions);
}

static void admin_says(const char *const *readers, const char *content, const char *const *mentions)
{
    char id[24];
    post_to(readers, mid(id), ADMIN_UID, 0, content, mentions);
}

/* before_agent_reply for agent's run in CH1: 1 claimed, 0 it goes on.
 * *reason (may be NULL) gets the claim's reason (malloc'd) or NULL. */
static int claim_r(const char *agent, char **reason)
{
    char key[256], run[32];
    static int runs;
    snprintf(run, sizeof run, "run-%d", ++runs);
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "agentId", agent, "sessionKey",
                            tth_session_key(key, sizeof key, agent, CH1, NULL), "channelId", CH1,
                            "accountId", agent, "messageProvider", "discord", "runId", run);
    json_t *ev = json_pack("{s:s}", "cleanedBody", "hello");
    json_t *r = NULL;
    ck_assert_int_eq(tth_call(&H, "before_agent_reply", ev, ctx, &r), OC_OK);
    int claimed = r && json_is_true(json_object_get(r, "handled"));
    if (reason)
        *reason = claimed ? strdup(json_string_value(json_object_get(r, "reason"))) : NULL;
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return claimed;
}

static int claim(const char *agent)
{
    return claim_r(agent, NULL);
}

/* The newest moderator message queued for CH1 (malloc'd), or NULL. */
static char *last_moderator_message(void)
{
    int n = tth_outbox_count(&H, CH1);
    return n ? tth_outbox_content(&H, CH1, n - 1, NULL) : NULL;
}

/* The reply to an admin command just posted: the newest moderator message,
 * which must contain needle. */
static void reply_has(const char *needle)
{
    char *text = last_moderator_message();
    ck_assert_msg(text && strstr(text, needle), "reply \"%s\" lacks \"%s\"", text ? text : "(none)",
                  needle);
    free(text);
}

static const char *const ONLY_ALPHA[] = {TTH_ALPHA, NULL};
static const char *const ALPHA_CHARLIE[] = {TTH_ALPHA, TTH_CHARLIE, NULL};
static const char *const ALL3[] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE, NULL};
static const char *const AT_BRAVO[] = {TTH_BRAVO_UID, NULL};
static const char *const AT_CHARLIE[] = {TTH_CHARLIE_UID, NULL};

/* A channel only alpha reads: a human asks bravo (a typo, the wrong bot).
 * alpha answers at once; bravo does not stay in the order, so the next
 * message does not wait on it either; the moderator posts nothing. */
START_TEST(test_mention_of_agent_that_cannot_read_does_not_freeze)
{
    human_says(ONLY_ALPHA, "@bravo are you there?", AT_BRAVO);
    tth_advance(&H, GRACE_MS);
    ck_assert_int_eq(claim(TTH_ALPHA), 0);
    ck_assert(tth_log_has(&H, "bravo was @mentioned in channel " CH1));
    human_says(ONLY_ALPHA, "hello?", NULL);
    ck_assert_int_eq(claim(TTH_ALPHA), 0);
    tth_advance(&H, 2 * TIMEOUT_MS);
    dg_turns_sweep_now(tth_plugin(&H)->turns);
    human_says(ONLY_ALPHA, "still there?", NULL);
    ck_assert_int_eq(claim(TTH_ALPHA), 0);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 0);
}
END_TEST

/* The same after a restart between the mention and alpha's run: what the
 * plugin knows of who receives the channel is in the store. */
START_TEST(test_unreachable_agent_found_after_a_restart)
{
    human_says(ONLY_ALPHA, "@bravo are you there?", AT_BRAVO);
    tth_restart(&H);
    tth_advance(&H, GRACE_MS);
    ck_assert_int_eq(claim(TTH_ALPHA), 0);
    tth_restart(&H);
    human_says(ONLY_ALPHA, "hello?", NULL);
    ck_assert_int_eq(claim(TTH_ALPHA), 0);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 0);
}
END_TEST

/* A managed channel alpha and charlie read: a human asks bravo, who cannot.
 * The message is for everybody then: exactly one of the two readers speaks,
 * whichever run is decided first. */
START_TEST(test_unreachable_mention_in_a_managed_channel_goes_to_one_reader)
{
    human_says(ALPHA_CHARLIE, "kickoff", NULL);
    ck_assert_int_eq(claim(TTH_ALPHA) + claim(TTH_CHARLIE), 1);
    human_says(ALPHA_CHARLIE, "@bravo can you check this?", AT_BRAVO);
    tth_advance(&H, GRACE_MS);
    int c = claim(TTH_CHARLIE), a = claim(TTH_ALPHA);
    ck_assert_msg(a + c == 1, "alpha claimed %d, charlie claimed %d: want one speaker", a, c);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 0);
}
END_TEST

/* An agent a human asks for that can read the channel keeps the turn, also
 * when its copy of the message is reported after another agent's. */
START_TEST(test_mention_of_a_reader_reported_last_keeps_the_turn)
{
    human_says(ALL3, "kickoff", NULL);
    (void)claim(TTH_ALPHA);
    (void)claim(TTH_BRAVO);
    /* charlie's account reports last; it never ran in CH1 before. */
    human_says(ALL3, "@charlie your view?", AT_CHARLIE);
    ck_assert_int_eq(claim(TTH_ALPHA), 1);
    ck_assert_int_eq(claim(TTH_BRAVO), 1);
    ck_assert_int_eq(claim(TTH_CHARLIE), 0);
}
END_TEST

/* In a channel none of them has been shown yet, a human asks bravo; the
 * host decides alpha's run before bravo's account reports the message (it
 * reports per account, in no fixed order). Within the grace bravo keeps
 * the turn: alpha is held back, bravo answers, nothing is posted. */
START_TEST(test_mentioned_reader_reported_after_another_run_keeps_the_turn)
{
    static const char *const AB[] = {TTH_ALPHA, TTH_BRAVO, NULL};
    human_says(ONLY_ALPHA, "@bravo can you check this?", AT_BRAVO);
    tth_advance(&H, GRACE_MS - 500);
    ck_assert_int_eq(claim(TTH_ALPHA), 1);
    char id[24];
    snprintf(id, sizeof id, "5%017d", next_msg - 1);
    static const char *const ONLY_BRAVO[] = {TTH_BRAVO, NULL};
    post_to(ONLY_BRAVO, id, "200000000000000001", 0, "@bravo can you check this?", AT_BRAVO);
    ck_assert_int_eq(claim(TTH_BRAVO), 0);
    human_says(AB, "thanks", NULL);
    tth_advance(&H, UNREACHED_MS + 1000);
    dg_turns_sweep_now(tth_plugin(&H)->turns);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 0);
}
END_TEST

/* The same decision within the grace when bravo really cannot read: alpha
 * is held back at first; the sweeper finds bravo unreached, it leaves the
 * order and the moderator hands alpha the turn once. */
START_TEST(test_unreachable_mention_decided_early_is_settled_by_the_sweeper)
{
    human_says(ONLY_ALPHA, "@bravo are you there?", AT_BRAVO);
    ck_assert_int_eq(claim(TTH_ALPHA), 1);
    tth_advance(&H, UNREACHED_MS);
    dg_turns_sweep_now(tth_plugin(&H)->turns);
    ck_assert(tth_log_has(&H, "bravo was @mentioned in channel " CH1));
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
    char *text = last_moderator_message();
    ck_assert_str_eq(text, "<@" TTH_ALPHA_UID ">");
    free(text);
    ck_assert_int_eq(claim(TTH_ALPHA), 0);
    human_says(ONLY_ALPHA, "hello?", NULL);
    ck_assert_int_eq(claim(TTH_ALPHA), 0);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
}
END_TEST

/* A host that does not report messages per agent: nothing shows that bravo
 * cannot read, so alpha is held back until bravo's turn times out; then
 * bravo, which never ran there, leaves the order, the moderator hands the
 * turn to alpha once, and later messages do not wait on bravo. */
START_TEST(test_agent_that_never_ran_leaves_the_order_at_its_timeout)
{
    human_says(NULL, "hi", NULL);
    ck_assert_int_eq(claim(TTH_ALPHA), 0); /* alone in the order: not managed */
    human_says(NULL, "@bravo are you there?", AT_BRAVO);
    ck_assert_int_eq(claim(TTH_ALPHA), 1);
    tth_advance(&H, TIMEOUT_MS + 1000);
    dg_turns_sweep_now(tth_plugin(&H)->turns);
    ck_assert(tth_log_has(&H, "bravo never ran in channel " CH1));
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
    char *text = last_moderator_message();
    ck_assert_str_eq(text, "<@" TTH_ALPHA_UID ">");
    free(text);
    human_says(NULL, "hello?", NULL);
    ck_assert_int_eq(claim(TTH_ALPHA), 0);
    tth_advance(&H, 2 * TIMEOUT_MS);
    dg_turns_sweep_now(tth_plugin(&H)->turns);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
}
END_TEST

/* An agent that ran in the channel keeps its place when its turn times
 * out: the timeout passes it over, as always. */
START_TEST(test_agent_that_ran_keeps_its_place_at_a_timeout)
{
    human_says(NULL, "hi", NULL);
    (void)claim(TTH_ALPHA);
    (void)claim(TTH_BRAVO);
    human_says(NULL, "@bravo please", AT_BRAVO);
    tth_advance(&H, TIMEOUT_MS + 1000);
    dg_turns_sweep_now(tth_plugin(&H)->turns);
    admin_says(NULL, "!dirigent order", NULL);
    reply_has("turn order: alpha (runs here), bravo (runs here)");
    reply_has("out of the order: none");
}
END_TEST

/* `!dirigent order` lists each member with where it stands; `remove` takes
 * one out (its runs are claimed, saying why) and `add` puts it back; both
 * hold across a restart. */
START_TEST(test_admin_order_remove_add)
{
    human_says(ALL3, "hi", NULL);
    (void)claim(TTH_ALPHA);
    (void)claim(TTH_BRAVO);
    (void)claim(TTH_CHARLIE);
    admin_says(ALL3, "!dirigent order", NULL);
    reply_has("turn order: alpha (runs here), bravo (runs here), charlie (runs here)");
    admin_says(ALL3, "!dirigent remove <@" TTH_BRAVO_UID ">", AT_BRAVO);
    reply_has("bravo is out of this channel's turn order until `!dirigent add @bravo`");
    reply_has("turn order: alpha (runs here), charlie (runs here)");
    tth_restart(&H);
    human_says(ALL3, "next topic", NULL);
    char *why = NULL;
    ck_assert_int_eq(claim_r(TTH_BRAVO, &why), 1);
    ck_assert_msg(strstr(why, "an admin took this agent out"), "reason: %s", why);
    free(why);
    admin_says(ALL3, "!dirigent order", NULL);
    reply_has("out of the order: bravo (removed by an admin)");
    /* A human's mention does not bring a removed agent back. */
    human_says(ALL3, "@bravo?", AT_BRAVO);
    ck_assert_int_eq(claim(TTH_BRAVO), 1);
    admin_says(ALL3, "!dirigent add bravo", NULL);
    reply_has("bravo is in this channel's turn order. turn order: alpha (runs here), "
              "bravo (receives this channel), charlie (runs here)");
    admin_says(ALL3, "!dirigent add @bravo", NULL);
    reply_has("bravo is already in this channel's turn order");
    admin_says(ALL3, "!dirigent remove", NULL);
    reply_has("name one agent of this gateway's `agents`");
    admin_says(ALL3, "!dirigent remove nosuchagent", NULL);
    reply_has("name one agent of this gateway's `agents`");
    admin_says(ALL3, "!dirigent remove delta", NULL);
    reply_has("delta is not in this channel's turn order");
}
END_TEST

/* Removing the speaker hands the turn on at once, with the hand-off the
 * next agent needs when it already consumed the latest message. */
START_TEST(test_removing_the_speaker_hands_the_turn_on)
{
    human_says(ALL3, "hi", NULL);
    ck_assert_int_eq(claim(TTH_ALPHA), 0);
    ck_assert_int_eq(claim(TTH_BRAVO), 1);
    ck_assert_int_eq(claim(TTH_CHARLIE), 1);
    int before = tth_outbox_count(&H, CH1);
    admin_says(ALL3, "!dirigent remove alpha", NULL);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), before + 2); /* hand-off and reply */
    char *handoff = tth_outbox_content(&H, CH1, before, NULL);
    ck_assert_str_eq(handoff, "<@" TTH_BRAVO_UID ">");
    free(handoff);
}
END_TEST

/* A human's mention brings back an agent that left on its own (it may have
 * been given the channel since). */
START_TEST(test_mention_brings_back_an_agent_that_left)
{
    human_says(ONLY_ALPHA, "@bravo are you there?", AT_BRAVO);
    tth_advance(&H, GRACE_MS);
    ck_assert_int_eq(claim(TTH_ALPHA), 0);
    /* bravo can read now */
    static const char *const AB[] = {TTH_ALPHA, TTH_BRAVO, NULL};
    human_says(AB, "@bravo now?", AT_BRAVO);
    ck_assert_int_eq(claim(TTH_ALPHA), 1);
    ck_assert_int_eq(claim(TTH_BRAVO), 0);
}
END_TEST

Suite *make_members_suite(void)
{
    Suite *s = suite_create("members");
    TCase *tc = tcase_create("members");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mention_of_agent_that_cannot_read_does_not_freeze);
    tcase_add_test(tc, test_unreachable_agent_found_after_a_restart);
    tcase_add_test(tc, test_unreachable_mention_in_a_managed_channel_goes_to_one_reader);
    tcase_add_test(tc, test_mention_of_a_reader_reported_last_keeps_the_turn);
    tcase_add_test(tc, test_mentioned_reader_reported_after_another_run_keeps_the_turn);
    tcase_add_test(tc, test_unreachable_mention_decided_early_is_settled_by_the_sweeper);
    tcase_add_test(tc, test_agent_that_never_ran_leaves_the_order_at_its_timeout);
    tcase_add_test(tc, test_agent_that_ran_keeps_its_place_at_a_timeout);
    tcase_add_test(tc, test_admin_order_remove_add);
    tcase_add_test(tc, test_removing_the_speaker_hands_the_turn_on);
    tcase_add_test(tc, test_mention_brings_back_an_agent_that_left);
    suite_add_tcase(s, tc);
    return s;
}
