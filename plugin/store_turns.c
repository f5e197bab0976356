/*
 * store_turns.c -- all SQL of the turn manager, and its schema (v2, v6, v14-v17).
 *
 * Tables are WITHOUT ROWID on their natural keys: one b-tree per table, so
 * an ingest touches as few pages as possible (the benchmark compares it
 * with a bare insert).
 */
#include "store_turns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "openclaw/plugin.h"
#include "store_internal.h"
#include "store_shared.h"
#include "store_transitions.h"

/*
 * Migration v1 -> v2. Masks are member positions as 64-bit integers
 * (bit i = position i). Positions of -1 mean "nobody". msg_seq of
 * dg_turn_state is not stored: it only relates a scope to the runs the
 * engine remembers in memory, which a restart forgets too.
 *
 * turn_ledger holds, per channel, two kinds of rows under one key space:
 * a dedup mark per ingested message (k = the message id, state columns
 * NULL) and the turn state of each scope of the channel (k = "~conv" or
 * "~thread:<root>", '~' sorting after every id). Discord ids grow, so a
 * new message's mark lands next to its channel's state rows: one ingest
 * (mark + state) usually dirties a single b-tree page, which is what a
 * commit costs.
 */
const char dg_schema_v2_turns[] =
    "CREATE TABLE turn_channels ("
    "  channel_id TEXT PRIMARY KEY,"
    "  mode INTEGER NOT NULL DEFAULT 0 CHECK (mode IN (0, 1, 2)),"
    "  initiator TEXT,"
    "  top_root TEXT,"
    "  bot_noticed INTEGER NOT NULL DEFAULT 0,"
    "  updated_ms INTEGER NOT NULL"
    ") WITHOUT ROWID;"
    "CREATE TABLE turn_members ("
    "  channel_id TEXT NOT NULL,"
    "  pos INTEGER NOT NULL CHECK (pos >= 0 AND pos < 64),"
    "  agent_id TEXT NOT NULL,"
    "  PRIMARY KEY (channel_id, pos),"
    "  UNIQUE (channel_id, agent_id)"
    ") WITHOUT ROWID;"
    "CREATE TABLE turn_ledger ("
    "  channel_id TEXT NOT NULL,"
    "  k TEXT NOT NULL,"
    "  at_ms INTEGER NOT NULL,"
    "  post_channel TEXT,"
    "  active INTEGER,"
    "  speaker INTEGER,"
    "  anchor INTEGER,"
    "  silent INTEGER,"
    "  mention INTEGER,"
    "  mention_done INTEGER,"
    "  consumed INTEGER,"
    "  owed INTEGER,"
    "  agent_msgs INTEGER,"
    "  rested INTEGER,"
    "  idle_reminded INTEGER,"
    "  handoff INTEGER,"
    "  permit INTEGER,"
    "  permit_ms INTEGER,"
    "  last_change_ms INTEGER,"
    "  PRIMARY KEY (channel_id, k),"
    "  CHECK ((k >= '~') = (active IS NOT NULL))"
    ") WITHOUT ROWID;";

/*
 * Migration v5 -> v6: agent_end runs already handled, per session. A host
 * that replays agent_end after a crash gives the same runId; the second
 * one must not advance the turn again. Pruned like the message marks.
 */
const char dg_schema_v6_turn_runs[] =
    "CREATE TABLE turn_runs ("
    "  session_key TEXT NOT NULL,"
    "  run_id TEXT NOT NULL,"
    "  at_ms INTEGER NOT NULL,"
    "  PRIMARY KEY (session_key, run_id)"
    ") WITHOUT ROWID;"
    "CREATE INDEX turn_runs_at ON turn_runs(at_ms);";

/*
 * Migration v13 -> v14 (issue 14): the message of the agent holding the
 * turn passes it on, and its ingest wrote the scope's state row beside the
 * message's mark: two rows for one message. While the store is alone on
 * its file, the mark carries the new state instead (in its own state
 * columns, t_snap naming the scope's state key) and every state row keeps
 * the order of the state it holds (t_ord), so a reader takes the newer of
 * the row and the states in the channel's newest DG_SNAP_WINDOW marks. A
 * mark's state is folded into its row (and cleared from the mark) before
 * it could sink below that window, before marks are pruned, and whenever a
 * store opens: another store never has to know about them.
 */
const char dg_schema_v14_mark_snapshots[] = "ALTER TABLE turn_ledger ADD COLUMN t_snap TEXT;";

/*
 * Migration v14 -> v15 (issue 14): a message that changed nothing (most
 * human messages to an awake channel) needs only its dedup mark, yet in
 * turn_ledger that row carries 25 NULL columns, and the whole row is also
 * a divider of the WITHOUT ROWID b-tree: it split half again as many pages
 * as a bare three-column insert. Such a mark, written at commit while the
 * store is alone, goes to turn_seen instead; a mark that carries a
 * transition or a state, and every mark a shared store claims, stays in
 * turn_ledger. A message's mark lives in one of the two; every check of a
 * mark reads both.
 */
const char dg_schema_v15_plain_marks[] =
    "CREATE TABLE turn_seen ("
    "  channel_id TEXT NOT NULL,"
    "  k TEXT NOT NULL CHECK (k < '~'),"
    "  at_ms INTEGER NOT NULL,"
    "  PRIMARY KEY (channel_id, k)"
    ") WITHOUT ROWID;";

/*
 * Migration v15 -> v16: a member's standing in the channel's turn order
 * (dg_member_standing). Members stored before it keep their place as agents
 * the host had shown in the channel (DG_MEMBER_READS).
 */
const char dg_schema_v16_member_standing[] =
    "ALTER TABLE turn_members ADD COLUMN standing INTEGER NOT NULL DEFAULT 1"
    " CHECK (standing BETWEEN 0 AND 4);";

/*
 * Migration v16 -> v17: when the moderator last posted the hint for a
 * mistyped `!dirigent` in a channel, so the hour between two hints holds
 * across a restart and across gateways sharing the store. One row per
 * channel that ever got one.
 */
const char dg_schema_v17_command_hints[] =
    "CREATE TABLE turn_command_hints ("
    "  channel_id TEXT PRIMARY KEY,"
    "  at_ms INTEGER NOT NULL"
    ") WITHOUT ROWID;";

void dg_turn_channel_row_clear(dg_turn_channel_row *r)
{
    if (!r)
        return;
    free(r->initiator);
    free(r->top_root);
    for (size_t i = 0; i < r->n_members; i++)
        free(r->members[i]);
    free(r->members);
    free(r->standing);
    memset(r, 0, sizeof *r);
}

/* Bind a string the caller keeps alive until the statement has run (the
 * hot paths step at once): no copy, unlike dg_store_bind_text. SQLite does
 * not read a bound value after the step; the next dg_store_stmt() drops it. */
static void bind_borrowed(dg_stmt *s, int idx, const char *text)
{
    dg_bind_text_borrowed(s, idx, text);
}

static int done(dg_stmt *s)
{
    return dg_step(s) == DG_DONE ? OC_OK : OC_ERR_IO;
}

/* A write of channel_id's turn state succeeded with rc: log the channel
 * for the other instances sharing the store (store_shared.h). */
static int logged(dg_store *st, const char *channel_id, int rc)
{
    return rc == OC_OK ? dg_store_change_note(st, channel_id) : rc;
}

static const char SQL_CHANNEL_GET[] =
    "SELECT mode, initiator, top_root, bot_noticed FROM turn_channels WHERE channel_id = ?";
static const char SQL_MEMBERS_GET[] =
    "SELECT pos, agent_id, standing FROM turn_members WHERE channel_id = ? ORDER BY pos";

int dg_store_turns_channel_load(dg_store *st, const char *channel_id, dg_turn_channel_row *out)
{
    memset(out, 0, sizeof *out);
    dg_stmt *s = dg_store_stmt(st, SQL_CHANNEL_GET);
    if (!s)
        return OC_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    int rc = dg_step(s);
    int found = rc == DG_ROW;
    if (found) {
        int mode = dg_col_int(s, 0);
        out->mode = (mode == 1) ? DG_MODE_DISCUSSION : (mode == 2) ? DG_MODE_CLOSED : DG_MODE_NORMAL;
        out->initiator = dg_store_col_dup(s, 1);
        out->top_root = dg_store_col_dup(s, 2);
        out->bot_noticed = dg_col_int(s, 3);
        /* A copy that failed must not read as "no initiator" / "no thread". */
        if ((!out->initiator && !dg_col_null(s, 1)) || (!out->top_root && !dg_col_null(s, 2)))
            goto nomem;
    } else if (rc != DG_DONE) {
        return OC_ERR_IO;
    }
    dg_reset(s);

    s = dg_store_stmt(st, SQL_MEMBERS_GET);
    if (!s)
        goto io;
    dg_store_bind_text(s, 1, channel_id);
    while ((rc = dg_step(s)) == DG_ROW) {
        int pos = dg_col_int(s, 0);
        if (pos != (int)out->n_members || pos >= DG_TURN_MAX_MEMBERS)
            break; /* positions are contiguous from 0; anything else is ignored */
        char **m = realloc(out->members, (out->n_members + 1) * sizeof *m);
        if (!m)
            goto nomem;
        out->members = m;
        unsigned char *sd = realloc(out->standing, out->n_members + 1);
        if (!sd)
            goto nomem;
        out->standing = sd;
        int standing = dg_col_int(s, 2);
        sd[out->n_members] = standing >= 0 && standing < DG_MEMBER_STANDINGS
                                 ? (unsigned char)standing : DG_MEMBER_READS;
        if (!(m[out->n_members] = dg_store_col_dup(s, 1)))
            goto nomem;
        out->n_members++;
        found = 1;
    }
    if (rc != DG_ROW && rc != DG_DONE)
        goto io;
    dg_reset(s);
    return found ? OC_OK : OC_ERR_NOT_FOUND;
nomem:
    dg_reset(s);
    dg_turn_channel_row_clear(out);
    return OC_ERR_NOMEM;
io:
    if (s)
        dg_reset(s);
    dg_turn_channel_row_clear(out);
    return OC_ERR_IO;
}

static const char SQL_CHANNEL_PUT[] =
    "INSERT INTO turn_channels (channel_id, mode, initiator, top_root, bot_noticed, updated_ms)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (channel_id) DO UPDATE SET"
    " mode = ?2, initiator = ?3, top_root = ?4, bot_noticed = ?5, updated_ms = ?6";

int dg_store_turns_channel_save(dg_store *st, const char *channel_id, dg_channel_mode mode,
                                const char *initiator, const char *top_root, int bot_noticed,
                                int64_t now_ms)
{
    dg_stmt *s = dg_store_stmt(st, SQL_CHANNEL_PUT);
    if (!s)
        return OC_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_bind_int64(s, 2, (int)mode);
    dg_store_bind_text(s, 3, initiator);
    dg_store_bind_text(s, 4, top_root);
    dg_bind_int64(s, 5, bot_noticed ? 1 : 0);
    dg_bind_int64(s, 6, now_ms);
    return logged(st, channel_id, done(s));
}

static const char SQL_MEMBER_ADD[] =
    "INSERT INTO turn_members (channel_id, pos, agent_id, standing) VALUES (?, ?, ?, ?)";

int dg_store_turns_member_add(dg_store *st, const char *channel_id, int pos, const char *agent_id,
                              dg_member_standing standing)
{
    if (pos < 0 || pos >= DG_TURN_MAX_MEMBERS || !agent_id || (unsigned)standing >=
        DG_MEMBER_STANDINGS)
        return OC_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, SQL_MEMBER_ADD);
    if (!s)
        return OC_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_bind_int64(s, 2, pos);
    dg_store_bind_text(s, 3, agent_id);
    dg_bind_int64(s, 4, (int)standing);
    return logged(st, channel_id, done(s));
}

static const char SQL_PER_AGENT_NOTE[] =
    "INSERT INTO dg_meta (key, value) VALUES ('reports_per_agent', '1')"
    " ON CONFLICT (key) DO NOTHING";
static const char SQL_PER_AGENT_GET[] =
    "SELECT count(*) FROM dg_meta WHERE key = 'reports_per_agent'";

int dg_store_turns_per_agent_note(dg_store *st)
{
    dg_stmt *s = dg_store_stmt(st, SQL_PER_AGENT_NOTE);
    return s ? done(s) : OC_ERR_IO;
}

int dg_store_turns_per_agent_get(dg_store *st, int *yes)
{
    *yes = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_PER_AGENT_GET);
    if (!s)
        return OC_ERR_IO;
    int rc = dg_step(s);
    if (rc == DG_ROW)
        *yes = dg_col_int(s, 0) > 0;
    dg_reset(s);
    return rc == DG_ROW ? OC_OK : OC_ERR_IO;
}

static const char SQL_MEMBER_COUNT[] = "SELECT count(*) FROM turn_members WHERE channel_id = ?";

int dg_store_turns_member_count(dg_store *st, const char *channel_id, int *n)
{
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_MEMBER_COUNT);
    if (!s)
        return OC_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    int rc = dg_step(s);
    if (rc == DG_ROW)
        *n = dg_col_int(s, 0);
    dg_reset(s);
    return rc == DG_ROW ? OC_OK : OC_ERR_IO;
}

static const char SQL_MEMBER_STANDING[] =
    "UPDATE turn_members SET standing = ? WHERE channel_id = ? AND pos = ?";

int dg_store_turns_member_standing(dg_store *st, const char *channel_id, int pos,
                                   dg_member_standing standing)
{
    if (pos < 0 || pos >= DG_TURN_MAX_MEMBERS || (unsigned)standing >= DG_MEMBER_STANDINGS)
        return OC_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, SQL_MEMBER_STANDING);
    if (!s)
        return OC_ERR_IO;
    dg_bind_int64(s, 1, (int)standing);
    dg_store_bind_text(s, 2, channel_id);
    dg_bind_int64(s, 3, pos);
    return logged(st, channel_id, done(s));
}

static const char SQL_MEMBERS_CLEAR[] = "DELETE FROM turn_members WHERE channel_id = ?";

int dg_store_turns_members_clear(dg_store *st, const char *channel_id)
{
    dg_stmt *s = dg_store_stmt(st, SQL_MEMBERS_CLEAR);
    if (!s)
        return OC_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    return logged(st, channel_id, done(s));
}

/* Ledger key of a scope's state row into buf. */
static const char *state_key(const dg_scope *sc, char *buf, size_t len)
{
    const char *parts[] = {sc->kind == DG_SCOPE_CONVERSATION ? "~conv" : "~thread:",
                           sc->kind == DG_SCOPE_CONVERSATION ? NULL : sc->root};
    dg_str_join(buf, len, parts, 2);
    return buf;
}

/*
 * The state columns of turn_ledger, DG_STATE_FIELDS of them, in the order
 * state_fields() lists them. A state row holds its scope's state there
 * (with `active`); a mark carrying a state (schema v14) holds it there too,
 * t_snap naming the scope's state key, `active` left NULL (the ledger's
 * CHECK: only state rows have it; a carried state is always active). As
 * integers most fields take no byte of the record: on a WITHOUT ROWID
 * table the whole row is also the b-tree's divider, so a smaller mark
 * splits fewer pages.
 */
#define STATE_COLS                                                                            \
    "speaker, anchor, silent, mention, mention_done, consumed, owed, agent_msgs, rested,"     \
    " idle_reminded, handoff, permit, permit_ms, last_change_ms"
#define STATE_COLS_NULL                                                                       \
    "speaker = NULL, anchor = NULL, silent = NULL, mention = NULL, mention_done = NULL,"      \
    " consumed = NULL, owed = NULL, agent_msgs = NULL, rested = NULL, idle_reminded = NULL,"  \
    " handoff = NULL, permit = NULL, permit_ms = NULL, last_change_ms = NULL"

/* The kept fields of t (but `active`), in STATE_COLS' order, into f. */
static void state_fields(const dg_turn_state *t, int64_t f[DG_STATE_FIELDS])
{
    const int64_t v[DG_STATE_FIELDS] = {
        t->speaker, t->anchor, (int64_t)t->silent, (int64_t)t->mention,
        (int64_t)t->mention_done, (int64_t)t->consumed, (int64_t)t->owed, t->agent_msgs,
        t->rested, t->idle_reminded, t->handoff, t->permit, t->permit_ms, t->last_change_ms};
    memcpy(f, v, sizeof v);
}

/* Columns col .. col+13 of the current row (STATE_COLS' order) into *t's
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
}

/* Bind f as ?idx .. ?idx+13 (STATE_COLS' order). */
static void state_bind(dg_stmt *s, int idx, const int64_t f[DG_STATE_FIELDS])
{
    for (int i = 0; i < DG_STATE_FIELDS; i++)
        dg_bind_int64(s, idx + i, f[i]);
}

static const char SQL_SCOPE_GET[] =
    "SELECT active, post_channel, t_ord, " STATE_COLS
    " FROM turn_ledger WHERE channel_id = ? AND k = ?";

/* The channel's newest marks, where a state a mark carries is found. */
#define SNAP_WINDOW_SQL(cols)                                                                 \
    "SELECT " cols " FROM turn_ledger WHERE channel_id = ? AND k < '~' ORDER BY k DESC LIMIT 16"
static const char SQL_WINDOW[] =
    SNAP_WINDOW_SQL("k, t_snap, t_ord, post_channel, at_ms, " STATE_COLS);
enum { WINDOW_STATE_COL = 5 }; /* where STATE_COLS start in SQL_WINDOW */
_Static_assert(DG_SNAP_WINDOW == 16, "SNAP_WINDOW_SQL's LIMIT is DG_SNAP_WINDOW");

/* Whether the current row of SQL_WINDOW carries a state of key. */
static int snap_is(dg_stmt *s, const char *key)
{
    const char *snap = dg_col_text(s, 1);
    return snap && strcmp(snap, key) == 0;
}

/* The state the current row of SQL_WINDOW carries into *t (a carried state
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
    dg_stmt *s = dg_store_stmt(st, SQL_WINDOW);
    if (!s)
        return OC_ERR_IO;
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
            return OC_ERR_NOMEM;
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
        return OC_ERR_IO;
    }
    *ord = best;
    return found;
}

int dg_store_turns_scope_load(dg_store *st, const dg_scope *sc, dg_turn_state *t,
                              char **post_channel)
{
    dg_turn_state_init(t);
    if (post_channel)
        *post_channel = NULL;
    dg_stmt *s = dg_store_stmt(st, SQL_SCOPE_GET);
    if (!s)
        return OC_ERR_IO;
    char k[DG_SCOPE_ID_MAX + 16];
    dg_store_bind_text(s, 1, sc->channel_id);
    dg_store_bind_text(s, 2, state_key(sc, k, sizeof k));
    int rc = dg_step(s);
    if (rc == DG_DONE) {
        dg_reset(s);
        return OC_ERR_NOT_FOUND;
    }
    if (rc != DG_ROW) {
        dg_reset(s);
        return OC_ERR_IO;
    }
    t->active = dg_col_int(s, 0);
    state_read(s, 3, t);
    int64_t row_ord = dg_col_int64(s, 2);
    dg_store_saw_ord(st, row_ord);
    int status = OC_OK;
    /* A copy that failed must not read as "post in the channel itself". */
    if (post_channel && !(*post_channel = dg_store_col_dup(s, 1)) && !dg_col_null(s, 1))
        status = OC_ERR_NOMEM;
    dg_reset(s);
    if (status != OC_OK || st->pg)
        return status; /* PostgreSQL is shared: its marks never carry a state */
    /* A newer state a mark carries (schema v14). */
    dg_turn_state v = *t;
    char *post = NULL;
    int64_t ord = 0;
    int found = snap_newest(st, sc->channel_id, k, row_ord, &v, post_channel ? &post : NULL,
                            &ord);
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
    return OC_OK;
}

static const char SQL_SCOPE_ADD[] =
    "INSERT INTO turn_ledger (channel_id, k, at_ms, post_channel, t_ord, active, " STATE_COLS ")"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
    " ?19, ?20) ON CONFLICT DO NOTHING";
/* The row is written whole: on a WITHOUT ROWID table an UPDATE is a delete
 * and an insert as well, and costs more (it reads the old record first);
 * REPLACE writes the same row for less. */
static const char SQL_SCOPE_SET[] =
    "REPLACE INTO turn_ledger (channel_id, k, at_ms, post_channel, t_ord, active, " STATE_COLS ")"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
    " ?19, ?20)";
/* PostgreSQL has no REPLACE: the same whole-row write as an upsert. */
static const char SQL_SCOPE_SET_PG[] =
    "INSERT INTO turn_ledger (channel_id, k, at_ms, post_channel, t_ord, active, " STATE_COLS ")"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
    " ?19, ?20) ON CONFLICT (channel_id, k) DO UPDATE SET at_ms = excluded.at_ms,"
    " post_channel = excluded.post_channel, active = excluded.active,"
    " speaker = excluded.speaker, anchor = excluded.anchor, silent = excluded.silent,"
    " mention = excluded.mention, mention_done = excluded.mention_done,"
    " consumed = excluded.consumed, owed = excluded.owed, agent_msgs = excluded.agent_msgs,"
    " rested = excluded.rested, idle_reminded = excluded.idle_reminded,"
    " handoff = excluded.handoff, permit = excluded.permit, permit_ms = excluded.permit_ms,"
    " last_change_ms = excluded.last_change_ms, t_ord = excluded.t_ord";

/* The state row of sc as t, holding the state of order ord. */
static int scope_write(dg_store *st, const dg_scope *sc, const char *post_channel,
                       const dg_turn_state *t, int exists, int64_t now_ms, int64_t ord);

int dg_store_turns_scope_save(dg_store *st, const dg_scope *sc, const char *post_channel,
                              const dg_turn_state *t, int exists, int64_t now_ms)
{
    return scope_write(st, sc, post_channel, t, exists, now_ms, dg_store_next_ord(st, now_ms));
}

static int scope_write(dg_store *st, const dg_scope *sc, const char *post_channel,
                       const dg_turn_state *t, int exists, int64_t now_ms, int64_t ord)
{
    dg_stmt *s = dg_store_stmt(st, !exists ? SQL_SCOPE_ADD : st->pg ? SQL_SCOPE_SET_PG
                                                                     : SQL_SCOPE_SET);
    if (!s)
        return OC_ERR_IO;
    char k[DG_SCOPE_ID_MAX + 16];
    int i = 1;
    bind_borrowed(s, i++, sc->channel_id);
    bind_borrowed(s, i++, state_key(sc, k, sizeof k));
    dg_bind_int64(s, i++, now_ms);
    bind_borrowed(s, i++, post_channel);
    dg_bind_int64(s, i++, ord);
    dg_bind_int64(s, i++, t->active);
    int64_t f[DG_STATE_FIELDS];
    state_fields(t, f);
    state_bind(s, i, f);
    int rc = dg_step(s);
    if (rc == DG_DONE && !exists && dg_changes(s) == 0)
        return OC_ERR_INTERNAL; /* the caller's belief about the row was wrong: a bug */
    return logged(st, sc->channel_id, rc == DG_DONE ? OC_OK : OC_ERR_IO);
}

static const char SQL_SCOPES_CLEAR[] =
    "DELETE FROM turn_ledger WHERE channel_id = ? AND k >= '~'";

int dg_store_turns_scopes_clear(dg_store *st, const char *channel_id)
{
    dg_stmt *s = dg_store_stmt(st, SQL_SCOPES_CLEAR);
    if (!s)
        return OC_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    return logged(st, channel_id, done(s));
}

static const char SQL_SEEN_CLAIM[] =
    "INSERT INTO turn_ledger (channel_id, k, at_ms) SELECT ?1, ?2, ?3"
    " WHERE NOT EXISTS (SELECT 1 FROM turn_seen WHERE channel_id = ?1 AND k = ?2)"
    " ON CONFLICT DO NOTHING";
/* PostgreSQL: turn_seen stays empty there (it is written only by a SQLite
 * store alone on its file), and its parameters keep their types this way. */
static const char SQL_SEEN_CLAIM_PG[] =
    "INSERT INTO turn_ledger (channel_id, k, at_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING";

/* INSERT ... ON CONFLICT DO NOTHING of (a, b, now) with one of the claim statements; *fresh
 * says whether the row is new (the first claim wins). */
static int claim_pair(dg_store *st, const char *sql, const char *a, const char *b,
                      int64_t now_ms, int *fresh)
{
    dg_stmt *s = dg_store_stmt(st, sql);
    if (!s)
        return OC_ERR_IO;
    bind_borrowed(s, 1, a);
    bind_borrowed(s, 2, b);
    dg_bind_int64(s, 3, now_ms);
    if (dg_step(s) != DG_DONE)
        return OC_ERR_IO;
    *fresh = dg_changes(s) > 0;
    return OC_OK;
}

/* One of the prune statements, whose only parameter is a cut-off time. */
static int prune_before(dg_store *st, const char *sql, int64_t before_ms, long *removed)
{
    dg_stmt *s = dg_store_stmt(st, sql);
    if (!s)
        return OC_ERR_IO;
    dg_bind_int64(s, 1, before_ms);
    if (dg_step(s) != DG_DONE)
        return OC_ERR_IO;
    if (removed)
        *removed = (long)dg_changes(s);
    return OC_OK;
}

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
/* ?3 .. ?10: dg_store_transition_bind; ?12 .. ?27: the scope state it
 * carries (its key, post channel, STATE_COLS), all NULL when none. */
static const char SQL_SEEN_PUT_TR[] =
    "INSERT INTO turn_ledger (channel_id, k, at_ms, t_scope, t_ord, t_cause, t_before, t_after,"
    " t_state, t_passed, t_agent_msgs, t_snap, post_channel, " STATE_COLS ")"
    " VALUES (?1, ?2, ?11, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
    " ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)";

void dg_store_turns_pending_drop(dg_store *st)
{
    free(st->pending.strings);
    free(st->pending.snap_post);
    memset(&st->pending, 0, sizeof st->pending);
}

/* The pending mark, written now. at_commit: nothing can attach to it any
 * more, so one that carries nothing goes to turn_seen; before that it goes
 * to turn_ledger, where a transition of its message may still be written
 * into it (store_transitions.c, SQL_MARK). */
static int pending_write(dg_store *st, int at_commit)
{
    struct dg_pending_mark *p = &st->pending;
    if (!p->set)
        return OC_OK;
    int plain = !p->has_tr && at_commit;
    /* A turn_seen mark is not in the window (SQL_WINDOW reads turn_ledger):
     * it pushes no state towards the fold. */
    if (plain && p->counted && p->hint && p->hint->epoch == st->alone_epoch)
        p->hint->since_snap--;
    dg_stmt *s = dg_store_stmt(st, p->has_tr ? SQL_SEEN_PUT_TR
                                   : plain ? SQL_SEEN_PUT_PLAIN : SQL_SEEN_PUT);
    int rc = OC_ERR_IO;
    if (s) {
        bind_borrowed(s, 1, p->channel);
        bind_borrowed(s, 2, p->id);
        if (p->has_tr) {
            dg_store_transition_bind(s, &p->tr, p->ord);
            dg_bind_int64(s, 11, p->at_ms);
            if (p->has_snap) {
                bind_borrowed(s, 12, p->snap_key);
                bind_borrowed(s, 13, p->snap_post);
                state_bind(s, 14, p->snap);
            }
        } else {
            dg_bind_int64(s, 3, p->at_ms);
        }
        rc = dg_step(s) == DG_DONE ? OC_OK : OC_ERR_IO;
        dg_reset(s);
    }
    dg_store_turns_pending_drop(st); /* written, or the transaction is lost anyway */
    return rc;
}

int dg_store_turns_pending_flush(dg_store *st)
{
    return pending_write(st, 0);
}

int dg_store_turns_pending_commit(dg_store *st)
{
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
    struct dg_pending_mark *p = &st->pending;
    if (!p->set || !t->message_id || strcmp(p->id, t->message_id) ||
        strcmp(p->channel, channel_id))
        return 0;
    char kept[256];
    dg_transition m;
    dg_store_mark_transition(t, kept, sizeof kept, &m);
    const char *f[] = {m.scope, m.cause, m.speaker_before, m.speaker_after, m.state,
                       m.passed ? m.passed : ""};
    size_t len = 0;
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        len += f[i] ? strlen(f[i]) + 1 : 0;
    char *buf = malloc(len ? len : 1);
    if (!buf)
        return OC_ERR_NOMEM;
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
    if (!st->db || !st->in_txn || dg_store_turns_pending_flush(st) != OC_OK)
        return;
    dg_stmt *s = dg_store_stmt(st, SQL_WINDOW);
    if (!s)
        return;
    bind_borrowed(s, 1, channel_id);
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
    bind_borrowed(s, 1, channel_id);
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
        return OC_ERR_IO;
    bind_borrowed(s, 1, channel_id);
    bind_borrowed(s, 2, message_id);
    int rc = dg_step(s);
    dg_reset(s);
    if (rc != DG_ROW && rc != DG_DONE)
        return OC_ERR_IO;
    *found = rc == DG_ROW;
    if (hint && hint->epoch != st->alone_epoch)
        dg_store_turns_hint_load(st, channel_id, hint);
    return OC_OK;
}

static int fold_channel(dg_store *st, const char *channel_id, int in_window);

int dg_store_turns_seen_claim_hinted(dg_store *st, const char *channel_id,
                                     const char *message_id, int64_t now_ms,
                                     dg_mark_hint *hint, int *fresh)
{
    *fresh = 0;
    if (!message_id || !*message_id || message_id[0] == '~')
        return OC_ERR_INVALID; /* '~' starts the keys of state rows */
    int rc = dg_store_turns_pending_flush(st); /* an earlier message's, first */
    if (rc != OC_OK)
        return rc;
    int alone = dg_store_alone_in_txn(st);
    if (!channel_id || strlen(channel_id) >= DG_SCOPE_ID_MAX ||
        strlen(message_id) >= DG_SCOPE_ID_MAX || !alone || !hint) {
        /* A mark nobody counts could push a state out of the window. */
        if (alone && channel_id && (rc = dg_store_turns_fold_channel(st, channel_id)) != OC_OK)
            return rc;
        return claim_pair(st, st->pg ? SQL_SEEN_CLAIM_PG : SQL_SEEN_CLAIM, channel_id,
                          message_id, now_ms, fresh);
    }
    st->txn_hinted = 1;
    int above = hint && hint->epoch == st->alone_epoch && strcmp(message_id, hint->newest) > 0;
    if (!above) {
        int found = 0;
        if ((rc = seen_lookup(st, channel_id, message_id, hint, &found)) != OC_OK)
            return rc;
        if (found)
            return OC_OK; /* another account reported it already */
    }
    int valid = hint->epoch == st->alone_epoch, counted = 0;
    /* One more mark above a state some mark carries: fold before it sinks
     * out of the window. */
    if (valid && hint->since_snap >= DG_SNAP_WINDOW - 1) {
        if ((rc = fold_channel(st, channel_id, 1)) != OC_OK)
            return rc;
        hint->since_snap = -1;
    } else if (valid && hint->since_snap >= 0) {
        hint->since_snap++; /* taken back if it goes to turn_seen (pending_write) */
        counted = 1;
    } else if (!valid && (rc = dg_store_turns_fold_channel(st, channel_id)) != OC_OK) {
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
    return OC_OK;
}

int dg_store_turns_scope_save_for(dg_store *st, const dg_scope *sc, const char *post_channel,
                                  const dg_turn_state *t, int exists, int was_active,
                                  const char *message_id, int64_t now_ms)
{
    struct dg_pending_mark *p = &st->pending;
    /* Only a scope that stays awake: the rows then say which scopes are
     * active (the sweeper's list) and which may be pruned as dormant. */
    if (!message_id || !p->set || !p->has_tr || p->has_snap || !p->newest || !p->hint ||
        p->hint->epoch != st->alone_epoch || !exists || !was_active || !t->active ||
        strcmp(p->id, message_id) || strcmp(p->channel, sc->channel_id))
        return dg_store_turns_scope_save(st, sc, post_channel, t, exists, now_ms);
    if (post_channel && !(p->snap_post = strdup(post_channel)))
        return OC_ERR_NOMEM;
    state_key(sc, p->snap_key, sizeof p->snap_key);
    state_fields(t, p->snap);
    p->has_snap = 1;
    if (p->hint->since_snap < 0)
        p->hint->since_snap = 0;
    return logged(st, sc->channel_id, OC_OK);
}

/* The scope of a state row's key, or OC_ERR_INVALID. */
static int scope_of_key(const char *channel_id, const char *k, dg_scope *sc)
{
    return !channel_id || !k ? OC_ERR_INVALID
           : strcmp(k, "~conv") == 0 ? dg_scope_conversation(channel_id, sc)
           : strncmp(k, "~thread:", 8) == 0 ? dg_scope_thread(channel_id, k + 8, sc)
           : OC_ERR_INVALID;
}

/* One state a mark of the window carries (fold_channel). */
typedef struct snap_row {
    char *key, *post;
    int64_t ord, at_ms;
    dg_turn_state st;
} snap_row;

/* ?2: the oldest mark to look at ('' every one of the channel). */
static const char SQL_SNAPS_CLEAR[] =
    "UPDATE turn_ledger SET t_snap = NULL, " STATE_COLS_NULL
    " WHERE channel_id = ?1 AND k >= ?2 AND k < '~' AND t_snap IS NOT NULL";
static const char SQL_ROW_ORD[] =
    "SELECT t_ord FROM turn_ledger WHERE channel_id = ? AND k = ?";

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
        if (!newest || scope_of_key(channel_id, k, &sc) != OC_OK)
            continue;
        dg_stmt *s = dg_store_stmt(st, SQL_ROW_ORD);
        if (!s)
            return OC_ERR_IO;
        bind_borrowed(s, 1, channel_id);
        bind_borrowed(s, 2, k);
        int rc = dg_step(s);
        int64_t row_ord = rc == DG_ROW ? dg_col_int64(s, 0) : 0;
        dg_reset(s);
        if (rc != DG_ROW && rc != DG_DONE)
            return OC_ERR_IO;
        if (rc == DG_DONE || row_ord >= v[i].ord)
            continue; /* no row (the scope was cleared), or a newer one */
        if ((rc = scope_write(st, &sc, v[i].post, &v[i].st, 1, v[i].at_ms, v[i].ord)) != OC_OK)
            return rc;
    }
    return OC_OK;
}

/* Fold the states the channel's window carries into their rows and clear
 * them from the marks: from every mark of the channel, or, in_window, from
 * the window's marks only (the claim's fold, whose hint knows no state is
 * carried below: a channel keeps thousands of marks, and a clear of all of
 * them read each one every DG_SNAP_WINDOW - 1 messages). */
static int fold_channel(dg_store *st, const char *channel_id, int in_window)
{
    int rc = dg_store_turns_pending_flush(st);
    if (rc != OC_OK || st->pg)
        return rc;
    dg_stmt *s = dg_store_stmt(st, SQL_WINDOW);
    if (!s)
        return OC_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    snap_row v[DG_SNAP_WINDOW];
    int n = 0, status = OC_OK;
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
        v[n] = (snap_row){.key = dg_store_col_dup(s, 1), .post = dg_store_col_dup(s, 3),
                          .ord = dg_col_int64(s, 2), .at_ms = dg_col_int64(s, 4)};
        dg_turn_state_init(&v[n].st);
        snap_read(s, &v[n].st);
        if (!v[n].key || (!v[n].post && !dg_col_null(s, 3)))
            status = OC_ERR_NOMEM;
        n++;
    }
    dg_reset(s);
    if (rc != DG_DONE && rc != DG_ROW && status == OC_OK)
        status = OC_ERR_IO;
    if (status == OC_OK && n)
        status = fold_rows(st, channel_id, v, n);
    for (int i = 0; i < n; i++) {
        free(v[i].key);
        free(v[i].post);
    }
    if (status != OC_OK || !n)
        return status;
    if (!(s = dg_store_stmt(st, SQL_SNAPS_CLEAR)))
        return OC_ERR_IO;
    bind_borrowed(s, 1, channel_id);
    bind_borrowed(s, 2, in_window ? oldest : "");
    return done(s);
}

int dg_store_turns_fold_channel(dg_store *st, const char *channel_id)
{
    return fold_channel(st, channel_id, 0);
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
        return OC_ERR_IO;
    dg_bind_int64(s, 1, before_ms);
    int rc, status = OC_OK;
    size_t cap = 0;
    while ((rc = dg_step(s)) == DG_ROW) {
        char *c = dg_store_col_dup(s, 0);
        if (!c || dg_grow(out, &cap, *n, sizeof **out, 8)) {
            free(c);
            status = OC_ERR_NOMEM;
            break;
        }
        (*out)[(*n)++] = c;
    }
    dg_reset(s);
    if (status == OC_OK && rc != DG_DONE)
        status = OC_ERR_IO;
    return status;
}

/* Fold every channel snap_channels names. */
static int fold_channels(dg_store *st, int64_t before_ms)
{
    if (st->pg)
        return OC_OK;
    char **v = NULL;
    size_t n = 0;
    int rc = snap_channels(st, before_ms, &v, &n);
    for (size_t i = 0; i < n; i++) {
        if (rc == OC_OK)
            rc = dg_store_turns_fold_channel(st, v[i]);
        free(v[i]);
    }
    free(v);
    return rc;
}

int dg_store_turns_fold_all(dg_store *st)
{
    int rc = dg_store_turns_pending_flush(st);
    return rc == OC_OK ? fold_channels(st, 0) : rc;
}

/* Ids are snowflakes: by length, then by digits; '~' starts state rows. */
#define SEEN_NEWER_IN(table)                                                                  \
    "SELECT 1 FROM " table " WHERE channel_id = ?1 AND k < '~'"                               \
    " AND (length(k) > length(?2) OR (length(k) = length(?2) AND k > ?2))"
static const char SQL_SEEN_NEWER[] =
    SEEN_NEWER_IN("turn_seen") " UNION ALL " SEEN_NEWER_IN("turn_ledger") " LIMIT 1";

int dg_store_turns_seen_since(dg_store *st, const char *channel_id, const char *message_id,
                              int64_t *at_ms, int *newer)
{
    int flushed = dg_store_turns_pending_flush(st);
    if (flushed != OC_OK)
        return flushed;
    *at_ms = 0;
    *newer = 0;
    if (!message_id || !*message_id || message_id[0] == '~')
        return OC_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, SQL_SEEN_NEWER);
    if (!s)
        return OC_ERR_IO;
    bind_borrowed(s, 1, channel_id);
    bind_borrowed(s, 2, message_id);
    /* Each statement reset before the next: one left on a row keeps its
     * read transaction after COMMIT, and the next BEGIN IMMEDIATE after
     * another connection's commit fails at once (a stale snapshot). */
    int rc = dg_step(s);
    dg_reset(s);
    if (rc != DG_ROW && rc != DG_DONE)
        return OC_ERR_IO;
    *newer = rc == DG_ROW;
    if (!(s = dg_store_stmt(st, SQL_SEEN_AT)))
        return OC_ERR_IO;
    bind_borrowed(s, 1, channel_id);
    bind_borrowed(s, 2, message_id);
    rc = dg_step(s);
    if (rc == DG_ROW)
        *at_ms = dg_col_int64(s, 0);
    dg_reset(s);
    return rc == DG_ROW || rc == DG_DONE ? OC_OK : OC_ERR_IO;
}

static const char SQL_SEEN_PRUNE[] = "DELETE FROM turn_ledger WHERE k < '~' AND at_ms < ?";
static const char SQL_SEEN_PRUNE_PLAIN[] = "DELETE FROM turn_seen WHERE at_ms < ?";

int dg_store_turns_seen_prune(dg_store *st, int64_t before_ms, long *removed)
{
    int flushed = dg_store_turns_pending_flush(st);
    if (flushed == OC_OK)
        flushed = fold_channels(st, before_ms > 0 ? before_ms : 1); /* states before marks go */
    if (flushed != OC_OK)
        return flushed;
    long marked = 0, plain = 0;
    int rc = dg_store_transitions_rescue(st, before_ms);
    if (rc == OC_OK)
        rc = prune_before(st, SQL_SEEN_PRUNE, before_ms, &marked);
    if (rc == OC_OK)
        rc = prune_before(st, SQL_SEEN_PRUNE_PLAIN, before_ms, &plain);
    if (rc == OC_OK && removed)
        *removed = marked + plain;
    return rc;
}

/* '~thread;' is the first key after every '~thread:<root>'. */
static const char SQL_STATES_PRUNE[] =
    "DELETE FROM turn_ledger WHERE k >= '~thread:' AND k < '~thread;' AND active = 0"
    " AND at_ms < ?";

int dg_store_turns_states_prune(dg_store *st, int64_t before_ms, long *removed)
{
    return prune_before(st, SQL_STATES_PRUNE, before_ms, removed);
}

static const char SQL_RUN_CLAIM[] =
    "INSERT INTO turn_runs (session_key, run_id, at_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING";

int dg_store_turns_run_claim(dg_store *st, const char *session_key, const char *run_id,
                             int64_t now_ms, int *fresh)
{
    *fresh = 0;
    if (!session_key || !*session_key || !run_id || !*run_id)
        return OC_ERR_INVALID;
    return claim_pair(st, SQL_RUN_CLAIM, session_key, run_id, now_ms, fresh);
}

static const char SQL_RUNS_PRUNE[] = "DELETE FROM turn_runs WHERE at_ms < ?";

int dg_store_turns_runs_prune(dg_store *st, int64_t before_ms, long *removed)
{
    return prune_before(st, SQL_RUNS_PRUNE, before_ms, removed);
}

int dg_store_turns_runs_hourly(dg_store *st, int64_t since_ms, int64_t *hour, long *count,
                               size_t max, size_t *n)
{
    static const char SQL_RUNS_HOURLY[] =
        "SELECT at_ms / 3600000, count(*) FROM turn_runs WHERE at_ms >= ?1"
        " GROUP BY at_ms / 3600000 ORDER BY 1";
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_RUNS_HOURLY);
    if (!s)
        return OC_ERR_IO;
    dg_bind_int64(s, 1, since_ms);
    int rc;
    while ((rc = dg_step(s)) == DG_ROW && *n < max) {
        hour[*n] = dg_col_int64(s, 0);
        count[*n] = (long)dg_col_int64(s, 1);
        (*n)++;
    }
    dg_reset(s);
    return rc == DG_ERR ? OC_ERR_IO : OC_OK;
}

int dg_store_turns_active_scopes(dg_store *st, dg_scope **out, size_t *n)
{
    return dg_store_turns_scopes(st, 1, out, n);
}

int dg_store_turns_scopes(dg_store *st, int active_only, dg_scope **out, size_t *n)
{
    static const char SQL_SCOPES[] =
        "SELECT channel_id, k FROM turn_ledger WHERE k >= '~' AND (?1 = 0 OR active = 1)"
        " ORDER BY channel_id, k";
    *out = NULL;
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_SCOPES);
    if (!s)
        return OC_ERR_IO;
    dg_bind_int64(s, 1, active_only ? 1 : 0);
    int rc;
    size_t cap = 0;
    while ((rc = dg_step(s)) == DG_ROW) {
        dg_scope sc;
        if (scope_of_key(dg_col_text(s, 0), dg_col_text(s, 1), &sc) != OC_OK)
            continue; /* unreadable: skipped (awake_scan_skips_unreadable_rows) */
        if (dg_grow(out, &cap, *n, sizeof **out, 16)) {
            dg_reset(s);
            free(*out);
            *out = NULL;
            *n = 0;
            return OC_ERR_NOMEM;
        }
        (*out)[(*n)++] = sc;
    }
    dg_reset(s);
    if (rc != DG_DONE) {
        free(*out);
        *out = NULL;
        *n = 0;
        return OC_ERR_IO;
    }
    return OC_OK;
}

int dg_store_turns_count(dg_store *st, const char *what, long *out)
{
    int flushed = dg_store_turns_pending_flush(st);
    if (flushed != OC_OK)
        return flushed;
    static const char SQL_N_SEEN[] = "SELECT (SELECT count(*) FROM turn_seen)"
                                     " + (SELECT count(*) FROM turn_ledger WHERE k < '~')";
    static const char SQL_N_SCOPES[] = "SELECT count(*) FROM turn_ledger WHERE k >= '~'";
    static const char SQL_N_MEMBERS[] = "SELECT count(*) FROM turn_members";
    const char *sql = NULL;
    if (strcmp(what, "seen") == 0)
        sql = SQL_N_SEEN;
    else if (strcmp(what, "scopes") == 0)
        sql = SQL_N_SCOPES;
    else if (strcmp(what, "members") == 0)
        sql = SQL_N_MEMBERS;
    else
        return OC_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, sql);
    if (!s)
        return OC_ERR_IO;
    int rc = dg_step(s) == DG_ROW ? OC_OK : OC_ERR_IO;
    if (rc == OC_OK)
        *out = (long)dg_col_int64(s, 0);
    dg_reset(s);
    return rc;
}

static const char SQL_HINT_LAST[] = "SELECT at_ms FROM turn_command_hints WHERE channel_id = ?";
static const char SQL_HINT_PUT[] =
    "INSERT INTO turn_command_hints (channel_id, at_ms) VALUES (?1, ?2)"
    " ON CONFLICT (channel_id) DO UPDATE SET at_ms = ?2";

int dg_store_turns_hint_claim(dg_store *st, const char *channel_id, int64_t now_ms,
                              int64_t cooldown_ms, int *claimed)
{
    *claimed = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_HINT_LAST);
    if (!s)
        return OC_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    int rc = dg_step(s);
    /* A clock set back (a last hint "in the future") waits too. */
    int due = rc == DG_DONE ||
              (rc == DG_ROW && (now_ms - dg_col_int64(s, 0) >= cooldown_ms ||
                                dg_col_int64(s, 0) > now_ms + cooldown_ms));
    dg_reset(s);
    if (rc != DG_ROW && rc != DG_DONE)
        return OC_ERR_IO;
    if (!due)
        return OC_OK;
    if (!(s = dg_store_stmt(st, SQL_HINT_PUT)))
        return OC_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_bind_int64(s, 2, now_ms);
    if ((rc = done(s)))
        return rc;
    *claimed = 1;
    return OC_OK;
}
