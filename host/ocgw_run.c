/*
 * ocgw_run.c -- one inbound message through the gateway, as OpenClaw does
 * it, journaled so that a SIGKILLed gateway resumes without loss or
 * duplicates:
 *
 *   1. message_received, once per agent account that sees the channel (the
 *      author's own account excepted), ctx {channelId, accountId,
 *      sessionKey} (the agent's session of the message's scope);
 *   2. decisions: for every such agent, its session is touched; with the
 *      claim hooks (gateway.claimHooks, default on) before_agent_reply
 *      runs first, and a {handled: true} run is *claimed*: no model call,
 *      its output is OpenClaw's fallback text, agent_end fires only with
 *      gateway.agentEndAfterClaim, and the fallback goes through
 *      reply_payload_sending like any payload (cancelled: nothing posted).
 *      Otherwise before_model_resolve runs (merged hook result, else the session's
 *      persistent override, else the agent's model). All decisions are made
 *      -- and saved -- before any run executes, as the runs of one message
 *      start together in a real gateway; the runs on the no-reply model
 *      (instant) then finish before the real ones;
 *   3. each run: before_prompt_build (appended context recorded); the model
 *      (no-reply pair: NO_REPLY at no cost; else the agent's scenario step:
 *      replies, tool calls through the host core with the trusted context,
 *      files written into the workspace, silence); agent_end {runId,
 *      success, output, toolCalls}; for a non-silent answer message_sending
 *      and a POST with the agent's own token and a nonce derived from
 *      (agent, channel, message), so a resend after a crash is no duplicate;
 *   4. the channel's cursor moves past the message.
 *
 * Journal (state "inflight"): {"message": {...}, "phase": "new"|"runs",
 * "runs": [{"agent", "sessionKey", "runId", "provider", "model", "noReply",
 * "why", "phase": "decided"|"model"|"model_done"|"ended"|"done", "step",
 * "act", "attempt", "toolStarted", "output", "toolCalls", "success",
 * "vars", "post", "cancelled"}]}. Every phase change is saved before the
 * next effect. A hook that may run twice after a crash gets the same runId
 * (plugins can dedup on it); a tool call interrupted by a crash is made
 * again with the same ctx.toolCallId.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocgw.h"

/* ---- messages <-> JSON ---------------------------------------------------------------------- */

void ocgw_msg_free(ocgw_msg *m)
{
    if (!m)
        return;
    free(m->id);
    free(m->channel_id);
    free(m->thread_id);
    free(m->author_id);
    free(m->content);
    for (size_t i = 0; i < m->n_mentions; i++)
        free(m->mentions[i]);
    free(m->mentions);
    memset(m, 0, sizeof *m);
}

json_t *ocgw_msg_to_json(const ocgw_msg *m)
{
    json_t *mn = json_array();
    for (size_t i = 0; i < m->n_mentions; i++)
        json_array_append_new(mn, json_string(m->mentions[i]));
    return json_pack("{s:s, s:s, s:s?, s:s, s:b, s:s, s:o}", "id", m->id, "channelId",
                     m->channel_id, "threadId", m->thread_id, "authorId", m->author_id, "authorBot",
                     m->author_bot, "content", m->content ? m->content : "", "mentions", mn);
}

int ocgw_msg_from_json(const json_t *j, ocgw_msg *m)
{
    memset(m, 0, sizeof *m);
    const char *id = json_string_value(json_object_get(j, "id"));
    const char *ch = json_string_value(json_object_get(j, "channelId"));
    const char *au = json_string_value(json_object_get(j, "authorId"));
    if (!id || !ch || !au)
        return -1;
    m->id = strdup(id);
    m->channel_id = strdup(ch);
    m->thread_id = ocgw_strdup(json_string_value(json_object_get(j, "threadId")));
    m->author_id = strdup(au);
    m->author_bot = json_is_true(json_object_get(j, "authorBot"));
    m->content = ocgw_strdup(json_string_value(json_object_get(j, "content")));
    json_t *mn = json_object_get(j, "mentions");
    m->mentions = calloc(json_array_size(mn) + 1, sizeof *m->mentions);
    size_t i;
    json_t *v;
    json_array_foreach(mn, i, v)
        if (json_is_string(v))
            m->mentions[m->n_mentions++] = strdup(json_string_value(v));
    return 0;
}

/* ---- small pieces ---------------------------------------------------------------------------- */

static const char *sget(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static long iget(const json_t *o, const char *k)
{
    return (long)json_integer_value(json_object_get(o, k));
}

static void sset(json_t *o, const char *k, const char *v)
{
    json_object_set_new(o, k, v ? json_string(v) : json_null());
}

static void iset(json_t *o, const char *k, long v)
{
    json_object_set_new(o, k, json_integer(v));
}

void ocgw_save_state(ocgw *g)
{
    if (ocgw_state_save(&g->st) != 0)
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                "cannot write the state file %s (%s): a crash now would repeat work", g->st.path,
                strerror(errno));
}

/* The platform's name, as OpenClaw's messageProvider and session keys say it. */
static const char *provider(const ocgw *g)
{
    return g->cfg.slack ? "slack" : "discord";
}

static char *session_key(const ocgw *g, const char *agent, const ocgw_msg *m)
{
    if (g->cfg.slack) {
        /* OpenClaw lower-cases the Slack channel id inside its keys. */
        char low[32];
        size_t i = 0;
        for (; m->channel_id[i] && i + 1 < sizeof low; i++)
            low[i] = (char)(m->channel_id[i] >= 'A' && m->channel_id[i] <= 'Z'
                                ? m->channel_id[i] - 'A' + 'a'
                                : m->channel_id[i]);
        low[i] = 0;
        if (m->thread_id)
            return dg_sprintf("agent:%s:slack:channel:%s:thread:%s", agent, low, m->thread_id);
        return dg_sprintf("agent:%s:slack:channel:%s", agent, low);
    }
    if (m->thread_id)
        return dg_sprintf("agent:%s:discord:channel:%s:thread:%s", agent, m->channel_id,
                          m->thread_id);
    return dg_sprintf("agent:%s:discord:channel:%s", agent, m->channel_id);
}

/* Agent-hook context (docs/abi.md) and, with tool_call_id, the tool context. */
static json_t *agent_ctx(ocgw *g, const ocgw_agent *a, const json_t *run, const ocgw_msg *m,
                         const char *tool_call_id)
{
    /* sessionId: the key until !dirigent rotate reset the session (ABI 1.1). */
    char *sid = och_session_id(g->host, sget(run, "sessionKey"));
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b}", "agentId",
                            a->id, "sessionKey", sget(run, "sessionKey"), "sessionId",
                            sid ? sid : sget(run, "sessionKey"), "workspaceDir", a->workspace,
                            "channelId", m->channel_id, "accountId", a->id, "messageProvider",
                            provider(g), "runId", sget(run, "runId"), "senderId", m->author_id,
                            "trigger", "message", "senderIsOwner", 0);
    free(sid);
    if (m->thread_id)
        sset(ctx, "threadId", m->thread_id);
    if (g->cfg.guild_id)
        sset(ctx, "guildId", g->cfg.guild_id);
    if (sget(run, "provider"))
        sset(ctx, "modelProviderId", sget(run, "provider"));
    if (sget(run, "model"))
        sset(ctx, "modelId", sget(run, "model"));
    if (tool_call_id)
        sset(ctx, "toolCallId", tool_call_id);
    return ctx;
}

void ocgw_nonce(char out[26], char tag, const char *a, const char *b, const char *c)
{
    snprintf(out, 26, "%c%016llx", tag, (unsigned long long)ocgw_hash(a, b, c, NULL));
}

/* ---- step 1 and 2: message_received and the decisions ------------------------------------------ */

static void fire_received(ocgw *g, const ocgw_msg *m, json_t *agents)
{
    json_t *mentions = json_array();
    for (size_t i = 0; i < m->n_mentions; i++)
        json_array_append_new(mentions, json_string(m->mentions[i]));
    json_t *ev =
        json_pack("{s:s, s:s, s:b, s:s, s:b, s:s, s:o}", "messageId", m->id, "channelId",
                  m->channel_id, "isDm", 0, "senderId", m->author_id, "senderIsBot", m->author_bot,
                  "content", m->content ? m->content : "", "mentions", mentions);
    if (m->thread_id)
        sset(ev, "threadId", m->thread_id);
    if (g->cfg.guild_id)
        sset(ev, "guildId", g->cfg.guild_id);
    size_t i;
    json_t *v;
    json_array_foreach(agents, i, v) {
        const ocgw_agent *a = ocgw_agent_by_id(&g->cfg, json_string_value(v));
        /* An agent another gateway runs gets the message there (its own
         * account reports it to that gateway's plugin instance). */
        if (!a || !a->local || !strcmp(a->user_id, m->author_id))
            continue;
        /* Per agent session, as OpenClaw reports it: the plugin learns that
         * the message reached this agent's session (what arms its nudge). */
        char *key = session_key(g, a->id, m);
        json_t *ctx = key ? json_pack("{s:s, s:s, s:s}", "channelId", m->channel_id, "accountId",
                                      a->id, "sessionKey", key)
                          : NULL;
        free(key);
        if (ctx && g->cfg.slack)
            sset(ctx, "messageProvider", "slack");
        if (ctx)
            och_hook_dispatch(g->host, "message_received", ev, ctx, NULL);
        json_decref(ctx);
    }
    json_decref(ev);
    ocgw_maybe_die(g, "after-received");
}

static json_t *decide(ocgw *g, const ocgw_agent *a, const ocgw_msg *m)
{
    char *key = session_key(g, a->id, m);
    char run_id[64];
    snprintf(run_id, sizeof run_id, "ocgw-%016llx",
             (unsigned long long)ocgw_hash(a->id, m->channel_id, m->id, "run", NULL));
    json_t *run =
        json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:b, s:{}}", "agent", a->id,
                  "sessionKey", key, "runId", run_id, "phase", "decided", "step", -1, "act", 0,
                  "attempt", 0, "toolStarted", -1, "toolCalls", 0, "success", 1, "vars");
    free(key);
    int rc =
        och_session_touch(g->host, sget(run, "sessionKey"), a->id, m->channel_id, m->thread_id);
    if (rc)
        och_log(g->host, OC_LOG_WARN, OCGW_SOURCE, "session %s not recorded: %s",
                sget(run, "sessionKey"), oc_status_name(rc));
    sset(run, "provider", a->provider);
    sset(run, "model", a->model);
    json_t *ctx = agent_ctx(g, a, run, m, NULL);
    json_t *res = NULL;
    if (g->cfg.claim_hooks) {
        json_t *cev = json_pack("{s:s}", "cleanedBody", m->content ? m->content : "");
        och_hook_dispatch(g->host, "before_agent_reply", cev, ctx, &res);
        json_decref(cev);
        if (json_is_true(json_object_get(res, "handled"))) {
            const char *why = sget(res, "reason");
            sset(run, "why", why ? why : "before_agent_reply");
            json_object_set_new(run, "claimed", json_true());
            json_object_set_new(run, "noReply", json_false());
            json_decref(res);
            json_decref(ctx);
            return run;
        }
        json_decref(res);
        res = NULL;
    }
    json_t *ev = json_pack("{s:s}", "prompt", m->content ? m->content : "");
    och_hook_dispatch(g->host, "before_model_resolve", ev, ctx, &res);
    char *sp = NULL, *sm = NULL;
    och_session_override(g->host, sget(run, "sessionKey"), &sp, &sm);
    const char *hp = sget(res, "providerOverride"), *hm = sget(res, "modelOverride");
    const char *why = "default";
    const char *prov = a->provider, *model = a->model;
    if (sp && sm) {
        prov = sp;
        model = sm;
        why = "session override";
    }
    if (hp || hm) {
        prov = hp ? hp : prov;
        model = hm ? hm : model;
        why = "before_model_resolve";
    }
    sset(run, "provider", prov);
    sset(run, "model", model);
    sset(run, "why", why);
    json_object_set_new(run, "noReply",
                        json_boolean(!strcmp(prov, g->cfg.noreply_provider) &&
                                     !strcmp(model, g->cfg.noreply_model)));
    free(sp);
    free(sm);
    json_decref(res);
    json_decref(ev);
    json_decref(ctx);
    return run;
}

/* ---- step 3: one run ------------------------------------------------------------------------------ */

/* Deep copy of params with {{var}} substituted in every string. */
static json_t *subst_json(ocgw *g, const json_t *j, const json_t *vars, char *err, size_t n)
{
    if (json_is_string(j)) {
        char *s = ocgw_subst(g, json_string_value(j), vars, err, n);
        if (!s)
            return NULL;
        json_t *r = json_string(s);
        free(s);
        return r;
    }
    if (json_is_object(j)) {
        json_t *o = json_object();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) {
            json_t *c = subst_json(g, v, vars, err, n);
            if (!c) {
                json_decref(o);
                return NULL;
            }
            json_object_set_new(o, k, c);
        }
        return o;
    }
    if (json_is_array(j)) {
        json_t *a = json_array();
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) {
            json_t *c = subst_json(g, v, vars, err, n);
            if (!c) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, c);
        }
        return a;
    }
    return json_deep_copy(j);
}

static void prompt_build(ocgw *g, const ocgw_agent *a, json_t *run, const ocgw_msg *m)
{
    json_t *ctx = agent_ctx(g, a, run, m, NULL);
    json_t *ev = json_pack("{s:s, s:s}", "prompt", m->content ? m->content : "", "systemPrompt",
                           a->system_prompt ? a->system_prompt
                                            : "You are an agent of an OpenClaw-style gateway.");
    json_t *res = NULL;
    och_hook_dispatch(g->host, "before_prompt_build", ev, ctx, &res);
    const char *app = sget(res, "appendSystemContext"), *pre = sget(res, "prependContext");
    if (app || pre) {
        /* The same context on every run of a session: shown the first time
         * (and when it changes), counted every time. */
        size_t n = strlen(app ? app : "") + strlen(pre ? pre : "");
        json_t *seen = ocgw_state_obj(&g->st, "promptContext");
        const char *key = sget(run, "sessionKey");
        json_t *had = json_object_get(seen, key);
        if (!had ||
            strcmp(sget(had, "appendSystemContext") ? sget(had, "appendSystemContext") : "",
                   app ? app : "") ||
            strcmp(sget(had, "prependContext") ? sget(had, "prependContext") : "",
                   pre ? pre : "")) {
            char *line = ocgw_oneline(app ? app : pre, 60);
            ocgw_detail(g,
                        "      %s: before_prompt_build adds %zu chars to its session's prompt "
                        "(%s: \"%s\")",
                        a->id, n, app ? "appendSystemContext" : "prependContext", line ? line : "");
            free(line);
            json_t *rec = json_object();
            if (app)
                sset(rec, "appendSystemContext", app);
            if (pre)
                sset(rec, "prependContext", pre);
            json_object_set_new(seen, key, rec);
        }
        ocgw_state_count(&g->st, "promptContexts", 1);
    }
    json_decref(res);
    json_decref(ev);
    json_decref(ctx);
}

static void pick_step(ocgw *g, const ocgw_agent *a, json_t *run, const ocgw_msg *m)
{
    json_t *steps = ocgw_state_obj(&g->st, "steps");
    json_t *used = json_object_get(steps, a->id);
    if (!json_is_array(used)) {
        json_object_set_new(steps, a->id, json_array());
        used = json_object_get(steps, a->id);
    }
    for (size_t i = 0; i < a->scen.n_steps; i++) {
        const ocgw_step *s = &a->scen.steps[i];
        int was_used = 0;
        size_t k;
        json_t *v;
        json_array_foreach(used, k, v)
            was_used |= json_integer_value(v) == (json_int_t)i;
        if (was_used && !s->repeat)
            continue;
        if (!ocgw_match_msg(g, &s->when, m, a))
            continue;
        iset(run, "step", (long)i);
        if (!s->repeat)
            json_array_append_new(used, json_integer((json_int_t)i));
        return;
    }
    iset(run, "step", -1);
}

static void record_tool(ocgw *g, const char *agent, const char *tool, int status, const char *msg)
{
    json_t *tools = json_object_get(g->st.doc, "tools");
    if (!json_is_array(tools)) {
        json_object_set_new(g->st.doc, "tools", json_array());
        tools = json_object_get(g->st.doc, "tools");
    }
    json_t *e = json_pack("{s:s, s:s, s:s}", "agent", agent, "tool", tool, "status",
                          oc_status_name(status));
    if (msg)
        sset(e, "message", msg);
    json_array_append_new(tools, e);
}

/* Returns 0 when the action is done, 1 when it must be retried later. */
static int do_tool(ocgw *g, const ocgw_agent *a, json_t *run, const ocgw_msg *m,
                   const ocgw_action *act)
{
    json_t *vars = json_object_get(run, "vars");
    long idx = iget(run, "act");
    char err[400];
    json_t *params = subst_json(g, act->params, vars, err, sizeof err);
    if (!params) {
        ocgw_say(g, "      %s: tool %s not called: %s", a->id, act->tool, err);
        sset(vars, "lastError", err);
        json_object_set_new(run, "success", json_false());
        return 0;
    }
    char call_id[80];
    snprintf(call_id, sizeof call_id, "%s:%ld:%ld", sget(run, "runId"), idx, iget(run, "attempt"));
    if (iget(run, "toolStarted") == idx)
        ocgw_say(g,
                 "      %s: (the gateway restarted during this call: made again with the "
                 "same toolCallId %s)",
                 a->id, call_id);
    iset(run, "toolStarted", idx);
    ocgw_save_state(g);
    char *pj = json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS);
    char *pl = ocgw_oneline(pj, 300);
    ocgw_say(g, "      %s -> tool %s %s", a->id, act->tool, pl ? pl : "");
    free(pj);
    free(pl);
    json_t *ctx = agent_ctx(g, a, run, m, call_id);
    json_t *res = NULL;
    int rc = och_tool_call(g->host, act->tool, params, ctx, &res);
    json_decref(ctx);
    json_decref(params);
    ocgw_maybe_die(g, "after-tool");
    json_t *details = json_object_get(res, "details");
    const char *emsg = sget(json_object_get(res, "error"), "message");
    iset(run, "toolCalls", iget(run, "toolCalls") + 1);
    ocgw_state_count(&g->st, "toolCalls", 1);
    record_tool(g, a->id, act->tool, rc, emsg);
    if (rc == OC_OK) {
        char *dj = json_dumps(details ? details : json_null(),
                              JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        char *dl = ocgw_oneline(dj, 300);
        ocgw_say(g, "      %s <- %s OC_OK %s", a->id, act->tool, dl ? dl : "");
        free(dj);
        free(dl);
        const char *k;
        json_t *v;
        json_object_foreach(details, k, v) {
            char name[160];
            snprintf(name, sizeof name, "result.%s", k);
            if (json_is_string(v))
                sset(vars, name, json_string_value(v));
            else if (json_is_integer(v)) {
                char num[32];
                snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
                sset(vars, name, num);
            }
        }
        json_object_foreach(act->bind, k, v) {
            const char *val = sget(details, json_string_value(v));
            if (val) {
                sset(ocgw_state_obj(&g->st, "vars"), k, val);
                ocgw_detail(g, "      %s: {{%s}} = %s", a->id, k, val);
            } else {
                ocgw_say(g, "      %s: details.%s missing: {{%s}} stays unbound", a->id,
                         json_string_value(v), k);
            }
        }
        const char *cid = sget(details, "channelId");
        if (cid && ocgw_chan_id_valid(g, cid)) {
            const char *alias = NULL;
            json_object_foreach(act->bind, k, v)
                if (!strcmp(json_string_value(v), "channelId"))
                    alias = k;
            ocgw_learn_channel(g, cid, a->id, alias);
        }
        json_object_del(vars, "lastError");
    } else {
        ocgw_state_count(&g->st, "toolErrors", 1);
        ocgw_say(g, "      %s <- %s %s: %s", a->id, act->tool, oc_status_name(rc),
                 emsg ? emsg : "(no message)");
        sset(vars, "lastError", emsg ? emsg : oc_status_name(rc));
        sset(vars, "lastErrorCode", oc_status_name(rc));
        if (rc == OC_ERR_IO && iget(run, "attempt") < act->retries) {
            /* The scripted agent tries again, as a model told "Discord
             * failed, try again" would. */
            iset(run, "attempt", iget(run, "attempt") + 1);
            iset(run, "toolStarted", -1);
            json_decref(res);
            ocgw_save_state(g);
            return 1;
        }
    }
    json_decref(res);
    iset(run, "toolStarted", -1);
    iset(run, "attempt", 0);
    return 0;
}

static int do_write(ocgw *g, const ocgw_agent *a, json_t *run, const ocgw_action *act)
{
    json_t *vars = json_object_get(run, "vars");
    char err[400];
    char *content = ocgw_subst(g, act->text, vars, err, sizeof err);
    char *rel = content ? ocgw_subst(g, act->path, vars, err, sizeof err) : NULL;
    if (!content || !rel || strstr(rel, "..") || rel[0] == '/') {
        ocgw_say(g, "      %s: file not written: %s", a->id,
                 (!content || !rel) ? err : "the path leaves the workspace");
        free(content);
        free(rel);
        json_object_set_new(run, "success", json_false());
        return 0;
    }
    char *path = dg_sprintf("%s/%s", a->workspace, rel);
    char *slash = path ? strrchr(path, '/') : NULL;
    int ok = 0;
    if (slash) {
        *slash = 0;
        ok = ocgw_mkdirs(path, 0755) == 0;
        *slash = '/';
    }
    ok = ok && ocgw_write_file(path, content, strlen(content), g->cfg.fsync) == 0;
    ocgw_say(g, "      %s -> write %s (%zu bytes)%s", a->id, rel, strlen(content),
             ok ? "" : " FAILED");
    iset(run, "toolCalls", iget(run, "toolCalls") + 1);
    ocgw_state_count(&g->st, "filesWritten", ok ? 1 : 0);
    if (!ok)
        json_object_set_new(run, "success", json_false());
    free(path);
    free(content);
    free(rel);
    return 0;
}

/* The scripted model, resumable at run.act. 0 done, 1 retry later. */
/* What the scripted model "spent", reported as OpenClaw reports a real
 * one (model_call_ended, llm_output): tokens estimated at four characters
 * each of the message read and the text written, at least one. */
static void report_usage(ocgw *g, const ocgw_agent *a, const json_t *run, const ocgw_msg *m)
{
    const char *out = sget(run, "output");
    json_int_t in_tok = (json_int_t)(strlen(m->content ? m->content : "") / 4 + 1);
    json_int_t out_tok = (json_int_t)(strlen(out ? out : "") / 4 + 1);
    json_t *ctx = agent_ctx(g, a, run, m, NULL);
    json_t *call = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s}", "runId", sget(run, "runId"),
                             "callId", sget(run, "runId"), "provider", sget(run, "provider"),
                             "model", sget(run, "model"), "durationMs", 0, "outcome", "completed");
    json_t *llm = json_pack("{s:s, s:s, s:s, s:{s:I, s:I}}", "runId", sget(run, "runId"),
                            "provider", sget(run, "provider"), "model", sget(run, "model"), "usage",
                            "input", in_tok, "output", out_tok);
    if (ctx && call && llm) {
        och_hook_dispatch(g->host, "model_call_ended", call, ctx, NULL);
        och_hook_dispatch(g->host, "llm_output", llm, ctx, NULL);
    }
    json_decref(call);
    json_decref(llm);
    json_decref(ctx);
}

static int run_model(ocgw *g, const ocgw_agent *a, json_t *run, const ocgw_msg *m)
{
    long si = iget(run, "step");
    const ocgw_step *s = si >= 0 && (size_t)si < a->scen.n_steps ? &a->scen.steps[si] : NULL;
    json_t *vars = json_object_get(run, "vars");
    sset(vars, "channel", ocgw_chan_key(g, m));
    sset(vars, "message.id", m->id);
    sset(vars, "agent", a->id);
    while (s && iget(run, "act") < (long)s->n_acts) {
        const ocgw_action *act = &s->acts[iget(run, "act")];
        if (act->kind == OCGW_ACT_TOOL) {
            if (do_tool(g, a, run, m, act))
                return 1;
        } else if (act->kind == OCGW_ACT_WRITE) {
            do_write(g, a, run, act);
        } else if (act->kind == OCGW_ACT_REPLY) {
            char err[400];
            char *t = ocgw_subst(g, act->text, vars, err, sizeof err);
            if (!t) {
                ocgw_say(g, "      %s: reply not made: %s", a->id, err);
                json_object_set_new(run, "success", json_false());
            } else {
                sset(run, "output", t);
                free(t);
            }
        } else {
            sset(run, "output", "NO_REPLY");
        }
        iset(run, "act", iget(run, "act") + 1);
        ocgw_save_state(g);
    }
    if (!sget(run, "output"))
        sset(run, "output", s ? "" : "NO_REPLY");
    return 0;
}

/* reply_payload_sending of the run's output (OpenClaw's gateway ctx):
 * 1 when a handler cancelled it; *text (malloc'd, caller frees) gets the
 * text to send, rewritten or not. */
static int payload_sending(ocgw *g, const ocgw_agent *a, json_t *run, const ocgw_msg *m,
                           char **text)
{
    const char *out = sget(run, "output");
    char *conv = dg_sprintf("channel:%s", ocgw_chan_key(g, m));
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s, s:s}", "channelId", provider(g), "accountId",
                            a->id, "conversationId", conv, "sessionKey", sget(run, "sessionKey"),
                            "runId", sget(run, "runId"));
    json_t *ev =
        json_pack("{s:{s:s, s:b}, s:s, s:s, s:s, s:s}", "payload", "text", out, "isError",
                  json_is_true(json_object_get(run, "isError")), "kind", "final", "channel",
                  provider(g), "sessionKey", sget(run, "sessionKey"), "runId", sget(run, "runId"));
    free(conv);
    json_t *res = NULL;
    och_hook_dispatch(g->host, "reply_payload_sending", ev, ctx, &res);
    json_decref(ev);
    json_decref(ctx);
    int cancelled = json_is_true(json_object_get(res, "cancel"));
    const char *nt = sget(json_object_get(res, "payload"), "text");
    *text = cancelled ? NULL : strdup(nt ? nt : out);
    if (cancelled) {
        const char *why = sget(res, "reason");
        /* After a claim the cancel is expected (the host's fallback text):
         * an internal line; any other cancel is news. */
        if (json_is_true(json_object_get(run, "claimed")))
            ocgw_detail(g, "      %s: reply_payload_sending cancelled the payload: %s", a->id,
                        why ? why : "(no reason)");
        else
            ocgw_say(g, "      %s: reply_payload_sending cancelled the payload: %s", a->id,
                     why ? why : "(no reason)");
        sset(run, "cancelled", why ? why : "");
        ocgw_state_count(&g->st, "cancelledSends", 1);
    }
    json_decref(res);
    return cancelled;
}

static int send_reply(ocgw *g, const ocgw_agent *a, json_t *run, const ocgw_msg *m)
{
    char *out = NULL;
    if (payload_sending(g, a, run, m, &out))
        return 0;
    json_t *ctx = agent_ctx(g, a, run, m, NULL);
    json_t *ev = json_pack("{s:s, s:s}", "to", m->channel_id, "content", out);
    if (m->thread_id)
        sset(ev, "threadId", m->thread_id);
    json_t *res = NULL;
    och_hook_dispatch(g->host, "message_sending", ev, ctx, &res);
    json_decref(ev);
    json_decref(ctx);
    if (json_is_true(json_object_get(res, "cancel"))) {
        const char *why = sget(res, "cancelReason");
        ocgw_say(g, "      %s: message_sending cancelled the reply: %s", a->id,
                 why ? why : "(no reason)");
        sset(run, "cancelled", why ? why : "");
        ocgw_state_count(&g->st, "cancelledSends", 1);
        json_decref(res);
        free(out);
        return 0;
    }
    char *content = strdup(sget(res, "content") ? sget(res, "content") : out);
    free(out);
    json_decref(res);
    json_t *ids = ocgw_user_mentions(content);
    const char *mention[100];
    size_t nm = 0;
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v)
        if (nm < 100)
            mention[nm++] = json_string_value(v);
    char nonce[26];
    ocgw_nonce(nonce, 'a', a->id, ocgw_chan_key(g, m), m->id);
    char *mid = NULL;
    dg_discord_err e;
    int rc;
    if (g->cfg.slack) {
        /* In the thread of the message, as OpenClaw's Slack plugin answers
         * a reply; at the top level otherwise. */
        ocgw_slack_err se;
        rc = ocgw_slack_post(a->sc, m->channel_id, m->thread_id, content, nonce, &mid, &se);
        memset(&e, 0, sizeof e);
        e.attempts = se.attempts;
        e.retryable = se.retryable;
        snprintf(e.message, sizeof e.message, "%s", se.message);
    } else {
        rc = dg_discord_post_message(a->dc, ocgw_chan_key(g, m), content, mention, nm, nonce, &mid,
                                     &e);
    }
    ocgw_rest_post(g, e.attempts, a->id);
    json_decref(ids);
    if (rc == OC_OK) {
        ocgw_maybe_die(g, "after-post");
        char *line = ocgw_pretty(g, content, 60);
        ocgw_say(g, "      %s: posted \"%s\"", a->id, line ? line : "");
        free(line);
        sset(run, "post", mid);
        ocgw_state_count(&g->st, "agentPosts", 1);
        free(mid);
        free(content);
        return 0;
    }
    free(content);
    if (e.retryable) {
        och_log(g->host, OC_LOG_WARN, OCGW_SOURCE, "%s: post to %s failed for now (%s); retrying",
                a->id, ocgw_chan_key(g, m), e.message);
        return 1;
    }
    ocgw_say(g, "      %s: post refused by %s: %s", a->id, g->cfg.slack ? "Slack" : "Discord",
             e.message);
    sset(run, "cancelled", e.message);
    ocgw_state_count(&g->st, "failedPosts", 1);
    return 0;
}

/* One run to its end; 0 done, 1 retry later. */
static int do_run(ocgw *g, json_t *run, const ocgw_msg *m)
{
    const ocgw_agent *a = ocgw_agent_by_id(&g->cfg, sget(run, "agent"));
    if (!a || !a->local) {
        sset(run, "phase", "done");
        return 0;
    }
    const char *ph = sget(run, "phase");
    int claimed = json_is_true(json_object_get(run, "claimed"));
    int real = !claimed && !json_is_true(json_object_get(run, "noReply"));
    if (!strcmp(ph, "decided") && claimed) {
        /* OpenClaw: no model call; the inbound message stays in the
         * transcript; the host then offers its fallback text. */
        ocgw_say(g, "      %s: claimed by before_agent_reply (%s) -> no model call", a->id,
                 sget(run, "why"));
        sset(run, "output", "I finished the turn, but it did not produce a visible reply.");
        /* OpenClaw marks this fallback as an error notice (isError). */
        json_object_set_new(run, "isError", json_true());
        sset(run, "phase", g->cfg.agent_end_after_claim ? "model_done" : "ended");
        ocgw_save_state(g);
        ph = sget(run, "phase");
    }
    if (!strcmp(ph, "decided")) {
        prompt_build(g, a, run, m);
        if (!real) {
            ocgw_say(g, "      %s: swapped to %s/%s (%s) -> NO_REPLY, no model cost", a->id,
                     sget(run, "provider"), sget(run, "model"), sget(run, "why"));
            sset(run, "output", "NO_REPLY");
            sset(run, "phase", "model_done");
        } else {
            pick_step(g, a, run, m);
            ocgw_state_count(&g->st, "realModelCalls", 1);
            long si = iget(run, "step");
            const char *other =
                strcmp(sget(run, "provider"), a->provider) || strcmp(sget(run, "model"), a->model)
                    ? " (the scripted model stands in for it)"
                    : "";
            if (si >= 0)
                ocgw_say(g, "      %s: real model %s/%s%s, step \"%s\"", a->id,
                         sget(run, "provider"), sget(run, "model"), other,
                         a->scen.steps[si].name ? a->scen.steps[si].name : "(unnamed)");
            else
                ocgw_say(g, "      %s: real model %s/%s%s, no step matches -> NO_REPLY", a->id,
                         sget(run, "provider"), sget(run, "model"), other);
            sset(run, "phase", "model");
        }
        ocgw_save_state(g);
        ph = sget(run, "phase");
    }
    if (!strcmp(ph, "model")) {
        /* In flight for run_abort (ABI 1.1): an aborted run posts nothing. */
        och_run_begin(g->host, sget(run, "sessionKey"));
        int failed = run_model(g, a, run, m);
        if (och_run_end(g->host, sget(run, "sessionKey")) && !failed) {
            ocgw_say(g, "      %s: run aborted (run_abort) -> nothing posted", a->id);
            sset(run, "output", "");
            json_object_set_new(run, "success", json_false());
        }
        if (failed)
            return 1;
        report_usage(g, a, run, m);
        sset(run, "phase", "model_done");
        ocgw_save_state(g);
        ph = sget(run, "phase");
    }
    if (!strcmp(ph, "model_done")) {
        json_t *ctx = agent_ctx(g, a, run, m, NULL);
        json_t *ev = json_pack("{s:s, s:b, s:s, s:i}", "runId", sget(run, "runId"), "success",
                               json_is_true(json_object_get(run, "success")), "output",
                               sget(run, "output"), "toolCalls", (int)iget(run, "toolCalls"));
        och_hook_dispatch(g->host, "agent_end", ev, ctx, NULL);
        json_decref(ev);
        json_decref(ctx);
        ocgw_maybe_die(g, "after-agent-end");
        sset(run, "phase", "ended");
        ocgw_save_state(g);
        ph = sget(run, "phase");
    }
    if (!strcmp(ph, "ended")) {
        const char *out = sget(run, "output");
        if (real && out && *out && ocgw_is_silent(out))
            ocgw_say(g, "      %s: answered NO_REPLY (silent, nothing posted)", a->id);
        else if (real && out && !*out)
            ocgw_say(g, "      %s: tool calls only, nothing to post", a->id);
        if (out && *out && !ocgw_is_silent(out) && send_reply(g, a, run, m))
            return 1;
        sset(run, "phase", "done");
        ocgw_state_count(&g->st, "runs", 1);
        /* Without the plugin the moderator posts nothing: a run on its
         * post is no run OpenClaw alone would have made. */
        if (g->cfg.moderator_user_id && !strcmp(m->author_id, g->cfg.moderator_user_id))
            ocgw_state_count(&g->st, "moderatorRuns", 1);
        if (!real)
            ocgw_state_count(&g->st, claimed ? "claimedRuns" : "noReplySwaps", 1);
        if (!real)
            ocgw_state_count(&g->st, "silencedRuns", 1);
        ocgw_save_state(g);
    }
    return 0;
}

/* ---- the message ------------------------------------------------------------------------------------ */

int ocgw_begin_message(ocgw *g, const ocgw_msg *m)
{
    json_t *inf =
        json_pack("{s:o, s:s, s:[]}", "message", ocgw_msg_to_json(m), "phase", "new", "runs");
    if (!inf)
        return -1;
    json_object_set_new(g->st.doc, "inflight", inf);
    return 0;
}

static void say_message(ocgw *g, const ocgw_msg *m, int resumed)
{
    char *line = ocgw_pretty(g, m->content, 200);
    const char *who = ocgw_who(g, m->author_id);
    const char *kind =
        ocgw_agent_by_user(&g->cfg, m->author_id)   ? "agent"
        : ocgw_human_by_user(&g->cfg, m->author_id) ? "human"
        : (g->cfg.moderator_user_id && !strcmp(m->author_id, g->cfg.moderator_user_id))
            ? "moderator bot"
            : (m->author_bot ? "bot" : "user");
    /* A Slack thread reply: the channel and, after '/', the thread. */
    ocgw_say(g, "[#%s%s%s] %s (%s)%s: %s", ocgw_chan_label(g, ocgw_chan_key(g, m)),
             g->cfg.slack && m->thread_id ? " thread " : "",
             g->cfg.slack && m->thread_id ? m->thread_id : "", who, kind,
             resumed ? " [resumed after a restart]" : "", line ? line : "");
    free(line);
}

static int one_of(const char *s, const char *const *set)
{
    for (; s && *set; set++)
        if (!strcmp(s, *set))
            return 1;
    return 0;
}

/* The fields the processing relies on, as ocgw writes them. A journal from
 * elsewhere (a state file edited by hand) is dropped, never half-run. NULL
 * when usable, else what is wrong. */
static const char *journal_fault(const json_t *inf)
{
    static const char *const phases[] = {"new", "runs", NULL};
    static const char *const run_phases[] = {"decided", "model", "model_done",
                                             "ended",   "done",  NULL};
    static const char *const strings[] = {"agent",    "sessionKey", "runId",
                                          "provider", "model",      NULL};
    if (!one_of(sget(inf, "phase"), phases))
        return "its phase is not \"new\" or \"runs\"";
    const json_t *runs = json_object_get(inf, "runs");
    if (!json_is_array(runs))
        return "its runs are not an array";
    size_t i;
    json_t *run;
    json_array_foreach(runs, i, run) {
        if (!json_is_object(run) || !one_of(sget(run, "phase"), run_phases))
            return "a run has no known phase";
        for (const char *const *k = strings; *k; k++)
            if (!sget(run, *k))
                return "a run lacks its agent, session, run id or model";
    }
    return NULL;
}

int ocgw_process_inflight(ocgw *g)
{
    json_t *inf = json_object_get(g->st.doc, "inflight");
    if (!json_is_object(inf))
        return 0;
    ocgw_msg m;
    int bad_msg = ocgw_msg_from_json(json_object_get(inf, "message"), &m) != 0;
    const char *fault =
        bad_msg ? "its message lacks id, channelId or authorId" : journal_fault(inf);
    if (fault) {
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                "the journal of the message in flight is malformed (%s); dropping it (state %s)",
                fault, g->st.path);
        if (!bad_msg)
            ocgw_msg_free(&m);
        json_object_set_new(g->st.doc, "inflight", json_null());
        ocgw_save_state(g);
        return -1;
    }
    json_t *runs = json_object_get(inf, "runs");
    if (!strcmp(sget(inf, "phase"), "new")) {
        say_message(g, &m, 0);
        json_t *agents = ocgw_channel_agents(g, ocgw_chan_key(g, &m));
        fire_received(g, &m, agents);
        json_t *real = json_array();
        size_t i;
        json_t *v;
        json_array_foreach(agents, i, v) {
            const ocgw_agent *a = ocgw_agent_by_id(&g->cfg, json_string_value(v));
            if (!a || !a->local || !strcmp(a->user_id, m.author_id))
                continue;
            json_t *run = decide(g, a, &m);
            /* no-reply and claimed runs finish first: they are instant in a
             * real gateway */
            json_array_append_new(json_is_true(json_object_get(run, "noReply")) ||
                                          json_is_true(json_object_get(run, "claimed"))
                                      ? runs
                                      : real,
                                  run);
        }
        json_array_extend(runs, real);
        json_decref(real);
        sset(inf, "phase", "runs");
        ocgw_save_state(g);
        ocgw_maybe_die(g, "after-decide");
    } else {
        say_message(g, &m, 1);
    }
    size_t i;
    json_t *run;
    json_array_foreach(runs, i, run) {
        if (!strcmp(sget(run, "phase"), "done"))
            continue;
        if (do_run(g, run, &m)) {
            ocgw_msg_free(&m);
            return 1;
        }
    }
    /* Channels referenced as <#id> become known (a result pointing at a
     * discussion, a planner naming its channel). */
    json_t *crefs = ocgw_channel_refs(m.content);
    json_t *v;
    json_array_foreach(crefs, i, v)
        ocgw_learn_channel(g, json_string_value(v), NULL, NULL);
    json_decref(crefs);
    ocgw_humans_observe(g, &m);
    if (g->cfg.moderator_user_id && !strcmp(m.author_id, g->cfg.moderator_user_id))
        ocgw_state_count(&g->st, "moderatorMessages", 1);
    ocgw_state_count(&g->st, "messages", 1);
    json_t *ch = json_object_get(ocgw_state_obj(&g->st, "channels"), ocgw_chan_key(g, &m));
    if (ch)
        sset(ch, "cursor", m.id);
    json_object_set_new(g->st.doc, "inflight", json_null());
    ocgw_save_state(g);
    ocgw_maybe_die(g, "after-message");
    ocgw_msg_free(&m);
    return 0;
}
