/*
 * message_sending.c -- defence in depth: cancel a non-silent message of an
 * agent that does not hold the turn (a host that ignored the override), and
 * every agent message in a closed discussion channel, and any text of a
 * run that was swapped to the no-reply model or claimed (whatever it says:
 * NO_REPLY, a host's warning), matched by run id when the event or ctx has
 * one (runId, metadata.runId), else by session (turns_engine.h).
 * An event with isError: true (a host's own error or "no reply" notice, as
 * the host or its bridge marks it) is judged by the turn engine's policy
 * for error notices (dg_turns_check_error_notice).
 * Event: to, content, threadId?, metadata?, isError?. Ctx: the agent ctx, or
 * OpenClaw's gateway shape without agentId ({channelId: "discord",
 * accountId, conversationId: "channel:<c>", sessionKey}; the agent and
 * channel are then read from sessionKey, conversationId or to).
 * Result {cancel:true, cancelReason} or none.
 */
#include "hooks_int.h"

#include <string.h>

int dg_hook_message_sending(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    dg_plugin *p = state;
    dg_hook_session hs;
    int ok = dg_hook_decode_outbound(&p->cfg, event, ctx, &hs);
    if (ok < 0) {
        dg_log(p, OC_LOG_WARN, "message_sending: %s; the message is not checked", hs.err);
        return OC_ERR_INVALID;
    }
    if (!ok)
        return OC_OK;
    const char *thread = NULL, *content = NULL;
    if (dg_json_opt_str(event, "threadId", &thread) ||
        (thread && strlen(thread) >= DG_SCOPE_ID_MAX)) {
        dg_log(p, OC_LOG_WARN,
               "message_sending: event.threadId of %s is not a thread id (a "
               "string of at most %d characters); the message is not checked",
               hs.s.agent_id, DG_SCOPE_ID_MAX - 1);
        return OC_ERR_INVALID;
    }
    if (!hs.s.thread_id && thread && *thread)
        hs.s.thread_id = thread;
    if (dg_json_opt_str(event, "content", &content))
        /* Still decided, as speech: a non-speaker's message stays blocked. */
        dg_log(p, OC_LOG_WARN,
               "message_sending: event.content of %s is not a string; judged "
               "as a non-silent message",
               hs.s.agent_id);
    const char *run_id = NULL, *field = NULL;
    if (dg_hook_run_id(event, ctx, 1, &run_id, &field)) {
        dg_log(p, OC_LOG_WARN,
               "message_sending: %s of %s is not a string; the message is not "
               "checked",
               field, hs.s.agent_id);
        return OC_ERR_INVALID;
    }
    const json_t *is_error = json_object_get(event, "isError");
    if (is_error && !json_is_null(is_error) && !json_is_boolean(is_error)) {
        dg_log(p, OC_LOG_WARN,
               "message_sending: event.isError of %s is not a boolean; the "
               "message is not checked",
               hs.s.agent_id);
        return OC_ERR_INVALID;
    }
    int cancel = 0;
    char reason[512];
    if (json_is_true(is_error)) {
        int mrc = dg_turns_check_error_notice(p->turns, &hs.s, "message_sending", "isError",
                                              content, &cancel, reason, sizeof reason);
        if (mrc != OC_OK) {
            dg_log(p, OC_LOG_ERROR, "message_sending: no decision for %s in channel %s (%s)",
                   hs.s.agent_id, hs.s.channel_id, oc_status_name(mrc));
            return mrc;
        }
        if (cancel) {
            *result = json_pack("{s:b, s:s}", "cancel", 1, "cancelReason", reason);
            return *result ? OC_OK : OC_ERR_NOMEM;
        }
    }
    int rc =
        dg_turns_check_outbound(p->turns, &hs.s, run_id, content, &cancel, reason, sizeof reason);
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
