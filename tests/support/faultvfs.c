/*
 * faultvfs.c -- see faultvfs.h. Every file method forwards to the file of
 * the wrapped VFS, which lives right after ours in the same allocation
 * (szOsFile covers both); the VFS methods forward to the wrapped VFS.
 */
#include "faultvfs.h"

#include <sqlite3.h>
#include <stdatomic.h>
#include <string.h>

typedef struct fv_file {
    sqlite3_file base;
    sqlite3_file *real; /* the wrapped VFS's file, right after this struct */
} fv_file;

static sqlite3_vfs *orig;
static sqlite3_vfs fv_vfs;
static sqlite3_io_methods fv_io;

/* Per thread (fv_arm). */
static _Thread_local int armed, sticky, hit;
static _Thread_local long count, nth;

/* Process-wide (fv_fail_*). */
static atomic_int begin_refused;
static atomic_long refused;
static atomic_long lock_nth; /* >0: write locks to go until the one refused */
static atomic_int lock_nth_hit;
static atomic_long read_nth; /* >0: reads to go until the one that fails */
static atomic_int read_nth_hit;

/* 1 when the process-wide countdown n reaches this call (once). */
static int countdown(atomic_long *n, atomic_int *was)
{
    if (atomic_load(n) > 0 && atomic_fetch_sub(n, 1) == 1) {
        atomic_store(was, 1);
        atomic_fetch_add(&refused, 1);
        return 1;
    }
    return 0;
}

/* 1 when this call of method m must fail. */
static int fault(int m)
{
    if (!(armed & m))
        return 0;
    if (hit)
        return sticky;
    if (++count == nth) {
        hit = 1;
        return 1;
    }
    return 0;
}

#define REAL(f) (((fv_file *)(f))->real)
#define RM(f) (REAL(f)->pMethods)

static int fv_close(sqlite3_file *f)
{
    return RM(f)->xClose(REAL(f));
}

static int fv_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
    return countdown(&read_nth, &read_nth_hit) || fault(FV_READ)
               ? SQLITE_IOERR_READ
               : RM(f)->xRead(REAL(f), buf, amt, off);
}

static int fv_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
    return fault(FV_WRITE) ? SQLITE_FULL : RM(f)->xWrite(REAL(f), buf, amt, off);
}

static int fv_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return fault(FV_TRUNCATE) ? SQLITE_IOERR_TRUNCATE : RM(f)->xTruncate(REAL(f), size);
}

static int fv_sync(sqlite3_file *f, int flags)
{
    return fault(FV_SYNC) ? SQLITE_IOERR_FSYNC : RM(f)->xSync(REAL(f), flags);
}

static int fv_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return RM(f)->xFileSize(REAL(f), size);
}

static int fv_lock(sqlite3_file *f, int level)
{
    return fault(FV_LOCK) ? SQLITE_IOERR_LOCK : RM(f)->xLock(REAL(f), level);
}

static int fv_unlock(sqlite3_file *f, int level)
{
    return RM(f)->xUnlock(REAL(f), level);
}

static int fv_check_reserved(sqlite3_file *f, int *out)
{
    return RM(f)->xCheckReservedLock(REAL(f), out);
}

static int fv_file_control(sqlite3_file *f, int op, void *arg)
{
    return RM(f)->xFileControl(REAL(f), op, arg);
}

static int fv_sector_size(sqlite3_file *f)
{
    return RM(f)->xSectorSize(REAL(f));
}

static int fv_device_characteristics(sqlite3_file *f)
{
    return RM(f)->xDeviceCharacteristics(REAL(f));
}

static int fv_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **out)
{
    return fault(FV_SHMMAP) ? SQLITE_IOERR_SHMMAP
                            : RM(f)->xShmMap(REAL(f), region, size, extend, out);
}

/* Only taking a lock fails: a failed unlock would leave the lock held, so
 * every later call waited out the busy timeout (no real file system fails
 * an unlock of its shared memory). */
static int fv_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    /* Offset 0 is WAL_WRITE_LOCK (SQLite's WAL format, documented in
     * wal.c): refusing it fails BEGIN IMMEDIATE and nothing else. */
    if (offset == 0 && n == 1 && flags == (SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE)) {
        if (atomic_load(&begin_refused)) {
            atomic_fetch_add(&refused, 1);
            return SQLITE_IOERR_SHMLOCK;
        }
        if (countdown(&lock_nth, &lock_nth_hit))
            return SQLITE_IOERR_SHMLOCK;
    }
    return (flags & SQLITE_SHM_LOCK) && fault(FV_SHMLOCK)
               ? SQLITE_IOERR_SHMLOCK
               : RM(f)->xShmLock(REAL(f), offset, n, flags);
}

static void fv_shm_barrier(sqlite3_file *f)
{
    RM(f)->xShmBarrier(REAL(f));
}

static int fv_shm_unmap(sqlite3_file *f, int del)
{
    return RM(f)->xShmUnmap(REAL(f), del);
}

static int fv_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **pp)
{
    return RM(f)->xFetch(REAL(f), off, amt, pp);
}

static int fv_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    return RM(f)->xUnfetch(REAL(f), off, p);
}

static int fv_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
    (void)vfs;
    fv_file *p = (fv_file *)f;
    p->real = (sqlite3_file *)(p + 1);
    int rc = orig->xOpen(orig, name, p->real, flags, out);
    /* SQLite closes a file whose pMethods is set, even after a failed open. */
    p->base.pMethods = p->real->pMethods ? &fv_io : NULL;
    return rc;
}

static int fv_delete(sqlite3_vfs *v, const char *name, int sync_dir)
{
    (void)v;
    return orig->xDelete(orig, name, sync_dir);
}

static int fv_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
    (void)v;
    return orig->xAccess(orig, name, flags, out);
}

static int fv_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out)
{
    (void)v;
    return orig->xFullPathname(orig, name, n, out);
}

static void *fv_dl_open(sqlite3_vfs *v, const char *name)
{
    (void)v;
    return orig->xDlOpen(orig, name);
}

static void fv_dl_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    orig->xDlError(orig, n, out);
}

static void (*fv_dl_sym(sqlite3_vfs *v, void *h, const char *sym))(void)
{
    (void)v;
    return orig->xDlSym(orig, h, sym);
}

static void fv_dl_close(sqlite3_vfs *v, void *h)
{
    (void)v;
    orig->xDlClose(orig, h);
}

static int fv_randomness(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return orig->xRandomness(orig, n, out);
}

static int fv_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    return orig->xSleep(orig, us);
}

static int fv_current_time(sqlite3_vfs *v, double *out)
{
    (void)v;
    return orig->xCurrentTime(orig, out);
}

static int fv_last_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return orig->xGetLastError(orig, n, out);
}

static int fv_current_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
    (void)v;
    return orig->xCurrentTimeInt64(orig, out);
}

int fv_install(void)
{
    if (orig)
        return 0;
    sqlite3_initialize();
    sqlite3_vfs *o = sqlite3_vfs_find(NULL);
    if (!o || o->iVersion < 2)
        return -1;
    fv_io = (sqlite3_io_methods){
        .iVersion = 3,
        .xClose = fv_close,
        .xRead = fv_read,
        .xWrite = fv_write,
        .xTruncate = fv_truncate,
        .xSync = fv_sync,
        .xFileSize = fv_file_size,
        .xLock = fv_lock,
        .xUnlock = fv_unlock,
        .xCheckReservedLock = fv_check_reserved,
        .xFileControl = fv_file_control,
        .xSectorSize = fv_sector_size,
        .xDeviceCharacteristics = fv_device_characteristics,
        .xShmMap = fv_shm_map,
        .xShmLock = fv_shm_lock,
        .xShmBarrier = fv_shm_barrier,
        .xShmUnmap = fv_shm_unmap,
        .xFetch = fv_fetch,
        .xUnfetch = fv_unfetch,
    };
    fv_vfs = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = (int)sizeof(fv_file) + o->szOsFile,
        .mxPathname = o->mxPathname,
        .zName = "dg-faultvfs",
        .xOpen = fv_open,
        .xDelete = fv_delete,
        .xAccess = fv_access,
        .xFullPathname = fv_full_pathname,
        .xDlOpen = fv_dl_open,
        .xDlError = fv_dl_error,
        .xDlSym = fv_dl_sym,
        .xDlClose = fv_dl_close,
        .xRandomness = fv_randomness,
        .xSleep = fv_sleep,
        .xCurrentTime = fv_current_time,
        .xGetLastError = fv_last_error,
        .xCurrentTimeInt64 = fv_current_time64,
    };
    orig = o;
    if (sqlite3_vfs_register(&fv_vfs, 1) != SQLITE_OK) {
        orig = NULL;
        return -1;
    }
    return 0;
}

void fv_arm(int methods, long n)
{
    count = 0;
    nth = n;
    hit = 0;
    sticky = (methods & FV_STICKY) != 0;
    armed = methods & FV_ALL;
}

int fv_disarm(void)
{
    armed = 0;
    return hit;
}

long fv_count(void)
{
    return count;
}

void fv_fail_begin(int on)
{
    atomic_store(&begin_refused, on != 0);
}

void fv_fail_nth(long n)
{
    atomic_store(&lock_nth_hit, 0);
    atomic_store(&lock_nth, n > 0 ? n : 0);
}

int fv_fail_nth_hit(void)
{
    return atomic_load(&lock_nth_hit);
}

void fv_fail_read_nth(long n)
{
    atomic_store(&read_nth_hit, 0);
    atomic_store(&read_nth, n > 0 ? n : 0);
}

int fv_fail_read_nth_hit(void)
{
    return atomic_load(&read_nth_hit);
}

long fv_refused(void)
{
    return atomic_load(&refused);
}
