/*
 * check_host.c -- the host core (host/ochost.h): host config validation,
 * discovery order, allow/deny/disabled, manifest refusals, hook priority
 * order and merge rules, tool registry and contract enforcement, the
 * session table with its persistence, logging, and calls from many threads.
 *
 * Plugins are copies of the fixture tests/plugins/probe.c (its id is its
 * file name) placed in temp folders next to manifest.json files the tests
 * write; what each copy registers comes from its config.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_test_util.h"
#include "ochost.h"
#include "testutil.h"

/* ---- helpers ----------------------------------------------------------------- */

/* A probe copy <parent>/<folder>/<id>.so with manifest id <id>. */
static void probe_at(const char *parent, const char *folder, const char *id)
{
    char lib[128];
    snprintf(lib, sizeof lib, "%s.so", id);
    free(host_test_plugin_dir(parent, folder, "probe", lib, id, OC_ABI_MAJOR, OC_ABI_MINOR, NULL));
}

/* Configure with `cfg` (stolen) and load; asserts both succeed. */
static och_host *load_host(host_test_log *log, json_t *cfg)
{
    och_host *h = och_host_new();
    ck_assert_ptr_nonnull(h);
    och_host_set_log(h, host_test_log_sink, log, OC_LOG_DEBUG);
    char err[512] = "";
    int rc = och_host_configure(h, cfg, NULL, err, sizeof err);
    json_decref(cfg);
    ck_assert_msg(rc == OC_OK, "configure: %s", err);
    ck_assert_int_eq(och_host_load(h), OC_OK);
    return h;
}

/* {"plugins":{"load":{"paths":[dir]},"entries":{id: {"config": cfg}}...}} for
 * one load path and up to 4 (id, config text) pairs, NULL-terminated. */
static json_t *host_cfg(const char *dir, ...)
{
    json_t *entries = json_object();
    va_list ap;
    va_start(ap, dir);
    for (const char *id; (id = va_arg(ap, const char *));) {
        const char *cfg = va_arg(ap, const char *);
        json_object_set_new(entries, id, json_pack("{s:o}", "config", tu_json(cfg)));
    }
    va_end(ap);
    return json_pack("{s:{s:{s:[s]},s:o}}", "plugins", "load", "paths", dir, "entries", entries);
}

/* Info of the first candidate with this id; fails the test if none. */
static och_plugin_info info_of(och_host *h, const char *id)
{
    och_plugin_info info;
    for (size_t i = 0; i < och_plugin_count(h); i++) {
        och_plugin_get(h, i, &info);
        if (info.id && strcmp(info.id, id) == 0)
            return info;
    }
    ck_abort_msg("no candidate with id %s", id);
    return info;
}

static const char *state_of(och_host *h, const char *id)
{
    int s = och_plugin_state_of(h, id);
    return s < 0 ? "absent" : och_plugin_state_name((och_plugin_state)s);
}

/* ---- host config ------------------------------------------------------------------ */

START_TEST(config_errors_name_the_key)
{
    char *dir = tu_mkdtemp();
    char *file = tu_path(dir, "afile");
    ck_assert_int_eq(tu_write_file(file, "x"), 0);
    struct {
        const char *json;
        const char *needle;
    } cases[] = {
        {"[]", "host config"},
        {"{\"plugins\": 3}", "plugins: expected an object"},
        {"{\"plugins\": {\"lod\": {}}}", "plugins.lod: unknown key"},
        {"{\"plugins\": {\"load\": []}}", "plugins.load: expected an object"},
        {"{\"plugins\": {\"load\": {\"path\": []}}}", "plugins.load.path: unknown key"},
        {"{\"plugins\": {\"load\": {\"paths\": \"x\"}}}", "plugins.load.paths: expected an array"},
        {"{\"plugins\": {\"load\": {\"paths\": [7]}}}", "plugins.load.paths[0]: expected"},
        {"{\"plugins\": {\"load\": {\"paths\": [\"/nonexistent/dg-none\"]}}}",
         "plugins.load.paths[0]: folder \"/nonexistent/dg-none\" cannot be used"},
        {"{\"plugins\": {\"allow\": {}}}", "plugins.allow: expected an array"},
        {"{\"plugins\": {\"deny\": [\"a\", \"\"]}}", "plugins.deny[1]: expected a plugin id"},
        {"{\"plugins\": {\"entries\": []}}", "plugins.entries: expected an object"},
        {"{\"plugins\": {\"entries\": {\"x\": true}}}", "plugins.entries.x: expected an object"},
        {"{\"plugins\": {\"entries\": {\"x\": {\"enabled\": \"yes\"}}}}",
         "plugins.entries.x.enabled: expected true or false, got a string"},
        {"{\"plugins\": {\"entries\": {\"x\": {\"config\": []}}}}",
         "plugins.entries.x.config: expected an object"},
        {"{\"plugins\": {\"entries\": {\"x\": {\"enable\": false}}}}",
         "plugins.entries.x.enable: unknown key"},
        {"{\"plugins\": {\"entries\": {\"x\": {\"hooks\": true}}}}",
         "plugins.entries.x.hooks: expected an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        och_host *h = och_host_new();
        json_t *cfg = tu_json(cases[i].json);
        char err[512] = "";
        int rc = och_host_configure(h, cfg, NULL, err, sizeof err);
        ck_assert_msg(rc == OC_ERR_INVALID, "case %zu: rc %d", i, rc);
        ck_assert_msg(strstr(err, cases[i].needle), "case %zu: \"%s\" lacks \"%s\"", i, err,
                      cases[i].needle);
        json_decref(cfg);
        och_host_free(h);
    }
    /* A file where a folder is needed. */
    och_host *h = och_host_new();
    json_t *cfg = json_pack("{s:{s:{s:[s]}}}", "plugins", "load", "paths", file);
    char err[512] = "";
    ck_assert_int_eq(och_host_configure(h, cfg, NULL, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "plugins.load.paths[0]") && strstr(err, "is not a folder"), "%s",
                  err);
    json_decref(cfg);
    och_host_free(h);

    /* Other top-level keys belong to the embedder; a relative path is taken
     * from base_dir. */
    h = och_host_new();
    cfg = tu_json("{\"discord\": {\"apiBase\": \"x\"}, \"agents\": [], "
                  "\"plugins\": {\"load\": {\"paths\": [\".\"]}, \"entries\": {\"x\": "
                  "{\"hooks\": {\"allowConversationAccess\": true}}}}}");
    ck_assert_int_eq(och_host_configure(h, cfg, dir, err, sizeof err), OC_OK);
    ck_assert_int_eq(och_host_configure(h, cfg, dir, err, sizeof err), OC_ERR_CONFLICT);
    json_decref(cfg);
    och_host_free(h);
    free(file);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

/* ---- discovery ----------------------------------------------------------------------- */

START_TEST(discovery_order_and_shutdown_order)
{
    char *root = tu_mkdtemp();
    char *lp1 = tu_path(root, "lp1"), *lp3 = tu_path(root, "lp3");
    mkdir(lp1, 0755);
    mkdir(lp3, 0755);
    /* Folder names sort differently from ids: order is by folder name. */
    probe_at(lp1, "2-second", "alpha");
    probe_at(lp1, "1-first", "zeta");
    probe_at(lp1, "10-between", "mid");
    char *noman = tu_path(lp1, "0-no-manifest");
    mkdir(noman, 0755);
    char *stray = tu_path(lp1, "00-file");
    tu_write_file(stray, "not a plugin");
    /* lp2 is a plugin folder itself. */
    probe_at(root, "lp2", "gamma");
    char *lp2 = tu_path(root, "lp2");
    probe_at(lp3, "a", "delta");

    json_t *cfg = json_pack("{s:{s:{s:[s,s,s]}}}", "plugins", "load", "paths", lp1, lp2, lp3);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = load_host(&log, cfg);

    const char *expect[] = {"zeta", "mid", "alpha", "gamma", "delta"};
    ck_assert_uint_eq(och_plugin_count(h), 5);
    for (size_t i = 0; i < 5; i++) {
        och_plugin_info info;
        ck_assert_int_eq(och_plugin_get(h, i, &info), OC_OK);
        ck_assert_str_eq(info.id, expect[i]);
        ck_assert_int_eq(info.state, OCH_PLUGIN_LOADED);
        ck_assert_ptr_null(info.reason);
        ck_assert_str_eq(info.version, "9.9.9");
        ck_assert_ptr_nonnull(strstr(info.dir, expect[i][0] == 'g' ? "lp2" : "lp"));
    }
    och_plugin_info info;
    ck_assert_int_eq(och_plugin_get(h, 5, &info), OC_ERR_NOT_FOUND);

    char *inits = host_test_log_seq(&log, NULL, "init ");
    ck_assert_str_eq(inits, "init zeta host 1.2|init mid host 1.2|init alpha host 1.2|"
                            "init gamma host 1.2|init delta host 1.2");
    free(inits);
    och_host_free(h);
    char *downs = host_test_log_seq(&log, NULL, "shutdown ");
    ck_assert_str_eq(downs, "shutdown delta|shutdown gamma|shutdown alpha|shutdown mid|"
                            "shutdown zeta");
    free(downs);
    /* Plugin lines are tagged with the plugin's id. */
    ck_assert(host_test_log_has(&log, "1 alpha: init alpha", NULL));

    host_test_log_free(&log);
    free(lp1), free(lp2), free(lp3), free(noman), free(stray);
    tu_rmtree(root);
    free(root);
}
END_TEST

START_TEST(duplicate_id_first_wins)
{
    char *root = tu_mkdtemp();
    char *a = tu_path(root, "a"), *b = tu_path(root, "b");
    mkdir(a, 0755);
    mkdir(b, 0755);
    probe_at(a, "one", "alpha");
    probe_at(b, "one", "alpha");
    json_t *cfg = json_pack("{s:{s:{s:[s,s]}}}", "plugins", "load", "paths", a, b);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = load_host(&log, cfg);
    ck_assert_uint_eq(och_plugin_count(h), 2);
    och_plugin_info i0, i1;
    och_plugin_get(h, 0, &i0);
    och_plugin_get(h, 1, &i1);
    ck_assert_int_eq(i0.state, OCH_PLUGIN_LOADED);
    ck_assert_int_eq(i1.state, OCH_PLUGIN_DUPLICATE);
    ck_assert_ptr_nonnull(strstr(i0.dir, "/a/one"));
    ck_assert_ptr_nonnull(strstr(i1.reason, "already found in"));
    ck_assert_ptr_nonnull(strstr(i1.reason, "/a/one"));
    ck_assert(host_test_log_has(&log, "2 alpha:", "/b/one duplicate", NULL));
    char *inits = host_test_log_seq(&log, NULL, "init ");
    ck_assert_str_eq(inits, "init alpha host 1.2");
    free(inits);
    och_host_free(h);
    host_test_log_free(&log);
    free(a), free(b);
    tu_rmtree(root);
    free(root);
}
END_TEST

START_TEST(allow_deny_and_disabled)
{
    char *root = tu_mkdtemp();
    probe_at(root, "a", "alpha");
    probe_at(root, "b", "beta");
    probe_at(root, "c", "gamma");
    probe_at(root, "d", "delta");
    json_t *cfg = json_pack("{s:{s:{s:[s]},s:[s,s,s,s],s:[s],s:{s:{s:b},s:{s:b,s:{s:i}},s:{s:b}}}}",
                            "plugins", "load", "paths", root, "allow", "alpha", "beta", "delta",
                            "nosuch", "deny", "beta", "entries", "delta", "enabled", 0, "alpha",
                            "enabled", 1, "config", "threadLogs", 3, "ghost", "enabled", 1);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = load_host(&log, cfg);
    ck_assert_str_eq(state_of(h, "alpha"), "loaded");
    ck_assert_str_eq(state_of(h, "beta"), "denied"); /* deny wins over allow */
    ck_assert_str_eq(state_of(h, "gamma"), "not-allowed");
    ck_assert_str_eq(state_of(h, "delta"), "disabled");
    ck_assert(host_test_log_has(&log, "beta:", "denied", "plugins.deny", NULL));
    ck_assert(host_test_log_has(&log, "gamma:", "not-allowed", "plugins.allow", NULL));
    ck_assert(host_test_log_has(&log, "delta:", "plugins.entries.delta.enabled is false", NULL));
    /* Names in the config that match nothing are reported. */
    ck_assert(host_test_log_has(&log, "2 host:", "plugins.entries.ghost", NULL));
    ck_assert(host_test_log_has(&log, "2 host:", "plugins.allow lists \"nosuch\"", NULL));
    /* Only alpha ran: its config reached init (its thread logged). */
    char *inits = host_test_log_seq(&log, NULL, "init ");
    ck_assert_str_eq(inits, "init alpha host 1.2");
    free(inits);
    och_host_free(h);
    char *th = host_test_log_seq(&log, "alpha", "thread line");
    ck_assert_str_eq(th, "thread line 0|thread line 1|thread line 2");
    free(th);
    host_test_log_free(&log);
    tu_rmtree(root);
    free(root);
}
END_TEST

START_TEST(manifest_refusals)
{
    char *root = tu_mkdtemp();
    json_t *x;
    /* Each broken folder is refused with its reason; the good one loads. */
    x = tu_json("{\"library\": \"missing.so\"}");
    free(host_test_plugin_dir(root, "1", NULL, "x.so", "nolib", 1, 0, x));
    json_decref(x);
    x = tu_json("{\"library\": \"../escape.so\"}");
    free(host_test_plugin_dir(root, "2", "probe", "x.so", "escape", 1, 0, x));
    json_decref(x);
    x = tu_json("{\"configSchema\": null}");
    free(host_test_plugin_dir(root, "3", "probe", "noschema.so", "noschema", 1, 0, x));
    json_decref(x);
    x = tu_json("{\"entry\": \"my_entry\"}");
    free(host_test_plugin_dir(root, "4", "probe", "badentry.so", "badentry", 1, 0, x));
    json_decref(x);
    x = tu_json("{\"id\": \"has space\"}");
    free(host_test_plugin_dir(root, "5", "probe", "p.so", "x", 1, 0, x));
    json_decref(x);
    x = tu_json("{\"abi\": {\"major\": \"1\"}}");
    free(host_test_plugin_dir(root, "6", "probe", "abistr.so", "abistr", 1, 0, x));
    json_decref(x);
    char *d7 = tu_path(root, "7");
    mkdir(d7, 0755);
    char *m7 = tu_path(d7, "manifest.json");
    tu_write_file(m7, "{\"id\": \"broken\",\n \"abi\": }");
    probe_at(root, "8", "good");

    json_t *cfg = json_pack("{s:{s:{s:[s]}}}", "plugins", "load", "paths", root);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = load_host(&log, cfg);
    ck_assert_uint_eq(och_plugin_count(h), 8);
    const char *needles[] = {
        "missing.so named by manifest.json cannot be found",
        "\"library\" must be the file name of the .so next to the manifest",
        "\"configSchema\" is required",
        "\"entry\" must be \"oc_plugin_entry\"",
        "\"id\" must be a non-empty string",
        "\"abi\" must be {\"major\": <int>, \"minor\": <int>}",
        "line 2 column",
    };
    for (size_t i = 0; i < 7; i++) {
        och_plugin_info info;
        och_plugin_get(h, i, &info);
        ck_assert_int_eq(info.state, OCH_PLUGIN_REFUSED);
        ck_assert_msg(strstr(info.reason, needles[i]), "%zu: %s", i, info.reason);
        ck_assert(host_test_log_has(&log, "3 ", needles[i], NULL));
    }
    ck_assert_str_eq(state_of(h, "good"), "loaded");
    och_host_free(h);
    host_test_log_free(&log);
    free(d7), free(m7);
    tu_rmtree(root);
    free(root);
}
END_TEST

/* A manifest is small: a file of megabytes is refused before it is read
 * into memory whole, and a manifest of the usual size still loads. */
START_TEST(huge_manifest_is_refused)
{
    char *root = tu_mkdtemp();
    size_t big = 2u * 1024u * 1024u;
    char *pad = malloc(big + 1);
    ck_assert_ptr_nonnull(pad);
    memset(pad, 'x', big);
    pad[big] = '\0';
    json_t *x = json_pack("{s:s}", "description", pad);
    free(pad);
    free(host_test_plugin_dir(root, "big", "probe", "big.so", "big", 1, 0, x));
    json_decref(x);
    x = json_pack("{s:s}", "description", "a plugin with an ordinary manifest");
    free(host_test_plugin_dir(root, "small", "probe", "small.so", "small", 1, 0, x));
    json_decref(x);
    json_t *cfg = json_pack("{s:{s:{s:[s]}}}", "plugins", "load", "paths", root);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = load_host(&log, cfg);
    ck_assert_str_eq(state_of(h, "small"), "loaded");
    och_plugin_info info;
    ck_assert_int_eq(och_plugin_get(h, 0, &info), OC_OK);
    ck_assert_int_eq(info.state, OCH_PLUGIN_REFUSED);
    ck_assert_msg(info.reason && strstr(info.reason, "more than the 1048576 bytes a manifest may "
                                                     "have"),
                  "%s", info.reason ? info.reason : "(loaded)");
    ck_assert(
        host_test_log_has(&log, "3 ", "big/manifest.json", "bytes a manifest may have", NULL));
    och_host_free(h);
    host_test_log_free(&log);
    tu_rmtree(root);
    free(root);
}
END_TEST

START_TEST(failed_init_leaves_nothing_registered)
{
    char *root = tu_mkdtemp();
    probe_at(root, "a", "alpha");
    probe_at(root, "b", "beta");
    json_t *cfg = host_cfg(
        root, "alpha",
        "{\"failInit\": \"no database\", \"tools\": [{\"name\": \"t_alpha\", \"mode\": \"echo\"}],"
        " \"hooks\": [{\"hook\": \"agent_end\", \"label\": \"a\"}]}",
        "beta", "{\"tools\": [{\"name\": \"t_alpha\", \"mode\": \"echo\"}]}", NULL);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = load_host(&log, cfg);
    ck_assert_str_eq(state_of(h, "alpha"), "failed");
    ck_assert_str_eq(state_of(h, "beta"), "loaded");
    och_plugin_info info = info_of(h, "alpha");
    ck_assert_ptr_nonnull(info.reason);
    ck_assert_msg(strstr(info.reason, "init failed with OC_ERR_INVALID: probe: no database"), "%s",
                  info.reason);
    ck_assert(host_test_log_has(&log, "3 alpha:", "probe: no database", NULL));
    ck_assert_uint_eq(och_hook_count(h, "agent_end"), 0);
    /* beta could take the name alpha's failed init had registered. */
    json_t *r = NULL;
    ck_assert_int_eq(och_tool_call(h, "t_alpha", NULL, NULL, &r), OC_OK);
    json_decref(r);
    json_t *list = och_tools_list(h);
    ck_assert_uint_eq(json_array_size(list), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "plugin")), "beta");
    json_decref(list);
    och_host_free(h);
    host_test_log_free(&log);
    tu_rmtree(root);
    free(root);
}
END_TEST

START_TEST(no_config_loads_nothing)
{
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = och_host_new();
    och_host_set_log(h, host_test_log_sink, &log, OC_LOG_DEBUG);
    ck_assert_int_eq(och_host_load(h), OC_OK);
    ck_assert_int_eq(och_host_load(h), OC_ERR_CONFLICT);
    ck_assert_uint_eq(och_plugin_count(h), 0);
    json_t *r = (json_t *)1;
    ck_assert_int_eq(och_hook_dispatch(h, "before_model_resolve", NULL, NULL, &r), OC_OK);
    ck_assert_ptr_null(r);
    och_host_free(h);
    host_test_log_free(&log);
}
END_TEST

/* ---- hooks ----------------------------------------------------------------------------- */

/* Two plugins whose before_model_resolve handlers interleave by priority. */
static const char *ALPHA_BMR =
    "{\"hooks\": ["
    " {\"hook\": \"before_model_resolve\", \"priority\": 5, \"label\": \"a5\","
    "  \"result\": {\"providerOverride\": \"p-a5\"}},"
    " {\"hook\": \"before_model_resolve\", \"priority\": 10, \"label\": \"a10\","
    "  \"result\": {\"modelOverride\": \"m-a10\", \"providerOverride\": 42}},"
    " {\"hook\": \"before_model_resolve\", \"priority\": 5, \"label\": \"a5b\", \"status\": -5,"
    "  \"result\": {\"providerOverride\": \"p-failed\", \"modelOverride\": \"m-failed\"}},"
    " {\"hook\": \"before_prompt_build\", \"priority\": 1, \"label\": \"pa1\","
    "  \"result\": {\"appendSystemContext\": \"A1\"}},"
    " {\"hook\": \"before_prompt_build\", \"priority\": 9, \"label\": \"pa9\","
    "  \"result\": {\"appendSystemContext\": \"A9\", \"prependContext\": \"P9\"}},"
    " {\"hook\": \"agent_end\", \"priority\": 0, \"label\": \"e0\", \"result\": {\"x\": 1}},"
    " {\"hook\": \"before_tool_call\", \"label\": \"unknown\"}"
    "]}";
static const char *BETA_BMR =
    "{\"hooks\": ["
    " {\"hook\": \"before_model_resolve\", \"priority\": 10, \"label\": \"b10\","
    "  \"result\": {\"providerOverride\": \"p-b10\", \"modelOverride\": \"m-b10\"}},"
    " {\"hook\": \"before_model_resolve\", \"priority\": 0, \"label\": \"b0\","
    "  \"result\": {\"providerOverride\": \"p-b0\", \"modelOverride\": \"m-b0\"}},"
    " {\"hook\": \"before_model_resolve\", \"priority\": 5, \"label\": \"b5\", \"result\": [1]},"
    " {\"hook\": \"before_prompt_build\", \"priority\": 5, \"label\": \"pb5\","
    "  \"result\": {\"prependContext\": \"P5\"}},"
    " {\"hook\": \"before_prompt_build\", \"priority\": 9, \"label\": \"pb9\", \"status\": -1},"
    " {\"hook\": \"agent_end\", \"priority\": 0, \"label\": \"e0b\"}"
    "]}";

START_TEST(hook_priority_order_and_model_merge)
{
    char *root = tu_mkdtemp();
    probe_at(root, "a", "alpha");
    probe_at(root, "b", "beta");
    json_t *cfg = host_cfg(root, "alpha", ALPHA_BMR, "beta", BETA_BMR, NULL);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = load_host(&log, cfg);
    ck_assert_str_eq(state_of(h, "alpha"), "loaded");
    /* The unknown hook was refused at `on`, naming it; init went on. */
    ck_assert(
        host_test_log_has(&log, "alpha:", "on(\"before_tool_call\") refused: unknown hook", NULL));
    ck_assert(host_test_log_has(&log, "alpha: register before_tool_call -> OC_ERR_INVALID", NULL));
    ck_assert_uint_eq(och_hook_count(h, "before_model_resolve"), 6);
    ck_assert_uint_eq(och_hook_count(h, "before_tool_call"), 0);

    json_t *ev = tu_json("{\"prompt\": \"hi\"}");
    json_t *r = NULL;
    ck_assert_int_eq(och_hook_dispatch(h, "before_model_resolve", ev, NULL, &r), OC_OK);
    /* Higher priority first; ties in registration order (alpha registered
     * before beta, a5 before a5b). */
    char *seq = host_test_log_seq(&log, NULL, "call ");
    ck_assert_str_eq(seq, "call a10|call b10|call a5|call a5b|call b5|call b0");
    free(seq);
    /* First defined value per field: model from a10, provider from b10 (a10's
     * provider is not a string; a5b failed; b5 is not an object). */
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(json_string_value(json_object_get(r, "providerOverride")), "p-b10");
    ck_assert_str_eq(json_string_value(json_object_get(r, "modelOverride")), "m-a10");
    ck_assert_uint_eq(json_object_size(r), 2);
    json_decref(r);
    ck_assert(host_test_log_has(&log, "2 alpha:",
                                "before_model_resolve (priority 5) returned "
                                "OC_ERR_IO; treated as no result",
                                NULL));
    ck_assert(host_test_log_has(&log, "2 alpha:", "providerOverride is not a string", NULL));
    ck_assert(host_test_log_has(&log, "2 beta:", "not a JSON object", NULL));

    /* before_prompt_build: joined in priority order with a blank line. */
    r = NULL;
    ck_assert_int_eq(och_hook_dispatch(h, "before_prompt_build", ev, NULL, &r), OC_OK);
    ck_assert_str_eq(json_string_value(json_object_get(r, "appendSystemContext")), "A9\n\nA1");
    ck_assert_str_eq(json_string_value(json_object_get(r, "prependContext")), "P9\n\nP5");
    json_decref(r);

    /* Observe-only hooks: every handler runs, no result. */
    r = (json_t *)1;
    ck_assert_int_eq(och_hook_dispatch(h, "agent_end", ev, NULL, &r), OC_OK);
    ck_assert_ptr_null(r);
    ck_assert(host_test_log_has(&log, "alpha: call e0", NULL));
    ck_assert(host_test_log_has(&log, "beta: call e0b", NULL));
    /* Hooks nobody registered, and unknown hook names. */
    r = (json_t *)1;
    ck_assert_int_eq(och_hook_dispatch(h, "message_sending", ev, NULL, &r), OC_OK);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(och_hook_dispatch(h, "before_tool_call", ev, NULL, &r), OC_ERR_INVALID);
    ck_assert_int_eq(och_hook_dispatch(h, NULL, ev, NULL, NULL), OC_ERR_INVALID);
    json_decref(ev);
    och_host_free(h);
    host_test_log_free(&log);
    tu_rmtree(root);
    free(root);
}
END_TEST

START_TEST(message_sending_rewrite_and_cancel)
{
    char *root = tu_mkdtemp();
    probe_at(root, "a", "alpha");
    probe_at(root, "b", "beta");
    json_t *cfg =
        host_cfg(root, "alpha",
                 "{\"hooks\": ["
                 " {\"hook\": \"message_sending\", \"priority\": 10, \"label\": \"+1\", \"mode\": "
                 "\"append\"},"
                 " {\"hook\": \"message_sending\", \"priority\": 1, \"label\": \"+3\", \"mode\": "
                 "\"append\"}]}",
                 "beta",
                 "{\"hooks\": ["
                 " {\"hook\": \"message_sending\", \"priority\": 5, \"label\": \"+2\", \"mode\": "
                 "\"append\"},"
                 " {\"hook\": \"message_sending\", \"priority\": 3, \"label\": \"cancel\","
                 "  \"result\": {\"cancel\": true, \"cancelReason\": \"not your turn\"}}]}",
                 NULL);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = load_host(&log, cfg);
    json_t *ev = tu_json("{\"to\": \"channel:1\", \"content\": \"x\"}");
    json_t *r = NULL;
    ck_assert_int_eq(och_hook_dispatch(h, "message_sending", ev, NULL, &r), OC_OK);
    /* Rewrites are seen by later handlers; the cancel is terminal. */
    char *seq = host_test_log_seq(&log, NULL, "call ");
    ck_assert_str_eq(seq, "call +1 content=x|call +2 content=x+1|call cancel content=x+1+2");
    free(seq);
    ck_assert_ptr_nonnull(r);
    ck_assert(json_is_true(json_object_get(r, "cancel")));
    ck_assert_str_eq(json_string_value(json_object_get(r, "cancelReason")), "not your turn");
    ck_assert_ptr_null(json_object_get(r, "content"));
    json_decref(r);
    /* The caller's event is untouched. */
    ck_assert_str_eq(json_string_value(json_object_get(ev, "content")), "x");
    json_decref(ev);
    och_host_free(h);
    host_test_log_free(&log);

    /* Without the cancel, the last rewrite is the result. */
    json_t *cfg2 = host_cfg(
        root, "alpha",
        "{\"hooks\": ["
        " {\"hook\": \"message_sending\", \"priority\": 10, \"label\": \"+1\", \"mode\": "
        "\"append\"},"
        " {\"hook\": \"message_sending\", \"priority\": 1, \"label\": \"+3\", \"mode\": "
        "\"append\"}]}",
        "beta",
        "{\"hooks\": [{\"hook\": \"message_sending\", \"priority\": 5, \"label\": \"nothing\"}]}",
        NULL);
    host_test_log_init(&log);
    h = load_host(&log, cfg2);
    ev = tu_json("{\"to\": \"channel:1\", \"content\": \"y\"}");
    ck_assert_int_eq(och_hook_dispatch(h, "message_sending", ev, NULL, &r), OC_OK);
    ck_assert_str_eq(json_string_value(json_object_get(r, "content")), "y+1+3");
    ck_assert_ptr_null(json_object_get(r, "cancel"));
    json_decref(r);
    seq = host_test_log_seq(&log, NULL, "call ");
    ck_assert_str_eq(seq, "call +1 content=y|call nothing content=y+1|call +3 content=y+1");
    free(seq);
    json_decref(ev);
    och_host_free(h);
    host_test_log_free(&log);
    tu_rmtree(root);
    free(root);
}
END_TEST

/* The claim hooks: the first handled:true wins and stops the walk; a
 * payload cancel wins, payload rewrites chain; a host set up without them
 * refuses the names (the probe's init then fails and says so). */
START_TEST(claim_hooks_merge_and_can_be_switched_off)
{
    char *root = tu_mkdtemp();
    probe_at(root, "a", "alpha");
    probe_at(root, "b", "beta");
    const char *alpha =
        "{\"hooks\": ["
        " {\"hook\": \"before_agent_reply\", \"priority\": 10, \"label\": \"c10\","
        "  \"result\": {\"handled\": false}},"
        " {\"hook\": \"before_agent_reply\", \"priority\": 1, \"label\": \"c1\","
        "  \"result\": {\"handled\": true, \"reason\": \"late\"}},"
        " {\"hook\": \"reply_payload_sending\", \"priority\": 10, \"label\": \"p10\","
        "  \"result\": {\"payload\": {\"text\": \"rewritten\"}}}]}";
    const char *beta = "{\"hooks\": ["
                       " {\"hook\": \"before_agent_reply\", \"priority\": 5, \"label\": \"c5\","
                       "  \"result\": {\"handled\": true, \"reason\": \"not your turn\"}},"
                       " {\"hook\": \"reply_payload_sending\", \"priority\": 5, \"label\": \"p5\","
                       "  \"result\": {\"cancel\": true, \"reason\": \"claimed run\"}}]}";
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = load_host(&log, host_cfg(root, "alpha", alpha, "beta", beta, NULL));
    json_t *ev = tu_json("{\"payload\": {\"text\": \"x\"}, \"kind\": \"final\"}");
    json_t *r = NULL;
    ck_assert_int_eq(och_hook_dispatch(h, "before_agent_reply", ev, NULL, &r), OC_OK);
    ck_assert(json_is_true(json_object_get(r, "handled")));
    ck_assert_str_eq(json_string_value(json_object_get(r, "reason")), "not your turn");
    json_decref(r);
    char *seq = host_test_log_seq(&log, NULL, "call c");
    ck_assert_str_eq(seq, "call c10|call c5"); /* c1 never runs */
    free(seq);
    r = NULL;
    ck_assert_int_eq(och_hook_dispatch(h, "reply_payload_sending", ev, NULL, &r), OC_OK);
    ck_assert(json_is_true(json_object_get(r, "cancel")));
    ck_assert_str_eq(json_string_value(json_object_get(r, "reason")), "claimed run");
    json_decref(r);
    och_host_free(h);
    host_test_log_free(&log);

    /* Without the cancel, the rewrite is the result. */
    host_test_log_init(&log);
    h = load_host(&log, host_cfg(root, "alpha", alpha, NULL));
    r = NULL;
    ck_assert_int_eq(och_hook_dispatch(h, "reply_payload_sending", ev, NULL, &r), OC_OK);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "payload"), "text")),
                     "rewritten");
    json_decref(r);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev, "payload"), "text")),
                     "x");
    och_host_free(h);
    host_test_log_free(&log);

    /* A host without the claim hooks refuses their names. */
    host_test_log_init(&log);
    h = och_host_new();
    och_host_set_log(h, host_test_log_sink, &log, OC_LOG_DEBUG);
    och_host_set_claim_hooks(h, 0);
    char err[512] = "";
    json_t *cfg = host_cfg(root, "beta", beta, NULL);
    ck_assert_int_eq(och_host_configure(h, cfg, NULL, err, sizeof err), OC_OK);
    json_decref(cfg);
    ck_assert_int_eq(och_host_load(h), OC_OK);
    ck_assert(
        host_test_log_has(&log, "refused: this host is set up without the claim hooks", NULL));
    ck_assert_uint_eq(och_hook_count(h, "before_agent_reply"), 0);
    och_host_free(h);
    host_test_log_free(&log);
    json_decref(ev);
    tu_rmtree(root);
    free(root);
}
END_TEST

/* ---- tools ------------------------------------------------------------------------------ */

static const char *TOOLS_ALPHA =
    "{\"tools\": ["
    " {\"name\": \"echo\", \"mode\": \"echo\"},"
    " {\"name\": \"ok_null\", \"status\": 0},"
    " {\"name\": \"denied_null\", \"status\": -3},"
    " {\"name\": \"weird_status\", \"status\": 7, \"result\": {\"content\": []}},"
    " {\"name\": \"ok_bad_shape\", \"status\": 0, \"result\": {\"foo\": 1}},"
    " {\"name\": \"err_ok_shape\", \"status\": -4,"
    "  \"result\": {\"error\": {\"code\": \"OC_ERR_CONFLICT\", \"message\": \"already closed\"}}},"
    " {\"name\": \"late\", \"mode\": \"late_register\"}"
    "]}";

static void expect_error(json_t *r, const char *code, const char *msg_part)
{
    json_t *e = json_object_get(r, "error");
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(json_string_value(json_object_get(e, "code")), code);
    const char *m = json_string_value(json_object_get(e, "message"));
    ck_assert_ptr_nonnull(m);
    ck_assert_msg(strstr(m, msg_part), "message \"%s\" lacks \"%s\"", m, msg_part);
}

START_TEST(tool_registry_and_contract_breakers)
{
    char *root = tu_mkdtemp();
    probe_at(root, "a", "alpha");
    probe_at(root, "b", "beta");
    json_t *cfg = host_cfg(root, "alpha", TOOLS_ALPHA, "beta",
                           "{\"tools\": [{\"name\": \"echo\", \"mode\": \"echo\"},"
                           " {\"name\": \"beta_tool\", \"mode\": \"echo\"}]}",
                           NULL);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = load_host(&log, cfg);
    /* A duplicate name is refused at registration, naming the owner. */
    ck_assert(host_test_log_has(&log, "beta: register echo -> OC_ERR_CONFLICT", NULL));
    ck_assert(
        host_test_log_has(&log, "3 beta:", "register_tool(echo) refused: plugin alpha", NULL));
    json_t *list = och_tools_list(h);
    ck_assert_uint_eq(json_array_size(list), 8);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "name")), "echo");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "plugin")),
                     "alpha");
    ck_assert(json_is_object(json_object_get(json_array_get(list, 0), "parameters")));
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 7), "name")),
                     "beta_tool");
    json_decref(list);

    /* The happy path: params and the trusted ctx reach the tool. */
    json_t *params = tu_json("{\"n\": 1}");
    json_t *ctx = tu_json("{\"agentId\": \"planner\", \"sessionKey\": \"agent:planner:x\"}");
    json_t *r = NULL;
    ck_assert_int_eq(och_tool_call(h, "echo", params, ctx, &r), OC_OK);
    ck_assert(json_equal(json_object_get(json_object_get(r, "details"), "params"), params));
    ck_assert(json_equal(json_object_get(json_object_get(r, "details"), "ctx"), ctx));
    json_decref(r);

    /* Contract breakers become well-formed errors; the host goes on. */
    ck_assert_int_eq(och_tool_call(h, "ok_null", params, ctx, &r), OC_ERR_INTERNAL);
    expect_error(r, "OC_ERR_INTERNAL", "ok_null gave no usable result");
    json_decref(r);
    ck_assert(
        host_test_log_has(&log, "3 alpha:", "tool ok_null returned OC_OK without a result", NULL));
    ck_assert_int_eq(och_tool_call(h, "denied_null", params, ctx, &r), OC_ERR_DENIED);
    expect_error(r, "OC_ERR_DENIED", "denied_null failed with OC_ERR_DENIED");
    json_decref(r);
    ck_assert(host_test_log_has(&log, "3 alpha:", "without an error result", NULL));
    ck_assert_int_eq(och_tool_call(h, "weird_status", params, ctx, &r), OC_ERR_INTERNAL);
    expect_error(r, "OC_ERR_INTERNAL", "invalid status");
    json_decref(r);
    ck_assert(host_test_log_has(&log, "3 alpha:", "returned 7, which is not an oc_status", NULL));
    ck_assert_int_eq(och_tool_call(h, "ok_bad_shape", params, ctx, &r), OC_ERR_INTERNAL);
    expect_error(r, "OC_ERR_INTERNAL", "no usable result");
    json_decref(r);
    /* A well-formed error passes through untouched. */
    ck_assert_int_eq(och_tool_call(h, "err_ok_shape", params, ctx, &r), OC_ERR_CONFLICT);
    expect_error(r, "OC_ERR_CONFLICT", "already closed");
    json_decref(r);
    /* Unknown tool. */
    ck_assert_int_eq(och_tool_call(h, "nope", params, ctx, &r), OC_ERR_NOT_FOUND);
    expect_error(r, "OC_ERR_NOT_FOUND", "no tool named \"nope\"");
    json_decref(r);
    /* NULL params/ctx and no result pointer are fine. */
    ck_assert_int_eq(och_tool_call(h, "beta_tool", NULL, NULL, NULL), OC_OK);

    /* register_tool and on outside init are refused. */
    ck_assert_int_eq(och_tool_call(h, "late", NULL, NULL, &r), OC_OK);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "details"), "register")),
                     OC_ERR_DENIED);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "details"), "on")),
                     OC_ERR_DENIED);
    json_decref(r);
    ck_assert(host_test_log_has(&log, "alpha:",
                                "register_tool(late_tool) refused: tools may only "
                                "be registered inside init",
                                NULL));
    ck_assert_uint_eq(och_hook_count(h, "agent_end"), 0);

    /* Still alive and serving. */
    ck_assert_int_eq(och_tool_call(h, "echo", params, ctx, &r), OC_OK);
    json_decref(r);
    json_decref(params);
    json_decref(ctx);
    json_t *e = och_error_result(OC_ERR_IO, "disk %d", 3);
    expect_error(e, "OC_ERR_IO", "disk 3");
    json_decref(e);
    och_host_free(h);
    host_test_log_free(&log);
    tu_rmtree(root);
    free(root);
}
END_TEST

/* A tool whose description is not UTF-8 is refused at registration; it
 * used to be accepted and then made och_tools_list answer NULL ("out of
 * memory") for every plugin's tools. */
START_TEST(tool_with_non_utf8_description_is_refused)
{
    char *root = tu_mkdtemp();
    probe_at(root, "a", "alpha");
    json_t *cfg = host_cfg(root, "alpha",
                           "{\"tools\": [{\"name\": \"fine\", \"mode\": \"echo\"},"
                           " {\"name\": \"latin1\", \"mode\": \"echo\","
                           " \"latin1Description\": true}]}",
                           NULL);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = load_host(&log, cfg);
    ck_assert_str_eq(state_of(h, "alpha"), "loaded");
    ck_assert(host_test_log_has(&log, "3 alpha:",
                                "register_tool refused: the tool's description "
                                "is not valid UTF-8",
                                NULL));
    ck_assert(host_test_log_has(&log, "alpha: register latin1 -> OC_ERR_INVALID", NULL));
    json_t *list = och_tools_list(h);
    ck_assert_msg(list != NULL, "och_tools_list failed");
    ck_assert_uint_eq(json_array_size(list), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "name")), "fine");
    json_decref(list);
    json_t *r = NULL;
    ck_assert_int_eq(och_tool_call(h, "latin1", NULL, NULL, &r), OC_ERR_NOT_FOUND);
    json_decref(r);
    och_host_free(h);
    host_test_log_free(&log);
    tu_rmtree(root);
    free(root);
}
END_TEST

/* ---- sessions ---------------------------------------------------------------------------- */

static void expect_override(och_host *h, const char *key, const char *prov, const char *model)
{
    char *p = (char *)1, *m = (char *)1;
    int rc = och_session_override(h, key, &p, &m);
    if (!prov) {
        ck_assert_int_eq(rc, OC_ERR_NOT_FOUND);
        ck_assert_ptr_null(p);
        ck_assert_ptr_null(m);
        return;
    }
    ck_assert_int_eq(rc, OC_OK);
    ck_assert_str_eq(p, prov);
    ck_assert_str_eq(m, model);
    free(p);
    free(m);
}

#define K1 "agent:planner:discord:channel:100"
#define K2 "agent:coder:discord:channel:100:thread:555"
#define K3 "agent:coder:discord:channel:200"

static void touch_three(och_host *h)
{
    ck_assert_int_eq(och_session_touch(h, K1, "planner", "100", NULL), OC_OK);
    ck_assert_int_eq(och_session_touch(h, K2, "coder", "100", "555"), OC_OK);
    ck_assert_int_eq(och_session_touch(h, K3, "coder", "200", NULL), OC_OK);
    ck_assert_int_eq(och_session_touch(h, K1, "planner", "100", NULL), OC_OK);
}

static void expect_channel_100(och_host *h)
{
    json_t *l = och_sessions_list(h, "100");
    json_t *want = tu_json("[{\"sessionKey\": \"" K2 "\", \"agentId\": \"coder\", "
                           "\"channelId\": \"100\", \"threadId\": \"555\"},"
                           " {\"sessionKey\": \"" K1 "\", \"agentId\": \"planner\", "
                           "\"channelId\": \"100\"}]");
    char *got = json_dumps(l, JSON_SORT_KEYS);
    ck_assert_msg(json_equal(l, want), "got %s", got);
    free(got);
    json_decref(want);
    json_decref(l);
}

START_TEST(session_patch_and_list_round_trip)
{
    och_host *h = och_host_new();
    och_host_set_log(h, NULL, NULL, OC_LOG_ERROR);
    touch_three(h);
    expect_channel_100(h);
    json_t *l = och_sessions_list(h, "200");
    ck_assert_uint_eq(json_array_size(l), 1);
    json_decref(l);
    l = och_sessions_list(h, "999");
    ck_assert(json_is_array(l) && json_array_size(l) == 0);
    json_decref(l);
    l = och_sessions_list(h, NULL);
    ck_assert(json_is_array(l) && json_array_size(l) == 0);
    json_decref(l);

    expect_override(h, K1, NULL, NULL);
    ck_assert_int_eq(och_session_patch(h, K1, "noreply", "no-reply"), OC_OK);
    expect_override(h, K1, "noreply", "no-reply");
    expect_override(h, K2, NULL, NULL);
    ck_assert_int_eq(och_session_patch(h, K1, NULL, "x"), OC_ERR_INVALID);
    ck_assert_int_eq(och_session_patch(h, K1, "x", NULL), OC_ERR_INVALID);
    ck_assert_int_eq(och_session_patch(h, K1, "", "x"), OC_ERR_INVALID);
    expect_override(h, K1, "noreply", "no-reply");
    ck_assert_int_eq(och_session_patch(h, K1, "openai", "gpt"), OC_OK);
    expect_override(h, K1, "openai", "gpt");
    ck_assert_int_eq(och_session_patch(h, K1, NULL, NULL), OC_OK);
    expect_override(h, K1, NULL, NULL);
    /* A key not yet seen keeps its override until the session shows up. */
    ck_assert_int_eq(och_session_patch(h, "agent:x:discord:channel:300", "p", "m"), OC_OK);
    l = och_sessions_list(h, "300");
    ck_assert_uint_eq(json_array_size(l), 0);
    json_decref(l);
    ck_assert_int_eq(och_session_touch(h, "agent:x:discord:channel:300", "x", "300", NULL), OC_OK);
    expect_override(h, "agent:x:discord:channel:300", "p", "m");
    l = och_sessions_list(h, "300");
    ck_assert_uint_eq(json_array_size(l), 1);
    json_decref(l);
    /* Argument checks. */
    ck_assert_int_eq(och_session_touch(h, "", "a", "1", NULL), OC_ERR_INVALID);
    ck_assert_int_eq(och_session_touch(h, "k", NULL, "1", NULL), OC_ERR_INVALID);
    ck_assert_int_eq(och_session_touch(h, "k", "a", "1", ""), OC_ERR_INVALID);
    char *p, *m;
    ck_assert_int_eq(och_session_override(h, NULL, &p, &m), OC_ERR_INVALID);
    och_host_free(h);
}
END_TEST

/* Session keys, ids and the override pair are JSON strings in the session
 * list and the state file: bytes that are not UTF-8 are refused up front
 * (they were taken, then broke the channel's list or failed the write as
 * "out of memory"). */
START_TEST(session_strings_must_be_utf8)
{
    char *dir = tu_mkdtemp();
    char *file = tu_path(dir, "sessions.json");
    och_host *h = och_host_new();
    och_host_set_log(h, NULL, NULL, OC_LOG_ERROR);
    touch_three(h);
    ck_assert_int_eq(och_session_touch(h, "agent:x:discord:channel:100\xff", "x", "100", NULL),
                     OC_ERR_INVALID);
    ck_assert_int_eq(och_session_touch(h, "agent:x:discord:channel:100", "x\xc3", "100", NULL),
                     OC_ERR_INVALID);
    ck_assert_int_eq(och_session_touch(h, "agent:x:discord:channel:100", "x", "100", "5\xff"),
                     OC_ERR_INVALID);
    expect_channel_100(h); /* the list of the channel still answers */
    char err[512] = "";
    ck_assert_msg(och_host_set_state_file(h, file, err, sizeof err) == OC_OK, "%s", err);
    ck_assert_int_eq(och_session_patch(h, K1, "p\xe9", "m"), OC_ERR_INVALID);
    ck_assert_int_eq(och_session_patch(h, K1, "p", "m\xe9"), OC_ERR_INVALID);
    ck_assert_int_eq(och_session_patch(h, "agent:y:\xff", "p", "m"), OC_ERR_INVALID);
    ck_assert_int_eq(och_session_patch(h, "agent:y:\xff", NULL, NULL), OC_ERR_INVALID);
    expect_override(h, K1, NULL, NULL);
    ck_assert_int_eq(och_session_patch(h, K1, "p", "m"), OC_OK);
    expect_override(h, K1, "p", "m");
    och_host_free(h);
    tu_rmtree(dir);
    free(dir);
    free(file);
}
END_TEST

START_TEST(session_api_from_plugin)
{
    char *root = tu_mkdtemp();
    probe_at(root, "a", "alpha");
    json_t *cfg = host_cfg(root, "alpha",
                           "{\"tools\": [{\"name\": \"patch\", \"mode\": \"patch\"},"
                           " {\"name\": \"list\", \"mode\": \"list\"}]}",
                           NULL);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = load_host(&log, cfg);
    touch_three(h);
    json_t *r = NULL;
    json_t *pa = tu_json("{\"channel\": \"100\"}");
    ck_assert_int_eq(och_tool_call(h, "list", pa, NULL, &r), OC_OK);
    ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(r, "details"), "sessions")),
                      2);
    json_decref(r);
    json_decref(pa);
    pa = tu_json("{\"key\": \"" K2 "\", \"provider\": \"noreply\", \"model\": \"no-reply\"}");
    ck_assert_int_eq(och_tool_call(h, "patch", pa, NULL, &r), OC_OK);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "details"), "status")),
                     OC_OK);
    json_decref(r);
    json_decref(pa);
    expect_override(h, K2, "noreply", "no-reply");
    pa = tu_json("{\"key\": \"" K2 "\", \"model\": \"no-reply\"}");
    ck_assert_int_eq(och_tool_call(h, "patch", pa, NULL, &r), OC_OK);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "details"), "status")),
                     OC_ERR_INVALID);
    json_decref(r);
    json_decref(pa);
    ck_assert(host_test_log_has(&log, "2 alpha:",
                                "session_patch(" K2 ", NULL, no-reply) failed: "
                                "OC_ERR_INVALID",
                                NULL));
    och_host_free(h);
    host_test_log_free(&log);
    tu_rmtree(root);
    free(root);
}
END_TEST

/* ABI 1.1: session_reset gives the key a fresh sessionId (persisted, the
 * override kept); run_abort only stops a run in flight. */
START_TEST(session_reset_and_run_abort)
{
    char *dir = tu_mkdtemp();
    char *path = tu_path(dir, "state.json");
    char err[512] = "";
    och_host *h = och_host_new();
    och_host_set_log(h, NULL, NULL, OC_LOG_ERROR);
    ck_assert_int_eq(och_host_set_state_file(h, path, err, sizeof err), OC_OK);
    touch_three(h);
    ck_assert_int_eq(och_session_patch(h, K1, "noreply", "no-reply"), OC_OK);
    char *id = och_session_id(h, K1);
    ck_assert_str_eq(id, K1);
    free(id);
    ck_assert_int_eq(och_session_reset(h, K1), OC_OK);
    ck_assert_int_eq(och_session_reset(h, K1), OC_OK);
    ck_assert_int_eq(och_session_reset(h, "agent:nobody:discord:channel:1"), OC_ERR_NOT_FOUND);
    id = och_session_id(h, K1);
    ck_assert_str_eq(id, K1 "#2");
    free(id);
    expect_override(h, K1, "noreply", "no-reply");
    och_host *h2 = och_host_new();
    och_host_set_log(h2, NULL, NULL, OC_LOG_ERROR);
    ck_assert_int_eq(och_host_set_state_file(h2, path, err, sizeof err), OC_OK);
    id = och_session_id(h2, K1);
    ck_assert_str_eq(id, K1 "#2");
    free(id);
    och_host_free(h2);
    /* run_abort: nothing in flight, then a run that is aborted, then over. */
    ck_assert_int_eq(och_run_abort(h, K2), OC_ERR_NOT_FOUND);
    ck_assert_int_eq(och_run_begin(h, K2), OC_OK);
    ck_assert_int_eq(och_run_abort(h, K2), OC_OK);
    ck_assert_int_eq(och_run_end(h, K2), 1);
    ck_assert_int_eq(och_run_abort(h, K2), OC_ERR_NOT_FOUND);
    ck_assert_int_eq(och_run_begin(h, K2), OC_OK);
    ck_assert_int_eq(och_run_end(h, K2), 0);
    och_host_free(h);
    tu_rmtree(dir);
    free(dir);
    free(path);
}
END_TEST

START_TEST(session_state_survives_reopen)
{
    char *dir = tu_mkdtemp();
    char *path = tu_path(dir, "state.json");
    char err[512] = "";
    och_host *h = och_host_new();
    och_host_set_log(h, NULL, NULL, OC_LOG_ERROR);
    ck_assert_int_eq(och_host_set_state_file(h, path, err, sizeof err), OC_OK);
    ck_assert_int_eq(access(path, F_OK), 0); /* created at once */
    touch_three(h);
    ck_assert_int_eq(och_session_patch(h, K2, "noreply", "no-reply"), OC_OK);
    ck_assert_int_eq(och_session_patch(h, "agent:y:discord:channel:9", "p", "m"), OC_OK);
    /* No free: the state must already be on disk, as after a SIGKILL. The
     * reopened host reads the same table. */
    och_host *h2 = och_host_new();
    och_host_set_log(h2, NULL, NULL, OC_LOG_ERROR);
    ck_assert_int_eq(och_host_set_state_file(h2, path, err, sizeof err), OC_OK);
    expect_channel_100(h2);
    expect_override(h2, K2, "noreply", "no-reply");
    expect_override(h2, K1, NULL, NULL);
    expect_override(h2, "agent:y:discord:channel:9", "p", "m");
    och_host_free(h2);
    /* Clearing persists too. */
    ck_assert_int_eq(och_session_patch(h, K2, NULL, NULL), OC_OK);
    och_host_free(h);
    h = och_host_new();
    ck_assert_int_eq(och_host_set_state_file(h, path, err, sizeof err), OC_OK);
    expect_override(h, K2, NULL, NULL);
    expect_channel_100(h);
    och_host_free(h);
    /* Only the state file is left: no temp files. */
    char *ls = NULL;
    ck_assert_int_ge(asprintf(&ls, "ls -A '%s'", dir), 0);
    FILE *f = popen(ls, "r");
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        ck_assert_str_eq(line, "state.json\n");
        n++;
    }
    pclose(f);
    free(ls);
    ck_assert_int_eq(n, 1);
    free(path);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(session_state_file_errors)
{
    char *dir = tu_mkdtemp();
    char *path = tu_path(dir, "state.json");
    char err[512] = "";
    /* Malformed: refused with the reason, and left as it was. */
    ck_assert_int_eq(tu_write_file(path, "{\"version\": 1, \"sessions\": [}"), 0);
    och_host *h = och_host_new();
    ck_assert_int_eq(och_host_set_state_file(h, path, err, sizeof err), OC_ERR_IO);
    ck_assert_msg(strstr(err, path) && strstr(err, "line 1"), "%s", err);
    och_host_free(h);
    FILE *f = fopen(path, "r");
    char buf[128] = "";
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
    fclose(f);
    ck_assert_str_eq(buf, "{\"version\": 1, \"sessions\": [}");
    /* Another version. */
    ck_assert_int_eq(tu_write_file(path, "{\"version\": 99, \"sessions\": []}"), 0);
    h = och_host_new();
    ck_assert_int_eq(och_host_set_state_file(h, path, err, sizeof err), OC_ERR_IO);
    ck_assert_msg(strstr(err, "\"version\": 1"), "%s", err);
    och_host_free(h);
    /* A folder that cannot hold the file (its parent is a regular file):
     * refused now, not at the first patch. */
    char *bad = tu_path(path, "state.json");
    h = och_host_new();
    ck_assert_int_eq(och_host_set_state_file(h, bad, err, sizeof err), OC_ERR_IO);
    ck_assert_msg(strstr(err, bad), "%s", err);
    och_host_free(h);
    h = och_host_new();
    ck_assert_int_eq(och_host_set_state_file(h, "", err, sizeof err), OC_ERR_INVALID);
    och_host_free(h);
    free(bad);
    free(path);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(session_write_failure_undoes_the_change)
{
    char *dir = tu_mkdtemp();
    char *sub = tu_path(dir, "sub");
    mkdir(sub, 0755);
    char *path = tu_path(sub, "state.json");
    char err[512] = "";
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = och_host_new();
    och_host_set_log(h, host_test_log_sink, &log, OC_LOG_DEBUG);
    ck_assert_int_eq(och_host_set_state_file(h, path, err, sizeof err), OC_OK);
    ck_assert_int_eq(och_session_touch(h, K1, "planner", "100", NULL), OC_OK);
    ck_assert_int_eq(och_session_patch(h, K1, "p", "m"), OC_OK);
    /* The folder disappears (a read-only folder would not stop root, who
     * runs CI): writes fail, memory keeps the old truth. */
    tu_rmtree(sub);
    ck_assert_int_eq(och_session_patch(h, K1, "p2", "m2"), OC_ERR_IO);
    expect_override(h, K1, "p", "m");
    ck_assert_int_eq(och_session_patch(h, K1, NULL, NULL), OC_ERR_IO);
    expect_override(h, K1, "p", "m");
    ck_assert_int_eq(och_session_touch(h, K3, "coder", "200", NULL), OC_ERR_IO);
    json_t *l = och_sessions_list(h, "200");
    ck_assert_uint_eq(json_array_size(l), 0);
    json_decref(l);
    ck_assert_int_eq(och_session_patch(h, "agent:new:discord:channel:1", "p", "m"), OC_ERR_IO);
    expect_override(h, "agent:new:discord:channel:1", NULL, NULL);
    ck_assert(host_test_log_has(&log, "3 host:", "not written", "the change was undone", NULL));
    och_host_free(h);
    host_test_log_free(&log);
    free(path);
    free(sub);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

/* ---- threads ----------------------------------------------------------------------------- */

typedef struct worker {
    och_host *h;
    int n;
    int failures;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < 200; i++) {
        char key[96], ch[32];
        snprintf(ch, sizeof ch, "%d", 1000 + i % 5);
        snprintf(key, sizeof key, "agent:a%d:discord:channel:%s", w->n, ch);
        if (och_session_touch(w->h, key, "a", ch, NULL) != OC_OK)
            w->failures++;
        if (och_session_patch(w->h, key, i % 2 ? "p" : NULL, i % 2 ? "m" : NULL) != OC_OK)
            w->failures++;
        json_t *l = och_sessions_list(w->h, ch);
        if (!json_is_array(l))
            w->failures++;
        json_decref(l);
        json_t *r = NULL;
        const char *model = NULL;
        if (och_hook_dispatch(w->h, "before_model_resolve", NULL, NULL, &r) != OC_OK ||
            !(model = json_string_value(json_object_get(r, "modelOverride"))) ||
            strcmp(model, "m1") != 0)
            w->failures++;
        json_decref(r);
        if (och_tool_call(w->h, "echo", NULL, NULL, &r) != OC_OK)
            w->failures++;
        json_decref(r);
    }
    return NULL;
}

START_TEST(concurrent_calls_from_many_threads)
{
    char *root = tu_mkdtemp();
    probe_at(root, "a", "alpha");
    char *state = tu_path(root, "state.json");
    json_t *cfg =
        host_cfg(root, "alpha",
                 "{\"threadLogs\": 500, \"tools\": [{\"name\": \"echo\", \"mode\": \"echo\"}],"
                 " \"hooks\": [{\"hook\": \"before_model_resolve\", \"label\": \"m\","
                 " \"result\": {\"modelOverride\": \"m1\"}}]}",
                 NULL);
    host_test_log log;
    host_test_log_init(&log);
    och_host *h = och_host_new();
    och_host_set_log(h, host_test_log_sink, &log, OC_LOG_INFO);
    char err[512];
    ck_assert_int_eq(och_host_set_state_file(h, state, err, sizeof err), OC_OK);
    ck_assert_int_eq(och_host_configure(h, cfg, NULL, err, sizeof err), OC_OK);
    json_decref(cfg);
    ck_assert_int_eq(och_host_load(h), OC_OK);
    pthread_t t[8];
    worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker){.h = h, .n = i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(w[i].failures, 0);
    }
    /* 8 agents x 5 channels; the last patch of each (i = 195..199) decides. */
    size_t total = 0;
    for (int c = 0; c < 5; c++) {
        char ch[32];
        snprintf(ch, sizeof ch, "%d", 1000 + c);
        json_t *l = och_sessions_list(h, ch);
        total += json_array_size(l);
        json_decref(l);
    }
    ck_assert_uint_eq(total, 40);
    /* Last patch per key: i=199 (odd, set) for channel 1004, i=198 (even,
     * cleared) for 1003. */
    expect_override(h, "agent:a3:discord:channel:1004", "p", "m");
    expect_override(h, "agent:a3:discord:channel:1003", NULL, NULL);
    och_host_free(h);
    char *th = host_test_log_seq(&log, "alpha", "thread line");
    ck_assert_ptr_nonnull(strstr(th, "thread line 499"));
    free(th);
    h = och_host_new();
    ck_assert_int_eq(och_host_set_state_file(h, state, err, sizeof err), OC_OK);
    json_t *l = och_sessions_list(h, "1004");
    ck_assert_uint_eq(json_array_size(l), 8);
    json_decref(l);
    och_host_free(h);
    host_test_log_free(&log);
    free(state);
    tu_rmtree(root);
    free(root);
}
END_TEST

/* ---- logging ------------------------------------------------------------------------------ */

START_TEST(default_log_sink_prefixes)
{
    char *dir = tu_mkdtemp();
    char *path = tu_path(dir, "err.txt");
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    och_host *h = och_host_new();
    och_log(h, OC_LOG_WARN, "dirigent", "hello %d", 7);
    och_log(h, OC_LOG_ERROR, NULL, "core line");
    och_log(h, OC_LOG_DEBUG, NULL, "dropped below info");
    och_host_set_log(h, NULL, NULL, OC_LOG_DEBUG);
    och_log(h, OC_LOG_DEBUG, "x", "now shown");
    och_host_free(h);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "r");
    char text[512] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    ck_assert_str_eq(text, "[warn] [dirigent] hello 7\n[error] [host] core line\n"
                           "[debug] [x] now shown\n");
    free(path);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

Suite *make_host_suite(void)
{
    Suite *s = suite_create("host");
    TCase *c = tcase_create("config");
    tcase_add_test(c, config_errors_name_the_key);
    tcase_add_test(c, no_config_loads_nothing);
    suite_add_tcase(s, c);

    c = tcase_create("discovery");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, discovery_order_and_shutdown_order);
    tcase_add_test(c, duplicate_id_first_wins);
    tcase_add_test(c, allow_deny_and_disabled);
    tcase_add_test(c, manifest_refusals);
    tcase_add_test(c, huge_manifest_is_refused);
    tcase_add_test(c, failed_init_leaves_nothing_registered);
    suite_add_tcase(s, c);

    c = tcase_create("hooks");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, hook_priority_order_and_model_merge);
    tcase_add_test(c, message_sending_rewrite_and_cancel);
    tcase_add_test(c, claim_hooks_merge_and_can_be_switched_off);
    suite_add_tcase(s, c);

    c = tcase_create("tools");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, tool_registry_and_contract_breakers);
    tcase_add_test(c, tool_with_non_utf8_description_is_refused);
    suite_add_tcase(s, c);

    c = tcase_create("sessions");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, session_patch_and_list_round_trip);
    tcase_add_test(c, session_strings_must_be_utf8);
    tcase_add_test(c, session_api_from_plugin);
    tcase_add_test(c, session_state_survives_reopen);
    tcase_add_test(c, session_reset_and_run_abort);
    tcase_add_test(c, session_state_file_errors);
    tcase_add_test(c, session_write_failure_undoes_the_change);
    suite_add_tcase(s, c);

    c = tcase_create("threads");
    tcase_set_timeout(c, 120);
    tcase_add_test(c, concurrent_calls_from_many_threads);
    suite_add_tcase(s, c);

    c = tcase_create("log");
    tcase_add_test(c, default_log_sink_prefixes);
    suite_add_tcase(s, c);
    return s;
}
