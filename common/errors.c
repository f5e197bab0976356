/*
 * errors.c -- see errors.h.
 */
#include "errors.h"

#include <stdarg.h>
#include <stdio.h>

int dg_fail(char *err, size_t err_len, int status, const char *fmt, ...)
{
    if (err && err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return status;
}
