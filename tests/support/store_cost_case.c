/*
 * store_cost_case.c -- see store_cost_case.h.
 */
#include "store_cost_case.h"
#include "store_judge.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "status.h"

#include "store_cost.h"

#define DAY 86400000LL

typedef struct rows_seen {
    int n;
    char line[8][96];
} rows_seen;

static int collect(const dg_cost_row *r, void *ud)
{
    rows_seen *seen = ud;
    if (seen->n < 8)
        snprintf(seen->line[seen->n++], sizeof seen->line[0], "%s %lld %s %lld/%lld/%lld/%lld %lld",
                 r->channel_id, (long long)(r->day_ms / DAY), r->model, (long long)r->t.runs,
                 (long long)r->t.granted, (long long)r->t.swapped, (long long)r->t.claimed,
                 (long long)r->t.tokens_in);
    return 0;
}

static void run(dg_store *st, const char *sk, const char *id, const char *ch, int64_t at,
                dg_cost_verdict v)
{
    dg_cost_run r = {.session_key = sk,
                     .run_id = id,
                     .channel_id = ch,
                     .scope = "~conv",
                     .agent_id = "a",
                     .at_ms = at,
                     .verdict = v};
    ck_assert_int_eq(dg_store_cost_run(st, &r), DG_OK);
}

/* Runs of two channels over two days, their verdicts and token usage. */
static void record_runs(dg_store *st)
{
    run(st, "s1", "r1", "100", 10 * DAY + 5, DG_COST_GRANTED);
    /* A later hook claimed it: no model call after all; a lower verdict
     * afterwards does not lower it. */
    run(st, "s1", "r2", "100", 10 * DAY + 6, DG_COST_GRANTED);
    run(st, "s1", "r2", "100", 10 * DAY + 6, DG_COST_CLAIMED);
    run(st, "s1", "r2", "100", 10 * DAY + 6, DG_COST_SWAPPED);
    run(st, "s2", "r3", "100", 11 * DAY + 1, DG_COST_SWAPPED);
    run(st, "s3", "r4", "200", 11 * DAY + 2, DG_COST_GRANTED);
    /* Usage adds up; one reported before the decision makes the row. */
    dg_cost_run u = {.session_key = "s1", .run_id = "r1", .at_ms = 10 * DAY + 7};
    ck_assert_int_eq(dg_store_cost_usage(st, &u, "m-big", 1, 1000, 50), DG_OK);
    ck_assert_int_eq(dg_store_cost_usage(st, &u, NULL, 1, 500, 25), DG_OK);
    dg_cost_run early = {.session_key = "s3", .run_id = "r5", .at_ms = 11 * DAY + 3};
    ck_assert_int_eq(dg_store_cost_usage(st, &early, "m-small", 1, 10, 1), DG_OK);
    run(st, "s3", "r5", "200", 11 * DAY + 3, DG_COST_GRANTED);
    /* Bad input changes nothing. */
    dg_cost_run bad = {.session_key = "s1", .run_id = "", .channel_id = "100"};
    ck_assert_int_eq(dg_store_cost_run(st, &bad), DG_ERR_INVALID);
    ck_assert_int_eq(dg_store_cost_usage(st, &u, "m", -1, 0, 0), DG_ERR_INVALID);
}

/* The sums and the per-day rows, whole and filtered by channel, scope and
 * time. */
static void check_sums(dg_store *st)
{
    dg_cost_totals t;
    dg_cost_filter all = {0};
    ck_assert_int_eq(dg_store_cost_sum(st, &all, &t), DG_OK);
    ck_assert_int_eq(t.runs, 5);
    ck_assert_int_eq(t.granted, 3);
    ck_assert_int_eq(t.swapped, 1);
    ck_assert_int_eq(t.claimed, 1);
    ck_assert_int_eq(t.model_calls, 3);
    ck_assert_int_eq(t.tokens_in, 1510);
    ck_assert_int_eq(t.tokens_out, 76);
    ck_assert_int_eq(t.first_ms, 10 * DAY + 5);
    dg_cost_filter ch = {
        .channel_id = "100", .scope = "~conv", .since_ms = 10 * DAY + 6, .until_ms = 11 * DAY + 1};
    ck_assert_int_eq(dg_store_cost_sum(st, &ch, &t), DG_OK);
    ck_assert_int_eq(t.runs, 1);
    ck_assert_int_eq(t.claimed, 1);
    dg_cost_filter other = {.channel_id = "100", .scope = "~thread:9"};
    ck_assert_int_eq(dg_store_cost_sum(st, &other, &t), DG_OK);
    ck_assert_int_eq(t.runs, 0);

    rows_seen seen = {0};
    ck_assert_int_eq(dg_store_cost_rows(st, &all, collect, &seen), DG_OK);
    ck_assert_int_eq(seen.n, 5);
    ck_assert_str_eq(seen.line[0], "100 10  1/0/0/1 0");
    ck_assert_str_eq(seen.line[1], "100 10 m-big 1/1/0/0 1500");
    ck_assert_str_eq(seen.line[2], "100 11  1/0/1/0 0");
    ck_assert_str_eq(seen.line[3], "200 11  1/1/0/0 0");
    ck_assert_str_eq(seen.line[4], "200 11 m-small 1/1/0/0 10");
    /* The breakdown honours the scope as the sums do. */
    rows_seen none = {0};
    ck_assert_int_eq(dg_store_cost_rows(st, &other, collect, &none), DG_OK);
    ck_assert_int_eq(none.n, 0);
    rows_seen conv = {0};
    ck_assert_int_eq(dg_store_cost_rows(st, &ch, collect, &conv), DG_OK);
    ck_assert_int_eq(conv.n, 1);
    ck_assert_str_eq(conv.line[0], "100 10  1/0/0/1 0");
}

/* The latest human message of a scope only moves forward. */
static void check_human_marks(dg_store *st)
{
    int64_t last_ms = -1;
    ck_assert_int_eq(dg_store_cost_human(st, "100", "~conv", &last_ms), DG_OK);
    ck_assert_int_eq(last_ms, 0);
    ck_assert_int_eq(dg_store_cost_set_human(st, "100", "~conv", 10 * DAY + 9), DG_OK);
    ck_assert_int_eq(dg_store_cost_set_human(st, "100", "~conv", 10 * DAY + 8), DG_OK);
    ck_assert_int_eq(dg_store_cost_human(st, "100", "~conv", &last_ms), DG_OK);
    ck_assert_int_eq(last_ms, 10 * DAY + 9);
}

/* The judge's calls (store_judge.h): summed apart, pruned with the runs. */
static void check_judge_and_prune(dg_store *st)
{
    dg_cost_filter all = {0};
    dg_cost_totals t;
    dg_judge_call jc = {.channel_id = "100",
                        .scope = "~conv",
                        .source = "openai:m",
                        .outcome = "chose",
                        .label = "a",
                        .at_ms = 10 * DAY + 1,
                        .probability_milli = 820,
                        .tokens_in = 300,
                        .tokens_out = 7,
                        .latency_ms = 40};
    ck_assert_int_eq(dg_store_judge_call_add(st, &jc), DG_OK);
    jc = (dg_judge_call){.channel_id = "100",
                         .scope = "~conv",
                         .source = "openai:m",
                         .outcome = "fell back: timed out",
                         .at_ms = 12 * DAY,
                         .probability_milli = -1,
                         .latency_ms = 3000};
    ck_assert_int_eq(dg_store_judge_call_add(st, &jc), DG_OK);
    jc.probability_milli = 1001;
    ck_assert_int_eq(dg_store_judge_call_add(st, &jc), DG_ERR_INVALID);
    dg_judge_totals jt;
    ck_assert_int_eq(dg_store_judge_sum(st, &all, &jt), DG_OK);
    ck_assert_int_eq(jt.calls, 2);
    ck_assert_int_eq(jt.fell_back, 1);
    ck_assert_int_eq(jt.tokens_in, 300);
    ck_assert_int_eq(jt.latency_ms, 3040);
    long removed = 0;
    ck_assert_int_eq(dg_store_cost_prune(st, 11 * DAY, 1, &removed), DG_OK);
    ck_assert_int_eq(removed, 3); /* one run, one human mark, one judge call: the batch bound */
    ck_assert_int_eq(dg_store_cost_prune(st, 11 * DAY, 100, &removed), DG_OK);
    ck_assert_int_eq(removed, 1);
    ck_assert_int_eq(dg_store_cost_sum(st, &all, &t), DG_OK);
    ck_assert_int_eq(t.runs, 3);
    ck_assert_int_eq(dg_store_judge_sum(st, &all, &jt), DG_OK);
    ck_assert_int_eq(jt.calls, 1);
}

void store_cost_case_run(dg_store *st)
{
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    record_runs(st);
    check_sums(st);
    check_human_marks(st);
    check_judge_and_prune(st);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);
}
