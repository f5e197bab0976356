/*
 * core.h -- the one call that builds the plugin's core, and its undoing.
 *
 * The entry point (hooks/entry.c) sits above the core: it calls
 * dg_core_new from init and dg_core_free from shutdown, and hands in the
 * registration of its hooks and tools as a function, so nothing in plugin/
 * knows the hooks.
 */
#ifndef DG_CORE_H
#define DG_CORE_H

#include <stddef.h>
#include "dirigent.h"
#include "must_check.h"

/* Registers the caller's hooks and tools once the core's parts exist and
 * before its threads start; ctx is dg_core_new's attach_ctx. DG_OK, or the
 * host's refusal with err filled in. Called once, on the init thread. */
typedef int (*dg_core_attach_fn)(dg_plugin *p, void *ctx, char *err, size_t err_len);

/*
 * Take the host-call table (copied into p->host; its ctx must outlive the
 * instance), parse config, then build templates, store,
 * Discord client and turn engine, call attach, and start the outbox
 * dispatcher and the turn timeouts. On DG_OK *out is the new instance
 * (freed by dg_core_free); on an error *out is NULL, err names the field
 * or step that failed, and nothing is left running. err must hold at
 * least one byte. Thread: the host's init.
 */
int dg_core_new(const dg_host_calls *host, const json_t *config, dg_core_attach_fn attach,
                void *attach_ctx, dg_plugin **out, char *err, size_t err_len) DG_MUST_CHECK;

/* Stop the plugin's threads and free everything of p; NULL is fine.
 * Thread: the host's shutdown (or a failed init). */
void dg_core_free(dg_plugin *p);

#endif
