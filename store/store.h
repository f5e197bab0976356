/*
 * store.h -- the plugin's durable state in one database: a SQLite file, or
 * a PostgreSQL database several gateways share (store_pg.c, behind the
 * statement seam of store_db.h).
 *
 * The store is the single owner of every piece of state (turn state,
 * discussions, session overrides, the moderator outbox, message dedup).
 * All SQL of the project lives in store/store*.c; other modules call the
 * typed functions declared in store_<area>.h and never see SQL.
 *
 * Concurrency: one connection for every transaction, guarded by one mutex.
 * Hooks run on many host threads and the outbox dispatcher on its own; a
 * write transaction holds the mutex from dg_store_begin() to
 * dg_store_commit()/dg_store_rollback(), so decisions that read-modify-write
 * a scope are serialised. Across processes sharing the file, BEGIN
 * IMMEDIATE (SQLite's write lock) serialises them the same way (PostgreSQL:
 * a row lock each transaction takes first). Beside it, on SQLite, a
 * read-only connection answers the hot path's "did another instance
 * commit?" (store_instances.h) and the checkpoint thread has one of its own
 * (store_checkpoint.c); neither runs a transaction for the callers.
 * The test seams are in store_test.h.
 */
#ifndef DG_STORE_H
#define DG_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "must_check.h"

typedef struct dg_store dg_store;

/* Schema version this build writes; older databases are migrated forward. */
int dg_store_schema_version(void);

/*
 * Open or create the database at path: WAL, busy timeout, foreign keys on;
 * schema created or migrated inside one transaction and versioned with
 * PRAGMA user_version, stamped PRAGMA application_id 0x44697267 ("Dirg").
 * Before anything is written the file must be recognised as ours (see
 * store.c: the stamp, or an older dirigent's exact table set and version,
 * or an empty file); another application's database, one that claims our
 * version without our tables, a newer schema and an in-memory path are
 * refused with the file left byte for byte as it was.
 * A file that did not exist before and could not be set up is removed again.
 * A path starting with postgresql:// or postgres:// opens a PostgreSQL
 * database instead (store_pg.c: same schema and version checks, a
 * dg_schema_version table in place of the PRAGMAs); its password never
 * reaches err.
 * On failure returns a negative dg_status and a sentence in err.
 * *out is owned by the caller: dg_store_close(). Thread: init only.
 */
int dg_store_open(const char *path, dg_store **out, char *err, size_t err_len) DG_MUST_CHECK;

/* DG_OK when path (dbPath as given, before it is made absolute) can be
 * the SQLite file; DG_ERR_INVALID with a sentence in err when it is empty
 * or names an in-memory database (":memory:", "file::memory:",
 * "mode=memory"), which would lose every turn, discussion and owed message
 * at a restart. Config validation and dg_store_open both ask. Any thread. */
int dg_store_db_path_check(const char *path, char *err, size_t err_len);

/* 1 when path names a PostgreSQL database (postgresql:// or postgres://),
 * the test dg_store_open makes (dirigent-ctl sorts --store-url with it). */
int dg_store_is_url(const char *path);

/* What the store is, for messages: the file's path, or "PostgreSQL
 * user@host:port/dbname" (never the password). Borrowed, valid while st is
 * open. Any thread. */
const char *dg_store_where(const dg_store *st);

/* Close and free; finalises cached statements. NULL is fine. */
void dg_store_close(dg_store *st);

/*
 * Transactions. dg_store_begin() takes the store mutex and starts
 * BEGIN IMMEDIATE; commit or rollback ends it and releases the mutex.
 * Every store_<area> function documents whether it must run inside one.
 * Returns DG_OK or DG_ERR_IO (the reason is logged by the caller via
 * dg_store_errmsg()). Any thread.
 */
int dg_store_begin(dg_store *st) DG_MUST_CHECK;

/* 1 when the calling thread holds st's lock: it is inside a transaction
 * (dg_store_begin or dg_store_begin_read to its commit or rollback); for
 * the asserts of functions whose header says "inside a transaction". Only
 * the holder writes its own id, so the answer is exact for the caller
 * without further synchronisation. Any thread. */
int dg_store_held(const dg_store *st);
int dg_store_commit(dg_store *st);
void dg_store_rollback(dg_store *st);

/* End the transaction begun by dg_store_begin with the outcome of its
 * work: commit when rc is DG_OK, else roll back. Returns the commit's
 * status, or rc after a rollback. The thread that began it. */
int dg_store_end(dg_store *st, int rc);

/* Last error text of this connection (SQLite's, or libpq's without the
 * password); valid until the next call on
 * it, only meaningful while the caller holds the transaction. */
const char *dg_store_errmsg(dg_store *st);

/*
 * WAL checkpoints run by the store's own thread since it opened (SQLite: the
 * committing threads never checkpoint, store_checkpoint.c), and SQLite's
 * result code of the last one in *last_rc (SQLITE_OK, or e.g. SQLITE_FULL:
 * the WAL then keeps its frames, which are safe, and it is tried again).
 * -1 on PostgreSQL. Any thread.
 */
long dg_store_checkpoints(const dg_store *st, int *last_rc);

/* Schema version found in the file when it was opened (0 for a new file). */
int dg_store_opened_version(const dg_store *st);

#endif
