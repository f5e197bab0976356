/*
 * judge_plugin.h -- the plugin's judge: the worker thread that asks "who speaks
 * next, or nobody?" (of an OpenAI-compatible endpoint, judge/, or of the
 * host's decision models through ABI 1.2 decide), the evidence it shows
 * (the last messages of each scope, the agents' roles), and which scopes
 * are being decided. The engine asks (turns_judge.c) and the worker hands
 * the verdict back through the apply callback; while a scope is decided
 * its runs are claimed.
 *
 * One per plugin instance (p->judge, NULL: no judge). Every function may be
 * called from any thread unless it says otherwise; none calls the host or
 * the engine while it holds the judge's lock.
 */
#ifndef DG_PLUGIN_JUDGE_H
#define DG_PLUGIN_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "dirigent.h"
#include "judge.h"
#include "judge_policy.h"
#include "must_check.h"

typedef struct dg_judge dg_judge;

/* A verdict the worker hands back. Borrowed for the callback's duration. */
typedef struct dg_judge_result {
    const char *scope_key;  /* the engine's key of the scope asked about */
    const char *channel_id; /* its channel */
    uint64_t seq;           /* the question's number (dg_judge_ask) */
    dg_judge_outcome outcome;
    dg_judge_cause cause;          /* DG_JUDGE_TAKEN, or why it fell back */
    const char *chosen;            /* the agent chosen (DG_JUDGE_CHOSE), else NULL */
    double probability;            /* the answer's, 0 when none */
    const char *source;            /* "openai:<model>", the host's source, "" */
    int64_t tokens_in, tokens_out; /* -1: not reported */
    int64_t latency_ms;
} dg_judge_result;

/* Applies a verdict to the turn (the engine: dg_turns_judge_apply). Called
 * on the judge's worker thread with no judge lock held. */
typedef int (*dg_judge_apply_fn)(void *ud, const dg_judge_result *res);

/*
 * The judge of p's config (p->cfg.judge_*): *out NULL for "none", and also
 * when the config names a judge this start cannot use (a host without
 * decide, a key variable that is not set): then the reason is logged by
 * name and the plugin runs with today's order. The worker starts here.
 * DG_OK or DG_ERR_NOMEM / DG_ERR_INTERNAL (no thread). Thread: init.
 */
int dg_judge_new(dg_plugin *p, dg_judge_apply_fn apply, void *apply_ud,
                 dg_judge **out) DG_MUST_CHECK;

/* Stop the worker (a question in flight is aborted or runs out its
 * timeout) and join it; idempotent, NULL is fine. Thread: shutdown, before
 * the engine goes. */
void dg_judge_stop(dg_judge *j);

/* Stop, then free; NULL is fine. Thread: shutdown. */
void dg_judge_free(dg_judge *j);

/* Which judge is on, for `!dirigent status` and the logs: "openai (model
 * m at http://...)", "host (decision models)"; "none" for NULL. Into buf. */
const char *dg_judge_describe(const dg_judge *j, char *buf, size_t cap);

/* A message of scope_key for the evidence: author (an agent id, "human",
 * "bot"), text (may be NULL), human: 1 for a human's. Out of memory only
 * loses evidence. */
void dg_judge_note_message(dg_judge *j, const char *scope_key, const char *author, const char *text,
                           int human);

/* 1 when the latest message noted in scope_key is a human's (no agent
 * answered it yet); *author (may be NULL) gets the latest author's id into
 * a buffer of DGJ_LABEL_MAX bytes ("" when none). */
int dg_judge_latest(dg_judge *j, const char *scope_key, char *author);

/* One question: the candidates (agent ids, 1..DGJ_MAX_LABELS - 1, copied)
 * and whether nobody is allowed. */
typedef struct dg_judge_question {
    const char *scope_key;
    const char *channel_id;
    const char *const *candidates;
    size_t n_candidates;
    int allow_nobody;
} dg_judge_question;

/* Queue q for the worker: scope_key is being decided from now on (a
 * question already open for it is replaced: its answer will be dropped).
 * *seq gets its number. DG_OK or DG_ERR_NOMEM (nothing queued). */
int dg_judge_ask(dg_judge *j, const dg_judge_question *q, uint64_t *seq) DG_MUST_CHECK;

/* 1 while scope_key is being decided (a question queued or in flight
 * whose verdict is not applied yet). */
int dg_judge_deciding(dg_judge *j, const char *scope_key);

/* The open question of scope_key is dropped: the turn moved on without it
 * (a mention, a budget, the scope slept). */
void dg_judge_cancel(dg_judge *j, const char *scope_key);

/* 1 on the judge's worker thread: the change that applies a verdict asks
 * nothing. */
int dg_judge_on_worker(dg_judge *j);

/* Question seq of scope_key is answered (its verdict is being applied in
 * the caller's transaction): runs count again. Returns 1 when it was the
 * open one. */
int dg_judge_settle(dg_judge *j, const char *scope_key, uint64_t seq);

/* Counters since the start, for tests and the status line. */
typedef struct dg_judge_stats {
    int64_t asked, chose, ended, fell_back;
    int64_t fell_back_by[DG_JUDGE_CAUSES];
} dg_judge_stats;
void dg_judge_get_stats(dg_judge *j, dg_judge_stats *out);

#endif
