/*
 * store_transitions.c -- SQL of the turn transitions log (schema v10):
 * store_transitions.h.
 */
#include "store_transitions.h"

#include <stdlib.h>
#include <string.h>

#include "openclaw/plugin.h"
#include "store_db.h"
#include "store_internal.h"

/* Migration v9 -> v10 (issue 16): one row per turn-state write with its
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

static const char SQL_ADD[] =
    "INSERT INTO turn_transitions (channel_id, scope, at_ms, cause, speaker_before,"
    " speaker_after, state, passed, agent_msgs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
static const char SQL_PRUNE[] =
    "DELETE FROM turn_transitions WHERE channel_id = ?1 AND scope = ?2 AND id <="
    " (SELECT id FROM turn_transitions WHERE channel_id = ?1 AND scope = ?2"
    "  ORDER BY id DESC LIMIT 1 OFFSET ?3)";

int dg_store_transition_add(dg_store *st, const char *channel_id, const dg_transition *t)
{
    dg_stmt *s = dg_store_stmt(st, SQL_ADD);
    if (!s)
        return OC_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_store_bind_text(s, 2, t->scope);
    dg_bind_int64(s, 3, t->at_ms);
    dg_store_bind_text(s, 4, t->cause);
    dg_store_bind_text(s, 5, t->speaker_before);
    dg_store_bind_text(s, 6, t->speaker_after);
    dg_store_bind_text(s, 7, t->state);
    dg_store_bind_text(s, 8, t->passed ? t->passed : "");
    dg_bind_int64(s, 9, t->agent_msgs);
    int rc = dg_step(s);
    dg_reset(s);
    if (rc != DG_DONE)
        return OC_ERR_IO;
    if (!(s = dg_store_stmt(st, SQL_PRUNE)))
        return OC_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_store_bind_text(s, 2, t->scope);
    dg_bind_int64(s, 3, DG_TRANSITIONS_KEEP);
    rc = dg_step(s);
    dg_reset(s);
    return rc == DG_DONE ? OC_OK : OC_ERR_IO;
}

static const char SQL_LIST[] =
    "SELECT at_ms, scope, cause, speaker_before, speaker_after, state, passed, agent_msgs"
    " FROM turn_transitions WHERE channel_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR scope = ?2)"
    " ORDER BY id DESC LIMIT ?3";

int dg_store_transitions_list(dg_store *st, const char *channel_id, const char *scope,
                              size_t max, dg_transition **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_LIST);
    if (!s)
        return OC_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_store_bind_text(s, 2, scope);
    dg_bind_int64(s, 3, (int64_t)max);
    dg_transition *v = max ? calloc(max, sizeof *v) : NULL;
    int rc = DG_DONE, status = max && !v ? OC_ERR_NOMEM : OC_OK;
    while (status == OC_OK && *n < max && (rc = dg_step(s)) == DG_ROW) {
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
            status = OC_ERR_NOMEM;
    }
    if (status == OC_OK && rc != DG_ROW && rc != DG_DONE)
        status = OC_ERR_IO;
    dg_reset(s);
    if (status != OC_OK) {
        dg_transitions_free(v, *n);
        *n = 0;
        return status;
    }
    *out = v;
    return OC_OK;
}
