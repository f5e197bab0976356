/*
 * fake_discord_routes.c -- the rest of the fake Discord's REST surface
 * (guild, users, threads, edits, application commands, the gateway URL),
 * its rate limits and injected faults, and the dispatch of one request
 * (see fake_discord_int.h).
 */
#include "fake_discord_int.h"
#include "openclaw/plugin.h"
#include "utf8.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- guild, users, threads, application commands (fd->mu held) ---------------------- */

static json_t *everyone_role(fake_discord *fd)
{
    char perms[24];
    snprintf(perms, sizeof perms, "%llu", (unsigned long long)PERM_EVERYONE);
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:b, s:b, s:b, s:i, s:n, s:n}", "id", fd->guild,
                     "name", "@everyone", "permissions", perms, "position", 0, "color", 0, "hoist",
                     0, "managed", 0, "mentionable", 0, "flags", 0, "icon", "unicode_emoji");
}

/* The guild as REST GET /guilds/{id} returns it. */
static json_t *guild_json(fake_discord *fd)
{
    json_t *g = json_pack(
        "{s:s, s:s, s:n, s:s, s:s, s:[o], s:[], s:[], s:i, s:i, s:i, s:i, s:i, s:n, s:n, "
        "s:s, s:i, s:b}",
        "id", fd->guild, "name", "Fake Guild", "icon", "owner_id", "100000000000000009",
        "preferred_locale", "en-US", "roles", everyone_role(fd), "emojis", "features",
        "verification_level", 0, "default_message_notifications", 0, "explicit_content_filter", 0,
        "mfa_level", 0, "nsfw_level", 0, "system_channel_id", "afk_channel_id", "description", "",
        "premium_tier", 0, "premium_progress_bar_enabled", 0);
    if (g)
        json_object_set_new(g, "stickers", json_array());
    return g;
}

json_t *fdi_guild_create(fake_discord *fd)
{
    json_t *g = guild_json(fd);
    json_t *chans = json_array(), *threads = json_array(), *members = json_array();
    for (size_t i = 0; i < fd->n_chans; i++) {
        json_t *o = fd->chans[i]->obj;
        int thread = json_integer_value(json_object_get(o, "type")) == CHAN_PUBLIC_THREAD;
        json_array_append(thread ? threads : chans, o);
    }
    for (size_t i = 0; i < fd->n_users; i++)
        json_array_append_new(members, fd_member_json(fd, fd->users[i].id, 1));
    json_object_set_new(g, "channels", chans);
    json_object_set_new(g, "threads", threads);
    json_object_set_new(g, "members", members);
    json_object_set_new(g, "member_count", json_integer((json_int_t)fd->n_users));
    json_object_set_new(g, "joined_at", json_string(fd->joined_at));
    json_object_set_new(g, "large", json_false());
    json_object_set_new(g, "unavailable", json_false());
    json_object_set_new(g, "voice_states", json_array());
    json_object_set_new(g, "presences", json_array());
    json_object_set_new(g, "stage_instances", json_array());
    json_object_set_new(g, "guild_scheduled_events", json_array());
    json_object_set_new(g, "soundboard_sounds", json_array());
    return g;
}

pthread_mutex_t *fdi_mutex(fake_discord *fd)
{
    return &fd->mu;
}

pthread_cond_t *fdi_cond(fake_discord *fd)
{
    return &fd->cond;
}

void fdi_changed(fake_discord *fd)
{
    pthread_cond_broadcast(&fd->cond);
}

const char *fdi_user_for_token(fake_discord *fd, const char *token)
{
    fd_user *u = fd_user_by_token(fd, token);
    return u ? u->id : NULL;
}

json_t *fdi_user_json(fake_discord *fd, const char *user_id)
{
    return fd_user_json(fd, user_id);
}

int fdi_can_view(fake_discord *fd, const char *channel_id, const char *user_id)
{
    fd_chan *ch = fd_chan_by_id(fd, channel_id);
    return ch && (fd->no_perm || (fd_perms_in(fd, ch, user_id) & PERM_VIEW));
}

int fdi_port(const fake_discord *fd)
{
    return fd->port;
}

int fdi_app_flags(void)
{
    return APP_FLAGS;
}

/* A public thread (type 11) under parent, id given (a message's id when
 * started from one) or new. NULL with r set when refused. */
fd_chan *fd_thread_add(fake_discord *fd, fd_chan *parent, const char *id, json_t *name,
                       const char *owner, reply *r)
{
    const char *nm = json_string_value(name);
    long n = nm ? (long)dg_utf8_count(nm) : 0;
    if (n < 1 || n > 100) {
        fd_form_error(r, "name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
        return NULL;
    }
    int ptype = (int)json_integer_value(json_object_get(parent->obj, "type"));
    if (ptype != 0) {
        fd_err_reply(r, 400, 50024, "Cannot execute action on this channel type");
        return NULL;
    }
    char tid[24];
    if (id)
        snprintf(tid, sizeof tid, "%s", id);
    else
        snprintf(tid, sizeof tid, "%llu", (unsigned long long)fd_next_id(fd));
    if (fd_chan_by_id(fd, tid)) {
        fd_err_reply(r, 400, 160004, "A thread has already been created for this message");
        return NULL;
    }
    char ts[48];
    fd_iso_now(ts, sizeof ts);
    json_t *obj = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:n, s:i, s:i, s:i, s:i, s:i, "
                            "s:{s:b, s:i, s:s, s:b, s:s}}",
                            "id", tid, "type", CHAN_PUBLIC_THREAD, "guild_id", fd->guild,
                            "parent_id", parent->id, "owner_id", owner, "name", nm,
                            "last_message_id", "rate_limit_per_user", 0, "message_count", 0,
                            "member_count", 1, "total_message_sent", 0, "flags", 0,
                            "thread_metadata", "archived", 0, "auto_archive_duration", 1440,
                            "archive_timestamp", ts, "locked", 0, "create_timestamp", ts);
    fd_chan *ch = obj ? fd_chan_add(fd, tid, obj) : NULL;
    if (!ch) {
        json_decref(obj);
        fd_err_reply(r, 500, 0, "500: Internal Server Error");
    }
    return ch;
}

fd_msg *fd_msg_by_id(fd_chan *ch, const char *id)
{
    fd_msg *m = fd_msg_of_id(ch, strtoull(id, NULL, 10));
    return m && m->obj ? m : NULL; /* lean: unknown */
}

/* The stored commands of an application (created on first use). */
static json_t *commands_of(fake_discord *fd, const char *app)
{
    json_t *arr = json_object_get(fd->commands, app);
    if (!arr) {
        arr = json_array();
        json_object_set_new(fd->commands, app, arr);
    }
    return arr;
}

/* A command as Discord echoes it: the body with id, application_id and
 * version filled in. NULL with r set when the body lacks a name. */
static json_t *command_from(fake_discord *fd, const char *app, json_t *body, const char *id,
                            reply *r)
{
    if (!json_is_object(body) || !json_is_string(json_object_get(body, "name"))) {
        fd_form_error(r, "name", "BASE_TYPE_REQUIRED", "This field is required");
        return NULL;
    }
    json_t *c = json_deep_copy(body);
    char nid[24];
    if (id)
        snprintf(nid, sizeof nid, "%s", id);
    else
        snprintf(nid, sizeof nid, "%llu", (unsigned long long)fd_next_id(fd));
    json_object_set_new(c, "id", json_string(nid));
    json_object_set_new(c, "application_id", json_string(app));
    json_object_set_new(c, "version", json_string(nid));
    if (!json_object_get(c, "type"))
        json_object_set_new(c, "type", json_integer(1));
    if (!json_object_get(c, "description"))
        json_object_set_new(c, "description", json_string(""));
    return c;
}

/* GET/POST/PUT/PATCH/DELETE /applications/{app}[/guilds/{g}]/commands[/{cmd}]:
 * stored per application (guild commands share the store). */
static void api_commands(fake_discord *fd, const char *method, const char *app, const char *cmd,
                         json_t *body, reply *r)
{
    json_t *arr = commands_of(fd, app);
    size_t i;
    json_t *c;
    if (!cmd && !strcmp(method, "GET")) {
        fd_set_reply(r, 200, json_deep_copy(arr));
    } else if (!cmd && !strcmp(method, "PUT")) {
        if (!json_is_array(body)) {
            fd_err_reply(r, 400, 50109, "The request body contains invalid JSON.");
            return;
        }
        json_t *out = json_array();
        json_array_foreach(body, i, c) {
            json_t *one = command_from(fd, app, c, NULL, r);
            if (!one) {
                json_decref(out);
                return;
            }
            json_array_append_new(out, one);
        }
        json_object_set_new(fd->commands, app, json_deep_copy(out));
        fd_set_reply(r, 200, out);
    } else if (!cmd && !strcmp(method, "POST")) {
        json_t *one = command_from(fd, app, body, NULL, r);
        if (one) {
            json_array_append(arr, one);
            fd_set_reply(r, 201, one);
        }
    } else if (cmd) {
        json_array_foreach(arr, i, c) {
            if (strcmp(json_string_value(json_object_get(c, "id")), cmd))
                continue;
            if (!strcmp(method, "DELETE")) {
                json_array_remove(arr, i);
                fd_set_reply(r, 204, NULL);
            } else if (!strcmp(method, "PATCH") && json_is_object(body)) {
                json_object_update(c, body);
                fd_set_reply(r, 200, json_deep_copy(c));
            } else {
                fd_set_reply(r, 200, json_deep_copy(c));
            }
            return;
        }
        fd_err_reply(r, 404, 10063, "Unknown application command");
    } else {
        fd_err_reply(r, 405, 0, "405: Method Not Allowed");
    }
}

static json_t *application_json(fake_discord *fd, const char *user)
{
    fd_user *u = fd_user_by_id(fd, user);
    const char *name = u && u->username ? u->username : "fake-app";
    return json_pack("{s:s, s:s, s:n, s:s, s:b, s:b, s:i, s:s, s:o, s:o, s:n, s:[]}", "id", user,
                     "name", name, "icon", "description", "", "bot_public", 1,
                     "bot_require_code_grant", 0, "flags", APP_FLAGS, "verify_key",
                     "0000000000000000000000000000000000000000000000000000000000000000", "owner",
                     json_pack("{s:s, s:s, s:s, s:s}", "id", "100000000000000009", "username",
                               "fake-owner", "discriminator", "0", "global_name", "fake-owner"),
                     "bot", fd_user_json(fd, user), "team", "tags");
}

static void gateway_info(fake_discord *fd, int bot, reply *r)
{
    char url[64];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d", fd->port);
    if (bot)
        fd_set_reply(r, 200,
                     json_pack("{s:s, s:i, s:{s:i, s:i, s:i, s:i}}", "url", url, "shards", 1,
                               "session_start_limit", "total", 1000, "remaining", 1000,
                               "reset_after", 0, "max_concurrency", 1));
    else
        fd_set_reply(r, 200, json_pack("{s:s}", "url", url));
}

/* PATCH (own messages only: content) or DELETE a message; the gateway
 * hears MESSAGE_UPDATE / MESSAGE_DELETE. */
static void api_edit_or_delete(fake_discord *fd, const char *method, const char *chan,
                               const char *mid, const char *user, json_t *body, reply *r)
{
    fd_chan *ch = fd_chan_by_id(fd, chan);
    fd_msg *m = ch ? fd_msg_by_id(ch, mid) : NULL;
    if (!ch) {
        fd_err_reply(r, 404, 10003, "Unknown Channel");
        return;
    }
    if (!fd->no_perm && !(fd_perms_in(fd, ch, user) & PERM_VIEW)) {
        fd_err_reply(r, 403, 50001, "Missing Access");
        return;
    }
    if (!m) {
        fd_err_reply(r, 404, 10008, "Unknown Message");
        return;
    }
    if (!strcmp(method, "DELETE")) {
        /* Deleting others' messages needs MANAGE_MESSAGES, which bots here
         * have (the guild base is every permission). */
        json_t *ev =
            json_pack("{s:s, s:s, s:s}", "id", mid, "channel_id", ch->id, "guild_id", fd->guild);
        uint64_t gone = m->id;
        char *nonce = m->nonce;
        free(m->author);
        json_decref(m->obj);
        size_t at = (size_t)(m - ch->msgs);
        memmove(m, m + 1, (ch->n - at - 1) * sizeof *m);
        ch->n--;
        /* The index names the newest message with each nonce (its key is
         * that message's string): when it named this one, the next older
         * message with the nonce (another author's) takes its place. */
        if (nonce && (uint64_t)(uintptr_t)dg_map_get(&ch->nonces, nonce) == gone) {
            fd_msg *older = NULL;
            for (size_t i = ch->n; i-- > 0 && !older;)
                if (ch->msgs[i].nonce && !strcmp(ch->msgs[i].nonce, nonce))
                    older = &ch->msgs[i];
            if (!older ||
                dg_map_put(&ch->nonces, older->nonce, (void *)(uintptr_t)older->id) != OC_OK)
                (void)dg_map_retain(&ch->nonces, fd_id_differs, fd_ignore_dropped, &gone);
        }
        free(nonce);
        fdg_dispatch(fd->gw, "MESSAGE_DELETE", ev, ch->id);
        json_decref(ev);
        fd_set_reply(r, 204, NULL);
        return;
    }
    if (strcmp(m->author, user) != 0) {
        fd_err_reply(r, 403, 50005, "Cannot edit a message authored by another user");
        return;
    }
    json_t *cv = json_object_get(body, "content");
    if (cv && (!json_is_string(cv) || (long)dg_utf8_count(json_string_value(cv)) > 2000)) {
        fd_form_error(r, "content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
        return;
    }
    if (cv)
        json_object_set(m->obj, "content", cv);
    char ts[48];
    fd_iso_now(ts, sizeof ts);
    json_object_set_new(m->obj, "edited_timestamp", json_string(ts));
    fdg_dispatch(fd->gw, "MESSAGE_UPDATE", m->obj, ch->id);
    pthread_cond_broadcast(&fd->cond);
    fd_set_reply(r, 200, json_deep_copy(m->obj));
}

/* The gateway URL, users, the application and its commands, the guild,
 * its roles and members: 1 when the request was one of these (r filled). */
static int api_guild(fake_discord *fd, const char *method, const char *path, const char *tmpl,
                     const char *user, json_t *body, reply *r)
{
    char a[32], b[32];
    if (!strcmp(tmpl, "GET /gateway/bot")) {
        gateway_info(fd, 1, r);
    } else if (!strcmp(tmpl, "GET /users/@me")) {
        fd_set_reply(r, 200, fd_user_json(fd, user));
    } else if (!strcmp(tmpl, "GET /users/{id}") && sscanf(path, "/users/%23[0-9]", a) == 1) {
        if (fd_user_by_id(fd, a))
            fd_set_reply(r, 200, fd_user_json(fd, a));
        else
            fd_err_reply(r, 404, 10013, "Unknown User");
    } else if (!strcmp(tmpl, "GET /oauth2/applications/@me") ||
               !strcmp(tmpl, "GET /applications/@me")) {
        fd_set_reply(r, 200, application_json(fd, user));
    } else if (!strncmp(path, "/applications/", 14) && strstr(path, "/commands")) {
        char cmd[32] = "";
        int n = sscanf(path, "/applications/%23[0-9]/commands/%23[0-9]", a, cmd);
        if (n < 1)
            n = sscanf(path, "/applications/%23[0-9]/guilds/%23[0-9]/commands/%23[0-9]", a, b,
                       cmd) >= 2
                    ? 1 + (cmd[0] != 0)
                    : 0;
        if (n < 1)
            return 0;
        api_commands(fd, method, a, cmd[0] ? cmd : NULL, body, r);
    } else if (!strcmp(tmpl, "GET /guilds/{id}") && sscanf(path, "/guilds/%23[0-9]", a) == 1) {
        if (strcmp(a, fd->guild))
            fd_err_reply(r, 404, 10004, "Unknown Guild");
        else
            fd_set_reply(r, 200, guild_json(fd));
    } else if (!strcmp(tmpl, "GET /guilds/{id}/roles") &&
               sscanf(path, "/guilds/%23[0-9]", a) == 1) {
        if (strcmp(a, fd->guild))
            fd_err_reply(r, 404, 10004, "Unknown Guild");
        else {
            json_t *all = json_pack("[o]", everyone_role(fd));
            json_array_extend(all, fd->roles);
            fd_set_reply(r, 200, all);
        }
    } else if (!strcmp(tmpl, "GET /guilds/{id}/members/{id}") &&
               sscanf(path, "/guilds/%23[0-9]/members/%23[0-9]", a, b) == 2) {
        if (strcmp(a, fd->guild))
            fd_err_reply(r, 404, 10004, "Unknown Guild");
        else if (!fd_user_by_id(fd, b))
            fd_err_reply(r, 404, 10007, "Unknown Member");
        else
            fd_set_reply(r, 200, fd_member_json(fd, b, 1));
    } else if (!strcmp(tmpl, "GET /guilds/{id}/members") &&
               sscanf(path, "/guilds/%23[0-9]", a) == 1) {
        json_t *arr = json_array();
        for (size_t i = 0; i < fd->n_users; i++)
            json_array_append_new(arr, fd_member_json(fd, fd->users[i].id, 1));
        fd_set_reply(r, 200, arr);
    } else {
        return 0;
    }
    return 1;
}

/* A channel's message by id, edits, reactions, typing, threads: 1 when the
 * request was one of these (r filled). */
static int api_channel_more(fake_discord *fd, const char *method, const char *path,
                            const char *tmpl, const char *user, json_t *body, reply *r)
{
    char a[32], b[32], e[128];
    if (!strcmp(tmpl, "GET /channels/{id}/messages/{id}") &&
        sscanf(path, "/channels/%23[0-9]/messages/%23[0-9]", a, b) == 2) {
        fd_chan *ch = fd_chan_by_id(fd, a);
        fd_msg *m = ch ? fd_msg_by_id(ch, b) : NULL;
        if (!ch)
            fd_err_reply(r, 404, 10003, "Unknown Channel");
        else if (!fd->no_perm && (fd_perms_in(fd, ch, user) & (PERM_VIEW | PERM_HISTORY)) !=
                                     (PERM_VIEW | PERM_HISTORY))
            fd_err_reply(r, 403, 50001, "Missing Access");
        else if (!m)
            fd_err_reply(r, 404, 10008, "Unknown Message");
        else
            fd_set_reply(r, 200, json_deep_copy(m->obj));
    } else if ((!strcmp(tmpl, "PATCH /channels/{id}/messages/{id}") ||
                !strcmp(tmpl, "DELETE /channels/{id}/messages/{id}")) &&
               sscanf(path, "/channels/%23[0-9]/messages/%23[0-9]", a, b) == 2) {
        api_edit_or_delete(fd, method, a, b, user, body, r);
    } else if (!strcmp(tmpl, "GET /guilds/{id}/threads/active")) {
        json_t *arr = json_array();
        for (size_t i = 0; i < fd->n_chans; i++)
            if (json_integer_value(json_object_get(fd->chans[i]->obj, "type")) ==
                CHAN_PUBLIC_THREAD)
                json_array_append(arr, fd->chans[i]->obj);
        fd_set_reply(r, 200, json_pack("{s:o, s:[]}", "threads", arr, "members"));
    } else if ((!strcmp(method, "PUT") || !strcmp(method, "DELETE")) &&
               sscanf(path, "/channels/%23[0-9]/thread-members/%127s", a, e) == 2) {
        if (!fd_chan_by_id(fd, a))
            fd_err_reply(r, 404, 10003, "Unknown Channel");
        else
            fd_set_reply(r, 204, NULL); /* joining/leaving is not modelled */
    } else if (!strcmp(tmpl, "POST /channels/{id}/typing") &&
               sscanf(path, "/channels/%23[0-9]", a) == 1) {
        fd_chan *ch = fd_chan_by_id(fd, a);
        if (!ch)
            fd_err_reply(r, 404, 10003, "Unknown Channel");
        else if (!fd->no_perm && !(fd_perms_in(fd, ch, user) & PERM_VIEW))
            fd_err_reply(r, 403, 50001, "Missing Access");
        else
            fd_set_reply(r, 204, NULL);
    } else if ((!strcmp(method, "PUT") || !strcmp(method, "DELETE")) &&
               sscanf(path, "/channels/%23[0-9]/messages/%23[0-9]/reactions/%127[^/]", a, b, e) ==
                   3) {
        fd_chan *ch = fd_chan_by_id(fd, a);
        if (!ch)
            fd_err_reply(r, 404, 10003, "Unknown Channel");
        else if (!fd_msg_by_id(ch, b))
            fd_err_reply(r, 404, 10008, "Unknown Message");
        else
            fd_set_reply(r, 204, NULL);
    } else if ((!strcmp(tmpl, "POST /channels/{id}/threads") &&
                sscanf(path, "/channels/%23[0-9]", a) == 1) ||
               (!strcmp(tmpl, "POST /channels/{id}/messages/{id}/threads") &&
                sscanf(path, "/channels/%23[0-9]/messages/%23[0-9]", a, b) == 2)) {
        int from_msg = strstr(tmpl, "/messages/") != NULL;
        fd_chan *ch = fd_chan_by_id(fd, a);
        if (!ch)
            fd_err_reply(r, 404, 10003, "Unknown Channel");
        else if (!fd->no_perm &&
                 (fd_perms_in(fd, ch, user) & (PERM_VIEW | PERM_SEND)) != (PERM_VIEW | PERM_SEND))
            fd_err_reply(r, 403, 50001, "Missing Access");
        else if (from_msg && !fd_msg_by_id(ch, b))
            fd_err_reply(r, 404, 10008, "Unknown Message");
        else {
            fd_chan *t =
                fd_thread_add(fd, ch, from_msg ? b : NULL, json_object_get(body, "name"), user, r);
            if (t)
                fd_set_reply(r, 201, json_deep_copy(t->obj));
        }
    } else {
        return 0;
    }
    return 1;
}

/* The routes a gateway client (OpenClaw's Discord plugin) needs beyond
 * channels and messages. 1 when handled (r set), 0 when not this route. */
static int api_more(fake_discord *fd, const char *method, const char *path, const char *tmpl,
                    const char *user, json_t *body, reply *r)
{
    return api_guild(fd, method, path, tmpl, user, body, r) ||
           api_channel_more(fd, method, path, tmpl, user, body, r);
}

/* Route bucket window; 1 when the request may go on. Adds headers. */
static int bucket_take(fake_discord *fd, const char *major, const char *tmpl, reply *r)
{
    fd_bucket *bk = dg_map_get(&fd->buckets, major);
    if (!bk) {
        if (!(bk = calloc(1, sizeof *bk)))
            return 1;
        snprintf(bk->key, sizeof bk->key, "%s", major);
        if (dg_map_put(&fd->buckets, bk->key, bk) != OC_OK) {
            free(bk);
            return 1;
        }
    }
    int64_t now = fd_mono_ms();
    int64_t win = (int64_t)(fd->rl_window * 1000.0);
    if (win < 1)
        win = 1;
    if (now - bk->window_start >= win) {
        bk->window_start = now;
        bk->used = 0;
    }
    double reset_after = (double)(bk->window_start + win - now) / 1000.0;
    unsigned h = 2166136261u;
    for (const char *p = tmpl; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    char bucket[16];
    snprintf(bucket, sizeof bucket, "%08x", h);
    if (bk->used >= fd->rl_limit) {
        fd_rate_limited(r, reset_after > 0.001 ? reset_after : 0.001, 0, bucket);
        return 0;
    }
    bk->used++;
    fd_add_hdr(r, "X-RateLimit-Bucket", "%s", bucket);
    fd_add_hdr(r, "X-RateLimit-Limit", "%d", fd->rl_limit);
    fd_add_hdr(r, "X-RateLimit-Remaining", "%d", fd->rl_limit - bk->used);
    fd_add_hdr(r, "X-RateLimit-Reset-After", "%.3f", reset_after);
    return 1;
}

/* Process one Discord request; r holds the answer. */
static void api_process(fake_discord *fd, struct MHD_Connection *c, const char *method,
                        const char *path, const char *tmpl, const char *major, const char *user,
                        json_t *body, reply *r)
{
    if (!strcmp(tmpl, "GET /gateway")) {
        gateway_info(fd, 0, r); /* Discord serves it without a token */
        return;
    }
    if (!user) {
        fd_err_reply(r, 401, 0, "401: Unauthorized");
        return;
    }
    if (!bucket_take(fd, major, tmpl, r))
        return;
    char id[32];
    if (!strcmp(tmpl, "POST /guilds/{id}/channels") &&
        sscanf(path, "/guilds/%23[0-9]/channels", id) == 1) {
        fd_api_create_channel(fd, id, body, r);
        return;
    }
    if (!strcmp(tmpl, "GET /guilds/{id}/channels") &&
        sscanf(path, "/guilds/%23[0-9]/channels", id) == 1) {
        fd_api_list_channels(fd, id, r);
        return;
    }
    int is_msgs = !strcmp(tmpl, "POST /channels/{id}/messages") ||
                  !strcmp(tmpl, "GET /channels/{id}/messages");
    int is_chan = !strcmp(tmpl, "GET /channels/{id}");
    if (!strcmp(tmpl, "DELETE /channels/{id}") && sscanf(path, "/channels/%23[0-9]", id) == 1) {
        fd_api_delete_channel(fd, id, r);
        return;
    }
    if ((is_msgs || is_chan) && sscanf(path, "/channels/%23[0-9]", id) == 1) {
        fd_chan *ch = fd_chan_by_id(fd, id);
        if (!ch) {
            fd_err_reply(r, 404, 10003, "Unknown Channel");
            return;
        }
        if (is_chan) {
            if (!fd->no_perm && !(fd_perms_in(fd, ch, user) & PERM_VIEW))
                fd_err_reply(r, 403, 50001, "Missing Access");
            else
                fd_set_reply(r, 200, json_deep_copy(ch->obj));
        } else if (method[0] == 'P') {
            fd_api_post_message(fd, ch, user, body, r);
        } else {
            fd_api_get_messages(fd, ch, user, c, r);
        }
        return;
    }
    if (!api_more(fd, method, path, tmpl, user, body, r))
        fd_err_reply(r, 404, 0, "404: Not Found");
}

/* Wait until stop or delay_ms passed (fd->mu held). */
static void delay_locked(fake_discord *fd, long delay_ms)
{
    int64_t until = fd_mono_ms() + delay_ms + 1; /* +1: never early through truncation */
    while (!fd->stopping && fd_mono_ms() < until) {
        struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
        pthread_cond_timedwait(&fd->cond, &fd->mu, &ts);
    }
}

/* Next fault for this request, or -1 (fd->mu held). */
static int take_fault(fake_discord *fd, const char *tmpl, const char *concrete, double *ra,
                      long *delay)
{
    for (size_t i = 0; i < fd->n_faults; i++) {
        fd_fault *f = &fd->faults[i];
        if (strcmp(f->route, "*") && strcmp(f->route, tmpl) && strcmp(f->route, concrete))
            continue;
        int kind = f->kind;
        *ra = f->retry_after;
        *delay = f->delay_ms;
        if (--f->count <= 0) {
            memmove(f, f + 1, (fd->n_faults - i - 1) * sizeof *f);
            fd->n_faults--;
        }
        return kind;
    }
    if (fd->fail_rate > 0 && fd_rand01(fd) < fd->fail_rate) {
        double x = fd_rand01(fd);
        *ra = fd->fail_retry_after;
        *delay = 0;
        return x < 0.4 ? FD_FAULT_429 : x < 0.7 ? FD_FAULT_500 : FD_FAULT_500_AFTER;
    }
    return -1;
}

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    char **q = cls;
    char *n = NULL;
    if (asprintf(&n, "%s%s%s%s%s", *q ? *q : "", *q ? "&" : "", key, value ? "=" : "",
                 value ? value : "") < 0)
        return MHD_YES;
    free(*q);
    *q = n;
    return MHD_YES;
}

/* The configured response latency, slept on the connection's own thread
 * (MHD runs a thread per connection) without the server lock; ends early
 * at stop. */
static void latency_wait(fake_discord *fd)
{
    if (fd->latency_us <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = (int64_t)ts.tv_nsec + (int64_t)fd->latency_us * 1000;
    ts.tv_sec += (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    pthread_mutex_lock(&fd->lat_mu);
    while (!fd->lat_stop && pthread_cond_timedwait(&fd->lat_cond, &fd->lat_mu, &ts) == 0)
        ;
    pthread_mutex_unlock(&fd->lat_mu);
}

/* An injected 429: its bucket named by a hash of the route template. */
static void rate_limit_fault(reply *r, const char *tmpl, double ra, int global)
{
    unsigned h = 2166136261u;
    for (const char *p = tmpl; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    char bucket[16];
    snprintf(bucket, sizeof bucket, "%08x", h);
    fd_rate_limited(r, ra, global, bucket);
}

/* A fault that strikes after the request was carried out: r replaced (500,
 * an unexpected shape) or answered late; 1 when the connection is dropped
 * instead. */
static int fault_after(fake_discord *fd, int fault, long delay, reply *r)
{
    if (fault == FD_FAULT_500_AFTER) {
        r->n_hdr = 0;
        fd_err_reply(r, 500, 0, "500: Internal Server Error");
    } else if (fault == FD_FAULT_DROP_AFTER) {
        return 1;
    } else if (fault == FD_FAULT_SHAPE_AFTER && r->status == 200) {
        int was_array = r->body ? json_is_array(r->body) : r->text && r->text[0] == '[';
        r->n_hdr = 0;
        fd_set_reply(r, 200,
                     was_array ? json_pack("{s:b}", "unexpected", 1)
                               : json_pack("[s]", "unexpected"));
    } else if (fault == FD_FAULT_DELAY_AFTER) {
        delay_locked(fd, delay);
        return fd->stopping;
    }
    return 0;
}

/* The client's TCP port into the request's record: it tells connections
 * apart (reuse checks). */
static void record_client_port(json_t *rec, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
        json_object_set_new(
            rec, "clientPort",
            json_integer(ntohs(((const struct sockaddr_in *)ci->client_addr)->sin_port)));
}

enum MHD_Result fd_api(fake_discord *fd, struct MHD_Connection *c, const char *method,
                       const char *path, fd_req *rq)
{
    char tmpl[192], major[192];
    fd_routes_of(method, path, tmpl, sizeof tmpl, major, sizeof major);
    char concrete[192];
    snprintf(concrete, sizeof concrete, "%s %s", method, path);
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
    char *query = NULL;
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_query, &query);
    json_t *body = NULL;
    if (rq->buf.len)
        body = json_loadb(rq->buf.s, rq->buf.len, 0, NULL);

    reply r;
    memset(&r, 0, sizeof r);
    pthread_mutex_lock(&fd->mu);
    const char *user = NULL;
    if (auth && !strncmp(auth, "Bot ", 4)) {
        fd_user *u = fd_user_by_token(fd, auth + 4);
        user = u ? u->id : NULL;
    }
    double ra = 0.05;
    long delay = 0;
    int fault = take_fault(fd, tmpl, concrete, &ra, &delay);
    if (ra <= 0)
        ra = 0.05;
    json_t *rec =
        fd->lean
            ? NULL
            : json_pack(
                  "{s:I, s:I, s:s, s:s, s:s?, s:s, s:s?, s:s?, s:s?, s:s?, s:s?, s:O?, s:i, s:s?}",
                  "seq", (json_int_t)++fd->seq, "tMs", (json_int_t)fd_mono_ms(), "method", method,
                  "path", path, "query", query, "route", tmpl, "authorization", auth, "authUserId",
                  user, "userAgent", ua, "contentType", ct, "expect", expect, "body", body,
                  "status", 0, "fault", fault >= 0 ? fake_discord_fault_name(fault) : NULL);
    free(query);
    if (fd->lean) {
        fd->lean_requests++;
        pthread_cond_broadcast(&fd->cond);
    }
    if (rec && !body && rq->buf.len)
        json_object_set_new(rec, "body", json_stringn_nocheck(rq->buf.s, rq->buf.len));
    if (rec && !json_object_get(rec, "body"))
        json_object_set_new(rec, "body", json_null());
    if (rec && !json_object_get(rec, "authUserId"))
        json_object_set_new(rec, "authUserId", json_null());
    if (rec) {
        record_client_port(rec, c);
        json_array_append(fd->requests, rec);
        pthread_cond_broadcast(&fd->cond);
    }

    int drop = 0;
    switch (fault) {
    case FD_FAULT_429:
    case FD_FAULT_GLOBAL_429: rate_limit_fault(&r, tmpl, ra, fault == FD_FAULT_GLOBAL_429); break;
    case FD_FAULT_500: fd_err_reply(&r, 500, 0, "500: Internal Server Error"); break;
    case FD_FAULT_403: fd_err_reply(&r, 403, 50013, "Missing Permissions"); break;
    case FD_FAULT_DROP: drop = 1; break;
    default:
        if (fault == FD_FAULT_DELAY)
            delay_locked(fd, delay);
        if (fd->stopping) {
            drop = 1;
            break;
        }
        api_process(fd, c, method, path, tmpl, major, user, body, &r);
        drop = fault_after(fd, fault, delay, &r);
        break;
    }
    if (rec) {
        json_object_set_new(rec, "status", json_integer(drop ? -1 : r.status));
        json_decref(rec);
    }
    pthread_cond_broadcast(&fd->cond);
    pthread_mutex_unlock(&fd->mu);
    json_decref(body);
    if (drop) {
        fd_set_reply(&r, 0, NULL);
        return MHD_NO;
    }
    latency_wait(fd);
    return fd_send_reply(c, &r);
}
