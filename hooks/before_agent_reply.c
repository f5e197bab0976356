/*
 * before_agent_reply.c -- claim the run of an agent that must not answer:
 * {handled: true, reason} makes the host skip the model call (the inbound
 * message stays in the agent's transcript). Claimed: any agent of a closed
 * discussion channel; in a managed scope every agent but the speaker (all
 * of a dormant or resting scope). The speaker, unconfigured agents and
 * unmanaged channels get no result. The claim's effect on the turn (the
 * agent consumed the message silently) is committed by the engine now.
 * Event: cleanedBody. Ctx: agent ctx (agentId, sessionKey, channelId,
 * threadId?, runId?, ...).
 */
#include "hooks_int.h"

int dg_hook_before_agent_reply(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    dg_plugin *p = state;
    dg_hook_session hs;
    int ok = dg_hook_decode_session(&p->cfg, ctx, &hs);
    if (ok < 0) {
        dg_log(p, OC_LOG_WARN, "before_agent_reply: %s; the run is not claimed", hs.err);
        return OC_ERR_INVALID;
    }
    if (!ok)
        return OC_OK; /* not in a channel: nothing to decide */
    const char *run_id = NULL, *field = NULL;
    if (dg_hook_run_id(event, ctx, 0, &run_id, &field)) {
        dg_log(p, OC_LOG_WARN,
               "before_agent_reply: %s of %s is not a string; the run is not "
               "claimed (nothing changes)",
               field, hs.s.agent_id);
        return OC_ERR_INVALID;
    }
    const char *prompt = NULL;
    if (dg_json_opt_str(event, "cleanedBody", &prompt)) {
        dg_log(p, OC_LOG_WARN,
               "before_agent_reply: event.cleanedBody of %s is not a string; "
               "the run is not claimed (nothing changes)",
               hs.s.agent_id);
        return OC_ERR_INVALID;
    }
    dg_turn_claim c;
    int rc = dg_turns_claim(p->turns, &hs.s, run_id, prompt, &c);
    if (rc != OC_OK)
        return rc; /* logged by the engine */
    if (!c.claimed)
        return OC_OK;
    *result = json_pack("{s:b, s:s}", "handled", 1, "reason", c.reason);
    return *result ? OC_OK : OC_ERR_NOMEM;
}
