/*
 * turns_nudge.c -- the stall nudge: the speaker holds the turn, a message
 * reached its session, and no run of it started. A host may drop such a
 * message (OpenClaw skips one that reaches a session still finishing an
 * earlier run, "reply-operation-active"), and then nothing else would
 * move the conversation until turn.timeoutSec passes the speaker over, or
 * for ever without one. After turn.nudgeSec the moderator mentions the
 * speaker once per turn: a new message, which the host runs; once more when
 * the mention reached the speaker's session and still no run of it starts
 * (the host may have dropped the mention too). Records and locking:
 * turns_int.h, turns_engine.c.
 */
#include "turns_int.h"

/* A nudge that reaches no session of the speaker is repeated at most this
 * often per turn (2 minutes at the default turn.nudgeSec): the mentions
 * may reach sessions of another scope (a thread scope whose posts land at
 * the top level), and then none would ever count as seen. */
#define NUDGE_REPEATS_MAX 5

void turns_nudge_run_began(turns_scope *r, int pos, int granted)
{
    if (pos < 0 || pos >= DG_TURN_MAX_MEMBERS)
        return;
    atomic_store(&r->reached_ms[pos], 0); /* the host did not drop the message before it */
    if (!granted)
        return;
    atomic_store(&r->run_pos, pos);
    atomic_store(&r->unanswered_ms, 0);
    int waited = pos;
    atomic_compare_exchange_strong(&r->wait_pos, &waited, DG_NOBODY);
}

/* 1 when r's turn with speaker sp in state st is the one nudged last. */
static int nudged_turn(const turns_scope *r, const dg_turn_state *st, int sp)
{
    return r->nudged_change == st->last_change_ms && r->nudged_pos == sp &&
           r->nudged_seq == st->msg_seq;
}

void turns_nudge_reached_after_nudge(turns_scope *r, const dg_turn_state *st, int pos)
{
    /* One more nudge once one reached the speaker: the host may have
     * dropped it too. Only once a turn. */
    if (pos != DG_NOBODY && nudged_turn(r, st, pos) && !r->nudge_again)
        r->nudge_again = r->nudges;
}

void turns_nudge_run_ended(turns_scope *r, int pos, int64_t now)
{
    int running = pos;
    atomic_compare_exchange_strong(&r->run_pos, &running, DG_NOBODY);
    /* A message that reached pos while this run went on is due now: the
     * host gets turn.nudgeSec from here to start its run. */
    if (atomic_load(&r->wait_pos) == pos)
        atomic_store(&r->wait_ms, now);
    if (pos >= 0 && pos < DG_TURN_MAX_MEMBERS && atomic_load(&r->reached_ms[pos]))
        atomic_store(&r->reached_ms[pos], now);
}

void turns_nudge_arm_new_speaker(dg_turns *t, turns_scope *r, const dg_turn_state *next, int prev,
                                 int handoff_to, int64_t now)
{
    dg_rule_ctx x;
    turns_make_ctx(t, r->chan, &x);
    int sp = next->active ? dg_rule_speaker(next, &x) : DG_NOBODY;
    if (sp != DG_NOBODY && sp != prev && handoff_to == DG_NOBODY && t->p->cfg.turn_nudge_sec > 0 &&
        atomic_load(&r->run_pos) != sp) {
        /* A message that reached sp before the move, and no run of it
         * since: the wait began then. */
        int64_t reached = sp < DG_TURN_MAX_MEMBERS ? atomic_load(&r->reached_ms[sp]) : 0;
        int64_t since = reached ? reached : now;
        atomic_store(&r->wait_ms, since);
        atomic_store(&r->wait_pos, sp);
    }
}

void turns_nudge_arm_handoff(dg_turns *t, turns_scope *r, int pos, int64_t now)
{
    if (t->p->cfg.turn_nudge_sec <= 0 || pos < 0 || atomic_load(&r->run_pos) == pos)
        return;
    atomic_store(&r->wait_ms, now);
    atomic_store(&r->wait_pos, pos);
}

typedef struct stall_list {
    int64_t due;           /* armed at or before this */
    size_t n_due;          /* any_stalled: how many */
    turns_scope_list list; /* collect_stalled: which */
} stall_list;

static int armed_before(const turns_scope *r, int64_t due)
{
    return atomic_load(&r->wait_pos) != DG_NOBODY && atomic_load(&r->wait_ms) <= due;
}

/* Mirror read lock held. */
static void any_stalled(void *val, void *arg)
{
    stall_list *l = arg;
    l->n_due += armed_before(val, l->due);
}

/* Writer held. */
static void collect_stalled(void *val, void *arg)
{
    stall_list *l = arg;
    if (armed_before(val, l->due))
        turns_scope_list_push(&l->list, val);
}

/* Is r's speaker still stalled now? Everything checked again under the
 * writer: a run may have started, the turn moved, the previous speaker's
 * reply still owed (its arrival is), or the turn already nudged once. A
 * wake message the speaker still awaits does not hold the nudge back: it
 * was posted turn.nudgeSec ago (one still in the outbox is the nudge,
 * nudge_scope) and never reached the speaker's session, as after a
 * restart or reconnect of the agents' apps (Slack's Socket Mode does not
 * replay what was posted while they were away). */
static int stalled(dg_turns *t, turns_scope *r, int64_t now, int64_t nudge_ms, int *pos)
{
    const dg_turn_state *st = &r->st;
    dg_rule_ctx x;
    turns_make_ctx(t, r->chan, &x);
    int sp = dg_rule_speaker(st, &x);
    *pos = sp;
    if (r->chan->mode == DG_MODE_CLOSED || !st->active || sp == DG_NOBODY || st->budget ||
        sp != atomic_load(&r->wait_pos) || sp == atomic_load(&r->run_pos) ||
        now - atomic_load(&r->wait_ms) < nudge_ms ||
        (nudged_turn(r, st, sp) &&
         (r->nudge_seen ? r->nudges > r->nudge_again : r->nudges > NUDGE_REPEATS_MAX)))
        return 0;
    int64_t window = x.timeout_ms > 0 ? x.timeout_ms : TURNS_WAKE_FP_MAX_MS;
    return !turns_reply_owed(st, sp, window, now);
}

/* Writer held (txn). */
static int nudge_scope(dg_turns *t, turns_scope *r, int64_t now, int64_t nudge_ms, int *kick)
{
    int pos;
    if (!stalled(t, r, now, nudge_ms, &pos))
        return DG_OK;
    const char *uid = turns_user_of(t, r->chan, pos);
    if (!uid)
        return DG_OK; /* nobody to mention */
    int owed = 0;
    int rc = turns_mention_owed(t, r->post_channel ? r->post_channel : r->chan->id, uid, &owed);
    if (rc == DG_OK && owed)
        atomic_store(&r->wait_ms, now); /* the wait counts from when it left the outbox */
    if (rc != DG_OK || owed)
        return rc;
    /* The moderator's hand-off, as a change that owes one queues it. It
     * arms no wait: the state stays as it is (the copy is dropped). */
    dg_rule_effects fx;
    dg_rule_effects_init(&fx);
    fx.handoff_to = pos;
    dg_turn_state unchanged = r->st;
    rc = turns_queue_effects(t, r, &fx, &unchanged, now, kick);
    if (rc != DG_OK)
        return rc;
    if (nudged_turn(r, &r->st, pos)) {
        r->nudges++;
    } else {
        r->nudges = 1;
        r->nudge_again = 0;
    }
    r->nudged_change = r->st.last_change_ms;
    r->nudged_pos = pos;
    r->nudged_seq = r->st.msg_seq;
    /* Still armed: a nudge that reaches no session of the speaker (its app
     * is away, as after a restart before the agents' apps reconnect) is
     * repeated turn.nudgeSec after it left the outbox; once one reached it
     * (nudge_seen), one more at most (stalled). */
    r->nudge_seen = 0;
    atomic_store(&r->wait_ms, now);
    char label[DG_SCOPE_LABEL_MAX];
    dg_log(t->p, OC_LOG_INFO,
           "turns: %s holds the turn in channel %s (%s), and no run of it "
           "started within turn.nudgeSec (%lds) of the message that reached it (the host may "
           "have dropped that message); the moderator mentions it (twice a turn at most once a "
           "mention reached its session)",
           r->chan->members[pos], r->chan->id, dg_scope_label(&r->scope, label),
           (long)t->p->cfg.turn_nudge_sec);
    return DG_OK;
}

void turns_nudge_stalled(dg_turns *t, int64_t now)
{
    int64_t nudge_ms = (int64_t)t->p->cfg.turn_nudge_sec * 1000;
    if (nudge_ms <= 0)
        return;
    /* A look under the read lock first: most passes find nothing, and
     * then no store transaction is begun. */
    stall_list l = {.due = now - nudge_ms};
    pthread_rwlock_rdlock(&t->lock);
    dg_map_each(&t->scopes, any_stalled, &l);
    pthread_rwlock_unlock(&t->lock);
    if (!l.n_due || turns_txn_begin(t) != DG_OK)
        return;
    /* Under the writer the records stay (flushes and evictions take it). */
    dg_map_each(&t->scopes, collect_stalled, &l);
    int kick = 0, rc = DG_OK; /* out of memory: those collected now, the rest next pass */
    for (size_t i = 0; rc == DG_OK && i < l.list.n; i++)
        rc = nudge_scope(t, l.list.v[i], now, nudge_ms, &kick);
    if (rc != DG_OK)
        dg_log(t->p, OC_LOG_ERROR,
               "turns: could not queue the nudge of a stalled speaker (%s: "
               "%s); retried shortly",
               dg_status_name(rc), dg_store_errmsg(t->p->store));
    rc = turns_txn_finish(t, rc);
    if (rc == DG_OK && kick)
        dg_outbox_kick_all(t->p);
    free(l.list.v);
}
