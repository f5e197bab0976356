/*
 * check_store_turns.c -- plugin/store_turns.c on its own: the argument
 * refusals, every function against a database whose turn tables are gone
 * (a damaged or hand-edited file: each answers OC_ERR_IO and leaves its
 * output empty, never a half-filled row), and the awake-scope scan
 * skipping rows it cannot read. The turn suites cover the normal paths.
 *
 * Not reached here, and why: the out-of-memory branches (no allocation
 * failure is injected) and a step failing after a successful prepare on
 * an intact table (a disk error in the middle of a statement).
 */
#include <check.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "openclaw/plugin.h"
#include "scope.h"
#include "store.h"
#include "store_internal.h"
#include "store_turns.h"
#include "testutil.h"

#define CH "350000000000000001"

static char *dir;
static dg_store *st;

static void setup(void)
{
    dir = tu_mkdtemp();
    char *db = tu_path(dir, "dirigent.db");
    char err[256];
    ck_assert_msg(dg_store_open(db, &st, err, sizeof err) == OC_OK, "%s", err);
    free(db);
}

static void teardown(void)
{
    dg_store_close(st);
    tu_rmtree(dir);
    free(dir);
}

START_TEST(arguments_refused)
{
    int fresh = 1;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_member_add(st, CH, -1, "alpha"), OC_ERR_INVALID);
    ck_assert_int_eq(dg_store_turns_member_add(st, CH, DG_TURN_MAX_MEMBERS, "alpha"),
                     OC_ERR_INVALID);
    ck_assert_int_eq(dg_store_turns_member_add(st, CH, 0, NULL), OC_ERR_INVALID);
    ck_assert_int_eq(dg_store_turns_seen_claim(st, CH, "~conv", 1, &fresh), OC_ERR_INVALID);
    ck_assert_int_eq(fresh, 0);
    ck_assert_int_eq(dg_store_turns_seen_claim(st, CH, "", 1, &fresh), OC_ERR_INVALID);
    ck_assert_int_eq(dg_store_turns_run_claim(st, "", "r", 1, &fresh), OC_ERR_INVALID);
    ck_assert_int_eq(dg_store_turns_run_claim(st, "k", NULL, 1, &fresh), OC_ERR_INVALID);
    long n = 0;
    ck_assert_int_eq(dg_store_turns_count(st, "no such thing", &n), OC_ERR_INVALID);
    dg_store_rollback(st);
    dg_turn_channel_row_clear(NULL);
}
END_TEST

START_TEST(tables_gone_every_call_fails)
{
    ck_assert_int_eq(sqlite3_exec(st->db, "DROP TABLE turn_channels; DROP TABLE turn_members; "
                                  "DROP TABLE turn_ledger; DROP TABLE turn_runs;",
                                  NULL, NULL, NULL), SQLITE_OK);
    dg_scope sc;
    ck_assert_int_eq(dg_scope_conversation(CH, &sc), OC_OK);
    dg_turn_state s;
    memset(&s, 0, sizeof s);
    dg_turn_channel_row row;
    char *post = NULL;
    int fresh = 0;
    long n = 0;
    dg_scope *v = NULL;
    size_t nv = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_channel_load(st, CH, &row), OC_ERR_IO);
    ck_assert_ptr_null(row.members);
    ck_assert_int_eq(dg_store_turns_channel_save(st, CH, DG_MODE_NORMAL, NULL, NULL, 0, 1),
                     OC_ERR_IO);
    ck_assert_int_eq(dg_store_turns_member_add(st, CH, 0, "alpha"), OC_ERR_IO);
    ck_assert_int_eq(dg_store_turns_members_clear(st, CH), OC_ERR_IO);
    ck_assert_int_eq(dg_store_turns_scope_load(st, &sc, &s, &post), OC_ERR_IO);
    ck_assert_ptr_null(post);
    ck_assert_int_eq(dg_store_turns_scope_save(st, &sc, NULL, &s, 0, 1), OC_ERR_IO);
    ck_assert_int_eq(dg_store_turns_scope_save(st, &sc, NULL, &s, 1, 1), OC_ERR_IO);
    ck_assert_int_eq(dg_store_turns_scopes_clear(st, CH), OC_ERR_IO);
    ck_assert_int_eq(dg_store_turns_seen_claim(st, CH, "1", 1, &fresh), OC_ERR_IO);
    ck_assert_int_eq(dg_store_turns_seen_prune(st, 1, &n), OC_ERR_IO);
    ck_assert_int_eq(dg_store_turns_states_prune(st, 1, &n), OC_ERR_IO);
    ck_assert_int_eq(dg_store_turns_run_claim(st, "k", "r", 1, &fresh), OC_ERR_IO);
    ck_assert_int_eq(dg_store_turns_runs_prune(st, 1, NULL), OC_ERR_IO);
    ck_assert_int_eq(dg_store_turns_active_scopes(st, &v, &nv), OC_ERR_IO);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(dg_store_turns_count(st, "seen", &n), OC_ERR_IO);
    ck_assert_int_eq(dg_store_turns_count(st, "scopes", &n), OC_ERR_IO);
    dg_store_rollback(st);
}
END_TEST

START_TEST(awake_scan_skips_unreadable_rows)
{
    ck_assert_int_eq(sqlite3_exec(st->db,
                                  "INSERT INTO turn_ledger (channel_id, k, at_ms, active) VALUES "
                                  "('" CH "', '~conv', 1, 1), ('" CH "', '~bogus', 1, 1), "
                                  "('" CH "', '~thread:', 1, 1), ('" CH "', '~thread:abc', 1, 1)",
                                  NULL, NULL, NULL), SQLITE_OK);
    dg_scope *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_active_scopes(st, &v, &n), OC_OK);
    dg_store_rollback(st);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(v[0].kind + v[1].kind, DG_SCOPE_CONVERSATION + DG_SCOPE_THREAD);
    free(v);
}
END_TEST

Suite *make_store_turns_suite(void)
{
    Suite *s = suite_create("store_turns");
    TCase *tc = tcase_create("store_turns");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, arguments_refused);
    tcase_add_test(tc, tables_gone_every_call_fails);
    tcase_add_test(tc, awake_scan_skips_unreadable_rows);
    suite_add_tcase(s, tc);
    return s;
}
