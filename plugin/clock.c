/*
 * clock.c -- the plugin's clock: the wall clock unless a test set its own
 * (dg_set_clock), read by every part that stamps or compares times.
 */
#include "dirigent.h"

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

int64_t dg_wall_clock_ms(void *unused)
{
    (void)unused;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t dg_now_ms(const dg_plugin *p)
{
    if (p) {
        dg_clock_fn fn = atomic_load_explicit(&p->clock, memory_order_acquire);
        if (fn)
            return fn(atomic_load_explicit(&p->clock_state, memory_order_relaxed));
    }
    return dg_wall_clock_ms(NULL);
}

void dg_set_clock(dg_plugin *p, dg_clock_fn fn, void *state)
{
    /* The wall clock ignores its state, so the old one with the new state is
     * right too; the new function is published after its state. */
    atomic_store_explicit(&p->clock_state, state, memory_order_relaxed);
    atomic_store_explicit(&p->clock, fn ? fn : dg_wall_clock_ms, memory_order_release);
}
