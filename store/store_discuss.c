/*
 * store_discuss.c -- all SQL of the discussion area, and its schema (v4, v7;
 * v19's platform column is store_platform.c's).
 */
#include "store_discuss.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/*
 * Migration v3 -> v4. status is 'active' or 'closed' (a "completed"
 * discussion is the instant between the two and is not stored); a closed
 * row always has completed_at_ms and summary_path, an active one neither.
 */
const char dg_schema_v4_discuss[] =
    "CREATE TABLE discussions ("
    "  id INTEGER PRIMARY KEY,"
    "  mode TEXT NOT NULL DEFAULT 'discussion' CHECK (mode = 'discussion'),"
    "  discussion_channel_id TEXT NOT NULL UNIQUE,"
    "  origin_channel_id TEXT NOT NULL,"
    "  initiator_agent_id TEXT NOT NULL,"
    "  initiator_session_key TEXT NOT NULL,"
    "  initiator_session_id TEXT NOT NULL,"
    "  initiator_workspace TEXT NOT NULL,"
    "  discuss_guide TEXT NOT NULL,"
    "  status TEXT NOT NULL CHECK (status IN ('active', 'closed')),"
    "  created_at_ms INTEGER NOT NULL,"
    "  completed_at_ms INTEGER,"
    "  summary_path TEXT,"
    "  CHECK ((status = 'active' AND completed_at_ms IS NULL AND summary_path IS NULL) OR"
    "         (status = 'closed' AND completed_at_ms IS NOT NULL AND summary_path IS NOT NULL))"
    ");"
    "CREATE TABLE discussion_members ("
    "  discussion_id INTEGER NOT NULL REFERENCES discussions(id) ON DELETE CASCADE,"
    "  position INTEGER NOT NULL,"
    "  agent_id TEXT NOT NULL,"
    "  role TEXT NOT NULL CHECK (role IN ('initiator', 'participant')),"
    "  PRIMARY KEY (discussion_id, position),"
    "  UNIQUE (discussion_id, agent_id)"
    ");"
    "CREATE TABLE discussion_overrides ("
    "  discussion_id INTEGER NOT NULL REFERENCES discussions(id) ON DELETE CASCADE,"
    "  session_key TEXT NOT NULL,"
    "  agent_id TEXT,"
    "  recorded_at_ms INTEGER NOT NULL,"
    "  applied_at_ms INTEGER,"
    "  PRIMARY KEY (discussion_id, session_key)"
    ");"
    "CREATE INDEX discussion_overrides_pending ON discussion_overrides(recorded_at_ms)"
    "  WHERE applied_at_ms IS NULL;"
    "CREATE TABLE discussion_closed_notices ("
    "  channel_id TEXT NOT NULL,"
    "  message_id TEXT NOT NULL,"
    "  at_ms INTEGER NOT NULL,"
    "  noticed INTEGER NOT NULL CHECK (noticed IN (0, 1)),"
    "  PRIMARY KEY (channel_id, message_id)"
    ");"
    "CREATE INDEX discussion_closed_notices_last ON discussion_closed_notices"
    "  (channel_id, noticed, at_ms);";

/*
 * Migration v6 -> v7: the discussion timers and how a
 * discussion ended. last_activity_ms: the latest message of a human or an
 * agent in the channel (NULL: none since the kickoff, created_at_ms
 * counts); reminded_for_ms: the last_activity value the quiet-time
 * reminder (timeout.md) was sent for (once per quiet period);
 * wrapup_at_ms: when the lifetime's wrap-up request was queued;
 * end_status: 'completed' / 'expired' / 'closed-by-admin' once closed
 * (NULL on rows closed before v7: 'completed'). The v4 CHECK wants a
 * summary_path on every closed row; an expired discussion has none and
 * stores '' there (read back as NULL).
 */
const char dg_schema_v7_discuss_timers[] =
    "ALTER TABLE discussions ADD COLUMN last_activity_ms INTEGER;"
    "ALTER TABLE discussions ADD COLUMN reminded_for_ms INTEGER;"
    "ALTER TABLE discussions ADD COLUMN wrapup_at_ms INTEGER;"
    "ALTER TABLE discussions ADD COLUMN end_status TEXT"
    "  CHECK (end_status IS NULL OR end_status IN ('completed', 'expired', 'closed-by-admin'));";

static int sql_fail(void)
{
    return DG_ERR_IO;
}

static dg_discussion_status status_of(const char *s)
{
    if (s && strcmp(s, "active") == 0)
        return DG_DISCUSSION_ACTIVE;
    if (s && strcmp(s, "closed") == 0)
        return DG_DISCUSSION_CLOSED;
    return DG_DISCUSSION_NONE;
}

static const char SQL_INSERT[] =
    "INSERT INTO discussions (discussion_channel_id, origin_channel_id, initiator_agent_id,"
    " initiator_session_key, initiator_session_id, initiator_workspace, discuss_guide,"
    " status, created_at_ms, platform) VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?)"
    " ON CONFLICT DO NOTHING RETURNING id";
static const char SQL_INSERT_MEMBER[] =
    "INSERT INTO discussion_members (discussion_id, position, agent_id, role)"
    " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING";

int dg_store_discussion_insert(dg_store *st, const dg_discussion *d, int64_t *id)
{
    DG_ASSERT_IN_TXN(st);
    const char *platform = dg_store_platform_of(d->platform);
    if (!platform)
        return DG_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, SQL_INSERT);
    if (!s)
        return sql_fail();
    dg_store_bind_text(s, 1, d->discussion_channel_id);
    dg_store_bind_text(s, 2, d->origin_channel_id);
    dg_store_bind_text(s, 3, d->initiator_agent_id);
    dg_store_bind_text(s, 4, d->initiator_session_key);
    dg_store_bind_text(s, 5, d->initiator_session_id);
    dg_store_bind_text(s, 6, d->initiator_workspace);
    dg_store_bind_text(s, 7, d->discuss_guide);
    dg_bind_int64(s, 8, d->created_at_ms);
    dg_bind_text_borrowed(s, 9, platform);
    int rc = dg_step(s);
    int64_t rowid = rc == DG_ROW ? dg_col_int64(s, 0) : 0;
    dg_reset(s);
    if (rc == DG_DONE) /* no row returned: that channel has a discussion */
        return DG_ERR_CONFLICT;
    if (rc != DG_ROW)
        return sql_fail();
    for (size_t i = 0; i < d->n_turn_order; i++) {
        s = dg_store_stmt(st, SQL_INSERT_MEMBER);
        if (!s)
            return sql_fail();
        dg_bind_int64(s, 1, rowid);
        dg_bind_int64(s, 2, i);
        dg_store_bind_text(s, 3, d->turn_order[i]);
        dg_store_bind_text(s, 4, i == 0 ? "initiator" : "participant");
        rc = dg_step(s);
        long added = rc == DG_DONE ? dg_changes(s) : 0;
        dg_reset(s);
        if (rc != DG_DONE)
            return sql_fail();
        if (added == 0)
            return DG_ERR_INVALID; /* the same agent twice: the caller dedups */
    }
    if (id)
        *id = rowid;
    return DG_OK;
}

static const char SQL_BY_CHANNEL[] =
    "SELECT id, discussion_channel_id, origin_channel_id, initiator_agent_id,"
    " initiator_session_key, initiator_session_id, initiator_workspace, discuss_guide,"
    " status, created_at_ms, completed_at_ms, summary_path, last_activity_ms,"
    " reminded_for_ms, wrapup_at_ms, end_status, platform"
    " FROM discussions WHERE discussion_channel_id = ?";
static const char SQL_MEMBERS[] =
    "SELECT agent_id, role FROM discussion_members WHERE discussion_id = ? ORDER BY position";

static int append_str(char ***arr, size_t *n, const char *s)
{
    char **na = realloc(*arr, (*n + 1) * sizeof *na);
    if (!na)
        return DG_ERR_NOMEM;
    *arr = na;
    if (!(na[*n] = strdup(s)))
        return DG_ERR_NOMEM;
    (*n)++;
    return DG_OK;
}

static int load_members(dg_store *st, dg_discussion *d)
{
    dg_stmt *s = dg_store_stmt(st, SQL_MEMBERS);
    if (!s)
        return sql_fail();
    dg_bind_int64(s, 1, d->id);
    int rc, status = DG_OK;
    while (status == DG_OK && (rc = dg_step(s)) == DG_ROW) {
        const char *agent = dg_col_text(s, 0);
        const char *role = dg_col_text(s, 1);
        status = append_str(&d->turn_order, &d->n_turn_order, agent ? agent : "");
        if (status == DG_OK && role && strcmp(role, "participant") == 0)
            status = append_str(&d->participants, &d->n_participants, agent ? agent : "");
    }
    if (status == DG_OK && rc != DG_DONE)
        status = sql_fail();
    dg_reset(s);
    return status;
}

static const char SQL_PROBE[] =
    "SELECT id, status FROM discussions WHERE discussion_channel_id = ?";

int dg_store_discussion_probe(dg_store *st, const char *channel_id, int64_t *id,
                              dg_discussion_status *status)
{
    DG_ASSERT_IN_TXN(st);
    if (id)
        *id = 0;
    *status = DG_DISCUSSION_NONE;
    dg_stmt *s = dg_store_stmt(st, SQL_PROBE);
    if (!s)
        return sql_fail();
    dg_store_bind_text(s, 1, channel_id);
    int rc = dg_step(s);
    if (rc == DG_ROW) {
        if (id)
            *id = dg_col_int64(s, 0);
        *status = status_of(dg_col_text(s, 1));
    }
    dg_reset(s);
    return (rc == DG_ROW || rc == DG_DONE) ? DG_OK : sql_fail();
}

int dg_store_discussion_by_channel(dg_store *st, const char *channel_id, dg_discussion *out)
{
    DG_ASSERT_IN_TXN(st);
    memset(out, 0, sizeof *out);
    dg_stmt *s = dg_store_stmt(st, SQL_BY_CHANNEL);
    if (!s)
        return sql_fail();
    dg_store_bind_text(s, 1, channel_id);
    int rc = dg_step(s);
    if (rc == DG_DONE) {
        dg_reset(s);
        return DG_ERR_NOT_FOUND;
    }
    if (rc != DG_ROW) {
        dg_reset(s);
        return sql_fail();
    }
    dg_discussion_status stt = status_of(dg_col_text(s, 8));
    out->id = dg_col_int64(s, 0);
    out->discussion_channel_id = dg_store_col_dup(s, 1);
    out->origin_channel_id = dg_store_col_dup(s, 2);
    out->initiator_agent_id = dg_store_col_dup(s, 3);
    out->initiator_session_key = dg_store_col_dup(s, 4);
    out->initiator_session_id = dg_store_col_dup(s, 5);
    out->initiator_workspace = dg_store_col_dup(s, 6);
    out->discuss_guide = dg_store_col_dup(s, 7);
    out->status = stt;
    out->created_at_ms = dg_col_int64(s, 9);
    out->completed_at_ms = dg_col_null(s, 10) ? 0 : dg_col_int64(s, 10);
    out->summary_path = dg_store_col_dup(s, 11);
    out->last_activity_ms = dg_col_int64(s, 12); /* NULL reads as 0 */
    out->reminded_for_ms = dg_col_null(s, 13) ? -1 : dg_col_int64(s, 13);
    out->wrapup_at_ms = dg_col_int64(s, 14);
    const char *es = dg_col_text(s, 15);
    snprintf(out->end_status, sizeof out->end_status, "%s",
             stt != DG_DISCUSSION_CLOSED ? ""
             : es                        ? es
                                         : "completed");
    out->platform = dg_store_platform_col(dg_col_text(s, 16));
    dg_reset(s);
    int ok = out->discussion_channel_id && out->origin_channel_id && out->initiator_agent_id &&
             out->initiator_session_key && out->initiator_session_id && out->initiator_workspace &&
             out->discuss_guide && (stt != DG_DISCUSSION_CLOSED || out->summary_path);
    if (out->summary_path && !*out->summary_path) {
        free(out->summary_path); /* expired / closed by an admin without one */
        out->summary_path = NULL;
    }
    int r = ok ? load_members(st, out) : DG_ERR_NOMEM;
    if (r != DG_OK)
        dg_discussion_clear(out);
    return r;
}

static const char SQL_CLOSE[] =
    "UPDATE discussions SET status = 'closed', summary_path = ?, completed_at_ms = ?,"
    " end_status = ? WHERE id = ? AND status = 'active'";

int dg_store_discussion_close(dg_store *st, int64_t id, const char *summary_path,
                              int64_t completed_at_ms)
{
    DG_ASSERT_IN_TXN(st);
    return dg_store_discussion_close_as(st, id, summary_path, completed_at_ms, "completed");
}

int dg_store_discussion_close_as(dg_store *st, int64_t id, const char *summary_path,
                                 int64_t completed_at_ms, const char *end_status)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_CLOSE);
    if (!s)
        return sql_fail();
    dg_store_bind_text(s, 1, summary_path ? summary_path : "");
    dg_bind_int64(s, 2, completed_at_ms);
    dg_store_bind_text(s, 3, end_status);
    dg_bind_int64(s, 4, id);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    return dg_store_changes(st) == 1 ? DG_OK : DG_ERR_CONFLICT;
}

static const char SQL_OVR_ADD[] =
    "INSERT INTO discussion_overrides (discussion_id, session_key, agent_id,"
    " recorded_at_ms) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING";

int dg_store_discussion_override_add(dg_store *st, int64_t discussion_id, const char *session_key,
                                     const char *agent_id, int64_t now_ms, int *inserted)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_OVR_ADD);
    if (!s)
        return sql_fail();
    dg_bind_int64(s, 1, discussion_id);
    dg_store_bind_text(s, 2, session_key);
    dg_store_bind_text(s, 3, agent_id);
    dg_bind_int64(s, 4, now_ms);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    if (inserted)
        *inserted = dg_store_changes(st) == 1;
    return DG_OK;
}

static const char SQL_OVR_APPLIED[] = "UPDATE discussion_overrides SET applied_at_ms = ?"
                                      " WHERE discussion_id = ? AND session_key = ?";

int dg_store_discussion_override_applied(dg_store *st, int64_t discussion_id,
                                         const char *session_key, int64_t now_ms)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_OVR_APPLIED);
    if (!s)
        return sql_fail();
    dg_bind_int64(s, 1, now_ms);
    dg_bind_int64(s, 2, discussion_id);
    dg_store_bind_text(s, 3, session_key);
    return dg_store_run(s);
}

static const char SQL_OVR_STATE[] = "SELECT applied_at_ms IS NOT NULL FROM discussion_overrides"
                                    " WHERE discussion_id = ? AND session_key = ?";

int dg_store_discussion_override_state(dg_store *st, int64_t discussion_id, const char *session_key,
                                       int *state)
{
    DG_ASSERT_IN_TXN(st);
    *state = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_OVR_STATE);
    if (!s)
        return sql_fail();
    dg_bind_int64(s, 1, discussion_id);
    dg_store_bind_text(s, 2, session_key);
    int rc = dg_step(s);
    if (rc == DG_ROW)
        *state = dg_col_int(s, 0) ? 2 : 1;
    dg_reset(s);
    return (rc == DG_ROW || rc == DG_DONE) ? DG_OK : sql_fail();
}

static const char SQL_OVR_PENDING[] =
    "SELECT discussion_id, session_key FROM discussion_overrides"
    " WHERE applied_at_ms IS NULL ORDER BY recorded_at_ms, discussion_id, session_key"
    " LIMIT ?";

int dg_store_discussion_overrides_pending(dg_store *st, size_t max, char ***keys, int64_t **ids,
                                          size_t *n)
{
    DG_ASSERT_IN_TXN(st);
    *keys = NULL;
    *ids = NULL;
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_OVR_PENDING);
    if (!s)
        return sql_fail();
    dg_bind_int64(s, 1, max);
    int rc, status = DG_OK;
    while (status == DG_OK && (rc = dg_step(s)) == DG_ROW) {
        int64_t *ni = realloc(*ids, (*n + 1) * sizeof *ni);
        if (!ni) {
            status = DG_ERR_NOMEM;
            break;
        }
        *ids = ni;
        ni[*n] = dg_col_int64(s, 0);
        const char *k = dg_col_text(s, 1);
        status = append_str(keys, n, k ? k : "");
    }
    if (status == DG_OK && rc != DG_DONE)
        status = sql_fail();
    dg_reset(s);
    if (status != DG_OK) {
        for (size_t i = 0; i < *n; i++)
            free((*keys)[i]);
        free(*keys);
        free(*ids);
        *keys = NULL;
        *ids = NULL;
        *n = 0;
    }
    return status;
}

static const char SQL_NOTICE_SEEN[] =
    "SELECT 1 FROM discussion_closed_notices WHERE channel_id = ? AND message_id = ?";
static const char SQL_NOTICE_LAST[] =
    "SELECT MAX(at_ms) FROM discussion_closed_notices WHERE channel_id = ? AND noticed = 1";
static const char SQL_NOTICE_ADD[] =
    "INSERT INTO discussion_closed_notices (channel_id, message_id, at_ms, noticed)"
    " VALUES (?, ?, ?, ?)";

/* By the primary key, not SQLite's rowid (PostgreSQL has none). */
static const char SQL_NOTICE_PRUNE[] =
    "DELETE FROM discussion_closed_notices WHERE (channel_id, message_id) IN (SELECT"
    " channel_id, message_id FROM discussion_closed_notices WHERE at_ms < ? LIMIT ?)";

int dg_store_discussion_notices_prune(dg_store *st, int64_t before_ms, int limit, long *removed)
{
    DG_ASSERT_IN_TXN(st);
    if (removed)
        *removed = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_NOTICE_PRUNE);
    if (!s)
        return sql_fail();
    dg_bind_int64(s, 1, before_ms);
    dg_bind_int64(s, 2, limit);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    if (removed)
        *removed = (long)dg_store_changes(st);
    return DG_OK;
}

int dg_store_discussion_notice_claim(dg_store *st, const char *channel_id, const char *message_id,
                                     int64_t now_ms, int64_t cooldown_ms, int *claimed)
{
    DG_ASSERT_IN_TXN(st);
    *claimed = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_NOTICE_SEEN);
    if (!s)
        return sql_fail();
    dg_store_bind_text(s, 1, channel_id);
    dg_store_bind_text(s, 2, message_id);
    int rc = dg_step(s);
    dg_reset(s);
    if (rc == DG_ROW)
        return DG_OK; /* this message was already handled */
    if (rc != DG_DONE)
        return sql_fail();

    int due = 1;
    if (cooldown_ms > 0) {
        s = dg_store_stmt(st, SQL_NOTICE_LAST);
        if (!s)
            return sql_fail();
        dg_store_bind_text(s, 1, channel_id);
        rc = dg_step(s);
        if (rc == DG_ROW && !dg_col_null(s, 0))
            due = now_ms - dg_col_int64(s, 0) >= cooldown_ms;
        dg_reset(s);
        if (rc != DG_ROW)
            return sql_fail();
    }
    s = dg_store_stmt(st, SQL_NOTICE_ADD);
    if (!s)
        return sql_fail();
    dg_store_bind_text(s, 1, channel_id);
    dg_store_bind_text(s, 2, message_id);
    dg_bind_int64(s, 3, now_ms);
    dg_bind_int64(s, 4, due);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    *claimed = due;
    return DG_OK;
}

/* ---- timers ------------------------------------------------------------------ */

static const char SQL_TOUCH[] = "UPDATE discussions SET last_activity_ms = ?"
                                " WHERE discussion_channel_id = ? AND status = 'active'";

int dg_store_discussion_touch(dg_store *st, const char *channel_id, int64_t now_ms)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_TOUCH);
    if (!s)
        return sql_fail();
    dg_bind_int64(s, 1, now_ms);
    dg_store_bind_text(s, 2, channel_id);
    return dg_store_run(s);
}

/* ?1 now, ?2 reminder ms (0 off), ?3 lifetime ms (0 off), ?4 limit. A
 * wrap-up asked for without a lifetime (a budget reached) expires after
 * DG_DISCUSS_WRAPUP_GRACE_MS. */
#define STR_(x) #x
#define STR(x) STR_(x)
static const char SQL_DUE[] =
    "SELECT discussion_channel_id FROM discussions WHERE status = 'active' AND ("
    " (?2 > 0 AND COALESCE(last_activity_ms, created_at_ms) + ?2 <= ?1 AND"
    "  (reminded_for_ms IS NULL OR reminded_for_ms <> COALESCE(last_activity_ms, created_at_ms)))"
    " OR (?3 > 0 AND wrapup_at_ms IS NULL AND created_at_ms + ?3 <= ?1)"
    " OR (wrapup_at_ms IS NOT NULL AND wrapup_at_ms +"
    "  (CASE WHEN ?3 > 0 THEN ?3 ELSE " STR(DG_DISCUSS_WRAPUP_GRACE_MS) " END) <= ?1))"
                                                                        " ORDER BY id LIMIT ?4";
#undef STR
#undef STR_

int dg_store_discussion_timers_due(dg_store *st, int64_t now_ms, int64_t reminder_ms,
                                   int64_t lifetime_ms, size_t max, char ***channels, size_t *n)
{
    DG_ASSERT_IN_TXN(st);
    *channels = NULL;
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_DUE);
    if (!s)
        return sql_fail();
    dg_bind_int64(s, 1, now_ms);
    dg_bind_int64(s, 2, reminder_ms);
    dg_bind_int64(s, 3, lifetime_ms);
    dg_bind_int64(s, 4, max);
    int rc, status = DG_OK;
    while (status == DG_OK && (rc = dg_step(s)) == DG_ROW) {
        const char *ch = dg_col_text(s, 0);
        status = append_str(channels, n, ch ? ch : "");
    }
    if (status == DG_OK && rc != DG_DONE)
        status = sql_fail();
    dg_reset(s);
    if (status != DG_OK) {
        for (size_t i = 0; i < *n; i++)
            free((*channels)[i]);
        free(*channels);
        *channels = NULL;
        *n = 0;
    }
    return status;
}

static const char SQL_REMINDED[] =
    "UPDATE discussions SET reminded_for_ms = ? WHERE id = ? AND status = 'active'";
static const char SQL_WRAPUP[] =
    "UPDATE discussions SET wrapup_at_ms = ? WHERE id = ? AND status = 'active'"
    " AND wrapup_at_ms IS NULL";

static int update_one(dg_store *st, const char *sql, int64_t v, int64_t id)
{
    dg_stmt *s = dg_store_stmt(st, sql);
    if (!s)
        return sql_fail();
    dg_bind_int64(s, 1, v);
    dg_bind_int64(s, 2, id);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    return dg_store_changes(st) == 1 ? DG_OK : DG_ERR_CONFLICT;
}

int dg_store_discussion_mark_reminded(dg_store *st, int64_t id, int64_t activity_ms)
{
    DG_ASSERT_IN_TXN(st);
    return update_one(st, SQL_REMINDED, activity_ms, id);
}

int dg_store_discussion_mark_wrapup(dg_store *st, int64_t id, int64_t now_ms)
{
    DG_ASSERT_IN_TXN(st);
    return update_one(st, SQL_WRAPUP, now_ms, id);
}
