/*
 * bench_main.c -- `make bench`: runs every `int bench_<name>(void)` found in
 * the .c files of tests/bench (collected into benches.inc by the build). Each bench
 * prints its figures and ratios; a non-zero return marks a failed run (not
 * a missed aim: aims are printed, never asserted). BENCH=<name> runs one.
 * BENCH_QUICK=1: a short pass of every bench (bench_size), and the run
 * fails when a bench added fewer rows than it expected or a row has no
 * figure; the aims are not judged (a quick pass on a busy machine says
 * nothing about them).
 * Each bench runs in a child process of its own, on a disk flushed of the
 * earlier ones' writes: no bench measures on the heap another one left
 * (the turns section after thread-memory's 200,000 messages gave the
 * speaker's ingest 1.57x where the same binary's BENCH=turns gave 1.45x).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_table.h"

#define X(fn) int fn(void);
#include "benches.inc"
#undef X

/* Run fn in a child; its rows come back through a pipe. 0 when it
 * returned 0 and its rows arrived whole. */
static int run_isolated(int (*fn)(void))
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        bench_table_clear();
        int rc = fn();
        fflush(stdout);
        rc |= bench_table_write(fds[1]);
        _exit(rc ? EXIT_FAILURE : EXIT_SUCCESS);
    }
    close(fds[1]);
    int rc = bench_table_read(fds[0]);
    close(fds[0]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        rc = -1;
    return rc;
}

int main(void)
{
    const char *only = getenv("BENCH");
    int failed = 0;
#define X(fn)                                                                                      \
    if (!only || strcmp(only, #fn + 6) == 0) {                                                     \
        printf("== %s\n", #fn + 6);                                                                \
        fflush(stdout);                                                                            \
        sync(); /* earlier benches' writes flushed first */                                        \
        if (run_isolated(fn) != 0) {                                                               \
            printf("!! %s failed\n", #fn + 6);                                                     \
            failed++;                                                                              \
        }                                                                                          \
    }
#include "benches.inc"
#undef X
    if (bench_table_print(bench_quick()) != 0)
        failed++;
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
