/*
 * pg_server.h -- a real PostgreSQL server for the store suites that run on
 * PostgreSQL: initdb + pg_ctl in a private temp folder, unix socket only
 * (no TCP port to collide with), scram password auth so every url the
 * tests use carries a password. As root (CI), the server runs as the user
 * "nobody" through runuser: postgres refuses root.
 *
 * One server per suite: start it in an unchecked fixture (the parent
 * process), give each test a fresh schema (pgs_fresh_url). Binaries: env
 * DG_PG_BINDIR, else /usr/lib/postgresql/<15..>/bin, else /usr/local/bin.
 * Without them the suite fails, naming what to install (make deps), unless
 * env DG_SKIP_PG=1, which skips with a loud line.
 */
#ifndef DG_PG_SERVER_H
#define DG_PG_SERVER_H

#include <stddef.h>

/* The password of the test server's user (long enough for dg_scrub_secret
 * to mask on its own). */
#define PGS_PASSWORD "pg-Secret-4711-xyz"

/* Start the server (once per suite, unchecked fixture). Aborts the run
 * with a message when it cannot; returns 0 when DG_SKIP_PG=1 skipped it,
 * 1 when it runs. */
int pgs_start(void);

/* Stop it and remove its folder (unchecked teardown). */
void pgs_stop(void);

/* Run tc's tests on PostgreSQL: an unchecked fixture starts the server
 * (once; later test cases of the suite find it running); last: this is the
 * suite's last test case, whose teardown stops it. */
struct TCase;
void pgs_on_pg(struct TCase *tc, int last);

/* 1 when the PostgreSQL suites are skipped knowingly: no server binaries
 * and DG_SKIP_PG=1 (says so once, loudly, on stderr). A *_pg suite then
 * holds no test at all, rather than running its cases on SQLite. */
int pgs_skipped(void);

/* 1 when pgs_start started a server. */
int pgs_running(void);

/* The base url (postgres database, public schema). Static; do not free. */
const char *pgs_url(void);

/* A url whose search_path is a new empty schema: a database of the test's
 * own. malloc'd, caller frees. Aborts the test on failure. */
char *pgs_fresh_url(void);

/* The first value of sql's first row on url as a number; -1 when the
 * query fails (quietly: tests ask whether a table exists this way). */
long pgs_value(const char *url, const char *sql);

/* Run one SQL text on url (test set-up: foreign tables, a newer version);
 * 0 on success, else the message is printed. */
int pgs_exec(const char *url, const char *sql);

/* Run one SQL text that the server must refuse (a constraint's test): 1
 * when it fails with a message containing want (NULL: any), else 0 with
 * what happened on stderr. The expected refusal is written to refused.log
 * in the server's folder, not to the terminal. */
int pgs_refuses(const char *url, const char *sql, const char *want);

#endif
