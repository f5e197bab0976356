/*
 * store_internal.h -- shared by the plugin/store*.c files only.
 */
#ifndef DG_STORE_INTERNAL_H
#define DG_STORE_INTERNAL_H

#include <sqlite3.h>
#include <pthread.h>
#include <stdatomic.h>
#include "store.h"

#define DG_STMT_CACHE 256 /* power of two; distinct SQL statement sites */

struct dg_store {
    sqlite3 *db;
    pthread_mutex_t lock;     /* held for the length of a transaction */
    int opened_version;
    sqlite3_int64 changes_at_begin;  /* sqlite3_total_changes at dg_store_begin */
    atomic_int fail_writes;          /* test seam: commits that wrote refused */
    atomic_long refused_writes;      /* commits refused by the seam so far */
    struct { const char *sql; sqlite3_stmt *stmt; } cache[DG_STMT_CACHE];
};

/*
 * Prepared statement for `sql`, cached by the pointer identity of sql (pass
 * a string literal or a static const array). Reset and bindings cleared on
 * return. Borrowed: never finalise it. NULL on prepare error (or a full
 * cache, which means DG_STMT_CACHE must grow). Caller holds
 * the store lock (inside a transaction).
 */
sqlite3_stmt *dg_store_stmt(dg_store *st, const char *sql);

/* Bind a C string, NULL as SQL NULL. Returns the sqlite3 rc. */
int dg_store_bind_text(sqlite3_stmt *s, int idx, const char *text);

/* Copy a text column (NULL stays NULL); caller frees. */
char *dg_store_col_dup(sqlite3_stmt *s, int col);

/*
 * Migrations: dg_schema_steps[v-1] takes a database from version v-1 to v.
 * Each area owns its step (its SQL text lives in its own store_<area>.c):
 *   v1 store.c         base (meta)
 *   v2 store_turns.c   scopes, members, seen messages, session overrides
 *   v3 store_outbox.c  moderator outbox
 *   v4 store_discuss.c discussions, closed notices
 *   v5 store_tool_calls.c  tool results by ctx.toolCallId (idempotent tools)
 *   v6 store_turns.c   agent_end runs already handled (dedup by runId)
 *   v7 store_discuss.c discussion timers and end status (issue 16)
 * Append new steps only; never edit a released one.
 */
extern const char *const dg_schema_steps[];
extern const int dg_schema_nsteps;

extern const char dg_schema_v2_turns[];
extern const char dg_schema_v3_outbox[];
extern const char dg_schema_v4_discuss[];
extern const char dg_schema_v5_tool_calls[];
extern const char dg_schema_v6_turn_runs[];
extern const char dg_schema_v7_discuss_timers[];

#endif
