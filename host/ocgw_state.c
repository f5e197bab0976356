/*
 * ocgw_state.c -- the gateway's durable state, one JSON document in
 * <stateDir>/ocgw-state.json, rewritten atomically (temp file, fsync,
 * rename) after every step that must survive a SIGKILL. Layout:
 *
 *   {"version": 1,
 *    "starts": n,                       gateway starts (restarts = n - 1)
 *    "channels": {"<id>": {"alias", "name", "cursor", "agents": [...],
 *                          "learned", "pending", "learnedBy", "parentId"}},
 *    "vars": {"<name>": "<value>"},      bound by tool results
 *    "steps": {"<agent>": [used step indices]},
 *    "humans": {"<id>": {"next": k, "seen": {"<step>": "<thread>"}}},
 *    "inflight": null | the journal of the message being processed
 *                (ocgw_run.c),
 *    "tools": [{"agent", "tool", "status", "message"?}],
 *    "promptContext": {"<sessionKey>": {"appendSystemContext"?,
 *                      "prependContext"?}}     as before_prompt_build gave it,
 *    "totals": {"runs", "realModelCalls", "noReplySwaps", "claimedRuns",
 *               "restRequests", "restReads", ...},
 *    "restPostsBy": {"<agent or human id>": REST attempts of its posts}}
 *
 * The session table (provider/model overrides) is the host core's own
 * state file beside it (sessions.json); the plugins keep theirs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ocgw.h"

int ocgw_state_open(ocgw_state *st, const char *dir, int do_fsync, char *err, size_t err_len)
{
    memset(st, 0, sizeof *st);
    st->fsync = do_fsync;
    if (ocgw_mkdirs(dir, 0755) != 0) {
        snprintf(err, err_len, "gateway.stateDir %s: cannot create it (%s)", dir, strerror(errno));
        return -1;
    }
    st->path = dg_sprintf("%s/ocgw-state.json", dir);
    if (!st->path) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    if (access(st->path, F_OK) == 0) {
        json_error_t je;
        st->doc = json_load_file(st->path, 0, &je);
        if (!st->doc || !json_is_object(st->doc)) {
            snprintf(err, err_len,
                     "%s: malformed state file (line %d: %s); it is left as it is: "
                     "move it away to start afresh",
                     st->path, je.line, je.text);
            ocgw_state_close(st);
            return -1;
        }
        json_t *v = json_object_get(st->doc, "version");
        if (json_integer_value(v) != 1) {
            snprintf(err, err_len, "%s: state version %lld is not 1; use the ocgw that wrote it",
                     st->path, (long long)json_integer_value(v));
            ocgw_state_close(st);
            return -1;
        }
    } else {
        st->doc =
            json_pack("{s:i, s:i, s:{}, s:{}, s:{}, s:{}, s:n, s:[], s:{}}", "version", 1, "starts",
                      0, "channels", "vars", "steps", "humans", "inflight", "tools", "totals");
    }
    if (!st->doc) {
        snprintf(err, err_len, "out of memory");
        ocgw_state_close(st);
        return -1;
    }
    json_object_set_new(st->doc, "starts",
                        json_integer(json_integer_value(json_object_get(st->doc, "starts")) + 1));
    if (ocgw_state_save(st) != 0) {
        snprintf(err, err_len, "%s: cannot write the state file (%s)", st->path, strerror(errno));
        ocgw_state_close(st);
        return -1;
    }
    return 0;
}

int ocgw_state_save(ocgw_state *st)
{
    char *text = json_dumps(st->doc, JSON_INDENT(1) | JSON_SORT_KEYS);
    if (!text)
        return -1;
    int rc = ocgw_write_file(st->path, text, strlen(text), st->fsync);
    free(text);
    return rc;
}

void ocgw_state_close(ocgw_state *st)
{
    free(st->path);
    json_decref(st->doc);
    memset(st, 0, sizeof *st);
}

json_t *ocgw_state_obj(ocgw_state *st, const char *key)
{
    json_t *o = json_object_get(st->doc, key);
    if (!json_is_object(o)) {
        json_object_set_new(st->doc, key, json_object());
        o = json_object_get(st->doc, key);
    }
    return o;
}

void ocgw_state_count(ocgw_state *st, const char *key, long by)
{
    json_t *t = ocgw_state_obj(st, "totals");
    json_object_set_new(t, key, json_integer(json_integer_value(json_object_get(t, key)) + by));
}

long ocgw_state_total(ocgw_state *st, const char *key)
{
    return (long)json_integer_value(json_object_get(ocgw_state_obj(st, "totals"), key));
}

const char *ocgw_state_var(ocgw_state *st, const char *name)
{
    return json_string_value(json_object_get(ocgw_state_obj(st, "vars"), name));
}
