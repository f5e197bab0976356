/*
 * nullshutdown.c -- fixture: a table without shutdown; the host must refuse
 * it (it could never stop the plugin's threads).
 */
#include "openclaw/plugin.h"

static int ns_init(const oc_host_api *api, const json_t *config, void **state, char *err,
                   size_t err_len)
{
    (void)api, (void)config, (void)err, (void)err_len;
    *state = (void *)1;
    return OC_OK;
}

static const oc_plugin table = {
    .abi_major = OC_ABI_MAJOR,
    .abi_minor = OC_ABI_MINOR,
    .struct_size = sizeof(oc_plugin),
    .id = "nullshutdown",
    .version = "0.0.1",
    .init = ns_init,
    .shutdown = NULL,
};

__attribute__((visibility("default"))) const oc_plugin *oc_plugin_entry(void);
const oc_plugin *oc_plugin_entry(void)
{
    return &table;
}
