/*
 * fuzz_host.c -- the fuzz targets' plugin host (see fuzz_host.h).
 */
#include "fuzz_host.h"

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirigent.h"
#include "fake_discord.h"

const oc_plugin *oc_plugin_entry(void);

#define MOD_UID "900000000000000009"
#define MAX_STEPS 32

typedef struct fz_hook {
    const char *name; /* static: the plugin's own string */
    oc_hook_fn fn;
} fz_hook;

struct fz_host {
    oc_host_api api;
    const oc_plugin *plugin;
    void *state;
    fake_discord *fd;
    char *dir; /* temp folder; owned */
    char *ws;  /* dir/ws; owned */
    _Atomic int64_t now_ms;
    pthread_mutex_t mu; /* guards leaked */
    int leaked;         /* a log line carried the token */
    fz_hook hooks[FZ_MAX_HOOKS];
    int n_hooks;
    const oc_tool *tools[FZ_MAX_TOOLS];
    int n_tools;
};

static const char *const agents[][2] = {
    {"alpha", "100000000000000001"},
    {"bravo", "100000000000000002"},
    {"charlie", "100000000000000003"},
    {"delta", "100000000000000004"},
};
#define N_AGENTS (sizeof agents / sizeof agents[0])

static int h_register_tool(oc_host *host, const oc_tool *tool)
{
    fz_host *h = (fz_host *)host;
    if (!tool || !tool->execute || h->n_tools >= FZ_MAX_TOOLS)
        return OC_ERR_INVALID;
    h->tools[h->n_tools++] = tool;
    return OC_OK;
}

static int h_on(oc_host *host, const char *hook, oc_hook_fn fn, int priority)
{
    fz_host *h = (fz_host *)host;
    (void)priority;
    if (!hook || !fn || h->n_hooks >= FZ_MAX_HOOKS)
        return OC_ERR_INVALID;
    h->hooks[h->n_hooks++] = (fz_hook){hook, fn};
    return OC_OK;
}

static int h_patch(oc_host *host, const char *key, const char *provider, const char *model)
{
    (void)host;
    (void)key;
    return (!provider) == (!model) ? OC_OK : OC_ERR_INVALID;
}

static json_t *h_list(oc_host *host, const char *channel)
{
    (void)host;
    json_t *a = json_array();
    for (size_t i = 0; a && channel && i < 2; i++) {
        char key[256];
        snprintf(key, sizeof key, "agent:%s:discord:channel:%s", agents[i][0], channel);
        json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "sessionKey", key, "agentId",
                                           agents[i][0], "channelId", channel));
    }
    return a;
}

static void h_log(oc_host *host, int level, const char *message)
{
    fz_host *h = (fz_host *)host;
    (void)level;
    /* The scrubber's promise: no spelling of the token that a reader could
     * use. The whole token and its secret tail are checked. */
    if (message && (strstr(message, FZ_TOKEN) || strstr(message, "c2VjcmV0X3Rva2VuX2Zvcl9mdXp6"))) {
        pthread_mutex_lock(&h->mu);
        h->leaked = 1;
        pthread_mutex_unlock(&h->mu);
        fprintf(stderr, "fuzz_host: the moderator token reached a log line: %s\n", message);
    }
    if (getenv("FZ_VERBOSE"))
        fprintf(stderr, "plugin[%d]: %s\n", level, message ? message : "(null)");
}

static int64_t h_clock(void *state)
{
    fz_host *h = state;
    return atomic_load(&h->now_ms);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    if (remove(path) != 0 && errno != ENOENT)
        fprintf(stderr, "fuzz_host: cannot remove %s: %s\n", path, strerror(errno));
    return 0;
}

static int put_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* The workspace: files a summary path may name, good and bad. */
static int make_workspace(fz_host *h)
{
    char path[4096];
    if (asprintf(&h->ws, "%s/ws", h->dir) < 0) {
        h->ws = NULL;
        return -1;
    }
    snprintf(path, sizeof path, "%s/sub", h->ws);
    if (mkdir(h->ws, 0700) || mkdir(path, 0700))
        return -1;
    if (put_file(h->ws, "summary.md", "# Result\nWe agree.\n") || put_file(h->ws, "empty.md", "") ||
        put_file(h->ws, "blank.md", " \n\t\n") || put_file(h->ws, "sub/notes.md", "notes\n") ||
        put_file(h->dir, "outside.md", "secret\n"))
        return -1;
    snprintf(path, sizeof path, "%s/link.md", h->ws);
    if (symlink("../outside.md", path))
        return -1;
    snprintf(path, sizeof path, "%s/loop.md", h->ws);
    return symlink("loop.md", path);
}

static int start_discord(fz_host *h)
{
    char err[256] = "";
    fake_discord_options o = {.guild_id = "500000000000000001"};
    if (fake_discord_start(&o, &h->fd, err, sizeof err)) {
        fprintf(stderr, "fuzz_host: fake Discord: %s\n", err);
        h->fd = NULL;
        return -1;
    }
    if (fake_discord_add_user(h->fd, FZ_TOKEN, MOD_UID, "moderator", 1))
        return -1;
    for (size_t i = 0; i < N_AGENTS; i++) {
        char tok[64];
        snprintf(tok, sizeof tok, "T-%s", agents[i][0]);
        if (fake_discord_add_user(h->fd, tok, agents[i][1], agents[i][0], 1))
            return -1;
    }
    return fake_discord_add_channel(h->fd, FZ_CHANNEL, "work", NULL) ? -1 : 0;
}

fz_host *fz_host_start(const char *policy)
{
    fz_host *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    pthread_mutex_init(&h->mu, NULL);
    atomic_store(&h->now_ms, 1700000000000LL);
    unsetenv("DIRIGENT_MODERATOR_TOKEN");
    unsetenv("DIRIGENT_SESSION_POLICY");
    unsetenv("DIRIGENT_STATE_DIR");
    const char *tmp = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/dirigent-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpl) || !(h->dir = strdup(tmpl)) || make_workspace(h) || start_discord(h)) {
        fprintf(stderr, "fuzz_host: cannot set up an instance in %s: %s\n", tmpl, strerror(errno));
        fz_host_stop(h);
        return NULL;
    }
    h->api = (oc_host_api){
        .abi_major = OC_ABI_MAJOR,
        .abi_minor = OC_ABI_MINOR,
        .struct_size = sizeof(oc_host_api),
        .host = (oc_host *)h,
        .register_tool = h_register_tool,
        .on = h_on,
        .session_patch = h_patch,
        .sessions_list = h_list,
        .log = h_log,
    };
    h->plugin = oc_plugin_entry();
    char text[4096];
    snprintf(
        text, sizeof text,
        "{\"noReplyProvider\":\"noreply\",\"noReplyModel\":\"no-reply-1\","
        "\"sessionPolicy\":\"%s\",\"dbPath\":\"%s/dirigent.db\","
        "\"admins\":[\"200000000000000001\"],"
        "\"turn\":{\"timeoutSec\":30,\"maxAgentMessages\":6},"
        "\"discord\":{\"apiBase\":\"%s\",\"guildId\":\"500000000000000001\","
        "\"moderatorToken\":\"%s\",\"moderatorUserId\":\"" MOD_UID "\",\"timeoutMs\":3000},"
        "\"discussion\":{\"maxSummaryBytes\":4096,\"maxGuideChars\":1500},"
        "\"agents\":{\"alpha\":{\"discordUserId\":\"%s\"},\"bravo\":{\"discordUserId\":\"%s\"},"
        "\"charlie\":{\"discordUserId\":\"%s\"},\"delta\":{\"discordUserId\":\"%s\"}}}",
        policy, h->dir, fake_discord_url(h->fd), FZ_TOKEN, agents[0][1], agents[1][1], agents[2][1],
        agents[3][1]);
    json_error_t je;
    json_t *cfg = json_loads(text, 0, &je);
    char err[1024] = "";
    int rc = cfg ? h->plugin->init(&h->api, cfg, &h->state, err, sizeof err) : OC_ERR_INVALID;
    json_decref(cfg);
    if (rc != OC_OK) {
        fprintf(stderr, "fuzz_host: plugin init failed (%s): %s %s\n", oc_status_name(rc), err,
                cfg ? "" : je.text);
        h->state = NULL;
        fz_host_stop(h);
        return NULL;
    }
    dg_plugin *p = h->state;
    dg_set_clock(p, h_clock, h);
    return h;
}

static void check_call(fz_host *h, const char *what, int rc, const json_t *result, int tool)
{
    int known = rc == OC_OK || (rc <= OC_ERR_INVALID && rc >= OC_ERR_INTERNAL);
    int shaped = !result || json_is_object(result);
    if (tool)
        shaped = result && json_is_object(result) &&
                 (rc == OC_OK ? json_is_array(json_object_get(result, "content"))
                              : json_is_object(json_object_get(result, "error")));
    pthread_mutex_lock(&h->mu);
    int leaked = h->leaked;
    pthread_mutex_unlock(&h->mu);
    if (!known || !shaped || leaked || rc == OC_ERR_INTERNAL) {
        char *r = result ? json_dumps(result, JSON_COMPACT) : NULL;
        fprintf(stderr, "fuzz_host: %s broke its contract: status %d (%s), result %s%s\n", what, rc,
                oc_status_name(rc), r ? r : "(none)", leaked ? ", token in the log" : "");
        free(r);
        abort();
    }
}

/* Id of the channel the fake made last (FZ_CHANNEL when none) into buf. */
static void last_channel(fz_host *h, char *buf, size_t cap)
{
    json_t *all = fake_discord_channels(h->fd);
    size_t n = json_array_size(all);
    const char *id =
        n ? json_string_value(json_object_get(json_array_get(all, n - 1), "id")) : NULL;
    snprintf(buf, cap, "%s", id ? id : FZ_CHANNEL);
    json_decref(all);
}

/* A copy of an object input (new reference; other values: a new reference
 * to the same) with the host's substitutions: a string workspaceDir
 * becomes the instance's workspace, a member whose value is "$created"
 * becomes the id of the channel the fake Discord made last (so an input
 * can name the discussion channel a earlier step created). */
static json_t *host_copy(fz_host *h, const json_t *in)
{
    if (!json_is_object(in))
        return json_incref((json_t *)in);
    json_t *c = json_deep_copy(in);
    const char *k;
    json_t *v;
    char id[64] = "";
    json_object_foreach(c, k, v) {
        if (json_is_string(v) && !strcmp(json_string_value(v), "$created")) {
            if (!id[0])
                last_channel(h, id, sizeof id);
            json_string_set(v, id);
        }
    }
    if (json_is_string(json_object_get(c, "workspaceDir")))
        json_object_set_new(c, "workspaceDir", json_string(h->ws));
    return c;
}

int fz_host_hook(fz_host *h, const char *name, const json_t *event, const json_t *ctx)
{
    for (int i = 0; i < h->n_hooks; i++) {
        if (strcmp(h->hooks[i].name, name) != 0)
            continue;
        json_t *c = host_copy(h, ctx), *e = host_copy(h, event), *r = NULL;
        int rc = h->hooks[i].fn(h->state, e, c, &r);
        check_call(h, name, rc, r, 0);
        json_decref(r);
        json_decref(e);
        json_decref(c);
        return rc;
    }
    return OC_ERR_NOT_FOUND;
}

int fz_host_tool(fz_host *h, const char *name, const json_t *params, const json_t *ctx)
{
    for (int i = 0; i < h->n_tools; i++) {
        if (strcmp(h->tools[i]->name, name) != 0)
            continue;
        json_t *c = host_copy(h, ctx), *pa = host_copy(h, params), *r = NULL;
        int rc = h->tools[i]->execute(h->state, pa, c, &r);
        check_call(h, name, rc, r, 1);
        json_decref(r);
        json_decref(pa);
        json_decref(c);
        return rc;
    }
    return OC_ERR_NOT_FOUND;
}

void fz_host_advance(fz_host *h, int64_t ms)
{
    if (ms > 0)
        atomic_fetch_add(&h->now_ms, ms > 86400000 ? 86400000 : ms);
}

void fz_host_stop(fz_host *h)
{
    if (!h)
        return;
    if (h->state)
        h->plugin->shutdown(h->state);
    if (h->fd)
        fake_discord_stop(h->fd);
    if (h->dir)
        nftw(h->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(h->dir);
    free(h->ws);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

static void run_step(fz_host *h, const json_t *step)
{
    const json_t *ctx = json_object_get(step, "ctx");
    const char *hook = json_string_value(json_object_get(step, "hook"));
    const char *tool = json_string_value(json_object_get(step, "tool"));
    json_t *adv = json_object_get(step, "advanceMs");
    if (!hook && !tool) {
        if (json_is_integer(adv))
            fz_host_advance(h, json_integer_value(adv));
        return;
    }
    const json_t *main_in = json_object_get(step, hook ? "event" : "params");
    json_t *empty = json_object();
    if (hook)
        fz_host_hook(h, hook, main_in ? main_in : empty, ctx ? ctx : empty);
    else
        fz_host_tool(h, tool, main_in ? main_in : empty, ctx ? ctx : empty);
    json_decref(empty);
}

void fz_run_input(char kind, const char *name, const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
    if (!json_is_object(in)) {
        /* Raw text: the whole input becomes event/params (a string) */
        json_decref(in);
        in = json_object();
        json_t *s = json_stringn((const char *)data, size); /* NULL unless UTF-8 */
        json_object_set_new(in, kind == 'h' ? "event" : "params", s ? s : json_null());
    }
    const char *policy = json_string_value(json_object_get(in, "policy"));
    fz_host *h = fz_host_start(policy && !strcmp(policy, "thread") ? "thread" : "channel");
    if (!h)
        abort();
    const json_t *before = json_object_get(in, "before");
    for (size_t i = 0; i < json_array_size(before) && i < MAX_STEPS; i++)
        run_step(h, json_array_get(before, i));
    /* A host always passes an event/params and a ctx; missing ones are {}. */
    json_t *empty = json_object();
    const json_t *main_in = json_object_get(in, kind == 'h' ? "event" : "params");
    const json_t *ctx = json_object_get(in, "ctx");
    if (kind == 'h')
        fz_host_hook(h, name, main_in ? main_in : empty, ctx ? ctx : empty);
    else
        fz_host_tool(h, name, main_in ? main_in : empty, ctx ? ctx : empty);
    json_decref(empty);
    fz_host_stop(h);
    json_decref(in);
}
