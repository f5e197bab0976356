/*
 * store_tool_calls.h -- the SQL of tool-call idempotency (schema slot v5).
 *
 * Table tool_calls: one row per (tool, ctx.toolCallId, fingerprint) that
 * had an effect. A host that repeats a call after a crash (same
 * toolCallId) gets the first call's result from here instead of a second
 * effect. The fingerprint (caller and params, computed by the discussion
 * code) keeps an id that a model or host happens to reuse for another call
 * from being answered with an unrelated result.
 *
 * States: 'pending' is the intent recorded before an effect outside the
 * database (the REST channel creation), so a repeat after a crash knows it
 * must look for what the first attempt may have made; 'done' holds the
 * result and is written in the same transaction as the effect it reports.
 *
 * Every function here must run inside a store transaction (the caller holds
 * dg_store_begin .. commit/rollback) and returns DG_OK or a negative
 * dg_status (DG_ERR_IO for SQLite errors: dg_store_errmsg() says why).
 */
#ifndef DG_STORE_TOOL_CALLS_H
#define DG_STORE_TOOL_CALLS_H

#include <stddef.h>
#include <stdint.h>
#include "store.h"
#include "must_check.h"

typedef enum dg_tool_call_state {
    DG_TOOL_CALL_NONE = 0,    /* never seen */
    DG_TOOL_CALL_PENDING = 1, /* intent recorded, no result yet */
    DG_TOOL_CALL_DONE = 2     /* result recorded with its effect */
} dg_tool_call_state;

/* A recorded result. Which fields a tool fills is the tool's business:
 * discord_channel_create: channel_id, discussion_id (0 in plain mode);
 * discuss-callback: the first four. initiator is only noted on a pending
 * row (dg_store_tool_call_note) and read by dg_store_tool_calls_unfinished.
 * Strings owned: dg_tool_call_row_clear(). */
typedef struct dg_tool_call_row {
    dg_tool_call_state state;
    char *channel_id;
    int64_t discussion_id;
    char *origin_channel_id;
    char *summary_path;
    char *initiator; /* agent id */
} dg_tool_call_row;

/* Free the strings of r and zero it; safe on a zeroed struct. */
void dg_tool_call_row_clear(dg_tool_call_row *r);

/* The row of (tool, call_id, fingerprint) into *out (caller clears);
 * out->state is DG_TOOL_CALL_NONE, with DG_OK, when there is none. */
int dg_store_tool_call_get(dg_store *st, const char *tool, const char *call_id,
                           const char *fingerprint, dg_tool_call_row *out) DG_MUST_CHECK;

/* Record the intent (state pending). DG_ERR_CONFLICT when a row exists. */
int dg_store_tool_call_intent(dg_store *st, const char *tool, const char *call_id,
                              const char *fingerprint, int64_t now_ms) DG_MUST_CHECK;

/* Record the result (state done), turning a pending row into a done one or
 * inserting it. DG_ERR_CONFLICT when a result is already recorded. */
int dg_store_tool_call_done(dg_store *st, const char *tool, const char *call_id,
                            const char *fingerprint, const dg_tool_call_row *result,
                            int64_t now_ms) DG_MUST_CHECK;

/* On a pending row: what its effect has reached so far (a NULL argument
 * keeps the stored value). discord_channel_create notes the origin channel,
 * the requested name and the calling agent with its intent
 * (origin_channel_id, summary_path, initiator)
 * and the channel's id once the platform made it (channel_id), so that a
 * creation nobody repeats can be found and undone (dg_store_tool_calls_
 * unfinished). DG_ERR_NOT_FOUND when no pending row has that key. */
int dg_store_tool_call_note(dg_store *st, const char *tool, const char *call_id,
                            const char *fingerprint, const char *channel_id,
                            const char *origin_channel_id, const char *summary_path,
                            const char *initiator) DG_MUST_CHECK;

/* A pending row found by dg_store_tool_calls_unfinished. Strings owned:
 * dg_tool_call_pending_free(). */
typedef struct dg_tool_call_pending {
    char *call_id;
    char *fingerprint;
    dg_tool_call_row row; /* state pending; the noted fields */
} dg_tool_call_pending;

void dg_tool_call_pending_free(dg_tool_call_pending *v, size_t n);

/* Up to max pending rows of tool started before before_ms with an origin
 * noted, oldest first, into *out (malloc'd, dg_tool_call_pending_free). */
int dg_store_tool_calls_unfinished(dg_store *st, const char *tool, int64_t before_ms, size_t max,
                                   dg_tool_call_pending **out, size_t *n) DG_MUST_CHECK;

/* Delete the pending row of the key (a done one stays). */
int dg_store_tool_call_forget(dg_store *st, const char *tool, const char *call_id,
                              const char *fingerprint) DG_MUST_CHECK;

/* Forget rows started before before_ms (a repeat after a crash comes within
 * minutes; rows are kept for weeks). *removed may be NULL. */
int dg_store_tool_calls_prune(dg_store *st, int64_t before_ms, long *removed) DG_MUST_CHECK;

#endif
