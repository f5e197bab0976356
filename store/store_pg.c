/*
 * store_pg.c -- the PostgreSQL backend of the store (libpq), behind the
 * seam of store_db.h.
 *
 * What it relies on (README "Sharing a store" says it for operators):
 *   - READ COMMITTED transactions and one row lock: every transaction
 *     begins with SELECT ... FROM dg_schema_version FOR UPDATE, so writers
 *     are serialised as SQLite's BEGIN IMMEDIATE serialises them, and each
 *     statement after the lock sees every commit before it;
 *   - INSERT ... ON CONFLICT and RETURNING;
 *   - no notifications: the probe reads the change log's head (store_instances.h)
 *     on a second connection, a round trip per decision but never stale;
 *   - pg_advisory_xact_lock at open only, so two instances starting on an
 *     empty database do not both create the schema.
 *
 * Which database is ours, decided reading only (like store.c for a file),
 * among the tables of the connection's current schema:
 *   - no table: new; created and stamped;
 *   - dg_schema_version (one row: the version) and every table our
 *     migrations create up to that version: ours; migrated forward;
 *   - a version above this build's: refused as newer;
 *   - anything else (tables without dg_schema_version, or a version
 *     without its tables): refused, nothing written.
 *
 * The password of the url never reaches a message: messages name the
 * store as user@host:port/dbname, and libpq's own texts are scrubbed of it.
 */
#include "store_int.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "scrub.h"

#define DG_PG_MAXP 32 /* most parameters of one statement (a mark with a state has 29) */
#define DG_PG_LOCK_KEY 0x44697267 /* "Dirg": the advisory lock of the migration */

struct dg_pg {
    PGconn *conn;         /* the store's connection: store lock held */
    PGconn *probe;        /* reads the change log's head: probe_mu held */
    char *where;          /* user@host:port/dbname, for messages */
    char *secret;         /* the password as libpq reads it (zeroed at close) */
    char *secret_raw;     /* ... and as the url spells it (percent-encoded) */
    unsigned epoch;       /* bumped on a reconnect: statements must be prepared again */
    unsigned begin_epoch; /* the epoch dg_lock and dg_head were prepared in */
    int probe_prepared;   /* the probe's head statement exists on its session */
    int next_name;
    long last_changes;
    int64_t total_changes;
    char errmsg[512];
};

struct dg_pg_stmt {
    struct dg_pg *pg;
    char name[16];
    char *sql;      /* translated to $N placeholders */
    unsigned epoch; /* prepared in this epoch; 0 none */
    int nparams;
    char *vals[DG_PG_MAXP];
    PGresult *res;
    int ran, row, nrows;
    long changes;
};

/* A transaction starts with these three in one pipelined round trip: the
 * writers' lock, then (a new snapshot in READ COMMITTED, taken once the
 * lock is held) the head of the change log, which spares store_instances.c
 * two queries per transaction. Prepared: parsing them each time cost more
 * than the round trip (a raw BEGIN/INSERT/COMMIT took 98-102 us p50 on
 * loopback here, with these as one simple-query batch 165-183 us, as
 * prepared statements in a pipeline 122-130 us). */
static const char sql_begin[] = "BEGIN ISOLATION LEVEL READ COMMITTED";
static const char sql_lock[] = "SELECT version FROM dg_schema_version FOR UPDATE";
static const char sql_tables[] =
    "SELECT ',' || coalesce(string_agg(table_name::text, ',' ORDER BY table_name::text), '')"
    " || ',' FROM information_schema.tables WHERE table_schema = current_schema()"
    " AND table_name <> 'dg_schema_version'";
static const char sql_has_version[] =
    "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
    " AND table_name = 'dg_schema_version'";

static void free_secret(char *s)
{
    if (!s)
        return;
    for (char *c = s; *c; c++)
        *(volatile char *)c = '\0';
    free(s);
}

/* msg without the password, into pg->errmsg (one line). */
static const char *keep_error(struct dg_pg *pg, const char *msg)
{
    snprintf(pg->errmsg, sizeof pg->errmsg, "%s", msg && *msg ? msg : "unknown error");
    dg_scrub_secret(pg->errmsg, pg->secret);
    dg_scrub_secret(pg->errmsg, pg->secret_raw);
    for (char *c = pg->errmsg; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
    size_t n = strlen(pg->errmsg);
    while (n && pg->errmsg[n - 1] == ' ')
        pg->errmsg[--n] = '\0';
    return pg->errmsg;
}

static void quiet_notices(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* "there is no transaction in progress" and the like */
}

/* The password of url as written between ':' and '@' (percent-encoded);
 * malloc'd or NULL. */
static char *raw_password(const char *url)
{
    const char *p = strstr(url, "://");
    if (!p)
        return NULL;
    p += 3;
    const char *at = strchr(p, '@'), *slash = strchr(p, '/');
    if (!at || (slash && slash < at))
        return NULL;
    const char *colon = memchr(p, ':', (size_t)(at - p));
    return colon && at > colon + 1 ? strndup(colon + 1, (size_t)(at - colon - 1)) : NULL;
}

/* Parse url for the messages' name and the secrets; DG_OK or DG_ERR_INVALID. */
static int parse_url(struct dg_pg *pg, const char *url, char *err, size_t err_len)
{
    char *why = NULL;
    PQconninfoOption *opts = PQconninfoParse(url, &why);
    if (!opts) {
        pg->secret_raw = raw_password(url);
        int rc = dg_fail(err, err_len, DG_ERR_INVALID,
                         "config: \"store.url\" is not a PostgreSQL connection url (%s); write "
                         "it as postgresql://user:password@host:port/dbname",
                         keep_error(pg, why ? why : "unreadable"));
        PQfreemem(why);
        return rc;
    }
    const char *user = "", *host = "", *port = "", *db = "";
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val)
            continue;
        if (!strcmp(o->keyword, "password"))
            pg->secret = strdup(o->val);
        else if (!strcmp(o->keyword, "user"))
            user = o->val;
        else if (!strcmp(o->keyword, "host"))
            host = o->val;
        else if (!strcmp(o->keyword, "port"))
            port = o->val;
        else if (!strcmp(o->keyword, "dbname"))
            db = o->val;
    }
    size_t n = strlen(user) + strlen(host) + strlen(port) + strlen(db) + 8;
    pg->where = malloc(n);
    if (pg->where)
        snprintf(pg->where, n, "%s%s%s%s%s/%s", user, *user ? "@" : "", host, *port ? ":" : "",
                 port, db);
    pg->secret_raw = raw_password(url);
    PQconninfoFree(opts);
    return pg->where ? DG_OK : dg_fail(err, err_len, DG_ERR_NOMEM, "store: out of memory");
}

static PGconn *connect_to(struct dg_pg *pg, const char *url, char *err, size_t err_len)
{
    PGconn *c = PQconnectdb(url);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        dg_fail(err, err_len, DG_ERR_IO,
                "store: cannot connect to the PostgreSQL store %s (%s); check that the server "
                "runs and that store.url's user, password and database are right",
                pg->where, keep_error(pg, c ? PQerrorMessage(c) : "out of memory"));
        PQfinish(c);
        return NULL;
    }
    PQsetNoticeProcessor(c, quiet_notices, NULL);
    return c;
}

/* Run sql (no parameters) expecting status want; DG_OK or DG_ERR_IO with
 * the reason kept. *out (when given) gets the result, else it is cleared. */
static int run(struct dg_pg *pg, PGconn *c, const char *sql, ExecStatusType want, PGresult **out)
{
    PGresult *r = PQexec(c, sql);
    int ok = r && PQresultStatus(r) == want;
    if (!ok)
        keep_error(pg, r ? PQresultErrorMessage(r) : PQerrorMessage(c));
    if (ok && out)
        *out = r;
    else
        PQclear(r);
    return ok ? DG_OK : DG_ERR_IO;
}

/* The first column of the first row of sql, malloc'd; NULL on error. */
static char *one_value(struct dg_pg *pg, const char *sql)
{
    PGresult *r = NULL;
    if (run(pg, pg->conn, sql, PGRES_TUPLES_OK, &r) != DG_OK)
        return NULL;
    char *v = PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? strdup(PQgetvalue(r, 0, 0)) : NULL;
    if (!v)
        keep_error(pg, "no value");
    PQclear(r);
    return v;
}

/* Append n bytes of s to the growing buffer *b (len *n_b, room *cap). */
static int put(char **b, size_t *n_b, size_t *cap, const char *s, size_t n)
{
    if (*n_b + n + 1 > *cap) {
        size_t nc = (*n_b + n + 1) * 2;
        char *nb = realloc(*b, nc);
        if (!nb)
            return -1;
        *b = nb;
        *cap = nc;
    }
    memcpy(*b + *n_b, s, n);
    *n_b += n;
    (*b)[*n_b] = '\0';
    return 0;
}

/*
 * SQL of the shared dialect to PostgreSQL's: `?N` -> `$N`, `?` -> the next
 * `$k`; with ddl also the type words (see store_db.h). String literals are
 * copied as they are. malloc'd, caller frees; NULL out of memory. *nparams
 * gets the highest parameter number.
 */
static char *translate(const char *sql, int ddl, int *nparams)
{
    char *b = NULL;
    size_t n = 0, cap = 0;
    int next = 0, top = 0, bad = 0;
    for (const char *p = sql; *p && !bad;) {
        if (*p == '\'') {
            const char *e = p + 1;
            while (*e && !(*e == '\'' && e[1] != '\''))
                e += *e == '\'' ? 2 : 1;
            if (*e)
                e++;
            bad = put(&b, &n, &cap, p, (size_t)(e - p));
            p = e;
        } else if (*p == '?') {
            char num[16];
            int k;
            p++;
            if (*p >= '0' && *p <= '9') {
                k = (int)strtol(p, (char **)&p, 10);
            } else {
                k = ++next;
            }
            if (k > top)
                top = k;
            snprintf(num, sizeof num, "$%d", k);
            bad = put(&b, &n, &cap, num, strlen(num));
        } else if (ddl && ((*p >= 'A' && *p <= 'Z') || *p == '_') &&
                   (p == sql || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
                                  (p[-1] >= 'A' && p[-1] <= 'Z')))) {
            const char *e = p;
            while ((*e >= 'A' && *e <= 'Z') || *e == '_')
                e++;
            size_t w = (size_t)(e - p);
            const char *to = NULL;
            if (w == 7 && !strncmp(p, "INTEGER", 7)) {
                if (!strncmp(e, " PRIMARY KEY AUTOINCREMENT", 26)) {
                    to = "BIGSERIAL PRIMARY KEY";
                    e += 26;
                } else if (!strncmp(e, " PRIMARY KEY", 12)) {
                    to = "BIGSERIAL PRIMARY KEY";
                    e += 12;
                } else {
                    to = "BIGINT";
                }
            } else if (w == 4 && !strncmp(p, "TEXT", 4)) {
                to = "TEXT COLLATE \"C\"";
            } else if (w == 7 && !strncmp(p, "WITHOUT", 7) && !strncmp(e, " ROWID", 6)) {
                to = "";
                e += 6;
            }
            bad = to ? put(&b, &n, &cap, to, strlen(to)) : put(&b, &n, &cap, p, w);
            p = e;
        } else {
            const char *e = p + 1;
            if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_')
                while ((*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') || *e == '_' ||
                       (*e >= '0' && *e <= '9'))
                    e++;
            bad = put(&b, &n, &cap, p, (size_t)(e - p));
            p = e;
        }
    }
    if (bad || !b) {
        free(b);
        return bad ? NULL : strdup("");
    }
    *nparams = top;
    return b;
}

/*
 * Decide whether the database is ours and bring it to this build's schema,
 * in one transaction under the migration lock. DG_OK or a refusal.
 */
static int check_and_migrate(dg_store *st, char *err, size_t err_len)
{
    struct dg_pg *pg = st->pg;
    char lock[96];
    snprintf(lock, sizeof lock, "BEGIN; SELECT pg_advisory_xact_lock(%d)", DG_PG_LOCK_KEY);
    char *have = NULL, *want = NULL, *hv = NULL, *ver = NULL;
    int out = DG_OK, version = 0;
    if (run(pg, pg->conn, lock, PGRES_TUPLES_OK, NULL) != DG_OK ||
        !(have = one_value(pg, sql_tables)) || !(hv = one_value(pg, sql_has_version)))
        goto io;
    if (strcmp(hv, "0") != 0) {
        if (!(ver = one_value(pg, "SELECT version FROM dg_schema_version")))
            goto io;
        version = atoi(ver);
    }
    st->opened_version = version;
    if (!strcmp(hv, "0")) {
        if (strcmp(have, ",,") != 0)
            out = dg_fail(err, err_len, DG_ERR_INVALID,
                          "store: the PostgreSQL store %s holds another application's tables "
                          "(%.200s) and no dg_schema_version; nothing was written: give "
                          "dirigent a database (or a schema, via options=-csearch_path=...) of "
                          "its own",
                          pg->where, have);
    } else if (version > dg_schema_nsteps || version < 1) {
        out = dg_fail(err, err_len, DG_ERR_UNSUPPORTED,
                      "store: the PostgreSQL store %s has schema version %d (this build knows "
                      "up to %d); it was written by a newer dirigent and was left untouched: "
                      "upgrade the plugin or point store.url at another database",
                      pg->where, version, dg_schema_nsteps);
    } else if (!(want = dg_store_tables_of_version(version))) {
        out = dg_fail(err, err_len, DG_ERR_NOMEM, "store: out of memory checking %s", pg->where);
    } else if (!dg_store_has_tables(have, want)) {
        out = dg_fail(err, err_len, DG_ERR_INVALID,
                      "store: the PostgreSQL store %s claims dirigent schema version %d but "
                      "lacks its tables (has %.200s, needs %.200s); it was left untouched: "
                      "restore it from a backup or point store.url at a new database",
                      pg->where, version, have, want);
    }
    if (out != DG_OK) {
        run(pg, pg->conn, "ROLLBACK", PGRES_COMMAND_OK, NULL);
        goto done;
    }
    if (version == 0 && run(pg, pg->conn,
                            "CREATE TABLE dg_schema_version (version BIGINT NOT NULL);"
                            "INSERT INTO dg_schema_version(version) VALUES (0)",
                            PGRES_COMMAND_OK, NULL) != DG_OK)
        goto io_rollback;
    for (int v = version; v < dg_schema_nsteps; v++) {
        int np = 0;
        char *ddl = translate(dg_schema_step_pg(v), 1, &np);
        int rc = ddl ? run(pg, pg->conn, ddl, PGRES_COMMAND_OK, NULL) : DG_ERR_IO;
        if (!ddl)
            keep_error(pg, "out of memory");
        free(ddl);
        if (rc != DG_OK)
            goto io_rollback;
    }
    char set[64];
    snprintf(set, sizeof set, "UPDATE dg_schema_version SET version = %d", dg_schema_nsteps);
    if (run(pg, pg->conn, set, PGRES_COMMAND_OK, NULL) != DG_OK ||
        run(pg, pg->conn, "COMMIT", PGRES_COMMAND_OK, NULL) != DG_OK)
        goto io_rollback;
    goto done;

io_rollback : {
    char why[sizeof pg->errmsg];
    snprintf(why, sizeof why, "%s", pg->errmsg);
    run(pg, pg->conn, "ROLLBACK", PGRES_COMMAND_OK, NULL);
    snprintf(pg->errmsg, sizeof pg->errmsg, "%s", why);
}
io:
    out = dg_fail(err, err_len, DG_ERR_IO,
                  "store: could not check or set up the schema of the PostgreSQL store %s: %s",
                  pg->where, pg->errmsg);
done:
    free(have);
    free(want);
    free(hv);
    free(ver);
    return out;
}

/* st->pg with the store's connection to url (both opens); on failure what
 * was made stays in st for dg_pg_close. */
static int open_conn(dg_store *st, const char *url, char *err, size_t err_len)
{
    struct dg_pg *pg = calloc(1, sizeof *pg);
    if (!pg)
        return dg_fail(err, err_len, DG_ERR_NOMEM, "store: out of memory");
    st->pg = pg;
    pg->epoch = 1;
    int rc = parse_url(pg, url, err, err_len);
    if (rc != DG_OK)
        return rc;
    return (pg->conn = connect_to(pg, url, err, err_len)) ? DG_OK : DG_ERR_IO;
}

/* dg_store_where's name of the store: "PostgreSQL user@host:port/db". */
static int set_where(dg_store *st, char *err, size_t err_len)
{
    size_t n = strlen(st->pg->where) + sizeof "PostgreSQL ";
    if (!(st->where = malloc(n)))
        return dg_fail(err, err_len, DG_ERR_NOMEM, "store: out of memory");
    snprintf(st->where, n, "PostgreSQL %s", st->pg->where);
    return DG_OK;
}

int dg_pg_open(dg_store *st, const char *url, char *err, size_t err_len)
{
    int rc = open_conn(st, url, err, err_len);
    if (rc != DG_OK || (rc = check_and_migrate(st, err, err_len)) != DG_OK)
        return rc;
    if (!(st->pg->probe = connect_to(st->pg, url, err, err_len)))
        return DG_ERR_IO;
    return set_where(st, err, err_len);
}

/*
 * The operator's read-only open (dirigent-ctl): the same recognition as
 * check_and_migrate but nothing is created or migrated, and the session
 * refuses writes itself (default_transaction_read_only), so even a bug
 * in a caller cannot change the store. No probe connection: nothing
 * decides turns here.
 */
int dg_pg_open_readonly(dg_store *st, const char *url, char *err, size_t err_len)
{
    int rc = open_conn(st, url, err, err_len);
    if (rc != DG_OK)
        return rc;
    struct dg_pg *pg = st->pg;
    char *have = NULL, *want = NULL, *hv = NULL, *ver = NULL;
    int version = 0, out = DG_OK;
    if (run(pg, pg->conn, "SET default_transaction_read_only = on", PGRES_COMMAND_OK, NULL) !=
            DG_OK ||
        run(pg, pg->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", PGRES_COMMAND_OK,
            NULL) != DG_OK ||
        !(have = one_value(pg, sql_tables)) || !(hv = one_value(pg, sql_has_version)) ||
        (strcmp(hv, "0") != 0 && !(ver = one_value(pg, "SELECT version FROM dg_schema_version"))))
        out = dg_fail(err, err_len, DG_ERR_IO, "cannot read the PostgreSQL store %s: %s", pg->where,
                      pg->errmsg);
    else if (ver)
        version = atoi(ver);
    if (out == DG_OK && !strcmp(hv, "0"))
        out = dg_fail(err, err_len, DG_ERR_INVALID,
                      "the PostgreSQL store %s is not a dirigent "
                      "store (no dg_schema_version); give --store-url the plugin's store.url",
                      pg->where);
    else if (out == DG_OK && version < dg_schema_nsteps)
        out = dg_fail(err, err_len, DG_ERR_UNSUPPORTED,
                      "the PostgreSQL store %s is at schema "
                      "version %d, this dirigent-ctl reads version %d: start the plugin of this "
                      "version once (it migrates the store), then ask again",
                      pg->where, version, dg_schema_nsteps);
    else if (out == DG_OK && version > dg_schema_nsteps)
        out = dg_fail(err, err_len, DG_ERR_UNSUPPORTED,
                      "the PostgreSQL store %s is at schema "
                      "version %d, newer than this dirigent-ctl (%d): use the dirigent-ctl "
                      "installed with that plugin",
                      pg->where, version, dg_schema_nsteps);
    else if (out == DG_OK && !(want = dg_store_tables_of_version(version)))
        out = dg_fail(err, err_len, DG_ERR_NOMEM, "store: out of memory checking %s", pg->where);
    else if (out == DG_OK && !dg_store_has_tables(have, want))
        out = dg_fail(err, err_len, DG_ERR_INVALID,
                      "the PostgreSQL store %s claims dirigent "
                      "schema version %d but lacks its tables (has %.200s, needs %.200s)",
                      pg->where, version, have, want);
    run(pg, pg->conn, "ROLLBACK", PGRES_COMMAND_OK, NULL);
    free(have);
    free(want);
    free(hv);
    free(ver);
    if (out != DG_OK)
        return out;
    st->opened_version = version;
    return set_where(st, err, err_len);
}

/* A snapshot for the operator: every query of one dirigent-ctl command
 * sees the same committed state, and the writers' row lock is never
 * taken (the plugin's transactions go on beside it). */
int dg_pg_begin_read(dg_store *st)
{
    struct dg_pg *pg = st->pg;
    return run(pg, pg->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", PGRES_COMMAND_OK,
               NULL);
}

void dg_pg_close(dg_store *st)
{
    struct dg_pg *pg = st->pg;
    if (!pg)
        return;
    PQfinish(pg->conn);
    PQfinish(pg->probe);
    free(pg->where);
    free_secret(pg->secret);
    free_secret(pg->secret_raw);
    free(pg);
    st->pg = NULL;
}

int dg_pg_stmt_prepare(dg_store *st, const char *sql, dg_stmt *out)
{
    struct dg_pg_stmt *s = calloc(1, sizeof *s);
    if (!s)
        return DG_ERR_NOMEM;
    s->pg = st->pg;
    if (!(s->sql = translate(sql, 0, &s->nparams)) || s->nparams > DG_PG_MAXP) {
        free(s->sql);
        free(s);
        return DG_ERR_INTERNAL;
    }
    snprintf(s->name, sizeof s->name, "dg%d", st->pg->next_name++);
    out->pg = s;
    return DG_OK;
}

void dg_pg_reset(dg_stmt *stmt)
{
    struct dg_pg_stmt *s = stmt->pg;
    PQclear(s->res);
    s->res = NULL;
    s->ran = s->row = s->nrows = 0;
    for (int i = 0; i < DG_PG_MAXP; i++) {
        free(s->vals[i]);
        s->vals[i] = NULL;
    }
}

void dg_pg_stmt_free(dg_stmt *stmt)
{
    dg_pg_reset(stmt);
    free(stmt->pg->sql);
    free(stmt->pg);
    stmt->pg = NULL;
}

void dg_pg_bind(dg_stmt *stmt, int idx, const char *text)
{
    struct dg_pg_stmt *s = stmt->pg;
    if (idx < 1 || idx > DG_PG_MAXP)
        return;
    free(s->vals[idx - 1]);
    s->vals[idx - 1] = text ? strdup(text) : NULL;
    if (text && !s->vals[idx - 1])
        stmt->bind_failed = 1; /* out of memory: dg_step refuses to run a NULL here */
}

int dg_pg_step(dg_stmt *stmt)
{
    struct dg_pg_stmt *s = stmt->pg;
    struct dg_pg *pg = s->pg;
    if (s->ran)
        return ++s->row < s->nrows ? DG_ROW : DG_DONE;
    s->ran = 1;
    if (s->epoch != pg->epoch) {
        PGresult *p = PQprepare(pg->conn, s->name, s->sql, s->nparams, NULL);
        int ok = p && PQresultStatus(p) == PGRES_COMMAND_OK;
        if (!ok)
            keep_error(pg, p ? PQresultErrorMessage(p) : PQerrorMessage(pg->conn));
        PQclear(p);
        if (!ok)
            return DG_ERR_IO;
        s->epoch = pg->epoch;
    }
    s->res =
        PQexecPrepared(pg->conn, s->name, s->nparams, (const char *const *)s->vals, NULL, NULL, 0);
    ExecStatusType t = s->res ? PQresultStatus(s->res) : PGRES_FATAL_ERROR;
    if (t != PGRES_TUPLES_OK && t != PGRES_COMMAND_OK) {
        keep_error(pg, s->res ? PQresultErrorMessage(s->res) : PQerrorMessage(pg->conn));
        return DG_ERR_IO;
    }
    s->changes = 0;
    if (strncmp(PQcmdStatus(s->res), "SELECT", 6) != 0) {
        s->changes = atol(PQcmdTuples(s->res));
        pg->last_changes = s->changes;
        pg->total_changes += s->changes;
    }
    s->nrows = t == PGRES_TUPLES_OK ? PQntuples(s->res) : 0;
    s->row = 0;
    return s->nrows > 0 ? DG_ROW : DG_DONE;
}

const char *dg_pg_col(dg_stmt *stmt, int col)
{
    struct dg_pg_stmt *s = stmt->pg;
    if (!s->res || s->row >= s->nrows || col >= PQnfields(s->res) ||
        PQgetisnull(s->res, s->row, col))
        return NULL;
    return PQgetvalue(s->res, s->row, col);
}

long dg_pg_changes(dg_stmt *stmt)
{
    return stmt->pg->changes;
}

long dg_pg_last_changes(dg_store *st)
{
    return st->pg->last_changes;
}

int64_t dg_pg_total_changes(dg_store *st)
{
    return st->pg->total_changes;
}

const char *dg_pg_errmsg(dg_store *st)
{
    return st->pg->errmsg;
}

int dg_pg_begin(dg_store *st)
{
    struct dg_pg *pg = st->pg;
    if (PQstatus(pg->conn) != CONNECTION_OK) {
        /* The server went away (a restart, a network cut): one reconnect;
         * statements prepared on the old session are gone with it. */
        PQreset(pg->conn);
        if (PQstatus(pg->conn) != CONNECTION_OK) {
            keep_error(pg, PQerrorMessage(pg->conn));
            return DG_ERR_IO;
        }
        pg->epoch++;
    }
    if (pg->begin_epoch != pg->epoch) {
        PGresult *a = PQprepare(pg->conn, "dg_lock", sql_lock, 0, NULL);
        PGresult *b = PQprepare(pg->conn, "dg_head", dg_sql_change_head, 0, NULL);
        int ok = PQresultStatus(a) == PGRES_COMMAND_OK && PQresultStatus(b) == PGRES_COMMAND_OK;
        if (!ok)
            keep_error(pg, PQresultStatus(a) != PGRES_COMMAND_OK ? PQresultErrorMessage(a)
                                                                 : PQresultErrorMessage(b));
        PQclear(a);
        PQclear(b);
        if (!ok)
            return DG_ERR_IO;
        pg->begin_epoch = pg->epoch;
    }
    int ok = PQenterPipelineMode(pg->conn) &&
             PQsendQueryParams(pg->conn, sql_begin, 0, NULL, NULL, NULL, NULL, 0) &&
             PQsendQueryPrepared(pg->conn, "dg_lock", 0, NULL, NULL, NULL, 0) &&
             PQsendQueryPrepared(pg->conn, "dg_head", 0, NULL, NULL, NULL, 0) &&
             PQpipelineSync(pg->conn);
    if (!ok)
        keep_error(pg, PQerrorMessage(pg->conn));
    /* Results: BEGIN, the lock, the head (each followed by a NULL), then the
     * sync. A broken connection gives NULLs only: bounded. */
    int got = 0, nulls = 0, synced = 0;
    while (ok && !synced && nulls < 4) {
        PGresult *r = PQgetResult(pg->conn);
        if (!r) {
            nulls++;
            continue;
        }
        nulls = 0;
        ExecStatusType t = PQresultStatus(r);
        if (t == PGRES_PIPELINE_SYNC) {
            synced = 1;
        } else if (t != (got == 0 ? PGRES_COMMAND_OK : PGRES_TUPLES_OK)) {
            keep_error(pg, PQresultErrorMessage(r));
            ok = 0;
        } else if (got++ == 2 && PQntuples(r) == 1) {
            st->txn_head = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        }
        PQclear(r);
    }
    /* After an error, read on to the sync so the connection leaves the
     * pipeline clean. */
    while (!synced && nulls < 4) {
        PGresult *r = PQgetResult(pg->conn);
        nulls = r ? 0 : nulls + 1;
        synced = r && PQresultStatus(r) == PGRES_PIPELINE_SYNC;
        PQclear(r);
    }
    PQexitPipelineMode(pg->conn);
    if (!ok || !synced || got != 3) {
        if (ok)
            keep_error(pg, PQerrorMessage(pg->conn));
        run(pg, pg->conn, "ROLLBACK", PGRES_COMMAND_OK, NULL);
        return DG_ERR_IO;
    }
    return DG_OK;
}

int dg_pg_commit(dg_store *st)
{
    struct dg_pg *pg = st->pg;
    PGresult *r = PQexec(pg->conn, "COMMIT");
    /* A transaction a failed statement aborted answers COMMIT with
     * "ROLLBACK": that is a loss, not a commit. */
    int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK && !strcmp(PQcmdStatus(r), "COMMIT");
    if (!ok)
        keep_error(pg, !r ? PQerrorMessage(pg->conn)
                       : PQresultStatus(r) != PGRES_COMMAND_OK
                           ? PQresultErrorMessage(r)
                           : "the transaction was aborted by an earlier failed statement");
    PQclear(r);
    return ok ? DG_OK : DG_ERR_IO;
}

void dg_pg_rollback(dg_store *st)
{
    PQclear(PQexec(st->pg->conn, "ROLLBACK"));
}

/*
 * The head of the change log, read on the probe connection each time: a
 * round trip (an index-only max), but exact. A notification (LISTEN)
 * would spare it when nothing changed, yet arrives after the commit: a
 * decision in between would come from a stale mirror, which the engine
 * must never do. After a broken connection (a server restart) one
 * reconnect, then -1 ("cannot tell": the engine syncs in a transaction).
 */
int64_t dg_pg_change_seq(dg_store *st)
{
    struct dg_pg *pg = st->pg;
    pthread_mutex_lock(&st->probe_mu);
    int64_t out = -1;
    for (int attempt = 0; attempt < 2 && out < 0; attempt++) {
        if (attempt || PQstatus(pg->probe) != CONNECTION_OK) {
            PQreset(pg->probe);
            pg->probe_prepared = 0;
            if (PQstatus(pg->probe) != CONNECTION_OK)
                continue;
        }
        if (!pg->probe_prepared) {
            PGresult *p = PQprepare(pg->probe, "head", dg_sql_change_head, 0, NULL);
            pg->probe_prepared = p && PQresultStatus(p) == PGRES_COMMAND_OK;
            PQclear(p);
            if (!pg->probe_prepared)
                continue;
        }
        PGresult *r = PQexecPrepared(pg->probe, "head", 0, NULL, NULL, NULL, 0);
        if (r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
            out = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
    }
    pthread_mutex_unlock(&st->probe_mu);
    return out;
}
