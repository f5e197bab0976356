/*
 * host_sessions.h -- sessions_list decoded into plain values.
 */
#ifndef DG_HOST_SESSIONS_H
#define DG_HOST_SESSIONS_H

#include "dirigent.h"

struct dg_session_refs;

/*
 * The host's sessions of channel_id (entries whose channelId is another
 * channel are left out) into *out; release it with dg_session_refs_release
 * (the strings borrow from the host's answer until then). A NULL answer
 * makes the list unavailable; an answer that is no array is logged and
 * taken as no sessions. Any thread that may call the host.
 */
void dg_host_sessions(dg_plugin *p, const char *channel_id, struct dg_session_refs *out);

#endif
