/*
 * agent_id.h -- the one agent-id rule, shared by the plugin's config
 * (`agents` keys, plugin/config.c) and the reference gateway's config
 * (agents[].id, host/ocgw_config.c).
 *
 * It is OpenClaw's canonical form (normalizeAgentIdStrict in OpenClaw's
 * packages/normalization-core: /^[a-z0-9][a-z0-9_-]{0,63}$/i, then
 * lower-cased): OpenClaw hands plugins the lower-case id, so an id with a
 * capital (or a '.') configured here could never match an agent's events.
 */
#ifndef DG_AGENT_ID_H
#define DG_AGENT_ID_H

/* The rule in words, for error texts. */
#define DG_AGENT_ID_RULE                                                                           \
    "1-64 characters of a-z, 0-9, '-' and '_', starting with a letter or digit "                   \
    "(OpenClaw's agent ids, which it lower-cases)"

/* True when s (may be NULL) follows the rule. Any thread. */
int dg_agent_id_valid(const char *s);

#endif
