/*
 * discuss_timers.c -- the sweeper's discussion timers: the quiet-time
 * reminder, the lifetime wrap-up request and the expiry.
 */
#include "discuss_int.h"
#include "discuss_archive.h"

/* Due discussions handled per sweep pass (the rest come next pass). */
#define TIMER_BATCH 16

typedef enum timer_action { TIMER_NONE, TIMER_REMIND, TIMER_WRAPUP, TIMER_EXPIRE } timer_action;

static timer_action timer_due(const dg_discussion *d, int64_t now, int64_t rem, int64_t life)
{
    int64_t activity = d->last_activity_ms ? d->last_activity_ms : d->created_at_ms;
    if (d->wrapup_at_ms && d->wrapup_at_ms + (life > 0 ? life : DG_DISCUSS_WRAPUP_GRACE_MS) <= now)
        return TIMER_EXPIRE;
    if (life > 0 && !d->wrapup_at_ms && d->created_at_ms + life <= now)
        return TIMER_WRAPUP;
    if (rem > 0 && activity + rem <= now && d->reminded_for_ms != activity)
        return TIMER_REMIND;
    return TIMER_NONE;
}

/* The text an expired discussion's result message shows for its summary. */
#define EXPIRED_SUMMARY "none (the discussion expired before the initiator wrote a summary)"

/* One due discussion in its own transaction: the state change and the
 * message it owes are committed together, so each happens exactly once
 * (a restart finds the stored state and does not repeat it). Returns 1
 * when a message was queued. */
static int timer_one(dg_plugin *p, const char *channel, int64_t now, int64_t rem, int64_t life)
{
    dg_store *st = p->store;
    if (dg_store_begin(st) != DG_OK)
        return 0;
    dg_discussion d;
    int rc = dg_store_discussion_by_channel(st, channel, &d);
    timer_action act = rc == DG_OK && d.status == DG_DISCUSSION_ACTIVE
                           ? timer_due(&d, now, rem, life)
                           : TIMER_NONE;
    if (act == TIMER_NONE) {
        if (rc == DG_OK || rc == DG_ERR_NOT_FOUND)
            dg_store_commit(st);
        else
            dg_store_rollback(st);
        dg_discussion_clear(&d);
        return 0;
    }
    const dg_agent_cfg *ini = dg_config_agent(&p->cfg, d.initiator_agent_id);
    dg_platform pf = dg_platform_of_channel(d.origin_channel_id);
    const char *uid = dg_config_agent_user(ini, pf);
    const char *mention[1] = {uid};
    char *im = discuss_mentions_of(&p->cfg, pf, &d.initiator_agent_id, 1);
    char *dref = discuss_channel_ref(d.discussion_channel_id);
    char *oref = discuss_channel_ref(d.origin_channel_id);
    char *text = NULL, *where = NULL;
    int64_t activity = d.last_activity_ms ? d.last_activity_ms : d.created_at_ms;
    if (act != TIMER_EXPIRE)
        where = dg_discuss_suggested_path_locked(p, &d);
    if (im && dref && oref && (act == TIMER_EXPIRE || where)) {
        dg_tpl_vars v = {.discussGuide = d.discuss_guide,
                         .initiatorMention = im,
                         .discussionChannel = dref,
                         .originChannel = oref,
                         .status = act == TIMER_EXPIRE ? "expired" : "active",
                         .summaryPath = act == TIMER_EXPIRE ? EXPIRED_SUMMARY : where};
        text = dg_templates_render(p->templates,
                                   act == TIMER_REMIND   ? "timeout.md"
                                   : act == TIMER_WRAPUP ? "wrapup.md"
                                                         : "result.md",
                                   &v);
    }
    rc = text ? DG_OK : DG_ERR_NOMEM;
    if (act == TIMER_EXPIRE) {
        if (rc == DG_OK)
            rc = dg_store_discussion_close_as(st, d.id, NULL, now, "expired");
        if (rc == DG_OK)
            rc = dg_turns_close_channel(p->turns, d.discussion_channel_id, now);
        if (rc == DG_OK)
            rc =
                dg_turns_wake_with_result(p->turns, d.origin_channel_id, d.initiator_agent_id, now);
        if (rc == DG_OK)
            rc = dg_outbox_enqueue(st, d.origin_channel_id, text, mention, uid ? 1 : 0, now);
        if (rc == DG_OK)
            rc = dg_discuss_archive_locked(p, &d, "expired", NULL, now);
    } else {
        /* The wrap-up request also answers the current quiet period. */
        if (rc == DG_OK && act == TIMER_WRAPUP)
            rc = dg_store_discussion_mark_wrapup(st, d.id, now);
        if (rc == DG_OK)
            rc = dg_store_discussion_mark_reminded(st, d.id, activity);
        if (rc == DG_OK)
            rc = dg_turns_wake_with_result(p->turns, d.discussion_channel_id, d.initiator_agent_id,
                                           now);
        if (rc == DG_OK)
            rc = dg_outbox_enqueue(st, d.discussion_channel_id, text, mention, uid ? 1 : 0, now);
    }
    rc = dg_store_end(st, rc);
    static const char *const what[] = {"", "quiet-time reminder (discussion.reminderAfterSec)",
                                       "wrap-up request (discussion.maxLifetimeSec)",
                                       "expiry after the wrap-up request"};
    if (rc == DG_OK && act == TIMER_EXPIRE)
        discuss_archive_closed(p, d.discussion_channel_id);
    if (rc == DG_OK)
        dg_log(p, OC_LOG_INFO, "discussion %lld in %s: %s%s", (long long)d.id,
               d.discussion_channel_id, what[act],
               act == TIMER_EXPIRE ? ": closed with status expired, no summary; the result "
                                     "went to the origin channel"
                                   : ": queued to the initiator, who has the turn");
    else
        dg_log(p, OC_LOG_ERROR, "discussion %lld in %s: the %s failed (%s); retried shortly",
               (long long)d.id, d.discussion_channel_id, what[act], dg_status_name(rc));
    free(im);
    free(dref);
    free(oref);
    free(text);
    free(where);
    dg_discussion_clear(&d);
    return rc == DG_OK;
}

void dg_discuss_sweep(dg_plugin *p)
{
    if (p->store)
        discuss_undo_unfinished(p);
    int64_t rem = (int64_t)p->cfg.reminder_after_sec * 1000;
    int64_t life = (int64_t)p->cfg.max_lifetime_sec * 1000;
    dg_budget b;
    dg_config_budget_for(&p->cfg, NULL, &b);
    int budgets =
        b.limit[DG_BUDGET_DISCUSSION_TURNS] > 0 || b.limit[DG_BUDGET_DISCUSSION_TOKENS] > 0;
    if ((rem <= 0 && life <= 0 && !budgets) || !p->store || !p->templates)
        return;
    int64_t now = dg_now_ms(p);
    char **ch = NULL;
    size_t n = 0;
    if (dg_store_begin(p->store) != DG_OK)
        return;
    int rc = dg_store_discussion_timers_due(p->store, now, rem, life, TIMER_BATCH, &ch, &n);
    dg_store_end(p->store, rc);
    int kick = 0;
    for (size_t i = 0; i < n; i++) {
        kick |= timer_one(p, ch[i], now, rem, life);
        free(ch[i]);
    }
    free(ch);
    if (kick)
        dg_outbox_kick_all(p);
}
