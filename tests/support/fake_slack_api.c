/*
 * fake_slack_api.c -- the fake Slack's built-in Web API methods on its
 * in-memory model (fake_slack_int.h); fake_slack.h lists them with the
 * errors they give. Every function here runs with fs->mu held, on the
 * thread of the request.
 */
#include "fake_slack_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

#define HISTORY_DEFAULT 100
#define HISTORY_MAX 999
#define REPLIES_DEFAULT 1000
#define MEMBERS_DEFAULT 100
#define INVITE_MAX 1000

/* {"ok":false,"error":"missing_scope","needed":..,"provided":..} when the
 * caller's token lacks scope, else NULL. */
static json_t *scope_missing(const fs_user *u, const char *scope)
{
    if (!u->scopes)
        return NULL;
    char needle[80];
    snprintf(needle, sizeof needle, ",%s,", scope);
    if (strstr(u->scopes, needle))
        return NULL;
    json_t *e = fsi_err("missing_scope");
    json_object_set_new(e, "needed", json_string(scope));
    /* ",a,b," -> "a,b" */
    size_t n = strlen(u->scopes);
    char *prov = strndup(u->scopes + 1, n > 2 ? n - 2 : 0);
    json_object_set_new(e, "provided", json_string(prov ? prov : ""));
    free(prov);
    return e;
}

/* The scope a channel method needs: public_scope or private_scope. */
static json_t *chan_scope_missing(const fs_user *u, const fs_chan *ch, const char *public_scope,
                                  const char *private_scope)
{
    return scope_missing(u, ch && ch->is_private ? private_scope : public_scope);
}

/* The channel named by args' key ("channel"): by id, or by name with or
 * without '#'. A private channel the caller is not in does not exist for
 * it. NULL with *err set when not found. */
static fs_chan *visible_chan(fake_slack *fs, const fs_user *u, const json_t *args, json_t **err)
{
    char buf[32];
    const char *id = fsi_arg(args, "channel", buf, sizeof buf);
    if (!id || !*id) {
        *err = fsi_err("channel_not_found");
        return NULL;
    }
    fs_chan *ch = fsi_chan_by_id(fs, id);
    if (!ch)
        ch = fsi_chan_by_name(fs, id[0] == '#' ? id + 1 : id);
    if (!ch || (ch->is_private && !fsi_is_member(ch, u->id))) {
        *err = fsi_err("channel_not_found");
        return NULL;
    }
    return ch;
}

static json_t *ok(void)
{
    return json_pack("{s:b}", "ok", 1);
}

/* A copy of a stored message as history shows it: metadata only when
 * asked for. NEW reference. */
static json_t *msg_view(const fs_msg *m, int with_metadata)
{
    json_t *o = json_deep_copy(m->obj);
    if (o && !with_metadata)
        json_object_del(o, "metadata");
    return o;
}

static fs_msg *msg_by_ts(fs_chan *ch, const char *ts)
{
    for (size_t i = 0; i < ch->n; i++)
        if (!strcmp(ch->msgs[i].ts, ts))
            return &ch->msgs[i];
    return NULL;
}

/* "1700000000.000100" -> microseconds; -1 when it is no ts. */
static long long ts_us(const char *ts)
{
    if (!ts || !*ts)
        return -1;
    char *end = NULL;
    long long s = strtoll(ts, &end, 10);
    long long us = 0;
    if (*end == '.') {
        const char *p = end + 1;
        int digits = 0;
        for (; *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
            us = us * 10 + (*p - '0');
        for (; digits < 6; digits++)
            us *= 10;
        end = (char *)p;
    }
    return s * 1000000LL + us;
}

static long arg_long(const json_t *args, const char *key, long dflt)
{
    char buf[32];
    const char *v = fsi_arg(args, key, buf, sizeof buf);
    if (!v || !*v)
        return dflt;
    return strtol(v, NULL, 10);
}

/* ---- auth.test, users.info ------------------------------------------------------- */

static json_t *auth_test(fake_slack *fs, const fs_user *u)
{
    json_t *o = ok();
    json_object_set_new(o, "url", json_sprintf("https://%s.slack.com/", fs->team_name));
    json_object_set_new(o, "team", json_string(fs->team_name));
    json_object_set_new(o, "user", json_string(u->name));
    json_object_set_new(o, "team_id", json_string(fs->team));
    json_object_set_new(o, "user_id", json_string(u->id));
    if (u->bot)
        json_object_set_new(o, "bot_id", json_string(u->bot_id));
    json_object_set_new(o, "is_enterprise_install", json_false());
    return o;
}

static json_t *users_info(fake_slack *fs, const fs_user *u, const json_t *args)
{
    json_t *e = scope_missing(u, "users:read");
    if (e)
        return e;
    char buf[32];
    const char *id = fsi_arg(args, "user", buf, sizeof buf);
    const fs_user *t = id ? fsi_user_by_id(fs, id) : NULL;
    if (!t)
        return fsi_err("user_not_found");
    json_t *profile = json_pack("{s:s, s:s}", "display_name", t->name, "real_name", t->name);
    if (t->bot)
        json_object_set_new(profile, "bot_id", json_string(t->bot_id));
    json_t *user = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:o}", "id", t->id, "team_id",
                             fs->team, "name", t->name, "real_name", t->name, "is_bot", t->bot,
                             "deleted", 0, "profile", profile);
    json_t *o = ok();
    json_object_set_new(o, "user", user);
    return o;
}

/* ---- chat.postMessage -------------------------------------------------------------- */

/* The metadata argument as an object {event_type, event_payload?} (NEW
 * reference), or NULL with *bad set when it is malformed. */
static json_t *metadata_of(const json_t *args, int *bad)
{
    json_t *v = json_object_get(args, "metadata");
    *bad = 0;
    if (!v)
        return NULL;
    json_t *m = json_is_string(v) ? json_loads(json_string_value(v), 0, NULL) : json_incref(v);
    json_t *type = json_object_get(m, "event_type");
    json_t *payload = json_object_get(m, "event_payload");
    if (!json_is_object(m) || !json_is_string(type) || !*json_string_value(type) ||
        (payload && !json_is_object(payload))) {
        json_decref(m);
        *bad = 1;
        return NULL;
    }
    return m;
}

/* Check a post's thread_ts: "" or the ts of a top-level message of ch
 * (a reply's ts names its parent's thread, as Slack does). */
static int thread_of(fs_chan *ch, const char *thread_ts, char *parent, size_t len)
{
    parent[0] = '\0';
    if (!thread_ts || !*thread_ts)
        return 0;
    fs_msg *m = msg_by_ts(ch, thread_ts);
    if (!m)
        return -1;
    snprintf(parent, len, "%s", m->thread_ts[0] ? m->thread_ts : m->ts);
    return 0;
}

static json_t *post_message(fake_slack *fs, const fs_user *u, const json_t *args)
{
    json_t *e = scope_missing(u, "chat:write");
    if (e)
        return e;
    fs_chan *ch = visible_chan(fs, u, args, &e);
    if (!ch)
        return e;
    if (ch->archived)
        return fsi_err("is_archived");
    if (!fsi_is_member(ch, u->id))
        return fsi_err("not_in_channel");
    const char *text = json_string_value(json_object_get(args, "text"));
    if (!text || !*text)
        return fsi_err("no_text");
    if (dg_utf8_count(text) > FAKE_SLACK_MAX_TEXT)
        return fsi_err("msg_too_long");
    int bad = 0;
    json_t *meta = metadata_of(args, &bad);
    if (bad)
        return fsi_err("invalid_metadata_format");
    char tbuf[32], parent[24];
    if (thread_of(ch, fsi_arg(args, "thread_ts", tbuf, sizeof tbuf), parent, sizeof parent)) {
        json_decref(meta);
        return fsi_err("thread_not_found");
    }
    json_t *obj = json_pack("{s:s, s:s, s:s, s:s}", "type", "message", "text", text, "user", u->id,
                            "team", fs->team);
    if (u->bot) {
        json_object_set_new(obj, "bot_id", json_string(u->bot_id));
        json_object_set_new(obj, "app_id", json_string(u->app_id));
    }
    if (meta)
        json_object_set_new(obj, "metadata", meta);
    fs_msg *m = fsi_msg_add(fs, ch, obj, parent[0] ? parent : NULL);
    if (!m)
        return NULL;
    json_t *o = ok();
    json_object_set_new(o, "channel", json_string(ch->id));
    json_object_set_new(o, "ts", json_string(m->ts));
    json_object_set_new(o, "message", json_deep_copy(m->obj));
    return o;
}

/* ---- conversations.create / invite / archive / info -------------------------------- */

static json_t *conv_create(fake_slack *fs, fs_user *u, const json_t *args)
{
    int priv = fsi_arg_bool(args, "is_private");
    json_t *e = scope_missing(u, priv ? "groups:write" : "channels:manage");
    if (e)
        return e;
    char buf[128];
    const char *name = fsi_arg(args, "name", buf, sizeof buf);
    const char *why = fsi_name_error(name);
    if (why)
        return fsi_err(why);
    if (fsi_chan_by_name(fs, name))
        return fsi_err("name_taken");
    fs_chan *ch = fsi_chan_add(fs, NULL, name, priv, u->id);
    if (!ch || fsi_join(fs, ch, u->id) != 0)
        return NULL;
    json_t *o = ok();
    json_object_set_new(o, "channel", fsi_chan_json(fs, ch, 0));
    return o;
}

/* Split "U1,U2" into ids and invite each; the answer's error or NULL. */
static json_t *invite_all(fake_slack *fs, fs_user *u, fs_chan *ch, const char *users)
{
    char *list = strdup(users);
    if (!list)
        return fsi_err("internal_error");
    json_t *err = NULL;
    size_t n = 0, already = 0;
    char *save = NULL;
    for (char *id = strtok_r(list, ",", &save); id && !err; id = strtok_r(NULL, ",", &save)) {
        while (*id == ' ')
            id++;
        if (!*id)
            continue;
        if (++n > INVITE_MAX)
            err = fsi_err("too_many_users");
        else if (!strcmp(id, u->id))
            err = fsi_err("cant_invite_self");
        else if (!fsi_user_by_id(fs, id))
            err = fsi_err("user_not_found");
        else if (fsi_is_member(ch, id))
            already++;
    }
    if (!err && n == 0)
        err = fsi_err("no_user");
    if (!err && already == n)
        err = fsi_err("already_in_channel");
    if (!err) {
        save = NULL;
        free(list);
        list = strdup(users);
        for (char *id = list ? strtok_r(list, ",", &save) : NULL; id;
             id = strtok_r(NULL, ",", &save)) {
            while (*id == ' ')
                id++;
            if (*id && !fsi_is_member(ch, id) && fsi_join(fs, ch, id) != 0)
                err = fsi_err("internal_error");
        }
    }
    free(list);
    return err;
}

static json_t *conv_invite(fake_slack *fs, fs_user *u, const json_t *args)
{
    json_t *e = NULL;
    fs_chan *ch = visible_chan(fs, u, args, &e);
    if (!ch)
        return e;
    if ((e = chan_scope_missing(u, ch, "channels:manage", "groups:write")))
        return e;
    if (ch->archived)
        return fsi_err("is_archived");
    if (!fsi_is_member(ch, u->id))
        return fsi_err("not_in_channel");
    const char *users = json_string_value(json_object_get(args, "users"));
    if (!users)
        return fsi_err("no_user");
    if ((e = invite_all(fs, u, ch, users)))
        return e;
    json_t *o = ok();
    json_object_set_new(o, "channel", fsi_chan_json(fs, ch, 0));
    return o;
}

static json_t *conv_archive(fake_slack *fs, fs_user *u, const json_t *args)
{
    json_t *e = NULL;
    fs_chan *ch = visible_chan(fs, u, args, &e);
    if (!ch)
        return e;
    if ((e = chan_scope_missing(u, ch, "channels:manage", "groups:write")))
        return e;
    if (ch->archived)
        return fsi_err("already_archived");
    if (!fsi_is_member(ch, u->id))
        return fsi_err("not_in_channel");
    ch->archived = 1;
    return ok();
}

static json_t *conv_info(fake_slack *fs, fs_user *u, const json_t *args)
{
    json_t *e = NULL;
    fs_chan *ch = visible_chan(fs, u, args, &e);
    if (!ch)
        return e;
    if ((e = chan_scope_missing(u, ch, "channels:read", "groups:read")))
        return e;
    json_t *o = ok();
    json_object_set_new(o, "channel", fsi_chan_json(fs, ch, 0));
    return o;
}

/* ---- conversations.history / replies / members ------------------------------------ */

/* A channel the caller may read messages of, or NULL with *e set. */
static fs_chan *readable_chan(fake_slack *fs, fs_user *u, const json_t *args, json_t **e)
{
    fs_chan *ch = visible_chan(fs, u, args, e);
    if (!ch)
        return NULL;
    if ((*e = chan_scope_missing(u, ch, "channels:history", "groups:history")))
        return NULL;
    if (!fsi_is_member(ch, u->id)) {
        *e = fsi_err("not_in_channel");
        return NULL;
    }
    return ch;
}

static void set_cursor(json_t *o, const char *next)
{
    json_object_set_new(o, "has_more", json_boolean(next != NULL));
    json_object_set_new(o, "response_metadata",
                        json_pack("{s:s}", "next_cursor", next ? next : ""));
}

/* Within (oldest, latest), both exclusive unless inclusive. */
static int in_window(long long t, long long oldest, long long latest, int inclusive)
{
    if (oldest >= 0 && (inclusive ? t < oldest : t <= oldest))
        return 0;
    if (latest >= 0 && (inclusive ? t > latest : t >= latest))
        return 0;
    return 1;
}

static json_t *conv_history(fake_slack *fs, fs_user *u, const json_t *args)
{
    json_t *e = NULL;
    fs_chan *ch = readable_chan(fs, u, args, &e);
    if (!ch)
        return e;
    long limit = arg_long(args, "limit", HISTORY_DEFAULT);
    if (limit <= 0)
        limit = HISTORY_DEFAULT;
    if (limit > HISTORY_MAX)
        limit = HISTORY_MAX;
    char b1[32], b2[32], b3[40];
    long long oldest = ts_us(fsi_arg(args, "oldest", b1, sizeof b1));
    long long latest = ts_us(fsi_arg(args, "latest", b2, sizeof b2));
    const char *cursor = fsi_arg(args, "cursor", b3, sizeof b3);
    /* The cursor is "ts:<ts of the next message to give>". */
    long long from = cursor && !strncmp(cursor, "ts:", 3) ? ts_us(cursor + 3) : -1;
    int inclusive = fsi_arg_bool(args, "inclusive");
    int with_meta = fsi_arg_bool(args, "include_all_metadata");
    json_t *msgs = json_array();
    const char *next = NULL;
    for (size_t i = ch->n; i-- > 0;) {
        fs_msg *m = &ch->msgs[i];
        long long t = ts_us(m->ts);
        if (m->thread_ts[0] || !in_window(t, oldest, latest, inclusive) || (from >= 0 && t > from))
            continue;
        if ((long)json_array_size(msgs) == limit) {
            next = m->ts;
            break;
        }
        json_array_append_new(msgs, msg_view(m, with_meta));
    }
    json_t *o = ok();
    json_object_set_new(o, "messages", msgs);
    char nc[40];
    snprintf(nc, sizeof nc, "ts:%s", next ? next : "");
    set_cursor(o, next ? nc : NULL);
    return o;
}

static json_t *conv_replies(fake_slack *fs, fs_user *u, const json_t *args)
{
    json_t *e = NULL;
    fs_chan *ch = readable_chan(fs, u, args, &e);
    if (!ch)
        return e;
    char b1[32], b2[40];
    const char *ts = fsi_arg(args, "ts", b1, sizeof b1);
    fs_msg *parent = ts ? msg_by_ts(ch, ts) : NULL;
    if (!parent)
        return fsi_err("thread_not_found");
    const char *root = parent->thread_ts[0] ? parent->thread_ts : parent->ts;
    long limit = arg_long(args, "limit", REPLIES_DEFAULT);
    if (limit <= 0)
        limit = REPLIES_DEFAULT;
    const char *cursor = fsi_arg(args, "cursor", b2, sizeof b2);
    long long from = cursor && !strncmp(cursor, "ts:", 3) ? ts_us(cursor + 3) : -1;
    int with_meta = fsi_arg_bool(args, "include_all_metadata");
    json_t *msgs = json_array();
    const char *next = NULL;
    for (size_t i = 0; i < ch->n; i++) {
        fs_msg *m = &ch->msgs[i];
        if (strcmp(m->ts, root) && strcmp(m->thread_ts, root))
            continue;
        if (from >= 0 && ts_us(m->ts) < from)
            continue;
        if ((long)json_array_size(msgs) == limit) {
            next = m->ts;
            break;
        }
        json_array_append_new(msgs, msg_view(m, with_meta));
    }
    json_t *o = ok();
    json_object_set_new(o, "messages", msgs);
    char nc[40];
    snprintf(nc, sizeof nc, "ts:%s", next ? next : "");
    set_cursor(o, next ? nc : NULL);
    return o;
}

static json_t *conv_members(fake_slack *fs, fs_user *u, const json_t *args)
{
    json_t *e = NULL;
    fs_chan *ch = visible_chan(fs, u, args, &e);
    if (!ch)
        return e;
    if ((e = chan_scope_missing(u, ch, "channels:read", "groups:read")))
        return e;
    long limit = arg_long(args, "limit", MEMBERS_DEFAULT);
    if (limit <= 0)
        limit = MEMBERS_DEFAULT;
    char b[40];
    const char *cursor = fsi_arg(args, "cursor", b, sizeof b);
    size_t from = cursor && !strncmp(cursor, "ix:", 3) ? strtoul(cursor + 3, NULL, 10) : 0;
    json_t *out = json_array();
    size_t i = from;
    for (; i < json_array_size(ch->members) && (long)(i - from) < limit; i++)
        json_array_append(out, json_array_get(ch->members, i));
    json_t *o = ok();
    json_object_set_new(o, "members", out);
    char nc[40];
    snprintf(nc, sizeof nc, "ix:%zu", i);
    set_cursor(o, i < json_array_size(ch->members) ? nc : NULL);
    return o;
}

/* conversations.list: types= (public_channel, private_channel; default
 * public), exclude_archived=, limit=, cursor=. Private channels only when
 * the caller is a member, as Slack lists them to a bot. */
static json_t *conv_list(fake_slack *fs, fs_user *u, const json_t *args)
{
    char b1[64], b2[40];
    const char *types = fsi_arg(args, "types", b1, sizeof b1);
    int want_pub = !types || strstr(types, "public_channel") != NULL;
    int want_priv = types && strstr(types, "private_channel") != NULL;
    json_t *e = NULL;
    if ((want_pub && (e = scope_missing(u, "channels:read"))) ||
        (want_priv && (e = scope_missing(u, "groups:read"))))
        return e;
    int no_archived = fsi_arg_bool(args, "exclude_archived");
    long limit = arg_long(args, "limit", MEMBERS_DEFAULT);
    if (limit <= 0)
        limit = MEMBERS_DEFAULT;
    const char *cursor = fsi_arg(args, "cursor", b2, sizeof b2);
    size_t i = cursor && !strncmp(cursor, "ix:", 3) ? strtoul(cursor + 3, NULL, 10) : 0;
    json_t *out = json_array();
    for (; i < fs->n_chans && (long)json_array_size(out) < limit; i++) {
        fs_chan *ch = fs->chans[i];
        if ((ch->is_private ? !want_priv || !fsi_is_member(ch, u->id) : !want_pub) ||
            (no_archived && ch->archived))
            continue;
        json_array_append_new(out, fsi_chan_json(fs, ch, 0));
    }
    json_t *o = ok();
    json_object_set_new(o, "channels", out);
    char nc[40];
    snprintf(nc, sizeof nc, "ix:%zu", i);
    set_cursor(o, i < fs->n_chans ? nc : NULL);
    return o;
}

/* ---- dispatch -------------------------------------------------------------------------- */

int fsa_call(fake_slack *fs, const char *method, fs_user *u, const json_t *args, fs_answer *a)
{
    json_t *r;
    if (!strcmp(method, "auth.test"))
        r = auth_test(fs, u);
    else if (!strcmp(method, "users.info"))
        r = users_info(fs, u, args);
    else if (!strcmp(method, "chat.postMessage"))
        r = post_message(fs, u, args);
    else if (!strcmp(method, "conversations.create"))
        r = conv_create(fs, u, args);
    else if (!strcmp(method, "conversations.invite"))
        r = conv_invite(fs, u, args);
    else if (!strcmp(method, "conversations.archive"))
        r = conv_archive(fs, u, args);
    else if (!strcmp(method, "conversations.info"))
        r = conv_info(fs, u, args);
    else if (!strcmp(method, "conversations.history"))
        r = conv_history(fs, u, args);
    else if (!strcmp(method, "conversations.replies"))
        r = conv_replies(fs, u, args);
    else if (!strcmp(method, "conversations.members"))
        r = conv_members(fs, u, args);
    else if (!strcmp(method, "conversations.list"))
        r = conv_list(fs, u, args);
    else
        return 0;
    a->body = r;
    return 1;
}
