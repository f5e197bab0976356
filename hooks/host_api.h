/*
 * host_api.h -- the core's host-call table (plugin/host_calls.h) built
 * from the host's oc_host_api: the ABI's checks and its JSON stay here.
 */
#ifndef DG_HOOKS_HOST_API_H
#define DG_HOOKS_HOST_API_H

#include <stddef.h>

#include "openclaw/plugin.h"
#include "host_calls.h"
#include "must_check.h"

/*
 * Check api (its major, its size, its required functions) and fill *out
 * with calls into it; ctx is api, borrowed: the host keeps it until
 * shutdown returns. The optional calls are NULL when api does not carry
 * them (OC_HOST_API_HAS), read once here: a host's table does not change.
 * DG_OK, or DG_ERR_INVALID / DG_ERR_UNSUPPORTED with err saying what is
 * wrong. Init thread.
 */
int dg_host_calls_from_api(const oc_host_api *api, dg_host_calls *out, char *err,
                           size_t err_len) DG_MUST_CHECK;

#endif
