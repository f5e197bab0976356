/*
 * check_demo_slack.c -- the reference gateway on Slack and `make demo
 * PLATFORM=slack`:
 *   - pieces (libocgw.a against the in-process fake Slack): a poll reads
 *     top-level messages and thread replies in the order posted, up to the
 *     bound its history read makes safe, and a later reply under an old
 *     parent; Slack message objects become the gateway's messages (ts,
 *     thread_ts, <@U...|name> mentions); ids of both platforms compare by
 *     value; the host config's `slack` block and its refusals;
 *   - the story (build/ocgw with the real build/dirigent.so as a
 *     subprocess, the fake Slack in this process): demo/slack-host.json
 *     with demo/slack-story.json completes, and the fake's own record shows
 *     it (the moderator's posts by its token, hand-offs, a private channel
 *     archived at the callback, the thread replies); the same gateway
 *     given a story that did not happen fails naming the difference;
 *   - ocgw --check asks Slack whose the moderator's token is;
 *   - make demo PLATFORM=slack (demo/slack.sh) exits 0 with its summary.
 * Every wait is bounded; nothing but 127.0.0.1.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_util.h"
#include "fake_slack.h"
#include "ocgw.h"
#include "testutil.h"

/* The ids and tokens of demo/slack-host.json and demo/slack.sh. */
#define S_WORK "C0WORK0001"
#define S_MOD "U0MODERATR"
#define S_PLANNER "U0PLANNE1"
#define S_REVIEWER "U0REVIEW2"
#define S_CODER "U0CODER03"
#define S_ALICE "U0ALICE04"

static const char *sget(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* ---- pieces --------------------------------------------------------------------------------- */

static fake_slack *start_fake(void)
{
    fake_slack *fs = NULL;
    char err[256];
    ck_assert_msg(fake_slack_start(NULL, &fs, err, sizeof err) == 0, "%s", err);
    return fs;
}

static void add_user(fake_slack *fs, const char *id, const char *name, const char *token, int bot)
{
    fake_slack_user_spec u = {.user_id = id, .name = name, .token = token, .bot = bot};
    ck_assert_int_eq(fake_slack_add_user(fs, &u), 0);
}

static void free_msgs(ocgw_msg *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ocgw_msg_free(&m[i]);
    free(m);
}

START_TEST(poll_reads_threads_in_posting_order_up_to_its_bound)
{
    fake_slack *fs = start_fake();
    add_user(fs, "U0READER1", "reader", "xoxb-reader", 1);
    add_user(fs, "U0HUMAN01", "human", NULL, 0);
    const char *members[] = {"U0READER1", "U0HUMAN01", NULL};
    ck_assert_int_eq(fake_slack_add_channel(fs, "C0POLL0001", "poll", 0, members, NULL), 0);
    char t1[24], t2[24], t3[24], t4[24], t5[24];
    ck_assert_int_eq(fake_slack_inject(fs, "C0POLL0001", "U0HUMAN01", "first", NULL, t1), 0);
    ck_assert_int_eq(
        fake_slack_inject(fs, "C0POLL0001", "U0HUMAN01", "reply <@U0READER1|reader>", t1, t2), 0);
    ck_assert_int_eq(fake_slack_inject(fs, "C0POLL0001", "U0HUMAN01", "second", NULL, t3), 0);
    ck_assert_int_eq(fake_slack_inject(fs, "C0POLL0001", "U0READER1", "late reply", t1, t4), 0);

    ocgw_slack *sc = NULL;
    char err[300];
    ck_assert_int_eq(ocgw_slack_new(fake_slack_url(fs), "xoxb-reader", 5000, &sc, err, sizeof err),
                     OC_OK);
    ocgw_msg *m = NULL;
    size_t n = 0;
    char bound[32];
    ocgw_slack_err e;
    ck_assert_int_eq(ocgw_slack_poll(sc, "C0POLL0001", "0", &m, &n, bound, sizeof bound, &e),
                     OC_OK);
    /* Posting order across the thread and the channel; replies carry their
     * parent, top-level messages none. */
    ck_assert_uint_eq(n, 4);
    const char *want[] = {t1, t2, t3, t4};
    for (size_t i = 0; i < 4; i++)
        ck_assert_str_eq(m[i].id, want[i]);
    ck_assert_ptr_null(m[0].thread_id);
    ck_assert_str_eq(m[1].thread_id, t1);
    ck_assert_ptr_null(m[2].thread_id);
    ck_assert_str_eq(m[3].thread_id, t1);
    ck_assert_str_eq(m[1].author_id, "U0HUMAN01");
    ck_assert(!m[1].author_bot);
    ck_assert_uint_eq(m[1].n_mentions, 1);
    ck_assert_str_eq(m[1].mentions[0], "U0READER1");
    ck_assert_str_eq(bound, t4);
    free_msgs(m, n);

    /* Nothing new after the bound; then a reply under the oldest parent
     * is found, and only it. */
    ck_assert_int_eq(ocgw_slack_poll(sc, "C0POLL0001", bound, &m, &n, bound, sizeof bound, &e),
                     OC_OK);
    ck_assert_uint_eq(n, 0);
    free(m);
    ck_assert_int_eq(fake_slack_inject(fs, "C0POLL0001", "U0HUMAN01", "much later", t1, t5), 0);
    ck_assert_int_eq(ocgw_slack_poll(sc, "C0POLL0001", t4, &m, &n, bound, sizeof bound, &e), OC_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(m[0].id, t5);
    ck_assert_str_eq(m[0].thread_id, t1);
    free_msgs(m, n);

    /* The newest ts of the channel is the newest reply. */
    char latest[32];
    ck_assert_int_eq(ocgw_slack_latest(sc, "C0POLL0001", latest, sizeof latest, &e), OC_OK);
    ck_assert_str_eq(latest, t5);

    /* A channel the reader is not in: Slack's own refusal, not retried. */
    const char *others[] = {"U0HUMAN01", NULL};
    ck_assert_int_eq(fake_slack_add_channel(fs, "C0ELSE0001", "else", 0, others, NULL), 0);
    ck_assert_int_eq(ocgw_slack_poll(sc, "C0ELSE0001", "0", &m, &n, bound, sizeof bound, &e),
                     OC_ERR_INVALID);
    ck_assert_str_eq(e.code, "not_in_channel");
    ck_assert(!e.retryable);
    /* A 429 is for later, and the token never shows in a message. */
    ck_assert_int_eq(fake_slack_add_fault(fs, "conversations.history", FS_FAULT_429, 1, 1, 0, NULL),
                     0);
    ck_assert_int_eq(ocgw_slack_poll(sc, "C0POLL0001", "0", &m, &n, bound, sizeof bound, &e),
                     OC_ERR_IO);
    ck_assert(e.retryable);
    ck_assert(!strstr(e.message, "xoxb-reader"));
    ocgw_slack_free(sc);
    fake_slack_stop(fs);
}
END_TEST

START_TEST(posts_carry_thread_and_nonce)
{
    fake_slack *fs = start_fake();
    add_user(fs, "U0POSTER1", "poster", "xoxb-poster", 1);
    const char *members[] = {"U0POSTER1", NULL};
    ck_assert_int_eq(fake_slack_add_channel(fs, "C0POST0001", "post", 0, members, NULL), 0);
    ocgw_slack *sc = NULL;
    char err[300];
    ck_assert_int_eq(ocgw_slack_new(fake_slack_url(fs), "xoxb-poster", 5000, &sc, err, sizeof err),
                     OC_OK);
    char *top = NULL, *reply = NULL;
    ocgw_slack_err e;
    ck_assert_int_eq(
        ocgw_slack_post(sc, "C0POST0001", NULL, "top & <@U0POSTER1>", "a0001", &top, &e), OC_OK);
    ck_assert_int_eq(ocgw_slack_post(sc, "C0POST0001", top, "in the thread", "a0002", &reply, &e),
                     OC_OK);
    json_t *msgs = fake_slack_messages(fs, "C0POST0001");
    ck_assert_uint_eq(json_array_size(msgs), 2);
    json_t *m0 = json_array_get(msgs, 0), *m1 = json_array_get(msgs, 1);
    ck_assert_str_eq(sget(m0, "text"), "top & <@U0POSTER1>");
    ck_assert_str_eq(sget(m0, "ts"), top);
    ck_assert_str_eq(sget(m1, "thread_ts"), top);
    ck_assert_str_eq(sget(m1, "ts"), reply);
    /* A bot's post is a bot's message to the gateway. */
    ocgw_msg gm;
    ocgw_msg_from_slack(m1, "C0POST0001", &gm);
    ck_assert(gm.author_bot);
    ck_assert_str_eq(gm.author_id, "U0POSTER1");
    ck_assert_str_eq(gm.thread_id, top);
    ocgw_msg_free(&gm);
    json_t *meta = json_object_get(m1, "metadata");
    ck_assert_str_eq(sget(meta, "event_type"), "ocgw_post");
    ck_assert_str_eq(sget(json_object_get(meta, "event_payload"), "nonce"), "a0002");
    json_decref(msgs);
    /* Refused for good: an unknown channel. */
    ck_assert_int_eq(ocgw_slack_post(sc, "C0NONE0001", NULL, "x", "a0003", NULL, &e),
                     OC_ERR_INVALID);
    ck_assert_str_eq(e.code, "channel_not_found");
    free(top);
    free(reply);
    ocgw_slack_free(sc);
    fake_slack_stop(fs);
}
END_TEST

START_TEST(ids_of_both_platforms_compare_by_value)
{
    ck_assert_int_lt(ocgw_id_cmp("1712345678.000009", "1712345678.000010"), 0);
    ck_assert_int_gt(ocgw_id_cmp("1712345679.000001", "1712345678.999999"), 0);
    ck_assert_int_eq(ocgw_id_cmp("1712345678.123456", "1712345678.123456"), 0);
    ck_assert_int_lt(ocgw_id_cmp("0", "1712345678.123456"), 0);
    ck_assert_int_lt(ocgw_id_cmp("99999999999999999", "100000000000000000"), 0);
    ck_assert_int_gt(ocgw_id_cmp("300000000000000002", "300000000000000001"), 0);
    /* Mentions: Slack's with and without a label, Discord's still. */
    json_t *ids = ocgw_user_mentions("<@U0PLANNE1> and <@U0CODER03|coder>, <@12345> <@u0low>");
    ck_assert_uint_eq(json_array_size(ids), 3);
    ck_assert_str_eq(json_string_value(json_array_get(ids, 0)), "U0PLANNE1");
    ck_assert_str_eq(json_string_value(json_array_get(ids, 1)), "U0CODER03");
    ck_assert_str_eq(json_string_value(json_array_get(ids, 2)), "12345");
    json_decref(ids);
    ids = ocgw_channel_refs("see <#C0DISC0001> and <#C0WORK0001|work>");
    ck_assert_uint_eq(json_array_size(ids), 2);
    ck_assert_str_eq(json_string_value(json_array_get(ids, 1)), "C0WORK0001");
    json_decref(ids);
}
END_TEST

/* demo/slack-host.json with one change (a JSON pointer-ish edit by the
 * caller) loaded; returns the status, err filled. */
static int load_slack_config(void (*edit)(json_t *cfg), char *err, size_t n)
{
    setenv("OCGW_API_BASE", "http://127.0.0.1:9/api", 1);
    setenv("OCGW_STATE", "/tmp/ocgw-slack-config-state", 1);
    setenv("OCGW_WORK", "/tmp/ocgw-slack-config-work", 1);
    setenv("OCGW_PLUGINS", "/tmp/ocgw-slack-config-plugins", 1);
    setenv("DEMO_SLACK_PLANNER_TOKEN", "xoxb-p", 1);
    setenv("DEMO_SLACK_REVIEWER_TOKEN", "xoxb-r", 1);
    setenv("DEMO_SLACK_CODER_TOKEN", "xoxb-c", 1);
    setenv("DEMO_SLACK_ALICE_TOKEN", "xoxp-a", 1);
    json_t *cfg = json_load_file("demo/slack-host.json", 0, NULL);
    ck_assert_ptr_nonnull(cfg);
    if (edit)
        edit(cfg);
    /* Beside the demo's scenarios, so its relative paths hold. */
    char path[64];
    snprintf(path, sizeof path, "demo/.check-slack-%ld.json", (long)getpid());
    ck_assert_int_eq(json_dump_file(cfg, path, 0), 0);
    json_decref(cfg);
    ocgw_config c;
    err[0] = '\0';
    int rc = ocgw_config_load(path, &c, err, n);
    if (rc == OC_OK) {
        ck_assert(c.slack);
        ck_assert_str_eq(c.moderator_user_id, S_MOD);
        ck_assert_str_eq(ocgw_agent_by_id(&c, "reviewer")->user_id, S_REVIEWER);
        ck_assert_str_eq(ocgw_human_by_id(&c, "alice")->user_id, S_ALICE);
        ck_assert(c.humans[0].steps[2].in_thread);
        ocgw_config_free(&c);
    }
    unlink(path);
    return rc;
}

static void add_discord(json_t *cfg)
{
    json_object_set_new(cfg, "discord",
                        json_pack("{s:s}", "apiBase", "http://127.0.0.1:9/api/v10"));
}

static void discord_user_id(json_t *cfg)
{
    json_object_set_new(json_array_get(json_object_get(cfg, "agents"), 1), "slackUserId",
                        json_string("200000000000000012"));
}

static void lower_case_channel(json_t *cfg)
{
    json_object_set_new(json_object_get(json_object_get(cfg, "channels"), "work"), "id",
                        json_string("c0work0001"));
}

static void thread_as_channel(json_t *cfg)
{
    json_object_set_new(json_object_get(json_object_get(cfg, "channels"), "work"), "parentId",
                        json_string("C0WORK0002"));
}

static void thread_without_after(json_t *cfg)
{
    json_t *steps = json_object_get(json_array_get(json_object_get(cfg, "humans"), 0), "script");
    json_object_del(json_array_get(steps, 2), "after");
}

START_TEST(config_slack_block_and_its_refusals)
{
    char err[1024];
    ck_assert_msg(load_slack_config(NULL, err, sizeof err) == OC_OK, "%s", err);
    ck_assert_int_eq(load_slack_config(add_discord, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "discord, slack: a gateway serves one chat platform"), "%s", err);
    ck_assert_int_eq(load_slack_config(discord_user_id, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "agents[reviewer].slackUserId: expected a Slack user id"), "%s", err);
    ck_assert_int_eq(load_slack_config(lower_case_channel, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "channels.work.id: expected a Slack channel id"), "%s", err);
    ck_assert_int_eq(load_slack_config(thread_as_channel, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "channels.work.parentId: a Slack thread is not a channel"), "%s",
                  err);
    ck_assert_int_eq(load_slack_config(thread_without_after, err, sizeof err), OC_ERR_INVALID);
    ck_assert_msg(strstr(err, "humans[0].script[2].inThread"), "%s", err);
}
END_TEST

/* ---- the story ---------------------------------------------------------------------------- */

typedef struct story_run {
    char *dir;
    fake_slack *fs;
    pid_t gw;
    int starts;
} story_run;

/* The fake with the demo's users and channels (what demo/slack.sh gives
 * build/fake-slack), the run folder with the plugin folder. */
static void story_start(story_run *r)
{
    memset(r, 0, sizeof *r);
    r->dir = tu_mkdtemp();
    r->fs = start_fake();
    add_user(r->fs, S_MOD, "moderator", "xoxb-demo-moderator", 1);
    add_user(r->fs, S_PLANNER, "planner", "xoxb-demo-planner", 1);
    add_user(r->fs, S_REVIEWER, "reviewer", "xoxb-demo-reviewer", 1);
    add_user(r->fs, S_CODER, "coder", "xoxb-demo-coder", 1);
    add_user(r->fs, S_ALICE, "alice", "xoxp-demo-alice", 0);
    const char *work[] = {S_PLANNER, S_ALICE, S_MOD, NULL};
    ck_assert_int_eq(fake_slack_add_channel(r->fs, S_WORK, "work", 0, work, NULL), 0);
    char *plugins = tu_path(r->dir, "plugins/dirigent");
    ck_assert_int_eq(ocgw_mkdirs(plugins, 0755), 0);
    char *so = tu_path(tu_build_dir(), "dirigent.so");
    char *abs_so = realpath(so, NULL);
    ck_assert_ptr_nonnull(abs_so);
    char *link_to = tu_path(plugins, "dirigent.so"), *manifest = tu_path(plugins, "manifest.json");
    ck_assert_int_eq(symlink(abs_so, link_to), 0);
    char *text = ocgw_read_file("manifest.json", NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(tu_write_file(manifest, text), 0);
    free(text);
    free(plugins);
    free(so);
    free(abs_so);
    free(link_to);
    free(manifest);
}

static void story_stop(story_run *r)
{
    if (r->gw > 0) {
        kill(r->gw, SIGKILL);
        waitpid(r->gw, NULL, 0);
    }
    fake_slack_stop(r->fs);
    if (getenv("E2E_KEEP"))
        fprintf(stderr, "kept %s\n", r->dir);
    else
        tu_rmtree(r->dir);
    free(r->dir);
}

/* build/ocgw --config demo/slack-host.json --expect story --poll-ms 50
 * (plus the extra arguments), as demo/slack.sh runs it; waits up to
 * timeout_ms. Returns its exit status (-1: killed at the timeout). */
static int run_gateway_cfg(story_run *r, const char *config, const char *story, const char *extra,
                           long timeout_ms)
{
    char name[32];
    r->starts++;
    snprintf(name, sizeof name, "ocgw-%d.out", r->starts);
    char *out = tu_path(r->dir, name);
    snprintf(name, sizeof name, "ocgw-%d.err", r->starts);
    char *err = tu_path(r->dir, name);
    char *gw = tu_path(tu_build_dir(), "ocgw");
    char *state = tu_path(r->dir, "state"), *work = tu_path(r->dir, "work");
    char *plugins = tu_path(r->dir, "plugins");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
            _exit(126);
        setenv("OCGW_API_BASE", fake_slack_url(r->fs), 1);
        setenv("OCGW_STATE", state, 1);
        setenv("OCGW_WORK", work, 1);
        setenv("OCGW_PLUGINS", plugins, 1);
        setenv("DIRIGENT_SLACK_MODERATOR_TOKEN", "xoxb-demo-moderator", 1);
        setenv("DEMO_SLACK_PLANNER_TOKEN", "xoxb-demo-planner", 1);
        setenv("DEMO_SLACK_REVIEWER_TOKEN", "xoxb-demo-reviewer", 1);
        setenv("DEMO_SLACK_CODER_TOKEN", "xoxb-demo-coder", 1);
        setenv("DEMO_SLACK_ALICE_TOKEN", "xoxp-demo-alice", 1);
        unsetenv("OCGW_DIE_AT");
        unsetenv("SLACK_API_URL");
        execl(gw, gw, "--config", config, "--expect", story, "--poll-ms", "50",
              extra ? extra : (char *)NULL, (char *)NULL);
        _exit(127);
    }
    r->gw = pid;
    long t0 = e2e_now_ms();
    int st = 0, rc = -1;
    for (;;) {
        pid_t p = waitpid(pid, &st, WNOHANG);
        if (p == pid) {
            r->gw = 0;
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            break;
        }
        if (e2e_now_ms() - t0 >= timeout_ms)
            break;
        e2e_nap(20);
    }
    free(out);
    free(err);
    free(gw);
    free(state);
    free(work);
    free(plugins);
    return rc;
}

static int run_gateway(story_run *r, const char *story, const char *extra, long timeout_ms)
{
    return run_gateway_cfg(r, "demo/slack-host.json", story, extra, timeout_ms);
}

static int run_gateway_with(story_run *r, const char *config, const char *story, long timeout_ms)
{
    return run_gateway_cfg(r, config, story, NULL, timeout_ms);
}

static char *run_file(story_run *r, const char *name)
{
    char *p = tu_path(r->dir, name);
    char *text = ocgw_read_file(p, NULL);
    free(p);
    return text ? text : strdup("");
}

static void dump(story_run *r)
{
    char name[32];
    snprintf(name, sizeof name, "ocgw-%d.out", r->starts);
    char *out = run_file(r, name);
    snprintf(name, sizeof name, "ocgw-%d.err", r->starts);
    char *err = run_file(r, name);
    fprintf(stderr, "---- transcript ----\n%s\n---- log ----\n%s\n", out, err);
    free(out);
    free(err);
}

/* The gateway's verdict on the story ("== story FAILED: ... =="), so that a
 * failed check names its cause in the run's last lines. Caller frees. */
static char *story_verdict(story_run *r)
{
    char name[32];
    snprintf(name, sizeof name, "ocgw-%d.out", r->starts);
    char *out = run_file(r, name);
    const char *v = strstr(out, "== story ");
    char *line = strndup(v ? v : "(no verdict: the gateway ended before the story did)",
                         v ? strcspn(v, "\n") : 52);
    free(out);
    return line;
}

/* The discussion channel: the one private channel of the fake. */
static json_t *discussion_channel(story_run *r)
{
    json_t *all = fake_slack_channels(r->fs), *found = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(all, i, c)
        if (json_is_true(json_object_get(c, "is_private"))) {
            ck_assert_msg(!found, "more than one private channel was made");
            found = json_incref(c);
        }
    json_decref(all);
    ck_assert_msg(found != NULL, "no private channel was made");
    return found;
}

static int is_member(const json_t *ch, const char *user)
{
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(ch, "members"), i, u)
        if (!strcmp(json_string_value(u), user))
            return 1;
    return 0;
}

/* What the fake recorded of the story, checked on its own (not through
 * the gateway's story check). */
static void check_slack_record(story_run *r)
{
    json_t *disc = discussion_channel(r);
    const char *did = sget(disc, "id");
    ck_assert(is_member(disc, S_MOD) && is_member(disc, S_PLANNER) && is_member(disc, S_REVIEWER) &&
              is_member(disc, S_CODER));
    ck_assert_msg(json_is_true(json_object_get(disc, "is_archived")),
                  "the discussion channel was not archived at the callback");

    /* #work: alice, planner, the result, planner; then alice and planner in
     * the thread of planner's last top-level message. */
    json_t *work = fake_slack_messages(r->fs, S_WORK);
    ck_assert_uint_eq(json_array_size(work), 6);
    const char *authors[] = {S_ALICE, S_PLANNER, S_MOD, S_PLANNER, S_ALICE, S_PLANNER};
    for (size_t i = 0; i < 6; i++)
        ck_assert_str_eq(sget(json_array_get(work, i), "user"), authors[i]);
    const char *parent = sget(json_array_get(work, 3), "ts");
    for (size_t i = 0; i < 4; i++) {
        const char *th = sget(json_array_get(work, i), "thread_ts");
        ck_assert(!th || !strcmp(th, sget(json_array_get(work, i), "ts")));
    }
    ck_assert_str_eq(sget(json_array_get(work, 4), "thread_ts"), parent);
    ck_assert_str_eq(sget(json_array_get(work, 5), "thread_ts"), parent);
    ck_assert(strstr(sget(json_array_get(work, 2), "text"), "[Discussion Result Ready]"));
    json_decref(work);

    /* The discussion: the moderator's kickoff, two answers, the bare
     * hand-off <@U...> to the reviewer (the coder wrote the latest message:
     * no hand-off to it), the reminder; nothing after the callback archived
     * it (alice's late message was refused by Slack). */
    json_t *d = fake_slack_messages(r->fs, did);
    ck_assert_uint_eq(json_array_size(d), 5);
    ck_assert_str_eq(sget(json_array_get(d, 3), "user"), S_MOD);
    ck_assert(strstr(sget(json_array_get(d, 3), "text"), "<@" S_REVIEWER ">"));
    ck_assert(strstr(sget(json_array_get(d, 4), "text"), "[Discussion Idle]"));
    json_decref(d);

    /* Every moderator message was posted with the moderator's token, each
     * with its own outbox key; no agent token posted for the plugin. */
    json_t *all = fake_slack_messages(r->fs, NULL);
    size_t i, k, mods = 0;
    json_t *m, *o;
    json_array_foreach(all, i, m) {
        if (strcmp(sget(m, "user"), S_MOD))
            continue;
        mods++;
        json_t *meta = json_object_get(m, "metadata");
        const char *key = sget(json_object_get(meta, "event_payload"), "key");
        ck_assert_msg(key && !strcmp(sget(meta, "event_type"), "dirigent_outbox"),
                      "moderator message %s has no outbox key", sget(m, "ts"));
        json_array_foreach(all, k, o)
            if (k > i && !strcmp(sget(o, "user"), S_MOD))
                ck_assert_str_ne(
                    key,
                    sget(json_object_get(json_object_get(o, "metadata"), "event_payload"), "key"));
    }
    json_decref(all);
    size_t mod_posts = 0;
    json_t *reqs = fake_slack_requests(r->fs, 0);
    json_array_foreach(reqs, i, m)
        if (!strcmp(sget(m, "method"), "chat.postMessage") && sget(m, "userId") &&
            !strcmp(sget(m, "userId"), S_MOD) && json_is_true(json_object_get(m, "ok")))
            mod_posts++;
    json_decref(reqs);
    ck_assert_uint_eq(mod_posts, mods);
    ck_assert_uint_eq(mods, 4); /* no hand-off to the latest message's author */
    /* Every request not the moderator's is the gateway's, counted by it. */
    char *st = run_file(r, "state/ocgw-state.json");
    json_t *state = json_loads(st, 0, NULL);
    free(st);
    size_t not_mod = 0;
    reqs = fake_slack_requests(r->fs, 0);
    json_array_foreach(reqs, i, m)
        not_mod += !sget(m, "userId") || strcmp(sget(m, "userId"), S_MOD);
    json_decref(reqs);
    ck_assert_int_eq((long)not_mod, (long)json_integer_value(json_object_get(
                                        json_object_get(state, "totals"), "restRequests")));
    json_decref(state);
    json_decref(disc);
}

/* A post whose answer is lost (Slack stored it, the connection dropped) is
 * not posted again: the gateway finds it by the nonce in its metadata. The
 * story fails on a duplicate message, so its completing is the check. */
START_TEST(a_post_whose_answer_was_lost_is_found_not_posted_twice)
{
    story_run r;
    story_start(&r);
    ck_assert_int_eq(
        fake_slack_add_fault(r.fs, "chat.postMessage", FS_FAULT_DROP_AFTER, 3, 0, 0, NULL), 0);
    int rc = run_gateway(&r, "demo/slack-story.json", NULL, 90000);
    if (rc != 0) {
        dump(&r);
        char *v = story_verdict(&r);
        ck_assert_msg(rc == 0, "ocgw exit %d: %s", rc, v);
        free(v);
    }
    char *out = run_file(&r, "ocgw-1.out");
    ck_assert(strstr(out, "story complete"));
    free(out);
    story_stop(&r);
}
END_TEST

START_TEST(story_on_slack_completes_and_the_record_shows_it)
{
    story_run r;
    story_start(&r);
    int rc = run_gateway(&r, "demo/slack-story.json", NULL, 90000);
    if (rc != 0) {
        dump(&r);
        char *v = story_verdict(&r);
        ck_assert_msg(rc == 0, "ocgw exit %d: %s", rc, v);
        free(v);
    }
    char *out = run_file(&r, "ocgw-1.out");
    ck_assert(strstr(out, "story complete"));
    ck_assert(strstr(out, "claimed by before_agent_reply"));
    ck_assert(strstr(out, "coder <- discuss-callback OC_ERR_DENIED"));
    ck_assert(strstr(out, "planner <- discuss-callback OC_OK"));
    ck_assert(strstr(out, "moderator (moderator bot): [Discussion Idle]"));
    ck_assert(strstr(out, "in the thread") || strstr(out, " thread "));
    ck_assert(strstr(out, "alice (human, scripted): Slack refused the post: chat.postMessage: "
                          "Slack answered is_archived"));
    free(out);
    check_slack_record(&r);

    /* The same state and fake, stories that did not happen: each fails
     * naming the difference. */
    json_t *story = json_load_file("demo/slack-story.json", 0, NULL);
    ck_assert_ptr_nonnull(story);
    json_t *work = json_object_get(json_object_get(story, "channels"), "work");
    json_object_set_new(json_array_get(work, 1), "from", json_string("reviewer"));
    char *wrong = tu_path(r.dir, "wrong-story.json");
    ck_assert_int_eq(json_dump_file(story, wrong, 0), 0);
    rc = run_gateway(&r, wrong, NULL, 60000);
    out = run_file(&r, "ocgw-2.out");
    ck_assert_msg(rc == 1 && strstr(out, "story FAILED: #work message 2 from planner"), "%d %s", rc,
                  out);
    free(out);
    /* The thread reply taken for a top-level message. */
    json_object_set_new(json_array_get(work, 1), "from", json_string("planner"));
    json_object_del(json_array_get(work, 5), "inThread");
    ck_assert_int_eq(json_dump_file(story, wrong, 0), 0);
    rc = run_gateway(&r, wrong, NULL, 60000);
    out = run_file(&r, "ocgw-3.out");
    ck_assert_msg(rc == 1 && strstr(out, "#work message 6 from planner") &&
                      strstr(out, "is a thread reply"),
                  "%d %s", rc, out);
    free(out);
    json_decref(story);
    free(wrong);
    story_stop(&r);
}
END_TEST

/* A config of demo/slack-host.json's shape without the plugin (disabled):
 * planner and reviewer in #work with scenarios of this test, alice asking
 * and then replying in the thread of planner's answer. */
static char *write_plain_config(story_run *r)
{
    char *sp = tu_path(r->dir, "planner.json"), *sr = tu_path(r->dir, "reviewer.json");
    ck_assert_int_eq(
        tu_write_file(sp, "{\"steps\": ["
                          "{\"when\": {\"from\": \"alice\", \"contains\": \"thread\"}, "
                          "\"do\": [{\"reply\": \"planner in the thread\"}]},"
                          "{\"when\": {\"from\": \"alice\"}, "
                          "\"do\": [{\"reply\": \"planner answers <@{{user:alice}}|alice>\"}]}]}"),
        0);
    ck_assert_int_eq(tu_write_file(sr, "{\"steps\": [{\"when\": {\"from\": \"planner\", "
                                       "\"contains\": \"answers\"}, "
                                       "\"do\": [{\"reply\": \"reviewer agrees\"}]}]}"),
                     0);
    json_t *cfg = json_load_file("demo/slack-host.json", 0, NULL);
    ck_assert_ptr_nonnull(cfg);
    json_t *entry =
        json_object_get(json_object_get(json_object_get(cfg, "plugins"), "entries"), "dirigent");
    json_object_set_new(entry, "enabled", json_false());
    json_object_set_new(json_object_get(json_object_get(cfg, "channels"), "work"), "agents",
                        json_pack("[s, s]", "planner", "reviewer"));
    json_t *agents = json_object_get(cfg, "agents");
    json_object_set_new(json_array_get(agents, 0), "scenario", json_string(sp));
    json_object_set_new(json_array_get(agents, 1), "scenario", json_string(sr));
    json_object_del(json_array_get(agents, 2), "scenario");
    char *plugins = tu_path(r->dir, "plugins");
    json_object_set_new(json_object_get(cfg, "plugins"), "load",
                        json_pack("{s:[s]}", "paths", plugins));
    json_t *script = json_pack("[{s:s, s:s}, {s:{s:s, s:s}, s:s, s:b, s:s}]", "channel", "work",
                               "content", "<@{{user:planner}}> hello", "after", "from", "reviewer",
                               "contains", "agrees", "channel", "work", "inThread", 1, "content",
                               "a question in the thread of the answer");
    json_object_set_new(json_array_get(json_object_get(cfg, "humans"), 0), "script", script);
    char *cfg_path = tu_path(r->dir, "plain-host.json");
    ck_assert_int_eq(json_dump_file(cfg, cfg_path, JSON_INDENT(1)), 0);
    json_decref(cfg);
    free(plugins);
    free(sp);
    free(sr);
    return cfg_path;
}

/*
 * Without the plugin (so whatever the plugin does on Slack), the gateway
 * alone: alice's message reaches both agents of #work, each answers by its
 * own token, bots see each other (reviewer answers planner), alice's
 * reply goes into the thread of reviewer's message and planner answers
 * there; the session keys are OpenClaw's Slack keys, the thread's its own.
 */
START_TEST(gateway_on_slack_reads_posts_and_threads_without_the_plugin)
{
    story_run r;
    story_start(&r);
    const char *members[] = {S_PLANNER, S_REVIEWER, S_ALICE, S_MOD, NULL};
    ck_assert_int_eq(fake_slack_add_channel(r.fs, "C0WORK0002", "other", 0, members, NULL), 0);
    /* #work of the demo has no reviewer: this test's #work is C0WORK0002. */
    char *cfg_path = write_plain_config(&r);
    char *text = ocgw_read_file(cfg_path, NULL);
    ck_assert_ptr_nonnull(text);
    json_t *cfg = json_loads(text, 0, NULL);
    free(text);
    json_object_set_new(json_object_get(json_object_get(cfg, "channels"), "work"), "id",
                        json_string("C0WORK0002"));
    ck_assert_int_eq(json_dump_file(cfg, cfg_path, JSON_INDENT(1)), 0);
    json_decref(cfg);
    json_t *story = json_pack(
        "{s:i, s:i, s:{s:[{s:s, s:[s]}, {s:s, s:s}, {s:s, s:s}, {s:s, s:b, s:s}, {s:s, s:b, "
        "s:s}]}, s:b}",
        "timeoutMs", 30000, "settleMs", 300, "channels", "work", "from", "alice", "mentions",
        "planner", "from", "planner", "contains", "answers", "from", "reviewer", "contains",
        "agrees", "from", "alice", "inThread", 1, "contains", "question", "from", "planner",
        "inThread", 1, "contains", "in the thread", "humansDone", 1);
    char *story_path = tu_path(r.dir, "plain-story.json");
    ck_assert_int_eq(json_dump_file(story, story_path, 0), 0);
    json_decref(story);
    int rc = run_gateway_with(&r, cfg_path, story_path, 60000);
    if (rc != 0) {
        dump(&r);
        char *v = story_verdict(&r);
        ck_assert_msg(rc == 0, "ocgw exit %d: %s", rc, v);
        free(v);
    }
    json_t *msgs = fake_slack_messages(r.fs, "C0WORK0002");
    ck_assert_uint_eq(json_array_size(msgs), 5);
    const char *authors[] = {S_ALICE, S_PLANNER, S_REVIEWER, S_ALICE, S_PLANNER};
    for (size_t i = 0; i < 5; i++)
        ck_assert_str_eq(sget(json_array_get(msgs, i), "user"), authors[i]);
    char parent[32];
    snprintf(parent, sizeof parent, "%s", sget(json_array_get(msgs, 2), "ts"));
    ck_assert_str_eq(sget(json_array_get(msgs, 3), "thread_ts"), parent);
    ck_assert_str_eq(sget(json_array_get(msgs, 4), "thread_ts"), parent);
    json_decref(msgs);
    char *sessions = run_file(&r, "state/sessions.json");
    char want[128];
    snprintf(want, sizeof want, "agent:planner:slack:channel:c0work0002:thread:%s", parent);
    ck_assert_msg(strstr(sessions, "\"agent:planner:slack:channel:c0work0002\"") &&
                      strstr(sessions, want),
                  "%s", sessions);
    free(sessions);
    free(cfg_path);
    free(story_path);
    story_stop(&r);
}
END_TEST

/* ocgw --check on the Slack demo's config: the moderator's token is asked
 * who it is (auth.test); another bot's token is named as such. */
START_TEST(check_asks_slack_who_the_moderator_token_is)
{
    story_run r;
    story_start(&r);
    char *state = tu_path(r.dir, "state"), *work = tu_path(r.dir, "work");
    char *plugins = tu_path(r.dir, "plugins"), *out = tu_path(r.dir, "check.out");
    char *err = tu_path(r.dir, "check.err");
    setenv("OCGW_API_BASE", fake_slack_url(r.fs), 1);
    setenv("OCGW_STATE", state, 1);
    setenv("OCGW_WORK", work, 1);
    setenv("OCGW_PLUGINS", plugins, 1);
    setenv("DEMO_SLACK_PLANNER_TOKEN", "xoxb-demo-planner", 1);
    setenv("DEMO_SLACK_REVIEWER_TOKEN", "xoxb-demo-reviewer", 1);
    setenv("DEMO_SLACK_CODER_TOKEN", "xoxb-demo-coder", 1);
    setenv("DEMO_SLACK_ALICE_TOKEN", "xoxp-demo-alice", 1);
    setenv("DIRIGENT_SLACK_MODERATOR_TOKEN", "xoxb-demo-moderator", 1);
    char *gw = tu_path(tu_build_dir(), "ocgw");
    const char *argv[] = {gw, "--config", "demo/slack-host.json", "--check", NULL};
    const char *unset[] = {"SLACK_API_URL", NULL};
    int rc = tu_run_wait(argv, out, err, unset, 60000);
    char *text = ocgw_read_file(out, NULL), *etext = ocgw_read_file(err, NULL);
    ck_assert_msg(rc == 0 && text && strstr(text, "ocgw --check: OK: plugins dirigent"), "%d %s %s",
                  rc, text ? text : "", etext ? etext : "");
    free(text);
    free(etext);
    setenv("DIRIGENT_SLACK_MODERATOR_TOKEN", "xoxb-demo-planner", 1);
    rc = tu_run_wait(argv, out, err, unset, 60000);
    etext = ocgw_read_file(err, NULL);
    ck_assert_msg(rc == 1 && etext &&
                      strstr(etext, "the Slack moderator token belongs to user " S_PLANNER
                                    ", not to slack.moderatorUserId " S_MOD),
                  "%d %s", rc, etext ? etext : "");
    ck_assert(!strstr(etext, "xoxb-demo-planner"));
    free(etext);
    ck_assert_uint_ge(fake_slack_request_count(r.fs, "auth.test"), 2);
    free(gw);
    free(state);
    free(work);
    free(plugins);
    free(out);
    free(err);
    story_stop(&r);
}
END_TEST

/* make demo PLATFORM=slack: the script with its own fake-slack process. */
START_TEST(make_demo_platform_slack_plays_the_story)
{
    char *dir = tu_mkdtemp();
    char *out = tu_path(dir, "demo.out"), *err = tu_path(dir, "demo.err");
    const char *argv[] = {"sh", "demo/slack.sh", tu_build_dir(), NULL};
    setenv("TMPDIR", dir, 1);
    int rc = tu_run_wait(argv, out, err, NULL, 120000);
    char *text = ocgw_read_file(out, NULL), *etext = ocgw_read_file(err, NULL);
    ck_assert_msg(rc == 0, "demo/slack.sh exit %d\n%s\n%s", rc, text ? text : "",
                  etext ? etext : "");
    ck_assert(strstr(text, "== story complete: every step happened as written =="));
    ck_assert(strstr(text, "== the fake Slack's record =="));
    ck_assert(strstr(text, "duplicate outbox keys or nonces: 0"));
    ck_assert(strstr(text, "demo: OK: without the plugin all "));
    ck_assert(strstr(text, "demo: cost of the story (dirigent-ctl cost): "));
    free(text);
    free(etext);
    free(out);
    free(err);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

Suite *make_demo_slack_suite(void)
{
    Suite *s = suite_create("demo_slack");
    TCase *tp = tcase_create("pieces");
    tcase_set_timeout(tp, 30);
    tcase_add_test(tp, poll_reads_threads_in_posting_order_up_to_its_bound);
    tcase_add_test(tp, posts_carry_thread_and_nonce);
    tcase_add_test(tp, ids_of_both_platforms_compare_by_value);
    tcase_add_test(tp, config_slack_block_and_its_refusals);
    suite_add_tcase(s, tp);
    TCase *ts = tcase_create("story");
    tcase_set_timeout(ts, 300);
    tcase_add_test(ts, gateway_on_slack_reads_posts_and_threads_without_the_plugin);
    tcase_add_test(ts, story_on_slack_completes_and_the_record_shows_it);
    tcase_add_test(ts, a_post_whose_answer_was_lost_is_found_not_posted_twice);
    tcase_add_test(ts, check_asks_slack_who_the_moderator_token_is);
    tcase_add_test(ts, make_demo_platform_slack_plays_the_story);
    suite_add_tcase(s, ts);
    return s;
}
