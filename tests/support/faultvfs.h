/*
 * faultvfs.h -- a SQLite VFS for tests that makes storage fail on demand: a
 * wrapper around the default (unix) VFS, registered as the new default, so a
 * database opened after fv_install goes through it (one opened before does
 * not). Call fa_install (failalloc.h) first when both are used: SQLite must
 * not be initialised before it. Two ways to arm it:
 *
 * - Per thread, for sweeps (counting and failing on the thread that called
 *   fv_arm, like failalloc.h, so a sweep is repeatable while the plugin's
 *   own threads run). The usual sweep, n = 1, 2, ... until an armed call
 *   made no call fail:
 *       fv_arm(FV_WRITE | FV_SYNC, n); rc = call(); hit = fv_disarm();
 *   With FV_STICKY every call after the nth fails as well, as a full disk
 *   does; otherwise only the nth fails, as a transient error does.
 * - Process-wide, for the threads a test cannot arm (the outbox's dispatcher,
 *   the engine's sweeper): refusing the WAL write lock (fv_fail_begin,
 *   fv_fail_nth), so every BEGIN IMMEDIATE of the store fails at once (no
 *   busy wait) while reads in an open transaction still work, the way a
 *   failing disk or a lost lock file reports it; and the nth read of a file
 *   (fv_fail_read_nth). The state lives in the process: Check runs each test
 *   in its own process (fork mode), so it never leaks into another test.
 */
#ifndef DG_FAULTVFS_H
#define DG_FAULTVFS_H

#define FV_READ 0x01     /* xRead: SQLITE_IOERR_READ */
#define FV_WRITE 0x02    /* xWrite: SQLITE_FULL (a full disk) */
#define FV_SYNC 0x04     /* xSync: SQLITE_IOERR_FSYNC */
#define FV_TRUNCATE 0x08 /* xTruncate: SQLITE_IOERR_TRUNCATE */
#define FV_LOCK 0x10     /* xLock: SQLITE_IOERR_LOCK */
#define FV_SHMMAP 0x20   /* xShmMap: SQLITE_IOERR_SHMMAP */
#define FV_SHMLOCK 0x40  /* xShmLock taking a lock: SQLITE_IOERR_SHMLOCK */
#define FV_ALL 0x7f
#define FV_STICKY 0x100 /* with fv_arm's methods: every call after the nth fails too */

/* Register the wrapper as SQLite's default VFS (idempotent). 0, or -1 when
 * SQLite has no default VFS to wrap or refused the registration. */
int fv_install(void);

/* Per thread: from now on, on the calling thread, the nth call (1 = the next
 * one) of any method in `methods` fails (and, with FV_STICKY, every later
 * one). fv_disarm stops it and returns 1 when the nth call came; fv_count:
 * calls of the armed methods since fv_arm on this thread. */
void fv_arm(int methods, long nth);
int fv_disarm(void);
long fv_count(void);

/* Process-wide, any thread: while on != 0, no write transaction can start. */
void fv_fail_begin(int on);

/* For a sweep: the nth write lock asked for from now on (1 = the next,
 * whichever thread asks) is refused, once; 0 disarms. fv_fail_nth_hit: 1
 * when that refusal happened since the last fv_fail_nth. */
void fv_fail_nth(long n);
int fv_fail_nth_hit(void);

/* The same for reads: the nth read of a file (database or WAL, whichever
 * thread) fails with SQLITE_IOERR_READ, once. A page SQLite has cached is
 * not read again: a sweep empties the connection's cache first
 * (sqlite3_db_release_memory). */
void fv_fail_read_nth(long n);
int fv_fail_read_nth_hit(void);

/* Write locks refused and reads failed by the process-wide faults since
 * fv_install. Any thread. */
long fv_refused(void);

#endif
