/*
 * failalloc.h -- make one allocation fail, to reach the out-of-memory
 * branches of the code under test.
 *
 * The test runner (check_all) is linked with -Wl,--wrap for malloc, calloc,
 * realloc, strdup and strndup, so every call from the objects linked into
 * it (the plugin's objects, the host library, the test helpers) goes through
 * this file; jansson's allocations (json_set_alloc_funcs) and SQLite's
 * (SQLITE_CONFIG_MALLOC, when fa_install ran before SQLite was first used in
 * the process) are counted too. Only the thread that called fa_arm counts and
 * fails: the plugin's own threads (log pump, dispatcher, timers) run as
 * usual, so a sweep is repeatable. Other binaries that link the helpers
 * without --wrap (the bench) never reach these functions.
 *
 * The usual sweep, n = 1, 2, ... until an armed call made no allocation fail:
 *     fa_arm(n); rc = call(); hit = fa_disarm();
 * Each step checks the call failed cleanly (a status, no crash, no leak
 * under ASan or valgrind) or succeeded in spite of the failure.
 */
#ifndef DG_FAILALLOC_H
#define DG_FAILALLOC_H

/* Hook jansson and SQLite (idempotent; fa_arm calls it). SQLite is hooked
 * only when this runs before the process opens its first database: a test
 * that wants SQLite's failures calls it first. */
void fa_install(void);

/* 1 when SQLite's allocations are counted (fa_install ran before the
 * process opened its first database: always in fork mode; in one process
 * running many tests, as under valgrind, usually not). */
int fa_sqlite_hooked(void);

/* From now on, on the calling thread: the nth allocation (1 = the next one)
 * returns NULL, once. */
void fa_arm(long nth);

/* The same counting only the allocations of the code linked into the
 * runner and jansson's (fa_arm_own), or only SQLite's (fa_arm_sqlite): a
 * new database costs SQLite thousands of allocations, so a sweep may go
 * through ours one by one and SQLite's with a stride. */
void fa_arm_own(long nth);
void fa_arm_sqlite(long nth);

/* Stop counting on the calling thread. Returns 1 when the nth allocation
 * came (and failed), 0 when the armed code made fewer than n. */
int fa_disarm(void);

/* Allocations counted since the last fa_arm on this thread. */
long fa_count(void);

/* Host callbacks of a test host (and Check itself, which is linked in
 * statically) must not fail: they stop counting while they run.
 *     int was = fa_suspend(); ... fa_resume(was); */
int fa_suspend(void);
void fa_resume(int was);

/* Whether the runner was linked with the wrappers (0: fa_arm never fails
 * anything, so a sweep would prove nothing; the sweeps assert it). */
int fa_available(void);

#endif
