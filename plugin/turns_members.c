/*
 * turns_members.c -- who is in a channel's turn order. An agent enters on
 * what the host shows of it in the channel (it ran or posted there, or a
 * human @mentioned it), its standing rises as the host shows more (a
 * message of the channel reached its session), and it leaves when it
 * cannot receive the channel (dg_member_standing). Records and locking:
 * turns_int.h, turns_engine.c.
 */
#include "turns_int.h"

void turns_recompute_present(const dg_turns *t, turns_chan *c)
{
    c->present = 0;
    c->initiator_pos = DG_NOBODY;
    for (int i = 0; i < c->n; i++) {
        c->member_hash[i] = (uint32_t)dg_map_hash(c->members[i]);
        if (c->standing[i] < DG_MEMBER_LEFT && dg_config_agent(&t->p->cfg, c->members[i]))
            c->present |= (uint64_t)1 << i;
        if (c->initiator && strcmp(c->members[i], c->initiator) == 0)
            c->initiator_pos = i;
    }
}

const dg_turn_state *turns_staged(const dg_turns *t, const turns_scope *r)
{
    for (int i = 0; i < t->n_pending; i++)
        if (t->pending[i].r == r)
            return &t->pending[i].st;
    return &r->st;
}

/* The standing member pos reaches on evidence (turns_member_ensure). */
static dg_member_standing raised(dg_member_standing cur, dg_member_standing evidence)
{
    if (cur == DG_MEMBER_REMOVED)
        return cur;
    if (cur == DG_MEMBER_LEFT)
        return evidence == DG_MEMBER_READS ? cur : evidence;
    return evidence > cur ? evidence : cur;
}

static int set_standing(dg_turns *t, turns_chan *c, int pos, dg_member_standing standing)
{
    int rc = dg_store_turns_member_standing(t->p->store, c->id, pos, standing);
    if (rc != DG_OK)
        return rc;
    pthread_rwlock_wrlock(&t->lock);
    if (standing == DG_MEMBER_NEW && c->standing[pos] != DG_MEMBER_NEW)
        c->new_since[pos] = dg_now_ms(t->p);
    c->standing[pos] = (unsigned char)standing;
    turns_recompute_present(t, c);
    pthread_rwlock_unlock(&t->lock);
    return DG_OK;
}

/* Append agent_id to c's order with standing; *pos stays DG_NOBODY when the
 * order is full (logged once). Writer held. */
static int member_append(dg_turns *t, turns_chan *c, const char *agent_id,
                         dg_member_standing standing, int64_t now, int *pos)
{
    *pos = DG_NOBODY;
    /* Another instance sharing the store may have appended since this
     * mirror read the channel: the next position is the store's. */
    int stored = 0;
    int rc = dg_store_turns_member_count(t->p->store, c->id, &stored);
    if (rc == DG_OK && stored != c->n)
        rc = turns_refresh_channel(t, c->id, 1);
    if (rc != DG_OK)
        return rc;
    if ((*pos = turns_member_pos(c, agent_id)) != DG_NOBODY)
        return set_standing(t, c, *pos, raised(c->standing[*pos], standing));
    if (c->n >= DG_TURN_MAX_MEMBERS) {
        if (!t->warned_cap) {
            t->warned_cap = 1;
            dg_log(t->p, OC_LOG_WARN,
                   "turns: channel %s already has %d agents in its turn order; agent %s is "
                   "not added and stays silent there (at most %d agents take turns in one "
                   "channel)",
                   c->id, c->n, agent_id, DG_TURN_MAX_MEMBERS);
        }
        return DG_OK;
    }
    if (!c->in_db)
        rc = turns_chan_save(t, c, now);
    if (rc == DG_OK)
        rc = dg_store_turns_member_add(t->p->store, c->id, c->n, agent_id, standing);
    if (rc != DG_OK)
        return rc;
    char *dup = strdup(agent_id);
    if (!dup)
        return DG_ERR_NOMEM;
    pthread_rwlock_wrlock(&t->lock);
    c->members[c->n] = dup;
    c->standing[c->n] = (unsigned char)standing;
    c->new_since[c->n] = standing == DG_MEMBER_NEW ? now : 0;
    c->n++;
    turns_recompute_present(t, c);
    pthread_rwlock_unlock(&t->lock);
    *pos = c->n - 1;
    return DG_OK;
}

int turns_member_ensure(dg_turns *t, turns_chan *c, const char *agent_id,
                        dg_member_standing evidence, int64_t now, int *pos)
{
    TURNS_ASSERT_WRITER(t);
    *pos = turns_member_pos(c, agent_id);
    if (*pos != DG_NOBODY) {
        dg_member_standing cur = c->standing[*pos];
        dg_member_standing next = raised(cur, evidence);
        if (next == cur)
            return DG_OK;
        if (cur == DG_MEMBER_LEFT)
            dg_log(t->p, OC_LOG_INFO, "turns: %s is back in the turn order of channel %s (%s)",
                   agent_id, c->id,
                   evidence == DG_MEMBER_NEW ? "a human @mentioned it" : "it ran or posted there");
        return set_standing(t, c, *pos, next);
    }
    if (evidence == DG_MEMBER_READS || !dg_config_agent(&t->p->cfg, agent_id))
        return DG_OK;
    return member_append(t, c, agent_id, evidence, now, pos);
}

int turns_member_admit(dg_turns *t, turns_chan *c, const char *agent_id, int64_t now, int *pos,
                       dg_member_standing *was)
{
    TURNS_ASSERT_WRITER(t);
    *pos = turns_member_pos(c, agent_id);
    *was = *pos == DG_NOBODY ? DG_MEMBER_STANDINGS : (dg_member_standing)c->standing[*pos];
    if (*pos == DG_NOBODY)
        return member_append(t, c, agent_id, DG_MEMBER_READS, now, pos);
    if (*was >= DG_MEMBER_LEFT)
        return set_standing(t, c, *pos, DG_MEMBER_READS);
    return DG_OK;
}

int turns_member_leave(dg_turns *t, turns_scope *r, int pos, dg_member_standing standing,
                       int deciding, int64_t now, const char *cause, int *kick)
{
    TURNS_ASSERT_WRITER(t);
    turns_chan *c = r->chan;
    if (pos < 0 || pos >= c->n)
        return DG_ERR_INVALID;
    dg_rule_ctx x;
    turns_make_ctx(t, c, &x);
    dg_rule_effects fx;
    dg_rule_effects_init(&fx);
    dg_turn_state next = *turns_staged(t, r);
    dg_rule_member_gone(&next, &x, pos, now, &fx);
    if (fx.handoff_to != DG_NOBODY && fx.handoff_to == deciding) {
        /* Its run being decided is the run the hand-off would ask for. */
        fx.handoff_to = DG_NOBODY;
        next.handoff = DG_NOBODY;
        next.awaiting = 0;
    }
    int rc = set_standing(t, c, pos, standing);
    if (rc == DG_OK && (!dg_turn_state_same(&next, turns_staged(t, r)) || !r->in_db))
        rc = turns_save_scope(t, r, &next, now, cause);
    if (rc == DG_OK)
        rc = turns_queue_effects(t, r, &fx, &next, now, kick);
    if (rc == DG_OK)
        rc = turns_install(t, r, &next);
    if (rc == DG_OK)
        turns_nudge_arm_new_speaker(t, r, &next, pos, fx.handoff_to, now);
    return rc;
}

/* Member sp of r's channel, which the host never showed receiving it,
 * leaves the order (turns_drop_unreachable_speaker). Writer held. */
static int unreachable_leaves(dg_turns *t, turns_scope *r, int sp, int asking, int64_t now,
                              int *kick)
{
    turns_chan *c = r->chan;
    char label[DG_SCOPE_LABEL_MAX];
    dg_log(t->p, OC_LOG_INFO,
           "turns: %s was @mentioned in channel %s (%s) but no message of "
           "the channel ever reached it, while %s receives them: it cannot read the channel and "
           "leaves its turn order (give its bot View Channel there, or `!dirigent add` it)",
           c->members[sp], c->id, dg_scope_label(&r->scope, label),
           asking != DG_NOBODY ? c->members[asking] : "every other agent there");
    char cause[200];
    snprintf(cause, sizeof cause,
             "%s cannot read the channel (no message of it ever reached "
             "it): it left the turn order",
             c->members[sp]);
    return turns_member_leave(t, r, sp, DG_MEMBER_LEFT, asking, now, cause, kick);
}

int64_t turns_unreached_since(const turns_chan *c, const dg_turn_state *st, int pos)
{
    int64_t since = st->last_change_ms;
    if (pos >= 0 && pos < c->n && c->new_since[pos] && c->new_since[pos] < since)
        since = c->new_since[pos];
    return since;
}

int turns_drop_unreachable_speaker(dg_turns *t, turns_scope *r, int asking, int64_t now, int *kick)
{
    turns_chan *c = r->chan;
    if (!atomic_load(&t->per_agent) || c->mode != DG_MODE_NORMAL)
        return DG_OK;
    /* Each pass takes one member out of the order: bounded. The next
     * speaker the host never showed receiving the channel either (a human
     * @mentioned both) leaves too, also when it is the last one left: a
     * reader that joins later (its first run) would find it holding the
     * turn, for another grace, with the humans waiting since the mention. */
    for (int guard = 0; guard < DG_TURN_MAX_MEMBERS; guard++) {
        dg_rule_ctx x;
        turns_make_ctx(t, c, &x);
        const dg_turn_state *st = turns_staged(t, r);
        int sp =
            st->active && (guard > 0 || dg_rule_managed(&x)) ? dg_rule_speaker(st, &x) : DG_NOBODY;
        if (sp == DG_NOBODY || sp == asking || c->standing[sp] != DG_MEMBER_NEW ||
            (guard == 0 && now - turns_unreached_since(c, st, sp) < TURNS_UNREACHED_GRACE_MS))
            return DG_OK;
        int rc = unreachable_leaves(t, r, sp, asking, now, kick);
        if (rc != DG_OK)
            return rc;
    }
    return DG_OK;
}
