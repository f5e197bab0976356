/*
 * host_sessions.c -- the host's sessions of a channel (sessions_list, JSON)
 * as the plain values the core works on (dg_plugin.host_sessions).
 */
#include "host_sessions.h"

#include <stdlib.h>
#include <string.h>

#include "discuss.h"

static void release_list(void *owner)
{
    json_decref((json_t *)owner);
}

void dg_host_sessions(dg_plugin *p, const char *channel_id, dg_session_refs *out)
{
    memset(out, 0, sizeof *out);
    json_t *list =
        channel_id && *channel_id ? p->api->sessions_list(p->api->host, channel_id) : NULL;
    if (!list) {
        out->unavailable = channel_id && *channel_id;
        return;
    }
    out->owner = list;
    out->release = release_list;
    if (!json_is_array(list)) {
        dg_log(p, OC_LOG_WARN,
               "sessions: host sessions_list(%s) did not return an array; "
               "taken as no sessions",
               channel_id);
        return;
    }
    size_t n = json_array_size(list);
    dg_session_ref *v = calloc(n ? n : 1, sizeof *v);
    if (!v) {
        out->unavailable = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(list, i);
        const char *key = json_string_value(json_object_get(e, "sessionKey"));
        const char *ch = json_string_value(json_object_get(e, "channelId"));
        if (!key || !*key || (ch && strcmp(ch, channel_id) != 0))
            continue;
        const char *th = json_string_value(json_object_get(e, "threadId"));
        v[out->n].session_key = key;
        v[out->n].agent_id = json_string_value(json_object_get(e, "agentId"));
        v[out->n].thread_id = th && *th ? th : NULL;
        out->n++;
    }
    out->v = v;
}
