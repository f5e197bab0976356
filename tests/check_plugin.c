/*
 * check_plugin.c -- the plugin's init and shutdown as a host sees them:
 * the table returned by oc_plugin_entry, config refusals reaching `err`,
 * nothing left behind on failure, no secret in any log line, and repeated
 * init/shutdown cycles (run under `make valgrind` for leaks); init with each
 * of its allocations failing in turn (failalloc.h).
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "failalloc.h"
#include "openclaw/plugin.h"
#include "core.h"
#include "dirigent.h"
#include "discuss.h"
#include "store.h"
#include "testutil.h"

const oc_plugin *oc_plugin_entry(void);

#define TOKEN "SECRETmoderatorTOKENvalue.abc123"

typedef struct test_host {
    pthread_mutex_t lock;
    tu_logbuf logs;
    int tools, hooks;
    int session_calls; /* session_patch + sessions_list */
    char tool_names[8][64];
    char hook_names[16][64];
    int refuse_hook;  /* >0: the nth `on` call is refused */
    int refuse_tools; /* 1: register_tool refuses */
} test_host;

static test_host H;

static int th_register_tool_run(oc_host *h, const oc_tool *t)
{
    (void)h;
    ck_assert_ptr_nonnull(t->execute);
    json_t *schema = json_loads(t->parameters, 0, NULL);
    ck_assert_msg(json_is_object(schema), "tool %s: parameters is not a JSON object", t->name);
    json_decref(schema);
    if (H.refuse_tools)
        return OC_ERR_UNSUPPORTED;
    if (H.tools < 8)
        snprintf(H.tool_names[H.tools], 64, "%s", t->name);
    H.tools++;
    return OC_OK;
}

/* The host does not fail: the sweeps fail the plugin's allocations only. */
static int th_register_tool(oc_host *h, const oc_tool *t)
{
    int was = fa_suspend();
    int r = th_register_tool_run(h, t);
    fa_resume(was);
    return r;
}

static int th_on_run(oc_host *h, const char *hook, oc_hook_fn fn, int prio)
{
    (void)h;
    (void)prio;
    ck_assert_ptr_nonnull(fn);
    if (H.refuse_hook && H.hooks + 1 == H.refuse_hook)
        return OC_ERR_UNSUPPORTED;
    if (H.hooks < 16)
        snprintf(H.hook_names[H.hooks], 64, "%s", hook);
    H.hooks++;
    return OC_OK;
}

static int th_on(oc_host *h, const char *hook, oc_hook_fn fn, int prio)
{
    int was = fa_suspend();
    int r = th_on_run(h, hook, fn, prio);
    fa_resume(was);
    return r;
}

static int th_patch_run(oc_host *h, const char *k, const char *p, const char *m)
{
    (void)h;
    (void)k;
    (void)p;
    (void)m;
    H.session_calls++;
    return OC_OK;
}

static int th_patch(oc_host *h, const char *k, const char *p, const char *m)
{
    int was = fa_suspend();
    int r = th_patch_run(h, k, p, m);
    fa_resume(was);
    return r;
}

static json_t *th_list_run(oc_host *h, const char *c)
{
    (void)h;
    (void)c;
    H.session_calls++;
    return json_array();
}

static json_t *th_list(oc_host *h, const char *c)
{
    int was = fa_suspend();
    json_t *r = th_list_run(h, c);
    fa_resume(was);
    return r;
}

static void th_log_run(oc_host *h, int level, const char *msg)
{
    (void)h;
    pthread_mutex_lock(&H.lock);
    tu_logbuf_add(&H.logs, level, msg);
    pthread_mutex_unlock(&H.lock);
}

static void th_log(oc_host *h, int level, const char *msg)
{
    int was = fa_suspend();
    th_log_run(h, level, msg);
    fa_resume(was);
}

static oc_host_api api = {
    .abi_major = OC_ABI_MAJOR,
    .abi_minor = OC_ABI_MINOR,
    .struct_size = sizeof(oc_host_api),
    .host = NULL,
    .register_tool = th_register_tool,
    .on = th_on,
    .session_patch = th_patch,
    .sessions_list = th_list,
    .log = th_log,
};

static char *dir;

static void setup(void)
{
    memset(&H, 0, sizeof H);
    pthread_mutex_init(&H.lock, NULL);
    dir = tu_mkdtemp();
    unsetenv("DIRIGENT_MODERATOR_TOKEN");
    unsetenv("DIRIGENT_SESSION_POLICY");
    unsetenv("DIRIGENT_STATE_DIR");
    unsetenv("OPENCLAW_CONFIG_PATH");
}

static void teardown(void)
{
    tu_logbuf_free(&H.logs);
    tu_rmtree(dir);
    free(dir);
}

static json_t *config_with(const char *db, const char *extra)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"noReplyProvider\":\"noreply\",\"noReplyModel\":\"no-reply\",\"dbPath\":\"%s\","
             "\"discord\":{\"moderatorUserId\":\"1000000000000000001\","
             "\"apiBase\":\"http://127.0.0.1:9/api/v10\"%s},"
             "\"agents\":{\"planner\":{\"discordUserId\":\"2001\"},"
             "\"coder\":{\"discordUserId\":\"2002\"}}}",
             db, extra ? extra : "");
    return tu_json(text);
}

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

START_TEST(test_entry_table)
{
    const oc_plugin *pl = oc_plugin_entry();
    ck_assert_ptr_nonnull(pl);
    ck_assert_uint_eq(pl->abi_major, OC_ABI_MAJOR);
    /* It runs on 1.0 hosts: the 1.1 host functions are optional to it. */
    ck_assert_uint_eq(pl->abi_minor, 0);
    ck_assert_uint_eq(pl->struct_size, sizeof(oc_plugin));
    ck_assert_str_eq(pl->id, "dirigent");
    ck_assert_ptr_nonnull(pl->version);
    ck_assert_ptr_nonnull(pl->init);
    ck_assert_ptr_nonnull(pl->shutdown);
}
END_TEST

START_TEST(test_init_registers_manifest_contracts)
{
    char *db = tu_path(dir, "d.db");
    json_t *cfg = config_with(db, NULL);
    void *state = NULL;
    char err[512] = "";
    const oc_plugin *pl = oc_plugin_entry();
    ck_assert_msg(pl->init(&api, cfg, &state, err, sizeof err) == OC_OK, "init: %s", err);
    ck_assert_ptr_nonnull(state);
    ck_assert(exists(db));
    /* abi-v1: session functions only after init has returned. */
    ck_assert_int_eq(H.session_calls, 0);
    /* What was registered is exactly what manifest.json promises. */
    json_t *m = json_load_file("manifest.json", 0, NULL);
    ck_assert_ptr_nonnull(m);
    json_t *tools = json_object_get(json_object_get(m, "contracts"), "tools");
    json_t *hooks = json_object_get(json_object_get(m, "contracts"), "hooks");
    ck_assert_int_eq(H.tools, (int)json_array_size(tools));
    for (int i = 0; i < H.tools; i++) {
        int found = 0;
        for (size_t j = 0; j < json_array_size(tools); j++)
            found |= strcmp(H.tool_names[i], json_string_value(json_array_get(tools, j))) == 0;
        ck_assert_msg(found, "tool %s registered but not in manifest", H.tool_names[i]);
    }
    for (int i = 0; i < H.hooks; i++) {
        int found = 0;
        for (size_t j = 0; j < json_array_size(hooks); j++)
            found |= strcmp(H.hook_names[i], json_string_value(json_array_get(hooks, j))) == 0;
        ck_assert_msg(found, "hook %s registered but not in manifest", H.hook_names[i]);
    }
    for (size_t j = 0; j < json_array_size(hooks); j++) {
        int found = 0;
        for (int i = 0; i < H.hooks; i++)
            found |= strcmp(H.hook_names[i], json_string_value(json_array_get(hooks, j))) == 0;
        ck_assert_msg(found, "manifest hook %s not registered",
                      json_string_value(json_array_get(hooks, j)));
    }
    json_decref(m);
    pl->shutdown(state);
    json_decref(cfg);
    free(db);
}
END_TEST

START_TEST(test_bad_config_fails_init_and_creates_nothing)
{
    char *db = tu_path(dir, "never.db");
    char text[512];
    snprintf(text, sizeof text,
             "{\"noReplyProvider\":\"p\",\"noReplyModel\":\"m\",\"dbPath\":\"%s\","
             "\"discord\":{\"moderatorUserId\":\"1\"},\"turn\":{\"timeoutSec\":0}}",
             db);
    json_t *cfg = tu_json(text);
    void *state = (void *)1;
    char err[512] = "";
    ck_assert_int_eq(oc_plugin_entry()->init(&api, cfg, &state, err, sizeof err), OC_ERR_INVALID);
    ck_assert_ptr_null(state);
    ck_assert_ptr_nonnull(strstr(err, "turn.timeoutSec"));
    ck_assert(!exists(db));
    ck_assert_int_eq(H.tools + H.hooks, 0);
    json_decref(cfg);
    free(db);
}
END_TEST

/* A dbPath whose folder does not exist yet: the missing levels are created
 * (0700) and init succeeds (it failed with "check that the folder exists"). */
START_TEST(test_missing_db_folder_is_created)
{
    char *db = tu_path(dir, "new/deeper/d.db");
    json_t *cfg = config_with(db, NULL);
    void *state = NULL;
    char err[512] = "";
    ck_assert_msg(oc_plugin_entry()->init(&api, cfg, &state, err, sizeof err) == OC_OK, "%s", err);
    ck_assert(exists(db));
    char *top = tu_path(dir, "new");
    struct stat sb;
    ck_assert_int_eq(stat(top, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0700);
    oc_plugin_entry()->shutdown(state);
    ck_assert_ptr_nonnull(strstr(H.logs.text, "created the folder"));
    json_decref(cfg);
    free(top);
    free(db);
}
END_TEST

/* A folder that cannot be created is named with errno's text; a dbPath that
 * is a folder is refused by name; neither leaves anything behind. */
START_TEST(test_unusable_db_path_fails_init_with_clear_message)
{
    char *file = tu_path(dir, "plain-file");
    ck_assert_int_eq(tu_write_file(file, "x"), 0);
    char *db = tu_path(dir, "plain-file/sub/d.db");
    json_t *cfg = config_with(db, NULL);
    void *state = NULL;
    char err[512] = "";
    ck_assert_int_eq(oc_plugin_entry()->init(&api, cfg, &state, err, sizeof err), OC_ERR_IO);
    ck_assert_ptr_null(state);
    char *sub = tu_path(dir, "plain-file/sub");
    ck_assert_msg(strstr(err, "cannot create the folder") && strstr(err, sub) &&
                      strstr(err, "Not a directory"),
                  "%s", err);
    json_decref(cfg);

    cfg = config_with(dir, NULL);
    ck_assert_int_eq(oc_plugin_entry()->init(&api, cfg, &state, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, dir) && strstr(err, "is a folder"), "%s", err);
    ck_assert_int_eq(H.tools + H.hooks, 0);
    json_decref(cfg);
    free(sub);
    free(db);
    free(file);
}
END_TEST

START_TEST(test_newer_schema_fails_init)
{
    char *db = tu_path(dir, "future.db");
    json_t *cfg = config_with(db, NULL);
    void *state = NULL;
    char err[512] = "";
    const oc_plugin *pl = oc_plugin_entry();
    ck_assert_int_eq(pl->init(&api, cfg, &state, err, sizeof err), OC_OK);
    pl->shutdown(state);
    /* Pretend a newer plugin wrote the file. */
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", dg_store_schema_version() + 1);
    sqlite3 *h = NULL;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    state = NULL;
    ck_assert_int_eq(pl->init(&api, cfg, &state, err, sizeof err), OC_ERR_UNSUPPORTED);
    ck_assert_ptr_null(state);
    ck_assert_ptr_nonnull(strstr(err, "newer"));
    json_decref(cfg);
    free(db);
}
END_TEST

START_TEST(test_token_never_logged)
{
    char *db = tu_path(dir, "t.db");
    json_t *cfg = config_with(db, ",\"moderatorToken\":\"" TOKEN "\"");
    void *state = NULL;
    char err[512] = "";
    const oc_plugin *pl = oc_plugin_entry();
    ck_assert_msg(pl->init(&api, cfg, &state, err, sizeof err) == OC_OK, "init: %s", err);
    pl->shutdown(state);
    /* And through the environment variable. */
    setenv("DIRIGENT_MODERATOR_TOKEN", TOKEN "env", 1);
    ck_assert_msg(pl->init(&api, cfg, &state, err, sizeof err) == OC_OK, "init: %s", err);
    pl->shutdown(state);
    unsetenv("DIRIGENT_MODERATOR_TOKEN");
    ck_assert_ptr_nonnull(H.logs.text);
    ck_assert_ptr_nonnull(strstr(H.logs.text, "moderator token set"));
    /* Not the token, not even a prefix of it. */
    ck_assert_ptr_null(strstr(H.logs.text, "SECRETmod"));
    ck_assert_ptr_null(strstr(H.logs.text, "TOKENvalue"));
    json_decref(cfg);
    free(db);
}
END_TEST

START_TEST(test_host_of_other_major_refused)
{
    oc_host_api other = api;
    other.abi_major = OC_ABI_MAJOR + 1;
    char *db = tu_path(dir, "m.db");
    json_t *cfg = config_with(db, NULL);
    void *state = NULL;
    char err[512] = "";
    ck_assert_int_eq(oc_plugin_entry()->init(&other, cfg, &state, err, sizeof err),
                     OC_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "major"));
    ck_assert(!exists(db));
    /* A host table too short to hold the functions the plugin calls. */
    other = api;
    other.struct_size = 16;
    ck_assert_int_eq(oc_plugin_entry()->init(&other, cfg, &state, err, sizeof err),
                     OC_ERR_UNSUPPORTED);
    json_decref(cfg);
    free(db);
}
END_TEST

/* A table of the test's own in place of the host's oc_host_api. */
static void table_log(void *ctx, int level, const char *text)
{
    (void)ctx;
    th_log(NULL, level, text);
}

static int table_sessions(void *ctx, const char *channel_id, dg_session_refs *out)
{
    (void)ctx, (void)channel_id;
    memset(out, 0, sizeof *out);
    return DG_ERR_INVALID; /* as for an answer that is no list */
}

static int table_patch(void *ctx, const char *key, const char *provider, const char *model)
{
    (void)ctx, (void)key, (void)provider, (void)model;
    return DG_OK;
}

static int table_attach(dg_plugin *p, void *ctx, char *err, size_t err_len)
{
    (void)p, (void)err, (void)err_len;
    *(int *)ctx = 1;
    return DG_OK;
}

START_TEST(test_core_runs_on_a_host_table_of_its_own)
{
    /* The core needs no oc_host_api: a table without a required call is
     * refused by name before anything is built; a whole one runs the core,
     * whose lines and host calls go through it. */
    char *db = tu_path(dir, "t.db");
    json_t *cfg = config_with(db, NULL);
    char err[512] = "";
    int attached = 0;
    dg_plugin *p = NULL;
    dg_host_calls table = {.log = table_log, .sessions = table_sessions};
    ck_assert_int_eq(dg_core_new(&table, cfg, table_attach, &attached, &p, err, sizeof err),
                     DG_ERR_INVALID);
    ck_assert_msg(strstr(err, "lacks log, sessions or session_patch"), "%s", err);
    ck_assert_ptr_null(p);
    ck_assert(!attached && !exists(db));
    table.session_patch = table_patch;
    ck_assert_msg(dg_core_new(&table, cfg, table_attach, &attached, &p, err, sizeof err) == DG_OK,
                  "%s", err);
    ck_assert(attached);
    ck_assert_msg(strstr(H.logs.text ? H.logs.text : "", "ready"), "%s",
                  H.logs.text ? H.logs.text : "");
    dg_session_refs refs;
    dg_host_sessions(p, "42", &refs);
    ck_assert(!refs.unavailable && refs.n == 0);
    ck_assert(strstr(H.logs.text, "sessions_list(42) did not return an array"));
    dg_session_refs_release(&refs);
    dg_core_free(p);
    json_decref(cfg);
    free(db);
}
END_TEST

START_TEST(test_host_refusals_fail_init_cleanly)
{
    /* A host table without a function, no place for the state, or a host
     * that refuses a hook or a tool: init fails with the reason and leaves
     * no instance behind. */
    char *db = tu_path(dir, "r.db");
    json_t *cfg = config_with(db, NULL);
    void *state = NULL;
    char err[512] = "";
    const oc_plugin *pl = oc_plugin_entry();
    ck_assert_int_eq(pl->init(NULL, cfg, &state, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "the host passed no oc_host_api"), "%s", err);
    oc_host_api other = api;
    other.log = NULL;
    ck_assert_int_eq(pl->init(&other, cfg, &state, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "has a NULL function"), "%s", err);
    ck_assert_int_eq(pl->init(&api, cfg, NULL, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "init needs a place to store its state"), "%s", err);
    ck_assert_ptr_null(state);
    H.refuse_hook = 3;
    ck_assert_int_eq(pl->init(&api, cfg, &state, err, sizeof err), OC_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err, "the host refused a hook registration (OC_ERR_UNSUPPORTED)"), "%s",
                  err);
    ck_assert_ptr_null(state);
    ck_assert_msg(strstr(H.logs.text ? H.logs.text : "", "hooks: the host refused hook"), "%s",
                  H.logs.text ? H.logs.text : "");
    H.refuse_hook = 0;
    H.hooks = 0;
    H.refuse_tools = 1;
    ck_assert_int_eq(pl->init(&api, cfg, &state, err, sizeof err), OC_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err, "the host refused a tool registration (OC_ERR_UNSUPPORTED)"), "%s",
                  err);
    ck_assert_ptr_null(state);
    H.refuse_tools = 0;
    pl->shutdown(NULL); /* nothing to shut down */
    dg_core_free(NULL);
    /* A bare instance: no log queue to pump, the wall clock as its clock. */
    dg_plugin bare;
    memset(&bare, 0, sizeof bare);
    ck_assert_int_eq(dg_log_pump_start(&bare), OC_ERR_INVALID);
    int64_t wall = dg_wall_clock_ms(NULL), now = dg_now_ms(&bare);
    ck_assert(now >= wall && now - wall < 60 * 1000);
    /* A PostgreSQL store that cannot be reached (nothing listens on port 1):
     * init fails naming the store. */
    json_t *pgcfg =
        tu_json("{\"noReplyProvider\":\"noreply\",\"noReplyModel\":\"no-reply\","
                "\"store\":{\"url\":\"postgresql://dg@127.0.0.1:1/dg?connect_timeout=5\"},"
                "\"discord\":{\"moderatorUserId\":\"1000000000000000001\"},"
                "\"agents\":{\"planner\":{\"discordUserId\":\"2001\"}}}");
    ck_assert_int_eq(pl->init(&api, pgcfg, &state, err, sizeof err), OC_ERR_IO);
    ck_assert_ptr_null(state);
    ck_assert_msg(strstr(err, "store") || strstr(err, "PostgreSQL"), "%s", err);
    json_decref(pgcfg);
    /* The host works again: init succeeds on the same database. */
    ck_assert_int_eq(pl->init(&api, cfg, &state, err, sizeof err), OC_OK);
    pl->shutdown(state);
    json_decref(cfg);
    free(db);
}
END_TEST

START_TEST(test_init_shutdown_cycles)
{
    char *db = tu_path(dir, "c.db");
    json_t *cfg = config_with(db, ",\"moderatorToken\":\"x\"");
    const oc_plugin *pl = oc_plugin_entry();
    for (int i = 0; i < 5; i++) {
        void *state = NULL;
        char err[512] = "";
        ck_assert_msg(pl->init(&api, cfg, &state, err, sizeof err) == OC_OK, "cycle %d: %s", i,
                      err);
        pl->shutdown(state);
    }
    json_decref(cfg);
    free(db);
}
END_TEST

START_TEST(test_tiny_err_buffer_is_safe)
{
    json_t *cfg = tu_json("{\"bogusKeyWithALongName\":1}");
    void *state = NULL;
    char err[4] = "xyz";
    ck_assert_int_eq(oc_plugin_entry()->init(&api, cfg, &state, err, sizeof err), OC_ERR_INVALID);
    ck_assert_uint_le(strlen(err), 3);
    ck_assert_int_eq(oc_plugin_entry()->init(&api, cfg, &state, NULL, 0), OC_ERR_INVALID);
    json_decref(cfg);
}
END_TEST

/*
 * init once per allocation it makes, that allocation failing: each of the
 * plugin's and jansson's, then every SQLITE_STRIDE-th of SQLite's; on a new
 * database (fresh = 1: the schema is created) or on one made by an earlier
 * init. Each refusal is a status with a reason in err and no state; the
 * process neither crashes nor leaks (SANITIZE=1); and an init after the
 * failure works.
 */
#define SQLITE_STRIDE 37

static void init_oom_pass(int fresh, int sqlite, json_t *cfg, const char *db, int *refused)
{
    const oc_plugin *pl = oc_plugin_entry();
    for (long n = 1; n < 1000000; n += sqlite ? SQLITE_STRIDE : 1) {
        if (fresh)
            unlink(db);
        void *state = NULL;
        char err[512] = "";
        if (sqlite)
            fa_arm_sqlite(n);
        else
            fa_arm_own(n);
        int rc = pl->init(&api, cfg, &state, err, sizeof err);
        int hit = fa_disarm();
        if (rc == OC_OK) {
            pl->shutdown(state);
        } else {
            (*refused)++;
            ck_assert_ptr_null(state);
            ck_assert_msg(err[0] != '\0', "allocation %ld: status %d without a reason", n, rc);
            ck_assert_msg(rc == OC_ERR_NOMEM || rc == OC_ERR_IO || rc == OC_ERR_INTERNAL,
                          "allocation %ld: status %d (%s)", n, rc, err);
            /* The next start is not hindered by what the failed one left. */
            if (fresh)
                unlink(db);
            ck_assert_msg(pl->init(&api, cfg, &state, err, sizeof err) == OC_OK,
                          "after allocation %ld failed: %s", n, err);
            pl->shutdown(state);
        }
        if (!hit)
            break;
    }
}

static void init_oom_sweep(int fresh)
{
    ck_assert_msg(fa_available(), "check_all was linked without the allocation wrappers");
    fa_install(); /* before the first database of this process: SQLite counted */
    char *db = tu_path(dir, "oom.db");
    char *tpl = realpath("templates", NULL);
    ck_assert_ptr_nonnull(tpl);
    char extra[1024];
    snprintf(extra, sizeof extra,
             ",\"moderatorToken\":\"x\"},\"templatesDir\":\"%s\","
             "\"discussion\":{\"reminderAfterSec\":600",
             tpl);
    json_t *cfg = config_with(db, extra);
    if (!fresh) {
        void *state = NULL;
        char err[512] = "";
        ck_assert_msg(oc_plugin_entry()->init(&api, cfg, &state, err, sizeof err) == OC_OK, "%s",
                      err);
        oc_plugin_entry()->shutdown(state);
    }
    int own = 0, sq = 0;
    init_oom_pass(fresh, 0, cfg, db, &own);
    init_oom_pass(fresh, 1, cfg, db, &sq);
    ck_assert_int_gt(own, 10);
    if (fa_sqlite_hooked())
        ck_assert_int_gt(sq, 10);
    json_decref(cfg);
    free(tpl);
    free(db);
}

START_TEST(test_init_out_of_memory_new_db)
{
    init_oom_sweep(1);
}
END_TEST

START_TEST(test_init_out_of_memory_existing_db)
{
    init_oom_sweep(0);
}
END_TEST

/*
 * Not reached by any test (make coverage):
 *  - core.c:dg_core_new (the fallback reason when a failed step left no
 *    text: every step that fails here writes one), dg_plugin_settle (a
 *    second settle racing the first; the log pump's pthread_create failing).
 *  - log.c:pump (the loop's head is its only exit path in gcov's count),
 *    dg_log_pump_start (pthread_create failing), enqueue (a line after the
 *    pump stopped, and a full queue of LOG_QUEUE_CAP lines: the pump drains
 *    faster than a test can fill it without stalling the host thread).
 */

Suite *make_plugin_suite(void)
{
    Suite *s = suite_create("plugin");
    TCase *tc = tcase_create("plugin");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_entry_table);
    tcase_add_test(tc, test_init_registers_manifest_contracts);
    tcase_add_test(tc, test_bad_config_fails_init_and_creates_nothing);
    tcase_add_test(tc, test_missing_db_folder_is_created);
    tcase_add_test(tc, test_unusable_db_path_fails_init_with_clear_message);
    tcase_add_test(tc, test_newer_schema_fails_init);
    tcase_add_test(tc, test_token_never_logged);
    tcase_add_test(tc, test_host_of_other_major_refused);
    tcase_add_test(tc, test_host_refusals_fail_init_cleanly);
    tcase_add_test(tc, test_core_runs_on_a_host_table_of_its_own);
    tcase_add_test(tc, test_init_shutdown_cycles);
    tcase_add_test(tc, test_tiny_err_buffer_is_safe);
    suite_add_tcase(s, tc);
    TCase *oom = tcase_create("oom");
    tcase_add_checked_fixture(oom, setup, teardown);
    tcase_set_timeout(oom, 600);
    tcase_add_test(oom, test_init_out_of_memory_new_db);
    tcase_add_test(oom, test_init_out_of_memory_existing_db);
    suite_add_tcase(s, oom);
    return s;
}
