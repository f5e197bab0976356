/*
 * turns_sweeper.c -- the turn engine's timeout thread: about once a second
 * it moves the turn on where a speaker ran out of time, and it keeps the
 * mirror small (dormant thread scopes leave it). Records and locking:
 * turns_int.h, turns_engine.c.
 */
#include "buf.h"
#include "turns_int.h"

/* ---- turn timeouts ----------------------------------------------------------------- */

/* After a start: a run of r's speaker that was under way at the stop is
 * gone with it, and the message it answered may have been the last one;
 * the stall nudge mentions the speaker if no run of it starts within
 * turn.nudgeSec. Writer held. */
static void arm_after_start(dg_turns *t, turns_scope *r, int64_t now)
{
    dg_rule_ctx x;
    turns_make_ctx(t, r->chan, &x);
    int sp = r->st.active && r->chan->mode != DG_MODE_CLOSED && dg_rule_managed(&x)
                 ? dg_rule_speaker(&r->st, &x)
                 : DG_NOBODY;
    if (sp == DG_NOBODY || atomic_load(&r->run_pos) == sp || atomic_load(&r->wait_pos) != DG_NOBODY)
        return; /* a run of it is under way, or a message armed the wait already */
    atomic_store(&r->wait_ms, now);
    atomic_store(&r->wait_pos, sp);
}

/* Load every awake scope of the database into the mirror (after a start or
 * a flush), where the sweeper looks for speakers out of time. */
static int load_awake(dg_turns *t)
{
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    int arm = atomic_load(&t->arm_after_start) && t->p->cfg.turn_nudge_sec > 0;
    int64_t now = dg_now_ms(t->p);
    dg_scope *v = NULL;
    size_t n = 0;
    int rc = dg_store_turns_active_scopes(t->p->store, &v, &n);
    for (size_t i = 0; rc == DG_OK && i < n; i++) {
        turns_chan *c;
        turns_scope *r;
        if ((rc = turns_chan_get(t, v[i].channel_id, &c)) == DG_OK)
            rc = turns_scope_get(t, c, &v[i], &r);
        if (rc == DG_OK && arm)
            arm_after_start(t, r, now);
    }
    free(v);
    turns_txn_finish_read(t); /* what was loaded is what the database holds */
    if (rc == DG_OK)
        atomic_store(&t->arm_after_start, 0);
    return rc;
}

typedef struct due_list {
    const dg_turns *t;
    int64_t now, timeout_ms;
    dg_scope *v;
    size_t n, cap;
    int nomem;
} due_list;

/* Mirror read lock held. */
static void collect_due(void *val, void *arg)
{
    const turns_scope *r = val;
    due_list *d = arg;
    if (d->nomem || !r->st.active || r->chan->mode == DG_MODE_CLOSED ||
        d->now - r->st.last_change_ms < d->timeout_ms)
        return;
    if (dg_grow(&d->v, &d->cap, d->n, sizeof *d->v, 16)) {
        d->nomem = 1;
        return;
    }
    d->v[d->n++] = r->scope;
}

/* Mirror read lock held: r's speaker was never shown receiving the
 * channel, for TURNS_UNREACHED_MS now (turns_drop_unreachable_speaker): the host
 * reports each message to every session that receives the channel, and
 * the message that gave it the turn was reported to none of its. */
static void collect_unreached(void *val, void *arg)
{
    const turns_scope *r = val;
    due_list *d = arg;
    const turns_chan *c = r->chan;
    if (d->nomem || !r->st.active || c->mode != DG_MODE_NORMAL)
        return;
    dg_rule_ctx x;
    turns_make_ctx(d->t, c, &x);
    int sp = dg_rule_managed(&x) ? dg_rule_speaker(&r->st, &x) : DG_NOBODY;
    if (sp == DG_NOBODY || c->standing[sp] != DG_MEMBER_NEW ||
        d->now - turns_unreached_since(c, &r->st, sp) < TURNS_UNREACHED_MS)
        return;
    if (dg_grow(&d->v, &d->cap, d->n, sizeof *d->v, 16)) {
        d->nomem = 1;
        return;
    }
    d->v[d->n++] = r->scope;
}

/* Scope sc and its channel, loaded or from the mirror. Writer held. */
static int load_scope(dg_turns *t, const dg_scope *sc, turns_chan **c, turns_scope **r)
{
    int rc = turns_chan_get(t, sc->channel_id, c);
    return rc == DG_OK ? turns_scope_get(t, *c, sc, r) : rc;
}

/* turns_drop_unreachable_speaker for scope sc, in a change of its own. */
static int drop_unreached(dg_turns *t, const dg_scope *sc)
{
    int64_t now = dg_now_ms(t->p);
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    turns_chan *c;
    turns_scope *r = NULL;
    int kick = 0, rc = load_scope(t, sc, &c, &r);
    if (rc == DG_OK) /* it checks the time again, under the writer */
        rc = turns_drop_unreachable_speaker(t, r, DG_NOBODY, now, &kick);
    rc = turns_txn_finish(t, rc);
    if (rc == DG_OK && kick)
        dg_outbox_kick_all(t->p);
    return rc;
}

/* Speaker sp of r is out of time at now and the host never showed it
 * running in r's channel (its standing is below DG_MEMBER_RAN). */
static int never_ran_out_of_time(const turns_scope *r, const dg_rule_ctx *x, int sp, int64_t now)
{
    return sp != DG_NOBODY && r->st.active && x->timeout_ms > 0 &&
           now - r->st.last_change_ms >= x->timeout_ms && r->chan->standing[sp] < DG_MEMBER_RAN &&
           r->chan->mode == DG_MODE_NORMAL;
}

/* dg_rule_expire on next; 1 when that changed it. */
static int expired(dg_turn_state *next, const dg_rule_ctx *x, int64_t now, dg_rule_effects *fx)
{
    dg_turn_state before = *next;
    dg_rule_expire(next, x, now, fx);
    return !dg_turn_state_same(next, &before);
}

/* Apply turn.timeoutSec to scope sc now, with the moderator messages it
 * owes (a hand-off to a next speaker who already consumed the latest
 * message, a discussion's idle reminder): what a hook would do lazily, done
 * although no hook comes. */
static int expire_scope(dg_turns *t, const dg_scope *sc)
{
    int64_t now = dg_now_ms(t->p);
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    turns_chan *c;
    turns_scope *r = NULL;
    int kick = 0, rc = load_scope(t, sc, &c, &r);
    if (rc == DG_OK && c->mode != DG_MODE_CLOSED) {
        dg_rule_ctx x;
        turns_make_ctx(t, c, &x);
        dg_rule_effects fx;
        dg_rule_effects_init(&fx);
        dg_turn_state next = r->st;
        int late = dg_rule_speaker(&r->st, &x);
        if (never_ran_out_of_time(r, &x, late, now)) {
            /* Mentioned, never seen running there: most likely it cannot
             * read the channel; the order must not wait on it again. */
            char cause[200];
            snprintf(cause, sizeof cause,
                     "%s did not run within turn.timeoutSec (%lds) and "
                     "never ran in this channel: it left the turn order",
                     c->members[late], (long)t->p->cfg.turn_timeout_sec);
            dg_log(t->p, OC_LOG_INFO,
                   "turns: %s never ran in channel %s and did not take its "
                   "turn within turn.timeoutSec; it leaves the channel's turn order (it comes "
                   "back when it runs or posts there, or is @mentioned)",
                   c->members[late], c->id);
            rc = turns_member_leave(t, r, late, DG_MEMBER_LEFT, DG_NOBODY, now, cause, &kick);
            if (rc == DG_OK)
                turns_nudge_run_ended(r, late, now);
        } else if (expired(&next, &x, now, &fx)) {
            char label[DG_SCOPE_LABEL_MAX];
            dg_log(t->p, OC_LOG_INFO,
                   "turns: %s did not finish within turn.timeoutSec (%lds) in "
                   "channel %s (%s); the turn passes on",
                   late >= 0 && late < c->n ? c->members[late] : "the speaker",
                   (long)t->p->cfg.turn_timeout_sec, c->id, dg_scope_label(&r->scope, label));
            char cause[160];
            snprintf(cause, sizeof cause,
                     "%s did not finish within turn.timeoutSec (%lds): "
                     "timed out",
                     late >= 0 && late < c->n ? c->members[late] : "the speaker",
                     (long)t->p->cfg.turn_timeout_sec);
            if ((rc = turns_save_scope(t, r, &next, now, cause)) == DG_OK &&
                (rc = turns_queue_effects(t, r, &fx, &next, now, &kick)) == DG_OK)
                rc = turns_install(t, r, &next);
            /* A run that outlived its turn no longer counts as under way
             * (its agent_end may never come). */
            if (rc == DG_OK && late != DG_NOBODY)
                turns_nudge_run_ended(r, late, now);
            if (rc == DG_OK)
                turns_nudge_arm_new_speaker(t, r, &next, late, fx.handoff_to, now);
        }
    }
    if (rc != DG_OK)
        dg_log(t->p, OC_LOG_ERROR,
               "turns: could not apply the turn timeout in channel %s (%s: "
               "%s); retried shortly",
               sc->channel_id, dg_status_name(rc), dg_store_errmsg(t->p->store));
    rc = turns_txn_finish(t, rc);
    if (rc == DG_OK && kick)
        dg_outbox_kick_all(t->p);
    return rc;
}

typedef struct evict_scan {
    int64_t now;
    size_t n;       /* evictable by age */
    size_t dormant; /* dormant thread scopes (evictable by count) */
    int64_t *ages;  /* their last changes, when collected */
    size_t n_ages;
    int64_t cutoff; /* dormant ones changed at or before this leave too */
} evict_scan;

/* A dormant thread scope that is not the one channel-level sessions
 * follow: it may leave the mirror. Mirror lock held. */
static int dormant_thread(const turns_scope *r)
{
    return r->scope.kind == DG_SCOPE_THREAD && !r->st.active && r != r->chan->follow;
}

/* A dormant thread scope nobody has touched for TURNS_EVICT_IDLE_MS, or one of
 * the oldest past the count bound (cutoff). Mirror lock held. */
static int evictable(const turns_scope *r, const evict_scan *e)
{
    return dormant_thread(r) && (e->now - r->st.last_change_ms >= TURNS_EVICT_IDLE_MS ||
                                 r->st.last_change_ms <= e->cutoff);
}

static void count_evictable(void *val, void *arg)
{
    evict_scan *e = arg;
    const turns_scope *r = val;
    e->n += evictable(r, e);
    e->dormant += dormant_thread(r);
}

static void collect_ages(void *val, void *arg)
{
    evict_scan *e = arg;
    const turns_scope *r = val;
    if (dormant_thread(r) && e->n_ages < e->dormant)
        e->ages[e->n_ages++] = r->st.last_change_ms;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int keep_scope(void *val, void *arg)
{
    (void)arg;
    return !((turns_scope *)val)->evict;
}

static int keep_sess(void *val, void *arg)
{
    (void)arg;
    turns_sess *e = val;
    turns_scope *last = atomic_load(&e->last);
    return !(e->fixed && e->fixed->evict) && !(last && last->evict);
}

static void mark_evict(void *val, void *arg)
{
    turns_scope *r = val;
    r->evict = evictable(r, arg);
}

static void unmark_evict(void *val, void *arg)
{
    (void)arg;
    ((turns_scope *)val)->evict = 0;
}

/* The mirror size at which an ingest next looks for scopes to evict.
 * Write lock held. */
static void set_evict_at(dg_turns *t)
{
    size_t next = t->scopes.n + t->dormant_max / 4;
    t->evict_at = next > t->dormant_max ? next : t->dormant_max;
}

/*
 * Drop idle thread scopes and their sessions from the mirror: under the
 * thread policy every thread (every top-level message, without Discord
 * threads) is a scope, and the mirror would otherwise grow for as long as
 * the process lives. Idle ones leave after TURNS_EVICT_IDLE_MS; past
 * t->dormant_max dormant ones, the least recently changed leave at once.
 * A later event reloads what it needs from the database. Between changes
 * (writer mutex) and with no reader (write lock).
 */
static void evict_idle(dg_turns *t, int64_t now)
{
    evict_scan e = {.now = now, .cutoff = INT64_MIN};
    pthread_rwlock_rdlock(&t->lock);
    dg_map_each(&t->scopes, count_evictable, &e);
    int over = t->scopes.n > t->evict_at;
    pthread_rwlock_unlock(&t->lock);
    if (!e.n && e.dormant <= t->dormant_max && !over)
        return;
    turns_writer_lock(t);
    pthread_rwlock_wrlock(&t->lock);
    if (!e.n && e.dormant <= t->dormant_max) {
        /* Nothing may leave (channel scopes, or awake ones) yet the mirror
         * is past the bound: the next scan waits for dormant_max/4 more
         * scopes, or every ingest would walk the whole map again. */
        set_evict_at(t);
        pthread_rwlock_unlock(&t->lock);
        turns_writer_unlock(t);
        return;
    }
    if (e.dormant > t->dormant_max && (e.ages = malloc(e.dormant * sizeof *e.ages))) {
        /* Counted again under the lock: the map may have changed. */
        dg_map_each(&t->scopes, collect_ages, &e);
        size_t keep = t->dormant_max - t->dormant_max / 4;
        if (e.n_ages > keep) {
            qsort(e.ages, e.n_ages, sizeof *e.ages, cmp_i64);
            e.cutoff = e.ages[e.n_ages - keep - 1];
        }
        free(e.ages);
        e.ages = NULL;
    }
    dg_map_each(&t->scopes, mark_evict, &e);
    /* Sessions first: keep_sess reads the scopes' marks. */
    if (dg_map_retain(&t->sessions, keep_sess, turns_free_sess, NULL) != DG_OK ||
        dg_map_retain(&t->scopes, keep_scope, turns_free_scope, NULL) != DG_OK)
        dg_map_each(&t->scopes, unmark_evict, NULL); /* out of memory: next time */
    set_evict_at(t);
    pthread_rwlock_unlock(&t->lock);
    turns_writer_unlock(t);
}

/* After an ingest: a mirror past its bound is trimmed at once, not at the
 * sweeper's next pass (a burst of top-level messages would otherwise grow
 * it by as many as arrive in a second). */
void turns_evict_if_over(dg_turns *t, int64_t now)
{
    pthread_rwlock_rdlock(&t->lock);
    int over = t->scopes.n > t->evict_at;
    pthread_rwlock_unlock(&t->lock);
    if (over)
        evict_idle(t, now);
}

void dg_turns_set_dormant_max(dg_turns *t, size_t n)
{
    turns_writer_lock(t);
    pthread_rwlock_wrlock(&t->lock);
    t->dormant_max = t->evict_at = n ? n : TURNS_DORMANT_MAX;
    pthread_rwlock_unlock(&t->lock);
    turns_writer_unlock(t);
}

/* One pass: every awake scope whose speaker is out of time moves on. */
static void sweep(dg_turns *t)
{
    if (atomic_exchange(&t->rescan, 0) && load_awake(t) != DG_OK)
        atomic_store(&t->rescan, 1);
    dg_discuss_sweep(t->p); /* discussion timers: their own transactions */
    due_list d = {
        .t = t, .now = dg_now_ms(t->p), .timeout_ms = (int64_t)t->p->cfg.turn_timeout_sec * 1000};
    if (atomic_load(&t->per_agent)) {
        due_list u = {.t = t, .now = d.now};
        pthread_rwlock_rdlock(&t->lock);
        dg_map_each(&t->scopes, collect_unreached, &u);
        pthread_rwlock_unlock(&t->lock);
        for (size_t i = 0; i < u.n; i++)
            drop_unreached(t, &u.v[i]);
        free(u.v);
    }
    if (d.timeout_ms > 0) {
        pthread_rwlock_rdlock(&t->lock);
        dg_map_each(&t->scopes, collect_due, &d);
        pthread_rwlock_unlock(&t->lock);
        for (size_t i = 0; i < d.n; i++)
            expire_scope(t, &d.v[i]);
        free(d.v);
    }
    /* After the timeouts: a speaker passed over is not nudged. */
    turns_nudge_stalled(t, d.now);
    evict_idle(t, d.now);
}

void dg_turns_sweep_now(dg_turns *t)
{
    sweep(t);
}

/* The sweeper thread (started by dg_turns_start, joined by dg_turns_stop):
 * a speaker whose run hangs or whose host never reports agent_end must not
 * hold a quiet channel forever; nothing else would move it, since every
 * other path applies the timeout only when an event arrives. */
static void *sweeper(void *arg)
{
    dg_turns *t = arg;
    dg_log_own_thread(); /* a plugin thread: never waits on the host */
    pthread_mutex_lock(&t->sw_mu);
    while (!t->sw_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += TURNS_SWEEP_EVERY_MS / 1000;
        ts.tv_nsec += (long)(TURNS_SWEEP_EVERY_MS % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (!t->sw_stop && pthread_cond_timedwait(&t->sw_cv, &t->sw_mu, &ts) == 0)
            ;
        if (t->sw_stop)
            break;
        pthread_mutex_unlock(&t->sw_mu);
        dg_agent_names_refresh(t->names, t->p, dg_now_ms(t->p));
        sweep(t);
        pthread_mutex_lock(&t->sw_mu);
    }
    pthread_mutex_unlock(&t->sw_mu);
    return NULL;
}

int dg_turns_start(dg_turns *t)
{
    if (!t || t->sweeper_started)
        return DG_OK;
    if (pthread_create(&t->sweeper, NULL, sweeper, t) != 0) {
        dg_log(t->p, OC_LOG_ERROR,
               "turns: could not start the turn-timeout thread; a speaker "
               "that never finishes keeps the turn until the next message");
        return DG_ERR_INTERNAL;
    }
    t->sweeper_started = 1;
    return DG_OK;
}

void dg_turns_stop(dg_turns *t)
{
    if (!t || !t->sweeper_started)
        return;
    pthread_mutex_lock(&t->sw_mu);
    t->sw_stop = 1;
    pthread_cond_broadcast(&t->sw_cv);
    pthread_mutex_unlock(&t->sw_mu);
    pthread_join(t->sweeper, NULL);
    t->sweeper_started = 0;
}
