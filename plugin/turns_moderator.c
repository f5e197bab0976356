/*
 * turns_moderator.c -- the moderator's messages a change owes (hand-off,
 * rest notice, idle reminder), queued through the outbox in the change's
 * transaction, and the fingerprints of recent messages that tell which
 * message a run answers.
 * Records and locking: turns_int.h, turns_engine.c.
 */
#include "store_outbox.h"
#include "turns_int.h"
#include "turns_judge.h"

/* ---- moderator messages ------------------------------------------------------- */

const char *turns_user_of(const dg_turns *t, const turns_chan *c, int pos)
{
    if (pos < 0 || pos >= c->n)
        return NULL;
    return dg_config_agent_user(dg_config_agent(&t->p->cfg, c->members[pos]),
                                dg_platform_of_channel(c->id));
}

void turns_reply_target(const char *channel, const char *thread, char *out, size_t cap)
{
    if (dg_chat_target_make(channel, thread, out, cap) != DG_OK)
        snprintf(out, cap, "%s", channel);
}

char *turns_thread_target(const char *channel, const char *thread)
{
    char target[DG_CHAT_TARGET_MAX];
    /* An id neither platform has: kept as it came, refused by the outbox
     * with a line in the log when a message is owed there. */
    if (dg_chat_target_make(channel, thread, target, sizeof target) != DG_OK)
        return strdup(thread);
    return strdup(target);
}

int turns_hand_open_question(dg_turns *t, turns_scope *r, const dg_rule_ctx *x, dg_turn_state *next,
                             int from, int64_t now, int *kick)
{
    if (r->recent_head == 0 || !next->active || next->budget)
        return DG_OK;
    const turns_recent *latest = &r->recent[(r->recent_head - 1) % TURNS_RECENT_MAX];
    int sp = dg_rule_speaker(next, x);
    const char *uid = sp != DG_NOBODY && sp != from ? turns_user_of(t, r->chan, sp) : NULL;
    if (!latest->human || !latest->fp[0] || !uid)
        return DG_OK;
    char mention[48];
    snprintf(mention, sizeof mention, "<@%s>", uid);
    dg_tpl_vars v = {
        .agentMention = mention, .agent = r->chan->members[from], .question = latest->fp};
    const char *post = r->post_channel ? r->post_channel : r->chan->id;
    int rc = turns_render_and_enqueue(t, "open_question.md", &v, post, uid, now, kick, NULL, 0);
    if (rc != DG_OK)
        return rc == DG_ERR_INTERNAL ? DG_OK : rc; /* no template: logged, the turn moves on */
    dg_rule_await_wake(next, x, sp);
    turns_nudge_arm_handoff(t, r, sp, now);
    r->open_question_handed = 1;
    dg_log(t->p, OC_LOG_INFO,
           "turns: a human's message came in while %s was answering the one before it in "
           "channel %s; the moderator gives it to %s",
           r->chan->members[from], r->chan->id, r->chan->members[sp]);
    return DG_OK;
}

int turns_post_where_written(turns_scope *r, const char *channel, const dg_turn_message *m)
{
    if (r->scope.kind == DG_SCOPE_THREAD)
        return DG_OK; /* a thread's scope posts in its own thread */
    char *to = NULL;
    if (m->thread_id && *m->thread_id && !(to = turns_thread_target(channel, m->thread_id)))
        return DG_ERR_NOMEM;
    free(r->post_channel);
    r->post_channel = to;
    return DG_OK;
}

int turns_enqueue(dg_turns *t, const char *channel, const char *content, const char *mention,
                  int64_t now, int *kick)
{
    TURNS_ASSERT_WRITER(t);
    const char *ids[1] = {mention};
    int rc = dg_outbox_enqueue(t->p->store, channel, content, mention ? ids : NULL, mention ? 1 : 0,
                               now);
    if (rc == DG_OK) {
        *kick = 1;
    } else if (rc == DG_ERR_INVALID) {
        /* Not a channel of a platform we post to (another relay's ids):
         * nothing can ever be posted there, and the turn state must move
         * on regardless. */
        dg_log(t->p, OC_LOG_WARN,
               "turns: %s is not a Discord or Slack channel id; the "
               "moderator message owed there is dropped",
               channel);
        rc = DG_OK;
    } else {
        dg_log(t->p, OC_LOG_ERROR,
               "turns: could not queue a moderator message for channel %s "
               "(%s)",
               channel, dg_status_name(rc));
    }
    return rc;
}

/* The fingerprint of a wake message (turns_scope.wake_fp): its first line
 * with user mentions dropped and blanks trimmed, at most cap - 1 bytes cut
 * on a character boundary; "" when nothing is left. */
static void wake_fingerprint(const char *text, char *out, size_t cap)
{
    size_t n = 0;
    const char *p = text;
    while (*p == '\n' || *p == '\r' || *p == ' ' || *p == '\t')
        p++;
    while (*p && *p != '\n' && *p != '\r' && n + 1 < cap) {
        if (p[0] == '<' && p[1] == '@') { /* <@id> / <@!id>: rendered as a name */
            const char *e = strchr(p, '>');
            if (e) {
                p = e + 1;
                continue;
            }
        }
        out[n++] = *p++;
    }
    if (((unsigned char)*p & 0xC0) == 0x80) {
        /* Cut inside a character: drop what was copied of it. */
        while (n > 0 && ((unsigned char)out[n - 1] & 0xC0) == 0x80)
            n--;
        if (n > 0)
            n--;
    }
    while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\t'))
        n--;
    out[n] = '\0';
}

/*
 * The fingerprint of a human's or an agent's message (turns_scope.recent):
 * its longest piece between line breaks and <...> tokens (mentions, channel
 * links, custom emoji: a host renders them its own way), trimmed, at most
 * cap - 1 bytes cut on a character boundary; "" when nothing is left.
 */
static size_t message_fingerprint(const char *text, char *out, size_t cap)
{
    const char *best = NULL;
    size_t best_len = 0;
    const char *p = text ? text : "";
    while (*p) {
        const char *seg = p;
        /* To the line's end or a markup span "<...>" (a '<' with no '>'
         * after it is text): strcspn, not a loop per character. */
        for (;;) {
            p += strcspn(p, "\n\r<");
            if (*p != '<' || strchr(p, '>'))
                break;
            p++;
        }
        const char *end = p;
        while (seg < end && (*seg == ' ' || *seg == '\t'))
            seg++;
        while (end > seg && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if ((size_t)(end - seg) > best_len) {
            best = seg;
            best_len = (size_t)(end - seg);
        }
        if (*p == '<')
            p = strchr(p, '>') + 1;
        else if (*p)
            p++;
    }
    size_t n = best_len < cap - 1 ? best_len : cap - 1;
    if (n < best_len) {
        /* Cut inside a character: drop what was copied of it. */
        while (n > 0 && ((unsigned char)best[n] & 0xC0) == 0x80)
            n--;
    }
    if (n)
        memcpy(out, best, n);
    out[n] = '\0';
    return n;
}

void turns_recent_push(turns_scope *r, const char *content, int author, int only_text, int human,
                       int64_t now)
{
    turns_recent *m = &r->recent[r->recent_head % TURNS_RECENT_MAX];
    char fp[sizeof m->fp];
    size_t n = message_fingerprint(content, fp, sizeof fp);
    if (only_text && !n)
        return;
    memcpy(m->fp, fp, n + 1); /* what follows the '\0' is never read */
    m->author = author;
    m->human = human;
    m->at_ms = now;
    r->recent_head++;
}

/*
 * 1 when prompt answers an older message of scope r than its newest, for
 * the agent at member position pos: the newest (not its own) is not in
 * the prompt, and an older one of someone else's (long enough to count)
 * is. 0 otherwise, also when there is no evidence either way.
 */
int turns_answers_older(const turns_scope *r, int pos, const char *prompt)
{
    if (r->recent_head == 0)
        return 0;
    const turns_recent *latest = &r->recent[(r->recent_head - 1) % TURNS_RECENT_MAX];
    if (latest->author == pos || !latest->fp[0] || strstr(prompt, latest->fp))
        return 0;
    unsigned older =
        r->recent_head - 1 < TURNS_RECENT_MAX - 1 ? r->recent_head - 1 : TURNS_RECENT_MAX - 1;
    for (unsigned i = 1; i <= older; i++) {
        const turns_recent *o = &r->recent[(r->recent_head - 1 - i) % TURNS_RECENT_MAX];
        if (o->author != pos && strlen(o->fp) >= TURNS_RECENT_FP_EVIDENCE && strstr(prompt, o->fp))
            return 1;
    }
    return 0;
}

int turns_reply_owed(const dg_turn_state *s, int pos, int64_t window, int64_t now)
{
    int from = s->permit;
    if (from == DG_NOBODY || from == pos || from < 0 || from >= 64 ||
        !(s->owed & ((uint64_t)1 << from)))
        return 0;
    return window <= 0 || now - s->permit_ms <= window;
}

int turns_answers_before_owed_reply(const turns_scope *r, const dg_rule_ctx *x, int pos,
                                    const char *prompt, int64_t now)
{
    /* Bounded also without a turn timeout: a reply that never came holds
     * nobody for long. */
    int64_t window = x->timeout_ms > 0 ? x->timeout_ms : TURNS_WAKE_FP_MAX_MS;
    if (!turns_reply_owed(&r->st, pos, window, now) || r->recent_head == 0)
        return 0;
    int from = r->st.permit;
    const turns_recent *latest = &r->recent[(r->recent_head - 1) % TURNS_RECENT_MAX];
    /* A human's message that came in after the previous speaker's run
     * ended is newer than the reply on its way: a run on it answers the
     * newest message, and holding it back would leave the human's question
     * to nobody (the run that follows is for the reply). */
    if (latest->human && latest->at_ms > r->st.permit_ms)
        return 0;
    return latest->author != from && latest->author != pos &&
           strlen(latest->fp) >= TURNS_RECENT_FP_EVIDENCE && strstr(prompt, latest->fp) != NULL;
}

int turns_render_and_enqueue(dg_turns *t, const char *name, const dg_tpl_vars *vars,
                             const char *channel, const char *mention, int64_t now, int *kick,
                             char *fp, size_t fp_cap)
{
    TURNS_ASSERT_WRITER(t);
    char *text = t->p->templates ? dg_templates_render(t->p->templates, name, vars) : NULL;
    if (!text) {
        dg_log(t->p, OC_LOG_ERROR,
               "turns: template %s could not be rendered; the moderator "
               "message for channel %s is not sent",
               name, channel);
        return DG_ERR_INTERNAL;
    }
    if (fp)
        wake_fingerprint(text, fp, fp_cap);
    int rc = turns_enqueue(t, channel, text, mention, now, kick);
    free(text);
    return rc;
}

/* 1 when the comma-separated ids of list (may be NULL) hold id. */
static int lists_id(const char *list, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, id, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

int turns_mention_owed(dg_turns *t, const char *target, const char *uid, int *yes)
{
    TURNS_ASSERT_WRITER(t);
    dg_outbox_row *rows = NULL;
    size_t n = 0;
    *yes = 0;
    char channel[DG_CHAT_ID_MAX], thread[DG_CHAT_ID_MAX];
    if (!dg_chat_target_split(target, channel, thread))
        return DG_OK; /* nothing is ever queued there */
    int rc = dg_store_outbox_pending_of(t->p->store, channel, 0, 64, &rows, &n);
    for (size_t i = 0; rc == DG_OK && i < n && !*yes; i++)
        *yes = strcmp(rows[i].thread_id ? rows[i].thread_id : "", thread) == 0 &&
               lists_id(rows[i].mentions, uid);
    dg_outbox_rows_free(rows, n);
    return rc;
}

/* The moderator messages fx owes scope r, whose next state is next. A
 * wake message that is not queued after all (no user id, not a Discord
 * channel) ends the wait for it in next: nothing would ever end it. */
static int queue_effects(dg_turns *t, turns_scope *r, const dg_rule_effects *fx,
                         dg_turn_state *next, int64_t now, int *kick)
{
    TURNS_ASSERT_WRITER(t);
    turns_chan *c = r->chan;
    const char *post = r->post_channel ? r->post_channel : c->id;
    int rc = DG_OK;
    if (next->budget) {
        /* A budget holds the scope: its notice was the last word; nobody
         * is woken, reminded or told of a rest until it is lifted. */
        if (fx->handoff_to != DG_NOBODY)
            dg_rule_wake_delivered(next, fx->handoff_to);
        if (fx->idle_reminder && c->initiator_pos != DG_NOBODY)
            dg_rule_wake_delivered(next, c->initiator_pos);
        return DG_OK;
    }
    if (fx->handoff_to != DG_NOBODY) {
        /* A bare mention wakes the next speaker, who already consumed the
         * latest message silently. */
        const char *uid = turns_user_of(t, c, fx->handoff_to);
        int queued = 0, owed = 0;
        if (uid && (rc = turns_mention_owed(t, post, uid, &owed)) == DG_OK && owed)
            queued = 1; /* the one still owed wakes it: no second mention */
        else if (uid && rc == DG_OK) {
            char text[64];
            snprintf(text, sizeof text, "<@%s>", uid);
            rc = turns_enqueue(t, post, text, uid, now, &queued);
        }
        if (queued) {
            *kick = 1;
            turns_nudge_arm_handoff(t, r, fx->handoff_to, now);
        } else
            dg_rule_wake_delivered(next, fx->handoff_to);
    }
    if (rc == DG_OK && fx->rest_notice) {
        char limit[24];
        snprintf(limit, sizeof limit, "%ld", (long)t->p->cfg.turn_max_agent_messages);
        dg_tpl_vars v = {.maxAgentMessages = limit};
        rc = turns_render_and_enqueue(t, "rest.md", &v, post, NULL, now, kick, NULL, 0);
    }
    if (rc == DG_OK && fx->idle_reminder) {
        const char *uid = turns_user_of(t, c, c->initiator_pos);
        dg_discussion d;
        memset(&d, 0, sizeof d);
        int have = dg_discuss_lookup_locked(t->p->store, c->id, &d) == DG_DISCUSSION_ACTIVE;
        char mention[48] = "", chan[48] = "", origin[48] = "";
        if (uid)
            snprintf(mention, sizeof mention, "<@%s>", uid);
        snprintf(chan, sizeof chan, "<#%s>", c->id);
        if (have && d.origin_channel_id)
            snprintf(origin, sizeof origin, "<#%s>", d.origin_channel_id);
        char *where = have ? dg_discuss_suggested_path_locked(t->p, &d) : NULL;
        dg_tpl_vars v = {.discussGuide = have ? d.discuss_guide : NULL,
                         .initiatorMention = mention,
                         .discussionChannel = chan,
                         .originChannel = origin,
                         .status = "active",
                         .summaryPath = where};
        int queued = 0;
        char fp[sizeof r->wake_fp];
        rc = have && !where ? DG_ERR_NOMEM
                            : turns_render_and_enqueue(t, "idle.md", &v, post, uid, now, &queued,
                                                       fp, sizeof fp);
        free(where);
        dg_discussion_clear(&d);
        if (queued) {
            *kick = 1;
            memcpy(r->wake_fp, fp, sizeof fp);
            r->wake_fp_pos = c->initiator_pos;
            r->wake_fp_ms = now;
        } else {
            dg_rule_wake_delivered(next, c->initiator_pos);
        }
    }
    return rc;
}

int turns_queue_effects(dg_turns *t, turns_scope *r, const dg_rule_effects *fx, dg_turn_state *next,
                        int64_t now, int *kick)
{
    /* A move by the order is the judge's to decide, when one is on. */
    dg_rule_effects own = *fx;
    int rc = turns_judge_intercept(t, r, &own, next);
    return rc == DG_OK ? queue_effects(t, r, &own, next, now, kick) : rc;
}

int turns_queue_effects_chosen(dg_turns *t, turns_scope *r, const dg_rule_effects *fx,
                               dg_turn_state *next, int64_t now, int *kick)
{
    turns_judge_overruled(t, r);
    return queue_effects(t, r, fx, next, now, kick);
}
