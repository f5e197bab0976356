/*
 * agent_end.c -- the run is over: the turn advances here, at once, not when
 * its message is later sent (Dirigent bug 2).
 * Event: runId?, success, output (final text, "" when it only called
 * tools), toolCalls (count). A second agent_end with the same runId for
 * the same session is ignored (turns_engine.h).
 */
#include "hooks_internal.h"

int dg_hook_agent_end(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    dg_plugin *p = state;
    (void)result;
    dg_hook_session hs;
    if (!dg_hook_decode_session(ctx, &hs))
        return OC_OK;
    const json_t *tc = json_object_get(event, "toolCalls");
    long tool_calls = json_is_integer(tc) ? (long)json_integer_value(tc)
                      : json_is_array(tc) ? (long)json_array_size(tc) : 0;
    const json_t *ok = json_object_get(event, "success");
    int success = ok ? json_is_true(ok) : 1;
    /* The run id dedups a replayed agent_end; OpenClaw puts it in the
     * event, some hosts only in the context. */
    const char *run_id = dg_json_str(event, "runId");
    if (!run_id)
        run_id = dg_json_str(ctx, "runId");
    return dg_turns_run_end(p->turns, &hs.s, run_id, dg_json_str(event, "output"), tool_calls,
                            success);
}
