/*
 * store_instances.c -- all SQL of sharing a store between instances, and its
 * schema (v8): the change log of turn-state channels and the leases.
 */
#include "store_instances.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "errors.h"
#include "store_int.h"
#include "store_test.h"

/*
 * Migration v7 -> v8. turn_changes: one row per channel whose turn state
 * was ever written, with the sequence of the latest transaction that wrote
 * it and that writer's instance id (bounded by the number of channels).
 * store_leases: a named right, its holder and when it runs out.
 */
const char dg_schema_v8_shared[] = "CREATE TABLE turn_changes ("
                                   "  channel_id TEXT PRIMARY KEY,"
                                   "  seq INTEGER NOT NULL,"
                                   "  instance TEXT NOT NULL"
                                   ") WITHOUT ROWID;"
                                   "CREATE INDEX turn_changes_seq ON turn_changes(seq);"
                                   "CREATE TABLE store_leases ("
                                   "  name TEXT PRIMARY KEY,"
                                   "  owner TEXT NOT NULL,"
                                   "  until_ms INTEGER NOT NULL"
                                   ") WITHOUT ROWID;";

static const char sql_next_seq[] = "SELECT coalesce(max(seq), 0) + 1 FROM turn_changes";
static const char sql_note[] =
    "INSERT INTO turn_changes(channel_id, seq, instance) VALUES (?1, ?2, ?3) "
    "ON CONFLICT(channel_id) DO UPDATE SET seq = excluded.seq, instance = excluded.instance";
static const char sql_since[] =
    "SELECT channel_id, instance, seq FROM turn_changes WHERE seq > ?1 ORDER BY seq";
const char dg_sql_change_head[] = "SELECT coalesce(max(seq), 0) FROM turn_changes";
static const char sql_lease_get[] = "SELECT owner, until_ms FROM store_leases WHERE name = ?1";
static const char sql_lease_add[] =
    "INSERT INTO store_leases(name, owner, until_ms) VALUES (?1, ?2, ?3)";
static const char sql_lease_set[] =
    "UPDATE store_leases SET owner = ?2, until_ms = ?3 WHERE name = ?1";
static const char sql_lease_drop[] = "DELETE FROM store_leases WHERE name = ?1 AND owner = ?2";

int dg_store_make_instance(dg_store *st)
{
    unsigned char b[8];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t r = getrandom(b + got, sizeof b - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return DG_ERR_IO;
        got += (size_t)r;
    }
    char host[64] = "";
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    for (char *c = host; *c; c++)
        if (*c == '/')
            *c = '_';
    int n = snprintf(st->instance, sizeof st->instance, "%s/%ld/", host, (long)getpid());
    for (size_t i = 0; i < sizeof b && n > 0 && (size_t)n + 2 < sizeof st->instance; i++)
        n += snprintf(st->instance + n, sizeof st->instance - (size_t)n, "%02x", b[i]);
    return DG_OK;
}

/* 1 when owner names a process of this machine that no longer exists: its
 * lease is over now (a crashed gateway restarting on the same machine need
 * not wait for it to run out). Same host name and pid namespace assumed. */
static int owner_dead_here(const dg_store *st, const char *owner)
{
    const char *me_pid = strchr(st->instance, '/');
    const char *o_pid = strchr(owner, '/');
    if (!me_pid || !o_pid || me_pid - st->instance != o_pid - owner ||
        strncmp(owner, st->instance, (size_t)(o_pid - owner)) != 0)
        return 0;
    char *end = NULL;
    long pid = strtol(o_pid + 1, &end, 10);
    if (!end || *end != '/' || pid <= 0 || pid == (long)getpid())
        return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int dg_store_probe_open(dg_store *st, const char *path, char *err, size_t err_len)
{
    int rc = sqlite3_open_v2(path, &st->probe, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(st->probe, 5000);
        rc = sqlite3_prepare_v3(st->probe, "PRAGMA data_version", -1, SQLITE_PREPARE_PERSISTENT,
                                &st->probe_dv_stmt, NULL);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(st->probe, dg_sql_change_head, -1, SQLITE_PREPARE_PERSISTENT,
                                &st->probe_seq_stmt, NULL);
    if (rc != SQLITE_OK)
        return dg_fail(err, err_len, DG_ERR_IO,
                       "store: cannot open a second (read-only) connection to dbPath %s: %s; "
                       "check that the folder is readable",
                       path, st->probe ? sqlite3_errmsg(st->probe) : sqlite3_errstr(rc));
    return DG_OK;
}

const char *dg_store_instance(const dg_store *st)
{
    return st->instance;
}

int64_t dg_store_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Presence. The change log is read only by other stores open on the same
 * database; a gateway alone on its file (the usual case) would pay three
 * page writes per turn-state change for a log nobody reads. So each open
 * SQLite store holds a shared lock on byte 0 of "<dbPath>-presence" (an
 * open-file-description lock: per open store, even two in one process,
 * released by the kernel when the process dies), and a writer logs a
 * change only when, holding the database's write lock, it finds a lock it
 * does not own there.
 *
 * Why no change is missed: a store joining takes its lock first, then
 * begins and ends one write transaction before it reads any turn state. A
 * writer that looked before the lock was taken still held the write lock
 * then, so the joiner's first read comes after that writer's commit; a
 * writer that looks after it sees the lock and logs. The file is never
 * removed while a store may hold it (a new file would hide the locks).
 * Asking costs a system call per transaction, so a store that found itself
 * alone asks again only once the database's data version differs from the
 * one after its last commit: the joiner's transaction writes a row, and
 * that commit changes the version before the joiner reads anything.
 */
static int presence_lock(int fd, short type, int cmd, struct flock *fl)
{
    memset(fl, 0, sizeof *fl);
    fl->l_type = type;
    fl->l_whence = SEEK_SET;
    fl->l_start = 0;
    fl->l_len = 1;
    return fcntl(fd, cmd, fl);
}

int dg_store_presence_join(dg_store *st, const char *path, char *err, size_t err_len)
{
    char name[4096];
    if (snprintf(name, sizeof name, "%s-presence", path) >= (int)sizeof name)
        return dg_fail(err, err_len, DG_ERR_IO, "store: dbPath %.200s... is too long", path);
    int fd = open(name, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return dg_fail(err, err_len, DG_ERR_IO,
                       "store: cannot open %s (%s), which the instances sharing dbPath use "
                       "to find each other; check that the folder is writable and the file "
                       "readable by this user",
                       name, strerror(errno));
    struct flock fl;
    if (presence_lock(fd, F_RDLCK, F_OFD_SETLK, &fl) != 0) {
        /* No such locks on this file system: nobody can be seen, so every
         * store here logs every change, as before presence existed. */
        close(fd);
    } else {
        st->presence_fd = fd;
    }
    /* The barrier writes a row: the data version it changes is how a store
     * that found itself alone knows, without asking again, that nobody has
     * joined since (store_int.h, alone_dv). It also folds the states
     * marks carry into their rows: only their writer tracks them. */
    static const char SQL_JOINED[] = "REPLACE INTO dg_meta (key, value) VALUES ('last_join', ?)";
    int rc = dg_store_begin(st);
    if (rc == DG_OK) {
        dg_stmt *s = dg_store_stmt(st, SQL_JOINED);
        if (!s) {
            rc = DG_ERR_IO;
        } else {
            dg_store_bind_text(s, 1, st->instance);
            rc = dg_store_run(s);
        }
        if (rc == DG_OK)
            rc = dg_store_turns_fold_all(st);
        rc = dg_store_end(st, rc);
    }
    if (rc != DG_OK)
        return dg_fail(err, err_len, rc == DG_ERR_NOMEM ? DG_ERR_NOMEM : DG_ERR_IO,
                       "store: cannot wait out the writers of dbPath %s (%s); if another "
                       "process holds its write lock, try again once it is done",
                       path, sqlite3_errmsg(st->db));
    return DG_OK;
}

void dg_store_presence_leave(dg_store *st)
{
    if (st->presence_fd >= 0)
        close(st->presence_fd); /* drops the lock */
    st->presence_fd = -1;
}

/* In a transaction (the write lock held): whether another store is open
 * on this database, asked once per transaction. Unknown counts as yes. */
static int others_present(dg_store *st)
{
    if (st->pg || st->presence_fd < 0)
        return 1;
    if (st->txn_others < 0 && st->txn_alone) {
        st->txn_others = 0; /* nobody joined since we last looked */
    } else if (st->txn_others < 0) {
        struct flock fl;
        st->txn_others =
            presence_lock(st->presence_fd, F_WRLCK, F_OFD_GETLK, &fl) != 0 || fl.l_type != F_UNLCK;
    }
    return st->txn_others;
}

int dg_store_alone_in_txn(dg_store *st)
{
    DG_ASSERT_IN_TXN(st);
    return st->db && st->in_txn && !others_present(st);
}

int dg_store_change_note(dg_store *st, const char *channel_id)
{
    DG_ASSERT_IN_TXN(st);
    if (!channel_id)
        return DG_ERR_INVALID;
    if (!others_present(st))
        return DG_OK; /* alone on the file: nobody reads the log */
    for (int i = 0; i < st->n_noted; i++)
        if (!strcmp(st->noted[i], channel_id))
            return DG_OK;
    dg_stmt *s;
    if (!st->txn_seq && st->txn_head >= 0) {
        st->txn_seq = st->txn_head + 1; /* the head read with the lock at begin */
    } else if (!st->txn_seq) {
        /* One sequence per transaction: writers are serialised, so it is
         * above every committed one. */
        if (!(s = dg_store_stmt(st, sql_next_seq)) || dg_step(s) != DG_ROW)
            return DG_ERR_IO;
        st->txn_seq = dg_col_int64(s, 0);
        dg_reset(s);
    }
    if (!(s = dg_store_stmt(st, sql_note)))
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_bind_int64(s, 2, st->txn_seq);
    dg_store_bind_text(s, 3, st->instance);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    if (st->n_noted < DG_NOTED_MAX && strlen(channel_id) < DG_NOTED_LEN)
        snprintf(st->noted[st->n_noted++], DG_NOTED_LEN, "%s", channel_id);
    return DG_OK;
}

int64_t dg_store_txn_change_seq(const dg_store *st)
{
    DG_ASSERT_IN_TXN(st);
    return st->txn_seq;
}

int dg_store_changes_since(dg_store *st, int64_t after, char ***channels, size_t *n, int64_t *upto)
{
    DG_ASSERT_IN_TXN(st);
    *channels = NULL;
    *n = 0;
    *upto = after;
    if (st->txn_head >= 0 && st->txn_head <= after && !st->txn_seq)
        return DG_OK; /* the head read at begin: nothing after `after` yet */
    if (!st->pg && st->txn_alone && st->log_known && !st->txn_seq && after >= st->head_seen) {
        /* Alone since the log was last read (presence, store_int.h): only
         * this store committed since, and it logs nothing while alone; and
         * the caller has seen all the store has (a caller that asks from
         * further back, e.g. after rolling back what it learned, reads). */
        *upto = after;
        return DG_OK;
    }
    /* Otherwise the log itself is read (one indexed lookup that usually
     * finds nothing): SQLite's data version alone did not always show
     * another instance's commit (two instances in one process, after one
     * of them restarted), and a missed change makes both do the same
     * change. */
    dg_stmt *s = dg_store_stmt(st, sql_since);
    if (!s)
        return DG_ERR_IO;
    st->log_reads++;
    dg_bind_int64(s, 1, after);
    char **v = NULL;
    size_t cnt = 0, cap = 0;
    int rc, out = DG_OK;
    while ((rc = dg_step(s)) == DG_ROW) {
        int64_t seq = dg_col_int64(s, 2);
        if (seq > *upto)
            *upto = seq;
        const char *who = dg_col_text(s, 1);
        if (who && !strcmp(who, st->instance))
            continue; /* our own change: the mirror has it */
        if (dg_grow(&v, &cap, cnt, sizeof *v, 8) || !(v[cnt] = dg_store_col_dup(s, 0))) {
            out = DG_ERR_NOMEM;
            break;
        }
        cnt++;
    }
    dg_reset(s);
    if (out == DG_OK && rc != DG_DONE)
        out = DG_ERR_IO;
    if (out != DG_OK) {
        for (size_t i = 0; i < cnt; i++)
            free(v[i]);
        free(v);
        *upto = after;
        return out;
    }
    *channels = v;
    *n = cnt;
    if (*upto > st->head_seen)
        st->head_seen = *upto;
    st->log_known = !st->pg; /* read with the write lock held: whole */
    return DG_OK;
}

long dg_store_test_log_reads(dg_store *st)
{
    return st->log_reads;
}

/* Copy the WAL-index header word by word (SQLite writes it while we read:
 * a torn copy only differs from the last one, which costs one more probe). */
static void shm_header(const dg_store *st, unsigned char *out)
{
    for (size_t i = 0; i < DG_WAL_HDR_LEN; i += 4) {
        uint32_t w =
            __atomic_load_n((const volatile uint32_t *)(st->shm_hdr + i), __ATOMIC_ACQUIRE);
        memcpy(out + i, &w, 4);
    }
}

/* Map the probe connection's wal-index through its VFS (after a first
 * statement opened the WAL), so later probes read its header in memory. */
static void shm_attach(dg_store *st)
{
    sqlite3_file *f = NULL;
    if (sqlite3_file_control(st->probe, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f ||
        !f->pMethods || f->pMethods->iVersion < 2 || !f->pMethods->xShmMap)
        return;
    void volatile *region = NULL;
    if (f->pMethods->xShmMap(f, 0, 32768, 0, &region) == SQLITE_OK && region)
        st->shm_hdr = (const volatile unsigned char *)region;
}

int64_t dg_store_change_seq(dg_store *st)
{
    if (st->pg)
        return dg_pg_change_seq(st);
    pthread_mutex_lock(&st->probe_mu);
    unsigned char hdr[DG_WAL_HDR_LEN];
    int had_hdr = st->shm_hdr != NULL; /* hdr read before the statements */
    if (had_hdr) {
        shm_header(st, hdr);
        if (st->shm_valid && st->probe_seq >= 0 && !memcmp(hdr, st->shm_seen, sizeof hdr)) {
            /* Nobody committed since the last probe: no statement, no lock. */
            int64_t out = st->probe_seq;
            pthread_mutex_unlock(&st->probe_mu);
            return out;
        }
    }
    int64_t out = -1;
    int dv = 0;
    if (sqlite3_step(st->probe_dv_stmt) == SQLITE_ROW) {
        dv = sqlite3_column_int(st->probe_dv_stmt, 0);
        out = st->probe_seq;
        if (out < 0 || dv != st->probe_dv) {
            /* Something committed since the last probe (perhaps this
             * instance's own main connection): read the log's head. */
            out = sqlite3_step(st->probe_seq_stmt) == SQLITE_ROW
                      ? sqlite3_column_int64(st->probe_seq_stmt, 0)
                      : -1;
            sqlite3_reset(st->probe_seq_stmt);
            st->probe_seq = out;
            st->probe_dv = dv;
        }
    }
    sqlite3_reset(st->probe_dv_stmt);
    /* Remember the header read before the statements: a commit after that
     * read shows as a different header next time, so a later answer from
     * memory is never older than this one. Just attached: no such header
     * yet, the next call probes once more. */
    if (had_hdr) {
        memcpy(st->shm_seen, hdr, sizeof hdr);
        st->shm_valid = out >= 0;
    } else if (out >= 0) {
        shm_attach(st);
    }
    pthread_mutex_unlock(&st->probe_mu);
    return out;
}

int dg_store_probe_in_memory(dg_store *st)
{
    pthread_mutex_lock(&st->probe_mu);
    int yes = st->shm_hdr != NULL && st->shm_valid;
    pthread_mutex_unlock(&st->probe_mu);
    return yes;
}

int dg_store_lease_take(dg_store *st, const char *name, int64_t now_ms, int64_t until_ms,
                        int64_t held_until, int *got, int *fresh, int64_t *other_until)
{
    DG_ASSERT_IN_TXN(st);
    *got = *fresh = 0;
    *other_until = 0;
    dg_stmt *s = dg_store_stmt(st, sql_lease_get);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, name);
    int rc = dg_step(s);
    if (rc != DG_ROW && rc != DG_DONE) {
        dg_reset(s);
        return DG_ERR_IO;
    }
    int exists = rc == DG_ROW;
    const char *o = exists ? dg_col_text(s, 0) : NULL;
    char owner[sizeof st->instance];
    snprintf(owner, sizeof owner, "%s", o ? o : "");
    int mine = exists && !strcmp(owner, st->instance);
    int64_t until = exists ? dg_col_int64(s, 1) : 0;
    dg_reset(s);
    if (exists && !(mine && held_until && until == held_until) && until >= now_ms &&
        !owner_dead_here(st, owner)) {
        /* Someone else's, still running (or ours from a state we lost:
         * it runs out like anyone's). */
        *other_until = until;
        return DG_OK;
    }
    /* Ours without a break only when nobody wrote it since we did; 2 when
     * another instance held it and did not give it up (died or lapsed). */
    *fresh = exists && !mine ? 2 : !(exists && mine && held_until && until == held_until);
    s = dg_store_stmt(st, exists ? sql_lease_set : sql_lease_add);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, name);
    dg_store_bind_text(s, 2, st->instance);
    dg_bind_int64(s, 3, until_ms);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    *got = 1;
    return DG_OK;
}

int dg_store_lease_release(dg_store *st, const char *name)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, sql_lease_drop);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, name);
    dg_store_bind_text(s, 2, st->instance);
    return dg_store_run(s);
}
