/*
 * scrub.c -- see scrub.h.
 */
#include "scrub.h"
#include "utf8.h"

#include <string.h>

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Longest run of text starting at t that equals a piece of secret. */
static size_t longest_run(const char *t, const char *secret, size_t n)
{
    size_t best = 0;
    for (size_t j = 0; j < n && n - j > best; j++) {
        size_t l = 0;
        while (j + l < n && t[l] &&
               lower((unsigned char)t[l]) == lower((unsigned char)secret[j + l]))
            l++;
        if (l > best)
            best = l;
    }
    return best;
}

void dg_scrub_secret(char *text, const char *secret)
{
    if (!text || !secret || !*secret)
        return;
    size_t n = strlen(secret);
    size_t k = n < DG_SCRUB_MIN_RUN ? n : DG_SCRUB_MIN_RUN;
    for (char *t = text; *t;) {
        size_t l = longest_run(t, secret, n);
        if (l >= k) {
            memset(t, '*', l);
            t += l;
        } else {
            t++;
        }
    }
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = lower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The code unit of a "\u" escape (four hex digits) at s, or -1. */
static long u_escape(const char *s)
{
    if (s[0] != '\\' || s[1] != 'u')
        return -1;
    long v = 0;
    for (int i = 2; i < 6; i++) {
        int h = hexval((unsigned char)s[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static size_t put_utf8(char *o, unsigned long cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

void dg_unescape_json_text(char *text)
{
    if (!text)
        return;
    char *o = text;
    for (const char *s = text; *s;) {
        if (*s != '\\' || !s[1]) {
            *o++ = *s++;
            continue;
        }
        const char *simple = strchr("\"\\/bfnrt", s[1]);
        if (simple && s[1]) {
            static const char to[] = "\"\\/\b\f\n\r\t";
            *o++ = to[simple - "\"\\/bfnrt"];
            s += 2;
            continue;
        }
        long u = u_escape(s);
        if (u < 0) {
            *o++ = *s++;
            continue;
        }
        unsigned long cp = (unsigned long)u;
        size_t used = 6;
        if (u >= 0xD800 && u <= 0xDBFF) {
            long lo = u_escape(s + 6);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + (((unsigned long)u - 0xD800) << 10) + ((unsigned long)lo - 0xDC00);
                used = 12;
            } else {
                cp = '?';
            }
        } else if (u >= 0xDC00 && u <= 0xDFFF) {
            cp = '?';
        } else if (u == 0) {
            cp = ' ';
        }
        o += put_utf8(o, cp);
        s += used;
    }
    *o = '\0';
}

void dg_cut_for_log(char *text, size_t max_bytes)
{
    if (!text)
        return;
    size_t len = 0;
    for (unsigned char *t = (unsigned char *)text; *t; t++, len++)
        if (*t < 0x20 || *t == 0x7F)
            *t = ' ';
    if (len <= max_bytes)
        return;
    size_t cut = dg_utf8_char_start(text, max_bytes);
    memcpy(text + cut, "...", 4);
}
