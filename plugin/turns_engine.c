/*
 * turns_engine.c -- the turn manager wired to store, outbox and clock
 * (contract in turns_engine.h; the rules themselves live in turns.c): the
 * transactions every change runs in and the publishing of their states,
 * the engine's life cycle and diagnostics. Its other files (turns_int.h
 * lists them) are the mirror, silenced runs, moderator messages, the
 * discussion channels' entry points, the sweeper, ingest, admin commands
 * and the agent hooks' decisions.
 *
 * Locking. Every change of the engine runs between turns_txn_begin() and
 * turns_txn_finish(): the engine's writer mutex, then the store transaction. Only
 * such a writer loads rows into the mirror or changes it, and it does so
 * under the mirror's write lock, so read-only hooks (before_model_resolve,
 * message_sending) decide under the read lock alone. Lock order: writer
 * mutex, store mutex, mirror lock. A record is freed only by a flush, which
 * also runs inside a writer, so a change in progress never loses its
 * records.
 *
 * Commit before publish. A scope's new turn state is installed in the
 * mirror only after its transaction has committed (turns_txn_finish()), still inside
 * the writer: a reader never decides on a change that may yet be rolled
 * back, and a failed commit drops the mirror before another writer can
 * build on it (the writer mutex is held until then, although the store
 * mutex is released by the commit itself).
 *
 * Discussion prefill/close run inside the discussion code's transaction,
 * not as an engine writer; they log the channel they changed in the
 * engine's change ring, and the engine reloads that channel's records in
 * place before its next decision (after that transaction has ended). In
 * place, so the runs in flight elsewhere (and there) keep what their
 * resolve recorded.
 */
#include "buf.h"
#include "store_outbox.h"
#include "turns_int.h"

/* Any thread. channel_id is shorter than DG_SCOPE_ID_MAX (checked); wake
 * (NULL: none) is the agent that awaits a wake message there once the
 * change has committed (an id too long is not recorded: no wait). */
void turns_log_channel_change(dg_turns *t, const char *channel_id, const char *wake)
{
    pthread_mutex_lock(&t->inval_mu);
    uint64_t n = atomic_load(&t->inval_seq);
    turns_inval *e = &t->inval[n % TURNS_INVAL_RING];
    snprintf(e->channel, sizeof e->channel, "%s", channel_id);
    e->wake[0] = '\0';
    if (wake && strlen(wake) < sizeof e->wake)
        snprintf(e->wake, sizeof e->wake, "%s", wake);
    atomic_store(&t->inval_seq, n + 1);
    pthread_mutex_unlock(&t->inval_mu);
}

/*
 * A discussion was opened in channel_id with agent as its first speaker,
 * and the kickoff that wakes it is queued: agent awaits it in the
 * channel's conversation (turns_engine.h "Awaiting the wake message"),
 * if this engine tracks deliveries and agent holds the turn there now.
 * Runs before any other change of this engine sees the new state, so the
 * kickoff's delivery (a later change) always finds the wait. Writer held.
 */
static int arm_kickoff(dg_turns *t, const char *channel_id, const char *agent)
{
    if (!atomic_load(&t->wake_tracking))
        return DG_OK;
    turns_chan *c;
    turns_scope *r;
    dg_scope sc;
    int rc = turns_chan_get(t, channel_id, &c);
    if (rc == DG_OK)
        rc = dg_scope_conversation(channel_id, &sc);
    if (rc == DG_OK)
        rc = turns_scope_get(t, c, &sc, &r);
    if (rc != DG_OK)
        return rc;
    int pos = turns_member_pos(c, agent);
    if (c->mode != DG_MODE_DISCUSSION || pos == DG_NOBODY)
        return DG_OK;
    dg_rule_ctx x;
    turns_make_ctx(t, c, &x);
    pthread_rwlock_wrlock(&t->lock);
    int armed = dg_rule_await_wake(&r->st, &x, pos);
    pthread_rwlock_unlock(&t->lock);
    if (armed)
        dg_log(t->p, OC_LOG_DEBUG,
               "turns: %s opens discussion channel %s and awaits the kickoff; "
               "its runs before it arrives do not count",
               agent, channel_id);
    return DG_OK;
}

/* Apply the channel change log to the mirror. Writer held (turns_txn_begin). */
static void sync_changes(dg_turns *t)
{
    uint64_t seen = atomic_load(&t->inval_seen);
    if (atomic_load(&t->inval_seq) == seen)
        return;
    turns_inval *chans = NULL;
    pthread_mutex_lock(&t->inval_mu);
    uint64_t now = atomic_load(&t->inval_seq);
    size_t n = (size_t)(now - seen);
    if (n <= TURNS_INVAL_RING && (chans = malloc(n * sizeof *chans)))
        for (size_t i = 0; i < n; i++)
            chans[i] = t->inval[(seen + i) % TURNS_INVAL_RING];
    pthread_mutex_unlock(&t->inval_mu);
    int ok = chans != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        ok = turns_refresh_channel(t, chans[i].channel, 0) == DG_OK;
        if (ok && chans[i].wake[0])
            ok = arm_kickoff(t, chans[i].channel, chans[i].wake) == DG_OK;
    }
    free(chans);
    pthread_rwlock_wrlock(&t->lock);
    if (!ok)
        turns_flush_locked(t); /* too far behind, or a reload failed: start over */
    atomic_store(&t->inval_seen, now);
    pthread_rwlock_unlock(&t->lock);
}

/*
 * Apply what other instances sharing the store committed (store_instances.h):
 * the channels they changed since t->applied are reloaded in place, like a
 * discussion's prefill. Writer held, inside the write transaction, so
 * nobody commits in between and the decision that follows reads what the
 * database holds. A failed reload drops the whole mirror.
 */
static void sync_store(dg_turns *t)
{
    char **ch = NULL;
    size_t n = 0;
    int64_t upto = 0;
    int rc = dg_store_changes_since(t->p->store, atomic_load(&t->applied), &ch, &n, &upto);
    if (rc == DG_OK && n)
        t->shared_seen = 1;
    for (size_t i = 0; rc == DG_OK && i < n; i++)
        rc = turns_refresh_channel(t, ch[i], 1);
    for (size_t i = 0; i < n; i++)
        free(ch[i]);
    free(ch);
    if (rc != DG_OK) {
        pthread_rwlock_wrlock(&t->lock);
        turns_flush_locked(t);
        pthread_rwlock_unlock(&t->lock);
    }
    if (upto > atomic_load(&t->applied))
        atomic_store(&t->applied, upto);
}

/*
 * Ask for the lines of c's records the ingest of a message reads, without
 * waiting for them. With thousands of channels a channel's records are out
 * of the caches when its next message comes (every other channel's work
 * came between); fetched one after another as the code reaches them they
 * cost a memory round trip each. Writer mutex held (the records stay).
 */
static void warm_channel(const dg_turns *t, const char *channel_id, uint64_t h)
{
    const turns_chan *c = dg_map_get_hashed(&t->chans, channel_id, h);
    if (!c)
        return;
    const turns_scope *r = c->conv;
    __builtin_prefetch(&c->marks);
    __builtin_prefetch(&c->member_hash);
    __builtin_prefetch(c->standing);
    __builtin_prefetch(c->received);
    /* The ids taken in (every message's dedup compares with them). */
    __builtin_prefetch(c->taken);
    __builtin_prefetch(&c->taken[TURNS_TAKEN_MAX / 2]);
    __builtin_prefetch(&c->taken_head);
    /* The sender's name is compared, the speakers' are logged. */
    for (int i = 0; i < c->n && i < 16; i++)
        __builtin_prefetch(c->members[i]);
    if (!r)
        return;
    __builtin_prefetch(r);
    __builtin_prefetch(&r->st);
    __builtin_prefetch((const char *)&r->st + 64);
    __builtin_prefetch(r->wake_fp);
    __builtin_prefetch(&r->recent_head);
    __builtin_prefetch(&r->wait_pos);
}

void turns_writer_lock(dg_turns *t)
{
    pthread_mutex_lock(&t->wmu);
    dg_lock_owner_take(&t->wmu_owner);
}

void turns_writer_unlock(dg_turns *t)
{
    dg_lock_owner_drop(&t->wmu_owner);
    pthread_mutex_unlock(&t->wmu);
}

/* Start a change: the writer mutex, then a store transaction; the mirror
 * is brought up to date with changes made outside the engine. DG_OK or
 * DG_ERR_IO (nothing held then). With a channel, its map slot is asked for
 * before BEGIN (it arrives while the kernel takes SQLite's locks) and its
 * records right after, ahead of the sync. */
static int begin_locked(dg_turns *t, const char *channel_id)
{
    uint64_t h = channel_id ? dg_map_prefetch(&t->chans, channel_id) : 0;
    if (dg_store_begin(t->p->store) != DG_OK) {
        turns_writer_unlock(t);
        return DG_ERR_IO;
    }
    if (channel_id)
        warm_channel(t, channel_id, h);
    t->txn_chan_id = channel_id;
    t->txn_chan_hash = h;
    sync_changes(t);
    sync_store(t);
    return DG_OK;
}

int turns_txn_begin_for(dg_turns *t, const char *channel_id)
{
    turns_writer_lock(t);
    return begin_locked(t, channel_id);
}

int turns_txn_begin(dg_turns *t)
{
    turns_writer_lock(t);
    return begin_locked(t, NULL);
}

/*
 * End a change: commit when rc is DG_OK, else roll back. After a commit
 * the pending scope states are published; after a rollback or a failed
 * commit the whole mirror is dropped (records loaded or changed in the
 * transaction may not match the database) and reloaded on demand. Both
 * under the mirror's write lock, before the writer mutex is released.
 */
int turns_txn_finish(dg_turns *t, int rc)
{
    TURNS_ASSERT_WRITER(t);
    t->txn_chan_id = NULL;
    int64_t wrote = dg_store_txn_change_seq(t->p->store);
    if (rc == DG_OK)
        rc = dg_store_commit(t->p->store);
    else
        dg_store_rollback(t->p->store);
    /* Synced at turns_txn_begin under the write lock: every sequence below ours
     * is applied. */
    if (rc == DG_OK && wrote > atomic_load(&t->applied))
        atomic_store(&t->applied, wrote);
    if (rc == DG_OK && t->n_pending == 0) {
        turns_writer_unlock(t); /* nothing to publish */
        return DG_OK;
    }
    pthread_rwlock_wrlock(&t->lock);
    if (rc == DG_OK) {
        for (int i = 0; i < t->n_pending; i++)
            t->pending[i].r->st = t->pending[i].st;
    } else {
        turns_flush_locked(t);
    }
    t->n_pending = 0;
    pthread_rwlock_unlock(&t->lock);
    turns_writer_unlock(t);
    return rc;
}

/* End a change that only read (loaded records are what the database holds). */
void turns_txn_finish_read(dg_turns *t)
{
    TURNS_ASSERT_WRITER(t);
    t->txn_chan_id = NULL;
    dg_store_rollback(t->p->store);
    turns_writer_unlock(t);
}

/* Publish st as r's state once the transaction commits. */
int turns_install(dg_turns *t, turns_scope *r, const dg_turn_state *st)
{
    TURNS_ASSERT_WRITER(t);
    if (st->last_change_ms != r->st.last_change_ms)
        r->moved_elsewhere = 0; /* this instance moves the speaker */
    for (int i = 0; i < t->n_pending; i++) {
        if (t->pending[i].r == r) {
            t->pending[i].st = *st;
            return DG_OK;
        }
    }
    if (t->n_pending == TURNS_MAX_PENDING)
        return DG_ERR_INTERNAL; /* a change touches one or two scopes */
    t->pending[t->n_pending].r = r;
    t->pending[t->n_pending].st = *st;
    t->n_pending++;
    return DG_OK;
}

/* The transitions log row of r going from r->st to st (store_transitions.h). */
static int log_transition(dg_turns *t, const turns_scope *r, const dg_turn_state *st, int64_t now,
                          const char *cause, const char *message_id)
{
    const turns_chan *c = r->chan;
    dg_rule_ctx x;
    turns_make_ctx(t, c, &x);
    int before = r->in_db && r->st.active ? dg_rule_speaker(&r->st, &x) : DG_NOBODY;
    int after = st->active ? dg_rule_speaker(st, &x) : DG_NOBODY;
    char scope[DG_SCOPE_ID_MAX + 8], passed[512] = "";
    const char *scope_parts[] = {"thread:", r->scope.root};
    if (r->scope.kind == DG_SCOPE_THREAD)
        dg_str_join(scope, sizeof scope, scope_parts, 2);
    else
        memcpy(scope, "conversation", sizeof "conversation");
    size_t used = 0;
    for (int i = 0; i < c->n; i++)
        if (st->silent & ((uint64_t)1 << i)) {
            const char *more[] = {used ? "," : NULL, c->members[i]};
            used += dg_str_join(passed + used, sizeof passed - used, more, 2);
        }
    dg_transition tr = {
        .at_ms = now,
        .scope = scope,
        .cause = (char *)cause,
        .speaker_before = before != DG_NOBODY ? c->members[before] : NULL,
        .speaker_after = after != DG_NOBODY ? c->members[after] : NULL,
        .state = c->mode == DG_MODE_CLOSED ? "closed"
                 : st->budget              ? "held"
                 : st->active              ? "speaking"
                 : st->rested              ? "resting"
                                           : "dormant",
        .passed = passed,
        .agent_msgs = st->agent_msgs,
        .message_id = message_id,
    };
    return dg_store_transition_add(t->p->store, c->id, &tr);
}

int turns_save_scope(dg_turns *t, turns_scope *r, const dg_turn_state *st, int64_t now,
                     const char *cause)
{
    return turns_save_scope_for(t, r, st, now, cause, NULL);
}

int turns_save_scope_for(dg_turns *t, turns_scope *r, const dg_turn_state *st, int64_t now,
                         const char *cause, const char *message_id)
{
    TURNS_ASSERT_WRITER(t);
    int rc = log_transition(t, r, st, now, cause, message_id);
    if (rc == DG_OK)
        rc = dg_store_turns_scope_save_for(t->p->store, &r->scope, r->post_channel, st, r->in_db,
                                           r->in_db && r->st.active, message_id, now);
    if (rc == DG_OK)
        r->in_db = 1;
    return rc;
}

/* ---- lifecycle -------------------------------------------------------------------- */

int dg_turns_new(dg_plugin *p, dg_turns **out)
{
    *out = NULL;
    dg_turns *t = calloc(1, sizeof *t);
    if (!t)
        return DG_ERR_NOMEM;
    t->p = p;
    t->dormant_max = t->evict_at = TURNS_DORMANT_MAX;
    if (dg_agent_names_new(p->cfg.n_agents, &t->names) != DG_OK) {
        free(t);
        return DG_ERR_NOMEM;
    }
    pthread_mutex_init(&t->wmu, NULL);
    pthread_rwlock_init(&t->lock, NULL);
    pthread_mutex_init(&t->mk_mu, NULL);
    pthread_mutex_init(&t->sw_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->sw_cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&t->rescan, 1);
    atomic_init(&t->arm_after_start, 1);
    pthread_mutex_init(&t->inval_mu, NULL);
    atomic_init(&t->inval_seq, 0);
    atomic_init(&t->inval_seen, 0);
    int64_t seq = dg_store_change_seq(p->store); /* the mirror starts empty: all applied */
    atomic_init(&t->applied, seq > 0 ? seq : 0);
    dg_map_init(&t->chans);
    dg_map_init(&t->scopes);
    dg_map_init(&t->sessions);
    if (p->store && turns_txn_begin(t) == DG_OK) {
        long removed = 0, runs = 0, states = 0;
        int64_t before = dg_now_ms(p) - TURNS_SEEN_KEEP_MS;
        int rc = dg_store_turns_seen_prune(p->store, before, &removed);
        if (rc == DG_OK)
            rc = dg_store_turns_runs_prune(p->store, before, &runs);
        if (rc == DG_OK)
            rc = dg_store_turns_states_prune(p->store, before, &states);
        int per_agent = 0;
        if (rc == DG_OK)
            rc = dg_store_turns_per_agent_get(p->store, &per_agent);
        atomic_init(&t->per_agent, per_agent);
        /* Best effort: what a failed prune left is pruned at the next start. */
        if (turns_txn_finish(t, rc) == DG_OK && (removed || runs || states))
            dg_log(p, OC_LOG_DEBUG,
                   "turns: forgot %ld old message ids, %ld old run ids and %ld "
                   "old finished threads",
                   removed, runs, states);
    }
    *out = t;
    return DG_OK;
}

void dg_turns_free(dg_turns *t)
{
    if (!t)
        return;
    dg_turns_stop(t);
    turns_flush_locked(t);
    turns_marks_free(t);
    pthread_mutex_destroy(&t->mk_mu);
    pthread_mutex_destroy(&t->inval_mu);
    pthread_cond_destroy(&t->sw_cv);
    pthread_mutex_destroy(&t->sw_mu);
    pthread_rwlock_destroy(&t->lock);
    pthread_mutex_destroy(&t->wmu);
    dg_agent_names_free(t->names);
    free(t);
}

/* ---- diagnostics ------------------------------------------------------------------- */

int dg_turns_peek(dg_turns *t, const dg_scope *scope, dg_turn_state *out, dg_channel_mode *mode,
                  int *n_members)
{
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    turns_chan *c;
    turns_scope *r;
    int rc = turns_chan_get(t, scope->channel_id, &c);
    if (rc == DG_OK)
        rc = turns_scope_get(t, c, scope, &r);
    if (rc == DG_OK) {
        if (out)
            *out = r->st;
        if (mode)
            *mode = c->mode;
        if (n_members)
            *n_members = c->n;
        if (!r->in_db && !r->st.active && r->st.msg_seq == 0)
            rc = DG_ERR_NOT_FOUND;
    }
    turns_txn_finish_read(t);
    return rc;
}

int dg_turns_mirror_count(dg_turns *t, size_t *scopes, size_t *sessions)
{
    pthread_rwlock_rdlock(&t->lock);
    *scopes = t->scopes.n;
    *sessions = t->sessions.n;
    pthread_rwlock_unlock(&t->lock);
    return DG_OK;
}

int dg_turns_member(dg_turns *t, const char *channel_id, int pos, char *buf, size_t len)
{
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    turns_chan *c;
    int rc = turns_chan_get(t, channel_id, &c);
    if (rc == DG_OK && (pos < 0 || pos >= c->n))
        rc = DG_ERR_NOT_FOUND;
    if (rc == DG_OK)
        snprintf(buf, len, "%s", c->members[pos]);
    turns_txn_finish_read(t);
    return rc;
}

int dg_turns_present(dg_turns *t, const char *channel_id, uint64_t *present)
{
    *present = 0;
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    turns_chan *c;
    int rc = turns_chan_get(t, channel_id, &c);
    if (rc == DG_OK)
        *present = c->present;
    turns_txn_finish_read(t);
    return rc;
}
