/*
 * check_abi.c -- the plugin ABI seen from a host: the real build/dirigent.so
 * loads through the host core, its export list is exactly oc_plugin_entry,
 * its manifest tells the truth about what it registers; plugins of another
 * major, of a newer minor, without the entry symbol or with a broken table
 * are refused with the reason in words, and dirigent.so refuses a host of
 * another major.
 */
#include <check.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_test_util.h"
#include "ochost.h"
#include "testutil.h"

static char *dirigent_so(void)
{
    char rel[PATH_MAX], *abs = malloc(PATH_MAX);
    snprintf(rel, sizeof rel, "%s/dirigent.so", tu_build_dir());
    ck_assert_ptr_nonnull(abs);
    ck_assert_msg(realpath(rel, abs), "%s is not built", rel);
    return abs;
}

/* <root>/dirigent/ with symlinks to the built .so and the repo's manifest. */
static char *dirigent_folder(const char *root)
{
    char *dir = tu_path(root, "dirigent");
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    char *so = dirigent_so();
    char man[PATH_MAX];
    ck_assert_msg(realpath("manifest.json", man), "manifest.json not found in the current folder");
    char *l1 = tu_path(dir, "dirigent.so"), *l2 = tu_path(dir, "manifest.json");
    ck_assert_int_eq(symlink(so, l1), 0);
    ck_assert_int_eq(symlink(man, l2), 0);
    free(so), free(l1), free(l2);
    return dir;
}

static json_t *dirigent_config(const char *root)
{
    char *db = tu_path(root, "d.db");
    json_t *c =
        json_pack("{s:s,s:s,s:s,s:{s:s}}", "noReplyProvider", "noreply", "noReplyModel", "no-reply",
                  "dbPath", db, "discord", "moderatorUserId", "1000000000000000001");
    free(db);
    return c;
}

static void hermetic_env(void)
{
    unsetenv("DIRIGENT_MODERATOR_TOKEN");
    unsetenv("DIRIGENT_SESSION_POLICY");
    unsetenv("DIRIGENT_STATE_DIR");
}

START_TEST(dirigent_loads_through_the_host_core)
{
    hermetic_env();
    char *root = tu_mkdtemp();
    char *dir = dirigent_folder(root);
    json_t *manifest = json_load_file("manifest.json", 0, NULL);
    ck_assert_ptr_nonnull(manifest);
    for (int cycle = 0; cycle < 2; cycle++) {
        json_t *cfg = json_pack("{s:{s:{s:[s]},s:{s:{s:o}}}}", "plugins", "load", "paths", root,
                                "entries", "dirigent", "config", dirigent_config(root));
        host_test_log log;
        host_test_log_init(&log);
        och_host *h = och_host_new();
        och_host_set_log(h, host_test_log_sink, &log, OC_LOG_DEBUG);
        char err[512] = "";
        ck_assert_int_eq(och_host_configure(h, cfg, NULL, err, sizeof err), OC_OK);
        json_decref(cfg);
        ck_assert_int_eq(och_host_load(h), OC_OK);
        och_plugin_info info;
        ck_assert_int_eq(och_plugin_get(h, 0, &info), OC_OK);
        char *text = host_test_log_text(&log);
        ck_assert_msg(info.state == OCH_PLUGIN_LOADED, "dirigent not loaded: %s\nlog:\n%s",
                      info.reason, text);
        free(text);
        ck_assert_str_eq(info.id, "dirigent");
        ck_assert_str_eq(info.version, json_string_value(json_object_get(manifest, "version")));
        /* Its log lines arrive tagged with its id. */
        ck_assert(host_test_log_has(&log, " dirigent: ", NULL));
        char *db = tu_path(root, "d.db");
        ck_assert_int_eq(access(db, F_OK), 0);
        free(db);

        /* The manifest's contracts are exactly what init registered. */
        json_t *contracts = json_object_get(manifest, "contracts");
        json_t *tools = och_tools_list(h);
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) {
            const char *name = json_string_value(json_object_get(t, "name"));
            int listed = 0;
            size_t j;
            json_t *c;
            json_array_foreach(json_object_get(contracts, "tools"), j, c)
                listed |= strcmp(json_string_value(c), name) == 0;
            ck_assert_msg(listed, "tool %s is registered but not in contracts.tools", name);
        }
        ck_assert_uint_eq(json_array_size(tools),
                          json_array_size(json_object_get(contracts, "tools")));
        json_decref(tools);
        static const char *const hooks[] = {
            "message_received", "before_model_resolve", "before_prompt_build", "message_sending",
            "agent_end",        "gateway_start",        "gateway_stop"};
        for (size_t k = 0; k < sizeof hooks / sizeof *hooks; k++) {
            int listed = 0;
            size_t j;
            json_t *c;
            json_array_foreach(json_object_get(contracts, "hooks"), j, c)
                listed |= strcmp(json_string_value(c), hooks[k]) == 0;
            ck_assert_msg((och_hook_count(h, hooks[k]) > 0) == listed,
                          "hook %s: registered %zu time(s), in contracts.hooks: %s", hooks[k],
                          och_hook_count(h, hooks[k]), listed ? "yes" : "no");
        }
        ck_assert(!host_test_log_has(&log, "not listed in manifest.json", NULL));
        och_host_free(h);
        ck_assert(host_test_log_has(&log, " dirigent: ", "shutting down", NULL));
        host_test_log_free(&log);
    }
    json_decref(manifest);
    free(dir);
    tu_rmtree(root);
    free(root);
}
END_TEST

START_TEST(dirigent_exports_only_the_entry)
{
    char *so = dirigent_so();
    char *cmd = NULL;
    ck_assert_int_ge(asprintf(&cmd, "nm -D --defined-only '%s'", so), 0);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    int entry = 0, others = 0, gcov = 0;
    static char names[64][400];
    int n_names = 0;
    while (fgets(line, sizeof line, f)) {
        char addr[64], type[8], name[400];
        if (sscanf(line, "%63s %7s %399s", addr, type, name) != 3)
            continue;
        if (!strcmp(name, "_init") || !strcmp(name, "_fini") || !strcmp(name, "_edata") ||
            !strcmp(name, "_end") || !strcmp(name, "__bss_start"))
            continue;
        gcov |= !strncmp(name, "__gcov_", 7); /* only a --coverage build has them */
        if (n_names < 64)
            memcpy(names[n_names++], name, sizeof names[0]);
    }
    /* A coverage build (make coverage) links libgcov, which exports its
     * __gcov_* entry points and mangle_path: exactly those are allowed
     * there, nothing else. */
    for (int i = 0; i < n_names; i++) {
        const char *name = names[i];
        if (gcov && (!strncmp(name, "__gcov_", 7) || !strcmp(name, "mangle_path")))
            continue;
        if (strcmp(name, "oc_plugin_entry") == 0) {
            entry++;
        } else {
            others++;
            fprintf(stderr, "unexpected export: %s\n", name);
        }
    }
    ck_assert_int_eq(pclose(f), 0);
    ck_assert_int_eq(entry, 1);
    ck_assert_int_eq(others, 0);
    free(cmd);
    free(so);
}
END_TEST

/* ---- a host of another major, seen by dirigent.so ------------------------------------- */

static int calls;
static int stub_register_tool(oc_host *h, const oc_tool *t)
{
    (void)h, (void)t;
    calls++;
    return OC_OK;
}
static int stub_on(oc_host *h, const char *hook, oc_hook_fn fn, int prio)
{
    (void)h, (void)hook, (void)fn, (void)prio;
    calls++;
    return OC_OK;
}
static int stub_patch(oc_host *h, const char *k, const char *p, const char *m)
{
    (void)h, (void)k, (void)p, (void)m;
    calls++;
    return OC_OK;
}
static json_t *stub_list(oc_host *h, const char *c)
{
    (void)h, (void)c;
    calls++;
    return json_array();
}
static void stub_log(oc_host *h, int level, const char *msg)
{
    (void)h, (void)level, (void)msg;
}

START_TEST(dirigent_refuses_a_host_of_another_major)
{
    hermetic_env();
    char *root = tu_mkdtemp();
    char *so = dirigent_so();
    void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(dl, "%s", dlerror());
    void *sym = dlsym(dl, OC_PLUGIN_ENTRY_SYMBOL);
    ck_assert_ptr_nonnull(sym);
    oc_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    const oc_plugin *t = entry();
    ck_assert_int_eq(t->abi_major, OC_ABI_MAJOR);
    ck_assert_int_le(t->abi_minor, OC_ABI_MINOR);
    ck_assert_uint_ge(t->struct_size, sizeof(oc_plugin));
    ck_assert_str_eq(t->id, "dirigent");

    oc_host_api api = {
        .abi_major = OC_ABI_MAJOR + 1,
        .abi_minor = 0,
        .struct_size = sizeof(oc_host_api),
        .host = NULL,
        .register_tool = stub_register_tool,
        .on = stub_on,
        .session_patch = stub_patch,
        .sessions_list = stub_list,
        .log = stub_log,
    };
    json_t *cfg = dirigent_config(root);
    char err[512] = "";
    void *state = (void *)&api;
    calls = 0;
    int rc = t->init(&api, cfg, &state, err, sizeof err);
    ck_assert_int_lt(rc, 0);
    ck_assert_int_eq(calls, 0);
    ck_assert_msg(strcasestr(err, "abi") && strstr(err, "major") && strstr(err, "2"),
                  "the reason should name the ABI major 2: \"%s\"", err);
    /* Nothing was created: the config was never acted on. */
    char *db = tu_path(root, "d.db");
    ck_assert_int_ne(access(db, F_OK), 0);
    free(db);
    /* The same call with a host of its own major works: the refusal above
     * was about the version and nothing else. */
    api.abi_major = OC_ABI_MAJOR;
    /* No real host behind the stubs: the plugin still needs register_tool
     * and on to succeed, which the stubs do. */
    state = NULL;
    rc = t->init(&api, cfg, &state, err, sizeof err);
    ck_assert_msg(rc == OC_OK, "init with a major-%d host failed: %s", OC_ABI_MAJOR, err);
    t->shutdown(state);
    /* A 1.0 host (its struct ends before the 1.1 functions) keeps working:
     * the plugin asks for minor 0 and uses session_reset / run_abort only
     * when the host's struct has them. */
    ck_assert_uint_eq(t->abi_minor, 0);
    api.abi_minor = 0;
    api.struct_size = (uint32_t)offsetof(oc_host_api, session_reset);
    state = NULL;
    rc = t->init(&api, cfg, &state, err, sizeof err);
    ck_assert_msg(rc == OC_OK, "init with a 1.0 host failed: %s", err);
    t->shutdown(state);
    json_decref(cfg);
    dlclose(dl);
    free(so);
    tu_rmtree(root);
    free(root);
}
END_TEST

/* ---- refusals by the host -------------------------------------------------------------- */

typedef struct refusal {
    const char *folder, *fixture, *lib, *id;
    int major, minor;
    const char *extra;  /* manifest members, or NULL */
    const char *reason; /* expected in the recorded reason and the error log line */
} refusal;

static const refusal refusals[] = {
    {"1", "major2", "major2.so", "major2", OC_ABI_MAJOR, 0, NULL,
     "the library reports ABI major 2 but this host speaks ABI 1.2"},
    {"2", NULL, "absent.so", "major2m", OC_ABI_MAJOR + 1, 0, NULL,
     "its manifest.json declares ABI major 2 but this host speaks ABI 1.2"},
    {"3", "minor_high", "minor_high.so", "minor_high", OC_ABI_MAJOR, OC_ABI_MINOR, NULL,
     "the library reports ABI 1.3 but this host only offers ABI 1.2"},
    {"4", NULL, "absent.so", "minor_highm", OC_ABI_MAJOR, OC_ABI_MINOR + 1, NULL,
     "its manifest.json declares ABI 1.3 but this host only offers ABI 1.2"},
    {"5", "noentry", "noentry.so", "noentry", OC_ABI_MAJOR, OC_ABI_MINOR, NULL,
     "does not export the entry symbol oc_plugin_entry"},
    {"6", "nullinit", "nullinit.so", "nullinit", OC_ABI_MAJOR, OC_ABI_MINOR, NULL,
     "has no init function; init and shutdown are mandatory"},
    {"7", "nullshutdown", "nullshutdown.so", "nullshutdown", OC_ABI_MAJOR, OC_ABI_MINOR, NULL,
     "has no shutdown function"},
    {"8", "smallstruct", "smallstruct.so", "smallstruct", OC_ABI_MAJOR, OC_ABI_MINOR, NULL,
     "smaller than the"},
    {"9", "probe", "wrongname.so", "other", OC_ABI_MAJOR, OC_ABI_MINOR, NULL,
     "the library's id \"wrongname\" differs from the manifest's id \"other\""},
    {"10", "probe", "notelf.so", "notelf", OC_ABI_MAJOR, OC_ABI_MINOR, NULL, "dlopen("},
};
#define N_REFUSALS (sizeof refusals / sizeof *refusals)

START_TEST(host_refuses_incompatible_plugins)
{
    char *root = tu_mkdtemp();
    for (size_t i = 0; i < N_REFUSALS; i++) {
        const refusal *r = &refusals[i];
        json_t *extra = r->extra ? tu_json(r->extra) : NULL;
        char *d = host_test_plugin_dir(root, r->folder, r->fixture, r->lib, r->id, r->major,
                                       r->minor, extra);
        json_decref(extra);
        if (strcmp(r->lib, "notelf.so") == 0) {
            char *p = tu_path(d, r->lib);
            tu_write_file(p, "this is not a shared object");
            free(p);
        }
        free(d);
    }
    /* A good plugin beside them still loads. */
    free(host_test_plugin_dir(root, "99", "probe", "fine.so", "fine", OC_ABI_MAJOR, OC_ABI_MINOR,
                              NULL));
    json_t *cfg = json_pack("{s:{s:{s:[s]}}}", "plugins", "load", "paths", root);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = och_host_new();
    och_host_set_log(h, host_test_log_sink, &log, OC_LOG_DEBUG);
    char err[256];
    ck_assert_int_eq(och_host_configure(h, cfg, NULL, err, sizeof err), OC_OK);
    json_decref(cfg);
    ck_assert_int_eq(och_host_load(h), OC_OK);
    for (size_t i = 0; i < N_REFUSALS; i++) {
        const refusal *r = &refusals[i];
        ck_assert_msg(och_plugin_state_of(h, r->id) == OCH_PLUGIN_REFUSED, "%s: %s", r->id,
                      och_plugin_state_name((och_plugin_state)och_plugin_state_of(h, r->id)));
        och_plugin_info info = {0};
        for (size_t k = 0; k < och_plugin_count(h); k++) {
            och_plugin_get(h, k, &info);
            if (strcmp(info.id, r->id) == 0)
                break;
        }
        ck_assert_msg(info.reason && strstr(info.reason, r->reason),
                      "%s: reason \"%s\" lacks \"%s\"", r->id, info.reason, r->reason);
        char tag[64];
        snprintf(tag, sizeof tag, "3 %s: plugin %s in ", r->id, r->id);
        ck_assert_msg(host_test_log_has(&log, tag, "refused", r->reason, NULL),
                      "no error log line for %s", r->id);
    }
    ck_assert_int_eq(och_plugin_state_of(h, "fine"), OCH_PLUGIN_LOADED);
    /* No refused plugin ran init (the probe logs "init" first thing). */
    char *inits = host_test_log_seq(&log, NULL, "init ");
    ck_assert_str_eq(inits, "init fine host 1.2");
    free(inits);
    och_host_free(h);
    host_test_log_free(&log);
    tu_rmtree(root);
    free(root);
}
END_TEST

Suite *make_abi_suite(void)
{
    Suite *s = suite_create("abi");
    TCase *c = tcase_create("dirigent");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, dirigent_loads_through_the_host_core);
    tcase_add_test(c, dirigent_exports_only_the_entry);
    tcase_add_test(c, dirigent_refuses_a_host_of_another_major);
    suite_add_tcase(s, c);
    c = tcase_create("refusals");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, host_refuses_incompatible_plugins);
    suite_add_tcase(s, c);
    return s;
}
