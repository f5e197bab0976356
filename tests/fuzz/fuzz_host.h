/*
 * fuzz_host.h -- the host side of the libFuzzer targets that drive the real
 * plugin (every hook and tool from raw JSON). One fz_host is one plugin
 * instance with everything it touches made fresh for it: a private temp
 * folder (database, workspace with a few summary files and a symlink that
 * leaves it), an in-process fake Discord on a free port (moderator token,
 * the agents as guild members, one public channel), and a hand-moved clock.
 * fz_host_stop removes all of it, so nothing carries from one input to the
 * next: a crash found by one input reproduces from that input alone.
 *
 * Invariants checked on every call (a violation aborts, which libFuzzer
 * reports as a crash): the status is OC_OK or a known negative oc_status;
 * a result is an object (tools: with "content" or "error"); the moderator
 * token never appears in a log line.
 */
#ifndef DG_FUZZ_HOST_H
#define DG_FUZZ_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "openclaw/plugin.h"

#define FZ_MAX_HOOKS 16
#define FZ_MAX_TOOLS 8
#define FZ_TOKEN "fuzz-moderator-token.Zm9vYmFy.c2VjcmV0X3Rva2VuX2Zvcl9mdXp6"
#define FZ_CHANNEL "300000000000000001" /* a public channel of the fake guild */

typedef struct fz_host fz_host;

/* Start one instance. policy: "channel" or "thread". Returns a new host
 * (free with fz_host_stop), or NULL after printing why (the harness then
 * aborts: a host that cannot start is a broken environment, not a finding). */
fz_host *fz_host_start(const char *policy);

/* Call hook `name` / tool `name` with borrowed event|params and ctx. A ctx
 * workspaceDir that is a string is replaced by the instance's workspace
 * (the host owns that field; the plugin must not be pointed at the
 * machine's files); a top-level member "$created" of ctx, event or params
 * becomes the id of the channel the fake Discord made last. Returns the status; checks the invariants above. */
int fz_host_hook(fz_host *h, const char *name, const json_t *event, const json_t *ctx);
int fz_host_tool(fz_host *h, const char *name, const json_t *params, const json_t *ctx);

/* Move the plugin's clock forward by ms (clamped to one day per call). */
void fz_host_advance(fz_host *h, int64_t ms);

/*
 * Run one fuzz input against a fresh instance: data is JSON text
 *   {"policy"?: "thread", "before"?: [step...], <main>}
 * step: {"hook": name, "event": E, "ctx": C} | {"tool": name, "params": P,
 * "ctx": C} | {"advanceMs": n}; at most 32 steps. <main> is "event"+"ctx"
 * for kind 'h' (hook `name`) or "params"+"ctx" for kind 't' (tool `name`).
 * Text that is not a JSON object is given to the target as the string
 * value of event/params (so raw bytes still reach the decoders).
 */
void fz_run_input(char kind, const char *name, const uint8_t *data, size_t size);

/* Stop the plugin and the fake Discord, remove the temp folder, free h. */
void fz_host_stop(fz_host *h);

#endif
