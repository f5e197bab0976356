/*
 * discuss.c -- what the discussion files share: the status names, the
 * records' clear functions, the lookups other areas make inside their
 * transaction, and the pieces of the messages (mentions, channel
 * references, the summary preview). The state changes live in
 * discuss_validate.c, discuss_create.c, discuss_callback.c,
 * discuss_timers.c and discuss_admin_close.c (see discuss_int.h).
 *
 * Flow of every state change: checks without holding the store lock where
 * they do I/O (REST, filesystem, host calls), then ONE transaction that
 * records the new state and the effects it owes (outbox rows, override
 * rows), then the effects after commit (outbox kick, session_patch),
 * marked done. A crash in between is repaired by dg_discuss_resume() and
 * by the outbox's own resend.
 */
#include <assert.h>
#include "discuss_int.h"
#include "store_discuss_index.h"
#include "summary.h"

const char *dg_discussion_status_name(dg_discussion_status s)
{
    switch (s) {
    case DG_DISCUSSION_ACTIVE: return "active";
    case DG_DISCUSSION_CLOSED: return "closed";
    default: return "none";
    }
}

void discuss_free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void dg_channel_created_clear(dg_channel_created *c)
{
    if (!c)
        return;
    free(c->channel_id);
    memset(c, 0, sizeof *c);
}

void dg_callback_result_clear(dg_callback_result *r)
{
    if (!r)
        return;
    free(r->channel_id);
    free(r->origin_channel_id);
    free(r->summary_path);
    memset(r, 0, sizeof *r);
}

void dg_session_refs_release(dg_session_refs *r)
{
    if (!r)
        return;
    free((void *)r->v);
    if (r->release && r->owner)
        r->release(r->owner);
    memset(r, 0, sizeof *r);
}

void dg_host_sessions(dg_plugin *p, const char *channel_id, dg_session_refs *out)
{
    memset(out, 0, sizeof *out);
    if (!p->host.sessions) {
        out->unavailable = 1;
        return;
    }
    if (p->host.sessions(p->host.ctx, channel_id, out) == DG_ERR_INVALID)
        dg_log(p, OC_LOG_WARN,
               "sessions: host sessions_list(%s) did not return an array; "
               "taken as no sessions",
               channel_id);
}

/* ---- in-transaction helpers for other areas ----------------------------- */

int dg_discuss_lookup_locked(dg_store *st, const char *channel_id, dg_discussion *d)
{
    assert(dg_store_held(st));
    if (!channel_id)
        return DG_DISCUSSION_NONE;
    if (d) {
        int rc = dg_store_discussion_by_channel(st, channel_id, d);
        if (rc == DG_ERR_NOT_FOUND)
            return DG_DISCUSSION_NONE;
        return rc == DG_OK ? (int)d->status : rc;
    }
    dg_discussion_status s;
    int rc = dg_store_discussion_probe(st, channel_id, NULL, &s);
    return rc == DG_OK ? (int)s : rc;
}

int dg_discuss_claim_closed_notice_locked(dg_store *st, const char *channel_id,
                                          const char *message_id, int64_t now_ms,
                                          int64_t cooldown_ms)
{
    assert(dg_store_held(st));
    if (!channel_id || !message_id)
        return DG_ERR_INVALID;
    int claimed = 0;
    int rc =
        dg_store_discussion_notice_claim(st, channel_id, message_id, now_ms, cooldown_ms, &claimed);
    return rc == DG_OK ? claimed : rc;
}

/* ---- pieces of the messages ------------------------------------------------ */

/* "<@a> <@b>" for the ids of agents on pf; malloc'd. */
char *discuss_mentions_of(const dg_config *cfg, dg_platform pf, char *const *agents, size_t n)
{
    size_t cap = 1;
    for (size_t i = 0; i < n; i++)
        cap += 4 + 24;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *uid = dg_config_agent_user(dg_config_agent(cfg, agents[i]), pf);
        if (!uid)
            continue;
        o += (size_t)snprintf(out + o, cap - o, "%s<@%s>", o ? " " : "", uid);
    }
    return out;
}

void discuss_archive_closed(dg_plugin *p, const char *channel_id)
{
    dg_platform pf = dg_platform_of_channel(channel_id);
    dg_chat *chat = dg_plugin_chat(p, pf);
    if (pf != DG_PLATFORM_SLACK || !chat)
        return;
    dg_chat_err err;
    memset(&err, 0, sizeof err);
    if (dg_chat_room_remove(chat, channel_id, &err) == DG_OK)
        dg_log(p, OC_LOG_INFO, "discussion channel %s closed: archived on Slack", channel_id);
    else
        dg_log(p, OC_LOG_WARN,
               "discussion channel %s is closed but could not be archived on Slack (%s); the "
               "plugin keeps it closed (agents get no model call there); archive it by hand",
               channel_id, err.message);
}

char *discuss_channel_ref(const char *id)
{
    char *s = malloc(strlen(id) + 4);
    if (s)
        sprintf(s, "<#%s>", id);
    return s;
}

/* {summaryPreview} of the result: the preview (summary.h) under a line that
 * says what it is, "" when previewChars is 0 or the file is blank. Caller
 * frees; NULL when out of memory or unreadable. */
char *discuss_preview_of(const dg_plugin *p, int fd)
{
    char *q = dg_summary_preview(fd, p->cfg.preview_chars);
    if (!q || !*q)
        return q;
    static const char head[] = "Summary preview:\n";
    size_t len = sizeof head + strlen(q) + 2;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%s%s\n\n", head, q); /* blank line: as for summaryTemplate */
    free(q);
    return s;
}

char *dg_discuss_suggested_path_locked(const dg_plugin *p, const dg_discussion *d)
{
    assert(dg_store_held(p->store));
    char *name = NULL;
    if (dg_store_discussion_name(p->store, d->id, &name) != DG_OK)
        name = NULL;
    char *s = dg_summary_suggested_path(p->cfg.summary_dir, name, d->discussion_channel_id);
    free(name);
    return s;
}
