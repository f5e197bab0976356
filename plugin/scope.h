/*
 * scope.h -- session scope: which conversation an event or a session
 * belongs to (shared/reference/session-scope.md, after buzz-acp).
 *
 * Turn state, message dedup and session overrides are keyed by scope. The
 * channel stays the authorisation boundary (dg_scope_channel works for any
 * scope); the scope is only the execution boundary.
 *
 * Derivation, in this order:
 *   1. a DM is always Conversation(channel), whatever the policy;
 *   2. policy "channel": every event is Conversation(channel);
 *   3. policy "thread": an event inside a Discord thread is
 *      Thread(channel, threadId); else an event whose NIP-10 `tags` name a
 *      canonical root is Thread(channel, root); else a top-level message
 *      opens a new thread rooted at its own message id (a Discord thread
 *      started from a message has that message's id, so the replies of a
 *      host that auto-threads land in the same scope).
 * Roots are lower-cased ASCII before they become keys.
 *
 * Agent hooks carry no message id. A session's scope comes from its
 * context: a DM or policy "channel" -> Conversation(channel); policy
 * "thread" with a threadId -> Thread(channel, threadId) (OpenClaw's thread
 * session key carries the thread); policy "thread" without a threadId (the
 * channel-level session of a host that does not open threads) ->
 * Conversation(channel) here, and the turn engine then acts in the scope of
 * the channel's latest top-level thread (see turns_engine.h), because that
 * is the message such a run answers.
 *
 * Pure functions over plain structs; no allocation. Any thread.
 */
#ifndef DG_SCOPE_H
#define DG_SCOPE_H

#include <stddef.h>
#include "config.h"
#include "store_records.h" /* dg_scope, DG_SCOPE_ID_MAX, DG_SCOPE_KEY_MAX */
#include "must_check.h"

/* "thread:" + 8 characters + NUL */
#define DG_SCOPE_LABEL_MAX 16

/* One tag of an event, e.g. {"e", <id>, <relay>, <marker>}. Borrowed. */
typedef struct dg_tag {
    const char *const *parts;
    size_t n;
} dg_tag;

/* What derivation looks at. Borrowed strings; NULL or "" when absent. */
typedef struct dg_scope_event {
    const char *channel_id; /* required */
    const char *thread_id;  /* Discord thread the event is in */
    const char *message_id; /* the event's own id; NULL for agent hooks */
    int is_dm;
    const dg_tag *tags; /* NIP-10 tags, may be NULL */
    size_t n_tags;
} dg_scope_event;

/*
 * Scope of ev under policy into *out. Returns DG_OK, or DG_ERR_INVALID when
 * channel_id is missing/too long or a root is too long.
 */
int dg_scope_derive(dg_session_policy policy, const dg_scope_event *ev,
                    dg_scope *out) DG_MUST_CHECK;

/*
 * NIP-10 canonical root of tags: a tag counts only with 4+ parts, parts[0]
 * "e", a 64-hex id and marker "root" or "reply"; the last valid tag of each
 * marker wins. root+reply -> the root; reply only -> the reply id; root
 * only, none, or only malformed tags -> no root (top-level). On a root,
 * writes it lower-cased into out (65 bytes) and returns 1; else 0.
 */
int dg_nip10_root(const dg_tag *tags, size_t n_tags, char out[65]);

/* dg_scope_conversation, dg_scope_thread: store_records.h. */

/* The channel of any scope (borrowed from s). */
const char *dg_scope_channel(const dg_scope *s);

/* Telemetry label: "conversation" or "thread:" + first 8 chars of the
 * root, into buf; returns buf. */
char *dg_scope_label(const dg_scope *s, char buf[DG_SCOPE_LABEL_MAX]);

/*
 * Key usable in a hash map or as a database key: "conv:<channel>" or
 * "thread:<channel>:<root>". Two scopes are equal iff their keys are.
 * Returns buf.
 */
char *dg_scope_key(const dg_scope *s, char buf[DG_SCOPE_KEY_MAX]);

/* Parse a key made by dg_scope_key back. DG_OK or DG_ERR_INVALID. */
int dg_scope_from_key(const char *key, dg_scope *out) DG_MUST_CHECK;

/* 1 when a and b name the same scope. */
int dg_scope_equal(const dg_scope *a, const dg_scope *b);

/* dg_scope_normalize_root: store_records.h. */

#endif
