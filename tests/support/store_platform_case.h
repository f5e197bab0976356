/*
 * store_platform_case.h -- the chat platform of the store's rows (schema
 * v19), checked by the SQLite suite (store) and the PostgreSQL one
 * (store_pg) on a store each opened: the same statements, either back end.
 */
#ifndef DG_STORE_PLATFORM_CASE_H
#define DG_STORE_PLATFORM_CASE_H

#include "store.h"

/* SQL (both back ends) putting rows into a store at schema v18, as a v18
 * dirigent wrote them: two outbox rows of channel 100 (one pending, one
 * sent), an active discussion in channel 300 with two members, and the
 * turn channel row of 300. */
extern const char store_platform_v18_rows[];

/* st holds store_platform_v18_rows and was migrated to the current
 * version: every old row is Discord's (each reader says so, and so does
 * every row of the three tables), no outbox row has a thread, and a Slack
 * row with a thread can be added to the migrated table. Fails the running
 * Check test. */
void store_platform_case_old_rows(dg_store *st);

/* On an empty st: Slack and Discord rows (outbox with and without a
 * thread, discussions, turn channels) read back with their platform and
 * thread from every reader, the discover walk included. */
void store_platform_case_run(dg_store *st);

/* On an empty st: a platform other than "discord" / "slack", a thread on a
 * Discord row and an empty thread are refused with DG_ERR_INVALID by the
 * typed API, and the columns' CHECKs refuse a bad platform written with
 * plain SQL; nothing is written. */
void store_platform_case_refusals(dg_store *st);

#endif
