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

#include "discord.h"
#include "store.h"
#include "store_discuss.h"
#include "store_outbox.h"

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

/* Back-off of one channel whose head row failed. In memory only: after a
 * restart every pending row is due at once. */
typedef struct chan_wait {
    char channel_id[24];
    int64_t not_before;  /* monotonic ms */
} chan_wait;

/* Outcome of one send, recorded in its own transaction. */
typedef enum outcome { SENT, RETRY, FAILED } outcome;

/* A row Discord decided (SENT or FAILED) that the store has not recorded
 * yet. At most one per channel: the row stays its channel's head. */
typedef struct unrecorded {
    int64_t row_id;
    outcome oc;
    char *detail;        /* SENT: Discord's message id; FAILED: the reason. Owned */
    int failures;        /* store failures so far (drives the back-off) */
} unrecorded;

struct dg_outbox {
    dg_plugin *p;
    dg_outbox_options o;
    pthread_t thread;
    int started;

    pthread_mutex_t mu;
    pthread_cond_t cond;    /* CLOCK_MONOTONIC: kicks, stop, passes done */
    int stop;
    int kicked;
    uint64_t passes_begun, passes_done;
    uint64_t idle_pass;     /* number of the last pass that found nothing pending */
    dg_outbox_stats stats;

    /* Dispatcher thread only. */
    chan_wait *waits;
    size_t n_waits, cap_waits;
    int64_t hold_until;     /* monotonic ms: nothing is sent before (401) */
    unrecorded *unrec;      /* decided by Discord, not yet in the store */
    size_t n_unrec, cap_unrec;
    int64_t next_prune;     /* monotonic ms of the next retention round */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- splitting and enqueueing ------------------------------------------------------ */

/* Byte length of the UTF-8 sequence starting at c, or 0 if invalid. */
static size_t seq_len(const unsigned char *c)
{
    if (*c < 0x80)
        return 1;
    size_t n = (*c & 0xE0) == 0xC0 && *c >= 0xC2 ? 2
               : (*c & 0xF0) == 0xE0             ? 3
               : (*c & 0xF8) == 0xF0 && *c <= 0xF4 ? 4
                                                 : 0;
    for (size_t i = 1; i < n; i++)
        if ((c[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

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
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        char **np = realloc(*parts, nc * sizeof *np);
        if (!np)
            return OC_ERR_NOMEM;
        *parts = np;
        *cap = nc;
    }
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
            size_t l = seq_len((const unsigned char *)s + off);
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

static chan_wait *wait_of(dg_outbox *ob, const char *channel_id)
{
    for (size_t i = 0; i < ob->n_waits; i++)
        if (!strcmp(ob->waits[i].channel_id, channel_id))
            return &ob->waits[i];
    return NULL;
}

static void wait_clear(dg_outbox *ob, const char *channel_id)
{
    chan_wait *w = wait_of(ob, channel_id);
    if (w)
        *w = ob->waits[--ob->n_waits];
}

static void wait_set(dg_outbox *ob, const char *channel_id, int64_t not_before)
{
    chan_wait *w = wait_of(ob, channel_id);
    if (!w) {
        if (ob->n_waits == ob->cap_waits) {
            size_t nc = ob->cap_waits ? ob->cap_waits * 2 : 8;
            chan_wait *nw = realloc(ob->waits, nc * sizeof *nw);
            if (!nw)
                return; /* no back-off then: retried on the next pass */
            ob->waits = nw;
            ob->cap_waits = nc;
        }
        w = &ob->waits[ob->n_waits++];
        snprintf(w->channel_id, sizeof w->channel_id, "%s", channel_id);
    }
    w->not_before = not_before;
}

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

/* Record the outcome of one send in its own transaction. Returns OC_OK
 * (also when the row was no longer pending) or the store's status. */
static int record(dg_outbox *ob, const dg_outbox_row *row, outcome oc, const char *detail)
{
    dg_plugin *p = ob->p;
    int rc = dg_store_begin(p->store);
    if (rc == OC_OK) {
        int64_t now = dg_now_ms(p);
        if (oc == SENT)
            rc = dg_store_outbox_mark_sent(p->store, row->id, detail, now);
        else if (oc == RETRY)
            rc = dg_store_outbox_mark_retry(p->store, row->id, detail);
        else
            rc = dg_store_outbox_mark_failed(p->store, row->id, detail, now);
        if (rc == OC_OK || rc == OC_ERR_NOT_FOUND)
            rc = dg_store_commit(p->store);
        else
            dg_store_rollback(p->store);
    }
    return rc;
}

static unrecorded *unrec_of(dg_outbox *ob, int64_t row_id)
{
    for (size_t i = 0; i < ob->n_unrec; i++)
        if (ob->unrec[i].row_id == row_id)
            return &ob->unrec[i];
    return NULL;
}

static void unrec_drop(dg_outbox *ob, unrecorded *u)
{
    free(u->detail);
    *u = ob->unrec[--ob->n_unrec];
}

/* Remember a decided row the store refused; NULL when out of memory (the
 * caller still backs off, so even then no hot loop). */
static unrecorded *unrec_add(dg_outbox *ob, int64_t row_id, outcome oc, const char *detail)
{
    if (ob->n_unrec == ob->cap_unrec) {
        size_t nc = ob->cap_unrec ? ob->cap_unrec * 2 : 4;
        unrecorded *nu = realloc(ob->unrec, nc * sizeof *nu);
        if (!nu)
            return NULL;
        ob->unrec = nu;
        ob->cap_unrec = nc;
    }
    char *d = strdup(detail ? detail : "");
    if (!d)
        return NULL;
    unrecorded *u = &ob->unrec[ob->n_unrec++];
    *u = (unrecorded){.row_id = row_id, .oc = oc, .detail = d, .failures = 0};
    return u;
}

static void count_done(dg_outbox *ob, outcome oc)
{
    pthread_mutex_lock(&ob->mu);
    if (oc == SENT)
        ob->stats.sent++;
    else
        ob->stats.failed++;
    pthread_mutex_unlock(&ob->mu);
}

/*
 * Discord decided the row (SENT or FAILED) but recording failed with rc:
 * keep the outcome in memory (u, NULL on first failure) and back the
 * channel off. Returns 0 (no progress).
 */
static int record_refused(dg_outbox *ob, const dg_outbox_row *row, unrecorded *u, outcome oc,
                          const char *detail, int rc)
{
    if (!u)
        u = unrec_add(ob, row->id, oc, detail);
    int failures = u ? ++u->failures : 1;
    long wait = backoff(ob, failures);
    wait_set(ob, row->channel_id, mono_ms() + wait);
    dg_log(ob->p, OC_LOG_ERROR,
           "outbox: moderator message %lld for channel %s was %s by Discord but the store "
           "could not record it (%s, %d time%s); it is %s and recording is tried again in "
           "%ld ms. Check free disk space and that dbPath %s is writable",
           (long long)row->id, row->channel_id, oc == SENT ? "accepted" : "refused for good",
           oc_status_name(rc), failures, failures == 1 ? "" : "s",
           u ? "kept in memory and not sent again"
             : "not kept (out of memory): it may be sent again, the nonce prevents a duplicate",
           wait, ob->p->cfg.db_path ? ob->p->cfg.db_path : "(unset)");
    return 0;
}

/* Send one row; returns 1 when its state changed (sent or failed). */
static int send_row(dg_outbox *ob, const dg_outbox_row *row)
{
    dg_plugin *p = ob->p;
    unrecorded *u = unrec_of(ob, row->id);
    if (u) {
        /* Discord already decided this row: only the store is owed. */
        outcome oc = u->oc;
        int rc = record(ob, row, oc, u->detail);
        if (rc != OC_OK)
            return record_refused(ob, row, u, oc, u->detail, rc);
        dg_log(p, OC_LOG_INFO, "outbox: moderator message %lld for channel %s recorded as %s "
                               "after %d store failure%s",
               (long long)row->id, row->channel_id, oc == SENT ? "sent" : "failed",
               u->failures, u->failures == 1 ? "" : "s");
        unrec_drop(ob, u);
        wait_clear(ob, row->channel_id);
        count_done(ob, oc);
        return 1;
    }
    const char *ids[MAX_MENTIONS];
    size_t n_ids = 0;
    char *mcopy = strdup(row->mentions);
    if (!mcopy)
        return 0;
    for (char *save = NULL, *t = strtok_r(mcopy, ",", &save); t && n_ids < MAX_MENTIONS;
         t = strtok_r(NULL, ",", &save))
        ids[n_ids++] = t;

    dg_discord_err e;
    char *mid = NULL;
    int rc = dg_discord_post_message(p->discord, row->channel_id, row->content, ids, n_ids,
                                     row->nonce, &mid, &e);
    free(mcopy);
    if (rc == OC_OK) {
        int rrc = record(ob, row, SENT, mid);
        if (rrc != OC_OK) {
            record_refused(ob, row, NULL, SENT, mid, rrc);
            free(mid);
            return 0;
        }
        free(mid);
        wait_clear(ob, row->channel_id);
        count_done(ob, SENT);
        return 1;
    }
    if (stopping(ob))
        return 0; /* aborted by shutdown: the row stays as it was */

    int attempts = row->attempts + 1;
    if (e.http_status == 401) {
        /* The token, not this message: keep every row, stop asking. */
        record(ob, row, RETRY, e.message); /* best effort: the hold bounds it */
        ob->hold_until = mono_ms() + HOLD_401_MS;
        dg_log(p, OC_LOG_ERROR,
               "outbox: Discord refuses the moderator token (%s); no moderator message is "
               "sent for the next %ld minutes. Fix discord.moderatorToken (or env "
               "DIRIGENT_MODERATOR_TOKEN) and restart: the messages wait, none is lost",
               e.message, HOLD_401_MS / 60000);
        return 0;
    }
    if (!e.retryable || (ob->o.max_attempts > 0 && attempts >= ob->o.max_attempts)) {
        char reason[700];
        snprintf(reason, sizeof reason, "%s%s", e.message,
                 e.retryable ? " (gave up after the last allowed attempt)" : "");
        dg_log(p, OC_LOG_ERROR,
               "outbox: moderator message %lld (part %d/%d) for channel %s failed for good "
               "after %d attempt%s: %s",
               (long long)row->id, row->part, row->parts, row->channel_id, attempts,
               attempts == 1 ? "" : "s", reason);
        int rrc = record(ob, row, FAILED, reason);
        if (rrc != OC_OK)
            return record_refused(ob, row, NULL, FAILED, reason, rrc);
        wait_clear(ob, row->channel_id);
        count_done(ob, FAILED);
        return 1;
    }
    long wait = backoff(ob, attempts);
    if (e.retry_after_ms > wait)
        wait = e.retry_after_ms;
    /* When the store cannot count the attempt either, the wait below still
     * applies (it does not grow then: the count stays). */
    record(ob, row, RETRY, e.message);
    wait_set(ob, row->channel_id, mono_ms() + wait);
    char of[24] = "";
    if (ob->o.max_attempts > 0)
        snprintf(of, sizeof of, " of %d", ob->o.max_attempts);
    dg_log(p, OC_LOG_WARN,
           "outbox: moderator message %lld for channel %s not sent (attempt %d%s): %s; "
           "trying again in %ld ms",
           (long long)row->id, row->channel_id, attempts, of, e.message, wait);
    pthread_mutex_lock(&ob->mu);
    ob->stats.retries++;
    pthread_mutex_unlock(&ob->mu);
    return 0;
}

/*
 * One pass over the oldest pending row of each channel, read in pages of
 * `batch` channels so that channels in back-off never hide the ones behind
 * them. Returns the monotonic time at which a waiting channel is due
 * (INT64_MAX: none), and sets *progress when a row changed state; *empty
 * when nothing is pending.
 */
static int64_t run_pass(dg_outbox *ob, int *progress, int *empty)
{
    dg_plugin *p = ob->p;
    *progress = 0;
    *empty = 0;
    int64_t next = INT64_MAX, after = 0;
    if (ob->hold_until > mono_ms())
        return ob->hold_until;
    for (int page = 0; !stopping(ob) && ob->hold_until <= mono_ms(); page++) {
        dg_outbox_row *rows = NULL;
        size_t n = 0;
        int rc = dg_store_begin(p->store);
        if (rc == OC_OK) {
            rc = dg_store_outbox_heads(p->store, after, ob->o.batch, &rows, &n);
            if (rc == OC_OK)
                rc = dg_store_commit(p->store);
            else
                dg_store_rollback(p->store);
        }
        if (rc != OC_OK) {
            dg_outbox_rows_free(rows, n);
            dg_log(p, OC_LOG_ERROR, "outbox: cannot read pending messages from the store "
                                    "(%s); trying again in 1 s",
                   oc_status_name(rc));
            return mono_ms() + 1000 < next ? mono_ms() + 1000 : next;
        }
        if (n == 0) {
            *empty = page == 0;
            break;
        }
        for (size_t i = 0; i < n && !stopping(ob) && ob->hold_until <= mono_ms(); i++) {
            chan_wait *w = wait_of(ob, rows[i].channel_id);
            if (w && w->not_before > mono_ms()) {
                if (w->not_before < next)
                    next = w->not_before;
                continue;
            }
            if (send_row(ob, &rows[i])) {
                *progress = 1;
            } else {
                w = wait_of(ob, rows[i].channel_id);
                int64_t due = w ? w->not_before : mono_ms() + ob->o.backoff_base_ms;
                if (due < next)
                    next = due;
            }
        }
        after = rows[n - 1].id;
        dg_outbox_rows_free(rows, n);
        if (n < ob->o.batch)
            break;
    }
    if (ob->hold_until > mono_ms())
        return ob->hold_until;
    return next;
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
    for (;;) {
        prune_due(ob);
        pthread_mutex_lock(&ob->mu);
        if (ob->stop) {
            pthread_mutex_unlock(&ob->mu);
            break;
        }
        ob->kicked = 0;
        uint64_t pass_no = ++ob->passes_begun;
        pthread_mutex_unlock(&ob->mu);

        int progress = 0, empty = 0;
        int64_t next = run_pass(ob, &progress, &empty);

        pthread_mutex_lock(&ob->mu);
        ob->passes_done = pass_no;
        if (empty)
            ob->idle_pass = pass_no;
        pthread_cond_broadcast(&ob->cond);
        /* Progress means more rows may be due right away (the next row of a
         * channel); otherwise sleep until a kick, stop or the next due time. */
        if (!progress) {
            while (!ob->stop && !ob->kicked && mono_ms() < next) {
                if (next == INT64_MAX) {
                    pthread_cond_wait(&ob->cond, &ob->mu);
                } else {
                    struct timespec ts = {(time_t)(next / 1000), (long)(next % 1000) * 1000000L};
                    pthread_cond_timedwait(&ob->cond, &ob->mu, &ts);
                }
            }
        }
        pthread_mutex_unlock(&ob->mu);
    }
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
    if (ob->started)
        pthread_join(ob->thread, NULL);
    dg_discord_set_abort(ob->p->discord, 0);
    for (size_t i = 0; i < ob->n_unrec; i++)
        dg_log(ob->p, OC_LOG_ERROR,
               "outbox: moderator message %lld was %s by Discord but never recorded (the store "
               "kept failing); it stays pending and is posted again at the next start with the "
               "same nonce (Discord returns the first message within its nonce window)",
               (long long)ob->unrec[i].row_id,
               ob->unrec[i].oc == SENT ? "accepted" : "refused for good");
    while (ob->n_unrec)
        unrec_drop(ob, &ob->unrec[0]);
    free(ob->unrec);
    free(ob->waits);
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
