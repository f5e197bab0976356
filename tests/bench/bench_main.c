/*
 * bench_main.c -- `make bench`: runs every `int bench_<name>(void)` found in
 * the .c files of tests/bench (collected into benches.inc by the build). Each bench
 * prints its figures and ratios; a non-zero return marks a failed run (not
 * a missed aim: aims are printed, never asserted). BENCH=<name> runs one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_table.h"

#define X(fn) int fn(void);
#include "benches.inc"
#undef X

int main(void)
{
    const char *only = getenv("BENCH");
    int failed = 0;
#define X(fn)                                                           \
    if (!only || strcmp(only, #fn + 6) == 0) {                          \
        printf("== %s\n", #fn + 6);                                     \
        fflush(stdout);                                                 \
        sync(); /* earlier benches' writes flushed first */             \
        if (fn() != 0) { printf("!! %s failed\n", #fn + 6); failed++; } \
    }
#include "benches.inc"
#undef X
    bench_table_print();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
