/*
 * check_store_turns.c -- store/store_turns.c on its own: the argument
 * refusals, every function against a database whose turn tables are gone
 * (a damaged or hand-edited file: each answers OC_ERR_IO and leaves its
 * output empty, never a half-filled row), and the awake-scope scan
 * skipping rows it cannot read. The turn suites cover the normal paths.
 *
 * Then the marks that carry a scope's state (schema v14): one row per
 * speaker's message, and the state reaches its row before it could be lost.
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
#include "store_int.h"
#include "store_transitions.h"
#include "store_turns.h"
#include "turns.h" /* dg_turn_state_same */
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
    ck_assert_int_eq(dg_store_turns_member_add(st, CH, -1, "alpha", DG_MEMBER_RAN), OC_ERR_INVALID);
    ck_assert_int_eq(dg_store_turns_member_add(st, CH, DG_TURN_MAX_MEMBERS, "alpha", DG_MEMBER_RAN),
                     OC_ERR_INVALID);
    ck_assert_int_eq(dg_store_turns_member_add(st, CH, 0, NULL, DG_MEMBER_RAN), OC_ERR_INVALID);
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
    ck_assert_int_eq(sqlite3_exec(st->db,
                                  "DROP TABLE turn_channels; DROP TABLE turn_members; "
                                  "DROP TABLE turn_ledger; DROP TABLE turn_runs;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
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
    ck_assert_int_eq(dg_store_turns_member_add(st, CH, 0, "alpha", DG_MEMBER_RAN), OC_ERR_IO);
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
                                  NULL, NULL, NULL),
                     SQLITE_OK);
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

/*
 * Marks that carry a scope's state (schema v14). The message of the agent
 * holding the turn writes one row, its mark, which then holds the new
 * state; readers take the newer of the row and the marks' states, and the
 * state reaches its row before it could be lost.
 */
static dg_scope conv;
static dg_mark_hint hint;

static void snap_setup(void)
{
    setup();
    memset(&hint, 0, sizeof hint);
    ck_assert_int_eq(dg_scope_conversation(CH, &conv), OC_OK);
    dg_turn_state s;
    dg_turn_state_init(&s);
    s.active = 1;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_scope_save(st, &conv, NULL, &s, 0, 1000), OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
}

/* Ingest message id in one transaction as the engine does: its claim, and
 * when agent_msgs >= 0 the change it causes (the scope stays awake unless
 * asleep). Returns the rows the transaction wrote. */
static long ingest(const char *id, int64_t now, int64_t agent_msgs, int asleep)
{
    int fresh = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    sqlite3_int64 before = sqlite3_total_changes64(st->db);
    ck_assert_int_eq(dg_store_turns_seen_claim_hinted(st, CH, id, now, &hint, &fresh), OC_OK);
    ck_assert_int_eq(fresh, 1);
    if (agent_msgs >= 0) {
        dg_turn_state s;
        dg_turn_state_init(&s);
        s.active = !asleep;
        s.agent_msgs = agent_msgs;
        dg_transition tr = {.at_ms = now,
                            .scope = "conversation",
                            .cause = "a test message",
                            .state = asleep ? "dormant" : "speaking",
                            .passed = "",
                            .agent_msgs = agent_msgs,
                            .message_id = id};
        ck_assert_int_eq(dg_store_transition_add(st, CH, &tr), OC_OK);
        ck_assert_int_eq(dg_store_turns_scope_save_for(st, &conv, NULL, &s, 1, 1, id, now), OC_OK);
    }
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    return (long)(sqlite3_total_changes64(st->db) - before);
}

/* agent_msgs as a reader loads it. */
static int64_t loaded(void)
{
    dg_turn_state s;
    char *post = NULL;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_scope_load(st, &conv, &s, &post), OC_OK);
    dg_store_rollback(st);
    free(post);
    return s.agent_msgs;
}

/* An integer the SQL reads off the file itself. */
static int64_t raw(const char *sql)
{
    sqlite3_stmt *q = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(st->db, sql, -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

#define ROW_MSGS "SELECT agent_msgs FROM turn_ledger WHERE channel_id = '" CH "' AND k = '~conv'"
#define CARRIED "SELECT count(*) FROM turn_ledger WHERE k < '~' AND t_snap IS NOT NULL"

static void reopen(void)
{
    dg_store_close(st);
    char *db = tu_path(dir, "dirigent.db");
    char err[256];
    ck_assert_msg(dg_store_open(db, &st, err, sizeof err) == OC_OK, "%s", err);
    free(db);
    memset(&hint, 0, sizeof hint);
}

START_TEST(speaker_message_writes_one_row_and_survives_a_restart)
{
    ck_assert_int_eq(ingest("1001", 2000, 1, 0), 1);
    ck_assert_int_eq(raw(ROW_MSGS), 0); /* the state is in the mark */
    ck_assert_int_eq(loaded(), 1);
    ck_assert_int_eq(ingest("1002", 3000, 2, 0), 1);
    ck_assert_int_eq(loaded(), 2);
    reopen(); /* a store opening folds what marks carry into the rows */
    ck_assert_int_eq(raw(ROW_MSGS), 2);
    ck_assert_int_eq(raw(CARRIED), 0);
    ck_assert_int_eq(loaded(), 2);
}
END_TEST

/* Message id of a transaction that records a transition but leaves the
 * state as it was: a mark of turn_ledger that carries no state. */
static void ingest_noted(const char *id, int64_t now)
{
    int fresh = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_seen_claim_hinted(st, CH, id, now, &hint, &fresh), OC_OK);
    ck_assert_int_eq(fresh, 1);
    dg_transition tr = {.at_ms = now,
                        .scope = "conversation",
                        .cause = "a test note",
                        .state = "speaking",
                        .passed = "",
                        .message_id = id};
    ck_assert_int_eq(dg_store_transition_add(st, CH, &tr), OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
}

START_TEST(state_folded_before_it_leaves_the_window)
{
    ck_assert_int_eq(ingest("2000", 2000, 5, 0), 1);
    char id[32];
    /* Messages that change nothing: their marks go to turn_seen (schema
     * v15), one row each, and never push the state out of the window. */
    for (int i = 1; i <= 3 * DG_SNAP_WINDOW; i++) {
        snprintf(id, sizeof id, "%d", 2000 + i);
        ck_assert_int_eq(ingest(id, 2000 + i, -1, 0), 1);
        ck_assert_msg(loaded() == 5, "state lost after %d newer marks", i);
    }
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_seen"), 3 * DG_SNAP_WINDOW);
    /* Marks with a transition stay in turn_ledger and would. */
    for (int i = 1; i <= 3 * DG_SNAP_WINDOW; i++) {
        snprintf(id, sizeof id, "%d", 3000 + i);
        ingest_noted(id, 3000 + i);
        ck_assert_msg(loaded() == 5, "state lost after %d newer noted marks", i);
    }
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_seen"), 3 * DG_SNAP_WINDOW);
    ck_assert_int_eq(raw(ROW_MSGS), 5);
    ck_assert_int_eq(raw(CARRIED), 0);
}
END_TEST

START_TEST(newer_row_wins_over_an_older_mark)
{
    ck_assert_int_eq(ingest("3001", 2000, 3, 0), 1);
    dg_turn_state s;
    dg_turn_state_init(&s);
    s.active = 1;
    s.agent_msgs = 4; /* a run's end, say: no message, the row itself */
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_scope_save(st, &conv, NULL, &s, 1, 2500), OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    ck_assert_int_eq(loaded(), 4);
    reopen();
    ck_assert_int_eq(loaded(), 4);
    ck_assert_int_eq(raw(ROW_MSGS), 4);
}
END_TEST

START_TEST(prune_keeps_the_state_its_marks_carried)
{
    ck_assert_int_eq(ingest("4001", 2000, 7, 0), 1);
    long removed = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_seen_prune(st, 5000, &removed), OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    ck_assert_int_eq(removed, 1);
    ck_assert_int_eq(loaded(), 7);
    ck_assert_int_eq(raw(ROW_MSGS), 7);
}
END_TEST

START_TEST(falling_asleep_writes_the_row)
{
    ck_assert_int_eq(ingest("5001", 2000, 2, 1), 2); /* the mark and the row */
    ck_assert_int_eq(raw(ROW_MSGS), 2);
    dg_scope *v = NULL;
    size_t n = 9;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_active_scopes(st, &v, &n), OC_OK);
    dg_store_rollback(st);
    free(v);
    ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(a_newcomer_folds_and_then_every_change_writes_rows)
{
    ck_assert_int_eq(ingest("6001", 2000, 8, 0), 1);
    char *db = tu_path(dir, "dirigent.db");
    char err[256];
    dg_store *other = NULL;
    ck_assert_msg(dg_store_open(db, &other, err, sizeof err) == OC_OK, "%s", err);
    free(db);
    ck_assert_int_eq(raw(ROW_MSGS), 8);
    ck_assert_int_eq(raw(CARRIED), 0);
    /* Not alone: the claim is written at once, the state to its row (and
     * the change to the log the other store reads). */
    ck_assert_int_ge(ingest("6002", 3000, 9, 0), 3);
    ck_assert_int_eq(raw(ROW_MSGS), 9);
    dg_store_close(other);
}
END_TEST

/* A state whose kept fields differ from a fresh one's and from each other
 * (flags too: the store keeps whatever int it is given), so a field read
 * from another one's column shows. */
static dg_turn_state every_field(void)
{
    return (dg_turn_state){.active = 1,
                           .speaker = 3,
                           .anchor = 2,
                           .silent = 0x5,
                           .mention = 0x18,
                           .mention_done = 0x8,
                           .consumed = (uint64_t)1 << 63, /* a 64-member mask's top bit */
                           .owed = 0x40,
                           .agent_msgs = 11,
                           .rested = 6,
                           .idle_reminded = 7,
                           .handoff = 4,
                           .permit = 9,
                           .permit_ms = 1764740000123,
                           .last_change_ms = 1764740000456};
}

/* The state a mark carries is the whole state: each field read back from
 * the mark, then from the row it is folded into, and the mark left without
 * one. */
START_TEST(carried_state_keeps_every_field)
{
    dg_turn_state want = every_field(), got;
    int fresh = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_seen_claim_hinted(st, CH, "7001", 2000, &hint, &fresh), OC_OK);
    dg_transition tr = {.at_ms = 2000,
                        .scope = "conversation",
                        .cause = "a test message",
                        .state = "speaking",
                        .passed = "",
                        .message_id = "7001"};
    ck_assert_int_eq(dg_store_transition_add(st, CH, &tr), OC_OK);
    ck_assert_int_eq(dg_store_turns_scope_save_for(st, &conv, "8001", &want, 1, 1, "7001", 2000),
                     OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    ck_assert_int_eq(raw(CARRIED), 1);
    for (int pass = 0; pass < 2; pass++) {
        char *post = NULL;
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        ck_assert_int_eq(dg_store_turns_scope_load(st, &conv, &got, &post), OC_OK);
        dg_store_rollback(st);
        ck_assert_msg(dg_turn_state_same(&got, &want), "pass %d: a field was lost", pass);
        ck_assert_int_eq(got.permit_ms, want.permit_ms);
        ck_assert_int_eq(got.last_change_ms, want.last_change_ms);
        ck_assert_str_eq(post, "8001");
        free(post);
        if (pass == 0)
            reopen(); /* folds it into the row */
    }
    ck_assert_int_eq(raw(CARRIED), 0);
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_ledger WHERE k < '~' AND (speaker IS NOT"
                         " NULL OR permit_ms IS NOT NULL OR last_change_ms IS NOT NULL)"),
                     0);
    ck_assert_int_eq(raw("SELECT consumed FROM turn_ledger WHERE k = '~conv'"),
                     (int64_t)want.consumed);
}
END_TEST

/* Text of a column the SQL reads off the file, malloc'd. */
static char *raw_text(const char *sql)
{
    sqlite3_stmt *q = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(st->db, sql, -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    char *v = strdup((const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return v;
}

/* A mark keeps its message's cause without the message's own id, written
 * at once (not alone, no hint) or with the pending mark; readers and the
 * log the marks move to at pruning see the whole cause. A cause naming
 * another message is kept whole. */
START_TEST(mark_keeps_its_cause_without_its_own_id)
{
    static const char *const ids[] = {"7101", "7102", "7103"};
    static const char *const causes[] = {"message 7101 from human 456",
                                         "message 7102 from agent 789 (alpha)",
                                         "message 7100 from human 456"};
    static const char *const kept[] = {"~human 456", "~agent 789 (alpha)",
                                       "message 7100 from human 456"};
    for (int i = 0; i < 3; i++) {
        int fresh = 0;
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        if (i == 1)
            ck_assert_int_eq(
                dg_store_turns_seen_claim_hinted(st, CH, ids[i], 2000 + i, &hint, &fresh), OC_OK);
        else
            ck_assert_int_eq(dg_store_turns_seen_claim(st, CH, ids[i], 2000 + i, &fresh), OC_OK);
        ck_assert_int_eq(fresh, 1);
        dg_transition tr = {.at_ms = 2000 + i,
                            .scope = "conversation",
                            .cause = (char *)causes[i],
                            .state = "speaking",
                            .passed = "",
                            .message_id = ids[i]};
        ck_assert_int_eq(dg_store_transition_add(st, CH, &tr), OC_OK);
        ck_assert_int_eq(dg_store_commit(st), OC_OK);
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT t_cause FROM turn_ledger WHERE k = '%s'", ids[i]);
        char *v = raw_text(sql);
        ck_assert_str_eq(v, kept[i]);
        free(v);
    }
    for (int pass = 0; pass < 2; pass++) {
        dg_transition *v = NULL;
        size_t n = 0;
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        ck_assert_int_eq(dg_store_transitions_list(st, CH, NULL, 10, &v, &n), OC_OK);
        ck_assert_uint_eq(n, 3);
        for (size_t i = 0; i < n; i++) /* newest first */
            ck_assert_str_eq(v[i].cause, causes[2 - i]);
        dg_transitions_free(v, n);
        long removed = 0;
        if (pass == 0)
            ck_assert_int_eq(dg_store_turns_seen_prune(st, 5000, &removed), OC_OK);
        ck_assert_int_eq(dg_store_commit(st), OC_OK);
        ck_assert_int_eq(removed, pass == 0 ? 3 : 0); /* then from the log */
    }
}
END_TEST

/* Statements of the store's connection left on a row: each keeps its read
 * transaction after COMMIT. */
static int reads_on_a_row(void)
{
    int n = 0;
    for (sqlite3_stmt *q = sqlite3_next_stmt(st->db, NULL); q; q = sqlite3_next_stmt(st->db, q))
        n += sqlite3_stmt_busy(q) && sqlite3_stmt_readonly(q);
    return n;
}

/*
 * A mark leaves out the scope "conversation" and the state "speaking" (the
 * engine's most frequent), and keeps any other as given; the list, its
 * scope filter and the log the transitions move to at pruning give each
 * whole, through the pending mark and the mark written at once alike. A
 * transition without scope, cause or state is refused, nothing written.
 */
START_TEST(mark_leaves_out_the_usual_scope_and_state)
{
    static const struct {
        const char *id, *scope, *state;
        int hinted;
    } tr[] = {{"8101", "conversation", "speaking", 1},
              {"8102", "thread:8100", "dormant", 1},
              {"8103", "conversation", "resting", 0},
              {"8104", "thread:8100", "speaking", 0}};
    for (int i = 0; i < 4; i++) {
        int fresh = 0;
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        if (tr[i].hinted)
            ck_assert_int_eq(
                dg_store_turns_seen_claim_hinted(st, CH, tr[i].id, 2000 + i, &hint, &fresh), OC_OK);
        else
            ck_assert_int_eq(dg_store_turns_seen_claim(st, CH, tr[i].id, 2000 + i, &fresh), OC_OK);
        dg_transition t = {.at_ms = 2000 + i,
                           .scope = (char *)tr[i].scope,
                           .cause = "a test",
                           .state = (char *)tr[i].state,
                           .passed = "",
                           .message_id = tr[i].id};
        ck_assert_int_eq(dg_store_transition_add(st, CH, &t), OC_OK);
        ck_assert_int_eq(dg_store_commit(st), OC_OK);
    }
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_ledger WHERE k > '8100' AND k < '8200' AND"
                         " t_scope IS NULL"),
                     2);
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_ledger WHERE k > '8100' AND k < '8200' AND"
                         " t_state IS NULL"),
                     2);
    for (int pass = 0; pass < 2; pass++) {
        ck_assert_int_eq(dg_store_begin(st), OC_OK);
        for (int f = 0; f < 2; f++) {
            const char *only = f ? "thread:8100" : NULL;
            dg_transition *v = NULL;
            size_t n = 0;
            ck_assert_int_eq(dg_store_transitions_list(st, CH, only, 10, &v, &n), OC_OK);
            ck_assert_uint_eq(n, f ? 2 : 4);
            for (size_t j = 0; j < n; j++) { /* newest first */
                int i = f ? (j ? 1 : 3) : 3 - (int)j;
                ck_assert_str_eq(v[j].scope, tr[i].scope);
                ck_assert_str_eq(v[j].state, tr[i].state);
            }
            dg_transitions_free(v, n);
        }
        long removed = 0;
        if (pass == 0) /* the marks go; their transitions move to the log */
            ck_assert_int_eq(dg_store_turns_seen_prune(st, 5000, &removed), OC_OK);
        ck_assert_int_eq(dg_store_commit(st), OC_OK);
        ck_assert_int_eq(removed, pass == 0 ? 4 : 0);
    }
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    dg_transition no_state = {.at_ms = 3000, .scope = "conversation", .cause = "a test"};
    ck_assert_int_eq(dg_store_transition_add(st, CH, &no_state), OC_ERR_INVALID);
    dg_transition no_scope = {.at_ms = 3000, .cause = "a test", .state = "speaking"};
    ck_assert_int_eq(dg_store_transition_add(st, CH, &no_scope), OC_ERR_INVALID);
    dg_transition *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_store_transitions_list(st, CH, NULL, 10, &v, &n), OC_OK);
    ck_assert_uint_eq(n, 4);
    dg_transitions_free(v, n);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
}
END_TEST

/* The virtual-machine steps every statement of the store's connection has
 * run (SQLite counts them per statement): what a transaction read. */
static long vm_steps(void)
{
    long n = 0;
    for (sqlite3_stmt *q = sqlite3_next_stmt(st->db, NULL); q; q = sqlite3_next_stmt(st->db, q))
        n += sqlite3_stmt_status(q, SQLITE_STMTSTATUS_VM_STEP, 0);
    return n;
}

/*
 * A change that only read and was rolled back (a sweep, a decision, an
 * outbox pass: the engine's finish_read) leaves the store alone on its
 * file: the next message above the channel's newest mark is claimed
 * without a read, as it is after a commit. A rolled-back claim moved its
 * hint ahead of the file: its id is new again, and the hint is read afresh.
 */
START_TEST(rollback_that_only_read_keeps_the_hints)
{
    ck_assert_int_eq(ingest("6000", 6000, -1, 0), 1);
    ck_assert_int_eq(ingest("6001", 6001, -1, 0), 1);
    long b = vm_steps();
    ck_assert_int_eq(ingest("6002", 6002, -1, 0), 1);
    long after_commit = vm_steps() - b;
    dg_turn_state ts;
    char *post = NULL;
    ck_assert_int_eq(dg_store_begin(st), OC_OK); /* a change that only read */
    int loaded_rc = dg_store_turns_scope_load(st, &conv, &ts, &post);
    ck_assert(loaded_rc == OC_OK || loaded_rc == OC_ERR_NOT_FOUND);
    free(post);
    dg_store_rollback(st);
    b = vm_steps();
    ck_assert_int_eq(ingest("6003", 6003, -1, 0), 1);
    long after_rollback = vm_steps() - b;
    ck_assert_msg(after_rollback == after_commit,
                  "steps to claim a new id: %ld after a commit, "
                  "%ld after a read-only rollback",
                  after_commit, after_rollback);
    uint64_t epoch = hint.epoch;
    int fresh = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_seen_claim_hinted(st, CH, "6004", 6004, &hint, &fresh), OC_OK);
    ck_assert_int_eq(fresh, 1);
    dg_store_rollback(st);
    ck_assert_int_eq(ingest("6004", 6004, -1, 0), 1); /* counted once: it was never written */
    ck_assert_uint_gt(hint.epoch, epoch);
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_seen WHERE k >= '6000'"), 5);
}
END_TEST

/* The fold a speaker's message triggers (every DG_SNAP_WINDOW - 1 of them)
 * reads the window's marks, not the channel's history: with 5,000 older
 * marks in the channel its messages cost as many steps as with none. */
START_TEST(fold_reads_the_window_not_the_history)
{
    long per_msg[2];
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            sqlite3_exec(st->db,
                         "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n"
                         " WHERE i < 5000) INSERT INTO turn_ledger (channel_id, k, at_ms)"
                         " SELECT '" CH "', printf('1%05d', i), 1500 FROM n",
                         NULL, NULL, NULL);
            ck_assert_int_eq(raw("SELECT count(*) FROM turn_ledger WHERE k < '2'"), 5000);
        }
        char id[32];
        long before = vm_steps();
        for (int i = 1; i <= 4 * DG_SNAP_WINDOW; i++) {
            snprintf(id, sizeof id, "%d%04d", 3 + round, i);
            ingest(id, 2000 + i, i, 0);
        }
        per_msg[round] = (vm_steps() - before) / (4 * DG_SNAP_WINDOW);
        ck_assert_int_eq(loaded(), 4 * DG_SNAP_WINDOW);
        ck_assert_int_le(raw(CARRIED), DG_SNAP_WINDOW); /* all in the window */
    }
    /* A scan of the history would add 5,000 rows per fold, 300 per message. */
    ck_assert_msg(per_msg[1] < per_msg[0] + 100,
                  "steps per message: %ld without history, "
                  "%ld with 5,000 older marks",
                  per_msg[0], per_msg[1]);
}
END_TEST

/* One claim of id in its own transaction: the hinted (alone) path with h,
 * or the shared stores' claim when h is NULL. Returns fresh. */
static int claim(const char *id, int64_t now, dg_mark_hint *h)
{
    int fresh = -1;
    ck_assert_msg(dg_store_begin(st) == OC_OK, "%s", dg_store_errmsg(st));
    if (h)
        ck_assert_int_eq(dg_store_turns_seen_claim_hinted(st, CH, id, now, h, &fresh), OC_OK);
    else
        ck_assert_int_eq(dg_store_turns_seen_claim(st, CH, id, now, &fresh), OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    return fresh;
}

/*
 * Schema v15: the mark of a message that changed nothing is a row of
 * turn_seen, and every way a mark is asked after finds it there: the
 * claim again (with the hint kept, with a hint read afresh, as a shared
 * store claims), the hint's newest id, when it was seen and whether a
 * newer one was, the count, and pruning, which takes it with the marks of
 * turn_ledger.
 */
START_TEST(plain_mark_in_its_own_table_dedups_every_way)
{
    ck_assert_int_eq(ingest("5000", 5000, -1, 0), 1);
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_seen WHERE k = '5000' AND at_ms = 5000"), 1);
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_ledger WHERE k < '~'"), 0);
    ck_assert_int_eq(claim("5000", 5100, &hint), 0);
    dg_mark_hint afresh = {0};
    ck_assert_int_eq(claim("5000", 5100, &afresh), 0);
    ck_assert_int_eq(claim("5000", 5100, NULL), 0);
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_ledger WHERE k < '~'"), 0);
    /* An older id with a transition: a mark of turn_ledger. */
    ingest_noted("4000", 5200);
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_ledger WHERE k = '4000'"), 1);
    ck_assert_int_eq(claim("4000", 5300, NULL), 0);
    ck_assert_int_eq(claim("4000", 5300, &afresh), 0);
    /* A shared store's claim of a new id: turn_ledger, as before v15. */
    ck_assert_int_eq(claim("4500", 5400, NULL), 1);
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_ledger WHERE k = '4500'"), 1);

    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    dg_mark_hint h = {0};
    dg_store_turns_hint_load(st, CH, &h);
    ck_assert_str_eq(h.newest, "5000"); /* the greatest of both tables */
    ck_assert_uint_ne(h.epoch, 0);
    int64_t at = 0;
    int newer = 0;
    ck_assert_int_eq(dg_store_turns_seen_since(st, CH, "5000", &at, &newer), OC_OK);
    ck_assert_int_eq(at, 5000);
    ck_assert_int_eq(newer, 0);
    ck_assert_int_eq(dg_store_turns_seen_since(st, CH, "4999", &at, &newer), OC_OK);
    ck_assert_int_eq(at, 0);
    ck_assert_int_eq(newer, 1);
    ck_assert_int_eq(dg_store_turns_seen_since(st, CH, "4000", &at, &newer), OC_OK);
    ck_assert_int_eq(at, 5200);
    ck_assert_int_eq(reads_on_a_row(), 0); /* it reset what it read */
    long n = 0;
    ck_assert_int_eq(dg_store_turns_count(st, "seen", &n), OC_OK);
    ck_assert_int_eq(n, 3);
    long removed = 0;
    ck_assert_int_eq(dg_store_turns_seen_prune(st, 5300, &removed), OC_OK);
    ck_assert_int_eq(removed, 2); /* 5000 (turn_seen) and 4000 (turn_ledger) */
    ck_assert_int_eq(dg_store_turns_count(st, "seen", &n), OC_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_seen"), 0);

    /* A store that joins the file: its claims find the marks the store
     * alone put in turn_seen, and both stores' claims of the same id in
     * turn_ledger (the store alone no longer is). */
    ck_assert_int_eq(ingest("7000", 7000, -1, 0), 1);
    char *db = tu_path(dir, "dirigent.db");
    char err[256];
    dg_store *other = NULL;
    ck_assert_msg(dg_store_open(db, &other, err, sizeof err) == OC_OK, "%s", err);
    free(db);
    int fresh = -1;
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(dg_store_begin(other), OC_OK);
        ck_assert_int_eq(dg_store_turns_seen_claim(other, CH, i ? "7001" : "7000", 7100, &fresh),
                         OC_OK);
        ck_assert_int_eq(dg_store_commit(other), OC_OK);
        ck_assert_int_eq(fresh, i);
    }
    ck_assert_int_eq(claim("7001", 7200, &hint), 0);
    ck_assert_int_eq(claim("7002", 7200, &hint), 1);
    ck_assert_int_eq(raw("SELECT count(*) FROM turn_ledger WHERE k = '7002'"), 1);
    dg_store_close(other);
}
END_TEST

/* The command hint's cooldown: claimed once per channel in cooldown_ms,
 * per channel, kept across a reopen (the restart of a gateway). */
START_TEST(command_hint_claimed_once_per_cooldown)
{
    int got = -1;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_hint_claim(st, CH, 1000, 3600, &got), OC_OK);
    ck_assert_int_eq(got, 1);
    ck_assert_int_eq(dg_store_turns_hint_claim(st, CH, 4599, 3600, &got), OC_OK);
    ck_assert_int_eq(got, 0);
    ck_assert_int_eq(dg_store_turns_hint_claim(st, "350000000000000002", 4599, 3600, &got), OC_OK);
    ck_assert_int_eq(got, 1);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    reopen();
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_hint_claim(st, CH, 4599, 3600, &got), OC_OK);
    ck_assert_int_eq(got, 0);
    ck_assert_int_eq(dg_store_turns_hint_claim(st, CH, 4600, 3600, &got), OC_OK);
    ck_assert_int_eq(got, 1);
    ck_assert_int_eq(dg_store_turns_hint_claim(st, CH, 8199, 3600, &got), OC_OK);
    ck_assert_int_eq(got, 0); /* counted from the last hint */
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
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
    tcase_add_test(tc, command_hint_claimed_once_per_cooldown);
    suite_add_tcase(s, tc);
    TCase *snaps = tcase_create("marks carrying states");
    tcase_add_checked_fixture(snaps, snap_setup, teardown);
    tcase_add_test(snaps, speaker_message_writes_one_row_and_survives_a_restart);
    tcase_add_test(snaps, state_folded_before_it_leaves_the_window);
    tcase_add_test(snaps, newer_row_wins_over_an_older_mark);
    tcase_add_test(snaps, prune_keeps_the_state_its_marks_carried);
    tcase_add_test(snaps, falling_asleep_writes_the_row);
    tcase_add_test(snaps, a_newcomer_folds_and_then_every_change_writes_rows);
    tcase_add_test(snaps, carried_state_keeps_every_field);
    tcase_add_test(snaps, mark_keeps_its_cause_without_its_own_id);
    tcase_add_test(snaps, plain_mark_in_its_own_table_dedups_every_way);
    tcase_add_test(snaps, fold_reads_the_window_not_the_history);
    tcase_add_test(snaps, rollback_that_only_read_keeps_the_hints);
    tcase_add_test(snaps, mark_leaves_out_the_usual_scope_and_state);
    suite_add_tcase(s, snaps);
    return s;
}
