/*
 * store_checkpoint.c -- the WAL checkpoints of a SQLite store, on a thread
 * of their own.
 *
 * SQLite's automatic checkpoint runs inside the commit that grows the WAL
 * past 1000 pages, on the committing thread and under the store's lock: a
 * hook (message_received, before_model_resolve recording a session) or the
 * outbox's batch of marks then waits for the copy into the database file
 * and its fsync (4.5 ms measured here on an idle disk, far more on a busy
 * one), and every other user of the store waits behind it. Here the
 * committing thread only notes the WAL's size (the WAL hook replaces the
 * automatic checkpoint) and wakes this thread, which checkpoints in PASSIVE
 * mode on a connection of its own: it copies what no reader still needs,
 * never blocks a writer, and takes none of the store's locks. Commits of
 * the store itself then never fsync (WAL with synchronous=NORMAL).
 *
 * Should the thread fall far behind (a reader pinning old frames, a disk
 * refusing writes), the committing thread checkpoints itself once the WAL
 * reaches CKPT_INLINE_PAGES, as SQLite would have: the WAL stays bounded.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errors.h"
#include "store.h"
#include "store_int.h"

#define CKPT_PAGES 1000         /* as SQLite's own default */
#define CKPT_INLINE_PAGES 16000 /* about 64 MB of WAL at 4 KB pages */

struct dg_ckpt {
    sqlite3 *db; /* checkpointer thread only, after start */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int due;            /* guarded by mu: the WAL passed CKPT_PAGES */
    int stop;           /* guarded by mu */
    atomic_long runs;   /* checkpoints done (dg_store_checkpoints) */
    atomic_int last_rc; /* SQLite's code of the last one */
};

/* After each commit of the store's connection, on the committing thread
 * (the store's lock held). Cheap: a comparison, at most a signal. */
static int on_wal_commit(void *arg, sqlite3 *db, const char *schema, int pages)
{
    struct dg_ckpt *c = arg;
    if (pages >= CKPT_INLINE_PAGES) {
        /* The thread is not keeping up: do what SQLite would have done. */
        sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        return SQLITE_OK;
    }
    if (pages >= CKPT_PAGES) {
        pthread_mutex_lock(&c->mu);
        if (!c->due) {
            c->due = 1;
            pthread_cond_signal(&c->cond);
        }
        pthread_mutex_unlock(&c->mu);
    }
    return SQLITE_OK;
}

static void *checkpointer(void *arg)
{
    struct dg_ckpt *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->due && !c->stop)
            pthread_cond_wait(&c->cond, &c->mu);
        if (c->stop)
            break;
        c->due = 0;
        pthread_mutex_unlock(&c->mu);
        /* A failure (disk full, I/O error) leaves the frames in the WAL,
         * where they are safe; the next commit past the mark tries again. */
        int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        atomic_store(&c->last_rc, rc);
        atomic_fetch_add(&c->runs, 1);
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int dg_store_checkpointer_start(dg_store *st, const char *path, char *err, size_t err_len)
{
    struct dg_ckpt *c = calloc(1, sizeof *c);
    if (!c)
        return dg_fail(err, err_len, DG_ERR_NOMEM, "store: out of memory opening %s", path);
    int rc = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    /* A connection learns that the file is in WAL mode when it first reads
     * it; until then a checkpoint is a no-op that reports success. That
     * read may meet another gateway's recovery of the WAL: wait as the
     * store's own connection does. */
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(c->db, 5000);
        rc = sqlite3_exec(c->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
    }
    if (rc != SQLITE_OK) {
        dg_fail(err, err_len, DG_ERR_IO,
                "store: cannot open the checkpoint connection to dbPath %s: %s; check that the "
                "folder is writable",
                path, c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        sqlite3_close_v2(c->db);
        free(c);
        return DG_ERR_IO;
    }
    /* PASSIVE never waits for a lock; a busy handler would only delay it. */
    sqlite3_busy_timeout(c->db, 0);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cond, NULL);
    atomic_init(&c->runs, 0);
    atomic_init(&c->last_rc, SQLITE_OK);
    if (pthread_create(&c->thread, NULL, checkpointer, c) != 0) {
        pthread_cond_destroy(&c->cond);
        pthread_mutex_destroy(&c->mu);
        sqlite3_close_v2(c->db);
        free(c);
        return dg_fail(err, err_len, DG_ERR_NOMEM,
                       "store: cannot start the checkpoint thread for %s; the process may be "
                       "out of threads",
                       path);
    }
    st->ckpt = c;
    sqlite3_wal_hook(st->db, on_wal_commit, c); /* replaces the automatic checkpoint */
    return DG_OK;
}

void dg_store_checkpointer_stop(dg_store *st)
{
    struct dg_ckpt *c = st->ckpt;
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    /* Back to SQLite's own checkpoints for whatever the connection still
     * commits (none in the plugin: this runs as the store closes). */
    if (st->db)
        sqlite3_wal_autocheckpoint(st->db, CKPT_PAGES);
    sqlite3_close_v2(c->db);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    free(c);
    st->ckpt = NULL;
}

long dg_store_checkpoints(const dg_store *st, int *last_rc)
{
    if (!st || !st->ckpt) {
        if (last_rc)
            *last_rc = SQLITE_OK;
        return -1;
    }
    if (last_rc)
        *last_rc = atomic_load(&st->ckpt->last_rc);
    return atomic_load(&st->ckpt->runs);
}
