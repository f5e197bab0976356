/*
 * check_judge.c -- the chair's judge: its evidence and answer parsers
 * (judge/), the policy (plugin/judge_policy.c), the OpenAI-compatible
 * client against a fake endpoint on loopback (answers, failures, hangs,
 * slow answers, garbage), and the judge in the turn engine through the
 * real hooks: who it hands the turn to, the end of a round, every
 * fallback, mentions and admin commands overriding it, the host's decide
 * (ABI 1.2) and a host without it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "openclaw/plugin.h"
#include "fake_judge.h"
#include "judge.h"
#include "judge_plugin.h"
#include "judge_policy.h"
#include "ochost.h"
#include "ocgw.h"
#include "status.h"
#include "store.h"
#include "store_judge.h"
#include "store_transitions.h"
#include "cost_report.h"
#include "testutil.h"
#include "turn_test_host.h"

#define CH1 "300000000000000001"
/* Generous: the machine is loaded; conditions are awaited, never timed. */
#define WAIT_MS 20000

/* ---- evidence ------------------------------------------------------------------ */

START_TEST(test_labels_and_bounds)
{
    dgj_candidate c[] = {{"planner", "plans"}, {"reviewer", NULL}};
    dgj_evidence ev = {.candidates = c, .n_candidates = 2, .allow_nobody = 1};
    const char *labels[DGJ_MAX_LABELS];
    ck_assert_uint_eq(dgj_labels(&ev, labels), 3);
    ck_assert_str_eq(labels[0], "planner");
    ck_assert_str_eq(labels[2], DGJ_NOBODY);
    ev.allow_nobody = 0;
    ck_assert_uint_eq(dgj_labels(&ev, labels), 2);
    ev.n_candidates = 1; /* one label is no choice */
    ck_assert_uint_eq(dgj_labels(&ev, labels), 0);
    dgj_candidate dup[] = {{"a", NULL}, {"a", NULL}};
    ev = (dgj_evidence){.candidates = dup, .n_candidates = 2};
    ck_assert_uint_eq(dgj_labels(&ev, labels), 0);
    dgj_candidate named_nobody[] = {{"a", NULL}, {DGJ_NOBODY, NULL}};
    ev = (dgj_evidence){.candidates = named_nobody, .n_candidates = 2};
    ck_assert_uint_eq(dgj_labels(&ev, labels), 0);
}
END_TEST

START_TEST(test_context_is_bounded)
{
    char long_text[2000];
    memset(long_text, 'x', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    dgj_message m[8];
    char texts[8][16];
    for (int i = 0; i < 8; i++) {
        snprintf(texts[i], sizeof texts[i], "msg-%d\nnext", i);
        m[i] = (dgj_message){.author = "human", .text = texts[i]};
    }
    m[7].text = long_text;
    dgj_candidate c[] = {{"planner", "plans the work"}, {"coder", NULL}};
    dgj_evidence ev = {.messages = m, .n_messages = 8, .candidates = c, .n_candidates = 2};
    char *ctx = dgj_context(&ev);
    ck_assert_ptr_nonnull(ctx);
    /* The oldest two are out; newlines in a message do not break lines. */
    ck_assert_ptr_null(strstr(ctx, "msg-0"));
    ck_assert_ptr_null(strstr(ctx, "msg-1"));
    ck_assert_ptr_nonnull(strstr(ctx, "human: msg-2 next"));
    ck_assert_ptr_nonnull(strstr(ctx, "- planner: plans the work"));
    ck_assert_ptr_nonnull(strstr(ctx, "- coder: (no role given)"));
    /* The long one is cut to DGJ_MESSAGE_CHARS characters. */
    const char *x = strstr(ctx, "xxx");
    ck_assert_ptr_nonnull(x);
    ck_assert_uint_eq(strspn(x, "x"), DGJ_MESSAGE_CHARS);
    ck_assert_ptr_nonnull(strstr(x, "...\n"));
    free(ctx);
}
END_TEST

/* ---- answers ------------------------------------------------------------------- */

static const char *const LABELS[] = {"planner", "reviewer", DGJ_NOBODY};

static int parse(const char *text, dgj_answer *a, char *err)
{
    json_t *o = json_loads(text, 0, NULL);
    int rc = dgj_parse_answer(o, LABELS, 3, a, err, 256);
    json_decref(o);
    return rc;
}

START_TEST(test_answer_parser)
{
    dgj_answer a;
    char err[256];
    ck_assert_int_eq(
        parse("{\"label\":\"reviewer\",\"probability\":0.82,\"source\":\"s\",\"tokensIn\":5}", &a,
              err),
        DG_OK);
    ck_assert_str_eq(a.label, "reviewer");
    ck_assert(a.probability > 0.81 && a.probability < 0.83);
    ck_assert_str_eq(a.source, "s");
    ck_assert_int_eq(a.tokens_in, 5);
    ck_assert_int_eq(a.tokens_out, -1);
    ck_assert_int_eq(parse("{\"label\":\"coder\",\"probability\":0.5}", &a, err), DG_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "\"label\""));
    ck_assert_int_eq(parse("{\"label\":\"planner\",\"probability\":1.5}", &a, err), DG_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "\"probability\""));
    ck_assert_int_eq(parse("{\"label\":\"planner\"}", &a, err), DG_ERR_INVALID);
    ck_assert_int_eq(parse("{\"label\":1,\"probability\":0.5}", &a, err), DG_ERR_INVALID);
    ck_assert_int_eq(parse("{\"label\":\"planner\",\"probability\":0.5,\"tokensIn\":-1}", &a, err),
                     DG_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "\"tokensIn\""));
    ck_assert_int_eq(parse("[1]", &a, err), DG_ERR_INVALID);
    ck_assert_int_eq(dgj_parse_answer(NULL, LABELS, 3, &a, err, sizeof err), DG_ERR_INVALID);
}
END_TEST

START_TEST(test_chat_completion_parser)
{
    dgj_answer a;
    char err[256];
    const char *ok = "{\"model\":\"m1\",\"choices\":[{\"message\":{\"content\":\"Sure. ```json\\n"
                     "{\\\"label\\\": \\\"nobody\\\", \\\"probability\\\": 0.9}\\n```\"}}],"
                     "\"usage\":{\"prompt_tokens\":210,\"completion_tokens\":12}}";
    ck_assert_int_eq(dgj_parse_chat_completion(ok, strlen(ok), LABELS, 3, &a, err, sizeof err),
                     DG_OK);
    ck_assert_str_eq(a.label, DGJ_NOBODY);
    ck_assert_int_eq(a.tokens_in, 210);
    ck_assert_int_eq(a.tokens_out, 12);
    ck_assert_str_eq(a.source, "openai:m1");
    const char *bad[] = {"",
                         "not json",
                         "{}",
                         "{\"choices\":[]}",
                         "{\"choices\":[{\"message\":{\"content\":\"planner\"}}]}",
                         "{\"choices\":[{\"message\":{\"content\":\"{broken\"}}]}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_int_eq(
            dgj_parse_chat_completion(bad[i], strlen(bad[i]), LABELS, 3, &a, err, sizeof err),
            DG_ERR_INVALID);
    json_t *req = dgj_chat_request("m", LABELS, 3, "Agents: ...");
    ck_assert_ptr_nonnull(req);
    ck_assert_str_eq(json_string_value(json_object_get(req, "model")), "m");
    const char *user = json_string_value(
        json_object_get(json_array_get(json_object_get(req, "messages"), 1), "content"));
    ck_assert_ptr_nonnull(strstr(user, "[\"planner\",\"reviewer\",\"nobody\"]"));
    ck_assert_ptr_nonnull(strstr(user, "Agents: ..."));
    json_decref(req);
}
END_TEST

/* ---- policy -------------------------------------------------------------------- */

START_TEST(test_policy_verdicts)
{
    dgj_answer a = {.label = "reviewer", .probability = 0.82};
    dg_judge_cause why;
    ck_assert_int_eq(dg_judge_verdict(DG_JUDGE_TAKEN, &a, 0.5, 1, &why), DG_JUDGE_CHOSE);
    ck_assert_int_eq(why, DG_JUDGE_TAKEN);
    /* Exactly at the threshold is taken; below it is not. */
    ck_assert_int_eq(dg_judge_verdict(DG_JUDGE_TAKEN, &a, 0.82, 1, &why), DG_JUDGE_CHOSE);
    ck_assert_int_eq(dg_judge_verdict(DG_JUDGE_TAKEN, &a, 0.83, 1, &why), DG_JUDGE_FALLBACK);
    ck_assert_int_eq(why, DG_JUDGE_LOW_CONFIDENCE);
    dgj_answer nobody = {.label = DGJ_NOBODY, .probability = 0.9};
    ck_assert_int_eq(dg_judge_verdict(DG_JUDGE_TAKEN, &nobody, 0.5, 1, &why), DG_JUDGE_ENDED);
    ck_assert_int_eq(dg_judge_verdict(DG_JUDGE_TAKEN, &nobody, 0.5, 0, &why), DG_JUDGE_FALLBACK);
    ck_assert_int_eq(why, DG_JUDGE_NOBODY_REFUSED);
    ck_assert_int_eq(dg_judge_verdict(DG_JUDGE_TIMED_OUT, &a, 0.5, 1, &why), DG_JUDGE_FALLBACK);
    ck_assert_int_eq(why, DG_JUDGE_TIMED_OUT);
    ck_assert_int_eq(dg_judge_cause_of(DG_OK, 0), DG_JUDGE_TAKEN);
    ck_assert_int_eq(dg_judge_cause_of(DG_ERR_IO, 1), DG_JUDGE_TIMED_OUT);
    ck_assert_int_eq(dg_judge_cause_of(DG_ERR_IO, 0), DG_JUDGE_FAILED);
    ck_assert_int_eq(dg_judge_cause_of(DG_ERR_INVALID, 0), DG_JUDGE_UNREADABLE);
    ck_assert_int_eq(dg_judge_cause_of(DG_ERR_UNSUPPORTED, 0), DG_JUDGE_UNSUPPORTED);
    for (int c = 0; c < DG_JUDGE_CAUSES; c++)
        ck_assert_str_ne(dg_judge_cause_name((dg_judge_cause)c), "?");
}
END_TEST

/* ---- the OpenAI-compatible client ---------------------------------------------- */

static fake_judge *F;

static void fake_setup(void)
{
    F = fake_judge_start();
    ck_assert_ptr_nonnull(F);
}

static void fake_teardown(void)
{
    fake_judge_release(F);
    fake_judge_stop(F);
    F = NULL;
}

static int ask(dgj_openai *c, long timeout_ms, dgj_answer *a, char *err)
{
    return dgj_openai_ask(c, LABELS, 3, "Agents: ...", timeout_ms, a, NULL, err, 256);
}

START_TEST(test_client_modes)
{
    dgj_openai *c = NULL;
    char err[256];
    ck_assert_int_eq(
        dgj_openai_new(fake_judge_url(F), "m", "sk-test-secret", NULL, NULL, &c, err, sizeof err),
        DG_OK);
    dgj_answer a;
    fake_judge_push(F, (fj_step){.kind = FJ_ANSWER, .label = "planner", .probability = 0.7});
    ck_assert_int_eq(ask(c, WAIT_MS, &a, err), DG_OK);
    ck_assert_str_eq(a.label, "planner");
    ck_assert_int_eq(a.tokens_in, 321);
    char *auth = fake_judge_last_auth(F);
    ck_assert_str_eq(auth, "Bearer sk-test-secret");
    free(auth);
    char *body = fake_judge_last_body(F);
    ck_assert_ptr_nonnull(strstr(body, "\"model\":\"m\""));
    free(body);
    /* A failure, garbage, an answer naming no label asked. */
    fake_judge_push(F, (fj_step){.kind = FJ_FAIL, .status = 500});
    ck_assert_int_eq(ask(c, WAIT_MS, &a, err), DG_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err, "500"));
    ck_assert_ptr_null(strstr(err, "sk-test-secret"));
    fake_judge_push(F, (fj_step){.kind = FJ_GARBAGE});
    ck_assert_int_eq(ask(c, WAIT_MS, &a, err), DG_ERR_INVALID);
    fake_judge_push(F, (fj_step){.kind = FJ_ANSWER, .label = "coder", .probability = 0.9});
    ck_assert_int_eq(ask(c, WAIT_MS, &a, err), DG_ERR_INVALID);
    /* Slow but in time. */
    fake_judge_push(
        F, (fj_step){.kind = FJ_ANSWER, .label = "reviewer", .probability = 0.6, .delay_ms = 200});
    ck_assert_int_eq(ask(c, WAIT_MS, &a, err), DG_OK);
    ck_assert_str_eq(a.label, "reviewer");
    /* A hang: the bound ends it. */
    fake_judge_push(F, (fj_step){.kind = FJ_ANSWER, .label = "planner", .hold = 1});
    int64_t latency = 0;
    ck_assert_int_eq(dgj_openai_ask(c, LABELS, 3, "x", 300, &a, &latency, err, sizeof err),
                     DG_ERR_IO);
    ck_assert_int_ge(latency, 250);
    ck_assert_ptr_nonnull(strstr(err, "no answer within"));
    dgj_openai_free(c);
    ck_assert_int_eq(dgj_openai_new("ftp://x", "m", NULL, NULL, NULL, &c, err, sizeof err),
                     DG_ERR_INVALID);
}
END_TEST

/* ---- the judge in the engine --------------------------------------------------- */

static tth H;
static int next_msg = 1;
static const char *const ABC[] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};

static void sleep_a_little(void)
{
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
}

static void start_with(const char *judge_extra)
{
    char extra[1024];
    snprintf(extra, sizeof extra,
             "\"turn\":{\"maxAgentMessages\":1000},\"admins\":[\"" TTH_HUMAN_UID "\"],"
             "\"judge\":{\"source\":\"openai\",\"baseUrl\":\"%s\",\"model\":\"m\"%s}",
             fake_judge_url(F), judge_extra ? judge_extra : ",\"timeoutMs\":20000");
    tth_start(&H, "channel", extra);
    atomic_store(&H.now_ms, (int64_t)time(NULL) * 1000);
}

static void engine_setup(void)
{
    fake_setup();
    start_with(NULL);
}

static void engine_teardown(void)
{
    fake_judge_release(F);
    tth_free(&H);
    fake_teardown();
}

static json_t *actx(const char *agent, const char *run_id)
{
    char key[256];
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "agentId", agent, "sessionKey",
                     tth_session_key(key, sizeof key, agent, CH1, NULL), "channelId", CH1,
                     "messageProvider", "discord", "runId", run_id);
}

/* before_agent_reply of a new run of agent: 1 claimed (*reason set, may
 * be NULL), 0 not. */
static int claim(const char *agent, char *reason, size_t cap)
{
    static int run = 1;
    char id[32];
    snprintf(id, sizeof id, "run-%d", run++);
    json_t *ctx = actx(agent, id);
    json_t *ev = json_pack("{s:s}", "cleanedBody", "hello");
    json_t *r = NULL;
    ck_assert_int_eq(tth_call(&H, "before_agent_reply", ev, ctx, &r), OC_OK);
    int claimed = r && json_is_true(json_object_get(r, "handled"));
    if (reason && cap)
        snprintf(reason, cap, "%s", claimed ? json_string_value(json_object_get(r, "reason")) : "");
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return claimed;
}

static void human_says(const char *text, const char *const *mentions)
{
    char id[24];
    snprintf(id, sizeof id, "4%017d", next_msg++);
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, id, TTH_HUMAN_UID, 0, text, mentions), OC_OK);
}

/* The three agents in the channel's order (each seen once, asleep). */
static void join_abc(void)
{
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_ge(tth_resolve(&H, ABC[i], CH1, NULL), 0);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(tth_resolve(&H, ABC[i], CH1, NULL), 1); /* managed, asleep */
}

/* 1 when a transition of CH1 has a cause holding needle. */
static int has_cause(const char *needle)
{
    dg_plugin *p = tth_plugin(&H);
    dg_transition *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_store_begin(p->store), DG_OK);
    int rc = dg_store_transitions_list(p->store, CH1, NULL, 64, &v, &n);
    dg_store_rollback(p->store);
    ck_assert_int_eq(rc, DG_OK);
    int found = 0;
    for (size_t i = 0; i < n && !found; i++)
        found = v[i].cause && strstr(v[i].cause, needle) != NULL;
    dg_transitions_free(v, n);
    return found;
}

static int wait_cause(const char *needle)
{
    for (int i = 0; i < WAIT_MS / 5; i++) {
        if (has_cause(needle))
            return 1;
        sleep_a_little();
    }
    return 0;
}

/* 1 when the outbox holds a bare mention of agent. */
static int mention_queued(const char *agent)
{
    char want[64];
    snprintf(want, sizeof want, "<@%s>", tth_uid(agent));
    int n = tth_outbox_count(&H, CH1);
    int found = 0;
    for (int i = 0; i < n && !found; i++) {
        char *c = tth_outbox_content(&H, CH1, i, NULL);
        found = c && strcmp(c, want) == 0;
        free(c);
    }
    return found;
}

static int count_in_log(const char *needle)
{
    int n = 0;
    pthread_mutex_lock(&H.mu);
    for (const char *s = H.log; s && (s = strstr(s, needle)); s++)
        n++;
    pthread_mutex_unlock(&H.mu);
    return n;
}

/* The judge's worker logs through the plugin's log pump: its lines come
 * a little after the change they tell of. How many there are then. */
static int wait_log(const char *needle)
{
    for (int i = 0; i < WAIT_MS / 5 && count_in_log(needle) == 0; i++)
        sleep_a_little();
    return count_in_log(needle);
}

static void wait_idle(void)
{
    dg_judge *j = tth_plugin(&H)->judge;
    for (int i = 0; i < WAIT_MS / 5; i++) {
        dg_judge_stats st;
        dg_judge_get_stats(j, &st);
        if (st.chose + st.ended + st.fell_back >= st.asked && !dg_judge_deciding(j, "conv:" CH1) &&
            (i > 0))
            return;
        sleep_a_little();
    }
}

START_TEST(test_judge_chooses_for_human_message)
{
    join_abc();
    fake_judge_push(F,
                    (fj_step){.kind = FJ_ANSWER, .label = "bravo", .probability = 0.9, .hold = 1});
    human_says("what should we change first?", NULL);
    ck_assert(fake_judge_wait_requests(F, 1, WAIT_MS));
    /* While it decides every run is claimed, the order's first too. */
    char reason[512];
    ck_assert_int_eq(claim(TTH_ALPHA, reason, sizeof reason), 1);
    ck_assert_ptr_nonnull(strstr(reason, "the chair is deciding who speaks next"));
    ck_assert_int_eq(claim(TTH_BRAVO, reason, sizeof reason), 1);
    char *body = fake_judge_last_body(F);
    ck_assert_ptr_nonnull(strstr(body, "[\\\"alpha\\\",\\\"bravo\\\",\\\"charlie\\\"]"));
    ck_assert_ptr_null(strstr(body, "nobody\\\"]")); /* a human waits: no "nobody" */
    ck_assert_ptr_nonnull(strstr(body, "human: what should we change first?"));
    free(body);
    fake_judge_release(F);
    ck_assert(wait_cause("judge chose bravo, p 0.90"));
    ck_assert(mention_queued(TTH_BRAVO));
    ck_assert(!mention_queued(TTH_ALPHA));
    /* bravo's run goes to its model; alpha's does not. */
    ck_assert_int_eq(claim(TTH_ALPHA, NULL, 0), 1);
    ck_assert_int_eq(claim(TTH_BRAVO, NULL, 0), 0);
}
END_TEST

START_TEST(test_judge_ends_round_after_an_answer)
{
    join_abc();
    fake_judge_push(F, (fj_step){.kind = FJ_ANSWER, .label = "alpha", .probability = 0.8});
    human_says("a question", NULL);
    ck_assert(wait_cause("judge chose alpha"));
    fake_judge_push(F, (fj_step){.kind = FJ_ANSWER, .label = "nobody", .probability = 0.95});
    ck_assert_int_eq(tth_run(&H, TTH_ALPHA, CH1, NULL, "here is my answer", "499"), 1);
    ck_assert(wait_cause("judge ended the round, p 0.95"));
    char *body = fake_judge_last_body(F);
    ck_assert_ptr_nonnull(strstr(body, "[\\\"bravo\\\",\\\"charlie\\\",\\\"nobody\\\"]"));
    free(body);
    /* Nobody is woken; every run of the scope rests. */
    ck_assert(!mention_queued(TTH_BRAVO));
    ck_assert_int_eq(tth_resolve(&H, TTH_BRAVO, CH1, NULL), 1);
    ck_assert_int_eq(tth_resolve(&H, TTH_CHARLIE, CH1, NULL), 1);
}
END_TEST

/* The human message had its agent's run once one agent passed on it: the
 * judge may end the round then, instead of every agent passing in turn. */
START_TEST(test_a_pass_lets_the_judge_end_the_round)
{
    join_abc();
    fake_judge_push(F, (fj_step){.kind = FJ_ANSWER, .label = "alpha", .probability = 0.8});
    fake_judge_push(F, (fj_step){.kind = FJ_ANSWER, .label = "nobody", .probability = 0.9});
    human_says("a question", NULL);
    ck_assert(wait_cause("judge chose alpha"));
    ck_assert_int_eq(tth_run(&H, TTH_ALPHA, CH1, NULL, "NO_REPLY", "496"), 0);
    ck_assert(wait_cause("judge ended the round, p 0.90"));
    char *body = fake_judge_last_body(F);
    ck_assert_ptr_nonnull(strstr(body, "[\\\"bravo\\\",\\\"charlie\\\",\\\"nobody\\\"]"));
    free(body);
    ck_assert(!mention_queued(TTH_BRAVO));
}
END_TEST

START_TEST(test_failure_falls_back_logged_once)
{
    join_abc();
    fake_judge_default(F, (fj_step){.kind = FJ_FAIL, .status = 500});
    human_says("a question", NULL);
    ck_assert(wait_cause("judge fell back (failed): today's order hands the turn to alpha"));
    ck_assert(mention_queued(TTH_ALPHA));
    /* alpha passes: the judge is asked again and fails again. */
    ck_assert_int_eq(tth_run(&H, TTH_ALPHA, CH1, NULL, "NO_REPLY", "498"), 0);
    ck_assert(wait_cause("today's order hands the turn to bravo"));
    ck_assert_int_eq(wait_log("judge: failed"), 1);
}
END_TEST

START_TEST(test_low_confidence_falls_back)
{
    join_abc();
    fake_judge_push(F, (fj_step){.kind = FJ_ANSWER, .label = "charlie", .probability = 0.2});
    human_says("a question", NULL);
    ck_assert(
        wait_cause("judge fell back (low confidence): today's order hands the turn to alpha"));
    ck_assert(mention_queued(TTH_ALPHA));
    ck_assert_int_eq(wait_log("judge: low confidence (answer charlie, p 0.20)"), 1);
}
END_TEST

START_TEST(test_garbage_falls_back)
{
    join_abc();
    fake_judge_push(F, (fj_step){.kind = FJ_GARBAGE});
    human_says("a question", NULL);
    ck_assert(wait_cause("judge fell back (unreadable answer)"));
    ck_assert(mention_queued(TTH_ALPHA));
}
END_TEST

START_TEST(test_timeout_falls_back)
{
    tth_free(&H);
    start_with(",\"timeoutMs\":300");
    join_abc();
    fake_judge_push(F,
                    (fj_step){.kind = FJ_ANSWER, .label = "bravo", .probability = 0.9, .hold = 1});
    human_says("a question", NULL);
    ck_assert(wait_cause("judge fell back (timed out)"));
    ck_assert(mention_queued(TTH_ALPHA));
    ck_assert_int_eq(claim(TTH_ALPHA, NULL, 0), 0);
}
END_TEST

START_TEST(test_slow_answer_in_time_is_taken)
{
    join_abc();
    fake_judge_push(
        F, (fj_step){.kind = FJ_ANSWER, .label = "charlie", .probability = 0.7, .delay_ms = 300});
    human_says("a question", NULL);
    ck_assert(wait_cause("judge chose charlie, p 0.70"));
}
END_TEST

START_TEST(test_mention_is_not_asked_about)
{
    join_abc();
    const char *m[] = {TTH_CHARLIE_UID, NULL};
    human_says("<@" TTH_CHARLIE_UID "> your view?", m);
    dg_judge_stats st;
    dg_judge_get_stats(tth_plugin(&H)->judge, &st);
    ck_assert_int_eq(st.asked, 0);
    ck_assert_int_eq(claim(TTH_CHARLIE, NULL, 0), 0);
    ck_assert_int_eq(claim(TTH_ALPHA, NULL, 0), 1);
    ck_assert_int_eq(fake_judge_requests(F), 0);
}
END_TEST

START_TEST(test_admin_wake_overrules_the_judge)
{
    join_abc();
    fake_judge_push(F,
                    (fj_step){.kind = FJ_ANSWER, .label = "bravo", .probability = 0.9, .hold = 1});
    human_says("a question", NULL);
    ck_assert(fake_judge_wait_requests(F, 1, WAIT_MS));
    const char *m[] = {TTH_CHARLIE_UID, NULL};
    human_says("!dirigent wake <@" TTH_CHARLIE_UID ">", m);
    ck_assert_int_eq(dg_judge_deciding(tth_plugin(&H)->judge, "conv:" CH1), 0);
    fake_judge_release(F);
    wait_idle();
    ck_assert(!has_cause("judge chose bravo"));
    ck_assert_int_eq(claim(TTH_CHARLIE, NULL, 0), 0);
    ck_assert_int_eq(claim(TTH_BRAVO, NULL, 0), 1);
}
END_TEST

START_TEST(test_restart_while_deciding_keeps_the_order)
{
    join_abc();
    fake_judge_push(F,
                    (fj_step){.kind = FJ_ANSWER, .label = "bravo", .probability = 0.9, .hold = 1});
    human_says("a question", NULL);
    ck_assert(fake_judge_wait_requests(F, 1, WAIT_MS));
    fake_judge_release(F); /* the stopping judge's question ends either way */
    tth_restart(&H);
    ck_assert_int_eq(dg_judge_deciding(tth_plugin(&H)->judge, "conv:" CH1), 0);
    /* Today's order: whatever the old verdict, it is not applied after the
     * restart unless it came first; the speaker's run counts. */
    int alpha = claim(TTH_ALPHA, NULL, 0), bravo = claim(TTH_BRAVO, NULL, 0);
    ck_assert_int_eq(alpha + bravo, 1);
}
END_TEST

START_TEST(test_ledger_counts_every_call)
{
    join_abc();
    fake_judge_push(F, (fj_step){.kind = FJ_ANSWER, .label = "alpha", .probability = 0.8});
    fake_judge_push(F, (fj_step){.kind = FJ_FAIL, .status = 502});
    human_says("a question", NULL);
    ck_assert(wait_cause("judge chose alpha"));
    ck_assert_int_eq(tth_run(&H, TTH_ALPHA, CH1, NULL, "NO_REPLY", "497"), 0);
    ck_assert(wait_cause("judge fell back (failed)"));
    dg_plugin *p = tth_plugin(&H);
    dg_cost_filter f = {.channel_id = CH1};
    dg_judge_totals jt;
    ck_assert_int_eq(dg_store_begin(p->store), DG_OK);
    ck_assert_int_eq(dg_store_judge_sum(p->store, &f, &jt), DG_OK);
    dg_cost_report *r = NULL;
    ck_assert_int_eq(dg_cost_report_load(p->store, &f, &p->cfg, &r), DG_OK);
    dg_store_rollback(p->store);
    ck_assert_int_eq(jt.calls, 2);
    ck_assert_int_eq(jt.fell_back, 1);
    ck_assert_int_eq(jt.tokens_in, 321); /* the fake's usage, the failure reports none */
    ck_assert_int_eq(jt.tokens_out, 9);
    char *text = dg_cost_report_text(r, 0);
    ck_assert_ptr_nonnull(strstr(text, "judge: 2 calls, 321 tokens in / 9 out"));
    ck_assert_ptr_nonnull(strstr(text, "1 fell back"));
    free(text);
    char line[512];
    ck_assert_ptr_nonnull(
        strstr(dg_cost_report_summary(r, line, sizeof line), "; judge 2 calls, 330 tokens"));
    json_t *j = dg_cost_report_json(r);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "judge"), "calls")), 2);
    json_decref(j);
    dg_cost_report_free(r);
}
END_TEST

/* 1 when a queued moderator message of CH1 holds needle. */
static int outbox_has(const char *needle)
{
    int n = tth_outbox_count(&H, CH1), found = 0;
    for (int i = 0; i < n && !found; i++) {
        char *c = tth_outbox_content(&H, CH1, i, NULL);
        found = c && strstr(c, needle) != NULL;
        free(c);
    }
    return found;
}

START_TEST(test_status_names_the_judge)
{
    join_abc();
    fake_judge_push(F,
                    (fj_step){.kind = FJ_ANSWER, .label = "bravo", .probability = 0.9, .hold = 1});
    human_says("a question", NULL);
    ck_assert(fake_judge_wait_requests(F, 1, WAIT_MS));
    human_says("!dirigent status", NULL);
    char want[160];
    snprintf(want, sizeof want, "judge: openai (model m at %s), timeout 20000 ms",
             fake_judge_url(F));
    ck_assert(outbox_has(want));
    ck_assert(outbox_has("deciding who speaks next now"));
    /* The command is no speech: the judge was asked once. */
    dg_judge_stats st;
    dg_judge_get_stats(tth_plugin(&H)->judge, &st);
    ck_assert_int_eq(st.asked, 1);
}
END_TEST

/* ---- the host's decision models (ABI 1.2) --------------------------------------- */

static json_t *last_request;

static int decide_charlie(void *ud, const json_t *request, json_t **answer)
{
    (void)ud;
    json_decref(last_request);
    last_request = json_deep_copy(request);
    *answer = json_pack("{s:s, s:f, s:s, s:i, s:i}", "label", "charlie", "probability", 0.8,
                        "source", "test-provider", "tokensIn", 40, "tokensOut", 2);
    return OC_OK;
}

START_TEST(test_host_decide)
{
    tth_start_decide(&H, "\"judge\":{\"source\":\"host\",\"timeoutMs\":1234}", decide_charlie,
                     NULL);
    atomic_store(&H.now_ms, (int64_t)time(NULL) * 1000);
    ck_assert_ptr_nonnull(tth_plugin(&H)->judge);
    join_abc();
    human_says("a question", NULL);
    ck_assert(wait_cause("judge chose charlie, p 0.80 (test-provider"));
    ck_assert_int_eq(atomic_load(&H.decide_calls), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(last_request, "timeoutMs")), 1234);
    json_t *labels = json_object_get(last_request, "labels");
    ck_assert_uint_eq(json_array_size(labels), 3);
    ck_assert_str_eq(json_string_value(json_array_get(labels, 2)), TTH_CHARLIE);
    ck_assert_str_eq(json_string_value(json_object_get(last_request, "question")), DGJ_QUESTION);
    ck_assert(mention_queued(TTH_CHARLIE));
    json_decref(last_request);
    last_request = NULL;
    tth_free(&H);
}
END_TEST

START_TEST(test_host_without_decide_is_refused)
{
    tth_start(&H, "channel", "\"admins\":[\"" TTH_HUMAN_UID "\"],\"judge\":{\"source\":\"host\"}");
    atomic_store(&H.now_ms, (int64_t)time(NULL) * 1000);
    ck_assert_ptr_null(tth_plugin(&H)->judge);
    ck_assert_int_eq(count_in_log("this host has no decide (ABI 1.2"), 1);
    join_abc();
    human_says("!dirigent status", NULL);
    ck_assert(outbox_has("judge: none (today's order)"));
    tth_free(&H);
}
END_TEST

START_TEST(test_key_variable_must_be_set)
{
    fake_setup();
    unsetenv("DG_TEST_JUDGE_KEY");
    start_with(",\"apiKeyEnv\":\"DG_TEST_JUDGE_KEY\"");
    ck_assert_ptr_null(tth_plugin(&H)->judge);
    ck_assert_int_eq(count_in_log("judge.apiKeyEnv names DG_TEST_JUDGE_KEY"), 1);
    tth_free(&H);
    setenv("DG_TEST_JUDGE_KEY", "sk-from-env", 1);
    start_with(",\"apiKeyEnv\":\"DG_TEST_JUDGE_KEY\"");
    ck_assert_ptr_nonnull(tth_plugin(&H)->judge);
    join_abc();
    fake_judge_push(F, (fj_step){.kind = FJ_ANSWER, .label = "bravo", .probability = 0.9});
    human_says("a question", NULL);
    ck_assert(wait_cause("judge chose bravo"));
    char *auth = fake_judge_last_auth(F);
    ck_assert_str_eq(auth, "Bearer sk-from-env");
    free(auth);
    ck_assert_int_eq(count_in_log("sk-from-env"), 0);
    unsetenv("DG_TEST_JUDGE_KEY");
    tth_free(&H);
    fake_teardown();
}
END_TEST

/* The reference host's decide: the request checked as the ABI states it,
 * the scripted decision model of ocgw's config, its answers checked. */
START_TEST(test_reference_host_decide)
{
    och_host *h = och_host_new();
    ck_assert_ptr_nonnull(h);
    och_host_set_log(h, NULL, NULL, OC_LOG_ERROR + 1);
    json_t *req = json_pack("{s:s, s:[s,s,s], s:s, s:i}", "question", "who?", "labels", "a", "b",
                            "nobody", "context", "x", "timeoutMs", 2000);
    json_t *ans = NULL;
    ck_assert_int_eq(och_decide(h, req, &ans), OC_ERR_UNSUPPORTED); /* no model configured */
    json_t *cfg = json_loads("{\"decisions\":{\"answers\":[{\"label\":\"$first\","
                             "\"probability\":0.9},{\"label\":\"$nobody\",\"probability\":0.7},"
                             "{\"label\":\"zed\",\"probability\":0.7},{\"fail\":\"io\"},"
                             "{\"label\":\"a\",\"probability\":0.6,\"delayMs\":5000}]}}",
                             0, NULL);
    struct ocgw_decider *d = NULL;
    char err[256];
    ck_assert_int_eq(ocgw_decider_new(cfg, &d, err, sizeof err), 0);
    och_host_set_decide(h, ocgw_decide, d);
    ck_assert_int_eq(och_decide(h, req, &ans), OC_OK);
    ck_assert_str_eq(json_string_value(json_object_get(ans, "label")), "a");
    json_decref(ans);
    ck_assert_int_eq(och_decide(h, req, &ans), OC_OK);
    ck_assert_str_eq(json_string_value(json_object_get(ans, "label")), "nobody");
    json_decref(ans);
    ck_assert_int_eq(och_decide(h, req, &ans), OC_ERR_IO); /* "zed" was not asked */
    ck_assert_ptr_null(ans);
    ck_assert_int_eq(och_decide(h, req, &ans), OC_ERR_IO);
    json_object_set_new(req, "timeoutMs", json_integer(50));
    ck_assert_int_eq(och_decide(h, req, &ans), OC_ERR_IO); /* later than the caller waits */
    ck_assert_int_eq(och_decide(h, req, &ans), OC_ERR_IO); /* the script is used up */
    /* Malformed requests: one label, duplicates, no timeout. */
    json_t *bad1 = json_pack("{s:s, s:[s], s:s, s:i}", "question", "q", "labels", "a", "context",
                             "", "timeoutMs", 10);
    json_t *bad2 = json_pack("{s:s, s:[s,s], s:s, s:i}", "question", "q", "labels", "a", "a",
                             "context", "", "timeoutMs", 10);
    json_t *bad3 =
        json_pack("{s:s, s:[s,s], s:s}", "question", "q", "labels", "a", "b", "context", "");
    ck_assert_int_eq(och_decide(h, bad1, &ans), OC_ERR_INVALID);
    ck_assert_int_eq(och_decide(h, bad2, &ans), OC_ERR_INVALID);
    ck_assert_int_eq(och_decide(h, bad3, &ans), OC_ERR_INVALID);
    json_decref(bad1);
    json_decref(bad2);
    json_decref(bad3);
    json_t *wrong = json_loads("{\"decisions\":{\"answers\":[{\"label\":\"a\","
                               "\"probability\":2}]}}",
                               0, NULL);
    struct ocgw_decider *d2 = NULL;
    ck_assert_int_eq(ocgw_decider_new(wrong, &d2, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "decisions.answers[0]: \"probability\""));
    json_decref(wrong);
    json_decref(req);
    json_decref(cfg);
    och_host_free(h);
    ocgw_decider_free(d);
}
END_TEST

Suite *make_judge_suite(void)
{
    Suite *s = suite_create("judge");
    TCase *unit = tcase_create("judge_unit");
    tcase_add_test(unit, test_labels_and_bounds);
    tcase_add_test(unit, test_context_is_bounded);
    tcase_add_test(unit, test_answer_parser);
    tcase_add_test(unit, test_chat_completion_parser);
    tcase_add_test(unit, test_policy_verdicts);
    suite_add_tcase(s, unit);
    TCase *client = tcase_create("judge_client");
    tcase_add_checked_fixture(client, fake_setup, fake_teardown);
    tcase_set_timeout(client, 60);
    tcase_add_test(client, test_client_modes);
    suite_add_tcase(s, client);
    TCase *engine = tcase_create("judge_engine");
    tcase_add_checked_fixture(engine, engine_setup, engine_teardown);
    tcase_set_timeout(engine, 90);
    tcase_add_test(engine, test_judge_chooses_for_human_message);
    tcase_add_test(engine, test_judge_ends_round_after_an_answer);
    tcase_add_test(engine, test_a_pass_lets_the_judge_end_the_round);
    tcase_add_test(engine, test_failure_falls_back_logged_once);
    tcase_add_test(engine, test_low_confidence_falls_back);
    tcase_add_test(engine, test_garbage_falls_back);
    tcase_add_test(engine, test_timeout_falls_back);
    tcase_add_test(engine, test_slow_answer_in_time_is_taken);
    tcase_add_test(engine, test_mention_is_not_asked_about);
    tcase_add_test(engine, test_admin_wake_overrules_the_judge);
    tcase_add_test(engine, test_restart_while_deciding_keeps_the_order);
    tcase_add_test(engine, test_ledger_counts_every_call);
    tcase_add_test(engine, test_status_names_the_judge);
    suite_add_tcase(s, engine);
    TCase *host = tcase_create("judge_host");
    tcase_set_timeout(host, 90);
    tcase_add_test(host, test_host_decide);
    tcase_add_test(host, test_host_without_decide_is_refused);
    tcase_add_test(host, test_key_variable_must_be_set);
    tcase_add_test(host, test_reference_host_decide);
    suite_add_tcase(s, host);
    return s;
}
