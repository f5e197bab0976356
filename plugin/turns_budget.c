/*
 * turns_budget.c -- what runs cost, and the budgets' breaker.
 *
 * Every decision about a run goes into the store's cost ledger with the
 * usage the host reports for it (store_cost.h). After a granted run and
 * after usage, the scope's budgets (config.h dg_budget) are counted from
 * the ledger; when one is reached the breaker latches in the scope's turn
 * state (dg_turn_state.budget): from then on every run there is claimed or
 * swapped, the moderator posts one notice, and only `!dirigent resume` or
 * the end of an hourly or daily window lifts it. Being turn state, it is
 * saved, reloaded after a restart and seen by another gateway on the same
 * store like any other change.
 * Records and locking: turns_int.h, turns_engine.c.
 */
#include <inttypes.h>
#include <time.h>

#include "turns_int.h"

#define HOUR_MS ((int64_t)3600 * 1000)
#define DAY_MS ((int64_t)24 * HOUR_MS)

int turns_budget_is_tokens(dg_budget_kind k)
{
    return k == DG_BUDGET_TOKENS_PER_MESSAGE || k == DG_BUDGET_TOKENS_PER_HOUR ||
           k == DG_BUDGET_TOKENS_PER_DAY || k == DG_BUDGET_DISCUSSION_TOKENS;
}

/* The window kind k counts in at now: [*since, *until); *until 0 when the
 * window has no end by time (per human message, a discussion's life). */
static int budget_window(dg_turns *t, turns_scope *r, dg_budget_kind k, int64_t now, int64_t *since,
                         int64_t *until)
{
    char key[DG_SCOPE_ID_MAX + 16];
    *until = 0;
    switch (k) {
    case DG_BUDGET_TURNS_PER_HOUR:
    case DG_BUDGET_TOKENS_PER_HOUR:
        *since = now - now % HOUR_MS;
        *until = *since + HOUR_MS;
        return DG_OK;
    case DG_BUDGET_TURNS_PER_DAY:
    case DG_BUDGET_TOKENS_PER_DAY:
        *since = now - now % DAY_MS;
        *until = *since + DAY_MS;
        return DG_OK;
    case DG_BUDGET_TURNS_PER_MESSAGE:
    case DG_BUDGET_TOKENS_PER_MESSAGE:
        return dg_store_cost_human(t->p->store, r->chan->id,
                                   dg_store_turns_state_key(&r->scope, key, sizeof key), since);
    default: *since = 0; return DG_OK; /* a discussion's whole life */
    }
}

/* Whether kind k applies to r's channel: the discussion kinds to
 * discussion channels only, the others to every managed channel. */
static int budget_applies(const turns_scope *r, dg_budget_kind k)
{
    int discussion = k == DG_BUDGET_DISCUSSION_TURNS || k == DG_BUDGET_DISCUSSION_TOKENS;
    return discussion == (r->chan->mode == DG_MODE_DISCUSSION);
}

/* The config key that set r's limit of kind k into buf: the channel's
 * channelBudgets entry when it sets that kind, else budget.<key>. */
static void budget_setting(const dg_config *cfg, const char *channel_id, dg_budget_kind k,
                           char *buf, size_t len)
{
    int own = 0;
    for (size_t i = 0; i < cfg->n_channel_budgets; i++)
        if (strcmp(cfg->channel_budgets[i].channel_id, channel_id) == 0)
            own = cfg->channel_budgets[i].b.limit[k] >= 0;
    if (own)
        snprintf(buf, len, "channelBudgets.%s.%s", channel_id, dg_budget_key(k));
    else
        snprintf(buf, len, "budget.%s", dg_budget_key(k));
}

int turns_budget_reached(dg_turns *t, turns_scope *r, int64_t now, turns_budget_hit *hit)
{
    return turns_budget_reached_of(t, r, now, 0, hit);
}

int turns_budget_reached_of(dg_turns *t, turns_scope *r, int64_t now, int tokens_only,
                            turns_budget_hit *hit)
{
    TURNS_ASSERT_WRITER(t);
    memset(hit, 0, sizeof *hit);
    if (r->chan->mode == DG_MODE_CLOSED)
        return DG_OK;
    dg_budget b;
    dg_config_budget_for(&t->p->cfg, r->chan->id, &b);
    char key[DG_SCOPE_ID_MAX + 16];
    dg_cost_filter f = {.channel_id = r->chan->id,
                        .scope = dg_store_turns_state_key(&r->scope, key, sizeof key)};
    for (int k = 1; k < DG_BUDGET_KINDS; k++) {
        if (b.limit[k] <= 0 || !budget_applies(r, (dg_budget_kind)k) ||
            (tokens_only && !turns_budget_is_tokens((dg_budget_kind)k)))
            continue;
        int64_t until = 0;
        int rc = budget_window(t, r, (dg_budget_kind)k, now, &f.since_ms, &until);
        dg_cost_totals tot;
        if (rc == DG_OK)
            rc = dg_store_cost_sum(t->p->store, &f, &tot);
        if (rc != DG_OK)
            return rc;
        int64_t used = turns_budget_is_tokens((dg_budget_kind)k) ? tot.tokens_in + tot.tokens_out
                                                                 : tot.granted;
        if (used >= b.limit[k]) {
            *hit = (turns_budget_hit){
                .kind = (dg_budget_kind)k, .used = used, .limit = b.limit[k], .until_ms = until};
            return DG_OK;
        }
    }
    return DG_OK;
}

/* "until 14:00 UTC" for a window's end, else until a resume. */
static void until_words(int64_t until_ms, char *buf, size_t len)
{
    if (!until_ms) {
        snprintf(buf, len, "until an admin resumes it");
        return;
    }
    time_t s = (time_t)(until_ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, len, until_ms % DAY_MS == 0 ? "until %Y-%m-%d 00:00 UTC" : "until %H:%M UTC",
             &tm);
}

/* A discussion that reached its budget: the initiator gets the turn and
 * is asked to wrap up (budget_discussion.md); the discussion's wrap-up
 * time is set, so it expires like one past its lifetime when nobody
 * closes it (discuss_timers.c). Writer held. */
static int discussion_wrapup(dg_turns *t, turns_scope *r, dg_turn_state *next, dg_tpl_vars *v,
                             int64_t now, int *kick)
{
    turns_chan *c = r->chan;
    dg_discussion d;
    memset(&d, 0, sizeof d);
    if (dg_discuss_lookup_locked(t->p->store, c->id, &d) != DG_DISCUSSION_ACTIVE) {
        dg_discussion_clear(&d);
        return DG_OK; /* closing already: nothing to ask */
    }
    dg_rule_ctx x;
    turns_make_ctx(t, c, &x);
    const char *uid = turns_user_of(t, c, c->initiator_pos);
    char mention[48] = "";
    if (uid)
        snprintf(mention, sizeof mention, "<@%s>", uid);
    char *where = dg_discuss_suggested_path_locked(t->p, &d);
    v->initiatorMention = mention;
    v->summaryPath = where;
    int rc = where ? dg_store_discussion_mark_wrapup(t->p->store, d.id, now) : DG_ERR_NOMEM;
    int queued = 0;
    if (rc == DG_OK && c->initiator_pos != DG_NOBODY)
        dg_rule_admin_wake(next, &x, c->initiator_pos, now);
    if (rc == DG_OK)
        rc = turns_render_and_enqueue(t, "budget_discussion.md", v, c->id, uid, now, &queued, NULL,
                                      0);
    if (queued)
        *kick = 1;
    else if (c->initiator_pos != DG_NOBODY)
        dg_rule_wake_delivered(next, c->initiator_pos);
    free(where);
    dg_discussion_clear(&d);
    return rc;
}

int turns_budget_exempt(const turns_scope *r, int pos)
{
    return r->chan->mode == DG_MODE_DISCUSSION && pos != DG_NOBODY && pos == r->chan->initiator_pos;
}

int turns_budget_trip(dg_turns *t, turns_scope *r, const turns_budget_hit *hit, int64_t now,
                      int *kick)
{
    TURNS_ASSERT_WRITER(t);
    dg_turn_state next = *turns_staged(t, r);
    next.budget = (int)hit->kind;
    next.budget_until_ms = hit->until_ms;
    next.handoff = DG_NOBODY; /* nobody is woken into a held scope */
    next.awaiting = 0;
    /* The speaker's run the budget allowed may still be under way (a
     * token budget reached by its usage, or its turn the last one
     * allowed): its answer is paid for and goes out. */
    dg_rule_ctx x;
    turns_make_ctx(t, r->chan, &x);
    int sp = next.active ? dg_rule_speaker(&next, &x) : DG_NOBODY;
    if (sp != DG_NOBODY && atomic_load(&r->run_pos) == sp) {
        next.permit = sp;
        next.permit_ms = now;
    }
    int discussion = r->chan->mode == DG_MODE_DISCUSSION;
    char used[24], limit[24], until[64], cause[300], setting[DG_SCOPE_ID_MAX + 48];
    snprintf(used, sizeof used, "%" PRId64, hit->used);
    snprintf(limit, sizeof limit, "%ld", hit->limit);
    until_words(hit->until_ms, until, sizeof until);
    budget_setting(&t->p->cfg, r->chan->id, hit->kind, setting, sizeof setting);
    snprintf(cause, sizeof cause, "budget reached: %s %s (%s is %s); held %s", used,
             dg_budget_words(hit->kind), setting, limit, until);
    dg_tpl_vars v = {.budgetWhat = dg_budget_words(hit->kind),
                     .budgetUsed = used,
                     .budgetLimit = limit,
                     .budgetKey = dg_budget_key(hit->kind),
                     .budgetSetting = setting,
                     .budgetUntil = until};
    const char *post = r->post_channel ? r->post_channel : r->chan->id;
    int rc = discussion
                 ? discussion_wrapup(t, r, &next, &v, now, kick)
                 : turns_render_and_enqueue(t, "budget.md", &v, post, NULL, now, kick, NULL, 0);
    if (rc == DG_OK)
        rc = turns_save_scope(t, r, &next, now, cause);
    if (rc == DG_OK)
        rc = turns_install(t, r, &next);
    if (rc == DG_OK) {
        char label[DG_SCOPE_LABEL_MAX];
        dg_log(t->p, OC_LOG_WARN, "turns: %s in channel %s (%s)", cause, r->chan->id,
               dg_scope_label(&r->scope, label));
    }
    return rc;
}

int turns_budget_check(dg_turns *t, turns_scope *r, int64_t now, int *kick)
{
    return turns_budget_check_of(t, r, now, 0, kick);
}

int turns_budget_check_of(dg_turns *t, turns_scope *r, int64_t now, int tokens_only, int *kick)
{
    TURNS_ASSERT_WRITER(t);
    if (turns_staged(t, r)->budget)
        return DG_OK;
    turns_budget_hit hit;
    int rc = turns_budget_reached_of(t, r, now, tokens_only, &hit);
    if (rc == DG_OK && hit.kind != DG_BUDGET_NONE)
        rc = turns_budget_trip(t, r, &hit, now, kick);
    return rc;
}

int turns_budget_holds(const dg_turn_state *st, int64_t now)
{
    return st->budget && (!st->budget_until_ms || now < st->budget_until_ms);
}

int turns_budget_per_message(const dg_turns *t, const char *channel_id)
{
    dg_budget b;
    dg_config_budget_for(&t->p->cfg, channel_id, &b);
    return b.limit[DG_BUDGET_TURNS_PER_MESSAGE] > 0 || b.limit[DG_BUDGET_TOKENS_PER_MESSAGE] > 0;
}

int turns_budget_lift_due(dg_turns *t, turns_scope *r, int64_t now)
{
    TURNS_ASSERT_WRITER(t);
    const dg_turn_state *st = turns_staged(t, r);
    if (!st->budget || !st->budget_until_ms || now < st->budget_until_ms)
        return DG_OK;
    dg_turn_state next = *st;
    char cause[160];
    snprintf(cause, sizeof cause, "budget window ended: budget.%s holds no more",
             dg_budget_key((dg_budget_kind)next.budget));
    next.budget = 0;
    next.budget_until_ms = 0;
    int rc = turns_save_scope(t, r, &next, now, cause);
    if (rc == DG_OK)
        rc = turns_install(t, r, &next);
    if (rc == DG_OK)
        dg_log(t->p, OC_LOG_INFO, "turns: %s in channel %s", cause, r->chan->id);
    return rc;
}

/* The ledger row of run_id of session s in scope r at now (no verdict);
 * its scope key is written into key, which the row borrows. */
static dg_cost_run cost_run_of(const turns_scope *r, const dg_turn_session *s, const char *run_id,
                               int64_t now, char *key, size_t key_len)
{
    return (dg_cost_run){.session_key = s->session_key,
                         .run_id = run_id,
                         .channel_id = r->chan->id,
                         .scope = dg_store_turns_state_key(&r->scope, key, key_len),
                         .agent_id = s->agent_id,
                         .at_ms = now};
}

int turns_cost_record(dg_turns *t, const turns_scope *r, const dg_turn_session *s,
                      const char *run_id, dg_cost_verdict verdict, int64_t now)
{
    TURNS_ASSERT_WRITER(t);
    char key[DG_SCOPE_ID_MAX + 16], made[48];
    if (!run_id || !*run_id) {
        /* A host without run ids: each decision is a run of its own. */
        snprintf(made, sizeof made, "dirigent-%" PRId64 "-%u", now,
                 (unsigned)atomic_fetch_add(&t->anon_runs, 1));
        run_id = made;
    }
    dg_cost_run cr = cost_run_of(r, s, run_id, now, key, sizeof key);
    cr.verdict = verdict;
    return dg_store_cost_run(t->p->store, &cr);
}

int turns_cost_human(dg_turns *t, const turns_scope *r, int64_t now)
{
    TURNS_ASSERT_WRITER(t);
    char key[DG_SCOPE_ID_MAX + 16];
    return dg_store_cost_set_human(t->p->store, r->chan->id,
                                   dg_store_turns_state_key(&r->scope, key, sizeof key), now);
}

int dg_turns_usage(dg_turns *t, const dg_turn_session *s, const char *run_id, const char *model,
                   int64_t calls, int64_t tokens_in, int64_t tokens_out)
{
    if (!turns_valid_session(s) || !run_id || !*run_id || calls < 0 || tokens_in < 0 ||
        tokens_out < 0)
        return DG_ERR_INVALID;
    if (!dg_config_agent(&t->p->cfg, s->agent_id))
        return DG_OK; /* not one of ours: nothing of its runs is counted */
    int64_t now = dg_now_ms(t->p);
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    turns_sess *e;
    int kick = 0;
    int rc = turns_session_prepare(t, s, now, &e);
    turns_scope *r = rc == DG_OK ? (e->fixed ? e->fixed : e->chan->follow) : NULL;
    /* A closed discussion too: the run that closed it (the callback) goes
     * on calling its model after the tool returned. */
    if (rc == DG_OK && r) {
        char key[DG_SCOPE_ID_MAX + 16];
        dg_cost_run cr = cost_run_of(r, s, run_id, now, key, sizeof key);
        rc = dg_store_cost_usage(t->p->store, &cr, model, calls, tokens_in, tokens_out);
        /* Tokens count at once; turns when the next one would be granted
         * (a granted run is already counted: its end is not the limit's). */
        if (rc == DG_OK && (tokens_in || tokens_out) && e->chan->mode != DG_MODE_CLOSED)
            rc = turns_budget_check_of(t, r, now, 1, &kick);
    }
    rc = turns_txn_finish(t, rc);
    if (rc == DG_OK && kick)
        dg_outbox_kick_all(t->p);
    return rc;
}
