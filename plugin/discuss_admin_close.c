/*
 * discuss_admin_close.c -- an admin's forced close of a discussion, with
 * or without a summary file, inside the admin command's transaction.
 */
#include <assert.h>
#include "discuss_int.h"
#include "discuss_archive.h"
#include "summary.h"

#define ADMIN_NO_SUMMARY "none (closed by an admin without a summary)"

/* The reply template name (admin_*.md) rendered with v into msg; DG_OK
 * (a template that cannot be rendered leaves msg empty, and says so in
 * the log). */
static int admin_reply(dg_plugin *p, const char *name, const dg_tpl_vars *v, char *msg,
                       size_t msg_len)
{
    static const dg_tpl_vars none;
    char *text = p->templates ? dg_templates_render_trim(p->templates, name, v ? v : &none) : NULL;
    if (!text)
        dg_log(p, OC_LOG_ERROR, "discussion: template %s could not be rendered", name);
    snprintf(msg, msg_len, "%s", text ? text : "");
    free(text);
    return DG_OK;
}

int dg_discuss_admin_close_locked(dg_plugin *p, const char *channel_id, const char *summary_path,
                                  int64_t now_ms, int *closed, char *msg, size_t msg_len)
{
    assert(dg_store_held(p->store));
    *closed = 0;
    dg_store *st = p->store;
    dg_discussion d;
    int rc = dg_store_discussion_by_channel(st, channel_id, &d);
    if (rc == DG_ERR_NOT_FOUND)
        return admin_reply(p, "admin_close_not_discussion.md", NULL, msg, msg_len);
    if (rc != DG_OK)
        return rc;
    if (d.status != DG_DISCUSSION_ACTIVE) {
        dg_discussion_clear(&d);
        return admin_reply(p, "admin_close_already.md", NULL, msg, msg_len);
    }
    dg_workspace_file f = {.fd = -1};
    char why[384], *preview = NULL;
    if (summary_path) {
        rc = dg_summary_open(d.initiator_workspace, p->cfg.summary_dir, summary_path,
                             p->cfg.max_summary_bytes, &f, why, sizeof why);
        if (rc == DG_OK) {
            rc = dg_summary_check_text(f.fd, summary_path, why, sizeof why);
            if (rc == DG_OK && !(preview = discuss_preview_of(p, f.fd)))
                rc = dg_fail(why, sizeof why, DG_ERR_IO, "it could not be read");
            close(f.fd);
            f.fd = -1;
        }
        if (rc != DG_OK) {
            dg_workspace_file_close(&f);
            dg_discussion_clear(&d);
            dg_tpl_vars v = {.error = dg_status_name(rc), .reason = why};
            return admin_reply(p, "admin_close_refused.md", &v, msg, msg_len);
        }
    }
    const dg_agent_cfg *ini = dg_config_agent(&p->cfg, d.initiator_agent_id);
    dg_platform pf = dg_platform_of_channel(d.origin_channel_id);
    const char *uid = dg_config_agent_user(ini, pf);
    const char *mention[1] = {uid};
    char *im = discuss_mentions_of(&p->cfg, pf, &d.initiator_agent_id, 1);
    char *dref = discuss_channel_ref(d.discussion_channel_id);
    char *oref = discuss_channel_ref(d.origin_channel_id);
    char *text = NULL;
    if (im && dref && oref) {
        dg_tpl_vars v = {.discussGuide = d.discuss_guide,
                         .initiatorMention = im,
                         .summaryPath = f.rel_path ? f.rel_path : ADMIN_NO_SUMMARY,
                         .discussionChannel = dref,
                         .originChannel = oref,
                         .status = "closed-by-admin",
                         .summaryPreview = preview};
        text = dg_templates_render(p->templates, "result.md", &v);
    }
    rc = text ? DG_OK : DG_ERR_NOMEM;
    if (rc == DG_OK)
        rc = dg_store_discussion_close_as(st, d.id, f.rel_path, now_ms, "closed-by-admin");
    if (rc == DG_OK)
        rc = dg_turns_close_channel(p->turns, d.discussion_channel_id, now_ms);
    if (rc == DG_OK)
        rc = dg_turns_wake_with_result(p->turns, d.origin_channel_id, d.initiator_agent_id, now_ms);
    if (rc == DG_OK)
        rc = dg_outbox_enqueue(st, d.origin_channel_id, text, mention, uid ? 1 : 0, now_ms);
    if (rc == DG_OK)
        rc = dg_discuss_archive_locked(p, &d, "closed-by-admin", f.rel_path, now_ms);
    if (rc == DG_OK) {
        *closed = 1;
        dg_tpl_vars v = {.summaryPath = f.rel_path, .originChannel = oref};
        admin_reply(p, f.rel_path ? "admin_close_done.md" : "admin_close_done_nosummary.md", &v,
                    msg, msg_len);
        dg_log(p, OC_LOG_INFO, "discussion %lld in %s closed by an admin (summary %s)",
               (long long)d.id, d.discussion_channel_id, f.rel_path ? f.rel_path : "none");
    }
    free(im);
    free(dref);
    free(oref);
    free(text);
    free(preview);
    dg_workspace_file_close(&f);
    dg_discussion_clear(&d);
    return rc;
}
