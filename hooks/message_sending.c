/*
 * message_sending.c -- defence in depth: cancel a non-silent message of an
 * agent that does not hold the turn (a host that ignored the override), and
 * every agent message in a closed discussion channel.
 * Event: to, content, threadId?. Result {cancel:true, cancelReason} or none.
 */
#include "hooks_internal.h"

#include <string.h>

int dg_hook_message_sending(void *state, const json_t *event, const json_t *ctx,
                            json_t **result)
{
    dg_plugin *p = state;
    dg_hook_session hs;
    int ok = dg_hook_decode_session(ctx, &hs);
    if (ok < 0) {
        dg_log(p, OC_LOG_WARN, "message_sending: %s; the message is not checked", hs.err);
        return OC_ERR_INVALID;
    }
    if (!ok)
        return OC_OK;
    const char *thread = NULL, *content = NULL;
    if (dg_json_opt_str(event, "threadId", &thread) ||
        (thread && strlen(thread) >= DG_SCOPE_ID_MAX)) {
        dg_log(p, OC_LOG_WARN, "message_sending: event.threadId of %s is not a thread id (a "
               "string of at most %d characters); the message is not checked", hs.s.agent_id,
               DG_SCOPE_ID_MAX - 1);
        return OC_ERR_INVALID;
    }
    if (!hs.s.thread_id && thread && *thread)
        hs.s.thread_id = thread;
    if (dg_json_opt_str(event, "content", &content))
        /* Still decided, as speech: a non-speaker's message stays blocked. */
        dg_log(p, OC_LOG_WARN, "message_sending: event.content of %s is not a string; judged "
               "as a non-silent message", hs.s.agent_id);
    int cancel = 0;
    char reason[512];
    int rc = dg_turns_check_send(p->turns, &hs.s, content, &cancel, reason, sizeof reason);
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
