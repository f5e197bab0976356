/*
 * check_store_pg.c -- store/store_pg.c against a real PostgreSQL server
 * (tests/support/pg_server.h, one per suite): which database is ours
 * (new, ours at a version, another application's, a newer dirigent's, a
 * version without its tables), the password kept out of every message,
 * the statement seam's answers where the dialects differ (conflicts read
 * as "no row changed", RETURNING ids, a failed statement failing the
 * commit but not the connection), a reconnect after the server dropped
 * the session, and the probe seeing another instance's commit at once.
 * The areas' statements themselves run in the *_pg suites (shared_pg,
 * outbox_pg, discuss_pg, turn_hooks_pg), which are the SQLite suites'
 * cases on this backend.
 */
/*
 * Lines of store/store_pg.c no test here can reach (the coverage aim names
 * each; every other line runs in make check):
 *   raw_password: a url without "://": dg_store_is_url admits only
 *     postgresql:// and postgres:// urls to this backend.
 *   dg_pg_close: called without a connection struct: dg_store_close calls
 *     it only when st->pg is set.
 *   dg_pg_bind: a parameter index outside 1..DG_PG_MAXP: the statements
 *     are the store's own, and dg_pg_stmt_prepare refuses one with more
 *     parameters than DG_PG_MAXP before anything is bound.
 *   dg_pg_begin: sending the pipeline failing, and the results ending
 *     without an error and without all three: only when the socket breaks
 *     between PQstatus and the send, a race that
 *     session_ended_by_the_server_reconnects meets on some runs, not on
 *     every run.
 */
#include <check.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_cost_case.h"
#include "store_platform_case.h"
#include "store_saga_case.h"
#include "failalloc.h"
#include "openclaw/plugin.h"
#include "pg_server.h"
#include "scope.h"
#include "store.h"
#include "store_test.h"
#include "store_int.h"
#include "store_operator.h"
#include "store_outbox.h"
#include "store_instances.h"
#include "store_tool_calls.h"
#include "store_transitions.h"
#include "store_turns.h"
#include "testutil.h"

/* What migration v13 added to turn_ledger, taken away again (a store made
 * at the current version, turned back into an older one). */
#define UNDO_V13_LEDGER                                                                            \
    "ALTER TABLE turn_ledger DROP COLUMN t_scope, DROP COLUMN t_ord,"                              \
    " DROP COLUMN t_cause, DROP COLUMN t_before, DROP COLUMN t_after, DROP COLUMN t_state,"        \
    " DROP COLUMN t_passed, DROP COLUMN t_agent_msgs;"
/* And what v14 added (marks carrying a scope's state). */
#define UNDO_V14_LEDGER "ALTER TABLE turn_ledger DROP COLUMN t_snap;"
/* And v15's table of marks that carry nothing. */
#define UNDO_V15_SEEN "DROP TABLE turn_seen;"
/* And v16's member standing. */
#define UNDO_V16_MEMBERS "ALTER TABLE turn_members DROP COLUMN standing;"
/* And v17's table of command hints. */
#define UNDO_V17_HINTS "DROP TABLE turn_command_hints;"
/* And v18's cost ledger and breaker columns. */
#define UNDO_V18_COST                                                                              \
    "DROP TABLE cost_runs; DROP TABLE cost_humans; ALTER TABLE turn_ledger DROP COLUMN budget,"    \
    " DROP COLUMN budget_until_ms;"
/* And v20's judge ledger. */
#define UNDO_V20_JUDGE "DROP TABLE judge_calls;"
/* And v21's initiator of a creation. */
#define UNDO_V21_INITIATOR "ALTER TABLE tool_calls DROP COLUMN initiator;"
/* And v19's platform and thread columns. */
#define UNDO_V19_PLATFORM                                                                          \
    "ALTER TABLE outbox DROP COLUMN platform, DROP COLUMN thread_id;"                              \
    " ALTER TABLE discussions DROP COLUMN platform;"                                               \
    " ALTER TABLE turn_channels DROP COLUMN platform;"
#define UNDO_V13_LOG                                                                               \
    "DROP INDEX turn_transitions_scope; ALTER TABLE turn_transitions DROP"                         \
    " COLUMN ord; CREATE INDEX turn_transitions_scope ON turn_transitions(channel_id, scope, id);"

static dg_store *open_ok(const char *url)
{
    dg_store *st = NULL;
    char err[512];
    ck_assert_msg(dg_store_open(url, &st, err, sizeof err) == OC_OK, "%s", err);
    return st;
}

/* The number of rows of sql's first column, read on url. */
static long count_of(const char *url, const char *sql)
{
    dg_store *st = open_ok(url);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    dg_stmt *s = dg_store_stmt(st, sql);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(dg_step(s), DG_ROW);
    long n = (long)dg_col_int64(s, 0);
    dg_store_rollback(st);
    dg_store_close(st);
    return n;
}

START_TEST(new_database_created_then_reopened_at_its_version)
{
    char *url = pgs_fresh_url();
    dg_store *st = open_ok(url);
    ck_assert_int_eq(dg_store_opened_version(st), 0);
    ck_assert_ptr_nonnull(strstr(dg_store_where(st), "PostgreSQL dirigent@"));
    ck_assert_ptr_null(strstr(dg_store_where(st), PGS_PASSWORD));
    dg_store_close(st);
    st = open_ok(url);
    ck_assert_int_eq(dg_store_opened_version(st), dg_store_schema_version());
    dg_store_close(st);
    ck_assert_int_eq(count_of(url, "SELECT version FROM dg_schema_version"),
                     dg_store_schema_version());
    /* Every text column sorts bytewise as in SQLite ('~' after every
     * digit): the store's key ranges rely on it whatever the database's
     * own collation. */
    ck_assert_int_eq(count_of(url, "SELECT count(*) FROM information_schema.columns WHERE"
                                   " table_schema = current_schema() AND data_type = 'text'"
                                   " AND collation_name IS DISTINCT FROM 'C'"),
                     0);
    ck_assert_int_gt(count_of(url, "SELECT count(*) FROM information_schema.columns WHERE"
                                   " table_schema = current_schema() AND data_type = 'text'"),
                     10);
    free(url);
}
END_TEST

START_TEST(another_applications_database_refused_untouched)
{
    char *url = pgs_fresh_url();
    ck_assert_int_eq(pgs_exec(url, "CREATE TABLE invoices (id int)"), 0);
    dg_store *st = NULL;
    char err[512];
    ck_assert_int_eq(dg_store_open(url, &st, err, sizeof err), OC_ERR_INVALID);
    ck_assert_ptr_null(st);
    ck_assert_msg(strstr(err, "invoices") && strstr(err, "of its own"), "%s", err);
    /* Nothing written: no table of ours appeared. */
    ck_assert_int_eq(pgs_value(url, "SELECT count(*) FROM information_schema.tables WHERE"
                                    " table_schema = current_schema()"),
                     1);
    free(url);
}
END_TEST

START_TEST(newer_schema_refused)
{
    char *url = pgs_fresh_url();
    dg_store_close(open_ok(url));
    char sql[96];
    snprintf(sql, sizeof sql, "UPDATE dg_schema_version SET version = %d",
             dg_store_schema_version() + 1);
    ck_assert_int_eq(pgs_exec(url, sql), 0);
    dg_store *st = NULL;
    char err[512];
    ck_assert_int_eq(dg_store_open(url, &st, err, sizeof err), OC_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err, "newer dirigent"), "%s", err);
    free(url);
}
END_TEST

/* A store as v10 left it (v11 changed only the outbox's state CHECK and
 * v12 only its channel index, so a current store with v3's CHECK and
 * partial index put back and its version set to 10 is one) with a pending, a sent and a failed row and the id sequence above
 * them (a pruned id 7) migrates to the current version: every row as it
 * was, the sequence kept, the CHECK a range that still refuses 3. */
START_TEST(v10_outbox_migrates_with_its_rows)
{
    char *url = pgs_fresh_url();
    dg_store_close(open_ok(url));
    ck_assert_int_eq(pgs_exec(url,
                              "ALTER TABLE outbox DROP CONSTRAINT outbox_state_check, ADD "
                              "CONSTRAINT outbox_state_check CHECK (state IN (0, 1, 2));"
                              "DROP INDEX outbox_channel;"
                              "CREATE INDEX outbox_pending ON outbox(channel_id, id)"
                              " WHERE state = 0;" UNDO_V21_INITIATOR UNDO_V20_JUDGE
                                  UNDO_V19_PLATFORM UNDO_V18_COST UNDO_V17_HINTS UNDO_V16_MEMBERS
                                      UNDO_V15_SEEN UNDO_V14_LEDGER UNDO_V13_LEDGER UNDO_V13_LOG
                              "UPDATE dg_schema_version SET version = 10"),
                     0);
    ck_assert_int_eq(
        pgs_exec(url,
                 "INSERT INTO outbox(id, channel_id, content, mentions, nonce, part, parts, state,"
                 " attempts, created_at_ms, done_at_ms, message_id, last_error) VALUES"
                 " (4, 'c1', 'pending one', '<@1>', 'n4', 1, 2, 0, 2, 100, NULL, NULL, 'http 503'),"
                 " (5, 'c1', 'sent one', '', 'n5', 2, 2, 1, 1, 101, 200, 'm5', NULL),"
                 " (6, 'c2', 'failed one', '', 'n6', 1, 1, 2, 9, 102, 300, NULL, 'http 403');"
                 "SELECT setval(pg_get_serial_sequence('outbox', 'id'), 7)"),
        0);
    dg_store *st = open_ok(url);
    ck_assert_int_eq(dg_store_opened_version(st), 10);
    dg_store_close(st);
    ck_assert_int_eq(count_of(url, "SELECT version FROM dg_schema_version"),
                     dg_store_schema_version());
    ck_assert_int_eq(
        pgs_value(
            url,
            "SELECT count(*) FROM outbox WHERE (id, channel_id, content, mentions, nonce, part,"
            " parts, state, attempts, created_at_ms, coalesce(done_at_ms, -1),"
            " coalesce(message_id, '-'), coalesce(last_error, '-')) IN ("
            " (4, 'c1', 'pending one', '<@1>', 'n4', 1, 2, 0, 2, 100, -1, '-', 'http 503'),"
            " (5, 'c1', 'sent one', '', 'n5', 2, 2, 1, 1, 101, 200, 'm5', '-'),"
            " (6, 'c2', 'failed one', '', 'n6', 1, 1, 2, 9, 102, 300, '-', 'http 403'))"),
        3);
    ck_assert_int_eq(pgs_value(url, "SELECT count(*) FROM outbox"), 3);
    ck_assert_int_eq(pgs_value(url, "SELECT count(*) FROM pg_constraint WHERE conrelid ="
                                    " 'outbox'::regclass AND conname = 'outbox_state_check'"
                                    " AND pg_get_constraintdef(oid) LIKE"
                                    " '%state >= 0%state <= 2%'"),
                     1);
    /* v12: the channel index holds every row (a mark touches no index). */
    ck_assert_int_eq(pgs_value(url, "SELECT count(*) FROM pg_indexes WHERE schemaname ="
                                    " current_schema() AND indexname = 'outbox_channel' AND"
                                    " indexdef NOT LIKE '%WHERE%'"),
                     1);
    ck_assert_int_eq(pgs_value(url, "SELECT count(*) FROM pg_indexes WHERE schemaname ="
                                    " current_schema() AND indexname = 'outbox_pending'"),
                     0);
    ck_assert(pgs_refuses(url, "UPDATE outbox SET state = 3 WHERE id = 6",
                          "violates check constraint \"outbox_state_check\""));
    ck_assert_int_eq(pgs_exec(url, "INSERT INTO outbox(channel_id, content, nonce, created_at_ms)"
                                   " VALUES ('c', 'x', 'n8', 1)"),
                     0);
    ck_assert_int_eq(pgs_value(url, "SELECT max(id) FROM outbox"), 8);
    free(url);
}
END_TEST

/* A store as v18 left it (the current one without v19's columns), with
 * outbox rows, a discussion and a turn channel, migrates: every old row is
 * Discord's, no outbox row in a thread. */
START_TEST(v18_rows_are_discords_after_migration)
{
    char *url = pgs_fresh_url();
    dg_store_close(open_ok(url));
    ck_assert_int_eq(pgs_exec(url, UNDO_V21_INITIATOR UNDO_V20_JUDGE UNDO_V19_PLATFORM
                              "UPDATE dg_schema_version SET version = 18"),
                     0);
    ck_assert_int_eq(pgs_exec(url, store_platform_v18_rows), 0);
    dg_store *st = open_ok(url);
    ck_assert_int_eq(dg_store_opened_version(st), 18);
    store_platform_case_old_rows(st);
    dg_store_close(st);
    ck_assert_int_eq(count_of(url, "SELECT version FROM dg_schema_version"),
                     dg_store_schema_version());
    /* v19's CHECKs are there, in the server's words. */
    ck_assert_int_eq(pgs_value(url, "SELECT count(*) FROM pg_constraint WHERE conrelid IN"
                                    " ('outbox'::regclass, 'discussions'::regclass,"
                                    " 'turn_channels'::regclass) AND contype = 'c' AND"
                                    " pg_get_constraintdef(oid) LIKE '%platform%slack%'"),
                     3);
    free(url);
}
END_TEST

/* Slack and Discord rows read back with their platform and thread; bad
 * platforms refused by the API and by the columns, nothing written. */
START_TEST(rows_read_back_their_platform)
{
    char *url = pgs_fresh_url();
    dg_store *st = open_ok(url);
    store_platform_case_run(st);
    dg_store_close(st);
    free(url);
}
END_TEST

/* The steps a discussion's creation notes on its pending tool call. */
START_TEST(creation_saga_steps)
{
    char *url = pgs_fresh_url();
    dg_store *st = open_ok(url);
    store_saga_case_run(st);
    dg_store_close(st);
    free(url);
}
END_TEST

START_TEST(bad_platform_refused)
{
    char *url = pgs_fresh_url();
    dg_store *st = open_ok(url);
    store_platform_case_refusals(st);
    dg_store_close(st);
    free(url);
}
END_TEST

START_TEST(version_without_its_tables_refused)
{
    char *url = pgs_fresh_url();
    ck_assert_int_eq(pgs_exec(url, "CREATE TABLE dg_schema_version (version BIGINT NOT NULL);"
                                   "INSERT INTO dg_schema_version VALUES (3)"),
                     0);
    dg_store *st = NULL;
    char err[512];
    ck_assert_int_eq(dg_store_open(url, &st, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "lacks its tables"), "%s", err);
    free(url);
}
END_TEST

/* Each refusal names the store as user@host/db and never spells the
 * password (neither the one given nor the right one). */
START_TEST(password_never_in_a_message)
{
    static const char wrong[] = "Wrong-Passw0rd-42";
    char url[768], err[512];
    dg_store *st = NULL;
    const char *tail = strchr(pgs_url(), '@');
    snprintf(url, sizeof url, "postgresql://dirigent:%s%s", wrong, tail);
    ck_assert_int_eq(dg_store_open(url, &st, err, sizeof err), OC_ERR_IO);
    ck_assert_msg(strstr(err, "password authentication failed"), "%s", err);
    ck_assert_msg(strstr(err, "dirigent@"), "%s", err);
    ck_assert_msg(!strstr(err, wrong) && !strstr(err, "Passw0rd"), "%s", err);
    /* An unreadable url: libpq's parse error must not carry it either. */
    snprintf(url, sizeof url, "postgresql://dirigent:%s@/postgres?nosuchoption=1", wrong);
    ck_assert_int_eq(dg_store_open(url, &st, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(!strstr(err, wrong) && strstr(err, "store.url"), "%s", err);
    /* No server at that socket: the message names it without the password. */
    snprintf(url, sizeof url, "postgresql://dirigent:%s@/postgres?host=/nonexistent&port=1",
             PGS_PASSWORD);
    ck_assert_int_eq(dg_store_open(url, &st, err, sizeof err), OC_ERR_IO);
    ck_assert_msg(!strstr(err, PGS_PASSWORD) && strstr(err, "/nonexistent"), "%s", err);
}
END_TEST

/* A conflict is "no row changed" (an error would abort the transaction);
 * RETURNING gives increasing ids. */
START_TEST(conflicts_and_returned_ids)
{
    char *url = pgs_fresh_url();
    dg_store *st = open_ok(url);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    int fresh = 0;
    ck_assert_int_eq(dg_store_turns_seen_claim(st, "41", "1001", 5, &fresh), OC_OK);
    ck_assert_int_eq(fresh, 1);
    ck_assert_int_eq(dg_store_turns_seen_claim(st, "41", "1001", 6, &fresh), OC_OK);
    ck_assert_int_eq(fresh, 0);
    ck_assert_int_eq(dg_store_tool_call_intent(st, "t", "c1", "f", 7), OC_OK);
    ck_assert_int_eq(dg_store_tool_call_intent(st, "t", "c1", "f", 8), OC_ERR_CONFLICT);
    dg_outbox_row row = {.channel_id = "41",
                         .content = "hello",
                         .mentions = "",
                         .nonce = "n1",
                         .part = 1,
                         .parts = 1,
                         .created_at_ms = 9};
    int64_t id1 = 0, id2 = 0;
    ck_assert_int_eq(dg_store_outbox_insert(st, &row, &id1), OC_OK);
    row.nonce = "n2";
    ck_assert_int_eq(dg_store_outbox_insert(st, &row, &id2), OC_OK);
    ck_assert_int_gt(id1, 0);
    ck_assert_int_gt(id2, id1);
    /* The highest pending row (the outbox's start looks it up). */
    int64_t max = 0;
    ck_assert_int_eq(dg_store_outbox_max_pending_id(st, &max), OC_OK);
    ck_assert_int_eq(max, id2);
    ck_assert_int_eq(dg_store_outbox_mark_sent(st, id2, "m2", 10), OC_OK);
    ck_assert_int_eq(dg_store_outbox_max_pending_id(st, &max), OC_OK);
    ck_assert_int_eq(max, id1);
    /* The transaction is still good after the conflicts. */
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    dg_store_close(st);
    ck_assert_int_eq(count_of(url, "SELECT count(*) FROM outbox"), 2);
    ck_assert_int_eq(count_of(url, "SELECT count(*) FROM tool_calls"), 1);
    free(url);
}
END_TEST

/* The command hint's cooldown on PostgreSQL: once per channel in
 * cooldown_ms, kept across a reopen. */
/* The cost ledger's statements in the server's dialect. */
START_TEST(cost_ledger)
{
    char *url = pgs_fresh_url();
    dg_store *st = open_ok(url);
    store_cost_case_run(st);
    dg_store_close(st);
    free(url);
}
END_TEST

START_TEST(command_hint_claimed_once_per_cooldown)
{
    char *url = pgs_fresh_url();
    dg_store *st = open_ok(url);
    int got = -1;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_hint_claim(st, "41", 1000, 3600, &got), OC_OK);
    ck_assert_int_eq(got, 1);
    ck_assert_int_eq(dg_store_turns_hint_claim(st, "41", 4599, 3600, &got), OC_OK);
    ck_assert_int_eq(got, 0);
    ck_assert_int_eq(dg_store_turns_hint_claim(st, "42", 4599, 3600, &got), OC_OK);
    ck_assert_int_eq(got, 1);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    dg_store_close(st);
    st = open_ok(url);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_hint_claim(st, "41", 4599, 3600, &got), OC_OK);
    ck_assert_int_eq(got, 0);
    ck_assert_int_eq(dg_store_turns_hint_claim(st, "41", 4600, 3600, &got), OC_OK);
    ck_assert_int_eq(got, 1);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    dg_store_close(st);
    ck_assert_int_eq(count_of(url, "SELECT at_ms FROM turn_command_hints WHERE channel_id = "
                                   "'41'"),
                     4600);
    free(url);
}
END_TEST

/* On PostgreSQL too a mark keeps its cause without its own id, and the
 * list and the log the marks move to at pruning give it whole (the same
 * SQL expression, in the server's dialect). */
START_TEST(mark_cause_without_its_id_read_whole)
{
    char *url = pgs_fresh_url();
    dg_store *st = open_ok(url);
    const char *cause = "message 1001 from agent 77 (alpha)";
    int fresh = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_seen_claim(st, "41", "1001", 5, &fresh), OC_OK);
    dg_transition tr = {.at_ms = 5,
                        .scope = "conversation",
                        .cause = (char *)cause,
                        .state = "speaking",
                        .passed = "",
                        .message_id = "1001"};
    ck_assert_int_eq(dg_store_transition_add(st, "41", &tr), OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    ck_assert_int_eq(pgs_value(url, "SELECT count(*) FROM turn_ledger WHERE k = '1001'"
                                    " AND t_cause = '~agent 77 (alpha)' AND t_scope IS NULL"
                                    " AND t_state IS NULL"),
                     1);
    for (int pass = 0; pass < 2; pass++) {
        dg_transition *v = NULL;
        size_t n = 0;
        long removed = 0;
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        ck_assert_int_eq(dg_store_transitions_list(st, "41", "conversation", 10, &v, &n), OC_OK);
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(v[0].cause, cause);
        ck_assert_str_eq(v[0].scope, "conversation");
        ck_assert_str_eq(v[0].state, "speaking");
        dg_transitions_free(v, n);
        if (pass == 0) /* the mark goes; its transition moves to the log */
            ck_assert_int_eq(dg_store_turns_seen_prune(st, 100, &removed), OC_OK);
        ck_assert_int_eq(dg_store_commit(st), OC_OK);
        ck_assert_int_eq(removed, pass == 0);
    }
    dg_store_close(st);
    free(url);
}
END_TEST

/* A failed statement aborts a PostgreSQL transaction: the commit must say
 * so (not report success), nothing is kept, and the store goes on. */
START_TEST(failed_statement_fails_the_commit_not_the_store)
{
    char *url = pgs_fresh_url();
    dg_store *st = open_ok(url);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    int fresh = 0;
    ck_assert_int_eq(dg_store_turns_seen_claim(st, "41", "2001", 5, &fresh), OC_OK);
    dg_outbox_row bad = {.channel_id = "41",
                         .content = "",
                         .mentions = "",
                         .nonce = "n",
                         .part = 1,
                         .parts = 1,
                         .created_at_ms = 1}; /* content CHECK */
    ck_assert_int_eq(dg_store_outbox_insert(st, &bad, NULL), OC_ERR_IO);
    ck_assert_msg(strstr(dg_store_errmsg(st), "check constraint"), "%s", dg_store_errmsg(st));
    ck_assert_int_eq(dg_store_commit(st), OC_ERR_IO);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_seen_claim(st, "41", "2001", 5, &fresh), OC_OK);
    ck_assert_int_eq(fresh, 1); /* the first claim was not kept */
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    dg_store_close(st);
    free(url);
}
END_TEST

/* The server ends the session (a restart, an admin): the next transaction
 * reconnects and prepares its statements again. */
START_TEST(session_ended_by_the_server_reconnects)
{
    char *url = pgs_fresh_url();
    dg_store *st = open_ok(url);
    long n = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_count(st, "seen", &n), OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    ck_assert_int_eq(pgs_exec(pgs_url(), "SELECT pg_terminate_backend(pid) FROM "
                                         "pg_stat_activity WHERE usename = 'dirigent' AND "
                                         "pid <> pg_backend_pid()"),
                     0);
    /* The first attempt may meet the dead socket; one more must work. */
    int ok = dg_store_begin(st) == OC_OK; /* a failed begin holds nothing to roll back */
    if (ok && dg_store_turns_count(st, "seen", &n) != OC_OK) {
        dg_store_rollback(st);
        ok = 0;
    }
    if (ok)
        ok = dg_store_commit(st) == OC_OK;
    if (!ok) {
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        ck_assert_int_eq(dg_store_turns_count(st, "seen", &n), OC_OK);
        ck_assert_int_eq(dg_store_commit(st), OC_OK);
    }
    ck_assert_int_ge(dg_store_change_seq(st), 0); /* the probe reconnects too */
    dg_store_close(st);
    free(url);
}
END_TEST

/* The probe sees another instance's commit as soon as the commit returned
 * (no notification to wait for: never a stale answer). */
START_TEST(probe_sees_the_other_instances_commit_at_once)
{
    char *url = pgs_fresh_url();
    dg_store *a = open_ok(url), *b = open_ok(url);
    int64_t s0 = dg_store_change_seq(b);
    ck_assert_int_eq(s0, 0);
    dg_scope sc;
    ck_assert_int_eq(dg_scope_conversation("42", &sc), OC_OK);
    dg_turn_state t;
    memset(&t, 0, sizeof t);
    t.speaker = t.anchor = DG_NOBODY;
    t.active = 1;
    ck_assert_int_eq(dg_store_begin(a), OC_OK);
    ck_assert_int_eq(dg_store_turns_scope_save(a, &sc, NULL, &t, 0, 10), OC_OK);
    ck_assert_int_eq(dg_store_commit(a), OC_OK);
    int64_t s1 = dg_store_change_seq(b);
    ck_assert_int_gt(s1, s0);
    ck_assert_int_eq(dg_store_change_seq(b), s1); /* nothing new: the same answer */
    dg_store_close(a);
    dg_store_close(b);
    free(url);
}
END_TEST

/* url (of pgs_fresh_url: the superuser's, with a search_path) for role
 * instead; malloc'd. */
static char *url_as(const char *url, const char *role)
{
    static const char su[] = "postgresql://dirigent:" PGS_PASSWORD "@";
    ck_assert(!strncmp(url, su, strlen(su)));
    char *out = NULL;
    ck_assert_int_ge(asprintf(&out, "postgresql://%s:" PGS_PASSWORD "@%s", role, url + strlen(su)),
                     0);
    return out;
}

/* The schema name in url's search_path. */
static const char *schema_of(const char *url)
{
    const char *s = strstr(url, "search_path%3D");
    ck_assert_ptr_nonnull(s);
    return s + strlen("search_path%3D");
}

/* A role of this test's own (roles are the cluster's, tests run in
 * parallel processes): "r_<pid>", LOGIN with the suite's password. */
static void make_role(char *role, size_t n)
{
    snprintf(role, n, "r_%ld", (long)getpid());
    char sql[200];
    snprintf(sql, sizeof sql, "CREATE ROLE %s LOGIN PASSWORD '" PGS_PASSWORD "'", role);
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
}

static void drop_role(const char *role, const char *schema)
{
    char sql[200];
    snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", schema);
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
    snprintf(sql, sizeof sql, "DROP ROLE %s", role);
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
}

/* A role that may use the schema but not create in it: the migration
 * fails, is rolled back whole (nothing created), and the refusal says
 * what failed. */
START_TEST(migration_refused_by_the_server_is_rolled_back)
{
    char *url = pgs_fresh_url(), role[32], sql[200];
    make_role(role, sizeof role);
    snprintf(sql, sizeof sql, "GRANT USAGE ON SCHEMA %s TO %s", schema_of(url), role);
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
    char *mine = url_as(url, role);
    dg_store *st = NULL;
    char err[512] = "";
    ck_assert_int_eq(dg_store_open(mine, &st, err, sizeof err), OC_ERR_IO);
    ck_assert_ptr_null(st);
    ck_assert_msg(strstr(err, "could not check or set up the schema") &&
                      strstr(err, "permission denied"),
                  "%s", err);
    ck_assert_ptr_null(strstr(err, PGS_PASSWORD));
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM information_schema.tables WHERE "
             "table_schema = '%s'",
             schema_of(url));
    ck_assert_int_eq(pgs_value(pgs_url(), sql), 0);
    drop_role(role, schema_of(url));
    free(mine);
    free(url);
}
END_TEST

/* The server refuses the reconnect after it ended the session (the role
 * may no longer log in): the transaction fails with the server's reason,
 * the probe answers -1 ("cannot tell"), and both work again once the
 * server lets the role in. */
START_TEST(reconnect_refused_fails_cleanly_then_recovers)
{
    char *url = pgs_fresh_url(), role[32], sql[256];
    make_role(role, sizeof role);
    snprintf(sql, sizeof sql, "GRANT ALL ON SCHEMA %s TO %s", schema_of(url), role);
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
    char *mine = url_as(url, role);
    dg_store *st = open_ok(mine);
    ck_assert_int_ge(dg_store_change_seq(st), 0);
    snprintf(sql, sizeof sql, "ALTER ROLE %s NOLOGIN", role);
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
    snprintf(sql, sizeof sql,
             "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
             "usename = '%s'",
             role);
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
    /* The first begin may still meet the dead socket before it notices
     * ("server closed the connection"); the next one reconnects. */
    int rc = dg_store_begin(st);
    if (rc == OC_OK)
        dg_store_rollback(st);
    if (rc == OC_OK || !strstr(dg_store_errmsg(st), "not permitted"))
        rc = dg_store_begin(st);
    ck_assert_int_eq(rc, OC_ERR_IO);
    ck_assert_msg(strstr(dg_store_errmsg(st), "not permitted to log in") != NULL, "%s",
                  dg_store_errmsg(st));
    ck_assert_int_eq(dg_store_change_seq(st), -1);
    snprintf(sql, sizeof sql, "ALTER ROLE %s LOGIN", role);
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    long n = -1;
    ck_assert_int_eq(dg_store_turns_count(st, "seen", &n), OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    ck_assert_int_ge(dg_store_change_seq(st), 0);
    dg_store_close(st);
    drop_role(role, schema_of(url));
    free(mine);
    free(url);
}
END_TEST

/* Tables taken away behind the store's back (an operator's DROP): the
 * statements that need them fail to prepare on the server and say which
 * table, begin fails when its change-log head cannot be prepared, the
 * probe answers -1; nothing crashes and the store closes cleanly. */
START_TEST(tables_dropped_behind_the_store_fail_cleanly)
{
    char *url = pgs_fresh_url();
    dg_store *st = open_ok(url);
    ck_assert_int_eq(pgs_exec(url, "DROP TABLE outbox"), 0);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    int64_t n = 0;
    ck_assert_int_eq(dg_store_outbox_count(st, DG_OUTBOX_PENDING, &n), OC_ERR_IO);
    ck_assert_msg(strstr(dg_store_errmsg(st), "outbox") != NULL, "%s", dg_store_errmsg(st));
    dg_store_rollback(st);
    dg_store_close(st);
    /* A store opened afterwards: the head statement of begin and of the
     * probe is prepared on first use and fails now. */
    free(url);
    url = pgs_fresh_url();
    st = open_ok(url);
    ck_assert_int_eq(pgs_exec(url, "DROP TABLE turn_changes"), 0);
    ck_assert_int_eq(dg_store_begin(st), OC_ERR_IO);
    ck_assert_msg(strstr(dg_store_errmsg(st), "turn_changes") != NULL, "%s", dg_store_errmsg(st));
    ck_assert_int_eq(dg_store_change_seq(st), -1);
    dg_store_close(st);
    free(url);
}
END_TEST

/* Opening a new PostgreSQL store with each of our allocations failing in
 * turn (libpq's own are not counted: it is a shared library): a status
 * that says so, nothing leaked (SANITIZE=1), and a later open of the same
 * database works (a failed migration left nothing half-made). */
START_TEST(open_out_of_memory)
{
    fa_install(); /* before this process's first SQLite database */
    ck_assert(fa_available());
    if (fa_sqlite_hooked()) {
        /* SQLite's first allocation: the scratch database that lists our
         * tables of a version (dg_store_tables_of_version). */
        char *u = pgs_fresh_url();
        dg_store *st = open_ok(u);
        dg_store_close(st);
        char err[512] = "";
        fa_arm_sqlite(1);
        ck_assert_int_eq(dg_store_open(u, &st, err, sizeof err), OC_ERR_NOMEM);
        ck_assert_int_eq(fa_disarm(), 1);
        ck_assert_msg(strstr(err, "out of memory checking") != NULL, "%s", err);
        free(u);
    }
    long n, fresh_opens = 0;
    char *url = pgs_fresh_url();
    char sql[200];
    PGconn *check = PQconnectdb(pgs_url()); /* one connection for the checks */
    ck_assert_int_eq(PQstatus(check), CONNECTION_OK);
    for (n = 1; n < 5000; n++) {
        dg_store *st = NULL;
        char err[512] = "";
        fa_arm_own(n);
        int rc = dg_store_open(url, &st, err, sizeof err);
        int hit = fa_disarm();
        ck_assert_ptr_null(strstr(err, PGS_PASSWORD));
        if (rc == OC_OK) {
            dg_store_close(st);
            /* The next run migrates again: a new schema. */
            free(url);
            url = pgs_fresh_url();
            fresh_opens++;
        } else {
            ck_assert_msg(rc == OC_ERR_NOMEM || rc == OC_ERR_IO, "allocation %ld: %d (%s)", n, rc,
                          err);
            /* Nothing half-made: a failed migration left the schema empty;
             * a failure after it committed (the probe's connection, the
             * name) left the whole schema, which opens as it is. */
            snprintf(sql, sizeof sql,
                     "SELECT count(*) FROM information_schema.tables WHERE "
                     "table_schema = '%s'",
                     schema_of(url));
            PGresult *r = PQexec(check, sql);
            ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
            long tables = strtol(PQgetvalue(r, 0, 0), NULL, 10);
            PQclear(r);
            if (tables != 0) {
                st = open_ok(url);
                ck_assert_int_eq(dg_store_opened_version(st), dg_store_schema_version());
                dg_store_close(st);
                free(url);
                url = pgs_fresh_url();
            }
        }
        if (!hit) {
            ck_assert_int_eq(rc, OC_OK);
            break;
        }
    }
    printf("store_pg open_out_of_memory: %ld runs, %ld succeeded\n", n, fresh_opens);
    ck_assert_int_gt(n, 10);
    PQfinish(check);
    free(url);
}
END_TEST

/* A url that names user and password as parameters instead of before '@'
 * opens the same (no password between ':' and '@' to scrub). */
START_TEST(url_with_credentials_as_parameters)
{
    char *url = pgs_fresh_url();
    static const char su[] = "postgresql://dirigent:" PGS_PASSWORD "@/postgres?";
    ck_assert(!strncmp(url, su, strlen(su)));
    char *alt = NULL;
    ck_assert_int_ge(asprintf(&alt,
                              "postgresql:///postgres?user=dirigent&password=" PGS_PASSWORD "&%s",
                              url + strlen(su)),
                     0);
    dg_store *st = open_ok(alt);
    ck_assert_int_eq(dg_store_opened_version(st), 0);
    ck_assert_ptr_null(strstr(dg_store_where(st), PGS_PASSWORD));
    dg_store_close(st);
    free(alt);
    free(url);
}
END_TEST

/* The server refuses parts of the check and the migration to a role with
 * too few rights: the version table cannot be read, the version cannot be
 * written after the new tables were made (all of it rolled back), the
 * second (probe) connection is over the role's limit. Each is OC_ERR_IO
 * with the server's reason, no password, nothing half-made. */
START_TEST(schema_steps_refused_by_the_server)
{
    char role[32], sql[768], err[512];
    make_role(role, sizeof role);
    dg_store *st = NULL;
    /* 1. dg_schema_version visible to the role (it may insert) but not
     * readable. */
    char *u1 = pgs_fresh_url();
    st = open_ok(u1);
    dg_store_close(st);
    snprintf(sql, sizeof sql,
             "GRANT USAGE ON SCHEMA %s TO %s; GRANT INSERT ON %s.dg_schema_version "
             "TO %s",
             schema_of(u1), role, schema_of(u1), role);
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
    char *m1 = url_as(u1, role);
    ck_assert_int_eq(dg_store_open(m1, &st, err, sizeof err), OC_ERR_IO);
    ck_assert_msg(strstr(err, "permission denied") && strstr(err, "dg_schema_version") &&
                      !strstr(err, PGS_PASSWORD),
                  "%s", err);
    /* 2. At v9 (before turn_transitions and v11's outbox CHECK); the role
     * may create tables and owns the tables later steps alter (outbox,
     * turn_ledger, turn_members, discussions, turn_channels, tool_calls) but may not
     * write the version: the new table and the altered CHECK are rolled
     * back with the rest. */
    char *u2 = pgs_fresh_url();
    st = open_ok(u2);
    dg_store_close(st);
    ck_assert_int_eq(
        pgs_exec(u2, "DROP TABLE turn_transitions; ALTER TABLE outbox DROP "
                     "CONSTRAINT outbox_state_check, ADD CONSTRAINT "
                     "outbox_state_check CHECK (state IN (0, 1, 2));"
                     "DROP INDEX outbox_channel; CREATE INDEX outbox_pending ON "
                     "outbox(channel_id, id) WHERE state = 0;" UNDO_V21_INITIATOR UNDO_V20_JUDGE
                         UNDO_V19_PLATFORM UNDO_V18_COST UNDO_V17_HINTS UNDO_V16_MEMBERS
                             UNDO_V15_SEEN UNDO_V14_LEDGER UNDO_V13_LEDGER
                     "UPDATE dg_schema_version SET version = 9"),
        0);
    snprintf(sql, sizeof sql,
             "GRANT USAGE, CREATE ON SCHEMA %s TO %s; GRANT SELECT ON ALL "
             "TABLES IN SCHEMA %s TO %s; ALTER TABLE %s.outbox OWNER TO %s; ALTER TABLE "
             "%s.turn_ledger OWNER TO %s; ALTER TABLE %s.turn_members OWNER TO %s; ALTER TABLE "
             "%s.discussions OWNER TO %s; ALTER TABLE %s.turn_channels OWNER TO %s; ALTER TABLE "
             "%s.tool_calls OWNER TO %s",
             schema_of(u2), role, schema_of(u2), role, schema_of(u2), role, schema_of(u2), role,
             schema_of(u2), role, schema_of(u2), role, schema_of(u2), role, schema_of(u2), role);
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
    char *m2 = url_as(u2, role);
    ck_assert_int_eq(dg_store_open(m2, &st, err, sizeof err), OC_ERR_IO);
    ck_assert_msg(strstr(err, "permission denied") && strstr(err, "dg_schema_version"), "%s", err);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM information_schema.tables WHERE "
             "table_schema = '%s' AND table_name = 'turn_transitions'",
             schema_of(u2));
    ck_assert_int_eq(pgs_value(pgs_url(), sql), 0);
    snprintf(sql, sizeof sql, "SELECT version FROM %s.dg_schema_version", schema_of(u2));
    ck_assert_int_eq(pgs_value(pgs_url(), sql), 9);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM pg_constraint WHERE conrelid = "
             "'%s.outbox'::regclass AND conname = 'outbox_state_check' AND "
             "pg_get_constraintdef(oid) LIKE '%%ANY%%'",
             schema_of(u2));
    ck_assert_int_eq(pgs_value(pgs_url(), sql), 1);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM pg_indexes WHERE schemaname = '%s' AND "
             "indexname IN ('outbox_pending', 'outbox_channel')",
             schema_of(u2));
    ck_assert_int_eq(pgs_value(pgs_url(), sql), 1); /* v12's index swap rolled back too */
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM pg_indexes WHERE schemaname = '%s' AND "
             "indexname = 'outbox_pending'",
             schema_of(u2));
    ck_assert_int_eq(pgs_value(pgs_url(), sql), 1);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM information_schema.columns WHERE "
             "table_schema = '%s' AND table_name = 'turn_ledger' AND column_name = 't_cause'",
             schema_of(u2));
    ck_assert_int_eq(pgs_value(pgs_url(), sql), 0); /* and v13's columns */
    /* 3. A role allowed one connection: the probe's is refused. */
    char *u3 = pgs_fresh_url();
    snprintf(sql, sizeof sql, "GRANT ALL ON SCHEMA %s TO %s; ALTER ROLE %s CONNECTION LIMIT 1",
             schema_of(u3), role, role);
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
    char *m3 = url_as(u3, role);
    ck_assert_int_eq(dg_store_open(m3, &st, err, sizeof err), OC_ERR_IO);
    ck_assert_msg(strstr(err, "too many connections") && !strstr(err, PGS_PASSWORD), "%s", err);
    ck_assert_ptr_null(st);
    snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE; DROP SCHEMA %s CASCADE", schema_of(u1),
             schema_of(u2));
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
    drop_role(role, schema_of(u3));
    free(m1);
    free(m2);
    free(m3);
    free(u1);
    free(u2);
    free(u3);
}
END_TEST

/* Statements with each of our allocations failing in turn (the store
 * forgets its statements before each run, so each prepares again): the
 * copy of the SQL, the statement, a bound value. OC_OK with the row, or an
 * error with the transaction rolled back and nothing written. */
START_TEST(statements_out_of_memory)
{
    ck_assert(fa_available());
    char *url = pgs_fresh_url();
    dg_store *st = open_ok(url);
    long n, failed = 0;
    for (n = 1; n < 1000; n++) {
        char nonce[32];
        snprintf(nonce, sizeof nonce, "oom-%ld", n);
        dg_outbox_row r = {.channel_id = "100",
                           .content = "hello",
                           .mentions = "",
                           .nonce = nonce,
                           .part = 1,
                           .parts = 1,
                           .created_at_ms = n};
        dg_store_test_forget(st);
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        fa_arm_own(n);
        int64_t count = 0;
        int rc = dg_store_outbox_insert(st, &r, NULL);
        if (rc == OC_OK)
            rc = dg_store_outbox_count(st, DG_OUTBOX_PENDING, &count);
        int hit = fa_disarm();
        rc = dg_store_end(st, rc);
        failed += rc != OC_OK;
        ck_assert_msg(rc == OC_OK || rc == OC_ERR_IO || rc == OC_ERR_NOMEM, "allocation %ld: %d", n,
                      rc);
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM outbox WHERE nonce = '%s'", nonce);
        ck_assert_int_eq(pgs_value(url, sql), rc == OC_OK);
        if (!hit) {
            ck_assert_int_eq(rc, OC_OK);
            break;
        }
    }
    ck_assert_int_gt(failed, 3);
    dg_store_close(st);
    free(url);
}
END_TEST

/* The operator's read-only open on PostgreSQL: an older, a newer store
 * and one without its tables are refused naming what to do, a version
 * table that cannot be read is OC_ERR_IO with the server's reason, and the
 * scratch table list out of memory is OC_ERR_NOMEM. */
START_TEST(readonly_open_refusals)
{
    fa_install(); /* before this process's first SQLite database */
    char *url = pgs_fresh_url(), sql[300], err[512];
    dg_store *st = open_ok(url);
    dg_store_close(st);
    static const struct {
        int delta;
        const char *word;
    } vers[] = {{-1, "start the plugin of this version once"},
                {+1, "newer than this dirigent-ctl"}};
    for (int i = 0; i < 2; i++) {
        snprintf(sql, sizeof sql, "UPDATE dg_schema_version SET version = %d",
                 dg_store_schema_version() + vers[i].delta);
        ck_assert_int_eq(pgs_exec(url, sql), 0);
        st = NULL;
        ck_assert_int_eq(dg_store_open_readonly(url, &st, err, sizeof err), OC_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(err, vers[i].word) != NULL, "%s", err);
        ck_assert_ptr_null(st);
    }
    snprintf(sql, sizeof sql, "UPDATE dg_schema_version SET version = %d",
             dg_store_schema_version());
    ck_assert_int_eq(pgs_exec(url, sql), 0);
    if (fa_sqlite_hooked()) {
        fa_arm_sqlite(1);
        ck_assert_int_eq(dg_store_open_readonly(url, &st, err, sizeof err), OC_ERR_NOMEM);
        ck_assert_int_eq(fa_disarm(), 1);
    }
    ck_assert_int_eq(pgs_exec(url, "DROP TABLE turn_transitions"), 0);
    ck_assert_int_eq(dg_store_open_readonly(url, &st, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "lacks its tables") != NULL, "%s", err);
    /* Visible (the role may insert) but not readable: the server's reason. */
    char role[32];
    make_role(role, sizeof role);
    snprintf(sql, sizeof sql,
             "GRANT USAGE ON SCHEMA %s TO %s; GRANT INSERT ON %s.dg_schema_version "
             "TO %s",
             schema_of(url), role, schema_of(url), role);
    ck_assert_int_eq(pgs_exec(pgs_url(), sql), 0);
    char *mine = url_as(url, role);
    ck_assert_int_eq(dg_store_open_readonly(mine, &st, err, sizeof err), OC_ERR_IO);
    ck_assert_msg(strstr(err, "cannot read the PostgreSQL store") &&
                      strstr(err, "permission denied") && !strstr(err, PGS_PASSWORD),
                  "%s", err);
    drop_role(role, schema_of(url));
    free(mine);
    free(url);
}
END_TEST

Suite *make_store_pg_suite(void)
{
    Suite *s = suite_create("store_pg");
    if (pgs_skipped())
        return s;
    TCase *tc = tcase_create("store_pg");
    tcase_set_timeout(tc, 60);
    pgs_on_pg(tc, 1);
    tcase_add_test(tc, new_database_created_then_reopened_at_its_version);
    tcase_add_test(tc, another_applications_database_refused_untouched);
    tcase_add_test(tc, newer_schema_refused);
    tcase_add_test(tc, v10_outbox_migrates_with_its_rows);
    tcase_add_test(tc, v18_rows_are_discords_after_migration);
    tcase_add_test(tc, rows_read_back_their_platform);
    tcase_add_test(tc, bad_platform_refused);
    tcase_add_test(tc, creation_saga_steps);
    tcase_add_test(tc, version_without_its_tables_refused);
    tcase_add_test(tc, password_never_in_a_message);
    tcase_add_test(tc, conflicts_and_returned_ids);
    tcase_add_test(tc, command_hint_claimed_once_per_cooldown);
    tcase_add_test(tc, cost_ledger);
    tcase_add_test(tc, mark_cause_without_its_id_read_whole);
    tcase_add_test(tc, failed_statement_fails_the_commit_not_the_store);
    tcase_add_test(tc, session_ended_by_the_server_reconnects);
    tcase_add_test(tc, probe_sees_the_other_instances_commit_at_once);
    tcase_add_test(tc, migration_refused_by_the_server_is_rolled_back);
    tcase_add_test(tc, reconnect_refused_fails_cleanly_then_recovers);
    tcase_add_test(tc, tables_dropped_behind_the_store_fail_cleanly);
    tcase_add_test(tc, open_out_of_memory);
    tcase_add_test(tc, url_with_credentials_as_parameters);
    tcase_add_test(tc, schema_steps_refused_by_the_server);
    tcase_add_test(tc, statements_out_of_memory);
    tcase_add_test(tc, readonly_open_refusals);
    suite_add_tcase(s, tc);
    return s;
}
