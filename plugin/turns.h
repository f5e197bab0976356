/*
 * turns.h -- the turn manager: one speaker at a time per session scope.
 *
 * Semantics: shared/reference/dirigent.md (turn manager) and issue 4.
 * State per scope (see scope.h): the turn order (agents of `agents` seen in
 * the channel, in first-seen order; humans and the moderator never), the
 * current speaker or dormant, the agents silent in this cycle, the agent
 * message counter (loop guard), the mention-only set, the last change time.
 * Per channel: the mode (normal / discussion with its initiator / closed)
 * and the member list the turn order is made of.
 *
 * Layers:
 *   - pure logic over plain structs (dg_turn_state + dg_turn_ctx): the
 *     functions below named dg_turn_*; no I/O, no clock of their own (the
 *     caller passes now_ms, from dg_now_ms(p) in the plugin);
 *   - the engine (dg_turns): store transactions, an in-memory mirror of the
 *     rows for the read-only hot path (before_model_resolve), and the
 *     moderator messages owed by a change, queued through the outbox in the
 *     same transaction.
 *
 * (Owner: turn manager area, engineer hC.)
 */
#ifndef DG_TURNS_H
#define DG_TURNS_H

#include <stddef.h>
#include <stdint.h>
#include "dirigent.h"

/* ---- For the discussion area (called INSIDE the caller's transaction) ---- */

/*
 * Make channel_id a discussion channel: mode "discussion" with
 * initiator_agent_id, the turn order replaced by initiator first then
 * `order` (agent ids; duplicates and the initiator are skipped), and the
 * channel's conversation scope awake with the initiator counted as having
 * opened the discussion, so the first participant after it speaks next
 * (the kickoff, a moderator message, wakes nobody by itself). Counters,
 * silent set and reminders are reset.
 * Must be called inside an open store transaction (dg_store_begin); the
 * caller commits or rolls back -- a rollback leaves the turn state as it
 * was. Returns OC_OK, OC_ERR_INVALID (empty ids, n too large) or OC_ERR_IO.
 * Any thread.
 */
int dg_turns_prefill_discussion(dg_store *st, const char *channel_id,
                                const char *initiator_agent_id,
                                const char *const *order, size_t n, int64_t now_ms);

/*
 * Close channel_id for good: mode "closed". From then on nothing in the
 * channel wakes a turn, every agent there gets the no-reply override, agent
 * messages are cancelled, and non-moderator messages get the closed notice
 * (handled by the hooks). Idempotent. Must be called inside an open store
 * transaction. Returns OC_OK, OC_ERR_INVALID or OC_ERR_IO. Any thread.
 */
int dg_turns_close_channel(dg_store *st, const char *channel_id, int64_t now_ms);

#endif
