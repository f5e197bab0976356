/*
 * silent.c -- NO_REPLY detection (rules in silent.h).
 *
 * The JSON forms are recognised with jansson on the model's text only; no
 * json_t leaves this file.
 */
#include "silent.h"
#include "utf8.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

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

/* Every token of text[0..n) is NO_REPLY and there is at least one. A
 * backslash before '_' is a markdown escape ("NO\_REPLY") and belongs to
 * the token; the token is compared with the escapes taken out. */
static int tokens_silent(const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    int tokens = 0;
    while (i < n) {
        size_t len;
        unsigned long cp = dg_utf8_decode(text + i, n - i, &len);
        if (is_separator(cp) && !(cp == '\\' && i + 1 < n && s[i + 1] == '_')) {
            i += len;
            continue;
        }
        /* Collect the token without its escapes; a token this long is not
         * the silent token, however many '_' decorate it. */
        char tok[64];
        size_t k = 0;
        int too_long = 0;
        while (i < n) {
            cp = dg_utf8_decode(text + i, n - i, &len);
            if (cp == '\\' && i + 1 < n && s[i + 1] == '_') {
                i++; /* the escape goes, the '_' stays */
                continue;
            }
            if (is_separator(cp))
                break;
            for (size_t j = 0; j < len; j++) {
                if (k < sizeof tok - 1)
                    tok[k++] = (char)s[i + j];
                else
                    too_long = 1;
            }
            i += len;
        }
        size_t a = 0, b = k;
        while (a < b && tok[a] == '_')
            a++;
        while (b > a && tok[b - 1] == '_')
            b--;
        if (a == b && !too_long)
            continue; /* only underscores: decoration */
        if (too_long || b - a != strlen(DG_SILENT_TOKEN) ||
            strncasecmp(tok + a, DG_SILENT_TOKEN, b - a) != 0)
            return 0;
        tokens++;
    }
    return tokens > 0;
}

/*
 * When all of text[0..n) (white space aside) is one code fence
 * ("```lang\n...\n```") or one inline code span ("`...`"), its inside into
 * *in / *in_n; returns 1. A fenced reply is judged by what it holds, so a
 * fenced JSON envelope is the envelope.
 */
static int unfence(const char *text, size_t n, const char **in, size_t *in_n)
{
    size_t a = 0, b = n; /* text[0] is no white space: silent_span skipped it */
    while (b > a && isspace((unsigned char)text[b - 1]))
        b--;
    size_t ticks = 0;
    while (a + ticks < b && text[a + ticks] == '`')
        ticks++;
    if (ticks == 0 || b - a < 2 * ticks)
        return 0;
    for (size_t i = 0; i < ticks; i++)
        if (text[b - 1 - i] != '`')
            return 0;
    size_t p = a + ticks, q = b - ticks;
    if (ticks >= 3) {
        /* An info string (a language name) runs to the end of the line. */
        size_t r = p;
        while (r < q && (isalnum((unsigned char)text[r]) || text[r] == '-' || text[r] == '_'))
            r++;
        if (r < q && text[r] != '\n' && text[r] != '\r' && r != p)
            return 0; /* "```json {...}```" on one line: judged as text */
        if (r < q && (text[r] == '\n' || text[r] == '\r'))
            p = r;
    }
    if (p >= q || memchr(text + p, '`', q - p))
        return 0; /* empty, or several code spans */
    *in = text + p;
    *in_n = q - p;
    return 1;
}

static int silent_span(const char *text, size_t n, int depth)
{
    const char *p = text;
    while (n && isspace((unsigned char)*p)) {
        p++;
        n--;
    }
    const char *in;
    size_t in_n;
    if (depth < 3 && unfence(p, n, &in, &in_n)) {
        int r = silent_span(in, in_n, depth + 1);
        if (r >= 0)
            return r;
    }
    if (depth < 3 && n && (*p == '{' || *p == '"')) {
        json_t *j = json_loadb(p, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        if (j) {
            int r = 0, is_obj = json_is_object(j);
            if (json_is_string(j)) {
                r = silent_span(json_string_value(j), json_string_length(j), depth + 1) == 1;
            } else if (is_obj) {
                /* The envelope {"action":"NO_REPLY"}. */
                json_t *act = json_object_get(j, "action");
                r = json_is_string(act) &&
                    silent_span(json_string_value(act), json_string_length(act), depth + 1) == 1;
            }
            json_decref(j);
            if (is_obj || r)
                return r;
            /* A JSON string that is not the token: still judge it as text. */
        }
    }
    return tokens_silent(p, n);
}

int dg_silent_text(const char *text)
{
    return text ? silent_span(text, strlen(text), 0) : 0;
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
