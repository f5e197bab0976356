/*
 * och_log.c -- the host core's log lines: level clamping and filtering, the
 * formatting, and the default sink (stderr). Every other file of the host
 * core logs through here; this file calls none of them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "och_internal.h"

static const char *level_name(int level)
{
    switch (level) {
    case OC_LOG_DEBUG: return "debug";
    case OC_LOG_INFO: return "info";
    case OC_LOG_WARN: return "warn";
    default: return "error";
    }
}

void och_log_stderr(void *user, int level, const char *source, const char *message)
{
    (void)user;
    /* One fprintf per line: stdio locks the stream, so lines from several
     * threads do not interleave. */
    fprintf(stderr, "[%s] [%s] %s\n", level_name(level), source ? source : "host",
            message ? message : "");
}

void och_vlog(och_host *h, int level, const char *source, const char *fmt, va_list ap)
{
    if (level < OC_LOG_DEBUG)
        level = OC_LOG_DEBUG;
    if (level > OC_LOG_ERROR)
        level = OC_LOG_ERROR;
    och_log_fn fn = h ? h->log_fn : och_log_stderr;
    void *user = h ? h->log_user : NULL;
    if (h && level < h->log_min)
        return;
    char buf[1024];
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(buf, sizeof buf, fmt, cp);
    va_end(cp);
    if (n >= 0 && (size_t)n < sizeof buf) {
        fn(user, level, source, buf);
        return;
    }
    char *big = NULL;
    if (vasprintf(&big, fmt, ap) >= 0 && big) {
        fn(user, level, source, big);
        free(big);
    } else {
        fn(user, level, source, buf); /* truncated beats lost */
    }
}

void och_log(och_host *h, int level, const char *source, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    och_vlog(h, level, source, fmt, ap);
    va_end(ap);
}
