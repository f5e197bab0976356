/*
 * discuss_callback.c -- discuss-callback: the initiator ends its discussion
 * with a summary file; the checks, the result message and the closing
 * transaction.
 */
#include "discuss_int.h"
#include "discuss_archive.h"
#include "summary.h"

/* The read-only checks of a callback, in the order the tool documents
 * them (docs/behaviour.md), on the stored row. */
static int check_callable(dg_plugin *p, const dg_caller *c, dg_discussion *d, char *err,
                          size_t err_len)
{
    if (!c->channel_id || !*c->channel_id)
        return dg_fail(err, err_len, DG_ERR_NOT_FOUND,
                       "discuss-callback only works inside a discussion channel, and this call "
                       "has no channel; call it from the discussion channel");
    if (dg_store_begin(p->store) != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO, "the plugin's state store is busy or failing");
    int rc = dg_store_discussion_by_channel(p->store, c->channel_id, d);
    dg_store_commit(p->store);
    if (rc == DG_ERR_NOT_FOUND)
        return dg_fail(err, err_len, DG_ERR_NOT_FOUND,
                       "channel %s is not a discussion channel: discuss-callback only works "
                       "inside a channel opened by discord_channel_create with "
                       "callbackChannelId",
                       c->channel_id);
    if (rc != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO, "the plugin's state store failed (%s); try again",
                       dg_status_name(rc));
    if (!c->agent_id || strcmp(c->agent_id, d->initiator_agent_id) != 0)
        return dg_fail(err, err_len, DG_ERR_DENIED,
                       "only the initiator of this discussion (agent '%s') may end it; you are "
                       "'%s'. If the goal is reached, say so in the channel so the initiator "
                       "writes the summary and calls discuss-callback",
                       d->initiator_agent_id, c->agent_id ? c->agent_id : "");
    if (d->status != DG_DISCUSSION_ACTIVE)
        return dg_fail(err, err_len, DG_ERR_CONFLICT,
                       "this discussion is already closed (summary %s); nothing more to do here: "
                       "continue the original task in <#%s>",
                       d->summary_path ? d->summary_path : "?", d->origin_channel_id);
    return DG_OK;
}

/* The closing transaction. */
static int close_discussion(dg_plugin *p, const dg_discussion *d, const char *rel_path,
                            const dg_session_refs *sessions, const char *result,
                            const char *initiator_uid, const discuss_idem *ic, int64_t now,
                            char *err, size_t err_len)
{
    if (dg_store_begin(p->store) != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO, "the plugin's state store is busy or failing");
    int rc = dg_store_discussion_close(p->store, d->id, rel_path, now);
    if (rc == DG_OK && ic) {
        dg_tool_call_row res = {.channel_id = d->discussion_channel_id,
                                .discussion_id = d->id,
                                .origin_channel_id = d->origin_channel_id,
                                .summary_path = (char *)rel_path};
        rc = dg_store_tool_call_done(p->store, ic->tool, ic->call_id, ic->fp, &res, now);
    }
    for (size_t i = 0; rc == DG_OK && i < sessions->n; i++)
        rc = dg_store_discussion_override_add(p->store, d->id, sessions->v[i].session_key,
                                              sessions->v[i].agent_id, now, NULL);
    if (rc == DG_OK)
        rc = dg_turns_close_channel(p->turns, d->discussion_channel_id, now);
    if (rc == DG_OK)
        rc = dg_turns_wake_with_result(p->turns, d->origin_channel_id, d->initiator_agent_id, now);
    if (rc == DG_OK) {
        const char *mention[1] = {initiator_uid};
        rc = dg_outbox_enqueue(p->store, d->origin_channel_id, result, mention,
                               initiator_uid ? 1 : 0, now);
    }
    if (rc == DG_OK)
        rc = dg_discuss_archive_locked(p, d, "completed", rel_path, now);
    if (rc != DG_OK && rc != DG_ERR_CONFLICT)
        dg_log(p, OC_LOG_ERROR, "discussion %lld: closing failed (%s): %s", (long long)d->id,
               dg_status_name(rc), dg_store_errmsg(p->store));
    rc = dg_store_end(p->store, rc);
    if (rc == DG_ERR_CONFLICT)
        return dg_fail(err, err_len, DG_ERR_CONFLICT,
                       "this discussion was closed a moment ago by another discuss-callback; "
                       "nothing more to do here: continue in <#%s>",
                       d->origin_channel_id);
    if (rc != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO,
                       "closing the discussion failed (%s); nothing "
                       "changed, try again",
                       dg_status_name(rc));
    return DG_OK;
}

/* The stored result of a callback into *out: 1 when there is one. */
static int callback_answered(dg_plugin *p, const discuss_idem *ic, dg_callback_result *out)
{
    dg_tool_call_row row;
    if (discuss_idem_lookup(p, ic, &row) != DG_OK || row.state != DG_TOOL_CALL_DONE ||
        !row.channel_id || !row.origin_channel_id || !row.summary_path) {
        dg_tool_call_row_clear(&row);
        return 0;
    }
    out->discussion_id = row.discussion_id;
    out->channel_id = row.channel_id;
    out->origin_channel_id = row.origin_channel_id;
    out->summary_path = row.summary_path;
    memset(&row, 0, sizeof row);
    dg_log(p, OC_LOG_INFO,
           "discuss-callback: toolCallId %s was answered before (discussion "
           "%lld closed); the same result is returned, nothing is done again",
           ic->call_id, (long long)out->discussion_id);
    return 1;
}

static int callback_once(dg_plugin *p, const dg_caller *caller, const char *summary_path,
                         const dg_session_refs *sessions, const discuss_idem *ic,
                         dg_callback_result *out, char *err, size_t err_len);

int dg_discuss_callback(dg_plugin *p, const dg_caller *caller, const char *summary_path,
                        const dg_session_refs *sessions, dg_callback_result *out, char *err,
                        size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (!caller || !caller->tool_call_id)
        return callback_once(p, caller, summary_path, sessions, NULL, out, err, err_len);
    discuss_idem ic;
    discuss_idem_for_callback(&ic, caller, summary_path);
    if (callback_answered(p, &ic, out))
        return DG_OK;
    int rc = callback_once(p, caller, summary_path, sessions, &ic, out, err, err_len);
    /* A repeat that raced with its first call (both passed the lookup):
     * the first closed the discussion, this one gets its result. */
    if (rc == DG_ERR_CONFLICT && callback_answered(p, &ic, out))
        return DG_OK;
    return rc;
}

static int callback_once(dg_plugin *p, const dg_caller *caller, const char *summary_path,
                         const dg_session_refs *sessions, const discuss_idem *ic,
                         dg_callback_result *out, char *err, size_t err_len)
{
    dg_discussion d;
    memset(&d, 0, sizeof d);
    int rc = check_callable(p, caller, &d, err, err_len);
    if (rc != DG_OK) {
        dg_discussion_clear(&d);
        return rc;
    }
    /* The file, resolved and opened once inside the stored workspace. */
    dg_workspace_file f;
    rc = dg_summary_open(d.initiator_workspace, p->cfg.summary_dir, summary_path,
                         p->cfg.max_summary_bytes, &f, err, err_len);
    if (rc != DG_OK) {
        dg_discussion_clear(&d);
        return rc;
    }
    rc = dg_summary_check_text(f.fd, summary_path, err, err_len);
    if (rc == DG_OK)
        rc = dg_summary_check_headings(p->summary_rules, f.fd, f.rel_path, err, err_len);
    char *preview = rc == DG_OK ? discuss_preview_of(p, f.fd) : NULL;
    if (rc == DG_OK && !preview)
        rc = dg_fail(err, err_len, DG_ERR_IO,
                     "summaryPath %.120s could not be read for its "
                     "preview; nothing changed, try again",
                     f.rel_path);
    close(f.fd);
    f.fd = -1;
    if (rc != DG_OK) {
        dg_workspace_file_close(&f);
        dg_discussion_clear(&d);
        return rc;
    }

    const dg_agent_cfg *ini = dg_config_agent(&p->cfg, d.initiator_agent_id);
    dg_platform pf = dg_platform_of_channel(d.origin_channel_id);
    char *im = ini ? discuss_mentions_of(&p->cfg, pf, &d.initiator_agent_id, 1) : strdup("");
    char *dref = discuss_channel_ref(d.discussion_channel_id);
    char *oref = discuss_channel_ref(d.origin_channel_id);
    char *result = NULL;
    rc = sessions && !sessions->unavailable ? DG_OK : DG_ERR_NOMEM;
    if (rc == DG_OK && im && dref && oref) {
        dg_tpl_vars v = {
            .discussGuide = d.discuss_guide,
            .initiatorMention = im,
            .summaryPath = f.rel_path,
            .discussionChannel = dref,
            .originChannel = oref,
            .status = "completed",
            .summaryPreview = preview,
        };
        result = dg_templates_render(p->templates, "result.md", &v);
    }
    int64_t now = dg_now_ms(p);
    if (rc == DG_OK && result)
        rc = close_discussion(p, &d, f.rel_path, sessions, result, dg_config_agent_user(ini, pf),
                              ic, now, err, err_len);
    else
        rc = dg_fail(err, err_len, DG_ERR_NOMEM, "out of memory; nothing changed, try again");
    free(im);
    free(dref);
    free(oref);
    free(result);
    free(preview);
    if (rc == DG_OK) {
        dg_outbox_kick_all(p);
        size_t applied = discuss_apply_pending(p);
        discuss_archive_closed(p, d.discussion_channel_id);
        dg_log(p, OC_LOG_INFO,
               "discussion %lld in %s closed by %s: summary %s, %zu session "
               "override(s) recorded, %zu applied",
               (long long)d.id, d.discussion_channel_id, d.initiator_agent_id, f.rel_path,
               sessions->n, applied);
        out->discussion_id = d.id;
        out->channel_id = d.discussion_channel_id;
        out->origin_channel_id = d.origin_channel_id;
        out->summary_path = f.rel_path;
        d.discussion_channel_id = NULL;
        d.origin_channel_id = NULL;
        f.rel_path = NULL;
    }
    dg_workspace_file_close(&f);
    dg_discussion_clear(&d);
    return rc;
}
