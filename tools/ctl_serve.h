/*
 * ctl_serve.h -- `dirigent-ctl serve`: a read-only status page of a store
 * over HTTP (libmicrohttpd): every managed scope with its budget, the
 * discussions with their timelines, runs made and avoided per hour (from
 * the cost ledger) as an SVG chart drawn here, the ledger's totals, the
 * outbox. With the plugin config (--openclaw-config) the page shows the
 * budgets' limits and prices the models; without it, what the store holds. Pages: / (HTML, redrawn every 2 s by an inline script from
 * /api/status), /api/status (JSON), /chart.svg. No external assets.
 *
 * The store is opened read-only for each request and read in one snapshot
 * transaction, so a database that appears after the start (a gateway
 * starting) is picked up and nothing is ever written. Every request is
 * served by the one MHD thread, one at a time.
 *
 * Slow and many clients: a connection silent for 3 s is cut (1 s once its
 * request line carried a wrong ?token=, checked before the headers), at
 * most 16 connections come from one address and 512 in all; a refused
 * request's connection is closed with its 401.
 */
#ifndef DG_CTL_SERVE_H
#define DG_CTL_SERVE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "store.h"
#include "turn_view.h"

/* How many hours the chart shows (the newest, ending with the current one). */
#define DG_SERVE_HOURS 24

/* `dirigent-ctl serve ...`; argv[first] is "serve". Returns the exit status
 * (0 after SIGINT/SIGTERM, 1 when it cannot listen, 2 for usage). */
int dg_ctl_serve_main(int argc, char **argv, int first);

/* What a listening address is. */
typedef struct dg_serve_listen {
    char host[64]; /* as given, without brackets */
    unsigned port; /* 0: the system picks one */
    int ipv6;
    int loopback; /* 127.0.0.0/8 or ::1 ("localhost" is taken as 127.0.0.1) */
} dg_serve_listen;

/* Parse HOST:PORT ("127.0.0.1:8080", "[::1]:0", "localhost:9000") into
 * *out. OC_OK, or OC_ERR_INVALID with a sentence in err. */
int dg_serve_listen_parse(const char *spec, dg_serve_listen *out, char *err, size_t err_len);

/* The token rule: any address but loopback needs a token. OC_OK, or
 * OC_ERR_INVALID with a sentence naming --listen and --token in err. */
int dg_serve_listen_allowed(const dg_serve_listen *l, const char *token, char *err, size_t err_len);

/* 1 when a request may be answered: no token is set, or it carries the
 * token as "Authorization: Bearer T" (auth) or ?token=T (query; either
 * may be NULL). Compared in constant time. */
int dg_serve_token_ok(const char *token, const char *auth, const char *query);

/* What the request line alone says (dg_serve_request_line_verdict). */
enum {
    DG_SERVE_LINE_OK,       /* no token needed, or ?token= carries it */
    DG_SERVE_LINE_UNPROVEN, /* a token is needed and the query has none:
                             * it may come in Authorization */
    DG_SERVE_LINE_WRONG     /* ?token= carries another value */
};

/* The token check on a request line's uri (path and query, as sent),
 * before any header has arrived; token NULL or "": none needed. */
int dg_serve_request_line_verdict(const char *token, const char *uri);

/* Append s to b with & < > " ' escaped for HTML text and attribute values
 * (NULL appends nothing). 0, or -1 when out of memory. */
int dg_html_escape(dg_buf *b, const char *s);

/* One hour of the chart, from the cost ledger's verdicts: runs made (went
 * to the agent's own model) and avoided (claimed: no model call, or
 * swapped to the no-reply model). */
typedef struct dg_serve_hour {
    int64_t hour; /* at_ms / 3600000 */
    long made, avoided;
} dg_serve_hour;

/* The status of the store at path (a SQLite file or a postgresql:// url)
 * at now_ms as a new JSON object (caller decrefs); never NULL but out of
 * memory. cfg: the plugin config (budgets, prices; borrowed), NULL when
 * none was given. When the store cannot be read it is {"ok": false,
 * "error": ...} with the sentence, and the page says so. */
json_t *dg_serve_snapshot(const char *path, const dg_config *cfg, int64_t now_ms);

/* The snapshot read from an open store inside the caller's read
 * transaction; NULL with a sentence in err on a store error. */
json_t *dg_serve_snapshot_store(dg_store *st, const char *where, const dg_config *cfg,
                                int64_t now_ms, char *err, size_t err_len);

/* ---- ctl_serve_cost.c: the parts read from the cost ledger, inside the
 * caller's read transaction. Each returns a new JSON value (the caller
 * decrefs) or NULL with the store's status in *rc. */

/* The chart's DG_SERVE_HOURS hours ending with the hour of now_ms, oldest
 * first, appended to the array out: {"hour", "start", "runs", "made",
 * "avoided"}. OC_OK or the store's status. */
int dg_serve_hours_json(dg_store *st, int64_t now_ms, json_t *out);

/* The budget of scope sc (scope_name as transitions name it) whose view
 * is tv: {"holds", "kind", "what", "since", "until" (ISO or null), "today":
 * {"runs", "granted", "tokens"}, "limits" (the config's that apply there;
 * null without cfg), "text" (one line for the page)}. */
json_t *dg_serve_scope_budget(dg_store *st, const dg_config *cfg, const dg_scope *sc,
                              const char *scope_name, const dg_turn_view *tv, int64_t now_ms,
                              int *rc);

/* The config's budgets in one object {"configGiven", "configured", "text"}
 * (cfg NULL: none given). Never NULL but out of memory. */
json_t *dg_serve_budget_summary(const dg_config *cfg);

/* The ledger's totals: {"today": W, "kept": W}, W = {"summary" (one line),
 * "totals" (cost_report.h's sums), "priced", "unpriced", "firstRun"}. */
json_t *dg_serve_cost_json(dg_store *st, const dg_config *cfg, int64_t now_ms, int *rc);

/* The chart's hours out of a snapshot's "hours" array into h (DG_SERVE_HOURS
 * of them, the oldest first, ending with the hour of now_ms). */
void dg_serve_hours_of(const json_t *snap, int64_t now_ms, dg_serve_hour *h);

/* The chart of n hours as an SVG document (malloc'd, caller frees; NULL
 * when out of memory). Self-contained: no scripts, no external refs. */
char *dg_serve_chart_svg(const dg_serve_hour *h, size_t n);

/* The page for a snapshot: a whole HTML document (malloc'd, caller frees;
 * NULL when out of memory); every stored text escaped. token (may be NULL)
 * is carried on the page's own requests. */
char *dg_serve_page(const json_t *snap, const char *token);

/* The answer to GET url (path without query) for a server reading path
 * with the plugin config cfg (NULL: none): *status, *type (static) and a
 * malloc'd body (*body, *len). Routes /, /api/status, /chart.svg; 404 for
 * anything else. 0, or -1 when out of memory. The caller checks the token
 * first. */
int dg_serve_answer(const char *path, const dg_config *cfg, const char *url, const char *token,
                    int64_t now_ms, unsigned *status, const char **type, char **body, size_t *len);

/* A running server (dg_serve_start); opaque. */
typedef struct dg_serve dg_serve;

/* Listen on l and answer from the store at path (token may be NULL: none;
 * the caller checks dg_serve_listen_allowed first) with the plugin config
 * cfg (NULL: none given; borrowed, it must outlive the server). *out: stop
 * it with dg_serve_stop; *port: the port bound. OC_OK, or OC_ERR_IO with a
 * sentence in err. The server's one thread calls the store. */
int dg_serve_start(const dg_serve_listen *l, const char *path, const dg_config *cfg,
                   const char *token, dg_serve **out, unsigned *port, char *err, size_t err_len);

/* Stop and free s (NULL is fine). */
void dg_serve_stop(dg_serve *s);

#endif
