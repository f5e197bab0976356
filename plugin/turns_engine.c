/*
 * turns_engine.c -- the turn manager wired to store, outbox and clock
 * (contract in turns_engine.h; the rules themselves live in turns.c):
 * the mirror and its transactions, silenced runs, moderator messages, the
 * engine's life cycle, diagnostics and the discussion channels' entry
 * points. Its other files (turns_int.h lists them) are the sweeper,
 * ingest, admin commands and the agent hooks' decisions.
 *
 * Locking. Every change of the engine runs between txn_begin() and
 * finish(): the engine's writer mutex, then the store transaction. Only
 * such a writer loads rows into the mirror or changes it, and it does so
 * under the mirror's write lock, so read-only hooks (before_model_resolve,
 * message_sending) decide under the read lock alone. Lock order: writer
 * mutex, store mutex, mirror lock. A record is freed only by a flush, which
 * also runs inside a writer, so a change in progress never loses its
 * records.
 *
 * Commit before publish. A scope's new turn state is installed in the
 * mirror only after its transaction has committed (finish()), still inside
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
static void log_channel_change(dg_turns *t, const char *channel_id, const char *wake)
{
    pthread_mutex_lock(&t->inval_mu);
    uint64_t n = atomic_load(&t->inval_seq);
    inval_entry *e = &t->inval[n % INVAL_RING];
    snprintf(e->channel, sizeof e->channel, "%s", channel_id);
    e->wake[0] = '\0';
    if (wake && strlen(wake) < sizeof e->wake)
        snprintf(e->wake, sizeof e->wake, "%s", wake);
    atomic_store(&t->inval_seq, n + 1);
    pthread_mutex_unlock(&t->inval_mu);
}

/* ---- mirror ---------------------------------------------------------------- */

static void free_chan(void *v, void *arg)
{
    (void)arg;
    chan_rec *c = v;
    if (c->id != c->id_inline)
        free(c->id);
    free(c->initiator);
    free(c->top_root);
    for (int i = 0; i < c->n; i++)
        free(c->members[i]);
    free(c);
}

void free_scope(void *v, void *arg)
{
    (void)arg;
    scope_rec *r = v;
    free(r->key);
    free(r->post_channel);
    free(r);
}

void free_sess(void *v, void *arg)
{
    (void)arg;
    sess_rec *s = v;
    free(s->key);
    free(s->thread);
    free(s);
}

/* Caller holds the write lock. */
static void flush_locked(dg_turns *t)
{
    atomic_store(&t->rescan, 1); /* the sweeper finds awake scopes in the mirror */
    dg_map_each(&t->sessions, free_sess, NULL);
    dg_map_each(&t->scopes, free_scope, NULL);
    dg_map_each(&t->chans, free_chan, NULL);
    dg_map_clear(&t->sessions);
    dg_map_clear(&t->scopes);
    dg_map_clear(&t->chans);
}


void make_ctx(const dg_turns *t, const chan_rec *c, dg_turn_ctx *x)
{
    x->n_members = c->n;
    x->present = c->present;
    x->mode = c->mode;
    x->initiator = c->initiator_pos;
    x->timeout_ms = (int64_t)t->p->cfg.turn_timeout_sec * 1000;
    x->max_agent_msgs = t->p->cfg.turn_max_agent_messages;
    x->wake_tracking = atomic_load(&t->wake_tracking);
}

int member_pos(const chan_rec *c, const char *agent_id)
{
    uint32_t h = (uint32_t)dg_map_hash(agent_id);
    for (int i = 0; i < c->n; i++)
        if (c->member_hash[i] == h && strcmp(c->members[i], agent_id) == 0)
            return i;
    return DG_NOBODY;
}

/* Channel record, loaded or created in the mirror. Store mutex held. */
int chan_get(dg_turns *t, const char *channel_id, chan_rec **out)
{
    *out = dg_map_get(&t->chans, channel_id);
    if (*out)
        return OC_OK;
    dg_turn_channel_row row;
    int rc = dg_store_turns_channel_load(t->p->store, channel_id, &row);
    if (rc != OC_OK && rc != OC_ERR_NOT_FOUND)
        return rc;
    chan_rec *c = calloc(1, sizeof *c);
    if (c)
        c->id = strlen(channel_id) < sizeof c->id_inline ? strcpy(c->id_inline, channel_id)
                                                          : strdup(channel_id);
    if (!c || !c->id) {
        free(c);
        dg_turn_channel_row_clear(&row);
        return OC_ERR_NOMEM;
    }
    c->in_db = rc == OC_OK;
    dg_store_turns_hint_load(t->p->store, channel_id, &c->marks);
    c->mode = row.mode;
    c->initiator = row.initiator;
    c->top_root = row.top_root;
    c->bot_noticed = row.bot_noticed;
    for (size_t i = 0; i < row.n_members && i < DG_TURN_MAX_MEMBERS; i++) {
        c->members[i] = row.members[i];
        c->standing[i] = row.standing[i];
        row.members[i] = NULL;
        c->n++;
    }
    row.initiator = row.top_root = NULL;
    dg_turn_channel_row_clear(&row);
    recompute_present(t, c);
    pthread_rwlock_wrlock(&t->lock);
    rc = dg_map_put(&t->chans, c->id, c);
    pthread_rwlock_unlock(&t->lock);
    if (rc) {
        free_chan(c, NULL);
        return rc;
    }
    *out = c;
    return OC_OK;
}

int chan_save(dg_turns *t, chan_rec *c, int64_t now)
{
    int rc = dg_store_turns_channel_save(t->p->store, c->id, c->mode, c->initiator, c->top_root,
                                         c->bot_noticed, now);
    if (rc == OC_OK)
        c->in_db = 1;
    return rc;
}

/* Scope record, loaded or fresh (dormant). Store mutex held. */
int scope_get(dg_turns *t, chan_rec *c, const dg_scope *sc, scope_rec **out)
{
    if (sc->kind == DG_SCOPE_CONVERSATION && c->conv) {
        *out = c->conv; /* same record as by key: records live until a flush */
        return OC_OK;
    }
    char key[DG_SCOPE_KEY_MAX];
    dg_scope_key(sc, key);
    *out = dg_map_get(&t->scopes, key);
    if (*out) {
        if (sc->kind == DG_SCOPE_CONVERSATION) {
            pthread_rwlock_wrlock(&t->lock);
            c->conv = *out;
            pthread_rwlock_unlock(&t->lock);
        }
        return OC_OK;
    }
    scope_rec *r = calloc(1, sizeof *r);
    if (!r || !(r->key = strdup(key))) {
        free(r);
        return OC_ERR_NOMEM;
    }
    r->scope = *sc;
    r->chan = c;
    atomic_init(&r->wait_pos, DG_NOBODY);
    atomic_init(&r->wait_ms, 0);
    atomic_init(&r->run_pos, DG_NOBODY);
    r->nudged_change = -1;
    int rc = dg_store_turns_scope_load(t->p->store, sc, &r->st, &r->post_channel);
    if (rc != OC_OK && rc != OC_ERR_NOT_FOUND) {
        free_scope(r, NULL);
        return rc;
    }
    r->in_db = rc == OC_OK;
    /* Who moved it last is not known: another instance, if any writes. */
    r->moved_elsewhere = r->in_db && t->shared_seen;
    pthread_rwlock_wrlock(&t->lock);
    rc = dg_map_put(&t->scopes, r->key, r);
    if (rc == OC_OK && sc->kind == DG_SCOPE_CONVERSATION)
        c->conv = r;
    pthread_rwlock_unlock(&t->lock);
    if (rc) {
        free_scope(r, NULL);
        return rc;
    }
    *out = r;
    return OC_OK;
}

void scope_list_push(scope_list *l, scope_rec *r)
{
    if (l->nomem)
        return;
    if (dg_grow(&l->v, &l->cap, l->n, sizeof *l->v, 8)) {
        l->nomem = 1;
        return;
    }
    l->v[l->n++] = r;
}

typedef struct chan_scopes {
    const chan_rec *chan;
    scope_list list;
} chan_scopes;

static void collect_scope(void *val, void *arg)
{
    chan_scopes *cs = arg;
    scope_rec *r = val;
    if (r->chan == cs->chan)
        scope_list_push(&cs->list, r);
}

/*
 * Reload channel_id's records from the database in place (it was changed
 * by a discussion prefill/close): the channel row and members, and the
 * state of each of its scopes the mirror holds. Records stay where they
 * are, so sessions keep what their last resolve recorded; sessions of the
 * channel re-derive their position (epoch). Writer held. OC_OK or an error
 * (the caller then drops the whole mirror).
 */
int refresh_channel(dg_turns *t, const char *channel_id, int other)
{
    chan_rec *c = dg_map_get(&t->chans, channel_id);
    if (!c)
        return OC_OK; /* not loaded: it will be read fresh */
    dg_turn_channel_row row;
    int rc = dg_store_turns_channel_load(t->p->store, channel_id, &row);
    if (rc != OC_OK && rc != OC_ERR_NOT_FOUND)
        return rc;
    int chan_in_db = rc == OC_OK;
    chan_scopes cs = {.chan = c};
    dg_map_each(&t->scopes, collect_scope, &cs);
    scope_list l = cs.list;
    dg_turn_state *st = l.n ? calloc(l.n, sizeof *st) : NULL;
    char **post = l.n ? calloc(l.n, sizeof *post) : NULL;
    int *found = l.n ? calloc(l.n, sizeof *found) : NULL;
    rc = l.nomem || (l.n && (!st || !post || !found)) ? OC_ERR_NOMEM : OC_OK;
    for (size_t i = 0; rc == OC_OK && i < l.n; i++) {
        rc = dg_store_turns_scope_load(t->p->store, &l.v[i]->scope, &st[i], &post[i]);
        found[i] = rc == OC_OK;
        if (rc == OC_ERR_NOT_FOUND)
            rc = OC_OK;
    }
    if (rc == OC_OK) {
        pthread_rwlock_wrlock(&t->lock);
        for (int i = 0; i < c->n; i++)
            free(c->members[i]);
        c->n = 0;
        for (size_t i = 0; i < row.n_members && i < DG_TURN_MAX_MEMBERS; i++) {
            c->standing[c->n] = row.standing[i];
            c->members[c->n++] = row.members[i];
            row.members[i] = NULL;
        }
        free(c->initiator);
        free(c->top_root);
        c->initiator = row.initiator;
        c->top_root = row.top_root;
        row.initiator = row.top_root = NULL;
        c->mode = row.mode;
        c->bot_noticed = row.bot_noticed;
        c->in_db = chan_in_db;
        c->follow = NULL; /* the latest top-level thread may have changed */
        c->epoch++;
        recompute_present(t, c);
        for (size_t i = 0; i < l.n; i++) {
            scope_rec *r = l.v[i];
            st[i].msg_seq = r->st.msg_seq; /* in memory only: runs in flight compare it */
            /* Another instance changed the scope (perhaps it ingested a
             * message this one counts as a duplicate): a run that resolved
             * before may not have seen it. */
            if (other && !dg_turn_state_same(&st[i], &r->st))
                st[i].msg_seq++;
            if (other && st[i].last_change_ms != r->st.last_change_ms)
                r->moved_elsewhere = 1;
            r->st = st[i];
            r->in_db = found[i];
            free(r->post_channel);
            r->post_channel = post[i];
            post[i] = NULL;
        }
        pthread_rwlock_unlock(&t->lock);
    }
    for (size_t i = 0; post && i < l.n; i++)
        free(post[i]);
    free(post);
    free(st);
    free(found);
    free(l.v);
    dg_turn_channel_row_clear(&row);
    return rc;
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
        return OC_OK;
    chan_rec *c;
    scope_rec *r;
    dg_scope sc;
    int rc = chan_get(t, channel_id, &c);
    if (rc == OC_OK)
        rc = dg_scope_conversation(channel_id, &sc);
    if (rc == OC_OK)
        rc = scope_get(t, c, &sc, &r);
    if (rc != OC_OK)
        return rc;
    int pos = member_pos(c, agent);
    if (c->mode != DG_MODE_DISCUSSION || pos == DG_NOBODY)
        return OC_OK;
    dg_turn_ctx x;
    make_ctx(t, c, &x);
    pthread_rwlock_wrlock(&t->lock);
    int armed = dg_turn_await_wake(&r->st, &x, pos);
    pthread_rwlock_unlock(&t->lock);
    if (armed)
        dg_log(t->p, OC_LOG_DEBUG, "turns: %s opens discussion channel %s and awaits the kickoff; "
               "its runs before it arrives do not count", agent, channel_id);
    return OC_OK;
}

/* Apply the channel change log to the mirror. Writer held (txn_begin). */
static void sync_changes(dg_turns *t)
{
    uint64_t seen = atomic_load(&t->inval_seen);
    if (atomic_load(&t->inval_seq) == seen)
        return;
    inval_entry *chans = NULL;
    pthread_mutex_lock(&t->inval_mu);
    uint64_t now = atomic_load(&t->inval_seq);
    size_t n = (size_t)(now - seen);
    if (n <= INVAL_RING && (chans = malloc(n * sizeof *chans)))
        for (size_t i = 0; i < n; i++)
            chans[i] = t->inval[(seen + i) % INVAL_RING];
    pthread_mutex_unlock(&t->inval_mu);
    int ok = chans != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        ok = refresh_channel(t, chans[i].channel, 0) == OC_OK;
        if (ok && chans[i].wake[0])
            ok = arm_kickoff(t, chans[i].channel, chans[i].wake) == OC_OK;
    }
    free(chans);
    pthread_rwlock_wrlock(&t->lock);
    if (!ok)
        flush_locked(t); /* too far behind, or a reload failed: start over */
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
    if (rc == OC_OK && n)
        t->shared_seen = 1;
    for (size_t i = 0; rc == OC_OK && i < n; i++)
        rc = refresh_channel(t, ch[i], 1);
    for (size_t i = 0; i < n; i++)
        free(ch[i]);
    free(ch);
    if (rc != OC_OK) {
        pthread_rwlock_wrlock(&t->lock);
        flush_locked(t);
        pthread_rwlock_unlock(&t->lock);
    }
    if (upto > atomic_load(&t->applied))
        atomic_store(&t->applied, upto);
}

/* The scope channel-level sessions act in (scope.h, turns_engine.h). */
int follow_scope(dg_turns *t, chan_rec *c, scope_rec **out)
{
    if (c->follow) {
        *out = c->follow;
        return OC_OK;
    }
    dg_scope sc;
    int rc = (t->p->cfg.session_policy == DG_POLICY_THREAD && c->top_root)
                 ? dg_scope_thread(c->id, c->top_root, &sc)
                 : dg_scope_conversation(c->id, &sc);
    if (rc == OC_OK)
        rc = scope_get(t, c, &sc, out);
    if (rc == OC_OK) {
        pthread_rwlock_wrlock(&t->lock);
        c->follow = *out;
        pthread_rwlock_unlock(&t->lock);
    }
    return rc;
}

int same_str(const char *a, const char *b)
{
    if (!a || !*a)
        return !b || !*b;
    return b && strcmp(a, b) == 0;
}

/* Session record for s, created or refreshed. Store mutex held. */
int session_prepare(dg_turns *t, const dg_turn_session *s, int64_t now, sess_rec **out)
{
    chan_rec *c;
    int rc = chan_get(t, s->channel_id, &c);
    if (rc)
        return rc;
    int configured = dg_config_agent(&t->p->cfg, s->agent_id) != NULL;
    int pos = DG_NOBODY;
    /* The host runs an agent only where it receives the channel. */
    if (configured && (rc = member_ensure(t, c, s->agent_id, DG_MEMBER_RAN, now, &pos)))
        return rc;
    scope_rec *fixed = NULL;
    int has_thread = s->thread_id && *s->thread_id;
    if (s->is_dm || t->p->cfg.session_policy == DG_POLICY_CHANNEL || has_thread) {
        dg_scope_event ev = {.channel_id = s->channel_id, .thread_id = s->thread_id,
                             .is_dm = s->is_dm};
        dg_scope sc;
        if ((rc = dg_scope_derive(t->p->cfg.session_policy, &ev, &sc)))
            return rc;
        if ((rc = scope_get(t, c, &sc, &fixed)))
            return rc;
        if (has_thread && sc.kind == DG_SCOPE_THREAD && !fixed->post_channel)
            fixed->post_channel = strdup(s->thread_id); /* a Discord thread: post there */
    } else {
        scope_rec *f;
        if ((rc = follow_scope(t, c, &f)))
            return rc;
    }

    sess_rec *e = dg_map_get(&t->sessions, s->session_key);
    char *thread = has_thread ? strdup(s->thread_id) : NULL;
    if (has_thread && !thread)
        return OC_ERR_NOMEM;
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e || !(e->key = strdup(s->session_key))) {
            free(e);
            free(thread);
            return OC_ERR_NOMEM;
        }
        atomic_init(&e->seen_seq, -1);
        atomic_init(&e->last, NULL);
        atomic_init(&e->granted, -1);
        pthread_rwlock_wrlock(&t->lock);
        rc = dg_map_put(&t->sessions, e->key, e);
        pthread_rwlock_unlock(&t->lock);
        if (rc) {
            free(thread);
            free_sess(e, NULL);
            return rc;
        }
    }
    pthread_rwlock_wrlock(&t->lock);
    free(e->thread);
    e->thread = thread;
    e->chan = c;
    e->fixed = fixed;
    e->configured = configured;
    e->pos = pos;
    e->epoch = c->epoch;
    pthread_rwlock_unlock(&t->lock);
    *out = e;
    return OC_OK;
}

/* The mirror's session record for s if it is current; read lock held. */
sess_rec *session_lookup_locked(dg_turns *t, const dg_turn_session *s, scope_rec **scope)
{
    if (atomic_load(&t->inval_seq) != atomic_load(&t->inval_seen))
        return NULL; /* a channel changed outside the engine: catch up first */
    sess_rec *e = dg_map_get(&t->sessions, s->session_key);
    if (!e || strcmp(e->chan->id, s->channel_id) != 0 || !same_str(e->thread, s->thread_id) ||
        e->epoch != e->chan->epoch)
        return NULL;
    if (e->configured && e->pos == DG_NOBODY && e->chan->n < DG_TURN_MAX_MEMBERS)
        return NULL; /* not a member yet (e.g. after a prefill): record it */
    *scope = e->fixed ? e->fixed : e->chan->follow;
    return *scope ? e : NULL;
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
    const chan_rec *c = dg_map_get_hashed(&t->chans, channel_id, h);
    if (!c)
        return;
    const scope_rec *r = c->conv;
    __builtin_prefetch(&c->marks);
    __builtin_prefetch(&c->member_hash);
    __builtin_prefetch(c->received);
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

/* Start a change: the writer mutex, then a store transaction; the mirror
 * is brought up to date with changes made outside the engine. OC_OK or
 * OC_ERR_IO (nothing held then). With a channel, its map slot is asked for
 * before BEGIN (it arrives while the kernel takes SQLite's locks) and its
 * records right after, ahead of the sync. */
static int begin_locked(dg_turns *t, const char *channel_id)
{
    uint64_t h = channel_id ? dg_map_prefetch(&t->chans, channel_id) : 0;
    if (dg_store_begin(t->p->store) != OC_OK) {
        pthread_mutex_unlock(&t->wmu);
        return OC_ERR_IO;
    }
    if (channel_id)
        warm_channel(t, channel_id, h);
    sync_changes(t);
    sync_store(t);
    return OC_OK;
}

int txn_begin_for(dg_turns *t, const char *channel_id)
{
    pthread_mutex_lock(&t->wmu);
    return begin_locked(t, channel_id);
}

int txn_begin(dg_turns *t)
{
    pthread_mutex_lock(&t->wmu);
    return begin_locked(t, NULL);
}

/*
 * End a change: commit when rc is OC_OK, else roll back. After a commit
 * the pending scope states are published; after a rollback or a failed
 * commit the whole mirror is dropped (records loaded or changed in the
 * transaction may not match the database) and reloaded on demand. Both
 * under the mirror's write lock, before the writer mutex is released.
 */
int finish(dg_turns *t, int rc)
{
    int64_t wrote = dg_store_txn_change_seq(t->p->store);
    if (rc == OC_OK)
        rc = dg_store_commit(t->p->store);
    else
        dg_store_rollback(t->p->store);
    /* Synced at txn_begin under the write lock: every sequence below ours
     * is applied. */
    if (rc == OC_OK && wrote > atomic_load(&t->applied))
        atomic_store(&t->applied, wrote);
    if (rc == OC_OK && t->n_pending == 0) {
        pthread_mutex_unlock(&t->wmu); /* nothing to publish */
        return OC_OK;
    }
    pthread_rwlock_wrlock(&t->lock);
    if (rc == OC_OK) {
        for (int i = 0; i < t->n_pending; i++)
            t->pending[i].r->st = t->pending[i].st;
    } else {
        flush_locked(t);
    }
    t->n_pending = 0;
    pthread_rwlock_unlock(&t->lock);
    pthread_mutex_unlock(&t->wmu);
    return rc;
}

/* End a change that only read (loaded records are what the database holds). */
void finish_read(dg_turns *t)
{
    dg_store_rollback(t->p->store);
    pthread_mutex_unlock(&t->wmu);
}

/* Publish st as r's state once the transaction commits. */
int install(dg_turns *t, scope_rec *r, const dg_turn_state *st)
{
    if (st->last_change_ms != r->st.last_change_ms)
        r->moved_elsewhere = 0; /* this instance moves the speaker */
    for (int i = 0; i < t->n_pending; i++) {
        if (t->pending[i].r == r) {
            t->pending[i].st = *st;
            return OC_OK;
        }
    }
    if (t->n_pending == MAX_PENDING)
        return OC_ERR_INTERNAL; /* a change touches one or two scopes */
    t->pending[t->n_pending].r = r;
    t->pending[t->n_pending].st = *st;
    t->n_pending++;
    return OC_OK;
}

/* The transitions log row of r going from r->st to st (store_transitions.h). */
static int log_transition(dg_turns *t, const scope_rec *r, const dg_turn_state *st, int64_t now,
                          const char *cause, const char *message_id)
{
    const chan_rec *c = r->chan;
    dg_turn_ctx x;
    make_ctx(t, c, &x);
    int before = r->in_db && r->st.active ? dg_turn_speaker(&r->st, &x) : DG_NOBODY;
    int after = st->active ? dg_turn_speaker(st, &x) : DG_NOBODY;
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
        .at_ms = now, .scope = scope, .cause = (char *)cause,
        .speaker_before = before != DG_NOBODY ? c->members[before] : NULL,
        .speaker_after = after != DG_NOBODY ? c->members[after] : NULL,
        .state = c->mode == DG_MODE_CLOSED ? "closed" : st->active ? "speaking"
               : st->rested ? "resting" : "dormant",
        .passed = passed, .agent_msgs = st->agent_msgs, .message_id = message_id,
    };
    return dg_store_transition_add(t->p->store, c->id, &tr);
}

int save_scope(dg_turns *t, scope_rec *r, const dg_turn_state *st, int64_t now,
               const char *cause)
{
    return save_scope_for(t, r, st, now, cause, NULL);
}

int save_scope_for(dg_turns *t, scope_rec *r, const dg_turn_state *st, int64_t now,
                   const char *cause, const char *message_id)
{
    int rc = log_transition(t, r, st, now, cause, message_id);
    if (rc == OC_OK)
        rc = dg_store_turns_scope_save_for(t->p->store, &r->scope, r->post_channel, st,
                                           r->in_db, r->in_db && r->st.active, message_id, now);
    if (rc == OC_OK)
        r->in_db = 1;
    return rc;
}

/* The scope message m belongs to, and whether it is a top-level message
 * under policy "thread" (it opens a thread of its own). OC_OK or the
 * status of dg_scope_derive. */
int message_scope(const dg_turns *t, const dg_turn_message *m, dg_scope *sc, int *top_level)
{
    dg_scope_event ev = {.channel_id = m->channel_id, .thread_id = m->thread_id,
                         .message_id = m->message_id, .is_dm = m->is_dm,
                         .tags = m->tags, .n_tags = m->n_tags};
    int rc = dg_scope_derive(t->p->cfg.session_policy, &ev, sc);
    if (rc)
        return rc;
    char root[65];
    *top_level = t->p->cfg.session_policy == DG_POLICY_THREAD && !m->is_dm &&
                 !(m->thread_id && *m->thread_id) && !dg_nip10_root(m->tags, m->n_tags, root) &&
                 sc->kind == DG_SCOPE_THREAD;
    return OC_OK;
}

/* ---- silenced runs (marks) ------------------------------------------------------ */

static uint64_t key_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ? h : 1;
}

static int mark_is(const run_mark *m, uint64_t h, const char *key)
{
    return m->sess_h == h && strcmp(m->session_key, key) == 0;
}

/* Remember run (session key, run_id or NULL) as silenced. Any thread. A
 * repeat for the same run refreshes its mark. Out of memory: the mark is
 * not kept (logged); the turn-order checks still apply. */
void mark_add(dg_turns *t, const char *key, const char *run_id, mark_kind kind,
              int64_t seen_seq)
{
    if (run_id && !*run_id)
        run_id = NULL;
    uint64_t h = key_hash(key);
    pthread_mutex_lock(&t->mk_mu);
    run_mark *m = NULL;
    for (size_t i = 0; i < DG_RUN_MARKS && !m; i++) {
        run_mark *x = &t->marks[i];
        if (mark_is(x, h, key) && (run_id ? x->run_id && strcmp(x->run_id, run_id) == 0
                                          : !x->run_id && x->live))
            m = x;
    }
    if (!m) {
        m = &t->marks[t->mk_next++ % DG_RUN_MARKS];
        free(m->session_key);
        free(m->run_id);
        memset(m, 0, sizeof *m);
        m->session_key = strdup(key);
        m->run_id = run_id ? strdup(run_id) : NULL;
        if (!m->session_key || (run_id && !m->run_id)) {
            free(m->session_key);
            free(m->run_id);
            memset(m, 0, sizeof *m);
            pthread_mutex_unlock(&t->mk_mu);
            dg_log(t->p, OC_LOG_ERROR, "turns: out of memory remembering the silenced run of "
                   "%s; its texts are judged by the turn order only", key);
            return;
        }
        m->sess_h = h;
    }
    if (m->kind != MARK_CLAIMED)
        m->kind = kind; /* a claimed run makes no model call: it stays claimed */
    m->live = 1;
    m->seen_seq = seen_seq;
    pthread_mutex_unlock(&t->mk_mu);
}

/* The session got a decision that is not silenced: its marks no longer
 * match by session (those with a run id still match by run id). */
void mark_end_session(dg_turns *t, const char *key)
{
    uint64_t h = key_hash(key);
    pthread_mutex_lock(&t->mk_mu);
    for (size_t i = 0; i < DG_RUN_MARKS; i++)
        if (t->marks[i].live && mark_is(&t->marks[i], h, key))
            t->marks[i].live = 0;
    pthread_mutex_unlock(&t->mk_mu);
}

/* The mark of run (key, run_id or NULL): its kind (MARK_NONE: none) and
 * *seen. *other_run (may be NULL): 1 when no mark matched but the session
 * has a live mark of another run id (the run asked about is not that
 * silenced one). Newest first. Any thread. */
mark_kind mark_find(dg_turns *t, const char *key, const char *run_id, int64_t *seen,
                    int *other_run)
{
    return mark_find_ex(t, key, run_id, seen, other_run, NULL);
}

/* As mark_find; *exact (may be NULL): the mark matched by run id. */
mark_kind mark_find_ex(dg_turns *t, const char *key, const char *run_id, int64_t *seen,
                       int *other_run, int *exact)
{
    if (run_id && !*run_id)
        run_id = NULL;
    uint64_t h = key_hash(key);
    mark_kind k = MARK_NONE;
    int other = 0;
    pthread_mutex_lock(&t->mk_mu);
    for (size_t n = 0; n < DG_RUN_MARKS && k == MARK_NONE; n++) {
        const run_mark *m = &t->marks[(t->mk_next + DG_RUN_MARKS - 1 - n) % DG_RUN_MARKS];
        if (!m->sess_h || !mark_is(m, h, key))
            continue;
        int match = run_id && m->run_id ? strcmp(run_id, m->run_id) == 0 : m->live;
        if (match) {
            k = m->kind;
            if (seen)
                *seen = m->seen_seq;
            if (exact)
                *exact = run_id && m->run_id;
        } else if (run_id && m->run_id && m->live) {
            other = 1;
        }
    }
    pthread_mutex_unlock(&t->mk_mu);
    if (other_run)
        *other_run = k == MARK_NONE && other;
    return k;
}

static void marks_free(dg_turns *t)
{
    for (size_t i = 0; i < DG_RUN_MARKS; i++) {
        free(t->marks[i].session_key);
        free(t->marks[i].run_id);
    }
    memset(t->marks, 0, sizeof t->marks);
}

/* ---- moderator messages ------------------------------------------------------- */

const char *user_of(const dg_turns *t, const chan_rec *c, int pos)
{
    if (pos < 0 || pos >= c->n)
        return NULL;
    const dg_agent_cfg *a = dg_config_agent(&t->p->cfg, c->members[pos]);
    return a ? a->discord_user_id : NULL;
}

int enqueue(dg_turns *t, const char *channel, const char *content, const char *mention,
            int64_t now, int *kick)
{
    const char *ids[1] = {mention};
    int rc = dg_outbox_enqueue(t->p->store, channel, content, mention ? ids : NULL,
                               mention ? 1 : 0, now);
    if (rc == OC_OK) {
        *kick = 1;
    } else if (rc == OC_ERR_INVALID) {
        /* Not a Discord channel (another relay's ids): nothing can ever be
         * posted there, and the turn state must move on regardless. */
        dg_log(t->p, OC_LOG_WARN, "turns: channel %s is not a Discord channel id; the "
               "moderator message owed there is dropped", channel);
        rc = OC_OK;
    } else {
        dg_log(t->p, OC_LOG_ERROR, "turns: could not queue a moderator message for channel %s "
               "(%s)", channel, oc_status_name(rc));
    }
    return rc;
}

/* The fingerprint of a wake message (scope_rec.wake_fp): its first line
 * with user mentions dropped and blanks trimmed, at most cap - 1 bytes cut
 * on a character boundary; "" when nothing is left. */
static void wake_fingerprint(const char *text, char *out, size_t cap)
{
    size_t n = 0;
    const char *p = text;
    while (*p == '\n' || *p == '\r' || *p == ' ' || *p == '\t')
        p++;
    while (*p && *p != '\n' && *p != '\r' && n + 1 < cap) {
        if (p[0] == '<' && p[1] == '@') { /* <@id> / <@!id>: rendered as a name */
            const char *e = strchr(p, '>');
            if (e) {
                p = e + 1;
                continue;
            }
        }
        out[n++] = *p++;
    }
    if (((unsigned char)*p & 0xC0) == 0x80) {
        /* Cut inside a character: drop what was copied of it. */
        while (n > 0 && ((unsigned char)out[n - 1] & 0xC0) == 0x80)
            n--;
        if (n > 0)
            n--;
    }
    while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\t'))
        n--;
    out[n] = '\0';
}

/*
 * The fingerprint of a human's or an agent's message (scope_rec.recent):
 * its longest piece between line breaks and <...> tokens (mentions, channel
 * links, custom emoji: a host renders them its own way), trimmed, at most
 * cap - 1 bytes cut on a character boundary; "" when nothing is left.
 */
static void message_fingerprint(const char *text, char *out, size_t cap)
{
    const char *best = NULL;
    size_t best_len = 0;
    const char *p = text ? text : "";
    while (*p) {
        const char *seg = p;
        while (*p && *p != '\n' && *p != '\r' && !(*p == '<' && strchr(p, '>')))
            p++;
        const char *end = p;
        while (seg < end && (*seg == ' ' || *seg == '\t'))
            seg++;
        while (end > seg && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if ((size_t)(end - seg) > best_len) {
            best = seg;
            best_len = (size_t)(end - seg);
        }
        if (*p == '<')
            p = strchr(p, '>') + 1;
        else if (*p)
            p++;
    }
    size_t n = best_len < cap - 1 ? best_len : cap - 1;
    if (n < best_len) {
        /* Cut inside a character: drop what was copied of it. */
        while (n > 0 && ((unsigned char)best[n] & 0xC0) == 0x80)
            n--;
    }
    if (n)
        memcpy(out, best, n);
    out[n] = '\0';
}

void recent_push(scope_rec *r, const char *content, int author, int only_text)
{
    recent_msg *m = &r->recent[r->recent_head % RECENT_MAX];
    char fp[sizeof m->fp];
    message_fingerprint(content, fp, sizeof fp);
    if (only_text && !fp[0])
        return;
    memcpy(m->fp, fp, sizeof fp);
    m->author = author;
    r->recent_head++;
}

/*
 * 1 when prompt answers an older message of scope r than its newest, for
 * the agent at member position pos: the newest (not its own) is not in
 * the prompt, and an older one of someone else's (long enough to count)
 * is. 0 otherwise, also when there is no evidence either way.
 */
int answers_older(const scope_rec *r, int pos, const char *prompt)
{
    if (r->recent_head == 0)
        return 0;
    const recent_msg *latest = &r->recent[(r->recent_head - 1) % RECENT_MAX];
    if (latest->author == pos || !latest->fp[0] || strstr(prompt, latest->fp))
        return 0;
    unsigned older = r->recent_head - 1 < RECENT_MAX - 1 ? r->recent_head - 1 : RECENT_MAX - 1;
    for (unsigned i = 1; i <= older; i++) {
        const recent_msg *o = &r->recent[(r->recent_head - 1 - i) % RECENT_MAX];
        if (o->author != pos && strlen(o->fp) >= RECENT_FP_EVIDENCE && strstr(prompt, o->fp))
            return 1;
    }
    return 0;
}

int reply_owed(const dg_turn_state *s, int pos, int64_t window, int64_t now)
{
    int from = s->permit;
    if (from == DG_NOBODY || from == pos || from < 0 || from >= 64 ||
        !(s->owed & ((uint64_t)1 << from)))
        return 0;
    return window <= 0 || now - s->permit_ms <= window;
}

int answers_before_owed_reply(const scope_rec *r, const dg_turn_ctx *x, int pos,
                              const char *prompt, int64_t now)
{
    /* Bounded also without a turn timeout: a reply that never came holds
     * nobody for long. */
    int64_t window = x->timeout_ms > 0 ? x->timeout_ms : WAKE_FP_MAX_MS;
    if (!reply_owed(&r->st, pos, window, now) || r->recent_head == 0)
        return 0;
    int from = r->st.permit;
    const recent_msg *latest = &r->recent[(r->recent_head - 1) % RECENT_MAX];
    return latest->author != from && latest->author != pos &&
           strlen(latest->fp) >= RECENT_FP_EVIDENCE && strstr(prompt, latest->fp) != NULL;
}

int render_and_enqueue(dg_turns *t, const char *name, const dg_tpl_vars *vars,
                       const char *channel, const char *mention, int64_t now, int *kick,
                       char *fp, size_t fp_cap)
{
    char *text = t->p->templates ? dg_templates_render(t->p->templates, name, vars) : NULL;
    if (!text) {
        dg_log(t->p, OC_LOG_ERROR, "turns: template %s could not be rendered; the moderator "
               "message for channel %s is not sent", name, channel);
        return OC_ERR_INTERNAL;
    }
    if (fp)
        wake_fingerprint(text, fp, fp_cap);
    int rc = enqueue(t, channel, text, mention, now, kick);
    free(text);
    return rc;
}

/* 1 when the comma-separated ids of list (may be NULL) hold id. */
static int lists_id(const char *list, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, id, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

int mention_owed(dg_turns *t, const char *channel, const char *uid, int *yes)
{
    dg_outbox_row *rows = NULL;
    size_t n = 0;
    *yes = 0;
    int rc = dg_store_outbox_pending_of(t->p->store, channel, 0, 64, &rows, &n);
    for (size_t i = 0; rc == OC_OK && i < n && !*yes; i++)
        *yes = lists_id(rows[i].mentions, uid);
    dg_outbox_rows_free(rows, n);
    return rc;
}

/* The moderator messages fx owes scope r, whose next state is next. A
 * wake message that is not queued after all (no user id, not a Discord
 * channel) ends the wait for it in next: nothing would ever end it. */
int queue_effects(dg_turns *t, scope_rec *r, const dg_turn_effects *fx,
                  dg_turn_state *next, int64_t now, int *kick)
{
    chan_rec *c = r->chan;
    const char *post = r->post_channel ? r->post_channel : c->id;
    int rc = OC_OK;
    if (fx->handoff_to != DG_NOBODY) {
        /* A bare mention wakes the next speaker, who already consumed the
         * latest message silently. */
        const char *uid = user_of(t, c, fx->handoff_to);
        int queued = 0, owed = 0;
        if (uid && (rc = mention_owed(t, post, uid, &owed)) == OC_OK && owed)
            queued = 1; /* the one still owed wakes it: no second mention */
        else if (uid && rc == OC_OK) {
            char text[64];
            snprintf(text, sizeof text, "<@%s>", uid);
            rc = enqueue(t, post, text, uid, now, &queued);
        }
        if (queued)
            *kick = 1;
        else
            dg_turn_wake_delivered(next, fx->handoff_to);
    }
    if (rc == OC_OK && fx->rest_notice) {
        char limit[24];
        snprintf(limit, sizeof limit, "%ld", (long)t->p->cfg.turn_max_agent_messages);
        dg_tpl_vars v = {.maxAgentMessages = limit};
        rc = render_and_enqueue(t, "rest.md", &v, post, NULL, now, kick, NULL, 0);
    }
    if (rc == OC_OK && fx->idle_reminder) {
        const char *uid = user_of(t, c, c->initiator_pos);
        dg_discussion d;
        memset(&d, 0, sizeof d);
        int have = dg_discuss_lookup_locked(t->p->store, c->id, &d) == DG_DISCUSSION_ACTIVE;
        char mention[48] = "", chan[48] = "", origin[48] = "";
        if (uid)
            snprintf(mention, sizeof mention, "<@%s>", uid);
        snprintf(chan, sizeof chan, "<#%s>", c->id);
        if (have && d.origin_channel_id)
            snprintf(origin, sizeof origin, "<#%s>", d.origin_channel_id);
        char *where = have ? dg_discuss_suggested_path_locked(t->p, &d) : NULL;
        dg_tpl_vars v = {.discussGuide = have ? d.discuss_guide : NULL,
                         .initiatorMention = mention,
                         .discussionChannel = chan,
                         .originChannel = origin,
                         .status = "active",
                         .summaryPath = where};
        int queued = 0;
        char fp[sizeof r->wake_fp];
        rc = have && !where ? OC_ERR_NOMEM
           : render_and_enqueue(t, "idle.md", &v, post, uid, now, &queued, fp, sizeof fp);
        free(where);
        dg_discussion_clear(&d);
        if (queued) {
            *kick = 1;
            memcpy(r->wake_fp, fp, sizeof fp);
            r->wake_fp_pos = c->initiator_pos;
            r->wake_fp_ms = now;
        } else {
            dg_turn_wake_delivered(next, c->initiator_pos);
        }
    }
    return rc;
}

/* ---- lifecycle -------------------------------------------------------------------- */

int dg_turns_new(dg_plugin *p, dg_turns **out)
{
    *out = NULL;
    dg_turns *t = calloc(1, sizeof *t);
    if (!t)
        return OC_ERR_NOMEM;
    t->p = p;
    t->dormant_max = t->evict_at = DORMANT_MAX;
    if (dg_agent_names_new(p->cfg.n_agents, &t->names) != OC_OK) {
        free(t);
        return OC_ERR_NOMEM;
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
    pthread_mutex_init(&t->inval_mu, NULL);
    atomic_init(&t->inval_seq, 0);
    atomic_init(&t->inval_seen, 0);
    int64_t seq = dg_store_change_seq(p->store); /* the mirror starts empty: all applied */
    atomic_init(&t->applied, seq > 0 ? seq : 0);
    dg_map_init(&t->chans);
    dg_map_init(&t->scopes);
    dg_map_init(&t->sessions);
    if (p->store && txn_begin(t) == OC_OK) {
        long removed = 0, runs = 0, states = 0;
        int64_t before = dg_now_ms(p) - SEEN_KEEP_MS;
        int rc = dg_store_turns_seen_prune(p->store, before, &removed);
        if (rc == OC_OK)
            rc = dg_store_turns_runs_prune(p->store, before, &runs);
        if (rc == OC_OK)
            rc = dg_store_turns_states_prune(p->store, before, &states);
        int per_agent = 0;
        if (rc == OC_OK)
            rc = dg_store_turns_per_agent_get(p->store, &per_agent);
        atomic_init(&t->per_agent, per_agent);
        finish(t, rc);
        if (removed || runs || states)
            dg_log(p, OC_LOG_DEBUG, "turns: forgot %ld old message ids, %ld old run ids and %ld "
                   "old finished threads", removed, runs, states);
    }
    *out = t;
    return OC_OK;
}

void dg_turns_free(dg_turns *t)
{
    if (!t)
        return;
    dg_turns_stop(t);
    flush_locked(t);
    marks_free(t);
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
    if (txn_begin(t) != OC_OK)
        return OC_ERR_IO;
    chan_rec *c;
    scope_rec *r;
    int rc = chan_get(t, scope->channel_id, &c);
    if (rc == OC_OK)
        rc = scope_get(t, c, scope, &r);
    if (rc == OC_OK) {
        if (out)
            *out = r->st;
        if (mode)
            *mode = c->mode;
        if (n_members)
            *n_members = c->n;
        if (!r->in_db && !r->st.active && r->st.msg_seq == 0)
            rc = OC_ERR_NOT_FOUND;
    }
    finish_read(t);
    return rc;
}

int dg_turns_mirror_count(dg_turns *t, size_t *scopes, size_t *sessions)
{
    pthread_rwlock_rdlock(&t->lock);
    *scopes = t->scopes.n;
    *sessions = t->sessions.n;
    pthread_rwlock_unlock(&t->lock);
    return OC_OK;
}

int dg_turns_member(dg_turns *t, const char *channel_id, int pos, char *buf, size_t len)
{
    if (txn_begin(t) != OC_OK)
        return OC_ERR_IO;
    chan_rec *c;
    int rc = chan_get(t, channel_id, &c);
    if (rc == OC_OK && (pos < 0 || pos >= c->n))
        rc = OC_ERR_NOT_FOUND;
    if (rc == OC_OK)
        snprintf(buf, len, "%s", c->members[pos]);
    finish_read(t);
    return rc;
}

int dg_turns_present(dg_turns *t, const char *channel_id, uint64_t *present)
{
    *present = 0;
    if (txn_begin(t) != OC_OK)
        return OC_ERR_IO;
    chan_rec *c;
    int rc = chan_get(t, channel_id, &c);
    if (rc == OC_OK)
        *present = c->present;
    finish_read(t);
    return rc;
}

/* ---- discussion channels (inside the caller's transaction) ------------------------ */

int dg_turns_prefill_discussion(dg_turns *t, const char *channel_id,
                                const char *initiator_agent_id, const char *const *order,
                                size_t n, int64_t now_ms)
{
    dg_store *st = t ? t->p->store : NULL;
    if (!st || !channel_id || !*channel_id || strlen(channel_id) >= DG_SCOPE_ID_MAX ||
        !initiator_agent_id || !*initiator_agent_id || (n && !order))
        return OC_ERR_INVALID;
    const char *list[DG_TURN_MAX_MEMBERS];
    size_t k = 0;
    list[k++] = initiator_agent_id;
    for (size_t i = 0; i < n; i++) {
        if (!order[i] || !*order[i])
            return OC_ERR_INVALID;
        int dup = 0;
        for (size_t j = 0; j < k; j++)
            dup |= strcmp(list[j], order[i]) == 0;
        if (dup)
            continue;
        if (k == DG_TURN_MAX_MEMBERS)
            return OC_ERR_INVALID;
        list[k++] = order[i];
    }
    /* The mirrors reload this channel before their next use; the first
     * participant awaits the kickoff the caller queues with this change. */
    log_channel_change(t, channel_id, k >= 2 ? list[1] : NULL);
    int rc = dg_store_turns_members_clear(st, channel_id);
    /* The moderator gives each of them the private channel. */
    for (size_t i = 0; rc == OC_OK && i < k; i++)
        rc = dg_store_turns_member_add(st, channel_id, (int)i, list[i], DG_MEMBER_READS);
    if (rc == OC_OK)
        rc = dg_store_turns_scopes_clear(st, channel_id);
    if (rc == OC_OK)
        rc = dg_store_turns_channel_save(st, channel_id, DG_MODE_DISCUSSION, initiator_agent_id,
                                         NULL, 0, now_ms);
    if (rc != OC_OK)
        return rc;
    /* The initiator opened the discussion (its guide is the first word):
     * the first participant after it speaks next. */
    dg_turn_state s;
    dg_turn_state_init(&s);
    s.active = 1;
    s.anchor = 0;
    s.speaker = k >= 2 ? 1 : DG_NOBODY;
    s.last_change_ms = now_ms;
    dg_scope sc;
    if ((rc = dg_scope_conversation(channel_id, &sc)))
        return rc;
    return dg_store_turns_scope_save(st, &sc, NULL, &s, 0, now_ms); /* cleared just above */
}

int dg_turns_close_channel(dg_turns *t, const char *channel_id, int64_t now_ms)
{
    dg_store *st = t ? t->p->store : NULL;
    if (!st || !channel_id || !*channel_id || strlen(channel_id) >= DG_SCOPE_ID_MAX)
        return OC_ERR_INVALID;
    log_channel_change(t, channel_id, NULL);
    dg_turn_channel_row row;
    int rc = dg_store_turns_channel_load(st, channel_id, &row);
    if (rc != OC_OK && rc != OC_ERR_NOT_FOUND)
        return rc;
    rc = dg_store_turns_channel_save(st, channel_id, DG_MODE_CLOSED, row.initiator, row.top_root,
                                     0, now_ms);
    dg_turn_channel_row_clear(&row);
    return rc;
}

int dg_turns_wake_with_result(dg_turns *t, const char *origin_channel_id,
                              const char *initiator_agent_id, int64_t now_ms)
{
    dg_store *st = t ? t->p->store : NULL;
    if (!st || !origin_channel_id || !*origin_channel_id ||
        strlen(origin_channel_id) >= DG_SCOPE_ID_MAX || !initiator_agent_id ||
        !*initiator_agent_id)
        return OC_ERR_INVALID;
    dg_turn_channel_row row;
    int rc = dg_store_turns_channel_load(st, origin_channel_id, &row);
    if (rc != OC_OK && rc != OC_ERR_NOT_FOUND)
        return rc;
    int pos = DG_NOBODY;
    for (size_t i = 0; i < row.n_members; i++)
        if (strcmp(row.members[i], initiator_agent_id) == 0)
            pos = (int)i;
    size_t n_members = row.n_members;
    /* It opened the discussion from there: it can run there. An admin's
     * removal stands. */
    int rejoin = pos != DG_NOBODY && row.standing[pos] < DG_MEMBER_REMOVED &&
                 row.standing[pos] != DG_MEMBER_RAN;
    dg_turn_channel_row_clear(&row);
    if (rejoin && (rc = dg_store_turns_member_standing(st, origin_channel_id, pos,
                                                       DG_MEMBER_RAN)))
        return rc;
    if (pos == DG_NOBODY) {
        if (n_members >= DG_TURN_MAX_MEMBERS)
            return OC_ERR_INVALID;
        /* A channel row must exist before a member can be added to it. */
        if (rc == OC_ERR_NOT_FOUND &&
            (rc = dg_store_turns_channel_save(st, origin_channel_id, DG_MODE_NORMAL, NULL, NULL,
                                              0, now_ms)) != OC_OK)
            return rc;
        pos = (int)n_members;
        if ((rc = dg_store_turns_member_add(st, origin_channel_id, pos, initiator_agent_id,
                                            DG_MEMBER_RAN)))
            return rc;
    }
    /* The mirrors reload this channel before their next use. */
    log_channel_change(t, origin_channel_id, initiator_agent_id); /* the result wakes it */
    dg_scope sc;
    if ((rc = dg_scope_conversation(origin_channel_id, &sc)))
        return rc;
    dg_turn_state s;
    char *post = NULL;
    rc = dg_store_turns_scope_load(st, &sc, &s, &post);
    int exists = rc == OC_OK;
    if (rc == OC_ERR_NOT_FOUND)
        dg_turn_state_init(&s);
    else if (rc != OC_OK)
        return rc;
    int64_t agent_msgs = exists ? s.agent_msgs : 0;
    dg_turn_state_init(&s);
    s.active = 1;
    s.speaker = pos;
    s.anchor = DG_NOBODY;
    s.mention = UINT64_C(1) << pos;
    s.agent_msgs = agent_msgs;
    s.last_change_ms = now_ms;
    rc = dg_store_turns_scope_save(st, &sc, post, &s, exists, now_ms);
    free(post);
    return rc;
}
