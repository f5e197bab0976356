/*
 * judge_ask.c -- one question of the judge's worker: asked of its source
 * (the OpenAI-compatible endpoint, or the host's decide of ABI 1.2) within
 * judge.timeoutMs, the answer turned into a verdict (judge_policy.h), each
 * cause of a fallback logged once, the verdict handed to the engine.
 */
#include "judge_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The host's decision model (ABI 1.2), through the host-call table (which
 * reads the answer like any untrusted input). */
static int ask_host(dg_judge *j, const char *const *labels, size_t n, const char *context,
                    dgj_answer *a, char *err, size_t err_len)
{
    dg_host_question q = {.question = DGJ_QUESTION,
                          .labels = labels,
                          .n_labels = n,
                          .context = context,
                          .timeout_ms = j->p->cfg.judge_timeout_ms};
    return j->p->host.decide(j->p->host.ctx, &q, a, err, err_len);
}

static void log_fallback_once(dg_judge *j, dg_judge_cause cause, const char *detail)
{
    pthread_mutex_lock(&j->mu);
    int first = !j->logged[cause];
    j->logged[cause] = 1;
    j->stats.fell_back++;
    j->stats.fell_back_by[cause]++;
    pthread_mutex_unlock(&j->mu);
    if (first)
        dg_log(j->p, OC_LOG_WARN,
               "judge: %s (%s); the turn goes on in today's order (logged once per cause)",
               dg_judge_cause_name(cause), detail);
}

/* The answer's verdict with its counters and log line. */
static dg_judge_outcome judge_verdict(dg_judge *j, int rc, int64_t latency, const dgj_answer *a,
                                      int allow_nobody, const char *err, dg_judge_cause *why)
{
    /* The client tells its own timeout; the host's decide is bounded by
     * timeoutMs, so a failure that took that long was one. */
    int timed_out = a->timed_out ||
                    (rc != DG_OK && rc != DG_ERR_INVALID && latency >= j->p->cfg.judge_timeout_ms);
    dg_judge_cause cause = dg_judge_cause_of(rc, timed_out);
    dg_judge_outcome o =
        dg_judge_verdict(cause, a, j->p->cfg.judge_min_confidence, allow_nobody, why);
    if (o == DG_JUDGE_FALLBACK) {
        char detail[300];
        if (*why == DG_JUDGE_LOW_CONFIDENCE || *why == DG_JUDGE_NOBODY_REFUSED)
            snprintf(detail, sizeof detail, "answer %s, p %.2f", a->label, a->probability);
        else
            snprintf(detail, sizeof detail, "%s", err);
        log_fallback_once(j, *why, detail);
    } else {
        pthread_mutex_lock(&j->mu);
        if (o == DG_JUDGE_CHOSE)
            j->stats.chose++;
        else
            j->stats.ended++;
        pthread_mutex_unlock(&j->mu);
    }
    return o;
}

void judge_run(dg_judge *j, const judge_job *job)
{
    const char *labels[DGJ_MAX_LABELS];
    size_t n = 0;
    for (; n < job->n_candidates; n++)
        labels[n] = job->candidates[n];
    if (job->allow_nobody)
        labels[n++] = DGJ_NOBODY;
    dgj_answer a;
    memset(&a, 0, sizeof a);
    a.tokens_in = a.tokens_out = -1;
    char err[300] = "judge: out of memory";
    char *context = judge_context(j, job);
    int64_t start = mono_ms(), latency = 0;
    int rc = DG_ERR_NOMEM;
    if (context && n >= 2 && j->source == DG_JUDGE_HOST)
        rc = ask_host(j, labels, n, context, &a, err, sizeof err);
    else if (context && n >= 2)
        rc = dgj_openai_ask(j->openai, labels, n, context, j->p->cfg.judge_timeout_ms, &a, NULL,
                            err, sizeof err);
    else if (context)
        snprintf(err, sizeof err, "judge: fewer than two labels");
    latency = mono_ms() - start;
    free(context);
    dg_judge_cause why = DG_JUDGE_TAKEN;
    dg_judge_outcome o = judge_verdict(j, rc, latency, &a, job->allow_nobody, err, &why);
    dg_judge_result res = {.scope_key = job->scope_key,
                           .channel_id = job->channel_id,
                           .seq = job->seq,
                           .outcome = o,
                           .cause = why,
                           .chosen = o == DG_JUDGE_CHOSE ? a.label : NULL,
                           .probability = rc == DG_OK ? a.probability : 0,
                           .source = a.source[0]                  ? a.source
                                     : j->source == DG_JUDGE_HOST ? "host"
                                                                  : "openai",
                           .tokens_in = a.tokens_in,
                           .tokens_out = a.tokens_out,
                           .latency_ms = latency};
    int arc = j->apply ? j->apply(j->apply_ud, &res) : DG_OK;
    if (arc != DG_OK)
        dg_log(j->p, OC_LOG_ERROR, "judge: the verdict for channel %s was not applied (%s)",
               job->channel_id, dg_status_name(arc));
    /* Applied or not, the question is closed (a failed apply leaves
     * today's order, which the stall nudge wakes). */
    (void)dg_judge_settle(j, job->scope_key, job->seq);
}
