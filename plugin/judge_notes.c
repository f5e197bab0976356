/*
 * judge_notes.c -- the judge's evidence (judge_plugin.h): the last
 * DGJ_MAX_MESSAGES messages of each scope, cut to DGJ_MESSAGE_CHARS
 * characters as they come in, and the candidates' one-line roles. Nothing
 * else is ever shown to a judge.
 */
#include "judge_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "utf8.h"

void dg_judge_note_message(dg_judge *j, const char *scope_key, const char *author, const char *text,
                           int human)
{
    if (!j || !scope_key)
        return;
    const char *t = text ? text : "";
    size_t keep = dg_utf8_prefix(t, DGJ_MESSAGE_CHARS);
    char *copy = malloc(keep + 4);
    if (!copy)
        return;
    memcpy(copy, t, keep);
    strcpy(copy + keep, t[keep] ? "..." : "");
    pthread_mutex_lock(&j->mu);
    judge_scope *s = judge_scope_get(j, scope_key, 1);
    if (!s) {
        pthread_mutex_unlock(&j->mu);
        free(copy);
        return;
    }
    judge_note *n = &s->notes[s->head % DGJ_MAX_MESSAGES];
    free(n->text);
    n->text = copy;
    snprintf(n->author, sizeof n->author, "%s", author ? author : "?");
    n->human = human;
    s->head++;
    if (s->count < DGJ_MAX_MESSAGES)
        s->count++;
    pthread_mutex_unlock(&j->mu);
}

int dg_judge_latest(dg_judge *j, const char *scope_key, char *author)
{
    if (author)
        author[0] = '\0';
    if (!j)
        return 0;
    pthread_mutex_lock(&j->mu);
    judge_scope *s = judge_scope_get(j, scope_key, 0);
    int human = 0;
    if (s && s->count) {
        const judge_note *n = &s->notes[(s->head - 1) % DGJ_MAX_MESSAGES];
        human = n->human;
        if (author)
            snprintf(author, DGJ_LABEL_MAX, "%s", n->author);
    }
    pthread_mutex_unlock(&j->mu);
    return human;
}

char *judge_context(dg_judge *j, const judge_job *job)
{
    dgj_candidate cands[DGJ_MAX_LABELS];
    for (size_t i = 0; i < job->n_candidates; i++) {
        const dg_agent_cfg *a = dg_config_agent(&j->p->cfg, job->candidates[i]);
        cands[i] = (dgj_candidate){.id = job->candidates[i], .role = a ? a->role : NULL};
    }
    dgj_message msgs[DGJ_MAX_MESSAGES];
    pthread_mutex_lock(&j->mu);
    judge_scope *s = judge_scope_get(j, job->scope_key, 0);
    size_t n = s ? s->count : 0;
    for (size_t i = 0; i < n; i++) {
        const judge_note *note = &s->notes[(s->head - n + i) % DGJ_MAX_MESSAGES];
        msgs[i] = (dgj_message){.author = note->author, .text = note->text};
    }
    dgj_evidence ev = {.messages = msgs,
                       .n_messages = n,
                       .candidates = cands,
                       .n_candidates = job->n_candidates,
                       .allow_nobody = job->allow_nobody};
    char *text = dgj_context(&ev); /* under the lock: the notes are borrowed */
    pthread_mutex_unlock(&j->mu);
    return text;
}
