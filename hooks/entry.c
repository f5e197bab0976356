/*
 * entry.c -- the exported entry point, init and shutdown.
 *
 * The top of the plugin: init builds the core with one call (dg_core_new)
 * and registers the hooks and tools through it; shutdown frees the core.
 */
#include <stdio.h>

#include "openclaw/plugin.h"
#include "core.h"
#include "host_sessions.h"
#include "register.h"

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

/* The hooks, then the tools (abi-v1: only during init). Init thread. */
static int attach_handlers(dg_plugin *p, char *err, size_t err_len)
{
    p->host_sessions = dg_host_sessions;
    int rc = dg_register_hooks(p);
    if (rc) {
        snprintf(err, err_len, "dirigent: the host refused a hook registration (%s)",
                 oc_status_name(rc));
        return rc;
    }
    if ((rc = dg_config_require_no_reply(&p->cfg, p->claim_hooks, err, err_len)))
        return rc;
    if ((rc = dg_register_tools(p)))
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
    dg_plugin *p = NULL;
    int rc = dg_core_new(api, config, attach_handlers, &p, err, err_len);
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
