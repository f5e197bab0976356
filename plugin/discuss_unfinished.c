/*
 * discuss_unfinished.c -- the end of a discussion's creation saga that
 * nobody finished: the gateway died between the intent and the recorded
 * discussion (channel made, members invited, kickoff queued: see
 * discuss_create.c), and the host did not repeat the call. Such a channel
 * is never served (no discussion row); it is removed again and the origin
 * channel told, so nothing half-made stays.
 */
#include "discuss_int.h"

#define UNFINISHED_BATCH 8

/* The channel of row e: the id noted once it was made, else the one an
 * attempt may have made before its answer was lost (by name, and on Discord
 * the call's marker in the topic). *found 0 when there is none. DG_OK or the
 * platform's failure. */
static int find_channel(dg_plugin *p, dg_chat *chat, const dg_tool_call_pending *e,
                        const discuss_idem *ic, char id[DG_CHAT_ID_MAX], int *found)
{
    *found = 0;
    if (e->row.channel_id) {
        snprintf(id, DG_CHAT_ID_MAX, "%s", e->row.channel_id);
        *found = 1;
        return DG_OK;
    }
    if (!e->row.summary_path)
        return DG_OK; /* no name noted: nothing to look for */
    dg_chat_err derr;
    memset(&derr, 0, sizeof derr);
    int rc = dg_chat_room_find(chat, e->row.summary_path, ic->marker, found, id, &derr);
    if (rc != DG_OK)
        dg_log(p, OC_LOG_WARN,
               "discussion: looking for channel '%s' of an unfinished creation (toolCallId %s) "
               "failed: %s; tried again later",
               e->row.summary_path, e->call_id, derr.message);
    return rc;
}

/* The initiator's mention on the origin's platform: "" when the intent
 * names none (a row from before the initiator was noted) or that agent has
 * no id there. Malloc'd, the caller frees; NULL out of memory. */
static char *initiator_mention(dg_plugin *p, const dg_tool_call_pending *e)
{
    if (!e->row.initiator)
        return strdup("");
    char *const agents[] = {e->row.initiator};
    return discuss_mentions_of(&p->cfg, dg_platform_of_channel(e->row.origin_channel_id), agents,
                               1);
}

/* Forget the intent and tell the origin, mentioning the initiator, in one
 * transaction. */
static int forget_and_tell(dg_plugin *p, const dg_tool_call_pending *e, const char *shown,
                           int *kick)
{
    char *mention = initiator_mention(p, e);
    if (!mention)
        return DG_ERR_NOMEM;
    if (dg_store_begin(p->store) != DG_OK) {
        free(mention);
        return DG_ERR_IO;
    }
    int rc = dg_store_tool_call_forget(p->store, TOOL_CREATE, e->call_id, e->fingerprint);
    char *text = NULL;
    if (rc == DG_OK) {
        dg_tpl_vars v = {.discussionChannel = shown, .initiatorMention = mention};
        text = dg_templates_render(p->templates, "creation_undone.md", &v);
        rc = text ? dg_outbox_enqueue(p->store, e->row.origin_channel_id, text, NULL, 0,
                                      dg_now_ms(p))
                  : DG_ERR_NOMEM;
    }
    free(text);
    free(mention);
    rc = dg_store_end(p->store, rc);
    if (rc == DG_OK)
        *kick = 1;
    return rc;
}

/* Undo one; the row stays for the next pass when a step fails. */
static void undo_one(dg_plugin *p, const dg_tool_call_pending *e, int *kick)
{
    discuss_idem ic;
    discuss_idem_of_row(&ic, TOOL_CREATE, e->call_id, e->fingerprint);
    if (discuss_inflight_claim(p, &ic) != DG_OK)
        return; /* a repeat is running now: it finishes the saga */
    dg_chat *chat = dg_plugin_chat(p, dg_platform_of_channel(e->row.origin_channel_id));
    char id[DG_CHAT_ID_MAX] = "";
    int found = 0;
    int rc = chat ? find_channel(p, chat, e, &ic, id, &found) : DG_ERR_UNSUPPORTED;
    dg_chat_err derr;
    memset(&derr, 0, sizeof derr);
    if (rc == DG_OK && found && (rc = dg_chat_room_remove(chat, id, &derr)) != DG_OK)
        dg_log(p, OC_LOG_WARN,
               "discussion: channel %s of an unfinished creation (toolCallId %s) could not be "
               "removed: %s; tried again later",
               id, e->call_id, derr.message);
    char shown[DG_CHAT_ID_MAX + 8];
    snprintf(shown, sizeof shown, found ? "<#%s>" : "%s",
             found ? id : (e->row.summary_path ? e->row.summary_path : "?"));
    if (rc == DG_OK && (rc = forget_and_tell(p, e, shown, kick)) == DG_OK)
        dg_log(p, OC_LOG_WARN,
               "discussion: the creation of '%s' (toolCallId %s) died before it was recorded and "
               "was not repeated within %lld s; %s, and origin %s was told",
               e->row.summary_path ? e->row.summary_path : "?", e->call_id,
               UNFINISHED_GRACE_MS / 1000,
               found ? "its channel was removed again" : "no channel of it was found",
               e->row.origin_channel_id);
    discuss_inflight_release(p, &ic);
}

void discuss_undo_unfinished(dg_plugin *p)
{
    if (!p->templates || dg_store_begin(p->store) != DG_OK)
        return;
    dg_tool_call_pending *v = NULL;
    size_t n = 0;
    int rc = dg_store_tool_calls_unfinished(
        p->store, TOOL_CREATE, dg_now_ms(p) - UNFINISHED_GRACE_MS, UNFINISHED_BATCH, &v, &n);
    dg_store_end(p->store, rc);
    int kick = 0;
    for (size_t i = 0; i < n; i++)
        undo_one(p, &v[i], &kick);
    dg_tool_call_pending_free(v, n);
    if (kick)
        dg_outbox_kick_all(p);
}
