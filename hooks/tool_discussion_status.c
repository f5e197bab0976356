/*
 * tool_discussion_status.c -- `discussion_status` and
 * the JSON shape of a discussion both reading tools share.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "discuss_status.h"
#include "tools.h"
#include "snowflake.h"

const char dg_tool_discussion_status_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,"
    "\"properties\":{"
    "\"discussionId\":{\"type\":\"integer\",\"minimum\":1,"
    "\"description\":\"id of a discussion you initiated or take part in (discussion_list "
    "shows them); leave out for the discussion of the current channel\"},"
    "\"channelId\":{\"type\":\"string\",\"pattern\":\"^([0-9]{1,20}|[CGD][A-Z0-9]{2,20})$\","
    "\"description\":\"channel id (Discord or Slack) of such a discussion, instead of "
    "discussionId\"}"
    "}}";

static const char *const allowed_keys[] = {"discussionId", "channelId", NULL};

/* ms since the epoch as ISO 8601 UTC into buf. */
static const char *iso(int64_t ms, char *buf, size_t len)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&s, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, len, "?");
    return buf;
}

static json_t *str_array(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

json_t *dg_tool_discussion_json(const dg_discussion_info *i, const char *caller_agent)
{
    const dg_discussion *d = &i->d;
    char buf[32];
    json_t *o = json_object();
    if (!o)
        return NULL;
    int closed = d->status == DG_DISCUSSION_CLOSED;
    json_object_set_new(o, "discussionId", json_integer(d->id));
    json_object_set_new(o, "channelId", json_string(d->discussion_channel_id));
    json_object_set_new(o, "name", i->channel_name ? json_string(i->channel_name) : json_null());
    json_object_set_new(o, "status",
                        json_string(closed ? d->end_status : dg_discussion_status_name(d->status)));
    json_object_set_new(o, "initiator", json_string(d->initiator_agent_id));
    json_object_set_new(o, "participants", str_array(d->participants, d->n_participants));
    if (caller_agent)
        json_object_set_new(o, "role",
                            json_string(strcmp(caller_agent, d->initiator_agent_id) == 0
                                            ? "initiator"
                                        : dg_discussion_has_member(d, caller_agent) ? "participant"
                                                                                    : "none"));
    json_object_set_new(o, "originChannelId", json_string(d->origin_channel_id));
    json_object_set_new(o, "createdAt", json_string(iso(d->created_at_ms, buf, sizeof buf)));
    json_object_set_new(o, "closedAt",
                        closed ? json_string(iso(d->completed_at_ms, buf, sizeof buf))
                               : json_null());
    json_object_set_new(o, "summaryPath",
                        closed && d->summary_path ? json_string(d->summary_path) : json_null());
    const dg_turn_view *t = &i->turn;
    json_t *passed = json_array();
    for (size_t k = 0; passed && k < t->n_members && k < DG_TURN_MAX_MEMBERS; k++)
        if (t->state.silent & t->present & ((uint64_t)1 << k))
            json_array_append_new(passed, json_string(t->members[k]));
    const char *speaker = dg_turn_view_member(t, t->speaker);
    json_object_set_new(o, "turn",
                        json_pack("{s:s,s:o,s:o,s:o,s:I}", "state", t->condition, "speaker",
                                  speaker ? json_string(speaker) : json_null(), "order",
                                  str_array(t->members, t->n_members), "passed",
                                  passed ? passed : json_array(), "agentMessages",
                                  (json_int_t)t->state.agent_msgs));
    /* What it cost so far: runs and model calls as the host reported them,
     * the runs the turn manager kept from a model, tokens, and its age (or
     * how long it lived, once closed). */
    const dg_cost_totals *c = &i->cost;
    int64_t end = closed && d->completed_at_ms ? d->completed_at_ms : i->now_ms;
    json_object_set_new(
        o, "cost",
        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "runs", (json_int_t)c->runs, "modelCalls",
                  (json_int_t)c->model_calls, "granted", (json_int_t)c->granted, "avoided",
                  (json_int_t)(c->claimed + c->swapped), "tokensIn", (json_int_t)c->tokens_in,
                  "tokensOut", (json_int_t)c->tokens_out, "wallSec",
                  (json_int_t)(end > d->created_at_ms ? (end - d->created_at_ms) / 1000 : 0)));
    return o;
}

int dg_tool_discussion_status(void *state, const json_t *params, const json_t *ctx, json_t **result)
{
    dg_plugin *p = state;
    char err[1024] = "";
    dg_caller caller;
    dg_tool_caller(ctx, &caller);
    const char *channel = NULL;
    int64_t id = 0;
    int rc = dg_tool_check_keys(params, allowed_keys, err, sizeof err);
    json_t *jid = rc == OC_OK ? json_object_get(params, "discussionId") : NULL;
    if (jid && !json_is_null(jid)) {
        if (!json_is_integer(jid) || json_integer_value(jid) < 1) {
            snprintf(err, sizeof err,
                     "discussionId must be a positive integer (the id "
                     "discussion_list or discord_channel_create gave you)");
            rc = OC_ERR_INVALID;
        } else {
            id = json_integer_value(jid);
        }
    }
    if (rc == OC_OK)
        rc = dg_tool_opt_string(params, "channelId", &channel, err, sizeof err);
    if (rc == OC_OK && channel && !dg_snowflake_valid(channel) &&
        dg_platform_of_channel(channel) != DG_PLATFORM_SLACK) {
        snprintf(err, sizeof err,
                 "channelId must be a Discord channel id (1-20 digits) or a Slack one (C or G "
                 "and 2-20 upper-case letters or digits)");
        rc = OC_ERR_INVALID;
    }
    if (rc == OC_OK && channel && id) {
        snprintf(err, sizeof err, "pass discussionId or channelId, not both");
        rc = OC_ERR_INVALID;
    }
    dg_discussion_info info;
    memset(&info, 0, sizeof info);
    if (rc == OC_OK)
        rc = dg_discuss_status(p, &caller, id, channel, &info, err, sizeof err);
    if (rc != OC_OK) {
        *result = dg_tool_error(rc, err);
        return rc;
    }
    const dg_discussion *d = &info.d;
    const char *speaker = dg_turn_view_member(&info.turn, info.turn.speaker);
    char text[1024];
    if (d->status == DG_DISCUSSION_CLOSED)
        snprintf(text, sizeof text,
                 "Discussion %lld in <#%s> is closed (%s); summary: %s. "
                 "Its result went to <#%s>.",
                 (long long)d->id, d->discussion_channel_id, d->end_status,
                 d->summary_path ? d->summary_path : "none", d->origin_channel_id);
    else
        snprintf(text, sizeof text,
                 "Discussion %lld in <#%s> is active: initiator %s, %zu "
                 "participant(s), turn %s%s%s, %lld agent message(s) since the last human one.",
                 (long long)d->id, d->discussion_channel_id, d->initiator_agent_id,
                 d->n_participants, info.turn.condition, speaker ? ", speaker " : "",
                 speaker ? speaker : "", (long long)info.turn.state.agent_msgs);
    json_t *details = dg_tool_discussion_json(&info, caller.agent_id);
    dg_discussion_info_clear(&info);
    *result = details ? dg_tool_ok(text, details) : NULL;
    if (!*result) {
        *result = dg_tool_error(OC_ERR_NOMEM, "out of memory building the result");
        return OC_ERR_NOMEM;
    }
    return OC_OK;
}
