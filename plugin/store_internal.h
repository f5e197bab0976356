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
#define DG_NOTED_MAX 8    /* channels a transaction remembers having logged */
#define DG_NOTED_LEN 64

struct dg_store {
    sqlite3 *db;
    pthread_mutex_t lock;     /* held for the length of a transaction */
    int opened_version;
    sqlite3_int64 changes_at_begin;  /* sqlite3_total_changes at dg_store_begin */
    atomic_int fail_writes;          /* test seam: commits that wrote refused */
    atomic_long refused_writes;      /* commits refused by the seam so far */
    struct { const char *sql; sqlite3_stmt *stmt; } cache[DG_STMT_CACHE];
    /* Sharing (store_shared.c). instance: "<host>/<pid>/<random hex>" of
     * this open store. */
    char instance[128];
    int64_t txn_seq;                 /* change-log sequence of the open transaction, 0 none */
    char noted[DG_NOTED_MAX][DG_NOTED_LEN]; /* channels logged by it */
    int n_noted;
    /* The probe: a second, read-only connection with its own lock, so the
     * hot path asks "did anything commit?" without the store lock. */
    sqlite3 *probe;
    sqlite3_stmt *probe_dv_stmt, *probe_seq_stmt;
    pthread_mutex_t probe_mu;
    int probe_dv;                    /* PRAGMA data_version at the last probe */
    int64_t probe_seq;               /* the change sequence read then; -1 none */
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
 *   v8 store_shared.c  change log and leases: instances sharing a store (issue 17)
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
extern const char dg_schema_v8_shared[];

/* Open the probe connection of st on path (store_shared.c); OC_OK or
 * OC_ERR_IO with a sentence in err. Init only. */
int dg_store_probe_open(dg_store *st, const char *path, char *err, size_t err_len);

/* A new random instance id into st->instance (store_shared.c). */
int dg_store_make_instance(dg_store *st);

#endif
