/*
 * chat_slack.c -- chat.h on the Slack Web API client (slack.h).
 *
 * Slack has no nonce: a post's key travels in its metadata, and a post
 * whose earlier attempt may have reached Slack (spec.maybe_posted) is
 * looked up by that key in the channel's recent history before it is sent
 * again. Rooms are private channels (created, then the members invited);
 * bots cannot delete a channel, so removing one archives it. The pipe runs
 * its posts one after the other on the thread that drives it: Slack paces
 * chat.postMessage at about one per second per channel anyway.
 */
#include "chat_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slack.h"

typedef struct s_client {
    dg_slack *s;
    pthread_mutex_t mu;
    int identified; /* auth.test ran: find_by_key sees only the moderator's posts */
} s_client;

static void copy_err(dg_chat_err *to, const dg_slack_err *from)
{
    if (!to)
        return;
    memset(to, 0, sizeof *to);
    to->http_status = from->http_status;
    snprintf(to->code, sizeof to->code, "%s", from->error);
    to->retryable = from->retryable;
    to->retry_after_ms = from->retry_after_ms;
    to->attempts = from->attempts;
    snprintf(to->message, sizeof to->message, "%s", from->message);
}

int dg_chat_slack_open(const dg_chat_options *o, void **impl, char *err, size_t err_len)
{
    *impl = NULL;
    s_client *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, err_len, "slack: out of memory");
        return DG_ERR_NOMEM;
    }
    dg_slack_options so = {
        .api_base = o->api_base,
        .token = o->token,
        .timeout_ms = o->timeout_ms,
        .connect_timeout_ms = o->connect_timeout_ms,
        .max_attempts = o->max_attempts,
        .backoff_base_ms = o->backoff_base_ms,
        .backoff_max_ms = o->backoff_max_ms,
        .no_pacing = o->no_pacing,
        .log = o->log,
        .log_state = o->log_state,
    };
    int rc = dg_slack_new(&so, &c->s, err, err_len);
    if (rc != DG_OK) {
        free(c);
        return rc;
    }
    pthread_mutex_init(&c->mu, NULL);
    *impl = c;
    return DG_OK;
}

static void s_free(void *impl)
{
    s_client *c = impl;
    if (!c)
        return;
    dg_slack_free(c->s);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static void s_set_abort(void *impl, int on)
{
    s_client *c = impl;
    dg_slack_set_abort(c->s, on);
}

static size_t s_max_text(const void *impl)
{
    const s_client *c = impl;
    return dg_slack_max_text(c->s);
}

static int s_check_room_name(const char *name, char *why, size_t why_len)
{
    char folded[DG_SLACK_MAX_CHANNEL_NAME + 1];
    int changed = 0;
    if (dg_slack_sanitize_channel_name(name ? name : "", folded, sizeof folded, &changed, why,
                                       why_len) != DG_OK)
        return DG_ERR_INVALID;
    if (changed) {
        snprintf(why, why_len,
                 "a Slack channel name is lower-case letters, digits, '-' and '_', at most %d "
                 "characters: use '%s'",
                 DG_SLACK_MAX_CHANNEL_NAME, folded);
        return DG_ERR_INVALID;
    }
    return DG_OK;
}

/* Run auth.test once, so find_by_key counts only the moderator's posts. */
static int identify(s_client *c, dg_chat_err *err)
{
    pthread_mutex_lock(&c->mu);
    int done = c->identified;
    pthread_mutex_unlock(&c->mu);
    if (done)
        return DG_OK;
    dg_slack_identity me;
    dg_slack_err e;
    memset(&e, 0, sizeof e);
    int rc = dg_slack_auth_test(c->s, &me, &e);
    if (rc != DG_OK) {
        copy_err(err, &e);
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    c->identified = 1;
    pthread_mutex_unlock(&c->mu);
    return DG_OK;
}

static int s_find_by_key(void *impl, const char *channel_id, const char *thread_id,
                         const char *key, int *found, char *message_id, dg_chat_err *err)
{
    s_client *c = impl;
    int rc = identify(c, err);
    if (rc != DG_OK)
        return rc;
    dg_slack_posted where;
    dg_slack_err e;
    memset(&e, 0, sizeof e);
    rc = dg_slack_find_by_key(c->s, channel_id, thread_id, key, NULL, found, &where, &e);
    if (rc != DG_OK) {
        copy_err(err, &e);
        return rc;
    }
    if (*found && message_id)
        snprintf(message_id, DG_CHAT_ID_MAX, "%s", where.ts);
    return DG_OK;
}

/* A post's own copy (the pipe keeps it until it is sent). */
typedef struct s_prepared {
    char *channel_id, *thread_id, *text, *key;
    int maybe_posted;
} s_prepared;

static void s_post_free(void *post)
{
    s_prepared *p = post;
    if (!p)
        return;
    free(p->channel_id);
    free(p->thread_id);
    free(p->text);
    free(p->key);
    free(p);
}

/* Post p, or find the earlier attempt's message by its key first. */
static int post_once(s_client *c, const s_prepared *p, char *message_id, dg_chat_err *err)
{
    if (p->key && p->maybe_posted) {
        int found = 0;
        int rc = s_find_by_key(c, p->channel_id, p->thread_id, p->key, &found, message_id, err);
        if (rc != DG_OK || found)
            return rc;
    }
    dg_slack_post_spec ps = {
        .channel_id = p->channel_id, .thread_ts = p->thread_id, .text = p->text, .key = p->key};
    dg_slack_posted where;
    dg_slack_err e;
    memset(&e, 0, sizeof e);
    int rc = dg_slack_post(c->s, &ps, &where, &e);
    if (rc != DG_OK) {
        copy_err(err, &e);
        return rc;
    }
    if (message_id)
        snprintf(message_id, DG_CHAT_ID_MAX, "%s", where.ts);
    return DG_OK;
}

static int s_post_prepare(void *impl, const dg_chat_post_spec *spec, void **post, dg_chat_err *err)
{
    s_client *c = impl;
    *post = NULL;
    char why[200];
    if (!spec->channel_id || !dg_slack_channel_id_valid(spec->channel_id))
        return dg_chat_refuse(err, DG_ERR_INVALID, "post: channel_id '%s' is no Slack channel id",
                              spec->channel_id ? spec->channel_id : "");
    if (spec->thread_id && !dg_slack_ts_valid(spec->thread_id))
        return dg_chat_refuse(err, DG_ERR_INVALID, "post: thread_id '%s' is no Slack message ts",
                              spec->thread_id);
    if (dg_slack_check_text(spec->text, dg_slack_max_text(c->s), why, sizeof why) != DG_OK)
        return dg_chat_refuse(err, DG_ERR_INVALID, "post: text: %s", why);
    if (spec->key && (!*spec->key || strlen(spec->key) >= DG_CHAT_KEY_MAX))
        return dg_chat_refuse(err, DG_ERR_INVALID, "post: key must be 1 to %d bytes",
                              DG_CHAT_KEY_MAX - 1);
    s_prepared *p = calloc(1, sizeof *p);
    if (!p || !(p->channel_id = strdup(spec->channel_id)) || !(p->text = strdup(spec->text)) ||
        (spec->thread_id && !(p->thread_id = strdup(spec->thread_id))) ||
        (spec->key && !(p->key = strdup(spec->key)))) {
        s_post_free(p);
        return dg_chat_refuse(err, DG_ERR_NOMEM, "post: out of memory");
    }
    p->maybe_posted = spec->maybe_posted;
    *post = p;
    return DG_OK;
}

static int s_post_now(void *impl, const dg_chat_post_spec *spec, char *message_id, dg_chat_err *err)
{
    void *p = NULL;
    int rc = s_post_prepare(impl, spec, &p, err);
    if (rc != DG_OK)
        return rc;
    rc = post_once(impl, p, message_id, err);
    s_post_free(p);
    return rc;
}

static int s_room_create(void *impl, const dg_chat_room_spec *spec, char *room_id, dg_chat_err *err)
{
    s_client *c = impl;
    char id[DG_SLACK_ID_LEN] = "", name[DG_SLACK_MAX_CHANNEL_NAME + 1];
    dg_slack_err e;
    memset(&e, 0, sizeof e);
    int rc = dg_slack_create_private_channel(c->s, spec->name, spec->member_ids, spec->n_members,
                                             id, name, &e);
    if (rc == DG_OK) {
        snprintf(room_id, DG_CHAT_ID_MAX, "%s", id);
        return DG_OK;
    }
    copy_err(err, &e);
    if (id[0]) {
        /* Made, but the members could not be invited: nothing half-made
         * stays behind. */
        dg_slack_err ae;
        memset(&ae, 0, sizeof ae);
        int arc = dg_slack_archive(c->s, id, &ae);
        if (err)
            snprintf(err->message + strlen(err->message),
                     sizeof err->message - strlen(err->message), "; channel %s %s", id,
                     arc == DG_OK ? "was archived again" : "could not be archived again: archive it");
    }
    return rc;
}

static int s_room_find(void *impl, const char *name, const char *topic_needle, int *found,
                       char *room_id, dg_chat_err *err)
{
    (void)topic_needle; /* names are unique in a workspace */
    s_client *c = impl;
    dg_slack_channel ch;
    dg_slack_err e;
    memset(&e, 0, sizeof e);
    int rc = dg_slack_find_private_channel(c->s, name, found, &ch, &e);
    if (rc != DG_OK) {
        copy_err(err, &e);
        return rc;
    }
    if (*found)
        snprintf(room_id, DG_CHAT_ID_MAX, "%s", ch.id);
    return DG_OK;
}

static int s_room_remove(void *impl, const char *room_id, dg_chat_err *err)
{
    s_client *c = impl;
    dg_slack_err e;
    memset(&e, 0, sizeof e);
    int rc = dg_slack_archive(c->s, room_id, &e);
    if (rc != DG_OK)
        copy_err(err, &e);
    return rc;
}

static int s_user_names(void *impl, const char *user_id, char *handle, size_t handle_len,
                        char *display, size_t display_len, dg_chat_err *err)
{
    s_client *c = impl;
    dg_slack_user u;
    dg_slack_err e;
    memset(&e, 0, sizeof e);
    int rc = dg_slack_user_info(c->s, user_id, &u, &e);
    if (rc != DG_OK) {
        copy_err(err, &e);
        return rc;
    }
    snprintf(handle, handle_len, "%s", u.name);
    snprintf(display, display_len, "%s", u.display_name[0] ? u.display_name : u.real_name);
    return DG_OK;
}

/* ---- pipe: posts one after the other on the driving thread -------------------------- */

typedef struct s_pipe {
    s_client *c;
    size_t cap, head, n; /* ring of n queued posts from head */
    uint64_t *tags;
    s_prepared **posts;
} s_pipe;

static int s_pipe_new(void *impl, size_t cap, void **out)
{
    *out = NULL;
    if (cap < 1 || cap > 256)
        return DG_ERR_INVALID;
    s_pipe *p = calloc(1, sizeof *p);
    if (!p || !(p->tags = calloc(cap, sizeof *p->tags)) ||
        !(p->posts = calloc(cap, sizeof *p->posts))) {
        if (p)
            free(p->tags);
        free(p);
        return DG_ERR_NOMEM;
    }
    p->c = impl;
    p->cap = cap;
    *out = p;
    return DG_OK;
}

static void s_pipe_free(void *pipe)
{
    s_pipe *p = pipe;
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        s_post_free(p->posts[(p->head + i) % p->cap]);
    free(p->tags);
    free(p->posts);
    free(p);
}

static int s_pipe_submit(void *pipe, uint64_t tag, void *post, dg_chat_err *err)
{
    s_pipe *p = pipe;
    if (p->n == p->cap) {
        s_post_free(post);
        return dg_chat_refuse(err, DG_ERR_IO, "pipe: %zu posts in flight already (its capacity)",
                              p->cap);
    }
    size_t at = (p->head + p->n++) % p->cap;
    p->tags[at] = tag;
    p->posts[at] = post;
    return DG_OK;
}

static size_t s_pipe_busy(const void *pipe)
{
    const s_pipe *p = pipe;
    return p->n;
}

static size_t s_pipe_run(void *pipe, long wait_ms, dg_chat_done *done)
{
    (void)wait_ms; /* a post runs to its end here; nothing else is waited for */
    s_pipe *p = pipe;
    if (!p->n)
        return 0;
    s_prepared *post = p->posts[p->head];
    memset(done, 0, sizeof *done);
    done->tag = p->tags[p->head];
    p->posts[p->head] = NULL;
    p->head = (p->head + 1) % p->cap;
    p->n--;
    done->rc = post_once(p->c, post, done->message_id, &done->err);
    s_post_free(post);
    return 1;
}

static void s_pipe_wakeup(void *pipe)
{
    (void)pipe; /* dg_chat_set_abort ends a post in progress */
}

const dg_chat_methods dg_chat_slack_methods = {
    .platform = DG_PLATFORM_SLACK,
    .free = s_free,
    .set_abort = s_set_abort,
    .default_max_text = DG_SLACK_TEXT_DEFAULT,
    .max_text = s_max_text,
    .user_id_valid = dg_slack_user_id_valid,
    .channel_id_valid = dg_slack_channel_id_valid,
    .check_room_name = s_check_room_name,
    .post = s_post_now,
    .find_by_key = s_find_by_key,
    .room_create = s_room_create,
    .room_find = s_room_find,
    .room_remove = s_room_remove,
    .user_names = s_user_names,
    .pipe_new = s_pipe_new,
    .pipe_free = s_pipe_free,
    .post_prepare = s_post_prepare,
    .post_free = s_post_free,
    .pipe_submit = s_pipe_submit,
    .pipe_busy = s_pipe_busy,
    .pipe_run = s_pipe_run,
    .pipe_wakeup = s_pipe_wakeup,
};
