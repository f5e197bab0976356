/*
 * outbox_queue.c -- the channels with pending rows, in memory: found by
 * discovery (rows in id order from a cursor), loaded a batch at a time, and
 * forgotten once nothing is left. In memory only: after a restart every
 * pending row is due at once.
 */
#include "outbox_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "store.h"

outbox_chan *outbox_chan_of(dg_outbox *ob, const char *channel_id)
{
    for (size_t i = 0; i < ob->n_chans; i++)
        if (!strcmp(ob->chans[i]->id, channel_id))
            return ob->chans[i];
    return NULL;
}

/* The channel's entry, created when missing; NULL when out of memory. */
static outbox_chan *chan_get(dg_outbox *ob, const char *channel_id)
{
    outbox_chan *c = outbox_chan_of(ob, channel_id);
    if (c)
        return c;
    if (dg_grow(&ob->chans, &ob->cap_chans, ob->n_chans, sizeof *ob->chans, 16))
        return NULL;
    c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    snprintf(c->id, sizeof c->id, "%s", channel_id);
    ob->chans[ob->n_chans++] = c;
    return c;
}

void outbox_chan_free(outbox_chan *c)
{
    dg_chat_post_free(c->next);
    if (c->q) {
        for (size_t i = c->head; i < c->n; i++)
            dg_outbox_row_clear(&c->q[i]);
        free(c->q);
    }
    free(c);
}

/* Drop the head row of c (it was decided). */
void outbox_chan_pop(outbox_chan *c)
{
    dg_outbox_row_clear(&c->q[c->head++]);
    if (c->head == c->n) {
        free(c->q);
        c->q = NULL;
        c->head = c->n = 0;
    }
}

/* Forget channels with nothing left (only when no decided row is owed: a
 * channel's cursor must outlive its unrecorded rows), giving their leases
 * up so another instance need not wait for them to run out. */
void outbox_chans_sweep(dg_outbox *ob)
{
    if (ob->n_dec || !ob->n_chans)
        return;
    outbox_chan **gone = malloc(ob->n_chans * sizeof *gone);
    if (!gone)
        return; /* out of memory: next pass */
    size_t w = 0, n_gone = 0;
    for (size_t i = 0; i < ob->n_chans; i++) {
        outbox_chan *c = ob->chans[i];
        if (!c->inflight && c->head == c->n && c->cursor >= c->known_max &&
            c->not_before <= outbox_mono_ms())
            gone[n_gone++] = c;
        else
            ob->chans[w++] = c;
    }
    ob->n_chans = w;
    outbox_leases_release(ob, gone, n_gone);
    for (size_t i = 0; i < n_gone; i++)
        outbox_chan_free(gone[i]);
    free(gone);
}

/* Read where pending rows are, from the discovery cursor on. */
void outbox_discover(dg_outbox *ob)
{
    OUTBOX_ON_DISPATCHER(ob);
    dg_plugin *p = ob->p;
    for (int page = 0; page < OUTBOX_DISCOVER_PAGES; page++) {
        dg_outbox_ref *refs = NULL;
        size_t n = 0;
        int rc = dg_store_begin(p->store);
        if (rc == DG_OK) {
            rc =
                dg_store_outbox_discover(p->store, ob->disc_after, OUTBOX_DISCOVER_PAGE, &refs, &n);
            if (rc == DG_OK)
                rc = dg_store_commit(p->store);
            else
                dg_store_rollback(p->store);
        }
        if (rc != DG_OK) {
            free(refs);
            dg_log(p, OC_LOG_ERROR,
                   "outbox: cannot read pending messages from the store "
                   "(%s); trying again in 1 s",
                   dg_status_name(rc));
            ob->disc_retry_at = outbox_mono_ms() + 1000;
            return;
        }
        for (size_t i = 0; i < n; i++) {
            if (strcmp(refs[i].platform, dg_platform_name(ob->platform)) != 0) {
                ob->disc_after = refs[i].id; /* the other platform's dispatcher sends it */
                continue;
            }
            outbox_chan *c = chan_get(ob, refs[i].channel_id);
            if (!c) {
                free(refs);
                ob->disc_retry_at = outbox_mono_ms() + 1000; /* out of memory: later */
                return;
            }
            /* A channel met anew starts reading at its first pending row:
             * the channel index holds its sent rows too (schema v12), and
             * discovery walks pending rows in id order, so none of this
             * channel lies below (writers commit in id order on both
             * backends: SQLite's one writer, PostgreSQL's version-row lock). */
            if (c->known_max == 0 && c->cursor == 0 && c->head == c->n)
                c->cursor = refs[i].id - 1;
            if (refs[i].id > c->known_max)
                c->known_max = refs[i].id;
            ob->disc_after = refs[i].id;
        }
        free(refs);
        if (n < OUTBOX_DISCOVER_PAGE) {
            ob->need_disc = 0;
            return;
        }
    }
}

/* Load the next rows of c after its cursor, behind the rows it has in
 * memory (the head may be in flight: outbox_refill_ahead). DG_OK (maybe none) or
 * the store's status; on error c is unchanged. */
int outbox_refill(dg_outbox *ob, outbox_chan *c)
{
    OUTBOX_ON_DISPATCHER(ob);
    dg_plugin *p = ob->p;
    dg_outbox_row *rows = NULL;
    size_t n = 0;
    int rc = dg_store_begin(p->store);
    if (rc == DG_OK) {
        rc = dg_store_outbox_pending_of(p->store, c->id, c->cursor, ob->o.batch, &rows, &n);
        if (rc == DG_OK)
            rc = dg_store_commit(p->store);
        else
            dg_store_rollback(p->store);
    }
    if (rc != DG_OK) {
        dg_outbox_rows_free(rows, n);
        return rc;
    }
    if (n == 0) {
        c->cursor = c->known_max; /* nothing pending up to what discovery saw */
        return DG_OK;
    }
    int64_t last = rows[n - 1].id;
    if (c->head == c->n) {
        free(c->q); /* NULL here (outbox_chan_pop frees an emptied array); kept for safety */
        c->q = rows;
        c->head = 0;
        c->n = n;
    } else {
        /* Rows still in memory stay first; the strings move, not copied. */
        size_t keep = c->n - c->head;
        dg_outbox_row *q = malloc((keep + n) * sizeof *q);
        if (!q) {
            dg_outbox_rows_free(rows, n);
            return DG_ERR_NOMEM;
        }
        memcpy(q, c->q + c->head, keep * sizeof *q);
        memcpy(q + keep, rows, n * sizeof *q);
        free(rows);
        free(c->q);
        c->q = q;
        c->head = 0;
        c->n = keep + n;
    }
    c->cursor = last;
    return DG_OK;
}

/* Read the next rows of each channel whose last loaded row is the one in
 * flight, while it flies: the store's read is then off the path from
 * the platform's answer to the next post. A failure is only logged
 * here: outbox_post_due reads again when the row is needed. */
void outbox_refill_ahead(dg_outbox *ob)
{
    for (size_t i = 0; i < ob->n_fly; i++) {
        outbox_chan *c = ob->fly[i];
        if (c->head + 1 != c->n || c->cursor >= c->known_max)
            continue;
        int rc = outbox_refill(ob, c);
        if (rc != DG_OK)
            dg_log(ob->p, OC_LOG_DEBUG,
                   "outbox: reading ahead in channel %s failed (%s); "
                   "read again when its next message is due",
                   c->id, dg_status_name(rc));
    }
}
