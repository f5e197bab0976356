/*
 * turn_test_host.h -- a small oc_host_api for the turn manager's suites and
 * benchmark: it runs the real plugin (oc_plugin_entry, in process) with a
 * config built for the test, captures the hooks the plugin registers, and
 * calls them with JSON events the way a host would. The plugin's clock is
 * the host's hand-moved clock. No moderator token: outbox rows stay
 * pending, so tests read what the moderator owes straight from the store.
 */
#ifndef DG_TURN_TEST_HOST_H
#define DG_TURN_TEST_HOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "openclaw/plugin.h"
#include "dirigent.h"

/* Agents of the test config: id -> Discord user id. Also configured:
 * echo, foxtrot, golf, hotel (user ids ...05 to ...08). */
#define TTH_ALPHA "alpha"
#define TTH_BRAVO "bravo"
#define TTH_CHARLIE "charlie"
#define TTH_DELTA "delta"
#define TTH_ALPHA_UID "100000000000000001"
#define TTH_BRAVO_UID "100000000000000002"
#define TTH_CHARLIE_UID "100000000000000003"
#define TTH_DELTA_UID "100000000000000004"
#define TTH_MOD_UID "900000000000000009" /* the moderator bot */
#define TTH_HUMAN_UID "200000000000000001"
#define TTH_BOT_UID "700000000000000001" /* a bot that is not one of ours */

typedef struct tth_hook {
    char name[40];
    oc_hook_fn fn;
    int priority;
} tth_hook;

typedef struct tth {
    oc_host_api api;
    const oc_plugin *plugin;
    void *state;            /* the plugin's dg_plugin */
    char *dir;              /* temp folder holding the database */
    char *config;           /* JSON text of the plugin config */
    char *store;            /* its member naming the store (tu_store_member) */
    _Atomic int64_t now_ms; /* the plugin's clock */
    pthread_mutex_t mu;
    tth_hook hooks[16];
    int n_hooks;
    char *log; /* "<level> <line>\n"...; owned */
    size_t log_len;
    int patches; /* session_patch calls */
    char last_patch[256];
    json_t *sessions; /* what sessions_list answers: array */
    /* ABI 1.1 (a test makes the host a 1.0 one by setting api.struct_size to
     * offsetof(oc_host_api, session_reset), then tth_restart: the plugin
     * reads the host's table at init): the keys reset / aborted, in
     * call order, each followed by '\n'; run_abort answers abort_status. */
    char resets[1024], aborts[1024];
    int abort_status;
    int reset_status; /* what session_reset answers (0: OC_OK) */
    int list_fails;   /* 1: sessions_list answers NULL (the host failed) */
    int old_host;     /* `on` refuses the claim hooks (a host before them) */
    /* Relay mode: like a host that runs host calls on one thread (the Node
     * bridge), a log call from any other thread waits until that thread is
     * no longer busy (at most 5 s, then counted in relay_timeouts). */
    int relay, main_busy, relay_timeouts;
    pthread_t main_thread;
    pthread_cond_t relay_cv;
    /* ABI 1.2 decide (tth_start_decide): the test's answer function, and
     * how often the plugin asked. */
    int (*decide_fn)(void *ud, const json_t *request, json_t **answer);
    void *decide_ud;
    _Atomic int decide_calls;
} tth;

/* What a test host's decide answers: as oc_host_api.decide, with ud. Runs
 * on the plugin's judge thread. */
typedef int (*tth_decide_fn)(void *ud, const json_t *request, json_t **answer);

/*
 * Start the plugin. policy: "channel" or "thread"; extra: more top-level
 * config members as JSON object text without braces (e.g.
 * "\"turn\":{\"timeoutSec\":30}"), or NULL. Aborts the test on failure.
 * The clock starts at 1,000,000 ms.
 */
void tth_start(tth *h, const char *policy, const char *extra);

/* As tth_start, as a host without the claim hooks when old_host is 1: its
 * `on` refuses before_agent_reply and reply_payload_sending with
 * OC_ERR_INVALID, like any unknown name. */
void tth_start_ex(tth *h, const char *policy, const char *extra, int old_host);

/* As tth_start_ex with the config's `agents` object given as JSON text
 * (NULL: the test agents above), for a suite that names its own agents. */
void tth_start_agents(tth *h, const char *policy, const char *agents, const char *extra,
                      int old_host);

/* As tth_start(h, "channel", extra) on a host with ABI 1.2's decide,
 * answered by fn(ud, ...). */
void tth_start_decide(tth *h, const char *extra, tth_decide_fn fn, void *ud);

/* As tth_start_decide with the config's `agents` object given as JSON text
 * (NULL: the test agents). */
void tth_start_agents_decide(tth *h, const char *agents, const char *extra, tth_decide_fn fn,
                             void *ud);

/* Shut the plugin down (database stays). */
void tth_stop_plugin(tth *h);

/* Shut down and start again on the same database and config. */
void tth_restart(tth *h);

/* Shut down and remove everything. */
void tth_free(tth *h);

/* The plugin instance (valid while started). */
dg_plugin *tth_plugin(tth *h);

/* Move the clock. */
void tth_advance(tth *h, int64_t ms);

/* Call hook `name` with event and ctx (borrowed). Returns the hook's status;
 * *result (may be NULL) gets its result (new reference or NULL). */
int tth_call(tth *h, const char *name, const json_t *event, const json_t *ctx, json_t **result);

/* message_received of msg_id in channel (thread may be NULL) from sender;
 * mentions: NULL-terminated user ids or NULL. Returns the hook status. */
int tth_msg(tth *h, const char *channel, const char *thread, const char *msg_id, const char *sender,
            int is_bot, const char *content, const char *const *mentions);

/* The provider of channel: "slack" for a Slack id (a capital letter
 * first), else "discord". Static. */
const char *tth_provider(const char *channel);

/* Session key of agent in channel/thread (OpenClaw format, lower case as
 * OpenClaw writes it) into buf. */
const char *tth_session_key(char *buf, size_t len, const char *agent, const char *channel,
                            const char *thread);

/* before_model_resolve for agent: 1 = routed to the no-reply model, 0 =
 * nothing returned, -1 = hook error. */
int tth_resolve(tth *h, const char *agent, const char *channel, const char *thread);

/* agent_end of agent with output and tool calls, with a runId of its own
 * (a new one per call); returns the hook status. */
int tth_end(tth *h, const char *agent, const char *channel, const char *thread, const char *output,
            long tool_calls);

/* message_sending of content by agent: 1 = cancelled, 0 = allowed, -1 error. */
int tth_send(tth *h, const char *agent, const char *channel, const char *thread,
             const char *content);

/* before_prompt_build with systemPrompt (may be NULL): the appended text
 * (malloc'd, caller frees) or NULL when nothing is appended. */
char *tth_prompt(tth *h, const char *agent, const char *channel, const char *system_prompt);

/* Moderator messages queued in the outbox (all channels when channel is
 * NULL), in order: count, and the content/channel of row i. */
int tth_outbox_count(tth *h, const char *channel);
/* Content of the i-th row (0-based) for channel (NULL: all); malloc'd or
 * NULL. *channel_out (may be NULL) gets the row's channel (malloc'd). */
char *tth_outbox_content(tth *h, const char *channel, int i, char **channel_out);

/* A complete speaker run the way a host does it: resolve, then agent_end
 * with `output` if the agent was not swapped (else "NO_REPLY"), then, for
 * non-silent output, message_sending and -- if not cancelled -- the
 * message itself (message_received from the agent's user id with msg_id).
 * Returns 1 if the agent spoke (message delivered), 0 otherwise. */
int tth_run(tth *h, const char *agent, const char *channel, const char *thread, const char *output,
            const char *msg_id);

/* Outside Check (the benchmark): failed expectations abort with a message
 * instead of failing a test. Call before tth_start. */
void tth_standalone(void);

/* Discord user id of a test agent (static string) or NULL. */
const char *tth_uid(const char *agent);

/* 1 when a log line contains needle (waits up to 5 s for lines that come
 * through the plugin's log pump). */
int tth_log_has(tth *h, const char *needle);

/* Relay mode on, the calling thread as the host's one thread, busy (as if
 * inside a synchronous call into the plugin); tth_relay_end makes it idle
 * and returns how many log calls of other threads gave up waiting. */
void tth_relay_begin(tth *h);
int tth_relay_end(tth *h);

#endif
