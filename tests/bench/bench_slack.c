/*
 * bench_slack.c -- raw serial chat.postMessage to the fake Slack through
 * the slack/ part, one channel and four, beside a raw libcurl form post of
 * the same request (the floor), round by round in one run:
 *   - unpaced (no_pacing: what the part costs per post against a fake
 *     that answers at once): the part's posts are keyed (metadata) and go
 *     on a fresh connection each, as they must (a reused connection that
 *     dies lets libcurl resend a post on its own, and Slack has no nonce to
 *     drop the copy); the floor posts the same form on one keep-alive
 *     handle, and a second floor on a fresh connection per post shows
 *     what of the gap is the connection;
 *   - paced as on Slack (one post a second per channel) with the pace
 *     scaled by BENCH_SLACK_PACE_SCALE (default 0.02: 20 ms a post and
 *     channel): the rate of serial posts round-robin over four channels
 *     against one channel (aim >= 3.5x: four channels' paces overlap).
 * Figures are us per message (p50, p99 over rounds). BENCH_SLACK_K (posts
 * per round, 100), BENCH_SLACK_ROUNDS (15), BENCH_SLACK_PACED_K (20),
 * BENCH_SLACK_LATENCY_US (the fake answers this long after each request;
 * default 0), BENCH_SLACK_PIN=0 (leave placement to the scheduler; by
 * default the fake runs on CPU 1 and the clients on CPU 0);
 *   - the outbox on Slack (unpaced): k rows owed in one transaction before
 *     the round (not timed), from the kick until every row is posted and
 *     marked, one channel and four, beside raw serial posts (the floor, on
 *     a fresh connection per post like the outbox's; the keep-alive floor
 *     printed beside), and again against a fake that answers
 *     BENCH_SLACK_OUTBOX_LATENCY_US after each request (default 10000:
 *     10 ms; 0 leaves them out), where posts to several channels overlap
 *     (aim >= 1.5x with four). BENCH_SLACK_OUTBOX_K (rows per round, 60),
 *     BENCH_SLACK_OUTBOX_LAT_K (24, five rounds).
 */
#include <curl/curl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_table.h"
#include "fake_slack.h"
#include "outbox.h"
#include "outbox_env.h"
#include "slack.h"
#include "store.h"
#include "testutil.h"

#define TOKEN "xoxb-0000-1111-BenchModeratorToken"
#define MOD "UMOD0001"
#define N_CHANS 4

typedef struct sctx {
    fake_slack *fs;
    dg_slack *s;
    CURL *raw;
    struct curl_slist *hdrs;
    char chans[N_CHANS][16];
    long seq;
    long latency_us; /* the fake's answer delay */
} sctx;

static size_t sink(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

/* k raw form posts round-robin over n channels on b->raw (fresh: a new
 * connection each). us per message, or -1. */
static double raw_round(sctx *b, int n, int k, int fresh)
{
    double t0 = bench_now_ns();
    char url[128];
    snprintf(url, sizeof url, "%s/chat.postMessage", fake_slack_url(b->fs));
    curl_easy_setopt(b->raw, CURLOPT_URL, url);
    curl_easy_setopt(b->raw, CURLOPT_FRESH_CONNECT, fresh ? 1L : 0L);
    for (int i = 0; i < k; i++) {
        char body[400];
        long m = b->seq++;
        snprintf(body, sizeof body,
                 "channel=%s&text=%%3C%%40UAG00001%%3E%%20message%%20%ld&unfurl_links=false&"
                 "unfurl_media=false&metadata=%%7B%%22event_type%%22%%3A%%22dirigent_outbox%%22%%"
                 "2C%%22event_payload%%22%%3A%%7B%%22key%%22%%3A%%22raw-%ld%%22%%7D%%7D",
                 b->chans[i % n], m, m);
        curl_easy_setopt(b->raw, CURLOPT_POSTFIELDS, body);
        long status = 0;
        if (curl_easy_perform(b->raw) != CURLE_OK ||
            curl_easy_getinfo(b->raw, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status != 200)
            return -1;
    }
    return (bench_now_ns() - t0) / 1e3 / k;
}

/* k keyed posts through s round-robin over n channels. us per message,
 * or -1. */
static double part_round(sctx *b, dg_slack *s, int n, int k)
{
    double t0 = bench_now_ns();
    for (int i = 0; i < k; i++) {
        char text[64], key[32];
        long m = b->seq++;
        snprintf(text, sizeof text, "<@UAG00001> message %ld", m);
        snprintf(key, sizeof key, "ob-%ld", m);
        dg_slack_post_spec p = {.channel_id = b->chans[i % n], .text = text, .key = key};
        dg_slack_err err;
        if (dg_slack_post(s, &p, NULL, &err) != DG_OK) {
            fprintf(stderr, "bench_slack: %s\n", err.message);
            return -1;
        }
    }
    return (bench_now_ns() - t0) / 1e3 / k;
}

/* The unpaced comparison over n channels: prints and adds a row. */
static int unpaced(sctx *b, int n, int k, int rounds)
{
    double *fig = calloc((size_t)rounds, sizeof *fig), *raw = calloc((size_t)rounds, sizeof *raw),
           *fresh = calloc((size_t)rounds, sizeof *fresh);
    int rc = -1;
    if (!fig || !raw || !fresh)
        goto out;
    for (int r = 0; r < rounds; r++) {
        /* Which side goes first alternates. */
        if (r % 2 == 0 && (raw[r] = raw_round(b, n, k, 0)) < 0)
            goto out;
        if ((fig[r] = part_round(b, b->s, n, k)) < 0 || (fresh[r] = raw_round(b, n, k, 1)) < 0)
            goto out;
        if (r % 2 == 1 && (raw[r] = raw_round(b, n, k, 0)) < 0)
            goto out;
    }
    bench_sort(fig, rounds);
    bench_sort(raw, rounds);
    bench_sort(fresh, rounds);
    double f50 = bench_pct(fig, rounds, 0.5), f99 = bench_pct(fig, rounds, 0.99);
    double r50 = bench_pct(raw, rounds, 0.5), r99 = bench_pct(raw, rounds, 0.99);
    printf("slack part, %d channel%s: %.1f us/msg p50 (%.1f p99) = %.0f msg/s; raw keep-alive "
           "libcurl %.1f us/msg p50 (%.1f p99); raw on a fresh connection per post %.1f us/msg "
           "p50; %d rounds of %d\n",
           n, n == 1 ? " " : "s", f50, f99, 1e6 / f50, r50, r99, bench_pct(fresh, rounds, 0.5),
           rounds, k);
    char what[64];
    snprintf(what, sizeof what, "slack post rate, %d channel%s", n, n == 1 ? "" : "s");
    bench_row(what, "us/msg", f50, f99, "raw keep-alive", r50, r99, r50 / f50, r99 / f99, 1, 0.9);
    /* Like for like: a raw post on a fresh connection too. */
    double n50 = bench_pct(fresh, rounds, 0.5), n99 = bench_pct(fresh, rounds, 0.99);
    snprintf(what, sizeof what, "slack post rate, %d ch, fresh conn.", n);
    bench_row(what, "us/msg", f50, f99, "raw fresh conn.", n50, n99, n50 / f50, n99 / f99, 1, 0.9);
    rc = 0;
out:
    free(fig);
    free(raw);
    free(fresh);
    return rc;
}

/* Paced as Slack paces chat.postMessage (scaled): four channels against
 * one, serial round-robin. */
static int paced(sctx *b, double scale, int k, int rounds)
{
    dg_slack_options o = {.api_base = fake_slack_url(b->fs), .token = TOKEN, .pace_scale = scale};
    dg_slack *s = NULL;
    char err[300];
    if (dg_slack_new(&o, &s, err, sizeof err) != DG_OK) {
        fprintf(stderr, "bench_slack: %s\n", err);
        return -1;
    }
    double *one = calloc((size_t)rounds, sizeof *one), *four = calloc((size_t)rounds, sizeof *four);
    int rc = -1;
    for (int r = 0; one && four && r < rounds; r++) {
        /* A round starts with every channel's bucket refilled. */
        struct timespec pause = {0, (long)(scale * 1e9) + 1000000L};
        nanosleep(&pause, NULL);
        if ((one[r] = part_round(b, s, 1, k)) < 0)
            goto out;
        nanosleep(&pause, NULL);
        if ((four[r] = part_round(b, s, N_CHANS, k)) < 0)
            goto out;
    }
    if (!one || !four)
        goto out;
    bench_sort(one, rounds);
    bench_sort(four, rounds);
    double o50 = bench_pct(one, rounds, 0.5), o99 = bench_pct(one, rounds, 0.99);
    double f50 = bench_pct(four, rounds, 0.5), f99 = bench_pct(four, rounds, 0.99);
    printf("slack paced (one post per %.0f ms and channel, Slack's 1 s scaled by %g): 4 channels "
           "%.1f us/msg p50 (%.1f p99) = %.0f msg/s; 1 channel %.1f us/msg p50 (%.1f p99) = %.0f "
           "msg/s; %d rounds of %d\n",
           scale * 1000, scale, f50, f99, 1e6 / f50, o50, o99, 1e6 / o50, rounds, k);
    bench_row("slack paced, 4 channels vs 1", "us/msg", f50, f99, "1 channel", o50, o99, o50 / f50,
              o99 / f99, 1, 3.5);
    rc = 0;
out:
    free(one);
    free(four);
    dg_slack_free(s);
    return rc;
}

/* k rows owed round-robin over n channels in one transaction (not timed),
 * then from the kick until the outbox is idle. us per message, or -1. */
static double outbox_round(sctx *b, obe *e, int n, int k)
{
    if (dg_store_begin(e->p.store) != DG_OK)
        return -1;
    const char *mention[] = {"UAG00001"};
    for (int i = 0; i < k; i++) {
        char text[64];
        snprintf(text, sizeof text, "<@UAG00001> message %ld", b->seq++);
        if (dg_outbox_enqueue(e->p.store, b->chans[i % n], text, mention, 1, dg_now_ms(&e->p)) !=
            DG_OK) {
            dg_store_rollback(e->p.store);
            return -1;
        }
    }
    if (dg_store_commit(e->p.store) != DG_OK)
        return -1;
    double t0 = bench_now_ns();
    dg_outbox_kick(e->p.outbox);
    if (dg_outbox_wait_idle(e->p.outbox, 120000) != DG_OK)
        return -1;
    return (bench_now_ns() - t0) / 1e3 / k;
}

/* The outbox on Slack over n channels against raw serial posts. */
static int outbox_rows(sctx *b, int n, int k, int rounds)
{
    char dir[] = "/tmp/dg-bench-slack-XXXXXX";
    if (!mkdtemp(dir))
        return -1;
    char db[64];
    snprintf(db, sizeof db, "%s/bench.db", dir);
    obe e;
    char err[300];
    dg_chat_options tune = {.platform = DG_PLATFORM_SLACK};
    double *ob = calloc((size_t)rounds, sizeof *ob), *fresh = calloc((size_t)rounds, sizeof *fresh),
           *keep = calloc((size_t)rounds, sizeof *keep);
    int rc = -1, open = 0;
    /* The moderator of the outbox env posts with its own token. */
    fake_slack_user_spec mod = {.user_id = OBE_SLACK_MOD_ID, .token = OBE_SLACK_TOKEN, .bot = 1};
    if (!ob || !fresh || !keep || fake_slack_add_user(b->fs, &mod) != 0)
        goto out;
    for (int i = 0; i < n; i++) {
        const char *join[] = {OBE_SLACK_MOD_ID, MOD, "UAG00001", NULL};
        char name[32];
        snprintf(name, sizeof name, "bench-outbox-%d-%d", n, i);
        /* Fresh channels with both moderators (the outbox's and the raw floor's). */
        if (fake_slack_add_channel(b->fs, NULL, name, 0, join, b->chans[i]) != 0)
            goto out;
    }
    if (obe_open_on(&e, fake_slack_url(b->fs), db, &tune, err, sizeof err) != 0) {
        fprintf(stderr, "bench_slack: %s\n", err);
        goto out;
    }
    open = 1;
    if (dg_outbox_start_opts(&e.p, NULL, &e.p.outbox, err, sizeof err) != DG_OK) {
        fprintf(stderr, "bench_slack: %s\n", err);
        goto out;
    }
    if (outbox_round(b, &e, n, k / 4 + 1) < 0) /* warm-up */
        goto out;
    for (int r = 0; r < rounds; r++) {
        if (r % 2 == 0 && (fresh[r] = raw_round(b, n, k, 1)) < 0)
            goto out;
        if ((ob[r] = outbox_round(b, &e, n, k)) < 0 || (keep[r] = raw_round(b, n, k, 0)) < 0)
            goto out;
        if (r % 2 == 1 && (fresh[r] = raw_round(b, n, k, 1)) < 0)
            goto out;
    }
    bench_sort(ob, rounds);
    bench_sort(fresh, rounds);
    bench_sort(keep, rounds);
    double o50 = bench_pct(ob, rounds, 0.5), o99 = bench_pct(ob, rounds, 0.99);
    double f50 = bench_pct(fresh, rounds, 0.5), f99 = bench_pct(fresh, rounds, 0.99);
    printf("slack outbox, %d channel%s: %.1f us/msg p50 (%.1f p99) = %.0f msg/s; raw serial on a "
           "fresh connection per post %.1f us/msg p50 (%.1f p99); raw keep-alive %.1f us/msg p50; "
           "%d rounds of %d\n",
           n, n == 1 ? " " : "s", o50, o99, 1e6 / o50, f50, f99, bench_pct(keep, rounds, 0.5),
           rounds, k);
    char what[64];
    if (b->latency_us)
        snprintf(what, sizeof what, "slack outbox, %d channel%s, %g ms Slack", n, n == 1 ? "" : "s",
                 (double)b->latency_us / 1000);
    else
        snprintf(what, sizeof what, "slack outbox rate, %d channel%s", n, n == 1 ? "" : "s");
    /* Posts to several channels overlap only where there is waiting to
     * overlap: against a fake that answers at once the rows measure CPU. */
    bench_row(what, "us/msg", o50, o99, "raw serial fresh", f50, f99, f50 / o50, f99 / o99, 1,
              b->latency_us && n > 1 ? 1.5 : 0.9);
    rc = 0;
out:
    if (open)
        obe_close(&e);
    tu_rmtree(dir);
    free(ob);
    free(fresh);
    free(keep);
    return rc;
}

/* Fake, moderator, channels, the two clients. 0 or -1. */
static int setup(sctx *b, long latency_us)
{
    fake_slack_options fo = {.latency_us = latency_us};
    b->latency_us = latency_us;
    char err[300];
    if (fake_slack_start(&fo, &b->fs, err, sizeof err) != 0) {
        fprintf(stderr, "bench_slack: %s\n", err);
        return -1;
    }
    fake_slack_user_spec mod = {.user_id = MOD, .token = TOKEN, .bot = 1};
    fake_slack_user_spec ag = {.user_id = "UAG00001", .bot = 1};
    const char *members[] = {MOD, "UAG00001", NULL};
    if (fake_slack_add_user(b->fs, &mod) != 0 || fake_slack_add_user(b->fs, &ag) != 0)
        return -1;
    for (int i = 0; i < N_CHANS; i++) {
        char name[16];
        snprintf(name, sizeof name, "bench-%d", i);
        if (fake_slack_add_channel(b->fs, NULL, name, 0, members, b->chans[i]) != 0)
            return -1;
    }
    dg_slack_options o = {.api_base = fake_slack_url(b->fs), .token = TOKEN, .no_pacing = 1};
    if (dg_slack_new(&o, &b->s, err, sizeof err) != DG_OK) {
        fprintf(stderr, "bench_slack: %s\n", err);
        return -1;
    }
    b->raw = curl_easy_init();
    b->hdrs = curl_slist_append(NULL, "Authorization: Bearer " TOKEN);
    b->hdrs = curl_slist_append(b->hdrs, "Content-Type: application/x-www-form-urlencoded");
    if (!b->raw || !b->hdrs)
        return -1;
    curl_easy_setopt(b->raw, CURLOPT_HTTPHEADER, b->hdrs);
    curl_easy_setopt(b->raw, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(b->raw, CURLOPT_NOSIGNAL, 1L);
    return 0;
}

int bench_slack(void)
{
    sctx b = {0};
    int k = (int)bench_size("BENCH_SLACK_K", 100, 30);
    int rounds = (int)bench_size("BENCH_SLACK_ROUNDS", 15, 3);
    int paced_k = (int)bench_size("BENCH_SLACK_PACED_K", 20, 8);
    long latency = bench_env_long("BENCH_SLACK_LATENCY_US", 0);
    const char *sc = getenv("BENCH_SLACK_PACE_SCALE");
    double scale = sc && *sc ? atof(sc) : 0.02;
    long lat = bench_env_long("BENCH_SLACK_OUTBOX_LATENCY_US", 10000);
    /* Two rows per unpaced pass, one paced, one per outbox pass. */
    bench_expect("slack", 4 + (scale > 0) + 2 + (lat && !latency ? 2 : 0));
    cpu_set_t cpus;
    int pin = bench_pin_begin("BENCH_SLACK_PIN", &cpus);
    if (pin)
        bench_pin_self(1); /* the fake's threads start here and keep CPU 1 */
    int rc = setup(&b, latency);
    if (pin)
        bench_pin_self(0); /* the clients on CPU 0 */
    if (rc == 0 && latency)
        printf("(fake Slack answering %ld us after each request) ", latency);
    if (rc == 0 && pin)
        printf("(clients on CPU 0, fake on CPU 1)\n");
    if (rc == 0)
        rc = unpaced(&b, 1, k, rounds);
    if (rc == 0)
        rc = unpaced(&b, N_CHANS, k, rounds);
    if (rc == 0 && scale > 0)
        rc = paced(&b, scale, paced_k, rounds < 5 ? rounds : 5);
    int outbox_k = (int)bench_size("BENCH_SLACK_OUTBOX_K", 60, 20);
    if (rc == 0)
        rc = outbox_rows(&b, 1, outbox_k, rounds);
    if (rc == 0)
        rc = outbox_rows(&b, N_CHANS, outbox_k, rounds);
    /* And against a fake Slack that answers like a network does. */
    if (rc == 0 && lat && !latency) {
        sctx slow = {0};
        if (pin)
            bench_pin_self(1);
        rc = setup(&slow, lat);
        if (pin)
            bench_pin_self(0);
        int lat_k = (int)bench_size("BENCH_SLACK_OUTBOX_LAT_K", 24, 8);
        if (rc == 0)
            printf("(fake Slack answering %ld us after each request)\n", lat);
        if (rc == 0)
            rc = outbox_rows(&slow, 1, lat_k, 5);
        if (rc == 0)
            rc = outbox_rows(&slow, N_CHANS, lat_k, 5);
        dg_slack_free(slow.s);
        if (slow.raw)
            curl_easy_cleanup(slow.raw);
        curl_slist_free_all(slow.hdrs);
        fake_slack_stop(slow.fs);
    }
    if (rc == 0)
        printf("posts stored by the fake: %zu\n", fake_slack_message_count(b.fs, NULL));
    dg_slack_free(b.s);
    if (b.raw)
        curl_easy_cleanup(b.raw);
    curl_slist_free_all(b.hdrs);
    fake_slack_stop(b.fs);
    if (pin)
        bench_pin_end(&cpus);
    return rc ? 1 : 0;
}
