/*
 * hooks_int.h -- shared by the hook handlers in the hooks/ files: JSON
 * decoding of the agent-hook context, and the handlers themselves.
 * JSON stays here; the core (turns_engine.h) sees plain structs.
 */
#ifndef DG_HOOKS_INT_H
#define DG_HOOKS_INT_H

#include <jansson.h>
#include "dirigent.h"
#include "utf8.h"
#include "scope.h"
#include "turns_engine.h"
#include "must_check.h"

/* Priority our handlers register with (higher runs first). */
#define DG_HOOK_PRIORITY 50

/* The handlers (oc_hook_fn). state is the dg_plugin. Any host thread,
 * several at once; each decides synchronously. */
int dg_hook_message_received(void *state, const json_t *event, const json_t *ctx, json_t **result);
int dg_hook_before_model_resolve(void *state, const json_t *event, const json_t *ctx,
                                 json_t **result);
int dg_hook_message_sending(void *state, const json_t *event, const json_t *ctx, json_t **result);
/* 1 when ctx is a chat platform's that cfg does not manage (its
 * ctx.messageProvider, or the provider of its session key
 * "agent:<id>:<provider>:channel|direct|group:", is not "discord" with a
 * `discord` section, nor "slack" with a `slack` section): such a hook is
 * answered with nothing. */
int dg_hook_foreign(const dg_config *cfg, const json_t *ctx);

/* The same from those members already read (NULL: absent or not a
 * string): prov, ctx.messageProvider; key, ctx.sessionKey. */
int dg_hook_foreign_of(const dg_config *cfg, const char *prov, const char *key);

/* 1 when channel_id has the shape of a platform cfg has no section for (a
 * Slack channel under a Discord-only config): not ours, whatever the
 * context says. 0 for a managed platform's id or one of no known shape. */
int dg_hook_unmanaged_channel(const dg_config *cfg, const char *channel_id);

int dg_hook_agent_end(void *state, const json_t *event, const json_t *ctx, json_t **result);
int dg_hook_model_call_ended(void *state, const json_t *event, const json_t *ctx, json_t **result);
int dg_hook_llm_output(void *state, const json_t *event, const json_t *ctx, json_t **result);
int dg_hook_before_prompt_build(void *state, const json_t *event, const json_t *ctx,
                                json_t **result);
int dg_hook_before_agent_reply(void *state, const json_t *event, const json_t *ctx,
                               json_t **result);
int dg_hook_reply_payload_sending(void *state, const json_t *event, const json_t *ctx,
                                  json_t **result);

/* String member of obj, NULL when absent, not a string, or obj not an object.
 * Borrowed from obj. */
const char *dg_json_str(const json_t *obj, const char *key);

/*
 * Optional string member key of obj (an object) into *out (borrowed, NULL
 * when absent or JSON null). Returns 0, or -1 when the member is there with
 * another type: the caller refuses the event (a wrong-typed id must not
 * silently count as a missing one).
 */
int dg_json_opt_str(const json_t *obj, const char *key, const char **out);

/* The same for a member v already found (NULL: absent). */
int dg_json_str_member(const json_t *v, const char **out);

/*
 * The session of an agent-hook context: agentId, sessionKey, channelId,
 * threadId; what is missing is taken from an OpenClaw session key
 * (agent:<id>:discord:channel:<c>[:thread:<t>], agent:<id>:discord:direct:
 * <peer>). Strings point into ctx or into *out. Returns 1 when the session
 * is in a channel the turn manager can look at, 0 when not (no agent or no
 * channel: nothing to decide), -1 when the context is malformed (one of
 * those members is not a string, or an id is too long): out->err then says
 * which member and why, for the caller to log; nothing is decided.
 */
typedef struct dg_hook_session {
    dg_turn_session s;
    char agent[128];
    char channel[DG_SCOPE_ID_MAX];
    char thread[DG_SCOPE_ID_MAX];
    char key[384];
    char err[160];
} dg_hook_session;

int dg_hook_decode_session(const dg_config *cfg, const json_t *ctx,
                           dg_hook_session *out) DG_MUST_CHECK;

/*
 * The session of an outbound hook (message_sending, reply_payload_sending).
 * With ctx.agentId: as dg_hook_decode_session. Without it (OpenClaw's
 * gateway shape: ctx {channelId: "discord", accountId, conversationId,
 * sessionKey}): the agent, channel and thread come from ctx.sessionKey;
 * a channel missing there from ctx.conversationId or event.to
 * ("channel:<c>"); ctx.channelId (the provider's name) is not read.
 * Same returns as dg_hook_decode_session.
 */
int dg_hook_decode_outbound(const dg_config *cfg, const json_t *event, const json_t *ctx,
                            dg_hook_session *out) DG_MUST_CHECK;

/*
 * The agent session a message_received report is for: from ctx.sessionKey
 * alone (session_key: that member, NULL when absent), of the shape
 * agent:<id>:discord:channel:<c>[:thread:<t>] (the plugin config binds no
 * accounts to agents, so ctx.accountId is not read). Returns 1 with out->s
 * set (strings point into ctx or *out), 0 when there is none (no key, a DM
 * or another shape; out->s is then not to be read), -1 when
 * ctx.sessionKey is not a string (out->err says so).
 */
int dg_hook_decode_recipient(const dg_config *cfg, const json_t *session_key,
                             dg_hook_session *out) DG_MUST_CHECK;

/*
 * The run id of a hook call: event.runId, else ctx.runId, else (with
 * meta) event.metadata.runId; *out NULL when none. Returns 0, or -1 when
 * one of them is there and not a string (*field names it, for the log).
 */
int dg_hook_run_id(const json_t *event, const json_t *ctx, int meta, const char **out,
                   const char **field);

#endif
