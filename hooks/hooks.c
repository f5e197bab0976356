/*
 * hooks.c -- registration of the turn manager's hooks, and the decoding of
 * the agent-hook context they share.
 */
#include "hooks_int.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "register.h"

const char *dg_json_str(const json_t *obj, const char *key)
{
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int dg_json_str_member(const json_t *v, const char **out)
{
    *out = json_is_string(v) ? json_string_value(v) : NULL;
    return (!v || json_is_null(v) || json_is_string(v)) ? 0 : -1;
}

int dg_json_opt_str(const json_t *obj, const char *key, const char **out)
{
    return dg_json_str_member(json_is_object(obj) ? json_object_get(obj, key) : NULL, out);
}

/* The chat platforms whose channels Dirigent manages, by the name hosts
 * give them (a context's messageProvider, a session key's provider): each
 * only where the config has its section. */
static int managed_provider(const dg_config *cfg, const char *name, size_t len)
{
    return (len == 7 && strncasecmp(name, "discord", 7) == 0 && cfg->has_discord) ||
           (len == 5 && strncasecmp(name, "slack", 5) == 0 && cfg->has_slack);
}

/* As (pf == Discord && !has_discord) || (pf == Slack && !has_slack) for
 * pf = dg_platform_of_channel(channel_id), without scanning the id's shape
 * on every hook call where the answer does not depend on it: with both
 * sections nothing is unmanaged; with one, only an id of the other shape
 * (a Discord id is never Slack's: dg_platform_of_channel asks Discord
 * first). */
int dg_hook_unmanaged_channel(const dg_config *cfg, const char *channel_id)
{
    if (cfg->has_discord && cfg->has_slack)
        return 0;
    if (cfg->has_discord)
        return dg_platform_channel_id_valid(DG_PLATFORM_SLACK, channel_id) &&
               !dg_platform_channel_id_valid(DG_PLATFORM_DISCORD, channel_id);
    if (cfg->has_slack)
        return dg_platform_channel_id_valid(DG_PLATFORM_DISCORD, channel_id);
    return dg_platform_of_channel(channel_id) != 0;
}

int dg_hook_foreign(const dg_config *cfg, const json_t *ctx)
{
    const char *prov = dg_json_str(ctx, "messageProvider");
    if (prov && *prov)
        return !managed_provider(cfg, prov, strlen(prov));
    return dg_hook_foreign_of(cfg, NULL, dg_json_str(ctx, "sessionKey"));
}

int dg_hook_foreign_of(const dg_config *cfg, const char *prov, const char *key)
{
    if (prov && *prov)
        return !managed_provider(cfg, prov, strlen(prov));
    /* "agent:<id>:<provider>:<kind>:...": the provider of a channel session. */
    if (key && strncmp(key, "agent:", 6) == 0) {
        const char *p = strchr(key + 6, ':');
        const char *q = p ? strchr(p + 1, ':') : NULL;
        if (q && (strncmp(q, ":channel:", 9) == 0 || strncmp(q, ":direct:", 8) == 0 ||
                  strncmp(q, ":group:", 7) == 0))
            return !managed_provider(cfg, p + 1, (size_t)(q - p - 1));
    }
    return 0;
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

/* A DM session of either platform. */
static int key_is_dm(const char *key)
{
    return strstr(key, ":discord:direct:") || strstr(key, ":slack:direct:");
}

/* The channel of a channel session key into out; 1 if found. OpenClaw
 * lower-cases the key, and Slack's ids are upper case: given back so. */
static int key_channel(const char *key, char *out, size_t cap)
{
    if (key_field(key, ":discord:channel:", out, cap))
        return 1;
    if (!key_field(key, ":slack:channel:", out, cap))
        return 0;
    for (char *q = out; *q; q++)
        if (*q >= 'a' && *q <= 'z')
            *q = (char)(*q - 'a' + 'A');
    return 1;
}

int dg_hook_decode_session(const dg_config *cfg, const json_t *ctx, dg_hook_session *out)
{
    memset(out, 0, sizeof *out);
    if (dg_hook_foreign(cfg, ctx))
        return 0; /* another chat platform's session: not ours */
    const char *agent, *key, *channel, *thread;
    static const char *const names[] = {"agentId", "sessionKey", "channelId", "threadId"};
    const char **vals[] = {&agent, &key, &channel, &thread};
    for (size_t i = 0; i < 4; i++) {
        if (dg_json_opt_str(ctx, names[i], vals[i])) {
            snprintf(out->err, sizeof out->err,
                     "ctx.%s is not a string; the host must pass "
                     "ids as JSON strings",
                     names[i]);
            return -1;
        }
    }
    int is_dm = 0;
    if (key && strncmp(key, "agent:", 6) == 0) {
        /* OpenClaw's session key carries what a bridge may not pass. */
        if (!agent && key_field(key, "agent:", out->agent, sizeof out->agent))
            agent = out->agent;
        if (key_is_dm(key))
            is_dm = 1;
        if (!channel && key_channel(key, out->channel, sizeof out->channel))
            channel = out->channel;
        if (!thread && key_field(key, ":thread:", out->thread, sizeof out->thread))
            thread = out->thread;
    }
    if (!agent || !*agent || !channel || !*channel)
        return 0;
    if (strlen(channel) >= DG_SCOPE_ID_MAX || (thread && strlen(thread) >= DG_SCOPE_ID_MAX)) {
        snprintf(out->err, sizeof out->err,
                 "ctx.%s is longer than %d characters: not a "
                 "channel or thread id",
                 strlen(channel) >= DG_SCOPE_ID_MAX ? "channelId" : "threadId",
                 DG_SCOPE_ID_MAX - 1);
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
    return dg_hook_unmanaged_channel(cfg, out->s.channel_id) ? 0 : 1;
}

int dg_hook_decode_recipient(const dg_config *cfg, const json_t *session_key, dg_hook_session *out)
{
    const char *key = NULL;
    if (dg_json_str_member(session_key, &key)) {
        snprintf(out->err, sizeof out->err,
                 "ctx.sessionKey is not a string; the host must pass "
                 "the session key as a JSON string");
        return -1;
    }
    if (!key || strncmp(key, "agent:", 6) != 0)
        return 0; /* no agent session: nothing per agent (out untouched) */
    memset(out, 0, sizeof *out);
    if (key_is_dm(key) || !key_field(key, "agent:", out->agent, sizeof out->agent) ||
        !key_channel(key, out->channel, sizeof out->channel))
        return 0; /* no agent session in a channel: nothing per agent */
    key_field(key, ":thread:", out->thread, sizeof out->thread);
    out->s.agent_id = out->agent;
    out->s.session_key = key;
    out->s.channel_id = out->channel;
    out->s.thread_id = out->thread[0] ? out->thread : NULL;
    return dg_hook_unmanaged_channel(cfg, out->s.channel_id) ? 0 : 1;
}

/* "channel:<c>" -> c copied into out; 1 when found. */
static int conversation_channel(const char *conv, char *out, size_t cap)
{
    if (!conv || strncmp(conv, "channel:", 8) != 0)
        return 0;
    return key_field(conv, "channel:", out, cap);
}

int dg_hook_decode_outbound(const dg_config *cfg, const json_t *event, const json_t *ctx,
                            dg_hook_session *out)
{
    const char *agent = NULL, *key = NULL, *conv = NULL, *to = NULL;
    if (dg_json_opt_str(ctx, "agentId", &agent)) {
        memset(out, 0, sizeof *out);
        snprintf(out->err, sizeof out->err,
                 "ctx.agentId is not a string; the host must pass "
                 "ids as JSON strings");
        return -1;
    }
    if (agent)
        return dg_hook_decode_session(cfg, ctx, out);
    /* Gateway shape: ctx.channelId names the provider ("discord",
     * "slack"); a host may pass the channel's own id there instead. */
    memset(out, 0, sizeof *out);
    const char *provider = dg_json_str(ctx, "channelId");
    if (dg_hook_foreign(cfg, ctx) ||
        (provider && !managed_provider(cfg, provider, strlen(provider)) &&
         !dg_platform_of_channel(provider)))
        return 0; /* another chat platform's delivery */
    static const char *const names[] = {"sessionKey", "conversationId", "threadId"};
    const char *thread = NULL;
    const char **vals[] = {&key, &conv, &thread};
    for (size_t i = 0; i < 3; i++) {
        if (dg_json_opt_str(ctx, names[i], vals[i])) {
            snprintf(out->err, sizeof out->err,
                     "ctx.%s is not a string; the host must pass "
                     "ids as JSON strings",
                     names[i]);
            return -1;
        }
    }
    if (dg_json_opt_str(event, "to", &to)) {
        snprintf(out->err, sizeof out->err, "event.to is not a string (\"channel:<id>\")");
        return -1;
    }
    if (!key || strncmp(key, "agent:", 6) != 0 ||
        !key_field(key, "agent:", out->agent, sizeof out->agent))
        return 0; /* no agent: nothing to decide */
    if (key_is_dm(key))
        out->s.is_dm = 1;
    if (!key_channel(key, out->channel, sizeof out->channel) &&
        !conversation_channel(conv, out->channel, sizeof out->channel) &&
        !conversation_channel(to, out->channel, sizeof out->channel))
        return 0;
    if (!key_field(key, ":thread:", out->thread, sizeof out->thread) && thread) {
        if (strlen(thread) >= sizeof out->thread) {
            snprintf(out->err, sizeof out->err,
                     "ctx.threadId is longer than %d characters: "
                     "not a thread id",
                     DG_SCOPE_ID_MAX - 1);
            return -1;
        }
        snprintf(out->thread, sizeof out->thread, "%s", thread);
    }
    out->s.agent_id = out->agent;
    out->s.session_key = key;
    out->s.channel_id = out->channel;
    out->s.thread_id = out->thread[0] ? out->thread : NULL;
    return dg_hook_unmanaged_channel(cfg, out->s.channel_id) ? 0 : 1;
}

int dg_hook_run_id(const json_t *event, const json_t *ctx, int meta, const char **out,
                   const char **field)
{
    *out = NULL;
    if (dg_json_opt_str(event, "runId", out)) {
        *field = "event.runId";
        return -1;
    }
    if (!*out && dg_json_opt_str(ctx, "runId", out)) {
        *field = "ctx.runId";
        return -1;
    }
    const json_t *md = meta ? json_object_get(event, "metadata") : NULL;
    if (!*out && json_is_object(md) && dg_json_opt_str(md, "runId", out)) {
        *field = "event.metadata.runId";
        return -1;
    }
    if (*out && !**out)
        *out = NULL;
    return 0;
}

DG_SETTLED_HANDLER(settled_message_received, dg_hook_message_received)
DG_SETTLED_HANDLER(settled_before_model_resolve, dg_hook_before_model_resolve)
DG_SETTLED_HANDLER(settled_before_prompt_build, dg_hook_before_prompt_build)
DG_SETTLED_HANDLER(settled_message_sending, dg_hook_message_sending)
DG_SETTLED_HANDLER(settled_agent_end, dg_hook_agent_end)
DG_SETTLED_HANDLER(settled_before_agent_reply, dg_hook_before_agent_reply)
DG_SETTLED_HANDLER(settled_reply_payload_sending, dg_hook_reply_payload_sending)
DG_SETTLED_HANDLER(settled_model_call_ended, dg_hook_model_call_ended)
DG_SETTLED_HANDLER(settled_llm_output, dg_hook_llm_output)

int dg_register_hooks(dg_plugin *p, const oc_host_api *api)
{
    static const struct {
        const char *name;
        oc_hook_fn fn;
    } hooks[] = {
        {"message_received", settled_message_received},
        {"before_model_resolve", settled_before_model_resolve},
        {"before_prompt_build", settled_before_prompt_build},
        {"message_sending", settled_message_sending},
        {"agent_end", settled_agent_end},
        /* The claim hooks (later additions to ABI v1): a host without them
         * refuses the names, and the swap path does the work alone. */
        {"before_agent_reply", settled_before_agent_reply},
        {"reply_payload_sending", settled_reply_payload_sending},
        /* The usage reports (later additions too): without them the cost
         * ledger counts runs and decisions, not calls and tokens. */
        {"model_call_ended", settled_model_call_ended},
        {"llm_output", settled_llm_output},
    };
    size_t n_core = 5, n_claim = 2, refused = 0;
    p->claim_hooks = 0;
    for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
        int rc = api->on(api->host, hooks[i].name, hooks[i].fn, DG_HOOK_PRIORITY);
        if (rc == OC_ERR_INVALID && i >= n_core + n_claim) {
            dg_log(p, OC_LOG_INFO,
                   "hooks: the host has no %s hook; the cost ledger counts runs and "
                   "decisions without its reports",
                   hooks[i].name);
            continue;
        }
        if (rc == OC_ERR_INVALID && i >= n_core) {
            if (!refused++)
                dg_log(p, OC_LOG_INFO,
                       "hooks: the host has no claim hooks (it refused %s); "
                       "agents without the turn are swapped to the no-reply model instead of "
                       "being claimed",
                       hooks[i].name);
            continue;
        }
        if (rc != OC_OK) {
            dg_log(p, OC_LOG_ERROR, "hooks: the host refused hook %s (%s)", hooks[i].name,
                   oc_status_name(rc));
            return rc;
        }
    }
    p->claim_hooks = refused == 0;
    return OC_OK;
}
