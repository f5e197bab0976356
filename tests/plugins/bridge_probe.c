/*
 * bridge_probe.c -- fixture plugin for the OpenClaw bridge's own tests
 * (bridge/openclaw/test/unit.mjs and the probe turn of run.sh).
 *
 * It echoes what the host hands it and keeps the host busy from its own
 * threads, so a bridge that converts JSON wrongly, renames a context field,
 * or deadlocks or crashes on calls from foreign threads fails loudly.
 *
 * Config (every key optional; any other key is refused like dirigent does):
 *   {"threads": n (0..8, default 1), "tickMs": n (1..1000, default 2)}
 * Tools:
 *   probe_echo   details {params, ctx}: exactly what it received
 *   probe_fail   always OC_ERR_DENIED with an error message
 *   probe_stats  details {ticks, patches, lists, lastList, seen: {hook: {event, ctx, calls}},
 *                bogusHookStatus, dupToolStatus, lateRegisterStatus}
 *   probe_host   params {call: "session_reset" | "run_abort", key}: details {offered,
 *                status}: whether the host offers that ABI 1.1 function
 *                (OC_HOST_API_HAS) and, if so, what it returned for key
 *   probe_decide params {request, threads (1..8, default 1)}: details {offered,
 *                results: [{status, answer}]}: the ABI 1.2 decide, called with
 *                request from that many threads of the probe's own at once
 *                (never from the tool's thread: the ABI forbids hook threads)
 * The text of a successful tool answer is its details as compact JSON.
 * Hooks:
 *   before_model_resolve (priority 10): {providerOverride "np", modelOverride "nm"}
 *                        when the prompt contains "silence"
 *   before_prompt_build:  {appendSystemContext "probe-context"}
 *   message_sending:      {cancel true, cancelReason "probe"} when the content
 *                         contains "forbidden"
 *   agent_end, message_received, gateway_start, gateway_stop: recorded only
 * Threads: wait for the first tool or hook call (the ABI allows host calls
 * from plugin threads only after init returned), then until shutdown: log a
 * debug line every tickMs; on the first and every 10th tick session_patch
 * "agent:probe:discord:channel:42" and sessions_list("42"). shutdown joins
 * them and logs "bridge_probe: stopped after <n> ticks".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "openclaw/plugin.h"

#define BP_MAX_THREADS 8

typedef struct bp_state {
    const oc_host_api *api;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go, stop;
    pthread_t threads[BP_MAX_THREADS];
    int n_threads;
    long tick_ms;
    atomic_long ticks, patches, lists;
    json_t *last_list; /* guarded by mu */
    json_t *seen;      /* guarded by mu: hook -> {event, ctx} */
    int bogus_hook_status, dup_tool_status, late_register_status;
} bp_state;

__attribute__((visibility("default"))) const oc_plugin *oc_plugin_entry(void);

static const oc_tool bp_tools[5];

static void bp_go(bp_state *s)
{
    pthread_mutex_lock(&s->mu);
    if (!s->go) {
        s->go = 1;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

/* Records a deep copy of the last event and ctx under the hook's name, and
 * how often the hook was called. */
static void bp_record(bp_state *s, const char *hook, const json_t *event, const json_t *ctx)
{
    json_t *e = json_deep_copy(event), *c = json_deep_copy(ctx);
    pthread_mutex_lock(&s->mu);
    json_int_t calls =
        json_integer_value(json_object_get(json_object_get(s->seen, hook), "calls")) + 1;
    json_object_set_new(s->seen, hook,
                        json_pack("{s:o, s:o, s:I}", "event", e ? e : json_null(), "ctx",
                                  c ? c : json_null(), "calls", calls));
    pthread_mutex_unlock(&s->mu);
}

static void *bp_thread(void *arg)
{
    bp_state *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->go && !s->stop)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    /* register_tool after init must be refused (only allowed inside init). */
    int late = s->api->register_tool(s->api->host, &bp_tools[2]);
    pthread_mutex_lock(&s->mu);
    s->late_register_status = late;
    pthread_mutex_unlock(&s->mu);
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            break;
        long n = atomic_fetch_add(&s->ticks, 1) + 1;
        char line[64];
        snprintf(line, sizeof line, "bridge_probe: tick %ld", n);
        s->api->log(s->api->host, OC_LOG_DEBUG, line);
        if (n == 1 || n % 10 == 0) {
            if (s->api->session_patch(s->api->host, "agent:probe:discord:channel:42", "np", "nm") ==
                OC_OK)
                atomic_fetch_add(&s->patches, 1);
            json_t *list = s->api->sessions_list(s->api->host, "42");
            if (list) {
                atomic_fetch_add(&s->lists, 1);
                pthread_mutex_lock(&s->mu);
                json_decref(s->last_list);
                s->last_list = list;
                pthread_mutex_unlock(&s->mu);
            }
        }
        struct timespec ts = {s->tick_ms / 1000, (s->tick_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* A tool answer whose text is the details as JSON (so a model, and a test
 * reading what the model was sent, sees them too). Steals details. */
static int bp_answer(json_t *details, json_t **result)
{
    char *text = details ? json_dumps(details, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    *result = text ? json_pack("{s:[{s:s, s:s}], s:o}", "content", "type", "text", "text", text,
                               "details", details)
                   : NULL;
    if (!*result)
        json_decref(details);
    free(text);
    return *result ? OC_OK : OC_ERR_NOMEM;
}

static int bp_echo(void *state, const json_t *params, const json_t *ctx, json_t **result)
{
    bp_state *s = state;
    bp_go(s);
    return bp_answer(json_pack("{s:O, s:O}", "params", params, "ctx", ctx), result);
}

static int bp_fail(void *state, const json_t *params, const json_t *ctx, json_t **result)
{
    (void)params;
    (void)ctx;
    bp_go(state);
    *result = json_pack("{s:{s:s, s:s}}", "error", "code", "OC_ERR_DENIED", "message",
                        "probe_fail always refuses; call probe_echo instead");
    return OC_ERR_DENIED;
}

static int bp_stats(void *state, const json_t *params, const json_t *ctx, json_t **result)
{
    (void)params;
    (void)ctx;
    bp_state *s = state;
    bp_go(s);
    pthread_mutex_lock(&s->mu);
    json_t *details = json_pack(
        "{s:I, s:I, s:I, s:O, s:O, s:i, s:i, s:i}", "ticks", (json_int_t)atomic_load(&s->ticks),
        "patches", (json_int_t)atomic_load(&s->patches), "lists",
        (json_int_t)atomic_load(&s->lists), "lastList", s->last_list ? s->last_list : json_null(),
        "seen", s->seen, "bogusHookStatus", s->bogus_hook_status, "dupToolStatus",
        s->dup_tool_status, "lateRegisterStatus", s->late_register_status);
    pthread_mutex_unlock(&s->mu);
    return bp_answer(details, result);
}

/* The ABI 1.1 host calls, on demand (the bridge's session_reset/run_abort). */
static int bp_host(void *state, const json_t *params, const json_t *ctx, json_t **result)
{
    (void)ctx;
    bp_state *s = state;
    bp_go(s);
    const char *call = json_string_value(json_object_get(params, "call"));
    const char *key = json_string_value(json_object_get(params, "key"));
    int reset = call && !strcmp(call, "session_reset"), abort_ = call && !strcmp(call, "run_abort");
    if ((!reset && !abort_) || !key) {
        *result = json_pack("{s:{s:s, s:s}}", "error", "code", "OC_ERR_INVALID", "message",
                            "probe_host: call must be session_reset or run_abort, key a string");
        return OC_ERR_INVALID;
    }
    int offered =
        reset ? OC_HOST_API_HAS(s->api, session_reset) : OC_HOST_API_HAS(s->api, run_abort);
    int rc = !offered ? OC_ERR_UNSUPPORTED
             : reset  ? s->api->session_reset(s->api->host, key)
                      : s->api->run_abort(s->api->host, key);
    return bp_answer(json_pack("{s:b, s:i}", "offered", offered, "status", rc), result);
}

/* One decide call on a thread of the probe's own. */
typedef struct bp_decide_call {
    const oc_host_api *api;
    const json_t *request;
    int status;
    json_t *answer;
    pthread_t thread;
} bp_decide_call;

static void *bp_decide_thread(void *arg)
{
    bp_decide_call *c = arg;
    c->status = c->api->decide(c->api->host, c->request, &c->answer);
    return NULL;
}

/* The ABI 1.2 host call: decide from `threads` plugin threads at once; the
 * tool's own thread only waits for them (the main thread stays free). */
static int bp_decide(void *state, const json_t *params, const json_t *ctx, json_t **result)
{
    (void)ctx;
    bp_state *s = state;
    bp_go(s);
    const json_t *request = json_object_get(params, "request");
    json_t *jthreads = json_object_get(params, "threads");
    json_int_t n = jthreads ? json_integer_value(jthreads) : 1;
    if (!request || n < 1 || n > BP_MAX_THREADS) {
        *result = json_pack("{s:{s:s, s:s}}", "error", "code", "OC_ERR_INVALID", "message",
                            "probe_decide: request is required, threads 1..8");
        return OC_ERR_INVALID;
    }
    int offered = OC_HOST_API_HAS(s->api, decide);
    json_t *results = json_array();
    bp_decide_call calls[BP_MAX_THREADS] = {0};
    int started = 0;
    for (int i = 0; offered && i < n; i++) {
        calls[i] = (bp_decide_call){.api = s->api, .request = request, .status = OC_ERR_INTERNAL};
        if (pthread_create(&calls[i].thread, NULL, bp_decide_thread, &calls[i]) != 0)
            break;
        started++;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(calls[i].thread, NULL);
        json_array_append_new(results, json_pack("{s:i, s:o}", "status", calls[i].status, "answer",
                                                 calls[i].answer ? calls[i].answer : json_null()));
    }
    return bp_answer(json_pack("{s:b, s:o}", "offered", offered, "results", results), result);
}

static int bp_model_resolve(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    bp_state *s = state;
    bp_go(s);
    bp_record(s, "before_model_resolve", event, ctx);
    const char *prompt = json_string_value(json_object_get(event, "prompt"));
    if (prompt && strstr(prompt, "silence"))
        *result = json_pack("{s:s, s:s}", "providerOverride", "np", "modelOverride", "nm");
    return OC_OK;
}

static int bp_prompt_build(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    bp_state *s = state;
    bp_go(s);
    bp_record(s, "before_prompt_build", event, ctx);
    *result = json_pack("{s:s}", "appendSystemContext", "probe-context");
    return OC_OK;
}

static int bp_sending(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    bp_state *s = state;
    bp_go(s);
    bp_record(s, "message_sending", event, ctx);
    const char *content = json_string_value(json_object_get(event, "content"));
    if (content && strstr(content, "forbidden"))
        *result = json_pack("{s:b, s:s}", "cancel", 1, "cancelReason", "probe");
    return OC_OK;
}

static int bp_observe(bp_state *s, const char *hook, const json_t *event, const json_t *ctx)
{
    bp_go(s);
    bp_record(s, hook, event, ctx);
    return OC_OK;
}

static int bp_agent_end(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    (void)result;
    return bp_observe(state, "agent_end", event, ctx);
}

static int bp_received(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    (void)result;
    return bp_observe(state, "message_received", event, ctx);
}

static int bp_gw_start(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    (void)result;
    return bp_observe(state, "gateway_start", event, ctx);
}

static int bp_gw_stop(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    (void)result;
    return bp_observe(state, "gateway_stop", event, ctx);
}

static const oc_tool bp_tools[5] = {
    {sizeof(oc_tool), "probe_echo", "Echo the params and the trusted context (bridge test)",
     "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}", bp_echo},
    {sizeof(oc_tool), "probe_fail", "Always refuses (bridge test)",
     "{\"type\":\"object\",\"properties\":{}}", bp_fail},
    {sizeof(oc_tool), "probe_stats", "Counters of the probe's own threads (bridge test)",
     "{\"type\":\"object\",\"properties\":{}}", bp_stats},
    {sizeof(oc_tool), "probe_host", "Call an ABI 1.1 host function (bridge test)",
     "{\"type\":\"object\",\"properties\":{\"call\":{\"type\":\"string\"},"
     "\"key\":{\"type\":\"string\"}}}",
     bp_host},
    {sizeof(oc_tool), "probe_decide", "Call the ABI 1.2 decide from plugin threads (bridge test)",
     "{\"type\":\"object\",\"properties\":{\"request\":{\"type\":\"object\"},"
     "\"threads\":{\"type\":\"integer\"}}}",
     bp_decide},
};

static void bp_free(bp_state *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->n_threads; i++)
        pthread_join(s->threads[i], NULL);
    json_decref(s->last_list);
    json_decref(s->seen);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static int bp_init(const oc_host_api *api, const json_t *config, void **state, char *err,
                   size_t err_len)
{
    long threads = 1, tick_ms = 2;
    const char *key;
    json_t *v;
    if (config && !json_is_object(config)) {
        snprintf(err, err_len, "bridge_probe: config must be an object");
        return OC_ERR_INVALID;
    }
    json_object_foreach((json_t *)config, key, v) {
        if (strcmp(key, "threads") == 0 && json_is_integer(v) && json_integer_value(v) >= 0 &&
            json_integer_value(v) <= BP_MAX_THREADS)
            threads = (long)json_integer_value(v);
        else if (strcmp(key, "tickMs") == 0 && json_is_integer(v) && json_integer_value(v) >= 1 &&
                 json_integer_value(v) <= 1000)
            tick_ms = (long)json_integer_value(v);
        else {
            snprintf(err, err_len, "bridge_probe: unknown or invalid config key \"%s\"", key);
            return OC_ERR_INVALID;
        }
    }
    bp_state *s = calloc(1, sizeof *s);
    if (!s)
        return OC_ERR_NOMEM;
    s->api = api;
    s->tick_ms = tick_ms;
    s->seen = json_object();
    s->late_register_status = 1; /* not tried yet */
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    int rc = OC_OK;
    for (size_t i = 0; i < sizeof bp_tools / sizeof bp_tools[0] && rc == OC_OK; i++)
        rc = api->register_tool(api->host, &bp_tools[i]);
    s->dup_tool_status = api->register_tool(api->host, &bp_tools[0]);
    struct {
        const char *hook;
        oc_hook_fn fn;
        int priority;
    } hooks[] = {
        {"before_model_resolve", bp_model_resolve, 10},
        {"before_prompt_build", bp_prompt_build, 0},
        {"message_sending", bp_sending, 0},
        {"agent_end", bp_agent_end, 0},
        {"message_received", bp_received, 0},
        {"gateway_start", bp_gw_start, 0},
        {"gateway_stop", bp_gw_stop, 0},
    };
    for (size_t i = 0; i < sizeof hooks / sizeof hooks[0] && rc == OC_OK; i++)
        rc = api->on(api->host, hooks[i].hook, hooks[i].fn, hooks[i].priority);
    s->bogus_hook_status = api->on(api->host, "no_such_hook", bp_agent_end, 0);
    if (rc != OC_OK) {
        snprintf(err, err_len, "bridge_probe: the host refused a registration (%s)",
                 oc_status_name(rc));
        bp_free(s);
        return rc;
    }
    for (long i = 0; i < threads; i++) {
        if (pthread_create(&s->threads[i], NULL, bp_thread, s) != 0) {
            snprintf(err, err_len, "bridge_probe: cannot start thread %ld", i);
            bp_free(s);
            return OC_ERR_INTERNAL;
        }
        s->n_threads++;
    }
    api->log(api->host, OC_LOG_INFO, "bridge_probe: started");
    *state = s;
    return OC_OK;
}

static void bp_shutdown(void *state)
{
    bp_state *s = state;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->n_threads; i++)
        pthread_join(s->threads[i], NULL);
    s->n_threads = 0;
    char line[96];
    snprintf(line, sizeof line, "bridge_probe: stopped after %ld ticks",
             (long)atomic_load(&s->ticks));
    s->api->log(s->api->host, OC_LOG_INFO, line);
    bp_free(s);
}

static const oc_plugin bp_plugin = {
    .abi_major = OC_ABI_MAJOR,
    .abi_minor =
        0, /* needs ABI 1.0 only; the later functions are optional (probe_host, probe_decide) */
    .struct_size = sizeof(oc_plugin),
    .id = "bridge_probe",
    .version = "0.0.1",
    .init = bp_init,
    .shutdown = bp_shutdown,
};

const oc_plugin *oc_plugin_entry(void)
{
    return &bp_plugin;
}
