/*
 * judge_policy.h -- what a judge's answer does to the turn, on plain
 * values: the agent it chose, the end of the round, or today's hand-off
 * (a failure, a timeout, an answer less sure than judge.minConfidence, or
 * "nobody" where a human message still waits for an agent's run). Pure: no
 * I/O, no state; any thread.
 */
#ifndef DG_JUDGE_POLICY_H
#define DG_JUDGE_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "judge.h"

typedef enum dg_judge_outcome {
    DG_JUDGE_FALLBACK = 0, /* today's hand-off: the order's next agent */
    DG_JUDGE_CHOSE = 1,    /* the agent the judge named */
    DG_JUDGE_ENDED = 2     /* nobody: the round ends */
} dg_judge_outcome;

/* Why an answer was not taken; each is logged once per plugin instance. */
typedef enum dg_judge_cause {
    DG_JUDGE_TAKEN = 0,
    DG_JUDGE_FAILED,         /* the source refused or failed (HTTP, provider) */
    DG_JUDGE_TIMED_OUT,      /* no answer within judge.timeoutMs */
    DG_JUDGE_UNREADABLE,     /* an answer that is no answer (garbage, unknown label) */
    DG_JUDGE_UNSUPPORTED,    /* the host has no decision model configured */
    DG_JUDGE_LOW_CONFIDENCE, /* below judge.minConfidence */
    DG_JUDGE_NOBODY_REFUSED, /* "nobody" while a human message waits for an agent */
    DG_JUDGE_CAUSES
} dg_judge_cause;

/* "failed", "timed out", ... (static string). */
const char *dg_judge_cause_name(dg_judge_cause c);

/* A status of the asking (DG_OK, DG_ERR_IO ...) with the asker's timed_out
 * flag as a cause (DG_JUDGE_TAKEN for DG_OK). */
dg_judge_cause dg_judge_cause_of(int status, int timed_out);

/*
 * The verdict on answer a (read only when cause is DG_JUDGE_TAKEN):
 * DG_JUDGE_ENDED for DGJ_NOBODY when allow_nobody, DG_JUDGE_CHOSE for an
 * agent, both only at a probability of min_confidence or more; otherwise
 * DG_JUDGE_FALLBACK with *why saying which cause (why may be NULL).
 */
dg_judge_outcome dg_judge_verdict(dg_judge_cause cause, const dgj_answer *a, double min_confidence,
                                  int allow_nobody, dg_judge_cause *why);

#endif
