/*
 * utf8.c -- UTF-8 counting, checking, decoding and cutting (utf8.h).
 */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

static int is_cont(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

size_t dg_utf8_count(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (!is_cont((unsigned char)*s))
            n++;
    return n;
}

/* Expected length from the lead byte alone; 0 for a byte no sequence
 * starts with. */
static size_t lead_len(unsigned char c)
{
    return c < 0x80                          ? 1
           : (c & 0xE0) == 0xC0 && c >= 0xC2 ? 2
           : (c & 0xF0) == 0xE0              ? 3
           : (c & 0xF8) == 0xF0 && c <= 0xF4 ? 4
                                             : 0;
}

size_t dg_utf8_seq_len(const char *s)
{
    const unsigned char *c = (const unsigned char *)s;
    size_t len = lead_len(c[0]);
    for (size_t k = 1; k < len; k++)
        if (!is_cont(c[k]))
            return 0;
    /* Overlong forms and surrogates are malformed too. */
    if ((len == 3 && ((c[0] == 0xE0 && c[1] < 0xA0) || (c[0] == 0xED && c[1] >= 0xA0))) ||
        (len == 4 && ((c[0] == 0xF0 && c[1] < 0x90) || (c[0] == 0xF4 && c[1] >= 0x90))))
        return 0;
    return len;
}

long dg_utf8_count_valid(const char *s)
{
    long n = 0;
    while (*s) {
        size_t len = dg_utf8_seq_len(s);
        if (!len)
            return -1;
        s += len;
        n++;
    }
    return n;
}

unsigned long dg_utf8_decode(const char *s, size_t n, size_t *len)
{
    const unsigned char *c = (const unsigned char *)s;
    size_t need = c[0] < 0x80         ? 1
                  : (c[0] >> 5) == 6  ? 2
                  : (c[0] >> 4) == 14 ? 3
                  : (c[0] >> 3) == 30 ? 4
                                      : 0;
    *len = 1;
    if (need <= 1 || need > n)
        return c[0];
    unsigned long cp = c[0] & (0x7Fu >> need);
    for (size_t i = 1; i < need; i++) {
        if (!is_cont(c[i]))
            return c[0];
        cp = (cp << 6) | (c[i] & 0x3F);
    }
    *len = need;
    return cp;
}

size_t dg_utf8_prefix(const char *s, size_t max_chars)
{
    size_t n = 0, chars = 0;
    while (s[n]) {
        if (!is_cont((unsigned char)s[n]) && chars++ == max_chars)
            break;
        n++;
    }
    return n;
}

size_t dg_utf8_char_start(const char *s, size_t i)
{
    while (i > 0 && is_cont((unsigned char)s[i]))
        i--;
    return i;
}

char *dg_utf8_valid_copy(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    const unsigned char *c = (const unsigned char *)s;
    size_t o = 0;
    while (*c) {
        size_t len = dg_utf8_seq_len((const char *)c);
        if (len) {
            memcpy(out + o, c, len);
            o += len;
            c += len;
            continue;
        }
        /* A sequence the end of the string cut short goes. */
        size_t want = lead_len(*c), k = 1;
        while (want && k < want && is_cont(c[k]))
            k++;
        if (want && !c[k])
            break;
        out[o++] = '?';
        c++;
    }
    out[o] = '\0';
    return out;
}
