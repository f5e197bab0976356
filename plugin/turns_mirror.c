/*
 * turns_mirror.c -- the engine's in-memory mirror of the store's rows:
 * channels, scopes and sessions, loaded on demand, reloaded in place when
 * another writer changed a channel, and dropped whole when a transaction
 * fails.
 * Records and locking: turns_int.h, turns_engine.c.
 */
#include "turns_int.h"

/* ---- mirror ---------------------------------------------------------------- */

static void free_chan(void *v, void *arg)
{
    (void)arg;
    turns_chan *c = v;
    if (c->id != c->id_inline)
        free(c->id);
    free(c->initiator);
    free(c->top_root);
    for (int i = 0; i < c->n; i++)
        free(c->members[i]);
    free(c);
}

void turns_free_scope(void *v, void *arg)
{
    (void)arg;
    turns_scope *r = v;
    free(r->key);
    free(r->post_channel);
    free(r);
}

void turns_free_sess(void *v, void *arg)
{
    (void)arg;
    turns_sess *s = v;
    free(s->key);
    free(s->thread);
    free(s);
}

/* Caller holds the write lock. */
void turns_flush_locked(dg_turns *t)
{
    atomic_store(&t->rescan, 1); /* the sweeper finds awake scopes in the mirror */
    dg_map_each(&t->sessions, turns_free_sess, NULL);
    dg_map_each(&t->scopes, turns_free_scope, NULL);
    dg_map_each(&t->chans, free_chan, NULL);
    dg_map_clear(&t->sessions);
    dg_map_clear(&t->scopes);
    dg_map_clear(&t->chans);
}


void turns_make_ctx(const dg_turns *t, const turns_chan *c, dg_rule_ctx *x)
{
    x->n_members = c->n;
    x->present = c->present;
    x->mode = c->mode;
    x->initiator = c->initiator_pos;
    x->timeout_ms = (int64_t)t->p->cfg.turn_timeout_sec * 1000;
    x->max_agent_msgs = t->p->cfg.turn_max_agent_messages;
    x->wake_tracking = atomic_load(&t->wake_tracking);
}

int turns_member_pos(const turns_chan *c, const char *agent_id)
{
    uint32_t h = (uint32_t)dg_map_hash(agent_id);
    for (int i = 0; i < c->n; i++)
        if (c->member_hash[i] == h && strcmp(c->members[i], agent_id) == 0)
            return i;
    return DG_NOBODY;
}

/* Channel record, loaded or created in the mirror. Store mutex held. */
int turns_chan_get(dg_turns *t, const char *channel_id, turns_chan **out)
{
    TURNS_ASSERT_WRITER(t);
    uint64_t h = channel_id == t->txn_chan_id ? t->txn_chan_hash : dg_map_hash(channel_id);
    *out = dg_map_get_hashed(&t->chans, channel_id, h);
    if (*out)
        return DG_OK;
    dg_turn_channel_row row;
    int rc = dg_store_turns_channel_load(t->p->store, channel_id, &row);
    if (rc != DG_OK && rc != DG_ERR_NOT_FOUND)
        return rc;
    turns_chan *c = calloc(1, sizeof *c);
    if (c)
        c->id = strlen(channel_id) < sizeof c->id_inline ? strcpy(c->id_inline, channel_id)
                                                         : strdup(channel_id);
    if (!c || !c->id) {
        free(c);
        dg_turn_channel_row_clear(&row);
        return DG_ERR_NOMEM;
    }
    c->in_db = rc == DG_OK;
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
    turns_recompute_present(t, c);
    pthread_rwlock_wrlock(&t->lock);
    rc = dg_map_put(&t->chans, c->id, c);
    pthread_rwlock_unlock(&t->lock);
    if (rc) {
        free_chan(c, NULL);
        return rc;
    }
    *out = c;
    return DG_OK;
}

int turns_channel_platform(dg_store *st, const char *channel_id, int64_t now)
{
    /* Rows are Discord's unless told: a Slack channel says so once made. */
    if (dg_platform_of_channel(channel_id) != DG_PLATFORM_SLACK)
        return DG_OK;
    return dg_store_turns_channel_platform_set(st, channel_id, "slack", now);
}

int turns_chan_save(dg_turns *t, turns_chan *c, int64_t now)
{
    TURNS_ASSERT_WRITER(t);
    int rc = dg_store_turns_channel_save(t->p->store, c->id, c->mode, c->initiator, c->top_root,
                                         c->bot_noticed, now);
    if (rc == DG_OK && !c->in_db)
        rc = turns_channel_platform(t->p->store, c->id, now);
    if (rc == DG_OK)
        c->in_db = 1;
    return rc;
}

/* Scope record, loaded or fresh (dormant). Store mutex held. */
int turns_scope_get(dg_turns *t, turns_chan *c, const dg_scope *sc, turns_scope **out)
{
    TURNS_ASSERT_WRITER(t);
    if (sc->kind == DG_SCOPE_CONVERSATION && c->conv) {
        *out = c->conv; /* same record as by key: records live until a flush */
        return DG_OK;
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
        return DG_OK;
    }
    turns_scope *r = calloc(1, sizeof *r);
    if (!r || !(r->key = strdup(key))) {
        free(r);
        return DG_ERR_NOMEM;
    }
    r->scope = *sc;
    r->chan = c;
    atomic_init(&r->wait_pos, DG_NOBODY);
    atomic_init(&r->wait_ms, 0);
    atomic_init(&r->run_pos, DG_NOBODY);
    for (size_t i = 0; i < DG_TURN_MAX_MEMBERS; i++)
        atomic_init(&r->reached_ms[i], 0);
    atomic_init(&r->unanswered_ms, 0);
    r->nudged_change = -1;
    r->nudged_pos = DG_NOBODY;
    r->nudged_seq = -1;
    r->nudges = 0;
    r->nudge_seen = 0;
    r->nudge_again = 0;
    r->run_before_wake = DG_NOBODY;
    int rc = dg_store_turns_scope_load(t->p->store, sc, &r->st, &r->post_channel);
    if (rc != DG_OK && rc != DG_ERR_NOT_FOUND) {
        turns_free_scope(r, NULL);
        return rc;
    }
    r->in_db = rc == DG_OK;
    /* Who moved it last is not known: another instance, if any writes. */
    r->moved_elsewhere = r->in_db && t->shared_seen;
    pthread_rwlock_wrlock(&t->lock);
    rc = dg_map_put(&t->scopes, r->key, r);
    if (rc == DG_OK && sc->kind == DG_SCOPE_CONVERSATION)
        c->conv = r;
    pthread_rwlock_unlock(&t->lock);
    if (rc) {
        turns_free_scope(r, NULL);
        return rc;
    }
    *out = r;
    return DG_OK;
}

void turns_scope_list_push(turns_scope_list *l, turns_scope *r)
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
    const turns_chan *chan;
    turns_scope_list list;
} chan_scopes;

static void collect_scope(void *val, void *arg)
{
    chan_scopes *cs = arg;
    turns_scope *r = val;
    if (r->chan == cs->chan)
        turns_scope_list_push(&cs->list, r);
}

/*
 * Reload channel_id's records from the database in place (it was changed
 * by a discussion prefill/close): the channel row and members, and the
 * state of each of its scopes the mirror holds. Records stay where they
 * are, so sessions keep what their last resolve recorded; sessions of the
 * channel re-derive their position (epoch). Writer held. DG_OK or an error
 * (the caller then drops the whole mirror).
 */
int turns_refresh_channel(dg_turns *t, const char *channel_id, int other)
{
    TURNS_ASSERT_WRITER(t);
    turns_chan *c = dg_map_get(&t->chans, channel_id);
    if (!c)
        return DG_OK; /* not loaded: it will be read fresh */
    dg_turn_channel_row row;
    int rc = dg_store_turns_channel_load(t->p->store, channel_id, &row);
    if (rc != DG_OK && rc != DG_ERR_NOT_FOUND)
        return rc;
    int chan_in_db = rc == DG_OK;
    chan_scopes cs = {.chan = c};
    dg_map_each(&t->scopes, collect_scope, &cs);
    turns_scope_list l = cs.list;
    dg_turn_state *st = l.n ? calloc(l.n, sizeof *st) : NULL;
    char **post = l.n ? calloc(l.n, sizeof *post) : NULL;
    int *found = l.n ? calloc(l.n, sizeof *found) : NULL;
    rc = l.nomem || (l.n && (!st || !post || !found)) ? DG_ERR_NOMEM : DG_OK;
    for (size_t i = 0; rc == DG_OK && i < l.n; i++) {
        rc = dg_store_turns_scope_load(t->p->store, &l.v[i]->scope, &st[i], &post[i]);
        found[i] = rc == DG_OK;
        if (rc == DG_ERR_NOT_FOUND)
            rc = DG_OK;
    }
    int changed = 0, unseen = 0;
    for (size_t i = 0; rc == DG_OK && other && i < l.n; i++)
        changed |= !dg_turn_state_same(&st[i], &l.v[i]->st);
    if (changed && !c->received[0])
        unseen = 1; /* nothing received here yet to compare with */
    else if (changed) {
        int64_t at = 0;
        rc = dg_store_turns_seen_since(t->p->store, c->id, c->received, &at, &unseen);
    }
    if (rc == DG_OK) {
        pthread_rwlock_wrlock(&t->lock);
        int had = c->n;
        for (int i = 0; i < c->n; i++)
            free(c->members[i]);
        c->n = 0;
        for (size_t i = 0; i < row.n_members && i < DG_TURN_MAX_MEMBERS; i++) {
            if (c->n >= had || c->standing[c->n] != row.standing[i])
                c->new_since[c->n] = 0; /* changed elsewhere: since when is unknown */
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
        turns_recompute_present(t, c);
        for (size_t i = 0; i < l.n; i++) {
            turns_scope *r = l.v[i];
            st[i].msg_seq = r->st.msg_seq; /* in memory only: runs in flight compare it */
            /* Another instance changed the scope, and took in a later
             * message of the channel than this one received: a run that
             * resolved here may not have seen it. Its other changes (a
             * claim, a timeout) are no message; each message is counted
             * when it reaches this instance (turns_ingest.c). */
            if (unseen && !dg_turn_state_same(&st[i], &r->st))
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

/* The scope channel-level sessions act in (scope.h, turns_engine.h). */
int turns_follow_scope(dg_turns *t, turns_chan *c, turns_scope **out)
{
    if (c->follow) {
        *out = c->follow;
        return DG_OK;
    }
    dg_scope sc;
    int rc = (t->p->cfg.session_policy == DG_POLICY_THREAD && c->top_root)
                 ? dg_scope_thread(c->id, c->top_root, &sc)
                 : dg_scope_conversation(c->id, &sc);
    if (rc == DG_OK)
        rc = turns_scope_get(t, c, &sc, out);
    if (rc == DG_OK) {
        pthread_rwlock_wrlock(&t->lock);
        c->follow = *out;
        pthread_rwlock_unlock(&t->lock);
    }
    return rc;
}

int turns_same_str(const char *a, const char *b)
{
    if (!a || !*a)
        return !b || !*b;
    return b && strcmp(a, b) == 0;
}

/* Session record for s, created or refreshed. Store mutex held. */
int turns_session_prepare(dg_turns *t, const dg_turn_session *s, int64_t now, turns_sess **out)
{
    TURNS_ASSERT_WRITER(t);
    turns_chan *c;
    int rc = turns_chan_get(t, s->channel_id, &c);
    if (rc)
        return rc;
    int configured = dg_config_agent(&t->p->cfg, s->agent_id) != NULL;
    int pos = DG_NOBODY;
    /* The host runs an agent only where it receives the channel. */
    if (configured && (rc = turns_member_ensure(t, c, s->agent_id, DG_MEMBER_RAN, now, &pos)))
        return rc;
    turns_scope *fixed = NULL;
    int has_thread = s->thread_id && *s->thread_id;
    if (s->is_dm || t->p->cfg.session_policy == DG_POLICY_CHANNEL || has_thread) {
        dg_scope_event ev = {
            .channel_id = s->channel_id, .thread_id = s->thread_id, .is_dm = s->is_dm};
        dg_scope sc;
        if ((rc = dg_scope_derive(t->p->cfg.session_policy, &ev, &sc)))
            return rc;
        if ((rc = turns_scope_get(t, c, &sc, &fixed)))
            return rc;
        if (has_thread && sc.kind == DG_SCOPE_THREAD && !fixed->post_channel)
            fixed->post_channel = turns_thread_target(c->id, s->thread_id);
    } else {
        turns_scope *f;
        if ((rc = turns_follow_scope(t, c, &f)))
            return rc;
    }

    turns_sess *e = dg_map_get(&t->sessions, s->session_key);
    char *thread = has_thread ? strdup(s->thread_id) : NULL;
    if (has_thread && !thread)
        return DG_ERR_NOMEM;
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e || !(e->key = strdup(s->session_key))) {
            free(e);
            free(thread);
            return DG_ERR_NOMEM;
        }
        atomic_init(&e->seen_seq, -1);
        atomic_init(&e->last, NULL);
        atomic_init(&e->granted, -1);
        pthread_rwlock_wrlock(&t->lock);
        rc = dg_map_put(&t->sessions, e->key, e);
        pthread_rwlock_unlock(&t->lock);
        if (rc) {
            free(thread);
            turns_free_sess(e, NULL);
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
    return DG_OK;
}

/* The mirror's session record for s if it is current; read lock held. */
turns_sess *turns_session_lookup_locked(dg_turns *t, const dg_turn_session *s, turns_scope **scope)
{
    if (atomic_load(&t->inval_seq) != atomic_load(&t->inval_seen))
        return NULL; /* a channel changed outside the engine: catch up first */
    turns_sess *e = dg_map_get(&t->sessions, s->session_key);
    if (!e || strcmp(e->chan->id, s->channel_id) != 0 || !turns_same_str(e->thread, s->thread_id) ||
        e->epoch != e->chan->epoch)
        return NULL;
    if (e->configured && e->pos == DG_NOBODY && e->chan->n < DG_TURN_MAX_MEMBERS)
        return NULL; /* not a member yet (e.g. after a prefill): record it */
    *scope = e->fixed ? e->fixed : e->chan->follow;
    return *scope ? e : NULL;
}

/* The scope message m belongs to, and whether it is a top-level message
 * under policy "thread" (it opens a thread of its own). DG_OK or the
 * status of dg_scope_derive. */
int turns_message_scope(const dg_turns *t, const dg_turn_message *m, dg_scope *sc, int *top_level)
{
    dg_scope_event ev = {.channel_id = m->channel_id,
                         .thread_id = m->thread_id,
                         .message_id = m->message_id,
                         .is_dm = m->is_dm,
                         .tags = m->tags,
                         .n_tags = m->n_tags};
    int rc = dg_scope_derive(t->p->cfg.session_policy, &ev, sc);
    if (rc)
        return rc;
    char root[65];
    *top_level = t->p->cfg.session_policy == DG_POLICY_THREAD && !m->is_dm &&
                 !(m->thread_id && *m->thread_id) && !dg_nip10_root(m->tags, m->n_tags, root) &&
                 sc->kind == DG_SCOPE_THREAD;
    return DG_OK;
}
