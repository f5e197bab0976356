/*
 * store_tool_calls.c -- all SQL of tool-call idempotency, and its schema (v5).
 */
#include "store_tool_calls.h"

#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/*
 * Migration v4 -> v5. A pending row has no result and no done time; a done
 * row has its done time (the result columns a tool does not use stay NULL).
 */
const char dg_schema_v5_tool_calls[] = "CREATE TABLE tool_calls ("
                                       "  tool TEXT NOT NULL,"
                                       "  call_id TEXT NOT NULL,"
                                       "  fingerprint TEXT NOT NULL,"
                                       "  state TEXT NOT NULL CHECK (state IN ('pending', 'done')),"
                                       "  started_at_ms INTEGER NOT NULL,"
                                       "  done_at_ms INTEGER,"
                                       "  channel_id TEXT,"
                                       "  discussion_id INTEGER,"
                                       "  origin_channel_id TEXT,"
                                       "  summary_path TEXT,"
                                       "  PRIMARY KEY (tool, call_id, fingerprint),"
                                       "  CHECK ((state = 'done') = (done_at_ms IS NOT NULL))"
                                       ") WITHOUT ROWID;";

/*
 * Migration v20 -> v21: the agent that started a discussion's creation, so
 * that the notice of one undone can mention it.
 */
const char dg_schema_v21_tool_call_initiator[] =
    "ALTER TABLE tool_calls ADD COLUMN initiator TEXT;";

void dg_tool_call_row_clear(dg_tool_call_row *r)
{
    if (!r)
        return;
    free(r->channel_id);
    free(r->origin_channel_id);
    free(r->summary_path);
    free(r->initiator);
    memset(r, 0, sizeof *r);
}

static void bind_key(dg_stmt *s, const char *tool, const char *call_id, const char *fp)
{
    dg_store_bind_text(s, 1, tool);
    dg_store_bind_text(s, 2, call_id);
    dg_store_bind_text(s, 3, fp);
}

static const char SQL_GET[] =
    "SELECT state, channel_id, discussion_id, origin_channel_id, summary_path"
    " FROM tool_calls WHERE tool = ? AND call_id = ? AND fingerprint = ?";

int dg_store_tool_call_get(dg_store *st, const char *tool, const char *call_id,
                           const char *fingerprint, dg_tool_call_row *out)
{
    DG_ASSERT_IN_TXN(st);
    memset(out, 0, sizeof *out);
    dg_stmt *s = dg_store_stmt(st, SQL_GET);
    if (!s)
        return DG_ERR_IO;
    bind_key(s, tool, call_id, fingerprint);
    int rc = dg_step(s);
    if (rc == DG_DONE) {
        dg_reset(s);
        return DG_OK;
    }
    if (rc != DG_ROW) {
        dg_reset(s);
        return DG_ERR_IO;
    }
    const char *state = dg_col_text(s, 0);
    out->state = state && strcmp(state, "done") == 0 ? DG_TOOL_CALL_DONE : DG_TOOL_CALL_PENDING;
    out->channel_id = dg_store_col_dup(s, 1);
    out->discussion_id = dg_col_int64(s, 2);
    out->origin_channel_id = dg_store_col_dup(s, 3);
    out->summary_path = dg_store_col_dup(s, 4);
    int nomem = (!dg_col_null(s, 1) && !out->channel_id) ||
                (!dg_col_null(s, 3) && !out->origin_channel_id) ||
                (!dg_col_null(s, 4) && !out->summary_path);
    dg_reset(s);
    if (nomem) {
        dg_tool_call_row_clear(out);
        return DG_ERR_NOMEM;
    }
    return DG_OK;
}

static const char SQL_INTENT[] =
    "INSERT INTO tool_calls (tool, call_id, fingerprint, state, started_at_ms)"
    " VALUES (?, ?, ?, 'pending', ?) ON CONFLICT DO NOTHING";

int dg_store_tool_call_intent(dg_store *st, const char *tool, const char *call_id,
                              const char *fingerprint, int64_t now_ms)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_INTENT);
    if (!s)
        return DG_ERR_IO;
    bind_key(s, tool, call_id, fingerprint);
    dg_bind_int64(s, 4, now_ms);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    return dg_store_changes(st) == 1 ? DG_OK : DG_ERR_CONFLICT;
}

/* Insert as done, or turn a pending row into a done one; a done row is left
 * alone (no change: the caller learns it from dg_store_changes). */
static const char SQL_DONE[] =
    "INSERT INTO tool_calls (tool, call_id, fingerprint, state, started_at_ms, done_at_ms,"
    " channel_id, discussion_id, origin_channel_id, summary_path)"
    " VALUES (?1, ?2, ?3, 'done', ?4, ?4, ?5, ?6, ?7, ?8)"
    " ON CONFLICT (tool, call_id, fingerprint) DO UPDATE SET state = 'done',"
    " done_at_ms = excluded.done_at_ms, channel_id = excluded.channel_id,"
    " discussion_id = excluded.discussion_id, origin_channel_id = excluded.origin_channel_id,"
    " summary_path = excluded.summary_path WHERE tool_calls.state = 'pending'";

int dg_store_tool_call_done(dg_store *st, const char *tool, const char *call_id,
                            const char *fingerprint, const dg_tool_call_row *result, int64_t now_ms)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_DONE);
    if (!s)
        return DG_ERR_IO;
    bind_key(s, tool, call_id, fingerprint);
    dg_bind_int64(s, 4, now_ms);
    dg_store_bind_text(s, 5, result->channel_id);
    if (result->discussion_id)
        dg_bind_int64(s, 6, result->discussion_id);
    else
        dg_bind_null(s, 6);
    dg_store_bind_text(s, 7, result->origin_channel_id);
    dg_store_bind_text(s, 8, result->summary_path);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    return dg_store_changes(st) == 1 ? DG_OK : DG_ERR_CONFLICT;
}

static const char SQL_PRUNE[] = "DELETE FROM tool_calls WHERE started_at_ms < ?";

int dg_store_tool_calls_prune(dg_store *st, int64_t before_ms, long *removed)
{
    DG_ASSERT_IN_TXN(st);
    if (removed)
        *removed = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_PRUNE);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, before_ms);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    if (removed)
        *removed = (long)dg_store_changes(st);
    return DG_OK;
}

static const char SQL_NOTE[] =
    "UPDATE tool_calls SET channel_id = COALESCE(?, channel_id),"
    " origin_channel_id = COALESCE(?, origin_channel_id),"
    " summary_path = COALESCE(?, summary_path), initiator = COALESCE(?, initiator)"
    " WHERE tool = ? AND call_id = ? AND fingerprint = ? AND state = 'pending'";

int dg_store_tool_call_note(dg_store *st, const char *tool, const char *call_id,
                            const char *fingerprint, const char *channel_id,
                            const char *origin_channel_id, const char *summary_path,
                            const char *initiator)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_NOTE);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_store_bind_text(s, 2, origin_channel_id);
    dg_store_bind_text(s, 3, summary_path);
    dg_store_bind_text(s, 4, initiator);
    dg_store_bind_text(s, 5, tool);
    dg_store_bind_text(s, 6, call_id);
    dg_store_bind_text(s, 7, fingerprint);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    return dg_store_changes(st) == 1 ? DG_OK : DG_ERR_NOT_FOUND;
}

void dg_tool_call_pending_free(dg_tool_call_pending *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].call_id);
        free(v[i].fingerprint);
        dg_tool_call_row_clear(&v[i].row);
    }
    free(v);
}

static const char SQL_UNFINISHED[] =
    "SELECT call_id, fingerprint, channel_id, origin_channel_id, summary_path, initiator"
    " FROM tool_calls WHERE tool = ? AND state = 'pending' AND started_at_ms < ?"
    " AND origin_channel_id IS NOT NULL ORDER BY started_at_ms LIMIT ?";

int dg_store_tool_calls_unfinished(dg_store *st, const char *tool, int64_t before_ms, size_t max,
                                   dg_tool_call_pending **out, size_t *n)
{
    DG_ASSERT_IN_TXN(st);
    *out = NULL;
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_UNFINISHED);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, tool);
    dg_bind_int64(s, 2, before_ms);
    dg_bind_int64(s, 3, (int64_t)max);
    dg_tool_call_pending *v = calloc(max ? max : 1, sizeof *v);
    int rc = v ? DG_OK : DG_ERR_NOMEM, step = DG_DONE;
    while (rc == DG_OK && *n < max && (step = dg_step(s)) == DG_ROW) {
        dg_tool_call_pending *e = &v[(*n)++];
        e->row.state = DG_TOOL_CALL_PENDING;
        e->call_id = dg_store_col_dup(s, 0);
        e->fingerprint = dg_store_col_dup(s, 1);
        e->row.channel_id = dg_store_col_dup(s, 2);
        e->row.origin_channel_id = dg_store_col_dup(s, 3);
        e->row.summary_path = dg_store_col_dup(s, 4);
        e->row.initiator = dg_store_col_dup(s, 5);
        if (!e->call_id || !e->fingerprint || !e->row.origin_channel_id ||
            (!dg_col_null(s, 2) && !e->row.channel_id) ||
            (!dg_col_null(s, 4) && !e->row.summary_path) ||
            (!dg_col_null(s, 5) && !e->row.initiator))
            rc = DG_ERR_NOMEM;
    }
    if (rc == DG_OK && *n < max && step != DG_DONE)
        rc = DG_ERR_IO;
    dg_reset(s);
    if (rc != DG_OK) {
        dg_tool_call_pending_free(v, *n);
        *n = 0;
        return rc;
    }
    *out = v;
    return DG_OK;
}

static const char SQL_FORGET[] = "DELETE FROM tool_calls WHERE tool = ? AND call_id = ? AND"
                                 " fingerprint = ? AND state = 'pending'";

int dg_store_tool_call_forget(dg_store *st, const char *tool, const char *call_id,
                              const char *fingerprint)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_FORGET);
    if (!s)
        return DG_ERR_IO;
    bind_key(s, tool, call_id, fingerprint);
    return dg_store_run(s) == DG_OK ? DG_OK : DG_ERR_IO;
}
