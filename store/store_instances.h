/*
 * store_instances.h -- what lets several plugin instances share one store:
 * a change log of turn-state channels, and leases.
 *
 * Every instance that opens a store gets a random instance id
 * (dg_store_instance). Writers are serialised by the database's own write
 * lock (SQLite: BEGIN IMMEDIATE; PostgreSQL: SELECT ... FOR UPDATE of the
 * one dg_schema_version row), so the state a transaction reads is
 * what every instance committed before it.
 *
 * Change log (schema v8, table turn_changes): each transaction that writes
 * turn state of a channel (store_turns*.c do it for every write) records
 * the channel with one sequence number per transaction and the writer's
 * instance id. An instance that keeps turn state in memory asks at the
 * start of each write transaction which channels other instances changed
 * since the sequence it applied, and reloads them; its hot path asks only
 * whether the latest sequence moved (dg_store_change_seq: no page read when
 * nothing was committed since the last call).
 *
 * Leases (schema v8, table store_leases): a named right held by one
 * instance until a wall-clock time; taken over by another instance once it
 * ran out (its holder died or stalled). The outbox holds one per channel
 * it sends to, so each channel is sent by one instance at a time, in order.
 *
 * Functions marked "in a transaction" run between dg_store_begin and
 * dg_store_commit/rollback on the calling thread.
 */
#ifndef DG_STORE_INSTANCES_H
#define DG_STORE_INSTANCES_H

#include <stddef.h>
#include <stdint.h>
#include "store.h"
#include "must_check.h"

/* This store's instance id (hex, stable while it is open). Borrowed. */
const char *dg_store_instance(const dg_store *st);

/* In a transaction: record that channel_id's turn state changes in it.
 * Cheap when the channel was already recorded by the same transaction.
 * DG_OK or DG_ERR_IO. */
int dg_store_change_note(dg_store *st, const char *channel_id) DG_MUST_CHECK;

/*
 * In a transaction: the channels other instances changed with a sequence
 * above after, into *channels (malloc'd array of malloc'd strings, caller
 * frees both; NULL when *n is 0), and the highest sequence of the log into
 * *upto (after when the log holds nothing newer). DG_OK, DG_ERR_NOMEM or
 * DG_ERR_IO.
 */
int dg_store_changes_since(dg_store *st, int64_t after, char ***channels, size_t *n,
                           int64_t *upto) DG_MUST_CHECK;

/* In a transaction, before its commit: the sequence this transaction
 * recorded its changes under, 0 when it recorded none. */
int64_t dg_store_txn_change_seq(const dg_store *st);

/*
 * Any thread, outside or inside a transaction (its own connection and
 * lock): the highest committed sequence of the change log. Reads a page
 * only when some connection committed since the previous call; else it
 * returns the remembered value. -1 when the database cannot be read (the
 * caller then syncs through a transaction, which reports the error).
 */
int64_t dg_store_change_seq(dg_store *st);

/* 1 when dg_store_change_seq answers "nothing committed" from the SQLite
 * wal-index header in shared memory (no statement), 0 when every call runs
 * the probe's statements (PostgreSQL, or a VFS without shared memory). */
int dg_store_probe_in_memory(dg_store *st);

/*
 * In a transaction: take or keep the lease `name` until until_ms
 * (wall-clock ms). held_until is the until_ms this instance last got for
 * it (0: none). *got = 1 when the lease is ours now; *fresh = 1 when it was
 * not ours without a break (new, taken over after it ran out, or our own
 * lapsed and was touched meanwhile): whatever the caller cached under the
 * old lease is stale; *fresh = 2 when it was another instance's that did
 * not give it up (its holder died or lapsed: what that holder was doing
 * under it may be half done). When *got is 0, *other_until is when the holder's
 * lease runs out. now_ms: the wall clock now. DG_OK or DG_ERR_IO.
 */
int dg_store_lease_take(dg_store *st, const char *name, int64_t now_ms, int64_t until_ms,
                        int64_t held_until, int *got, int *fresh,
                        int64_t *other_until) DG_MUST_CHECK;

/* In a transaction: give the lease up if this instance holds it. */
int dg_store_lease_release(dg_store *st, const char *name) DG_MUST_CHECK;

/* Wall-clock milliseconds (CLOCK_REALTIME): the clock of leases, which
 * several processes (and machines) compare. */
int64_t dg_store_wall_ms(void);

#endif
