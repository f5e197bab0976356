/*
 * store_cost_case.h -- the cost ledger's checks, run by the SQLite suite
 * (store) and the PostgreSQL one (store_pg) on a store each opened.
 */
#ifndef DG_STORE_COST_CASE_H
#define DG_STORE_COST_CASE_H

#include "store.h"

/* Records runs and usage in st (empty) and checks the sums, the per-day
 * breakdown, the human marks and pruning; fails the running Check test. */
void store_cost_case_run(dg_store *st);

#endif
