/*
 * judge_int.h -- the plugin judge's private record, shared by its files:
 *   judge.c         life cycle, the question queue, which scopes are decided
 *   judge_notes.c   the evidence: each scope's last messages
 *   judge_ask.c     one question asked of the source, its verdict
 */
#ifndef DG_PLUGIN_JUDGE_INT_H
#define DG_PLUGIN_JUDGE_INT_H

#include <pthread.h>

#include "judge_plugin.h"
#include "str_map.h"

/* Scopes whose messages are kept at most; past it the notes start afresh
 * (evidence is a hint, never state). */
#define JUDGE_SCOPES_MAX 4096

typedef struct judge_note {
    char author[DGJ_LABEL_MAX];
    char *text; /* cut to DGJ_MESSAGE_CHARS characters; malloc'd */
    int human;
} judge_note;

/* What the judge keeps of one scope. */
typedef struct judge_scope {
    char *key;
    judge_note notes[DGJ_MAX_MESSAGES]; /* a ring, newest at (head - 1) */
    unsigned head, count;
    uint64_t deciding; /* the open question's number, 0: none */
} judge_scope;

typedef struct judge_job {
    struct judge_job *next;
    char *scope_key, *channel_id;
    char *candidates[DGJ_MAX_LABELS];
    size_t n_candidates;
    int allow_nobody;
    uint64_t seq;
} judge_job;

struct dg_judge {
    dg_plugin *p;
    dg_judge_source source;
    dgj_openai *openai; /* source openai */
    dg_judge_apply_fn apply;
    void *apply_ud;
    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;
    dg_map scopes; /* key -> judge_scope */
    judge_job *head, *tail;
    uint64_t next_seq;
    int stop, started;
    pthread_t worker;
    int logged[DG_JUDGE_CAUSES]; /* each cause logged once */
    dg_judge_stats stats;
};

/* The scope record of key, made when missing (NULL when out of memory).
 * j->mu held. */
judge_scope *judge_scope_get(dg_judge *j, const char *key, int make);

/* Free a scope record (dg_map_each). */
void judge_scope_free(void *v, void *arg);

/* The evidence of job: its scope's notes and the candidates' roles, as
 * plain text (malloc'd; NULL when out of memory). Takes j->mu. */
char *judge_context(dg_judge *j, const judge_job *job);

/* Ask job's question of the source and hand the verdict to j->apply.
 * Worker thread, no lock held. */
void judge_run(dg_judge *j, const judge_job *job);

#endif
