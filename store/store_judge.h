/*
 * store_judge.h -- the judge's ledger (schema v20): one row per question
 * the chair asked its judge, with what it cost (tokens as the source
 * reported them, latency), where it came from and what came of it, so
 * `dirigent-ctl cost` and the status page count the judge beside the
 * agents' runs. Rows older than the outbox's retention are pruned with the
 * cost ledger (dg_store_cost_prune).
 *
 * Every function runs inside a store transaction and returns DG_OK or a
 * negative dg_status; strings passed in are borrowed.
 */
#ifndef DG_STORE_JUDGE_H
#define DG_STORE_JUDGE_H

#include <stdint.h>
#include "store.h"
#include "store_cost.h"
#include "must_check.h"

/* One judge call. */
typedef struct dg_judge_call {
    const char *channel_id; /* required */
    const char *scope;      /* required: as the cost ledger's ("~conv", ...) */
    const char *source;     /* required: "openai:<model>", the host's source */
    const char *outcome;    /* required: "chose", "ended", "fell back: <cause>" */
    const char *label;      /* the agent chosen, "nobody", or NULL */
    int64_t at_ms;
    int64_t probability_milli;     /* 0..1000; -1: no answer */
    int64_t tokens_in, tokens_out; /* 0 when not reported */
    int64_t latency_ms;
} dg_judge_call;

int dg_store_judge_call_add(dg_store *st, const dg_judge_call *c) DG_MUST_CHECK;

/* Sums of the judge calls f selects (f's fields as for the cost ledger). */
typedef struct dg_judge_totals {
    int64_t calls, tokens_in, tokens_out, latency_ms, fell_back;
} dg_judge_totals;

int dg_store_judge_sum(dg_store *st, const dg_cost_filter *f, dg_judge_totals *out) DG_MUST_CHECK;

#endif
