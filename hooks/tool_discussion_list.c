/*
 * tool_discussion_list.c -- `discussion_list`: the
 * caller's own discussions, newest first, a page at a time.
 */
#include <stdio.h>
#include <string.h>

#include "discuss_status.h"
#include "tools.h"

#define LIST_DEFAULT 10
#define LIST_MAX 50

const char dg_tool_discussion_list_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,"
    "\"properties\":{"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":50,\"default\":10,"
    "\"description\":\"discussions per page\"},"
    "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"default\":0,"
    "\"description\":\"how many of the newest to skip: the nextOffset of the previous page\"}"
    "}}";

static const char *const allowed_keys[] = {"limit", "offset", NULL};

static int int_param(const json_t *params, const char *key, long def, long min, long max, long *out,
                     char *err, size_t err_len)
{
    json_t *v = json_object_get(params, key);
    *out = def;
    if (!v || json_is_null(v))
        return OC_OK;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        snprintf(err, err_len, "%s must be an integer from %ld to %ld", key, min, max);
        return OC_ERR_INVALID;
    }
    *out = (long)json_integer_value(v);
    return OC_OK;
}

int dg_tool_discussion_list(void *state, const json_t *params, const json_t *ctx, json_t **result)
{
    dg_plugin *p = state;
    char err[1024] = "";
    dg_caller caller;
    dg_tool_caller(ctx, &caller);
    long limit = LIST_DEFAULT, offset = 0;
    int rc = dg_tool_check_keys(params, allowed_keys, err, sizeof err);
    if (rc == OC_OK)
        rc = int_param(params, "limit", LIST_DEFAULT, 1, LIST_MAX, &limit, err, sizeof err);
    if (rc == OC_OK)
        rc = int_param(params, "offset", 0, 0, 1000000000L, &offset, err, sizeof err);
    dg_discussion_info *v = NULL;
    size_t n = 0;
    int more = 0;
    if (rc == OC_OK)
        rc = dg_discuss_list(p, &caller, (size_t)offset, (size_t)limit, &v, &n, &more, err,
                             sizeof err);
    if (rc != OC_OK) {
        *result = dg_tool_error(rc, err);
        return rc;
    }
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
        json_t *o = dg_tool_discussion_json(&v[i], caller.agent_id);
        if (!o || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    dg_discussion_infos_free(v, n);
    char text[256];
    snprintf(text, sizeof text, "%zu discussion(s) of yours, newest first, from %ld%s.", n, offset,
             more ? "; more with offset = nextOffset" : "; no more");
    json_t *details = arr ? json_pack("{s:o,s:I,s:I,s:o}", "discussions", arr, "offset",
                                      (json_int_t)offset, "limit", (json_int_t)limit, "nextOffset",
                                      more ? json_integer(offset + (long)n) : json_null())
                          : NULL;
    *result = details ? dg_tool_ok(text, details) : NULL;
    if (!*result) {
        *result = dg_tool_error(OC_ERR_NOMEM, "out of memory building the result");
        return OC_ERR_NOMEM;
    }
    return OC_OK;
}
