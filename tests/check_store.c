/*
 * check_store.c -- opening, creating and migrating the SQLite database.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "openclaw/plugin.h"
#include "store_internal.h"
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

static int user_version(const char *path)
{
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *s;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    int v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
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
    sqlite3_stmt *s = dg_store_stmt(st, "PRAGMA journal_mode");
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(s, 0), "wal");
    s = dg_store_stmt(st, "PRAGMA foreign_keys");
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(s, 0), 1);
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
    sqlite3_stmt *s = dg_store_stmt(st, "INSERT INTO dg_meta(key, value) VALUES ('k', 'v')");
    ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    dg_store_close(st);

    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    ck_assert_int_eq(dg_store_opened_version(st), dg_store_schema_version());
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    s = dg_store_stmt(st, "SELECT value FROM dg_meta WHERE key = 'k'");
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(s, 0), "v");
    dg_store_rollback(st);
    dg_store_close(st);
    free(path);
}
END_TEST

START_TEST(test_migration_from_previous_version)
{
    /* Fixture: a database exactly as the previous schema version left it,
     * with a row in it, must be migrated forward without losing the row. */
    char *path = tu_path(dir, "old.db");
    int n = dg_store_schema_version();
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    for (int v = 0; v < n - 1; v++) {
        char *msg = NULL;
        ck_assert_msg(sqlite3_exec(db, dg_schema_steps[v], NULL, NULL, &msg) == SQLITE_OK,
                      "step %d: %s", v + 1, msg ? msg : "?");
    }
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", n - 1);
    ck_assert_int_eq(sqlite3_exec(db, pragma, NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "INSERT INTO dg_meta(key, value) VALUES ('old', 'row')",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    dg_store *st = NULL;
    char err[256];
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_OK);
    ck_assert_int_eq(dg_store_opened_version(st), n - 1);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    sqlite3_stmt *s = dg_store_stmt(st, "SELECT value FROM dg_meta WHERE key = 'old'");
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(s, 0), "row");
    dg_store_rollback(st);
    dg_store_close(st);
    ck_assert_int_eq(user_version(path), n);
    free(path);
}
END_TEST

START_TEST(test_every_version_migrates_to_current)
{
    /* Not only N-1: a database at any earlier version reaches the current one. */
    int n = dg_store_schema_version();
    for (int from = 1; from < n; from++) {
        char name[32];
        snprintf(name, sizeof name, "v%d.db", from);
        char *path = tu_path(dir, name);
        sqlite3 *db;
        ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
        for (int v = 0; v < from; v++)
            ck_assert_int_eq(sqlite3_exec(db, dg_schema_steps[v], NULL, NULL, NULL), SQLITE_OK);
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", from);
        ck_assert_int_eq(sqlite3_exec(db, pragma, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        dg_store *st = NULL;
        char err[256];
        ck_assert_msg(dg_store_open(path, &st, err, sizeof err) == OC_OK, "from v%d: %s", from, err);
        dg_store_close(st);
        ck_assert_int_eq(user_version(path), n);
        free(path);
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
    struct stat before;
    ck_assert_int_eq(stat(path, &before), 0);

    dg_store *st = NULL;
    char err[256] = "";
    ck_assert_int_eq(dg_store_open(path, &st, err, sizeof err), OC_ERR_UNSUPPORTED);
    ck_assert_ptr_null(st);
    ck_assert_ptr_nonnull(strstr(err, "newer"));
    ck_assert_ptr_nonnull(strstr(err, path));
    /* Still there, same version, same content. */
    ck_assert_int_eq(user_version(path), dg_store_schema_version() + 1);
    struct stat after;
    ck_assert_int_eq(stat(path, &after), 0);
    ck_assert_int_eq(before.st_size, after.st_size);
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
    sqlite3_stmt *s = dg_store_stmt(st, "INSERT INTO dg_meta(key, value) VALUES (?1, 'v')");
    dg_store_bind_text(s, 1, "gone");
    ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
    dg_store_rollback(st);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    s = dg_store_stmt(st, "SELECT count(*) FROM dg_meta WHERE key = 'gone'");
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(s, 0), 0);
    dg_store_rollback(st);
    dg_store_close(st);
    free(path);
}
END_TEST

Suite *make_store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("store");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_fresh_database_is_created_at_current_version);
    tcase_add_test(tc, test_pragmas_are_set);
    tcase_add_test(tc, test_reopen_keeps_data_and_version);
    tcase_add_test(tc, test_migration_from_previous_version);
    tcase_add_test(tc, test_every_version_migrates_to_current);
    tcase_add_test(tc, test_newer_schema_is_refused_untouched);
    tcase_add_test(tc, test_unusable_folder_fails_and_leaves_nothing);
    tcase_add_test(tc, test_empty_path_refused);
    tcase_add_test(tc, test_rollback_discards_and_commit_keeps);
    suite_add_tcase(s, tc);
    return s;
}
