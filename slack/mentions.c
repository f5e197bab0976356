/*
 * mentions.c -- Slack's ids and mention syntax: "<@U123>" to mention a
 * user, "<@U123|name>" as older clients and some apps write it, neither
 * of them inside code. No requests, no state. See slack.h.
 */
#include "slack_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md_code.h"

/* first then 2..20 of [A-Z0-9] in s[0..n). */
static int id_shape(const char *s, size_t n, const char *first)
{
    if (n < 3 || n > 21 || !strchr(first, s[0]) || !s[0])
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')))
            return 0;
    return 1;
}

int dg_slack_user_id_valid(const char *id)
{
    return id && id_shape(id, strlen(id), "UW");
}

int dg_slack_channel_id_valid(const char *id)
{
    return id && id_shape(id, strlen(id), "CGD");
}

int dg_slack_ts_valid(const char *ts)
{
    if (!ts)
        return 0;
    const char *p = ts;
    size_t secs = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        secs++;
    if (secs == 0 || secs > 12 || *p != '.')
        return 0;
    p++;
    size_t frac = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        frac++;
    return frac == 6 && *p == '\0';
}

int dg_slack_format_mention(const char *user_id, char *out, size_t out_len)
{
    if (out_len)
        out[0] = '\0';
    if (!dg_slack_user_id_valid(user_id) || out_len < strlen(user_id) + 4)
        return DG_ERR_INVALID;
    snprintf(out, out_len, "<@%s>", user_id);
    return DG_OK;
}

/* The mention at q (after "<@"): its id's length, or 0 when q holds none. */
static size_t mention_at(const char *q)
{
    size_t len = strcspn(q, "|>");
    if (q[len] == '\0' || !id_shape(q, len, "UW"))
        return 0;
    if (q[len] == '|' && !strchr(q + len, '>'))
        return 0;
    return len;
}

/* Whether the id at id (len bytes) was mentioned in t before p. */
static int seen_before(const char *t, const char *p, const char *id, size_t len)
{
    for (const char *q = strstr(t, "<@"); q && q < p; q = strstr(q + 2, "<@"))
        if (mention_at(q + 2) == len && !strncmp(q + 2, id, len))
            return 1;
    return 0;
}

long dg_slack_parse_mentions(const char *text, dg_slack_mention *ids, size_t max)
{
    if (!text)
        return 0;
    /* A copy whose code is blanked, so offsets stay those of text. */
    char *t = strdup(text);
    if (!t)
        return -1;
    dg_md_blank_code(t);
    long n = 0;
    for (const char *p = strstr(t, "<@"); p; p = strstr(p + 2, "<@")) {
        const char *id = p + 2;
        size_t len = mention_at(id);
        if (!len || seen_before(t, p, id, len))
            continue;
        if ((size_t)n < max)
            snprintf(ids[n].id, sizeof ids[n].id, "%.*s", (int)len, id);
        n++;
    }
    free(t);
    return n;
}
