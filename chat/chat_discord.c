/*
 * chat_discord.c -- chat.h on the Discord REST client (discord.h).
 *
 * Idempotency is Discord's own: a post's key is its nonce with
 * enforce_nonce, so a resend returns the first message and no key is ever
 * looked up (find_by_key is not offered). Rooms are private text channels
 * of the guild given as space_id; removing one deletes it.
 */
#include "chat_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discord.h"

/* The kind of a failure Discord answered: by the HTTP status Discord gives
 * each (401 the token, 403 a permission, 404 an unknown channel, message or
 * user, 429 a rate limit), else by whether it may pass later. */
static dg_chat_err_kind kind_of(int rc, const dg_discord_err *e)
{
    switch (e->http_status) {
    case 401: return DG_CHAT_ERR_AUTH;
    case 403: return DG_CHAT_ERR_PERMISSION;
    case 404: return DG_CHAT_ERR_GONE;
    case 429: return DG_CHAT_ERR_RATE;
    }
    if (e->retry_after_ms > 0)
        return DG_CHAT_ERR_RATE;
    if (e->http_status >= 400 && e->http_status < 500 && !e->retryable)
        return DG_CHAT_ERR_INVALID;
    return dg_chat_kind_of_status(rc, e->retryable);
}

/* A failed call's error (rc its status) as chat.h says it. */
static void copy_err(dg_chat_err *to, int rc, const dg_discord_err *from)
{
    if (!to)
        return;
    memset(to, 0, sizeof *to);
    to->kind = kind_of(rc, from);
    if (from->discord_code)
        snprintf(to->code, sizeof to->code, "%d", from->discord_code);
    to->retryable = from->retryable;
    to->retry_after_ms = from->retry_after_ms;
    to->attempts = from->attempts;
    snprintf(to->message, sizeof to->message, "%s", from->message);
}

/* Copy a malloc'd id into the caller's buffer (and free it). */
static void take_id(char *out, char *id)
{
    if (out)
        snprintf(out, DG_CHAT_ID_MAX, "%s", id ? id : "");
    free(id);
}

int dg_chat_discord_open(const dg_chat_options *o, void **impl, char *err, size_t err_len)
{
    dg_discord_options d = {
        .api_base = o->api_base,
        .token = o->token,
        .guild_id = o->space_id,
        .timeout_ms = o->timeout_ms,
        .connect_timeout_ms = o->connect_timeout_ms,
        .max_attempts = o->max_attempts,
        .backoff_base_ms = o->backoff_base_ms,
        .backoff_max_ms = o->backoff_max_ms,
        .log = o->log,
        .log_state = o->log_state,
    };
    dg_discord *c = NULL;
    int rc = dg_discord_new(&d, &c, err, err_len);
    *impl = c;
    return rc;
}

static void d_free(void *impl)
{
    dg_discord_free(impl);
}

static void d_set_abort(void *impl, int on)
{
    dg_discord_set_abort(impl, on);
}

static size_t d_max_text(const void *impl)
{
    (void)impl;
    return DG_DISCORD_MAX_CONTENT;
}

static int d_snowflake_valid(const char *id)
{
    return dg_snowflake_valid(id);
}

static int d_post(void *impl, const dg_chat_post_spec *p, char *message_id, dg_chat_err *err)
{
    dg_discord_err e;
    memset(&e, 0, sizeof e);
    char *id = NULL;
    int rc =
        dg_discord_post_message(impl, p->thread_id ? p->thread_id : p->channel_id, p->text,
                                p->mention_ids, p->n_mentions, p->key, message_id ? &id : NULL, &e);
    take_id(message_id, id);
    if (rc != DG_OK)
        copy_err(err, rc, &e);
    return rc;
}

static int d_room_create(void *impl, const dg_chat_room_spec *spec, char *room_id, dg_chat_err *err)
{
    dg_discord_channel_spec s = {
        .name = spec->name,
        .topic = spec->topic,
        .parent_id = spec->parent_id,
        .member_ids = spec->member_ids,
        .n_members = spec->n_members,
    };
    dg_discord_err e;
    memset(&e, 0, sizeof e);
    char *id = NULL;
    int rc = dg_discord_create_private_channel(impl, &s, &id, &e);
    take_id(room_id, id);
    if (rc != DG_OK)
        copy_err(err, rc, &e);
    return rc;
}

static int d_room_find(void *impl, const char *name, const char *topic_needle, int *found,
                       char *room_id, dg_chat_err *err)
{
    dg_discord_err e;
    memset(&e, 0, sizeof e);
    char *id = NULL;
    int rc = dg_discord_find_channel(impl, NULL, name, topic_needle, &id, &e);
    *found = rc == DG_OK && id;
    take_id(room_id, id);
    if (rc != DG_OK)
        copy_err(err, rc, &e);
    return rc;
}

static int d_room_remove(void *impl, const char *room_id, dg_chat_err *err)
{
    if (!dg_snowflake_valid(room_id))
        return dg_chat_refuse(err, DG_ERR_INVALID, "remove room: '%s' is no channel id",
                              room_id ? room_id : "");
    char path[64];
    snprintf(path, sizeof path, "/channels/%s", room_id);
    dg_discord_err e;
    memset(&e, 0, sizeof e);
    int rc = dg_discord_request(impl, "DELETE", path, NULL, 1, NULL, &e);
    if (rc != DG_OK)
        copy_err(err, rc, &e);
    return rc;
}

/* The permission overwrites that admit the members are part of the
 * channel's creation request: a channel that exists has them. */
static int d_room_admit(void *impl, const char *room_id, const dg_chat_room_spec *spec,
                        dg_chat_err *err)
{
    (void)impl;
    (void)room_id;
    (void)spec;
    (void)err;
    return DG_OK;
}

static int d_user_names(void *impl, const char *user_id, char *handle, size_t handle_len,
                        char *display, size_t display_len, dg_chat_err *err)
{
    dg_discord_err e;
    memset(&e, 0, sizeof e);
    int rc = dg_discord_get_user_names(impl, user_id, handle, handle_len, display, display_len, &e);
    if (rc != DG_OK)
        copy_err(err, rc, &e);
    return rc;
}

/* ---- pipe: the client's own curl-multi pipe ------------------------------------------ */

typedef struct d_pipe {
    dg_discord_pipe *pipe;
    dg_discord_done *done; /* cap of them, for dg_discord_pipe_run */
} d_pipe;

static int d_pipe_new(void *impl, size_t cap, void **out)
{
    *out = NULL;
    d_pipe *p = calloc(1, sizeof *p);
    if (!p || !(p->done = calloc(cap ? cap : 1, sizeof *p->done))) {
        free(p);
        return DG_ERR_NOMEM;
    }
    int rc = dg_discord_pipe_new(impl, cap, &p->pipe);
    if (rc != DG_OK) {
        free(p->done);
        free(p);
        return rc;
    }
    *out = p;
    return DG_OK;
}

static void d_pipe_free(void *pipe)
{
    d_pipe *p = pipe;
    if (!p)
        return;
    dg_discord_pipe_free(p->pipe);
    free(p->done);
    free(p);
}

static int d_post_prepare(void *impl, const dg_chat_post_spec *spec, void **post, dg_chat_err *err)
{
    dg_discord_err e;
    memset(&e, 0, sizeof e);
    dg_discord_post *dp = NULL;
    int rc = dg_discord_post_prepare(impl, spec->thread_id ? spec->thread_id : spec->channel_id,
                                     spec->text, spec->mention_ids, spec->n_mentions, spec->key,
                                     &dp, &e);
    *post = dp;
    if (rc != DG_OK)
        copy_err(err, rc, &e);
    return rc;
}

static void d_post_free(void *post)
{
    dg_discord_post_free(post);
}

static int d_pipe_submit(void *pipe, uint64_t tag, void *post, dg_chat_err *err)
{
    d_pipe *p = pipe;
    dg_discord_err e;
    memset(&e, 0, sizeof e);
    int rc = dg_discord_pipe_submit(p->pipe, tag, post, &e);
    if (rc != DG_OK)
        copy_err(err, rc, &e);
    return rc;
}

static size_t d_pipe_busy(const void *pipe)
{
    const d_pipe *p = pipe;
    return dg_discord_pipe_busy(p->pipe);
}

static size_t d_pipe_run(void *pipe, long wait_ms, dg_chat_done *done)
{
    d_pipe *p = pipe;
    size_t n = dg_discord_pipe_run(p->pipe, wait_ms, p->done);
    for (size_t i = 0; i < n; i++) {
        dg_discord_done *d = &p->done[i];
        dg_chat_done *o = &done[i];
        memset(o, 0, sizeof *o);
        o->tag = d->tag;
        o->rc = d->rc;
        take_id(o->message_id, d->message_id);
        d->message_id = NULL;
        if (d->rc != DG_OK)
            copy_err(&o->err, d->rc, &d->err);
    }
    return n;
}

static void d_pipe_wakeup(void *pipe)
{
    d_pipe *p = pipe;
    dg_discord_pipe_wakeup(p->pipe);
}

const dg_chat_methods dg_chat_discord_methods = {
    .platform = DG_PLATFORM_DISCORD,
    .free = d_free,
    .set_abort = d_set_abort,
    .default_max_text = DG_DISCORD_MAX_CONTENT,
    .max_text = d_max_text,
    .user_id_valid = d_snowflake_valid,
    .channel_id_valid = d_snowflake_valid,
    .thread_id_valid = d_snowflake_valid,
    .check_room_name = dg_discord_check_channel_name,
    .post = d_post,
    .find_by_key = NULL,
    .room_create = d_room_create,
    .room_find = d_room_find,
    .room_remove = d_room_remove,
    .room_admit = d_room_admit,
    .user_names = d_user_names,
    .pipe_new = d_pipe_new,
    .pipe_free = d_pipe_free,
    .post_prepare = d_post_prepare,
    .post_free = d_post_free,
    .pipe_submit = d_pipe_submit,
    .pipe_busy = d_pipe_busy,
    .pipe_run = d_pipe_run,
    .pipe_wakeup = d_pipe_wakeup,
};
