/*
 * store_judge.c -- the judge's ledger (store_judge.h). Plain SQL both back
 * ends run: PostgreSQL gets the same text with $N placeholders (store_pg.c).
 */
#include "store_judge.h"

#include <string.h>

#include "store_db.h"
#include "store_int.h"

/* Schema v20. */
const char dg_schema_v20_judge[] = "CREATE TABLE judge_calls ("
                                   "  id INTEGER PRIMARY KEY,"
                                   "  channel_id TEXT NOT NULL,"
                                   "  scope TEXT NOT NULL,"
                                   "  at_ms INTEGER NOT NULL,"
                                   "  source TEXT NOT NULL,"
                                   "  outcome TEXT NOT NULL,"
                                   "  label TEXT,"
                                   "  probability_milli INTEGER NOT NULL,"
                                   "  tokens_in INTEGER NOT NULL DEFAULT 0,"
                                   "  tokens_out INTEGER NOT NULL DEFAULT 0,"
                                   "  latency_ms INTEGER NOT NULL DEFAULT 0"
                                   ");"
                                   "CREATE INDEX judge_calls_by_scope ON judge_calls "
                                   "(channel_id, scope, at_ms);"
                                   "CREATE INDEX judge_calls_by_time ON judge_calls (at_ms);";

static const char SQL_ADD[] =
    "INSERT INTO judge_calls (channel_id, scope, at_ms, source, outcome, label, probability_milli,"
    " tokens_in, tokens_out, latency_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

int dg_store_judge_call_add(dg_store *st, const dg_judge_call *c)
{
    DG_ASSERT_IN_TXN(st);
    if (!c || !c->channel_id || !*c->channel_id || !c->scope || !*c->scope || !c->source ||
        !c->outcome || c->probability_milli < -1 || c->probability_milli > 1000 ||
        c->tokens_in < 0 || c->tokens_out < 0 || c->latency_ms < 0)
        return DG_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, SQL_ADD);
    if (!s)
        return DG_ERR_IO;
    dg_bind_text_borrowed(s, 1, c->channel_id);
    dg_bind_text_borrowed(s, 2, c->scope);
    dg_bind_int64(s, 3, c->at_ms);
    dg_bind_text_borrowed(s, 4, c->source);
    dg_bind_text_borrowed(s, 5, c->outcome);
    dg_bind_text_borrowed(s, 6, c->label);
    dg_bind_int64(s, 7, c->probability_milli);
    dg_bind_int64(s, 8, c->tokens_in);
    dg_bind_int64(s, 9, c->tokens_out);
    dg_bind_int64(s, 10, c->latency_ms);
    return dg_store_run(s);
}

static const char SQL_SUM[] =
    "SELECT COUNT(*), COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0),"
    " COALESCE(SUM(latency_ms), 0),"
    " COALESCE(SUM(CASE WHEN outcome LIKE 'fell back%' THEN 1 ELSE 0 END), 0)"
    " FROM judge_calls" DG_COST_WHERE_FILTER;

int dg_store_judge_sum(dg_store *st, const dg_cost_filter *f, dg_judge_totals *out)
{
    DG_ASSERT_IN_TXN(st);
    memset(out, 0, sizeof *out);
    dg_stmt *s = dg_store_stmt(st, SQL_SUM);
    if (!s)
        return DG_ERR_IO;
    dg_store_cost_bind_filter(s, f);
    int rc = dg_step(s);
    if (rc == DG_ROW) {
        out->calls = dg_col_int64(s, 0);
        out->tokens_in = dg_col_int64(s, 1);
        out->tokens_out = dg_col_int64(s, 2);
        out->latency_ms = dg_col_int64(s, 3);
        out->fell_back = dg_col_int64(s, 4);
    }
    dg_reset(s);
    return rc == DG_ROW ? DG_OK : DG_ERR_IO;
}
