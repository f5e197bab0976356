/*
 * seen_set.h -- a thread-safe set of strings, one per plugin instance, for
 * "already handled" facts that never change back (a session already
 * recorded in a closed discussion channel): a hot path asks the set before
 * it opens a store transaction. A cache only: the store stays the owner of
 * the fact, and an empty set (after a restart) only costs one lookup.
 */
#ifndef DG_SEEN_SET_H
#define DG_SEEN_SET_H

#include <stddef.h>
#include "must_check.h"

typedef struct dg_seen_set dg_seen_set;

/* New empty set, or NULL when out of memory. Owned by the caller:
 * dg_seen_set_free(). Any thread. */
dg_seen_set *dg_seen_set_new(void) DG_MUST_CHECK;

/* Free the set and its copies of the keys. NULL is fine. No other call may
 * run on it. */
void dg_seen_set_free(dg_seen_set *s);

/* 1 when the key (a, b) is in the set, else 0 (also when s is NULL). The
 * pair is one key: a and b are joined with a separator that neither
 * contains (0x1f). Any thread. */
int dg_seen_set_has(dg_seen_set *s, const char *a, const char *b);

/* Add (a, b) (copied). DG_OK, or DG_ERR_NOMEM (the set is unchanged: the
 * caller just asks the store again next time), DG_ERR_INVALID when s is
 * NULL. At most DG_SEEN_SET_MAX keys: past that the set is emptied first
 * (a cache bound, not a correctness one). Any thread. */
int dg_seen_set_add(dg_seen_set *s, const char *a, const char *b);

#define DG_SEEN_SET_MAX 65536

#endif
