/*
 * turns_discussion.c -- the discussion channels' entry points (prefill,
 * close, wake with the result), called inside the discussion code's
 * transaction: they log the channel they changed in the engine's change
 * ring, which reloads it before its next decision.
 * Records and locking: turns_int.h, turns_engine.c.
 */
#include "turns_int.h"

/* ---- discussion channels (inside the caller's transaction) ------------------------ */

int dg_turns_prefill_discussion(dg_turns *t, const char *channel_id, const char *initiator_agent_id,
                                const char *const *order, size_t n, int64_t now_ms)
{
    dg_store *st = t ? t->p->store : NULL;
    if (!st || !channel_id || !*channel_id || strlen(channel_id) >= DG_SCOPE_ID_MAX ||
        !initiator_agent_id || !*initiator_agent_id || (n && !order))
        return DG_ERR_INVALID;
    const char *list[DG_TURN_MAX_MEMBERS];
    size_t k = 0;
    list[k++] = initiator_agent_id;
    for (size_t i = 0; i < n; i++) {
        if (!order[i] || !*order[i])
            return DG_ERR_INVALID;
        int dup = 0;
        for (size_t j = 0; j < k; j++)
            dup |= strcmp(list[j], order[i]) == 0;
        if (dup)
            continue;
        if (k == DG_TURN_MAX_MEMBERS)
            return DG_ERR_INVALID;
        list[k++] = order[i];
    }
    /* The mirrors reload this channel before their next use; the first
     * participant awaits the kickoff the caller queues with this change. */
    turns_log_channel_change(t, channel_id, k >= 2 ? list[1] : NULL);
    int rc = dg_store_turns_members_clear(st, channel_id);
    /* The moderator gives each of them the private channel. */
    for (size_t i = 0; rc == DG_OK && i < k; i++)
        rc = dg_store_turns_member_add(st, channel_id, (int)i, list[i], DG_MEMBER_READS);
    if (rc == DG_OK)
        rc = dg_store_turns_scopes_clear(st, channel_id);
    if (rc == DG_OK)
        rc = dg_store_turns_channel_save(st, channel_id, DG_MODE_DISCUSSION, initiator_agent_id,
                                         NULL, 0, now_ms);
    if (rc == DG_OK)
        rc = turns_channel_platform(st, channel_id, now_ms);
    if (rc != DG_OK)
        return rc;
    /* The initiator opened the discussion (its guide is the first word):
     * the first participant after it speaks next. */
    dg_turn_state s;
    dg_turn_state_init(&s);
    s.active = 1;
    s.anchor = 0;
    s.speaker = k >= 2 ? 1 : DG_NOBODY;
    s.last_change_ms = now_ms;
    dg_scope sc;
    if ((rc = dg_scope_conversation(channel_id, &sc)))
        return rc;
    return dg_store_turns_scope_save(st, &sc, NULL, &s, 0, now_ms); /* cleared just above */
}

int dg_turns_close_channel(dg_turns *t, const char *channel_id, int64_t now_ms)
{
    dg_store *st = t ? t->p->store : NULL;
    if (!st || !channel_id || !*channel_id || strlen(channel_id) >= DG_SCOPE_ID_MAX)
        return DG_ERR_INVALID;
    turns_log_channel_change(t, channel_id, NULL);
    dg_turn_channel_row row;
    int rc = dg_store_turns_channel_load(st, channel_id, &row);
    if (rc != DG_OK && rc != DG_ERR_NOT_FOUND)
        return rc;
    rc = dg_store_turns_channel_save(st, channel_id, DG_MODE_CLOSED, row.initiator, row.top_root, 0,
                                     now_ms);
    dg_turn_channel_row_clear(&row);
    return rc;
}

int dg_turns_wake_with_result(dg_turns *t, const char *origin_channel_id,
                              const char *initiator_agent_id, int64_t now_ms)
{
    dg_store *st = t ? t->p->store : NULL;
    if (!st || !origin_channel_id || !*origin_channel_id ||
        strlen(origin_channel_id) >= DG_SCOPE_ID_MAX || !initiator_agent_id || !*initiator_agent_id)
        return DG_ERR_INVALID;
    dg_turn_channel_row row;
    int rc = dg_store_turns_channel_load(st, origin_channel_id, &row);
    if (rc != DG_OK && rc != DG_ERR_NOT_FOUND)
        return rc;
    int pos = DG_NOBODY;
    for (size_t i = 0; i < row.n_members; i++)
        if (strcmp(row.members[i], initiator_agent_id) == 0)
            pos = (int)i;
    size_t n_members = row.n_members;
    /* It opened the discussion from there: it can run there. An admin's
     * removal stands. */
    int rejoin = pos != DG_NOBODY && row.standing[pos] < DG_MEMBER_REMOVED &&
                 row.standing[pos] != DG_MEMBER_RAN;
    dg_turn_channel_row_clear(&row);
    if (rejoin && (rc = dg_store_turns_member_standing(st, origin_channel_id, pos, DG_MEMBER_RAN)))
        return rc;
    if (pos == DG_NOBODY) {
        if (n_members >= DG_TURN_MAX_MEMBERS)
            return DG_ERR_INVALID;
        /* A channel row must exist before a member can be added to it. */
        if (rc == DG_ERR_NOT_FOUND &&
            ((rc = dg_store_turns_channel_save(st, origin_channel_id, DG_MODE_NORMAL, NULL, NULL, 0,
                                               now_ms)) != DG_OK ||
             (rc = turns_channel_platform(st, origin_channel_id, now_ms)) != DG_OK))
            return rc;
        pos = (int)n_members;
        if ((rc = dg_store_turns_member_add(st, origin_channel_id, pos, initiator_agent_id,
                                            DG_MEMBER_RAN)))
            return rc;
    }
    /* The mirrors reload this channel before their next use. */
    turns_log_channel_change(t, origin_channel_id, initiator_agent_id); /* the result wakes it */
    dg_scope sc;
    if ((rc = dg_scope_conversation(origin_channel_id, &sc)))
        return rc;
    dg_turn_state s;
    char *post = NULL;
    rc = dg_store_turns_scope_load(st, &sc, &s, &post);
    int exists = rc == DG_OK;
    if (rc == DG_ERR_NOT_FOUND)
        dg_turn_state_init(&s);
    else if (rc != DG_OK)
        return rc;
    int64_t agent_msgs = exists ? s.agent_msgs : 0;
    dg_turn_state_init(&s);
    s.active = 1;
    s.speaker = pos;
    s.anchor = DG_NOBODY;
    s.mention = UINT64_C(1) << pos;
    s.agent_msgs = agent_msgs;
    s.last_change_ms = now_ms;
    rc = dg_store_turns_scope_save(st, &sc, post, &s, exists, now_ms);
    free(post);
    return rc;
}
