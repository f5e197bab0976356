/*
 * store_records.c -- the constructors and destructors of store_records.h.
 */
#include "store_int.h" /* store_records.h, the status codes */

#include <stdlib.h>
#include <string.h>


static int present(const char *s)
{
    return s && *s;
}

int dg_scope_normalize_root(const char *id, char *out, size_t cap)
{
    if (!present(id))
        return DG_ERR_INVALID;
    size_t n = strlen(id);
    if (n >= cap)
        return DG_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (c == ':' || (unsigned char)c < 0x20)
            return DG_ERR_INVALID; /* ':' separates the parts of a scope key */
        out[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    out[n] = '\0';
    return DG_OK;
}

int dg_scope_conversation(const char *channel_id, dg_scope *out)
{
    memset(out, 0, sizeof *out);
    out->kind = DG_SCOPE_CONVERSATION;
    if (!present(channel_id))
        return DG_ERR_INVALID;
    size_t n = strlen(channel_id);
    if (n >= sizeof out->channel_id)
        return DG_ERR_INVALID;
    memcpy(out->channel_id, channel_id, n + 1);
    return DG_OK;
}

int dg_scope_thread(const char *channel_id, const char *root, dg_scope *out)
{
    int rc = dg_scope_conversation(channel_id, out);
    if (rc)
        return rc;
    out->kind = DG_SCOPE_THREAD;
    return dg_scope_normalize_root(root, out->root, sizeof out->root);
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void dg_discussion_clear(dg_discussion *d)
{
    if (!d)
        return;
    free(d->discussion_channel_id);
    free(d->origin_channel_id);
    free(d->initiator_agent_id);
    free(d->initiator_session_key);
    free(d->initiator_session_id);
    free(d->initiator_workspace);
    free(d->discuss_guide);
    free(d->summary_path);
    free_strv(d->participants, d->n_participants);
    free_strv(d->turn_order, d->n_turn_order);
    memset(d, 0, sizeof *d);
}

void dg_turn_state_init(dg_turn_state *s)
{
    memset(s, 0, sizeof *s);
    s->speaker = DG_NOBODY;
    s->anchor = DG_NOBODY;
    s->handoff = DG_NOBODY;
    s->permit = DG_NOBODY;
}
