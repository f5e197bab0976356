/*
 * judge_evidence.c -- what a judge is shown and the labels it may answer
 * (judge.h): bounded, plain text, nothing but the recent messages and the
 * candidates' roles.
 */
#include "judge.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "utf8.h"

size_t dgj_labels(const dgj_evidence *ev, const char *labels[DGJ_MAX_LABELS])
{
    size_t n = 0;
    if (!ev || ev->n_candidates + (ev->allow_nobody ? 1 : 0) > DGJ_MAX_LABELS)
        return 0;
    for (size_t i = 0; i < ev->n_candidates; i++) {
        const char *id = ev->candidates[i].id;
        if (!id || !*id || strlen(id) >= DGJ_LABEL_MAX || strcmp(id, DGJ_NOBODY) == 0)
            return 0;
        for (size_t j = 0; j < n; j++)
            if (strcmp(labels[j], id) == 0)
                return 0; /* the ABI wants them unique */
        labels[n++] = id;
    }
    if (ev->allow_nobody)
        labels[n++] = DGJ_NOBODY;
    return n >= 2 ? n : 0;
}

/* s cut to max characters on one line (newlines become spaces), "..."
 * when cut. */
static int add_line(dg_buf *b, const char *s, size_t max)
{
    if (!s)
        s = "";
    size_t keep = dg_utf8_prefix(s, max);
    for (size_t i = 0; i < keep; i++) {
        char c = s[i] == '\n' || s[i] == '\r' || s[i] == '\t' ? ' ' : s[i];
        if (dg_buf_add(b, &c, 1) != 0)
            return -1;
    }
    if (s[keep] && dg_buf_adds(b, "...") != 0)
        return -1;
    return dg_buf_adds(b, "\n");
}

char *dgj_context(const dgj_evidence *ev)
{
    dg_buf b = {0};
    int bad = dg_buf_adds(&b, "Agents (id: role):\n");
    for (size_t i = 0; !bad && i < ev->n_candidates; i++) {
        const dgj_candidate *c = &ev->candidates[i];
        bad = dg_buf_adds(&b, "- ") || dg_buf_adds(&b, c->id ? c->id : "?") ||
              dg_buf_adds(&b, ": ") ||
              add_line(&b, c->role && *c->role ? c->role : "(no role given)", DGJ_ROLE_CHARS);
    }
    size_t first = ev->n_messages > DGJ_MAX_MESSAGES ? ev->n_messages - DGJ_MAX_MESSAGES : 0;
    if (!bad)
        bad = dg_buf_adds(&b, "\nLatest messages, oldest first:\n");
    for (size_t i = first; !bad && i < ev->n_messages; i++) {
        const dgj_message *m = &ev->messages[i];
        bad = dg_buf_adds(&b, m->author ? m->author : "?") || dg_buf_adds(&b, ": ") ||
              add_line(&b, m->text, DGJ_MESSAGE_CHARS);
    }
    if (bad) {
        dg_buf_free(&b);
        return NULL;
    }
    return b.s;
}
