/*
 * turns_judge.c -- the turn engine's side of the judge (turns_judge.h).
 */
#include "turns_judge.h"

#include "store_judge.h"

#define BIT(i) ((uint64_t)1 << (i))

void turns_judge_note(dg_turns *t, const turns_scope *r, const dg_turn_message *m,
                      dg_sender_kind kind, int pos)
{
    if (!t->p->judge || kind == DG_SENDER_MODERATOR || kind == DG_SENDER_HANDOFF)
        return;
    const char *author = kind == DG_SENDER_HUMAN ? "human"
                         : pos != DG_NOBODY      ? r->chan->members[pos]
                                                 : "bot";
    dg_judge_note_message(t->p->judge, r->key, author, m->content, kind == DG_SENDER_HUMAN);
}

int turns_judge_deciding(dg_turns *t, const turns_scope *r)
{
    return t->p->judge && r->chan->mode == DG_MODE_NORMAL && dg_judge_deciding(t->p->judge, r->key);
}

const char *turns_judge_status(const dg_turns *t, const turns_scope *r, char *buf, size_t cap)
{
    char what[320];
    dg_judge *j = t->p->judge;
    snprintf(buf, cap, "judge: %s%s", dg_judge_describe(j, what, sizeof what),
             j && dg_judge_deciding(j, r->key) ? "; deciding who speaks next now" : "");
    return buf;
}

void turns_judge_overruled(dg_turns *t, const turns_scope *r)
{
    if (t->p->judge)
        dg_judge_cancel(t->p->judge, r->key);
}

/* The members the judge may name: in the order, not passed in this cycle,
 * not the author of the latest message and not one whose reply is on its
 * way (neither is asked to answer itself). Their ids into ids; the count. */
static size_t candidates(const turns_chan *c, const dg_rule_ctx *x, const dg_turn_state *next,
                         const char *latest_author, uint64_t replying,
                         const char *ids[DGJ_MAX_LABELS])
{
    size_t n = 0;
    for (int i = 0; i < c->n && n < DGJ_MAX_LABELS - 1; i++)
        if ((x->present & BIT(i)) && !(next->silent & BIT(i)) && !(replying & BIT(i)) &&
            strcmp(c->members[i], latest_author) != 0)
            ids[n++] = c->members[i];
    return n;
}

int turns_judge_intercept(dg_turns *t, turns_scope *r, dg_rule_effects *fx, dg_turn_state *next)
{
    dg_judge *j = t->p->judge;
    TURNS_ASSERT_WRITER(t);
    int handed = r->open_question_handed;
    r->open_question_handed = 0;
    if (!j || r->chan->mode != DG_MODE_NORMAL || dg_judge_on_worker(j))
        return DG_OK;
    dg_rule_ctx x;
    turns_make_ctx(t, r->chan, &x);
    if (!dg_rule_managed(&x) || !next->active || next->budget || next->mention || handed) {
        dg_judge_cancel(j, r->key); /* nothing left to decide, or a person chose */
        return DG_OK;
    }
    int before = r->in_db && r->st.active ? dg_rule_speaker(&r->st, &x) : DG_NOBODY;
    int after = dg_rule_speaker(next, &x);
    if (after == DG_NOBODY || after == before)
        return DG_OK; /* the turn did not move: an open question stays open */
    /* A run that just ended speaking: its reply is on its way (the host
     * delivers it after agent_end). It, or a pass in this cycle, is the
     * agent's run the human's message was owed. */
    uint64_t replying = next->owed & ~r->st.owed;
    char latest[DGJ_LABEL_MAX];
    int human_waits = dg_judge_latest(j, r->key, latest) && !replying && !next->silent;
    const char *ids[DGJ_MAX_LABELS];
    size_t n = candidates(r->chan, &x, next, latest, replying, ids);
    if (n == 0 || (n == 1 && human_waits))
        return DG_OK; /* no choice to make */
    dg_judge_question q = {.scope_key = r->key,
                           .channel_id = r->chan->id,
                           .candidates = ids,
                           .n_candidates = n,
                           .allow_nobody = !human_waits};
    int rc = dg_judge_ask(j, &q, NULL);
    if (rc != DG_OK)
        return rc;
    /* The verdict brings the hand-off; until then nobody is woken. */
    if (fx->handoff_to != DG_NOBODY)
        dg_rule_wake_delivered(next, fx->handoff_to);
    fx->handoff_to = DG_NOBODY;
    return DG_OK;
}

/* The cause the transitions log shows for res, into out. */
static void verdict_cause(const dg_judge_result *res, dg_judge_outcome o, dg_judge_cause why,
                          const char *target, char *out, size_t cap)
{
    if (o == DG_JUDGE_CHOSE)
        snprintf(out, cap, "judge chose %s, p %.2f (%s, %lld ms)", target, res->probability,
                 res->source, (long long)res->latency_ms);
    else if (o == DG_JUDGE_ENDED)
        snprintf(out, cap, "judge ended the round, p %.2f (%s, %lld ms)", res->probability,
                 res->source, (long long)res->latency_ms);
    else
        snprintf(out, cap, "judge fell back (%s): today's order hands the turn to %s",
                 dg_judge_cause_name(why), target);
}

/* The member the verdict gives the turn to (DG_NOBODY: the round ends),
 * with the outcome and its cause as finally taken. */
static int verdict_target(dg_turns *t, const turns_scope *r, const dg_rule_ctx *x,
                          const dg_turn_state *st, const dg_judge_result *res, dg_judge_outcome *o,
                          dg_judge_cause *why)
{
    *o = res->outcome;
    *why = res->cause;
    if (*o == DG_JUDGE_ENDED && dg_judge_latest(t->p->judge, r->key, NULL) && !st->owed &&
        !st->silent) {
        *o = DG_JUDGE_FALLBACK; /* a human's message waits for an agent's run */
        *why = DG_JUDGE_NOBODY_REFUSED;
    }
    if (*o == DG_JUDGE_ENDED)
        return DG_NOBODY;
    if (*o == DG_JUDGE_CHOSE) {
        int pos = turns_member_pos(r->chan, res->chosen);
        if (pos != DG_NOBODY && (x->present & BIT(pos)) && !(st->silent & BIT(pos)))
            return pos;
        *o = DG_JUDGE_FALLBACK; /* it left the order or passed meanwhile */
        *why = DG_JUDGE_UNREADABLE;
    }
    return dg_rule_speaker(st, x);
}

/* The call in the judge's ledger, whatever came of it: it cost the same. */
static int record_call(dg_turns *t, const dg_judge_result *res, dg_judge_outcome o,
                       dg_judge_cause why, int dropped, const char *label, int64_t now)
{
    dg_scope sc;
    char key[DG_SCOPE_ID_MAX + 16], outcome[96];
    if (dg_scope_from_key(res->scope_key, &sc) != DG_OK)
        return DG_ERR_INTERNAL;
    if (dropped)
        snprintf(outcome, sizeof outcome, "dropped: the turn moved on");
    else if (o == DG_JUDGE_FALLBACK)
        snprintf(outcome, sizeof outcome, "fell back: %s", dg_judge_cause_name(why));
    else
        snprintf(outcome, sizeof outcome, "%s", o == DG_JUDGE_CHOSE ? "chose" : "ended");
    dg_judge_call c = {
        .channel_id = res->channel_id,
        .scope = dg_store_turns_state_key(&sc, key, sizeof key),
        .source = res->source,
        .outcome = outcome,
        .label = label,
        .at_ms = now,
        .probability_milli = res->cause == DG_JUDGE_TAKEN ||
                                     res->cause == DG_JUDGE_LOW_CONFIDENCE ||
                                     res->cause == DG_JUDGE_NOBODY_REFUSED
                                 ? (int64_t)(res->probability * 1000 + 0.5)
                                 : -1,
        .tokens_in = res->tokens_in > 0 ? res->tokens_in : 0,
        .tokens_out = res->tokens_out > 0 ? res->tokens_out : 0,
        .latency_ms = res->latency_ms > 0 ? res->latency_ms : 0,
    };
    return dg_store_judge_call_add(t->p->store, &c);
}

static int apply_locked(dg_turns *t, const dg_judge_result *res, int *kick)
{
    int64_t now = dg_now_ms(t->p);
    /* Closed inside this transaction: a run decided after its commit
     * counts, none before it is held for nothing. */
    if (!dg_judge_settle(t->p->judge, res->scope_key, res->seq))
        return record_call(t, res, res->outcome, res->cause, 1, res->chosen, now);
    turns_scope *r = dg_map_get(&t->scopes, res->scope_key);
    dg_turn_state next;
    if (r)
        next = r->st;
    if (!r || r->chan->mode != DG_MODE_NORMAL || !next.active || next.budget)
        return record_call(t, res, res->outcome, res->cause, 1, res->chosen, now);
    dg_rule_ctx x;
    turns_make_ctx(t, r->chan, &x);
    dg_judge_outcome o;
    dg_judge_cause why;
    int to = verdict_target(t, r, &x, &next, res, &o, &why);
    dg_rule_effects fx;
    dg_rule_effects_init(&fx);
    next.last_change_ms = now;
    next.awaiting = 0;
    if (to == DG_NOBODY && o != DG_JUDGE_ENDED)
        return record_call(t, res, o, why, 1, NULL, now);
    if (o == DG_JUDGE_ENDED) {
        next.active = 0;
        next.speaker = DG_NOBODY;
        next.handoff = DG_NOBODY;
    } else {
        /* Its runs were claimed while the judge decided: a mention wakes it. */
        next.speaker = to;
        next.handoff = to;
        fx.handoff_to = to;
        dg_rule_await_wake(&next, &x, to);
    }
    char cause[256];
    const char *name = to != DG_NOBODY ? r->chan->members[to] : "nobody";
    verdict_cause(res, o, why, name, cause, sizeof cause);
    int rc = record_call(t, res, o, why, 0, o == DG_JUDGE_FALLBACK ? NULL : name, now);
    if (rc == DG_OK)
        rc = turns_save_scope(t, r, &next, now, cause);
    if (rc == DG_OK)
        rc = turns_queue_effects(t, r, &fx, &next, now, kick);
    if (rc == DG_OK)
        rc = turns_install(t, r, &next);
    return rc;
}

int dg_turns_judge_apply(void *ud, const dg_judge_result *res)
{
    dg_turns *t = ud;
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    int kick = 0;
    int rc = turns_txn_finish(t, apply_locked(t, res, &kick));
    if (rc == DG_OK && kick)
        dg_outbox_kick_all(t->p);
    return rc;
}
