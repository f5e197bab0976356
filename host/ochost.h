/*
 * ochost.h -- host core for native OpenClaw-style plugins (ABI of
 * include/openclaw/plugin.h).
 *
 * A gateway embeds this library to load plugin .so files the way OpenClaw
 * loads its plugins, and to drive them: tools, hooks, sessions, logging.
 * The reference gateway `ocgw` and the test suites use it; any other host
 * may too. Everything here is prefixed `och_`.
 *
 * Life cycle (one och_host per gateway):
 *
 *     och_host *h = och_host_new();
 *     och_host_set_log(h, sink, user, OC_LOG_INFO);         optional
 *     och_host_set_state_file(h, "state.json", err, n);     optional
 *     och_host_configure(h, host_config_json, base_dir, err, n);
 *     och_host_load(h);                 discovery, dlopen, init
 *     och_hook_dispatch(h, "gateway_start", ...);
 *     ... och_tool_call / och_hook_dispatch / och_session_* from any thread ...
 *     och_hook_dispatch(h, "gateway_stop", ...);
 *     och_host_free(h);                 shutdown (reverse order), dlclose
 *
 * Threading: the life-cycle functions (och_host_new, och_host_set_*,
 * och_host_configure, och_host_load, och_host_free) run on one thread and
 * never concurrently with any other call on the same host. Every other
 * function may be called from any thread at any time between the return of
 * och_host_load and the call of och_host_free, concurrently too; the
 * plugins' own threads call the session and log functions through the
 * oc_host_api the host gives them.
 *
 * Errors are oc_status codes (OC_OK or negative). Texts that explain an
 * error name the config key, file or plugin at fault and say what to do.
 *
 * JSON: jansson. "Borrowed" means the caller keeps its reference; "new
 * reference" means the caller must json_decref the value.
 */
#ifndef OCHOST_H
#define OCHOST_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "openclaw/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct och_host och_host;

/* ---- logging -------------------------------------------------------------- */

/*
 * A log sink. level is OC_LOG_*; source is the id of the plugin that logged
 * the line, or NULL for the host core itself; message is one line without a
 * trailing newline. Both strings are borrowed for the call.
 * Called from whatever thread logged: host threads and the plugins' own
 * threads, possibly several at once, so the sink must be thread-safe and
 * must not block for long. It must not call och_host_free.
 */
typedef void (*och_log_fn)(void *user, int level, const char *source, const char *message);

/*
 * The default sink: one line on stderr, "[warn] [dirigent] message" (source
 * "host" for the core). Thread-safe. Exposed so an embedder can chain to it.
 */
void och_log_stderr(void *user, int level, const char *source, const char *message);

/*
 * Route every log line (the core's and the plugins') to fn(user, ...);
 * lines below min_level (OC_LOG_*) are dropped before the sink sees them.
 * fn NULL restores och_log_stderr. Default: och_log_stderr, OC_LOG_INFO.
 * Life-cycle function (see the top of this file).
 */
void och_host_set_log(och_host *h, och_log_fn fn, void *user, int min_level);

/*
 * Log one printf-style line through the host's sink as `source` (NULL: the
 * host core). For embedders, so their lines share the plugins' sink.
 * Any thread.
 */
void och_log(och_host *h, int level, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- life cycle ----------------------------------------------------------- */

/* A new, empty host (no plugins, no sessions, stderr logging). NULL only when
 * out of memory. Release with och_host_free. */
och_host *och_host_new(void);

/*
 * Keep the session table in the JSON file at `path` (copied): it is read now
 * if it exists (a malformed file is refused, never overwritten), created now
 * if it does not (so an unwritable folder fails here, not later), and
 * rewritten atomically (temp file, fsync, rename, fsync of the folder) after
 * every change, so session overrides survive a crash or a restart of the
 * host. One process per file. Without a state file sessions live in memory.
 * Returns OC_OK, OC_ERR_IO (unreadable, unwritable, malformed: reason in
 * err), OC_ERR_INVALID (path NULL or empty), OC_ERR_NOMEM.
 * Life-cycle function; call it before och_host_load.
 */
int och_host_set_state_file(och_host *h, const char *path, char *err, size_t err_len);

/*
 * Offer the claim hooks (before_agent_reply, reply_payload_sending) to
 * plugins, or not: with on = 0 the host behaves like one written before
 * them, and a plugin's `on` with either name is refused with
 * OC_ERR_INVALID like any unknown name. Default: offered. Life-cycle
 * function; call it before och_host_load.
 */
void och_host_set_claim_hooks(och_host *h, int on);

/*
 * The host's decision model behind ABI 1.2's decide: fn(user, request,
 * answer) gets a request the core has checked (question, labels 2..32
 * unique, context, timeoutMs 1..60000) and returns OC_OK with a NEW answer
 * object, or OC_ERR_UNSUPPORTED / OC_ERR_IO; the core checks the answer
 * (a label asked, a probability in 0..1) before the plugin sees it. Called
 * on the plugin's thread that asks (never a hook thread); must bound its
 * wait by timeoutMs. NULL fn (the default): decide answers
 * OC_ERR_UNSUPPORTED ("no decision model configured"). Life-cycle
 * function; call it before och_host_load.
 */
typedef int (*och_decide_fn)(void *user, const json_t *request, json_t **answer);
void och_host_set_decide(och_host *h, och_decide_fn fn, void *user);

/* decide as a plugin calls it (the checks above, then fn). */
int och_decide(och_host *h, const json_t *request, json_t **answer);

/*
 * Read the host config (borrowed; the host copies what it keeps). Only the
 * `plugins` object is read; other top-level keys belong to the embedder and
 * are ignored:
 *
 *   plugins.load.paths            array of folders: a plugin folder (holding
 *                                 manifest.json) or a folder of plugin folders;
 *                                 relative paths are taken from base_dir (NULL:
 *                                 the current directory); each must exist
 *   plugins.allow                 array of plugin ids; if non-empty only these load
 *   plugins.deny                  array of plugin ids; never loaded (wins over allow)
 *   plugins.entries.<id>.enabled  bool, default true
 *   plugins.entries.<id>.config   object handed to the plugin's init (default {})
 *
 * Unknown keys inside `plugins` and wrong types are refused: OC_ERR_INVALID
 * with err naming the key ("plugins.entries.x.enabled: expected true or
 * false, got a string"). OC_ERR_NOMEM when out of memory. May be called
 * once, before och_host_load. Life-cycle function.
 */
int och_host_configure(och_host *h, const json_t *config, const char *base_dir, char *err,
                       size_t err_len);

/*
 * Discover and load the plugins of the configured load paths, in a fixed
 * order: load paths in config order; inside a folder of plugin folders, the
 * entries sorted by name (bytewise). For each candidate: the manifest is
 * read and checked; a duplicate id (first wins), a denied id, an id outside
 * a non-empty allow list and a disabled entry are skipped; the ABI version
 * of the manifest is checked; the library named by the manifest (next to
 * it) is dlopen'ed with RTLD_NOW|RTLD_LOCAL; the entry symbol is looked up;
 * the plugin's table is checked (ABI major equal, minor not above the
 * host's, struct_size, id equal to the manifest's, init and shutdown set);
 * init is called with plugins.entries.<id>.config. Every skip and refusal is
 * logged with its reason in words and recorded (och_plugin_get); one
 * plugin's failure never stops the others. Tools and hooks a plugin
 * registers become callable when its init has returned OC_OK.
 * Returns OC_OK when the pass ran (even if plugins were refused),
 * OC_ERR_CONFLICT if called twice, OC_ERR_NOMEM. Life-cycle function; may
 * be called without och_host_configure (then nothing is loaded).
 */
int och_host_load(och_host *h);

/*
 * Shut the loaded plugins down in reverse load order (their threads may
 * still log and patch sessions meanwhile), then dlclose them, then free the
 * host. Dispatch gateway_stop first if the plugins should hear it. NULL is
 * a no-op. Life-cycle function: nothing else may run on h concurrently or
 * afterwards.
 */
void och_host_free(och_host *h);

/* ---- what was discovered --------------------------------------------------- */

typedef enum och_plugin_state {
    OCH_PLUGIN_LOADED = 0,  /* init returned OC_OK; tools and hooks live */
    OCH_PLUGIN_DUPLICATE,   /* an earlier candidate had the same id */
    OCH_PLUGIN_DENIED,      /* listed in plugins.deny */
    OCH_PLUGIN_NOT_ALLOWED, /* plugins.allow is non-empty and lacks the id */
    OCH_PLUGIN_DISABLED,    /* plugins.entries.<id>.enabled is false */
    OCH_PLUGIN_REFUSED,     /* bad manifest, ABI mismatch, bad library or table */
    OCH_PLUGIN_FAILED       /* init returned an error */
} och_plugin_state;

/* "loaded", "duplicate", "denied", "not-allowed", "disabled", "refused",
 * "failed"; "unknown" otherwise. Static string. Any thread. */
const char *och_plugin_state_name(och_plugin_state state);

/* One discovered candidate. Strings are borrowed from the host and stay
 * valid until och_host_free. */
typedef struct och_plugin_info {
    const char *id;      /* from the manifest; NULL if it had none usable */
    const char *dir;     /* the plugin folder (absolute) */
    const char *version; /* the plugin table's version when loaded, else the manifest's, or NULL */
    och_plugin_state state;
    const char *reason; /* why it is not loaded, in words; NULL when loaded */
} och_plugin_info;

/* Number of candidates seen by och_host_load, in discovery order. Any thread. */
size_t och_plugin_count(const och_host *h);

/* Candidate i (discovery order) into *out. OC_OK, or OC_ERR_NOT_FOUND when
 * i is out of range. Any thread. */
int och_plugin_get(const och_host *h, size_t i, och_plugin_info *out);

/* State of the candidate with this id (the first one seen), or -1 when no
 * candidate has it. Any thread. */
int och_plugin_state_of(const och_host *h, const char *id);

/* ---- tools ------------------------------------------------------------------- */

/*
 * Call the tool `name` with params (the model's, untrusted) and ctx (the
 * trusted tool context the host built: agentId, sessionKey, workspaceDir,
 * channelId, threadId?, ...). Both borrowed; NULL means {}.
 * *result always receives a new reference to a well-formed result, which
 * the caller decrefs:
 *   OC_OK:    {"content":[{"type":"text","text":...}],"details":{...}}
 *   negative: {"error":{"code":"<oc_status_name>","message":"..."}}
 * An unknown tool gives OC_ERR_NOT_FOUND. A tool that breaks the contract
 * (OC_OK without a result, a malformed result, an error without a message,
 * a status that is not an oc_status) is logged at error level and turned
 * into an error result; the host keeps running. Returns the (normalised)
 * status. Any thread, concurrently; blocks as long as the tool does.
 */
int och_tool_call(och_host *h, const char *name, const json_t *params, const json_t *ctx,
                  json_t **result);

/* The registered tools: a new reference to an array of {name, description,
 * parameters (JSON Schema object), plugin}, in registration order. NULL
 * only when out of memory. Any thread. */
json_t *och_tools_list(och_host *h);

/*
 * A new error result {"error":{"code":oc_status_name(status),"message":...}}
 * for status (printf-style message). The caller decrefs it; NULL only when
 * out of memory. Any thread.
 */
json_t *och_error_result(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- hooks --------------------------------------------------------------------- */

/*
 * Hook names the host dispatches (OpenClaw's): message_received,
 * before_model_resolve, before_prompt_build, message_sending, agent_end,
 * gateway_start, gateway_stop, and the claim hooks before_agent_reply and
 * reply_payload_sending (unless och_host_set_claim_hooks(h, 0)). `on` with
 * any other name is refused.
 */

/*
 * Run every handler of `hook` in priority order (higher first; equal
 * priorities in registration order) with event and ctx (borrowed; NULL
 * means {}), and merge their results into *result (new reference the caller
 * decrefs, or NULL for "no result"):
 *   before_model_resolve  {providerOverride?, modelOverride?}: per field, the
 *                         first string value in priority order wins
 *   before_prompt_build   {appendSystemContext?, prependContext?}: the string
 *                         values of all handlers joined with "\n\n" in
 *                         priority order
 *   message_sending       a {cancel:true, cancelReason} is terminal: later
 *                         handlers do not run and the result is
 *                         {cancel:true, cancelReason}; a {content} rewrites
 *                         the content the later handlers see, and the result
 *                         is {content} (the last rewrite) if no one cancelled
 *   before_agent_reply    the first {handled: true, reason?} in priority
 *                         order is terminal: later handlers do not run, the
 *                         result is {handled: true, reason} and the host
 *                         makes no model call for the run
 *   reply_payload_sending a {cancel: true, reason} is terminal (result
 *                         {cancel: true, reason}: nothing is sent); a
 *                         {payload} (an object) replaces the payload the
 *                         later handlers see, and the result is {payload}
 *                         (the last rewrite) if no one cancelled
 *   others                always NULL
 * A handler returning a negative status, or a result of the wrong shape, is
 * logged and counts as "no result". result may be NULL when the caller does
 * not want it. Returns OC_OK, OC_ERR_INVALID (unknown hook name), or
 * OC_ERR_NOMEM. Any thread, concurrently; blocks as long as the handlers do.
 */
int och_hook_dispatch(och_host *h, const char *hook, const json_t *event, const json_t *ctx,
                      json_t **result);

/* Number of live handlers of `hook` (0 for an unknown name). Any thread. */
size_t och_hook_count(och_host *h, const char *hook);

/* ---- sessions ---------------------------------------------------------------- */

/*
 * Record that a session exists (a run happened, a message was routed):
 * session_key "agent:<id>:discord:channel:<c>[:thread:<t>]", its agent, its
 * channel (the parent channel inside a thread) and thread_id (NULL outside a
 * thread). All strings copied. A new or changed session is persisted when a
 * state file is set. Returns OC_OK, OC_ERR_INVALID (NULL or empty key, agent
 * or channel; empty thread; a string that is not UTF-8), OC_ERR_IO (state
 * file write failed: nothing changed), OC_ERR_NOMEM. Any thread.
 */
int och_session_touch(och_host *h, const char *session_key, const char *agent_id,
                      const char *channel_id, const char *thread_id);

/*
 * Persistent provider/model override of a session (what the plugin's
 * session_patch does): both NULL clears it; both set (non-empty) sets it;
 * one NULL is OC_ERR_INVALID. A session not yet touched is accepted: the
 * override is kept for the key and applies when the session shows up.
 * Strings copied. Returns OC_OK, OC_ERR_INVALID (also for a string that is
 * not UTF-8), OC_ERR_IO (state file write failed: nothing changed),
 * OC_ERR_NOMEM. Any thread.
 */
int och_session_patch(och_host *h, const char *session_key, const char *provider,
                      const char *model);

/*
 * Read the override of a session: OC_OK with *provider and *model set to
 * malloc'd copies the caller frees; OC_ERR_NOT_FOUND (both set to NULL)
 * when the session has no override; OC_ERR_INVALID for NULL arguments;
 * OC_ERR_NOMEM. Any thread.
 */
int och_session_override(och_host *h, const char *session_key, char **provider, char **model);

/*
 * Sessions of a channel, every thread of it included: a new reference to an
 * array of {sessionKey, agentId, channelId, threadId?} sorted by sessionKey
 * (the caller decrefs). Only touched sessions are listed. An empty array for
 * an unknown channel or NULL; NULL only when out of memory. Any thread.
 */
json_t *och_sessions_list(och_host *h, const char *channel_id);

/*
 * ABI 1.1 session_reset: the session ends; the next run of the key is a
 * fresh session (its sessionId, och_session_id, gets a new "#<n>" suffix;
 * the override stays). Persisted like a touch. OC_OK, OC_ERR_NOT_FOUND
 * (unknown key), OC_ERR_INVALID, OC_ERR_IO (state file: nothing changed).
 * Any thread.
 */
int och_session_reset(och_host *h, const char *session_key);

/* The current sessionId of a key: the key itself until its first reset,
 * then "<key>#<resets>". malloc'd (caller frees); NULL out of memory. */
char *och_session_id(och_host *h, const char *session_key);

/*
 * Runs in flight, for ABI 1.1 run_abort: the gateway brackets a session's
 * model call with och_run_begin / och_run_end; och_run_abort marks the run
 * of a key as aborted (OC_OK) or answers OC_ERR_NOT_FOUND when the key has
 * no run in flight; och_run_end returns 1 when the run was aborted (the
 * gateway then posts nothing and reports success false). Any thread.
 */
int och_run_begin(och_host *h, const char *session_key);
int och_run_end(och_host *h, const char *session_key);
int och_run_abort(och_host *h, const char *session_key);

#ifdef __cplusplus
}
#endif

#endif /* OCHOST_H */
