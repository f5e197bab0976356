/*
 * tools.h -- the plugin's tools (handlers like hooks: decode and validate
 * the JSON params, call the core, encode the result in the ABI's shapes).
 */
#ifndef DG_TOOLS_H
#define DG_TOOLS_H

#include <jansson.h>
#include "dirigent.h"
#include "discuss.h"
#include "must_check.h"

/* The tools' execute functions (oc_tool_fn). state is the dg_plugin.
 * Any host thread, several at once. */
int dg_tool_channel_create(void *state, const json_t *params, const json_t *ctx, json_t **result);
int dg_tool_discuss_callback(void *state, const json_t *params, const json_t *ctx, json_t **result);
int dg_tool_discussion_status(void *state, const json_t *params, const json_t *ctx,
                              json_t **result);
int dg_tool_discussion_list(void *state, const json_t *params, const json_t *ctx, json_t **result);

/* JSON Schemas (text) of the tools' params; static strings. */
extern const char dg_tool_channel_create_schema[];
extern const char dg_tool_discuss_callback_schema[];
extern const char dg_tool_discussion_status_schema[];
extern const char dg_tool_discussion_list_schema[];

/* One discussion as the reading tools show it (discussionId, channelId,
 * name, status, initiator, participants, role of caller_agent (may be
 * NULL: left out), originChannelId, createdAt, closedAt, summaryPath, turn
 * {state, speaker, order, passed, agentMessages}). New reference; NULL when
 * out of memory. */
struct dg_discussion_info;
json_t *dg_tool_discussion_json(const struct dg_discussion_info *i, const char *caller_agent);

/* Success result {"content":[{"type":"text","text":text}],"details":details};
 * steals details. New reference (caller decrefs); NULL when out of memory. */
json_t *dg_tool_ok(const char *text, json_t *details);

/* Error result {"error":{"code":oc_status_name(status),"message":message}}.
 * New reference (caller decrefs); NULL when out of memory. */
json_t *dg_tool_error(int status, const char *message);

/* The trusted tool context as borrowed strings (valid while ctx lives);
 * fields that are absent or not strings are NULL. */
void dg_tool_caller(const json_t *ctx, dg_caller *out);

/*
 * Refuse keys of params that are not in `allowed` (NULL-terminated):
 * OC_ERR_INVALID with a sentence naming the key and the accepted ones, or
 * OC_OK. Also refuses params that are not an object.
 */
int dg_tool_check_keys(const json_t *params, const char *const *allowed, char *err,
                       size_t err_len) DG_MUST_CHECK;

/*
 * Optional string param `key`: absent or JSON null -> *out NULL, OC_OK; a
 * string without NUL bytes -> *out borrowed, OC_OK; anything else ->
 * OC_ERR_INVALID naming the key.
 */
int dg_tool_opt_string(const json_t *params, const char *key, const char **out, char *err,
                       size_t err_len) DG_MUST_CHECK;

#endif
