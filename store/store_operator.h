/*
 * store_operator.h -- the operator's read-only access to a store
 * (dirigent-ctl): opening a database without writing to it, read
 * transactions that never take the write lock (safe beside a running
 * plugin: SQLite's WAL lets readers and the writer go on together), and
 * the few queries only the operator needs. Every other read goes through
 * the ordinary store functions on the store this opens.
 */
#ifndef DG_STORE_OPERATOR_H
#define DG_STORE_OPERATOR_H

#include <stddef.h>
#include <stdint.h>
#include "store_records.h"
#include "store.h"
#include "must_check.h"

/*
 * Open path read-only (a SQLite file, or a postgresql:// url: then the
 * session itself refuses writes and err never holds the password): it
 * must be dirigent's database at exactly this
 * build's schema version (an older one: "start the plugin once to migrate";
 * a newer one: "use the dirigent-ctl of that version"). Nothing is written,
 * not even the journal mode. On DG_OK *out is closed with dg_store_close.
 * Otherwise a negative dg_status and a sentence in err. Any thread.
 */
int dg_store_open_readonly(const char *path, dg_store **out, char *err,
                           size_t err_len) DG_MUST_CHECK;

/* A read transaction (SQLite BEGIN DEFERRED, PostgreSQL REPEATABLE READ
 * READ ONLY; end it with dg_store_commit or dg_store_rollback): a
 * snapshot of the database, no write lock. */
int dg_store_begin_read(dg_store *st) DG_MUST_CHECK;

/* The outbox in numbers: rows pending / sent / failed, and the creation
 * time of the oldest pending row (0: none). In a transaction. */
typedef struct dg_outbox_summary {
    long pending, sent, failed;
    int64_t oldest_pending_ms;
} dg_outbox_summary;

int dg_store_outbox_summary(dg_store *st, dg_outbox_summary *out) DG_MUST_CHECK;

/* Rows in state (0 pending, 2 failed), oldest first, at most max:
 * ids, channels, platforms, threads (NULL none), attempts, created times
 * and last errors (NULL none) as dg_outbox_row (store_outbox.h; *rows is
 * the caller's: free with dg_outbox_rows_free). */
struct dg_outbox_row;
int dg_store_outbox_rows_in(dg_store *st, int state, size_t max, struct dg_outbox_row **rows,
                            size_t *n) DG_MUST_CHECK;

#endif
