/*
 * check_serve.c -- dirigent-ctl serve (tools/ctl_serve*.c): the listening
 * rule and the token, HTML escaping, the SVG chart, the snapshot of a live
 * store (the turn test host's), the parts read from the cost ledger (runs
 * made and avoided per hour, each scope's budget, the totals) with and
 * without the plugin config, and the routes over HTTP on 127.0.0.1.
 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl_serve.h"
#include "openclaw/plugin.h"
#include "outbox.h"
#include "store_int.h"
#include "store_cost.h"
#include "store_transitions.h"
#include "store_turns.h"
#include "testutil.h"
#include "turn_test_host.h"

#define CH1 "300000000000000001"
#define CH2 "300000000000000002"
#define CH3 "300000000000000003"
#define HOUR 3600000LL

static tth H;
static int msg_seq;

static const char *mid(char *buf)
{
    snprintf(buf, 24, "%d", 770000000 + ++msg_seq);
    return buf;
}

static void setup(void)
{
    msg_seq = 0;
    tth_start(&H, "channel", NULL);
}

static void teardown(void)
{
    tth_free(&H);
}

/* The test host's store as dirigent-ctl names it: the PostgreSQL url of
 * its "store" member, or the SQLite file. malloc'd. */
static char *store_path(void)
{
    const char *u = strstr(H.store, "postgresql://");
    const char *end = u ? strchr(u, '"') : NULL;
    return end ? strndup(u, (size_t)(end - u)) : tu_path(H.dir, "dirigent.db");
}

/* Three agents join CH1; the human speaks, alpha answers, bravo passes. */
static void three_join_and_talk(void)
{
    const char *abc[] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};
    for (int i = 0; i < 3; i++)
        ck_assert_int_ge(tth_resolve(&H, abc[i], CH1, NULL), 0);
    char id[24];
    ck_assert_int_eq(tth_msg(&H, CH1, NULL, mid(id), TTH_HUMAN_UID, 0, "hello", NULL), OC_OK);
    ck_assert_int_eq(tth_run(&H, TTH_ALPHA, CH1, NULL, "Hi there.", mid(id)), 1);
    ck_assert_int_eq(tth_run(&H, TTH_BRAVO, CH1, NULL, "NO_REPLY", mid(id)), 0);
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static const char *text_of(const json_t *o)
{
    return json_string_value(json_object_get(o, "text"));
}

START_TEST(test_listen_parse_and_the_token_rule)
{
    dg_serve_listen l;
    char err[512];
    ck_assert_int_eq(dg_serve_listen_parse("127.0.0.1:0", &l, err, sizeof err), OC_OK);
    ck_assert(l.loopback && !l.ipv6 && l.port == 0);
    ck_assert_int_eq(dg_serve_listen_allowed(&l, NULL, err, sizeof err), OC_OK);
    ck_assert_int_eq(dg_serve_listen_parse("127.8.9.10:8377", &l, err, sizeof err), OC_OK);
    ck_assert(l.loopback && l.port == 8377);
    ck_assert_int_eq(dg_serve_listen_parse("[::1]:80", &l, err, sizeof err), OC_OK);
    ck_assert(l.loopback && l.ipv6 && l.port == 80);
    ck_assert_str_eq(l.host, "::1");
    ck_assert_int_eq(dg_serve_listen_parse("localhost:9", &l, err, sizeof err), OC_OK);
    ck_assert(l.loopback);
    ck_assert_str_eq(l.host, "127.0.0.1");
    /* Any other address needs a token; the sentence names both flags. */
    const char *open_ones[] = {"0.0.0.0:8080", "192.168.1.5:1", "[::]:80", "128.0.0.1:5"};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(dg_serve_listen_parse(open_ones[i], &l, err, sizeof err), OC_OK);
        ck_assert(!l.loopback);
        err[0] = '\0';
        ck_assert_int_eq(dg_serve_listen_allowed(&l, NULL, err, sizeof err), OC_ERR_INVALID);
        ck_assert_msg(strstr(err, "--listen") && strstr(err, "--token") &&
                          strstr(err, "DIRIGENT_CTL_TOKEN"),
                      "%s", err);
        ck_assert_int_eq(dg_serve_listen_allowed(&l, "", err, sizeof err), OC_ERR_INVALID);
        ck_assert_int_eq(dg_serve_listen_allowed(&l, "t0k", err, sizeof err), OC_OK);
    }
    const char *bad[] = {"127.0.0.1",      "127.0.0.1:",   "127.0.0.1:99999",
                         "example.org:80", ":80",          "[::1]80",
                         "[::1",           "127.0.0.1:8x", NULL};
    for (size_t i = 0; bad[i]; i++) {
        err[0] = '\0';
        ck_assert_msg(dg_serve_listen_parse(bad[i], &l, err, sizeof err) == OC_ERR_INVALID,
                      "%s accepted", bad[i]);
        ck_assert_msg(strstr(err, "--listen") != NULL, "%s: %s", bad[i], err);
    }
    ck_assert_int_eq(dg_serve_listen_parse(NULL, &l, err, sizeof err), OC_ERR_INVALID);
}
END_TEST

START_TEST(test_token_check)
{
    ck_assert(dg_serve_token_ok(NULL, NULL, NULL));
    ck_assert(dg_serve_token_ok("", NULL, NULL));
    ck_assert(dg_serve_token_ok("s3cret", "Bearer s3cret", NULL));
    ck_assert(dg_serve_token_ok("s3cret", NULL, "s3cret"));
    ck_assert(!dg_serve_token_ok("s3cret", NULL, NULL));
    ck_assert(!dg_serve_token_ok("s3cret", "Bearer s3cre", NULL));
    ck_assert(!dg_serve_token_ok("s3cret", "Bearer s3cretX", NULL));
    ck_assert(!dg_serve_token_ok("s3cret", "s3cret", NULL)); /* no scheme */
    ck_assert(!dg_serve_token_ok("s3cret", "Bearer ", ""));
    ck_assert(!dg_serve_token_ok("s3cret", NULL, "S3CRET"));
    /* The request line alone, before any header. */
    ck_assert_int_eq(dg_serve_request_line_verdict(NULL, "/"), DG_SERVE_LINE_OK);
    ck_assert_int_eq(dg_serve_request_line_verdict("", "/?token=x"), DG_SERVE_LINE_OK);
    ck_assert_int_eq(dg_serve_request_line_verdict("s3cret", "/?token=s3cret"), DG_SERVE_LINE_OK);
    ck_assert_int_eq(dg_serve_request_line_verdict("s3 c&t", "/api/status?a=1&token=s3+c%26t"),
                     DG_SERVE_LINE_OK);
    ck_assert_int_eq(dg_serve_request_line_verdict("s3cret", "/"), DG_SERVE_LINE_UNPROVEN);
    ck_assert_int_eq(dg_serve_request_line_verdict("s3cret", "/?xtoken=s3cret"),
                     DG_SERVE_LINE_UNPROVEN);
    ck_assert_int_eq(dg_serve_request_line_verdict("s3cret", "/?token=wrong"), DG_SERVE_LINE_WRONG);
    ck_assert_int_eq(dg_serve_request_line_verdict("s3cret", "/?token="), DG_SERVE_LINE_WRONG);
    ck_assert_int_eq(dg_serve_request_line_verdict("s3cret", "/?token=s3cret%"),
                     DG_SERVE_LINE_WRONG);
}
END_TEST

START_TEST(test_html_escape_and_a_hostile_snapshot)
{
    dg_buf b = {0};
    ck_assert_int_eq(dg_html_escape(&b, "a<b>&\"c'd"), 0);
    ck_assert_str_eq(b.s, "a&lt;b&gt;&amp;&quot;c&#39;d");
    ck_assert_int_eq(dg_html_escape(&b, NULL), 0);
    ck_assert_int_eq(dg_html_escape(&b, ""), 0);
    ck_assert_int_eq(dg_html_escape(&b, "plain"), 0);
    ck_assert_str_eq(b.s, "a&lt;b&gt;&amp;&quot;c&#39;dplain");
    dg_buf_free(&b);
    /* Every stored text the page shows goes through it. */
    const char *x = "<script>alert(1)</script>";
    json_t *snap = json_pack(
        "{s:b,s:s,s:i,s:s,s:[{s:s,s:s,s:s,s:[s],s:s,s:[s],s:i,s:s,s:{s:s}}],s:{s:b,s:s},"
        "s:{s:{s:s},s:{s:s,s:s}},"
        "s:[{s:i,s:s,s:s,s:s,s:s,s:[s],s:s,s:s,s:n,s:s,s:s,s:s,s:[s],"
        "s:[{s:s,s:s,s:s,s:s,s:s}]}],s:b,s:[],"
        "s:{s:i,s:i,s:i,s:n,s:[],s:[{s:i,s:s,s:i,s:s,s:s}]}}",
        "ok", 1, "store", x, "schemaVersion", 17, "generatedAt", "2026-12-05T06:00:00Z", "scopes",
        "channelId", CH1, "scope", x, "state", "speaking", "order", x, "speaker", x, "passed", x,
        "agentMessages", 3, "lastChange", "2026-12-05T06:00:00Z", "budget", "text", x, "budget",
        "configured", 0, "text", x, "cost", "today", "summary", x, "kept", "summary", x, "firstRun",
        x, "discussions", "discussionId", 1, "channelId", x, "name", x, "status", x, "initiator", x,
        "participants", x, "originChannelId", x, "createdAt", x, "closedAt", "summaryPath", x,
        "turn", x, "speaker", x, "order", x, "timeline", "at", x, "what", x, "speakerBefore", x,
        "speakerAfter", x, "state", x, "moreDiscussions", 0, "hours", "outbox", "pending", 0,
        "sent", 1, "failed", 1, "oldestPendingAgeSec", "pendingRows", "failedRows", "id", 9,
        "channelId", x, "attempts", 5, "failedAt", x, "reason", x);
    ck_assert_ptr_nonnull(snap);
    char *page = dg_serve_page(snap, "a&b<");
    ck_assert_ptr_nonnull(page);
    ck_assert_msg(!strstr(page, "<script>alert"), "unescaped text in the page");
    ck_assert_uint_eq(count_of(page, "<script"), 1); /* the page's own */
    /* store, scope, order, speaker, passed, the scope's budget and the
     * page's; the cost of today, every run kept and since when; the 9
     * fields of the discussion the page shows and its timeline's 5; the
     * failed row's channel, time and reason. */
    ck_assert_uint_eq(count_of(page, "&lt;script&gt;alert(1)&lt;/script&gt;"), 7 + 3 + 9 + 5 + 3);
    ck_assert_ptr_nonnull(strstr(page, "src=\"chart.svg?token=a%26b%3C\""));
    ck_assert_ptr_null(strstr(page, "http://"));
    ck_assert_ptr_null(strstr(page, "https://"));
    free(page);
    json_decref(snap);
}
END_TEST

START_TEST(test_chart_svg)
{
    dg_serve_hour h[DG_SERVE_HOURS];
    for (int i = 0; i < DG_SERVE_HOURS; i++)
        h[i] = (dg_serve_hour){.hour = 499000 + i};
    char *svg = dg_serve_chart_svg(h, DG_SERVE_HOURS);
    ck_assert_ptr_nonnull(svg);
    ck_assert_uint_eq(count_of(svg, "class=\"made\""), 0);
    ck_assert_uint_eq(count_of(svg, "class=\"avoided\""), 0);
    free(svg);
    h[3].made = 8;
    h[3].avoided = 16;
    h[23].avoided = 2;
    svg = dg_serve_chart_svg(h, DG_SERVE_HOURS);
    ck_assert_ptr_nonnull(svg);
    ck_assert_msg(!strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"", 39), "%.60s", svg);
    ck_assert_ptr_nonnull(strstr(svg, "</svg>\n"));
    ck_assert_uint_eq(count_of(svg, "class=\"made\""), 1);
    ck_assert_uint_eq(count_of(svg, "class=\"avoided\""), 2);
    ck_assert_ptr_nonnull(strstr(svg, "8 made</title>"));
    ck_assert_ptr_nonnull(strstr(svg, "16 avoided</title>"));
    /* 24 runs: the axis tops at 50; the plot is 176 px high. */
    ck_assert_ptr_nonnull(strstr(svg, ">50</text>"));
    ck_assert_ptr_nonnull(strstr(svg, "height=\"28.2\" fill=\"#c0392b\"")); /* 8/50 */
    ck_assert_ptr_nonnull(strstr(svg, "height=\"56.3\" fill=\"#27ae60\"")); /* 16/50 */
    /* Self-contained: one URL (the namespace), no script, no link. */
    ck_assert_uint_eq(count_of(svg, "http"), 1);
    ck_assert_ptr_null(strstr(svg, "<script"));
    ck_assert_ptr_null(strstr(svg, "href"));
    free(svg);
}
END_TEST

START_TEST(test_snapshot_of_a_live_store)
{
    three_join_and_talk();
    char *path = store_path();
    dg_plugin *p = tth_plugin(&H);
    json_t *s = dg_serve_snapshot(path, NULL, dg_now_ms(p));
    ck_assert_msg(json_is_true(json_object_get(s, "ok")), "%s",
                  json_string_value(json_object_get(s, "error")));
    json_t *sc = json_array_get(json_object_get(s, "scopes"), 0);
    ck_assert_uint_eq(json_array_size(json_object_get(s, "scopes")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(sc, "channelId")), CH1);
    ck_assert_str_eq(json_string_value(json_object_get(sc, "speaker")), TTH_CHARLIE);
    /* alpha wrote the latest message: it counts as having passed on it. */
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(sc, "passed"), 0)),
                     TTH_ALPHA);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(sc, "passed"), 1)),
                     TTH_BRAVO);
    ck_assert_uint_eq(json_array_size(json_object_get(sc, "order")), 3);
    /* Without the plugin config: no limits, the page says so. */
    json_t *b = json_object_get(sc, "budget");
    ck_assert(json_is_false(json_object_get(b, "holds")));
    ck_assert(json_is_null(json_object_get(b, "limits")));
    ck_assert_msg(strstr(text_of(b), "limits: no config given"), "%s", text_of(b));
    ck_assert_msg(!strncmp(text_of(json_object_get(s, "budget")), "no config given", 15), "%s",
                  text_of(json_object_get(s, "budget")));
    /* The engine's verdicts in the ledger: alpha's and bravo's runs went
     * to their models this hour. */
    json_t *hours = json_object_get(s, "hours");
    ck_assert_uint_eq(json_array_size(hours), DG_SERVE_HOURS);
    json_t *now = json_array_get(hours, DG_SERVE_HOURS - 1);
    ck_assert_int_eq(json_integer_value(json_object_get(now, "runs")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(now, "made")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(now, "avoided")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(hours, 0), "runs")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(b, "today"), "runs")), 2);
    ck_assert(json_is_object(json_object_get(s, "outbox")));
    ck_assert_uint_eq(json_array_size(json_object_get(s, "discussions")), 0);
    /* A run claimed (charlie holds the turn; bravo's next run is claimed
     * before its model): one run more, avoided. */
    json_t *cl = NULL;
    char key[256];
    json_t *ev = json_pack("{s:s}", "cleanedBody", "hello");
    json_t *ctx = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "agentId", TTH_BRAVO, "sessionKey",
                            tth_session_key(key, sizeof key, TTH_BRAVO, CH1, NULL), "channelId",
                            CH1, "accountId", TTH_BRAVO, "messageProvider", "discord", "runId",
                            "serve-claimed-run");
    ck_assert_int_eq(tth_call(&H, "before_agent_reply", ev, ctx, &cl), OC_OK);
    ck_assert_msg(json_is_true(json_object_get(cl, "handled")), "not claimed");
    json_decref(cl);
    json_decref(ev);
    json_decref(ctx);
    json_decref(s);
    s = dg_serve_snapshot(path, NULL, dg_now_ms(p));
    now = json_array_get(json_object_get(s, "hours"), DG_SERVE_HOURS - 1);
    ck_assert_int_eq(json_integer_value(json_object_get(now, "runs")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(now, "made")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(now, "avoided")), 1);
    const char *today = json_string_value(
        json_object_get(json_object_get(json_object_get(s, "cost"), "today"), "summary"));
    ck_assert_msg(today && !strncmp(today, "cost: 3 runs, ", 14), "%s", today);
    /* The page and the chart of it. */
    char *page = dg_serve_page(s, NULL);
    ck_assert_ptr_nonnull(strstr(page, "<td>" CH1 "</td>"));
    ck_assert_ptr_nonnull(strstr(page, "<td>" TTH_ALPHA ", " TTH_BRAVO ", " TTH_CHARLIE "</td>"));
    ck_assert_ptr_nonnull(strstr(page, "src=\"chart.svg\""));
    free(page);
    dg_serve_hour h[DG_SERVE_HOURS];
    dg_serve_hours_of(s, dg_now_ms(p), h);
    ck_assert_int_eq(h[DG_SERVE_HOURS - 1].made, 2);
    ck_assert_int_eq(h[DG_SERVE_HOURS - 1].avoided, 1);
    json_decref(s);
    free(path);
}
END_TEST

/* ---- the parts read from the cost ledger, on a store of its own -------- */

/* 2026-12-05T10:30:00Z */
#define NOW (20792 * 24 * HOUR + 10 * HOUR + 30 * 60000)

static dg_store *ledger_store(char **dir)
{
    *dir = tu_mkdtemp();
    char *path = tu_path(*dir, "ledger.db"), err[256] = "";
    dg_store *st = NULL;
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "%s", err);
    free(path);
    return st;
}

static void ledger_run(dg_store *st, const char *ch, const char *scope, const char *id, int64_t at,
                       dg_cost_verdict v)
{
    dg_cost_run r = {.session_key = "sk",
                     .run_id = id,
                     .channel_id = ch,
                     .scope = scope,
                     .agent_id = TTH_ALPHA,
                     .at_ms = at,
                     .verdict = v};
    ck_assert_int_eq(dg_store_cost_run(st, &r), OC_OK);
}

/* The state of sc with a breaker of kind k until until_ms. */
static void breaker(dg_store *st, const dg_scope *sc, int k, int64_t until_ms)
{
    dg_turn_state t;
    dg_turn_state_init(&t);
    t.budget = k;
    t.budget_until_ms = until_ms;
    ck_assert_int_eq(dg_store_turns_scope_save(st, sc, NULL, &t, 0, NOW - HOUR), OC_OK);
}

/* CH1's conversation: a turnsPerHour breaker latched at 10:12 until 11:00,
 * five granted runs (one reported usage), three claimed this hour, one
 * swapped at 09:xx, two granted yesterday at 23:xx; CH1's thread 9 a
 * breaker whose window ended at 10:00; CH2 a per-message breaker (until a
 * resume, no transition kept) and one granted run; CH3, a discussion, a
 * discussionTurns breaker. */
static void fill_ledger(dg_store *st)
{
    dg_scope conv, thread, conv2, conv3;
    ck_assert_int_eq(dg_scope_conversation(CH1, &conv), OC_OK);
    ck_assert_int_eq(dg_scope_thread(CH1, "9", &thread), OC_OK);
    ck_assert_int_eq(dg_scope_conversation(CH2, &conv2), OC_OK);
    ck_assert_int_eq(dg_scope_conversation(CH3, &conv3), OC_OK);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(
        dg_store_turns_channel_save(st, CH3, DG_MODE_DISCUSSION, TTH_ALPHA, NULL, 0, NOW - HOUR),
        OC_OK);
    breaker(st, &conv3, DG_BUDGET_DISCUSSION_TURNS, 0);
    breaker(st, &conv, DG_BUDGET_TURNS_PER_HOUR, NOW + 30 * 60000);
    breaker(st, &thread, DG_BUDGET_TURNS_PER_HOUR, NOW - 30 * 60000);
    breaker(st, &conv2, DG_BUDGET_TURNS_PER_MESSAGE, 0);
    dg_transition tr = {.at_ms = NOW - 18 * 60000,
                        .scope = "conversation",
                        .cause = "budget reached: 5 agent turns in this hour (UTC) (budget."
                                 "turnsPerHour is 5); held until 11:00 UTC",
                        .state = "dormant",
                        .passed = ""};
    ck_assert_int_eq(dg_store_transition_add(st, CH1, &tr), OC_OK);
    char id[16];
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof id, "g%d", i);
        ledger_run(st, CH1, "~conv", id, NOW - 20 * 60000 + i, DG_COST_GRANTED);
    }
    dg_cost_run u = {.session_key = "sk", .run_id = "g0"};
    ck_assert_int_eq(dg_store_cost_usage(st, &u, "m-big", 1, 1000, 100), OC_OK);
    for (int i = 0; i < 3; i++) {
        snprintf(id, sizeof id, "c%d", i);
        ledger_run(st, CH1, "~conv", id, NOW - 10 * 60000 + i, DG_COST_CLAIMED);
    }
    ledger_run(st, CH1, "~conv", "s0", NOW - HOUR, DG_COST_SWAPPED);
    ledger_run(st, CH1, "~conv", "y0", NOW - 11 * HOUR, DG_COST_GRANTED);
    ledger_run(st, CH1, "~conv", "y1", NOW - 11 * HOUR + 1, DG_COST_GRANTED);
    ledger_run(st, CH2, "~conv", "o0", NOW - 60000, DG_COST_GRANTED);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
}

static json_t *snapshot_of(dg_store *st, const dg_config *cfg)
{
    char err[512] = "";
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    json_t *s = dg_serve_snapshot_store(st, "ledger.db", cfg, NOW, err, sizeof err);
    dg_store_rollback(st);
    ck_assert_msg(s != NULL, "%s", err);
    return s;
}

static json_t *scope_of(json_t *snap, const char *ch, const char *scope)
{
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(snap, "scopes"), i, o) {
        if (!strcmp(json_string_value(json_object_get(o, "channelId")), ch) &&
            !strcmp(json_string_value(json_object_get(o, "scope")), scope))
            return o;
    }
    ck_abort_msg("no scope %s %s", ch, scope);
    return NULL;
}

static json_t *budget_of(json_t *snap, const char *ch, const char *scope)
{
    return json_object_get(scope_of(snap, ch, scope), "budget");
}

/* The chart counts the ledger's verdicts: granted made, claimed and
 * swapped avoided, in the hour they were decided. */
START_TEST(test_hours_from_the_ledger)
{
    char *dir;
    dg_store *st = ledger_store(&dir);
    fill_ledger(st);
    json_t *s = snapshot_of(st, NULL);
    json_t *hours = json_object_get(s, "hours");
    ck_assert_uint_eq(json_array_size(hours), DG_SERVE_HOURS);
    struct {
        size_t at;
        int runs, made, avoided;
    } want[] = {{DG_SERVE_HOURS - 1, 9, 6, 3},
                {DG_SERVE_HOURS - 2, 1, 0, 1},
                {DG_SERVE_HOURS - 12, 2, 2, 0},
                {0, 0, 0, 0}};
    for (size_t i = 0; i < 4; i++) {
        json_t *h = json_array_get(hours, want[i].at);
        ck_assert_int_eq(json_integer_value(json_object_get(h, "runs")), want[i].runs);
        ck_assert_int_eq(json_integer_value(json_object_get(h, "made")), want[i].made);
        ck_assert_int_eq(json_integer_value(json_object_get(h, "avoided")), want[i].avoided);
    }
    ck_assert_str_eq(
        json_string_value(json_object_get(json_array_get(hours, DG_SERVE_HOURS - 1), "start")),
        "2026-12-05T10:00:00Z");
    dg_serve_hour h[DG_SERVE_HOURS];
    dg_serve_hours_of(s, NOW, h);
    ck_assert_int_eq(h[DG_SERVE_HOURS - 1].made, 6);
    ck_assert_int_eq(h[DG_SERVE_HOURS - 1].avoided, 3);
    json_decref(s);
    dg_store_close(st);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

/* Each scope's budget: the breaker (which, since, until), today's runs and
 * tokens; the limits only with the plugin config ("no config given"
 * without); the ledger's totals, with money once the config prices the
 * model. */
START_TEST(test_budgets_and_cost_with_and_without_the_config)
{
    char *dir;
    dg_store *st = ledger_store(&dir);
    fill_ledger(st);
    json_t *s = snapshot_of(st, NULL);
    json_t *b = budget_of(s, CH1, "conversation");
    ck_assert(json_is_true(json_object_get(b, "holds")));
    ck_assert_str_eq(json_string_value(json_object_get(b, "kind")), "turnsPerHour");
    ck_assert_str_eq(json_string_value(json_object_get(b, "since")), "2026-12-05T10:12:00Z");
    ck_assert_str_eq(json_string_value(json_object_get(b, "until")), "2026-12-05T11:00:00Z");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(b, "today"), "runs")), 9);
    ck_assert(json_is_null(json_object_get(b, "limits")));
    ck_assert_str_eq(text_of(b), "held by budget.turnsPerHour (agent turns in this hour (UTC)) "
                                 "since 2026-12-05T10:12:00Z until 2026-12-05T11:00:00Z; today 9 "
                                 "runs, 5 granted, 1100 tokens; limits: no config given");
    /* The page's State: held while a breaker holds, with nobody speaking. */
    ck_assert_str_eq(json_string_value(json_object_get(scope_of(s, CH1, "conversation"), "state")),
                     "held");
    ck_assert(json_is_null(json_object_get(scope_of(s, CH1, "conversation"), "speaker")));
    ck_assert_str_eq(json_string_value(json_object_get(scope_of(s, CH1, "thread:9"), "state")),
                     "dormant");
    b = budget_of(s, CH1, "thread:9");
    ck_assert(json_is_false(json_object_get(b, "holds")));
    ck_assert_str_eq(text_of(b), "today 0 runs, 0 granted, 0 tokens; limits: no config given");
    b = budget_of(s, CH2, "conversation");
    ck_assert(json_is_null(json_object_get(b, "since")));
    ck_assert(json_is_null(json_object_get(b, "until")));
    ck_assert_str_eq(text_of(b), "held by budget.turnsPerHumanMessage (agent turns since the last "
                                 "human message) until an admin's !dirigent resume; today 1 run, "
                                 "1 granted, 0 tokens; limits: no config given");
    ck_assert_str_eq(text_of(budget_of(s, CH3, "conversation")),
                     "held by budget.discussionTurns (agent turns in this discussion) until an "
                     "admin's !dirigent resume, the initiator asked to wrap up; today 0 runs, 0 "
                     "granted, 0 tokens; limits: no config given");
    ck_assert(json_is_false(json_object_get(json_object_get(s, "budget"), "configGiven")));
    json_t *cost = json_object_get(s, "cost");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(cost, "today"), "summary")),
                     "cost: 10 runs, 1 model call, 4 avoided (claimed 3, swapped 1), 1,000 tokens "
                     "in / 100 out, no price for m-big");
    json_t *kept = json_object_get(cost, "kept");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(kept, "totals"), "runs")),
                     12);
    ck_assert_str_eq(json_string_value(json_object_get(kept, "firstRun")), "2026-12-04T23:30:00Z");
    char *page = dg_serve_page(s, NULL);
    ck_assert_ptr_nonnull(strstr(page, "<td>held by budget.turnsPerHour (agent turns in this "
                                       "hour (UTC)) since 2026-12-05T10:12:00Z"));
    ck_assert_ptr_nonnull(
        strstr(page, "<h2>Cost</h2><p class=\"cost\">today (UTC): cost: 10 runs"));
    ck_assert_ptr_nonnull(
        strstr(page, "every run kept (since 2026-12-04T23:30:00Z): cost: 12 runs"));
    free(page);
    json_decref(s);

    dg_config cfg;
    char err[256] = "";
    json_t *cj = tu_json(
        "{\"discord\":{\"moderatorUserId\":\"1000000000000000001\"},\"dbPath\":\"/tmp/x.db\","
        "\"budget\":{\"turnsPerHour\":5,\"discussionTurns\":9},"
        "\"channelBudgets\":{\"" CH2 "\":{\"turnsPerHour\":0,\"tokensPerDay\":5000}},"
        "\"prices\":{\"m-big\":{\"inputPerMillion\":3,\"outputPerMillion\":15}}}");
    ck_assert_msg(dg_config_parse(cj, &cfg, err, sizeof err) == OC_OK, "%s", err);
    json_decref(cj);
    s = snapshot_of(st, &cfg);
    b = budget_of(s, CH1, "conversation");
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(b, "limits"), "turnsPerHour")), 5);
    ck_assert_msg(strstr(text_of(b), "; limits: turnsPerHour 5") != NULL, "%s", text_of(b));
    b = budget_of(s, CH2, "conversation");
    ck_assert_uint_eq(json_object_size(json_object_get(b, "limits")), 1);
    ck_assert_msg(strstr(text_of(b), "; limits: tokensPerDay 5000") != NULL, "%s", text_of(b));
    /* A discussion takes the discussion kinds only. */
    b = budget_of(s, CH3, "conversation");
    ck_assert_msg(strstr(text_of(b), "; limits: discussionTurns 9") != NULL, "%s", text_of(b));
    json_t *top = json_object_get(s, "budget");
    ck_assert(json_is_true(json_object_get(top, "configGiven")));
    ck_assert(json_is_true(json_object_get(top, "configured")));
    ck_assert_str_eq(text_of(top), "every channel: turnsPerHour 5; a discussion: discussionTurns "
                                   "9; 1 channel with its own (channelBudgets)");
    cost = json_object_get(s, "cost");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(cost, "today"), "summary")),
                     "cost: 10 runs, 1 model call, 4 avoided (claimed 3, swapped 1), 1,000 tokens "
                     "in / 100 out, <$0.01");
    json_decref(s);
    dg_config_free(&cfg);
    /* A config without budgets says so. */
    cj = tu_json("{\"discord\":{\"moderatorUserId\":\"1000000000000000001\"},"
                 "\"dbPath\":\"/tmp/x.db\"}");
    ck_assert_int_eq(dg_config_parse(cj, &cfg, err, sizeof err), OC_OK);
    json_decref(cj);
    s = snapshot_of(st, &cfg);
    ck_assert_str_eq(text_of(json_object_get(s, "budget")), "none configured");
    ck_assert_msg(strstr(text_of(budget_of(s, CH2, "conversation")), "; limits: none configured"),
                  "%s", text_of(budget_of(s, CH2, "conversation")));
    json_decref(s);
    dg_config_free(&cfg);
    dg_store_close(st);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_a_store_not_there_yet)
{
    char *dir = tu_mkdtemp();
    char *path = tu_path(dir, "none.db");
    json_t *s = dg_serve_snapshot(path, NULL, 1);
    ck_assert(json_is_false(json_object_get(s, "ok")));
    const char *e = json_string_value(json_object_get(s, "error"));
    ck_assert_msg(e && *e, "no reason");
    char *page = dg_serve_page(s, NULL);
    ck_assert_ptr_nonnull(strstr(page, "The store cannot be read: "));
    free(page);
    json_decref(s);
    struct stat sb;
    ck_assert_int_ne(stat(path, &sb), 0); /* nothing created */
    free(path);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

typedef struct got {
    long status;
    dg_buf body, head;
} got;

static size_t on_data(char *d, size_t sz, size_t n, void *u)
{
    return dg_buf_add(u, d, sz * n) ? 0 : sz * n;
}

/* GET (or method) base+path with an optional Authorization header. */
static void get(got *g, const char *method, const char *base, const char *path, const char *auth)
{
    memset(g, 0, sizeof *g);
    char *url = dg_sprintf("%s%s", base, path);
    CURL *c = curl_easy_init();
    struct curl_slist *h = auth ? curl_slist_append(NULL, auth) : NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &g->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &g->head);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &g->status);
    ck_assert_int_eq(dg_buf_add(&g->body, "", 1), 0);
    ck_assert_int_eq(dg_buf_add(&g->head, "", 1), 0);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(url);
}

static void got_free(got *g)
{
    dg_buf_free(&g->body);
    dg_buf_free(&g->head);
}

START_TEST(test_routes_over_loopback_with_a_token)
{
    three_join_and_talk();
    char *path = store_path();
    dg_serve_listen l;
    char err[512];
    ck_assert_int_eq(dg_serve_listen_parse("127.0.0.1:0", &l, err, sizeof err), OC_OK);
    dg_serve *srv = NULL;
    unsigned port = 0;
    ck_assert_int_eq(dg_serve_start(&l, path, NULL, "s3cret", &srv, &port, err, sizeof err), OC_OK);
    ck_assert_uint_gt(port, 0);
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%u", port);
    got g;
    get(&g, "GET", base, "/", NULL);
    ck_assert_int_eq(g.status, 401);
    ck_assert_ptr_null(strstr(g.body.s, CH1));
    got_free(&g);
    get(&g, "GET", base, "/api/status?token=wrong", NULL);
    ck_assert_int_eq(g.status, 401);
    got_free(&g);
    get(&g, "GET", base, "/?token=s3cret", NULL);
    ck_assert_int_eq(g.status, 200);
    ck_assert_ptr_nonnull(strcasestr(g.head.s, "Content-Type: text/html; charset=utf-8"));
    ck_assert_ptr_nonnull(strcasestr(g.head.s, "Content-Security-Policy: default-src 'none'"));
    ck_assert_ptr_nonnull(strstr(g.body.s, "<td>" CH1 "</td>"));
    ck_assert_ptr_nonnull(strstr(g.body.s, "src=\"chart.svg?token=s3cret\""));
    got_free(&g);
    get(&g, "GET", base, "/api/status", "Authorization: Bearer s3cret");
    ck_assert_int_eq(g.status, 200);
    ck_assert_ptr_nonnull(strcasestr(g.head.s, "Content-Type: application/json"));
    json_t *j = json_loads(g.body.s, 0, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert(json_is_true(json_object_get(j, "ok")));
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(j, "scopes"), 0), "channelId")),
                     CH1);
    json_decref(j);
    got_free(&g);
    get(&g, "GET", base, "/chart.svg?token=s3cret", NULL);
    ck_assert_int_eq(g.status, 200);
    ck_assert_ptr_nonnull(strcasestr(g.head.s, "Content-Type: image/svg+xml"));
    /* (its bars are of the wall clock's hours; the test host's runs are
     * on its own clock: test_snapshot_of_a_live_store counts them) */
    ck_assert_ptr_nonnull(strstr(g.body.s, "<svg xmlns="));
    ck_assert_ptr_nonnull(strstr(g.body.s, "</svg>"));
    got_free(&g);
    get(&g, "GET", base, "/other?token=s3cret", NULL);
    ck_assert_int_eq(g.status, 404);
    got_free(&g);
    get(&g, "POST", base, "/api/status?token=s3cret", NULL);
    ck_assert_int_eq(g.status, 405);
    got_free(&g);
    dg_serve_stop(srv);
    free(path);
}
END_TEST

/* Stored text that is not UTF-8 (a hand-edited file): the page's data shows
 * the row with the bad bytes replaced; the row is not dropped. */
START_TEST(test_text_that_is_not_utf8_is_shown_replaced)
{
    three_join_and_talk();
    dg_plugin *p = tth_plugin(&H);
    if (!p->store->db) /* SQLite's bytes; PostgreSQL refuses such text itself */
        return;
    ck_assert_int_eq(dg_store_begin(p->store), OC_OK);
    ck_assert_int_eq(dg_outbox_enqueue(p->store, CH1, "owed", NULL, 0, 1), OC_OK);
    ck_assert_int_eq(sqlite3_exec(p->store->db,
                                  "UPDATE outbox SET state = 2, done_at_ms = 1,"
                                  " last_error = CAST(x'6e6f20c0ff2e' AS TEXT)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(dg_store_commit(p->store), OC_OK);
    char *path = store_path();
    json_t *snap = dg_serve_snapshot(path, NULL, 1);
    json_t *rows = json_object_get(json_object_get(snap, "outbox"), "failedRows");
    ck_assert_uint_eq(json_array_size(rows), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 0), "reason")),
                     "no ??.");
    json_decref(snap);
    free(path);
}
END_TEST

/* A TCP connection from the loopback address from (127.0.0.x) to port,
 * which has sent text; -1 when refused. */
static int slow_client(const char *from, unsigned port, const char *text)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, from, &a.sin_addr);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        send(fd, text, strlen(text), MSG_NOSIGNAL) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* 1 when the server has closed fd (nothing it sends is read here). */
static int closed_by_server(int fd)
{
    char c[64];
    ssize_t n = recv(fd, c, sizeof c, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static dg_serve *serve_on_loopback(const char *token, unsigned *port, char **base)
{
    char *path = store_path();
    dg_serve_listen l;
    char err[512];
    ck_assert_int_eq(dg_serve_listen_parse("127.0.0.1:0", &l, err, sizeof err), OC_OK);
    dg_serve *srv = NULL;
    ck_assert_int_eq(dg_serve_start(&l, path, NULL, token, &srv, port, err, sizeof err), OC_OK);
    *base = dg_sprintf("http://127.0.0.1:%u", *port);
    free(path);
    return srv;
}

#define SLOW_CLIENTS 200
#define NORMAL_REQUESTS 20

/* 200 clients that never finish their headers, half of them from one
 * address, half from ten others, each dripping a byte now and then: every
 * normal request from 127.0.0.1 is answered, and the one address holds at
 * most its share of the connections. */
START_TEST(test_normal_requests_answered_while_slow_clients_hold_on)
{
    three_join_and_talk();
    unsigned port = 0;
    char *base = NULL;
    dg_serve *srv = serve_on_loopback("s3cret", &port, &base);
    int fd[SLOW_CLIENTS];
    for (int i = 0; i < SLOW_CLIENTS; i++) {
        char from[32];
        snprintf(from, sizeof from, "127.0.0.%d", i < SLOW_CLIENTS / 2 ? 2 : 3 + i % 10);
        fd[i] = slow_client(from, port, "GET /api/status HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    }
    int answered = 0;
    for (int r = 0; r < NORMAL_REQUESTS; r++) {
        for (int i = 0; i < SLOW_CLIENTS; i++)
            if (fd[i] >= 0)
                send(fd[i], "z", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        got g;
        get(&g, "GET", base, "/api/status", "Authorization: Bearer s3cret");
        answered += g.status == 200 && strstr(g.body.s, "\"ok\": true") != NULL;
        got_free(&g);
        usleep(200 * 1000);
    }
    ck_assert_int_eq(answered, NORMAL_REQUESTS);
    int one_address_closed = 0;
    for (int i = 0; i < SLOW_CLIENTS / 2; i++)
        one_address_closed += fd[i] < 0 || closed_by_server(fd[i]);
    ck_assert_int_ge(one_address_closed, SLOW_CLIENTS / 2 - 16);
    for (int i = 0; i < SLOW_CLIENTS; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    dg_serve_stop(srv);
    free(base);
}
END_TEST

/* A wrong ?token= on the request line gets a short leash before any header
 * has come: a client dripping a header line every 2 s (within the idle
 * limit) is cut; waited for with a generous deadline. */
START_TEST(test_a_wrong_token_on_the_request_line_is_cut_early)
{
    unsigned port = 0;
    char *base = NULL;
    dg_serve *srv = serve_on_loopback("s3cret", &port, &base);
    int fd = slow_client("127.0.0.1", port, "GET /api/status?token=wrong HTTP/1.1\r\n");
    ck_assert_int_ge(fd, 0);
    int cut = 0;
    for (int waited = 0; waited < 20 && !cut; waited += 2) {
        sleep(2);
        cut =
            closed_by_server(fd) || send(fd, "X-Drip: 1\r\n", 11, MSG_NOSIGNAL | MSG_DONTWAIT) < 0;
    }
    ck_assert_msg(cut, "the connection is still open after 20 s");
    close(fd);
    dg_serve_stop(srv);
    free(base);
}
END_TEST

/* The command itself: a non-loopback address without a token is refused
 * with exit 2 before anything listens. */
START_TEST(test_command_refuses_an_open_address_without_a_token)
{
    char *bin = tu_path(tu_build_dir(), "dirigent-ctl");
    char *errp = tu_path(H.dir, "serve.err");
    char *db = tu_path(H.dir, "dirigent.db");
    const char *argv[] = {bin, "serve", "--listen", "0.0.0.0:0", "--db", db, NULL};
    const char *unset[] = {"DIRIGENT_CTL_TOKEN", NULL};
    ck_assert_int_eq(tu_run_wait(argv, NULL, errp, unset, 20000), 2);
    FILE *f = fopen(errp, "r");
    char line[1024] = "";
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    ck_assert_msg(strstr(line, "--listen 0.0.0.0") && strstr(line, "--token"), "%s", line);
    const char *argv2[] = {bin, "serve", "--listen", "127.0.0.1", "--db", db, NULL};
    ck_assert_int_eq(tu_run_wait(argv2, NULL, NULL, unset, 20000), 2);
    const char *argv3[] = {bin, "serve", "--listen", "127.0.0.1:0", "--db", "", NULL};
    ck_assert_int_eq(tu_run_wait(argv3, NULL, NULL, unset, 20000), 2);
    free(bin);
    free(errp);
    free(db);
}
END_TEST

Suite *make_serve_suite(void)
{
    Suite *s = suite_create("serve");
    TCase *tc = tcase_create("serve");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_listen_parse_and_the_token_rule);
    tcase_add_test(tc, test_token_check);
    tcase_add_test(tc, test_html_escape_and_a_hostile_snapshot);
    tcase_add_test(tc, test_chart_svg);
    tcase_add_test(tc, test_snapshot_of_a_live_store);
    tcase_add_test(tc, test_hours_from_the_ledger);
    tcase_add_test(tc, test_budgets_and_cost_with_and_without_the_config);
    tcase_add_test(tc, test_a_store_not_there_yet);
    tcase_add_test(tc, test_routes_over_loopback_with_a_token);
    tcase_add_test(tc, test_command_refuses_an_open_address_without_a_token);
    tcase_add_test(tc, test_normal_requests_answered_while_slow_clients_hold_on);
    tcase_add_test(tc, test_a_wrong_token_on_the_request_line_is_cut_early);
    tcase_add_test(tc, test_text_that_is_not_utf8_is_shown_replaced);
    suite_add_tcase(s, tc);
    return s;
}
