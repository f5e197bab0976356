/*
 * dirigent-ctl -- the operator's read-only view of a dirigent store:
 * which scopes are managed and whose turn it is, why an agent
 * did not speak (the scope's last turn transitions with their causes),
 * which discussions exist, and what the outbox still owes.
 *
 *   dirigent-ctl --db PATH [--json] scopes
 *   dirigent-ctl --db PATH [--json] why CHANNEL [AGENT]
 *   dirigent-ctl --db PATH [--json] discussions [--all]
 *   dirigent-ctl --db PATH [--json] show DISCUSSION   (id or channel id)
 *   dirigent-ctl --db PATH [--json] outbox
 *   dirigent-ctl --db PATH [--json] cost [--since WHEN] [--channel ID]
 *   dirigent-ctl --store-url URL ...       (a PostgreSQL store; or env
 *                                           DIRIGENT_STORE_URL)
 *
 * Safe on a live database: it opens the file read-only and reads in
 * deferred transactions (a snapshot; the plugin's writer is never blocked
 * under WAL); on PostgreSQL the session is default_transaction_read_only
 * and reads in one REPEATABLE READ READ ONLY transaction, without the
 * writers' lock. The url's password is never printed. It has no plugin config, so every member of a turn order
 * counts and turn.timeoutSec is not applied: the state is shown as stored.
 * Exit status: 0, 1 for a refused database or a store error, 2 for usage.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "snowflake.h"
#include "config.h"
#include "ctl_cost.h"
#include "ctl_doctor.h"
#include "ctl_serve.h"
#include "discuss_status.h"
#include "openclaw/plugin.h"
#include "store.h"
#include "store_discuss.h"
#include "store_discuss_index.h"
#include "store_operator.h"
#include "ctl_text.h"
#include "store_outbox.h"
#include "store_turns.h"
#include "store_transitions.h"
#include "turn_view.h"

#define LIST_MAX 1000

static const char USAGE[] =
    "usage: dirigent-ctl --db PATH [--json] COMMAND\n"
    "       dirigent-ctl --store-url postgresql://... [--json] COMMAND\n"
    "       dirigent-ctl --openclaw-config FILE [--json] COMMAND   (the store that\n"
    "       OpenClaw config's plugins.entries.dirigent.config names; - : stdin)\n"
    "       (or env DIRIGENT_STORE_URL instead of --db / --store-url)\n"
    "       dirigent-ctl doctor --openclaw-config FILE [--json]\n"
    "       dirigent-ctl --version\n"
    "  status                 the store in one line each: scopes by state, active\n"
    "                         discussions, the outbox\n"
    "  scopes                 every managed scope: order, speaker or dormant/resting,\n"
    "                         passed, agent messages\n"
    "  why CHANNEL [AGENT]    the last turn transitions of the channel's scopes and their\n"
    "                         causes; with AGENT, what that agent gets now\n"
    "                         (--no-claim-hooks: the host has no claim hooks, so\n"
    "                         non-speakers get the no-reply model, not a claim)\n"
    "  discussions [--all]    active discussions (--all: closed ones too), newest first\n"
    "  show DISCUSSION        one discussion by id or channel id\n"
    "  outbox                 pending and failed moderator messages, oldest pending age\n"
    "  cost [--since WHEN] [--channel ID]   the agents' runs per channel and UTC day:\n"
    "                         runs, model calls, turns granted, runs claimed or swapped\n"
    "                         (model calls avoided), tokens, and money when the plugin\n"
    "                         config (--openclaw-config) prices every model seen.\n"
    "                         WHEN: an ISO date or time in UTC (2026-12-01,\n"
    "                         2026-12-01T09:30:00Z) or a span back from now (24h, 7d);\n"
    "                         without it every run the store keeps (outbox.retentionSec)\n"
    "  serve [--listen HOST:PORT] [--token T]   a read-only status page over HTTP\n"
    "                         (see `dirigent-ctl serve --help`)\n"
    "  doctor                 checks an OpenClaw config before the first start (see\n"
    "                         `dirigent-ctl doctor --help`)\n"
    "CHANNEL is a channel id: a Discord snowflake (1-20 decimal digits) or a Slack id\n"
    "(C... / G...), not a channel name.\n"
    "Reads the database only (safe while the plugin runs).\n";

typedef struct ctl {
    dg_store *st;
    int json;
    int claim_hooks;   /* the host claims non-speakers' runs (OpenClaw 2026.9, ocgw) */
    const char *where; /* the store for messages: the file, or PostgreSQL without password */
    int64_t now;
    dg_config cfg; /* --openclaw-config's plugin config (prices), when have_cfg */
    int have_cfg;
} ctl;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *iso(int64_t ms, char *buf, size_t len)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    if (ms <= 0 || !gmtime_r(&s, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, len, "-");
    return buf;
}

static void print_json(json_t *j)
{
    char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    puts(s ? s : "null");
    free(s);
    json_decref(j);
}

static int store_err(const ctl *c, const char *what, int rc)
{
    fprintf(stderr,
            "dirigent-ctl: %s failed (%s: %s); the database may be busy or damaged, "
            "try again\n",
            what, oc_status_name(rc), dg_store_errmsg(c->st));
    return 1;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static void scope_name(const dg_scope *sc, char *buf, size_t len)
{
    if (sc->kind == DG_SCOPE_THREAD)
        snprintf(buf, len, "thread:%s", sc->root);
    else
        snprintf(buf, len, "conversation");
}

/* The passed members of v as a comma-separated list into buf. */
static const char *passed_of(const dg_turn_view *v, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < v->n_members && i < DG_TURN_MAX_MEMBERS; i++)
        if (v->state.silent & ((uint64_t)1 << i)) {
            size_t used = strlen(buf);
            snprintf(buf + used, len - used, "%s%s", used ? "," : "", v->members[i]);
        }
    return buf;
}

static json_t *view_json(const dg_scope *sc, const dg_turn_view *v)
{
    char name[128], passed[512], when[32];
    scope_name(sc, name, sizeof name);
    json_t *order = json_array();
    for (size_t i = 0; i < v->n_members; i++)
        json_array_append_new(order, json_string(v->members[i]));
    return json_pack("{s:s,s:s,s:s,s:o,s:o,s:s,s:I,s:s}", "channelId", dg_scope_channel(sc),
                     "scope", name, "state", v->condition, "order", order, "speaker",
                     str_or_null(dg_turn_view_member(v, v->speaker)), "passed",
                     passed_of(v, passed, sizeof passed), "agentMessages",
                     (json_int_t)v->state.agent_msgs, "lastChange",
                     iso(v->state.last_change_ms, when, sizeof when));
}

static int cmd_scopes(ctl *c)
{
    dg_scope *v = NULL;
    size_t n = 0;
    int rc = dg_store_turns_scopes(c->st, 0, &v, &n);
    if (rc != OC_OK)
        return store_err(c, "reading the scopes", rc);
    json_t *arr = json_array();
    if (!c->json)
        printf("%-20s %-24s %-9s %-14s %-24s %6s  %s\n", "CHANNEL", "SCOPE", "STATE", "SPEAKER",
               "PASSED", "AGMSG", "LAST CHANGE");
    for (size_t i = 0; i < n && rc == OC_OK; i++) {
        dg_turn_view tv;
        if ((rc = dg_turn_view_load(c->st, NULL, &v[i], c->now, &tv)) != OC_OK)
            break;
        dg_ctl_text_fix_view(&tv);
        if (c->json) {
            json_array_append_new(arr, view_json(&v[i], &tv));
        } else {
            char name[128], passed[512], when[32];
            scope_name(&v[i], name, sizeof name);
            const char *sp = dg_turn_view_member(&tv, tv.speaker);
            printf("%-20s %-24s %-9s %-14s %-24s %6lld  %s\n", dg_scope_channel(&v[i]), name,
                   tv.condition, sp ? sp : "-",
                   *passed_of(&tv, passed, sizeof passed) ? passed : "-",
                   (long long)tv.state.agent_msgs, iso(tv.state.last_change_ms, when, sizeof when));
        }
        dg_turn_view_clear(&tv);
    }
    free(v);
    if (rc != OC_OK) {
        json_decref(arr);
        return store_err(c, "reading a scope", rc);
    }
    if (c->json)
        print_json(arr);
    else
        json_decref(arr);
    return 0;
}

static int cmd_why(ctl *c, const char *channel, const char *agent)
{
    dg_transition *v = NULL;
    size_t n = 0;
    int rc = dg_store_transitions_list(c->st, channel, NULL, DG_TRANSITIONS_KEEP, &v, &n);
    if (rc != OC_OK)
        return store_err(c, "reading the transitions", rc);
    /* What the agent gets now: the channel's conversation scope as stored. */
    dg_scope sc;
    dg_turn_view tv;
    memset(&tv, 0, sizeof tv);
    if (dg_scope_conversation(channel, &sc) != OC_OK ||
        (rc = dg_turn_view_load(c->st, NULL, &sc, c->now, &tv)) != OC_OK) {
        dg_transitions_free(v, n);
        return rc ? store_err(c, "reading the scope", rc)
                  : (fprintf(stderr, "dirigent-ctl: "
                                     "CHANNEL must be a channel id\n"),
                     2);
    }
    dg_ctl_text_fix_transitions(v, n);
    dg_ctl_text_fix_view(&tv);
    const char *sp = dg_turn_view_member(&tv, tv.speaker);
    int member = 0;
    for (size_t i = 0; agent && i < tv.n_members; i++)
        member |= strcmp(tv.members[i], agent) == 0;
    /* What the agent's next run gets, short (JSON "gets") and as a sentence. */
    const char *silenced = c->claim_hooks ? "claimed" : "the no-reply model";
    const char *gets = !member                        ? "not managed"
                       : tv.mode == DG_MODE_CLOSED    ? silenced
                       : sp && strcmp(sp, agent) == 0 ? "a real model run"
                                                      : silenced;
    const char *because =
        !member                        ? "it is not in this channel's turn order (it is not one of "
                                         "the plugin's configured agents, or it has not been seen "
                                         "in this channel yet), so its runs go on as usual"
        : tv.mode == DG_MODE_CLOSED    ? "the discussion channel is closed"
        : sp && strcmp(sp, agent) == 0 ? "it holds the turn"
        : !strcmp(tv.condition, "held")
            ? "a budget of this conversation is reached (`!dirigent resume` lifts it)"
            : "it does not hold the turn";
    char now_text[512] = "";
    if (agent && !member)
        snprintf(now_text, sizeof now_text, "%s is not managed here: %s", agent, because);
    else if (agent && !strcmp(gets, "claimed"))
        snprintf(now_text, sizeof now_text, "%s's runs are claimed (no model call): %s", agent,
                 because);
    else if (agent)
        snprintf(now_text, sizeof now_text, "%s gets %s: %s", agent, gets, because);
    if (c->json) {
        json_t *arr = json_array();
        char when[32];
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:o,s:o,s:s,s:s,s:I}", "at",
                                                 iso(v[i].at_ms, when, sizeof when), "scope",
                                                 v[i].scope, "cause", v[i].cause, "speakerBefore",
                                                 str_or_null(v[i].speaker_before), "speakerAfter",
                                                 str_or_null(v[i].speaker_after), "state",
                                                 v[i].state, "passed", v[i].passed, "agentMessages",
                                                 (json_int_t)v[i].agent_msgs));
        json_t *o = json_pack("{s:s,s:o,s:o}", "channelId", channel, "transitions", arr, "now",
                              view_json(&sc, &tv));
        if (agent)
            json_object_set_new(o, "agent",
                                json_pack("{s:s,s:s,s:s,s:b,s:s}", "id", agent, "gets", gets,
                                          "because", because, "inOrder", member, "text", now_text));
        print_json(o);
    } else {
        printf("channel %s, newest first (at most %d kept per scope):\n", channel,
               DG_TRANSITIONS_KEEP);
        if (!n)
            printf("  no turn transitions recorded\n");
        for (size_t i = 0; i < n; i++) {
            char when[32];
            printf("  %s %-20s %s: %s -> %s (%s%s%s, %lld agent msgs)\n",
                   iso(v[i].at_ms, when, sizeof when), v[i].scope, v[i].cause,
                   v[i].speaker_before ? v[i].speaker_before : "nobody",
                   v[i].speaker_after ? v[i].speaker_after : "nobody", v[i].state,
                   *v[i].passed ? ", passed " : "", v[i].passed, (long long)v[i].agent_msgs);
        }
        printf("now (conversation scope): %s, speaker %s\n", tv.condition, sp ? sp : "none");
        if (agent)
            printf("%s\n", now_text);
    }
    dg_turn_view_clear(&tv);
    dg_transitions_free(v, n);
    return 0;
}

static int cmd_status(ctl *c)
{
    dg_scope *v = NULL;
    size_t n = 0, speaking = 0, dormant = 0, resting = 0, closed = 0;
    int rc = dg_store_turns_scopes(c->st, 0, &v, &n);
    if (rc != OC_OK)
        return store_err(c, "reading the scopes", rc);
    for (size_t i = 0; i < n && rc == OC_OK; i++) {
        dg_turn_view tv;
        if ((rc = dg_turn_view_load(c->st, NULL, &v[i], c->now, &tv)) != OC_OK)
            break;
        const char *k = tv.condition;
        speaking += !strcmp(k, "speaking");
        dormant += !strcmp(k, "dormant");
        resting += !strcmp(k, "resting");
        closed += !strcmp(k, "closed");
        dg_turn_view_clear(&tv);
    }
    free(v);
    if (rc != OC_OK)
        return store_err(c, "reading a scope", rc);
    char **ch = NULL;
    size_t nd = 0;
    int more = 0;
    if ((rc = dg_store_discussion_list(c->st, NULL, 1, 0, LIST_MAX, &ch, &nd, &more)) != OC_OK)
        return store_err(c, "listing the discussions", rc);
    for (size_t i = 0; i < nd; i++)
        free(ch[i]);
    free(ch);
    dg_outbox_summary sum;
    if ((rc = dg_store_outbox_summary(c->st, &sum)) != OC_OK)
        return store_err(c, "reading the outbox", rc);
    int64_t age = sum.oldest_pending_ms ? (c->now - sum.oldest_pending_ms) / 1000 : 0;
    if (c->json) {
        print_json(json_pack("{s:s,s:i,s:{s:I,s:I,s:I,s:I,s:I},s:I,s:b,s:{s:i,s:i,s:i,s:o}}",
                             "store", c->where, "schemaVersion", dg_store_schema_version(),
                             "scopes", "total", (json_int_t)n, "speaking", (json_int_t)speaking,
                             "dormant", (json_int_t)dormant, "resting", (json_int_t)resting,
                             "closed", (json_int_t)closed, "activeDiscussions", (json_int_t)nd,
                             "moreDiscussions", more, "outbox", "pending", (int)sum.pending, "sent",
                             (int)sum.sent, "failed", (int)sum.failed, "oldestPendingAgeSec",
                             sum.pending ? json_integer(age) : json_null()));
        return 0;
    }
    printf("store        %s\n", c->where);
    printf("scopes       %zu (speaking %zu, dormant %zu, resting %zu, closed %zu)\n", n, speaking,
           dormant, resting, closed);
    printf("discussions  %zu%s active\n", nd, more ? "+" : "");
    printf("outbox       pending %ld, sent %ld, failed %ld", sum.pending, sum.sent, sum.failed);
    if (sum.pending)
        printf(", oldest pending %llds old", (long long)age);
    printf("\n");
    return 0;
}

static json_t *discussion_json(const dg_discussion_info *i)
{
    const dg_discussion *d = &i->d;
    char a[32], b[32];
    json_t *parts = json_array();
    for (size_t k = 0; k < d->n_participants; k++)
        json_array_append_new(parts, json_string(d->participants[k]));
    return json_pack(
        "{s:I,s:s,s:o,s:s,s:s,s:o,s:s,s:s,s:s,s:o,s:s,s:o}", "discussionId", (json_int_t)d->id,
        "channelId", d->discussion_channel_id, "name", str_or_null(i->channel_name), "status",
        d->status == DG_DISCUSSION_CLOSED ? d->end_status : "active", "initiator",
        d->initiator_agent_id, "participants", parts, "originChannelId", d->origin_channel_id,
        "createdAt", iso(d->created_at_ms, a, sizeof a), "closedAt",
        iso(d->completed_at_ms, b, sizeof b), "summaryPath", str_or_null(d->summary_path), "turn",
        i->turn.condition, "speaker", str_or_null(dg_turn_view_member(&i->turn, i->turn.speaker)));
}

static int cmd_discussions(ctl *c, int all)
{
    char **ch = NULL;
    size_t n = 0;
    int more = 0;
    int rc = dg_store_discussion_list(c->st, NULL, !all, 0, LIST_MAX, &ch, &n, &more);
    if (rc != OC_OK)
        return store_err(c, "listing the discussions", rc);
    json_t *arr = json_array();
    if (!c->json)
        printf("%-6s %-20s %-24s %-16s %-14s %-20s %s\n", "ID", "CHANNEL", "NAME", "STATUS",
               "INITIATOR", "CREATED", "SUMMARY");
    for (size_t i = 0; i < n; i++) {
        dg_discussion_info info;
        if (rc == OC_OK &&
            (rc = dg_discussion_info_load_locked(c->st, NULL, ch[i], c->now, &info)) == OC_OK) {
            dg_ctl_text_fix_discussion(&info);
            if (c->json) {
                json_array_append_new(arr, discussion_json(&info));
            } else {
                char when[32];
                const dg_discussion *d = &info.d;
                printf("%-6lld %-20s %-24s %-16s %-14s %-20s %s\n", (long long)d->id,
                       d->discussion_channel_id, info.channel_name ? info.channel_name : "-",
                       d->status == DG_DISCUSSION_CLOSED ? d->end_status : "active",
                       d->initiator_agent_id, iso(d->created_at_ms, when, sizeof when),
                       d->summary_path ? d->summary_path : "-");
            }
            dg_discussion_info_clear(&info);
        }
        free(ch[i]);
    }
    free(ch);
    if (rc != OC_OK) {
        json_decref(arr);
        return store_err(c, "reading a discussion", rc);
    }
    if (c->json)
        print_json(arr);
    else {
        json_decref(arr);
        if (more)
            printf("(only the newest %d are shown)\n", LIST_MAX);
    }
    return 0;
}

static int cmd_show(ctl *c, const char *which)
{
    char *end = NULL;
    long long id = strtoll(which, &end, 10);
    char *channel = NULL;
    int rc = OC_OK;
    /* A short number is a discussion id; a snowflake is a channel id. */
    if (end && !*end && id > 0 && strlen(which) < 12)
        rc = dg_store_discussion_channel_of(c->st, id, &channel);
    const char *ch = channel ? channel : which;
    dg_discussion_info info;
    if (rc == OC_OK)
        rc = dg_discussion_info_load_locked(c->st, NULL, ch, c->now, &info);
    free(channel);
    if (rc == OC_ERR_NOT_FOUND) {
        fprintf(stderr,
                "dirigent-ctl: no discussion %s (give its id or its channel id; "
                "`discussions --all` lists them)\n",
                which);
        return 1;
    }
    if (rc != OC_OK)
        return store_err(c, "reading the discussion", rc);
    dg_ctl_text_fix_discussion(&info);
    json_t *o = discussion_json(&info);
    json_t *order = json_array();
    for (size_t i = 0; i < info.turn.n_members; i++)
        json_array_append_new(order, json_string(info.turn.members[i]));
    char passed[512];
    json_object_set_new(o, "order", order);
    json_object_set_new(o, "passed", json_string(passed_of(&info.turn, passed, sizeof passed)));
    json_object_set_new(o, "agentMessages", json_integer(info.turn.state.agent_msgs));
    json_object_set_new(o, "guide", json_string(info.d.discuss_guide));
    json_object_set_new(o, "workspace", json_string(info.d.initiator_workspace));
    dg_discussion_info_clear(&info);
    if (c->json) {
        print_json(o);
        return 0;
    }
    const char *key;
    json_t *val;
    json_object_foreach(o, key, val) {
        char *text = json_is_string(val) ? NULL : json_dumps(val, JSON_ENCODE_ANY | JSON_COMPACT);
        printf("%-16s %s\n", key, text ? text : json_string_value(val));
        free(text);
    }
    json_decref(o);
    return 0;
}

static int cmd_outbox(ctl *c)
{
    dg_outbox_summary sum;
    dg_outbox_row *pend = NULL, *fail = NULL;
    size_t np = 0, nf = 0;
    int rc = dg_store_outbox_summary(c->st, &sum);
    if (rc == OC_OK)
        rc = dg_store_outbox_rows_in(c->st, DG_OUTBOX_PENDING, 20, &pend, &np);
    if (rc == OC_OK)
        rc = dg_store_outbox_rows_in(c->st, DG_OUTBOX_FAILED, 20, &fail, &nf);
    if (rc != OC_OK) {
        dg_outbox_rows_free(pend, np);
        dg_outbox_rows_free(fail, nf);
        return store_err(c, "reading the outbox", rc);
    }
    dg_ctl_text_fix_outbox_rows(pend, np);
    dg_ctl_text_fix_outbox_rows(fail, nf);
    int64_t age = sum.oldest_pending_ms ? (c->now - sum.oldest_pending_ms) / 1000 : 0;
    if (c->json) {
        json_t *p = json_array(), *f = json_array();
        char when[32];
        for (size_t i = 0; i < np; i++)
            json_array_append_new(p, json_pack("{s:I,s:s,s:i,s:s}", "id", (json_int_t)pend[i].id,
                                               "channelId", pend[i].channel_id, "attempts",
                                               pend[i].attempts, "createdAt",
                                               iso(pend[i].created_at_ms, when, sizeof when)));
        for (size_t i = 0; i < nf; i++)
            json_array_append_new(
                f, json_pack("{s:I,s:s,s:i,s:s,s:o}", "id", (json_int_t)fail[i].id, "channelId",
                             fail[i].channel_id, "attempts", fail[i].attempts, "failedAt",
                             iso(fail[i].done_at_ms, when, sizeof when), "reason",
                             str_or_null(fail[i].last_error)));
        print_json(json_pack("{s:i,s:i,s:i,s:o,s:o,s:o}", "pending", (int)sum.pending, "sent",
                             (int)sum.sent, "failed", (int)sum.failed, "oldestPendingAgeSec",
                             sum.pending ? json_integer(age) : json_null(), "pendingRows", p,
                             "failedRows", f));
    } else {
        printf("pending %ld, sent %ld, failed %ld", sum.pending, sum.sent, sum.failed);
        if (sum.pending)
            printf(", oldest pending %llds old", (long long)age);
        printf("\n");
        for (size_t i = 0; i < np; i++)
            printf("  pending #%lld to %s, %d failed attempt(s)\n", (long long)pend[i].id,
                   pend[i].channel_id, pend[i].attempts);
        for (size_t i = 0; i < nf; i++)
            printf("  failed  #%lld to %s: %s\n", (long long)fail[i].id, fail[i].channel_id,
                   fail[i].last_error ? fail[i].last_error : "(no reason recorded)");
    }
    dg_outbox_rows_free(pend, np);
    dg_outbox_rows_free(fail, nf);
    return 0;
}

/* 1 when s is a channel id; else says why on stderr (the operator may have
 * typed a channel's name) and 0. */
static int channel_id_ok(const char *what, const char *s)
{
    if (dg_platform_of_channel(s))
        return 1;
    fprintf(stderr,
            "dirigent-ctl: %s \"%s\" is not a channel id: it must be a Discord snowflake, "
            "1-20 decimal digits (right-click the channel, Copy Channel ID), or a Slack id, "
            "C or G and upper-case letters and digits (the channel's details, at the bottom); "
            "`dirigent-ctl scopes` lists the managed ones\n",
            what, s);
    return 0;
}

/* The command line, less the options that go into ctl. */
typedef struct ctl_args {
    const char *db, *url, *config;
    const char *args[4];         /* the command and its arguments */
    int n;                       /* how many; 5: too many */
    int all;                     /* --all */
    char *from_config;           /* the store named by --openclaw-config; owned */
    const char *since, *channel; /* cost's --since WHEN, --channel ID */
    const char *no_value;        /* an option given without its value */
    int64_t since_ms;
} ctl_args;

/* The doctor reads a host config, not a store, and serve reads the store
 * per request: each parses its own options. One of them is the command
 * when it is the first word that is no option or value; its index in argv,
 * else 0. */
static int own_options_at(int argc, char **argv)
{
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--db") || !strcmp(argv[k], "--store-url") ||
            !strcmp(argv[k], "--openclaw-config") || !strcmp(argv[k], "--openclaw-version") ||
            !strcmp(argv[k], "--listen") || !strcmp(argv[k], "--token"))
            k++;
        else if (argv[k][0] != '-')
            return !strcmp(argv[k], "doctor") || !strcmp(argv[k], "serve") ? k : 0;
    }
    return 0;
}

/* The options before the command, then the command's words (--json,
 * --no-claim-hooks and --all may also follow it). -1 to go on, else the
 * exit code (--version, --help). */
static int parse_args(int argc, char **argv, ctl *c, ctl_args *a)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--db") && i + 1 < argc)
            a->db = argv[++i];
        else if (!strcmp(argv[i], "--store-url") && i + 1 < argc)
            a->url = argv[++i];
        else if (!strcmp(argv[i], "--openclaw-config") && i + 1 < argc)
            a->config = argv[++i];
        else if (!strcmp(argv[i], "--json"))
            c->json = 1;
        else if (!strcmp(argv[i], "--no-claim-hooks"))
            c->claim_hooks = 0;
        else if (!strcmp(argv[i], "--version")) {
            printf("dirigent-ctl %s (store schema %d)\n", DG_VERSION, dg_store_schema_version());
            return 0;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(USAGE, stdout);
            return 0;
        } else
            break;
    }
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            c->json = 1;
        else if (!strcmp(argv[i], "--no-claim-hooks"))
            c->claim_hooks = 0;
        else if (!strcmp(argv[i], "--all"))
            a->all = 1;
        else if (!strcmp(argv[i], "--since") || !strcmp(argv[i], "--channel")) {
            const char **to = argv[i][2] == 's' ? &a->since : &a->channel;
            if (i + 1 >= argc)
                a->no_value = argv[i];
            else
                *to = argv[++i];
        } else if (a->n < 4)
            a->args[a->n++] = argv[i];
        else
            a->n = 5;
    }
    return -1;
}

/* The store to read: --openclaw-config's, else --db / --store-url, else
 * env DIRIGENT_STORE_URL. An explicit option wins over the environment
 * (unlike the plugin, where the environment wins over its config file):
 * the operator typed it for this call. -1 to go on, else the exit code
 * after saying why on stderr. */
static int choose_store(ctl *c, ctl_args *a)
{
    const char *env = getenv("DIRIGENT_STORE_URL");
    if (a->config && (a->db || a->url)) {
        fprintf(stderr,
                "dirigent-ctl: give either --openclaw-config FILE or --db / "
                "--store-url, not both\n%s",
                USAGE);
        return 2;
    }
    if (a->config) {
        char cerr[1024] = "";
        if (dg_ctl_config_load(a->config, &c->cfg, cerr, sizeof cerr) != OC_OK) {
            fprintf(stderr, "dirigent-ctl: --openclaw-config %s: %s\n", a->config, cerr);
            return 1;
        }
        c->have_cfg = 1;
        a->from_config = strdup(c->cfg.store_url ? c->cfg.store_url : c->cfg.db_path);
        if (!a->from_config) {
            fprintf(stderr, "dirigent-ctl: out of memory\n");
            return 1;
        }
        if (dg_store_is_url(a->from_config))
            a->url = a->from_config;
        else
            a->db = a->from_config;
    } else if (!a->db && !a->url && env && *env) {
        a->url = env;
    }
    return -1;
}

/* The command and its arguments make sense with the store chosen: -1 to go
 * on, else 2 after saying why on stderr. */
static int check_command(const ctl *c, ctl_args *a)
{
    const char *cmd = a->args[0];
    int n = a->n;
    int ok_args =
        cmd && ((!strcmp(cmd, "scopes") && n == 1) || (!strcmp(cmd, "status") && n == 1) ||
                (!strcmp(cmd, "why") && (n == 2 || n == 3)) ||
                (!strcmp(cmd, "discussions") && n == 1) || (!strcmp(cmd, "show") && n == 2) ||
                (!strcmp(cmd, "outbox") && n == 1) || (!strcmp(cmd, "cost") && n == 1));
    int cost_opts = a->since || a->channel || a->no_value;
    const char *why = (a->db && !*a->db) || (a->url && !*a->url)
                          ? "dirigent-ctl: --db and --store-url need a value; an empty one was "
                            "given\n"
                      : a->db && a->url   ? "dirigent-ctl: give either --db PATH (SQLite) or "
                                            "--store-url URL (PostgreSQL), not both\n"
                      : !a->db && !a->url ? "dirigent-ctl: --db PATH or --store-url URL (or env "
                                            "DIRIGENT_STORE_URL) is required\n"
                      : a->url && !dg_store_is_url(a->url)
                          ? "dirigent-ctl: --store-url (or "
                            "DIRIGENT_STORE_URL) must be a postgresql:// or "
                            "postgres:// url; a SQLite file goes to --db\n"
                      : !ok_args || (a->all && strcmp(cmd, "discussions") != 0) ||
                              (cost_opts && strcmp(cmd, "cost") != 0)
                          ? "dirigent-ctl: unknown command or wrong arguments\n"
                          : NULL;
    if (why) {
        fprintf(stderr, "%s%s", why, USAGE);
        return 2;
    }
    if ((!strcmp(cmd, "why") && !channel_id_ok("CHANNEL", a->args[1])) ||
        (!strcmp(cmd, "show") &&
         !channel_id_ok("DISCUSSION (an id or a channel id)", a->args[1])) ||
        (a->channel && !channel_id_ok("--channel", a->channel)))
        return 2;
    if (a->no_value) {
        fprintf(stderr, "dirigent-ctl: %s needs a value: %s\n", a->no_value,
                !strcmp(a->no_value, "--since") ? DG_CTL_WHEN_FORMS : "a channel id");
        return 2;
    }
    if (a->since && dg_ctl_when_parse(a->since, c->now, &a->since_ms) != 0) {
        fprintf(stderr, "dirigent-ctl: --since \"%s\" is not a time: give %s\n", a->since,
                DG_CTL_WHEN_FORMS);
        return 2;
    }
    return -1;
}

/* Open the store read-only with a read transaction: -1 to go on, else 1
 * after saying why on stderr. */
static int open_store(ctl *c, const ctl_args *a)
{
    char err[512] = "";
    struct stat sb;
    if (a->config && a->db && stat(a->db, &sb) != 0) {
        fprintf(stderr,
                "dirigent-ctl: no database at %s (the plugin's dbPath) yet: the plugin "
                "creates it when the gateway first starts\n",
                a->db);
        return 1;
    }
    if (dg_store_open_readonly(a->url ? a->url : a->db, &c->st, err, sizeof err) != OC_OK) {
        fprintf(stderr, "dirigent-ctl: %s\n", err);
        return 1;
    }
    if (dg_store_begin_read(c->st) != OC_OK) {
        /* dg_store_where names a PostgreSQL store without its password. */
        fprintf(stderr, "dirigent-ctl: cannot read %s (%s)\n",
                a->url ? dg_store_where(c->st) : a->db, dg_store_errmsg(c->st));
        dg_store_close(c->st);
        c->st = NULL;
        return 1;
    }
    c->where = a->url ? dg_store_where(c->st) : a->db;
    return -1;
}

static int run_command(ctl *c, const ctl_args *a)
{
    const char *cmd = a->args[0];
    return !strcmp(cmd, "scopes")        ? cmd_scopes(c)
           : !strcmp(cmd, "status")      ? cmd_status(c)
           : !strcmp(cmd, "why")         ? cmd_why(c, a->args[1], a->args[2])
           : !strcmp(cmd, "discussions") ? cmd_discussions(c, a->all)
           : !strcmp(cmd, "show")        ? cmd_show(c, a->args[1])
           : !strcmp(cmd, "cost")
               ? dg_ctl_cost(c->st, c->have_cfg ? &c->cfg : NULL, a->channel, a->since_ms, c->json)
               : cmd_outbox(c);
}

int main(int argc, char **argv)
{
    int k = own_options_at(argc, argv);
    if (k)
        return !strcmp(argv[k], "serve") ? dg_ctl_serve_main(argc, argv, k)
                                         : dg_ctl_doctor_main(argc, argv, k);
    ctl c = {.now = wall_ms(), .claim_hooks = 1};
    ctl_args a = {0};
    int status;
    if ((status = parse_args(argc, argv, &c, &a)) < 0 && (status = choose_store(&c, &a)) < 0 &&
        (status = check_command(&c, &a)) < 0 && (status = open_store(&c, &a)) < 0) {
        status = run_command(&c, &a);
        dg_store_rollback(c.st);
        dg_store_close(c.st);
    }
    free(a.from_config);
    dg_config_free(&c.cfg);
    return status;
}
