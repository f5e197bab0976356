/*
 * check_templates.c -- embedded templates, templatesDir overrides,
 * placeholder validation, and plain single-pass substitution; plus the
 * same through the real build/dirigent.so (embedded texts inside it; a
 * templates folder with an unknown placeholder fails init).
 */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "openclaw/plugin.h"
#include "templates.h"
#include "failalloc.h"
#include "testutil.h"

static char *dir;
static char err[1024];

static void setup(void)
{
    dir = tu_mkdtemp();
    err[0] = '\0';
}

static void teardown(void)
{
    tu_rmtree(dir);
    free(dir);
}

static void put(const char *name, const char *text)
{
    char *p = tu_path(dir, name);
    ck_assert_int_eq(tu_write_file(p, text), 0);
    free(p);
}

static const dg_tpl_vars story = {
    .discussGuide = "Agree on the callback design.",
    .initiatorMention = "<@2001>",
    .participantMentions = "<@2002> <@2003>",
    .summaryPath = "plans/discussions/csm.md",
    .discussionChannel = "<#900>",
    .originChannel = "<#100>",
    .status = "completed",
};

static void has(const char *text, const char *needle)
{
    ck_assert_msg(strstr(text, needle) != NULL, "expected \"%s\" in:\n%s", needle, text);
}

START_TEST(test_embedded_set)
{
    dg_templates *t = NULL;
    ck_assert_int_eq(dg_templates_load(NULL, &t, err, sizeof err), OC_OK);
    const char *names[] = {"kickoff.md", "idle.md", "closed.md", "result.md", "rest.md"};
    for (size_t i = 0; i < 5; i++) {
        const char *raw = dg_templates_get(t, names[i]);
        ck_assert_msg(raw && *raw, "embedded %s missing", names[i]);
        ck_assert_int_eq(dg_templates_check_text(names[i], raw, err, sizeof err), OC_OK);
    }
    ck_assert_ptr_null(dg_templates_get(t, "nope.md"));
    ck_assert_ptr_null(dg_templates_render(t, "nope.md", &story));
    dg_templates_free(t);
}
END_TEST

/* The default texts say what seed sections 7 and 9 require. */
START_TEST(test_default_texts)
{
    dg_templates *t = NULL;
    ck_assert_int_eq(dg_templates_load(NULL, &t, err, sizeof err), OC_OK);
    char *k = dg_templates_render(t, "kickoff.md", &story);
    has(k, "[Discussion Started]");
    has(k, "Goal:\nAgree on the callback design."); /* the goal */
    has(k, "Discuss only the topic above");         /* the rules */
    has(k, "Only the discussion initiator (<@2001>) may finish this discussion");
    has(k, "write a summary document to a file"); /* how it ends */
    has(k, "call the tool: discuss-callback");
    has(k, "this channel will be closed"); /* after the callback */
    has(k, "further discussion messages will be ignored");
    has(k, "archive");
    has(k, "<#100> will be notified with the summary file path");
    has(k, "<@2002> <@2003>");
    free(k);

    char *i = dg_templates_render(t, "idle.md", &story);
    has(i, "[Discussion Idle]");
    has(i, "<@2001>");
    has(i, "discuss-callback");
    has(i, "continue the discussion");
    free(i);

    char *c = dg_templates_render(t, "closed.md", &story);
    has(c, "[Channel Closed]");
    has(c, "archive/reference only");
    free(c);

    char *r = dg_templates_render(t, "result.md", &story);
    has(r, "[Discussion Result Ready]");
    has(r, "<@2001>");
    has(r, "plans/discussions/csm.md");           /* the summary path */
    has(r, "Source discussion channel:\n<#900>"); /* the source channel */
    has(r, "Status:\ncompleted");
    has(r, "Continue the original task");
    free(r);

    /* The loop guard's notice, the text it had before it was a template. */
    dg_tpl_vars lim = {.maxAgentMessages = "12"};
    char *z = dg_templates_render(t, "rest.md", &lim);
    ck_assert_str_eq(z, "[Turn Manager]\n\n12 agent messages in a row without a human. This "
                        "conversation is paused: the agents stay silent here until a human "
                        "writes.\n");
    free(z);
    dg_templates_free(t);
}
END_TEST

START_TEST(test_values_inert)
{
    put("result.md", "A {summaryPath} B {discussGuide} C {status}\n");
    dg_templates *t = NULL;
    ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_OK);
    dg_tpl_vars v = {
        .discussGuide = "@everyone <@123> {summaryPath} {status} {nope}",
        .summaryPath = "{discussGuide}",
        .status = NULL,
    };
    char *r = dg_templates_render(t, "result.md", &v);
    ck_assert_str_eq(r, "A {discussGuide} B @everyone <@123> {summaryPath} {status} {nope} C \n");
    free(r);
    dg_templates_free(t);
}
END_TEST

START_TEST(test_literal_braces)
{
    put("closed.md", "{} { status } {\"summaryPath\": 1} {a_b} {status {{status}} }{ {7}\n");
    dg_templates *t = NULL;
    ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_OK);
    dg_tpl_vars v = {.status = "S"};
    char *r = dg_templates_render(t, "closed.md", &v);
    ck_assert_str_eq(r, "{} { status } {\"summaryPath\": 1} {a_b} {status {S} }{ {7}\n");
    free(r);
    dg_templates_free(t);
}
END_TEST

START_TEST(test_override_by_name)
{
    put("kickoff.md", "Custom kickoff for {participantMentions}: {discussGuide}\n");
    put("notes.txt", "ignored: not a .md file {whatever}\n");
    dg_templates *t = NULL;
    ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_OK);
    char *k = dg_templates_render(t, "kickoff.md", &story);
    ck_assert_str_eq(k, "Custom kickoff for <@2002> <@2003>: Agree on the callback design.\n");
    free(k);
    /* The others stay the embedded ones. */
    char *r = dg_templates_render(t, "result.md", &story);
    has(r, "[Discussion Result Ready]");
    free(r);
    dg_templates_free(t);
}
END_TEST

/* The replies to `!dirigent` commands are templates like the others: an
 * override replaces one, the reply text loses its final line break, a
 * placeholder it never receives or an empty file is refused at load. */
START_TEST(test_admin_replies_are_templates)
{
    put("admin_wake.md", "Up you get, {agentMention}.\n\n");
    dg_templates *t = NULL;
    ck_assert_msg(dg_templates_load(dir, &t, err, sizeof err) == OC_OK, "%s", err);
    dg_tpl_vars v = {.agentMention = "<@2002>"};
    char *w = dg_templates_render_trim(t, "admin_wake.md", &v);
    ck_assert_str_eq(w, "Up you get, <@2002>.");
    free(w);
    char *r = dg_templates_render_trim(t, "admin_rest.md", &v); /* the embedded one */
    ck_assert_str_eq(r, "resting now; no agent takes a turn here until the next message.");
    free(r);
    dg_templates_free(t);

    put("admin_wake.md", "Up you get.\n");
    put("admin_rest.md", "Resting, {agentMention}.\n");
    ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_ERR_INVALID);
    has(err, "admin_rest.md");
    has(err, "{agentMention}");
    put("admin_rest.md", " \n");
    ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_ERR_INVALID);
    has(err, "admin_rest.md is empty");
}
END_TEST

START_TEST(test_unknown_placeholder)
{
    put("idle.md", "Hello {initiatorMention}, see {sumaryPath}.\n");
    dg_templates *t = (dg_templates *)1;
    ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_ERR_INVALID);
    ck_assert_ptr_null(t);
    has(err, "idle.md");
    has(err, "{sumaryPath}");
    ck_assert_int_eq(dg_templates_check_text("x.md", "{Status}", err, sizeof err),
                     OC_ERR_INVALID); /* names are case-sensitive */
}
END_TEST

START_TEST(test_unknown_template_name)
{
    put("kickof.md", "typo\n");
    dg_templates *t = NULL;
    ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_ERR_INVALID);
    has(err, "kickof.md");
    has(err, "kickoff.md"); /* the known names are listed */
}
END_TEST

START_TEST(test_bad_dir_and_files)
{
    dg_templates *t = NULL;
    char *missing = tu_path(dir, "missing");
    ck_assert_int_ne(dg_templates_load(missing, &t, err, sizeof err), OC_OK);
    has(err, "missing");
    free(missing);

    char *sub = tu_path(dir, "closed.md");
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    ck_assert_int_ne(dg_templates_load(dir, &t, err, sizeof err), OC_OK);
    has(err, "closed.md");
    ck_assert_int_eq(rmdir(sub), 0);
    ck_assert_int_eq(mkfifo(sub, 0644), 0); /* must not block on a FIFO */
    ck_assert_int_ne(dg_templates_load(dir, &t, err, sizeof err), OC_OK);
    has(err, "not a regular file");
    free(sub);
}
END_TEST

START_TEST(test_unreadable_large_and_nul_files)
{
    /* Each refused by name with the reason, and nothing loaded. */
    dg_templates *t = NULL;
    char *p = tu_path(dir, "closed.md");
    ck_assert_int_eq(symlink("/nonexistent/closed.md", p), 0); /* dangling */
    ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_ERR_IO);
    has(err, "cannot open closed.md");
    ck_assert_ptr_null(t);
    /* No place for the reason: still refused. */
    ck_assert_int_eq(dg_templates_load(dir, &t, NULL, 0), OC_ERR_IO);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(unlink(p), 0);

    size_t big = 64 * 1024 + 1; /* templates.c: DG_TPL_MAX_BYTES + 1 */
    char *text = malloc(big + 1);
    ck_assert_ptr_nonnull(text);
    memset(text, 'x', big);
    text[big] = '\0';
    ck_assert_int_eq(tu_write_file(p, text), 0);
    free(text);
    ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_ERR_INVALID);
    has(err, "over the limit");
    ck_assert_ptr_null(t);

    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fwrite("Closed.\0hidden", 1, 14, f), 14);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_ERR_INVALID);
    has(err, "closed.md contains a NUL byte");
    ck_assert_ptr_null(t);
    free(p);

    ck_assert_ptr_null(dg_templates_get(NULL, "closed.md"));
    ck_assert_int_eq(dg_templates_load(NULL, &t, err, sizeof err), OC_OK);
    ck_assert_ptr_null(dg_templates_get(t, NULL));
    ck_assert_ptr_null(dg_templates_render(t, "no-such.md", &story));
    dg_templates_free(t);
}
END_TEST

START_TEST(test_blank_moderator_template_refused)
{
    /* An empty moderator message can never be posted (Discord refuses
     * empty content): say so at init instead of failing every discussion. */
    const char *names[] = {"kickoff.md", "idle.md", "closed.md", "result.md", "rest.md"};
    for (size_t i = 0; i < 5; i++) {
        char *f = tu_path(dir, names[i]);
        ck_assert_int_eq(tu_write_file(f, i % 2 ? "" : " \n\t\n"), 0);
        dg_templates *t = NULL;
        ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_ERR_INVALID);
        ck_assert_ptr_null(t);
        has(err, names[i]);
        has(err, "empty");
        ck_assert_int_eq(unlink(f), 0);
        free(f);
    }
    /* The prompt texts may be blanked on purpose: nothing is appended. */
    char *f = tu_path(dir, "session_model_channel.md");
    ck_assert_int_eq(tu_write_file(f, ""), 0);
    dg_templates *t = NULL;
    ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_OK);
    dg_templates_free(t);
    free(f);
}
END_TEST

/* A known placeholder a template is never rendered with is an init error,
 * naming the template, the placeholder and what the template receives;
 * it must not reach the posted text (as "{discussGuide}", say). */
START_TEST(test_placeholder_the_template_never_receives)
{
    static const struct {
        const char *file, *text, *gets;
    } cases[] = {
        {"rest.md", "Resting; see {discussGuide}\n", "{maxAgentMessages}"},
        {"closed.md", "closed by {initiatorMention}\n", "{discussionChannel} {status}"},
        {"kickoff.md", "{summaryPreview}\n", "{discussGuide}"},
        {"idle.md", "{summaryTemplate}\n", "{summaryPath}"},
        {"session_model_thread.md", "{status}\n", "no placeholders"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *f = tu_path(dir, cases[i].file);
        ck_assert_int_eq(tu_write_file(f, cases[i].text), 0);
        dg_templates *t = (dg_templates *)1;
        ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_ERR_INVALID);
        ck_assert_ptr_null(t);
        has(err, cases[i].file);
        has(err, "is never filled");
        has(err, cases[i].gets);
        ck_assert_int_eq(unlink(f), 0);
        free(f);
    }
}
END_TEST

START_TEST(test_override_symlink_allowed)
{
    char *real = tu_path(dir, "real.txt"), *lnk = tu_path(dir, "closed.md");
    ck_assert_int_eq(tu_write_file(real, "closed: {discussionChannel}\n"), 0);
    ck_assert_int_eq(symlink(real, lnk), 0);
    dg_templates *t = NULL;
    ck_assert_int_eq(dg_templates_load(dir, &t, err, sizeof err), OC_OK);
    char *c = dg_templates_render(t, "closed.md", &story);
    ck_assert_str_eq(c, "closed: <#900>\n");
    free(c);
    dg_templates_free(t);
    free(real);
    free(lnk);
}
END_TEST

/* ---- through the real .so ---------------------------------------------------- */

static int h_register_tool(oc_host *h, const oc_tool *t)
{
    (void)h;
    (void)t;
    return OC_OK;
}
static int h_on(oc_host *h, const char *n, oc_hook_fn f, int p)
{
    (void)h;
    (void)n;
    (void)f;
    (void)p;
    return OC_OK;
}
static int h_patch(oc_host *h, const char *k, const char *p, const char *m)
{
    (void)h;
    (void)k;
    (void)p;
    (void)m;
    return OC_OK;
}
static json_t *h_list(oc_host *h, const char *c)
{
    (void)h;
    (void)c;
    return json_array();
}
static void h_log(oc_host *h, int l, const char *m)
{
    (void)h;
    (void)l;
    (void)m;
}

static const oc_host_api so_api = {
    .abi_major = OC_ABI_MAJOR,
    .abi_minor = OC_ABI_MINOR,
    .struct_size = sizeof(oc_host_api),
    .register_tool = h_register_tool,
    .on = h_on,
    .session_patch = h_patch,
    .sessions_list = h_list,
    .log = h_log,
};

static int so_init(const char *templates_dir, char *e, size_t elen)
{
    char *so = tu_path(tu_build_dir(), "dirigent.so");
    void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(lib != NULL, "dlopen %s: %s", so, dlerror());
    oc_plugin_entry_fn entry = (oc_plugin_entry_fn)(uintptr_t)dlsym(lib, OC_PLUGIN_ENTRY_SYMBOL);
    ck_assert_ptr_nonnull((void *)(uintptr_t)entry);
    const oc_plugin *pl = entry();
    char *db = tu_path(dir, "state.db");
    char text[2048];
    snprintf(text, sizeof text,
             "{\"noReplyProvider\":\"noreply\",\"noReplyModel\":\"no-reply\",\"dbPath\":\"%s\","
             "%s%s%s"
             "\"discord\":{\"moderatorUserId\":\"1000000000000000001\"},"
             "\"agents\":{\"planner\":{\"discordUserId\":\"2001\"}}}",
             db, templates_dir ? "\"templatesDir\":\"" : "", templates_dir ? templates_dir : "",
             templates_dir ? "\"," : "");
    json_t *cfg = tu_json(text);
    void *state = NULL;
    unsetenv("DIRIGENT_MODERATOR_TOKEN");
    int rc = pl->init(&so_api, cfg, &state, e, elen);
    if (rc == OC_OK)
        pl->shutdown(state);
    else
        ck_assert_ptr_null(state);
    json_decref(cfg);
    free(db);
    dlclose(lib);
    free(so);
    return rc;
}

START_TEST(test_so_embeds_templates)
{
    /* The texts are inside the .so itself: it works with no file beside it. */
    char *so = tu_path(tu_build_dir(), "dirigent.so");
    FILE *f = fopen(so, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    const char *needles[] = {"[Discussion Started]",      "[Discussion Idle]", "[Channel Closed]",
                             "[Discussion Result Ready]", "kickoff.md",        "result.md"};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
        ck_assert_msg(memmem(buf, (size_t)n, needles[i], strlen(needles[i])),
                      "%s not embedded in %s", needles[i], so);
    free(buf);
    free(so);
    char e[512] = "";
    ck_assert_msg(so_init(NULL, e, sizeof e) == OC_OK, "init: %s", e);
}
END_TEST

START_TEST(test_so_unknown_placeholder_fails_init)
{
    put("result.md", "Result: {summaryPath} from {discussionChanel}\n");
    char e[512] = "";
    int rc = so_init(dir, e, sizeof e);
    ck_assert_int_eq(rc, OC_ERR_INVALID);
    has(e, "result.md");
    has(e, "{discussionChanel}");
    /* A valid override folder is accepted. */
    put("result.md", "Result: {summaryPath} from {discussionChannel}\n");
    ck_assert_msg(so_init(dir, e, sizeof e) == OC_OK, "init: %s", e);
}
END_TEST

/* Loading the templates folder and rendering, with each allocation failing
 * in turn (failalloc.h): OC_ERR_NOMEM or NULL, never a crash or a leak
 * (SANITIZE=1). */
START_TEST(test_out_of_memory)
{
    ck_assert(fa_available());
    dg_tpl_vars vars;
    memset(&vars, 0, sizeof vars);
    long n;
    for (n = 1; n < 100000; n++) {
        dg_templates *t = NULL;
        char why[256] = "";
        fa_arm_own(n);
        int rc = dg_templates_load("templates", &t, why, sizeof why);
        char *out = rc == OC_OK ? dg_templates_render(t, "kickoff.md", &vars) : NULL;
        int hit = fa_disarm();
        ck_assert_msg(rc == OC_OK || rc == OC_ERR_NOMEM, "allocation %ld: %d (%s)", n, rc, why);
        ck_assert(rc == OC_OK || t == NULL);
        free(out);
        dg_templates_free(t);
        if (!hit) {
            ck_assert_int_eq(rc, OC_OK);
            break;
        }
    }
    ck_assert_int_gt(n, 10);
}
END_TEST

/*
 * Not reached by any test (make coverage), each an error path:
 * templates.c:read_override (read() failing or interrupted on a regular
 * file that fstat accepted: only a failing device does that),
 * load_overrides (fdopendir failing on a descriptor open() just opened as
 * a folder: out of memory inside libc), dg_templates_load (an embedded
 * template failing its own check: the build checks them, see
 * test_embedded_set).
 */

Suite *make_templates_suite(void)
{
    Suite *s = suite_create("templates");
    TCase *tc = tcase_create("templates");
    tcase_add_test(tc, test_out_of_memory);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_embedded_set);
    tcase_add_test(tc, test_default_texts);
    tcase_add_test(tc, test_values_inert);
    tcase_add_test(tc, test_literal_braces);
    tcase_add_test(tc, test_override_by_name);
    tcase_add_test(tc, test_admin_replies_are_templates);
    tcase_add_test(tc, test_unknown_placeholder);
    tcase_add_test(tc, test_unknown_template_name);
    tcase_add_test(tc, test_bad_dir_and_files);
    tcase_add_test(tc, test_unreadable_large_and_nul_files);
    tcase_add_test(tc, test_blank_moderator_template_refused);
    tcase_add_test(tc, test_placeholder_the_template_never_receives);
    tcase_add_test(tc, test_override_symlink_allowed);
    tcase_add_test(tc, test_so_embeds_templates);
    tcase_add_test(tc, test_so_unknown_placeholder_fails_init);
    suite_add_tcase(s, tc);
    return s;
}
