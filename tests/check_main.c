/*
 * check_main.c -- the one Check runner. Every tests/check_<area>.c defines
 * `Suite *make_<area>_suite(void)`; the build collects them into suites.inc.
 * Fork mode stays on (crash capture, per-test timeouts). Run one suite with
 * CK_RUN_SUITE=<name>, one test case with CK_RUN_CASE=<name>. A name that
 * matches nothing is refused (exit 2, the known suites listed): Check itself
 * would run 0 checks and call that a success.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define X(fn) Suite *fn(void);
#include "suites.inc"
#undef X

typedef struct suite_entry {
    const char *fn; /* "make_<name>_suite" */
    Suite *(*make)(void);
} suite_entry;

static const suite_entry all[] = {
#define X(fn) {#fn, fn},
#include "suites.inc"
#undef X
};
#define N_SUITES (sizeof all / sizeof *all)

/* <name> of "make_<name>_suite" into buf. */
static const char *suite_name(const char *fn, char *buf, size_t n)
{
    size_t len = strlen(fn) - strlen("make_") - strlen("_suite");
    snprintf(buf, n, "%.*s", (int)len, fn + strlen("make_"));
    return buf;
}

int main(void)
{
    const char *want_suite = getenv("CK_RUN_SUITE");
    const char *want_case = getenv("CK_RUN_CASE");
    char name[128];
    if (want_suite && *want_suite) {
        int found = 0;
        for (size_t i = 0; i < N_SUITES && !found; i++)
            found = !strcmp(suite_name(all[i].fn, name, sizeof name), want_suite);
        if (!found) {
            fprintf(stderr,
                    "check_all: CK_RUN_SUITE=%s is not a suite; the suites are:", want_suite);
            for (size_t i = 0; i < N_SUITES; i++)
                fprintf(stderr, " %s", suite_name(all[i].fn, name, sizeof name));
            fprintf(stderr, "\n");
            return 2;
        }
    }
    SRunner *sr = srunner_create(NULL);
    int case_found = !(want_case && *want_case);
    for (size_t i = 0; i < N_SUITES; i++) {
        Suite *s = all[i].make();
        if (!case_found && (!want_suite || !*want_suite ||
                            !strcmp(suite_name(all[i].fn, name, sizeof name), want_suite)))
            case_found = suite_tcase(s, want_case);
        srunner_add_suite(sr, s);
    }
    if (!case_found) {
        fprintf(stderr,
                "check_all: CK_RUN_CASE=%s is no test case of %s; the case names are the "
                "tcase_create() names in tests/check_<suite>.c\n",
                want_case, want_suite && *want_suite ? want_suite : "any suite");
        srunner_free(sr);
        return 2;
    }
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
