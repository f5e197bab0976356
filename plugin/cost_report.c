/*
 * cost_report.c -- the cost ledger read into a report, and its text, its
 * one-line summary and its JSON (cost_report.h).
 */
#include "cost_report.h"
#include "store_judge.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "status.h"

#define DAY_MS 86400000LL
/* The unpriced models a line names before "and N more". */
#define UNPRICED_NAMED 5

/* One model's runs of one channel and day. */
typedef struct cost_model {
    char *model; /* "" when the host reported none */
    dg_cost_totals t;
    double money;
} cost_model;

/* One channel's runs of one UTC day; its models are models[first ..
 * first + n). */
typedef struct cost_day {
    char *channel_id;
    int64_t day_ms;
    dg_cost_totals t;
    double money;
    size_t first, n;
} cost_day;

struct dg_cost_report {
    char *channel_id, *scope; /* the filter's, NULL: every */
    int64_t since_ms, until_ms;
    cost_day *days;
    size_t n_days, cap_days;
    cost_model *models;
    size_t n_models, cap_models;
    char **unpriced; /* models that reported tokens without a price ("" too) */
    size_t n_unpriced, cap_unpriced;
    dg_cost_totals total;
    double money;
    dg_judge_totals judge; /* the chair's judge: its calls apart from the agents' runs */
};

/* What the walk over the ledger's rows needs besides the report. */
typedef struct load_ctx {
    dg_cost_report *r;
    const dg_config *cfg;
} load_ctx;

static void add_totals(dg_cost_totals *to, const dg_cost_totals *t)
{
    to->runs += t->runs;
    to->granted += t->granted;
    to->swapped += t->swapped;
    to->claimed += t->claimed;
    to->model_calls += t->model_calls;
    to->tokens_in += t->tokens_in;
    to->tokens_out += t->tokens_out;
    if (t->first_ms && (!to->first_ms || t->first_ms < to->first_ms))
        to->first_ms = t->first_ms;
    if (t->last_ms > to->last_ms)
        to->last_ms = t->last_ms;
}

static int note_unpriced(dg_cost_report *r, const char *model)
{
    for (size_t i = 0; i < r->n_unpriced; i++)
        if (strcmp(r->unpriced[i], model) == 0)
            return DG_OK;
    if (dg_grow(&r->unpriced, &r->cap_unpriced, r->n_unpriced, sizeof *r->unpriced, 4) != 0)
        return DG_ERR_NOMEM;
    if (!(r->unpriced[r->n_unpriced] = strdup(model)))
        return DG_ERR_NOMEM;
    r->n_unpriced++;
    return DG_OK;
}

/* A new day when the row's channel or day differs from the last one. */
static cost_day *day_of(dg_cost_report *r, const dg_cost_row *row)
{
    cost_day *d = r->n_days ? &r->days[r->n_days - 1] : NULL;
    if (d && d->day_ms == row->day_ms && strcmp(d->channel_id, row->channel_id) == 0)
        return d;
    if (dg_grow(&r->days, &r->cap_days, r->n_days, sizeof *r->days, 8) != 0)
        return NULL;
    d = &r->days[r->n_days];
    memset(d, 0, sizeof *d);
    if (!(d->channel_id = strdup(row->channel_id)))
        return NULL;
    d->day_ms = row->day_ms;
    d->first = r->n_models;
    r->n_days++;
    return d;
}

static int take_row(const dg_cost_row *row, void *ud)
{
    load_ctx *c = ud;
    dg_cost_report *r = c->r;
    cost_day *d = day_of(r, row);
    if (!d || dg_grow(&r->models, &r->cap_models, r->n_models, sizeof *r->models, 8) != 0)
        return DG_ERR_NOMEM;
    cost_model *m = &r->models[r->n_models];
    memset(m, 0, sizeof *m);
    if (!(m->model = strdup(row->model ? row->model : "")))
        return DG_ERR_NOMEM;
    r->n_models++;
    d->n++;
    m->t = row->t;
    if (row->t.tokens_in || row->t.tokens_out) {
        const dg_price *p = c->cfg && *m->model ? dg_config_price(c->cfg, m->model) : NULL;
        if (!p && note_unpriced(r, m->model) != DG_OK)
            return DG_ERR_NOMEM;
        if (p)
            m->money = ((double)row->t.tokens_in * p->input_per_million +
                        (double)row->t.tokens_out * p->output_per_million) /
                       1e6;
    }
    d->money += m->money;
    r->money += m->money;
    add_totals(&d->t, &row->t);
    add_totals(&r->total, &row->t);
    return 0;
}

int dg_cost_report_load(dg_store *st, const dg_cost_filter *f, const dg_config *cfg,
                        dg_cost_report **out)
{
    *out = NULL;
    dg_cost_report *r = calloc(1, sizeof *r);
    if (!r)
        return DG_ERR_NOMEM;
    r->since_ms = f->since_ms;
    r->until_ms = f->until_ms;
    int rc = DG_OK;
    if ((f->channel_id && !(r->channel_id = strdup(f->channel_id))) ||
        (f->scope && !(r->scope = strdup(f->scope))))
        rc = DG_ERR_NOMEM;
    load_ctx c = {.r = r, .cfg = cfg};
    if (rc == DG_OK)
        rc = dg_store_cost_rows(st, f, take_row, &c);
    if (rc == DG_OK)
        rc = dg_store_judge_sum(st, f, &r->judge);
    if (rc != DG_OK) {
        dg_cost_report_free(r);
        return rc;
    }
    *out = r;
    return DG_OK;
}

void dg_cost_report_free(dg_cost_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_days; i++)
        free(r->days[i].channel_id);
    for (size_t i = 0; i < r->n_models; i++)
        free(r->models[i].model);
    for (size_t i = 0; i < r->n_unpriced; i++)
        free(r->unpriced[i]);
    free(r->days);
    free(r->models);
    free(r->unpriced);
    free(r->channel_id);
    free(r->scope);
    free(r);
}

const dg_cost_totals *dg_cost_report_totals(const dg_cost_report *r)
{
    return &r->total;
}

/* ---- text ------------------------------------------------------------------ */

/* A text under construction; nomem once an append failed. */
typedef struct out {
    dg_buf b;
    int nomem;
} out;

__attribute__((format(printf, 2, 3))) static void put(out *o, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!o->nomem && dg_buf_adds(&o->b, line) != 0)
        o->nomem = 1;
}

/* n with a comma between thousands ("4,210"). Returns buf. */
static const char *count(int64_t n, char *buf, size_t len)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", (long long)(n < 0 ? -n : n));
    size_t nd = strlen(digits), k = 0;
    if (n < 0 && k + 1 < len)
        buf[k++] = '-';
    for (size_t i = 0; i < nd && k + 1 < len; i++) {
        if (i && (nd - i) % 3 == 0 && k + 2 < len)
            buf[k++] = ',';
        buf[k++] = digits[i];
    }
    buf[k] = '\0';
    return buf;
}

static const char *money_text(double m, char *buf, size_t len)
{
    if (m > 0 && m < 0.005) {
        snprintf(buf, len, "<$0.01");
        return buf;
    }
    long long cents = (long long)(m * 100 + 0.5);
    char whole[32];
    snprintf(buf, len, "$%s.%02lld", count(cents / 100, whole, sizeof whole), cents % 100);
    return buf;
}

/* Runs went to a model but the host reported no usage for them. */
static int usage_unknown(const dg_cost_totals *t)
{
    return t->granted + t->swapped > 0 && !t->model_calls && !t->tokens_in && !t->tokens_out;
}

/* Money is shown when every model that reported tokens has a price and
 * some did. */
static int priced(const dg_cost_report *r)
{
    return !r->n_unpriced && (r->total.tokens_in || r->total.tokens_out);
}

/* "13 runs, 3 model calls[, 3 granted], 10 avoided (claimed 10, swapped 0),
 * 4,210 tokens in / 310 out[, $0.02]" */
static void put_sums(out *o, const dg_cost_report *r, const dg_cost_totals *t, double money,
                     int granted)
{
    char a[32], b[32], c[32], d[32], e[32];
    put(o, "%s run%s, ", count(t->runs, a, sizeof a), t->runs == 1 ? "" : "s");
    if (usage_unknown(t))
        put(o, "model calls n/a, ");
    else
        put(o, "%s model call%s, ", count(t->model_calls, a, sizeof a),
            t->model_calls == 1 ? "" : "s");
    if (granted)
        put(o, "%s granted, ", count(t->granted, a, sizeof a));
    put(o, "%s avoided (claimed %s, swapped %s), ", count(t->claimed + t->swapped, a, sizeof a),
        count(t->claimed, b, sizeof b), count(t->swapped, c, sizeof c));
    if (usage_unknown(t))
        put(o, "tokens n/a");
    else
        put(o, "%s tokens in / %s out", count(t->tokens_in, d, sizeof d),
            count(t->tokens_out, e, sizeof e));
    if (priced(r) && !usage_unknown(t))
        put(o, ", %s", money_text(money, a, sizeof a));
}

static const char *day_text(int64_t day_ms, char *buf, size_t len)
{
    time_t s = (time_t)(day_ms / 1000);
    struct tm tm;
    if (!gmtime_r(&s, &tm) || !strftime(buf, len, "%Y-%m-%d", &tm))
        snprintf(buf, len, "?");
    return buf;
}

static void put_unpriced(out *o, const dg_cost_report *r)
{
    put(o, "money: not shown, no price for ");
    for (size_t i = 0; i < r->n_unpriced && i < UNPRICED_NAMED; i++)
        put(o, "%s%s", i ? ", " : "", *r->unpriced[i] ? r->unpriced[i] : "(model not reported)");
    if (r->n_unpriced > UNPRICED_NAMED)
        put(o, " and %zu more", r->n_unpriced - UNPRICED_NAMED);
    put(o, " (set prices.<model> in the plugin config)\n");
}

/* Line i of the body (a channel header when head, else day i) into o. */
static void put_day(out *o, const dg_cost_report *r, size_t i, int head)
{
    const cost_day *d = &r->days[i];
    char day[16];
    if (head) {
        put(o, "channel %s:\n", d->channel_id);
        return;
    }
    put(o, "%s%s: ", r->channel_id ? "" : "  ", day_text(d->day_ms, day, sizeof day));
    put_sums(o, r, &d->t, d->money, 1);
    put(o, "\n");
}

/* The length of a line put_day would write. */
static size_t day_len(const dg_cost_report *r, size_t i, int head)
{
    out o = {0};
    put_day(&o, r, i, head);
    size_t n = o.nomem ? (size_t)-1 / 2 : o.b.len;
    dg_buf_free(&o.b);
    return n;
}

/* Day i is the first of its channel in a report of every channel: its
 * channel's header line goes before it. */
static int starts_channel(const dg_cost_report *r, size_t i)
{
    return !r->channel_id &&
           (i == 0 || strcmp(r->days[i - 1].channel_id, r->days[i].channel_id) != 0);
}

/* The length of day i's line, with its channel's header when it has one. */
static size_t line_len(const dg_cost_report *r, size_t i)
{
    return day_len(r, i, 0) + (starts_channel(r, i) ? day_len(r, i, 1) : 0);
}

/* The judge's line: its calls, what they cost, how many fell back. */
static void put_judge(out *o, const dg_cost_report *r)
{
    const dg_judge_totals *j = &r->judge;
    if (j->calls > 0)
        put(o,
            "judge: %lld call%s, %lld tokens in / %lld out, %lld ms on average, %lld fell back\n",
            (long long)j->calls, j->calls == 1 ? "" : "s", (long long)j->tokens_in,
            (long long)j->tokens_out, (long long)(j->latency_ms / j->calls),
            (long long)j->fell_back);
}

char *dg_cost_report_text(const dg_cost_report *r, size_t max_len)
{
    out tail = {0};
    if (!r->n_days) {
        put(&tail, "no agent runs recorded\n");
        put_judge(&tail, r);
        return tail.nomem ? NULL : tail.b.s;
    }
    put(&tail, "total: ");
    put_sums(&tail, r, &r->total, r->money, 1);
    put(&tail, "\n");
    if (r->n_unpriced)
        put_unpriced(&tail, r);
    put_judge(&tail, r);
    /* The body: every line when the whole fits, else as many as fit
     * beside the tail and the line that says how many were left out. */
    static const size_t CUT_LINE = 96;
    size_t whole = tail.b.len;
    for (size_t i = 0; i < r->n_days; i++)
        whole += line_len(r, i);
    int bound = max_len && whole > max_len;
    size_t cut = 0, room = max_len > tail.b.len + CUT_LINE ? max_len - tail.b.len - CUT_LINE : 0;
    out o = {0};
    for (size_t i = 0; i < r->n_days; i++) {
        if (cut || (bound && o.b.len + line_len(r, i) > room)) {
            cut++;
            continue;
        }
        if (starts_channel(r, i))
            put_day(&o, r, i, 1);
        put_day(&o, r, i, 0);
    }
    if (cut)
        put(&o, "(%zu more day line%s not shown: `dirigent-ctl cost` lists them all)\n", cut,
            cut == 1 ? "" : "s");
    if (!tail.nomem && !o.nomem && dg_buf_add(&o.b, tail.b.s, tail.b.len) != 0)
        o.nomem = 1;
    dg_buf_free(&tail.b);
    if (o.nomem || tail.nomem) {
        dg_buf_free(&o.b);
        return NULL;
    }
    return o.b.s;
}

char *dg_cost_report_summary(const dg_cost_report *r, char *buf, size_t len)
{
    out o = {0};
    put(&o, "cost: ");
    put_sums(&o, r, &r->total, r->money, 0);
    if (r->n_unpriced)
        put(&o, ", no price for %s%s", *r->unpriced[0] ? r->unpriced[0] : "(model not reported)",
            r->n_unpriced > 1 ? " and others" : "");
    if (r->judge.calls > 0)
        put(&o, "; judge %lld calls, %lld tokens", (long long)r->judge.calls,
            (long long)(r->judge.tokens_in + r->judge.tokens_out));
    snprintf(buf, len, "%s", o.nomem || !o.b.s ? "cost: (out of memory)" : o.b.s);
    dg_buf_free(&o.b);
    return buf;
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *iso_or_null(int64_t ms)
{
    char buf[32];
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    if (ms <= 0 || !gmtime_r(&s, &tm) || !strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
        return json_null();
    return json_string(buf);
}

static json_t *sums_json(const dg_cost_report *r, const dg_cost_totals *t, double money)
{
    json_t *o =
        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "runs", (json_int_t)t->runs, "granted",
                  (json_int_t)t->granted, "claimed", (json_int_t)t->claimed, "swapped",
                  (json_int_t)t->swapped, "avoided", (json_int_t)(t->claimed + t->swapped),
                  "tokensIn", (json_int_t)t->tokens_in, "tokensOut", (json_int_t)t->tokens_out);
    if (!o)
        return NULL;
    int bad = json_object_set_new(o, "modelCalls",
                                  usage_unknown(t) ? json_null() : json_integer(t->model_calls));
    bad |= json_object_set_new(o, "cost", priced(r) ? json_real(money) : json_null());
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *day_json(const dg_cost_report *r, const cost_day *d)
{
    char day[16];
    json_t *models = json_array(), *o = sums_json(r, &d->t, d->money);
    int bad = !models || !o;
    for (size_t k = d->first; !bad && k < d->first + d->n; k++) {
        const cost_model *m = &r->models[k];
        json_t *mo = sums_json(r, &m->t, m->money);
        bad = !mo || json_object_set_new(mo, "model",
                                         *m->model ? json_string(m->model) : json_null()) != 0;
        bad |= json_array_append_new(models, mo) != 0;
    }
    if (!bad)
        bad =
            json_object_set_new(o, "channelId", json_string(d->channel_id)) != 0 ||
            json_object_set_new(o, "day", json_string(day_text(d->day_ms, day, sizeof day))) != 0 ||
            json_object_set(o, "models", models) != 0;
    json_decref(models);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *dg_cost_report_json(const dg_cost_report *r)
{
    json_t *days = json_array(), *unpriced = json_array();
    int bad = !days || !unpriced;
    for (size_t i = 0; !bad && i < r->n_days; i++)
        bad = json_array_append_new(days, day_json(r, &r->days[i])) != 0;
    for (size_t i = 0; !bad && i < r->n_unpriced; i++)
        bad = json_array_append_new(unpriced, json_string(r->unpriced[i])) != 0;
    json_t *o = bad ? NULL
                    : json_pack("{s:o,s:o,s:o,s:o,s:O,s:o,s:b,s:O,s:s}", "channelId",
                                r->channel_id ? json_string(r->channel_id) : json_null(), "scope",
                                r->scope ? json_string(r->scope) : json_null(), "since",
                                iso_or_null(r->since_ms), "until", iso_or_null(r->until_ms), "days",
                                days, "totals", sums_json(r, &r->total, r->money), "priced",
                                priced(r), "unpriced", unpriced, "currency", "$");
    json_decref(days);
    json_decref(unpriced);
    const dg_judge_totals *j = &r->judge;
    if (o &&
        json_object_set_new(
            o, "judge",
            json_pack("{s:I,s:I,s:I,s:I,s:I}", "calls", (json_int_t)j->calls, "tokensIn",
                      (json_int_t)j->tokens_in, "tokensOut", (json_int_t)j->tokens_out, "latencyMs",
                      (json_int_t)j->latency_ms, "fellBack", (json_int_t)j->fell_back)) != 0) {
        json_decref(o);
        o = NULL;
    }
    return o;
}
