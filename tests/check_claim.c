/*
 * check_claim.c -- the claim hooks (before_agent_reply,
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
#include "discuss.h"
#include "scope.h"
#include "store.h"
#include "store_discuss.h"
#include "testutil.h"
#include "store_outbox.h"
#include "turn_test_host.h"
#include "turns.h"
#include "turns_engine.h"
#include "turns_engine_test.h"

#define CH1 "300000000000000001"
#define CH0 "300000000000000002" /* another channel, where the host shows it reports per agent */
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
/* The prompt the next claim() hands the plugin as event.cleanedBody. */
static const char *claim_body = "hello";

/* claim in instance h (H or a second one on its store). */
static int claim_on(tth *h, const char *agent, const char *run_id)
{
    json_t *ctx = actx(agent, run_id);
    json_t *ev = json_pack("{s:s}", "cleanedBody", claim_body);
    json_t *r = NULL;
    int rc = tth_call(h, "before_agent_reply", ev, ctx, &r);
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

static int claim(const char *agent, const char *run_id)
{
    return claim_on(&H, agent, run_id);
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

/* agent_end with run_id (NULL: none) in instance h. */
static int end_run_on(tth *h, const char *agent, const char *run_id, const char *output)
{
    json_t *ctx = actx(agent, NULL);
    json_t *ev = json_pack("{s:b, s:s, s:i}", "success", 1, "output", output, "toolCalls", 0);
    if (run_id)
        json_object_set_new(ev, "runId", json_string(run_id));
    int rc = tth_call(h, "agent_end", ev, ctx, NULL);
    json_decref(ev);
    json_decref(ctx);
    return rc;
}

static int end_run(const char *agent, const char *run_id, const char *output)
{
    return end_run_on(&H, agent, run_id, output);
}

/* reply_payload_sending in the gateway shape: 1 cancelled, 0 not, -1 error. */
static int payload(const char *agent, const char *run_id, const char *text)
{
    json_t *ctx = gwctx(agent, run_id);
    json_t *ev =
        json_pack("{s:{s:s, s:b}, s:s}", "payload", "text", text, "isError", 0, "kind", "final");
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

static dg_turn_state peek_on(tth *h)
{
    dg_scope sc;
    ck_assert_int_eq(dg_scope_conversation(CH1, &sc), OC_OK);
    dg_turn_state st;
    ck_assert_int_eq(dg_turns_peek(tth_plugin(h)->turns, &sc, &st, NULL, NULL), OC_OK);
    return st;
}

static dg_turn_state peek(void)
{
    return peek_on(&H);
}

/* alpha, bravo and charlie join in that order, each through a first,
 * id-less decision: alpha holds the turn, the other two are claimed. */
static void join_abc(void)
{
    for (int i = 0; i < 3; i++)
        ck_assert_msg(claim(ABC[i], NULL) == (i > 0), "joining %s", ABC[i]);
}

/* agent's run run_id in instance h is held back: claimed, h's log says why
 * (words), and h's turn state is still *before. */
static void assert_held_back(tth *h, const dg_turn_state *before, const char *agent,
                             const char *run_id, const char *words)
{
    ck_assert_msg(claim_on(h, agent, run_id) == 1, "run %s of %s not claimed", run_id, agent);
    ck_assert_msg(tth_log_has(h, words), "no \"%s\" in the log:\n%s", words, h->log);
    dg_turn_state after = peek_on(h);
    ck_assert_msg(dg_turn_state_same(before, &after), "run %s of %s changed the turn", run_id,
                  agent);
}

#define KICKOFF "[Discussion Started] This channel was created for a discussion."

/* alpha, bravo, charlie join, a human says "go", the moderator posts the
 * discussion's kickoff and alpha's run ends speaking: the turn is bravo's. */
static void kickoff_then_alpha_spoke(void)
{
    join_abc();
    human_says("go");
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), TTH_MOD_UID, 1, KICKOFF, NULL), OC_OK);
    ck_assert_int_eq(claim(TTH_ALPHA, "a1"), 0);
    ck_assert_int_eq(end_run(TTH_ALPHA, "a1", "Review: versioned structs."), OC_OK);
}

/* alpha, bravo, charlie join in that order (a first, id-less decision),
 * then a human asks: alpha speaks first. */
static void join3_and_ask(void)
{
    for (int i = 0; i < 3; i++) /* alpha alone is unmanaged; then dormant: claimed */
        ck_assert_int_eq(claim(ABC[i], NULL), i > 0);
    human_says("thoughts?");
}

/* Another chat platform in the same gateway (Telegram; or Slack under a
 * config without a `slack` section, like this one): its messages, runs and
 * replies are not Dirigent's; nothing is claimed, cancelled or recorded,
 * whatever the channel's id looks like. */
START_TEST(test_other_platform_is_left_alone)
{
    static const char *const providers[] = {"telegram", "slack"};
    const char *prov = providers[_i];
    char key[128], conv[64];
    snprintf(key, sizeof key, "agent:bravo:%s:channel:%s", prov, CH1);
    snprintf(conv, sizeof conv, "channel:%s", CH1);
    join3_and_ask();
    dg_turn_state before = peek();
    json_t *ev = json_pack("{s:s, s:s, s:s, s:b, s:s, s:[]}", "messageId", "1700000000.000100",
                           "channelId", CH1, "senderId", "U0ALICE", "senderIsBot", 0, "content",
                           "hello from elsewhere", "mentions");
    json_t *mctx = json_pack("{s:s, s:s, s:s}", "channelId", prov, "messageProvider", prov,
                             "conversationId", conv);
    ck_assert_int_eq(tth_call(&H, "message_received", ev, mctx, NULL), OC_OK);
    json_decref(ev);
    json_decref(mctx);
    /* A run of bravo's session there: not claimed although bravo does not
     * hold the Discord channel's turn. */
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s}", "agentId", TTH_BRAVO, "sessionKey", key,
                            "channelId", CH1, "messageProvider", prov);
    ev = json_pack("{s:s}", "cleanedBody", "hello");
    json_t *r = NULL;
    ck_assert_int_eq(tth_call(&H, "before_agent_reply", ev, ctx, &r), OC_OK);
    ck_assert_ptr_null(r);
    json_decref(ev);
    json_decref(ctx);
    /* Its reply, in the gateway shape. */
    ctx = json_pack("{s:s, s:s, s:s, s:s}", "channelId", prov, "accountId", "bravo",
                    "conversationId", conv, "sessionKey", key);
    ev = json_pack("{s:s, s:s}", "to", conv, "content", "my answer there");
    ck_assert_int_eq(tth_call(&H, "message_sending", ev, ctx, &r), OC_OK);
    ck_assert_ptr_null(r);
    json_decref(ev);
    json_decref(ctx);
    dg_turn_state after = peek();
    ck_assert(dg_turn_state_same(&before, &after));
    /* A Slack channel's own ids, with no provider named at all: a Slack
     * channel is not managed without a `slack` section. */
    const char *slack_ch = "C0WORK0001";
    ck_assert_int_eq(tth_msg(&H, slack_ch, NULL, "1700000000.000200", "U0ALICE", 0, "hi", NULL),
                     OC_OK);
    json_t *bare = json_pack("{s:s, s:s}", "agentId", TTH_BRAVO, "channelId", slack_ch);
    ev = json_pack("{s:s}", "cleanedBody", "hi");
    ck_assert_int_eq(tth_call(&H, "before_agent_reply", ev, bare, &r), OC_OK);
    ck_assert_ptr_null(r);
    json_decref(ev);
    json_decref(bare);
    dg_scope sc;
    ck_assert_int_eq(dg_scope_conversation(slack_ch, &sc), OC_OK);
    dg_turn_state st;
    ck_assert_int_eq(dg_turns_peek(tth_plugin(&H)->turns, &sc, &st, NULL, NULL), OC_ERR_NOT_FOUND);
}
END_TEST

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
    ck_assert_int_eq(payload(TTH_BRAVO, NULL, FALLBACK), 1); /* by session */
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
    ck_assert_int_eq(resolve_run(TTH_BRAVO, "run-b1"), 1); /* swapped */
    ck_assert_int_eq(resolve_run(TTH_CHARLIE, "run-c1"), 1);
    ck_assert_int_eq(resolve_run(TTH_ALPHA, "run-a1"), 0);
    ck_assert_int_eq(end_run(TTH_ALPHA, "run-a1", "my answer"), OC_OK);
    /* Text of the swapped run while the turn is on bravo: cancelled, also
     * without a run id (the session's latest decision was the swap). */
    ck_assert_int_eq(send_text(TTH_BRAVO, 0, NULL, WARNING), 1);
    agent_posts(TTH_ALPHA, "my answer");
    ck_assert_int_eq(resolve_run(TTH_BRAVO, "run-b2"), 0); /* bravo's turn now */
    dg_turn_state before = peek();
    ck_assert_int_eq(end_run(TTH_BRAVO, "run-b1", WARNING), OC_OK);
    dg_turn_state after = peek();
    ck_assert_int_eq(after.agent_msgs, before.agent_msgs);
    ck_assert_int_eq(after.permit, before.permit);
    ck_assert_int_eq(resolve_run(TTH_BRAVO, "run-b3"), 0); /* still bravo's turn */
    ck_assert_int_eq(send_text(TTH_BRAVO, 0, "run-b1", WARNING), 1);
    ck_assert_int_eq(payload(TTH_BRAVO, "run-b1", WARNING), 1);
    /* bravo's real run speaks and hands on to charlie. */
    ck_assert_int_eq(end_run(TTH_BRAVO, "run-b2", "bravo here"), OC_OK);
    ck_assert_int_eq(send_text(TTH_BRAVO, 0, "run-b2", "bravo here"), 0);
    ck_assert_int_eq(resolve_run(TTH_CHARLIE, "run-c2"), 0);
}
END_TEST

/* The race seen in the real gateway: bravo's run for the human's question
 * is queued by the host and starts only after alpha answered and the turn
 * moved to bravo. That run answers the old prompt: held back, no effect on
 * the turn; the run whose prompt carries alpha's answer counts. */
START_TEST(test_run_for_an_older_message_than_the_latest_is_held_back)
{
    join_abc();
    const char *ask = "Which day should we ship the release?";
    human_says(ask);
    claim_body = ask;
    ck_assert_int_eq(claim(TTH_BRAVO, "b-queued"), 1); /* not its turn: consumed */
    ck_assert_int_eq(claim(TTH_ALPHA, "a1"), 0);
    ck_assert_int_eq(end_run(TTH_ALPHA, "a1", "Friday, after the <#1> freeze."), OC_OK);
    agent_posts(TTH_ALPHA, "Friday, after the <#300000000000000009> freeze.");
    dg_turn_state before = peek();
    ck_assert_int_eq(before.speaker, 1);
    /* The host starts a second run of bravo for the question only now. */
    ck_assert_int_eq(claim(TTH_BRAVO, "b-late"), 1);
    ck_assert(tth_log_has(&H, "this run answers an older message than the latest"));
    ck_assert_int_eq(end_run(TTH_BRAVO, "b-late", "Tuesday!"), OC_OK);
    ck_assert_int_eq(payload(TTH_BRAVO, "b-late", "Tuesday!"), 1);
    dg_turn_state after = peek();
    ck_assert(dg_turn_state_same(&before, &after));
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 0);
    /* The run with alpha's answer (the host renders the link its own way,
     * with the older messages as context) counts. */
    claim_body = "[Chat messages since your last reply - for context]\nhuman: Which day should "
                 "we ship the release?\nalpha: Friday, after the #general freeze.";
    ck_assert_int_eq(claim(TTH_BRAVO, "b2"), 0);
    claim_body = "hello";
    ck_assert_int_eq(end_run(TTH_BRAVO, "b2", "Friday suits me."), OC_OK);
    ck_assert_int_eq(peek().speaker, 2);
}
END_TEST

/* The same for a run queued for a moderator's text (seen in the gateway
 * stage under load: coder's run for the discussion's kickoff started after
 * reviewer spoke and the turn had come to coder). */
START_TEST(test_run_for_the_moderators_older_text_is_held_back)
{
    kickoff_then_alpha_spoke();
    agent_posts(TTH_ALPHA, "Review: versioned structs behind one entry point.");
    dg_turn_state before = peek();
    ck_assert_int_eq(before.speaker, 1);
    claim_body = KICKOFF;
    assert_held_back(&H, &before, TTH_BRAVO, "b-late",
                     "this run answers an older message than the latest");
    claim_body = "Review: versioned structs behind one entry point.";
    ck_assert_int_eq(claim(TTH_BRAVO, "b2"), 0);
    claim_body = "hello";
}
END_TEST

/* The same race one step earlier (a clean-clone CI run of the gateway
 * stage, under load): coder's run queued for the kickoff started after
 * reviewer's run had ended speaking but before reviewer's review reached
 * the plugin; the kickoff was still the latest message it knew, so the run
 * counted and its pass ended the discussion's round early. The turn came to
 * bravo for alpha's reply: a run that answers the message before it is held
 * back until that reply arrives; the run for the reply counts. */
START_TEST(test_run_before_the_previous_speakers_reply_arrives_is_held_back)
{
    kickoff_then_alpha_spoke();
    dg_turn_state before = peek();
    ck_assert_int_eq(before.speaker, 1);
    claim_body = KICKOFF; /* alpha's review has not come in yet */
    assert_held_back(&H, &before, TTH_BRAVO, "b-late",
                     "the previous speaker's reply, which has not arrived yet");
    ck_assert_int_eq(end_run(TTH_BRAVO, "b-late", "NO_REPLY"), OC_OK);
    dg_turn_state after = peek();
    ck_assert(dg_turn_state_same(&before, &after));
    agent_posts(TTH_ALPHA, "Review: versioned structs behind one entry point.");
    claim_body = "Review: versioned structs behind one entry point.";
    ck_assert_int_eq(claim(TTH_BRAVO, "b2"), 0);
    claim_body = "hello";
    ck_assert_int_eq(end_run(TTH_BRAVO, "b2", "Agreed."), OC_OK);
    ck_assert_int_eq(peek().speaker, 2);
}
END_TEST

/* A reply that reached the plugin before its run ended holds nobody: the
 * next speaker's run for it counts at once. */
START_TEST(test_reply_that_arrived_before_its_run_ended_holds_nothing)
{
    join_abc();
    human_says("Which day should we ship the release?");
    ck_assert_int_eq(claim(TTH_ALPHA, "a1"), 0);
    agent_posts(TTH_ALPHA, "Friday, after the freeze, I think.");
    ck_assert_int_eq(end_run(TTH_ALPHA, "a1", "Friday, after the freeze, I think."), OC_OK);
    ck_assert_int_eq(peek().speaker, 1);
    claim_body = "Which day should we ship the release? alpha: Friday, after the freeze, I think.";
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 0);
    claim_body = "hello";
}
END_TEST

#define QUESTION "Which day should we ship the release?"

/* alpha, bravo, charlie join, a human asks QUESTION, and alpha's run ends
 * speaking: its reply is owed (not here yet), the turn is bravo's. */
static void alpha_answered_reply_owed(void)
{
    join_abc();
    human_says(QUESTION);
    ck_assert_int_eq(claim(TTH_ALPHA, "a1"), 0);
    ck_assert_int_eq(end_run(TTH_ALPHA, "a1", "Friday, after the freeze."), OC_OK);
}

/* The hold lasts while the previous speaker may still send its reply (the
 * turn timeout, 60 s, inclusive): a reply that never came holds nobody for
 * long. bravo passes 40 s on, so charlie's turn outlasts alpha's window. */
START_TEST(test_owed_reply_holds_for_the_turn_timeout_only)
{
    alpha_answered_reply_owed();
    tth_advance(&H, 40000);
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 0); /* no evidence: counts */
    ck_assert_int_eq(end_run(TTH_BRAVO, "b1", "NO_REPLY"), OC_OK);
    ck_assert_int_eq(peek().speaker, 2);
    tth_advance(&H, 20000); /* alpha's run ended 60 s ago */
    dg_turn_state before = peek();
    claim_body = QUESTION;
    assert_held_back(&H, &before, TTH_CHARLIE, "c1",
                     "the previous speaker's reply, which has not arrived yet");
    tth_advance(&H, 1);
    ck_assert_int_eq(claim(TTH_CHARLIE, "c2"), 0);
    claim_body = "hello";
}
END_TEST

#define SECOND_QUESTION "And which day should the notes be out?"

/* A human's second question that comes in after the speaker's run for the
 * first ended and before that run's reply arrived is the newest message:
 * the next speaker's run on it counts (it is not held back for the reply,
 * whose run would answer the reply, leaving the question to nobody). */
START_TEST(test_question_after_the_speakers_run_ended_is_answered_by_the_next)
{
    alpha_answered_reply_owed();
    ck_assert_int_eq(peek().speaker, 1);
    tth_advance(&H, 1000);
    human_says(SECOND_QUESTION);
    claim_body = SECOND_QUESTION;
    ck_assert_int_eq(claim(TTH_BRAVO, "b-second"), 0);
    claim_body = "hello";
    ck_assert_int_eq(end_run(TTH_BRAVO, "b-second", "Monday."), OC_OK);
    ck_assert_int_eq(peek().speaker, 2);
}
END_TEST

/* A human's second question that comes in while the speaker's run for the
 * first is under way: that run did not see it, and the host will not run
 * the speaker for it once the turn moved on. The moderator says who is to
 * answer it: the next speaker, mentioned with the question, whose run for
 * that message counts. */
START_TEST(test_question_during_the_speakers_run_is_handed_to_the_next)
{
    join_abc();
    human_says(QUESTION);
    ck_assert_int_eq(claim(TTH_ALPHA, "a1"), 0);
    human_says(SECOND_QUESTION);
    claim_body = SECOND_QUESTION;
    ck_assert_int_eq(claim(TTH_BRAVO, "b-second"), 1); /* alpha holds the turn */
    claim_body = "hello";
    int before = tth_outbox_count(&H, CH1);
    ck_assert_int_eq(end_run(TTH_ALPHA, "a1", "Friday, after the freeze."), OC_OK);
    ck_assert_int_eq(peek().speaker, 1);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), before + 1);
    char *note = tth_outbox_content(&H, CH1, before, NULL);
    ck_assert_ptr_nonnull(note);
    ck_assert_msg(strstr(note, "<@" TTH_BRAVO_UID ">") && strstr(note, SECOND_QUESTION) &&
                      strstr(note, TTH_ALPHA),
                  "%s", note);
    /* The note comes in: bravo's run for it counts. */
    agent_posts(TTH_ALPHA, "Friday, after the freeze.");
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), TTH_MOD_UID, 1, note, NULL), OC_OK);
    ck_assert_int_eq(peek().speaker, 1);
    claim_body = note;
    ck_assert_int_eq(claim(TTH_BRAVO, "b-note"), 0);
    claim_body = "hello";
    free(note);
}
END_TEST

/* The previous speaker is not asked about its own reply: both others
 * passed while alpha's reply is owed, and the round ends (no hand-off, no
 * run of alpha's model to say NO_REPLY). */
START_TEST(test_previous_speaker_is_not_asked_about_its_own_reply)
{
    alpha_answered_reply_owed();
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 0);
    ck_assert_int_eq(end_run(TTH_BRAVO, "b1", "NO_REPLY"), OC_OK);
    ck_assert_int_eq(claim(TTH_CHARLIE, "c1"), 0);
    ck_assert_int_eq(end_run(TTH_CHARLIE, "c1", "NO_REPLY"), OC_OK);
    dg_turn_state st = peek();
    ck_assert_int_eq(st.active, 0);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 0);
    claim_body = QUESTION;
    ck_assert_int_eq(claim(TTH_ALPHA, "a2"), 1);
    claim_body = "hello";
}
END_TEST

/* A reply that arrived holds nothing, also when a later message (not the
 * reply) is the latest one the run's prompt carries. */
START_TEST(test_arrived_reply_holds_nothing_after_a_later_message)
{
    alpha_answered_reply_owed();
    agent_posts(TTH_ALPHA, "Friday, after the freeze.");
    human_says("And at what time of day?");
    dg_turn_state st = peek();
    ck_assert_int_eq(st.speaker, 1);
    ck_assert_int_eq(st.permit, 0);
    ck_assert_uint_eq(st.owed, 0);
    claim_body = "alpha: Friday, after the freeze. human: And at what time of day?";
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 0);
    claim_body = "hello";
}
END_TEST

/* ---- two instances on one store (two gateways) ---------------------------- */

/* The second instance: H's store, H's config, H's clock. */
static tth H2;

static void start_second(void)
{
    char *extra = NULL;
    ck_assert_int_ge(asprintf(&extra, "\"turn\":{\"maxAgentMessages\":1000},%s", H.store), 0);
    tth_start(&H2, "channel", extra);
    free(extra);
    atomic_store(&H2.now_ms, atomic_load(&H.now_ms));
}

static void advance_both(int64_t ms)
{
    tth_advance(&H, ms);
    tth_advance(&H2, ms);
}

/* One message (one id) that both instances take in: each gateway sees
 * every message of the channel. */
static void both_see(const char *sender, int is_bot, const char *text)
{
    char id[24];
    mid(id);
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, id, sender, is_bot, text, NULL), OC_OK);
    ck_assert_int_eq(tth_msg(&H2, CH1, NULL, id, sender, is_bot, text, NULL), OC_OK);
}

/* alpha's run ended speaking in H: in H2 the turn moved elsewhere, and
 * alpha's reply is owed (no prompt evidence needed there). */
static void alpha_spoke_in_the_first(void)
{
    start_second();
    join_abc();
    both_see(TTH_HUMAN_UID, 0, "go");
    ck_assert_int_eq(claim(TTH_ALPHA, "a1"), 0);
    ck_assert_int_eq(end_run(TTH_ALPHA, "a1", "Friday, after the freeze."), OC_OK);
    ck_assert_int_eq(peek().speaker, 1);
}

/* bravo's run in H2 before alpha's reply came is held back without a
 * change (not claimed as a late pass); the run after the reply counts. */
START_TEST(test_run_in_another_instance_before_the_owed_reply_is_held_back)
{
    alpha_spoke_in_the_first();
    dg_turn_state before = peek();
    assert_held_back(&H2, &before, TTH_BRAVO, "b1",
                     "this run answers an older message than the latest");
    both_see(TTH_ALPHA_UID, 1, "Friday, after the freeze.");
    ck_assert_int_eq(claim_on(&H2, TTH_BRAVO, "b2"), 0);
    tth_free(&H2);
}
END_TEST

/* In the other instance too the hold ends with the turn timeout: then
 * charlie's run is decided as with one gateway (the turn reached it after
 * its message came: claimed, and the moderator's hand-off will wake it). */
START_TEST(test_owed_reply_in_another_instance_holds_for_the_turn_timeout_only)
{
    alpha_spoke_in_the_first();
    advance_both(40000);
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 0);
    ck_assert_int_eq(end_run(TTH_BRAVO, "b1", "NO_REPLY"), OC_OK);
    ck_assert_int_eq(peek().speaker, 2);
    advance_both(20000); /* alpha's run ended 60 s ago */
    dg_turn_state before = peek();
    ck_assert_int_eq(before.handoff, DG_NOBODY);
    assert_held_back(&H2, &before, TTH_CHARLIE, "c1",
                     "this run answers an older message than the latest");
    ck_assert(!tth_log_has(&H2, "in another gateway"));
    advance_both(1);
    ck_assert_int_eq(claim_on(&H2, TTH_CHARLIE, "c2"), 1);
    ck_assert(tth_log_has(&H2, "the turn reached this agent in another gateway"));
    dg_turn_state after = peek_on(&H2);
    ck_assert_int_eq(after.speaker, 2);
    ck_assert_int_eq(after.handoff, 2);
    tth_free(&H2);
}
END_TEST

/* No evidence, no hold: a prompt that carries none of the recent messages
 * (a host that rewrote them), a short older message found by chance, and
 * the speaker's own latest message. */
START_TEST(test_run_without_evidence_of_an_older_message_counts)
{
    join_abc();
    human_says("ok");
    ck_assert_int_eq(claim(TTH_ALPHA, "a1"), 0);
    ck_assert_int_eq(end_run(TTH_ALPHA, "a1", "Shall we ship on Friday then?"), OC_OK);
    agent_posts(TTH_ALPHA, "Shall we ship on Friday then?");
    ck_assert_int_eq(peek().speaker, 1);
    claim_body = "ok"; /* only the short older one */
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 0);
    claim_body = "something else entirely"; /* nothing recognisable */
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 0);
    claim_body = "hello";
    ck_assert_int_eq(end_run(TTH_BRAVO, "b1", "Yes."), OC_OK);
    ck_assert_int_eq(peek().speaker, 2);
}
END_TEST

/* Every account of a gateway reports a message (one report per agent
 * session): a report of a message this instance took in already is no new
 * message, also when a run was decided between two reports. alpha's
 * silence then answers the latest message and passes the turn. */
START_TEST(test_second_report_of_a_message_is_no_new_message)
{
    join_abc();
    char id[24];
    mid(id);
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, id, TTH_HUMAN_UID, 0, "go", NULL), OC_OK);
    ck_assert_int_eq(claim(TTH_ALPHA, "a1"), 0);
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, id, TTH_HUMAN_UID, 0, "go", NULL), OC_OK);
    ck_assert_int_eq(end_run(TTH_ALPHA, "a1", "NO_REPLY"), OC_OK);
    ck_assert_int_eq(peek().speaker, 1);
}
END_TEST

/* The same message taken in first by another instance on the store, and
 * changing nothing stored there: it is new here all the same, once. alpha's
 * run decided before it reached this instance answered an older message,
 * so its silence passes nothing; the run decided after it counts. */
START_TEST(test_message_another_instance_took_in_first_is_new_here_once)
{
    start_second();
    join_abc();
    human_says("go");
    ck_assert_int_eq(claim(TTH_ALPHA, "a1"), 0);
    char id[24];
    mid(id);
    ck_assert_int_eq(tth_msg(&H2, CH1, NULL, id, TTH_HUMAN_UID, 0, "still there?", NULL), OC_OK);
    dg_turn_state before = peek();
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, id, TTH_HUMAN_UID, 0, "still there?", NULL), OC_OK);
    ck_assert_int_eq(end_run(TTH_ALPHA, "a1", "NO_REPLY"), OC_OK);
    dg_turn_state after = peek();
    ck_assert_int_eq(after.speaker, 0);
    ck_assert_uint_eq(after.silent, before.silent);
    ck_assert_int_eq(claim(TTH_ALPHA, "a2"), 0);
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, id, TTH_HUMAN_UID, 0, "still there?", NULL), OC_OK);
    ck_assert_int_eq(end_run(TTH_ALPHA, "a2", "NO_REPLY"), OC_OK);
    ck_assert_int_eq(peek().speaker, 1);
    tth_free(&H2);
}
END_TEST

/* What another instance changes without a message is no message: bravo's
 * run there is claimed and ends (it consumed "go", a change of the stored
 * state) while alpha's run for "go" goes on here; alpha's silence then
 * answered the latest message and passes the turn. */
START_TEST(test_change_of_another_instance_without_a_message_is_no_message)
{
    start_second();
    join_abc();
    both_see(TTH_HUMAN_UID, 0, "go");
    ck_assert_int_eq(claim_on(&H2, TTH_ALPHA, "a1"), 0);
    dg_turn_state before = peek();
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 1);
    ck_assert_int_eq(end_run(TTH_BRAVO, "b1", "NO_REPLY"), OC_OK);
    dg_turn_state after = peek();
    ck_assert_msg(!dg_turn_state_same(&before, &after), "bravo's claimed run changed nothing");
    ck_assert_int_eq(end_run_on(&H2, TTH_ALPHA, "a1", "NO_REPLY"), OC_OK);
    ck_assert_int_eq(peek_on(&H2).speaker, 1);
    tth_free(&H2);
}
END_TEST

START_TEST(test_message_sending_in_gateway_shape)
{
    join3_and_ask();
    ck_assert_int_eq(send_text(TTH_BRAVO, 1, NULL, "me first!"), 1);
    ck_assert_int_eq(send_text(TTH_ALPHA, 1, NULL, "my answer"), 0);
    ck_assert(tth_log_has(&H, "message_sending: cancelled for bravo"));
    /* The channel from conversationId when the session key has none. */
    json_t *ctx =
        json_pack("{s:s, s:s, s:s, s:s}", "channelId", "discord", "accountId", "bravo",
                  "conversationId", "channel:" CH1, "sessionKey", "agent:bravo:discord:group:x");
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
    ck_assert(tth_log_has(&H, "the host has no llm_output hook"));
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

/* The no-reply pair out of the config text h->config. */
static void drop_no_reply_pair(tth *h)
{
    static const char pair[] = "\"noReplyProvider\":\"noreply\",\"noReplyModel\":\"no-reply-1\",";
    char *at = strstr(h->config, pair);
    ck_assert_ptr_nonnull(at);
    memmove(at, at + strlen(pair), strlen(at + strlen(pair)) + 1);
}

START_TEST(test_no_reply_pair_is_needed_only_without_claim_hooks)
{
    /* A host with claim hooks starts without it, and a non-speaker's run
     * is claimed, never routed to a model that is not configured. */
    tth_stop_plugin(&H);
    drop_no_reply_pair(&H);
    tth_restart(&H);
    ck_assert_ptr_null(tth_plugin(&H)->cfg.no_reply_provider);
    for (int i = 0; i < 3; i++)
        ck_assert_int_ge(tth_resolve(&H, ABC[i], CH1, NULL), 0);
    human_says("go");
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, NULL), 0);
    /* A host without them refuses init, naming both fields. */
    tth_free(&H);
    tth_start_ex(&H, "channel", NULL, 1);
    tth_stop_plugin(&H);
    drop_no_reply_pair(&H);
    json_t *cfg = tu_json(H.config);
    char err[512] = "";
    void *state = NULL;
    ck_assert_int_eq(H.plugin->init(&H.api, cfg, &state, err, sizeof err), OC_ERR_INVALID);
    json_decref(cfg);
    ck_assert_ptr_null(state);
    ck_assert_msg(strstr(err, "\"noReplyProvider\" and \"noReplyModel\" are required on this "
                              "host: it has no claim hooks"),
                  "%s", err);
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

/* ---- a speaker awaits the moderator's message that wakes it -------------------- */

/* message_received of message msg_id as reported to agent's session in
 * channel (OpenClaw: once per agent, ctx.sessionKey names the session). */
static void deliver(const char *agent, const char *channel, const char *msg_id, const char *sender,
                    int is_bot, const char *content)
{
    char key[256];
    json_t *ev = json_pack("{s:s, s:s, s:b, s:s, s:b, s:s, s:[]}", "messageId", msg_id, "channelId",
                           channel, "isDm", 0, "senderId", sender, "senderIsBot", is_bot, "content",
                           content, "mentions");
    json_t *ctx = json_pack("{s:s, s:s, s:s}", "channelId", channel, "accountId", agent,
                            "sessionKey", tth_session_key(key, sizeof key, agent, channel, NULL));
    ck_assert_int_eq(tth_call(&H, "message_received", ev, ctx, NULL), OC_OK);
    json_decref(ev);
    json_decref(ctx);
}

/* The message reaches alpha, bravo and charlie in CH1, in that order. */
static void deliver_all(const char *sender, int is_bot, const char *content)
{
    char id[24];
    mid(id);
    for (int i = 0; i < 3; i++)
        deliver(ABC[i], CH1, id, sender, is_bot, content);
}

/* CH1 becomes a discussion: initiator alpha, then bravo, charlie (what the
 * discussion area does in one transaction; the kickoff is not queued). */
static void open_discussion(void)
{
    dg_plugin *p = tth_plugin(&H);
    static const char *const BC[] = {TTH_BRAVO, TTH_CHARLIE};
    char *order[3] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};
    dg_discussion d = {
        .discussion_channel_id = CH1,
        .origin_channel_id = CH0,
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
    ck_assert_int_eq(dg_turns_prefill_discussion(p->turns, CH1, TTH_ALPHA, BC, 2, dg_now_ms(p)),
                     OC_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
}

/* The decision of a run: before_model_resolve (swap) or before_agent_reply
 * (claim). 1 silenced, 0 not. */
static int decide_run(const char *agent, const char *run_id, int swap)
{
    int r = swap ? resolve_run(agent, run_id) : claim(agent, run_id);
    ck_assert_int_ge(r, 0);
    return r;
}

/* A whole run: decided, then ended with output (NO_REPLY when silenced).
 * Returns 1 when it was silenced. */
static int whole_run(const char *agent, const char *run_id, int swap, const char *output)
{
    int silenced = decide_run(agent, run_id, swap);
    ck_assert_int_eq(end_run(agent, run_id, silenced ? "NO_REPLY" : output), OC_OK);
    return silenced;
}

/* A text of agent's run: cancelled? (reply_payload_sending with the claim
 * hooks, message_sending on a host without them.) */
static int text_cancelled(const char *agent, const char *run_id, int swap, const char *text)
{
    return swap ? send_text(agent, 0, run_id, text) : payload(agent, run_id, text);
}

/* The story up to the idle reminder: the discussion opens (kickoff to
 * everyone), bravo speaks, charlie passes (hand-off to alpha, delivered),
 * alpha passes; bravo wrote the latest message: a silent round, so the
 * moderator queues the idle reminder and alpha, the initiator, holds the
 * turn. */
static void silent_round_to_reminder(int swap)
{
    open_discussion();
    deliver_all(TTH_MOD_UID, 1, "[Discussion Started] Decide the release date.");
    ck_assert_int_eq(whole_run(TTH_BRAVO, "b1", swap, "I think Friday."), 0);
    deliver_all(TTH_BRAVO_UID, 1, "I think Friday.");
    ck_assert_int_eq(whole_run(TTH_ALPHA, "a1", swap, "(ignored)"), 1); /* not its turn */
    ck_assert_int_eq(whole_run(TTH_BRAVO, "b2", swap, "(ignored)"), 1);
    ck_assert_int_eq(whole_run(TTH_CHARLIE, "c1", swap, "NO_REPLY"), 0); /* coder passes */
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 1);                      /* <@alpha> */
    deliver_all(TTH_MOD_UID, 1, "<@" TTH_ALPHA_UID ">");
    ck_assert_int_eq(whole_run(TTH_ALPHA, "a2", swap, "NO_REPLY"), 0);
    /* bravo wrote the latest message: it is not asked about it. */
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 2);
    char *text = tth_outbox_content(&H, CH1, 1, NULL);
    ck_assert_ptr_nonnull(strstr(text, "[Discussion Idle]"));
    free(text);
    dg_turn_state st = peek();
    ck_assert_int_eq(st.active, 1);
    ck_assert_int_eq(st.speaker, 0);
}

/* The trace of the real gateway: alpha's session still had a queued run
 * (for an older message); it starts after the idle reminder made alpha the
 * speaker but before the reminder reached alpha. That run must not be
 * alpha's answer: held back, no pass, alpha keeps the turn. */
static void stale_run_is_held_back(int swap)
{
    silent_round_to_reminder(swap);
    dg_turn_state before = peek();
    ck_assert_uint_eq(before.awaiting, 1);
    ck_assert_int_eq(decide_run(TTH_ALPHA, "a-stale", swap), 1);
    ck_assert_int_eq(text_cancelled(TTH_ALPHA, "a-stale", swap, "NO_REPLY"), 1);
    ck_assert_int_eq(end_run(TTH_ALPHA, "a-stale", "NO_REPLY"), OC_OK);
    dg_turn_state after = peek();
    ck_assert(dg_turn_state_same(&before, &after)); /* not a pass, not a consumption */
    ck_assert_int_eq(after.speaker, 0);
    ck_assert_int_eq(tth_outbox_count(&H, CH1), 2); /* and no hand-off either */
    /* The reminder reaches the others first: alpha still waits, also for a
     * run without an id. */
    char id[24];
    mid(id);
    const char *reminder = "[Discussion Idle] ... <@" TTH_ALPHA_UID ">";
    deliver(TTH_BRAVO, CH1, id, TTH_MOD_UID, 1, reminder);
    deliver(TTH_CHARLIE, CH1, id, TTH_MOD_UID, 1, reminder);
    ck_assert_int_eq(decide_run(TTH_ALPHA, NULL, swap), 1);
    ck_assert_int_eq(end_run(TTH_ALPHA, NULL, "NO_REPLY"), OC_OK);
    after = peek();
    ck_assert(dg_turn_state_same(&before, &after));
    /* The reminder reaches alpha. */
    deliver(TTH_ALPHA, CH1, id, TTH_MOD_UID, 1, reminder);
    ck_assert_uint_eq(peek().awaiting, 0);
    if (!swap) {
        /* A run queued for an older message that the host starts only now
         * (its prompt lacks the reminder) is still held back. */
        ck_assert_int_eq(decide_run(TTH_ALPHA, "a-late", swap), 1);
        ck_assert_int_eq(end_run(TTH_ALPHA, "a-late", "NO_REPLY"), OC_OK);
        ck_assert_int_eq(peek().speaker, 0);
        claim_body = "[Discussion Idle] ... @alpha, if the discussion goal has been achieved";
    }
    /* The run that answers the reminder counts. */
    ck_assert_int_eq(decide_run(TTH_ALPHA, "a3", swap), 0);
    claim_body = "hello";
    ck_assert_int_eq(end_run(TTH_ALPHA, "a3", "Friday it is; I will write the summary."), OC_OK);
    ck_assert_int_eq(text_cancelled(TTH_ALPHA, "a3", swap, "Friday it is."), 0);
    after = peek();
    ck_assert_int_eq(after.permit, 0);
    ck_assert_int_eq(after.speaker, 1); /* it spoke: bravo is next */
    ck_assert_uint_eq(after.owed, 1);   /* its message is on the way */
}

START_TEST(test_stale_run_before_the_idle_reminder_is_claimed)
{
    stale_run_is_held_back(0);
    ck_assert(tth_log_has(&H, "the moderator's message that wakes it has not reached it"));
}
END_TEST

START_TEST(test_stale_run_before_the_idle_reminder_is_swapped)
{
    tth_free(&H);
    tth_start_ex(&H, "channel", "\"turn\":{\"maxAgentMessages\":1000}", 1);
    atomic_store(&H.now_ms, (int64_t)time(NULL) * 1000);
    stale_run_is_held_back(1);
}
END_TEST

START_TEST(test_human_message_ends_the_wait)
{
    silent_round_to_reminder(0);
    ck_assert_int_eq(claim(TTH_ALPHA, "a-stale"), 1);
    deliver_all(TTH_HUMAN_UID, 0, "any news?");
    ck_assert_uint_eq(peek().awaiting, 0);
    ck_assert_int_eq(peek().speaker, 0);
    ck_assert_int_eq(claim(TTH_ALPHA, "a-human"), 0); /* its run for the human counts */
}
END_TEST

START_TEST(test_kickoff_wakes_the_first_participant)
{
    /* The host has shown it reports deliveries per agent session. */
    deliver(TTH_ALPHA, CH0, "499999999999999001", TTH_HUMAN_UID, 0, "hello");
    open_discussion();
    dg_turn_state before = peek();
    ck_assert_int_eq(before.speaker, 1);
    ck_assert_uint_eq(before.awaiting, 1u << 1);
    ck_assert_int_eq(claim(TTH_BRAVO, "b0"), 1); /* before the kickoff reached it */
    ck_assert_int_eq(end_run(TTH_BRAVO, "b0", "NO_REPLY"), OC_OK);
    dg_turn_state after = peek();
    ck_assert(dg_turn_state_same(&before, &after));
    deliver_all(TTH_MOD_UID, 1, "[Discussion Started] Decide the release date.");
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 0);
    ck_assert_int_eq(claim(TTH_CHARLIE, "c1"), 1); /* not its turn (an ordinary claim) */
}
END_TEST

START_TEST(test_no_wait_without_per_agent_reports)
{
    /* The same story, the host reporting each message once without a
     * session key: nothing is armed, the speaker's runs count as before. */
    open_discussion();
    ck_assert_uint_eq(peek().awaiting, 0);
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 0);
    ck_assert_int_eq(end_run(TTH_BRAVO, "b1", "NO_REPLY"), OC_OK);
    ck_assert_int_eq(claim(TTH_CHARLIE, "c1"), 0);
    ck_assert_int_eq(end_run(TTH_CHARLIE, "c1", "NO_REPLY"), OC_OK);
    ck_assert_uint_eq(peek().awaiting, 0);
    /* A session key of the wrong type is refused by name, nothing changes. */
    dg_turn_state before = peek();
    json_t *ev = json_pack("{s:s, s:s, s:s, s:s}", "messageId", "499999999999999002", "channelId",
                           CH1, "senderId", TTH_HUMAN_UID, "content", "hi");
    json_t *ctx = json_pack("{s:s, s:i}", "channelId", CH1, "sessionKey", 5);
    ck_assert_int_eq(tth_call(&H, "message_received", ev, ctx, NULL), OC_ERR_INVALID);
    ck_assert(tth_log_has(&H, "ctx.sessionKey is not a string"));
    dg_turn_state after = peek();
    ck_assert(dg_turn_state_same(&before, &after));
    json_decref(ev);
    json_decref(ctx);
}
END_TEST

/* ---- the stall nudge ------------------------------------------------------------ */

/* The turn timeout out of the way: what moves the turn here is the nudge.
 * extra: more keys of "turn". */
static void start_nudge(const char *extra)
{
    char cfg[160];
    snprintf(cfg, sizeof cfg, "\"turn\":{\"maxAgentMessages\":1000,\"timeoutSec\":600%s}", extra);
    tth_start(&H, "channel", cfg);
    atomic_store(&H.now_ms, (int64_t)time(NULL) * 1000);
}

static void setup_nudge(void)
{
    start_nudge("");
}

/* One sweeper pass after ms more on the clock; the moderator messages of
 * CH1 in the outbox then. */
static int sweep_after(int64_t ms)
{
    tth_advance(&H, ms);
    dg_turns_sweep_now(tth_plugin(&H)->turns);
    return tth_outbox_count(&H, CH1);
}

#define ASK "please review the shape of the public API"
#define REVIEW "Review: versioned structs behind one entry point."

/* alpha, bravo, charlie join; a human asks (every session told); alpha's
 * run goes on and ends speaking: bravo holds the turn for alpha's review. */
static void alpha_reviewed(void)
{
    join_abc();
    deliver_all(TTH_HUMAN_UID, 0, ASK);
    claim_body = ASK;
    ck_assert_int_eq(claim(TTH_ALPHA, "a1"), 0);
    ck_assert_int_eq(end_run(TTH_ALPHA, "a1", REVIEW), OC_OK);
    ck_assert_int_eq(peek().speaker, 1);
}

/* bravo's run for the question is held back (alpha's review has not come),
 * then the review reaches every session, and no run of bravo follows. */
static void review_dropped_for_bravo(void)
{
    ck_assert_int_eq(claim(TTH_BRAVO, "b-late"), 1);
    ck_assert_int_eq(end_run(TTH_BRAVO, "b-late", "NO_REPLY"), OC_OK);
    deliver_all(tth_uid(TTH_ALPHA), 1, REVIEW);
}

/* The gateway stage's stall (real OpenClaw 2026.9 under CI load): bravo's
 * run for the question was held back (alpha's review had not come), and it
 * was still finishing when the review reached bravo's session; OpenClaw
 * dropped the review for bravo ("skipped, reply-operation-active"), so no
 * run of bravo came, and the discussion stood for twelve minutes. After
 * turn.nudgeSec (20 s) the moderator mentions bravo, once per turn. */
START_TEST(test_speaker_whose_run_never_came_is_nudged_once)
{
    alpha_reviewed();
    review_dropped_for_bravo();
    int before = tth_outbox_count(&H, CH1);
    ck_assert_int_eq(sweep_after(19 * 1000), before);
    ck_assert_int_eq(sweep_after(1000), before + 1);
    char *c = tth_outbox_content(&H, CH1, before, NULL);
    ck_assert_str_eq(c, "<@" TTH_BRAVO_UID ">");
    free(c);
    ck_assert(tth_log_has(&H, "no run of it started within turn.nudgeSec (20s)"));
    ck_assert_int_eq(peek().speaker, 1); /* a mention, no change of the turn */
    /* The mention reaches every session; bravo's run for it is dropped too:
     * no second mention in this turn (turn.timeoutSec is the backstop). */
    char id[24];
    snprintf(id, sizeof id, "4%017d", next_msg++);
    for (int i = 0; i < 3; i++)
        deliver(ABC[i], CH1, id, TTH_MOD_UID, 1, "<@" TTH_BRAVO_UID ">");
    ck_assert_int_eq(sweep_after(60 * 1000), before + 1);
    /* Its run comes at last: it counts, and the turn goes on. */
    claim_body = REVIEW;
    ck_assert_int_eq(claim(TTH_BRAVO, "b2"), 0);
    ck_assert_int_eq(end_run(TTH_BRAVO, "b2", "Agreed, one entry point."), OC_OK);
    ck_assert_int_eq(peek().speaker, 2);
    claim_body = "hello";
}
END_TEST

/* A speaker whose run came, or was under way when the message reached it,
 * is not nudged however long the run takes; neither is one whose
 * predecessor's reply is still on its way. */
START_TEST(test_speaker_with_a_run_under_way_is_not_nudged)
{
    alpha_reviewed();
    /* The review is owed (alpha's run ended speaking, the message is not
     * here yet): its arrival wakes bravo, not the moderator. */
    int before = tth_outbox_count(&H, CH1);
    ck_assert_int_eq(sweep_after(30 * 1000), before);
    deliver_all(tth_uid(TTH_ALPHA), 1, REVIEW);
    claim_body = REVIEW;
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 0);       /* its run goes on ... */
    ck_assert_int_eq(sweep_after(120 * 1000), before); /* ... for two minutes */
    /* A human adds a word while it runs: it reaches bravo's busy session. */
    deliver_all(TTH_HUMAN_UID, 0, "and keep the ABI at version one");
    ck_assert_int_eq(sweep_after(120 * 1000), before);
    ck_assert_int_eq(end_run(TTH_BRAVO, "b1", "Agreed."), OC_OK);
    ck_assert_int_eq(peek().speaker, 2);
    /* bravo's run did not see the human's word: the moderator gives it to
     * charlie (a wake message, no nudge). */
    ck_assert_int_eq(tth_outbox_count(&H, CH1), before + 1);
    char *note = tth_outbox_content(&H, CH1, before, NULL);
    ck_assert_msg(strstr(note, "<@" TTH_CHARLIE_UID ">") && strstr(note, "version one"), "%s",
                  note);
    deliver_all(tth_uid(TTH_BRAVO), 1, "Agreed.");
    deliver_all(TTH_MOD_UID, 1, note);
    free(note);
    /* The swap path (before_model_resolve) counts as a run too. */
    ck_assert_int_eq(resolve_run(TTH_CHARLIE, "c1"), 0);
    ck_assert_int_eq(sweep_after(120 * 1000), before + 1);
    claim_body = "hello";
}
END_TEST

/* The moderator's posts so far are out: marked sent, as the dispatcher
 * does once Discord took them. */
static void outbox_sent(void)
{
    dg_store *st = tth_plugin(&H)->store;
    dg_outbox_row *rows = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_outbox_pending_of(st, CH1, 0, 64, &rows, &n), OC_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(
            dg_store_outbox_mark_sent(st, rows[i].id, "999999999999999999", atomic_load(&H.now_ms)),
            OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    dg_outbox_rows_free(rows, n);
}

/* A hand-off that Discord took but that never reached the next speaker's
 * session (its bot was reconnecting: a new gateway session does not get
 * what was posted meanwhile): the speaker awaits it for ever, so the
 * moderator mentions it once more turn.nudgeSec after, instead of the turn
 * waiting for turn.timeoutSec (600 s here). */
START_TEST(test_handoff_that_never_arrived_is_nudged)
{
    join_abc();
    deliver_all(TTH_HUMAN_UID, 0, ASK);
    claim_body = ASK;
    ck_assert_int_eq(claim(TTH_ALPHA, "a1"), 0);
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 1); /* bravo has read it */
    ck_assert_int_eq(end_run(TTH_ALPHA, "a1", "NO_REPLY"), OC_OK);
    claim_body = "hello";
    ck_assert_int_eq(peek().speaker, 1);
    int before = tth_outbox_count(&H, CH1);
    char *c = tth_outbox_content(&H, CH1, before - 1, NULL);
    ck_assert_str_eq(c, "<@" TTH_BRAVO_UID ">");
    free(c);
    outbox_sent();
    ck_assert_int_eq(sweep_after(19 * 1000), before);
    ck_assert_int_eq(sweep_after(1000), before + 1);
    c = tth_outbox_content(&H, CH1, before, NULL);
    ck_assert_str_eq(c, "<@" TTH_BRAVO_UID ">");
    free(c);
    ck_assert_int_eq(peek().speaker, 1);
}
END_TEST

/* The same hand-off, and the nudges never reach bravo's session either
 * (its bot away longer than turn.nudgeSec, as OpenClaw's Slack apps after a
 * gateway's start): each is repeated turn.nudgeSec after it left the
 * outbox, five times at most for the turn. */
START_TEST(test_nudge_that_never_arrived_is_repeated_five_times)
{
    join_abc();
    deliver_all(TTH_HUMAN_UID, 0, ASK);
    claim_body = ASK;
    ck_assert_int_eq(claim(TTH_ALPHA, "a1"), 0);
    ck_assert_int_eq(claim(TTH_BRAVO, "b1"), 1);
    ck_assert_int_eq(end_run(TTH_ALPHA, "a1", "NO_REPLY"), OC_OK);
    claim_body = "hello";
    int before = tth_outbox_count(&H, CH1);
    for (int i = 1; i <= 6; i++) {
        outbox_sent();
        ck_assert_int_eq(sweep_after(19 * 1000), before + i - 1);
        ck_assert_int_eq(sweep_after(1000), before + i);
        char *c = tth_outbox_content(&H, CH1, before + i - 1, NULL);
        ck_assert_str_eq(c, "<@" TTH_BRAVO_UID ">");
        free(c);
    }
    outbox_sent();
    ck_assert_int_eq(sweep_after(120 * 1000), before + 6);
    ck_assert_int_eq(peek().speaker, 1);
}
END_TEST

START_TEST(test_no_nudge_when_turned_off)
{
    tth_free(&H);
    start_nudge(",\"nudgeSec\":0");
    alpha_reviewed();
    review_dropped_for_bravo();
    int before = tth_outbox_count(&H, CH1);
    ck_assert_int_eq(sweep_after(300 * 1000), before);
    ck_assert_int_eq(peek().speaker, 1);
    claim_body = "hello";
}
END_TEST

/* ---- the host's error notices -------------------------------------------------- */

/* reply_payload_sending of an error payload (isError: true) of agent in
 * channel: 1 cancelled, 0 not, -1 error. */
static int error_payload(const char *agent, const char *channel, const char *text)
{
    char key[256];
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s}", "channelId", "discord", "accountId", agent,
                            "conversationId", "channel:", "sessionKey",
                            tth_session_key(key, sizeof key, agent, channel, NULL));
    json_t *ev =
        json_pack("{s:{s:s, s:b}, s:s}", "payload", "text", text, "isError", 1, "kind", "final");
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

START_TEST(test_error_payload_of_the_speaker_is_cancelled)
{
    join3_and_ask();
    ck_assert_int_eq(claim(TTH_ALPHA, "run-a1"), 0); /* the speaker */
    ck_assert_int_eq(error_payload(TTH_ALPHA, CH1, WARNING), 1);
    ck_assert(
        tth_log_has(&H, "error notice of alpha in channel " CH1 " not delivered: \"" WARNING "\""));
    /* An ordinary payload of the speaker still goes out. */
    ck_assert_int_eq(payload(TTH_ALPHA, "run-a1", "my answer"), 0);
    /* A long notice is logged cut at 120 characters. */
    char long_text[400];
    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    ck_assert_int_eq(error_payload(TTH_BRAVO, CH1, long_text), 1);
    char want[160];
    snprintf(want, sizeof want, "\"%.120s...\"", long_text);
    ck_assert(tth_log_has(&H, want));
}
END_TEST

/* message_sending with isError (the bridge marks OpenClaw's fixed notices,
 * e.g. its "couldn't produce or deliver a reply" fallback, which reaches
 * only message_sending): cancelled from the speaker too, and only in a
 * managed channel. */
static int error_message(const char *agent, const char *channel, const char *text)
{
    char key[256];
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s}", "channelId", "discord", "accountId", agent,
                            "conversationId", "channel:", "sessionKey",
                            tth_session_key(key, sizeof key, agent, channel, NULL));
    json_t *ev = json_pack("{s:s, s:s, s:b}", "to", "channel:", "content", text, "isError", 1);
    json_t *r = NULL;
    int rc = tth_call(&H, "message_sending", ev, ctx, &r);
    int out = rc != OC_OK ? -1 : 0;
    if (rc == OC_OK && r) {
        ck_assert(json_is_true(json_object_get(r, "cancel")));
        out = 1;
    }
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return out;
}

START_TEST(test_error_message_of_the_speaker_is_cancelled)
{
    join3_and_ask();
    ck_assert_int_eq(claim(TTH_ALPHA, "run-a1"), 0); /* the speaker */
    ck_assert_int_eq(error_message(TTH_ALPHA, CH1, WARNING), 1);
    ck_assert(tth_log_has(&H, "message_sending: error notice of alpha in channel " CH1));
    /* Unmanaged channel: untouched. */
    ck_assert_int_eq(tth_resolve(&H, TTH_ALPHA, CH0, NULL), 0);
    ck_assert_int_eq(error_message(TTH_ALPHA, CH0, WARNING), 0);
}
END_TEST

START_TEST(test_error_payload_in_an_unmanaged_channel_is_untouched)
{
    /* One configured agent in CH0: not managed. */
    ck_assert_int_eq(tth_resolve(&H, TTH_ALPHA, CH0, NULL), 0);
    ck_assert_int_eq(error_payload(TTH_ALPHA, CH0, WARNING), 0);
    /* A malformed isError is refused by name. */
    char key[256];
    json_t *ctx = json_pack("{s:s, s:s}", "channelId", "discord", "sessionKey",
                            tth_session_key(key, sizeof key, TTH_ALPHA, CH0, NULL));
    json_t *ev = json_pack("{s:{s:s, s:s}}", "payload", "text", WARNING, "isError", "yes");
    json_t *r = NULL;
    ck_assert_int_eq(tth_call(&H, "reply_payload_sending", ev, ctx, &r), OC_ERR_INVALID);
    ck_assert_ptr_null(r);
    ck_assert(tth_log_has(&H, "event.payload.isError of alpha is not a boolean"));
    json_decref(ev);
    json_decref(ctx);
}
END_TEST

START_TEST(test_malformed_run_id_and_is_error_refused_by_name)
{
    /* A runId or isError of the wrong type is refused with OC_ERR_INVALID
     * and a line naming the field; nothing is decided. */
    join3_and_ask();
    char key[256];
    json_t *ctx = json_pack("{s:s, s:s}", "channelId", "discord", "sessionKey",
                            tth_session_key(key, sizeof key, TTH_BRAVO, CH1, NULL));
    json_t *r = NULL;
    json_t *ev = json_pack("{s:s}", "runId", ""); /* empty: no run id, decided as usual */
    ck_assert_int_eq(tth_call(&H, "before_model_resolve", ev, ctx, &r), OC_OK);
    json_decref(r);
    r = NULL;
    json_decref(ev);
    ev = json_pack("{s:i}", "runId", 7);
    ck_assert_int_eq(tth_call(&H, "before_model_resolve", ev, ctx, &r), OC_ERR_INVALID);
    ck_assert_ptr_null(r);
    ck_assert(tth_log_has(&H, "before_model_resolve: event.runId of bravo is not a string"));
    json_decref(ev);
    ev = json_pack("{s:s, s:s, s:{s:i}}", "to", "channel:" CH1, "content", "hello", "metadata",
                   "runId", 9);
    ck_assert_int_eq(tth_call(&H, "message_sending", ev, ctx, &r), OC_ERR_INVALID);
    ck_assert_ptr_null(r);
    ck_assert(tth_log_has(&H, "message_sending: event.metadata.runId of bravo is not a string"));
    json_decref(ev);
    ev = json_pack("{s:s, s:s, s:s}", "to", "channel:" CH1, "content", "hello", "isError", "no");
    ck_assert_int_eq(tth_call(&H, "message_sending", ev, ctx, &r), OC_ERR_INVALID);
    ck_assert_ptr_null(r);
    ck_assert(tth_log_has(&H, "message_sending: event.isError of bravo is not a boolean"));
    json_decref(ev);
    json_decref(ctx);
    /* Nothing changed: alpha still holds the turn, bravo is still swapped. */
    ck_assert_int_eq(tth_resolve(&H, TTH_ALPHA, CH1, NULL), 0);
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, NULL), 1);
}
END_TEST

/* A test case of the suite: its fixture (setup, then teardown), 60 s. */
static TCase *add_tcase(Suite *s, const char *name, void (*set_up)(void))
{
    TCase *tc = tcase_create(name);
    tcase_add_checked_fixture(tc, set_up, teardown);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return tc;
}

Suite *make_claim_suite(void)
{
    Suite *s = suite_create("claim");
    TCase *tc = add_tcase(s, "claim", setup);
    tcase_add_test(tc, test_claims_non_speakers_not_the_speaker);
    tcase_add_loop_test(tc, test_other_platform_is_left_alone, 0, 2);
    tcase_add_test(tc, test_malformed_run_id_and_is_error_refused_by_name);
    tcase_add_test(tc, test_dormant_scope_claims_everyone);
    tcase_add_test(tc, test_claimed_agent_gets_the_handoff_when_its_turn_comes);
    tcase_add_test(tc, test_agent_end_after_a_claim_changes_nothing);
    tcase_add_test(tc, test_payloads_of_a_claimed_run_are_cancelled);
    tcase_add_test(tc, test_swapped_run_ending_after_the_turn_moved_is_not_speech);
    tcase_add_test(tc, test_run_for_an_older_message_than_the_latest_is_held_back);
    tcase_add_test(tc, test_run_without_evidence_of_an_older_message_counts);
    tcase_add_test(tc, test_run_for_the_moderators_older_text_is_held_back);
    tcase_add_test(tc, test_run_before_the_previous_speakers_reply_arrives_is_held_back);
    tcase_add_test(tc, test_reply_that_arrived_before_its_run_ended_holds_nothing);
    tcase_add_test(tc, test_owed_reply_holds_for_the_turn_timeout_only);
    tcase_add_test(tc, test_question_after_the_speakers_run_ended_is_answered_by_the_next);
    tcase_add_test(tc, test_question_during_the_speakers_run_is_handed_to_the_next);
    tcase_add_test(tc, test_arrived_reply_holds_nothing_after_a_later_message);
    tcase_add_test(tc, test_previous_speaker_is_not_asked_about_its_own_reply);
    tcase_add_test(tc, test_run_in_another_instance_before_the_owed_reply_is_held_back);
    tcase_add_test(tc, test_owed_reply_in_another_instance_holds_for_the_turn_timeout_only);
    tcase_add_test(tc, test_second_report_of_a_message_is_no_new_message);
    tcase_add_test(tc, test_message_another_instance_took_in_first_is_new_here_once);
    tcase_add_test(tc, test_change_of_another_instance_without_a_message_is_no_message);
    tcase_add_test(tc, test_message_sending_in_gateway_shape);
    tcase_add_test(tc, test_old_host_without_claim_hooks_still_starts);
    tcase_add_test(tc, test_no_reply_pair_is_needed_only_without_claim_hooks);
    tcase_add_test(tc, test_malformed_claim_input_is_refused);
    TCase *wake = add_tcase(s, "wake", setup);
    tcase_add_test(wake, test_stale_run_before_the_idle_reminder_is_claimed);
    tcase_add_test(wake, test_stale_run_before_the_idle_reminder_is_swapped);
    tcase_add_test(wake, test_human_message_ends_the_wait);
    tcase_add_test(wake, test_kickoff_wakes_the_first_participant);
    tcase_add_test(wake, test_no_wait_without_per_agent_reports);
    TCase *nudge = add_tcase(s, "nudge", setup_nudge);
    tcase_add_test(nudge, test_speaker_whose_run_never_came_is_nudged_once);
    tcase_add_test(nudge, test_speaker_with_a_run_under_way_is_not_nudged);
    tcase_add_test(nudge, test_no_nudge_when_turned_off);
    tcase_add_test(nudge, test_nudge_that_never_arrived_is_repeated_five_times);
    tcase_add_test(nudge, test_handoff_that_never_arrived_is_nudged);
    TCase *err = add_tcase(s, "error_payload", setup);
    tcase_add_test(err, test_error_payload_of_the_speaker_is_cancelled);
    tcase_add_test(err, test_error_message_of_the_speaker_is_cancelled);
    tcase_add_test(err, test_error_payload_in_an_unmanaged_channel_is_untouched);
    return s;
}
