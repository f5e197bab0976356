/*
 * ocgw_services.c -- small services of the gateway that its other files
 * use: names and labels of users and channels, the transcript, the REST
 * request count, learned channels, the crash points of OCGW_DIE_AT.
 * Below ocgw.c, ocgw_run.c and ocgw_expect.c; calls only the state, the
 * config lookups and the utilities.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocgw.h"
#include "slack.h"
#include "buf.h"

void ocgw_rest(ocgw *g, int attempts)
{
    if (attempts > 0) {
        g->rest_requests += attempts;
        ocgw_state_count(&g->st, "restRequests", attempts);
        ocgw_state_count(&g->st, "restReads", attempts);
    }
}

void ocgw_rest_post(ocgw *g, int attempts, const char *who)
{
    if (attempts <= 0)
        return;
    g->rest_requests += attempts;
    ocgw_state_count(&g->st, "restRequests", attempts);
    json_t *by = ocgw_state_obj(&g->st, "restPostsBy");
    json_object_set_new(by, who,
                        json_integer(json_integer_value(json_object_get(by, who)) + attempts));
}

const char *ocgw_who(const ocgw *g, const char *user_id)
{
    if (!user_id)
        return "?";
    const ocgw_agent *a = ocgw_agent_by_user(&g->cfg, user_id);
    if (a)
        return a->id;
    const ocgw_human *h = ocgw_human_by_user(&g->cfg, user_id);
    if (h)
        return h->id;
    if (g->cfg.moderator_user_id && !strcmp(g->cfg.moderator_user_id, user_id))
        return "moderator";
    return user_id;
}

const char *ocgw_chan_label(ocgw *g, const char *channel_id)
{
    json_t *ch = json_object_get(ocgw_state_obj(&g->st, "channels"), channel_id);
    const char *l = json_string_value(json_object_get(ch, "alias"));
    if (!l)
        l = json_string_value(json_object_get(ch, "name"));
    return l ? l : channel_id;
}

char *ocgw_pretty(ocgw *g, const char *text, size_t max)
{
    if (!text)
        return strdup("");
    dg_buf out = {0};
    for (const char *p = text; *p;) {
        const char *add = p, *q = p;
        size_t addn = 1;
        char buf[160];
        if (p[0] == '<' && (p[1] == '@' || p[1] == '#')) {
            q = p + 2 + (p[1] == '@' && p[2] == '!');
            const char *s = q;
            int slack_id = *q >= 'A' && *q <= 'Z';
            while ((*q >= '0' && *q <= '9') || (slack_id && *q >= 'A' && *q <= 'Z'))
                q++;
            /* Slack's <@U...|name> and <#C...|name>: the label is ours. */
            const char *end = slack_id && *q == '|' ? strchr(q, '>') : q;
            if (end && *end == '>' && q > s && q - s <= (slack_id ? 21 : 20)) {
                char id[24];
                memcpy(id, s, (size_t)(q - s));
                id[q - s] = 0;
                snprintf(buf, sizeof buf, "%c%s", p[1],
                         p[1] == '@' ? ocgw_who(g, id) : ocgw_chan_label(g, id));
                add = buf;
                addn = strlen(buf);
                p = end + 1;
            } else {
                p++;
            }
        } else {
            p++;
        }
        if (dg_buf_add(&out, add, addn)) {
            dg_buf_free(&out);
            return NULL;
        }
    }
    char *line = ocgw_oneline(out.s ? out.s : "", max);
    dg_buf_free(&out);
    return line;
}

static void say_v(ocgw *g, const char *fmt, va_list ap)
{
    if (g->quiet || !g->transcript)
        return;
    /* One gateway of several (gateway.name): every line says whose it is,
     * so their transcripts can be read merged. */
    if (g->cfg.name)
        fprintf(g->transcript, "%s| ", g->cfg.name);
    vfprintf(g->transcript, fmt, ap);
    fputc('\n', g->transcript);
    fflush(g->transcript);
}

void ocgw_say(ocgw *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say_v(g, fmt, ap);
    va_end(ap);
}

void ocgw_detail(ocgw *g, const char *fmt, ...)
{
    if (!g->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    say_v(g, fmt, ap);
    va_end(ap);
}

void ocgw_maybe_die(ocgw *g, const char *point)
{
    if (!g->die_at)
        return;
    size_t pl = strlen(point);
    if (strncmp(g->die_at, point, pl) || g->die_at[pl] != ':')
        return;
    if (++g->die_count >= atoi(g->die_at + pl + 1)) {
        fprintf(stderr, "[ocgw] OCGW_DIE_AT=%s reached: SIGKILL\n", g->die_at);
        fflush(NULL);
        raise(SIGKILL);
    }
}

json_t *ocgw_channel_agents(ocgw *g, const char *channel_id)
{
    json_t *ch = json_object_get(ocgw_state_obj(&g->st, "channels"), channel_id);
    if (!ch || json_is_true(json_object_get(ch, "pending")))
        return NULL;
    return json_object_get(ch, "agents");
}

int ocgw_chan_id_valid(const ocgw *g, const char *id)
{
    return g->cfg.slack ? dg_slack_channel_id_valid(id) : dg_snowflake_valid(id);
}

const char *ocgw_chan_key(const ocgw *g, const ocgw_msg *m)
{
    return !g->cfg.slack && m->thread_id ? m->thread_id : m->channel_id;
}

void ocgw_learn_channel(ocgw *g, const char *channel_id, const char *by_agent, const char *alias)
{
    if (!ocgw_chan_id_valid(g, channel_id))
        return;
    json_t *chs = ocgw_state_obj(&g->st, "channels");
    json_t *ch = json_object_get(chs, channel_id);
    if (ch) {
        if (alias && !json_object_get(ch, "alias"))
            json_object_set_new(ch, "alias", json_string(alias));
        return;
    }
    ch = json_pack("{s:b, s:b, s:n, s:[]}", "learned", 1, "pending", 1, "cursor", "agents");
    if (by_agent)
        json_object_set_new(ch, "learnedBy", json_string(by_agent));
    if (alias)
        json_object_set_new(ch, "alias", json_string(alias));
    json_object_set_new(chs, channel_id, ch);
    och_log(g->host, OC_LOG_INFO, OCGW_SOURCE, "learnt channel %s%s%s%s%s", channel_id,
            by_agent ? " from a tool result of " : " from a <#id> reference",
            by_agent ? by_agent : "", alias ? " as @" : "", alias ? alias : "");
}

void ocgw_msg_from_discord(ocgw *g, const dg_discord_message *dm, ocgw_msg *m)
{
    memset(m, 0, sizeof *m);
    m->id = strdup(dm->id);
    json_t *ch = json_object_get(ocgw_state_obj(&g->st, "channels"), dm->channel_id);
    const char *parent = json_string_value(json_object_get(ch, "parentId"));
    if (parent) {
        m->channel_id = strdup(parent);
        m->thread_id = strdup(dm->channel_id);
    } else {
        m->channel_id = strdup(dm->channel_id);
    }
    m->author_id = strdup(dm->author_id ? dm->author_id : "0");
    m->author_bot = dm->author_bot;
    m->content = strdup(dm->content ? dm->content : "");
    m->mentions = calloc(dm->n_mentions + 1, sizeof *m->mentions);
    for (size_t i = 0; m->mentions && i < dm->n_mentions; i++)
        m->mentions[m->n_mentions++] = strdup(dm->mention_ids[i]);
}
