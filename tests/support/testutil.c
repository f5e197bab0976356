/*
 * testutil.c -- helpers for the Check suites (temp folders, files, JSON).
 */
#include "testutil.h"
#include "pg_server.h"

#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *tu_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char *tmpl = NULL;
    if (asprintf(&tmpl, "%s/dg-test-XXXXXX", base && *base ? base : "/tmp") < 0)
        ck_abort_msg("out of memory");
    if (!mkdtemp(tmpl))
        ck_abort_msg("mkdtemp failed");
    return tmpl;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void tu_rmtree(const char *path)
{
    if (path)
        nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *tu_path(const char *dir, const char *name)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", dir, name) < 0)
        ck_abort_msg("out of memory");
    return p;
}

int tu_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

json_t *tu_json(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        ck_abort_msg("bad test JSON at line %d: %s", e.line, e.text);
    return j;
}

const char *tu_build_dir(void)
{
    const char *b = getenv("DG_BUILD_DIR");
    return b && *b ? b : "build";
}

void tu_logbuf_add(tu_logbuf *lb, int level, const char *line)
{
    char prefix[8];
    snprintf(prefix, sizeof prefix, "%d ", level);
    size_t add = strlen(prefix) + strlen(line) + 1;
    char *t = realloc(lb->text, lb->len + add + 1);
    if (!t)
        return;
    lb->text = t;
    memcpy(lb->text + lb->len, prefix, strlen(prefix));
    lb->len += strlen(prefix);
    memcpy(lb->text + lb->len, line, strlen(line));
    lb->len += strlen(line);
    lb->text[lb->len++] = '\n';
    lb->text[lb->len] = '\0';
}

void tu_logbuf_free(tu_logbuf *lb)
{
    free(lb->text);
    lb->text = NULL;
    lb->len = 0;
}

static void redirect(int fd, const char *path)
{
    int f = open(path ? path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (f >= 0) {
        dup2(f, fd);
        close(f);
    }
}

int tu_run_wait(const char *const *argv, const char *out_path, const char *err_path,
                const char *const *unset, long timeout_ms)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* Never outlive a test that timed out or crashed. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        redirect(1, out_path);
        redirect(2, err_path);
        for (; unset && *unset; unset++)
            unsetenv(*unset);
        execvp(argv[0], (char *const *)argv);
        _exit(126);
    }
    int st = 0, done = 0;
    for (long waited = 0; waited <= timeout_ms && !done; waited += 10) {
        done = waitpid(pid, &st, WNOHANG) == pid;
        if (!done) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    return done && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

char *tu_db_target(const char *dir)
{
    return pgs_running() ? pgs_fresh_url() : tu_path(dir, "dirigent.db");
}

char *tu_store_member_of(const char *target)
{
    char *out = NULL;
    int pg = !strncmp(target, "postgresql://", 13);
    if (asprintf(&out, pg ? "\"store\":{\"url\":\"%s\"}" : "\"dbPath\":\"%s\"", target) < 0)
        ck_abort_msg("out of memory"); /* no Check call on success: benches use it too */
    return out;
}

char *tu_store_member(const char *dir)
{
    char *t = tu_db_target(dir);
    char *out = tu_store_member_of(t);
    free(t);
    return out;
}
