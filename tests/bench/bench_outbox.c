/*
 * bench_outbox.c -- outbox throughput to the fake Discord (messages/s)
 * beside raw libcurl posts of the same messages in the same run, and the
 * ratio; plus the delay from a kick to the message being in the fake.
 * BENCH_OUTBOX_N sets the message count (default 2000).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_discord.h"
#include "outbox.h"
#include "outbox_env.h"
#include "store.h"
#include "testutil.h"

#define CHANNELS 4

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return sz * n;
}

static void text_of(int i, char *out, size_t len)
{
    snprintf(out, len, "bench message %05d for <@300000000000000001>: the turn passes on", i);
}

/* Raw posts on one keep-alive handle: the floor the outbox builds on. */
static int raw_posts(fake_discord *fd, char chans[][24], int n, double *secs)
{
    CURL *c = curl_easy_init();
    if (!c)
        return -1;
    struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bot " OBE_TOKEN);
    h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    int bad = 0;
    long long t0 = obe_mono_ms();
    for (int i = 0; i < n; i++) {
        char url[160], text[96], body[400];
        snprintf(url, sizeof url, "%s/channels/%s/messages", fake_discord_url(fd),
                 chans[i % CHANNELS]);
        text_of(i, text, sizeof text);
        snprintf(body, sizeof body,
                 "{\"content\":\"%s\",\"allowed_mentions\":{\"parse\":[],\"users\":"
                 "[\"300000000000000001\"]},\"nonce\":\"raw%d\",\"enforce_nonce\":true}",
                 text, i);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        long status = 0;
        if (curl_easy_perform(c) != CURLE_OK ||
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status != 200)
            bad++;
    }
    *secs = (double)(obe_mono_ms() - t0) / 1000.0;
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return bad;
}

int bench_outbox(void)
{
    int n = 2000;
    const char *env = getenv("BENCH_OUTBOX_N");
    if (env && atoi(env) > 0)
        n = atoi(env);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    fake_discord *fd = NULL;
    char err[256];
    if (fake_discord_start(NULL, &fd, err, sizeof err) != 0) {
        printf("fake: %s\n", err);
        return 1;
    }
    fake_discord_add_user(fd, OBE_TOKEN, OBE_MOD_ID, "moderator", 1);
    char raw_chans[CHANNELS][24], ob_chans[CHANNELS][24];
    for (int c = 0; c < CHANNELS; c++) {
        fake_discord_add_channel(fd, NULL, "raw", raw_chans[c]);
        fake_discord_add_channel(fd, NULL, "outbox", ob_chans[c]);
    }

    double raw_s = 0;
    int bad = raw_posts(fd, raw_chans, n, &raw_s);
    if (bad) {
        printf("raw libcurl: %d of %d posts failed\n", bad, n);
        fake_discord_stop(fd);
        return 1;
    }
    fake_discord_clear_requests(fd);

    char dir[] = "/tmp/dg-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        fake_discord_stop(fd);
        return 1;
    }
    char db[64];
    snprintf(db, sizeof db, "%s/bench.db", dir);
    obe e;
    int rc = 1;
    if (obe_open(&e, fake_discord_url(fd), db, NULL, err, sizeof err) != 0) {
        printf("outbox env: %s\n", err);
        goto out_fake;
    }
    if (dg_outbox_start(&e.p, &e.p.outbox, err, sizeof err) != OC_OK) {
        printf("outbox: %s\n", err);
        goto out_env;
    }

    /* Throughput: every message owed in its own transaction and kicked, as
     * the plugin does, until the outbox is idle again. */
    const char *mention[] = {"300000000000000001"};
    long long t0 = obe_mono_ms();
    for (int i = 0; i < n; i++) {
        char text[96];
        text_of(i, text, sizeof text);
        if (dg_store_begin(e.p.store) != OC_OK ||
            dg_outbox_enqueue(e.p.store, ob_chans[i % CHANNELS], text, mention, 1,
                              dg_now_ms(&e.p)) != OC_OK ||
            dg_store_commit(e.p.store) != OC_OK) {
            printf("outbox: enqueue %d failed\n", i);
            goto out_env;
        }
        dg_outbox_kick(e.p.outbox);
    }
    if (dg_outbox_wait_idle(e.p.outbox, 600000) != OC_OK) {
        printf("outbox: not idle after 600 s\n");
        goto out_env;
    }
    double ob_s = (double)(obe_mono_ms() - t0) / 1000.0;
    size_t delivered = 0;
    for (int c = 0; c < CHANNELS; c++)
        delivered += fake_discord_message_count(fd, ob_chans[c]);
    if (delivered != (size_t)n) {
        printf("outbox: %zu of %d messages delivered\n", delivered, n);
        goto out_env;
    }

    /* Kick-to-delivery delay of single messages on an idle outbox. */
    long long worst = 0, total = 0;
    const int probes = 20;
    for (int i = 0; i < probes; i++) {
        size_t before = fake_discord_message_count(fd, ob_chans[0]);
        long long k0 = obe_mono_ms();
        if (dg_store_begin(e.p.store) != OC_OK ||
            dg_outbox_enqueue(e.p.store, ob_chans[0], "latency probe", NULL, 0,
                              dg_now_ms(&e.p)) != OC_OK ||
            dg_store_commit(e.p.store) != OC_OK)
            goto out_env;
        dg_outbox_kick(e.p.outbox);
        if (fake_discord_wait_messages(fd, ob_chans[0], before + 1, 10000) != 0) {
            printf("outbox: a probe was not delivered within 10 s\n");
            goto out_env;
        }
        long long d = obe_mono_ms() - k0;
        total += d;
        if (d > worst)
            worst = d;
        usleep(20 * 1000);
    }

    double raw_rate = n / (raw_s > 0 ? raw_s : 1e-3);
    double ob_rate = n / (ob_s > 0 ? ob_s : 1e-3);
    printf("messages                 %d over %d channels (fake Discord on loopback)\n", n,
           CHANNELS);
    printf("raw libcurl posts        %.0f messages/s (%.2f s)\n", raw_rate, raw_s);
    printf("outbox (durable, nonce)  %.0f messages/s (%.2f s)\n", ob_rate, ob_s);
    printf("ratio outbox/raw         %.2f\n", ob_rate / raw_rate);
    printf("kick to delivery         mean %.1f ms, worst %lld ms over %d messages (aim: < 1000 ms)\n",
           (double)total / probes, worst, probes);
    rc = 0;

out_env:
    obe_close(&e);
    {
        char path[96];
        snprintf(path, sizeof path, "%s/bench.db", dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/bench.db-wal", dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/bench.db-shm", dir);
        unlink(path);
        rmdir(dir);
    }
out_fake:
    fake_discord_stop(fd);
    return rc;
}
