/*
 * turns_ingest.c -- message_received: every message of a served channel
 * is recorded once (dedup), moves the turn state of its scope, and queues
 * what that owes (hand-off, rest notice, closed notice); an admin's
 * command goes to turns_admin.c. Records and locking: turns_int.h,
 * turns_engine.c.
 */
#include "md_code.h"
#include "snowflake.h"
#include "turns_int.h"
#include "turns_judge.h"

/* ---- message_received ------------------------------------------------------------ */

/* Content made only of user mentions: the moderator's hand-off trigger.
 * A mention is <@id> (<@!id>) or, as OpenClaw's Discord channel renders it
 * before message_received, "@name" (a name without spaces: a global name
 * with one reads as a moderator's text, which resets the loop count). */
static int is_bare_mention(const char *s)
{
    int any = 0;
    while (s && *s) {
        if (isspace((unsigned char)*s)) {
            s++;
            continue;
        }
        if (s[0] == '@' && s[1] && !isspace((unsigned char)s[1])) {
            while (*s && !isspace((unsigned char)*s))
                s++;
            any = 1;
            continue;
        }
        if (strncmp(s, "<@", 2) != 0)
            return 0;
        s += 2;
        if (*s == '!')
            s++;
        /* A user id of either platform (digits; U...), Slack's with an
         * optional "|name". */
        if (!isdigit((unsigned char)*s) && !isupper((unsigned char)*s))
            return 0;
        while (isdigit((unsigned char)*s) || isupper((unsigned char)*s))
            s++;
        if (*s == '|')
            while (*s && *s != '>' && *s != '<')
                s++;
        if (*s++ != '>')
            return 0;
        any = 1;
    }
    return any;
}

/* 1 when "<@uid>" (or "<@!uid>") is written in content but only inside
 * code (plain: content with its code blanked): a host that reads mentions
 * off the text (the bridge) lists it, Discord pings nobody there. */
static int mention_only_in_code(const char *content, const char *plain, const char *uid)
{
    char at[48], at_bang[48];
    if (!plain || !uid || snprintf(at, sizeof at, "<@%s>", uid) >= (int)sizeof at)
        return 0;
    snprintf(at_bang, sizeof at_bang, "<@!%s>", uid);
    return (strstr(content, at) || strstr(content, at_bang)) && !strstr(plain, at) &&
           !strstr(plain, at_bang);
}

static int closed_notice(dg_turns *t, turns_chan *c, const dg_turn_message *m, dg_sender_kind kind,
                         int64_t now, int *kick)
{
    if (kind == DG_SENDER_MODERATOR || kind == DG_SENDER_HANDOFF || !m->message_id)
        return DG_OK;
    int botish = kind == DG_SENDER_AGENT || kind == DG_SENDER_BOT;
    int rc;
    if (!botish && c->bot_noticed) {
        c->bot_noticed = 0; /* a human spoke: bots may get one notice again */
        if ((rc = turns_chan_save(t, c, now)))
            return rc;
    } else if (botish && c->bot_noticed) {
        /* A bot already got a notice since the last human message: no
         * ping-pong between the moderator and a bot answering it. */
        return DG_OK;
    }
    int64_t cooldown = (int64_t)t->p->cfg.closed_notice_cooldown_sec * 1000;
    int claim =
        dg_discuss_claim_closed_notice_locked(t->p->store, c->id, m->message_id, now, cooldown);
    if (claim < 0)
        return claim;
    if (!claim)
        return DG_OK;
    char chan[48];
    snprintf(chan, sizeof chan, "<#%s>", c->id);
    dg_tpl_vars v = {.discussionChannel = chan, .status = "closed"};
    char post[DG_CHAT_TARGET_MAX];
    turns_reply_target(c->id, m->thread_id, post, sizeof post);
    if ((rc = turns_render_and_enqueue(t, "closed.md", &v, post, NULL, now, kick, NULL, 0)))
        return rc;
    if (botish) {
        c->bot_noticed = 1;
        rc = turns_chan_save(t, c, now);
    }
    return rc;
}

/* A human's message that starts with a mistyped `!dirigent` ("!dirignet
 * status"): the moderator says what was meant, once per channel per
 * DG_ADMIN_HINT_COOLDOWN_MS. The message itself stays an ordinary one (it
 * may be meant for the agents too); the hint is extra. */
static int command_hint(dg_turns *t, const turns_chan *c, const dg_turn_message *m, int64_t now,
                        int *kick)
{
    char fix[64];
    if (!m->content || !dg_admin_near_miss(m->content, fix, sizeof fix))
        return DG_OK;
    int claimed = 0;
    int rc =
        dg_store_turns_hint_claim(t->p->store, c->id, now, DG_ADMIN_HINT_COOLDOWN_MS, &claimed);
    if (rc || !claimed)
        return rc;
    dg_log(t->p, OC_LOG_INFO,
           "turns: message %s in channel %s starts like a mistyped "
           "!dirigent; the moderator hints at `%s` (in this channel at most once an hour); the "
           "message counts as an ordinary one",
           m->message_id ? m->message_id : "(no id)", c->id, fix);
    dg_tpl_vars v = {.command = fix};
    char post[DG_CHAT_TARGET_MAX];
    turns_reply_target(c->id, m->thread_id, post, sizeof post);
    return turns_render_and_enqueue(t, "command_hint.md", &v, post, NULL, now, kick, NULL, 0);
}

/* The scope the runs of session rs are decided in (turns_session_prepare) and
 * rs's member position there; *out NULL when rs's agent is no member of
 * the channel or the channel is closed. Writer held. */
static int recipient_scope(dg_turns *t, const dg_turn_session *rs, turns_scope **out, int *pos)
{
    *out = NULL;
    turns_chan *c;
    int rc = turns_chan_get(t, rs->channel_id, &c);
    if (rc)
        return rc;
    *pos = turns_member_pos(c, rs->agent_id);
    if (*pos == DG_NOBODY || c->mode == DG_MODE_CLOSED)
        return DG_OK;
    int has_thread = rs->thread_id && *rs->thread_id;
    if (rs->is_dm || t->p->cfg.session_policy == DG_POLICY_CHANNEL || has_thread) {
        dg_scope_event ev = {
            .channel_id = rs->channel_id, .thread_id = rs->thread_id, .is_dm = rs->is_dm};
        dg_scope sc;
        if ((rc = dg_scope_derive(t->p->cfg.session_policy, &ev, &sc)))
            return rc;
        return turns_scope_get(t, c, &sc, out);
    }
    return turns_follow_scope(t, c, out);
}

/*
 * A moderator message reached the session rs (message_received reported
 * per agent): if rs's agent awaits its wake message in the scope rs acts
 * in, the wait ends (turns_engine.h "Awaiting the wake message"). Read
 * only but for that: no member is added, nothing is stored. Writer held.
 */
static int deliver_locked(dg_turns *t, const dg_turn_session *rs)
{
    turns_scope *r;
    int pos;
    int rc = recipient_scope(t, rs, &r, &pos);
    if (rc || !r)
        return rc;
    dg_turn_state next = *turns_staged(t, r);
    if (!dg_rule_wake_delivered(&next, pos))
        return DG_OK;
    char label[DG_SCOPE_LABEL_MAX];
    dg_log(t->p, OC_LOG_DEBUG,
           "turns: the moderator's message reached %s in channel %s (%s); "
           "it no longer awaits its wake message, its next run counts",
           rs->agent_id, r->chan->id, dg_scope_label(&r->scope, label));
    return turns_install(t, r, &next);
}

/* A message reached the session rs and the change it made is staged: when
 * rs's agent holds the turn there, a run of it is due, now or, with a run
 * of it under way (for an older message: its run starts after the message
 * reached it), when that run ends; the host may drop a message that reaches
 * a busy session. The sweeper mentions it if none starts within
 * turn.nudgeSec (turns_scope.wait_pos). Read only. Writer held. */
static int arm_nudge_locked(dg_turns *t, const dg_turn_session *rs, int from_moderator, int64_t now)
{
    if (t->p->cfg.turn_nudge_sec <= 0)
        return DG_OK;
    turns_scope *r;
    int pos;
    int rc = recipient_scope(t, rs, &r, &pos);
    if (rc || !r)
        return rc;
    if (pos >= 0 && pos < DG_TURN_MAX_MEMBERS && !atomic_load(&r->reached_ms[pos]))
        atomic_store(&r->reached_ms[pos], now);
    if (pos != DG_NOBODY && pos == r->nudged_pos)
        r->nudge_seen = 1; /* its nudge, or a later message, reached it */
    const dg_turn_state *st = turns_staged(t, r);
    dg_rule_ctx x;
    turns_make_ctx(t, r->chan, &x);
    if (st->active && dg_rule_speaker(st, &x) == pos) {
        atomic_store(&r->wait_ms, now);
        atomic_store(&r->wait_pos, pos);
        if (from_moderator) /* the nudge itself, perhaps, dropped as well */
            turns_nudge_reached_after_nudge(r, st, pos);
    }
    return DG_OK;
}

/* A message of the channel reached session rs: its agent, if a member
 * there, is one that receives the channel. Writer held. */
static int recipient_reads(dg_turns *t, const dg_turn_session *rs, int64_t now)
{
    turns_chan *c;
    int rc = turns_chan_get(t, rs->channel_id, &c);
    if (rc)
        return rc;
    int pos = turns_member_pos(c, rs->agent_id);
    if (pos == DG_NOBODY || c->standing[pos] != DG_MEMBER_NEW)
        return DG_OK;
    return turns_member_ensure(t, c, rs->agent_id, DG_MEMBER_READS, now, &pos);
}

/* c->received = the later of it and id. */
static void note_received(turns_chan *c, const char *id)
{
    size_t n = strlen(id);
    if (n < sizeof c->received && dg_snowflake_cmp(id, c->received) > 0)
        memcpy(c->received, id, n + 1);
}

/* 1 when this instance took in message id of c before (another of its
 * accounts reported it); else 0, and id is recorded (turns_chan.taken). */
static int taken_before(turns_chan *c, const char *id)
{
    uint64_t h = dg_map_hash(id) | 1; /* never 0, the empty slot */
    for (int i = 0; i < TURNS_TAKEN_MAX; i++)
        if (c->taken[i] == h)
            return 1;
    c->taken[c->taken_head++ % TURNS_TAKEN_MAX] = h;
    return 0;
}

/* The dedup of m by (channel, message id): *fresh = 0 when another account
 * reported it already; *here = 1 when none of this instance's did (with
 * *fresh 0: another instance sharing the store took it in first). Every
 * TURNS_SEEN_PRUNE_EVERY fresh messages, old dedup rows and dormant states
 * are pruned. Writer held. */
static int ingest_dedup(dg_turns *t, turns_chan *c, const dg_turn_message *m, int64_t now,
                        int *fresh, int *here)
{
    dg_store *st = t->p->store;
    int rc;
    *fresh = *here = 1;
    if (!m->message_id || !*m->message_id)
        return DG_OK;
    if ((rc = dg_store_turns_seen_claim_hinted(st, m->channel_id, m->message_id, now, &c->marks,
                                               fresh)))
        return rc;
    note_received(c, m->message_id);
    *here = !taken_before(c, m->message_id);
    if (!*fresh)
        return DG_OK;
    if (++t->fresh_ingests % TURNS_SEEN_PRUNE_EVERY == 0 &&
        ((rc = dg_store_turns_seen_prune(st, now - TURNS_SEEN_KEEP_MS, NULL)) ||
         (rc = dg_store_turns_states_prune(st, now - TURNS_SEEN_KEEP_MS, NULL))))
        return rc;
    return DG_OK;
}

/* The members a human's message m @mentions, as a mask (*mentions): its
 * mentions outside code, and the names the host rendered as text ("@name").
 * Writer held. */
static int human_mentions(dg_turns *t, turns_chan *c, const dg_turn_message *m, int64_t now,
                          uint64_t *mentions)
{
    int rc;
    char *plain = NULL;
    if (m->n_mentions && m->content && strchr(m->content, '`')) {
        if (!(plain = strdup(m->content)))
            return DG_ERR_NOMEM;
        dg_md_blank_code(plain);
    }
    for (size_t i = 0; i < m->n_mentions; i++) {
        if (mention_only_in_code(m->content, plain, m->mentions[i]))
            continue;
        const dg_agent_cfg *a = dg_config_agent_by_user(&t->p->cfg, m->mentions[i]);
        /* A configured agent a human asks by name enters the channel's
         * order even before it was seen there (the first message of a
         * channel comes before any agent's run), as one not yet shown
         * to receive the channel: if it cannot, it leaves again
         * (turns_drop_unreachable_speaker, the turn timeout). */
        int mp = DG_NOBODY;
        if (a && (rc = turns_member_ensure(t, c, a->agent_id, DG_MEMBER_NEW, now, &mp))) {
            free(plain);
            return rc;
        }
        if (mp != DG_NOBODY)
            *mentions |= (uint64_t)1 << mp;
    }
    free(plain);
    /* Mentions the host rendered as text ("@name"). */
    size_t n_agents = t->p->cfg.n_agents;
    unsigned char *hit =
        n_agents && m->content && strchr(m->content, '@') ? calloc(n_agents, 1) : NULL;
    if (hit && dg_agent_names_mentioned(t->names, m->content, hit)) {
        for (size_t i = 0; i < n_agents; i++) {
            int mp = DG_NOBODY;
            if (hit[i] && (rc = turns_member_ensure(t, c, t->p->cfg.agents[i].agent_id,
                                                    DG_MEMBER_NEW, now, &mp))) {
                free(hit);
                return rc;
            }
            if (mp != DG_NOBODY)
                *mentions |= (uint64_t)1 << mp;
        }
    }
    free(hit);
    return DG_OK;
}

/* A message opened the top-level thread r of c (thread policy): r becomes
 * the channel's followed scope, and an agent's or bot's message carries the
 * loop guard of the previous top-level thread into next. Writer held. */
static int follow_top_level(dg_turns *t, turns_chan *c, turns_scope *r, const dg_scope *sc,
                            dg_sender_kind kind, dg_turn_state *next, int64_t now)
{
    turns_scope *prev = NULL;
    int rc;
    if ((rc = turns_follow_scope(t, c, &prev)))
        return rc;
    if (prev != r && (kind == DG_SENDER_AGENT || kind == DG_SENDER_BOT)) {
        /* Carry the loop guard across top-level threads. */
        next->agent_msgs = prev->st.agent_msgs;
        next->rested = prev->st.rested;
    }
    char *top = strdup(sc->root);
    if (!top)
        return DG_ERR_NOMEM;
    pthread_rwlock_wrlock(&t->lock);
    free(c->top_root);
    c->top_root = top;
    c->follow = r;
    pthread_rwlock_unlock(&t->lock);
    return turns_chan_save(t, c, now);
}

/* Save r's state next, changed by message m of sender member pos (or
 * DG_NOBODY), with a cause naming the message and its sender. Writer held. */
static int save_for_message(dg_turns *t, turns_scope *r, const dg_turn_state *next,
                            const dg_turn_message *m, dg_sender_kind kind, int pos, int64_t now)
{
    static const char *const kinds[] = {"human", "agent", "bot", "moderator", "moderator hand-off"};
    const turns_chan *c = r->chan;
    char cause[200];
    const char *parts[] = {"message ",
                           m->message_id ? m->message_id : "(no id)",
                           " from ",
                           (unsigned)kind < sizeof kinds / sizeof *kinds ? kinds[kind] : "sender",
                           " ",
                           m->sender_id,
                           pos != DG_NOBODY ? " (" : NULL,
                           pos != DG_NOBODY ? c->members[pos] : NULL,
                           pos != DG_NOBODY ? ")" : NULL};
    dg_str_join(cause, sizeof cause, parts, sizeof parts / sizeof *parts);
    return turns_save_scope_for(t, r, next, now, cause, m->message_id);
}

/* Message m in its scope: the sender's and the mentioned members join the
 * order, the scope's recent texts and followed thread follow, and the wake
 * rules move its state (dg_rule_on_message), saved with what it owes.
 * Writer held. */
static int ingest_message(dg_turns *t, turns_chan *c, const dg_turn_message *m, dg_sender_kind kind,
                          const dg_agent_cfg *sender_agent, int64_t now, int *kick)
{
    dg_scope sc;
    int top_level;
    int rc;
    if ((rc = turns_message_scope(t, m, &sc, &top_level)))
        return rc;
    int moderator = kind == DG_SENDER_MODERATOR || kind == DG_SENDER_HANDOFF;
    /* A human's or an agent's word restarts a discussion's quiet-time clock. */
    if (!moderator && c->mode == DG_MODE_DISCUSSION &&
        (rc = dg_store_discussion_touch(t->p->store, c->id, now)))
        return rc;
    if (moderator && top_level)
        return DG_OK; /* its own one-message thread: nothing to change */

    int pos = DG_NOBODY;
    if (sender_agent &&
        (rc = turns_member_ensure(t, c, sender_agent->agent_id, DG_MEMBER_RAN, now, &pos)))
        return rc;
    uint64_t mentions = 0;
    if (kind == DG_SENDER_HUMAN && (rc = human_mentions(t, c, m, now, &mentions)))
        return rc;

    turns_scope *r;
    if ((rc = turns_scope_get(t, c, &sc, &r)))
        return rc;
    if (kind == DG_SENDER_HUMAN && turns_budget_per_message(t, c->id) &&
        (rc = turns_cost_human(t, r, now)))
        return rc;
    if (!moderator) {
        r->wake_fp[0] = '\0'; /* a real message: the reminder is history */
        turns_recent_push(r, m->content, pos, 0, kind == DG_SENDER_HUMAN, now);
        turns_judge_note(t, r, m, kind, pos);
    } else if (kind == DG_SENDER_MODERATOR) {
        /* A moderator text (a kickoff, a result, a reply) is a message the
         * agents' runs answer too: a run queued for the kickoff that starts
         * after a participant spoke is a stale one. */
        turns_recent_push(r, m->content, DG_NOBODY, 1, 0, now);
    }
    if (moderator && !r->in_db)
        return DG_OK; /* no state to change */
    dg_turn_state next = r->st;
    if (top_level && (rc = follow_top_level(t, c, r, &sc, kind, &next, now)))
        return rc;
    if (m->thread_id && *m->thread_id && sc.kind == DG_SCOPE_THREAD && !r->post_channel &&
        !(r->post_channel = turns_thread_target(c->id, m->thread_id)))
        return DG_ERR_NOMEM;
    if (kind == DG_SENDER_HUMAN && (rc = turns_post_where_written(r, c->id, m)))
        return rc;

    dg_rule_ctx x;
    turns_make_ctx(t, c, &x);
    dg_rule_effects fx;
    dg_rule_effects_init(&fx);
    next.awaiting = turns_staged(t, r)->awaiting; /* a delivery above may have ended a wait */
    dg_rule_on_message(&next, &x, kind, pos, mentions, now, &fx);
    if ((!dg_turn_state_same(&next, &r->st) || !r->in_db) &&
        (rc = save_for_message(t, r, &next, m, kind, pos, now)))
        return rc;
    if ((rc = turns_queue_effects(t, r, &fx, &next, now, kick)))
        return rc;
    int64_t seq = r->st.msg_seq;
    if ((rc = turns_install(t, r, &next)) == DG_OK && next.msg_seq != seq &&
        !atomic_load(&r->unanswered_ms))
        atomic_store(&r->unanswered_ms, now);
    return rc;
}

/*
 * Message m reached this instance after another instance sharing the store
 * took it in (and stored what it changed): what this one keeps in memory
 * of m's scope moves as ingest_message moves it. Above all msg_seq, which
 * runs compare: a run of an agent here resolved before m came did not see
 * m, and its silence must not pass the turn on m (the scope would rest
 * with m unanswered). Writer held.
 */
static int ingest_taken_elsewhere(dg_turns *t, turns_chan *c, const dg_turn_message *m,
                                  dg_sender_kind kind, const dg_agent_cfg *sender_agent,
                                  int64_t now)
{
    dg_scope sc;
    int top_level;
    int rc;
    if (kind == DG_SENDER_HANDOFF)
        return DG_OK; /* no message for the turns */
    if ((rc = turns_message_scope(t, m, &sc, &top_level)))
        return rc;
    if (kind == DG_SENDER_MODERATOR && top_level)
        return DG_OK;
    turns_scope *r;
    if ((rc = turns_scope_get(t, c, &sc, &r)))
        return rc;
    if (kind == DG_SENDER_MODERATOR) {
        turns_recent_push(r, m->content, DG_NOBODY, 1, 0, now);
        return DG_OK; /* no new message for the turns */
    }
    r->wake_fp[0] = '\0';
    turns_recent_push(r, m->content,
                      sender_agent ? turns_member_pos(c, sender_agent->agent_id) : DG_NOBODY, 0,
                      kind == DG_SENDER_HUMAN, now);
    dg_turn_state next = *turns_staged(t, r);
    next.msg_seq++;
    if ((rc = turns_install(t, r, &next)) == DG_OK && !atomic_load(&r->unanswered_ms))
        atomic_store(&r->unanswered_ms, now);
    return rc;
}

static int ingest_locked(dg_turns *t, const dg_turn_message *m, dg_sender_kind kind,
                         const dg_agent_cfg *sender_agent, dg_admin_cmd cmd, int64_t now, int *kick,
                         turns_owner_action *oa)
{
    int rc;
    /* Per agent session, before the dedup: every account reports it. */
    if (m->recipient && (kind == DG_SENDER_MODERATOR || kind == DG_SENDER_HANDOFF) &&
        (rc = deliver_locked(t, m->recipient)))
        return rc;
    turns_chan *c;
    if ((rc = turns_chan_get(t, m->channel_id, &c)))
        return rc;
    /* Every instance whose host runs its agents on the command knows it;
     * anyone's later message is what the agents answer from then on. */
    if (cmd != DG_ADMIN_NONE)
        turns_note_command(c, m->content, now);
    else if (kind != DG_SENDER_MODERATOR && kind != DG_SENDER_HANDOFF)
        c->cmd_fp[0] = '\0';
    int fresh, here;
    if ((rc = ingest_dedup(t, c, m, now, &fresh, &here)))
        return rc;
    if (!fresh)
        return here && cmd == DG_ADMIN_NONE && c->mode != DG_MODE_CLOSED
                   ? ingest_taken_elsewhere(t, c, m, kind, sender_agent, now)
                   : DG_OK;
    if (cmd != DG_ADMIN_NONE)
        return turns_admin_locked(t, m, cmd, now, kick, oa);
    if (kind == DG_SENDER_HUMAN && (rc = command_hint(t, c, m, now, kick)))
        return rc;
    if (c->mode == DG_MODE_CLOSED)
        return closed_notice(t, c, m, kind, now, kick);
    return ingest_message(t, c, m, kind, sender_agent, now, kick);
}

int dg_turns_ingest(dg_turns *t, const dg_turn_message *m, char *err, size_t err_len)
{
    if (!m->channel_id || !*m->channel_id || strlen(m->channel_id) >= DG_SCOPE_ID_MAX) {
        snprintf(err, err_len,
                 "message_received: event.channelId is missing or longer than %d "
                 "characters; the host must say where the message was posted",
                 DG_SCOPE_ID_MAX - 1);
        return DG_ERR_INVALID;
    }
    if (m->message_id && (m->message_id[0] == '~' || strlen(m->message_id) >= DG_SCOPE_ID_MAX)) {
        snprintf(err, err_len,
                 "message_received: event.messageId \"%.40s\" is not a message id "
                 "(it starts with '~' or is longer than %d characters)",
                 m->message_id, DG_SCOPE_ID_MAX - 1);
        return DG_ERR_INVALID;
    }
    if (!m->sender_id || !*m->sender_id) {
        snprintf(err, err_len,
                 "message_received: event.senderId is missing; the host must say "
                 "who posted the message");
        return DG_ERR_INVALID;
    }
    if (m->recipient && !turns_valid_session(m->recipient)) {
        snprintf(err, err_len,
                 "message_received: ctx.sessionKey names no agent session in a "
                 "channel (agent, channel, at most %d characters each)",
                 DG_SCOPE_ID_MAX - 1);
        return DG_ERR_INVALID;
    }
    /* The host reports deliveries per agent session: waits may be armed. */
    if (m->recipient && !atomic_load(&t->wake_tracking))
        atomic_store(&t->wake_tracking, 1);
    const dg_config *cfg = &t->p->cfg;
    const dg_agent_cfg *agent = NULL;
    dg_sender_kind kind;
    if (dg_config_is_moderator(cfg, m->sender_id))
        kind = is_bare_mention(m->content) || turns_is_admin_reply(m->content)
                   ? DG_SENDER_HANDOFF
                   : DG_SENDER_MODERATOR;
    else if ((agent = dg_config_agent_by_user(cfg, m->sender_id)))
        kind = DG_SENDER_AGENT;
    else
        kind = m->sender_is_bot ? DG_SENDER_BOT : DG_SENDER_HUMAN;
    /* A human's command: an admin's runs, anyone else's is refused in one
     * line (not taken as speech an agent would answer). */
    dg_admin_cmd cmd = kind == DG_SENDER_HUMAN ? dg_admin_parse(m->content) : DG_ADMIN_NONE;
    if (cmd != DG_ADMIN_NONE && !turns_is_admin(cfg, m->sender_id))
        cmd = DG_ADMIN_REFUSED;

    int64_t now = dg_now_ms(t->p);
    if (turns_txn_begin_for(t, m->channel_id) != DG_OK) {
        snprintf(err, err_len, "message_received: the state database is not available");
        return DG_ERR_IO;
    }
    int kick = 0;
    turns_owner_action oa = {.cmd = DG_ADMIN_NONE};
    int rc = ingest_locked(t, m, kind, agent, cmd, now, &kick, &oa);
    /* After the message's own change (which may have added the recipient
     * by a mention of it): the recipient receives this channel. */
    if (rc == DG_OK && m->recipient)
        rc = recipient_reads(t, m->recipient, now);
    if (rc == DG_OK && m->recipient && !atomic_load(&t->per_agent) &&
        (rc = dg_store_turns_per_agent_note(t->p->store)) == DG_OK)
        atomic_store(&t->per_agent, 1);
    /* An admin command is answered by the moderator, not by a run. Best
     * effort: the nudge is a safety net, the message is recorded anyway. */
    if (rc == DG_OK && m->recipient && cmd == DG_ADMIN_NONE)
        (void)arm_nudge_locked(t, m->recipient,
                               kind == DG_SENDER_MODERATOR || kind == DG_SENDER_HANDOFF, now);
    if (rc)
        snprintf(err, err_len,
                 "message_received: could not record message %s of channel %s "
                 "(%s: %s)",
                 m->message_id ? m->message_id : "(no id)", m->channel_id, dg_status_name(rc),
                 dg_store_errmsg(t->p->store));
    int failed = rc;
    /* Past the mirror's bound? Read while the writer is held (every change
     * of the mirror holds it), so without the mirror's lock. */
    int over = t->scopes.n > t->evict_at;
    rc = turns_txn_finish(t, rc);
    if (rc != DG_OK && !failed)
        snprintf(err, err_len,
                 "message_received: the state database did not commit message %s "
                 "of channel %s; nothing of it was recorded",
                 m->message_id ? m->message_id : "(no id)", m->channel_id);
    if (rc == DG_OK && oa.cmd != DG_ADMIN_NONE && turns_owner_reply(t, &oa, now) == DG_OK)
        kick = 1;
    if (rc == DG_OK && kick)
        dg_outbox_kick_all(t->p);
    if (rc == DG_OK && (over || oa.cmd != DG_ADMIN_NONE)) /* a command's reply may add scopes */
        turns_evict_if_over(t, now);
    return rc;
}
