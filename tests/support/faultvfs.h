/*
 * faultvfs.h -- a SQLite VFS for tests that makes storage fail: a wrapper
 * around the default (unix) VFS, registered as the new default, whose
 * reads, writes, syncs, truncates, locks and shared-memory calls pass
 * through until armed, then fail at the nth call.
 *
 * Counting and failing are per thread (the thread that called fv_arm), like
 * failalloc.h, so a sweep is repeatable while the plugin's own threads run.
 * The usual sweep, n = 1, 2, ... until an armed call made no call fail:
 *     fv_arm(FV_WRITE | FV_SYNC, n, 0); rc = call(); hit = fv_disarm();
 * A sticky fault (FV_STICKY) keeps failing every later call as well, as a
 * full disk does; otherwise only the nth fails, as a transient error does.
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
#define FV_STICKY 0x100  /* with fv_arm's methods: every call after the nth fails too */

/* Register the wrapper as SQLite's default VFS (idempotent). Databases
 * opened before keep their VFS. Returns 0, or -1 when SQLite refused. */
int fv_install(void);

/* From now on, on the calling thread: the nth call (1 = the next one) of
 * any method in `methods` fails (and, with FV_STICKY, every later one). */
void fv_arm(int methods, long nth);

/* Stop failing on the calling thread; 1 when the nth call came. */
int fv_disarm(void);

/* Calls of the armed methods since fv_arm on this thread. */
long fv_count(void);

#endif
