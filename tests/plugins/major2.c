/*
 * major2.c -- fixture: a plugin built for ABI major 2. A host of major 1
 * must refuse it before calling anything but the entry point.
 */
#include "openclaw/plugin.h"

static int m2_init(const oc_host_api *api, const json_t *config, void **state, char *err,
                   size_t err_len)
{
    (void)api, (void)config, (void)err, (void)err_len;
    *state = (void *)1;
    return OC_OK;
}

static void m2_shutdown(void *state)
{
    (void)state;
}

static const oc_plugin table = {
    .abi_major = OC_ABI_MAJOR + 1,
    .abi_minor = 0,
    .struct_size = sizeof(oc_plugin),
    .id = "major2",
    .version = "2.0.0",
    .init = m2_init,
    .shutdown = m2_shutdown,
};

__attribute__((visibility("default"))) const oc_plugin *oc_plugin_entry(void);
const oc_plugin *oc_plugin_entry(void)
{
    return &table;
}
