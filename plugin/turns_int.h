/*
 * turns_int.h -- the turn engine's private header: its records (the
 * mirror of channels, scopes and sessions; silenced runs; the engine
 * itself) and the calls its files make of each other, each named turns_*
 * (the public API is dg_turns_*, the pure rules dg_rule_*). Only the
 * engine's files include it:
 *   turns_engine.c      transactions and publishing, life cycle, diagnostics
 *   turns_mirror.c      the in-memory mirror of channels, scopes, sessions
 *   turns_marks.c       silenced runs (swapped, claimed)
 *   turns_moderator.c   moderator messages a change owes; message fingerprints
 *   turns_discussion.c  the discussion channels' entry points
 *   turns_members.c     the turn order's members and their standing
 *   turns_sweeper.c     turn timeouts and eviction (the sweeper thread)
 *   turns_nudge.c       the stall nudge (a speaker whose run never started)
 *   turns_ingest.c      message_received
 *   turns_admin.c       `!dirigent` commands
 *   turns_decide.c      the agent hooks' decisions
 * Locking and the commit-before-publish rule: turns_engine.c.
 */
#ifndef DG_TURNS_INT_H
#define DG_TURNS_INT_H

#include <assert.h>
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "turns_engine.h"
#include "turns_engine_test.h"
#include "agent_names.h"
#include "buf.h"
#include "lock_owner.h"
#include "discuss.h"
#include "outbox.h"
#include "silent.h"
#include "store.h"
#include "store_discuss.h"
#include "store_instances.h"
#include "store_cost.h"
#include "store_turns.h"
#include "templates.h"
#include "str_map.h"
#include "admin_sessions.h"
#include "store_transitions.h"
#include "must_check.h"

/* The turn-timeout sweeper looks for speakers out of time this often
 * (real time; the turn clock itself is dg_now_ms). */
#define TURNS_SWEEP_EVERY_MS 1000

/* Where the host reports messages per agent session: a speaker none of
 * whose reports came this long after it got the turn, while other members'
 * did, cannot read the channel (its report would have come with theirs). */
#define TURNS_UNREACHED_MS 10000

/* At a decision for another member, a speaker not yet shown receiving the
 * channel leaves the order only after this long: the host reports a
 * message to each agent account on its own, and under load the speaker's
 * report can come after another account's run is already being decided. */
#define TURNS_UNREACHED_GRACE_MS 10000

/* A run held back for the run of a newer message that follows: the host
 * gets at least this long after the hold to start that run before the
 * stall nudge counts from the newer message's arrival. */
#define TURNS_NUDGE_FOLLOW_MS 2000

/* A dormant thread scope untouched this long (turn clock) leaves the
 * mirror, with its sessions; the database still has it. */
#define TURNS_EVICT_IDLE_MS (3600LL * 1000)

/* Dormant thread scopes the mirror keeps at most, whatever their age (each
 * costs about 0.8 KB with its sessions; under the thread policy every
 * top-level message makes one): past it the least recently changed leave,
 * down to 3/4 of it, so the scan that finds them is paid once per quarter
 * of the bound, not per message. */
#define TURNS_DORMANT_MAX 4096

/* Dedup rows (message ids, run ids) and dormant thread states are kept
 * this long; they are also pruned every so many ingests. */
#define TURNS_SEEN_KEEP_MS (7LL * 24 * 3600 * 1000)
#define TURNS_SEEN_PRUNE_EVERY 65536

/*
 * Channels the discussion code changed through the engine (prefill,
 * close, wake with result) inside its own transaction: a ring of the
 * latest channel ids and the count of entries ever logged, per engine. A
 * writer that fell more than the ring behind drops its whole mirror
 * instead.
 */
#define TURNS_INVAL_RING 64
#define TURNS_WAKE_AGENT_MAX 128
typedef struct turns_inval {
    char channel[DG_SCOPE_ID_MAX];
    char wake[TURNS_WAKE_AGENT_MAX]; /* agent granted the turn with a wake message
                                    (a discussion's kickoff), "" for none */
} turns_inval;
typedef struct turns_scope turns_scope;

/* Message ids a channel record remembers taking in (turns_chan.taken): more
 * than the reports of one message by every account of an instance come
 * apart by, in a busy channel. */
#define TURNS_TAKEN_MAX 16

typedef struct turns_chan {
    char *id; /* id_inline when it fits (the mirror's key: the
                                    lookup's compare then reads this line, which
                                    the message reads anyway), else its own copy */
    char id_inline[32];
    dg_channel_mode mode;
    char *initiator;
    char *top_root; /* latest top-level thread (thread policy) */
    int bot_noticed;
    int n; /* members */
    char *members[DG_TURN_MAX_MEMBERS];
    unsigned char standing[DG_TURN_MAX_MEMBERS]; /* dg_member_standing of each */
    /* When each member entered the order as DG_MEMBER_NEW (a human's mention
     * of it), 0: unknown (loaded from the store, changed by another
     * instance): the message that mentioned it went unreported to it since
     * (turns_unreached_since). In memory only; set with standing. */
    int64_t new_since[DG_TURN_MAX_MEMBERS];
    uint64_t present;                          /* members that are configured agents and in the
                                    order (standing below DG_MEMBER_LEFT) */
    uint32_t member_hash[DG_TURN_MAX_MEMBERS]; /* of each name, set with present:
                                    turns_member_pos compares these first (each name
                                    is an allocation of its own, a cache miss) */
    int initiator_pos;
    int in_db;
    unsigned epoch; /* bumped when reloaded in place: sessions re-derive */
    /* The latest message id (snowflake) this instance received in the
     * channel (message_received, new or reported before by another
     * instance), "" when none since the start: what a run of one of its
     * agents answers at the latest (dg_turns_claim). Writer mutex. */
    char received[DG_SCOPE_ID_MAX];
    /* Hashes of the last TURNS_TAKEN_MAX message ids this instance took in
     * (0: an empty slot; taken_head: ids recorded, mod TURNS_TAKEN_MAX the
     * next slot). Each account reports a message and the store keeps the
     * first report of all instances sharing it: one that another instance
     * reported first is new here all the same, once (turns_ingest.c).
     * Writer mutex. */
    uint64_t taken[TURNS_TAKEN_MAX];
    unsigned taken_head;
    dg_mark_hint marks; /* what the store read of its dedup marks. Writer mutex. */
    /* The latest admin command this instance received in the channel (its
     * first line, trimmed, at most TURNS_RECENT_FP_MAX - 1 bytes; "" none)
     * and when: a run whose prompt is that command answers the command,
     * which the moderator answers, never an agent (dg_turns_claim). In
     * memory only: after a restart such a run counts. Writer mutex. */
    char cmd_fp[48];
    int64_t cmd_ms;
    turns_scope *follow; /* scope of channel-level sessions, NULL until loaded */
    turns_scope *conv;   /* Conversation(channel) once loaded: the hot path's
                                    scope under policy "channel", found without a key */
} turns_chan;

/* One message of the scope's recent history (turns_scope.recent). */
#define TURNS_RECENT_MAX 4
#define TURNS_RECENT_FP_MAX 48
/* An older message is evidence of a stale prompt only when its
 * fingerprint is this long: a short one ("ok") turns up by chance. */
#define TURNS_RECENT_FP_EVIDENCE 8
typedef struct turns_recent {
    char fp[TURNS_RECENT_FP_MAX]; /* message_fingerprint(); "" when nothing to look for */
    int author;                   /* member position of its agent, DG_NOBODY for others */
    int human;                    /* 1: a human's message */
    int64_t at_ms;                /* when it came in */
} turns_recent;

struct turns_scope {
    char *key;
    dg_scope scope;
    turns_chan *chan;
    char *post_channel; /* Discord channel for moderator messages; NULL = channel */
    dg_turn_state st;
    int in_db;
    int evict; /* chosen to leave the mirror (evict_idle) */
    /* Set when the moderator gave a human's open question to the next
     * speaker (turns_hand_open_question); the judge intercept of the same
     * transaction takes it: that speaker was chosen, the judge is not asked. */
    int open_question_handed;
    /* The first line of the idle reminder that woke wake_fp_pos (mentions
     * dropped), "" when none: a run of that speaker counts only once its
     * prompt carries it. A host may start a run queued for an older
     * message after the reminder reached the session; that run must not
     * answer for the speaker. In memory, written under the writer mutex;
     * lost on restart (then the delivery alone ends the wait). */
    char wake_fp[48];
    int wake_fp_pos;
    int64_t wake_fp_ms; /* when it was set: older than TURNS_WAKE_FP_MAX_MS, ignored */
    /* The last TURNS_RECENT_MAX messages of the scope (humans', agents' and the
     * moderator's texts; not bare hand-offs), newest at
     * recent_head - 1 (turns_recent): a run of the speaker whose prompt
     * carries one of the older ones but not the newest was queued for an
     * older message and started late (dg_turns_claim). In memory only:
     * after a restart there is no evidence and runs count. */
    turns_recent recent[TURNS_RECENT_MAX];
    unsigned recent_head; /* messages recorded so far (mod TURNS_RECENT_MAX: next slot) */
    /* 1 when the speaker last changed in another instance sharing the
     * store (a reload found st.last_change_ms moved), 0 once this one
     * moves it. The other one may have moved it past the latest message
     * this one received (an agent's run with a reply ended there, or it
     * took in a message not here yet): a run here may then answer an
     * older message (dg_turns_claim). Writer mutex. */
    int moved_elsewhere;
    /* The stall nudge (turns_nudge.c). A host may drop a message that
     * reaches an agent's session while the session still finishes an
     * earlier run (OpenClaw logs it as "skipped, reply-operation-active"):
     * the speaker then holds the turn with no run coming. wait_pos is the
     * speaker a message reached (message_received for its session), owed a
     * run since wait_ms (the message, or the end of the run of it that was
     * under way then), DG_NOBODY once a run of it starts; run_pos the
     * member whose last run went on (not swapped, not claimed) until its
     * end; nudged_change, nudged_pos and nudged_seq the st.last_change_ms,
     * the speaker and the st.msg_seq of the last turn nudged (one mention
     * per turn and message). In memory only: a start arms every awake scope's
     * speaker again (turns_sweeper.c). The atomics are set by the hot path
     * under the mirror's read lock. */
    _Atomic int wait_pos;
    _Atomic int64_t wait_ms;
    _Atomic int run_pos;
    int64_t nudged_change; /* writer mutex */
    int nudged_pos;        /* with nudged_change and nudged_seq: the turn nudged */
    int64_t nudged_seq;    /* (one millisecond can hold two turns, of one speaker
                              too; a human's or agent's message makes a new one,
                              the moderator's never does) */
    /* The nudges of the turn nudged last (nudged_*): how many were posted,
     * nudge_seen 1 when a message reached the speaker's session since the
     * last one, and nudge_again the count allowed once one reached it (the
     * host may have dropped the nudge as well as the message before it:
     * one more, turns_nudge_reached_after_nudge). A nudge that reaches no
     * session is repeated every turn.nudgeSec (the speaker's app may be
     * away), a bounded number of times (turns_nudge.c). Writer mutex. */
    int nudges;
    int nudge_seen;
    int nudge_again;
    /* The member whose granted run was under way when an admin's command
     * gave it the turn with a mention (`wake`), DG_NOBODY: none. That run
     * answered the turn before: its silence passes nothing, the run for
     * the mention follows (run_end_locked). Writer mutex. */
    int run_before_wake;
    /* When a message reached member i's session with no run of it started
     * since (0: none): a turn that moves to i later waits turn.nudgeSec
     * from then, not from the move, since the host already had that
     * message and ran nothing. Set under the writer; a run's start clears
     * it under the read lock too (atomics). */
    _Atomic int64_t reached_ms[DG_TURN_MAX_MEMBERS];
    /* When the oldest message that no granted run has followed came in (0:
     * none since this instance loaded the scope, or a run was granted
     * since): how long the humans have waited. Set under the writer; a
     * granted run's start clears it under the read lock too (atomic). */
    _Atomic int64_t unanswered_ms;
};

/* A fingerprint older than this is ignored: a wake run that never matched
 * (a host that rewrote the text) must not hold a speaker for longer. */
#define TURNS_WAKE_FP_MAX_MS (10 * 60 * 1000)

typedef struct turns_sess {
    char *key;
    char *thread; /* ctx threadId it was resolved with */
    turns_chan *chan;
    turns_scope *fixed;          /* NULL: follows chan->follow */
    int configured;              /* agent of `agents` */
    int pos;                     /* member position or DG_NOBODY */
    unsigned epoch;              /* chan->epoch it was derived under */
    _Atomic int64_t seen_seq;    /* scope's msg_seq when its run resolved */
    _Atomic(turns_scope *) last; /* scope its run resolved in */
    _Atomic int granted;         /* last resolve: 1 turn, 0 swapped, -1 none */
} turns_sess;

/* A silenced run (turns_engine.h "Silenced runs"). */
typedef enum turns_mark_kind {
    TURNS_MARK_NONE = 0,
    TURNS_MARK_SWAPPED = 1,
    TURNS_MARK_CLAIMED = 2,
    TURNS_MARK_WAITING = 3 /* swapped while its agent awaited its wake message:
                                    texts cancelled, its end changes nothing */
} turns_mark_kind;

typedef struct turns_mark {
    uint64_t sess_h;   /* hash of session_key (0: empty slot) */
    char *session_key; /* malloc'd */
    char *run_id;      /* malloc'd; NULL: matched by session while live */
    turns_mark_kind kind;
    int live;         /* no unsilenced decision of the session since */
    int64_t seen_seq; /* scope's msg_seq when it was decided */
} turns_mark;


/* Scope states waiting for their transaction to commit (see turns_txn_finish()). */
#define TURNS_MAX_PENDING 4

struct dg_turns {
    dg_plugin *p;
    _Atomic unsigned anon_runs; /* runs of a host without run ids, numbered for the ledger */
    pthread_mutex_t wmu;        /* one engine writer at a time (turns_txn_begin ..
                                    turns_txn_finish): turns_writer_lock */
    dg_lock_owner wmu_owner;    /* the thread holding wmu */
    pthread_rwlock_t lock;      /* the mirror: readers vs. the writer */
    /* The channel change log (turns_inval): inval_mu guards the ring;
     * inval_seq counts entries ever logged, inval_seen those applied. */
    pthread_mutex_t inval_mu;
    _Atomic uint64_t inval_seq;
    turns_inval inval[TURNS_INVAL_RING];
    _Atomic uint64_t inval_seen;
    _Atomic int64_t applied; /* the store's change log (other instances sharing
                                    it, store_instances.h) is applied up to here */
    int shared_seen;         /* another instance has written to the store since
                                    the start: a scope loaded afresh may have been
                                    moved there (turns_scope.moved_elsewhere). Writer
                                    mutex. */
    /* The channel id a change was begun for (turns_txn_begin_for) and its
     * hash, so turns_chan_get of that same id hashes it no more: NULL
     * outside such a change. Writer mutex. */
    const char *txn_chan_id;
    uint64_t txn_chan_hash;
    struct {
        turns_scope *r;
        dg_turn_state st;
    } pending[TURNS_MAX_PENDING];
    int n_pending;
    /* The turn-timeout sweeper (see sweeper()). */
    pthread_t sweeper;
    int sweeper_started;
    pthread_mutex_t sw_mu;
    pthread_cond_t sw_cv; /* CLOCK_MONOTONIC */
    int sw_stop;
    _Atomic int rescan;          /* load the awake scopes of the database into the mirror */
    _Atomic int arm_after_start; /* load_awake: the first load after a start arms
                                  * the stall nudge of every awake scope */
    dg_map chans, scopes, sessions;
    /* Set once message_received has reported a delivery to an agent
     * session (turns_engine.h "Awaiting the wake message"): only then is a
     * wait armed. Per instance, never reset. */
    _Atomic int wake_tracking;
    /* The host reports per agent session, seen by this instance or noted in
     * the store by an earlier run (dg_store_turns_per_agent_note): who can
     * receive a channel is known from the reports (turns_members.c). */
    _Atomic int per_agent;
    /* Silenced runs: a ring, newest at marks[(mk_next - 1) % DG_RUN_MARKS].
     * mk_mu is a leaf lock (taken under any other, never the reverse). */
    pthread_mutex_t mk_mu;
    turns_mark marks[DG_RUN_MARKS];
    size_t mk_next;
    unsigned long fresh_ingests;
    int warned_cap;
    size_t dormant_max;    /* TURNS_DORMANT_MAX; tests lower it */
    size_t evict_at;       /* mirror size (scopes) that makes an ingest evict */
    dg_agent_names *names; /* agents' Discord names, for mentions in text */
};

/* The writer (turns_txn_begin .. turns_txn_finish) is held by this thread:
 * what the "Writer held" of the calls below asserts. The owner is checked,
 * not the mutex: a trylock would pass while another thread held it. */
#define TURNS_ASSERT_WRITER(t) assert(dg_lock_owner_is_self(&(t)->wmu_owner))

/* Take and release the writer mutex, keeping its owner (turns_engine.c). */
void turns_writer_lock(dg_turns *t);
void turns_writer_unlock(dg_turns *t);

/* ---- turns_engine.c: transactions -------------------------------------- */

/* Start a change: the writer mutex, then a store transaction; the mirror
 * is brought up to date with changes made outside the engine. DG_OK or
 * DG_ERR_IO (nothing held then). */
int turns_txn_begin(dg_turns *t) DG_MUST_CHECK;

/* turns_txn_begin for a change of channel_id: its map slot is asked for
 * before the store takes the write lock, its records right after
 * (warm_channel). */
int turns_txn_begin_for(dg_turns *t, const char *channel_id) DG_MUST_CHECK;

/* End a change: commit when rc is DG_OK, else roll back; returns the
 * change's status (a failed commit's). The writer is released. */
int turns_txn_finish(dg_turns *t, int rc) DG_MUST_CHECK;

/* End a change that only read. The writer is released. */
void turns_txn_finish_read(dg_turns *t);

/* Publish st as r's state once the transaction commits. Writer held.
 * DG_ERR_INTERNAL when one change touches more than TURNS_MAX_PENDING
 * scopes. */
int turns_install(dg_turns *t, turns_scope *r, const dg_turn_state *st) DG_MUST_CHECK;

/* Write r's new state st with why it changed (cause: a sentence for the
 * operator's view, dirigent-ctl why; store_transitions.h). Writer held. */
int turns_save_scope(dg_turns *t, turns_scope *r, const dg_turn_state *st, int64_t now,
                     const char *cause) DG_MUST_CHECK;

/* turns_save_scope for a change message_id caused (NULL: none): its
 * transition is kept in the message's dedup mark. Writer held. */
int turns_save_scope_for(dg_turns *t, turns_scope *r, const dg_turn_state *st, int64_t now,
                         const char *cause, const char *message_id) DG_MUST_CHECK;

/* Log a change of channel_id made outside an engine writer (the discussion
 * entry points), with the agent that awaits a wake message there once it
 * has committed (wake, NULL: none). Any thread. */
void turns_log_channel_change(dg_turns *t, const char *channel_id, const char *wake);

/* ---- turns_mirror.c ------------------------------------------------------ */

/* Drop every record of the mirror (reloaded on demand). Writer held and
 * the mirror's write lock, or the engine is being freed. */
void turns_flush_locked(dg_turns *t);

/* Map callbacks that free a scope or session record. */
void turns_free_scope(void *v, void *arg);

void turns_free_sess(void *v, void *arg);

/* The rules' view of channel c (members present, mode, the config's
 * timeouts). Mirror lock or writer held. */
void turns_make_ctx(const dg_turns *t, const turns_chan *c, dg_rule_ctx *x);

/* Position of agent_id among c's members, DG_NOBODY when none. */
int turns_member_pos(const turns_chan *c, const char *agent_id);

/* c's record of channel_id, loaded from the store (or created) when the
 * mirror lacks it. Writer held. */
int turns_chan_get(dg_turns *t, const char *channel_id, turns_chan **out) DG_MUST_CHECK;

/* Record the platform of channel_id's row (it must exist or is made a
 * normal one) when it is Slack's; Discord's is the rows' default. Inside
 * the caller's transaction. */
int turns_channel_platform(dg_store *st, const char *channel_id, int64_t now) DG_MUST_CHECK;

/* Write c's channel row. Writer held. */
int turns_chan_save(dg_turns *t, turns_chan *c, int64_t now) DG_MUST_CHECK;

/* The record of scope sc of channel c, loaded or created. Writer held. */
int turns_scope_get(dg_turns *t, turns_chan *c, const dg_scope *sc,
                    turns_scope **out) DG_MUST_CHECK;

/* The scope channel-level sessions act in (scope.h). Writer held. */
int turns_follow_scope(dg_turns *t, turns_chan *c, turns_scope **out) DG_MUST_CHECK;

/* Reload channel_id's records in place from the database (other: another
 * instance changed them). Writer held. DG_OK or an error (the caller then
 * drops the whole mirror). */
int turns_refresh_channel(dg_turns *t, const char *channel_id, int other) DG_MUST_CHECK;

/* 1 when a and b are equal strings or both NULL. */
int turns_same_str(const char *a, const char *b);

/* The session record of s, made (and the agent made a member) when new or
 * stale. Writer held. */
int turns_session_prepare(dg_turns *t, const dg_turn_session *s, int64_t now,
                          turns_sess **out) DG_MUST_CHECK;

/* The session record of s and its scope when the mirror has them up to
 * date, else NULL (a writer must prepare it). Mirror read lock held. */
turns_sess *turns_session_lookup_locked(dg_turns *t, const dg_turn_session *s, turns_scope **scope);

/* The scope message m belongs to, and whether it is a top-level message
 * under policy "thread" (it opens a thread of its own). */
int turns_message_scope(const dg_turns *t, const dg_turn_message *m, dg_scope *sc,
                        int *top_level) DG_MUST_CHECK;

/* A growing list of scope records (pointers into the mirror), freed with
 * free(v). */
typedef struct turns_scope_list {
    turns_scope **v;
    size_t n, cap;
    int nomem; /* an append failed: the list is short */
} turns_scope_list;

/* Append r; out of memory, r is dropped and nomem set. */
void turns_scope_list_push(turns_scope_list *l, turns_scope *r);

/* ---- turns_budget.c ------------------------------------------------------ */

/* A budget reached: which, how much was used against which limit, and
 * when its window ends (0: only `!dirigent resume` lifts it). */
typedef struct turns_budget_hit {
    dg_budget_kind kind; /* DG_BUDGET_NONE: none reached */
    int64_t used;
    long limit;
    int64_t until_ms;
} turns_budget_hit;

/* 1 when kind k counts tokens (else agent turns). */
int turns_budget_is_tokens(dg_budget_kind k);

/* The first budget of r's channel that its ledger shows reached at now
 * (hit->kind DG_BUDGET_NONE: none). Writer held. */
int turns_budget_reached(dg_turns *t, turns_scope *r, int64_t now,
                         turns_budget_hit *hit) DG_MUST_CHECK;

/* Latch the breaker of hit in r (saved and installed) and queue its one
 * notice (budget.md). Writer held. */
int turns_budget_trip(dg_turns *t, turns_scope *r, const turns_budget_hit *hit, int64_t now,
                      int *kick) DG_MUST_CHECK;

/* turns_budget_reached, then turns_budget_trip when one is: nothing when
 * the breaker already holds r. Writer held. */
int turns_budget_check(dg_turns *t, turns_scope *r, int64_t now, int *kick) DG_MUST_CHECK;

/* As turns_budget_reached and turns_budget_check, the token budgets only
 * when tokens_only is set. Writer held. */
int turns_budget_reached_of(dg_turns *t, turns_scope *r, int64_t now, int tokens_only,
                            turns_budget_hit *hit) DG_MUST_CHECK;
int turns_budget_check_of(dg_turns *t, turns_scope *r, int64_t now, int tokens_only,
                          int *kick) DG_MUST_CHECK;

/* 1 when member pos may run although a breaker holds r: a discussion's
 * initiator, asked to wrap up. Mirror lock or writer held. */
int turns_budget_exempt(const turns_scope *r, int pos);

/* Lift r's breaker when its window ended by now. Writer held. */
int turns_budget_lift_due(dg_turns *t, turns_scope *r, int64_t now) DG_MUST_CHECK;

/* 1 when a breaker holds st at now (its window, if any, not over yet).
 * Any thread (reads st only). */
int turns_budget_holds(const dg_turn_state *st, int64_t now);

/* Record the decision verdict for run_id (NULL: the host gives none; a
 * ledger id is made up) of session s in scope r. Writer held. */
int turns_cost_record(dg_turns *t, const turns_scope *r, const dg_turn_session *s,
                      const char *run_id, dg_cost_verdict verdict, int64_t now) DG_MUST_CHECK;

/* A human message in r at now: per-human-message budgets count from it.
 * Writer held. */
int turns_cost_human(dg_turns *t, const turns_scope *r, int64_t now) DG_MUST_CHECK;

/* 1 when channel_id has a per-human-message budget (the mark is then kept). */
int turns_budget_per_message(const dg_turns *t, const char *channel_id);

/* ---- turns_marks.c ------------------------------------------------------- */

/* Remember session key's run run_id (NULL: by session while live) as
 * silenced with kind, decided at the scope's msg_seq seen_seq. Any thread
 * (mk_mu, a leaf lock). */
void turns_mark_add(dg_turns *t, const char *key, const char *run_id, turns_mark_kind kind,
                    int64_t seen_seq);

/* The session key got a decision that is not silenced: its marks matched
 * by session end. Any thread. */
void turns_mark_end_session(dg_turns *t, const char *key);

/* The mark of key's run run_id (TURNS_MARK_NONE: none), with the msg_seq
 * it was decided at (*seen) and whether the session's latest silenced
 * decision was for another run (*other_run); either may be NULL. Any
 * thread. */
turns_mark_kind turns_mark_find(dg_turns *t, const char *key, const char *run_id, int64_t *seen,
                                int *other_run);

/* turns_mark_find, and *exact = 1 when the mark matched by run id. */
turns_mark_kind turns_mark_find_ex(dg_turns *t, const char *key, const char *run_id, int64_t *seen,
                                   int *other_run, int *exact);

/* Free every mark (the engine is being freed). */
void turns_marks_free(dg_turns *t);

/* ---- turns_moderator.c --------------------------------------------------- */

/* The user id of member pos of c on c's platform, NULL when unknown. */
const char *turns_user_of(const dg_turns *t, const turns_chan *c, int pos);

/* Where the moderator posts for a thread scope of channel (a post target,
 * chat.h): a copy the caller frees, NULL when out of memory. */
char *turns_thread_target(const char *channel, const char *thread);

/* Where a reply to a message in channel (and thread, NULL or "": none)
 * goes, as a post target into out (DG_CHAT_TARGET_MAX bytes): the thread,
 * else the channel. */
void turns_reply_target(const char *channel, const char *thread, char *out, size_t cap);

/* The speaker at from ended a run that spoke without seeing the newest
 * message, and the turn moved on (next): when that message is a human's,
 * it came in while from was answering the one before it, and the host
 * will not run from for it any more (its turn is over). The moderator
 * gives it to next's speaker with open_question.md, a wake message that
 * speaker awaits; nothing when the turn did not move or a budget holds
 * the scope. Writer mutex held (txn). */
int turns_hand_open_question(dg_turns *t, turns_scope *r, const dg_rule_ctx *x, dg_turn_state *next,
                             int from, int64_t now, int *kick) DG_MUST_CHECK;

/* Where the moderator posts for scope r of channel after a human's
 * message m: under a channel-wide scope (sessionPolicy "channel", which
 * takes a channel's threads in), the thread m was written in (a Discord
 * thread, a Slack thread_ts), or the channel itself for a top-level m, so
 * that a command's answer and the hand-offs after it land where the human
 * wrote; a thread scope keeps its own thread. Sets r->post_channel.
 * Writer mutex held. DG_OK or DG_ERR_NOMEM (r unchanged). */
int turns_post_where_written(turns_scope *r, const char *channel, const dg_turn_message *m);

/* Queue a moderator message (content; mention: the user id it wakes, NULL
 * none) to channel in the change's transaction; *kick = 1 when queued.
 * Writer held. */
int turns_enqueue(dg_turns *t, const char *channel, const char *content, const char *mention,
                  int64_t now, int *kick) DG_MUST_CHECK;

/* Record a message of scope r that came in at now (writer held);
 * only_text: not when nothing of it can be recognised (a moderator's bare
 * hand-off); human: a human wrote it. */
void turns_recent_push(turns_scope *r, const char *content, int author, int only_text, int human,
                       int64_t now);

/* 1 when pos's run with this prompt answers an older message of r than
 * its newest. Mirror lock or writer held. */
int turns_answers_older(const turns_scope *r, int pos, const char *prompt);

/* 1 when a run of pos finds the previous speaker's reply still owed in s:
 * s.permit (not pos) ended its run speaking and its message has not
 * arrived (its bit of s.owed), and that run ended at most window ms before
 * now (window <= 0: no bound). The turn state only, no evidence of what a
 * run answers; the callers add theirs (dg_turns_claim). Pure. */
int turns_reply_owed(const dg_turn_state *s, int pos, int64_t window, int64_t now);

/* 1 when the run of pos with this prompt answers the message the previous
 * speaker already answered: that speaker's reply is owed (turns_reply_owed,
 * within the turn timeout, else TURNS_WAKE_FP_MAX_MS), and the prompt carries
 * the scope's latest message, which is not the reply.
 * Writer or reader lock held. */
int turns_answers_before_owed_reply(const turns_scope *r, const dg_rule_ctx *x, int pos,
                                    const char *prompt, int64_t now);

/* Template name rendered with vars, queued as turns_enqueue does; fp (NULL:
 * not wanted) gets the wake fingerprint of the text. Writer held. */
int turns_render_and_enqueue(dg_turns *t, const char *name, const dg_tpl_vars *vars,
                             const char *channel, const char *mention, int64_t now, int *kick,
                             char *fp, size_t fp_cap) DG_MUST_CHECK;

/* A moderator message mentioning uid is still owed (pending in the outbox)
 * at target (a channel, or a thread: chat.h): it wakes that agent when it
 * arrives, so another mention now would only repeat it. *yes. Writer held
 * (txn). */
int turns_mention_owed(dg_turns *t, const char *target, const char *uid, int *yes) DG_MUST_CHECK;

/* The moderator messages fx owes for r's change to next, queued; next
 * records what they arm (a wait for the wake message). Writer held. */
/* turns_queue_effects asks the judge first when the change moved the turn
 * by the order (turns_judge.h); turns_queue_effects_chosen is for a change
 * a person chose (an admin command): no judge, an open question dropped. */
int turns_queue_effects_chosen(dg_turns *t, turns_scope *r, const dg_rule_effects *fx,
                               dg_turn_state *next, int64_t now, int *kick) DG_MUST_CHECK;
int turns_queue_effects(dg_turns *t, turns_scope *r, const dg_rule_effects *fx, dg_turn_state *next,
                        int64_t now, int *kick) DG_MUST_CHECK;

/* ---- turns_members.c --------------------------------------------------- */

/* Members' presence in the order: configured agents whose standing is below
 * DG_MEMBER_LEFT. Writer held, the mirror's write lock too. */
void turns_recompute_present(const dg_turns *t, turns_chan *c);

/*
 * Position of agent_id in c (*pos, DG_NOBODY when none), on what the host
 * just showed of it in the channel (evidence: DG_MEMBER_NEW for a human's
 * @mention, DG_MEMBER_READS for a message that reached its session,
 * DG_MEMBER_RAN for a run or a post there). A configured agent seen for the
 * first time is appended, except on DG_MEMBER_READS (a delivery alone
 * changes no order); a member's standing rises with the evidence (a member
 * that left comes back on a run, a post or a mention; one an admin removed
 * stays out). Writer held.
 */
int turns_member_ensure(dg_turns *t, turns_chan *c, const char *agent_id,
                        dg_member_standing evidence, int64_t now, int *pos);

/* agent_id (a configured agent) into c's order on an admin's word: appended,
 * or back from DG_MEMBER_LEFT / DG_MEMBER_REMOVED, as one that receives the
 * channel. *was: its standing before, DG_MEMBER_STANDINGS when it was no
 * member. Writer held. */
int turns_member_admit(dg_turns *t, turns_chan *c, const char *agent_id, int64_t now, int *pos,
                       dg_member_standing *was);

/*
 * Member pos of r's channel leaves the order with standing (DG_MEMBER_LEFT
 * or DG_MEMBER_REMOVED); r's state follows (dg_rule_member_gone), with the
 * hand-off that owes (none to `deciding`, a member whose run is being
 * decided now, or DG_NOBODY), saved with cause. Other scopes of the channel
 * see it through c->present. Writer held.
 */
int turns_member_leave(dg_turns *t, turns_scope *r, int pos, dg_member_standing standing,
                       int deciding, int64_t now, const char *cause, int *kick);

/*
 * The speaker of r that the host never showed receiving the channel (a
 * human @mentioned it; its account never reported a message there, nor did
 * it run there) while `asking` (a member, or DG_NOBODY) is deciding a run:
 * when the host reports messages per agent, it cannot read the channel and
 * leaves the order now, so the scope does not wait on it; so does each next
 * speaker of that kind, the last member left too. Writer held.
 */
int turns_drop_unreachable_speaker(dg_turns *t, turns_scope *r, int asking, int64_t now, int *kick);

/* Since when r's member pos, never shown receiving the channel, has been
 * owed a report of a message there: when it got the turn (state st), or
 * earlier when the message that mentioned it came before. Mirror lock or
 * writer held. */
int64_t turns_unreached_since(const turns_chan *c, const dg_turn_state *st, int pos);

/* r's state as the change under way has it (pending), else as published.
 * Writer held. */
const dg_turn_state *turns_staged(const dg_turns *t, const turns_scope *r);

/* ---- turns_sweeper.c --------------------------------------------------- */

void turns_evict_if_over(dg_turns *t, int64_t now);

/* ---- turns_nudge.c ----------------------------------------------------- */

/* A run of member pos started in scope r: the host did not drop the
 * message before it; granted (not swapped, not claimed), it is under way
 * and any wait for it ends. pos DG_NOBODY: nothing. Any thread, with the
 * mirror's read lock or the writer mutex held (atomics only). */
void turns_nudge_run_began(turns_scope *r, int pos, int granted);

/* A moderator's message reached the session of member pos of r, r's
 * speaker in state st: if r's turn was nudged already, that was the nudge
 * (or one after it), and if the host dropped it too, the turn may be nudged
 * once more (at most twice a turn). Writer held. */
void turns_nudge_reached_after_nudge(turns_scope *r, const dg_turn_state *st, int pos);

/* The run of member pos that went on in r ended. Writer mutex held. */
void turns_nudge_run_ended(turns_scope *r, int pos, int64_t now);

/* r's turn moved from member prev to next's speaker by a change that
 * queued no hand-off to it (handoff_to): that speaker has the latest
 * message, or its run for it is on the way; if none starts, the stall
 * nudge mentions it. Writer mutex held. */
void turns_nudge_arm_new_speaker(dg_turns *t, turns_scope *r, const dg_turn_state *next, int prev,
                                 int handoff_to, int64_t now);

/* A hand-off (a mention waking pos) is queued: a run of pos is due, and if
 * none starts within turn.nudgeSec of it leaving the outbox (the message
 * may never reach pos's session: the agents' apps were away) the nudge
 * mentions pos once. Writer mutex held. */
void turns_nudge_arm_handoff(dg_turns *t, turns_scope *r, int pos, int64_t now);

/* One pass of the sweeper: every scope whose speaker a message reached
 * more than turn.nudgeSec ago, with no run of it since, gets one bare
 * mention of the speaker per turn. Sweeper thread; takes the writer. */
void turns_nudge_stalled(dg_turns *t, int64_t now);

/* ---- turns_admin.c ----------------------------------------------------- */

int turns_is_admin(const dg_config *cfg, const char *user_id);

int turns_is_admin_reply(const char *content);

/* Remember that an admin's command (content) came into c at now (writer
 * held), for turns_prompt_is_command. */
void turns_note_command(turns_chan *c, const char *content, int64_t now);

/* 1 when a run with this prompt was started for a message no agent
 * answers: an admin's command c took in (turns_note_command, within
 * TURNS_WAKE_FP_MAX_MS), or the moderator's reply to one. Writer held. */
int turns_prompt_is_command(const turns_chan *c, const char *prompt, int64_t now);

/* `rotate` / `cancel` call the host, which Dirigent never does under a lock:
 * turns_admin_locked records what to do here, and turns_owner_reply (after the commit)
 * calls the host and posts the reply in a second short transaction. */
typedef struct turns_owner_action {
    dg_admin_cmd cmd; /* DG_ADMIN_NONE: nothing to do */
    char channel[DG_SCOPE_ID_MAX];
    char thread[DG_SCOPE_ID_MAX]; /* "" at the top level */
    char post[DG_SCOPE_ID_MAX];   /* where the reply goes (a post target, chat.h) */
    char speaker[72];             /* cancel: the speaker's agent id, "" nobody */
} turns_owner_action;

int turns_admin_locked(dg_turns *t, const dg_turn_message *m, dg_admin_cmd cmd, int64_t now,
                       int *kick, turns_owner_action *oa);

/* The host calls of oa (no lock held), then their reply in its own
 * transaction. DG_OK when the reply was queued. */
int turns_owner_reply(dg_turns *t, const turns_owner_action *oa, int64_t now);

/* ---- turns_decide.c ---------------------------------------------------- */

int turns_valid_session(const dg_turn_session *s);

#endif
