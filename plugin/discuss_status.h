/*
 * discuss_status.h -- reading discussions: the discussion_status and
 * discussion_list tools and the operator's CLI.
 * Nothing here changes state. (Owner: discussion area.)
 */
#ifndef DG_DISCUSS_STATUS_H
#define DG_DISCUSS_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "discuss.h"
#include "store.h"
#include "store_cost.h"
#include "turn_view.h"
#include "must_check.h"

/* One discussion with what a reader shows of it. Owned: clear it. */
typedef struct dg_discussion_info {
    dg_discussion d;
    char *channel_name;  /* NULL: not recorded (rows before schema v9) */
    dg_turn_view turn;   /* the discussion channel's turn state */
    dg_cost_totals cost; /* its runs in the cost ledger (within the retention) */
    int64_t now_ms;      /* when it was read */
} dg_discussion_info;

void dg_discussion_info_clear(dg_discussion_info *i);

/* Free n infos and the array; safe on NULL. */
void dg_discussion_infos_free(dg_discussion_info *v, size_t n);

/*
 * The discussion of channel_id into *out (caller clears), inside the
 * caller's store transaction; cfg for the turn view. DG_ERR_NOT_FOUND when
 * the channel is not a discussion channel.
 */
int dg_discussion_info_load_locked(dg_store *st, const dg_config *cfg, const char *channel_id,
                                   int64_t now_ms, dg_discussion_info *out) DG_MUST_CHECK;

/*
 * discussion_status. Which discussion: discussion_id > 0, else channel_id,
 * else the caller's channel. Access: for one named by id or channel the
 * caller must be its initiator or a participant (DG_ERR_DENIED otherwise);
 * the caller's own channel needs no more (the host put the caller there).
 * DG_ERR_NOT_FOUND when there is no such discussion (a sentence says what
 * to pass), DG_ERR_IO on a store error. On DG_OK *out is filled (caller
 * clears). Any tool thread.
 */
int dg_discuss_status(dg_plugin *p, const dg_caller *caller, int64_t discussion_id,
                      const char *channel_id, dg_discussion_info *out, char *err,
                      size_t err_len) DG_MUST_CHECK;

/*
 * discussion_list: the discussions the caller initiated or was invited to,
 * newest first, `limit` from `offset`. *out: malloc'd array of *n infos
 * (dg_discussion_infos_free); *more 1 when a next page exists.
 * DG_ERR_DENIED without an agent in the context. Any tool thread.
 */
int dg_discuss_list(dg_plugin *p, const dg_caller *caller, size_t offset, size_t limit,
                    dg_discussion_info **out, size_t *n, int *more, char *err,
                    size_t err_len) DG_MUST_CHECK;

/* 1 when agent_id is the initiator or a participant of d. */
int dg_discussion_has_member(const dg_discussion *d, const char *agent_id);

#endif
