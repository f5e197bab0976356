/*
 * check_serve.c -- dirigent-ctl serve (tools/ctl_serve*.c): the listening
 * rule and the token, HTML escaping, the SVG chart, the snapshot of a live
 * store (the turn test host's), and the routes over HTTP on 127.0.0.1.
 */
#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl_serve.h"
#include "openclaw/plugin.h"
#include "testutil.h"
#include "turn_test_host.h"

#define CH1 "300000000000000001"

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
        "{s:b,s:s,s:i,s:s,s:[{s:s,s:s,s:s,s:[s],s:s,s:[s],s:i,s:s,s:n}],s:{s:b,s:s},"
        "s:[{s:i,s:s,s:s,s:s,s:s,s:[s],s:s,s:s,s:n,s:s,s:s,s:s,s:[s],"
        "s:[{s:s,s:s,s:s,s:s,s:s}]}],s:b,s:[],"
        "s:{s:i,s:i,s:i,s:n,s:[],s:[{s:i,s:s,s:i,s:s,s:s}]}}",
        "ok", 1, "store", x, "schemaVersion", 17, "generatedAt", "2026-12-05T06:00:00Z", "scopes",
        "channelId", CH1, "scope", x, "state", "speaking", "order", x, "speaker", x, "passed", x,
        "agentMessages", 3, "lastChange", "2026-12-05T06:00:00Z", "budget", "budget", "configured",
        0, "text", "none configured", "discussions", "discussionId", 1, "channelId", x, "name", x,
        "status", x, "initiator", x, "participants", x, "originChannelId", x, "createdAt", x,
        "closedAt", "summaryPath", x, "turn", x, "speaker", x, "order", x, "timeline", "at", x,
        "what", x, "speakerBefore", x, "speakerAfter", x, "state", x, "moreDiscussions", 0, "hours",
        "outbox", "pending", 0, "sent", 1, "failed", 1, "oldestPendingAgeSec", "pendingRows",
        "failedRows", "id", 9, "channelId", x, "attempts", 5, "failedAt", x, "reason", x);
    ck_assert_ptr_nonnull(snap);
    char *page = dg_serve_page(snap, "a&b<");
    ck_assert_ptr_nonnull(page);
    ck_assert_msg(!strstr(page, "<script>alert"), "unescaped text in the page");
    ck_assert_uint_eq(count_of(page, "<script"), 1); /* the page's own */
    /* store, scope, order, speaker, passed; the 9 fields of the discussion
     * the page shows and its timeline's 5; the failed row's channel, time
     * and reason. */
    ck_assert_uint_eq(count_of(page, "&lt;script&gt;alert(1)&lt;/script&gt;"), 5 + 9 + 5 + 3);
    ck_assert_ptr_nonnull(strstr(page, "<td>none configured</td>"));
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
    json_t *s = dg_serve_snapshot(path, dg_now_ms(p));
    ck_assert_msg(json_is_true(json_object_get(s, "ok")), "%s",
                  json_string_value(json_object_get(s, "error")));
    json_t *sc = json_array_get(json_object_get(s, "scopes"), 0);
    ck_assert_uint_eq(json_array_size(json_object_get(s, "scopes")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(sc, "channelId")), CH1);
    ck_assert_str_eq(json_string_value(json_object_get(sc, "speaker")), TTH_CHARLIE);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(sc, "passed"), 0)),
                     TTH_BRAVO);
    ck_assert_uint_eq(json_array_size(json_object_get(sc, "order")), 3);
    ck_assert(json_is_null(json_object_get(sc, "budget")));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(s, "budget"), "text")),
                     "none configured");
    /* Two runs ended this hour, both after a model call. */
    json_t *hours = json_object_get(s, "hours");
    ck_assert_uint_eq(json_array_size(hours), DG_SERVE_HOURS);
    json_t *now = json_array_get(hours, DG_SERVE_HOURS - 1);
    ck_assert_int_eq(json_integer_value(json_object_get(now, "runs")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(now, "made")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(now, "avoided")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(hours, 0), "runs")), 0);
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
    s = dg_serve_snapshot(path, dg_now_ms(p));
    now = json_array_get(json_object_get(s, "hours"), DG_SERVE_HOURS - 1);
    ck_assert_int_eq(json_integer_value(json_object_get(now, "runs")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(now, "made")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(now, "avoided")), 1);
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

START_TEST(test_a_store_not_there_yet)
{
    char *dir = tu_mkdtemp();
    char *path = tu_path(dir, "none.db");
    json_t *s = dg_serve_snapshot(path, 1);
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
    ck_assert_int_eq(dg_serve_start(&l, path, "s3cret", &srv, &port, err, sizeof err), OC_OK);
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
    tcase_add_test(tc, test_a_store_not_there_yet);
    tcase_add_test(tc, test_routes_over_loopback_with_a_token);
    tcase_add_test(tc, test_command_refuses_an_open_address_without_a_token);
    suite_add_tcase(s, tc);
    return s;
}
