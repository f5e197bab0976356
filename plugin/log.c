/*
 * log.c -- logging through the host, and the plugin's clock.
 */
#include "dirigent.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "scrub.h"

void dg_log(const dg_plugin *p, int level, const char *fmt, ...)
{
    if (!p || !p->api || !p->api->log)
        return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    dg_scrub_secret(buf, p->cfg.moderator_token); /* also a piece of it */
    p->api->log(p->api->host, level, buf);
}

int64_t dg_wall_clock_ms(void *unused)
{
    (void)unused;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t dg_now_ms(const dg_plugin *p)
{
    if (p && p->clock)
        return p->clock(p->clock_state);
    return dg_wall_clock_ms(NULL);
}
