/*
 * testutil.c -- helpers for the Check suites (temp folders, files, JSON).
 */
#include "testutil.h"

#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    (void)sb; (void)flag; (void)ftw;
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
