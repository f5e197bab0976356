/*
 * turn_view.h -- a read-only view of one scope's turn state as the store
 * holds it, for readers that are not the turn engine: the discussion_status
 * tool and the operator's CLI. Nothing here writes; timeouts are applied to
 * a copy (what the engine would see now).
 */
#ifndef DG_TURN_VIEW_H
#define DG_TURN_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "scope.h"
#include "store.h"
#include "turns.h"

typedef struct dg_turn_view {
    int has_state; /* 0: the scope never had a turn state (nothing happened yet) */
    dg_channel_mode mode;
    char **members; /* turn order (agent ids by position); owned */
    size_t n_members;
    uint64_t present;      /* members that are configured agents */
    dg_turn_state state;   /* timeouts applied up to now */
    int speaker;           /* position, or DG_NOBODY (always in a closed channel) */
    const char *condition; /* static: "speaking", "dormant", "resting", "closed", "held"
                              (a budget's breaker: no speaker but a discussion's
                              initiator) */
} dg_turn_view;

/*
 * The view of scope sc at now_ms into *out (caller clears it), with cfg for
 * who is a configured agent and the timeouts (cfg NULL, a reader without
 * the plugin's config: every member counts, no timeout is applied). Inside the caller's store
 * transaction. DG_OK (also when the scope has no state: has_state 0), or a
 * negative dg_status.
 */
int dg_turn_view_load(dg_store *st, const dg_config *cfg, const dg_scope *sc, int64_t now_ms,
                      dg_turn_view *out);

/* Free the members of v and zero it; safe on a zeroed struct. */
void dg_turn_view_clear(dg_turn_view *v);

/* Agent id at position pos of v, NULL when out of range. Borrowed. */
const char *dg_turn_view_member(const dg_turn_view *v, int pos);

#endif
