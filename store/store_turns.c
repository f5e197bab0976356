/*
 * store_turns.c -- the SQL of the turn manager's channels (mode, turn
 * order, member standing), handled runs and command hints, and the turn
 * tables' schema (v2, v6, v14-v17). A scope's state rows are
 * store_turns_state.c's, the dedup marks store_turns_marks.c's; what the
 * three share is store_turns_int.h.
 *
 * Tables are WITHOUT ROWID on their natural keys: one b-tree per table, so
 * an ingest touches as few pages as possible (the benchmark compares it
 * with a bare insert).
 */
#include "store_turns.h"

#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "store_instances.h"
#include "store_turns_int.h"

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
const char dg_schema_v2_turns[] = "CREATE TABLE turn_channels ("
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
const char dg_schema_v6_turn_runs[] = "CREATE TABLE turn_runs ("
                                      "  session_key TEXT NOT NULL,"
                                      "  run_id TEXT NOT NULL,"
                                      "  at_ms INTEGER NOT NULL,"
                                      "  PRIMARY KEY (session_key, run_id)"
                                      ") WITHOUT ROWID;"
                                      "CREATE INDEX turn_runs_at ON turn_runs(at_ms);";

/*
 * Migration v13 -> v14: the message of the agent holding the
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
 * Migration v14 -> v15: a message that changed nothing (most
 * human messages to an awake channel) needs only its dedup mark, yet in
 * turn_ledger that row carries 25 NULL columns, and the whole row is also
 * a divider of the WITHOUT ROWID b-tree: it split half again as many pages
 * as a bare three-column insert. Such a mark, written at commit while the
 * store is alone, goes to turn_seen instead; a mark that carries a
 * transition or a state, and every mark a shared store claims, stays in
 * turn_ledger. A message's mark lives in one of the two; every check of a
 * mark reads both.
 */
const char dg_schema_v15_plain_marks[] = "CREATE TABLE turn_seen ("
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
const char dg_schema_v17_command_hints[] = "CREATE TABLE turn_command_hints ("
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

/* A write of channel_id's turn state succeeded with rc: log the channel
 * for the other instances sharing the store (store_instances.h). */
int dg_store_turns_logged(dg_store *st, const char *channel_id, int rc)
{
    DG_ASSERT_IN_TXN(st);
    return rc == DG_OK ? dg_store_change_note(st, channel_id) : rc;
}

static const char SQL_CHANNEL_GET[] =
    "SELECT mode, initiator, top_root, bot_noticed, platform FROM turn_channels"
    " WHERE channel_id = ?";
static const char SQL_MEMBERS_GET[] =
    "SELECT pos, agent_id, standing FROM turn_members WHERE channel_id = ? ORDER BY pos";

int dg_store_turns_channel_load(dg_store *st, const char *channel_id, dg_turn_channel_row *out)
{
    DG_ASSERT_IN_TXN(st);
    memset(out, 0, sizeof *out);
    dg_stmt *s = dg_store_stmt(st, SQL_CHANNEL_GET);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    int rc = dg_step(s);
    int found = rc == DG_ROW;
    if (found) {
        int mode = dg_col_int(s, 0);
        out->mode = (mode == 1)   ? DG_MODE_DISCUSSION
                    : (mode == 2) ? DG_MODE_CLOSED
                                  : DG_MODE_NORMAL;
        out->initiator = dg_store_col_dup(s, 1);
        out->top_root = dg_store_col_dup(s, 2);
        out->bot_noticed = dg_col_int(s, 3);
        out->platform = dg_store_platform_col(dg_col_text(s, 4));
        /* A copy that failed must not read as "no initiator" / "no thread". */
        if ((!out->initiator && !dg_col_null(s, 1)) || (!out->top_root && !dg_col_null(s, 2)))
            goto nomem;
    } else if (rc != DG_DONE) {
        return DG_ERR_IO;
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
                                 ? (unsigned char)standing
                                 : DG_MEMBER_READS;
        if (!(m[out->n_members] = dg_store_col_dup(s, 1)))
            goto nomem;
        out->n_members++;
        found = 1;
    }
    if (rc != DG_ROW && rc != DG_DONE)
        goto io;
    dg_reset(s);
    return found ? DG_OK : DG_ERR_NOT_FOUND;
nomem:
    dg_reset(s);
    dg_turn_channel_row_clear(out);
    return DG_ERR_NOMEM;
io:
    if (s)
        dg_reset(s);
    dg_turn_channel_row_clear(out);
    return DG_ERR_IO;
}

static const char SQL_CHANNEL_PUT[] =
    "INSERT INTO turn_channels (channel_id, mode, initiator, top_root, bot_noticed, updated_ms)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (channel_id) DO UPDATE SET"
    " mode = ?2, initiator = ?3, top_root = ?4, bot_noticed = ?5, updated_ms = ?6";

int dg_store_turns_channel_save(dg_store *st, const char *channel_id, dg_channel_mode mode,
                                const char *initiator, const char *top_root, int bot_noticed,
                                int64_t now_ms)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_CHANNEL_PUT);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_bind_int64(s, 2, (int)mode);
    dg_store_bind_text(s, 3, initiator);
    dg_store_bind_text(s, 4, top_root);
    dg_bind_int64(s, 5, bot_noticed ? 1 : 0);
    dg_bind_int64(s, 6, now_ms);
    return dg_store_turns_logged(st, channel_id, dg_store_run(s));
}

static const char SQL_CHANNEL_PLATFORM[] =
    "INSERT INTO turn_channels (channel_id, updated_ms, platform) VALUES (?1, ?2, ?3)"
    " ON CONFLICT (channel_id) DO UPDATE SET platform = ?3, updated_ms = ?2";

int dg_store_turns_channel_platform_set(dg_store *st, const char *channel_id, const char *platform,
                                        int64_t now_ms)
{
    DG_ASSERT_IN_TXN(st);
    const char *p = dg_store_platform_of(platform);
    if (!p || !channel_id)
        return DG_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, SQL_CHANNEL_PLATFORM);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_bind_int64(s, 2, now_ms);
    dg_bind_text_borrowed(s, 3, p);
    return dg_store_turns_logged(st, channel_id, dg_store_run(s));
}

static const char SQL_MEMBER_ADD[] =
    "INSERT INTO turn_members (channel_id, pos, agent_id, standing) VALUES (?, ?, ?, ?)";

int dg_store_turns_member_add(dg_store *st, const char *channel_id, int pos, const char *agent_id,
                              dg_member_standing standing)
{
    DG_ASSERT_IN_TXN(st);
    if (pos < 0 || pos >= DG_TURN_MAX_MEMBERS || !agent_id ||
        (unsigned)standing >= DG_MEMBER_STANDINGS)
        return DG_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, SQL_MEMBER_ADD);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_bind_int64(s, 2, pos);
    dg_store_bind_text(s, 3, agent_id);
    dg_bind_int64(s, 4, (int)standing);
    return dg_store_turns_logged(st, channel_id, dg_store_run(s));
}

static const char SQL_PER_AGENT_NOTE[] =
    "INSERT INTO dg_meta (key, value) VALUES ('reports_per_agent', '1')"
    " ON CONFLICT (key) DO NOTHING";
static const char SQL_PER_AGENT_GET[] =
    "SELECT count(*) FROM dg_meta WHERE key = 'reports_per_agent'";

int dg_store_turns_per_agent_note(dg_store *st)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_PER_AGENT_NOTE);
    return s ? dg_store_run(s) : DG_ERR_IO;
}

int dg_store_turns_per_agent_get(dg_store *st, int *yes)
{
    DG_ASSERT_IN_TXN(st);
    *yes = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_PER_AGENT_GET);
    if (!s)
        return DG_ERR_IO;
    int rc = dg_step(s);
    if (rc == DG_ROW)
        *yes = dg_col_int(s, 0) > 0;
    dg_reset(s);
    return rc == DG_ROW ? DG_OK : DG_ERR_IO;
}

static const char SQL_MEMBER_COUNT[] = "SELECT count(*) FROM turn_members WHERE channel_id = ?";

int dg_store_turns_member_count(dg_store *st, const char *channel_id, int *n)
{
    DG_ASSERT_IN_TXN(st);
    *n = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_MEMBER_COUNT);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    int rc = dg_step(s);
    if (rc == DG_ROW)
        *n = dg_col_int(s, 0);
    dg_reset(s);
    return rc == DG_ROW ? DG_OK : DG_ERR_IO;
}

static const char SQL_MEMBER_STANDING[] =
    "UPDATE turn_members SET standing = ? WHERE channel_id = ? AND pos = ?";

int dg_store_turns_member_standing(dg_store *st, const char *channel_id, int pos,
                                   dg_member_standing standing)
{
    DG_ASSERT_IN_TXN(st);
    if (pos < 0 || pos >= DG_TURN_MAX_MEMBERS || (unsigned)standing >= DG_MEMBER_STANDINGS)
        return DG_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, SQL_MEMBER_STANDING);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, (int)standing);
    dg_store_bind_text(s, 2, channel_id);
    dg_bind_int64(s, 3, pos);
    return dg_store_turns_logged(st, channel_id, dg_store_run(s));
}

static const char SQL_MEMBERS_CLEAR[] = "DELETE FROM turn_members WHERE channel_id = ?";

int dg_store_turns_members_clear(dg_store *st, const char *channel_id)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_MEMBERS_CLEAR);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    return dg_store_turns_logged(st, channel_id, dg_store_run(s));
}

/* INSERT ... ON CONFLICT DO NOTHING of (a, b, now) with one of the claim statements; *fresh
 * says whether the row is new (the first claim wins). */
int dg_store_turns_claim_pair(dg_store *st, const char *sql, const char *a, const char *b,
                              int64_t now_ms, int *fresh)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, sql);
    if (!s)
        return DG_ERR_IO;
    dg_bind_text_borrowed(s, 1, a);
    dg_bind_text_borrowed(s, 2, b);
    dg_bind_int64(s, 3, now_ms);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    *fresh = dg_changes(s) > 0;
    return DG_OK;
}

/* One of the prune statements, whose only parameter is a cut-off time. */
int dg_store_turns_prune_before(dg_store *st, const char *sql, int64_t before_ms, long *removed)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, sql);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, before_ms);
    if (dg_store_run(s) != DG_OK)
        return DG_ERR_IO;
    if (removed)
        *removed = (long)dg_changes(s);
    return DG_OK;
}

static const char SQL_RUN_CLAIM[] =
    "INSERT INTO turn_runs (session_key, run_id, at_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING";

int dg_store_turns_run_claim(dg_store *st, const char *session_key, const char *run_id,
                             int64_t now_ms, int *fresh)
{
    DG_ASSERT_IN_TXN(st);
    *fresh = 0;
    if (!session_key || !*session_key || !run_id || !*run_id)
        return DG_ERR_INVALID;
    return dg_store_turns_claim_pair(st, SQL_RUN_CLAIM, session_key, run_id, now_ms, fresh);
}

static const char SQL_RUNS_PRUNE[] = "DELETE FROM turn_runs WHERE at_ms < ?";

int dg_store_turns_runs_prune(dg_store *st, int64_t before_ms, long *removed)
{
    DG_ASSERT_IN_TXN(st);
    return dg_store_turns_prune_before(st, SQL_RUNS_PRUNE, before_ms, removed);
}

int dg_store_turns_count(dg_store *st, const char *what, long *out)
{
    DG_ASSERT_IN_TXN(st);
    int flushed = dg_store_turns_pending_flush(st);
    if (flushed != DG_OK)
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
        return DG_ERR_INVALID;
    dg_stmt *s = dg_store_stmt(st, sql);
    if (!s)
        return DG_ERR_IO;
    int rc = dg_step(s) == DG_ROW ? DG_OK : DG_ERR_IO;
    if (rc == DG_OK)
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
    DG_ASSERT_IN_TXN(st);
    *claimed = 0;
    dg_stmt *s = dg_store_stmt(st, SQL_HINT_LAST);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    int rc = dg_step(s);
    /* A clock set back (a last hint "in the future") waits too. */
    int due = rc == DG_DONE || (rc == DG_ROW && (now_ms - dg_col_int64(s, 0) >= cooldown_ms ||
                                                 dg_col_int64(s, 0) > now_ms + cooldown_ms));
    dg_reset(s);
    if (rc != DG_ROW && rc != DG_DONE)
        return DG_ERR_IO;
    if (!due)
        return DG_OK;
    if (!(s = dg_store_stmt(st, SQL_HINT_PUT)))
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, channel_id);
    dg_bind_int64(s, 2, now_ms);
    if ((rc = dg_store_run(s)))
        return rc;
    *claimed = 1;
    return DG_OK;
}
