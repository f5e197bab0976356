/*
 * host_calls.h -- every call the core makes into the host, as one table of
 * plain C functions (dg_plugin.host).
 *
 * The entry point fills it from the host's oc_host_api and keeps the JSON
 * at that edge (hooks/host_api.c); tests that build a plugin by hand give
 * it a table of their own. Nothing below hooks/ reaches the host another
 * way. Every function gets the table's ctx first.
 *
 * Threads (the ABI's rules, kept by the callers): "settled" below means
 * after init returned and until shutdown returns, from a thread that holds
 * no plugin lock (no store transaction, no engine lock). Arguments are
 * borrowed for the call; nothing a call returns is the caller's to free
 * unless it says so.
 */
#ifndef DG_HOST_CALLS_H
#define DG_HOST_CALLS_H

#include <stddef.h>
#include <stdint.h>

struct dg_session_refs; /* discuss.h */
struct dgj_answer;      /* judge.h */

/* One question for the host's decision model. Everything borrowed for the
 * call. */
typedef struct dg_host_question {
    const char *question;
    const char *const *labels; /* 2..32, unique */
    size_t n_labels;
    const char *context; /* the evidence, plain text */
    int64_t timeout_ms;  /* the host answers within it */
} dg_host_question;

typedef struct dg_host_calls {
    void *ctx; /* handed to every call; lives until the plugin is freed */
    /* One line at a dg_log_level, scrubbed already. Called only by dg_log
     * (log.c): from init on, directly from a thread that holds nothing, and
     * for plugin threads and store transactions from the log pump (the
     * queue). Required. */
    void (*log)(void *ctx, int level, const char *text);
    /* The host's sessions of channel_id into *out (cleared first; released
     * with dg_session_refs_release, the strings borrowing from the host's
     * answer until then). out->unavailable when the host could not list
     * them. DG_OK, or DG_ERR_INVALID when the host answered something that
     * is not a list: *out is then empty and the caller says so in the log.
     * Settled. Required. */
    int (*sessions)(void *ctx, const char *channel_id, struct dg_session_refs *out);
    /* Persistent provider/model override of one session. A dg_status.
     * Settled. Required. */
    int (*session_patch)(void *ctx, const char *session_key, const char *provider,
                         const char *model);
    /* End a session / abort its run in flight. A dg_status (DG_ERR_NOT_FOUND:
     * no such session / no run). Settled. NULL: the host has no such call
     * (ABI 1.0). */
    int (*session_reset)(void *ctx, const char *session_key);
    int (*run_abort)(void *ctx, const char *session_key);
    /* Ask the host's decision model: DG_OK with *out checked against the
     * labels, or a dg_status with err saying why. Settled, never on a hook
     * thread (the judge's worker: it blocks up to q->timeout_ms). NULL: the
     * host has no decision model (below ABI 1.2). */
    int (*decide)(void *ctx, const dg_host_question *q, struct dgj_answer *out, char *err,
                  size_t err_len);
} dg_host_calls;

#endif
