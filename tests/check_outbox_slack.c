/*
 * check_outbox_slack.c -- the outbox on Slack (chat/chat_slack.c) against
 * the in-process fake Slack: rows go out in order per channel with their
 * key in the message metadata, and exactly once across a kill -9, where
 * Slack has no nonce: a row that may have been posted before the crash is
 * looked up by its key in the channel's history before it is sent again.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_slack.h"
#include "outbox.h"
#include "outbox_env.h"
#include "store.h"
#include "store_instances.h"
#include "store_int.h"
#include "store_outbox.h"
#include "testutil.h"

typedef struct senv {
    fake_slack *fs;
    obe e;
    char *dir, *db;
    char work[16], ops[16];
} senv;

static const dg_chat_options slack_client = {
    .platform = DG_PLATFORM_SLACK,
    .timeout_ms = 5000,
    .backoff_base_ms = 5,
    .backoff_max_ms = 40,
};

static const dg_outbox_options quick_outbox = {.backoff_base_ms = 20, .backoff_max_ms = 200};

static void fake_up(senv *s)
{
    char err[200];
    ck_assert_msg(fake_slack_start(NULL, &s->fs, err, sizeof err) == 0, "%s", err);
    fake_slack_user_spec mod = {.user_id = OBE_SLACK_MOD_ID, .token = OBE_SLACK_TOKEN, .bot = 1};
    ck_assert_int_eq(fake_slack_add_user(s->fs, &mod), 0);
    fake_slack_user_spec agent = {.user_id = "UAGENT01", .name = "planner", .bot = 1};
    ck_assert_int_eq(fake_slack_add_user(s->fs, &agent), 0);
    const char *members[] = {OBE_SLACK_MOD_ID, "UAGENT01", NULL};
    ck_assert_int_eq(fake_slack_add_channel(s->fs, NULL, "work", 0, members, s->work), 0);
    ck_assert_int_eq(fake_slack_add_channel(s->fs, NULL, "ops", 0, members, s->ops), 0);
}

static void env_up(senv *s)
{
    char err[256];
    ck_assert_msg(
        obe_open_on(&s->e, fake_slack_url(s->fs), s->db, &slack_client, err, sizeof err) == 0, "%s",
        err);
}

static senv *senv_open(void)
{
    senv *s = calloc(1, sizeof *s);
    ck_assert_ptr_nonnull(s);
    s->dir = tu_mkdtemp();
    s->db = tu_db_target(s->dir);
    fake_up(s);
    env_up(s);
    return s;
}

static void start(senv *s, int inflight)
{
    dg_outbox_options o = quick_outbox;
    o.max_inflight = inflight;
    char err[256];
    ck_assert_msg(dg_outbox_start_opts(&s->e.p, &o, &s->e.p.outbox, err, sizeof err) == OC_OK, "%s",
                  err);
}

static void senv_close(senv *s)
{
    char *log = obe_log_text(&s->e);
    ck_assert_msg(!strstr(log, OBE_SLACK_TOKEN), "token in the log: %s", log);
    free(log);
    obe_close(&s->e);
    fake_slack_stop(s->fs);
    tu_rmtree(s->dir);
    free(s->dir);
    free(s->db);
    free(s);
}

static void enqueue(senv *s, const char *chan, const char *text)
{
    ck_assert_int_eq(dg_store_begin(s->e.p.store), OC_OK);
    const char *mention[] = {"UAGENT01"};
    ck_assert_int_eq(dg_outbox_enqueue(s->e.p.store, chan, text, mention, 1, dg_now_ms(&s->e.p)),
                     OC_OK);
    ck_assert_int_eq(dg_store_commit(s->e.p.store), OC_OK);
    dg_outbox_kick(s->e.p.outbox);
}

static dg_outbox_row *rows_of(senv *s, const char *chan, size_t *n)
{
    dg_outbox_row *rows = NULL;
    ck_assert_int_eq(dg_store_begin(s->e.p.store), OC_OK);
    ck_assert_int_eq(dg_store_outbox_list(s->e.p.store, chan, &rows, n), OC_OK);
    ck_assert_int_eq(dg_store_commit(s->e.p.store), OC_OK);
    return rows;
}

static const char *key_of(json_t *msg)
{
    json_t *meta = json_object_get(msg, "metadata");
    return json_string_value(json_object_get(json_object_get(meta, "event_payload"), "key"));
}

START_TEST(rows_go_out_in_order_with_their_keys)
{
    senv *s = senv_open();
    start(s, _i ? 16 : 1);
    enqueue(s, s->work, "<@UAGENT01>, it is your turn.");
    enqueue(s, s->ops, "ops one");
    enqueue(s, s->work, "work two");
    enqueue(s, s->work, "work three");
    ck_assert_int_eq(dg_outbox_wait_idle(s->e.p.outbox, 10000), OC_OK);
    json_t *work = fake_slack_messages(s->fs, s->work);
    ck_assert_uint_eq(json_array_size(work), 3);
    static const char *const want[] = {"<@UAGENT01>, it is your turn.", "work two", "work three"};
    size_t n = 0;
    dg_outbox_row *rows = rows_of(s, s->work, &n);
    ck_assert_uint_eq(n, 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *m = json_array_get(work, i);
        ck_assert_str_eq(json_string_value(json_object_get(m, "text")), want[i]);
        ck_assert_str_eq(json_string_value(json_object_get(m, "user")), OBE_SLACK_MOD_ID);
        ck_assert_int_eq(rows[i].state, DG_OUTBOX_SENT);
        ck_assert_str_eq(key_of(m), rows[i].nonce);
        ck_assert_str_eq(rows[i].message_id, json_string_value(json_object_get(m, "ts")));
    }
    dg_outbox_rows_free(rows, n);
    json_decref(work);
    ck_assert_uint_eq(fake_slack_message_count(s->fs, s->ops), 1);
    /* Nothing was looked up: these rows were made by this process. */
    ck_assert_uint_eq(fake_slack_request_count(s->fs, "conversations.history"), 0);
    senv_close(s);
}
END_TEST

/* Child of the crash test: enqueue one message, let the dispatcher post
 * it, and wait to be killed. Plain code: no Check calls in this process. */
static void crash_child(int rfd, const char *db, int inflight)
{
    alarm(60); /* never outlive a failed test */
    char buf[256], chan[64];
    if (obe_child_args(rfd, buf, sizeof buf, chan, sizeof chan) != 0)
        _exit(2);
    obe e;
    char err[256];
    if (obe_open_on(&e, buf, db, &slack_client, err, sizeof err) != 0)
        _exit(3);
    dg_outbox_options o = quick_outbox;
    o.max_inflight = inflight;
    if (dg_outbox_start_opts(&e.p, &o, &e.p.outbox, err, sizeof err) != OC_OK)
        _exit(4);
    if (dg_store_begin(e.p.store) != OC_OK ||
        dg_outbox_enqueue(e.p.store, chan, "owed exactly once", NULL, 0, dg_now_ms(&e.p)) !=
            OC_OK ||
        dg_store_commit(e.p.store) != OC_OK)
        _exit(5);
    dg_outbox_kick(e.p.outbox);
    for (;;)
        pause();
}

START_TEST(kill_between_post_and_mark_posts_once)
{
    senv *s = calloc(1, sizeof *s);
    s->dir = tu_mkdtemp();
    s->db = tu_db_target(s->dir);
    /* Fork before any thread exists; the child learns the URL by pipe. */
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(pfd[1]);
        crash_child(pfd[0], s->db, _i ? 16 : 1);
    }
    close(pfd[0]);
    fake_up(s);
    /* Slack stores the message, then the answer never comes. */
    ck_assert_int_eq(
        fake_slack_add_fault(s->fs, "chat.postMessage", FS_FAULT_DELAY_AFTER, 1, 0, 60000, NULL),
        0);
    char line[200];
    int len = snprintf(line, sizeof line, "%s\n%s\n", fake_slack_url(s->fs), s->work);
    ck_assert_int_eq(write(pfd[1], line, (size_t)len), len);
    close(pfd[1]);
    int waited = fake_slack_wait_messages(s->fs, s->work, 1, 15000);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert_msg(waited == 0, "the child never posted (exit status %d)", status);
    ck_assert(WIFSIGNALED(status));

    /* Restart: the row is still pending; its key is found in the channel,
     * so it is marked sent with the first message and not posted again. */
    fake_slack_clear_faults(s->fs);
    env_up(s);
    size_t n = 0;
    dg_outbox_row *rows = rows_of(s, s->work, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_PENDING);
    dg_outbox_rows_free(rows, n);
    start(s, _i ? 16 : 1);
    ck_assert_int_eq(dg_outbox_wait_idle(s->e.p.outbox, 10000), OC_OK);
    ck_assert_uint_eq(fake_slack_message_count(s->fs, s->work), 1);
    ck_assert_uint_eq(fake_slack_request_count(s->fs, "chat.postMessage"), 1);
    ck_assert_uint_ge(fake_slack_request_count(s->fs, "conversations.history"), 1);
    json_t *msgs = fake_slack_messages(s->fs, s->work);
    rows = rows_of(s, s->work, &n);
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_SENT);
    ck_assert_str_eq(rows[0].message_id,
                     json_string_value(json_object_get(json_array_get(msgs, 0), "ts")));
    dg_outbox_rows_free(rows, n);
    json_decref(msgs);
    senv_close(s);
}
END_TEST

START_TEST(row_left_unsent_by_a_stop_is_posted_once_at_the_start)
{
    /* A row from before this start that never reached Slack: the lookup
     * finds nothing and the row goes out once. */
    senv *s = senv_open();
    enqueue(s, s->ops, "queued before the stop");
    obe_close(&s->e);
    env_up(s);
    start(s, 16);
    ck_assert_int_eq(dg_outbox_wait_idle(s->e.p.outbox, 10000), OC_OK);
    ck_assert_uint_eq(fake_slack_message_count(s->fs, s->ops), 1);
    ck_assert_uint_eq(fake_slack_request_count(s->fs, "conversations.history"), 1);
    /* A row made after the start is not looked up. */
    enqueue(s, s->ops, "made after the start");
    ck_assert_int_eq(dg_outbox_wait_idle(s->e.p.outbox, 10000), OC_OK);
    ck_assert_uint_eq(fake_slack_message_count(s->fs, s->ops), 2);
    ck_assert_uint_eq(fake_slack_request_count(s->fs, "conversations.history"), 1);
    senv_close(s);
}
END_TEST

START_TEST(a_row_slack_refuses_fails_alone)
{
    /* A channel the moderator is not in: Slack refuses for good; the row
     * fails with Slack's reason and the other channel goes on. */
    senv *s = senv_open();
    char closed[16];
    const char *only_agent[] = {"UAGENT01", NULL};
    ck_assert_int_eq(fake_slack_add_channel(s->fs, NULL, "closed", 0, only_agent, closed), 0);
    start(s, 16);
    enqueue(s, closed, "nobody lets me in");
    enqueue(s, s->work, "fine here");
    ck_assert_int_eq(dg_outbox_wait_idle(s->e.p.outbox, 10000), OC_OK);
    size_t n = 0;
    dg_outbox_row *rows = rows_of(s, closed, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_FAILED);
    ck_assert_msg(rows[0].last_error && strstr(rows[0].last_error, "not_in_channel"), "%s",
                  rows[0].last_error ? rows[0].last_error : "(none)");
    dg_outbox_rows_free(rows, n);
    ck_assert_uint_eq(fake_slack_message_count(s->fs, s->work), 1);
    senv_close(s);
}
END_TEST

/* Wait until the log has needle (the dispatcher answered), at most 10 s. */
static int log_shows(senv *s, const char *needle)
{
    for (int i = 0; i < 500; i++) {
        if (obe_log_has(&s->e, needle))
            return 1;
        usleep(20 * 1000);
    }
    return 0;
}

START_TEST(refused_token_holds_every_row)
{
    /* Slack refuses a revoked token with HTTP 200 and invalid_auth: the
     * token, not the message, so the rows stay pending (nothing failed, no
     * request per row) and go out after a restart with a token Slack takes. */
    senv *s = senv_open();
    fake_slack_user_spec mod = {
        .user_id = OBE_SLACK_MOD_ID, .token = "xoxb-0000-0000-TheTokenNowValid", .bot = 1};
    ck_assert_int_eq(fake_slack_add_user(s->fs, &mod), 0);
    start(s, 16);
    enqueue(s, s->work, "first");
    enqueue(s, s->work, "second");
    enqueue(s, s->ops, "other channel");
    ck_assert(log_shows(s, "Slack refuses the moderator token"));
    ck_assert(obe_log_has(&s->e, "DIRIGENT_SLACK_MODERATOR_TOKEN"));
    ck_assert_uint_le(fake_slack_request_count(s->fs, "chat.postMessage"), 1);
    ck_assert_int_eq(obe_count(&s->e, DG_OUTBOX_PENDING), 3);
    /* The operator fixes the token and restarts. */
    dg_outbox_stop(s->e.p.outbox);
    s->e.p.outbox = NULL;
    mod.token = OBE_SLACK_TOKEN;
    ck_assert_int_eq(fake_slack_add_user(s->fs, &mod), 0);
    start(s, 16);
    ck_assert_int_eq(dg_outbox_wait_idle(s->e.p.outbox, 10000), OC_OK);
    ck_assert_uint_eq(fake_slack_message_count(s->fs, s->work), 2);
    ck_assert_uint_eq(fake_slack_message_count(s->fs, s->ops), 1);
    senv_close(s);
}
END_TEST

START_TEST(gone_channel_fails_for_good_naming_the_platform)
{
    /* A channel Slack does not know (deleted, or never shared with the
     * app): its row fails for good, saying the channel is gone on Slack. */
    senv *s = senv_open();
    start(s, 16);
    enqueue(s, "CGONE0001", "nobody will read this");
    enqueue(s, s->work, "fine here");
    ck_assert_int_eq(dg_outbox_wait_idle(s->e.p.outbox, 10000), OC_OK);
    char *why = obe_failed_reason(&s->e, "CGONE0001");
    ck_assert_msg(why && strstr(why, "the channel is gone on Slack") &&
                      strstr(why, "channel_not_found"),
                  "%s", why ? why : "(none)");
    free(why);
    ck_assert(obe_log_has(&s->e, "the channel is gone on Slack"));
    ck_assert_uint_eq(fake_slack_message_count(s->fs, s->work), 1);
    senv_close(s);
}
END_TEST

/* Two gateways on one store: the one holding a channel's lease stops
 * renewing it after Slack stored its post and before the row was marked.
 * The instance that takes the channel over looks the row's key up before
 * sending it, as a start does (Slack has no nonce to answer a resend). */
START_TEST(channel_taken_over_from_a_lapsed_instance_posts_once)
{
    senv *s = senv_open();
    char name[40], err[256];
    snprintf(name, sizeof name, "outbox:%s", s->work);
    dg_store *other = NULL;
    ck_assert_msg(dg_store_open(s->db, &other, err, sizeof err) == OC_OK, "%s", err);
    int got = 0, fresh = 0;
    int64_t held = 0, wall = dg_store_wall_ms();
    ck_assert_int_eq(dg_store_begin(other), OC_OK);
    ck_assert_int_eq(
        dg_store_lease_take(other, name, wall, wall + 3600 * 1000, 0, &got, &fresh, &held), OC_OK);
    ck_assert_int_eq(dg_store_commit(other), OC_OK);
    ck_assert(got);
    start(s, 16); /* before the row: a start's lookup does not cover it */
    enqueue(s, s->work, "<@UAGENT01>, it is your turn.");
    /* What the other instance did under its lease: the post reached Slack
     * with the row's key, the mark never came. */
    size_t n = 0;
    dg_outbox_row *rows = rows_of(s, s->work, &n);
    ck_assert_uint_eq(n, 1);
    dg_chat *c = NULL;
    dg_chat_options o = slack_client;
    o.api_base = fake_slack_url(s->fs);
    o.token = OBE_SLACK_TOKEN;
    ck_assert_msg(dg_chat_new(&o, &c, err, sizeof err) == OC_OK, "%s", err);
    dg_chat_post_spec post = {.channel_id = s->work, .text = rows[0].content, .key = rows[0].nonce};
    char ts[DG_CHAT_ID_MAX];
    dg_chat_err cerr;
    ck_assert_msg(dg_chat_post(c, &post, ts, &cerr) == OC_OK, "%s", cerr.message);
    dg_chat_free(c);
    dg_outbox_rows_free(rows, n);
    /* Its lease lapses (it stopped renewing). */
    ck_assert_int_eq(dg_store_begin(other), OC_OK);
    dg_stmt *st = dg_store_stmt(other, "UPDATE store_leases SET until_ms = 1 WHERE name = ?1");
    ck_assert_ptr_nonnull(st);
    dg_store_bind_text(st, 1, name);
    ck_assert_int_eq(dg_store_run(st), OC_OK);
    ck_assert_int_eq(dg_store_commit(other), OC_OK);
    /* Taken over within a lease poll; the row is found, not sent again. */
    int done = 0;
    for (int i = 0; i < 200 && !done; i++) {
        rows = rows_of(s, s->work, &n);
        int pending = rows[0].state == DG_OUTBOX_PENDING;
        if (!pending) {
            ck_assert_int_eq(rows[0].state, DG_OUTBOX_SENT);
            ck_assert_str_eq(rows[0].message_id, ts);
        }
        dg_outbox_rows_free(rows, n);
        done = !pending;
        if (!done)
            usleep(50 * 1000);
    }
    ck_assert_msg(done, "the row is still pending 10 s after the lease lapsed");
    ck_assert_uint_eq(fake_slack_message_count(s->fs, s->work), 1);
    ck_assert_uint_eq(fake_slack_request_count(s->fs, "conversations.history"), 1);
    dg_store_close(other);
    senv_close(s);
}
END_TEST

Suite *make_outbox_slack_suite(void)
{
    Suite *s = suite_create("outbox_slack");
    TCase *tc = tcase_create("outbox_slack");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, rows_go_out_in_order_with_their_keys, 0, 2);
    tcase_add_loop_test(tc, kill_between_post_and_mark_posts_once, 0, 2);
    tcase_add_test(tc, row_left_unsent_by_a_stop_is_posted_once_at_the_start);
    tcase_add_test(tc, a_row_slack_refuses_fails_alone);
    tcase_add_test(tc, refused_token_holds_every_row);
    tcase_add_test(tc, gone_channel_fails_for_good_naming_the_platform);
    tcase_add_test(tc, channel_taken_over_from_a_lapsed_instance_posts_once);
    suite_add_tcase(s, tc);
    return s;
}
