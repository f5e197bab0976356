/*
 * check_build.c -- the Makefile, read through `make -n` (nothing is built)
 * for a fresh build folder: what `make install` builds and installs, that no
 * object is deleted as an intermediate file, and that every compile records
 * its header dependencies. Runs from the top folder, as `make check` does.
 */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
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
    char *outf = tu_path(dir, "out"), *errf = tu_path(dir, "err");
    /* A clean environment for make: not the MAKEFLAGS of the `make check`
     * that runs us. */
    static const char *const unset[] = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SANITIZE", NULL};
    const char *argv[32] = {"make", "--no-print-directory", "-n"};
    int n = dry ? 3 : 2;
    const char *target = args[0];
    for (const char *const *a = args; *a && n < 31; a++)
        argv[n++] = target = *a;
    argv[n] = NULL;
    int st = tu_run_wait(argv, outf, errf, unset, 30000);
    if (st != 0) {
        /* make's first error line says what is missing (a rule, a file); the
         * lines after it are the recursive makes giving up. */
        char why[600] = "";
        FILE *ef = fopen(errf, "r");
        for (char line[600]; ef && !why[0] && fgets(line, sizeof line, ef);)
            if (strstr(line, "***"))
                snprintf(why, sizeof why, "%.*s", (int)strcspn(line, "\n"), line);
        if (!why[0])
            snprintf(why, sizeof why, "make printed no error line");
        if (ef)
            fclose(ef);
        ck_abort_msg("make %s%s failed (status %d): %s", dry ? "-n " : "", target, st, why);
    }
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
    free(errf);
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
    /* The plugin folder is the package's staged folder, copied whole. */
    char plug[600];
    snprintf(plug, sizeof plug, "%s/package/dirigent/. %s/opt/dg/lib/openclaw/plugins/dirigent/", b,
             d);
    ck_assert_msg(strstr(out, "scripts/package.sh stage"),
                  "make install does not stage the plugin folder");
    ck_assert_msg(strstr(out, plug), "the plugin folder is not installed (no \"%s\")", plug);
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
    const char *cc[] = {"cc",       "-std=c11", "-Wall", "-Wextra", "-Werror", "-Iplugin",
                        "-Icommon", "-o",       bin,     gen,       mainc,     NULL};
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

/* Run argv for at most 120 s; its exit status, stdout+stderr in *out (malloc'd). */
static int run_capture(const char *const *argv, char **out)
{
    char *dir = tu_mkdtemp();
    char *of = tu_path(dir, "out");
    static const char *const unset[] = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SANITIZE", NULL};
    int st = tu_run_wait(argv, of, of, unset, 120000);
    FILE *f = fopen(of, "r");
    ck_assert_ptr_nonnull(f);
    char *text = NULL;
    size_t cap = 0;
    if (getdelim(&text, &cap, '\0', f) < 0) {
        free(text);
        text = strdup("");
    }
    fclose(f);
    tu_rmtree(dir);
    free(dir);
    free(of);
    *out = text;
    return st;
}

/* The "version" of a JSON file of the tree (malloc'd), or a failed test. */
static char *json_version(const char *file)
{
    json_error_t e;
    json_t *j = json_load_file(file, 0, &e);
    ck_assert_msg(j, "%s: %s (line %d)", file, e.text, e.line);
    const char *v = json_string_value(json_object_get(j, "version"));
    ck_assert_msg(v && *v, "%s has no \"version\" string", file);
    char *r = strdup(v);
    json_decref(j);
    return r;
}

START_TEST(one_version_everywhere)
{
    /* manifest.json is the one place; the Makefile (DG_VERSION of the .so,
     * the tarball's name) reads it, gen-plugin-json.mjs copies it, and
     * check_abi compares the .so's own version with it. package.json must
     * say the same, and so must the tarball name README tells users to
     * install. */
    char *v = json_version("manifest.json");
    char *pv = json_version("bridge/openclaw/package.json");
    ck_assert_msg(strcmp(v, pv) == 0,
                  "bridge/openclaw/package.json says version %s, manifest.json %s: make them equal",
                  pv, v);
    char *tmp = tu_mkdtemp();
    char *b = tu_path(tmp, "b");
    char barg[600], want[200];
    snprintf(barg, sizeof barg, "BUILD=%s", b);
    /* x64 only: the arm64 cross libraries come with make release-deps, not
     * with make deps, and make check needs nothing beyond the latter. */
    const char *args[] = {barg, "RELEASE_ARCHES=x64", "package", NULL};
    char *out = dry_run(args);
    snprintf(want, sizeof want, "-DDG_VERSION=\\\"%s\\\"", v);
    ck_assert_msg(strstr(out, want), "the .so is not compiled with %s: %.800s", want, out);
    snprintf(want, sizeof want, "scripts/package.sh pack %s %s", b, v);
    ck_assert_msg(strstr(out, want), "make package does not pack version %s (no \"%s\")", v, want);
    FILE *f = fopen("README.md", "r");
    ck_assert_ptr_nonnull(f);
    char *readme = NULL;
    size_t cap = 0;
    ck_assert(getdelim(&readme, &cap, '\0', f) > 0);
    fclose(f);
    snprintf(want, sizeof want, "build/dirigent-openclaw-%s-linux-x64.tgz", v);
    ck_assert_msg(strstr(readme, want), "README.md does not name the tarball %s", want);
    /* The generated openclaw.plugin.json, when node is there to generate it. */
    char *gen = tu_path(tmp, "openclaw.plugin.json");
    char *gout = NULL;
    const char *node[] = {"node", "bridge/openclaw/gen-plugin-json.mjs", "manifest.json", gen,
                          NULL};
    int st = run_capture(node, &gout);
    if (st == 127 || st == -1 || (st != 0 && strstr(gout, "No such file")))
        fprintf(stderr, "build: node not found; openclaw.plugin.json's version not compared\n");
    else {
        ck_assert_msg(st == 0, "gen-plugin-json.mjs failed: %s", gout);
        char *gv = json_version(gen);
        ck_assert_msg(strcmp(gv, v) == 0, "openclaw.plugin.json says %s, manifest.json %s", gv, v);
        free(gv);
    }
    free(gout), free(gen), free(readme), free(out), free(b), free(pv), free(v);
    tu_rmtree(tmp);
    free(tmp);
}
END_TEST

/* Every file (not folder) under dir, '\n'-separated, into *acc. */
static void list_files(const char *dir, char **acc, size_t *len)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char *p = tu_path(dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            list_files(p, acc, len);
        else {
            size_t n = strlen(p);
            char *na = realloc(*acc, *len + n + 2);
            ck_assert_ptr_nonnull(na);
            memcpy(na + *len, p, n);
            na[*len + n] = '\n';
            na[*len + n + 1] = '\0';
            *acc = na;
            *len += n + 1;
        }
        free(p);
    }
    closedir(d);
}

static const char tiny_host[] =
    "#include <openclaw/plugin.h>\n"
    "#include <dlfcn.h>\n"
    "#include <stdio.h>\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "    if (argc != 2) return 2;\n"
    "    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);\n"
    "    if (!h) { fprintf(stderr, \"%s\\n\", dlerror()); return 1; }\n"
    "    oc_plugin_entry_fn entry;\n"
    "    *(void **)&entry = dlsym(h, OC_PLUGIN_ENTRY_SYMBOL);\n"
    "    const oc_plugin *p = entry ? entry() : NULL;\n"
    "    if (!p || p->abi_major != OC_ABI_MAJOR || p->struct_size < sizeof *p) return 3;\n"
    "    printf(\"%s %s abi %u.%u\\n\", p->id, p->version, (unsigned)p->abi_major, "
    "(unsigned)p->abi_minor);\n"
    "    return 0;\n"
    "}\n";

START_TEST(install_then_uninstall_leaves_nothing)
{
    /* distcheck in small: make install into a DESTDIR, compile a tiny host
     * against the installed header found through the installed .pc, load
     * the installed .so with it, make uninstall: no file may be left. */
    const char *b = tu_build_dir();
    char *tmp = tu_mkdtemp();
    char *d = tu_path(tmp, "dest");
    char barg[600], darg[600];
    snprintf(barg, sizeof barg, "BUILD=%s", b);
    snprintf(darg, sizeof darg, "DESTDIR=%s", d);
#if defined(__SANITIZE_ADDRESS__)
    const char *san = "SANITIZE=1"; /* this runner's build folder is a sanitizer build */
#else
    const char *san = "SANITIZE=";
#endif
    /* make coverage runs the suites in its gcov build and says so. */
    const char *cov = getenv("DG_COVERAGE") ? "COVERAGE=1" : "COVERAGE=";
    /* Nothing may be rebuilt: the build folder under test is installed as it is. */
    const char *dry[] = {barg,      darg, san, cov, "PREFIX=/usr/local", "KOFFI_FROM=none",
                         "install", NULL};
    char *plan = dry_run(dry);
    ck_assert_msg(!strstr(plan, " -c "),
                  "make install would compile in %s (flags differ from "
                  "this build?): %.600s",
                  b, plan);
    free(plan);
    const char *inst[] = {"make",
                          "--no-print-directory",
                          barg,
                          darg,
                          san,
                          cov,
                          "PREFIX=/usr/local",
                          "KOFFI_FROM=none",
                          "install",
                          NULL};
    char *out = NULL;
    int st = run_capture(inst, &out);
    ck_assert_msg(st == 0, "make install DESTDIR=%s failed (%d): %s", d, st, out);
    free(out);

    /* A complete plugin folder: what OpenClaw needs to load it. */
    static const char *const plugin_files[] = {"index.mjs",
                                               "package.json",
                                               "openclaw.plugin.json",
                                               "dirigent.so",
                                               "dirigent-noreply",
                                               "dirigent-ctl",
                                               "dirigent-noreply.service",
                                               "dirigent-noreply.env",
                                               "LICENSE",
                                               "README.md",
                                               "manifest.json",
                                               NULL};
    char pdir[800], f[1000];
    snprintf(pdir, sizeof pdir, "%s/usr/local/lib/openclaw/plugins/dirigent", d);
    for (const char *const *n = plugin_files; *n; n++) {
        snprintf(f, sizeof f, "%s/%s", pdir, *n);
        ck_assert_msg(access(f, R_OK) == 0, "make install left out %s", f);
    }
    static const char *const other[] = {"bin/ocgw",
                                        "bin/dirigent-noreply",
                                        "include/openclaw/plugin.h",
                                        "lib/pkgconfig/openclaw-plugin.pc",
                                        "lib/systemd/user/dirigent-noreply.service",
                                        NULL};
    for (const char *const *n = other; *n; n++) {
        snprintf(f, sizeof f, "%s/usr/local/%s", d, *n);
        ck_assert_msg(access(f, R_OK) == 0, "make install left out %s", f);
    }

    /* The tiny host, compiled with the .pc's flags. */
    char pcpath[900], defprefix[900];
    snprintf(pcpath, sizeof pcpath, "PKG_CONFIG_PATH=%s/usr/local/lib/pkgconfig", d);
    snprintf(defprefix, sizeof defprefix, "--define-variable=prefix=%s/usr/local", d);
    const char *pc[] = {"env", pcpath, "pkg-config", defprefix, "--cflags", "openclaw-plugin",
                        NULL};
    char *cflags = NULL;
    st = run_capture(pc, &cflags);
    ck_assert_msg(st == 0, "pkg-config --cflags openclaw-plugin failed: %s", cflags);
    cflags[strcspn(cflags, "\n")] = '\0';
    char inc[900];
    snprintf(inc, sizeof inc, "-I%s/usr/local/include", d);
    ck_assert_msg(strstr(cflags, inc), "pkg-config --cflags openclaw-plugin gives \"%s\", not %s",
                  cflags, inc);
    char *src = tu_path(tmp, "host.c"), *exe = tu_path(tmp, "host");
    ck_assert_int_eq(tu_write_file(src, tiny_host), 0);
    char script[3000];
    snprintf(script, sizeof script, "cc -std=c11 -Wall -Wextra -Werror %s %s '%s' -o '%s' -ldl",
#if defined(__SANITIZE_ADDRESS__)
             "-fsanitize=address,undefined",
#else
             "",
#endif
             cflags, src, exe);
    const char *cc[] = {"sh", "-c", script, NULL};
    st = run_capture(cc, &out);
    ck_assert_msg(st == 0, "the tiny host does not compile against the installed header: %s: %s",
                  script, out);
    free(out);
    snprintf(f, sizeof f, "%s/dirigent.so", pdir);
    const char *run[] = {exe, f, NULL};
    st = run_capture(run, &out);
    char *v = json_version("manifest.json");
    char want[200];
    snprintf(want, sizeof want, "dirigent %s abi 1.", v);
    ck_assert_msg(st == 0 && strstr(out, want), "the tiny host cannot load %s (%d): %s", f, st,
                  out);
    free(out);

    const char *un[] = {"make", "--no-print-directory", barg,        darg, san,
                        cov,    "PREFIX=/usr/local",    "uninstall", NULL};
    st = run_capture(un, &out);
    ck_assert_msg(st == 0, "make uninstall failed (%d): %s", st, out);
    free(out);
    char *left = NULL;
    size_t len = 0;
    list_files(d, &left, &len);
    ck_assert_msg(!left, "make uninstall left files behind:\n%s", left ? left : "");
    free(v), free(src), free(exe), free(cflags), free(d);
    tu_rmtree(tmp);
    free(tmp);
}
END_TEST

/* The whole of a text file (malloc'd; "" when it cannot be read). */
static char *read_text(const char *path)
{
    size_t n;
    char *text = access(path, R_OK) == 0 ? slurp(path, &n) : strdup("");
    return text;
}

/* Is word a whole word (space-separated) of list? */
static int has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
        if ((p == list || p[-1] == ' ' || p[-1] == '\n') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
            return 1;
    return 0;
}

/* Every make_<name>_suite of tests/check_*.c, space-separated (malloc'd). */
static char *suite_names(void)
{
    DIR *d = opendir("tests");
    ck_assert_ptr_nonnull(d);
    size_t cap = 4096, len = 0;
    char *out = calloc(1, cap);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "check_", 6) != 0 || n < 3 || strcmp(e->d_name + n - 2, ".c") != 0)
            continue;
        char path[600];
        snprintf(path, sizeof path, "tests/%s", e->d_name);
        char *text = read_text(path);
        for (char *p = strstr(text, "\nSuite *make_"); p; p = strstr(p + 1, "\nSuite *make_")) {
            char *name = p + strlen("\nSuite *make_");
            char *end = strstr(name, "_suite(void)");
            if (!end || memchr(name, '\n', (size_t)(end - name)))
                continue;
            ck_assert(len + (size_t)(end - name) + 2 < cap);
            len += (size_t)snprintf(out + len, cap - len, "%.*s ", (int)(end - name), name);
        }
        free(text);
    }
    closedir(d);
    return out;
}

START_TEST(valgrind_runs_every_suite_but_the_excused)
{
    /* The list was kept by hand and had silently left out suites added
     * after it (13 of 36 at one time). Now it is every suite minus
     * VALGRIND_SKIP, whose entries each name a suite and say why. */
    char *all = suite_names();
    const char *args[] = {"-s", "valgrind-list", NULL};
    char *list = make_run(0, args);
    char *mk = read_text("Makefile");
    char skipped[2048] = "";
    int n_skip = 0;
    for (char *p = strstr(mk, "\nVALGRIND_SKIP += "); p; p = strstr(p + 1, "\nVALGRIND_SKIP += ")) {
        char *line = line_with(p + 1, "VALGRIND_SKIP += ");
        char name[64] = "";
        ck_assert_int_eq(sscanf(line + strlen("VALGRIND_SKIP += "), "%63s", name), 1);
        const char *why = strchr(line, '#');
        ck_assert_msg(why && strlen(why) > 10,
                      "Makefile: VALGRIND_SKIP entry %s says no why (# reason): %s", name, line);
        ck_assert_msg(has_word(all, name),
                      "Makefile: VALGRIND_SKIP names %s, which is no suite "
                      "(suites: %s): remove the line",
                      name, all);
        ck_assert_msg(!has_word(list, name),
                      "valgrind runs %s although VALGRIND_SKIP leaves it out", name);
        snprintf(skipped + strlen(skipped), sizeof skipped - strlen(skipped), "%s ", name);
        n_skip++;
        free(line);
    }
    ck_assert_msg(n_skip > 0, "Makefile has no VALGRIND_SKIP lines: %.300s", list);
    char *save = NULL;
    for (char *w = strtok_r(all, " ", &save); w; w = strtok_r(NULL, " ", &save))
        ck_assert_msg(has_word(list, w) != has_word(skipped, w),
                      "suite %s is %s: make valgrind must run each suite not in VALGRIND_SKIP "
                      "(valgrind list: %s)",
                      w, has_word(list, w) ? "run and skipped" : "missing", list);
    free(all);
    free(list);
    free(mk);
}
END_TEST

START_TEST(fuzz_targets_are_the_manifest_hooks_and_tools)
{
    /* FUZZ_HOOKS and FUZZ_TOOLS were kept by hand; they are what
     * manifest.json declares, which check_plugin holds equal to what the
     * plugin registers: one target per hook and per tool, none more. */
    json_error_t jerr;
    json_t *m = json_load_file("manifest.json", 0, &jerr);
    ck_assert_msg(m, "manifest.json: %s", jerr.text);
    const char *args[] = {"-s", "fuzz-list", NULL};
    char *list = make_run(0, args);
    static const char *const kinds[][2] = {{"hooks", "hook_"}, {"tools", "tool_"}};
    for (size_t k = 0; k < 2; k++) {
        json_t *names = json_object_get(json_object_get(m, "contracts"), kinds[k][0]);
        ck_assert_msg(json_array_size(names) > 0, "manifest.json has no contracts.%s", kinds[k][0]);
        size_t i;
        json_t *v;
        json_array_foreach(names, i, v) {
            char want[128];
            snprintf(want, sizeof want, "%s%s", kinds[k][1], json_string_value(v));
            for (char *c = want; *c; c++)
                if (*c == '-')
                    *c = '_';
            ck_assert_msg(has_word(list, want), "no fuzz target %s for contracts.%s in: %s", want,
                          kinds[k][0], list);
        }
        size_t targets = 0;
        for (const char *p = strstr(list, kinds[k][1]); p; p = strstr(p + 1, kinds[k][1]))
            targets += p == list || p[-1] == ' ';
        ck_assert_msg(targets == json_array_size(names), "%zu %s targets for %zu %s: %s", targets,
                      kinds[k][1], json_array_size(names), kinds[k][0], list);
    }
    free(list);
    json_decref(m);
}
END_TEST

/* sh scripts/check-length.sh args... from the top folder: its exit status;
 * *out gets what it printed (malloc'd). */
static int length_check(const char *const *args, char **out)
{
    const char *argv[48] = {"sh", "scripts/check-length.sh"};
    int n = 2;
    for (const char *const *a = args; *a && n < 47; a++)
        argv[n++] = *a;
    argv[n] = NULL;
    return run_capture(argv, out);
}

/* The words of `make -s <target>` (one line), split in place: fills
 * words[] (at most max) and returns their count; *text is the line
 * (malloc'd), which the words point into. */
static int make_words(const char *target, char **text, const char **words, int max)
{
    const char *args[] = {"-s", target, NULL};
    *text = make_run(0, args);
    int n = 0;
    char *save = NULL;
    for (char *w = strtok_r(*text, " \n", &save); w && n < max; w = strtok_r(NULL, " \n", &save))
        words[n++] = w;
    return n;
}

START_TEST(the_size_rule_holds)
{
    /* No function in the folders of LENGTH_DIRS over 100 lines, no file
     * over 1,000, unless it says why it must be one piece;
     * scripts/length-allow.txt names those still being split. */
    char *text;
    const char *args[40];
    int n = make_words("length-dirs", &text, args, 39);
    ck_assert_msg(n > 0, "make length-dirs printed no folder");
    args[n] = NULL;
    char *out = NULL;
    int st = length_check(args, &out);
    ck_assert_msg(st == 0, "scripts/check-length.sh (status %d):\n%s", st, out);
    free(out);
    free(text);
}
END_TEST

/* Does dir (relative to the top folder) hold a .c or .h file itself? */
static int holds_c(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        found = n > 2 && e->d_name[n - 2] == '.' &&
                (e->d_name[n - 1] == 'c' || e->d_name[n - 1] == 'h');
    }
    closedir(d);
    return found;
}

/* Is dir in words, or below one of them? */
static int covered_by(const char *dir, const char *const *words, int n)
{
    for (int i = 0; i < n; i++) {
        size_t k = strlen(words[i]);
        if (strncmp(dir, words[i], k) == 0 && (dir[k] == '\0' || dir[k] == '/'))
            return 1;
    }
    return 0;
}

/* Every folder under dir (depth-first) that holds C files and is neither
 * covered by dirs[] nor exactly one of exempt[]: appended to bad. */
static void uncovered_c_folders(const char *dir, const char *const *dirs, int nd,
                                const char *const *exempt, int ne, char *bad, size_t cap)
{
    if (holds_c(dir) && !covered_by(dir, dirs, nd)) {
        int ok = 0;
        for (int i = 0; i < ne; i++)
            ok |= strcmp(dir, exempt[i]) == 0;
        if (!ok)
            snprintf(bad + strlen(bad), cap - strlen(bad), "%s ", dir);
    }
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, "build", 5) == 0 ||
            strcmp(e->d_name, "node_modules") == 0)
            continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s%s%s", strcmp(dir, ".") ? dir : "",
                 strcmp(dir, ".") ? "/" : "", e->d_name);
        struct stat sb;
        if (lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
            uncovered_c_folders(sub, dirs, nd, exempt, ne, bad, cap);
    }
    closedir(d);
}

START_TEST(the_size_rule_covers_every_c_folder)
{
    /* A folder the rule does not read grows unseen, so its list is the
     * Makefile's parts plus the tests' helpers; a folder with C files
     * outside it fails here, except the suites' own folder (tests/, its
     * files only), whose exemption the Makefile states with its reason. */
    char *dtext, *etext;
    const char *dirs[32], *exempt[8];
    int nd = make_words("length-dirs", &dtext, dirs, 32);
    int ne = make_words("length-exempt", &etext, exempt, 8);
    char bad[2048] = "";
    uncovered_c_folders(".", dirs, nd, exempt, ne, bad, sizeof bad);
    ck_assert_msg(!bad[0],
                  "folders with C files the size rule does not check: %s(add the part's line "
                  "to the Makefile, or the folder to LENGTH_DIRS)",
                  bad);
    char *mk = read_text("Makefile");
    char *at = strstr(mk, "\nLENGTH_EXEMPT := ");
    ck_assert_msg(at, "Makefile: no LENGTH_EXEMPT line");
    /* The exemption's reason: the comment right above LENGTH_DIRS. */
    char *why = strstr(mk, "# The folders of the size rule");
    ck_assert_msg(why && why < at && strstr(why, "left\n# out:"),
                  "Makefile: the size rule's exemption says no reason above LENGTH_DIRS");
    for (int i = 0; i < ne; i++)
        ck_assert_msg(strcmp(exempt[i], "tests") == 0,
                      "LENGTH_EXEMPT names %s; only the suites' folder (tests) is exempt",
                      exempt[i]);
    free(mk);
    free(dtext);
    free(etext);
}
END_TEST

/* A function named name of body_lines lines (signature and braces
 * included) after the comment cmt ("" for none), appended to f. */
static void put_function(FILE *f, const char *cmt, const char *name, int lines)
{
    fprintf(f, "%sint %s(void)\n{\n", cmt, name);
    for (int i = 0; i < lines - 3; i++)
        fprintf(f, "    x++;\n");
    fprintf(f, "}\n\n");
}

START_TEST(the_size_rule_names_each_offender)
{
    char *tmp = tu_mkdtemp();
    char *plugin = tu_path(tmp, "plugin");
    ck_assert_int_eq(mkdir(plugin, 0755), 0);
    char *src = tu_path(plugin, "long.c"), *big = tu_path(plugin, "big.c"),
         *whole = tu_path(plugin, "whole.c"), *allow = tu_path(tmp, "allow");
    FILE *f = fopen(src, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "/*\n * long.c -- test input\n */\nstatic int x;\n\n");
    put_function(f, "", "just_fits", 100);
    put_function(f, "/* Too long by one. */\n", "too_long", 101);
    put_function(f, "/* The states of one machine.\n * one piece: a switch over every state */\n",
                 "explained", 150);
    put_function(f, "", "allowed_one", 120);
    fclose(f);
    /* 1,001 lines, and 1,001 lines with a reason in the first comment. */
    static const char *const heads[] = {"/* big.c */\n",
                                        "/*\n * whole.c -- a table\n"
                                        " * one piece: the generated table\n */\n"};
    const char *files[] = {big, whole};
    for (int k = 0; k < 2; k++) {
        f = fopen(files[k], "w");
        ck_assert_ptr_nonnull(f);
        fputs(heads[k], f);
        for (int i = k ? 4 : 1; i < 1001; i++)
            fprintf(f, "int v%d;\n", i);
        fclose(f);
    }
    ck_assert_int_eq(tu_write_file(allow, "# comment\nfunction allowed_one: being split\n"
                                          "function gone_one: being split\n"),
                     0);
    const char *args[] = {"--allow", allow, plugin, NULL};
    char *out = NULL;
    int st = length_check(args, &out);
    ck_assert_msg(st == 1, "status %d:\n%s", st, out);
    ck_assert_msg(strstr(out, "long.c:108: function too_long has 101 lines (at most 100)"), "%s",
                  out);
    ck_assert_msg(strstr(out, "big.c: 1001 lines (at most 1,000)"), "%s", out);
    ck_assert_msg(strstr(out, "\"function gone_one\" is no offender any more"), "%s", out);
    ck_assert_msg(!strstr(out, "just_fits") && !strstr(out, "explained") &&
                      !strstr(out, "allowed_one") && !strstr(out, "whole.c"),
                  "%s", out);
    free(out);
    /* Without the offenders the check passes. */
    ck_assert_int_eq(unlink(big), 0);
    ck_assert_int_eq(tu_write_file(allow, "function allowed_one: being split\n"
                                          "function too_long: being split\n"),
                     0);
    st = length_check(args, &out);
    ck_assert_msg(st == 0, "status %d:\n%s", st, out);
    free(out);
    free(src), free(big), free(whole), free(allow), free(plugin);
    tu_rmtree(tmp);
    free(tmp);
}
END_TEST

/* scripts/check-platform-names.sh with the folders dirs (space-separated)
 * run in dir (NULL: here); its output in *out (malloc'd). */
static int platform_names_check(const char *dir, const char *dirs, char **out)
{
    char script[4096];
    ck_assert_ptr_nonnull(getcwd(script, sizeof script - 40));
    strcat(script, "/scripts/check-platform-names.sh");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && sh '%s' %s", dir ? dir : ".", script, dirs);
    const char *argv[] = {"sh", "-c", cmd, NULL};
    return run_capture(argv, out);
}

START_TEST(the_core_names_no_platform_client)
{
    /* The parts that neither are a platform's client nor include one
     * (plugin/, hooks/, store/ among them) reach a chat platform through
     * chat/chat.h only (the include paths keep the headers out; this keeps
     * the names out too, declarations of one's own included). */
    const char *args[] = {"-s", "platform-blind", NULL};
    char *dirs = make_run(0, args);
    dirs[strcspn(dirs, "\n")] = '\0';
    static const char *const core[] = {"plugin", "hooks", "store"};
    for (size_t i = 0; i < sizeof core / sizeof *core; i++)
        ck_assert_msg(has_word(dirs, core[i]), "make platform-blind leaves out %s: %s", core[i],
                      dirs);
    char *out = NULL;
    int st = platform_names_check(NULL, dirs, &out);
    ck_assert_msg(st == 0, "scripts/check-platform-names.sh %s (status %d):\n%s", dirs, st, out);
    free(out);
    free(dirs);
}
END_TEST

START_TEST(the_platform_rule_names_each_offender)
{
    char *tmp = tu_mkdtemp();
    char *plugin = tu_path(tmp, "plugin"), *store = tu_path(tmp, "store");
    ck_assert_int_eq(mkdir(plugin, 0755), 0);
    ck_assert_int_eq(mkdir(store, 0755), 0);
    char *a = tu_path(plugin, "a.c"), *b = tu_path(store, "b.h");
    FILE *f = fopen(a, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "#include \"chat.h\"\n#include \"slack.h\"\n/* cfg.discord_guild_id is "
               "config */\nint f(void) { return dg_discord_post_message(0); }\n");
    fclose(f);
    f = fopen(b, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "#define LIMIT DG_DISCORD_MAX_CONTENT\n");
    fclose(f);
    char *out = NULL;
    ck_assert_int_eq(platform_names_check(tmp, "plugin hooks store", &out), 1);
    ck_assert_msg(strstr(out, "plugin/a.c:2:#include \"slack.h\""), "%s", out);
    ck_assert_msg(strstr(out, "plugin/a.c:4:"), "%s", out);
    ck_assert_msg(strstr(out, "store/b.h:1:"), "%s", out);
    ck_assert_msg(!strstr(out, "a.c:1:") && !strstr(out, "a.c:3:"), "%s", out);
    free(out);
    tu_rmtree(tmp);
    free(a);
    free(b);
    free(plugin);
    free(store);
    free(tmp);
}
END_TEST

/* The line of `make -s parts-list` for part ("<name> <library|-> -I...",
 * malloc'd), or a failed test. */
static char *part_line(const char *list, const char *part)
{
    char key[64];
    snprintf(key, sizeof key, "%s ", part);
    for (const char *p = list; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, key, strlen(key)) == 0)
            return strndup(p, strcspn(p, "\n"));
    ck_abort_msg("make parts-list has no part %s:\n%s", part, list);
    return NULL;
}

/* Does a part's line give it the include path -I<folder>? */
static int sees(const char *line, const char *folder)
{
    char flag[80];
    snprintf(flag, sizeof flag, "-I%s", folder);
    return has_word(line, flag);
}

START_TEST(include_paths_follow_the_parts)
{
    /* The Makefile derives each part's include path from its line; what a
     * part may never see is fixed here, so a line that lets a part look
     * upwards fails this test before it can be used. */
    const char *args[] = {"-s", "parts-list", NULL};
    char *list = make_run(0, args);
    static const char *const below_host[] = {"common", "http",  "discord", "slack",
                                             "judge",  "store", "chat"};
    static const char *const top[] = {"hooks", "host", "servers", "tools"};
    static const char *const parts[] = {"common", "http",   "discord", "slack", "judge",   "store",
                                        "chat",   "plugin", "hooks",   "host",  "servers", "tools"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        char *line = part_line(list, parts[i]);
        ck_assert_msg(sees(line, parts[i]), "part %s does not see its own folder: %s", parts[i],
                      line);
        /* Nothing sees the parts at the top but themselves. */
        for (size_t t = 0; t < sizeof top / sizeof *top; t++)
            ck_assert_msg(strcmp(parts[i], top[t]) == 0 || !sees(line, top[t]),
                          "part %s sees %s, which sits above it: %s", parts[i], top[t], line);
        free(line);
    }
    for (size_t i = 0; i < sizeof below_host / sizeof *below_host; i++) {
        char *line = part_line(list, below_host[i]);
        ck_assert_msg(!sees(line, "include") && !sees(line, "plugin"),
                      "part %s sits below the host boundary but sees the ABI or the core: %s",
                      below_host[i], line);
        free(line);
    }
    /* The store knows no platform and no judge; the core and the hooks
     * reach a platform through chat/ only; the two clients see nothing of
     * each other; common/ sees nothing else. */
    static const char *const never[][2] = {
        {"store", "chat"},    {"store", "discord"},  {"store", "slack"},  {"store", "http"},
        {"store", "judge"},   {"plugin", "discord"}, {"plugin", "slack"}, {"plugin", "http"},
        {"hooks", "discord"}, {"hooks", "slack"},    {"hooks", "http"},   {"discord", "slack"},
        {"slack", "discord"}, {"common", "http"},    {"common", "store"}, {"http", "discord"}};
    for (size_t i = 0; i < sizeof never / sizeof *never; i++) {
        char *line = part_line(list, never[i][0]);
        ck_assert_msg(!sees(line, never[i][1]), "part %s sees %s: %s", never[i][0], never[i][1],
                      line);
        free(line);
    }
    free(list);
}
END_TEST

START_TEST(an_upward_include_fails_to_compile)
{
    /* The include paths at work: a file of a part that includes a header
     * of a part above it does not compile with the part's flags, while one
     * of a part below it does. */
    const char *args[] = {"-s", "parts-list", NULL};
    char *list = make_run(0, args);
    char *tmp = tu_mkdtemp();
    char *src = tu_path(tmp, "probe.c");
    static const char *const cases[][3] = {
        /* part, header above it (must fail), header below it (must compile) */
        {"store", "dirigent.h", "status.h"},     {"store", "openclaw/plugin.h", "status.h"},
        {"chat", "dirigent.h", "discord.h"},     {"discord", "chat.h", "http_client.h"},
        {"common", "http_client.h", "status.h"}, {"plugin", "discord.h", "chat.h"},
        {"plugin", "hooks_int.h", "dirigent.h"}, {"http", "discord.h", "status.h"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *line = part_line(list, cases[i][0]);
        for (int up = 1; up >= 0; up--) {
            char text[200];
            snprintf(text, sizeof text, "#include \"%s\"\nint probe;\n", cases[i][up ? 1 : 2]);
            ck_assert_int_eq(tu_write_file(src, text), 0);
            char cmd[2048];
            /* The flags after the name and the library; pkg-config's for
             * the headers that include jansson or libcurl. */
            const char *flags = strchr(strchr(line, ' ') + 1, ' ');
            snprintf(cmd, sizeof cmd,
                     "cc -std=c11 -D_GNU_SOURCE -fsyntax-only %s $(pkg-config --cflags jansson "
                     "libcurl 2>/dev/null) '%s'",
                     flags ? flags : "", src);
            const char *argv[] = {"sh", "-c", cmd, NULL};
            char *out = NULL;
            int st = run_capture(argv, &out);
            if (up)
                ck_assert_msg(st != 0 && strstr(out, cases[i][1]),
                              "part %s compiled an include of %s (above it), status %d: %s",
                              cases[i][0], cases[i][1], st, out);
            else
                ck_assert_msg(st == 0, "part %s could not include %s (below it), status %d: %s",
                              cases[i][0], cases[i][2], st, out);
            free(out);
        }
        free(line);
    }
    free(src);
    tu_rmtree(tmp);
    free(tmp);
    free(list);
}
END_TEST

START_TEST(dirigent_ctl_links_no_hook)
{
    /* dirigent-ctl takes the core as a library: the members it uses
     * (config, views, cost report), never the hooks nor the plugin's
     * entry point, which only the host calls. */
    char path[600];
    snprintf(path, sizeof path, "%s/dirigent-ctl", tu_build_dir());
    const char *argv[] = {"nm", path, NULL};
    char *out = NULL;
    int st = run_capture(argv, &out);
    ck_assert_msg(st == 0, "nm %s (status %d): %.300s", path, st, out);
    ck_assert_msg(strstr(out, " dg_store_open_readonly\n"), "nm %s shows no store symbol: %.300s",
                  path, out);
    static const char *const hooks[] = {" dg_hook_", " oc_plugin_entry\n"};
    for (size_t i = 0; i < sizeof hooks / sizeof *hooks; i++) {
        char *at = strstr(out, hooks[i]);
        ck_assert_msg(!at, "dirigent-ctl links hooks' code: %.*s", (int)strcspn(at ? at : "", "\n"),
                      at ? at : "");
    }
    free(out);
}
END_TEST

/* scripts/check-host-boundary.sh run in dir (NULL: here); its output in
 * *out (malloc'd). */
static int host_boundary_check(const char *dir, char **out)
{
    char script[4096];
    ck_assert_ptr_nonnull(getcwd(script, sizeof script - 40));
    strcat(script, "/scripts/check-host-boundary.sh");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && sh '%s'", dir ? dir : ".", script);
    const char *argv[] = {"sh", "-c", cmd, NULL};
    return run_capture(argv, out);
}

START_TEST(the_core_calls_the_host_through_its_table)
{
    /* plugin/ reaches the host through dg_plugin.host only; the entry point
     * (hooks/) alone holds the oc_host_api. */
    char *out = NULL;
    int st = host_boundary_check(NULL, &out);
    ck_assert_msg(st == 0, "scripts/check-host-boundary.sh (status %d):\n%s", st, out);
    free(out);
}
END_TEST

START_TEST(the_host_rule_names_each_offender)
{
    char *tmp = tu_mkdtemp();
    char *plugin = tu_path(tmp, "plugin"), *hooks = tu_path(tmp, "hooks");
    ck_assert_int_eq(mkdir(plugin, 0755), 0);
    ck_assert_int_eq(mkdir(hooks, 0755), 0);
    char *a = tu_path(plugin, "a.c"), *b = tu_path(plugin, "b.h"), *c = tu_path(hooks, "c.c");
    ck_assert_int_eq(tu_write_file(a, "int f(dg_plugin *p) { return p->host.run_abort(0, 0); }\n"
                                      "const char *base = cfg->slack_api_base;\n"
                                      "int g(dg_plugin *p) { return p->api->run_abort(0, 0); }\n"
                                      "int h(dg_judge *j) { return j->p->api != NULL; }\n"),
                     0);
    ck_assert_int_eq(tu_write_file(b, "#define HAS(p) OC_HOST_API_HAS(p.api, decide)\n"), 0);
    ck_assert_int_eq(tu_write_file(c, "int k(const oc_host_api *api) { return api->log != 0; }\n"),
                     0);
    char *out = NULL;
    ck_assert_int_eq(host_boundary_check(tmp, &out), 1);
    ck_assert_msg(strstr(out, "plugin/a.c:3:") && strstr(out, "plugin/a.c:4:"), "%s", out);
    ck_assert_msg(strstr(out, "plugin/b.h:1:"), "%s", out);
    ck_assert_msg(!strstr(out, "a.c:1:") && !strstr(out, "a.c:2:") && !strstr(out, "c.c"), "%s",
                  out);
    free(out);
    /* Without the offenders the check passes; hooks/ holds the api freely. */
    ck_assert_int_eq(tu_write_file(a, "int f(dg_plugin *p) { return p->host.run_abort(0, 0); }\n"),
                     0);
    ck_assert_int_eq(unlink(b), 0);
    ck_assert_int_eq(host_boundary_check(tmp, &out), 0);
    free(out);
    tu_rmtree(tmp);
    free(a), free(b), free(c), free(plugin), free(hooks), free(tmp);
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
    tcase_add_test(tc, one_version_everywhere);
    tcase_add_test(tc, install_then_uninstall_leaves_nothing);
    tcase_add_test(tc, valgrind_runs_every_suite_but_the_excused);
    tcase_add_test(tc, fuzz_targets_are_the_manifest_hooks_and_tools);
    tcase_add_test(tc, the_size_rule_holds);
    tcase_add_test(tc, the_size_rule_covers_every_c_folder);
    tcase_add_test(tc, the_size_rule_names_each_offender);
    tcase_add_test(tc, include_paths_follow_the_parts);
    tcase_add_test(tc, an_upward_include_fails_to_compile);
    tcase_add_test(tc, dirigent_ctl_links_no_hook);
    tcase_add_test(tc, the_core_names_no_platform_client);
    tcase_add_test(tc, the_platform_rule_names_each_offender);
    suite_add_tcase(s, tc);
    TCase *boundary = tcase_create("boundary");
    tcase_add_test(boundary, the_core_calls_the_host_through_its_table);
    tcase_add_test(boundary, the_host_rule_names_each_offender);
    suite_add_tcase(s, boundary);
    return s;
}
