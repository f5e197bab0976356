/*
 * message_sending.c -- defence in depth: cancel a non-silent message of an
 * agent that does not hold the turn (a host that ignored the override), and
 * every agent message in a closed discussion channel.
 * Event: to, content, threadId?. Result {cancel:true, cancelReason} or none.
 */
#include "hooks_internal.h"

int dg_hook_message_sending(void *state, const json_t *event, const json_t *ctx,
                            json_t **result)
{
    dg_plugin *p = state;
    dg_hook_session hs;
    if (!dg_hook_decode_session(ctx, &hs))
        return OC_OK;
    if (!hs.s.thread_id)
        hs.s.thread_id = dg_json_str(event, "threadId");
    int cancel = 0;
    char reason[512];
    int rc = dg_turns_check_send(p->turns, &hs.s, dg_json_str(event, "content"), &cancel,
                                 reason, sizeof reason);
    if (rc != OC_OK) {
        dg_log(p, OC_LOG_ERROR, "message_sending: no decision for %s in channel %s (%s)",
               hs.s.agent_id, hs.s.channel_id, oc_status_name(rc));
        return rc;
    }
    if (!cancel)
        return OC_OK;
    dg_log(p, OC_LOG_INFO, "message_sending: cancelled for %s: %s", hs.s.agent_id, reason);
    *result = json_pack("{s:b, s:s}", "cancel", 1, "cancelReason", reason);
    return *result ? OC_OK : OC_ERR_NOMEM;
}
