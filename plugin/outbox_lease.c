/*
 * outbox_lease.c -- instances sharing a store send each channel under a
 * lease (the store's store_leases, store_instances.h): one instance at a time
 * per channel, so order holds across instances. The holder renews it before
 * a post when less than half is left; another instance polls the channel
 * and takes it over once the lease ran out (its holder died), reloading the
 * channel's pending rows from the store. A row whose post was in flight
 * when its holder died is posted again by the next holder under the same
 * key (Discord returns the first message; on Slack the key is looked up
 * first).
 */
#include "outbox_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_instances.h"

/* The name of c's lease in the store; out has room for 8 + 24 bytes. */
static void lease_name(const outbox_chan *c, char *out, size_t len)
{
    snprintf(out, len, "outbox:%s", c->id);
}

/* Give up the leases this instance holds on the channels v[0..n) (one
 * transaction, best effort: a lease not given up runs out). */
void outbox_leases_release(dg_outbox *ob, outbox_chan *const *v, size_t n)
{
    dg_store *st = ob->p->store;
    size_t held = 0;
    for (size_t i = 0; i < n; i++)
        held += v[i]->lease_until > 0;
    if (!held || dg_store_begin(st) != DG_OK)
        return;
    int rc = DG_OK;
    for (size_t i = 0; rc == DG_OK && i < n; i++) {
        char name[40];
        lease_name(v[i], name, sizeof name);
        if (v[i]->lease_until > 0)
            rc = dg_store_lease_release(st, name);
    }
    if (rc == DG_OK)
        rc = dg_store_commit(st);
    else
        dg_store_rollback(st);
    for (size_t i = 0; rc == DG_OK && i < n; i++)
        v[i]->lease_until = 0;
}

/* Highest id of a decided row of c not recorded yet; 0 when none. */
static int64_t dec_max_of(const dg_outbox *ob, const outbox_chan *c)
{
    int64_t m = 0;
    for (size_t i = 0; i < ob->n_dec; i++)
        if (!strcmp(ob->dec[i].channel_id, c->id) && ob->dec[i].row_id > m)
            m = ob->dec[i].row_id;
    return m;
}

/* Drop the rows of c loaded in memory: the next refill reads the store
 * again from the row after `after`. */
static void chan_forget_rows(outbox_chan *c, int64_t after)
{
    dg_chat_post_free(c->next);
    c->next = NULL;
    while (c->q && c->head < c->n)
        outbox_chan_pop(c);
    c->cursor = after;
}

/*
 * 1 when this instance may post in c now: it holds the channel's lease
 * with more than half of it left, renewing or taking it here when needed
 * (one short transaction every lease_ms / 2 while it sends). A lease taken
 * afresh reloads the channel from the store (another holder may have sent
 * rows meanwhile). 0 when another instance holds it (c is looked at again
 * within OUTBOX_LEASE_POLL_MS) or the store failed (again in 1 s); *next is
 * lowered to that time. Dispatcher thread.
 */
int outbox_lease_ok(dg_outbox *ob, outbox_chan *c, int64_t now, int64_t *next)
{
    OUTBOX_ON_DISPATCHER(ob);
    int64_t wall = dg_store_wall_ms();
    if (c->lease_until - wall > ob->o.lease_ms / 2)
        return 1;
    dg_store *st = ob->p->store;
    char name[40];
    lease_name(c, name, sizeof name);
    int got = 0, fresh = 0;
    int64_t other = 0, until = wall + ob->o.lease_ms, taken_max = 0;
    int rc = dg_store_begin(st);
    if (rc == DG_OK) {
        rc = dg_store_lease_take(st, name, wall, until, c->lease_until, &got, &fresh, &other);
        if (rc == DG_OK && got && fresh == 2)
            rc = dg_store_outbox_max_pending_id(st, &taken_max);
        if (rc == DG_OK)
            rc = dg_store_commit(st);
        else
            dg_store_rollback(st);
    }
    if (rc != DG_OK && got) {
        /* Nobody else holds it, but the store refused to record it (disk
         * full, read-only file): send anyway, as a lone instance would; a
         * store that takes no write gives no other instance the lease
         * either. Taking it is tried again before the next post. */
        c->lease_until = 0;
        return 1;
    }
    if (rc != DG_OK || !got) {
        if (rc != DG_OK)
            dg_log(ob->p, OC_LOG_ERROR,
                   "outbox: cannot take the sending lease of channel %s "
                   "from the store (%s); trying again in 1 s",
                   c->id, dg_status_name(rc));
        else if (c->lease_until)
            dg_log(ob->p, OC_LOG_WARN,
                   "outbox: another instance sharing the store took over "
                   "channel %s (this one did not renew its lease in time); it sends there now",
                   c->id);
        long wait = rc != DG_OK ? 1000 : (long)(other - wall + 1);
        if (wait > OUTBOX_LEASE_POLL_MS)
            wait = OUTBOX_LEASE_POLL_MS;
        if (wait < 50)
            wait = 50;
        if (rc == DG_OK) {
            c->lease_until = 0;
            chan_forget_rows(c, dec_max_of(ob, c));
        }
        c->not_before = now + wait;
        if (c->not_before < *next)
            *next = c->not_before;
        return 0;
    }
    if (fresh)
        chan_forget_rows(c, dec_max_of(ob, c));
    if (fresh == 2 && taken_max > c->taken_max) {
        /* Its rows pending now are looked up before they are sent, where
         * the platform has no key of its own (Slack). */
        c->taken_max = taken_max;
        dg_log(ob->p, OC_LOG_INFO,
               "outbox: took channel %s over from an instance that stopped renewing its "
               "lease; its pending messages up to #%lld are checked against the channel "
               "before they are sent",
               c->id, (long long)taken_max);
    }
    c->lease_until = until;
    return 1;
}
