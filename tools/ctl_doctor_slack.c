/*
 * ctl_doctor_slack.c -- the doctor's Slack questions, read-only: which Web
 * API it talks to (slack.apiBase, else SLACK_API_URL, else Slack's), who
 * each bot token belongs to (auth.test), the moderator's scopes (Slack's
 * x-oauth-scopes header) against what discussions need, and who of the
 * moderator and the agents is a member of each configured channel
 * (conversations.members). JSON at this edge only; no token is printed.
 */
#include "ctl_doctor_int.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "slack.h"

/* What the moderator app needs, and for what (docs/slack.md). */
static const struct {
    const char *scope, *for_what;
} MODERATOR_SCOPES[] = {
    {"chat:write", "hand-offs and discussion messages"},
    {"channels:history", "finding a post again after a crash (public channels)"},
    {"groups:history", "finding a post again after a crash (private channels)"},
    {"channels:read", "channel info and members"},
    {"groups:read", "a private discussion channel's info and members"},
    {"groups:write", "discussions: create a private channel, invite, archive"},
    {"users:read", "the agents' names"},
};

/* A bot: who it is configured as and what its token says. */
typedef struct slack_bot {
    const char *who;     /* "moderator" or the agent id (borrowed) */
    const char *user_id; /* configured U... (borrowed) */
    const char *token;   /* borrowed; NULL: none usable */
} slack_bot;

typedef struct call_out {
    dg_buf body;
    char scopes[1024]; /* x-oauth-scopes, "" when not sent */
} call_out;

static size_t on_body(char *p, size_t size, size_t n, void *u)
{
    call_out *o = u;
    return dg_buf_add(&o->body, p, size * n) ? 0 : size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *u)
{
    call_out *o = u;
    size_t len = size * n;
    static const char name[] = "x-oauth-scopes:";
    if (len > sizeof name - 1 && !strncasecmp(p, name, sizeof name - 1)) {
        const char *v = p + sizeof name - 1;
        size_t vl = len - (sizeof name - 1);
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        snprintf(o->scopes, sizeof o->scopes, "%.*s", (int)vl, v);
    }
    return len;
}

/* POST method with the form args (may be NULL) and token: Slack's answer
 * (caller decrefs; its "ok" may be false) and the scopes header into
 * *scopes (may be NULL), or NULL with the transport's failure in why. */
static json_t *slack_call(doctor *d, const char *token, const char *method, const char *args,
                          char *scopes, size_t scopes_len, char *why, size_t why_len)
{
    char *url = dg_sprintf("%s/%s", d->cfg.slack_api_base, method);
    char *auth = dg_sprintf("Authorization: Bearer %s", token);
    CURL *c = curl_easy_init();
    struct curl_slist *h = auth ? curl_slist_append(NULL, auth) : NULL;
    call_out o = {.scopes = ""};
    json_t *answer = NULL;
    if (url && auth && c && h) {
        long t = d->cfg.slack_timeout_ms < 10000 ? d->cfg.slack_timeout_ms : 10000;
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, args ? args : "");
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &o);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &o);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, t > 0 ? t : 10000L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        CURLcode cc = curl_easy_perform(c);
        long http = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
        if (cc != CURLE_OK)
            snprintf(why, why_len, "%s: %s", method, curl_easy_strerror(cc));
        else if (!(answer = json_loadb(o.body.s ? o.body.s : "", o.body.len, 0, NULL)))
            snprintf(why, why_len, "%s: HTTP %ld, not Slack's JSON (is slack.apiBase %s Slack's?)",
                     method, http, d->cfg.slack_api_base);
    } else {
        snprintf(why, why_len, "%s: out of memory", method);
    }
    if (scopes)
        snprintf(scopes, scopes_len, "%s", o.scopes);
    dg_buf_free(&o.body);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    /* the header held the token: wipe it before it goes back to the heap */
    if (auth)
        memset(auth, 0, strlen(auth));
    free(auth);
    free(url);
    return answer;
}

static const char *str_of(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* auth.test with b's token: 1 when it is the configured bot (an ok line),
 * else 0 after an error line. The moderator's scopes into scopes. */
static int check_identity(doctor *d, slack_bot *b, const char *where, char *scopes,
                          size_t scopes_len)
{
    char why[512] = "";
    if (!b->token || !*b->token || strstr(b->token, "${")) {
        doctor_sayf(d, DOCTOR_ERROR,
                    !strcmp(b->who, "moderator")
                        ? "export DIRIGENT_SLACK_MODERATOR_TOKEN (the moderator app's xoxb- "
                          "token) in the gateway's environment; never write it into the config"
                        : "export the variable the account's botToken names (the agent app's "
                          "xoxb- token) in the gateway's environment",
                    "Slack %s: no bot token (%s %s)", b->who, where,
                    !b->token || !*b->token ? "is not set" : "names a variable that is not set");
        b->token = NULL;
        return 0;
    }
    doctor_keep_secret(d, b->token);
    if (dg_slack_check_token(b->token, why, sizeof why) != DG_OK) {
        doctor_sayf(d, DOCTOR_ERROR, "give it the app's Bot User OAuth Token (xoxb-...)",
                    "Slack %s: %s: %s", b->who, where, why);
        b->token = NULL;
        return 0;
    }
    json_t *me = slack_call(d, b->token, "auth.test", NULL, scopes, scopes_len, why, sizeof why);
    if (!me || !json_is_true(json_object_get(me, "ok"))) {
        const char *code = me ? str_of(me, "error") : NULL;
        if (code)
            doctor_sayf(d, DOCTOR_ERROR,
                        "copy the app's current Bot User OAuth Token (OAuth & Permissions) "
                        "into the variable; reinstall the app if it was revoked",
                        "Slack %s: Slack refuses the token of %s (auth.test: %s)", b->who, where,
                        code);
        else
            doctor_sayf(d, DOCTOR_ERROR,
                        "check slack.apiBase / SLACK_API_URL and the network (DNS, proxy); the "
                        "token was not judged",
                        "Slack %s: auth.test with the token of %s failed: %s", b->who, where, why);
        json_decref(me);
        b->token = NULL;
        return 0;
    }
    const char *uid = str_of(me, "user_id"), *name = str_of(me, "user");
    const char *team = str_of(me, "team"), *bot_id = str_of(me, "bot_id");
    int ok = uid && !strcmp(uid, b->user_id) && bot_id && *bot_id;
    if (!uid || strcmp(uid, b->user_id))
        doctor_sayf(d, DOCTOR_ERROR,
                    !strcmp(b->who, "moderator")
                        ? "give DIRIGENT_SLACK_MODERATOR_TOKEN the moderator app's token, or set "
                          "slack.moderatorUserId to the id of the bot that token belongs to"
                        : "give the account the token of the agent's own app, or correct "
                          "agents.<id>.slackUserId",
                    "Slack %s: the token of %s belongs to %s (%s), not to the configured user %s",
                    b->who, where, name ? name : "another user", uid ? uid : "?", b->user_id);
    else if (!bot_id || !*bot_id)
        doctor_sayf(d, DOCTOR_ERROR, "use the app's bot token (xoxb-), not a user's",
                    "Slack %s: the token of %s belongs to %s (%s), which is no app's bot", b->who,
                    where, name ? name : "?", uid);
    else
        doctor_sayf(d, DOCTOR_OK, NULL,
                    "Slack %s: the token of %s belongs to bot %s (%s) in workspace %s", b->who,
                    where, name ? name : "?", uid, team ? team : "?");
    json_decref(me);
    if (!ok)
        b->token = NULL;
    return ok;
}

/* The moderator's scopes (Slack's comma list) against what it needs. */
static void check_scopes(doctor *d, const char *scopes)
{
    if (!*scopes) {
        doctor_say(d, DOCTOR_WARN,
                   "Slack moderator: Slack did not list the token's scopes (no x-oauth-scopes "
                   "header), so they are not checked",
                   "compare OAuth & Permissions, Bot Token Scopes, with docs/slack.md's "
                   "moderator table");
        return;
    }
    dg_buf missing = {0}, why = {0};
    int bad = 0;
    for (size_t i = 0; i < sizeof MODERATOR_SCOPES / sizeof *MODERATOR_SCOPES; i++) {
        const char *want = MODERATOR_SCOPES[i].scope;
        size_t wl = strlen(want);
        int have = 0;
        for (const char *p = scopes; *p && !have; p += strcspn(p, ","), p += *p == ',') {
            while (*p == ' ')
                p++;
            have = !strncmp(p, want, wl) && (p[wl] == ',' || p[wl] == '\0' || p[wl] == ' ');
        }
        if (!have)
            bad |= (missing.len && dg_buf_adds(&missing, ", ")) || dg_buf_adds(&missing, want) ||
                   (why.len && dg_buf_adds(&why, "; ")) || dg_buf_adds(&why, want) ||
                   dg_buf_adds(&why, ": ") || dg_buf_adds(&why, MODERATOR_SCOPES[i].for_what);
    }
    if (bad)
        doctor_say(d, DOCTOR_ERROR, "Slack moderator: out of memory checking the scopes", NULL);
    else if (missing.len)
        doctor_sayf(d, DOCTOR_ERROR,
                    "add them under OAuth & Permissions, Bot Token Scopes, then reinstall the "
                    "app (docs/slack-manifests has the manifest)",
                    "Slack moderator: the token lacks %s (%s)", missing.s, why.s);
    else
        doctor_say(d, DOCTOR_OK,
                   "Slack moderator: has the scopes discussions need (chat:write, "
                   "groups:write for private channels, invite and archive, the history and "
                   "read scopes, users:read)",
                   NULL);
    dg_buf_free(&missing);
    dg_buf_free(&why);
}

/* Who of bots[0..n) is a member of channel id, asked with the first usable
 * token. */
static void check_channel(doctor *d, const char *id, const slack_bot *bots, size_t n)
{
    const slack_bot *asker = NULL;
    for (size_t k = 0; k < n && !asker; k++)
        if (bots[k].token)
            asker = &bots[k];
    if (!asker)
        return;
    char args[96], why[512] = "";
    snprintf(args, sizeof args, "channel=%s&limit=1000", id);
    json_t *r =
        slack_call(d, asker->token, "conversations.members", args, NULL, 0, why, sizeof why);
    if (!r || !json_is_true(json_object_get(r, "ok"))) {
        const char *code = r ? str_of(r, "error") : NULL;
        doctor_sayf(d, DOCTOR_ERROR,
                    "invite the moderator app to that channel (/invite @moderator), or correct "
                    "the id in channels.slack.channels",
                    "Slack channel %s: the %s cannot list its members: %s", id, asker->who,
                    code ? code : why);
        json_decref(r);
        return;
    }
    json_t *members = json_object_get(r, "members");
    dg_buf in = {0};
    int oom = 0;
    for (size_t k = 0; k < n; k++) {
        int member = 0;
        size_t i;
        json_t *m;
        json_array_foreach(members, i, m)
            member |= json_is_string(m) && !strcmp(json_string_value(m), bots[k].user_id);
        if (member) {
            oom |= (in.len && dg_buf_adds(&in, ", ")) || dg_buf_adds(&in, bots[k].who);
            continue;
        }
        doctor_sayf(d, DOCTOR_ERROR,
                    "invite it: /invite @<its app> in that channel (a bot that is no member "
                    "never receives the channel's messages)",
                    "Slack channel %s: %s (%s) is not a member", id, bots[k].who, bots[k].user_id);
    }
    if (in.len && !oom)
        doctor_sayf(d, DOCTOR_OK, NULL, "Slack channel %s: members: %s", id, in.s);
    dg_buf_free(&in);
    json_decref(r);
}

/* The bot token of agent's Slack account: its binding's accountId, else an
 * account of the agent's name; *where names it. Borrowed, or NULL. */
static const char *agent_token(doctor *d, const char *agent, char *where, size_t where_len)
{
    json_t *accounts = doctor_at(d->root, "channels", "slack", "accounts", NULL);
    const char *acc = NULL;
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(d->root, "bindings"), i, b) {
        json_t *m = json_object_get(b, "match");
        const char *aid = str_of(b, "agentId"), *ch = str_of(m, "channel");
        if (aid && ch && !strcmp(aid, agent) && !strcmp(ch, "slack"))
            acc = str_of(m, "accountId");
    }
    if (!acc && json_object_get(accounts, agent))
        acc = agent;
    snprintf(where, where_len, "channels.slack.accounts.%s.botToken", acc ? acc : agent);
    return acc ? str_of(json_object_get(accounts, acc), "botToken") : NULL;
}

/* Where the Web API base came from, for the line that names it. */
static const char *api_base_source(doctor *d)
{
    json_t *cfg = doctor_at(d->root, "plugins", "entries", "dirigent", "config");
    if (json_is_string(json_object_get(json_object_get(cfg, "slack"), "apiBase")))
        return "slack.apiBase";
    const char *env = getenv("SLACK_API_URL");
    return env && *env ? "env SLACK_API_URL" : "the default";
}

void doctor_check_slack(doctor *d)
{
    const dg_config *c = &d->cfg;
    doctor_sayf(d, DOCTOR_OK, NULL, "Slack: the Web API used is %s (%s)", c->slack_api_base,
                api_base_source(d));
    if (!doctor_host_resolves(d, "Slack", "slack.apiBase", c->slack_api_base)) {
        doctor_say(d, DOCTOR_WARN,
                   "Slack: the tokens, scopes and channels are not checked (the API host does "
                   "not resolve)",
                   "fix the name resolution, then run the doctor again");
        return;
    }
    slack_bot *bots = calloc(c->n_agents + 1, sizeof *bots);
    if (!bots)
        return;
    size_t n = 0;
    char scopes[1024] = "";
    bots[n] = (slack_bot){"moderator", c->slack_moderator_user_id, c->slack_moderator_token};
    if (check_identity(d, &bots[n], "env DIRIGENT_SLACK_MODERATOR_TOKEN", scopes, sizeof scopes))
        check_scopes(d, scopes);
    n++;
    for (size_t k = 0; k < c->n_agents; k++) {
        if (!c->agents[k].slack_user_id)
            continue; /* a Discord-only agent */
        char where[300];
        bots[n] = (slack_bot){c->agents[k].agent_id, c->agents[k].slack_user_id,
                              agent_token(d, c->agents[k].agent_id, where, sizeof where)};
        check_identity(d, &bots[n], where, NULL, 0);
        n++;
    }
    /* The channels OpenClaw's Slack plugin is configured for, by id. */
    const char *id;
    json_t *v;
    json_object_foreach(doctor_at(d->root, "channels", "slack", "channels", NULL), id, v) {
        if (dg_slack_channel_id_valid(id))
            check_channel(d, id, bots, n);
        else if (strcmp(id, "*") && !doctor_is_placeholder(id))
            doctor_sayf(d, DOCTOR_WARN,
                        "write the channel's id (C... or G...: the channel's details, at the "
                        "bottom) as the key",
                        "channels.slack.channels: key \"%.64s\" is no channel id, so its "
                        "members are not checked",
                        id);
    }
    free(bots);
}
