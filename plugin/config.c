/*
 * config.c -- parse and validate plugins.entries.dirigent.config.
 *
 * The keys are one table (KEYS, below), read in its order; manifest.json's
 * configSchema and docs/configuration.md are checked against it by the
 * config suite. Every refusal names the key and the rule, because a typo in a
 * gateway config must not pass silently.
 */
#include "errors.h"
#include "config_int.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "openclaw/plugin.h"
#include "status.h"
#include "agent_id.h"
#include "json_keys.h"
#include "secret_shape.h"
#include "snowflake.h"
#include "str_map.h"
#include "paths.h"
#include "state_dir.h"
#include "store.h"

#define DEFAULT_API_BASE "https://discord.com/api/v10"

const char *dg_session_policy_name(dg_session_policy p)
{
    return p == DG_POLICY_THREAD ? "thread" : "channel";
}

static int parse_policy(const char *s, dg_session_policy *out)
{
    if (strcmp(s, "channel") == 0) {
        *out = DG_POLICY_CHANNEL;
        return 1;
    }
    if (strcmp(s, "thread") == 0) {
        *out = DG_POLICY_THREAD;
        return 1;
    }
    return 0;
}

/* A key set: the keys an object may carry. */
static int check_keys(const json_t *obj, const char *where, const char *const *allowed, char *err,
                      size_t err_len)
{
    const char *key = dg_json_unknown_key(obj, allowed);
    if (key)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: unknown key \"%s%s\"; check the spelling against the "
                       "configuration reference (README) or remove it",
                       where, key);
    return DG_OK;
}

/* A string key's value, checked: *out stays NULL when absent (or null).
 * Empty strings are refused. Borrowed from v. */
static int string_value(const json_t *v, const char *path, int required, const char **out,
                        char *err, size_t err_len)
{
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (required)
            return dg_fail(err, err_len, DG_ERR_INVALID,
                           "config: \"%s\" is required (a non-empty string)", path);
        return DG_OK;
    }
    if (!json_is_string(v))
        return dg_fail(err, err_len, DG_ERR_INVALID, "config: \"%s\" must be a string", path);
    if (json_string_length(v) == 0)
        return dg_fail(err, err_len, DG_ERR_INVALID, "config: \"%s\" must not be empty", path);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"%s\" must not contain NUL characters", path);
    *out = json_string_value(v);
    return DG_OK;
}

/* Optional string: *out stays NULL when absent; a copy the caller frees. */
static int get_string(const json_t *obj, const char *key, const char *path, int required,
                      char **out, char *err, size_t err_len)
{
    const char *s;
    int rc = string_value(json_object_get(obj, key), path, required, &s, err, err_len);
    if (rc || !s)
        return rc;
    *out = strdup(s);
    return *out ? DG_OK : DG_ERR_NOMEM;
}

static int get_int(const json_t *v, const char *path, long def, long min, long max, long *out,
                   char *err, size_t err_len)
{
    if (!v) {
        *out = def;
        return DG_OK;
    }
    if (!json_is_integer(v))
        return dg_fail(err, err_len, DG_ERR_INVALID, "config: \"%s\" must be an integer (got %s)",
                       path,
                       json_is_string(v)    ? "a string"
                       : json_is_real(v)    ? "a fractional number"
                       : json_is_boolean(v) ? "a boolean"
                                            : "another type");
    json_int_t n = json_integer_value(v);
    if (n < min || n > max)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"%s\" must be between %ld and %ld (got %lld)", path, min, max,
                       (long long)n);
    *out = (long)n;
    return DG_OK;
}

static int check_object(const json_t *v, const char *path, char *err, size_t err_len)
{
    if (v && !json_is_object(v))
        return dg_fail(err, err_len, DG_ERR_INVALID, "config: \"%s\" must be an object", path);
    return DG_OK;
}

static char **str_field(dg_config *c, const dg_config_key *k)
{
    return (char **)(void *)((char *)c + k->field);
}

static long *long_field(dg_config *c, const dg_config_key *k)
{
    return (long *)(void *)((char *)c + k->field);
}

/* The key names directly below `prefix` ("" for the top level,
 * "discord." for a section), NULL-terminated, into names[cap]. */
static void keys_below(const char *prefix, const char **names, size_t cap)
{
    size_t n_keys, n = 0, plen = strlen(prefix);
    const dg_config_key *keys = dg_config_keys(&n_keys);
    for (size_t i = 0; i < n_keys && n + 1 < cap; i++) {
        const char *p = keys[i].path;
        if (strncmp(p, prefix, plen) == 0 && !strchr(p + plen, '.'))
            names[n++] = p + plen;
    }
    names[n] = NULL;
}

static int cmp_agent(const void *a, const void *b)
{
    return strcmp(((const dg_agent_cfg *)a)->agent_id, ((const dg_agent_cfg *)b)->agent_id);
}

/* An id key that holds "${NAME}": OpenClaw leaves an unset variable's text
 * as it was, and the manifest's schema lets that through so that this
 * sentence, with its fix, is what the user reads. DG_ERR_INVALID with it
 * in err, or DG_OK when s (may be NULL) is no such text. */
static int unset_variable(const char *path, const char *s, char *err, size_t err_len)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 4 || strncmp(s, "${", 2) != 0 || s[n - 1] != '}')
        return DG_OK;
    for (size_t i = 2; i + 1 < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_')
            return DG_OK;
    int name = (int)(n - 3);
    return dg_fail(err, err_len, DG_ERR_INVALID,
                   "config: \"%s\" is \"%.64s\": the environment variable %.*s is not set where "
                   "the gateway runs, so OpenClaw left the text as it was; fix: export %.*s=<the "
                   "id> in the gateway's environment (its service unit or shell), or write the "
                   "id itself",
                   path, s, name, s + 2, name, s + 2);
}

/* A Slack user id, upper-cased in place (OpenClaw lower-cases ids in its
 * session keys; Slack's own are upper case). 1 when it has Slack's shape. */
static int slack_user_upper(char *id)
{
    for (char *q = id; *q; q++)
        if (*q >= 'a' && *q <= 'z')
            *q = (char)(*q - 'a' + 'A');
    return dg_platform_user_id_valid(DG_PLATFORM_SLACK, id);
}

/* One agent's entry of `agents`: its id and the keys "agents.*." allows. */
static int parse_agent(const char *id, const json_t *val, dg_config *c, char *err, size_t err_len)
{
    char path[160];
    if (!dg_agent_id_valid(id))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: agent id \"%.64s\" in \"agents\" must be " DG_AGENT_ID_RULE
                       "; write it as OpenClaw names the agent",
                       id);
    snprintf(path, sizeof path, "agents.%s", id);
    if (!json_is_object(val))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"%s\" must be an object like {\"discordUserId\": \"<snowflake>\"} "
                       "or {\"slackUserId\": \"U...\"}",
                       path);
    const char *keys[8];
    keys_below("agents.*.", keys, sizeof keys / sizeof keys[0]);
    char where[180];
    snprintf(where, sizeof where, "%s.", path);
    int rc = check_keys(val, where, keys, err, err_len);
    if (rc)
        return rc;
    dg_agent_cfg *a = &c->agents[c->n_agents];
    if (!(a->agent_id = strdup(id)))
        return DG_ERR_NOMEM;
    c->n_agents++;
    snprintf(path, sizeof path, "agents.%s.discordUserId", id);
    if ((rc = get_string(val, "discordUserId", path, 0, &a->discord_user_id, err, err_len)) ||
        (rc = unset_variable(path, a->discord_user_id, err, err_len)))
        return rc;
    if (a->discord_user_id && !dg_snowflake_valid(a->discord_user_id))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"%s\" must be a Discord snowflake (1-20 digits), got \"%.40s\"",
                       path, a->discord_user_id);
    snprintf(path, sizeof path, "agents.%s.slackUserId", id);
    if ((rc = get_string(val, "slackUserId", path, 0, &a->slack_user_id, err, err_len)) ||
        (rc = unset_variable(path, a->slack_user_id, err, err_len)))
        return rc;
    if (a->slack_user_id && !slack_user_upper(a->slack_user_id))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"%s\" must be a Slack user id ('U' or 'W' and 2-20 letters or "
                       "digits, e.g. U0123ABCD: the agent app's bot user), got \"%.40s\"",
                       path, a->slack_user_id);
    snprintf(path, sizeof path, "agents.%s.role", id);
    if ((rc = dg_config_agent_role(val, path, &a->role, err, err_len)))
        return rc;
    if (!a->discord_user_id && !a->slack_user_id)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"agents.%s\" needs \"discordUserId\" (its Discord bot user), "
                       "\"slackUserId\" (its Slack app's bot user) or both",
                       id);
    a->discord_user_hash = a->discord_user_id ? dg_map_hash(a->discord_user_id) : 0;
    a->slack_user_hash = a->slack_user_id ? dg_map_hash(a->slack_user_id) : 0;
    return DG_OK;
}

/* Two ids the same (both set); a NULL never matches. */
static int same_id(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* No agent uses a moderator's user or another agent's, on either platform. */
static int check_agent_users(const dg_config *c, char *err, size_t err_len)
{
    for (size_t i = 0; i < c->n_agents; i++) {
        const dg_agent_cfg *a = &c->agents[i];
        if (same_id(a->discord_user_id, c->moderator_user_id) ||
            same_id(a->slack_user_id, c->slack_moderator_user_id))
            return dg_fail(err, err_len, DG_ERR_INVALID,
                           "config: \"agents.%s.%s\" is the moderator's user id; the "
                           "moderator never takes turns, give the agent its own bot user",
                           a->agent_id,
                           same_id(a->discord_user_id, c->moderator_user_id) ? "discordUserId"
                                                                             : "slackUserId");
        for (size_t j = i + 1; j < c->n_agents; j++) {
            const dg_agent_cfg *b = &c->agents[j];
            int discord = same_id(a->discord_user_id, b->discord_user_id);
            if (discord || same_id(a->slack_user_id, b->slack_user_id))
                return dg_fail(err, err_len, DG_ERR_INVALID,
                               "config: agents \"%s\" and \"%s\" share %s %s; each agent "
                               "needs its own %s user",
                               a->agent_id, b->agent_id, discord ? "discordUserId" : "slackUserId",
                               discord ? a->discord_user_id : a->slack_user_id,
                               discord ? "Discord" : "Slack");
        }
    }
    return DG_OK;
}

static int rule_agents(const dg_config_key *k, const json_t *agents, dg_config *c, char *err,
                       size_t err_len)
{
    (void)k;
    size_t n = json_object_size(agents);
    if (n == 0)
        return DG_OK;
    c->agents = calloc(n, sizeof *c->agents);
    if (!c->agents)
        return DG_ERR_NOMEM;
    const char *id;
    json_t *val;
    json_object_foreach((json_t *)agents, id, val) {
        int rc = parse_agent(id, val, c, err, err_len);
        if (rc)
            return rc;
    }
    qsort(c->agents, c->n_agents, sizeof *c->agents, cmp_agent);
    return check_agent_users(c, err, err_len);
}

static int rule_admins(const dg_config_key *k, const json_t *admins, dg_config *c, char *err,
                       size_t err_len)
{
    (void)k;
    if (!admins)
        return DG_OK;
    if (!json_is_array(admins))
        return dg_fail(
            err, err_len, DG_ERR_INVALID,
            "config: \"admins\" must be an array of user ids (Discord snowflakes or Slack "
            "U... ids, as strings)");
    size_t n = json_array_size(admins);
    if (n == 0)
        return DG_OK;
    c->admins = calloc(n, sizeof *c->admins);
    if (!c->admins)
        return DG_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(admins, i);
        char at[32];
        snprintf(at, sizeof at, "admins[%zu]", i);
        if (unset_variable(at, json_string_value(v), err, err_len))
            return DG_ERR_INVALID;
        if (!json_is_string(v) || !dg_platform_of_user(json_string_value(v)))
            return dg_fail(err, err_len, DG_ERR_INVALID,
                           "config: \"admins[%zu]\" must be a Discord user id (a snowflake "
                           "string of 1-20 digits) or a Slack one (U or W and 2-20 upper-case "
                           "letters or digits)",
                           i);
        c->admins[i] = strdup(json_string_value(v));
        if (!c->admins[i])
            return DG_ERR_NOMEM;
        c->n_admins++;
    }
    return DG_OK;
}

/* Replace *path (owned) by its absolute form taken from `base`. */
static int make_absolute(const char *base, char **path)
{
    if (!*path)
        return DG_OK;
    char *abs = dg_state_dir_join(base, *path);
    if (!abs)
        return DG_ERR_NOMEM;
    free(*path);
    *path = abs;
    return DG_OK;
}

/* dbPath and templatesDir as absolute paths: a relative one is taken from
 * the base of state_dir.h; no dbPath is dirigent.db in DIRIGENT_STATE_DIR,
 * else in the working directory (the contract's default). */
static int rule_resolve_paths(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                              size_t err_len)
{
    (void)k;
    (void)v;
    int rc = dg_state_dir_base(&c->path_base, &c->path_base_from, err, err_len);
    if (rc)
        return rc;
    /* templatesDir is taken from the base whether or not dbPath is given:
     * a relative one must not depend on the working directory. */
    if ((rc = make_absolute(c->path_base, &c->templates_dir)))
        return rc;
    if (!c->db_path) {
        const char *dir = getenv("DIRIGENT_STATE_DIR");
        char cwd[4096];
        if (!getcwd(cwd, sizeof cwd))
            return dg_fail(err, err_len, DG_ERR_IO,
                           "config: cannot read the working directory (%s); set \"dbPath\" to an "
                           "absolute path",
                           strerror(errno));
        char *folder = dg_state_dir_join(cwd, dir && *dir ? dir : ".");
        c->db_path = folder ? dg_state_dir_join(folder, "dirigent.db") : NULL;
        free(folder);
        return c->db_path ? DG_OK : DG_ERR_NOMEM;
    }
    return make_absolute(c->path_base, &c->db_path);
}

/* Free a string that may hold a secret without leaving it in the heap. */
static void free_secret(char *s)
{
    if (!s)
        return;
    for (volatile char *t = s; *t; t++)
        *t = '\0';
    free(s);
}

/* Optional here: a host with claim hooks never calls the no-reply model. A
 * host without them needs both (checked when the hooks are registered,
 * dg_config_require_no_reply); one without the other is a mistake on any
 * host. */
static int rule_no_reply_pair(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                              size_t err_len)
{
    (void)k;
    (void)v;
    if (!c->no_reply_provider != !c->no_reply_model)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"%s\" is set but \"%s\" is missing; give both (the no-reply "
                       "provider and its model) or neither (a host with claim hooks needs none)",
                       c->no_reply_provider ? "noReplyProvider" : "noReplyModel",
                       c->no_reply_provider ? "noReplyModel" : "noReplyProvider");
    return DG_OK;
}

/* sessionPolicy, then env DIRIGENT_SESSION_POLICY, which wins. */
static int rule_policy(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                       size_t err_len)
{
    (void)k;
    const char *policy = json_string_value(v);
    c->session_policy = DG_POLICY_CHANNEL;
    if (policy && !parse_policy(policy, &c->session_policy))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"sessionPolicy\" must be \"channel\" or \"thread\"");
    const char *env_policy = getenv("DIRIGENT_SESSION_POLICY");
    if (env_policy && *env_policy && !parse_policy(env_policy, &c->session_policy))
        return dg_fail(
            err, err_len, DG_ERR_INVALID,
            "config: environment variable DIRIGENT_SESSION_POLICY must be \"channel\" or "
            "\"thread\" (it overrides \"sessionPolicy\"); unset it or fix its value");
    return DG_OK;
}

/* Before it is made absolute: "<config folder>/:memory:" would be a file of
 * that odd name, and the store could no longer tell. */
static int rule_db_path(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                        size_t err_len)
{
    (void)k;
    (void)v;
    return c->db_path ? dg_store_db_path_check(c->db_path, err, err_len) : DG_OK;
}

/*
 * store.url, or env DIRIGENT_STORE_URL, which wins (like the moderator
 * token: a secret set by the deployment overrides the file). The value is
 * never echoed: it may hold a password. Without either, the store is the
 * SQLite file dbPath.
 */
static int rule_store_url(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                          size_t err_len)
{
    (void)k;
    (void)v;
    const char *env = getenv("DIRIGENT_STORE_URL");
    const char *from = "\"store.url\"";
    if (env && *env) {
        free_secret(c->store_url);
        if (!(c->store_url = strdup(env)))
            return DG_ERR_NOMEM;
        from = "environment variable DIRIGENT_STORE_URL";
    } else if (c->store_url && c->db_path) {
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: both \"dbPath\" (a SQLite file) and \"store.url\" (a PostgreSQL "
                       "database) are set; keep the one store this gateway should use");
    }
    if (c->store_url && strncmp(c->store_url, "postgresql://", 13) != 0 &&
        strncmp(c->store_url, "postgres://", 11) != 0)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: %s must be a PostgreSQL url starting with postgresql:// (e.g. "
                       "postgresql://user:password@host:5432/dbname; the value is not shown, "
                       "it may hold a password); leave it out to use the SQLite file dbPath",
                       from);
    return DG_OK;
}

static int rule_discord_present(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                                size_t err_len)
{
    (void)k;
    c->has_discord = v != NULL;
    if (v && !json_object_get(v, "moderatorUserId"))
        return dg_fail(
            err, err_len, DG_ERR_INVALID,
            "config: \"discord.moderatorUserId\" is required (the moderator bot's user id, "
            "a snowflake string)");
    return DG_OK;
}

/* The Slack moderator: its user id in the section, its bot token in the
 * environment only (DIRIGENT_SLACK_MODERATOR_TOKEN), checked for Slack's
 * bot-token prefix without ever being shown. */
static int rule_slack_present(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                              size_t err_len)
{
    (void)k;
    c->has_slack = v != NULL;
    if (!v)
        return DG_OK;
    if (!json_object_get(v, "moderatorUserId"))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"slack.moderatorUserId\" is required (the moderator app's bot "
                       "user id, U..., from auth.test or the app's profile)");
    const char *tok = getenv("DIRIGENT_SLACK_MODERATOR_TOKEN");
    if (!tok || !*tok)
        return DG_OK; /* the Slack moderator stays silent; core.c says so */
    if (strncmp(tok, "xoxb-", 5) != 0 || strlen(tok) < 16)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: DIRIGENT_SLACK_MODERATOR_TOKEN must be the moderator app's bot "
                       "token (xoxb- and at least 11 more characters; the value is not shown); a "
                       "user (xoxp-) or app-level (xapp-) token cannot post as the moderator");
    if (!(c->slack_moderator_token = strdup(tok)))
        return DG_ERR_NOMEM;
    return DG_OK;
}

/* slack.apiBase: the file, else $SLACK_API_URL (what OpenClaw's Slack
 * plugin reads, so one variable points both at a proxy or a fake), else
 * Slack's own. */
static int rule_slack_api_base(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                               size_t err_len)
{
    (void)k;
    if (!v) {
        const char *env = getenv("SLACK_API_URL");
        if (!(c->slack_api_base = strdup(env && *env ? env : "https://slack.com/api")))
            return DG_ERR_NOMEM;
    }
    if (strncmp(c->slack_api_base, "http://", 7) != 0 &&
        strncmp(c->slack_api_base, "https://", 8) != 0)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"slack.apiBase\" (or SLACK_API_URL) must start with http:// or "
                       "https://, e.g. https://slack.com/api");
    size_t blen = strlen(c->slack_api_base);
    while (blen > 0 && c->slack_api_base[blen - 1] == '/')
        c->slack_api_base[--blen] = '\0';
    return DG_OK;
}

static int rule_slack_user(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                           size_t err_len)
{
    (void)v;
    char *s = *str_field(c, k);
    if (unset_variable(k->path, s, err, err_len))
        return DG_ERR_INVALID;
    if (s && !slack_user_upper(s))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"%s\" must be a Slack user id ('U' or 'W' and 2-20 letters or "
                       "digits, e.g. U0123ABCD)",
                       k->path);
    return DG_OK;
}

static int rule_api_base(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                         size_t err_len)
{
    (void)k;
    (void)v;
    if (strncmp(c->discord_api_base, "http://", 7) != 0 &&
        strncmp(c->discord_api_base, "https://", 8) != 0)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"discord.apiBase\" must start with http:// or https://");
    size_t blen = strlen(c->discord_api_base);
    while (blen > 0 && c->discord_api_base[blen - 1] == '/')
        c->discord_api_base[--blen] = '\0';
    return DG_OK;
}

/* A string key holding a Discord id, when set. */
static int rule_snowflake(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                          size_t err_len)
{
    (void)v;
    const char *s = *str_field(c, k);
    if (unset_variable(k->path, s, err, err_len))
        return DG_ERR_INVALID;
    if (s && !dg_snowflake_valid(s))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"%s\" must be a Discord snowflake (1-20 digits)", k->path);
    return DG_OK;
}

/* The token's value is never echoed in an error, not even partly; env
 * DIRIGENT_MODERATOR_TOKEN wins over the file. */
static int rule_moderator_token(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                                size_t err_len)
{
    (void)k;
    (void)v;
    (void)err;
    (void)err_len;
    const char *env_token = getenv("DIRIGENT_MODERATOR_TOKEN");
    if (env_token && *env_token) {
        free_secret(c->moderator_token);
        if (!(c->moderator_token = strdup(env_token)))
            return DG_ERR_NOMEM;
    }
    return DG_OK;
}

const char *dg_config_token_home(dg_platform platform)
{
    switch (platform) {
    case DG_PLATFORM_DISCORD: return "discord.moderatorToken (or env DIRIGENT_MODERATOR_TOKEN)";
    case DG_PLATFORM_SLACK: return "env DIRIGENT_SLACK_MODERATOR_TOKEN";
    }
    return "the moderator's token";
}

/* summaryDir names a folder inside every initiator's workspace, so it must
 * stay relative and below it. */
static int rule_summary_dir(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                            size_t err_len)
{
    (void)k;
    (void)v;
    char *dir = c->summary_dir;
    int escapes = 0, absolute = dir[0] == '/';
    char *norm = absolute ? NULL : dg_path_normalise(dir, &escapes);
    free(dir);
    c->summary_dir = NULL;
    if (!norm || !*norm) {
        int refused = norm != NULL || escapes || absolute;
        free(norm);
        if (!refused)
            return DG_ERR_NOMEM;
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"discussion.summaryDir\" must be a relative folder inside the "
                       "initiator's workspace (no leading '/', no '..' above it, not '.'), "
                       "e.g. \"plans/discussions\"");
    }
    c->summary_dir = norm;
    return DG_OK;
}

/* The template is operator config, taken from the base like templatesDir. */
static int rule_summary_template(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                                 size_t err_len)
{
    (void)k;
    (void)v;
    (void)err;
    (void)err_len;
    return make_absolute(c->path_base, &c->summary_template);
}

static int rule_archive_channel(const dg_config_key *k, const json_t *v, dg_config *c, char *err,
                                size_t err_len)
{
    (void)v;
    if (unset_variable(k->path, c->archive_channel_id, err, err_len))
        return DG_ERR_INVALID;
    if (c->archive_channel_id && !dg_platform_of_channel(c->archive_channel_id))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"discussion.archiveChannelId\" must be a channel id the "
                       "moderator may post in: Discord's (a snowflake string of 1-20 digits) or "
                       "Slack's (C... or G...)");
    return DG_OK;
}

#define F(member) offsetof(dg_config, member)
#define STR(path, req, def, field, rule)                                                           \
    {                                                                                              \
        path, DG_CFG_STRING, req, 0, 0, 0, def, field, rule                                        \
    }
#define INT(path, min, max, def, field)                                                            \
    {                                                                                              \
        path, DG_CFG_INT, 0, min, max, def, NULL, F(field), NULL                                   \
    }
#define SECTION(path, type, req, rule)                                                             \
    {                                                                                              \
        path, type, req, 0, 0, 0, NULL, DG_CFG_NO_FIELD, rule                                      \
    }

/*
 * The keys, in the order they are read: later rules rely on earlier keys
 * (templatesDir's rule resolves dbPath; store.url's refuses it beside
 * dbPath; summaryTemplate is taken from the base templatesDir found).
 * outbox.retentionSec is at least a day: never below the closed-notice
 * cooldown or Discord's nonce window, so pruning cannot change what a row
 * still decides.
 */
static const dg_config_key KEYS[] = {
    STR("noReplyProvider", 0, NULL, F(no_reply_provider), NULL),
    STR("noReplyModel", 0, NULL, F(no_reply_model), rule_no_reply_pair),
    STR("sessionPolicy", 0, "channel", DG_CFG_NO_FIELD, rule_policy),
    STR("dbPath", 0, NULL, F(db_path), rule_db_path),
    SECTION("store", DG_CFG_OBJECT, 0, NULL),
    STR("store.url", 0, NULL, F(store_url), rule_store_url),
    STR("templatesDir", 0, NULL, F(templates_dir), rule_resolve_paths),
    SECTION("discord", DG_CFG_OBJECT, 0, rule_discord_present),
    STR("discord.apiBase", 0, DEFAULT_API_BASE, F(discord_api_base), rule_api_base),
    STR("discord.guildId", 0, NULL, F(discord_guild_id), rule_snowflake),
    STR("discord.moderatorToken", 0, NULL, F(moderator_token), rule_moderator_token),
    STR("discord.moderatorUserId", 1, NULL, F(moderator_user_id), rule_snowflake),
    INT("discord.timeoutMs", 100, 600000, 15000, discord_timeout_ms),
    SECTION("slack", DG_CFG_OBJECT, 0, rule_slack_present),
    STR("slack.apiBase", 0, NULL, F(slack_api_base), rule_slack_api_base),
    STR("slack.moderatorUserId", 1, NULL, F(slack_moderator_user_id), rule_slack_user),
    INT("slack.timeoutMs", 100, 600000, 15000, slack_timeout_ms),
    SECTION("agents", DG_CFG_MAP, 0, rule_agents),
    STR("agents.*.discordUserId", 0, NULL, DG_CFG_NO_FIELD, NULL),
    STR("agents.*.slackUserId", 0, NULL, DG_CFG_NO_FIELD, NULL),
    STR("agents.*.role", 0, NULL, DG_CFG_NO_FIELD, NULL),
    SECTION("admins", DG_CFG_ARRAY, 0, rule_admins),
    SECTION("turn", DG_CFG_OBJECT, 0, NULL),
    INT("turn.timeoutSec", 1, 86400, 60, turn_timeout_sec),
    INT("turn.maxAgentMessages", 1, 100000, 40, turn_max_agent_messages),
    INT("turn.nudgeSec", 0, 86400, 20, turn_nudge_sec),
    SECTION("discussion", DG_CFG_OBJECT, 0, NULL),
    INT("discussion.maxGuideChars", 1, 100000, 1500, max_guide_chars),
    INT("discussion.maxSummaryBytes", 1, 1073741824L, 1048576, max_summary_bytes),
    INT("discussion.closedNoticeCooldownSec", 0, 86400, 60, closed_notice_cooldown_sec),
    INT("discussion.reminderAfterSec", 0, 31536000L, 1800, reminder_after_sec),
    INT("discussion.maxLifetimeSec", 0, 31536000L, 0, max_lifetime_sec),
    STR("discussion.summaryDir", 0, "plans/discussions", F(summary_dir), rule_summary_dir),
    STR("discussion.summaryTemplate", 0, NULL, F(summary_template), rule_summary_template),
    INT("discussion.previewChars", 0, 4000, 400, preview_chars),
    STR("discussion.archiveChannelId", 0, NULL, F(archive_channel_id), rule_archive_channel),
    SECTION("outbox", DG_CFG_OBJECT, 0, NULL),
    INT("outbox.retentionSec", 86400, 315360000L, 604800, outbox_retention_sec),
    SECTION("budget", DG_CFG_OBJECT, 0, NULL),
    INT("budget.turnsPerHumanMessage", 0, 1000000000L, 0,
        budget.limit[DG_BUDGET_TURNS_PER_MESSAGE]),
    INT("budget.tokensPerHumanMessage", 0, 1000000000L, 0,
        budget.limit[DG_BUDGET_TOKENS_PER_MESSAGE]),
    INT("budget.turnsPerHour", 0, 1000000000L, 0, budget.limit[DG_BUDGET_TURNS_PER_HOUR]),
    INT("budget.tokensPerHour", 0, 1000000000L, 0, budget.limit[DG_BUDGET_TOKENS_PER_HOUR]),
    INT("budget.turnsPerDay", 0, 1000000000L, 0, budget.limit[DG_BUDGET_TURNS_PER_DAY]),
    INT("budget.tokensPerDay", 0, 1000000000L, 0, budget.limit[DG_BUDGET_TOKENS_PER_DAY]),
    INT("budget.discussionTurns", 0, 1000000000L, 0, budget.limit[DG_BUDGET_DISCUSSION_TURNS]),
    INT("budget.discussionTokens", 0, 1000000000L, 0, budget.limit[DG_BUDGET_DISCUSSION_TOKENS]),
    SECTION("channelBudgets", DG_CFG_MAP, 0, dg_config_rule_channel_budgets),
    SECTION("prices", DG_CFG_MAP, 0, dg_config_rule_prices),
    SECTION("judge", DG_CFG_OBJECT, 0, NULL),
    STR("judge.baseUrl", 0, NULL, F(judge_base_url), NULL),
    STR("judge.model", 0, NULL, F(judge_model), NULL),
    STR("judge.apiKeyEnv", 0, NULL, F(judge_api_key_env), dg_config_rule_judge_key_env),
    INT("judge.timeoutMs", 100, 60000, 3000, judge_timeout_ms),
    {"judge.minConfidence", DG_CFG_NUMBER, 0, 0, 1, 0, NULL, DG_CFG_NO_FIELD,
     dg_config_rule_judge_confidence},
    STR("judge.source", 0, "none", DG_CFG_NO_FIELD, dg_config_rule_judge_source),
};

#undef F
#undef STR
#undef INT
#undef SECTION

const dg_config_key *dg_config_keys(size_t *n)
{
    *n = sizeof KEYS / sizeof KEYS[0];
    return KEYS;
}

/* The JSON object holding k: the config itself for a top-level key, else
 * its section (checked to be an object when the section's entry was read),
 * NULL when the section is absent. The key's own name into *name. */
static const json_t *key_parent(const json_t *json, const dg_config_key *k, const char **name)
{
    const char *dot = strchr(k->path, '.');
    if (!dot) {
        *name = k->path;
        return json;
    }
    char section[64];
    size_t len = (size_t)(dot - k->path);
    assert(len < sizeof section && !strchr(dot + 1, '.'));
    memcpy(section, k->path, len);
    section[len] = '\0';
    *name = dot + 1;
    return json_object_get(json, section);
}

/* Read one key by its type into its field, then apply its rule. */
static int read_key(const json_t *json, const dg_config_key *k, dg_config *c, char *err,
                    size_t err_len)
{
    const char *name;
    const json_t *parent = key_parent(json, k, &name);
    const json_t *v = json_object_get(parent, name);
    const char *s;
    int rc = DG_OK;
    /* A key is required where its section is: an absent optional section
     * (one platform's) needs none of its keys. */
    int required = k->required && parent != NULL;
    switch (k->type) {
    case DG_CFG_STRING:
        rc = string_value(v, k->path, required, &s, err, err_len);
        if (rc == DG_OK && k->field != DG_CFG_NO_FIELD && (s || k->def_str)) {
            char **field = str_field(c, k);
            if (!(*field = strdup(s ? s : k->def_str)))
                rc = DG_ERR_NOMEM;
        }
        break;
    case DG_CFG_INT:
        rc = get_int(v, k->path, k->def, k->min, k->max, long_field(c, k), err, err_len);
        break;
    case DG_CFG_OBJECT:
    case DG_CFG_MAP: rc = check_object(v, k->path, err, err_len); break;
    case DG_CFG_NUMBER:       /* its rule reads it */
    case DG_CFG_ARRAY: break; /* its rule checks the type: the message names the items' rule too */
    }
    if (rc == DG_OK && k->rule)
        rc = k->rule(k, v, c, err, err_len);
    if (rc == DG_OK && k->type == DG_CFG_OBJECT && v) {
        const char *keys[16];
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s.", k->path);
        keys_below(prefix, keys, sizeof keys / sizeof keys[0]);
        rc = check_keys(v, prefix, keys, err, err_len);
    }
    return rc;
}

/* Before anything can echo a value or a key: a token anywhere but in
 * discord.moderatorToken is refused without showing it. */
static int refuse_stray_token(const json_t *json, char *err, size_t err_len)
{
    static const char *const token_home[] = {"discord.moderatorToken", NULL};
    char where[256];
    int is_key;
    if (!dg_json_find_token(json, token_home, where, sizeof where, &is_key))
        return DG_OK;
    char what[300];
    if (is_key && !*where)
        snprintf(what, sizeof what, "a top-level key");
    else
        snprintf(what, sizeof what, "%s\"%s\"", is_key ? "a key of " : "", where);
    return dg_fail(err, err_len, DG_ERR_INVALID,
                   "config: %s: this looks like a bot token; tokens belong in the environment "
                   "(DIRIGENT_MODERATOR_TOKEN for the Discord moderator, "
                   "DIRIGENT_SLACK_MODERATOR_TOKEN for the Slack one), never in another key: move "
                   "it there and fix the config",
                   what);
}

static int parse_all(const json_t *json, dg_config *c, char *err, size_t err_len)
{
    if (!json_is_object(json))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: the plugin config must be a JSON object "
                       "(plugins.entries.dirigent.config)");
    int rc = refuse_stray_token(json, err, err_len);
    if (rc)
        return rc;
    const char *top[24];
    keys_below("", top, sizeof top / sizeof top[0]);
    if ((rc = check_keys(json, "", top, err, err_len)))
        return rc;
    for (size_t i = 0; i < sizeof KEYS / sizeof KEYS[0]; i++) {
        if (strchr(KEYS[i].path, '*'))
            continue; /* read by its map's rule, once per entry */
        if ((rc = read_key(json, &KEYS[i], c, err, err_len)))
            return rc;
    }
    if (!c->has_discord && !c->has_slack)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"discord\" or \"slack\" is required: the section of the "
                       "platform whose channels Dirigent manages, with the moderator's user id "
                       "(e.g. {\"discord\": {\"moderatorUserId\": \"<snowflake>\"}})");
    return DG_OK;
}

int dg_config_parse(const json_t *json, dg_config *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (err && err_len)
        err[0] = '\0';
    int rc = parse_all(json, out, err, err_len);
    if (rc != DG_OK) {
        if (rc == DG_ERR_NOMEM && err && err_len && !err[0])
            snprintf(err, err_len, "config: out of memory while reading the config");
        dg_config_free(out);
    }
    return rc;
}

int dg_config_require_no_reply(const dg_config *c, int claim_hooks, char *err, size_t err_len)
{
    if (claim_hooks || c->no_reply_provider)
        return DG_OK;
    return dg_fail(err, err_len, DG_ERR_INVALID,
                   "config: \"noReplyProvider\" and \"noReplyModel\" are required on this host: "
                   "it has no claim hooks (before_agent_reply), so agents without the turn are "
                   "switched to a no-reply model; set both (README: the no-reply provider) or "
                   "use a host with claim hooks (OpenClaw 2026.9 or later)");
}

void dg_config_free(dg_config *c)
{
    if (!c)
        return;
    free(c->no_reply_provider);
    free(c->no_reply_model);
    free(c->db_path);
    free_secret(c->store_url);
    free(c->templates_dir);
    free(c->summary_dir);
    free(c->summary_template);
    free(c->archive_channel_id);
    free(c->path_base);
    free(c->discord_api_base);
    free(c->discord_guild_id);
    free_secret(c->moderator_token);
    free(c->moderator_user_id);
    free(c->slack_api_base);
    free_secret(c->slack_moderator_token);
    free(c->slack_moderator_user_id);
    for (size_t i = 0; i < c->n_agents; i++) {
        free(c->agents[i].agent_id);
        free(c->agents[i].discord_user_id);
        free(c->agents[i].slack_user_id);
        free(c->agents[i].role);
    }
    free(c->agents);
    for (size_t i = 0; i < c->n_admins; i++)
        free(c->admins[i]);
    free(c->admins);
    dg_config_budget_free(c);
    free(c->judge_base_url);
    free(c->judge_model);
    free(c->judge_api_key_env);
    memset(c, 0, sizeof *c);
}

const dg_agent_cfg *dg_config_agent(const dg_config *cfg, const char *agent_id)
{
    if (!agent_id || cfg->n_agents == 0)
        return NULL;
    dg_agent_cfg key = {.agent_id = (char *)agent_id};
    return bsearch(&key, cfg->agents, cfg->n_agents, sizeof *cfg->agents, cmp_agent);
}

const dg_agent_cfg *dg_config_agent_by_user(const dg_config *cfg, const char *user_id)
{
    if (!user_id)
        return NULL;
    /* Equal ids have equal hashes: a string compare only where they match. */
    uint64_t h = dg_map_hash(user_id);
    for (size_t i = 0; i < cfg->n_agents; i++) {
        const dg_agent_cfg *a = &cfg->agents[i];
        if ((a->discord_user_hash == h && same_id(a->discord_user_id, user_id)) ||
            (a->slack_user_hash == h && same_id(a->slack_user_id, user_id)))
            return a;
    }
    return NULL;
}

const char *dg_config_agent_user(const dg_agent_cfg *a, dg_platform platform)
{
    if (!a)
        return NULL;
    return platform == DG_PLATFORM_SLACK     ? a->slack_user_id
           : platform == DG_PLATFORM_DISCORD ? a->discord_user_id
                                             : NULL;
}

const char *dg_config_moderator_user(const dg_config *cfg, dg_platform platform)
{
    return platform == DG_PLATFORM_SLACK     ? cfg->slack_moderator_user_id
           : platform == DG_PLATFORM_DISCORD ? cfg->moderator_user_id
                                             : NULL;
}

int dg_config_is_moderator(const dg_config *cfg, const char *user_id)
{
    return same_id(user_id, cfg->moderator_user_id) ||
           same_id(user_id, cfg->slack_moderator_user_id);
}
