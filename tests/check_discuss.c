/*
 * check_discuss.c -- discussion channels with callback through the
 * plugin's tools, against the in-process fake Discord: the demo's story
 * (demo/story.json) with every REST request checked, the same story with
 * a plugin restart between every step, every refusal of discuss-callback,
 * a double and two concurrent callbacks, validation errors of
 * discord_channel_create, a REST failure leaving no row, and both tools
 * answering a repeated ctx.toolCallId with the first result (a lost
 * channel found again instead of a second one).
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "openclaw/plugin.h"
#include "dirigent.h"
#include "discuss.h"
#include "agent_names.h"
#include "discuss_status.h"
#include "turn_view.h"
#include "failalloc.h"
#include "fake_discord.h"
#include "faultvfs.h"
#include "outbox.h"
#include "seen_set.h"
#include "summary.h"
#include "store.h"
#include "store_test.h"
#include "store_discuss.h"
#include "store_int.h"
#include "pg_server.h"
#include "testutil.h"

const oc_plugin *oc_plugin_entry(void);

#define MOD_TOKEN "MODTOKEN.fake.discuss"
#define MOD_ID "1000000000000000001"
#define PLANNER_ID "2000000000000000001"
#define REVIEWER_ID "2000000000000000002"
#define CODER_ID "2000000000000000003"
#define HUMAN_ID "3000000000000000001"
#define ORIGIN "4000000000000000001"
#define WAIT_MS 15000

/* ---- a small host: tools, sessions, patches, logs ------------------------------ */

typedef struct th_session {
    char key[200], agent[32], channel[32], thread[32];
} th_session;

typedef struct th_patch {
    char key[200], provider[32], model[32];
} th_patch;

static struct {
    pthread_mutex_t mu;
    const oc_tool *tools[8];
    int ntools;
    th_session sessions[32];
    int nsessions;
    struct {
        char name[32];
        oc_hook_fn fn;
    } hooks[16];
    int nhooks;
    th_patch patches[128];
    int npatches;
    int patch_fail; /* session_patch answers OC_ERR_IO while set */
    tu_logbuf logs;
} H;

static int th_register_tool_run(oc_host *h, const oc_tool *t)
{
    (void)h;
    ck_assert_int_lt(H.ntools, 8);
    H.tools[H.ntools++] = t;
    return OC_OK;
}

/* The host never fails: an allocation-failure sweep fails the plugin's only
 * (failalloc.h). */
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
    ck_assert_int_lt(H.nhooks, 16);
    snprintf(H.hooks[H.nhooks].name, sizeof H.hooks[0].name, "%s", hook);
    H.hooks[H.nhooks++].fn = fn;
    return OC_OK;
}

static int th_on(oc_host *h, const char *hook, oc_hook_fn fn, int prio)
{
    int was = fa_suspend();
    int r = th_on_run(h, hook, fn, prio);
    fa_resume(was);
    return r;
}

static int th_patch_fn_run(oc_host *h, const char *key, const char *prov, const char *model)
{
    (void)h;
    pthread_mutex_lock(&H.mu);
    int rc = OC_OK;
    if (H.patch_fail)
        rc = OC_ERR_IO;
    else if (H.npatches < 128) {
        th_patch *p = &H.patches[H.npatches++];
        snprintf(p->key, sizeof p->key, "%s", key);
        snprintf(p->provider, sizeof p->provider, "%s", prov ? prov : "(null)");
        snprintf(p->model, sizeof p->model, "%s", model ? model : "(null)");
    }
    pthread_mutex_unlock(&H.mu);
    return rc;
}

static int th_patch_fn(oc_host *h, const char *key, const char *prov, const char *model)
{
    int was = fa_suspend();
    int r = th_patch_fn_run(h, key, prov, model);
    fa_resume(was);
    return r;
}

static json_t *th_list_run(oc_host *h, const char *channel)
{
    (void)h;
    json_t *a = json_array();
    pthread_mutex_lock(&H.mu);
    for (int i = 0; i < H.nsessions; i++) {
        th_session *s = &H.sessions[i];
        if (strcmp(s->channel, channel) != 0)
            continue;
        json_t *o = json_pack("{s:s,s:s,s:s}", "sessionKey", s->key, "agentId", s->agent,
                              "channelId", s->channel);
        if (s->thread[0])
            json_object_set_new(o, "threadId", json_string(s->thread));
        json_array_append_new(a, o);
    }
    pthread_mutex_unlock(&H.mu);
    return a;
}

static json_t *th_list(oc_host *h, const char *channel)
{
    int was = fa_suspend();
    json_t *r = th_list_run(h, channel);
    fa_resume(was);
    return r;
}

static void th_log_run(oc_host *h, int level, const char *msg)
{
    (void)h;
    pthread_mutex_lock(&H.mu);
    tu_logbuf_add(&H.logs, level, msg);
    pthread_mutex_unlock(&H.mu);
}

static void th_log(oc_host *h, int level, const char *msg)
{
    int was = fa_suspend();
    th_log_run(h, level, msg);
    fa_resume(was);
}

static const oc_host_api api = {
    .abi_major = OC_ABI_MAJOR,
    .abi_minor = OC_ABI_MINOR,
    .struct_size = sizeof(oc_host_api),
    .host = NULL,
    .register_tool = th_register_tool,
    .on = th_on,
    .session_patch = th_patch_fn,
    .sessions_list = th_list,
    .log = th_log,
};

static void add_session(const char *agent, const char *channel, const char *thread)
{
    pthread_mutex_lock(&H.mu);
    th_session *s = &H.sessions[H.nsessions++];
    snprintf(s->agent, sizeof s->agent, "%s", agent);
    snprintf(s->channel, sizeof s->channel, "%s", channel);
    snprintf(s->thread, sizeof s->thread, "%s", thread ? thread : "");
    if (thread)
        snprintf(s->key, sizeof s->key, "agent:%s:discord:channel:%s:thread:%s", agent, channel,
                 thread);
    else
        snprintf(s->key, sizeof s->key, "agent:%s:discord:channel:%s", agent, channel);
    pthread_mutex_unlock(&H.mu);
}

static int patches_of(const char *key)
{
    int n = 0;
    pthread_mutex_lock(&H.mu);
    for (int i = 0; i < H.npatches; i++)
        if (strcmp(H.patches[i].key, key) == 0) {
            ck_assert_str_eq(H.patches[i].provider, "noreply");
            ck_assert_str_eq(H.patches[i].model, "no-reply");
            n++;
        }
    pthread_mutex_unlock(&H.mu);
    return n;
}

/* ---- fixture ------------------------------------------------------------------------ */

static fake_discord *fd;
static char *dir, *db, *ws, *tpl_dir;
static dg_plugin *P;
static long max_summary = 4096;
static long max_guide = 1500;
static char extra_disc[1024]; /* more keys of "discussion" (",\"k\":v"), "" none */
static char extra_top[512];   /* more top-level keys (",\"k\":v"), "" none */

static void setup(void)
{
    memset(&H, 0, sizeof H);
    pthread_mutex_init(&H.mu, NULL);
    unsetenv("DIRIGENT_MODERATOR_TOKEN");
    unsetenv("DIRIGENT_SESSION_POLICY");
    char e[256];
    fake_discord_options o = {0};
    ck_assert_msg(fake_discord_start(&o, &fd, e, sizeof e) == 0, "fake discord: %s", e);
    ck_assert_int_eq(fake_discord_add_user(fd, MOD_TOKEN, MOD_ID, "moderator", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(fd, "T-planner", PLANNER_ID, "planner", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(fd, "T-reviewer", REVIEWER_ID, "reviewer", 1), 0);
    ck_assert_int_eq(fake_discord_add_user(fd, "T-coder", CODER_ID, "coder", 1), 0);
    ck_assert_int_eq(fake_discord_add_channel(fd, ORIGIN, "work", NULL), 0);
    dir = tu_mkdtemp();
    db = tu_db_target(dir); /* a file, or a PostgreSQL schema in discuss_pg */
    ws = tu_path(dir, "ws-planner");
    ck_assert_int_eq(mkdir(ws, 0755), 0);
    tpl_dir = NULL;
    max_summary = 4096;
    max_guide = 1500;
    extra_disc[0] = '\0';
    extra_top[0] = '\0';
    P = NULL;
}

static void plugin_stop(void);

static void teardown(void)
{
    plugin_stop();
    fake_discord_stop(fd);
    tu_rmtree(dir);
    free(dir);
    free(db);
    free(ws);
    tu_logbuf_free(&H.logs);
}

/* Start the plugin with the config text (the test host's registrations
 * start afresh); fails the test when init refuses. */
static void plugin_init_text(const char *text)
{
    json_t *cfg = tu_json(text);
    H.ntools = 0;
    H.nhooks = 0;
    void *state = NULL;
    char e[1024] = "";
    int rc = oc_plugin_entry()->init(&api, cfg, &state, e, sizeof e);
    json_decref(cfg);
    ck_assert_msg(rc == OC_OK, "init: %s", e);
    P = state;
}

static void plugin_start(void)
{
    char text[4096];
    char *store = tu_store_member_of(db);
    snprintf(text, sizeof text,
             "{\"noReplyProvider\":\"noreply\",\"noReplyModel\":\"no-reply\",%s,"
             "\"discord\":{\"apiBase\":\"%s\",\"guildId\":\"%s\",\"moderatorToken\":\"%s\","
             "\"moderatorUserId\":\"%s\",\"timeoutMs\":5000},"
             "\"discussion\":{\"maxSummaryBytes\":%ld,\"maxGuideChars\":%ld%s},"
             "\"agents\":{\"planner\":{\"discordUserId\":\"%s\"},"
             "\"reviewer\":{\"discordUserId\":\"%s\"},\"coder\":{\"discordUserId\":\"%s\"}}%s}",
             store, fake_discord_url(fd), fake_discord_guild_id(fd), MOD_TOKEN, MOD_ID, max_summary,
             max_guide, extra_disc, PLANNER_ID, REVIEWER_ID, CODER_ID, extra_top);
    free(store);
    plugin_init_text(text);
}

static void plugin_stop(void)
{
    if (P)
        oc_plugin_entry()->shutdown(P);
    P = NULL;
}

static void plugin_restart(void)
{
    plugin_stop();
    plugin_start();
}

/* Call a registered tool; returns the status, *res the result (decref). */
static int tool(const char *name, const char *params, const json_t *ctx, json_t **res)
{
    const oc_tool *t = NULL;
    for (int i = 0; i < H.ntools; i++)
        if (strcmp(H.tools[i]->name, name) == 0)
            t = H.tools[i];
    ck_assert_msg(t != NULL, "tool %s not registered", name);
    json_t *pj = tu_json(params);
    *res = NULL;
    int rc = t->execute(P, pj, ctx, res);
    json_decref(pj);
    ck_assert_ptr_nonnull(*res);
    if (rc != OC_OK) {
        json_t *e = json_object_get(*res, "error");
        ck_assert_str_eq(json_string_value(json_object_get(e, "code")), oc_status_name(rc));
        const char *m = json_string_value(json_object_get(e, "message"));
        ck_assert_msg(m && strlen(m) > 20, "error without an actionable message");
    } else {
        json_t *c = json_array_get(json_object_get(*res, "content"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(c, "type")), "text");
        ck_assert_ptr_nonnull(json_string_value(json_object_get(c, "text")));
    }
    return rc;
}

static const char *err_msg(const json_t *res)
{
    return json_string_value(json_object_get(json_object_get(res, "error"), "message"));
}

static json_t *ctx_of(const char *agent, const char *channel)
{
    char key[200];
    snprintf(key, sizeof key, "agent:%s:discord:channel:%s", agent, channel);
    return json_pack("{s:s,s:s,s:s,s:s,s:s}", "agentId", agent, "sessionKey", key, "sessionId",
                     "sess-123", "workspaceDir", ws, "channelId", channel);
}

/* before_model_resolve as the host runs it for agent's session in channel
 * (thread may be NULL): 1 when the run is routed to the no-reply model. */
static int routed_to_noreply(const char *agent, const char *channel, const char *thread)
{
    char key[200];
    if (thread)
        snprintf(key, sizeof key, "agent:%s:discord:channel:%s:thread:%s", agent, channel, thread);
    else
        snprintf(key, sizeof key, "agent:%s:discord:channel:%s", agent, channel);
    json_t *ctx = json_pack("{s:s,s:s,s:s,s:s}", "agentId", agent, "sessionKey", key, "channelId",
                            channel, "messageProvider", "discord");
    if (thread)
        json_object_set_new(ctx, "threadId", json_string(thread));
    json_t *ev = json_object(), *res = NULL;
    int found = 0;
    for (int i = 0; i < H.nhooks; i++) {
        if (strcmp(H.hooks[i].name, "before_model_resolve") != 0)
            continue;
        found = 1;
        ck_assert_int_eq(H.hooks[i].fn(P, ev, ctx, &res), OC_OK);
        if (res)
            break;
    }
    ck_assert_msg(found, "before_model_resolve not registered");
    int routed = 0;
    if (res) {
        ck_assert_str_eq(json_string_value(json_object_get(res, "providerOverride")), "noreply");
        ck_assert_str_eq(json_string_value(json_object_get(res, "modelOverride")), "no-reply");
        routed = 1;
    }
    json_decref(res);
    json_decref(ev);
    json_decref(ctx);
    return routed;
}

static const char *GUIDE =
    "Discuss how a private discussion channel ends and calls back; produce a summary of the "
    "tool params, the end condition and the error handling.";

/* planner opens the story's discussion from the work channel; returns the
 * new channel id (static buffer). */
static const char *open_discussion(void)
{
    static char channel[32];
    json_t *ctx = ctx_of("planner", ORIGIN), *res;
    char params[1024];
    snprintf(params, sizeof params,
             "{\"name\":\"csm-callback\",\"participants\":[\"reviewer\",\"coder\"],"
             "\"callbackChannelId\":\"%s\",\"discussGuide\":\"%s\"}",
             ORIGIN, GUIDE);
    int rc = tool("discord_channel_create", params, ctx, &res);
    ck_assert_msg(rc == OC_OK, "create: %s", err_msg(res));
    json_t *d = json_object_get(res, "details");
    ck_assert_str_eq(json_string_value(json_object_get(d, "mode")), "discussion");
    ck_assert(json_integer_value(json_object_get(d, "discussionId")) > 0);
    snprintf(channel, sizeof channel, "%s", json_string_value(json_object_get(d, "channelId")));
    json_decref(res);
    json_decref(ctx);
    return channel;
}

static void write_ws(const char *rel, const char *text)
{
    char *p = tu_path(ws, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", p);
    ck_assert_int_eq(system(cmd), 0);
    *slash = '/';
    ck_assert_int_eq(tu_write_file(p, text), 0);
    free(p);
}

static int callback(const char *agent, const char *channel, const char *path, json_t **res)
{
    json_t *ctx = ctx_of(agent, channel);
    json_t *pj = json_pack("{s:s}", "summaryPath", path);
    char *params = json_dumps(pj, 0);
    int rc = tool("discuss-callback", params, ctx, res);
    free(params);
    json_decref(pj);
    json_decref(ctx);
    return rc;
}

static dg_discussion load_row(const char *channel)
{
    dg_discussion d;
    ck_assert_int_eq(dg_store_begin(P->store), OC_OK);
    int rc = dg_store_discussion_by_channel(P->store, channel, &d);
    dg_store_commit(P->store);
    ck_assert_int_eq(rc, OC_OK);
    return d;
}

static int count_rows(const char *table)
{
    if (pgs_running()) {
        char q[512];
        snprintf(q, sizeof q, "SELECT COUNT(*) FROM %s", table);
        long n = pgs_value(db, q);
        ck_assert_msg(n >= 0, "%s failed on PostgreSQL", q);
        return (int)n;
    }
    sqlite3 *s;
    ck_assert_int_eq(sqlite3_open_v2(db, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %s", table);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(s, sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(s);
    return n;
}

/* Requests of the tools' work: all but the agents' name lookups, which
 * the engine's sweeper makes once whenever it gets to them (agent_names.h). */
static size_t story_request_count(void)
{
    json_t *all = fake_discord_requests(fd, 0);
    size_t i, n = 0;
    json_t *r;
    json_array_foreach(all, i, r)
        n += strcmp(json_string_value(json_object_get(r, "route")), "GET /users/{id}") != 0;
    json_decref(all);
    return n;
}

/* Requests with this route template. New reference. */
static json_t *requests_on(const char *route)
{
    json_t *all = fake_discord_requests(fd, 0), *out = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(all, i, r)
        if (strcmp(json_string_value(json_object_get(r, "route")), route) == 0)
            json_array_append(out, r);
    json_decref(all);
    return out;
}

static int str_in(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return 1;
    return 0;
}

/* ---- checks of the story's REST traffic ------------------------------------------------ */

static void check_channel_request(const json_t *req, const char *const *members, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "/guilds/%s/channels", fake_discord_guild_id(fd));
    ck_assert_str_eq(json_string_value(json_object_get(req, "method")), "POST");
    ck_assert_str_eq(json_string_value(json_object_get(req, "path")), path);
    ck_assert_str_eq(json_string_value(json_object_get(req, "authUserId")), MOD_ID);
    json_t *body = json_object_get(req, "body");
    ck_assert_str_eq(json_string_value(json_object_get(body, "name")), "csm-callback");
    ck_assert_int_eq(json_integer_value(json_object_get(body, "type")), 0);
    json_t *ow = json_object_get(body, "permission_overwrites");
    ck_assert_uint_eq(json_array_size(ow), n + 1);
    int everyone = 0;
    size_t seen = 0;
    size_t i;
    json_t *o;
    json_array_foreach(ow, i, o) {
        const char *id = json_string_value(json_object_get(o, "id"));
        int type = (int)json_integer_value(json_object_get(o, "type"));
        if (strcmp(id, fake_discord_guild_id(fd)) == 0) {
            everyone++;
            ck_assert_int_eq(type, 0);
            ck_assert_str_eq(json_string_value(json_object_get(o, "deny")), "1024");
            continue;
        }
        ck_assert_int_eq(type, 1);
        ck_assert_str_eq(json_string_value(json_object_get(o, "allow")), "68608");
        int known = 0;
        for (size_t k = 0; k < n; k++)
            known |= strcmp(members[k], id) == 0;
        ck_assert_msg(known, "unexpected member %s", id);
        seen++;
    }
    ck_assert_int_eq(everyone, 1);
    ck_assert_uint_eq(seen, n);
}

/* The single message of a channel; its request body checked; new ref. */
static json_t *only_message_request(const char *channel)
{
    json_t *reqs = requests_on("POST /channels/{id}/messages"), *found = NULL;
    char path[64];
    snprintf(path, sizeof path, "/channels/%s/messages", channel);
    size_t i;
    json_t *r;
    int ok = 0;
    json_array_foreach(reqs, i, r) {
        if (strcmp(json_string_value(json_object_get(r, "path")), path) != 0)
            continue;
        if (json_integer_value(json_object_get(r, "status")) / 100 != 2)
            continue;
        /* A resend after a restart may be answered 2xx too: with the same
         * nonce, Discord hands back the first message (counted below). */
        if (found)
            ck_assert_str_eq(
                json_string_value(json_object_get(json_object_get(r, "body"), "nonce")),
                json_string_value(json_object_get(json_object_get(found, "body"), "nonce")));
        else
            found = r;
        ok++;
    }
    ck_assert_int_ge(ok, 1);
    json_incref(found);
    json_decref(reqs);
    ck_assert_str_eq(json_string_value(json_object_get(found, "authUserId")), MOD_ID);
    json_t *body = json_object_get(found, "body");
    json_t *am = json_object_get(body, "allowed_mentions");
    ck_assert_uint_eq(json_array_size(json_object_get(am, "parse")), 0);
    ck_assert(json_is_true(json_object_get(body, "enforce_nonce")));
    ck_assert_ptr_nonnull(json_string_value(json_object_get(body, "nonce")));
    ck_assert_uint_eq(fake_discord_message_count(fd, channel), 1);
    return found;
}

static void check_kickoff(const char *channel)
{
    json_t *r = only_message_request(channel);
    json_t *body = json_object_get(r, "body");
    const char *content = json_string_value(json_object_get(body, "content"));
    ck_assert_ptr_nonnull(strstr(content, "[Discussion Started]"));
    ck_assert_ptr_nonnull(strstr(content, GUIDE));
    ck_assert_ptr_nonnull(strstr(content, "<@" REVIEWER_ID ">"));
    ck_assert_ptr_nonnull(strstr(content, "<@" CODER_ID ">"));
    ck_assert_ptr_nonnull(strstr(content, "discuss-callback"));
    ck_assert_ptr_nonnull(strstr(content, "<#" ORIGIN ">"));
    json_t *users = json_object_get(json_object_get(body, "allowed_mentions"), "users");
    ck_assert_uint_eq(json_array_size(users), 3);
    ck_assert(str_in(users, PLANNER_ID) && str_in(users, REVIEWER_ID) && str_in(users, CODER_ID));
    json_decref(r);
}

static void check_result(const char *channel, const char *rel)
{
    json_t *r = only_message_request(ORIGIN);
    json_t *body = json_object_get(r, "body");
    const char *content = json_string_value(json_object_get(body, "content"));
    char link[64];
    snprintf(link, sizeof link, "<#%s>", channel);
    ck_assert_ptr_nonnull(strstr(content, "[Discussion Result Ready]"));
    ck_assert_ptr_nonnull(strstr(content, rel));
    ck_assert_ptr_nonnull(strstr(content, link));
    ck_assert_ptr_nonnull(strstr(content, "<@" PLANNER_ID ">"));
    ck_assert_ptr_nonnull(strstr(content, "completed"));
    json_t *users = json_object_get(json_object_get(body, "allowed_mentions"), "users");
    ck_assert_uint_eq(json_array_size(users), 1);
    ck_assert(str_in(users, PLANNER_ID));
    json_decref(r);
}

static void check_active_row(const char *channel)
{
    dg_discussion d = load_row(channel);
    ck_assert_str_eq(d.discussion_channel_id, channel);
    ck_assert_str_eq(d.origin_channel_id, ORIGIN);
    ck_assert_str_eq(d.initiator_agent_id, "planner");
    ck_assert_str_eq(d.initiator_session_key, "agent:planner:discord:channel:" ORIGIN);
    ck_assert_str_eq(d.initiator_session_id, "sess-123");
    ck_assert_str_eq(d.initiator_workspace, ws);
    ck_assert_str_eq(d.discuss_guide, GUIDE);
    ck_assert_int_eq(d.status, DG_DISCUSSION_ACTIVE);
    ck_assert(d.created_at_ms > 0);
    ck_assert(d.completed_at_ms == 0);
    ck_assert_ptr_null(d.summary_path);
    ck_assert_uint_eq(d.n_turn_order, 3);
    ck_assert_str_eq(d.turn_order[0], "planner");
    ck_assert_str_eq(d.turn_order[1], "reviewer");
    ck_assert_str_eq(d.turn_order[2], "coder");
    ck_assert_uint_eq(d.n_participants, 2);
    ck_assert_str_eq(d.participants[0], "reviewer");
    ck_assert_str_eq(d.participants[1], "coder");
    dg_discussion_clear(&d);
}

static void check_closed_row(const char *channel, const char *rel)
{
    dg_discussion d = load_row(channel);
    ck_assert_int_eq(d.status, DG_DISCUSSION_CLOSED);
    ck_assert_str_eq(d.summary_path, rel);
    ck_assert(d.completed_at_ms >= d.created_at_ms);
    dg_discussion_clear(&d);
}

#define SUMMARY "plans/discussions/csm-discussion-summary.md"

/* The demo's story, with an optional restart between every step. */
static void story(int restarts)
{
    plugin_start();
    /* 12.1 planner opens the discussion from the work channel. */
    const char *ch = open_discussion();
    char channel[32];
    snprintf(channel, sizeof channel, "%s", ch);
    if (restarts)
        plugin_restart(); /* the kickoff may still be queued: it goes out after restart */
    ck_assert_int_eq(fake_discord_wait_messages(fd, channel, 1, WAIT_MS), 0);
    json_t *creates = requests_on("POST /guilds/{id}/channels");
    ck_assert_uint_eq(json_array_size(creates), 1);
    const char *members[] = {PLANNER_ID, REVIEWER_ID, CODER_ID, MOD_ID};
    check_channel_request(json_array_get(creates, 0), members, 4);
    json_decref(creates);
    check_kickoff(channel);
    check_active_row(channel);

    /* 12.2 the turn order was prefilled initiator first: the initiator
     * opened the discussion, so the first participant speaks and the
     * others are routed to the no-reply model. */
    ck_assert_int_eq(routed_to_noreply("reviewer", channel, NULL), 0);
    ck_assert_int_eq(routed_to_noreply("coder", channel, NULL), 1);
    ck_assert_int_eq(H.npatches, 0); /* an active discussion patches no session */
    /* The agents talk in the channel: their sessions exist there. */
    add_session("planner", channel, NULL);
    add_session("reviewer", channel, NULL);
    add_session("coder", channel, NULL);
    add_session("reviewer", channel, "5000000000000000001");
    add_session("planner", ORIGIN, NULL); /* the origin session is not touched */
    if (restarts)
        plugin_restart();

    /* 12.3 planner writes the summary and calls back. */
    write_ws(SUMMARY, "# CSM discussion\n- params\n- end condition\n- errors\n");
    if (restarts)
        plugin_restart();
    json_t *res;
    int rc = callback("planner", channel, SUMMARY, &res);
    ck_assert_msg(rc == OC_OK, "callback: %s", err_msg(res));
    json_t *d = json_object_get(res, "details");
    ck_assert_str_eq(json_string_value(json_object_get(d, "status")), "closed");
    ck_assert_str_eq(json_string_value(json_object_get(d, "channelId")), channel);
    ck_assert_str_eq(json_string_value(json_object_get(d, "originChannelId")), ORIGIN);
    ck_assert_str_eq(json_string_value(json_object_get(d, "summaryPath")), SUMMARY);
    ck_assert(json_integer_value(json_object_get(d, "discussionId")) > 0);
    json_decref(res);
    if (restarts)
        plugin_restart();

    /* 12.4 the work channel gets the result; the discussion is closed. */
    ck_assert_int_eq(fake_discord_wait_messages(fd, ORIGIN, 1, WAIT_MS), 0);
    check_result(channel, SUMMARY);
    check_closed_row(channel, SUMMARY);
    /* The origin channel is woken with the result: the initiator holds the
     * turn there (the result itself is the moderator's and wakes nobody). */
    ck_assert_int_eq(count_rows("turn_ledger l JOIN turn_members m ON m.channel_id = "
                                "l.channel_id AND m.pos = l.speaker WHERE l.channel_id = '" ORIGIN
                                "' AND l.active = 1 AND m.agent_id = 'planner'"),
                     1);
    ck_assert_int_eq(patches_of("agent:planner:discord:channel:" ORIGIN), 0);
    char key[200];
    const char *agents[] = {"planner", "reviewer", "coder"};
    for (int i = 0; i < 3; i++) {
        snprintf(key, sizeof key, "agent:%s:discord:channel:%s", agents[i], channel);
        ck_assert_msg(patches_of(key) == 1, "not exactly one override for %s", key);
    }
    snprintf(key, sizeof key, "agent:reviewer:discord:channel:%s:thread:5000000000000000001",
             channel);
    ck_assert_int_eq(patches_of(key), 1);
    ck_assert_int_eq(count_rows("discussion_overrides WHERE applied_at_ms IS NULL"), 0);
    ck_assert_int_eq(count_rows("discussion_overrides"), 4);
    /* The origin session is untouched and runs normally. */
    ck_assert_int_eq(routed_to_noreply("planner", ORIGIN, NULL), 0);

    /* Everyone in the closed channel is routed to the no-reply model. */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(routed_to_noreply(agents[i], channel, NULL), 1);
    /* A session first seen there (through the host's before_model_resolve)
     * gets a persistent override, once. */
    snprintf(key, sizeof key, "agent:planner:discord:channel:%s:thread:5000000000000000003",
             channel);
    ck_assert_int_eq(routed_to_noreply("planner", channel, "5000000000000000003"), 1);
    ck_assert_int_eq(routed_to_noreply("planner", channel, "5000000000000000003"), 1);
    ck_assert_int_eq(patches_of(key), 1);
    /* The same through the core call directly; a second callback is refused
     * and changes nothing. */
    snprintf(key, sizeof key, "agent:coder:discord:channel:%s:thread:5000000000000000002", channel);
    dg_discuss_session_seen(P, key, "coder", channel);
    dg_discuss_session_seen(P, key, "coder", channel);
    ck_assert_int_eq(patches_of(key), 1);
    if (restarts)
        plugin_restart();
    ck_assert_int_eq(patches_of(key), 1);
    rc = callback("planner", channel, SUMMARY, &res);
    ck_assert_int_eq(rc, OC_ERR_CONFLICT);
    json_decref(res);

    /* Every REST request of the story: one channel, two messages. */
    plugin_stop();
    json_t *cr = requests_on("POST /guilds/{id}/channels");
    ck_assert_uint_eq(json_array_size(cr), 1);
    json_decref(cr);
    json_t *all = fake_discord_requests(fd, 0);
    size_t i;
    json_t *r;
    int posts = 0;
    json_t *nonces = json_object();
    json_array_foreach(all, i, r) {
        const char *route = json_string_value(json_object_get(r, "route"));
        /* The agents' names, looked up once by the engine's sweeper whenever
         * it gets to them (agent_names.h): read-only, not part of the story. */
        if (strcmp(route, "GET /users/{id}") == 0)
            continue;
        ck_assert_msg(strcmp(route, "POST /guilds/{id}/channels") == 0 ||
                          strcmp(route, "POST /channels/{id}/messages") == 0,
                      "unexpected request %s", route);
        ck_assert_str_eq(json_string_value(json_object_get(r, "authorization")), "Bot " MOD_TOKEN);
        if (strcmp(route, "POST /channels/{id}/messages") == 0) {
            posts++;
            json_object_set_new(
                nonces, json_string_value(json_object_get(json_object_get(r, "body"), "nonce")),
                json_true());
        }
    }
    json_decref(all);
    /* Two moderator messages (kickoff, result); a resend after a restart
     * reuses its nonce. */
    ck_assert_int_ge(posts, 2);
    ck_assert_uint_eq(json_object_size(nonces), 2);
    json_decref(nonces);
    ck_assert_uint_eq(fake_discord_message_count(fd, NULL), 2);
}

START_TEST(test_story)
{
    story(0);
}
END_TEST

START_TEST(test_story_with_restarts)
{
    story(1);
}
END_TEST

/* Overrides recorded by the close but not applied (the host refused, or we
 * crashed) are applied at the next start. */
START_TEST(test_overrides_redriven_after_restart)
{
    plugin_start();
    const char *ch = open_discussion();
    char channel[32];
    snprintf(channel, sizeof channel, "%s", ch);
    add_session("reviewer", channel, NULL);
    add_session("coder", channel, NULL);
    write_ws("s.md", "summary\n");
    H.patch_fail = 1;
    json_t *res;
    ck_assert_int_eq(callback("planner", channel, "s.md", &res), OC_OK);
    json_decref(res);
    ck_assert_int_eq(count_rows("discussion_overrides WHERE applied_at_ms IS NULL"), 2);
    H.patch_fail = 0;
    plugin_restart();
    char key[200];
    snprintf(key, sizeof key, "agent:reviewer:discord:channel:%s", channel);
    /* abi-v1: session_patch only after init has returned; the first hook
     * call after the restart re-drives the owed overrides. */
    ck_assert_int_eq(patches_of(key), 0);
    ck_assert(routed_to_noreply("planner", channel, NULL));
    ck_assert_int_eq(patches_of(key), 1);
    snprintf(key, sizeof key, "agent:coder:discord:channel:%s", channel);
    ck_assert_int_eq(patches_of(key), 1);
    ck_assert_int_eq(count_rows("discussion_overrides WHERE applied_at_ms IS NULL"), 0);
    plugin_restart(); /* nothing left: no second patch */
    ck_assert(routed_to_noreply("reviewer", channel, NULL));
    ck_assert_int_eq(patches_of(key), 1);
    /* A session first seen after the close whose patch the host refuses:
     * logged, and patched on its next run. */
    H.patch_fail = 1;
    ck_assert(routed_to_noreply("coder", channel, "310000000000000009"));
    int logged = 0;
    for (int i = 0; i < 500 && !logged; i++) {
        pthread_mutex_lock(&H.mu);
        logged = H.logs.text && strstr(H.logs.text, "failed (OC_ERR_IO); retried later");
        pthread_mutex_unlock(&H.mu);
        if (!logged)
            usleep(10 * 1000);
    }
    ck_assert(logged);
    H.patch_fail = 0;
    snprintf(key, sizeof key, "agent:coder:discord:channel:%s:thread:310000000000000009", channel);
    ck_assert_int_eq(patches_of(key), 0);
    ck_assert(routed_to_noreply("coder", channel, "310000000000000009"));
    ck_assert_int_eq(patches_of(key), 1);
}
END_TEST

/* ---- refusals of discuss-callback ------------------------------------------------------- */

static char disc[32];

static void refusal_setup(void)
{
    setup();
    plugin_start();
    snprintf(disc, sizeof disc, "%s", open_discussion());
    add_session("reviewer", disc, NULL);
    ck_assert_int_eq(fake_discord_wait_messages(fd, disc, 1, WAIT_MS), 0);
    write_ws("plans/ok.md", "fine\n");
    char *outside = tu_path(dir, "outside");
    ck_assert_int_eq(mkdir(outside, 0755), 0);
    char *secret = tu_path(outside, "secret.md");
    ck_assert_int_eq(tu_write_file(secret, "secret\n"), 0);
    free(secret);
    free(outside);
}

/* A refusal with this status changes nothing: row active, no message, no
 * patch, no override row. */
static void refused(const char *agent, const char *channel, const char *path, int status,
                    const char *word)
{
    json_t *res;
    int rc = callback(agent, channel, path, &res);
    ck_assert_msg(rc == status, "'%s': expected %s, got %s: %s", path, oc_status_name(status),
                  oc_status_name(rc), rc ? err_msg(res) : "ok");
    if (word)
        ck_assert_msg(strstr(err_msg(res), word), "'%s' not in: %s", word, err_msg(res));
    json_decref(res);
    dg_discussion d = load_row(disc);
    ck_assert_int_eq(d.status, DG_DISCUSSION_ACTIVE);
    dg_discussion_clear(&d);
    ck_assert_uint_eq(fake_discord_message_count(fd, ORIGIN), 0);
    ck_assert_int_eq(H.npatches, 0);
    ck_assert_int_eq(count_rows("discussion_overrides"), 0);
}

START_TEST(test_refuse_not_discussion_channel)
{
    refused("planner", ORIGIN, "plans/ok.md", OC_ERR_NOT_FOUND, "not a discussion channel");
}
END_TEST

START_TEST(test_refuse_not_initiator)
{
    refused("reviewer", disc, "plans/ok.md", OC_ERR_DENIED, "only the initiator");
    /* The order of the contract: not the initiator wins over a missing file. */
    refused("coder", disc, "missing.md", OC_ERR_DENIED, "initiator");
}
END_TEST

START_TEST(test_refuse_paths)
{
    char *outside = tu_path(dir, "outside");
    char *secret = tu_path(outside, "secret.md");
    char *lnk = tu_path(ws, "plans/link.md");
    ck_assert_int_eq(symlink(secret, lnk), 0);
    refused("planner", disc, "plans/link.md", OC_ERR_DENIED, "symbolic link");
    char *dlnk = tu_path(ws, "plans/evil");
    ck_assert_int_eq(symlink(outside, dlnk), 0);
    refused("planner", disc, "plans/evil/secret.md", OC_ERR_DENIED, "symbolic link");
    refused("planner", disc, "../outside/secret.md", OC_ERR_DENIED, "..");
    refused("planner", disc, secret, OC_ERR_DENIED, "outside your workspace");
    refused("planner", disc, "/proc/self/environ", OC_ERR_DENIED, "outside your workspace");
    char *fifo = tu_path(ws, "plans/fifo.md");
    ck_assert_int_eq(mkfifo(fifo, 0644), 0);
    refused("planner", disc, "plans/fifo.md", OC_ERR_INVALID, "not a regular file");
    refused("planner", disc, "plans", OC_ERR_INVALID, "folder");
    char *big = malloc(5000);
    memset(big, 'x', 4999);
    big[4999] = '\0';
    write_ws("plans/big.md", big);
    free(big);
    refused("planner", disc, "plans/big.md", OC_ERR_INVALID, "maxSummaryBytes");
    refused("planner", disc, "plans/missing.md", OC_ERR_NOT_FOUND, "does not exist");
    refused("planner", disc, "", OC_ERR_INVALID, "empty");
    /* Long paths in another script: the message is shortened without
     * cutting a character in half (the result must stay valid JSON text). */
    for (int k = 0; k < 3; k++) {
        char uni[2048] = "";
        for (int i = 0; i < k; i++)
            strcat(uni, "a");
        for (int i = 0; i < 60; i++)
            strcat(uni, "\xe8\xae\xa1\xe5\x88\x92/");
        strcat(uni, "x.md");
        refused("planner", disc, uni, OC_ERR_NOT_FOUND, "does not exist");
        char name[1024];
        snprintf(name, sizeof name, "%.*s\xe6\x80\xbb\xe7\xbb\x93.md", k, "aa");
        for (int i = 0; i < 100; i++)
            strcat(name, "\xe6\x80\xbb");
        refused("planner", disc, name, OC_ERR_INVALID, "too long");
    }
    free(outside);
    free(secret);
    free(lnk);
    free(dlnk);
    free(fifo);
    /* After all of that, the real callback still works. */
    json_t *res;
    ck_assert_int_eq(callback("planner", disc, "plans/ok.md", &res), OC_OK);
    json_decref(res);
    ck_assert_int_eq(fake_discord_wait_messages(fd, ORIGIN, 1, WAIT_MS), 0);
}
END_TEST

START_TEST(test_refuse_empty_summary)
{
    /* An empty or white-space-only summary is refused: it neither closes
     * the discussion nor posts the result. */
    write_ws("plans/empty.md", "");
    refused("planner", disc, "plans/empty.md", OC_ERR_INVALID, "empty or only white space");
    write_ws("plans/blank.md", "  \n\t\r\n   \n");
    refused("planner", disc, "plans/blank.md", OC_ERR_INVALID, "summaryPath");
    write_ws("plans/nbsp.md", "\xef\xbb\xbf\xc2\xa0\n\xe3\x80\x80 \n");
    refused("planner", disc, "plans/nbsp.md", OC_ERR_INVALID, "at least one character");
    /* Zero width space, narrow no-break space, medium mathematical space. */
    write_ws("plans/zw.md", "\xe2\x80\x8b\xe2\x80\xaf\xe2\x81\x9f\n");
    refused("planner", disc, "plans/zw.md", OC_ERR_INVALID, "at least one character");
    /* Nothing queued for the origin either. */
    char q[120];
    snprintf(q, sizeof q, "outbox WHERE channel_id = '%s'", ORIGIN);
    ck_assert_int_eq(count_rows(q), 0);
    /* One visible character after 4000 spaces is a summary. */
    char *late = malloc(4002);
    memset(late, ' ', 4000);
    late[4000] = 'x';
    late[4001] = '\0';
    write_ws("plans/late.md", late);
    free(late);
    json_t *res;
    ck_assert_int_eq(callback("planner", disc, "plans/late.md", &res), OC_OK);
    json_decref(res);
    ck_assert_int_eq(fake_discord_wait_messages(fd, ORIGIN, 1, WAIT_MS), 0);
}
END_TEST

START_TEST(test_callback_long_unicode_path)
{
    /* A long summary path in another script: the result text quoting it is
     * shortened without breaking a character, so the success is reported
     * as one (not as an out-of-memory error after the discussion closed). */
    char rel[4096] = "";
    for (int i = 0; i < 8; i++) {
        for (int k = 0; k < 80; k++)
            strcat(rel, "\xe8\xae\xa8");
        strcat(rel, i % 2 ? "b/" : "/");
    }
    strcat(rel, "summary.md");
    char *full = tu_path(ws, rel);
    for (char *sl = strchr(full + strlen(ws) + 1, '/'); sl; sl = strchr(sl + 1, '/')) {
        *sl = '\0';
        ck_assert_int_eq(mkdir(full, 0755), 0);
        *sl = '/';
    }
    ck_assert_int_eq(tu_write_file(full, "# summary\n"), 0);
    free(full);
    json_t *res;
    ck_assert_int_eq(callback("planner", disc, rel, &res), OC_OK);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(res, "details"), "summaryPath")), rel);
    json_decref(res);
    ck_assert_int_eq(fake_discord_wait_messages(fd, ORIGIN, 1, WAIT_MS), 0);
}
END_TEST

START_TEST(test_refuse_bad_params)
{
    json_t *ctx = ctx_of("planner", disc), *res;
    ck_assert_int_eq(tool("discuss-callback", "{}", ctx, &res), OC_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err_msg(res), "summaryPath"));
    json_decref(res);
    ck_assert_int_eq(tool("discuss-callback", "{\"summaryPath\":7}", ctx, &res), OC_ERR_INVALID);
    json_decref(res);
    ck_assert_int_eq(tool("discuss-callback",
                          "{\"summaryPath\":\"plans/ok.md\",\"originChannelId\":\"1\"}", ctx, &res),
                     OC_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err_msg(res), "originChannelId"));
    json_decref(res);
    /* A NUL would let "plans/ok.md\0<anything>" pass as plans/ok.md. */
    {
        const oc_tool *t = NULL;
        for (int i = 0; i < H.ntools; i++)
            if (strcmp(H.tools[i]->name, "discuss-callback") == 0)
                t = H.tools[i];
        json_t *pj = json_object();
        json_object_set_new(pj, "summaryPath", json_stringn("plans/ok.md\0/../../x", 20));
        res = NULL;
        ck_assert_int_eq(t->execute(P, pj, ctx, &res), OC_ERR_INVALID);
        ck_assert_ptr_nonnull(strstr(err_msg(res), "summaryPath contains a NUL"));
        json_decref(res);
        json_decref(pj);
    }
    /* A huge unknown key still leaves room for the accepted ones. */
    char *key = malloc(3001);
    memset(key, 'k', 3000);
    key[3000] = '\0';
    char *params = NULL;
    ck_assert_int_ge(asprintf(&params, "{\"summaryPath\":\"plans/ok.md\",\"%s\":1}", key), 0);
    ck_assert_int_eq(tool("discuss-callback", params, ctx, &res), OC_ERR_INVALID);
    ck_assert_msg(strstr(err_msg(res), "accepted: summaryPath"), "%.300s", err_msg(res));
    json_decref(res);
    free(params);
    free(key);
    json_decref(ctx);
    ck_assert_uint_eq(fake_discord_message_count(fd, ORIGIN), 0);
}
END_TEST

START_TEST(test_double_callback)
{
    json_t *res;
    ck_assert_int_eq(callback("planner", disc, "plans/ok.md", &res), OC_OK);
    json_decref(res);
    ck_assert_int_eq(callback("planner", disc, "plans/ok.md", &res), OC_ERR_CONFLICT);
    ck_assert_ptr_nonnull(strstr(err_msg(res), "already closed"));
    json_decref(res);
    /* closed wins over a missing file (the contract's order) */
    ck_assert_int_eq(callback("planner", disc, "plans/missing.md", &res), OC_ERR_CONFLICT);
    json_decref(res);
    ck_assert_int_eq(fake_discord_wait_messages(fd, ORIGIN, 1, WAIT_MS), 0);
    plugin_stop(); /* the outbox had nothing else to send: exactly one result */
    ck_assert_uint_eq(fake_discord_message_count(fd, ORIGIN), 1);
}
END_TEST

START_TEST(test_callback_from_thread)
{
    /* Inside a thread of the discussion channel the context names the
     * parent channel and the thread: still this discussion. */
    json_t *ctx = ctx_of("planner", disc), *res;
    json_object_set_new(ctx, "threadId", json_string("5000000000000000009"));
    ck_assert_int_eq(tool("discuss-callback", "{\"summaryPath\":\"./plans//ok.md\"}", ctx, &res),
                     OC_OK);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(res, "details"), "summaryPath")),
        "plans/ok.md");
    json_decref(res);
    json_decref(ctx);
    ck_assert_int_eq(fake_discord_wait_messages(fd, ORIGIN, 1, WAIT_MS), 0);
}
END_TEST

static pthread_barrier_t barrier;
static int concurrent_rc[2];

static void *racer(void *arg)
{
    int i = (int)(intptr_t)arg;
    json_t *res;
    json_t *ctx = ctx_of("planner", disc);
    json_t *pj = json_pack("{s:s}", "summaryPath", "plans/ok.md");
    const oc_tool *t = NULL;
    for (int k = 0; k < H.ntools; k++)
        if (strcmp(H.tools[k]->name, "discuss-callback") == 0)
            t = H.tools[k];
    pthread_barrier_wait(&barrier);
    res = NULL;
    concurrent_rc[i] = t->execute(P, pj, ctx, &res);
    json_decref(res);
    json_decref(pj);
    json_decref(ctx);
    return NULL;
}

START_TEST(test_concurrent_callbacks)
{
    /* Several discussions, each closed by two callbacks racing. */
    const int rounds = 4;
    for (int round = 0; round < rounds; round++) {
        if (round > 0) {
            snprintf(disc, sizeof disc, "%s", open_discussion());
            add_session("reviewer", disc, NULL);
        }
        pthread_barrier_init(&barrier, NULL, 2);
        pthread_t a, b;
        pthread_create(&a, NULL, racer, (void *)(intptr_t)0);
        pthread_create(&b, NULL, racer, (void *)(intptr_t)1);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        pthread_barrier_destroy(&barrier);
        ck_assert_msg((concurrent_rc[0] == OC_OK) != (concurrent_rc[1] == OC_OK),
                      "round %d: exactly one must win: %s / %s", round,
                      oc_status_name(concurrent_rc[0]), oc_status_name(concurrent_rc[1]));
        ck_assert_int_eq(concurrent_rc[0] == OC_OK ? concurrent_rc[1] : concurrent_rc[0],
                         OC_ERR_CONFLICT);
        ck_assert_int_eq(patches_of(H.sessions[round].key), 1);
    }
    ck_assert_int_eq(fake_discord_wait_messages(fd, ORIGIN, rounds, WAIT_MS), 0);
    plugin_stop();
    ck_assert_uint_eq(fake_discord_message_count(fd, ORIGIN), rounds);
    ck_assert_int_eq(count_rows("discussion_overrides"), rounds);
    ck_assert_int_eq(count_rows("discussions WHERE status = 'closed'"), rounds);
}
END_TEST

/* ---- discord_channel_create ------------------------------------------------------------- */

static void create_refused(const char *agent, const char *channel, const char *params, int status,
                           const char *word)
{
    json_t *ctx = ctx_of(agent, channel), *res;
    int rc = tool("discord_channel_create", params, ctx, &res);
    ck_assert_msg(rc == status, "%s: expected %s, got %s: %s", params, oc_status_name(status),
                  oc_status_name(rc), rc ? err_msg(res) : "ok");
    ck_assert_msg(strstr(err_msg(res), word), "'%s' not in: %s", word, err_msg(res));
    json_decref(res);
    json_decref(ctx);
}

START_TEST(test_create_validation)
{
    plugin_start();
    const char *O = ORIGIN;
#define CB "\"callbackChannelId\":\"" ORIGIN "\""
    create_refused("planner", O, "[]", OC_ERR_INVALID, "object");
    create_refused("planner", O, "{}", OC_ERR_INVALID, "name");
    create_refused("planner", O, "{\"name\":5}", OC_ERR_INVALID, "name");
    create_refused("planner", O, "{\"name\":\"\"}", OC_ERR_INVALID, "name");
    create_refused("planner", O, "{\"name\":\"Design\"}", OC_ERR_INVALID, "name 'Design'");
    create_refused("planner", O, "{\"name\":\"two words\"}", OC_ERR_INVALID, "name");
    char longname[256];
    snprintf(longname, sizeof longname, "{\"name\":\"%0101d\"}", 0);
    create_refused("planner", O, longname, OC_ERR_INVALID, "name");
    create_refused("planner", O, "{\"name\":\"x\",\"colour\":\"red\"}", OC_ERR_INVALID,
                   "unknown parameter 'colour'");
    create_refused("planner", O, "{\"name\":\"x\",\"participants\":\"reviewer\"}", OC_ERR_INVALID,
                   "participants");
    create_refused("planner", O, "{\"name\":\"x\",\"participants\":[\"ghost\"]}", OC_ERR_INVALID,
                   "participants[0] 'ghost'");
    create_refused("planner", O, "{\"name\":\"x\",\"participants\":[1]}", OC_ERR_INVALID,
                   "participants[0]");
    create_refused("planner", O, "{\"name\":\"x\",\"allowedUserIds\":[\"abc\"]}", OC_ERR_INVALID,
                   "allowedUserIds[0]");
    create_refused("planner", O, "{\"name\":\"x\",\"allowedUserIds\":[\"0123\"]}", OC_ERR_INVALID,
                   "allowedUserIds[0]");
    char *topic = malloc(1100);
    memset(topic, 'a', 1025);
    topic[1025] = '\0';
    char *params = NULL;
    ck_assert_int_ge(asprintf(&params, "{\"name\":\"x\",\"topic\":\"%s\"}", topic), 0);
    create_refused("planner", O, params, OC_ERR_INVALID, "topic");
    free(params);
    free(topic);
    create_refused("planner", O, "{\"name\":\"x\",\"parentId\":\"cat\"}", OC_ERR_INVALID,
                   "parentId");
    create_refused("planner", O, "{\"name\":\"x\",\"discussGuide\":\"talk\"}", OC_ERR_INVALID,
                   "discussGuide is only accepted together with callbackChannelId");
    create_refused("planner", O, "{\"name\":\"x\",\"participants\":[\"reviewer\"]," CB "}",
                   OC_ERR_INVALID, "discussGuide is required");
    create_refused("planner", O,
                   "{\"name\":\"x\",\"participants\":[\"reviewer\"]," CB
                   ",\"discussGuide\":\"  \"}",
                   OC_ERR_INVALID, "discussGuide is required");
    create_refused("planner", O,
                   "{\"name\":\"x\",\"participants\":[\"reviewer\"],"
                   "\"callbackChannelId\":\"work\",\"discussGuide\":\"g\"}",
                   OC_ERR_INVALID, "callbackChannelId 'work'");
    create_refused("planner", O, "{\"name\":\"x\"," CB ",\"discussGuide\":\"g\"}", OC_ERR_INVALID,
                   "at least one agent other than you");
    create_refused("planner", O,
                   "{\"name\":\"x\",\"participants\":[\"planner\"]," CB ",\"discussGuide\":\"g\"}",
                   OC_ERR_INVALID, "other than you");
    create_refused("stranger", O, "{\"name\":\"x\"}", OC_ERR_DENIED, "agents.stranger");
    create_refused("planner", O, "{\"name\":\"x\",\"callbackChannelId\":7}", OC_ERR_INVALID,
                   "callbackChannelId must be a string");
    {
        /* A NUL inside a JSON string would cut the name short in C. */
        const oc_tool *t = NULL;
        for (int i = 0; i < H.ntools; i++)
            if (strcmp(H.tools[i]->name, "discord_channel_create") == 0)
                t = H.tools[i];
        json_t *pj = json_object(), *ctx = ctx_of("planner", O), *res = NULL;
        json_object_set_new(pj, "name", json_stringn("a\0b", 3));
        ck_assert_int_eq(t->execute(P, pj, ctx, &res), OC_ERR_INVALID);
        ck_assert_ptr_nonnull(strstr(err_msg(res), "name contains a NUL"));
        json_decref(res);
        json_decref(pj);
        json_decref(ctx);
    }
    create_refused("planner", O, "{\"name\":\"x\",\"participants\":{\"a\":1}}", OC_ERR_INVALID,
                   "participants must be an array");
    char *many = strdup("{\"name\":\"x\",\"allowedUserIds\":[\"1\"");
    for (int i = 0; i < 60; i++) {
        char *grown = NULL;
        ck_assert_int_ge(asprintf(&grown, "%s,\"%d\"", many, i + 2), 0);
        free(many);
        many = grown;
    }
    char *many_params = NULL;
    ck_assert_int_ge(asprintf(&many_params, "%s]}", many), 0);
    create_refused("planner", O, many_params, OC_ERR_INVALID, "at most 50");
    free(many);
    free(many_params);
    /* Huge values are quoted short: the rule still fits in the message. */
    char *huge = malloc(5000), *hp = NULL;
    memset(huge, 'a', 4999);
    huge[4999] = '\0';
    ck_assert_int_ge(asprintf(&hp, "{\"name\":\"%s\"}", huge), 0);
    create_refused("planner", O, hp, OC_ERR_INVALID, "Discord allows 1 to 100");
    free(hp);
    ck_assert_int_ge(asprintf(&hp, "{\"name\":\"x\",\"participants\":[\"%s\"]}", huge), 0);
    create_refused("planner", O, hp, OC_ERR_INVALID, "is not a known agent");
    free(hp);
    ck_assert_int_ge(asprintf(&hp, "{\"name\":\"x\",\"allowedUserIds\":[\"%s\"]}", huge), 0);
    create_refused("planner", O, hp, OC_ERR_INVALID, "is not a Discord user id");
    free(hp);
    ck_assert_int_ge(asprintf(&hp, "{\"name\":\"x\",\"parentId\":\"%s\"}", huge), 0);
    create_refused("planner", O, hp, OC_ERR_INVALID, "is not a Discord snowflake");
    free(hp);
    ck_assert_int_ge(asprintf(&hp,
                              "{\"name\":\"x\",\"participants\":[\"reviewer\"],"
                              "\"callbackChannelId\":\"%s\",\"discussGuide\":\"g\"}",
                              huge),
                     0);
    create_refused("planner", O, hp, OC_ERR_INVALID, "is not a Discord channel id");
    free(hp);
    free(huge);
    /* The same agent twice, or the caller naming itself: refused, in both
     * modes, naming the entry (the caller is a member anyway). */
    create_refused("planner", O,
                   "{\"name\":\"x\",\"participants\":[\"reviewer\",\"coder\","
                   "\"reviewer\"]," CB ",\"discussGuide\":\"g\"}",
                   OC_ERR_INVALID, "participants[2] 'reviewer'");
    create_refused("planner", O, "{\"name\":\"x\",\"participants\":[\"coder\",\"coder\"]}",
                   OC_ERR_INVALID, "participants[1] 'coder'");
    create_refused("planner", O,
                   "{\"name\":\"x\",\"participants\":[\"reviewer\",\"planner\"]," CB
                   ",\"discussGuide\":\"g\"}",
                   OC_ERR_INVALID, "participants[1] 'planner'");
    create_refused("planner", O, "{\"name\":\"x\",\"participants\":[\"planner\"]}", OC_ERR_INVALID,
                   "participants[0] 'planner'");
    create_refused("planner", O,
                   "{\"name\":\"x\",\"allowedUserIds\":[\"" HUMAN_ID "\",\"" HUMAN_ID "\"]}",
                   OC_ERR_INVALID, "allowedUserIds[1]");
    /* Unicode: spaces, invisible or control characters and upper case
     * letters break the text-channel rules as their ASCII kin do. */
    const char *bad_names[] = {
        "design\\u00a0review", "design\\u3000review", "a\\u200bb",
        "a\\u2028b",           "a\\u0085b",           "\\ufeffdesign",
        "a\\u202eb",           "\\u00dcberblick",     "\\u0414\\u0430",
    };
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        char bad[128];
        snprintf(bad, sizeof bad, "{\"name\":\"%s\"}", bad_names[i]);
        create_refused("planner", O, bad, OC_ERR_INVALID, "not a valid Discord channel name");
    }
    ck_assert_uint_eq(story_request_count(), 0);
    ck_assert_int_eq(count_rows("discussions"), 0);
}
END_TEST

/* discord_channel_create in discussion mode with ctx changed by edit. */
static int create_with_ctx(json_t *ctx, json_t **res)
{
    char params[512];
    snprintf(params, sizeof params,
             "{\"name\":\"ctx-rules\",\"participants\":[\"reviewer\"],"
             "\"callbackChannelId\":\"%s\",\"discussGuide\":\"g\"}",
             ORIGIN);
    return tool("discord_channel_create", params, ctx, res);
}

START_TEST(test_create_context_rules)
{
    /* The trusted context must carry what a discussion records; each gap is
     * refused before any REST request, naming the field. */
    plugin_start();
    struct {
        const char *key;
        const char *value;
        const char *word;
    } bad[] = {
        {"agentId", NULL, "agentId"},
        {"sessionKey", NULL, "sessionKey"},
        {"workspaceDir", NULL, "workspaceDir"},
        {"workspaceDir", "relative/ws", "workspaceDir"},
        {"workspaceDir", "/nonexistent-dg-ws/planner", "workspaceDir"},
    };
    json_t *res;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *ctx = ctx_of("planner", ORIGIN);
        if (bad[i].value)
            json_object_set_new(ctx, bad[i].key, json_string(bad[i].value));
        else
            json_object_del(ctx, bad[i].key);
        ck_assert_int_eq(create_with_ctx(ctx, &res), OC_ERR_INVALID);
        ck_assert_msg(strstr(err_msg(res), bad[i].word), "%s", err_msg(res));
        json_decref(res);
        json_decref(ctx);
    }
    /* A file where the workspace should be is no workspace either. */
    char *file = tu_path(dir, "not-a-folder");
    ck_assert_int_eq(tu_write_file(file, "x"), 0);
    json_t *ctx = ctx_of("planner", ORIGIN);
    json_object_set_new(ctx, "workspaceDir", json_string(file));
    ck_assert_int_eq(create_with_ctx(ctx, &res), OC_ERR_INVALID);
    json_decref(res);
    json_decref(ctx);
    free(file);
    ck_assert_uint_eq(story_request_count(), 0);
    ck_assert_int_eq(count_rows("discussions"), 0);

    /* A trailing slash is the same folder: the callback with an absolute
     * path inside it works and stores the path relative to it. */
    ctx = ctx_of("planner", ORIGIN);
    char *slashed = NULL;
    ck_assert_int_ge(asprintf(&slashed, "%s/", ws), 0);
    json_object_set_new(ctx, "workspaceDir", json_string(slashed));
    ck_assert_int_eq(create_with_ctx(ctx, &res), OC_OK);
    char channel[32];
    snprintf(channel, sizeof channel, "%s",
             json_string_value(json_object_get(json_object_get(res, "details"), "channelId")));
    json_decref(res);
    json_decref(ctx);
    write_ws("plans/ctx.md", "summary\n");
    char *abs = tu_path(ws, "plans/ctx.md");
    /* A context without workspaceDir is fine for the callback: the stored
     * workspace counts, never the caller's. */
    ctx = ctx_of("planner", channel);
    json_object_del(ctx, "workspaceDir");
    json_t *pj = json_pack("{s:s}", "summaryPath", abs);
    char *params = json_dumps(pj, 0);
    ck_assert_int_eq(tool("discuss-callback", params, ctx, &res), OC_OK);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(res, "details"), "summaryPath")),
        "plans/ctx.md");
    json_decref(res);
    free(params);
    json_decref(pj);
    json_decref(ctx);
    free(abs);
    free(slashed);
}
END_TEST

START_TEST(test_create_unicode_name)
{
    /* Lower-case letters of any script are fine in a text-channel name. */
    plugin_start();
    json_t *ctx = ctx_of("planner", ORIGIN), *res;
    const char *names[] = {"\u8ba8\u8bba-\u56de\u8c03", "\u00fcberblick", "\u0434\u0430"};
    for (size_t i = 0; i < 3; i++) {
        json_t *pj = json_pack("{s:s}", "name", names[i]);
        char *params = json_dumps(pj, 0);
        int rc = tool("discord_channel_create", params, ctx, &res);
        ck_assert_msg(rc == OC_OK, "%s: %s", names[i], rc ? err_msg(res) : "");
        json_t *made = fake_discord_channel(
            fd, json_string_value(json_object_get(json_object_get(res, "details"), "channelId")));
        ck_assert_str_eq(json_string_value(json_object_get(made, "name")), names[i]);
        json_decref(made);
        json_decref(res);
        free(params);
        json_decref(pj);
    }
    json_decref(ctx);
}
END_TEST

START_TEST(test_create_guide_too_long)
{
    max_guide = 40;
    plugin_start();
    create_refused("planner", ORIGIN,
                   "{\"name\":\"x\",\"participants\":[\"reviewer\"]," CB ",\"discussGuide\":\""
                   "0123456789012345678901234567890123456789X"
                   "\"}",
                   OC_ERR_INVALID, "discussion.maxGuideChars (40)");
    /* 40 characters of UTF-8 (80 bytes) pass the character limit. */
    json_t *ctx = ctx_of("planner", ORIGIN), *res;
    char params[512];
    char guide[200] = "";
    for (int i = 0; i < 40; i++)
        strcat(guide, "\xc3\xa9");
    snprintf(params, sizeof params,
             "{\"name\":\"x\",\"participants\":[\"reviewer\"]," CB ",\"discussGuide\":\"%s\"}",
             guide);
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_OK);
    json_decref(res);
    json_decref(ctx);
    ck_assert_int_eq(count_rows("discussions"), 1);
}
END_TEST

START_TEST(test_create_no_nesting)
{
    plugin_start();
    const char *ch = open_discussion();
    char channel[32];
    snprintf(channel, sizeof channel, "%s", ch);
    ck_assert_int_eq(fake_discord_wait_messages(fd, channel, 1, WAIT_MS), 0); /* kickoff */
    size_t before = story_request_count();
    char params[512];
    snprintf(params, sizeof params,
             "{\"name\":\"inner\",\"participants\":[\"coder\"],"
             "\"callbackChannelId\":\"%s\",\"discussGuide\":\"nested\"}",
             channel);
    create_refused("planner", channel, params, OC_ERR_DENIED, "do not nest");
    create_refused("reviewer", channel, params, OC_ERR_DENIED, "do not nest");
    /* From the work channel, naming the discussion channel as the origin. */
    create_refused("planner", ORIGIN, params, OC_ERR_DENIED, "do not nest");
    ck_assert_uint_eq(story_request_count(), before);
    ck_assert_int_eq(count_rows("discussions"), 1);
    /* A plain channel from inside a discussion is fine (not a discussion). */
    json_t *ctx = ctx_of("planner", channel), *res;
    ck_assert_int_eq(tool("discord_channel_create", "{\"name\":\"side\"}", ctx, &res), OC_OK);
    json_decref(res);
    json_decref(ctx);
}
END_TEST

START_TEST(test_create_plain)
{
    plugin_start();
    json_t *ctx = ctx_of("planner", ORIGIN), *res;
    ck_assert_int_eq(tool("discord_channel_create",
                          "{\"name\":\"csm-callback\",\"participants\":[\"coder\"],"
                          "\"allowedUserIds\":[\"" HUMAN_ID "\"],\"topic\":\"t\"}",
                          ctx, &res),
                     OC_OK);
    json_t *d = json_object_get(res, "details");
    ck_assert_str_eq(json_string_value(json_object_get(d, "mode")), "plain");
    ck_assert_ptr_null(json_object_get(d, "discussionId"));
    const char *channel = json_string_value(json_object_get(d, "channelId"));
    json_t *made = fake_discord_channel(fd, channel);
    ck_assert_ptr_nonnull(made);
    json_decref(made);
    json_t *creates = requests_on("POST /guilds/{id}/channels");
    const char *members[] = {PLANNER_ID, CODER_ID, HUMAN_ID, MOD_ID};
    check_channel_request(json_array_get(creates, 0), members, 4);
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_array_get(creates, 0), "body"), "topic")),
                     "t");
    json_decref(creates);
    json_decref(res);
    json_decref(ctx);
    plugin_stop();
    ck_assert_uint_eq(story_request_count(), 1); /* nothing else: no kickoff */
    ck_assert_int_eq(count_rows("discussions"), 0);
}
END_TEST

START_TEST(test_create_rest_failure_leaves_no_row)
{
    plugin_start();
    char route[128];
    snprintf(route, sizeof route, "POST /guilds/%s/channels", fake_discord_guild_id(fd));
    ck_assert_int_eq(fake_discord_add_fault(fd, route, FD_FAULT_403, 1, 0, 0), 0);
    json_t *ctx = ctx_of("planner", ORIGIN), *res;
    char params[512];
    snprintf(params, sizeof params,
             "{\"name\":\"csm\",\"participants\":[\"reviewer\"],"
             "\"callbackChannelId\":\"%s\",\"discussGuide\":\"g\"}",
             ORIGIN);
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_ERR_DENIED);
    ck_assert_ptr_nonnull(strstr(err_msg(res), "Missing Permissions"));
    json_decref(res);
    ck_assert_int_eq(count_rows("discussions"), 0);
    ck_assert_int_eq(count_rows("discussion_members"), 0);
    ck_assert_uint_eq(story_request_count(), 1); /* a 403 is not retried */
    /* The next try works. */
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_OK);
    json_decref(res);
    json_decref(ctx);
    ck_assert_int_eq(count_rows("discussions"), 1);
}
END_TEST

START_TEST(test_create_guide_inert)
{
    plugin_start();
    json_t *ctx = ctx_of("planner", ORIGIN), *res;
    const char *guide = "Ping @everyone and @here and <@" HUMAN_ID "> and {summaryPath} {status}";
    json_t *pj = json_pack("{s:s,s:[s],s:s,s:s}", "name", "inert", "participants", "coder",
                           "callbackChannelId", ORIGIN, "discussGuide", guide);
    char *params = json_dumps(pj, 0);
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_OK);
    const char *channel =
        json_string_value(json_object_get(json_object_get(res, "details"), "channelId"));
    ck_assert_int_eq(fake_discord_wait_messages(fd, channel, 1, WAIT_MS), 0);
    json_t *r = only_message_request(channel);
    json_t *body = json_object_get(r, "body");
    const char *content = json_string_value(json_object_get(body, "content"));
    ck_assert_ptr_nonnull(strstr(content, guide)); /* verbatim, nothing expanded */
    json_t *users = json_object_get(json_object_get(body, "allowed_mentions"), "users");
    ck_assert_uint_eq(json_array_size(users), 2); /* planner and coder only */
    ck_assert(!str_in(users, HUMAN_ID));
    json_decref(r);
    json_decref(res);
    free(params);
    json_decref(pj);
    json_decref(ctx);
}
END_TEST

/* ---- idempotency per ctx.toolCallId ------------------------------------------------------- */

static json_t *ctx_call(const char *agent, const char *channel, const char *call_id)
{
    json_t *ctx = ctx_of(agent, channel);
    if (call_id)
        json_object_set_new(ctx, "toolCallId", json_string(call_id));
    return ctx;
}

static char *discussion_params(const char *name)
{
    char *params = NULL;
    ck_assert_int_ge(asprintf(&params,
                              "{\"name\":\"%s\",\"participants\":[\"reviewer\","
                              "\"coder\"],\"callbackChannelId\":\"%s\",\"discussGuide\":\"%s\"}",
                              name, ORIGIN, GUIDE),
                     0);
    return params;
}

/* Number of recorded requests on a route template with a 2xx answer. */
static int ok_requests_on(const char *route)
{
    json_t *reqs = requests_on(route);
    int n = 0;
    size_t i;
    json_t *r;
    json_array_foreach(reqs, i, r)
        n += json_integer_value(json_object_get(r, "status")) / 100 == 2;
    json_decref(reqs);
    return n;
}

static int all_requests_on(const char *route)
{
    json_t *reqs = requests_on(route);
    int n = (int)json_array_size(reqs);
    json_decref(reqs);
    return n;
}

#define CREATE_ROUTE "POST /guilds/{id}/channels"
#define LIST_ROUTE "GET /guilds/{id}/channels"

/* The same discussion asked for twice with one toolCallId (the host lost
 * the first answer), then again after a restart: one channel, one row, one
 * kickoff, and the same result every time. */
START_TEST(test_create_repeat_returns_first_result)
{
    plugin_start();
    json_t *ctx = ctx_call("planner", ORIGIN, "run-7:0:0"), *first, *again;
    char *params = discussion_params("csm-callback");
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &first), OC_OK);
    json_t *d = json_object_get(first, "details");
    ck_assert_str_eq(json_string_value(json_object_get(d, "mode")), "discussion");
    char channel[32];
    snprintf(channel, sizeof channel, "%s", json_string_value(json_object_get(d, "channelId")));
    ck_assert_int_eq(fake_discord_wait_messages(fd, channel, 1, WAIT_MS), 0);

    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &again), OC_OK);
    ck_assert_msg(json_equal(first, again), "the repeat's result differs from the first");
    json_decref(again);
    plugin_restart();
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &again), OC_OK);
    ck_assert_msg(json_equal(first, again), "the repeat after a restart differs");
    json_decref(again);
    plugin_stop();

    /* One creation, with the call's marker at the end of the topic; no
     * lookup was needed (the result was recorded). */
    json_t *creates = requests_on(CREATE_ROUTE);
    ck_assert_uint_eq(json_array_size(creates), 1);
    const char *members[] = {PLANNER_ID, REVIEWER_ID, CODER_ID, MOD_ID};
    check_channel_request(json_array_get(creates, 0), members, 4);
    const char *topic = json_string_value(
        json_object_get(json_object_get(json_array_get(creates, 0), "body"), "topic"));
    ck_assert_msg(topic && strncmp(topic, "dg-call:", 8) == 0 && strlen(topic) == 24, "topic: %s",
                  topic ? topic : "(none)");
    json_decref(creates);
    ck_assert_int_eq(all_requests_on(LIST_ROUTE), 0);
    ck_assert_int_eq(count_rows("discussions"), 1);
    ck_assert_int_eq(count_rows("discussion_members"), 3);
    ck_assert_int_eq(count_rows("tool_calls WHERE state = 'done'"), 1);
    ck_assert_uint_eq(fake_discord_message_count(fd, channel), 1); /* one kickoff */
    ck_assert_uint_eq(fake_discord_message_count(fd, NULL), 1);
    json_decref(first);
    json_decref(ctx);
    free(params);
}
END_TEST

START_TEST(test_create_plain_repeat_and_other_ids)
{
    plugin_start();
    const char *params = "{\"name\":\"side\",\"topic\":\"notes\"}";
    json_t *ctx = ctx_call("planner", ORIGIN, "call-a"), *first, *again;
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &first), OC_OK);
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &again), OC_OK);
    ck_assert(json_equal(first, again));
    json_decref(again);
    ck_assert_int_eq(all_requests_on(CREATE_ROUTE), 1);
    json_t *creates = requests_on(CREATE_ROUTE);
    const char *topic = json_string_value(
        json_object_get(json_object_get(json_array_get(creates, 0), "body"), "topic"));
    ck_assert_msg(strncmp(topic, "notes\ndg-call:", 14) == 0, "topic: %s", topic);
    json_decref(creates);

    /* Another toolCallId is another call: a second channel. */
    json_t *ctx2 = ctx_call("planner", ORIGIN, "call-b");
    ck_assert_int_eq(tool("discord_channel_create", params, ctx2, &again), OC_OK);
    ck_assert(!json_equal(first, again));
    json_decref(again);
    ck_assert_int_eq(all_requests_on(CREATE_ROUTE), 2);
    /* The same id with other params (a reused id) is another call too. */
    ck_assert_int_eq(tool("discord_channel_create", "{\"name\":\"other\"}", ctx, &again), OC_OK);
    ck_assert_str_ne(
        json_string_value(json_object_get(json_object_get(again, "details"), "channelId")),
        json_string_value(json_object_get(json_object_get(first, "details"), "channelId")));
    json_decref(again);
    ck_assert_int_eq(all_requests_on(CREATE_ROUTE), 3);
    /* Without an id, nothing is recorded and nothing is deduplicated. */
    json_t *plain = ctx_of("planner", ORIGIN);
    ck_assert_int_eq(tool("discord_channel_create", params, plain, &again), OC_OK);
    json_decref(again);
    ck_assert_int_eq(tool("discord_channel_create", params, plain, &again), OC_OK);
    json_decref(again);
    ck_assert_int_eq(all_requests_on(CREATE_ROUTE), 5);
    ck_assert_int_eq(count_rows("tool_calls"), 3);
    ck_assert_int_eq(count_rows("discussions"), 0);
    json_decref(plain);
    json_decref(ctx2);
    json_decref(ctx);
    json_decref(first);
}
END_TEST

/* Discord created the channel but the answer was lost (as when the process
 * dies between Discord's answer and the commit): the repeat finds that
 * channel by name and marker instead of creating a second one. */
START_TEST(test_create_repeat_recovers_lost_channel)
{
    plugin_start();
    char route[128];
    snprintf(route, sizeof route, "POST /guilds/%s/channels", fake_discord_guild_id(fd));
    ck_assert_int_eq(fake_discord_add_fault(fd, route, FD_FAULT_DROP_AFTER, 1, 0, 0), 0);
    /* A decoy: same name, no marker (another call's channel). */
    ck_assert_int_eq(fake_discord_add_channel(fd, NULL, "csm-callback", NULL), 0);
    json_t *ctx = ctx_call("planner", ORIGIN, "run-9:0:0"), *res;
    char *params = discussion_params("csm-callback");
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_ERR_IO);
    json_decref(res);
    ck_assert_int_eq(count_rows("discussions"), 0);
    ck_assert_int_eq(count_rows("tool_calls WHERE state = 'pending'"), 1);
    json_t *made = requests_on(CREATE_ROUTE);
    ck_assert_uint_eq(json_array_size(made), 1);
    json_decref(made);
    json_t *chans = fake_discord_channels(fd);
    ck_assert_uint_eq(json_array_size(chans), 3); /* work, decoy, the lost one */
    const char *lost = json_string_value(json_object_get(json_array_get(chans, 2), "id"));
    char lost_id[32];
    snprintf(lost_id, sizeof lost_id, "%s", lost);
    json_decref(chans);

    /* The lookup itself fails: nothing is created, the intent stays. */
    snprintf(route, sizeof route, "GET /guilds/%s/channels", fake_discord_guild_id(fd));
    ck_assert_int_eq(fake_discord_add_fault(fd, route, FD_FAULT_403, 1, 0, 0), 0);
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_ERR_DENIED);
    ck_assert_ptr_nonnull(strstr(err_msg(res), "earlier attempt"));
    json_decref(res);
    ck_assert_int_eq(all_requests_on(CREATE_ROUTE), 1);

    /* After a restart, the repeat recovers the lost channel. */
    plugin_restart();
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_OK);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(res, "details"), "channelId")), lost_id);
    json_t *first = res;
    ck_assert_int_eq(fake_discord_wait_messages(fd, lost_id, 1, WAIT_MS), 0);
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_OK);
    ck_assert(json_equal(first, res));
    json_decref(res);
    json_decref(first);
    plugin_stop();
    ck_assert_int_eq(all_requests_on(CREATE_ROUTE), 1);
    ck_assert_int_eq(ok_requests_on(LIST_ROUTE), 1);
    ck_assert_int_eq(count_rows("discussions"), 1);
    ck_assert_int_eq(count_rows("tool_calls WHERE state = 'done'"), 1);
    ck_assert_uint_eq(fake_discord_message_count(fd, lost_id), 1);
    ck_assert_uint_eq(fake_discord_message_count(fd, NULL), 1);
    json_decref(ctx);
    free(params);
}
END_TEST

/* The answer of the channel's creation is lost and nobody repeats the call
 * (OpenClaw does not replay a run's tool call): once the grace has passed
 * (the intent aged here) the sweeper deletes the channel the attempt made
 * and tells the origin, mentioning the initiator. */
START_TEST(test_create_not_repeated_is_undone_and_the_initiator_told)
{
    plugin_start();
    char route[128];
    snprintf(route, sizeof route, "POST /guilds/%s/channels", fake_discord_guild_id(fd));
    ck_assert_int_eq(fake_discord_add_fault(fd, route, FD_FAULT_DROP_AFTER, 1, 0, 0), 0);
    json_t *ctx = ctx_call("planner", ORIGIN, "run-9:0:0"), *res;
    char *params = discussion_params("csm-undone");
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_ERR_IO);
    json_decref(res);
    ck_assert_int_eq(count_rows("discussions"), 0);
    ck_assert_int_eq(count_rows("tool_calls WHERE state = 'pending'"), 1);
    json_t *chans = fake_discord_channels(fd);
    ck_assert_uint_eq(json_array_size(chans), 2); /* work and the lost one */
    char lost[32];
    snprintf(lost, sizeof lost, "%s",
             json_string_value(json_object_get(json_array_get(chans, 1), "id")));
    json_decref(chans);
    ck_assert_int_eq(dg_store_begin(P->store), OC_OK);
    dg_stmt *age =
        dg_store_stmt(P->store, "UPDATE tool_calls SET started_at_ms = started_at_ms - 660000");
    ck_assert_ptr_nonnull(age);
    ck_assert_int_eq(dg_store_run(age), DG_OK);
    ck_assert_int_eq(dg_store_commit(P->store), OC_OK);
    ck_assert_int_eq(fake_discord_wait_messages(fd, ORIGIN, 1, WAIT_MS), 0);
    json_t *told = fake_discord_messages(fd, ORIGIN);
    ck_assert_uint_eq(json_array_size(told), 1);
    const char *text = json_string_value(json_object_get(json_array_get(told, 0), "content"));
    ck_assert_msg(strstr(text, "removed again") && strstr(text, "<@" PLANNER_ID ">"),
                  "the origin was told without mentioning planner: %s", text);
    json_decref(told);
    chans = fake_discord_channels(fd);
    ck_assert_uint_eq(json_array_size(chans), 1); /* the lost one deleted */
    json_decref(chans);
    ck_assert_int_eq(count_rows("tool_calls"), 0);
    plugin_stop();
    json_decref(ctx);
    free(params);
}
END_TEST

/* A first attempt that Discord refused made nothing: the repeat looks,
 * finds nothing, and creates the channel once. */
START_TEST(test_create_repeat_after_refusal_creates_once)
{
    plugin_start();
    char route[128];
    snprintf(route, sizeof route, "POST /guilds/%s/channels", fake_discord_guild_id(fd));
    ck_assert_int_eq(fake_discord_add_fault(fd, route, FD_FAULT_403, 1, 0, 0), 0);
    json_t *ctx = ctx_call("planner", ORIGIN, "call-403"), *res;
    const char *params = "{\"name\":\"side\"}";
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_ERR_DENIED);
    json_decref(res);
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_OK);
    json_decref(res);
    ck_assert_int_eq(all_requests_on(LIST_ROUTE), 1);
    ck_assert_int_eq(all_requests_on(CREATE_ROUTE), 2);
    ck_assert_int_eq(ok_requests_on(CREATE_ROUTE), 1);
    json_decref(ctx);
}
END_TEST

static struct {
    const char *params;
    int rc;
    json_t *res;
} slow_call;

/* Off the test's thread: no ck_assert here (checked after the join). */
static void *slow_create(void *arg)
{
    json_t *ctx = arg, *pj = json_loads(slow_call.params, 0, NULL);
    const oc_tool *t = NULL;
    for (int k = 0; k < H.ntools; k++)
        if (strcmp(H.tools[k]->name, "discord_channel_create") == 0)
            t = H.tools[k];
    slow_call.res = NULL;
    slow_call.rc = t && pj ? t->execute(P, pj, ctx, &slow_call.res) : OC_ERR_INTERNAL;
    json_decref(pj);
    return NULL;
}

/* A repeat while the first call still waits for Discord is refused, not
 * mistaken for the remains of a crash. */
START_TEST(test_create_repeat_while_running_is_refused)
{
    plugin_start();
    char route[128];
    snprintf(route, sizeof route, "POST /guilds/%s/channels", fake_discord_guild_id(fd));
    ck_assert_int_eq(fake_discord_add_fault(fd, route, FD_FAULT_DELAY, 1, 0, 1500), 0);
    json_t *ctx = ctx_call("planner", ORIGIN, "call-slow"), *res;
    slow_call.params = "{\"name\":\"side\"}";
    pthread_t th;
    pthread_create(&th, NULL, slow_create, ctx);
    ck_assert_int_eq(fake_discord_wait_requests(fd, 1, WAIT_MS), 0);
    ck_assert_int_eq(tool("discord_channel_create", slow_call.params, ctx, &res), OC_ERR_CONFLICT);
    ck_assert_ptr_nonnull(strstr(err_msg(res), "still running"));
    json_decref(res);
    pthread_join(th, NULL);
    ck_assert_int_eq(slow_call.rc, OC_OK);
    ck_assert_int_eq(tool("discord_channel_create", slow_call.params, ctx, &res), OC_OK);
    ck_assert(json_equal(slow_call.res, res));
    json_decref(res);
    json_decref(slow_call.res);
    ck_assert_int_eq(all_requests_on(CREATE_ROUTE), 1);
    ck_assert_int_eq(all_requests_on(LIST_ROUTE), 0);
    json_decref(ctx);
}
END_TEST

static int callback_id(const char *call_id, const char *path, json_t **res)
{
    json_t *ctx = ctx_call("planner", disc, call_id);
    json_t *pj = json_pack("{s:s}", "summaryPath", path);
    char *params = json_dumps(pj, 0);
    int rc = tool("discuss-callback", params, ctx, res);
    free(params);
    json_decref(pj);
    json_decref(ctx);
    return rc;
}

/* The callback repeated with its toolCallId gets the first success (not
 * OC_ERR_CONFLICT) and posts no second result; another id is refused as
 * before. */
START_TEST(test_callback_repeat_returns_first_result)
{
    json_t *first, *res;
    ck_assert_int_eq(callback_id("run-3:1:0", "plans/ok.md", &first), OC_OK);
    ck_assert_int_eq(fake_discord_wait_messages(fd, ORIGIN, 1, WAIT_MS), 0);
    ck_assert_int_eq(callback_id("run-3:1:0", "plans/ok.md", &res), OC_OK);
    ck_assert_msg(json_equal(first, res), "the repeat's result differs from the first");
    json_decref(res);
    plugin_restart();
    ck_assert_int_eq(callback_id("run-3:1:0", "plans/ok.md", &res), OC_OK);
    ck_assert(json_equal(first, res));
    json_decref(res);
    /* Another id, or the same id for another path: a new call, refused. */
    ck_assert_int_eq(callback_id("run-4:0:0", "plans/ok.md", &res), OC_ERR_CONFLICT);
    json_decref(res);
    ck_assert_int_eq(callback_id("run-3:1:0", "plans/other.md", &res), OC_ERR_CONFLICT);
    json_decref(res);
    ck_assert_int_eq(callback_id(NULL, "plans/ok.md", &res), OC_ERR_CONFLICT);
    json_decref(res);
    plugin_stop();
    ck_assert_uint_eq(fake_discord_message_count(fd, ORIGIN), 1);
    ck_assert_int_eq(count_rows("discussion_overrides"), 1);
    ck_assert_int_eq(patches_of(H.sessions[0].key), 1);
    ck_assert_int_eq(count_rows("tool_calls"), 1);
    json_decref(first);
}
END_TEST

static void *racer_same_id(void *arg)
{
    int i = (int)(intptr_t)arg;
    json_t *res = NULL;
    pthread_barrier_wait(&barrier);
    concurrent_rc[i] = callback_id("run-5:0:0", "plans/ok.md", &res);
    json_decref(res);
    return NULL;
}

/* Two copies of one call racing: both get the one success. */
START_TEST(test_callback_same_id_racing)
{
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_t a, b;
    pthread_create(&a, NULL, racer_same_id, (void *)(intptr_t)0);
    pthread_create(&b, NULL, racer_same_id, (void *)(intptr_t)1);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&barrier);
    ck_assert_int_eq(concurrent_rc[0], OC_OK);
    ck_assert_int_eq(concurrent_rc[1], OC_OK);
    ck_assert_int_eq(fake_discord_wait_messages(fd, ORIGIN, 1, WAIT_MS), 0);
    plugin_stop();
    ck_assert_uint_eq(fake_discord_message_count(fd, ORIGIN), 1);
    ck_assert_int_eq(count_rows("discussions WHERE status = 'closed'"), 1);
}
END_TEST

/* ---- in-transaction helpers for the turn path -------------------------------------------- */

START_TEST(test_lookup_and_notices)
{
    plugin_start();
    const char *ch = open_discussion();
    char channel[32];
    snprintf(channel, sizeof channel, "%s", ch);
    dg_store *st = P->store;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_discuss_lookup_locked(st, ORIGIN, NULL), DG_DISCUSSION_NONE);
    ck_assert_int_eq(dg_discuss_lookup_locked(st, channel, NULL), DG_DISCUSSION_ACTIVE);
    dg_discussion d;
    ck_assert_int_eq(dg_discuss_lookup_locked(st, channel, &d), DG_DISCUSSION_ACTIVE);
    ck_assert_str_eq(d.initiator_agent_id, "planner");
    dg_discussion_clear(&d);
    /* Notices: once per message, at most one per cooldown per channel. */
    ck_assert_int_eq(dg_discuss_claim_closed_notice_locked(st, channel, "1", 1000, 60000), 1);
    ck_assert_int_eq(dg_discuss_claim_closed_notice_locked(st, channel, "1", 1001, 60000), 0);
    ck_assert_int_eq(dg_discuss_claim_closed_notice_locked(st, channel, "2", 2000, 60000), 0);
    ck_assert_int_eq(dg_discuss_claim_closed_notice_locked(st, channel, "3", 61000, 60000), 1);
    ck_assert_int_eq(dg_discuss_claim_closed_notice_locked(st, channel, "2", 99000, 60000), 0);
    ck_assert_int_eq(dg_discuss_claim_closed_notice_locked(st, channel, "4", 61001, 0), 1);
    ck_assert_int_eq(dg_discuss_claim_closed_notice_locked(st, channel, "5", 61001, 0), 1);
    ck_assert_int_eq(dg_discuss_claim_closed_notice_locked(st, channel, "5", 61002, 0), 0);
    dg_store_commit(st);
    /* An active channel's sessions get no override when seen. */
    dg_discuss_session_seen(P, "agent:coder:discord:channel:x", "coder", channel);
    dg_discuss_session_seen(P, "agent:coder:discord:channel:" ORIGIN, "coder", ORIGIN);
    ck_assert_int_eq(H.npatches, 0);
    ck_assert_int_eq(count_rows("discussion_overrides"), 0);
}
END_TEST

/* ---- summary conventions ----------------------------------------------------------- */

/* Content of message i of channel, once it is there; malloc'd. */
static char *message_text(const char *channel, size_t i)
{
    ck_assert_int_eq(fake_discord_wait_messages(fd, channel, i + 1, WAIT_MS), 0);
    json_t *msgs = fake_discord_messages(fd, channel);
    const char *c = json_string_value(json_object_get(json_array_get(msgs, i), "content"));
    ck_assert_ptr_nonnull(c);
    char *out = strdup(c);
    json_decref(msgs);
    return out;
}

static void has_text(const char *text, const char *needle)
{
    ck_assert_msg(strstr(text, needle) != NULL, "'%s' not in:\n%s", needle, text);
}

/* A discussion that reaches its token budget: the initiator is asked to
 * wrap up (with the summary path) and keeps the turn, the others are
 * silenced, the wrap-up time is set (so it expires if nobody closes it),
 * and the initiator's callback closes it as usual. */
static int status_of(const char *agent, const char *channel, const char *params, json_t **res);

START_TEST(test_discussion_budget_asks_the_initiator_to_wrap_up)
{
    snprintf(extra_top, sizeof extra_top, ",\"budget\":{\"discussionTokens\":100}");
    plugin_start();
    const char *ch = open_discussion();
    char channel[32];
    snprintf(channel, sizeof channel, "%s", ch);
    ck_assert_int_eq(fake_discord_wait_messages(fd, channel, 1, WAIT_MS), 0); /* kickoff */
    ck_assert_int_eq(routed_to_noreply("reviewer", channel, NULL), 0);
    json_t *ctx = ctx_of("reviewer", channel);
    json_t *ev = json_pack("{s:s, s:s, s:{s:i, s:i}}", "runId", "run-r1", "model", "m", "usage",
                           "input", 90, "output", 20);
    int found = 0;
    for (int i = 0; i < H.nhooks; i++)
        if (strcmp(H.hooks[i].name, "llm_output") == 0) {
            found = 1;
            ck_assert_int_eq(H.hooks[i].fn(P, ev, ctx, NULL), OC_OK);
        }
    ck_assert(found);
    json_decref(ev);
    json_decref(ctx);
    char *text = message_text(channel, 1);
    has_text(text, "Discussion Budget Reached");
    has_text(text, "110 tokens in this discussion");
    has_text(text, "<@" PLANNER_ID ">");
    has_text(text, "discuss-callback");
    free(text);
    ck_assert_int_eq(routed_to_noreply("reviewer", channel, NULL), 1);
    ck_assert_int_eq(routed_to_noreply("coder", channel, NULL), 1);
    ck_assert_int_eq(routed_to_noreply("planner", channel, NULL), 0);
    dg_discussion d = load_row(channel);
    ck_assert_int_gt(d.wrapup_at_ms, 0);
    dg_discussion_clear(&d);
    /* discussion_status shows what it cost. */
    json_t *st = NULL;
    ck_assert_int_eq(status_of("planner", channel, "{}", &st), OC_OK);
    json_t *cost = json_object_get(json_object_get(st, "details"), "cost");
    ck_assert_int_eq(json_integer_value(json_object_get(cost, "tokensIn")), 90);
    ck_assert_int_eq(json_integer_value(json_object_get(cost, "tokensOut")), 20);
    ck_assert(json_is_integer(json_object_get(cost, "wallSec")));
    json_decref(st);
    write_ws(SUMMARY, "# summary\n");
    json_t *res;
    int rc = callback("planner", channel, SUMMARY, &res);
    ck_assert_msg(rc == OC_OK, "callback: %s", err_msg(res));
    json_decref(res);
}
END_TEST

/* summaryDir: the kickoff names <summaryDir>/<channel name>.md, a bare file
 * name is found there first, and the stored path is the one found. */
START_TEST(test_summary_dir_convention)
{
    snprintf(extra_disc, sizeof extra_disc, ",\"summaryDir\":\"notes/talks/\"");
    plugin_start();
    char ch[32];
    snprintf(ch, sizeof ch, "%s", open_discussion());
    char *kick = message_text(ch, 0);
    has_text(kick, "notes/talks/csm-callback.md");
    free(kick);
    write_ws("notes/talks/csm-callback.md", "# Decided\nship it\n");
    write_ws("csm-callback.md", "a decoy at the workspace's top\n");
    json_t *res;
    ck_assert_int_eq(callback("planner", ch, "csm-callback.md", &res), OC_OK);
    json_t *d = json_object_get(res, "details");
    ck_assert_str_eq(json_string_value(json_object_get(d, "summaryPath")),
                     "notes/talks/csm-callback.md");
    json_decref(res);
    dg_discussion row = load_row(ch);
    ck_assert_str_eq(row.summary_path, "notes/talks/csm-callback.md");
    dg_discussion_clear(&row);
    char *result = message_text(ORIGIN, 0);
    has_text(result, "notes/talks/csm-callback.md");
    free(result);
}
END_TEST

/* Not in summaryDir: the name is taken as given (from the workspace), and a
 * refusal is the one the path as written gets. */
START_TEST(test_summary_dir_fallback_and_refusals)
{
    write_ws("top.md", "at the top\n");
    refused("planner", disc, "nowhere.md", OC_ERR_NOT_FOUND, "nowhere.md");
    char *lnk = tu_path(ws, "plans/discussions");
    ck_assert_int_eq(mkdir(lnk, 0755), 0);
    free(lnk);
    refused("planner", disc, "nowhere.md", OC_ERR_NOT_FOUND, "nowhere.md");
    json_t *res;
    ck_assert_int_eq(callback("planner", disc, "top.md", &res), OC_OK);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(res, "details"), "summaryPath")),
        "top.md");
    json_decref(res);
}
END_TEST

/* A required heading missing: OC_ERR_INVALID naming it, nothing changed;
 * with every heading the callback closes. The kickoff shows the template. */
START_TEST(test_summary_template_headings)
{
    char *tpl = tu_path(dir, "summary-template.md");
    ck_assert_int_eq(tu_write_file(tpl, "# Summary layout\n\n## Decision\n## Open questions\n"
                                        "Write the decision first.\n"),
                     0);
    snprintf(extra_disc, sizeof extra_disc, ",\"summaryTemplate\":\"%s\"", tpl);
    free(tpl);
    plugin_start();
    char ch[32];
    snprintf(ch, sizeof ch, "%s", open_discussion());
    char *kick = message_text(ch, 0);
    has_text(kick, "Summary template");
    has_text(kick, "## Decision\n## Open questions\nWrite the decision first.");
    free(kick);
    write_ws("plans/s.md", "# Summary layout\n## Decision\nFriday.\n##Open questions\n");
    json_t *res;
    ck_assert_int_eq(callback("planner", ch, "plans/s.md", &res), OC_ERR_INVALID);
    has_text(err_msg(res), "\"## Open questions\"");
    ck_assert_ptr_null(strstr(err_msg(res), "\"## Decision\""));
    json_decref(res);
    dg_discussion row = load_row(ch);
    ck_assert_int_eq(row.status, DG_DISCUSSION_ACTIVE);
    dg_discussion_clear(&row);
    ck_assert_uint_eq(fake_discord_message_count(fd, ORIGIN), 0);
    /* Blanks around a heading do not matter; its words do. */
    write_ws("plans/s.md", "  ## Decision  \r\nFriday.\n## Open questions\n# Summary layout");
    ck_assert_int_eq(callback("planner", ch, "plans/s.md", &res), OC_OK);
    json_decref(res);
    row = load_row(ch);
    ck_assert_int_eq(row.status, DG_DISCUSSION_CLOSED);
    dg_discussion_clear(&row);
}
END_TEST

/* A template that cannot serve is an init error naming the key. */
START_TEST(test_summary_template_refused_at_init)
{
    char *tpl = tu_path(dir, "no-headings.md");
    ck_assert_int_eq(tu_write_file(tpl, "just words\n"), 0);
    const char *paths[] = {tpl, "/nonexistent/summary.md"};
    for (size_t i = 0; i < 2; i++) {
        char text[2048];
        snprintf(text, sizeof text,
                 "{\"noReplyProvider\":\"n\",\"noReplyModel\":\"m\",\"dbPath\":\"%s\","
                 "\"discord\":{\"moderatorUserId\":\"%s\"},"
                 "\"discussion\":{\"summaryTemplate\":\"%s\"}}",
                 db, MOD_ID, paths[i]);
        json_t *cfg = tu_json(text);
        void *state = NULL;
        char e[1024] = "";
        ck_assert_int_eq(oc_plugin_entry()->init(&api, cfg, &state, e, sizeof e), OC_ERR_INVALID);
        json_decref(cfg);
        ck_assert_ptr_null(state);
        has_text(e, "discussion.summaryTemplate");
        has_text(e, paths[i]);
    }
    free(tpl);
}
END_TEST

/* With previewChars n: open the story's discussion, close it with a summary
 * of this text, and return the result message (malloc'd). */
static char *result_with_preview(long n, const char *summary)
{
    snprintf(extra_disc, sizeof extra_disc, ",\"previewChars\":%ld", n);
    plugin_start();
    char ch[32];
    snprintf(ch, sizeof ch, "%s", open_discussion());
    write_ws("plans/p.md", summary);
    json_t *res;
    ck_assert_int_eq(callback("planner", ch, "plans/p.md", &res), OC_OK);
    json_decref(res);
    return message_text(ORIGIN, 0);
}

/* The result carries the first previewChars characters, cut on a line
 * break, quoted and inert: no mention, channel link or placeholder works. */
START_TEST(test_summary_preview)
{
    char *r = result_with_preview(80, "## Decision\nShip on Friday, ask @everyone and <@" HUMAN_ID
                                      ">.\n{status} <#" ORIGIN "> and a third line that "
                                      "is long enough\n");
    has_text(r, "Summary preview:\n> ## Decision\n> Ship on Friday, ask @\xE2\x80\x8B"
                "everyone and <\xE2\x80\x8B@\xE2\x80\x8B" HUMAN_ID ">. ...\n\n");
    ck_assert_ptr_null(strstr(r, "third line"));
    ck_assert_ptr_null(strstr(r, "@everyone"));
    ck_assert_ptr_null(strstr(r, "<@" HUMAN_ID));
    /* {status} of the template is still filled once, the summary's never. */
    has_text(r, "completed");
    free(r);
}
END_TEST

/* previewChars 0: no preview at all; a short summary comes whole and uncut. */
START_TEST(test_summary_preview_off_and_short)
{
    char *r = result_with_preview(0, "Short {status} text.\n");
    ck_assert_ptr_null(strstr(r, "Summary preview"));
    ck_assert_ptr_null(strstr(r, "Short"));
    free(r);
    plugin_stop();
    extra_disc[0] = '\0'; /* the default, 400 */
    plugin_start();
    char ch[32];
    json_t *res, *ctx = ctx_of("planner", ORIGIN);
    char params[512];
    snprintf(params, sizeof params,
             "{\"name\":\"second\",\"participants\":[\"reviewer\"],"
             "\"callbackChannelId\":\"%s\",\"discussGuide\":\"again\"}",
             ORIGIN);
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_OK);
    snprintf(ch, sizeof ch, "%s",
             json_string_value(json_object_get(json_object_get(res, "details"), "channelId")));
    json_decref(res);
    json_decref(ctx);
    ck_assert_int_eq(callback("planner", ch, "plans/p.md", &res), OC_OK);
    json_decref(res);
    r = message_text(ORIGIN, 1);
    has_text(r, "Summary preview:\n> Short {status} text.\n\nSource discussion channel");
    free(r);
}
END_TEST

/* ---- reading tools: discussion_status, discussion_list -------------------------- */

/* planner opens a discussion named name with these participants (a JSON
 * array's text); returns its channel id into ch and the discussion id. */
static int64_t open_named(const char *name, const char *participants, char ch[32])
{
    json_t *ctx = ctx_of("planner", ORIGIN), *res;
    char params[512];
    snprintf(params, sizeof params,
             "{\"name\":\"%s\",\"participants\":%s,"
             "\"callbackChannelId\":\"%s\",\"discussGuide\":\"Decide.\"}",
             name, participants, ORIGIN);
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_OK);
    json_t *d = json_object_get(res, "details");
    snprintf(ch, 32, "%s", json_string_value(json_object_get(d, "channelId")));
    int64_t id = json_integer_value(json_object_get(d, "discussionId"));
    json_decref(res);
    json_decref(ctx);
    return id;
}

/* discussion_status as agent from channel with params; status returned. */
static int status_of(const char *agent, const char *channel, const char *params, json_t **res)
{
    json_t *ctx = ctx_of(agent, channel);
    int rc = tool("discussion_status", params, ctx, res);
    json_decref(ctx);
    return rc;
}

static const char *dstr(const json_t *res, const char *key)
{
    return json_string_value(json_object_get(json_object_get(res, "details"), key));
}

START_TEST(test_status_tool)
{
    plugin_start();
    char ch[32], other[32], params[128];
    int64_t id = open_named("talk-one", "[\"reviewer\",\"coder\"]", ch);
    int64_t id2 = open_named("talk-two", "[\"reviewer\"]", other);
    json_t *res;
    /* Without params, in the discussion channel: that discussion. */
    ck_assert_int_eq(status_of("reviewer", ch, "{}", &res), OC_OK);
    json_t *d = json_object_get(res, "details");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "discussionId")), id);
    ck_assert_str_eq(dstr(res, "status"), "active");
    ck_assert_str_eq(dstr(res, "name"), "talk-one");
    ck_assert_str_eq(dstr(res, "initiator"), "planner");
    ck_assert_str_eq(dstr(res, "role"), "participant");
    ck_assert_str_eq(dstr(res, "originChannelId"), ORIGIN);
    ck_assert_uint_eq(json_array_size(json_object_get(d, "participants")), 2);
    ck_assert_ptr_nonnull(dstr(res, "createdAt"));
    ck_assert(json_is_null(json_object_get(d, "closedAt")));
    ck_assert(json_is_null(json_object_get(d, "summaryPath")));
    json_t *turn = json_object_get(d, "turn");
    ck_assert_str_eq(json_string_value(json_object_get(turn, "state")), "speaking");
    ck_assert_str_eq(json_string_value(json_object_get(turn, "speaker")), "reviewer");
    ck_assert_uint_eq(json_array_size(json_object_get(turn, "order")), 3);
    ck_assert_uint_eq(json_array_size(json_object_get(turn, "passed")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(turn, "agentMessages")), 0);
    json_decref(res);
    /* By id or channel from elsewhere: members only. */
    snprintf(params, sizeof params, "{\"discussionId\":%lld}", (long long)id2);
    ck_assert_int_eq(status_of("reviewer", ORIGIN, params, &res), OC_OK);
    ck_assert_str_eq(dstr(res, "channelId"), other);
    json_decref(res);
    ck_assert_int_eq(status_of("coder", ORIGIN, params, &res), OC_ERR_DENIED);
    json_decref(res);
    snprintf(params, sizeof params, "{\"channelId\":\"%s\"}", other);
    ck_assert_int_eq(status_of("coder", ch, params, &res), OC_ERR_DENIED);
    json_decref(res);
    ck_assert_int_eq(status_of("planner", ch, params, &res), OC_OK);
    ck_assert_str_eq(dstr(res, "role"), "initiator");
    json_decref(res);
    /* What is not there, and bad params. */
    ck_assert_int_eq(status_of("planner", ORIGIN, "{}", &res), OC_ERR_NOT_FOUND);
    json_decref(res);
    ck_assert_int_eq(status_of("planner", ORIGIN, "{\"discussionId\":9999}", &res),
                     OC_ERR_NOT_FOUND);
    json_decref(res);
    snprintf(params, sizeof params, "{\"channelId\":\"%s\"}", ORIGIN);
    ck_assert_int_eq(status_of("planner", ch, params, &res), OC_ERR_NOT_FOUND);
    json_decref(res);
    const char *bad[] = {"{\"discussionId\":0}", "{\"discussionId\":\"1\"}",
                         "{\"channelId\":\"abc\"}", "{\"discussionId\":1,\"channelId\":\"5\"}",
                         "{\"other\":1}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(status_of("planner", ch, bad[i], &res), OC_ERR_INVALID);
        json_decref(res);
    }
    /* Closed: the end status, time and summary path. */
    write_ws("plans/discussions/talk-one.md", "done\n");
    ck_assert_int_eq(callback("planner", ch, "talk-one.md", &res), OC_OK);
    json_decref(res);
    ck_assert_int_eq(status_of("coder", ch, "{}", &res), OC_OK);
    d = json_object_get(res, "details");
    ck_assert_str_eq(dstr(res, "status"), "completed");
    ck_assert_str_eq(dstr(res, "summaryPath"), "plans/discussions/talk-one.md");
    ck_assert_ptr_nonnull(dstr(res, "closedAt"));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "turn"), "state")),
                     "closed");
    /* Nobody speaks in a closed channel, whatever state it was left in. */
    ck_assert_msg(json_is_null(json_object_get(json_object_get(d, "turn"), "speaker")),
                  "closed discussion with speaker %s",
                  json_string_value(json_object_get(json_object_get(d, "turn"), "speaker")));
    json_decref(res);
}
END_TEST

static int list_of(const char *agent, const char *params, json_t **res)
{
    json_t *ctx = agent ? ctx_of(agent, ORIGIN) : json_pack("{s:s}", "channelId", ORIGIN);
    int rc = tool("discussion_list", params, ctx, res);
    json_decref(ctx);
    return rc;
}

static const char *nth_channel(const json_t *res, size_t i)
{
    json_t *arr = json_object_get(json_object_get(res, "details"), "discussions");
    return json_string_value(json_object_get(json_array_get(arr, i), "channelId"));
}

START_TEST(test_list_tool)
{
    plugin_start();
    char a[32], b[32], c[32];
    open_named("first", "[\"reviewer\",\"coder\"]", a);
    open_named("second", "[\"reviewer\"]", b);
    open_named("third", "[\"coder\"]", c);
    json_t *res, *d;
    /* coder: its own two, newest first. */
    ck_assert_int_eq(list_of("coder", "{}", &res), OC_OK);
    d = json_object_get(res, "details");
    ck_assert_uint_eq(json_array_size(json_object_get(d, "discussions")), 2);
    ck_assert_str_eq(nth_channel(res, 0), c);
    ck_assert_str_eq(nth_channel(res, 1), a);
    ck_assert(json_is_null(json_object_get(d, "nextOffset")));
    json_decref(res);
    /* planner pages through all three. */
    ck_assert_int_eq(list_of("planner", "{\"limit\":2}", &res), OC_OK);
    d = json_object_get(res, "details");
    ck_assert_uint_eq(json_array_size(json_object_get(d, "discussions")), 2);
    ck_assert_str_eq(nth_channel(res, 0), c);
    ck_assert_str_eq(nth_channel(res, 1), b);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "nextOffset")), 2);
    json_decref(res);
    ck_assert_int_eq(list_of("planner", "{\"limit\":2,\"offset\":2}", &res), OC_OK);
    d = json_object_get(res, "details");
    ck_assert_uint_eq(json_array_size(json_object_get(d, "discussions")), 1);
    ck_assert_str_eq(nth_channel(res, 0), a);
    ck_assert(json_is_null(json_object_get(d, "nextOffset")));
    json_decref(res);
    /* No agent in the context, bad params. */
    ck_assert_int_eq(list_of(NULL, "{}", &res), OC_ERR_DENIED);
    json_decref(res);
    const char *bad[] = {"{\"limit\":0}", "{\"limit\":51}", "{\"offset\":-1}", "{\"page\":1}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(list_of("planner", bad[i], &res), OC_ERR_INVALID);
        json_decref(res);
    }
}
END_TEST

#define ARCHIVE "4000000000000000099"

/* The outbox rows queued for channel (pending or sent). */
static int outbox_rows_for(const char *channel)
{
    char what[128];
    snprintf(what, sizeof what, "outbox WHERE channel_id = '%s'", channel);
    return count_rows(what);
}

/* discussion.archiveChannelId: a closed discussion's line goes there once;
 * a refused callback adds none; without the key nothing is posted there. */
START_TEST(test_archive_index_line)
{
    ck_assert_int_eq(fake_discord_add_channel(fd, ARCHIVE, "archive", NULL), 0);
    snprintf(extra_disc, sizeof extra_disc, ",\"archiveChannelId\":\"%s\"", ARCHIVE);
    plugin_start();
    char ch[32];
    open_named("talk-arch", "[\"reviewer\"]", ch);
    json_t *res;
    ck_assert_int_eq(callback("planner", ch, "missing.md", &res), OC_ERR_NOT_FOUND);
    json_decref(res);
    ck_assert_int_eq(outbox_rows_for(ARCHIVE), 0);
    write_ws("plans/discussions/talk-arch.md", "done\n");
    ck_assert_int_eq(callback("planner", ch, "talk-arch.md", &res), OC_OK);
    json_decref(res);
    char *line = message_text(ARCHIVE, 0);
    char want[256];
    snprintf(want, sizeof want, "| <#%s> | completed | summary `plans/discussions/talk-arch.md`",
             ch);
    has_text(line, "talk-arch | initiator planner | ");
    has_text(line, " UTC | ");
    has_text(line, want);
    ck_assert_ptr_null(strchr(line, '\n'));
    free(line);
    plugin_restart();
    ck_assert_int_eq(callback("planner", ch, "talk-arch.md", &res), OC_ERR_CONFLICT);
    json_decref(res);
    ck_assert_int_eq(outbox_rows_for(ARCHIVE), 1);
    /* Without the key: no line anywhere but the origin. */
    plugin_stop();
    extra_disc[0] = '\0';
    plugin_start();
    open_named("talk-quiet", "[\"reviewer\"]", ch);
    write_ws("plans/discussions/talk-quiet.md", "done\n");
    ck_assert_int_eq(callback("planner", ch, "talk-quiet.md", &res), OC_OK);
    json_decref(res);
    ck_assert_int_eq(outbox_rows_for(ARCHIVE), 1);
}
END_TEST

/* ---- out of memory ------------------------------------------------------------------
 * Each tool call once per allocation it makes (the plugin's and jansson's;
 * the fake Discord's threads are not counted), that allocation failing,
 * each time with a fresh plugin, database and fake Discord: the tool
 * answers a status with a result object, never crashes or leaks
 * (SANITIZE=1), and a discussion it reports as opened or closed is so in
 * the store. k = 0: discord_channel_create of a discussion; 1:
 * discuss-callback of an open one.
 */
static int oom_tool(const char *name, const char *params, json_t *ctx, long nth, int *hit,
                    json_t **res)
{
    const oc_tool *t = NULL;
    for (int i = 0; i < H.ntools; i++)
        if (strcmp(H.tools[i]->name, name) == 0)
            t = H.tools[i];
    ck_assert_ptr_nonnull(t);
    json_t *pj = tu_json(params);
    *res = NULL;
    fa_arm_own(nth);
    int rc = t->execute(P, pj, ctx, res);
    *hit = fa_disarm();
    json_decref(pj);
    return rc;
}

START_TEST(test_tools_out_of_memory)
{
    ck_assert_msg(fa_available(), "check_all was linked without the allocation wrappers");
    long n;
    for (n = 1; n < 100000; n++) {
        setup();
        plugin_start();
        json_t *res = NULL, *ctx;
        int hit, rc;
        char params[1024];
        if (_i == 0) {
            ctx = ctx_of("planner", ORIGIN);
            snprintf(params, sizeof params,
                     "{\"name\":\"csm-oom\",\"participants\":[\"reviewer\",\"coder\"],"
                     "\"callbackChannelId\":\"%s\",\"discussGuide\":\"%s\"}",
                     ORIGIN, GUIDE);
            rc = oom_tool("discord_channel_create", params, ctx, n, &hit, &res);
        } else {
            const char *d = open_discussion();
            write_ws("plans/ok.md", "fine\n");
            ctx = ctx_of("planner", d);
            rc = oom_tool("discuss-callback", "{\"summaryPath\":\"plans/ok.md\"}", ctx, n, &hit,
                          &res);
        }
        ck_assert_msg(rc == OC_OK || strcmp(oc_status_name(rc), "OC_UNKNOWN") != 0,
                      "allocation %ld: status %d", n, rc);
        ck_assert_msg(json_is_object(res), "allocation %ld: status %s without a result object", n,
                      oc_status_name(rc));
        if (rc == OC_OK && _i == 0) {
            const char *ch =
                json_string_value(json_object_get(json_object_get(res, "details"), "channelId"));
            ck_assert_ptr_nonnull(ch);
            dg_discussion d = load_row(ch);
            ck_assert_int_eq(d.status, DG_DISCUSSION_ACTIVE);
            dg_discussion_clear(&d);
        }
        json_decref(res);
        json_decref(ctx);
        teardown();
        if (!hit) {
            ck_assert_int_eq(rc, OC_OK);
            break;
        }
    }
    ck_assert_int_gt(n, 10);
}
END_TEST

/* Channels the fake holds besides the origin (those a create left). */
static size_t created_channels(void)
{
    json_t *all = fake_discord_channels(fd);
    size_t n = json_array_size(all);
    json_decref(all);
    return n - 1;
}

/*
 * The store-fault sweep: the nth transaction the plugin starts during one
 * tool call cannot start (tests/support/faultvfs.h; whichever thread asks,
 * the outbox's too), for n = 1, 2, ... until the call started fewer. Each
 * step: the call succeeds, or fails with OC_ERR_IO and a message naming the
 * store or saying to try again, and leaves no half-done work -- no discussion row or Discord
 * channel of a create that failed, a discussion a failed callback did not
 * close still active. k = 0: create a discussion (with a toolCallId, so the
 * idempotency ledger is written too); 1: a plain channel; 2: discuss-callback;
 * 3: discussion_status; 4: discussion_list. _i = 5..9: the same with the
 * nth read of the database failing instead (the connection's cache emptied
 * first, so every page is read).
 */
START_TEST(test_tools_store_faults)
{
    int k = _i % 5, reads = _i >= 5;
    long n;
    for (n = 1; n < 400; n++) {
        setup();
        ck_assert_int_eq(fv_install(), 0);
        plugin_start();
        const char *d = NULL;
        if (k >= 2) {
            d = open_discussion();
            write_ws("plans/ok.md", "fine\n");
        }
        json_t *res = NULL, *ctx;
        char params[1024];
        const char *name;
        if (k == 0) {
            name = "discord_channel_create";
            ctx = ctx_call("planner", ORIGIN, "call-sf");
            snprintf(params, sizeof params,
                     "{\"name\":\"csm-sf\",\"participants\":[\"reviewer\",\"coder\"],"
                     "\"callbackChannelId\":\"%s\",\"discussGuide\":\"%s\"}",
                     ORIGIN, GUIDE);
        } else if (k == 1) {
            name = "discord_channel_create";
            ctx = ctx_call("planner", ORIGIN, "call-sf");
            snprintf(params, sizeof params, "{\"name\":\"plain-sf\"}");
        } else if (k == 2) {
            name = "discuss-callback";
            ctx = ctx_call("planner", d, "call-sf");
            snprintf(params, sizeof params, "{\"summaryPath\":\"plans/ok.md\"}");
        } else if (k == 3) {
            name = "discussion_status";
            ctx = ctx_of("planner", d);
            snprintf(params, sizeof params, "{}");
        } else {
            name = "discussion_list";
            ctx = ctx_of("planner", ORIGIN);
            snprintf(params, sizeof params, "{}");
        }
        if (reads) {
            dg_store_test_drop_pages(P->store); /* every page read again */
            fv_fail_read_nth(n);
        } else {
            fv_fail_nth(n);
        }
        int rc = tool(name, params, ctx, &res);
        int hit = reads ? fv_fail_read_nth_hit() : fv_fail_nth_hit();
        fv_fail_nth(0);
        fv_fail_read_nth(0);
        if (rc != OC_OK) {
            ck_assert_msg(rc == OC_ERR_IO, "transaction %ld: %s: %s", n, oc_status_name(rc),
                          err_msg(res));
            ck_assert_msg(strstr(err_msg(res), "store") || strstr(err_msg(res), "recorded") ||
                              strstr(err_msg(res), "try again"),
                          "transaction %ld: %s", n, err_msg(res));
        }
        char made[32] = "";
        if (rc == OC_OK && k == 0)
            snprintf(made, sizeof made, "%s", dstr(res, "channelId"));
        json_decref(res);
        json_decref(ctx);
        /* The outbox may still be posting the kickoff: let it finish. A
         * create or callback that succeeded posted its message once. */
        ck_assert_int_eq(dg_outbox_wait_idle(P->outbox, 10000), OC_OK);
        if (made[0])
            check_kickoff(made);
        if (rc == OC_OK && k == 2)
            check_result(d, "plans/ok.md");
        if (k <= 1) {
            ck_assert_msg(created_channels() == (rc == OC_OK ? 1u : 0u),
                          "transaction %ld: %s left %zu channels", n, oc_status_name(rc),
                          created_channels());
            if (k == 0)
                ck_assert_int_eq(count_rows("discussions"), rc == OC_OK ? 1 : 0);
        } else if (k == 2) {
            dg_discussion row = load_row(d);
            ck_assert_int_eq(row.status, rc == OC_OK ? DG_DISCUSSION_CLOSED : DG_DISCUSSION_ACTIVE);
            dg_discussion_clear(&row);
        }
        teardown();
        if (!hit) {
            ck_assert_int_eq(rc, OC_OK);
            break;
        }
    }
    ck_assert_int_gt(n, 1);
    ck_assert_int_lt(n, 400);
}
END_TEST

START_TEST(test_contract_edges)
{
    /* What the header promises for the edges: names of every status,
     * NULL-safe clears, no channel is no discussion, a notice claim needs
     * both ids. */
    ck_assert_str_eq(dg_discussion_status_name(DG_DISCUSSION_ACTIVE), "active");
    ck_assert_str_eq(dg_discussion_status_name(DG_DISCUSSION_CLOSED), "closed");
    ck_assert_str_eq(dg_discussion_status_name(DG_DISCUSSION_NONE), "none");
    dg_discussion_clear(NULL);
    dg_discussion_info_clear(NULL);
    dg_turn_view_clear(NULL);
    dg_agent_names_free(NULL);
    dg_agent_names_refresh(NULL, NULL, 0);
    unsigned char hit[2] = {0, 0};
    ck_assert_uint_eq(dg_agent_names_mentioned(NULL, "@planner", hit), 0);
    dg_agent_names *names = NULL;
    ck_assert_int_eq(dg_agent_names_new(2, &names), OC_OK);
    ck_assert_uint_eq(dg_agent_names_mentioned(names, NULL, hit), 0);
    ck_assert_uint_eq(dg_agent_names_mentioned(names, "@planner", hit), 0); /* none known */
    ck_assert(!hit[0] && !hit[1]);
    dg_agent_names_free(names);
    dg_discussion empty = {0};
    ck_assert_int_eq(dg_discussion_has_member(&empty, NULL), 0);
    dg_channel_created_clear(NULL);
    dg_callback_result_clear(NULL);
    dg_session_refs_release(NULL);
    plugin_start();
    dg_discussion d;
    memset(&d, 0, sizeof d);
    ck_assert_int_eq(dg_store_begin(P->store), OC_OK);
    ck_assert_int_eq(dg_discuss_lookup_locked(P->store, NULL, &d), DG_DISCUSSION_NONE);
    ck_assert_int_eq(dg_discuss_lookup_locked(P->store, "300000000000000123", &d),
                     DG_DISCUSSION_NONE);
    ck_assert_int_eq(dg_discuss_claim_closed_notice_locked(P->store, NULL, "1", 1, 0),
                     OC_ERR_INVALID);
    ck_assert_int_eq(dg_discuss_claim_closed_notice_locked(P->store, ORIGIN, NULL, 1, 0),
                     OC_ERR_INVALID);
    dg_store_rollback(P->store);
}
END_TEST

START_TEST(test_seen_set)
{
    /* The set of (a, b) pairs behind "this session's overrides were
     * applied": pairs are told apart by both halves, long keys work, bad
     * arguments are refused, and at its bound it starts over. */
    dg_seen_set *s = dg_seen_set_new();
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(dg_seen_set_has(s, "a", "b"), 0);
    ck_assert_int_eq(dg_seen_set_add(s, "a", "b"), OC_OK);
    ck_assert_int_eq(dg_seen_set_add(s, "a", "b"), OC_OK); /* again: one entry */
    ck_assert_int_eq(dg_seen_set_has(s, "a", "b"), 1);
    ck_assert_int_eq(dg_seen_set_has(s, "ab", ""), 0);
    ck_assert_int_eq(dg_seen_set_has(s, "b", "a"), 0);
    char big[600];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(dg_seen_set_has(s, big, "x"), 0);
    ck_assert_int_eq(dg_seen_set_add(s, big, "x"), OC_OK);
    ck_assert_int_eq(dg_seen_set_has(s, big, "x"), 1);
    ck_assert_int_eq(dg_seen_set_has(NULL, "a", "b"), 0);
    ck_assert_int_eq(dg_seen_set_has(s, NULL, "b"), 0);
    ck_assert_int_eq(dg_seen_set_add(NULL, "a", "b"), OC_ERR_INVALID);
    ck_assert_int_eq(dg_seen_set_add(s, "a", NULL), OC_ERR_INVALID);
    for (int i = 0; i < DG_SEEN_SET_MAX; i++) {
        char k[16];
        snprintf(k, sizeof k, "%d", i);
        ck_assert_int_eq(dg_seen_set_add(s, "n", k), OC_OK);
    }
    /* The set reached its bound and started over: the oldest pairs are gone,
     * the newest one is there. */
    ck_assert_int_eq(dg_seen_set_has(s, "a", "b"), 0);
    ck_assert_int_eq(dg_seen_set_has(s, "n", "65535"), 1);
    dg_seen_set_free(s);
    dg_seen_set_free(NULL);

    /* Out of memory on each allocation of a lookup or an add (long keys do
     * not fit the stack buffer): "not seen" and OC_ERR_NOMEM, nothing kept. */
    ck_assert(fa_available());
    s = dg_seen_set_new();
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(dg_seen_set_add(s, big, "y"), OC_OK);
    fa_arm_own(1);
    int has = dg_seen_set_has(s, big, "y");
    ck_assert(fa_disarm());
    ck_assert_int_eq(has, 0); /* could not look: not seen (the caller does the work) */
    long k;
    for (k = 1; k < 100; k++) {
        fa_arm_own(k);
        int rc = dg_seen_set_add(s, big, "z");
        int hit = fa_disarm();
        ck_assert(rc == OC_OK || rc == OC_ERR_NOMEM);
        ck_assert_int_eq(dg_seen_set_has(s, big, "z"), rc == OC_OK);
        if (rc == OC_OK)
            break;
        ck_assert(hit);
    }
    ck_assert_int_gt(k, 1);
    dg_seen_set_free(s);
}
END_TEST

/* Write text (n bytes) to dir/name and open it for reading. */
static int file_fd(const char *name, const char *text, size_t n)
{
    char *p = tu_path(dir, name);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
    int sfd = open(p, O_RDONLY);
    ck_assert_int_ge(sfd, 0);
    free(p);
    return sfd;
}

static void preview_is(const char *text, long chars, const char *want)
{
    int sfd = file_fd("preview.md", text, strlen(text));
    char *got = dg_summary_preview(sfd, chars);
    close(sfd);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want);
    free(got);
}

START_TEST(test_summary_rules_and_preview_edges)
{
    /* summaryTemplate: a folder, an oversized file, too many headings are
     * refused at load with the key named. */
    dg_summary_rules *r = NULL;
    char why[512];
    ck_assert_int_eq(dg_summary_rules_load(dir, &r, why, sizeof why), OC_ERR_INVALID);
    ck_assert_msg(strstr(why, "is not a regular file"), "%s", why);
    char *big = malloc(DG_SUMMARY_TEMPLATE_MAX_BYTES + 2);
    ck_assert_ptr_nonnull(big);
    memset(big, '#', DG_SUMMARY_TEMPLATE_MAX_BYTES + 1);
    big[DG_SUMMARY_TEMPLATE_MAX_BYTES + 1] = '\0';
    char *p = tu_path(dir, "big.md");
    ck_assert_int_eq(tu_write_file(p, big), 0);
    free(big);
    ck_assert_int_eq(dg_summary_rules_load(p, &r, why, sizeof why), OC_ERR_INVALID);
    ck_assert_msg(strstr(why, "is larger than 8192 bytes"), "%s", why);
    free(p);
    char many[2048] = "";
    for (int i = 0; i <= DG_SUMMARY_MAX_HEADINGS; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "## H%d\n", i);
    p = tu_path(dir, "many.md");
    ck_assert_int_eq(tu_write_file(p, many), 0);
    ck_assert_int_eq(dg_summary_rules_load(p, &r, why, sizeof why), OC_ERR_INVALID);
    ck_assert_msg(strstr(why, "1 to 32 heading lines"), "%s", why);
    ck_assert_ptr_null(r);
    free(p);

    /* The heading check: a heading only counts on a short line of its own;
     * a summary that cannot be read is an I/O error naming it. */
    p = tu_path(dir, "rules.md");
    ck_assert_int_eq(tu_write_file(p, "## Decision\n"), 0);
    ck_assert_int_eq(dg_summary_rules_load(p, &r, why, sizeof why), OC_OK);
    dg_summary_rules_free(r);
    /* Out of memory on each allocation of the load: OC_ERR_NOMEM, no rules. */
    ck_assert(fa_available());
    long k;
    for (k = 1; k < 100; k++) {
        r = NULL;
        fa_arm_own(k);
        int rc = dg_summary_rules_load(p, &r, why, sizeof why);
        int hit = fa_disarm();
        if (rc == OC_OK)
            break;
        ck_assert_int_eq(rc, OC_ERR_NOMEM);
        ck_assert_ptr_null(r);
        ck_assert(hit);
    }
    ck_assert_int_gt(k, 2);
    ck_assert_ptr_nonnull(r);
    free(p);
    char line[1200];
    memset(line, ' ', sizeof line);
    memcpy(line + sizeof line - 12, "## Decision\n", 12);
    int sfd = file_fd("long.md", line, sizeof line);
    ck_assert_int_eq(dg_summary_check_headings(r, sfd, "long.md", why, sizeof why), OC_ERR_INVALID);
    close(sfd);
    sfd = open(dir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(sfd, 0);
    ck_assert_int_eq(dg_summary_check_headings(r, sfd, "plans", why, sizeof why), OC_ERR_IO);
    ck_assert_msg(strstr(why, "summaryPath plans cannot be read"), "%s", why);
    ck_assert_ptr_null(dg_summary_preview(sfd, 10)); /* neither previewed */
    close(sfd);
    dg_summary_rules_free(r);

    /* The preview: leading blank lines dropped, a cut without a line break
     * ends at a word, a character the file cuts short is left out, and
     * every Discord markup opener is made inert. */
    preview_is("\n\r\nhello", 20, "> hello");
    preview_is("alpha beta gamma delta", 13, "> alpha beta ...");
    preview_is("ok \xE2\x80", 10, "> ok ...");
    preview_is("<t:1> <:e:2> </c:3> <x", 40,
               "> <\xE2\x80\x8Bt:1> <\xE2\x80\x8B:e:2> <\xE2\x80\x8B/c:3> <x");
}
END_TEST

/* Start the plugin with `discord` as the whole "discord" object. */
static void plugin_start_discord(const char *discord)
{
    char text[4096];
    char *store = tu_store_member_of(db);
    snprintf(text, sizeof text,
             "{\"noReplyProvider\":\"noreply\",\"noReplyModel\":\"no-reply\",%s,"
             "\"discord\":%s,"
             "\"agents\":{\"planner\":{\"discordUserId\":\"%s\"},"
             "\"reviewer\":{\"discordUserId\":\"%s\"},\"coder\":{\"discordUserId\":\"%s\"}}}",
             store, discord, PLANNER_ID, REVIEWER_ID, CODER_ID);
    free(store);
    plugin_init_text(text);
}

START_TEST(test_create_needs_token_guild_and_moderator_id)
{
    /* Without a moderator token or a guild no channel can be made: refused as unsupported, naming what the operator
     * has to set, and nothing asked of Discord. */
    static const char *const cases[2][2] = {
        {"{\"apiBase\":\"%s\",\"guildId\":\"%s\",\"moderatorUserId\":\"" MOD_ID "\"}",
         "DIRIGENT_MODERATOR_TOKEN"},
        {"{\"apiBase\":\"%s\",\"moderatorToken\":\"" MOD_TOKEN "\",\"moderatorUserId\":\"" MOD_ID
         "\"}",
         "discord.guildId"},
    };
    for (size_t i = 0; i < 2; i++) {
        char discord[512];
        snprintf(discord, sizeof discord, cases[i][0], fake_discord_url(fd),
                 fake_discord_guild_id(fd));
        plugin_start_discord(discord);
        fake_discord_clear_requests(fd);
        json_t *ctx = ctx_of("planner", ORIGIN), *res = NULL;
        ck_assert_int_eq(tool("discord_channel_create", "{\"name\":\"nope\"}", ctx, &res),
                         OC_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(err_msg(res), cases[i][1]), "%s", err_msg(res));
        json_decref(res);
        json_decref(ctx);
        ck_assert_int_eq(created_channels(), 0);
        plugin_stop();
    }
}
END_TEST

START_TEST(test_create_repeat_with_a_full_topic)
{
    /* A topic that leaves no room for the call's marker: created with the
     * topic as given (the whole topic is what a recovery would look for),
     * and a repeat of the call answers the same channel. */
    plugin_start();
    char topic[1025];
    memset(topic, 't', 1024);
    topic[1024] = '\0';
    char params[1400];
    snprintf(params, sizeof params, "{\"name\":\"plain-full\",\"topic\":\"%s\"}", topic);
    json_t *ctx = ctx_call("planner", ORIGIN, "call-full"), *res = NULL;
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_OK);
    char ch[32];
    snprintf(ch, sizeof ch, "%s", dstr(res, "channelId"));
    json_decref(res);
    json_t *c = fake_discord_channel(fd, ch);
    ck_assert_str_eq(json_string_value(json_object_get(c, "topic")), topic);
    json_decref(c);
    ck_assert_int_eq(tool("discord_channel_create", params, ctx, &res), OC_OK);
    ck_assert_str_eq(dstr(res, "channelId"), ch);
    json_decref(res);
    json_decref(ctx);
    ck_assert_int_eq(created_channels(), 1);
}
END_TEST

/*
 * Not reached by any test (make coverage), each an error path or
 * a guard:
 *  - discuss_create.c:record_plain, record_intent,
 *    dg_discuss_create_channel (the ledger lookup), discuss_timers.c:timer_one
 *    (the sweep's begin), dg_discuss_sweep, discuss_overrides.c:dg_discuss_session_seen
 *    (both begins, the override not recorded), discuss_status.c (its
 *    listing's allocation), discuss_archive.c:dg_discuss_archive_locked:
 *    a store statement failing on a page already cached, or a begin failing
 *    on a thread the sweep above does not arm at that moment (the sweeper's
 *    timers; the overrides of a session first seen after a close); the
 *    store-fault sweep above fails the begin and the first page reads.
 *  - discuss_create.c:delete_channel (the DELETE failing after a record failed):
 *    two faults in one call, of Discord and of the store.
 *  - discuss_create.c:topic_with_marker, create_channel, discuss_ledger.c:
 *    discuss_inflight_claim, discuss_archive.c (the line's allocation), summary.c:
 *    dg_summary_open, seen_set.c:dg_seen_set_add (dg_map_put): allocations
 *    the tool sweep (test_tools_out_of_memory) reaches in another order or
 *    that do not allocate below the map's load bound.
 *  - discuss_validate.c:channel_status (no channel id),
 *    discuss_create.c:add_unique (a repeated id), discuss.c:discuss_mentions_of
 *    (an agent not configured), discuss_create.c:build_discussion (a repeated
 *    participant), discuss_callback.c:check_callable (a session without a
 *    channel), discuss.c:dg_discuss_suggested_path_locked (the name lookup
 *    failing), discuss_create.c:dg_discuss_create_channel (a stored result
 *    without a channel):
 *    inputs the validation above already refuses or the store never holds.
 *  - summary.c:dg_summary_check_text (EINTR, a read error), read_all
 *    and dg_summary_check_headings (EINTR): a read of a regular file opened
 *    by the same call does not fail or get interrupted here.
 *  - discuss_timers.c:timer_due (no timer due), timer_one (the timer no longer due
 *    once its transaction reads the row; its failure line): a race between
 *    the sweep's scan and a hook changing the discussion.
 *  - discuss_admin_close.c:admin_reply (a template that cannot be rendered), and
 *    dg_discuss_admin_close_locked (the lookup failing, a closed discussion,
 *    the preview unreadable): turns_admin.c answers a closed channel before
 *    it calls this; the rest are store and read failures as above.
 *  - discuss_archive.c:day_time (gmtime_r or strftime failing for a time
 *    the store wrote).
 *  - discuss_overrides.c:discuss_apply_pending (the loop's repeat: more than one
 *    batch of owed overrides), dg_discuss_resume (no store or host; old
 *    tool-call results to forget: they are kept for days).
 *  - discuss_status.c:dg_discuss_status (neither a named nor an own
 *    discussion: the hook refuses that first).
 *  - agent_names.c:mentions_name (an empty known name: Discord names are
 *    never empty).
 */

/* The cases of discuss and discuss_pg (on_pg: the store is a PostgreSQL
 * database, tests/support/pg_server.h). */
static Suite *discuss_suite(const char *name, int on_pg)
{
    Suite *s = suite_create(name);
    if (on_pg && pgs_skipped())
        return s;
    TCase *tc = tcase_create("story");
    if (on_pg)
        pgs_on_pg(tc, 0);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_story);
    tcase_add_test(tc, test_story_with_restarts);
    tcase_add_test(tc, test_overrides_redriven_after_restart);
    tcase_add_test(tc, test_lookup_and_notices);
    suite_add_tcase(s, tc);

    tc = tcase_create("callback");
    if (on_pg)
        pgs_on_pg(tc, 0);
    tcase_add_checked_fixture(tc, refusal_setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_refuse_not_discussion_channel);
    tcase_add_test(tc, test_refuse_not_initiator);
    tcase_add_test(tc, test_refuse_paths);
    tcase_add_test(tc, test_refuse_empty_summary);
    tcase_add_test(tc, test_refuse_bad_params);
    tcase_add_test(tc, test_callback_long_unicode_path);
    tcase_add_test(tc, test_callback_from_thread);
    tcase_add_test(tc, test_double_callback);
    tcase_add_test(tc, test_concurrent_callbacks);
    tcase_add_test(tc, test_summary_dir_fallback_and_refusals);
    suite_add_tcase(s, tc);

    tc = tcase_create("summary");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_summary_dir_convention);
    tcase_add_test(tc, test_discussion_budget_asks_the_initiator_to_wrap_up);
    tcase_add_test(tc, test_summary_template_headings);
    tcase_add_test(tc, test_summary_template_refused_at_init);
    tcase_add_test(tc, test_summary_preview);
    tcase_add_test(tc, test_summary_preview_off_and_short);
    tcase_add_test(tc, test_summary_rules_and_preview_edges);
    suite_add_tcase(s, tc);

    tc = tcase_create("reading");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_status_tool);
    tcase_add_test(tc, test_list_tool);
    tcase_add_test(tc, test_archive_index_line);
    tcase_add_test(tc, test_contract_edges);
    tcase_add_test(tc, test_seen_set);
    suite_add_tcase(s, tc);

    tc = tcase_create("create");
    if (on_pg)
        pgs_on_pg(tc, 0);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_create_validation);
    tcase_add_test(tc, test_create_unicode_name);
    tcase_add_test(tc, test_create_context_rules);
    tcase_add_test(tc, test_create_guide_too_long);
    tcase_add_test(tc, test_create_no_nesting);
    tcase_add_test(tc, test_create_plain);
    tcase_add_test(tc, test_create_guide_inert);
    tcase_add_test(tc, test_create_rest_failure_leaves_no_row);
    tcase_add_test(tc, test_create_needs_token_guild_and_moderator_id);
    suite_add_tcase(s, tc);

    tc = tcase_create("idempotent");
    if (on_pg)
        pgs_on_pg(tc, 0);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_create_repeat_returns_first_result);
    tcase_add_test(tc, test_create_plain_repeat_and_other_ids);
    tcase_add_test(tc, test_create_repeat_recovers_lost_channel);
    tcase_add_test(tc, test_create_not_repeated_is_undone_and_the_initiator_told);
    tcase_add_test(tc, test_create_repeat_after_refusal_creates_once);
    tcase_add_test(tc, test_create_repeat_with_a_full_topic);
    tcase_add_test(tc, test_create_repeat_while_running_is_refused);
    suite_add_tcase(s, tc);

    tc = tcase_create("idempotent_callback");
    if (on_pg)
        pgs_on_pg(tc, 1);
    tcase_add_checked_fixture(tc, refusal_setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_callback_repeat_returns_first_result);
    tcase_add_test(tc, test_callback_same_id_racing);
    suite_add_tcase(s, tc);
    if (on_pg) /* the allocation sweeps cover the plugin's code, which is the same */
        return s;
    tc = tcase_create("oom");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_tools_out_of_memory, 0, 2);
    suite_add_tcase(s, tc);
    tc = tcase_create("store_faults");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_tools_store_faults, 0, 10);
    suite_add_tcase(s, tc);
    return s;
}

Suite *make_discuss_suite(void)
{
    return discuss_suite("discuss", 0);
}

Suite *make_discuss_pg_suite(void)
{
    return discuss_suite("discuss_pg", 1);
}
