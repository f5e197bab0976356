/*
 * check_store.c -- opening, creating and migrating the SQLite database.
 */
/*
 * Lines of store/store.c no test here can reach (the coverage aim names
 * each; every other line runs in make check):
 *   migrate: user_version above ours after BEGIN IMMEDIATE (the ROLLBACK
 *     and "written by a newer dirigent" there): check_ours refused such a
 *     file a moment before, reading; only another process raising
 *     user_version in between could get here.
 *   migrate: "PRAGMA application_id = ..." failing: it changes page 1 in
 *     the cache of the open transaction; it neither reads nor writes the
 *     file (a storage fault shows at COMMIT, test_open_under_storage_faults)
 *     and its allocations come from the connection's lookaside, which the
 *     allocation sweeps (test_open_tail_out_of_memory) cannot fail.
 *   open_url, dg_store_open: dg_store_make_instance failing ("no random
 *     bytes"): getrandom(8 bytes, 0) blocks until the kernel's pool is
 *     ready and then never fails.
 *   dg_store_stmt: the statement cache full (more than DG_STMT_CACHE
 *     distinct statements): a design bound of the build, far above the
 *     store's statement sites.
 */
#include <check.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_cost_case.h"
#include "store_platform_case.h"
#include "store_saga_case.h"
#include "openclaw/plugin.h"
#include "failalloc.h"
#include "faultvfs.h"
#include "store_int.h"
#include "store_test.h"
#include "store_operator.h"
#include "store_outbox.h"
#include "store_transitions.h"
#include "store_turns.h"
#include "testutil.h"

static char *dir;

static void setup(void)
{
    dir = tu_mkdtemp();
}

static void teardown(void)
{
    tu_rmtree(dir);
    free(dir);
}

/* The integer a pragma reads on the file at path. */
static int int_pragma(const char *path, const char *pragma)
{
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *s;
    ck_assert_int_eq(sqlite3_prepare_v2(db, pragma, -1, &s, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    int v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

static int user_version(const char *path)
{
    return int_pragma(path, "PRAGMA user_version");
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    ck_assert_msg(rc == SQLITE_OK, "fixture SQL failed: %s", msg ? msg : "?");
    sqlite3_close(db);
}

static int file_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

START_TEST(test_fresh_database_is_created_at_current_version)
{
    char *path = tu_path(dir, "fresh.db");
    dg_store *st = NULL;
    char err[256] = "";
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    ck_assert_int_eq(dg_store_opened_version(st), 0);
    dg_store_close(st);
    ck_assert_int_eq(user_version(path), dg_store_schema_version());
    ck_assert_int_ge(dg_store_schema_version(), 2);
    /* Stamped ours at creation. */
    ck_assert_int_ne(int_pragma(path, "PRAGMA application_id"), 0);
    free(path);
}
END_TEST

/* The cost ledger: verdicts only grow, usage adds up, sums, breakdown. */
START_TEST(test_cost_ledger)
{
    char *path = tu_path(dir, "cost.db");
    dg_store *st = NULL;
    char err[256] = "";
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    store_cost_case_run(st);
    dg_store_close(st);
    free(path);
}
END_TEST

START_TEST(test_pragmas_are_set)
{
    char *path = tu_path(dir, "p.db");
    dg_store *st = NULL;
    char err[256];
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    dg_stmt *s = dg_store_stmt(st, "PRAGMA journal_mode");
    ck_assert_int_eq(dg_step(s), DG_ROW);
    ck_assert_str_eq(dg_col_text(s, 0), "wal");
    s = dg_store_stmt(st, "PRAGMA foreign_keys");
    ck_assert_int_eq(dg_step(s), DG_ROW);
    ck_assert_int_eq(dg_col_int(s, 0), 1);
    dg_store_rollback(st);
    dg_store_close(st);
    free(path);
}
END_TEST

/* A step's row and end lie outside the statuses, and a failed step says
 * which status it is: no result of dg_step can pass for the other kind. */
START_TEST(test_step_results_and_statuses_are_disjoint)
{
    ck_assert_int_ne(DG_ROW, DG_DONE);
    for (int v = -1000; v <= 1000; v++)
        if (strcmp(dg_status_name(v), "OC_UNKNOWN") != 0) {
            ck_assert_int_ne(v, DG_ROW);
            ck_assert_int_ne(v, DG_DONE);
        }
    char *path = tu_path(dir, "codes.db");
    dg_store *st = NULL;
    char err[256];
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    dg_stmt *s = dg_store_stmt(st, "SELECT abs(-9223372036854775807 - 1)");
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(dg_step(s), DG_ERR_IO); /* integer overflow: fails when run */
    dg_reset(s);
    dg_store_rollback(st);
    dg_store_close(st);
    free(path);
}
END_TEST

START_TEST(test_reopen_keeps_data_and_version)
{
    char *path = tu_path(dir, "re.db");
    dg_store *st = NULL;
    char err[256];
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    dg_stmt *s = dg_store_stmt(st, "INSERT INTO dg_meta(key, value) VALUES ('k', 'v')");
    ck_assert_int_eq(dg_step(s), DG_DONE);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    dg_store_close(st);

    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    ck_assert_int_eq(dg_store_opened_version(st), dg_store_schema_version());
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    s = dg_store_stmt(st, "SELECT value FROM dg_meta WHERE key = 'k'");
    ck_assert_int_eq(dg_step(s), DG_ROW);
    ck_assert_str_eq(dg_col_text(s, 0), "v");
    dg_store_rollback(st);
    dg_store_close(st);
    free(path);
}
END_TEST

/* A database at path as version `from` of the schema left it (our steps
 * up to it, its user_version, no stamp), opened; the caller closes it. */
static sqlite3 *db_at_version(const char *path, int from)
{
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    for (int v = 0; v < from; v++)
        ck_assert_msg(sqlite3_exec(db, dg_schema_steps[v], NULL, NULL, NULL) == SQLITE_OK,
                      "step %d: %s", v + 1, sqlite3_errmsg(db));
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", from);
    ck_assert_int_eq(sqlite3_exec(db, pragma, NULL, NULL, NULL), SQLITE_OK);
    return db;
}

/* One case per version, _i = 1 .. current: a database exactly as that
 * version left it (an older dirigent's: our tables and user_version, no
 * application_id yet), with a row in it, opens, is migrated forward
 * without losing the row, reaches the current version, gets the stamp,
 * and opens again as ours. Not only N-1: any earlier version. */
START_TEST(test_older_version_opens_at_current)
{
    int from = _i, n = dg_store_schema_version();
    char name[32];
    snprintf(name, sizeof name, "old%d.db", from);
    char *path = tu_path(dir, name);
    sqlite3 *db = db_at_version(path, from);
    ck_assert_int_eq(
        sqlite3_exec(db, "INSERT INTO dg_meta(key, value) VALUES ('old', 'row')", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    ck_assert_int_eq(int_pragma(path, "PRAGMA application_id"), 0);

    dg_store *st = NULL;
    char err[512];
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "v%d: %s", from, err);
    ck_assert_int_eq(dg_store_opened_version(st), from);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    dg_stmt *s = dg_store_stmt(st, "SELECT value FROM dg_meta WHERE key = 'old'");
    ck_assert_int_eq(dg_step(s), DG_ROW);
    ck_assert_str_eq(dg_col_text(s, 0), "row");
    dg_store_rollback(st);
    dg_store_close(st);
    ck_assert_int_ne(int_pragma(path, "PRAGMA application_id"), 0);
    ck_assert_int_eq(user_version(path), n);
    /* And opens again as ours. */
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "v%d: %s", from, err);
    dg_store_close(st);
    free(path);
}
END_TEST

/* A database written by dirigent v18 (schema 18: before rows knew their
 * chat platform), with outbox rows, a discussion and a turn channel, opens
 * (recognised by its tables: no stamp), migrates to the current version,
 * and every old row is Discord's, no outbox row in a thread. */
START_TEST(test_v18_rows_are_discords_after_migration)
{
    char *path = tu_path(dir, "v18.db");
    sqlite3 *db = db_at_version(path, 18);
    char *msg = NULL;
    ck_assert_msg(sqlite3_exec(db, store_platform_v18_rows, NULL, NULL, &msg) == SQLITE_OK, "%s",
                  msg ? msg : "?");
    sqlite3_close(db);
    ck_assert_int_eq(int_pragma(path, "PRAGMA application_id"), 0);
    dg_store *st = NULL;
    char err[512];
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "%s", err);
    ck_assert_int_eq(dg_store_opened_version(st), 18);
    store_platform_case_old_rows(st);
    dg_store_close(st);
    ck_assert_int_eq(user_version(path), dg_store_schema_version());
    ck_assert_int_ge(dg_store_schema_version(), 19);
    free(path);
}
END_TEST

/* Slack and Discord rows read back with their platform (and an outbox
 * row's thread) from every reader, the discover walk included; and again
 * after the store is closed and opened. */
START_TEST(test_rows_read_back_their_platform)
{
    char *path = tu_path(dir, "platform.db");
    dg_store *st = NULL;
    char err[512];
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "%s", err);
    store_platform_case_run(st);
    dg_store_close(st);
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "%s", err);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    dg_outbox_row *rows = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_store_outbox_pending_of(st, "C0WORK0001", 0, 10, &rows, &n), OC_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(rows[0].platform, "slack");
    ck_assert_str_eq(rows[0].thread_id, "1712345678.123456");
    dg_outbox_rows_free(rows, n);
    dg_store_rollback(st);
    dg_store_close(st);
    free(path);
}
END_TEST

/* The steps a discussion's creation notes on its pending tool call. */
START_TEST(test_creation_saga_steps)
{
    char *path = tu_path(dir, "saga.db");
    dg_store *st = NULL;
    char err[512];
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "%s", err);
    store_saga_case_run(st);
    dg_store_close(st);
    free(path);
}
END_TEST

/* A platform other than discord / slack, a thread on a Discord row or an
 * empty one: refused by the API (OC_ERR_INVALID) and by the columns'
 * CHECKs, nothing written. */
START_TEST(test_bad_platform_refused)
{
    char *path = tu_path(dir, "badplatform.db");
    dg_store *st = NULL;
    char err[512];
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "%s", err);
    store_platform_case_refusals(st);
    dg_store_close(st);
    free(path);
}
END_TEST

/* One value of sql on db as text into out ("" for no row or NULL). */
static void sql_text(sqlite3 *db, const char *sql, char *out, size_t len)
{
    sqlite3_stmt *s;
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(db));
    out[0] = '\0';
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
        snprintf(out, len, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
}

/* sql prepared on db behind `how` (EXPLAIN, EXPLAIN QUERY PLAN); the
 * caller finalizes it. */
static sqlite3_stmt *explained(sqlite3 *db, const char *how, const char *sql)
{
    char ex[512];
    snprintf(ex, sizeof ex, "%s %s", how, sql);
    sqlite3_stmt *s;
    ck_assert_msg(sqlite3_prepare_v2(db, ex, -1, &s, NULL) == SQLITE_OK, "%s: %s", ex,
                  sqlite3_errmsg(db));
    return s;
}

/* How many `op` opcodes SQLite's program for sql has on db. */
static int plan_ops(sqlite3 *db, const char *sql, const char *op)
{
    sqlite3_stmt *s = explained(db, "EXPLAIN", sql);
    int n = 0;
    while (sqlite3_step(s) == SQLITE_ROW)
        n += !strcmp((const char *)sqlite3_column_text(s, 1), op);
    sqlite3_finalize(s);
    return n;
}

/* How many OpenEphemeral opcodes SQLite's plan of sql has on db. */
static int ephemeral_ops(sqlite3 *db, const char *sql)
{
    return plan_ops(db, sql, "OpenEphemeral");
}

/* SQLite's query plan of sql on db, its steps joined by ';'. */
static void query_plan(sqlite3 *db, const char *sql, char *out, size_t len)
{
    sqlite3_stmt *s = explained(db, "EXPLAIN QUERY PLAN", sql);
    size_t used = 0;
    out[0] = '\0';
    while (sqlite3_step(s) == SQLITE_ROW && used + 1 < len)
        used += (size_t)snprintf(out + used, len - used, "%s;",
                                 (const char *)sqlite3_column_text(s, 3));
    sqlite3_finalize(s);
}

/* Each open store holds its presence file while open and nothing else:
 * closing it (read-write or the operator's read-only one) closes no
 * descriptor it did not open (a read-only store once closed fd 0). */
START_TEST(test_close_leaves_other_descriptors_alone)
{
    char *path = tu_path(dir, "fds.db");
    if (fcntl(0, F_GETFD) == -1)
        ck_assert_int_eq(open("/dev/null", O_RDONLY), 0);
    dg_store *st = NULL;
    char err[256];
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "%s", err);
    char *presence = NULL;
    ck_assert_int_ge(asprintf(&presence, "%s-presence", path), 0);
    ck_assert_int_eq(access(presence, F_OK), 0);
    dg_store_close(st);
    ck_assert_int_eq(access(presence, F_OK), 0); /* kept: others may hold it */
    ck_assert_int_eq(dg_store_open_readonly(path, &st, err, sizeof err), OC_OK);
    dg_store_close(st);
    ck_assert_int_ne(fcntl(0, F_GETFD), -1);
    free(presence);
    free(path);
}
END_TEST

/* One case per version with the transitions log and before v13, _i = 10 ..
 * 12: its rows (ordered by id then) come through v13 in the same order,
 * below every transition recorded after it, and a mark gets the t_ columns
 * empty. */
START_TEST(test_transitions_survive_migration)
{
    int from = _i;
    char name[32];
    snprintf(name, sizeof name, "tr%d.db", from);
    char *path = tu_path(dir, name);
    sqlite3 *db = db_at_version(path, from);
    ck_assert_int_eq(
        sqlite3_exec(
            db,
            "INSERT INTO turn_transitions(channel_id, scope, at_ms, cause, speaker_before,"
            " speaker_after, state, passed, agent_msgs) VALUES"
            " ('700', 'conversation', 5000, 'older', NULL, 'alpha', 'speaking', '', 0),"
            " ('700', 'conversation', 4000, 'newer, earlier clock', 'alpha', 'beta', 'speaking',"
            "  '', 1);"
            "INSERT INTO turn_ledger(channel_id, k, at_ms) VALUES ('700', '900', 4000)",
            NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    dg_store *st = NULL;
    char err[256];
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "from v%d: %s", from, err);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    dg_transition t = {.at_ms = 3000,
                       .scope = "conversation",
                       .cause = "after the upgrade",
                       .state = "dormant",
                       .passed = ""};
    ck_assert_int_eq(dg_store_transition_add(st, "700", &t), OC_OK);
    dg_transition *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_store_transitions_list(st, "700", NULL, 10, &v, &n), OC_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(v[0].cause, "after the upgrade");
    ck_assert_str_eq(v[1].cause, "newer, earlier clock");
    ck_assert_str_eq(v[2].cause, "older");
    dg_transitions_free(v, n);
    long marks = 0;
    ck_assert_int_eq(dg_store_turns_count(st, "seen", &marks), OC_OK);
    ck_assert_int_eq(marks, 1);
    /* The old mark still answers the dedup check, which since v15 also
     * reads turn_seen: claimed again by a store alone (with its hint read
     * afresh) and as a shared store claims, it is no fresh message. */
    dg_mark_hint hint = {0};
    int fresh = -1;
    ck_assert_int_eq(dg_store_turns_seen_claim_hinted(st, "700", "900", 6000, &hint, &fresh),
                     OC_OK);
    ck_assert_int_eq(fresh, 0);
    ck_assert_int_eq(dg_store_turns_seen_claim(st, "700", "900", 6000, &fresh), OC_OK);
    ck_assert_int_eq(fresh, 0);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    dg_store_close(st);
    free(path);
}
END_TEST

START_TEST(test_outbox_rows_survive_migration)
{
    /* One case per version with the outbox, _i = 3 .. current - 1: holding a pending,
     * a sent and a failed row, and an AUTOINCREMENT high-water mark above
     * its rows (the prune deleted id 7), reaches the current version with
     * every row and column as it was, the mark kept (no id comes back),
     * the index there, the CHECK still refusing a state out of range, and
     * no ephemeral table in the plan of an insert or a mark (v11), the
     * channel index over every row (v12). */
    static const char rows[] =
        "INSERT INTO outbox(id, channel_id, content, mentions, nonce, part, parts, state,"
        " attempts, created_at_ms, done_at_ms, message_id, last_error) VALUES"
        " (4, 'c1', 'pending one', '<@1>', 'n4', 1, 2, 0, 2, 100, NULL, NULL, 'http 503'),"
        " (5, 'c1', 'sent one', '', 'n5', 2, 2, 1, 1, 101, 200, 'm5', NULL),"
        " (6, 'c2', 'failed one', '', 'n6', 1, 1, 2, 9, 102, 300, NULL, 'http 403');"
        "UPDATE sqlite_sequence SET seq = 7 WHERE name = 'outbox';";
    static const char dump[] =
        "SELECT group_concat(id || '|' || channel_id || '|' || content || '|' || mentions ||"
        " '|' || nonce || '|' || part || '|' || parts || '|' || state || '|' || attempts ||"
        " '|' || created_at_ms || '|' || ifnull(done_at_ms, '-') || '|' ||"
        " ifnull(message_id, '-') || '|' || ifnull(last_error, '-'), ';') FROM"
        " (SELECT * FROM outbox ORDER BY id)";
    int from = _i, n = dg_store_schema_version();
    char name[32], before[1024], after[1024], got[64];
    snprintf(name, sizeof name, "ob%d.db", from);
    char *path = tu_path(dir, name);
    sqlite3 *db = db_at_version(path, from);
    ck_assert_int_eq(sqlite3_exec(db, rows, NULL, NULL, NULL), SQLITE_OK);
    sql_text(db, dump, before, sizeof before);
    sqlite3_close(db);

    dg_store *st = NULL;
    char err[256];
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "from v%d: %s", from, err);
    /* The highest pending row: 4 (5 is sent, 6 failed). */
    int64_t max = -1;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_outbox_max_pending_id(st, &max), OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    ck_assert_int_eq(max, 4);
    dg_store_close(st);
    ck_assert_int_eq(user_version(path), n);

    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sql_text(db, dump, after, sizeof after);
    ck_assert_str_eq(after, before);
    sql_text(db, "SELECT seq FROM sqlite_sequence WHERE name = 'outbox'", got, sizeof got);
    ck_assert_str_eq(got, "7");
    sql_text(db,
             "SELECT count(*) FROM sqlite_master WHERE name = 'outbox_channel' AND "
             "sql NOT LIKE '%WHERE%'",
             got, sizeof got);
    ck_assert_str_eq(got, "1");
    sql_text(db, "SELECT count(*) FROM sqlite_master WHERE name = 'outbox_pending'", got,
             sizeof got);
    ck_assert_str_eq(got, "0");
    /* v12: a mark touches no index (a backlog's marks each dirtied another
     * channel's page of the partial one), and a channel's pending rows are
     * read through the channel index. */
    ck_assert_int_eq(plan_ops(db,
                              "UPDATE outbox SET state = 1, message_id = 'm', "
                              "done_at_ms = 1 WHERE id = 4 AND state = 0",
                              "IdxDelete"),
                     0);
    char plan[256];
    query_plan(db,
               "SELECT id FROM outbox WHERE channel_id = 'c1' AND state = 0 AND id > 0 "
               "ORDER BY id LIMIT 64",
               plan, sizeof plan);
    ck_assert_msg(strstr(plan, "USING INDEX outbox_channel") && !strstr(plan, "TEMP B-TREE"),
                  "from v%d: %s", from, plan);
    sql_text(db, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'outbox_v%'", got, sizeof got);
    ck_assert_str_eq(got, "0");
    ck_assert_int_eq(ephemeral_ops(db, "UPDATE outbox SET state = 1, message_id = 'm', "
                                       "done_at_ms = 1 WHERE id = 4 AND state = 0"),
                     0);
    ck_assert_int_eq(ephemeral_ops(db, "INSERT INTO outbox(channel_id, content, nonce, "
                                       "created_at_ms) VALUES ('c', 'x', 'n', 1)"),
                     0);
    ck_assert_int_eq(sqlite3_exec(db, "UPDATE outbox SET state = 3 WHERE id = 6", NULL, NULL, NULL),
                     SQLITE_CONSTRAINT);
    ck_assert_int_eq(sqlite3_exec(db,
                                  "INSERT INTO outbox(channel_id, content, nonce, "
                                  "created_at_ms) VALUES ('c', 'x', 'n8', 1)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_last_insert_rowid(db), 8);
    sqlite3_close(db);
    free(path);
}
END_TEST

/* The whole file, malloc'd (caller frees), and its size and mtime. */
typedef struct snap {
    char *bytes;
    size_t len;
    struct timespec mtime;
} snap;

static snap snap_of(const char *path)
{
    snap sn = {0};
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    sn.len = (size_t)sb.st_size;
    sn.mtime = sb.st_mtim;
    sn.bytes = malloc(sn.len + 1);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(sn.bytes, 1, sn.len, f), sn.len);
    fclose(f);
    return sn;
}

/* The file at path is byte for byte (and by mtime) what sn holds; no WAL
 * was started beside it. Frees sn. */
static void assert_untouched(const char *path, snap sn)
{
    snap now = snap_of(path);
    ck_assert_uint_eq(now.len, sn.len);
    ck_assert_msg(!memcmp(now.bytes, sn.bytes, sn.len), "%s was changed", path);
    ck_assert_int_eq(now.mtime.tv_sec, sn.mtime.tv_sec);
    ck_assert_int_eq(now.mtime.tv_nsec, sn.mtime.tv_nsec);
    char wal[512];
    snprintf(wal, sizeof wal, "%s-wal", path);
    ck_assert_msg(!file_exists(wal), "a WAL was started beside %s", path);
    free(now.bytes);
    free(sn.bytes);
}

/* Open must refuse path with status and a message naming it and word. */
static void refused_untouched(const char *path, int status, const char *word)
{
    snap sn = snap_of(path);
    dg_store *st = NULL;
    char err[512] = "";
    int rc = dg_store_open(path, &st, err, sizeof err);
    ck_assert_msg(rc == status, "%s: expected %s, got %s (%s)", path, oc_status_name(status),
                  oc_status_name(rc), err);
    ck_assert_ptr_null(st);
    ck_assert_msg(strstr(err, path) && strstr(err, word), "'%s' or '%s' not in: %s", path, word,
                  err);
    assert_untouched(path, sn);
}

START_TEST(test_foreign_database_refused_untouched)
{
    /* Another application's database is refused untouched: not switched to
     * WAL, not stamped with our user_version, not given our tables. */
    char *path = tu_path(dir, "other-app.db");
    raw_exec(path, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT);"
                   "INSERT INTO users(name) VALUES ('alice');");
    refused_untouched(path, OC_ERR_INVALID, "another application");
    /* Same with its own application_id. */
    char *stamped = tu_path(dir, "stamped.db");
    raw_exec(stamped, "PRAGMA application_id = 1234; CREATE TABLE t(x);");
    refused_untouched(stamped, OC_ERR_INVALID, "application_id");
    /* Our tables plus one of somebody else's, and no marker. */
    char *mixed = tu_path(dir, "mixed.db");
    sqlite3 *db = db_at_version(mixed, dg_store_schema_version());
    ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE invoices(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    refused_untouched(mixed, OC_ERR_INVALID, "not dirigent's");
    /* Not a database at all. */
    char *text = tu_path(dir, "notes.txt");
    ck_assert_int_eq(tu_write_file(text, "these are my notes, not a database\n"), 0);
    refused_untouched(text, OC_ERR_INVALID, "SQLite database");
    free(text);
    free(mixed);
    free(stamped);
    free(path);
}
END_TEST

START_TEST(test_our_version_without_our_tables_refused)
{
    char *path = tu_path(dir, "claims.db");
    raw_exec(path, "PRAGMA user_version = 3;");
    refused_untouched(path, OC_ERR_INVALID, "lacks its tables");
    /* Stamped ours but the tables are gone. */
    char *stamped = tu_path(dir, "claims2.db");
    raw_exec(stamped, "PRAGMA application_id = 1147761255; PRAGMA user_version = 2;"
                      "CREATE TABLE dg_meta(key TEXT PRIMARY KEY, value TEXT);");
    refused_untouched(stamped, OC_ERR_INVALID, "lacks its tables");
    free(stamped);
    free(path);
}
END_TEST

START_TEST(test_memory_db_path_refused)
{
    static const char *const paths[] = {
        ":memory:", "file::memory:", "file:dg?mode=memory&cache=shared", "FILE:x.db?MODE=MEMORY",
        "file::memory:?cache=shared"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        dg_store *st = NULL;
        char err[512] = "";
        ck_assert_int_eq(dg_store_open(paths[i], &st, err, sizeof err), OC_ERR_INVALID);
        ck_assert_ptr_null(st);
        ck_assert_msg(strstr(err, "dbPath") && strstr(err, "in-memory"), "%s", err);
    }
}
END_TEST

START_TEST(test_newer_schema_is_refused_untouched)
{
    char *path = tu_path(dir, "new.db");
    char sql[128];
    snprintf(sql, sizeof sql,
             "CREATE TABLE future(x); INSERT INTO future VALUES (1); PRAGMA user_version = %d;",
             dg_store_schema_version() + 1);
    raw_exec(path, sql);
    /* Refused before anything is written: journal_mode was switched to WAL
     * first (a header change) against the store's own comment. */
    refused_untouched(path, OC_ERR_UNSUPPORTED, "newer");
    ck_assert_int_eq(user_version(path), dg_store_schema_version() + 1);
    /* A newer dirigent's own stamped file as well. */
    char *stamped = tu_path(dir, "new2.db");
    snprintf(sql, sizeof sql,
             "PRAGMA application_id = 1147761255; CREATE TABLE dg_meta(k);"
             "PRAGMA user_version = %d;",
             dg_store_schema_version() + 1);
    raw_exec(stamped, sql);
    refused_untouched(stamped, OC_ERR_UNSUPPORTED, "newer");
    free(stamped);
    free(path);
}
END_TEST

START_TEST(test_unusable_folder_fails_and_leaves_nothing)
{
    /* Root ignores permission bits, so use folders that cannot hold a file
     * for anyone: a missing folder, and a "folder" that is a regular file. */
    char *missing = tu_path(dir, "no/such/folder/d.db");
    dg_store *st = NULL;
    char err[256] = "";
    ck_assert_int_eq(dg_store_open(missing, &st, err, sizeof err), OC_ERR_IO);
    ck_assert_ptr_null(st);
    ck_assert_ptr_nonnull(strstr(err, missing));
    ck_assert_ptr_nonnull(strstr(err, "writable"));

    char *file = tu_path(dir, "plainfile");
    ck_assert_int_eq(tu_write_file(file, "x"), 0);
    char *under = tu_path(file, "d.db");
    ck_assert_int_eq(dg_store_open(under, &st, err, sizeof err), OC_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err, under));

    if (geteuid() != 0) {
        /* Without root the permission case is testable too. */
        char *ro = tu_path(dir, "ro");
        ck_assert_int_eq(mkdir(ro, 0555), 0);
        char *p = tu_path(ro, "d.db");
        ck_assert_int_eq(dg_store_open(p, &st, err, sizeof err), OC_ERR_IO);
        ck_assert(!file_exists(p));
        free(p);
        free(ro);
    }
    /* Nothing was left in the temp folder but the plain file. */
    char *wal = tu_path(dir, "no");
    ck_assert(!file_exists(wal));
    free(wal);
    free(under);
    free(file);
    free(missing);
}
END_TEST

START_TEST(test_empty_path_refused)
{
    dg_store *st = NULL;
    char err[128] = "";
    ck_assert_int_eq(dg_store_open("", &st, err, sizeof err), OC_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "dbPath"));
}
END_TEST

START_TEST(test_rollback_discards_and_commit_keeps)
{
    char *path = tu_path(dir, "tx.db");
    dg_store *st = NULL;
    char err[256];
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    dg_stmt *s = dg_store_stmt(st, "INSERT INTO dg_meta(key, value) VALUES (?1, 'v')");
    dg_store_bind_text(s, 1, "gone");
    ck_assert_int_eq(dg_step(s), DG_DONE);
    dg_store_rollback(st);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    s = dg_store_stmt(st, "SELECT count(*) FROM dg_meta WHERE key = 'gone'");
    ck_assert_int_eq(dg_step(s), DG_ROW);
    ck_assert_int_eq(dg_col_int(s, 0), 0);
    dg_store_rollback(st);
    dg_store_close(st);
    free(path);
}
END_TEST

/* The WAL's checkpoints run on the store's own thread: once commits pass
 * 1000 pages of WAL, that thread copies them into the database file, with
 * no checkpoint in any commit (the WAL hook replaces SQLite's automatic one,
 * which ran inside the commit that crossed the mark). Without the thread
 * nothing would reach the file before 16000 pages. */
START_TEST(test_checkpoints_run_on_the_store_thread)
{
    char *path = tu_path(dir, "ckpt.db");
    dg_store *st = NULL;
    char err[256];
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    int last = -1;
    ck_assert_int_eq(dg_store_checkpoints(st, &last), 0);
    struct stat before;
    ck_assert_int_eq(stat(path, &before), 0);
    static char big[3000];
    memset(big, 'w', sizeof big - 1);
    for (int t = 0; t < 14; t++) {
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        for (int i = 0; i < 100; i++) {
            char key[32];
            snprintf(key, sizeof key, "ckpt-%d-%d", t, i);
            dg_stmt *s = dg_store_stmt(st, "INSERT INTO dg_meta(key, value) VALUES (?1, ?2)");
            dg_store_bind_text(s, 1, key);
            dg_store_bind_text(s, 2, big);
            ck_assert_int_eq(dg_step(s), DG_DONE);
        }
        ck_assert_int_eq(dg_store_commit(st), OC_OK);
    }
    long runs = 0;
    for (int i = 0; i < 1000 && (runs = dg_store_checkpoints(st, &last)) < 1; i++)
        usleep(10 * 1000);
    ck_assert_int_ge(runs, 1);
    ck_assert_int_eq(last, SQLITE_OK);
    struct stat after;
    ck_assert_int_eq(stat(path, &after), 0);
    /* 1400 rows of 3 KB: the file holds most of them now. */
    ck_assert_int_gt(after.st_size, before.st_size + 900L * 4096);
    dg_store_close(st);
    /* Closed and opened again: everything is there. */
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    dg_stmt *s = dg_store_stmt(st, "SELECT count(*) FROM dg_meta WHERE key LIKE 'ckpt-%'");
    ck_assert_int_eq(dg_step(s), DG_ROW);
    ck_assert_int_eq(dg_col_int(s, 0), 1400);
    dg_store_rollback(st);
    dg_store_close(st);
    free(path);
}
END_TEST

/* A read left on a row past COMMIT (a caller's missing reset; the dedup
 * check of the resolve path had one) keeps its snapshot; after another
 * store commits on the file, BEGIN IMMEDIATE on that snapshot fails at
 * once. The store resets such reads and begins: writes go on. */
START_TEST(test_begin_after_a_read_left_on_a_row)
{
    char *path = tu_path(dir, "stale.db");
    dg_store *st = NULL, *other = NULL;
    char err[256];
    ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "%s", err);
    ck_assert_msg(dg_store_open(path, &other, err, sizeof err) == OC_OK, "%s", err);
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        dg_stmt *s = dg_store_stmt(st, "SELECT key FROM dg_meta");
        ck_assert_int_eq(dg_step(s), DG_ROW); /* and left there */
        ck_assert_int_eq(dg_store_commit(st), OC_OK);
        ck_assert_int_eq(dg_store_begin(other), OC_OK);
        s = dg_store_stmt(other, "INSERT INTO dg_meta(key, value) VALUES (?1, 'v')");
        dg_store_bind_text(s, 1, round ? "other 2" : "other 1");
        ck_assert_int_eq(dg_step(s), DG_DONE);
        ck_assert_int_eq(dg_store_commit(other), OC_OK);
        ck_assert_msg(dg_store_begin(st) == OC_OK, "round %d: %s", round, dg_store_errmsg(st));
        s = dg_store_stmt(st, "SELECT count(*) FROM dg_meta WHERE key LIKE 'other %'");
        ck_assert_int_eq(dg_step(s), DG_ROW);
        ck_assert_int_eq(dg_col_int(s, 0), round + 1); /* the other's row is seen */
        dg_reset(s);
        ck_assert_int_eq(dg_store_commit(st), OC_OK);
    }
    dg_store_close(other);
    dg_store_close(st);
    free(path);
}
END_TEST

/* The operator's read-only open (dirigent-ctl): a path is required, and a
 * file that is not ours, older or newer than this build is refused naming
 * what to do; our own file opens, reads, and is never written. Out of
 * memory at each allocation of the open: a status, nothing leaked. */
START_TEST(test_readonly_open_refuses_what_it_cannot_read)
{
    fa_install(); /* before the first database: SQLite's allocations count too */
    dg_store *st = NULL;
    char err[512] = "";
    ck_assert_int_eq(dg_store_open_readonly("", &st, err, sizeof err), OC_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "--db"));
    ck_assert_int_eq(dg_store_open_readonly(NULL, &st, err, sizeof err), OC_ERR_INVALID);

    char *foreign = tu_path(dir, "foreign.db");
    raw_exec(foreign, "PRAGMA application_id = 7; CREATE TABLE t(x);");
    ck_assert_int_eq(dg_store_open_readonly(foreign, &st, err, sizeof err), OC_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "not a dirigent database"));
    ck_assert_ptr_null(st);

    char *path = tu_path(dir, "ours.db");
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    dg_store_close(st);
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", dg_store_schema_version() - 1);
    raw_exec(path, sql);
    ck_assert_int_eq(dg_store_open_readonly(path, &st, err, sizeof err), OC_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "start the plugin of this version once"));
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", dg_store_schema_version() + 1);
    raw_exec(path, sql);
    ck_assert_int_eq(dg_store_open_readonly(path, &st, err, sizeof err), OC_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "newer"));
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", dg_store_schema_version());
    raw_exec(path, sql);

    long n;
    for (n = 1; n < 1000; n++) {
        fa_arm_own(n);
        int rc = dg_store_open_readonly(path, &st, err, sizeof err);
        int hit = fa_disarm();
        if (rc == OC_OK) {
            ck_assert_int_eq(dg_store_begin_read(st), OC_OK);
            dg_outbox_summary sum;
            ck_assert_int_eq(dg_store_outbox_summary(st, &sum), OC_OK);
            ck_assert_int_eq(sum.pending + sum.sent + sum.failed, 0);
            dg_store_rollback(st);
            dg_store_close(st);
        } else {
            ck_assert_int_eq(rc, OC_ERR_NOMEM);
            ck_assert_ptr_null(st);
        }
        if (!hit)
            break;
    }
    ck_assert_int_gt(n, 1);
    /* BEGIN of the read failing (SQLite out of memory): OC_ERR_IO, the
     * store's lock released (the next begin_read does not hang). */
    ck_assert_int_eq(dg_store_open_readonly(path, &st, err, sizeof err), OC_OK);
    int failed = 0;
    for (n = 1; fa_sqlite_hooked() && n < 1000; n++) {
        fa_arm_sqlite(n);
        int rc = dg_store_begin_read(st);
        int hit = fa_disarm();
        if (rc == OC_OK)
            dg_store_rollback(st);
        else
            failed += rc == OC_ERR_IO;
        if (!hit)
            break;
    }
    ck_assert(!fa_sqlite_hooked() || failed > 0);
    dg_store_close(st);
    free(path);
    free(foreign);
}
END_TEST

/* ---- storage faults (tests/support/faultvfs.h) -----------------------------
 * Each kind of storage call failing at its nth call, n = 1, 2, ... until
 * the operation makes fewer calls: opening a new file, migrating an older
 * one, a write transaction. The answer is OC_OK or OC_ERR_IO with a
 * sentence naming the file; what is on disk afterwards is the state before
 * or after, never between (a new file is gone, an older one opens at its
 * version or at ours, a row is there whole or not at all); the store stays
 * usable; nothing leaks (SANITIZE=1). */
static const int fault_kinds[] = {
    FV_READ,
    FV_WRITE,
    FV_SYNC,
    FV_TRUNCATE,
    FV_LOCK,
    FV_SHMMAP,
    FV_SHMLOCK,
    FV_WRITE | FV_STICKY,
    FV_SYNC | FV_STICKY,
    FV_SHMLOCK | FV_STICKY,
};
#define N_FAULT_KINDS (int)(sizeof fault_kinds / sizeof *fault_kinds)

static void remove_db(const char *path)
{
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        unlink(p);
    }
}

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    ck_assert(in && out);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    ck_assert_int_eq(fclose(out), 0);
}

START_TEST(test_open_under_storage_faults)
{
    ck_assert_int_eq(fv_install(), 0);
    int kind = fault_kinds[_i];
    /* An older file of ours (version current - 1, stamped), to migrate. */
    char *old = tu_path(dir, "old.db"), *path = tu_path(dir, "f.db");
    sqlite3 *db = db_at_version(old, dg_store_schema_version() - 1);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA application_id = %d", DG_APPLICATION_ID);
    ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    long runs = 0, failed = 0;
    for (int older = 0; older < 2; older++) {
        for (long n = 1; n < 10000; n++) {
            remove_db(path);
            if (older)
                copy_file(old, path);
            dg_store *st = NULL;
            char err[512] = "";
            fv_arm(kind, n);
            int rc = dg_store_open(path, &st, err, sizeof err);
            int hit = fv_disarm();
            runs++;
            if (rc == OC_OK) {
                dg_store_close(st);
            } else {
                failed++;
                ck_assert_msg(rc == OC_ERR_IO, "kind 0x%x, call %ld: %d (%s)", kind, n, rc, err);
                ck_assert_msg(strstr(err, path) != NULL, "%s", err);
                ck_assert_ptr_null(st);
                /* A new file leaves nothing behind; an older one is still
                 * there, at its version or migrated whole. */
                ck_assert_int_eq(file_exists(path), older);
            }
            if (file_exists(path)) {
                ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
                int v = dg_store_opened_version(st);
                ck_assert(v == dg_store_schema_version() ||
                          (older && v == dg_store_schema_version() - 1) || (!older && v == 0));
                dg_store_close(st);
                ck_assert_int_eq(user_version(path), dg_store_schema_version());
            }
            if (!hit) {
                ck_assert_int_eq(rc, OC_OK);
                break;
            }
        }
    }
    printf("faults open 0x%x: %ld runs, %ld refused with OC_ERR_IO naming the file, "
           "none half-made\n",
           kind, runs, failed);
    free(old);
    free(path);
}
END_TEST

/* A row with its text read back from a connection of its own: NULL when
 * the nonce has no row. */
static char *row_content(const char *path, const char *nonce)
{
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *s;
    ck_assert_int_eq(
        sqlite3_prepare_v2(db, "SELECT content FROM outbox WHERE nonce = ?1", -1, &s, NULL),
        SQLITE_OK);
    sqlite3_bind_text(s, 1, nonce, -1, SQLITE_STATIC);
    char *out = NULL;
    if (sqlite3_step(s) == SQLITE_ROW)
        out = strdup((const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(db);
    return out;
}

START_TEST(test_write_transaction_under_storage_faults)
{
    ck_assert_int_eq(fv_install(), 0);
    int kind = fault_kinds[_i];
    char *path = tu_path(dir, "w.db");
    dg_store *st = NULL;
    char err[256];
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    long runs = 0, failed = 0;
    for (long n = 1; n < 10000; n++) {
        char nonce[32], content[64];
        snprintf(nonce, sizeof nonce, "n%ld", n);
        snprintf(content, sizeof content, "message %ld of the fault sweep", n);
        dg_outbox_row r = {.channel_id = "100",
                           .content = content,
                           .mentions = "",
                           .nonce = nonce,
                           .part = 1,
                           .parts = 1,
                           .created_at_ms = n};
        dg_store_test_forget(st); /* the pages are read again: reads can fail too */
        fv_arm(kind, n);
        int rc = dg_store_begin(st);
        if (rc == OC_OK) {
            rc = dg_store_outbox_insert(st, &r, NULL);
            rc = dg_store_end(st, rc);
        }
        int hit = fv_disarm();
        runs++;
        ck_assert_msg(rc == OC_OK || rc == OC_ERR_IO, "kind 0x%x, call %ld: %d", kind, n, rc);
        failed += rc != OC_OK;
        /* Whole or not at all; there when the commit said so. A failed
         * sync may still leave the commit on disk: "not known", never
         * half. */
        char *got = row_content(path, nonce);
        if (rc == OC_OK)
            ck_assert_ptr_nonnull(got);
        if (got)
            ck_assert_str_eq(got, content);
        free(got);
        /* The store is usable at once (no lock held, no transaction open). */
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        int64_t pending = -1;
        ck_assert_int_eq(dg_store_outbox_count(st, DG_OUTBOX_PENDING, &pending), OC_OK);
        dg_store_rollback(st);
        if (!hit) {
            ck_assert_int_eq(rc, OC_OK);
            break;
        }
    }
    printf("faults write 0x%x: %ld runs, %ld failed with OC_ERR_IO, rows whole or absent, "
           "store usable after each\n",
           kind, runs, failed);
    dg_store_close(st);
    free(path);
}
END_TEST

/* A new file whose open fails (every write refused: a full disk) and each
 * of our allocations failing in turn, the clean-up's too: OC_ERR_IO or
 * OC_ERR_NOMEM, nothing leaked; the clean-up is best effort, so a file may
 * stay only when its own allocation failed. */
START_TEST(test_failed_open_cleanup_out_of_memory)
{
    ck_assert_int_eq(fv_install(), 0);
    ck_assert(fa_available());
    char *path = tu_path(dir, "c.db");
    long n;
    int left = 0;
    for (n = 1; n < 1000; n++) {
        remove_db(path);
        dg_store *st = NULL;
        char err[512] = "";
        fv_arm(FV_WRITE | FV_STICKY, 1);
        fa_arm_own(n);
        int rc = dg_store_open(path, &st, err, sizeof err);
        int hit = fa_disarm();
        fv_disarm();
        ck_assert_msg(rc == OC_ERR_IO || rc == OC_ERR_NOMEM, "allocation %ld: %d (%s)", n, rc, err);
        left += file_exists(path);
        if (!hit)
            break;
    }
    ck_assert_int_gt(n, 2);
    ck_assert_int_le(left, 1);
    remove_db(path);
    free(path);
}
END_TEST

/* The last steps of opening a new file (the migration's pragmas and
 * COMMIT, the instance id, the probe's connection) with one of SQLite's
 * allocations failing: the open makes thousands, so the sweep takes the
 * last 250 of a fault-free open, from the end back. OC_ERR_IO or
 * OC_ERR_NOMEM with nothing left behind, or OC_OK; nothing leaked. */
START_TEST(test_open_tail_out_of_memory)
{
    fa_install();
    if (!fa_sqlite_hooked()) {
        printf("store: SQLite's allocator not hooked (one process): tail sweep skipped\n");
        return;
    }
    char *path = tu_path(dir, "tail.db");
    dg_store *st = NULL;
    char err[512] = "";
    fa_arm_sqlite(1L << 40);
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    long total = fa_count();
    fa_disarm();
    dg_store_close(st);
    long failed = 0;
    for (long n = total; n > 0 && n > total - 250; n--) {
        remove_db(path);
        st = NULL;
        fa_arm_sqlite(n);
        int rc = dg_store_open(path, &st, err, sizeof err);
        fa_disarm();
        if (rc == OC_OK) {
            dg_store_close(st);
        } else {
            failed++;
            ck_assert_msg(rc == OC_ERR_IO || rc == OC_ERR_NOMEM, "allocation %ld of %ld: %d (%s)",
                          n, total, rc, err);
            ck_assert_ptr_null(st);
            ck_assert(!file_exists(path));
        }
    }
    printf("store: open tail sweep: %ld SQLite allocations in an open, the last 250 failed in "
           "turn, %ld refused cleanly\n",
           total, failed);
    ck_assert_int_gt(failed, 0);
    remove_db(path);
    free(path);
}
END_TEST

Suite *make_store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("store");
    tcase_add_checked_fixture(tc, setup, teardown);
    /* Check's default 4 s: the migration of every version, then one test,
     * ran out of it under SANITIZE=1 with the machine's load at 6 on 2 cores. */
    tcase_set_timeout(tc, 60);
    int n = dg_store_schema_version();
    tcase_add_test(tc, test_fresh_database_is_created_at_current_version);
    tcase_add_test(tc, test_pragmas_are_set);
    tcase_add_test(tc, test_step_results_and_statuses_are_disjoint);
    tcase_add_test(tc, test_cost_ledger);
    tcase_add_test(tc, test_reopen_keeps_data_and_version);
    tcase_add_test(tc, test_close_leaves_other_descriptors_alone);
    tcase_add_test(tc, test_begin_after_a_read_left_on_a_row);
    tcase_add_loop_test(tc, test_older_version_opens_at_current, 1, n + 1);
    tcase_add_loop_test(tc, test_outbox_rows_survive_migration, 3, n);
    tcase_add_loop_test(tc, test_transitions_survive_migration, 10, 13);
    tcase_add_test(tc, test_v18_rows_are_discords_after_migration);
    tcase_add_test(tc, test_rows_read_back_their_platform);
    tcase_add_test(tc, test_bad_platform_refused);
    tcase_add_test(tc, test_creation_saga_steps);
    tcase_add_test(tc, test_newer_schema_is_refused_untouched);
    tcase_add_test(tc, test_foreign_database_refused_untouched);
    tcase_add_test(tc, test_our_version_without_our_tables_refused);
    tcase_add_test(tc, test_memory_db_path_refused);
    tcase_add_test(tc, test_unusable_folder_fails_and_leaves_nothing);
    tcase_add_test(tc, test_empty_path_refused);
    tcase_add_test(tc, test_rollback_discards_and_commit_keeps);
    tcase_add_test(tc, test_checkpoints_run_on_the_store_thread);
    tcase_add_test(tc, test_readonly_open_refuses_what_it_cannot_read);
    suite_add_tcase(s, tc);
    TCase *fc = tcase_create("faults");
    tcase_add_checked_fixture(fc, setup, teardown);
    tcase_set_timeout(fc, 120);
    tcase_add_loop_test(fc, test_open_under_storage_faults, 0, N_FAULT_KINDS);
    tcase_add_loop_test(fc, test_write_transaction_under_storage_faults, 0, N_FAULT_KINDS);
    tcase_add_test(fc, test_failed_open_cleanup_out_of_memory);
    tcase_add_test(fc, test_open_tail_out_of_memory);
    suite_add_tcase(s, fc);
    return s;
}
