/*
 * store_transitions.h -- the turn transitions log (schema v10):
 * why an agent did (not) speak, for the operator's CLI. Every write of a
 * scope's turn state by the engine (a message, a run's end, a timeout, an
 * admin command -- never before_model_resolve) records one transition
 * with its cause. One a message caused goes into that message's dedup mark
 * (schema v13: no page of its own on the ingest path) and lives as long as
 * the mark; when marks are pruned their transitions move to the log. The
 * log (turn_transitions) keeps the newest DG_TRANSITIONS_KEEP per scope,
 * older ones deleted by the write that adds one (bounded without a
 * sweeper). Listing merges both, newest first.
 *
 * Functions run inside a store transaction and return DG_OK or a negative
 * dg_status.
 */
#ifndef DG_STORE_TRANSITIONS_H
#define DG_STORE_TRANSITIONS_H

#include <stddef.h>
#include <stdint.h>
#include "store.h"
#include "must_check.h"

#define DG_TRANSITIONS_KEEP 32

typedef struct dg_transition {
    int64_t at_ms;
    char *scope; /* "conversation" / "thread:<root>" */
    char *cause; /* e.g. "message 123 from human 456", "timeout", "admin skip" */
    char *speaker_before, *speaker_after; /* agent ids; NULL: nobody */
    char *state;  /* "speaking" / "dormant" / "resting" / "closed" after it */
    char *passed; /* agents that passed in the cycle after it, comma-separated */
    int64_t agent_msgs;
    const char *message_id; /* add: the message that caused it (its mark holds it), or
                             * NULL; list: always NULL */
} dg_transition;

void dg_transitions_free(dg_transition *v, size_t n);

/* Record t (at_ms, strings borrowed) for channel_id: into the mark of
 * t->message_id when that message has one in the channel, else appended to
 * the log, pruning the scope. DG_ERR_INVALID (nothing written) when its
 * scope, cause or state is NULL. */
int dg_store_transition_add(dg_store *st, const char *channel_id,
                            const dg_transition *t) DG_MUST_CHECK;

/* Move the transitions of marks older than before_ms to the log (which
 * then keeps the newest DG_TRANSITIONS_KEEP per scope): before those marks
 * are deleted. */
int dg_store_transitions_rescue(dg_store *st, int64_t before_ms) DG_MUST_CHECK;

/* The newest `max` transitions of channel_id (scope NULL: every scope),
 * newest first: *out malloc'd (dg_transitions_free), *n rows. */
int dg_store_transitions_list(dg_store *st, const char *channel_id, const char *scope, size_t max,
                              dg_transition **out, size_t *n) DG_MUST_CHECK;

#endif
