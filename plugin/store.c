/*
 * store.c -- opening, migrating and locking the SQLite database.
 *
 * Area-specific SQL lives in store_<area>.c; this file owns the connection,
 * the migration runner and the statement cache.
 */
#include "store_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.h"
#include "openclaw/plugin.h"

static const char schema_v1_base[] =
    "CREATE TABLE dg_meta ("
    "  key TEXT PRIMARY KEY,"
    "  value TEXT NOT NULL"
    ") WITHOUT ROWID;"
    "INSERT INTO dg_meta(key, value) VALUES ('created_by', 'dirigent');";

const char *const dg_schema_steps[] = {
    schema_v1_base,
    dg_schema_v2_turns,
    dg_schema_v3_outbox,
    dg_schema_v4_discuss,
    dg_schema_v5_tool_calls,
    dg_schema_v6_turn_runs,
};
const int dg_schema_nsteps = (int)(sizeof dg_schema_steps / sizeof dg_schema_steps[0]);

int dg_store_schema_version(void)
{
    return dg_schema_nsteps;
}

static int exec_sql(sqlite3 *db, const char *sql, char **msg)
{
    return sqlite3_exec(db, sql, NULL, NULL, msg);
}

static int read_user_version(sqlite3 *db, int *out)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        *out = sqlite3_column_int(s, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    return rc;
}

/* Run the steps from `from` to the current version in one transaction. */
static int migrate(sqlite3 *db, const char *path, int *opened, char *err, size_t err_len)
{
    char *msg = NULL;
    int rc = exec_sql(db, "BEGIN IMMEDIATE", &msg);
    if (rc != SQLITE_OK)
        goto sql_fail;
    int from = 0;
    if ((rc = read_user_version(db, &from)) != SQLITE_OK)
        goto sql_fail_rollback;
    *opened = from;
    if (from > dg_schema_nsteps) {
        exec_sql(db, "ROLLBACK", NULL);
        char got[48];
        snprintf(got, sizeof got, "%d (this build knows up to %d)", from, dg_schema_nsteps);
        return dg_fail(err, err_len, OC_ERR_UNSUPPORTED,
                       "store: database %s has schema version %s; it was written by a newer "
                       "dirigent: upgrade the plugin or point dbPath at another file",
                       path, got);
    }
    for (int v = from; v < dg_schema_nsteps; v++) {
        if ((rc = exec_sql(db, dg_schema_steps[v], &msg)) != SQLITE_OK)
            goto sql_fail_rollback;
    }
    if (from != dg_schema_nsteps) {
        char pragma[48];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", dg_schema_nsteps);
        if ((rc = exec_sql(db, pragma, &msg)) != SQLITE_OK)
            goto sql_fail_rollback;
    }
    if ((rc = exec_sql(db, "COMMIT", &msg)) != SQLITE_OK)
        goto sql_fail_rollback;
    return OC_OK;

sql_fail_rollback:
    exec_sql(db, "ROLLBACK", NULL);
sql_fail:
    dg_fail(err, err_len, OC_ERR_IO, "store: could not set up the schema of %s: %s", path,
            msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return OC_ERR_IO;
}

/* Remove a database file and its WAL companions (best effort). */
static void remove_db_files(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    size_t n = strlen(path) + sizeof "-journal";
    char *name = malloc(n);
    if (!name)
        return;
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        snprintf(name, n, "%s%s", path, suffix[i]);
        unlink(name);
    }
    free(name);
}

int dg_store_open(const char *path, dg_store **out, char *err, size_t err_len)
{
    *out = NULL;
    if (!path || !*path)
        return dg_fail(err, err_len, OC_ERR_INVALID, "store: dbPath is empty; set it to a file path");
    struct stat sb;
    int existed = stat(path, &sb) == 0;

    dg_store *st = calloc(1, sizeof *st);
    if (!st)
        return dg_fail(err, err_len, OC_ERR_NOMEM, "store: out of memory opening %s", path);
    pthread_mutex_init(&st->lock, NULL);

    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
    int rc = sqlite3_open_v2(path, &st->db, flags, NULL);
    if (rc != SQLITE_OK) {
        dg_fail(err, err_len, OC_ERR_IO,
                "store: cannot open dbPath %s: %s; check that the folder exists and is writable",
                path, st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
        rc = OC_ERR_IO;
        goto fail;
    }
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, 5000);
    char *msg = NULL;
    /* WAL needs the file to be writable; this is where an unwritable
     * location shows up. */
    rc = exec_sql(st->db,
                  "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
                  &msg);
    if (rc != SQLITE_OK) {
        dg_fail(err, err_len, OC_ERR_IO,
                "store: cannot prepare dbPath %s: %s; check that the folder exists and is writable",
                path, msg ? msg : sqlite3_errmsg(st->db));
        sqlite3_free(msg);
        rc = OC_ERR_IO;
        goto fail;
    }
    rc = migrate(st->db, path, &st->opened_version, err, err_len);
    if (rc != OC_OK)
        goto fail;
    *out = st;
    return OC_OK;

fail:
    if (st->db)
        sqlite3_close_v2(st->db);
    pthread_mutex_destroy(&st->lock);
    free(st);
    /* Leave nothing behind when the file is ours; a database of a newer
     * schema is someone else's and stays untouched. */
    if (!existed && rc != OC_ERR_UNSUPPORTED)
        remove_db_files(path);
    return rc;
}

void dg_store_close(dg_store *st)
{
    if (!st)
        return;
    for (int i = 0; i < DG_STMT_CACHE; i++)
        if (st->cache[i].stmt)
            sqlite3_finalize(st->cache[i].stmt);
    sqlite3_close_v2(st->db);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

int dg_store_opened_version(const dg_store *st)
{
    return st->opened_version;
}

sqlite3_stmt *dg_store_stmt(dg_store *st, const char *sql)
{
    /* Open addressing on the pointer: the hot path is a hash and a compare. */
    uintptr_t h = (uintptr_t)sql;
    h ^= h >> 17;
    h *= 0x9E3779B97F4A7C15ull;
    for (unsigned probe = 0; probe < DG_STMT_CACHE; probe++) {
        unsigned i = (unsigned)((h >> 32) + probe) & (DG_STMT_CACHE - 1);
        if (st->cache[i].sql == sql) {
            sqlite3_reset(st->cache[i].stmt);
            sqlite3_clear_bindings(st->cache[i].stmt);
            return st->cache[i].stmt;
        }
        if (!st->cache[i].sql) {
            sqlite3_stmt *s = NULL;
            if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK)
                return NULL;
            st->cache[i].sql = sql;
            st->cache[i].stmt = s;
            return s;
        }
    }
    /* More distinct statements than slots: a build-time design error. Never
     * evict, since a caller may still be stepping an older statement. */
    return NULL;
}

int dg_store_bind_text(sqlite3_stmt *s, int idx, const char *text)
{
    if (!text)
        return sqlite3_bind_null(s, idx);
    return sqlite3_bind_text(s, idx, text, -1, SQLITE_TRANSIENT);
}

char *dg_store_col_dup(sqlite3_stmt *s, int col)
{
    const unsigned char *t = sqlite3_column_text(s, col);
    return t ? strdup((const char *)t) : NULL;
}

int dg_store_begin(dg_store *st)
{
    pthread_mutex_lock(&st->lock);
    sqlite3_stmt *s = dg_store_stmt(st, "BEGIN IMMEDIATE");
    if (!s || sqlite3_step(s) != SQLITE_DONE) {
        pthread_mutex_unlock(&st->lock);
        return OC_ERR_IO;
    }
    st->changes_at_begin = sqlite3_total_changes64(st->db);
    return OC_OK;
}

void dg_store_test_fail_writes(dg_store *st, int on)
{
    atomic_store(&st->fail_writes, on != 0);
}

long dg_store_test_refused_writes(dg_store *st)
{
    return atomic_load(&st->refused_writes);
}

int dg_store_commit(dg_store *st)
{
    int ok;
    if (atomic_load(&st->fail_writes) &&
        sqlite3_total_changes64(st->db) != st->changes_at_begin) {
        atomic_fetch_add(&st->refused_writes, 1);
        ok = 0;
    } else {
        sqlite3_stmt *s = dg_store_stmt(st, "COMMIT");
        ok = s && sqlite3_step(s) == SQLITE_DONE;
    }
    if (!ok) {
        /* A failed COMMIT leaves the transaction open: roll it back so the
         * connection stays usable, and report the loss to the caller. */
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    }
    pthread_mutex_unlock(&st->lock);
    return ok ? OC_OK : OC_ERR_IO;
}

void dg_store_rollback(dg_store *st)
{
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    pthread_mutex_unlock(&st->lock);
}

const char *dg_store_errmsg(dg_store *st)
{
    return sqlite3_errmsg(st->db);
}
