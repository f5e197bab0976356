/*
 * store_int.h -- shared by the store/store*.c files only.
 */
#ifndef DG_STORE_INT_H
#define DG_STORE_INT_H

#include <assert.h>
#include <sqlite3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "status.h" /* the status codes (DG_OK, DG_ERR_*) */
#include "lock_owner.h"
#include "store_records.h"
#include "store.h"
#include "store_db.h"
#include "store_transitions.h"
#include "must_check.h"

/* "Dirg" in the database header: PRAGMA application_id of our files. */
#define DG_APPLICATION_ID 0x44697267

#define DG_STMT_CACHE 256 /* power of two; distinct SQL statement sites */
#define DG_NOTED_MAX 8    /* channels a transaction remembers having logged */
#define DG_NOTED_LEN 64

struct dg_pg;      /* store_pg.c: the PostgreSQL connections */
struct dg_pg_stmt; /* store_pg.c: a prepared statement there */

/* One statement of either backend (exactly one of the two is set). */
struct dg_stmt {
    sqlite3_stmt *lite;
    struct dg_pg_stmt *pg;
    /* A bind since the last reset could not copy its value (out of memory):
     * the parameter would run as NULL, so dg_step refuses to run it
     * (DG_ERR_NOMEM) instead of writing or matching a NULL. */
    int bind_failed;
};

/* Bytes of the first copy of the WAL-index header (https://sqlite.org/walformat.html,
 * "The WAL-Index Header": iVersion .. aCksum, 48 bytes). */
#define DG_WAL_HDR_LEN 48

/* The kept fields of a scope's state besides `active`: the state columns
 * of turn_ledger (store_turns_int.h names them, DG_STATE_COLS). */
#define DG_STATE_FIELDS 16

struct dg_store {
    sqlite3 *db;              /* SQLite backend; NULL on PostgreSQL */
    struct dg_pg *pg;         /* PostgreSQL backend; NULL on SQLite */
    pthread_mutex_t lock;     /* held for the length of a transaction */
    dg_lock_owner lock_owner; /* the thread holding it (dg_store_lock) */
    int opened_version;
    char *where;                    /* dg_store_where: the path, or "PostgreSQL user@host/db" */
    sqlite3_int64 changes_at_begin; /* sqlite3_total_changes at dg_store_begin */
    int in_txn;                     /* SQLite: between dg_store_begin and its end */
    atomic_int fail_writes;         /* test seam: commits that wrote refused */
    atomic_long refused_writes;     /* commits refused by the seam so far */
    struct {
        const char *sql;
        dg_stmt stmt;
    } cache[DG_STMT_CACHE];
    /* Sharing (store_instances.c). instance: "<host>/<pid>/<random hex>" of
     * this open store. */
    char instance[128];
    int64_t txn_seq;  /* change-log sequence of the open transaction, 0 none */
    int64_t txn_head; /* the log's head read with the write lock at
                                      * dg_store_begin (PostgreSQL, saving round
                                      * trips); -1: not read */
    char noted[DG_NOTED_MAX][DG_NOTED_LEN]; /* channels logged by it */
    int n_noted;
    /* Presence (SQLite): a shared OFD lock this store holds on its
     * "<dbPath>-presence" file while open; -1 on PostgreSQL or where the
     * file system has no such locks (then every change is logged). */
    int presence_fd;
    unsigned dv_after_commit;  /* SQLite's data version after our last commit */
    int dv_known;              /* dv_after_commit is valid */
    int64_t head_seen;         /* the change log's head as this store last knew it */
    int64_t last_ord;          /* the last transition order handed out
                                      * (store_transitions.c) */
    int64_t last_ord_at_begin; /* restored by a rollback */
    int64_t seen_ord;          /* the highest order of a state read
                                      * (dg_store_saw_ord): kept through a
                                      * rollback, since what was read stays */
    int txn_others;            /* the open transaction found another store
                                      * present: 1, alone: 0, not asked yet: -1
                                      * (set by dg_store_begin) */
    /* Alone without asking the kernel: a newcomer's barrier commits a
     * write, so while the data version is the one of our last commit made
     * alone, nobody has joined since (store_instances.c, presence). */
    unsigned alone_dv;    /* the data version after that commit */
    int alone_known;      /* alone_dv is valid */
    int txn_alone;        /* dg_store_begin found it unchanged */
    int log_known;        /* SQLite: the change log was read, and every write
                                      * transaction begun since found the store alone
                                      * and unchanged (txn_alone): nobody else has
                                      * committed since, so the log has no entry this
                                      * store has not seen (dg_store_changes_since) */
    long log_reads;       /* the log read by dg_store_changes_since (a test seam) */
    int txn_write;        /* the open transaction is dg_store_begin's
                                      * (the write lock held throughout) */
    int txn_hinted;       /* it claimed a mark with a dg_mark_hint: a
                                      * rollback leaves that hint ahead of the file */
    uint64_t alone_epoch; /* bumped by each begin that found it changed:
                                      * what a dg_mark_hint was read in */
    /* The dedup mark of the open transaction's message while alone: written
     * once, at commit (or before the next statement on marks), with the
     * transition it caused (store_turns_marks.c, dg_store_turns_seen_claim_hinted). */
    struct dg_pending_mark {
        int set;
        char channel[DG_SCOPE_ID_MAX], id[DG_SCOPE_ID_MAX];
        int64_t at_ms;
        int has_tr;
        int64_t ord;
        dg_transition tr;          /* strings in `strings` */
        char *strings;             /* one allocation; NULL when !has_tr */
        int newest;                /* its id is above every mark of the channel */
        struct dg_mark_hint *hint; /* the caller's, valid until the transaction ends */
        int counted;               /* the claim counted it in hint->since_snap */
        int has_snap;              /* it carries a scope's new state (store_turns_state.c): */
        char snap_key[DG_SCOPE_ID_MAX + 16]; /* that scope's state key, */
        int64_t snap[DG_STATE_FIELDS];       /* its kept fields, in the state columns' order, */
        char *snap_post;                     /* and its post channel, or NULL */
    } pending;
    struct dg_ckpt *ckpt; /* SQLite: the checkpoint thread (store_checkpoint.c) */
    /* The probe: a second, read-only connection with its own lock, so the
     * hot path asks "did anything commit?" without the store lock. */
    sqlite3 *probe;
    sqlite3_stmt *probe_dv_stmt, *probe_seq_stmt;
    pthread_mutex_t probe_mu;
    int probe_dv;      /* PRAGMA data_version at the last probe */
    int64_t probe_seq; /* the change sequence read then; -1 none */
    /* The WAL-index header in shared memory (SQLite's documented wal-index
     * layout, mapped through the VFS's xShmMap), NULL when the VFS offers
     * none: every commit by any connection rewrites it, so an unchanged
     * header means nothing committed and the probe needs no statement. */
    const volatile unsigned char *shm_hdr;
    unsigned char shm_seen[DG_WAL_HDR_LEN]; /* the header at the last probe */
    int shm_valid;                          /* shm_seen holds a header */
};

/* Take / give back st->lock, noting which thread holds it; every take of
 * the store lock goes through these. Calling thread. */
void dg_store_lock(dg_store *st);
void dg_store_unlock(dg_store *st);

/* What a header's "inside a transaction" / "with the store lock held"
 * says, checked: a store connection has no SQLite mutex of its own
 * (dg_store_open), so a statement run without the store lock would race
 * with the transaction of another thread. */
#define DG_ASSERT_IN_TXN(st) assert(dg_store_held(st))

/*
 * Prepared statement for `sql`, cached by the pointer identity of sql (pass
 * a string literal or a static const array). Reset and bindings cleared on
 * return. Borrowed: never finalise it. NULL on prepare error (or a full
 * cache, which means DG_STMT_CACHE must grow). Caller holds
 * the store lock (inside a transaction).
 */
dg_stmt *dg_store_stmt(dg_store *st, const char *sql);

/* The same without clearing the bindings, for a caller that binds every
 * parameter of sql (or sql has none): a parameter left unbound would keep
 * the value of the statement's previous use. */
dg_stmt *dg_store_stmt_all_bound(dg_store *st, const char *sql);

/* Bind a C string, NULL as SQL NULL (a copy is bound). */
void dg_store_bind_text(dg_stmt *s, int idx, const char *text);

/* The integer a one-value statement (a PRAGMA) answers into *out; a SQLite rc. */
int dg_store_pragma_int(sqlite3 *db, const char *sql, int *out) DG_MUST_CHECK;

/* Copy a text column (NULL stays NULL); caller frees. */
char *dg_store_col_dup(dg_stmt *s, int col);

/* Rows written by the last write statement of st's connection. */
long dg_store_changes(dg_store *st);

/* In a SQLite transaction, no other store open on the file (asked once per
 * transaction, store_instances.c): 1, else 0 (PostgreSQL: always 0). */
int dg_store_alone_in_txn(dg_store *st);

/* The pending mark (store_turns_marks.c): written now (DG_OK when none), or
 * dropped with the transaction that claimed it. _commit: the last write of
 * the transaction (dg_store_commit), where a mark carrying nothing goes to
 * turn_seen. */
int dg_store_turns_pending_flush(dg_store *st) DG_MUST_CHECK;
int dg_store_turns_pending_commit(dg_store *st) DG_MUST_CHECK;
void dg_store_turns_pending_drop(dg_store *st);

/* The next order of a transition or state write at at_ms: strictly
 * increasing per store (store_transitions.c). */
int64_t dg_store_next_ord(dg_store *st, int64_t at_ms);

/* A state of order ord was read: this store's next orders are above it.
 * Another instance, or this one before a restart in the same millisecond,
 * may have handed out orders above this store's own; a state written after
 * reading one must never tie with it (a tie keeps the older state). */
void dg_store_saw_ord(dg_store *st, int64_t ord);

/* Write the newest scope state carried by marks of channel_id into its
 * state rows and clear it from the marks (store_turns_state.c). */
int dg_store_turns_fold_channel(dg_store *st, const char *channel_id) DG_MUST_CHECK;

/* dg_store_turns_fold_channel for every channel (opening a store: the
 * marks' states are known only to the store that wrote them). */
int dg_store_turns_fold_all(dg_store *st) DG_MUST_CHECK;

/* The transition t as the mark of its message stores it, into *out (its
 * strings t's or buf's): what the engine writes most is left out and the
 * readers put it back (store_transitions.c, MARK_SCOPE, MARK_CAUSE,
 * MARK_STATE). A message's cause names the message first ("message <id>
 * from ..."), so the mark keeps what follows behind a '~' no cause the
 * engine writes starts with (as it is when buf is too short); the scope
 * "conversation" and the state "speaking" are NULL. Fewer bytes in a row
 * that is also a divider of its WITHOUT ROWID b-tree are fewer page
 * splits on the ingest path. */
void dg_store_mark_transition(const dg_transition *t, char *buf, size_t len, dg_transition *out);

/* A transition's fields as ?3 .. ?10 of a mark write, `ord` as ?4
 * (store_transitions.c); borrowed: step at once. */
void dg_store_transition_bind(dg_stmt *s, const dg_transition *t, int64_t ord);

/* Attach t (ord) to the pending mark when it is t->message_id's of
 * channel_id: 1 (copied; DG_ERR_NOMEM < 0 when the copy failed), else 0. */
int dg_store_turns_pending_attach(dg_store *st, const char *channel_id, const dg_transition *t,
                                  int64_t ord) DG_MUST_CHECK;


/*
 * The PostgreSQL side of the seam (store_pg.c). dg_pg_open connects,
 * checks the database is ours and migrates it (like store.c for a file);
 * err never holds the password. The statement functions mirror
 * store_db.h. dg_pg_exec runs SQL without parameters or rows (BEGIN,
 * COMMIT); DG_OK or DG_ERR_IO.
 */
int dg_pg_open(dg_store *st, const char *url, char *err, size_t err_len) DG_MUST_CHECK;
void dg_pg_close(dg_store *st);
/* Read-only (dirigent-ctl, store_operator.c): the database must be ours at
 * exactly this build's version; nothing is created, migrated or written
 * (the session is default_transaction_read_only). dg_pg_begin_read opens
 * a READ ONLY snapshot transaction without the writers' lock. */
int dg_pg_open_readonly(dg_store *st, const char *url, char *err, size_t err_len) DG_MUST_CHECK;
int dg_pg_begin_read(dg_store *st) DG_MUST_CHECK;
int dg_pg_stmt_prepare(dg_store *st, const char *sql, dg_stmt *out) DG_MUST_CHECK;
void dg_pg_stmt_free(dg_stmt *s);
void dg_pg_bind(dg_stmt *s, int idx, const char *text);
int dg_pg_step(dg_stmt *s) DG_MUST_CHECK;
const char *dg_pg_col(dg_stmt *s, int col);
long dg_pg_changes(dg_stmt *s);
void dg_pg_reset(dg_stmt *s);
int dg_pg_begin(dg_store *st) DG_MUST_CHECK;
int dg_pg_commit(dg_store *st) DG_MUST_CHECK;
void dg_pg_rollback(dg_store *st);
long dg_pg_last_changes(dg_store *st);
int64_t dg_pg_total_changes(dg_store *st);
const char *dg_pg_errmsg(dg_store *st);
int64_t dg_pg_change_seq(dg_store *st);

/*
 * Migrations: dg_schema_steps[v-1] takes a database from version v-1 to v.
 * Each area owns its step (its SQL text lives in its own store_<area>.c):
 *   v1 store.c         base (meta)
 *   v2 store_turns.c   scopes, members, seen messages, session overrides
 *   v3 store_outbox.c  moderator outbox
 *   v4 store_discuss.c discussions, closed notices
 *   v5 store_tool_calls.c  tool results by ctx.toolCallId (idempotent tools)
 *   v6 store_turns.c   agent_end runs already handled (dedup by runId)
 *   v7 store_discuss.c discussion timers and end status
 *   v8 store_instances.c  change log and leases: instances sharing a store
 *   v9 store_discuss_index.c  discussion channel names, members by agent
 *   v10 store_transitions.c turn transitions with their causes
 *   v11 store_outbox.c outbox state CHECK as a range (no ephemeral
 *       table per write); its PostgreSQL text differs (dg_schema_step_pg)
 *   v12 store_outbox.c index of the outbox's due rows per channel
 *   v13 store_transitions.c a message's transition in its dedup mark
 *   v14 store_turns.c  marks carry their scope's new state
 *   v15 store_turns.c  marks that carry nothing in a table of their own
 *   v16 store_turns.c  where each member stands in its channel's turn order
 *   v17 store_turns.c  when the moderator last hinted at a mistyped command
 *   v18 store_cost.c   the cost ledger and the budget breaker's columns
 *   v19 store_platform.c  the chat platform of outbox rows, discussions and
 *       turn channels, and an outbox row's thread (three areas, one step)
 * Append new steps only; never edit a released one.
 */
extern const char *const dg_schema_steps[];
extern const int dg_schema_nsteps;

extern const char dg_schema_v2_turns[];
extern const char dg_schema_v3_outbox[];
extern const char dg_schema_v4_discuss[];
extern const char dg_schema_v5_tool_calls[];
extern const char dg_schema_v6_turn_runs[];
extern const char dg_schema_v7_discuss_timers[];
extern const char dg_schema_v8_shared[];
extern const char dg_schema_v9_discuss_index[];
extern const char dg_schema_v10_transitions[];
extern const char dg_schema_v11_outbox_state[];
extern const char dg_schema_v11_outbox_state_pg[];
extern const char dg_schema_v12_outbox_index[];
extern const char dg_schema_v13_marked_transitions[];
extern const char dg_schema_v14_mark_snapshots[];
extern const char dg_schema_v15_plain_marks[];
extern const char dg_schema_v16_member_standing[];
extern const char dg_schema_v17_command_hints[];
extern const char dg_schema_v18_cost[];
extern const char dg_schema_v19_platform[];
extern const char dg_schema_v20_judge[];
extern const char dg_schema_v21_tool_call_initiator[];

/* The cost ledger's filter (store_cost.h) in SQL, for a table with
 * channel_id, scope and at_ms: ?1 channel, ?2 scope, ?3 since, ?4 until
 * (NULLs: no condition); dg_store_cost_bind_filter binds f to them. */
#define DG_COST_WHERE_FILTER                                                                       \
    " WHERE (CAST(?1 AS TEXT) IS NULL OR channel_id = ?1)"                                         \
    " AND (CAST(?2 AS TEXT) IS NULL OR scope = ?2)"                                                \
    " AND at_ms >= ?3 AND (CAST(?4 AS BIGINT) IS NULL OR at_ms < ?4)"
struct dg_cost_filter;
void dg_store_cost_bind_filter(dg_stmt *s, const struct dg_cost_filter *f);

/* A platform name as the store writes it: its own static "discord" or
 * "slack" for name ("discord" for NULL), NULL for any other name (the
 * caller refuses it: DG_ERR_INVALID). Never freed. Any thread. */
const char *dg_store_platform_of(const char *name);

/* The platform column's text as the static name rows carry ("discord"
 * for anything else, which the column's CHECK never admits). */
const char *dg_store_platform_col(const char *text);

/* The text store_pg.c runs (translated) for dg_schema_steps[v]: the same
 * one but where PostgreSQL does a step another way (v11 alters a CHECK
 * SQLite must rebuild a table for). Static storage, never freed. */
const char *dg_schema_step_pg(int v);

/* The tables our migrations create up to version v as ",a,b," sorted
 * (malloc'd, caller frees; NULL on error), and whether have holds every
 * table of want (store.c; the PostgreSQL check uses the same lists). */
char *dg_store_tables_of_version(int v);
int dg_store_has_tables(const char *have, const char *want);

/* The head of the change log: the latest sequence (store_instances.c). */
extern const char dg_sql_change_head[];

/* Start st's checkpoint thread and its connection on path, and take the
 * WAL's checkpoints off the committing threads (store_checkpoint.c); DG_OK
 * or a message in err. Stopped (joined, connection closed) by
 * dg_store_checkpointer_stop, which does nothing when none runs. */
int dg_store_checkpointer_start(dg_store *st, const char *path, char *err,
                                size_t err_len) DG_MUST_CHECK;
void dg_store_checkpointer_stop(dg_store *st);

/* Open the probe connection of st on path (store_instances.c); DG_OK or
 * DG_ERR_IO with a sentence in err. Init only. */
int dg_store_probe_open(dg_store *st, const char *path, char *err, size_t err_len) DG_MUST_CHECK;

/* A store with nothing open yet (no connection, no presence), for the
 * open functions to fill; NULL when out of memory. dg_store_close frees it. */
dg_store *dg_store_new(void);

/* A new random instance id into st->instance (store_instances.c). */
int dg_store_make_instance(dg_store *st) DG_MUST_CHECK;

/* Join the stores present on the file at path (store_instances.c): take the
 * presence lock, then wait out any write transaction begun before it. At
 * open, before anything reads turn state. DG_OK or DG_ERR_IO (message in
 * err). */
int dg_store_presence_join(dg_store *st, const char *path, char *err, size_t err_len) DG_MUST_CHECK;

/* At close: give up the presence lock (the file stays). */
void dg_store_presence_leave(dg_store *st);

#endif
