/*
 * ctl_cost.h -- `dirigent-ctl cost`: what the agents' runs cost, per
 * channel and UTC day, read from the store's cost ledger (cost_report.h).
 */
#ifndef DG_CTL_COST_H
#define DG_CTL_COST_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "store.h"

/* The forms --since takes, for usage and error text. */
#define DG_CTL_WHEN_FORMS                                                                          \
    "an ISO date or time in UTC (2026-12-01, 2026-12-01T09:30, 2026-12-01T09:30:00Z) or a "        \
    "span back from now (24h, 7d)"

/* WHEN as a time in ms since the epoch: "YYYY-MM-DD", "YYYY-MM-DDTHH:MM",
 * "YYYY-MM-DDTHH:MM:SS" (a space for the T, a trailing Z allowed; always
 * UTC), or "<N>h" / "<N>d" back from now_ms (N 1..87600 hours, 1..3650
 * days). 0, or -1 when s is none of these (*out_ms unchanged). */
int dg_ctl_when_parse(const char *s, int64_t now_ms, int64_t *out_ms);

/* Print the cost of the runs since since_ms (0: every run the ledger still
 * holds) in channel (NULL: every channel) from st, inside the caller's read
 * transaction: the report as text, or its JSON (json). cfg (NULL: none
 * given) prices the models. Returns the exit status: 0, or 1 after saying
 * on stderr why the store could not be read. Main thread. */
int dg_ctl_cost(dg_store *st, const dg_config *cfg, const char *channel, int64_t since_ms,
                int json);

#endif
