/*
 * store_outbox.c -- all SQL of the moderator outbox, and its schema (v3, v11,
 * v12; v19's platform and thread columns are store_platform.c's).
 */
#include "store_outbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "store_int.h"

/*
 * Migration v2 -> v3. A row is pending until it is sent (message_id set)
 * or failed (last_error set); ids give the order within a channel. The
 * partial index served the dispatcher's "oldest pending row per channel"
 * (v12 replaces it). A released step never changes.
 */
const char dg_schema_v3_outbox[] =
    "CREATE TABLE outbox ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  channel_id TEXT NOT NULL,"
    "  content TEXT NOT NULL CHECK (length(content) BETWEEN 1 AND 2000),"
    "  mentions TEXT NOT NULL DEFAULT '',"
    "  nonce TEXT NOT NULL UNIQUE CHECK (length(nonce) BETWEEN 1 AND 25),"
    "  part INTEGER NOT NULL DEFAULT 1,"
    "  parts INTEGER NOT NULL DEFAULT 1 CHECK (part BETWEEN 1 AND parts),"
    "  state INTEGER NOT NULL DEFAULT 0 CHECK (state IN (0, 1, 2)),"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  created_at_ms INTEGER NOT NULL,"
    "  done_at_ms INTEGER,"
    "  message_id TEXT,"
    "  last_error TEXT,"
    "  CHECK ((state = 1) = (message_id IS NOT NULL)),"
    "  CHECK ((state = 0) = (done_at_ms IS NULL))"
    ");"
    "CREATE INDEX outbox_pending ON outbox(channel_id, id) WHERE state = 0;";

/*
 * Migration v10 -> v11: state's CHECK as a range. SQLite codes
 * `state IN (0, 1, 2)` with an ephemeral table, built on every INSERT and
 * on every UPDATE that sets state (each row the dispatcher marks);
 * `state BETWEEN 0 AND 2` is two comparisons and admits the same values.
 * SQLite cannot alter a CHECK, so the table is rebuilt: a copy with every
 * row and id, the AUTOINCREMENT high-water mark carried over (pruned rows
 * had ids that must never come back), the old table dropped, the copy
 * renamed and its index made again, all in the migration's one
 * transaction (store.c). The column list is v3's but for that CHECK.
 */
const char dg_schema_v11_outbox_state[] =
    "CREATE TABLE outbox_v11 ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  channel_id TEXT NOT NULL,"
    "  content TEXT NOT NULL CHECK (length(content) BETWEEN 1 AND 2000),"
    "  mentions TEXT NOT NULL DEFAULT '',"
    "  nonce TEXT NOT NULL UNIQUE CHECK (length(nonce) BETWEEN 1 AND 25),"
    "  part INTEGER NOT NULL DEFAULT 1,"
    "  parts INTEGER NOT NULL DEFAULT 1 CHECK (part BETWEEN 1 AND parts),"
    "  state INTEGER NOT NULL DEFAULT 0 CHECK (state BETWEEN 0 AND 2),"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  created_at_ms INTEGER NOT NULL,"
    "  done_at_ms INTEGER,"
    "  message_id TEXT,"
    "  last_error TEXT,"
    "  CHECK ((state = 1) = (message_id IS NOT NULL)),"
    "  CHECK ((state = 0) = (done_at_ms IS NULL))"
    ");"
    "INSERT INTO outbox_v11(id, channel_id, content, mentions, nonce, part, parts, state, "
    "  attempts, created_at_ms, done_at_ms, message_id, last_error) "
    "  SELECT id, channel_id, content, mentions, nonce, part, parts, state, attempts, "
    "  created_at_ms, done_at_ms, message_id, last_error FROM outbox ORDER BY id;"
    "DELETE FROM sqlite_sequence WHERE name = 'outbox_v11';"
    "INSERT INTO sqlite_sequence(name, seq) SELECT 'outbox_v11', seq FROM sqlite_sequence "
    "  WHERE name = 'outbox';"
    "DROP TABLE outbox;"
    "ALTER TABLE outbox_v11 RENAME TO outbox;"
    "CREATE INDEX outbox_pending ON outbox(channel_id, id) WHERE state = 0;";

/* The same step on PostgreSQL (store_pg.c runs it in place of the SQLite
 * text): a CHECK is altered in place there, the rows and the id sequence
 * untouched. outbox_state_check is the name PostgreSQL gave v3's column
 * CHECK on state. */
const char dg_schema_v11_outbox_state_pg[] =
    "ALTER TABLE outbox DROP CONSTRAINT outbox_state_check, "
    "ADD CONSTRAINT outbox_state_check CHECK (state BETWEEN 0 AND 2);";

/*
 * Migration v11 -> v12: the channel index covers every row,
 * not only pending ones. A partial index `WHERE state = 0` loses an entry
 * on every mark, and a backlog's marks (oldest row first across hundreds
 * of channels) each hit another channel's leaf page: at 100k rows over 400
 * channels, 6.2 KB written to the WAL per row sent, against 0.7 KB with an
 * index that a mark does not touch (state is in no index; on PostgreSQL
 * the mark becomes a HOT update). The dispatcher reads a channel from a
 * cursor, so the sent rows in the index are not walked; they leave with
 * the retention prune. Same text on both backends.
 */
const char dg_schema_v12_outbox_index[] = "DROP INDEX outbox_pending;"
                                          "CREATE INDEX outbox_channel ON outbox(channel_id, id);";

#define ROW_COLS                                                                                   \
    "id, channel_id, content, mentions, nonce, part, parts, state, attempts, "                     \
    "created_at_ms, done_at_ms, message_id, last_error, platform, thread_id"

static const char sql_insert[] =
    "INSERT INTO outbox(channel_id, content, mentions, nonce, part, parts, created_at_ms, "
    "platform, thread_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id";
static const char sql_discover[] = "SELECT id, channel_id, platform FROM outbox WHERE id > ?1 AND "
                                   "state = 0 ORDER BY id LIMIT ?2";
static const char sql_pending_of[] =
    "SELECT " ROW_COLS " FROM outbox WHERE channel_id = ?1 AND state = 0 AND id > ?2 "
    "ORDER BY id LIMIT ?3";
static const char sql_list_all[] = "SELECT " ROW_COLS " FROM outbox ORDER BY id";
static const char sql_list_chan[] =
    "SELECT " ROW_COLS " FROM outbox WHERE channel_id = ?1 ORDER BY id";
static const char sql_sent[] =
    "UPDATE outbox SET state = 1, message_id = ?2, done_at_ms = ?3 WHERE id = ?1 AND state = 0";
/* SENT_MANY rows marked sent by one statement on PostgreSQL (dg_store_outbox_mark_sent_many):
 * ?1 the time, then (id, message id) pairs; a shorter batch repeats its
 * last pair (a repeated WHEN or IN value changes nothing). 11 pairs keep
 * the statement within the PostgreSQL side's 24 parameters (store_pg.c). */
#define SENT_MANY 11
static const char sql_sent_many[] =
    "UPDATE outbox SET state = 1, done_at_ms = ?1, message_id = CASE id WHEN ?2 THEN "
    "?3 WHEN ?4 THEN ?5 WHEN ?6 THEN ?7 WHEN ?8 THEN ?9 WHEN ?10 THEN ?11 WHEN ?12 "
    "THEN ?13 WHEN ?14 THEN ?15 WHEN ?16 THEN ?17 WHEN ?18 THEN ?19 WHEN ?20 THEN ?21 "
    "WHEN ?22 THEN ?23 END WHERE state = 0 AND id IN (?2, ?4, ?6, ?8, ?10, ?12, ?14, "
    "?16, ?18, ?20, ?22)";
static const char sql_retry[] =
    "UPDATE outbox SET attempts = attempts + 1, last_error = ?2 WHERE id = ?1 AND state = 0";
static const char sql_failed[] =
    "UPDATE outbox SET state = 2, attempts = attempts + 1, last_error = ?2, done_at_ms = ?3 "
    "WHERE id = ?1 AND state = 0";
static const char sql_count[] = "SELECT count(*) FROM outbox WHERE state = ?1";
static const char sql_max_pending[] = "SELECT COALESCE(MAX(id), 0) FROM outbox WHERE state = ?1";
static const char sql_prune[] =
    "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE state != 0 AND "
    "done_at_ms < ?1 ORDER BY id LIMIT ?2)";

int dg_store_outbox_insert(dg_store *st, const dg_outbox_row *row, int64_t *id_out)
{
    const char *platform = dg_store_platform_of(row->platform);
    if (!platform || (row->thread_id && (!*row->thread_id || strcmp(platform, "slack") != 0)))
        return DG_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, sql_insert);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, row->channel_id);
    dg_store_bind_text(s, 2, row->content);
    dg_store_bind_text(s, 3, row->mentions ? row->mentions : "");
    dg_store_bind_text(s, 4, row->nonce);
    dg_bind_int64(s, 5, row->part);
    dg_bind_int64(s, 6, row->parts);
    dg_bind_int64(s, 7, row->created_at_ms);
    dg_bind_text_borrowed(s, 8, platform);
    dg_store_bind_text(s, 9, row->thread_id);
    int rc = dg_step(s);
    if (rc == DG_ROW && id_out)
        *id_out = dg_col_int64(s, 0);
    dg_reset(s);
    if (rc != DG_ROW)
        return DG_ERR_IO;
    return DG_OK;
}

void dg_outbox_row_clear(dg_outbox_row *row)
{
    if (!row)
        return;
    free(row->channel_id);
    free(row->content);
    free(row->mentions);
    free(row->nonce);
    free(row->message_id);
    free(row->last_error);
    free(row->thread_id);
    memset(row, 0, sizeof *row);
}

void dg_outbox_rows_free(dg_outbox_row *rows, size_t n)
{
    if (!rows)
        return;
    for (size_t i = 0; i < n; i++)
        dg_outbox_row_clear(&rows[i]);
    free(rows);
}

/* Step s to the end, collecting rows. */
static int collect(dg_stmt *s, dg_outbox_row **rows, size_t *n)
{
    dg_outbox_row *out = NULL;
    size_t cnt = 0, cap = 0;
    int rc;
    while ((rc = dg_step(s)) == DG_ROW) {
        if (dg_grow(&out, &cap, cnt, sizeof *out, 16)) {
            rc = DG_ERR_NOMEM;
            break;
        }
        dg_outbox_row *r = &out[cnt++];
        memset(r, 0, sizeof *r);
        r->id = dg_col_int64(s, 0);
        r->channel_id = dg_store_col_dup(s, 1);
        r->content = dg_store_col_dup(s, 2);
        r->mentions = dg_store_col_dup(s, 3);
        r->nonce = dg_store_col_dup(s, 4);
        r->part = dg_col_int(s, 5);
        r->parts = dg_col_int(s, 6);
        r->state = (dg_outbox_state)dg_col_int(s, 7);
        r->attempts = dg_col_int(s, 8);
        r->created_at_ms = dg_col_int64(s, 9);
        r->done_at_ms = dg_col_int64(s, 10);
        r->message_id = dg_store_col_dup(s, 11);
        r->last_error = dg_store_col_dup(s, 12);
        r->platform = dg_store_platform_col(dg_col_text(s, 13));
        r->thread_id = dg_store_col_dup(s, 14);
        if (!r->channel_id || !r->content || !r->mentions || !r->nonce ||
            (!r->thread_id && !dg_col_null(s, 14))) {
            rc = DG_ERR_NOMEM;
            break;
        }
    }
    dg_reset(s);
    if (rc != DG_DONE) {
        dg_outbox_rows_free(out, cnt);
        return rc; /* a status: the step failed, or out of memory */
    }
    *rows = out;
    *n = cnt;
    return DG_OK;
}

int dg_store_outbox_discover(dg_store *st, int64_t after_id, size_t max, dg_outbox_ref **out,
                             size_t *n)
{
    *out = NULL;
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, sql_discover);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, after_id);
    dg_bind_int64(s, 2, max);
    dg_outbox_ref *refs = NULL;
    size_t cnt = 0, cap = 0;
    int rc;
    while ((rc = dg_step(s)) == DG_ROW) {
        if (dg_grow(&refs, &cap, cnt, sizeof *refs, 64)) {
            rc = DG_ERR_NOMEM;
            break;
        }
        const char *c = dg_col_text(s, 1);
        refs[cnt].id = dg_col_int64(s, 0);
        snprintf(refs[cnt].channel_id, sizeof refs[cnt].channel_id, "%s", c ? c : "");
        snprintf(refs[cnt].platform, sizeof refs[cnt].platform, "%s",
                 dg_store_platform_col(dg_col_text(s, 2)));
        cnt++;
    }
    dg_reset(s);
    if (rc != DG_DONE) {
        free(refs);
        return rc; /* a status: the step failed, or out of memory */
    }
    *out = refs;
    *n = cnt;
    return DG_OK;
}

int dg_store_outbox_pending_of(dg_store *st, const char *channel_id, int64_t after_id, size_t max,
                               dg_outbox_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, sql_pending_of);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_bind_int64(s, 2, after_id);
    dg_bind_int64(s, 3, max);
    return collect(s, rows, n);
}

int dg_store_outbox_list(dg_store *st, const char *channel_id, dg_outbox_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, channel_id ? sql_list_chan : sql_list_all);
    if (!s)
        return DG_ERR_IO;
    if (channel_id)
        dg_store_bind_text(s, 1, channel_id);
    return collect(s, rows, n);
}

/* Run an UPDATE on one row; DG_ERR_NOT_FOUND when it changed nothing. */
static int update_one(dg_store *st, dg_stmt *s)
{
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    return dg_store_changes(st) == 1 ? DG_OK : DG_ERR_NOT_FOUND;
}

int dg_store_outbox_mark_sent(dg_store *st, int64_t id, const char *message_id, int64_t now_ms)
{
    dg_stmt *s = dg_store_stmt(st, sql_sent);
    if (!s || !message_id)
        return s ? DG_ERR_INVALID : DG_ERR_IO;
    dg_bind_int64(s, 1, id);
    dg_store_bind_text(s, 2, message_id);
    dg_bind_int64(s, 3, now_ms);
    return update_one(st, s);
}

int dg_store_outbox_mark_sent_many(dg_store *st, const int64_t *ids, const char *const *message_ids,
                                   size_t n, int64_t now_ms, size_t *marked)
{
    DG_ASSERT_IN_TXN(st);
    *marked = 0;
    for (size_t i = 0; i < n; i++)
        if (!message_ids[i])
            return DG_ERR_INVALID;
    size_t k = 1;
    for (size_t at = 0; at < n; at += k) {
        k = n - at < SENT_MANY ? n - at : SENT_MANY;
        /* SQLite: one prepared single-row UPDATE per row. The batched
         * statement only saves PostgreSQL round trips; in SQLite its IN
         * list is an ephemeral table and its CASE is walked per row, which
         * cost 22k instructions a row against 17k for the single-row one
         * (callgrind, batches of 5 rows in a transaction). */
        if (!st->pg)
            k = 1;
        if (k == 1) {
            int rc = dg_store_outbox_mark_sent(st, ids[at], message_ids[at], now_ms);
            if (rc == DG_OK)
                (*marked)++;
            else if (rc != DG_ERR_NOT_FOUND)
                return rc;
            continue;
        }
        dg_stmt *s = dg_store_stmt(st, sql_sent_many);
        if (!s)
            return DG_ERR_IO;
        dg_bind_int64(s, 1, now_ms);
        for (size_t j = 0; j < SENT_MANY; j++) {
            size_t r = at + (j < k ? j : k - 1);
            dg_bind_int64(s, 2 + 2 * (int)j, ids[r]);
            dg_bind_text_borrowed(s, 3 + 2 * (int)j, message_ids[r]);
        }
        if (dg_store_run(s) != DG_OK)
            return DG_ERR_IO;
        *marked += (size_t)dg_store_changes(st);
    }
    return DG_OK;
}

int dg_store_outbox_mark_retry(dg_store *st, int64_t id, const char *error)
{
    dg_stmt *s = dg_store_stmt(st, sql_retry);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, id);
    dg_store_bind_text(s, 2, error);
    return update_one(st, s);
}

int dg_store_outbox_mark_failed(dg_store *st, int64_t id, const char *error, int64_t now_ms)
{
    dg_stmt *s = dg_store_stmt(st, sql_failed);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, id);
    dg_store_bind_text(s, 2, error ? error : "unknown error");
    dg_bind_int64(s, 3, now_ms);
    return update_one(st, s);
}

int dg_store_outbox_count(dg_store *st, dg_outbox_state state, int64_t *n)
{
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, sql_count);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, (int)state);
    int rc = dg_step(s);
    if (rc == DG_ROW)
        *n = dg_col_int64(s, 0);
    dg_reset(s);
    return rc == DG_ROW ? DG_OK : DG_ERR_IO;
}

int dg_store_outbox_max_pending_id(dg_store *st, int64_t *id)
{
    *id = 0;
    dg_stmt *s = dg_store_stmt(st, sql_max_pending);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, (int)DG_OUTBOX_PENDING);
    int rc = dg_step(s);
    if (rc == DG_ROW)
        *id = dg_col_int64(s, 0);
    dg_reset(s);
    return rc == DG_ROW ? DG_OK : DG_ERR_IO;
}

int dg_store_outbox_prune(dg_store *st, int64_t before_ms, int limit, long *removed)
{
    DG_ASSERT_IN_TXN(st);
    if (removed)
        *removed = 0;
    dg_stmt *s = dg_store_stmt(st, sql_prune);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, before_ms);
    dg_bind_int64(s, 2, limit);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    if (removed)
        *removed = (long)dg_store_changes(st);
    return DG_OK;
}
