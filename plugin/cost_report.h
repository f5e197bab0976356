/*
 * cost_report.h -- what the agents' runs cost, read from the cost ledger
 * (store_cost.h): per channel and UTC day the runs, the model calls the
 * host reported, the turns granted, the runs claimed or swapped (model
 * calls avoided), tokens in and out, and money when the config prices
 * every model seen. One report is read once and then rendered as text
 * (dirigent-ctl cost, `!dirigent cost`), as one line (a summary) or as
 * JSON (the edges: dirigent-ctl --json, the status page).
 *
 *     dg_cost_report *r;
 *     if (dg_cost_report_load(st, &filter, cfg, &r) == DG_OK) {  // in a transaction
 *         char *text = dg_cost_report_text(r, 1900);
 *         ...
 *         free(text);
 *         dg_cost_report_free(r);
 *     }
 *
 * Money uses the config's prices (prices.<model>, per million tokens in
 * and out). It is shown only when every model that reported tokens has a
 * price; otherwise the report names the models without one. Runs whose
 * host reported no usage have no model and no tokens: they cost nothing
 * the report can see, and "model calls" reads n/a where runs went to a
 * model but none was reported.
 *
 * A loaded report owns copies of everything it shows (the filter's strings
 * and the config are not kept). Any thread; one report is not shared
 * between threads without a lock.
 */
#ifndef DG_COST_REPORT_H
#define DG_COST_REPORT_H

#include <jansson.h>
#include <stddef.h>

#include "config.h"
#include "store.h"
#include "store_cost.h"
#include "must_check.h"

typedef struct dg_cost_report dg_cost_report;

/* Read the runs f selects (every field honoured: channel, scope, window)
 * from st, inside the caller's transaction (a read one is enough). cfg
 * gives the prices; NULL: none (tokens and calls only). *out: a new
 * report, dg_cost_report_free. DG_OK, DG_ERR_NOMEM, or the store's error
 * (*out NULL). */
int dg_cost_report_load(dg_store *st, const dg_cost_filter *f, const dg_config *cfg,
                        dg_cost_report **out) DG_MUST_CHECK;

/* The report as lines of text, each ending in '\n': per channel (a header
 * line when the filter names none) one line per UTC day, then a totals
 * line, then a line naming the models without a price when some lack one;
 * "no agent runs recorded" when there are none. max_len > 0 bounds the
 * text to at most max_len bytes (e.g. 1900 for one Discord message with
 * room for its frame): day lines that do not fit are left out and one line
 * says how many; the totals line is always kept (max_len below 400 may
 * still be exceeded by it). malloc'd, the caller frees; NULL when out of
 * memory. */
char *dg_cost_report_text(const dg_cost_report *r, size_t max_len);

/* One line without a newline into buf (cut to len - 1 bytes), e.g.
 * "cost: 13 runs, 3 model calls, 10 avoided (claimed 10, swapped 0),
 * 4,210 tokens in / 310 out, $0.02". Returns buf. */
char *dg_cost_report_summary(const dg_cost_report *r, char *buf, size_t len);

/* The report as a new JSON object (the caller decrefs; NULL when out of
 * memory): {"channelId", "scope", "since", "until" (ISO UTC or null),
 * "days": [{"channelId", "day": "YYYY-MM-DD", <sums>, "models": [{"model"
 * (null: not reported), <sums>}]}], "totals": {<sums>}, "priced": bool,
 * "unpriced": [model names], "currency": "$"}; <sums> are "runs",
 * "modelCalls" (null: n/a), "granted", "claimed", "swapped", "avoided",
 * "tokensIn", "tokensOut", "cost" (a number, or null when not priced). */
json_t *dg_cost_report_json(const dg_cost_report *r);

/* The report's sums over every run it read (borrowed from r). */
const dg_cost_totals *dg_cost_report_totals(const dg_cost_report *r);

/* Free r; NULL is fine. */
void dg_cost_report_free(dg_cost_report *r);

#endif
