/*
 * dirigent.h -- the plugin instance: what init builds and shutdown frees.
 *
 * One dg_plugin per successful init. Hooks and tools receive it as their
 * `state` pointer. Fields are set by init before any hook can run and are
 * read-only afterwards, except where a module guards its own part.
 */
#ifndef DG_DIRIGENT_H
#define DG_DIRIGENT_H

#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "openclaw/plugin.h"
#include "status.h"
#include "config.h"
#include "log_defer.h"
#include "host_calls.h"
#include "must_check.h"

typedef struct dg_store dg_store;
typedef struct dg_templates dg_templates;
typedef struct dg_chat dg_chat;
typedef struct dg_outbox dg_outbox;
typedef struct dg_turns dg_turns;
typedef struct dg_seen_set dg_seen_set;
typedef struct dg_summary_rules dg_summary_rules;

/* Injectable clock (tests move time by hand). Milliseconds since the epoch. */
typedef int64_t (*dg_clock_fn)(void *clock_state);

/* Lines waiting for the log pump (log.c). */
typedef struct dg_log_queue dg_log_queue;

typedef struct dg_plugin {
    dg_host_calls host; /* the only way to the host (host_calls.h); set by
                           dg_core_new, read-only afterwards */
    dg_log_queue *logq; /* lines of threads that must not call the host */
    dg_config cfg;
    dg_store *store;
    dg_templates *templates;
    dg_chat *chat;           /* the Discord moderator; NULL when no Discord moderator token is
                          configured */
    dg_outbox *outbox;       /* Discord's outbox dispatcher; NULL when chat is NULL */
    dg_chat *slack;          /* the Slack moderator; NULL without DIRIGENT_SLACK_MODERATOR_TOKEN */
    dg_outbox *slack_outbox; /* Slack's outbox dispatcher; NULL when slack is NULL */
    /* Set by dg_set_clock (tests move time by hand, from their own thread
     * while the plugin's threads read it): state is stored before the
     * function, which is read first. */
    _Atomic(dg_clock_fn) clock;
    _Atomic(void *) clock_state;
    struct dg_judge *judge;          /* who speaks next (judge_plugin.h); NULL: no judge */
    dg_turns *turns;                 /* turn engine: created by dg_core_new, freed
                                 by dg_core_free */
    int claim_hooks;                 /* the host took before_agent_reply and
                                 reply_payload_sending (set at init) */
    atomic_int settled;              /* set by the first hook or tool call after init */
    pthread_mutex_t inflight_mu;     /* guards inflight */
    struct dg_inflight *inflight;    /* tool calls with a toolCallId running now
                                     (discuss_ledger.c); empty when none runs */
    dg_seen_set *closed_seen;        /* sessions already recorded in a closed discussion
                                 channel (discuss_overrides.c); created by init, freed by
                                 shutdown; NULL (hand-built plugins in tests):
                                 the store is asked on every call */
    dg_summary_rules *summary_rules; /* discussion.summaryTemplate's headings (summary.h);
                                 NULL: none configured. Read-only after init */
} dg_plugin;

/* The moderator's client on platform (borrowed from p), NULL when that
 * platform has no moderator token. Any thread. */
static inline dg_chat *dg_plugin_chat(const dg_plugin *p, dg_platform platform)
{
    return platform == DG_PLATFORM_SLACK     ? p->slack
           : platform == DG_PLATFORM_DISCORD ? p->chat
                                             : NULL;
}

/*
 * Work that needs the host fully up: called first by every hook and tool
 * (through DG_SETTLED_HANDLER), it runs once, on the first call after init
 * returned. abi-v1 allows session_patch/sessions_list only between the
 * return of init and the return of shutdown, so effects a previous run owed
 * (session overrides of closed discussions) are re-driven here, not in
 * init. Any thread; concurrent first calls do not wait for each other.
 */
void dg_plugin_settle(dg_plugin *p);

/* Defines `static int name(...)` that settles the plugin, then calls fn:
 * what hooks and tools register with the host. */
#define DG_SETTLED_HANDLER(name, fn)                                                               \
    static int name(void *state, const json_t *in, const json_t *ctx, json_t **result)             \
    {                                                                                              \
        dg_plugin_settle(state);                                                                   \
        return fn(state, in, ctx, result);                                                         \
    }

/* ---- clock.c ---- */

/* Current time in ms from the plugin's clock (real time unless a test set it). */
int64_t dg_now_ms(const dg_plugin *p);

/* Make p's clock fn(state) (NULL fn: the wall clock). Any thread, at any
 * time: a reader sees the old clock or the new one whole. */
void dg_set_clock(dg_plugin *p, dg_clock_fn fn, void *state);

/* Real wall clock, the default dg_clock_fn. */
int64_t dg_wall_clock_ms(void *unused);

/*
 * Log through the host at OC_LOG_*; printf-style. The moderator token is
 * scrubbed from the text before it leaves (defence in depth: no code path
 * should format it anyway). Any thread; p may be NULL (then nothing).
 */
void dg_log(const dg_plugin *p, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Which threads log through the queue (log.c says why): a plugin-owned
 * thread calls dg_log_own_thread() once when it starts; the store brackets
 * each transaction with dg_log_defer_begin()/dg_log_defer_end(). Lines of
 * such threads are delivered by the log pump, in order, from the first hook
 * or tool call after init on (abi-v1: no host call from a plugin thread
 * before init returned); before that they wait in the queue. Other threads
 * hand their lines to the host directly. Declared in log_defer.h.
 */
/* The queue of p (p->logq): DG_OK or DG_ERR_NOMEM. Init thread. */
int dg_log_queue_new(dg_log_queue **out) DG_MUST_CHECK;

/* Start the pump (once; later calls do nothing). DG_OK or DG_ERR_NOMEM.
 * Called by the first hook or tool call after init. */
int dg_log_pump_start(dg_plugin *p) DG_MUST_CHECK;

/* Stop the pump, deliver what is left from the calling thread and free the
 * queue (p->logq = NULL). After every other plugin thread has ended.
 * Shutdown thread. */
void dg_log_queue_free(dg_plugin *p);

#endif
