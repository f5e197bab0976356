/*
 * check_claim.c -- issue 10 part 3: the claim hooks (before_agent_reply,
 * reply_payload_sending), silenced runs on the swap path, and
 * message_sending in OpenClaw's gateway shape (no ctx.agentId). The real
 * plugin through the test host (turn_test_host.c), JSON in and out, on a
 * hand-moved clock; moderator messages are read from the outbox table.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "openclaw/plugin.h"
#include "scope.h"
#include "testutil.h"
#include "turn_test_host.h"
#include "turns.h"
#include "turns_engine.h"

#define CH1 "300000000000000001"
#define FALLBACK "I finished the turn, but it did not produce a visible reply"
#define WARNING "\xE2\x9A\xA0\xEF\xB8\x8F Agent couldn't generate a response. Please try again."

static tth H;
static int next_msg = 1;

static const char *const ABC[] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};

static void setup(void)
{
    /* Real time: init forgets run ids older than a week of wall-clock time. */
    tth_start(&H, "channel", "\"turn\":{\"maxAgentMessages\":1000}");
    atomic_store(&H.now_ms, (int64_t)time(NULL) * 1000);
}

static void teardown(void)
{
    tth_free(&H);
}

static const char *mid(char *buf)
{
    snprintf(buf, 24, "4%017d", next_msg++);
    return buf;
}

static void human_says(const char *text)
{
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), TTH_HUMAN_UID, 0, text, NULL), OC_OK);
}

static void agent_posts(const char *agent, const char *text)
{
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), tth_uid(agent), 1, text, NULL), OC_OK);
}

/* The agent ctx of agent in CH1, with run_id when not NULL. New reference. */
static json_t *actx(const char *agent, const char *run_id)
{
    char key[256];
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s, s:s}", "agentId", agent, "sessionKey",
                            tth_session_key(key, sizeof key, agent, CH1, NULL), "channelId", CH1,
                            "accountId", agent, "messageProvider", "discord");
    if (run_id)
        json_object_set_new(ctx, "runId", json_string(run_id));
    return ctx;
}

/* OpenClaw's gateway ctx of an outbound hook: no agentId, channelId is the
 * provider. New reference. */
static json_t *gwctx(const char *agent, const char *run_id)
{
    char key[256];
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s}", "channelId", "discord", "accountId", agent,
                            "conversationId", "channel:" CH1, "sessionKey",
                            tth_session_key(key, sizeof key, agent, CH1, NULL));
    if (run_id)
        json_object_set_new(ctx, "runId", json_string(run_id));
    return ctx;
}

/* before_agent_reply: 1 handled, 0 no result, -1 error. */
static int claim(const char *agent, const char *run_id)
{
    json_t *ctx = actx(agent, run_id);
    json_t *ev = json_pack("{s:s}", "cleanedBody", "hello");
    json_t *r = NULL;
    int rc = tth_call(&H, "before_agent_reply", ev, ctx, &r);
    int out = rc != OC_OK ? -1 : 0;
    if (rc == OC_OK && r) {
        ck_assert(json_is_true(json_object_get(r, "handled")));
        ck_assert(json_is_string(json_object_get(r, "reason")));
        out = 1;
    }
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return out;
}

/* before_model_resolve with a run id: 1 swapped, 0 real, -1 error. */
static int resolve_run(const char *agent, const char *run_id)
{
    json_t *ctx = actx(agent, run_id);
    json_t *ev = json_pack("{s:s}", "prompt", "hello");
    json_t *r = NULL;
    int rc = tth_call(&H, "before_model_resolve", ev, ctx, &r);
    int out = rc != OC_OK ? -1 : r != NULL;
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return out;
}

/* agent_end with run_id (NULL: none). */
static int end_run(const char *agent, const char *run_id, const char *output)
{
    json_t *ctx = actx(agent, NULL);
    json_t *ev = json_pack("{s:b, s:s, s:i}", "success", 1, "output", output, "toolCalls", 0);
    if (run_id)
        json_object_set_new(ev, "runId", json_string(run_id));
    int rc = tth_call(&H, "agent_end", ev, ctx, NULL);
    json_decref(ev);
    json_decref(ctx);
    return rc;
}

/* reply_payload_sending in the gateway shape: 1 cancelled, 0 not, -1 error. */
static int payload(const char *agent, const char *run_id, const char *text)
{
    json_t *ctx = gwctx(agent, run_id);
    json_t *ev = json_pack("{s:{s:s, s:b}, s:s}", "payload", "text", text, "isError", 0, "kind",
                           "final");
    json_t *r = NULL;
    int rc = tth_call(&H, "reply_payload_sending", ev, ctx, &r);
    int out = rc != OC_OK ? -1 : 0;
    if (rc == OC_OK && r) {
        ck_assert(json_is_true(json_object_get(r, "cancel")));
        ck_assert(json_is_string(json_object_get(r, "reason")));
        out = 1;
    }
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return out;
}

/* message_sending; gateway: OpenClaw's gateway ctx (no agentId), else the
 * agent ctx; run_id in event.metadata when not NULL. 1 cancelled, 0 not. */
static int send_text(const char *agent, int gateway, const char *run_id, const char *text)
{
    json_t *ctx = gateway ? gwctx(agent, NULL) : actx(agent, NULL);
    json_t *ev = json_pack("{s:s, s:s, s:{}}", "to", gateway ? "channel:" CH1 : CH1, "content",
                           text, "metadata");
    if (run_id)
        json_object_set_new(json_object_get(ev, "metadata"), "runId", json_string(run_id));
    json_t *r = NULL;
    int rc = tth_call(&H, "message_sending", ev, ctx, &r);
    int out = rc != OC_OK ? -1 : r && json_is_true(json_object_get(r, "cancel"));
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return out;
}

static dg_turn_state peek(void)
{
    dg_scope sc;
    ck_assert_int_eq(dg_scope_conversation(CH1, &sc), OC_OK);
    dg_turn_state st;
    ck_assert_int_eq(dg_turns_peek(tth_plugin(&H)->turns, &sc, &st, NULL, NULL), OC_OK);
    return st;
}

/* alpha, bravo, charlie join in that order (a first, id-less decision),
 * then a human asks: alpha speaks first. */
static void join3_and_ask(void)
{
    for (int i = 0; i < 3; i++) /* alpha alone is unmanaged; then dormant: claimed */
        ck_assert_int_eq(claim(ABC[i], NULL), i > 0);
    human_says("thoughts?");
}

START_TEST(test_claims_non_speakers_not_the_speaker)
{
    join3_and_ask();
    ck_assert_int_eq(claim(TTH_ALPHA, "run-a1"), 0);
    ck_assert_int_eq(claim(TTH_BRAVO, "run-b1"), 1);
    ck_assert_int_eq(claim(TTH_CHARLIE, "run-c1"), 1);
    dg_turn_state st = peek();
    ck_assert_int_eq(st.active, 1);
    ck_assert_int_eq(st.consumed, 0x6); /* bravo and charlie consumed it silently */
    ck_assert_int_eq(st.silent, 0);     /* a claim is no pass */
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 0);
    /* The speaker is unaffected: real model, reply delivered. */
    ck_assert_int_eq(resolve_run(TTH_ALPHA, "run-a1"), 0);
    ck_assert_int_eq(payload(TTH_ALPHA, "run-a1", "my answer"), 0);
}
END_TEST

START_TEST(test_dormant_scope_claims_everyone)
{
    join3_and_ask();
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(tth_run(&H, ABC[i], CH1, NULL, "NO_REPLY", "499999999999999990"), 0);
    ck_assert_int_eq(peek().active, 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(claim(ABC[i], NULL), 1);
    ck_assert_int_eq(peek().active, 0); /* a claim wakes nothing */
}
END_TEST

START_TEST(test_claimed_agent_gets_the_handoff_when_its_turn_comes)
{
    join3_and_ask();
    ck_assert_int_eq(claim(TTH_BRAVO, "run-b1"), 1);
    ck_assert_int_eq(resolve_run(TTH_ALPHA, "run-a1"), 0);
    ck_assert_int_eq(end_run(TTH_ALPHA, "run-a1", "NO_REPLY"), OC_OK); /* alpha passes */
    dg_turn_state st = peek();
    ck_assert_int_eq(st.handoff, 1);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
    char *text = tth_outbox_content(&H, CH1, 0, NULL);
    ck_assert_str_eq(text, "<@" TTH_BRAVO_UID ">");
    free(text);
    /* Woken by the mention, bravo is not claimed. */
    ck_assert_int_eq(claim(TTH_BRAVO, "run-b2"), 0);
}
END_TEST

START_TEST(test_agent_end_after_a_claim_changes_nothing)
{
    join3_and_ask();
    ck_assert_int_eq(claim(TTH_BRAVO, "run-b1"), 1);
    ck_assert_int_eq(claim(TTH_CHARLIE, NULL), 1);
    ck_assert_int_eq(resolve_run(TTH_ALPHA, "run-a1"), 0);
    ck_assert_int_eq(end_run(TTH_ALPHA, "run-a1", "NO_REPLY"), OC_OK);
    dg_turn_state before = peek();
    ck_assert_int_eq(before.handoff, 1);
    /* The claimed runs end (a host that fires agent_end after a claim):
     * with the run id, and without one (same session, no real run since). */
    ck_assert_int_eq(end_run(TTH_BRAVO, "run-b1", FALLBACK), OC_OK);
    ck_assert_int_eq(end_run(TTH_CHARLIE, NULL, ""), OC_OK);
    dg_turn_state after = peek();
    ck_assert(dg_turn_state_same(&before, &after));
    ck_assert_int_eq(after.agent_msgs, 0); /* never speech */
    /* The run id is in the store: after a restart too. */
    tth_restart(&H);
    ck_assert_int_eq(end_run(TTH_BRAVO, "run-b1", FALLBACK), OC_OK);
    after = peek();
    ck_assert(dg_turn_state_same(&before, &after));
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);
}
END_TEST

START_TEST(test_payloads_of_a_claimed_run_are_cancelled)
{
    join3_and_ask();
    ck_assert_int_eq(claim(TTH_BRAVO, "run-b1"), 1);
    ck_assert_int_eq(payload(TTH_BRAVO, "run-b1", FALLBACK), 1);
    ck_assert_int_eq(payload(TTH_BRAVO, NULL, FALLBACK), 1);       /* by session */
    ck_assert_int_eq(payload(TTH_BRAVO, NULL, "NO_REPLY"), 1);
    /* The turn reaches bravo (alpha passes); its new run is not claimed:
     * the session match ends, the claimed run id still matches. */
    ck_assert_int_eq(resolve_run(TTH_ALPHA, "run-a1"), 0);
    ck_assert_int_eq(end_run(TTH_ALPHA, "run-a1", "NO_REPLY"), OC_OK);
    ck_assert_int_eq(claim(TTH_BRAVO, "run-b2"), 0);
    ck_assert_int_eq(payload(TTH_BRAVO, "run-b2", "my answer"), 0);
    ck_assert_int_eq(payload(TTH_BRAVO, NULL, "my answer"), 0);
    ck_assert_int_eq(payload(TTH_BRAVO, "run-b1", FALLBACK), 1);
    /* A non-speaker's text is cancelled like message_sending does. */
    ck_assert_int_eq(payload(TTH_CHARLIE, "run-c9", "me too"), 1);
}
END_TEST

/* The bug seen in the real gateway: bravo's swapped run ends after the turn
 * has moved to bravo (and a real run of bravo was resolved since); its
 * output, an OpenClaw warning, counted as bravo's speech and was posted. */
START_TEST(test_swapped_run_ending_after_the_turn_moved_is_not_speech)
{
    join3_and_ask();
    ck_assert_int_eq(resolve_run(TTH_BRAVO, "run-b1"), 1);     /* swapped */
    ck_assert_int_eq(resolve_run(TTH_CHARLIE, "run-c1"), 1);
    ck_assert_int_eq(resolve_run(TTH_ALPHA, "run-a1"), 0);
    ck_assert_int_eq(end_run(TTH_ALPHA, "run-a1", "my answer"), OC_OK);
    /* Text of the swapped run while the turn is on bravo: cancelled, also
     * without a run id (the session's latest decision was the swap). */
    ck_assert_int_eq(send_text(TTH_BRAVO, 0, NULL, WARNING), 1);
    agent_posts(TTH_ALPHA, "my answer");
    ck_assert_int_eq(resolve_run(TTH_BRAVO, "run-b2"), 0);     /* bravo's turn now */
    dg_turn_state before = peek();
    ck_assert_int_eq(end_run(TTH_BRAVO, "run-b1", WARNING), OC_OK);
    dg_turn_state after = peek();
    ck_assert_int_eq(after.agent_msgs, before.agent_msgs);
    ck_assert_int_eq(after.permit, before.permit);
    ck_assert_int_eq(resolve_run(TTH_BRAVO, "run-b3"), 0);     /* still bravo's turn */
    ck_assert_int_eq(send_text(TTH_BRAVO, 0, "run-b1", WARNING), 1);
    ck_assert_int_eq(payload(TTH_BRAVO, "run-b1", WARNING), 1);
    /* bravo's real run speaks and hands on to charlie. */
    ck_assert_int_eq(end_run(TTH_BRAVO, "run-b2", "bravo here"), OC_OK);
    ck_assert_int_eq(send_text(TTH_BRAVO, 0, "run-b2", "bravo here"), 0);
    ck_assert_int_eq(resolve_run(TTH_CHARLIE, "run-c2"), 0);
}
END_TEST

START_TEST(test_message_sending_in_gateway_shape)
{
    join3_and_ask();
    ck_assert_int_eq(send_text(TTH_BRAVO, 1, NULL, "me first!"), 1);
    ck_assert_int_eq(send_text(TTH_ALPHA, 1, NULL, "my answer"), 0);
    ck_assert(tth_log_has(&H, "message_sending: cancelled for bravo"));
    /* The channel from conversationId when the session key has none. */
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s}", "channelId", "discord", "accountId", "bravo",
                            "conversationId", "channel:" CH1, "sessionKey",
                            "agent:bravo:discord:group:x");
    json_t *ev = json_pack("{s:s, s:s}", "to", "channel:" CH1, "content", "me first!");
    json_t *r = NULL;
    ck_assert_int_eq(tth_call(&H, "message_sending", ev, ctx, &r), OC_OK);
    ck_assert(json_is_true(json_object_get(r, "cancel")));
    json_decref(r);
    /* A malformed ctx is refused by name and changes nothing. */
    json_object_set_new(ctx, "conversationId", json_integer(5));
    r = NULL;
    ck_assert_int_eq(tth_call(&H, "message_sending", ev, ctx, &r), OC_ERR_INVALID);
    ck_assert_ptr_null(r);
    ck_assert(tth_log_has(&H, "ctx.conversationId is not a string"));
    json_decref(ev);
    json_decref(ctx);
}
END_TEST

START_TEST(test_old_host_without_claim_hooks_still_starts)
{
    tth_free(&H);
    tth_start_ex(&H, "channel", NULL, 1);
    ck_assert_int_eq(H.n_hooks, 5);
    ck_assert(tth_log_has(&H, "the host has no claim hooks"));
    /* The swap path does the work. */
    for (int i = 0; i < 3; i++)
        ck_assert_int_ge(tth_resolve(&H, ABC[i], CH1, NULL), 0);
    human_says("go");
    ck_assert_int_eq(tth_resolve(&H, TTH_ALPHA, CH1, NULL), 0);
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, NULL), 1);
    ck_assert_int_eq(send_text(TTH_BRAVO, 0, NULL, "NO_REPLY"), 1);
    ck_assert_int_eq(end_run(TTH_BRAVO, NULL, WARNING), OC_OK);
    ck_assert_int_eq(peek().agent_msgs, 0);
}
END_TEST

START_TEST(test_malformed_claim_input_is_refused)
{
    join3_and_ask();
    json_t *ctx = actx(TTH_BRAVO, NULL);
    json_object_set_new(ctx, "runId", json_integer(7));
    json_t *r = NULL, *empty = json_object();
    dg_turn_state before = peek();
    ck_assert_int_eq(tth_call(&H, "before_agent_reply", empty, ctx, &r), OC_ERR_INVALID);
    json_decref(empty);
    ck_assert_ptr_null(r);
    ck_assert(tth_log_has(&H, "ctx.runId of bravo is not a string"));
    dg_turn_state after = peek();
    ck_assert(dg_turn_state_same(&before, &after));
    json_decref(ctx);
    ctx = gwctx(TTH_BRAVO, NULL);
    json_t *ev = json_pack("{s:s}", "payload", "text");
    ck_assert_int_eq(tth_call(&H, "reply_payload_sending", ev, ctx, &r), OC_ERR_INVALID);
    ck_assert(tth_log_has(&H, "event.payload of bravo is not an object"));
    json_decref(ev);
    json_decref(ctx);
}
END_TEST

Suite *make_claim_suite(void)
{
    Suite *s = suite_create("claim");
    TCase *tc = tcase_create("claim");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_claims_non_speakers_not_the_speaker);
    tcase_add_test(tc, test_dormant_scope_claims_everyone);
    tcase_add_test(tc, test_claimed_agent_gets_the_handoff_when_its_turn_comes);
    tcase_add_test(tc, test_agent_end_after_a_claim_changes_nothing);
    tcase_add_test(tc, test_payloads_of_a_claimed_run_are_cancelled);
    tcase_add_test(tc, test_swapped_run_ending_after_the_turn_moved_is_not_speech);
    tcase_add_test(tc, test_message_sending_in_gateway_shape);
    tcase_add_test(tc, test_old_host_without_claim_hooks_still_starts);
    tcase_add_test(tc, test_malformed_claim_input_is_refused);
    suite_add_tcase(s, tc);
    return s;
}
