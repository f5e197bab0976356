/*
 * silent.c -- NO_REPLY detection (rules in silent.h).
 *
 * The JSON forms are recognised with jansson on the model's text only; no
 * json_t leaves this file.
 */
#include "silent.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

/* Decode one UTF-8 code point at s (n bytes left); *len gets its length.
 * Invalid bytes decode as themselves, length 1 (they are word characters). */
static unsigned long utf8_at(const unsigned char *s, size_t n, size_t *len)
{
    unsigned char c = s[0];
    size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (need <= 1 || need > n) {
        *len = 1;
        return c;
    }
    unsigned long cp = c & (0x7Fu >> need);
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *len = 1;
            return c;
        }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    *len = need;
    return cp;
}

/* White space and punctuation separate tokens. '_' belongs to the token
 * (NO_REPLY has one) and is trimmed from token edges instead. Besides
 * ASCII, the Unicode spaces and the punctuation a model writes around a
 * token (general punctuation, CJK full stops and brackets, full-width
 * forms) separate too. */
static int is_separator(unsigned long cp)
{
    if (cp < 0x80)
        return cp != '_' && (isspace((int)cp) || ispunct((int)cp));
    return cp == 0x00A0 || cp == 0x00AB || cp == 0x00BB || cp == 0xFEFF ||
           (cp >= 0x2000 && cp <= 0x206F) || (cp >= 0x3000 && cp <= 0x303F) ||
           (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF01 && cp <= 0xFF0F) ||
           (cp >= 0xFF1A && cp <= 0xFF20) || (cp >= 0xFF3B && cp <= 0xFF40) ||
           (cp >= 0xFF5B && cp <= 0xFF65);
}

/* Every token is NO_REPLY and there is at least one. */
static int tokens_silent(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t n = strlen(text), i = 0;
    int tokens = 0;
    while (i < n) {
        size_t len;
        unsigned long cp = utf8_at(s + i, n - i, &len);
        if (is_separator(cp)) {
            i += len;
            continue;
        }
        size_t start = i;
        while (i < n) {
            cp = utf8_at(s + i, n - i, &len);
            if (is_separator(cp))
                break;
            i += len;
        }
        size_t a = start, b = i;
        while (a < b && s[a] == '_')
            a++;
        while (b > a && s[b - 1] == '_')
            b--;
        if (a == b)
            continue; /* only underscores: decoration */
        if (b - a != strlen(DG_SILENT_TOKEN) ||
            strncasecmp((const char *)s + a, DG_SILENT_TOKEN, b - a) != 0)
            return 0;
        tokens++;
    }
    return tokens > 0;
}

static int silent_depth(const char *text, int depth)
{
    if (!text)
        return 0;
    const char *p = text;
    while (*p && isspace((unsigned char)*p))
        p++;
    if (depth < 3 && (*p == '{' || *p == '"')) {
        json_t *j = json_loads(p, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        if (j) {
            int r = 0, is_obj = json_is_object(j);
            if (json_is_string(j)) {
                r = silent_depth(json_string_value(j), depth + 1);
            } else if (is_obj) {
                /* The envelope {"action":"NO_REPLY"}. */
                json_t *a = json_object_get(j, "action");
                r = json_is_string(a) && silent_depth(json_string_value(a), depth + 1);
            }
            json_decref(j);
            if (is_obj || r)
                return r;
            /* A JSON string that is not the token: still judge it as text. */
        }
    }
    return tokens_silent(p);
}

int dg_silent_text(const char *text)
{
    return silent_depth(text, 0);
}

dg_run_outcome dg_run_classify(const char *output, long tool_calls)
{
    int said_nothing = 1;
    for (const char *p = output; p && *p; p++)
        if (!isspace((unsigned char)*p)) {
            said_nothing = 0;
            break;
        }
    if (said_nothing || dg_silent_text(output))
        return tool_calls > 0 ? DG_RUN_ACTED : DG_RUN_SILENT;
    return DG_RUN_SPOKE;
}

const char *dg_run_outcome_name(dg_run_outcome o)
{
    switch (o) {
    case DG_RUN_SPOKE: return "spoke";
    case DG_RUN_SILENT: return "silent";
    case DG_RUN_ACTED: return "acted";
    }
    return "unknown";
}
