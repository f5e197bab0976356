/*
 * store_db.h -- the backend seam of the store: statements over SQLite or
 * PostgreSQL (libpq). Included by store/store*.c only; SQL stays there.
 *
 * SQL is written once in the dialect both engines share: `?` or `?N`
 * placeholders (PostgreSQL gets them as `$N`), INSERT ... ON CONFLICT. A
 * PRAGMA is SQLite's alone: it runs only on SQLite paths (store.c,
 * store_operator.c, and the probe and checkpoint connections of
 * store_instances.c and store_checkpoint.c), never through a statement
 * PostgreSQL would see. An INSERT whose conflict is an expected answer
 * says ON CONFLICT DO NOTHING and its caller reads dg_changes() == 0: a
 * failed statement would end a PostgreSQL transaction, not only itself.
 * Schema steps are SQLite DDL; store_pg.c translates the few type words
 * (INTEGER -> BIGINT, TEXT -> TEXT COLLATE "C" so ids sort bytewise as in
 * SQLite, INTEGER PRIMARY KEY -> BIGSERIAL, WITHOUT ROWID dropped).
 *
 * Every function here runs with the store lock held (inside a transaction;
 * dg_store_stmt, where every statement comes from, asserts it), on the
 * calling thread.
 */
#ifndef DG_STORE_DB_H
#define DG_STORE_DB_H

#include <stdint.h>

#include "status.h"
#include "must_check.h"

typedef struct dg_stmt dg_stmt;

/* What dg_step returns besides a failure's status. The two lie outside the
 * statuses (which are DG_OK and negative), as SQLite keeps SQLITE_ROW=100
 * apart from its error codes: a step result handed on as a status, or a
 * status read as a step result, cannot pass for the other. */
enum dg_step_result {
    DG_ROW = 100, /* a row is ready: read it with dg_col_* */
    DG_DONE = 101 /* no (more) rows; a write finished */
};
_Static_assert((int)DG_ROW > (int)DG_OK && (int)DG_DONE > (int)DG_OK,
               "step results lie above every status");

/* Bind parameter idx (1-based). Text is copied (NULL binds SQL NULL). */
void dg_bind_int64(dg_stmt *s, int idx, int64_t v);
void dg_bind_null(dg_stmt *s, int idx);
void dg_bind_text(dg_stmt *s, int idx, const char *text);
/* Like dg_bind_text without the copy where the backend allows it: the
 * caller keeps text alive until the statement has run (hot paths). */
void dg_bind_text_borrowed(dg_stmt *s, int idx, const char *text);

/* Run (first call) or advance: DG_ROW, DG_DONE, or a status: DG_ERR_IO
 * (the statement failed: dg_store_errmsg() says why) or DG_ERR_NOMEM (out
 * of memory, in the backend or in a bind since the last reset). */
int dg_step(dg_stmt *s);

/* Columns of the current row (0-based). Text is borrowed until the next
 * dg_step/dg_reset of s; NULL for SQL NULL. */
int64_t dg_col_int64(dg_stmt *s, int col);
int dg_col_int(dg_stmt *s, int col);
const char *dg_col_text(dg_stmt *s, int col);
int dg_col_null(dg_stmt *s, int col);

/* Rows written by the last write that s ran. */
long dg_changes(dg_stmt *s);

/* Drop the result and the bindings; s stays prepared (cached). */
void dg_reset(dg_stmt *s);

/* The tail of a statement run for its effect (a write, DDL): step s once,
 * reset it, and say how it went: DG_OK when it finished (DG_DONE), else
 * DG_ERR_IO (a row, a failure, a bind or step out of memory;
 * dg_store_errmsg() says why). Rows written: dg_store_changes() after it. */
int dg_store_run(dg_stmt *s) DG_MUST_CHECK;

#endif
