/*
 * store_outbox.h -- typed access to the moderator outbox table (schema v3,
 * v11, v12, v19).
 *
 * A row is one chat message owed (Discord's or Slack's: its platform):
 * pending until the dispatcher marks it sent (with the platform's message
 * id) or failed (with the reason). Every
 * function here must run inside an open store transaction
 * (dg_store_begin .. dg_store_commit) on the calling thread.
 */
#ifndef DG_STORE_OUTBOX_H
#define DG_STORE_OUTBOX_H

#include <stddef.h>
#include <stdint.h>
#include "store.h"
#include "must_check.h"

typedef enum dg_outbox_state {
    DG_OUTBOX_PENDING = 0,
    DG_OUTBOX_SENT = 1,
    DG_OUTBOX_FAILED = 2
} dg_outbox_state;

typedef struct dg_outbox_row {
    int64_t id; /* order of sending within a channel */
    char *channel_id;
    char *content;   /* <= 2000 characters */
    char *mentions;  /* comma-separated user ids allowed to be pinged; "" none */
    char *nonce;     /* stable, <= 25 characters, unique */
    int part, parts; /* 1-based part of a split message */
    dg_outbox_state state;
    int attempts; /* failed sends so far */
    int64_t created_at_ms;
    int64_t done_at_ms; /* sent or failed; 0 while pending */
    char *message_id;   /* the platform's id once sent (Slack: the ts), else NULL */
    char *last_error;   /* last failure reason, else NULL */
    /* The chat platform the row goes to: "discord" or "slack" (schema v19;
     * rows written before it are Discord's). Read back as the store's own
     * static string, never freed; on insert NULL means "discord". */
    const char *platform;
    /* Slack: the thread to post into, its parent message's ts; NULL: the
     * channel itself (always on Discord, where a thread is a channel). */
    char *thread_id;
} dg_outbox_row;

/* Insert a pending row from row's channel_id, content, mentions, nonce,
 * part, parts, created_at_ms, platform, thread_id (borrowed). *id_out may
 * be NULL. Returns DG_OK, DG_ERR_INVALID (platform neither "discord" nor
 * "slack", or a thread_id that is empty or on a Discord row: nothing
 * written) or DG_ERR_IO (constraint or SQLite error). */
int dg_store_outbox_insert(dg_store *st, const dg_outbox_row *row, int64_t *id_out) DG_MUST_CHECK;

/* Where pending rows are: the id, channel and platform of pending rows
 * whose id is above after_id, oldest first, at most max; a cursor walk over
 * the primary key (no content read), so a caller that keeps the last id
 * touches each row once however long the backlog, and a dispatcher of one
 * platform skips the other's channels. *out (NULL when *n is 0) is owned
 * by the caller: free(). */
typedef struct dg_outbox_ref {
    int64_t id;
    char channel_id[24];
    char platform[8]; /* "discord" or "slack" */
} dg_outbox_ref;

int dg_store_outbox_discover(dg_store *st, int64_t after_id, size_t max, dg_outbox_ref **out,
                             size_t *n) DG_MUST_CHECK;

/* Pending rows of one channel with id above after_id, oldest first, at most
 * max (the pending index). *rows (NULL when *n is 0) is owned by the caller:
 * dg_outbox_rows_free. */
int dg_store_outbox_pending_of(dg_store *st, const char *channel_id, int64_t after_id, size_t max,
                               dg_outbox_row **rows, size_t *n) DG_MUST_CHECK;

/* Every row of a channel (NULL: all channels) ordered by id; same ownership. */
int dg_store_outbox_list(dg_store *st, const char *channel_id, dg_outbox_row **rows,
                         size_t *n) DG_MUST_CHECK;

/* Pending row -> sent. DG_ERR_NOT_FOUND when the row is not pending. */
int dg_store_outbox_mark_sent(dg_store *st, int64_t id, const char *message_id,
                              int64_t now_ms) DG_MUST_CHECK;

/* Pending rows ids[0..n) -> sent with message_ids[i], in statements of
 * several rows each (one UPDATE per row costs a fifth of
 * the dispatcher's CPU per message). *marked gets how many rows changed (a row
 * not pending is left as it is, as dg_store_outbox_mark_sent would).
 * DG_OK, DG_ERR_INVALID (a NULL message id: nothing changed) or the store's
 * status. Inside a transaction; the strings are only borrowed. */
int dg_store_outbox_mark_sent_many(dg_store *st, const int64_t *ids, const char *const *message_ids,
                                   size_t n, int64_t now_ms, size_t *marked) DG_MUST_CHECK;

/* Count one more failed attempt of a pending row and keep the reason. */
int dg_store_outbox_mark_retry(dg_store *st, int64_t id, const char *error) DG_MUST_CHECK;

/* Pending row -> failed for good, with the reason. */
int dg_store_outbox_mark_failed(dg_store *st, int64_t id, const char *error,
                                int64_t now_ms) DG_MUST_CHECK;

/* Rows in a state. */
int dg_store_outbox_count(dg_store *st, dg_outbox_state state, int64_t *n);

/* The highest id of a pending row, 0 when none is pending. */
int dg_store_outbox_max_pending_id(dg_store *st, int64_t *id) DG_MUST_CHECK;

/* Delete at most limit sent or failed rows done before before_ms (oldest
 * first); pending rows are never touched. *removed (may be NULL) gets the
 * count. Inside a transaction. */
int dg_store_outbox_prune(dg_store *st, int64_t before_ms, int limit, long *removed) DG_MUST_CHECK;

/* Free the strings of one row the store read (its platform is static and
 * stays) and zero it; safe on a zeroed row. For a caller that takes rows
 * out of an array one at a time. */
void dg_outbox_row_clear(dg_outbox_row *row);

/* Free rows[0..n) (each as dg_outbox_row_clear) and the array. */
void dg_outbox_rows_free(dg_outbox_row *rows, size_t n);

#endif
