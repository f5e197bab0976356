/*
 * turns_engine_test.h -- what tests (and benches) ask the turn engine that
 * production code never does: peeking at a scope's state, counting and
 * bounding the in-memory mirror, naming a member, one sweeper pass. Only
 * the engine's own files (through turns_int.h) include it in plugin/ and
 * hooks/. Any thread.
 */
#ifndef DG_TURNS_ENGINE_TEST_H
#define DG_TURNS_ENGINE_TEST_H

#include <stddef.h>
#include <stdint.h>
#include "turns_engine.h"

/* The state of scope (from the mirror or the store), the channel's mode
 * and member count. DG_ERR_NOT_FOUND if the
 * scope has no state yet. */
int dg_turns_peek(dg_turns *t, const dg_scope *scope, dg_turn_state *st, dg_channel_mode *mode,
                  int *n_members);

/* How many scope and session records the in-memory mirror holds. DG_OK. */
int dg_turns_mirror_count(dg_turns *t, size_t *scopes, size_t *sessions);

/* Keep at most n dormant thread scopes in the mirror (0: the built-in
 * bound, 4096); the least recently changed beyond it leave. */
void dg_turns_set_dormant_max(dg_turns *t, size_t n);

/* Agent id at member position pos of channel_id, copied into buf; DG_OK or
 * DG_ERR_NOT_FOUND. */
int dg_turns_member(dg_turns *t, const char *channel_id, int pos, char *buf, size_t len);

/* The members of channel_id's turn order that take turns now (configured,
 * not out of the order), as a mask of positions. DG_OK. */
int dg_turns_present(dg_turns *t, const char *channel_id, uint64_t *present);

/* One pass of the sweeper thread's work (turn timeouts, the stall nudge,
 * discussion timers, eviction) now, on the calling thread. */
void dg_turns_sweep_now(dg_turns *t);

#endif
