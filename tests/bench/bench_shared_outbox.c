/*
 * bench_shared_outbox.c -- outbox throughput with two dispatchers on one
 * PostgreSQL store against one dispatcher, round by round in
 * one run: a round owes K messages over C channels in one transaction (not
 * timed), starts N dispatcher processes on the store (each its own plugin
 * connection, Discord client and outbox, ready before the clock starts),
 * and times from their start signal until the fake Discord (in this
 * process, lean) holds every message; the processes then stop. N = 1 and
 * N = 2 alternate, which goes first too. Figures are us per message; the
 * ratio is two dispatchers' rate over one's (aim >= 1.0x). The channels
 * are split between the dispatchers by their leases (one sender per
 * channel at a time), so two can post in parallel where one posts its
 * max_inflight at once. BENCH_SHARED_K (messages per round, 400),
 * BENCH_SHARED_CHANNELS (8), BENCH_SHARED_ROUNDS (8 per side) change it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_table.h"
#include "fake_discord.h"
#include "outbox.h"
#include "outbox_env.h"
#include "pg_server.h"
#include "store.h"

#define MAX_CH 64

/* A dispatcher process: opens the store and its client, says 'r' on
 * ready_fd, starts its outbox on 'g' from go_fd, stops at go_fd's end. */
static void dispatcher(int go_fd, int ready_fd, const char *url, const char *db)
{
    obe e;
    char err[256];
    static const dg_chat_options tune = {
        .timeout_ms = 5000, .backoff_base_ms = 5, .backoff_max_ms = 40};
    if (obe_open(&e, url, db, &tune, err, sizeof err) != 0)
        _exit(1);
    char c = 'r';
    if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1)
        _exit(1);
    dg_outbox_options o = {
        .backoff_base_ms = 20, .backoff_max_ms = 200, .max_attempts = 100, .max_inflight = 16};
    if (dg_outbox_start_opts(&e.p, &o, &e.p.outbox, err, sizeof err) != OC_OK)
        _exit(1);
    while (read(go_fd, &c, 1) > 0)
        ;
    obe_close(&e);
    _exit(0);
}

/* One round with n dispatchers; us per message, or -1. */
static double round_of(fake_discord *fd, dg_store *st, const char *db, char ch[][24], int n_ch,
                       long k, long *seq, int n)
{
    const char *mention[] = {"300000000000000001"};
    if (dg_store_begin(st) != OC_OK)
        return -1;
    for (long i = 0; i < k; i++) {
        char text[80];
        snprintf(text, sizeof text, "shared bench %07ld: the turn passes on", (*seq)++);
        if (dg_outbox_enqueue(st, ch[i % n_ch], text, mention, 1, 1000) != OC_OK) {
            dg_store_rollback(st);
            return -1;
        }
    }
    if (dg_store_commit(st) != OC_OK)
        return -1;
    size_t before = fake_discord_message_count(fd, NULL);
    pid_t pid[2];
    int go[2][2], ready[2][2];
    for (int d = 0; d < n; d++) {
        if (pipe(go[d]) || pipe(ready[d]))
            return -1;
        pid[d] = fork();
        if (pid[d] < 0)
            return -1;
        if (pid[d] == 0) {
            /* Only its own ends: an inherited end of the first one's go
             * pipe would keep that one from ever seeing its end. */
            for (int j = 0; j < d; j++) {
                close(go[j][1]);
                close(ready[j][0]);
            }
            close(go[d][1]);
            close(ready[d][0]);
            dispatcher(go[d][0], ready[d][1], fake_discord_url(fd), db);
        }
        close(go[d][0]);
        close(ready[d][1]);
    }
    char c;
    int ok = 1;
    for (int d = 0; d < n; d++)
        ok &= read(ready[d][0], &c, 1) == 1;
    double t0 = bench_now_ns();
    for (int d = 0; d < n; d++)
        ok &= write(go[d][1], "g", 1) == 1;
    /* Bounded: 60 s for a round. */
    while (ok && fake_discord_message_count(fd, NULL) < before + (size_t)k &&
           bench_now_ns() - t0 < 60e9)
        usleep(200);
    double us = (bench_now_ns() - t0) / 1e3 / (double)k;
    if (fake_discord_message_count(fd, NULL) < before + (size_t)k)
        ok = 0;
    for (int d = 0; d < n; d++) {
        close(go[d][1]);
        close(ready[d][0]);
        int status = 0;
        if (waitpid(pid[d], &status, 0) != pid[d] || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            ok = 0;
    }
    return ok ? us : -1;
}

int bench_shared_outbox(void)
{
    long k = bench_size("BENCH_SHARED_K", 400, 100);
    long n_ch = bench_env_long("BENCH_SHARED_CHANNELS", 8);
    long rounds = bench_size("BENCH_SHARED_ROUNDS", 8, 2);
    bench_expect("shared_outbox", 1);
    if (k < 10 || n_ch < 1 || n_ch > MAX_CH || rounds < 2 || !pgs_start())
        return 1;
    char *db = pgs_fresh_url();
    fake_discord_options fo = {.lean = 1};
    fake_discord *fd = NULL;
    char err[256] = "";
    obe e;
    memset(&e, 0, sizeof e);
    int rc = fake_discord_start(&fo, &fd, err, sizeof err) == 0 ? 0 : 1;
    if (!rc)
        rc = fake_discord_add_user(fd, OBE_TOKEN, OBE_MOD_ID, "moderator", 1) ? 1 : 0;
    char ch[MAX_CH][24];
    for (long c = 0; !rc && c < n_ch; c++)
        rc = fake_discord_add_channel(fd, NULL, "bench", ch[c]) ? 1 : 0;
    /* The parent's own connection owes the rows (and made the schema). */
    if (!rc)
        rc = obe_open(&e, fake_discord_url(fd), db, NULL, err, sizeof err) ? 1 : 0;
    double *one = calloc((size_t)rounds, sizeof *one), *two = calloc((size_t)rounds, sizeof *two);
    long seq = 0;
    if (!one || !two)
        rc = 1;
    /* A warm-up round each, not counted (connections, the fake's threads). */
    if (!rc && (round_of(fd, e.p.store, db, ch, (int)n_ch, k, &seq, 1) < 0 ||
                round_of(fd, e.p.store, db, ch, (int)n_ch, k, &seq, 2) < 0))
        rc = 1;
    for (long r = 0; !rc && r < rounds; r++) {
        int first = r % 2 ? 2 : 1;
        double a = round_of(fd, e.p.store, db, ch, (int)n_ch, k, &seq, first);
        double b = a < 0 ? -1 : round_of(fd, e.p.store, db, ch, (int)n_ch, k, &seq, 3 - first);
        if (a < 0 || b < 0)
            rc = 1;
        one[r] = first == 1 ? a : b;
        two[r] = first == 1 ? b : a;
    }
    if (!rc) {
        bench_sort(one, rounds);
        bench_sort(two, rounds);
        double o50 = bench_pct(one, rounds, 0.5), o99 = bench_pct(one, rounds, 0.99);
        double t50 = bench_pct(two, rounds, 0.5), t99 = bench_pct(two, rounds, 0.99);
        printf("outbox on PostgreSQL, %ld messages over %ld channels per round, %ld rounds a "
               "side: one dispatcher p50 %.1f us/msg p99 %.1f; two dispatchers p50 %.1f us/msg "
               "p99 %.1f\n",
               k, n_ch, rounds, o50, o99, t50, t99);
        /* Throughput ratio: two's rate over one's = one's time over two's. */
        bench_row("PG outbox, two dispatchers (rate)", "us/msg", t50, t99, "one dispatcher", o50,
                  o99, o50 / t50, o99 / t99, 1, 1.0);
    } else {
        printf("bench_shared_outbox: a round failed (%s)\n", *err ? err : "a dispatcher");
    }
    free(one);
    free(two);
    if (e.p.store)
        obe_close(&e);
    fake_discord_stop(fd);
    free(db);
    pgs_stop();
    return rc;
}
