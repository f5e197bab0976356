/*
 * store_cost.h -- the cost ledger (schema v18): one row per agent run in a
 * managed scope, what the turn manager decided for it and what the host
 * reported it cost, so a user can see what was spent and what was avoided,
 * and budgets can be counted from what happened rather than from memory.
 *
 * A run's verdict only ever grows (granted < swapped < claimed): a run that
 * one hook let through and a later one claimed made no model call. Usage
 * (model calls, tokens) adds up per run; a report for a run the ledger has
 * not seen yet creates its row with DG_COST_UNDECIDED. Rows older than the
 * outbox's retention are pruned with it.
 *
 * Every function runs inside a store transaction and returns DG_OK or a
 * negative dg_status; strings passed in are borrowed.
 */
#ifndef DG_STORE_COST_H
#define DG_STORE_COST_H

#include <stddef.h>
#include <stdint.h>
#include "store.h"
#include "must_check.h"

typedef enum dg_cost_verdict {
    DG_COST_UNDECIDED = 0, /* usage reported before any decision was recorded */
    DG_COST_GRANTED = 1,   /* the run went to the agent's model */
    DG_COST_SWAPPED = 2,   /* the run went to the no-reply model */
    DG_COST_CLAIMED = 3    /* the run was claimed: no model call at all */
} dg_cost_verdict;

/* One run, as the engine records its decision. */
typedef struct dg_cost_run {
    const char *session_key; /* required */
    const char *run_id;      /* required: the host's run id (or one the engine made up) */
    const char *channel_id;  /* required: the scope's channel */
    const char *scope;       /* required: the scope key within the channel ("~conv",
                              * "~thread:<root>"; store_turns_state.c) */
    const char *agent_id;    /* required */
    int64_t at_ms;           /* when the decision was made */
    dg_cost_verdict verdict;
} dg_cost_run;

/* Record (or raise) a run's verdict. A row made by an earlier usage report
 * gets the scope and agent it lacked. */
int dg_store_cost_run(dg_store *st, const dg_cost_run *r) DG_MUST_CHECK;

/* Add usage to a run: calls model calls, tokens in and out; model (may be
 * NULL: unchanged) is the model of the latest call. r's verdict is ignored;
 * a run not yet in the ledger is created undecided (channel and scope may
 * then be NULL: filled by the decision when it comes). */
int dg_store_cost_usage(dg_store *st, const dg_cost_run *r, const char *model, int64_t calls,
                        int64_t tokens_in, int64_t tokens_out) DG_MUST_CHECK;

/* Sums over a set of runs. */
typedef struct dg_cost_totals {
    int64_t runs;        /* every run recorded */
    int64_t granted;     /* went to the agent's model */
    int64_t swapped;     /* went to the no-reply model */
    int64_t claimed;     /* no model call */
    int64_t model_calls; /* as the host reported them (0 when it does not) */
    int64_t tokens_in, tokens_out;
    int64_t first_ms, last_ms; /* of the runs counted; 0 when none */
} dg_cost_totals;

/* Which runs to sum. */
typedef struct dg_cost_filter {
    const char *channel_id; /* NULL: every channel */
    const char *scope;      /* NULL: every scope of the channel */
    int64_t since_ms;       /* runs at or after; 0: from the start */
    int64_t until_ms;       /* runs before; 0: no end */
} dg_cost_filter;

int dg_store_cost_sum(dg_store *st, const dg_cost_filter *f, dg_cost_totals *out) DG_MUST_CHECK;

/* One line of a breakdown: a channel's runs of one UTC day and one model
 * ("" when the host reported none). */
typedef struct dg_cost_row {
    const char *channel_id; /* borrowed for the callback's duration */
    int64_t day_ms;         /* the day's start, UTC */
    const char *model;
    dg_cost_totals t;
} dg_cost_row;

/* Called once per row, in channel, day, model order; a non-zero return
 * stops the walk and is returned. Runs in the caller's thread. */
typedef int (*dg_cost_row_fn)(const dg_cost_row *row, void *ud);

/* The breakdown of the runs f selects, per channel, UTC day and model. */
int dg_store_cost_rows(dg_store *st, const dg_cost_filter *f, dg_cost_row_fn fn,
                       void *ud) DG_MUST_CHECK;

/* The latest human message of a scope: per-human-message budgets count
 * from it. */
int dg_store_cost_set_human(dg_store *st, const char *channel_id, const char *scope,
                            int64_t at_ms) DG_MUST_CHECK;

/* *at_ms: the scope's latest human message, 0 when none was recorded. */
int dg_store_cost_human(dg_store *st, const char *channel_id, const char *scope,
                        int64_t *at_ms) DG_MUST_CHECK;

/* Delete at most max runs decided before before_ms, and at most max human
 * marks as old; *removed (may be NULL) gets how many rows went. */
int dg_store_cost_prune(dg_store *st, int64_t before_ms, size_t max, long *removed) DG_MUST_CHECK;

#endif
