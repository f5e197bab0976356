/*
 * fuzz_judge_answer.c -- libFuzzer target: the judge's answer parsers
 * (judge/judge_answer.c), which read what a model or a host sends.
 *
 * Input: the first byte picks the parser (even: an OpenAI-compatible chat
 * completion body; odd: the answer object of ABI 1.2 decide, parsed as
 * JSON first) and whether "nobody" is a label; the rest is the text.
 * Checked: an accepted answer names one of the labels asked, its
 * probability is in 0..1, its counts are -1 or non-negative, its strings
 * are terminated; a refusal says why.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge.h"
#include "status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int rc, const dgj_answer *a, const char *const *labels, size_t n, const char *err)
{
    if (rc != DG_OK) {
        if (rc != DG_ERR_INVALID || !err[0]) {
            fprintf(stderr, "fuzz_judge_answer: refusal %d without a reason\n", rc);
            abort();
        }
        return;
    }
    size_t i = 0;
    while (i < n && strcmp(labels[i], a->label) != 0)
        i++;
    if (i == n || !(a->probability >= 0 && a->probability <= 1) || a->tokens_in < -1 ||
        a->tokens_out < -1 || !memchr(a->source, '\0', sizeof a->source)) {
        fprintf(stderr, "fuzz_judge_answer: accepted a bad answer (label %.40s)\n", a->label);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *all[] = {"planner", "reviewer", "coder", DGJ_NOBODY};
    size_t n = data[0] & 2 ? 4 : 3;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    dgj_answer a;
    memset(&a, 0x5a, sizeof a);
    char err[256] = "";
    int rc;
    if (data[0] & 1) {
        json_t *o = json_loadb(text, len, JSON_DECODE_ANY, NULL);
        rc = dgj_parse_answer(o, all, n, &a, err, sizeof err);
        json_decref(o);
    } else {
        rc = dgj_parse_chat_completion(text, len, all, n, &a, err, sizeof err);
    }
    check(rc, &a, all, n, err);
    return 0;
}
