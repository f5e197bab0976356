/*
 * turns_engine.h -- the turn manager wired to the store, the outbox and the
 * clock: what the hooks call (hooks/ decode JSON into these plain structs).
 *
 * One engine per plugin instance (p->turns). The store is the one owner of
 * the state; the engine keeps an in-memory mirror of the
 * rows it has touched so that before_model_resolve and message_sending
 * decide without SQL. Every change runs in one store transaction: state
 * rows, dedup row and the moderator messages it owes (outbox rows) commit
 * together; the new turn state reaches the mirror only once that commit
 * has succeeded (readers never decide on a change that is rolled back), and
 * a failed commit drops the whole mirror (it is reloaded from the database).
 *
 * Scope of a session (agent hooks) -- see scope.h: DM or policy "channel"
 * -> Conversation(channel); policy "thread" with threadId -> that thread;
 * policy "thread" without threadId -> the channel's latest top-level thread
 * (the thread the latest top-level message opened), Conversation(channel)
 * before any. A top-level thread opened by an agent or bot message carries
 * the loop-guard counter of the previous top-level thread on, so bots
 * cannot escape the guard by each opening a new thread.
 *
 * Threads: every function may be called from any host thread, concurrently.
 */
#ifndef DG_TURNS_ENGINE_H
#define DG_TURNS_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include "dirigent.h"
#include "scope.h"
#include "turns.h"
#include "must_check.h"

/* Create the engine of p (p->store, p->cfg must be set). *out owned by the
 * caller: dg_turns_free. Prunes old dedup rows. Thread: init. */
int dg_turns_new(dg_plugin *p, dg_turns **out) DG_MUST_CHECK;

/* Free the engine (stopping its thread first); NULL is fine. Thread:
 * shutdown. */
void dg_turns_free(dg_turns *t);

/*
 * Start the engine's turn-timeout thread: about once a second it moves the
 * turn on in every awake scope whose speaker has not finished within
 * turn.timeoutSec, and queues what that owes (hand-off, idle reminder) --
 * so a hung run cannot hold a quiet channel. Call once the plugin is fully
 * set up (it kicks p->outbox). DG_OK or DG_ERR_INTERNAL. Thread: init.
 */
int dg_turns_start(dg_turns *t);

/* Stop and join that thread; idempotent, NULL is fine. Call before the
 * outbox is stopped. Thread: shutdown. */
void dg_turns_stop(dg_turns *t);

struct dg_turn_session;

/* A message as message_received reports it. Borrowed strings. */
typedef struct dg_turn_message {
    const char *message_id; /* dedup key with channel_id; NULL: no dedup */
    const char *channel_id; /* required */
    const char *thread_id;  /* Discord thread, NULL if none */
    int is_dm;
    const char *sender_id; /* required */
    int sender_is_bot;
    const char *content;         /* may be NULL */
    const char *const *mentions; /* user ids */
    size_t n_mentions;
    const dg_tag *tags; /* NIP-10 tags, may be NULL */
    size_t n_tags;
    /* The agent session this report is for (a host that fires
     * message_received once per agent, with ctx.sessionKey), or NULL when
     * the host did not say. See "Awaiting the wake message" below. */
    const struct dg_turn_session *recipient;
} dg_turn_message;

/* The session an agent hook runs in. Borrowed strings. */
typedef struct dg_turn_session {
    const char *agent_id;    /* required */
    const char *session_key; /* required */
    const char *channel_id;  /* required */
    const char *thread_id;   /* NULL if none */
    int is_dm;
} dg_turn_session;

/*
 * message_received: ingest once per (channel, messageId); apply the wake
 * rules; in a closed channel, queue the closed notice when owed. A message
 * of a user in `admins` that is a `!dirigent` command (dg_admin_parse) is
 * run instead of counted as speech: its state change and the moderator's
 * reply commit together (README "Admin commands"). Owed
 * moderator messages are committed with the change and the outbox kicked.
 * Returns DG_OK (a duplicate is OK too), DG_ERR_INVALID (missing field,
 * err says which) or DG_ERR_IO.
 */
int dg_turns_ingest(dg_turns *t, const dg_turn_message *m, char *err, size_t err_len) DG_MUST_CHECK;

/*
 * Awaiting the wake message (turns.h). When a change
 * grants the turn to an agent together with a moderator message meant to
 * wake it (hand-off, idle reminder, admin wake/skip reply, and the kickoff
 * for the first participant of a new discussion), that agent awaits the
 * message in its scope: until it reaches the agent's session, every run of
 * the agent is a stale run OpenClaw queued earlier and started late, so
 * before_agent_reply claims it and before_model_resolve swaps it, both
 * with no effect on the turn (no pass, no consumption, the agent keeps the
 * turn; its texts are cancelled and its agent_end changes nothing).
 * The wait ends when message_received reports a moderator message to
 * that agent's session (m->recipient: the first one after the grant; per
 * agent, before the dedup by message id), on a human message, and when the
 * turn moves on (timeout, skip, rest, wake, a full cycle).
 * Armed only once this engine has seen a message_received with a
 * recipient (ctx.sessionKey): a host that never reports deliveries per
 * agent session would leave the speaker waiting for ever. The wait lives
 * in memory per plugin instance (a restart or a dropped mirror loses it,
 * and then the agent's next run counts as before): it only decides which
 * of the speaker's runs count, the turn state it protects is in the store.
 */

/*
 * Silenced runs. A run is *swapped* when before_model_resolve
 * routed it to the no-reply model, *claimed* when before_agent_reply
 * answered {handled:true} for it (no model call at all). The engine
 * remembers such runs in memory, per instance, in a ring of
 * DG_RUN_MARKS marks (the oldest is overwritten): by runId when the hook
 * had one, else by session key until that session next gets a decision
 * that is not silenced (a real-model run or an unclaimed one). A mark
 * matches a later event of the same session when both carry a run id and
 * the ids are equal, or, when either lacks one, while the mark is live.
 * What a mark does:
 *   - every text of a silenced run is cancelled (message_sending,
 *     reply_payload_sending), whatever it says and whenever it comes;
 *   - agent_end of a swapped run is never speech: it is the silent
 *     consumption of a no-reply run (granted = 0 in turns.h);
 *   - agent_end of a claimed run changes nothing (the claim already did
 *     what its end would do).
 * Marks are not turn state and need not survive a restart: the claim's
 * effect on the turn and its run id are committed to the store at claim
 * time (a replayed agent_end with that run id is ignored across restarts);
 * what a lost mark costs after a restart is that a fallback text or an
 * id-less agent_end of a run in flight is judged like any other (the
 * turn-order checks of message_sending still apply).
 */
#define DG_RUN_MARKS 512

/* Verdict of before_model_resolve. */
typedef struct dg_turn_verdict {
    int no_reply; /* route this run to noReplyProvider/noReplyModel */
    int closed;   /* the channel is a closed discussion */
    int waiting;  /* no_reply because the speaker awaits its wake
                                  message: the run has no turn effect */
    char scope_label[DG_SCOPE_LABEL_MAX];
} dg_turn_verdict;

/*
 * before_model_resolve with the run id of the run (NULL: unknown): decide
 * without advancing any state; the first call of a session records that it
 * exists (the agent joins the channel's turn order). A no-reply verdict
 * marks the run as swapped (see "Silenced runs"); a real-model verdict ends
 * the session's live marks. Returns DG_OK or a negative status (then *v
 * says no_reply = 0).
 */
int dg_turns_resolve_run(dg_turns *t, const dg_turn_session *s, const char *run_id,
                         dg_turn_verdict *v) DG_MUST_CHECK;

/* Verdict of before_agent_reply. */
typedef struct dg_turn_claim {
    int claimed;      /* answer {handled: true}: no model call */
    int closed;       /* the channel is a closed discussion */
    int waiting;      /* claimed because the speaker awaits its wake
                                  message: no effect on the turn at all */
    char reason[256]; /* why, for the host's log (when claimed) */
} dg_turn_claim;

/*
 * before_agent_reply: the same decision as before_model_resolve (closed
 * channel, dormant or resting scope, or not the speaker in a managed
 * scope -> claimed; the speaker, unconfigured agents and unmanaged scopes
 * -> not; the speaker while it awaits its wake message -> claimed with no
 * effect on the turn). Any other claim has on the turn state exactly the
 * effect a swapped run that ended silently has (the agent consumed the latest message; if the
 * turn is on it, it gets the hand-off), applied and committed now, with
 * run_id (NULL: none) recorded like agent_end's so that a later agent_end
 * of the run changes nothing, also after a restart; the run is marked
 * claimed. A repeat for the same run_id changes nothing again. Returns
 * DG_OK or a negative status (then nothing is claimed). prompt (the run's
 * prompt, the event's cleanedBody; NULL: unknown): a speaker woken by the
 * idle reminder is held back, like a stale run, until a run's prompt
 * carries the reminder's first line; a speaker's run whose prompt carries
 * an older human or agent message of the scope but not the newest was
 * queued before the turn moved and is held back the same way.
 */
int dg_turns_claim(dg_turns *t, const dg_turn_session *s, const char *run_id, const char *prompt,
                   dg_turn_claim *out) DG_MUST_CHECK;

/*
 * message_sending and reply_payload_sending: *cancel = 1 with a reason
 * when the text of run_id (NULL: unknown) in session s must not go out:
 * a silenced (swapped or claimed) run's text, whatever it says; else what
 * dg_turns_check_send decides. content may be NULL. DG_OK or a negative
 * status.
 */
int dg_turns_check_outbound(dg_turns *t, const dg_turn_session *s, const char *run_id,
                            const char *content, int *cancel, char *reason,
                            size_t reason_len) DG_MUST_CHECK;

/*
 * *managed = 1 when the channel of session s is managed by the turn
 * manager: a discussion channel (open or closed) or a channel with two or
 * more configured agents in its turn order; else 0. Records the session
 * like every decision. DG_OK or a negative status (then *managed = 0).
 * Error notices are cancelled there (dg_turns_check_error_notice).
 */
int dg_turns_channel_managed(dg_turns *t, const dg_turn_session *s, int *managed) DG_MUST_CHECK;

/*
 * message_sending and reply_payload_sending, for a text the host marked as
 * its own error notice (field names the mark for the reason: "isError",
 * "payload.isError"): never speech, so *cancel = 1 with a reason in every
 * managed channel (dg_turns_channel_managed), whoever's run it ends, the
 * speaker's included; its first 120 characters are logged at info (hook:
 * the hook's name) so an operator still sees it. text may be NULL. DG_OK
 * or a negative status (then *cancel = 0). Any thread.
 */
int dg_turns_check_error_notice(dg_turns *t, const dg_turn_session *s, const char *hook,
                                const char *field, const char *text, int *cancel, char *reason,
                                size_t reason_len) DG_MUST_CHECK;

/*
 * message_sending: *cancel = 1 with a reason when the message must not go
 * out (closed channel; a non-silent message of a non-speaker in a managed
 * scope). content may be NULL. Returns DG_OK or a negative status.
 */
int dg_turns_check_send(dg_turns *t, const dg_turn_session *s, const char *content, int *cancel,
                        char *reason, size_t reason_len) DG_MUST_CHECK;

/*
 * agent_end: classify the run (silent.h) and, if it held the turn, advance
 * at once (not at its message). Owed hand-offs and notices are queued.
 * run_id (NULL or "": unknown) is recorded with the change in the same
 * transaction: a second agent_end of the same run_id for the same session
 * (a host replaying it after a crash, or firing it per attempt) changes
 * nothing, also across restarts. A swapped run's end is never speech and
 * a claimed run's end changes nothing (see "Silenced runs"). Returns DG_OK
 * (a repeat is OK too) or a negative status.
 */
int dg_turns_run_end(dg_turns *t, const dg_turn_session *s, const char *run_id, const char *output,
                     long tool_calls, int success) DG_MUST_CHECK;

/* ---- Discussion channels (called INSIDE the caller's store transaction) ---- */

/* The discussion code changes a channel's turn state through these, so the
 * engine knows which of its mirror's channels to reload (t's own change
 * log: no process-wide state). */

/*
 * What a run cost, as the host reports it (OpenClaw: model_call_ended for
 * a model call, llm_output for tokens; ocgw: its scripted agents): calls
 * model calls and tokens in and out added to run_id of session s in the
 * cost ledger (model, may be NULL, named as the latest one). Tokens count
 * against the scope's token budgets at once: the breaker may latch here.
 * DG_ERR_INVALID when s or run_id is missing or a count is negative;
 * DG_OK and nothing recorded for an agent that is not configured. Any
 * thread (the writer's transaction).
 */
int dg_turns_usage(dg_turns *t, const dg_turn_session *s, const char *run_id, const char *model,
                   int64_t calls, int64_t tokens_in, int64_t tokens_out) DG_MUST_CHECK;

/*
 * Make channel_id a discussion channel: mode "discussion" with
 * initiator_agent_id, the turn order replaced by initiator first then
 * `order` (agent ids; duplicates and the initiator are skipped), and the
 * channel's conversation scope awake with the initiator counted as having
 * opened the discussion, so the first participant after it speaks next
 * (the kickoff, a moderator message, wakes nobody by itself). Counters,
 * silent set and reminders are reset.
 * Must be called inside an open store transaction (dg_store_begin); the
 * caller commits or rolls back -- a rollback leaves the turn state as it
 * was. Returns DG_OK, DG_ERR_INVALID (empty ids, n too large) or DG_ERR_IO.
 * Any thread.
 */
int dg_turns_prefill_discussion(dg_turns *t, const char *channel_id, const char *initiator_agent_id,
                                const char *const *order, size_t n, int64_t now_ms) DG_MUST_CHECK;

/*
 * Close channel_id for good: mode "closed". From then on nothing in the
 * channel wakes a turn, every agent there gets the no-reply override, agent
 * messages are cancelled, and non-moderator messages get the closed notice
 * (handled by the hooks). Idempotent. Must be called inside an open store
 * transaction. Returns DG_OK, DG_ERR_INVALID or DG_ERR_IO. Any thread.
 */
int dg_turns_close_channel(dg_turns *t, const char *channel_id, int64_t now_ms) DG_MUST_CHECK;

/*
 * The origin channel of a closed discussion is woken with the result: its
 * conversation scope becomes awake with initiator_agent_id (added to the
 * turn order when it is not in it yet) as the speaker, as if a human had
 * @mentioned it -- the result message itself is the moderator's and wakes
 * nobody. Passes, consumed marks, rest and a pending hand-off are cleared;
 * the loop counter is kept (the result is not a human's word). Must be
 * called inside an open store transaction. Returns DG_OK, DG_ERR_INVALID
 * (empty ids, a full order) or DG_ERR_IO. Any thread.
 */
int dg_turns_wake_with_result(dg_turns *t, const char *origin_channel_id,
                              const char *initiator_agent_id, int64_t now_ms) DG_MUST_CHECK;

#endif
