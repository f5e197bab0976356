/*
 * agent_names.h -- the names under which the configured agents' bots are
 * mentioned in message text.
 *
 * A host may hand the plugin a message whose mentions are already rendered
 * as text: OpenClaw's Discord channel turns <@id> into "@<global name or
 * username>" before message_received. To honour a human's @mention there,
 * the engine needs each agent bot's Discord names; they are learned from
 * Discord (GET /users/{id} with the moderator's token) by the turn
 * engine's sweeper thread, kept in memory, learned again after a restart.
 */
#ifndef DG_AGENT_NAMES_H
#define DG_AGENT_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include "dirigent.h"

typedef struct dg_agent_names dg_agent_names;

/* A table for the n_agents agents of p->cfg (same order). *out is owned by
 * the caller: dg_agent_names_free(). DG_OK or DG_ERR_NOMEM. */
int dg_agent_names_new(size_t n_agents, dg_agent_names **out);

/* NULL is fine. No other call may be running on n. */
void dg_agent_names_free(dg_agent_names *n);

/*
 * Look up, from Discord, the names of agents not known yet whose next try
 * is due at now_ms, one request each (the caller's thread waits for them,
 * each bounded by the Discord client's timeout). A failed lookup
 * is tried again after a minute (an error Discord will repeat: after an
 * hour) and logged once per agent. Does nothing without a Discord client
 * (no moderator token). Called by the sweeper thread; never with a lock of
 * the engine held.
 */
void dg_agent_names_refresh(dg_agent_names *n, dg_plugin *p, int64_t now_ms);

/*
 * hit[i] = 1 for each agent i whose known name appears in content as a
 * mention: "@name" not preceded by a letter, digit or '_' and not followed
 * by one, and not inside code (md_code.h: Discord pings nobody there);
 * others left as they are. hit has n_agents entries. Returns the number
 * of agents set (0 when out of memory). Any thread.
 */
size_t dg_agent_names_mentioned(dg_agent_names *n, const char *content, unsigned char *hit);

#endif
