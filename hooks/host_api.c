/*
 * host_api.c -- the core's host-call table (plugin/host_calls.h) as calls
 * into the host's oc_host_api: the ABI's checks, and the JSON of
 * sessions_list and decide turned into the plain values the core works on.
 * Every call runs on its caller's thread; ctx is the oc_host_api.
 */
#include "host_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discuss.h"
#include "judge.h"
#include "status.h"

/* Size of an oc_host_api that carries every function this plugin needs. */
#define HOST_API_MIN_SIZE (offsetof(oc_host_api, log) + sizeof(((oc_host_api *)0)->log))

static void host_log(void *ctx, int level, const char *text)
{
    const oc_host_api *api = ctx;
    api->log(api->host, level, text);
}

static void release_list(void *owner)
{
    json_decref((json_t *)owner);
}

static int host_sessions(void *ctx, const char *channel_id, dg_session_refs *out)
{
    const oc_host_api *api = ctx;
    memset(out, 0, sizeof *out);
    json_t *list = channel_id && *channel_id ? api->sessions_list(api->host, channel_id) : NULL;
    if (!list) {
        out->unavailable = channel_id && *channel_id;
        return DG_OK;
    }
    out->owner = list;
    out->release = release_list;
    if (!json_is_array(list))
        return DG_ERR_INVALID;
    size_t n = json_array_size(list);
    dg_session_ref *v = calloc(n ? n : 1, sizeof *v);
    if (!v) {
        out->unavailable = 1;
        return DG_OK;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(list, i);
        const char *key = json_string_value(json_object_get(e, "sessionKey"));
        const char *ch = json_string_value(json_object_get(e, "channelId"));
        if (!key || !*key || (ch && strcmp(ch, channel_id) != 0))
            continue;
        const char *th = json_string_value(json_object_get(e, "threadId"));
        v[out->n].session_key = key;
        v[out->n].agent_id = json_string_value(json_object_get(e, "agentId"));
        v[out->n].thread_id = th && *th ? th : NULL;
        out->n++;
    }
    out->v = v;
    return DG_OK;
}

static int host_session_patch(void *ctx, const char *session_key, const char *provider,
                              const char *model)
{
    const oc_host_api *api = ctx;
    return api->session_patch(api->host, session_key, provider, model);
}

static int host_session_reset(void *ctx, const char *session_key)
{
    const oc_host_api *api = ctx;
    return api->session_reset(api->host, session_key);
}

static int host_run_abort(void *ctx, const char *session_key)
{
    const oc_host_api *api = ctx;
    return api->run_abort(api->host, session_key);
}

/* The request of ABI 1.2, the call, the answer read like any untrusted
 * input. */
static int host_decide(void *ctx, const dg_host_question *q, dgj_answer *a, char *err,
                       size_t err_len)
{
    const oc_host_api *api = ctx;
    json_t *list = json_array();
    for (size_t i = 0; list && i < q->n_labels; i++)
        if (json_array_append_new(list, json_string(q->labels[i])) != 0) {
            json_decref(list);
            list = NULL;
        }
    json_t *req = list ? json_pack("{s:s, s:o, s:s, s:I}", "question", q->question, "labels", list,
                                   "context", q->context, "timeoutMs", (json_int_t)q->timeout_ms)
                       : NULL;
    if (!req) {
        snprintf(err, err_len, "judge: out of memory");
        return DG_ERR_NOMEM;
    }
    json_t *answer = NULL;
    int rc = api->decide(api->host, req, &answer);
    json_decref(req);
    if (rc == OC_OK)
        rc = dgj_parse_answer(answer, q->labels, q->n_labels, a, err, err_len);
    else
        snprintf(err, err_len, "judge: the host's decide answered %s", oc_status_name(rc));
    json_decref(answer);
    return rc;
}

static int check_api(const oc_host_api *api, char *err, size_t err_len)
{
    if (!api) {
        snprintf(err, err_len, "dirigent: the host passed no oc_host_api");
        return DG_ERR_INVALID;
    }
    if (api->abi_major != OC_ABI_MAJOR) {
        snprintf(err, err_len,
                 "dirigent: host ABI major %u is not supported; this plugin speaks ABI %d.%d "
                 "(a host of major %d is needed)",
                 (unsigned)api->abi_major, OC_ABI_MAJOR, OC_ABI_MINOR, OC_ABI_MAJOR);
        return DG_ERR_UNSUPPORTED;
    }
    if (api->struct_size < HOST_API_MIN_SIZE) {
        snprintf(err, err_len,
                 "dirigent: host oc_host_api is %u bytes, at least %zu are needed; the host was "
                 "built against a broken header",
                 (unsigned)api->struct_size, (size_t)HOST_API_MIN_SIZE);
        return DG_ERR_UNSUPPORTED;
    }
    if (!api->register_tool || !api->on || !api->session_patch || !api->sessions_list ||
        !api->log) {
        snprintf(err, err_len,
                 "dirigent: the host's oc_host_api has a NULL function (register_tool, on, "
                 "session_patch, sessions_list and log are all required)");
        return DG_ERR_INVALID;
    }
    return DG_OK;
}

int dg_host_calls_from_api(const oc_host_api *api, dg_host_calls *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    int rc = check_api(api, err, err_len);
    if (rc != DG_OK)
        return rc;
    out->ctx = (void *)api; /* only read back as const oc_host_api * */
    out->log = host_log;
    out->sessions = host_sessions;
    out->session_patch = host_session_patch;
    if (OC_HOST_API_HAS(api, session_reset))
        out->session_reset = host_session_reset;
    if (OC_HOST_API_HAS(api, run_abort))
        out->run_abort = host_run_abort;
    if (OC_HOST_API_HAS(api, decide))
        out->decide = host_decide;
    return DG_OK;
}
