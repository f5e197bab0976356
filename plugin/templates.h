/*
 * templates.h -- moderator messages and session-model texts.
 *
 * templates/NAME.md files are embedded in the .so at build time; a `templatesDir`
 * folder replaces them by file name at init. Placeholders are `{name}`
 * with name a field of dg_tpl_vars; which template receives which is a
 * table in templates.c (and README's Templates section). Substitution is
 * plain text in one pass: a value containing `{summaryPath}`, `@everyone`
 * or `<@id>` is copied as is and never expanded again. An unknown
 * placeholder in any template is an init error naming the file and name.
 */
#ifndef DG_TEMPLATES_H
#define DG_TEMPLATES_H

#include <stddef.h>
#include "must_check.h"

/* One embedded template; the generated table ends with {NULL, NULL}. */
typedef struct dg_embedded_template {
    const char *name; /* file name, e.g. "kickoff.md" */
    const char *text;
} dg_embedded_template;
extern const dg_embedded_template dg_embedded_templates[];

typedef struct dg_templates dg_templates;

/* Values for placeholders; a NULL field renders as "" . Borrowed. */
typedef struct dg_tpl_vars {
    const char *discussGuide;
    const char *initiatorMention;
    const char *participantMentions;
    const char *summaryPath;
    const char *discussionChannel;
    const char *originChannel;
    const char *status;
    const char *maxAgentMessages; /* turn.maxAgentMessages as decimal text */
    /* The replies to `!dirigent` commands (admin_*.md). */
    const char *agentMention;  /* "<@id>" of the agent whose turn it is now */
    const char *skippedAgent;  /* agent id whose turn was skipped */
    const char *policy;        /* sessionPolicy */
    const char *scope;         /* the scope's label */
    const char *mode;          /* the channel's mode */
    const char *turnOrder;     /* "a, b" or "none yet" */
    const char *speaker;       /* agent id, or what holds the scope */
    const char *passed;        /* agents that passed this cycle, or "none" */
    const char *agentMessages; /* agent messages in a row, decimal text */
    const char *maxBytes;      /* a length limit, decimal text */
    const char *error;         /* a status name (dg_status_name) */
    const char *reason;        /* the sentence saying why */
    /* Discussion summaries. */
    const char *summaryTemplate; /* kickoff: discussion.summaryTemplate's text, "" none */
    const char *summaryPreview;  /* result: the summary's inert preview, "" none */
    /* `!dirigent rotate`. */
    const char *sessions; /* sessions reset, decimal text */
    const char *failed;   /* sessions that could not be reset, decimal text */
    /* `!dirigent order | add | remove`. */
    const char *agent;      /* agent id the command acted on */
    const char *outOfOrder; /* agents out of the order with why, or "none" */
    /* A mistyped `!dirigent` subcommand, and the known one nearest to it. */
    const char *command;    /* the word as typed (no backticks) */
    const char *suggestion; /* a known subcommand, e.g. "status" */
    /* A budget reached (budget.md). */
    const char *budgetWhat;    /* what it counts, in words (dg_budget_words) */
    const char *budgetUsed;    /* how much was used, decimal text */
    const char *budgetLimit;   /* the limit, decimal text */
    const char *budgetKey;     /* its config key below budget. (dg_budget_key) */
    const char *budgetSetting; /* the key that set the limit: budget.<key> or
                                  channelBudgets.<channelId>.<key> */
    const char *budgetUntil;   /* "until 14:00 UTC" or "until an admin resumes it" */
    /* `!dirigent cost`. */
    const char *report; /* the cost report's text */
    /* A human's question the speaker's run did not see (open_question.md). */
    const char *question; /* its longest line, mentions and links left out */
} dg_tpl_vars;

/* Load the embedded set, then overrides from dir (may be NULL); validate all
 * placeholders. *out owned by caller: dg_templates_free(). Init only. */
int dg_templates_load(const char *dir, dg_templates **out, char *err, size_t err_len) DG_MUST_CHECK;
void dg_templates_free(dg_templates *t);

/* Raw text of a template by file name; borrowed until free; NULL if none.
 * Any thread (read-only after load). */
const char *dg_templates_get(const dg_templates *t, const char *name);

/* Rendered text; a new malloc'd string the caller frees; NULL for an unknown
 * name or out of memory. Any thread. */
char *dg_templates_render(const dg_templates *t, const char *name,
                          const dg_tpl_vars *vars) DG_MUST_CHECK;

/* As dg_templates_render, without the line breaks at the end: for a text
 * that is one part of a message (a command reply after its prefix).
 * Caller frees; NULL as dg_templates_render. Any thread. */
char *dg_templates_render_trim(const dg_templates *t, const char *name,
                               const dg_tpl_vars *vars) DG_MUST_CHECK;

/*
 * Placeholder rule: `{word}` where word is
 * one or more ASCII letters [A-Za-z]+ is a placeholder and must be a known
 * name; every other brace (`{}`, `{ x }`, `{"json": 1}`, `{a_b}`) is literal.
 * A templatesDir file named *.md that is not a built-in template name is
 * refused at load (a typo would otherwise pass silently); other files are
 * ignored. A moderator message (kickoff, idle, closed, result, rest, timeout,
 * wrapup, command_hint, admin_*) that is
 * empty or only white space is refused at load too (it could never be
 * posted); the session-model texts may be blank. An override must be a regular file (symlinks to one are fine:
 * the folder is operator config, not agent input).
 *
 * Check one template text: DG_OK, or DG_ERR_INVALID with a sentence naming
 * `name` and the unknown placeholder in err. Any thread.
 */
int dg_templates_check_text(const char *name, const char *text, char *err,
                            size_t err_len) DG_MUST_CHECK;

#endif
