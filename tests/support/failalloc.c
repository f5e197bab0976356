/*
 * failalloc.c -- see failalloc.h. The __real_* functions exist only in a
 * link with -Wl,--wrap=...; they are weak here so that the bench (linked
 * without it) still links.
 */
#include "failalloc.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n) __attribute__((weak));
void *__real_calloc(size_t k, size_t n) __attribute__((weak));
void *__real_realloc(void *p, size_t n) __attribute__((weak));
char *__real_strdup(const char *s) __attribute__((weak));
char *__real_strndup(const char *s, size_t n) __attribute__((weak));

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static _Thread_local int armed; /* FA_OWN | FA_SQLITE: what counts */
static _Thread_local long count, nth;
static _Thread_local int hit;

#define FA_OWN 1 /* the wrapped functions and jansson */
#define FA_SQLITE 2

static int fail_now_of(int kind)
{
    if (!(armed & kind) || hit)
        return 0;
    if (++count == nth) {
        hit = 1;
        return 1;
    }
    return 0;
}

static int fail_now(void)
{
    return fail_now_of(FA_OWN);
}

void *__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t k, size_t n)
{
    return fail_now() ? NULL : __real_calloc(k, n);
}

void *__wrap_realloc(void *p, size_t n)
{
    return fail_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
    return fail_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
    return fail_now() ? NULL : __real_strndup(s, n);
}

/* jansson: its default functions are libc's malloc and free, so blocks
 * allocated before or after arming are freed alike. */
static void *json_alloc(size_t n)
{
    return fail_now() ? NULL : malloc(n);
}

/* SQLite: its default allocator, with a failure when armed. */
static sqlite3_mem_methods sq_orig;

static void *sq_malloc(int n)
{
    return fail_now_of(FA_SQLITE) ? NULL : sq_orig.xMalloc(n);
}

static void *sq_realloc(void *p, int n)
{
    return fail_now_of(FA_SQLITE) ? NULL : sq_orig.xRealloc(p, n);
}

void fa_install(void)
{
    static int done; /* once per process (per test in fork mode) */
    if (done)
        return;
    done = 1;
    json_set_alloc_funcs(json_alloc, free);
    /* SQLite takes SQLITE_CONFIG_* only before it is initialised (before
     * the process opened its first database); later it refuses, and its
     * allocations are simply not counted. */
    if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &sq_orig) == SQLITE_OK) {
        sqlite3_mem_methods m = sq_orig;
        m.xMalloc = sq_malloc;
        m.xRealloc = sq_realloc;
        if (sqlite3_config(SQLITE_CONFIG_MALLOC, &m) != SQLITE_OK)
            memset(&sq_orig, 0, sizeof sq_orig);
    }
}

int fa_sqlite_hooked(void)
{
    return sq_orig.xMalloc != NULL;
}

static void arm(long n, int kinds)
{
    fa_install();
    count = 0;
    nth = n;
    hit = 0;
    armed = kinds;
}

void fa_arm(long n)
{
    arm(n, FA_OWN | FA_SQLITE);
}

void fa_arm_own(long n)
{
    arm(n, FA_OWN);
}

void fa_arm_sqlite(long n)
{
    arm(n, FA_SQLITE);
}

int fa_disarm(void)
{
    armed = 0;
    return hit;
}

long fa_count(void)
{
    return count;
}

int fa_suspend(void)
{
    int was = armed;
    armed = 0;
    return was;
}

void fa_resume(int was)
{
    armed = was;
}

int fa_available(void)
{
    return __real_malloc != NULL;
}
