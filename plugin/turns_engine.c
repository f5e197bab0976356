/*
 * turns_engine.c -- the turn manager wired to store, outbox and clock
 * (contract in turns_engine.h; the rules themselves live in turns.c).
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
 * Discussion prefill/close run inside the discussion area's transaction
 * with nothing but the store; they log the channel they changed, and
 * every engine reloads that channel's records in place before its next
 * decision (after that transaction has ended). In place, so the runs in
 * flight elsewhere (and there) keep what their resolve recorded.
 */
#include "turns_engine.h"
#include "turns_engine_test.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_names.h"
#include "buf.h"
#include "discuss.h"
#include "outbox.h"
#include "silent.h"
#include "store.h"
#include "store_discuss.h"
#include "store_shared.h"
#include "store_turns.h"
#include "templates.h"
#include "turns_map.h"

/* The turn-timeout sweeper looks for speakers out of time this often
 * (real time; the turn clock itself is dg_now_ms). */
#define SWEEP_EVERY_MS 1000

/* A dormant thread scope untouched this long (turn clock) leaves the
 * mirror, with its sessions; the database still has it. */
#define EVICT_IDLE_MS (3600LL * 1000)

/* Dormant thread scopes the mirror keeps at most, whatever their age (each
 * costs about 0.8 KB with its sessions; under the thread policy every
 * top-level message makes one): past it the least recently changed leave,
 * down to 3/4 of it, so the scan that finds them is paid once per quarter
 * of the bound, not per message (issue 12, bug 7). */
#define DORMANT_MAX 4096

/* Dedup rows (message ids, run ids) and dormant thread states are kept
 * this long; they are also pruned every so many ingests. */
#define SEEN_KEEP_MS (7LL * 24 * 3600 * 1000)
#define SEEN_PRUNE_EVERY 65536

/*
 * Channels the discussion code changed through the engine (prefill,
 * close, wake with result) inside its own transaction: a ring of the
 * latest channel ids and the count of entries ever logged, per engine. A
 * writer that fell more than the ring behind drops its whole mirror
 * instead.
 */
#define INVAL_RING 64
#define WAKE_AGENT_MAX 128
typedef struct inval_entry {
    char channel[DG_SCOPE_ID_MAX];
    char wake[WAKE_AGENT_MAX];   /* agent granted the turn with a wake message
                                    (a discussion's kickoff), "" for none */
} inval_entry;
typedef struct scope_rec scope_rec;

typedef struct chan_rec {
    char *id;
    dg_channel_mode mode;
    char *initiator;
    char *top_root;              /* latest top-level thread (thread policy) */
    int bot_noticed;
    int n;                       /* members */
    char *members[DG_TURN_MAX_MEMBERS];
    uint64_t present;            /* members that are configured agents */
    int initiator_pos;
    int in_db;
    unsigned epoch;              /* bumped when reloaded in place: sessions re-derive */
    scope_rec *follow;           /* scope of channel-level sessions, NULL until loaded */
    scope_rec *conv;             /* Conversation(channel) once loaded: the hot path's
                                    scope under policy "channel", found without a key */
} chan_rec;

/* One message of the scope's recent history (scope_rec.recent). */
#define RECENT_MAX 4
#define RECENT_FP_MAX 48
/* An older message is evidence of a stale prompt only when its
 * fingerprint is this long: a short one ("ok") turns up by chance. */
#define RECENT_FP_EVIDENCE 8
typedef struct recent_msg {
    char fp[RECENT_FP_MAX];      /* message_fingerprint(); "" when nothing to look for */
    int author;                  /* member position of its agent, DG_NOBODY for others */
} recent_msg;

struct scope_rec {
    char *key;
    dg_scope scope;
    chan_rec *chan;
    char *post_channel;          /* Discord channel for moderator messages; NULL = channel */
    dg_turn_state st;
    int in_db;
    int evict;                   /* chosen to leave the mirror (evict_idle) */
    /* The first line of the idle reminder that woke wake_fp_pos (mentions
     * dropped), "" when none: a run of that speaker counts only once its
     * prompt carries it. A host may start a run queued for an older
     * message after the reminder reached the session; that run must not
     * answer for the speaker. In memory, written under the writer mutex;
     * lost on restart (then the delivery alone ends the wait). */
    char wake_fp[48];
    int wake_fp_pos;
    int64_t wake_fp_ms;          /* when it was set: older than WAKE_FP_MAX_MS, ignored */
    /* The last RECENT_MAX human/agent messages of the scope, newest at
     * recent_head - 1 (recent_msg): a run of the speaker whose prompt
     * carries one of the older ones but not the newest was queued for an
     * older message and started late (dg_turns_claim). In memory only:
     * after a restart there is no evidence and runs count. */
    recent_msg recent[RECENT_MAX];
    unsigned recent_head;        /* messages recorded so far (mod RECENT_MAX: next slot) */
};

/* A fingerprint older than this is ignored: a wake run that never matched
 * (a host that rewrote the text) must not hold a speaker for longer. */
#define WAKE_FP_MAX_MS (10 * 60 * 1000)

typedef struct sess_rec {
    char *key;
    char *thread;                /* ctx threadId it was resolved with */
    chan_rec *chan;
    scope_rec *fixed;            /* NULL: follows chan->follow */
    int configured;              /* agent of `agents` */
    int pos;                     /* member position or DG_NOBODY */
    unsigned epoch;              /* chan->epoch it was derived under */
    _Atomic int64_t seen_seq;    /* scope's msg_seq when its run resolved */
    _Atomic(scope_rec *) last;   /* scope its run resolved in */
    _Atomic int granted;         /* last resolve: 1 turn, 0 swapped, -1 none */
} sess_rec;

/* A silenced run (turns_engine.h "Silenced runs"). */
typedef enum mark_kind {
    MARK_NONE = 0,
    MARK_SWAPPED = 1,
    MARK_CLAIMED = 2,
    MARK_WAITING = 3             /* swapped while its agent awaited its wake message:
                                    texts cancelled, its end changes nothing */
} mark_kind;

typedef struct run_mark {
    uint64_t sess_h;             /* hash of session_key (0: empty slot) */
    char *session_key;           /* malloc'd */
    char *run_id;                /* malloc'd; NULL: matched by session while live */
    mark_kind kind;
    int live;                    /* no unsilenced decision of the session since */
    int64_t seen_seq;            /* scope's msg_seq when it was decided */
} run_mark;

static int valid_session(const dg_turn_session *s);

/* Scope states waiting for their transaction to commit (see finish()). */
#define MAX_PENDING 4

struct dg_turns {
    dg_plugin *p;
    pthread_mutex_t wmu;         /* one engine writer at a time (txn_begin .. finish) */
    pthread_rwlock_t lock;       /* the mirror: readers vs. the writer */
    /* The channel change log (inval_entry): inval_mu guards the ring;
     * inval_seq counts entries ever logged, inval_seen those applied. */
    pthread_mutex_t inval_mu;
    _Atomic uint64_t inval_seq;
    inval_entry inval[INVAL_RING];
    _Atomic uint64_t inval_seen;
    _Atomic int64_t applied;     /* the store's change log (other instances sharing
                                    it, store_shared.h) is applied up to here */
    struct {
        scope_rec *r;
        dg_turn_state st;
    } pending[MAX_PENDING];
    int n_pending;
    /* The turn-timeout sweeper (see sweeper()). */
    pthread_t sweeper;
    int sweeper_started;
    pthread_mutex_t sw_mu;
    pthread_cond_t sw_cv;        /* CLOCK_MONOTONIC */
    int sw_stop;
    _Atomic int rescan;          /* load the awake scopes of the database into the mirror */
    dg_map chans, scopes, sessions;
    /* Set once message_received has reported a delivery to an agent
     * session (turns_engine.h "Awaiting the wake message"): only then is a
     * wait armed. Per instance, never reset. */
    _Atomic int wake_tracking;
    /* Silenced runs: a ring, newest at marks[(mk_next - 1) % DG_RUN_MARKS].
     * mk_mu is a leaf lock (taken under any other, never the reverse). */
    pthread_mutex_t mk_mu;
    run_mark marks[DG_RUN_MARKS];
    size_t mk_next;
    unsigned long fresh_ingests;
    int warned_cap;
    size_t dormant_max;          /* DORMANT_MAX; tests lower it */
    size_t evict_at;             /* mirror size (scopes) that makes an ingest evict */
    dg_agent_names *names;       /* agents' Discord names, for mentions in text */
};

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
    free(c->id);
    free(c->initiator);
    free(c->top_root);
    for (int i = 0; i < c->n; i++)
        free(c->members[i]);
    free(c);
}

static void free_scope(void *v, void *arg)
{
    (void)arg;
    scope_rec *r = v;
    free(r->key);
    free(r->post_channel);
    free(r);
}

static void free_sess(void *v, void *arg)
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


static void recompute_present(const dg_turns *t, chan_rec *c)
{
    c->present = 0;
    c->initiator_pos = DG_NOBODY;
    for (int i = 0; i < c->n; i++) {
        if (dg_config_agent(&t->p->cfg, c->members[i]))
            c->present |= (uint64_t)1 << i;
        if (c->initiator && strcmp(c->members[i], c->initiator) == 0)
            c->initiator_pos = i;
    }
}

static void make_ctx(const dg_turns *t, const chan_rec *c, dg_turn_ctx *x)
{
    x->n_members = c->n;
    x->present = c->present;
    x->mode = c->mode;
    x->initiator = c->initiator_pos;
    x->timeout_ms = (int64_t)t->p->cfg.turn_timeout_sec * 1000;
    x->max_agent_msgs = t->p->cfg.turn_max_agent_messages;
    x->wake_tracking = atomic_load(&t->wake_tracking);
}

static int member_pos(const chan_rec *c, const char *agent_id)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->members[i], agent_id) == 0)
            return i;
    return DG_NOBODY;
}

/* Channel record, loaded or created in the mirror. Store mutex held. */
static int chan_get(dg_turns *t, const char *channel_id, chan_rec **out)
{
    *out = dg_map_get(&t->chans, channel_id);
    if (*out)
        return OC_OK;
    dg_turn_channel_row row;
    int rc = dg_store_turns_channel_load(t->p->store, channel_id, &row);
    if (rc != OC_OK && rc != OC_ERR_NOT_FOUND)
        return rc;
    chan_rec *c = calloc(1, sizeof *c);
    if (!c || !(c->id = strdup(channel_id))) {
        free(c);
        dg_turn_channel_row_clear(&row);
        return OC_ERR_NOMEM;
    }
    c->in_db = rc == OC_OK;
    c->mode = row.mode;
    c->initiator = row.initiator;
    c->top_root = row.top_root;
    c->bot_noticed = row.bot_noticed;
    for (size_t i = 0; i < row.n_members && i < DG_TURN_MAX_MEMBERS; i++) {
        c->members[i] = row.members[i];
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

static int chan_save(dg_turns *t, chan_rec *c, int64_t now)
{
    int rc = dg_store_turns_channel_save(t->p->store, c->id, c->mode, c->initiator, c->top_root,
                                         c->bot_noticed, now);
    if (rc == OC_OK)
        c->in_db = 1;
    return rc;
}

/* Scope record, loaded or fresh (dormant). Store mutex held. */
static int scope_get(dg_turns *t, chan_rec *c, const dg_scope *sc, scope_rec **out)
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
    int rc = dg_store_turns_scope_load(t->p->store, sc, &r->st, &r->post_channel);
    if (rc != OC_OK && rc != OC_ERR_NOT_FOUND) {
        free_scope(r, NULL);
        return rc;
    }
    r->in_db = rc == OC_OK;
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

typedef struct scope_list {
    const chan_rec *chan;
    scope_rec **v;
    size_t n, cap;
    int nomem;
} scope_list;

static void collect_scope(void *val, void *arg)
{
    scope_list *l = arg;
    scope_rec *r = val;
    if (r->chan != l->chan || l->nomem)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        scope_rec **v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->nomem = 1;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = r;
}

/*
 * Reload channel_id's records from the database in place (it was changed
 * by a discussion prefill/close): the channel row and members, and the
 * state of each of its scopes the mirror holds. Records stay where they
 * are, so sessions keep what their last resolve recorded; sessions of the
 * channel re-derive their position (epoch). Writer held. OC_OK or an error
 * (the caller then drops the whole mirror).
 */
static int refresh_channel(dg_turns *t, const char *channel_id, int other)
{
    chan_rec *c = dg_map_get(&t->chans, channel_id);
    if (!c)
        return OC_OK; /* not loaded: it will be read fresh */
    dg_turn_channel_row row;
    int rc = dg_store_turns_channel_load(t->p->store, channel_id, &row);
    if (rc != OC_OK && rc != OC_ERR_NOT_FOUND)
        return rc;
    int chan_in_db = rc == OC_OK;
    scope_list l = {.chan = c};
    dg_map_each(&t->scopes, collect_scope, &l);
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
 * Apply what other instances sharing the store committed (store_shared.h):
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
static int follow_scope(dg_turns *t, chan_rec *c, scope_rec **out)
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

/* Position of agent_id in c, appending it when it is a configured agent
 * seen for the first time. Store mutex held. */
static int member_ensure(dg_turns *t, chan_rec *c, const char *agent_id, int64_t now, int *pos)
{
    *pos = member_pos(c, agent_id);
    if (*pos != DG_NOBODY || !dg_config_agent(&t->p->cfg, agent_id))
        return OC_OK;
    if (c->n >= DG_TURN_MAX_MEMBERS) {
        if (!t->warned_cap) {
            t->warned_cap = 1;
            dg_log(t->p, OC_LOG_WARN,
                   "turns: channel %s already has %d agents in its turn order; agent %s is "
                   "not added and stays silent there (at most %d agents take turns in one "
                   "channel)", c->id, c->n, agent_id, DG_TURN_MAX_MEMBERS);
        }
        return OC_OK;
    }
    int rc = OC_OK;
    if (!c->in_db)
        rc = chan_save(t, c, now);
    if (rc == OC_OK)
        rc = dg_store_turns_member_add(t->p->store, c->id, c->n, agent_id);
    if (rc != OC_OK)
        return rc;
    char *dup = strdup(agent_id);
    if (!dup)
        return OC_ERR_NOMEM;
    pthread_rwlock_wrlock(&t->lock);
    c->members[c->n] = dup;
    c->n++;
    recompute_present(t, c);
    pthread_rwlock_unlock(&t->lock);
    *pos = c->n - 1;
    return OC_OK;
}

static int same_str(const char *a, const char *b)
{
    if (!a || !*a)
        return !b || !*b;
    return b && strcmp(a, b) == 0;
}

/* Session record for s, created or refreshed. Store mutex held. */
static int session_prepare(dg_turns *t, const dg_turn_session *s, int64_t now, sess_rec **out)
{
    chan_rec *c;
    int rc = chan_get(t, s->channel_id, &c);
    if (rc)
        return rc;
    int configured = dg_config_agent(&t->p->cfg, s->agent_id) != NULL;
    int pos = DG_NOBODY;
    if (configured && (rc = member_ensure(t, c, s->agent_id, now, &pos)))
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
static sess_rec *session_lookup_locked(dg_turns *t, const dg_turn_session *s, scope_rec **scope)
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

/* Start a change: the writer mutex, then a store transaction; the mirror
 * is brought up to date with changes made outside the engine. OC_OK or
 * OC_ERR_IO (nothing held then). */
static int txn_begin(dg_turns *t)
{
    pthread_mutex_lock(&t->wmu);
    if (dg_store_begin(t->p->store) != OC_OK) {
        pthread_mutex_unlock(&t->wmu);
        return OC_ERR_IO;
    }
    sync_changes(t);
    sync_store(t);
    return OC_OK;
}

/*
 * End a change: commit when rc is OC_OK, else roll back. After a commit
 * the pending scope states are published; after a rollback or a failed
 * commit the whole mirror is dropped (records loaded or changed in the
 * transaction may not match the database) and reloaded on demand. Both
 * under the mirror's write lock, before the writer mutex is released.
 */
static int finish(dg_turns *t, int rc)
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
static void finish_read(dg_turns *t)
{
    dg_store_rollback(t->p->store);
    pthread_mutex_unlock(&t->wmu);
}

/* Publish st as r's state once the transaction commits. */
static int install(dg_turns *t, scope_rec *r, const dg_turn_state *st)
{
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

static int save_scope(dg_turns *t, scope_rec *r, const dg_turn_state *st, int64_t now)
{
    int rc = dg_store_turns_scope_save(t->p->store, &r->scope, r->post_channel, st, r->in_db,
                                       now);
    if (rc == OC_OK)
        r->in_db = 1;
    return rc;
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
static void mark_add(dg_turns *t, const char *key, const char *run_id, mark_kind kind,
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
static void mark_end_session(dg_turns *t, const char *key)
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
static mark_kind mark_find_ex(dg_turns *t, const char *key, const char *run_id, int64_t *seen,
                              int *other_run, int *exact);

static mark_kind mark_find(dg_turns *t, const char *key, const char *run_id, int64_t *seen,
                           int *other_run)
{
    return mark_find_ex(t, key, run_id, seen, other_run, NULL);
}

/* As mark_find; *exact (may be NULL): the mark matched by run id. */
static mark_kind mark_find_ex(dg_turns *t, const char *key, const char *run_id, int64_t *seen,
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

static const char *user_of(const dg_turns *t, const chan_rec *c, int pos)
{
    if (pos < 0 || pos >= c->n)
        return NULL;
    const dg_agent_cfg *a = dg_config_agent(&t->p->cfg, c->members[pos]);
    return a ? a->discord_user_id : NULL;
}

static int enqueue(dg_turns *t, const char *channel, const char *content, const char *mention,
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

static void recent_push(scope_rec *r, const char *content, int author)
{
    recent_msg *m = &r->recent[r->recent_head % RECENT_MAX];
    message_fingerprint(content, m->fp, sizeof m->fp);
    m->author = author;
    r->recent_head++;
}

/*
 * 1 when prompt answers an older message of scope r than its newest, for
 * the agent at member position pos: the newest (not its own) is not in
 * the prompt, and an older one of someone else's (long enough to count)
 * is. 0 otherwise, also when there is no evidence either way.
 */
static int answers_older(const scope_rec *r, int pos, const char *prompt)
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

static int render_and_enqueue(dg_turns *t, const char *name, const dg_tpl_vars *vars,
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

/* The moderator messages fx owes scope r, whose next state is next. A
 * wake message that is not queued after all (no user id, not a Discord
 * channel) ends the wait for it in next: nothing would ever end it. */
static int queue_effects(dg_turns *t, scope_rec *r, const dg_turn_effects *fx,
                         dg_turn_state *next, int64_t now, int *kick)
{
    chan_rec *c = r->chan;
    const char *post = r->post_channel ? r->post_channel : c->id;
    int rc = OC_OK;
    if (fx->handoff_to != DG_NOBODY) {
        /* A bare mention wakes the next speaker, who already consumed the
         * latest message silently. */
        const char *uid = user_of(t, c, fx->handoff_to);
        int queued = 0;
        if (uid) {
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
        dg_tpl_vars v = {.discussGuide = have ? d.discuss_guide : NULL,
                         .initiatorMention = mention,
                         .discussionChannel = chan,
                         .originChannel = origin,
                         .status = "active"};
        int queued = 0;
        char fp[sizeof r->wake_fp];
        rc = render_and_enqueue(t, "idle.md", &v, post, uid, now, &queued, fp, sizeof fp);
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

/* ---- turn timeouts ----------------------------------------------------------------- */

/* Load every awake scope of the database into the mirror (after a start or
 * a flush), where the sweeper looks for speakers out of time. */
static int load_awake(dg_turns *t)
{
    if (txn_begin(t) != OC_OK)
        return OC_ERR_IO;
    dg_scope *v = NULL;
    size_t n = 0;
    int rc = dg_store_turns_active_scopes(t->p->store, &v, &n);
    for (size_t i = 0; rc == OC_OK && i < n; i++) {
        chan_rec *c;
        scope_rec *r;
        if ((rc = chan_get(t, v[i].channel_id, &c)) == OC_OK)
            rc = scope_get(t, c, &v[i], &r);
    }
    free(v);
    finish_read(t); /* what was loaded is what the database holds */
    return rc;
}

typedef struct due_list {
    int64_t now, timeout_ms;
    dg_scope *v;
    size_t n, cap;
    int nomem;
} due_list;

/* Mirror read lock held. */
static void collect_due(void *val, void *arg)
{
    const scope_rec *r = val;
    due_list *d = arg;
    if (d->nomem || !r->st.active || r->chan->mode == DG_MODE_CLOSED ||
        d->now - r->st.last_change_ms < d->timeout_ms)
        return;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 16;
        dg_scope *v = realloc(d->v, cap * sizeof *v);
        if (!v) {
            d->nomem = 1;
            return;
        }
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = r->scope;
}

/* Apply turn.timeoutSec to scope sc now, with the moderator messages it
 * owes (a hand-off to a next speaker who already consumed the latest
 * message, a discussion's idle reminder): what a hook would do lazily, done
 * although no hook comes. */
static int expire_scope(dg_turns *t, const dg_scope *sc)
{
    int64_t now = dg_now_ms(t->p);
    if (txn_begin(t) != OC_OK)
        return OC_ERR_IO;
    chan_rec *c;
    scope_rec *r = NULL;
    int kick = 0, rc = chan_get(t, sc->channel_id, &c);
    if (rc == OC_OK)
        rc = scope_get(t, c, sc, &r);
    if (rc == OC_OK && c->mode != DG_MODE_CLOSED) {
        dg_turn_ctx x;
        make_ctx(t, c, &x);
        dg_turn_effects fx;
        dg_turn_effects_init(&fx);
        dg_turn_state next = r->st;
        int late = dg_turn_speaker(&r->st, &x);
        dg_turn_expire(&next, &x, now, &fx);
        if (!dg_turn_state_same(&next, &r->st)) {
            char label[DG_SCOPE_LABEL_MAX];
            dg_log(t->p, OC_LOG_INFO, "turns: %s did not finish within turn.timeoutSec (%lds) in "
                   "channel %s (%s); the turn passes on", late >= 0 && late < c->n
                   ? c->members[late] : "the speaker", (long)t->p->cfg.turn_timeout_sec, c->id,
                   dg_scope_label(&r->scope, label));
            if ((rc = save_scope(t, r, &next, now)) == OC_OK &&
                (rc = queue_effects(t, r, &fx, &next, now, &kick)) == OC_OK)
                rc = install(t, r, &next);
        }
    }
    if (rc != OC_OK)
        dg_log(t->p, OC_LOG_ERROR, "turns: could not apply the turn timeout in channel %s (%s: "
               "%s); retried shortly", sc->channel_id, oc_status_name(rc),
               dg_store_errmsg(t->p->store));
    rc = finish(t, rc);
    if (rc == OC_OK && kick)
        dg_outbox_kick(t->p->outbox);
    return rc;
}

typedef struct evict_scan {
    int64_t now;
    size_t n;                    /* evictable by age */
    size_t dormant;              /* dormant thread scopes (evictable by count) */
    int64_t *ages;               /* their last changes, when collected */
    size_t n_ages;
    int64_t cutoff;              /* dormant ones changed at or before this leave too */
} evict_scan;

/* A dormant thread scope that is not the one channel-level sessions
 * follow: it may leave the mirror. Mirror lock held. */
static int dormant_thread(const scope_rec *r)
{
    return r->scope.kind == DG_SCOPE_THREAD && !r->st.active && r != r->chan->follow;
}

/* A dormant thread scope nobody has touched for EVICT_IDLE_MS, or one of
 * the oldest past the count bound (cutoff). Mirror lock held. */
static int evictable(const scope_rec *r, const evict_scan *e)
{
    return dormant_thread(r) && (e->now - r->st.last_change_ms >= EVICT_IDLE_MS ||
                                 r->st.last_change_ms <= e->cutoff);
}

static void count_evictable(void *val, void *arg)
{
    evict_scan *e = arg;
    const scope_rec *r = val;
    e->n += evictable(r, e);
    e->dormant += dormant_thread(r);
}

static void collect_ages(void *val, void *arg)
{
    evict_scan *e = arg;
    const scope_rec *r = val;
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
    return !((scope_rec *)val)->evict;
}

static int keep_sess(void *val, void *arg)
{
    (void)arg;
    sess_rec *e = val;
    scope_rec *last = atomic_load(&e->last);
    return !(e->fixed && e->fixed->evict) && !(last && last->evict);
}

static void mark_evict(void *val, void *arg)
{
    scope_rec *r = val;
    r->evict = evictable(r, arg);
}

static void unmark_evict(void *val, void *arg)
{
    (void)arg;
    ((scope_rec *)val)->evict = 0;
}

/*
 * Drop idle thread scopes and their sessions from the mirror: under the
 * thread policy every thread (every top-level message, without Discord
 * threads) is a scope, and the mirror would otherwise grow for as long as
 * the process lives. Idle ones leave after EVICT_IDLE_MS; past
 * t->dormant_max dormant ones, the least recently changed leave at once.
 * A later event reloads what it needs from the database. Between changes
 * (writer mutex) and with no reader (write lock).
 */
static void evict_idle(dg_turns *t, int64_t now)
{
    evict_scan e = {.now = now, .cutoff = INT64_MIN};
    pthread_rwlock_rdlock(&t->lock);
    dg_map_each(&t->scopes, count_evictable, &e);
    pthread_rwlock_unlock(&t->lock);
    if (!e.n && e.dormant <= t->dormant_max)
        return;
    pthread_mutex_lock(&t->wmu);
    pthread_rwlock_wrlock(&t->lock);
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
    if (dg_map_retain(&t->sessions, keep_sess, free_sess, NULL) != OC_OK ||
        dg_map_retain(&t->scopes, keep_scope, free_scope, NULL) != OC_OK)
        dg_map_each(&t->scopes, unmark_evict, NULL); /* out of memory: next time */
    t->evict_at = t->scopes.n + t->dormant_max / 4 > t->dormant_max
                      ? t->scopes.n + t->dormant_max / 4 : t->dormant_max;
    pthread_rwlock_unlock(&t->lock);
    pthread_mutex_unlock(&t->wmu);
}

/* After an ingest: a mirror past its bound is trimmed at once, not at the
 * sweeper's next pass (a burst of top-level messages would otherwise grow
 * it by as many as arrive in a second). */
static void evict_if_over(dg_turns *t, int64_t now)
{
    pthread_rwlock_rdlock(&t->lock);
    int over = t->scopes.n > t->evict_at;
    pthread_rwlock_unlock(&t->lock);
    if (over)
        evict_idle(t, now);
}

void dg_turns_set_dormant_max(dg_turns *t, size_t n)
{
    pthread_mutex_lock(&t->wmu);
    pthread_rwlock_wrlock(&t->lock);
    t->dormant_max = t->evict_at = n ? n : DORMANT_MAX;
    pthread_rwlock_unlock(&t->lock);
    pthread_mutex_unlock(&t->wmu);
}

/* One pass: every awake scope whose speaker is out of time moves on. */
static void sweep(dg_turns *t)
{
    if (atomic_exchange(&t->rescan, 0) && load_awake(t) != OC_OK)
        atomic_store(&t->rescan, 1);
    dg_discuss_sweep(t->p); /* discussion timers (issue 16): their own transactions */
    due_list d = {.now = dg_now_ms(t->p), .timeout_ms = (int64_t)t->p->cfg.turn_timeout_sec * 1000};
    if (d.timeout_ms <= 0)
        return;
    pthread_rwlock_rdlock(&t->lock);
    dg_map_each(&t->scopes, collect_due, &d);
    pthread_rwlock_unlock(&t->lock);
    for (size_t i = 0; i < d.n; i++)
        expire_scope(t, &d.v[i]);
    free(d.v);
    evict_idle(t, d.now);
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
        ts.tv_sec += SWEEP_EVERY_MS / 1000;
        ts.tv_nsec += (long)(SWEEP_EVERY_MS % 1000) * 1000000L;
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
        return OC_OK;
    if (pthread_create(&t->sweeper, NULL, sweeper, t) != 0) {
        dg_log(t->p, OC_LOG_ERROR, "turns: could not start the turn-timeout thread; a speaker "
               "that never finishes keeps the turn until the next message");
        return OC_ERR_INTERNAL;
    }
    t->sweeper_started = 1;
    return OC_OK;
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

/* ---- message_received ------------------------------------------------------------ */

/* Content made only of user mentions: the moderator's hand-off trigger. */
static int is_bare_mention(const char *s)
{
    int any = 0;
    while (s && *s) {
        if (isspace((unsigned char)*s)) {
            s++;
            continue;
        }
        if (strncmp(s, "<@", 2) != 0)
            return 0;
        s += 2;
        if (*s == '!')
            s++;
        if (!isdigit((unsigned char)*s))
            return 0;
        while (isdigit((unsigned char)*s))
            s++;
        if (*s++ != '>')
            return 0;
        any = 1;
    }
    return any;
}

static int closed_notice(dg_turns *t, chan_rec *c, const dg_turn_message *m, dg_sender_kind kind,
                         int64_t now, int *kick)
{
    if (kind == DG_SENDER_MODERATOR || kind == DG_SENDER_HANDOFF || !m->message_id)
        return OC_OK;
    int botish = kind == DG_SENDER_AGENT || kind == DG_SENDER_BOT;
    int rc;
    if (!botish && c->bot_noticed) {
        c->bot_noticed = 0; /* a human spoke: bots may get one notice again */
        if ((rc = chan_save(t, c, now)))
            return rc;
    } else if (botish && c->bot_noticed) {
        /* A bot already got a notice since the last human message: no
         * ping-pong between the moderator and a bot answering it. */
        return OC_OK;
    }
    int64_t cooldown = (int64_t)t->p->cfg.closed_notice_cooldown_sec * 1000;
    int claim = dg_discuss_claim_closed_notice_locked(t->p->store, c->id, m->message_id, now,
                                                      cooldown);
    if (claim < 0)
        return claim;
    if (!claim)
        return OC_OK;
    char chan[48];
    snprintf(chan, sizeof chan, "<#%s>", c->id);
    dg_tpl_vars v = {.discussionChannel = chan, .status = "closed"};
    const char *post = (m->thread_id && *m->thread_id) ? m->thread_id : c->id;
    if ((rc = render_and_enqueue(t, "closed.md", &v, post, NULL, now, kick, NULL, 0)))
        return rc;
    if (botish) {
        c->bot_noticed = 1;
        rc = chan_save(t, c, now);
    }
    return rc;
}

/* ---- admin commands ------------------------------------------------------------- */

static int is_admin(const dg_config *cfg, const char *user_id)
{
    for (size_t i = 0; i < cfg->n_admins; i++)
        if (strcmp(cfg->admins[i], user_id) == 0)
            return 1;
    return 0;
}

static int is_admin_reply(const char *content)
{
    return content &&
           strncmp(content, DG_ADMIN_REPLY_PREFIX, sizeof DG_ADMIN_REPLY_PREFIX - 1) == 0;
}

/* A growing reply text; on out of memory (or a template that cannot be
 * rendered) it keeps nomem set. */
typedef struct reply_buf {
    dg_buf b;
    int nomem;
} reply_buf;

static void reply_add(reply_buf *r, const char *text)
{
    if (!r->nomem && (!text || dg_buf_adds(&r->b, text)))
        r->nomem = 1;
}

/* The reply prefix, then template name (admin_*.md) rendered with v. */
static void reply_tpl(const dg_turns *t, reply_buf *r, const char *name, const dg_tpl_vars *v)
{
    static const dg_tpl_vars none;
    char *text = t->p->templates ? dg_templates_render_trim(t->p->templates, name, v ? v : &none)
                                 : NULL;
    if (!text)
        dg_log(t->p, OC_LOG_ERROR, "turns: template %s could not be rendered; the admin reply "
               "is not sent", name);
    reply_add(r, DG_ADMIN_REPLY_PREFIX);
    reply_add(r, text);
    free(text);
}

/* "a, b" of the members of c whose bit is set in mask, or `none`. 0 or
 * -1 when out of memory; out is freed by the caller. */
static int member_list(const chan_rec *c, uint64_t mask, const char *none, dg_buf *out)
{
    for (int i = 0; i < c->n; i++)
        if ((mask & ((uint64_t)1 << i)) &&
            ((out->len && dg_buf_adds(out, ", ")) || dg_buf_adds(out, c->members[i])))
            return -1;
    return out->len ? 0 : dg_buf_adds(out, none);
}

static const char *admin_cmd_name(dg_admin_cmd cmd)
{
    switch (cmd) {
    case DG_ADMIN_STATUS: return "status";
    case DG_ADMIN_REST: return "rest";
    case DG_ADMIN_WAKE: return "wake";
    case DG_ADMIN_SKIP: return "skip";
    case DG_ADMIN_CLOSE: return "close";
    case DG_ADMIN_HELP: return "help";
    case DG_ADMIN_NONE: break;
    }
    return "none";
}

/* The status lines of scope r (state st, timeouts applied) into b. */
static void admin_status(const dg_turns *t, const scope_rec *r, const dg_turn_state *st,
                         const dg_turn_ctx *x, reply_buf *b)
{
    const chan_rec *c = r->chan;
    char label[DG_SCOPE_LABEL_MAX], msgs[24], max[24];
    dg_buf order = {0}, passed = {0};
    if (member_list(c, c->present, "none yet", &order) ||
        member_list(c, st->silent & c->present, "none", &passed))
        b->nomem = 1;
    int sp = dg_turn_speaker(st, x);
    snprintf(msgs, sizeof msgs, "%lld", (long long)st->agent_msgs);
    snprintf(max, sizeof max, "%ld", (long)t->p->cfg.turn_max_agent_messages);
    dg_tpl_vars v = {
        .policy = dg_session_policy_name(t->p->cfg.session_policy),
        .scope = dg_scope_label(&r->scope, label),
        .mode = dg_channel_mode_name(c->mode),
        .turnOrder = order.s,
        .speaker = !st->active ? (st->rested ? "resting (loop guard)" : "dormant")
                 : sp != DG_NOBODY ? c->members[sp] : "nobody eligible",
        .passed = passed.s,
        .agentMessages = msgs,
        .maxAgentMessages = max,
    };
    if (!b->nomem)
        reply_tpl(t, b, "admin_status.md", &v);
    dg_buf_free(&order);
    dg_buf_free(&passed);
    if (c->mode == DG_MODE_CLOSED) {
        char *note = t->p->templates
            ? dg_templates_render_trim(t->p->templates, "admin_status_closed.md", &v) : NULL;
        reply_add(b, "\n");
        reply_add(b, note);
        free(note);
    }
}

/*
 * Run admin command cmd of message m (already claimed by the dedup) on the
 * message's scope: under policy "thread" a top-level command acts on the
 * channel's latest top-level thread (what channel-level sessions follow)
 * and opens no thread of its own -- a command is not speech. The state
 * change and the reply commit together. Writer held.
 */
static int admin_locked(dg_turns *t, const dg_turn_message *m, dg_admin_cmd cmd, int64_t now,
                        int *kick)
{
    chan_rec *c;
    int rc;
    if ((rc = chan_get(t, m->channel_id, &c)))
        return rc;
    dg_scope_event ev = {.channel_id = m->channel_id, .thread_id = m->thread_id,
                         .message_id = m->message_id, .is_dm = m->is_dm,
                         .tags = m->tags, .n_tags = m->n_tags};
    dg_scope sc;
    if ((rc = dg_scope_derive(t->p->cfg.session_policy, &ev, &sc)))
        return rc;
    char root[65];
    int top_level = t->p->cfg.session_policy == DG_POLICY_THREAD && !m->is_dm &&
                    !(m->thread_id && *m->thread_id) && !dg_nip10_root(m->tags, m->n_tags, root) &&
                    sc.kind == DG_SCOPE_THREAD;
    scope_rec *r;
    if ((rc = top_level ? follow_scope(t, c, &r) : scope_get(t, c, &sc, &r)))
        return rc;
    if (m->thread_id && *m->thread_id && r->scope.kind == DG_SCOPE_THREAD && !r->post_channel &&
        !(r->post_channel = strdup(m->thread_id)))
        return OC_ERR_NOMEM;
    const char *post = r->post_channel ? r->post_channel : c->id;

    char label[DG_SCOPE_LABEL_MAX];
    dg_log(t->p, OC_LOG_INFO, "turns: admin %s ran \"!dirigent %s\" in channel %s (%s)",
           m->sender_id, admin_cmd_name(cmd), c->id, dg_scope_label(&r->scope, label));

    dg_turn_ctx x;
    make_ctx(t, c, &x);
    dg_turn_effects fx;
    dg_turn_effects_init(&fx);
    dg_turn_state next = r->st;
    reply_buf b = {0};
    const char *mention = NULL;
    int changes = 0;
    if (cmd == DG_ADMIN_STATUS) {
        dg_turn_state view = r->st;
        if (c->mode != DG_MODE_CLOSED)
            dg_turn_expire(&view, &x, now, NULL); /* what a decision now would see */
        admin_status(t, r, &view, &x, &b);
    } else if (c->mode == DG_MODE_CLOSED) {
        reply_tpl(t, &b, "admin_closed.md", NULL);
    } else if (cmd == DG_ADMIN_CLOSE) {
        /* The discussion area closes it in this transaction; the channel's
         * mirror reloads (closed) before its next use. */
        char path[1024], msg[768];
        int has = dg_admin_arg(m->content, path, sizeof path), closed = 0;
        if (has < 0) {
            char max[24];
            snprintf(max, sizeof max, "%zu", sizeof path - 1);
            reply_tpl(t, &b, "admin_close_path_long.md", &(dg_tpl_vars){.maxBytes = max});
        } else {
            rc = dg_discuss_admin_close_locked(t->p, c->id, has ? path : NULL, now, &closed, msg,
                                               sizeof msg);
            if (rc != OC_OK) {
                dg_buf_free(&b.b);
                return rc;
            }
            reply_add(&b, DG_ADMIN_REPLY_PREFIX);
            reply_add(&b, msg);
        }
    } else if (cmd == DG_ADMIN_REST) {
        dg_turn_expire(&next, &x, now, &fx);
        fx.handoff_to = DG_NOBODY; /* nobody is woken into a resting scope */
        dg_turn_admin_rest(&next, now);
        changes = 1;
        reply_tpl(t, &b, "admin_rest.md", NULL);
    } else if (cmd == DG_ADMIN_WAKE) {
        int pos = DG_NOBODY;
        for (size_t i = 0; pos == DG_NOBODY && i < m->n_mentions; i++) {
            const dg_agent_cfg *a = dg_config_agent_by_user(&t->p->cfg, m->mentions[i]);
            int mp = a ? member_pos(c, a->agent_id) : DG_NOBODY;
            if (mp != DG_NOBODY && (c->present & ((uint64_t)1 << mp)))
                pos = mp;
        }
        for (int i = 0; pos == DG_NOBODY && i < c->n; i++)
            if (c->present & ((uint64_t)1 << i))
                pos = i;
        if (pos == DG_NOBODY || dg_turn_admin_wake(&next, &x, pos, now) != 0) {
            reply_tpl(t, &b, "admin_wake_nobody.md", NULL);
        } else {
            changes = 1;
            mention = user_of(t, c, pos);
            char at[96];
            snprintf(at, sizeof at, "<@%s>", mention ? mention : "?");
            reply_tpl(t, &b, "admin_wake.md", &(dg_tpl_vars){.agentMention = at});
        }
    } else if (cmd == DG_ADMIN_SKIP) {
        dg_turn_expire(&next, &x, now, &fx);
        fx.handoff_to = DG_NOBODY; /* that speaker is skipped now */
        int sp = dg_turn_admin_skip(&next, &x, now, &fx);
        if (sp == DG_NOBODY) {
            reply_tpl(t, &b, "admin_skip_nobody.md", NULL);
        } else {
            changes = 1;
            int to = fx.handoff_to;
            fx.handoff_to = DG_NOBODY; /* the reply is the hand-off */
            mention = to != DG_NOBODY ? user_of(t, c, to) : NULL;
            char at[96];
            snprintf(at, sizeof at, "<@%s>", mention ? mention : "");
            dg_tpl_vars v = {.skippedAgent = c->members[sp], .agentMention = at};
            reply_tpl(t, &b, mention ? "admin_skip.md" : fx.idle_reminder
                             ? "admin_skip_initiator.md" : "admin_skip_dormant.md", &v);
        }
    } else {
        reply_tpl(t, &b, "admin_help.md", NULL);
    }
    if (b.nomem) {
        dg_buf_free(&b.b);
        return OC_ERR_NOMEM;
    }
    if (changes && (!dg_turn_state_same(&next, &r->st) || !r->in_db))
        rc = save_scope(t, r, &next, now);
    int queued = 0;
    if (rc == OC_OK)
        rc = enqueue(t, post, b.b.s, mention, now, &queued);
    dg_buf_free(&b.b);
    if (queued)
        *kick = 1;
    else if (mention)
        next.awaiting = 0; /* the reply that would wake it is not posted */
    if (rc == OC_OK)
        rc = queue_effects(t, r, &fx, &next, now, kick);
    if (rc == OC_OK && changes)
        rc = install(t, r, &next);
    return rc;
}

/* r's state as this change has it so far (pending), else as published. */
static const dg_turn_state *staged(const dg_turns *t, const scope_rec *r)
{
    for (int i = 0; i < t->n_pending; i++)
        if (t->pending[i].r == r)
            return &t->pending[i].st;
    return &r->st;
}

/*
 * A moderator message reached the session rs (message_received reported
 * per agent): if rs's agent awaits its wake message in the scope rs acts
 * in, the wait ends (turns_engine.h "Awaiting the wake message"). Read
 * only but for that: no member is added, nothing is stored. Writer held.
 */
static int deliver_locked(dg_turns *t, const dg_turn_session *rs)
{
    chan_rec *c;
    int rc = chan_get(t, rs->channel_id, &c);
    if (rc)
        return rc;
    int pos = member_pos(c, rs->agent_id);
    if (pos == DG_NOBODY || c->mode == DG_MODE_CLOSED)
        return OC_OK;
    scope_rec *r;
    int has_thread = rs->thread_id && *rs->thread_id;
    if (rs->is_dm || t->p->cfg.session_policy == DG_POLICY_CHANNEL || has_thread) {
        /* The scope the session's runs are decided in (session_prepare). */
        dg_scope_event ev = {.channel_id = rs->channel_id, .thread_id = rs->thread_id,
                             .is_dm = rs->is_dm};
        dg_scope sc;
        if ((rc = dg_scope_derive(t->p->cfg.session_policy, &ev, &sc)) ||
            (rc = scope_get(t, c, &sc, &r)))
            return rc;
    } else if ((rc = follow_scope(t, c, &r))) {
        return rc;
    }
    dg_turn_state next = *staged(t, r);
    if (!dg_turn_wake_delivered(&next, pos))
        return OC_OK;
    char label[DG_SCOPE_LABEL_MAX];
    dg_log(t->p, OC_LOG_DEBUG, "turns: the moderator's message reached %s in channel %s (%s); "
           "it no longer awaits its wake message, its next run counts", rs->agent_id, c->id,
           dg_scope_label(&r->scope, label));
    return install(t, r, &next);
}

static int ingest_locked(dg_turns *t, const dg_turn_message *m, dg_sender_kind kind,
                         const dg_agent_cfg *sender_agent, int admin, dg_admin_cmd cmd,
                         int64_t now, int *kick)
{
    dg_store *st = t->p->store;
    int rc;
    /* Per agent session, before the dedup: every account reports it. */
    if (m->recipient && (kind == DG_SENDER_MODERATOR || kind == DG_SENDER_HANDOFF) &&
        (rc = deliver_locked(t, m->recipient)))
        return rc;
    if (m->message_id && *m->message_id) {
        int fresh = 0;
        if ((rc = dg_store_turns_seen_claim(st, m->channel_id, m->message_id, now, &fresh)))
            return rc;
        if (!fresh)
            return OC_OK; /* another account reported it already */
        if (++t->fresh_ingests % SEEN_PRUNE_EVERY == 0 &&
            ((rc = dg_store_turns_seen_prune(st, now - SEEN_KEEP_MS, NULL)) ||
             (rc = dg_store_turns_states_prune(st, now - SEEN_KEEP_MS, NULL))))
            return rc;
    }
    if (cmd != DG_ADMIN_NONE)
        return admin_locked(t, m, cmd, now, kick);
    /* Once per message (after the dedup), and a first-character test for
     * nearly every ordinary message. */
    if (kind == DG_SENDER_HUMAN && !admin && dg_admin_parse(m->content) != DG_ADMIN_NONE)
        dg_log(t->p, OC_LOG_INFO, "turns: message %s in channel %s starts with !dirigent but "
               "its sender %s is not in `admins`; it is not run as a command (an ordinary "
               "message)", m->message_id ? m->message_id : "(no id)", m->channel_id,
               m->sender_id);
    chan_rec *c;
    if ((rc = chan_get(t, m->channel_id, &c)))
        return rc;
    if (c->mode == DG_MODE_CLOSED)
        return closed_notice(t, c, m, kind, now, kick);

    dg_scope_event ev = {.channel_id = m->channel_id, .thread_id = m->thread_id,
                         .message_id = m->message_id, .is_dm = m->is_dm,
                         .tags = m->tags, .n_tags = m->n_tags};
    dg_scope sc;
    if ((rc = dg_scope_derive(t->p->cfg.session_policy, &ev, &sc)))
        return rc;
    char root[65];
    int top_level = t->p->cfg.session_policy == DG_POLICY_THREAD && !m->is_dm &&
                    !(m->thread_id && *m->thread_id) && !dg_nip10_root(m->tags, m->n_tags, root) &&
                    sc.kind == DG_SCOPE_THREAD;
    int moderator = kind == DG_SENDER_MODERATOR || kind == DG_SENDER_HANDOFF;
    /* A human's or an agent's word restarts a discussion's quiet-time clock. */
    if (!moderator && c->mode == DG_MODE_DISCUSSION &&
        (rc = dg_store_discussion_touch(st, c->id, now)))
        return rc;
    if (moderator && top_level)
        return OC_OK; /* its own one-message thread: nothing to change */

    int pos = DG_NOBODY;
    if (sender_agent && (rc = member_ensure(t, c, sender_agent->agent_id, now, &pos)))
        return rc;
    uint64_t mentions = 0;
    if (kind == DG_SENDER_HUMAN) {
        for (size_t i = 0; i < m->n_mentions; i++) {
            const dg_agent_cfg *a = dg_config_agent_by_user(&t->p->cfg, m->mentions[i]);
            /* A configured agent a human asks by name belongs to the channel's
             * order even before it was seen there (the first message of a
             * channel comes before any agent's run). */
            int mp = DG_NOBODY;
            if (a && (rc = member_ensure(t, c, a->agent_id, now, &mp)))
                return rc;
            if (mp != DG_NOBODY)
                mentions |= (uint64_t)1 << mp;
        }
        /* Mentions the host rendered as text ("@name"). */
        size_t n_agents = t->p->cfg.n_agents;
        unsigned char *hit = n_agents && m->content && strchr(m->content, '@')
                                 ? calloc(n_agents, 1) : NULL;
        if (hit && dg_agent_names_mentioned(t->names, m->content, hit)) {
            for (size_t i = 0; i < n_agents; i++) {
                int mp = DG_NOBODY;
                if (hit[i] &&
                    (rc = member_ensure(t, c, t->p->cfg.agents[i].agent_id, now, &mp))) {
                    free(hit);
                    return rc;
                }
                if (mp != DG_NOBODY)
                    mentions |= (uint64_t)1 << mp;
            }
        }
        free(hit);
    }

    scope_rec *r;
    if ((rc = scope_get(t, c, &sc, &r)))
        return rc;
    if (!moderator) {
        r->wake_fp[0] = '\0'; /* a real message: the reminder is history */
        recent_push(r, m->content, pos);
    }
    if (moderator && !r->in_db)
        return OC_OK; /* no state to change */
    dg_turn_state next = r->st;
    if (top_level) {
        scope_rec *prev = NULL;
        if ((rc = follow_scope(t, c, &prev)))
            return rc;
        if (prev != r && (kind == DG_SENDER_AGENT || kind == DG_SENDER_BOT)) {
            /* Carry the loop guard across top-level threads. */
            next.agent_msgs = prev->st.agent_msgs;
            next.rested = prev->st.rested;
        }
        char *top = strdup(sc.root);
        if (!top)
            return OC_ERR_NOMEM;
        pthread_rwlock_wrlock(&t->lock);
        free(c->top_root);
        c->top_root = top;
        c->follow = r;
        pthread_rwlock_unlock(&t->lock);
        if ((rc = chan_save(t, c, now)))
            return rc;
    }
    if (m->thread_id && *m->thread_id && sc.kind == DG_SCOPE_THREAD && !r->post_channel &&
        !(r->post_channel = strdup(m->thread_id)))
        return OC_ERR_NOMEM;

    dg_turn_ctx x;
    make_ctx(t, c, &x);
    dg_turn_effects fx;
    dg_turn_effects_init(&fx);
    next.awaiting = staged(t, r)->awaiting; /* a delivery above may have ended a wait */
    dg_turn_on_message(&next, &x, kind, pos, mentions, now, &fx);
    if (!dg_turn_state_same(&next, &r->st) || !r->in_db) {
        if ((rc = save_scope(t, r, &next, now)))
            return rc;
    }
    if ((rc = queue_effects(t, r, &fx, &next, now, kick)))
        return rc;
    return install(t, r, &next);
}

int dg_turns_ingest(dg_turns *t, const dg_turn_message *m, char *err, size_t err_len)
{
    if (!m->channel_id || !*m->channel_id || strlen(m->channel_id) >= DG_SCOPE_ID_MAX) {
        snprintf(err, err_len, "message_received: event.channelId is missing or longer than %d "
                 "characters; the host must say where the message was posted",
                 DG_SCOPE_ID_MAX - 1);
        return OC_ERR_INVALID;
    }
    if (m->message_id && (m->message_id[0] == '~' || strlen(m->message_id) >= DG_SCOPE_ID_MAX)) {
        snprintf(err, err_len, "message_received: event.messageId \"%.40s\" is not a message id "
                 "(it starts with '~' or is longer than %d characters)", m->message_id,
                 DG_SCOPE_ID_MAX - 1);
        return OC_ERR_INVALID;
    }
    if (!m->sender_id || !*m->sender_id) {
        snprintf(err, err_len, "message_received: event.senderId is missing; the host must say "
                 "who posted the message");
        return OC_ERR_INVALID;
    }
    if (m->recipient && !valid_session(m->recipient)) {
        snprintf(err, err_len, "message_received: ctx.sessionKey names no agent session in a "
                 "channel (agent, channel, at most %d characters each)", DG_SCOPE_ID_MAX - 1);
        return OC_ERR_INVALID;
    }
    /* The host reports deliveries per agent session: waits may be armed. */
    if (m->recipient && !atomic_load(&t->wake_tracking))
        atomic_store(&t->wake_tracking, 1);
    const dg_config *cfg = &t->p->cfg;
    const dg_agent_cfg *agent = NULL;
    dg_sender_kind kind;
    if (cfg->moderator_user_id && strcmp(m->sender_id, cfg->moderator_user_id) == 0)
        kind = is_bare_mention(m->content) || is_admin_reply(m->content) ? DG_SENDER_HANDOFF
                                                                         : DG_SENDER_MODERATOR;
    else if ((agent = dg_config_agent_by_user(cfg, m->sender_id)))
        kind = DG_SENDER_AGENT;
    else
        kind = m->sender_is_bot ? DG_SENDER_BOT : DG_SENDER_HUMAN;
    /* Only an admin's message pays for the command check. */
    int admin = kind == DG_SENDER_HUMAN && is_admin(cfg, m->sender_id);
    dg_admin_cmd cmd = admin ? dg_admin_parse(m->content) : DG_ADMIN_NONE;

    int64_t now = dg_now_ms(t->p);
    if (txn_begin(t) != OC_OK) {
        snprintf(err, err_len, "message_received: the state database is not available");
        return OC_ERR_IO;
    }
    int kick = 0;
    int rc = ingest_locked(t, m, kind, agent, admin, cmd, now, &kick);
    if (rc)
        snprintf(err, err_len, "message_received: could not record message %s of channel %s "
                 "(%s: %s)", m->message_id ? m->message_id : "(no id)", m->channel_id,
                 oc_status_name(rc), dg_store_errmsg(t->p->store));
    int failed = rc;
    rc = finish(t, rc);
    if (rc != OC_OK && !failed)
        snprintf(err, err_len, "message_received: the state database did not commit message %s "
                 "of channel %s; nothing of it was recorded", m->message_id ? m->message_id
                 : "(no id)", m->channel_id);
    if (rc == OC_OK && kick)
        dg_outbox_kick(t->p->outbox);
    if (rc == OC_OK)
        evict_if_over(t, now);
    return rc;
}

/* ---- agent hooks ------------------------------------------------------------------ */

static int valid_session(const dg_turn_session *s)
{
    return s && s->agent_id && *s->agent_id && s->session_key && *s->session_key &&
           s->channel_id && *s->channel_id && strlen(s->channel_id) < DG_SCOPE_ID_MAX &&
           (!s->thread_id || strlen(s->thread_id) < DG_SCOPE_ID_MAX);
}

/* Make sure the mirror knows s (a short transaction the first time). */
static int ensure_session(dg_turns *t, const dg_turn_session *s, int64_t now)
{
    if (txn_begin(t) != OC_OK)
        return OC_ERR_IO;
    sess_rec *e;
    int rc = session_prepare(t, s, now, &e);
    return finish(t, rc);
}

typedef int (*decide_fn)(dg_turns *t, sess_rec *e, scope_rec *r, const dg_turn_session *s,
                         int64_t now, void *out);

/* Another instance sharing the store committed a change this mirror has
 * not applied (or the probe cannot tell): sync before deciding. A memory
 * compare when nothing was committed since the last probe. */
static int mirror_stale(dg_turns *t)
{
    int64_t seq = dg_store_change_seq(t->p->store);
    return seq < 0 || seq > atomic_load(&t->applied);
}

/* Decide under the read lock from the mirror, filling it first if needed
 * (and bringing it up to date with other instances sharing the store). */
static int decide(dg_turns *t, const dg_turn_session *s, decide_fn fn, void *out)
{
    int64_t now = dg_now_ms(t->p);
    if (mirror_stale(t)) {
        if (txn_begin(t) != OC_OK)
            return OC_ERR_IO;
        finish_read(t);
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        pthread_rwlock_rdlock(&t->lock);
        scope_rec *r = NULL;
        sess_rec *e = session_lookup_locked(t, s, &r);
        if (e) {
            int rc = fn(t, e, r, s, now, out);
            pthread_rwlock_unlock(&t->lock);
            return rc;
        }
        pthread_rwlock_unlock(&t->lock);
        int rc = ensure_session(t, s, now);
        if (rc)
            return rc;
    }
    return OC_ERR_INTERNAL; /* the mirror kept being dropped under us */
}

typedef struct resolve_out {
    dg_turn_verdict *v;
    int64_t seen_seq;
} resolve_out;

static int resolve_fn(dg_turns *t, sess_rec *e, scope_rec *r, const dg_turn_session *s,
                      int64_t now, void *out)
{
    (void)s;
    resolve_out *ro = out;
    dg_turn_verdict *v = ro->v;
    ro->seen_seq = r->st.msg_seq;
    chan_rec *c = e->chan;
    v->closed = c->mode == DG_MODE_CLOSED;
    if (v->closed) {
        v->no_reply = 1;
    } else if (e->configured) {
        dg_turn_ctx x;
        make_ctx(t, c, &x);
        v->no_reply = dg_turn_needs_override(&r->st, &x, e->pos, now);
        /* The speaker awaiting its wake message: this run started before
         * it arrived (turns_engine.h); swapped, with no effect on the turn. */
        v->waiting = !v->no_reply && dg_turn_awaiting_wake(&r->st, &x, e->pos, now);
        v->no_reply |= v->waiting;
    }
    /* Remember what this run saw: agent_end tells whether it consumed the
     * latest message (hand-offs). Not turn state: nothing advances. */
    atomic_store(&e->seen_seq, r->st.msg_seq);
    atomic_store(&e->last, r);
    atomic_store(&e->granted, v->no_reply ? 0 : 1);
    dg_scope_label(&r->scope, v->scope_label);
    return OC_OK;
}

int dg_turns_resolve(dg_turns *t, const dg_turn_session *s, dg_turn_verdict *v)
{
    return dg_turns_resolve_run(t, s, NULL, v);
}

int dg_turns_resolve_run(dg_turns *t, const dg_turn_session *s, const char *run_id,
                         dg_turn_verdict *v)
{
    memset(v, 0, sizeof *v);
    if (!valid_session(s))
        return OC_ERR_INVALID;
    resolve_out ro = {.v = v};
    int rc = decide(t, s, resolve_fn, &ro);
    if (rc != OC_OK)
        return rc;
    /* Not turn state: what later texts and the run's end are judged by. */
    if (v->no_reply)
        mark_add(t, s->session_key, run_id, v->waiting ? MARK_WAITING : MARK_SWAPPED,
                 ro.seen_seq);
    else
        mark_end_session(t, s->session_key);
    if (v->closed)
        dg_discuss_session_seen(t->p, s->session_key, s->agent_id, s->channel_id);
    return rc;
}

int dg_turns_claim(dg_turns *t, const dg_turn_session *s, const char *run_id,
                   const char *prompt, dg_turn_claim *out)
{
    memset(out, 0, sizeof *out);
    if (!valid_session(s))
        return OC_ERR_INVALID;
    if (run_id && !*run_id)
        run_id = NULL;
    int64_t now = dg_now_ms(t->p);
    if (txn_begin(t) != OC_OK)
        return OC_ERR_IO;
    int kick = 0, fresh = 1, changed = 0, stale = 0;
    int64_t seen = 0;
    sess_rec *e;
    int rc = session_prepare(t, s, now, &e);
    scope_rec *r = NULL;
    if (rc == OC_OK) {
        chan_rec *c = e->chan;
        r = e->fixed ? e->fixed : c->follow;
        dg_turn_ctx x;
        make_ctx(t, c, &x);
        out->closed = c->mode == DG_MODE_CLOSED;
        out->claimed = out->closed ||
                       (e->configured && dg_turn_needs_override(&r->st, &x, e->pos, now));
        /* The speaker awaiting its wake message: a stale run, held back
         * with no effect on the turn. Its run id is still recorded, so its
         * agent_end is ignored, also after a restart. */
        out->waiting = !out->claimed && e->configured &&
                       dg_turn_awaiting_wake(&r->st, &x, e->pos, now);
        /* Woken by the idle reminder: a run whose prompt does not carry it
         * was queued before it (the host runs it late); held back too. */
        int woken = 0;
        if (!out->claimed && !out->waiting && e->configured && prompt && r->wake_fp[0] &&
            r->wake_fp_pos == e->pos && now - r->wake_fp_ms <= WAKE_FP_MAX_MS) {
            if (strstr(prompt, r->wake_fp)) {
                r->wake_fp[0] = '\0'; /* the run that answers it */
                woken = 1;
            } else {
                out->waiting = 1;
            }
        }
        /* The speaker's run that answers an older message than the
         * scope's newest: queued before the turn reached it, started late;
         * held back too (the host runs the newer message after it). */
        if (!out->claimed && !out->waiting && !woken && e->configured && prompt &&
            e->pos != DG_NOBODY && answers_older(r, e->pos, prompt)) {
            out->waiting = 1;
            stale = 1;
        }
        out->claimed |= out->waiting;
        seen = r->st.msg_seq;
        if (out->claimed && run_id)
            rc = dg_store_turns_run_claim(t->p->store, s->session_key, run_id, now, &fresh);
        if (rc == OC_OK && out->claimed && fresh && !out->closed && !out->waiting) {
            /* What a swapped run that ended silently does, now: no
             * agent_end may follow a claimed run. */
            dg_turn_effects fx;
            dg_turn_effects_init(&fx);
            dg_turn_state next = r->st;
            dg_turn_on_run_end(&next, &x, e->pos, DG_RUN_SILENT, 1, 0, now, &fx);
            changed = !dg_turn_state_same(&next, &r->st);
            if ((changed || !r->in_db) && e->pos != DG_NOBODY)
                rc = save_scope(t, r, &next, now);
            if (rc == OC_OK)
                rc = queue_effects(t, r, &fx, &next, now, &kick);
            if (rc == OC_OK)
                rc = install(t, r, &next);
        }
        if (rc == OC_OK) {
            atomic_store(&e->seen_seq, seen);
            atomic_store(&e->last, r);
            atomic_store(&e->granted, out->claimed ? 0 : 1);
        }
    }
    int failed = rc;
    rc = finish(t, rc);
    if (rc != OC_OK) {
        dg_log(t->p, OC_LOG_ERROR, "before_agent_reply: no decision for %s in channel %s (%s%s%s); "
               "the run is not claimed and goes on as usual", s->agent_id, s->channel_id,
               oc_status_name(rc), failed ? ": " : "", failed ? dg_store_errmsg(t->p->store) : "");
        memset(out, 0, sizeof *out);
        return rc;
    }
    if (kick)
        dg_outbox_kick(t->p->outbox);
    if (!out->claimed) {
        mark_end_session(t, s->session_key);
        return OC_OK;
    }
    mark_add(t, s->session_key, run_id, MARK_CLAIMED, seen);
    char label[DG_SCOPE_LABEL_MAX];
    snprintf(out->reason, sizeof out->reason, "dirigent: %s", out->closed
             ? "closed discussion channel (archive only)"
             : stale ? "this agent holds the turn, but this run answers an older message "
                       "than the latest (the host queued it before the turn moved; the run "
                       "for the latest message follows)"
             : out->waiting ? "this agent holds the turn, but the moderator's message that "
                              "wakes it has not reached it yet (this run started before it)"
             : !r->st.active ? "the conversation is resting until a new message"
                             : "another agent holds the turn");
    dg_log(t->p, OC_LOG_DEBUG, "before_agent_reply: run %s of %s claimed in %s (%s)%s",
           run_id ? run_id : "(no id)", s->agent_id, dg_scope_label(&r->scope, label),
           out->reason, fresh ? "" : ", already claimed before");
    if (out->closed)
        dg_discuss_session_seen(t->p, s->session_key, s->agent_id, s->channel_id);
    return OC_OK;
}

typedef struct send_out {
    int cancel;
    char *reason;
    size_t reason_len;
    const char *content;
} send_out;

static int send_fn(dg_turns *t, sess_rec *e, scope_rec *r, const dg_turn_session *s,
                   int64_t now, void *out)
{
    send_out *o = out;
    chan_rec *c = e->chan;
    if (c->mode == DG_MODE_CLOSED) {
        o->cancel = 1;
        snprintf(o->reason, o->reason_len,
                 "dirigent: channel %s is a closed discussion channel (archive only); "
                 "messages there are not delivered", c->id);
        return OC_OK;
    }
    if (!e->configured || dg_silent_text(o->content))
        return OC_OK;
    dg_turn_ctx x;
    make_ctx(t, c, &x);
    if (dg_turn_may_send(&r->st, &x, e->pos, now))
        return OC_OK;
    dg_turn_state cur = r->st;
    dg_turn_expire(&cur, &x, now, NULL);
    int sp = dg_turn_speaker(&cur, &x);
    char label[DG_SCOPE_LABEL_MAX];
    o->cancel = 1;
    snprintf(o->reason, o->reason_len,
             "dirigent: it is not %s's turn in channel %s (%s); %s", s->agent_id, c->id,
             dg_scope_label(&r->scope, label),
             sp == DG_NOBODY ? "the conversation is resting until a new message"
                             : "another agent holds the turn");
    return OC_OK;
}

/* *out = 1 when e's agent is the finished speaker whose message may still
 * be sent (turns.h dg_turn_may_send). Read lock held. */
static int permit_fn(dg_turns *t, sess_rec *e, scope_rec *r, const dg_turn_session *s,
                     int64_t now, void *out)
{
    (void)s;
    dg_turn_ctx x;
    make_ctx(t, e->chan, &x);
    *(int *)out = e->pos != DG_NOBODY && r->st.permit == e->pos &&
                  (x.timeout_ms <= 0 || now - r->st.permit_ms <= x.timeout_ms);
    return OC_OK;
}

int dg_turns_check_outbound(dg_turns *t, const dg_turn_session *s, const char *run_id,
                            const char *content, int *cancel, char *reason,
                            size_t reason_len)
{
    *cancel = 0;
    if (!valid_session(s))
        return OC_ERR_INVALID;
    int exact = 0, permit = 0;
    mark_kind k = mark_find_ex(t, s->session_key, run_id, NULL, NULL, &exact);
    if ((k == MARK_SWAPPED || k == MARK_WAITING) && !exact) {
        /* Matched by session only: the text may be the reply of the
         * agent's real run that just ended speaking (a swapped run of it
         * started since, for a newer message); that one keeps its permit. */
        int rc = decide(t, s, permit_fn, &permit);
        if (rc != OC_OK)
            return rc;
    }
    if (k == MARK_NONE || permit)
        return dg_turns_check_send(t, s, content, cancel, reason, reason_len);
    *cancel = 1;
    snprintf(reason, reason_len, "dirigent: run %s of %s in channel %s was %s; none of its "
             "texts is delivered", run_id && *run_id ? run_id : "(no id)", s->agent_id,
             s->channel_id, k == MARK_CLAIMED ? "claimed (no model call: the agent does not "
             "hold the turn, or awaits the message that wakes it)"
             : k == MARK_WAITING ? "swapped to the no-reply model (it started before the "
             "message that wakes the agent had reached it)"
             : "swapped to the no-reply model (the agent did not hold the turn)");
    return OC_OK;
}

/* *out = 1 when e's channel is managed (dg_turns_channel_managed). Read
 * lock held. */
static int managed_fn(dg_turns *t, sess_rec *e, scope_rec *r, const dg_turn_session *s,
                      int64_t now, void *out)
{
    (void)t, (void)r, (void)s, (void)now;
    const chan_rec *c = e->chan;
    *(int *)out = c->mode != DG_MODE_NORMAL || __builtin_popcountll(c->present) >= 2;
    return OC_OK;
}

int dg_turns_channel_managed(dg_turns *t, const dg_turn_session *s, int *managed)
{
    *managed = 0;
    if (!valid_session(s))
        return OC_ERR_INVALID;
    int rc = decide(t, s, managed_fn, managed);
    if (rc != OC_OK)
        *managed = 0;
    return rc;
}

int dg_turns_check_send(dg_turns *t, const dg_turn_session *s, const char *content,
                        int *cancel, char *reason, size_t reason_len)
{
    *cancel = 0;
    if (!valid_session(s))
        return OC_ERR_INVALID;
    send_out o = {.reason = reason, .reason_len = reason_len, .content = content};
    int rc = decide(t, s, send_fn, &o);
    *cancel = o.cancel;
    return rc;
}

/* mark: the run's mark (MARK_SWAPPED: judged as swapped with mark_seen;
 * MARK_NONE: from what the session's last decision recorded); other_run:
 * the session's last silenced decision was for another run id. */
static int run_end_locked(dg_turns *t, const dg_turn_session *s, dg_run_outcome outcome,
                          mark_kind mark, int64_t mark_seen, int other_run, int64_t now,
                          int *kick)
{
    sess_rec *e = dg_map_get(&t->sessions, s->session_key);
    scope_rec *r = NULL;
    int64_t seen = -1;
    int granted = -1;
    if (e && strcmp(e->chan->id, s->channel_id) == 0 && same_str(e->thread, s->thread_id)) {
        r = atomic_load(&e->last);
        seen = atomic_load(&e->seen_seq);
        granted = atomic_load(&e->granted);
    }
    if (mark == MARK_SWAPPED) {
        /* Its own decision, not the session's latest: a swapped run that
         * ends after the turn reached the agent (and after a real run of
         * it was resolved) is still no speech. */
        granted = 0;
        seen = mark_seen;
    } else if (other_run && granted == 0) {
        granted = -1; /* the swap recorded was another run's: unknown */
    }
    sess_rec *fresh;
    int rc = session_prepare(t, s, now, &fresh);
    if (rc)
        return rc;
    chan_rec *c = fresh->chan;
    if (c->mode == DG_MODE_CLOSED || !fresh->configured)
        return OC_OK;
    if (!r)
        r = fresh->fixed ? fresh->fixed : c->follow;
    /* Unknown (e.g. a restart during the run): assume it saw the latest. */
    int saw_latest = seen < 0 || seen == r->st.msg_seq;
    dg_turn_ctx x;
    make_ctx(t, c, &x);
    dg_turn_effects fx;
    dg_turn_effects_init(&fx);
    dg_turn_state next = r->st;
    dg_turn_on_run_end(&next, &x, fresh->pos, outcome, saw_latest, granted, now, &fx);
    if ((!dg_turn_state_same(&next, &r->st) || !r->in_db) && (rc = save_scope(t, r, &next, now)))
        return rc;
    if ((rc = queue_effects(t, r, &fx, &next, now, kick)))
        return rc;
    return install(t, r, &next);
}

int dg_turns_run_end(dg_turns *t, const dg_turn_session *s, const char *run_id,
                     const char *output, long tool_calls, int success)
{
    if (!valid_session(s))
        return OC_ERR_INVALID;
    if (!dg_config_agent(&t->p->cfg, s->agent_id))
        return OC_OK; /* not one of ours: it takes no turns */
    dg_run_outcome o = dg_run_classify(output, tool_calls);
    int64_t now = dg_now_ms(t->p);
    int64_t mark_seen = -1;
    int other_run = 0;
    mark_kind mark = mark_find(t, s->session_key, run_id, &mark_seen, &other_run);
    if (mark == MARK_SWAPPED)
        o = DG_RUN_SILENT; /* whatever it said: a forced no-reply run, never speech */
    if (txn_begin(t) != OC_OK)
        return OC_ERR_IO;
    int kick = 0, fresh = 1, rc = OC_OK;
    if (run_id && *run_id)
        rc = dg_store_turns_run_claim(t->p->store, s->session_key, run_id, now, &fresh);
    if (rc == OC_OK && !fresh) {
        dg_log(t->p, OC_LOG_DEBUG, "agent_end: run %s of %s was already handled; ignored",
               run_id, s->session_key);
        return finish(t, OC_OK);
    }
    if (rc == OC_OK && mark == MARK_CLAIMED) {
        dg_log(t->p, OC_LOG_DEBUG, "agent_end: run %s of %s was claimed; its end changes "
               "nothing (the claim did what it would)", run_id && *run_id ? run_id : "(no id)",
               s->session_key);
        return finish(t, OC_OK);
    }
    if (rc == OC_OK && mark == MARK_WAITING) {
        dg_log(t->p, OC_LOG_DEBUG, "agent_end: run %s of %s was swapped while the agent awaited "
               "its wake message; its end changes nothing (no pass)",
               run_id && *run_id ? run_id : "(no id)", s->session_key);
        return finish(t, OC_OK);
    }
    if (rc == OC_OK)
        rc = run_end_locked(t, s, o, mark, mark_seen, other_run, now, &kick);
    if (rc)
        dg_log(t->p, OC_LOG_ERROR, "agent_end: could not advance the turn of %s in channel %s "
               "(%s: %s)", s->agent_id, s->channel_id, oc_status_name(rc),
               dg_store_errmsg(t->p->store));
    else
        dg_log(t->p, OC_LOG_DEBUG, "agent_end: %s in %s %s%s", s->agent_id, s->channel_id,
               dg_run_outcome_name(o), success ? "" : " (run failed)");
    int failed = rc;
    rc = finish(t, rc);
    if (rc != OC_OK && !failed)
        dg_log(t->p, OC_LOG_ERROR, "agent_end: the state database did not commit the end of %s's "
               "run in channel %s; the turn did not move", s->agent_id, s->channel_id);
    if (rc == OC_OK && kick)
        dg_outbox_kick(t->p->outbox);
    return rc;
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
    for (size_t i = 0; rc == OC_OK && i < k; i++)
        rc = dg_store_turns_member_add(st, channel_id, (int)i, list[i]);
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
    dg_turn_channel_row_clear(&row);
    if (pos == DG_NOBODY) {
        if (n_members >= DG_TURN_MAX_MEMBERS)
            return OC_ERR_INVALID;
        /* A channel row must exist before a member can be added to it. */
        if (rc == OC_ERR_NOT_FOUND &&
            (rc = dg_store_turns_channel_save(st, origin_channel_id, DG_MODE_NORMAL, NULL, NULL,
                                              0, now_ms)) != OC_OK)
            return rc;
        pos = (int)n_members;
        if ((rc = dg_store_turns_member_add(st, origin_channel_id, pos, initiator_agent_id)))
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
