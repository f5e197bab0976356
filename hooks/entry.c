/*
 * entry.c -- the exported entry point, init and shutdown.
 *
 * The top of the plugin: init turns the host's oc_host_api into the core's
 * host-call table (host_api.h), builds the core with one call (dg_core_new)
 * and registers the hooks and tools through it; shutdown frees the core.
 */
#include <stdio.h>

#include "openclaw/plugin.h"
#include "log_level.h"
#include "status.h"
#include "core.h"
#include "host_api.h"
#include "register.h"

/* The parts below the host boundary return dg_status and log at
 * dg_log_level; the hooks hand both to the host unchanged. */
#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(DG_OK, OC_OK) && SAME(DG_ERR_INVALID, OC_ERR_INVALID) &&
                   SAME(DG_ERR_NOT_FOUND, OC_ERR_NOT_FOUND) && SAME(DG_ERR_DENIED, OC_ERR_DENIED) &&
                   SAME(DG_ERR_CONFLICT, OC_ERR_CONFLICT) && SAME(DG_ERR_IO, OC_ERR_IO) &&
                   SAME(DG_ERR_NOMEM, OC_ERR_NOMEM) &&
                   SAME(DG_ERR_UNSUPPORTED, OC_ERR_UNSUPPORTED) &&
                   SAME(DG_ERR_INTERNAL, OC_ERR_INTERNAL),
               "common/status.h and the ABI's oc_status must agree");
_Static_assert(SAME(DG_LOG_DEBUG, OC_LOG_DEBUG) && SAME(DG_LOG_INFO, OC_LOG_INFO) &&
                   SAME(DG_LOG_WARN, OC_LOG_WARN) && SAME(DG_LOG_ERROR, OC_LOG_ERROR),
               "common/log_level.h and the ABI's log levels must agree");
#undef SAME

#ifndef DG_VERSION
#define DG_VERSION "0.0.0"
#endif

static int dg_init(const oc_host_api *api, const json_t *config, void **state, char *err,
                   size_t err_len);
static void dg_shutdown(void *state);

static const oc_plugin dirigent_plugin = {
    .abi_major = OC_ABI_MAJOR,
    /* 0, not OC_ABI_MINOR: the plugin needs only ABI 1.0 (a 1.0 host refuses
     * a plugin of a higher minor) and uses the 1.1 functions when the host's
     * oc_host_api has them (OC_HOST_API_HAS). */
    .abi_minor = 0,
    .struct_size = sizeof(oc_plugin),
    .id = "dirigent",
    .version = DG_VERSION,
    .init = dg_init,
    .shutdown = dg_shutdown,
};

__attribute__((visibility("default"))) const oc_plugin *oc_plugin_entry(void);

const oc_plugin *oc_plugin_entry(void)
{
    return &dirigent_plugin;
}

/* The hooks, then the tools (abi-v1: only during init); ctx is the host's
 * oc_host_api. Init thread. */
static int attach_handlers(dg_plugin *p, void *ctx, char *err, size_t err_len)
{
    const oc_host_api *api = ctx;
    int rc = dg_register_hooks(p, api);
    if (rc) {
        snprintf(err, err_len, "dirigent: the host refused a hook registration (%s)",
                 oc_status_name(rc));
        return rc;
    }
    if ((rc = dg_config_require_no_reply(&p->cfg, p->claim_hooks, err, err_len)))
        return rc;
    if ((rc = dg_register_tools(p, api)))
        snprintf(err, err_len, "dirigent: the host refused a tool registration (%s)",
                 oc_status_name(rc));
    return rc;
}

static int dg_init(const oc_host_api *api, const json_t *config, void **state, char *err,
                   size_t err_len)
{
    char scratch[8];
    if (!err || err_len == 0) {
        err = scratch;
        err_len = sizeof scratch;
    }
    err[0] = '\0';
    if (!state) {
        snprintf(err, err_len, "dirigent: init needs a place to store its state");
        return OC_ERR_INVALID;
    }
    *state = NULL;
    dg_host_calls host;
    int rc = dg_host_calls_from_api(api, &host, err, err_len);
    if (rc != DG_OK)
        return rc;
    dg_plugin *p = NULL;
    rc = dg_core_new(&host, config, attach_handlers, (void *)api, &p, err, err_len);
    *state = p;
    return rc;
}

static void dg_shutdown(void *state)
{
    dg_plugin *p = state;
    if (!p)
        return;
    dg_log(p, OC_LOG_INFO, "dirigent: shutting down");
    dg_core_free(p);
}
