/*
 * store_turns_state.c -- the turn state of each scope in turn_ledger: its
 * row ("~conv" / "~thread:<root>"), written whole; the newer state a dedup
 * mark may carry for it while the store is alone on its file (schema v14),
 * read together with the row and folded into it before the mark would sink
 * out of the window the readers look at; the listing of scopes.
 */
#include "store_turns.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "store_int.h"
#include "store_turns_int.h"

/* Ledger key of a scope's state row into buf. */
const char *dg_store_turns_state_key(const dg_scope *sc, char *buf, size_t len)
{
    const char *parts[] = {sc->kind == DG_SCOPE_CONVERSATION ? "~conv" : "~thread:",
                           sc->kind == DG_SCOPE_CONVERSATION ? NULL : sc->root};
    dg_str_join(buf, len, parts, 2);
    return buf;
}

/* The kept fields of t (but `active`), in DG_STATE_COLS' order, into f. */
void dg_store_turns_state_fields(const dg_turn_state *t, int64_t f[DG_STATE_FIELDS])
{
    const int64_t v[DG_STATE_FIELDS] = {t->speaker,
                                        t->anchor,
                                        (int64_t)t->silent,
                                        (int64_t)t->mention,
                                        (int64_t)t->mention_done,
                                        (int64_t)t->consumed,
                                        (int64_t)t->owed,
                                        t->agent_msgs,
                                        t->rested,
                                        t->idle_reminded,
                                        t->handoff,
                                        t->permit,
                                        t->permit_ms,
                                        t->last_change_ms,
                                        t->budget,
                                        t->budget_until_ms};
    memcpy(f, v, sizeof v);
}

/* Columns col .. col+15 of the current row (DG_STATE_COLS' order) into *t's
 * kept fields (the others, `active` among them, kept): state_fields'
 * inverse. */
static void state_read(dg_stmt *s, int col, dg_turn_state *t)
{
    t->speaker = dg_col_int(s, col++);
    t->anchor = dg_col_int(s, col++);
    t->silent = (uint64_t)dg_col_int64(s, col++);
    t->mention = (uint64_t)dg_col_int64(s, col++);
    t->mention_done = (uint64_t)dg_col_int64(s, col++);
    t->consumed = (uint64_t)dg_col_int64(s, col++);
    t->owed = (uint64_t)dg_col_int64(s, col++);
    t->agent_msgs = dg_col_int64(s, col++);
    t->rested = dg_col_int(s, col++);
    t->idle_reminded = dg_col_int(s, col++);
    t->handoff = dg_col_int(s, col++);
    t->permit = dg_col_int(s, col++);
    t->permit_ms = dg_col_int64(s, col++);
    t->last_change_ms = dg_col_int64(s, col++);
    t->budget = dg_col_int(s, col++);
    t->budget_until_ms = dg_col_int64(s, col++);
}

/* Bind f as ?idx .. ?idx+15 (DG_STATE_COLS' order). */
void dg_store_turns_state_bind(dg_stmt *s, int idx, const int64_t f[DG_STATE_FIELDS])
{
    for (int i = 0; i < DG_STATE_FIELDS; i++)
        dg_bind_int64(s, idx + i, f[i]);
}

static const char SQL_SCOPE_GET[] = "SELECT active, post_channel, t_ord, " DG_STATE_COLS
                                    " FROM turn_ledger WHERE channel_id = ? AND k = ?";

/* The channel's newest marks, where a state a mark carries is found. */
#define SNAP_WINDOW_SQL(cols)                                                                      \
    "SELECT " cols " FROM turn_ledger WHERE channel_id = ? AND k < '~' ORDER BY k DESC LIMIT 16"
const char dg_sql_turns_window[] =
    SNAP_WINDOW_SQL("k, t_snap, t_ord, post_channel, at_ms, " DG_STATE_COLS);
enum { WINDOW_STATE_COL = 5 }; /* where DG_STATE_COLS start in dg_sql_turns_window */
_Static_assert(DG_SNAP_WINDOW == 16, "SNAP_WINDOW_SQL's LIMIT is DG_SNAP_WINDOW");

/* Whether the current row of dg_sql_turns_window carries a state of key. */
static int snap_is(dg_stmt *s, const char *key)
{
    const char *snap = dg_col_text(s, 1);
    return snap && strcmp(snap, key) == 0;
}

/* The state the current row of dg_sql_turns_window carries into *t (a carried state
 * is always active; the fields no row keeps stay as they were). */
static void snap_read(dg_stmt *s, dg_turn_state *t)
{
    t->active = 1;
    state_read(s, WINDOW_STATE_COL, t);
}

/* The newest state a mark of the window carries for key, newer than
 * row_ord: 1 with *t (fields replaced), *post (malloc'd or NULL, when post
 * is not NULL) and *ord; 0 when none; < 0 on failure. */
static int snap_newest(dg_store *st, const char *channel_id, const char *key, int64_t row_ord,
                       dg_turn_state *t, char **post, int64_t *ord)
{
    dg_stmt *s = dg_store_stmt(st, dg_sql_turns_window);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    int rc, found = 0;
    int64_t best = row_ord;
    while ((rc = dg_step(s)) == DG_ROW) {
        int64_t o = dg_col_int64(s, 2);
        if (o <= best || !snap_is(s, key))
            continue;
        dg_turn_state v = *t;
        snap_read(s, &v);
        char *p = NULL;
        if (post && !(p = dg_store_col_dup(s, 3)) && !dg_col_null(s, 3)) {
            dg_reset(s);
            return DG_ERR_NOMEM;
        }
        if (post) {
            if (found)
                free(*post);
            *post = p;
        }
        *t = v;
        best = o;
        found = 1;
    }
    dg_reset(s);
    if (rc != DG_DONE) {
        if (found && post) {
            free(*post);
            *post = NULL;
        }
        return DG_ERR_IO;
    }
    *ord = best;
    return found;
}

int dg_store_turns_scope_load(dg_store *st, const dg_scope *sc, dg_turn_state *t,
                              char **post_channel)
{
    DG_ASSERT_IN_TXN(st);
    dg_turn_state_init(t);
    if (post_channel)
        *post_channel = NULL;
    dg_stmt *s = dg_store_stmt(st, SQL_SCOPE_GET);
    if (!s)
        return DG_ERR_IO;
    char k[DG_SCOPE_ID_MAX + 16];
    dg_store_bind_text(s, 1, sc->channel_id);
    dg_store_bind_text(s, 2, dg_store_turns_state_key(sc, k, sizeof k));
    int rc = dg_step(s);
    if (rc == DG_DONE) {
        dg_reset(s);
        return DG_ERR_NOT_FOUND;
    }
    if (rc != DG_ROW) {
        dg_reset(s);
        return DG_ERR_IO;
    }
    t->active = dg_col_int(s, 0);
    state_read(s, 3, t);
    int64_t row_ord = dg_col_int64(s, 2);
    dg_store_saw_ord(st, row_ord);
    int status = DG_OK;
    /* A copy that failed must not read as "post in the channel itself". */
    if (post_channel && !(*post_channel = dg_store_col_dup(s, 1)) && !dg_col_null(s, 1))
        status = DG_ERR_NOMEM;
    dg_reset(s);
    if (status != DG_OK || st->pg)
        return status; /* PostgreSQL is shared: its marks never carry a state */
    /* A newer state a mark carries (schema v14). */
    dg_turn_state v = *t;
    char *post = NULL;
    int64_t ord = 0;
    int found = snap_newest(st, sc->channel_id, k, row_ord, &v, post_channel ? &post : NULL, &ord);
    if (found < 0) {
        if (post_channel) {
            free(*post_channel);
            *post_channel = NULL;
        }
        return found;
    }
    if (found) {
        dg_store_saw_ord(st, ord);
        *t = v;
        if (post_channel) {
            free(*post_channel);
            *post_channel = post;
        }
    }
    return DG_OK;
}

static const char SQL_SCOPE_ADD[] =
    "INSERT INTO turn_ledger (channel_id, k, at_ms, post_channel, t_ord, active, " DG_STATE_COLS ")"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
    " ?19, ?20, ?21, ?22) ON CONFLICT DO NOTHING";
/* The row is written whole: on a WITHOUT ROWID table an UPDATE is a delete
 * and an insert as well, and costs more (it reads the old record first);
 * REPLACE writes the same row for less. */
static const char SQL_SCOPE_SET[] =
    "REPLACE INTO turn_ledger (channel_id, k, at_ms, post_channel, t_ord, active, " DG_STATE_COLS
    ")"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
    " ?19, ?20, ?21, ?22)";
/* PostgreSQL has no REPLACE: the same whole-row write as an upsert. */
static const char SQL_SCOPE_SET_PG[] =
    "INSERT INTO turn_ledger (channel_id, k, at_ms, post_channel, t_ord, active, " DG_STATE_COLS ")"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
    " ?19, ?20, ?21, ?22) ON CONFLICT (channel_id, k) DO UPDATE SET at_ms = excluded.at_ms,"
    " post_channel = excluded.post_channel, active = excluded.active,"
    " speaker = excluded.speaker, anchor = excluded.anchor, silent = excluded.silent,"
    " mention = excluded.mention, mention_done = excluded.mention_done,"
    " consumed = excluded.consumed, owed = excluded.owed, agent_msgs = excluded.agent_msgs,"
    " rested = excluded.rested, idle_reminded = excluded.idle_reminded,"
    " handoff = excluded.handoff, permit = excluded.permit, permit_ms = excluded.permit_ms,"
    " last_change_ms = excluded.last_change_ms, budget = excluded.budget,"
    " budget_until_ms = excluded.budget_until_ms, t_ord = excluded.t_ord";

/* The state row of sc as t, holding the state of order ord. */
static int scope_write(dg_store *st, const dg_scope *sc, const char *post_channel,
                       const dg_turn_state *t, int exists, int64_t now_ms, int64_t ord);

int dg_store_turns_scope_save(dg_store *st, const dg_scope *sc, const char *post_channel,
                              const dg_turn_state *t, int exists, int64_t now_ms)
{
    DG_ASSERT_IN_TXN(st);
    return scope_write(st, sc, post_channel, t, exists, now_ms, dg_store_next_ord(st, now_ms));
}

static int scope_write(dg_store *st, const dg_scope *sc, const char *post_channel,
                       const dg_turn_state *t, int exists, int64_t now_ms, int64_t ord)
{
    dg_stmt *s = dg_store_stmt(st, !exists  ? SQL_SCOPE_ADD
                                   : st->pg ? SQL_SCOPE_SET_PG
                                            : SQL_SCOPE_SET);
    if (!s)
        return DG_ERR_IO;
    char k[DG_SCOPE_ID_MAX + 16];
    int i = 1;
    dg_bind_text_borrowed(s, i++, sc->channel_id);
    dg_bind_text_borrowed(s, i++, dg_store_turns_state_key(sc, k, sizeof k));
    dg_bind_int64(s, i++, now_ms);
    dg_bind_text_borrowed(s, i++, post_channel);
    dg_bind_int64(s, i++, ord);
    dg_bind_int64(s, i++, t->active);
    int64_t f[DG_STATE_FIELDS];
    dg_store_turns_state_fields(t, f);
    dg_store_turns_state_bind(s, i, f);
    int rc = dg_step(s);
    if (rc == DG_DONE && !exists && dg_changes(s) == 0)
        return DG_ERR_INTERNAL; /* the caller's belief about the row was wrong: a bug */
    return dg_store_turns_logged(st, sc->channel_id, rc == DG_DONE ? DG_OK : DG_ERR_IO);
}

static const char SQL_SCOPES_CLEAR[] = "DELETE FROM turn_ledger WHERE channel_id = ? AND k >= '~'";

int dg_store_turns_scopes_clear(dg_store *st, const char *channel_id)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_SCOPES_CLEAR);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    return dg_store_turns_logged(st, channel_id, dg_store_run(s));
}

int dg_store_turns_scope_save_for(dg_store *st, const dg_scope *sc, const char *post_channel,
                                  const dg_turn_state *t, int exists, int was_active,
                                  const char *message_id, int64_t now_ms)
{
    DG_ASSERT_IN_TXN(st);
    struct dg_pending_mark *p = &st->pending;
    /* Only a scope that stays awake: the rows then say which scopes are
     * active (the sweeper's list) and which may be pruned as dormant. */
    if (!message_id || !p->set || !p->has_tr || p->has_snap || !p->newest || !p->hint ||
        p->hint->epoch != st->alone_epoch || !exists || !was_active || !t->active ||
        strcmp(p->id, message_id) || strcmp(p->channel, sc->channel_id))
        return dg_store_turns_scope_save(st, sc, post_channel, t, exists, now_ms);
    if (post_channel && !(p->snap_post = strdup(post_channel)))
        return DG_ERR_NOMEM;
    dg_store_turns_state_key(sc, p->snap_key, sizeof p->snap_key);
    dg_store_turns_state_fields(t, p->snap);
    p->has_snap = 1;
    if (p->hint->since_snap < 0)
        p->hint->since_snap = 0;
    return dg_store_turns_logged(st, sc->channel_id, DG_OK);
}

/* The scope of a state row's key, or DG_ERR_INVALID. */
static int scope_of_key(const char *channel_id, const char *k, dg_scope *sc)
{
    return !channel_id || !k                ? DG_ERR_INVALID
           : strcmp(k, "~conv") == 0        ? dg_scope_conversation(channel_id, sc)
           : strncmp(k, "~thread:", 8) == 0 ? dg_scope_thread(channel_id, k + 8, sc)
                                            : DG_ERR_INVALID;
}

/* One state a mark of the window carries (fold_channel). */
typedef struct snap_row {
    char *key, *post;
    int64_t ord, at_ms;
    dg_turn_state st;
} snap_row;

/* ?2: the oldest mark to look at ('' every one of the channel). */
static const char SQL_SNAPS_CLEAR[] =
    "UPDATE turn_ledger SET t_snap = NULL, " DG_STATE_COLS_NULL
    " WHERE channel_id = ?1 AND k >= ?2 AND k < '~' AND t_snap IS NOT NULL";
static const char SQL_ROW_ORD[] = "SELECT t_ord FROM turn_ledger WHERE channel_id = ? AND k = ?";

/* Write the newest state of each scope in v (its row existing, older) to the row. */
static int fold_rows(dg_store *st, const char *channel_id, snap_row *v, int n)
{
    for (int i = 0; i < n; i++) {
        const char *k = v[i].key;
        int newest = 1;
        for (int j = 0; j < n && newest; j++)
            if (j != i && v[j].ord > v[i].ord && strcmp(v[j].key, k) == 0)
                newest = 0;
        dg_scope sc;
        if (!newest || scope_of_key(channel_id, k, &sc) != DG_OK)
            continue;
        dg_stmt *s = dg_store_stmt(st, SQL_ROW_ORD);
        if (!s)
            return DG_ERR_IO;
        dg_bind_text_borrowed(s, 1, channel_id);
        dg_bind_text_borrowed(s, 2, k);
        int rc = dg_step(s);
        int64_t row_ord = rc == DG_ROW ? dg_col_int64(s, 0) : 0;
        dg_reset(s);
        if (rc != DG_ROW && rc != DG_DONE)
            return DG_ERR_IO;
        if (rc == DG_DONE || row_ord >= v[i].ord)
            continue; /* no row (the scope was cleared), or a newer one */
        if ((rc = scope_write(st, &sc, v[i].post, &v[i].st, 1, v[i].at_ms, v[i].ord)) != DG_OK)
            return rc;
    }
    return DG_OK;
}

/* Fold the states the channel's window carries into their rows and clear
 * them from the marks: from every mark of the channel, or, in_window, from
 * the window's marks only (the claim's fold, whose hint knows no state is
 * carried below: a channel keeps thousands of marks, and a clear of all of
 * them read each one every DG_SNAP_WINDOW - 1 messages). */
static int fold_channel(dg_store *st, const char *channel_id, int in_window)
{
    int rc = dg_store_turns_pending_flush(st);
    if (rc != DG_OK || st->pg)
        return rc;
    dg_stmt *s = dg_store_stmt(st, dg_sql_turns_window);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    snap_row v[DG_SNAP_WINDOW];
    int n = 0, status = DG_OK;
    char oldest[DG_SCOPE_ID_MAX] = "";
    while ((rc = dg_step(s)) == DG_ROW && n < DG_SNAP_WINDOW) {
        const char *k = dg_col_text(s, 0);
        size_t k_len = k ? strlen(k) : sizeof oldest;
        if (in_window && k_len < sizeof oldest)
            memcpy(oldest, k, k_len + 1);
        else
            in_window = 0; /* a key too long to bound by: every mark */
        if (dg_col_null(s, 1))
            continue;
        v[n] = (snap_row){.key = dg_store_col_dup(s, 1),
                          .post = dg_store_col_dup(s, 3),
                          .ord = dg_col_int64(s, 2),
                          .at_ms = dg_col_int64(s, 4)};
        dg_turn_state_init(&v[n].st);
        snap_read(s, &v[n].st);
        if (!v[n].key || (!v[n].post && !dg_col_null(s, 3)))
            status = DG_ERR_NOMEM;
        n++;
    }
    dg_reset(s);
    if (rc != DG_DONE && rc != DG_ROW && status == DG_OK)
        status = DG_ERR_IO;
    if (status == DG_OK && n)
        status = fold_rows(st, channel_id, v, n);
    for (int i = 0; i < n; i++) {
        free(v[i].key);
        free(v[i].post);
    }
    if (status != DG_OK || !n)
        return status;
    if (!(s = dg_store_stmt(st, SQL_SNAPS_CLEAR)))
        return DG_ERR_IO;
    dg_bind_text_borrowed(s, 1, channel_id);
    dg_bind_text_borrowed(s, 2, in_window ? oldest : "");
    return dg_store_run(s);
}

int dg_store_turns_fold_channel(dg_store *st, const char *channel_id)
{
    DG_ASSERT_IN_TXN(st);
    return fold_channel(st, channel_id, 0);
}

int dg_store_turns_fold_window(dg_store *st, const char *channel_id)
{
    DG_ASSERT_IN_TXN(st);
    return fold_channel(st, channel_id, 1);
}

/* The channels whose marks carry a state, those older than before_ms only
 * when before_ms > 0: *out malloc'd (each string too). */
static int snap_channels(dg_store *st, int64_t before_ms, char ***out, size_t *n)
{
    static const char SQL_SNAP_CHANNELS[] =
        "SELECT DISTINCT channel_id FROM turn_ledger WHERE k < '~' AND t_snap IS NOT NULL"
        " AND (?1 <= 0 OR at_ms < ?1)";
    *out = NULL;
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_SNAP_CHANNELS);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, before_ms);
    int rc, status = DG_OK;
    size_t cap = 0;
    while ((rc = dg_step(s)) == DG_ROW) {
        char *c = dg_store_col_dup(s, 0);
        if (!c || dg_grow(out, &cap, *n, sizeof **out, 8)) {
            free(c);
            status = DG_ERR_NOMEM;
            break;
        }
        (*out)[(*n)++] = c;
    }
    dg_reset(s);
    if (status == DG_OK && rc != DG_DONE)
        status = DG_ERR_IO;
    return status;
}

/* Fold every channel snap_channels names. */
int dg_store_turns_fold_before(dg_store *st, int64_t before_ms)
{
    DG_ASSERT_IN_TXN(st);
    if (st->pg)
        return DG_OK;
    char **v = NULL;
    size_t n = 0;
    int rc = snap_channels(st, before_ms, &v, &n);
    for (size_t i = 0; i < n; i++) {
        if (rc == DG_OK)
            rc = dg_store_turns_fold_channel(st, v[i]);
        free(v[i]);
    }
    free(v);
    return rc;
}

int dg_store_turns_fold_all(dg_store *st)
{
    DG_ASSERT_IN_TXN(st);
    int rc = dg_store_turns_pending_flush(st);
    return rc == DG_OK ? dg_store_turns_fold_before(st, 0) : rc;
}

/* '~thread;' is the first key after every '~thread:<root>'. */
static const char SQL_STATES_PRUNE[] =
    "DELETE FROM turn_ledger WHERE k >= '~thread:' AND k < '~thread;' AND active = 0"
    " AND at_ms < ?";

int dg_store_turns_states_prune(dg_store *st, int64_t before_ms, long *removed)
{
    DG_ASSERT_IN_TXN(st);
    return dg_store_turns_prune_before(st, SQL_STATES_PRUNE, before_ms, removed);
}

int dg_store_turns_active_scopes(dg_store *st, dg_scope **out, size_t *n)
{
    DG_ASSERT_IN_TXN(st);
    return dg_store_turns_scopes(st, 1, out, n);
}

int dg_store_turns_scopes(dg_store *st, int active_only, dg_scope **out, size_t *n)
{
    DG_ASSERT_IN_TXN(st);
    static const char SQL_SCOPES[] =
        "SELECT channel_id, k FROM turn_ledger WHERE k >= '~' AND (?1 = 0 OR active = 1)"
        " ORDER BY channel_id, k";
    *out = NULL;
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_SCOPES);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, active_only ? 1 : 0);
    int rc;
    size_t cap = 0;
    while ((rc = dg_step(s)) == DG_ROW) {
        dg_scope sc;
        if (scope_of_key(dg_col_text(s, 0), dg_col_text(s, 1), &sc) != DG_OK)
            continue; /* unreadable: skipped (awake_scan_skips_unreadable_rows) */
        if (dg_grow(out, &cap, *n, sizeof **out, 16)) {
            dg_reset(s);
            free(*out);
            *out = NULL;
            *n = 0;
            return DG_ERR_NOMEM;
        }
        (*out)[(*n)++] = sc;
    }
    dg_reset(s);
    if (rc != DG_DONE) {
        free(*out);
        *out = NULL;
        *n = 0;
        return DG_ERR_IO;
    }
    return DG_OK;
}
