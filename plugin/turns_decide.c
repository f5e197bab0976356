/*
 * turns_decide.c -- the agent hooks' decisions: who may speak
 * (before_model_resolve, the claim hooks), which text may go out
 * (message_sending, reply_payload_sending), and what a run's end changes
 * (agent_end). Records and locking: turns_int.h, turns_engine.c.
 */
#include "turns_int.h"
#include "turns_judge.h"
#include "utf8.h"

/* ---- agent hooks ------------------------------------------------------------------ */

int turns_valid_session(const dg_turn_session *s)
{
    return s && s->agent_id && *s->agent_id && s->session_key && *s->session_key && s->channel_id &&
           *s->channel_id && strlen(s->channel_id) < DG_SCOPE_ID_MAX &&
           (!s->thread_id || strlen(s->thread_id) < DG_SCOPE_ID_MAX);
}

/* Make sure the mirror knows s (a short transaction the first time). */
static int ensure_session(dg_turns *t, const dg_turn_session *s, int64_t now)
{
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    turns_sess *e;
    int rc = turns_session_prepare(t, s, now, &e);
    return turns_txn_finish(t, rc);
}

typedef int (*decide_fn)(dg_turns *t, turns_sess *e, turns_scope *r, const dg_turn_session *s,
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
        if (turns_txn_begin(t) != DG_OK)
            return DG_ERR_IO;
        turns_txn_finish_read(t);
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        pthread_rwlock_rdlock(&t->lock);
        turns_scope *r = NULL;
        turns_sess *e = turns_session_lookup_locked(t, s, &r);
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
    return DG_ERR_INTERNAL; /* the mirror kept being dropped under us */
}

/* r's speaker is a member the host never showed receiving the channel,
 * for TURNS_UNREACHED_GRACE_MS now, and not pos
 * (turns_drop_unreachable_speaker). Mirror lock held. */
static int unconfirmed_speaker(const dg_turns *t, const turns_scope *r, int pos, int64_t now)
{
    const turns_chan *c = r->chan;
    if (c->mode != DG_MODE_NORMAL || !r->st.active || pos == DG_NOBODY)
        return 0;
    dg_rule_ctx x;
    turns_make_ctx(t, c, &x);
    int sp = dg_rule_managed(&x) ? dg_rule_speaker(&r->st, &x) : DG_NOBODY;
    return sp != DG_NOBODY && sp != pos && c->standing[sp] == DG_MEMBER_NEW &&
           now - turns_unreached_since(c, &r->st, sp) >= TURNS_UNREACHED_GRACE_MS;
}

/* Before a decision for s: a speaker of its scope that the host never
 * showed receiving the channel leaves the order, in a change of its own
 * (turns_drop_unreachable_speaker). Read only when there is none, the common
 * case once the session is known. */
static int settle_unreachable(dg_turns *t, const dg_turn_session *s, int64_t now)
{
    if (!atomic_load(&t->per_agent))
        return DG_OK;
    pthread_rwlock_rdlock(&t->lock);
    turns_scope *r = NULL;
    turns_sess *e = turns_session_lookup_locked(t, s, &r);
    int suspect = !e || (r && e->configured && unconfirmed_speaker(t, r, e->pos, now));
    pthread_rwlock_unlock(&t->lock);
    if (!suspect)
        return DG_OK;
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    int kick = 0;
    int rc = turns_session_prepare(t, s, now, &e);
    if (rc == DG_OK && e->configured && e->pos != DG_NOBODY)
        rc = turns_drop_unreachable_speaker(t, e->fixed ? e->fixed : e->chan->follow, e->pos, now,
                                            &kick);
    rc = turns_txn_finish(t, rc);
    if (rc == DG_OK && kick)
        dg_outbox_kick_all(t->p);
    return rc;
}

/* An admin took e's agent out of its channel's order: none of its runs
 * there counts. Mirror lock or writer held. */
static int removed_member(const turns_sess *e)
{
    return e->pos != DG_NOBODY && e->pos < e->chan->n &&
           e->chan->standing[e->pos] == DG_MEMBER_REMOVED;
}

typedef struct resolve_out {
    dg_turn_verdict *v;
    int64_t seen_seq;
} resolve_out;

static int resolve_fn(dg_turns *t, turns_sess *e, turns_scope *r, const dg_turn_session *s,
                      int64_t now, void *out)
{
    (void)s;
    resolve_out *ro = out;
    dg_turn_verdict *v = ro->v;
    ro->seen_seq = r->st.msg_seq;
    turns_chan *c = e->chan;
    v->closed = c->mode == DG_MODE_CLOSED;
    if (v->closed || removed_member(e) ||
        (e->configured && turns_budget_holds(&r->st, now) && !turns_budget_exempt(r, e->pos))) {
        v->no_reply = 1;
    } else if (e->configured) {
        dg_rule_ctx x;
        turns_make_ctx(t, c, &x);
        v->no_reply = dg_rule_needs_override(&r->st, &x, e->pos, now);
        /* The speaker awaiting its wake message: this run started before
         * it arrived (turns_engine.h); swapped, with no effect on the turn. */
        v->waiting = !v->no_reply && (dg_rule_awaiting_wake(&r->st, &x, e->pos, now) ||
                                      (e->pos != DG_NOBODY && turns_judge_deciding(t, r)));
        v->no_reply |= v->waiting;
    }
    /* Remember what this run saw: agent_end tells whether it consumed the
     * latest message (hand-offs). Not turn state: nothing advances. */
    atomic_store(&e->seen_seq, r->st.msg_seq);
    atomic_store(&e->last, r);
    atomic_store(&e->granted, v->no_reply ? 0 : 1);
    if (e->configured)
        turns_nudge_run_began(r, e->pos, !v->no_reply);
    dg_scope_label(&r->scope, v->scope_label);
    return DG_OK;
}

int dg_turns_resolve_run(dg_turns *t, const dg_turn_session *s, const char *run_id,
                         dg_turn_verdict *v)
{
    memset(v, 0, sizeof *v);
    if (!turns_valid_session(s))
        return DG_ERR_INVALID;
    resolve_out ro = {.v = v};
    int rc = settle_unreachable(t, s, dg_now_ms(t->p));
    if (rc == DG_OK)
        rc = decide(t, s, resolve_fn, &ro);
    if (rc != DG_OK)
        return rc;
    /* Not turn state: what later texts and the run's end are judged by. */
    if (v->no_reply)
        turns_mark_add(t, s->session_key, run_id,
                       v->waiting ? TURNS_MARK_WAITING : TURNS_MARK_SWAPPED, ro.seen_seq);
    else
        turns_mark_end_session(t, s->session_key);
    if (v->closed)
        dg_discuss_session_seen(t->p, s->session_key, s->agent_id, s->channel_id);
    return rc;
}

/* ---- before_agent_reply: the claim ------------------------------------------------- */

/*
 * Why a run is claimed, in the order a reason is told when several hold.
 * The claim is decided in steps (claim_classify), each of which may hold
 * the run back; the reason the host logs is claim_reasons[why] (and a
 * non-speaker's text that message_sending cancels is told the last two).
 */
typedef enum claim_why {
    CLAIM_NO = 0,       /* not claimed: the run goes on */
    CLAIM_CLOSED,       /* a closed discussion channel */
    CLAIM_REMOVED,      /* an admin took the agent out of the order */
    CLAIM_COMMAND,      /* the run answers an admin command or the moderator's reply */
    CLAIM_BUDGET,       /* a budget's breaker holds the scope */
    CLAIM_LATE,         /* the turn came in another gateway after the run's message */
    CLAIM_BEFORE_REPLY, /* the run answers the message before an owed reply */
    CLAIM_STALE,        /* the run answers an older message than the latest */
    CLAIM_WAITING,      /* the speaker's wake message has not reached it yet */
    CLAIM_JUDGE,        /* the judge decides who speaks next */
    CLAIM_RESTING,      /* the scope is dormant */
    CLAIM_NOT_SPEAKER,  /* another agent holds the turn */
    CLAIM_WHY_COUNT
} claim_why;

static const char *const claim_reasons[CLAIM_WHY_COUNT] = {
    [CLAIM_NO] = "not claimed",
    [CLAIM_CLOSED] = "closed discussion channel (archive only)",
    [CLAIM_REMOVED] = "an admin took this agent out of the channel's turn order "
                      "(`!dirigent add` puts it back)",
    [CLAIM_COMMAND] = "this run answers an admin's `!dirigent` command or the moderator's "
                      "reply to one: the moderator answers commands, never an agent",
    [CLAIM_BUDGET] = "a budget of this conversation is reached; it rests until an admin's "
                     "`!dirigent resume` (or the end of the budget's hour or day)",
    [CLAIM_LATE] = "the turn reached this agent in another gateway after this run's "
                   "message came (decided as when it came; the moderator's hand-off wakes it)",
    [CLAIM_BEFORE_REPLY] = "this agent holds the turn for the previous speaker's reply, "
                           "which has not arrived yet; this run answers the message before "
                           "it (the run for the reply follows)",
    [CLAIM_STALE] = "this agent holds the turn, but this run answers an older message "
                    "than the latest (the host queued it before the turn moved; the run "
                    "for the latest message follows)",
    [CLAIM_WAITING] = "this agent holds the turn, but the moderator's message that "
                      "wakes it has not reached it yet (this run started before it)",
    [CLAIM_JUDGE] = TURNS_JUDGE_REASON " (its verdict wakes the agent it names)",
    [CLAIM_RESTING] = "the conversation is resting until a new message",
    [CLAIM_NOT_SPEAKER] = "another agent holds the turn",
};

/* One run before_agent_reply decides: its session and scope, the
 * channel's context, and what the steps found. */
typedef struct claim_run {
    const dg_turn_session *s;
    const char *run_id; /* NULL: none */
    const char *prompt; /* NULL: unknown */
    turns_sess *e;
    turns_scope *r;
    dg_rule_ctx x;
    claim_why why;
    int woken;    /* the run's prompt carries the idle reminder */
    int fresh;    /* the run id was not claimed before */
    int64_t seen; /* the scope's msg_seq the run is judged by */
} claim_run;

/* 1 when the speaker's run is still open to the later steps: not claimed
 * so far, the agent configured and its prompt known. */
static int claim_open(const claim_run *cr, const dg_turn_claim *out)
{
    return !out->claimed && !out->waiting && !cr->woken && cr->e->configured;
}

/* Woken by the idle reminder: a run whose prompt does not carry it was
 * queued before it (the host runs it late); held back. The run that
 * carries it answers it, and the fingerprint is spent. Writer held. */
static void claim_check_reminder(claim_run *cr, dg_turn_claim *out, int64_t now)
{
    turns_scope *r = cr->r;
    if (!claim_open(cr, out) || !cr->prompt || !r->wake_fp[0] || r->wake_fp_pos != cr->e->pos ||
        now - r->wake_fp_ms > TURNS_WAKE_FP_MAX_MS)
        return;
    if (strstr(cr->prompt, r->wake_fp)) {
        r->wake_fp[0] = '\0'; /* the run that answers it */
        cr->woken = 1;
    } else {
        out->waiting = 1;
        cr->why = CLAIM_WAITING;
    }
}

/*
 * Instances sharing a store, when the speaker last changed in another one:
 * this run answers a message older than its turn when (1) the previous
 * speaker's run ended there with a reply still on its way (owed): the run
 * for that reply counts; (2) the other one took in a later message of the
 * channel than this one received: the run for it comes when it arrives
 * here; (3) the change is later than the latest message received here, and
 * the speaker had consumed that message, so the change queued a wake
 * message for it (a hand-off, the idle reminder) that has not arrived (the
 * other instance's wait for it is in its memory). (4) The change is later,
 * and the speaker had not run on that message: with one instance its run
 * would have been decided when the message came, before the turn reached
 * it, and claimed; it is claimed now as then (that forced pass queues the
 * hand-off that wakes it), so the turns go as they go with one gateway.
 * Two indexed reads, for a speaker's runs after such a change only; the
 * instances' wall clocks assumed in agreement, as the leases assume.
 * Writer held.
 */
static int claim_check_moved_elsewhere(dg_turns *t, claim_run *cr, dg_turn_claim *out, int64_t now)
{
    const turns_sess *e = cr->e;
    const turns_chan *c = e->chan;
    if (!claim_open(cr, out) || e->pos == DG_NOBODY || !cr->r->moved_elsewhere)
        return DG_OK;
    const dg_turn_state *ts = &cr->r->st;
    /* Owed as long as the finished speaker may still send it
     * (dg_rule_may_send: the turn timeout, none without one). */
    int reply_due = turns_reply_owed(ts, e->pos, cr->x.timeout_ms, now);
    int newer = 0, rc = DG_OK;
    int64_t at = 0;
    if (!reply_due && c->received[0])
        rc = dg_store_turns_seen_since(t->p->store, c->id, c->received, &at, &newer);
    if (rc != DG_OK)
        return rc;
    int after = at > 0 && ts->last_change_ms > at;
    int consumed = (ts->consumed & ((uint64_t)1 << e->pos)) != 0;
    if (reply_due || newer || (after && consumed)) {
        out->waiting = 1;
        cr->why = CLAIM_STALE;
    } else if (after) {
        out->claimed = 1;
        cr->why = CLAIM_LATE;
    }
    return DG_OK;
}

/* Whether cr's run is claimed (out->claimed, out->waiting, out->closed)
 * and why (cr->why), step by step: the channel, the agent's standing, the
 * turn, then the evidence that the speaker's run answers an older message
 * than its turn. Writer held. */
static int claim_classify(dg_turns *t, claim_run *cr, dg_turn_claim *out, int64_t now)
{
    turns_sess *e = cr->e;
    turns_scope *r = cr->r;
    out->closed = e->chan->mode == DG_MODE_CLOSED;
    if (out->closed) {
        out->claimed = 1;
        cr->why = CLAIM_CLOSED;
        return DG_OK;
    }
    if (removed_member(e)) {
        out->claimed = 1;
        cr->why = CLAIM_REMOVED;
        return DG_OK;
    }
    /* A command is not speech, in any channel (one agent's too): a run
     * for it, or for the moderator's reply, is held back with no effect
     * on the turn, unless the reply hands this agent the turn (wake, skip). */
    if (e->configured && turns_prompt_is_command(e->chan, cr->prompt, now) &&
        !(e->pos != DG_NOBODY && r->st.active && r->st.handoff == e->pos &&
          turns_is_admin_reply(cr->prompt))) {
        out->waiting = 1;
        cr->why = CLAIM_COMMAND;
        return DG_OK;
    }
    /* A breaker holds the scope: every run is claimed for it, whoever holds
     * the turn (a discussion's initiator, asked to wrap up, aside). */
    if (e->configured && turns_staged(t, r)->budget && !turns_budget_exempt(r, e->pos)) {
        out->claimed = 1;
        cr->why = CLAIM_BUDGET;
        return DG_OK;
    }
    /* While the judge decides, no run counts: the verdict wakes the one
     * it names. Held back like a stale run, with no effect on the turn. */
    if (e->configured && e->pos != DG_NOBODY && turns_judge_deciding(t, r)) {
        out->waiting = 1;
        cr->why = CLAIM_JUDGE;
        return DG_OK;
    }
    if (e->configured && dg_rule_needs_override(&r->st, &cr->x, e->pos, now)) {
        out->claimed = 1;
        cr->why = CLAIM_NOT_SPEAKER; /* or resting: told once the change is published */
        return DG_OK;
    }
    /* The speaker awaiting its wake message: a stale run, held back
     * with no effect on the turn. Its run id is still recorded, so its
     * agent_end is ignored, also after a restart. */
    if (e->configured && dg_rule_awaiting_wake(&r->st, &cr->x, e->pos, now)) {
        out->waiting = 1;
        cr->why = CLAIM_WAITING;
        return DG_OK;
    }
    claim_check_reminder(cr, out, now);
    /* The speaker's run that answers an older message than the
     * scope's newest: queued before the turn reached it, started late;
     * held back too (the host runs the newer message after it). */
    if (claim_open(cr, out) && cr->prompt && e->pos != DG_NOBODY &&
        turns_answers_older(r, e->pos, cr->prompt)) {
        out->waiting = 1;
        cr->why = CLAIM_STALE;
    }
    /* The turn came to this agent for the previous speaker's reply,
     * which has not arrived yet (its run ended speaking; the host
     * delivers the message after): a run whose prompt carries the
     * message before it was queued for that one and started late (a
     * host under load may start it between the previous speaker's run
     * end and the delivery of its reply). Held back; the run for the reply,
     * which the host starts when it arrives, counts. */
    if (claim_open(cr, out) && cr->prompt && e->pos != DG_NOBODY &&
        turns_answers_before_owed_reply(r, &cr->x, e->pos, cr->prompt, now)) {
        out->waiting = 1;
        cr->why = CLAIM_BEFORE_REPLY;
    }
    return claim_check_moved_elsewhere(t, cr, out, now);
}

/* A claimed run (not held back for a wake or an older message): what a
 * swapped run that ended silently does, now, since no agent_end may follow
 * a claimed run. Its run id is recorded first; a repeat changes nothing.
 * Writer held. */
static int claim_apply(dg_turns *t, claim_run *cr, dg_turn_claim *out, int64_t now, int *kick)
{
    turns_sess *e = cr->e;
    turns_scope *r = cr->r;
    int rc = DG_OK;
    if (cr->run_id)
        rc = dg_store_turns_run_claim(t->p->store, cr->s->session_key, cr->run_id, now, &cr->fresh);
    if (rc != DG_OK || !cr->fresh || out->closed || out->waiting)
        return rc;
    dg_rule_effects fx;
    dg_rule_effects_init(&fx);
    dg_turn_state next = *turns_staged(t, r); /* a budget's breaker may have latched above */
    dg_rule_on_run_end(&next, &cr->x, e->pos, DG_RUN_SILENT, 1, 0, now, &fx);
    int changed = !dg_turn_state_same(&next, &r->st);
    if ((changed || !r->in_db) && e->pos != DG_NOBODY)
        rc = turns_save_scope(t, r, &next, now, "a claimed run (before_agent_reply) passed");
    if (rc == DG_OK)
        rc = turns_queue_effects(t, r, &fx, &next, now, kick);
    if (rc == DG_OK)
        rc = turns_install(t, r, &next);
    return rc;
}

/* A run claimed because another agent holds the turn, while a message is
 * still owed a granted run and nothing watches the speaker (no wait armed
 * for it, no run of it under way): the turn may have come to the speaker
 * with no move that arms the stall nudge, when this run's agent joined the
 * order and made it a managed one after the message reached the speaker,
 * not yet a member then. If the host dropped that message, the speaker is
 * mentioned after turn.nudgeSec instead of waiting out turn.timeoutSec.
 * Writer held. */
static void arm_unwatched_speaker(dg_turns *t, const claim_run *cr, int64_t now)
{
    turns_scope *r = cr->r;
    const dg_turn_state *st = turns_staged(t, r);
    if (cr->why != CLAIM_NOT_SPEAKER || !cr->e->configured || t->p->cfg.turn_nudge_sec <= 0 ||
        !st->active || !dg_rule_managed(&cr->x) || !atomic_load(&r->unanswered_ms))
        return;
    int sp = dg_rule_speaker(st, &cr->x);
    if (sp == DG_NOBODY || sp == cr->e->pos || atomic_load(&r->run_pos) == sp ||
        atomic_load(&r->wait_pos) == sp)
        return;
    atomic_store(&r->wait_ms, now);
    atomic_store(&r->wait_pos, sp);
}

/* What the session's run is judged by later (agent_end, its texts), and
 * the stall nudge's watch: a run held back for one that follows (for a
 * newer message, or for the reply still on its way) arms it, so the
 * speaker is mentioned if the host never starts that one; another
 * agent's run claimed for the speaker's turn may arm it too
 * (arm_unwatched_speaker). Writer held. */
static void claim_record(dg_turns *t, const claim_run *cr, const dg_turn_claim *out, int64_t now)
{
    turns_sess *e = cr->e;
    turns_scope *r = cr->r;
    atomic_store(&e->seen_seq, cr->seen);
    atomic_store(&e->last, r);
    atomic_store(&e->granted, out->claimed ? 0 : 1);
    if (e->configured)
        turns_nudge_run_began(r, e->pos, !out->claimed);
    arm_unwatched_speaker(t, cr, now);
    int64_t nudge_ms = (int64_t)t->p->cfg.turn_nudge_sec * 1000;
    if ((cr->why == CLAIM_STALE || cr->why == CLAIM_BEFORE_REPLY) && nudge_ms > 0) {
        /* The run that follows is for a message that came in before this
         * hold, and the humans have waited since the oldest message no
         * granted run followed: if the host dropped it, the wait began
         * then (with a little time after the hold to start that run). A
         * wait armed already, when the latest message reached this agent
         * during the held run, keeps the earlier of the two. */
        int64_t since = now, waited = atomic_load(&r->unanswered_ms);
        if (cr->why == CLAIM_STALE && waited && waited < now) {
            since = waited;
            if (since < now - nudge_ms + TURNS_NUDGE_FOLLOW_MS)
                since = now - nudge_ms + TURNS_NUDGE_FOLLOW_MS;
        }
        if (atomic_load(&r->wait_pos) != e->pos || since < atomic_load(&r->wait_ms)) {
            atomic_store(&r->wait_ms, since);
            atomic_store(&r->wait_pos, e->pos);
        }
    }
}

/* A run the turn would let through, in a scope whose budget is reached
 * (now, or before: the breaker latched): claimed. A window that ended
 * lifts its breaker first. Writer held. */
static int claim_check_budget(dg_turns *t, claim_run *cr, dg_turn_claim *out, int64_t now,
                              int *kick)
{
    if (out->claimed || out->waiting || !cr->e->configured)
        return DG_OK;
    int rc = turns_budget_lift_due(t, cr->r, now);
    if (rc == DG_OK)
        rc = turns_budget_check(t, cr->r, now, kick);
    if (rc == DG_OK && turns_staged(t, cr->r)->budget && !turns_budget_exempt(cr->r, cr->e->pos)) {
        out->claimed = 1;
        cr->why = CLAIM_BUDGET;
    }
    return rc;
}

/* The decision for cr's run inside the writer's transaction. */
static int claim_locked(dg_turns *t, claim_run *cr, dg_turn_claim *out, int64_t now, int *kick)
{
    int rc = turns_session_prepare(t, cr->s, now, &cr->e);
    if (rc != DG_OK)
        return rc;
    cr->r = cr->e->fixed ? cr->e->fixed : cr->e->chan->follow;
    turns_make_ctx(t, cr->e->chan, &cr->x);
    /* A window that ended lifts its breaker before anything is decided. */
    if ((rc = turns_budget_lift_due(t, cr->r, now)) != DG_OK ||
        (rc = claim_classify(t, cr, out, now)) != DG_OK ||
        (rc = claim_check_budget(t, cr, out, now, kick)) != DG_OK)
        return rc;
    out->claimed |= out->waiting;
    if (cr->e->configured &&
        (rc = turns_cost_record(t, cr->r, cr->s, cr->run_id,
                                out->claimed ? DG_COST_CLAIMED : DG_COST_GRANTED, now)) != DG_OK)
        return rc;
    cr->seen = cr->r->st.msg_seq;
    if (out->claimed && (rc = claim_apply(t, cr, out, now, kick)) != DG_OK)
        return rc;
    claim_record(t, cr, out, now);
    return DG_OK;
}

static void claim_log_failure(dg_turns *t, const dg_turn_session *s, int rc, const char *why)
{
    dg_log(t->p, OC_LOG_ERROR,
           "before_agent_reply: no decision for %s in channel %s (%s%s); "
           "the run is not claimed and goes on as usual",
           s->agent_id, s->channel_id, dg_status_name(rc), why);
}

int dg_turns_claim(dg_turns *t, const dg_turn_session *s, const char *run_id, const char *prompt,
                   dg_turn_claim *out)
{
    memset(out, 0, sizeof *out);
    if (!turns_valid_session(s))
        return DG_ERR_INVALID;
    claim_run cr = {.s = s,
                    .run_id = run_id && *run_id ? run_id : NULL,
                    .prompt = prompt,
                    .why = CLAIM_NO,
                    .fresh = 1};
    int64_t now = dg_now_ms(t->p);
    int rc = settle_unreachable(t, s, now);
    if (rc != DG_OK) {
        claim_log_failure(t, s, rc, "");
        return rc;
    }
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    int kick = 0;
    rc = claim_locked(t, &cr, out, now, &kick);
    /* The store's message is read while the transaction is still ours. */
    char why[256] = "";
    if (rc != DG_OK)
        snprintf(why, sizeof why, ": %s", dg_store_errmsg(t->p->store));
    rc = turns_txn_finish(t, rc);
    if (rc != DG_OK) {
        claim_log_failure(t, s, rc, why);
        memset(out, 0, sizeof *out);
        return rc;
    }
    if (kick)
        dg_outbox_kick_all(t->p);
    if (!out->claimed) {
        turns_mark_end_session(t, s->session_key);
        return DG_OK;
    }
    turns_mark_add(t, s->session_key, cr.run_id, TURNS_MARK_CLAIMED, cr.seen);
    if (cr.why == CLAIM_NOT_SPEAKER && !cr.r->st.active)
        cr.why = CLAIM_RESTING;
    snprintf(out->reason, sizeof out->reason, "dirigent: %s", claim_reasons[cr.why]);
    char label[DG_SCOPE_LABEL_MAX];
    dg_log(t->p, OC_LOG_DEBUG, "before_agent_reply: run %s of %s claimed in %s (%s)%s",
           cr.run_id ? cr.run_id : "(no id)", s->agent_id, dg_scope_label(&cr.r->scope, label),
           out->reason, cr.fresh ? "" : ", already claimed before");
    if (out->closed)
        dg_discuss_session_seen(t->p, s->session_key, s->agent_id, s->channel_id);
    return DG_OK;
}

typedef struct send_out {
    int cancel;
    char *reason;
    size_t reason_len;
    const char *content;
} send_out;

static int send_fn(dg_turns *t, turns_sess *e, turns_scope *r, const dg_turn_session *s,
                   int64_t now, void *out)
{
    send_out *o = out;
    turns_chan *c = e->chan;
    if (c->mode == DG_MODE_CLOSED) {
        o->cancel = 1;
        snprintf(o->reason, o->reason_len,
                 "dirigent: channel %s is a closed discussion channel (archive only); "
                 "messages there are not delivered",
                 c->id);
        return DG_OK;
    }
    if (!e->configured || dg_silent_text(o->content))
        return DG_OK;
    dg_rule_ctx x;
    turns_make_ctx(t, c, &x);
    if (dg_rule_may_send(&r->st, &x, e->pos, now))
        return DG_OK;
    dg_turn_state cur = r->st;
    dg_rule_expire(&cur, &x, now, NULL);
    int sp = dg_rule_speaker(&cur, &x);
    char label[DG_SCOPE_LABEL_MAX];
    o->cancel = 1;
    snprintf(o->reason, o->reason_len, "dirigent: it is not %s's turn in channel %s (%s); %s",
             s->agent_id, c->id, dg_scope_label(&r->scope, label),
             claim_reasons[sp == DG_NOBODY ? CLAIM_RESTING : CLAIM_NOT_SPEAKER]);
    return DG_OK;
}

/* *out = 1 when e's agent is the finished speaker whose message may still
 * be sent (turns.h dg_rule_may_send). Read lock held. */
static int permit_fn(dg_turns *t, turns_sess *e, turns_scope *r, const dg_turn_session *s,
                     int64_t now, void *out)
{
    (void)s;
    dg_rule_ctx x;
    turns_make_ctx(t, e->chan, &x);
    *(int *)out = e->pos != DG_NOBODY && r->st.permit == e->pos &&
                  (x.timeout_ms <= 0 || now - r->st.permit_ms <= x.timeout_ms);
    return DG_OK;
}

int dg_turns_check_outbound(dg_turns *t, const dg_turn_session *s, const char *run_id,
                            const char *content, int *cancel, char *reason, size_t reason_len)
{
    *cancel = 0;
    if (!turns_valid_session(s))
        return DG_ERR_INVALID;
    int exact = 0, permit = 0;
    turns_mark_kind k = turns_mark_find_ex(t, s->session_key, run_id, NULL, NULL, &exact);
    if ((k == TURNS_MARK_SWAPPED || k == TURNS_MARK_WAITING) && !exact) {
        /* Matched by session only: the text may be the reply of the
         * agent's real run that just ended speaking (a swapped run of it
         * started since, for a newer message); that one keeps its permit. */
        int rc = decide(t, s, permit_fn, &permit);
        if (rc != DG_OK)
            return rc;
    }
    if (k == TURNS_MARK_NONE || permit)
        return dg_turns_check_send(t, s, content, cancel, reason, reason_len);
    *cancel = 1;
    snprintf(reason, reason_len,
             "dirigent: run %s of %s in channel %s was %s; none of its "
             "texts is delivered",
             run_id && *run_id ? run_id : "(no id)", s->agent_id, s->channel_id,
             k == TURNS_MARK_CLAIMED ? "claimed (no model call: the agent does not "
                                       "hold the turn, or awaits the message that wakes it)"
             : k == TURNS_MARK_WAITING
                 ? "swapped to the no-reply model (it started before the "
                   "message that wakes the agent had reached it)"
                 : "swapped to the no-reply model (the agent did not hold the turn)");
    return DG_OK;
}

/* *out = 1 when e's channel is managed (dg_turns_channel_managed). Read
 * lock held. */
static int managed_fn(dg_turns *t, turns_sess *e, turns_scope *r, const dg_turn_session *s,
                      int64_t now, void *out)
{
    (void)t, (void)r, (void)s, (void)now;
    const turns_chan *c = e->chan;
    *(int *)out = c->mode != DG_MODE_NORMAL || __builtin_popcountll(c->present) >= 2;
    return DG_OK;
}

int dg_turns_channel_managed(dg_turns *t, const dg_turn_session *s, int *managed)
{
    *managed = 0;
    if (!turns_valid_session(s))
        return DG_ERR_INVALID;
    int rc = decide(t, s, managed_fn, managed);
    if (rc != DG_OK)
        *managed = 0;
    return rc;
}

int dg_turns_check_error_notice(dg_turns *t, const dg_turn_session *s, const char *hook,
                                const char *field, const char *text, int *cancel, char *reason,
                                size_t reason_len)
{
    *cancel = 0;
    int managed = 0;
    int rc = dg_turns_channel_managed(t, s, &managed);
    if (rc != DG_OK || !managed)
        return rc;
    const char *shown = text ? text : "";
    int len = (int)dg_utf8_prefix(shown, 120);
    dg_log(t->p, OC_LOG_INFO,
           "%s: error notice of %s in channel %s not delivered: "
           "\"%.*s%s\"",
           hook, s->agent_id, s->channel_id, len, shown, shown[len] ? "..." : "");
    snprintf(reason, reason_len,
             "dirigent: channel %s is managed by the turn manager; an "
             "error notice of the host (%s) is never posted there",
             s->channel_id, field);
    *cancel = 1;
    return DG_OK;
}

int dg_turns_check_send(dg_turns *t, const dg_turn_session *s, const char *content, int *cancel,
                        char *reason, size_t reason_len)
{
    *cancel = 0;
    if (!turns_valid_session(s))
        return DG_ERR_INVALID;
    send_out o = {.reason = reason, .reason_len = reason_len, .content = content};
    int rc = decide(t, s, send_fn, &o);
    *cancel = o.cancel;
    return rc;
}

/* mark: the run's mark (TURNS_MARK_SWAPPED: judged as swapped with mark_seen;
 * TURNS_MARK_NONE: from what the session's last decision recorded); other_run:
 * the session's last silenced decision was for another run id. */
static int run_end_locked(dg_turns *t, const dg_turn_session *s, const char *run_id,
                          dg_run_outcome outcome, turns_mark_kind mark, int64_t mark_seen,
                          int other_run, int64_t now, int *kick)
{
    turns_sess *e = dg_map_get(&t->sessions, s->session_key);
    turns_scope *r = NULL;
    int64_t seen = -1;
    int granted = -1;
    if (e && strcmp(e->chan->id, s->channel_id) == 0 && turns_same_str(e->thread, s->thread_id)) {
        r = atomic_load(&e->last);
        seen = atomic_load(&e->seen_seq);
        granted = atomic_load(&e->granted);
    }
    if (mark == TURNS_MARK_SWAPPED) {
        /* Its own decision, not the session's latest: a swapped run that
         * ends after the turn reached the agent (and after a real run of
         * it was resolved) is still no speech. */
        granted = 0;
        seen = mark_seen;
    } else if (other_run && granted == 0) {
        granted = -1; /* the swap recorded was another run's: unknown */
    }
    turns_sess *fresh;
    int rc = turns_session_prepare(t, s, now, &fresh);
    if (rc)
        return rc;
    turns_chan *c = fresh->chan;
    if (!fresh->configured)
        return DG_OK;
    if (!r)
        r = fresh->fixed ? fresh->fixed : c->follow;
    /* Closed: swapped there, unless the turn was granted before it closed
     * (the initiator's callback run closes it and ends after). */
    if (c->mode == DG_MODE_CLOSED)
        return r ? turns_cost_record(t, r, s, run_id,
                                     granted == 1 ? DG_COST_GRANTED : DG_COST_SWAPPED, now)
                 : DG_OK;
    if (granted != 0)
        turns_nudge_run_ended(r, fresh->pos, now);
    if ((rc = turns_cost_record(t, r, s, run_id, granted == 0 ? DG_COST_SWAPPED : DG_COST_GRANTED,
                                now)) != DG_OK)
        return rc;
    /* Unknown (the run started before this instance did): it saw the
     * latest message unless one came after this instance loaded the scope
     * (msg_seq counts from 0 here), since such a message is newer than the
     * run. */
    int saw_latest = seen < 0 ? r->st.msg_seq == 0 : seen == r->st.msg_seq;
    /* A run under way when an admin's `wake` gave its agent the turn
     * again answered the turn before: silent, it passes nothing (the run
     * for the wake's mention follows; the nudge or a timeout if it never
     * does). */
    int before_wake = fresh->pos != DG_NOBODY && r->run_before_wake == fresh->pos;
    if (before_wake)
        r->run_before_wake = DG_NOBODY;
    if (before_wake && granted != 0 && outcome == DG_RUN_SILENT)
        saw_latest = 0;
    dg_rule_ctx x;
    turns_make_ctx(t, c, &x);
    dg_rule_effects fx;
    dg_rule_effects_init(&fx);
    dg_turn_state next = *turns_staged(t, r); /* a budget's breaker may have latched above */
    /* A run from before this instance (seen unknown) cannot tell a message
     * that came after it started and before this instance did either:
     * silent, the speaker's such run passes nothing, and the stall nudge
     * mentions it if no run of it follows; the scope does not rest on a
     * message that silence may never have seen. */
    if (seen < 0 && saw_latest && granted != 0 && outcome == DG_RUN_SILENT &&
        fresh->pos != DG_NOBODY && t->p->cfg.turn_nudge_sec > 0 && next.active &&
        dg_rule_speaker(&next, &x) == fresh->pos) {
        saw_latest = 0;
        atomic_store(&r->wait_ms, now);
        atomic_store(&r->wait_pos, fresh->pos);
    }
    dg_rule_on_run_end(&next, &x, fresh->pos, outcome, saw_latest, granted, now, &fx);
    if (granted != 0 && outcome == DG_RUN_SPOKE && !saw_latest &&
        (rc = turns_hand_open_question(t, r, &x, &next, fresh->pos, now, kick)))
        return rc;
    char cause[200];
    snprintf(cause, sizeof cause, "run of %s ended: %s%s", s->agent_id,
             outcome == DG_RUN_SPOKE    ? "spoke"
             : outcome == DG_RUN_SILENT ? "passed (silent)"
                                        : "tool calls only",
             saw_latest ? "" : " (it answered an older message)");
    if ((!dg_turn_state_same(&next, &r->st) || !r->in_db) &&
        (rc = turns_save_scope(t, r, &next, now, cause)))
        return rc;
    /* A budget reached by this run holds the scope only when somebody is
     * next: a round that ended by itself owes no notice, and the next
     * human message starts a new one. */
    if ((rc = turns_install(t, r, &next)) ||
        (granted != 0 && next.active && !next.budget && (rc = turns_budget_check(t, r, now, kick))))
        return rc;
    next = *turns_staged(t, r);
    if ((rc = turns_queue_effects(t, r, &fx, &next, now, kick)))
        return rc;
    return turns_install(t, r, &next);
}

int dg_turns_run_end(dg_turns *t, const dg_turn_session *s, const char *run_id, const char *output,
                     long tool_calls, int success)
{
    if (!turns_valid_session(s))
        return DG_ERR_INVALID;
    if (!dg_config_agent(&t->p->cfg, s->agent_id))
        return DG_OK; /* not one of ours: it takes no turns */
    dg_run_outcome o = dg_run_classify(output, tool_calls);
    int64_t now = dg_now_ms(t->p);
    int64_t mark_seen = -1;
    int other_run = 0;
    turns_mark_kind mark = turns_mark_find(t, s->session_key, run_id, &mark_seen, &other_run);
    if (mark == TURNS_MARK_SWAPPED)
        o = DG_RUN_SILENT; /* whatever it said: a forced no-reply run, never speech */
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    int kick = 0, fresh = 1, rc = DG_OK;
    if (run_id && *run_id)
        rc = dg_store_turns_run_claim(t->p->store, s->session_key, run_id, now, &fresh);
    if (rc == DG_OK && !fresh) {
        dg_log(t->p, OC_LOG_DEBUG, "agent_end: run %s of %s was already handled; ignored", run_id,
               s->session_key);
        return turns_txn_finish(t, DG_OK);
    }
    if (rc == DG_OK && mark == TURNS_MARK_CLAIMED) {
        dg_log(t->p, OC_LOG_DEBUG,
               "agent_end: run %s of %s was claimed; its end changes "
               "nothing (the claim did what it would)",
               run_id && *run_id ? run_id : "(no id)", s->session_key);
        return turns_txn_finish(t, DG_OK);
    }
    if (rc == DG_OK && mark == TURNS_MARK_WAITING) {
        dg_log(t->p, OC_LOG_DEBUG,
               "agent_end: run %s of %s was swapped while the agent awaited "
               "its wake message; its end changes nothing (no pass)",
               run_id && *run_id ? run_id : "(no id)", s->session_key);
        return turns_txn_finish(t, DG_OK);
    }
    if (rc == DG_OK)
        rc = run_end_locked(t, s, run_id, o, mark, mark_seen, other_run, now, &kick);
    if (rc)
        dg_log(t->p, OC_LOG_ERROR,
               "agent_end: could not advance the turn of %s in channel %s "
               "(%s: %s)",
               s->agent_id, s->channel_id, dg_status_name(rc), dg_store_errmsg(t->p->store));
    else
        dg_log(t->p, OC_LOG_DEBUG, "agent_end: %s in %s %s%s", s->agent_id, s->channel_id,
               dg_run_outcome_name(o), success ? "" : " (run failed)");
    int failed = rc;
    rc = turns_txn_finish(t, rc);
    if (rc != DG_OK && !failed)
        dg_log(t->p, OC_LOG_ERROR,
               "agent_end: the state database did not commit the end of %s's "
               "run in channel %s; the turn did not move",
               s->agent_id, s->channel_id);
    if (rc == DG_OK && kick)
        dg_outbox_kick_all(t->p);
    return rc;
}
