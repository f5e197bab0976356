/*
 * fake_slack_openclaw.h -- the Web API methods OpenClaw's Slack plugin
 * (@openclaw/slack) calls beyond what fake_slack.h serves, added to a fake
 * through fake_slack_add_method:
 *   reactions.add     channel=, timestamp=, name= [the ack and typing
 *                     reactions]; channel_not_found, message_not_found,
 *                     invalid_name, already_reacted
 *   reactions.remove  channel=, timestamp=, name=; no_reaction
 *   agents.sessions.setStatus  channel_id=, thread_ts=, status=, title=?
 *                     [Slack's agent session status, threads only] ->
 *                     {title?}; invalid_arguments, channel_not_found
 *   agents.sessions.rename     channel_id=, thread_ts=, title=
 * Bot tokens only (anything else: not_authed, not_allowed_token_type or
 * invalid_auth, as the built-in methods answer). Requests are recorded by
 * the fake as any other; the state (who reacted with what, each thread's
 * status) is readable here. Internally locked; any thread.
 */
#ifndef DG_FAKE_SLACK_OPENCLAW_H
#define DG_FAKE_SLACK_OPENCLAW_H

#include <jansson.h>

#include "fake_slack.h"

typedef struct fake_slack_openclaw fake_slack_openclaw;

/* Add the methods to fs (before traffic). 0 and *out (free with
 * fake_slack_openclaw_free after fake_slack_stop), or -1. */
int fake_slack_openclaw_start(fake_slack *fs, fake_slack_openclaw **out);

/* After fake_slack_stop (which ends every call into it). NULL is fine. */
void fake_slack_openclaw_free(fake_slack_openclaw *o);

/* NEW array of {channel, ts, name, user} (current reactions, oldest first). */
json_t *fake_slack_openclaw_reactions(fake_slack_openclaw *o);

/* NEW array of {channel, threadTs, status, title, user} (the latest status
 * of each thread). */
json_t *fake_slack_openclaw_statuses(fake_slack_openclaw *o);

#endif
