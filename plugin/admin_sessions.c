/*
 * admin_sessions.c -- `!dirigent rotate` and `!dirigent cancel` through the
 * host (admin_sessions.h). The replies are templates (admin_rotate_*.md,
 * admin_cancel_*.md); the host's sessions come in as plain values.
 */
#include "admin_sessions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discuss.h"
#include "status.h"
#include "templates.h"

/* 1 when session s is in the command's scope. */
static int in_scope(const dg_plugin *p, const dg_session_ref *s, const char *thread_id)
{
    if (p->cfg.session_policy == DG_POLICY_CHANNEL)
        return 1;
    if (!thread_id || !*thread_id)
        return !s->thread_id;
    return s->thread_id && strcmp(s->thread_id, thread_id) == 0;
}

static const char *scope_words(const dg_plugin *p, const char *thread_id)
{
    if (p->cfg.session_policy == DG_POLICY_CHANNEL)
        return "this channel";
    return thread_id && *thread_id ? "this thread" : "this channel's top level";
}

/* Template `name` rendered with vars into msg (cut to fit); a fixed
 * sentence when it cannot be rendered (out of memory). */
static void reply(const dg_plugin *p, const char *name, const dg_tpl_vars *vars, char *msg,
                  size_t msg_len)
{
    char *text = p->templates ? dg_templates_render_trim(p->templates, name, vars) : NULL;
    snprintf(msg, msg_len, "%s",
             text ? text
                  : "the reply could not be rendered (out of "
                    "memory); the host's log has what happened.");
    free(text);
}

void dg_admin_rotate(dg_plugin *p, const char *channel_id, const char *thread_id, char *msg,
                     size_t msg_len)
{
    dg_tpl_vars v = {.scope = scope_words(p, thread_id)};
    if (!p->host.session_reset) {
        reply(p, "admin_rotate_unsupported.md", &v, msg, msg_len);
        return;
    }
    dg_session_refs list;
    dg_host_sessions(p, channel_id, &list);
    if (list.unavailable) {
        dg_session_refs_release(&list);
        reply(p, "admin_rotate_unavailable.md", &v, msg, msg_len);
        return;
    }
    size_t done = 0, failed = 0;
    for (size_t i = 0; i < list.n; i++) {
        const dg_session_ref *s = &list.v[i];
        if (!in_scope(p, s, thread_id))
            continue;
        int rc = p->host.session_reset(p->host.ctx, s->session_key);
        if (rc == DG_OK) {
            done++;
        } else if (rc != DG_ERR_NOT_FOUND) {
            failed++;
            dg_log(p, OC_LOG_WARN, "admin rotate: session_reset(%s) failed: %s", s->session_key,
                   dg_status_name(rc));
        }
    }
    dg_session_refs_release(&list);
    char sessions[24], failures[24];
    snprintf(sessions, sizeof sessions, "%zu", done);
    snprintf(failures, sizeof failures, "%zu", failed);
    v.sessions = sessions;
    v.failed = failures;
    reply(p, failed ? "admin_rotate_partial.md" : "admin_rotate_done.md", &v, msg, msg_len);
}

void dg_admin_cancel(dg_plugin *p, const char *channel_id, const char *thread_id,
                     const char *speaker_agent, char *msg, size_t msg_len)
{
    dg_tpl_vars v = {.scope = scope_words(p, thread_id), .speaker = speaker_agent};
    if (!p->host.run_abort) {
        reply(p, "admin_cancel_unsupported.md", &v, msg, msg_len);
        return;
    }
    if (!speaker_agent) {
        reply(p, "admin_cancel_nobody.md", &v, msg, msg_len);
        return;
    }
    dg_session_refs list;
    dg_host_sessions(p, channel_id, &list);
    if (list.unavailable) {
        dg_session_refs_release(&list);
        reply(p, "admin_cancel_unavailable.md", &v, msg, msg_len);
        return;
    }
    size_t aborted = 0;
    int failed = 0;
    for (size_t i = 0; i < list.n; i++) {
        const dg_session_ref *s = &list.v[i];
        if (!s->agent_id || strcmp(s->agent_id, speaker_agent) != 0 || !in_scope(p, s, thread_id))
            continue;
        int rc = p->host.run_abort(p->host.ctx, s->session_key);
        if (rc == DG_OK) {
            aborted++;
        } else if (rc != DG_ERR_NOT_FOUND) {
            failed = 1;
            dg_log(p, OC_LOG_WARN, "admin cancel: run_abort(%s) failed: %s", s->session_key,
                   dg_status_name(rc));
        }
    }
    dg_session_refs_release(&list);
    reply(p,
          aborted  ? "admin_cancel_done.md"
          : failed ? "admin_cancel_failed.md"
                   : "admin_cancel_idle.md",
          &v, msg, msg_len);
}
