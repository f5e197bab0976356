/*
 * outbox_enqueue.c -- splitting a message into parts of its platform's
 * text limit and queueing them, inside the caller's store transaction, one
 * row and one key per part.
 */
#include "outbox_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "buf.h"
#include "store.h"
#include "utf8.h"

static int blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\n' && s[i] != '\r' && s[i] != '\t')
            return 0;
    return 1;
}

void dg_outbox_parts_free(char **parts, size_t n)
{
    if (!parts)
        return;
    for (size_t i = 0; i < n; i++)
        free(parts[i]);
    free(parts);
}

static int push_part(char ***parts, size_t *n, size_t *cap, const char *s, size_t len)
{
    /* Line breaks at either end of a part carry nothing (the platforms trim them). */
    while (len && (*s == '\n' || *s == '\r')) {
        s++;
        len--;
    }
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
        len--;
    if (blank(s, len))
        return DG_OK;
    if (dg_grow(parts, cap, *n, sizeof **parts, 4))
        return DG_ERR_NOMEM;
    char *c = strndup(s, len);
    if (!c)
        return DG_ERR_NOMEM;
    (*parts)[(*n)++] = c;
    return DG_OK;
}

int dg_outbox_split(const char *content, size_t limit, char ***parts, size_t *n)
{
    *parts = NULL;
    *n = 0;
    if (!content || limit == 0)
        return DG_ERR_INVALID;
    size_t cap = 0;
    const char *s = content;
    for (;;) {
        /* Walk up to limit characters; remember the last break candidates. */
        size_t off = 0, chars = 0;
        const char *nl = NULL, *sp = NULL;
        while (s[off] && chars < limit) {
            size_t l = dg_utf8_seq_len(s + off);
            if (!l) {
                dg_outbox_parts_free(*parts, *n);
                *parts = NULL;
                *n = 0;
                return DG_ERR_INVALID;
            }
            if (s[off] == '\n')
                nl = s + off;
            else if (s[off] == ' ')
                sp = s + off;
            off += l;
            chars++;
        }
        if (!s[off]) { /* the rest fits */
            int rc = push_part(parts, n, &cap, s, off);
            if (rc) {
                dg_outbox_parts_free(*parts, *n);
                *parts = NULL;
                *n = 0;
            }
            return rc;
        }
        /* A break exactly at the limit counts too. */
        if (s[off] == '\n')
            nl = s + off;
        else if (!nl && s[off] == ' ')
            sp = s + off;
        const char *cut = nl ? nl : sp;
        const char *next;
        if (cut) {
            next = cut + 1; /* the break character goes */
        } else {
            cut = s + off; /* hard cut on a character boundary */
            next = cut;
        }
        int rc = push_part(parts, n, &cap, s, (size_t)(cut - s));
        if (rc) {
            dg_outbox_parts_free(*parts, *n);
            *parts = NULL;
            *n = 0;
            return rc;
        }
        s = next;
    }
}

/* 24 hex characters from the kernel's random source. */
static int make_nonce(char out[2 * OUTBOX_NONCE_BYTES + 1])
{
    unsigned char b[OUTBOX_NONCE_BYTES];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t r = getrandom(b + got, sizeof b - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)r;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof b; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[2 * OUTBOX_NONCE_BYTES] = '\0';
    return 0;
}

int dg_outbox_enqueue(dg_store *st, const char *target, const char *content,
                      const char *const *mention_ids, size_t n_mentions, int64_t now_ms)
{
    char channel[DG_CHAT_ID_MAX], thread[DG_CHAT_ID_MAX];
    dg_platform pf = dg_chat_target_split(target, channel, thread);
    if (!st || !pf || !content || blank(content, strlen(content)))
        return DG_ERR_INVALID;
    if (n_mentions > OUTBOX_MAX_MENTIONS || (n_mentions && !mention_ids))
        return DG_ERR_INVALID;
    size_t mlen = 1;
    for (size_t i = 0; i < n_mentions; i++) {
        if (!dg_platform_user_id_valid(pf, mention_ids[i]))
            return DG_ERR_INVALID;
        mlen += strlen(mention_ids[i]) + 1;
    }
    char *mentions = malloc(mlen);
    if (!mentions)
        return DG_ERR_NOMEM;
    mentions[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < n_mentions; i++)
        used +=
            (size_t)snprintf(mentions + used, mlen - used, "%s%s", i ? "," : "", mention_ids[i]);

    char **parts = NULL;
    size_t np = 0;
    int rc = dg_outbox_split(content, dg_platform_max_text(pf), &parts, &np);
    if (rc == DG_OK && np == 0)
        rc = DG_ERR_INVALID;
    for (size_t i = 0; rc == DG_OK && i < np; i++) {
        char nonce[2 * OUTBOX_NONCE_BYTES + 1];
        if (make_nonce(nonce) != 0) {
            rc = DG_ERR_IO;
            break;
        }
        dg_outbox_row row = {
            .channel_id = channel,
            .thread_id = thread[0] ? thread : NULL,
            .platform = dg_platform_name(pf),
            .content = parts[i],
            .mentions = mentions,
            .nonce = nonce,
            .part = (int)i + 1,
            .parts = (int)np,
            .created_at_ms = now_ms,
        };
        rc = dg_store_outbox_insert(st, &row, NULL);
    }
    dg_outbox_parts_free(parts, np);
    free(mentions);
    return rc;
}
