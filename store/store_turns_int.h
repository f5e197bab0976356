/*
 * store_turns_int.h -- shared by store_turns.c, store_turns_state.c and
 * store_turns_marks.c only: the state columns of turn_ledger, the window of
 * a channel's newest marks, and the helpers the three use. Every function
 * here runs inside a store transaction (the caller holds the store lock).
 */
#ifndef DG_STORE_TURNS_INT_H
#define DG_STORE_TURNS_INT_H

#include <stddef.h>
#include <stdint.h>
#include "store_int.h"
#include "must_check.h"

/*
 * The state columns of turn_ledger, DG_STATE_FIELDS of them, in the order
 * dg_store_turns_state_fields() lists them. A state row holds its scope's
 * state there (with `active`); a mark carrying a state (schema v14) holds
 * it there too, t_snap naming the scope's state key, `active` left NULL
 * (the ledger's CHECK: only state rows have it; a carried state is always
 * active). As integers most fields take no byte of the record: on a
 * WITHOUT ROWID table the whole row is also the b-tree's divider, so a
 * smaller mark splits fewer pages.
 */
#define DG_STATE_COLS                                                                              \
    "speaker, anchor, silent, mention, mention_done, consumed, owed, agent_msgs, rested,"          \
    " idle_reminded, handoff, permit, permit_ms, last_change_ms, budget, budget_until_ms"
#define DG_STATE_COLS_NULL                                                                         \
    "speaker = NULL, anchor = NULL, silent = NULL, mention = NULL, mention_done = NULL,"           \
    " consumed = NULL, owed = NULL, agent_msgs = NULL, rested = NULL, idle_reminded = NULL,"       \
    " handoff = NULL, permit = NULL, permit_ms = NULL, last_change_ms = NULL, budget = NULL,"      \
    " budget_until_ms = NULL"

/* The channel's newest DG_SNAP_WINDOW marks (?1 the channel), newest first:
 * k, t_snap, t_ord, post_channel, at_ms, then DG_STATE_COLS
 * (store_turns_state.c). One array, so dg_store_stmt caches it once. */
extern const char dg_sql_turns_window[];

/* A write of channel_id's turn state ended with rc: on DG_OK the channel
 * is logged for the other instances sharing the store (store_instances.h);
 * returns that outcome, else rc. */
int dg_store_turns_logged(dg_store *st, const char *channel_id, int rc) DG_MUST_CHECK;

/* INSERT ... ON CONFLICT DO NOTHING of (a, b, now_ms) with sql; *fresh
 * says whether the row is new (the first claim wins). Strings borrowed
 * until it returns. */
int dg_store_turns_claim_pair(dg_store *st, const char *sql, const char *a, const char *b,
                              int64_t now_ms, int *fresh) DG_MUST_CHECK;

/* A DELETE whose only parameter is a cut-off time; *removed (may be NULL)
 * gets the rows deleted. */
int dg_store_turns_prune_before(dg_store *st, const char *sql, int64_t before_ms,
                                long *removed) DG_MUST_CHECK;


/* The kept fields of t (but `active`) in DG_STATE_COLS' order into f, and
 * f bound as ?idx .. ?idx+15. */
void dg_store_turns_state_fields(const dg_turn_state *t, int64_t f[DG_STATE_FIELDS]);
void dg_store_turns_state_bind(dg_stmt *s, int idx, const int64_t f[DG_STATE_FIELDS]);

/* Fold the states carried by the marks of channel_id's window into their
 * rows and clear them from those marks only (a claim whose hint knows no
 * state is carried below the window). */
int dg_store_turns_fold_window(dg_store *st, const char *channel_id) DG_MUST_CHECK;

/* Fold every channel whose marks carry a state (those older than
 * before_ms only when before_ms > 0). SQLite; DG_OK at once on PostgreSQL. */
int dg_store_turns_fold_before(dg_store *st, int64_t before_ms) DG_MUST_CHECK;

#endif
