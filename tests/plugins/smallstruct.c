/*
 * smallstruct.c -- fixture: a table whose struct_size claims fewer bytes
 * than ABI 1.0 defines; the host must refuse it rather than read past it.
 */
#include <stddef.h>
#include "openclaw/plugin.h"

static int ss_init(const oc_host_api *api, const json_t *config, void **state, char *err,
                   size_t err_len)
{
    (void)api, (void)config, (void)err, (void)err_len;
    *state = (void *)1;
    return OC_OK;
}

static void ss_shutdown(void *state)
{
    (void)state;
}

static const oc_plugin table = {
    .abi_major = OC_ABI_MAJOR,
    .abi_minor = OC_ABI_MINOR,
    .struct_size = offsetof(oc_plugin, init),
    .id = "smallstruct",
    .version = "0.0.1",
    .init = ss_init,
    .shutdown = ss_shutdown,
};

__attribute__((visibility("default"))) const oc_plugin *oc_plugin_entry(void);
const oc_plugin *oc_plugin_entry(void)
{
    return &table;
}
