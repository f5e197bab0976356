/*
 * ocgw_channels.c -- which channels the gateway serves: the configured ones
 * installed into the state, those it learns (a discussion opened by a
 * plugin) resolved to their members, and with gateway.runOnly the guild's
 * channels listed to find new ones (see ocgw.h for the file map).
 */
#include <stdio.h>
#include <string.h>

#include "ocgw.h"

/* Configured channels into the state (first start) and their runtime. */
void ocgw_install_channels(ocgw *g)
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
            ocgw_rt_failed(g, r, now);
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
void ocgw_resolve_learned(ocgw *g, const char *id, json_t *ch, int64_t now)
{
    struct ocgw_chan_rt *r = ocgw_rt_of(g, id);
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
            ocgw_rt_failed(g, r, now);
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
 * tool result (ocgw_resolve_learned then finds who sees it, and a channel none
 * of the local agents sees is not polled).
 */
void ocgw_discover_channels(ocgw *g, int64_t now)
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
