/*
 * minor_high.c -- fixture: a plugin that needs ABI minor OC_ABI_MINOR+1,
 * newer than the host's; the host must refuse it.
 */
#include "openclaw/plugin.h"

static int mh_init(const oc_host_api *api, const json_t *config, void **state, char *err,
                   size_t err_len)
{
    (void)api, (void)config, (void)err, (void)err_len;
    *state = (void *)1;
    return OC_OK;
}

static void mh_shutdown(void *state)
{
    (void)state;
}

static const oc_plugin table = {
    .abi_major = OC_ABI_MAJOR,
    .abi_minor = OC_ABI_MINOR + 1,
    .struct_size = sizeof(oc_plugin),
    .id = "minor_high",
    .version = "1.1.0",
    .init = mh_init,
    .shutdown = mh_shutdown,
};

__attribute__((visibility("default"))) const oc_plugin *oc_plugin_entry(void);
const oc_plugin *oc_plugin_entry(void)
{
    return &table;
}
