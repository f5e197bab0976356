/*
 * store_cost.c -- the cost ledger (store_cost.h). Plain SQL both back ends
 * run: PostgreSQL gets the same text with $N placeholders (store_pg.c).
 */
#include "store_cost.h"

#include <string.h>

#include "store_db.h"
#include "store_int.h"

/* Schema v18. The budget columns of turn_ledger are the breaker of a scope
 * (dg_turn_state.budget, .budget_until_ms), kept with the rest of its turn
 * state so a restart and a second gateway see it. */
const char dg_schema_v18_cost[] =
    "CREATE TABLE cost_runs ("
    "  session_key TEXT NOT NULL,"
    "  run_id TEXT NOT NULL,"
    "  channel_id TEXT,"
    "  scope TEXT,"
    "  agent_id TEXT,"
    "  at_ms INTEGER NOT NULL,"
    "  verdict INTEGER NOT NULL,"
    "  model_calls INTEGER NOT NULL DEFAULT 0,"
    "  tokens_in INTEGER NOT NULL DEFAULT 0,"
    "  tokens_out INTEGER NOT NULL DEFAULT 0,"
    "  model TEXT,"
    "  PRIMARY KEY (session_key, run_id)"
    ");"
    "CREATE INDEX cost_runs_by_scope ON cost_runs (channel_id, scope, at_ms);"
    "CREATE INDEX cost_runs_by_time ON cost_runs (at_ms);"
    "CREATE TABLE cost_humans ("
    "  channel_id TEXT NOT NULL,"
    "  scope TEXT NOT NULL,"
    "  at_ms INTEGER NOT NULL,"
    "  PRIMARY KEY (channel_id, scope)"
    ");"
    "ALTER TABLE turn_ledger ADD COLUMN budget INTEGER;"
    "ALTER TABLE turn_ledger ADD COLUMN budget_until_ms INTEGER;";

static const char SQL_RUN[] =
    "INSERT INTO cost_runs (session_key, run_id, channel_id, scope, agent_id, at_ms, verdict)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    " ON CONFLICT (session_key, run_id) DO UPDATE SET"
    " verdict = CASE WHEN excluded.verdict > cost_runs.verdict THEN excluded.verdict"
    "  ELSE cost_runs.verdict END,"
    " channel_id = COALESCE(cost_runs.channel_id, excluded.channel_id),"
    " scope = COALESCE(cost_runs.scope, excluded.scope),"
    " agent_id = COALESCE(cost_runs.agent_id, excluded.agent_id)";

static int valid_run(const dg_cost_run *r, int decided)
{
    if (!r || !r->session_key || !*r->session_key || !r->run_id || !*r->run_id)
        return 0;
    if (!decided)
        return 1;
    return r->channel_id && *r->channel_id && r->scope && *r->scope && r->agent_id &&
           *r->agent_id && r->verdict >= DG_COST_GRANTED && r->verdict <= DG_COST_CLAIMED;
}

int dg_store_cost_run(dg_store *st, const dg_cost_run *r)
{
    DG_ASSERT_IN_TXN(st);
    if (!valid_run(r, 1))
        return DG_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, SQL_RUN);
    if (!s)
        return DG_ERR_IO;
    dg_bind_text_borrowed(s, 1, r->session_key);
    dg_bind_text_borrowed(s, 2, r->run_id);
    dg_bind_text_borrowed(s, 3, r->channel_id);
    dg_bind_text_borrowed(s, 4, r->scope);
    dg_bind_text_borrowed(s, 5, r->agent_id);
    dg_bind_int64(s, 6, r->at_ms);
    dg_bind_int64(s, 7, r->verdict);
    return dg_store_run(s);
}

static const char SQL_USAGE[] =
    "INSERT INTO cost_runs (session_key, run_id, channel_id, scope, agent_id, at_ms, verdict,"
    " model_calls, tokens_in, tokens_out, model)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?8, ?9, ?10)"
    " ON CONFLICT (session_key, run_id) DO UPDATE SET"
    " model_calls = cost_runs.model_calls + excluded.model_calls,"
    " tokens_in = cost_runs.tokens_in + excluded.tokens_in,"
    " tokens_out = cost_runs.tokens_out + excluded.tokens_out,"
    " model = COALESCE(excluded.model, cost_runs.model),"
    " channel_id = COALESCE(cost_runs.channel_id, excluded.channel_id),"
    " scope = COALESCE(cost_runs.scope, excluded.scope),"
    " agent_id = COALESCE(cost_runs.agent_id, excluded.agent_id)";

int dg_store_cost_usage(dg_store *st, const dg_cost_run *r, const char *model, int64_t calls,
                        int64_t tokens_in, int64_t tokens_out)
{
    DG_ASSERT_IN_TXN(st);
    if (!valid_run(r, 0) || calls < 0 || tokens_in < 0 || tokens_out < 0)
        return DG_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, SQL_USAGE);
    if (!s)
        return DG_ERR_IO;
    dg_bind_text_borrowed(s, 1, r->session_key);
    dg_bind_text_borrowed(s, 2, r->run_id);
    dg_bind_text_borrowed(s, 3, r->channel_id);
    dg_bind_text_borrowed(s, 4, r->scope);
    dg_bind_text_borrowed(s, 5, r->agent_id);
    dg_bind_int64(s, 6, r->at_ms);
    dg_bind_int64(s, 7, calls);
    dg_bind_int64(s, 8, tokens_in);
    dg_bind_int64(s, 9, tokens_out);
    dg_bind_text_borrowed(s, 10, model && *model ? model : NULL);
    return dg_store_run(s);
}

/* The sums every read shares, as columns 0..8. */
#define SUMS                                                                                       \
    "COUNT(*), COALESCE(SUM(CASE WHEN verdict = 1 THEN 1 ELSE 0 END), 0),"                         \
    " COALESCE(SUM(CASE WHEN verdict = 2 THEN 1 ELSE 0 END), 0),"                                  \
    " COALESCE(SUM(CASE WHEN verdict = 3 THEN 1 ELSE 0 END), 0),"                                  \
    " COALESCE(SUM(model_calls), 0), COALESCE(SUM(tokens_in), 0),"                                 \
    " COALESCE(SUM(tokens_out), 0), COALESCE(MIN(at_ms), 0), COALESCE(MAX(at_ms), 0)"

#define WHERE_FILTER DG_COST_WHERE_FILTER

static const char SQL_SUM[] = "SELECT " SUMS " FROM cost_runs" WHERE_FILTER;

void dg_store_cost_bind_filter(dg_stmt *s, const dg_cost_filter *f)
{
    dg_bind_text_borrowed(s, 1, f->channel_id);
    dg_bind_text_borrowed(s, 2, f->scope);
    dg_bind_int64(s, 3, f->since_ms);
    if (f->until_ms > 0)
        dg_bind_int64(s, 4, f->until_ms);
    else
        dg_bind_null(s, 4);
}

static void read_sums(dg_stmt *s, int col, dg_cost_totals *t)
{
    int64_t *v[] = {&t->runs,      &t->granted,    &t->swapped,  &t->claimed, &t->model_calls,
                    &t->tokens_in, &t->tokens_out, &t->first_ms, &t->last_ms};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        *v[i] = dg_col_int64(s, col + (int)i);
}

int dg_store_cost_sum(dg_store *st, const dg_cost_filter *f, dg_cost_totals *out)
{
    DG_ASSERT_IN_TXN(st);
    memset(out, 0, sizeof *out);
    dg_stmt *s = dg_store_stmt(st, SQL_SUM);
    if (!s)
        return DG_ERR_IO;
    dg_store_cost_bind_filter(s, f);
    int rc = dg_step(s);
    if (rc == DG_ROW)
        read_sums(s, 0, out);
    dg_reset(s);
    return rc == DG_ROW ? DG_OK : DG_ERR_IO;
}

static const char SQL_ROWS[] =
    "SELECT channel_id, (at_ms / 86400000) * 86400000 AS day, COALESCE(model, ''), " SUMS
    " FROM cost_runs" WHERE_FILTER " AND channel_id IS NOT NULL"
    " GROUP BY channel_id, day, COALESCE(model, '')"
    " ORDER BY channel_id, day, COALESCE(model, '')";

int dg_store_cost_rows(dg_store *st, const dg_cost_filter *f, dg_cost_row_fn fn, void *ud)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_ROWS);
    if (!s)
        return DG_ERR_IO;
    dg_store_cost_bind_filter(s, f);
    int rc, stop = 0;
    while (!stop && (rc = dg_step(s)) == DG_ROW) {
        dg_cost_row row = {.channel_id = dg_col_text(s, 0),
                           .day_ms = dg_col_int64(s, 1),
                           .model = dg_col_text(s, 2)};
        read_sums(s, 3, &row.t);
        stop = fn(&row, ud);
    }
    dg_reset(s);
    if (stop)
        return stop;
    return rc == DG_DONE ? DG_OK : DG_ERR_IO;
}

static const char SQL_SET_HUMAN[] =
    "INSERT INTO cost_humans (channel_id, scope, at_ms) VALUES (?1, ?2, ?3)"
    " ON CONFLICT (channel_id, scope) DO UPDATE SET at_ms ="
    " CASE WHEN excluded.at_ms > cost_humans.at_ms THEN excluded.at_ms ELSE cost_humans.at_ms END";

int dg_store_cost_set_human(dg_store *st, const char *channel_id, const char *scope, int64_t at_ms)
{
    DG_ASSERT_IN_TXN(st);
    if (!channel_id || !*channel_id || !scope || !*scope)
        return DG_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, SQL_SET_HUMAN);
    if (!s)
        return DG_ERR_IO;
    dg_bind_text_borrowed(s, 1, channel_id);
    dg_bind_text_borrowed(s, 2, scope);
    dg_bind_int64(s, 3, at_ms);
    return dg_store_run(s);
}

static const char SQL_HUMAN[] =
    "SELECT at_ms FROM cost_humans WHERE channel_id = ?1 AND scope = ?2";

int dg_store_cost_human(dg_store *st, const char *channel_id, const char *scope, int64_t *at_ms)
{
    DG_ASSERT_IN_TXN(st);
    *at_ms = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_HUMAN);
    if (!s)
        return DG_ERR_IO;
    dg_bind_text_borrowed(s, 1, channel_id);
    dg_bind_text_borrowed(s, 2, scope);
    int rc = dg_step(s);
    if (rc == DG_ROW)
        *at_ms = dg_col_int64(s, 0);
    dg_reset(s);
    return rc == DG_ROW || rc == DG_DONE ? DG_OK : DG_ERR_IO;
}

static const char SQL_PRUNE_RUNS[] =
    "DELETE FROM cost_runs WHERE (session_key, run_id) IN"
    " (SELECT session_key, run_id FROM cost_runs WHERE at_ms < ?1 LIMIT ?2)";
/* The judge's calls (store_judge.h) go with the runs they decided. */
static const char SQL_PRUNE_JUDGE[] =
    "DELETE FROM judge_calls WHERE id IN (SELECT id FROM judge_calls WHERE at_ms < ?1 LIMIT ?2)";
static const char SQL_PRUNE_HUMANS[] =
    "DELETE FROM cost_humans WHERE (channel_id, scope) IN"
    " (SELECT channel_id, scope FROM cost_humans WHERE at_ms < ?1 LIMIT ?2)";

int dg_store_cost_prune(dg_store *st, int64_t before_ms, size_t max, long *removed)
{
    DG_ASSERT_IN_TXN(st);
    const char *sql[] = {SQL_PRUNE_RUNS, SQL_PRUNE_HUMANS, SQL_PRUNE_JUDGE};
    long total = 0;
    for (size_t i = 0; i < sizeof sql / sizeof *sql; i++) {
        dg_stmt *s = dg_store_stmt(st, sql[i]);
        if (!s)
            return DG_ERR_IO;
        dg_bind_int64(s, 1, before_ms);
        dg_bind_int64(s, 2, (int64_t)max);
        int rc = dg_step(s);
        if (rc == DG_DONE)
            total += dg_changes(s);
        dg_reset(s);
        if (rc != DG_DONE)
            return DG_ERR_IO;
    }
    if (removed)
        *removed = total;
    return DG_OK;
}
