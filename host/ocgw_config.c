/*
 * ocgw_config.c -- the gateway's host config.
 *
 * OpenClaw-shaped: `plugins` (load.paths, allow, deny, entries.<id>.{enabled,
 * config}) is read by the host core (och_host_configure); ocgw reads the
 * rest: `discord` or `slack` (the chat platform; one of them), `gateway`,
 * `channels`, `agents`, `humans`. Every string
 * of the file may use ${NAME} (environment; "$${" is a literal "${"), like
 * OpenClaw's config. Relative paths are taken from the config file's folder.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocgw.h"
#include "slack.h"
#include "buf.h"
#include "agent_id.h"
#include "secret_shape.h"

static int fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t n, const char *fmt, ...)
{
    if (err && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, n, fmt, ap);
        va_end(ap);
    }
    return OC_ERR_INVALID;
}

/* ---- ${ENV} expansion ---------------------------------------------------------------- */

static char *expand(const char *s, const char *where, char *err, size_t n)
{
    dg_buf out = {0};
    for (const char *p = s; *p;) {
        const char *add = p;
        size_t addn = 1;
        char *val_owned = NULL;
        if (p[0] == '$' && p[1] == '$' && p[2] == '{') {
            add = "${";
            addn = 2;
            p += 3;
        } else if (p[0] == '$' && p[1] == '{') {
            const char *e = strchr(p + 2, '}');
            if (!e) {
                fail(err, n, "%s: \"${\" without a closing \"}\"; write $${ for a literal ${",
                     where);
                dg_buf_free(&out);
                return NULL;
            }
            char name[128];
            size_t nl = (size_t)(e - p - 2);
            if (nl == 0 || nl >= sizeof name) {
                fail(err, n, "%s: empty or too long variable name in ${...}", where);
                dg_buf_free(&out);
                return NULL;
            }
            memcpy(name, p + 2, nl);
            name[nl] = 0;
            const char *v = getenv(name);
            if (!v) {
                fail(err, n,
                     "%s: environment variable %s is not set (used as ${%s}); set it "
                     "or change the config",
                     where, name, name);
                dg_buf_free(&out);
                return NULL;
            }
            val_owned = strdup(v);
            add = val_owned;
            addn = val_owned ? strlen(val_owned) : 0;
            p = e + 1;
        } else {
            p++;
        }
        int failed = dg_buf_add(&out, add, addn);
        free(val_owned);
        if (failed) {
            dg_buf_free(&out);
            return NULL;
        }
    }
    return out.s ? out.s : strdup("");
}

/* Expand every string of j in place; where = JSON path for messages. */
static int expand_tree(json_t *j, const char *where, char *err, size_t n)
{
    char sub[512];
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) {
            snprintf(sub, sizeof sub, "%s%s%s", where, *where ? "." : "", k);
            if (json_is_string(v)) {
                char *e = expand(json_string_value(v), sub, err, n);
                if (!e)
                    return OC_ERR_INVALID;
                json_object_set_new(j, k, json_string(e));
                free(e);
            } else if (expand_tree(v, sub, err, n)) {
                return OC_ERR_INVALID;
            }
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) {
            snprintf(sub, sizeof sub, "%s[%zu]", where, i);
            if (json_is_string(v)) {
                char *e = expand(json_string_value(v), sub, err, n);
                if (!e)
                    return OC_ERR_INVALID;
                json_array_set_new(j, i, json_string(e));
                free(e);
            } else if (expand_tree(v, sub, err, n)) {
                return OC_ERR_INVALID;
            }
        }
    }
    return OC_OK;
}

/* ---- secrets ---------------------------------------------------------------------------- */

/* A token-shaped key or value anywhere in the file is refused by its path,
 * before any other check could echo it. A plugin's own config is left to
 * the plugin (its discord.moderatorToken may hold one; it checks the rest). */
static int refuse_tokens(const json_t *root, const char *file, char *err, size_t n)
{
    static const char *const plugin_configs[] = {"plugins.entries.*.config", NULL};
    char where[256];
    int is_key;
    if (!dg_json_find_token(root, plugin_configs, where, sizeof where, &is_key))
        return OC_OK;
    if (is_key)
        return fail(err, n,
                    "%s: a key of %s: this looks like a bot token; tokens belong in the "
                    "environment: put it in an environment variable (an agent names it "
                    "in tokenEnv) and fix the key",
                    file, *where ? where : "the top level");
    return fail(err, n,
                "%s: this looks like a bot token; tokens belong in the environment: put "
                "it in an environment variable and name that variable in tokenEnv (for "
                "an agent or a human) instead",
                where);
}

/* ---- typed readers ---------------------------------------------------------------------- */

static int check_keys(const json_t *obj, const char *where, const char *const *allowed, char *err,
                      size_t n)
{
    if (!json_is_object(obj))
        return fail(err, n, "%s: expected an object", where);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(*a, k);
        if (!ok) {
            char list[512] = "";
            for (const char *const *a = allowed; *a; a++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                         a == allowed ? "" : ", ", *a);
            return fail(err, n, "%s.%s: unknown key (known: %s); check the spelling", where, k,
                        list);
        }
    }
    return OC_OK;
}

/* Optional string: OC_OK with *out NULL when absent. */
static int get_str(const json_t *obj, const char *key, const char *where, int required, char **out,
                   char *err, size_t n)
{
    *out = NULL;
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required)
            return fail(err, n, "%s.%s: required string is missing", where, key);
        return OC_OK;
    }
    if (!json_is_string(v) || !*json_string_value(v))
        return fail(err, n, "%s.%s: expected a non-empty string", where, key);
    *out = strdup(json_string_value(v));
    return *out ? OC_OK : OC_ERR_NOMEM;
}

static int get_long(const json_t *obj, const char *key, const char *where, long def, long lo,
                    long hi, long *out, char *err, size_t n)
{
    json_t *v = json_object_get(obj, key);
    *out = def;
    if (!v)
        return OC_OK;
    if (!json_is_integer(v))
        return fail(err, n, "%s.%s: expected an integer", where, key);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return fail(err, n, "%s.%s: %lld is out of range %ld..%ld", where, key, x, lo, hi);
    *out = (long)x;
    return OC_OK;
}

static int get_bool(const json_t *obj, const char *key, const char *where, int def, int *out,
                    char *err, size_t n)
{
    json_t *v = json_object_get(obj, key);
    *out = def;
    if (!v)
        return OC_OK;
    if (!json_is_boolean(v))
        return fail(err, n, "%s.%s: expected true or false", where, key);
    *out = json_is_true(v);
    return OC_OK;
}

static int get_snowflake(const json_t *obj, const char *key, const char *where, int required,
                         char **out, char *err, size_t n)
{
    int rc = get_str(obj, key, where, required, out, err, n);
    if (rc)
        return rc;
    if (*out && !dg_snowflake_valid(*out)) {
        free(*out);
        *out = NULL;
        return fail(err, n, "%s.%s: expected a Discord id (snowflake: 1-20 digits)", where, key);
    }
    return OC_OK;
}

/* A user id of the gateway's platform (Discord: a snowflake; Slack: U... or
 * W...), or a channel id (Discord: a snowflake; Slack: C..., G... or D...). */
static int get_platform_id(const ocgw_config *c, const json_t *obj, const char *key,
                           const char *where, int required, int user, char **out, char *err,
                           size_t n)
{
    if (!c->slack)
        return get_snowflake(obj, key, where, required, out, err, n);
    int rc = get_str(obj, key, where, required, out, err, n);
    if (rc || !*out)
        return rc;
    if (user ? dg_slack_user_id_valid(*out) : dg_slack_channel_id_valid(*out))
        return OC_OK;
    free(*out);
    *out = NULL;
    return fail(err, n,
                user ? "%s.%s: expected a Slack user id ('U' or 'W' then 2-20 upper-case letters "
                       "or digits, as users.info shows it)"
                     : "%s.%s: expected a Slack channel id ('C', 'G' or 'D' then 2-20 upper-case "
                       "letters or digits, as the channel's details show it)",
                where, key);
}

/* The key of a participant's user id on the gateway's platform. */
static const char *uid_key(const ocgw_config *c)
{
    return c->slack ? "slackUserId" : "discordUserId";
}

/* ---- sections ------------------------------------------------------------------------------ */

/* `slack` instead of `discord`: the gateway reads and posts Slack. */
static int read_slack(ocgw_config *c, char *err, size_t n)
{
    static const char *const keys[] = {"apiBase", "moderatorUserId", "timeoutMs", NULL};
    json_t *d = json_object_get(c->root, "slack");
    c->slack = 1;
    int rc = check_keys(d, "slack", keys, err, n);
    if (!rc)
        rc = get_str(d, "apiBase", "slack", 1, &c->api_base, err, n);
    if (!rc)
        rc = get_platform_id(c, d, "moderatorUserId", "slack", 0, 1, &c->moderator_user_id, err, n);
    if (!rc)
        rc = get_long(d, "timeoutMs", "slack", 15000, 100, 600000, &c->timeout_ms, err, n);
    return rc;
}

static int read_discord(ocgw_config *c, char *err, size_t n)
{
    static const char *const keys[] = {"apiBase", "guildId", "moderatorUserId", "timeoutMs", NULL};
    json_t *d = json_object_get(c->root, "discord");
    if (d && json_object_get(c->root, "slack"))
        return fail(err, n,
                    "discord, slack: a gateway serves one chat platform; keep the block of the "
                    "platform its channels are on");
    if (json_object_get(c->root, "slack"))
        return read_slack(c, err, n);
    if (!d)
        return fail(err, n,
                    "discord: required object is missing (discord.apiBase at least; or slack "
                    "for a Slack gateway)");
    int rc = check_keys(d, "discord", keys, err, n);
    if (!rc)
        rc = get_str(d, "apiBase", "discord", 1, &c->api_base, err, n);
    if (!rc)
        rc = get_snowflake(d, "guildId", "discord", 0, &c->guild_id, err, n);
    if (!rc)
        rc = get_snowflake(d, "moderatorUserId", "discord", 0, &c->moderator_user_id, err, n);
    if (!rc)
        rc = get_long(d, "timeoutMs", "discord", 15000, 100, 600000, &c->timeout_ms, err, n);
    return rc;
}

static int read_gateway(ocgw_config *c, char *err, size_t n)
{
    static const char *const keys[] = {
        "stateDir",   "pollIntervalMs",     "noReply", "logLevel", "fsync",
        "claimHooks", "agentEndAfterClaim", "runOnly", "name",     NULL};
    json_t *g = json_object_get(c->root, "gateway");
    json_t *empty = json_object();
    if (!g)
        g = empty;
    int rc = check_keys(g, "gateway", keys, err, n);
    char *sd = NULL, *lvl = NULL;
    if (!rc)
        rc = get_str(g, "stateDir", "gateway", 0, &sd, err, n);
    if (!rc)
        rc = get_long(g, "pollIntervalMs", "gateway", 1000, 10, 600000, &c->poll_ms, err, n);
    if (!rc)
        rc = get_bool(g, "fsync", "gateway", 1, &c->fsync, err, n);
    if (!rc)
        rc = get_bool(g, "claimHooks", "gateway", 1, &c->claim_hooks, err, n);
    if (!rc)
        rc = get_bool(g, "agentEndAfterClaim", "gateway", 1, &c->agent_end_after_claim, err, n);
    if (!rc)
        rc = get_str(g, "logLevel", "gateway", 0, &lvl, err, n);
    if (!rc)
        rc = get_str(g, "name", "gateway", 0, &c->name, err, n);
    if (!rc) {
        c->log_level = OC_LOG_INFO;
        if (lvl) {
            static const char *const names[] = {"debug", "info", "warn", "error"};
            c->log_level = -1;
            for (int i = 0; i < 4; i++)
                if (!strcmp(lvl, names[i]))
                    c->log_level = i;
            if (c->log_level < 0)
                rc =
                    fail(err, n, "gateway.logLevel: \"%s\" is not debug, info, warn or error", lvl);
        }
    }
    if (!rc) {
        json_t *nr = json_object_get(g, "noReply");
        static const char *const nkeys[] = {"provider", "model", NULL};
        if (!nr) {
            rc = fail(err, n,
                      "gateway.noReply: required object {provider, model} is missing: the "
                      "pair the plugin routes silent agents to (its noReplyProvider/"
                      "noReplyModel); runs resolved to it cost nothing");
        } else {
            rc = check_keys(nr, "gateway.noReply", nkeys, err, n);
            if (!rc)
                rc = get_str(nr, "provider", "gateway.noReply", 1, &c->noreply_provider, err, n);
            if (!rc)
                rc = get_str(nr, "model", "gateway.noReply", 1, &c->noreply_model, err, n);
        }
    }
    if (!rc) {
        c->state_dir = ocgw_abspath(c->config_dir, sd ? sd : "ocgw-state");
        if (!c->state_dir)
            rc = OC_ERR_NOMEM;
    }
    free(sd);
    free(lvl);
    json_decref(empty);
    return rc;
}

static int str_array(const json_t *arr, const char *where, char ***out, size_t *n_out, char *err,
                     size_t n)
{
    *out = NULL;
    *n_out = 0;
    if (!json_is_array(arr))
        return fail(err, n, "%s: expected an array of strings", where);
    size_t cnt = json_array_size(arr);
    *out = calloc(cnt + 1, sizeof **out);
    if (!*out)
        return OC_ERR_NOMEM;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (!json_is_string(v) || !*json_string_value(v))
            return fail(err, n, "%s[%zu]: expected a non-empty string", where, i);
        (*out)[(*n_out)++] = strdup(json_string_value(v));
    }
    return OC_OK;
}

static int read_agents(ocgw_config *c, char *err, size_t n)
{
    static const char *const keys[] = {"id",          "workspace",    "discordUserId",
                                       "slackUserId", "tokenEnv",     "model",
                                       "scenario",    "systemPrompt", NULL};
    json_t *arr = json_object_get(c->root, "agents");
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return fail(err, n,
                    "agents: required non-empty array of {id, workspace, discordUserId (or "
                    "slackUserId), "
                    "tokenEnv, model, scenario?}");
    c->agents = calloc(json_array_size(arr), sizeof *c->agents);
    if (!c->agents)
        return OC_ERR_NOMEM;
    size_t i;
    json_t *a;
    json_array_foreach(arr, i, a) {
        char where[64];
        snprintf(where, sizeof where, "agents[%zu]", i);
        ocgw_agent *ag = &c->agents[c->n_agents++];
        char *ws = NULL, *model = NULL, *scen = NULL;
        int rc = check_keys(a, where, keys, err, n);
        if (!rc)
            rc = get_str(a, "id", where, 1, &ag->id, err, n);
        if (!rc && !dg_agent_id_valid(ag->id))
            rc = fail(err, n, "%s.id: \"%.64s\" must be " DG_AGENT_ID_RULE, where, ag->id);
        if (!rc)
            snprintf(where, sizeof where, "agents[%s]", ag->id);
        for (size_t k = 0; !rc && k + 1 < c->n_agents; k++)
            if (!strcmp(c->agents[k].id, ag->id))
                rc = fail(err, n, "%s: agent id used twice", where);
        if (!rc)
            rc = get_str(a, "workspace", where, 1, &ws, err, n);
        if (!rc)
            rc = get_platform_id(c, a, uid_key(c), where, 1, 1, &ag->user_id, err, n);
        if (!rc)
            rc = get_str(a, "tokenEnv", where, 1, &ag->token_env, err, n);
        /* Read now, required by ocgw_config_run_only only when this
         * gateway runs the agent. */
        if (!rc) {
            const char *t = getenv(ag->token_env);
            if (t && *t && !(ag->token = strdup(t)))
                rc = OC_ERR_NOMEM;
        }
        if (!rc)
            rc = get_str(a, "model", where, 1, &model, err, n);
        if (!rc) {
            char *slash = strchr(model, '/');
            if (!slash || slash == model || !slash[1])
                rc = fail(err, n, "%s.model: \"%s\" must be \"provider/model\"", where, model);
            else {
                ag->provider = strndup(model, (size_t)(slash - model));
                ag->model = strdup(slash + 1);
            }
        }
        if (!rc)
            rc = get_str(a, "scenario", where, 0, &scen, err, n);
        if (!rc)
            rc = get_str(a, "systemPrompt", where, 0, &ag->system_prompt, err, n);
        if (!rc) {
            ag->workspace = ocgw_abspath(c->config_dir, ws);
            if (scen)
                ag->scenario_path = ocgw_abspath(c->config_dir, scen);
        }
        if (!rc && ag->scenario_path) {
            char e2[400];
            if (ocgw_scenario_load(ag->scenario_path, &ag->scen, e2, sizeof e2) != 0)
                rc = fail(err, n, "%s.scenario: %s", where, e2);
        }
        free(ws);
        free(model);
        free(scen);
        if (rc)
            return rc;
    }
    return OC_OK;
}

static int read_humans(ocgw_config *c, char *err, size_t n)
{
    static const char *const keys[] = {"id",       "discordUserId", "slackUserId",
                                       "tokenEnv", "script",        NULL};
    static const char *const skeys[] = {"after", "channel", "content", "inThread", NULL};
    json_t *arr = json_object_get(c->root, "humans");
    if (!arr)
        return OC_OK;
    if (!json_is_array(arr))
        return fail(err, n,
                    "humans: expected an array of {id, discordUserId (or slackUserId), "
                    "tokenEnv?, script?}");
    c->humans = calloc(json_array_size(arr) + 1, sizeof *c->humans);
    if (!c->humans)
        return OC_ERR_NOMEM;
    size_t i;
    json_t *h;
    json_array_foreach(arr, i, h) {
        char where[64];
        snprintf(where, sizeof where, "humans[%zu]", i);
        ocgw_human *hu = &c->humans[c->n_humans++];
        int rc = check_keys(h, where, keys, err, n);
        if (!rc)
            rc = get_str(h, "id", where, 1, &hu->id, err, n);
        if (!rc && !dg_agent_id_valid(hu->id))
            rc = fail(err, n,
                      "%s.id: \"%.64s\" must be " DG_AGENT_ID_RULE " (the rule of agent "
                      "ids, so a human id reads like one)",
                      where, hu->id);
        if (!rc && ocgw_agent_by_id(c, hu->id))
            rc = fail(err, n, "%s.id: \"%s\" is already an agent id", where, hu->id);
        for (size_t k = 0; !rc && k + 1 < c->n_humans; k++)
            if (!strcmp(c->humans[k].id, hu->id))
                rc = fail(err, n, "%s.id: \"%s\" is used by two humans; ids are unique", where,
                          hu->id);
        if (!rc)
            rc = get_platform_id(c, h, uid_key(c), where, 1, 1, &hu->user_id, err, n);
        if (!rc)
            rc = get_str(h, "tokenEnv", where, 0, &hu->token_env, err, n);
        json_t *script = json_object_get(h, "script");
        if (!rc && script && !json_is_array(script))
            rc = fail(err, n, "%s.script: expected an array of {after?, channel, content}", where);
        /* Required by ocgw_config_run_only when this gateway posts the script. */
        if (!rc && json_array_size(script) > 0) {
            const char *t = hu->token_env ? getenv(hu->token_env) : NULL;
            if (t && *t && !(hu->token = strdup(t)))
                rc = OC_ERR_NOMEM;
        }
        if (!rc && json_array_size(script) > 0) {
            hu->steps = calloc(json_array_size(script), sizeof *hu->steps);
            if (!hu->steps)
                rc = OC_ERR_NOMEM;
        }
        size_t k;
        json_t *s;
        json_array_foreach(script, k, s) {
            if (rc)
                break;
            char sw[96];
            snprintf(sw, sizeof sw, "%s.script[%zu]", where, k);
            ocgw_human_step *hs = &hu->steps[hu->n_steps++];
            rc = check_keys(s, sw, skeys, err, n);
            if (!rc)
                rc = get_str(s, "channel", sw, 1, &hs->channel, err, n);
            if (!rc)
                rc = get_str(s, "content", sw, 1, &hs->content, err, n);
            json_t *after = json_object_get(s, "after");
            if (!rc)
                rc = get_bool(s, "inThread", sw, 0, &hs->in_thread, err, n);
            if (!rc && hs->in_thread && (!after || !c->slack))
                rc = fail(err, n,
                          "%s.inThread: a reply in a thread needs \"after\" (the message whose "
                          "thread it answers) and a Slack gateway",
                          sw);
            if (!rc && after) {
                char aw[128];
                snprintf(aw, sizeof aw, "%s.after", sw);
                hs->has_after = 1;
                rc = ocgw_match_parse(after, aw, &hs->after, err, n) ? OC_ERR_INVALID : OC_OK;
            }
        }
        if (rc)
            return rc;
    }
    return OC_OK;
}

static int read_channels(ocgw_config *c, char *err, size_t n)
{
    static const char *const keys[] = {"id", "parentId", "agents", "fromStart", "watch", NULL};
    json_t *obj = json_object_get(c->root, "channels");
    if (!obj)
        return OC_OK;
    if (!json_is_object(obj))
        return fail(err, n,
                    "channels: expected an object alias -> {id, agents?, parentId?, "
                    "fromStart?, watch?}");
    c->channels = calloc(json_object_size(obj) + 1, sizeof *c->channels);
    if (!c->channels)
        return OC_ERR_NOMEM;
    const char *alias;
    json_t *ch;
    json_object_foreach(obj, alias, ch) {
        char where[96];
        snprintf(where, sizeof where, "channels.%s", alias);
        ocgw_chan_cfg *cc = &c->channels[c->n_channels++];
        cc->alias = strdup(alias);
        int rc = dg_agent_id_valid(alias)
                     ? OC_OK
                     : fail(err, n, "%s: alias must be " DG_AGENT_ID_RULE, where);
        if (!rc)
            rc = check_keys(ch, where, keys, err, n);
        if (!rc)
            rc = get_platform_id(c, ch, "id", where, 1, 0, &cc->id, err, n);
        /* A Slack thread is a ts inside its channel, served with it. */
        if (!rc && c->slack && json_object_get(ch, "parentId"))
            rc = fail(err, n,
                      "%s.parentId: a Slack thread is not a channel of its own; its replies "
                      "are read with its channel (leave parentId out)",
                      where);
        if (!rc)
            rc = get_snowflake(ch, "parentId", where, 0, &cc->parent_id, err, n);
        if (!rc)
            rc = get_bool(ch, "fromStart", where, 0, &cc->from_start, err, n);
        if (!rc)
            rc = get_bool(ch, "watch", where, 0, &cc->watch, err, n);
        json_t *ags = json_object_get(ch, "agents");
        /* A channel no agent sees (the moderator's archive index): read and
         * shown in the transcript, in posting order, and nothing more. */
        if (!rc && cc->watch && ags)
            rc = fail(err, n,
                      "%s.agents: a watched channel is one no agent sees (the "
                      "gateway only reads it and shows its messages); leave out "
                      "\"agents\" or \"watch\"",
                      where);
        if (!rc && cc->watch) {
            cc->agents = calloc(1, sizeof *cc->agents);
            if (!cc->agents)
                rc = OC_ERR_NOMEM;
            ags = NULL;
        }
        if (!rc && ags) {
            char aw[128];
            snprintf(aw, sizeof aw, "%s.agents", where);
            rc = str_array(ags, aw, &cc->agents, &cc->n_agents, err, n);
            /* The gateway reads a channel with the token of an agent that
             * sees it: with none, it could never be served. */
            if (!rc && cc->n_agents == 0)
                rc = fail(err, n,
                          "%s: expected at least one agent (leave the key out and "
                          "every agent sees the channel; \"watch\": true instead of "
                          "\"agents\" for a channel no agent sees)",
                          aw);
            for (size_t k = 0; !rc && k < cc->n_agents; k++)
                if (!ocgw_agent_by_id(c, cc->agents[k]))
                    rc = fail(err, n, "%s[%zu]: \"%s\" is not an agent of `agents`", aw, k,
                              cc->agents[k]);
        }
        if (!rc && !ags && !cc->watch) {
            cc->agents = calloc(c->n_agents + 1, sizeof *cc->agents);
            for (size_t k = 0; cc->agents && k < c->n_agents; k++)
                cc->agents[cc->n_agents++] = strdup(c->agents[k].id);
        }
        for (size_t k = 0; !rc && k + 1 < c->n_channels; k++)
            if (!strcmp(c->channels[k].id, cc->id))
                rc = fail(err, n, "%s.id: channel %s is listed twice", where, cc->id);
        if (rc)
            return rc;
    }
    return OC_OK;
}

int ocgw_config_load(const char *path, ocgw_config *c, char *err, size_t err_len)
{
    memset(c, 0, sizeof *c);
    FILE *probe = fopen(path, "r");
    if (!probe)
        return fail(err, err_len, "cannot read %s: %s", path, strerror(errno));
    fclose(probe);
    json_error_t je;
    c->root = json_load_file(path, 0, &je);
    if (!c->root)
        return fail(err, err_len, "%s: not readable JSON (line %d: %s)", path, je.line, je.text);
    if (!json_is_object(c->root)) {
        ocgw_config_free(c);
        return fail(err, err_len, "%s: the host config must be a JSON object", path);
    }
    char abs[PATH_MAX];
    if (!realpath(path, abs)) {
        ocgw_config_free(c);
        return fail(err, err_len, "%s: %s", path, strerror(errno));
    }
    char *slash = strrchr(abs, '/');
    c->config_dir = slash == abs ? strdup("/") : strndup(abs, (size_t)(slash - abs));
    c->config_path = strdup(abs);

    static const char *const keys[] = {"plugins", "discord", "slack",       "gateway",   "channels",
                                       "agents",  "humans",  "description", "decisions", NULL};
    /* Before and after ${NAME} expansion: a token written into the file, or
     * one a variable put into a key that is not for tokens. */
    int rc = refuse_tokens(c->root, path, err, err_len);
    if (!rc)
        rc = expand_tree(c->root, "", err, err_len);
    if (!rc)
        rc = refuse_tokens(c->root, path, err, err_len);
    if (!rc)
        rc = check_keys(c->root, "config", keys, err, err_len);
    if (!rc)
        rc = read_discord(c, err, err_len);
    if (!rc)
        rc = read_gateway(c, err, err_len);
    if (!rc)
        rc = read_agents(c, err, err_len);
    if (!rc)
        rc = read_humans(c, err, err_len);
    if (!rc)
        rc = read_channels(c, err, err_len);
    if (!rc)
        rc =
            ocgw_config_run_only(c, json_object_get(json_object_get(c->root, "gateway"), "runOnly"),
                                 "gateway.runOnly", err, err_len);
    /* One Discord user is one participant: a shared id would make the
     * gateway take one's messages for the other's (and skip an agent's
     * runs as "its own message"). */
    const char *mod = c->moderator_user_id;
    for (size_t i = 0; !rc && i < c->n_agents; i++) {
        for (size_t k = 0; !rc && k < i; k++)
            if (!strcmp(c->agents[i].user_id, c->agents[k].user_id))
                rc = fail(err, err_len,
                          "agents[%s].%s: %s is already the user of "
                          "agent %s; each agent needs its own bot user",
                          c->agents[i].id, uid_key(c), c->agents[i].user_id, c->agents[k].id);
        if (!rc && mod && !strcmp(c->agents[i].user_id, mod))
            rc = fail(err, err_len,
                      "agents[%s].%s: %s is %s.moderatorUserId; "
                      "the moderator bot cannot also be an agent",
                      c->agents[i].id, uid_key(c), mod, c->slack ? "slack" : "discord");
        for (size_t k = 0; !rc && k < c->n_humans; k++)
            if (!strcmp(c->agents[i].user_id, c->humans[k].user_id))
                rc = fail(err, err_len, "humans[%s].%s: same user as agent %s", c->humans[k].id,
                          uid_key(c), c->agents[i].id);
    }
    for (size_t i = 0; !rc && i < c->n_humans; i++) {
        for (size_t k = 0; !rc && k < i; k++)
            if (!strcmp(c->humans[i].user_id, c->humans[k].user_id))
                rc = fail(err, err_len,
                          "humans[%s].%s: %s is already the user of "
                          "human %s; give each human its own user",
                          c->humans[i].id, uid_key(c), c->humans[i].user_id, c->humans[k].id);
        if (!rc && mod && !strcmp(c->humans[i].user_id, mod))
            rc = fail(err, err_len,
                      "humans[%s].%s: %s is %s.moderatorUserId; "
                      "the moderator bot is not a human",
                      c->humans[i].id, uid_key(c), mod, c->slack ? "slack" : "discord");
    }
    if (rc) {
        ocgw_config_free(c);
        memset(c, 0, sizeof *c);
    }
    return rc;
}

int ocgw_config_run_only(ocgw_config *c, const json_t *list, const char *where, char *err, size_t n)
{
    if (list && (!json_is_array(list) || json_array_size(list) == 0))
        return fail(err, n,
                    "%s: expected a non-empty array of agent and human ids (the ones "
                    "this gateway runs; leave it out to run every one)",
                    where);
    size_t i, agents = 0;
    json_t *v;
    json_array_foreach(list, i, v) {
        const char *id = json_string_value(v);
        if (!id || (!ocgw_agent_by_id(c, id) && !ocgw_human_by_id(c, id)))
            return fail(err, n,
                        "%s[%zu]: %s%s%s is not the id of an agent or human of this "
                        "config; list the ids of `agents` and `humans` this gateway runs",
                        where, i, id ? "\"" : "", id ? id : "a non-string", id ? "\"" : "");
        for (size_t k = 0; k < i; k++)
            if (!strcmp(id, json_string_value(json_array_get(list, k))))
                return fail(err, n, "%s[%zu]: \"%s\" is listed twice", where, i, id);
        agents += ocgw_agent_by_id(c, id) != NULL;
    }
    if (list && !agents)
        return fail(err, n,
                    "%s: names no agent; a gateway runs at least one agent (it reads "
                    "Discord with their tokens)",
                    where);
    /* Every local agent and scripted human needs its token here; checked
     * before anything changes, so a refusal leaves the config as it was. */
    for (size_t pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < c->n_agents + c->n_humans; k++) {
            int is_agent = k < c->n_agents;
            const char *id = is_agent ? c->agents[k].id : c->humans[k - c->n_agents].id;
            int local = !list;
            json_array_foreach(list, i, v)
                local |= !strcmp(id, json_string_value(v));
            if (pass == 1) {
                if (is_agent)
                    c->agents[k].local = local;
                else
                    c->humans[k - c->n_agents].local = local;
                continue;
            }
            if (!local)
                continue;
            if (is_agent && !c->agents[k].token)
                return fail(err, n,
                            "agents[%s].tokenEnv: environment variable %s (the agent's "
                            "bot token) is not set",
                            id, c->agents[k].token_env);
            const ocgw_human *h = is_agent ? NULL : &c->humans[k - c->n_agents];
            if (h && h->n_steps && !h->token)
                return fail(err, n,
                            "humans[%s].tokenEnv: a human with a script needs a token: "
                            "set tokenEnv to an environment variable that holds it",
                            id);
        }
    }
    c->split = list && agents < c->n_agents;
    return OC_OK;
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void ocgw_config_free(ocgw_config *c)
{
    if (!c)
        return;
    json_decref(c->root);
    free(c->config_dir);
    free(c->config_path);
    free(c->api_base);
    free(c->name);
    free(c->guild_id);
    free(c->moderator_user_id);
    free(c->state_dir);
    free(c->noreply_provider);
    free(c->noreply_model);
    for (size_t i = 0; i < c->n_agents; i++) {
        ocgw_agent *a = &c->agents[i];
        free(a->id);
        free(a->workspace);
        free(a->user_id);
        if (a->token) {
            memset(a->token, 0, strlen(a->token));
            free(a->token);
        }
        free(a->token_env);
        free(a->provider);
        free(a->model);
        free(a->scenario_path);
        free(a->system_prompt);
        ocgw_scenario_free(&a->scen);
        dg_discord_free(a->dc);
        ocgw_slack_free(a->sc);
    }
    free(c->agents);
    for (size_t i = 0; i < c->n_humans; i++) {
        ocgw_human *h = &c->humans[i];
        free(h->id);
        free(h->user_id);
        if (h->token) {
            memset(h->token, 0, strlen(h->token));
            free(h->token);
        }
        free(h->token_env);
        for (size_t k = 0; k < h->n_steps; k++) {
            ocgw_match_free(&h->steps[k].after);
            free(h->steps[k].channel);
            free(h->steps[k].content);
        }
        free(h->steps);
        dg_discord_free(h->dc);
        ocgw_slack_free(h->sc);
    }
    free(c->humans);
    for (size_t i = 0; i < c->n_channels; i++) {
        free(c->channels[i].alias);
        free(c->channels[i].id);
        free(c->channels[i].parent_id);
        free_strv(c->channels[i].agents, c->channels[i].n_agents);
    }
    free(c->channels);
    memset(c, 0, sizeof *c);
}
