/*
 * outbox_env.c -- see outbox_env.h.
 */
#include "outbox_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "outbox.h"
#include "store.h"
#include "store_outbox.h"

static void append(obe *e, int level, const char *prefix, const char *msg)
{
    pthread_mutex_lock(&e->log_mu);
    size_t add = strlen(prefix) + strlen(msg) + 8;
    char *n = realloc(e->log, e->log_len + add + 1);
    if (n) {
        e->log = n;
        e->log_len +=
            (size_t)snprintf(e->log + e->log_len, add + 1, "%d %s%s\n", level, prefix, msg);
    }
    pthread_mutex_unlock(&e->log_mu);
}

/* The host-call table's log: ctx is the obe. */
static void host_log(void *ctx, int level, const char *message)
{
    append(ctx, level, "", message);
}

/* The client's own lines, unscrubbed. */
static void client_log(void *state, int level, const char *message)
{
    append(state, level, "client: ", message);
}

int obe_open(obe *e, const char *base_url, const char *db_path, const dg_chat_options *tune,
             char *err, size_t err_len)
{
    dg_chat_options o;
    memset(&o, 0, sizeof o);
    if (tune)
        o = *tune;
    o.platform = DG_PLATFORM_DISCORD;
    return obe_open_on(e, base_url, db_path, &o, err, err_len);
}

int obe_open_on(obe *e, const char *base_url, const char *db_path, const dg_chat_options *tune,
                char *err, size_t err_len)
{
    int slack = tune && tune->platform == DG_PLATFORM_SLACK;
    memset(e, 0, sizeof *e);
    pthread_mutex_init(&e->log_mu, NULL);
    e->p.host.ctx = e;
    e->p.host.log = host_log;
    dg_set_clock(&e->p, NULL, NULL);
    e->p.cfg.moderator_token = strdup(slack ? OBE_SLACK_TOKEN : OBE_TOKEN);
    e->p.cfg.moderator_user_id = strdup(slack ? OBE_SLACK_MOD_ID : OBE_MOD_ID);
    e->p.cfg.discord_api_base = strdup(base_url);
    e->p.cfg.discord_timeout_ms = tune && tune->timeout_ms ? tune->timeout_ms : 15000;
    if (!e->p.cfg.moderator_token || !e->p.cfg.moderator_user_id || !e->p.cfg.discord_api_base) {
        snprintf(err, err_len, "out of memory");
        obe_close(e);
        return -1;
    }
    if (dg_store_open(db_path, &e->p.store, err, err_len) != OC_OK) {
        obe_close(e);
        return -1;
    }
    dg_chat_options o;
    memset(&o, 0, sizeof o);
    if (tune)
        o = *tune;
    o.platform = slack ? DG_PLATFORM_SLACK : DG_PLATFORM_DISCORD;
    o.api_base = base_url;
    o.token = e->p.cfg.moderator_token;
    o.no_pacing = slack; /* a fake: Slack's own pacing would only slow the tests */
    o.log = client_log;
    o.log_state = e;
    if (dg_chat_new(&o, &e->p.chat, err, err_len) != OC_OK) {
        obe_close(e);
        return -1;
    }
    return 0;
}

void obe_close(obe *e)
{
    dg_outbox_stop(e->p.outbox);
    e->p.outbox = NULL;
    dg_chat_free(e->p.chat);
    e->p.chat = NULL;
    dg_store_close(e->p.store);
    e->p.store = NULL;
    free(e->p.cfg.moderator_token);
    free(e->p.cfg.moderator_user_id);
    free(e->p.cfg.discord_api_base);
    memset(&e->p.cfg, 0, sizeof e->p.cfg);
    free(e->log);
    e->log = NULL;
    e->log_len = 0;
    pthread_mutex_destroy(&e->log_mu);
}

char *obe_log_text(obe *e)
{
    pthread_mutex_lock(&e->log_mu);
    char *t = strdup(e->log ? e->log : "");
    pthread_mutex_unlock(&e->log_mu);
    return t;
}

int obe_log_has(obe *e, const char *needle)
{
    pthread_mutex_lock(&e->log_mu);
    int has = e->log && strstr(e->log, needle) != NULL;
    pthread_mutex_unlock(&e->log_mu);
    return has;
}

long long obe_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int obe_child_args(int fd, char *url, size_t url_len, char *chan, size_t chan_len)
{
    char buf[512];
    size_t got = 0;
    while (got < sizeof buf - 1) {
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        buf[got] = '\0';
        if (strchr(buf, '\n') && strchr(strchr(buf, '\n') + 1, '\n'))
            break;
    }
    buf[got] = '\0';
    char *nl = strchr(buf, '\n');
    if (!nl)
        return -1;
    *nl = '\0';
    char *c = nl + 1;
    c[strcspn(c, "\n")] = '\0';
    snprintf(url, url_len, "%s", buf);
    snprintf(chan, chan_len, "%s", c);
    return 0;
}

int64_t obe_count(obe *e, dg_outbox_state state)
{
    int64_t n = 0;
    if (dg_store_begin(e->p.store) != DG_OK)
        return -1;
    int rc = dg_store_outbox_count(e->p.store, state, &n);
    if (dg_store_commit(e->p.store) != DG_OK || rc != DG_OK)
        return -1;
    return n;
}

char *obe_failed_reason(obe *e, const char *chan)
{
    dg_outbox_row *rows = NULL;
    size_t n = 0;
    if (dg_store_begin(e->p.store) != DG_OK)
        return NULL;
    int rc = dg_store_outbox_list(e->p.store, chan, &rows, &n);
    if (dg_store_commit(e->p.store) != DG_OK || rc != DG_OK)
        return NULL;
    char *why = n == 1 && rows[0].state == DG_OUTBOX_FAILED && rows[0].last_error
                    ? strdup(rows[0].last_error)
                    : NULL;
    dg_outbox_rows_free(rows, n);
    return why;
}
