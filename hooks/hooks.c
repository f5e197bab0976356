/*
 * hooks.c -- registration of the turn manager's hooks, and the decoding of
 * the agent-hook context they share.
 */
#include "hooks_internal.h"

#include <stdio.h>
#include <string.h>

#include "register.h"

const char *dg_json_str(const json_t *obj, const char *key)
{
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int dg_json_opt_str(const json_t *obj, const char *key, const char **out)
{
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    *out = json_is_string(v) ? json_string_value(v) : NULL;
    return (!v || json_is_null(v) || json_is_string(v)) ? 0 : -1;
}

/* Copy the `:`-delimited field after marker in key into out; 1 if found. */
static int key_field(const char *key, const char *marker, char *out, size_t cap)
{
    const char *p = strstr(key, marker);
    if (!p)
        return 0;
    p += strlen(marker);
    size_t n = strcspn(p, ":");
    if (n == 0 || n >= cap)
        return 0;
    memcpy(out, p, n);
    out[n] = '\0';
    return 1;
}

int dg_hook_decode_session(const json_t *ctx, dg_hook_session *out)
{
    memset(out, 0, sizeof *out);
    const char *agent, *key, *channel, *thread;
    static const char *const names[] = {"agentId", "sessionKey", "channelId", "threadId"};
    const char **vals[] = {&agent, &key, &channel, &thread};
    for (size_t i = 0; i < 4; i++) {
        if (dg_json_opt_str(ctx, names[i], vals[i])) {
            snprintf(out->err, sizeof out->err, "ctx.%s is not a string; the host must pass "
                     "ids as JSON strings", names[i]);
            return -1;
        }
    }
    int is_dm = 0;
    if (key && strncmp(key, "agent:", 6) == 0) {
        /* OpenClaw's session key carries what a bridge may not pass. */
        if (!agent && key_field(key, "agent:", out->agent, sizeof out->agent))
            agent = out->agent;
        if (strstr(key, ":discord:direct:"))
            is_dm = 1;
        if (!channel && key_field(key, ":discord:channel:", out->channel, sizeof out->channel))
            channel = out->channel;
        if (!thread && key_field(key, ":thread:", out->thread, sizeof out->thread))
            thread = out->thread;
    }
    if (!agent || !*agent || !channel || !*channel)
        return 0;
    if (strlen(channel) >= DG_SCOPE_ID_MAX || (thread && strlen(thread) >= DG_SCOPE_ID_MAX)) {
        snprintf(out->err, sizeof out->err, "ctx.%s is longer than %d characters: not a "
                 "channel or thread id", strlen(channel) >= DG_SCOPE_ID_MAX ? "channelId"
                 : "threadId", DG_SCOPE_ID_MAX - 1);
        return -1;
    }
    if (!key || !*key) {
        snprintf(out->key, sizeof out->key, "agent:%s:channel:%s%s%s", agent, channel,
                 thread ? ":thread:" : "", thread ? thread : "");
        key = out->key;
    }
    out->s.agent_id = agent;
    out->s.session_key = key;
    out->s.channel_id = channel;
    out->s.thread_id = (thread && *thread) ? thread : NULL;
    out->s.is_dm = is_dm;
    return 1;
}

DG_SETTLED_HANDLER(settled_message_received, dg_hook_message_received)
DG_SETTLED_HANDLER(settled_before_model_resolve, dg_hook_before_model_resolve)
DG_SETTLED_HANDLER(settled_before_prompt_build, dg_hook_before_prompt_build)
DG_SETTLED_HANDLER(settled_message_sending, dg_hook_message_sending)
DG_SETTLED_HANDLER(settled_agent_end, dg_hook_agent_end)

int dg_register_hooks(dg_plugin *p)
{
    if (!p->turns) {
        int rc = dg_turns_new(p, &p->turns);
        if (rc)
            return rc;
    }
    static const struct {
        const char *name;
        oc_hook_fn fn;
    } hooks[] = {
        {"message_received", settled_message_received},
        {"before_model_resolve", settled_before_model_resolve},
        {"before_prompt_build", settled_before_prompt_build},
        {"message_sending", settled_message_sending},
        {"agent_end", settled_agent_end},
    };
    for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
        int rc = p->api->on(p->api->host, hooks[i].name, hooks[i].fn, DG_HOOK_PRIORITY);
        if (rc != OC_OK) {
            dg_log(p, OC_LOG_ERROR, "hooks: the host refused hook %s (%s)", hooks[i].name,
                   oc_status_name(rc));
            return rc;
        }
    }
    return OC_OK;
}
