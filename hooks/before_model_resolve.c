/*
 * before_model_resolve.c -- route agents that do not hold the turn to the
 * no-reply model: {providerOverride, modelOverride} for this run only.
 * Decides without advancing any turn state; a swapped run is remembered
 * (by runId from the event or ctx, else by session) so that its texts are
 * cancelled and its end is never counted as speech (turns_engine.h).
 */
#include "hooks_int.h"

int dg_hook_before_model_resolve(void *state, const json_t *event, const json_t *ctx,
                                 json_t **result)
{
    dg_plugin *p = state;
    dg_hook_session hs;
    int ok = dg_hook_decode_session(&p->cfg, ctx, &hs);
    if (ok < 0) {
        dg_log(p, OC_LOG_WARN, "before_model_resolve: %s; no decision for this run", hs.err);
        return OC_ERR_INVALID;
    }
    if (!ok)
        return OC_OK; /* not in a channel: nothing to decide */
    const char *run_id = NULL, *field = NULL;
    if (dg_hook_run_id(event, ctx, 0, &run_id, &field)) {
        dg_log(p, OC_LOG_WARN,
               "before_model_resolve: %s of %s is not a string; no decision "
               "for this run",
               field, hs.s.agent_id);
        return OC_ERR_INVALID;
    }
    dg_turn_verdict v;
    int rc = dg_turns_resolve_run(p->turns, &hs.s, run_id, &v);
    if (rc != OC_OK) {
        dg_log(p, OC_LOG_ERROR, "before_model_resolve: no decision for %s in channel %s (%s)",
               hs.s.agent_id, hs.s.channel_id, oc_status_name(rc));
        return rc;
    }
    /* No no-reply pair: the host has claim hooks and claimed the run
     * already (a run it did not claim keeps its model). */
    if (!v.no_reply || !p->cfg.no_reply_provider)
        return OC_OK;
    *result = json_pack("{s:s, s:s}", "providerOverride", p->cfg.no_reply_provider, "modelOverride",
                        p->cfg.no_reply_model);
    return *result ? OC_OK : OC_ERR_NOMEM;
}
