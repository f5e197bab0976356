/*
 * log_defer.c -- see log_defer.h.
 *
 * Depth of "this thread must not call the host directly": > 0 inside a
 * store transaction, and for ever on a plugin-owned thread. A property of
 * the thread, not shared state: kept as the thread's value of one pthread
 * key rather than in a _Thread_local, whose dynamic TLS block a host's
 * dlclose frees while the host's threads still name it. The key is made on first
 * use and deleted when the library is unloaded; should making it fail, every
 * thread reads depth 0 and lines go to the host directly.
 */
#include "log_defer.h"

#include <pthread.h>
#include <stdint.h>

static pthread_key_t defer_key;
static pthread_once_t defer_once = PTHREAD_ONCE_INIT;
static int defer_key_ok;

static void defer_key_make(void)
{
    defer_key_ok = pthread_key_create(&defer_key, NULL) == 0;
}

__attribute__((destructor)) static void defer_key_drop(void)
{
    if (defer_key_ok)
        pthread_key_delete(defer_key);
}

static intptr_t defer_depth(void)
{
    pthread_once(&defer_once, defer_key_make);
    return defer_key_ok ? (intptr_t)pthread_getspecific(defer_key) : 0;
}

static void set_defer_depth(intptr_t d)
{
    pthread_once(&defer_once, defer_key_make);
    if (defer_key_ok)
        pthread_setspecific(defer_key, (void *)d);
}

/* Add delta to the calling thread's depth, never below 0: one
 * pthread_once and one read of the key for both (every store transaction
 * passes here twice). */
static void add_defer_depth(intptr_t delta)
{
    pthread_once(&defer_once, defer_key_make);
    if (!defer_key_ok)
        return;
    intptr_t d = (intptr_t)pthread_getspecific(defer_key) + delta;
    if (d >= 0)
        pthread_setspecific(defer_key, (void *)d);
}

void dg_log_defer_begin(void)
{
    add_defer_depth(1);
}

void dg_log_defer_end(void)
{
    add_defer_depth(-1);
}

void dg_log_own_thread(void)
{
    set_defer_depth((intptr_t)1 << 20); /* never drops to 0 on this thread */
}

int dg_log_deferred(void)
{
    return defer_depth() > 0;
}
