/*
 * admin_sessions.c -- `!dirigent rotate` and `!dirigent cancel` through the
 * host (admin_sessions.h).
 */
#include "admin_sessions.h"

#include <stdio.h>
#include <string.h>

#include "openclaw/plugin.h"

/* 1 when session s (an entry of sessions_list) is in the command's scope. */
static int in_scope(const dg_plugin *p, const json_t *s, const char *thread_id)
{
    if (p->cfg.session_policy == DG_POLICY_CHANNEL)
        return 1;
    const char *t = json_string_value(json_object_get(s, "threadId"));
    if (!thread_id || !*thread_id)
        return !t || !*t;
    return t && strcmp(t, thread_id) == 0;
}

static const char *scope_words(const dg_plugin *p, const char *thread_id)
{
    if (p->cfg.session_policy == DG_POLICY_CHANNEL)
        return "this channel";
    return thread_id && *thread_id ? "this thread" : "this channel's top level";
}

void dg_admin_rotate(dg_plugin *p, const char *channel_id, const char *thread_id, char *msg,
                     size_t msg_len)
{
    if (!OC_HOST_API_HAS(p->api, session_reset)) {
        snprintf(msg, msg_len, "rotate is not supported by this host (it has no session_reset, "
                 "ABI 1.1); nothing changed.");
        return;
    }
    json_t *list = p->api->sessions_list(p->api->host, channel_id);
    size_t i, done = 0, failed = 0;
    json_t *s;
    json_array_foreach(list, i, s) {
        const char *key = json_string_value(json_object_get(s, "sessionKey"));
        if (!key || !in_scope(p, s, thread_id))
            continue;
        int rc = p->api->session_reset(p->api->host, key);
        if (rc == OC_OK)
            done++;
        else if (rc != OC_ERR_NOT_FOUND) {
            failed++;
            dg_log(p, OC_LOG_WARN, "admin rotate: session_reset(%s) failed: %s", key,
                   oc_status_name(rc));
        }
    }
    json_decref(list);
    if (!list)
        snprintf(msg, msg_len, "rotate: the host could not list the sessions (out of memory); "
                 "nothing changed, try again.");
    else if (failed)
        snprintf(msg, msg_len, "rotated %zu session(s) of %s; %zu could not be reset (the "
                 "host's log says why).", done, scope_words(p, thread_id), failed);
    else
        snprintf(msg, msg_len, "rotated %zu session(s) of %s; the next message opens fresh "
                 "ones.", done, scope_words(p, thread_id));
}

void dg_admin_cancel(dg_plugin *p, const char *channel_id, const char *thread_id,
                     const char *speaker_agent, char *msg, size_t msg_len)
{
    if (!OC_HOST_API_HAS(p->api, run_abort)) {
        snprintf(msg, msg_len, "cancel is not supported by this host (it has no run_abort, "
                 "ABI 1.1); nothing changed.");
        return;
    }
    if (!speaker_agent) {
        snprintf(msg, msg_len, "nobody holds the turn in %s; there is no run to cancel.",
                 scope_words(p, thread_id));
        return;
    }
    json_t *list = p->api->sessions_list(p->api->host, channel_id);
    size_t i, aborted = 0;
    int failed = 0;
    json_t *s;
    json_array_foreach(list, i, s) {
        const char *key = json_string_value(json_object_get(s, "sessionKey"));
        const char *agent = json_string_value(json_object_get(s, "agentId"));
        if (!key || !agent || strcmp(agent, speaker_agent) != 0 || !in_scope(p, s, thread_id))
            continue;
        int rc = p->api->run_abort(p->api->host, key);
        if (rc == OC_OK)
            aborted++;
        else if (rc != OC_ERR_NOT_FOUND) {
            failed = 1;
            dg_log(p, OC_LOG_WARN, "admin cancel: run_abort(%s) failed: %s", key,
                   oc_status_name(rc));
        }
    }
    json_decref(list);
    if (aborted)
        snprintf(msg, msg_len, "%s's run was aborted.", speaker_agent);
    else if (failed)
        snprintf(msg, msg_len, "aborting %s's run failed (the host's log says why).",
                 speaker_agent);
    else
        snprintf(msg, msg_len, "%s holds the turn but has no run in flight; nothing to cancel.",
                 speaker_agent);
}
