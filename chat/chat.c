/*
 * chat.c -- dispatch of chat.h to the platform's methods (chat_int.h).
 */
#include "chat_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dg_chat {
    const dg_chat_methods *m;
    void *impl;
};

struct dg_chat_pipe {
    const dg_chat_methods *m;
    void *impl;
};

/* A prepared post remembers its platform so it is freed by the right
 * method whoever holds it. */
struct dg_chat_prepared {
    const dg_chat_methods *m;
    void *impl;
};

const char *dg_chat_err_kind_name(dg_chat_err_kind kind)
{
    switch (kind) {
    case DG_CHAT_ERR_NONE: return "none";
    case DG_CHAT_ERR_AUTH: return "auth";
    case DG_CHAT_ERR_PERMISSION: return "permission";
    case DG_CHAT_ERR_RATE: return "rate";
    case DG_CHAT_ERR_GONE: return "gone";
    case DG_CHAT_ERR_TRANSIENT: return "transient";
    case DG_CHAT_ERR_INVALID: return "invalid";
    case DG_CHAT_ERR_LOCAL: return "local";
    }
    return "unknown";
}

dg_chat_err_kind dg_chat_kind_of_status(int rc, int retryable)
{
    if (rc == DG_OK)
        return DG_CHAT_ERR_NONE;
    if (retryable)
        return DG_CHAT_ERR_TRANSIENT;
    switch (rc) {
    case DG_ERR_DENIED: return DG_CHAT_ERR_PERMISSION;
    case DG_ERR_NOT_FOUND: return DG_CHAT_ERR_GONE;
    case DG_ERR_INVALID:
    case DG_ERR_CONFLICT: return DG_CHAT_ERR_INVALID;
    case DG_ERR_IO: return DG_CHAT_ERR_TRANSIENT;
    }
    return DG_CHAT_ERR_LOCAL;
}

int dg_chat_refuse(dg_chat_err *err, int rc, const char *fmt, ...)
{
    if (!err)
        return rc;
    memset(err, 0, sizeof *err);
    err->kind = dg_chat_kind_of_status(rc, 0);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return rc;
}

static const dg_chat_methods *methods_of(dg_platform platform)
{
    switch (platform) {
    case DG_PLATFORM_DISCORD: return &dg_chat_discord_methods;
    case DG_PLATFORM_SLACK: return &dg_chat_slack_methods;
    }
    return NULL;
}

const char *dg_platform_name(dg_platform platform)
{
    switch (platform) {
    case DG_PLATFORM_DISCORD: return "discord";
    case DG_PLATFORM_SLACK: return "slack";
    }
    return "unknown";
}

int dg_chat_new(const dg_chat_options *o, dg_chat **out, char *err, size_t err_len)
{
    *out = NULL;
    const dg_chat_methods *m = o ? methods_of(o->platform) : NULL;
    if (!m) {
        snprintf(err, err_len, "chat: platform %d is not one this build knows (discord, slack)",
                 o ? (int)o->platform : 0);
        return DG_ERR_UNSUPPORTED;
    }
    dg_chat *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, err_len, "chat: out of memory");
        return DG_ERR_NOMEM;
    }
    int rc = m->platform == DG_PLATFORM_DISCORD ? dg_chat_discord_open(o, &c->impl, err, err_len)
                                                : dg_chat_slack_open(o, &c->impl, err, err_len);
    if (rc != DG_OK) {
        free(c);
        return rc;
    }
    c->m = m;
    *out = c;
    return DG_OK;
}

void dg_chat_free(dg_chat *c)
{
    if (!c)
        return;
    c->m->free(c->impl);
    free(c);
}

const char *dg_platform_title(dg_platform platform)
{
    switch (platform) {
    case DG_PLATFORM_DISCORD: return "Discord";
    case DG_PLATFORM_SLACK: return "Slack";
    }
    return "an unknown platform";
}

dg_platform dg_chat_platform(const dg_chat *c)
{
    return c->m->platform;
}

void dg_chat_set_abort(dg_chat *c, int on)
{
    c->m->set_abort(c->impl, on);
}

size_t dg_chat_max_text(const dg_chat *c)
{
    return c->m->max_text(c->impl);
}

size_t dg_platform_max_text(dg_platform platform)
{
    const dg_chat_methods *m = methods_of(platform);
    return m ? m->default_max_text : 0;
}

int dg_platform_user_id_valid(dg_platform platform, const char *id)
{
    const dg_chat_methods *m = methods_of(platform);
    return m && id && m->user_id_valid(id);
}

int dg_platform_channel_id_valid(dg_platform platform, const char *id)
{
    const dg_chat_methods *m = methods_of(platform);
    return m && id && m->channel_id_valid(id);
}

dg_platform dg_platform_of_channel(const char *id)
{
    return dg_platform_channel_id_valid(DG_PLATFORM_DISCORD, id) ? DG_PLATFORM_DISCORD
           : dg_platform_channel_id_valid(DG_PLATFORM_SLACK, id) ? DG_PLATFORM_SLACK
                                                                 : (dg_platform)0;
}

dg_platform dg_platform_of_user(const char *id)
{
    return dg_platform_user_id_valid(DG_PLATFORM_DISCORD, id) ? DG_PLATFORM_DISCORD
           : dg_platform_user_id_valid(DG_PLATFORM_SLACK, id) ? DG_PLATFORM_SLACK
                                                              : (dg_platform)0;
}

int dg_chat_target_make(const char *channel, const char *thread, char *out, size_t cap)
{
    dg_platform pf = dg_platform_of_channel(channel);
    int n = -1;
    if (cap)
        out[0] = '\0';
    if (!pf)
        return DG_ERR_INVALID;
    if (!thread || !*thread)
        n = snprintf(out, cap, "%s", channel);
    else if (methods_of(pf)->thread_id_valid(thread))
        n = pf == DG_PLATFORM_SLACK ? snprintf(out, cap, "%s/%s", channel, thread)
                                    : snprintf(out, cap, "%s", thread);
    if (n < 0 || (size_t)n >= cap) {
        if (cap)
            out[0] = '\0';
        return DG_ERR_INVALID;
    }
    return DG_OK;
}

dg_platform dg_chat_target_split(const char *target, char channel[DG_CHAT_ID_MAX],
                                 char thread[DG_CHAT_ID_MAX])
{
    channel[0] = thread[0] = '\0';
    if (!target)
        return (dg_platform)0;
    const char *slash = strchr(target, '/');
    size_t n = slash ? (size_t)(slash - target) : strlen(target);
    if (n >= DG_CHAT_ID_MAX || (slash && strlen(slash + 1) >= DG_CHAT_ID_MAX))
        return (dg_platform)0;
    memcpy(channel, target, n);
    channel[n] = '\0';
    dg_platform pf = dg_platform_of_channel(channel);
    if (slash && (pf != DG_PLATFORM_SLACK || !methods_of(pf)->thread_id_valid(slash + 1)))
        pf = (dg_platform)0;
    if (!pf) {
        channel[0] = '\0';
        return pf;
    }
    if (slash)
        snprintf(thread, DG_CHAT_ID_MAX, "%s", slash + 1);
    return pf;
}

int dg_chat_format_mention(const dg_chat *c, const char *user_id, char *out, size_t out_len)
{
    if (out_len)
        out[0] = '\0';
    if (!user_id || !c->m->user_id_valid(user_id))
        return DG_ERR_INVALID;
    if ((size_t)snprintf(out, out_len, "<@%s>", user_id) >= out_len) {
        out[0] = '\0';
        return DG_ERR_INVALID;
    }
    return DG_OK;
}

int dg_platform_check_room_name(dg_platform platform, const char *name, char *why, size_t why_len)
{
    const dg_chat_methods *m = methods_of(platform);
    if (!m) {
        snprintf(why, why_len, "platform %d is not one this build knows", (int)platform);
        return DG_ERR_UNSUPPORTED;
    }
    return m->check_room_name(name, why, why_len);
}

/* A method the platform lacks (NULL in its table). */
static int unsupported(const dg_chat *c, dg_chat_err *err, const char *what)
{
    return dg_chat_refuse(err, DG_ERR_UNSUPPORTED, "%s: not something %s does", what,
                          dg_platform_name(c->m->platform));
}

int dg_chat_post(dg_chat *c, const dg_chat_post_spec *p, char *message_id, dg_chat_err *err)
{
    if (message_id)
        message_id[0] = '\0';
    return c->m->post(c->impl, p, message_id, err);
}

int dg_chat_find_by_key(dg_chat *c, const char *channel_id, const char *thread_id, const char *key,
                        int *found, char *message_id, dg_chat_err *err)
{
    *found = 0;
    if (message_id)
        message_id[0] = '\0';
    if (!c->m->find_by_key)
        return unsupported(c, err, "finding a post by its key");
    return c->m->find_by_key(c->impl, channel_id, thread_id, key, found, message_id, err);
}

int dg_chat_room_create(dg_chat *c, const dg_chat_room_spec *spec, char *room_id, dg_chat_err *err)
{
    room_id[0] = '\0';
    return c->m->room_create(c->impl, spec, room_id, err);
}

int dg_chat_room_find(dg_chat *c, const char *name, const char *topic_needle, int *found,
                      char *room_id, dg_chat_err *err)
{
    *found = 0;
    room_id[0] = '\0';
    return c->m->room_find(c->impl, name, topic_needle, found, room_id, err);
}

int dg_chat_room_remove(dg_chat *c, const char *room_id, dg_chat_err *err)
{
    return c->m->room_remove(c->impl, room_id, err);
}

int dg_chat_room_admit(dg_chat *c, const char *room_id, const dg_chat_room_spec *spec,
                       dg_chat_err *err)
{
    return c->m->room_admit(c->impl, room_id, spec, err);
}

int dg_chat_user_names(dg_chat *c, const char *user_id, char *handle, size_t handle_len,
                       char *display, size_t display_len, dg_chat_err *err)
{
    if (handle_len)
        handle[0] = '\0';
    if (display_len)
        display[0] = '\0';
    return c->m->user_names(c->impl, user_id, handle, handle_len, display, display_len, err);
}

/* ---- pipe ---------------------------------------------------------------------------- */

int dg_chat_pipe_new(dg_chat *c, size_t cap, dg_chat_pipe **out)
{
    *out = NULL;
    dg_chat_pipe *p = calloc(1, sizeof *p);
    if (!p)
        return DG_ERR_NOMEM;
    int rc = c->m->pipe_new(c->impl, cap, &p->impl);
    if (rc != DG_OK) {
        free(p);
        return rc;
    }
    p->m = c->m;
    *out = p;
    return DG_OK;
}

void dg_chat_pipe_free(dg_chat_pipe *p)
{
    if (!p)
        return;
    p->m->pipe_free(p->impl);
    free(p);
}

int dg_chat_post_prepare(dg_chat *c, const dg_chat_post_spec *spec, dg_chat_prepared **out,
                         dg_chat_err *err)
{
    *out = NULL;
    dg_chat_prepared *post = calloc(1, sizeof *post);
    if (!post)
        return dg_chat_refuse(err, DG_ERR_NOMEM, "post: out of memory");
    int rc = c->m->post_prepare(c->impl, spec, &post->impl, err);
    if (rc != DG_OK) {
        free(post);
        return rc;
    }
    post->m = c->m;
    *out = post;
    return DG_OK;
}

void dg_chat_post_free(dg_chat_prepared *post)
{
    if (!post)
        return;
    post->m->post_free(post->impl);
    free(post);
}

int dg_chat_pipe_submit(dg_chat_pipe *p, uint64_t tag, dg_chat_prepared *post, dg_chat_err *err)
{
    const dg_chat_methods *made_by = post->m;
    void *impl = post->impl;
    free(post); /* the platform's post goes on alone */
    if (made_by != p->m) {
        made_by->post_free(impl);
        return dg_chat_refuse(err, DG_ERR_INVALID,
                              "pipe: the post was prepared by another platform's client");
    }
    return p->m->pipe_submit(p->impl, tag, impl, err);
}

size_t dg_chat_pipe_busy(const dg_chat_pipe *p)
{
    return p->m->pipe_busy(p->impl);
}

size_t dg_chat_pipe_run(dg_chat_pipe *p, long wait_ms, dg_chat_done *done)
{
    return p->m->pipe_run(p->impl, wait_ms, done);
}

void dg_chat_pipe_wakeup(dg_chat_pipe *p)
{
    p->m->pipe_wakeup(p->impl);
}
