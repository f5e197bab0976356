/*
 * buf.h -- a growable string buffer, growable arrays and a formatting
 * strdup, written once for every part. No state, any thread (a dg_buf or
 * an array belongs to its user).
 */
#ifndef DG_BUF_H
#define DG_BUF_H

#include <stddef.h>
#include "must_check.h"

/* A NUL-terminated string that grows as it is appended to. Start from
 * {0}; s is NULL until the first append. The owner frees s (free or
 * dg_buf_free). */
typedef struct dg_buf {
    char *s;
    size_t len;
    size_t cap;
} dg_buf;

/* Append n bytes of add (which may hold NULs) and keep s NUL-terminated.
 * 0, or -1 when out of memory (b unchanged). */
int dg_buf_add(dg_buf *b, const char *add, size_t n) DG_MUST_CHECK;

/* Append a NUL-terminated string. 0 or -1 as dg_buf_add. */
int dg_buf_adds(dg_buf *b, const char *add) DG_MUST_CHECK;

/* Free b->s and reset b to empty. */
void dg_buf_free(dg_buf *b);

/* Make room for one more element in the array whose pointer is at arrayp
 * (a T **, passed as void *): *cap elements of elem bytes are allocated,
 * the first n in use. When n == *cap the capacity doubles (or becomes
 * first). 0, or -1 when out of memory: the array and *cap unchanged, still
 * the caller's to free. */
int dg_grow(void *arrayp, size_t *cap, size_t n, size_t elem, size_t first) DG_MUST_CHECK;

/* The n strings of parts (NULL ones skipped) one after another into out,
 * cut after cap - 1 bytes as snprintf cuts; out always NUL-terminated
 * (cap > 0). Returns the length written. For hot paths a "%s%s..."
 * snprintf would cost several times as much. */
size_t dg_str_join(char *out, size_t cap, const char *const *parts, size_t n);

/* printf into a new string (malloc'd, the caller frees); NULL when out of
 * memory. */
char *dg_sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2))) DG_MUST_CHECK;

#endif
