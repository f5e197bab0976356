/*
 * fuzz_silent.c -- libFuzzer target: the silent detector (plugin/silent.c).
 *
 * Input: the first byte picks the tool-call count (0..3), the rest is the
 * agent's output (cut at a NUL, as a C string). Checked: dg_run_classify
 * agrees with dg_silent_text (silent or blank text and no tool calls is a
 * pass; tool calls and silent text is "acted"; anything else spoke) and gives a
 * named outcome; the same text wrapped in white space keeps its verdict.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "silent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    long tool_calls = data[0] & 3;
    char *text = strndup((const char *)data + 1, size - 1);
    if (!text)
        return 0;
    int silent = dg_silent_text(text);
    dg_run_outcome o = dg_run_classify(text, tool_calls);
    const char *name = dg_run_outcome_name(o);
    if (!name || (o != DG_RUN_SPOKE && o != DG_RUN_SILENT && o != DG_RUN_ACTED)) {
        fprintf(stderr, "fuzz_silent: unnamed outcome %d\n", (int)o);
        abort();
    }
    if (silent && o == DG_RUN_SPOKE) {
        fprintf(stderr, "fuzz_silent: silent text classified as speech: \"%s\"\n", text);
        abort();
    }
    int blank = 1;
    for (const char *p = text; *p && blank; p++)
        blank = *p == ' ' || (*p >= '\t' && *p <= '\r');
    /* Saying nothing at all is a pass too (not a NO_REPLY text). */
    if (!silent && !blank && o == DG_RUN_SILENT) {
        fprintf(stderr, "fuzz_silent: speech classified as silent: \"%s\"\n", text);
        abort();
    }
    size_t n = strlen(text);
    char *padded = malloc(n + 5);
    if (padded) {
        memcpy(padded, " \n", 2);
        memcpy(padded + 2, text, n);
        memcpy(padded + 2 + n, "\t\n", 3);
        if (dg_silent_text(padded) != silent) {
            fprintf(stderr,
                    "fuzz_silent: white space around the text changed the verdict: \"%s\"\n", text);
            abort();
        }
        free(padded);
    }
    free(text);
    return 0;
}
