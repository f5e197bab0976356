/*
 * store_transitions.c -- SQL of the turn transitions log (schema v10):
 * store_transitions.h.
 */
#include "store_transitions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_db.h"
#include "store_int.h"

/* Migration v9 -> v10: one row per turn-state write with its
 * cause, newest DG_TRANSITIONS_KEEP per (channel, scope). */
const char dg_schema_v10_transitions[] =
    "CREATE TABLE turn_transitions ("
    "  id INTEGER PRIMARY KEY,"
    "  channel_id TEXT NOT NULL,"
    "  scope TEXT NOT NULL,"
    "  at_ms INTEGER NOT NULL,"
    "  cause TEXT NOT NULL,"
    "  speaker_before TEXT,"
    "  speaker_after TEXT,"
    "  state TEXT NOT NULL,"
    "  passed TEXT NOT NULL,"
    "  agent_msgs INTEGER NOT NULL"
    ");"
    "CREATE INDEX turn_transitions_scope ON turn_transitions(channel_id, scope, id);";

/*
 * Migration v12 -> v13: a transition a message caused is kept
 * in that message's dedup mark (t_* columns of its turn_ledger row), which
 * the same ingest has just written next to the scope's state row: logging
 * it costs no page of its own. turn_transitions keeps the others (run
 * ends, timeouts, admin commands) and, when marks are pruned, the
 * transitions they carried. ord orders both kinds: the time in thousandths
 * of a millisecond, strictly increasing per store (rows from before v13
 * keep their id, below any).
 */
const char dg_schema_v13_marked_transitions[] =
    "ALTER TABLE turn_ledger ADD COLUMN t_scope TEXT;"
    "ALTER TABLE turn_ledger ADD COLUMN t_ord INTEGER;"
    "ALTER TABLE turn_ledger ADD COLUMN t_cause TEXT;"
    "ALTER TABLE turn_ledger ADD COLUMN t_before TEXT;"
    "ALTER TABLE turn_ledger ADD COLUMN t_after TEXT;"
    "ALTER TABLE turn_ledger ADD COLUMN t_state TEXT;"
    "ALTER TABLE turn_ledger ADD COLUMN t_passed TEXT;"
    "ALTER TABLE turn_ledger ADD COLUMN t_agent_msgs INTEGER;"
    "ALTER TABLE turn_transitions ADD COLUMN ord INTEGER;"
    "UPDATE turn_transitions SET ord = id;"
    "DROP INDEX turn_transitions_scope;"
    "CREATE INDEX turn_transitions_scope ON turn_transitions(channel_id, scope, ord);";

void dg_transitions_free(dg_transition *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].scope);
        free(v[i].cause);
        free(v[i].speaker_before);
        free(v[i].speaker_after);
        free(v[i].state);
        free(v[i].passed);
    }
    free(v);
}

/* ?3 .. ?10 as SQL_MARK's (bind_fields); ?2 the time. */
static const char SQL_ADD[] =
    "INSERT INTO turn_transitions (channel_id, scope, at_ms, cause, speaker_before,"
    " speaker_after, state, passed, agent_msgs, ord)"
    " VALUES (?1, ?3, ?2, ?5, ?6, ?7, ?8, ?9, ?10, ?4)";
static const char SQL_PRUNE[] =
    "DELETE FROM turn_transitions WHERE channel_id = ?1 AND scope = ?2 AND ord <="
    " (SELECT ord FROM turn_transitions WHERE channel_id = ?1 AND scope = ?2"
    "  ORDER BY ord DESC LIMIT 1 OFFSET ?3)";
/* Into the mark of the message (k < '~': never a state row). */
static const char SQL_MARK[] =
    "UPDATE turn_ledger SET t_scope = ?3, t_ord = ?4, t_cause = ?5, t_before = ?6,"
    " t_after = ?7, t_state = ?8, t_passed = ?9, t_agent_msgs = ?10"
    " WHERE channel_id = ?1 AND k = ?2 AND k < '~'";

/* The next ord of this store for a transition at at_ms: at_ms in
 * thousandths, strictly above the last one it handed out (deterministic for
 * the same sequence of times, so a replay writes the same rows). */
int64_t dg_store_next_ord(dg_store *st, int64_t at_ms)
{
    int64_t ord = at_ms > 0 && at_ms < INT64_MAX / 1000 ? at_ms * 1000 : 0;
    int64_t floor = st->last_ord > st->seen_ord ? st->last_ord : st->seen_ord;
    st->last_ord = ord > floor ? ord : floor + 1;
    return st->last_ord;
}

void dg_store_saw_ord(dg_store *st, int64_t ord)
{
    if (ord > st->seen_ord)
        st->seen_ord = ord;
}

/* The cause as the mark of message_id keeps it (dg_store_mark_transition). */
static const char *mark_cause(const char *cause, const char *message_id, char *buf, size_t len)
{
    static const char head[] = "message ", sep[] = " from ";
    size_t n = message_id ? strlen(message_id) : 0;
    if (!cause || !n || strncmp(cause, head, sizeof head - 1) ||
        strncmp(cause + sizeof head - 1, message_id, n) ||
        strncmp(cause + sizeof head - 1 + n, sep, sizeof sep - 1))
        return cause;
    const char *tail = cause + sizeof head - 1 + n + sizeof sep - 1;
    size_t tail_len = strlen(tail);
    if (tail_len + 1 >= len)
        return cause;
    buf[0] = '~';
    memcpy(buf + 1, tail, tail_len + 1);
    return buf;
}

void dg_store_mark_transition(const dg_transition *t, char *buf, size_t len, dg_transition *out)
{
    *out = *t;
    out->cause = (char *)mark_cause(t->cause, t->message_id, buf, len);
    if (t->scope && strcmp(t->scope, "conversation") == 0)
        out->scope = NULL;
    if (t->state && strcmp(t->state, "speaking") == 0)
        out->state = NULL;
}

/* Bind the fields of t as ?3 .. ?10 of SQL_MARK, SQL_ADD and the pending
 * mark's insert (borrowed: all step at once). */
void dg_store_transition_bind(dg_stmt *s, const dg_transition *t, int64_t ord)
{
    dg_bind_text_borrowed(s, 3, t->scope);
    dg_bind_int64(s, 4, ord);
    dg_bind_text_borrowed(s, 5, t->cause);
    dg_bind_text_borrowed(s, 6, t->speaker_before);
    dg_bind_text_borrowed(s, 7, t->speaker_after);
    dg_bind_text_borrowed(s, 8, t->state);
    dg_bind_text_borrowed(s, 9, t->passed ? t->passed : "");
    dg_bind_int64(s, 10, t->agent_msgs);
}

int dg_store_transition_add(dg_store *st, const char *channel_id, const dg_transition *t)
{
    DG_ASSERT_IN_TXN(st);
    if (!t->scope || !t->cause || !t->state)
        return DG_ERR_INVALID; /* the log's columns are NOT NULL; a mark's NULL means the usual */
    int64_t ord = dg_store_next_ord(st, t->at_ms);
    int attached = dg_store_turns_pending_attach(st, channel_id, t, ord);
    if (attached)
        return attached > 0 ? DG_OK : attached; /* written with the mark, at commit */
    if ((attached = dg_store_turns_pending_flush(st)) != DG_OK)
        return attached;
    dg_stmt *s;
    if (t->message_id && *t->message_id) {
        if (!(s = dg_store_stmt(st, SQL_MARK)))
            return DG_ERR_IO;
        dg_bind_text_borrowed(s, 1, channel_id);
        dg_bind_text_borrowed(s, 2, t->message_id);
        char kept[256];
        dg_transition m;
        dg_store_mark_transition(t, kept, sizeof kept, &m);
        dg_store_transition_bind(s, &m, ord);
        int rc = dg_step(s);
        int64_t marked = rc == DG_DONE ? dg_changes(s) : 0;
        dg_reset(s);
        if (rc != DG_DONE)
            return DG_ERR_IO;
        if (marked)
            return DG_OK; /* bounded with the marks: pruned with them */
    }
    if (!(s = dg_store_stmt(st, SQL_ADD)))
        return DG_ERR_IO;
    dg_bind_text_borrowed(s, 1, channel_id);
    dg_bind_int64(s, 2, t->at_ms);
    dg_store_transition_bind(s, t, ord);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    if (!(s = dg_store_stmt(st, SQL_PRUNE)))
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_store_bind_text(s, 2, t->scope);
    dg_bind_int64(s, 3, DG_TRANSITIONS_KEEP);
    return dg_store_run(s);
}

/* A mark's transition as the engine gave it (dg_store_mark_transition). */
#define MARK_CAUSE                                                                                 \
    "CASE WHEN substr(t_cause, 1, 1) = '~' THEN 'message ' || k || ' from ' ||"                    \
    " substr(t_cause, 2) ELSE t_cause END"
#define MARK_SCOPE "COALESCE(t_scope, 'conversation')"
#define MARK_STATE "COALESCE(t_state, 'speaking')"

/* Marks with a transition, and the log's own rows, newest first. */
static const char SQL_LIST[] =
    "SELECT at_ms, scope, cause, speaker_before, speaker_after, state, passed, agent_msgs"
    " FROM (SELECT at_ms, " MARK_SCOPE " AS scope, " MARK_CAUSE " AS cause,"
    "  t_before AS speaker_before, t_after AS speaker_after, " MARK_STATE " AS state,"
    "  t_passed AS passed, t_agent_msgs AS agent_msgs, t_ord AS ord FROM turn_ledger"
    "  WHERE channel_id = ?1 AND k < '~' AND t_cause IS NOT NULL"
    "  AND (CAST(?2 AS TEXT) IS NULL OR " MARK_SCOPE " = ?2)"
    " UNION ALL"
    " SELECT at_ms, scope, cause, speaker_before, speaker_after, state, passed, agent_msgs, ord"
    "  FROM turn_transitions WHERE channel_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR scope = ?2))"
    " AS u ORDER BY ord DESC LIMIT ?3";

/* Before marks older than ?1 go: what they carried moves to the log,
 * which then keeps the newest ?2 per scope again. */
static const char SQL_RESCUE[] =
    "INSERT INTO turn_transitions (channel_id, scope, at_ms, cause, speaker_before,"
    " speaker_after, state, passed, agent_msgs, ord)"
    " SELECT channel_id, " MARK_SCOPE ", at_ms, " MARK_CAUSE ", t_before, t_after, " MARK_STATE
    ", t_passed, t_agent_msgs, t_ord FROM turn_ledger WHERE k < '~' AND at_ms < ?1"
    " AND t_cause IS NOT NULL";
static const char SQL_TRIM[] =
    "DELETE FROM turn_transitions WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER"
    " (PARTITION BY channel_id, scope ORDER BY ord DESC) AS n FROM turn_transitions) AS r"
    " WHERE n > ?1)";

int dg_store_transitions_rescue(dg_store *st, int64_t before_ms)
{
    DG_ASSERT_IN_TXN(st);
    int rc = dg_store_turns_pending_flush(st);
    if (rc != DG_OK)
        return rc;
    dg_stmt *s = dg_store_stmt(st, SQL_RESCUE);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, before_ms);
    rc = dg_step(s);
    int64_t moved = rc == DG_DONE ? dg_changes(s) : 0;
    dg_reset(s);
    if (rc != DG_DONE)
        return DG_ERR_IO;
    if (!moved)
        return DG_OK;
    if (!(s = dg_store_stmt(st, SQL_TRIM)))
        return DG_ERR_IO;
    dg_bind_int64(s, 1, DG_TRANSITIONS_KEEP);
    return dg_store_run(s);
}

int dg_store_transitions_list(dg_store *st, const char *channel_id, const char *scope, size_t max,
                              dg_transition **out, size_t *n)
{
    DG_ASSERT_IN_TXN(st);
    *out = NULL;
    *n = 0;
    int flushed = dg_store_turns_pending_flush(st);
    if (flushed != DG_OK)
        return flushed;
    dg_stmt *s = dg_store_stmt(st, SQL_LIST);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_store_bind_text(s, 2, scope);
    dg_bind_int64(s, 3, (int64_t)max);
    dg_transition *v = max ? calloc(max, sizeof *v) : NULL;
    int rc = DG_DONE, status = max && !v ? DG_ERR_NOMEM : DG_OK;
    while (status == DG_OK && *n < max && (rc = dg_step(s)) == DG_ROW) {
        dg_transition *t = &v[(*n)++];
        t->at_ms = dg_col_int64(s, 0);
        t->scope = dg_store_col_dup(s, 1);
        t->cause = dg_store_col_dup(s, 2);
        t->speaker_before = dg_store_col_dup(s, 3);
        t->speaker_after = dg_store_col_dup(s, 4);
        t->state = dg_store_col_dup(s, 5);
        t->passed = dg_store_col_dup(s, 6);
        t->agent_msgs = dg_col_int64(s, 7);
        if (!t->scope || !t->cause || !t->state || !t->passed)
            status = DG_ERR_NOMEM;
    }
    if (status == DG_OK && rc != DG_ROW && rc != DG_DONE)
        status = DG_ERR_IO;
    dg_reset(s);
    if (status != DG_OK) {
        dg_transitions_free(v, *n);
        *n = 0;
        return status;
    }
    *out = v;
    return DG_OK;
}
