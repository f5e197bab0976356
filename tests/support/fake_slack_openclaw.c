/*
 * fake_slack_openclaw.c -- reactions.* and agents.sessions.* for the fake
 * Slack (see fake_slack_openclaw.h). The state is two JSON arrays under a
 * lock of its own; handlers run on the fake's connection threads without
 * the fake's lock, so they may ask the fake about channels and messages.
 */
#include "fake_slack_openclaw.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct fake_slack_openclaw {
    fake_slack *fs;
    pthread_mutex_t mu;
    json_t *reactions; /* {channel, ts, name, user} */
    json_t *statuses;  /* {channel, threadTs, status, title, user} */
};

static json_t *err(const char *code)
{
    return json_pack("{s:b, s:s}", "ok", 0, "error", code);
}

/* The token's error when it is not a bot's, else NULL. */
static json_t *token_error(const fake_slack_call *call)
{
    if (call->user_id)
        return NULL;
    if (!call->token || !*call->token)
        return err("not_authed");
    return err(call->app_id ? "not_allowed_token_type" : "invalid_auth");
}

static const char *arg(const fake_slack_call *call, const char *key)
{
    const char *v = json_string_value(json_object_get(call->args, key));
    return v && *v ? v : NULL;
}

/* 1 when channel holds a message (or reply) with ts. */
static int has_message(fake_slack *fs, const char *channel, const char *ts)
{
    json_t *msgs = fake_slack_messages(fs, channel);
    size_t i;
    json_t *m;
    int found = 0;
    json_array_foreach(msgs, i, m) {
        const char *t = json_string_value(json_object_get(m, "ts"));
        if (t && !strcmp(t, ts))
            found = 1;
    }
    json_decref(msgs);
    return found;
}

static int channel_exists(fake_slack *fs, const char *channel)
{
    json_t *c = fake_slack_channel(fs, channel);
    json_decref(c);
    return c != NULL;
}

/* Index of the reaction, or -1 (locked). */
static long find_reaction(fake_slack_openclaw *o, const char *ch, const char *ts, const char *name,
                          const char *user)
{
    size_t i;
    json_t *r;
    json_array_foreach(o->reactions, i, r) {
        if (!strcmp(json_string_value(json_object_get(r, "channel")), ch) &&
            !strcmp(json_string_value(json_object_get(r, "ts")), ts) &&
            !strcmp(json_string_value(json_object_get(r, "name")), name) &&
            !strcmp(json_string_value(json_object_get(r, "user")), user))
            return (long)i;
    }
    return -1;
}

/* Slack's emoji names: lower-case letters, digits, '_', '-', '+', "::" for
 * skin tones; no colons around them. */
static int name_ok(const char *n)
{
    size_t len = strlen(n);
    return len > 0 && len <= 100 && strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789_-+:") == len &&
           n[0] != ':' && n[len - 1] != ':';
}

/* reactions.add and reactions.remove (ud: the state); a fake_slack
 * connection thread. */
static json_t *reaction_method(void *ud, const fake_slack_call *call, int *http_status)
{
    (void)http_status;
    fake_slack_openclaw *o = ud;
    json_t *te = token_error(call);
    if (te)
        return te;
    const char *ch = arg(call, "channel"), *ts = arg(call, "timestamp"), *name = arg(call, "name");
    if (!ch || !channel_exists(o->fs, ch))
        return err("channel_not_found");
    if (!ts || !has_message(o->fs, ch, ts))
        return err("message_not_found");
    if (!name || !name_ok(name))
        return err("invalid_name");
    int add = !strcmp(call->method, "reactions.add");
    json_t *out = NULL;
    pthread_mutex_lock(&o->mu);
    long at = find_reaction(o, ch, ts, name, call->user_id);
    if (add && at >= 0)
        out = err("already_reacted");
    else if (!add && at < 0)
        out = err("no_reaction");
    else if (add)
        json_array_append_new(o->reactions, json_pack("{s:s, s:s, s:s, s:s}", "channel", ch, "ts",
                                                      ts, "name", name, "user", call->user_id));
    else
        json_array_remove(o->reactions, (size_t)at);
    pthread_mutex_unlock(&o->mu);
    return out ? out : json_object();
}

/* agents.sessions.setStatus and .rename; a fake_slack connection thread. */
static json_t *session_method(void *ud, const fake_slack_call *call, int *http_status)
{
    (void)http_status;
    fake_slack_openclaw *o = ud;
    json_t *te = token_error(call);
    if (te)
        return te;
    int rename = !strcmp(call->method, "agents.sessions.rename");
    const char *ch = arg(call, "channel_id"), *thread = arg(call, "thread_ts");
    const char *status = arg(call, "status"), *title = arg(call, "title");
    if (!ch || !thread || (rename ? !title : !status))
        return err("invalid_arguments");
    if (!channel_exists(o->fs, ch))
        return err("channel_not_found");
    pthread_mutex_lock(&o->mu);
    json_t *cur = NULL;
    size_t i;
    json_t *s;
    json_array_foreach(o->statuses, i, s) {
        if (!strcmp(json_string_value(json_object_get(s, "channel")), ch) &&
            !strcmp(json_string_value(json_object_get(s, "threadTs")), thread))
            cur = s;
    }
    if (!cur) {
        cur = json_pack("{s:s, s:s, s:n, s:n, s:s}", "channel", ch, "threadTs", thread, "status",
                        "title", "user", call->user_id);
        json_array_append_new(o->statuses, cur);
    }
    if (status)
        json_object_set_new(cur, "status", json_string(status));
    if (title)
        json_object_set_new(cur, "title", json_string(title));
    json_t *t = json_object_get(cur, "title");
    json_t *out = json_is_string(t) ? json_pack("{s:O}", "title", t) : json_object();
    pthread_mutex_unlock(&o->mu);
    return out;
}

int fake_slack_openclaw_start(fake_slack *fs, fake_slack_openclaw **out)
{
    *out = NULL;
    fake_slack_openclaw *o = calloc(1, sizeof *o);
    if (!o)
        return -1;
    o->fs = fs;
    o->reactions = json_array();
    o->statuses = json_array();
    pthread_mutex_init(&o->mu, NULL);
    if (!o->reactions || !o->statuses ||
        fake_slack_add_method(fs, "reactions.add", reaction_method, o) != 0 ||
        fake_slack_add_method(fs, "reactions.remove", reaction_method, o) != 0 ||
        fake_slack_add_method(fs, "agents.sessions.setStatus", session_method, o) != 0 ||
        fake_slack_add_method(fs, "agents.sessions.rename", session_method, o) != 0) {
        /* A method added before the failure keeps pointing here: leave o
         * allocated (the fake is unusable anyway, the caller stops it). */
        return -1;
    }
    *out = o;
    return 0;
}

void fake_slack_openclaw_free(fake_slack_openclaw *o)
{
    if (!o)
        return;
    json_decref(o->reactions);
    json_decref(o->statuses);
    pthread_mutex_destroy(&o->mu);
    free(o);
}

json_t *fake_slack_openclaw_reactions(fake_slack_openclaw *o)
{
    pthread_mutex_lock(&o->mu);
    json_t *a = json_deep_copy(o->reactions);
    pthread_mutex_unlock(&o->mu);
    return a;
}

json_t *fake_slack_openclaw_statuses(fake_slack_openclaw *o)
{
    pthread_mutex_lock(&o->mu);
    json_t *a = json_deep_copy(o->statuses);
    pthread_mutex_unlock(&o->mu);
    return a;
}
