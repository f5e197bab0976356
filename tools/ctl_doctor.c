/*
 * ctl_doctor.c -- `dirigent-ctl doctor --openclaw-config FILE`: what would
 * keep the plugin from working, found before the first start.
 *
 * It reads the OpenClaw config as OpenClaw resolves it (plain JSON; ${VAR}
 * in string values from the environment or env.vars, $${VAR} a literal),
 * validates plugins.entries.dirigent.config with the plugin's own parser
 * (config.c, as init does), and asks Discord read-only questions with each
 * configured token: who the token belongs to, the guild's roles and
 * members, its channels and their overwrites. Permissions are computed the
 * way Discord does (owner and Administrator: everything; @everyone and the
 * member's roles; then the channel's overwrites for @everyone, the roles,
 * the member). It writes nothing: the database is opened read-only, the
 * Discord requests are GETs.
 *
 * Every finding is one line, "ok", "warn" or "error", what was found and
 * the fix. No token is ever printed: every line is scrubbed of every token
 * the config names (common/scrub.h) before it is shown.
 */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "ctl_doctor.h"
#include "discord.h"
#include "openclaw/plugin.h"
#include "scrub.h"
#include "store.h"
#include "store_operator.h"

#define PERM_ADMINISTRATOR (1ull << 3)
#define PERM_MANAGE_CHANNELS (1ull << 4)
#define PERM_MANAGE_ROLES (1ull << 28)
#define PERM_ALL (~0ull)
#define MAX_SECRETS 64
#define TEXT_MAX 1024
/* The first OpenClaw release with before_agent_reply and reply_payload_sending. */
#define CLAIM_YEAR 2026
#define CLAIM_MONTH 9

static const char USAGE[] =
    "usage: dirigent-ctl doctor [--openclaw-config FILE] [--openclaw-version V] [--json]\n"
    "  Checks an OpenClaw config for the plugin before the first start: the plugin's\n"
    "  own validation, the moderator's and each agent's Discord token, who sees and may\n"
    "  post in each channel, the moderator's permissions for discussions, the hooks\n"
    "  permission, the database path and the no-reply provider. Read-only: GET requests\n"
    "  to Discord, the database opened read-only.\n"
    "  --openclaw-config FILE  the config (default: env OPENCLAW_CONFIG_PATH, else\n"
    "                          ~/.openclaw/openclaw.json); - reads it from stdin\n"
    "  --openclaw-version V    the OpenClaw that will run it (default: the config's\n"
    "                          meta.lastTouchedVersion)\n"
    "  --json                  one JSON object: {ok, errors, warnings, findings}\n"
    "Exit status: 0 when nothing is an error, 1 otherwise, 2 for usage.\n";

typedef enum { LV_OK, LV_WARN, LV_ERROR } level;

typedef struct doctor {
    int json;
    json_t *findings;          /* --json: the lines, printed at the end */
    int errors, warnings;
    const char *secrets[MAX_SECRETS]; /* borrowed from the config: scrubbed from every line */
    size_t n_secrets;
    json_t *root;              /* the whole config, resolved */
    json_t *env_vars;          /* env.vars of the config (borrowed), may be NULL */
    dg_config cfg;
    int cfg_ok;
    int claim_hooks;           /* 1 yes, 0 no, -1 unknown */
    const char *version;       /* OpenClaw's, or NULL */
    char config_file[PATH_MAX];
} doctor;

static void keep_secret(doctor *d, const char *s)
{
    if (s && *s && d->n_secrets < MAX_SECRETS)
        d->secrets[d->n_secrets++] = s;
}

/* One finding; what and fix are formatted by the caller. fix NULL: none. */
static void say(doctor *d, level lv, const char *what, const char *fix)
{
    static const char *const names[] = {"ok", "warn", "error"};
    char w[TEXT_MAX * 2], f[TEXT_MAX * 2];
    snprintf(w, sizeof w, "%s", what);
    snprintf(f, sizeof f, "%s", fix ? fix : "");
    for (size_t i = 0; i < d->n_secrets; i++) {
        dg_scrub_secret(w, d->secrets[i]);
        dg_scrub_secret(f, d->secrets[i]);
    }
    d->errors += lv == LV_ERROR;
    d->warnings += lv == LV_WARN;
    if (d->json) {
        json_t *o = json_pack("{s:s,s:s}", "level", names[lv], "what", w);
        if (o && *f)
            json_object_set_new(o, "fix", json_string(f));
        json_array_append_new(d->findings, o);
    } else {
        printf("%-5s  %s%s%s\n", names[lv], w, *f ? "; fix: " : "", f);
        fflush(stdout);
    }
}

/* say() with printf-style what; fix is fixed text or NULL. */
__attribute__((format(printf, 4, 5)))
static void sayf(doctor *d, level lv, const char *fix, const char *fmt, ...)
{
    char what[TEXT_MAX * 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    say(d, lv, what, fix);
}

/* ---- the config as OpenClaw resolves it ------------------------------------------ */

static const char *env_value(doctor *d, const char *name)
{
    const char *v = getenv(name);
    if (v && *v)
        return v;
    v = json_string_value(json_object_get(d->env_vars, name));
    return v && *v ? v : NULL;
}

/* Append len bytes of src to the growing string *out (length *n, room *cap).
 * 0, or -1 without memory (*out is then freed). */
static int append(char **out, size_t *n, size_t *cap, const char *src, size_t len)
{
    if (*n + len + 1 > *cap) {
        size_t want = (*n + len + 1) * 2;
        char *grown = realloc(*out, want);
        if (!grown) {
            free(*out);
            *out = NULL;
            return -1;
        }
        *out = grown;
        *cap = want;
    }
    memcpy(*out + *n, src, len);
    *n += len;
    (*out)[*n] = '\0';
    return 0;
}

/* ${VAR} (VAR: [A-Z_][A-Z0-9_]*) replaced in s; $${VAR} gives ${VAR}. A
 * missing or empty VAR stays as written and is reported once, with where.
 * Returns a new string (caller frees) or NULL without memory. */
static char *substitute(doctor *d, const char *s, const char *where, json_t *told)
{
    size_t cap = strlen(s) + 1, n = 0;
    char *out = calloc(1, cap);
    for (const char *p = s; out && *p;) {
        int escaped = p[0] == '$' && p[1] == '$' && p[2] == '{';
        const char *name = p + (escaped ? 3 : 2);
        size_t len = 0;
        if (escaped || (p[0] == '$' && p[1] == '{'))
            while (isupper((unsigned char)name[len]) || name[len] == '_' ||
                   (len && isdigit((unsigned char)name[len])))
                len++;
        if (!len || name[len] != '}') {
            append(&out, &n, &cap, p, 1);
            p++;
            continue;
        }
        size_t whole = (size_t)(name + len + 1 - p);
        char var[256];
        snprintf(var, sizeof var, "%.*s", (int)len, name);
        const char *val = escaped ? NULL : env_value(d, var);
        if (escaped) {
            append(&out, &n, &cap, p + 1, whole - 1);
        } else if (val) {
            append(&out, &n, &cap, val, strlen(val));
        } else {
            append(&out, &n, &cap, p, whole);
            if (!json_object_get(told, var)) {
                json_object_set_new(told, var, json_true());
                sayf(d, LV_WARN, "export it in the environment the gateway runs with (a "
                     "service: its EnvironmentFile), or run the doctor in that environment",
                     "config: ${%s} (in %s) is not set in this environment: OpenClaw leaves "
                     "it unresolved", var, where);
            }
        }
        p += whole;
    }
    return out;
}

/* Every string value under v (keys are not substituted), in place. */
static int resolve(doctor *d, json_t *v, const char *path, json_t *told)
{
    char sub[512];
    if (json_is_string(v)) {
        char *r = substitute(d, json_string_value(v), path, told);
        int rc = r ? json_string_set(v, r) : -1;
        free(r);
        return rc;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", k);
            if (resolve(d, x, sub, told))
                return -1;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            if (resolve(d, x, sub, told))
                return -1;
        }
    }
    return 0;
}

static json_t *at(json_t *o, const char *a, const char *b, const char *c, const char *e)
{
    const char *keys[] = {a, b, c, e};
    for (size_t i = 0; i < 4 && keys[i] && o; i++)
        o = json_object_get(o, keys[i]);
    return o;
}

static int load_config(doctor *d, const char *file)
{
    json_error_t je;
    json_t *root = !strcmp(file, "-") ? json_loadf(stdin, 0, &je) : json_load_file(file, 0, &je);
    if (!root) {
        FILE *f = strcmp(file, "-") ? fopen(file, "r") : NULL;
        if (strcmp(file, "-") && !f) {
            sayf(d, LV_ERROR, "give --openclaw-config the path of openclaw.json (or set "
                 "OPENCLAW_CONFIG_PATH)", "config: cannot read %s (%s)", file, strerror(errno));
            return -1;
        }
        if (f)
            fclose(f);
        sayf(d, LV_ERROR, "the doctor reads plain JSON; for a config with JSON5 comments or "
             "trailing commas run `openclaw dirigent doctor`, which reads it as OpenClaw does",
             "config: %s is not JSON (line %d: %s)", file, je.line, je.text);
        return -1;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        sayf(d, LV_ERROR, "give --openclaw-config OpenClaw's openclaw.json",
             "config: %s is not a JSON object", file);
        return -1;
    }
    d->root = root;
    d->env_vars = at(root, "env", "vars", NULL, NULL);
    json_t *told = json_object();
    int rc = resolve(d, root, "", told);
    json_decref(told);
    if (rc) {
        say(d, LV_ERROR, "config: out of memory substituting ${VAR}s", NULL);
        return -1;
    }
    if (!strcmp(file, "-"))
        say(d, LV_OK, "config: the config OpenClaw resolved read (stdin)", NULL);
    else
        sayf(d, LV_OK, NULL, "config: %s read, ${VAR}s substituted as OpenClaw does", file);
    return 0;
}

/* ---- the plugin entry, its config, the host -------------------------------------- */

/* major.minor of an OpenClaw version ("2026.9.6", "v2026.10.1-beta.2"). */
static int parse_version(const char *v, int *year, int *month)
{
    if (v && *v == 'v')
        v++;
    return v && sscanf(v, "%d.%d", year, month) == 2;
}

static void check_host(doctor *d, json_t *entry)
{
    json_t *hooks = json_object_get(entry, "hooks");
    if (!json_is_true(json_object_get(hooks, "allowConversationAccess")))
        say(d, LV_ERROR, "plugins.entries.dirigent.hooks.allowConversationAccess is not true: "
            "OpenClaw runs no typed hook of a plugin that is not bundled without it, so no turn "
            "is ever taken", "add \"hooks\": {\"allowConversationAccess\": true, "
            "\"allowPromptInjection\": true} to plugins.entries.dirigent");
    else
        say(d, LV_OK, "plugins.entries.dirigent.hooks.allowConversationAccess is true", NULL);
    if (json_is_object(hooks) && !json_is_true(json_object_get(hooks, "allowPromptInjection")))
        say(d, LV_WARN, "plugins.entries.dirigent.hooks.allowPromptInjection is not true: the "
            "session-model text is not added to prompts", "set \"allowPromptInjection\": true "
            "beside allowConversationAccess");
    if (json_is_false(json_object_get(entry, "enabled")))
        say(d, LV_WARN, "plugins.entries.dirigent.enabled is false: the plugin does not load",
            "set \"enabled\": true (or `openclaw plugins enable dirigent`)");
    if (!d->version)
        d->version = json_string_value(at(d->root, "meta", "lastTouchedVersion", NULL, NULL));
    int y = 0, m = 0;
    if (!parse_version(d->version, &y, &m)) {
        d->claim_hooks = -1;
        say(d, LV_WARN, "OpenClaw version: unknown (no --openclaw-version, no "
            "meta.lastTouchedVersion in the config): cannot tell whether it has claim hooks "
            "(before_agent_reply, OpenClaw 2026.9 and later)", "give --openclaw-version "
            "(`openclaw --version`), or run `openclaw dirigent doctor`");
        return;
    }
    d->claim_hooks = y > CLAIM_YEAR || (y == CLAIM_YEAR && m >= CLAIM_MONTH);
    if (d->claim_hooks)
        sayf(d, LV_OK, NULL, "OpenClaw %s has the claim hooks (before_agent_reply, "
             "reply_payload_sending): agents without the turn make no model call", d->version);
    else
        sayf(d, LV_WARN, "upgrade OpenClaw to 2026.9 or later (`npm i -g openclaw@latest`)",
             "OpenClaw %s has no claim hooks: agents without the turn are switched to the "
             "no-reply model (each such run still reaches it)", d->version);
}

static void check_plugin_config(doctor *d, json_t *entry)
{
    json_t *conf = json_object_get(entry, "config");
    if (!json_is_object(conf)) {
        say(d, LV_ERROR, "plugins.entries.dirigent.config is missing or not an object",
            "add the plugin's config (discord.moderatorUserId, agents, ...) as README's step 6 "
            "shows");
        return;
    }
    json_t *native = json_deep_copy(conf);
    json_object_del(native, "bridge"); /* the bridge's own options, stripped before init */
    char err[1024] = "";
    int rc = dg_config_parse(native, &d->cfg, err, sizeof err);
    json_decref(native);
    if (rc != OC_OK) {
        sayf(d, LV_ERROR, "correct plugins.entries.dirigent.config as the message says",
             "plugin config: %s", err);
        return;
    }
    d->cfg_ok = 1;
    keep_secret(d, d->cfg.moderator_token);
    sayf(d, LV_OK, NULL, "plugin config: valid (the plugin's own validation): %zu agent%s, "
         "sessionPolicy %s", d->cfg.n_agents, d->cfg.n_agents == 1 ? "" : "s",
         dg_session_policy_name(d->cfg.session_policy));
    if (d->claim_hooks >= 0 &&
        dg_config_require_no_reply(&d->cfg, d->claim_hooks, err, sizeof err) != OC_OK)
        sayf(d, LV_ERROR, "set both in plugins.entries.dirigent.config, with a provider in "
             "models.providers that answers (dirigent-noreply), or upgrade OpenClaw",
             "plugin config: %s", err);
}

/* ---- the no-reply provider -------------------------------------------------------- */

/* curl's write callback (on the thread of curl_easy_perform): the body is not needed. */
static size_t discard(char *p, size_t size, size_t n, void *u)
{
    (void)p;
    (void)u;
    return size * n;
}

static void check_no_reply(doctor *d)
{
    if (!d->cfg.no_reply_provider) {
        if (d->claim_hooks == 1)
            say(d, LV_OK, "no-reply provider: none configured, none needed (claim hooks)", NULL);
        return;
    }
    if (d->claim_hooks == 1) {
        sayf(d, LV_OK, NULL, "no-reply provider: \"%s\" is configured but never used on a host "
             "with claim hooks (not contacted); noReplyProvider/noReplyModel and the provider "
             "may be dropped", d->cfg.no_reply_provider);
        return;
    }
    json_t *prov = at(d->root, "models", "providers", d->cfg.no_reply_provider, NULL);
    if (!json_is_object(prov)) {
        sayf(d, LV_ERROR, "add it to models.providers (README: the no-reply provider)",
             "no-reply provider: noReplyProvider \"%s\" is not in models.providers",
             d->cfg.no_reply_provider);
        return;
    }
    int has_model = 0;
    size_t i;
    json_t *mod;
    json_array_foreach(json_object_get(prov, "models"), i, mod)
        has_model |= json_is_string(json_object_get(mod, "id")) &&
                     !strcmp(json_string_value(json_object_get(mod, "id")), d->cfg.no_reply_model);
    if (!has_model)
        sayf(d, LV_ERROR, "add {\"id\": \"<noReplyModel>\", ...} to that provider's models",
             "no-reply provider: models.providers.%s has no model \"%s\" (noReplyModel)",
             d->cfg.no_reply_provider, d->cfg.no_reply_model);
    const char *base = json_string_value(json_object_get(prov, "baseUrl"));
    const char *key = json_string_value(json_object_get(prov, "apiKey"));
    keep_secret(d, key);
    if (!base || strstr(base, "${")) {
        sayf(d, LV_ERROR, "set its baseUrl (and the variables in it)",
             "no-reply provider: models.providers.%s.baseUrl is %s", d->cfg.no_reply_provider,
             base ? "not resolved" : "missing");
        return;
    }
    char url[2048], auth[1024];
    snprintf(url, sizeof url, "%s%s/models", base,
             base[0] && base[strlen(base) - 1] == '/' ? "." : "");
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    if (key) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
        h = curl_slist_append(h, auth);
    }
    long code = 0;
    CURLcode cr = CURLE_FAILED_INIT;
    if (c) {
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        cr = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(c);
    }
    curl_slist_free_all(h);
    if (cr != CURLE_OK)
        sayf(d, LV_ERROR, "start dirigent-noreply (README: the no-reply provider) or correct "
             "baseUrl", "no-reply provider: %s does not answer (%s)", base,
             curl_easy_strerror(cr));
    else if (code != 200)
        sayf(d, LV_ERROR, "give the provider's apiKey the server's token "
             "(DIRIGENT_NOREPLY_TOKEN)", "no-reply provider: GET %s/models answered HTTP %ld",
             base, code);
    else
        sayf(d, LV_OK, NULL, "no-reply provider: %s answers (needed: this host has no claim "
             "hooks)", base);
}

/* ---- the database ------------------------------------------------------------------ */

static void check_database(doctor *d)
{
    char err[1024] = "";
    dg_store *st = NULL;
    if (d->cfg.store_url) {
        int rc = dg_store_open_readonly(d->cfg.store_url, &st, err, sizeof err);
        dg_store_close(st);
        if (rc == OC_OK || rc == OC_ERR_UNSUPPORTED)
            say(d, rc == OC_OK ? LV_OK : LV_WARN, rc == OC_OK ? "database: the PostgreSQL store "
                "is reachable and holds dirigent's tables" : err, rc == OC_OK ? NULL
                : "start the plugin of this version once, or use the matching dirigent-ctl");
        else
            sayf(d, LV_WARN, "make sure the database is reachable and holds dirigent's tables "
                 "or none", "database: %s (a new empty database is set up at the first "
                 "start)", err);
        return;
    }
    const char *path = d->cfg.db_path;
    struct stat sb;
    if (stat(path, &sb) == 0) {
        if (!S_ISREG(sb.st_mode)) {
            sayf(d, LV_ERROR, "point dbPath at a file (it may not exist yet)",
                 "database: dbPath %s is not a regular file", path);
            return;
        }
        if (access(path, R_OK | W_OK) != 0) {
            sayf(d, LV_ERROR, "give the gateway's user read and write access to it, or choose "
                 "another dbPath", "database: dbPath %s is not writable (%s)", path,
                 strerror(errno));
            return;
        }
        if (sb.st_size == 0) {
            sayf(d, LV_OK, NULL, "database: dbPath %s is an empty file: set up at the first "
                 "start", path);
            return;
        }
        int rc = dg_store_open_readonly(path, &st, err, sizeof err);
        dg_store_close(st);
        if (rc == OC_OK)
            sayf(d, LV_OK, NULL, "database: dbPath %s is dirigent's database, writable", path);
        else if (rc == OC_ERR_UNSUPPORTED)
            sayf(d, LV_WARN, "start the plugin of this version once (it migrates an older file) "
                 "or use the newer one's dirigent-ctl", "database: %s", err);
        else
            sayf(d, LV_ERROR, "choose a dbPath of its own for the plugin (it never writes into "
                 "another application's file)", "database: dbPath %s holds another "
                 "application's data, not dirigent's (%s)", path,
                 rc == OC_ERR_INVALID ? "a SQLite database without the plugin's stamp and "
                 "tables" : "not a SQLite database");
        return;
    }
    if (errno != ENOENT && errno != ENOTDIR) {
        sayf(d, LV_ERROR, "give the gateway's user access to the folder, or choose another "
             "dbPath", "database: dbPath %s cannot be examined (%s)", path, strerror(errno));
        return;
    }
    /* Not there yet: the nearest folder that exists must let us create it
     * (the plugin creates the missing folders, mode 0700). */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            break;
        if (slash == dir)
            slash[1] = '\0';
        else
            *slash = '\0';
        if (stat(dir, &sb) == 0 || slash == dir)
            break;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        sayf(d, LV_ERROR, "choose a dbPath under a folder that exists",
             "database: dbPath %s: %s is not a folder", path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        sayf(d, LV_ERROR, "give the gateway's user write access to that folder, or choose "
             "another dbPath", "database: dbPath %s cannot be created: %s is not writable (%s)",
             path, dir, strerror(errno));
    else
        sayf(d, LV_OK, NULL, "database: dbPath %s does not exist yet; it is created at the "
             "first start (%s is writable)", path, dir);
}

/* ---- Discord ----------------------------------------------------------------------- */

typedef struct bot {
    const char *who;        /* "moderator" or the agent id (borrowed) */
    const char *user_id;    /* configured Discord user id (borrowed) */
    dg_discord *api;        /* NULL: no usable token */
    json_t *member;         /* in the guild being checked, or NULL */
    uint64_t guild_perms;
} bot;

/* A client for token at discord.apiBase, or NULL; the caller frees it
 * (dg_discord_free). */
static dg_discord *client(doctor *d, const char *token)
{
    dg_discord_options o = {.api_base = d->cfg.discord_api_base, .token = token,
                            .timeout_ms = d->cfg.discord_timeout_ms < 10000
                                              ? d->cfg.discord_timeout_ms : 10000,
                            .max_attempts = 2};
    dg_discord *c = NULL;
    char err[256];
    return dg_discord_new(&o, &c, err, sizeof err) == OC_OK ? c : NULL;
}

/* GET path; the answer (caller decrefs) or NULL with the failure in e. */
static json_t *get(dg_discord *c, const char *path, dg_discord_err *e)
{
    json_t *r = NULL;
    memset(e, 0, sizeof *e);
    if (dg_discord_request(c, "GET", path, NULL, 1, &r, e) != OC_OK) {
        json_decref(r);
        return NULL;
    }
    return r;
}

/* Check a token's owner: a bot, with user id want. Returns its client (the
 * caller frees it, dg_discord_free) or NULL after saying what is wrong. */
static dg_discord *check_token(doctor *d, const char *who, const char *where,
                               const char *token, const char *want, int is_moderator)
{
    char what[TEXT_MAX], fix[TEXT_MAX];
    if (!token || !*token || strstr(token, "${")) {
        snprintf(what, sizeof what, "%s: no Discord token (%s %s)", who, where,
                 !token || !*token ? "is not set" : "names a variable that is not set");
        if (is_moderator)
            snprintf(fix, sizeof fix, "export DIRIGENT_MODERATOR_TOKEN (the moderator bot's "
                     "token) in the gateway's environment; never write it into the config");
        else
            snprintf(fix, sizeof fix, "export the variable %s names with that bot's token in "
                     "the gateway's environment", where);
        say(d, LV_ERROR, what, fix);
        return NULL;
    }
    keep_secret(d, token);
    dg_discord *c = client(d, token);
    dg_discord_err e;
    json_t *me = c ? get(c, "/users/@me", &e) : NULL;
    if (!me) {
        if (!c)
            snprintf(what, sizeof what, "%s: cannot set up a Discord client for %s "
                     "(discord.apiBase %s)", who, where, d->cfg.discord_api_base);
        else if (e.http_status == 401)
            snprintf(what, sizeof what, "%s: Discord refuses the token of %s (401 "
                     "Unauthorized): it is wrong or was reset", who, where);
        else
            snprintf(what, sizeof what, "%s: GET /users/@me with the token of %s failed: %s",
                     who, where, e.message);
        say(d, LV_ERROR, what, e.http_status == 401 ? "copy the bot's current token from the "
            "Discord developer portal (Bot, Reset Token) into the environment variable"
            : "check discord.apiBase and the network, then run the doctor again");
        dg_discord_free(c);
        return NULL;
    }
    const char *id = json_string_value(json_object_get(me, "id"));
    const char *name = json_string_value(json_object_get(me, "username"));
    int is_bot = json_is_true(json_object_get(me, "bot"));
    if (!id || strcmp(id, want)) {
        snprintf(what, sizeof what, "%s: the token of %s belongs to %s (%s), not to the "
                 "configured user %s", who, where, name ? name : "another user", id ? id : "?",
                 want);
        if (is_moderator)
            snprintf(fix, sizeof fix, "give DIRIGENT_MODERATOR_TOKEN the moderator bot's "
                     "token, or set discord.moderatorUserId to %s if that bot is the moderator",
                     id ? id : "its id");
        else
            snprintf(fix, sizeof fix, "give %s the token of user %s, or correct "
                     "agents.%s.discordUserId", where, want, who);
        say(d, LV_ERROR, what, fix);
        json_decref(me);
        dg_discord_free(c);
        return NULL;
    }
    if (!is_bot) {
        sayf(d, LV_ERROR, "use a bot account's token (Discord developer portal: Bot)",
             "%s: the token of %s belongs to %s (%s), which is not a bot", who, where,
             name ? name : "?", id);
        json_decref(me);
        dg_discord_free(c);
        return NULL;
    }
    sayf(d, LV_OK, NULL, "%s: the token of %s is valid and belongs to bot %s (%s)", who, where,
         name ? name : "?", id);
    json_decref(me);
    return c;
}

/* The Discord account an agent answers with: its binding's accountId, else
 * an account of the agent's name. Borrowed, or NULL. */
static const char *account_of(doctor *d, const char *agent)
{
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(d->root, "bindings"), i, b) {
        json_t *m = json_object_get(b, "match");
        const char *aid = json_string_value(json_object_get(b, "agentId"));
        const char *ch = json_string_value(json_object_get(m, "channel"));
        const char *acc = json_string_value(json_object_get(m, "accountId"));
        if (aid && ch && acc && !strcmp(aid, agent) && !strcmp(ch, "discord"))
            return acc;
    }
    return json_object_get(at(d->root, "channels", "discord", "accounts", NULL), agent) ? agent
                                                                                       : NULL;
}

static uint64_t perm_of(json_t *v)
{
    return json_is_string(v) ? strtoull(json_string_value(v), NULL, 10)
           : json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

static int has_role(json_t *member, const char *role)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(member, "roles"), i, r)
        if (json_is_string(r) && !strcmp(json_string_value(r), role))
            return 1;
    return 0;
}

/* Guild-level permissions: @everyone and the member's roles; the owner and
 * Administrator have everything. */
static uint64_t guild_perms(json_t *guild, json_t *roles, json_t *member, const char *user,
                            const char *guild_id)
{
    const char *owner = json_string_value(json_object_get(guild, "owner_id"));
    if (owner && !strcmp(owner, user))
        return PERM_ALL;
    uint64_t p = 0;
    size_t i;
    json_t *r;
    json_array_foreach(roles, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        if (id && (!strcmp(id, guild_id) || has_role(member, id)))
            p |= perm_of(json_object_get(r, "permissions"));
    }
    return p & PERM_ADMINISTRATOR ? PERM_ALL : p;
}

/* In a channel: @everyone's overwrite, the roles' together, the member's. */
static uint64_t channel_perms(uint64_t base, json_t *channel, json_t *member, const char *user,
                              const char *guild_id)
{
    if (base == PERM_ALL)
        return base;
    json_t *ows = json_object_get(channel, "permission_overwrites");
    uint64_t allow = 0, deny = 0;
    size_t i;
    json_t *ow;
    json_array_foreach(ows, i, ow) {
        const char *id = json_string_value(json_object_get(ow, "id"));
        if (id && !strcmp(id, guild_id)) {
            base &= ~perm_of(json_object_get(ow, "deny"));
            base |= perm_of(json_object_get(ow, "allow"));
        }
    }
    json_array_foreach(ows, i, ow) {
        const char *id = json_string_value(json_object_get(ow, "id"));
        if (id && strcmp(id, guild_id) && perm_of(json_object_get(ow, "type")) == 0 &&
            has_role(member, id)) {
            deny |= perm_of(json_object_get(ow, "deny"));
            allow |= perm_of(json_object_get(ow, "allow"));
        }
    }
    base = (base & ~deny) | allow;
    json_array_foreach(ows, i, ow) {
        const char *id = json_string_value(json_object_get(ow, "id"));
        if (id && !strcmp(id, user) && perm_of(json_object_get(ow, "type")) == 1) {
            base &= ~perm_of(json_object_get(ow, "deny"));
            base |= perm_of(json_object_get(ow, "allow"));
        }
    }
    return base;
}

static const char *lacks(uint64_t p)
{
    return !(p & DG_PERM_VIEW_CHANNEL) ? "no View Channel"
           : !(p & DG_PERM_SEND_MESSAGES) ? "no Send Messages" : NULL;
}

/* The channels of guild g the agents are in: moderator and >= 2 agents must
 * read and send there. only: the guild's configured channel ids, or NULL. */
static void check_channels(doctor *d, const char *g, bot *mod, bot *agents, size_t n,
                           json_t *only)
{
    dg_discord_err e;
    char path[128];
    snprintf(path, sizeof path, "/guilds/%s/channels", g);
    json_t *chans = get(mod->api, path, &e);
    if (!chans) {
        sayf(d, LV_ERROR, "invite the moderator bot to the server with View Channels",
             "guild %s: the moderator cannot list its channels: %s", g, e.message);
        return;
    }
    size_t i, unseen = 0;
    json_t *ch;
    json_array_foreach(chans, i, ch) {
        const char *id = json_string_value(json_object_get(ch, "id"));
        const char *name = json_string_value(json_object_get(ch, "name"));
        if (!id || json_integer_value(json_object_get(ch, "type")) != 0)
            continue; /* text channels only; threads follow their parent */
        if (only && !json_object_get(only, id))
            continue;
        char ok_list[512] = "", bad_list[512] = "";
        size_t can = 0, see = 0;
        for (size_t k = 0; k < n; k++) {
            if (!agents[k].member)
                continue;
            uint64_t p = channel_perms(agents[k].guild_perms, ch, agents[k].member,
                                       agents[k].user_id, g);
            const char *why = lacks(p);
            see += (p & DG_PERM_VIEW_CHANNEL) != 0;
            char *list = why ? bad_list : ok_list;
            size_t used = strlen(list);
            if (why)
                snprintf(list + used, 512 - used, "%s%s (%s)", used ? ", " : "",
                         agents[k].who, why);
            else
                snprintf(list + used, 512 - used, "%s%s", used ? ", " : "", agents[k].who);
            can += !why;
        }
        if (!see && !only) {
            unseen++;
            continue;
        }
        const char *mod_why = mod->member ? lacks(channel_perms(mod->guild_perms, ch,
                                                                mod->member, mod->user_id, g))
                                          : "not a member";
        if (mod_why)
            sayf(d, LV_ERROR, "allow the moderator bot View Channel and Send Messages there "
                 "(channel permissions: add the bot or its role)", "channel #%s (%s): the "
                 "moderator cannot post there (%s): no hand-off, notice or admin reply reaches "
                 "it", name ? name : "?", id, mod_why);
        if (can < 2)
            sayf(d, LV_ERROR, "allow the agents' bots View Channel and Send Messages there "
                 "(channel permissions: add each bot or a role they share)", "channel #%s "
                 "(%s): %zu agent%s can read and send there (%s), turns need two%s%s",
                 name ? name : "?", id, can, can == 1 ? "" : "s", can ? ok_list : "none",
                 *bad_list ? "; " : "", bad_list);
        else if (*bad_list)
            sayf(d, LV_WARN, "allow those bots View Channel and Send Messages there, or leave "
                 "them out on purpose", "channel #%s (%s): %s can read and send; %s never "
                 "take%s a turn there", name ? name : "?", id, ok_list, bad_list,
                 strchr(bad_list, ',') ? "" : "s");
        else if (!mod_why)
            sayf(d, LV_OK, NULL, "channel #%s (%s): the moderator and %zu agents (%s) can read "
                 "and send", name ? name : "?", id, can, ok_list);
    }
    if (unseen)
        sayf(d, LV_OK, NULL, "guild %s: %zu text channel%s no agent can see (not managed)", g,
             unseen, unseen == 1 ? "" : "s");
    json_decref(chans);
}

static void check_guild(doctor *d, const char *g, bot *mod, bot *agents, size_t n, json_t *only)
{
    dg_discord_err e;
    char path[128];
    snprintf(path, sizeof path, "/guilds/%s", g);
    json_t *guild = get(mod->api, path, &e);
    snprintf(path, sizeof path, "/guilds/%s/roles", g);
    json_t *roles = guild ? get(mod->api, path, &e) : NULL;
    if (!guild || !roles) {
        sayf(d, LV_ERROR, "invite the moderator bot to that server (OAuth2 URL with the bot "
             "scope), and check discord.guildId", "guild %s: the moderator cannot read it: %s",
             g, e.message);
        json_decref(guild);
        return;
    }
    bot *all[1 + 64];
    size_t m = 0;
    all[m++] = mod;
    for (size_t k = 0; k < n && m < 65; k++)
        all[m++] = &agents[k];
    for (size_t k = 0; k < m; k++) {
        bot *b = all[k];
        json_decref(b->member);
        b->member = NULL;
        snprintf(path, sizeof path, "/guilds/%s/members/%s", g, b->user_id);
        b->member = get(mod->api, path, &e);
        if (!b->member) {
            sayf(d, LV_ERROR, "invite that bot to the server (Discord developer portal: "
                 "OAuth2, bot scope)", "guild %s: %s (user %s) is not a member%s%s", g, b->who,
                 b->user_id, e.http_status == 404 ? "" : ": ",
                 e.http_status == 404 ? "" : e.message);
            continue;
        }
        b->guild_perms = guild_perms(guild, roles, b->member, b->user_id, g);
    }
    if (d->cfg.discord_guild_id && !strcmp(g, d->cfg.discord_guild_id) && mod->member) {
        uint64_t need = PERM_MANAGE_CHANNELS | PERM_MANAGE_ROLES;
        uint64_t have = mod->guild_perms & need;
        if (have != need)
            sayf(d, LV_ERROR, "give the moderator bot's role Manage Channels and Manage Roles "
                 "(Server Settings, Roles)", "discussions: the moderator lacks %s%s%s in guild "
                 "%s: it cannot create discussion channels or set who may see them",
                 have & PERM_MANAGE_CHANNELS ? "" : "Manage Channels",
                 !(have & PERM_MANAGE_CHANNELS) && !(have & PERM_MANAGE_ROLES) ? " and " : "",
                 have & PERM_MANAGE_ROLES ? "" : "Manage Roles", g);
        else
            sayf(d, LV_OK, NULL, "discussions: the moderator has Manage Channels and Manage "
                 "Roles in guild %s", g);
    }
    if (mod->member)
        check_channels(d, g, mod, agents, n, only);
    json_decref(guild);
    json_decref(roles);
}

static void check_discord(doctor *d)
{
    const dg_config *c = &d->cfg;
    bot mod = {.who = "moderator", .user_id = c->moderator_user_id};
    mod.api = check_token(d, "moderator", getenv("DIRIGENT_MODERATOR_TOKEN") &&
                          *getenv("DIRIGENT_MODERATOR_TOKEN") ? "env DIRIGENT_MODERATOR_TOKEN"
                          : "discord.moderatorToken / env DIRIGENT_MODERATOR_TOKEN",
                          c->moderator_token, c->moderator_user_id, 1);
    bot *agents = calloc(c->n_agents ? c->n_agents : 1, sizeof *agents);
    if (!agents)
        return;
    json_t *accounts = at(d->root, "channels", "discord", "accounts", NULL);
    for (size_t k = 0; k < c->n_agents; k++) {
        agents[k].who = c->agents[k].agent_id;
        agents[k].user_id = c->agents[k].discord_user_id;
        const char *acc = account_of(d, agents[k].who);
        if (!acc || !json_is_object(json_object_get(accounts, acc))) {
            sayf(d, LV_ERROR, "add a channels.discord.accounts entry with that bot's token and "
                 "a binding {agentId, match: {channel: \"discord\", accountId}}",
                 "%s: no Discord account in channels.discord.accounts is bound to this agent",
                 agents[k].who);
            continue;
        }
        char where[300];
        snprintf(where, sizeof where, "channels.discord.accounts.%s.token", acc);
        agents[k].api = check_token(d, agents[k].who, where, json_string_value(
            json_object_get(json_object_get(accounts, acc), "token")), agents[k].user_id, 0);
    }
    if (!mod.api) {
        say(d, LV_WARN, "channels and permissions: not checked (they are asked with the "
            "moderator's token)", "fix the moderator token, then run the doctor again");
    } else {
        /* The guilds: discord.guildId and those OpenClaw's Discord plugin
         * is configured for; a guild with a channels map limits the check
         * to those channels. */
        json_t *guilds = at(d->root, "channels", "discord", "guilds", NULL);
        json_t *seen = json_object();
        if (c->discord_guild_id) {
            json_object_set_new(seen, c->discord_guild_id, json_true());
            check_guild(d, c->discord_guild_id, &mod, agents, c->n_agents,
                        at(guilds, c->discord_guild_id, "channels", NULL, NULL));
        } else {
            say(d, LV_WARN, "discussions: discord.guildId is not set: discuss-callback's "
                "channel creation is refused", "set discord.guildId to your server's id to "
                "enable discussions");
        }
        const char *gid;
        json_t *gv;
        json_object_foreach(guilds, gid, gv) {
            if (json_object_get(seen, gid))
                continue;
            if (!dg_is_snowflake(gid)) {
                sayf(d, LV_WARN, "write the server's id (a snowflake) as the key",
                     "channels.discord.guilds: key \"%s\" is not a guild id (OpenClaw does not "
                     "substitute ${VAR} in keys)", gid);
                continue;
            }
            json_object_set_new(seen, gid, json_true());
            check_guild(d, gid, &mod, agents, c->n_agents, json_object_get(gv, "channels"));
        }
        json_decref(seen);
        if (c->archive_channel_id) {
            char path[96];
            dg_discord_err e;
            snprintf(path, sizeof path, "/channels/%s", c->archive_channel_id);
            json_t *ch = get(mod.api, path, &e);
            if (!ch)
                sayf(d, LV_ERROR, "allow the moderator bot View Channel and Send Messages "
                     "there, or correct discussion.archiveChannelId", "discussion."
                     "archiveChannelId %s: the moderator cannot see it: %s",
                     c->archive_channel_id, e.message);
            else
                sayf(d, LV_OK, NULL, "discussion.archiveChannelId %s: visible to the "
                     "moderator", c->archive_channel_id);
            json_decref(ch);
        }
    }
    for (size_t k = 0; k < c->n_agents; k++) {
        dg_discord_free(agents[k].api);
        json_decref(agents[k].member);
    }
    free(agents);
    json_decref(mod.member);
    dg_discord_free(mod.api);
}

/* ---- the store a config names ------------------------------------------------------- */

int dg_ctl_config_store(const char *file, char **store, char *err, size_t err_len)
{
    *store = NULL;
    doctor d = {.json = 1, .claim_hooks = -1, .findings = json_array()};
    if (strcmp(file, "-") && realpath(file, d.config_file))
        setenv("OPENCLAW_CONFIG_PATH", d.config_file, 1);
    int rc = OC_ERR_INVALID;
    if (load_config(&d, file) == 0) {
        json_t *conf = at(d.root, "plugins", "entries", "dirigent", "config");
        json_t *native = json_is_object(conf) ? json_deep_copy(conf) : NULL;
        json_object_del(native, "bridge");
        if (!native)
            snprintf(err, err_len, "%s has no plugins.entries.dirigent.config", file);
        else if ((rc = dg_config_parse(native, &d.cfg, err, err_len)) == OC_OK &&
                 !(*store = strdup(d.cfg.store_url ? d.cfg.store_url : d.cfg.db_path)))
            rc = OC_ERR_NOMEM;
        json_decref(native);
    } else {
        /* What load_config found wrong, scrubbed like every finding. */
        json_t *f = json_array_get(d.findings, json_array_size(d.findings) - 1);
        snprintf(err, err_len, "%s", json_string_value(json_object_get(f, "what")));
    }
    json_decref(d.findings);
    dg_config_free(&d.cfg);
    json_decref(d.root);
    return rc;
}

/* ---- main --------------------------------------------------------------------------- */

int dg_ctl_doctor_main(int argc, char **argv, int cmd)
{
    doctor d = {.claim_hooks = -1};
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (i == cmd)
            continue;
        if (!strcmp(argv[i], "--openclaw-config") && i + 1 < argc)
            file = argv[++i];
        else if (!strcmp(argv[i], "--openclaw-version") && i + 1 < argc)
            d.version = argv[++i];
        else if (!strcmp(argv[i], "--json"))
            d.json = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(USAGE, stdout);
            return 0;
        } else {
            fprintf(stderr, "dirigent-ctl doctor: unknown argument \"%s\"\n%s", argv[i], USAGE);
            return 2;
        }
    }
    char fallback[PATH_MAX];
    if (!file)
        file = getenv("OPENCLAW_CONFIG_PATH");
    if (!file || !*file) {
        const char *home = getenv("HOME");
        snprintf(fallback, sizeof fallback, "%s/.openclaw/openclaw.json", home ? home : ".");
        file = fallback;
    }
    /* Relative dbPath and templatesDir: from the config's folder, as the
     * plugin takes them when OpenClaw names its config file. */
    if (strcmp(file, "-") && realpath(file, d.config_file))
        setenv("OPENCLAW_CONFIG_PATH", d.config_file, 1);
    d.findings = json_array();
    if (load_config(&d, file) == 0) {
        json_t *entry = at(d.root, "plugins", "entries", "dirigent", NULL);
        if (!json_is_object(entry)) {
            say(&d, LV_ERROR, "plugins.entries.dirigent is missing: OpenClaw does not start the "
                "plugin", "add it with \"enabled\": true, \"hooks\" and \"config\" (README, "
                "step 6)");
        } else {
            check_host(&d, entry);
            check_plugin_config(&d, entry);
            if (d.cfg_ok) {
                check_no_reply(&d);
                check_database(&d);
                check_discord(&d);
            } else {
                say(&d, LV_WARN, "database, no-reply provider and Discord: not checked (the "
                    "plugin config is not valid)", "fix the plugin config first");
            }
        }
    }
    if (d.json) {
        json_t *o = json_pack("{s:b,s:i,s:i,s:O}", "ok", d.errors == 0, "errors", d.errors,
                              "warnings", d.warnings, "findings", d.findings);
        char *s = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
        puts(s ? s : "null");
        free(s);
        json_decref(o);
    } else {
        printf("%d error%s, %d warning%s\n", d.errors, d.errors == 1 ? "" : "s", d.warnings,
               d.warnings == 1 ? "" : "s");
    }
    json_decref(d.findings);
    dg_config_free(&d.cfg);
    json_decref(d.root);
    return d.errors ? 1 : 0;
}
