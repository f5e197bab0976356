/*
 * client.c -- the Slack client's life: options and their checks, the bot
 * token's shape, new/free, the abort switch. See slack.h.
 */
#include "slack_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifndef DG_VERSION
#define DG_VERSION "0"
#endif

/* The bounds of a client whose options leave them 0. */
static const dgh_limits default_limits = {
    .timeout_ms = 15000,
    .connect_ms = 5000,
    .backoff_base_ms = 250,
    .backoff_max_ms = 4000,
    .max_attempts = 4,
    .max_idle = 4,
};

int dg_slack_check_token(const char *token, char *why, size_t why_len)
{
    char scratch[4];
    if (!why || !why_len) {
        why = scratch;
        why_len = sizeof scratch;
    }
    why[0] = '\0';
    if (!token || !*token) {
        snprintf(why, why_len,
                 "the moderator's Slack bot token is missing: set it in the environment to the "
                 "app's Bot User OAuth Token (xoxb-...)");
        return DG_ERR_INVALID;
    }
    const char *kind = !strncmp(token, "xoxp-", 5)   ? "a user token (xoxp-)"
                       : !strncmp(token, "xapp-", 5) ? "an app-level token (xapp-, for Socket "
                                                       "Mode only)"
                       : !strncmp(token, "xoxb-", 5) ? NULL
                                                     : "no Slack bot token";
    if (kind) {
        snprintf(why, why_len,
                 "the moderator's Slack token is %s: it must be the app's Bot User OAuth Token, "
                 "which starts with xoxb- (OAuth & Permissions page of the app)",
                 kind);
        return DG_ERR_INVALID;
    }
    size_t n = strlen(token);
    for (const char *p = token; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-')) {
            snprintf(why, why_len,
                     "the moderator's Slack bot token has a character other than letters, digits "
                     "and '-' at byte %zu (a quote, space or newline copied with it?): copy the "
                     "token again",
                     (size_t)(p - token) + 1);
            return DG_ERR_INVALID;
        }
    if (n < 15 || n > 255) {
        snprintf(why, why_len,
                 "the moderator's Slack bot token is %zu bytes long, Slack's are 15..255: copy "
                 "the whole Bot User OAuth Token (xoxb-...) again",
                 n);
        return DG_ERR_INVALID;
    }
    return DG_OK;
}

/* api_base: https://, or http:// to a loopback host only. */
static int base_ok(const char *b, char *err, size_t err_len)
{
    if (!strncmp(b, "https://", 8) && b[8])
        return 1;
    static const char *const local[] = {"http://127.0.0.1", "http://localhost", "http://[::1]"};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) {
        size_t n = strlen(local[i]);
        if (!strncmp(b, local[i], n) && (b[n] == ':' || b[n] == '/' || b[n] == '\0'))
            return 1;
    }
    snprintf(err, err_len,
             "slack apiBase must be an https:// URL (http:// only to 127.0.0.1 or localhost, "
             "for tests); got one that is neither: leave it unset for %s",
             DG_SLACK_API_BASE);
    return 0;
}

/* The checks of o that need no memory; 0, or -1 with err set. */
static int options_ok(const dg_slack_options *o, char *err, size_t err_len)
{
    char why[320];
    if (dg_slack_check_token(o->token, why, sizeof why) != DG_OK) {
        snprintf(err, err_len, "%s", why);
        return -1;
    }
    if (o->api_base && !base_ok(o->api_base, err, err_len))
        return -1;
    if (o->timeout_ms < 0 || o->connect_timeout_ms < 0 || o->max_attempts < 0 ||
        o->backoff_base_ms < 0 || o->backoff_max_ms < 0 || o->max_idle_handles < 0 ||
        o->pace_scale < 0) {
        snprintf(err, err_len,
                 "slack options: timeouts, attempts, back-off, handles and pace_scale must not "
                 "be negative (0 means the default)");
        return -1;
    }
    if (o->max_text > DG_SLACK_TEXT_HARD) {
        snprintf(err, err_len,
                 "slack options: max_text %zu is above Slack's %d characters (Slack truncates "
                 "longer text); use at most %d",
                 o->max_text, DG_SLACK_TEXT_HARD, DG_SLACK_TEXT_HARD);
        return -1;
    }
    return 0;
}

/* Slack's own settings of s from o (0: the default), and the bounds of
 * its requests into lim. */
static void set_defaults(dg_slack *s, const dg_slack_options *o, dgh_limits *lim)
{
    const dgh_limits given = DGH_LIMITS_GIVEN(o);
    dgh_limits_pick(lim, &given, &default_limits);
    s->max_text = o->max_text ? o->max_text : DG_SLACK_TEXT_DEFAULT;
    s->no_pacing = o->no_pacing;
    s->pace_scale = o->pace_scale > 0 ? o->pace_scale : 1.0;
}

/* Overwrite a secret before its memory goes back to the allocator. */
static void wipe_free(char *p)
{
    if (!p)
        return;
    volatile char *v = p;
    while (*v)
        *v++ = '\0';
    free(p);
}

/* The base URL and the fixed headers of every request: the token's
 * Authorization and the form's Content-Type (the User-Agent is set per
 * transfer). DG_OK or DG_ERR_NOMEM; the token's copy made here is wiped
 * before it is freed (the list's is wiped by dgh_destroy). */
static int set_endpoint(dg_slack *s, const dg_slack_options *o)
{
    char *auth = dg_sprintf("Authorization: Bearer %s", o->token);
    if (!auth)
        return DG_ERR_NOMEM;
    const char *const lines[] = {auth, "Content-Type: application/x-www-form-urlencoded"};
    int rc = dgh_set_endpoint(&s->http, o->api_base ? o->api_base : DG_SLACK_API_BASE, lines,
                              sizeof lines / sizeof *lines);
    wipe_free(auth);
    return rc;
}

int dg_slack_new(const dg_slack_options *o, dg_slack **out, char *err, size_t err_len)
{
    char scratch[4];
    if (!err || !err_len) {
        err = scratch;
        err_len = sizeof scratch;
    }
    err[0] = '\0';
    *out = NULL;
    if (!o) {
        snprintf(err, err_len, "slack options: none given");
        return DG_ERR_INVALID;
    }
    if (options_ok(o, err, err_len) != 0)
        return DG_ERR_INVALID;
    /* A failure of libcurl's global init shows at the first call, as no
     * transfer handle. */
    (void)dgh_global_init();
    dg_slack *s = calloc(1, sizeof *s);
    if (!s)
        return DG_ERR_NOMEM;
    dgh_limits lim;
    set_defaults(s, o, &lim);
    if (dgh_init(&s->http, &lim, o->log, o->log_state, &s->mu, &s->cond) != DG_OK) {
        free(s);
        return DG_ERR_NOMEM;
    }
    s->token = strdup(o->token);
    s->http.secret = s->token;
    s->user_agent =
        o->user_agent ? strdup(o->user_agent) : dg_sprintf("dirigent/%s (slack)", DG_VERSION);
    if (!s->token || !s->user_agent || set_endpoint(s, o) != DG_OK) {
        dg_slack_free(s);
        return DG_ERR_NOMEM;
    }
    *out = s;
    return DG_OK;
}

void dg_slack_free(dg_slack *s)
{
    if (!s)
        return;
    dgh_destroy(&s->http);
    dg_map_each(&s->paces, dgs_pace_free, NULL);
    dg_map_clear(&s->paces);
    wipe_free(s->token);
    free(s->user_agent);
    free(s);
}

void dg_slack_set_abort(dg_slack *s, int on)
{
    dgh_set_abort(&s->http, on);
}

size_t dg_slack_max_text(const dg_slack *s)
{
    return s->max_text;
}
