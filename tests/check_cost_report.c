/*
 * check_cost_report.c -- plugin/cost_report.c on a temporary SQLite store
 * filled through store_cost.h: the text per channel and UTC day with its
 * totals, money only when every model has a price, "n/a" where the host
 * reported no usage, the scope filter, the bound for one Discord message,
 * the one-line summary, the JSON, and every allocation failing in turn.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cost_report.h"
#include "failalloc.h"
#include "status.h"
#include "store.h"
#include "store_cost.h"
#include "testutil.h"

#define DAY 86400000LL
/* 2026-12-04 and 2026-12-05, UTC. */
#define D1 (20791 * DAY)
#define D2 (20792 * DAY)
#define CHA "300000000000000001"
#define CHB "300000000000000002"

static char *dir;
static dg_store *st;

static void setup(void)
{
    dir = tu_mkdtemp();
    char *path = tu_path(dir, "cost.db");
    char err[256] = "";
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == DG_OK, "%s", err);
    free(path);
}

static void teardown(void)
{
    dg_store_close(st);
    st = NULL;
    tu_rmtree(dir);
    free(dir);
}

static void run(const char *ch, const char *scope, const char *id, int64_t at, dg_cost_verdict v)
{
    dg_cost_run r = {.session_key = scope,
                     .run_id = id,
                     .channel_id = ch,
                     .scope = scope,
                     .agent_id = "alpha",
                     .at_ms = at,
                     .verdict = v};
    ck_assert_int_eq(dg_store_cost_run(st, &r), DG_OK);
}

static void usage(const char *scope, const char *id, const char *model, int64_t calls, int64_t in,
                  int64_t out)
{
    dg_cost_run r = {.session_key = scope, .run_id = id};
    ck_assert_int_eq(dg_store_cost_usage(st, &r, model, calls, in, out), DG_OK);
}

/* Channel A: on D1 one granted run (m-big) and two claimed; on D2 two
 * granted (m-big, m-small), one swapped, eight claimed, and a granted run
 * in a thread (m-small). Channel B on D2: a granted run whose host
 * reported nothing, and a claimed one. */
static void fill(void)
{
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    run(CHA, "~conv", "r1", D1 + 1000, DG_COST_GRANTED);
    usage("~conv", "r1", "m-big", 1, 30000, 2000);
    run(CHA, "~conv", "r2", D1 + 2000, DG_COST_CLAIMED);
    run(CHA, "~conv", "r3", D1 + 3000, DG_COST_CLAIMED);
    run(CHA, "~conv", "r4", D2 + 1000, DG_COST_GRANTED);
    usage("~conv", "r4", "m-big", 1, 6000, 600);
    usage("~conv", "r4", "m-big", 1, 4000, 400);
    run(CHA, "~conv", "r5", D2 + 2000, DG_COST_GRANTED);
    usage("~conv", "r5", "m-small", 1, 4000, 400);
    run(CHA, "~conv", "r6", D2 + 3000, DG_COST_SWAPPED);
    for (int i = 0; i < 8; i++) {
        char id[16];
        snprintf(id, sizeof id, "c%d", i);
        run(CHA, "~conv", id, D2 + 4000 + i, DG_COST_CLAIMED);
    }
    run(CHA, "~thread:77", "r20", D2 + 5000, DG_COST_GRANTED);
    usage("~thread:77", "r20", "m-small", 1, 2000, 100);
    run(CHB, "~conv", "r30", D2 + 6000, DG_COST_GRANTED);
    run(CHB, "~conv", "r31", D2 + 7000, DG_COST_CLAIMED);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);
}

/* A config with prices (NULL text: none). */
static void config(dg_config *c, const char *prices)
{
    char *text = NULL;
    ck_assert_int_ge(asprintf(&text,
                              "{\"discord\":{\"moderatorUserId\":\"1000000000000000001\"},"
                              "\"dbPath\":\"/tmp/unused.db\"%s%s}",
                              prices ? ",\"prices\":" : "", prices ? prices : ""),
                     0);
    json_t *j = tu_json(text);
    char err[256] = "";
    ck_assert_msg(dg_config_parse(j, c, err, sizeof err) == DG_OK, "%s", err);
    json_decref(j);
    free(text);
}

#define PRICES                                                                                     \
    "{\"m-big\":{\"inputPerMillion\":3,\"outputPerMillion\":15},"                                  \
    "\"m-small\":{\"inputPerMillion\":0.5,\"outputPerMillion\":1.5}}"

static dg_cost_report *load(const dg_cost_filter *f, const dg_config *cfg)
{
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    dg_cost_report *r = NULL;
    ck_assert_int_eq(dg_cost_report_load(st, f, cfg, &r), DG_OK);
    dg_store_rollback(st);
    ck_assert_ptr_nonnull(r);
    return r;
}

static void text_is(const dg_cost_report *r, size_t max, const char *want)
{
    char *t = dg_cost_report_text(r, max);
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(strcmp(t, want) == 0, "got:\n%s\nwant:\n%s", t, want);
    free(t);
}

START_TEST(test_channel_report_with_prices)
{
    fill();
    dg_config c;
    config(&c, PRICES);
    dg_cost_filter f = {.channel_id = CHA};
    dg_cost_report *r = load(&f, &c);
    text_is(r, 0,
            "2026-12-04: 3 runs, 1 model call, 1 granted, 2 avoided (claimed 2, swapped 0), "
            "30,000 tokens in / 2,000 out, $0.12\n"
            "2026-12-05: 12 runs, 4 model calls, 3 granted, 9 avoided (claimed 8, swapped 1), "
            "16,000 tokens in / 1,500 out, $0.05\n"
            "total: 15 runs, 5 model calls, 4 granted, 11 avoided (claimed 10, swapped 1), "
            "46,000 tokens in / 3,500 out, $0.17\n");
    /* A bound the whole text meets cuts nothing. */
    char *whole = dg_cost_report_text(r, 0);
    text_is(r, strlen(whole), whole);
    free(whole);
    char line[256];
    ck_assert_str_eq(dg_cost_report_summary(r, line, sizeof line),
                     "cost: 15 runs, 5 model calls, 11 avoided (claimed 10, swapped 1), 46,000 "
                     "tokens in / 3,500 out, $0.17");
    /* Cut to the buffer, still a string. */
    ck_assert_str_eq(dg_cost_report_summary(r, line, 12), "cost: 15 ru");
    const dg_cost_totals *t = dg_cost_report_totals(r);
    ck_assert_int_eq(t->runs, 15);
    ck_assert_int_eq(t->granted, 4);
    ck_assert_int_eq(t->first_ms, D1 + 1000);
    ck_assert_int_eq(t->last_ms, D2 + 5000);
    dg_cost_report_free(r);
    dg_config_free(&c);
}
END_TEST

/* The whole store: a header per channel; channel B's granted run has no
 * usage reported, so its calls and tokens are n/a and it shows no money. */
START_TEST(test_every_channel_and_usage_not_reported)
{
    fill();
    dg_config c;
    config(&c, PRICES);
    dg_cost_filter all = {0};
    dg_cost_report *r = load(&all, &c);
    text_is(r, 0,
            "channel " CHA ":\n"
            "  2026-12-04: 3 runs, 1 model call, 1 granted, 2 avoided (claimed 2, swapped 0), "
            "30,000 tokens in / 2,000 out, $0.12\n"
            "  2026-12-05: 12 runs, 4 model calls, 3 granted, 9 avoided (claimed 8, swapped 1), "
            "16,000 tokens in / 1,500 out, $0.05\n"
            "channel " CHB ":\n"
            "  2026-12-05: 2 runs, model calls n/a, 1 granted, 1 avoided (claimed 1, swapped "
            "0), tokens n/a\n"
            "total: 17 runs, 5 model calls, 5 granted, 12 avoided (claimed 11, swapped 1), "
            "46,000 tokens in / 3,500 out, $0.17\n");
    dg_cost_report_free(r);
    /* Only channel B: nothing reported at all. */
    dg_cost_filter b = {.channel_id = CHB};
    r = load(&b, &c);
    char line[256];
    ck_assert_str_eq(dg_cost_report_summary(r, line, sizeof line),
                     "cost: 2 runs, model calls n/a, 1 avoided (claimed 1, swapped 0), tokens n/a");
    dg_cost_report_free(r);
    dg_config_free(&c);
}
END_TEST

/* Money needs a price for every model that reported tokens: without one
 * the report names the models lacking it, and shows no money at all. */
START_TEST(test_missing_prices_are_named)
{
    fill();
    dg_cost_filter f = {.channel_id = CHA};
    dg_cost_report *r = load(&f, NULL);
    text_is(r, 0,
            "2026-12-04: 3 runs, 1 model call, 1 granted, 2 avoided (claimed 2, swapped 0), "
            "30,000 tokens in / 2,000 out\n"
            "2026-12-05: 12 runs, 4 model calls, 3 granted, 9 avoided (claimed 8, swapped 1), "
            "16,000 tokens in / 1,500 out\n"
            "total: 15 runs, 5 model calls, 4 granted, 11 avoided (claimed 10, swapped 1), "
            "46,000 tokens in / 3,500 out\n"
            "money: not shown, no price for m-big, m-small (set prices.<model> in the plugin "
            "config)\n");
    dg_cost_report_free(r);
    dg_config c;
    config(&c, "{\"m-big\":{\"inputPerMillion\":3,\"outputPerMillion\":15}}");
    r = load(&f, &c);
    char line[256];
    ck_assert_str_eq(dg_cost_report_summary(r, line, sizeof line),
                     "cost: 15 runs, 5 model calls, 11 avoided (claimed 10, swapped 1), 46,000 "
                     "tokens in / 3,500 out, no price for m-small");
    json_t *j = dg_cost_report_json(r);
    ck_assert(json_is_false(json_object_get(j, "priced")));
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "unpriced"), 0)),
                     "m-small");
    ck_assert(json_is_null(json_object_get(json_object_get(j, "totals"), "cost")));
    json_decref(j);
    dg_cost_report_free(r);
    /* Tokens without a model name cannot be priced either. */
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    run(CHA, "~conv", "r40", D2 + 9000, DG_COST_GRANTED);
    usage("~conv", "r40", NULL, 1, 10, 1);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);
    r = load(&f, &c);
    char *t = dg_cost_report_text(r, 0);
    ck_assert_msg(strstr(t, "money: not shown, no price for (model not reported), m-small"), "%s",
                  t);
    free(t);
    dg_cost_report_free(r);
    dg_config_free(&c);
}
END_TEST

/* One scope of a channel (a thread): its runs only, a price below a cent. */
START_TEST(test_one_scope)
{
    fill();
    dg_config c;
    config(&c, PRICES);
    dg_cost_filter f = {.channel_id = CHA, .scope = "~thread:77"};
    dg_cost_report *r = load(&f, &c);
    text_is(r, 0,
            "2026-12-05: 1 run, 1 model call, 1 granted, 0 avoided (claimed 0, swapped 0), 2,000 "
            "tokens in / 100 out, <$0.01\n"
            "total: 1 run, 1 model call, 1 granted, 0 avoided (claimed 0, swapped 0), 2,000 tokens "
            "in / 100 out, <$0.01\n");
    dg_cost_report_free(r);
    /* A window that holds nothing. */
    dg_cost_filter none = {.channel_id = CHA, .since_ms = D2 + DAY};
    r = load(&none, &c);
    text_is(r, 1900, "no agent runs recorded\n");
    char line[256];
    ck_assert_str_eq(dg_cost_report_summary(r, line, sizeof line),
                     "cost: 0 runs, 0 model calls, 0 avoided (claimed 0, swapped 0), 0 tokens in "
                     "/ 0 out");
    dg_cost_report_free(r);
    /* The window's end is exclusive: D1 alone. */
    dg_cost_filter d1 = {.channel_id = CHA, .since_ms = D1, .until_ms = D2};
    r = load(&d1, &c);
    ck_assert_int_eq(dg_cost_report_totals(r)->runs, 3);
    dg_cost_report_free(r);
    dg_config_free(&c);
}
END_TEST

/* max_len bounds the text (one Discord message): the day lines that do not
 * fit are counted in one line, the totals line stays. */
START_TEST(test_bounded_for_one_message)
{
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    for (int d = 0; d < 60; d++) {
        char id[16];
        snprintf(id, sizeof id, "d%d", d);
        run(CHA, "~conv", id, D2 - d * DAY, DG_COST_GRANTED);
        usage("~conv", id, "m-big", 1, 1000000 + d, 1000);
    }
    ck_assert_int_eq(dg_store_commit(st), DG_OK);
    dg_config c;
    config(&c, PRICES);
    dg_cost_filter f = {0};
    dg_cost_report *r = load(&f, &c);
    char *whole = dg_cost_report_text(r, 0);
    ck_assert_uint_gt(strlen(whole), 4000);
    char *t = dg_cost_report_text(r, 1900);
    ck_assert_uint_le(strlen(t), 1900);
    /* The days shown plus those counted are the 60 days. */
    int shown = 0;
    for (const char *p = t; (p = strstr(p, "  2026-")); p++)
        shown++;
    int more = 0;
    const char *cut = strstr(t, "more day lines not shown");
    ck_assert_msg(cut != NULL, "%s", t);
    while (cut > t && cut[-1] != '(')
        cut--;
    more = atoi(cut);
    ck_assert_int_gt(shown, 5);
    ck_assert_int_eq(shown + more, 60);
    ck_assert_msg(strstr(t, "\ntotal: 60 runs, 60 model calls, 60 granted, 0 avoided (claimed 0, "
                            "swapped 0), 60,001,770 tokens in / 60,000 out, $180.91\n"),
                  "%s", t);
    /* The text up to the cut line is the whole text's start. */
    const char *cut_line = strstr(t, "\n(");
    ck_assert_ptr_nonnull(cut_line);
    ck_assert_int_eq(strncmp(t, whole, (size_t)(cut_line + 1 - t)), 0);
    free(t);
    free(whole);
    dg_cost_report_free(r);
    dg_config_free(&c);
}
END_TEST

START_TEST(test_json)
{
    fill();
    dg_config c;
    config(&c, PRICES);
    dg_cost_filter f = {.since_ms = D1};
    dg_cost_report *r = load(&f, &c);
    json_t *j = dg_cost_report_json(r);
    ck_assert_ptr_nonnull(j);
    ck_assert(json_is_null(json_object_get(j, "channelId")));
    ck_assert_str_eq(json_string_value(json_object_get(j, "since")), "2026-12-04T00:00:00Z");
    ck_assert(json_is_null(json_object_get(j, "until")));
    ck_assert(json_is_true(json_object_get(j, "priced")));
    ck_assert_str_eq(json_string_value(json_object_get(j, "currency")), "$");
    json_t *days = json_object_get(j, "days");
    ck_assert_uint_eq(json_array_size(days), 3);
    json_t *d2 = json_array_get(days, 1);
    ck_assert_str_eq(json_string_value(json_object_get(d2, "channelId")), CHA);
    ck_assert_str_eq(json_string_value(json_object_get(d2, "day")), "2026-12-05");
    ck_assert_int_eq(json_integer_value(json_object_get(d2, "runs")), 12);
    ck_assert_int_eq(json_integer_value(json_object_get(d2, "modelCalls")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(d2, "avoided")), 9);
    ck_assert_int_eq(json_integer_value(json_object_get(d2, "swapped")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(d2, "tokensIn")), 16000);
    ck_assert(fabs(json_real_value(json_object_get(d2, "cost")) - 0.04875) < 1e-9);
    /* Per model: the runs without usage (no model), m-big, m-small. */
    json_t *models = json_object_get(d2, "models");
    ck_assert_uint_eq(json_array_size(models), 3);
    ck_assert(json_is_null(json_object_get(json_array_get(models, 0), "model")));
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(models, 0), "claimed")), 8);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(models, 2), "model")),
                     "m-small");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(models, 2), "runs")), 2);
    json_t *b = json_array_get(days, 2);
    ck_assert(json_is_null(json_object_get(b, "modelCalls")));
    json_t *tot = json_object_get(j, "totals");
    ck_assert_int_eq(json_integer_value(json_object_get(tot, "runs")), 17);
    ck_assert(fabs(json_real_value(json_object_get(tot, "cost")) - 0.16875) < 1e-9);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "unpriced")), 0);
    json_decref(j);
    dg_cost_report_free(r);
    dg_cost_report_free(NULL);
    dg_config_free(&c);
}
END_TEST

/* Each allocation of load, text, summary and JSON failing in turn: a
 * status or NULL that says so, nothing leaked (SANITIZE=1, valgrind). */
START_TEST(test_out_of_memory)
{
    ck_assert(fa_available());
    fill();
    dg_config c;
    config(&c, "{\"m-big\":{\"inputPerMillion\":3,\"outputPerMillion\":15}}");
    dg_cost_filter f = {.channel_id = NULL, .scope = NULL, .since_ms = D1};
    long n;
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    for (n = 1; n < 100000; n++) {
        dg_cost_report *r = NULL;
        fa_arm_own(n);
        int rc = dg_cost_report_load(st, &f, &c, &r);
        char *t = NULL;
        json_t *j = NULL;
        char line[64];
        if (rc == DG_OK) {
            t = dg_cost_report_text(r, 300);
            j = dg_cost_report_json(r);
            dg_cost_report_summary(r, line, sizeof line);
        }
        int hit = fa_disarm();
        ck_assert(rc == DG_OK ? r != NULL : rc == DG_ERR_NOMEM && r == NULL);
        free(t);
        json_decref(j);
        dg_cost_report_free(r);
        if (!hit) {
            ck_assert_ptr_nonnull(t);
            ck_assert_ptr_nonnull(j);
            break;
        }
    }
    dg_store_rollback(st);
    ck_assert_int_gt(n, 20);
    dg_config_free(&c);
}
END_TEST

Suite *make_cost_report_suite(void)
{
    Suite *s = suite_create("cost_report");
    TCase *tc = tcase_create("cost_report");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_channel_report_with_prices);
    tcase_add_test(tc, test_every_channel_and_usage_not_reported);
    tcase_add_test(tc, test_missing_prices_are_named);
    tcase_add_test(tc, test_one_scope);
    tcase_add_test(tc, test_bounded_for_one_message);
    tcase_add_test(tc, test_json);
    tcase_add_test(tc, test_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}
