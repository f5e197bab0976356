/*
 * faultvfs.c -- see faultvfs.h. A shim VFS: each file is the base VFS's
 * file with our io_methods in front; only xShmLock looks at the fault.
 */
#include "faultvfs.h"

#include <sqlite3.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

typedef struct fv_file {
    sqlite3_file base;       /* our methods */
    sqlite3_file *real;      /* the base VFS's file, right after this struct */
} fv_file;

static sqlite3_vfs fv_vfs;
static sqlite3_vfs *fv_base;
static sqlite3_io_methods fv_io;
static atomic_int fv_on;
static atomic_long fv_count;
static atomic_long fv_nth;     /* >0: write locks to go until the one refused */
static atomic_int fv_nth_was;
static atomic_long fv_rnth;    /* >0: reads to go until the one that fails */
static atomic_int fv_rnth_was;

#define REAL(f) (((fv_file *)(f))->real)

static int x_close(sqlite3_file *f)
{
    int rc = REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK;
    f->pMethods = NULL;
    return rc;
}
static int x_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
    if (atomic_load(&fv_rnth) > 0 && atomic_fetch_sub(&fv_rnth, 1) == 1) {
        atomic_store(&fv_rnth_was, 1);
        atomic_fetch_add(&fv_count, 1);
        return SQLITE_IOERR_READ;
    }
    return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int x_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
    return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int x_truncate(sqlite3_file *f, sqlite3_int64 n)
{
    return REAL(f)->pMethods->xTruncate(REAL(f), n);
}
static int x_sync(sqlite3_file *f, int flags)
{
    return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int x_size(sqlite3_file *f, sqlite3_int64 *n)
{
    return REAL(f)->pMethods->xFileSize(REAL(f), n);
}
static int x_lock(sqlite3_file *f, int l)
{
    return REAL(f)->pMethods->xLock(REAL(f), l);
}
static int x_unlock(sqlite3_file *f, int l)
{
    return REAL(f)->pMethods->xUnlock(REAL(f), l);
}
static int x_check(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int x_fcntl(sqlite3_file *f, int op, void *arg)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int x_sector(sqlite3_file *f)
{
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int x_devchar(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int x_shmmap(sqlite3_file *f, int pg, int sz, int ext, void volatile **pp)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, ext, pp);
}
static int x_shmlock(sqlite3_file *f, int ofst, int n, int flags)
{
    /* Offset 0 is WAL_WRITE_LOCK (SQLite's WAL format, documented in
     * wal.c): refusing it fails BEGIN IMMEDIATE and nothing else. */
    if (ofst == 0 && n == 1 && flags == (SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE)) {
        int fail = atomic_load(&fv_on);
        if (!fail && atomic_load(&fv_nth) > 0 && atomic_fetch_sub(&fv_nth, 1) == 1) {
            atomic_store(&fv_nth_was, 1);
            fail = 1;
        }
        if (fail) {
            atomic_fetch_add(&fv_count, 1);
            return SQLITE_IOERR_SHMLOCK;
        }
    }
    return REAL(f)->pMethods->xShmLock(REAL(f), ofst, n, flags);
}
static void x_barrier(sqlite3_file *f)
{
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int x_shmunmap(sqlite3_file *f, int del)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int x_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **pp)
{
    return REAL(f)->pMethods->xFetch(REAL(f), o, n, pp);
}
static int x_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p)
{
    return REAL(f)->pMethods->xUnfetch(REAL(f), o, p);
}

static int v_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out)
{
    (void)v;
    fv_file *ff = (fv_file *)f;
    ff->real = (sqlite3_file *)(ff + 1);
    memset(ff->real, 0, (size_t)fv_base->szOsFile);
    int rc = fv_base->xOpen(fv_base, name, ff->real, flags, out);
    f->pMethods = ff->real->pMethods ? &fv_io : NULL;
    return rc;
}
static int v_delete(sqlite3_vfs *v, const char *n, int sync)
{
    (void)v;
    return fv_base->xDelete(fv_base, n, sync);
}
static int v_access(sqlite3_vfs *v, const char *n, int flags, int *out)
{
    (void)v;
    return fv_base->xAccess(fv_base, n, flags, out);
}
static int v_full(sqlite3_vfs *v, const char *n, int len, char *out)
{
    (void)v;
    return fv_base->xFullPathname(fv_base, n, len, out);
}
static void *v_dlopen(sqlite3_vfs *v, const char *n)
{
    (void)v;
    return fv_base->xDlOpen(fv_base, n);
}
static void v_dlerror(sqlite3_vfs *v, int n, char *m)
{
    (void)v;
    fv_base->xDlError(fv_base, n, m);
}
static void (*v_dlsym(sqlite3_vfs *v, void *h, const char *s))(void)
{
    (void)v;
    return fv_base->xDlSym(fv_base, h, s);
}
static void v_dlclose(sqlite3_vfs *v, void *h)
{
    (void)v;
    fv_base->xDlClose(fv_base, h);
}
static int v_random(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return fv_base->xRandomness(fv_base, n, out);
}
static int v_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    return fv_base->xSleep(fv_base, us);
}
static int v_time(sqlite3_vfs *v, double *out)
{
    (void)v;
    return fv_base->xCurrentTime(fv_base, out);
}
static int v_lasterr(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return fv_base->xGetLastError ? fv_base->xGetLastError(fv_base, n, out) : 0;
}
static int v_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
    (void)v;
    return fv_base->xCurrentTimeInt64(fv_base, out);
}

int fv_install(void)
{
    if (fv_base)
        return 0;
    sqlite3_initialize();
    sqlite3_vfs *base = sqlite3_vfs_find(NULL);
    if (!base || base->iVersion < 2)
        return -1;
    fv_base = base;
    fv_io = (sqlite3_io_methods){
        .iVersion = 3, .xClose = x_close, .xRead = x_read, .xWrite = x_write,
        .xTruncate = x_truncate, .xSync = x_sync, .xFileSize = x_size, .xLock = x_lock,
        .xUnlock = x_unlock, .xCheckReservedLock = x_check, .xFileControl = x_fcntl,
        .xSectorSize = x_sector, .xDeviceCharacteristics = x_devchar, .xShmMap = x_shmmap,
        .xShmLock = x_shmlock, .xShmBarrier = x_barrier, .xShmUnmap = x_shmunmap,
        .xFetch = x_fetch, .xUnfetch = x_unfetch,
    };
    fv_vfs = (sqlite3_vfs){
        .iVersion = 2, .szOsFile = (int)sizeof(fv_file) + base->szOsFile,
        .mxPathname = base->mxPathname, .zName = "dg-faultvfs", .xOpen = v_open,
        .xDelete = v_delete, .xAccess = v_access, .xFullPathname = v_full,
        .xDlOpen = v_dlopen, .xDlError = v_dlerror, .xDlSym = v_dlsym, .xDlClose = v_dlclose,
        .xRandomness = v_random, .xSleep = v_sleep, .xCurrentTime = v_time,
        .xGetLastError = v_lasterr, .xCurrentTimeInt64 = v_time64,
    };
    return sqlite3_vfs_register(&fv_vfs, 1) == SQLITE_OK ? 0 : -1;
}

void fv_fail_begin(int on)
{
    atomic_store(&fv_on, on != 0);
}

void fv_fail_nth(long n)
{
    atomic_store(&fv_nth_was, 0);
    atomic_store(&fv_nth, n > 0 ? n : 0);
}

int fv_fail_nth_hit(void)
{
    return atomic_load(&fv_nth_was);
}

void fv_fail_read_nth(long n)
{
    atomic_store(&fv_rnth_was, 0);
    atomic_store(&fv_rnth, n > 0 ? n : 0);
}

int fv_fail_read_nth_hit(void)
{
    return atomic_load(&fv_rnth_was);
}

long fv_refused(void)
{
    return atomic_load(&fv_count);
}
