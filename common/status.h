/*
 * status.h -- the status codes every part below the host boundary returns
 * (common/, discord/, store/, plugin/). Their values are the ABI's
 * (include/openclaw/plugin.h, OC_*), so hooks/ hands a status to the host
 * unchanged; hooks/entry.c asserts that the two lists agree.
 */
#ifndef DG_STATUS_H
#define DG_STATUS_H

typedef enum dg_status {
    DG_OK = 0,
    DG_ERR_INVALID = -1,     /* bad argument, bad params, schema violation */
    DG_ERR_NOT_FOUND = -2,   /* the thing named does not exist */
    DG_ERR_DENIED = -3,      /* the caller is not allowed to do this */
    DG_ERR_CONFLICT = -4,    /* state forbids it: already closed, already exists */
    DG_ERR_IO = -5,          /* storage, network, or a remote service refused */
    DG_ERR_NOMEM = -6,       /* out of memory */
    DG_ERR_UNSUPPORTED = -7, /* not available in this build or ABI version */
    DG_ERR_INTERNAL = -8     /* a bug: an invariant did not hold */
} dg_status;

/* The name of a status as the host and the logs know it ("OC_ERR_IO":
 * the ABI's name for the same value); "OC_UNKNOWN" for other values.
 * Static storage; any thread. */
const char *dg_status_name(int status);

#endif
