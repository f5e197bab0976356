/*
 * store_test.h -- the store's test seams: what the Check suites and the
 * fault sweeps use to make the store fail or forget on purpose. No
 * production code includes it.
 */
#ifndef DG_STORE_TEST_H
#define DG_STORE_TEST_H

#include "store.h"

/*
 * Test seam (per store, no process-wide state): while on != 0, every commit
 * of a transaction that changed a row is rolled back and reported as
 * DG_ERR_IO, the way SQLite reports SQLITE_FULL or a read-only file; reads
 * and transactions that changed nothing still work. Any thread.
 * dg_store_test_refused_writes: commits refused so far.
 */
void dg_store_test_fail_writes(dg_store *st, int on);
long dg_store_test_refused_writes(dg_store *st);

/*
 * Test seam for the fault sweeps: finalise every cached statement and give
 * back the connection's unused page cache, so the next call prepares its
 * statements and reads its pages again (and a failure injected there is
 * reached). Either backend (PostgreSQL: the statements are prepared on the
 * server again under new names); outside a transaction or between two
 * statements of one (never while a caller steps a statement). Caller's
 * thread.
 */
void dg_store_test_forget(dg_store *st);

/*
 * Test seams on the plugin's live connection, which has no SQLite mutex
 * (store.c, dg_store_open): each takes the store's lock, so a test thread
 * never touches the connection while an outbox, sweeper or nudge thread is
 * inside a transaction. Any thread; outside the caller's own transaction.
 * dg_store_test_drop_pages: give back the page cache, so the next
 * transaction reads every page again (read-fault sweeps).
 * dg_store_test_commit_hook: sqlite3_commit_hook on the connection (fn is
 * called by the committing thread, inside the store's lock; NULL removes it).
 * SQLite only; no-ops on PostgreSQL.
 */
void dg_store_test_drop_pages(dg_store *st);
void dg_store_test_commit_hook(dg_store *st, int (*fn)(void *), void *arg);

/* How many times dg_store_changes_since read the change log itself (a
 * store alone on its file need not). Caller's thread, outside its
 * transaction. */
long dg_store_test_log_reads(dg_store *st);

#endif
