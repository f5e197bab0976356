/*
 * outbox_int.h -- what the files of the outbox share: the dispatcher's
 * state and the steps of its loop. Not for other modules (outbox.h is).
 *
 * Everything here but outbox_mono_ms runs on the dispatcher thread alone,
 * except where a comment names another thread.
 */
#ifndef DG_OUTBOX_INT_H
#define DG_OUTBOX_INT_H

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "chat.h"
#include "outbox.h"
#include "store_outbox.h"
#include "must_check.h"

#define OUTBOX_NONCE_BYTES 12 /* 24 hex characters, within Discord's 25 */
#define OUTBOX_MAX_MENTIONS 100
#define OUTBOX_HOLD_AUTH_MS (10L * 60 * 1000) /* pause of all sending after a refused token */

/* Rows read from the store per channel at a time (dg_outbox_options.batch
 * overrides), ids per discovery page, and sent rows per mark statement.
 * Decided rows are recorded after the next posts are on the wire, in one
 * transaction once OUTBOX_FLUSH_AT are owed or the oldest waited
 * OUTBOX_MARK_DELAY_MS (and always before the dispatcher waits with nothing
 * in flight). */
#define OUTBOX_DISCOVER_PAGE 1024
#define OUTBOX_DISCOVER_PAGES 8 /* pages per loop turn: sending goes on in between */
#define OUTBOX_MARK_BATCH 64
#define OUTBOX_FLUSH_AT 8       /* decided rows per post in flight that make a batch due */
#define OUTBOX_MARK_DELAY_MS 20 /* or the age of the oldest decided row that does */
#define OUTBOX_DEFAULT_INFLIGHT 16
#define OUTBOX_DEFAULT_LEASE_MS 30000
#define OUTBOX_LEASE_POLL_MS 1000     /* a channel another instance holds is looked at again */
#define OUTBOX_DISCOVER_EVERY_MS 1000 /* rows queued by other instances sharing the store */

/* Outcome of one send. */
typedef enum outbox_outcome { OUTBOX_SENT, OUTBOX_RETRY, OUTBOX_FAILED } outbox_outcome;

/*
 * A row its platform decided (sent or failed for good) whose mark is not in the store
 * yet: waiting for its batch, or refused by the store (then its channel is
 * held: nothing more of it is sent until the batch is recorded). It is never posted again by this process; a crash
 * before the batch commits posts it again at the next start under the same
 * key, which keeps the platform from showing it twice.
 */
typedef struct outbox_decided {
    int64_t row_id;
    outbox_outcome oc;
    char *detail; /* sent: the platform's message id; failed: the reason. Owned */
    char channel_id[24];
    int failures;  /* store refusals so far (drives the back-off) */
    int64_t since; /* monotonic ms at the decision */
} outbox_decided;

/* One channel with pending rows. Dispatcher thread only. In memory only:
 * after a restart every pending row is due at once. */
typedef struct outbox_chan {
    char id[24];
    dg_outbox_row *q; /* pending rows loaded, oldest first: q[head .. n) */
    size_t head, n;
    int64_t cursor;         /* id of the last row loaded (rows up to it are in q,
                              decided, or done) */
    int64_t known_max;      /* highest pending id discovery saw */
    int64_t not_before;     /* monotonic ms: back-off of the head row */
    int inflight;           /* the head row is posted, no answer yet */
    int held;               /* a decided row of it was refused by the store */
    int64_t lease_until;    /* wall ms: this instance's lease on the channel runs out
                              (0: none) */
    int64_t taken_max;      /* rows up to this id were pending when this instance took
                              the channel over from another that died or lapsed: that
                              one may have posted them without recording it (0: none) */
    dg_chat_prepared *next; /* the request of row next_id, made while the row before
                              it flew (outbox_prepare_ahead); owned */
    int64_t next_id;
} outbox_chan;

struct dg_outbox {
    dg_plugin *p;
    dg_chat *chat;        /* the platform this dispatcher posts to (borrowed from p) */
    dg_platform platform; /* its rows: the channels of this platform alone */
    dg_outbox_options o;
    pthread_t thread;
    int started;

    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC: kicks, stop, passes done */
    int stop;
    int kicked;
    uint64_t passes_begun;
    uint64_t idle_pass; /* number of the last pass that found nothing pending */
    dg_outbox_stats stats;
    dg_chat_pipe *pipe; /* created before the thread, freed after the join; its
                               wakeup is the only call other threads make */

    /* Dispatcher thread only. */
    pthread_t self;     /* the dispatcher thread, set as it starts */
    dg_chat_done *done; /* o.max_inflight results */
    outbox_chan **fly;  /* the channels with a post in flight: n_fly of
                               o.max_inflight (an answer finds its channel here,
                               not among every channel of a backlog) */
    size_t n_fly;
    outbox_chan **chans; /* channels with rows in memory or owed */
    size_t n_chans, cap_chans;
    outbox_decided *dec;
    size_t n_dec, cap_dec;
    int64_t dec_retry_at;  /* monotonic ms: next try after the store refused a batch */
    int64_t disc_after;    /* discovery cursor: highest id seen */
    int64_t boot_max_id;   /* the highest row pending when this dispatcher started: any
                              row up to it may have been posted by a process that
                              died (on a platform without a nonce it is looked up
                              by its key before it is sent) */
    int need_disc;         /* rows may exist beyond disc_after */
    int64_t disc_retry_at; /* monotonic ms: discovery failed, try again then */
    int64_t hold_until;    /* monotonic ms: nothing is sent before (a refused token) */
    int token_ok;          /* the platform accepted a post of this dispatcher */
    int64_t next_prune;    /* monotonic ms of the next retention round */
    int64_t next_disc;     /* monotonic ms of the next timed discovery */
};

/* What the comments promise about threads and locks, checked: the
 * dispatcher's own state is touched by the dispatcher thread alone, and a
 * function "called with ob->mu held" finds it held (trylock cannot tell by
 * whom, but never blocks, and takes nothing when the mutex is held). */
#define OUTBOX_ON_DISPATCHER(ob) assert(pthread_equal(pthread_self(), (ob)->self))
#define OUTBOX_ASSERT_HELD(mu) assert(pthread_mutex_trylock(mu) == EBUSY)

/* Monotonic milliseconds. Any thread. */
int64_t outbox_mono_ms(void);

/* ---- outbox.c: the thread's shared helpers ---- */

/* 1 once dg_outbox_stop asked the thread to end. Takes ob->mu. */
int outbox_stopping(dg_outbox *ob);
/* The wait after `failures` failed tries: doubling from o.backoff_base_ms up
 * to o.backoff_max_ms, with jitter. */
long outbox_backoff(const dg_outbox *ob, int failures);
/* Add n rows of outcome oc to the counters. Takes ob->mu. */
void outbox_count(dg_outbox *ob, outbox_outcome oc, uint64_t n);

/* ---- outbox_queue.c: the channels' queues of pending rows ---- */

/* The channel's entry, or NULL when it has none. */
outbox_chan *outbox_chan_of(dg_outbox *ob, const char *channel_id);
void outbox_chan_free(outbox_chan *c);
/* Drop the head row of c (it was decided). */
void outbox_chan_pop(outbox_chan *c);
/* Forget channels with nothing left, giving their leases up. */
void outbox_chans_sweep(dg_outbox *ob);
/* Read where pending rows are, from the discovery cursor on. */
void outbox_discover(dg_outbox *ob);
/* Load the next rows of c after its cursor. DG_OK (maybe none) or the
 * store's status; on error c is unchanged. */
int outbox_refill(dg_outbox *ob, outbox_chan *c) DG_MUST_CHECK;
/* Read the next rows of each channel in flight, while it flies. */
void outbox_refill_ahead(dg_outbox *ob);

/* ---- outbox_lease.c: one instance at a time sends in a channel ---- */

/* 1 when this instance may post in c now (see the file); else 0 and *next
 * lowered to when c is looked at again. */
int outbox_lease_ok(dg_outbox *ob, outbox_chan *c, int64_t now, int64_t *next);
/* Give up the leases this instance holds on v[0..n) (best effort). */
void outbox_leases_release(dg_outbox *ob, outbox_chan *const *v, size_t n);

/* ---- outbox_record.c: what the platform decided, recorded in the store ---- */

/* Keep a decision about the head row of c until its batch is recorded;
 * detail is taken over (owned). */
void outbox_decide(dg_outbox *ob, outbox_chan *c, outbox_outcome oc, char *detail);
/* Record every decided row in one transaction (kept in memory on failure). */
void outbox_flush(dg_outbox *ob);
/* 1 when a batch of decided rows is due while posts fly. */
int outbox_flush_due(const dg_outbox *ob, int64_t now);

/* ---- outbox_post.c: posting rows and what their answers mean ---- */

/* Post the head row of the channels that may send now; returns the
 * monotonic time at which a waiting channel is due (INT64_MAX: none). */
int64_t outbox_post_due(dg_outbox *ob);
/* Make the request of the row after each one in flight, while it flies. */
void outbox_prepare_ahead(dg_outbox *ob);
/* A post of the pipe ended: decide, retry or hold. */
void outbox_on_done(dg_outbox *ob, dg_chat_done *d);

/* ---- outbox_prune.c: retention ---- */

/* Delete old sent rows and closed-notice marks when a round is due. */
void outbox_prune_due(dg_outbox *ob);

#endif
