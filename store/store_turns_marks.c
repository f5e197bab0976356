/*
 * store_turns_marks.c -- the dedup marks of ingested messages (turn_ledger,
 * and turn_seen for those that carry nothing): the claim of a message id,
 * the pending mark a store alone on its file writes at commit with the
 * transition its message caused, the hint that spares the dedup read of
 * an id above the channel's newest mark, and the prune of old marks.
 */
#include "store_turns.h"

#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "store_transitions.h"
#include "store_turns_int.h"

static const char SQL_SEEN_CLAIM[] =
    "INSERT INTO turn_ledger (channel_id, k, at_ms) SELECT ?1, ?2, ?3"
    " WHERE NOT EXISTS (SELECT 1 FROM turn_seen WHERE channel_id = ?1 AND k = ?2)"
    " ON CONFLICT DO NOTHING";
/* PostgreSQL: turn_seen stays empty there (it is written only by a SQLite
 * store alone on its file), and its parameters keep their types this way. */
static const char SQL_SEEN_CLAIM_PG[] =
    "INSERT INTO turn_ledger (channel_id, k, at_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING";

int dg_store_turns_seen_claim(dg_store *st, const char *channel_id, const char *message_id,
                              int64_t now_ms, int *fresh)
{
    return dg_store_turns_seen_claim_hinted(st, channel_id, message_id, now_ms, NULL, fresh);
}

/*
 * The pending mark. While the store is alone on its file (so nobody else
 * writes marks under our write lock), a fresh message's mark waits until
 * commit: the transition the message causes then rides in the same insert
 * instead of a second write of the row, and the dedup check of an id above
 * the channel's newest mark reads nothing. Any statement that reads or
 * changes marks writes it first, so no reader ever misses it.
 */
/* When a message was seen, in whichever table its mark is (no row: never). */
static const char SQL_SEEN_AT[] =
    "SELECT at_ms FROM turn_seen WHERE channel_id = ?1 AND k = ?2"
    " UNION ALL SELECT at_ms FROM turn_ledger WHERE channel_id = ?1 AND k = ?2";
static const char SQL_SEEN_PUT[] =
    "INSERT INTO turn_ledger (channel_id, k, at_ms) VALUES (?, ?, ?)";
/* A mark that carries nothing, at commit (schema v15). */
static const char SQL_SEEN_PUT_PLAIN[] =
    "INSERT INTO turn_seen (channel_id, k, at_ms) VALUES (?, ?, ?)";
/* ?3 .. ?10: dg_store_transition_bind; ?12 .. ?29: the scope state it
 * carries (its key, post channel, DG_STATE_COLS), all NULL when none. */
static const char SQL_SEEN_PUT_TR[] =
    "INSERT INTO turn_ledger (channel_id, k, at_ms, t_scope, t_ord, t_cause, t_before, t_after,"
    " t_state, t_passed, t_agent_msgs, t_snap, post_channel, " DG_STATE_COLS ")"
    " VALUES (?1, ?2, ?11, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
    " ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29)";

void dg_store_turns_pending_drop(dg_store *st)
{
    struct dg_pending_mark *p = &st->pending;
    free(p->strings);
    free(p->snap_post);
    /* Not the whole mark (some 450 bytes, twice a message): every other
     * field is written before it is read, the message's by the claim that
     * sets `set`, the transition's with has_tr, the state's with has_snap. */
    p->set = p->has_tr = p->has_snap = p->newest = p->counted = 0;
    p->strings = p->snap_post = NULL;
    p->hint = NULL;
}

/* The pending mark, written now. at_commit: nothing can attach to it any
 * more, so one that carries nothing goes to turn_seen; before that it goes
 * to turn_ledger, where a transition of its message may still be written
 * into it (store_transitions.c, SQL_MARK). */
static int pending_write(dg_store *st, int at_commit)
{
    struct dg_pending_mark *p = &st->pending;
    if (!p->set)
        return DG_OK;
    int plain = !p->has_tr && at_commit;
    /* A turn_seen mark is not in the window (dg_sql_turns_window reads turn_ledger):
     * it pushes no state towards the fold. */
    if (plain && p->counted && p->hint && p->hint->epoch == st->alone_epoch)
        p->hint->since_snap--;
    /* Every parameter is bound below but a transition's state columns
     * when it carries none: those are cleared to NULL. */
    const char *sql = p->has_tr ? SQL_SEEN_PUT_TR : plain ? SQL_SEEN_PUT_PLAIN : SQL_SEEN_PUT;
    dg_stmt *s =
        p->has_tr && !p->has_snap ? dg_store_stmt(st, sql) : dg_store_stmt_all_bound(st, sql);
    int rc = DG_ERR_IO;
    if (s) {
        dg_bind_text_borrowed(s, 1, p->channel);
        dg_bind_text_borrowed(s, 2, p->id);
        if (p->has_tr) {
            dg_store_transition_bind(s, &p->tr, p->ord);
            dg_bind_int64(s, 11, p->at_ms);
            if (p->has_snap) {
                dg_bind_text_borrowed(s, 12, p->snap_key);
                dg_bind_text_borrowed(s, 13, p->snap_post);
                dg_store_turns_state_bind(s, 14, p->snap);
            }
        } else {
            dg_bind_int64(s, 3, p->at_ms);
        }
        rc = dg_store_run(s);
    }
    dg_store_turns_pending_drop(st); /* written, or the transaction is lost anyway */
    return rc;
}

int dg_store_turns_pending_flush(dg_store *st)
{
    DG_ASSERT_IN_TXN(st);
    return pending_write(st, 0);
}

int dg_store_turns_pending_commit(dg_store *st)
{
    DG_ASSERT_IN_TXN(st);
    return pending_write(st, 1);
}

/* Copy s after *at in buf; returns the copy (NULL for NULL). */
static char *pack(char *buf, size_t *at, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    memcpy(buf + *at, s, n);
    *at += n;
    return buf + *at - n;
}

int dg_store_turns_pending_attach(dg_store *st, const char *channel_id, const dg_transition *t,
                                  int64_t ord)
{
    DG_ASSERT_IN_TXN(st);
    struct dg_pending_mark *p = &st->pending;
    if (!p->set || !t->message_id || strcmp(p->id, t->message_id) || strcmp(p->channel, channel_id))
        return 0;
    char kept[256];
    dg_transition m;
    dg_store_mark_transition(t, kept, sizeof kept, &m);
    const char *f[] = {m.scope,         m.cause, m.speaker_before,
                       m.speaker_after, m.state, m.passed ? m.passed : ""};
    size_t len = 0;
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        len += f[i] ? strlen(f[i]) + 1 : 0;
    char *buf = malloc(len ? len : 1);
    if (!buf)
        return DG_ERR_NOMEM;
    size_t at = 0;
    free(p->strings); /* a second transition of one message replaces the first, as the row's */
    p->strings = buf;
    p->tr = (dg_transition){.at_ms = t->at_ms, .agent_msgs = t->agent_msgs};
    p->tr.scope = pack(buf, &at, f[0]);
    p->tr.cause = pack(buf, &at, f[1]);
    p->tr.speaker_before = pack(buf, &at, f[2]);
    p->tr.speaker_after = pack(buf, &at, f[3]);
    p->tr.state = pack(buf, &at, f[4]);
    p->tr.passed = pack(buf, &at, f[5]);
    p->ord = ord;
    p->has_tr = 1;
    return 1;
}

/* The newest mark of a channel that carries nothing (max: one row, NULL
 * when none). */
static const char SQL_PLAIN_NEWEST[] = "SELECT max(k) FROM turn_seen WHERE channel_id = ?";

void dg_store_turns_hint_load(dg_store *st, const char *channel_id, dg_mark_hint *hint)
{
    hint->epoch = 0;
    hint->newest[0] = '\0';
    hint->since_snap = -1;
    if (!st->db || !st->in_txn || dg_store_turns_pending_flush(st) != DG_OK)
        return;
    dg_stmt *s = dg_store_stmt(st, dg_sql_turns_window);
    if (!s)
        return;
    dg_bind_text_borrowed(s, 1, channel_id);
    int rc, i = 0, ok = 1;
    while ((rc = dg_step(s)) == DG_ROW) {
        const char *k = dg_col_text(s, 0);
        if (i == 0 && (!k || strlen(k) >= sizeof hint->newest))
            ok = 0;
        else if (i == 0)
            memcpy(hint->newest, k, strlen(k) + 1);
        if (!dg_col_null(s, 1))
            hint->since_snap = i; /* the deepest mark still carrying a state */
        i++;
    }
    dg_reset(s);
    if (rc != DG_DONE || !ok || !(s = dg_store_stmt(st, SQL_PLAIN_NEWEST)))
        return;
    dg_bind_text_borrowed(s, 1, channel_id);
    if ((rc = dg_step(s)) == DG_ROW && !dg_col_null(s, 0)) {
        const char *k = dg_col_text(s, 0);
        size_t n = k ? strlen(k) : sizeof hint->newest;
        if (n >= sizeof hint->newest)
            ok = 0;
        else if (strcmp(k, hint->newest) > 0)
            memcpy(hint->newest, k, n + 1);
    }
    dg_reset(s);
    if (rc == DG_ROW && ok)
        hint->epoch = st->alone_epoch; /* valid only as long as that lasts */
}

/* The dedup check of a fresh-looking id: *found, and the hint renewed when
 * it is of another epoch. */
static int seen_lookup(dg_store *st, const char *channel_id, const char *message_id,
                       dg_mark_hint *hint, int *found)
{
    dg_stmt *s = dg_store_stmt(st, SQL_SEEN_AT);
    if (!s)
        return DG_ERR_IO;
    dg_bind_text_borrowed(s, 1, channel_id);
    dg_bind_text_borrowed(s, 2, message_id);
    int rc = dg_step(s);
    dg_reset(s);
    if (rc != DG_ROW && rc != DG_DONE)
        return DG_ERR_IO;
    *found = rc == DG_ROW;
    if (hint && hint->epoch != st->alone_epoch)
        dg_store_turns_hint_load(st, channel_id, hint);
    return DG_OK;
}

int dg_store_turns_seen_claim_hinted(dg_store *st, const char *channel_id, const char *message_id,
                                     int64_t now_ms, dg_mark_hint *hint, int *fresh)
{
    DG_ASSERT_IN_TXN(st);
    *fresh = 0;
    if (!message_id || !*message_id || message_id[0] == '~')
        return DG_ERR_INVALID;                 /* '~' starts the keys of state rows */
    int rc = dg_store_turns_pending_flush(st); /* an earlier message's, first */
    if (rc != DG_OK)
        return rc;
    int alone = dg_store_alone_in_txn(st);
    if (!channel_id || strlen(channel_id) >= DG_SCOPE_ID_MAX ||
        strlen(message_id) >= DG_SCOPE_ID_MAX || !alone || !hint) {
        /* A mark nobody counts could push a state out of the window. */
        if (alone && channel_id && (rc = dg_store_turns_fold_channel(st, channel_id)) != DG_OK)
            return rc;
        return dg_store_turns_claim_pair(st, st->pg ? SQL_SEEN_CLAIM_PG : SQL_SEEN_CLAIM,
                                         channel_id, message_id, now_ms, fresh);
    }
    st->txn_hinted = 1;
    int above = hint && hint->epoch == st->alone_epoch && strcmp(message_id, hint->newest) > 0;
    if (!above) {
        int found = 0;
        if ((rc = seen_lookup(st, channel_id, message_id, hint, &found)) != DG_OK)
            return rc;
        if (found)
            return DG_OK; /* another account reported it already */
    }
    int valid = hint->epoch == st->alone_epoch, counted = 0;
    /* One more mark above a state some mark carries: fold before it sinks
     * out of the window. */
    if (valid && hint->since_snap >= DG_SNAP_WINDOW - 1) {
        if ((rc = dg_store_turns_fold_window(st, channel_id)) != DG_OK)
            return rc;
        hint->since_snap = -1;
    } else if (valid && hint->since_snap >= 0) {
        hint->since_snap++; /* taken back if it goes to turn_seen (pending_write) */
        counted = 1;
    } else if (!valid && (rc = dg_store_turns_fold_channel(st, channel_id)) != DG_OK) {
        return rc; /* nothing known of the channel's marks: start clean */
    }
    struct dg_pending_mark *p = &st->pending;
    p->set = 1;
    memcpy(p->channel, channel_id, strlen(channel_id) + 1);
    memcpy(p->id, message_id, strlen(message_id) + 1);
    p->at_ms = now_ms;
    p->newest = valid && strcmp(message_id, hint->newest) > 0;
    p->hint = valid ? hint : NULL;
    p->counted = counted;
    if (p->newest)
        memcpy(hint->newest, message_id, strlen(message_id) + 1);
    *fresh = 1;
    return DG_OK;
}

/* Ids are snowflakes: by length, then by digits; '~' starts state rows. */
#define SEEN_NEWER_IN(table)                                                                       \
    "SELECT 1 FROM " table " WHERE channel_id = ?1 AND k < '~'"                                    \
    " AND (length(k) > length(?2) OR (length(k) = length(?2) AND k > ?2))"
static const char SQL_SEEN_NEWER[] =
    SEEN_NEWER_IN("turn_seen") " UNION ALL " SEEN_NEWER_IN("turn_ledger") " LIMIT 1";

int dg_store_turns_seen_since(dg_store *st, const char *channel_id, const char *message_id,
                              int64_t *at_ms, int *newer)
{
    DG_ASSERT_IN_TXN(st);
    int flushed = dg_store_turns_pending_flush(st);
    if (flushed != DG_OK)
        return flushed;
    *at_ms = 0;
    *newer = 0;
    if (!message_id || !*message_id || message_id[0] == '~')
        return DG_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, SQL_SEEN_NEWER);
    if (!s)
        return DG_ERR_IO;
    dg_bind_text_borrowed(s, 1, channel_id);
    dg_bind_text_borrowed(s, 2, message_id);
    /* Each statement reset before the next: one left on a row keeps its
     * read transaction after COMMIT, and the next BEGIN IMMEDIATE after
     * another connection's commit fails at once (a stale snapshot). */
    int rc = dg_step(s);
    dg_reset(s);
    if (rc != DG_ROW && rc != DG_DONE)
        return DG_ERR_IO;
    *newer = rc == DG_ROW;
    if (!(s = dg_store_stmt(st, SQL_SEEN_AT)))
        return DG_ERR_IO;
    dg_bind_text_borrowed(s, 1, channel_id);
    dg_bind_text_borrowed(s, 2, message_id);
    rc = dg_step(s);
    if (rc == DG_ROW)
        *at_ms = dg_col_int64(s, 0);
    dg_reset(s);
    return rc == DG_ROW || rc == DG_DONE ? DG_OK : DG_ERR_IO;
}

static const char SQL_SEEN_PRUNE[] = "DELETE FROM turn_ledger WHERE k < '~' AND at_ms < ?";
static const char SQL_SEEN_PRUNE_PLAIN[] = "DELETE FROM turn_seen WHERE at_ms < ?";

int dg_store_turns_seen_prune(dg_store *st, int64_t before_ms, long *removed)
{
    DG_ASSERT_IN_TXN(st);
    int flushed = dg_store_turns_pending_flush(st);
    if (flushed == DG_OK)
        flushed = dg_store_turns_fold_before(st, before_ms > 0 ? before_ms
                                                               : 1); /* states before marks go */
    if (flushed != DG_OK)
        return flushed;
    long marked = 0, plain = 0;
    int rc = dg_store_transitions_rescue(st, before_ms);
    if (rc == DG_OK)
        rc = dg_store_turns_prune_before(st, SQL_SEEN_PRUNE, before_ms, &marked);
    if (rc == DG_OK)
        rc = dg_store_turns_prune_before(st, SQL_SEEN_PRUNE_PLAIN, before_ms, &plain);
    if (rc == DG_OK && removed)
        *removed = marked + plain;
    return rc;
}
