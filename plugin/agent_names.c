/*
 * agent_names.c -- agents' Discord names, for mentions a host rendered as
 * text (agent_names.h).
 */
#include "agent_names.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "errors.h"
#include "md_code.h"

#define NAME_MAX_BYTES 100 /* Discord: 32 for a username, 32 for a display name */
#define RETRY_MS (60 * 1000)
#define RETRY_FOREVER_MS (60 * 60 * 1000)

typedef struct agent_entry {
    char username[NAME_MAX_BYTES];
    char global_name[NAME_MAX_BYTES];
    int known;
    int warned;
    int64_t next_try_ms;
} agent_entry;

struct dg_agent_names {
    pthread_mutex_t mu; /* guards every entry */
    size_t n;
    int no_client_logged;
    agent_entry *v;
};

int dg_agent_names_new(size_t n_agents, dg_agent_names **out)
{
    *out = NULL;
    dg_agent_names *n = calloc(1, sizeof *n);
    if (!n)
        return DG_ERR_NOMEM;
    n->v = calloc(n_agents ? n_agents : 1, sizeof *n->v);
    if (!n->v) {
        free(n);
        return DG_ERR_NOMEM;
    }
    n->n = n_agents;
    pthread_mutex_init(&n->mu, NULL);
    *out = n;
    return DG_OK;
}

void dg_agent_names_free(dg_agent_names *n)
{
    if (!n)
        return;
    pthread_mutex_destroy(&n->mu);
    free(n->v);
    free(n);
}

/* Look up agent `due` (its entry not known, its try due); logs the result. */
static void look_up(dg_agent_names *n, dg_plugin *p, size_t due, int64_t now_ms)
{
    const dg_agent_cfg *a = &p->cfg.agents[due];
    char username[NAME_MAX_BYTES], global_name[NAME_MAX_BYTES];
    dg_chat_err err;
    memset(&err, 0, sizeof err);
    int rc = dg_chat_user_names(p->chat, a->discord_user_id, username, sizeof username, global_name,
                                sizeof global_name, &err);
    pthread_mutex_lock(&n->mu);
    agent_entry *e = &n->v[due];
    int warn = 0;
    if (rc == DG_OK) {
        memcpy(e->username, username, sizeof username);
        memcpy(e->global_name, global_name, sizeof global_name);
        e->known = 1;
    } else {
        e->next_try_ms = now_ms + (err.retryable ? RETRY_MS : RETRY_FOREVER_MS);
        warn = !e->warned;
        e->warned = 1;
    }
    pthread_mutex_unlock(&n->mu);
    if (rc == DG_OK)
        dg_log(p, OC_LOG_DEBUG, "turns: agent %s is mentioned in text as @%s%s%s", a->agent_id,
               global_name[0] ? global_name : username, global_name[0] ? " or @" : "",
               global_name[0] ? username : "");
    else if (warn)
        dg_log(p, OC_LOG_WARN,
               "turns: could not look up the Discord names of agent %s (user "
               "%s): %s; a human's @mention of it rendered as text is not recognised until "
               "it is found (tried again in %s); check agents.%s.discordUserId",
               a->agent_id, a->discord_user_id, err.message, err.retryable ? "a minute" : "an hour",
               a->agent_id);
}

void dg_agent_names_refresh(dg_agent_names *n, dg_plugin *p, int64_t now_ms)
{
    if (!n || !p)
        return;
    size_t count = n->n < p->cfg.n_agents ? n->n : p->cfg.n_agents;
    for (size_t i = 0; i < count; i++) {
        pthread_mutex_lock(&n->mu);
        int due =
            !n->v[i].known && p->cfg.agents[i].discord_user_id && n->v[i].next_try_ms <= now_ms;
        int log_no_client = due && !p->chat && !n->no_client_logged;
        if (log_no_client)
            n->no_client_logged = 1;
        pthread_mutex_unlock(&n->mu);
        if (!due)
            continue;
        if (!p->chat) {
            if (log_no_client)
                dg_log(p, OC_LOG_INFO,
                       "turns: no moderator token, so the agents' Discord "
                       "names are not looked up; a human's @mention that the host renders as "
                       "text (\"@name\" instead of <@id>) does not pick the agent");
            return;
        }
        look_up(n, p, i, now_ms);
    }
}

static int word_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c >= 0x80;
}

/* 1 when "@name" occurs in content as a whole mention. */
static int mentions_name(const char *content, const char *name)
{
    size_t len = strlen(name);
    if (!len)
        return 0;
    for (const char *at = strchr(content, '@'); at; at = strchr(at + 1, '@')) {
        if (at > content && word_byte((unsigned char)at[-1]))
            continue;
        if (strncmp(at + 1, name, len) == 0 && !word_byte((unsigned char)at[1 + len]))
            return 1;
    }
    return 0;
}

size_t dg_agent_names_mentioned(dg_agent_names *n, const char *content, unsigned char *hit)
{
    if (!n || !content || !strchr(content, '@'))
        return 0;
    /* Discord pings nobody for "@name" in code: look at the rest only. */
    char *plain = NULL;
    if (strchr(content, '`')) {
        if (!(plain = strdup(content)))
            return 0;
        dg_md_blank_code(plain);
        content = plain;
    }
    size_t found = 0;
    pthread_mutex_lock(&n->mu);
    for (size_t i = 0; i < n->n; i++) {
        const agent_entry *e = &n->v[i];
        if (e->known &&
            (mentions_name(content, e->global_name) || mentions_name(content, e->username))) {
            hit[i] = 1;
            found++;
        }
    }
    pthread_mutex_unlock(&n->mu);
    free(plain);
    return found;
}
