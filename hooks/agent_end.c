/*
 * agent_end.c -- the run is over: the turn advances here, at once, not when
 * its message is later sent.
 * Event: runId?, success, output (final text, "" when it only called
 * tools), toolCalls (count). A second agent_end with the same runId for
 * the same session is ignored (turns_engine.h).
 */
#include "hooks_int.h"

int dg_hook_agent_end(void *state, const json_t *event, const json_t *ctx, json_t **result)
{
    dg_plugin *p = state;
    (void)result;
    dg_hook_session hs;
    int ok = dg_hook_decode_session(&p->cfg, ctx, &hs);
    if (ok < 0) {
        dg_log(p, OC_LOG_WARN, "agent_end: %s; the turn is not moved", hs.err);
        return OC_ERR_INVALID;
    }
    if (!ok)
        return OC_OK;
    /* A malformed event must not count as a pass: without its output the
     * outcome of the run is unknown, and a speaker's turn would move on a
     * guess. The turn timeout takes care of a run that is never reported. */
    const char *bad = NULL, *output = NULL, *run_id = NULL;
    const json_t *tc = json_object_get(event, "toolCalls");
    const json_t *okv = json_object_get(event, "success");
    long tool_calls = 0;
    if (!json_is_object(event))
        bad = "the event is not a JSON object";
    else if (!json_is_string(json_object_get(event, "output")))
        bad = "event.output is missing or not a string (the run's final text, \"\" when it "
              "only called tools)";
    else if (json_is_integer(tc) && json_integer_value(tc) >= 0)
        tool_calls = (long)json_integer_value(tc);
    else if (json_is_array(tc))
        tool_calls = (long)json_array_size(tc);
    else
        bad = "event.toolCalls is missing or not a count (an integer >= 0)";
    if (!bad && okv && !json_is_boolean(okv))
        bad = "event.success is not a boolean";
    /* The run id dedups a replayed agent_end; OpenClaw puts it in the
     * event, some hosts only in the context. */
    if (!bad && dg_json_opt_str(event, "runId", &run_id))
        bad = "event.runId is not a string (a replayed run could not be recognised)";
    if (!bad && !run_id && dg_json_opt_str(ctx, "runId", &run_id))
        bad = "ctx.runId is not a string (a replayed run could not be recognised)";
    if (bad) {
        dg_log(p, OC_LOG_WARN,
               "agent_end: %s; run of %s in channel %s ignored, the turn is not "
               "moved",
               bad, hs.s.agent_id, hs.s.channel_id);
        return OC_ERR_INVALID;
    }
    output = json_string_value(json_object_get(event, "output"));
    int success = okv ? json_is_true(okv) : 1;
    return dg_turns_run_end(p->turns, &hs.s, run_id, output, tool_calls, success);
}
