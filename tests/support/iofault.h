/*
 * iofault.h -- a SQLite VFS for tests that makes storage fail: a wrapper
 * around the default (unix) VFS, registered as the new default, whose
 * reads, writes, syncs, truncates, locks and shared-memory calls pass
 * through until armed, then fail at the nth call.
 *
 * Counting and failing are per thread (the thread that called iof_arm), like
 * failalloc.h, so a sweep is repeatable while the plugin's own threads run.
 * The usual sweep, n = 1, 2, ... until an armed call made no call fail:
 *     iof_arm(IOF_WRITE | IOF_SYNC, n, 0); rc = call(); hit = iof_disarm();
 * A sticky fault (IOF_STICKY) keeps failing every later call as well, as a
 * full disk does; otherwise only the nth fails, as a transient error does.
 */
#ifndef DG_IOFAULT_H
#define DG_IOFAULT_H

#define IOF_READ 0x01     /* xRead: SQLITE_IOERR_READ */
#define IOF_WRITE 0x02    /* xWrite: SQLITE_FULL (a full disk) */
#define IOF_SYNC 0x04     /* xSync: SQLITE_IOERR_FSYNC */
#define IOF_TRUNCATE 0x08 /* xTruncate: SQLITE_IOERR_TRUNCATE */
#define IOF_LOCK 0x10     /* xLock: SQLITE_IOERR_LOCK */
#define IOF_SHMMAP 0x20   /* xShmMap: SQLITE_IOERR_SHMMAP */
#define IOF_SHMLOCK 0x40  /* xShmLock taking a lock: SQLITE_IOERR_SHMLOCK */
#define IOF_ALL 0x7f
#define IOF_STICKY 0x100  /* with iof_arm's methods: every call after the nth fails too */

/* Register the wrapper as SQLite's default VFS (idempotent). Databases
 * opened before keep their VFS. Returns 0, or -1 when SQLite refused. */
int iof_install(void);

/* From now on, on the calling thread: the nth call (1 = the next one) of
 * any method in `methods` fails (and, with IOF_STICKY, every later one). */
void iof_arm(int methods, long nth);

/* Stop failing on the calling thread; 1 when the nth call came. */
int iof_disarm(void);

/* Calls of the armed methods since iof_arm on this thread. */
long iof_count(void);

#endif
