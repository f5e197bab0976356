/*
 * fake_discord_control.c -- the fake Discord's /_test control endpoints:
 * users, roles, channels, faults, rates, the recorded requests and messages
 * (see fake_discord_int.h).
 */
#include "fake_discord_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- control endpoints ------------------------------------------------------------------ */

static int cmp_msg(const void *a, const void *b)
{
    const fd_msg *x = *(const fd_msg *const *)a, *y = *(const fd_msg *const *)b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Messages of one channel or all, oldest first across channels. */
json_t *fd_messages_locked(fake_discord *fd, const char *channel)
{
    size_t total = 0;
    for (size_t i = 0; i < fd->n_chans; i++)
        if (!channel || !strcmp(fd->chans[i]->id, channel))
            total += fd->chans[i]->n;
    fd_msg **all = total ? malloc(total * sizeof *all) : NULL;
    json_t *arr = json_array();
    if (total && !all)
        return arr;
    size_t k = 0;
    for (size_t i = 0; i < fd->n_chans; i++) {
        fd_chan *ch = fd->chans[i];
        if (channel && strcmp(ch->id, channel))
            continue;
        for (size_t m = 0; m < ch->n; m++)
            if (ch->msgs[m].obj) /* lean: bodies are not kept */
                all[k++] = &ch->msgs[m];
    }
    if (k > 1)
        qsort(all, k, sizeof *all, cmp_msg);
    for (size_t i = 0; i < k; i++)
        json_array_append_new(arr, json_deep_copy(all[i]->obj));
    free(all);
    return arr;
}

int fd_add_user_locked(fake_discord *fd, const char *token, const char *id, const char *username,
                       int bot)
{
    /* A human may come without a token (no API access, only a name). */
    if ((bot && (!token || !*token)) || (token && !*token) || !dg_snowflake_valid(id))
        return -1;
    fd_user *u = token ? fd_user_by_token(fd, token) : fd_user_by_id(fd, id);
    if (u && !token && u->token)
        u = NULL; /* a token user keeps its entry; this is another one */
    if (!u) {
        if (fd_grow((void **)&fd->users, &fd->cap_users, fd->n_users, sizeof *fd->users))
            return -1;
        u = &fd->users[fd->n_users];
        memset(u, 0, sizeof *u);
        if (token && !(u->token = strdup(token)))
            return -1;
        fd->n_users++;
    }
    snprintf(u->id, sizeof u->id, "%s", id);
    free(u->username);
    u->username = username ? strdup(username) : NULL;
    u->bot = bot;
    return 0;
}

int fd_add_fault_locked(fake_discord *fd, const char *route, int kind, int count, double ra,
                        long delay)
{
    if (!route || kind < 0 || kind >= FD_FAULT_KIND_COUNT || count < 1 ||
        fd_grow((void **)&fd->faults, &fd->cap_faults, fd->n_faults, sizeof *fd->faults))
        return -1;
    fd_fault *f = &fd->faults[fd->n_faults++];
    memset(f, 0, sizeof *f);
    snprintf(f->route, sizeof f->route, "%s", route);
    f->kind = kind;
    f->count = count;
    f->retry_after = ra > 0 ? ra : 0.05;
    f->delay_ms = delay;
    return 0;
}

void fd_clear_faults_locked(fake_discord *fd)
{
    fd->n_faults = 0;
    fd->fail_rate = 0;
}

/* POST /_fake/messages: a message from anyone (a human), optionally opening a thread on it. */
static void ctl_post_message(fake_discord *fd, json_t *body, reply *r)
{
    const char *ch = json_string_value(json_object_get(body, "channelId"));
    const char *th = json_string_value(json_object_get(body, "threadId"));
    const char *au = json_string_value(json_object_get(body, "authorId"));
    const char *ct = json_string_value(json_object_get(body, "content"));
    json_t *mentions = json_object_get(body, "mentions");
    json_t *mk = json_object_get(body, "createThread");
    fd_chan *chan = fd_chan_by_id(fd, th ? th : ch);
    if (!chan || !dg_snowflake_valid(au) || !ct || (mentions && !json_is_array(mentions)) ||
        (mk && !json_is_string(mk))) {
        fd_err_reply(r, 400, 0,
                     "need channelId or threadId (an existing channel or thread), "
                     "authorId (snowflake), content; mentions: array of user ids; "
                     "createThread: a thread name");
    } else {
        fd_msg *m = fd_msg_add(fd, chan, au, ct, NULL, NULL, mentions);
        if (!m) {
            fd_err_reply(r, 500, 0, "out of memory");
        } else if (mk) {
            char mid[24];
            snprintf(mid, sizeof mid, "%llu", (unsigned long long)m->id);
            json_t *obj = json_deep_copy(m->obj);
            fd_chan *t = fd_thread_add(fd, chan, mid, mk, au, r);
            if (t) {
                json_object_set(obj, "thread", t->obj);
                fd_set_reply(r, 200, obj);
            } else {
                json_decref(obj);
            }
        } else {
            fd_set_reply(r, 200, json_deep_copy(m->obj));
        }
    }
}

/* POST /_fake/threads: a thread in a text channel, optionally on one of its messages. */
static void ctl_post_thread(fake_discord *fd, json_t *body, reply *r)
{
    const char *ch = json_string_value(json_object_get(body, "channelId"));
    const char *mid = json_string_value(json_object_get(body, "messageId"));
    const char *owner = json_string_value(json_object_get(body, "ownerId"));
    fd_chan *chan = fd_chan_by_id(fd, ch);
    if (!chan || (mid && !fd_msg_by_id(chan, mid)) || (owner && !dg_snowflake_valid(owner))) {
        fd_err_reply(r, 400, 0,
                     "need channelId (an existing text channel), name; messageId "
                     "(a message of it) and ownerId (snowflake) are optional");
    } else {
        fd_chan *t = fd_thread_add(fd, chan, mid, json_object_get(body, "name"),
                                   owner ? owner : "100000000000000009", r);
        if (t)
            fd_set_reply(r, 200, json_deep_copy(t->obj));
    }
}

/* POST /_fake/channels: a channel of the fake's guild, its id given or made. */
static void ctl_post_channel(fake_discord *fd, json_t *body, reply *r)
{
    const char *id = json_string_value(json_object_get(body, "id"));
    const char *g = json_string_value(json_object_get(body, "guildId"));
    char nid[24];
    if (id)
        snprintf(nid, sizeof nid, "%s", id);
    else
        snprintf(nid, sizeof nid, "%llu", (unsigned long long)fd_next_id(fd));
    if (!json_is_object(body) || (id && !dg_snowflake_valid(id)) || fd_chan_by_id(fd, nid) ||
        (g && strcmp(g, fd->guild))) {
        fd_err_reply(r, 400, 0,
                     "need a JSON object; id must be a new snowflake; guildId "
                     "must be the fake's guild");
    } else {
        json_t *spec = json_deep_copy(body);
        if (!json_object_get(spec, "name"))
            json_object_set_new(spec, "name", json_string("general"));
        json_t *obj = fd_channel_from(fd, spec, nid, r);
        json_decref(spec);
        if (obj && fd_chan_add(fd, nid, obj))
            fd_set_reply(r, 200, json_deep_copy(obj));
        else if (obj)
            json_decref(obj);
    }
}

/* POST /_fake/fail-rate: a seeded share of requests fails. */
static void ctl_fail_rate(fake_discord *fd, json_t *body, reply *r)
{
    double rate = json_number_value(json_object_get(body, "rate"));
    if (rate < 0 || rate > 1) {
        fd_err_reply(r, 400, 0, "rate must be between 0 and 1");
    } else {
        json_t *seed = json_object_get(body, "seed");
        fd->fail_rate = rate;
        fd->rng =
            seed ? (uint64_t)json_integer_value(seed) * 2654435761u + 1 : 88172645463325252ull;
        double ra = json_number_value(json_object_get(body, "retryAfter"));
        fd->fail_retry_after = ra > 0 ? ra : 0.05;
        fd_set_reply(r, 200, json_pack("{s:b}", "ok", 1));
    }
}

/* POST /_fake/roles: a guild role and the members holding it. */
static void ctl_post_role(fake_discord *fd, json_t *body, reply *r)
{
    /* {id, name?, permissions (decimal string or integer), members?: [user ids]} */
    const char *id = json_string_value(json_object_get(body, "id"));
    const char *name = json_string_value(json_object_get(body, "name"));
    json_t *pv = json_object_get(body, "permissions");
    json_t *members = json_object_get(body, "members");
    if (!id || !dg_snowflake_valid(id) || (!json_is_string(pv) && !json_is_integer(pv)) ||
        (members && !json_is_array(members))) {
        fd_err_reply(r, 400, 0, "need id (a snowflake), permissions, members?: [user ids]");
    } else {
        char perms[24];
        snprintf(perms, sizeof perms, "%llu", (unsigned long long)fd_perm_value(pv));
        json_array_append_new(fd->roles,
                              json_pack("{s:s, s:s, s:s, s:i, s:i, s:b, s:b, s:b, s:i}", "id", id,
                                        "name", name ? name : "role", "permissions", perms,
                                        "position", (int)json_array_size(fd->roles) + 1, "color", 0,
                                        "hoist", 0, "managed", 0, "mentionable", 0, "flags", 0));
        size_t i;
        json_t *m;
        json_array_foreach(members, i, m) {
            const char *uid = json_string_value(m);
            if (!uid)
                continue;
            json_t *arr = json_object_get(fd->member_roles, uid);
            if (!arr) {
                arr = json_array();
                json_object_set_new(fd->member_roles, uid, arr);
            }
            json_array_append_new(arr, json_string(id));
        }
        fd_set_reply(r, 200, json_pack("{s:b}", "ok", 1));
    }
}

enum MHD_Result fd_control(fake_discord *fd, struct MHD_Connection *c, const char *method,
                           const char *path, fd_req *rq)
{
    reply r;
    memset(&r, 0, sizeof r);
    json_t *body = rq->buf.len ? json_loadb(rq->buf.s, rq->buf.len, 0, NULL) : NULL;
    int get = !strcmp(method, "GET"), post = !strcmp(method, "POST"),
        del = !strcmp(method, "DELETE");
    pthread_mutex_lock(&fd->mu);
    if (get && !strcmp(path, "/_fake/health")) {
        fd_set_reply(&r, 200, json_pack("{s:b, s:s}", "ok", 1, "guildId", fd->guild));
    } else if (get && !strcmp(path, "/_fake/requests")) {
        const char *since = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
        long s = since ? strtol(since, NULL, 10) : 0;
        json_t *arr = json_array();
        size_t i;
        json_t *rec;
        json_array_foreach(fd->requests, i, rec) {
            if (json_integer_value(json_object_get(rec, "seq")) > s)
                json_array_append_new(arr, json_deep_copy(rec));
        }
        fd_set_reply(&r, 200, arr);
    } else if (del && !strcmp(path, "/_fake/requests")) {
        json_array_clear(fd->requests);
        fd_set_reply(&r, 200, json_pack("{s:b}", "ok", 1));
    } else if (get && !strcmp(path, "/_fake/messages")) {
        const char *ch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "channel");
        fd_set_reply(&r, 200, fd_messages_locked(fd, ch));
    } else if (post && !strcmp(path, "/_fake/messages")) {
        ctl_post_message(fd, body, &r);
    } else if (post && !strcmp(path, "/_fake/threads")) {
        ctl_post_thread(fd, body, &r);
    } else if (get && !strcmp(path, "/_fake/gateway")) {
        fd_set_reply(&r, 200, fdg_sessions(fd->gw));
    } else if (get && !strcmp(path, "/_fake/channels")) {
        json_t *arr = json_array();
        for (size_t i = 0; i < fd->n_chans; i++)
            json_array_append_new(arr, json_deep_copy(fd->chans[i]->obj));
        fd_set_reply(&r, 200, arr);
    } else if (post && !strcmp(path, "/_fake/channels")) {
        ctl_post_channel(fd, body, &r);
    } else if (post && !strcmp(path, "/_fake/users")) {
        json_t *bot = json_object_get(body, "bot");
        if (fd_add_user_locked(fd, json_string_value(json_object_get(body, "token")),
                               json_string_value(json_object_get(body, "userId")),
                               json_string_value(json_object_get(body, "username")),
                               bot ? json_is_true(bot) : 1))
            fd_err_reply(&r, 400, 0,
                         "need userId (snowflake) and token (string; optional for "
                         "bot:false)");
        else
            fd_set_reply(&r, 200, json_pack("{s:b}", "ok", 1));
    } else if (post && !strcmp(path, "/_fake/faults")) {
        json_t *cnt = json_object_get(body, "count");
        const char *route = json_string_value(json_object_get(body, "route"));
        if (fd_add_fault_locked(
                fd, route ? route : "*",
                fake_discord_fault_parse(json_string_value(json_object_get(body, "kind"))),
                cnt ? (int)json_integer_value(cnt) : 1,
                json_number_value(json_object_get(body, "retryAfter")),
                (long)json_integer_value(json_object_get(body, "delayMs"))))
            fd_err_reply(&r, 400, 0,
                         "need kind (429, global429, 500, 500after, 403, delay, "
                         "delayafter, drop, dropafter), count >= 1, route");
        else
            fd_set_reply(&r, 200, json_pack("{s:b}", "ok", 1));
    } else if (del && !strcmp(path, "/_fake/faults")) {
        fd_clear_faults_locked(fd);
        fd_set_reply(&r, 200, json_pack("{s:b}", "ok", 1));
    } else if (post && !strcmp(path, "/_fake/fail-rate")) {
        ctl_fail_rate(fd, body, &r);
    } else if (post && !strcmp(path, "/_fake/roles")) {
        ctl_post_role(fd, body, &r);
    } else if (post && !strcmp(path, "/_fake/rate-limit")) {
        int limit = (int)json_integer_value(json_object_get(body, "limit"));
        double win = json_number_value(json_object_get(body, "windowSec"));
        if (limit < 1 || win <= 0) {
            fd_err_reply(&r, 400, 0, "need limit >= 1 and windowSec > 0");
        } else {
            fd->rl_limit = limit;
            fd->rl_window = win;
            fd_set_reply(&r, 200, json_pack("{s:b}", "ok", 1));
        }
    } else {
        fd_err_reply(&r, 404, 0, "unknown control endpoint; see tests/support/fake_discord.h");
    }
    pthread_mutex_unlock(&fd->mu);
    json_decref(body);
    return fd_send_reply(c, &r);
}
