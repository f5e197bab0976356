/*
 * tool_discuss_callback.c -- `discuss-callback(summaryPath)`. Everything
 * but the path comes from the trusted context and the stored discussion.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools.h"

const char dg_tool_discuss_callback_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"summaryPath\"],"
    "\"properties\":{"
    "\"summaryPath\":{\"type\":\"string\",\"minLength\":1,"
    "\"description\":\"path of the summary file, relative to your workspace (or absolute "
    "inside it), e.g. plans/discussions/topic.md\"}"
    "}}";

static const char *const allowed_keys[] = {"summaryPath", NULL};

/*
 * The host's sessions of channel_id (sessions_list) as plain values into
 * *out; out->v is malloc'd (the caller frees it) and borrows from *list,
 * which the caller decrefs after the call. A host that answers no array
 * has no sessions to list (logged); a NULL answer makes the list
 * unavailable (the core refuses the close as out of memory).
 */
static void host_sessions(dg_plugin *p, const char *channel_id, json_t **list,
                          dg_session_refs *out)
{
    memset(out, 0, sizeof *out);
    *list = channel_id && *channel_id ? p->api->sessions_list(p->api->host, channel_id) : NULL;
    if (!*list) {
        out->unavailable = channel_id && *channel_id;
        return;
    }
    if (!json_is_array(*list)) {
        dg_log(p, OC_LOG_WARN, "discussion: host sessions_list(%s) did not return an array",
               channel_id);
        return;
    }
    size_t n = json_array_size(*list);
    dg_session_ref *v = calloc(n ? n : 1, sizeof *v);
    if (!v) {
        out->unavailable = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(*list, i);
        const char *key = json_string_value(json_object_get(e, "sessionKey"));
        const char *ch = json_string_value(json_object_get(e, "channelId"));
        if (!key || !*key || (ch && strcmp(ch, channel_id) != 0))
            continue;
        v[out->n].session_key = key;
        v[out->n].agent_id = json_string_value(json_object_get(e, "agentId"));
        out->n++;
    }
    out->v = v;
}

int dg_tool_discuss_callback(void *state, const json_t *params, const json_t *ctx,
                             json_t **result)
{
    dg_plugin *p = state;
    char err[1024] = "";
    dg_caller caller;
    dg_tool_caller(ctx, &caller);
    const char *path = NULL;
    int rc = dg_tool_check_keys(params, allowed_keys, err, sizeof err);
    if (rc == OC_OK)
        rc = dg_tool_opt_string(params, "summaryPath", &path, err, sizeof err);
    if (rc == OC_OK && !path) {
        snprintf(err, sizeof err, "summaryPath is required: the path of your summary file "
                 "relative to your workspace, e.g. plans/discussions/topic.md");
        rc = OC_ERR_INVALID;
    }
    dg_callback_result r = {0};
    if (rc == OC_OK) {
        json_t *list;
        dg_session_refs sessions;
        host_sessions(p, caller.channel_id, &list, &sessions);
        rc = dg_discuss_callback(p, &caller, path, &sessions, &r, err, sizeof err);
        free((void *)sessions.v);
        json_decref(list);
    }
    if (rc != OC_OK) {
        *result = dg_tool_error(rc, err);
        return rc;
    }
    char text[1024];
    snprintf(text, sizeof text,
             "Discussion %lld closed. The summary path %s was posted to <#%s>; continue "
             "the original task there. This channel is now archive only.",
             (long long)r.discussion_id, r.summary_path, r.origin_channel_id);
    json_t *details = json_pack("{s:I,s:s,s:s,s:s,s:s}", "discussionId",
                                (json_int_t)r.discussion_id, "channelId", r.channel_id,
                                "originChannelId", r.origin_channel_id, "summaryPath",
                                r.summary_path, "status", "closed");
    dg_callback_result_clear(&r);
    *result = details ? dg_tool_ok(text, details) : NULL;
    if (!*result) {
        *result = dg_tool_error(OC_ERR_NOMEM, "out of memory building the result");
        return OC_ERR_NOMEM;
    }
    return OC_OK;
}
