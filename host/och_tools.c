/*
 * och_tools.c -- the tool registry and tool invocation.
 *
 * A tool result crosses from plugin code into the host: it is checked
 * against the contract's two shapes before the embedder sees it, so a
 * faulty tool produces a well-formed error result and a log line, never a
 * crash or a malformed answer to the model.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "och_internal.h"

json_t *och_error_result(int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return json_pack("{s:{s:s,s:s}}", "error", "code", oc_status_name(status), "message", msg);
}

/* jansson's own check: what it accepts as a string is what can be listed. */
static int utf8_ok(const char *s)
{
    json_t *j = json_string(s);
    json_decref(j);
    return j != NULL;
}

int och_tools_register(och_plugin *p, const oc_tool *tool)
{
    och_host *h = p->host;
    if (!tool || tool->struct_size < sizeof(oc_tool)) {
        och_log(h, OC_LOG_ERROR, p->id,
                "register_tool refused: %s; pass an oc_tool with struct_size = sizeof(oc_tool)",
                tool ? "struct_size is too small for ABI 1.0" : "tool is NULL");
        return OC_ERR_INVALID;
    }
    if (!tool->name || !*tool->name || !tool->execute) {
        och_log(h, OC_LOG_ERROR, p->id, "register_tool refused: %s",
                !tool->execute ? "execute is NULL" : "the tool has no name");
        return OC_ERR_INVALID;
    }
    /* Name and description go to the model as JSON text: bytes that are
     * not UTF-8 cannot, and would make och_tools_list fail for every tool. */
    if (!utf8_ok(tool->name) || (tool->description && !utf8_ok(tool->description))) {
        och_log(h, OC_LOG_ERROR, p->id,
                "register_tool refused: the tool's %s is not valid UTF-8; save the plugin's "
                "sources as UTF-8 and rebuild",
                utf8_ok(tool->name) ? "description" : "name");
        return OC_ERR_INVALID;
    }
    json_t *schema = NULL;
    if (tool->parameters) {
        json_error_t je;
        schema = json_loads(tool->parameters, 0, &je);
        if (!json_is_object(schema)) {
            och_log(h, OC_LOG_ERROR, p->id,
                    "register_tool(%s) refused: parameters must be a JSON Schema object as "
                    "text (%s)",
                    tool->name, schema ? "it is not an object" : je.text);
            json_decref(schema);
            return OC_ERR_INVALID;
        }
    } else if (!(schema = json_pack("{s:s}", "type", "object"))) {
        return OC_ERR_NOMEM;
    }
    if (p->contracts_tools && !och_json_array_has(p->contracts_tools, tool->name))
        och_log(h, OC_LOG_WARN, p->id,
                "tool %s is not listed in manifest.json contracts.tools; add it there", tool->name);

    pthread_rwlock_wrlock(&h->reg_lock);
    int rc = OC_OK;
    for (size_t i = 0; i < h->n_tools; i++) {
        if (strcmp(h->tools[i].tool->name, tool->name) == 0) {
            och_log(h, OC_LOG_ERROR, p->id,
                    "register_tool(%s) refused: plugin %s already registered a tool of that "
                    "name; tool names are unique per host",
                    tool->name, h->tools[i].plugin->id);
            rc = OC_ERR_CONFLICT;
            goto out;
        }
    }
    if (dg_grow(&h->tools, &h->cap_tools, h->n_tools, sizeof *h->tools, 8)) {
        rc = OC_ERR_NOMEM;
        goto out;
    }
    h->tools[h->n_tools++] = (och_tool_reg){.plugin = p, .tool = tool, .parameters = schema};
    schema = NULL;
    och_log(h, OC_LOG_DEBUG, p->id, "tool %s registered", tool->name);
out:
    pthread_rwlock_unlock(&h->reg_lock);
    json_decref(schema);
    return rc;
}

void och_tools_drop_plugin(och_host *h, const och_plugin *p)
{
    pthread_rwlock_wrlock(&h->reg_lock);
    size_t k = 0;
    for (size_t i = 0; i < h->n_tools; i++) {
        if (h->tools[i].plugin == p)
            json_decref(h->tools[i].parameters);
        else
            h->tools[k++] = h->tools[i];
    }
    h->n_tools = k;
    pthread_rwlock_unlock(&h->reg_lock);
}

void och_tools_free(och_host *h)
{
    for (size_t i = 0; i < h->n_tools; i++)
        json_decref(h->tools[i].parameters);
    free(h->tools);
    h->tools = NULL;
    h->n_tools = h->cap_tools = 0;
}

static int valid_status(int rc)
{
    return rc <= OC_OK && rc >= OC_ERR_INTERNAL;
}

static int ok_shape(const json_t *r)
{
    return json_is_object(r) && json_is_array(json_object_get(r, "content"));
}

static int error_shape(const json_t *r)
{
    const json_t *e = json_object_get(r, "error");
    return json_is_object(r) && json_is_object(e) && json_is_string(json_object_get(e, "code")) &&
           json_is_string(json_object_get(e, "message"));
}

int och_tool_call(och_host *h, const char *name, const json_t *params, const json_t *ctx,
                  json_t **result)
{
    json_t *dummy = NULL;
    if (!result)
        result = &dummy;
    *result = NULL;
    if (!h || !name) {
        *result =
            och_error_result(OC_ERR_INVALID, "och_tool_call: host and tool name are required");
        json_decref(dummy);
        return OC_ERR_INVALID;
    }
    json_t *empty_p = NULL, *empty_c = NULL;
    if (!params)
        params = empty_p = json_object();
    if (!ctx)
        ctx = empty_c = json_object();

    pthread_rwlock_rdlock(&h->reg_lock);
    const och_tool_reg *reg = NULL;
    for (size_t i = 0; i < h->n_tools; i++)
        if (atomic_load(&h->tools[i].plugin->active) && strcmp(h->tools[i].tool->name, name) == 0)
            reg = &h->tools[i];
    int rc;
    if (!reg) {
        rc = OC_ERR_NOT_FOUND;
        *result = och_error_result(rc,
                                   "there is no tool named \"%s\"; use one of the tools "
                                   "offered to you",
                                   name);
        och_log(h, OC_LOG_WARN, NULL, "tool call to unknown tool %s", name);
    } else {
        const char *pid = reg->plugin->id;
        json_t *r = NULL;
        rc = reg->tool->execute(reg->plugin->state_ptr, params, ctx, &r);
        if (!valid_status(rc)) {
            och_log(h, OC_LOG_ERROR, pid,
                    "tool %s returned %d, which is not an oc_status (a bug in plugin %s); "
                    "reported as OC_ERR_INTERNAL",
                    name, rc, pid);
            json_decref(r);
            rc = OC_ERR_INTERNAL;
            r = och_error_result(rc,
                                 "tool %s failed inside plugin %s (invalid status); the "
                                 "host logged it, try again later or report it",
                                 name, pid);
        } else if (rc == OC_OK && !ok_shape(r)) {
            och_log(h, OC_LOG_ERROR, pid,
                    "tool %s returned OC_OK %s (a bug in plugin %s); reported as "
                    "OC_ERR_INTERNAL",
                    name, r ? "with a result lacking a content array" : "without a result", pid);
            json_decref(r);
            rc = OC_ERR_INTERNAL;
            r = och_error_result(rc,
                                 "tool %s gave no usable result (a bug in plugin %s); the "
                                 "host logged it",
                                 name, pid);
        } else if (rc != OC_OK && !error_shape(r)) {
            och_log(h, OC_LOG_ERROR, pid,
                    "tool %s returned %s %s (a bug in plugin %s); a generic error result was "
                    "made",
                    name, oc_status_name(rc),
                    r ? "with a malformed error result" : "without an error result", pid);
            json_decref(r);
            r = och_error_result(rc, "tool %s failed with %s and gave no explanation", name,
                                 oc_status_name(rc));
        } else if (rc != OC_OK) {
            och_log(h, OC_LOG_INFO, pid, "tool %s -> %s: %s", name, oc_status_name(rc),
                    json_string_value(json_object_get(json_object_get(r, "error"), "message")));
        }
        *result = r;
    }
    pthread_rwlock_unlock(&h->reg_lock);
    json_decref(empty_p);
    json_decref(empty_c);
    int nomem = *result == NULL;
    json_decref(dummy);
    return nomem ? OC_ERR_NOMEM : rc;
}

json_t *och_tools_list(och_host *h)
{
    json_t *arr = json_array();
    if (!arr || !h)
        return arr;
    pthread_rwlock_rdlock(&h->reg_lock);
    for (size_t i = 0; i < h->n_tools; i++) {
        const och_tool_reg *r = &h->tools[i];
        if (!atomic_load(&r->plugin->active))
            continue;
        json_t *o = json_pack("{s:s,s:s,s:O,s:s}", "name", r->tool->name, "description",
                              r->tool->description ? r->tool->description : "", "parameters",
                              r->parameters, "plugin", r->plugin->id);
        if (!o || json_array_append_new(arr, o)) {
            json_decref(arr);
            arr = NULL;
            break;
        }
    }
    pthread_rwlock_unlock(&h->reg_lock);
    return arr;
}
