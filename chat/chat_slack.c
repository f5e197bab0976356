/*
 * chat_slack.c -- chat.h on the Slack Web API client (slack.h).
 *
 * Slack has no nonce: a post's key travels in its metadata, and a post
 * whose earlier attempt may have reached Slack (spec.maybe_posted) is
 * looked up by that key in the channel's recent history before it is sent
 * again (dg_slack_post_once). Rooms are private channels (created, then the
 * members invited); bots cannot delete a channel, so removing one archives
 * it. The pipe is slack/'s (worker threads, several posts at once): this
 * file only translates its ends into chat.h's.
 */
#include "chat_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slack.h"

typedef struct s_client {
    dg_slack *s;
} s_client;

static int listed(const char *const *codes, const char *code)
{
    for (; *codes; codes++)
        if (!strcmp(*codes, code))
            return 1;
    return 0;
}

/* The kind of a failure Slack answered. Slack says most refusals with HTTP
 * 200 and a code: the token's own codes are an auth failure, whatever the
 * method; a missing room, thread, message or user (or an archived room) is
 * gone; the other refusals the client calls denied lack a permission. */
static dg_chat_err_kind kind_of(int rc, const dg_slack_err *e)
{
    static const char *const auth[] = {"not_authed",    "invalid_auth",  "account_inactive",
                                       "token_revoked", "token_expired", NULL};
    static const char *const gone[] = {"channel_not_found", "thread_not_found", "message_not_found",
                                       "user_not_found",    "is_archived",      NULL};
    if (listed(auth, e->error))
        return DG_CHAT_ERR_AUTH;
    if (listed(gone, e->error))
        return DG_CHAT_ERR_GONE;
    if (e->http_status == 429 || e->retry_after_ms > 0 ||
        (e->http_status == 200 && !strcmp(e->error, "ratelimited")))
        return DG_CHAT_ERR_RATE;
    return dg_chat_kind_of_status(rc, e->retryable);
}

/* A failed call's error (rc its status) as chat.h says it. */
static void copy_err(dg_chat_err *to, int rc, const dg_slack_err *from)
{
    if (!to)
        return;
    memset(to, 0, sizeof *to);
    to->kind = kind_of(rc, from);
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
    *impl = c;
    return DG_OK;
}

static void s_free(void *impl)
{
    s_client *c = impl;
    if (!c)
        return;
    dg_slack_free(c->s);
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

static int s_find_by_key(void *impl, const char *channel_id, const char *thread_id, const char *key,
                         int *found, char *message_id, dg_chat_err *err)
{
    s_client *c = impl;
    dg_slack_posted where;
    dg_slack_err e;
    memset(&e, 0, sizeof e);
    int rc = dg_slack_identify(c->s, &e);
    if (rc == DG_OK)
        rc = dg_slack_find_by_key(c->s, channel_id, thread_id, key, NULL, found, &where, &e);
    if (rc != DG_OK) {
        copy_err(err, rc, &e);
        return rc;
    }
    if (*found && message_id)
        snprintf(message_id, DG_CHAT_ID_MAX, "%s", where.ts);
    return DG_OK;
}

static void s_post_free(void *post)
{
    dg_slack_job_free(post);
}

/* Check spec for a post as Slack takes it (DG_OK, or DG_ERR_INVALID with the
 * rule in err), and say it as slack/ does into *ps (borrowing spec). */
static int check_post(s_client *c, const dg_chat_post_spec *spec, dg_slack_post_spec *ps,
                      dg_chat_err *err)
{
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
    *ps = (dg_slack_post_spec){.channel_id = spec->channel_id,
                               .thread_ts = spec->thread_id,
                               .text = spec->text,
                               .key = spec->key};
    return DG_OK;
}

static int s_post_prepare(void *impl, const dg_chat_post_spec *spec, void **post, dg_chat_err *err)
{
    *post = NULL;
    dg_slack_post_spec ps;
    int rc = check_post(impl, spec, &ps, err);
    if (rc != DG_OK)
        return rc;
    dg_slack_job *job = NULL;
    if (dg_slack_job_new(&ps, spec->maybe_posted, &job) != DG_OK)
        return dg_chat_refuse(err, DG_ERR_NOMEM, "post: out of memory");
    *post = job;
    return DG_OK;
}

static int s_post_now(void *impl, const dg_chat_post_spec *spec, char *message_id, dg_chat_err *err)
{
    s_client *c = impl;
    dg_slack_post_spec ps;
    int rc = check_post(c, spec, &ps, err);
    if (rc != DG_OK)
        return rc;
    dg_slack_posted where;
    dg_slack_err e;
    memset(&e, 0, sizeof e);
    rc = dg_slack_post_once(c->s, &ps, spec->maybe_posted, &where, &e);
    if (rc != DG_OK)
        copy_err(err, rc, &e);
    else if (message_id)
        snprintf(message_id, DG_CHAT_ID_MAX, "%s", where.ts);
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
    copy_err(err, rc, &e);
    if (id[0]) {
        /* Made, but the members could not be invited: nothing half-made
         * stays behind. */
        dg_slack_err ae;
        memset(&ae, 0, sizeof ae);
        int arc = dg_slack_archive(c->s, id, &ae);
        if (err)
            snprintf(err->message + strlen(err->message),
                     sizeof err->message - strlen(err->message), "; channel %s %s", id,
                     arc == DG_OK ? "was archived again"
                                  : "could not be archived again: archive it");
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
        copy_err(err, rc, &e);
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
        copy_err(err, rc, &e);
    return rc;
}

static int s_room_admit(void *impl, const char *room_id, const dg_chat_room_spec *spec,
                        dg_chat_err *err)
{
    s_client *c = impl;
    dg_slack_err e;
    memset(&e, 0, sizeof e);
    int rc = dg_slack_invite(c->s, room_id, spec->member_ids, spec->n_members, &e);
    if (rc != DG_OK)
        copy_err(err, rc, &e);
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
        copy_err(err, rc, &e);
        return rc;
    }
    snprintf(handle, handle_len, "%s", u.name);
    snprintf(display, display_len, "%s", u.display_name[0] ? u.display_name : u.real_name);
    return DG_OK;
}

/* ---- pipe: slack/'s, its ends translated ------------------------------------------- */

typedef struct s_pipe {
    dg_slack_pipe *pipe;
    dg_slack_done *done; /* cap ends, as dg_slack_pipe_run fills them */
} s_pipe;

static void s_pipe_free(void *pipe)
{
    s_pipe *p = pipe;
    if (!p)
        return;
    dg_slack_pipe_free(p->pipe);
    free(p->done);
    free(p);
}

static int s_pipe_new(void *impl, size_t cap, void **out)
{
    s_client *c = impl;
    *out = NULL;
    s_pipe *p = calloc(1, sizeof *p);
    if (!p)
        return DG_ERR_NOMEM;
    int rc = dg_slack_pipe_new(c->s, cap, &p->pipe);
    if (rc == DG_OK && !(p->done = calloc(cap, sizeof *p->done)))
        rc = DG_ERR_NOMEM;
    if (rc != DG_OK) {
        s_pipe_free(p);
        return rc;
    }
    *out = p;
    return DG_OK;
}

static int s_pipe_submit(void *pipe, uint64_t tag, void *post, dg_chat_err *err)
{
    s_pipe *p = pipe;
    dg_slack_err e;
    memset(&e, 0, sizeof e);
    int rc = dg_slack_pipe_submit(p->pipe, tag, post, &e);
    if (rc != DG_OK)
        copy_err(err, rc, &e);
    return rc;
}

static size_t s_pipe_busy(const void *pipe)
{
    const s_pipe *p = pipe;
    return dg_slack_pipe_busy(p->pipe);
}

static size_t s_pipe_run(void *pipe, long wait_ms, dg_chat_done *done)
{
    s_pipe *p = pipe;
    size_t n = dg_slack_pipe_run(p->pipe, wait_ms, p->done);
    for (size_t i = 0; i < n; i++) {
        const dg_slack_done *d = &p->done[i];
        dg_chat_done *o = &done[i];
        memset(o, 0, sizeof *o);
        o->tag = d->tag;
        o->rc = d->rc;
        snprintf(o->message_id, sizeof o->message_id, "%s", d->ts);
        if (d->rc != DG_OK)
            copy_err(&o->err, d->rc, &d->err);
    }
    return n;
}

static void s_pipe_wakeup(void *pipe)
{
    s_pipe *p = pipe;
    dg_slack_pipe_wakeup(p->pipe);
}

const dg_chat_methods dg_chat_slack_methods = {
    .platform = DG_PLATFORM_SLACK,
    .free = s_free,
    .set_abort = s_set_abort,
    .default_max_text = DG_SLACK_TEXT_DEFAULT,
    .max_text = s_max_text,
    .user_id_valid = dg_slack_user_id_valid,
    .channel_id_valid = dg_slack_channel_id_valid,
    .thread_id_valid = dg_slack_ts_valid,
    .check_room_name = s_check_room_name,
    .post = s_post_now,
    .find_by_key = s_find_by_key,
    .room_create = s_room_create,
    .room_find = s_room_find,
    .room_remove = s_room_remove,
    .room_admit = s_room_admit,
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
