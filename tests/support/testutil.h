/*
 * testutil.h -- small helpers shared by the Check suites.
 */
#ifndef DG_TESTUTIL_H
#define DG_TESTUTIL_H

#include <stddef.h>
#include <jansson.h>

/* A fresh private temp folder; returns a malloc'd path the caller frees
 * (after tu_rmtree). Aborts the test on failure. */
char *tu_mkdtemp(void);

/* Remove a folder tree (best effort). */
void tu_rmtree(const char *path);

/* malloc'd "dir/name"; caller frees. */
char *tu_path(const char *dir, const char *name);

/* Where a test's store lives: while a PostgreSQL suite's server runs
 * (pg_server.h), the url of a fresh schema; else "dir/dirigent.db". The
 * same test body thus runs on both backends. malloc'd; caller frees. */
char *tu_db_target(const char *dir);

/* The plugin config member naming that store: "dbPath":"<file>" or
 * "store":{"url":"<url>"} (no braces around it). malloc'd; caller frees. */
char *tu_store_member(const char *dir);

/* The same member for a target tu_db_target gave. malloc'd. */
char *tu_store_member_of(const char *target);

/* Write text into a file (truncating); 0 on success. */
int tu_write_file(const char *path, const char *text);

/* Parse JSON text or abort the test; new reference. */
json_t *tu_json(const char *text);

/* Build dir of the artefacts under test: env DG_BUILD_DIR or "build".
 * Static string, do not free. */
const char *tu_build_dir(void);

/*
 * Run argv (NULL-terminated; argv[0] is looked up in PATH unless it has a
 * '/') with stdout to out_path and stderr to err_path (NULL: /dev/null),
 * the environment variables named in unset (NULL-terminated, may be NULL)
 * removed, for at most timeout_ms; the child dies with the test process.
 * Returns its exit status, or -1 when it was killed or died of a signal.
 */
int tu_run_wait(const char *const *argv, const char *out_path, const char *err_path,
                const char *const *unset, long timeout_ms);

/* A capture of log lines from a test host; see tu_log_* below. */
typedef struct tu_logbuf {
    char *text; /* all lines, '\n'-separated; owned */
    size_t len;
} tu_logbuf;

void tu_logbuf_add(tu_logbuf *lb, int level, const char *line);
void tu_logbuf_free(tu_logbuf *lb);

#endif
