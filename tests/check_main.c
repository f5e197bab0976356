/*
 * check_main.c -- the one Check runner. Every tests/check_<area>.c defines
 * `Suite *make_<area>_suite(void)`; the build collects them into suites.inc.
 * Fork mode stays on (crash capture, per-test timeouts). Run one suite with
 * CK_RUN_SUITE=<name>, one test with CK_RUN_CASE=<name>.
 */
#include <check.h>
#include <stdlib.h>

#define X(fn) Suite *fn(void);
#include "suites.inc"
#undef X

int main(void)
{
    SRunner *sr = srunner_create(NULL);
#define X(fn) srunner_add_suite(sr, fn());
#include "suites.inc"
#undef X
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
