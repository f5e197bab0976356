/*
 * ctl_cost.c -- `dirigent-ctl cost` (ctl_cost.h).
 */
#include "ctl_cost.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cost_report.h"
#include "openclaw/plugin.h"
#include "store_cost.h"

/* "<N>h" / "<N>d": 0 and *ms the span, or -1. */
static int span_ms(const char *s, int64_t *ms)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 5 || (s[n] != 'h' && s[n] != 'd') || s[n + 1] != '\0')
        return -1;
    long v = strtol(s, NULL, 10);
    long max = s[n] == 'h' ? 87600 : 3650;
    if (v < 1 || v > max)
        return -1;
    *ms = (int64_t)v * (s[n] == 'h' ? 3600000 : 86400000);
    return 0;
}

/* 1 when s starts with the shape of pat: 'd' a digit, else that byte. */
static int shaped(const char *s, const char *pat)
{
    for (; *pat; pat++, s++)
        if (*pat == 'd' ? !isdigit((unsigned char)*s) : *s != *pat)
            return 0;
    return 1;
}

/* An ISO date or date and time, UTC: 0 and *ms, or -1. */
static int iso_ms(const char *s, int64_t *ms)
{
    if (!shaped(s, "dddd-dd-dd"))
        return -1;
    struct tm tm = {.tm_year = atoi(s), .tm_mon = atoi(s + 5), .tm_mday = atoi(s + 8)};
    const char *rest = s + 10;
    if ((*rest == 'T' || *rest == ' ') && shaped(rest + 1, "dd:dd")) {
        tm.tm_hour = atoi(rest + 1);
        tm.tm_min = atoi(rest + 4);
        rest += 6;
        if (shaped(rest, ":dd")) {
            tm.tm_sec = atoi(rest + 1);
            rest += 3;
        }
    }
    if (*rest == 'Z')
        rest++;
    if (*rest)
        return -1;
    struct tm want = tm;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    /* timegm normalises (February 30th becomes March 2nd): refuse what
     * does not come back as written. */
    if (t == (time_t)-1 || tm.tm_year + 1900 != want.tm_year || tm.tm_mon + 1 != want.tm_mon ||
        tm.tm_mday != want.tm_mday || tm.tm_hour != want.tm_hour || tm.tm_min != want.tm_min ||
        tm.tm_sec != want.tm_sec || want.tm_year < 1970)
        return -1;
    *ms = (int64_t)t * 1000;
    return 0;
}

int dg_ctl_when_parse(const char *s, int64_t now_ms, int64_t *out_ms)
{
    int64_t v;
    if (!s || !*s)
        return -1;
    if (span_ms(s, &v) == 0) {
        *out_ms = now_ms - v > 0 ? now_ms - v : 1;
        return 0;
    }
    if (iso_ms(s, &v) == 0) {
        *out_ms = v;
        return 0;
    }
    return -1;
}

static void print_header(const dg_config *cfg, const char *channel, int64_t since_ms)
{
    char when[32] = "";
    time_t s = (time_t)(since_ms / 1000);
    struct tm tm;
    if (since_ms > 0 && gmtime_r(&s, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    printf("cost of %s%s, %s%s, per UTC day:\n", channel ? "channel " : "every channel",
           channel ? channel : "", since_ms > 0 ? "runs since " : "every run the store keeps",
           when);
    if (!cfg)
        printf("(no plugin config given: no prices; --openclaw-config FILE reads its "
               "prices)\n");
}

int dg_ctl_cost(dg_store *st, const dg_config *cfg, const char *channel, int64_t since_ms, int json)
{
    dg_cost_filter f = {.channel_id = channel, .since_ms = since_ms};
    dg_cost_report *r = NULL;
    int rc = dg_cost_report_load(st, &f, cfg, &r);
    if (rc != OC_OK) {
        fprintf(stderr,
                "dirigent-ctl: reading the cost ledger failed (%s: %s); the database may be "
                "busy or damaged, try again\n",
                oc_status_name(rc), dg_store_errmsg(st));
        return 1;
    }
    char *text = NULL;
    if (json) {
        json_t *j = dg_cost_report_json(r);
        text = j ? json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
        json_decref(j);
        if (text)
            puts(text);
    } else if ((text = dg_cost_report_text(r, 0))) {
        print_header(cfg, channel, since_ms);
        fputs(text, stdout);
    }
    dg_cost_report_free(r);
    if (!text) {
        fprintf(stderr, "dirigent-ctl: out of memory\n");
        return 1;
    }
    free(text);
    return 0;
}
