/*
 * turns_admin.c -- `!dirigent` commands of an admin (status, rest, wake,
 * skip, close, help): the state change and the reply (admin_*.md
 * templates) commit together. Records and locking: turns_int.h,
 * turns_engine.c.
 */
#include "cost_report.h"
#include "turns_int.h"
#include "turns_judge.h"

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

/* The first line of text, blanks trimmed, into out (cap bytes, cut on a
 * character boundary). */
static void first_line(const char *text, char *out, size_t cap)
{
    const char *p = text ? text : "";
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    size_t n = 0;
    while (p[n] && p[n] != '\n' && p[n] != '\r' && n + 1 < cap)
        n++;
    if (p[n] && p[n] != '\n' && p[n] != '\r')
        while (n > 0 && ((unsigned char)p[n] & 0xC0) == 0x80)
            n--; /* cut inside a character: drop what was copied of it */
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    memcpy(out, p, n);
    out[n] = '\0';
}

void turns_note_command(turns_chan *c, const char *content, int64_t now)
{
    first_line(content, c->cmd_fp, sizeof c->cmd_fp);
    c->cmd_ms = now;
}

int turns_prompt_is_command(const turns_chan *c, const char *prompt, int64_t now)
{
    if (!prompt)
        return 0;
    const char *p = prompt;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (turns_is_admin_reply(p))
        return 1;
    /* Only an admin's command: anyone else's `!dirigent` is an ordinary
     * message, which the agents may answer. */
    return c->cmd_fp[0] && now - c->cmd_ms <= TURNS_WAKE_FP_MAX_MS &&
           dg_admin_parse(p) != DG_ADMIN_NONE && strstr(p, c->cmd_fp) != NULL;
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
    char *text =
        t->p->templates ? dg_templates_render_trim(t->p->templates, name, v ? v : &none) : NULL;
    if (!text)
        dg_log(t->p, OC_LOG_ERROR,
               "turns: template %s could not be rendered; the admin reply "
               "is not sent",
               name);
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
static int order_list(const dg_turns *t, const turns_chan *c, int out, const char *none, dg_buf *b)
{
    for (int i = 0; i < c->n; i++) {
        int configured = dg_config_agent(&t->p->cfg, c->members[i]) != NULL;
        int is_out = c->standing[i] >= DG_MEMBER_LEFT || !configured;
        if (is_out != out)
            continue;
        const char *why =
            configured ? standing_label(c->standing[i]) : "no longer among the gateway's agents";
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
            char *bar = strchr(word, '|'); /* Slack's <@U...|name> */
            if (bar)
                *bar = '\0';
            const dg_agent_cfg *a =
                dg_config_agent_by_user(cfg, word[2] == '!' ? word + 3 : word + 2);
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
    int rc = DG_OK;
    const dg_agent_cfg *a = cmd == DG_ADMIN_ORDER ? NULL : admin_target(t, m);
    if (cmd != DG_ADMIN_ORDER && !a) {
        reply_tpl(t, b, "admin_member_unknown.md", NULL);
        return DG_OK;
    }
    const char *tpl = "admin_order.md";
    if (cmd == DG_ADMIN_ADD) {
        int pos;
        dg_member_standing was;
        if ((rc = turns_member_admit(t, c, a->agent_id, now, &pos, &was)))
            return rc;
        tpl = pos == DG_NOBODY       ? "admin_member_unknown.md"
              : was < DG_MEMBER_LEFT ? "admin_add_already.md"
                                     : "admin_add.md";
    } else if (cmd == DG_ADMIN_REMOVE) {
        int pos = turns_member_pos(c, a->agent_id);
        if (pos == DG_NOBODY || c->standing[pos] >= DG_MEMBER_LEFT) {
            tpl = "admin_remove_not_member.md";
        } else {
            if ((rc =
                     turns_member_leave(t, r, pos, DG_MEMBER_REMOVED, DG_NOBODY, now, cause, kick)))
                return rc;
            tpl = "admin_remove.md";
        }
    }
    dg_buf order = {0}, out = {0};
    if (order_list(t, c, 0, "nobody yet", &order) || order_list(t, c, 1, "none", &out))
        b->nomem = 1;
    dg_tpl_vars v = {.agent = a ? a->agent_id : NULL, .turnOrder = order.s, .outOfOrder = out.s};
    if (!b->nomem)
        reply_tpl(t, b, tpl, &v);
    dg_buf_free(&order);
    dg_buf_free(&out);
    return DG_OK;
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
    char held[128];
    snprintf(held, sizeof held, "held by budget.%s (`!dirigent resume` lifts it)",
             dg_budget_key((dg_budget_kind)st->budget));
    dg_tpl_vars v = {
        .policy = dg_session_policy_name(t->p->cfg.session_policy),
        .scope = dg_scope_label(&r->scope, label),
        .mode = dg_channel_mode_name(c->mode),
        .turnOrder = order.s,
        .speaker = c->mode == DG_MODE_CLOSED ? "none (closed)"
                   : st->budget              ? held
                   : !st->active             ? (st->rested ? "resting (loop guard)" : "dormant")
                   : sp != DG_NOBODY         ? c->members[sp]
                                             : "nobody eligible",
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
                         ? dg_templates_render_trim(t->p->templates, "admin_status_closed.md", &v)
                         : NULL;
        reply_add(b, "\n");
        reply_add(b, note);
        free(note);
    }
    char judge[400];
    reply_add(b, "\n");
    reply_add(b, turns_judge_status(t, r, judge, sizeof judge));
}

/* One admin command under way: the message, its scope, the change the
 * command stages (next, fx, changes) and the reply it builds. */
typedef struct admin_run {
    const dg_turn_message *m;
    dg_admin_cmd cmd;
    turns_chan *c;
    turns_scope *r;
    const char *post;  /* where the reply goes */
    const char *cause; /* why the state changed, for the operator's view */
    int64_t now;
    int *kick;
    turns_owner_action *oa;
    dg_rule_ctx x;
    dg_rule_effects fx;
    dg_turn_state next; /* staged from r->st; saved when changes */
    int changes;
    reply_buf b;
    const char *mention; /* the reply wakes this user id, NULL: nobody */
    int deferred;        /* host calls after the commit (oa): nothing posted now */
} admin_run;

/* One `!dirigent` subcommand: its reply into a->b and the change it
 * stages. Writer held. DG_OK, or an error that rolls the message back. */
typedef int (*admin_fn)(dg_turns *t, admin_run *a);

/* Unknown subcommand: whatever the channel's mode, the typo is the news,
 * not the state. */
static int admin_unknown(dg_turns *t, admin_run *a)
{
    char word[33];
    const char *near = dg_admin_suggest(a->m->content, word, sizeof word);
    dg_tpl_vars v = {.command = word, .suggestion = near};
    reply_tpl(t, &a->b, near ? "admin_unknown_suggest.md" : "admin_unknown.md", &v);
    char *help =
        t->p->templates ? dg_templates_render_trim(t->p->templates, "admin_help.md", &v) : NULL;
    reply_add(&a->b, "\n");
    reply_add(&a->b, help);
    free(help);
    return DG_OK;
}

static int admin_help(dg_turns *t, admin_run *a)
{
    reply_tpl(t, &a->b, "admin_help.md", NULL);
    return DG_OK;
}

static int admin_status_cmd(dg_turns *t, admin_run *a)
{
    dg_turn_state view = a->r->st;
    if (a->c->mode != DG_MODE_CLOSED)
        dg_rule_expire(&view, &a->x, a->now, NULL); /* what a decision now would see */
    admin_status(t, a->r, &view, &a->x, &a->b);
    return DG_OK;
}

static int admin_members_cmd(dg_turns *t, admin_run *a)
{
    return admin_members(t, a->m, a->cmd, a->r, a->now, a->cause, a->kick, &a->b);
}

/* The discussion area closes the channel in this transaction; the
 * channel's mirror reloads (closed) before its next use. */
static int admin_close(dg_turns *t, admin_run *a)
{
    char path[1024], msg[768];
    int has = dg_admin_arg(a->m->content, path, sizeof path), closed = 0;
    if (has < 0) {
        char max[24];
        snprintf(max, sizeof max, "%zu", sizeof path - 1);
        reply_tpl(t, &a->b, "admin_close_path_long.md", &(dg_tpl_vars){.maxBytes = max});
        return DG_OK;
    }
    int rc = dg_discuss_admin_close_locked(t->p, a->c->id, has ? path : NULL, a->now, &closed, msg,
                                           sizeof msg);
    if (rc != DG_OK)
        return rc;
    reply_add(&a->b, DG_ADMIN_REPLY_PREFIX);
    reply_add(&a->b, msg);
    return DG_OK;
}

/* `rotate`, `cancel`: host calls after the commit (turns_owner_action);
 * the turn state stays (an aborted run ends with agent_end like any
 * other). */
static int admin_owner(dg_turns *t, admin_run *a)
{
    (void)t;
    dg_turn_state view = a->r->st;
    dg_rule_expire(&view, &a->x, a->now, NULL);
    int sp = view.active ? dg_rule_speaker(&view, &a->x) : DG_NOBODY;
    turns_owner_action *oa = a->oa;
    oa->cmd = a->cmd;
    snprintf(oa->channel, sizeof oa->channel, "%s", a->c->id);
    snprintf(oa->thread, sizeof oa->thread, "%s", a->m->thread_id ? a->m->thread_id : "");
    snprintf(oa->post, sizeof oa->post, "%s", a->post);
    snprintf(oa->speaker, sizeof oa->speaker, "%s", sp != DG_NOBODY ? a->c->members[sp] : "");
    a->deferred = 1;
    return DG_OK;
}

static int admin_rest(dg_turns *t, admin_run *a)
{
    dg_rule_expire(&a->next, &a->x, a->now, &a->fx);
    a->fx.handoff_to = DG_NOBODY; /* nobody is woken into a resting scope */
    dg_rule_admin_rest(&a->next, a->now);
    a->changes = 1;
    reply_tpl(t, &a->b, "admin_rest.md", NULL);
    return DG_OK;
}

/* Who `wake` and `resume` give the turn: the first present member the
 * command mentions, else the first present member; DG_NOBODY: none. */
static int wake_target(const dg_turns *t, const admin_run *a)
{
    const turns_chan *c = a->c;
    int pos = DG_NOBODY;
    for (size_t i = 0; pos == DG_NOBODY && i < a->m->n_mentions; i++) {
        const dg_agent_cfg *ag = dg_config_agent_by_user(&t->p->cfg, a->m->mentions[i]);
        int mp = ag ? turns_member_pos(c, ag->agent_id) : DG_NOBODY;
        if (mp != DG_NOBODY && (c->present & ((uint64_t)1 << mp)))
            pos = mp;
    }
    for (int i = 0; pos == DG_NOBODY && i < c->n; i++)
        if (c->present & ((uint64_t)1 << i))
            pos = i;
    return pos;
}

/* A command from a human not in `admins`: one line, nothing changes. */
static int admin_refused(dg_turns *t, admin_run *a)
{
    reply_tpl(t, &a->b, "admin_not_admin.md", NULL);
    return DG_OK;
}

/* The first user the command mentions when none of its mentions is one of
 * the gateway's agents (a human, an unknown id): `wake` names it instead of
 * waking the first agent. NULL: no mention, or one of them is an agent. */
static const char *wake_stranger(const dg_turns *t, const admin_run *a)
{
    for (size_t i = 0; i < a->m->n_mentions; i++)
        if (dg_config_agent_by_user(&t->p->cfg, a->m->mentions[i]))
            return NULL;
    return a->m->n_mentions ? a->m->mentions[0] : NULL;
}

/* `wake`: wake_target gets the turn; the reply mentions it. */
static int admin_wake(dg_turns *t, admin_run *a)
{
    const turns_chan *c = a->c;
    const char *stranger = wake_stranger(t, a);
    if (stranger) {
        reply_tpl(t, &a->b, "admin_wake_not_agent.md", &(dg_tpl_vars){.agent = stranger});
        return DG_OK;
    }
    int pos = wake_target(t, a);
    if (pos == DG_NOBODY || dg_rule_admin_wake(&a->next, &a->x, pos, a->now) != 0) {
        reply_tpl(t, &a->b, "admin_wake_nobody.md", NULL);
        return DG_OK;
    }
    a->changes = 1;
    a->mention = turns_user_of(t, c, pos);
    char at[96];
    snprintf(at, sizeof at, "<@%s>", a->mention ? a->mention : "?");
    reply_tpl(t, &a->b, "admin_wake.md", &(dg_tpl_vars){.agentMention = at});
    return DG_OK;
}

/* `resume`: a budget's breaker is lifted and wake_target gets the turn.
 * Per-human-message budgets count from the resume; an hourly or daily one
 * still counts its window (reached again, it trips again at the next
 * run). */
static int admin_resume(dg_turns *t, admin_run *a)
{
    char label[DG_SCOPE_LABEL_MAX];
    dg_scope_label(&a->r->scope, label);
    if (!a->next.budget) {
        reply_tpl(t, &a->b, "admin_resume_none.md", &(dg_tpl_vars){.scope = label});
        return DG_OK;
    }
    a->next.budget = 0;
    a->next.budget_until_ms = 0;
    a->changes = 1;
    /* A fresh allowance: per-human-message budgets count from the resume. */
    int rc = turns_cost_human(t, a->r, a->now);
    if (rc != DG_OK)
        return rc;
    int pos = wake_target(t, a);
    if (pos != DG_NOBODY && dg_rule_admin_wake(&a->next, &a->x, pos, a->now) == 0)
        a->mention = turns_user_of(t, a->c, pos);
    char at[96];
    snprintf(at, sizeof at, "<@%s>", a->mention ? a->mention : "?");
    reply_tpl(t, &a->b, "admin_resume.md", &(dg_tpl_vars){.scope = label, .agentMention = at});
    return DG_OK;
}

/* `cost`: the channel's cost report of the last 7 UTC days (today and the
 * six before), bounded to one Discord message with the reply's frame. */
static int admin_cost(dg_turns *t, admin_run *a)
{
    const int64_t day = (int64_t)24 * 3600 * 1000;
    dg_cost_filter f = {.channel_id = a->c->id, .since_ms = a->now - a->now % day - 6 * day};
    dg_cost_report *rep = NULL;
    int rc = dg_cost_report_load(t->p->store, &f, &t->p->cfg, &rep);
    if (rc != DG_OK)
        return rc;
    char *text = dg_cost_report_text(rep, 1800);
    dg_cost_report_free(rep);
    if (!text)
        return DG_ERR_NOMEM;
    reply_tpl(t, &a->b, "admin_cost.md", &(dg_tpl_vars){.report = text});
    free(text);
    return DG_OK;
}

/* `skip`: the speaker passes; the reply is the hand-off to the next one
 * (or says the initiator is reminded, or that the scope sleeps). */
static int admin_skip(dg_turns *t, admin_run *a)
{
    dg_rule_expire(&a->next, &a->x, a->now, &a->fx);
    a->fx.handoff_to = DG_NOBODY; /* that speaker is skipped now */
    int sp = dg_rule_admin_skip(&a->next, &a->x, a->now, &a->fx);
    if (sp == DG_NOBODY) {
        reply_tpl(t, &a->b, "admin_skip_nobody.md", NULL);
        return DG_OK;
    }
    a->changes = 1;
    int to = a->fx.handoff_to;
    a->fx.handoff_to = DG_NOBODY; /* the reply is the hand-off */
    a->mention = to != DG_NOBODY ? turns_user_of(t, a->c, to) : NULL;
    char at[96];
    snprintf(at, sizeof at, "<@%s>", a->mention ? a->mention : "");
    dg_tpl_vars v = {.skippedAgent = a->c->members[sp], .agentMention = at};
    reply_tpl(t, &a->b,
              a->mention            ? "admin_skip.md"
              : a->fx.idle_reminder ? "admin_skip_initiator.md"
                                    : "admin_skip_dormant.md",
              &v);
    return DG_OK;
}

/* The subcommands: name (for logs and the operator's view), whether it
 * also runs in a closed channel (the others get admin_closed.md there),
 * and the function that runs it. */
static const struct admin_command {
    dg_admin_cmd cmd;
    const char *name;
    int when_closed;
    admin_fn run;
} admin_commands[] = {
    {DG_ADMIN_UNKNOWN, "(unknown)", 1, admin_unknown},
    {DG_ADMIN_STATUS, "status", 1, admin_status_cmd},
    {DG_ADMIN_HELP, "help", 0, admin_help},
    {DG_ADMIN_ORDER, "order", 0, admin_members_cmd},
    {DG_ADMIN_ADD, "add", 0, admin_members_cmd},
    {DG_ADMIN_REMOVE, "remove", 0, admin_members_cmd},
    {DG_ADMIN_CLOSE, "close", 0, admin_close},
    {DG_ADMIN_ROTATE, "rotate", 0, admin_owner},
    {DG_ADMIN_CANCEL, "cancel", 0, admin_owner},
    {DG_ADMIN_REST, "rest", 0, admin_rest},
    {DG_ADMIN_WAKE, "wake", 0, admin_wake},
    {DG_ADMIN_SKIP, "skip", 0, admin_skip},
    {DG_ADMIN_RESUME, "resume", 0, admin_resume},
    {DG_ADMIN_COST, "cost", 1, admin_cost},
    {DG_ADMIN_REFUSED, "(refused: not an admin)", 1, admin_refused},
};

/* cmd's entry of admin_commands, NULL for DG_ADMIN_NONE. */
static const struct admin_command *admin_command(dg_admin_cmd cmd)
{
    for (size_t i = 0; i < sizeof admin_commands / sizeof *admin_commands; i++)
        if (admin_commands[i].cmd == cmd)
            return &admin_commands[i];
    return NULL;
}

static const char *admin_cmd_name(dg_admin_cmd cmd)
{
    const struct admin_command *ac = admin_command(cmd);
    return ac ? ac->name : "none";
}

/* The host calls of oa (no lock held), then their reply in its own
 * transaction (turns_int.h). */
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
    if (turns_txn_begin(t) != DG_OK)
        return DG_ERR_IO;
    int queued = 0;
    int rc = turns_enqueue(t, oa->post, text, NULL, now, &queued);
    rc = turns_txn_finish(t, rc);
    if (rc != DG_OK)
        dg_log(t->p, OC_LOG_WARN,
               "turns: the reply to \"!dirigent %s\" in %s could not be "
               "queued (%s); the command itself was carried out",
               admin_cmd_name(oa->cmd), oa->channel, dg_status_name(rc));
    return rc == DG_OK && queued ? DG_OK : DG_ERR_IO;
}

/* The scope admin command m acts on (*r) and where its reply goes
 * (*post): under policy "thread" a top-level command acts on the
 * channel's latest top-level thread. Writer held. */
static int admin_scope(dg_turns *t, turns_chan *c, const dg_turn_message *m, turns_scope **r,
                       const char **post)
{
    dg_scope sc;
    int top_level;
    int rc;
    if ((rc = turns_message_scope(t, m, &sc, &top_level)))
        return rc;
    if ((rc = top_level ? turns_follow_scope(t, c, r) : turns_scope_get(t, c, &sc, r)))
        return rc;
    turns_scope *s = *r;
    if (m->thread_id && *m->thread_id && s->scope.kind == DG_SCOPE_THREAD && !s->post_channel &&
        !(s->post_channel = turns_thread_target(c->id, m->thread_id)))
        return DG_ERR_NOMEM;
    if (!top_level && (rc = turns_post_where_written(s, c->id, m)))
        return rc;
    *post = s->post_channel ? s->post_channel : c->id;
    return DG_OK;
}

/* What command a staged: its change saved, its reply queued (a reply that
 * wakes an agent is the hand-off; when it cannot be posted, nobody awaits
 * it), the effects the change owes, then the change installed. Writer
 * held. */
static int admin_commit(dg_turns *t, admin_run *a)
{
    int rc = DG_OK;
    turns_scope *r = a->r;
    if (a->changes && (!dg_turn_state_same(&a->next, &r->st) || !r->in_db))
        rc = turns_save_scope(t, r, &a->next, a->now, a->cause);
    int queued = 0;
    if (rc == DG_OK)
        rc = turns_enqueue(t, a->post, a->b.b.s, a->mention, a->now, &queued);
    if (queued)
        *a->kick = 1;
    else if (a->mention)
        a->next.awaiting = 0; /* the reply that would wake it is not posted */
    /* The agent the reply wakes may be running already, for the turn before:
     * that run's silence is no answer to this one. */
    if (queued && a->changes && a->next.active && a->next.handoff != DG_NOBODY &&
        atomic_load(&r->run_pos) == a->next.handoff)
        r->run_before_wake = a->next.handoff;
    if (rc == DG_OK)
        rc = turns_queue_effects_chosen(t, r, &a->fx, &a->next, a->now, a->kick);
    if (rc == DG_OK && a->changes)
        rc = turns_install(t, r, &a->next);
    return rc;
}

/*
 * Run admin command cmd of message m (already claimed by the dedup) on the
 * message's scope (admin_scope): a command is not speech and opens no
 * thread of its own. The state change and the reply commit together.
 * Writer held.
 */
int turns_admin_locked(dg_turns *t, const dg_turn_message *m, dg_admin_cmd cmd, int64_t now,
                       int *kick, turns_owner_action *oa)
{
    TURNS_ASSERT_WRITER(t);
    turns_chan *c;
    int rc;
    if ((rc = turns_chan_get(t, m->channel_id, &c)))
        return rc;
    admin_run a = {.m = m, .cmd = cmd, .c = c, .now = now, .kick = kick, .oa = oa};
    if ((rc = admin_scope(t, c, m, &a.r, &a.post)))
        return rc;

    char label[DG_SCOPE_LABEL_MAX];
    if (cmd == DG_ADMIN_REFUSED)
        dg_log(t->p, OC_LOG_INFO,
               "turns: message %s in channel %s starts with !dirigent but its sender %s is "
               "not in `admins`; refused in one line, and no agent answers it",
               m->message_id ? m->message_id : "(no id)", c->id, m->sender_id);
    else
        dg_log(t->p, OC_LOG_INFO, "turns: admin %s ran \"!dirigent %s\" in channel %s (%s)",
               m->sender_id, admin_cmd_name(cmd), c->id, dg_scope_label(&a.r->scope, label));
    char cause[160];
    snprintf(cause, sizeof cause, "admin command !dirigent %s by %s", admin_cmd_name(cmd),
             m->sender_id);
    a.cause = cause;
    turns_make_ctx(t, c, &a.x);
    dg_rule_effects_init(&a.fx);
    a.next = a.r->st;

    const struct admin_command *ac = admin_command(cmd);
    if (c->mode == DG_MODE_CLOSED && !(ac && ac->when_closed))
        reply_tpl(t, &a.b, "admin_closed.md", NULL);
    else if ((rc = (ac ? ac->run : admin_help)(t, &a)) != DG_OK) {
        dg_buf_free(&a.b.b);
        return rc;
    }
    if (a.deferred)
        return DG_OK;
    if (a.b.nomem) {
        dg_buf_free(&a.b.b);
        return DG_ERR_NOMEM;
    }
    rc = admin_commit(t, &a);
    dg_buf_free(&a.b.b);
    return rc;
}
