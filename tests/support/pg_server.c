/*
 * pg_server.c -- see pg_server.h. State: one server per test process (the
 * suite's parent), in file-scope variables of this test helper.
 */
#include "pg_server.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char pgs_dir[64];
static char pgs_bindir[256];
static char pgs_base[512];
static int pgs_up;
static int pgs_counter;

static int find_bindir(void)
{
    const char *env = getenv("DG_PG_BINDIR");
    static const char *const cand[] = {"/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin",
                                       "/usr/lib/postgresql/15/bin", "/usr/local/bin",
                                       "/usr/local/pgsql/bin"};
    char p[300];
    if (env && *env) {
        snprintf(pgs_bindir, sizeof pgs_bindir, "%s", env);
        snprintf(p, sizeof p, "%s/initdb", pgs_bindir);
        return access(p, X_OK) == 0;
    }
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
        snprintf(p, sizeof p, "%s/initdb", cand[i]);
        char q[300];
        snprintf(q, sizeof q, "%s/pg_ctl", cand[i]);
        if (access(p, X_OK) == 0 && access(q, X_OK) == 0) {
            snprintf(pgs_bindir, sizeof pgs_bindir, "%s", cand[i]);
            return 1;
        }
    }
    return 0;
}

/* Run argv with stdout and stderr to out; its exit status, -1 when it
 * could not run or died. No Check call: the bench uses this outside a
 * test (pg_ctl -w -t and initdb bound their own time). */
static int spawn_wait(const char *const *argv, const char *out)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Run a server tool as the server's user; its output goes to dir/tool.log. */
static int run_tool(const char *const *args)
{
    const char *argv[24];
    int n = 0;
    char tool[320];
    if (geteuid() == 0) {
        argv[n++] = "runuser";
        argv[n++] = "-u";
        argv[n++] = "nobody";
        argv[n++] = "--";
    }
    snprintf(tool, sizeof tool, "%s/%s", pgs_bindir, args[0]);
    argv[n++] = tool;
    for (int i = 1; args[i] && n < 23; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char out[128];
    snprintf(out, sizeof out, "%s/tool.log", pgs_dir);
    return spawn_wait(argv, out);
}

static void show_log(const char *name)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", pgs_dir, name);
    FILE *f = fopen(p, "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f))
        fprintf(stderr, "  | %s", line);
    fclose(f);
}

int pgs_skipped(void)
{
    static int said;
    const char *skip = getenv("DG_SKIP_PG");
    if (!skip || strcmp(skip, "1") != 0 || find_bindir())
        return 0;
    if (!said++)
        fprintf(stderr, "\n*** SKIPPED: no PostgreSQL server binaries (initdb, pg_ctl): the "
                        "*_pg suites hold no tests (DG_SKIP_PG=1); the store is NOT tested on "
                        "PostgreSQL in this run ***\n\n");
    return 1;
}

int pgs_start(void)
{
    if (pgs_up)
        return 1;
    if (!find_bindir()) {
        if (pgs_skipped())
            return 0;
        ck_abort_msg("no PostgreSQL server binaries (initdb and pg_ctl in DG_PG_BINDIR, "
                     "/usr/lib/postgresql/<version>/bin or /usr/local/bin): run `make deps` "
                     "(Debian postgresql) or set DG_SKIP_PG=1 to skip these suites knowingly");
    }
    /* No Check assertion on the way unless something fails: the bench
     * starts a server outside any test. */
    snprintf(pgs_dir, sizeof pgs_dir, "/tmp/dg-pg-XXXXXX");
    if (!mkdtemp(pgs_dir))
        ck_abort_msg("mkdtemp for the PostgreSQL server failed: %s", strerror(errno));
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("nobody");
        if (!pw || chown(pgs_dir, pw->pw_uid, pw->pw_gid) != 0)
            ck_abort_msg("running as root, the PostgreSQL server runs as the user nobody, "
                         "which must exist and own %s",
                         pgs_dir);
    }
    char pwfile[128], data[128], log[128], opts[256];
    snprintf(pwfile, sizeof pwfile, "%s/pw", pgs_dir);
    snprintf(data, sizeof data, "%s/data", pgs_dir);
    snprintf(log, sizeof log, "%s/server.log", pgs_dir);
    if (tu_write_file(pwfile, PGS_PASSWORD "\n") != 0)
        ck_abort_msg("cannot write %s", pwfile);
    chmod(pwfile, 0644);
    const char *initdb[] = {
        "initdb",        "-D", data,   "-U",         "dirigent",  "--pwfile", pwfile, "-A",
        "scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync", NULL};
    if (run_tool(initdb) != 0) {
        show_log("tool.log");
        ck_abort_msg("initdb failed in %s (its output is above)", pgs_dir);
    }
    /* Unix socket only, in our folder; durability off (a test server). */
    snprintf(opts, sizeof opts,
             "-h '' -k %s -p 5432 -c fsync=off -c full_page_writes=off "
             "-c synchronous_commit=off",
             pgs_dir);
    const char *start[] = {"pg_ctl", "-D",  data, "-l", log,     "-w",
                           "-t",     "120", "-o", opts, "start", NULL};
    if (run_tool(start) != 0) {
        show_log("tool.log");
        show_log("server.log");
        ck_abort_msg("pg_ctl start failed in %s (its output is above)", pgs_dir);
    }
    snprintf(pgs_base, sizeof pgs_base,
             "postgresql://dirigent:" PGS_PASSWORD "@/postgres?host=%s&port=5432", pgs_dir);
    pgs_up = 1;
    return 1;
}

void pgs_stop(void)
{
    if (!pgs_up)
        return;
    char data[128];
    snprintf(data, sizeof data, "%s/data", pgs_dir);
    const char *stop[] = {"pg_ctl", "-D", data, "-m", "immediate", "-w", "stop", NULL};
    run_tool(stop);
    tu_rmtree(pgs_dir);
    pgs_up = 0;
}

static void start_fixture(void)
{
    pgs_start();
}

void pgs_on_pg(TCase *tc, int last)
{
    tcase_add_unchecked_fixture(tc, start_fixture, last ? pgs_stop : NULL);
}

int pgs_running(void)
{
    return pgs_up;
}

const char *pgs_url(void)
{
    return pgs_base;
}

/* libpq's notices (a DROP ... CASCADE lists what it dropped) go to the
 * server folder's notices.log: on the terminal they read like failures.
 * Called by libpq on the thread running the query. */
static void log_notice(void *arg, const char *message)
{
    (void)arg;
    char path[128];
    snprintf(path, sizeof path, "%s/notices.log", pgs_dir);
    FILE *f = fopen(path, "a");
    if (f) {
        fputs(message, f);
        fclose(f);
    }
}

/* sql on a connection of its own to url: its result (caller clears), or
 * NULL with the reason in why (static). */
static PGresult *query(const char *url, const char *sql, const char **why)
{
    static char msg[512];
    PGconn *c = PQconnectdb(url);
    PQsetNoticeProcessor(c, log_notice, NULL);
    PGresult *r = PQstatus(c) == CONNECTION_OK ? PQexec(c, sql) : NULL;
    ExecStatusType t = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK) {
        snprintf(msg, sizeof msg, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
        *why = msg;
        PQclear(r);
        r = NULL;
    }
    PQfinish(c);
    return r;
}

int pgs_exec(const char *url, const char *sql)
{
    const char *why = NULL;
    PGresult *r = query(url, sql, &why);
    int ok = r != NULL;
    if (!ok)
        fprintf(stderr, "pgs_exec: %s", why);
    PQclear(r);
    return ok ? 0 : -1;
}

int pgs_refuses(const char *url, const char *sql, const char *want)
{
    const char *why = NULL;
    PGresult *r = query(url, sql, &why);
    if (r) {
        PQclear(r);
        fprintf(stderr, "pgs_refuses: the server accepted %s\n", sql);
        return 0;
    }
    /* Expected: the refusal goes to the server folder's own log, where a
     * failing test's reader finds it; on the terminal it reads like a failure. */
    char path[128];
    snprintf(path, sizeof path, "%s/refused.log", pgs_dir);
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%s\n-> %s", sql, why);
        fclose(f);
    }
    if (want && !strstr(why, want)) {
        fprintf(stderr, "pgs_refuses: %s was refused, but not for \"%s\": %s", sql, want, why);
        return 0;
    }
    return 1;
}

long pgs_value(const char *url, const char *sql)
{
    const char *why = NULL;
    PGresult *r = query(url, sql, &why);
    long v =
        r && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? strtol(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    return v;
}

char *pgs_fresh_url(void)
{
    if (!pgs_up)
        ck_abort_msg("the PostgreSQL server is not running");
    char schema[64], sql[128];
    snprintf(schema, sizeof schema, "t_%ld_%d", (long)getpid(), ++pgs_counter);
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", schema);
    if (pgs_exec(pgs_base, sql) != 0)
        ck_abort_msg("cannot create schema %s", schema);
    size_t n = strlen(pgs_base) + strlen(schema) + 40;
    char *url = malloc(n);
    if (!url)
        ck_abort_msg("out of memory");
    snprintf(url, n, "%s&options=-csearch_path%%3D%s", pgs_base, schema);
    return url;
}
