/*
 * turn_test_host.c -- the turn manager's test host (see turn_test_host.h).
 */
#include "turn_test_host.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "failalloc.h"
#include "silent.h"
#include "store.h"
#include "store_outbox.h"
#include "testutil.h"

const oc_plugin *oc_plugin_entry(void);

/* Inside a Check test a failed expectation fails the test; outside (the
 * benchmark) Check cannot report, so it aborts with the message. */
static int standalone;

void tth_standalone(void)
{
    standalone = 1;
}

#define TTH_EXPECT(cond, ...)                                                                      \
    do {                                                                                           \
        if (standalone) {                                                                          \
            if (!(cond)) {                                                                         \
                fprintf(stderr, "turn_test_host: " __VA_ARGS__);                                   \
                fputc('\n', stderr);                                                               \
                abort();                                                                           \
            }                                                                                      \
        } else {                                                                                   \
            ck_assert_msg(cond, __VA_ARGS__);                                                      \
        }                                                                                          \
    } while (0)

/* Host functions: host is the tth itself. Any thread. */

static int th_register_tool_run(oc_host *host, const oc_tool *tool)
{
    (void)host;
    return tool && tool->execute ? OC_OK : OC_ERR_INVALID;
}

/* The host never fails: an allocation-failure sweep fails the plugin's only
 * (failalloc.h). */
static int th_register_tool(oc_host *host, const oc_tool *tool)
{
    int was = fa_suspend();
    int r = th_register_tool_run(host, tool);
    fa_resume(was);
    return r;
}

static int th_on_run(oc_host *host, const char *hook, oc_hook_fn fn, int priority)
{
    tth *h = (tth *)host;
    if (!hook || !fn || h->n_hooks >= 16)
        return OC_ERR_INVALID;
    if (h->old_host &&
        (!strcmp(hook, "before_agent_reply") || !strcmp(hook, "reply_payload_sending") ||
         !strcmp(hook, "model_call_ended") || !strcmp(hook, "llm_output")))
        return OC_ERR_INVALID; /* unknown to a host before the claim and usage hooks */
    tth_hook *e = &h->hooks[h->n_hooks++];
    snprintf(e->name, sizeof e->name, "%s", hook);
    e->fn = fn;
    e->priority = priority;
    return OC_OK;
}

static int th_on(oc_host *host, const char *hook, oc_hook_fn fn, int priority)
{
    int was = fa_suspend();
    int r = th_on_run(host, hook, fn, priority);
    fa_resume(was);
    return r;
}

static int th_patch_run(oc_host *host, const char *key, const char *provider, const char *model)
{
    tth *h = (tth *)host;
    pthread_mutex_lock(&h->mu);
    h->patches++;
    snprintf(h->last_patch, sizeof h->last_patch, "%s=%s/%s", key ? key : "",
             provider ? provider : "", model ? model : "");
    pthread_mutex_unlock(&h->mu);
    return OC_OK;
}

static int th_patch(oc_host *host, const char *key, const char *provider, const char *model)
{
    int was = fa_suspend();
    int r = th_patch_run(host, key, provider, model);
    fa_resume(was);
    return r;
}

static json_t *th_list_run(oc_host *host, const char *channel)
{
    tth *h = (tth *)host;
    (void)channel;
    pthread_mutex_lock(&h->mu);
    json_t *r = h->list_fails ? NULL : h->sessions ? json_deep_copy(h->sessions) : json_array();
    pthread_mutex_unlock(&h->mu);
    return r;
}

static json_t *th_list(oc_host *host, const char *channel)
{
    int was = fa_suspend();
    json_t *r = th_list_run(host, channel);
    fa_resume(was);
    return r;
}

/* ABI 1.1 host calls: recorded (no allocation: no fault-injection guard needed). */
static void th_keys_add(tth *h, char *buf, size_t len, const char *key)
{
    pthread_mutex_lock(&h->mu);
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s\n", key ? key : "");
    pthread_mutex_unlock(&h->mu);
}

static int th_reset(oc_host *host, const char *key)
{
    tth *h = (tth *)host;
    th_keys_add(h, h->resets, sizeof h->resets, key);
    return h->reset_status;
}

static int th_abort(oc_host *host, const char *key)
{
    tth *h = (tth *)host;
    th_keys_add(h, h->aborts, sizeof h->aborts, key);
    return h->abort_status;
}

static void th_log_run(oc_host *host, int level, const char *message)
{
    tth *h = (tth *)host;
    pthread_mutex_lock(&h->mu);
    if (h->relay && !pthread_equal(pthread_self(), h->main_thread)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 5;
        int rc = 0;
        while (h->main_busy && rc == 0)
            rc = pthread_cond_timedwait(&h->relay_cv, &h->mu, &until);
        if (h->main_busy)
            h->relay_timeouts++;
    }
    size_t add = strlen(message) + 4;
    char *t = realloc(h->log, h->log_len + add + 1);
    if (t) {
        h->log = t;
        h->log_len += (size_t)snprintf(h->log + h->log_len, add + 1, "%d %s\n", level, message);
    }
    pthread_mutex_unlock(&h->mu);
}

static void th_log(oc_host *host, int level, const char *message)
{
    int was = fa_suspend();
    th_log_run(host, level, message);
    fa_resume(was);
}

static int64_t th_clock(void *state)
{
    tth *h = state;
    return atomic_load(&h->now_ms);
}

/* The agents of tth_start's config (JSON object text). */
#define TTH_DEFAULT_AGENTS                                                                         \
    "{\"alpha\":{\"discordUserId\":\"" TTH_ALPHA_UID "\"},"                                        \
    "\"bravo\":{\"discordUserId\":\"" TTH_BRAVO_UID "\"},"                                         \
    "\"charlie\":{\"discordUserId\":\"" TTH_CHARLIE_UID "\"},"                                     \
    "\"delta\":{\"discordUserId\":\"" TTH_DELTA_UID "\"},"                                         \
    "\"echo\":{\"discordUserId\":\"100000000000000005\"},"                                         \
    "\"foxtrot\":{\"discordUserId\":\"100000000000000006\"},"                                      \
    "\"golf\":{\"discordUserId\":\"100000000000000007\"},"                                         \
    "\"hotel\":{\"discordUserId\":\"100000000000000008\"}}"

static void start_plugin(tth *h)
{
    json_t *cfg = tu_json(h->config);
    char err[512] = "";
    h->n_hooks = 0;
    int rc = h->plugin->init(&h->api, cfg, &h->state, err, sizeof err);
    json_decref(cfg);
    TTH_EXPECT(rc == OC_OK, "plugin init failed: %s", err);
    dg_plugin *p = h->state;
    /* The plugin's timeout thread may read the clock already. */
    dg_set_clock(p, th_clock, h);
}

void tth_start(tth *h, const char *policy, const char *extra)
{
    tth_start_ex(h, policy, extra, 0);
}

void tth_start_ex(tth *h, const char *policy, const char *extra, int old_host)
{
    tth_start_agents(h, policy, NULL, extra, old_host);
}

static void prepare(tth *h, const char *policy, const char *agents, const char *extra,
                    int old_host);

void tth_start_agents(tth *h, const char *policy, const char *agents, const char *extra,
                      int old_host)
{
    prepare(h, policy, agents, extra, old_host);
    start_plugin(h);
}

/* ABI 1.2's decide: the test's function, counted. */
static int th_decide(oc_host *host, const json_t *request, json_t **answer)
{
    tth *h = (tth *)host;
    *answer = NULL;
    atomic_fetch_add(&h->decide_calls, 1);
    return h->decide_fn ? h->decide_fn(h->decide_ud, request, answer) : OC_ERR_UNSUPPORTED;
}

void tth_start_decide(tth *h, const char *extra, tth_decide_fn fn, void *ud)
{
    prepare(h, "channel", NULL, extra, 0);
    h->decide_fn = fn;
    h->decide_ud = ud;
    h->api.decide = th_decide;
    start_plugin(h);
}

void tth_start_agents_decide(tth *h, const char *agents, const char *extra, tth_decide_fn fn,
                             void *ud)
{
    prepare(h, "channel", agents, extra, 0);
    h->decide_fn = fn;
    h->decide_ud = ud;
    h->api.decide = th_decide;
    start_plugin(h);
}

static void prepare(tth *h, const char *policy, const char *agents, const char *extra, int old_host)
{
    memset(h, 0, sizeof *h);
    h->old_host = old_host;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->relay_cv, NULL);
    unsetenv("DIRIGENT_MODERATOR_TOKEN");
    unsetenv("DIRIGENT_SESSION_POLICY");
    unsetenv("DIRIGENT_STORE_URL"); /* the store is the one tu_store_member names */
    h->api = (oc_host_api){
        .abi_major = OC_ABI_MAJOR,
        .abi_minor = OC_ABI_MINOR,
        .struct_size = sizeof(oc_host_api),
        .host = (oc_host *)h,
        .register_tool = th_register_tool,
        .on = th_on,
        .session_patch = th_patch,
        .sessions_list = th_list,
        .log = th_log,
        .session_reset = th_reset,
        .run_abort = th_abort,
    };
    h->plugin = oc_plugin_entry();
    h->dir = tu_mkdtemp();
    atomic_store(&h->now_ms, 1000000);
    h->store = tu_store_member(h->dir);
    if (asprintf(&h->config,
                 "{\"noReplyProvider\":\"noreply\",\"noReplyModel\":\"no-reply-1\","
                 "\"sessionPolicy\":\"%s\",%s,"
                 "\"discord\":{\"moderatorUserId\":\"" TTH_MOD_UID "\","
                 "\"guildId\":\"500000000000000001\"},"
                 "\"agents\":%s%s%s}",
                 policy, h->store, agents ? agents : TTH_DEFAULT_AGENTS, extra ? "," : "",
                 extra ? extra : "") < 0)
        TTH_EXPECT(0, "out of memory");
}

void tth_stop_plugin(tth *h)
{
    if (h->state)
        h->plugin->shutdown(h->state);
    h->state = NULL;
}

void tth_restart(tth *h)
{
    tth_stop_plugin(h);
    start_plugin(h);
}

void tth_free(tth *h)
{
    tth_stop_plugin(h);
    tu_rmtree(h->dir);
    free(h->dir);
    free(h->config);
    free(h->store);
    free(h->log);
    json_decref(h->sessions);
    pthread_cond_destroy(&h->relay_cv);
    pthread_mutex_destroy(&h->mu);
    memset(h, 0, sizeof *h);
}

dg_plugin *tth_plugin(tth *h)
{
    return h->state;
}

void tth_advance(tth *h, int64_t ms)
{
    atomic_fetch_add(&h->now_ms, ms);
}

int tth_call(tth *h, const char *name, const json_t *event, const json_t *ctx, json_t **result)
{
    if (result)
        *result = NULL;
    for (int i = 0; i < h->n_hooks; i++) {
        if (strcmp(h->hooks[i].name, name) != 0)
            continue;
        json_t *r = NULL;
        int rc = h->hooks[i].fn(h->state, event, ctx, &r);
        if (result)
            *result = r;
        else
            json_decref(r);
        return rc;
    }
    TTH_EXPECT(0, "the plugin registered no %s hook", name);
    return OC_ERR_NOT_FOUND;
}

int tth_msg(tth *h, const char *channel, const char *thread, const char *msg_id, const char *sender,
            int is_bot, const char *content, const char *const *mentions)
{
    json_t *m = json_array();
    for (size_t i = 0; mentions && mentions[i]; i++)
        json_array_append_new(m, json_string(mentions[i]));
    json_t *ev = json_pack("{s:s, s:s, s:b, s:s, s:b, s:s, s:o}", "messageId", msg_id, "channelId",
                           channel, "isDm", 0, "senderId", sender, "senderIsBot", is_bot, "content",
                           content ? content : "", "mentions", m);
    if (thread)
        json_object_set_new(ev, "threadId", json_string(thread));
    json_t *ctx =
        json_pack("{s:s, s:s}", "channelId", channel, "messageProvider", tth_provider(channel));
    int rc = tth_call(h, "message_received", ev, ctx, NULL);
    json_decref(ev);
    json_decref(ctx);
    return rc;
}

const char *tth_provider(const char *channel)
{
    return channel && channel[0] >= 'A' && channel[0] <= 'Z' ? "slack" : "discord";
}

const char *tth_session_key(char *buf, size_t len, const char *agent, const char *channel,
                            const char *thread)
{
    /* OpenClaw lower-cases its session keys, Slack's upper-case ids too. */
    snprintf(buf, len, "agent:%s:%s:channel:%s%s%s", agent, tth_provider(channel), channel,
             thread ? ":thread:" : "", thread ? thread : "");
    for (char *q = buf; *q; q++)
        if (*q >= 'A' && *q <= 'Z')
            *q = (char)(*q - 'A' + 'a');
    return buf;
}

static json_t *agent_ctx(const char *agent, const char *channel, const char *thread)
{
    char key[256];
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s}", "agentId", agent, "sessionKey",
                            tth_session_key(key, sizeof key, agent, channel, thread), "channelId",
                            channel, "messageProvider", tth_provider(channel));
    if (thread)
        json_object_set_new(ctx, "threadId", json_string(thread));
    return ctx;
}

int tth_resolve(tth *h, const char *agent, const char *channel, const char *thread)
{
    json_t *ctx = agent_ctx(agent, channel, thread);
    json_t *ev = json_pack("{s:s}", "prompt", "hello");
    json_t *r = NULL;
    int rc = tth_call(h, "before_model_resolve", ev, ctx, &r);
    int out = rc != OC_OK ? -1 : 0;
    if (rc == OC_OK && r) {
        const char *pv = json_string_value(json_object_get(r, "providerOverride"));
        const char *mv = json_string_value(json_object_get(r, "modelOverride"));
        TTH_EXPECT(pv && mv && strcmp(pv, "noreply") == 0 && strcmp(mv, "no-reply-1") == 0,
                   "override is not the configured no-reply pair");
        out = 1;
    }
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return out;
}

int tth_end(tth *h, const char *agent, const char *channel, const char *thread, const char *output,
            long tool_calls)
{
    /* Every call is a run of its own: the plugin ignores a repeated runId. */
    static _Atomic long runs;
    char run_id[32];
    snprintf(run_id, sizeof run_id, "run-%ld", atomic_fetch_add(&runs, 1) + 1);
    json_t *ctx = agent_ctx(agent, channel, thread);
    json_t *ev = json_pack("{s:s, s:b, s:s, s:I}", "runId", run_id, "success", 1, "output",
                           output ? output : "", "toolCalls", (json_int_t)tool_calls);
    int rc = tth_call(h, "agent_end", ev, ctx, NULL);
    json_decref(ev);
    json_decref(ctx);
    return rc;
}

int tth_send(tth *h, const char *agent, const char *channel, const char *thread,
             const char *content)
{
    json_t *ctx = agent_ctx(agent, channel, thread);
    json_t *ev = json_pack("{s:s, s:s}", "to", channel, "content", content);
    json_t *r = NULL;
    int rc = tth_call(h, "message_sending", ev, ctx, &r);
    int out = rc != OC_OK ? -1 : 0;
    if (rc == OC_OK && r) {
        TTH_EXPECT(json_is_true(json_object_get(r, "cancel")) &&
                       json_is_string(json_object_get(r, "cancelReason")),
                   "message_sending result is not {cancel:true, cancelReason}");
        out = 1;
    }
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return out;
}

char *tth_prompt(tth *h, const char *agent, const char *channel, const char *system_prompt)
{
    json_t *ctx = agent_ctx(agent, channel, NULL);
    json_t *ev = json_pack("{s:s}", "prompt", "hi");
    if (system_prompt)
        json_object_set_new(ev, "systemPrompt", json_string(system_prompt));
    json_t *r = NULL;
    int rc = tth_call(h, "before_prompt_build", ev, ctx, &r);
    TTH_EXPECT(rc == OC_OK, "before_prompt_build failed");
    char *out = NULL;
    if (r) {
        const char *t = json_string_value(json_object_get(r, "appendSystemContext"));
        TTH_EXPECT(t != NULL, "appendSystemContext is not a string");
        out = strdup(t);
    }
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return out;
}

static int outbox_rows(tth *h, const char *channel, dg_outbox_row **rows, size_t *n)
{
    dg_plugin *p = h->state;
    TTH_EXPECT(dg_store_begin(p->store) == OC_OK, "store busy");
    int rc = dg_store_outbox_list(p->store, channel, rows, n);
    dg_store_rollback(p->store);
    TTH_EXPECT(rc == OC_OK, "outbox list failed");
    return rc;
}

int tth_outbox_count(tth *h, const char *channel)
{
    dg_outbox_row *rows = NULL;
    size_t n = 0;
    outbox_rows(h, channel, &rows, &n);
    dg_outbox_rows_free(rows, n);
    return (int)n;
}

char *tth_outbox_content(tth *h, const char *channel, int i, char **channel_out)
{
    dg_outbox_row *rows = NULL;
    size_t n = 0;
    outbox_rows(h, channel, &rows, &n);
    char *out = NULL;
    if (i >= 0 && (size_t)i < n) {
        out = strdup(rows[i].content);
        if (channel_out)
            *channel_out = strdup(rows[i].channel_id);
    }
    dg_outbox_rows_free(rows, n);
    return out;
}

const char *tth_uid(const char *agent)
{
    if (strcmp(agent, TTH_ALPHA) == 0)
        return TTH_ALPHA_UID;
    if (strcmp(agent, TTH_BRAVO) == 0)
        return TTH_BRAVO_UID;
    if (strcmp(agent, TTH_CHARLIE) == 0)
        return TTH_CHARLIE_UID;
    if (strcmp(agent, TTH_DELTA) == 0)
        return TTH_DELTA_UID;
    static const char *const more[][2] = {{"echo", "100000000000000005"},
                                          {"foxtrot", "100000000000000006"},
                                          {"golf", "100000000000000007"},
                                          {"hotel", "100000000000000008"}};
    for (size_t i = 0; i < 4; i++)
        if (strcmp(agent, more[i][0]) == 0)
            return more[i][1];
    return NULL;
}

int tth_run(tth *h, const char *agent, const char *channel, const char *thread, const char *output,
            const char *msg_id)
{
    int swapped = tth_resolve(h, agent, channel, thread);
    TTH_EXPECT(swapped >= 0, "before_model_resolve failed");
    const char *said = swapped ? "NO_REPLY" : output;
    TTH_EXPECT(tth_end(h, agent, channel, thread, said, 0) == OC_OK, "agent_end failed");
    if (dg_silent_text(said))
        return 0;
    if (tth_send(h, agent, channel, thread, said) != 0)
        return 0;
    TTH_EXPECT(tth_msg(h, channel, thread, msg_id, tth_uid(agent), 1, said, NULL) == OC_OK,
               "message_received failed");
    return 1;
}

int tth_log_has(tth *h, const char *needle)
{
    /* A line logged inside a store transaction or by a plugin thread comes
     * through the plugin's log pump, a moment later: wait for it (bounded). */
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&h->mu);
        int r = h->log && strstr(h->log, needle) != NULL;
        pthread_mutex_unlock(&h->mu);
        if (r)
            return 1;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

void tth_relay_begin(tth *h)
{
    pthread_mutex_lock(&h->mu);
    h->relay = 1;
    h->main_busy = 1;
    h->main_thread = pthread_self();
    pthread_mutex_unlock(&h->mu);
}

int tth_relay_end(tth *h)
{
    pthread_mutex_lock(&h->mu);
    h->main_busy = 0;
    int n = h->relay_timeouts;
    pthread_cond_broadcast(&h->relay_cv);
    pthread_mutex_unlock(&h->mu);
    return n;
}
