/*
 * faultvfs.h -- a SQLite VFS for tests that makes the store's transactions
 * fail on demand, on every thread (the outbox's dispatcher and the engine's
 * sweeper too, which the allocation sweeps cannot reach).
 *
 * fv_install wraps the default VFS ("unix") and becomes the default, so a
 * database opened after it goes through it; a database opened before does
 * not. Call fa_install (failalloc.h) first when both are used: SQLite
 * must not be initialised before it. Everything is passed through, except: while fv_fail_begin(1) is on,
 * taking the WAL write lock fails with SQLITE_IOERR_SHMLOCK (the way a
 * failing disk or a lost lock file reports it), so every BEGIN IMMEDIATE of
 * the store fails at once (no busy wait) and reads in an open transaction
 * still work. The state is process-wide: Check runs each test in its own
 * process (fork mode), so it never leaks into another test.
 */
#ifndef DG_FAULTVFS_H
#define DG_FAULTVFS_H

/* Register the wrapper as the default VFS (idempotent). 0, or -1 when
 * SQLite has no default VFS to wrap. */
int fv_install(void);

/* While on != 0, no write transaction can start (see above). Any thread. */
void fv_fail_begin(int on);

/* For a sweep: the nth write lock asked for from now on (1 = the next,
 * whichever thread asks) is refused, once; 0 disarms. fv_fail_nth_hit: 1
 * when that refusal happened since the last fv_fail_nth. */
void fv_fail_nth(long n);
int fv_fail_nth_hit(void);

/* The same for reads: the nth read of a file (database or WAL, whichever
 * thread) fails with SQLITE_IOERR_READ, once, the way a failing disk
 * reports it. A page SQLite has cached is not read again: a sweep empties
 * the connection's cache first (sqlite3_db_release_memory). */
void fv_fail_read_nth(long n);
int fv_fail_read_nth_hit(void);

/* Write locks refused and reads failed since fv_install. Any thread. */
long fv_refused(void);

#endif
