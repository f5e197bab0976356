/*
 * outbox.h -- the durable moderator outbox and its dispatcher thread.
 *
 * A message the plugin owes is a row written in the same SQLite transaction
 * as the state change that owes it (dg_outbox_enqueue inside the caller's
 * dg_store_begin/commit). After commit the caller kicks the dispatcher of
 * the rows' platform, which posts them in order per channel with a stable
 * key, so a resend after a crash never duplicates.
 */
#ifndef DG_OUTBOX_H
#define DG_OUTBOX_H

#include <stddef.h>
#include <stdint.h>
#include "dirigent.h"
#include "must_check.h"

/*
 * Queue content for target: a channel id, or a thread (chat.h's post
 * target: a Discord thread's id, a Slack "<channel>/<ts>"); the platform is
 * the channel id's. mention_ids (borrowed, may be NULL when n_mentions is
 * 0) are the only users the message may ping, ids of that platform.
 * Content over the platform's text limit is split on line boundaries into
 * ordered parts, one row and one key each. Must be called inside an open
 * store transaction. Returns DG_OK, DG_ERR_INVALID (empty content, a
 * target or mention of no platform) or DG_ERR_IO.
 */
int dg_outbox_enqueue(dg_store *st, const char *target, const char *content,
                      const char *const *mention_ids, size_t n_mentions,
                      int64_t now_ms) DG_MUST_CHECK;

/* Start the dispatcher thread (init). Returns DG_OK or a negative status. */
int dg_outbox_start(dg_plugin *p, dg_outbox **out, char *err, size_t err_len) DG_MUST_CHECK;

/* Wake the dispatcher after a commit that enqueued rows. Any thread; ob may
 * be NULL (no moderator on that platform configured: rows wait for a later
 * start). Never blocks. */
void dg_outbox_kick(dg_outbox *ob);

/* Wake every dispatcher of p (one per platform with a moderator): the
 * caller's commit may have queued rows for any of them. Any thread. */
void dg_outbox_kick_all(dg_plugin *p);

/* Stop and join the dispatcher; returns within about 2 s even when the
 * platform hangs (in-flight transfer abandoned, its row stays unsent). NULL is fine. */
void dg_outbox_stop(dg_outbox *ob);

/* ---- notes and tuning ------------------------------------------------------------ */

/* A refused token (the chat client's DG_CHAT_ERR_AUTH) is not the row's
 * fault: no row is failed,
 * every send of that platform is held for 10 minutes (a bad token is not
 * retried in a loop), and the rows go out once a valid token is in place. */

/* Note on dg_outbox_stop: to end a hanging transfer it switches on the abort
 * of the dispatcher's chat client (dg_chat_set_abort), which also ends other threads' calls
 * in flight, and switches it off again after the join. Shutdown only. */

/* Tuning of the dispatcher; zero fields take the defaults. */
typedef struct dg_outbox_options {
    long backoff_base_ms; /* first wait after a failed send; default 1000 */
    long backoff_max_ms;  /* cap of the doubling waits; default 60000 */
    int max_attempts;     /* retryable failed sends before a row is failed for good;
                              default 0: no limit (a platform outage of any length
                              loses nothing; only refusals fail a row) */
    size_t batch;         /* pending rows of a channel read from the store at
                              a time; default 64 */
    int max_inflight;     /* channels with a post in flight at once (one per
                              channel, order within a channel kept); default
                              16; 1: one post at a time */
    long lease_ms;        /* a channel is sent by the instance holding its lease
                              (instances sharing a store); renewed while
                              it sends, taken over by another instance this long
                              after its holder stopped renewing; default 30000 */
} dg_outbox_options;

/* A dispatcher posting the rows of chat's platform (the other platform's
 * channels are left to their own dispatcher) through chat, which must
 * outlive it; o may be NULL. Needs p->store. *out is owned by the caller:
 * dg_outbox_stop(). Thread: init. */
int dg_outbox_start_on(dg_plugin *p, dg_chat *chat, const dg_outbox_options *o, dg_outbox **out,
                       char *err, size_t err_len) DG_MUST_CHECK;

/* dg_outbox_start_on with p->chat. */
int dg_outbox_start_opts(dg_plugin *p, const dg_outbox_options *o, dg_outbox **out, char *err,
                         size_t err_len) DG_MUST_CHECK;

/*
 * Wait until the dispatcher has found nothing pending (every row sent or
 * failed for good) in a pass that began after this call. Returns DG_OK, or
 * DG_ERR_IO after timeout_ms. For tests, the demo and benchmarks. Any thread
 * but the dispatcher.
 */
int dg_outbox_wait_idle(dg_outbox *ob, long timeout_ms);

/* Counters since start. */
typedef struct dg_outbox_stats {
    uint64_t sent;    /* rows marked sent */
    uint64_t failed;  /* rows failed for good */
    uint64_t retries; /* failed sends that will be tried again */
} dg_outbox_stats;

void dg_outbox_get_stats(dg_outbox *ob, dg_outbox_stats *out);

/*
 * Split content into parts of at most `limit` characters (code points):
 * at the last line break that fits, else the last space, else hard (never
 * inside a UTF-8 sequence); the break character itself is dropped, so are
 * line breaks at either end of a part, and parts of only whitespace are
 * left out. *parts is owned by the caller:
 * dg_outbox_parts_free(*parts, *n). Returns DG_OK, DG_ERR_INVALID (not
 * UTF-8, limit 0) or DG_ERR_NOMEM.
 */
int dg_outbox_split(const char *content, size_t limit, char ***parts, size_t *n) DG_MUST_CHECK;
void dg_outbox_parts_free(char **parts, size_t n);

#endif
