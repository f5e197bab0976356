/*
 * client.c -- the Discord client's life: its options checked and applied,
 * the fixed headers, the abort switch, the free; and the raw request
 * (dg_discord_request). See discord.h.
 */
#include "discord_int.h"

#ifndef DG_VERSION
#define DG_VERSION "0.0.0"
#endif

/* The bounds of a client whose options leave them 0. */
static const dgh_limits default_limits = {
    .timeout_ms = 15000,
    .connect_ms = 5000,
    .backoff_base_ms = 250,
    .backoff_max_ms = 4000,
    .max_attempts = 5,
    .max_idle = 4,
};

/* The options' rules, checked before anything is made: DG_OK, or
 * DG_ERR_INVALID with the field and its rule in err. */
static int check_options(const dg_discord_options *o, char *err, size_t err_len)
{
    if (!o || !o->api_base ||
        (strncmp(o->api_base, "https://", 8) != 0 && strncmp(o->api_base, "http://", 7) != 0)) {
        snprintf(err, err_len,
                 "discord.apiBase must be an http:// or https:// URL such as "
                 "https://discord.com/api/v10");
        return DG_ERR_INVALID;
    }
    if (!o->token || !*o->token || strpbrk(o->token, "\r\n \t")) {
        snprintf(err, err_len,
                 "discord.moderatorToken is missing or contains whitespace; set "
                 "the bot token (without the \"Bot \" prefix)");
        return DG_ERR_INVALID;
    }
    if (o->guild_id && !dg_snowflake_valid(o->guild_id)) {
        snprintf(err, err_len, "discord.guildId must be a snowflake (1-20 digits)");
        return DG_ERR_INVALID;
    }
    if (o->timeout_ms < 0 || o->connect_timeout_ms < 0 || o->max_attempts < 0 ||
        o->backoff_base_ms < 0 || o->backoff_max_ms < 0 || o->max_idle_handles < 0) {
        snprintf(err, err_len, "discord: timeouts, attempts and back-off must not be negative");
        return DG_ERR_INVALID;
    }
    return DG_OK;
}

/* The bounds of d's requests from o (0: the default). */
static void pick_limits(const dg_discord_options *o, dgh_limits *lim)
{
    const dgh_limits given = DGH_LIMITS_GIVEN(o);
    dgh_limits_pick(lim, &given, &default_limits);
    if (lim->backoff_max_ms < lim->backoff_base_ms)
        lim->backoff_max_ms = lim->backoff_base_ms;
}

/* The base URL and the fixed headers of every request, in the order
 * struct dg_discord describes: "Expect:", the token's Authorization,
 * Content-Type, User-Agent. The User-Agent is one more header of the list,
 * not CURLOPT_USERAGENT: curl formats that option into a new string on
 * every transfer, a header of the list is copied as it is. DG_OK or
 * DG_ERR_NOMEM; the token's copies made here are wiped before they are
 * freed (the list's is wiped by dgh_destroy). */
static int set_endpoint(dg_discord *d, const dg_discord_options *o)
{
    const char *agent = o->user_agent ? o->user_agent : "DiscordBot (dirigent, " DG_VERSION ")";
    size_t al = strlen(o->token) + 32, ul = strlen(agent) + sizeof "User-Agent: ";
    char *auth = malloc(al), *ua = malloc(ul);
    int rc = DG_ERR_NOMEM;
    if (auth && ua) {
        snprintf(auth, al, DGD_AUTH_PREFIX "%s", o->token);
        snprintf(ua, ul, "User-Agent: %s", agent);
        const char *const lines[] = {"Expect:", auth, "Content-Type: application/json", ua};
        rc = dgh_set_endpoint(&d->http, o->api_base, lines, sizeof lines / sizeof *lines);
    }
    if (auth)
        memset(auth, 0, al);
    free(auth);
    free(ua);
    if (rc != DG_OK)
        return rc;
    d->short_headers = d->http.headers->next;
    /* The token lives only in its header: a server may echo the request (a
     * proxy's error page, an apiBase pointing at the wrong thing), and what
     * it says travels on into err->message: tool results an agent sees, the
     * outbox's stored last_error, logs. */
    d->http.secret = d->short_headers->data + strlen(DGD_AUTH_PREFIX);
    return DG_OK;
}

int dg_discord_new(const dg_discord_options *o, dg_discord **out, char *err, size_t err_len)
{
    char scratch[4];
    if (!err || !err_len) {
        err = scratch;
        err_len = sizeof scratch;
    }
    err[0] = '\0';
    if (!out) {
        snprintf(err, err_len, "discord: no place to store the client");
        return DG_ERR_INVALID;
    }
    *out = NULL;
    int rc = check_options(o, err, err_len);
    if (rc != DG_OK)
        return rc;
    CURLcode cc = dgh_global_init();
    if (cc != CURLE_OK) {
        snprintf(err, err_len, "discord: libcurl failed to initialise: %s", curl_easy_strerror(cc));
        return DG_ERR_INTERNAL;
    }

    dg_discord *d = calloc(1, sizeof *d);
    dgh_limits lim;
    pick_limits(o, &lim);
    if (d && dgh_init(&d->http, &lim, o->log, o->log_state, &d->mu, &d->cond) != DG_OK) {
        free(d);
        d = NULL;
    }
    if (!d) {
        snprintf(err, err_len, "discord: out of memory creating the client");
        return DG_ERR_NOMEM;
    }
    d->guild_id = dgd_strdup(o->guild_id);
    if ((o->guild_id && !d->guild_id) || set_endpoint(d, o) != DG_OK) {
        dg_discord_free(d);
        snprintf(err, err_len, "discord: out of memory creating the client");
        return DG_ERR_NOMEM;
    }
    *out = d;
    return DG_OK;
}

void dg_discord_free(dg_discord *d)
{
    if (!d)
        return;
    dgh_destroy(&d->http);
    dg_map_each(&d->routes, dgd_route_free, NULL);
    dg_map_clear(&d->routes);
    free(d->guild_id);
    free(d);
}

void dg_discord_set_abort(dg_discord *d, int on)
{
    if (d)
        dgh_set_abort(&d->http, on);
}

const char *dg_discord_guild_id(const dg_discord *d)
{
    return d ? d->guild_id : NULL;
}

/* The request body as text, or NULL when it cannot be made; takes j.
 * bad: a member could not be added while building j (out of memory), so
 * j is not the request meant. The text is read back and compared:
 * jansson 2.14's json_dumps can return text without an object key (which
 * Discord refuses as invalid JSON) when one of its allocations fails. */
char *dgd_dump_checked(json_t *j, int bad)
{
    char *s = j && !bad ? json_dumps(j, JSON_COMPACT) : NULL;
    json_t *back = s ? json_loads(s, 0, NULL) : NULL;
    if (s && !json_equal(back, j)) {
        free(s);
        s = NULL;
    }
    json_decref(back);
    json_decref(j);
    return s;
}

int dg_discord_request(dg_discord *d, const char *method, const char *path, const json_t *body,
                       int idempotent, json_t **response, dg_discord_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (response)
        *response = NULL;
    if (!d || !method || !path || path[0] != '/')
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "discord request: method and a path starting with '/' are required");
    if (body && !json_is_object(body) && !json_is_array(body))
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "discord request: the body must be a JSON object or array");
    char *json = NULL;
    if (body && !(json = dgd_dump_checked(json_incref((json_t *)body), 0)))
        return dgd_set_err(err, DG_ERR_NOMEM, 0, 1,
                           "discord request: out of memory encoding the body");
    int rc = dgd_do_request(d, method, path, json, idempotent, response, err);
    free(json);
    return rc;
}
