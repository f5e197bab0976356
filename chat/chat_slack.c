/*
 * chat_slack.c -- chat.h on the Slack Web API client (slack.h).
 *
 * Slack has no nonce: a post's key travels in its metadata, and a post
 * whose earlier attempt may have reached Slack (spec.maybe_posted) is
 * looked up by that key in the channel's recent history before it is sent
 * again. Rooms are private channels (created, then the members invited);
 * bots cannot delete a channel, so removing one archives it. The pipe runs
 * its posts on worker threads, several at once.
 */
#include "chat_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "slack.h"

typedef struct s_client {
    dg_slack *s;
    pthread_mutex_t mu;
    int identified; /* auth.test ran: find_by_key sees only the moderator's posts */
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
        copy_err(err, rc, &e);
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    c->identified = 1;
    pthread_mutex_unlock(&c->mu);
    return DG_OK;
}

static int s_find_by_key(void *impl, const char *channel_id, const char *thread_id, const char *key,
                         int *found, char *message_id, dg_chat_err *err)
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
        copy_err(err, rc, &e);
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
        copy_err(err, rc, &e);
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

/* ---- pipe: posts on worker threads ---------------------------------------------------- */

/* The client is thread-safe and Slack answers each post on its own, so up
 * to SLACK_PIPE_WORKERS posts go at once (the outbox keeps one per channel
 * in flight, which keeps each channel's order). Each worker takes the
 * oldest queued post; the driving thread collects the ends. */
#define SLACK_PIPE_WORKERS 8

typedef struct s_job {
    uint64_t tag;
    s_prepared *post;
} s_job;

typedef struct s_pipe {
    s_client *c;
    size_t cap;
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* a job queued, or stop */
    pthread_cond_t done_cv; /* CLOCK_MONOTONIC: a post ended, or a wakeup */
    s_job *q;               /* ring of qn queued jobs from qhead (cap) */
    size_t qhead, qn;
    dg_chat_done *d; /* ring of dn ended posts from dhead (cap) */
    size_t dhead, dn;
    size_t busy; /* submitted and not yet returned by s_pipe_run */
    int stop, woken;
    pthread_t workers[SLACK_PIPE_WORKERS];
    size_t n_workers;
} s_pipe;

static void *s_worker(void *arg)
{
    s_pipe *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && !p->qn)
            pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->stop)
            break;
        s_job job = p->q[p->qhead];
        p->qhead = (p->qhead + 1) % p->cap;
        p->qn--;
        pthread_mutex_unlock(&p->mu);
        dg_chat_done end;
        memset(&end, 0, sizeof end);
        end.tag = job.tag;
        end.rc = post_once(p->c, job.post, end.message_id, &end.err);
        s_post_free(job.post);
        pthread_mutex_lock(&p->mu);
        p->d[(p->dhead + p->dn++) % p->cap] = end;
        pthread_cond_signal(&p->done_cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void s_pipe_free(void *pipe);

static int s_pipe_new(void *impl, size_t cap, void **out)
{
    *out = NULL;
    if (cap < 1 || cap > 256)
        return DG_ERR_INVALID;
    s_pipe *p = calloc(1, sizeof *p);
    if (!p)
        return DG_ERR_NOMEM;
    p->c = impl;
    p->cap = cap;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->done_cv, &ca);
    pthread_condattr_destroy(&ca);
    size_t want = cap < SLACK_PIPE_WORKERS ? cap : SLACK_PIPE_WORKERS;
    if (!(p->q = calloc(cap, sizeof *p->q)) || !(p->d = calloc(cap, sizeof *p->d))) {
        s_pipe_free(p);
        return DG_ERR_NOMEM;
    }
    while (p->n_workers < want && pthread_create(&p->workers[p->n_workers], NULL, s_worker, p) == 0)
        p->n_workers++;
    if (!p->n_workers) {
        s_pipe_free(p);
        return DG_ERR_NOMEM;
    }
    *out = p;
    return DG_OK;
}

/* Stop the workers (a post under way ends first: the client's abort
 * switch or its time bound ends it), then free what is left. */
static void s_pipe_free(void *pipe)
{
    s_pipe *p = pipe;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < p->n_workers; i++)
        pthread_join(p->workers[i], NULL);
    for (size_t i = 0; p->q && i < p->qn; i++)
        s_post_free(p->q[(p->qhead + i) % p->cap].post);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    pthread_mutex_destroy(&p->mu);
    free(p->q);
    free(p->d);
    free(p);
}

static int s_pipe_submit(void *pipe, uint64_t tag, void *post, dg_chat_err *err)
{
    s_pipe *p = pipe;
    pthread_mutex_lock(&p->mu);
    if (p->busy == p->cap) {
        pthread_mutex_unlock(&p->mu);
        s_post_free(post);
        return dg_chat_refuse(err, DG_ERR_IO, "pipe: %zu posts in flight already (its capacity)",
                              p->cap);
    }
    p->q[(p->qhead + p->qn++) % p->cap] = (s_job){.tag = tag, .post = post};
    p->busy++;
    pthread_cond_signal(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    return DG_OK;
}

static size_t s_pipe_busy(const void *pipe)
{
    s_pipe *p = (s_pipe *)pipe;
    pthread_mutex_lock(&p->mu);
    size_t n = p->busy;
    pthread_mutex_unlock(&p->mu);
    return n;
}

static size_t s_pipe_run(void *pipe, long wait_ms, dg_chat_done *done)
{
    s_pipe *p = pipe;
    pthread_mutex_lock(&p->mu);
    if (!p->busy) {
        p->woken = 0;
        pthread_mutex_unlock(&p->mu);
        return 0;
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    long ms = wait_ms > 0 ? wait_ms : 0;
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    while (!p->dn && !p->woken && rc == 0)
        rc = pthread_cond_timedwait(&p->done_cv, &p->mu, &until);
    p->woken = 0;
    size_t n = 0;
    for (; p->dn; n++, p->dn--, p->dhead = (p->dhead + 1) % p->cap)
        done[n] = p->d[p->dhead];
    p->busy -= n;
    pthread_mutex_unlock(&p->mu);
    return n;
}

static void s_pipe_wakeup(void *pipe)
{
    s_pipe *p = pipe;
    pthread_mutex_lock(&p->mu);
    p->woken = 1;
    pthread_cond_signal(&p->done_cv);
    pthread_mutex_unlock(&p->mu);
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
