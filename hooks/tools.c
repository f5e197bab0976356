/*
 * tools.c -- registration of the plugin's tools and the helpers they share.
 */
#include "tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "register.h"
#include "json_keys.h"
#include "utf8.h"

DG_SETTLED_HANDLER(settled_channel_create, dg_tool_channel_create)
DG_SETTLED_HANDLER(settled_discuss_callback, dg_tool_discuss_callback)
DG_SETTLED_HANDLER(settled_discussion_status, dg_tool_discussion_status)
DG_SETTLED_HANDLER(settled_discussion_list, dg_tool_discussion_list)

static const oc_tool channel_create_tool = {
    .struct_size = sizeof(oc_tool),
    .name = "discord_channel_create",
    .description =
        "Create a private channel for you, the agents in `participants` and the users in "
        "`allowedUserIds`, on the platform of your work channel (a Discord text channel, or "
        "a private Slack channel). With `callbackChannelId` (your work channel) and "
        "`discussGuide` it becomes a discussion channel: the moderator posts the guide and "
        "the rules, the agents take turns, and you end it by writing a summary file in your "
        "workspace and calling discuss-callback from the discussion channel; the result "
        "then comes back to the callback channel.",
    .parameters = dg_tool_channel_create_schema,
    .execute = settled_channel_create,
};

static const oc_tool discuss_callback_tool = {
    .struct_size = sizeof(oc_tool),
    .name = "discuss-callback",
    .description =
        "End the discussion of the current discussion channel (only its initiator may). "
        "Write the summary to a file in your workspace first and pass its path, relative "
        "to the workspace. The channel is closed and the path is posted to the channel the "
        "discussion was opened from.",
    .parameters = dg_tool_discuss_callback_schema,
    .execute = settled_discuss_callback,
};

static const oc_tool discussion_status_tool = {
    .struct_size = sizeof(oc_tool),
    .name = "discussion_status",
    .description =
        "Show a discussion: status, initiator, participants, origin channel, times, whose "
        "turn it is, who passed, and the summary path once closed. Without params: the "
        "discussion of the current channel; with discussionId or channelId: one you "
        "initiated or take part in.",
    .parameters = dg_tool_discussion_status_schema,
    .execute = settled_discussion_status,
};

static const oc_tool discussion_list_tool = {
    .struct_size = sizeof(oc_tool),
    .name = "discussion_list",
    .description =
        "List the discussions you initiated or were invited to, newest first, a page at a "
        "time (limit, offset); each with its id, channel, status and summary path.",
    .parameters = dg_tool_discussion_list_schema,
    .execute = settled_discussion_list,
};

int dg_register_tools(dg_plugin *p, const oc_host_api *api)
{
    const oc_tool *tools[] = {&channel_create_tool, &discuss_callback_tool, &discussion_status_tool,
                              &discussion_list_tool};
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        int rc = api->register_tool(api->host, tools[i]);
        if (rc != OC_OK) {
            dg_log(p, OC_LOG_ERROR, "the host refused tool %s (%s)", tools[i]->name,
                   oc_status_name(rc));
            return rc;
        }
    }
    return OC_OK;
}

json_t *dg_tool_ok(const char *text, json_t *details)
{
    char *t = dg_utf8_valid_copy(text ? text : "");
    json_t *r = t ? json_pack("{s:[{s:s,s:s}],s:o}", "content", "type", "text", "text", t,
                              "details", details ? details : json_object())
                  : NULL;
    if (!t)
        json_decref(details);
    free(t);
    return r;
}

json_t *dg_tool_error(int status, const char *message)
{
    char *m = dg_utf8_valid_copy(message && *message ? message : oc_status_name(status));
    json_t *r =
        m ? json_pack("{s:{s:s,s:s}}", "error", "code", oc_status_name(status), "message", m)
          : NULL;
    free(m);
    return r;
}

static const char *ctx_str(const json_t *ctx, const char *key)
{
    const char *s = json_string_value(json_object_get(ctx, key));
    return s && *s ? s : NULL;
}

void dg_tool_caller(const json_t *ctx, dg_caller *out)
{
    memset(out, 0, sizeof *out);
    out->agent_id = ctx_str(ctx, "agentId");
    out->session_key = ctx_str(ctx, "sessionKey");
    out->session_id = ctx_str(ctx, "sessionId");
    out->workspace_dir = ctx_str(ctx, "workspaceDir");
    out->channel_id = ctx_str(ctx, "channelId");
    out->thread_id = ctx_str(ctx, "threadId");
    out->tool_call_id = ctx_str(ctx, "toolCallId");
}

int dg_tool_check_keys(const json_t *params, const char *const *allowed, char *err, size_t err_len)
{
    if (!json_is_object(params)) {
        snprintf(err, err_len, "params must be a JSON object");
        return OC_ERR_INVALID;
    }
    const char *key = dg_json_unknown_key(params, allowed);
    if (key) {
        /* The key is the model's: quoted short, so the accepted list fits. */
        size_t o = (size_t)snprintf(err, err_len, "unknown parameter '%.64s%s'; accepted: ", key,
                                    strlen(key) > 64 ? "..." : "");
        for (size_t i = 0; allowed[i] && o < err_len; i++)
            o += (size_t)snprintf(err + o, err_len - o, "%s%s", i ? ", " : "", allowed[i]);
        return OC_ERR_INVALID;
    }
    return OC_OK;
}

int dg_tool_opt_string(const json_t *params, const char *key, const char **out, char *err,
                       size_t err_len)
{
    *out = NULL;
    json_t *v = json_object_get(params, key);
    if (!v || json_is_null(v))
        return OC_OK;
    if (!json_is_string(v)) {
        snprintf(err, err_len, "%s must be a string", key);
        return OC_ERR_INVALID;
    }
    if (strlen(json_string_value(v)) != json_string_length(v)) {
        snprintf(err, err_len, "%s contains a NUL character", key);
        return OC_ERR_INVALID;
    }
    *out = json_string_value(v);
    return OC_OK;
}
