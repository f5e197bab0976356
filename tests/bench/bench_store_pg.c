/*
 * bench_store_pg.c -- the PostgreSQL store beside its floors, on a server
 * the bench starts itself (tests/support/pg_server.h, unix socket, fsync
 * off: what is measured is the store's round trips, not a disk):
 *   - before_model_resolve on one instance, then the same with a second
 *     instance on the same database deciding in turn (the aim:
 *     within 1.2x of one instance), and the same decision on SQLite;
 *   - message_received durable ingest of a human message (the dedup mark
 *     and the change log in one transaction) beside a raw prepared INSERT
 *     of the same key shape in its own transaction on the same server
 *     (aim: within 1.5x), the two taken in turn message by message.
 * The server runs on CPU 1, the client (raw and plugin alike) on CPU 0
 * (BENCH_PG_PIN=0: wherever the scheduler puts them): every round trip
 * then crosses cores. Unpinned, whether a backend woke beside its client
 * decided the ratio: the raw insert took 77 us in one run, 240 in the
 * next, and the ingest ratio swung from 0.53x to 3.94x.
 * BENCH_PG_SCOPES / BENCH_PG_SAMPLES / BENCH_PG_INGESTS change the sizes.
 * Without server binaries the bench says so and fails (make deps).
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_table.h"
#include "pg_server.h"
#include "testutil.h"
#include "turn_test_host.h"

#define PG_AGENTS 3

static const char *const PG_NAMES[PG_AGENTS] = {TTH_ALPHA, TTH_BRAVO, TTH_CHARLIE};

static oc_hook_fn pg_hook(tth *h, const char *name)
{
    for (int i = 0; i < h->n_hooks; i++)
        if (strcmp(h->hooks[i].name, name) == 0)
            return h->hooks[i].fn;
    return NULL;
}

static void pg_channel(long i, char *out, size_t len)
{
    snprintf(out, len, "3%017ld", i + 1);
}

/* Every agent joins `scopes` channels through h, one human message wakes
 * each. ctx[c * PG_AGENTS + a]: parsed contexts, kept for the timing. */
static int pg_setup_scopes(tth *h, long scopes, json_t **ctx)
{
    oc_hook_fn fn = pg_hook(h, "before_model_resolve");
    json_t *ev = json_pack("{s:s}", "prompt", "what next?");
    for (long c = 0; c < scopes; c++) {
        char ch[24], key[128], id[24];
        pg_channel(c, ch, sizeof ch);
        for (int a = 0; a < PG_AGENTS; a++) {
            tth_session_key(key, sizeof key, PG_NAMES[a], ch, NULL);
            json_t *x = json_pack("{s:s, s:s, s:s, s:s}", "agentId", PG_NAMES[a], "sessionKey", key,
                                  "channelId", ch, "messageProvider", "discord");
            json_t *r = NULL;
            if (!x || fn(h->state, ev, x, &r) != OC_OK)
                return -1;
            json_decref(r);
            if (ctx)
                ctx[c * PG_AGENTS + a] = x;
            else
                json_decref(x);
        }
        snprintf(id, sizeof id, "6%017ld", c);
        if (tth_msg(h, ch, NULL, id, TTH_HUMAN_UID, 0, "wake up", NULL) != OC_OK)
            return -1;
    }
    json_decref(ev);
    return 0;
}

/* One decision on h for a random context; its time (ns) into *t. */
static int pg_decide_once(tth *h, json_t **ctx, long n_ctx, uint64_t *x, double *t)
{
    static json_t *ev;
    if (!ev)
        ev = json_pack("{s:s}", "prompt", "what next?");
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    json_t *r = NULL;
    double t0 = bench_now_ns();
    int rc = pg_hook(h, "before_model_resolve")(h->state, ev, ctx[*x % (uint64_t)n_ctx], &r);
    *t = bench_now_ns() - t0;
    json_decref(r);
    return rc == OC_OK ? 0 : -1;
}

/* p50/p99 (us) of `samples` decisions on a alone (one[]) and, when b is
 * given, of decisions spread over a and b (two[]), interleaved sample by
 * sample so both see the same machine. */
static int pg_decide(tth *a, tth *b, json_t **ctx, long n_ctx, long samples, double *one,
                     double *two)
{
    double *t1 = malloc((size_t)samples * sizeof *t1), *t2 = malloc((size_t)samples * sizeof *t2);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    int rc = t1 && t2 ? 0 : -1;
    for (long i = 0; i < samples && rc == 0; i++) {
        rc = pg_decide_once(a, ctx, n_ctx, &x, &t1[i]);
        if (b && rc == 0)
            rc = pg_decide_once(i % 2 ? b : a, ctx, n_ctx, &x, &t2[i]);
    }
    if (rc == 0) {
        bench_sort(t1, samples);
        one[0] = bench_pct(t1, samples, 0.5) / 1e3;
        one[1] = bench_pct(t1, samples, 0.99) / 1e3;
        if (b) {
            bench_sort(t2, samples);
            two[0] = bench_pct(t2, samples, 0.5) / 1e3;
            two[1] = bench_pct(t2, samples, 0.99) / 1e3;
        }
    }
    free(t1);
    free(t2);
    return rc;
}

/* The floor of an ingest: BEGIN; INSERT; COMMIT of the same key shape,
 * prepared, on a connection of its own to the same server. */
static int pg_raw_insert(PGconn *c, long i, double *t)
{
    char ch[24], id[24], at[24];
    pg_channel(i % 1000, ch, sizeof ch);
    snprintf(id, sizeof id, "7%017ld", i);
    snprintf(at, sizeof at, "%ld", 1000000 + i);
    const char *v[3] = {ch, id, at};
    double t0 = bench_now_ns();
    PGresult *r1 = PQexec(c, "BEGIN");
    PGresult *r2 = PQexecPrepared(c, "ins", 3, v, NULL, NULL, 0);
    PGresult *r3 = PQexec(c, "COMMIT");
    *t = bench_now_ns() - t0;
    int ok = PQresultStatus(r2) == PGRES_COMMAND_OK && PQresultStatus(r3) == PGRES_COMMAND_OK;
    PQclear(r1);
    PQclear(r2);
    PQclear(r3);
    return ok ? 0 : -1;
}

static int pg_ingest(tth *h, long scopes, long n)
{
    oc_hook_fn fn = pg_hook(h, "message_received");
    PGconn *c = PQconnectdb(pgs_url());
    if (!fn || PQstatus(c) != CONNECTION_OK)
        return -1;
    PQclear(PQexec(c, "CREATE TABLE raw_seen (channel_id TEXT COLLATE \"C\" NOT NULL, "
                      "message_id TEXT COLLATE \"C\" NOT NULL, seen_ms BIGINT NOT NULL, "
                      "PRIMARY KEY (channel_id, message_id))"));
    PQclear(PQprepare(c, "ins", "INSERT INTO raw_seen VALUES ($1, $2, $3)", 3, NULL));
    double *tr = malloc((size_t)n * sizeof *tr), *th = malloc((size_t)n * sizeof *th);
    json_t *ctx = json_object();
    int rc = tr && th && ctx ? 0 : -1;
    for (long i = 0; i < n && rc == 0; i++) {
        char ch[24], id[24];
        pg_channel(i % scopes, ch, sizeof ch); /* the awake channels of the setup */
        snprintf(id, sizeof id, "8%017ld", i);
        json_t *ev = json_pack("{s:s, s:s, s:b, s:s, s:b, s:s, s:[]}", "messageId", id, "channelId",
                               ch, "isDm", 0, "senderId", TTH_HUMAN_UID, "senderIsBot", 0,
                               "content", "one more thing", "mentions");
        json_object_set(ctx, "channelId", json_object_get(ev, "channelId"));
        if (i % 2)
            rc = pg_raw_insert(c, i, &tr[i]);
        json_t *r = NULL;
        double t0 = bench_now_ns();
        rc |= fn(h->state, ev, ctx, &r) == OC_OK ? 0 : -1;
        th[i] = bench_now_ns() - t0;
        json_decref(r);
        json_decref(ev);
        if (!(i % 2) && rc == 0)
            rc = pg_raw_insert(c, i, &tr[i]);
    }
    if (rc == 0) {
        bench_sort(tr, n);
        bench_sort(th, n);
        double r50 = bench_pct(tr, n, 0.5), h50 = bench_pct(th, n, 0.5);
        double r99 = bench_pct(tr, n, 0.99), h99 = bench_pct(th, n, 0.99);
        printf("PostgreSQL message_received ingest (human message): p50 %.1f us  p99 %.1f us "
               "(%ld messages)\nraw prepared INSERT in its own transaction: p50 %.1f us  p99 "
               "%.1f us\n",
               h50 / 1e3, h99 / 1e3, n, r50 / 1e3, r99 / 1e3);
        bench_row("PG ingest, human message", "us", h50 / 1e3, h99 / 1e3, "raw PG insert",
                  r50 / 1e3, r99 / 1e3, h50 / r50, h99 / r99, 0, 1.5);
    }
    free(tr);
    free(th);
    json_decref(ctx);
    PQfinish(c);
    return rc;
}

int bench_store_pg(void)
{
    long scopes = bench_size("BENCH_PG_SCOPES", 300, 100);
    long samples = bench_size("BENCH_PG_SAMPLES", 20000, 2000);
    long ingests = bench_size("BENCH_PG_INGESTS", 4000, 500);
    if (scopes < 1 || samples < 100 || ingests < 100)
        return 1;
    bench_expect("store_pg", 2);
    cpu_set_t cpus;
    int pinned = bench_pin_begin("BENCH_PG_PIN", &cpus);
    if (pinned)
        bench_pin_self(1); /* pg_ctl's postmaster, and each backend it forks, on CPU 1 */
    int up = pgs_start();
    if (pinned)
        bench_pin_self(0); /* the raw client and the plugin's store on CPU 0 */
    if (!up) {
        if (pinned)
            bench_pin_end(&cpus);
        return 1;
    }
    tth_standalone();
    long n_ctx = scopes * PG_AGENTS;
    json_t **ctx = calloc((size_t)n_ctx, sizeof *ctx);
    json_t **lctx = calloc((size_t)n_ctx, sizeof *lctx);
    tth a, b, lite;
    tth_start(&a, "channel", "\"turn\":{\"maxAgentMessages\":100000}");
    int rc = ctx && lctx ? pg_setup_scopes(&a, scopes, ctx) : -1;
    double one[2] = {0, 0}, two[2] = {0, 0}, lite1[2] = {0, 0}, warm[2];
    /* The second instance on the same database; both decide in turn. */
    char extra[1024];
    snprintf(extra, sizeof extra, "%s,\"turn\":{\"maxAgentMessages\":100000}", a.store);
    tth_start(&b, "channel", extra);
    /* b's mirror loads each session once: a warm-up round, not timed. */
    if (rc == 0)
        rc = pg_decide(&b, NULL, ctx, n_ctx, 4 * n_ctx, warm, NULL);
    if (rc == 0)
        rc = pg_decide(&a, &b, ctx, n_ctx, samples, one, two);
    if (rc == 0)
        rc = pg_ingest(&a, scopes, ingests);
    tth_free(&b);
    tth_free(&a);
    /* The same decision on SQLite, for scale. */
    pgs_stop();
    if (rc == 0) {
        tth_start(&lite, "channel", "\"turn\":{\"maxAgentMessages\":100000}");
        rc = pg_setup_scopes(&lite, scopes, lctx);
        if (rc == 0)
            rc = pg_decide(&lite, NULL, lctx, n_ctx, samples, lite1, NULL);
        tth_free(&lite);
    }
    if (rc == 0) {
        printf("before_model_resolve on PostgreSQL: one instance p50 %.1f us p99 %.1f us; two "
               "instances on one database p50 %.1f us p99 %.1f us; on SQLite p50 %.1f us p99 "
               "%.1f us (%ld scopes x %d agents, %ld decisions)\n",
               one[0], one[1], two[0], two[1], lite1[0], lite1[1], scopes, PG_AGENTS, samples);
        bench_row("PG decision, two instances", "us", two[0], two[1], "one instance", one[0],
                  one[1], two[0] / one[0], two[1] / one[1], 0, 1.2);
    }
    for (long i = 0; i < n_ctx; i++) {
        json_decref(ctx ? ctx[i] : NULL);
        json_decref(lctx ? lctx[i] : NULL);
    }
    free(ctx);
    free(lctx);
    if (pinned)
        bench_pin_end(&cpus); /* later benches */
    if (rc)
        printf("bench_store_pg: a hook call failed\n");
    return rc ? 1 : 0;
}
