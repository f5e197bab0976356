/*
 * store_saga_case.h -- the steps a discussion's creation notes on its
 * pending tool-call row (origin and name with the intent, the channel once
 * made), the unfinished ones found, and forgotten: checked by the SQLite
 * suite (store) and the PostgreSQL one (store_pg), the same statements on
 * either back end.
 */
#ifndef DG_STORE_SAGA_CASE_H
#define DG_STORE_SAGA_CASE_H

#include "store.h"

/* On an empty st. Fails the running Check test. */
void store_saga_case_run(dg_store *st);

#endif
