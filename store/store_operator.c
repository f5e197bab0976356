/*
 * store_operator.c -- read-only store access for the operator's CLI
 * (store_operator.h).
 */
#include "store_operator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "errors.h"
#include "log_defer.h"
#include "store_db.h"
#include "store_int.h"
#include "store_outbox.h"

/* A WAL database is read through its -shm file, which a reader creates when
 * it is missing; in a folder this user cannot write, it cannot. Then nobody
 * without more rights can write the database either (its -wal could not be
 * made), so the file is read as immutable: without the -shm, and without
 * what a -wal left by a crash holds. A file:// URI for that (malloc'd, the
 * caller frees), or NULL: open path as usual. */
static char *immutable_uri_if_needed(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    char *shm = dg_sprintf("%s-shm", path);
    int needed = dir && shm && access(dir, W_OK) != 0 && access(shm, F_OK) != 0;
    free(dir);
    free(shm);
    if (!needed)
        return NULL;
    dg_buf uri = {0};
    int bad = dg_buf_add(&uri, "file:", 5);
    for (const char *p = path; *p && !bad; p++) {
        char esc[4];
        /* ? # % end or escape the name in a URI; the rest passes as is */
        if (*p == '?' || *p == '#' || *p == '%') {
            snprintf(esc, sizeof esc, "%%%02X", (unsigned char)*p);
            bad = dg_buf_add(&uri, esc, 3);
        } else {
            bad = dg_buf_add(&uri, p, 1);
        }
    }
    if (bad || dg_buf_add(&uri, "?immutable=1", 13)) {
        dg_buf_free(&uri);
        return NULL;
    }
    return uri.s;
}

int dg_store_open_readonly(const char *path, dg_store **out, char *err, size_t err_len)
{
    *out = NULL;
    if (!path || !*path)
        return dg_fail(err, err_len, DG_ERR_INVALID, "--db: a database path is required");
    dg_store *st = dg_store_new();
    if (!st)
        return dg_fail(err, err_len, DG_ERR_NOMEM, "out of memory opening the store");
    if (dg_store_is_url(path)) {
        /* A PostgreSQL store; messages never hold the url (its password). */
        int prc = dg_pg_open_readonly(st, path, err, err_len);
        if (prc != DG_OK) {
            dg_store_close(st);
            return prc;
        }
        *out = st;
        return DG_OK;
    }
    char *uri = immutable_uri_if_needed(path);
    int rc = sqlite3_open_v2(
        uri ? uri : path, &st->db,
        SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX | (uri ? SQLITE_OPEN_URI : 0), NULL);
    free(uri);
    int app = 0, version = 0;
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(st->db, 5000);
        rc = dg_store_pragma_int(st->db, "PRAGMA application_id", &app);
    }
    if (rc == SQLITE_OK)
        rc = dg_store_pragma_int(st->db, "PRAGMA user_version", &version);
    int status = DG_OK;
    if (rc != SQLITE_OK)
        status = dg_fail(err, err_len, DG_ERR_IO,
                         "cannot read %s as a SQLite database (%s); "
                         "give --db the plugin's dbPath",
                         path, st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
    else if (app != DG_APPLICATION_ID)
        status = dg_fail(err, err_len, DG_ERR_INVALID,
                         "%s is not a dirigent database "
                         "(application_id 0x%08x); give --db the plugin's dbPath",
                         path, (unsigned)app);
    else if (version < dg_schema_nsteps)
        status = dg_fail(err, err_len, DG_ERR_UNSUPPORTED,
                         "%s is at schema version %d, this "
                         "dirigent-ctl reads version %d: start the plugin of this version once "
                         "(it migrates the file), then ask again",
                         path, version, dg_schema_nsteps);
    else if (version > dg_schema_nsteps)
        status = dg_fail(err, err_len, DG_ERR_UNSUPPORTED,
                         "%s is at schema version %d, newer "
                         "than this dirigent-ctl (%d): use the dirigent-ctl installed with that "
                         "plugin",
                         path, version, dg_schema_nsteps);
    if (status != DG_OK) {
        dg_store_close(st);
        return status;
    }
    st->opened_version = version;
    *out = st;
    return DG_OK;
}

int dg_store_begin_read(dg_store *st)
{
    dg_store_lock(st);
    int ok = st->pg ? dg_pg_begin_read(st) == DG_OK
                    : sqlite3_exec(st->db, "BEGIN DEFERRED", NULL, NULL, NULL) == SQLITE_OK;
    if (!ok) {
        dg_store_unlock(st);
        return DG_ERR_IO;
    }
    st->changes_at_begin = st->db ? sqlite3_total_changes64(st->db) : 0;
    dg_log_defer_begin(); /* dg_store_commit / rollback end it */
    return DG_OK;
}

static const char SQL_SUMMARY[] =
    "SELECT state, COUNT(*), MIN(created_at_ms) FROM outbox GROUP BY state";

int dg_store_outbox_summary(dg_store *st, dg_outbox_summary *out)
{
    DG_ASSERT_IN_TXN(st);
    memset(out, 0, sizeof *out);
    dg_stmt *s = dg_store_stmt(st, SQL_SUMMARY);
    if (!s)
        return DG_ERR_IO;
    int rc;
    while ((rc = dg_step(s)) == DG_ROW) {
        int state = dg_col_int(s, 0);
        long count = (long)dg_col_int64(s, 1);
        if (state == DG_OUTBOX_PENDING) {
            out->pending = count;
            out->oldest_pending_ms = dg_col_int64(s, 2);
        } else if (state == DG_OUTBOX_SENT) {
            out->sent = count;
        } else {
            out->failed = count;
        }
    }
    dg_reset(s);
    return rc == DG_DONE ? DG_OK : DG_ERR_IO;
}

static const char SQL_ROWS_IN[] =
    "SELECT id, channel_id, attempts, created_at_ms, done_at_ms, last_error, platform,"
    " thread_id FROM outbox WHERE state = ? ORDER BY id LIMIT ?";

int dg_store_outbox_rows_in(dg_store *st, int state, size_t max, dg_outbox_row **rows, size_t *n)
{
    DG_ASSERT_IN_TXN(st);
    *rows = NULL;
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_ROWS_IN);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, state);
    dg_bind_int64(s, 2, (int64_t)max);
    dg_outbox_row *v = max ? calloc(max, sizeof *v) : NULL;
    int rc = DG_DONE, status = max && !v ? DG_ERR_NOMEM : DG_OK;
    while (status == DG_OK && *n < max && (rc = dg_step(s)) == DG_ROW) {
        dg_outbox_row *r = &v[(*n)++];
        r->id = dg_col_int64(s, 0);
        r->channel_id = dg_store_col_dup(s, 1);
        r->state = (dg_outbox_state)state;
        r->attempts = dg_col_int(s, 2);
        r->created_at_ms = dg_col_int64(s, 3);
        r->done_at_ms = dg_col_int64(s, 4);
        r->last_error = dg_store_col_dup(s, 5);
        r->platform = dg_store_platform_col(dg_col_text(s, 6));
        r->thread_id = dg_store_col_dup(s, 7);
        if (!r->channel_id || (!r->thread_id && !dg_col_null(s, 7)))
            status = DG_ERR_NOMEM;
    }
    if (status == DG_OK && rc != DG_ROW && rc != DG_DONE)
        status = DG_ERR_IO;
    dg_reset(s);
    if (status != DG_OK) {
        dg_outbox_rows_free(v, *n);
        *n = 0;
        return status;
    }
    *rows = v;
    return DG_OK;
}
