/*
 * judge.c -- the plugin's judge (judge_plugin.h): its life cycle, the
 * queue of questions its worker thread answers one at a time, and which
 * scopes are being decided.
 */
#include "judge_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_defer.h"

static void job_free(judge_job *job)
{
    if (!job)
        return;
    free(job->scope_key);
    free(job->channel_id);
    for (size_t i = 0; i < job->n_candidates; i++)
        free(job->candidates[i]);
    free(job);
}

judge_scope *judge_scope_get(dg_judge *j, const char *key, int make)
{
    judge_scope *s = dg_map_get(&j->scopes, key);
    if (s || !make)
        return s;
    if (j->scopes.n >= JUDGE_SCOPES_MAX) {
        /* Only notes are lost: a scope being decided keeps its record. */
        dg_map_each(&j->scopes, judge_scope_free, NULL);
        dg_map_clear(&j->scopes);
    }
    if (!(s = calloc(1, sizeof *s)) || !(s->key = strdup(key)) ||
        dg_map_put(&j->scopes, s->key, s) != DG_OK) {
        judge_scope_free(s, NULL);
        return NULL;
    }
    return s;
}

void judge_scope_free(void *v, void *arg)
{
    (void)arg;
    judge_scope *s = v;
    if (!s)
        return;
    for (size_t i = 0; i < DGJ_MAX_MESSAGES; i++)
        free(s->notes[i].text);
    free(s->key);
    free(s);
}

static void *worker(void *arg)
{
    dg_judge *j = arg;
    dg_log_own_thread(); /* a plugin thread: never waits on the host's log */
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (!j->stop && !j->head)
            pthread_cond_wait(&j->cv, &j->mu);
        if (j->stop)
            break;
        judge_job *job = j->head;
        j->head = job->next;
        if (!j->head)
            j->tail = NULL;
        judge_scope *s = judge_scope_get(j, job->scope_key, 0);
        int current = s && s->deciding == job->seq;
        pthread_mutex_unlock(&j->mu);
        if (current)
            judge_run(j, job);
        job_free(job);
        pthread_mutex_lock(&j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static void log_openai(void *ud, int level, const char *message)
{
    dg_log(ud, level, "%s", message);
}

/* The source this start can use: DG_OK and j->source set, or the source
 * refused by name in the log (j->source none). */
static int pick_source(dg_judge *j)
{
    dg_plugin *p = j->p;
    const dg_config *c = &p->cfg;
    if (c->judge_source == DG_JUDGE_HOST) {
        if (!p->host.decide) {
            dg_log(p, OC_LOG_ERROR,
                   "judge: judge.source is \"host\" but this host has no decide (ABI 1.2 "
                   "decision models); running without a judge (today's order)");
            return DG_OK;
        }
        j->source = DG_JUDGE_HOST;
        return DG_OK;
    }
    const char *key = NULL;
    if (c->judge_api_key_env && !(key = getenv(c->judge_api_key_env))) {
        dg_log(p, OC_LOG_ERROR,
               "judge: judge.apiKeyEnv names %s, which is not set in the environment; "
               "running without a judge (today's order)",
               c->judge_api_key_env);
        return DG_OK;
    }
    char err[256] = "";
    int rc = dgj_openai_new(c->judge_base_url, c->judge_model, key, log_openai, p, &j->openai, err,
                            sizeof err);
    if (rc == DG_ERR_NOMEM)
        return rc;
    if (rc != DG_OK) {
        dg_log(p, OC_LOG_ERROR, "%s; running without a judge (today's order)", err);
        return DG_OK;
    }
    j->source = DG_JUDGE_OPENAI;
    return DG_OK;
}

int dg_judge_new(dg_plugin *p, dg_judge_apply_fn apply, void *apply_ud, dg_judge **out)
{
    *out = NULL;
    if (p->cfg.judge_source == DG_JUDGE_NONE)
        return DG_OK;
    dg_judge *j = calloc(1, sizeof *j);
    if (!j)
        return DG_ERR_NOMEM;
    j->p = p;
    j->apply = apply;
    j->apply_ud = apply_ud;
    j->next_seq = 1;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    dg_map_init(&j->scopes);
    int rc = pick_source(j);
    if (rc != DG_OK || j->source == DG_JUDGE_NONE) {
        dg_judge_free(j);
        return rc;
    }
    if (pthread_create(&j->worker, NULL, worker, j) != 0) {
        dg_judge_free(j);
        return DG_ERR_INTERNAL;
    }
    j->started = 1;
    char what[256];
    dg_log(p, OC_LOG_INFO, "judge: on, %s", dg_judge_describe(j, what, sizeof what));
    *out = j;
    return DG_OK;
}

void dg_judge_stop(dg_judge *j)
{
    if (!j || !j->started)
        return;
    pthread_mutex_lock(&j->mu);
    j->stop = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    dgj_openai_abort(j->openai);
    pthread_join(j->worker, NULL);
    j->started = 0;
}

void dg_judge_free(dg_judge *j)
{
    if (!j)
        return;
    dg_judge_stop(j);
    while (j->head) {
        judge_job *next = j->head->next;
        job_free(j->head);
        j->head = next;
    }
    dg_map_each(&j->scopes, judge_scope_free, NULL);
    dg_map_clear(&j->scopes);
    dgj_openai_free(j->openai);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

const char *dg_judge_describe(const dg_judge *j, char *buf, size_t cap)
{
    if (!j)
        snprintf(buf, cap, "none (today's order)");
    else if (j->source == DG_JUDGE_HOST)
        snprintf(buf, cap, "host (its decision models), timeout %ld ms, min confidence %.2f",
                 j->p->cfg.judge_timeout_ms, j->p->cfg.judge_min_confidence);
    else
        snprintf(buf, cap, "openai (model %s at %s), timeout %ld ms, min confidence %.2f",
                 j->p->cfg.judge_model, j->p->cfg.judge_base_url, j->p->cfg.judge_timeout_ms,
                 j->p->cfg.judge_min_confidence);
    return buf;
}

static judge_job *job_make(const dg_judge_question *q)
{
    judge_job *job = calloc(1, sizeof *job);
    if (!job)
        return NULL;
    int bad = !(job->scope_key = strdup(q->scope_key)) ||
              !(job->channel_id = strdup(q->channel_id ? q->channel_id : "")) ||
              q->n_candidates == 0 || q->n_candidates >= DGJ_MAX_LABELS;
    for (size_t i = 0; !bad && i < q->n_candidates; i++, job->n_candidates++)
        bad = !(job->candidates[i] = strdup(q->candidates[i]));
    job->allow_nobody = q->allow_nobody;
    if (bad) {
        job_free(job);
        return NULL;
    }
    return job;
}

int dg_judge_ask(dg_judge *j, const dg_judge_question *q, uint64_t *seq)
{
    judge_job *job = job_make(q);
    if (!job)
        return DG_ERR_NOMEM;
    pthread_mutex_lock(&j->mu);
    judge_scope *s = judge_scope_get(j, q->scope_key, 1);
    if (!s) {
        pthread_mutex_unlock(&j->mu);
        job_free(job);
        return DG_ERR_NOMEM;
    }
    job->seq = s->deciding = j->next_seq++;
    if (j->tail)
        j->tail->next = job;
    else
        j->head = job;
    j->tail = job;
    j->stats.asked++;
    if (seq)
        *seq = job->seq;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return DG_OK;
}

int dg_judge_deciding(dg_judge *j, const char *scope_key)
{
    if (!j)
        return 0;
    pthread_mutex_lock(&j->mu);
    judge_scope *s = judge_scope_get(j, scope_key, 0);
    int yes = s && s->deciding != 0;
    pthread_mutex_unlock(&j->mu);
    return yes;
}

void dg_judge_cancel(dg_judge *j, const char *scope_key)
{
    if (!j)
        return;
    pthread_mutex_lock(&j->mu);
    judge_scope *s = judge_scope_get(j, scope_key, 0);
    if (s)
        s->deciding = 0;
    pthread_mutex_unlock(&j->mu);
}

int dg_judge_on_worker(dg_judge *j)
{
    return j->started && pthread_equal(pthread_self(), j->worker);
}

int dg_judge_settle(dg_judge *j, const char *scope_key, uint64_t seq)
{
    pthread_mutex_lock(&j->mu);
    judge_scope *s = judge_scope_get(j, scope_key, 0);
    int yes = s && s->deciding == seq;
    if (yes)
        s->deciding = 0;
    pthread_mutex_unlock(&j->mu);
    return yes;
}

void dg_judge_get_stats(dg_judge *j, dg_judge_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!j)
        return;
    pthread_mutex_lock(&j->mu);
    *out = j->stats;
    pthread_mutex_unlock(&j->mu);
}
