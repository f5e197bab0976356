/*
 * ctl_doctor.c -- `dirigent-ctl doctor --openclaw-config FILE`: what would
 * keep the plugin from working, found before the first start.
 *
 * It reads the OpenClaw config as OpenClaw resolves it (plain JSON; ${VAR}
 * in string values from the environment or env.vars, $${VAR} a literal),
 * validates plugins.entries.dirigent.config with the plugin's own parser
 * (config.c, as init does), and asks Discord read-only questions with each
 * configured token (ctl_doctor_discord.c). It writes nothing: the database is opened read-only, the
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
#include "ctl_doctor_int.h"
#include "discord.h"
#include "openclaw/plugin.h"
#include "scrub.h"
#include "store.h"
#include "store_operator.h"

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


void doctor_keep_secret(doctor *d, const char *s)
{
    if (s && *s && d->n_secrets < DOCTOR_MAX_SECRETS)
        d->secrets[d->n_secrets++] = s;
}

/* One finding; what and fix are formatted by the caller. fix NULL: none. */
void doctor_say(doctor *d, doctor_level lv, const char *what, const char *fix)
{
    static const char *const names[] = {"ok", "warn", "error"};
    char w[DOCTOR_TEXT_MAX * 2], f[DOCTOR_TEXT_MAX * 2];
    snprintf(w, sizeof w, "%s", what);
    snprintf(f, sizeof f, "%s", fix ? fix : "");
    for (size_t i = 0; i < d->n_secrets; i++) {
        dg_scrub_secret(w, d->secrets[i]);
        dg_scrub_secret(f, d->secrets[i]);
    }
    d->errors += lv == DOCTOR_ERROR;
    d->warnings += lv == DOCTOR_WARN;
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

/* doctor_say() with printf-style what; fix is fixed text or NULL. */
void doctor_sayf(doctor *d, doctor_level lv, const char *fix, const char *fmt, ...)
{
    char what[DOCTOR_TEXT_MAX * 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    doctor_say(d, lv, what, fix);
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
                doctor_sayf(d, DOCTOR_WARN,
                            "export it in the environment the gateway runs with (a "
                            "service: its EnvironmentFile), or run the doctor in that environment",
                            "config: ${%s} (in %s) is not set in this environment: OpenClaw leaves "
                            "it unresolved",
                            var, where);
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

json_t *doctor_at(json_t *o, const char *a, const char *b, const char *c, const char *e)
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
            doctor_sayf(d, DOCTOR_ERROR,
                        "give --openclaw-config the path of openclaw.json (or set "
                        "OPENCLAW_CONFIG_PATH)",
                        "config: cannot read %s (%s)", file, strerror(errno));
            return -1;
        }
        if (f)
            fclose(f);
        doctor_sayf(
            d, DOCTOR_ERROR,
            "the doctor reads plain JSON; for a config with JSON5 comments or "
            "trailing commas run `openclaw dirigent doctor`, which reads it as OpenClaw does",
            "config: %s is not JSON (line %d: %s)", file, je.line, je.text);
        return -1;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        doctor_sayf(d, DOCTOR_ERROR, "give --openclaw-config OpenClaw's openclaw.json",
                    "config: %s is not a JSON object", file);
        return -1;
    }
    d->root = root;
    d->env_vars = doctor_at(root, "env", "vars", NULL, NULL);
    json_t *told = json_object();
    int rc = resolve(d, root, "", told);
    json_decref(told);
    if (rc) {
        doctor_say(d, DOCTOR_ERROR, "config: out of memory substituting ${VAR}s", NULL);
        return -1;
    }
    if (!strcmp(file, "-"))
        doctor_say(d, DOCTOR_OK, "config: the config OpenClaw resolved read (stdin)", NULL);
    else
        doctor_sayf(d, DOCTOR_OK, NULL, "config: %s read, ${VAR}s substituted as OpenClaw does",
                    file);
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
        doctor_say(
            d, DOCTOR_ERROR,
            "plugins.entries.dirigent.hooks.allowConversationAccess is not true: "
            "OpenClaw runs no typed hook of a plugin that is not bundled without it, so no turn "
            "is ever taken",
            "add \"hooks\": {\"allowConversationAccess\": true, "
            "\"allowPromptInjection\": true} to plugins.entries.dirigent");
    else
        doctor_say(d, DOCTOR_OK, "plugins.entries.dirigent.hooks.allowConversationAccess is true",
                   NULL);
    if (json_is_object(hooks) && !json_is_true(json_object_get(hooks, "allowPromptInjection")))
        doctor_say(d, DOCTOR_WARN,
                   "plugins.entries.dirigent.hooks.allowPromptInjection is not true: the "
                   "session-model text is not added to prompts",
                   "set \"allowPromptInjection\": true "
                   "beside allowConversationAccess");
    if (json_is_false(json_object_get(entry, "enabled")))
        doctor_say(d, DOCTOR_WARN,
                   "plugins.entries.dirigent.enabled is false: the plugin does not load",
                   "set \"enabled\": true (or `openclaw plugins enable dirigent`)");
    if (!d->version)
        d->version =
            json_string_value(doctor_at(d->root, "meta", "lastTouchedVersion", NULL, NULL));
    int y = 0, m = 0;
    if (!parse_version(d->version, &y, &m)) {
        d->claim_hooks = -1;
        doctor_say(d, DOCTOR_WARN,
                   "OpenClaw version: unknown (no --openclaw-version, no "
                   "meta.lastTouchedVersion in the config): cannot tell whether it has claim hooks "
                   "(before_agent_reply, OpenClaw 2026.9 and later)",
                   "give --openclaw-version "
                   "(`openclaw --version`), or run `openclaw dirigent doctor`");
        return;
    }
    d->claim_hooks = y > CLAIM_YEAR || (y == CLAIM_YEAR && m >= CLAIM_MONTH);
    if (d->claim_hooks)
        doctor_sayf(d, DOCTOR_OK, NULL,
                    "OpenClaw %s has the claim hooks (before_agent_reply, "
                    "reply_payload_sending): agents without the turn make no model call",
                    d->version);
    else
        doctor_sayf(d, DOCTOR_WARN,
                    "upgrade OpenClaw to 2026.9 or later (`npm i -g openclaw@latest`)",
                    "OpenClaw %s has no claim hooks: agents without the turn are switched to the "
                    "no-reply model (each such run still reaches it)",
                    d->version);
}

static void check_plugin_config(doctor *d, json_t *entry)
{
    json_t *conf = json_object_get(entry, "config");
    if (!json_is_object(conf)) {
        doctor_say(
            d, DOCTOR_ERROR, "plugins.entries.dirigent.config is missing or not an object",
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
        doctor_sayf(d, DOCTOR_ERROR, "correct plugins.entries.dirigent.config as the message says",
                    "plugin config: %s", err);
        return;
    }
    d->cfg_ok = 1;
    doctor_keep_secret(d, d->cfg.moderator_token);
    doctor_sayf(d, DOCTOR_OK, NULL,
                "plugin config: valid (the plugin's own validation): %zu agent%s, "
                "sessionPolicy %s",
                d->cfg.n_agents, d->cfg.n_agents == 1 ? "" : "s",
                dg_session_policy_name(d->cfg.session_policy));
    if (d->claim_hooks >= 0 &&
        dg_config_require_no_reply(&d->cfg, d->claim_hooks, err, sizeof err) != OC_OK)
        doctor_sayf(d, DOCTOR_ERROR,
                    "set both in plugins.entries.dirigent.config, with a provider in "
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
            doctor_say(d, DOCTOR_OK,
                       "no-reply provider: none configured, none needed (claim hooks)", NULL);
        return;
    }
    if (d->claim_hooks == 1) {
        doctor_sayf(
            d, DOCTOR_OK, NULL,
            "no-reply provider: \"%s\" is configured but never used on a host "
            "with claim hooks (not contacted); noReplyProvider/noReplyModel and the provider "
            "may be dropped",
            d->cfg.no_reply_provider);
        return;
    }
    json_t *prov = doctor_at(d->root, "models", "providers", d->cfg.no_reply_provider, NULL);
    if (!json_is_object(prov)) {
        doctor_sayf(d, DOCTOR_ERROR, "add it to models.providers (README: the no-reply provider)",
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
        doctor_sayf(d, DOCTOR_ERROR,
                    "add {\"id\": \"<noReplyModel>\", ...} to that provider's models",
                    "no-reply provider: models.providers.%s has no model \"%s\" (noReplyModel)",
                    d->cfg.no_reply_provider, d->cfg.no_reply_model);
    const char *base = json_string_value(json_object_get(prov, "baseUrl"));
    const char *key = json_string_value(json_object_get(prov, "apiKey"));
    doctor_keep_secret(d, key);
    if (!base || strstr(base, "${")) {
        doctor_sayf(d, DOCTOR_ERROR, "set its baseUrl (and the variables in it)",
                    "no-reply provider: models.providers.%s.baseUrl is %s",
                    d->cfg.no_reply_provider, base ? "not resolved" : "missing");
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
        doctor_sayf(d, DOCTOR_ERROR,
                    "start dirigent-noreply (README: the no-reply provider) or correct "
                    "baseUrl",
                    "no-reply provider: %s does not answer (%s)", base, curl_easy_strerror(cr));
    else if (code != 200)
        doctor_sayf(d, DOCTOR_ERROR,
                    "give the provider's apiKey the server's token "
                    "(DIRIGENT_NOREPLY_TOKEN)",
                    "no-reply provider: GET %s/models answered HTTP %ld", base, code);
    else
        doctor_sayf(d, DOCTOR_OK, NULL,
                    "no-reply provider: %s answers (needed: this host has no claim "
                    "hooks)",
                    base);
}

/* ---- the database ------------------------------------------------------------------ */

/* The PostgreSQL store of storeUrl: reachable, and dirigent's or empty. */
static void check_store_url(doctor *d)
{
    char err[1024] = "";
    dg_store *st = NULL;
    int rc = dg_store_open_readonly(d->cfg.store_url, &st, err, sizeof err);
    dg_store_close(st);
    if (rc == OC_OK || rc == OC_ERR_UNSUPPORTED)
        doctor_say(d, rc == OC_OK ? DOCTOR_OK : DOCTOR_WARN,
                   rc == OC_OK ? "database: the PostgreSQL store "
                                 "is reachable and holds dirigent's tables"
                               : err,
                   rc == OC_OK
                       ? NULL
                       : "start the plugin of this version once, or use the matching dirigent-ctl");
    else
        doctor_sayf(d, DOCTOR_WARN,
                    "make sure the database is reachable and holds dirigent's tables "
                    "or none",
                    "database: %s (a new empty database is set up at the first "
                    "start)",
                    err);
}

/* dbPath names an existing file sb: a regular file we may write, empty or
 * dirigent's database. */
static void check_db_file(doctor *d, const char *path, const struct stat *sb)
{
    char err[1024] = "";
    dg_store *st = NULL;
    if (!S_ISREG(sb->st_mode)) {
        doctor_sayf(d, DOCTOR_ERROR, "point dbPath at a file (it may not exist yet)",
                    "database: dbPath %s is not a regular file", path);
        return;
    }
    if (access(path, R_OK | W_OK) != 0) {
        doctor_sayf(d, DOCTOR_ERROR,
                    "give the gateway's user read and write access to it, or choose "
                    "another dbPath",
                    "database: dbPath %s is not writable (%s)", path, strerror(errno));
        return;
    }
    if (sb->st_size == 0) {
        doctor_sayf(d, DOCTOR_OK, NULL,
                    "database: dbPath %s is an empty file: set up at the first "
                    "start",
                    path);
        return;
    }
    int rc = dg_store_open_readonly(path, &st, err, sizeof err);
    dg_store_close(st);
    if (rc == OC_OK)
        doctor_sayf(d, DOCTOR_OK, NULL, "database: dbPath %s is dirigent's database, writable",
                    path);
    else if (rc == OC_ERR_UNSUPPORTED)
        doctor_sayf(d, DOCTOR_WARN,
                    "start the plugin of this version once (it migrates an older file) "
                    "or use the newer one's dirigent-ctl",
                    "database: %s", err);
    else
        doctor_sayf(d, DOCTOR_ERROR,
                    "choose a dbPath of its own for the plugin (it never writes into "
                    "another application's file)",
                    "database: dbPath %s holds another "
                    "application's data, not dirigent's (%s)",
                    path,
                    rc == OC_ERR_INVALID ? "a SQLite database without the plugin's stamp and "
                                           "tables"
                                         : "not a SQLite database");
}

/* dbPath does not exist yet: the nearest folder that exists must let the
 * plugin create it (it creates the missing folders, mode 0700). */
static void check_db_folder(doctor *d, const char *path)
{
    struct stat sb;
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
        doctor_sayf(d, DOCTOR_ERROR, "choose a dbPath under a folder that exists",
                    "database: dbPath %s: %s is not a folder", path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        doctor_sayf(d, DOCTOR_ERROR,
                    "give the gateway's user write access to that folder, or choose "
                    "another dbPath",
                    "database: dbPath %s cannot be created: %s is not writable (%s)", path, dir,
                    strerror(errno));
    else
        doctor_sayf(d, DOCTOR_OK, NULL,
                    "database: dbPath %s does not exist yet; it is created at the "
                    "first start (%s is writable)",
                    path, dir);
}

static void check_database(doctor *d)
{
    if (d->cfg.store_url) {
        check_store_url(d);
        return;
    }
    const char *path = d->cfg.db_path;
    struct stat sb;
    if (stat(path, &sb) == 0) {
        check_db_file(d, path, &sb);
        return;
    }
    if (errno != ENOENT && errno != ENOTDIR) {
        doctor_sayf(d, DOCTOR_ERROR,
                    "give the gateway's user access to the folder, or choose another "
                    "dbPath",
                    "database: dbPath %s cannot be examined (%s)", path, strerror(errno));
        return;
    }
    check_db_folder(d, path);
}

/* ---- the store a config names ------------------------------------------------------- */

int dg_ctl_config_load(const char *file, dg_config *cfg, char *err, size_t err_len)
{
    memset(cfg, 0, sizeof *cfg);
    doctor d = {.json = 1, .claim_hooks = -1, .findings = json_array()};
    if (strcmp(file, "-") && realpath(file, d.config_file))
        setenv("OPENCLAW_CONFIG_PATH", d.config_file, 1);
    int rc = OC_ERR_INVALID;
    if (load_config(&d, file) == 0) {
        json_t *conf = doctor_at(d.root, "plugins", "entries", "dirigent", "config");
        json_t *native = json_is_object(conf) ? json_deep_copy(conf) : NULL;
        json_object_del(native, "bridge");
        if (!native)
            snprintf(err, err_len, "%s has no plugins.entries.dirigent.config", file);
        else
            rc = dg_config_parse(native, cfg, err, err_len);
        json_decref(native);
    } else {
        /* What load_config found wrong, scrubbed like every finding. */
        json_t *f = json_array_get(d.findings, json_array_size(d.findings) - 1);
        snprintf(err, err_len, "%s", json_string_value(json_object_get(f, "what")));
    }
    json_decref(d.findings);
    json_decref(d.root);
    return rc;
}

int dg_ctl_config_store(const char *file, char **store, char *err, size_t err_len)
{
    *store = NULL;
    dg_config cfg;
    int rc = dg_ctl_config_load(file, &cfg, err, err_len);
    if (rc == OC_OK && !(*store = strdup(cfg.store_url ? cfg.store_url : cfg.db_path)))
        rc = OC_ERR_NOMEM;
    dg_config_free(&cfg);
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
        json_t *entry = doctor_at(d.root, "plugins", "entries", "dirigent", NULL);
        if (!json_is_object(entry)) {
            doctor_say(&d, DOCTOR_ERROR,
                       "plugins.entries.dirigent is missing: OpenClaw does not start the "
                       "plugin",
                       "add it with \"enabled\": true, \"hooks\" and \"config\" (README, "
                       "step 6)");
        } else {
            doctor_check_placeholders(&d);
            check_host(&d, entry);
            check_plugin_config(&d, entry);
            if (d.cfg_ok) {
                check_no_reply(&d);
                check_database(&d);
                if (d.cfg.has_discord)
                    doctor_check_discord(&d);
                if (d.cfg.has_slack)
                    doctor_check_slack(&d);
            } else {
                doctor_say(&d, DOCTOR_WARN,
                           "database, no-reply provider and Discord: not checked (the "
                           "plugin config is not valid)",
                           "fix the plugin config first");
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
