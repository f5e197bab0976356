/*
 * fuzz_util.c -- helpers of the unit fuzz targets (see fuzz_util.h).
 */
#include "fuzz_util.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *fz_mkdtemp(const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    char *path = NULL;
    if (asprintf(&path, "%s/dirigent-fz-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag) < 0 ||
        !mkdtemp(path)) {
        fprintf(stderr, "fuzz: cannot make a temp folder: %s\n", strerror(errno));
        abort();
    }
    return path;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void fz_rmtree(const char *path)
{
    if (path)
        nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int fz_write(const char *dir, const char *name, const void *data, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = size ? fwrite(data, 1, size, f) : 0;
    return (fclose(f) == 0 && w == size) ? 0 : -1;
}

size_t fz_split(const uint8_t *data, size_t size, char **out, size_t max)
{
    size_t n = 0, start = 0;
    for (size_t i = 0; i < max; i++)
        out[i] = NULL;
    for (size_t i = 0; i <= size && n < max; i++) {
        if (i == size || data[i] == '\0') {
            out[n++] = strndup((const char *)data + start, i - start);
            start = i + 1;
        }
    }
    return n;
}

void fz_free_parts(char **parts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(parts[i]);
        parts[i] = NULL;
    }
}
