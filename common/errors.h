/*
 * errors.h -- writing an actionable error sentence for the caller.
 *
 * Errors cross module boundaries as a dg_status (status.h)
 * plus a sentence in a caller-supplied buffer that names the field and the
 * rule and says what to do next.
 */
#ifndef DG_ERRORS_H
#define DG_ERRORS_H

#include <stddef.h>

/* Format the sentence into err (truncated to err_len; nothing when err is
 * NULL or err_len is 0) and return status, so callers can write
 * `return dg_fail(err, n, DG_ERR_INVALID, "...", ...);`. Any thread. */
int dg_fail(char *err, size_t err_len, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
