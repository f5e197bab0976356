/*
 * ctl_doctor_discord.c -- the doctor's Discord questions, read-only (GET):
 * who each configured token belongs to, the guild's roles and members,
 * its channels and their overwrites. Permissions are computed the way
 * Discord does (owner and Administrator: everything; @everyone and the
 * member's roles; then the channel's overwrites for @everyone, the roles,
 * the member).
 */
#include "snowflake.h"
#include "ctl_doctor_int.h"

#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discord.h"
#include "openclaw/plugin.h"

#define PERM_ADMINISTRATOR (1ull << 3)
#define PERM_MANAGE_CHANNELS (1ull << 4)
#define PERM_MANAGE_ROLES (1ull << 28)
#define PERM_ALL (~0ull)

/* ---- Discord ----------------------------------------------------------------------- */

typedef struct bot {
    const char *who;     /* "moderator" or the agent id (borrowed) */
    const char *user_id; /* configured Discord user id (borrowed) */
    dg_discord *api;     /* NULL: no usable token */
    json_t *member;      /* in the guild being checked, or NULL */
    uint64_t guild_perms;
} bot;

/* A client for token at discord.apiBase, or NULL; the caller frees it
 * (dg_discord_free). */
static dg_discord *client(doctor *d, const char *token)
{
    dg_discord_options o = {
        .api_base = d->cfg.discord_api_base,
        .token = token,
        .timeout_ms = d->cfg.discord_timeout_ms < 10000 ? d->cfg.discord_timeout_ms : 10000,
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
static dg_discord *check_token(doctor *d, const char *who, const char *where, const char *token,
                               const char *want, int is_moderator)
{
    char what[DOCTOR_TEXT_MAX], fix[DOCTOR_TEXT_MAX];
    if (!token || !*token || strstr(token, "${")) {
        snprintf(what, sizeof what, "%s: no Discord token (%s %s)", who, where,
                 !token || !*token ? "is not set" : "names a variable that is not set");
        if (is_moderator)
            snprintf(fix, sizeof fix,
                     "export DIRIGENT_MODERATOR_TOKEN (the moderator bot's "
                     "token) in the gateway's environment; never write it into the config");
        else
            snprintf(fix, sizeof fix,
                     "export the variable %s names with that bot's token in "
                     "the gateway's environment",
                     where);
        doctor_say(d, DOCTOR_ERROR, what, fix);
        return NULL;
    }
    doctor_keep_secret(d, token);
    dg_discord *c = client(d, token);
    dg_discord_err e;
    json_t *me = c ? get(c, "/users/@me", &e) : NULL;
    if (!me) {
        if (!c)
            snprintf(what, sizeof what,
                     "%s: cannot set up a Discord client for %s "
                     "(discord.apiBase %s)",
                     who, where, d->cfg.discord_api_base);
        else if (e.http_status == 401)
            snprintf(what, sizeof what,
                     "%s: Discord refuses the token of %s (401 "
                     "Unauthorized): it is wrong or was reset",
                     who, where);
        else
            snprintf(what, sizeof what, "%s: GET /users/@me with the token of %s failed: %s", who,
                     where, e.message);
        doctor_say(d, DOCTOR_ERROR, what,
                   e.http_status == 401
                       ? "copy the bot's current token from the "
                         "Discord developer portal (Bot, Reset Token) into the environment variable"
                       : "check discord.apiBase and the network, then run the doctor again");
        dg_discord_free(c);
        return NULL;
    }
    const char *id = json_string_value(json_object_get(me, "id"));
    const char *name = json_string_value(json_object_get(me, "username"));
    int is_bot = json_is_true(json_object_get(me, "bot"));
    if (!id || strcmp(id, want)) {
        snprintf(what, sizeof what,
                 "%s: the token of %s belongs to %s (%s), not to the "
                 "configured user %s",
                 who, where, name ? name : "another user", id ? id : "?", want);
        if (is_moderator)
            snprintf(fix, sizeof fix,
                     "give DIRIGENT_MODERATOR_TOKEN the moderator bot's "
                     "token, or set discord.moderatorUserId to %s if that bot is the moderator",
                     id ? id : "its id");
        else
            snprintf(fix, sizeof fix,
                     "give %s the token of user %s, or correct "
                     "agents.%s.discordUserId",
                     where, want, who);
        doctor_say(d, DOCTOR_ERROR, what, fix);
        json_decref(me);
        dg_discord_free(c);
        return NULL;
    }
    if (!is_bot) {
        doctor_sayf(d, DOCTOR_ERROR, "use a bot account's token (Discord developer portal: Bot)",
                    "%s: the token of %s belongs to %s (%s), which is not a bot", who, where,
                    name ? name : "?", id);
        json_decref(me);
        dg_discord_free(c);
        return NULL;
    }
    doctor_sayf(d, DOCTOR_OK, NULL, "%s: the token of %s is valid and belongs to bot %s (%s)", who,
                where, name ? name : "?", id);
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
    return json_object_get(doctor_at(d->root, "channels", "discord", "accounts", NULL), agent)
               ? agent
               : NULL;
}

static uint64_t perm_of(json_t *v)
{
    return json_is_string(v)    ? strtoull(json_string_value(v), NULL, 10)
           : json_is_integer(v) ? (uint64_t)json_integer_value(v)
                                : 0;
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
    return !(p & DG_PERM_VIEW_CHANNEL)    ? "no View Channel"
           : !(p & DG_PERM_SEND_MESSAGES) ? "no Send Messages"
                                          : NULL;
}

/* The channels of guild g the agents are in: moderator and >= 2 agents must
 * read and send there. only: the guild's configured channel ids, or NULL. */
static void check_channels(doctor *d, const char *g, bot *mod, bot *agents, size_t n, json_t *only)
{
    dg_discord_err e;
    char path[128];
    snprintf(path, sizeof path, "/guilds/%s/channels", g);
    json_t *chans = get(mod->api, path, &e);
    if (!chans) {
        doctor_sayf(d, DOCTOR_ERROR, "invite the moderator bot to the server with View Channels",
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
            uint64_t p =
                channel_perms(agents[k].guild_perms, ch, agents[k].member, agents[k].user_id, g);
            const char *why = lacks(p);
            see += (p & DG_PERM_VIEW_CHANNEL) != 0;
            char *list = why ? bad_list : ok_list;
            size_t used = strlen(list);
            if (why)
                snprintf(list + used, 512 - used, "%s%s (%s)", used ? ", " : "", agents[k].who,
                         why);
            else
                snprintf(list + used, 512 - used, "%s%s", used ? ", " : "", agents[k].who);
            can += !why;
        }
        if (!see && !only) {
            unseen++;
            continue;
        }
        const char *mod_why =
            mod->member ? lacks(channel_perms(mod->guild_perms, ch, mod->member, mod->user_id, g))
                        : "not a member";
        if (mod_why)
            doctor_sayf(
                d, DOCTOR_ERROR,
                "allow the moderator bot View Channel and Send Messages there "
                "(channel permissions: add the bot or its role)",
                "channel #%s (%s): the "
                "moderator cannot post there (%s): no hand-off, notice or admin reply reaches "
                "it",
                name ? name : "?", id, mod_why);
        if (can < 2)
            doctor_sayf(d, DOCTOR_ERROR,
                        "allow the agents' bots View Channel and Send Messages there "
                        "(channel permissions: add each bot or a role they share)",
                        "channel #%s "
                        "(%s): %zu agent%s can read and send there (%s), turns need two%s%s",
                        name ? name : "?", id, can, can == 1 ? "" : "s", can ? ok_list : "none",
                        *bad_list ? "; " : "", bad_list);
        else if (*bad_list)
            doctor_sayf(d, DOCTOR_WARN,
                        "allow those bots View Channel and Send Messages there, or leave "
                        "them out on purpose",
                        "channel #%s (%s): %s can read and send; %s never "
                        "take%s a turn there",
                        name ? name : "?", id, ok_list, bad_list, strchr(bad_list, ',') ? "" : "s");
        else if (!mod_why)
            doctor_sayf(d, DOCTOR_OK, NULL,
                        "channel #%s (%s): the moderator and %zu agents (%s) can read "
                        "and send",
                        name ? name : "?", id, can, ok_list);
    }
    if (unseen)
        doctor_sayf(d, DOCTOR_OK, NULL,
                    "guild %s: %zu text channel%s no agent can see (not managed)", g, unseen,
                    unseen == 1 ? "" : "s");
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
        doctor_sayf(d, DOCTOR_ERROR,
                    "invite the moderator bot to that server (OAuth2 URL with the bot "
                    "scope), and check discord.guildId",
                    "guild %s: the moderator cannot read it: %s", g, e.message);
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
            doctor_sayf(d, DOCTOR_ERROR,
                        "invite that bot to the server (Discord developer portal: "
                        "OAuth2, bot scope)",
                        "guild %s: %s (user %s) is not a member%s%s", g, b->who, b->user_id,
                        e.http_status == 404 ? "" : ": ", e.http_status == 404 ? "" : e.message);
            continue;
        }
        b->guild_perms = guild_perms(guild, roles, b->member, b->user_id, g);
    }
    if (d->cfg.discord_guild_id && !strcmp(g, d->cfg.discord_guild_id) && mod->member) {
        uint64_t need = PERM_MANAGE_CHANNELS | PERM_MANAGE_ROLES;
        uint64_t have = mod->guild_perms & need;
        if (have != need)
            doctor_sayf(d, DOCTOR_ERROR,
                        "give the moderator bot's role Manage Channels and Manage Roles "
                        "(Server Settings, Roles)",
                        "discussions: the moderator lacks %s%s%s in guild "
                        "%s: it cannot create discussion channels or set who may see them",
                        have & PERM_MANAGE_CHANNELS ? "" : "Manage Channels",
                        !(have & PERM_MANAGE_CHANNELS) && !(have & PERM_MANAGE_ROLES) ? " and "
                                                                                      : "",
                        have & PERM_MANAGE_ROLES ? "" : "Manage Roles", g);
        else
            doctor_sayf(d, DOCTOR_OK, NULL,
                        "discussions: the moderator has Manage Channels and Manage "
                        "Roles in guild %s",
                        g);
    }
    if (mod->member)
        check_channels(d, g, mod, agents, n, only);
    json_decref(guild);
    json_decref(roles);
}

/* Each agent's bot: bound to a Discord account whose token works (its
 * client into agents[k].api, NULL when it cannot be used). */
static void check_agent_tokens(doctor *d, bot *agents)
{
    const dg_config *c = &d->cfg;
    json_t *accounts = doctor_at(d->root, "channels", "discord", "accounts", NULL);
    for (size_t k = 0; k < c->n_agents; k++) {
        agents[k].who = c->agents[k].agent_id;
        agents[k].user_id = c->agents[k].discord_user_id;
        if (!agents[k].user_id)
            continue; /* a Slack-only agent: nothing to ask Discord */
        const char *acc = account_of(d, agents[k].who);
        if (!acc || !json_is_object(json_object_get(accounts, acc))) {
            doctor_sayf(
                d, DOCTOR_ERROR,
                "add a channels.discord.accounts entry with that bot's token and "
                "a binding {agentId, match: {channel: \"discord\", accountId}}",
                "%s: no Discord account in channels.discord.accounts is bound to this agent",
                agents[k].who);
            continue;
        }
        char where[300];
        snprintf(where, sizeof where, "channels.discord.accounts.%s.token", acc);
        agents[k].api =
            check_token(d, agents[k].who, where,
                        json_string_value(json_object_get(json_object_get(accounts, acc), "token")),
                        agents[k].user_id, 0);
    }
}

/* The guilds (discord.guildId and those OpenClaw's Discord plugin is
 * configured for; a guild with a channels map limits the check to those
 * channels) and the archive channel, asked with the moderator's token. */
static void check_guilds(doctor *d, bot *mod, bot *agents)
{
    const dg_config *c = &d->cfg;
    json_t *guilds = doctor_at(d->root, "channels", "discord", "guilds", NULL);
    json_t *seen = json_object();
    if (c->discord_guild_id) {
        json_object_set_new(seen, c->discord_guild_id, json_true());
        check_guild(d, c->discord_guild_id, mod, agents, c->n_agents,
                    doctor_at(guilds, c->discord_guild_id, "channels", NULL, NULL));
    } else {
        doctor_say(d, DOCTOR_WARN,
                   "discussions: discord.guildId is not set: discuss-callback's "
                   "channel creation is refused",
                   "set discord.guildId to your server's id to "
                   "enable discussions");
    }
    const char *gid;
    json_t *gv;
    json_object_foreach(guilds, gid, gv) {
        if (json_object_get(seen, gid))
            continue;
        if (doctor_is_placeholder(gid))
            continue; /* an error already, offline */
        if (!dg_snowflake_valid(gid)) {
            doctor_sayf(d, DOCTOR_ERROR, "write the server's id (a snowflake) as the key",
                        "channels.discord.guilds: key \"%s\" is not a guild id (OpenClaw does not "
                        "substitute ${VAR} in keys)",
                        gid);
            continue;
        }
        json_object_set_new(seen, gid, json_true());
        check_guild(d, gid, mod, agents, c->n_agents, json_object_get(gv, "channels"));
    }
    json_decref(seen);
    if (c->archive_channel_id) {
        char path[96];
        dg_discord_err e;
        snprintf(path, sizeof path, "/channels/%s", c->archive_channel_id);
        json_t *ch = get(mod->api, path, &e);
        if (!ch)
            doctor_sayf(d, DOCTOR_ERROR,
                        "allow the moderator bot View Channel and Send Messages "
                        "there, or correct discussion.archiveChannelId",
                        "discussion."
                        "archiveChannelId %s: the moderator cannot see it: %s",
                        c->archive_channel_id, e.message);
        else
            doctor_sayf(d, DOCTOR_OK, NULL,
                        "discussion.archiveChannelId %s: visible to the "
                        "moderator",
                        c->archive_channel_id);
        json_decref(ch);
    }
}

void doctor_check_discord(doctor *d)
{
    const dg_config *c = &d->cfg;
    if (!doctor_host_resolves(d, "Discord", "discord.apiBase", c->discord_api_base)) {
        doctor_say(d, DOCTOR_WARN,
                   "Discord: the tokens, channels and permissions are not checked (the API "
                   "host does not resolve)",
                   "fix the name resolution, then run the doctor again");
        return;
    }
    bot mod = {.who = "moderator", .user_id = c->moderator_user_id};
    mod.api = check_token(d, "moderator",
                          getenv("DIRIGENT_MODERATOR_TOKEN") && *getenv("DIRIGENT_MODERATOR_TOKEN")
                              ? "env DIRIGENT_MODERATOR_TOKEN"
                              : "discord.moderatorToken / env DIRIGENT_MODERATOR_TOKEN",
                          c->moderator_token, c->moderator_user_id, 1);
    bot *agents = calloc(c->n_agents ? c->n_agents : 1, sizeof *agents);
    if (!agents)
        return;
    check_agent_tokens(d, agents);
    if (!mod.api) {
        doctor_say(d, DOCTOR_WARN,
                   "channels and permissions: not checked (they are asked with the "
                   "moderator's token, which could not be used)",
                   "fix what the moderator's line above says, then run the doctor again");
    } else {
        check_guilds(d, &mod, agents);
    }
    for (size_t k = 0; k < c->n_agents; k++) {
        dg_discord_free(agents[k].api);
        json_decref(agents[k].member);
    }
    free(agents);
    json_decref(mod.member);
    dg_discord_free(mod.api);
}
