/*
 * pipe.c -- keyed posts sent once, and the pipe that runs them on worker
 * threads. See slack.h.
 */
#include "slack_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLACK_PIPE_WORKERS 8

int dg_slack_identify(dg_slack *s, dg_slack_err *err)
{
    pthread_mutex_lock(&s->mu);
    int known = s->self_id[0] != '\0';
    pthread_mutex_unlock(&s->mu);
    if (known)
        return DG_OK;
    dg_slack_identity me;
    return dg_slack_auth_test(s, &me, err);
}

int dg_slack_post_once(dg_slack *s, const dg_slack_post_spec *p, int maybe_posted,
                       dg_slack_posted *out, dg_slack_err *err)
{
    if (p->key && maybe_posted) {
        int found = 0;
        int rc = dg_slack_identify(s, err);
        if (rc == DG_OK)
            rc = dg_slack_find_by_key(s, p->channel_id, p->thread_ts, p->key, NULL, &found, out,
                                      err);
        if (rc != DG_OK || found)
            return rc;
    }
    return dg_slack_post(s, p, out, err);
}

struct dg_slack_job {
    char *channel_id, *thread_ts, *text, *key;
    int maybe_posted;
};

void dg_slack_job_free(dg_slack_job *job)
{
    if (!job)
        return;
    free(job->channel_id);
    free(job->thread_ts);
    free(job->text);
    free(job->key);
    free(job);
}

int dg_slack_job_new(const dg_slack_post_spec *p, int maybe_posted, dg_slack_job **out)
{
    dg_slack_job *j = calloc(1, sizeof *j);
    *out = NULL;
    if (!j || !(j->channel_id = strdup(p->channel_id)) || !(j->text = strdup(p->text)) ||
        (p->thread_ts && !(j->thread_ts = strdup(p->thread_ts))) ||
        (p->key && !(j->key = strdup(p->key)))) {
        dg_slack_job_free(j);
        return DG_ERR_NOMEM;
    }
    j->maybe_posted = maybe_posted;
    *out = j;
    return DG_OK;
}

typedef struct queued {
    uint64_t tag;
    dg_slack_job *job;
} queued;

/* Each worker takes the oldest queued job; the owning thread collects the
 * ends. mu guards every field below s. */
struct dg_slack_pipe {
    dg_slack *s;
    size_t cap;
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* a job queued, or stop */
    pthread_cond_t done_cv; /* CLOCK_MONOTONIC: a post ended, or a wakeup */
    queued *q;              /* ring of qn queued jobs from qhead (cap) */
    size_t qhead, qn;
    dg_slack_done *d; /* ring of dn ended posts from dhead (cap) */
    size_t dhead, dn;
    size_t busy; /* submitted and not yet collected */
    int stop, woken;
    pthread_t workers[SLACK_PIPE_WORKERS];
    size_t n_workers;
};

static void *worker(void *arg)
{
    dg_slack_pipe *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && !p->qn)
            pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->stop)
            break;
        queued job = p->q[p->qhead];
        p->qhead = (p->qhead + 1) % p->cap;
        p->qn--;
        pthread_mutex_unlock(&p->mu);
        dg_slack_done end;
        memset(&end, 0, sizeof end);
        end.tag = job.tag;
        dg_slack_post_spec ps = {.channel_id = job.job->channel_id,
                                 .thread_ts = job.job->thread_ts,
                                 .text = job.job->text,
                                 .key = job.job->key};
        dg_slack_posted where;
        end.rc = dg_slack_post_once(p->s, &ps, job.job->maybe_posted, &where, &end.err);
        if (end.rc == DG_OK)
            snprintf(end.ts, sizeof end.ts, "%s", where.ts);
        dg_slack_job_free(job.job);
        pthread_mutex_lock(&p->mu);
        p->d[(p->dhead + p->dn++) % p->cap] = end;
        pthread_cond_signal(&p->done_cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int dg_slack_pipe_new(dg_slack *s, size_t cap, dg_slack_pipe **out)
{
    *out = NULL;
    if (cap < 1 || cap > 256)
        return DG_ERR_INVALID;
    dg_slack_pipe *p = calloc(1, sizeof *p);
    if (!p)
        return DG_ERR_NOMEM;
    p->s = s;
    p->cap = cap;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->done_cv, &ca);
    pthread_condattr_destroy(&ca);
    size_t want = cap < SLACK_PIPE_WORKERS ? cap : SLACK_PIPE_WORKERS;
    if (!(p->q = calloc(cap, sizeof *p->q)) || !(p->d = calloc(cap, sizeof *p->d))) {
        dg_slack_pipe_free(p);
        return DG_ERR_NOMEM;
    }
    while (p->n_workers < want && pthread_create(&p->workers[p->n_workers], NULL, worker, p) == 0)
        p->n_workers++;
    if (!p->n_workers) {
        dg_slack_pipe_free(p);
        return DG_ERR_NOMEM;
    }
    *out = p;
    return DG_OK;
}

void dg_slack_pipe_free(dg_slack_pipe *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < p->n_workers; i++)
        pthread_join(p->workers[i], NULL);
    for (size_t i = 0; p->q && i < p->qn; i++)
        dg_slack_job_free(p->q[(p->qhead + i) % p->cap].job);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    pthread_mutex_destroy(&p->mu);
    free(p->q);
    free(p->d);
    free(p);
}

int dg_slack_pipe_submit(dg_slack_pipe *p, uint64_t tag, dg_slack_job *job, dg_slack_err *err)
{
    pthread_mutex_lock(&p->mu);
    if (p->busy == p->cap) {
        pthread_mutex_unlock(&p->mu);
        dg_slack_job_free(job);
        return dgs_fail(err, DG_ERR_IO, 0, 0, "pipe: %zu posts in flight already (its capacity)",
                        p->cap);
    }
    p->q[(p->qhead + p->qn++) % p->cap] = (queued){.tag = tag, .job = job};
    p->busy++;
    pthread_cond_signal(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    return DG_OK;
}

size_t dg_slack_pipe_busy(const dg_slack_pipe *p)
{
    dg_slack_pipe *m = (dg_slack_pipe *)p; /* the mutex, not the pipe, changes */
    pthread_mutex_lock(&m->mu);
    size_t n = m->busy;
    pthread_mutex_unlock(&m->mu);
    return n;
}

size_t dg_slack_pipe_run(dg_slack_pipe *p, long wait_ms, dg_slack_done *done)
{
    pthread_mutex_lock(&p->mu);
    if (!p->busy) {
        p->woken = 0;
        pthread_mutex_unlock(&p->mu);
        return 0;
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    long ms = wait_ms > 0 ? wait_ms : 0;
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    while (!p->dn && !p->woken && rc == 0)
        rc = pthread_cond_timedwait(&p->done_cv, &p->mu, &until);
    p->woken = 0;
    size_t n = 0;
    for (; p->dn; n++, p->dn--, p->dhead = (p->dhead + 1) % p->cap)
        done[n] = p->d[p->dhead];
    p->busy -= n;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void dg_slack_pipe_wakeup(dg_slack_pipe *p)
{
    pthread_mutex_lock(&p->mu);
    p->woken = 1;
    pthread_cond_signal(&p->done_cv);
    pthread_mutex_unlock(&p->mu);
}
