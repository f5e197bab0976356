/*
 * one_turn_host.c -- the smallest host of the plugin ABI, for the release
 * build (make check-release): built for the release's architecture, it
 * dlopens a release dirigent.so the way a gateway would, starts it with a
 * config, and has it decide one turn: two agents seen in a channel, a
 * human names one of them, and before_model_resolve must leave the named
 * agent alone and route the other one to the no-reply model. Under
 * qemu-user it proves the cross-built arm64 library loads and works.
 *
 *   one-turn-host <dirigent.so> <scratch dir>     exit 0 and "one-turn: OK"
 *
 * Links the jansson the package carries (libjansson.so.4 beside it), as the
 * plugin does: json_t crosses the ABI, so host and plugin share one copy.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "openclaw/plugin.h"

#define CHANNEL "200000000000000001"
#define ALPHA_UID "100000000000000001"
#define BRAVO_UID "100000000000000002"
#define HUMAN_UID "100000000000000050"

typedef struct hook {
    char name[40];
    oc_hook_fn fn;
} hook;

/* The host: what the plugin registered. Single-threaded test, but the
 * plugin may log from its own threads: log only writes to stderr. */
typedef struct host {
    oc_host_api api;
    hook hooks[32];
    int n;
} host;

static int h_register_tool(oc_host *o, const oc_tool *tool)
{
    (void)o;
    return tool && tool->name && tool->execute ? OC_OK : OC_ERR_INVALID;
}

static int h_on(oc_host *o, const char *name, oc_hook_fn fn, int priority)
{
    host *h = (host *)o;
    (void)priority;
    if (!name || !fn || h->n >= 32)
        return OC_ERR_INVALID;
    snprintf(h->hooks[h->n].name, sizeof h->hooks[h->n].name, "%s", name);
    h->hooks[h->n++].fn = fn;
    return OC_OK;
}

static int h_patch(oc_host *o, const char *key, const char *provider, const char *model)
{
    (void)o, (void)key, (void)provider, (void)model;
    return OC_OK;
}

static json_t *h_list(oc_host *o, const char *channel)
{
    (void)o, (void)channel;
    return json_array();
}

/* Any thread (the plugin's log pump too). */
static void h_log(oc_host *o, int level, const char *message)
{
    (void)o;
    fprintf(stderr, "one-turn: plugin log %d: %s\n", level, message);
}

static int fail(const char *what)
{
    fprintf(stderr, "one-turn: FAILED: %s\n", what);
    return 1;
}

/* Calls every handler of `name` (event and ctx borrowed); the first result
 * wins, as OpenClaw's runner does. *out gets a new reference or NULL. */
static int call(host *h, const char *name, const json_t *event, const json_t *ctx, void *state,
                json_t **out)
{
    if (out)
        *out = NULL;
    int found = 0;
    for (int i = 0; i < h->n; i++) {
        if (strcmp(h->hooks[i].name, name) != 0)
            continue;
        found = 1;
        json_t *r = NULL;
        int rc = h->hooks[i].fn(state, event, ctx, &r);
        if (rc != OC_OK) {
            fprintf(stderr, "one-turn: %s answered status %d\n", name, rc);
            json_decref(r);
            return rc;
        }
        if (out && !*out)
            *out = r;
        else
            json_decref(r);
    }
    return found ? OC_OK : OC_ERR_NOT_FOUND;
}

static int message(host *h, void *state, const char *id, const char *sender, int bot,
                   const char *content, const char *mention)
{
    json_t *ev = json_pack("{s:s, s:s, s:b, s:s, s:b, s:s, s:[]}", "messageId", id, "channelId",
                           CHANNEL, "isDm", 0, "senderId", sender, "senderIsBot", bot, "content",
                           content, "mentions");
    if (mention)
        json_array_append_new(json_object_get(ev, "mentions"), json_string(mention));
    json_t *ctx = json_pack("{s:s}", "channelId", CHANNEL);
    int rc = call(h, "message_received", ev, ctx, state, NULL);
    json_decref(ev);
    json_decref(ctx);
    return rc;
}

/* before_model_resolve of agent: 1 = routed to the no-reply model, 0 = left
 * alone, -1 = error. */
static int resolve(host *h, void *state, const char *agent)
{
    char key[128];
    snprintf(key, sizeof key, "agent:%s:discord:channel:%s", agent, CHANNEL);
    json_t *ctx = json_pack("{s:s, s:s, s:s, s:s}", "agentId", agent, "sessionKey", key,
                            "channelId", CHANNEL, "messageProvider", "discord");
    json_t *ev = json_pack("{s:s}", "prompt", "What do you think?");
    json_t *r = NULL;
    int rc = call(h, "before_model_resolve", ev, ctx, state, &r);
    int out = rc != OC_OK ? -1 : 0;
    if (rc == OC_OK && r) {
        const char *p = json_string_value(json_object_get(r, "providerOverride"));
        const char *m = json_string_value(json_object_get(r, "modelOverride"));
        out = p && m && !strcmp(p, "noreply") && !strcmp(m, "no-reply") ? 1 : -1;
    }
    json_decref(r);
    json_decref(ev);
    json_decref(ctx);
    return out;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: one-turn-host <dirigent.so> <scratch dir>\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "one-turn: FAILED: dlopen: %s\n", dlerror());
        return 1;
    }
    const oc_plugin *(*entry)(void) =
        (const oc_plugin *(*)(void))dlsym(lib, OC_PLUGIN_ENTRY_SYMBOL);
    if (!entry)
        return fail("dirigent.so exports no oc_plugin_entry");
    const oc_plugin *p = entry();
    if (!p || p->abi_major != OC_ABI_MAJOR || !p->init || !p->shutdown)
        return fail("oc_plugin_entry returned no usable ABI 1 table");

    host h = {.api = {.abi_major = OC_ABI_MAJOR,
                      .abi_minor = OC_ABI_MINOR,
                      .struct_size = sizeof(oc_host_api),
                      .register_tool = h_register_tool,
                      .on = h_on,
                      .session_patch = h_patch,
                      .sessions_list = h_list,
                      .log = h_log}};
    h.api.host = (oc_host *)&h;
    json_t *config = json_pack(
        "{s:s, s:s, s:s+, s:{s:{s:s}, s:{s:s}}, s:{s:s, s:s}, s:{s:i}}", "noReplyProvider",
        "noreply", "noReplyModel", "no-reply", "dbPath", argv[2], "/one-turn.db", "agents", "alpha",
        "discordUserId", ALPHA_UID, "bravo", "discordUserId", BRAVO_UID, "discord", "guildId",
        "900000000000000001", "moderatorUserId", "100000000000000099", "turn", "timeoutSec", 86400);
    if (!config)
        return fail("cannot build the config");
    char err[512] = "";
    void *state = NULL;
    int rc = p->init(&h.api, config, &state, err, sizeof err);
    json_decref(config);
    if (rc != OC_OK) {
        fprintf(stderr, "one-turn: FAILED: init: status %d: %s\n", rc, err);
        return 1;
    }
    int bad = 0;
    /* Both agents seen in the channel, then a human names alpha. */
    bad |= message(&h, state, "300000000000000001", ALPHA_UID, 1, "hello", NULL) != OC_OK;
    bad |= message(&h, state, "300000000000000002", BRAVO_UID, 1, "hello", NULL) != OC_OK;
    bad |= message(&h, state, "300000000000000003", HUMAN_UID, 0, "<@" ALPHA_UID "> please start",
                   ALPHA_UID) != OC_OK;
    if (bad) {
        p->shutdown(state);
        return fail("message_received failed");
    }
    int a = resolve(&h, state, "alpha");
    int b = resolve(&h, state, "bravo");
    p->shutdown(state);
    if (a != 0 || b != 1) {
        fprintf(stderr,
                "one-turn: FAILED: alpha (named) should speak and bravo get the no-reply model; "
                "before_model_resolve answered alpha %d, bravo %d (0 speaks, 1 no-reply)\n",
                a, b);
        return 1;
    }
    printf("one-turn: OK: %s (%s %s) decided the turn: alpha speaks, bravo no-reply\n", argv[1],
           p->id, p->version);
    return 0;
}
