/*
 * check_shared.c -- several plugin instances on one store: the
 * change log and leases of the store, two outbox dispatchers in two
 * processes on one SQLite file against the fake Discord (each row sent
 * once, in order per channel, a dead instance's channels taken over), and
 * two turn engines on one file agreeing on every decision.
 */
/*
 * Lines of store/store_instances.c no test here can reach (the coverage aim
 * names each; every other line runs in make check):
 *   dg_store_make_instance: getrandom interrupted or failing: 8 bytes with
 *     flags 0 block until the kernel's pool is ready and then never fail.
 *   shm_attach: a VFS without shared memory (xShmMap): the unix VFS always
 *     has it, and without it there is no WAL, which the store requires.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_discord.h"
#include "outbox.h"
#include "outbox_env.h"
#include "pg_server.h"
#include "store.h"
#include "store_int.h"
#include "store_outbox.h"
#include "store_test.h"
#include "store_instances.h"
#include "store_turns.h"
#include "testutil.h"
#include "turn_test_host.h"
#include "turns_engine.h"
#include "turns_engine_test.h"

/* ---- the store: change log and leases ------------------------------------------------ */

static dg_store *open_store(const char *db)
{
    dg_store *st = NULL;
    char err[256];
    ck_assert_msg(dg_store_open(db, &st, err, sizeof err) == OC_OK, "%s", err);
    return st;
}

/* One turn-state write of channel on st; the change-log sequence it wrote
 * under (0: it logged nothing). */
static int64_t write_scope(dg_store *st, const char *channel)
{
    dg_scope sc;
    ck_assert_int_eq(dg_scope_conversation(channel, &sc), OC_OK);
    dg_turn_state s;
    memset(&s, 0, sizeof s);
    s.speaker = s.anchor = DG_NOBODY;
    s.active = 1;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    dg_turn_state old;
    char *post = NULL;
    int exists = dg_store_turns_scope_load(st, &sc, &old, &post) == OC_OK;
    free(post);
    ck_assert_int_eq(dg_store_turns_scope_save(st, &sc, NULL, &s, exists, 1000), OC_OK);
    int64_t seq = dg_store_txn_change_seq(st);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    return seq;
}

/* A turn-state write that another open store makes the change log record. */
static void save_scope(dg_store *st, const char *channel)
{
    ck_assert_int_gt(write_scope(st, channel), 0);
}

/* Channels another instance changed after `after`, as ",a,b," (static). */
static const char *changes_of(dg_store *st, int64_t after, int64_t *upto)
{
    static char buf[256];
    char **ch = NULL;
    size_t n = 0;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_changes_since(st, after, &ch, &n, upto), OC_OK);
    dg_store_rollback(st);
    snprintf(buf, sizeof buf, ",");
    for (size_t i = 0; i < n; i++) {
        strncat(buf, ch[i], sizeof buf - strlen(buf) - 2);
        strcat(buf, ",");
        free(ch[i]);
    }
    free(ch);
    return buf;
}

START_TEST(change_log_names_what_other_instances_changed)
{
    char *dir = tu_mkdtemp(), *db = tu_db_target(dir);
    dg_store *a = open_store(db), *b = open_store(db);
    ck_assert_str_ne(dg_store_instance(a), dg_store_instance(b));
    int64_t seq0 = dg_store_change_seq(b);
    ck_assert_int_eq(seq0, 0);
    save_scope(a, "111");
    save_scope(a, "222");
    /* b's probe sees the new head; b is told about both channels, a about none. */
    int64_t seq1 = dg_store_change_seq(b);
    ck_assert_int_eq(seq1, 2);
    ck_assert_int_eq(dg_store_change_seq(a), 2);
    int64_t upto = 0;
    ck_assert_str_eq(changes_of(b, seq0, &upto), ",111,222,");
    ck_assert_int_eq(upto, 2);
    ck_assert_str_eq(changes_of(a, seq0, &upto), ",");
    ck_assert_int_eq(upto, 2);
    /* b changes 111: a learns it, from b's sequence on only. */
    save_scope(b, "111");
    ck_assert_int_eq(dg_store_change_seq(a), 3);
    ck_assert_str_eq(changes_of(a, 2, &upto), ",111,");
    ck_assert_int_eq(upto, 3);
    ck_assert_str_eq(changes_of(a, 3, &upto), ",");
    /* Unchanged database: the probe answers the same. */
    ck_assert_int_eq(dg_store_change_seq(a), 3);
    dg_store_close(a);
    dg_store_close(b);
    tu_rmtree(dir);
    free(dir);
    free(db);
}
END_TEST

/* dg_store_change_seq answers from the WAL-index header in shared memory
 * when nothing committed since its last probe (SQLite): every commit of the
 * other instance, however soon after a probe, must still show. */
START_TEST(probe_from_memory_sees_every_commit)
{
    char *dir = tu_mkdtemp(), *db = tu_db_target(dir);
    dg_store *a = open_store(db), *b = open_store(db);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(dg_store_change_seq(b), 0); /* attach, remember, from memory */
    if (!strstr(db, "://")) /* SQLite: the memory path must be the one tested */
        ck_assert_msg(dg_store_probe_in_memory(b), "the probe should read the wal-index");
    for (int64_t n = 1; n <= 40; n++) {
        char ch[24];
        snprintf(ch, sizeof ch, "%d", (int)(700 + n % 5));
        save_scope(a, ch);
        ck_assert_int_eq(dg_store_change_seq(b), n);
        ck_assert_int_eq(dg_store_change_seq(b), n);
        /* b's own commits move the head as well. */
        if (n % 10 == 0) {
            save_scope(b, "999");
            ck_assert_int_eq(dg_store_change_seq(b), ++n);
            ck_assert_int_eq(dg_store_change_seq(a), n);
        }
    }
    dg_store_close(a);
    dg_store_close(b);
    tu_rmtree(dir);
    free(dir);
    free(db);
}
END_TEST

typedef struct joiner {
    const char *db;
    atomic_int *committed; /* set by the writer just before its commit */
    int saw_commit;        /* the writer had committed when our open returned */
    dg_store *st;
} joiner;

static void *join_store(void *arg)
{
    joiner *j = arg;
    char err[256];
    int rc = dg_store_open(j->db, &j->st, err, sizeof err);
    j->saw_commit = atomic_load(j->committed);
    return rc == OC_OK ? j : NULL;
}

/* SQLite: a store alone on its file logs no change (nobody would read the
 * log); while a second one is open every change is logged; once it closed,
 * none again. A store opening while a writer holds the write lock returns
 * only after that writer committed, so what the writer did without logging
 * (it was alone when it looked) is in what the newcomer reads first. */
START_TEST(change_log_only_while_another_store_is_open)
{
    char *dir = tu_mkdtemp(), *db = tu_db_target(dir);
    if (strstr(db, "://")) {
        /* PostgreSQL: every change is logged (no presence across hosts). */
        dg_store *a = open_store(db);
        ck_assert_int_gt(write_scope(a, "111"), 0);
        dg_store_close(a);
    } else {
        dg_store *a = open_store(db);
        ck_assert_int_eq(write_scope(a, "111"), 0);
        ck_assert_int_eq(dg_store_change_seq(a), 0);
        dg_store *b = open_store(db);
        ck_assert_int_eq(write_scope(a, "111"), 1);
        int64_t upto = 0;
        ck_assert_str_eq(changes_of(b, 0, &upto), ",111,");
        dg_store_close(b);
        ck_assert_int_eq(write_scope(a, "222"), 0);
        ck_assert_int_eq(dg_store_change_seq(a), 1);

        /* The barrier of a newcomer. */
        atomic_int committed;
        atomic_init(&committed, 0);
        dg_scope sc;
        ck_assert_int_eq(dg_scope_conversation("333", &sc), OC_OK);
        dg_turn_state s;
        memset(&s, 0, sizeof s);
        s.speaker = s.anchor = DG_NOBODY;
        s.active = 1;
        s.agent_msgs = 7;
        ck_assert_int_eq(dg_store_begin(a), OC_OK);
        ck_assert_int_eq(dg_store_turns_scope_save(a, &sc, NULL, &s, 0, 1000), OC_OK);
        ck_assert_int_eq(dg_store_txn_change_seq(a), 0); /* alone when it looked */
        joiner j = {.db = db, .committed = &committed};
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, join_store, &j), 0);
        usleep(50 * 1000); /* give the newcomer time to reach the barrier */
        atomic_store(&committed, 1);
        ck_assert_int_eq(dg_store_commit(a), OC_OK);
        void *ok = NULL;
        ck_assert_int_eq(pthread_join(th, &ok), 0);
        ck_assert_ptr_nonnull(ok);
        ck_assert_msg(j.saw_commit, "the newcomer's open returned before the writer committed");
        dg_turn_state got;
        char *post = NULL;
        ck_assert_int_eq(dg_store_begin(j.st), OC_OK);
        ck_assert_int_eq(dg_store_turns_scope_load(j.st, &sc, &got, &post), OC_OK);
        dg_store_rollback(j.st);
        free(post);
        ck_assert_int_eq(got.agent_msgs, 7);
        /* And from now on a's changes are logged for it. */
        ck_assert_int_gt(write_scope(a, "333"), 1);
        ck_assert_str_eq(changes_of(j.st, 1, &upto), ",333,");
        dg_store_close(j.st);
        dg_store_close(a);
    }
    tu_rmtree(dir);
    free(dir);
    free(db);
}
END_TEST

/* SQLite: a store alone on its file reads the change log once, then not
 * again while nobody else commits (each turn change would pay a lookup
 * that finds nothing); once another store committed, even one that has
 * closed again and with a write of its own alone in between, it reads the
 * log and learns what that one changed. */
START_TEST(alone_store_reads_the_change_log_only_after_another_commit)
{
    char *dir = tu_mkdtemp(), *db = tu_db_target(dir);
    if (!strstr(db, "://")) {
        dg_store *a = open_store(db);
        ck_assert_int_eq(write_scope(a, "111"), 0); /* alone, and it knows */
        int64_t upto = 0;
        ck_assert_str_eq(changes_of(a, 0, &upto), ",");
        long reads = dg_store_test_log_reads(a);
        for (int i = 0; i < 5; i++) {
            ck_assert_int_eq(write_scope(a, "111"), 0);
            ck_assert_str_eq(changes_of(a, 0, &upto), ",");
        }
        ck_assert_int_eq(dg_store_test_log_reads(a), reads);
        /* Another store opens, changes 444 (logged: a is open) and closes. */
        dg_store *b = open_store(db);
        ck_assert_int_gt(write_scope(b, "444"), 0);
        dg_store_close(b);
        /* A write of a's in between finds it alone again, without the log. */
        ck_assert_int_eq(write_scope(a, "111"), 0);
        ck_assert_str_eq(changes_of(a, 0, &upto), ",444,");
        ck_assert_int_gt(dg_store_test_log_reads(a), reads);
        ck_assert_int_gt(upto, 0);
        dg_store_close(a);
    }
    tu_rmtree(dir);
    free(dir);
    free(db);
}
END_TEST

/* One hinted claim of (channel 500, id) in its own transaction: *fresh. */
static int claim(dg_store *st, dg_mark_hint *hint, const char *id)
{
    int fresh = -1;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_turns_seen_claim_hinted(st, "500", id, 1000, hint, &fresh), OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    return fresh;
}

/* A store alone on its file claims a message above the channel's newest
 * mark without reading, and writes the mark at commit: a duplicate, a
 * newcomer's own marks and a restart still find every mark. */
START_TEST(alone_claims_without_reading_yet_miss_no_duplicate)
{
    char *dir = tu_mkdtemp(), *db = tu_db_target(dir);
    dg_store *a = open_store(db);
    dg_mark_hint ha = {0}, hb = {0};
    ck_assert_int_eq(claim(a, &ha, "1001"), 1);
    ck_assert_int_eq(claim(a, &ha, "1001"), 0); /* another account's report */
    if (!strstr(db, "://"))
        ck_assert_str_eq(ha.newest, "1001"); /* PostgreSQL is never alone: no hint */
    ck_assert_int_eq(claim(a, &ha, "1002"), 1);
    ck_assert_int_eq(claim(a, &ha, "1000"), 1); /* below the newest: read, not there */
    ck_assert_int_eq(claim(a, &ha, "1000"), 0);
    if (!strstr(db, "://")) {
        /* A newcomer claims a later message; the first store's hint is
         * stale from then on and must not call that message new. */
        dg_store *b = open_store(db);
        ck_assert_int_eq(claim(b, &hb, "1003"), 1);
        ck_assert_int_eq(claim(a, &ha, "1003"), 0);
        dg_store_close(b);
        /* Alone again, its hint older than b's mark: read before trusting it. */
        ck_assert_int_eq(claim(a, &ha, "1003"), 0);
        ck_assert_int_eq(claim(a, &ha, "1004"), 1);
        ck_assert_int_eq(claim(a, &ha, "1004"), 0);
    }
    dg_store_close(a);
    dg_store *c = open_store(db);
    dg_mark_hint hc = {0};
    ck_assert_int_eq(claim(c, &hc, "1002"), 0); /* written at commit, found after a restart */
    long n = 0;
    ck_assert_int_eq(dg_store_begin(c), OC_OK);
    ck_assert_int_eq(dg_store_turns_count(c, "seen", &n), OC_OK);
    dg_store_rollback(c);
    ck_assert_int_eq(n, strstr(db, "://") ? 3 : 5);
    dg_store_close(c);
    tu_rmtree(dir);
    free(dir);
    free(db);
}
END_TEST

static void take(dg_store *st, const char *name, int64_t now, int64_t until, int64_t held,
                 int want_got, int want_fresh, int64_t want_other)
{
    int got = -1, fresh = -1;
    int64_t other = -1;
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    ck_assert_int_eq(dg_store_lease_take(st, name, now, until, held, &got, &fresh, &other), OC_OK);
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    ck_assert_int_eq(got, want_got);
    if (got)
        ck_assert_int_eq(fresh, want_fresh);
    else
        ck_assert_int_eq(other, want_other);
}

START_TEST(lease_held_renewed_taken_over_and_released)
{
    char *dir = tu_mkdtemp(), *db = tu_db_target(dir);
    dg_store *a = open_store(db), *b = open_store(db);
    take(a, "outbox:1", 1000, 2000, 0, 1, 1, 0);       /* new: a's */
    take(b, "outbox:1", 1500, 2500, 0, 0, 0, 2000);    /* running: not b's */
    take(a, "outbox:1", 1600, 2600, 2000, 1, 0, 0);    /* renewed without a break */
    take(b, "outbox:1", 2600, 3600, 0, 0, 0, 2600);    /* runs out at 2600 inclusive */
    take(b, "outbox:1", 2601, 3601, 0, 1, 2, 0);       /* ran out: taken over from a */
    take(a, "outbox:1", 2700, 3700, 2600, 0, 0, 3601); /* a lost it */
    ck_assert_int_eq(dg_store_begin(a), OC_OK);
    ck_assert_int_eq(dg_store_lease_release(a, "outbox:1"), OC_OK); /* not a's: kept */
    ck_assert_int_eq(dg_store_commit(a), OC_OK);
    take(a, "outbox:1", 2800, 3800, 0, 0, 0, 3601);
    ck_assert_int_eq(dg_store_begin(b), OC_OK);
    ck_assert_int_eq(dg_store_lease_release(b, "outbox:1"), OC_OK);
    ck_assert_int_eq(dg_store_commit(b), OC_OK);
    take(a, "outbox:1", 2900, 3900, 0, 1, 1, 0); /* given up: a's at once */
    dg_store_close(a);
    dg_store_close(b);
    tu_rmtree(dir);
    free(dir);
    free(db);
}
END_TEST

/* The instance id's host part never holds a '/' (it separates host, pid
 * and random part), a lease of a process on another host is never taken
 * as dead here (its pid means nothing on this machine), and a change note
 * without a channel is refused. The host name with a '/' needs root (a UTS
 * namespace of this test's own); otherwise that part is skipped, saying
 * so. */
START_TEST(instance_id_and_other_hosts_leases)
{
    char *dir = tu_mkdtemp(), *db = tu_db_target(dir);
    int slashed = 0;
    if (geteuid() == 0 && unshare(CLONE_NEWUTS) == 0 &&
        sethostname("rack/7/node", strlen("rack/7/node")) == 0)
        slashed = 1;
    else
        printf("shared: not root, the host name with '/' is not tried\n");
    dg_store *a = open_store(db);
    const char *id = dg_store_instance(a);
    if (slashed)
        ck_assert_msg(!strncmp(id, "rack_7_node/", strlen("rack_7_node/")), "%s", id);
    char pid_part[32];
    snprintf(pid_part, sizeof pid_part, "/%ld/", (long)getpid());
    ck_assert_msg(strstr(id, pid_part) != NULL, "%s", id);
    ck_assert_int_eq(dg_store_begin(a), OC_OK);
    ck_assert_int_eq(dg_store_change_note(a, NULL), OC_ERR_INVALID);
    /* pid 999999999 exists nowhere, but on another host it is not ours to judge. */
    dg_stmt *s = dg_store_stmt(a, "INSERT INTO store_leases(name, owner, until_ms) "
                                  "VALUES ('outbox:9', 'elsewhere.example/999999999/ab', 5000)");
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(dg_step(s), DG_DONE);
    int got = 0, fresh = 0;
    int64_t other = 0;
    ck_assert_int_eq(dg_store_lease_take(a, "outbox:9", 1000, 2000, 0, &got, &fresh, &other),
                     OC_OK);
    ck_assert_int_eq(got, 0);
    ck_assert_int_eq(other, 5000);
    ck_assert_int_eq(dg_store_commit(a), OC_OK);
    dg_store_close(a);
    /* A host name of 64 characters does not fit gethostname's buffer: the
     * id goes without a host part rather than without an id. */
    char longhost[65];
    memset(longhost, 'h', 64);
    longhost[64] = '\0';
    if (slashed && sethostname(longhost, 64) == 0) {
        a = open_store(db);
        ck_assert_msg(dg_store_instance(a)[0] == '/', "%s", dg_store_instance(a));
        dg_store_close(a);
    }
    tu_rmtree(dir);
    free(dir);
    free(db);
}
END_TEST

/* ---- two dispatchers in two processes --------------------------------------------------- */

#define N_CHANS 4

typedef struct shenv {
    char *dir, *db;
    fake_discord *fd;
    char chans[N_CHANS][24];
    dg_store *st; /* the parent's own connection: enqueue and look */
} shenv;

/* A dispatcher process: reads the fake's URL from rfd, dispatches on db
 * until rfd reaches its end, then stops cleanly (exit 0) or exits 1. */
static void dispatch_child(int rfd, const char *db, long lease_ms, int inflight)
{
    char url[200];
    size_t n = 0;
    while (n + 1 < sizeof url && read(rfd, url + n, 1) == 1 && url[n] != '\n')
        n++;
    url[n] = '\0';
    obe e;
    char err[256];
    static const dg_chat_options tune = {
        .timeout_ms = 5000, .backoff_base_ms = 5, .backoff_max_ms = 40};
    if (!n || obe_open(&e, url, db, &tune, err, sizeof err) != 0)
        _exit(1);
    dg_outbox_options o = {.backoff_base_ms = 20,
                           .backoff_max_ms = 200,
                           .max_attempts = 100,
                           .max_inflight = inflight,
                           .lease_ms = lease_ms};
    if (dg_outbox_start_opts(&e.p, &o, &e.p.outbox, err, sizeof err) != OC_OK)
        _exit(1);
    char c;
    while (read(rfd, &c, 1) > 0)
        ;
    obe_close(&e);
    _exit(0);
}

static pid_t spawn(int *wfd, const char *db, long lease_ms, int inflight)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[1]);
        dispatch_child(p[0], db, lease_ms, inflight);
    }
    close(p[0]);
    *wfd = p[1];
    return pid;
}

static void tell_url(shenv *s, int wfd)
{
    char line[200];
    int len = snprintf(line, sizeof line, "%s\n", fake_discord_url(s->fd));
    ck_assert_int_eq(write(wfd, line, (size_t)len), len);
}

static void shenv_up(shenv *s, const char *db)
{
    char err[200];
    ck_assert_msg(fake_discord_start(NULL, &s->fd, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(fake_discord_add_user(s->fd, OBE_TOKEN, OBE_MOD_ID, "moderator", 1), 0);
    for (int c = 0; c < N_CHANS; c++)
        ck_assert_int_eq(fake_discord_add_channel(s->fd, NULL, "ch", s->chans[c]), 0);
    s->st = open_store(db);
}

/* rows_per channel rows "c<c>-<i>", queued ten at a time over the channels. */
static void enqueue_all(shenv *s, int rows_per)
{
    int total = rows_per * N_CHANS;
    for (int i = 0; i < total;) {
        ck_assert_int_eq(dg_store_begin(s->st), OC_OK);
        for (int k = 0; k < 10 && i < total; k++, i++) {
            char text[32];
            snprintf(text, sizeof text, "c%d-%03d", i % N_CHANS, i / N_CHANS);
            ck_assert_int_eq(dg_outbox_enqueue(s->st, s->chans[i % N_CHANS], text, NULL, 0, 1000),
                             OC_OK);
        }
        ck_assert_int_eq(dg_store_commit(s->st), OC_OK);
    }
}

static int64_t count_state(shenv *s, dg_outbox_state state)
{
    int64_t n = -1;
    ck_assert_int_eq(dg_store_begin(s->st), OC_OK);
    ck_assert_int_eq(dg_store_outbox_count(s->st, state, &n), OC_OK);
    dg_store_rollback(s->st);
    return n;
}

/* Wait (bounded) until no row is pending. */
static void wait_all_done(shenv *s, long ms)
{
    for (long w = 0; w < ms && count_state(s, DG_OUTBOX_PENDING) > 0; w += 20)
        usleep(20 * 1000);
    ck_assert_msg(count_state(s, DG_OUTBOX_PENDING) == 0, "%lld rows still pending after %ld ms",
                  (long long)count_state(s, DG_OUTBOX_PENDING), ms);
}

/* Every channel got exactly its rows_per messages, in order. */
static void assert_delivered(shenv *s, int rows_per)
{
    for (int c = 0; c < N_CHANS; c++) {
        json_t *msgs = fake_discord_messages(s->fd, s->chans[c]);
        ck_assert_msg(json_array_size(msgs) == (size_t)rows_per, "channel %d has %zu messages", c,
                      json_array_size(msgs));
        for (int i = 0; i < rows_per; i++) {
            char want[32];
            snprintf(want, sizeof want, "c%d-%03d", c, i);
            ck_assert_str_eq(
                json_string_value(json_object_get(json_array_get(msgs, (size_t)i), "content")),
                want);
        }
        json_decref(msgs);
    }
    ck_assert_int_eq(count_state(s, DG_OUTBOX_SENT), rows_per * N_CHANS);
    ck_assert_int_eq(count_state(s, DG_OUTBOX_FAILED), 0);
}

/* POST requests that carried a nonce (sends, first or again). */
static size_t posts(shenv *s)
{
    json_t *reqs = fake_discord_requests(s->fd, 0);
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(reqs); i++) {
        json_t *body = json_object_get(json_array_get(reqs, i), "body");
        n += json_object_get(body, "nonce") != NULL;
    }
    json_decref(reqs);
    return n;
}

static void reap_ok(pid_t pid)
{
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "dispatcher status %d", status);
}

static void shenv_down(shenv *s)
{
    dg_store_close(s->st);
    fake_discord_stop(s->fd);
    tu_rmtree(s->dir);
    free(s->dir);
    free(s->db);
}

/* _i = 0: a healthy Discord; 1: 30% of calls fail (429, 500, 500 after
 * processing). Each row is posted once (0) and delivered once (both). */
START_TEST(two_processes_send_each_row_once_in_order)
{
    shenv s = {0};
    s.dir = tu_mkdtemp();
    s.db = tu_db_target(s.dir);
    dg_store_close(open_store(s.db)); /* the schema exists before the children open it */
    int w1, w2;
    pid_t p1 = spawn(&w1, s.db, 0, 16), p2 = spawn(&w2, s.db, 0, 16);
    shenv_up(&s, s.db);
    if (_i)
        fake_discord_set_fail_rate(s.fd, 0.3, 20261201, 0.01);
    tell_url(&s, w1);
    tell_url(&s, w2);
    enqueue_all(&s, 100);
    wait_all_done(&s, 90000);
    close(w1);
    close(w2);
    reap_ok(p1);
    reap_ok(p2);
    assert_delivered(&s, 100);
    size_t n = posts(&s);
    fprintf(stderr, "shared: two dispatchers%s: %d rows, %zu posts\n", _i ? ", 30% faults" : "",
            100 * N_CHANS, n);
    if (!_i)
        ck_assert_uint_eq(n, 100 * N_CHANS); /* nothing posted twice */
    shenv_down(&s);
}
END_TEST

/*
 * A dispatcher killed with -9 in the middle: a second one finishes its
 * channels. _i = 0: the dead process is reaped, so the second sees at once
 * that the lease's holder is gone; 1: it stays a zombie (its pid looks
 * alive), so the lease must run out (1 s here). Each row is delivered
 * once, in order; rows in flight at the kill are posted again with their
 * nonce (the figure is printed).
 */
START_TEST(dead_instance_channels_taken_over)
{
    shenv s = {0};
    s.dir = tu_mkdtemp();
    s.db = tu_db_target(s.dir);
    dg_store_close(open_store(s.db));
    int wa, wb;
    pid_t pa = spawn(&wa, s.db, 1000, 1), pb = spawn(&wb, s.db, 1000, 1);
    shenv_up(&s, s.db);
    /* Slow answers: the first dispatcher is mid-way when it dies. */
    ck_assert_int_eq(fake_discord_add_fault(s.fd, "*", FD_FAULT_DELAY, 100000, 0, 15), 0);
    enqueue_all(&s, 40);
    tell_url(&s, wa);
    ck_assert_int_eq(fake_discord_wait_messages(s.fd, NULL, 12, 30000), 0);
    kill(pa, SIGKILL);
    if (!_i) {
        int status = 0;
        ck_assert_int_eq(waitpid(pa, &status, 0), pa);
        ck_assert(WIFSIGNALED(status));
    }
    size_t before = fake_discord_message_count(s.fd, NULL);
    ck_assert_uint_lt(before, 40 * N_CHANS); /* it died with rows owed */
    fake_discord_clear_faults(s.fd);
    tell_url(&s, wb);
    wait_all_done(&s, 60000);
    close(wb);
    reap_ok(pb);
    if (_i) {
        int status = 0;
        ck_assert_int_eq(waitpid(pa, &status, 0), pa);
    }
    close(wa);
    assert_delivered(&s, 40);
    size_t n = posts(&s);
    fprintf(stderr,
            "shared: kill -9 of one dispatcher (%s): %d rows, %zu delivered before the "
            "kill, %zu posted again with their nonce\n",
            _i ? "lease ran out" : "holder gone", 40 * N_CHANS, before, n - 40 * N_CHANS);
    /* At most the post in flight per channel (one at a time) goes again. */
    ck_assert_uint_le(n - 40 * N_CHANS, N_CHANS);
    shenv_down(&s);
}
END_TEST

/* ---- two turn engines on one file ---------------------------------------------------------- */

#define CH "400000000000000001"

static const char *const AGENTS[] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};

/* Both instances give every agent the same verdict; returns the speaker
 * (the one agent not routed to the no-reply model) or -1. */
static int agree(tth *a, tth *b)
{
    int speaker = -1;
    for (int i = 0; i < 3; i++) {
        int va = tth_resolve(a, AGENTS[i], CH, NULL), vb = tth_resolve(b, AGENTS[i], CH, NULL);
        ck_assert_int_ge(va, 0);
        ck_assert_msg(va == vb, "%s: instance A says %d, B says %d (1 no-reply, 0 speak)",
                      AGENTS[i], va, vb);
        if (!va)
            speaker = i;
    }
    return speaker;
}

START_TEST(two_engines_on_one_file_agree)
{
    tth a, b;
    tth_start(&a, "channel", NULL);
    tth_start(&b, "channel", a.store); /* a's store: its dbPath or store.url again */
    ck_assert_str_ne(dg_store_instance(tth_plugin(&a)->store),
                     dg_store_instance(tth_plugin(&b)->store));
    /* Alternate which instance sees each event first; both see every one
     * (each gateway's accounts report the same Discord messages). */
    agree(&a, &b); /* every agent joins the channel, through either instance */
    ck_assert_int_eq(tth_msg(&a, CH, NULL, "500000000000000100", TTH_HUMAN_UID, 0,
                             "Count to six, one number each.", NULL),
                     0);
    ck_assert_int_eq(tth_msg(&b, CH, NULL, "500000000000000100", TTH_HUMAN_UID, 0,
                             "Count to six, one number each.", NULL),
                     0);
    int turns = 0;
    for (int n = 1; n <= 6; n++) {
        int sp = agree(&a, &b);
        ck_assert_msg(sp >= 0, "nobody speaks before number %d", n);
        tth *runs = n % 2 ? &a : &b, *other = n % 2 ? &b : &a;
        char out[8], mid[24];
        snprintf(out, sizeof out, "%d", n);
        snprintf(mid, sizeof mid, "5000000000000002%02d", n);
        ck_assert_int_eq(tth_run(runs, AGENTS[sp], CH, NULL, out, mid), 1);
        ck_assert_int_eq(tth_msg(other, CH, NULL, mid, tth_uid(AGENTS[sp]), 1, out, NULL), 0);
        turns++;
    }
    ck_assert_int_eq(turns, 6);
    dg_turn_state sa, sb;
    dg_scope sc;
    ck_assert_int_eq(dg_scope_conversation(CH, &sc), OC_OK);
    agree(&a, &b); /* both synced */
    ck_assert_int_eq(dg_turns_peek(tth_plugin(&a)->turns, &sc, &sa, NULL, NULL), OC_OK);
    ck_assert_int_eq(dg_turns_peek(tth_plugin(&b)->turns, &sc, &sb, NULL, NULL), OC_OK);
    ck_assert(dg_turn_state_same(&sa, &sb));
    tth_free(&b);
    tth_free(&a);
}
END_TEST

/* The cases of both suites; on_pg: the store is a PostgreSQL database of
 * a server the suite starts (tu_db_target gives each test its schema). */
static Suite *shared_suite(const char *name, int on_pg)
{
    Suite *s = suite_create(name);
    if (on_pg && pgs_skipped())
        return s;
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 150);
    if (on_pg)
        pgs_on_pg(tc, 1);
    tcase_add_test(tc, change_log_names_what_other_instances_changed);
    tcase_add_test(tc, probe_from_memory_sees_every_commit);
    tcase_add_test(tc, change_log_only_while_another_store_is_open);
    tcase_add_test(tc, alone_store_reads_the_change_log_only_after_another_commit);
    tcase_add_test(tc, alone_claims_without_reading_yet_miss_no_duplicate);
    tcase_add_test(tc, lease_held_renewed_taken_over_and_released);
    tcase_add_test(tc, instance_id_and_other_hosts_leases);
    tcase_add_loop_test(tc, two_processes_send_each_row_once_in_order, 0, 2);
    tcase_add_loop_test(tc, dead_instance_channels_taken_over, 0, 2);
    tcase_add_test(tc, two_engines_on_one_file_agree);
    suite_add_tcase(s, tc);
    return s;
}

Suite *make_shared_suite(void)
{
    return shared_suite("shared", 0);
}

/* The same cases with the instances on one PostgreSQL database. */
Suite *make_shared_pg_suite(void)
{
    return shared_suite("shared_pg", 1);
}
