/*
 * check_cli.c -- the command lines of the standalone programs build/ocgw and
 * build/fake-discord: every bad argument is refused with exit status 2 and a
 * line naming the option and its rule, before anything is started. (The
 * arguments of dirigent-noreply are checked in check_noreply.c.)
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

/* Runs <build>/<prog> with args (NULL-terminated) for at most 10 s; returns
 * its exit status (-1 when it had to be killed or died of a signal) and its
 * stderr in *err (malloc'd). */
static int run_out(const char *prog, const char *const *args, char **out, char **err)
{
    char *dir = tu_mkdtemp();
    char *errf = tu_path(dir, "stderr"), *outf = tu_path(dir, "stdout");
    char *bin = NULL;
    ck_assert_int_ge(asprintf(&bin, "%s/%s", tu_build_dir(), prog), 0);
    ck_assert_msg(access(bin, X_OK) == 0, "%s is not built", bin);
    const char *argv[32] = {bin};
    int n = 1;
    for (; args && *args && n < 31; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    int st = tu_run_wait(argv, outf, errf, NULL, 10000);
    char **dst[2] = {err, out};
    const char *src[2] = {errf, outf};
    for (int k = 0; k < 2; k++) {
        if (!dst[k])
            continue;
        FILE *f = fopen(src[k], "r");
        char buf[4096] = "";
        size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        buf[got] = '\0';
        if (f)
            fclose(f);
        *dst[k] = strdup(buf);
    }
    tu_rmtree(dir);
    free(dir);
    free(errf);
    free(outf);
    free(bin);
    return st;
}

static int run(const char *prog, const char *const *args, char **err)
{
    return run_out(prog, args, NULL, err);
}

/* prog args... must exit 2 at once with every needle in its stderr. */
static void refused(const char *prog, const char *const *args, const char *n1, const char *n2)
{
    char *err = NULL;
    int rc = run(prog, args, &err);
    char cmd[256] = "";
    for (const char *const *a = args; *a; a++)
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " %s", *a);
    ck_assert_msg(rc == 2, "%s%s: exit %d, want 2 (stderr: %s)", prog, cmd, rc, err);
    ck_assert_msg(strstr(err, n1) && (!n2 || strstr(err, n2)),
                  "%s%s: stderr lacks \"%s\"/\"%s\": %s", prog, cmd, n1, n2 ? n2 : "", err);
    free(err);
}

START_TEST(fake_discord_refuses_bad_numbers_and_ids)
{
    /* strtod alone took "", "nan" and "inf": a NaN fail rate, an infinite
     * Retry-After. */
    static const char *const rates[] = {"", "nan", "inf", "-0.1", "1.5", "0.3x"};
    for (size_t i = 0; i < sizeof rates / sizeof *rates; i++) {
        const char *a[] = {"--fail-rate", rates[i], NULL};
        refused("fake-discord", a, "--fail-rate", "0..1");
    }
    static const char *const waits[] = {"", "nan", "inf", "0", "-1", "1e300", "61"};
    for (size_t i = 0; i < sizeof waits / sizeof *waits; i++) {
        const char *a[] = {"--retry-after", waits[i], NULL};
        refused("fake-discord", a, "--retry-after", "at most 60");
    }
    const char *g[] = {"--guild", "abc", NULL};
    refused("fake-discord", g, "--guild", "snowflake");
    const char *c[] = {"--channel", "12x", NULL};
    refused("fake-discord", c, "--channel", "snowflake");
    const char *u1[] = {"--user", "=200000000000000011", NULL};
    refused("fake-discord", u1, "--user", "non-empty token");
    const char *u2[] = {"--user", "tok=abc", NULL};
    refused("fake-discord", u2, "--user", "snowflake user id");
    const char *p[] = {"--port", "65536", NULL};
    refused("fake-discord", p, "--port", "0..65535");
    const char *x[] = {"--bogus", "1", NULL};
    refused("fake-discord", x, "unknown option --bogus", NULL);
}
END_TEST

START_TEST(ocgw_refuses_bad_numbers_and_stray_arguments)
{
    /* The numbers are checked before the config is read: atol() took
     * "abc" as 0 (ignored) and "5" as a bare usage text. */
    static const char *const polls[] = {"abc", "5", "600001", "50ms", ""};
    for (size_t i = 0; i < sizeof polls / sizeof *polls; i++) {
        const char *a[] = {"--poll-ms", polls[i], "--config", "demo/host.json", NULL};
        refused("ocgw", a, "--poll-ms", "10..600000");
    }
    static const char *const timeouts[] = {"abc", "0", "-5", "1e3"};
    for (size_t i = 0; i < sizeof timeouts / sizeof *timeouts; i++) {
        const char *a[] = {"--timeout-ms", timeouts[i], "--config", "demo/host.json", NULL};
        refused("ocgw", a, "--timeout-ms", "whole number of milliseconds");
    }
    const char *stray[] = {"--config", "demo/host.json", "extra", NULL};
    refused("ocgw", stray, "unexpected argument \"extra\"", NULL);
    const char *none[] = {"--quiet", NULL};
    refused("ocgw", none, "--config FILE is required", NULL);
    const char *lvl[] = {"--log-level", "loud", "--config", "demo/host.json", NULL};
    refused("ocgw", lvl, "--log-level loud", "debug, info, warn or error");
}
END_TEST

/* A story file for --expect is checked when it is read: a wrong type or a
 * misspelt status used to be taken as "expect nothing" or a default. */
START_TEST(ocgw_refuses_a_malformed_story)
{
    char *dir = tu_mkdtemp();
    char *state = tu_path(dir, "state"), *work = tu_path(dir, "work");
    char *plugins = tu_path(dir, "plugins");
    setenv("OCGW_API_BASE", "http://127.0.0.1:9/api/v10", 1);
    setenv("OCGW_STATE", state, 1);
    setenv("OCGW_WORK", work, 1);
    setenv("OCGW_PLUGINS", plugins, 1);
    static const char *const tokens[] = {"DEMO_PLANNER_TOKEN", "DEMO_REVIEWER_TOKEN",
                                         "DEMO_CODER_TOKEN", "DEMO_ALICE_TOKEN"};
    for (size_t i = 0; i < sizeof tokens / sizeof *tokens; i++)
        setenv(tokens[i], "cli-test-token", 1);
    static const struct {
        const char *story, *needle;
    } cases[] = {
        {"{\"timeoutMs\": \"60000\"}", "timeoutMs: expected milliseconds in 1..86400000"},
        {"{\"settleMs\": -1}", "settleMs: expected milliseconds in 0..600000"},
        {"{\"channels\": []}", "channels: expected an object"},
        {"{\"channels\": {\"work\": {}}}", "channels.work: expected an array of messages"},
        {"{\"channels\": {\"work\": [{\"from\": \"alice\", \"mentions\": \"planner\"}]}}",
         "channels.work[0].mentions: expected an array"},
        {"{\"channels\": {\"work\": [{\"form\": \"alice\"}]}}",
         "channels.work[0].form: unknown key"},
        {"{\"files\": [{\"agent\": \"planner\"}]}", "files[0].path: expected a non-empty string"},
        {"{\"files\": [{\"agent\": \"planner\", \"path\": \"../x\"}]}", "without .."},
        {"{\"tools\": [{\"agent\": \"planner\", \"tool\": \"t\", \"status\": \"OK\"}]}",
         "tools[0].status: \"OK\" is not an oc_status name"},
        {"{\"tools\": {}}", "tools: expected an array"},
        {"{\"totals\": {\"runs\": {\"min\": \"1\"}}}", "totals.runs.min: expected a count"},
        {"{\"humansDone\": \"yes\"}", "humansDone: expected true or false"},
    };
    char *story = tu_path(dir, "story.json");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ck_assert_int_eq(tu_write_file(story, cases[i].story), 0);
        const char *a[] = {"--config", "demo/host.json", "--expect", story, "--quiet", NULL};
        refused("ocgw", a, "--expect", cases[i].needle);
    }
    /* The demo's own story passes the check (the run then stops at the
     * missing plugin folder, which is not the story's fault). */
    char *err = NULL;
    const char *ok[] = {"--config",        "demo/host.json", "--expect",
                        "demo/story.json", "--quiet",        NULL};
    ck_assert_int_eq(run("ocgw", ok, &err), 2);
    ck_assert_msg(!strstr(err, "--expect") && strstr(err, "plugins.load.paths"), "%s", err);
    free(err);
    free(story);
    tu_rmtree(dir);
    free(dir);
    free(state);
    free(work);
    free(plugins);
}
END_TEST

/* Each program answers --help and -h (one line per option, --version among
 * them) and --version on stdout with status 0, and names an unknown option
 * in the words "unknown option --bogus". */
START_TEST(programs_answer_help_version_and_unknown_options)
{
    static const char *const progs[] = {"ocgw", "fake-discord", "dirigent-noreply"};
    for (size_t i = 0; i < sizeof progs / sizeof *progs; i++) {
        static const char *const helps[] = {"--help", "-h"};
        for (size_t h = 0; h < 2; h++) {
            const char *a[] = {helps[h], NULL};
            char *out = NULL, *err = NULL;
            int rc = run_out(progs[i], a, &out, &err);
            ck_assert_msg(rc == 0 && strstr(out, "usage: ") && strstr(out, "\n  --version ") &&
                              strstr(out, "\n  -h, --help "),
                          "%s %s: exit %d, stdout: %s", progs[i], helps[h], rc, out);
            free(out);
            free(err);
        }
        const char *v[] = {"--version", NULL};
        char *out = NULL, *err = NULL;
        int rc = run_out(progs[i], v, &out, &err);
        ck_assert_msg(rc == 0 && !strncmp(out, progs[i], strlen(progs[i])) &&
                          strstr(out, DG_VERSION),
                      "%s --version: exit %d: %s", progs[i], rc, out);
        free(out);
        free(err);
        const char *b[] = {"--bogus", NULL};
        refused(progs[i], b, "unknown option --bogus", NULL);
    }
}
END_TEST

START_TEST(ocgw_names_a_missing_config_file)
{
    const char *a[] = {"--config", "/nonexistent/host.json", NULL};
    refused("ocgw", a, "cannot read /nonexistent/host.json: No such file or directory", NULL);
}
END_TEST

/* CK_RUN_SUITE=bogus ran 0 checks and passed. */
START_TEST(runner_refuses_an_unknown_suite_or_case)
{
    setenv("CK_RUN_SUITE", "bogus", 1);
    unsetenv("CK_RUN_CASE");
    char *err = NULL;
    int rc = run("check_all", NULL, &err);
    ck_assert_msg(rc == 2 && strstr(err, "CK_RUN_SUITE=bogus is not a suite") &&
                      strstr(err, " config") && strstr(err, " cli"),
                  "exit %d: %s", rc, err);
    free(err);
    setenv("CK_RUN_SUITE", "cli", 1);
    setenv("CK_RUN_CASE", "bogus", 1);
    rc = run("check_all", NULL, &err);
    ck_assert_msg(rc == 2 && strstr(err, "CK_RUN_CASE=bogus is no test case of cli"), "exit %d: %s",
                  rc, err);
    free(err);
}
END_TEST

Suite *make_cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("arguments");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fake_discord_refuses_bad_numbers_and_ids);
    tcase_add_test(tc, ocgw_refuses_bad_numbers_and_stray_arguments);
    tcase_add_test(tc, ocgw_refuses_a_malformed_story);
    tcase_add_test(tc, programs_answer_help_version_and_unknown_options);
    tcase_add_test(tc, ocgw_names_a_missing_config_file);
    tcase_add_test(tc, runner_refuses_an_unknown_suite_or_case);
    suite_add_tcase(s, tc);
    return s;
}
