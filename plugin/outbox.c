/*
 * outbox.c -- the durable moderator outbox's dispatcher thread: its loop,
 * start, kick and stop.
 *
 * A row is sent in order within its channel (a row that keeps failing
 * holds back the later rows of its channel, never of other channels),
 * marked sent with the platform's message id, retried with back-off,
 * failed for good with the reason (logged at error level). Every send
 * carries the row's key (Discord: a nonce with enforce_nonce, so a resend
 * returns the first message; Slack: looked up in the channel before a row
 * that may have gone out is sent again), so sending again a row the
 * platform accepted just before a crash makes no duplicate.
 * The dispatcher never holds the store lock during HTTP. Discovery runs
 * every OUTBOX_DISCOVER_EVERY_MS as well as on kicks: rows another instance
 * sharing the store queued are found without a kick of this one.
 *
 * The steps: outbox_queue.c (channels and their pending rows),
 * outbox_lease.c (instances sharing a store), outbox_post.c (posting and
 * answers), outbox_record.c (recording outcomes), outbox_prune.c
 * (retention), outbox_enqueue.c (splitting and queueing).
 */
#include "outbox_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t outbox_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int outbox_stopping(dg_outbox *ob)
{
    pthread_mutex_lock(&ob->mu);
    int s = ob->stop;
    pthread_mutex_unlock(&ob->mu);
    return s;
}

long outbox_backoff(const dg_outbox *ob, int failures)
{
    long b = ob->o.backoff_base_ms;
    for (int i = 1; i < failures && b < ob->o.backoff_max_ms; i++)
        b *= 2;
    if (b > ob->o.backoff_max_ms)
        b = ob->o.backoff_max_ms;
    /* Jitter from the clock: several plugins restarting together spread out. */
    long j = b / 4 > 0 ? (long)((unsigned long)outbox_mono_ms() % (unsigned long)(b / 4 + 1)) : 0;
    return b - b / 8 + j;
}

void outbox_count(dg_outbox *ob, outbox_outcome oc, uint64_t n)
{
    pthread_mutex_lock(&ob->mu);
    if (oc == OUTBOX_SENT)
        ob->stats.sent += n;
    else if (oc == OUTBOX_FAILED)
        ob->stats.failed += n;
    else
        ob->stats.retries += n;
    pthread_mutex_unlock(&ob->mu);
}

/* Nothing in memory, nothing owed, discovery caught up. */
static int all_done(const dg_outbox *ob)
{
    if (ob->need_disc || ob->n_dec || dg_chat_pipe_busy(ob->pipe))
        return 0;
    for (size_t i = 0; i < ob->n_chans; i++) {
        const outbox_chan *c = ob->chans[i];
        if (c->head < c->n || c->cursor < c->known_max || c->inflight)
            return 0;
    }
    return 1;
}

/* Begin a pass: 0 when the thread is to end, else the pass's number (a
 * kick or the discovery timer asks for discovery). */
static uint64_t pass_begin(dg_outbox *ob)
{
    pthread_mutex_lock(&ob->mu);
    if (ob->stop) {
        pthread_mutex_unlock(&ob->mu);
        return 0;
    }
    if (ob->kicked || outbox_mono_ms() >= ob->next_disc) {
        ob->need_disc = 1;
        ob->next_disc = outbox_mono_ms() + OUTBOX_DISCOVER_EVERY_MS;
    }
    ob->kicked = 0;
    uint64_t pass_no = ++ob->passes_begun;
    pthread_mutex_unlock(&ob->mu);
    return pass_no;
}

/* Handle the answers of the pipe that came within wait_ms; how many. */
static size_t take_answers(dg_outbox *ob, long wait_ms)
{
    size_t got = dg_chat_pipe_run(ob->pipe, wait_ms, ob->done);
    for (size_t i = 0; i < got; i++)
        outbox_on_done(ob, &ob->done[i]);
    return got;
}

/* While posts fly: the posts just queued go on the wire first; recording
 * what was decided and reading ahead then run while the platform works on them,
 * off the path from one answer to the next post (on one channel that path
 * is the whole rate). Then wait for answers, at most until `next` or the
 * batch is due. */
static void while_flying(dg_outbox *ob, int64_t next)
{
    size_t got = take_answers(ob, 0);
    if (outbox_flush_due(ob, outbox_mono_ms()))
        outbox_flush(ob);
    outbox_refill_ahead(ob);
    outbox_prepare_ahead(ob);
    if (got)
        return; /* channels answered: their next rows may go */
    int64_t until = next;
    if (ob->n_dec && !ob->dec_retry_at && ob->dec[0].since + OUTBOX_MARK_DELAY_MS < until)
        until = ob->dec[0].since + OUTBOX_MARK_DELAY_MS;
    long wait = until == INT64_MAX ? 1000 : (long)(until - outbox_mono_ms());
    /* No broadcast after it: waiters want an idle pass, and waking them on
     * every answer cost a context switch per message. */
    take_answers(ob, wait < 0 ? 0 : wait);
}

/* Something is due now: a channel's next row, or more discovery. Called
 * with ob->mu held. */
static int due_now(const dg_outbox *ob)
{
    OUTBOX_ASSERT_HELD((pthread_mutex_t *)&ob->mu);
    int64_t now = outbox_mono_ms();
    if (ob->need_disc && ob->disc_retry_at <= now)
        return 1;
    for (size_t i = 0; i < ob->n_chans; i++) {
        const outbox_chan *c = ob->chans[i];
        if (!c->held && !c->inflight && c->not_before <= now && ob->hold_until <= now &&
            (c->head < c->n || c->cursor < c->known_max))
            return 1;
    }
    return 0;
}

/* Nothing in flight: report an idle pass to waiters, then sleep until a
 * kick, stop or `next`; go on at once when something is due now. */
static void idle_wait(dg_outbox *ob, uint64_t pass_no, int64_t next)
{
    outbox_chans_sweep(ob);
    int empty = all_done(ob);
    pthread_mutex_lock(&ob->mu);
    if (empty) {
        ob->idle_pass = pass_no;
        pthread_cond_broadcast(&ob->cond);
    }
    int busy_now = due_now(ob);
    while (!busy_now && !ob->stop && !ob->kicked && outbox_mono_ms() < next) {
        if (next == INT64_MAX) {
            pthread_cond_wait(&ob->cond, &ob->mu);
        } else {
            struct timespec ts = {(time_t)(next / 1000), (long)(next % 1000) * 1000000L};
            pthread_cond_timedwait(&ob->cond, &ob->mu, &ts);
        }
    }
    pthread_mutex_unlock(&ob->mu);
}

/* The thread: discover, post what is due, handle answers, record, sleep. */
static void *dispatcher(void *arg)
{
    dg_outbox *ob = arg;
    ob->self = pthread_self();
    dg_log_own_thread(); /* a plugin thread: never waits on the host */
    ob->need_disc = 1;
    for (;;) {
        outbox_prune_due(ob);
        uint64_t pass_no = pass_begin(ob);
        if (!pass_no)
            break;
        int64_t now = outbox_mono_ms();
        if (ob->need_disc && ob->disc_retry_at <= now)
            outbox_discover(ob);
        int64_t next = outbox_post_due(ob);
        if (ob->disc_retry_at > now && ob->disc_retry_at < next)
            next = ob->disc_retry_at;
        if (ob->dec_retry_at && ob->dec_retry_at < next)
            next = ob->dec_retry_at;
        if (ob->next_disc < next)
            next = ob->next_disc;
        if (dg_chat_pipe_busy(ob->pipe)) {
            while_flying(ob, next);
            continue;
        }
        /* Nothing in flight: what was decided is recorded before any wait. */
        if (ob->n_dec && ob->dec_retry_at <= outbox_mono_ms()) {
            outbox_flush(ob);
            if (!ob->n_dec)
                continue; /* channels held by the batch may go on */
        }
        if (ob->dec_retry_at && ob->dec_retry_at < next)
            next = ob->dec_retry_at;
        idle_wait(ob, pass_no, next);
    }
    /* What the platform decided is recorded before the thread ends (one
     * try: a row the store still refuses goes out again at the next start,
     * under its key). */
    if (ob->n_dec && ob->dec_retry_at <= outbox_mono_ms())
        outbox_flush(ob);
    outbox_leases_release(ob, ob->chans, ob->n_chans); /* the next holder need not wait */
    return NULL;
}

int dg_outbox_start_on(dg_plugin *p, dg_chat *chat, const dg_outbox_options *o, dg_outbox **out,
                       char *err, size_t err_len)
{
    char scratch[4];
    if (!err || !err_len) {
        err = scratch;
        err_len = sizeof scratch;
    }
    if (!out) {
        snprintf(err, err_len, "outbox: no place to store the dispatcher");
        return DG_ERR_INVALID;
    }
    *out = NULL;
    if (!p || !p->store || !chat) {
        snprintf(err, err_len,
                 "outbox: needs an open store and a chat client (set the moderator's token: "
                 "discord.moderatorToken, DIRIGENT_SLACK_MODERATOR_TOKEN)");
        return DG_ERR_INVALID;
    }
    dg_outbox *ob = calloc(1, sizeof *ob);
    if (!ob) {
        snprintf(err, err_len, "outbox: out of memory");
        return DG_ERR_NOMEM;
    }
    ob->p = p;
    ob->chat = chat;
    ob->platform = dg_chat_platform(chat);
    if (o)
        ob->o = *o;
    if (ob->o.backoff_base_ms <= 0)
        ob->o.backoff_base_ms = 1000;
    if (ob->o.backoff_max_ms <= 0)
        ob->o.backoff_max_ms = 60000;
    if (ob->o.backoff_max_ms < ob->o.backoff_base_ms)
        ob->o.backoff_max_ms = ob->o.backoff_base_ms;
    if (ob->o.max_attempts < 0)
        ob->o.max_attempts = 0;
    if (ob->o.batch == 0)
        ob->o.batch = 64;
    if (ob->o.max_inflight <= 0)
        ob->o.max_inflight = OUTBOX_DEFAULT_INFLIGHT;
    if (ob->o.max_inflight > 256)
        ob->o.max_inflight = 256;
    if (ob->o.lease_ms <= 0)
        ob->o.lease_ms = OUTBOX_DEFAULT_LEASE_MS;
    if (ob->o.lease_ms < 200)
        ob->o.lease_ms = 200;
    ob->done = calloc((size_t)ob->o.max_inflight, sizeof *ob->done);
    ob->fly = calloc((size_t)ob->o.max_inflight, sizeof *ob->fly);
    if (!ob->done || !ob->fly ||
        dg_chat_pipe_new(chat, (size_t)ob->o.max_inflight, &ob->pipe) != DG_OK) {
        snprintf(err, err_len, "outbox: out of memory");
        free(ob->done);
        free(ob->fly);
        free(ob);
        return DG_ERR_NOMEM;
    }
    int brc = dg_store_begin(p->store);
    if (brc == DG_OK)
        brc = dg_store_end(p->store, dg_store_outbox_max_pending_id(p->store, &ob->boot_max_id));
    if (brc != DG_OK) {
        ob->boot_max_id = INT64_MAX; /* unknown: every row counts as maybe posted */
        dg_log(p, OC_LOG_WARN,
               "outbox: could not read the pending messages at start (%s); each is checked "
               "against the channel before it is sent where the platform needs that",
               dg_status_name(brc));
    }
    pthread_mutex_init(&ob->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ob->cond, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&ob->thread, NULL, dispatcher, ob);
    if (rc != 0) {
        snprintf(err, err_len, "outbox: cannot start the dispatcher thread: %s", strerror(rc));
        pthread_cond_destroy(&ob->cond);
        pthread_mutex_destroy(&ob->mu);
        dg_chat_pipe_free(ob->pipe);
        free(ob->done);
        free(ob->fly);
        free(ob);
        return DG_ERR_IO;
    }
    ob->started = 1;
    *out = ob;
    return DG_OK;
}

int dg_outbox_start_opts(dg_plugin *p, const dg_outbox_options *o, dg_outbox **out, char *err,
                         size_t err_len)
{
    return dg_outbox_start_on(p, p ? p->chat : NULL, o, out, err, err_len);
}

int dg_outbox_start(dg_plugin *p, dg_outbox **out, char *err, size_t err_len)
{
    return dg_outbox_start_opts(p, NULL, out, err, err_len);
}

void dg_outbox_kick_all(dg_plugin *p)
{
    dg_outbox_kick(p->outbox);
    dg_outbox_kick(p->slack_outbox);
}

void dg_outbox_kick(dg_outbox *ob)
{
    if (!ob)
        return;
    pthread_mutex_lock(&ob->mu);
    ob->kicked = 1;
    pthread_cond_broadcast(&ob->cond);
    pthread_mutex_unlock(&ob->mu);
    dg_chat_pipe_wakeup(ob->pipe);
}

void dg_outbox_stop(dg_outbox *ob)
{
    if (!ob)
        return;
    pthread_mutex_lock(&ob->mu);
    ob->stop = 1;
    pthread_cond_broadcast(&ob->cond);
    pthread_mutex_unlock(&ob->mu);
    /* A transfer or rate-limit wait in flight ends within ~50 ms. */
    dg_chat_set_abort(ob->chat, 1);
    dg_chat_pipe_wakeup(ob->pipe);
    if (ob->started)
        pthread_join(ob->thread, NULL);
    dg_chat_set_abort(ob->chat, 0);
    for (size_t i = 0; i < ob->n_dec; i++) {
        dg_log(ob->p, OC_LOG_ERROR,
               "outbox: moderator message %lld was %s by %s but never recorded (the "
               "store kept failing); it stays pending and is posted again at the next "
               "start under the same key, which keeps %s from showing it twice",
               (long long)ob->dec[i].row_id,
               ob->dec[i].oc == OUTBOX_SENT ? "accepted" : "refused for good",
               dg_platform_title(ob->platform), dg_platform_title(ob->platform));
        free(ob->dec[i].detail);
    }
    free(ob->dec);
    for (size_t i = 0; i < ob->n_chans; i++)
        outbox_chan_free(ob->chans[i]);
    free(ob->chans);
    dg_chat_pipe_free(ob->pipe);
    free(ob->done);
    free(ob->fly);
    pthread_cond_destroy(&ob->cond);
    pthread_mutex_destroy(&ob->mu);
    free(ob);
}

int dg_outbox_wait_idle(dg_outbox *ob, long timeout_ms)
{
    if (!ob)
        return DG_ERR_INVALID;
    int64_t until = outbox_mono_ms() + timeout_ms;
    pthread_mutex_lock(&ob->mu);
    uint64_t after = ob->passes_begun;
    ob->kicked = 1; /* make sure a pass begins */
    pthread_cond_broadcast(&ob->cond);
    while (!(ob->idle_pass > after) && !ob->stop && outbox_mono_ms() < until) {
        struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
        pthread_cond_timedwait(&ob->cond, &ob->mu, &ts);
    }
    int ok = ob->idle_pass > after;
    pthread_mutex_unlock(&ob->mu);
    return ok ? DG_OK : DG_ERR_IO;
}

void dg_outbox_get_stats(dg_outbox *ob, dg_outbox_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!ob)
        return;
    pthread_mutex_lock(&ob->mu);
    *out = ob->stats;
    pthread_mutex_unlock(&ob->mu);
}
