/*
 * usage.c -- what a run cost, as the host reports it, into the cost ledger
 * (dg_turns_usage). Two observe hooks, later additions to ABI v1 that a
 * host may refuse (the ledger then counts decisions only):
 *   model_call_ended  event: runId, model, provider?, sessionKey?, outcome:
 *                     one model call of the run;
 *   llm_output        event: runId, model, provider?, usage {input, output,
 *                     cacheRead?, cacheWrite?}: the run's tokens. Input
 *                     counts cache reads and writes too (they fill the
 *                     context the model reads).
 * The agent session comes from ctx (agentId, sessionKey, channelId) or, for
 * a host that gives a bare context, from event.sessionKey.
 */
#include "hooks_int.h"

#include <stdio.h>
#include <string.h>

/* The session of a usage event: ctx's, else the one event.sessionKey
 * names (*alt: a context made for it, the caller's to json_decref after
 * using hs, which points into it). 1 found, 0 none (not a channel
 * session), -1 malformed (hs->err). */
static int usage_session(const dg_config *cfg, const json_t *event, const json_t *ctx,
                         dg_hook_session *hs, json_t **alt)
{
    *alt = NULL;
    int ok = dg_hook_decode_session(cfg, ctx, hs);
    if (ok != 0)
        return ok;
    const char *key = NULL;
    if (dg_json_opt_str(event, "sessionKey", &key) || !key)
        return 0;
    if (!(*alt = json_pack("{s:s}", "sessionKey", key)))
        return 0;
    return dg_hook_decode_session(cfg, *alt, hs);
}

/* "provider/model" (or model alone) into buf; NULL when the event has none. */
static const char *usage_model(const json_t *event, char *buf, size_t len)
{
    const char *model = dg_json_str(event, "model");
    const char *provider = dg_json_str(event, "provider");
    if (!model || !*model)
        return NULL;
    if (provider && *provider && !strchr(model, '/'))
        snprintf(buf, len, "%s/%s", provider, model);
    else
        snprintf(buf, len, "%s", model);
    return buf;
}

/* A count of event.usage: absent is 0; a negative or non-integer is bad. */
static int usage_count(const json_t *usage, const char *key, int64_t *out)
{
    const json_t *v = json_object_get(usage, key);
    *out = 0;
    if (!v || json_is_null(v))
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (int64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 9e15) {
        *out = (int64_t)json_real_value(v);
        return 0;
    }
    return -1;
}

/* The usage of the run event names, for session hs (ok: what
 * usage_session found). */
static int usage_record(dg_plugin *p, const char *hook, const json_t *event, const json_t *ctx,
                        int ok, const dg_hook_session *hs, int64_t calls, int64_t tin, int64_t tout)
{
    if (ok < 0) {
        dg_log(p, OC_LOG_WARN, "%s: %s; the usage is not counted", hook, hs->err);
        return OC_ERR_INVALID;
    }
    if (!ok || hs->s.is_dm)
        return OC_OK;
    const char *run_id = NULL, *field = "event.runId";
    if (dg_hook_run_id(event, ctx, 0, &run_id, &field) < 0 || !run_id) {
        dg_log(p, OC_LOG_WARN,
               "%s: %s is missing or not a string; the usage of %s's run in channel %s "
               "cannot be tied to its run and is not counted",
               hook, field, hs->s.agent_id, hs->s.channel_id);
        return OC_ERR_INVALID;
    }
    char model[256];
    int rc = dg_turns_usage(p->turns, &hs->s, run_id, usage_model(event, model, sizeof model),
                            calls, tin, tout);
    if (rc != OC_OK)
        dg_log(p, OC_LOG_WARN, "%s: the usage of run %s of %s was not recorded (%s)", hook, run_id,
               hs->s.agent_id, dg_status_name(rc));
    return rc;
}

static int usage_report(dg_plugin *p, const char *hook, const json_t *event, const json_t *ctx,
                        int64_t calls, int64_t tin, int64_t tout)
{
    dg_hook_session hs;
    json_t *alt;
    int ok = usage_session(&p->cfg, event, ctx, &hs, &alt);
    int rc = usage_record(p, hook, event, ctx, ok, &hs, calls, tin, tout);
    json_decref(alt);
    return rc;
}

int dg_hook_model_call_ended(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    (void)result;
    if (!json_is_object(event)) {
        dg_log(state, OC_LOG_WARN, "model_call_ended: the event is not a JSON object; ignored");
        return OC_ERR_INVALID;
    }
    return usage_report(state, "model_call_ended", event, ctx, 1, 0, 0);
}

int dg_hook_llm_output(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    dg_plugin *p = state;
    (void)result;
    const json_t *usage = json_is_object(event) ? json_object_get(event, "usage") : NULL;
    int64_t in = 0, out = 0, cache_read = 0, cache_write = 0;
    if (!json_is_object(event) || (usage && !json_is_object(usage)) ||
        usage_count(usage, "input", &in) || usage_count(usage, "output", &out) ||
        usage_count(usage, "cacheRead", &cache_read) ||
        usage_count(usage, "cacheWrite", &cache_write)) {
        dg_log(p, OC_LOG_WARN,
               "llm_output: event.usage must be an object of token counts (integers >= 0: "
               "input, output, cacheRead, cacheWrite); the usage is not counted");
        return OC_ERR_INVALID;
    }
    if (!usage || in + cache_read + cache_write + out == 0)
        return OC_OK; /* the host did not say: nothing to add */
    return usage_report(p, "llm_output", event, ctx, 0, in + cache_read + cache_write, out);
}
