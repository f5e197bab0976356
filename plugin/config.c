/*
 * config.c -- parse and validate plugins.entries.dirigent.config.
 *
 * The table of keys is documented in docs/configuration.md;
 * manifest.json's configSchema mirrors it field for field (a test compares
 * them). Every refusal names the key and the rule, because a typo in a
 * gateway config must not pass silently.
 */
#include "errors.h"
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "openclaw/plugin.h"
#include "agent_id.h"
#include "json_keys.h"
#include "secret_shape.h"
#include "snowflake.h"
#include "paths.h"
#include "state_dir.h"
#include "store.h"

#define DEFAULT_API_BASE "https://discord.com/api/v10"

int dg_is_snowflake(const char *s)
{
    return dg_snowflake_valid(s);
}

const char *dg_session_policy_name(dg_session_policy p)
{
    return p == DG_POLICY_THREAD ? "thread" : "channel";
}

static int parse_policy(const char *s, dg_session_policy *out)
{
    if (strcmp(s, "channel") == 0) { *out = DG_POLICY_CHANNEL; return 1; }
    if (strcmp(s, "thread") == 0) { *out = DG_POLICY_THREAD; return 1; }
    return 0;
}

/* A key set: the keys an object may carry. */
static int check_keys(const json_t *obj, const char *where, const char *const *allowed,
                      char *err, size_t err_len)
{
    const char *key = dg_json_unknown_key(obj, allowed);
    if (key)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: unknown key \"%s%s\"; check the spelling against the "
                    "configuration reference (README) or remove it",
                    where, key);
    return OC_OK;
}

/* Optional string: *out stays NULL when absent. Empty strings are refused. */
static int get_string(const json_t *obj, const char *key, const char *path, int required,
                      char **out, char *err, size_t err_len)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required)
            return dg_fail(err, err_len, OC_ERR_INVALID,
                        "config: \"%s\" is required (a non-empty string)", path);
        return OC_OK;
    }
    if (!json_is_string(v))
        return dg_fail(err, err_len, OC_ERR_INVALID, "config: \"%s\" must be a string", path);
    if (json_string_length(v) == 0)
        return dg_fail(err, err_len, OC_ERR_INVALID, "config: \"%s\" must not be empty", path);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: \"%s\" must not contain NUL characters", path);
    *out = strdup(json_string_value(v));
    return *out ? OC_OK : OC_ERR_NOMEM;
}

static int get_int(const json_t *obj, const char *key, const char *path, long def,
                   long min, long max, long *out, char *err, size_t err_len)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        *out = def;
        return OC_OK;
    }
    if (!json_is_integer(v))
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: \"%s\" must be an integer (got %s)", path,
                    json_is_string(v) ? "a string" : json_is_real(v) ? "a fractional number"
                    : json_is_boolean(v) ? "a boolean" : "another type");
    json_int_t n = json_integer_value(v);
    if (n < min || n > max)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: \"%s\" must be between %ld and %ld (got %lld)", path, min, max,
                    (long long)n);
    *out = (long)n;
    return OC_OK;
}

static int get_object(const json_t *obj, const char *key, const char *path, json_t **out,
                      char *err, size_t err_len)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v)
        return OC_OK;
    if (!json_is_object(v))
        return dg_fail(err, err_len, OC_ERR_INVALID, "config: \"%s\" must be an object", path);
    *out = v;
    return OC_OK;
}

static int cmp_agent(const void *a, const void *b)
{
    return strcmp(((const dg_agent_cfg *)a)->agent_id, ((const dg_agent_cfg *)b)->agent_id);
}

static int parse_agents(const json_t *agents, dg_config *c, char *err, size_t err_len)
{
    size_t n = json_object_size(agents);
    if (n == 0)
        return OC_OK;
    c->agents = calloc(n, sizeof *c->agents);
    if (!c->agents)
        return OC_ERR_NOMEM;
    const char *id;
    json_t *val;
    char path[160];
    json_object_foreach((json_t *)agents, id, val) {
        if (!dg_agent_id_valid(id))
            return dg_fail(err, err_len, OC_ERR_INVALID,
                        "config: agent id \"%.64s\" in \"agents\" must be " DG_AGENT_ID_RULE
                        "; write it as OpenClaw names the agent", id);
        snprintf(path, sizeof path, "agents.%s", id);
        if (!json_is_object(val))
            return dg_fail(err, err_len, OC_ERR_INVALID,
                        "config: \"%s\" must be an object like {\"discordUserId\": \"<snowflake>\"}",
                        path);
        static const char *const keys[] = {"discordUserId", NULL};
        char where[180];
        snprintf(where, sizeof where, "%s.", path);
        int rc = check_keys(val, where, keys, err, err_len);
        if (rc)
            return rc;
        dg_agent_cfg *a = &c->agents[c->n_agents];
        snprintf(path, sizeof path, "agents.%s.discordUserId", id);
        rc = get_string(val, "discordUserId", path, 1, &a->discord_user_id, err, err_len);
        if (rc)
            return rc;
        a->agent_id = strdup(id);
        c->n_agents++;
        if (!a->agent_id)
            return OC_ERR_NOMEM;
        if (!dg_is_snowflake(a->discord_user_id))
            return dg_fail(err, err_len, OC_ERR_INVALID,
                        "config: \"%s\" must be a Discord snowflake (1-20 digits), got \"%.40s\"",
                        path, a->discord_user_id);
    }
    qsort(c->agents, c->n_agents, sizeof *c->agents, cmp_agent);
    for (size_t i = 0; i < c->n_agents; i++) {
        if (c->moderator_user_id && strcmp(c->agents[i].discord_user_id, c->moderator_user_id) == 0)
            return dg_fail(err, err_len, OC_ERR_INVALID,
                        "config: \"agents.%s.discordUserId\" is the moderator's user id; the "
                        "moderator never takes turns, give the agent its own bot user",
                        c->agents[i].agent_id);
        for (size_t j = i + 1; j < c->n_agents; j++)
            if (strcmp(c->agents[i].discord_user_id, c->agents[j].discord_user_id) == 0)
                return dg_fail(err, err_len, OC_ERR_INVALID,
                            "config: agents \"%s\" and \"%s\" share discordUserId %s; each agent "
                            "needs its own Discord user",
                            c->agents[i].agent_id, c->agents[j].agent_id,
                            c->agents[i].discord_user_id);
    }
    return OC_OK;
}

static int parse_admins(const json_t *admins, dg_config *c, char *err, size_t err_len)
{
    if (!admins)
        return OC_OK;
    if (!json_is_array(admins))
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: \"admins\" must be an array of Discord user ids (snowflake strings)");
    size_t n = json_array_size(admins);
    if (n == 0)
        return OC_OK;
    c->admins = calloc(n, sizeof *c->admins);
    if (!c->admins)
        return OC_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(admins, i);
        if (!json_is_string(v) || !dg_is_snowflake(json_string_value(v)))
            return dg_fail(err, err_len, OC_ERR_INVALID,
                        "config: \"admins[%zu]\" must be a Discord snowflake string (1-20 digits)", i);
        c->admins[i] = strdup(json_string_value(v));
        if (!c->admins[i])
            return OC_ERR_NOMEM;
        c->n_admins++;
    }
    return OC_OK;
}

/* dbPath and templatesDir as absolute paths: a relative one is taken from
 * the base of state_dir.h; no dbPath is dirigent.db in DIRIGENT_STATE_DIR,
 * else in the working directory (the contract's default). */
static int resolve_paths(dg_config *c, char *err, size_t err_len)
{
    int rc = dg_path_base(&c->path_base, &c->path_base_from, err, err_len);
    if (rc)
        return rc;
    /* templatesDir first: it is taken from the base whether or not dbPath
     * is given (without dbPath it stayed relative and was read from the
     * working directory; found by make fuzz). */
    if (c->templates_dir) {
        char *abs = dg_path_join_base(c->path_base, c->templates_dir);
        if (!abs)
            return OC_ERR_NOMEM;
        free(c->templates_dir);
        c->templates_dir = abs;
    }
    if (!c->db_path) {
        const char *dir = getenv("DIRIGENT_STATE_DIR");
        char cwd[4096];
        if (!getcwd(cwd, sizeof cwd))
            return dg_fail(err, err_len, OC_ERR_IO,
                        "config: cannot read the working directory (%s); set \"dbPath\" to an "
                        "absolute path", strerror(errno));
        char *folder = dg_path_join_base(cwd, dir && *dir ? dir : ".");
        c->db_path = folder ? dg_path_join_base(folder, "dirigent.db") : NULL;
        free(folder);
        return c->db_path ? OC_OK : OC_ERR_NOMEM;
    }
    char *abs = dg_path_join_base(c->path_base, c->db_path);
    if (!abs)
        return OC_ERR_NOMEM;
    free(c->db_path);
    c->db_path = abs;
    return OC_OK;
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

/*
 * store.url, or env DIRIGENT_STORE_URL, which wins (like the moderator
 * token: a secret set by the deployment overrides the file). The value is
 * never echoed: it may hold a password. Without either, the store is the
 * SQLite file dbPath.
 */
static int parse_store(const json_t *json, dg_config *c, char *err, size_t err_len)
{
    static const char *const store_keys[] = {"url", NULL};
    json_t *obj = NULL;
    int rc;
    if ((rc = get_object(json, "store", "store", &obj, err, err_len)))
        return rc;
    if (obj && (rc = check_keys(obj, "store.", store_keys, err, err_len)))
        return rc;
    if (obj && (rc = get_string(obj, "url", "store.url", 0, &c->store_url, err, err_len)))
        return rc;
    const char *env = getenv("DIRIGENT_STORE_URL");
    const char *from = "\"store.url\"";
    if (env && *env) {
        free_secret(c->store_url);
        if (!(c->store_url = strdup(env)))
            return OC_ERR_NOMEM;
        from = "environment variable DIRIGENT_STORE_URL";
    } else if (c->store_url && c->db_path) {
        return dg_fail(err, err_len, OC_ERR_INVALID,
                       "config: both \"dbPath\" (a SQLite file) and \"store.url\" (a PostgreSQL "
                       "database) are set; keep the one store this gateway should use");
    }
    if (c->store_url && strncmp(c->store_url, "postgresql://", 13) != 0 &&
        strncmp(c->store_url, "postgres://", 11) != 0)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                       "config: %s must be a PostgreSQL url starting with postgresql:// (e.g. "
                       "postgresql://user:password@host:5432/dbname; the value is not shown, "
                       "it may hold a password); leave it out to use the SQLite file dbPath",
                       from);
    return OC_OK;
}

static int parse_discord(const json_t *d, dg_config *c, char *err, size_t err_len)
{
    static const char *const keys[] = {"apiBase", "guildId", "moderatorToken",
                                       "moderatorUserId", "timeoutMs", NULL};
    int rc;
    if (!d)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: \"discord.moderatorUserId\" is required (the moderator bot's user id, "
                    "a snowflake string)");
    if ((rc = check_keys(d, "discord.", keys, err, err_len)))
        return rc;
    if ((rc = get_string(d, "apiBase", "discord.apiBase", 0, &c->discord_api_base, err, err_len)))
        return rc;
    if (!c->discord_api_base && !(c->discord_api_base = strdup(DEFAULT_API_BASE)))
        return OC_ERR_NOMEM;
    if (strncmp(c->discord_api_base, "http://", 7) != 0 &&
        strncmp(c->discord_api_base, "https://", 8) != 0)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: \"discord.apiBase\" must start with http:// or https://");
    size_t blen = strlen(c->discord_api_base);
    while (blen > 0 && c->discord_api_base[blen - 1] == '/')
        c->discord_api_base[--blen] = '\0';

    if ((rc = get_string(d, "guildId", "discord.guildId", 0, &c->discord_guild_id, err, err_len)))
        return rc;
    if (c->discord_guild_id && !dg_is_snowflake(c->discord_guild_id))
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: \"discord.guildId\" must be a Discord snowflake (1-20 digits)");
    /* Never echo the token's value in an error, not even partly. */
    if ((rc = get_string(d, "moderatorToken", "discord.moderatorToken", 0, &c->moderator_token,
                         err, err_len)))
        return rc;
    if ((rc = get_string(d, "moderatorUserId", "discord.moderatorUserId", 1, &c->moderator_user_id,
                         err, err_len)))
        return rc;
    if (!dg_is_snowflake(c->moderator_user_id))
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: \"discord.moderatorUserId\" must be a Discord snowflake (1-20 digits)");
    return get_int(d, "timeoutMs", "discord.timeoutMs", 15000, 100, 600000, &c->discord_timeout_ms,
                   err, err_len);
}

/* discussion.summaryDir / summaryTemplate / previewChars (issue 16 items 3,
 * 4, 7). summaryDir names a folder inside every initiator's workspace, so it
 * must stay relative and below it; the template is operator config, taken
 * from the base like templatesDir. */
static int parse_summary(const json_t *obj, dg_config *c, char *err, size_t err_len)
{
    char *dir = NULL;
    int rc = get_string(obj, "summaryDir", "discussion.summaryDir", 0, &dir, err, err_len);
    if (rc)
        return rc;
    int escapes = 0, absolute = dir && dir[0] == '/';
    char *norm = absolute ? NULL : dg_path_normalise(dir ? dir : "plans/discussions", &escapes);
    free(dir);
    if (!norm || !*norm) {
        int refused = norm != NULL || escapes || absolute;
        free(norm);
        if (!refused)
            return OC_ERR_NOMEM;
        return dg_fail(err, err_len, OC_ERR_INVALID,
                       "config: \"discussion.summaryDir\" must be a relative folder inside the "
                       "initiator's workspace (no leading '/', no '..' above it, not '.'), "
                       "e.g. \"plans/discussions\"");
    }
    c->summary_dir = norm;
    if ((rc = get_string(obj, "summaryTemplate", "discussion.summaryTemplate", 0,
                         &c->summary_template, err, err_len)))
        return rc;
    if (c->summary_template) {
        char *abs = dg_path_join_base(c->path_base, c->summary_template);
        if (!abs)
            return OC_ERR_NOMEM;
        free(c->summary_template);
        c->summary_template = abs;
    }
    if ((rc = get_int(obj, "previewChars", "discussion.previewChars", 400, 0, 4000,
                      &c->preview_chars, err, err_len)))
        return rc;
    if ((rc = get_string(obj, "archiveChannelId", "discussion.archiveChannelId", 0,
                         &c->archive_channel_id, err, err_len)))
        return rc;
    if (c->archive_channel_id && !dg_is_snowflake(c->archive_channel_id))
        return dg_fail(err, err_len, OC_ERR_INVALID,
                       "config: \"discussion.archiveChannelId\" must be a Discord channel id "
                       "(a snowflake string of 1-20 digits) the moderator may post in");
    return OC_OK;
}

static int parse_all(const json_t *json, dg_config *c, char *err, size_t err_len)
{
    static const char *const top[] = {"noReplyProvider", "noReplyModel", "sessionPolicy", "dbPath",
                                      "templatesDir", "discord", "agents", "admins", "turn",
                                      "discussion", "outbox", "store", NULL};
    static const char *const turn_keys[] = {"timeoutSec", "maxAgentMessages", "nudgeSec", NULL};
    static const char *const disc_keys[] = {"maxGuideChars", "maxSummaryBytes",
                                            "closedNoticeCooldownSec", "reminderAfterSec",
                                            "maxLifetimeSec", "summaryDir", "summaryTemplate",
                                            "previewChars", "archiveChannelId", NULL};
    static const char *const outbox_keys[] = {"retentionSec", NULL};
    int rc;
    if (!json_is_object(json))
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: the plugin config must be a JSON object "
                    "(plugins.entries.dirigent.config)");
    /* Before anything can echo a value or a key: a token anywhere but in
     * discord.moderatorToken is refused without showing it. */
    static const char *const token_home[] = {"discord.moderatorToken", NULL};
    char where[256];
    int is_key;
    if (dg_json_find_token(json, token_home, where, sizeof where, &is_key)) {
        char what[300];
        if (is_key && !*where)
            snprintf(what, sizeof what, "a top-level key");
        else
            snprintf(what, sizeof what, "%s\"%s\"", is_key ? "a key of " : "", where);
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: %s: this looks like a bot token; tokens belong in the environment "
                    "(DIRIGENT_MODERATOR_TOKEN for the moderator), never in another key: move "
                    "it there and fix the config", what);
    }
    if ((rc = check_keys(json, "", top, err, err_len)))
        return rc;
    /* Optional here: a host with claim hooks never calls the no-reply
     * model. A host without them needs both (checked when the hooks are
     * registered, dg_config_require_no_reply); one without the other is
     * a mistake on any host. */
    if ((rc = get_string(json, "noReplyProvider", "noReplyProvider", 0, &c->no_reply_provider, err,
                         err_len)))
        return rc;
    if ((rc = get_string(json, "noReplyModel", "noReplyModel", 0, &c->no_reply_model, err, err_len)))
        return rc;
    if (!c->no_reply_provider != !c->no_reply_model)
        return dg_fail(err, err_len, OC_ERR_INVALID,
                       "config: \"%s\" is set but \"%s\" is missing; give both (the no-reply "
                       "provider and its model) or neither (a host with claim hooks needs none)",
                       c->no_reply_provider ? "noReplyProvider" : "noReplyModel",
                       c->no_reply_provider ? "noReplyModel" : "noReplyProvider");

    char *policy = NULL;
    if ((rc = get_string(json, "sessionPolicy", "sessionPolicy", 0, &policy, err, err_len)))
        return rc;
    c->session_policy = DG_POLICY_CHANNEL;
    if (policy && !parse_policy(policy, &c->session_policy)) {
        free(policy);
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: \"sessionPolicy\" must be \"channel\" or \"thread\"");
    }
    free(policy);
    const char *env_policy = getenv("DIRIGENT_SESSION_POLICY");
    if (env_policy && *env_policy && !parse_policy(env_policy, &c->session_policy))
        return dg_fail(err, err_len, OC_ERR_INVALID,
                    "config: environment variable DIRIGENT_SESSION_POLICY must be \"channel\" or "
                    "\"thread\" (it overrides \"sessionPolicy\"); unset it or fix its value");

    if ((rc = get_string(json, "dbPath", "dbPath", 0, &c->db_path, err, err_len)))
        return rc;
    /* Before it is made absolute: "<config folder>/:memory:" would be a file
     * of that odd name, and the store could no longer tell. */
    if (c->db_path && (rc = dg_store_db_path_check(c->db_path, err, err_len)))
        return rc;
    if ((rc = parse_store(json, c, err, err_len)))
        return rc;
    if ((rc = get_string(json, "templatesDir", "templatesDir", 0, &c->templates_dir, err, err_len)))
        return rc;
    if ((rc = resolve_paths(c, err, err_len)))
        return rc;

    json_t *obj;
    if ((rc = get_object(json, "discord", "discord", &obj, err, err_len)))
        return rc;
    if ((rc = parse_discord(obj, c, err, err_len)))
        return rc;
    const char *env_token = getenv("DIRIGENT_MODERATOR_TOKEN");
    if (env_token && *env_token) {
        free(c->moderator_token);
        if (!(c->moderator_token = strdup(env_token)))
            return OC_ERR_NOMEM;
    }

    if ((rc = get_object(json, "agents", "agents", &obj, err, err_len)))
        return rc;
    if (obj && (rc = parse_agents(obj, c, err, err_len)))
        return rc;
    if ((rc = parse_admins(json_object_get(json, "admins"), c, err, err_len)))
        return rc;

    if ((rc = get_object(json, "turn", "turn", &obj, err, err_len)))
        return rc;
    if (obj && (rc = check_keys(obj, "turn.", turn_keys, err, err_len)))
        return rc;
    if ((rc = get_int(obj, "timeoutSec", "turn.timeoutSec", 60, 1, 86400, &c->turn_timeout_sec,
                      err, err_len)))
        return rc;
    if ((rc = get_int(obj, "maxAgentMessages", "turn.maxAgentMessages", 40, 1, 100000,
                      &c->turn_max_agent_messages, err, err_len)))
        return rc;
    if ((rc = get_int(obj, "nudgeSec", "turn.nudgeSec", 20, 0, 86400, &c->turn_nudge_sec,
                      err, err_len)))
        return rc;

    if ((rc = get_object(json, "discussion", "discussion", &obj, err, err_len)))
        return rc;
    if (obj && (rc = check_keys(obj, "discussion.", disc_keys, err, err_len)))
        return rc;
    if ((rc = get_int(obj, "maxGuideChars", "discussion.maxGuideChars", 1500, 1, 100000,
                      &c->max_guide_chars, err, err_len)))
        return rc;
    if ((rc = get_int(obj, "maxSummaryBytes", "discussion.maxSummaryBytes", 1048576, 1,
                      1073741824L, &c->max_summary_bytes, err, err_len)))
        return rc;
    if ((rc = get_int(obj, "closedNoticeCooldownSec", "discussion.closedNoticeCooldownSec", 60, 0,
                      86400, &c->closed_notice_cooldown_sec, err, err_len)))
        return rc;
    if ((rc = get_int(obj, "reminderAfterSec", "discussion.reminderAfterSec", 1800, 0,
                      31536000L, &c->reminder_after_sec, err, err_len)))
        return rc;
    if ((rc = get_int(obj, "maxLifetimeSec", "discussion.maxLifetimeSec", 0, 0, 31536000L,
                      &c->max_lifetime_sec, err, err_len)))
        return rc;

    if ((rc = parse_summary(obj, c, err, err_len)))
        return rc;

    /* At least a day: never below the closed-notice cooldown or Discord's
     * nonce window, so pruning cannot change what a row still decides. */
    if ((rc = get_object(json, "outbox", "outbox", &obj, err, err_len)))
        return rc;
    if (obj && (rc = check_keys(obj, "outbox.", outbox_keys, err, err_len)))
        return rc;
    return get_int(obj, "retentionSec", "outbox.retentionSec", 604800, 86400, 315360000,
                   &c->outbox_retention_sec, err, err_len);
}

int dg_config_parse(const json_t *json, dg_config *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (err && err_len)
        err[0] = '\0';
    int rc = parse_all(json, out, err, err_len);
    if (rc != OC_OK) {
        if (rc == OC_ERR_NOMEM && err && err_len && !err[0])
            snprintf(err, err_len, "config: out of memory while reading the config");
        dg_config_free(out);
    }
    return rc;
}

int dg_config_require_no_reply(const dg_config *c, int claim_hooks, char *err, size_t err_len)
{
    if (claim_hooks || c->no_reply_provider)
        return OC_OK;
    return dg_fail(err, err_len, OC_ERR_INVALID,
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
    if (c->moderator_token) {
        /* Do not leave the secret in freed heap memory. */
        volatile char *t = c->moderator_token;
        while (*t)
            *t++ = '\0';
        free(c->moderator_token);
    }
    free(c->moderator_user_id);
    for (size_t i = 0; i < c->n_agents; i++) {
        free(c->agents[i].agent_id);
        free(c->agents[i].discord_user_id);
    }
    free(c->agents);
    for (size_t i = 0; i < c->n_admins; i++)
        free(c->admins[i]);
    free(c->admins);
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
    for (size_t i = 0; i < cfg->n_agents; i++)
        if (strcmp(cfg->agents[i].discord_user_id, user_id) == 0)
            return &cfg->agents[i];
    return NULL;
}
