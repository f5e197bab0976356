/*
 * bench_turns.c -- the turn manager's hot paths beside their floors, in
 * the same run:
 *   - before_model_resolve with 10,000 scopes x 8 agents (p50/p99) beside
 *     a bare decode plus hash lookup of the session (ctx pre-parsed), and
 *     the whole hook call as a claim host makes it (ctx JSON text in, the
 *     decision out) beside its floor: the text parsed, the fields read,
 *     one hash lookup;
 *   - message_received durable ingest (one committed transaction per
 *     message) beside a raw prepared SQLite insert of the same key in its
 *     own committed transaction, same pragmas, same folder, the two taken
 *     in turn message by message; three times: human
 *     messages to awake channels (the speaker keeps the turn: only the
 *     dedup mark is written), messages of the speaker (the turn passes: the
 *     mark carries the new state, schema v14), and those again on 100
 *     channels, where every 15th mark also folds the state into its row.
 *     Beside each: the pages a commit wrote and how many commits split one.
 * Aims (in the summary table, judged at p50, never asserted): decision
 * within 3x its baseline (ctx pre-parsed, as the ABI passes it), a closed
 * discussion channel's decision within 1.2x an open one's, the whole hook
 * call within 1.8x its floor, ingest within 1.20x (human) / 1.35x (speaker)
 * / 1.45x (speaker, 100 channels) the raw insert. BENCH_TURNS_SCOPES /
 * BENCH_TURNS_SAMPLES / BENCH_TURNS_INGESTS change the sizes (BENCH_QUICK:
 * 1,000 / 10,000 / 1,000).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_table.h"
#include "discuss.h"
#include "hooks_int.h"
#include "store.h"
#include "store_discuss.h"
#include "turns.h"
#include "turn_test_host.h"
#include "store_int.h"
#include "str_map.h"

#define AGENTS 8

static const char *const NAMES[AGENTS] = {"alpha", "bravo",   "charlie", "delta",
                                          "echo",  "foxtrot", "golf",    "hotel"};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double mean(const double *v, long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += v[i];
    return s / (double)n;
}

static void channel_of(long i, char *out, size_t len)
{
    snprintf(out, len, "3%017ld", i + 1);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* The floor of a whole hook call: the ctx text parsed, the fields the
 * hook reads taken out, one hash lookup of the session. Without the
 * plugin's decode, so that making the decode cheaper shows. */
static __attribute__((noinline)) int floor_text(const char *ctx_text, const dg_map *m, int *sink)
{
    json_t *ctx = json_loads(ctx_text, 0, NULL);
    if (!ctx)
        return -1;
    static const char *const names[] = {"agentId",  "sessionKey",      "channelId",
                                        "threadId", "messageProvider", "runId"};
    const char *key = NULL;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = json_string_value(json_object_get(ctx, names[i]));
        *sink += v != NULL;
        if (i == 1)
            key = v;
    }
    int *v = key ? dg_map_get(m, key) : NULL;
    *sink += v ? *v : 0;
    json_decref(ctx);
    return v ? 0 : -1;
}

/* Baseline with the ctx already parsed (as the ABI passes it): decode +
 * one hash lookup. */
static int baseline_parsed(const dg_config *cfg, const json_t *ctx, const dg_map *m, int *sink)
{
    dg_hook_session hs;
    int ok = dg_hook_decode_session(cfg, ctx, &hs) == 1;
    int *v = ok ? dg_map_get(m, hs.s.session_key) : NULL;
    *sink += v ? *v : 0;
    return v ? 0 : -1;
}

/* The hook on an already parsed ctx: what a host sees. */
static int hook_parsed(tth *h, const json_t *ctx, oc_hook_fn fn, json_t *event, int *sink)
{
    json_t *r = NULL;
    int rc = fn(h->state, event, ctx, &r);
    *sink += r != NULL;
    json_decref(r);
    return rc;
}

/* The whole hook call as a host that hands over text makes it: the ctx
 * text parsed, the hook, its decision (when it has one) written out. */
static int hook_once(tth *h, const char *ctx_text, oc_hook_fn fn, json_t *event, int *sink)
{
    json_t *ctx = json_loads(ctx_text, 0, NULL);
    if (!ctx)
        return -1;
    json_t *r = NULL;
    int rc = fn(h->state, event, ctx, &r);
    char *out = r ? json_dumps(r, JSON_COMPACT) : NULL;
    *sink += out != NULL;
    free(out);
    json_decref(r);
    json_decref(ctx);
    return rc;
}

/* The timed whole calls: a function of their own, so that a profile
 * (callgrind --toggle-collect=hook_call) tells them from the setup's. */
static __attribute__((noinline)) int hook_call(tth *h, const char *ctx_text, oc_hook_fn fn,
                                               json_t *event, int *sink)
{
    return hook_once(h, ctx_text, fn, event, sink);
}

static oc_hook_fn hook_named(tth *h, const char *name)
{
    for (int i = 0; i < h->n_hooks; i++)
        if (strcmp(h->hooks[i].name, name) == 0)
            return h->hooks[i].fn;
    return NULL;
}

/* 10,000 channels x 8 agents: every agent joins, one human message wakes
 * each channel (the first agent holds the turn). Fills ctx[], keys[] and
 * vals[] (malloc'd strings, freed by the caller) and m; -1 on a failure. */
static int resolve_open_channels(tth *h, oc_hook_fn fn, json_t *event, long scopes, char **ctx,
                                 char **keys, int *vals, dg_map *m)
{
    for (long c = 0; c < scopes; c++) {
        char ch[24], key[128], id[24];
        channel_of(c, ch, sizeof ch);
        for (int a = 0; a < AGENTS; a++) {
            long i = c * AGENTS + a;
            tth_session_key(key, sizeof key, NAMES[a], ch, NULL);
            if (asprintf(&ctx[i],
                         "{\"agentId\":\"%s\",\"sessionKey\":\"%s\",\"channelId\":\"%s\","
                         "\"messageProvider\":\"discord\",\"workspaceDir\":\"/srv/agents/%s\"}",
                         NAMES[a], key, ch, NAMES[a]) < 0)
                return -1;
            keys[i] = strdup(key);
            vals[i] = a;
            dg_map_put(m, keys[i], &vals[i]);
            int sink = 0;
            if (hook_once(h, ctx[i], fn, event, &sink) != OC_OK)
                return -1;
        }
        snprintf(id, sizeof id, "6%017ld", c);
        if (tth_msg(h, ch, NULL, id, TTH_HUMAN_UID, 0, "wake up", NULL) != OC_OK)
            return -1;
    }
    return 0;
}

/* A closed discussion channel with the same 8 agents: every session is
 * seen once (recorded, routed to the no-reply model) before timing; their
 * ctx into closed_ctx[] (new references, the caller drops them). */
static int resolve_closed_channel(tth *h, oc_hook_fn fn, json_t *event, json_t **closed_ctx)
{
    dg_plugin *p = tth_plugin(h);
    const char *closed_ch = "399999999999999999";
    const char *parts[AGENTS - 1];
    char *order[AGENTS];
    for (int a = 0; a < AGENTS; a++) {
        order[a] = (char *)NAMES[a];
        if (a)
            parts[a - 1] = NAMES[a];
    }
    dg_discussion d = {
        .discussion_channel_id = (char *)closed_ch,
        .origin_channel_id = "300000000000000001",
        .initiator_agent_id = (char *)NAMES[0],
        .initiator_session_key = "agent:x",
        .initiator_session_id = "sid",
        .initiator_workspace = "/tmp/ws",
        .discuss_guide = "bench",
        .status = DG_DISCUSSION_ACTIVE,
        .created_at_ms = dg_now_ms(p),
        .turn_order = order,
        .n_turn_order = AGENTS,
    };
    int64_t id = 0;
    if (dg_store_begin(p->store) != OC_OK)
        return -1;
    if (dg_store_discussion_insert(p->store, &d, &id) != OC_OK ||
        dg_turns_prefill_discussion(p->turns, closed_ch, NAMES[0], parts, AGENTS - 1,
                                    dg_now_ms(p)) != OC_OK ||
        dg_store_discussion_close(p->store, id, "plans/d.md", dg_now_ms(p)) != OC_OK ||
        dg_turns_close_channel(p->turns, closed_ch, dg_now_ms(p)) != OC_OK) {
        dg_store_rollback(p->store);
        return -1;
    }
    if (dg_store_commit(p->store) != OC_OK)
        return -1;
    for (int a = 0; a < AGENTS; a++) {
        char key[128];
        tth_session_key(key, sizeof key, NAMES[a], closed_ch, NULL);
        closed_ctx[a] = json_pack("{s:s, s:s, s:s, s:s, s:s}", "agentId", NAMES[a], "sessionKey",
                                  key, "channelId", closed_ch, "messageProvider", "discord",
                                  "workspaceDir", "/srv/a");
        int sink0 = 0;
        if (!closed_ctx[a] || hook_parsed(h, closed_ctx[a], fn, event, &sink0) != OC_OK)
            return -1;
    }
    return 0;
}

/* The n sessions' parsed ctx, ctx text and keys, and the arrays. */
static void free_sessions(long n, json_t **pctx, char **ctx, char **keys)
{
    for (long i = 0; i < n; i++) {
        json_decref(pctx[i]);
        free(ctx[i]);
        free(keys[i]);
    }
    free(pctx);
    free(ctx);
    free(keys);
}

/* The samples of bench_resolve, sorted in place, as lines and rows. */
static void resolve_report(double *tb, double *th, double *tc, long samples, long overrides,
                           double *tbt, double *tht, long tsamples)
{
    bench_sort(tb, samples);
    bench_sort(th, samples);
    bench_sort(tc, samples);
    bench_sort(tbt, tsamples);
    bench_sort(tht, tsamples);
    double b50 = bench_pct(tb, samples, 0.50), b99 = bench_pct(tb, samples, 0.99);
    double h50 = bench_pct(th, samples, 0.50), h99 = bench_pct(th, samples, 0.99);
    double c50 = bench_pct(tc, samples, 0.50), c99 = bench_pct(tc, samples, 0.99);
    printf("before_model_resolve (ctx pre-parsed, as the ABI passes it): open channel p50 %.2f "
           "us  p99 %.2f us (%ld samples, %.0f%% swapped); closed channel p50 %.2f us  p99 "
           "%.2f us\n",
           h50 / 1e3, h99 / 1e3, samples, 100.0 * overrides / (double)samples, c50 / 1e3,
           c99 / 1e3);
    printf("baseline (decode + hash lookup, pre-parsed): p50 %.2f us  p99 %.2f us\n", b50 / 1e3,
           b99 / 1e3);
    double w50 = bench_pct(tht, tsamples, 0.50), w99 = bench_pct(tht, tsamples, 0.99);
    double f50 = bench_pct(tbt, tsamples, 0.50), f99 = bench_pct(tbt, tsamples, 0.99);
    printf("the whole hook call (ctx text in, decision out): p50 %.2f us  p99 %.2f us; floor "
           "(parse + field reads + hash lookup): p50 %.2f us  p99 %.2f us (%ld samples)\n",
           w50 / 1e3, w99 / 1e3, f50 / 1e3, f99 / 1e3, tsamples);
    bench_row("resolve decision, open channel", "us", h50 / 1e3, h99 / 1e3, "decode+hash",
              b50 / 1e3, b99 / 1e3, h50 / b50, h99 / b99, 0, 3.0);
    bench_row("resolve decision, closed channel", "us", c50 / 1e3, c99 / 1e3, "open chan",
              h50 / 1e3, h99 / 1e3, c50 / h50, c99 / h99, 0, 1.2);
    bench_row("hook call, JSON in, decision out", "us", w50 / 1e3, w99 / 1e3, "parse+reads+hash",
              f50 / 1e3, f99 / 1e3, w50 / f50, w99 / f99, 0, 1.8);
}

static int bench_resolve(tth *h, long scopes, long samples)
{
    oc_hook_fn fn = hook_named(h, "before_model_resolve");
    if (!fn)
        return -1;
    long n_sessions = scopes * AGENTS;
    char **ctx = calloc((size_t)n_sessions, sizeof *ctx);
    char **keys = calloc((size_t)n_sessions, sizeof *keys);
    int *vals = calloc((size_t)n_sessions, sizeof *vals);
    double *tb = malloc((size_t)samples * sizeof *tb);
    double *th = malloc((size_t)samples * sizeof *th);
    if (!ctx || !keys || !vals || !tb || !th)
        return -1;
    dg_map m;
    dg_map_init(&m);
    json_t *event = json_pack("{s:s}", "prompt", "what next?");

    double t0 = now_ns();
    if (resolve_open_channels(h, fn, event, scopes, ctx, keys, vals, &m))
        return -1;
    printf("setup: %ld scopes x %d agents in %.1f s\n", scopes, AGENTS, (now_ns() - t0) / 1e9);

    json_t *closed_ctx[AGENTS] = {0};
    if (resolve_closed_channel(h, fn, event, closed_ctx))
        return -1;
    /* The ctx of every session parsed once, before timing. */
    json_t **pctx = calloc((size_t)n_sessions, sizeof *pctx);
    double *tc = malloc((size_t)samples * sizeof *tc);
    double *tbt = malloc((size_t)samples * sizeof *tbt);
    double *tht = malloc((size_t)samples * sizeof *tht);
    if (!pctx || !tc || !tbt || !tht)
        return -1;
    for (long i = 0; i < n_sessions; i++)
        if (!(pctx[i] = json_loads(ctx[i], 0, NULL)))
            return -1;

    /* Warm every path, then take them in turn sample by sample so all see
     * the same machine state. */
    int sink = 0, overrides = 0;
    for (long i = 0; i < 20000; i++) {
        long k = (long)(rng() % (uint64_t)n_sessions);
        baseline_parsed(&tth_plugin(h)->cfg, pctx[k], &m, &sink);
        hook_parsed(h, pctx[k], fn, event, &sink);
        hook_parsed(h, closed_ctx[k % AGENTS], fn, event, &sink);
    }
    for (long i = 0; i < samples; i++) {
        long k = (long)(rng() % (uint64_t)n_sessions);
        double a = now_ns();
        if (baseline_parsed(&tth_plugin(h)->cfg, pctx[k], &m, &sink))
            return -1;
        double b = now_ns();
        int before = sink;
        if (hook_parsed(h, pctx[k], fn, event, &sink) != OC_OK)
            return -1;
        double c = now_ns();
        overrides += sink != before;
        if (hook_parsed(h, closed_ctx[k % AGENTS], fn, event, &sink) != OC_OK)
            return -1;
        double d2 = now_ns();
        tb[i] = b - a;
        th[i] = c - b;
        tc[i] = d2 - c;
    }
    /* The whole call, ctx text in and decision out, against its floor
     * (parse + field reads + one hash lookup), a tenth of the samples. */
    long tsamples = samples / 10;
    for (long i = 0; i < tsamples; i++) {
        long k = (long)(rng() % (uint64_t)n_sessions);
        double a = now_ns();
        if (floor_text(ctx[k], &m, &sink))
            return -1;
        double b = now_ns();
        if (hook_call(h, ctx[k], fn, event, &sink) != OC_OK)
            return -1;
        tbt[i] = b - a;
        tht[i] = now_ns() - b;
    }
    resolve_report(tb, th, tc, samples, overrides, tbt, tht, tsamples);
    for (int a = 0; a < AGENTS; a++)
        json_decref(closed_ctx[a]);
    free_sessions(n_sessions, pctx, ctx, keys);
    free(tc);
    free(tbt);
    free(tht);
    free(vals);
    free(tb);
    free(th);
    dg_map_clear(&m);
    json_decref(event);
    return sink < 0; /* keep sink alive */
}

/*
 * Pages a commit wrote: one, or more (mostly four or five) when the insert
 * split a b-tree page: SQLite rebalances the page with its siblings and
 * rewrites their parent. On WITHOUT ROWID tables the whole row is also a
 * divider, so a longer row splits more often: printed beside the ingest
 * figures (never a verdict), it shows how much of a ratio is SQLite's own.
 */
typedef struct page_count {
    long pages, splits, commits;
} page_count;

static int cache_writes(sqlite3 *db)
{
    int cur = 0, hi = 0;
    sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_WRITE, &cur, &hi, 0);
    return cur;
}

static void page_count_add(page_count *pc, int before, int after)
{
    pc->pages += after - before;
    pc->splits += after - before > 1;
    pc->commits++;
}

/* The floor: a prepared INSERT of the same key shape, one committed
 * transaction each, on a database with the plugin's pragmas. */
typedef struct raw_db {
    sqlite3 *db;
    sqlite3_stmt *begin, *ins, *commit;
} raw_db;

static int raw_open(raw_db *r, const char *path)
{
    memset(r, 0, sizeof *r);
    if (sqlite3_open(path, &r->db) != SQLITE_OK)
        return -1;
    sqlite3_exec(r->db,
                 "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"
                 "CREATE TABLE IF NOT EXISTS raw_seen (channel_id TEXT NOT NULL, message_id TEXT "
                 "NOT NULL, seen_ms INTEGER NOT NULL, PRIMARY KEY (channel_id, message_id)) "
                 "WITHOUT ROWID;",
                 NULL, NULL, NULL);
    sqlite3_prepare_v2(r->db, "BEGIN IMMEDIATE", -1, &r->begin, NULL);
    sqlite3_prepare_v2(r->db, "INSERT INTO raw_seen VALUES (?, ?, ?)", -1, &r->ins, NULL);
    sqlite3_prepare_v2(r->db, "COMMIT", -1, &r->commit, NULL);
    return r->begin && r->ins && r->commit ? 0 : -1;
}

static void raw_close(raw_db *r)
{
    sqlite3_finalize(r->begin);
    sqlite3_finalize(r->ins);
    sqlite3_finalize(r->commit);
    sqlite3_close(r->db);
}

/* One raw insert of message i, on the channel the hook's message i goes
 * to (the same key: few channels cost SQLite more per row); its time into
 * *t. 0 or -1. */
static int raw_insert(raw_db *r, long scopes, long i, long offset, double *t, page_count *pc)
{
    char ch[24], id[24];
    channel_of(i % scopes, ch, sizeof ch);
    snprintf(id, sizeof id, "7%017ld", i + offset);
    int w0 = cache_writes(r->db); /* outside the timing, as the hook's */
    double a = now_ns();
    int bad = sqlite3_step(r->begin) != SQLITE_DONE;
    sqlite3_bind_text(r->ins, 1, ch, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(r->ins, 2, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(r->ins, 3, 1000000 + i);
    bad |= sqlite3_step(r->ins) != SQLITE_DONE;
    bad |= sqlite3_step(r->commit) != SQLITE_DONE;
    *t = now_ns() - a;
    page_count_add(pc, w0, cache_writes(r->db));
    sqlite3_reset(r->begin);
    sqlite3_reset(r->ins);
    sqlite3_reset(r->commit);
    return bad ? -1 : 0;
}

/* Per channel: position of the agent holding the turn (kind 1 below). */
static int *speaker_of;

/*
 * message_received of message i through the hook; its time into *t.
 * kind 0: a human message to an awake channel (only the dedup mark is
 * durable; the speaker keeps the turn). kind 1: a message of the agent
 * holding the turn, posted before its run ended: the turn passes on, so
 * the scope's state row is written too.
 */
static int hook_ingest(tth *h, oc_hook_fn fn, json_t *ctx, long scopes, long i, long offset,
                       int kind, double *t, page_count *pc)
{
    long c = i % scopes;
    char ch[24], id[24];
    channel_of(c, ch, sizeof ch);
    snprintf(id, sizeof id, "%d%017ld", 8 + kind, i + offset);
    const char *sender = TTH_HUMAN_UID;
    if (kind == 1) {
        sender = tth_uid(NAMES[speaker_of[c]]);
        speaker_of[c] = (speaker_of[c] + 1) % AGENTS;
    }
    json_t *ev = json_pack("{s:s, s:s, s:b, s:s, s:b, s:s, s:[]}", "messageId", id, "channelId", ch,
                           "isDm", 0, "senderId", sender, "senderIsBot", kind == 1, "content",
                           "one more thing", "mentions");
    json_object_set(ctx, "channelId", json_object_get(ev, "channelId"));
    json_t *r = NULL;
    sqlite3 *db = tth_plugin(h)->store->db;
    int w0 = cache_writes(db);
    double a = now_ns();
    int rc = fn(h->state, ev, ctx, &r);
    *t = now_ns() - a;
    page_count_add(pc, w0, cache_writes(db));
    json_decref(r);
    json_decref(ev);
    return rc == OC_OK ? 0 : -1;
}

static int bench_ingest(tth *h, long scopes, long n, int kind, long *offset, const char *row,
                        double aim)
{
    oc_hook_fn fn = hook_named(h, "message_received");
    double *tr = malloc((size_t)n * sizeof *tr);
    double *th = malloc((size_t)n * sizeof *th);
    char *path = NULL;
    json_t *ctx = json_object();
    raw_db raw;
    if (!fn || !tr || !th || !ctx || asprintf(&path, "%s/raw.db", h->dir) < 0 ||
        raw_open(&raw, path))
        return -1;
    /* Message by message, one of each side in turn (which goes first
     * alternates), so both see the same machine: on a shared machine the
     * load drifts faster than a block of messages takes. */
    int rc = 0;
    page_count pr = {0}, ph = {0};
    for (long i = 0; i < n && rc == 0; i++) {
        if (i % 2)
            rc = raw_insert(&raw, scopes, i, *offset, &tr[i], &pr) ||
                 hook_ingest(h, fn, ctx, scopes, i, *offset, kind, &th[i], &ph);
        else
            rc = hook_ingest(h, fn, ctx, scopes, i, *offset, kind, &th[i], &ph) ||
                 raw_insert(&raw, scopes, i, *offset, &tr[i], &pr);
    }
    *offset += n;
    raw_close(&raw);
    json_decref(ctx);
    if (rc == 0) {
        double rm = mean(tr, n), hm = mean(th, n);
        bench_sort(tr, n);
        bench_sort(th, n);
        double r50 = bench_pct(tr, n, 0.5), h50 = bench_pct(th, n, 0.5);
        double r99 = bench_pct(tr, n, 0.99), h99 = bench_pct(th, n, 0.99);
        printf("message_received ingest, %s: p50 %.2f us  mean %.2f us  p99 %.2f us  "
               "(%ld messages, %ld channels)\n",
               kind ? "the speaker's message (the turn passes)"
                    : "human message to an awake channel (dedup mark only)",
               h50 / 1e3, hm / 1e3, h99 / 1e3, n, scopes);
        printf("raw prepared insert (own transaction): p50 %.2f us  mean %.2f us  p99 %.2f us\n",
               r50 / 1e3, rm / 1e3, r99 / 1e3);
        printf(
            "pages written per message: hook %.2f (%.0f%% of commits split a page), raw "
            "insert %.2f (%.0f%%)\n",
            (double)ph.pages / (double)ph.commits, 100.0 * (double)ph.splits / (double)ph.commits,
            (double)pr.pages / (double)pr.commits, 100.0 * (double)pr.splits / (double)pr.commits);
        bench_row(row, "us", h50 / 1e3, h99 / 1e3, "raw insert", r50 / 1e3, r99 / 1e3, h50 / r50,
                  h99 / r99, 0, aim);
    }
    free(path);
    free(tr);
    free(th);
    return rc ? -1 : 0;
}

int bench_turns(void)
{
    long scopes = bench_size("BENCH_TURNS_SCOPES", 10000, 1000);
    long samples = bench_size("BENCH_TURNS_SAMPLES", 200000, 10000);
    long ingests = bench_size("BENCH_TURNS_INGESTS", 20000, 1000);
    if (scopes < 1 || samples < 100 || ingests < 100)
        return 1;
    bench_expect("turns", 6);
    tth h;
    tth_standalone();
    tth_start(&h, "channel", "\"turn\":{\"maxAgentMessages\":100000}");
    int rc = bench_resolve(&h, scopes, samples);
    long offset = 0;
    speaker_of = calloc((size_t)scopes, sizeof *speaker_of); /* alpha holds every turn */
    if (!speaker_of)
        rc = -1;
    if (rc == 0)
        rc = bench_ingest(&h, scopes, ingests, 0, &offset, "ingest, human message", 1.20);
    if (rc == 0)
        rc = bench_ingest(&h, scopes, ingests, 1, &offset, "ingest, speaker's message", 1.35);
    /* The same on few channels: each gets many messages, so the state its
     * marks carry is folded into the row every DG_SNAP_WINDOW - 1 of them. */
    long few = scopes < 100 ? scopes : 100;
    if (rc == 0)
        rc = bench_ingest(&h, few, ingests, 1, &offset, "ingest, speaker's, 100 channels", 1.45);
    free(speaker_of);
    speaker_of = NULL;
    if (rc)
        printf("bench_turns: a hook call failed\n");
    tth_free(&h);
    return rc ? 1 : 0;
}
