/*
 * store_platform_case.c -- see store_platform_case.h.
 */
#include "store_platform_case.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

#include "store_discuss.h"
#include "store_int.h"
#include "store_operator.h"
#include "store_outbox.h"
#include "store_turns.h"

#define THREAD_TS "1712345678.123456"

const char store_platform_v18_rows[] =
    "INSERT INTO outbox(channel_id, content, mentions, nonce, part, parts, state, attempts,"
    " created_at_ms, done_at_ms, message_id, last_error) VALUES"
    " ('100', 'pending one', '', 'n4', 1, 1, 0, 0, 100, NULL, NULL, NULL),"
    " ('100', 'sent one', '', 'n5', 1, 1, 1, 1, 101, 200, 'm5', NULL);"
    "INSERT INTO discussions(discussion_channel_id, origin_channel_id, initiator_agent_id,"
    " initiator_session_key, initiator_session_id, initiator_workspace, discuss_guide, status,"
    " created_at_ms) VALUES ('300', '100', 'alpha', 'agent:alpha:discord:channel:100', 's1',"
    " '/ws', 'guide', 'active', 50);"
    "INSERT INTO discussion_members(discussion_id, position, agent_id, role) SELECT id, 0,"
    " 'alpha', 'initiator' FROM discussions WHERE discussion_channel_id = '300';"
    "INSERT INTO discussion_members(discussion_id, position, agent_id, role) SELECT id, 1,"
    " 'beta', 'participant' FROM discussions WHERE discussion_channel_id = '300';"
    "INSERT INTO turn_channels(channel_id, mode, initiator, top_root, bot_noticed, updated_ms)"
    " VALUES ('300', 1, 'alpha', NULL, 0, 60);";

/* The first column of sql's one row, in a transaction of its own. */
static long count_of(dg_store *st, const char *sql)
{
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    dg_stmt *s = dg_store_stmt(st, sql);
    ck_assert_msg(s != NULL, "%s: %s", sql, dg_store_errmsg(st));
    ck_assert_int_eq(dg_step(s), DG_ROW);
    long n = (long)dg_col_int64(s, 0);
    dg_reset(s);
    dg_store_rollback(st);
    return n;
}

/* A pending outbox row; platform and thread_id may be NULL. */
static int insert_row(dg_store *st, const char *channel, const char *nonce, const char *platform,
                      const char *thread_id)
{
    dg_outbox_row r = {.channel_id = (char *)channel,
                       .content = "hello",
                       .mentions = "",
                       .nonce = (char *)nonce,
                       .part = 1,
                       .parts = 1,
                       .created_at_ms = 500,
                       .platform = platform,
                       .thread_id = (char *)thread_id};
    return dg_store_outbox_insert(st, &r, NULL);
}

/* The row of rows[0..n) with that nonce; fails the test when none. */
static const dg_outbox_row *by_nonce(const dg_outbox_row *rows, size_t n, const char *nonce)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].nonce, nonce))
            return &rows[i];
    ck_abort_msg("no outbox row with nonce %s", nonce);
    return NULL;
}

static void assert_thread(const dg_outbox_row *r, const char *want)
{
    if (want) {
        ck_assert_ptr_nonnull(r->thread_id);
        ck_assert_str_eq(r->thread_id, want);
    } else {
        ck_assert_ptr_null(r->thread_id);
    }
}

void store_platform_case_old_rows(dg_store *st)
{
    ck_assert_int_eq(count_of(st, "SELECT count(*) FROM outbox WHERE platform = 'discord'"
                                  " AND thread_id IS NULL"),
                     2);
    ck_assert_int_eq(count_of(st, "SELECT count(*) FROM outbox"), 2);
    ck_assert_int_eq(count_of(st, "SELECT count(*) FROM discussions WHERE platform = 'discord'"),
                     1);
    ck_assert_int_eq(count_of(st, "SELECT count(*) FROM turn_channels WHERE platform = 'discord'"),
                     1);

    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    dg_outbox_row *rows = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_store_outbox_list(st, NULL, &rows, &n), DG_OK);
    ck_assert_uint_eq(n, 2);
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(rows[i].platform, "discord");
        assert_thread(&rows[i], NULL);
    }
    ck_assert_str_eq(by_nonce(rows, n, "n5")->message_id, "m5");
    dg_outbox_rows_free(rows, n);
    ck_assert_int_eq(dg_store_outbox_pending_of(st, "100", 0, 10, &rows, &n), DG_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].nonce, "n4");
    ck_assert_str_eq(rows[0].platform, "discord");
    assert_thread(&rows[0], NULL);
    dg_outbox_rows_free(rows, n);
    ck_assert_int_eq(dg_store_outbox_rows_in(st, DG_OUTBOX_PENDING, 10, &rows, &n), DG_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].platform, "discord");
    assert_thread(&rows[0], NULL);
    dg_outbox_rows_free(rows, n);
    dg_outbox_ref *refs = NULL;
    ck_assert_int_eq(dg_store_outbox_discover(st, 0, 10, &refs, &n), DG_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(refs[0].channel_id, "100");
    ck_assert_str_eq(refs[0].platform, "discord");
    free(refs);

    dg_discussion d;
    ck_assert_int_eq(dg_store_discussion_by_channel(st, "300", &d), DG_OK);
    ck_assert_str_eq(d.platform, "discord");
    ck_assert_int_eq(d.status, DG_DISCUSSION_ACTIVE);
    ck_assert_uint_eq(d.n_turn_order, 2);
    dg_discussion_clear(&d);
    dg_turn_channel_row ch;
    ck_assert_int_eq(dg_store_turns_channel_load(st, "300", &ch), DG_OK);
    ck_assert_ptr_nonnull(ch.platform);
    ck_assert_str_eq(ch.platform, "discord");
    ck_assert_int_eq(ch.mode, DG_MODE_DISCUSSION);
    dg_turn_channel_row_clear(&ch);

    /* The migrated table takes a Slack row in a thread. */
    ck_assert_int_eq(insert_row(st, "C0WORK0001", "s1", "slack", THREAD_TS), DG_OK);
    ck_assert_int_eq(dg_store_outbox_pending_of(st, "C0WORK0001", 0, 10, &rows, &n), DG_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].platform, "slack");
    assert_thread(&rows[0], THREAD_TS);
    dg_outbox_rows_free(rows, n);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);
}

/* The outbox part of store_platform_case_run. */
static void outbox_rows(dg_store *st)
{
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    ck_assert_int_eq(insert_row(st, "100", "d1", NULL, NULL), DG_OK);
    ck_assert_int_eq(insert_row(st, "C0WORK0001", "s1", "slack", THREAD_TS), DG_OK);
    ck_assert_int_eq(insert_row(st, "C0WORK0001", "s2", "slack", NULL), DG_OK);
    ck_assert_int_eq(insert_row(st, "200", "d2", "discord", NULL), DG_OK);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);

    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    dg_outbox_row *rows = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_store_outbox_list(st, NULL, &rows, &n), DG_OK);
    ck_assert_uint_eq(n, 4);
    ck_assert_str_eq(by_nonce(rows, n, "d1")->platform, "discord");
    assert_thread(by_nonce(rows, n, "d1"), NULL);
    ck_assert_str_eq(by_nonce(rows, n, "s1")->platform, "slack");
    assert_thread(by_nonce(rows, n, "s1"), THREAD_TS);
    ck_assert_str_eq(by_nonce(rows, n, "s2")->platform, "slack");
    assert_thread(by_nonce(rows, n, "s2"), NULL);
    ck_assert_str_eq(by_nonce(rows, n, "d2")->platform, "discord");
    dg_outbox_rows_free(rows, n);
    ck_assert_int_eq(dg_store_outbox_list(st, "C0WORK0001", &rows, &n), DG_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(rows[0].platform, "slack");
    assert_thread(&rows[0], THREAD_TS);
    dg_outbox_rows_free(rows, n);
    ck_assert_int_eq(dg_store_outbox_pending_of(st, "C0WORK0001", 0, 10, &rows, &n), DG_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(rows[0].nonce, "s1");
    ck_assert_str_eq(rows[0].platform, "slack");
    assert_thread(&rows[0], THREAD_TS);
    ck_assert_str_eq(rows[1].platform, "slack");
    assert_thread(&rows[1], NULL);
    /* One row taken out and cleared alone, then the rest. */
    dg_outbox_row_clear(&rows[0]);
    ck_assert_ptr_null(rows[0].thread_id);
    ck_assert_ptr_null(rows[0].nonce);
    dg_outbox_rows_free(rows, n);
    ck_assert_int_eq(dg_store_outbox_rows_in(st, DG_OUTBOX_PENDING, 10, &rows, &n), DG_OK);
    ck_assert_uint_eq(n, 4);
    ck_assert_str_eq(rows[1].platform, "slack");
    assert_thread(&rows[1], THREAD_TS);
    ck_assert_str_eq(rows[0].platform, "discord");
    assert_thread(&rows[0], NULL);
    dg_outbox_rows_free(rows, n);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);
}

/* The discover walk names each pending row's platform, so a dispatcher of
 * one skips the other's channels without reading a row's content. */
static void discover(dg_store *st)
{
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    dg_outbox_ref *refs = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_store_outbox_discover(st, 0, 10, &refs, &n), DG_OK);
    ck_assert_uint_eq(n, 4);
    static const char *const want[][2] = {
        {"100", "discord"}, {"C0WORK0001", "slack"}, {"C0WORK0001", "slack"}, {"200", "discord"}};
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(refs[i].channel_id, want[i][0]);
        ck_assert_str_eq(refs[i].platform, want[i][1]);
    }
    /* Past the first Slack row: the walk goes on from the cursor. */
    int64_t after = refs[1].id;
    free(refs);
    ck_assert_int_eq(dg_store_outbox_discover(st, after, 1, &refs, &n), DG_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(refs[0].platform, "slack");
    free(refs);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);
}

static void discussion(dg_store *st, const char *channel, const char *platform, const char *want)
{
    char *order[] = {"alpha", "beta"};
    dg_discussion d = {.discussion_channel_id = (char *)channel,
                       .origin_channel_id = "origin",
                       .initiator_agent_id = "alpha",
                       .initiator_session_key = "sk",
                       .initiator_session_id = "sid",
                       .initiator_workspace = "/ws",
                       .discuss_guide = "guide",
                       .status = DG_DISCUSSION_ACTIVE,
                       .created_at_ms = 10,
                       .turn_order = order,
                       .n_turn_order = 2,
                       .platform = platform};
    int64_t id = 0;
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    ck_assert_int_eq(dg_store_discussion_insert(st, &d, &id), DG_OK);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);
    dg_discussion got;
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    ck_assert_int_eq(dg_store_discussion_by_channel(st, channel, &got), DG_OK);
    dg_store_rollback(st);
    ck_assert_int_eq(got.id, id);
    ck_assert_ptr_nonnull(got.platform);
    ck_assert_str_eq(got.platform, want);
    dg_discussion_clear(&got);
}

/* The platform of channel's turn row ("-" when it has none). */
static void assert_channel(dg_store *st, const char *channel, const char *want, int mode)
{
    dg_turn_channel_row ch;
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    int rc = dg_store_turns_channel_load(st, channel, &ch);
    dg_store_rollback(st);
    if (!strcmp(want, "-")) {
        ck_assert_int_eq(rc, DG_ERR_NOT_FOUND);
        ck_assert_ptr_null(ch.platform);
        return;
    }
    ck_assert_int_eq(rc, DG_OK);
    ck_assert_ptr_nonnull(ch.platform);
    ck_assert_str_eq(ch.platform, want);
    ck_assert_int_eq((int)ch.mode, mode);
    dg_turn_channel_row_clear(&ch);
}

static void turn_channels(dg_store *st)
{
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    ck_assert_int_eq(dg_store_turns_channel_save(st, "100", DG_MODE_NORMAL, NULL, NULL, 0, 1),
                     DG_OK);
    ck_assert_int_eq(
        dg_store_turns_channel_save(st, "C0WORK0001", DG_MODE_DISCUSSION, "alpha", NULL, 0, 1),
        DG_OK);
    ck_assert_int_eq(dg_store_turns_channel_platform_set(st, "C0WORK0001", "slack", 2), DG_OK);
    /* No row yet: one is made, a normal channel on Slack. */
    ck_assert_int_eq(dg_store_turns_channel_platform_set(st, "C0NEW00001", "slack", 2), DG_OK);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);
    assert_channel(st, "100", "discord", DG_MODE_NORMAL);
    assert_channel(st, "C0WORK0001", "slack", DG_MODE_DISCUSSION);
    assert_channel(st, "C0NEW00001", "slack", DG_MODE_NORMAL);
    assert_channel(st, "C0NONE0001", "-", 0);
    /* Saving the channel's turn row again keeps its platform. */
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    ck_assert_int_eq(
        dg_store_turns_channel_save(st, "C0WORK0001", DG_MODE_CLOSED, "alpha", NULL, 1, 3), DG_OK);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);
    assert_channel(st, "C0WORK0001", "slack", DG_MODE_CLOSED);
}

void store_platform_case_run(dg_store *st)
{
    outbox_rows(st);
    discover(st);
    discussion(st, "C0DISC0001", "slack", "slack");
    discussion(st, "400", NULL, "discord");
    discussion(st, "401", "discord", "discord");
    turn_channels(st);
}

/* sql, run alone in a transaction, fails (and the transaction is rolled
 * back: on PostgreSQL a failed statement ends it). */
static void refused_sql(dg_store *st, const char *sql)
{
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    dg_stmt *s = dg_store_stmt(st, sql);
    ck_assert_msg(s != NULL, "%s: %s", sql, dg_store_errmsg(st));
    ck_assert_msg(dg_store_run(s) != DG_OK, "accepted: %s", sql);
    dg_store_rollback(st);
}

void store_platform_case_refusals(dg_store *st)
{
    ck_assert_int_eq(dg_store_begin(st), DG_OK);
    ck_assert_int_eq(insert_row(st, "C0WORK0001", "x1", "teams", NULL), DG_ERR_INVALID);
    ck_assert_int_eq(insert_row(st, "C0WORK0001", "x2", "Slack", NULL), DG_ERR_INVALID);
    ck_assert_int_eq(insert_row(st, "C0WORK0001", "x3", "", NULL), DG_ERR_INVALID);
    ck_assert_int_eq(insert_row(st, "100", "x4", "discord", THREAD_TS), DG_ERR_INVALID);
    ck_assert_int_eq(insert_row(st, "100", "x5", NULL, THREAD_TS), DG_ERR_INVALID);
    ck_assert_int_eq(insert_row(st, "C0WORK0001", "x6", "slack", ""), DG_ERR_INVALID);
    char *order[] = {"alpha"};
    dg_discussion d = {.discussion_channel_id = "C0DISC0001",
                       .origin_channel_id = "origin",
                       .initiator_agent_id = "alpha",
                       .initiator_session_key = "sk",
                       .initiator_session_id = "sid",
                       .initiator_workspace = "/ws",
                       .discuss_guide = "guide",
                       .status = DG_DISCUSSION_ACTIVE,
                       .created_at_ms = 10,
                       .turn_order = order,
                       .n_turn_order = 1,
                       .platform = "teams"};
    int64_t id = 0;
    ck_assert_int_eq(dg_store_discussion_insert(st, &d, &id), DG_ERR_INVALID);
    ck_assert_int_eq(dg_store_turns_channel_platform_set(st, "C0WORK0001", "teams", 1),
                     DG_ERR_INVALID);
    ck_assert_int_eq(dg_store_commit(st), DG_OK);

    /* The columns refuse what the API would not write. */
    refused_sql(st, "INSERT INTO outbox(channel_id, content, nonce, created_at_ms, platform)"
                    " VALUES ('C0WORK0001', 'x', 'x7', 1, 'teams')");
    refused_sql(st, "INSERT INTO discussions(discussion_channel_id, origin_channel_id,"
                    " initiator_agent_id, initiator_session_key, initiator_session_id,"
                    " initiator_workspace, discuss_guide, status, created_at_ms, platform)"
                    " VALUES ('C0DISC0001', 'o', 'a', 'k', 'i', '/w', 'g', 'active', 1, 'teams')");
    refused_sql(st, "INSERT INTO turn_channels(channel_id, updated_ms, platform)"
                    " VALUES ('C0WORK0001', 1, 'Slack')");
    refused_sql(st, "INSERT INTO outbox(channel_id, content, nonce, created_at_ms, platform)"
                    " VALUES ('C0WORK0001', 'x', 'x8', 1, NULL)");

    ck_assert_int_eq(count_of(st, "SELECT count(*) FROM outbox"), 0);
    ck_assert_int_eq(count_of(st, "SELECT count(*) FROM discussions"), 0);
    ck_assert_int_eq(count_of(st, "SELECT count(*) FROM discussion_members"), 0);
    ck_assert_int_eq(count_of(st, "SELECT count(*) FROM turn_channels"), 0);
}
