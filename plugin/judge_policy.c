/*
 * judge_policy.c -- a judge's answer turned into a verdict (judge_policy.h).
 */
#include "judge_policy.h"

#include <string.h>

#include "status.h"

const char *dg_judge_cause_name(dg_judge_cause c)
{
    switch (c) {
    case DG_JUDGE_TAKEN: return "taken";
    case DG_JUDGE_FAILED: return "failed";
    case DG_JUDGE_TIMED_OUT: return "timed out";
    case DG_JUDGE_UNREADABLE: return "unreadable answer";
    case DG_JUDGE_UNSUPPORTED: return "no decision model on the host";
    case DG_JUDGE_LOW_CONFIDENCE: return "low confidence";
    case DG_JUDGE_NOBODY_REFUSED: return "nobody refused: a human message waits for an agent";
    default: return "?";
    }
}

dg_judge_cause dg_judge_cause_of(int status, int timed_out)
{
    if (status == DG_OK)
        return DG_JUDGE_TAKEN;
    if (timed_out)
        return DG_JUDGE_TIMED_OUT;
    if (status == DG_ERR_INVALID)
        return DG_JUDGE_UNREADABLE;
    if (status == DG_ERR_UNSUPPORTED)
        return DG_JUDGE_UNSUPPORTED;
    return DG_JUDGE_FAILED;
}

dg_judge_outcome dg_judge_verdict(dg_judge_cause cause, const dgj_answer *a, double min_confidence,
                                  int allow_nobody, dg_judge_cause *why)
{
    dg_judge_cause c = cause;
    dg_judge_outcome o = DG_JUDGE_FALLBACK;
    if (c == DG_JUDGE_TAKEN && !(a->probability >= min_confidence))
        c = DG_JUDGE_LOW_CONFIDENCE;
    else if (c == DG_JUDGE_TAKEN && strcmp(a->label, DGJ_NOBODY) == 0)
        c = allow_nobody ? DG_JUDGE_TAKEN : DG_JUDGE_NOBODY_REFUSED;
    if (c == DG_JUDGE_TAKEN)
        o = strcmp(a->label, DGJ_NOBODY) == 0 ? DG_JUDGE_ENDED : DG_JUDGE_CHOSE;
    if (why)
        *why = c;
    return o;
}
