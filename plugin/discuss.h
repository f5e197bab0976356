/*
 * discuss.h -- discussion channels with callback.
 *
 * A discussion is a private Discord channel opened by an agent (the
 * initiator) with `discord_channel_create` + `callbackChannelId`; it ends
 * when the initiator calls `discuss-callback` with a summary file in its
 * workspace. The core works on plain structs; hooks/tool_*.c decode JSON.
 *
 * Life cycle stored per discussion: active -> closed (exactly once).
 * Effects owed by a state change (kickoff, result message, session
 * overrides) are written in the same store transaction and carried out
 * after commit; rows not yet carried out are re-driven by
 * dg_discuss_resume() at the next init.
 *
 * Idempotency. When the host gives the tool call an id (ctx.toolCallId,
 * an addition to the ABI's tool context; OpenClaw passes the same id to
 * execute(toolCallId, params)), both tools are idempotent per id: a call
 * whose (toolCallId, caller, params) already succeeded gets the first
 * call's result (same status, same details and text) and does nothing else
 * -- no REST call, no row, no message. The result is stored in the same
 * transaction as the effect it reports (store_tool_calls.h). Refusals and
 * failures are not stored: they change nothing, and a repeat is checked
 * again. discord_channel_create records its intent before the REST call
 * and puts a marker ("dg-call:<16 hex>", derived from the id) on a line of
 * its own at the end of the channel topic (when the topic leaves room for
 * it); a repeat that finds the intent without a result (the first attempt
 * died between Discord's answer and the commit) looks the channel up by
 * name and marker (GET /guilds/{id}/channels) and finishes with it instead
 * of creating a second one. A repeat that arrives while the first call is
 * still running in this process gets DG_ERR_CONFLICT. Without a
 * toolCallId nothing of this happens (no marker, no rows).
 */
#ifndef DG_DISCUSS_H
#define DG_DISCUSS_H

#include <stddef.h>
#include <stdint.h>
#include "dirigent.h"
#include "store_records.h" /* dg_discussion, dg_discussion_status, dg_discussion_clear */
#include "must_check.h"

/* "active" / "closed" / "none". Static string. */
const char *dg_discussion_status_name(dg_discussion_status s);

/* The trusted tool context (borrowed strings; NULL when absent). */
typedef struct dg_caller {
    const char *agent_id;
    const char *session_key;
    const char *session_id;
    const char *workspace_dir;
    const char *channel_id;
    const char *thread_id;
    const char *tool_call_id; /* ctx.toolCallId: see "Idempotency" below */
} dg_caller;

/* Params of discord_channel_create after JSON decoding (borrowed). */
typedef struct dg_channel_request {
    const char *name;
    const char *topic;               /* NULL: none */
    const char *parent_id;           /* NULL: none */
    const char *const *participants; /* agent ids */
    size_t n_participants;
    const char *const *allowed_user_ids;
    size_t n_allowed_user_ids;
    const char *callback_channel_id; /* NULL: plain mode */
    const char *discuss_guide;       /* required iff callback_channel_id */
} dg_channel_request;

typedef struct dg_channel_created {
    char *channel_id; /* owned: dg_channel_created_clear() */
    int is_discussion;
    int64_t discussion_id; /* 0 in plain mode */
} dg_channel_created;

void dg_channel_created_clear(dg_channel_created *c);

/* The platform a channel request is for: its callbackChannelId's, else
 * the caller's channel's, else Discord. Any thread. */
dg_platform dg_discuss_platform(const dg_caller *caller, const dg_channel_request *req);

/*
 * Check a request against the rules of docs/behaviour.md (channel name,
 * snowflakes, known participants, topic and guide length, guide iff
 * callback, no discussion opened from inside a discussion channel).
 * Returns DG_OK or DG_ERR_INVALID / DG_ERR_DENIED with a sentence in err
 * naming the param and the rule. Opens its own store transaction for the
 * nesting check. Any thread.
 */
int dg_discuss_validate(dg_plugin *p, const dg_caller *caller, const dg_channel_request *req,
                        char *err, size_t err_len) DG_MUST_CHECK;

/*
 * discord_channel_create: validate, create the private channel over REST
 * (members: caller, participants, allowed users, moderator), and in
 * discussion mode record the discussion, prefill its turn order and queue
 * the kickoff in one transaction, then kick the outbox. A REST failure
 * leaves no discussion row (with a toolCallId, only the intent). A repeated
 * toolCallId is answered as described under "Idempotency" above. On DG_OK
 * *out is filled (caller clears it). On error a
 * negative dg_status and an actionable sentence in err. Any tool thread;
 * blocks for the REST call (bounded by discord.timeoutMs and retries).
 */
int dg_discuss_create_channel(dg_plugin *p, const dg_caller *caller, const dg_channel_request *req,
                              dg_channel_created *out, char *err, size_t err_len) DG_MUST_CHECK;

/* Result of a successful discuss-callback; owned strings. */
typedef struct dg_callback_result {
    int64_t discussion_id;
    char *channel_id;
    char *origin_channel_id;
    char *summary_path; /* relative to the initiator's workspace */
} dg_callback_result;

void dg_callback_result_clear(dg_callback_result *r);

/* The host's sessions of a channel as plain values: the host-call table
 * decodes the host's JSON (hooks/host_calls.c), the core reads none.
 * Strings borrowed for the call; agent_id may be NULL. */
typedef struct dg_session_ref {
    const char *session_key;
    const char *agent_id;
    const char *thread_id; /* NULL: the channel's top level (or unknown) */
} dg_session_ref;

typedef struct dg_session_refs {
    const dg_session_ref *v; /* malloc'd by whoever filled it */
    size_t n;
    int unavailable; /* the host could not list them (out of memory) */
    void *owner;     /* what the strings borrow from; NULL: nothing */
    void (*release)(void *owner);
} dg_session_refs;

/* Free what r holds (v, and owner through release); r is then empty.
 * NULL-safe. Any thread. */
void dg_session_refs_release(dg_session_refs *r);

/* The host's sessions of channel_id (entries of other channels left out)
 * into *out through p->host.sessions; release it with
 * dg_session_refs_release. Unavailable when the host could not list them
 * or p has no such call; an answer that is no list is logged and taken as
 * no sessions. A thread that may call the host (host_calls.h). */
void dg_host_sessions(dg_plugin *p, const char *channel_id, dg_session_refs *out);

/*
 * discuss-callback(summaryPath). Statuses in this order: caller's channel
 * is not a discussion channel DG_ERR_NOT_FOUND; caller is not the
 * initiator DG_ERR_DENIED; already closed DG_ERR_CONFLICT; summary file
 * missing DG_ERR_NOT_FOUND; any other refused path DG_ERR_INVALID or
 * DG_ERR_DENIED (see paths.h). Refusals change nothing. On success the
 * discussion is closed in one transaction (overrides recorded for every
 * session of `sessions`, turns closed, result queued to the origin
 * channel), then the overrides are applied with session_patch. Of two
 * concurrent callbacks exactly one succeeds; the other gets
 * DG_ERR_CONFLICT -- unless both carry the same toolCallId: a repeat of a
 * successful callback (same toolCallId, caller and path) gets the first
 * call's result, not DG_ERR_CONFLICT, and nothing happens again.
 * Any tool thread.
 */
int dg_discuss_callback(dg_plugin *p, const dg_caller *caller, const char *summary_path,
                        const dg_session_refs *sessions, dg_callback_result *out, char *err,
                        size_t err_len) DG_MUST_CHECK;

/*
 * Re-drive effects a crash left undone: session overrides recorded but not
 * applied are applied with session_patch and marked. Also forgets stored
 * tool-call results older than 30 days. The lead calls it at
 * init after the store is open and the host-call table is set (outbox rows are
 * re-sent by the outbox itself). Thread: init.
 */
void dg_discuss_resume(dg_plugin *p);

/*
 * A session seen in a channel (hC calls it from before_model_resolve).
 * When channel_id is a closed discussion and the session has no override
 * row yet, record one and apply session_patch(noReplyProvider,
 * noReplyModel). Cheap when there is nothing to do (one indexed lookup).
 * MUST be called with no store transaction open by the caller (it opens
 * its own). Any thread; never fails loudly (errors are logged).
 */
void dg_discuss_session_seen(dg_plugin *p, const char *session_key, const char *agent_id,
                             const char *channel_id);

/*
 * Status of channel_id as a discussion, for callers that already hold a
 * store transaction (hooks in the turn path): DG_DISCUSSION_NONE /
 * ACTIVE / CLOSED, or a negative dg_status on a store error. If d is not
 * NULL and the channel is a discussion, *d is filled (caller clears it).
 */
int dg_discuss_lookup_locked(dg_store *st, const char *channel_id, dg_discussion *d) DG_MUST_CHECK;

/*
 * Closed-notice bookkeeping for the turn path, inside the
 * caller's transaction. Records message_id of channel_id as answered and
 * returns 1 when it should get the "channel closed" notice now; 0 when not
 * (this message was already handled -- several accounts report one message
 * -- or another notice went out less than cooldown_ms ago; 0 = no window);
 * a negative dg_status on a store error. The caller queues the notice in
 * the same transaction when it gets 1.
 */
int dg_discuss_claim_closed_notice_locked(dg_store *st, const char *channel_id,
                                          const char *message_id, int64_t now_ms,
                                          int64_t cooldown_ms) DG_MUST_CHECK;

/*
 * The discussion timers, applied by the turn sweeper once a
 * second (turns_engine.c): an active discussion without a human's or an
 * agent's message for discussion.reminderAfterSec gets timeout.md (once per
 * quiet period) and the initiator gets the turn; past
 * discussion.maxLifetimeSec from its creation wrapup.md (once), the
 * initiator gets the turn; one more maxLifetimeSec after that request it
 * is closed with status `expired` (no summary; result.md to the origin
 * with {status} "expired"). Each change and its message are one store
 * transaction, so each happens exactly once, across restarts too. No host
 * call: sessions of an expired channel get their no-reply override when
 * next seen (dg_discuss_session_seen). MUST be called with no store
 * transaction open. Thread: the sweeper (any plugin thread).
 */
void dg_discuss_sweep(dg_plugin *p);

/*
 * `!dirigent close [summaryPath]` by an admin in discussion channel
 * channel_id, inside the caller's store transaction (the turn writer's):
 * closes it like a callback with status `closed-by-admin` -- turns closed,
 * result.md to the origin channel (mentioning the initiator, {status}
 * "closed-by-admin"), the origin woken for the initiator; later messages
 * get the closed notice. With summary_path (NULL: none) the file is checked
 * against the initiator's workspace exactly as discuss-callback checks it;
 * without one the result says no summary was given. No host call (the
 * sessions of the channel get their no-reply override when next seen).
 * Returns DG_OK with *closed 1 when it closed, DG_OK with *closed 0 when
 * refused (not a discussion, already closed, the path refused) with
 * nothing written; a negative store error otherwise (the caller rolls
 * back). A sentence for the admin's reply goes to msg either way.
 * Any thread.
 */
int dg_discuss_admin_close_locked(dg_plugin *p, const char *channel_id, const char *summary_path,
                                  int64_t now_ms, int *closed, char *msg,
                                  size_t msg_len) DG_MUST_CHECK;

/*
 * Where the initiator is asked to write the summary of d (the summary path
 * convention): "<discussion.summaryDir>/<channel name>.md"
 * (the channel id stands in for rows without a recorded name). A new string
 * the caller frees; NULL when out of memory. Inside the caller's store
 * transaction. Any thread.
 */
char *dg_discuss_suggested_path_locked(const dg_plugin *p, const dg_discussion *d) DG_MUST_CHECK;

#endif
