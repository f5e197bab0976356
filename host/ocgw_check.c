/*
 * ocgw_check.c -- mistakes that burn money or silently disable the plugin,
 * found after the plugins are loaded and before anything is served:
 *
 *   - a configured, enabled plugin entry whose plugin did not load (a typo
 *     in plugins.allow, a refused library, a failed init): its hooks never
 *     run, so every agent answers on its real model;
 *   - plugins.allow naming an id that no load path holds;
 *   - gateway.noReply differing from a plugin's noReplyProvider/noReplyModel:
 *     "silent" runs would go to a real (or unknown) model;
 *   - a plugin's discord.apiBase differing from the gateway's: the gateway
 *     would read one Discord while the plugin posts to another;
 *   - a gateway agent missing from a plugin's `agents`: never held back,
 *     it runs its real model on every message of a shared channel;
 *   - (--check only) a plugin with a Discord moderator (discord.moderatorUserId)
 *     whose token is missing, refused by Discord or another user's: no
 *     hand-off, notice or admin reply would ever be posted.
 *
 * The plugin is seen only through the ABI and the host config ocgw owns
 * (plugins.entries.<id>.config is part of that file).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocgw.h"

#define DISCORD_DEFAULT_API "https://discord.com/api/v10"
#define SLACK_DEFAULT_API "https://slack.com/api"

/* Hooks of the ABI (include/openclaw/plugin.h), for the summary. */
static const char *const hook_names[] = {
    "message_received",    "before_agent_reply", "before_model_resolve",
    "before_prompt_build", "message_sending",    "reply_payload_sending",
    "agent_end",           "gateway_start",      "gateway_stop",
    "model_call_ended",    "llm_output",         NULL};

static int same_base(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    while (la > 0 && a[la - 1] == '/')
        la--;
    while (lb > 0 && b[lb - 1] == '/')
        lb--;
    return la == lb && !strncmp(a, b, la);
}

/* Why candidate `id` is not loaded, in words (borrowed), or NULL. */
static const char *reason_of(const ocgw *g, const char *id)
{
    size_t n = och_plugin_count(g->host);
    for (size_t i = 0; i < n; i++) {
        och_plugin_info pi;
        if (och_plugin_get(g->host, i, &pi) == OC_OK && pi.id && !strcmp(pi.id, id))
            return pi.reason ? pi.reason : och_plugin_state_name(pi.state);
    }
    return NULL;
}

int ocgw_preflight(ocgw *g)
{
    int bad = 0;
    json_t *plugins = json_object_get(g->cfg.root, "plugins");
    json_t *allow = json_object_get(plugins, "allow");
    size_t i;
    json_t *v;
    json_array_foreach(allow, i, v) {
        const char *id = json_string_value(v);
        if (id && och_plugin_state_of(g->host, id) < 0) {
            och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                    "plugins.allow[%zu]: \"%s\" is not the id of any plugin in "
                    "plugins.load.paths; fix the spelling (a non-empty allow list loads only "
                    "the plugins it names)",
                    i, id);
            bad = 1;
        }
    }
    const char *id;
    json_t *entry;
    json_object_foreach(json_object_get(plugins, "entries"), id, entry) {
        if (json_is_false(json_object_get(entry, "enabled")))
            continue;
        int st = och_plugin_state_of(g->host, id);
        if (st != OCH_PLUGIN_LOADED) {
            const char *why =
                st < 0 ? "no plugin with this id is in plugins.load.paths" : reason_of(g, id);
            och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                    "plugins.entries.%s is configured and enabled, but the plugin did not load "
                    "(%s): none of its hooks or tools run, so every agent would answer on its "
                    "real model; fix that, or set plugins.entries.%s.enabled to false",
                    id, why ? why : "unknown reason", id);
            bad = 1;
        }
        json_t *pc = json_object_get(entry, "config");
        const char *prov = json_string_value(json_object_get(pc, "noReplyProvider"));
        const char *model = json_string_value(json_object_get(pc, "noReplyModel"));
        if ((prov && strcmp(prov, g->cfg.noreply_provider)) ||
            (model && strcmp(model, g->cfg.noreply_model))) {
            och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                    "gateway.noReply is %s/%s but plugins.entries.%s.config routes silent agents "
                    "to %s/%s: those runs would reach a model that is not the free no-reply one; "
                    "make the two pairs the same",
                    g->cfg.noreply_provider, g->cfg.noreply_model, id,
                    prov ? prov : g->cfg.noreply_provider, model ? model : g->cfg.noreply_model);
            bad = 1;
        }
        /* A plugin that manages named agents (an `agents` object): a
         * gateway agent missing there is never held back, so it would run
         * its real model on every message of a shared channel. */
        json_t *managed = json_object_get(pc, "agents");
        for (size_t k = 0; json_is_object(managed) && k < g->cfg.n_agents; k++) {
            const char *aid = g->cfg.agents[k].id;
            if (!json_object_get(managed, aid)) {
                och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                        "agent %s of the gateway is not in plugins.entries.%s.config.agents: "
                        "the plugin never holds it back, so it would run its real model on "
                        "every message of a shared channel; add it there with its "
                        "%s",
                        aid, id, g->cfg.slack ? "slackUserId" : "discordUserId");
                bad = 1;
            }
        }
        /* On Slack: the plugin's slack.apiBase, else $SLACK_API_URL (what
         * OpenClaw's Slack plugin reads), else Slack's own. */
        json_t *ps = json_object_get(pc, "slack");
        if (g->cfg.slack && json_is_object(ps)) {
            const char *base = json_string_value(json_object_get(ps, "apiBase"));
            const char *dflt = getenv("SLACK_API_URL");
            if (!base)
                base = dflt && *dflt ? dflt : SLACK_DEFAULT_API;
            if (!same_base(base, g->cfg.api_base)) {
                och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                        "slack.apiBase is %s but plugins.entries.%s.config.slack.apiBase is "
                        "%s%s: the plugin would post to another Slack than the one the gateway "
                        "reads; make them the same",
                        g->cfg.api_base, id, base,
                        json_object_get(ps, "apiBase") ? "" : " (its default)");
                bad = 1;
            }
        }
        json_t *pd = json_object_get(pc, "discord");
        if (!g->cfg.slack && json_is_object(pd)) {
            const char *base = json_string_value(json_object_get(pd, "apiBase"));
            if (!base)
                base = DISCORD_DEFAULT_API;
            if (!same_base(base, g->cfg.api_base)) {
                och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                        "discord.apiBase is %s but plugins.entries.%s.config.discord.apiBase is "
                        "%s%s: the plugin would post to another Discord than the one the gateway "
                        "reads; make them the same",
                        g->cfg.api_base, id, base,
                        json_object_get(pd, "apiBase") ? "" : " (its default)");
                bad = 1;
            }
        }
    }
    return bad;
}

/* The Slack moderator of a plugin entry: its token (env
 * DIRIGENT_SLACK_MODERATOR_TOKEN) must be the bot of slack.moderatorUserId
 * (auth.test). 1 when it is not. */
static int check_slack_moderator(ocgw *g, const char *id, const char *want)
{
    const char *token = getenv("DIRIGENT_SLACK_MODERATOR_TOKEN");
    if (!token || !*token) {
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                "plugins.entries.%s: no Slack moderator token (env "
                "DIRIGENT_SLACK_MODERATOR_TOKEN): the moderator would post nothing (no "
                "hand-off, notice or admin reply); export it with the moderator app's xoxb- token",
                id);
        return 1;
    }
    ocgw_slack *s = NULL;
    char err[300] = "";
    ocgw_slack_err e;
    memset(&e, 0, sizeof e);
    json_t *me = NULL;
    int rc = ocgw_slack_new(g->cfg.api_base, token, g->cfg.timeout_ms, &s, err, sizeof err);
    if (rc == OC_OK)
        rc = ocgw_slack_call(s, "auth.test", NULL, &me, &e);
    ocgw_slack_free(s);
    const char *got = json_string_value(json_object_get(me, "user_id"));
    int bad = 0;
    if (rc != OC_OK) {
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                "plugins.entries.%s: the Slack moderator token %s (%s); fix "
                "DIRIGENT_SLACK_MODERATOR_TOKEN (the moderator app's bot token)",
                id, !strcmp(e.code, "invalid_auth") ? "is refused by Slack" : "cannot be checked",
                *err ? err : e.message);
        bad = 1;
    } else if (!got || strcmp(got, want)) {
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                "plugins.entries.%s: the Slack moderator token belongs to user %s, not to "
                "slack.moderatorUserId %s; give DIRIGENT_SLACK_MODERATOR_TOKEN the moderator "
                "app's token",
                id, got ? got : "?", want);
        bad = 1;
    }
    json_decref(me);
    return bad;
}

int ocgw_check_moderators(ocgw *g)
{
    int bad = 0;
    const char *id;
    json_t *entry;
    json_object_foreach(json_object_get(json_object_get(g->cfg.root, "plugins"), "entries"), id,
                        entry) {
        json_t *pd = json_object_get(json_object_get(entry, "config"), "discord");
        const char *want = json_string_value(json_object_get(pd, "moderatorUserId"));
        if (g->cfg.slack) {
            json_t *ps = json_object_get(json_object_get(entry, "config"), "slack");
            const char *swant = json_string_value(json_object_get(ps, "moderatorUserId"));
            if (!json_is_false(json_object_get(entry, "enabled")) && swant)
                bad |= check_slack_moderator(g, id, swant);
            continue;
        }
        if (json_is_false(json_object_get(entry, "enabled")) || !want)
            continue;
        /* As the plugin takes it: the environment wins over its config. */
        const char *token = getenv("DIRIGENT_MODERATOR_TOKEN");
        if (!token || !*token)
            token = json_string_value(json_object_get(pd, "moderatorToken"));
        if (!token || !*token) {
            och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                    "plugins.entries.%s: no moderator token (env DIRIGENT_MODERATOR_TOKEN or "
                    "config discord.moderatorToken): the moderator would post nothing (no "
                    "hand-off, notice or admin reply); export DIRIGENT_MODERATOR_TOKEN with the "
                    "moderator bot's token",
                    id);
            bad = 1;
            continue;
        }
        const char *base = json_string_value(json_object_get(pd, "apiBase"));
        dg_discord_options o = {.api_base = base ? base : DISCORD_DEFAULT_API,
                                .token = token,
                                .timeout_ms = g->cfg.timeout_ms,
                                .max_attempts = 2,
                                .user_agent = "DiscordBot (ocgw, " DG_VERSION ")"};
        dg_discord *d = NULL;
        dg_discord_err e;
        memset(&e, 0, sizeof e);
        json_t *me = NULL;
        char err[300] = "";
        int rc = dg_discord_new(&o, &d, err, sizeof err);
        if (rc == OC_OK)
            rc = dg_discord_request(d, "GET", "/users/@me", NULL, 1, &me, &e);
        dg_discord_free(d);
        const char *got = json_string_value(json_object_get(me, "id"));
        if (rc != OC_OK) {
            och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                    "plugins.entries.%s: the moderator token %s (%s); fix "
                    "DIRIGENT_MODERATOR_TOKEN (the moderator bot's current token)",
                    id, e.http_status == 401 ? "is refused by Discord" : "cannot be checked",
                    *err ? err : e.message);
            bad = 1;
        } else if (!got || strcmp(got, want)) {
            och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                    "plugins.entries.%s: the moderator token belongs to user %s, not to "
                    "discord.moderatorUserId %s; give DIRIGENT_MODERATOR_TOKEN the moderator "
                    "bot's token",
                    id, got ? got : "?", want);
            bad = 1;
        }
        json_decref(me);
    }
    return bad;
}

/* Append ", "-separated items to line. */
static void add(char *line, size_t n, int *first, const char *fmt, const char *a, const char *b)
{
    size_t l = strlen(line);
    if (l + 1 >= n)
        return;
    if (!*first)
        snprintf(line + l, n - l, ", ");
    l = strlen(line);
    snprintf(line + l, n - l, fmt, a, b);
    *first = 0;
}

void ocgw_check_summary(ocgw *g, FILE *f)
{
    char line[4096] = "ocgw --check: OK: plugins ";
    int first = 1;
    size_t n = och_plugin_count(g->host);
    for (size_t i = 0; i < n; i++) {
        och_plugin_info pi;
        if (och_plugin_get(g->host, i, &pi) == OC_OK && pi.state == OCH_PLUGIN_LOADED)
            add(line, sizeof line, &first, "%s %s", pi.id, pi.version ? pi.version : "");
    }
    if (first)
        add(line, sizeof line, &first, "%s%s", "none", "");
    snprintf(line + strlen(line), sizeof line - strlen(line), "; tools ");
    first = 1;
    json_t *tools = och_tools_list(g->host);
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
        add(line, sizeof line, &first, "%s%s", json_string_value(json_object_get(t, "name")), "");
    json_decref(tools);
    if (first)
        add(line, sizeof line, &first, "%s%s", "none", "");
    snprintf(line + strlen(line), sizeof line - strlen(line), "; hooks ");
    first = 1;
    for (const char *const *h = hook_names; *h; h++)
        if (och_hook_count(g->host, *h) > 0)
            add(line, sizeof line, &first, "%s%s", *h, "");
    if (first)
        add(line, sizeof line, &first, "%s%s", "none", "");
    snprintf(line + strlen(line), sizeof line - strlen(line), "; agents ");
    first = 1;
    for (size_t k = 0; k < g->cfg.n_agents; k++)
        add(line, sizeof line, &first, "%s%s", g->cfg.agents[k].id, "");
    snprintf(line + strlen(line), sizeof line - strlen(line), "; channels ");
    first = 1;
    for (size_t k = 0; k < g->cfg.n_channels; k++)
        add(line, sizeof line, &first, "#%s %s", g->cfg.channels[k].alias, g->cfg.channels[k].id);
    if (first)
        add(line, sizeof line, &first, "%s%s", "none (learned from tool results)", "");
    fprintf(f, "%s\n", line);
    fflush(f);
}
