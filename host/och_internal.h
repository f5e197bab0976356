/*
 * och_internal.h -- the host core's private structures, shared by host/och_*.c.
 * Not installed, not for embedders: they use ochost.h.
 *
 * Locks (never taken in the reverse order, never held across a call into
 * the log sink except reg_lock, which only readers hold across plugin calls):
 *   reg_lock   rwlock over the tool and hook registries. Readers (dispatch,
 *              tool calls) hold it while they call into plugins; writers
 *              (register_tool/on during init, removal after a failed init)
 *              hold it briefly. glibc's default rwlock prefers readers, so a
 *              handler that dispatches again does not deadlock.
 *   sess_mu    mutex over the session table and its state file.
 */
#ifndef OCH_INTERNAL_H
#define OCH_INTERNAL_H

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include "buf.h"
#include "ochost.h"

/* A "caller holds" comment, checked: trylock cannot tell which thread
 * holds mu, but never blocks, and takes nothing when it is held. */
#define OCH_ASSERT_HELD(mu) assert(pthread_mutex_trylock(mu) == EBUSY)

/* Hook ids, in the order of och_hook_names[]. */
enum {
    OCH_HOOK_MESSAGE_RECEIVED = 0,
    OCH_HOOK_BEFORE_MODEL_RESOLVE,
    OCH_HOOK_BEFORE_PROMPT_BUILD,
    OCH_HOOK_MESSAGE_SENDING,
    OCH_HOOK_AGENT_END,
    OCH_HOOK_GATEWAY_START,
    OCH_HOOK_GATEWAY_STOP,
    OCH_HOOK_BEFORE_AGENT_REPLY, /* claim hooks: refused by a host set without them */
    OCH_HOOK_REPLY_PAYLOAD_SENDING,
    OCH_HOOK_MODEL_CALL_ENDED, /* usage reports of the scripted agents' runs */
    OCH_HOOK_LLM_OUTPUT,
    OCH_HOOK_COUNT
};

extern const char *const och_hook_names[OCH_HOOK_COUNT];

/* Hook id of a name, or -1. */
int och_hook_id(const char *name);

/*
 * One discovered candidate and, once loaded, the plugin itself. The ABI's
 * opaque `oc_host` handle IS this record: each plugin gets its own, so the
 * host knows who logs or registers without trusting the plugin to say.
 */
struct oc_host {
    och_host *host;
    char *id;      /* manifest id (NULL if unusable) */
    char *dir;     /* plugin folder, absolute */
    char *version; /* table version when loaded, else manifest's */
    char *reason;  /* why not loaded */
    och_plugin_state state;
    char *library;           /* absolute path of the .so */
    json_t *contracts_tools; /* borrowed from manifest: array of names or NULL */
    json_t *contracts_hooks;
    json_t *manifest; /* owned */
    void *dl;         /* dlopen handle */
    const oc_plugin *table;
    void *state_ptr; /* the plugin's state from init */
    oc_host_api api;
    atomic_int in_init; /* register_tool / on allowed */
    atomic_int active;  /* init returned OC_OK: tools and hooks callable */
    size_t load_index;  /* order of successful init */
};
typedef struct oc_host och_plugin;

typedef struct och_entry_cfg {
    char *id;
    int enabled;
    json_t *config; /* owned; NULL: {} */
} och_entry_cfg;

typedef struct och_tool_reg {
    och_plugin *plugin;
    const oc_tool *tool; /* the plugin's, valid until its shutdown */
    json_t *parameters;  /* parsed JSON Schema, owned */
} och_tool_reg;

typedef struct och_hook_reg {
    och_plugin *plugin;
    oc_hook_fn fn;
    int priority;
    uint64_t seq; /* registration order, for stable ties */
} och_hook_reg;

typedef struct och_hook_list {
    och_hook_reg *v;
    size_t n, cap;
} och_hook_list;

typedef struct och_session {
    char *key, *agent_id, *channel_id, *thread_id; /* agent/channel NULL until touched */
    char *provider, *model;                        /* override, both or neither */
    long generation;     /* session_reset count: sessionId "<key>#<generation>" */
    int running;         /* a run is in flight (memory only) */
    int abort_requested; /* run_abort asked to stop it (memory only) */
} och_session;

struct och_host {
    /* logging: set by life-cycle functions only, read by any thread */
    och_log_fn log_fn;
    void *log_user;
    int log_min;

    /* och_host_set_claim_hooks(h, 0): `on` refuses the claim hooks */
    int no_claim_hooks;

    /* och_host_set_decide: ABI 1.2's decision model, NULL: none */
    och_decide_fn decide_fn;
    void *decide_user;

    /* config */
    int configured;
    char **load_paths;
    size_t n_load_paths;
    char **allow;
    size_t n_allow;
    char **deny;
    size_t n_deny;
    och_entry_cfg *entries;
    size_t n_entries;

    /* candidates in discovery order; loaded ones have load_index */
    och_plugin **plugins;
    size_t n_plugins, cap_plugins;
    size_t n_loaded;
    int load_done;

    /* registries */
    pthread_rwlock_t reg_lock;
    och_tool_reg *tools;
    size_t n_tools, cap_tools;
    och_hook_list hooks[OCH_HOOK_COUNT];
    uint64_t hook_seq;

    /* sessions, sorted by key */
    pthread_mutex_t sess_mu;
    och_session *sessions;
    size_t n_sessions, cap_sessions;
    char *state_path;
};

/* och_log with a va_list (och_log.c, which every other file may call). */
void och_vlog(och_host *h, int level, const char *source, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* Loader (och_loader.c): the oc_host_api functions given to plugins. */
void och_plugin_api_fill(och_plugin *p);

/* Registries (och_tools.c, och_hooks.c). register_* are called by the
 * plugin's api during its init; *_drop_plugin removes what a plugin whose
 * init failed had registered; *_free releases the registry at the end. */
int och_tools_register(och_plugin *p, const oc_tool *tool);
void och_tools_drop_plugin(och_host *h, const och_plugin *p);
void och_tools_free(och_host *h);
int och_hooks_register(och_plugin *p, const char *hook, oc_hook_fn fn, int priority);
void och_hooks_drop_plugin(och_host *h, const och_plugin *p);
void och_hooks_free(och_host *h);

/* Sessions (och_sessions.c). */
void och_sessions_free(och_host *h);

/* Config (och_config.c). */
void och_config_free(och_host *h);
const och_entry_cfg *och_config_entry(const och_host *h, const char *id);

/* Small helpers (och_util.c). */
char *och_strdup(const char *s);                        /* NULL in, NULL out; malloc'd */
char *och_path_join(const char *dir, const char *name); /* malloc'd */
int och_str_in(const char *s, char *const *list, size_t n);
/* True when a manifest contracts array (may be NULL) lists name. */
int och_json_array_has(const json_t *arr, const char *name);

#endif
