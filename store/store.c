/*
 * store.c -- opening, migrating and locking the SQLite database.
 *
 * Area-specific SQL lives in store_<area>.c; this file owns the connection,
 * the migration runner and the statement cache.
 *
 * Which database is ours, decided before anything is
 * written to the file (not even journal_mode):
 *   - PRAGMA application_id DG_APPLICATION_ID: ours. Its user_version must
 *     not be above this build's, and it must hold every table of that version;
 *   - application_id 0, no table at all, user_version 0: a new file; ours;
 *   - application_id 0, user_version 1..current and exactly the tables our
 *     migrations create up to that version: written by an older dirigent
 *     (before the stamp); opened, migrated and stamped;
 *   - application_id 0 and user_version above ours: refused as newer;
 *   - anything else (another application_id, tables that are not ours,
 *     user_version 0 with tables, our version without our tables) is
 *     refused, the file left byte for byte as it was.
 * An in-memory database (":memory:", "file::memory:", "mode=memory") is
 * refused too: it would silently give up every durability promise.
 */
#include "store_int.h"
#include "store_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.h"
#include "log_defer.h"

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
    dg_schema_v7_discuss_timers,
    dg_schema_v8_shared,
    dg_schema_v9_discuss_index,
    dg_schema_v10_transitions,
    dg_schema_v11_outbox_state,
    dg_schema_v12_outbox_index,
    dg_schema_v13_marked_transitions,
    dg_schema_v14_mark_snapshots,
    dg_schema_v15_plain_marks,
    dg_schema_v16_member_standing,
    dg_schema_v17_command_hints,
    dg_schema_v18_cost,
    dg_schema_v19_platform,
    dg_schema_v20_judge,
    dg_schema_v21_tool_call_initiator,
};
const int dg_schema_nsteps = (int)(sizeof dg_schema_steps / sizeof dg_schema_steps[0]);

const char *dg_schema_step_pg(int v)
{
    return dg_schema_steps[v] == dg_schema_v11_outbox_state ? dg_schema_v11_outbox_state_pg
                                                            : dg_schema_steps[v];
}

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

static int read_int_pragma(sqlite3 *db, const char *sql, int *out)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        *out = sqlite3_column_int(s, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    return rc;
}

int dg_store_pragma_int(sqlite3 *db, const char *sql, int *out)
{
    return read_int_pragma(db, sql, out);
}

/* The names of the tables of db (not SQLite's own) as ",a,b,c," sorted;
 * malloc'd, caller frees; NULL on error (*rc set). Reads only. */
static char *table_list(sqlite3 *db, int *rc)
{
    static const char sql[] =
        "SELECT ',' || coalesce(group_concat(name, ','), '') || ',' FROM (SELECT name FROM "
        "sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
        "ORDER BY name)";
    sqlite3_stmt *s = NULL;
    char *out = NULL;
    *rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    if (*rc == SQLITE_OK && (*rc = sqlite3_step(s)) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(s, 0);
        out = strdup(t ? (const char *)t : ",,");
        *rc = out ? SQLITE_OK : SQLITE_NOMEM;
    }
    sqlite3_finalize(s);
    return out;
}

/* The tables our migrations create up to version v, in table_list's form
 * (built in a scratch in-memory database, so it never drifts from the
 * steps). malloc'd, caller frees; NULL on error. */
char *dg_store_tables_of_version(int v)
{
    sqlite3 *db = NULL;
    char *out = NULL;
    int rc = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, NULL);
    for (int i = 0; rc == SQLITE_OK && i < v; i++)
        rc = exec_sql(db, dg_schema_steps[i], NULL);
    if (rc == SQLITE_OK)
        out = table_list(db, &rc);
    sqlite3_close(db);
    return out;
}

/* 1 when every name of want (",a,b,") is in have. */
int dg_store_has_tables(const char *have, const char *want)
{
    for (const char *w = want + 1; *w;) {
        const char *end = strchr(w, ',');
        if (!end || end == w)
            break;
        size_t n = (size_t)(end - w);
        int found = 0;
        for (const char *h = have; (h = strstr(h, ",")) != NULL; h++)
            if (!strncmp(h + 1, w, n) && h[1 + n] == ',') {
                found = 1;
                break;
            }
        if (!found)
            return 0;
        w = end + 1;
    }
    return 1;
}

/*
 * A file of ours whose pages are damaged (a disk fault, a copy cut short)
 * is refused at open, naming the file, instead of being taken and then
 * failing in every hook with "database disk image is malformed". PRAGMA
 * quick_check reads every page but not the
 * indexes against the tables: linear in the file, once per init. Reading
 * only.
 */
static int check_intact(sqlite3 *db, const char *path, char *err, size_t err_len)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    const char *res = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
    int out = DG_OK;
    if (!res || strcmp(res, "ok") != 0) {
        char why[200]; /* one line: quick_check's report has several */
        snprintf(why, sizeof why, "%s", res ? res : sqlite3_errmsg(db));
        for (char *c = why; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
        out = dg_fail(err, err_len, DG_ERR_IO,
                      "store: database %s is damaged (%s); it was left untouched: restore "
                      "it from a backup, or move it aside to start with an empty state",
                      path, why);
    }
    sqlite3_finalize(s);
    return out;
}

/*
 * Decide whether the open file is ours (see the top of the file), reading
 * only. Returns DG_OK (and *app_id) or a refusal with a sentence.
 */
static int check_ours(sqlite3 *db, const char *path, int *app_id, char *err, size_t err_len)
{
    int version = 0, rc;
    char *have = NULL, *want = NULL;
    if ((rc = read_int_pragma(db, "PRAGMA application_id", app_id)) != SQLITE_OK ||
        (rc = read_int_pragma(db, "PRAGMA user_version", &version)) != SQLITE_OK ||
        !(have = table_list(db, &rc))) {
        int out = dg_fail(err, err_len, rc == SQLITE_NOTADB ? DG_ERR_INVALID : DG_ERR_IO,
                          "store: dbPath %s cannot be read as a SQLite database (%s); point "
                          "dbPath at a new file or at dirigent's own database",
                          path, sqlite3_errmsg(db));
        return out;
    }
    int ours_stamp = *app_id == DG_APPLICATION_ID;
    int out = DG_OK;
    if (*app_id != 0 && !ours_stamp) {
        out = dg_fail(err, err_len, DG_ERR_INVALID,
                      "store: dbPath %s belongs to another application (SQLite application_id "
                      "0x%08x, dirigent's is 0x%08x); it was left untouched: point dbPath at a "
                      "new file",
                      path, (unsigned)*app_id, (unsigned)DG_APPLICATION_ID);
    } else if (version > dg_schema_nsteps) {
        out = dg_fail(err, err_len, DG_ERR_UNSUPPORTED,
                      "store: database %s has schema version %d (this build knows up to %d); "
                      "it was written by a newer dirigent%s: it was left untouched; upgrade the "
                      "plugin or point dbPath at another file",
                      path, version, dg_schema_nsteps,
                      ours_stamp ? "" : " or by another application");
    } else if (!ours_stamp && version == 0) {
        if (strcmp(have, ",,") != 0)
            out = dg_fail(err, err_len, DG_ERR_INVALID,
                          "store: dbPath %s is another application's SQLite database (tables "
                          "%.200s and no dirigent marker); it was left untouched: point dbPath "
                          "at a new file",
                          path, have);
    } else if (!(want = dg_store_tables_of_version(version))) {
        out = dg_fail(err, err_len, DG_ERR_NOMEM, "store: out of memory checking %s", path);
    } else if (!dg_store_has_tables(have, want)) {
        out = dg_fail(err, err_len, DG_ERR_INVALID,
                      "store: dbPath %s claims dirigent schema version %d but lacks its tables "
                      "(has %.200s, needs %.200s); it is damaged or not dirigent's and was left "
                      "untouched: restore it from a backup or point dbPath at a new file",
                      path, version, have, want);
    } else if (!ours_stamp && strcmp(have, want) != 0) {
        out = dg_fail(err, err_len, DG_ERR_INVALID,
                      "store: dbPath %s has tables that are not dirigent's (has %.200s, "
                      "dirigent's are %.200s) and no dirigent marker; it was left untouched: "
                      "point dbPath at a file of its own",
                      path, have, want);
    }
    free(have);
    free(want);
    if (out == DG_OK && version > 0)
        out = check_intact(db, path, err, err_len);
    return out;
}

/* 1 when path names an in-memory database rather than a file. */
static int is_memory_path(const char *path)
{
    if (!strcmp(path, ":memory:"))
        return 1;
    if (strncasecmp(path, "file:", 5) != 0)
        return 0;
    return strstr(path, ":memory:") != NULL || strcasestr(path, "mode=memory") != NULL;
}

int dg_store_db_path_check(const char *path, char *err, size_t err_len)
{
    if (!path || !*path)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "store: dbPath is empty; set it to a file path");
    if (is_memory_path(path))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "store: dbPath %s is an in-memory database; dirigent keeps turns, "
                       "discussions and owed messages across restarts only in a file: set dbPath "
                       "to a file path",
                       path);
    return DG_OK;
}

/* Run the steps from `from` to the current version in one transaction. */
static int migrate(sqlite3 *db, const char *path, int app_id, int *opened, char *err,
                   size_t err_len)
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
        return dg_fail(err, err_len, DG_ERR_UNSUPPORTED,
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
    if (app_id != DG_APPLICATION_ID) {
        char pragma[48];
        snprintf(pragma, sizeof pragma, "PRAGMA application_id = %d", DG_APPLICATION_ID);
        if ((rc = exec_sql(db, pragma, &msg)) != SQLITE_OK)
            goto sql_fail_rollback;
    }
    if ((rc = exec_sql(db, "COMMIT", &msg)) != SQLITE_OK)
        goto sql_fail_rollback;
    return DG_OK;

sql_fail_rollback:
    exec_sql(db, "ROLLBACK", NULL);
sql_fail:
    dg_fail(err, err_len, DG_ERR_IO, "store: could not set up the schema of %s: %s", path,
            msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return DG_ERR_IO;
}

/* Remove a database file and its WAL companions (best effort). */
static void remove_db_files(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal", "-presence"};
    size_t n = strlen(path) + sizeof "-presence";
    char *name = malloc(n);
    if (!name)
        return;
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        snprintf(name, n, "%s%s", path, suffix[i]);
        unlink(name);
    }
    free(name);
}

dg_store *dg_store_new(void)
{
    dg_store *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    pthread_mutex_init(&st->lock, NULL);
    pthread_mutex_init(&st->probe_mu, NULL);
    st->probe_seq = -1;
    st->presence_fd = -1;
    st->txn_others = -1;
    return st;
}

/* A PostgreSQL store: store_pg.c does what the rest of this file does for
 * a file (connect, recognise, migrate). */
static int open_url(const char *url, dg_store **out, char *err, size_t err_len)
{
    dg_store *st = dg_store_new();
    if (!st)
        return dg_fail(err, err_len, DG_ERR_NOMEM, "store: out of memory opening store.url");
    int rc = dg_pg_open(st, url, err, err_len);
    if (rc == DG_OK && dg_store_make_instance(st) != DG_OK)
        rc = dg_fail(err, err_len, DG_ERR_IO,
                     "store: no random bytes for the instance id; "
                     "try again");
    if (rc != DG_OK) {
        dg_store_close(st);
        return rc;
    }
    *out = st;
    return DG_OK;
}

/* Everything st holds, and st: for a store that failed to open as for one
 * being closed. The cached statements first: a connection closed with
 * statements still prepared is only a zombie, which nothing frees. */
static void store_free(dg_store *st)
{
    for (int i = 0; i < DG_STMT_CACHE; i++) {
        if (st->cache[i].stmt.lite)
            sqlite3_finalize(st->cache[i].stmt.lite);
        if (st->cache[i].stmt.pg)
            dg_pg_stmt_free(&st->cache[i].stmt);
    }
    if (st->pg)
        dg_pg_close(st);
    dg_store_checkpointer_stop(st);
    dg_store_turns_pending_drop(st);
    dg_store_presence_leave(st);
    sqlite3_finalize(st->probe_dv_stmt);
    sqlite3_finalize(st->probe_seq_stmt);
    if (st->probe)
        sqlite3_close_v2(st->probe);
    if (st->db)
        sqlite3_close_v2(st->db);
    pthread_mutex_destroy(&st->probe_mu);
    pthread_mutex_destroy(&st->lock);
    free(st->where);
    free(st);
}

int dg_store_open(const char *path, dg_store **out, char *err, size_t err_len)
{
    *out = NULL;
    if (dg_store_is_url(path))
        return open_url(path, out, err, err_len);
    int rc0 = dg_store_db_path_check(path, err, err_len);
    if (rc0 != DG_OK)
        return rc0;
    struct stat sb;
    int existed = stat(path, &sb) == 0;

    dg_store *st = dg_store_new();
    if (!st)
        return dg_fail(err, err_len, DG_ERR_NOMEM, "store: out of memory opening %s", path);

    /* No SQLite mutex on this connection: the store's own (st->lock, held
     * from dg_store_begin to its end) already serializes every use of it
     * (store.h), and SQLite's would be taken again by each of a message's
     * thirty-odd bind, step and reset calls. */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path, &st->db, flags, NULL);
    if (rc != SQLITE_OK) {
        dg_fail(err, err_len, DG_ERR_IO,
                "store: cannot open dbPath %s: %s; check that the folder exists and is writable",
                path, st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
        rc = DG_ERR_IO;
        goto fail;
    }
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, 5000);
    /* Is it ours? Decided reading only, before the first write. */
    int app_id = 0;
    if ((rc = check_ours(st->db, path, &app_id, err, err_len)) != DG_OK)
        goto fail;
    char *msg = NULL;
    /* WAL needs the file to be writable; this is where an unwritable
     * location shows up. */
    rc = exec_sql(st->db,
                  "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
                  &msg);
    if (rc != SQLITE_OK) {
        dg_fail(err, err_len, DG_ERR_IO,
                "store: cannot prepare dbPath %s: %s; check that the folder exists and is writable",
                path, msg ? msg : sqlite3_errmsg(st->db));
        sqlite3_free(msg);
        rc = DG_ERR_IO;
        goto fail;
    }
    rc = migrate(st->db, path, app_id, &st->opened_version, err, err_len);
    if (rc != DG_OK)
        goto fail;
    if (dg_store_make_instance(st) != DG_OK) {
        rc = dg_fail(err, err_len, DG_ERR_IO,
                     "store: no random bytes for the instance id "
                     "of %s; try again",
                     path);
        goto fail;
    }
    if ((rc = dg_store_presence_join(st, path, err, err_len)) != DG_OK)
        goto fail;
    if ((rc = dg_store_probe_open(st, path, err, err_len)) != DG_OK)
        goto fail;
    if ((rc = dg_store_checkpointer_start(st, path, err, err_len)) != DG_OK)
        goto fail;
    if (!(st->where = strdup(path))) {
        rc = dg_fail(err, err_len, DG_ERR_NOMEM, "store: out of memory opening %s", path);
        goto fail;
    }
    *out = st;
    return DG_OK;

fail:
    store_free(st);
    /* Leave nothing behind when the file did not exist before; an existing
     * file is never removed (and was not written if it was not ours). */
    if (!existed)
        remove_db_files(path);
    return rc;
}

void dg_store_close(dg_store *st)
{
    if (st)
        store_free(st);
}

const char *dg_store_where(const dg_store *st)
{
    return st && st->where ? st->where : "(no store)";
}

int dg_store_opened_version(const dg_store *st)
{
    return st->opened_version;
}

void dg_store_lock(dg_store *st)
{
    pthread_mutex_lock(&st->lock);
    dg_lock_owner_take(&st->lock_owner);
}

void dg_store_unlock(dg_store *st)
{
    dg_lock_owner_drop(&st->lock_owner);
    pthread_mutex_unlock(&st->lock);
}

int dg_store_held(const dg_store *st)
{
    return dg_lock_owner_is_self(&st->lock_owner);
}

/* dg_store_stmt, its bindings cleared when clear. */
static dg_stmt *stmt_get(dg_store *st, const char *sql, int clear)
{
    DG_ASSERT_IN_TXN(st);
    /* An I/O error or a full disk in one statement makes SQLite roll the
     * whole transaction back on its own (https://sqlite.org/lang_transaction.html,
     * "Response To Errors Within A Transaction"). A caller that goes on after
     * such a failure (a best-effort read) would otherwise run the rest of
     * its work in autocommit mode: each statement committed alone, a half
     * change, while COMMIT then reports the whole as lost. Refuse every
     * statement of a transaction SQLite has ended. */
    if (st->in_txn && sqlite3_get_autocommit(st->db))
        return NULL;
    /* Open addressing on the pointer: the hot path is a hash and a compare. */
    uintptr_t h = (uintptr_t)sql;
    h ^= h >> 17;
    h *= 0x9E3779B97F4A7C15ull;
    for (unsigned probe = 0; probe < DG_STMT_CACHE; probe++) {
        unsigned i = (unsigned)((h >> 32) + probe) & (DG_STMT_CACHE - 1);
        dg_stmt *c = &st->cache[i].stmt;
        if (st->cache[i].sql == sql) {
            c->bind_failed = 0;
            if (c->lite) {
                sqlite3_reset(c->lite);
                if (clear)
                    sqlite3_clear_bindings(c->lite);
            } else {
                dg_pg_reset(c);
            }
            return c;
        }
        if (!st->cache[i].sql) {
            c->bind_failed = 0;
            if (st->pg) {
                if (dg_pg_stmt_prepare(st, sql, c) != DG_OK)
                    return NULL;
            } else if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &c->lite,
                                          NULL) != SQLITE_OK) {
                return NULL;
            }
            st->cache[i].sql = sql;
            return c;
        }
    }
    /* More distinct statements than slots: a build-time design error. Never
     * evict, since a caller may still be stepping an older statement. */
    return NULL;
}

dg_stmt *dg_store_stmt(dg_store *st, const char *sql)
{
    return stmt_get(st, sql, 1);
}

dg_stmt *dg_store_stmt_all_bound(dg_store *st, const char *sql)
{
    return stmt_get(st, sql, 0);
}

void dg_store_bind_text(dg_stmt *s, int idx, const char *text)
{
    dg_bind_text(s, idx, text);
}

char *dg_store_col_dup(dg_stmt *s, int col)
{
    const char *t = dg_col_text(s, col);
    return t ? strdup(t) : NULL;
}

/* Rows written on st's connection since it opened. */
static int64_t total_changes(dg_store *st)
{
    return st->db ? sqlite3_total_changes64(st->db) : dg_pg_total_changes(st);
}

/* Reset every statement of st's connection still on a row: such a one
 * keeps the read transaction of its snapshot past COMMIT, and once another
 * connection has committed, BEGIN IMMEDIATE fails at once (SQLite does not
 * wait: the snapshot can never become writable). Returns how many. */
static int reset_stale_readers(dg_store *st)
{
    int n = 0;
    for (sqlite3_stmt *q = sqlite3_next_stmt(st->db, NULL); q; q = sqlite3_next_stmt(st->db, q))
        if (sqlite3_stmt_busy(q) && sqlite3_stmt_readonly(q)) {
            sqlite3_reset(q);
            n++;
        }
    return n;
}

/* The main database's data version into *dv; 1 when read. NULL names the
 * main database (sqlite3_file_control) without SQLite comparing schema
 * names: asked at every begin and commit. */
static int data_version(dg_store *st, unsigned *dv)
{
    return sqlite3_file_control(st->db, NULL, SQLITE_FCNTL_DATA_VERSION, dv) == SQLITE_OK;
}

int dg_store_begin(dg_store *st)
{
    dg_store_lock(st);
    int ok;
    if (st->pg) {
        ok = dg_pg_begin(st) == DG_OK; /* sets txn_head */
    } else {
        dg_stmt *s = dg_store_stmt_all_bound(st, "BEGIN IMMEDIATE");
        ok = s && dg_step(s) == DG_DONE;
        /* A read left on a row is a defect of its caller, but it must not
         * make the store refuse every write from then on: reset, once more. */
        if (!ok && s && reset_stale_readers(st) && (s = dg_store_stmt(st, "BEGIN IMMEDIATE")))
            ok = dg_step(s) == DG_DONE;
    }
    if (!ok) {
        dg_store_unlock(st);
        return DG_ERR_IO;
    }
    if (!st->pg) {
        st->txn_head = -1;
        st->in_txn = 1;
        st->txn_write = 1;
        st->txn_hinted = 0;
        unsigned dv = 0;
        st->txn_alone = st->alone_known && data_version(st, &dv) && dv == st->alone_dv;
        if (!st->txn_alone) {
            st->alone_epoch++; /* what callers knew of the marks may be stale */
            st->log_known = 0; /* and the change log too */
        }
    }
    st->changes_at_begin = total_changes(st);
    st->txn_others = -1;
    st->last_ord_at_begin = st->last_ord;
    st->txn_seq = 0;
    st->n_noted = 0;
    dg_log_defer_begin(); /* no direct host call while the store is held */
    return DG_OK;
}

void dg_store_test_fail_writes(dg_store *st, int on)
{
    atomic_store(&st->fail_writes, on != 0);
}

long dg_store_test_refused_writes(dg_store *st)
{
    return atomic_load(&st->refused_writes);
}

void dg_store_test_forget(dg_store *st)
{
    for (int i = 0; i < DG_STMT_CACHE; i++) {
        sqlite3_finalize(st->cache[i].stmt.lite);
        st->cache[i].stmt.lite = NULL;
        if (st->cache[i].stmt.pg)
            dg_pg_stmt_free(&st->cache[i].stmt);
        st->cache[i].sql = NULL;
    }
    if (st->db)
        sqlite3_db_release_memory(st->db);
}

void dg_store_test_drop_pages(dg_store *st)
{
    dg_store_lock(st);
    if (st->db)
        sqlite3_db_release_memory(st->db);
    dg_store_unlock(st);
}

void dg_store_test_commit_hook(dg_store *st, int (*fn)(void *), void *arg)
{
    dg_store_lock(st);
    if (st->db)
        sqlite3_commit_hook(st->db, fn, arg);
    dg_store_unlock(st);
}

int dg_store_commit(dg_store *st)
{
    DG_ASSERT_IN_TXN(st);
    int ok;
    int flushed = dg_store_turns_pending_commit(st); /* the claimed mark, written last */
    dg_store_turns_pending_drop(st);
    if (flushed != DG_OK) {
        ok = 0;
    } else if (atomic_load(&st->fail_writes) && total_changes(st) != st->changes_at_begin) {
        atomic_fetch_add(&st->refused_writes, 1);
        ok = 0;
    } else if (st->pg) {
        ok = dg_pg_commit(st) == DG_OK;
    } else {
        dg_stmt *s = dg_store_stmt_all_bound(st, "COMMIT"); /* NULL when SQLite rolled back */
        ok = s && dg_step(s) == DG_DONE;
    }
    st->in_txn = 0;
    st->txn_write = 0;
    /* After our own commit: a different version at the next begin means
     * another connection committed (store_instances.c, changes_since). */
    if (ok && st->txn_seq > st->head_seen)
        st->head_seen = st->txn_seq;
    st->dv_known = ok && st->db && data_version(st, &st->dv_after_commit);
    /* Still alone after this commit if it was when the transaction began
     * or looked (store_int.h, alone_dv). */
    st->alone_known =
        st->dv_known && (st->txn_others == 0 || (st->txn_others < 0 && st->txn_alone));
    st->alone_dv = st->dv_after_commit;
    if (!ok) {
        st->last_ord = st->last_ord_at_begin;
        /* A failed COMMIT leaves the transaction open: roll it back so the
         * connection stays usable, and report the loss to the caller. */
        if (st->pg)
            dg_pg_rollback(st);
        else
            sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    }
    dg_log_defer_end();
    dg_store_unlock(st);
    return ok ? DG_OK : DG_ERR_IO;
}

void dg_store_rollback(dg_store *st)
{
    DG_ASSERT_IN_TXN(st);
    /* Alone after it if it was alone when it began or looked: the write
     * lock was held throughout, so nobody committed or joined meanwhile,
     * and what it wrote is undone. Kept, or every channel's next message
     * would read its marks again after each change that only read (a
     * sweep, a decision, an outbox pass). */
    int was_write = st->txn_write;
    int alone = was_write && (st->txn_others == 0 || (st->txn_others < 0 && st->txn_alone));
    st->in_txn = 0;
    st->txn_write = 0;
    st->dv_known = 0;
    dg_store_turns_pending_drop(st);
    st->last_ord = st->last_ord_at_begin; /* its orders were never written */
    if (st->pg)
        dg_pg_rollback(st);
    else if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    if (st->pg) {
        st->alone_known = 0;
    } else if (was_write) {
        /* A hint a claim moved (its newest id, its count, its fold) is
         * ahead of the file now: every hint is read afresh. */
        if (st->txn_hinted)
            st->alone_epoch++;
        unsigned dv = 0;
        st->alone_known = alone && data_version(st, &dv);
        st->alone_dv = dv;
    }
    /* A read transaction (dg_store_begin_read) wrote nothing: what the
     * store knew of being alone stands (a newcomer's commit changes the
     * data version the next begin compares). */
    dg_log_defer_end();
    dg_store_unlock(st);
}

int dg_store_end(dg_store *st, int rc)
{
    if (rc == DG_OK)
        return dg_store_commit(st);
    dg_store_rollback(st);
    return rc;
}

const char *dg_store_errmsg(dg_store *st)
{
    return st->pg ? dg_pg_errmsg(st) : sqlite3_errmsg(st->db);
}
