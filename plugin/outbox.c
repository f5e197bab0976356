/*
 * outbox.c -- the durable moderator outbox: enqueue inside the caller's
 * transaction, and one dispatcher thread that posts rows to Discord.
 *
 * Guarantees (issue 3): a row is sent in order within its channel (a row
 * that keeps failing holds back the later rows of its channel, never of
 * other channels), marked sent with Discord's id, retried with back-off,
 * failed for good with the reason (logged at error level). Every send
 * carries the row's nonce with enforce_nonce, so sending again a row that
 * Discord accepted just before a crash returns the first message instead of
 * a duplicate. The dispatcher never holds the store lock during HTTP.
 *
 * Issue 17: instances sharing a store send each channel under a lease (the
 * store's store_leases, store_instances.h): one instance at a time per
 * channel, so order holds across instances; the holder renews it before a
 * post when less than half is left; another instance polls the channel and
 * takes it over once the lease ran out (its holder died), reloading the
 * channel's pending rows from the store. A row whose post was in flight
 * when its holder died is posted again by the next holder with the same
 * nonce (Discord returns the first message). Discovery runs every
 * DISCOVER_EVERY_MS as well as on kicks: rows another instance queued are
 * found without a kick of this one.
 *
 * Issue 12 bug 1: a row whose outcome Discord decided (accepted, or refused
 * for good) but the store could not record (disk full, read-only file, any
 * store error) is remembered in memory by this dispatcher and never posted
 * again by this process; recording is retried with the same back-off as a
 * failing Discord. Only a restart before the store recovers posts it again,
 * and then its nonce makes Discord return the first message.
 */
#include "outbox.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "discord.h"
#include "store.h"
#include "store_discuss.h"
#include "store_outbox.h"
#include "utf8.h"
#include "store_instances.h"

#define NONCE_BYTES 12   /* 24 hex characters, within Discord's 25 */
#define MAX_MENTIONS 100
#define HOLD_401_MS (10L * 60 * 1000)  /* pause of all sending after a refused token */

/* Retention (issue 12 bug 6): sent/failed rows and closed-notice marks older
 * than outbox.retentionSec are deleted by the dispatcher, PRUNE_BATCH rows
 * per transaction (the store lock is released in between), at most
 * PRUNE_ROUNDS batches per table each PRUNE_EVERY_MS; the first round runs
 * before the first pass. Discussions are the archive and stay. */
#define PRUNE_BATCH 500
#define PRUNE_ROUNDS 20
#define PRUNE_EVERY_MS (10L * 60 * 1000)

/* Rows read from the store per channel at a time (dg_outbox_options.batch
 * overrides), ids per discovery page, and sent rows per mark statement.
 * Decided rows are recorded after the next posts are on the wire, in one
 * transaction once FLUSH_AT are owed or the oldest waited MARK_DELAY_MS
 * (and always before the dispatcher waits with nothing in flight). */
#define DISCOVER_PAGE 1024
#define DISCOVER_PAGES 8        /* pages per loop turn: sending goes on in between */
#define MARK_BATCH 64
#define FLUSH_AT 8          /* decided rows per post in flight that make a batch due */
#define MARK_DELAY_MS 20    /* or the age of the oldest decided row that does */
#define DEFAULT_INFLIGHT 16
#define DEFAULT_LEASE_MS 30000
#define LEASE_POLL_MS 1000      /* a channel another instance holds is looked at again */
#define DISCOVER_EVERY_MS 1000  /* rows queued by other instances sharing the store */

/* Outcome of one send. */
typedef enum outcome { SENT, RETRY, FAILED } outcome;

/*
 * A row Discord decided (SENT or FAILED) whose mark is not in the store
 * yet: waiting for its batch, or refused by the store (then its channel is
 * held: nothing more of it is sent until the batch is recorded). Issue 12
 * bug 1 and issue 14: it is never posted again by this process; a crash
 * before the batch commits posts it again at the next start with the same
 * nonce, and Discord returns the first message.
 */
typedef struct decided {
    int64_t row_id;
    outcome oc;
    char *detail;          /* SENT: Discord's message id; FAILED: the reason. Owned */
    char channel_id[24];
    int failures;          /* store refusals so far (drives the back-off) */
    int64_t since;         /* monotonic ms at the decision */
} decided;

/* One channel with pending rows. Dispatcher thread only. In memory only:
 * after a restart every pending row is due at once. */
typedef struct ochan {
    char id[24];
    dg_outbox_row *q;      /* pending rows loaded, oldest first: q[head .. n) */
    size_t head, n;
    int64_t cursor;        /* id of the last row loaded (rows up to it are in q,
                              decided, or done) */
    int64_t known_max;     /* highest pending id discovery saw */
    int64_t not_before;    /* monotonic ms: back-off of the head row */
    int inflight;          /* the head row is posted, no answer yet */
    int held;              /* a decided row of it was refused by the store */
    int64_t lease_until;   /* wall ms: this instance's lease on the channel runs out
                              (0: none) */
    dg_discord_post *next; /* the request of row next_id, made while the row before
                              it flew (prepare_ahead); owned */
    int64_t next_id;
} ochan;

struct dg_outbox {
    dg_plugin *p;
    dg_outbox_options o;
    pthread_t thread;
    int started;

    pthread_mutex_t mu;
    pthread_cond_t cond;    /* CLOCK_MONOTONIC: kicks, stop, passes done */
    int stop;
    int kicked;
    uint64_t passes_begun;
    uint64_t idle_pass;     /* number of the last pass that found nothing pending */
    dg_outbox_stats stats;
    dg_discord_pipe *pipe;  /* created before the thread, freed after the join; its
                               wakeup is the only call other threads make */

    /* Dispatcher thread only. */
    dg_discord_done *done;  /* o.max_inflight results */
    ochan **fly;            /* the channels with a post in flight: n_fly of
                               o.max_inflight (an answer finds its channel here,
                               not among every channel of a backlog) */
    size_t n_fly;
    ochan **chans;          /* channels with rows in memory or owed */
    size_t n_chans, cap_chans;
    decided *dec;
    size_t n_dec, cap_dec;
    int64_t dec_retry_at;   /* monotonic ms: next try after the store refused a batch */
    int64_t disc_after;     /* discovery cursor: highest id seen */
    int need_disc;          /* rows may exist beyond disc_after */
    int64_t disc_retry_at;  /* monotonic ms: discovery failed, try again then */
    int64_t hold_until;     /* monotonic ms: nothing is sent before (401) */
    int token_ok;           /* Discord accepted a post of this dispatcher */
    int64_t next_prune;     /* monotonic ms of the next retention round */
    int64_t next_disc;      /* monotonic ms of the next timed discovery */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- splitting and enqueueing ------------------------------------------------------ */

static int blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\n' && s[i] != '\r' && s[i] != '\t')
            return 0;
    return 1;
}

void dg_outbox_parts_free(char **parts, size_t n)
{
    if (!parts)
        return;
    for (size_t i = 0; i < n; i++)
        free(parts[i]);
    free(parts);
}

static int push_part(char ***parts, size_t *n, size_t *cap, const char *s, size_t len)
{
    /* Line breaks at either end of a part carry nothing (Discord trims them). */
    while (len && (*s == '\n' || *s == '\r')) {
        s++;
        len--;
    }
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
        len--;
    if (blank(s, len))
        return OC_OK;
    if (dg_grow(parts, cap, *n, sizeof **parts, 4))
        return OC_ERR_NOMEM;
    char *c = strndup(s, len);
    if (!c)
        return OC_ERR_NOMEM;
    (*parts)[(*n)++] = c;
    return OC_OK;
}

int dg_outbox_split(const char *content, size_t limit, char ***parts, size_t *n)
{
    *parts = NULL;
    *n = 0;
    if (!content || limit == 0)
        return OC_ERR_INVALID;
    size_t cap = 0;
    const char *s = content;
    for (;;) {
        /* Walk up to limit characters; remember the last break candidates. */
        size_t off = 0, chars = 0;
        const char *nl = NULL, *sp = NULL;
        while (s[off] && chars < limit) {
            size_t l = dg_utf8_seq_len(s + off);
            if (!l) {
                dg_outbox_parts_free(*parts, *n);
                *parts = NULL;
                *n = 0;
                return OC_ERR_INVALID;
            }
            if (s[off] == '\n')
                nl = s + off;
            else if (s[off] == ' ')
                sp = s + off;
            off += l;
            chars++;
        }
        if (!s[off]) { /* the rest fits */
            int rc = push_part(parts, n, &cap, s, off);
            if (rc) {
                dg_outbox_parts_free(*parts, *n);
                *parts = NULL;
                *n = 0;
            }
            return rc;
        }
        /* A break exactly at the limit counts too. */
        if (s[off] == '\n')
            nl = s + off;
        else if (!nl && s[off] == ' ')
            sp = s + off;
        const char *cut = nl ? nl : sp;
        const char *next;
        if (cut) {
            next = cut + 1; /* the break character goes */
        } else {
            cut = s + off;  /* hard cut on a character boundary */
            next = cut;
        }
        int rc = push_part(parts, n, &cap, s, (size_t)(cut - s));
        if (rc) {
            dg_outbox_parts_free(*parts, *n);
            *parts = NULL;
            *n = 0;
            return rc;
        }
        s = next;
    }
}

/* 24 hex characters from the kernel's random source. */
static int make_nonce(char out[2 * NONCE_BYTES + 1])
{
    unsigned char b[NONCE_BYTES];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t r = getrandom(b + got, sizeof b - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)r;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof b; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[2 * NONCE_BYTES] = '\0';
    return 0;
}

int dg_outbox_enqueue(dg_store *st, const char *channel_id, const char *content,
                      const char *const *mention_ids, size_t n_mentions, int64_t now_ms)
{
    if (!st || !dg_discord_is_snowflake(channel_id) || !content || blank(content, strlen(content)))
        return OC_ERR_INVALID;
    if (n_mentions > MAX_MENTIONS || (n_mentions && !mention_ids))
        return OC_ERR_INVALID;
    size_t mlen = 1;
    for (size_t i = 0; i < n_mentions; i++) {
        if (!dg_discord_is_snowflake(mention_ids[i]))
            return OC_ERR_INVALID;
        mlen += strlen(mention_ids[i]) + 1;
    }
    char *mentions = malloc(mlen);
    if (!mentions)
        return OC_ERR_NOMEM;
    mentions[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < n_mentions; i++)
        used += (size_t)snprintf(mentions + used, mlen - used, "%s%s", i ? "," : "",
                                 mention_ids[i]);

    char **parts = NULL;
    size_t np = 0;
    int rc = dg_outbox_split(content, DG_DISCORD_MAX_CONTENT, &parts, &np);
    if (rc == OC_OK && np == 0)
        rc = OC_ERR_INVALID;
    for (size_t i = 0; rc == OC_OK && i < np; i++) {
        char nonce[2 * NONCE_BYTES + 1];
        if (make_nonce(nonce) != 0) {
            rc = OC_ERR_IO;
            break;
        }
        dg_outbox_row row = {
            .channel_id = (char *)channel_id,
            .content = parts[i],
            .mentions = mentions,
            .nonce = nonce,
            .part = (int)i + 1,
            .parts = (int)np,
            .created_at_ms = now_ms,
        };
        rc = dg_store_outbox_insert(st, &row, NULL);
    }
    dg_outbox_parts_free(parts, np);
    free(mentions);
    return rc;
}

/* ---- the dispatcher ---------------------------------------------------------------- */

static int stopping(dg_outbox *ob)
{
    pthread_mutex_lock(&ob->mu);
    int s = ob->stop;
    pthread_mutex_unlock(&ob->mu);
    return s;
}

static long backoff(const dg_outbox *ob, int failures)
{
    long b = ob->o.backoff_base_ms;
    for (int i = 1; i < failures && b < ob->o.backoff_max_ms; i++)
        b *= 2;
    if (b > ob->o.backoff_max_ms)
        b = ob->o.backoff_max_ms;
    /* Jitter from the clock: several plugins restarting together spread out. */
    long j = b / 4 > 0 ? (long)((unsigned long)mono_ms() % (unsigned long)(b / 4 + 1)) : 0;
    return b - b / 8 + j;
}

static void count_done(dg_outbox *ob, outcome oc, uint64_t n)
{
    pthread_mutex_lock(&ob->mu);
    if (oc == SENT)
        ob->stats.sent += n;
    else if (oc == FAILED)
        ob->stats.failed += n;
    else
        ob->stats.retries += n;
    pthread_mutex_unlock(&ob->mu);
}

static ochan *chan_of(dg_outbox *ob, const char *channel_id)
{
    for (size_t i = 0; i < ob->n_chans; i++)
        if (!strcmp(ob->chans[i]->id, channel_id))
            return ob->chans[i];
    return NULL;
}

/* The channel's entry, created when missing; NULL when out of memory. */
static ochan *chan_get(dg_outbox *ob, const char *channel_id)
{
    ochan *c = chan_of(ob, channel_id);
    if (c)
        return c;
    if (dg_grow(&ob->chans, &ob->cap_chans, ob->n_chans, sizeof *ob->chans, 16))
        return NULL;
    c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    snprintf(c->id, sizeof c->id, "%s", channel_id);
    ob->chans[ob->n_chans++] = c;
    return c;
}

static void chan_free(ochan *c)
{
    dg_discord_post_free(c->next);
    if (c->q) {
        for (size_t i = c->head; i < c->n; i++) {
            dg_outbox_row *r = &c->q[i];
            free(r->channel_id);
            free(r->content);
            free(r->mentions);
            free(r->nonce);
            free(r->message_id);
            free(r->last_error);
        }
        free(c->q);
    }
    free(c);
}

/* Drop the head row of c (it was decided). */
static void chan_pop(ochan *c)
{
    dg_outbox_row *r = &c->q[c->head++];
    free(r->channel_id);
    free(r->content);
    free(r->mentions);
    free(r->nonce);
    free(r->message_id);
    free(r->last_error);
    memset(r, 0, sizeof *r);
    if (c->head == c->n) {
        free(c->q);
        c->q = NULL;
        c->head = c->n = 0;
    }
}

/* The name of c's lease in the store; out has room for 8 + 24 bytes. */
static void lease_name(const ochan *c, char *out, size_t len)
{
    snprintf(out, len, "outbox:%s", c->id);
}

/* Give up the leases this instance holds on the channels v[0..n) (one
 * transaction, best effort: a lease not given up runs out). */
static void leases_release(dg_outbox *ob, ochan *const *v, size_t n)
{
    dg_store *st = ob->p->store;
    size_t held = 0;
    for (size_t i = 0; i < n; i++)
        held += v[i]->lease_until > 0;
    if (!held || dg_store_begin(st) != OC_OK)
        return;
    int rc = OC_OK;
    for (size_t i = 0; rc == OC_OK && i < n; i++) {
        char name[40];
        lease_name(v[i], name, sizeof name);
        if (v[i]->lease_until > 0)
            rc = dg_store_lease_release(st, name);
    }
    if (rc == OC_OK)
        rc = dg_store_commit(st);
    else
        dg_store_rollback(st);
    for (size_t i = 0; rc == OC_OK && i < n; i++)
        v[i]->lease_until = 0;
}

/* Forget channels with nothing left (only when no decided row is owed: a
 * channel's cursor must outlive its unrecorded rows), giving their leases
 * up so another instance need not wait for them to run out. */
static void chans_sweep(dg_outbox *ob)
{
    if (ob->n_dec || !ob->n_chans)
        return;
    ochan **gone = malloc(ob->n_chans * sizeof *gone);
    if (!gone)
        return; /* out of memory: next pass */
    size_t w = 0, n_gone = 0;
    for (size_t i = 0; i < ob->n_chans; i++) {
        ochan *c = ob->chans[i];
        if (!c->inflight && c->head == c->n && c->cursor >= c->known_max &&
            c->not_before <= mono_ms())
            gone[n_gone++] = c;
        else
            ob->chans[w++] = c;
    }
    ob->n_chans = w;
    leases_release(ob, gone, n_gone);
    for (size_t i = 0; i < n_gone; i++)
        chan_free(gone[i]);
    free(gone);
}

/* Read where pending rows are, from the discovery cursor on. */
static void discover(dg_outbox *ob)
{
    dg_plugin *p = ob->p;
    for (int page = 0; page < DISCOVER_PAGES; page++) {
        dg_outbox_ref *refs = NULL;
        size_t n = 0;
        int rc = dg_store_begin(p->store);
        if (rc == OC_OK) {
            rc = dg_store_outbox_discover(p->store, ob->disc_after, DISCOVER_PAGE, &refs, &n);
            if (rc == OC_OK)
                rc = dg_store_commit(p->store);
            else
                dg_store_rollback(p->store);
        }
        if (rc != OC_OK) {
            free(refs);
            dg_log(p, OC_LOG_ERROR, "outbox: cannot read pending messages from the store "
                                    "(%s); trying again in 1 s",
                   oc_status_name(rc));
            ob->disc_retry_at = mono_ms() + 1000;
            return;
        }
        for (size_t i = 0; i < n; i++) {
            ochan *c = chan_get(ob, refs[i].channel_id);
            if (!c) {
                free(refs);
                ob->disc_retry_at = mono_ms() + 1000; /* out of memory: later */
                return;
            }
            /* A channel met anew starts reading at its first pending row:
             * the channel index holds its sent rows too (schema v12), and
             * discovery walks pending rows in id order, so none of this
             * channel lies below (writers commit in id order on both
             * backends: SQLite's one writer, PostgreSQL's version-row lock). */
            if (c->known_max == 0 && c->cursor == 0 && c->head == c->n)
                c->cursor = refs[i].id - 1;
            if (refs[i].id > c->known_max)
                c->known_max = refs[i].id;
            ob->disc_after = refs[i].id;
        }
        free(refs);
        if (n < DISCOVER_PAGE) {
            ob->need_disc = 0;
            return;
        }
    }
}

/* Load the next rows of c after its cursor, behind the rows it has in
 * memory (the head may be in flight: refill_ahead). OC_OK (maybe none) or
 * the store's status; on error c is unchanged. */
static int refill(dg_outbox *ob, ochan *c)
{
    dg_plugin *p = ob->p;
    dg_outbox_row *rows = NULL;
    size_t n = 0;
    int rc = dg_store_begin(p->store);
    if (rc == OC_OK) {
        rc = dg_store_outbox_pending_of(p->store, c->id, c->cursor, ob->o.batch, &rows, &n);
        if (rc == OC_OK)
            rc = dg_store_commit(p->store);
        else
            dg_store_rollback(p->store);
    }
    if (rc != OC_OK) {
        dg_outbox_rows_free(rows, n);
        return rc;
    }
    if (n == 0) {
        c->cursor = c->known_max; /* nothing pending up to what discovery saw */
        return OC_OK;
    }
    int64_t last = rows[n - 1].id;
    if (c->head == c->n) {
        free(c->q); /* NULL here (chan_pop frees an emptied array); kept for safety */
        c->q = rows;
        c->head = 0;
        c->n = n;
    } else {
        /* Rows still in memory stay first; the strings move, not copied. */
        size_t keep = c->n - c->head;
        dg_outbox_row *q = malloc((keep + n) * sizeof *q);
        if (!q) {
            dg_outbox_rows_free(rows, n);
            return OC_ERR_NOMEM;
        }
        memcpy(q, c->q + c->head, keep * sizeof *q);
        memcpy(q + keep, rows, n * sizeof *q);
        free(rows);
        free(c->q);
        c->q = q;
        c->head = 0;
        c->n = keep + n;
    }
    c->cursor = last;
    return OC_OK;
}

/* Read the next rows of each channel whose last loaded row is the one in
 * flight, while it flies: the store's read is then off the path from
 * Discord's answer to the next post (issue 14). A failure is only logged
 * here: post_due reads again when the row is needed. */
static void refill_ahead(dg_outbox *ob)
{
    for (size_t i = 0; i < ob->n_fly; i++) {
        ochan *c = ob->fly[i];
        if (c->head + 1 != c->n || c->cursor >= c->known_max)
            continue;
        int rc = refill(ob, c);
        if (rc != OC_OK)
            dg_log(ob->p, OC_LOG_DEBUG, "outbox: reading ahead in channel %s failed (%s); "
                                        "read again when its next message is due",
                   c->id, oc_status_name(rc));
    }
}

/* Record a retry count (best effort, own transaction: the rare path). */
static int record_retry(dg_outbox *ob, const dg_outbox_row *row, const char *error)
{
    dg_plugin *p = ob->p;
    int rc = dg_store_begin(p->store);
    if (rc == OC_OK) {
        rc = dg_store_outbox_mark_retry(p->store, row->id, error);
        if (rc == OC_OK || rc == OC_ERR_NOT_FOUND)
            rc = dg_store_commit(p->store);
        else
            dg_store_rollback(p->store);
    }
    return rc;
}

/* Keep a decision until its batch is recorded; the head row of c goes.
 * detail is taken over (owned). When out of memory the row simply stays
 * pending in the store and in c (sent again later: the nonce prevents a
 * duplicate), with a back-off. */
static void decide(dg_outbox *ob, ochan *c, outcome oc, char *detail)
{
    if (dg_grow(&ob->dec, &ob->cap_dec, ob->n_dec, sizeof *ob->dec, MARK_BATCH)) {
        free(detail);
        c->not_before = mono_ms() + backoff(ob, 1);
        return;
    }
    decided *d = &ob->dec[ob->n_dec++];
    memset(d, 0, sizeof *d);
    d->row_id = c->q[c->head].id;
    d->oc = oc;
    d->detail = detail;
    d->since = mono_ms();
    snprintf(d->channel_id, sizeof d->channel_id, "%s", c->id);
    chan_pop(c);
}

/* Record every decided row in one transaction. */
static void flush(dg_outbox *ob)
{
    dg_plugin *p = ob->p;
    if (!ob->n_dec)
        return;
    /* The sent rows go in statements of several rows (the common case),
     * the failed ones one by one (rare). Both only in this transaction. */
    int64_t ids[MARK_BATCH];
    const char *mids[MARK_BATCH];
    int rc = dg_store_begin(p->store);
    if (rc == OC_OK) {
        int64_t now = dg_now_ms(p);
        size_t n_ids = 0, marked = 0;
        for (size_t i = 0; i < ob->n_dec && (rc == OC_OK || rc == OC_ERR_NOT_FOUND); i++) {
            decided *d = &ob->dec[i];
            if (d->oc != SENT) {
                rc = dg_store_outbox_mark_failed(p->store, d->row_id, d->detail, now);
                continue;
            }
            ids[n_ids] = d->row_id;
            mids[n_ids++] = d->detail;
            if (n_ids == MARK_BATCH || i + 1 == ob->n_dec) {
                rc = dg_store_outbox_mark_sent_many(p->store, ids, mids, n_ids, now, &marked);
                n_ids = 0;
            }
        }
        if (n_ids && (rc == OC_OK || rc == OC_ERR_NOT_FOUND))
            rc = dg_store_outbox_mark_sent_many(p->store, ids, mids, n_ids, now, &marked);
        if (rc == OC_OK || rc == OC_ERR_NOT_FOUND)
            rc = dg_store_commit(p->store);
        else
            dg_store_rollback(p->store);
    }
    if (rc != OC_OK) {
        int worst = 0;
        for (size_t i = 0; i < ob->n_dec; i++) {
            decided *d = &ob->dec[i];
            d->failures++;
            if (d->failures > worst)
                worst = d->failures;
            ochan *c = chan_of(ob, d->channel_id);
            if (c)
                c->held = 1;
            dg_log(p, OC_LOG_ERROR,
                   "outbox: moderator message %lld for channel %s was %s by Discord but the "
                   "store could not record it (%s, %d time%s); it is kept in memory and not "
                   "sent again, and recording is tried again in about %ld ms. Check free disk "
                   "space and that the store %s is writable",
                   (long long)d->row_id, d->channel_id,
                   d->oc == SENT ? "accepted" : "refused for good", oc_status_name(rc),
                   d->failures, d->failures == 1 ? "" : "s", backoff(ob, d->failures),
                   dg_store_where(p->store));
        }
        ob->dec_retry_at = mono_ms() + backoff(ob, worst);
        return;
    }
    uint64_t sent = 0, failed = 0;
    for (size_t i = 0; i < ob->n_dec; i++) {
        decided *d = &ob->dec[i];
        if (d->failures)
            dg_log(p, OC_LOG_INFO, "outbox: moderator message %lld for channel %s recorded as "
                                   "%s after %d store failure%s",
                   (long long)d->row_id, d->channel_id, d->oc == SENT ? "sent" : "failed",
                   d->failures, d->failures == 1 ? "" : "s");
        if (d->oc == SENT)
            sent++;
        else
            failed++;
        free(d->detail);
    }
    ob->n_dec = 0;
    ob->dec_retry_at = 0;
    for (size_t i = 0; i < ob->n_chans; i++)
        ob->chans[i]->held = 0;
    if (sent)
        count_done(ob, SENT, sent);
    if (failed)
        count_done(ob, FAILED, failed);
}

/* Due while posts fly: enough rows for a batch, or the oldest waited long
 * enough, or recording is to be tried again. A batch is FLUSH_AT rows per
 * post in flight, at most MARK_BATCH: on one channel a small batch is
 * recorded while the next post is answered (in bench_outbox one row per
 * transaction cost a commit per row, about 1.5x the time per message; 8
 * and 64 were alike); with many posts in flight the dispatcher's CPU is
 * the limit, and a large batch writes each page it dirties once for more
 * rows (a backlog's marks touch one index page per channel). */
static int flush_due(const dg_outbox *ob, int64_t now)
{
    if (!ob->n_dec || ob->dec_retry_at > now)
        return 0;
    size_t busy = dg_discord_pipe_busy(ob->pipe);
    size_t at = FLUSH_AT * (busy ? busy : 1);
    if (at > MARK_BATCH)
        at = MARK_BATCH;
    return ob->n_dec >= at || now - ob->dec[0].since >= MARK_DELAY_MS || ob->dec_retry_at != 0;
}

/* The request of row (mentions split from their stored list). */
static int prepare_row(dg_outbox *ob, const dg_outbox_row *row, dg_discord_post **out,
                       dg_discord_err *e)
{
    const char *ids[MAX_MENTIONS];
    size_t n_ids = 0;
    char mcopy[MAX_MENTIONS * 22];
    snprintf(mcopy, sizeof mcopy, "%s", row->mentions);
    for (char *save = NULL, *t = strtok_r(mcopy, ",", &save); t && n_ids < MAX_MENTIONS;
         t = strtok_r(NULL, ",", &save))
        ids[n_ids++] = t;
    return dg_discord_post_prepare(ob->p->discord, row->channel_id, row->content, ids, n_ids,
                                   row->nonce, out, e);
}

/* Make the request of the row after each one in flight, while it flies
 * (a row that cannot be made is left to post_head, which says why). */
static void prepare_ahead(dg_outbox *ob)
{
    for (size_t i = 0; i < ob->n_fly; i++) {
        ochan *c = ob->fly[i];
        if (c->next || c->head + 1 >= c->n)
            continue;
        dg_discord_err e;
        if (prepare_row(ob, &c->q[c->head + 1], &c->next, &e) == OC_OK)
            c->next_id = c->q[c->head + 1].id;
    }
}

/* Post the head row of c. */
static void post_head(dg_outbox *ob, ochan *c)
{
    dg_plugin *p = ob->p;
    const dg_outbox_row *row = &c->q[c->head];
    dg_discord_post *post = c->next;
    c->next = NULL;
    if (post && c->next_id != row->id) {
        dg_discord_post_free(post); /* made for a row that is gone */
        post = NULL;
    }
    dg_discord_err e;
    int rc = post ? OC_OK : prepare_row(ob, row, &post, &e);
    if (rc == OC_OK)
        rc = dg_discord_pipe_submit(ob->pipe, (uint64_t)row->id, post, &e);
    if (rc == OC_OK) {
        c->inflight = 1;
        ob->fly[ob->n_fly++] = c; /* the pipe took it: fewer than max_inflight fly */
        return;
    }
    if (e.retryable) { /* out of memory: the row waits, it is not at fault */
        dg_log(p, OC_LOG_WARN, "outbox: moderator message %lld for channel %s not posted yet "
                               "(%s); trying again in %ld ms",
               (long long)row->id, row->channel_id, e.message, backoff(ob, 1));
        c->not_before = mono_ms() + backoff(ob, 1);
        return;
    }
    /* Refused before any request: the row can never be sent as it is. */
    char *reason = strdup(e.message);
    dg_log(p, OC_LOG_ERROR, "outbox: moderator message %lld (part %d/%d) for channel %s "
                            "failed for good: %s",
           (long long)row->id, row->part, row->parts, row->channel_id, e.message);
    if (reason)
        decide(ob, c, FAILED, reason);
    else
        c->not_before = mono_ms() + backoff(ob, 1);
}

/* A post of the pipe ended. */
static void on_done(dg_outbox *ob, dg_discord_done *d)
{
    dg_plugin *p = ob->p;
    ochan *c = NULL;
    for (size_t i = 0; i < ob->n_fly && !c; i++)
        if (ob->fly[i]->q && ob->fly[i]->q[ob->fly[i]->head].id == (int64_t)d->tag) {
            c = ob->fly[i];
            ob->fly[i] = ob->fly[--ob->n_fly];
        }
    if (!c) {
        free(d->message_id);
        return;
    }
    c->inflight = 0;
    dg_outbox_row *row = &c->q[c->head];
    if (d->rc == OC_OK) {
        ob->token_ok = 1;
        c->not_before = 0;
        decide(ob, c, SENT, d->message_id);
        return;
    }
    if (stopping(ob))
        return; /* aborted by shutdown: the row stays as it was */
    dg_discord_err *e = &d->err;
    int attempts = row->attempts + 1;
    if (e->http_status == 401) {
        /* The token, not this message: keep every row, stop asking. */
        record_retry(ob, row, e->message); /* best effort: the hold bounds it */
        row->attempts = attempts;
        ob->hold_until = mono_ms() + HOLD_401_MS;
        dg_log(p, OC_LOG_ERROR,
               "outbox: Discord refuses the moderator token (%s); no moderator message is "
               "sent for the next %ld minutes. Fix discord.moderatorToken (or env "
               "DIRIGENT_MODERATOR_TOKEN) and restart: the messages wait, none is lost",
               e->message, HOLD_401_MS / 60000);
        return;
    }
    if (!e->retryable || (ob->o.max_attempts > 0 && attempts >= ob->o.max_attempts)) {
        char reason[700];
        snprintf(reason, sizeof reason, "%s%s", e->message,
                 e->retryable ? " (gave up after the last allowed attempt)" : "");
        dg_log(p, OC_LOG_ERROR,
               "outbox: moderator message %lld (part %d/%d) for channel %s failed for good "
               "after %d attempt%s: %s",
               (long long)row->id, row->part, row->parts, row->channel_id, attempts,
               attempts == 1 ? "" : "s", reason);
        char *r = strdup(reason);
        if (r) {
            c->not_before = 0;
            decide(ob, c, FAILED, r);
        } else {
            c->not_before = mono_ms() + backoff(ob, attempts);
        }
        return;
    }
    long wait = backoff(ob, attempts);
    if (e->retry_after_ms > wait)
        wait = e->retry_after_ms;
    /* When the store cannot count the attempt either, the wait below still
     * applies (it does not grow then: the count stays). */
    if (record_retry(ob, row, e->message) == OC_OK)
        row->attempts = attempts;
    c->not_before = mono_ms() + wait;
    char of[24] = "";
    if (ob->o.max_attempts > 0)
        snprintf(of, sizeof of, " of %d", ob->o.max_attempts);
    dg_log(p, OC_LOG_WARN,
           "outbox: moderator message %lld for channel %s not sent (attempt %d%s): %s; "
           "trying again in %ld ms",
           (long long)row->id, row->channel_id, attempts, of, e->message, wait);
    count_done(ob, RETRY, 1);
}

/* Highest id of a decided row of c not recorded yet; 0 when none. */
static int64_t dec_max_of(const dg_outbox *ob, const ochan *c)
{
    int64_t m = 0;
    for (size_t i = 0; i < ob->n_dec; i++)
        if (!strcmp(ob->dec[i].channel_id, c->id) && ob->dec[i].row_id > m)
            m = ob->dec[i].row_id;
    return m;
}

/* Drop the rows of c loaded in memory: the next refill reads the store
 * again from the row after `after`. */
static void chan_forget_rows(ochan *c, int64_t after)
{
    dg_discord_post_free(c->next);
    c->next = NULL;
    while (c->q && c->head < c->n)
        chan_pop(c);
    c->cursor = after;
}

/*
 * 1 when this instance may post in c now: it holds the channel's lease
 * with more than half of it left, renewing or taking it here when needed
 * (one short transaction every lease_ms / 2 while it sends). A lease taken
 * afresh reloads the channel from the store (another holder may have sent
 * rows meanwhile). 0 when another instance holds it (c is looked at again
 * within LEASE_POLL_MS) or the store failed (again in 1 s); *next is
 * lowered to that time. Dispatcher thread.
 */
static int lease_ok(dg_outbox *ob, ochan *c, int64_t now, int64_t *next)
{
    int64_t wall = dg_store_wall_ms();
    if (c->lease_until - wall > ob->o.lease_ms / 2)
        return 1;
    dg_store *st = ob->p->store;
    char name[40];
    lease_name(c, name, sizeof name);
    int got = 0, fresh = 0;
    int64_t other = 0, until = wall + ob->o.lease_ms;
    int rc = dg_store_begin(st);
    if (rc == OC_OK) {
        rc = dg_store_lease_take(st, name, wall, until, c->lease_until, &got, &fresh, &other);
        if (rc == OC_OK)
            rc = dg_store_commit(st);
        else
            dg_store_rollback(st);
    }
    if (rc != OC_OK && got) {
        /* Nobody else holds it, but the store refused to record it (disk
         * full, read-only file): send anyway, as a lone instance would; a
         * store that takes no write gives no other instance the lease
         * either. Taking it is tried again before the next post. */
        c->lease_until = 0;
        return 1;
    }
    if (rc != OC_OK || !got) {
        if (rc != OC_OK)
            dg_log(ob->p, OC_LOG_ERROR, "outbox: cannot take the sending lease of channel %s "
                   "from the store (%s); trying again in 1 s", c->id, oc_status_name(rc));
        else if (c->lease_until)
            dg_log(ob->p, OC_LOG_WARN, "outbox: another instance sharing the store took over "
                   "channel %s (this one did not renew its lease in time); it sends there now",
                   c->id);
        long wait = rc != OC_OK ? 1000 : (long)(other - wall + 1);
        if (wait > LEASE_POLL_MS)
            wait = LEASE_POLL_MS;
        if (wait < 50)
            wait = 50;
        if (rc == OC_OK) {
            c->lease_until = 0;
            chan_forget_rows(c, dec_max_of(ob, c));
        }
        c->not_before = now + wait;
        if (c->not_before < *next)
            *next = c->not_before;
        return 0;
    }
    if (fresh)
        chan_forget_rows(c, dec_max_of(ob, c));
    c->lease_until = until;
    return 1;
}

/* Post the head row of the channels that may send now, as many as the
 * pipe has room for, oldest row first across channels. Oldest first keeps
 * what is in flight, and so each batch of marks, within a narrow range of
 * ids: a backlog queued round-robin over hundreds of channels, drained
 * channel by channel, marked rows spread over the whole table, one page
 * written to the WAL per row (issue 14: 100k rows cost 1.4-1.9x per row
 * what 1k did). Returns the monotonic time at which a waiting channel is
 * due (INT64_MAX: none). */
static int64_t post_due(dg_outbox *ob)
{
    int64_t now = mono_ms(), next = INT64_MAX;
    if (ob->hold_until > now)
        return ob->hold_until;
    /* Until Discord has accepted the token once, one post at a time: a
     * wrong token costs one refused request, not one per channel. */
    size_t cap = ob->token_ok ? (size_t)ob->o.max_inflight : 1;
    size_t busy = dg_discord_pipe_busy(ob->pipe);
    if (busy >= cap)
        return next;
    size_t room = cap - busy, n_sel = 0;
    ochan *sel[256];   /* the room oldest due channels, ascending by key */
    int64_t key[256];  /* id of the channel's next row (cursor + 1 when none is loaded) */
    for (size_t i = 0; i < ob->n_chans; i++) {
        ochan *c = ob->chans[i];
        if (c->inflight || c->held)
            continue;
        if (c->not_before > now) {
            if (c->not_before < next)
                next = c->not_before;
            continue;
        }
        if (c->head == c->n && c->cursor >= c->known_max)
            continue;
        int64_t k = c->head < c->n ? c->q[c->head].id : c->cursor + 1;
        if (n_sel == room && k >= key[n_sel - 1])
            continue;
        size_t at = n_sel < room ? n_sel++ : n_sel - 1;
        while (at > 0 && key[at - 1] > k) {
            sel[at] = sel[at - 1];
            key[at] = key[at - 1];
            at--;
        }
        sel[at] = c;
        key[at] = k;
    }
    for (size_t i = 0; i < n_sel; i++) {
        ochan *c = sel[i];
        if (!lease_ok(ob, c, now, &next))
            continue;
        if (c->head == c->n && c->cursor < c->known_max) {
            int rc = refill(ob, c);
            if (rc != OC_OK) {
                dg_log(ob->p, OC_LOG_ERROR, "outbox: cannot read pending messages of channel %s "
                                            "from the store (%s); trying again in 1 s",
                       c->id, oc_status_name(rc));
                c->not_before = now + 1000;
                if (c->not_before < next)
                    next = c->not_before;
                continue;
            }
        }
        if (c->head < c->n)
            post_head(ob, c);
    }
    return next;
}

/* Nothing in memory, nothing owed, discovery caught up. */
static int all_done(const dg_outbox *ob)
{
    if (ob->need_disc || ob->n_dec || dg_discord_pipe_busy(ob->pipe))
        return 0;
    for (size_t i = 0; i < ob->n_chans; i++) {
        const ochan *c = ob->chans[i];
        if (c->head < c->n || c->cursor < c->known_max || c->inflight)
            return 0;
    }
    return 1;
}

/* One bounded round of one table's pruning; returns rows removed, or -1
 * when the store failed (logged). */
static long prune_table(dg_outbox *ob, int notices, int64_t before)
{
    dg_plugin *p = ob->p;
    long total = 0;
    for (int round = 0; round < PRUNE_ROUNDS && !stopping(ob); round++) {
        long removed = 0;
        int rc = dg_store_begin(p->store);
        if (rc == OC_OK) {
            rc = notices ? dg_store_discussion_notices_prune(p->store, before, PRUNE_BATCH, &removed)
                         : dg_store_outbox_prune(p->store, before, PRUNE_BATCH, &removed);
            if (rc == OC_OK)
                rc = dg_store_commit(p->store);
            else
                dg_store_rollback(p->store);
        }
        if (rc != OC_OK) {
            dg_log(p, OC_LOG_WARN, "outbox: could not delete old %s (%s); tried again in %ld "
                                   "minutes",
                   notices ? "closed-notice marks" : "sent messages", oc_status_name(rc),
                   PRUNE_EVERY_MS / 60000);
            return -1;
        }
        total += removed;
        if (removed < PRUNE_BATCH)
            break;
    }
    return total;
}

static void prune_due(dg_outbox *ob)
{
    if (mono_ms() < ob->next_prune || ob->p->cfg.outbox_retention_sec <= 0)
        return;
    ob->next_prune = mono_ms() + PRUNE_EVERY_MS;
    int64_t before = dg_now_ms(ob->p) - (int64_t)ob->p->cfg.outbox_retention_sec * 1000;
    long rows = prune_table(ob, 0, before);
    long marks = prune_table(ob, 1, before);
    if (rows > 0 || marks > 0)
        dg_log(ob->p, OC_LOG_DEBUG, "outbox: deleted %ld sent or failed messages and %ld "
                                    "closed-notice marks older than outbox.retentionSec (%lds)",
               rows > 0 ? rows : 0, marks > 0 ? marks : 0, ob->p->cfg.outbox_retention_sec);
}


static void *dispatcher(void *arg)
{
    dg_outbox *ob = arg;
    dg_log_own_thread(); /* a plugin thread: never waits on the host */
    ob->need_disc = 1;
    for (;;) {
        prune_due(ob);
        pthread_mutex_lock(&ob->mu);
        if (ob->stop) {
            pthread_mutex_unlock(&ob->mu);
            break;
        }
        if (ob->kicked || mono_ms() >= ob->next_disc) {
            ob->need_disc = 1;
            ob->next_disc = mono_ms() + DISCOVER_EVERY_MS;
        }
        ob->kicked = 0;
        uint64_t pass_no = ++ob->passes_begun;
        pthread_mutex_unlock(&ob->mu);

        int64_t now = mono_ms();
        if (ob->need_disc && ob->disc_retry_at <= now)
            discover(ob);
        int64_t next = post_due(ob);
        if (ob->disc_retry_at > now && ob->disc_retry_at < next)
            next = ob->disc_retry_at;
        if (ob->dec_retry_at && ob->dec_retry_at < next)
            next = ob->dec_retry_at;
        if (ob->next_disc < next)
            next = ob->next_disc;

        if (dg_discord_pipe_busy(ob->pipe)) {
            /* The posts just queued go on the wire first; recording what
             * was decided and reading ahead then run while Discord works
             * on them, off the path from one answer to the next post
             * (issue 14: on one channel that path is the whole rate). */
            size_t got = dg_discord_pipe_run(ob->pipe, 0, ob->done);
            for (size_t i = 0; i < got; i++)
                on_done(ob, &ob->done[i]);
            if (flush_due(ob, mono_ms()))
                flush(ob);
            refill_ahead(ob);
            prepare_ahead(ob);
            if (got)
                continue; /* channels answered: their next rows may go */
            /* Wait for answers, at most until a timer or the batch is due. */
            int64_t until = next;
            if (ob->n_dec && !ob->dec_retry_at && ob->dec[0].since + MARK_DELAY_MS < until)
                until = ob->dec[0].since + MARK_DELAY_MS;
            long wait = until == INT64_MAX ? 1000 : (long)(until - mono_ms());
            if (wait < 0)
                wait = 0;
            size_t n = dg_discord_pipe_run(ob->pipe, wait, ob->done);
            for (size_t i = 0; i < n; i++)
                on_done(ob, &ob->done[i]);
            /* No broadcast here: waiters want an idle pass, and waking
             * them on every answer cost a context switch per message. */
            continue;
        }
        /* Nothing in flight: what was decided is recorded before any wait. */
        if (ob->n_dec && ob->dec_retry_at <= mono_ms()) {
            flush(ob);
            if (!ob->n_dec)
                continue; /* channels held by the batch may go on */
        }
        if (ob->dec_retry_at && ob->dec_retry_at < next)
            next = ob->dec_retry_at;
        chans_sweep(ob);
        int empty = all_done(ob);
        pthread_mutex_lock(&ob->mu);
        if (empty) {
            ob->idle_pass = pass_no;
            pthread_cond_broadcast(&ob->cond);
        }
        /* Sleep until a kick, stop or the next due time; go on at once when
         * something is due now (a channel's next row, more discovery). */
        int busy_now = ob->need_disc && ob->disc_retry_at <= mono_ms();
        for (size_t i = 0; i < ob->n_chans && !busy_now; i++) {
            ochan *c = ob->chans[i];
            busy_now = !c->held && !c->inflight && c->not_before <= mono_ms() &&
                       ob->hold_until <= mono_ms() &&
                       (c->head < c->n || c->cursor < c->known_max);
        }
        while (!busy_now && !ob->stop && !ob->kicked && mono_ms() < next) {
            if (next == INT64_MAX) {
                pthread_cond_wait(&ob->cond, &ob->mu);
            } else {
                struct timespec ts = {(time_t)(next / 1000), (long)(next % 1000) * 1000000L};
                pthread_cond_timedwait(&ob->cond, &ob->mu, &ts);
            }
        }
        pthread_mutex_unlock(&ob->mu);
    }
    /* What Discord decided is recorded before the thread ends (one try:
     * a row the store still refuses goes out again at the next start, with
     * its nonce). */
    if (ob->n_dec && ob->dec_retry_at <= mono_ms())
        flush(ob);
    leases_release(ob, ob->chans, ob->n_chans); /* the next holder need not wait */
    return NULL;
}

int dg_outbox_start_opts(dg_plugin *p, const dg_outbox_options *o, dg_outbox **out, char *err,
                         size_t err_len)
{
    char scratch[4];
    if (!err || !err_len) {
        err = scratch;
        err_len = sizeof scratch;
    }
    if (!out) {
        snprintf(err, err_len, "outbox: no place to store the dispatcher");
        return OC_ERR_INVALID;
    }
    *out = NULL;
    if (!p || !p->store || !p->discord) {
        snprintf(err, err_len, "outbox: needs an open store and a Discord client (set "
                               "discord.moderatorToken)");
        return OC_ERR_INVALID;
    }
    dg_outbox *ob = calloc(1, sizeof *ob);
    if (!ob) {
        snprintf(err, err_len, "outbox: out of memory");
        return OC_ERR_NOMEM;
    }
    ob->p = p;
    if (o)
        ob->o = *o;
    if (ob->o.backoff_base_ms <= 0)
        ob->o.backoff_base_ms = 1000;
    if (ob->o.backoff_max_ms <= 0)
        ob->o.backoff_max_ms = 60000;
    if (ob->o.backoff_max_ms < ob->o.backoff_base_ms)
        ob->o.backoff_max_ms = ob->o.backoff_base_ms;
    if (ob->o.max_attempts < 0)
        ob->o.max_attempts = 0;
    if (ob->o.batch == 0)
        ob->o.batch = 64;
    if (ob->o.max_inflight <= 0)
        ob->o.max_inflight = DEFAULT_INFLIGHT;
    if (ob->o.max_inflight > 256)
        ob->o.max_inflight = 256;
    if (ob->o.lease_ms <= 0)
        ob->o.lease_ms = DEFAULT_LEASE_MS;
    if (ob->o.lease_ms < 200)
        ob->o.lease_ms = 200;
    ob->done = calloc((size_t)ob->o.max_inflight, sizeof *ob->done);
    ob->fly = calloc((size_t)ob->o.max_inflight, sizeof *ob->fly);
    if (!ob->done || !ob->fly || dg_discord_pipe_new(p->discord, (size_t)ob->o.max_inflight, &ob->pipe) !=
                         OC_OK) {
        snprintf(err, err_len, "outbox: out of memory");
        free(ob->done);
        free(ob->fly);
        free(ob);
        return OC_ERR_NOMEM;
    }
    pthread_mutex_init(&ob->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ob->cond, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&ob->thread, NULL, dispatcher, ob);
    if (rc != 0) {
        snprintf(err, err_len, "outbox: cannot start the dispatcher thread: %s", strerror(rc));
        pthread_cond_destroy(&ob->cond);
        pthread_mutex_destroy(&ob->mu);
        dg_discord_pipe_free(ob->pipe);
        free(ob->done);
        free(ob->fly);
        free(ob);
        return OC_ERR_IO;
    }
    ob->started = 1;
    *out = ob;
    return OC_OK;
}

int dg_outbox_start(dg_plugin *p, dg_outbox **out, char *err, size_t err_len)
{
    return dg_outbox_start_opts(p, NULL, out, err, err_len);
}

void dg_outbox_kick(dg_outbox *ob)
{
    if (!ob)
        return;
    pthread_mutex_lock(&ob->mu);
    ob->kicked = 1;
    pthread_cond_broadcast(&ob->cond);
    pthread_mutex_unlock(&ob->mu);
    dg_discord_pipe_wakeup(ob->pipe);
}

void dg_outbox_stop(dg_outbox *ob)
{
    if (!ob)
        return;
    pthread_mutex_lock(&ob->mu);
    ob->stop = 1;
    pthread_cond_broadcast(&ob->cond);
    pthread_mutex_unlock(&ob->mu);
    /* A transfer or rate-limit wait in flight ends within ~50 ms. */
    dg_discord_set_abort(ob->p->discord, 1);
    dg_discord_pipe_wakeup(ob->pipe);
    if (ob->started)
        pthread_join(ob->thread, NULL);
    dg_discord_set_abort(ob->p->discord, 0);
    for (size_t i = 0; i < ob->n_dec; i++) {
        dg_log(ob->p, OC_LOG_ERROR,
                   "outbox: moderator message %lld was %s by Discord but never recorded (the "
                   "store kept failing); it stays pending and is posted again at the next "
                   "start with the same nonce (Discord returns the first message within its "
                   "nonce window)",
                   (long long)ob->dec[i].row_id,
                   ob->dec[i].oc == SENT ? "accepted" : "refused for good");
        free(ob->dec[i].detail);
    }
    free(ob->dec);
    for (size_t i = 0; i < ob->n_chans; i++)
        chan_free(ob->chans[i]);
    free(ob->chans);
    dg_discord_pipe_free(ob->pipe);
    free(ob->done);
    free(ob->fly);
    pthread_cond_destroy(&ob->cond);
    pthread_mutex_destroy(&ob->mu);
    free(ob);
}

int dg_outbox_wait_idle(dg_outbox *ob, long timeout_ms)
{
    if (!ob)
        return OC_ERR_INVALID;
    int64_t until = mono_ms() + timeout_ms;
    pthread_mutex_lock(&ob->mu);
    uint64_t after = ob->passes_begun;
    ob->kicked = 1; /* make sure a pass begins */
    pthread_cond_broadcast(&ob->cond);
    while (!(ob->idle_pass > after) && !ob->stop && mono_ms() < until) {
        struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
        pthread_cond_timedwait(&ob->cond, &ob->mu, &ts);
    }
    int ok = ob->idle_pass > after;
    pthread_mutex_unlock(&ob->mu);
    return ok ? OC_OK : OC_ERR_IO;
}

void dg_outbox_get_stats(dg_outbox *ob, dg_outbox_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!ob)
        return;
    pthread_mutex_lock(&ob->mu);
    *out = ob->stats;
    pthread_mutex_unlock(&ob->mu);
}
