/*
 * ocgw_scenario.c -- the scripted model: scenario files, matching a message
 * against a step, and {{var}} substitution.
 *
 * A scenario file (one per agent):
 *   {"description": "...",
 *    "steps": [
 *      {"name": "open the discussion",
 *       "when": {"channel": "work", "from": "human", "contains": ["plan"],
 *                "mentionsMe": true},
 *       "repeat": false,
 *       "do": [
 *         {"tool": "discord_channel_create", "params": {...},
 *          "bind": {"discussion": "channelId"}, "retries": 2},
 *         {"write": {"path": "notes/x.md", "content": "..."}},
 *         {"reply": "text"}  or  {"silent": true}
 *       ]}]}
 * A real run uses the first step not used yet (or `repeat`) whose `when`
 * holds; no such step: the model answers NO_REPLY.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocgw.h"
#include "buf.h"
#include "json_keys.h"

static int fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t n, const char *fmt, ...)
{
    if (err && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int only_keys(const json_t *o, const char *where, const char *const *keys, char *err,
                     size_t n)
{
    const char *k = dg_json_unknown_key(o, keys);
    return k ? fail(err, n, "%s.%s: unknown key", where, k) : 0;
}

static char *opt_str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? strdup(s) : NULL;
}

int ocgw_match_parse(const json_t *j, const char *what, ocgw_match *m, char *err, size_t n)
{
    static const char *const keys[] = {"channel", "from", "contains", "mentionsMe", NULL};
    memset(m, 0, sizeof *m);
    if (!json_is_object(j))
        return fail(err, n, "%s: expected an object {channel?, from?, contains?, mentionsMe?}",
                    what);
    if (only_keys(j, what, keys, err, n))
        return -1;
    json_t *ch = json_object_get(j, "channel"), *fr = json_object_get(j, "from");
    if ((ch && !json_is_string(ch)) || (fr && !json_is_string(fr)))
        return fail(err, n, "%s: channel and from must be strings", what);
    m->channel = opt_str(j, "channel");
    m->from = opt_str(j, "from");
    json_t *c = json_object_get(j, "contains");
    if (json_is_string(c)) {
        m->contains = calloc(1, sizeof *m->contains);
        if (m->contains)
            m->contains[m->n_contains++] = strdup(json_string_value(c));
    } else if (json_is_array(c)) {
        m->contains = calloc(json_array_size(c) + 1, sizeof *m->contains);
        size_t i;
        json_t *v;
        json_array_foreach(c, i, v) {
            if (!json_is_string(v)) {
                ocgw_match_free(m);
                return fail(err, n, "%s.contains[%zu]: expected a string", what, i);
            }
            m->contains[m->n_contains++] = strdup(json_string_value(v));
        }
    } else if (c) {
        ocgw_match_free(m);
        return fail(err, n, "%s.contains: expected a string or an array of strings", what);
    }
    json_t *mm = json_object_get(j, "mentionsMe");
    if (mm && !json_is_boolean(mm)) {
        ocgw_match_free(m);
        return fail(err, n, "%s.mentionsMe: expected true or false", what);
    }
    m->mentions_me = json_is_true(mm);
    return 0;
}

void ocgw_match_free(ocgw_match *m)
{
    if (!m)
        return;
    free(m->channel);
    free(m->from);
    for (size_t i = 0; i < m->n_contains; i++)
        free(m->contains[i]);
    free(m->contains);
    memset(m, 0, sizeof *m);
}

static int parse_action(const json_t *a, const char *where, ocgw_action *out, char *err, size_t n)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(a))
        return fail(err, n,
                    "%s: expected an object {reply} | {tool, params} | {write} | "
                    "{silent}",
                    where);
    if (json_object_get(a, "reply")) {
        static const char *const k[] = {"reply", NULL};
        if (only_keys(a, where, k, err, n))
            return -1;
        if (!json_is_string(json_object_get(a, "reply")))
            return fail(err, n, "%s.reply: expected a string", where);
        out->kind = OCGW_ACT_REPLY;
        out->text = opt_str(a, "reply");
    } else if (json_object_get(a, "tool")) {
        static const char *const k[] = {"tool", "params", "bind", "retries", NULL};
        if (only_keys(a, where, k, err, n))
            return -1;
        json_t *p = json_object_get(a, "params"), *b = json_object_get(a, "bind");
        json_t *r = json_object_get(a, "retries");
        if (!json_is_string(json_object_get(a, "tool")))
            return fail(err, n, "%s.tool: expected the tool name", where);
        if (p && !json_is_object(p))
            return fail(err, n, "%s.params: expected an object", where);
        if (b && !json_is_object(b))
            return fail(err, n, "%s.bind: expected {\"var\": \"detailsField\"}", where);
        const char *bk;
        json_t *bv;
        json_object_foreach(b, bk, bv)
            if (!json_is_string(bv))
                return fail(err, n, "%s.bind.%s: expected the name of a details field", where, bk);
        if (r && (!json_is_integer(r) || json_integer_value(r) < 0 || json_integer_value(r) > 10))
            return fail(err, n, "%s.retries: expected an integer 0..10", where);
        out->kind = OCGW_ACT_TOOL;
        out->tool = opt_str(a, "tool");
        out->params = p ? json_deep_copy(p) : json_object();
        out->bind = b ? json_deep_copy(b) : NULL;
        out->retries = r ? (int)json_integer_value(r) : 0;
    } else if (json_object_get(a, "write")) {
        static const char *const k[] = {"write", NULL};
        static const char *const wk[] = {"path", "content", NULL};
        if (only_keys(a, where, k, err, n))
            return -1;
        json_t *w = json_object_get(a, "write");
        char ww[512];
        snprintf(ww, sizeof ww, "%s.write", where);
        if (!json_is_object(w) || only_keys(w, ww, wk, err, n) ||
            !json_is_string(json_object_get(w, "path")) ||
            !json_is_string(json_object_get(w, "content")))
            return fail(err, n, "%s: expected {\"path\": relative path, \"content\": text}", ww);
        const char *path = json_string_value(json_object_get(w, "path"));
        if (!*path || path[0] == '/' || strstr(path, ".."))
            return fail(err, n, "%s.path: \"%s\" must be relative to the workspace, without ..", ww,
                        path);
        out->kind = OCGW_ACT_WRITE;
        out->path = strdup(path);
        out->text = strdup(json_string_value(json_object_get(w, "content")));
    } else if (json_object_get(a, "silent")) {
        static const char *const k[] = {"silent", NULL};
        if (only_keys(a, where, k, err, n))
            return -1;
        if (!json_is_true(json_object_get(a, "silent")))
            return fail(err, n, "%s.silent: expected true", where);
        out->kind = OCGW_ACT_SILENT;
    } else {
        return fail(err, n,
                    "%s: an action is one of {reply}, {tool, params, bind?, retries?}, "
                    "{write: {path, content}}, {silent: true}",
                    where);
    }
    return 0;
}

static void free_action(ocgw_action *a)
{
    free(a->text);
    free(a->path);
    free(a->tool);
    json_decref(a->params);
    json_decref(a->bind);
}

int ocgw_scenario_load(const char *path, ocgw_scenario *s, char *err, size_t n)
{
    memset(s, 0, sizeof *s);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root)
        return fail(err, n, "%s: not readable JSON (line %d: %s)", path, je.line, je.text);
    static const char *const keys[] = {"description", "steps", NULL};
    static const char *const skeys[] = {"name", "when", "do", "repeat", NULL};
    int rc = 0;
    json_t *steps = json_object_get(root, "steps");
    if (!json_is_object(root) || only_keys(root, path, keys, err, n) || !json_is_array(steps)) {
        if (json_is_object(root) && !json_is_array(steps))
            fail(err, n, "%s: \"steps\" must be an array", path);
        else if (!json_is_object(root))
            fail(err, n, "%s: a scenario is an object {description?, steps}", path);
        json_decref(root);
        return -1;
    }
    s->steps = calloc(json_array_size(steps) + 1, sizeof *s->steps);
    size_t i;
    json_t *st;
    json_array_foreach(steps, i, st) {
        char where[256];
        snprintf(where, sizeof where, "%s: steps[%zu]", path, i);
        ocgw_step *sp = &s->steps[s->n_steps++];
        if (!json_is_object(st) || only_keys(st, where, skeys, err, n)) {
            if (!json_is_object(st))
                fail(err, n, "%s: expected an object {name?, when?, do, repeat?}", where);
            rc = -1;
            break;
        }
        sp->name = opt_str(st, "name");
        json_t *rep = json_object_get(st, "repeat");
        if (rep && !json_is_boolean(rep)) {
            rc = fail(err, n, "%s.repeat: expected true or false", where);
            break;
        }
        sp->repeat = json_is_true(rep);
        json_t *w = json_object_get(st, "when");
        char ww[512];
        snprintf(ww, sizeof ww, "%s.when", where);
        if (w && ocgw_match_parse(w, ww, &sp->when, err, n)) {
            rc = -1;
            break;
        }
        json_t *d = json_object_get(st, "do");
        if (!json_is_array(d) || json_array_size(d) == 0) {
            rc = fail(err, n, "%s.do: expected a non-empty array of actions", where);
            break;
        }
        sp->acts = calloc(json_array_size(d), sizeof *sp->acts);
        size_t k;
        json_t *a;
        json_array_foreach(d, k, a) {
            char aw[400];
            snprintf(aw, sizeof aw, "%s.do[%zu]", where, k);
            if (parse_action(a, aw, &sp->acts[sp->n_acts], err, n)) {
                rc = -1;
                break;
            }
            sp->n_acts++;
        }
        if (rc)
            break;
    }
    json_decref(root);
    if (rc)
        ocgw_scenario_free(s);
    return rc;
}

void ocgw_scenario_free(ocgw_scenario *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_steps; i++) {
        free(s->steps[i].name);
        ocgw_match_free(&s->steps[i].when);
        for (size_t k = 0; k < s->steps[i].n_acts; k++)
            free_action(&s->steps[i].acts[k]);
        free(s->steps[i].acts);
    }
    free(s->steps);
    memset(s, 0, sizeof *s);
}

/* ---- matching -------------------------------------------------------------------------------- */

const char *ocgw_channel_ref(ocgw *g, const char *ref)
{
    if (!ref || !*ref)
        return NULL;
    if (ref[0] == '@')
        return ocgw_state_var(&g->st, ref + 1);
    const ocgw_chan_cfg *cc = ocgw_chan_cfg_by_alias(&g->cfg, ref);
    if (cc)
        return cc->id;
    return ocgw_chan_id_valid(g, ref) ? ref : NULL;
}

static int from_matches(ocgw *g, const char *from, const ocgw_msg *m)
{
    const char *a = m->author_id;
    if (!strcmp(from, "moderator"))
        return g->cfg.moderator_user_id && !strcmp(a, g->cfg.moderator_user_id);
    if (!strcmp(from, "agent"))
        return ocgw_agent_by_user(&g->cfg, a) != NULL;
    if (!strcmp(from, "human"))
        return !ocgw_agent_by_user(&g->cfg, a) && !m->author_bot &&
               !(g->cfg.moderator_user_id && !strcmp(a, g->cfg.moderator_user_id));
    const ocgw_agent *ag = ocgw_agent_by_id(&g->cfg, from);
    if (ag)
        return !strcmp(ag->user_id, a);
    const ocgw_human *hu = ocgw_human_by_id(&g->cfg, from);
    if (hu)
        return !strcmp(hu->user_id, a);
    return !strcmp(from, a);
}

int ocgw_match_msg(ocgw *g, const ocgw_match *w, const ocgw_msg *m, const ocgw_agent *agent)
{
    if (w->channel && strcmp(w->channel, "*")) {
        const char *id = ocgw_channel_ref(g, w->channel);
        const char *where = m->thread_id ? m->thread_id : m->channel_id;
        if (!id || (strcmp(id, where) && strcmp(id, m->channel_id)))
            return 0;
    }
    if (w->from && !from_matches(g, w->from, m))
        return 0;
    for (size_t i = 0; i < w->n_contains; i++) {
        char e[200];
        char *needle = ocgw_subst(g, w->contains[i], NULL, e, sizeof e);
        int ok = needle && m->content && strstr(m->content, needle);
        free(needle);
        if (!ok)
            return 0;
    }
    if (w->mentions_me) {
        int found = 0;
        for (size_t i = 0; agent && i < m->n_mentions; i++)
            found |= !strcmp(m->mentions[i], agent->user_id);
        if (!found)
            return 0;
    }
    return 1;
}

/* ---- {{var}} substitution ----------------------------------------------------------------------- */

static const char *lookup(ocgw *g, const char *name, const json_t *run_vars)
{
    const char *v = json_string_value(json_object_get(run_vars, name));
    if (v)
        return v;
    if (!strcmp(name, "moderator"))
        return g->cfg.moderator_user_id;
    if (!strncmp(name, "user:", 5)) {
        const ocgw_agent *a = ocgw_agent_by_id(&g->cfg, name + 5);
        if (a)
            return a->user_id;
        const ocgw_human *h = ocgw_human_by_id(&g->cfg, name + 5);
        return h ? h->user_id : NULL;
    }
    if (!strncmp(name, "channel:", 8)) {
        const ocgw_chan_cfg *c = ocgw_chan_cfg_by_alias(&g->cfg, name + 8);
        return c ? c->id : NULL;
    }
    if (!strcmp(name, "guild"))
        return g->cfg.guild_id;
    return ocgw_state_var(&g->st, name);
}

char *ocgw_subst(ocgw *g, const char *text, const json_t *run_vars, char *err, size_t n)
{
    dg_buf out = {0};
    const char *p = text;
    while (*p) {
        const char *add = p;
        size_t addn = 1;
        if (p[0] == '{' && p[1] == '{') {
            const char *e = strstr(p + 2, "}}");
            char name[128];
            size_t nl = e ? (size_t)(e - p - 2) : 0;
            if (!e || nl == 0 || nl >= sizeof name) {
                fail(err, n, "\"{{\" without a name and a closing \"}}\" in \"%.40s\"", p);
                dg_buf_free(&out);
                return NULL;
            }
            memcpy(name, p + 2, nl);
            name[nl] = 0;
            add = lookup(g, name, run_vars);
            if (!add) {
                fail(err, n,
                     "{{%s}} is not known here (known: channel, message.id, agent, "
                     "moderator, guild, user:<id>, channel:<alias>, result.<field>, "
                     "lastError, and variables bound by a tool)",
                     name);
                dg_buf_free(&out);
                return NULL;
            }
            addn = strlen(add);
            p = e + 2;
        } else {
            p++;
        }
        if (dg_buf_add(&out, add, addn)) {
            dg_buf_free(&out);
            return NULL;
        }
    }
    return out.s ? out.s : strdup("");
}
