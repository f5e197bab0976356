/*
 * fake_discord.c -- in-process fake Discord REST server on libmicrohttpd.
 * See fake_discord.h for the endpoints, faults and ownership rules.
 */
#include "fake_discord_int.h"
#include "fake_discord_gateway.h"
#include "http_server.h"
#include "md_code.h"
#include "openclaw/plugin.h"
#include "str_map.h"
#include "utf8.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

/* ---- libmicrohttpd glue --------------------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    fake_discord *fd = cls;
    fd_req *rq = *con_cls;
    if (!rq) {
        rq = calloc(1, sizeof *rq);
        if (!rq)
            return MHD_NO;
        *con_cls = rq;
        return MHD_YES;
    }
    if (*upload_data_size) {
        /* Bodies of MAX_BODY bytes or more are answered 413. */
        return dg_http_body_take(rq, upload_data, upload_data_size, MAX_BODY - 1) ? MHD_NO
                                                                                  : MHD_YES;
    }
    const char *path = url;
    if (!strncmp(path, "/api/v10", 8) && (path[8] == '/' || path[8] == '\0'))
        path += 8;
    if (rq->too_large) {
        reply r;
        memset(&r, 0, sizeof r);
        fd_err_reply(&r, 413, 40005, "Request entity too large");
        return fd_send_reply(c, &r);
    }
    if (!strncmp(path, "/_fake/", 7))
        return fd_control(fd, c, method, path, rq);
    /* The gateway shares the port: a websocket upgrade at "/" (the URL
     * GET /gateway/bot hands out). */
    const char *upg = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
    if (!strcmp(method, "GET") && upg && !strcasecmp(upg, "websocket") && !strcmp(url, "/"))
        return fdg_upgrade(fd->gw, c);
    return fd_api(fd, c, method, path, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    fd_req *rq = *con_cls;
    if (rq) {
        dg_http_body_free(rq);
        free(rq);
        *con_cls = NULL;
    }
}

/* ---- public API -------------------------------------------------------------------------------- */

int fake_discord_start(const fake_discord_options *o, fake_discord **out, char *err, size_t err_len)
{
    char scratch[4];
    if (!err || !err_len) {
        err = scratch;
        err_len = sizeof scratch;
    }
    *out = NULL;
    fake_discord_options def;
    memset(&def, 0, sizeof def);
    if (!o)
        o = &def;
    if (o->port < 0 || o->port > 65535 || (o->guild_id && !dg_snowflake_valid(o->guild_id)) ||
        o->heartbeat_ms < 0) {
        snprintf(err, err_len,
                 "fake-discord: port must be 0..65535, guild a snowflake, "
                 "heartbeat_ms >= 0");
        return -1;
    }
    fake_discord *fd = calloc(1, sizeof *fd);
    if (!fd) {
        snprintf(err, err_len, "fake-discord: out of memory");
        return -1;
    }
    snprintf(fd->guild, sizeof fd->guild, "%s", o->guild_id ? o->guild_id : "100000000000000001");
    fd->no_perm = o->no_permission_checks;
    fd->lean = o->lean;
    fd->latency_us = o->latency_us > 0 ? o->latency_us : 0;
    fd->rl_limit = 10000;
    fd->rl_window = 1.0;
    fd->fail_retry_after = 0.05;
    fd->rng = 88172645463325252ull;
    fd->requests = json_array();
    fd->commands = json_object();
    fd->roles = json_array();
    fd->member_roles = json_object();
    fd_iso_now(fd->joined_at, sizeof fd->joined_at);
    fd->gw = fdg_new(fd, o->heartbeat_ms);
    pthread_mutex_init(&fd->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&fd->cond, &ca);
    pthread_mutex_init(&fd->lat_mu, NULL);
    pthread_cond_init(&fd->lat_cond, &ca);
    pthread_condattr_destroy(&ca);

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)o->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!fd->gw || !fd->requests || !fd->commands) {
        snprintf(err, err_len, "fake-discord: out of memory");
        fake_discord_stop(fd);
        return -1;
    }
    fd->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                   MHD_ALLOW_UPGRADE,
                               0, NULL, NULL, on_request, fd, MHD_OPTION_SOCK_ADDR,
                               (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
                               fd, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_END);
    if (!fd->mhd) {
        snprintf(err, err_len, "fake-discord: cannot listen on 127.0.0.1:%d (in use?)", o->port);
        fake_discord_stop(fd);
        return -1;
    }
    fd->port = (int)dg_http_bound_port(fd->mhd, (unsigned)o->port);
    snprintf(fd->url, sizeof fd->url, "http://127.0.0.1:%d/api/v10", fd->port);
    *out = fd;
    return 0;
}

void fake_discord_stop(fake_discord *fd)
{
    if (!fd)
        return;
    pthread_mutex_lock(&fd->mu);
    fd->stopping = 1;
    pthread_cond_broadcast(&fd->cond);
    pthread_mutex_unlock(&fd->mu);
    pthread_mutex_lock(&fd->lat_mu);
    fd->lat_stop = 1;
    pthread_cond_broadcast(&fd->lat_cond);
    pthread_mutex_unlock(&fd->lat_mu);
    /* Websockets first: MHD must not see upgraded sockets still open. */
    fdg_shutdown(fd->gw);
    if (fd->mhd)
        MHD_stop_daemon(fd->mhd);
    fdg_free(fd->gw);
    json_decref(fd->commands);
    json_decref(fd->roles);
    json_decref(fd->member_roles);
    for (size_t i = 0; i < fd->n_users; i++) {
        free(fd->users[i].token);
        free(fd->users[i].username);
    }
    free(fd->users);
    for (size_t i = 0; i < fd->n_chans; i++)
        fd_chan_free(fd->chans[i]);
    free(fd->chans);
    dg_map_clear(&fd->chan_ix);
    free(fd->faults);
    fd_buckets_forget(fd);
    json_decref(fd->requests);
    pthread_cond_destroy(&fd->cond);
    pthread_mutex_destroy(&fd->mu);
    pthread_cond_destroy(&fd->lat_cond);
    pthread_mutex_destroy(&fd->lat_mu);
    free(fd);
}

int fake_discord_port(const fake_discord *fd)
{
    return fd->port;
}

const char *fake_discord_url(const fake_discord *fd)
{
    return fd->url;
}

const char *fake_discord_guild_id(const fake_discord *fd)
{
    return fd->guild;
}

int fake_discord_add_user(fake_discord *fd, const char *token, const char *user_id,
                          const char *username, int bot)
{
    pthread_mutex_lock(&fd->mu);
    int rc = fd_add_user_locked(fd, token, user_id, username, bot);
    pthread_mutex_unlock(&fd->mu);
    return rc;
}

int fake_discord_add_role(fake_discord *fd, const char *role_id, const char *name,
                          uint64_t permissions)
{
    if (!dg_snowflake_valid(role_id))
        return -1;
    char perms[24];
    snprintf(perms, sizeof perms, "%llu", (unsigned long long)permissions);
    pthread_mutex_lock(&fd->mu);
    int rc = json_array_append_new(
        fd->roles, json_pack("{s:s, s:s, s:s, s:i, s:i, s:b, s:b, s:b, s:i}", "id", role_id, "name",
                             name ? name : "role", "permissions", perms, "position",
                             (int)json_array_size(fd->roles) + 1, "color", 0, "hoist", 0, "managed",
                             0, "mentionable", 0, "flags", 0));
    pthread_mutex_unlock(&fd->mu);
    return rc ? -1 : 0;
}

int fake_discord_grant_role(fake_discord *fd, const char *user_id, const char *role_id)
{
    if (!dg_snowflake_valid(user_id) || !dg_snowflake_valid(role_id))
        return -1;
    pthread_mutex_lock(&fd->mu);
    json_t *arr = json_object_get(fd->member_roles, user_id);
    if (!arr) {
        arr = json_array();
        json_object_set_new(fd->member_roles, user_id, arr);
    }
    int rc = json_array_append_new(arr, json_string(role_id));
    pthread_mutex_unlock(&fd->mu);
    return rc ? -1 : 0;
}

int fake_discord_set_overwrites(fake_discord *fd, const char *channel_id, const json_t *overwrites)
{
    if (!json_is_array(overwrites))
        return -1;
    pthread_mutex_lock(&fd->mu);
    fd_chan *ch = fd_chan_by_id(fd, channel_id);
    int rc =
        ch ? json_object_set_new(ch->obj, "permission_overwrites", json_deep_copy(overwrites)) : -1;
    pthread_mutex_unlock(&fd->mu);
    return rc ? -1 : 0;
}

int fake_discord_add_channel(fake_discord *fd, const char *id, const char *name, char *id_out)
{
    if (id && !dg_snowflake_valid(id))
        return -1;
    pthread_mutex_lock(&fd->mu);
    char nid[24];
    if (id)
        snprintf(nid, sizeof nid, "%s", id);
    else
        snprintf(nid, sizeof nid, "%llu", (unsigned long long)fd_next_id(fd));
    int rc = -1;
    if (!fd_chan_by_id(fd, nid)) {
        json_t *obj = json_pack("{s:s, s:i, s:s, s:s, s:i, s:[], s:b}", "id", nid, "type", 0,
                                "guild_id", fd->guild, "name", name ? name : "general", "position",
                                (int)fd->n_chans, "permission_overwrites", "nsfw", 0);
        if (obj && fd_chan_add(fd, nid, obj))
            rc = 0;
        else
            json_decref(obj);
    }
    pthread_mutex_unlock(&fd->mu);
    if (rc == 0 && id_out)
        snprintf(id_out, 24, "%s", nid);
    return rc;
}

int fake_discord_add_fault(fake_discord *fd, const char *route, fake_discord_fault_kind kind,
                           int count, double retry_after_s, long delay_ms)
{
    pthread_mutex_lock(&fd->mu);
    int rc = fd_add_fault_locked(fd, route, (int)kind, count, retry_after_s, delay_ms);
    pthread_mutex_unlock(&fd->mu);
    return rc;
}

void fake_discord_clear_faults(fake_discord *fd)
{
    pthread_mutex_lock(&fd->mu);
    fd_clear_faults_locked(fd);
    pthread_mutex_unlock(&fd->mu);
}

void fake_discord_set_fail_rate(fake_discord *fd, double rate, unsigned seed, double retry_after_s)
{
    pthread_mutex_lock(&fd->mu);
    fd->fail_rate = rate < 0 ? 0 : rate > 1 ? 1 : rate;
    fd->rng = (uint64_t)seed * 2654435761u + 1;
    fd->fail_retry_after = retry_after_s > 0 ? retry_after_s : 0.05;
    pthread_mutex_unlock(&fd->mu);
}

void fake_discord_set_rate_limit(fake_discord *fd, int limit, double window_s)
{
    pthread_mutex_lock(&fd->mu);
    fd->rl_limit = limit > 0 ? limit : 1;
    fd->rl_window = window_s > 0 ? window_s : 1.0;
    fd_buckets_forget(fd);
    pthread_mutex_unlock(&fd->mu);
}

json_t *fake_discord_requests(fake_discord *fd, long since)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&fd->mu);
    size_t i;
    json_t *rec;
    json_array_foreach(fd->requests, i, rec) {
        if (json_integer_value(json_object_get(rec, "seq")) > since)
            json_array_append_new(arr, json_deep_copy(rec));
    }
    pthread_mutex_unlock(&fd->mu);
    return arr;
}

size_t fake_discord_request_count(fake_discord *fd)
{
    pthread_mutex_lock(&fd->mu);
    size_t n = fd->lean ? fd->lean_requests : json_array_size(fd->requests);
    pthread_mutex_unlock(&fd->mu);
    return n;
}

void fake_discord_clear_requests(fake_discord *fd)
{
    pthread_mutex_lock(&fd->mu);
    json_array_clear(fd->requests);
    fd->lean_requests = 0;
    pthread_mutex_unlock(&fd->mu);
}

static size_t count_locked(fake_discord *fd, const char *channel)
{
    size_t n = 0;
    for (size_t i = 0; i < fd->n_chans; i++)
        if (!channel || !strcmp(fd->chans[i]->id, channel))
            n += fd->chans[i]->n;
    return n;
}

/* Wait (fd->mu held) until pred or timeout; returns pred's last value. */
static int wait_locked(fake_discord *fd, long timeout_ms, int (*pred)(fake_discord *, const void *),
                       const void *arg)
{
    int64_t until = fd_mono_ms() + timeout_ms;
    int ok;
    while (!(ok = pred(fd, arg)) && !fd->stopping && fd_mono_ms() < until) {
        struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
        pthread_cond_timedwait(&fd->cond, &fd->mu, &ts);
    }
    return ok;
}

typedef struct wait_arg {
    const char *channel;
    size_t n;
} wait_arg;

static int pred_requests(fake_discord *fd, const void *a)
{
    return (fd->lean ? fd->lean_requests : json_array_size(fd->requests)) >=
           ((const wait_arg *)a)->n;
}

static int pred_messages(fake_discord *fd, const void *a)
{
    const wait_arg *w = a;
    return count_locked(fd, w->channel) >= w->n;
}

int fake_discord_wait_requests(fake_discord *fd, size_t n, long timeout_ms)
{
    wait_arg w = {NULL, n};
    pthread_mutex_lock(&fd->mu);
    int ok = wait_locked(fd, timeout_ms, pred_requests, &w);
    pthread_mutex_unlock(&fd->mu);
    return ok ? 0 : -1;
}

json_t *fake_discord_messages(fake_discord *fd, const char *channel_id)
{
    pthread_mutex_lock(&fd->mu);
    json_t *arr = fd_messages_locked(fd, channel_id);
    pthread_mutex_unlock(&fd->mu);
    return arr;
}

size_t fake_discord_message_count(fake_discord *fd, const char *channel_id)
{
    pthread_mutex_lock(&fd->mu);
    size_t n = count_locked(fd, channel_id);
    pthread_mutex_unlock(&fd->mu);
    return n;
}

int fake_discord_wait_messages(fake_discord *fd, const char *channel_id, size_t n, long timeout_ms)
{
    wait_arg w = {channel_id, n};
    pthread_mutex_lock(&fd->mu);
    int ok = wait_locked(fd, timeout_ms, pred_messages, &w);
    pthread_mutex_unlock(&fd->mu);
    return ok ? 0 : -1;
}

json_t *fake_discord_channel(fake_discord *fd, const char *channel_id)
{
    pthread_mutex_lock(&fd->mu);
    fd_chan *ch = fd_chan_by_id(fd, channel_id);
    json_t *obj = ch ? json_deep_copy(ch->obj) : NULL;
    pthread_mutex_unlock(&fd->mu);
    return obj;
}

json_t *fake_discord_channels(fake_discord *fd)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&fd->mu);
    for (size_t i = 0; i < fd->n_chans; i++)
        json_array_append_new(arr, json_deep_copy(fd->chans[i]->obj));
    pthread_mutex_unlock(&fd->mu);
    return arr;
}

int fake_discord_inject_message(fake_discord *fd, const char *channel_id, const char *author_id,
                                const char *content, char *id_out)
{
    if (!dg_snowflake_valid(author_id) || !content)
        return -1;
    pthread_mutex_lock(&fd->mu);
    fd_chan *ch = fd_chan_by_id(fd, channel_id);
    fd_msg *m = ch ? fd_msg_add(fd, ch, author_id, content, NULL, NULL, NULL) : NULL;
    if (m && id_out)
        snprintf(id_out, 24, "%llu", (unsigned long long)m->id);
    pthread_mutex_unlock(&fd->mu);
    return m ? 0 : -1;
}

json_t *fake_discord_gateway_sessions(fake_discord *fd)
{
    pthread_mutex_lock(&fd->mu);
    json_t *arr = fdg_sessions(fd->gw);
    pthread_mutex_unlock(&fd->mu);
    return arr;
}

static int pred_identified(fake_discord *fd, const void *a)
{
    return fdg_identified(fd->gw) >= ((const wait_arg *)a)->n;
}

int fake_discord_wait_gateway(fake_discord *fd, size_t n, long timeout_ms)
{
    wait_arg w = {NULL, n};
    pthread_mutex_lock(&fd->mu);
    int ok = wait_locked(fd, timeout_ms, pred_identified, &w);
    pthread_mutex_unlock(&fd->mu);
    return ok ? 0 : -1;
}

int fake_discord_add_thread(fake_discord *fd, const char *channel_id, const char *message_id,
                            const char *name, char *id_out)
{
    pthread_mutex_lock(&fd->mu);
    fd_chan *ch = fd_chan_by_id(fd, channel_id);
    reply r;
    memset(&r, 0, sizeof r);
    json_t *nm = json_string(name ? name : "thread");
    fd_chan *t = ch && (!message_id || fd_msg_by_id(ch, message_id))
                     ? fd_thread_add(fd, ch, message_id, nm, "100000000000000009", &r)
                     : NULL;
    json_decref(nm);
    fd_set_reply(&r, 0, NULL);
    if (t && id_out)
        snprintf(id_out, 24, "%s", t->id);
    pthread_mutex_unlock(&fd->mu);
    return t ? 0 : -1;
}

int fake_discord_inject(fake_discord *fd, const char *channel_id, const char *author_id,
                        const char *content, const char *const *mentions, char *id_out)
{
    if (!dg_snowflake_valid(author_id) || !content)
        return -1;
    json_t *ms = json_array();
    for (size_t i = 0; mentions && mentions[i]; i++)
        json_array_append_new(ms, json_string(mentions[i]));
    pthread_mutex_lock(&fd->mu);
    fd_chan *ch = fd_chan_by_id(fd, channel_id);
    fd_msg *m = ch ? fd_msg_add(fd, ch, author_id, content, NULL, NULL, ms) : NULL;
    if (m && id_out)
        snprintf(id_out, 24, "%llu", (unsigned long long)m->id);
    pthread_mutex_unlock(&fd->mu);
    json_decref(ms);
    return m ? 0 : -1;
}
