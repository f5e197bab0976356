/*
 * check_budget.c -- the cost ledger as the hooks fill it, and the budgets'
 * breaker: each budget kind reached trips it once (one notice), every run
 * after it is claimed and nothing of an agent is posted, a human message
 * does not lift it, `!dirigent resume` does, an hourly budget lifts at the
 * hour's end, and the breaker holds across a restart and in a second
 * instance on the same store. The plugin runs in the turn test host.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "openclaw/plugin.h"
#include "scope.h"
#include "store.h"
#include "store_cost.h"
#include "store_turns.h"
#include "testutil.h"
#include "turn_test_host.h"

#define CH1 "300000000000000001"
#define ADMIN_UID "200000000000000009"
#define HOUR_MS ((int64_t)3600 * 1000)

static tth H;
static int next_msg = 1;
static int next_run = 1;

static const char *const ABC[] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};

/* Start H with a budget (JSON members of `budget`, no braces). */
static void start_with(tth *h, const char *budget, const char *store)
{
    char *extra = NULL;
    ck_assert_int_ge(asprintf(&extra,
                              "\"turn\":{\"maxAgentMessages\":1000},\"admins\":[\"" ADMIN_UID
                              "\"],\"budget\":{%s}%s%s",
                              budget, store ? "," : "", store ? store : ""),
                     0);
    tth_start(h, "channel", extra);
    free(extra);
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

static void says_on(tth *h, const char *sender, int bot, const char *text, const char *id)
{
    ck_assert_int_eq(tth_msg(h, CH1, NULL, id, sender, bot, text, NULL), OC_OK);
}

static void human_says(const char *text)
{
    char id[24];
    says_on(&H, TTH_HUMAN_UID, 0, text, mid(id));
}

static json_t *actx(const char *agent, const char *run_id)
{
    char key[256];
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s}", "agentId", agent, "sessionKey",
                            tth_session_key(key, sizeof key, agent, CH1, NULL), "channelId", CH1,
                            "accountId", agent);
    if (run_id)
        json_object_set_new(ctx, "runId", json_string(run_id));
    return ctx;
}

/* before_agent_reply in h: 1 claimed, 0 let through, -1 error; the
 * reason into why (may be NULL). */
static int claim_on(tth *h, const char *agent, const char *run_id, char *why, size_t why_len)
{
    json_t *ctx = actx(agent, run_id);
    json_t *ev = json_pack("{s:s}", "cleanedBody", "hello");
    json_t *r = NULL;
    int rc = tth_call(h, "before_agent_reply", ev, ctx, &r);
    int out = rc != OC_OK ? -1 : r != NULL;
    if (why && why_len)
        snprintf(why, why_len, "%s", r ? json_string_value(json_object_get(r, "reason")) : "");
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return out;
}

static void usage_on(tth *h, const char *hook, const char *agent, const char *run_id, json_t *event)
{
    json_t *ctx = actx(agent, NULL);
    json_object_set_new(event, "runId", json_string(run_id));
    json_object_set_new(event, "model", json_string("m-big"));
    json_object_set_new(event, "provider", json_string("acme"));
    ck_assert_int_eq(tth_call(h, hook, event, ctx, NULL), OC_OK);
    json_decref(event);
    json_decref(ctx);
}

/* One run of agent in h as OpenClaw does it: the claim; when let through,
 * a model call with tokens (in, out), agent_end speaking, the reply sent
 * and delivered. Returns 1 when the agent spoke. *posted counts messages
 * of agents that were delivered. */
static int run_on(tth *h, const char *agent, long tin, long tout, int *posted)
{
    char run_id[32], id[24], why[300];
    snprintf(run_id, sizeof run_id, "run-%d", next_run++);
    tth_advance(h, 1);
    if (claim_on(h, agent, run_id, why, sizeof why) != 0) {
        if (getenv("BUDGET_TRACE"))
            fprintf(stderr, "%s claimed: %s\n", agent, why);
        return 0;
    }
    usage_on(h, "model_call_ended", agent, run_id, json_pack("{s:s}", "outcome", "completed"));
    usage_on(h, "llm_output", agent, run_id,
             json_pack("{s:{s:i, s:i}}", "usage", "input", (int)tin, "output", (int)tout));
    json_t *ctx = actx(agent, run_id);
    json_t *ev = json_pack("{s:s, s:s, s:i, s:b}", "runId", run_id, "output", "my point",
                           "toolCalls", 0, "success", 1);
    ck_assert_int_eq(tth_call(h, "agent_end", ev, ctx, NULL), OC_OK);
    json_decref(ev);
    json_decref(ctx);
    if (tth_send(h, agent, CH1, NULL, "my point") != 0)
        return 0;
    says_on(h, tth_uid(agent), 1, "my point", mid(id));
    if (posted)
        (*posted)++;
    return 1;
}

/* Every agent of ABC tries once, in order. Returns how many spoke. */
static int round_on(tth *h, long tin, long tout, int *posted)
{
    int spoke = 0;
    for (int i = 0; i < 3; i++)
        spoke += run_on(h, ABC[i], tin, tout, posted);
    return spoke;
}

/* The three agents take part in CH1 (their first runs, before any human
 * message: the budgets count from one a moment later). */
static void join3(tth *h)
{
    for (int i = 0; i < 3; i++)
        ck_assert_int_ge(claim_on(h, ABC[i], NULL, NULL, 0), 0);
    tth_advance(h, 10);
}

static dg_turn_state peek_on(tth *h)
{
    dg_scope sc;
    ck_assert_int_eq(dg_scope_conversation(CH1, &sc), OC_OK);
    dg_turn_state st;
    dg_store *s = tth_plugin(h)->store;
    ck_assert_int_eq(dg_store_begin(s), OC_OK);
    ck_assert_int_eq(dg_store_turns_scope_load(s, &sc, &st, NULL), OC_OK);
    dg_store_rollback(s);
    return st;
}

static dg_cost_totals ledger_on(tth *h)
{
    dg_store *s = tth_plugin(h)->store;
    dg_cost_filter f = {.channel_id = CH1};
    dg_cost_totals t;
    ck_assert_int_eq(dg_store_begin(s), OC_OK);
    ck_assert_int_eq(dg_store_cost_sum(s, &f, &t), OC_OK);
    dg_store_rollback(s);
    return t;
}

/* Outbox rows of CH1 whose text holds needle. */
static int notices(tth *h, const char *needle)
{
    int n = 0, all = tth_outbox_count(h, CH1);
    for (int i = 0; i < all; i++) {
        char *c = tth_outbox_content(h, CH1, i, NULL);
        n += c && strstr(c, needle) != NULL;
        free(c);
    }
    return n;
}

#define BUDGET_NOTICE "Budget reached here"

START_TEST(test_ledger_records_decisions_and_usage)
{
    start_with(&H, "", NULL);
    join3(&H);
    human_says("thoughts?");
    dg_cost_totals before = ledger_on(&H);
    ck_assert_int_eq(claim_on(&H, TTH_BRAVO, "run-b", NULL, 0), 1);
    ck_assert_int_eq(claim_on(&H, TTH_CHARLIE, "run-c", NULL, 0), 1);
    ck_assert_int_eq(run_on(&H, TTH_ALPHA, 1000, 50, NULL), 1);
    dg_cost_totals t = ledger_on(&H);
    /* alpha ran (granted, one call, its tokens); bravo and charlie were
     * claimed. */
    ck_assert_int_eq(t.granted - before.granted, 1);
    ck_assert_int_eq(t.claimed - before.claimed, 2);
    ck_assert_int_eq(t.model_calls, 1);
    ck_assert_int_eq(t.tokens_in, 1000);
    ck_assert_int_eq(t.tokens_out, 50);
    /* A report that is not a count changes nothing and says which field. */
    json_t *ctx = actx(TTH_ALPHA, NULL);
    json_t *ev = json_pack("{s:s, s:{s:i}}", "runId", "run-1", "usage", "input", -5);
    ck_assert_int_eq(tth_call(&H, "llm_output", ev, ctx, NULL), OC_ERR_INVALID);
    ck_assert(tth_log_has(&H, "event.usage must be an object of token counts"));
    json_decref(ev);
    ev = json_pack("{s:s}", "model", "m");
    ck_assert_int_eq(tth_call(&H, "model_call_ended", ev, ctx, NULL), OC_ERR_INVALID);
    ck_assert(tth_log_has(&H, "event.runId is missing"));
    json_decref(ev);
    json_decref(ctx);
    t = ledger_on(&H);
    ck_assert_int_eq(t.model_calls, 1);
    ck_assert_int_eq(t.tokens_in, 1000);
    /* `!dirigent cost` answers with the channel's report, in one message. */
    char id[24];
    says_on(&H, ADMIN_UID, 0, "!dirigent cost", mid(id));
    int rows = tth_outbox_count(&H, CH1);
    char *reply = tth_outbox_content(&H, CH1, rows - 1, NULL);
    ck_assert_ptr_nonnull(reply);
    ck_assert_msg(strstr(reply, "cost of this channel, the last 7 days") &&
                      strstr(reply, "1,000") && strlen(reply) < 2000,
                  "%s", reply);
    free(reply);
}
END_TEST

/* Two agents that answer each other forever (the loop guard set high):
 * the budget of four turns per human message stops them at four, with one
 * notice and nothing of theirs posted after it; a human message does not
 * lift it, `!dirigent resume` does. */
START_TEST(test_turns_per_human_message_stops_a_runaway_exchange)
{
    start_with(&H, "\"turnsPerHumanMessage\":4", NULL);
    join3(&H);
    human_says("argue it out");
    int64_t granted_before = ledger_on(&H).granted;
    int posted = 0;
    for (int i = 0; i < 6; i++)
        round_on(&H, 10, 10, &posted);
    ck_assert_int_eq(posted, 4);
    ck_assert_int_eq(notices(&H, BUDGET_NOTICE), 1);
    ck_assert_int_eq(ledger_on(&H).granted - granted_before, 4);
    dg_turn_state st = peek_on(&H);
    ck_assert_int_eq(st.budget, 1); /* DG_BUDGET_TURNS_PER_MESSAGE */
    ck_assert_int_eq(st.budget_until_ms, 0);
    /* The agent whose turn it is hears why. */
    int told = 0;
    for (int i = 0; i < 3; i++) {
        char why[300], run_id[16];
        snprintf(run_id, sizeof run_id, "run-x%d", i);
        ck_assert_int_eq(claim_on(&H, ABC[i], run_id, why, sizeof why), 1);
        told += strstr(why, "budget of this conversation is reached") != NULL;
    }
    ck_assert_int_eq(told, 3); /* every run of the held scope */
    /* `!dirigent status` says what holds it. */
    char sid[24];
    says_on(&H, ADMIN_UID, 0, "!dirigent status", mid(sid));
    ck_assert_int_eq(notices(&H, "speaker: held by budget.turnsPerHumanMessage"), 1);
    /* A human message does not lift it. */
    human_says("please go on");
    ck_assert_int_eq(round_on(&H, 10, 10, &posted), 0);
    ck_assert_int_eq(posted, 4);
    ck_assert_int_eq(notices(&H, BUDGET_NOTICE), 1);
    /* Someone who is not an admin cannot lift it either. */
    human_says("!dirigent resume");
    ck_assert_int_eq(round_on(&H, 10, 10, &posted), 0);
    /* The admin's resume does: the budget counts from the latest human
     * message again, which was the resume's. */
    char id[24];
    says_on(&H, ADMIN_UID, 0, "!dirigent resume", mid(id));
    ck_assert_int_eq(peek_on(&H).budget, 0);
    ck_assert_int_ge(notices(&H, "resumed: the budget"), 1);
    ck_assert_int_ge(round_on(&H, 10, 10, &posted), 1);
    ck_assert_int_gt(posted, 4);
}
END_TEST

/* Tokens per hour: reached by a report, not by a turn; lifted by the
 * hour's end with no command. */
START_TEST(test_tokens_per_hour_trips_on_usage_and_lifts_at_the_hour)
{
    start_with(&H, "\"tokensPerHour\":1000", NULL);
    int64_t now = atomic_load(&H.now_ms);
    tth_advance(&H, HOUR_MS - now % HOUR_MS + 1000); /* a second into an hour */
    join3(&H);
    human_says("go");
    int posted = 0;
    ck_assert_int_eq(run_on(&H, TTH_ALPHA, 400, 100, &posted), 1); /* 500 */
    ck_assert_int_eq(peek_on(&H).budget, 0);
    ck_assert_int_eq(run_on(&H, TTH_BRAVO, 400, 100, &posted), 1); /* 1000: reached */
    dg_turn_state st = peek_on(&H);
    ck_assert_int_eq(st.budget, 4); /* DG_BUDGET_TOKENS_PER_HOUR */
    ck_assert_int_eq(st.budget_until_ms % HOUR_MS, 0);
    ck_assert_int_eq(notices(&H, BUDGET_NOTICE), 1);
    ck_assert_int_eq(notices(&H, "until "), 1);
    ck_assert_int_eq(round_on(&H, 10, 10, &posted), 0);
    ck_assert_int_eq(posted, 2);
    /* The next hour: the first run lifts it and goes through. */
    tth_advance(&H, HOUR_MS);
    human_says("next hour");
    ck_assert_int_ge(round_on(&H, 10, 10, &posted), 1);
    ck_assert_int_eq(peek_on(&H).budget, 0);
    ck_assert_int_eq(notices(&H, BUDGET_NOTICE), 1);
}
END_TEST

/* Turns per day, counted over the channel's runs today (alpha's first
 * run, alone in the channel, among them); a channel's own budget replaces
 * the default's. */
START_TEST(test_channel_budget_replaces_the_default)
{
    start_with(&H, "\"turnsPerDay\":100},\"channelBudgets\":{\"" CH1 "\":{\"turnsPerDay\":3}",
               NULL);
    join3(&H);
    human_says("go");
    int posted = 0;
    for (int i = 0; i < 3; i++)
        round_on(&H, 1, 1, &posted);
    ck_assert_int_eq(posted, 2);
    ck_assert_int_eq(peek_on(&H).budget, 5); /* DG_BUDGET_TURNS_PER_DAY */
    /* The notice names the key that set the limit. */
    ck_assert_int_eq(notices(&H, "`channelBudgets." CH1 ".turnsPerDay`"), 1);
    ck_assert_int_eq(notices(&H, "`budget.turnsPerDay`"), 0);
}
END_TEST

/* While a breaker holds, every run of the scope is claimed with the
 * budget's reason, the speaker's and the others' alike. */
START_TEST(test_every_run_of_a_held_scope_is_claimed_for_the_budget)
{
    start_with(&H, "\"turnsPerHour\":2", NULL); /* alpha's first run counts */
    join3(&H);
    human_says("go");
    int posted = 0;
    ck_assert_int_eq(run_on(&H, TTH_ALPHA, 1, 1, &posted), 1);
    human_says("and now?");
    for (int i = 0; i < 3; i++) {
        char why[300];
        ck_assert_int_eq(claim_on(&H, ABC[i], NULL, why, sizeof why), 1);
        ck_assert_msg(strstr(why, "a budget of this conversation is reached"), "%s: %s", ABC[i],
                      why);
    }
    ck_assert_int_ne(peek_on(&H).budget, 0);
}
END_TEST

/* A round that ends by itself at the limit owes no notice and holds
 * nothing: the next human message is answered. */
START_TEST(test_round_that_ends_at_the_limit_does_not_hold_the_next_question)
{
    start_with(&H, "\"turnsPerHumanMessage\":3", NULL);
    join3(&H);
    human_says("one question");
    int posted = 0;
    ck_assert_int_eq(run_on(&H, TTH_ALPHA, 1, 1, &posted), 1); /* answers: 1 */
    char run_id[32];
    for (int i = 1; i < 3; i++) { /* bravo and charlie pass: 2, 3 */
        snprintf(run_id, sizeof run_id, "pass-%d", i);
        ck_assert_int_eq(claim_on(&H, ABC[i], run_id, NULL, 0), 0);
        json_t *ctx = actx(ABC[i], run_id);
        json_t *ev = json_pack("{s:s, s:s, s:i, s:b}", "runId", run_id, "output", "NO_REPLY",
                               "toolCalls", 0, "success", 1);
        ck_assert_int_eq(tth_call(&H, "agent_end", ev, ctx, NULL), OC_OK);
        json_decref(ev);
        json_decref(ctx);
    }
    dg_turn_state st = peek_on(&H);
    ck_assert_int_eq(st.active, 0); /* alpha is not asked about its answer */
    ck_assert_int_eq(st.budget, 0);
    ck_assert_int_eq(notices(&H, BUDGET_NOTICE), 0);
    tth_advance(&H, 1);
    human_says("another question");
    ck_assert_int_eq(run_on(&H, TTH_ALPHA, 1, 1, &posted), 1);
    ck_assert_int_eq(posted, 2);
}
END_TEST

/* Every per-window kind, one row each: the budget that is reached is the
 * one the breaker names, after as many turns (or the run whose tokens
 * reach it) as the limit allows. An hour's or a day's turns count alpha's
 * first run too (alone in the channel, before the human message). */
START_TEST(test_each_window_kind_trips_its_breaker)
{
    static const struct {
        const char *budget;
        int kind; /* dg_budget_kind */
        long tin, tout;
        int posted; /* agent messages before the breaker holds */
    } rows[] = {
        {"\"turnsPerHumanMessage\":2", 1, 1, 1, 2}, {"\"tokensPerHumanMessage\":100", 2, 60, 50, 1},
        {"\"turnsPerHour\":3", 3, 1, 1, 2},         {"\"tokensPerHour\":100", 4, 60, 50, 1},
        {"\"turnsPerDay\":3", 5, 1, 1, 2},          {"\"tokensPerDay\":100", 6, 60, 50, 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        start_with(&H, rows[i].budget, NULL);
        /* Well inside an hour: the joins and the runs fall into one window. */
        int64_t now = atomic_load(&H.now_ms);
        tth_advance(&H, HOUR_MS - now % HOUR_MS + 1000);
        join3(&H);
        human_says("go");
        int posted = 0;
        for (int r = 0; r < 3; r++)
            round_on(&H, rows[i].tin, rows[i].tout, &posted);
        dg_turn_state st = peek_on(&H);
        ck_assert_msg(st.budget == rows[i].kind && posted == rows[i].posted,
                      "%s: breaker %d (want %d), %d posted (want %d)", rows[i].budget, st.budget,
                      rows[i].kind, posted, rows[i].posted);
        ck_assert_int_eq(notices(&H, BUDGET_NOTICE), 1);
        tth_free(&H);
    }
}
END_TEST

/* The breaker is turn state: a restart finds it, the notice is not
 * posted again, and a second instance on the same store claims too. */
START_TEST(test_breaker_survives_restart_and_holds_in_a_second_instance)
{
    start_with(&H, "\"turnsPerHumanMessage\":2", NULL);
    join3(&H);
    human_says("go");
    int posted = 0;
    for (int i = 0; i < 3; i++)
        round_on(&H, 1, 1, &posted);
    ck_assert_int_eq(posted, 2);
    ck_assert_int_eq(notices(&H, BUDGET_NOTICE), 1);
    tth_restart(&H);
    ck_assert_int_eq(peek_on(&H).budget, 1);
    ck_assert_int_eq(round_on(&H, 1, 1, &posted), 0);
    ck_assert_int_eq(notices(&H, BUDGET_NOTICE), 1);
    tth H2;
    start_with(&H2, "\"turnsPerHumanMessage\":2", H.store);
    atomic_store(&H2.now_ms, atomic_load(&H.now_ms));
    ck_assert_int_eq(round_on(&H2, 1, 1, &posted), 0);
    ck_assert_int_eq(posted, 2);
    ck_assert_int_eq(notices(&H2, BUDGET_NOTICE), 1);
    tth_free(&H2);
}
END_TEST

Suite *make_budget_suite(void)
{
    Suite *s = suite_create("budget");
    TCase *tc = tcase_create("budget");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_ledger_records_decisions_and_usage);
    tcase_add_test(tc, test_turns_per_human_message_stops_a_runaway_exchange);
    tcase_add_test(tc, test_tokens_per_hour_trips_on_usage_and_lifts_at_the_hour);
    tcase_add_test(tc, test_channel_budget_replaces_the_default);
    tcase_add_test(tc, test_every_run_of_a_held_scope_is_claimed_for_the_budget);
    tcase_add_test(tc, test_round_that_ends_at_the_limit_does_not_hold_the_next_question);
    tcase_add_test(tc, test_each_window_kind_trips_its_breaker);
    tcase_add_test(tc, test_breaker_survives_restart_and_holds_in_a_second_instance);
    suite_add_tcase(s, tc);
    return s;
}
