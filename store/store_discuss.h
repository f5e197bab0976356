/*
 * store_discuss.h -- the SQL of the discussion area (schema slot v4).
 *
 * Tables: discussions (one row per discussion channel, every field of
 * dg_discussion), discussion_members (turn order, initiator first),
 * discussion_overrides (no-reply overrides owed to the sessions of a closed
 * discussion channel; applied_at_ms NULL until session_patch succeeded),
 * discussion_closed_notices (messages of closed channels already handled).
 *
 * Every function here must run inside a store transaction (the caller holds
 * dg_store_begin .. commit/rollback) and returns DG_OK or a negative
 * dg_status (DG_ERR_IO for SQLite errors: dg_store_errmsg() says why).
 */
#ifndef DG_STORE_DISCUSS_H
#define DG_STORE_DISCUSS_H

#include <stddef.h>
#include <stdint.h>
#include "store.h"
#include "store_records.h"
#include "must_check.h"

/* Insert d (id ignored; status must be ACTIVE; platform NULL: "discord")
 * with its members; the new row id goes to *id. DG_ERR_CONFLICT when the
 * channel already has a row, DG_ERR_INVALID (nothing written) when
 * d->platform is neither "discord" nor "slack". */
int dg_store_discussion_insert(dg_store *st, const dg_discussion *d, int64_t *id) DG_MUST_CHECK;

/* Row of channel_id with its members and platform into *out (caller
 * clears: dg_discussion_clear). DG_ERR_NOT_FOUND if none. */
int dg_store_discussion_by_channel(dg_store *st, const char *channel_id,
                                   dg_discussion *out) DG_MUST_CHECK;

/* Cheap probe: *id and *status of channel_id's discussion (0 and
 * DG_DISCUSSION_NONE, with DG_OK, when the channel is not one). id may be
 * NULL. */
int dg_store_discussion_probe(dg_store *st, const char *channel_id, int64_t *id,
                              dg_discussion_status *status) DG_MUST_CHECK;

/* active -> closed with summary path and completion time. DG_ERR_CONFLICT
 * when the row is no longer active (another callback won). */
int dg_store_discussion_close(dg_store *st, int64_t id, const char *summary_path,
                              int64_t completed_at_ms) DG_MUST_CHECK;

/* Record an owed override; *inserted = 1 when new, 0 when it was already
 * recorded (then nothing changes). inserted may be NULL. */
int dg_store_discussion_override_add(dg_store *st, int64_t discussion_id, const char *session_key,
                                     const char *agent_id, int64_t now_ms,
                                     int *inserted) DG_MUST_CHECK;

/* Mark an override as applied. */
int dg_store_discussion_override_applied(dg_store *st, int64_t discussion_id,
                                         const char *session_key, int64_t now_ms) DG_MUST_CHECK;

/* Is there an override row for (channel's discussion, session_key)?
 * *state: 0 none, 1 recorded not applied, 2 applied. */
int dg_store_discussion_override_state(dg_store *st, int64_t discussion_id, const char *session_key,
                                       int *state) DG_MUST_CHECK;

/* Pending (not applied) overrides, oldest first, at most max: session keys
 * into *keys (array of malloc'd strings, caller frees each and the array),
 * matching discussion ids into *ids (caller frees); count into *n. */
int dg_store_discussion_overrides_pending(dg_store *st, size_t max, char ***keys, int64_t **ids,
                                          size_t *n) DG_MUST_CHECK;

/* Closed-notice claim (see dg_discuss_claim_closed_notice_locked). */
int dg_store_discussion_notice_claim(dg_store *st, const char *channel_id, const char *message_id,
                                     int64_t now_ms, int64_t cooldown_ms,
                                     int *claimed) DG_MUST_CHECK;

/* Delete at most limit closed-notice marks older than before_ms; *removed
 * (may be NULL) gets the count. Inside a transaction. */
int dg_store_discussion_notices_prune(dg_store *st, int64_t before_ms, int limit,
                                      long *removed) DG_MUST_CHECK;

/* Close with an end status ('completed', 'expired', 'closed-by-admin');
 * summary_path NULL: none (stored as ''). DG_ERR_CONFLICT when not active. */
int dg_store_discussion_close_as(dg_store *st, int64_t id, const char *summary_path,
                                 int64_t completed_at_ms, const char *end_status) DG_MUST_CHECK;

/* A human's or an agent's message in channel_id (no-op unless an active
 * discussion): the quiet-time clock restarts. */
int dg_store_discussion_touch(dg_store *st, const char *channel_id, int64_t now_ms) DG_MUST_CHECK;

/* How long a discussion asked to wrap up has before it expires when
 * discussion.maxLifetimeSec is 0 (the wrap-up came from a budget). */
#define DG_DISCUSS_WRAPUP_GRACE_MS 1800000

/* Channels of active discussions with a timer due at now_ms (reminder_ms /
 * lifetime_ms 0: that timer is off; a wrap-up asked for expires after
 * lifetime_ms, or DG_DISCUSS_WRAPUP_GRACE_MS without one), at most max,
 * oldest first. *channels
 * is a malloc'd array of malloc'd strings the caller frees (each, then the
 * array). Any thread, inside a transaction. */
int dg_store_discussion_timers_due(dg_store *st, int64_t now_ms, int64_t reminder_ms,
                                   int64_t lifetime_ms, size_t max, char ***channels,
                                   size_t *n) DG_MUST_CHECK;

/* The quiet-time reminder was queued for the quiet period that started at
 * activity_ms / the wrap-up request was queued at now_ms. DG_ERR_CONFLICT
 * when the discussion is no longer active (or the wrap-up was recorded). */
int dg_store_discussion_mark_reminded(dg_store *st, int64_t id, int64_t activity_ms) DG_MUST_CHECK;
int dg_store_discussion_mark_wrapup(dg_store *st, int64_t id, int64_t now_ms) DG_MUST_CHECK;

#endif
