/*
 * outbox.h -- the durable moderator outbox and its dispatcher thread.
 *
 * A message the plugin owes is a row written in the same SQLite transaction
 * as the state change that owes it (dg_outbox_enqueue inside the caller's
 * dg_store_begin/commit). After commit the caller kicks the dispatcher,
 * which posts rows to Discord in order per channel with a stable nonce
 * (enforce_nonce), so a resend after a crash never duplicates. (Owner:
 * discord/outbox area.)
 */
#ifndef DG_OUTBOX_H
#define DG_OUTBOX_H

#include <stddef.h>
#include <stdint.h>
#include "dirigent.h"

/*
 * Queue content for channel_id. mention_ids (borrowed, may be NULL when
 * n_mentions is 0) are the only users the message may ping. Content over
 * 2000 characters is split on line boundaries into ordered parts, one row
 * and one nonce each. Must be called inside an open store transaction.
 * Returns OC_OK, OC_ERR_INVALID (empty content, bad channel id) or OC_ERR_IO.
 */
int dg_outbox_enqueue(dg_store *st, const char *channel_id, const char *content,
                      const char *const *mention_ids, size_t n_mentions, int64_t now_ms);

/* Start the dispatcher thread (init). Returns OC_OK or a negative status. */
int dg_outbox_start(dg_plugin *p, dg_outbox **out, char *err, size_t err_len);

/* Wake the dispatcher after a commit that enqueued rows. Any thread; ob may
 * be NULL (no Discord configured: rows wait for a later start). Never blocks. */
void dg_outbox_kick(dg_outbox *ob);

/* Stop and join the dispatcher; returns within about 2 s even when Discord
 * hangs (in-flight transfer abandoned, its row stays unsent). NULL is fine. */
void dg_outbox_stop(dg_outbox *ob);

#endif
