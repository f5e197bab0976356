/*
 * lock_owner.h -- the thread holding a lock, kept beside the lock so that
 * "held by the calling thread" can be asserted: a trylock that fails says
 * only that some thread holds it. The holder sets it right after taking the
 * lock and clears it right before releasing it; any thread may ask.
 */
#ifndef DG_LOCK_OWNER_H
#define DG_LOCK_OWNER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* Zeroed: no owner. */
typedef struct dg_lock_owner {
    atomic_uintptr_t thread; /* the holder's pthread_self(), 0 none */
} dg_lock_owner;

/* The calling thread as the owner keeps it (pthread_t is an integer or a
 * pointer on the systems this builds for; never 0). */
static inline uintptr_t dg_lock_owner_self(void)
{
    return (uintptr_t)pthread_self();
}

/* Only the holder writes, and a thread can read its own id back only after
 * writing it: relaxed order is enough. */
static inline void dg_lock_owner_take(dg_lock_owner *o)
{
    atomic_store_explicit(&o->thread, dg_lock_owner_self(), memory_order_relaxed);
}

static inline void dg_lock_owner_drop(dg_lock_owner *o)
{
    atomic_store_explicit(&o->thread, 0, memory_order_relaxed);
}

/* 1 when the calling thread holds the lock. */
static inline int dg_lock_owner_is_self(const dg_lock_owner *o)
{
    return atomic_load_explicit(&o->thread, memory_order_relaxed) == dg_lock_owner_self();
}

#endif
