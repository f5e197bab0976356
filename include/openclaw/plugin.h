/*
 * openclaw/plugin.h -- native plugin ABI for OpenClaw-style gateways, version 1.
 *
 * This header is the whole contract between a host (a gateway) and a native
 * plugin shared object. Hosts and plugins written by different people compile
 * against it alone. docs/abi.md of the repository specifies it in prose (each
 * hook's event, context and result); this file is the reference, with the
 * ownership and threading rules per item.
 *
 * Evolution rules (binding for every later version):
 *   - Structs start with their version fields and their size; new fields are
 *     only ever appended at the end. A reader checks struct_size before it
 *     touches a field that was added later.
 *   - A host refuses a plugin whose abi_major differs from OC_ABI_MAJOR, or
 *     whose abi_minor is above the host's. A plugin refuses a host whose
 *     abi_major differs. Both say why, in words.
 *
 * JSON values cross the boundary as jansson `json_t`. Both sides must use the
 * same jansson library (the system's libjansson.so.4); neither side may change
 * process-wide jansson state (allocators, hash seed).
 */
#ifndef OPENCLAW_PLUGIN_H
#define OPENCLAW_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OC_ABI_MAJOR 1
#define OC_ABI_MINOR 1

/* The one symbol a plugin exports; hosts look it up with dlsym(). */
#define OC_PLUGIN_ENTRY_SYMBOL "oc_plugin_entry"

/*
 * Status codes. Every function of the ABI that can fail returns one of
 * these; OC_OK is the only success. Tool results carry the name given by
 * oc_status_name() as their error "code".
 */
typedef enum oc_status {
    OC_OK = 0,
    OC_ERR_INVALID = -1,     /* bad argument, bad params, schema violation */
    OC_ERR_NOT_FOUND = -2,   /* the thing named does not exist */
    OC_ERR_DENIED = -3,      /* the caller is not allowed to do this */
    OC_ERR_CONFLICT = -4,    /* state forbids it: already closed, already exists */
    OC_ERR_IO = -5,          /* storage, network, or a remote service refused */
    OC_ERR_NOMEM = -6,       /* out of memory */
    OC_ERR_UNSUPPORTED = -7, /* not available in this build or ABI version */
    OC_ERR_INTERNAL = -8     /* a bug: an invariant did not hold */
} oc_status;

/* Name of a status ("OC_ERR_DENIED"); "OC_UNKNOWN" for other values.
 * Returns a static string: never free it. Thread-safe. */
static inline const char *oc_status_name(int status)
{
    switch (status) {
    case OC_OK: return "OC_OK";
    case OC_ERR_INVALID: return "OC_ERR_INVALID";
    case OC_ERR_NOT_FOUND: return "OC_ERR_NOT_FOUND";
    case OC_ERR_DENIED: return "OC_ERR_DENIED";
    case OC_ERR_CONFLICT: return "OC_ERR_CONFLICT";
    case OC_ERR_IO: return "OC_ERR_IO";
    case OC_ERR_NOMEM: return "OC_ERR_NOMEM";
    case OC_ERR_UNSUPPORTED: return "OC_ERR_UNSUPPORTED";
    case OC_ERR_INTERNAL: return "OC_ERR_INTERNAL";
    default: return "OC_UNKNOWN";
    }
}

/* Log levels for oc_host_api.log. */
enum { OC_LOG_DEBUG = 0, OC_LOG_INFO = 1, OC_LOG_WARN = 2, OC_LOG_ERROR = 3 };

/* Opaque handle of the host; the plugin only passes it back. */
typedef struct oc_host oc_host;

/*
 * A tool handler.
 *   state   the pointer the plugin's init stored in *state.
 *   params  borrowed for the call: arguments chosen by the model (untrusted).
 *   ctx     borrowed for the call: trusted context built by the host:
 *           agentId, sessionKey, sessionId?, workspaceDir, channelId,
 *           threadId?, accountId?, senderIsOwner?, toolCallId?.
 *           toolCallId (an addition, same ABI version; absent from older
 *           hosts): the id of this tool call, as OpenClaw passes it to
 *           execute(toolCallId, params). A host that repeats a call (e.g.
 *           after a crash, from its journal) passes the same id, so a tool
 *           with effects can answer the repeat with its first result
 *           instead of acting twice.
 *   result  out: a new reference handed to the caller, who decrefs it.
 *           On OC_OK: {"content":[{"type":"text","text":...}],"details":{...}}.
 *           On error: {"error":{"code":"<oc_status_name>","message":...}}.
 * Returns OC_OK or a negative oc_status.
 * Threads: any host thread, possibly several at once. May block on I/O
 * (storage, a bounded network call); the plugin bounds every wait.
 */
typedef int (*oc_tool_fn)(void *state, const json_t *params, const json_t *ctx, json_t **result);

/*
 * A hook handler. Same ownership and threading as oc_tool_fn; event and ctx
 * are borrowed, *result is a new reference or stays NULL ("no result").
 * Event, context and result shapes per hook are listed in docs/abi.md. A
 * negative return is logged by the host and treated as "no result". Hooks
 * decide synchronously: a result reflects every call that returned before
 * this one started.
 *
 * Hook names (host->on; an unknown name is refused with OC_ERR_INVALID):
 * message_received, before_model_resolve, before_prompt_build,
 * message_sending, agent_end, gateway_start, gateway_stop (ABI 1.0), and
 * two later additions of the same ABI version, the claim hooks (OpenClaw
 * 2026.9.x). A host without them refuses their names; a plugin must take
 * that refusal as "no claim hooks", not as a failure of init.
 *   before_agent_reply     event {cleanedBody}; ctx: the agent ctx
 *                          (agentId, sessionKey, sessionId?, channelId,
 *                          threadId?, accountId, runId?, trigger?).
 *                          Result {handled: true, reason?} or none: a
 *                          handled run makes no model call (the inbound
 *                          message stays in the agent's transcript); the
 *                          host may still offer a fallback text payload.
 *                          Merge: the first handled:true in priority order
 *                          wins; later handlers do not run.
 *   reply_payload_sending  event {payload: {text, isError?}, kind, channel?,
 *                          sessionKey?, runId?}; ctx {channelId (the
 *                          provider, e.g. "discord"), accountId,
 *                          conversationId ("channel:<id>"), sessionKey,
 *                          messageId?, senderId?, runId?}. Result
 *                          {cancel: true, reason} (nothing is sent: no
 *                          text, no typing) or {payload} (replaces it) or
 *                          none. Merge: a cancel is terminal; payload
 *                          rewrites chain like message_sending's content.
 * message_sending in OpenClaw's gateway mode has a ctx without agentId:
 * {channelId: "discord", accountId, conversationId, sessionKey}; the agent
 * is in the session key agent:<agentId>:discord:channel:<c>[:thread:<t>].
 */
typedef int (*oc_hook_fn)(void *state, const json_t *event, const json_t *ctx, json_t **result);

/*
 * A tool description, passed to register_tool. The host copies nothing but
 * may keep the pointers: the struct and every string it points to must stay
 * valid until the plugin's shutdown returns (static storage is the norm).
 */
typedef struct oc_tool {
    uint32_t struct_size;    /* sizeof(oc_tool) as the plugin compiled it */
    const char *name;        /* unique among the host's tools */
    const char *description; /* shown to the model */
    const char *parameters;  /* JSON Schema of params, as JSON text */
    oc_tool_fn execute;      /* mandatory */
} oc_tool;

/*
 * What the host offers the plugin. Handed to init; the pointer and the table
 * stay valid until shutdown returns. Every string argument is copied by the
 * host before the function returns (the plugin keeps ownership).
 */
typedef struct oc_host_api {
    uint32_t abi_major, abi_minor, struct_size;
    oc_host *host; /* pass back as the first argument */

    /* Register a tool. Only inside init. Returns OC_OK, OC_ERR_CONFLICT for a
     * duplicate name, OC_ERR_INVALID for a malformed tool. */
    int (*register_tool)(oc_host *host, const oc_tool *tool);

    /* Subscribe fn to a hook by name; higher priority runs first. Only inside
     * init. Returns OC_OK or OC_ERR_INVALID (unknown hook, NULL fn). */
    int (*on)(oc_host *host, const char *hook, oc_hook_fn fn, int priority);

    /* Persistent provider/model override of one session (like OpenClaw's
     * sessions.patch). Both NULL clears it; otherwise both must be set.
     * Any thread, may block briefly, only after init has returned (never
     * from inside init). Returns OC_OK, OC_ERR_INVALID,
     * OC_ERR_NOT_FOUND (unknown session, if the host only patches sessions
     * it holds). */
    int (*session_patch)(oc_host *host, const char *session_key, const char *provider_override,
                         const char *model_override);

    /* Sessions the host holds in a channel, all threads included: a NEW
     * reference to an array of {sessionKey, agentId, channelId, threadId?}
     * that the caller decrefs; NULL only when out of memory. Any thread,
     * only after init has returned. */
    json_t *(*sessions_list)(oc_host *host, const char *channel_id);

    /* Log one line at OC_LOG_*; any thread, never blocks for long. The
     * message is plain text without a trailing newline. Unlike the other
     * host functions, log may also be called from inside init (and from
     * plugin threads that init started): a plugin must be able to say why it
     * refuses to start. Hosts must accept it from init on. */
    void (*log)(oc_host *host, int level, const char *message);

    /* ---- ABI 1.1 (optional; a 1.0 host's struct_size ends before them) ----
     * A plugin uses one only when api->struct_size covers the field
     * (OC_HOST_API_HAS(api, field)) and the pointer is not NULL; otherwise
     * the host does not support it, and the plugin must still work. */

    /* End the session session_key: the host drops its conversation so the
     * next message for that key opens a fresh session (a new sessionId);
     * the persistent override of session_patch stays with the key. A run in
     * flight is not aborted (run_abort does that). Any thread, only after
     * init has returned. Returns OC_OK, OC_ERR_NOT_FOUND (the host holds no
     * such session), OC_ERR_IO. */
    int (*session_reset)(oc_host *host, const char *session_key);

    /* Abort the run in flight of session session_key, as an owner's stop
     * command does: it ends without posting (agent_end reports success
     * false). Any thread, only after init has returned. Returns OC_OK when a
     * run was aborted, OC_ERR_NOT_FOUND when the session has no run in
     * flight (nothing happens), OC_ERR_IO. */
    int (*run_abort)(oc_host *host, const char *session_key);

    /* ---- ABI 1.2 (optional) ----
     * Ask the host's decision model for one choice among labels (OpenClaw's
     * api.runtime.decisions.evaluate). request: borrowed
     *   {"question": string, "labels": [string, ...] (2..32, unique),
     *    "context": string (the evidence, plain text), "timeoutMs": integer 1..60000}
     * On OC_OK *answer is a NEW reference the caller decrefs:
     *   {"label": one of labels, "probability": number 0..1, "source": string,
     *    "tokensIn": integer (optional), "tokensOut": integer (optional)}
     * Blocks at most timeoutMs. Any thread but a hook thread, only after init has
     * returned. Returns OC_OK, OC_ERR_INVALID (malformed request),
     * OC_ERR_UNSUPPORTED (no decision model configured), OC_ERR_IO (timeout,
     * provider failure). */
    int (*decide)(oc_host *host, const json_t *request, json_t **answer);
} oc_host_api;

/* 1 when the host's api struct has the field (it was built against a header
 * that has it) and set it: for the optional functions of later minors. */
#define OC_HOST_API_HAS(api, field)                                                                \
    ((api)->struct_size >= offsetof(oc_host_api, field) + sizeof((api)->field) &&                  \
     (api)->field != NULL)

/*
 * The plugin's table, returned by oc_plugin_entry(). Static storage: the
 * table and its strings stay valid as long as the library is loaded.
 */
typedef struct oc_plugin {
    uint32_t abi_major, abi_minor, struct_size;
    const char *id;      /* matches the manifest id */
    const char *version; /* the plugin's own version, e.g. "0.1.0" */

    /*
     * Start the plugin. api: valid until shutdown returns. config: borrowed,
     * the plugin's config object (plugins.entries.<id>.config). On success
     * store the plugin's state in *state and return OC_OK. On failure write
     * a NUL-terminated reason that names the offending key or resource into
     * err (at most err_len bytes, truncated), leave nothing running, and
     * return a negative status. Never concurrent with any other call.
     */
    int (*init)(const oc_host_api *api, const json_t *config, void **state, char *err,
                size_t err_len);

    /* Stop: join every thread the plugin started, end or abandon every
     * transfer, free everything. Called once after a successful init, never
     * concurrently with any other call; nothing is called after it. */
    void (*shutdown)(void *state);
} oc_plugin;

/* The entry point. Returns the plugin's static table; never NULL. */
typedef const oc_plugin *(*oc_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* OPENCLAW_PLUGIN_H */
