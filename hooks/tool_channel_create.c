/*
 * tool_channel_create.c -- `discord_channel_create`: decode the params,
 * let the discussion core validate and act, encode the result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools.h"

#define SNOWFLAKE "\"pattern\":\"^[1-9][0-9]{0,19}$\""
/* A user or channel id of either platform (Discord's snowflake, Slack's
 * U... / C... id). */
#define ANY_USER "\"pattern\":\"^([1-9][0-9]{0,19}|[UW][A-Z0-9]{2,20})$\""
#define ANY_CHANNEL "\"pattern\":\"^([1-9][0-9]{0,19}|[CGD][A-Z0-9]{2,20})$\""

const char dg_tool_channel_create_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"name\"],"
    "\"properties\":{"
    "\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":100,"
    "\"description\":\"channel name: lower case, no spaces, 1-100 characters\"},"
    "\"participants\":{\"type\":\"array\",\"maxItems\":50,\"items\":{\"type\":\"string\","
    "\"minLength\":1},"
    "\"description\":\"agent ids (from the plugin's agents) to invite\"},"
    "\"allowedUserIds\":{\"type\":\"array\",\"maxItems\":50,\"items\":{\"type\":"
    "\"string\"," ANY_USER "},"
    "\"description\":\"user ids of extra (human) members (Discord snowflakes, Slack U...)\"},"
    "\"topic\":{\"type\":\"string\",\"maxLength\":1024},"
    "\"parentId\":{\"type\":\"string\"," SNOWFLAKE ",\"description\":\"Discord category id\"},"
    "\"callbackChannelId\":{\"type\":\"string\"," ANY_CHANNEL ","
    "\"description\":\"your work channel: makes this a discussion channel whose result is "
    "reported there\"},"
    "\"discussGuide\":{\"type\":\"string\",\"minLength\":1,"
    "\"description\":\"required with callbackChannelId: what to discuss, the conclusion "
    "wanted, its limits\"}"
    "}}";

/* Bound on each member list: a message may ping at most 100 users and the
 * kickoff pings the initiator and every participant. */
#define DG_TOOL_MAX_MEMBERS 50

static const char *const allowed_keys[] = {
    "name",     "participants",      "allowedUserIds", "topic",
    "parentId", "callbackChannelId", "discussGuide",   NULL,
};

/* An optional array of non-empty strings into a borrowed vector (malloc'd
 * array of borrowed pointers, caller frees the array). */
static int string_array(const json_t *params, const char *key, const char ***out, size_t *n,
                        char *err, size_t err_len)
{
    *out = NULL;
    *n = 0;
    json_t *v = json_object_get(params, key);
    if (!v || json_is_null(v))
        return OC_OK;
    if (!json_is_array(v)) {
        snprintf(err, err_len, "%s must be an array of strings", key);
        return OC_ERR_INVALID;
    }
    size_t len = json_array_size(v);
    if (len > DG_TOOL_MAX_MEMBERS) {
        snprintf(err, err_len, "%s has %zu entries; at most %d are accepted", key, len,
                 DG_TOOL_MAX_MEMBERS);
        return OC_ERR_INVALID;
    }
    const char **arr = calloc(len ? len : 1, sizeof *arr);
    if (!arr) {
        snprintf(err, err_len, "out of memory");
        return OC_ERR_NOMEM;
    }
    for (size_t i = 0; i < len; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_string(e) || json_string_length(e) == 0 ||
            strlen(json_string_value(e)) != json_string_length(e)) {
            snprintf(err, err_len, "%s[%zu] must be a non-empty string", key, i);
            free(arr);
            return OC_ERR_INVALID;
        }
        arr[i] = json_string_value(e);
    }
    *out = arr;
    *n = len;
    return OC_OK;
}

static int decode(const json_t *params, dg_channel_request *r, char *err, size_t err_len)
{
    memset(r, 0, sizeof *r);
    int rc = dg_tool_check_keys(params, allowed_keys, err, err_len);
    if (rc == OC_OK && !json_is_string(json_object_get(params, "name"))) {
        snprintf(err, err_len,
                 "name is required and must be a string: the channel name "
                 "(lower case, no spaces), e.g. \"design-review\"");
        rc = OC_ERR_INVALID;
    }
    if (rc == OC_OK)
        rc = dg_tool_opt_string(params, "name", &r->name, err, err_len);
    if (rc == OC_OK)
        rc = dg_tool_opt_string(params, "topic", &r->topic, err, err_len);
    if (rc == OC_OK)
        rc = dg_tool_opt_string(params, "parentId", &r->parent_id, err, err_len);
    if (rc == OC_OK)
        rc = dg_tool_opt_string(params, "callbackChannelId", &r->callback_channel_id, err, err_len);
    if (rc == OC_OK)
        rc = dg_tool_opt_string(params, "discussGuide", &r->discuss_guide, err, err_len);
    const char **parts = NULL, **users = NULL;
    if (rc == OC_OK)
        rc = string_array(params, "participants", &parts, &r->n_participants, err, err_len);
    if (rc == OC_OK)
        rc = string_array(params, "allowedUserIds", &users, &r->n_allowed_user_ids, err, err_len);
    r->participants = parts;
    r->allowed_user_ids = users;
    return rc;
}

static void release(dg_channel_request *r)
{
    free((void *)r->participants);
    free((void *)r->allowed_user_ids);
}

int dg_tool_channel_create(void *state, const json_t *params, const json_t *ctx, json_t **result)
{
    dg_plugin *p = state;
    char err[1024] = "";
    dg_channel_request req;
    dg_caller caller;
    dg_tool_caller(ctx, &caller);
    int rc = decode(params, &req, err, sizeof err);
    dg_channel_created made = {0};
    if (rc == OC_OK)
        rc = dg_discuss_create_channel(p, &caller, &req, &made, err, sizeof err);
    release(&req);
    if (rc != OC_OK) {
        *result = dg_tool_error(rc, err);
        return rc;
    }
    char text[1024];
    json_t *details;
    if (made.is_discussion) {
        snprintf(text, sizeof text,
                 "Discussion channel <#%s> created (discussion %lld). The moderator posts the "
                 "goal and the rules there and the agents take turns. When the goal is "
                 "reached, write a summary file in your workspace and call discuss-callback "
                 "with its path from inside <#%s>.",
                 made.channel_id, (long long)made.discussion_id, made.channel_id);
        details = json_pack("{s:s,s:s,s:I}", "channelId", made.channel_id, "mode", "discussion",
                            "discussionId", (json_int_t)made.discussion_id);
    } else {
        snprintf(text, sizeof text, "Private channel <#%s> created.", made.channel_id);
        details = json_pack("{s:s,s:s}", "channelId", made.channel_id, "mode", "plain");
    }
    dg_channel_created_clear(&made);
    *result = details ? dg_tool_ok(text, details) : NULL;
    if (!*result) {
        *result = dg_tool_error(OC_ERR_NOMEM, "out of memory building the result");
        return OC_ERR_NOMEM;
    }
    return OC_OK;
}
