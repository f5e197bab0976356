/*
 * turns_int.h -- the turn engine's private header: its records (the
 * mirror of channels, scopes and sessions; silenced runs; the engine
 * itself) and the calls its files make of each other. Only the engine's
 * files include it:
 *   turns_engine.c   the mirror, its transactions and publishing, silenced
 *                    runs, moderator messages, life cycle, diagnostics,
 *                    and the discussion channels' entry points
 *   turns_sweeper.c  turn timeouts and eviction (the sweeper thread)
 *   turns_nudge.c    the stall nudge (a speaker whose run never started)
 *   turns_ingest.c   message_received
 *   turns_admin.c    `!dirigent` commands
 *   turns_decide.c   the agent hooks' decisions
 * Locking and the commit-before-publish rule: turns_engine.c.
 */
#ifndef DG_TURNS_INT_H
#define DG_TURNS_INT_H

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
#include "discuss.h"
#include "outbox.h"
#include "silent.h"
#include "store.h"
#include "store_discuss.h"
#include "store_instances.h"
#include "store_turns.h"
#include "templates.h"
#include "str_map.h"
#include "admin_sessions.h"
#include "store_transitions.h"

/* The turn-timeout sweeper looks for speakers out of time this often
 * (real time; the turn clock itself is dg_now_ms). */
#define SWEEP_EVERY_MS 1000

/* Where the host reports messages per agent session: a speaker none of
 * whose reports came this long after it got the turn, while other members'
 * did, cannot read the channel (its report would have come with theirs). */
#define UNREACHED_MS 5000

/* A dormant thread scope untouched this long (turn clock) leaves the
 * mirror, with its sessions; the database still has it. */
#define EVICT_IDLE_MS (3600LL * 1000)

/* Dormant thread scopes the mirror keeps at most, whatever their age (each
 * costs about 0.8 KB with its sessions; under the thread policy every
 * top-level message makes one): past it the least recently changed leave,
 * down to 3/4 of it, so the scan that finds them is paid once per quarter
 * of the bound, not per message (issue 12, bug 7). */
#define DORMANT_MAX 4096

/* Dedup rows (message ids, run ids) and dormant thread states are kept
 * this long; they are also pruned every so many ingests. */
#define SEEN_KEEP_MS (7LL * 24 * 3600 * 1000)
#define SEEN_PRUNE_EVERY 65536

/*
 * Channels the discussion code changed through the engine (prefill,
 * close, wake with result) inside its own transaction: a ring of the
 * latest channel ids and the count of entries ever logged, per engine. A
 * writer that fell more than the ring behind drops its whole mirror
 * instead.
 */
#define INVAL_RING 64
#define WAKE_AGENT_MAX 128
typedef struct inval_entry {
    char channel[DG_SCOPE_ID_MAX];
    char wake[WAKE_AGENT_MAX];   /* agent granted the turn with a wake message
                                    (a discussion's kickoff), "" for none */
} inval_entry;
typedef struct scope_rec scope_rec;

typedef struct chan_rec {
    char *id;                    /* id_inline when it fits (the mirror's key: the
                                    lookup's compare then reads this line, which
                                    the message reads anyway), else its own copy */
    char id_inline[32];
    dg_channel_mode mode;
    char *initiator;
    char *top_root;              /* latest top-level thread (thread policy) */
    int bot_noticed;
    int n;                       /* members */
    char *members[DG_TURN_MAX_MEMBERS];
    unsigned char standing[DG_TURN_MAX_MEMBERS]; /* dg_member_standing of each */
    uint64_t present;            /* members that are configured agents and in the
                                    order (standing below DG_MEMBER_LEFT) */
    uint32_t member_hash[DG_TURN_MAX_MEMBERS]; /* of each name, set with present:
                                    member_pos compares these first (each name
                                    is an allocation of its own, a cache miss) */
    int initiator_pos;
    int in_db;
    unsigned epoch;              /* bumped when reloaded in place: sessions re-derive */
    /* The latest message id (snowflake) this instance received in the
     * channel (message_received, new or reported before by another
     * instance), "" when none since the start: what a run of one of its
     * agents answers at the latest (dg_turns_claim). Writer mutex. */
    char received[DG_SCOPE_ID_MAX];
    dg_mark_hint marks;          /* what the store read of its dedup marks. Writer mutex. */
    scope_rec *follow;           /* scope of channel-level sessions, NULL until loaded */
    scope_rec *conv;             /* Conversation(channel) once loaded: the hot path's
                                    scope under policy "channel", found without a key */
} chan_rec;

/* One message of the scope's recent history (scope_rec.recent). */
#define RECENT_MAX 4
#define RECENT_FP_MAX 48
/* An older message is evidence of a stale prompt only when its
 * fingerprint is this long: a short one ("ok") turns up by chance. */
#define RECENT_FP_EVIDENCE 8
typedef struct recent_msg {
    char fp[RECENT_FP_MAX];      /* message_fingerprint(); "" when nothing to look for */
    int author;                  /* member position of its agent, DG_NOBODY for others */
} recent_msg;

struct scope_rec {
    char *key;
    dg_scope scope;
    chan_rec *chan;
    char *post_channel;          /* Discord channel for moderator messages; NULL = channel */
    dg_turn_state st;
    int in_db;
    int evict;                   /* chosen to leave the mirror (evict_idle) */
    /* The first line of the idle reminder that woke wake_fp_pos (mentions
     * dropped), "" when none: a run of that speaker counts only once its
     * prompt carries it. A host may start a run queued for an older
     * message after the reminder reached the session; that run must not
     * answer for the speaker. In memory, written under the writer mutex;
     * lost on restart (then the delivery alone ends the wait). */
    char wake_fp[48];
    int wake_fp_pos;
    int64_t wake_fp_ms;          /* when it was set: older than WAKE_FP_MAX_MS, ignored */
    /* The last RECENT_MAX messages of the scope (humans', agents' and the
     * moderator's texts; not bare hand-offs), newest at
     * recent_head - 1 (recent_msg): a run of the speaker whose prompt
     * carries one of the older ones but not the newest was queued for an
     * older message and started late (dg_turns_claim). In memory only:
     * after a restart there is no evidence and runs count. */
    recent_msg recent[RECENT_MAX];
    unsigned recent_head;        /* messages recorded so far (mod RECENT_MAX: next slot) */
    /* 1 when the speaker last changed in another instance sharing the
     * store (a reload found st.last_change_ms moved), 0 once this one
     * moves it. The other one may have moved it past the latest message
     * this one received (an agent's run with a reply ended there, or it
     * took in a message not here yet): a run here may then answer an
     * older message (dg_turns_claim). Writer mutex. */
    int moved_elsewhere;
    /* The stall nudge (turns_nudge.c). A host may drop a message that
     * reaches an agent's session while the session still finishes an
     * earlier run (OpenClaw 2026.9: "skipped, reply-operation-active", seen
     * in the gateway stage when the next speaker's held-back run for the
     * kickoff was still sending as the previous speaker's reply came in):
     * the speaker then holds the turn with no run coming. wait_pos is the
     * speaker a message reached (message_received for its session) at
     * wait_ms with no run of it under way, DG_NOBODY once a run of it goes
     * on; run_pos the member whose last run went on (not swapped, not
     * claimed) until its end; nudged_change the st.last_change_ms of the
     * last turn nudged (one mention per turn). In memory only: after a
     * restart nothing is armed until a message reaches the speaker. The
     * atomics are set by the hot path under the mirror's read lock. */
    _Atomic int wait_pos;
    _Atomic int64_t wait_ms;
    _Atomic int run_pos;
    int64_t nudged_change;       /* writer mutex */
};

/* A fingerprint older than this is ignored: a wake run that never matched
 * (a host that rewrote the text) must not hold a speaker for longer. */
#define WAKE_FP_MAX_MS (10 * 60 * 1000)

typedef struct sess_rec {
    char *key;
    char *thread;                /* ctx threadId it was resolved with */
    chan_rec *chan;
    scope_rec *fixed;            /* NULL: follows chan->follow */
    int configured;              /* agent of `agents` */
    int pos;                     /* member position or DG_NOBODY */
    unsigned epoch;              /* chan->epoch it was derived under */
    _Atomic int64_t seen_seq;    /* scope's msg_seq when its run resolved */
    _Atomic(scope_rec *) last;   /* scope its run resolved in */
    _Atomic int granted;         /* last resolve: 1 turn, 0 swapped, -1 none */
} sess_rec;

/* A silenced run (turns_engine.h "Silenced runs"). */
typedef enum mark_kind {
    MARK_NONE = 0,
    MARK_SWAPPED = 1,
    MARK_CLAIMED = 2,
    MARK_WAITING = 3             /* swapped while its agent awaited its wake message:
                                    texts cancelled, its end changes nothing */
} mark_kind;

typedef struct run_mark {
    uint64_t sess_h;             /* hash of session_key (0: empty slot) */
    char *session_key;           /* malloc'd */
    char *run_id;                /* malloc'd; NULL: matched by session while live */
    mark_kind kind;
    int live;                    /* no unsilenced decision of the session since */
    int64_t seen_seq;            /* scope's msg_seq when it was decided */
} run_mark;


/* Scope states waiting for their transaction to commit (see finish()). */
#define MAX_PENDING 4

struct dg_turns {
    dg_plugin *p;
    pthread_mutex_t wmu;         /* one engine writer at a time (txn_begin .. finish) */
    pthread_rwlock_t lock;       /* the mirror: readers vs. the writer */
    /* The channel change log (inval_entry): inval_mu guards the ring;
     * inval_seq counts entries ever logged, inval_seen those applied. */
    pthread_mutex_t inval_mu;
    _Atomic uint64_t inval_seq;
    inval_entry inval[INVAL_RING];
    _Atomic uint64_t inval_seen;
    _Atomic int64_t applied;     /* the store's change log (other instances sharing
                                    it, store_instances.h) is applied up to here */
    int shared_seen;             /* another instance has written to the store since
                                    the start: a scope loaded afresh may have been
                                    moved there (scope_rec.moved_elsewhere). Writer
                                    mutex. */
    struct {
        scope_rec *r;
        dg_turn_state st;
    } pending[MAX_PENDING];
    int n_pending;
    /* The turn-timeout sweeper (see sweeper()). */
    pthread_t sweeper;
    int sweeper_started;
    pthread_mutex_t sw_mu;
    pthread_cond_t sw_cv;        /* CLOCK_MONOTONIC */
    int sw_stop;
    _Atomic int rescan;          /* load the awake scopes of the database into the mirror */
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
    run_mark marks[DG_RUN_MARKS];
    size_t mk_next;
    unsigned long fresh_ingests;
    int warned_cap;
    size_t dormant_max;          /* DORMANT_MAX; tests lower it */
    size_t evict_at;             /* mirror size (scopes) that makes an ingest evict */
    dg_agent_names *names;       /* agents' Discord names, for mentions in text */
};

/* ---- turns_engine.c ---------------------------------------------------- */

void free_scope(void *v, void *arg);

void free_sess(void *v, void *arg);

void make_ctx(const dg_turns *t, const chan_rec *c, dg_turn_ctx *x);

int member_pos(const chan_rec *c, const char *agent_id);

int chan_get(dg_turns *t, const char *channel_id, chan_rec **out);

int chan_save(dg_turns *t, chan_rec *c, int64_t now);

int scope_get(dg_turns *t, chan_rec *c, const dg_scope *sc, scope_rec **out);

int follow_scope(dg_turns *t, chan_rec *c, scope_rec **out);

/* Reload channel_id's records in place from the database (other: another
 * instance changed them). Writer held. OC_OK or an error (the caller then
 * drops the whole mirror). */
int refresh_channel(dg_turns *t, const char *channel_id, int other);

int same_str(const char *a, const char *b);

int session_prepare(dg_turns *t, const dg_turn_session *s, int64_t now, sess_rec **out);

sess_rec *session_lookup_locked(dg_turns *t, const dg_turn_session *s, scope_rec **scope);

int txn_begin(dg_turns *t);

/* txn_begin for a change of channel_id: its map slot is asked for before
 * the store takes the write lock, its records right after (turns_engine.c,
 * warm_channel). */
int txn_begin_for(dg_turns *t, const char *channel_id);

int finish(dg_turns *t, int rc);

void finish_read(dg_turns *t);

int install(dg_turns *t, scope_rec *r, const dg_turn_state *st);

/* Write r's new state st with why it changed (cause: a sentence for the
 * operator's view, dirigent-ctl why; store_transitions.h). */
int save_scope(dg_turns *t, scope_rec *r, const dg_turn_state *st, int64_t now,
               const char *cause);

/* save_scope for a change message_id caused (NULL: none): its transition
 * is kept in the message's dedup mark. */
int save_scope_for(dg_turns *t, scope_rec *r, const dg_turn_state *st, int64_t now,
                   const char *cause, const char *message_id);

int message_scope(const dg_turns *t, const dg_turn_message *m, dg_scope *sc, int *top_level);

void mark_add(dg_turns *t, const char *key, const char *run_id, mark_kind kind,
              int64_t seen_seq);

void mark_end_session(dg_turns *t, const char *key);

mark_kind mark_find(dg_turns *t, const char *key, const char *run_id, int64_t *seen,
                    int *other_run);

mark_kind mark_find_ex(dg_turns *t, const char *key, const char *run_id, int64_t *seen,
                       int *other_run, int *exact);

const char *user_of(const dg_turns *t, const chan_rec *c, int pos);

int enqueue(dg_turns *t, const char *channel, const char *content, const char *mention,
            int64_t now, int *kick);

/* Record a message of scope r (writer held); only_text: not when nothing
 * of it can be recognised (a moderator's bare hand-off). */
void recent_push(scope_rec *r, const char *content, int author, int only_text);

int answers_older(const scope_rec *r, int pos, const char *prompt);

/* 1 when a run of pos finds the previous speaker's reply still owed in s:
 * s.permit (not pos) ended its run speaking and its message has not
 * arrived (its bit of s.owed), and that run ended at most window ms before
 * now (window <= 0: no bound). The turn state only, no evidence of what a
 * run answers; the callers add theirs (dg_turns_claim). Pure. */
int reply_owed(const dg_turn_state *s, int pos, int64_t window, int64_t now);

/* 1 when the run of pos with this prompt answers the message the previous
 * speaker already answered: that speaker's reply is owed (reply_owed,
 * within the turn timeout, else WAKE_FP_MAX_MS), and the prompt carries
 * the scope's latest message, which is not the reply.
 * Writer or reader lock held. */
int answers_before_owed_reply(const scope_rec *r, const dg_turn_ctx *x, int pos,
                              const char *prompt, int64_t now);

int render_and_enqueue(dg_turns *t, const char *name, const dg_tpl_vars *vars,
                       const char *channel, const char *mention, int64_t now, int *kick,
                       char *fp, size_t fp_cap);

/* A moderator message mentioning uid is still owed (pending in the outbox)
 * in channel: it wakes that agent when it arrives, so another mention now
 * would only repeat it. *yes. Writer held (txn). */
int mention_owed(dg_turns *t, const char *channel, const char *uid, int *yes);

int queue_effects(dg_turns *t, scope_rec *r, const dg_turn_effects *fx,
                  dg_turn_state *next, int64_t now, int *kick);

/* A growing list of scope records (pointers into the mirror), freed with
 * free(v). */
typedef struct scope_list {
    scope_rec **v;
    size_t n, cap;
    int nomem;                   /* an append failed: the list is short */
} scope_list;

/* Append r; out of memory, r is dropped and nomem set. */
void scope_list_push(scope_list *l, scope_rec *r);

/* ---- turns_members.c --------------------------------------------------- */

/* Members' presence in the order: configured agents whose standing is below
 * DG_MEMBER_LEFT. Writer held, the mirror's write lock too. */
void recompute_present(const dg_turns *t, chan_rec *c);

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
int member_ensure(dg_turns *t, chan_rec *c, const char *agent_id, dg_member_standing evidence,
                  int64_t now, int *pos);

/* agent_id (a configured agent) into c's order on an admin's word: appended,
 * or back from DG_MEMBER_LEFT / DG_MEMBER_REMOVED, as one that receives the
 * channel. *was: its standing before, DG_MEMBER_STANDINGS when it was no
 * member. Writer held. */
int member_admit(dg_turns *t, chan_rec *c, const char *agent_id, int64_t now, int *pos,
                 dg_member_standing *was);

/*
 * Member pos of r's channel leaves the order with standing (DG_MEMBER_LEFT
 * or DG_MEMBER_REMOVED); r's state follows (dg_turn_member_gone), with the
 * hand-off that owes (none to `deciding`, a member whose run is being
 * decided now, or DG_NOBODY), saved with cause. Other scopes of the channel
 * see it through c->present. Writer held.
 */
int member_leave(dg_turns *t, scope_rec *r, int pos, dg_member_standing standing,
                 int deciding, int64_t now, const char *cause, int *kick);

/*
 * The speaker of r that the host never showed receiving the channel (a
 * human @mentioned it; its account never reported a message there, nor did
 * it run there) while `asking` (a member, or DG_NOBODY) is deciding a run:
 * when the host reports messages per agent, it cannot read the channel and
 * leaves the order now, so the scope does not wait on it. Writer held.
 */
int drop_unreachable_speaker(dg_turns *t, scope_rec *r, int asking, int64_t now, int *kick);

/* r's state as the change under way has it (pending), else as published.
 * Writer held. */
const dg_turn_state *staged(const dg_turns *t, const scope_rec *r);

/* ---- turns_sweeper.c --------------------------------------------------- */

void evict_if_over(dg_turns *t, int64_t now);

/* ---- turns_nudge.c ----------------------------------------------------- */

/* A run of member pos went on in scope r (not swapped, not claimed): it is
 * under way, and any wait for it ends. Any thread, with the mirror's read
 * lock or the writer mutex held (atomics only). */
void nudge_run_started(scope_rec *r, int pos);

/* The run of member pos that went on in r ended. Writer mutex held. */
void nudge_run_ended(scope_rec *r, int pos);

/* One pass of the sweeper: every scope whose speaker a message reached
 * more than turn.nudgeSec ago, with no run of it since, gets one bare
 * mention of the speaker per turn. Sweeper thread; takes the writer. */
void nudge_stalled(dg_turns *t, int64_t now);

/* ---- turns_admin.c ----------------------------------------------------- */

int is_admin(const dg_config *cfg, const char *user_id);

int is_admin_reply(const char *content);

/* `rotate` / `cancel` call the host, which Dirigent never does under a lock:
 * admin_locked records what to do here, and owner_reply (after the commit)
 * calls the host and posts the reply in a second short transaction. */
typedef struct owner_action {
    dg_admin_cmd cmd;                 /* DG_ADMIN_NONE: nothing to do */
    char channel[DG_SCOPE_ID_MAX];
    char thread[DG_SCOPE_ID_MAX];     /* "" at the top level */
    char post[DG_SCOPE_ID_MAX];       /* where the reply goes */
    char speaker[72];                 /* cancel: the speaker's agent id, "" nobody */
} owner_action;

int admin_locked(dg_turns *t, const dg_turn_message *m, dg_admin_cmd cmd, int64_t now,
                 int *kick, owner_action *oa);

/* The host calls of oa (no lock held), then their reply in its own
 * transaction. OC_OK when the reply was queued. */
int owner_reply(dg_turns *t, const owner_action *oa, int64_t now);

/* ---- turns_decide.c ---------------------------------------------------- */

int valid_session(const dg_turn_session *s);

#endif
