/*
 * turns_admin.c -- `!dirigent` commands of an admin (status, rest, wake,
 * skip, close, help): the state change and the reply (admin_*.md
 * templates) commit together. Records and locking: turns_int.h,
 * turns_engine.c.
 */
#include "turns_int.h"

/* ---- admin commands ------------------------------------------------------------- */

int turns_is_admin(const dg_config *cfg, const char *user_id)
{
    for (size_t i = 0; i < cfg->n_admins; i++)
        if (strcmp(cfg->admins[i], user_id) == 0)
            return 1;
    return 0;
}

int turns_is_admin_reply(const char *content)
{
    return content &&
           strncmp(content, DG_ADMIN_REPLY_PREFIX, sizeof DG_ADMIN_REPLY_PREFIX - 1) == 0;
}

/* A growing reply text; on out of memory (or a template that cannot be
 * rendered) it keeps nomem set. */
typedef struct reply_buf {
    dg_buf b;
    int nomem;
} reply_buf;

static void reply_add(reply_buf *r, const char *text)
{
    if (!r->nomem && (!text || dg_buf_adds(&r->b, text)))
        r->nomem = 1;
}

/* The reply prefix, then template name (admin_*.md) rendered with v. */
static void reply_tpl(const dg_turns *t, reply_buf *r, const char *name, const dg_tpl_vars *v)
{
    static const dg_tpl_vars none;
    char *text = t->p->templates ? dg_templates_render_trim(t->p->templates, name, v ? v : &none)
                                 : NULL;
    if (!text)
        dg_log(t->p, OC_LOG_ERROR, "turns: template %s could not be rendered; the admin reply "
               "is not sent", name);
    reply_add(r, DG_ADMIN_REPLY_PREFIX);
    reply_add(r, text);
    free(text);
}

/* "a, b" of the members of c whose bit is set in mask, or `none`. 0 or
 * -1 when out of memory; out is freed by the caller. */
static int member_list(const turns_chan *c, uint64_t mask, const char *none, dg_buf *out)
{
    for (int i = 0; i < c->n; i++)
        if ((mask & ((uint64_t)1 << i)) &&
            ((out->len && dg_buf_adds(out, ", ")) || dg_buf_adds(out, c->members[i])))
            return -1;
    return out->len ? 0 : dg_buf_adds(out, none);
}

static const char *admin_cmd_name(dg_admin_cmd cmd)
{
    switch (cmd) {
    case DG_ADMIN_STATUS: return "status";
    case DG_ADMIN_REST: return "rest";
    case DG_ADMIN_WAKE: return "wake";
    case DG_ADMIN_SKIP: return "skip";
    case DG_ADMIN_CLOSE: return "close";
    case DG_ADMIN_ROTATE: return "rotate";
    case DG_ADMIN_CANCEL: return "cancel";
    case DG_ADMIN_HELP: return "help";
    case DG_ADMIN_ORDER: return "order";
    case DG_ADMIN_ADD: return "add";
    case DG_ADMIN_REMOVE: return "remove";
    case DG_ADMIN_UNKNOWN: return "(unknown)";
    case DG_ADMIN_NONE: break;
    }
    return "none";
}

/* What standing means, for `!dirigent order`. Static strings. */
static const char *standing_label(dg_member_standing s)
{
    switch (s) {
    case DG_MEMBER_NEW: return "@mentioned, not yet seen receiving this channel";
    case DG_MEMBER_READS: return "receives this channel";
    case DG_MEMBER_RAN: return "runs here";
    case DG_MEMBER_LEFT: return "left: it could not read this channel or never ran here";
    case DG_MEMBER_REMOVED: return "removed by an admin";
    case DG_MEMBER_STANDINGS: break;
    }
    return "unknown";
}

/* "a (why), b (why)" of c's members in the order (out = 0) or out of it
 * (out = 1), or `none`. 0 or -1 when out of memory. */
static int order_list(const dg_turns *t, const turns_chan *c, int out, const char *none,
                      dg_buf *b)
{
    for (int i = 0; i < c->n; i++) {
        int configured = dg_config_agent(&t->p->cfg, c->members[i]) != NULL;
        int is_out = c->standing[i] >= DG_MEMBER_LEFT || !configured;
        if (is_out != out)
            continue;
        const char *why = configured ? standing_label(c->standing[i])
                                     : "no longer among the gateway's agents";
        if ((b->len && dg_buf_adds(b, ", ")) || dg_buf_adds(b, c->members[i]) ||
            dg_buf_adds(b, " (") || dg_buf_adds(b, why) || dg_buf_adds(b, ")"))
            return -1;
    }
    return b->len ? 0 : dg_buf_adds(b, none);
}

/* The agent an `add` / `remove` names: its first mention of a configured
 * agent, else an "@name" in its text, else its first word as an agent id
 * (with or without '@'). NULL when it names none. */
static const dg_agent_cfg *admin_target(const dg_turns *t, const dg_turn_message *m)
{
    const dg_config *cfg = &t->p->cfg;
    for (size_t i = 0; i < m->n_mentions; i++) {
        const dg_agent_cfg *a = dg_config_agent_by_user(cfg, m->mentions[i]);
        if (a)
            return a;
    }
    char word[128];
    if (dg_admin_arg(m->content, word, sizeof word) == 1) {
        const char *id = word[0] == '@' ? word + 1 : word;
        char *end;
        if (strncmp(word, "<@", 2) == 0 && (end = strchr(word, '>'))) {
            *end = '\0';
            const dg_agent_cfg *a = dg_config_agent_by_user(cfg, word[2] == '!' ? word + 3
                                                                                 : word + 2);
            if (a)
                return a;
        }
        const dg_agent_cfg *a = dg_config_agent(cfg, id);
        if (a)
            return a;
    }
    if (cfg->n_agents && m->content && strchr(m->content, '@')) {
        unsigned char *hit = calloc(cfg->n_agents, 1);
        const dg_agent_cfg *a = NULL;
        if (hit && dg_agent_names_mentioned(t->names, m->content, hit))
            for (size_t i = 0; !a && i < cfg->n_agents; i++)
                if (hit[i])
                    a = &cfg->agents[i];
        free(hit);
        return a;
    }
    return NULL;
}

/* `!dirigent order | add | remove` on scope r: the reply into b; a removal
 * changes r's state itself (turns_member_leave). Writer held. */
static int admin_members(dg_turns *t, const dg_turn_message *m, dg_admin_cmd cmd, turns_scope *r,
                         int64_t now, const char *cause, int *kick, reply_buf *b)
{
    turns_chan *c = r->chan;
    int rc = OC_OK;
    const dg_agent_cfg *a = cmd == DG_ADMIN_ORDER ? NULL : admin_target(t, m);
    if (cmd != DG_ADMIN_ORDER && !a) {
        reply_tpl(t, b, "admin_member_unknown.md", NULL);
        return OC_OK;
    }
    const char *tpl = "admin_order.md";
    if (cmd == DG_ADMIN_ADD) {
        int pos;
        dg_member_standing was;
        if ((rc = turns_member_admit(t, c, a->agent_id, now, &pos, &was)))
            return rc;
        tpl = pos == DG_NOBODY ? "admin_member_unknown.md"
            : was < DG_MEMBER_LEFT ? "admin_add_already.md" : "admin_add.md";
    } else if (cmd == DG_ADMIN_REMOVE) {
        int pos = turns_member_pos(c, a->agent_id);
        if (pos == DG_NOBODY || c->standing[pos] >= DG_MEMBER_LEFT) {
            tpl = "admin_remove_not_member.md";
        } else {
            if ((rc = turns_member_leave(t, r, pos, DG_MEMBER_REMOVED, DG_NOBODY, now, cause, kick)))
                return rc;
            tpl = "admin_remove.md";
        }
    }
    dg_buf order = {0}, out = {0};
    if (order_list(t, c, 0, "nobody yet", &order) || order_list(t, c, 1, "none", &out))
        b->nomem = 1;
    dg_tpl_vars v = {.agent = a ? a->agent_id : NULL, .turnOrder = order.s,
                     .outOfOrder = out.s};
    if (!b->nomem)
        reply_tpl(t, b, tpl, &v);
    dg_buf_free(&order);
    dg_buf_free(&out);
    return OC_OK;
}

/* The status lines of scope r (state st, timeouts applied) into b. */
static void admin_status(const dg_turns *t, const turns_scope *r, const dg_turn_state *st,
                         const dg_rule_ctx *x, reply_buf *b)
{
    const turns_chan *c = r->chan;
    char label[DG_SCOPE_LABEL_MAX], msgs[24], max[24];
    dg_buf order = {0}, passed = {0};
    if (member_list(c, c->present, "none yet", &order) ||
        member_list(c, st->silent & c->present, "none", &passed))
        b->nomem = 1;
    int sp = dg_rule_speaker(st, x);
    snprintf(msgs, sizeof msgs, "%lld", (long long)st->agent_msgs);
    snprintf(max, sizeof max, "%ld", (long)t->p->cfg.turn_max_agent_messages);
    dg_tpl_vars v = {
        .policy = dg_session_policy_name(t->p->cfg.session_policy),
        .scope = dg_scope_label(&r->scope, label),
        .mode = dg_channel_mode_name(c->mode),
        .turnOrder = order.s,
        .speaker = c->mode == DG_MODE_CLOSED ? "none (closed)"
                 : !st->active ? (st->rested ? "resting (loop guard)" : "dormant")
                 : sp != DG_NOBODY ? c->members[sp] : "nobody eligible",
        .passed = passed.s,
        .agentMessages = msgs,
        .maxAgentMessages = max,
    };
    if (!b->nomem)
        reply_tpl(t, b, "admin_status.md", &v);
    dg_buf_free(&order);
    dg_buf_free(&passed);
    if (c->mode == DG_MODE_CLOSED) {
        char *note = t->p->templates
            ? dg_templates_render_trim(t->p->templates, "admin_status_closed.md", &v) : NULL;
        reply_add(b, "\n");
        reply_add(b, note);
        free(note);
    }
}

/*
 * Run admin command cmd of message m (already claimed by the dedup) on the
 * message's scope: under policy "thread" a top-level command acts on the
 * channel's latest top-level thread (what channel-level sessions follow)
 * and opens no thread of its own -- a command is not speech. The state
 * change and the reply commit together. Writer held.
 */
int turns_owner_reply(dg_turns *t, const turns_owner_action *oa, int64_t now)
{
    char msg[512], text[600];
    const char *thread = oa->thread[0] ? oa->thread : NULL;
    if (oa->cmd == DG_ADMIN_ROTATE)
        dg_admin_rotate(t->p, oa->channel, thread, msg, sizeof msg);
    else
        dg_admin_cancel(t->p, oa->channel, thread, oa->speaker[0] ? oa->speaker : NULL, msg,
                        sizeof msg);
    snprintf(text, sizeof text, DG_ADMIN_REPLY_PREFIX "%s", msg);
    if (turns_txn_begin(t) != OC_OK)
        return OC_ERR_IO;
    int queued = 0;
    int rc = turns_enqueue(t, oa->post, text, NULL, now, &queued);
    rc = turns_txn_finish(t, rc);
    if (rc != OC_OK)
        dg_log(t->p, OC_LOG_WARN, "turns: the reply to \"!dirigent %s\" in %s could not be "
               "queued (%s); the command itself was carried out", admin_cmd_name(oa->cmd),
               oa->channel, oc_status_name(rc));
    return rc == OC_OK && queued ? OC_OK : OC_ERR_IO;
}

int turns_admin_locked(dg_turns *t, const dg_turn_message *m, dg_admin_cmd cmd, int64_t now,
                 int *kick, turns_owner_action *oa)
{
    turns_chan *c;
    int rc;
    if ((rc = turns_chan_get(t, m->channel_id, &c)))
        return rc;
    dg_scope sc;
    int top_level;
    if ((rc = turns_message_scope(t, m, &sc, &top_level)))
        return rc;
    turns_scope *r;
    if ((rc = top_level ? turns_follow_scope(t, c, &r) : turns_scope_get(t, c, &sc, &r)))
        return rc;
    if (m->thread_id && *m->thread_id && r->scope.kind == DG_SCOPE_THREAD && !r->post_channel &&
        !(r->post_channel = strdup(m->thread_id)))
        return OC_ERR_NOMEM;
    const char *post = r->post_channel ? r->post_channel : c->id;

    char label[DG_SCOPE_LABEL_MAX];
    dg_log(t->p, OC_LOG_INFO, "turns: admin %s ran \"!dirigent %s\" in channel %s (%s)",
           m->sender_id, admin_cmd_name(cmd), c->id, dg_scope_label(&r->scope, label));
    char cause[160];
    snprintf(cause, sizeof cause, "admin command !dirigent %s by %s", admin_cmd_name(cmd),
             m->sender_id);

    dg_rule_ctx x;
    turns_make_ctx(t, c, &x);
    dg_rule_effects fx;
    dg_rule_effects_init(&fx);
    dg_turn_state next = r->st;
    reply_buf b = {0};
    const char *mention = NULL;
    int changes = 0;
    if (cmd == DG_ADMIN_UNKNOWN) {
        /* Whatever the channel's mode: the typo is the news, not the state. */
        char word[33];
        const char *near = dg_admin_suggest(m->content, word, sizeof word);
        dg_tpl_vars v = {.command = word, .suggestion = near};
        reply_tpl(t, &b, near ? "admin_unknown_suggest.md" : "admin_unknown.md", &v);
        char *help = t->p->templates
            ? dg_templates_render_trim(t->p->templates, "admin_help.md", &v) : NULL;
        reply_add(&b, "\n");
        reply_add(&b, help);
        free(help);
    } else if (cmd == DG_ADMIN_STATUS) {
        dg_turn_state view = r->st;
        if (c->mode != DG_MODE_CLOSED)
            dg_rule_expire(&view, &x, now, NULL); /* what a decision now would see */
        admin_status(t, r, &view, &x, &b);
    } else if (c->mode == DG_MODE_CLOSED) {
        reply_tpl(t, &b, "admin_closed.md", NULL);
    } else if (cmd == DG_ADMIN_ORDER || cmd == DG_ADMIN_ADD || cmd == DG_ADMIN_REMOVE) {
        if ((rc = admin_members(t, m, cmd, r, now, cause, kick, &b))) {
            dg_buf_free(&b.b);
            return rc;
        }
    } else if (cmd == DG_ADMIN_CLOSE) {
        /* The discussion area closes it in this transaction; the channel's
         * mirror reloads (closed) before its next use. */
        char path[1024], msg[768];
        int has = dg_admin_arg(m->content, path, sizeof path), closed = 0;
        if (has < 0) {
            char max[24];
            snprintf(max, sizeof max, "%zu", sizeof path - 1);
            reply_tpl(t, &b, "admin_close_path_long.md", &(dg_tpl_vars){.maxBytes = max});
        } else {
            rc = dg_discuss_admin_close_locked(t->p, c->id, has ? path : NULL, now, &closed, msg,
                                               sizeof msg);
            if (rc != OC_OK) {
                dg_buf_free(&b.b);
                return rc;
            }
            reply_add(&b, DG_ADMIN_REPLY_PREFIX);
            reply_add(&b, msg);
        }
    } else if (cmd == DG_ADMIN_ROTATE || cmd == DG_ADMIN_CANCEL) {
        /* Host calls after the commit (turns_owner_action); the turn state stays
         * (an aborted run ends with agent_end like any other). */
        dg_turn_state view = r->st;
        dg_rule_expire(&view, &x, now, NULL);
        int sp = view.active ? dg_rule_speaker(&view, &x) : DG_NOBODY;
        oa->cmd = cmd;
        snprintf(oa->channel, sizeof oa->channel, "%s", c->id);
        snprintf(oa->thread, sizeof oa->thread, "%s", m->thread_id ? m->thread_id : "");
        snprintf(oa->post, sizeof oa->post, "%s", post);
        snprintf(oa->speaker, sizeof oa->speaker, "%s", sp != DG_NOBODY ? c->members[sp] : "");
        return OC_OK;
    } else if (cmd == DG_ADMIN_REST) {
        dg_rule_expire(&next, &x, now, &fx);
        fx.handoff_to = DG_NOBODY; /* nobody is woken into a resting scope */
        dg_rule_admin_rest(&next, now);
        changes = 1;
        reply_tpl(t, &b, "admin_rest.md", NULL);
    } else if (cmd == DG_ADMIN_WAKE) {
        int pos = DG_NOBODY;
        for (size_t i = 0; pos == DG_NOBODY && i < m->n_mentions; i++) {
            const dg_agent_cfg *a = dg_config_agent_by_user(&t->p->cfg, m->mentions[i]);
            int mp = a ? turns_member_pos(c, a->agent_id) : DG_NOBODY;
            if (mp != DG_NOBODY && (c->present & ((uint64_t)1 << mp)))
                pos = mp;
        }
        for (int i = 0; pos == DG_NOBODY && i < c->n; i++)
            if (c->present & ((uint64_t)1 << i))
                pos = i;
        if (pos == DG_NOBODY || dg_rule_admin_wake(&next, &x, pos, now) != 0) {
            reply_tpl(t, &b, "admin_wake_nobody.md", NULL);
        } else {
            changes = 1;
            mention = turns_user_of(t, c, pos);
            char at[96];
            snprintf(at, sizeof at, "<@%s>", mention ? mention : "?");
            reply_tpl(t, &b, "admin_wake.md", &(dg_tpl_vars){.agentMention = at});
        }
    } else if (cmd == DG_ADMIN_SKIP) {
        dg_rule_expire(&next, &x, now, &fx);
        fx.handoff_to = DG_NOBODY; /* that speaker is skipped now */
        int sp = dg_rule_admin_skip(&next, &x, now, &fx);
        if (sp == DG_NOBODY) {
            reply_tpl(t, &b, "admin_skip_nobody.md", NULL);
        } else {
            changes = 1;
            int to = fx.handoff_to;
            fx.handoff_to = DG_NOBODY; /* the reply is the hand-off */
            mention = to != DG_NOBODY ? turns_user_of(t, c, to) : NULL;
            char at[96];
            snprintf(at, sizeof at, "<@%s>", mention ? mention : "");
            dg_tpl_vars v = {.skippedAgent = c->members[sp], .agentMention = at};
            reply_tpl(t, &b, mention ? "admin_skip.md" : fx.idle_reminder
                             ? "admin_skip_initiator.md" : "admin_skip_dormant.md", &v);
        }
    } else {
        reply_tpl(t, &b, "admin_help.md", NULL);
    }
    if (b.nomem) {
        dg_buf_free(&b.b);
        return OC_ERR_NOMEM;
    }
    if (changes && (!dg_turn_state_same(&next, &r->st) || !r->in_db))
        rc = turns_save_scope(t, r, &next, now, cause);
    int queued = 0;
    if (rc == OC_OK)
        rc = turns_enqueue(t, post, b.b.s, mention, now, &queued);
    dg_buf_free(&b.b);
    if (queued)
        *kick = 1;
    else if (mention)
        next.awaiting = 0; /* the reply that would wake it is not posted */
    if (rc == OC_OK)
        rc = turns_queue_effects(t, r, &fx, &next, now, kick);
    if (rc == OC_OK && changes)
        rc = turns_install(t, r, &next);
    return rc;
}
