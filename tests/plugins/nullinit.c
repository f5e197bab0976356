/*
 * nullinit.c -- fixture: a table without init; the host must refuse it.
 */
#include "openclaw/plugin.h"

static void ni_shutdown(void *state)
{
    (void)state;
}

static const oc_plugin table = {
    .abi_major = OC_ABI_MAJOR,
    .abi_minor = OC_ABI_MINOR,
    .struct_size = sizeof(oc_plugin),
    .id = "nullinit",
    .version = "0.0.1",
    .init = NULL,
    .shutdown = ni_shutdown,
};

__attribute__((visibility("default"))) const oc_plugin *oc_plugin_entry(void);
const oc_plugin *oc_plugin_entry(void)
{
    return &table;
}
