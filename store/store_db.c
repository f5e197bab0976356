/*
 * store_db.c -- the statement seam of store_db.h: SQLite directly, the
 * PostgreSQL side in store_pg.c. A branch per call; the SQLite path stays
 * what it was (no copies, no translation).
 */
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dg_bind_int64(dg_stmt *s, int idx, int64_t v)
{
    if (s->lite) {
        sqlite3_bind_int64(s->lite, idx, v);
        return;
    }
    char buf[24];
    /* long long is 64 bits wherever libpq builds. */
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    dg_pg_bind(s, idx, buf);
}

void dg_bind_null(dg_stmt *s, int idx)
{
    if (s->lite)
        sqlite3_bind_null(s->lite, idx);
    else
        dg_pg_bind(s, idx, NULL);
}

void dg_bind_text(dg_stmt *s, int idx, const char *text)
{
    if (!s->lite)
        dg_pg_bind(s, idx, text);
    else if (!text)
        sqlite3_bind_null(s->lite, idx);
    else if (sqlite3_bind_text(s->lite, idx, text, -1, SQLITE_TRANSIENT) == SQLITE_NOMEM)
        s->bind_failed = 1; /* the copy failed: the parameter is NULL now */
}

void dg_bind_text_borrowed(dg_stmt *s, int idx, const char *text)
{
    if (!s->lite)
        dg_pg_bind(s, idx, text);
    else if (!text)
        sqlite3_bind_null(s->lite, idx);
    else
        sqlite3_bind_text(s->lite, idx, text, -1, SQLITE_STATIC);
}

int dg_step(dg_stmt *s)
{
    if (s->bind_failed)
        return DG_ERR_NOMEM;
    if (!s->lite)
        return dg_pg_step(s);
    int rc = sqlite3_step(s->lite);
    return rc == SQLITE_ROW     ? DG_ROW
           : rc == SQLITE_DONE  ? DG_DONE
           : rc == SQLITE_NOMEM ? DG_ERR_NOMEM
                                : DG_ERR_IO;
}

int64_t dg_col_int64(dg_stmt *s, int col)
{
    if (s->lite)
        return sqlite3_column_int64(s->lite, col);
    const char *t = dg_pg_col(s, col);
    return t ? strtoll(t, NULL, 10) : 0;
}

int dg_col_int(dg_stmt *s, int col)
{
    return (int)dg_col_int64(s, col);
}

const char *dg_col_text(dg_stmt *s, int col)
{
    if (s->lite)
        return (const char *)sqlite3_column_text(s->lite, col);
    return dg_pg_col(s, col);
}

int dg_col_null(dg_stmt *s, int col)
{
    if (s->lite)
        return sqlite3_column_type(s->lite, col) == SQLITE_NULL;
    return dg_pg_col(s, col) == NULL;
}

long dg_changes(dg_stmt *s)
{
    if (s->lite)
        return (long)sqlite3_changes(sqlite3_db_handle(s->lite));
    return dg_pg_changes(s);
}

void dg_reset(dg_stmt *s)
{
    s->bind_failed = 0;
    if (s->lite)
        sqlite3_reset(s->lite);
    else
        dg_pg_reset(s);
}

long dg_store_changes(dg_store *st)
{
    return st->db ? (long)sqlite3_changes(st->db) : dg_pg_last_changes(st);
}

int dg_store_is_url(const char *url)
{
    return url && (!strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11));
}

int dg_store_run(dg_stmt *s)
{
    int rc = dg_step(s);
    dg_reset(s);
    return rc == DG_DONE ? DG_OK : DG_ERR_IO;
}
