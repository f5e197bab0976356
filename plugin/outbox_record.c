/*
 * outbox_record.c -- recording what the platform decided about rows (sent
 * with its message id, or failed for good with the reason), in batches.
 *
 * A row whose outcome the platform decided but the store could not record
 * (disk full, read-only file, any store error) is remembered in memory and
 * never posted again by this process; recording is retried with the same
 * back-off as a failing platform, and its channel is held meanwhile. Only a
 * restart before the store recovers posts it again, and then its key keeps
 * the platform from showing it twice.
 */
#include "outbox_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "store.h"

/* Keep a decision until its batch is recorded; the head row of c goes.
 * detail is taken over (owned). When out of memory the row simply stays
 * pending in the store and in c (sent again later: the nonce prevents a
 * duplicate), with a back-off. */
void outbox_decide(dg_outbox *ob, outbox_chan *c, outbox_outcome oc, char *detail)
{
    OUTBOX_ON_DISPATCHER(ob);
    if (dg_grow(&ob->dec, &ob->cap_dec, ob->n_dec, sizeof *ob->dec, OUTBOX_MARK_BATCH)) {
        free(detail);
        c->not_before = outbox_mono_ms() + outbox_backoff(ob, 1);
        return;
    }
    outbox_decided *d = &ob->dec[ob->n_dec++];
    memset(d, 0, sizeof *d);
    d->row_id = c->q[c->head].id;
    d->oc = oc;
    d->detail = detail;
    d->since = outbox_mono_ms();
    snprintf(d->channel_id, sizeof d->channel_id, "%s", c->id);
    outbox_chan_pop(c);
}

/* Record every decided row in one transaction. */
void outbox_flush(dg_outbox *ob)
{
    OUTBOX_ON_DISPATCHER(ob);
    dg_plugin *p = ob->p;
    if (!ob->n_dec)
        return;
    /* The sent rows go in statements of several rows (the common case),
     * the failed ones one by one (rare). Both only in this transaction. */
    int64_t ids[OUTBOX_MARK_BATCH];
    const char *mids[OUTBOX_MARK_BATCH];
    int rc = dg_store_begin(p->store);
    if (rc == DG_OK) {
        int64_t now = dg_now_ms(p);
        size_t n_ids = 0, marked = 0;
        for (size_t i = 0; i < ob->n_dec && (rc == DG_OK || rc == DG_ERR_NOT_FOUND); i++) {
            outbox_decided *d = &ob->dec[i];
            if (d->oc != OUTBOX_SENT) {
                rc = dg_store_outbox_mark_failed(p->store, d->row_id, d->detail, now);
                continue;
            }
            ids[n_ids] = d->row_id;
            mids[n_ids++] = d->detail;
            if (n_ids == OUTBOX_MARK_BATCH || i + 1 == ob->n_dec) {
                rc = dg_store_outbox_mark_sent_many(p->store, ids, mids, n_ids, now, &marked);
                n_ids = 0;
            }
        }
        if (n_ids && (rc == DG_OK || rc == DG_ERR_NOT_FOUND))
            rc = dg_store_outbox_mark_sent_many(p->store, ids, mids, n_ids, now, &marked);
        if (rc == DG_OK || rc == DG_ERR_NOT_FOUND)
            rc = dg_store_commit(p->store);
        else
            dg_store_rollback(p->store);
    }
    if (rc != DG_OK) {
        int worst = 0;
        for (size_t i = 0; i < ob->n_dec; i++) {
            outbox_decided *d = &ob->dec[i];
            d->failures++;
            if (d->failures > worst)
                worst = d->failures;
            outbox_chan *c = outbox_chan_of(ob, d->channel_id);
            if (c)
                c->held = 1;
            dg_log(p, OC_LOG_ERROR,
                   "outbox: moderator message %lld for channel %s was %s by %s but the "
                   "store could not record it (%s, %d time%s); it is kept in memory and not "
                   "sent again, and recording is tried again in about %ld ms. Check free disk "
                   "space and that the store %s is writable",
                   (long long)d->row_id, d->channel_id,
                   d->oc == OUTBOX_SENT ? "accepted" : "refused for good",
                   dg_platform_title(ob->platform), dg_status_name(rc), d->failures,
                   d->failures == 1 ? "" : "s", outbox_backoff(ob, d->failures),
                   dg_store_where(p->store));
        }
        ob->dec_retry_at = outbox_mono_ms() + outbox_backoff(ob, worst);
        return;
    }
    uint64_t sent = 0, failed = 0;
    for (size_t i = 0; i < ob->n_dec; i++) {
        outbox_decided *d = &ob->dec[i];
        if (d->failures)
            dg_log(p, OC_LOG_INFO,
                   "outbox: moderator message %lld for channel %s recorded as "
                   "%s after %d store failure%s",
                   (long long)d->row_id, d->channel_id, d->oc == OUTBOX_SENT ? "sent" : "failed",
                   d->failures, d->failures == 1 ? "" : "s");
        if (d->oc == OUTBOX_SENT)
            sent++;
        else
            failed++;
        free(d->detail);
    }
    ob->n_dec = 0;
    ob->dec_retry_at = 0;
    for (size_t i = 0; i < ob->n_chans; i++)
        ob->chans[i]->held = 0;
    if (sent)
        outbox_count(ob, OUTBOX_SENT, sent);
    if (failed)
        outbox_count(ob, OUTBOX_FAILED, failed);
}

/* Due while posts fly: enough rows for a batch, or the oldest waited long
 * enough, or recording is to be tried again. A batch is OUTBOX_FLUSH_AT rows per
 * post in flight, at most OUTBOX_MARK_BATCH: on one channel a small batch is
 * recorded while the next post is answered (in bench_outbox one row per
 * transaction cost a commit per row, about 1.5x the time per message; 8
 * and 64 were alike); with many posts in flight the dispatcher's CPU is
 * the limit, and a large batch writes each page it dirties once for more
 * rows (a backlog's marks touch one index page per channel). */
int outbox_flush_due(const dg_outbox *ob, int64_t now)
{
    if (!ob->n_dec || ob->dec_retry_at > now)
        return 0;
    size_t busy = dg_chat_pipe_busy(ob->pipe);
    size_t at = OUTBOX_FLUSH_AT * (busy ? busy : 1);
    if (at > OUTBOX_MARK_BATCH)
        at = OUTBOX_MARK_BATCH;
    return ob->n_dec >= at || now - ob->dec[0].since >= OUTBOX_MARK_DELAY_MS ||
           ob->dec_retry_at != 0;
}
