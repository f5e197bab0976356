/*
 * ocgw_expect.c -- `ocgw --expect story.json`: the gateway checks a story
 * against Discord itself (the full history of each channel, fetched with an
 * agent's token), the agents' workspaces and its journal of tool outcomes,
 * and exits 0 only when everything happened exactly as written.
 *
 *   {"timeoutMs": 120000, "settleMs": 1500,
 *    "channels": {"work": [{"from": "alice", "contains": ["..."],
 *                           "mentions": ["planner"]}, ...],
 *                 "@discussion": [...]},
 *    "files": [{"agent": "planner", "path": "plans/x.md", "contains": "..."}],
 *    "tools": [{"agent": "planner", "tool": "discuss-callback",
 *               "status": "OC_OK"}],
 *    "totals": {"noReplySwaps": {"min": 1}},
 *    "humansDone": true}
 *
 * A channel key may also be a channel id the gateway does not serve (no
 * agent sees it, e.g. the moderator's archive index): its history is read
 * with the first agent's token and checked the same way.
 * Channel histories must match message for message: a missing message at
 * the end means "not yet", any other difference (an extra message, a
 * duplicate, a wrong author) contradicts the story. `mentions` lists the
 * exact set of users the message mentions (agent/human ids, "moderator").
 * Tool outcomes are compared in order, transient OC_ERR_IO results (retried
 * by the scripted agent) left out. Strings take {{var}} substitution.
 *
 * On Slack a channel's history holds its thread replies too, in the order
 * posted; a message with "inThread": true must be a thread reply, any
 * other a top-level message.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ocgw.h"
#include "json_keys.h"

static int why_set(char *why, size_t n, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int why_set(char *why, size_t n, int rc, const char *fmt, ...)
{
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* Only the listed keys in object o; 0, or -1 with err naming the first other. */
static int known_keys(const json_t *o, const char *where, const char *const *keys, char *err,
                      size_t n)
{
    const char *k = dg_json_unknown_key(o, keys);
    return k ? why_set(err, n, -1, "%s: unknown key \"%s\"", where, k) : 0;
}

/* Every string member of o named in keys (NULL-terminated) is a non-empty
 * string when present; those before the first NULL of `required` must be. */
static int strings(const json_t *o, const char *where, const char *const *keys, int n_required,
                   char *err, size_t n)
{
    for (int i = 0; keys[i]; i++) {
        const json_t *v = json_object_get(o, keys[i]);
        if (!v && i >= n_required)
            continue;
        if (!json_is_string(v) || !*json_string_value(v))
            return why_set(err, n, -1, "%s.%s: expected a non-empty string", where, keys[i]);
    }
    return 0;
}

/* channels: channel -> [messages], each a match with optional mentions. */
static int validate_channels(const json_t *doc, const char *path, char *err, size_t n)
{
    char where[256];
    const json_t *ch = json_object_get(doc, "channels");
    if (ch && !json_is_object(ch))
        return why_set(err, n, -1, "%s: channels: expected an object channel -> [messages]", path);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ch, k, v) {
        if (!json_is_array(v))
            return why_set(err, n, -1, "%s: channels.%s: expected an array of messages", path, k);
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m) {
            snprintf(where, sizeof where, "%s: channels.%s[%zu]", path, k, i);
            const json_t *mn = json_object_get(m, "mentions");
            size_t x;
            json_t *who;
            if (mn && !json_is_array(mn))
                return why_set(err, n, -1, "%s.mentions: expected an array of ids", where);
            const json_t *it = json_object_get(m, "inThread");
            if (it && !json_is_boolean(it))
                return why_set(err, n, -1, "%s.inThread: expected true or false", where);
            json_array_foreach(mn, x, who)
                if (!json_is_string(who))
                    return why_set(err, n, -1,
                                   "%s.mentions[%zu]: expected an agent, human or user id", where,
                                   x);
            json_t *copy = json_deep_copy(m);
            json_object_del(copy, "mentions");
            json_object_del(copy, "inThread");
            ocgw_match tmp;
            int rc = ocgw_match_parse(copy, where, &tmp, err, n);
            json_decref(copy);
            if (rc != 0)
                return -1;
            ocgw_match_free(&tmp);
        }
    }
    return 0;
}

/* files: [{agent, path, contains?}], paths inside the workspace. */
static int validate_files(const json_t *doc, const char *path, char *err, size_t n)
{
    static const char *const fkeys[] = {"agent", "path", "contains", NULL};
    char where[256];
    const json_t *files = json_object_get(doc, "files");
    if (files && !json_is_array(files))
        return why_set(err, n, -1, "%s: files: expected an array of {agent, path, contains?}",
                       path);
    size_t i;
    json_t *v;
    json_array_foreach(files, i, v) {
        snprintf(where, sizeof where, "%s: files[%zu]", path, i);
        if (!json_is_object(v))
            return why_set(err, n, -1, "%s: expected an object {agent, path, contains?}", where);
        if (known_keys(v, where, fkeys, err, n) || strings(v, where, fkeys, 2, err, n))
            return -1;
        const char *rel = json_string_value(json_object_get(v, "path"));
        if (rel[0] == '/' || strstr(rel, ".."))
            return why_set(err, n, -1,
                           "%s.path: \"%s\" must be relative to the agent's "
                           "workspace, without ..",
                           where, rel);
    }
    return 0;
}

/* tools: [{agent, tool, status}], status an oc_status name. */
static int validate_tools(const json_t *doc, const char *path, char *err, size_t n)
{
    static const char *const tkeys[] = {"agent", "tool", "status", NULL};
    char where[256];
    const json_t *tools = json_object_get(doc, "tools");
    if (tools && !json_is_array(tools))
        return why_set(err, n, -1, "%s: tools: expected an array of {agent, tool, status}", path);
    size_t i;
    json_t *v;
    json_array_foreach(tools, i, v) {
        snprintf(where, sizeof where, "%s: tools[%zu]", path, i);
        if (!json_is_object(v))
            return why_set(err, n, -1, "%s: expected an object {agent, tool, status}", where);
        if (known_keys(v, where, tkeys, err, n) || strings(v, where, tkeys, 3, err, n))
            return -1;
        const char *st = json_string_value(json_object_get(v, "status"));
        int known = 0;
        for (int c = OC_OK; c >= OC_ERR_INTERNAL; c--)
            known |= !strcmp(st, oc_status_name(c));
        if (!known)
            return why_set(err, n, -1,
                           "%s.status: \"%s\" is not an oc_status name (OC_OK, "
                           "OC_ERR_INVALID, ... OC_ERR_INTERNAL)",
                           where, st);
    }
    return 0;
}

/* totals: name -> {min?, max?}, counts. */
static int validate_totals(const json_t *doc, const char *path, char *err, size_t n)
{
    static const char *const mkeys[] = {"min", "max", NULL};
    char where[256];
    const json_t *totals = json_object_get(doc, "totals");
    if (totals && !json_is_object(totals))
        return why_set(err, n, -1, "%s: totals: expected an object name -> {min?, max?}", path);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)totals, k, v) {
        snprintf(where, sizeof where, "%s: totals.%s", path, k);
        if (!json_is_object(v))
            return why_set(err, n, -1, "%s: expected an object {min?, max?}", where);
        if (known_keys(v, where, mkeys, err, n))
            return -1;
        for (int b = 0; mkeys[b]; b++) {
            const json_t *x = json_object_get(v, mkeys[b]);
            if (x && (!json_is_integer(x) || json_integer_value(x) < 0))
                return why_set(err, n, -1, "%s.%s: expected a count (an integer >= 0)", where,
                               mkeys[b]);
        }
    }
    return 0;
}

/* The story's shape, checked at load so a typo is an error naming the key
 * rather than a story that silently expects something else. */
static int validate(const json_t *doc, const char *path, char *err, size_t n)
{
    static const char *const keys[] = {"description", "timeoutMs",  "settleMs",
                                       "channels",    "files",      "tools",
                                       "totals",      "humansDone", NULL};
    if (known_keys(doc, path, keys, err, n))
        return -1;
    const json_t *t = json_object_get(doc, "timeoutMs"), *s = json_object_get(doc, "settleMs");
    if (t && (!json_is_integer(t) || json_integer_value(t) < 1 || json_integer_value(t) > 86400000))
        return why_set(err, n, -1, "%s: timeoutMs: expected milliseconds in 1..86400000", path);
    if (s && (!json_is_integer(s) || json_integer_value(s) < 0 || json_integer_value(s) > 600000))
        return why_set(err, n, -1, "%s: settleMs: expected milliseconds in 0..600000", path);
    const json_t *hd = json_object_get(doc, "humansDone");
    if (hd && !json_is_boolean(hd))
        return why_set(err, n, -1, "%s: humansDone: expected true or false", path);
    if (validate_channels(doc, path, err, n) || validate_files(doc, path, err, n) ||
        validate_tools(doc, path, err, n) || validate_totals(doc, path, err, n))
        return -1;
    return 0;
}

int ocgw_expect_load(const char *path, ocgw_expect *e, char *err, size_t n)
{
    memset(e, 0, sizeof *e);
    json_error_t je;
    e->doc = json_load_file(path, 0, &je);
    if (!e->doc || !json_is_object(e->doc)) {
        snprintf(err, n, "%s: not a readable JSON object (line %d: %s)", path, je.line, je.text);
        json_decref(e->doc);
        e->doc = NULL;
        return -1;
    }
    if (validate(e->doc, path, err, n) != 0) {
        ocgw_expect_free(e);
        return -1;
    }
    e->timeout_ms = json_integer_value(json_object_get(e->doc, "timeoutMs"));
    e->settle_ms = json_integer_value(json_object_get(e->doc, "settleMs"));
    if (e->timeout_ms <= 0)
        e->timeout_ms = 120000;
    if (!json_object_get(e->doc, "settleMs"))
        e->settle_ms = 1500;
    return 0;
}

void ocgw_expect_free(ocgw_expect *e)
{
    json_decref(e->doc);
    memset(e, 0, sizeof *e);
}

/* The whole history of a channel, oldest first, read with the token of
 * one of the agents that see it. 0, or -1 (REST failed: try again). */
static int fetch_all(ocgw *g, const char *channel_id, ocgw_msg **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    json_t *agents = ocgw_channel_agents(g, channel_id);
    json_t *ch = agents ? json_object_get(ocgw_state_obj(&g->st, "channels"), channel_id) : NULL;
    /* A channel the gateway does not serve (see check_channel) is read with
     * the token of the first agent this gateway runs. */
    const ocgw_agent *a = ch ? ocgw_chan_reader(&g->cfg, ch, 0) : NULL;
    for (size_t k = 0; !agents && !a && k < g->cfg.n_agents; k++)
        if (g->cfg.agents[k].local)
            a = &g->cfg.agents[k];
    if (!a)
        return -1;
    if (g->cfg.slack) {
        char bound[32];
        ocgw_slack_err e;
        int rc = ocgw_slack_poll(a->sc, channel_id, "0", out, n_out, bound, sizeof bound, &e);
        ocgw_rest(g, e.attempts);
        return rc == OC_OK ? 0 : -1;
    }
    char after[32] = "1"; /* before every message: Discord ids are far above 1 */
    size_t cap = 0;
    for (int pages = 0; pages < 50; pages++) {
        dg_discord_message *msgs = NULL;
        size_t n = 0;
        dg_discord_err e;
        int rc = dg_discord_get_messages(a->dc, channel_id, after, 100, &msgs, &n, &e);
        ocgw_rest(g, e.attempts);
        if (rc != OC_OK)
            return -1;
        for (size_t i = 0; i < n; i++) {
            if (dg_grow(out, &cap, *n_out, sizeof **out, 64)) {
                dg_discord_messages_free(msgs, n);
                return -1;
            }
            ocgw_msg_from_discord(g, &msgs[i], &(*out)[(*n_out)++]);
        }
        if (n)
            snprintf(after, sizeof after, "%s", msgs[n - 1].id);
        dg_discord_messages_free(msgs, n);
        if (n < 100)
            break;
    }
    return 0;
}

static int mentions_equal(ocgw *g, const json_t *want, const ocgw_msg *m, char *desc, size_t dn)
{
    size_t nw = json_array_size(want);
    size_t i;
    json_t *v;
    json_array_foreach(want, i, v) {
        const char *who = json_string_value(v);
        const char *uid = NULL;
        if (who && !strcmp(who, "moderator"))
            uid = g->cfg.moderator_user_id;
        else if (ocgw_agent_by_id(&g->cfg, who))
            uid = ocgw_agent_by_id(&g->cfg, who)->user_id;
        else if (ocgw_human_by_id(&g->cfg, who))
            uid = ocgw_human_by_id(&g->cfg, who)->user_id;
        else
            uid = who;
        int found = 0;
        for (size_t k = 0; uid && k < m->n_mentions; k++)
            found |= !strcmp(m->mentions[k], uid);
        if (!found) {
            snprintf(desc, dn, "does not mention %s", who ? who : "?");
            return 0;
        }
    }
    if (m->n_mentions != nw) {
        snprintf(desc, dn, "mentions %zu users, expected %zu", m->n_mentions, nw);
        return 0;
    }
    return 1;
}

static void describe(const json_t *want, char *buf, size_t n)
{
    char *j = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
    snprintf(buf, n, "%s", j ? j : "?");
    free(j);
}

static int check_channel(ocgw *g, const char *ref, const json_t *want, int verbose, char *why,
                         size_t wn)
{
    const char *id = ocgw_channel_ref(g, ref);
    if (!id)
        return why_set(why, wn, 0, "channel %s is not known yet", ref);
    /* A channel named by its id that the gateway does not serve (no agent
     * runs there: an archive index the moderator writes) is checked from
     * its history alone; a served one only once it is served. */
    if (id != ref && !ocgw_channel_agents(g, id))
        return why_set(why, wn, 0, "channel %s (%s) is not served yet", ref, id);
    ocgw_msg *msgs = NULL;
    size_t n = 0;
    if (fetch_all(g, id, &msgs, &n) != 0) {
        free(msgs);
        return why_set(why, wn, 0, "history of %s not readable right now", ref);
    }
    int rc = 1;
    size_t nw = json_array_size(want);
    if (verbose)
        ocgw_say(g, "  #%s: %zu messages, %zu expected", ocgw_chan_label(g, id), n, nw);
    for (size_t i = 0; i < n && rc == 1; i++) {
        char *line = ocgw_pretty(g, msgs[i].content, 70);
        if (i >= nw) {
            rc = why_set(why, wn, -1, "#%s: unexpected message %zu from %s: \"%s\"", ref, i + 1,
                         ocgw_who(g, msgs[i].author_id), line ? line : "");
        } else {
            json_t *w = json_array_get(want, i);
            json_t *copy = json_deep_copy(w);
            json_object_del(copy, "mentions");
            json_object_del(copy, "inThread");
            ocgw_match mt;
            char e[300], desc[300] = "";
            ocgw_match_parse(copy, "expect", &mt, e, sizeof e);
            json_decref(copy);
            int ok = ocgw_match_msg(g, &mt, &msgs[i], NULL);
            int in_thread = json_is_true(json_object_get(w, "inThread"));
            if (ok && g->cfg.slack && in_thread != (msgs[i].thread_id != NULL)) {
                ok = 0;
                snprintf(desc, sizeof desc, "%s",
                         in_thread ? "is not a thread reply" : "is a thread reply");
            }
            if (ok && json_object_get(w, "mentions"))
                ok = mentions_equal(g, json_object_get(w, "mentions"), &msgs[i], desc, sizeof desc);
            ocgw_match_free(&mt);
            if (!ok) {
                char d[300];
                describe(w, d, sizeof d);
                rc = why_set(why, wn, -1,
                             "#%s message %zu from %s \"%s\" is not the expected "
                             "%s%s%s",
                             ref, i + 1, ocgw_who(g, msgs[i].author_id), line ? line : "", d,
                             *desc ? ": " : "", desc);
            } else if (verbose) {
                ocgw_say(g, "    ok %2zu  %-9s %s%s", i + 1, ocgw_who(g, msgs[i].author_id),
                         msgs[i].thread_id && g->cfg.slack ? "(in thread) " : "", line ? line : "");
            }
        }
        free(line);
    }
    if (rc == 1 && n < nw) {
        char d[300];
        describe(json_array_get(want, n), d, sizeof d);
        rc = why_set(why, wn, 0, "#%s: waiting for message %zu %s", ref, n + 1, d);
    }
    for (size_t i = 0; i < n; i++)
        ocgw_msg_free(&msgs[i]);
    free(msgs);
    return rc;
}

static int check_files(ocgw *g, const json_t *files, int verbose, char *why, size_t wn)
{
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f) {
        const ocgw_agent *a =
            ocgw_agent_by_id(&g->cfg, json_string_value(json_object_get(f, "agent")));
        const char *rel = json_string_value(json_object_get(f, "path"));
        const char *want = json_string_value(json_object_get(f, "contains"));
        if (!a || !rel)
            return why_set(why, wn, -1, "files[%zu]: needs an agent of the config and a path", i);
        if (!a->local)
            continue; /* in the workspace of the gateway that runs the agent */
        char *path = dg_sprintf("%s/%s", a->workspace, rel);
        char *text = path ? ocgw_read_file(path, NULL) : NULL;
        int ok = text && (!want || strstr(text, want));
        if (verbose && ok)
            ocgw_say(g, "  file ok  %s", path);
        free(text);
        if (!ok) {
            int rc = why_set(why, wn, 0, "file %s %s", path ? path : rel,
                             text ? "lacks the expected text" : "does not exist yet");
            free(path);
            return rc;
        }
        free(path);
    }
    return 1;
}

static int check_tools_of(ocgw *g, const json_t *want, int verbose, char *why, size_t wn);

static int check_tools(ocgw *g, const json_t *want, int verbose, char *why, size_t wn)
{
    /* Only this gateway's agents (gateway.runOnly): the others' tool calls
     * are in another gateway's journal; what they caused is in Discord. */
    json_t *mine = json_array();
    size_t i;
    json_t *h;
    json_array_foreach(want, i, h) {
        const ocgw_agent *a =
            ocgw_agent_by_id(&g->cfg, json_string_value(json_object_get(h, "agent")));
        if (!a || a->local)
            json_array_append(mine, h);
    }
    int rc = check_tools_of(g, mine, verbose, why, wn);
    json_decref(mine);
    return rc;
}

static int check_tools_of(ocgw *g, const json_t *want, int verbose, char *why, size_t wn)
{
    json_t *have = json_object_get(g->st.doc, "tools");
    size_t k = 0, i;
    json_t *h;
    json_array_foreach(have, i, h) {
        const char *st = json_string_value(json_object_get(h, "status"));
        if (st && !strcmp(st, "OC_ERR_IO"))
            continue;
        json_t *w = json_array_get(want, k);
        const char *ha = json_string_value(json_object_get(h, "agent"));
        const char *ht = json_string_value(json_object_get(h, "tool"));
        if (!w)
            return why_set(why, wn, -1, "unexpected tool call %s by %s (%s)", ht, ha, st);
        const char *wa = json_string_value(json_object_get(w, "agent"));
        const char *wt = json_string_value(json_object_get(w, "tool"));
        const char *ws = json_string_value(json_object_get(w, "status"));
        if (!wa || !wt || !ws || strcmp(wa, ha) || strcmp(wt, ht) || strcmp(ws, st))
            return why_set(why, wn, -1, "tool call %zu was %s by %s -> %s; expected %s by %s -> %s",
                           k + 1, ht, ha, st, wt ? wt : "?", wa ? wa : "?", ws ? ws : "?");
        if (verbose)
            ocgw_say(g, "  tool ok  %s by %s -> %s", ht, ha, st);
        k++;
    }
    if (k < json_array_size(want))
        return why_set(why, wn, 0, "waiting for tool call %zu (%s)", k + 1,
                       json_string_value(json_object_get(json_array_get(want, k), "tool")));
    return 1;
}

int ocgw_expect_check(ocgw *g, const ocgw_expect *e, int verbose, char *why, size_t wn)
{
    int result = 1;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(e->doc, "channels"), k, v) {
        int rc = check_channel(g, k, v, verbose, why, wn);
        if (rc < 0)
            return rc;
        if (rc == 0 && result == 1) {
            result = 0;
            if (!verbose)
                return 0;
        }
    }
    char tmp[512];
    int rc =
        check_tools(g, json_object_get(e->doc, "tools"), verbose && result == 1, tmp, sizeof tmp);
    if (rc < 0)
        return why_set(why, wn, -1, "%s", tmp);
    if (rc == 0 && result == 1) {
        result = 0;
        why_set(why, wn, 0, "%s", tmp);
    }
    rc = check_files(g, json_object_get(e->doc, "files"), verbose && result == 1, tmp, sizeof tmp);
    if (rc < 0)
        return why_set(why, wn, -1, "%s", tmp);
    if (rc == 0 && result == 1) {
        result = 0;
        why_set(why, wn, 0, "%s", tmp);
    }
    json_object_foreach(json_object_get(e->doc, "totals"), k, v) {
        long have = ocgw_state_total(&g->st, k);
        json_t *min = json_object_get(v, "min"), *max = json_object_get(v, "max");
        if (max && have > json_integer_value(max))
            return why_set(why, wn, -1, "total %s is %ld, above the maximum %lld", k, have,
                           (long long)json_integer_value(max));
        if (min && have < json_integer_value(min) && result == 1) {
            result = 0;
            why_set(why, wn, 0, "total %s is %ld, below the minimum %lld", k, have,
                    (long long)json_integer_value(min));
        }
    }
    if (json_is_true(json_object_get(e->doc, "humansDone")) && !ocgw_humans_done(g) &&
        result == 1) {
        result = 0;
        why_set(why, wn, 0, "the scripted humans have messages left to post");
    }
    return result;
}
