/*
 * admin_sessions.h -- the owner commands per session scope: `!dirigent rotate` ends the sessions of the scope through the
 * host's session_reset, `!dirigent cancel` aborts the speaker's run in
 * flight through run_abort. Both host functions are ABI 1.1 and optional:
 * a host without them gets "not supported by this host" in the reply.
 * No store access; the turn engine calls these and posts the reply.
 */
#ifndef DG_ADMIN_SESSIONS_H
#define DG_ADMIN_SESSIONS_H

#include <stddef.h>
#include "dirigent.h"

/*
 * Which sessions a command in channel_id (thread_id: the Discord thread it
 * was posted in, NULL at the top level) acts on: under policy "channel" the
 * whole channel (every session the host lists there, threads included);
 * under "thread" the sessions of that thread, or at the top level the
 * channel's own sessions (no thread).
 */

/* `rotate`: session_reset for each such session; a sentence for the reply
 * into msg. Any thread (host calls). */
void dg_admin_rotate(dg_plugin *p, const char *channel_id, const char *thread_id, char *msg,
                     size_t msg_len);

/* `cancel`: run_abort for speaker_agent's session(s) among them; speaker_agent
 * NULL when nobody holds the turn (a no-op that says so). A sentence for the
 * reply into msg. Any thread (host calls). */
void dg_admin_cancel(dg_plugin *p, const char *channel_id, const char *thread_id,
                     const char *speaker_agent, char *msg, size_t msg_len);

#endif
