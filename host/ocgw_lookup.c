/*
 * ocgw_lookup.c -- finding an agent, a human or a configured channel in a
 * loaded host config. Below both ocgw_config.c and ocgw_scenario.c (the
 * scenario loader resolves names through these while the config loader
 * loads the scenarios), so neither calls the other back.
 */
#include <string.h>

#include "ocgw.h"

const ocgw_agent *ocgw_agent_by_id(const ocgw_config *c, const char *id)
{
    for (size_t i = 0; id && i < c->n_agents; i++)
        if (c->agents[i].id && !strcmp(c->agents[i].id, id))
            return &c->agents[i];
    return NULL;
}

const ocgw_agent *ocgw_agent_by_user(const ocgw_config *c, const char *user_id)
{
    for (size_t i = 0; user_id && i < c->n_agents; i++)
        if (c->agents[i].user_id && !strcmp(c->agents[i].user_id, user_id))
            return &c->agents[i];
    return NULL;
}

const ocgw_human *ocgw_human_by_id(const ocgw_config *c, const char *id)
{
    for (size_t i = 0; id && i < c->n_humans; i++)
        if (c->humans[i].id && !strcmp(c->humans[i].id, id))
            return &c->humans[i];
    return NULL;
}

const ocgw_human *ocgw_human_by_user(const ocgw_config *c, const char *user_id)
{
    for (size_t i = 0; user_id && i < c->n_humans; i++)
        if (c->humans[i].user_id && !strcmp(c->humans[i].user_id, user_id))
            return &c->humans[i];
    return NULL;
}

const ocgw_chan_cfg *ocgw_chan_cfg_by_alias(const ocgw_config *c, const char *alias)
{
    for (size_t i = 0; alias && i < c->n_channels; i++)
        if (!strcmp(c->channels[i].alias, alias))
            return &c->channels[i];
    return NULL;
}

const ocgw_chan_cfg *ocgw_chan_cfg_by_id(const ocgw_config *c, const char *id)
{
    for (size_t i = 0; id && i < c->n_channels; i++)
        if (c->channels[i].id && !strcmp(c->channels[i].id, id))
            return &c->channels[i];
    return NULL;
}

const ocgw_agent *ocgw_chan_reader(const ocgw_config *c, const json_t *ch, unsigned rot)
{
    const ocgw_agent *a = ocgw_local_reader(c, json_object_get(ch, "agents"), rot);
    for (size_t k = 0; !a && json_is_true(json_object_get(ch, "watch")) && k < c->n_agents; k++)
        if (c->agents[(rot + k) % c->n_agents].local)
            a = &c->agents[(rot + k) % c->n_agents];
    return a;
}

const ocgw_agent *ocgw_local_reader(const ocgw_config *c, const json_t *agents, unsigned rot)
{
    size_t n = json_array_size(agents);
    for (size_t k = 0; k < n; k++) {
        const ocgw_agent *a =
            ocgw_agent_by_id(c, json_string_value(json_array_get(agents, (rot + k) % n)));
        if (a && a->local)
            return a;
    }
    return NULL;
}
