/*
 * noentry.c -- fixture: a shared object that exports a function but not
 * oc_plugin_entry; the host must refuse it.
 */
#include "openclaw/plugin.h"

__attribute__((visibility("default"))) int not_a_plugin_entry(void);
int not_a_plugin_entry(void)
{
    return 42;
}
