/*
 * register.h -- what entry.c calls during init to register handlers.
 * Both run inside init only (the ABI allows register_tool/on nowhere else),
 * with the api init was given.
 */
#ifndef DG_REGISTER_H
#define DG_REGISTER_H

#include "dirigent.h"
#include "must_check.h"

/* Subscribe every hook handler (hooks/hooks.c). Returns OC_OK or the first
 * host refusal. */
int dg_register_hooks(dg_plugin *p, const oc_host_api *api) DG_MUST_CHECK;

/* Register every tool (hooks/tools.c). Returns OC_OK or the first refusal. */
int dg_register_tools(dg_plugin *p, const oc_host_api *api) DG_MUST_CHECK;

#endif
