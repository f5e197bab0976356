/*
 * ocgw_poll.c -- reading the served channels: each channel's polling state
 * (cursor, back-off, which agent's token reads), the first start's cursor,
 * one poll over REST (Discord or Slack) into the queue, and the queue's
 * next message in the order they were posted (see ocgw.h for the file map).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ocgw.h"
#include "snowflake.h"

#define MAX_BACKOFF_MS 5000L

struct ocgw_chan_rt *ocgw_rt_of(ocgw *g, const char *id)
{
    for (size_t i = 0; i < g->n_rt; i++)
        if (!strcmp(g->rt[i].id, id))
            return &g->rt[i];
    if (dg_grow(&g->rt, &g->cap_rt, g->n_rt, sizeof *g->rt, 8))
        return NULL;
    struct ocgw_chan_rt *r = &g->rt[g->n_rt++];
    memset(r, 0, sizeof *r);
    r->id = strdup(id);
    return r;
}

void ocgw_rt_failed(ocgw *g, struct ocgw_chan_rt *r, int64_t now)
{
    r->backoff_ms = r->backoff_ms ? r->backoff_ms * 2 : g->cfg.poll_ms;
    if (r->backoff_ms > MAX_BACKOFF_MS)
        r->backoff_ms = MAX_BACKOFF_MS;
    r->next_ms = now + r->backoff_ms;
}

/* First start: a configured channel is read from its latest message on
 * (or from its start with fromStart). */
void ocgw_init_cursor(ocgw *g, const char *id, json_t *ch, int64_t now)
{
    const ocgw_chan_cfg *c = ocgw_chan_cfg_by_id(&g->cfg, id);
    struct ocgw_chan_rt *r = ocgw_rt_of(g, id);
    if (!r || now < r->next_ms)
        return;
    if (c && c->from_start) {
        json_object_set_new(ch, "cursor", json_string("0"));
        ocgw_state_save(&g->st);
        return;
    }
    const ocgw_agent *a = ocgw_chan_reader(&g->cfg, ch, 0);
    if (!a)
        return;
    if (g->cfg.slack) {
        char latest[32];
        ocgw_slack_err se;
        int src = ocgw_slack_latest(a->sc, id, latest, sizeof latest, &se);
        ocgw_rest(g, se.attempts);
        if (src != OC_OK) {
            och_log(g->host, OC_LOG_WARN, OCGW_SOURCE,
                    "channel %s: cannot read its latest message (%s); retrying", id, se.message);
            ocgw_rt_failed(g, r, now);
            return;
        }
        json_object_set_new(ch, "cursor", json_string(latest));
        r->backoff_ms = 0;
        ocgw_state_save(&g->st);
        return;
    }
    dg_discord_message *msgs = NULL;
    size_t n = 0;
    dg_discord_err e;
    int rc = dg_discord_get_messages(a->dc, id, NULL, 1, &msgs, &n, &e);
    ocgw_rest(g, e.attempts);
    if (rc != OC_OK) {
        och_log(g->host, OC_LOG_WARN, OCGW_SOURCE,
                "channel %s: cannot read its latest message "
                "(%s); retrying",
                id, e.message);
        ocgw_rt_failed(g, r, now);
        return;
    }
    json_object_set_new(ch, "cursor", json_string(n ? msgs[n - 1].id : "0"));
    dg_discord_messages_free(msgs, n);
    r->backoff_ms = 0;
    ocgw_state_save(&g->st);
}

static void enqueue(ocgw *g, ocgw_msg *m)
{
    if (dg_grow(&g->queue, &g->cap_queue, g->n_queue, sizeof *g->queue, 32)) {
        ocgw_msg_free(m);
        return;
    }
    g->queue[g->n_queue++] = *m;
    memset(m, 0, sizeof *m);
}

/* One poll of a Slack channel (ocgw_slack_poll): its new messages, thread
 * replies included, up to the bound that read makes safe. */
static void poll_slack(ocgw *g, const char *id, struct ocgw_chan_rt *r, const ocgw_agent *a,
                       const char *after, int64_t now)
{
    ocgw_msg *msgs = NULL;
    size_t n = 0;
    char bound[32];
    ocgw_slack_err e;
    int rc = ocgw_slack_poll(a->sc, id, after, &msgs, &n, bound, sizeof bound, &e);
    ocgw_rest(g, e.attempts);
    if (rc != OC_OK) {
        if (!e.retryable)
            r->rot++; /* this agent cannot read it: try another member's token */
        och_log(g->host, e.retryable ? OC_LOG_DEBUG : OC_LOG_WARN, OCGW_SOURCE,
                "poll of #%s with %s's token failed: %s", ocgw_chan_label(g, id), a->id, e.message);
        ocgw_rt_failed(g, r, now);
        return;
    }
    r->backoff_ms = 0;
    r->next_ms = now + g->cfg.poll_ms;
    r->polled_ms = now;
    int64_t found = ocgw_now_ms();
    for (size_t i = 0; i < n; i++) {
        msgs[i].queued_ms = found;
        enqueue(g, &msgs[i]);
    }
    free(msgs);
    if (ocgw_id_cmp(bound, after) > 0)
        snprintf(r->queued, sizeof r->queued, "%s", bound);
}

void ocgw_poll_channel(ocgw *g, const char *id, json_t *ch, int64_t now)
{
    struct ocgw_chan_rt *r = ocgw_rt_of(g, id);
    if (!r || now < r->next_ms)
        return;
    const ocgw_agent *a = ocgw_chan_reader(&g->cfg, ch, r->rot);
    if (!a)
        return; /* none of its agents runs here: another gateway serves it */
    const char *cur = json_string_value(json_object_get(ch, "cursor"));
    const char *after = (*r->queued && ocgw_id_cmp(r->queued, cur) > 0) ? r->queued : cur;
    if (g->cfg.slack) {
        poll_slack(g, id, r, a, after, now);
        return;
    }
    /* "0" (from the start): ask for messages after 1, below every real id */
    if (!strcmp(after, "0"))
        after = "1";
    dg_discord_message *msgs = NULL;
    size_t n = 0;
    dg_discord_err e;
    int rc = dg_discord_get_messages(a->dc, id, after, 100, &msgs, &n, &e);
    ocgw_rest(g, e.attempts);
    if (rc != OC_OK) {
        if (!e.retryable)
            r->rot++; /* this agent cannot read it: try another member's token */
        och_log(g->host, e.retryable ? OC_LOG_DEBUG : OC_LOG_WARN, OCGW_SOURCE,
                "poll of #%s with %s's token failed: %s", ocgw_chan_label(g, id), a->id, e.message);
        ocgw_rt_failed(g, r, now);
        return;
    }
    r->backoff_ms = 0;
    r->next_ms = now + g->cfg.poll_ms;
    r->polled_ms = now;            /* at or before the request left: a safe lower bound */
    int64_t found = ocgw_now_ms(); /* after every message of the page was posted */
    for (size_t i = 0; i < n; i++) {
        if (dg_snowflake_cmp(msgs[i].id, after) <= 0)
            continue;
        ocgw_msg m;
        ocgw_msg_from_discord(g, &msgs[i], &m);
        m.queued_ms = found;
        enqueue(g, &m);
        snprintf(r->queued, sizeof r->queued, "%s", msgs[i].id);
    }
    if (n == 100)
        r->next_ms = now; /* more are waiting */
    dg_discord_messages_free(msgs, n);
}

/*
 * True when every other healthy served channel was polled after m was
 * found: a message posted earlier elsewhere (a smaller id) is then queued
 * too, so the smallest id is the next one posted and the transcript shows
 * messages in the order they were posted. A channel that fails (backing
 * off) or cannot be polled does not hold the others back for long: after
 * four poll intervals m goes anyway.
 */
static int others_polled_since(ocgw *g, const ocgw_msg *m, int64_t now)
{
    if (now - m->queued_ms >= 4 * g->cfg.poll_ms)
        return 1;
    const char *own = ocgw_chan_key(g, m);
    json_t *chs = ocgw_state_obj(&g->st, "channels");
    const char *id;
    json_t *ch;
    json_object_foreach(chs, id, ch) {
        /* A channel learnt a moment ago (a discussion just opened) counts
         * too: its kickoff may be older than m. One nobody sees does not. */
        if (!strcmp(id, own) ||
            (!json_is_true(json_object_get(ch, "pending")) && !ocgw_chan_reader(&g->cfg, ch, 0)))
            continue;
        struct ocgw_chan_rt *r = ocgw_rt_of(g, id);
        if (r && !r->backoff_ms && r->polled_ms < m->queued_ms)
            return 0;
    }
    return 1;
}

/* The queued message with the smallest id, skipping those already
 * processed, once it is surely the next one posted (others_polled_since);
 * 1 when *out was filled. */
int ocgw_dequeue(ocgw *g, ocgw_msg *out, int64_t now)
{
    json_t *chs = ocgw_state_obj(&g->st, "channels");
    while (g->n_queue) {
        size_t best = 0;
        for (size_t i = 1; i < g->n_queue; i++)
            if (ocgw_id_cmp(g->queue[i].id, g->queue[best].id) < 0)
                best = i;
        if (!others_polled_since(g, &g->queue[best], now))
            return 0;
        ocgw_msg m = g->queue[best];
        g->queue[best] = g->queue[--g->n_queue];
        const char *key = ocgw_chan_key(g, &m);
        const char *cur = json_string_value(json_object_get(json_object_get(chs, key), "cursor"));
        if (cur && ocgw_id_cmp(m.id, cur) <= 0) {
            ocgw_msg_free(&m);
            continue;
        }
        *out = m;
        return 1;
    }
    return 0;
}
