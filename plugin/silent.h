/*
 * silent.h -- is a reply the silent token? (OpenClaw rules,
 * shared/reference/openclaw.md "Silent replies".)
 *
 * A reply is silent when it is only the token NO_REPLY: case-insensitive,
 * surrounding white space and punctuation ignored (markdown emphasis, code
 * fences, quotes, a trailing full stop), the token repeated (on one line or
 * several), a JSON string "NO_REPLY", or an envelope {"action":"NO_REPLY"}.
 * A reply that is one code fence (with a language tag or not) or one inline
 * code span is judged by what it holds, so a fenced envelope is silent too;
 * a markdown-escaped "NO\_REPLY" is the token. Anything else in the text
 * (another word, an emoji) makes it speech.
 *
 * A run's outcome also looks at its tool calls: a run that called tools
 * and said nothing (or only the token) acted -- it is NOT silent, so a
 * channel never falls dormant because an agent was busy.
 *
 * Pure functions; any thread.
 */
#ifndef DG_SILENT_H
#define DG_SILENT_H

#include <stddef.h>

#define DG_SILENT_TOKEN "NO_REPLY"

/* 1 when text (NUL-terminated, UTF-8) is only the silent token; 0 for
 * speech, for NULL and for text without any token (e.g. "" or "..."). */
int dg_silent_text(const char *text);

typedef enum dg_run_outcome {
    DG_RUN_SPOKE = 0,  /* a message is on its way to the channel */
    DG_RUN_SILENT = 1, /* passed: NO_REPLY, or nothing at all */
    DG_RUN_ACTED = 2   /* tool calls and no message: not a pass */
} dg_run_outcome;

/*
 * Outcome of a finished run from agent_end's `output` (final assistant
 * text, NULL or "" when none) and `toolCalls`. Empty or white-space output
 * counts as silent unless tools were called. A failed run that produced
 * nothing is a pass (an agent that keeps failing must not hold the floor).
 */
dg_run_outcome dg_run_classify(const char *output, long tool_calls);

/* "spoke" / "silent" / "acted". Static string. */
const char *dg_run_outcome_name(dg_run_outcome o);

#endif
