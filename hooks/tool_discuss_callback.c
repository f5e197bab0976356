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

int dg_tool_discuss_callback(void *state, const json_t *params, const json_t *ctx, json_t **result)
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
        snprintf(err, sizeof err,
                 "summaryPath is required: the path of your summary file "
                 "relative to your workspace, e.g. plans/discussions/topic.md");
        rc = OC_ERR_INVALID;
    }
    dg_callback_result r = {0};
    if (rc == OC_OK) {
        dg_session_refs sessions;
        dg_host_sessions(p, caller.channel_id, &sessions);
        rc = dg_discuss_callback(p, &caller, path, &sessions, &r, err, sizeof err);
        dg_session_refs_release(&sessions);
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
    json_t *details =
        json_pack("{s:I,s:s,s:s,s:s,s:s}", "discussionId", (json_int_t)r.discussion_id, "channelId",
                  r.channel_id, "originChannelId", r.origin_channel_id, "summaryPath",
                  r.summary_path, "status", "closed");
    dg_callback_result_clear(&r);
    *result = details ? dg_tool_ok(text, details) : NULL;
    if (!*result) {
        *result = dg_tool_error(OC_ERR_NOMEM, "out of memory building the result");
        return OC_ERR_NOMEM;
    }
    return OC_OK;
}
