/*
 * bench_outbox.c -- the outbox beside raw libcurl posts of the same
 * messages to the same fake Discord, round by round in one run:
 *   - 1, 4 and 16 channels: a round posts K messages serially on one
 *     keep-alive libcurl handle (the floor), and has the outbox deliver K
 *     messages that were owed in one transaction before the round (the
 *     plugin enqueues inside the transaction of the state change; that
 *     commit is not the outbox's cost). The outbox's time runs from the kick
 *     until it is idle: every row posted AND marked sent. Which side goes
 *     first alternates. Figures are us per message; the ratio is the
 *     outbox's rate over the raw rate (aims: >= 0.9x one channel, >= 1.5x
 *     four and sixteen);
 *   - backlog: N rows pending at once (an outage) drained, per row, for
 *     N = 1k, 10k (three drains), 100k, bracketed by three 1k drains each
 *     (aim: 100k within 1.2x of the 1k p50 per row). A large drain is
 *     judged by the p50 of its windows of 1000 rows (bench_backlog says
 *     why), and its curve is printed: the per-row cost in each tenth of the
 *     drain, by how many rows were still pending. Every channel gets the
 *     same number of messages in the large sizes, and 1k is spread over 16
 *     channels so that it, too, keeps 16 posts in flight;
 *   - the delay from a kick to delivery on an idle outbox;
 *   - the 1/4/16-channel rows again against a fake Discord that answers
 *     each request BENCH_OUTBOX_LATENCY_US after it (default 10000: 10 ms;
 *     0 leaves these rows out), raw serial posts to the same slow fake as
 *     the floor. The rows above, with a fake that answers at once on the
 *     same two cores, measure the outbox's CPU per message: there,
 *     parallel posts have no waiting to overlap and cannot win. Discord's
 *     REST answers take tens of milliseconds from a well-connected host;
 *     10 ms is at the low end, so it understates what parallel posts win
 *     there. BENCH_OUTBOX_LAT_K (48) and BENCH_OUTBOX_LAT_ROUNDS (7) size
 *     these rounds (a raw round of 48 posts takes about half a second).
 * Placement: with two CPUs or more, the fake Discord's threads run on CPU 1
 * and both clients (the raw handle and the dispatcher) on CPU 0, alike for
 * both sides (BENCH_OUTBOX_PIN=0: wherever the scheduler puts them). Discord
 * does not share a core with the plugin; and unpinned, where the scheduler
 * happened to put each client beside its server thread decided the
 * one-channel ratio more than the code did: the same binary gave 0.42x to
 * 1.38x in consecutive runs on this 2-core VM, 0.65x to 1.14x pinned.
 * BENCH_OUTBOX_K (messages per round, 200), BENCH_OUTBOX_ROUNDS (31),
 * BENCH_BACKLOG_MAX (100000) change the sizes; BENCH_OUTBOX_INFLIGHT the
 * outbox's max_inflight (default 16); BENCH_OUTBOX_ONLY=N runs only the N-channel
 * comparison (for a profiler), BENCH_OUTBOX_BACKLOG_ONLY=1 only the backlog curve.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_table.h"
#include "fake_discord.h"
#include "outbox.h"
#include "outbox_env.h"
#include "store.h"
#include "testutil.h"

#define MAX_CHANNELS 512
#define PER_CHANNEL_BACKLOG 250
#define BACKLOG_MIN_CHANNELS 16
#define SMALL_DRAINS 3   /* 1k drains in each bracket of the backlog curve */
#define MID_DRAINS 3     /* 10k drains, their windows together the 10k figure */
#define WINDOW_ROWS 1000 /* rows per window of a large drain (drain_windows) */
#define POLL_US 1000     /* how often a backlog drain reads the sent counter */

typedef struct bctx {
    fake_discord *fd;
    obe e;
    CURL *raw;
    struct curl_slist *hdrs;
    long seq;        /* message number, for distinct texts and nonces */
    long latency_us; /* the fake's response latency (0: answers at once) */
    char dir[32];
    int e_open;     /* e was opened (obe_close it) */
    int pinned;     /* fake on CPU 1, clients on CPU 0 (bench_pin_begin) */
    cpu_set_t cpus; /* the calling thread's CPUs before, given back on close */
} bctx;

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v && atol(v) > 0 ? atol(v) : dflt;
}

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return sz * n;
}

static void text_of(long i, char *out, size_t len)
{
    snprintf(out, len, "bench message %07ld for <@300000000000000001>: the turn passes on", i);
}

static double clock_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double now_us(void)
{
    return clock_us(CLOCK_MONOTONIC);
}

/* CPU of the whole process (client, outbox and the fake's threads): with
 * the wall time it tells a CPU-bound round from one that waits. */
static double cpu_us(void)
{
    return clock_us(CLOCK_PROCESS_CPUTIME_ID);
}

/* k raw posts round-robin over chans, serially on one keep-alive handle,
 * with the body the outbox sends. us per message, or -1. */
static double raw_round(bctx *b, char chans[][24], int n_chans, int k)
{
    double t0 = now_us();
    for (int i = 0; i < k; i++) {
        char url[160], text[96], body[400];
        long m = b->seq++;
        snprintf(url, sizeof url, "%s/channels/%s/messages", fake_discord_url(b->fd),
                 chans[i % n_chans]);
        text_of(m, text, sizeof text);
        snprintf(body, sizeof body,
                 "{\"content\":\"%s\",\"allowed_mentions\":{\"parse\":[],\"users\":"
                 "[\"300000000000000001\"]},\"nonce\":\"raw%ld\",\"enforce_nonce\":true}",
                 text, m);
        curl_easy_setopt(b->raw, CURLOPT_URL, url);
        curl_easy_setopt(b->raw, CURLOPT_POSTFIELDS, body);
        long status = 0;
        if (curl_easy_perform(b->raw) != CURLE_OK ||
            curl_easy_getinfo(b->raw, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status != 200)
            return -1;
    }
    return (now_us() - t0) / k;
}

/* Owe k messages round-robin over chans in one transaction (not timed). */
static int owe(bctx *b, char chans[][24], int n_chans, long k)
{
    const char *mention[] = {"300000000000000001"};
    if (dg_store_begin(b->e.p.store) != OC_OK)
        return -1;
    for (long i = 0; i < k; i++) {
        char text[96];
        text_of(b->seq++, text, sizeof text);
        if (dg_outbox_enqueue(b->e.p.store, chans[i % n_chans], text, mention, 1,
                              dg_now_ms(&b->e.p)) != OC_OK) {
            dg_store_rollback(b->e.p.store);
            return -1;
        }
    }
    return dg_store_commit(b->e.p.store) == OC_OK ? 0 : -1;
}

/* Kick, wait until every owed row is posted and marked. us per message. */
static double drain(bctx *b, long k)
{
    double t0 = now_us();
    dg_outbox_kick(b->e.p.outbox);
    if (dg_outbox_wait_idle(b->e.p.outbox, 600000) != OC_OK)
        return -1;
    return (now_us() - t0) / (double)k;
}

static double outbox_round(bctx *b, char chans[][24], int n_chans, int k)
{
    if (owe(b, chans, n_chans, k) != 0)
        return -1;
    return drain(b, k);
}

static int add_channels(bctx *b, const char *name, char out[][24], int n)
{
    for (int c = 0; c < n; c++)
        if (fake_discord_add_channel(b->fd, NULL, name, out[c]) != 0)
            return -1;
    return 0;
}

static int bench_channels(bctx *b, int n_chans, int k, int rounds)
{
    char(*raw)[24] = calloc(MAX_CHANNELS, 24), (*ob)[24] = calloc(MAX_CHANNELS, 24);
    double *tr = calloc((size_t)rounds, sizeof *tr), *to = calloc((size_t)rounds, sizeof *to);
    double *cr = calloc((size_t)rounds, sizeof *cr), *co = calloc((size_t)rounds, sizeof *co);
    int rc = -1;
    if (!raw || !ob || !tr || !to || !cr || !co || add_channels(b, "raw", raw, n_chans) ||
        add_channels(b, "outbox", ob, n_chans))
        goto out;
    /* One warm-up round each (connections, statement cache). */
    if (raw_round(b, raw, n_chans, k / 4 + 1) < 0 || outbox_round(b, ob, n_chans, k / 4 + 1) < 0)
        goto out;
    for (int r = 0; r < rounds; r++) {
        /* Fresh channels every round: the fake looks a nonce up among all
         * messages of its channel (Discord does not), and that server work
         * would otherwise grow round by round on both sides. */
        if (add_channels(b, "raw", raw, n_chans) || add_channels(b, "outbox", ob, n_chans))
            goto out;
        for (int side = 0; side < 2; side++) {
            double c0 = cpu_us();
            if ((side == 0) == (r % 2 == 1)) {
                tr[r] = raw_round(b, raw, n_chans, k);
                cr[r] = (cpu_us() - c0) / k;
            } else {
                /* The enqueue commit is not timed (see owe), so not counted either. */
                if (owe(b, ob, n_chans, k) != 0) {
                    to[r] = -1;
                    break;
                }
                c0 = cpu_us();
                to[r] = drain(b, k);
                co[r] = (cpu_us() - c0) / k;
            }
        }
        if (tr[r] < 0 || to[r] < 0) {
            printf("outbox bench: a round failed (%d channels)\n", n_chans);
            goto out;
        }
        fake_discord_clear_requests(b->fd);
    }
    bench_sort(tr, rounds);
    bench_sort(to, rounds);
    bench_sort(cr, rounds);
    bench_sort(co, rounds);
    double r50 = bench_pct(tr, rounds, 0.5), r99 = bench_pct(tr, rounds, 0.99);
    double o50 = bench_pct(to, rounds, 0.5), o99 = bench_pct(to, rounds, 0.99);
    if (b->latency_us)
        printf("(fake Discord answering %ld us after each request) ", b->latency_us);
    if (b->pinned)
        printf("(clients on CPU 0, fake on CPU 1) ");
    printf("outbox, %2d channel%s: %.1f us/msg p50 (%.1f p99) = %.0f msg/s; raw serial "
           "libcurl %.1f us/msg p50 (%.1f p99) = %.0f msg/s; %d rounds of %d\n",
           n_chans, n_chans == 1 ? " " : "s", o50, o99, 1e6 / o50, r50, r99, 1e6 / r50, rounds, k);
    printf("  process CPU per message (client + fake, both cores): outbox %.1f us, raw %.1f us "
           "p50\n",
           bench_pct(co, rounds, 0.5), bench_pct(cr, rounds, 0.5));
    char what[64];
    if (b->latency_us)
        snprintf(what, sizeof what, "outbox, %d channel%s, %g ms Discord", n_chans,
                 n_chans == 1 ? "" : "s", (double)b->latency_us / 1000);
    else
        snprintf(what, sizeof what, "outbox rate, %d channel%s", n_chans, n_chans == 1 ? "" : "s");
    bench_row(what, "us/msg", o50, o99, "raw serial", r50, r99, r50 / o50, r99 / o99, 1,
              n_chans == 1 ? 0.9 : 1.5);
    rc = 0;
out:
    free(raw);
    free(ob);
    free(tr);
    free(to);
    free(cr);
    free(co);
    return rc;
}

/* Bytes this process handed to write calls so far (/proc/self/io wchar:
 * sockets and the database's WAL alike), or -1. */
static double wchar_now(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    if (!f)
        return -1;
    char line[128];
    double v = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "wchar:", 6))
            v = atof(line + 6);
    fclose(f);
    return v;
}

/*
 * Kick, then read the outbox's sent counter every POLL_US until n more rows
 * are marked sent. The time each WINDOW_ROWS of them took (per row, us)
 * goes into win[] (at most max_win; *n_win counts them; a last window of
 * fewer than WINDOW_ROWS / 2 rows is left out, too few rows to say much).
 * Returns the whole drain's time per row, or -1 (a row failed for good, or
 * 10 minutes passed). The 1k drains read the counter the same way, so both
 * sides of the backlog rows pay the polling alike.
 */
static double drain_windows(bctx *b, long n, double *win, long max_win, long *n_win)
{
    dg_outbox_stats st;
    dg_outbox_get_stats(b->e.p.outbox, &st);
    const uint64_t sent0 = st.sent, failed0 = st.failed;
    double t0 = now_us(), win_t = t0;
    long win_rows = 0;
    *n_win = 0;
    dg_outbox_kick(b->e.p.outbox);
    for (;;) {
        usleep(POLL_US);
        dg_outbox_get_stats(b->e.p.outbox, &st);
        double t = now_us();
        long done = (long)(st.sent - sent0);
        if (st.failed != failed0 || t - t0 > 600e6)
            return -1;
        long rows = done - win_rows;
        if (rows >= WINDOW_ROWS || (done >= n && rows >= WINDOW_ROWS / 2)) {
            if (*n_win < max_win)
                win[(*n_win)++] = (t - win_t) / (double)rows;
            win_t = t;
            win_rows = done;
        }
        if (done >= n)
            return (t - t0) / (double)n;
    }
}

/* Per-row drain cost of a backlog of n rows (n / PER_CHANNEL_BACKLOG
 * fresh channels, so the fake's per-channel work is the same for the large
 * n; at least BACKLOG_MIN_CHANNELS). Its windows (drain_windows) are added
 * to win[*n_win ..] (room for max_win in all). */
static double backlog_round(bctx *b, long n, double *win, long max_win, long *n_win)
{
    int n_chans = (int)(n / PER_CHANNEL_BACKLOG);
    /* At least as many channels as posts may fly (16 by default): with
     * fewer, the small backlog ran 4 posts at a time against the large
     * ones' 16, and more connections at once cost more CPU per message on
     * two cores (see the 4- and 16-channel rows), which read as a cost of
     * the backlog's size. */
    if (n_chans < BACKLOG_MIN_CHANNELS)
        n_chans = BACKLOG_MIN_CHANNELS;
    if (n_chans > MAX_CHANNELS)
        n_chans = MAX_CHANNELS;
    char(*ch)[24] = calloc(MAX_CHANNELS, 24);
    double per = -1;
    if (ch && add_channels(b, "backlog", ch, n_chans) == 0 && owe(b, ch, n_chans, n) == 0) {
        double c0 = cpu_us(), w0 = wchar_now();
        long got = 0;
        per = drain_windows(b, n, win + *n_win, max_win - *n_win, &got);
        *n_win += got;
        double w1 = wchar_now();
        /* CPU and bytes written per row tell a slower drain that works more
         * from one that only waited on a loaded machine. */
        printf("  backlog of %ldk rows over %d channels: %.1f us/row wall, %.1f us/row process "
               "CPU, %.0f bytes/row written (sockets and WAL)\n",
               n / 1000, n_chans, per, (cpu_us() - c0) / (double)n,
               w0 >= 0 && w1 >= 0 ? (w1 - w0) / (double)n : -1.0);
        /* Idle as the next round begins (the last marks are counted as
         * they commit, the pass that finds nothing comes after). */
        if (per >= 0 && dg_outbox_wait_idle(b->e.p.outbox, 60000) != OC_OK)
            per = -1;
    }
    fake_discord_clear_requests(b->fd);
    free(ch);
    return per;
}

/* The curve: per-row cost by how many rows were still pending, in tenths
 * of one large drain's windows (each the mean of its windows). */
static void print_curve(long n, const double *win, long n_win)
{
    if (n_win < 10)
        return;
    printf("  %ldk drain per row by rows still pending:", n / 1000);
    for (int d = 0; d < 10; d++) {
        long a = n_win * d / 10, z = n_win * (d + 1) / 10;
        double sum = 0;
        for (long i = a; i < z; i++)
            sum += win[i];
        printf(" %ldk %.1f", (n - n * d / 10) / 1000, sum / (double)(z - a));
    }
    printf(" us\n");
}

/* The small size (the floor) and the two large ones; a quick pass drains
 * fewer rows. */
static const long BACKLOG_SIZES[] = {1000, 10000, 100000};
static const long BACKLOG_QUICK[] = {250, 1000, 4000};

static const long *backlog_sizes(void)
{
    return bench_quick() ? BACKLOG_QUICK : BACKLOG_SIZES;
}

static long backlog_max(void)
{
    return env_long("BENCH_BACKLOG_MAX", backlog_sizes()[2]);
}

/* "10k", or "250" below a thousand rows. */
static void rows_label(long n, char *out, size_t cap)
{
    if (n >= 1000)
        snprintf(out, cap, "%ldk", n / 1000);
    else
        snprintf(out, cap, "%ld", n);
}

/* The rows bench_backlog adds: one per large size within the bound. */
static int backlog_rows(void)
{
    return (backlog_sizes()[1] <= backlog_max()) + (backlog_sizes()[2] <= backlog_max());
}

static int bench_backlog(bctx *b)
{
    long max = backlog_max();
    const long *sizes = backlog_sizes();
    double small[3 * SMALL_DRAINS];
    int n_small = 0;
    long max_win = max / (WINDOW_ROWS / 2) + MID_DRAINS * 20 + 16;
    double *win[3] = {NULL, calloc((size_t)max_win, sizeof(double)),
                      calloc((size_t)max_win, sizeof(double))};
    long n_win[3] = {0, 0, 0};
    double whole[3] = {0, 0, 0};
    int rc = -1;
    if (!win[1] || !win[2])
        goto out;
    /*
     * 1k x3, 10k x3, 1k x3, 100k, 1k x3: the small size brackets the large
     * ones. The floor is the p50 of the nine 1k drains (one 1k drain takes
     * 50-100 ms, short enough for one burst of other work on the machine to
     * double it). A large drain is judged by the p50 of its windows of
     * WINDOW_ROWS rows, each about as long as a 1k drain: a p50 of short
     * samples against the mean of a 5 s drain (which the earlier bench
     * took) compared unlike things, the mean taking every burst of the 5 s
     * in, the p50 leaving them out. A whole 1k drain also holds the kick
     * and the last posts' tail, about 2% of it, that a window inside a
     * large drain does not. The whole drains' means are printed too.
     */
    for (int s = 1; s <= 3; s++) {
        long unused = 0;
        double scratch[4];
        for (int k = 0; k < SMALL_DRAINS; k++)
            if ((small[n_small++] = backlog_round(b, sizes[0], scratch, 4, &unused)) < 0)
                goto out;
        if (s == 3 || sizes[s] > max)
            continue;
        int reps = s == 1 ? MID_DRAINS : 1;
        for (int k = 0; k < reps; k++) {
            double per = backlog_round(b, sizes[s], win[s], max_win, &n_win[s]);
            if (per < 0)
                goto out;
            whole[s] += per / reps;
        }
        if (s == 2)
            print_curve(sizes[s], win[s], n_win[s]);
    }
    bench_sort(small, n_small);
    double s50 = bench_pct(small, n_small, 0.5), s99 = bench_pct(small, n_small, 0.99);
    double w50[3] = {0, 0, 0}, w99[3] = {0, 0, 0};
    printf("backlog drain per row: 1k %.1f us (p50 of %d drains; p99 %.1f)", s50, n_small, s99);
    for (int s = 1; s < 3; s++) {
        if (n_win[s] <= 0)
            continue;
        bench_sort(win[s], n_win[s]);
        w50[s] = bench_pct(win[s], n_win[s], 0.5);
        w99[s] = bench_pct(win[s], n_win[s], 0.99);
        printf("; %ldk %.1f us (p50 of %ld windows of %d rows, %.2fx; whole drain %.1f us, "
               "%.2fx)",
               sizes[s] / 1000, w50[s], n_win[s], WINDOW_ROWS, w50[s] / s50, whole[s],
               whole[s] / s50);
    }
    printf("\n");
    for (int s = 1; s < 3; s++) {
        if (n_win[s] <= 0)
            continue;
        char what[96], big[24], small_rows[24];
        rows_label(sizes[s], big, sizeof big);
        rows_label(sizes[0], small_rows, sizeof small_rows);
        snprintf(what, sizeof what, "backlog %s, per row vs %s", big, small_rows);
        bench_row(what, "us/row", w50[s], w99[s], small_rows, s50, s99, w50[s] / s50, w99[s] / s99,
                  0, 1.2);
    }
    rc = 0;
out:
    free(win[1]);
    free(win[2]);
    return rc;
}

static int bench_latency(bctx *b)
{
    char ch[1][24];
    if (add_channels(b, "latency", ch, 1))
        return -1;
    const int probes = 20;
    double t[20];
    for (int i = 0; i < probes; i++) {
        size_t before = fake_discord_message_count(b->fd, ch[0]);
        double k0 = now_us();
        if (owe(b, ch, 1, 1) != 0)
            return -1;
        dg_outbox_kick(b->e.p.outbox);
        if (fake_discord_wait_messages(b->fd, ch[0], before + 1, 10000) != 0)
            return -1;
        t[i] = (now_us() - k0) / 1000.0;
        usleep(20 * 1000);
    }
    bench_sort(t, probes);
    printf("kick to delivery: p50 %.2f ms, worst %.2f ms over %d messages (aim: < 1000 ms)\n",
           bench_pct(t, probes, 0.5), t[probes - 1], probes);
    return 0;
}

/* A fake Discord answering latency_us after each request, the outbox
 * env on a fresh database and the raw handle. 0 or -1 (printed). */
static int bctx_open(bctx *b, long latency_us)
{
    memset(b, 0, sizeof *b);
    b->latency_us = latency_us;
    char err[256];
    /* Lean: the fake answers every post in full but keeps no message
     * bodies or request records, so its heap does not grow on every post
     * (both sides post to it alike). */
    fake_discord_options fo = {.lean = 1, .latency_us = latency_us};
    int pin = b->pinned = bench_pin_begin("BENCH_OUTBOX_PIN", &b->cpus);
    if (pin)
        bench_pin_self(1); /* the fake's threads start here and keep CPU 1 */
    if (fake_discord_start(&fo, &b->fd, err, sizeof err) != 0) {
        printf("fake: %s\n", err);
        return -1;
    }
    if (pin)
        bench_pin_self(0); /* the raw client and the dispatcher (started below) on CPU 0 */
    fake_discord_add_user(b->fd, OBE_TOKEN, OBE_MOD_ID, "moderator", 1);
    snprintf(b->dir, sizeof b->dir, "/tmp/dg-bench-XXXXXX");
    if (!mkdtemp(b->dir)) {
        b->dir[0] = '\0';
        return -1;
    }
    char db[64];
    snprintf(db, sizeof db, "%s/bench.db", b->dir);
    b->raw = curl_easy_init();
    b->hdrs = curl_slist_append(NULL, "Authorization: Bot " OBE_TOKEN);
    b->hdrs = curl_slist_append(b->hdrs, "Content-Type: application/json");
    curl_easy_setopt(b->raw, CURLOPT_HTTPHEADER, b->hdrs);
    curl_easy_setopt(b->raw, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(b->raw, CURLOPT_NOSIGNAL, 1L);
    if (obe_open(&b->e, fake_discord_url(b->fd), db, NULL, err, sizeof err) != 0) {
        printf("outbox env: %s\n", err);
        return -1;
    }
    b->e_open = 1;
    dg_outbox_options oo = {.max_inflight = (int)env_long("BENCH_OUTBOX_INFLIGHT", 0)};
    if (dg_outbox_start_opts(&b->e.p, &oo, &b->e.p.outbox, err, sizeof err) != OC_OK) {
        printf("outbox: %s\n", err);
        return -1;
    }
    return 0;
}

static void bctx_close(bctx *b)
{
    if (b->e_open)
        obe_close(&b->e);
    b->e_open = 0;
    if (b->dir[0])
        tu_rmtree(b->dir);
    curl_slist_free_all(b->hdrs);
    if (b->raw)
        curl_easy_cleanup(b->raw);
    fake_discord_stop(b->fd);
    if (b->pinned)
        bench_pin_end(&b->cpus); /* later benches */
    b->pinned = 0;
}

int bench_outbox(void)
{
    int k = (int)bench_size("BENCH_OUTBOX_K", 200, 50);
    int rounds = (int)bench_size("BENCH_OUTBOX_ROUNDS", 31, 3);
    const char *lat_env = getenv("BENCH_OUTBOX_LATENCY_US");
    long lat = lat_env && *lat_env ? atol(lat_env) : 10000;
    int lat_k = (int)bench_size("BENCH_OUTBOX_LAT_K", 48, 16);
    int lat_rounds = (int)bench_size("BENCH_OUTBOX_LAT_ROUNDS", 7, 2);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int chans[] = {1, 4, 16};
    long only = env_long("BENCH_OUTBOX_ONLY", 0); /* one channel count, no backlog (profiling) */
    int backlog_only = env_long("BENCH_OUTBOX_BACKLOG_ONLY", 0) != 0; /* the curve alone */
    int n_counts = only ? 1 : 3;
    bench_expect("outbox",
                 (backlog_only ? 0 : n_counts * (lat > 0 ? 2 : 1)) + (only ? 0 : backlog_rows()));
    int rc = 1;
    bctx b;
    if (bctx_open(&b, 0) != 0)
        goto out;
    for (int i = 0; i < 3 && !backlog_only; i++)
        if ((!only || only == chans[i]) && bench_channels(&b, chans[i], k, rounds) != 0)
            goto out;
    if (!only) {
        if (bench_backlog(&b) != 0) {
            printf("outbox bench: backlog failed\n");
            goto out;
        }
        if (bench_latency(&b) != 0) {
            printf("outbox bench: a probe was not delivered within 10 s\n");
            goto out;
        }
    }
    if (lat > 0 && !backlog_only) {
        bctx_close(&b);
        if (bctx_open(&b, lat) != 0)
            goto out;
        for (int i = 0; i < 3; i++)
            if ((!only || only == chans[i]) && bench_channels(&b, chans[i], lat_k, lat_rounds) != 0)
                goto out;
    }
    rc = 0;
out:
    bctx_close(&b);
    return rc;
}
