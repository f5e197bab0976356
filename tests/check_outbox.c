/*
 * check_outbox.c -- the durable moderator outbox against the fake Discord:
 * sending with a stable nonce, order per channel, retries and permanent
 * failures, splitting, resending on start, a crash between Discord's
 * acceptance and the mark, 500 messages through a fake failing 30% of
 * calls, and a bounded shutdown while Discord hangs.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "discord.h"
#include "failalloc.h"
#include "fake_discord.h"
#include "faultvfs.h"
#include "outbox.h"
#include "outbox_env.h"
#include "store.h"
#include "store_test.h"
#include "store_discuss.h"
#include "store_outbox.h"
#include "store_int.h"
#include "store_instances.h"
#include "pg_server.h"
#include "testutil.h"

#define MEMBER "300000000000000001"

typedef struct oenv {
    char *dir;
    char *db;
    fake_discord *fd;
    char chan[24], chan2[24];
    obe e;
} oenv;

static const dg_chat_options quick_client = {
    .timeout_ms = 5000,
    .backoff_base_ms = 5,
    .backoff_max_ms = 40,
};

static const dg_outbox_options quick_outbox = {
    .backoff_base_ms = 20,
    .backoff_max_ms = 200,
};

/* The fault, crash and load tests run against both dispatchers: one post
 * at a time (loop index 0) and one per channel in flight (index 1). */
static dg_outbox_options quick_outbox_for(int i)
{
    dg_outbox_options o = quick_outbox;
    o.max_inflight = i ? 16 : 1;
    return o;
}

static void fake_up(oenv *o)
{
    char err[200];
    ck_assert_msg(fake_discord_start(NULL, &o->fd, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(fake_discord_add_user(o->fd, OBE_TOKEN, OBE_MOD_ID, "moderator", 1), 0);
    ck_assert_int_eq(fake_discord_add_channel(o->fd, NULL, "general", o->chan), 0);
    ck_assert_int_eq(fake_discord_add_channel(o->fd, NULL, "random", o->chan2), 0);
}

static void env_up(oenv *o, const dg_chat_options *tune)
{
    char err[256];
    ck_assert_msg(obe_open(&o->e, fake_discord_url(o->fd), o->db, tune ? tune : &quick_client, err,
                           sizeof err) == 0,
                  "%s", err);
}

static oenv *oenv_open(const dg_chat_options *tune)
{
    oenv *o = calloc(1, sizeof *o);
    ck_assert_ptr_nonnull(o);
    o->dir = tu_mkdtemp();
    o->db = tu_db_target(o->dir);
    fake_up(o);
    env_up(o, tune);
    return o;
}

/* An environment whose Discord client makes at most client_attempts
 * requests per outbox attempt (quick back-off otherwise). */
static oenv *oenv_open_tries(int client_attempts)
{
    dg_chat_options tune = quick_client;
    tune.max_attempts = client_attempts;
    return oenv_open(&tune);
}

/* The next `count` posts to chan answer with fault (retry_after in s for a
 * 429). */
static void fail_posts(oenv *o, const char *chan, int fault, int count, double retry_after)
{
    char route[64];
    snprintf(route, sizeof route, "POST /channels/%s/messages", chan);
    ck_assert_int_eq(fake_discord_add_fault(o->fd, route, fault, count, retry_after, 0), 0);
}

static void oenv_start(oenv *o, const dg_outbox_options *opt)
{
    char err[256];
    ck_assert_msg(dg_outbox_start_opts(&o->e.p, opt ? opt : &quick_outbox, &o->e.p.outbox, err,
                                       sizeof err) == OC_OK,
                  "%s", err);
}

/* The token never reached a log line, whatever happened. */
static void assert_no_token(obe *e)
{
    char *log = obe_log_text(e);
    ck_assert_msg(!strstr(log, OBE_TOKEN), "token in the log: %s", log);
    free(log);
}

static void oenv_close(oenv *o)
{
    assert_no_token(&o->e);
    obe_close(&o->e);
    fake_discord_stop(o->fd);
    tu_rmtree(o->dir);
    free(o->dir);
    free(o->db);
    free(o);
}

static void enqueue(oenv *o, const char *chan, const char *text, const char *const *mentions,
                    size_t n)
{
    ck_assert_int_eq(dg_store_begin(o->e.p.store), OC_OK);
    int rc = dg_outbox_enqueue(o->e.p.store, chan, text, mentions, n, dg_now_ms(&o->e.p));
    ck_assert_int_eq(rc, OC_OK);
    ck_assert_int_eq(dg_store_commit(o->e.p.store), OC_OK);
    dg_outbox_kick(o->e.p.outbox);
}

static dg_outbox_row *rows_of(obe *e, const char *chan, size_t *n)
{
    dg_outbox_row *rows = NULL;
    ck_assert_int_eq(dg_store_begin(e->p.store), OC_OK);
    ck_assert_int_eq(dg_store_outbox_list(e->p.store, chan, &rows, n), OC_OK);
    ck_assert_int_eq(dg_store_commit(e->p.store), OC_OK);
    return rows;
}

static void wait_idle(oenv *o, long ms)
{
    ck_assert_msg(dg_outbox_wait_idle(o->e.p.outbox, ms) == OC_OK, "outbox not idle after %ld ms",
                  ms);
}

static const char *jstr(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static unsigned long long id_num(const char *s)
{
    return strtoull(s, NULL, 10);
}

/* ---- basic sending --------------------------------------------------------------------- */

START_TEST(sends_with_nonce_and_marks_sent)
{
    oenv *o = oenv_open(NULL);
    oenv_start(o, NULL);
    const char *mentions[] = {MEMBER};
    enqueue(o, o->chan, "kickoff for <@" MEMBER "> @everyone", mentions, 1);
    ck_assert_int_eq(fake_discord_wait_messages(o->fd, o->chan, 1, 10000), 0);
    wait_idle(o, 10000);

    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, o->chan, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_SENT);
    ck_assert_int_eq(rows[0].attempts, 0);
    ck_assert_uint_le(strlen(rows[0].nonce), 25);
    ck_assert_str_eq(rows[0].mentions, MEMBER);
    ck_assert_int_gt(rows[0].done_at_ms, 0);

    json_t *msgs = fake_discord_messages(o->fd, o->chan);
    json_t *m = json_array_get(msgs, 0);
    ck_assert_str_eq(jstr(m, "id"), rows[0].message_id);
    ck_assert_str_eq(jstr(json_object_get(m, "author"), "id"), OBE_MOD_ID);
    ck_assert_str_eq(jstr(m, "nonce"), rows[0].nonce);
    ck_assert(json_is_false(json_object_get(m, "mention_everyone")));

    json_t *reqs = fake_discord_requests(o->fd, 0);
    ck_assert_uint_eq(json_array_size(reqs), 1);
    json_t *body = json_object_get(json_array_get(reqs, 0), "body");
    ck_assert(json_is_true(json_object_get(body, "enforce_nonce")));
    json_t *want = json_pack("{s:[], s:[s]}", "parse", "users", MEMBER);
    ck_assert(json_equal(json_object_get(body, "allowed_mentions"), want));
    json_decref(want);
    json_decref(reqs);
    json_decref(msgs);
    dg_outbox_rows_free(rows, n);

    dg_outbox_stats st;
    dg_outbox_get_stats(o->e.p.outbox, &st);
    ck_assert_uint_eq(st.sent, 1);
    ck_assert_uint_eq(st.failed, 0);
    oenv_close(o);
}
END_TEST

/* Marks in statements of several rows: 37 rows (three full
 * statements and a short one that repeats its last pair), one of them
 * already sent and one named twice: each row gets its own message id,
 * the one already sent keeps its first, the count says what changed. */
START_TEST(marks_sent_in_batches)
{
    oenv *o = oenv_open(NULL);
    dg_store *st = o->e.p.store;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    for (int i = 0; i < 37; i++) {
        char text[32];
        snprintf(text, sizeof text, "row %d", i);
        ck_assert_int_eq(dg_outbox_enqueue(st, o->chan, text, NULL, 0, 1), OC_OK);
    }
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, o->chan, &n);
    ck_assert_uint_eq(n, 37);
    int64_t ids[38];
    char mid[38][24];
    const char *mids[38];
    for (size_t i = 0; i < 37; i++) {
        ids[i] = rows[i].id;
        snprintf(mid[i], sizeof mid[i], "9%zu", 1000 + i);
        mids[i] = mid[i];
    }
    ids[37] = rows[5].id; /* named twice: changed once */
    mids[37] = mid[5];
    size_t marked = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_outbox_mark_sent(st, rows[20].id, "777", 5), OC_OK);
    const char *none[] = {"1", NULL};
    ck_assert_int_eq(dg_store_outbox_mark_sent_many(st, ids, none, 2, 6, &marked), OC_ERR_INVALID);
    ck_assert_uint_eq(marked, 0);
    int mrc = dg_store_outbox_mark_sent_many(st, ids, mids, 38, 6, &marked);
    ck_assert_msg(mrc == OC_OK, "%s", dg_store_errmsg(st));
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    ck_assert_uint_eq(marked, 36);
    dg_outbox_rows_free(rows, n);
    rows = rows_of(&o->e, o->chan, &n);
    for (size_t i = 0; i < 37; i++) {
        ck_assert_int_eq(rows[i].state, DG_OUTBOX_SENT);
        ck_assert_str_eq(rows[i].message_id, i == 20 ? "777" : mid[i]);
        ck_assert_int_eq(rows[i].done_at_ms, i == 20 ? 5 : 6);
    }
    dg_outbox_rows_free(rows, n);
    oenv_close(o);
}
END_TEST

START_TEST(enqueue_refuses_bad_input)
{
    oenv *o = oenv_open(NULL);
    dg_store *st = o->e.p.store;
    const char *bad[] = {"nope"};
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_outbox_enqueue(st, "general", "x", NULL, 0, 1), OC_ERR_INVALID);
    ck_assert_int_eq(dg_outbox_enqueue(st, o->chan, "", NULL, 0, 1), OC_ERR_INVALID);
    ck_assert_int_eq(dg_outbox_enqueue(st, o->chan, " \n\t ", NULL, 0, 1), OC_ERR_INVALID);
    ck_assert_int_eq(dg_outbox_enqueue(st, o->chan, "x", bad, 1, 1), OC_ERR_INVALID);
    ck_assert_int_eq(dg_outbox_enqueue(st, o->chan, "bad \xff utf8", NULL, 0, 1), OC_ERR_INVALID);
    ck_assert_int_eq(dg_outbox_enqueue(st, o->chan, "x", NULL, 1, 1), OC_ERR_INVALID);
    const char *many[101];
    for (int i = 0; i < 101; i++)
        many[i] = MEMBER;
    ck_assert_int_eq(dg_outbox_enqueue(st, o->chan, "x", many, 101, 1), OC_ERR_INVALID);
    int64_t cnt = -1;
    ck_assert_int_eq(dg_store_outbox_count(st, DG_OUTBOX_PENDING, &cnt), OC_OK);
    ck_assert_int_eq(cnt, 0);
    dg_store_commit(st);

    /* A rolled-back transaction owes nothing. */
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_outbox_enqueue(st, o->chan, "never owed", NULL, 0, 1), OC_OK);
    dg_store_rollback(st);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_outbox_count(st, DG_OUTBOX_PENDING, &cnt), OC_OK);
    dg_store_commit(st);
    ck_assert_int_eq(cnt, 0);
    oenv_close(o);
}
END_TEST

/* ---- splitting ------------------------------------------------------------------------- */

START_TEST(split_rules)
{
    char **parts = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_outbox_split("short", 2000, &parts, &n), OC_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(parts[0], "short");
    dg_outbox_parts_free(parts, n);

    /* Lines: break at the last line break that fits. */
    ck_assert_int_eq(dg_outbox_split("aaaa\nbbbb\ncccc", 10, &parts, &n), OC_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(parts[0], "aaaa\nbbbb");
    ck_assert_str_eq(parts[1], "cccc");
    dg_outbox_parts_free(parts, n);

    /* No line break: the last space. */
    ck_assert_int_eq(dg_outbox_split("one two three", 8, &parts, &n), OC_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(parts[0], "one two");
    ck_assert_str_eq(parts[1], "three");
    dg_outbox_parts_free(parts, n);

    /* Neither: a hard cut that never splits a character. */
    char wide[2 * 2500 + 1];
    for (int i = 0; i < 2500; i++)
        memcpy(wide + 2 * i, "\xc3\xa9", 2);
    wide[5000] = '\0';
    ck_assert_int_eq(dg_outbox_split(wide, 2000, &parts, &n), OC_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(strlen(parts[0]), 4000);
    ck_assert_uint_eq(strlen(parts[1]), 1000);
    dg_outbox_parts_free(parts, n);

    /* Blank parts vanish. */
    ck_assert_int_eq(dg_outbox_split("abc\n\n\n\n\n\n\n\n\n\n\n\n\ndef", 4, &parts, &n), OC_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(parts[0], "abc");
    ck_assert_str_eq(parts[1], "def");
    dg_outbox_parts_free(parts, n);
    ck_assert_int_eq(dg_outbox_split("x\xc3", 10, &parts, &n), OC_ERR_INVALID);
    ck_assert_ptr_null(parts);

    /* A space exactly at the limit is the break. */
    ck_assert_int_eq(dg_outbox_split("abc def", 3, &parts, &n), OC_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(parts[0], "abc");
    ck_assert_str_eq(parts[1], "def");
    dg_outbox_parts_free(parts, n);
    ck_assert_int_eq(dg_outbox_split(NULL, 10, &parts, &n), OC_ERR_INVALID);
    ck_assert_int_eq(dg_outbox_split("x", 0, &parts, &n), OC_ERR_INVALID);
    ck_assert_ptr_null(parts);
}
END_TEST

START_TEST(split_and_enqueue_out_of_memory)
{
    /* Each allocation of splitting and queueing fails in turn: the call
     * fails with OC_ERR_NOMEM and leaves nothing (no parts, no row), or
     * succeeds in spite of it. */
    ck_assert_msg(fa_available(), "check_all was linked without the allocation wrappers");
    long k;
    for (k = 1; k < 1000; k++) {
        char **parts = NULL;
        size_t n = 0;
        fa_arm_own(k);
        int rc = dg_outbox_split("aaaa\nbbbb\ncccc dddd", 10, &parts, &n);
        int hit = fa_disarm();
        if (rc == OC_OK) {
            ck_assert_uint_eq(n, 2);
            dg_outbox_parts_free(parts, n);
        } else {
            ck_assert_int_eq(rc, OC_ERR_NOMEM);
            ck_assert_ptr_null(parts);
            ck_assert_uint_eq(n, 0);
        }
        if (!hit)
            break;
    }
    ck_assert_int_gt(k, 2);
    oenv *o = oenv_open(NULL);
    dg_store *st = o->e.p.store;
    char text[3000];
    memset(text, 'w', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    const char *ids[] = {MEMBER};
    int64_t owed = 0;
    for (k = 1; k < 1000; k++) {
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        fa_arm_own(k);
        int rc = dg_outbox_enqueue(st, o->chan, text, ids, 1, 1);
        int hit = fa_disarm();
        ck_assert_msg(rc == OC_OK || rc == OC_ERR_NOMEM, "allocation %ld: %s", k,
                      oc_status_name(rc));
        if (rc == OC_OK) {
            owed += 2;
            ck_assert_int_eq(dg_store_commit(st), OC_OK);
        } else {
            dg_store_rollback(st);
        }
        int64_t cnt = -1;
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        ck_assert_int_eq(dg_store_outbox_count(st, DG_OUTBOX_PENDING, &cnt), OC_OK);
        dg_store_commit(st);
        ck_assert_int_eq(cnt, owed);
        if (!hit)
            break;
    }
    ck_assert_int_gt(k, 2);
    oenv_close(o);
}
END_TEST

/* With more channels owing rows than posts in flight, the oldest row
 * goes first across channels (draining channel by channel would spread
 * a backlog's marks over the whole table). One post in flight,
 * rows queued alternately to two channels: Discord sees them in the order
 * they were queued, not one channel after the other. */
START_TEST(oldest_row_first_across_channels)
{
    oenv *o = oenv_open(NULL);
    ck_assert_int_eq(dg_store_begin(o->e.p.store), OC_OK);
    for (int i = 0; i < 6; i++) {
        char text[16];
        snprintf(text, sizeof text, "m%d", i);
        ck_assert_int_eq(
            dg_outbox_enqueue(o->e.p.store, i % 2 ? o->chan2 : o->chan, text, NULL, 0, 1), OC_OK);
    }
    ck_assert_int_eq(dg_store_commit(o->e.p.store), OC_OK);
    dg_outbox_options one = quick_outbox;
    one.max_inflight = 1;
    oenv_start(o, &one);
    wait_idle(o, 10000);
    json_t *msgs = fake_discord_messages(o->fd, NULL);
    ck_assert_uint_eq(json_array_size(msgs), 6);
    for (size_t i = 0; i < 6; i++) {
        char want[16];
        snprintf(want, sizeof want, "m%zu", i);
        ck_assert_str_eq(jstr(json_array_get(msgs, i), "content"), want);
    }
    json_decref(msgs);
    oenv_close(o);
}
END_TEST

/* Rows read one at a time (batch 1): each channel's next row is read
 * while its head is in flight and goes behind it in memory (reading
 * ahead). Every row goes out once, in order within its channel,
 * and is marked with its own message id; rows queued while sending are
 * found and go last. */
START_TEST(reads_ahead_one_row_at_a_time_keeps_order)
{
    oenv *o = oenv_open(NULL);
    dg_store *st = o->e.p.store;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    for (int i = 0; i < 12; i++) {
        char text[16];
        snprintf(text, sizeof text, "%c%d", i % 3 ? 'a' : 'b', i);
        ck_assert_int_eq(dg_outbox_enqueue(st, i % 3 ? o->chan : o->chan2, text, NULL, 0, 1),
                         OC_OK);
    }
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    dg_outbox_options opt = quick_outbox;
    opt.batch = 1;
    oenv_start(o, &opt);
    ck_assert_int_eq(fake_discord_wait_messages(o->fd, o->chan, 3, 10000), 0);
    enqueue(o, o->chan, "a-late", NULL, 0);
    wait_idle(o, 10000);
    const char *want_a[] = {"a1", "a2", "a4", "a5", "a7", "a8", "a10", "a11", "a-late"};
    const char *want_b[] = {"b0", "b3", "b6", "b9"};
    for (int side = 0; side < 2; side++) {
        const char *chan = side ? o->chan2 : o->chan;
        const char *const *want = side ? want_b : want_a;
        size_t n_want = side ? 4 : 9;
        json_t *msgs = fake_discord_messages(o->fd, chan);
        ck_assert_uint_eq(json_array_size(msgs), n_want);
        size_t n = 0;
        dg_outbox_row *rows = rows_of(&o->e, chan, &n);
        ck_assert_uint_eq(n, n_want);
        for (size_t i = 0; i < n_want; i++) {
            json_t *m = json_array_get(msgs, i);
            ck_assert_str_eq(jstr(m, "content"), want[i]);
            ck_assert_str_eq(rows[i].content, want[i]);
            ck_assert_int_eq(rows[i].state, DG_OUTBOX_SENT);
            ck_assert_str_eq(rows[i].message_id, jstr(m, "id"));
        }
        dg_outbox_rows_free(rows, n);
        json_decref(msgs);
    }
    oenv_close(o);
}
END_TEST

START_TEST(long_content_split_in_order)
{
    oenv *o = oenv_open(NULL);
    oenv_start(o, NULL);
    /* 90 lines of 50 characters: 4590 characters, three parts. */
    char *text = malloc(90 * 51 + 1);
    size_t len = 0;
    for (int i = 0; i < 90; i++)
        len += (size_t)sprintf(text + len, "line %03d %040d\n", i, i);
    text[len - 1] = '\0';
    enqueue(o, o->chan, text, NULL, 0);
    wait_idle(o, 10000);

    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, o->chan, &n);
    ck_assert_uint_eq(n, 3);
    json_t *msgs = fake_discord_messages(o->fd, o->chan);
    ck_assert_uint_eq(json_array_size(msgs), 3);
    /* Concatenated with the dropped line breaks, the parts give the text. */
    char *joined = calloc(1, len + 8);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(rows[i].part, (int)i + 1);
        ck_assert_int_eq(rows[i].parts, 3);
        ck_assert_int_eq(rows[i].state, DG_OUTBOX_SENT);
        const char *c = jstr(json_array_get(msgs, i), "content");
        ck_assert_str_eq(c, rows[i].content);
        ck_assert_uint_le(strlen(c), 2000);
        ck_assert_str_eq(jstr(json_array_get(msgs, i), "nonce"), rows[i].nonce);
        if (i)
            ck_assert_str_ne(rows[i].nonce, rows[i - 1].nonce);
        if (i)
            strcat(joined, "\n");
        strcat(joined, c);
    }
    ck_assert_str_eq(joined, text);
    free(joined);
    json_decref(msgs);
    dg_outbox_rows_free(rows, n);
    free(text);
    oenv_close(o);
}
END_TEST

/* ---- failures -------------------------------------------------------------------------- */

START_TEST(failing_row_blocks_only_its_channel)
{
    oenv *o = oenv_open_tries(2);
    /* Three outbox attempts of two requests each fail, the fourth works. */
    fail_posts(o, o->chan, FD_FAULT_500, 6, 0);
    enqueue(o, o->chan, "A1", NULL, 0);
    enqueue(o, o->chan, "A2", NULL, 0);
    enqueue(o, o->chan2, "B1", NULL, 0);
    {
        dg_outbox_options variant = quick_outbox_for(_i);
        oenv_start(o, &variant);
    }
    wait_idle(o, 20000);

    json_t *a = fake_discord_messages(o->fd, o->chan);
    json_t *b = fake_discord_messages(o->fd, o->chan2);
    ck_assert_uint_eq(json_array_size(a), 2);
    ck_assert_uint_eq(json_array_size(b), 1);
    ck_assert_str_eq(jstr(json_array_get(a, 0), "content"), "A1");
    ck_assert_str_eq(jstr(json_array_get(a, 1), "content"), "A2");
    /* B1 went out while A1 was still failing. */
    ck_assert(id_num(jstr(json_array_get(b, 0), "id")) < id_num(jstr(json_array_get(a, 0), "id")));
    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, o->chan, &n);
    ck_assert_int_eq(rows[0].attempts, 3);
    ck_assert_msg(rows[0].last_error && strstr(rows[0].last_error, "500"), "%s",
                  rows[0].last_error ? rows[0].last_error : "(null)");
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_SENT);
    ck_assert_int_eq(rows[1].attempts, 0);
    dg_outbox_rows_free(rows, n);
    dg_outbox_stats st;
    dg_outbox_get_stats(o->e.p.outbox, &st);
    ck_assert_uint_eq(st.retries, 3);
    ck_assert_uint_eq(st.sent, 3);
    ck_assert(obe_log_has(&o->e, "(attempt 1)")); /* no attempt limit by default */
    json_decref(a);
    json_decref(b);
    oenv_close(o);
}
END_TEST

START_TEST(failing_channels_beyond_batch_do_not_starve_others)
{
    /* More channels in back-off than one pass looks at (batch) must not hold
     * back a healthy channel whose head row is newer than theirs. */
    oenv *o = oenv_open_tries(1);
    char third[24];
    ck_assert_int_eq(fake_discord_add_channel(o->fd, NULL, "third", third), 0);
    fail_posts(o, o->chan, FD_FAULT_500, 1000, 0);
    fail_posts(o, o->chan2, FD_FAULT_500, 1000, 0);
    enqueue(o, o->chan, "A1 keeps failing", NULL, 0);
    enqueue(o, o->chan2, "B1 keeps failing", NULL, 0);
    enqueue(o, third, "C1 healthy", NULL, 0);
    dg_outbox_options opt = quick_outbox;
    opt.batch = 2;
    opt.max_attempts = 1000;
    oenv_start(o, &opt);
    ck_assert_msg(fake_discord_wait_messages(o->fd, third, 1, 5000) == 0,
                  "the healthy channel waited behind two failing ones");
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 0);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan2), 0);
    oenv_close(o);
}
END_TEST

START_TEST(outage_longer_than_any_attempt_count_loses_nothing)
{
    /* Discord down for longer than the old budget of 20 attempts (about a
     * quarter of an hour at the default back-off): the row is still sent
     * once Discord is back, not failed for good. */
    oenv *o = oenv_open_tries(1);
    fail_posts(o, o->chan, FD_FAULT_500, 25, 0);
    enqueue(o, o->chan, "owed through an outage", NULL, 0);
    dg_outbox_options opt = {.backoff_base_ms = 5, .backoff_max_ms = 20};
    oenv_start(o, &opt);
    ck_assert_int_eq(fake_discord_wait_messages(o->fd, o->chan, 1, 20000), 0);
    wait_idle(o, 10000);
    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, o->chan, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_SENT);
    ck_assert_int_eq(rows[0].attempts, 25);
    dg_outbox_rows_free(rows, n);
    oenv_close(o);
}
END_TEST

START_TEST(refused_token_holds_every_row)
{
    /* A 401 says the moderator token is wrong, not that this message is:
     * the rows stay pending (nothing lost, no request per row hammering
     * Discord with a bad token) and go out after a restart with a token
     * Discord accepts. */
    oenv *o = calloc(1, sizeof *o);
    ck_assert_ptr_nonnull(o);
    o->dir = tu_mkdtemp();
    o->db = tu_db_target(o->dir);
    char err[200];
    ck_assert_msg(fake_discord_start(NULL, &o->fd, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(fake_discord_add_channel(o->fd, NULL, "general", o->chan), 0);
    ck_assert_int_eq(fake_discord_add_channel(o->fd, NULL, "random", o->chan2), 0);
    env_up(o, NULL);
    enqueue(o, o->chan, "first", NULL, 0);
    enqueue(o, o->chan, "second", NULL, 0);
    enqueue(o, o->chan2, "other channel", NULL, 0);
    oenv_start(o, NULL);
    ck_assert_int_eq(fake_discord_wait_requests(o->fd, 1, 10000), 0);
    usleep(500 * 1000);
    ck_assert_uint_eq(fake_discord_request_count(o->fd), 1);
    ck_assert(obe_log_has(&o->e, "401"));
    ck_assert(obe_log_has(&o->e, "Discord refuses the moderator token"));
    ck_assert(obe_log_has(&o->e, "Fix discord.moderatorToken"));
    ck_assert_int_eq(obe_count(&o->e, DG_OUTBOX_PENDING), 3);
    /* The operator fixes the token and restarts. */
    dg_outbox_stop(o->e.p.outbox);
    o->e.p.outbox = NULL;
    ck_assert_int_eq(fake_discord_add_user(o->fd, OBE_TOKEN, OBE_MOD_ID, "moderator", 1), 0);
    oenv_start(o, NULL);
    wait_idle(o, 10000);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 2);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan2), 1);
    oenv_close(o);
}
END_TEST

START_TEST(gone_channel_fails_for_good_naming_the_platform)
{
    /* A channel deleted on Discord: its row fails for good after one
     * request, saying the channel is gone there; other channels go on. */
    oenv *o = oenv_open(NULL);
    const char *gone = "910000000000000999";
    enqueue(o, gone, "nobody will read this", NULL, 0);
    enqueue(o, o->chan, "fine here", NULL, 0);
    oenv_start(o, NULL);
    wait_idle(o, 10000);
    char *why = obe_failed_reason(&o->e, gone);
    ck_assert_msg(why && strstr(why, "the channel is gone on Discord"), "%s", why ? why : "(none)");
    free(why);
    ck_assert(obe_log_has(&o->e, "the channel is gone on Discord"));
    ck_assert_uint_eq(fake_discord_request_count(o->fd), 2); /* one each, not retried */
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 1);
    oenv_close(o);
}
END_TEST

START_TEST(forbidden_fails_for_good_and_unblocks)
{
    oenv *o = oenv_open(NULL);
    ck_assert_int_eq(fake_discord_add_fault(o->fd, "*", FD_FAULT_403, 1, 0, 0), 0);
    enqueue(o, o->chan, "refused", NULL, 0);
    enqueue(o, o->chan, "next one", NULL, 0);
    {
        dg_outbox_options variant = quick_outbox_for(_i);
        oenv_start(o, &variant);
    }
    wait_idle(o, 10000);
    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, o->chan, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_FAILED);
    ck_assert_int_eq(rows[0].attempts, 1);
    ck_assert_ptr_null(rows[0].message_id);
    ck_assert_msg(strstr(rows[0].last_error, "Missing Permissions"), "%s", rows[0].last_error);
    ck_assert_int_eq(rows[1].state, DG_OUTBOX_SENT);
    /* Not retried: one request carried the failed row's nonce. */
    json_t *reqs = fake_discord_requests(o->fd, 0);
    int with_nonce = 0;
    for (size_t i = 0; i < json_array_size(reqs); i++) {
        const char *nonce = jstr(json_object_get(json_array_get(reqs, i), "body"), "nonce");
        with_nonce += nonce && !strcmp(nonce, rows[0].nonce);
    }
    ck_assert_int_eq(with_nonce, 1);
    ck_assert_uint_eq(json_array_size(reqs), 2);
    json_decref(reqs);
    /* Logged at error level with Discord's message. */
    char *log = obe_log_text(&o->e);
    int found = 0;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n"))
        found |= !strncmp(line, "3 ", 2) && strstr(line, "failed for good") &&
                 strstr(line, "Missing Permissions");
    free(log);
    ck_assert_msg(found, "no error-level line with Discord's message");
    dg_outbox_rows_free(rows, n);
    oenv_close(o);
}
END_TEST

START_TEST(rate_limited_then_once)
{
    oenv *o = oenv_open(NULL);
    {
        dg_outbox_options variant = quick_outbox_for(_i);
        oenv_start(o, &variant);
    }
    ck_assert_int_eq(fake_discord_add_fault(o->fd, "*", FD_FAULT_429, 1, 0.2, 0), 0);
    enqueue(o, o->chan, "after a 429", NULL, 0);
    wait_idle(o, 10000);
    json_t *reqs = fake_discord_requests(o->fd, 0);
    ck_assert_uint_eq(json_array_size(reqs), 2);
    long long gap = json_integer_value(json_object_get(json_array_get(reqs, 1), "tMs")) -
                    json_integer_value(json_object_get(json_array_get(reqs, 0), "tMs"));
    ck_assert_msg(gap >= 200, "retried after %lld ms", gap);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 1);
    json_decref(reqs);
    oenv_close(o);
}
END_TEST

START_TEST(rate_limit_on_one_route_does_not_stall_others)
{
    /* Pipelined dispatcher: channel A's route answers 429 with a
     * 1.5 s retry_after; channel B's rows go out meanwhile, in order, and
     * A's row follows once the window is over, once. */
    oenv *o = oenv_open(NULL);
    fail_posts(o, o->chan, FD_FAULT_429, 1, 1.5);
    /* One accepted post first, so the dispatcher runs several in flight. */
    enqueue(o, o->chan2, "B0", NULL, 0);
    {
        dg_outbox_options variant = quick_outbox_for(1);
        oenv_start(o, &variant);
    }
    ck_assert_int_eq(fake_discord_wait_messages(o->fd, o->chan2, 1, 5000), 0);
    long long t0 = obe_mono_ms();
    enqueue(o, o->chan, "A1", NULL, 0);
    for (int i = 1; i <= 5; i++) {
        char text[8];
        snprintf(text, sizeof text, "B%d", i);
        enqueue(o, o->chan2, text, NULL, 0);
    }
    ck_assert_int_eq(fake_discord_wait_messages(o->fd, o->chan2, 6, 5000), 0);
    long long took = obe_mono_ms() - t0;
    ck_assert_msg(took < 1400, "channel B waited %lld ms behind A's 429", took);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 0);
    wait_idle(o, 10000);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 1);
    json_t *b = fake_discord_messages(o->fd, o->chan2);
    for (int i = 0; i <= 5; i++) {
        char want[8];
        snprintf(want, sizeof want, "B%d", i);
        ck_assert_str_eq(jstr(json_array_get(b, (size_t)i), "content"), want);
    }
    json_decref(b);
    oenv_close(o);
}
END_TEST

/* ---- restarts ---------------------------------------------------------------------------- */

START_TEST(unsent_rows_sent_on_start)
{
    oenv *o = oenv_open(NULL);
    /* No dispatcher yet (as when no token was configured): rows wait. */
    enqueue(o, o->chan, "owed before start", NULL, 0);
    enqueue(o, o->chan2, "also owed", NULL, 0);
    usleep(100 * 1000);
    ck_assert_uint_eq(fake_discord_request_count(o->fd), 0);
    /* Close and reopen the store, as a new process would. */
    assert_no_token(&o->e);
    obe_close(&o->e);
    env_up(o, NULL);
    oenv_start(o, NULL);
    ck_assert_int_eq(fake_discord_wait_messages(o->fd, NULL, 2, 10000), 0);
    wait_idle(o, 10000);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 1);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan2), 1);
    oenv_close(o);
}
END_TEST

/* Child of the crash test: enqueue one message, let the dispatcher send it,
 * and wait to be killed. Plain code: no Check calls in this process. */
static void crash_child(int rfd, const char *db, int variant)
{
    alarm(60); /* never outlive a failed test */
    char buf[256], chan[64];
    if (obe_child_args(rfd, buf, sizeof buf, chan, sizeof chan) != 0)
        _exit(2);
    obe e;
    char err[256];
    if (obe_open(&e, buf, db, &quick_client, err, sizeof err) != 0)
        _exit(3);
    dg_outbox_options opt = quick_outbox_for(variant);
    if (dg_outbox_start_opts(&e.p, &opt, &e.p.outbox, err, sizeof err) != OC_OK)
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

START_TEST(crash_between_accept_and_mark)
{
    oenv *o = calloc(1, sizeof *o);
    o->dir = tu_mkdtemp();
    o->db = tu_db_target(o->dir);
    /* Fork before any thread exists; the child learns the URL by pipe. */
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(pfd[1]);
        crash_child(pfd[0], o->db, _i);
    }
    close(pfd[0]);
    fake_up(o);
    /* Discord stores the message, then never answers. */
    ck_assert_int_eq(fake_discord_add_fault(o->fd, "*", FD_FAULT_DELAY_AFTER, 1, 0, 60000), 0);
    char line[200];
    int len = snprintf(line, sizeof line, "%s\n%s\n", fake_discord_url(o->fd), o->chan);
    ck_assert_int_eq(write(pfd[1], line, (size_t)len), len);
    close(pfd[1]);
    int waited = fake_discord_wait_messages(o->fd, o->chan, 1, 15000);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert_msg(waited == 0, "the child never posted (exit status %d)", status);
    ck_assert(WIFSIGNALED(status));

    /* Restart: the row is still pending and goes out again with its nonce. */
    fake_discord_clear_faults(o->fd);
    env_up(o, NULL);
    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, o->chan, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_PENDING);
    char nonce[32];
    snprintf(nonce, sizeof nonce, "%s", rows[0].nonce);
    dg_outbox_rows_free(rows, n);
    dg_outbox_options opt = quick_outbox_for(_i);
    oenv_start(o, &opt);
    wait_idle(o, 10000);

    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 1);
    json_t *msgs = fake_discord_messages(o->fd, o->chan);
    rows = rows_of(&o->e, o->chan, &n);
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_SENT);
    ck_assert_str_eq(rows[0].message_id, jstr(json_array_get(msgs, 0), "id"));
    dg_outbox_rows_free(rows, n);
    json_decref(msgs);
    json_t *reqs = fake_discord_requests(o->fd, 0);
    ck_assert_uint_eq(json_array_size(reqs), 2);
    for (size_t i = 0; i < 2; i++)
        ck_assert_str_eq(jstr(json_object_get(json_array_get(reqs, i), "body"), "nonce"), nonce);
    json_decref(reqs);
    oenv_close(o);
}
END_TEST

/* ---- a store that cannot record ------------------------------------------------------------- */

/* Requests of the fake whose body carries nonce. */
static int posts_with_nonce(fake_discord *fd, const char *nonce)
{
    json_t *reqs = fake_discord_requests(fd, 0);
    int n = 0;
    for (size_t i = 0; i < json_array_size(reqs); i++) {
        const char *got = jstr(json_object_get(json_array_get(reqs, i), "body"), "nonce");
        n += got && !strcmp(got, nonce);
    }
    json_decref(reqs);
    return n;
}

/* Wait (bounded) until the store refused at least n commits. */
static void wait_refused(oenv *o, long n)
{
    for (int i = 0; i < 2000 && dg_store_test_refused_writes(o->e.p.store) < n; i++)
        usleep(5 * 1000);
    ck_assert_msg(dg_store_test_refused_writes(o->e.p.store) >= n,
                  "the store refused only %ld commits", dg_store_test_refused_writes(o->e.p.store));
}

START_TEST(store_full_after_accept_never_resends)
{
    /* Discord accepts, the store cannot record it (disk full): the row was
     * POSTed again at once, as fast as Discord answered. Now it is kept in
     * memory, recording backs off, and once the store recovers the row is
     * marked sent with Discord's id; one POST in all. */
    oenv *o = oenv_open(NULL);
    enqueue(o, o->chan, "accepted while the disk is full", NULL, 0);
    enqueue(o, o->chan, "queued behind it", NULL, 0);
    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, o->chan, &n);
    ck_assert_uint_eq(n, 2);
    char nonce[32], nonce2[32];
    snprintf(nonce, sizeof nonce, "%s", rows[0].nonce);
    snprintf(nonce2, sizeof nonce2, "%s", rows[1].nonce);
    dg_outbox_rows_free(rows, n);

    dg_store_test_fail_writes(o->e.p.store, 1);
    {
        dg_outbox_options variant = quick_outbox_for(_i);
        oenv_start(o, &variant);
    }
    /* Several attempts to record (each a back-off apart) went by. */
    wait_refused(o, 4);
    ck_assert_int_eq(posts_with_nonce(o->fd, nonce), 1);
    /* Marks are recorded in batches: the next row of the channel
     * may have gone out after the first was accepted (order kept), but once
     * the store refused, nothing is posted twice and nothing more is sent. */
    ck_assert_int_le(posts_with_nonce(o->fd, nonce2), 1);
    ck_assert(obe_log_has(&o->e, "not sent again"));

    dg_store_test_fail_writes(o->e.p.store, 0);
    wait_idle(o, 10000);
    ck_assert_int_eq(posts_with_nonce(o->fd, nonce), 1);
    ck_assert_int_eq(posts_with_nonce(o->fd, nonce2), 1);
    json_t *msgs = fake_discord_messages(o->fd, o->chan);
    ck_assert_uint_eq(json_array_size(msgs), 2);
    rows = rows_of(&o->e, o->chan, &n);
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_SENT);
    ck_assert_str_eq(rows[0].message_id, jstr(json_array_get(msgs, 0), "id"));
    ck_assert_int_eq(rows[1].state, DG_OUTBOX_SENT);
    dg_outbox_rows_free(rows, n);
    json_decref(msgs);
    dg_outbox_stats st;
    dg_outbox_get_stats(o->e.p.outbox, &st);
    ck_assert_uint_eq(st.sent, 2);
    oenv_close(o);
}
END_TEST

START_TEST(store_full_after_refusal_never_resends)
{
    /* The same for a row Discord refused for good (403): recording the
     * failure failed, and the row was POSTed again at once. */
    oenv *o = oenv_open(NULL);
    ck_assert_int_eq(fake_discord_add_fault(o->fd, "*", FD_FAULT_403, 1, 0, 0), 0);
    enqueue(o, o->chan, "refused while the disk is full", NULL, 0);
    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, o->chan, &n);
    char nonce[32];
    snprintf(nonce, sizeof nonce, "%s", rows[0].nonce);
    dg_outbox_rows_free(rows, n);

    dg_store_test_fail_writes(o->e.p.store, 1);
    {
        dg_outbox_options variant = quick_outbox_for(_i);
        oenv_start(o, &variant);
    }
    wait_refused(o, 4);
    ck_assert_int_eq(posts_with_nonce(o->fd, nonce), 1);
    dg_store_test_fail_writes(o->e.p.store, 0);
    wait_idle(o, 10000);
    ck_assert_int_eq(posts_with_nonce(o->fd, nonce), 1);
    rows = rows_of(&o->e, o->chan, &n);
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_FAILED);
    ck_assert_msg(strstr(rows[0].last_error, "Missing Permissions"), "%s", rows[0].last_error);
    dg_outbox_rows_free(rows, n);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 0);
    oenv_close(o);
}
END_TEST

/* ---- retention ------------------------------------------------------------------------------ */

static int64_t test_clock_ms;
static int64_t test_clock(void *unused)
{
    (void)unused;
    return test_clock_ms;
}

static void claim_notice(obe *e, const char *chan, const char *msg, int64_t at)
{
    int claimed = 0;
    ck_assert_int_eq(dg_store_begin(e->p.store), OC_OK);
    ck_assert_int_eq(dg_store_discussion_notice_claim(e->p.store, chan, msg, at, 0, &claimed),
                     OC_OK);
    ck_assert_int_eq(dg_store_commit(e->p.store), OC_OK);
}

/* 1 when the notice mark (chan, msg) is still there (claiming it again is
 * refused as already handled). Leaves a new mark when it was gone. */
static int notice_kept(obe *e, const char *chan, const char *msg)
{
    int claimed = 0;
    ck_assert_int_eq(dg_store_begin(e->p.store), OC_OK);
    ck_assert_int_eq(
        dg_store_discussion_notice_claim(e->p.store, chan, msg, test_clock_ms, 0, &claimed), OC_OK);
    ck_assert_int_eq(dg_store_commit(e->p.store), OC_OK);
    return !claimed;
}

START_TEST(sent_rows_and_notice_marks_pruned_after_retention)
{
    /* Sent rows and closed-notice marks grew for ever (~235 B per message).
     * Now rows done longer ago than outbox.retentionSec go; pending rows,
     * recent rows and recent marks stay. */
    oenv *o = oenv_open(NULL);
    int64_t now = dg_wall_clock_ms(NULL);
    const int64_t day = 86400LL * 1000;
    dg_set_clock(&o->e.p, test_clock, NULL);
    o->e.p.cfg.outbox_retention_sec = 7 * 86400;
    test_clock_ms = now - 8 * day;
    oenv_start(o, NULL);
    enqueue(o, o->chan, "old one", NULL, 0);
    enqueue(o, o->chan, "old two", NULL, 0);
    wait_idle(o, 10000);
    claim_notice(&o->e, o->chan, "500000000000000001", now - 8 * day);
    claim_notice(&o->e, o->chan, "500000000000000002", now - day);

    test_clock_ms = now;
    enqueue(o, o->chan, "recent", NULL, 0);
    wait_idle(o, 10000);
    /* A row Discord keeps failing stays pending, however old. */
    fail_posts(o, o->chan2, FD_FAULT_500, 100000, 0);
    test_clock_ms = now - 30 * day;
    enqueue(o, o->chan2, "owed for a month", NULL, 0);
    test_clock_ms = now;
    ck_assert_int_eq(obe_count(&o->e, DG_OUTBOX_SENT), 3);

    /* A restart runs the first retention round before the first pass. */
    dg_outbox_stop(o->e.p.outbox);
    o->e.p.outbox = NULL;
    oenv_start(o, NULL);
    for (int i = 0; i < 2000 && obe_count(&o->e, DG_OUTBOX_SENT) > 1; i++)
        usleep(5 * 1000);
    ck_assert_int_eq(obe_count(&o->e, DG_OUTBOX_SENT), 1);
    ck_assert_int_eq(obe_count(&o->e, DG_OUTBOX_PENDING), 1);
    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, o->chan, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].content, "recent");
    dg_outbox_rows_free(rows, n);
    ck_assert(notice_kept(&o->e, o->chan, "500000000000000002"));
    ck_assert(!notice_kept(&o->e, o->chan, "500000000000000001"));
    oenv_close(o);
}
END_TEST

/* ---- load ---------------------------------------------------------------------------------- */

START_TEST(five_hundred_through_thirty_percent_failures)
{
    oenv *o = oenv_open(NULL);
    char chans[5][24];
    snprintf(chans[0], 24, "%s", o->chan);
    snprintf(chans[1], 24, "%s", o->chan2);
    for (int c = 2; c < 5; c++)
        ck_assert_int_eq(fake_discord_add_channel(o->fd, NULL, "extra", chans[c]), 0);
    fake_discord_set_fail_rate(o->fd, 0.3, 20241130, 0.01);
    dg_outbox_options opt = quick_outbox_for(_i);
    opt.max_attempts = 100;
    oenv_start(o, &opt);
    /* Owed in transactions of ten, interleaved over the channels. */
    for (int batch = 0; batch < 50; batch++) {
        ck_assert_int_eq(dg_store_begin(o->e.p.store), OC_OK);
        for (int k = 0; k < 10; k++) {
            int i = batch * 10 + k;
            char text[32];
            snprintf(text, sizeof text, "c%d-%03d", i % 5, i / 5);
            ck_assert_int_eq(
                dg_outbox_enqueue(o->e.p.store, chans[i % 5], text, NULL, 0, dg_now_ms(&o->e.p)),
                OC_OK);
        }
        ck_assert_int_eq(dg_store_commit(o->e.p.store), OC_OK);
        dg_outbox_kick(o->e.p.outbox);
    }
    wait_idle(o, 150000);

    for (int c = 0; c < 5; c++) {
        json_t *msgs = fake_discord_messages(o->fd, chans[c]);
        ck_assert_msg(json_array_size(msgs) == 100, "channel %d has %zu messages", c,
                      json_array_size(msgs));
        for (int i = 0; i < 100; i++) {
            char want[32];
            snprintf(want, sizeof want, "c%d-%03d", c, i);
            ck_assert_str_eq(jstr(json_array_get(msgs, (size_t)i), "content"), want);
        }
        json_decref(msgs);
    }
    ck_assert_uint_eq(fake_discord_message_count(o->fd, NULL), 500);
    int64_t sent = 0, failed = 0;
    ck_assert_int_eq(dg_store_begin(o->e.p.store), OC_OK);
    dg_store_outbox_count(o->e.p.store, DG_OUTBOX_SENT, &sent);
    dg_store_outbox_count(o->e.p.store, DG_OUTBOX_FAILED, &failed);
    dg_store_commit(o->e.p.store);
    ck_assert_int_eq(sent, 500);
    ck_assert_int_eq(failed, 0);
    /* The fake really failed about 30% of the calls. */
    json_t *reqs = fake_discord_requests(o->fd, 0);
    size_t faults = 0, after = 0;
    for (size_t i = 0; i < json_array_size(reqs); i++) {
        const char *f = jstr(json_array_get(reqs, i), "fault");
        faults += f != NULL;
        after += f && !strcmp(f, "500after");
    }
    ck_assert_msg(faults * 10 >= json_array_size(reqs) * 2, "%zu faults in %zu requests", faults,
                  json_array_size(reqs));
    ck_assert_msg(after > 0, "some messages were accepted and then answered 500");
    json_decref(reqs);
    oenv_close(o);
}
END_TEST

/* ---- shutdown --------------------------------------------------------------------------------- */

START_TEST(shutdown_bounded_while_discord_hangs)
{
    oenv *o = oenv_open(NULL);
    ck_assert_int_eq(fake_discord_add_fault(o->fd, "*", FD_FAULT_DELAY, 100, 0, 60000), 0);
    oenv_start(o, NULL);
    enqueue(o, o->chan, "into the void", NULL, 0);
    ck_assert_int_eq(fake_discord_wait_requests(o->fd, 1, 10000), 0);
    long long t0 = obe_mono_ms();
    dg_outbox_stop(o->e.p.outbox);
    long long took = obe_mono_ms() - t0;
    o->e.p.outbox = NULL;
    ck_assert_msg(took < 2000, "stop took %lld ms", took);
    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, o->chan, &n);
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_PENDING); /* stays for the next start */
    ck_assert_int_eq(rows[0].attempts, 0);
    dg_outbox_rows_free(rows, n);
    /* The client works again after the stop. */
    fake_discord_clear_faults(o->fd);
    ck_assert_int_eq(
        dg_chat_post(o->e.p.chat,
                     &(dg_chat_post_spec){.channel_id = o->chan, .text = "still usable"}, NULL,
                     NULL),
        OC_OK);
    oenv_close(o);
}
END_TEST

START_TEST(shutdown_bounded_during_backoff)
{
    oenv *o = oenv_open_tries(1);
    ck_assert_int_eq(fake_discord_add_fault(o->fd, "*", FD_FAULT_500, 100, 0, 0), 0);
    dg_outbox_options opt = {.backoff_base_ms = 30000, .backoff_max_ms = 60000};
    oenv_start(o, &opt);
    enqueue(o, o->chan, "waits a long time", NULL, 0);
    ck_assert_int_eq(fake_discord_wait_requests(o->fd, 1, 10000), 0);
    usleep(100 * 1000);
    long long t0 = obe_mono_ms();
    dg_outbox_stop(o->e.p.outbox);
    o->e.p.outbox = NULL;
    long long took = obe_mono_ms() - t0;
    ck_assert_msg(took < 2000, "stop took %lld ms", took);
    ck_assert_uint_eq(fake_discord_request_count(o->fd), 1);
    oenv_close(o);
}
END_TEST

/* ---- a store that cannot start a transaction ------------------------------------------------ */

/* Rows of the outbox table in state, read through a connection of its own
 * on SQLite's own VFS ("unix", not the fault VFS: a fault sweep does not
 * count it). */
static int rows_in_state(oenv *o, int state)
{
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(o->db, &db, SQLITE_OPEN_READONLY, "unix"), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st;
    ck_assert_int_eq(
        sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM outbox WHERE state = ?", -1, &st, NULL),
        SQLITE_OK);
    sqlite3_bind_int(st, 1, state);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* Waits up to ms for at least n rows in state; returns how many there are. */
static int wait_rows_in_state(oenv *o, int state, int n, int ms)
{
    for (int w = 0; w < ms / 10 && rows_in_state(o, state) < n; w++)
        usleep(10 * 1000);
    return rows_in_state(o, state);
}

static oenv *oenv_open_faulty(void)
{
    ck_assert_int_eq(fv_install(), 0); /* before the store opens its file */
    oenv *o = calloc(1, sizeof *o);
    ck_assert_ptr_nonnull(o);
    o->dir = tu_mkdtemp();
    o->db = tu_path(o->dir, "dirigent.db");
    fake_up(o);
    env_up(o, NULL);
    return o;
}

START_TEST(store_fault_sweep_sends_each_row_once)
{
    /* The nth transaction of the dispatcher cannot start (reading what is
     * pending, taking a channel's lease, loading its rows, recording marks,
     * giving leases up) -- or, with _i = 1, the nth read of the database
     * fails -- for n = 1, 2, ... until a run needed fewer: each
     * failure is retried (1 s later for a read), and in the end every row
     * went out exactly once and is marked sent. */
    long n;
    for (n = 1; n < 100; n++) {
        oenv *o = oenv_open_faulty();
        enqueue(o, o->chan, "first", NULL, 0);
        enqueue(o, o->chan, "second", NULL, 0);
        enqueue(o, o->chan2, "elsewhere", NULL, 0);
        char nonces[3][32];
        size_t k = 0, nr = 0;
        const char *chans[2] = {o->chan, o->chan2};
        for (int c = 0; c < 2; c++) {
            dg_outbox_row *rows = rows_of(&o->e, chans[c], &nr);
            for (size_t i = 0; i < nr; i++)
                snprintf(nonces[k++], sizeof nonces[0], "%s", rows[i].nonce);
            dg_outbox_rows_free(rows, nr);
        }
        ck_assert_uint_eq(k, 3);
        if (_i) {
            dg_store_test_drop_pages(o->e.p.store); /* every page read again */
            fv_fail_read_nth(n);
        } else {
            fv_fail_nth(n);
        }
        oenv_start(o, NULL);
        int sent = wait_rows_in_state(o, DG_OUTBOX_SENT, 3, 15000);
        ck_assert_msg(sent == 3, "step %ld: %d of 3 rows sent", n, sent);
        int hit = _i ? fv_fail_read_nth_hit() : fv_fail_nth_hit();
        fv_fail_nth(0);
        fv_fail_read_nth(0);
        wait_idle(o, 10000);
        for (size_t i = 0; i < 3; i++)
            ck_assert_msg(posts_with_nonce(o->fd, nonces[i]) == 1,
                          "step %ld: row %zu posted %d "
                          "times",
                          n, i, posts_with_nonce(o->fd, nonces[i]));
        ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 2);
        ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan2), 1);
        oenv_close(o);
        if (!hit)
            break;
    }
    ck_assert_int_gt(n, 3);
    ck_assert_int_lt(n, 100);
}
END_TEST

START_TEST(store_unavailable_at_start_then_recovers)
{
    /* No transaction can start when the dispatcher comes up: it says so
     * once a second (not in a hot loop), sends nothing, and sends each row
     * once when the store works again. */
    oenv *o = oenv_open_faulty();
    enqueue(o, o->chan, "after the outage", NULL, 0);
    fv_fail_begin(1);
    long before = fv_refused();
    oenv_start(o, NULL);
    for (int w = 0; w < 1000 && fv_refused() < before + 2; w++)
        usleep(10 * 1000);
    ck_assert_int_ge(fv_refused(), before + 2);
    ck_assert(obe_log_has(&o->e, "outbox: cannot read pending messages from the store "
                                 "(OC_ERR_IO); trying again in 1 s"));
    /* Two tries took about a second: the retry waits. */
    ck_assert_int_le(fv_refused() - before, 4);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 0);
    fv_fail_begin(0);
    ck_assert_int_eq(fake_discord_wait_messages(o->fd, o->chan, 1, 10000), 0);
    wait_idle(o, 10000);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 1);
    oenv_close(o);
}
END_TEST

START_TEST(lease_held_by_another_instance)
{
    /* Another instance sharing the store holds the channel's lease: this
     * one sends nothing there until the lease is given up, then sends the
     * row once. */
    oenv *o = oenv_open(NULL);
    char name[40], err[256];
    snprintf(name, sizeof name, "outbox:%s", o->chan);
    dg_store *other = NULL;
    ck_assert_msg(dg_store_open(o->db, &other, err, sizeof err) == OC_OK, "%s", err);
    int got = 0, fresh = 0;
    int64_t held = 0, wall = dg_store_wall_ms();
    ck_assert_int_eq(dg_store_begin(other), OC_OK);
    ck_assert_int_eq(
        dg_store_lease_take(other, name, wall, wall + 3600 * 1000, 0, &got, &fresh, &held), OC_OK);
    ck_assert_int_eq(dg_store_commit(other), OC_OK);
    ck_assert(got);
    enqueue(o, o->chan, "waits for the lease", NULL, 0);
    enqueue(o, o->chan2, "not held", NULL, 0);
    oenv_start(o, NULL);
    ck_assert_int_eq(fake_discord_wait_messages(o->fd, o->chan2, 1, 10000), 0);
    /* Past a poll of the held channel (LEASE_POLL_MS, 1 s): still nothing
     * there (the lease is held for an hour, so no load makes this pass). */
    usleep(1500 * 1000);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 0);
    ck_assert_int_eq(dg_store_begin(other), OC_OK);
    ck_assert_int_eq(dg_store_lease_release(other, name), OC_OK);
    ck_assert_int_eq(dg_store_commit(other), OC_OK);
    ck_assert_int_eq(fake_discord_wait_messages(o->fd, o->chan, 1, 10000), 0);
    dg_store_close(other);
    oenv_close(o);
}
END_TEST

START_TEST(start_refusals_and_option_bounds)
{
    /* Starting without a place for the dispatcher or without a Discord
     * client is refused with a reason (also with no room for one); options
     * out of range are brought within it and the dispatcher works. */
    oenv *o = oenv_open(NULL);
    char err[256];
    ck_assert_int_eq(dg_outbox_start_opts(&o->e.p, &quick_outbox, NULL, err, sizeof err),
                     OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "no place to store the dispatcher"), "%s", err);
    dg_outbox *ob = NULL;
    dg_chat *client = o->e.p.chat;
    o->e.p.chat = NULL;
    ck_assert_int_eq(dg_outbox_start_opts(&o->e.p, &quick_outbox, &ob, err, sizeof err),
                     OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "discord.moderatorToken"), "%s", err);
    ck_assert_int_eq(dg_outbox_start_opts(&o->e.p, &quick_outbox, &ob, NULL, 0), OC_ERR_INVALID);
    ck_assert_ptr_null(ob);
    o->e.p.chat = client;
    ck_assert_int_eq(dg_outbox_wait_idle(NULL, 10), OC_ERR_INVALID);
    dg_outbox_stats st;
    dg_outbox_get_stats(NULL, &st);
    ck_assert_uint_eq(st.sent, 0);
    dg_outbox_options odd = {.backoff_base_ms = 30,
                             .backoff_max_ms = 10,
                             .max_attempts = -3,
                             .max_inflight = 100000,
                             .lease_ms = 1};
    oenv_start(o, &odd);
    enqueue(o, o->chan, "sent with odd options", NULL, 0);
    ck_assert_int_eq(fake_discord_wait_messages(o->fd, o->chan, 1, 10000), 0);
    wait_idle(o, 10000);
    dg_outbox_get_stats(o->e.p.outbox, &st);
    ck_assert_uint_eq(st.sent, 1);
    oenv_close(o);
}
END_TEST

START_TEST(corrupt_row_fails_for_good_without_a_request)
{
    /* A row the client refuses before any request (a channel id that is no
     * snowflake, written into the table by something else) is marked failed
     * with the reason and holds nothing up. */
    oenv *o = oenv_open(NULL);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(o->db, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    ck_assert_int_eq(sqlite3_exec(db,
                                  "INSERT INTO outbox (channel_id, content, nonce, "
                                  "created_at_ms) VALUES ('general', 'lost', "
                                  "'aaaaaaaaaaaaaaaaaaaaaaaa', 1)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    enqueue(o, o->chan, "fine", NULL, 0);
    oenv_start(o, NULL);
    ck_assert_int_eq(fake_discord_wait_messages(o->fd, o->chan, 1, 10000), 0);
    ck_assert_int_eq(wait_rows_in_state(o, DG_OUTBOX_FAILED, 1, 10000), 1);
    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, "general", &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rows[0].state, DG_OUTBOX_FAILED);
    ck_assert_ptr_nonnull(rows[0].last_error);
    dg_outbox_rows_free(rows, n);
    ck_assert(obe_log_has(&o->e, "for channel general failed for good"));
    ck_assert_uint_eq(fake_discord_message_count(o->fd, NULL), 1);
    oenv_close(o);
}
END_TEST

START_TEST(stop_while_marks_unrecorded_then_resent_once)
{
    /* Discord accepted a row, the store cannot record it, and the gateway
     * stops: the loss is named (the row stays pending), and the next start
     * posts it again with the same nonce, which Discord answers with the
     * first message: one message in all, marked sent. */
    oenv *o = oenv_open(NULL);
    enqueue(o, o->chan, "accepted, then the gateway stops", NULL, 0);
    size_t n = 0;
    dg_outbox_row *rows = rows_of(&o->e, o->chan, &n);
    char nonce[32];
    snprintf(nonce, sizeof nonce, "%s", rows[0].nonce);
    dg_outbox_rows_free(rows, n);
    dg_store_test_fail_writes(o->e.p.store, 1);
    oenv_start(o, NULL);
    wait_refused(o, 2);
    dg_outbox_stop(o->e.p.outbox);
    o->e.p.outbox = NULL;
    ck_assert(obe_log_has(&o->e, "was accepted by Discord but never recorded"));
    dg_store_test_fail_writes(o->e.p.store, 0);
    ck_assert_int_eq(rows_in_state(o, DG_OUTBOX_PENDING), 1);
    oenv_start(o, NULL);
    ck_assert_int_eq(wait_rows_in_state(o, DG_OUTBOX_SENT, 1, 10000), 1);
    ck_assert_int_eq(posts_with_nonce(o->fd, nonce), 2);
    ck_assert_uint_eq(fake_discord_message_count(o->fd, o->chan), 1);
    oenv_close(o);
}
END_TEST

/*
 * Not reached by any test (make coverage), each an error path:
 *  - outbox_enqueue.c:make_nonce, dg_outbox_enqueue (nonce branch),
 *    outbox.c:dg_outbox_start_opts (thread branch): getrandom() failing (EINTR, no
 *    entropy source) and pthread_create() failing; neither can be made to
 *    fail from a test without replacing libc.
 *  - outbox_enqueue.c:dg_outbox_enqueue ("np == 0"): a split of non-blank content
 *    giving no part; blank content is refused before the split.
 *  - outbox_queue.c:chan_get, outbox_chans_sweep, outbox_discover (chan_get
 *    NULL), outbox_record.c:outbox_decide (realloc), outbox_post.c:post_head (strdup of the reason): allocation failures on the
 *    dispatcher thread; failalloc.h fails allocations of the arming thread
 *    only (so a sweep is repeatable), and the split and enqueue sweep above
 *    covers the caller's side.
 *  - outbox_lease.c:outbox_leases_release, outbox_post.c:record_retry,
 *    outbox_record.c:outbox_flush (the rollback branches):
 *    a statement failing after its transaction began on the dispatcher
 *    thread; the fault sweeps above fail the begin or a page read, and
 *    these run on pages the dispatcher has already read (cached).
 *  - outbox_record.c:outbox_flush (no marks), outbox_post.c:outbox_on_done
 *    (no channel holds the row), outbox.c:while_flying (wait < 0), due_now's
 *    last term, idle_wait (the untimed wait): guards
 *    of states the dispatcher never enters (flush is called with marks, a
 *    completion always finds its channel, a timer is always due).
 *  - outbox_queue.c:outbox_refill (n == 0): discovery saw rows that are gone when the
 *    channel loads them, which needs another instance to send them between
 *    the two reads (check_shared.c runs two dispatchers, not in that gap).
 *  - outbox_post.c:outbox_on_done (back-off branch, Retry-After longer than the
 *    back-off): a retryable answer with attempts left and a Retry-After
 *    beyond backoff_max_ms; the fake sends Retry-After only with 429, which
 *    the client handles itself.
 *  - outbox_lease.c:outbox_lease_ok (taken over, wait < 50), dec_max_of,
 *    chan_forget_rows:
 *    another instance taking a lease this one held while rows were queued;
 *    it needs this lease to run out while the dispatcher is paused, which
 *    no test can order without a timed sleep (the lease held elsewhere from
 *    the start is tested above).
 */

/* The cases of outbox and outbox_pg (on_pg: the store is a PostgreSQL
 * database, tests/support/pg_server.h). */
static Suite *outbox_suite(const char *name, int on_pg)
{
    Suite *s = suite_create(name);
    if (on_pg && pgs_skipped())
        return s;
    TCase *tc = tcase_create("outbox");
    if (on_pg)
        pgs_on_pg(tc, 0);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, sends_with_nonce_and_marks_sent);
    tcase_add_test(tc, enqueue_refuses_bad_input);
    tcase_add_test(tc, marks_sent_in_batches);
    tcase_add_test(tc, split_rules);
    tcase_add_test(tc, long_content_split_in_order);
    tcase_add_test(tc, oldest_row_first_across_channels);
    tcase_add_test(tc, reads_ahead_one_row_at_a_time_keeps_order);
    tcase_add_loop_test(tc, failing_row_blocks_only_its_channel, 0, 2);
    tcase_add_test(tc, failing_channels_beyond_batch_do_not_starve_others);
    tcase_add_test(tc, outage_longer_than_any_attempt_count_loses_nothing);
    tcase_add_test(tc, refused_token_holds_every_row);
    tcase_add_loop_test(tc, forbidden_fails_for_good_and_unblocks, 0, 2);
    tcase_add_test(tc, gone_channel_fails_for_good_naming_the_platform);
    tcase_add_loop_test(tc, rate_limited_then_once, 0, 2);
    tcase_add_test(tc, rate_limit_on_one_route_does_not_stall_others);
    tcase_add_test(tc, unsent_rows_sent_on_start);
    tcase_add_loop_test(tc, crash_between_accept_and_mark, 0, 2);
    tcase_add_loop_test(tc, store_full_after_accept_never_resends, 0, 2);
    tcase_add_loop_test(tc, store_full_after_refusal_never_resends, 0, 2);
    tcase_add_test(tc, sent_rows_and_notice_marks_pruned_after_retention);
    tcase_add_test(tc, shutdown_bounded_while_discord_hangs);
    tcase_add_test(tc, shutdown_bounded_during_backoff);
    suite_add_tcase(s, tc);
    if (!on_pg) { /* the fault VFS wraps SQLite's files */
        TCase *sf = tcase_create("store_faults");
        tcase_set_timeout(sf, 120);
        tcase_add_loop_test(sf, store_fault_sweep_sends_each_row_once, 0, 2);
        tcase_add_test(sf, store_unavailable_at_start_then_recovers);
        tcase_add_test(sf, lease_held_by_another_instance);
        tcase_add_test(sf, corrupt_row_fails_for_good_without_a_request);
        tcase_add_test(sf, stop_while_marks_unrecorded_then_resent_once);
        tcase_add_test(sf, split_and_enqueue_out_of_memory);
        tcase_add_test(sf, start_refusals_and_option_bounds);
        suite_add_tcase(s, sf);
    }
    TCase *load = tcase_create("load");
    if (on_pg)
        pgs_on_pg(load, 1);
    tcase_set_timeout(load, 240);
    tcase_add_loop_test(load, five_hundred_through_thirty_percent_failures, 0, 2);
    suite_add_tcase(s, load);
    return s;
}

Suite *make_outbox_suite(void)
{
    return outbox_suite("outbox", 0);
}

Suite *make_outbox_pg_suite(void)
{
    return outbox_suite("outbox_pg", 1);
}
