/*
 * turn_view.c -- read-only view of a scope's stored turn state (turn_view.h).
 */
#include "turn_view.h"

#include <stdlib.h>
#include <string.h>

#include "openclaw/plugin.h"
#include "status.h"
#include "store_turns.h"

void dg_turn_view_clear(dg_turn_view *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n_members; i++)
        free(v->members[i]);
    free(v->members);
    memset(v, 0, sizeof *v);
}

const char *dg_turn_view_member(const dg_turn_view *v, int pos)
{
    return pos >= 0 && (size_t)pos < v->n_members ? v->members[pos] : NULL;
}

int dg_turn_view_load(dg_store *st, const dg_config *cfg, const dg_scope *sc, int64_t now_ms,
                      dg_turn_view *out)
{
    memset(out, 0, sizeof *out);
    out->speaker = DG_NOBODY;
    dg_turn_state_init(&out->state);
    dg_turn_channel_row row;
    int rc = dg_store_turns_channel_load(st, dg_scope_channel(sc), &row);
    if (rc != DG_OK && rc != DG_ERR_NOT_FOUND)
        return rc;
    dg_rule_ctx x = {.n_members = (int)row.n_members,
                     .mode = row.mode,
                     .initiator = DG_NOBODY,
                     .timeout_ms = cfg ? (int64_t)cfg->turn_timeout_sec * 1000 : 0,
                     .max_agent_msgs = cfg ? cfg->turn_max_agent_messages : 0};
    for (size_t i = 0; i < row.n_members && i < DG_TURN_MAX_MEMBERS; i++) {
        if ((!cfg || dg_config_agent(cfg, row.members[i])) && row.standing[i] < DG_MEMBER_LEFT)
            x.present |= (uint64_t)1 << i;
        if (row.initiator && strcmp(row.members[i], row.initiator) == 0)
            x.initiator = (int)i;
    }
    out->mode = row.mode;
    out->present = x.present;
    out->members = row.members;
    out->n_members = row.n_members;
    row.members = NULL;
    row.n_members = 0;
    dg_turn_channel_row_clear(&row);
    char *post = NULL;
    rc = dg_store_turns_scope_load(st, sc, &out->state, &post);
    free(post);
    if (rc == DG_ERR_NOT_FOUND)
        dg_turn_state_init(&out->state);
    else if (rc != DG_OK) {
        dg_turn_view_clear(out);
        return rc;
    } else
        out->has_state = 1;
    dg_rule_expire(&out->state, &x, now_ms, NULL);
    /* A closed channel keeps the state it had, but nobody speaks there. */
    out->speaker = out->mode != DG_MODE_CLOSED && out->state.active
                       ? dg_rule_speaker(&out->state, &x)
                       : DG_NOBODY;
    /* A budget's breaker: every run is claimed, whoever the stored speaker
     * is (a discussion's initiator, asked to wrap up, aside). */
    int held = out->mode != DG_MODE_CLOSED && out->state.budget &&
               (!out->state.budget_until_ms || now_ms < out->state.budget_until_ms);
    if (held && !(out->mode == DG_MODE_DISCUSSION && out->speaker == x.initiator))
        out->speaker = DG_NOBODY;
    out->condition = out->mode == DG_MODE_CLOSED ? "closed"
                     : held                      ? "held"
                     : out->state.active         ? "speaking"
                     : out->state.rested         ? "resting"
                                                 : "dormant";
    return DG_OK;
}
