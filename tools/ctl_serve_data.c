/*
 * ctl_serve_data.c -- the status page's snapshot of a store as JSON
 * (ctl_serve.h), read through the store's typed functions only; the parts
 * from the cost ledger are ctl_serve_cost.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_serve.h"
#include "ctl_text.h"
#include "discuss_status.h"
#include "openclaw/plugin.h"
#include "store_discuss_index.h"
#include "store_operator.h"
#include "store_outbox.h"
#include "store_transitions.h"
#include "store_turns.h"
#include "turn_view.h"

/* The page shows at most this many discussions (newest first) and rows. */
#define DISCUSSIONS_MAX 50
#define OUTBOX_ROWS 20

static json_t *iso_json(int64_t ms)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    char buf[32];
    if (ms <= 0 || !gmtime_r(&s, &tm) || !strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
        return json_null();
    return json_string(buf);
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *order_json(const dg_turn_view *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->n_members; i++)
        json_array_append_new(a, json_string(v->members[i]));
    return a;
}

static json_t *passed_json(const dg_turn_view *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->n_members && i < DG_TURN_MAX_MEMBERS; i++)
        if (v->state.silent & ((uint64_t)1 << i))
            json_array_append_new(a, json_string(v->members[i]));
    return a;
}

static int scopes_json(dg_store *st, const dg_config *cfg, int64_t now, json_t *out)
{
    dg_scope *v = NULL;
    size_t n = 0;
    int rc = dg_store_turns_scopes(st, 0, &v, &n);
    for (size_t i = 0; i < n && rc == OC_OK; i++) {
        dg_turn_view tv;
        if ((rc = dg_turn_view_load(st, NULL, &v[i], now, &tv)) != OC_OK)
            break;
        dg_ctl_text_fix_view(&tv);
        char name[160];
        if (v[i].kind == DG_SCOPE_THREAD)
            snprintf(name, sizeof name, "thread:%s", v[i].root);
        else
            snprintf(name, sizeof name, "conversation");
        const char *ch = dg_scope_channel(&v[i]);
        json_t *budget = dg_serve_scope_budget(st, cfg, &v[i], name, &tv, now, &rc);
        if (budget)
            json_array_append_new(
                out, json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:I,s:o,s:o}", "channelId", ch, "scope",
                               name, "state", tv.condition, "order", order_json(&tv), "speaker",
                               str_or_null(dg_turn_view_member(&tv, tv.speaker)), "passed",
                               passed_json(&tv), "agentMessages", (json_int_t)tv.state.agent_msgs,
                               "lastChange", iso_json(tv.state.last_change_ms), "budget", budget));
        dg_turn_view_clear(&tv);
    }
    free(v);
    return rc;
}

static json_t *timeline_json(dg_store *st, const dg_discussion *d, int *rc)
{
    json_t *a = json_array();
    char what[256];
    snprintf(what, sizeof what, "opened by %s", d->initiator_agent_id);
    json_array_append_new(a,
                          json_pack("{s:o,s:s}", "at", iso_json(d->created_at_ms), "what", what));
    dg_transition *t = NULL;
    size_t n = 0;
    *rc =
        dg_store_transitions_list(st, d->discussion_channel_id, NULL, DG_TRANSITIONS_KEEP, &t, &n);
    dg_ctl_text_fix_transitions(t, n);
    for (size_t i = n; i-- > 0 && *rc == OC_OK;) /* newest first: oldest first here */
        json_array_append_new(a, json_pack("{s:o,s:s,s:o,s:o,s:s}", "at", iso_json(t[i].at_ms),
                                           "what", t[i].cause, "speakerBefore",
                                           str_or_null(t[i].speaker_before), "speakerAfter",
                                           str_or_null(t[i].speaker_after), "state", t[i].state));
    dg_transitions_free(t, n);
    if (d->status == DG_DISCUSSION_CLOSED) {
        snprintf(what, sizeof what, "closed: %s", d->end_status[0] ? d->end_status : "closed");
        json_array_append_new(
            a, json_pack("{s:o,s:s}", "at", iso_json(d->completed_at_ms), "what", what));
    }
    return a;
}

static int discussions_json(dg_store *st, int64_t now, json_t *out, int *more)
{
    char **ch = NULL;
    size_t n = 0;
    int rc = dg_store_discussion_list(st, NULL, 0, 0, DISCUSSIONS_MAX, &ch, &n, more);
    for (size_t i = 0; i < n; i++) {
        dg_discussion_info info;
        if (rc == OC_OK &&
            (rc = dg_discussion_info_load_locked(st, NULL, ch[i], now, &info)) == OC_OK) {
            dg_ctl_text_fix_discussion(&info);
            const dg_discussion *d = &info.d;
            json_t *parts = json_array();
            for (size_t k = 0; k < d->n_participants; k++)
                json_array_append_new(parts, json_string(d->participants[k]));
            json_t *tl = timeline_json(st, d, &rc);
            json_array_append_new(
                out,
                json_pack("{s:I,s:s,s:o,s:s,s:s,s:o,s:s,s:o,s:o,s:o,s:s,s:o,s:o,s:o}",
                          "discussionId", (json_int_t)d->id, "channelId", d->discussion_channel_id,
                          "name", str_or_null(info.channel_name), "status",
                          d->status == DG_DISCUSSION_CLOSED ? d->end_status : "active", "initiator",
                          d->initiator_agent_id, "participants", parts, "originChannelId",
                          d->origin_channel_id, "createdAt", iso_json(d->created_at_ms), "closedAt",
                          iso_json(d->completed_at_ms), "summaryPath", str_or_null(d->summary_path),
                          "turn", info.turn.condition, "speaker",
                          str_or_null(dg_turn_view_member(&info.turn, info.turn.speaker)), "order",
                          order_json(&info.turn), "timeline", tl));
            dg_discussion_info_clear(&info);
        }
        free(ch[i]);
    }
    free(ch);
    return rc;
}

static int outbox_json(dg_store *st, int64_t now, json_t **out)
{
    dg_outbox_summary sum;
    dg_outbox_row *pend = NULL, *fail = NULL;
    size_t np = 0, nf = 0;
    int rc = dg_store_outbox_summary(st, &sum);
    if (rc == OC_OK)
        rc = dg_store_outbox_rows_in(st, DG_OUTBOX_PENDING, OUTBOX_ROWS, &pend, &np);
    if (rc == OC_OK)
        rc = dg_store_outbox_rows_in(st, DG_OUTBOX_FAILED, OUTBOX_ROWS, &fail, &nf);
    if (rc == OC_OK) {
        dg_ctl_text_fix_outbox_rows(pend, np);
        dg_ctl_text_fix_outbox_rows(fail, nf);
        json_t *p = json_array(), *f = json_array();
        for (size_t i = 0; i < np; i++)
            json_array_append_new(p, json_pack("{s:I,s:s,s:i,s:o}", "id", (json_int_t)pend[i].id,
                                               "channelId", pend[i].channel_id, "attempts",
                                               pend[i].attempts, "createdAt",
                                               iso_json(pend[i].created_at_ms)));
        for (size_t i = 0; i < nf; i++)
            json_array_append_new(f, json_pack("{s:I,s:s,s:i,s:o,s:o}", "id",
                                               (json_int_t)fail[i].id, "channelId",
                                               fail[i].channel_id, "attempts", fail[i].attempts,
                                               "failedAt", iso_json(fail[i].done_at_ms), "reason",
                                               str_or_null(fail[i].last_error)));
        int64_t age = sum.oldest_pending_ms ? (now - sum.oldest_pending_ms) / 1000 : 0;
        *out = json_pack("{s:i,s:i,s:i,s:o,s:o,s:o}", "pending", (int)sum.pending, "sent",
                         (int)sum.sent, "failed", (int)sum.failed, "oldestPendingAgeSec",
                         sum.pending ? json_integer(age) : json_null(), "pendingRows", p,
                         "failedRows", f);
    }
    dg_outbox_rows_free(pend, np);
    dg_outbox_rows_free(fail, nf);
    return rc;
}

json_t *dg_serve_snapshot_store(dg_store *st, const char *where, const dg_config *cfg,
                                int64_t now_ms, char *err, size_t err_len)
{
    json_t *scopes = json_array(), *discs = json_array(), *hours = json_array(), *outbox = NULL,
           *cost = NULL;
    int more = 0;
    const char *what = "reading the scopes";
    int rc = scopes_json(st, cfg, now_ms, scopes);
    if (rc == OC_OK &&
        (what = "reading the discussions", rc = discussions_json(st, now_ms, discs, &more)) ==
            OC_OK &&
        (what = "reading the runs per hour", rc = dg_serve_hours_json(st, now_ms, hours)) ==
            OC_OK &&
        (what = "reading the cost ledger", cost = dg_serve_cost_json(st, cfg, now_ms, &rc)))
        what = "reading the outbox", rc = outbox_json(st, now_ms, &outbox);
    if (rc != OC_OK) {
        json_decref(cost);
        snprintf(err, err_len,
                 "%s failed (%s: %s); the database may be busy or damaged, the "
                 "page tries again",
                 what, oc_status_name(rc), dg_store_errmsg(st));
        json_decref(scopes);
        json_decref(discs);
        json_decref(hours);
        return NULL;
    }
    return json_pack("{s:b,s:s,s:i,s:o,s:o,s:o,s:o,s:b,s:o,s:o,s:o}", "ok", 1, "store", where,
                     "schemaVersion", dg_store_schema_version(), "generatedAt", iso_json(now_ms),
                     "scopes", scopes, "budget", dg_serve_budget_summary(cfg), "discussions", discs,
                     "moreDiscussions", more, "hours", hours, "cost", cost, "outbox", outbox);
}

json_t *dg_serve_snapshot(const char *path, const dg_config *cfg, int64_t now_ms)
{
    char err[512] = "";
    dg_store *st = NULL;
    json_t *snap = NULL;
    if (dg_store_open_readonly(path, &st, err, sizeof err) == OC_OK) {
        const char *where = dg_store_is_url(path) ? dg_store_where(st) : path;
        if (dg_store_begin_read(st) != OC_OK) {
            snprintf(err, sizeof err, "cannot read %s (%s)", where, dg_store_errmsg(st));
        } else {
            snap = dg_serve_snapshot_store(st, where, cfg, now_ms, err, sizeof err);
            dg_store_rollback(st);
        }
        dg_store_close(st);
    }
    if (!snap)
        snap = json_pack("{s:b,s:s,s:o}", "ok", 0, "error", err[0] ? err : "out of memory",
                         "generatedAt", iso_json(now_ms));
    return snap;
}

void dg_serve_hours_of(const json_t *snap, int64_t now_ms, dg_serve_hour *h)
{
    int64_t first = now_ms / 3600000 - (DG_SERVE_HOURS - 1);
    for (size_t i = 0; i < DG_SERVE_HOURS; i++)
        h[i] = (dg_serve_hour){.hour = first + (int64_t)i};
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(snap, "hours"), i, o) {
        int64_t k = json_integer_value(json_object_get(o, "hour")) - first;
        if (k >= 0 && k < DG_SERVE_HOURS) {
            h[k].made = (long)json_integer_value(json_object_get(o, "made"));
            h[k].avoided = (long)json_integer_value(json_object_get(o, "avoided"));
        }
    }
}
