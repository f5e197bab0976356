/*
 * ctl_serve_cost.c -- the status page's parts read from the cost ledger
 * (ctl_serve.h): runs made and avoided per hour from the ledger's exact
 * verdicts, each scope's budget (its breaker, what it ran today, the
 * limits the plugin config sets) and the ledger's totals.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cost_report.h"
#include "ctl_serve.h"
#include "openclaw/plugin.h"
#include "store_cost.h"
#include "store_transitions.h"
#include "store_turns.h"

#define HOUR_MS 3600000LL
#define DAY_MS 86400000LL
/* The cause of the transition that latches a breaker (turns_budget.c). */
#define TRIP_CAUSE "budget reached:"

static json_t *iso_json(int64_t ms)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    char buf[32];
    if (ms <= 0 || !gmtime_r(&s, &tm) || !strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
        return json_null();
    return json_string(buf);
}

int dg_serve_hours_json(dg_store *st, int64_t now_ms, json_t *out)
{
    int64_t first = now_ms / HOUR_MS - (DG_SERVE_HOURS - 1);
    for (int64_t i = 0; i < DG_SERVE_HOURS; i++) {
        int64_t h = first + i;
        dg_cost_filter f = {.since_ms = h * HOUR_MS, .until_ms = (h + 1) * HOUR_MS};
        dg_cost_totals t = {0};
        /* An hour before the epoch (a test clock) has no runs; asked, its
         * end 0 or less would read as "no end". */
        int rc = f.until_ms > 0 ? dg_store_cost_sum(st, &f, &t) : OC_OK;
        if (rc != OC_OK)
            return rc;
        json_array_append_new(out, json_pack("{s:I,s:o,s:I,s:I,s:I}", "hour", (json_int_t)h,
                                             "start", iso_json(h * HOUR_MS), "runs",
                                             (json_int_t)(t.granted + t.swapped + t.claimed),
                                             "made", (json_int_t)t.granted, "avoided",
                                             (json_int_t)(t.claimed + t.swapped)));
    }
    return OC_OK;
}

/* Whether budget kind k counts in a channel of mode m (as the engine
 * counts them: the discussion kinds in discussion channels, the others
 * elsewhere, none in a closed one). */
static int kind_applies(dg_channel_mode m, int k)
{
    int discussion = k == DG_BUDGET_DISCUSSION_TURNS || k == DG_BUDGET_DISCUSSION_TOKENS;
    return m != DG_MODE_CLOSED && discussion == (m == DG_MODE_DISCUSSION);
}

/* "turnsPerHour 60, tokensPerDay 2000000" of b's limits that apply in
 * mode m into buf ("" when none); each also into the object limits (NULL:
 * none wanted). */
static void limits_of(const dg_budget *b, dg_channel_mode m, char *buf, size_t len, json_t *limits)
{
    buf[0] = '\0';
    for (int k = 1; k < DG_BUDGET_KINDS; k++) {
        if (b->limit[k] <= 0 || !kind_applies(m, k))
            continue;
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s %ld", used ? ", " : "", dg_budget_key(k),
                 b->limit[k]);
        if (limits)
            json_object_set_new(limits, dg_budget_key(k), json_integer(b->limit[k]));
    }
}

/* When the breaker of the scope named scope_name latched: the newest
 * transition that says so, 0 when none is kept. */
static int trip_time(dg_store *st, const char *channel, const char *scope_name, int64_t *at)
{
    dg_transition *t = NULL;
    size_t n = 0;
    *at = 0;
    int rc = dg_store_transitions_list(st, channel, scope_name, DG_TRANSITIONS_KEEP, &t, &n);
    for (size_t i = 0; rc == OC_OK && i < n && !*at; i++)
        if (t[i].cause && strncmp(t[i].cause, TRIP_CAUSE, strlen(TRIP_CAUSE)) == 0)
            *at = t[i].at_ms;
    dg_transitions_free(t, n);
    return rc;
}

json_t *dg_serve_scope_budget(dg_store *st, const dg_config *cfg, const dg_scope *sc,
                              const char *scope_name, const dg_turn_view *tv, int64_t now_ms,
                              int *rc)
{
    const char *ch = dg_scope_channel(sc);
    char key[DG_SCOPE_KEY_MAX + 16], text[768], limits_text[256] = "";
    dg_cost_filter f = {.channel_id = ch,
                        .scope = dg_store_turns_state_key(sc, key, sizeof key),
                        .since_ms = now_ms - now_ms % DAY_MS};
    dg_cost_totals today;
    int64_t since = 0;
    if ((*rc = dg_store_cost_sum(st, &f, &today)) != OC_OK)
        return NULL;
    const dg_turn_state *s = &tv->state;
    int holds = s->budget && (!s->budget_until_ms || now_ms < s->budget_until_ms);
    if (holds && (*rc = trip_time(st, ch, scope_name, &since)) != OC_OK)
        return NULL;
    json_t *limits = cfg ? json_object() : json_null();
    if (cfg) {
        dg_budget b;
        dg_config_budget_for(cfg, ch, &b);
        limits_of(&b, tv->mode, limits_text, sizeof limits_text, limits);
    }
    char when[2][32] = {"", ""};
    json_t *since_j = iso_json(since), *until_j = iso_json(holds ? s->budget_until_ms : 0);
    if (json_is_string(since_j))
        snprintf(when[0], sizeof when[0], " since %s", json_string_value(since_j));
    if (json_is_string(until_j))
        snprintf(when[1], sizeof when[1], " until %s", json_string_value(until_j));
    int n = 0;
    if (holds)
        n = snprintf(text, sizeof text, "held by budget.%s (%s)%s%s%s; ",
                     dg_budget_key((dg_budget_kind)s->budget),
                     dg_budget_words((dg_budget_kind)s->budget), when[0],
                     s->budget_until_ms ? when[1] : " until an admin's !dirigent resume",
                     tv->mode == DG_MODE_DISCUSSION ? ", the initiator asked to wrap up" : "");
    snprintf(text + n, sizeof text - (size_t)n,
             "today %lld run%s, %lld granted, %lld tokens; limits: %s", (long long)today.runs,
             today.runs == 1 ? "" : "s", (long long)today.granted,
             (long long)(today.tokens_in + today.tokens_out),
             !cfg           ? "no config given"
             : *limits_text ? limits_text
                            : "none configured");
    return json_pack(
        "{s:b,s:o,s:o,s:o,s:o,s:{s:I,s:I,s:I},s:o,s:s}", "holds", holds, "kind",
        holds ? json_string(dg_budget_key((dg_budget_kind)s->budget)) : json_null(), "what",
        holds ? json_string(dg_budget_words((dg_budget_kind)s->budget)) : json_null(), "since",
        since_j, "until", until_j, "today", "runs", (json_int_t)today.runs, "granted",
        (json_int_t)today.granted, "tokens", (json_int_t)(today.tokens_in + today.tokens_out),
        "limits", limits, "text", text);
}

json_t *dg_serve_budget_summary(const dg_config *cfg)
{
    if (!cfg)
        return json_pack("{s:b,s:b,s:s}", "configGiven", 0, "configured", 0, "text",
                         "no config given (dirigent-ctl serve --openclaw-config FILE shows the "
                         "limits and prices)");
    char normal[256], discussion[256], text[700];
    limits_of(&cfg->budget, DG_MODE_NORMAL, normal, sizeof normal, NULL);
    limits_of(&cfg->budget, DG_MODE_DISCUSSION, discussion, sizeof discussion, NULL);
    int configured = *normal || *discussion || cfg->n_channel_budgets;
    snprintf(text, sizeof text, "%s%s%s%s%s", configured ? "" : "none configured",
             *normal ? "every channel: " : "", normal,
             *discussion ? (*normal ? "; a discussion: " : "a discussion: ") : "", discussion);
    if (cfg->n_channel_budgets) {
        size_t used = strlen(text);
        snprintf(text + used, sizeof text - used, "%s%zu channel%s with its own (channelBudgets)",
                 *normal || *discussion ? "; " : "", cfg->n_channel_budgets,
                 cfg->n_channel_budgets == 1 ? "" : "s");
    }
    return json_pack("{s:b,s:b,s:s}", "configGiven", 1, "configured", configured, "text", text);
}

/* The summary line and totals of the runs since since_ms. */
static json_t *window_json(dg_store *st, const dg_config *cfg, int64_t since_ms, int *rc)
{
    dg_cost_filter f = {.since_ms = since_ms};
    dg_cost_report *r = NULL;
    if ((*rc = dg_cost_report_load(st, &f, cfg, &r)) != OC_OK)
        return NULL;
    char line[512];
    json_t *j = dg_cost_report_json(r);
    json_t *o = j ? json_pack("{s:s,s:O,s:O,s:O,s:o,s:O}", "summary",
                              dg_cost_report_summary(r, line, sizeof line), "totals",
                              json_object_get(j, "totals"), "priced", json_object_get(j, "priced"),
                              "unpriced", json_object_get(j, "unpriced"), "firstRun",
                              iso_json(dg_cost_report_totals(r)->first_ms), "judge",
                              json_object_get(j, "judge"))
                  : NULL;
    json_decref(j);
    dg_cost_report_free(r);
    if (!o)
        *rc = OC_ERR_NOMEM;
    return o;
}

json_t *dg_serve_cost_json(dg_store *st, const dg_config *cfg, int64_t now_ms, int *rc)
{
    json_t *today = window_json(st, cfg, now_ms - now_ms % DAY_MS, rc);
    json_t *kept = today ? window_json(st, cfg, 0, rc) : NULL;
    if (!kept) {
        json_decref(today);
        return NULL;
    }
    return json_pack("{s:o,s:o}", "today", today, "kept", kept);
}
