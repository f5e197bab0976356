/*
 * check_build.c -- the Makefile, read through `make -n` (nothing is built)
 * for a fresh build folder: what `make install` builds and installs, that no
 * object is deleted as an intermediate file, and that every compile records
 * its header dependencies. Runs from the top folder, as `make check` does.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

/* `make [-n] <args>` (NULL-terminated) with a clean environment for make
 * (no MAKEFLAGS of the `make check` that runs us); its stdout, malloc'd. */
static char *make_run(int dry, const char *const *args)
{
    char *dir = tu_mkdtemp();
    char *outf = tu_path(dir, "out");
    /* A clean environment for make: not the MAKEFLAGS of the `make check`
     * that runs us. */
    static const char *const unset[] = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SANITIZE", NULL};
    const char *argv[32] = {"make", "--no-print-directory", "-n"};
    int n = dry ? 3 : 2;
    for (const char *const *a = args; *a && n < 31; a++)
        argv[n++] = *a;
    argv[n] = NULL;
    int st = tu_run_wait(argv, outf, NULL, unset, 30000);
    ck_assert_msg(st == 0, "make %s%s failed (status %d; is make installed?)", dry ? "-n " : "",
                  args[0], st);
    FILE *f = fopen(outf, "r");
    ck_assert_ptr_nonnull(f);
    char *text = NULL;
    size_t cap = 0;
    ssize_t k = getdelim(&text, &cap, '\0', f);
    fclose(f);
    ck_assert_msg(k >= 0 || !dry, "make -n printed nothing");
    if (k < 0) {
        free(text);
        text = strdup("");
    }
    tu_rmtree(dir);
    free(dir);
    free(outf);
    return text;
}

static char *dry_run(const char *const *args)
{
    return make_run(1, args);
}

/* The line of text holding needle (malloc'd) or NULL. */
static char *line_with(const char *text, const char *needle)
{
    const char *p = strstr(text, needle);
    if (!p)
        return NULL;
    const char *b = p, *e = p;
    while (b > text && b[-1] != '\n')
        b--;
    while (*e && *e != '\n')
        e++;
    return strndup(b, (size_t)(e - b));
}

START_TEST(install_builds_and_installs_every_program)
{
    /* It used to install ocgw and dirigent-noreply only when an earlier make
     * had happened to build them ([ -f ] ... || true). */
    char *tmp = tu_mkdtemp();
    char *b = tu_path(tmp, "b"), *d = tu_path(tmp, "d");
    char barg[600], darg[600], link_gw[600], link_nr[600], bin[600];
    snprintf(barg, sizeof barg, "BUILD=%s", b);
    snprintf(darg, sizeof darg, "DESTDIR=%s", d);
    const char *args[] = {barg, darg, "PREFIX=/opt/dg", "install", NULL};
    char *out = dry_run(args);
    snprintf(link_gw, sizeof link_gw, "-o %s/ocgw ", b);
    snprintf(link_nr, sizeof link_nr, "-o %s/dirigent-noreply ", b);
    ck_assert_msg(strstr(out, link_gw), "make install does not build ocgw (no \"%s\")", link_gw);
    ck_assert_msg(strstr(out, link_nr), "make install does not build dirigent-noreply (no \"%s\")",
                  link_nr);
    snprintf(bin, sizeof bin, "%s/opt/dg/bin/", d);
    char *inst = line_with(out, bin);
    ck_assert_msg(inst && strstr(inst, "/ocgw") && strstr(inst, "/dirigent-noreply") &&
                      !strstr(inst, "|| true"),
                  "no unconditional install of the programs into %s: %.1500s", bin,
                  inst ? inst : "(none)");
    free(inst);
    char plug[600];
    snprintf(plug, sizeof plug, "%s/opt/dg/lib/openclaw/plugins/dirigent/dirigent.so", d);
    ck_assert_msg(strstr(out, plug), "the plugin is not installed to %s", plug);
    free(out);
    free(b);
    free(d);
    tu_rmtree(tmp);
    free(tmp);
}
END_TEST

START_TEST(no_object_is_deleted_as_intermediate)
{
    /* dirigent-noreply's object was built through a bare pattern rule,
     * deleted after the first build and rebuilt by the next `make`. */
    char *tmp = tu_mkdtemp();
    char barg[600];
    snprintf(barg, sizeof barg, "BUILD=%s/b", tmp);
    const char *args[] = {barg, "all", NULL};
    char *out = dry_run(args);
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        /* make's own deletion of intermediates prints "rm <files>". */
        char *line = strndup(p, strcspn(p, "\n"));
        ck_assert_msg(strncmp(line, "rm ", 3) != 0 || line[3] == '-' || !strstr(line, "/obj/"),
                      "make deletes an object after the build: %.1500s", line);
        free(line);
    }
    free(out);
    tu_rmtree(tmp);
    free(tmp);
}
END_TEST

START_TEST(every_compile_records_its_headers)
{
    /* templates_embedded.c includes templates.h but was compiled without
     * -MMD: a change of the header left a stale object in the plugin. */
    char *tmp = tu_mkdtemp();
    char barg[600], runner[600];
    snprintf(barg, sizeof barg, "BUILD=%s/b", tmp);
    snprintf(runner, sizeof runner, "%s/b/check_all", tmp);
    const char *args[] = {barg, "all", runner, NULL};
    char *out = dry_run(args);
    int compiles = 0;
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        size_t len = strcspn(p, "\n");
        char *line = strndup(p, len);
        if (strstr(line, " -c ") && strstr(line, ".c -o ")) {
            compiles++;
            ck_assert_msg(strstr(line, " -MMD "), "a compile without -MMD: %.1500s", line);
        }
        free(line);
    }
    ck_assert_int_ge(compiles, 20);
    ck_assert_msg(strstr(out, "templates_embedded.c -o"), "templates_embedded.c not compiled?");
    free(out);
    tu_rmtree(tmp);
    free(tmp);
}
END_TEST

START_TEST(a_removed_suite_leaves_no_stale_entry)
{
    /* suites.inc depended on the test sources that exist: after a suite
     * file was removed or renamed it stayed as it was, and the runner no
     * longer linked (undefined make_<old>_suite). */
    char *tmp = tu_mkdtemp();
    char *b = tu_path(tmp, "b");
    char *gen = tu_path(b, "gen");
    char *inc = tu_path(gen, "suites.inc");
    ck_assert_int_eq(mkdir(b, 0755), 0);
    ck_assert_int_eq(mkdir(gen, 0755), 0);
    ck_assert_int_eq(tu_write_file(inc, "X(make_gone_suite)\nX(make_build_suite)\n"), 0);
    char barg[600];
    snprintf(barg, sizeof barg, "BUILD=%s", b);
    const char *args[] = {barg, inc, NULL};
    free(make_run(0, args));
    FILE *f = fopen(inc, "r");
    ck_assert_ptr_nonnull(f);
    char text[4096] = "";
    size_t k = fread(text, 1, sizeof text - 1, f);
    text[k] = '\0';
    fclose(f);
    ck_assert_msg(!strstr(text, "make_gone_suite"), "stale entry kept: %s", text);
    ck_assert_msg(strstr(text, "X(make_build_suite)"), "the list lost a suite: %s", text);
    free(inc);
    free(gen);
    free(b);
    tu_rmtree(tmp);
    free(tmp);
}
END_TEST

START_TEST(changed_flags_rebuild_the_objects)
{
    /* Objects did not depend on the flags: `make check SANITIZE=1 BUILD=x`
     * after `make BUILD=x` rebuilt nothing and ran the suites without the
     * sanitizers, and `make CFLAGS=...` kept the old objects. Real runs of
     * one small object. */
    char *tmp = tu_mkdtemp();
    char barg[600], obj[600];
    snprintf(barg, sizeof barg, "BUILD=%s/b", tmp);
    snprintf(obj, sizeof obj, "%s/b/obj/host/och_util.o", tmp);
    const char *plain[] = {barg, obj, NULL};
    char *out = make_run(0, plain);
    ck_assert_msg(strstr(out, "och_util.c -o"), "not built: %.1500s", out);
    free(out);
    out = make_run(0, plain);
    ck_assert_msg(!strstr(out, "och_util.c -o"), "rebuilt with the same flags: %.1500s", out);
    free(out);
    /* ... and a dry run says so too (the check reads, never forces). */
    out = dry_run(plain);
    ck_assert_msg(!strstr(out, "och_util.c -o") && !strstr(out, "gen/flags"),
                  "make -n claims a rebuild with the same flags: %.1500s", out);
    free(out);
    const char *san[] = {barg, "SANITIZE=1", obj, NULL};
    out = make_run(0, san);
    char *line = line_with(out, "och_util.c -o");
    ck_assert_msg(line && strstr(line, "-fsanitize=address"),
                  "SANITIZE=1 in the same folder kept the plain object: %.1500s", out);
    free(line);
    free(out);
    const char *cflags[] = {barg, "CFLAGS=-O0 -g", obj, NULL};
    out = make_run(0, cflags);
    line = line_with(out, "och_util.c -o");
    ck_assert_msg(line && strstr(line, "-O0 -g") && !strstr(line, "-fsanitize"),
                  "new CFLAGS kept the old object: %.1500s", out);
    free(line);
    free(out);
    tu_rmtree(tmp);
    free(tmp);
}
END_TEST

/* Runs argv (argv[0] from PATH or a path) for at most 60 s with stdout to
 * out (a file path) and stderr to err; returns the exit status or -1. */
static int run_to(const char *const *argv, const char *out, const char *err)
{
    return tu_run_wait(argv, out, err, NULL, 60000);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *text = NULL;
    size_t cap = 0;
    ssize_t k = getdelim(&text, &cap, '\0', f);
    fclose(f);
    *len = k > 0 ? (size_t)k : 0;
    return text ? text : strdup("");
}

START_TEST(embedded_templates_keep_every_character)
{
    /* A template with "??!" or "??/" (trigraphs in ISO C) failed the -std=c11
     * -Werror build; a CRLF line ended its C string literal early. */
    static const char text[] = "Really?\?! (a?\?/b) ?\?= \"quoted\" \\ back\\\r\n"
                               "second line\twith a tab, {summaryPath} and <@123>\n";
    char *tmp = tu_mkdtemp();
    char *md = tu_path(tmp, "x.md"), *gen = tu_path(tmp, "e.c"), *mainc = tu_path(tmp, "m.c");
    char *bin = tu_path(tmp, "t"), *out = tu_path(tmp, "out"), *err = tu_path(tmp, "err");
    ck_assert_int_eq(tu_write_file(md, text), 0);
    const char *embed[] = {"sh", "scripts/embed-templates.sh", md, NULL};
    ck_assert_int_eq(run_to(embed, gen, err), 0);
    ck_assert_int_eq(tu_write_file(mainc,
                                   "#include <stdio.h>\n#include <string.h>\n"
                                   "#include \"templates.h\"\n"
                                   "int main(void) {\n"
                                   "    fputs(dg_embedded_templates[0].text, stdout);\n"
                                   "    return strcmp(dg_embedded_templates[0].name, \"x.md\") != 0"
                                   " || dg_embedded_templates[1].name != NULL;\n}\n"),
                     0);
    const char *cc[] = {"cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-Iplugin", "-o", bin,
                        gen, mainc, NULL};
    char *junk = tu_path(tmp, "cc.out");
    int rc = run_to(cc, junk, err);
    size_t n;
    char *why = slurp(err, &n);
    ck_assert_msg(rc == 0, "the embedded template does not compile: %.1500s", why);
    free(why);
    const char *prog[] = {bin, NULL};
    ck_assert_int_eq(run_to(prog, out, err), 0);
    char *got = slurp(out, &n);
    ck_assert_uint_eq(n, strlen(text));
    ck_assert_msg(memcmp(got, text, n) == 0, "embedded text differs: \"%s\"", got);
    free(got);
    free(junk);
    free(md), free(gen), free(mainc), free(bin), free(out), free(err);
    tu_rmtree(tmp);
    free(tmp);
}
END_TEST

Suite *make_build_suite(void)
{
    Suite *s = suite_create("build");
    TCase *tc = tcase_create("makefile");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, install_builds_and_installs_every_program);
    tcase_add_test(tc, no_object_is_deleted_as_intermediate);
    tcase_add_test(tc, every_compile_records_its_headers);
    tcase_add_test(tc, a_removed_suite_leaves_no_stale_entry);
    tcase_add_test(tc, changed_flags_rebuild_the_objects);
    tcase_add_test(tc, embedded_templates_keep_every_character);
    suite_add_tcase(s, tc);
    return s;
}
