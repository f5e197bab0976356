/*
 * outbox_post.c -- posting rows to their platform through the pipe, oldest first
 * across channels and in order within each, and what each answer means:
 * sent, retried with back-off (Retry-After honoured), failed for good, or
 * every send held after a refused token.
 */
#include "outbox_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

/* Record a retry count (best effort, own transaction: the rare path). */
static int record_retry(dg_outbox *ob, const dg_outbox_row *row, const char *error)
{
    dg_plugin *p = ob->p;
    int rc = dg_store_begin(p->store);
    if (rc == DG_OK) {
        rc = dg_store_outbox_mark_retry(p->store, row->id, error);
        if (rc == DG_OK || rc == DG_ERR_NOT_FOUND)
            rc = dg_store_commit(p->store);
        else
            dg_store_rollback(p->store);
    }
    return rc;
}

/* The request of row (mentions split from their stored list). */
static int prepare_row(dg_outbox *ob, const outbox_chan *c, const dg_outbox_row *row,
                       dg_chat_prepared **out, dg_chat_err *e)
{
    const char *ids[OUTBOX_MAX_MENTIONS];
    size_t n_ids = 0;
    char mcopy[OUTBOX_MAX_MENTIONS * 22];
    snprintf(mcopy, sizeof mcopy, "%s", row->mentions);
    for (char *save = NULL, *t = strtok_r(mcopy, ",", &save); t && n_ids < OUTBOX_MAX_MENTIONS;
         t = strtok_r(NULL, ",", &save))
        ids[n_ids++] = t;
    dg_chat_post_spec spec = {
        .channel_id = row->channel_id,
        .thread_id = row->thread_id,
        .text = row->content,
        .mention_ids = ids,
        .n_mentions = n_ids,
        .key = row->nonce,
        .maybe_posted = row->attempts > 0 || row->id <= ob->boot_max_id || row->id <= c->taken_max,
    };
    return dg_chat_post_prepare(ob->chat, &spec, out, e);
}

/* Make the request of the row after each one in flight, while it flies
 * (a row that cannot be made is left to post_head, which says why). */
void outbox_prepare_ahead(dg_outbox *ob)
{
    for (size_t i = 0; i < ob->n_fly; i++) {
        outbox_chan *c = ob->fly[i];
        if (c->next || c->head + 1 >= c->n)
            continue;
        dg_chat_err e;
        if (prepare_row(ob, c, &c->q[c->head + 1], &c->next, &e) == DG_OK)
            c->next_id = c->q[c->head + 1].id;
    }
}

/* Post the head row of c. */
static void post_head(dg_outbox *ob, outbox_chan *c)
{
    dg_plugin *p = ob->p;
    const dg_outbox_row *row = &c->q[c->head];
    dg_chat_prepared *post = c->next;
    c->next = NULL;
    if (post && c->next_id != row->id) {
        dg_chat_post_free(post); /* made for a row that is gone */
        post = NULL;
    }
    dg_chat_err e;
    int rc = post ? DG_OK : prepare_row(ob, c, row, &post, &e);
    if (rc == DG_OK)
        rc = dg_chat_pipe_submit(ob->pipe, (uint64_t)row->id, post, &e);
    if (rc == DG_OK) {
        c->inflight = 1;
        ob->fly[ob->n_fly++] = c; /* the pipe took it: fewer than max_inflight fly */
        return;
    }
    if (e.retryable) { /* out of memory: the row waits, it is not at fault */
        dg_log(p, OC_LOG_WARN,
               "outbox: moderator message %lld for channel %s not posted yet "
               "(%s); trying again in %ld ms",
               (long long)row->id, row->channel_id, e.message, outbox_backoff(ob, 1));
        c->not_before = outbox_mono_ms() + outbox_backoff(ob, 1);
        return;
    }
    /* Refused before any request: the row can never be sent as it is. */
    char *reason = strdup(e.message);
    dg_log(p, OC_LOG_ERROR,
           "outbox: moderator message %lld (part %d/%d) for channel %s "
           "failed for good: %s",
           (long long)row->id, row->part, row->parts, row->channel_id, e.message);
    if (reason)
        outbox_decide(ob, c, OUTBOX_FAILED, reason);
    else
        c->not_before = outbox_mono_ms() + outbox_backoff(ob, 1);
}

/* A post of the pipe ended. */
void outbox_on_done(dg_outbox *ob, dg_chat_done *d)
{
    OUTBOX_ON_DISPATCHER(ob);
    dg_plugin *p = ob->p;
    outbox_chan *c = NULL;
    for (size_t i = 0; i < ob->n_fly && !c; i++)
        if (ob->fly[i]->q && ob->fly[i]->q[ob->fly[i]->head].id == (int64_t)d->tag) {
            c = ob->fly[i];
            ob->fly[i] = ob->fly[--ob->n_fly];
        }
    if (!c)
        return;
    c->inflight = 0;
    dg_outbox_row *row = &c->q[c->head];
    if (d->rc == DG_OK) {
        ob->token_ok = 1;
        c->not_before = 0;
        outbox_decide(ob, c, OUTBOX_SENT, strdup(d->message_id));
        return;
    }
    if (outbox_stopping(ob))
        return; /* aborted by shutdown: the row stays as it was */
    dg_chat_err *e = &d->err;
    int attempts = row->attempts + 1;
    const char *platform = dg_platform_title(ob->platform);
    if (e->kind == DG_CHAT_ERR_AUTH) {
        /* The token, not this message: keep every row, stop asking. */
        record_retry(ob, row, e->message); /* best effort: the hold bounds it */
        row->attempts = attempts;
        ob->hold_until = outbox_mono_ms() + OUTBOX_HOLD_AUTH_MS;
        dg_log(p, OC_LOG_ERROR,
               "outbox: %s refuses the moderator token (%s); no moderator message is "
               "sent to %s for the next %ld minutes. Fix %s and restart: the messages "
               "wait, none is lost",
               platform, e->message, platform, OUTBOX_HOLD_AUTH_MS / 60000,
               dg_config_token_home(ob->platform));
        return;
    }
    if (!e->retryable || (ob->o.max_attempts > 0 && attempts >= ob->o.max_attempts)) {
        char reason[700];
        if (e->retryable)
            snprintf(reason, sizeof reason, "%s (gave up after the last allowed attempt)",
                     e->message);
        else if (e->kind == DG_CHAT_ERR_GONE)
            snprintf(reason, sizeof reason, "the channel is gone on %s: %s", platform, e->message);
        else
            snprintf(reason, sizeof reason, "%s refused it (%s): %s", platform,
                     dg_chat_err_kind_name(e->kind), e->message);
        dg_log(p, OC_LOG_ERROR,
               "outbox: moderator message %lld (part %d/%d) for channel %s failed for good "
               "after %d attempt%s: %s",
               (long long)row->id, row->part, row->parts, row->channel_id, attempts,
               attempts == 1 ? "" : "s", reason);
        char *r = strdup(reason);
        if (r) {
            c->not_before = 0;
            outbox_decide(ob, c, OUTBOX_FAILED, r);
        } else {
            c->not_before = outbox_mono_ms() + outbox_backoff(ob, attempts);
        }
        return;
    }
    long wait = outbox_backoff(ob, attempts);
    if (e->retry_after_ms > wait)
        wait = e->retry_after_ms;
    /* When the store cannot count the attempt either, the wait below still
     * applies (it does not grow then: the count stays). */
    if (record_retry(ob, row, e->message) == DG_OK)
        row->attempts = attempts;
    c->not_before = outbox_mono_ms() + wait;
    char of[24] = "";
    if (ob->o.max_attempts > 0)
        snprintf(of, sizeof of, " of %d", ob->o.max_attempts);
    dg_log(p, OC_LOG_WARN,
           "outbox: moderator message %lld for channel %s not sent (attempt %d%s): %s; "
           "trying again in %ld ms",
           (long long)row->id, row->channel_id, attempts, of, e->message, wait);
    outbox_count(ob, OUTBOX_RETRY, 1);
}

/* Post the head row of the channels that may send now, as many as the
 * pipe has room for, oldest row first across channels. Oldest first keeps
 * what is in flight, and so each batch of marks, within a narrow range of
 * ids: a backlog queued round-robin over hundreds of channels, drained
 * channel by channel, marked rows spread over the whole table, one page
 * written to the WAL per row (100k rows cost 1.4-1.9x per row
 * what 1k did). Returns the monotonic time at which a waiting channel is
 * due (INT64_MAX: none). */
int64_t outbox_post_due(dg_outbox *ob)
{
    OUTBOX_ON_DISPATCHER(ob);
    int64_t now = outbox_mono_ms(), next = INT64_MAX;
    if (ob->hold_until > now)
        return ob->hold_until;
    /* Until the platform has accepted the token once, one post at a time: a
     * wrong token costs one refused request, not one per channel. */
    size_t cap = ob->token_ok ? (size_t)ob->o.max_inflight : 1;
    size_t busy = dg_chat_pipe_busy(ob->pipe);
    if (busy >= cap)
        return next;
    size_t room = cap - busy, n_sel = 0;
    outbox_chan *sel[256]; /* the room oldest due channels, ascending by key */
    int64_t key[256];      /* id of the channel's next row (cursor + 1 when none is loaded) */
    for (size_t i = 0; i < ob->n_chans; i++) {
        outbox_chan *c = ob->chans[i];
        if (c->inflight || c->held)
            continue;
        if (c->not_before > now) {
            if (c->not_before < next)
                next = c->not_before;
            continue;
        }
        if (c->head == c->n && c->cursor >= c->known_max)
            continue;
        int64_t k = c->head < c->n ? c->q[c->head].id : c->cursor + 1;
        if (n_sel == room && k >= key[n_sel - 1])
            continue;
        size_t at = n_sel < room ? n_sel++ : n_sel - 1;
        while (at > 0 && key[at - 1] > k) {
            sel[at] = sel[at - 1];
            key[at] = key[at - 1];
            at--;
        }
        sel[at] = c;
        key[at] = k;
    }
    for (size_t i = 0; i < n_sel; i++) {
        outbox_chan *c = sel[i];
        if (!outbox_lease_ok(ob, c, now, &next))
            continue;
        if (c->head == c->n && c->cursor < c->known_max) {
            int rc = outbox_refill(ob, c);
            if (rc != DG_OK) {
                dg_log(ob->p, OC_LOG_ERROR,
                       "outbox: cannot read pending messages of channel %s "
                       "from the store (%s); trying again in 1 s",
                       c->id, dg_status_name(rc));
                c->not_before = now + 1000;
                if (c->not_before < next)
                    next = c->not_before;
                continue;
            }
        }
        if (c->head < c->n)
            post_head(ob, c);
    }
    return next;
}
