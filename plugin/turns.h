/*
 * turns.h -- the turn manager: one speaker at a time per session scope.
 *
 * Semantics: shared/reference/dirigent.md (turn manager).
 * State per scope (see scope.h): the turn order (agents of `agents` seen in
 * the channel, in first-seen order; humans and the moderator never), the
 * current speaker or dormant, the agents silent in this cycle, the agent
 * message counter (loop guard), the mention-only set, the last change time.
 * Per channel: the mode (normal / discussion with its initiator / closed)
 * and the member list the turn order is made of.
 *
 * Layers:
 *   - pure logic over plain structs (dg_turn_state + dg_rule_ctx): the
 *     functions below named dg_turn_*; no I/O, no clock of their own (the
 *     caller passes now_ms, from dg_now_ms(p) in the plugin);
 *   - the engine (dg_turns): store transactions, an in-memory mirror of the
 *     rows for the read-only hot path (before_model_resolve), and the
 *     moderator messages owed by a change, queued through the outbox in the
 *     same transaction.
 *
 */
#ifndef DG_TURNS_H
#define DG_TURNS_H

#include <stddef.h>
#include <stdint.h>
#include "dirigent.h"

#include "silent.h"
#include "store_records.h" /* dg_turn_state, dg_channel_mode, DG_NOBODY, DG_TURN_MAX_MEMBERS */

/* ---- Pure logic ---------------------------------------------------------- */

/* "normal" / "discussion" / "closed". Static string. */
const char *dg_channel_mode_name(dg_channel_mode m);

/*
 * What the logic knows of a scope's channel. Positions index the channel's
 * member list (first-seen order, stable: members are only appended).
 */
typedef struct dg_rule_ctx {
    int n_members;
    uint64_t present; /* members that are still configured agents */
    dg_channel_mode mode;
    int initiator;          /* discussion initiator's position or DG_NOBODY */
    int64_t timeout_ms;     /* turn.timeoutSec * 1000; 0 = no timeout */
    int64_t max_agent_msgs; /* turn.maxAgentMessages; 0 = no loop guard */
    int wake_tracking;      /* the host reports message_received per agent
                                session: a speaker woken by a moderator message
                                awaits it (dg_turn_state.awaiting) */
} dg_rule_ctx;

/* dg_turn_state_init (a fresh, dormant state): store_records.h. */

/* 1 when a and b agree on every field the store keeps (all but msg_seq). */
int dg_turn_state_same(const dg_turn_state *a, const dg_turn_state *b);

/* Moderator messages owed by a change (the engine queues them). */
typedef struct dg_rule_effects {
    int handoff_to;    /* bare mention of this member, or DG_NOBODY */
    int rest_notice;   /* the loop guard put the scope to rest */
    int idle_reminder; /* discussion idle: remind the initiator */
} dg_rule_effects;

void dg_rule_effects_init(dg_rule_effects *fx);

typedef enum dg_sender_kind {
    DG_SENDER_HUMAN = 0,
    DG_SENDER_AGENT = 1,     /* an agent of `agents` (a member) */
    DG_SENDER_BOT = 2,       /* another bot: outside the order, counts for the loop guard */
    DG_SENDER_MODERATOR = 3, /* never speech, never wakes; ends an agent-only
                                stretch for the loop guard (a result message)
                                unless the scope is at rest or it is the idle
                                reminder the scope owed */
    DG_SENDER_HANDOFF = 4    /* the moderator's bare mention: changes nothing */
} dg_sender_kind;

/* 1 when the scope is managed: 2+ configured members and not closed. */
int dg_rule_managed(const dg_rule_ctx *c);

/* Effective speaker (position) as the state stands, DG_NOBODY when dormant
 * or nobody is eligible. Does not apply timeouts. */
int dg_rule_speaker(const dg_turn_state *s, const dg_rule_ctx *c);

/*
 * Apply turn.timeoutSec up to now: a speaker that has not finished within
 * the timeout loses the turn (counted as a pass), possibly several times.
 * fx may be NULL (read-only callers work on a copy).
 */
void dg_rule_expire(dg_turn_state *s, const dg_rule_ctx *c, int64_t now_ms, dg_rule_effects *fx);

/*
 * A new message in the scope (after dedup). sender_pos: the member position
 * of an agent sender (DG_SENDER_AGENT), else DG_NOBODY. mentions: members a
 * human @mentioned. Wake rules; the moderator changes nothing.
 * Any real message resets the cycle (silent set: its author, an agent,
 * counts as having passed on it, so the turn never comes back to it for
 * a pass) and wakes a dormant scope: a sender outside the order -> the
 * first agent; an agent -> the agent after it. In an awake scope the turn only moves when the agent
 * that holds it posts before its run ended (streaming hosts); the message
 * of an agent whose turn already passed on at agent_end is old news (it
 * must not pull the turn back), and a human keeps the current speaker
 * unless they @mention agents.
 */
void dg_rule_on_message(dg_turn_state *s, const dg_rule_ctx *c, dg_sender_kind kind, int sender_pos,
                        uint64_t mentions, int64_t now_ms, dg_rule_effects *fx);

/*
 * Member pos leaves the order (c: the channel as it was, pos still
 * present): its bits are cleared, a mention left with none of its agents
 * addresses everybody, and if pos held the turn the next eligible member
 * gets it now (a hand-off in fx when that one already consumed the latest
 * message), or the scope sleeps when nobody is eligible. The caller then
 * takes pos out of c->present.
 */
void dg_rule_member_gone(dg_turn_state *s, const dg_rule_ctx *c, int pos, int64_t now_ms,
                         dg_rule_effects *fx);

/*
 * A run of member pos ended with outcome o. saw_latest: the run started
 * after the latest message was ingested (it consumed that message).
 * granted: 1 the run was resolved with the turn (no override), 0 it was
 * swapped to the no-reply model, -1 unknown (e.g. resolved before a
 * restart; then holding the turn now counts). If pos holds the turn and
 * the run was granted, the turn advances now (not at its message). A swapped
 * run's forced NO_REPLY is never a pass: if the turn reached pos while it
 * ran, pos is woken with a hand-off instead.
 */
void dg_rule_on_run_end(dg_turn_state *s, const dg_rule_ctx *c, int pos, dg_run_outcome o,
                        int saw_latest, int granted, int64_t now_ms, dg_rule_effects *fx);

/*
 * Decision of before_model_resolve for member pos (DG_NOBODY: an agent not
 * in the order) at now: 1 = route to the no-reply model. Closed channels
 * always 1; unmanaged scopes 0; else 1 unless pos is the speaker. Pure:
 * timeouts are applied to a copy.
 */
int dg_rule_needs_override(const dg_turn_state *s, const dg_rule_ctx *c, int pos, int64_t now_ms);

/*
 * Decision of message_sending for a non-silent message of member pos: 1 =
 * allowed. The speaker may send; so may the member whose speaking turn just
 * ended (agent_end comes before the message is sent), for timeout_ms after
 * it ended. Closed channels: never. Unmanaged scopes: always.
 */
int dg_rule_may_send(const dg_turn_state *s, const dg_rule_ctx *c, int pos, int64_t now_ms);

/*
 * Awaiting the wake message. OpenClaw queues a
 * message that arrives while a session's run is still active and starts a
 * run for it LATE, possibly after the turn reached that agent; such a stale
 * run must not be taken as the agent's answer to the message that gave it
 * the turn. So when a change grants the turn to an agent together with a
 * moderator message meant to wake it (and c->wake_tracking is set), the
 * agent is recorded in s->awaiting. While it is, the agent's runs are held
 * back with no effect on the turn (dg_rule_awaiting_wake). The wait ends
 * when a moderator message reaches that agent's session
 * (dg_rule_wake_delivered), on a human message, and whenever the turn
 * moves on or the scope sleeps (every function here keeps the invariant:
 * awaiting is empty or the current speaker's bit).
 */

/* 1 when pos is the speaker and awaits its wake message at now (timeouts
 * applied to a copy). 0 in unmanaged or closed scopes. Pure. */
int dg_rule_awaiting_wake(const dg_turn_state *s, const dg_rule_ctx *c, int pos, int64_t now_ms);

/* A moderator message reached pos's session: its wait (if any) ends.
 * Returns 1 when pos was awaiting. */
int dg_rule_wake_delivered(dg_turn_state *s, int pos);

/* The turn was granted to pos with a wake message queued outside the
 * pure logic (a discussion's kickoff): pos awaits it when c->wake_tracking
 * is set and pos is the speaker now. Returns 1 when armed. */
int dg_rule_await_wake(dg_turn_state *s, const dg_rule_ctx *c, int pos);

/* ---- Admin commands (config `admins`; the engine parses and replies) ---- */

typedef enum dg_admin_cmd {
    DG_ADMIN_NONE = 0, /* not a `!dirigent` command */
    DG_ADMIN_HELP = 1, /* `!dirigent` alone or `!dirigent help` */
    DG_ADMIN_STATUS = 2,
    DG_ADMIN_REST = 3,
    DG_ADMIN_WAKE = 4,
    DG_ADMIN_SKIP = 5,
    DG_ADMIN_CLOSE = 6,    /* `!dirigent close [summaryPath]` (discussion channels) */
    DG_ADMIN_ROTATE = 7,   /* `!dirigent rotate`: the scope's sessions end (host, ABI 1.1) */
    DG_ADMIN_CANCEL = 8,   /* `!dirigent cancel`: the speaker's run is aborted (ABI 1.1) */
    DG_ADMIN_ORDER = 9,    /* `!dirigent order`: the channel's turn order, who is out */
    DG_ADMIN_ADD = 10,     /* `!dirigent add <@agent>`: into the order (back) */
    DG_ADMIN_REMOVE = 11,  /* `!dirigent remove <@agent>`: out of the order until `add` */
    DG_ADMIN_UNKNOWN = 12, /* `!dirigent <word>` with a word that is no subcommand */
    DG_ADMIN_RESUME = 13,  /* `!dirigent resume`: lift a budget's breaker, wake the scope */
    DG_ADMIN_COST = 14,    /* `!dirigent cost`: the channel's cost, the last 7 days */
    DG_ADMIN_REFUSED = 15  /* any of them from a human not in `admins`: one line says only
                            * admins may; the message is no speech either */
} dg_admin_cmd;

/* Every moderator reply to an admin command starts with this, so its echo
 * (message_received from the moderator) changes nothing, like a hand-off. */
#define DG_ADMIN_REPLY_PREFIX "Dirigent (admin): "

/* The command in content (may be NULL): trimmed, it starts with
 * `!dirigent` (any case) followed by the end or white space; the next word
 * (any case) is the subcommand: DG_ADMIN_HELP when there is none,
 * DG_ADMIN_UNKNOWN when it is no subcommand. DG_ADMIN_NONE for anything
 * else. */
dg_admin_cmd dg_admin_parse(const char *content);

/* The first word after the subcommand of a `!dirigent` command (e.g. the
 * summaryPath of `close`), copied into buf (NUL-terminated); 0 when there
 * is none, -1 when it does not fit in len. Any thread. */
int dg_admin_arg(const char *content, char *buf, size_t len);

/* How far a mistyped subcommand may be from a known one (edit distance)
 * for the reply to suggest it. */
#define DG_ADMIN_SUGGEST_MAX 2

/* For a `!dirigent` command whose subcommand is unknown: the subcommand as
 * typed is copied into word (truncated to word_len, backticks dropped, so
 * it can be shown in a code span; may be NULL), and the known subcommand
 * nearest to it is returned (static text) when it is within
 * DG_ADMIN_SUGGEST_MAX edits or the word starts it (2 letters or more);
 * NULL otherwise. Any thread. */
const char *dg_admin_suggest(const char *content, char *word, size_t word_len);

/* How far the first word of a message may be from `!dirigent` (edit
 * distance, case ignored) to read as a mistyped command. */
#define DG_ADMIN_NEAR_MISS_MAX 2

/* The moderator hints at a mistyped `!dirigent` at most once per channel
 * in this long (the time is kept in the store: a restart keeps it). */
#define DG_ADMIN_HINT_COOLDOWN_MS ((int64_t)3600 * 1000)

/* 1 when content (may be NULL) starts with a mistyped `!dirigent`: a first
 * word that starts with '!', is 1 to DG_ADMIN_NEAR_MISS_MAX edits from it
 * and does not start with `!dirigent` itself ("!dirigentfoo" is text).
 * Then fix (may be NULL) gets the command meant: "!dirigent", plus the
 * subcommand when the next word is one or close to one ("!dirignet stauts"
 * -> "!dirigent status"). 0 otherwise. Any thread. */
int dg_admin_near_miss(const char *content, char *fix, size_t fix_len);

/* `rest`: dormant now, with nothing pending (hand-off, open mention, the
 * finished speaker's send permit), so no reminder or timeout wakes it. */
void dg_rule_admin_rest(dg_turn_state *s, int64_t now_ms);

/* `wake`: member pos (configured) gets the turn now; cycle, open mention,
 * loop-guard counter and rest are cleared; the hand-off to pos is recorded
 * as pending (the caller's reply mentions it). 0, or -1 when pos is not a
 * configured member (nothing changed). */
int dg_rule_admin_wake(dg_turn_state *s, const dg_rule_ctx *c, int pos, int64_t now_ms);

/* `skip`: the current speaker passes (as on a timeout) and the next one is
 * handed the turn with a mention (fx->handoff_to, also when it has not
 * consumed the latest message). Returns the skipped speaker, or DG_NOBODY
 * when there is none (dormant; nothing changed). */
int dg_rule_admin_skip(dg_turn_state *s, const dg_rule_ctx *c, int64_t now_ms, dg_rule_effects *fx);

#endif
