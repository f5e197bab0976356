/*
 * och_hooks.c -- hook registration and dispatch with the merge rules of the
 * ABI (include/openclaw/plugin.h, docs/abi.md).
 *
 * Each hook keeps its handlers sorted at registration time (priority
 * descending, then registration order), so dispatch is a straight walk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "och_internal.h"

const char *const och_hook_names[OCH_HOOK_COUNT] = {
    "message_received",
    "before_model_resolve",
    "before_prompt_build",
    "message_sending",
    "agent_end",
    "gateway_start",
    "gateway_stop",
    "before_agent_reply",
    "reply_payload_sending",
    "model_call_ended",
    "llm_output",
};

static int is_claim_hook(int id)
{
    return id == OCH_HOOK_BEFORE_AGENT_REPLY || id == OCH_HOOK_REPLY_PAYLOAD_SENDING;
}

void och_host_set_claim_hooks(och_host *h, int on)
{
    if (h)
        h->no_claim_hooks = !on;
}

int och_hook_id(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < OCH_HOOK_COUNT; i++)
        if (strcmp(name, och_hook_names[i]) == 0)
            return i;
    return -1;
}

int och_hooks_register(och_plugin *p, const char *hook, oc_hook_fn fn, int priority)
{
    och_host *h = p->host;
    int id = och_hook_id(hook);
    if (id >= 0 && is_claim_hook(id) && h->no_claim_hooks) {
        och_log(h, OC_LOG_INFO, p->id,
                "on(\"%s\") refused: this host is set up without the "
                "claim hooks (gateway.claimHooks false)",
                hook);
        return OC_ERR_INVALID;
    }
    if (id < 0) {
        och_log(h, OC_LOG_ERROR, p->id,
                "on(\"%s\") refused: unknown hook; the hooks are message_received, "
                "before_model_resolve, before_prompt_build, message_sending, agent_end, "
                "gateway_start, gateway_stop, before_agent_reply, reply_payload_sending",
                hook ? hook : "NULL");
        return OC_ERR_INVALID;
    }
    if (!fn) {
        och_log(h, OC_LOG_ERROR, p->id, "on(%s) refused: the handler is NULL", hook);
        return OC_ERR_INVALID;
    }
    if (p->contracts_hooks && !och_json_array_has(p->contracts_hooks, hook))
        och_log(h, OC_LOG_WARN, p->id,
                "hook %s is not listed in manifest.json contracts.hooks; add it there", hook);

    pthread_rwlock_wrlock(&h->reg_lock);
    och_hook_list *l = &h->hooks[id];
    int rc = OC_OK;
    if (dg_grow(&l->v, &l->cap, l->n, sizeof *l->v, 8)) {
        rc = OC_ERR_NOMEM;
        goto out;
    }
    /* After every handler of equal or higher priority: stable for ties. */
    size_t at = 0;
    while (at < l->n && l->v[at].priority >= priority)
        at++;
    memmove(&l->v[at + 1], &l->v[at], (l->n - at) * sizeof *l->v);
    l->v[at] = (och_hook_reg){.plugin = p, .fn = fn, .priority = priority, .seq = h->hook_seq++};
    l->n++;
    och_log(h, OC_LOG_DEBUG, p->id, "hook %s registered with priority %d", hook, priority);
out:
    pthread_rwlock_unlock(&h->reg_lock);
    return rc;
}

void och_hooks_drop_plugin(och_host *h, const och_plugin *p)
{
    pthread_rwlock_wrlock(&h->reg_lock);
    for (int id = 0; id < OCH_HOOK_COUNT; id++) {
        och_hook_list *l = &h->hooks[id];
        size_t k = 0;
        for (size_t i = 0; i < l->n; i++)
            if (l->v[i].plugin != p)
                l->v[k++] = l->v[i];
        l->n = k;
    }
    pthread_rwlock_unlock(&h->reg_lock);
}

void och_hooks_free(och_host *h)
{
    for (int id = 0; id < OCH_HOOK_COUNT; id++) {
        free(h->hooks[id].v);
        h->hooks[id] = (och_hook_list){0};
    }
}

size_t och_hook_count(och_host *h, const char *hook)
{
    int id = och_hook_id(hook);
    if (!h || id < 0)
        return 0;
    size_t n = 0;
    pthread_rwlock_rdlock(&h->reg_lock);
    for (size_t i = 0; i < h->hooks[id].n; i++)
        if (atomic_load(&h->hooks[id].v[i].plugin->active))
            n++;
    pthread_rwlock_unlock(&h->reg_lock);
    return n;
}

/* ---- merge state ---------------------------------------------------------------- */

typedef struct merge {
    const char *hook;
    char *provider, *model; /* before_model_resolve */
    char *append, *prepend; /* before_prompt_build */
    json_t *event;          /* message_sending, reply_payload_sending: private
                                        copy once rewritten */
    json_t *payload;        /* reply_payload_sending: last rewrite */
    int handled;            /* before_agent_reply */
    char *content;          /* message_sending: last rewrite */
    int cancelled;
    char *cancel_reason;
    int nomem;
} merge;

static void take_first(merge *m, char **slot, const json_t *v)
{
    if (!*slot && json_is_string(v) && !(*slot = strdup(json_string_value(v))))
        m->nomem = 1;
}

static void join(merge *m, char **acc, const json_t *v)
{
    if (!json_is_string(v))
        return;
    const char *s = json_string_value(v);
    char *n = *acc ? dg_sprintf("%s\n\n%s", *acc, s) : strdup(s);
    if (!n) {
        m->nomem = 1;
        return;
    }
    free(*acc);
    *acc = n;
}

/* A field of a result that is present but of the wrong type is a plugin
 * bug worth a line; the field is ignored. */
static void check_string_field(och_host *h, const char *pid, const char *hook, const json_t *r,
                               const char *key)
{
    const json_t *v = json_object_get(r, key);
    if (v && !json_is_string(v))
        och_log(h, OC_LOG_WARN, pid, "hook %s: result field %s is not a string; ignored", hook,
                key);
}

/* Folds one handler's result into m; returns 1 when dispatch must stop. */
static int fold(och_host *h, merge *m, int id, const char *pid, const json_t *r,
                const json_t *base_event)
{
    switch (id) {
    case OCH_HOOK_BEFORE_MODEL_RESOLVE:
        check_string_field(h, pid, m->hook, r, "providerOverride");
        check_string_field(h, pid, m->hook, r, "modelOverride");
        take_first(m, &m->provider, json_object_get(r, "providerOverride"));
        take_first(m, &m->model, json_object_get(r, "modelOverride"));
        return 0;
    case OCH_HOOK_BEFORE_PROMPT_BUILD:
        check_string_field(h, pid, m->hook, r, "appendSystemContext");
        check_string_field(h, pid, m->hook, r, "prependContext");
        join(m, &m->append, json_object_get(r, "appendSystemContext"));
        join(m, &m->prepend, json_object_get(r, "prependContext"));
        return 0;
    case OCH_HOOK_MESSAGE_SENDING: {
        if (json_is_true(json_object_get(r, "cancel"))) {
            const json_t *why = json_object_get(r, "cancelReason");
            m->cancelled = 1;
            if (!(m->cancel_reason = strdup(json_is_string(why) ? json_string_value(why) : "")))
                m->nomem = 1;
            return 1;
        }
        check_string_field(h, pid, m->hook, r, "content");
        const json_t *c = json_object_get(r, "content");
        if (!json_is_string(c))
            return 0;
        char *nc = strdup(json_string_value(c));
        if (!m->event)
            m->event = json_copy((json_t *)base_event); /* shallow: only content changes */
        if (!nc || !m->event || json_object_set_new(m->event, "content", json_string(nc))) {
            free(nc);
            m->nomem = 1;
            return 1;
        }
        free(m->content);
        m->content = nc;
        return 0;
    }
    case OCH_HOOK_BEFORE_AGENT_REPLY: {
        if (!json_is_true(json_object_get(r, "handled")))
            return 0;
        check_string_field(h, pid, m->hook, r, "reason");
        const json_t *why = json_object_get(r, "reason");
        m->handled = 1;
        if (!(m->cancel_reason = strdup(json_is_string(why) ? json_string_value(why) : "")))
            m->nomem = 1;
        return 1;
    }
    case OCH_HOOK_REPLY_PAYLOAD_SENDING: {
        if (json_is_true(json_object_get(r, "cancel"))) {
            check_string_field(h, pid, m->hook, r, "reason");
            const json_t *why = json_object_get(r, "reason");
            m->cancelled = 1;
            if (!(m->cancel_reason = strdup(json_is_string(why) ? json_string_value(why) : "")))
                m->nomem = 1;
            return 1;
        }
        const json_t *pl = json_object_get(r, "payload");
        if (!pl)
            return 0;
        if (!json_is_object(pl)) {
            och_log(h, OC_LOG_WARN, pid,
                    "hook %s: result field payload is not an object; "
                    "ignored",
                    m->hook);
            return 0;
        }
        json_t *copy = json_deep_copy(pl);
        if (!m->event)
            m->event = json_copy((json_t *)base_event); /* shallow: only payload changes */
        if (!copy || !m->event || json_object_set(m->event, "payload", copy)) {
            json_decref(copy);
            m->nomem = 1;
            return 1;
        }
        json_decref(m->payload);
        m->payload = copy;
        return 0;
    }
    default: return 0;
    }
}

static json_t *merged_result(merge *m, int id)
{
    json_t *r = NULL;
    switch (id) {
    case OCH_HOOK_BEFORE_MODEL_RESOLVE:
        if (m->provider || m->model) {
            r = json_object();
            if (r && m->provider)
                json_object_set_new(r, "providerOverride", json_string(m->provider));
            if (r && m->model)
                json_object_set_new(r, "modelOverride", json_string(m->model));
        }
        break;
    case OCH_HOOK_BEFORE_PROMPT_BUILD:
        if (m->append || m->prepend) {
            r = json_object();
            if (r && m->append)
                json_object_set_new(r, "appendSystemContext", json_string(m->append));
            if (r && m->prepend)
                json_object_set_new(r, "prependContext", json_string(m->prepend));
        }
        break;
    case OCH_HOOK_MESSAGE_SENDING:
        if (m->cancelled)
            r = json_pack("{s:b,s:s}", "cancel", 1, "cancelReason", m->cancel_reason);
        else if (m->content)
            r = json_pack("{s:s}", "content", m->content);
        break;
    case OCH_HOOK_BEFORE_AGENT_REPLY:
        if (m->handled)
            r = json_pack("{s:b,s:s}", "handled", 1, "reason", m->cancel_reason);
        break;
    case OCH_HOOK_REPLY_PAYLOAD_SENDING:
        if (m->cancelled)
            r = json_pack("{s:b,s:s}", "cancel", 1, "reason", m->cancel_reason);
        else if (m->payload)
            r = json_pack("{s:O}", "payload", m->payload);
        break;
    default: break;
    }
    return r;
}

int och_hook_dispatch(och_host *h, const char *hook, const json_t *event, const json_t *ctx,
                      json_t **result)
{
    if (result)
        *result = NULL;
    int id = och_hook_id(hook);
    if (!h || id < 0) {
        if (h)
            och_log(h, OC_LOG_ERROR, NULL, "dispatch of unknown hook \"%s\" refused",
                    hook ? hook : "NULL");
        return OC_ERR_INVALID;
    }
    json_t *empty_e = NULL, *empty_c = NULL;
    if (!event)
        event = empty_e = json_object();
    if (!ctx)
        ctx = empty_c = json_object();
    merge m = {.hook = hook};

    pthread_rwlock_rdlock(&h->reg_lock);
    const och_hook_list *l = &h->hooks[id];
    for (size_t i = 0; i < l->n && !m.nomem; i++) {
        const och_hook_reg *reg = &l->v[i];
        if (!atomic_load(&reg->plugin->active))
            continue;
        const char *pid = reg->plugin->id;
        json_t *r = NULL;
        int rc = reg->fn(reg->plugin->state_ptr, m.event ? m.event : event, ctx, &r);
        if (rc < OC_OK || rc > OC_OK) {
            och_log(h, OC_LOG_WARN, pid,
                    "hook %s (priority %d) returned %s%s; treated as no result", hook,
                    reg->priority, oc_status_name(rc), rc > 0 ? " (not an oc_status)" : "");
            json_decref(r);
            continue;
        }
        if (!r)
            continue;
        if (!json_is_object(r)) {
            och_log(h, OC_LOG_WARN, pid,
                    "hook %s (priority %d) returned a result that is not a JSON object; "
                    "ignored",
                    hook, reg->priority);
            json_decref(r);
            continue;
        }
        int stop = fold(h, &m, id, pid, r, event);
        json_decref(r);
        if (stop)
            break;
    }
    pthread_rwlock_unlock(&h->reg_lock);

    int rc = m.nomem ? OC_ERR_NOMEM : OC_OK;
    if (!m.nomem && result) {
        *result = merged_result(&m, id);
        if (!*result && (m.provider || m.model || m.append || m.prepend || m.cancelled ||
                         m.content || m.handled || m.payload))
            rc = OC_ERR_NOMEM;
    }
    free(m.provider);
    free(m.model);
    free(m.append);
    free(m.prepend);
    free(m.content);
    free(m.cancel_reason);
    json_decref(m.event);
    json_decref(m.payload);
    json_decref(empty_e);
    json_decref(empty_c);
    return rc;
}
