/*
 * fake_slack_state.c -- the fake Slack's model (users, channels, messages,
 * faults, recorded requests) and its listeners: the fsi_* plumbing the
 * methods use and the public functions that read or change the model.
 * The HTTP side is fake_slack.c. See fake_slack.h.
 */
#include "fake_slack_int.h"
#include "buf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NAME_MAX_CHARS 80

/* ---- the model (fs->mu held) ------------------------------------------------------ */

fs_user *fsi_user_by_id(fake_slack *fs, const char *id)
{
    for (size_t i = 0; id && i < fs->n_users; i++)
        if (!strcmp(fs->users[i].id, id))
            return &fs->users[i];
    return NULL;
}

fs_user *fsi_user_by_token(fake_slack *fs, const char *token)
{
    for (size_t i = 0; token && i < fs->n_users; i++)
        if (fs->users[i].token && !strcmp(fs->users[i].token, token))
            return &fs->users[i];
    return NULL;
}

const char *fsi_app_of_token(fake_slack *fs, const char *token)
{
    for (size_t i = 0; token && i < fs->n_app_tokens; i++)
        if (!strcmp(fs->app_tokens[i].token, token))
            return fs->app_tokens[i].app_id;
    return NULL;
}

fs_chan *fsi_chan_by_id(fake_slack *fs, const char *id)
{
    for (size_t i = 0; id && i < fs->n_chans; i++)
        if (!strcmp(fs->chans[i]->id, id))
            return fs->chans[i];
    return NULL;
}

fs_chan *fsi_chan_by_name(fake_slack *fs, const char *name)
{
    for (size_t i = 0; name && i < fs->n_chans; i++)
        if (!strcmp(fs->chans[i]->name, name))
            return fs->chans[i];
    return NULL;
}

const char *fsi_name_error(const char *name)
{
    if (!name || !*name)
        return "invalid_name_required";
    size_t n = 0;
    int alnum = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++, n++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
            alnum = 1;
        else if (*p != '-' && *p != '_')
            return "invalid_name_specials";
    }
    if (n > NAME_MAX_CHARS)
        return "invalid_name_maxlength";
    if (!alnum)
        return "invalid_name_punctuation";
    return NULL;
}

fs_chan *fsi_chan_add(fake_slack *fs, const char *id, const char *name, int is_private,
                      const char *creator)
{
    if (dg_grow(&fs->chans, &fs->cap_chans, fs->n_chans, sizeof *fs->chans, 8) != 0)
        return NULL;
    fs_chan *ch = calloc(1, sizeof *ch);
    if (!ch)
        return NULL;
    if (id)
        snprintf(ch->id, sizeof ch->id, "%s", id);
    else
        snprintf(ch->id, sizeof ch->id, "C%08lu", ++fs->next_chan);
    ch->name = strdup(name);
    ch->members = json_array();
    if (!ch->name || !ch->members) {
        free(ch->name);
        json_decref(ch->members);
        free(ch);
        return NULL;
    }
    ch->is_private = is_private;
    snprintf(ch->creator, sizeof ch->creator, "%s", creator ? creator : "");
    ch->created = (long long)time(NULL);
    fs->chans[fs->n_chans++] = ch;
    return ch;
}

int fsi_is_member(const fs_chan *ch, const char *user)
{
    size_t i;
    json_t *v;
    json_array_foreach(ch->members, i, v) {
        if (!strcmp(json_string_value(v), user))
            return 1;
    }
    return 0;
}

/* Queue an event for the listeners (delivered by deliver()). */
static void queue_event(fake_slack *fs, const char *type, const fs_chan *ch, const char *user,
                        const json_t *msg)
{
    if (!fs->n_listeners)
        return;
    json_t *ev =
        json_pack("{s:s, s:s, s:s, s:s, s:O}", "type", type, "channel", ch->id, "channel_type",
                  ch->is_private ? "group" : "channel", "user", user, "members", ch->members);
    if (!ev)
        return;
    if (msg) {
        json_t *m = json_deep_copy(msg);
        json_object_set_new(m, "channel", json_string(ch->id));
        json_object_set_new(ev, "message", m);
    }
    json_array_append_new(fs->events, ev);
}

int fsi_join(fake_slack *fs, fs_chan *ch, const char *user)
{
    if (json_array_append_new(ch->members, json_string(user)) != 0)
        return -1;
    queue_event(fs, "member_joined_channel", ch, user, NULL);
    return 0;
}

/* The next ts: now in microseconds, or one more than the last one. */
static void next_ts(fake_slack *fs, char *out, size_t len)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long us = (long long)now.tv_sec * 1000000LL + now.tv_nsec / 1000;
    if (us <= fs->last_ts_us)
        us = fs->last_ts_us + 1;
    fs->last_ts_us = us;
    snprintf(out, len, "%lld.%06lld", us / 1000000LL, us % 1000000LL);
}

fs_msg *fsi_msg_add(fake_slack *fs, fs_chan *ch, json_t *obj, const char *thread_ts)
{
    if (!obj || dg_grow(&ch->msgs, &ch->cap, ch->n, sizeof *ch->msgs, 16) != 0) {
        json_decref(obj);
        return NULL;
    }
    fs_msg *m = &ch->msgs[ch->n];
    memset(m, 0, sizeof *m);
    next_ts(fs, m->ts, sizeof m->ts);
    json_object_set_new(obj, "ts", json_string(m->ts));
    if (thread_ts) {
        snprintf(m->thread_ts, sizeof m->thread_ts, "%s", thread_ts);
        json_object_set_new(obj, "thread_ts", json_string(thread_ts));
        for (size_t i = 0; i < ch->n; i++) {
            json_t *p = ch->msgs[i].obj;
            if (strcmp(ch->msgs[i].ts, thread_ts) != 0)
                continue;
            json_object_set_new(p, "thread_ts", json_string(thread_ts));
            json_object_set_new(
                p, "reply_count",
                json_integer(json_integer_value(json_object_get(p, "reply_count")) + 1));
            json_object_set_new(p, "latest_reply", json_string(m->ts));
        }
    }
    m->obj = obj;
    ch->n++;
    queue_event(fs, "message", ch, json_string_value(json_object_get(obj, "user")), obj);
    pthread_cond_broadcast(&fs->cond);
    return m;
}

json_t *fsi_chan_json(fake_slack *fs, const fs_chan *ch, int with_members)
{
    (void)fs;
    json_t *o =
        json_pack("{s:s, s:s, s:b, s:b, s:b, s:b, s:I, s:s, s:i}", "id", ch->id, "name", ch->name,
                  "is_channel", !ch->is_private, "is_group", 0, "is_private", ch->is_private,
                  "is_archived", ch->archived, "created", (json_int_t)ch->created, "creator",
                  ch->creator, "num_members", (int)json_array_size(ch->members));
    if (o && with_members)
        json_object_set(o, "members", ch->members);
    return o;
}

json_t *fsi_err(const char *code)
{
    return json_pack("{s:b, s:s}", "ok", 0, "error", code);
}

const char *fsi_arg(const json_t *args, const char *key, char *buf, size_t buf_len)
{
    json_t *v = json_object_get(args, key);
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(buf, buf_len, "%lld", (long long)json_integer_value(v));
        return buf;
    }
    if (json_is_real(v)) {
        snprintf(buf, buf_len, "%.6f", json_real_value(v));
        return buf;
    }
    if (json_is_boolean(v)) {
        snprintf(buf, buf_len, "%s", json_is_true(v) ? "true" : "false");
        return buf;
    }
    return NULL;
}

int fsi_arg_bool(const json_t *args, const char *key)
{
    char buf[16];
    const char *v = fsi_arg(args, key, buf, sizeof buf);
    return v && (!strcmp(v, "true") || !strcmp(v, "1"));
}

/* ---- listeners --------------------------------------------------------------------- */

/* Deliver queued events in order, on this thread, without fs->mu (see
 * fake_slack_on_message). Called with fs->mu NOT held. */
void fsi_deliver(fake_slack *fs)
{
    pthread_mutex_lock(&fs->mu);
    if (fs->delivering) {
        pthread_mutex_unlock(&fs->mu);
        return;
    }
    fs->delivering = 1;
    while (!fs->stopping && json_array_size(fs->events) > 0) {
        json_t *ev = json_incref(json_array_get(fs->events, 0));
        json_array_remove(fs->events, 0);
        fs_listener ls[FS_MAX_LISTENERS];
        size_t nl = fs->n_listeners;
        memcpy(ls, fs->listeners, nl * sizeof *ls);
        pthread_mutex_unlock(&fs->mu);
        json_t *mem = json_object_get(ev, "members");
        size_t nm = json_array_size(mem);
        const char **ids = calloc(nm + 1, sizeof *ids);
        for (size_t i = 0; ids && i < nm; i++)
            ids[i] = json_string_value(json_array_get(mem, i));
        fake_slack_event e = {
            .type = json_string_value(json_object_get(ev, "type")),
            .channel_id = json_string_value(json_object_get(ev, "channel")),
            .channel_type = json_string_value(json_object_get(ev, "channel_type")),
            .user_id = json_string_value(json_object_get(ev, "user")),
            .message = json_object_get(ev, "message"),
            .members = ids,
            .n_members = ids ? nm : 0,
        };
        for (size_t i = 0; i < nl; i++)
            ls[i].fn(ls[i].ud, &e);
        free(ids);
        json_decref(ev);
        pthread_mutex_lock(&fs->mu);
    }
    fs->delivering = 0;
    pthread_mutex_unlock(&fs->mu);
}

void fsi_user_free(fs_user *u)
{
    free(u->name);
    free(u->token);
    free(u->scopes);
}

/* "U" or "W" then 2..20 of [A-Z0-9]. */
static int user_id_ok(const char *id)
{
    if (!id || (id[0] != 'U' && id[0] != 'W'))
        return 0;
    size_t n = strlen(id + 1);
    for (const char *p = id + 1; *p; p++)
        if (!isupper((unsigned char)*p) && !isdigit((unsigned char)*p))
            return 0;
    return n >= 2 && n <= 20;
}

/* u's fields filled from spec (strings copied); 0 or -1. */
static int user_fill(fs_user *u, const fake_slack_user_spec *s)
{
    memset(u, 0, sizeof *u);
    snprintf(u->id, sizeof u->id, "%s", s->user_id);
    u->bot = s->bot;
    snprintf(u->bot_id, sizeof u->bot_id, "%s", s->bot_id ? s->bot_id : "");
    snprintf(u->app_id, sizeof u->app_id, "%s", s->app_id ? s->app_id : "");
    if (!s->bot_id)
        snprintf(u->bot_id, sizeof u->bot_id, "B%s", s->user_id + 1);
    if (!s->app_id)
        snprintf(u->app_id, sizeof u->app_id, "A%s", s->user_id + 1);
    if (s->name) {
        u->name = strdup(s->name);
    } else if ((u->name = strdup(s->user_id))) {
        for (char *p = u->name; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    }
    u->token = s->token ? strdup(s->token) : NULL;
    u->scopes = s->scopes ? dg_sprintf(",%s,", s->scopes) : NULL;
    if (u->scopes)
        for (char *p = u->scopes; *p; p++)
            if (*p == ' ')
                *p = ',';
    if (!u->name || (s->token && !u->token) || (s->scopes && !u->scopes)) {
        fsi_user_free(u);
        return -1;
    }
    return 0;
}

int fake_slack_add_user(fake_slack *fs, const fake_slack_user_spec *s)
{
    if (!s || !user_id_ok(s->user_id))
        return -1;
    fs_user u;
    if (user_fill(&u, s) != 0)
        return -1;
    pthread_mutex_lock(&fs->mu);
    fs_user *old = fsi_user_by_id(fs, s->user_id);
    int rc = 0;
    if (old) {
        fsi_user_free(old);
        *old = u;
    } else if (dg_grow(&fs->users, &fs->cap_users, fs->n_users, sizeof *fs->users, 8) == 0) {
        fs->users[fs->n_users++] = u;
    } else {
        fsi_user_free(&u);
        rc = -1;
    }
    pthread_mutex_unlock(&fs->mu);
    return rc;
}

int fake_slack_add_app_token(fake_slack *fs, const char *token, const char *app_id)
{
    if (!token || !*token || !app_id || !*app_id || strlen(app_id) >= 24)
        return -1;
    char *t = strdup(token);
    if (!t)
        return -1;
    pthread_mutex_lock(&fs->mu);
    int rc =
        dg_grow(&fs->app_tokens, &fs->cap_app_tokens, fs->n_app_tokens, sizeof *fs->app_tokens, 4);
    if (rc == 0) {
        fs_app_token *a = &fs->app_tokens[fs->n_app_tokens++];
        a->token = t;
        snprintf(a->app_id, sizeof a->app_id, "%s", app_id);
    } else {
        free(t);
    }
    pthread_mutex_unlock(&fs->mu);
    return rc ? -1 : 0;
}

int fake_slack_add_channel(fake_slack *fs, const char *id, const char *name, int is_private,
                           const char *const *members, char *id_out)
{
    if (fsi_name_error(name) || (id && (id[0] != 'C' || strlen(id) < 3 || strlen(id) > 15)))
        return -1;
    pthread_mutex_lock(&fs->mu);
    int rc = -1;
    fs_chan *ch = NULL;
    int ok = !fsi_chan_by_name(fs, name) && !(id && fsi_chan_by_id(fs, id));
    for (const char *const *m = members; ok && m && *m; m++)
        ok = fsi_user_by_id(fs, *m) != NULL;
    if (ok && (ch = fsi_chan_add(fs, id, name, is_private, members ? members[0] : NULL))) {
        rc = 0;
        for (const char *const *m = members; m && *m; m++)
            if (!fsi_is_member(ch, *m) && fsi_join(fs, ch, *m) != 0)
                rc = -1;
        if (id_out)
            snprintf(id_out, 16, "%s", ch->id);
    }
    pthread_mutex_unlock(&fs->mu);
    fsi_deliver(fs);
    return rc;
}

int fake_slack_inject(fake_slack *fs, const char *channel_id, const char *user_id, const char *text,
                      const char *thread_ts, char *ts_out)
{
    if (!channel_id || !user_id || !text)
        return -1;
    pthread_mutex_lock(&fs->mu);
    fs_chan *ch = fsi_chan_by_id(fs, channel_id);
    int rc = -1;
    int thread_ok = !thread_ts;
    for (size_t i = 0; ch && thread_ts && i < ch->n; i++)
        if (!strcmp(ch->msgs[i].ts, thread_ts) && !ch->msgs[i].thread_ts[0])
            thread_ok = 1;
    if (ch && thread_ok) {
        json_t *obj = json_pack("{s:s, s:s, s:s, s:s}", "type", "message", "text", text, "user",
                                user_id, "team", fs->team);
        fs_msg *m = fsi_msg_add(fs, ch, obj, thread_ts);
        if (m) {
            rc = 0;
            if (ts_out)
                snprintf(ts_out, 24, "%s", m->ts);
        }
    }
    pthread_mutex_unlock(&fs->mu);
    fsi_deliver(fs);
    return rc;
}

int fake_slack_add_fault(fake_slack *fs, const char *method, fake_slack_fault_kind kind, int count,
                         int retry_after_s, long delay_ms, const char *error)
{
    if (!method || strlen(method) >= 64 || (unsigned)kind >= FS_FAULT_KIND_COUNT || count <= 0 ||
        (error && strlen(error) >= 64))
        return -1;
    pthread_mutex_lock(&fs->mu);
    int rc = dg_grow(&fs->faults, &fs->cap_faults, fs->n_faults, sizeof *fs->faults, 8);
    if (rc == 0) {
        fs_fault *f = &fs->faults[fs->n_faults++];
        memset(f, 0, sizeof *f);
        snprintf(f->method, sizeof f->method, "%s", method);
        f->kind = kind;
        f->count = count;
        f->retry_after = retry_after_s < 1 ? 1 : retry_after_s;
        f->delay_ms = delay_ms;
        snprintf(f->error, sizeof f->error, "%s", error ? error : "");
    }
    pthread_mutex_unlock(&fs->mu);
    return rc ? -1 : 0;
}

void fake_slack_clear_faults(fake_slack *fs)
{
    pthread_mutex_lock(&fs->mu);
    fs->n_faults = 0;
    pthread_mutex_unlock(&fs->mu);
}

json_t *fake_slack_requests(fake_slack *fs, long since)
{
    json_t *out = json_array();
    pthread_mutex_lock(&fs->mu);
    size_t i;
    json_t *r;
    json_array_foreach(fs->requests, i, r) {
        if (json_integer_value(json_object_get(r, "seq")) > since)
            json_array_append_new(out, json_deep_copy(r));
    }
    pthread_mutex_unlock(&fs->mu);
    return out;
}

size_t fake_slack_request_count(fake_slack *fs, const char *method)
{
    pthread_mutex_lock(&fs->mu);
    size_t n = 0, i;
    json_t *r;
    json_array_foreach(fs->requests, i, r) {
        if (!method || !strcmp(fsi_jstr(r, "method"), method))
            n++;
    }
    pthread_mutex_unlock(&fs->mu);
    return n;
}

void fake_slack_clear_requests(fake_slack *fs)
{
    pthread_mutex_lock(&fs->mu);
    json_array_clear(fs->requests);
    pthread_mutex_unlock(&fs->mu);
}

static size_t count_locked(fake_slack *fs, const char *channel)
{
    size_t n = 0;
    for (size_t i = 0; i < fs->n_chans; i++)
        if (!channel || !strcmp(fs->chans[i]->id, channel))
            n += fs->chans[i]->n;
    return n;
}

/* Wait (fs->mu held) until what() reaches n or the timeout. */
static int wait_for(fake_slack *fs, const char *channel, size_t n, long timeout_ms, int requests)
{
    long long until = fsi_mono_ms() + timeout_ms;
    for (;;) {
        size_t have = requests ? json_array_size(fs->requests) : count_locked(fs, channel);
        if (have >= n)
            return 0;
        if (fs->stopping || fsi_mono_ms() >= until)
            return -1;
        struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
        pthread_cond_timedwait(&fs->cond, &fs->mu, &ts);
    }
}

int fake_slack_wait_requests(fake_slack *fs, size_t n, long timeout_ms)
{
    pthread_mutex_lock(&fs->mu);
    int rc = wait_for(fs, NULL, n, timeout_ms, 1);
    pthread_mutex_unlock(&fs->mu);
    return rc;
}

static int cmp_ts(const void *a, const void *b)
{
    const char *x = fsi_jstr(*(json_t *const *)a, "ts"), *y = fsi_jstr(*(json_t *const *)b, "ts");
    size_t lx = strlen(x), ly = strlen(y);
    return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

json_t *fake_slack_messages(fake_slack *fs, const char *channel_id)
{
    pthread_mutex_lock(&fs->mu);
    size_t n = count_locked(fs, channel_id), k = 0;
    json_t **v = calloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; v && i < fs->n_chans; i++) {
        fs_chan *ch = fs->chans[i];
        if (channel_id && strcmp(ch->id, channel_id))
            continue;
        for (size_t j = 0; j < ch->n; j++) {
            v[k] = json_deep_copy(ch->msgs[j].obj);
            json_object_set_new(v[k++], "channel", json_string(ch->id));
        }
    }
    pthread_mutex_unlock(&fs->mu);
    json_t *out = json_array();
    if (v) {
        qsort(v, k, sizeof *v, cmp_ts);
        for (size_t i = 0; i < k; i++)
            json_array_append_new(out, v[i]);
    }
    free(v);
    return out;
}

size_t fake_slack_message_count(fake_slack *fs, const char *channel_id)
{
    pthread_mutex_lock(&fs->mu);
    size_t n = count_locked(fs, channel_id);
    pthread_mutex_unlock(&fs->mu);
    return n;
}

int fake_slack_wait_messages(fake_slack *fs, const char *channel_id, size_t n, long timeout_ms)
{
    pthread_mutex_lock(&fs->mu);
    int rc = wait_for(fs, channel_id, n, timeout_ms, 0);
    pthread_mutex_unlock(&fs->mu);
    return rc;
}

json_t *fake_slack_channel(fake_slack *fs, const char *channel_id)
{
    pthread_mutex_lock(&fs->mu);
    fs_chan *ch = fsi_chan_by_id(fs, channel_id);
    json_t *o = ch ? fsi_chan_json(fs, ch, 1) : NULL;
    pthread_mutex_unlock(&fs->mu);
    return o;
}

json_t *fake_slack_channels(fake_slack *fs)
{
    json_t *out = json_array();
    pthread_mutex_lock(&fs->mu);
    for (size_t i = 0; i < fs->n_chans; i++)
        json_array_append_new(out, fsi_chan_json(fs, fs->chans[i], 1));
    pthread_mutex_unlock(&fs->mu);
    return out;
}

int fake_slack_channel_by_name(fake_slack *fs, const char *name, char *id_out)
{
    pthread_mutex_lock(&fs->mu);
    fs_chan *ch = fsi_chan_by_name(fs, name);
    if (ch && id_out)
        snprintf(id_out, 16, "%s", ch->id);
    pthread_mutex_unlock(&fs->mu);
    return ch ? 0 : -1;
}

int fake_slack_add_method(fake_slack *fs, const char *method, fake_slack_method_fn fn, void *ud)
{
    if (!method || !*method || strlen(method) >= sizeof fs->methods[0].name || !fn)
        return -1;
    pthread_mutex_lock(&fs->mu);
    fs_method *m = (fs_method *)fsi_added_method(fs, method);
    if (!m && fs->n_methods < FS_MAX_METHODS)
        m = &fs->methods[fs->n_methods++];
    if (m) {
        snprintf(m->name, sizeof m->name, "%s", method);
        m->fn = fn;
        m->ud = ud;
    }
    pthread_mutex_unlock(&fs->mu);
    return m ? 0 : -1;
}

int fake_slack_on_message(fake_slack *fs, fake_slack_event_fn fn, void *ud)
{
    if (!fn)
        return -1;
    pthread_mutex_lock(&fs->mu);
    int rc = -1;
    if (fs->n_listeners < FS_MAX_LISTENERS) {
        fs->listeners[fs->n_listeners++] = (fs_listener){fn, ud};
        rc = 0;
    }
    pthread_mutex_unlock(&fs->mu);
    return rc;
}
