/*
 * buf.c -- the growable string buffer and dg_sprintf (buf.h).
 */
#include "buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dg_buf_add(dg_buf *b, const char *add, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s)
            return -1;
        b->s = s;
        b->cap = cap;
    }
    if (n)
        memcpy(b->s + b->len, add, n);
    b->len += n;
    b->s[b->len] = '\0';
    return 0;
}

int dg_buf_adds(dg_buf *b, const char *add)
{
    return dg_buf_add(b, add, strlen(add));
}

void dg_buf_free(dg_buf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

int dg_grow(void *arrayp, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap)
        return 0;
    if (n > *cap)
        return -1; /* more in use than allocated: the caller's count is wrong */
    size_t nc = *cap ? 2 * *cap : (first ? first : 1);
    if (nc < *cap || nc > SIZE_MAX / elem)
        return -1;
    void *v;
    memcpy(&v, arrayp, sizeof v); /* the caller's T *, read as the void * it converts to */
    void *g = realloc(v, nc * elem);
    if (!g)
        return -1;
    memcpy(arrayp, &g, sizeof g);
    *cap = nc;
    return 0;
}

char *dg_sprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

size_t dg_str_join(char *out, size_t cap, const char *const *parts, size_t n)
{
    size_t at = 0;
    for (size_t i = 0; i < n && at + 1 < cap; i++) {
        if (!parts[i])
            continue;
        size_t len = strlen(parts[i]);
        if (len > cap - 1 - at)
            len = cap - 1 - at;
        memcpy(out + at, parts[i], len);
        at += len;
    }
    out[at] = '\0';
    return at;
}
