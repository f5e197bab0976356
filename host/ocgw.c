/*
 * ocgw.c -- the reference gateway: an OpenClaw-style host on the host core
 * (ochost.h) that loads native plugins, serves Discord or Slack channels
 * over REST polling, and runs scripted agents (see ocgw.h for the file map).
 *
 *   ocgw --config host.json [--state-dir DIR] [--poll-ms N] [--log-level L]
 *        [--expect story.json] [--timeout-ms N] [--transcript FILE] [--quiet]
 *        [--verbose]
 *   ocgw --config host.json --check     load the plugins, report, exit
 *
 * Exit status: 0 after SIGTERM/SIGINT (gateway_stop fired), or with
 * --expect when the story happened exactly; 1 when the story failed or
 * timed out, or --check found a plugin refused or failed; 2 for a bad
 * command line or config.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "ocgw.h"
#include "snowflake.h"

#define MAX_BACKOFF_MS 5000L

/* Polling state of one served channel (not persisted: rebuilt from the
 * cursors at start). */
struct ocgw_chan_rt {
    char *id;
    int64_t next_ms;   /* next poll / learn attempt */
    long backoff_ms;   /* after failures; 0 when healthy */
    unsigned rot;      /* which member agent's token polls */
    int64_t polled_ms; /* start of the latest successful poll (0: none yet) */
    char queued[32];   /* highest id queued ("" = none; a Slack ts too) */
};

static volatile sig_atomic_t g_stop;
static ocgw *g_self; /* for the REST client's log callback */

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* ---- ids ------------------------------------------------------------------------------------ */

static struct ocgw_chan_rt *rt_of(ocgw *g, const char *id)
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

static void rt_failed(ocgw *g, struct ocgw_chan_rt *r, int64_t now)
{
    r->backoff_ms = r->backoff_ms ? r->backoff_ms * 2 : g->cfg.poll_ms;
    if (r->backoff_ms > MAX_BACKOFF_MS)
        r->backoff_ms = MAX_BACKOFF_MS;
    r->next_ms = now + r->backoff_ms;
}

/* ---- REST client plumbing ------------------------------------------------------------------------- */

static void dc_log(void *state, int level, const char *message)
{
    if (g_self)
        och_log(g_self->host, level, OCGW_SOURCE, "discord client of %s: %s", (const char *)state,
                message);
}

static int make_client(ocgw *g, const char *name, const char *token, dg_discord **out, char *err,
                       size_t n)
{
    if (g->cfg.slack)
        return OC_OK; /* make_slack_client instead */
    dg_discord_options o = {
        .api_base = g->cfg.api_base,
        .token = token,
        .guild_id = g->cfg.guild_id,
        .timeout_ms = g->cfg.timeout_ms,
        .user_agent = "DiscordBot (ocgw, " DG_VERSION ")",
        .log = dc_log,
        .log_state = (void *)name,
    };
    char e[300];
    int rc = dg_discord_new(&o, out, e, sizeof e);
    if (rc)
        snprintf(err, n, "discord client for %s: %s", name, e);
    return rc;
}

/* A participant's Slack caller on a Slack gateway (nothing on Discord). */
static int make_slack_client(ocgw *g, const char *name, const char *token, ocgw_slack **out,
                             char *err, size_t n)
{
    if (!g->cfg.slack)
        return OC_OK;
    char e[300];
    int rc = ocgw_slack_new(g->cfg.api_base, token, g->cfg.timeout_ms, out, e, sizeof e);
    if (rc)
        snprintf(err, n, "slack client for %s: %s", name, e);
    return rc;
}

/* ---- channels ------------------------------------------------------------------------------------ */

/* Configured channels into the state (first start) and their runtime. */
static void install_channels(ocgw *g)
{
    json_t *chs = ocgw_state_obj(&g->st, "channels");
    for (size_t i = 0; i < g->cfg.n_channels; i++) {
        const ocgw_chan_cfg *c = &g->cfg.channels[i];
        json_t *ch = json_object_get(chs, c->id);
        if (!ch) {
            ch = json_pack("{s:b, s:b, s:n}", "learned", 0, "pending", 0, "cursor");
            json_object_set_new(chs, c->id, ch);
        }
        json_t *ags = json_array();
        for (size_t k = 0; k < c->n_agents; k++)
            json_array_append_new(ags, json_string(c->agents[k]));
        json_object_set_new(ch, "agents", ags); /* the config is authoritative */
        json_object_set_new(ch, "alias", json_string(c->alias));
        if (c->watch)
            json_object_set_new(ch, "watch", json_true());
        else
            json_object_del(ch, "watch");
        if (c->parent_id)
            json_object_set_new(ch, "parentId", json_string(c->parent_id));
        else
            json_object_del(ch, "parentId");
    }
}

/* 1 when the channel's overwrites deny @everyone (the guild's id) VIEW_CHANNEL:
 * a private channel, as the plugin's discussion channels are. */
static int denies_everyone(const ocgw *g, const json_t *channel)
{
    size_t i;
    json_t *ow;
    json_array_foreach(json_object_get(channel, "permission_overwrites"), i, ow) {
        const char *oid = json_string_value(json_object_get(ow, "id"));
        json_t *deny = json_object_get(ow, "deny");
        unsigned long long d = json_is_string(deny) ? strtoull(json_string_value(deny), NULL, 10)
                                                    : (unsigned long long)json_integer_value(deny);
        if (oid && g->cfg.guild_id && !strcmp(oid, g->cfg.guild_id) && (d & DG_PERM_VIEW_CHANNEL))
            return 1;
    }
    return 0;
}

/* The agents that see a served channel, said in the transcript, and the
 * channel read from its start: a channel new to the gateway. */
static void serve_learned(ocgw *g, const char *id, json_t *ch, json_t *ags, int priv)
{
    char list[256] = "";
    size_t i;
    json_t *v;
    json_array_foreach(ags, i, v)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 json_string_value(v));
    json_object_set_new(ch, "agents", ags);
    json_object_set_new(ch, "pending", json_false());
    json_object_set_new(ch, "cursor", json_string("0")); /* new to us: read from its start */
    ocgw_state_save(&g->st);
    ocgw_say(g, "[gateway] serving #%s (%s, %s): seen by %s", ocgw_chan_label(g, id), id,
             priv ? "private" : "public", *list ? list : "nobody");
}

/* A learned Slack channel: conversations.info and .members with the token
 * of the agent that learned it, else of any local agent that can read it
 * (a private channel answers channel_not_found to a non-member); the
 * agents that see it are its members, as Slack sends a bot the messages
 * of the channels it is in. */
static void resolve_learned_slack(ocgw *g, const char *id, json_t *ch, struct ocgw_chan_rt *r,
                                  int64_t now)
{
    const char *by = json_string_value(json_object_get(ch, "learnedBy"));
    json_t *info = NULL, *members = NULL;
    int any_retry = 0;
    for (size_t k = 0; k <= g->cfg.n_agents && !info; k++) {
        const ocgw_agent *a = k == 0 ? ocgw_agent_by_id(&g->cfg, by) : &g->cfg.agents[k - 1];
        if (!a || !a->local || !a->sc || (k > 0 && by && !strcmp(a->id, by)))
            continue;
        ocgw_slack_err e;
        int rc = ocgw_slack_channel(a->sc, id, &info, &members, &e);
        ocgw_rest(g, e.attempts);
        any_retry |= rc != OC_OK && e.retryable;
    }
    if (!info) {
        if (any_retry) {
            rt_failed(g, r, now);
            return;
        }
        och_log(g->host, OC_LOG_WARN, OCGW_SOURCE,
                "channel %s: none of the agents can read it; not served", id);
        json_object_set_new(ch, "pending", json_false());
        json_object_set_new(ch, "agents", json_array());
        ocgw_state_save(&g->st);
        return;
    }
    const char *name = json_string_value(json_object_get(info, "name"));
    if (name)
        json_object_set_new(ch, "name", json_string(name));
    json_t *ags = json_array();
    for (size_t k = 0; k < g->cfg.n_agents; k++) {
        size_t i;
        json_t *u;
        json_array_foreach(members, i, u)
            if (json_is_string(u) && !strcmp(json_string_value(u), g->cfg.agents[k].user_id)) {
                json_array_append_new(ags, json_string(g->cfg.agents[k].id));
                break;
            }
    }
    int priv = json_is_true(json_object_get(info, "is_private"));
    json_decref(info);
    json_decref(members);
    serve_learned(g, id, ch, ags, priv);
}

/* GET /channels/{id} for a learned channel: its name, thread parent and the
 * agents that can see it (a private channel: the members its overwrites
 * allow VIEW_CHANNEL; else every agent). */
static void resolve_learned(ocgw *g, const char *id, json_t *ch, int64_t now)
{
    struct ocgw_chan_rt *r = rt_of(g, id);
    if (!r || now < r->next_ms)
        return;
    if (g->cfg.slack) {
        resolve_learned_slack(g, id, ch, r, now);
        return;
    }
    const char *by = json_string_value(json_object_get(ch, "learnedBy"));
    json_t *obj = NULL;
    int any_retry = 0;
    for (size_t k = 0; k <= g->cfg.n_agents && !obj; k++) {
        const ocgw_agent *a = k == 0 ? ocgw_agent_by_id(&g->cfg, by) : &g->cfg.agents[k - 1];
        if (!a || !a->local || (k > 0 && by && !strcmp(a->id, by)))
            continue;
        char path[64];
        snprintf(path, sizeof path, "/channels/%s", id);
        dg_discord_err e;
        int rc = dg_discord_request(a->dc, "GET", path, NULL, 1, &obj, &e);
        ocgw_rest(g, e.attempts);
        if (rc != OC_OK) {
            json_decref(obj);
            obj = NULL;
            any_retry |= e.retryable;
        }
    }
    if (!obj) {
        if (any_retry) {
            rt_failed(g, r, now);
            return;
        }
        och_log(g->host, OC_LOG_WARN, OCGW_SOURCE,
                "channel %s: none of the agents can read it; not served", id);
        json_object_set_new(ch, "pending", json_false());
        json_object_set_new(ch, "agents", json_array());
        ocgw_state_save(&g->st);
        return;
    }
    const char *name = json_string_value(json_object_get(obj, "name"));
    if (name)
        json_object_set_new(ch, "name", json_string(name));
    json_int_t type = json_integer_value(json_object_get(obj, "type"));
    const char *parent = json_string_value(json_object_get(obj, "parent_id"));
    if ((type == 10 || type == 11 || type == 12) && parent)
        json_object_set_new(ch, "parentId", json_string(parent));
    int priv = denies_everyone(g, obj);
    size_t i;
    json_t *ow;
    json_t *ows = json_object_get(obj, "permission_overwrites");
    json_t *ags = json_array();
    for (size_t k = 0; k < g->cfg.n_agents; k++) {
        const ocgw_agent *a = &g->cfg.agents[k];
        int sees = !priv;
        json_array_foreach(ows, i, ow) {
            const char *oid = json_string_value(json_object_get(ow, "id"));
            json_t *allow = json_object_get(ow, "allow");
            unsigned long long al = json_is_string(allow)
                                        ? strtoull(json_string_value(allow), NULL, 10)
                                        : (unsigned long long)json_integer_value(allow);
            if (oid && !strcmp(oid, a->user_id) && (al & DG_PERM_VIEW_CHANNEL))
                sees = 1;
        }
        if (sees)
            json_array_append_new(ags, json_string(a->id));
    }
    json_decref(obj);
    serve_learned(g, id, ch, ags, priv);
}

/*
 * A gateway that runs only some agents (gateway.runOnly) learns the
 * channels another gateway's agents open (a discussion) from the guild's
 * channel list: their tool results never reach it, and ocgw has no gateway
 * websocket to be told. Only private channels (@everyone denied the view,
 * as a discussion is): a public channel is served when the config lists it,
 * as on a gateway that runs every agent (the archive index, a public channel
 * of the moderator's, would otherwise wake agents the config never gave
 * it). Every ten poll intervals (at least 1 s), with a
 * local agent's token; a channel new to the state is learnt like one from a
 * tool result (resolve_learned then finds who sees it, and a channel none
 * of the local agents sees is not polled).
 */
static void discover_channels(ocgw *g, int64_t now)
{
    long every = g->cfg.poll_ms * 10 > 1000 ? g->cfg.poll_ms * 10 : 1000;
    if (!g->cfg.split || !g->cfg.guild_id || now < g->discover_ms)
        return;
    g->discover_ms = now + every;
    const ocgw_agent *a = NULL;
    for (size_t k = 0; k < g->cfg.n_agents && !a; k++)
        if (g->cfg.agents[(g->discover_rot + k) % g->cfg.n_agents].local)
            a = &g->cfg.agents[(g->discover_rot + k) % g->cfg.n_agents];
    g->discover_rot++;
    if (!a)
        return;
    char path[64];
    snprintf(path, sizeof path, "/guilds/%s/channels", g->cfg.guild_id);
    json_t *arr = NULL;
    dg_discord_err e;
    int rc = dg_discord_request(a->dc, "GET", path, NULL, 1, &arr, &e);
    ocgw_rest(g, e.attempts);
    if (rc != OC_OK || !json_is_array(arr)) {
        och_log(g->host, OC_LOG_DEBUG, OCGW_SOURCE,
                "listing the guild's channels with %s's "
                "token failed (%s); trying again later",
                a->id, rc ? e.message : "not an array");
        json_decref(arr);
        return;
    }
    json_t *chs = ocgw_state_obj(&g->st, "channels");
    size_t i;
    json_t *c;
    json_array_foreach(arr, i, c) {
        const char *id = json_string_value(json_object_get(c, "id"));
        json_int_t type = json_integer_value(json_object_get(c, "type"));
        if (id && type == 0 && !json_object_get(chs, id) && denies_everyone(g, c))
            ocgw_learn_channel(g, id, NULL, NULL);
    }
    json_decref(arr);
}

/* First start: a configured channel is read from its latest message on
 * (or from its start with fromStart). */
static void init_cursor(ocgw *g, const char *id, json_t *ch, int64_t now)
{
    const ocgw_chan_cfg *c = ocgw_chan_cfg_by_id(&g->cfg, id);
    struct ocgw_chan_rt *r = rt_of(g, id);
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
            rt_failed(g, r, now);
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
        rt_failed(g, r, now);
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
        rt_failed(g, r, now);
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

static void poll_channel(ocgw *g, const char *id, json_t *ch, int64_t now)
{
    struct ocgw_chan_rt *r = rt_of(g, id);
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
        rt_failed(g, r, now);
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
        struct ocgw_chan_rt *r = rt_of(g, id);
        if (r && !r->backoff_ms && r->polled_ms < m->queued_ms)
            return 0;
    }
    return 1;
}

/* The queued message with the smallest id, skipping those already
 * processed, once it is surely the next one posted (others_polled_since);
 * 1 when *out was filled. */
static int dequeue(ocgw *g, ocgw_msg *out, int64_t now)
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

/* ---- totals ------------------------------------------------------------------------------------------ */

static void print_totals(ocgw *g)
{
    ocgw_state *s = &g->st;
    ocgw_say(g, "== totals (over %ld gateway start%s) ==",
             (long)json_integer_value(json_object_get(s->doc, "starts")),
             json_integer_value(json_object_get(s->doc, "starts")) == 1 ? "" : "s");
    ocgw_say(g, "  messages processed      %ld", ocgw_state_total(s, "messages"));
    ocgw_say(g, "  agent runs              %ld", ocgw_state_total(s, "runs"));
    ocgw_say(g, "  real model calls        %ld", ocgw_state_total(s, "realModelCalls"));
    ocgw_say(g, "  no-reply swaps          %ld (no model cost)",
             ocgw_state_total(s, "noReplySwaps"));
    ocgw_say(g, "  claimed runs            %ld (no model call at all)",
             ocgw_state_total(s, "claimedRuns"));
    ocgw_say(g, "  tool calls              %ld (%ld errors)", ocgw_state_total(s, "toolCalls"),
             ocgw_state_total(s, "toolErrors"));
    ocgw_say(g, "  files written           %ld", ocgw_state_total(s, "filesWritten"));
    ocgw_say(g, "  agent messages posted   %ld", ocgw_state_total(s, "agentPosts"));
    ocgw_say(g, "  sends cancelled         %ld", ocgw_state_total(s, "cancelledSends"));
    ocgw_say(g, "  moderator messages      %ld", ocgw_state_total(s, "moderatorMessages"));
    ocgw_say(g, "  human messages posted   %ld", ocgw_state_total(s, "humanPosts"));
    ocgw_say(g, "  REST requests by ocgw   %ld (this process: %ld)",
             ocgw_state_total(s, "restRequests"), g->rest_requests);
    /* Reads are the gateway's own (polling, look-ups, story checks), made
     * with some member's token: they belong to no agent. */
    ocgw_say(g, "    reads (polling)       %ld", ocgw_state_total(s, "restReads"));
    char posts[512] = "";
    const char *who;
    json_t *n;
    json_object_foreach(ocgw_state_obj(s, "restPostsBy"), who, n) {
        size_t l = strlen(posts);
        snprintf(posts + l, sizeof posts - l, "%s%s %lld", l ? ", " : "", who,
                 (long long)json_integer_value(n));
    }
    ocgw_say(g, "    posts by              %s", *posts ? posts : "nobody");
    ocgw_say(g, "  state                   %s", s->path);
    /* The counterfactual: OpenClaw alone runs every agent on every message
     * but the moderator's (it posts nothing then), each run a model call;
     * with the plugin every run not claimed or swapped made one. */
    long runs = ocgw_state_total(s, "runs");
    long made = runs - ocgw_state_total(s, "claimedRuns") - ocgw_state_total(s, "noReplySwaps");
    long alone = runs - ocgw_state_total(s, "moderatorRuns");
    ocgw_say(g, "  runs on moderator posts %ld (OpenClaw alone: no such post, no such run)",
             ocgw_state_total(s, "moderatorRuns"));
    char *value = ocgw_value_line_made(alone, made);
    ocgw_say(g, "== value: %s ==", value ? value : "(out of memory)");
    free(value);
}

/* ---- main -------------------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: ocgw --config host.json [options]\n"
        "  --config FILE       host config (plugins, discord or slack, gateway, channels, agents; "
        "demo/README.md)\n"
        "  --state-dir DIR     overrides gateway.stateDir\n"
        "  --poll-ms N         overrides gateway.pollIntervalMs\n"
        "  --log-level L       debug|info|warn|error (overrides gateway.logLevel)\n"
        "  --expect FILE       check a story; exit 0 when it happened exactly, else 1\n"
        "  --timeout-ms N      overrides the story's timeoutMs\n"
        "  --run-only IDS      overrides gateway.runOnly: the agents and humans this gateway\n"
        "                      runs, comma-separated (the others run on another gateway)\n"
        "  --name NAME         overrides gateway.name: the transcript's line prefix\n"
        "  --transcript FILE   write the transcript there instead of stdout\n"
        "  --quiet             no transcript\n"
        "  -v, --verbose       also the gateway's internal lines (variables, prompt context)\n"
        "  --check             load and check the plugins and the config, print a summary, exit\n"
        "  -h, --help          this text\n"
        "  --version           ocgw's version and plugin ABI\n");
}

/* A whole number of milliseconds for option opt, in lo..hi; 0, or -1 after
 * saying on stderr what is wrong with it. */
static int ms_option(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "ocgw: %s \"%s\": expected a whole number of milliseconds in %ld..%ld\n",
                opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int level_of(const char *s)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* One summary line (the host core has logged each plugin's fate and reason
 * already); 1 when a plugin was refused or its init failed. */
static int report_plugins(ocgw *g)
{
    int bad = 0;
    size_t n = och_plugin_count(g->host);
    char line[1024] = "";
    for (size_t i = 0; i < n; i++) {
        och_plugin_info pi;
        if (och_plugin_get(g->host, i, &pi) != OC_OK)
            continue;
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s=%s", i ? ", " : "",
                 pi.id ? pi.id : pi.dir, och_plugin_state_name(pi.state));
        if (pi.state == OCH_PLUGIN_REFUSED || pi.state == OCH_PLUGIN_FAILED)
            bad = 1;
    }
    if (n == 0)
        och_log(g->host, OC_LOG_WARN, OCGW_SOURCE,
                "no plugin found in plugins.load.paths: the gateway runs without plugins");
    else
        och_log(g->host, bad ? OC_LOG_WARN : OC_LOG_INFO, OCGW_SOURCE, "plugins: %s%s", line,
                bad ? " (see the lines above for the reasons)" : "");
    return bad;
}

/* The command line. */
typedef struct ocgw_opts {
    const char *config, *state_dir, *expect_path, *transcript, *run_only, *name;
    long poll_ms, timeout_ms;
    int log_level, check_only, quiet, verbose;
} ocgw_opts;

/* An option that is not one, or lacks its value: said on stderr; exit code 2. */
static int bad_option(int c, char **argv)
{
    if (c == ':')
        fprintf(stderr, "ocgw: option %s needs a value\n", argv[optind - 1]);
    else if (optopt)
        fprintf(stderr, "ocgw: unknown option -%c\n", optopt);
    else
        fprintf(stderr, "ocgw: unknown option %s\n", argv[optind - 1]);
    usage(stderr);
    return 2;
}

/* One option with its value into o: -1 to go on, else the exit code
 * (0 after --help or --version, 2 after saying on stderr what is wrong). */
static int take_option(int c, char **argv, ocgw_opts *o)
{
    switch (c) {
    case 'c': o->config = optarg; return -1;
    case 's': o->state_dir = optarg; return -1;
    case 'p': return ms_option("--poll-ms", optarg, 10, 600000, &o->poll_ms) ? 2 : -1;
    case 'l':
        if ((o->log_level = level_of(optarg)) < 0) {
            fprintf(stderr, "ocgw: --log-level %s: use debug, info, warn or error\n", optarg);
            return 2;
        }
        return -1;
    case 'e': o->expect_path = optarg; return -1;
    case 't': return ms_option("--timeout-ms", optarg, 1, 86400000, &o->timeout_ms) ? 2 : -1;
    case 'T': o->transcript = optarg; return -1;
    case 'R': o->run_only = optarg; return -1;
    case 'N':
        if (!*optarg) {
            fprintf(stderr, "ocgw: --name: expected a non-empty name\n");
            return 2;
        }
        o->name = optarg;
        return -1;
    case 'q': o->quiet = 1; return -1;
    case 'v': o->verbose = 1; return -1;
    case 'k': o->check_only = 1; return -1;
    case 'h': usage(stdout); return 0;
    case 'V':
        printf("ocgw %s (plugin ABI %d.%d)\n", DG_VERSION, OC_ABI_MAJOR, OC_ABI_MINOR);
        return 0;
    default: return bad_option(c, argv);
    }
}

/* The command line into *o: -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, ocgw_opts *o)
{
    static const struct option opts[] = {{"config", required_argument, 0, 'c'},
                                         {"state-dir", required_argument, 0, 's'},
                                         {"poll-ms", required_argument, 0, 'p'},
                                         {"log-level", required_argument, 0, 'l'},
                                         {"expect", required_argument, 0, 'e'},
                                         {"timeout-ms", required_argument, 0, 't'},
                                         {"transcript", required_argument, 0, 'T'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"verbose", no_argument, 0, 'v'},
                                         {"run-only", required_argument, 0, 'R'},
                                         {"name", required_argument, 0, 'N'},
                                         {"check", no_argument, 0, 'k'},
                                         {"help", no_argument, 0, 'h'},
                                         {"version", no_argument, 0, 'V'},
                                         {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->log_level = -1;
    opterr = 0; /* our own words for a bad option */
    int c, rc;
    while ((c = getopt_long(argc, argv, ":c:s:p:l:e:t:T:R:N:qvkhV", opts, NULL)) != -1)
        if ((rc = take_option(c, argv, o)) >= 0)
            return rc;
    if (!o->config || optind != argc) {
        if (optind != argc)
            fprintf(stderr, "ocgw: unexpected argument \"%s\"\n", argv[optind]);
        else
            fprintf(stderr, "ocgw: --config FILE is required\n");
        usage(stderr);
        return 2;
    }
    return -1;
}

/* --run-only "a,b": the same rules as gateway.runOnly, which it replaces. */
static int apply_run_only(ocgw *g, const char *run_only, char *err, size_t err_len)
{
    json_t *list = json_array();
    char *copy = strdup(run_only);
    for (char *save = NULL, *t = copy ? strtok_r(copy, ",", &save) : NULL; t;
         t = strtok_r(NULL, ",", &save))
        json_array_append_new(list, json_string(t));
    free(copy);
    int rc = ocgw_config_run_only(&g->cfg, list, "--run-only", err, err_len);
    json_decref(list);
    return rc;
}

/* The host config with the command line's overrides, the transcript and
 * the story: 0, or the exit code 2 after saying why on stderr. */
static int load_config(ocgw *g, const ocgw_opts *o, ocgw_expect *ex)
{
    char err[1024];
    if (ocgw_config_load(o->config, &g->cfg, err, sizeof err) != OC_OK) {
        fprintf(stderr, "ocgw: %s\n", err);
        return 2;
    }
    /* Plugins take their relative paths (dirigent: dbPath, templatesDir)
     * from the folder of the host's config file, as ocgw does; OpenClaw's
     * own variable tells them where that is, whatever the working directory. */
    if (!g->cfg.config_path || setenv("OPENCLAW_CONFIG_PATH", g->cfg.config_path, 1) != 0) {
        fprintf(stderr, "ocgw: cannot export OPENCLAW_CONFIG_PATH: %s\n", strerror(errno));
        return 2;
    }
    if (o->run_only && apply_run_only(g, o->run_only, err, sizeof err) != OC_OK) {
        fprintf(stderr, "ocgw: %s\n", err);
        return 2;
    }
    if (o->name) {
        free(g->cfg.name);
        g->cfg.name = strdup(o->name);
    }
    if (o->state_dir) {
        free(g->cfg.state_dir);
        g->cfg.state_dir = ocgw_abspath(NULL, o->state_dir);
    }
    if (o->poll_ms)
        g->cfg.poll_ms = o->poll_ms;
    if (o->log_level >= 0)
        g->cfg.log_level = o->log_level;
    g->transcript = stdout;
    if (o->transcript && !(g->transcript = fopen(o->transcript, "a"))) {
        fprintf(stderr, "ocgw: --transcript %s: %s\n", o->transcript, strerror(errno));
        return 2;
    }
    if (o->expect_path && ocgw_expect_load(o->expect_path, ex, err, sizeof err) != 0) {
        fprintf(stderr, "ocgw: --expect %s\n", err);
        return 2;
    }
    if (o->timeout_ms > 0)
        ex->timeout_ms = o->timeout_ms;
    return 0;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* A REST client for each agent and scripted human this gateway runs, and
 * the agents' workspaces: 0, or -1 after logging why. */
static int make_clients(ocgw *g, char *err, size_t err_len)
{
    for (size_t i = 0; i < g->cfg.n_agents; i++) {
        ocgw_agent *a = &g->cfg.agents[i];
        if (!a->local)
            continue; /* another gateway runs it: no token, no client here */
        if (make_client(g, a->id, a->token, &a->dc, err, err_len) != OC_OK ||
            make_slack_client(g, a->id, a->token, &a->sc, err, err_len) != OC_OK ||
            ocgw_mkdirs(a->workspace, 0755) != 0) {
            if (!a->dc && !a->sc)
                och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "%s", err);
            else
                och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "agents[%s].workspace %s: %s", a->id,
                        a->workspace, strerror(errno));
            return -1;
        }
    }
    for (size_t i = 0; i < g->cfg.n_humans; i++) {
        ocgw_human *h = &g->cfg.humans[i];
        if (h->local && h->token &&
            (make_client(g, h->id, h->token, &h->dc, err, err_len) != OC_OK ||
             make_slack_client(g, h->id, h->token, &h->sc, err, err_len) != OC_OK)) {
            och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "%s", err);
            return -1;
        }
    }
    return 0;
}

/* The host core, the state file, the sessions file and the clients: 0, or
 * the exit code after logging why. *sessions is the caller's to free. */
static int open_host(ocgw *g, char **sessions)
{
    char err[1024];
    g->host = och_host_new();
    if (!g->host) {
        fprintf(stderr, "ocgw: out of memory\n");
        return 1;
    }
    och_host_set_log(g->host, NULL, NULL, g->cfg.log_level);
    och_host_set_claim_hooks(g->host, g->cfg.claim_hooks);
    if (ocgw_decider_new(g->cfg.root, &g->decider, err, sizeof err) != 0) {
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "%s", err);
        return 2;
    }
    if (g->decider)
        och_host_set_decide(g->host, ocgw_decide, g->decider);
    if (ocgw_state_open(&g->st, g->cfg.state_dir, g->cfg.fsync, err, sizeof err) != 0) {
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "%s", err);
        return 2;
    }
    *sessions = dg_sprintf("%s/sessions.json", g->cfg.state_dir);
    if (och_host_set_state_file(g->host, *sessions, err, sizeof err) != OC_OK ||
        och_host_configure(g->host, g->cfg.root, g->cfg.config_dir, err, sizeof err) != OC_OK) {
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "%s", err);
        return 2;
    }
    return make_clients(g, err, sizeof err) ? 2 : 0;
}

/* Load the plugins and check the config against them: -1 to start, else
 * the exit code (--check's verdict, or 2 on a mistake). */
static int load_plugins(ocgw *g, int check_only)
{
    och_host_load(g->host);
    int refused = report_plugins(g);
    int mistakes = ocgw_preflight(g);
    if (check_only) {
        mistakes |= ocgw_check_moderators(g);
        if (!refused && !mistakes)
            ocgw_check_summary(g, stdout);
        return refused || mistakes ? 1 : 0;
    }
    if (mistakes) {
        och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE,
                "not starting: fix the config (the lines above say what); ocgw --check "
                "tells the same without starting");
        return 2;
    }
    return -1;
}

/* The channels installed, gateway_start dispatched, and the start told. */
static void start_gateway(ocgw *g)
{
    install_channels(g);
    ocgw_state_save(&g->st);
    json_t *ev = json_object();
    och_hook_dispatch(g->host, "gateway_start", ev, NULL, NULL);
    json_decref(ev);
    long starts = (long)json_integer_value(json_object_get(g->st.doc, "starts"));
    json_t *tools = och_tools_list(g->host);
    ocgw_say(g,
             "[gateway] started (start %ld): %zu agents, %zu configured channels, %zu tools, "
             "state %s",
             starts, g->cfg.n_agents, g->cfg.n_channels, json_array_size(tools), g->st.path);
    if (g->cfg.split) {
        char mine[512] = "", theirs[512] = "";
        for (size_t i = 0; i < g->cfg.n_agents; i++) {
            char *l = g->cfg.agents[i].local ? mine : theirs;
            snprintf(l + strlen(l), 512 - strlen(l), "%s%s", *l ? ", " : "", g->cfg.agents[i].id);
        }
        for (size_t i = 0; i < g->cfg.n_humans; i++)
            if (g->cfg.humans[i].local && g->cfg.humans[i].n_steps)
                snprintf(mine + strlen(mine), sizeof mine - strlen(mine), ", %s (scripted human)",
                         g->cfg.humans[i].id);
        ocgw_say(g, "[gateway] runs %s here; %s run on another gateway", mine, theirs);
    }
    json_decref(tools);
    och_log(g->host, OC_LOG_INFO, OCGW_SOURCE, "gateway started; polling every %ld ms",
            g->cfg.poll_ms);
}

/* Channels learned but not resolved yet, and reading cursors not set yet;
 * 1 when every channel read has its cursor. */
static int prepare_channels(ocgw *g, int64_t now)
{
    json_t *chs = ocgw_state_obj(&g->st, "channels");
    const char *id;
    json_t *ch;
    int cursors_ready = 1;
    json_object_foreach(chs, id, ch) {
        if (json_is_true(json_object_get(ch, "pending")))
            resolve_learned(g, id, ch, now);
        else if ((json_is_null(json_object_get(ch, "cursor")) || !json_object_get(ch, "cursor")) &&
                 ocgw_chan_reader(&g->cfg, ch, 0)) {
            init_cursor(g, id, ch, now);
            if (!json_is_string(json_object_get(ch, "cursor")))
                cursors_ready = 0;
        }
    }
    return cursors_ready;
}

/* The message in flight, else the next queued one, else a scripted
 * human's next step; *busy when a message was handled. 1 when it is to be
 * tried again after a poll interval. */
static int handle_next(ocgw *g, int64_t now, int cursors_ready, int *busy)
{
    int rc = 0;
    if (json_is_object(json_object_get(g->st.doc, "inflight"))) {
        rc = ocgw_process_inflight(g);
        *busy = 1;
    } else {
        ocgw_msg m;
        if (dequeue(g, &m, now)) {
            ocgw_begin_message(g, &m);
            ocgw_msg_free(&m);
            rc = ocgw_process_inflight(g);
            *busy = 1;
        }
    }
    if (rc == 0 && cursors_ready && !*busy)
        rc = ocgw_humans_fire(g);
    return rc;
}

static void poll_channels(ocgw *g, int64_t now)
{
    const char *id;
    json_t *ch;
    json_object_foreach(ocgw_state_obj(&g->st, "channels"), id, ch) {
        if (g_stop)
            break;
        if (!json_is_true(json_object_get(ch, "pending")) &&
            json_is_string(json_object_get(ch, "cursor")))
            poll_channel(g, id, ch, now);
    }
}

/* The story's progress, between messages. *complete_since: when it was
 * first found complete (0: not). -1 to go on, else the exit code. */
static int story_check(ocgw *g, ocgw_expect *ex, int64_t now, int64_t *complete_since)
{
    char why[1024] = "";
    int rc = ocgw_expect_check(g, ex, 0, why, sizeof why);
    if (rc < 0) {
        ocgw_say(g, "== story FAILED: %s ==", why);
        ocgw_expect_check(g, ex, 1, why, sizeof why);
        return 1;
    }
    if (rc == 1 && !*complete_since)
        *complete_since = now;
    else if (rc == 0)
        *complete_since = 0;
    if (rc == 1 && now - *complete_since >= ex->settle_ms) {
        rc = ocgw_expect_check(g, ex, 1, why, sizeof why);
        ocgw_say(g,
                 rc == 1 ? "== story complete: every step happened as written =="
                         : "== story FAILED at the final check: %s ==",
                 why);
        return rc == 1 ? 0 : 1;
    }
    return -1;
}

/* A story that never settles still ends: exit code 1. */
static int story_timed_out(ocgw *g, ocgw_expect *ex, int64_t elapsed)
{
    char why[1024] = "";
    int rc = ocgw_expect_check(g, ex, 0, why, sizeof why);
    ocgw_say(g, "== story TIMED OUT after %ld ms%s%s ==", (long)elapsed, rc == 1 ? "" : ": ",
             rc == 1 ? "" : why);
    ocgw_expect_check(g, ex, 1, why, sizeof why);
    return 1;
}

/* Poll, deliver and check the story until a signal or the story's end;
 * returns the exit code. ex is NULL without a story. */
static int run_gateway(ocgw *g, ocgw_expect *ex)
{
    int64_t t0 = ocgw_now_ms(), last_check = 0, complete_since = 0, retry_at = 0;
    long check_every = g->cfg.poll_ms * 2 > 300 ? g->cfg.poll_ms * 2 : 300;
    int exit_code = 0;
    while (!g_stop) {
        int64_t now = ocgw_now_ms();
        int busy = 0;
        int cursors_ready = prepare_channels(g, now);
        discover_channels(g, now);
        if (g_stop)
            break;
        if (now >= retry_at && handle_next(g, now, cursors_ready, &busy) == 1)
            retry_at = now + g->cfg.poll_ms;
        now = ocgw_now_ms();
        poll_channels(g, now);
        if (ex && !busy && !g->n_queue && !json_is_object(json_object_get(g->st.doc, "inflight")) &&
            now - last_check >= check_every) {
            last_check = now;
            if ((exit_code = story_check(g, ex, now, &complete_since)) >= 0)
                break;
            exit_code = 0;
        }
        /* Busy or not: a story that never settles still ends. */
        if (ex && now - t0 > ex->timeout_ms) {
            exit_code = story_timed_out(g, ex, now - t0);
            break;
        }
        if (!busy)
            ocgw_sleep_ms(g->cfg.poll_ms < 20 ? g->cfg.poll_ms : 20);
    }
    json_t *ev = json_pack("{s:s}", "reason", g_stop ? "signal" : "story finished");
    och_hook_dispatch(g->host, "gateway_stop", ev, NULL, NULL);
    json_decref(ev);
    ocgw_state_save(&g->st);
    print_totals(g);
    return exit_code;
}

/* Everything main set up, in any state it got to. */
static void cleanup(ocgw *g, ocgw_expect *ex, char *sessions)
{
    och_host_free(g->host);        /* plugins shut down first: their threads may still log */
    ocgw_decider_free(g->decider); /* after the plugins: their judge may ask until then */
    g->decider = NULL;
    g->host = NULL;
    g_self = NULL;
    free(sessions);
    for (size_t i = 0; i < g->n_queue; i++)
        ocgw_msg_free(&g->queue[i]);
    free(g->queue);
    for (size_t i = 0; i < g->n_rt; i++)
        free(g->rt[i].id);
    free(g->rt);
    ocgw_state_close(&g->st);
    ocgw_config_free(&g->cfg);
    ocgw_expect_free(ex);
    if (g->transcript && g->transcript != stdout)
        fclose(g->transcript);
}

int main(int argc, char **argv)
{
    ocgw_opts o;
    int exit_code = parse_args(argc, argv, &o);
    if (exit_code >= 0)
        return exit_code;
    ocgw g;
    memset(&g, 0, sizeof g);
    g_self = &g;
    g.stop = &g_stop;
    g.quiet = o.quiet;
    g.verbose = o.verbose;
    g.die_at = getenv("OCGW_DIE_AT");
    ocgw_expect ex;
    memset(&ex, 0, sizeof ex);
    char *sessions = NULL;
    if ((exit_code = load_config(&g, &o, &ex)) == 0) {
        install_signals();
        if ((exit_code = open_host(&g, &sessions)) == 0 &&
            (exit_code = load_plugins(&g, o.check_only)) < 0) {
            start_gateway(&g);
            exit_code = run_gateway(&g, o.expect_path ? &ex : NULL);
        }
    }
    cleanup(&g, &ex, sessions);
    return exit_code;
}
