/*
 * turns.c -- the turn manager's pure logic (rules in turns.h).
 *
 * Everything here works on a dg_turn_state and a dg_rule_ctx passed in; no
 * I/O, no locks, no clock. The engine (turns_engine.c) loads, calls, saves.
 */
#include "turns.h"

#include "edit_distance.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define BIT(pos) ((uint64_t)1 << (unsigned)(pos))

const char *dg_channel_mode_name(dg_channel_mode m)
{
    switch (m) {
    case DG_MODE_NORMAL: return "normal";
    case DG_MODE_DISCUSSION: return "discussion";
    case DG_MODE_CLOSED: return "closed";
    }
    return "unknown";
}

int dg_turn_state_same(const dg_turn_state *a, const dg_turn_state *b)
{
    /* Field by field: the struct has padding a memcmp would read. */
    return a->active == b->active && a->speaker == b->speaker && a->anchor == b->anchor &&
           a->silent == b->silent && a->mention == b->mention &&
           a->mention_done == b->mention_done && a->consumed == b->consumed && a->owed == b->owed &&
           a->agent_msgs == b->agent_msgs && a->rested == b->rested &&
           a->idle_reminded == b->idle_reminded && a->handoff == b->handoff &&
           a->permit == b->permit && a->permit_ms == b->permit_ms &&
           a->last_change_ms == b->last_change_ms && a->budget == b->budget &&
           a->budget_until_ms == b->budget_until_ms;
}

void dg_rule_effects_init(dg_rule_effects *fx)
{
    fx->handoff_to = DG_NOBODY;
    fx->rest_notice = 0;
    fx->idle_reminder = 0;
}

static uint64_t all_members(const dg_rule_ctx *c)
{
    if (c->n_members <= 0)
        return 0;
    if (c->n_members >= DG_TURN_MAX_MEMBERS)
        return ~(uint64_t)0;
    return BIT(c->n_members) - 1;
}

static int valid_pos(const dg_rule_ctx *c, int pos)
{
    return pos >= 0 && pos < c->n_members && pos < DG_TURN_MAX_MEMBERS;
}

static int popcount64(uint64_t m)
{
    return __builtin_popcountll(m);
}

int dg_rule_managed(const dg_rule_ctx *c)
{
    return c->mode != DG_MODE_CLOSED && popcount64(c->present & all_members(c)) >= 2;
}

/* Who may take the next turn: configured members that have not passed in
 * this cycle, restricted to the mentioned ones while a mention is open. */
static uint64_t eligible(const dg_turn_state *s, const dg_rule_ctx *c)
{
    uint64_t m = c->present & all_members(c) & ~s->silent;
    /* A mention none of whose agents is left in the order (they left it
     * since) addresses nobody: the message is for everyone. */
    if (s->mention & ~s->mention_done & c->present)
        m &= s->mention & ~s->mention_done;
    return m;
}

/* First member of mask after anchor in cyclic order (anchor itself last);
 * from the start when anchor is DG_NOBODY. */
static int next_after(int anchor, uint64_t mask, const dg_rule_ctx *c)
{
    int n = c->n_members < DG_TURN_MAX_MEMBERS ? c->n_members : DG_TURN_MAX_MEMBERS;
    if (n <= 0 || !mask)
        return DG_NOBODY;
    int start = valid_pos(c, anchor) ? anchor + 1 : 0;
    for (int i = 0; i < n; i++) {
        int p = (start + i) % n;
        if (mask & BIT(p))
            return p;
    }
    return DG_NOBODY;
}

int dg_rule_speaker(const dg_turn_state *s, const dg_rule_ctx *c)
{
    if (!s->active)
        return DG_NOBODY;
    if (valid_pos(c, s->speaker) && (c->present & BIT(s->speaker)))
        return s->speaker;
    return next_after(s->anchor, eligible(s, c), c);
}

/* Pin the speaker once the order is long enough to be managed; while it is
 * not, leave it derived so an agent that shows up next takes the turn
 * instead of the one that just spoke. */
static void pin_speaker(dg_turn_state *s, const dg_rule_ctx *c)
{
    s->speaker = dg_rule_managed(c) ? next_after(s->anchor, eligible(s, c), c) : DG_NOBODY;
}

static void go_dormant(dg_turn_state *s)
{
    s->active = 0;
    s->speaker = DG_NOBODY;
    s->handoff = DG_NOBODY;
    s->awaiting = 0;
}

/* pos was just granted the turn with a moderator message that wakes it:
 * it awaits that message (turns.h "Awaiting the wake message"). Armed even
 * on read-only copies: they foresee what the real change will queue. */
static void arm_wait(dg_turn_state *s, const dg_rule_ctx *c, int pos)
{
    s->awaiting = c->wake_tracking && valid_pos(c, pos) && s->active && dg_rule_speaker(s, c) == pos
                      ? BIT(pos)
                      : 0;
}

/* The invariant: awaiting is empty or the current speaker's bit. A wait
 * ends when the turn moves on or the scope sleeps. */
static void settle_wait(dg_turn_state *s, const dg_rule_ctx *c)
{
    if (!s->awaiting)
        return;
    int sp = s->active ? dg_rule_speaker(s, c) : DG_NOBODY;
    if (sp == DG_NOBODY || s->awaiting != BIT(sp))
        s->awaiting = 0;
}

/* Loop guard: one more agent message (or tool-only turn). Returns 1 when
 * the scope is now at rest. */
static int count_agent_message(dg_turn_state *s, const dg_rule_ctx *c, dg_rule_effects *fx)
{
    s->agent_msgs++;
    if (c->max_agent_msgs <= 0 || s->agent_msgs < c->max_agent_msgs)
        return 0;
    go_dormant(s);
    if (!s->rested) {
        s->rested = 1;
        if (fx)
            fx->rest_notice = 1; /* the moderator says so once */
    }
    return 1;
}

/* The turn passes on from `from`, which finished with outcome o at `when`. */
static void advance(dg_turn_state *s, const dg_rule_ctx *c, int from, dg_run_outcome o,
                    int64_t when, dg_rule_effects *fx)
{
    if (o == DG_RUN_SILENT)
        s->silent |= BIT(from);
    if (s->mention) {
        s->mention_done |= BIT(from) & s->mention;
        if (!(s->mention & ~s->mention_done & c->present))
            s->mention = s->mention_done = 0; /* each mentioned one had its turn */
    }
    s->anchor = from;
    s->last_change_ms = when;
    if (o == DG_RUN_SPOKE) {
        /* Its own message is on the way and will wake the next one. That
         * message starts a new cycle: the agents that passed on the old
         * one may speak to it, so the turn goes to the agent after `from`
         * (as when the message arrives first). Its author has nothing to
         * add to it: it counts as passed, so the round ends without
         * paying it a model call to say so. */
        s->silent = BIT(from);
        s->permit = from;
        s->permit_ms = when;
        s->owed |= BIT(from);
        s->handoff = DG_NOBODY;
    }
    uint64_t el = eligible(s, c);
    if (!el) {
        /* A full cycle of silence. A discussion asks its initiator first,
         * once per idle period; then it rests like any other scope. */
        if (c->mode == DG_MODE_DISCUSSION && valid_pos(c, c->initiator) &&
            (c->present & BIT(c->initiator)) && !s->idle_reminded) {
            s->idle_reminded = 1;
            s->silent &= ~BIT(c->initiator);
            s->active = 1;
            s->speaker = c->initiator;
            s->handoff = DG_NOBODY; /* the reminder mentions the initiator */
            arm_wait(s, c, c->initiator);
            /* The loop guard runs on: the reminder answers bot activity, and
             * resetting it would let initiator and moderator go on for ever. */
            if (fx)
                fx->idle_reminder = 1;
            return;
        }
        go_dormant(s);
        return;
    }
    s->active = 1;
    pin_speaker(s, c);
    if (o == DG_RUN_SPOKE)
        return;
    /* Nothing new will be posted: an agent that already consumed the latest
     * message silently would never be woken, so the moderator mentions it.
     * At most one pending hand-off per scope. */
    int sp = dg_rule_speaker(s, c);
    if (sp != DG_NOBODY && (s->consumed & BIT(sp))) {
        if (s->handoff != sp) {
            s->handoff = sp;
            if (fx)
                fx->handoff_to = sp;
            arm_wait(s, c, sp);
        }
    } else {
        s->handoff = DG_NOBODY; /* it has not run yet: its own run will come */
    }
}

static void expire_impl(dg_turn_state *s, const dg_rule_ctx *c, int64_t now_ms, dg_rule_effects *fx)
{
    /* Each round passes one speaker or ends the cycle: bounded. */
    for (int guard = 0; guard < 2 * DG_TURN_MAX_MEMBERS + 4; guard++) {
        if (!s->active || c->timeout_ms <= 0 || c->mode == DG_MODE_CLOSED)
            return;
        if (now_ms - s->last_change_ms < c->timeout_ms)
            return;
        int sp = dg_rule_speaker(s, c);
        if (sp == DG_NOBODY) {
            go_dormant(s);
            return;
        }
        advance(s, c, sp, DG_RUN_SILENT, s->last_change_ms + c->timeout_ms, fx);
    }
}

void dg_rule_expire(dg_turn_state *s, const dg_rule_ctx *c, int64_t now_ms, dg_rule_effects *fx)
{
    expire_impl(s, c, now_ms, fx);
    settle_wait(s, c);
}

static void on_message_impl(dg_turn_state *s, const dg_rule_ctx *c, dg_sender_kind kind,
                            int sender_pos, uint64_t mentions, int64_t now_ms, dg_rule_effects *fx)
{
    if (c->mode == DG_MODE_CLOSED)
        return; /* nothing in a closed channel ever wakes a turn */
    if (kind == DG_SENDER_HANDOFF)
        return;
    if (kind == DG_SENDER_MODERATOR) {
        /* Never speech, never wakes. Only a human lifts a
         * rest; hand-offs (above) never count, so they cannot hide a loop;
         * nor does the idle reminder the scope just owed (idle_reminded and
         * no real message since): it was caused by the bots themselves. */
        if (!s->rested && !s->idle_reminded)
            s->agent_msgs = 0;
        return;
    }
    dg_rule_expire(s, c, now_ms, fx);

    /* Any real message: a new latest message, a new cycle. Its author has
     * seen it and has nothing to add: it counts as having passed on it, so
     * the turn never comes back to it (a hand-off, a paid model call). */
    s->msg_seq++;
    uint64_t author = kind == DG_SENDER_AGENT && valid_pos(c, sender_pos) ? BIT(sender_pos) : 0;
    s->consumed = author;
    s->handoff = DG_NOBODY;
    s->silent = author;
    s->idle_reminded = 0;
    int was_active = s->active;

    if (kind == DG_SENDER_HUMAN) {
        s->agent_msgs = 0;
        s->rested = 0;
        s->awaiting = 0; /* a human message starts over: any run of it counts */
        uint64_t m = mentions & c->present & all_members(c);
        s->mention = m;
        s->mention_done = 0;
        if (m) {
            /* Only the mentioned agents take turns, in turn order. */
            s->anchor = DG_NOBODY;
            s->active = 1;
            s->speaker = next_after(DG_NOBODY, m, c);
            if (!dg_rule_managed(c))
                s->speaker = DG_NOBODY;
            s->last_change_ms = now_ms;
            return;
        }
        if (!was_active) {
            s->anchor = DG_NOBODY; /* a sender outside the order: the first speaks */
            s->active = 1;
            pin_speaker(s, c);
            s->last_change_ms = now_ms;
        }
        return;
    }

    /* Its message arrived: nothing of it is owed any more, also when the
     * loop guard rests the scope on it. */
    int owed =
        kind == DG_SENDER_AGENT && valid_pos(c, sender_pos) && (s->owed & BIT(sender_pos)) != 0;
    if (owed)
        s->owed &= ~BIT(sender_pos);
    if (count_agent_message(s, c, fx))
        return;

    if (kind == DG_SENDER_AGENT && valid_pos(c, sender_pos)) {
        uint64_t b = BIT(sender_pos);
        if (s->mention) {
            s->mention_done |= b & s->mention;
            if (!(s->mention & ~s->mention_done & c->present))
                s->mention = s->mention_done = 0;
        }
        int holds_turn = was_active && dg_rule_speaker(s, c) == sender_pos;
        if (was_active && (owed || !holds_turn))
            return; /* old news (or a message that should not have gone out) */
        if (holds_turn) {
            /* Its message arrived before its run ended: the rest of the
             * same reply may still be sent. */
            s->permit = sender_pos;
            s->permit_ms = now_ms;
        }
        s->anchor = sender_pos; /* an agent sender: the next agent speaks */
        s->active = 1;
        pin_speaker(s, c);
        /* While unmanaged (one agent, which wrote it) the speaker stays
         * derived, so an agent that shows up next takes the turn. */
        if (dg_rule_managed(c) && dg_rule_speaker(s, c) == DG_NOBODY)
            go_dormant(s);
        s->last_change_ms = now_ms;
        return;
    }

    /* Another bot (outside the order). */
    if (!was_active) {
        s->anchor = DG_NOBODY;
        s->active = 1;
        pin_speaker(s, c);
        s->last_change_ms = now_ms;
    }
}

void dg_rule_member_gone(dg_turn_state *s, const dg_rule_ctx *c, int pos, int64_t now_ms,
                         dg_rule_effects *fx)
{
    if (!valid_pos(c, pos))
        return;
    uint64_t b = BIT(pos);
    int was_speaking = s->active && dg_rule_speaker(s, c) == pos;
    dg_rule_ctx after = *c;
    after.present &= ~b;
    s->silent &= ~b;
    s->consumed &= ~b;
    s->owed &= ~b;
    s->awaiting &= ~b;
    if (s->mention) {
        s->mention &= ~b;
        s->mention_done &= ~b;
        if (!(s->mention & ~s->mention_done & after.present))
            s->mention = s->mention_done = 0;
    }
    if (s->handoff == pos)
        s->handoff = DG_NOBODY;
    if (s->permit == pos)
        s->permit = DG_NOBODY;
    if (!was_speaking) {
        settle_wait(s, &after);
        return;
    }
    s->speaker = DG_NOBODY;
    s->handoff = DG_NOBODY;
    s->last_change_ms = now_ms;
    if (!eligible(s, &after)) {
        go_dormant(s);
        return;
    }
    pin_speaker(s, &after);
    /* Nothing new will be posted: a next speaker that already consumed the
     * latest message is woken by the moderator, as after a pass. */
    int sp = dg_rule_speaker(s, &after);
    if (sp != DG_NOBODY && (s->consumed & BIT(sp))) {
        s->handoff = sp;
        if (fx)
            fx->handoff_to = sp;
        arm_wait(s, &after, sp);
    }
    settle_wait(s, &after);
}

void dg_rule_on_message(dg_turn_state *s, const dg_rule_ctx *c, dg_sender_kind kind, int sender_pos,
                        uint64_t mentions, int64_t now_ms, dg_rule_effects *fx)
{
    on_message_impl(s, c, kind, sender_pos, mentions, now_ms, fx);
    settle_wait(s, c);
}

static void on_run_end_impl(dg_turn_state *s, const dg_rule_ctx *c, int pos, dg_run_outcome o,
                            int saw_latest, int granted, int64_t now_ms, dg_rule_effects *fx)
{
    if (!valid_pos(c, pos))
        return;
    if (saw_latest)
        s->consumed |= BIT(pos);
    if (granted != 0 && s->handoff == pos)
        s->handoff = DG_NOBODY; /* the mention did its job */
    if (c->mode == DG_MODE_CLOSED)
        return;
    dg_rule_expire(s, c, now_ms, fx);
    if (!s->active || dg_rule_speaker(s, c) != pos)
        return; /* not its turn (any more): nothing moves */
    if (granted == 0) {
        /* The turn reached pos while a swapped run of it was going: that
         * NO_REPLY was forced, not its answer. Wake it once it has seen the
         * latest message. */
        if ((s->consumed & BIT(pos)) && s->handoff != pos) {
            s->handoff = pos;
            if (fx)
                fx->handoff_to = pos;
            arm_wait(s, c, pos);
        }
        return;
    }
    /* A silent run that started before the latest message answered an
     * older one: its silence says nothing about the latest, for which the
     * host runs the agent again. The turn stays (a timeout or the nudge
     * moves it if that run never comes). */
    if (o == DG_RUN_SILENT && !saw_latest)
        return;
    /* A tool-only turn is agent activity for the loop guard: an agent that
     * keeps acting without a word must not cycle forever on hand-offs. */
    if (o == DG_RUN_ACTED && count_agent_message(s, c, fx))
        return;
    advance(s, c, pos, o, now_ms, fx);
}

void dg_rule_on_run_end(dg_turn_state *s, const dg_rule_ctx *c, int pos, dg_run_outcome o,
                        int saw_latest, int granted, int64_t now_ms, dg_rule_effects *fx)
{
    on_run_end_impl(s, c, pos, o, saw_latest, granted, now_ms, fx);
    settle_wait(s, c);
}

int dg_rule_awaiting_wake(const dg_turn_state *s, const dg_rule_ctx *c, int pos, int64_t now_ms)
{
    if (!s->awaiting || !valid_pos(c, pos) || !dg_rule_managed(c))
        return 0;
    dg_turn_state t = *s;
    dg_rule_expire(&t, c, now_ms, NULL); /* settles: a moved turn ends the wait */
    return (t.awaiting & BIT(pos)) != 0;
}

int dg_rule_wake_delivered(dg_turn_state *s, int pos)
{
    if (pos < 0 || pos >= DG_TURN_MAX_MEMBERS || !(s->awaiting & BIT(pos)))
        return 0;
    s->awaiting &= ~BIT(pos);
    return 1;
}

int dg_rule_await_wake(dg_turn_state *s, const dg_rule_ctx *c, int pos)
{
    arm_wait(s, c, pos);
    return s->awaiting != 0;
}

int dg_rule_needs_override(const dg_turn_state *s, const dg_rule_ctx *c, int pos, int64_t now_ms)
{
    if (c->mode == DG_MODE_CLOSED)
        return 1;
    if (!dg_rule_managed(c))
        return 0;
    dg_turn_state t = *s;
    dg_rule_expire(&t, c, now_ms, NULL);
    if (!t.active)
        return 1;
    return pos == DG_NOBODY || dg_rule_speaker(&t, c) != pos;
}

int dg_rule_may_send(const dg_turn_state *s, const dg_rule_ctx *c, int pos, int64_t now_ms)
{
    if (c->mode == DG_MODE_CLOSED)
        return 0;
    if (!dg_rule_managed(c))
        return 1;
    if (pos == DG_NOBODY)
        return 0;
    dg_turn_state t = *s;
    dg_rule_expire(&t, c, now_ms, NULL);
    if (dg_rule_speaker(&t, c) == pos)
        return 1;
    if (s->permit == pos && (c->timeout_ms <= 0 || now_ms - s->permit_ms <= c->timeout_ms))
        return 1;
    return 0;
}

/* ---- admin commands ---------------------------------------------------------- */

/* The subcommands: the parser and the suggestion for a mistyped one both
 * read this table, so a command added here is suggested too. */
static const struct {
    const char *word;
    dg_admin_cmd cmd;
} admin_subs[] = {
    {"status", DG_ADMIN_STATUS}, {"rest", DG_ADMIN_REST},     {"wake", DG_ADMIN_WAKE},
    {"skip", DG_ADMIN_SKIP},     {"close", DG_ADMIN_CLOSE},   {"rotate", DG_ADMIN_ROTATE},
    {"cancel", DG_ADMIN_CANCEL}, {"help", DG_ADMIN_HELP},     {"order", DG_ADMIN_ORDER},
    {"add", DG_ADMIN_ADD},       {"remove", DG_ADMIN_REMOVE}, {"resume", DG_ADMIN_RESUME},
    {"cost", DG_ADMIN_COST}};
#define N_ADMIN_SUBS (sizeof admin_subs / sizeof admin_subs[0])

/* The subcommand word of a `!dirigent` command: *word and its length (0:
 * none); -1 when content is no `!dirigent` command. */
static int admin_word(const char *content, const char **word, size_t *len)
{
    static const char CMD[] = "!dirigent";
    const char *s = content;
    if (!s)
        return -1;
    while (isspace((unsigned char)*s))
        s++;
    if (*s != '!' || strncasecmp(s, CMD, sizeof CMD - 1) != 0)
        return -1;
    s += sizeof CMD - 1;
    if (*s && !isspace((unsigned char)*s))
        return -1; /* "!dirigentfoo" is just text */
    while (isspace((unsigned char)*s))
        s++;
    size_t n = 0;
    while (s[n] && !isspace((unsigned char)s[n]))
        n++;
    *word = s;
    *len = n;
    return 0;
}

dg_admin_cmd dg_admin_parse(const char *content)
{
    const char *s;
    size_t n;
    if (admin_word(content, &s, &n) < 0)
        return DG_ADMIN_NONE;
    if (!n)
        return DG_ADMIN_HELP;
    for (size_t i = 0; i < N_ADMIN_SUBS; i++)
        if (n == strlen(admin_subs[i].word) && strncasecmp(s, admin_subs[i].word, n) == 0)
            return admin_subs[i].cmd;
    return DG_ADMIN_UNKNOWN;
}

const char *dg_admin_suggest(const char *content, char *word, size_t word_len)
{
    const char *s;
    size_t n;
    if (word && word_len)
        word[0] = '\0';
    if (admin_word(content, &s, &n) < 0 || !n)
        return NULL;
    if (word && word_len) {
        size_t k = 0;
        /* Shown in backticks: a backtick of the text would end them. */
        for (size_t i = 0; i < n && k + 1 < word_len; i++)
            if (s[i] != '`')
                word[k++] = s[i];
        word[k] = '\0';
    }
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < N_ADMIN_SUBS; i++) {
        const char *w = admin_subs[i].word;
        /* A word that starts a command ("stat") beats any typo. */
        int prefix = n >= 2 && n < strlen(w) && strncasecmp(s, w, n) == 0;
        size_t d = prefix ? 0 : dg_edit_distance(s, n, w, strlen(w));
        if (d <= DG_ADMIN_SUGGEST_MAX && d < best_d) {
            best = w;
            best_d = d;
        }
    }
    return best;
}

int dg_admin_near_miss(const char *content, char *fix, size_t fix_len)
{
    static const char CMD[] = "!dirigent";
    const char *s = content;
    if (fix && fix_len)
        fix[0] = '\0';
    if (!s)
        return 0;
    while (isspace((unsigned char)*s))
        s++;
    size_t n = 0;
    while (s[n] && !isspace((unsigned char)s[n]))
        n++;
    /* "!dirigentfoo" is one word that starts right: text, not a typo. */
    if (*s != '!' || strncasecmp(s, CMD, sizeof CMD - 1) == 0)
        return 0;
    size_t d = dg_edit_distance(s, n, CMD, sizeof CMD - 1);
    if (d < 1 || d > DG_ADMIN_NEAR_MISS_MAX)
        return 0;
    if (!fix || !fix_len)
        return 1;
    /* What was meant: the command word mended, its subcommand too when
     * it is one or close to one. */
    char mended[80];
    const char *sub = s + n;
    while (isspace((unsigned char)*sub))
        sub++;
    size_t k = 0;
    while (sub[k] && !isspace((unsigned char)sub[k]))
        k++;
    snprintf(mended, sizeof mended, "%s %.*s", CMD, (int)(k < 40 ? k : 40), sub);
    const char *known = NULL;
    for (size_t i = 0; k && i < N_ADMIN_SUBS; i++)
        if (k == strlen(admin_subs[i].word) && strncasecmp(sub, admin_subs[i].word, k) == 0)
            known = admin_subs[i].word;
    if (k && !known)
        known = dg_admin_suggest(mended, NULL, 0);
    snprintf(fix, fix_len, "%s%s%s", CMD, known ? " " : "", known ? known : "");
    return 1;
}

int dg_admin_arg(const char *content, char *buf, size_t len)
{
    if (!content || !buf || !len || dg_admin_parse(content) == DG_ADMIN_NONE)
        return 0;
    const char *s = content;
    for (int word = 0; word < 2; word++) { /* skip "!dirigent" and the subcommand */
        while (isspace((unsigned char)*s))
            s++;
        while (*s && !isspace((unsigned char)*s))
            s++;
    }
    while (isspace((unsigned char)*s))
        s++;
    size_t n = 0;
    while (s[n] && !isspace((unsigned char)s[n]))
        n++;
    if (!n)
        return 0;
    if (n >= len)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return 1;
}

void dg_rule_admin_rest(dg_turn_state *s, int64_t now_ms)
{
    go_dormant(s);
    s->permit = DG_NOBODY; /* the speaker's message still to come is cancelled */
    s->mention = s->mention_done = 0;
    s->last_change_ms = now_ms;
}

int dg_rule_admin_wake(dg_turn_state *s, const dg_rule_ctx *c, int pos, int64_t now_ms)
{
    if (!valid_pos(c, pos) || !(c->present & BIT(pos)))
        return -1;
    s->active = 1;
    s->speaker = pos;
    s->anchor = DG_NOBODY;
    s->silent = 0;
    s->mention = s->mention_done = 0;
    s->agent_msgs = 0;
    s->rested = 0;
    s->idle_reminded = 0;
    s->handoff = pos; /* the reply mentions it; its granted run clears this */
    s->last_change_ms = now_ms;
    arm_wait(s, c, pos); /* the reply wakes it */
    return 0;
}

int dg_rule_admin_skip(dg_turn_state *s, const dg_rule_ctx *c, int64_t now_ms, dg_rule_effects *fx)
{
    int sp = dg_rule_speaker(s, c);
    if (sp == DG_NOBODY)
        return DG_NOBODY;
    advance(s, c, sp, DG_RUN_SILENT, now_ms, fx);
    int next = dg_rule_speaker(s, c);
    if (s->active && next != DG_NOBODY && !fx->idle_reminder) {
        /* Unlike a timeout, always mention it: an admin asked for the move
         * and the next agent may not run on its own. */
        s->handoff = next;
        fx->handoff_to = next;
        arm_wait(s, c, next);
    }
    settle_wait(s, c);
    return sp;
}
