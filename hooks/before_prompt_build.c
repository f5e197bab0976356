/*
 * before_prompt_build.c -- append the session-model text of the active
 * policy (templates session_model_channel.md / session_model_thread.md)
 * exactly once: nothing when the system prompt already carries it.
 * Event: prompt?, systemPrompt?. Result {appendSystemContext}.
 */
#include "hooks_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "templates.h"

/* text without its leading and trailing white space (length into *n): a
 * prompt that carries the text may have trimmed it. */
static const char *trimmed(const char *text, size_t *n)
{
    while (*text && isspace((unsigned char)*text))
        text++;
    size_t len = strlen(text);
    while (len && isspace((unsigned char)text[len - 1]))
        len--;
    *n = len;
    return text;
}

int dg_hook_before_prompt_build(void *state, const json_t *event, const json_t *ctx,
                                json_t **result)
{
    dg_plugin *p = state;
    (void)ctx;
    const char *name = p->cfg.session_policy == DG_POLICY_THREAD ? "session_model_thread.md"
                                                                 : "session_model_channel.md";
    const char *text = p->templates ? dg_templates_get(p->templates, name) : NULL;
    if (!text)
        return OC_OK;
    size_t n;
    const char *body = trimmed(text, &n);
    if (n == 0)
        return OC_OK;
    const char *sys = NULL;
    if (dg_json_opt_str(event, "systemPrompt", &sys))
        /* Appended all the same: without the session model the agent would
         * take itself for the only copy; at worst the text is there twice. */
        dg_log(p, OC_LOG_WARN,
               "before_prompt_build: event.systemPrompt is not a string; the "
               "session-model text is appended without checking that it is already there");
    if (sys) {
        char *needle = strndup(body, n);
        if (!needle)
            return OC_ERR_NOMEM;
        int carried = strstr(sys, needle) != NULL;
        free(needle);
        if (carried)
            return OC_OK;
    }
    *result = json_pack("{s:s%}", "appendSystemContext", body, n);
    return *result ? OC_OK : OC_ERR_NOMEM;
}
