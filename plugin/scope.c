/*
 * scope.c -- session scope derivation (see scope.h for the rules).
 */
#include "scope.h"

#include <stdio.h>
#include <string.h>

#include "openclaw/plugin.h"
#include "status.h"

static int present(const char *s)
{
    return s && *s;
}

static int is_hex64(const char *s)
{
    size_t i = 0;
    for (; s[i]; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return 0;
    }
    return i == 64;
}

int dg_nip10_root(const dg_tag *tags, size_t n_tags, char out[65])
{
    const char *root = NULL, *reply = NULL;
    for (size_t i = 0; tags && i < n_tags; i++) {
        const dg_tag *t = &tags[i];
        if (t->n < 4 || !t->parts)
            continue;
        const char *kind = t->parts[0], *id = t->parts[1], *marker = t->parts[3];
        if (!kind || strcmp(kind, "e") != 0 || !id || !marker || !is_hex64(id))
            continue;
        /* The last valid tag of each marker wins. */
        if (strcmp(marker, "root") == 0)
            root = id;
        else if (strcmp(marker, "reply") == 0)
            reply = id;
    }
    /* root+reply -> root; reply only -> the reply is the root; root only
     * is a direct reply to a top-level event: treated as top-level, like
     * the relay's ingest rule. */
    const char *pick = (root && reply) ? root : (reply ? reply : NULL);
    if (!pick)
        return 0;
    dg_scope_normalize_root(pick, out, 65);
    return 1;
}

int dg_scope_derive(dg_session_policy policy, const dg_scope_event *ev, dg_scope *out)
{
    if (!ev || !present(ev->channel_id)) {
        memset(out, 0, sizeof *out);
        return DG_ERR_INVALID;
    }
    if (ev->is_dm || policy == DG_POLICY_CHANNEL)
        return dg_scope_conversation(ev->channel_id, out);
    if (present(ev->thread_id))
        return dg_scope_thread(ev->channel_id, ev->thread_id, out);
    char root[65];
    if (dg_nip10_root(ev->tags, ev->n_tags, root))
        return dg_scope_thread(ev->channel_id, root, out);
    if (present(ev->message_id))
        return dg_scope_thread(ev->channel_id, ev->message_id, out);
    /* A session without a message or thread: the channel-level session. */
    return dg_scope_conversation(ev->channel_id, out);
}

const char *dg_scope_channel(const dg_scope *s)
{
    return s->channel_id;
}

char *dg_scope_label(const dg_scope *s, char buf[DG_SCOPE_LABEL_MAX])
{
    if (s->kind == DG_SCOPE_CONVERSATION)
        snprintf(buf, DG_SCOPE_LABEL_MAX, "conversation");
    else
        snprintf(buf, DG_SCOPE_LABEL_MAX, "thread:%.8s", s->root);
    return buf;
}

char *dg_scope_key(const dg_scope *s, char buf[DG_SCOPE_KEY_MAX])
{
    if (s->kind == DG_SCOPE_CONVERSATION)
        snprintf(buf, DG_SCOPE_KEY_MAX, "conv:%s", s->channel_id);
    else
        snprintf(buf, DG_SCOPE_KEY_MAX, "thread:%s:%s", s->channel_id, s->root);
    return buf;
}

int dg_scope_from_key(const char *key, dg_scope *out)
{
    memset(out, 0, sizeof *out);
    if (!key)
        return DG_ERR_INVALID;
    if (strncmp(key, "conv:", 5) == 0)
        return dg_scope_conversation(key + 5, out);
    if (strncmp(key, "thread:", 7) != 0)
        return DG_ERR_INVALID;
    /* Roots never contain ':', so the last one separates them. */
    const char *rest = key + 7, *colon = strrchr(rest, ':');
    if (!colon || colon == rest || !colon[1])
        return DG_ERR_INVALID;
    size_t n = (size_t)(colon - rest);
    if (n >= DG_SCOPE_ID_MAX)
        return DG_ERR_INVALID;
    char ch[DG_SCOPE_ID_MAX];
    memcpy(ch, rest, n);
    ch[n] = '\0';
    return dg_scope_thread(ch, colon + 1, out);
}

int dg_scope_equal(const dg_scope *a, const dg_scope *b)
{
    return a->kind == b->kind && strcmp(a->channel_id, b->channel_id) == 0 &&
           strcmp(a->root, b->root) == 0;
}
