/*
 * probe.c -- a configurable fixture plugin for the host-core tests.
 *
 * Its id is its own file name without ".so" (found with dladdr), so the
 * tests can load several independent copies (alpha.so, beta.so, ...) that
 * each match their manifest id. What it registers and how its handlers
 * answer comes from its config (plugins.entries.<id>.config):
 *
 *   {"hooks": [{"hook": name, "priority": n, "label": s, "status": n,
 *               "result": {...}, "mode": "append"}],
 *    "tools": [{"name": s, "status": n, "result": {...}|null,
 *               "mode": "fixed"|"echo"|"patch"|"list"|"late_register",
 *               "latin1Description": true}],
 *    "failInit": "reason",        registers first, then fails init
 *    "threadLogs": n}             a thread that logs n lines, joined in shutdown
 *
 * Every handler call logs "call <label>" (message_sending adds
 * " content=<content seen>"), so the tests read the dispatch order from the
 * host's log sink. init logs "init <id> host <major>.<minor>", shutdown
 * logs "shutdown <id>", and every refused registration logs
 * "register <name> -> <status>".
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openclaw/plugin.h"

#define MAX_HOOKS 16
#define MAX_TOOLS 8

typedef struct hook_slot {
    char *hook, *label, *mode;
    int priority, status;
    json_t *result;
} hook_slot;

typedef struct tool_slot {
    oc_tool tool;
    char *name, *mode;
    int status;
    json_t *result; /* JSON null: return no result at all */
    int has_result;
} tool_slot;

typedef struct probe {
    const oc_host_api *api;
    hook_slot hooks[MAX_HOOKS];
    size_t n_hooks;
    tool_slot tools[MAX_TOOLS];
    size_t n_tools;
    pthread_t thread;
    int thread_started;
    int thread_logs;
} probe;

static char probe_id[128] = "probe";

static void plog(probe *p, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void plog(probe *p, int level, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    p->api->log(p->api->host, level, buf);
}

static int hook_common(void *state, size_t i, const json_t *event, json_t **result)
{
    probe *p = state;
    hook_slot *s = &p->hooks[i];
    const char *content = json_string_value(json_object_get(event, "content"));
    if (strcmp(s->hook, "message_sending") == 0)
        plog(p, OC_LOG_INFO, "call %s content=%s", s->label, content ? content : "(none)");
    else
        plog(p, OC_LOG_INFO, "call %s", s->label);
    if (s->mode && strcmp(s->mode, "append") == 0) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s%s", content ? content : "", s->label);
        *result = json_pack("{s:s}", "content", buf);
        return s->status;
    }
    *result = s->result && !json_is_null(s->result) ? json_deep_copy(s->result) : NULL;
    return s->status;
}

#define HOOK_FN(n)                                                                                 \
    static int hook_##n(void *st, const json_t *ev, const json_t *ctx, json_t **res)               \
    {                                                                                              \
        (void)ctx;                                                                                 \
        return hook_common(st, n, ev, res);                                                        \
    }
HOOK_FN(0)
HOOK_FN(1)
HOOK_FN(2)
HOOK_FN(3)
HOOK_FN(4)
HOOK_FN(5)
HOOK_FN(6)
HOOK_FN(7)
HOOK_FN(8)
HOOK_FN(9)
HOOK_FN(10)
HOOK_FN(11)
HOOK_FN(12)
HOOK_FN(13)
HOOK_FN(14)
HOOK_FN(15)
static const oc_hook_fn hook_fns[MAX_HOOKS] = {
    hook_0, hook_1, hook_2,  hook_3,  hook_4,  hook_5,  hook_6,  hook_7,
    hook_8, hook_9, hook_10, hook_11, hook_12, hook_13, hook_14, hook_15,
};

static json_t *text_result(const char *text, json_t *details)
{
    return json_pack("{s:[{s:s,s:s}],s:o}", "content", "type", "text", "text", text, "details",
                     details ? details : json_object());
}

static int late_tool(void *state, const json_t *params, const json_t *ctx, json_t **result)
{
    (void)state, (void)params, (void)ctx;
    *result = text_result("late", NULL);
    return OC_OK;
}

static const oc_tool late = {sizeof(oc_tool), "late_tool", "registered too late", NULL, late_tool};

static int tool_common(void *state, size_t i, const json_t *params, const json_t *ctx,
                       json_t **result)
{
    probe *p = state;
    tool_slot *s = &p->tools[i];
    plog(p, OC_LOG_INFO, "call tool %s", s->name);
    const char *mode = s->mode ? s->mode : "fixed";
    if (strcmp(mode, "echo") == 0) {
        *result = text_result(
            "echo", json_pack("{s:O,s:O}", "params", (json_t *)params, "ctx", (json_t *)ctx));
        return OC_OK;
    }
    if (strcmp(mode, "patch") == 0) {
        int rc =
            p->api->session_patch(p->api->host, json_string_value(json_object_get(params, "key")),
                                  json_string_value(json_object_get(params, "provider")),
                                  json_string_value(json_object_get(params, "model")));
        *result = text_result("patched", json_pack("{s:i}", "status", rc));
        return OC_OK;
    }
    if (strcmp(mode, "list") == 0) {
        json_t *l = p->api->sessions_list(p->api->host,
                                          json_string_value(json_object_get(params, "channel")));
        *result = text_result("listed", json_pack("{s:o}", "sessions", l ? l : json_null()));
        return OC_OK;
    }
    if (strcmp(mode, "late_register") == 0) {
        int r1 = p->api->register_tool(p->api->host, &late);
        int r2 = p->api->on(p->api->host, "agent_end", hook_fns[0], 0);
        *result = text_result("late", json_pack("{s:i,s:i}", "register", r1, "on", r2));
        return OC_OK;
    }
    *result = s->has_result && !json_is_null(s->result) ? json_deep_copy(s->result) : NULL;
    return s->status;
}

#define TOOL_FN(n)                                                                                 \
    static int tool_##n(void *st, const json_t *pa, const json_t *ctx, json_t **res)               \
    {                                                                                              \
        return tool_common(st, n, pa, ctx, res);                                                   \
    }
TOOL_FN(0)
TOOL_FN(1)
TOOL_FN(2)
TOOL_FN(3)
TOOL_FN(4)
TOOL_FN(5)
TOOL_FN(6)
TOOL_FN(7)
static const oc_tool_fn tool_fns[MAX_TOOLS] = {tool_0, tool_1, tool_2, tool_3,
                                               tool_4, tool_5, tool_6, tool_7};

static void *thread_main(void *arg)
{
    probe *p = arg;
    for (int i = 0; i < p->thread_logs; i++)
        plog(p, OC_LOG_INFO, "thread line %d", i);
    return NULL;
}

static void probe_free(probe *p)
{
    for (size_t i = 0; i < p->n_hooks; i++) {
        free(p->hooks[i].hook);
        free(p->hooks[i].label);
        free(p->hooks[i].mode);
        json_decref(p->hooks[i].result);
    }
    for (size_t i = 0; i < p->n_tools; i++) {
        free(p->tools[i].name);
        free(p->tools[i].mode);
        json_decref(p->tools[i].result);
    }
    free(p);
}

static char *dup_or_null(const json_t *v)
{
    return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

static int probe_init(const oc_host_api *api, const json_t *config, void **state, char *err,
                      size_t err_len)
{
    if (api->abi_major != OC_ABI_MAJOR) {
        snprintf(err, err_len, "probe: host ABI major %u, this plugin needs %d",
                 (unsigned)api->abi_major, OC_ABI_MAJOR);
        return OC_ERR_UNSUPPORTED;
    }
    probe *p = calloc(1, sizeof *p);
    if (!p)
        return OC_ERR_NOMEM;
    p->api = api;
    plog(p, OC_LOG_INFO, "init %s host %u.%u", probe_id, (unsigned)api->abi_major,
         (unsigned)api->abi_minor);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(config, "hooks"), i, v) {
        if (p->n_hooks == MAX_HOOKS)
            break;
        hook_slot *s = &p->hooks[p->n_hooks++];
        s->hook = dup_or_null(json_object_get(v, "hook"));
        s->label = dup_or_null(json_object_get(v, "label"));
        s->mode = dup_or_null(json_object_get(v, "mode"));
        if (!s->label)
            s->label = strdup("?");
        s->priority = (int)json_integer_value(json_object_get(v, "priority"));
        s->status = (int)json_integer_value(json_object_get(v, "status"));
        s->result = json_incref(json_object_get(v, "result"));
        int rc = api->on(api->host, s->hook, hook_fns[p->n_hooks - 1], s->priority);
        if (rc)
            plog(p, OC_LOG_INFO, "register %s -> %s", s->hook ? s->hook : "NULL",
                 oc_status_name(rc));
    }
    json_array_foreach(json_object_get(config, "tools"), i, v) {
        if (p->n_tools == MAX_TOOLS)
            break;
        tool_slot *s = &p->tools[p->n_tools++];
        s->name = dup_or_null(json_object_get(v, "name"));
        s->mode = dup_or_null(json_object_get(v, "mode"));
        s->status = (int)json_integer_value(json_object_get(v, "status"));
        s->has_result = json_object_get(v, "result") != NULL;
        s->result = json_incref(json_object_get(v, "result"));
        /* latin1Description: a description that is not UTF-8 (a plugin
         * built with another source charset). */
        const char *desc =
            json_is_true(json_object_get(v, "latin1Description")) ? "caf\xe9 tool" : "a probe tool";
        s->tool = (oc_tool){sizeof(oc_tool), s->name, desc, "{\"type\":\"object\"}",
                            tool_fns[p->n_tools - 1]};
        int rc = api->register_tool(api->host, &s->tool);
        if (rc)
            plog(p, OC_LOG_INFO, "register %s -> %s", s->name ? s->name : "NULL",
                 oc_status_name(rc));
    }
    const char *fail = json_string_value(json_object_get(config, "failInit"));
    if (fail) {
        snprintf(err, err_len, "probe: %s", fail);
        probe_free(p);
        return OC_ERR_INVALID;
    }
    p->thread_logs = (int)json_integer_value(json_object_get(config, "threadLogs"));
    if (p->thread_logs > 0) {
        if (pthread_create(&p->thread, NULL, thread_main, p) != 0) {
            snprintf(err, err_len, "probe: cannot start a thread");
            probe_free(p);
            return OC_ERR_INTERNAL;
        }
        p->thread_started = 1;
    }
    *state = p;
    return OC_OK;
}

static void probe_shutdown(void *state)
{
    probe *p = state;
    if (p->thread_started)
        pthread_join(p->thread, NULL);
    plog(p, OC_LOG_INFO, "shutdown %s", probe_id);
    probe_free(p);
}

static oc_plugin probe_plugin = {
    .abi_major = OC_ABI_MAJOR,
    .abi_minor = OC_ABI_MINOR,
    .struct_size = sizeof(oc_plugin),
    .id = probe_id,
    .version = "9.9.9",
    .init = probe_init,
    .shutdown = probe_shutdown,
};

__attribute__((visibility("default"))) const oc_plugin *oc_plugin_entry(void);

const oc_plugin *oc_plugin_entry(void)
{
    /* The id is the library's file name: copies under other names are
     * distinct plugins. */
    Dl_info info;
    if (dladdr((void *)&probe_plugin, &info) && info.dli_fname) {
        const char *base = strrchr(info.dli_fname, '/');
        base = base ? base + 1 : info.dli_fname;
        snprintf(probe_id, sizeof probe_id, "%s", base);
        char *dot = strstr(probe_id, ".so");
        if (dot)
            *dot = '\0';
    }
    return &probe_plugin;
}
