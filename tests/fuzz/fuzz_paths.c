/*
 * fuzz_paths.c -- libFuzzer target: the summary-path resolver
 * (plugin/paths.c).
 *
 * Input: the path as text (a first byte 'A' makes it absolute under the
 * workspace). A private workspace is made per input: files, a folder, an
 * empty file, a FIFO, symlinks inside, out and in a loop, and a file
 * beside the workspace. Checked: dg_path_normalise never yields "..", "."
 * or empty components and is idempotent; dg_workspace_open either refuses with a
 * reason or returns a regular file inside the workspace (the fd's real
 * path is under the workspace's), within the size limit.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "openclaw/plugin.h"
#include "paths.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BYTES 64

static void fail(const char *what, const char *path)
{
    fprintf(stderr, "fuzz_paths: %s: \"%s\"\n", what, path);
    abort();
}

/* 1 when a relative path has an empty, "." or ".." component or is absolute. */
static int bad_components(const char *p)
{
    if (p[0] == '/')
        return 1;
    if (!p[0])
        return 0;
    for (const char *s = p;;) {
        size_t len = strcspn(s, "/");
        if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
            return 1;
        if (!s[len])
            return 0;
        s += len + 1;
    }
}

static void check_normal(const char *path)
{
    int escapes = 0;
    char *n = dg_path_normalise(path, &escapes);
    if (!n)
        return;
    if (bad_components(n))
        fail("normalised path keeps a dot, empty or parent component", n);
    char *again = dg_path_normalise(n, &escapes);
    if (!again || strcmp(again, n) != 0)
        fail("normalisation is not idempotent", n);
    free(again);
    free(n);
}

static void make_ws(const char *root, char *ws, size_t cap)
{
    snprintf(ws, cap, "%s/ws", root);
    char p[PATH_MAX];
    if (mkdir(ws, 0700))
        abort();
    snprintf(p, sizeof p, "%s/sub", ws);
    mkdir(p, 0700);
    fz_write(ws, "a.md", "summary\n", 8);
    fz_write(ws, "empty.md", "", 0);
    fz_write(ws, "sub/b.md", "nested\n", 7);
    fz_write(ws, "big.md", "0123456789012345678901234567890123456789012345678901234567890123456789",
             70);
    fz_write(root, "outside.md", "secret\n", 7);
    snprintf(p, sizeof p, "%s/fifo", ws);
    mkfifo(p, 0600);
    snprintf(p, sizeof p, "%s/out.md", ws);
    symlink("../outside.md", p);
    snprintf(p, sizeof p, "%s/in.md", ws);
    symlink("a.md", p);
    snprintf(p, sizeof p, "%s/loop", ws);
    symlink("loop", p);
    snprintf(p, sizeof p, "%s/subl", ws);
    symlink("sub", p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    char *text = strndup((const char *)data, size);
    if (!text)
        return 0;
    check_normal(text);
    char *root = fz_mkdtemp("paths");
    char ws[PATH_MAX];
    make_ws(root, ws, sizeof ws);
    char *path = text;
    char *abs = NULL;
    if (text[0] == 'A' && asprintf(&abs, "%s/%s", ws, text + 1) >= 0)
        path = abs;
    dg_workspace_file f;
    char err[512] = "";
    int rc = dg_workspace_open(ws, path, MAX_BYTES, &f, err, sizeof err);
    if (rc != OC_OK) {
        if (!err[0])
            fail("a refusal without a reason", path);
        if (f.fd != -1 || f.rel_path)
            fail("a refusal left an fd or a path", path);
    } else {
        struct stat st;
        char link[64], real[PATH_MAX], wsreal[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", f.fd);
        ssize_t l = readlink(link, real, sizeof real - 1);
        if (l < 0 || fstat(f.fd, &st) || !S_ISREG(st.st_mode) || !realpath(ws, wsreal))
            fail("the opened fd is not a regular file", path);
        real[l] = '\0';
        size_t wl = strlen(wsreal);
        if (strncmp(real, wsreal, wl) != 0 || real[wl] != '/')
            fail("the opened file is outside the workspace", real);
        if (f.size > MAX_BYTES || f.size != st.st_size)
            fail("size over the limit or not the file's", path);
        if (!f.rel_path || !f.rel_path[0] || bad_components(f.rel_path))
            fail("rel_path is not a plain relative path", f.rel_path ? f.rel_path : "(null)");
        dg_workspace_file_close(&f);
    }
    free(abs);
    fz_rmtree(root);
    free(root);
    free(text);
    return 0;
}
