/*
 * discuss_int.h -- the discussion code's private header: what its files
 * share. Only they include it:
 *   discuss.c            what they share: clears, lookups inside another
 *                        area's transaction, pieces of the messages
 *   discuss_validate.c   the checks of a channel request
 *   discuss_create.c     discord_channel_create: channel, kickoff, record
 *   discuss_callback.c   discuss-callback: the initiator's summary closes it
 *   discuss_timers.c     reminder, wrap-up request, expiry
 *   discuss_admin_close.c  an admin's forced close
 *   discuss_ledger.c     the tool-call ledger: idempotency per toolCallId
 *                        (fingerprints, stored results, calls in flight)
 *   discuss_unfinished.c a creation that died and was not repeated: undone
 *   discuss_overrides.c  the no-reply session overrides a closed channel
 *                        owes, and their re-drive
 */
#ifndef DG_DISCUSS_INT_H
#define DG_DISCUSS_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "discuss.h"
#include "errors.h"
#include "seen_set.h"
#include "chat.h"
#include "outbox.h"
#include "paths.h"
#include "store.h"
#include "store_discuss.h"
#include "store_tool_calls.h"
#include "templates.h"
#include "turns.h"
#include "turns_engine.h"
#include "utf8.h"
#include "must_check.h"

/* Overrides re-driven per batch (bounded memory; loops while progressing). */
#define OVERRIDE_BATCH 256

/* Tool-call results are kept this long (a repeat after a crash comes within
 * minutes; a gateway down for days still finds its answers). */
#define TOOL_CALL_KEEP_MS (30LL * 24 * 3600 * 1000)

#define TOOL_CREATE "discord_channel_create"
#define TOOL_CALLBACK "discuss-callback"

/*
 * A call with a toolCallId is identified by (tool, toolCallId, fingerprint).
 * The fingerprint hashes the caller and the params, so an id that a host or
 * a model reuses for a different call is not answered with another call's
 * result; a true repeat (same id, same caller, same params) is.
 */
typedef struct discuss_idem {
    const char *tool;
    const char *call_id;
    char fp[17];     /* 16 hex digits */
    char marker[32]; /* "dg-call:<16 hex>": put in the topic of the channel */
    int recovering;  /* an intent without a result was found */
} discuss_idem;

/* ---- discuss.c --------------------------------------------------------- */

/* Free the n strings of v and v itself; NULL v with n 0 is a no-op. */
void discuss_free_strv(char **v, size_t n);

/* A closed discussion's channel on Slack is archived, so nobody writes
 * there again (bots cannot delete Slack channels); on Discord the plugin's
 * closure (no model calls, the closed notice) is the lock and the channel
 * stays readable. A request: no transaction or lock may be held. Best
 * effort, logged. Any thread. */
void discuss_archive_closed(dg_plugin *p, const char *channel_id);

/* "<@a> <@b>" for the ids on pf of the agents (unknown agents left out);
 * malloc'd, the caller frees; NULL out of memory. */
char *discuss_mentions_of(const dg_config *cfg, dg_platform pf, char *const *agents, size_t n);

/* "<#id>", malloc'd, the caller frees; NULL out of memory. */
char *discuss_channel_ref(const char *id) DG_MUST_CHECK;

/* {summaryPreview} of a result: the preview (summary.h) under a line that
 * says what it is, "" when previewChars is 0 or the file is blank. The
 * caller frees; NULL when out of memory or unreadable. */
char *discuss_preview_of(const dg_plugin *p, int fd) DG_MUST_CHECK;

/* ---- discuss_ledger.c -------------------------------------------------- */

void discuss_idem_for_create(discuss_idem *ic, const dg_caller *c, const dg_channel_request *r);

void discuss_idem_for_callback(discuss_idem *ic, const dg_caller *c, const char *summary_path);

/* ic of a stored row (tool, call_id and its 16-hex fingerprint fp), marker
 * included; borrows tool and call_id. */
void discuss_idem_of_row(discuss_idem *ic, const char *tool, const char *call_id, const char *fp);

/* ---- discuss_unfinished.c ------------------------------------------------ */

/* A discussion's creation that died after its intent and that nobody
 * repeated within UNFINISHED_GRACE_MS: its channel (the noted id, else the
 * one found by name and marker) is archived (Slack) or deleted (Discord),
 * the intent forgotten, and the origin channel told (creation_undone.md).
 * Sweeper thread; platform requests outside any transaction. */
void discuss_undo_unfinished(dg_plugin *p);

/* How long a host has to repeat a creation that died before the plugin
 * undoes it (OpenClaw does not repeat a run's tool call after a restart;
 * ocgw repeats it at once). */
#define UNFINISHED_GRACE_MS (10LL * 60 * 1000)

int discuss_idem_lookup(dg_plugin *p, const discuss_idem *ic, dg_tool_call_row *row) DG_MUST_CHECK;

int discuss_inflight_claim(dg_plugin *p, const discuss_idem *ic) DG_MUST_CHECK;

void discuss_inflight_release(dg_plugin *p, const discuss_idem *ic);

/* ---- discuss_overrides.c ----------------------------------------------- */

size_t discuss_apply_pending(dg_plugin *p);

#endif
