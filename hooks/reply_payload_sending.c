/*
 * reply_payload_sending.c -- a reply payload about to go out: cancel every
 * payload of a claimed or swapped run (the host's fallback texts after a
 * claim, a no-reply run's NO_REPLY or warning), and every payload that
 * message_sending would cancel (a non-speaker's text in a managed scope, a
 * closed discussion channel). An error payload (payload.isError: OpenClaw's
 * own notices such as "Agent couldn't generate a response") is judged by
 * the turn engine's policy for error notices (dg_turns_check_error_notice).
 * Result {cancel: true, reason} or none.
 * Event: payload {text, isError?}, kind, channel?, sessionKey?, runId?.
 * Ctx (gateway shape): channelId ("discord"), accountId, conversationId
 * ("channel:<c>"), sessionKey, runId?; an agent ctx is read as well.
 */
#include "hooks_int.h"

#include <stdio.h>
#include <string.h>

/* The run id, payload.text and payload.isError of the event, checked:
 * -1 (logged) when one has the wrong type, and the payload is not checked;
 * a text of the wrong type is judged as speech (*text NULL). */
static int decode_payload(dg_plugin *p, const json_t *event, const json_t *ctx,
                          const char *agent_id, const char **run_id, const char **text,
                          int *is_error)
{
    const char *field = NULL;
    const json_t *payload = json_object_get(event, "payload");
    if (dg_hook_run_id(event, ctx, 0, run_id, &field)) {
        dg_log(p, OC_LOG_WARN,
               "reply_payload_sending: %s of %s is not a string; the payload is not checked", field,
               agent_id);
        return -1;
    }
    if (payload && !json_is_object(payload)) {
        dg_log(p, OC_LOG_WARN,
               "reply_payload_sending: event.payload of %s is not an object {text, isError?}; "
               "the payload is not checked",
               agent_id);
        return -1;
    }
    const json_t *err_flag = json_object_get(payload, "isError");
    if (err_flag && !json_is_null(err_flag) && !json_is_boolean(err_flag)) {
        dg_log(p, OC_LOG_WARN,
               "reply_payload_sending: event.payload.isError of %s is not a boolean; the "
               "payload is not checked",
               agent_id);
        return -1;
    }
    *is_error = json_is_true(err_flag);
    if (dg_json_opt_str(payload, "text", text))
        /* Still decided, as speech: a non-speaker's payload stays blocked. */
        dg_log(p, OC_LOG_WARN,
               "reply_payload_sending: event.payload.text of %s is not a string; judged as a "
               "non-silent text",
               agent_id);
    return 0;
}

int dg_hook_reply_payload_sending(void *state, const json_t *event, const json_t *ctx,
                                  json_t **result)
{
    dg_plugin *p = state;
    if (!json_is_object(event)) {
        dg_log(p, OC_LOG_WARN,
               "reply_payload_sending: the event is not a JSON object; the "
               "payload is not checked");
        return OC_ERR_INVALID;
    }
    /* The session key may come in the event only. */
    const char *ev_key = NULL;
    if (dg_json_opt_str(event, "sessionKey", &ev_key)) {
        dg_log(p, OC_LOG_WARN,
               "reply_payload_sending: event.sessionKey is not a string; the "
               "payload is not checked");
        return OC_ERR_INVALID;
    }
    json_t *merged = NULL;
    if (ev_key && !dg_json_str(ctx, "sessionKey")) {
        merged = json_is_object(ctx) ? json_copy((json_t *)ctx) : json_object();
        if (!merged || json_object_set_new(merged, "sessionKey", json_string(ev_key))) {
            json_decref(merged);
            return OC_ERR_NOMEM;
        }
        ctx = merged;
    }
    dg_hook_session hs;
    int ok = dg_hook_decode_outbound(&p->cfg, event, ctx, &hs);
    int rc = OC_OK;
    if (ok < 0) {
        dg_log(p, OC_LOG_WARN, "reply_payload_sending: %s; the payload is not checked", hs.err);
        rc = OC_ERR_INVALID;
        goto out;
    }
    if (!ok)
        goto out;
    const char *run_id = NULL, *text = NULL;
    int is_error = 0;
    if (decode_payload(p, event, ctx, hs.s.agent_id, &run_id, &text, &is_error)) {
        rc = OC_ERR_INVALID;
        goto out;
    }
    int cancel = 0;
    char reason[512];
    if (is_error) {
        rc = dg_turns_check_error_notice(p->turns, &hs.s, "reply_payload_sending",
                                         "payload.isError", text, &cancel, reason, sizeof reason);
        if (rc != OC_OK) {
            dg_log(p, OC_LOG_ERROR,
                   "reply_payload_sending: no decision for %s in channel %s "
                   "(%s)",
                   hs.s.agent_id, hs.s.channel_id, oc_status_name(rc));
            goto out;
        }
        if (cancel) {
            *result = json_pack("{s:b, s:s}", "cancel", 1, "reason", reason);
            rc = *result ? OC_OK : OC_ERR_NOMEM;
            goto out;
        }
    }
    rc = dg_turns_check_outbound(p->turns, &hs.s, run_id, text, &cancel, reason, sizeof reason);
    if (rc != OC_OK) {
        dg_log(p, OC_LOG_ERROR, "reply_payload_sending: no decision for %s in channel %s (%s)",
               hs.s.agent_id, hs.s.channel_id, oc_status_name(rc));
        goto out;
    }
    if (cancel) {
        dg_log(p, OC_LOG_DEBUG, "reply_payload_sending: cancelled for %s: %s", hs.s.agent_id,
               reason);
        *result = json_pack("{s:b, s:s}", "cancel", 1, "reason", reason);
        rc = *result ? OC_OK : OC_ERR_NOMEM;
    }
out:
    json_decref(merged);
    return rc;
}
