/*
 * secret_shape.c -- see secret_shape.h.
 */
#include "secret_shape.h"

#include <stdio.h>
#include <string.h>

static int b64url(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

/* One run of base64url characters and dots, [s, s+n): do three consecutive
 * dot-separated parts have a token's lengths? */
static int run_is_token(const char *s, size_t n)
{
    size_t len[64];
    size_t k = 0, cur = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (k == sizeof len / sizeof *len)
                break;
            len[k++] = cur;
            cur = 0;
        } else {
            cur++;
        }
    }
    for (size_t i = 0; i + 2 < k; i++)
        if (len[i] >= 16 && len[i + 1] >= 4 && len[i + 1] <= 12 && len[i + 2] >= 20)
            return 1;
    return 0;
}

/* A Slack token: "xox" + a type letter + '-' (bot, user, app-config...)
 * or "xapp-", then at least 10 more characters. */
static int run_is_slack_token(const char *s, size_t n)
{
    size_t head = 0;
    if (n >= 5 && strncmp(s, "xox", 3) == 0 && s[3] >= 'a' && s[3] <= 'z' && s[4] == '-')
        head = 5;
    else if (n >= 5 && strncmp(s, "xapp-", 5) == 0)
        head = 5;
    return head && n >= head + 10;
}

int dg_looks_like_token(const char *s)
{
    if (!s)
        return 0;
    const char *p = s;
    while (*p) {
        while (*p && !(b64url(*p) || *p == '.'))
            p++;
        const char *start = p;
        while (*p && (b64url(*p) || *p == '.'))
            p++;
        if (p > start && (run_is_token(start, (size_t)(p - start)) ||
                          run_is_slack_token(start, (size_t)(p - start))))
            return 1;
    }
    return 0;
}

/* Does path match pattern ("*" = one whole key or [i])? */
static int path_match(const char *pat, const char *path)
{
    while (*pat && *path) {
        if (*pat == '*') {
            pat++;
            while (*path && *path != '.' && *path != '[')
                path++;
            continue;
        }
        if (*pat != *path)
            return 0;
        pat++;
        path++;
    }
    return !*pat && !*path;
}

static int skipped(const char *const *skip, const char *path)
{
    for (; skip && *skip; skip++)
        if (path_match(*skip, path))
            return 1;
    return 0;
}

static int find(const json_t *j, const char *path, const char *const *skip, char *where,
                size_t where_len, int *is_key)
{
    char sub[512];
    if (json_is_string(j) && dg_looks_like_token(json_string_value(j))) {
        snprintf(where, where_len, "%s", path);
        *is_key = 0;
        return 1;
    }
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) {
            if (dg_looks_like_token(k)) {
                snprintf(where, where_len, "%s", path);
                *is_key = 1;
                return 1;
            }
            snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", k);
            if (!skipped(skip, sub) && find(v, sub, skip, where, where_len, is_key))
                return 1;
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach((json_t *)j, i, v) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            if (!skipped(skip, sub) && find(v, sub, skip, where, where_len, is_key))
                return 1;
        }
    }
    return 0;
}

int dg_json_find_token(const json_t *root, const char *const *skip, char *where, size_t where_len,
                       int *is_key)
{
    char dummy[1];
    if (!where || !where_len) {
        where = dummy;
        where_len = sizeof dummy;
    }
    where[0] = '\0';
    *is_key = 0;
    return find(root, "", skip, where, where_len, is_key);
}
