/*
 * paths.c -- resolve and open a file inside an agent's workspace without
 * following any symlink below it (rules and statuses: paths.h).
 */
#include "errors.h"
#include "paths.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "openclaw/plugin.h"
#include "status.h"

#define HINT                                                                                       \
    "write the summary as a regular file inside your workspace and pass its "                      \
    "path relative to the workspace, e.g. plans/discussions/topic.md"

char *dg_path_normalise(const char *rel, int *escapes)
{
    if (escapes)
        *escapes = 0;
    if (!rel || rel[0] == '/')
        return NULL;
    size_t n = strlen(rel);
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    const char *s = rel;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == 0 || (len == 1 && s[0] == '.')) {
            /* skip */
        } else if (len == 2 && s[0] == '.' && s[1] == '.') {
            if (o == 0) {
                free(out);
                if (escapes)
                    *escapes = 1;
                return NULL;
            }
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--; /* the separator before the popped component */
        } else {
            if (o > 0)
                out[o++] = '/';
            memcpy(out + o, s, len);
            o += len;
        }
        s += len;
        if (*s == '/')
            s++;
    }
    out[o] = '\0';
    return out;
}

/* Absolute path a relative to directory prefix d (both normalised, no
 * trailing slash, d may be "" for "/"): the remainder, or NULL if outside. */
static const char *strip_prefix(const char *a, const char *d)
{
    size_t dl = strlen(d);
    if (strncmp(a, d, dl) != 0)
        return NULL;
    if (a[dl] == '/')
        return a + dl + 1;
    if (a[dl] == '\0')
        return a + dl; /* the folder itself: "" */
    return NULL;
}

/* Normalised form of an absolute path without its leading '/'. */
static char *norm_abs(const char *abs)
{
    while (*abs == '/')
        abs++;
    int esc = 0;
    char *r = dg_path_normalise(abs, &esc);
    if (!r && esc)
        r = strdup(""); /* "/.." is "/" */
    return r;
}

/* Relative form of an absolute path inside workspace ws; NULL with *outside
 * set when it lies elsewhere (or *outside 0 on out of memory). */
static char *abs_to_rel(const char *ws, const char *path, int *outside)
{
    *outside = 0;
    char *p = norm_abs(path), *w = norm_abs(ws), *r = NULL;
    if (!p || !w)
        goto out;
    const char *rest = strip_prefix(p, w);
    if (!rest) {
        char real[PATH_MAX];
        if (realpath(ws, real)) {
            char *wr = norm_abs(real);
            if (!wr)
                goto out;
            rest = strip_prefix(p, wr);
            if (rest)
                r = strdup(rest);
            free(wr);
            if (rest)
                goto out;
        }
        *outside = 1;
        goto out;
    }
    r = strdup(rest);
out:
    free(p);
    free(w);
    return r;
}

/* Explain why openat() of an intermediate folder failed. */
static int dir_failure(int dirfd, const char *comp, int open_errno, const char *path, char *err,
                       size_t err_len)
{
    struct stat st;
    if (fstatat(dirfd, comp, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            return dg_fail(err, err_len, DG_ERR_NOT_FOUND,
                           "summaryPath %.120s: folder '%s' does not exist in your workspace; "
                           "write the summary file first, then call discuss-callback again",
                           path, comp);
        if (errno == EACCES)
            return dg_fail(err, err_len, DG_ERR_DENIED,
                           "summaryPath %.120s: folder '%s' is not accessible to the plugin; " HINT,
                           path, comp);
        if (errno == ENAMETOOLONG)
            return dg_fail(err, err_len, DG_ERR_INVALID,
                           "summaryPath %.120s: folder name '%.40s...' is too long for the file "
                           "system; " HINT,
                           path, comp);
        return dg_fail(err, err_len, DG_ERR_IO,
                       "summaryPath %.120s: cannot inspect folder '%s': %s", path, comp,
                       strerror(errno));
    }
    if (S_ISLNK(st.st_mode))
        return dg_fail(err, err_len, DG_ERR_DENIED,
                       "summaryPath %.120s: folder '%s' is a symbolic link; symlinks are never "
                       "followed (they could lead outside the workspace); " HINT,
                       path, comp);
    if (!S_ISDIR(st.st_mode))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "summaryPath %.120s: '%s' is a file, not a folder; " HINT, path, comp);
    if (open_errno == EACCES)
        return dg_fail(err, err_len, DG_ERR_DENIED,
                       "summaryPath %.120s: folder '%s' is not readable by the plugin; make it "
                       "readable or " HINT,
                       path, comp);
    return dg_fail(err, err_len, DG_ERR_IO, "summaryPath %.120s: cannot open folder '%s': %s", path,
                   comp, strerror(open_errno));
}

void dg_workspace_file_close(dg_workspace_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    free(f->rel_path);
    f->fd = -1;
    f->rel_path = NULL;
    f->size = 0;
}

/* Checks of a leaf's stat shared by the pre-open and post-open checks. */
static int check_leaf_stat(const struct stat *st, const char *path, int64_t max_bytes, char *err,
                           size_t err_len)
{
    if (S_ISLNK(st->st_mode))
        return dg_fail(err, err_len, DG_ERR_DENIED,
                       "summaryPath %.120s is a symbolic link; symlinks are never followed (they "
                       "could lead outside the workspace); " HINT,
                       path);
    if (S_ISDIR(st->st_mode))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "summaryPath %.120s is a folder, not a file; " HINT, path);
    if (!S_ISREG(st->st_mode))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "summaryPath %.120s is not a regular file (a FIFO, socket or device); " HINT,
                       path);
    if (st->st_nlink > 1)
        return dg_fail(err, err_len, DG_ERR_DENIED,
                       "summaryPath %.120s has %lu hard links (one could alias a file outside the "
                       "workspace); write the summary into a fresh file and pass that path",
                       path, (unsigned long)st->st_nlink);
    if ((int64_t)st->st_size > max_bytes)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "summaryPath %.120s is %lld bytes, over discussion.maxSummaryBytes (%lld); "
                       "shorten the summary and call discuss-callback again",
                       path, (long long)st->st_size, (long long)max_bytes);
    return DG_OK;
}

/* Read fd to its end (at most max_bytes + 1 bytes) to prove it is readable
 * and within the limit even if it grew since fstat; rewind. */
static int read_through(int fd, const char *path, int64_t max_bytes, int64_t *size, char *err,
                        size_t err_len)
{
    char buf[8192];
    int64_t total = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return dg_fail(err, err_len, DG_ERR_DENIED,
                           "summaryPath %.120s cannot be read: %s; make it readable and call "
                           "discuss-callback again",
                           path, strerror(errno));
        if (r == 0)
            break;
        total += r;
        if (total > max_bytes)
            return dg_fail(err, err_len, DG_ERR_INVALID,
                           "summaryPath %.120s is over discussion.maxSummaryBytes (%lld bytes); "
                           "shorten the summary and call discuss-callback again",
                           path, (long long)max_bytes);
    }
    if (lseek(fd, 0, SEEK_SET) != 0)
        return dg_fail(err, err_len, DG_ERR_IO, "summaryPath %.120s: cannot rewind: %s", path,
                       strerror(errno));
    *size = total;
    return DG_OK;
}

/* path as a normalised path relative to workspace, into *rel (the
 * caller's to free): DG_OK, or a refusal naming what is wrong. */
static int ws_relative(const char *workspace, const char *path, char **rel, char *err,
                       size_t err_len)
{
    *rel = NULL;
    if (!path || !*path)
        return dg_fail(err, err_len, DG_ERR_INVALID, "summaryPath is empty; " HINT);
    if (strlen(path) >= PATH_MAX)
        return dg_fail(err, err_len, DG_ERR_INVALID, "summaryPath is longer than %d bytes; " HINT,
                       PATH_MAX - 1);
    if (!workspace || workspace[0] != '/')
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "the initiator's workspace is not an absolute folder ('%s'); the host "
                       "must give workspaceDir in the tool context",
                       workspace ? workspace : "");
    char *r;
    if (path[0] == '/') {
        int outside = 0;
        r = abs_to_rel(workspace, path, &outside);
        if (!r)
            return outside ? dg_fail(err, err_len, DG_ERR_DENIED,
                                     "summaryPath %.120s is outside your workspace %s; " HINT, path,
                                     workspace)
                           : dg_fail(err, err_len, DG_ERR_NOMEM, "out of memory");
    } else {
        int escapes = 0;
        r = dg_path_normalise(path, &escapes);
        if (!r)
            return escapes
                       ? dg_fail(err, err_len, DG_ERR_DENIED,
                                 "summaryPath %.120s climbs out of your workspace with '..'; " HINT,
                                 path)
                       : dg_fail(err, err_len, DG_ERR_NOMEM, "out of memory");
    }
    if (!*r) {
        free(r);
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "summaryPath %.120s names the workspace folder itself, not a file; " HINT,
                       path);
    }
    *rel = r;
    return DG_OK;
}

/* Walk the folders of rel from *dirfd one by one, never following a
 * symlink: *dirfd ends as the leaf's folder (the one given is closed when
 * replaced), *leaf at the leaf's name in rel. */
static int ws_walk_folders(int *dirfd, char *rel, char **leaf, const char *path, char *err,
                           size_t err_len)
{
    char *comp = rel;
    char *slash;
    while ((slash = strchr(comp, '/')) != NULL) {
        *slash = '\0';
        int next = openat(*dirfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            int rc = dir_failure(*dirfd, comp, errno, path, err, err_len);
            *slash = '/';
            return rc;
        }
        close(*dirfd);
        *dirfd = next;
        *slash = '/';
        comp = slash + 1;
    }
    *leaf = comp;
    return DG_OK;
}

/* The refusal for a leaf that fstatat could not look at (errno e). */
static int leaf_stat_failure(int e, const char *workspace, const char *path, const char *leaf,
                             char *err, size_t err_len)
{
    if (e == ENOENT)
        return dg_fail(err, err_len, DG_ERR_NOT_FOUND,
                       "summaryPath %.120s does not exist in your workspace %s; write the "
                       "summary file first, then call discuss-callback again",
                       path, workspace);
    if (e == EACCES)
        return dg_fail(err, err_len, DG_ERR_DENIED,
                       "summaryPath %.120s is not accessible to the plugin; " HINT, path);
    if (e == ENAMETOOLONG)
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "summaryPath %.120s: the file name '%.40s...' is too long for the file "
                       "system; " HINT,
                       path, leaf);
    return dg_fail(err, err_len, DG_ERR_IO, "summaryPath %.120s: %s", path, strerror(e));
}

/* The refusal for a checked leaf that openat could not open (errno e). */
static int leaf_open_failure(int e, const char *path, char *err, size_t err_len)
{
    if (e == ENOENT)
        return dg_fail(err, err_len, DG_ERR_NOT_FOUND,
                       "summaryPath %.120s disappeared while being checked; write it again, then "
                       "call discuss-callback again",
                       path);
    if (e == ELOOP)
        return dg_fail(err, err_len, DG_ERR_DENIED,
                       "summaryPath %.120s became a symbolic link while being checked; " HINT,
                       path);
    if (e == EACCES || e == EPERM)
        return dg_fail(err, err_len, DG_ERR_DENIED,
                       "summaryPath %.120s is not readable by the plugin; make it readable "
                       "(e.g. chmod a+r) and call discuss-callback again",
                       path);
    return dg_fail(err, err_len, DG_ERR_IO, "summaryPath %.120s cannot be opened: %s", path,
                   strerror(e));
}

/* Check what the leaf is before opening it, without following a link:
 * *before gets its stat. */
static int check_leaf_before(int dirfd, const char *leaf, const char *workspace, const char *path,
                             int64_t max_bytes, struct stat *before, char *err, size_t err_len)
{
    if (fstatat(dirfd, leaf, before, AT_SYMLINK_NOFOLLOW) != 0)
        return leaf_stat_failure(errno, workspace, path, leaf, err, err_len);
    /* A trailing '/' (or a last component '.') asks for a folder: the file
     * system answers ENOTDIR for a file there, and so do we (it was dropped
     * with the empty component and the file opened). */
    size_t plen = strlen(path);
    int want_dir =
        path[plen - 1] == '/' || (path[plen - 1] == '.' && (plen == 1 || path[plen - 2] == '/'));
    if (want_dir && !S_ISDIR(before->st_mode) && !S_ISLNK(before->st_mode))
        return dg_fail(
            err, err_len, DG_ERR_INVALID,
            "summaryPath %.120s ends with '/' (or '/.'), which names a folder, but '%s' is not a "
            "folder (ENOTDIR); " HINT,
            path, leaf);
    return check_leaf_stat(before, path, max_bytes, err, err_len);
}

/* The leaf: check what it is before opening (a FIFO or device is never
 * opened), open without following, then make sure it is the same inode
 * and read it through. *fd_out and *size on DG_OK. */
static int open_leaf(int dirfd, const char *leaf, const char *workspace, const char *path,
                     int64_t max_bytes, int *fd_out, int64_t *size, char *err, size_t err_len)
{
    struct stat before, after;
    int rc = check_leaf_before(dirfd, leaf, workspace, path, max_bytes, &before, err, err_len);
    if (rc != DG_OK)
        return rc;
    int fd = openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return leaf_open_failure(errno, path, err, err_len);
    if (fstat(fd, &after) != 0)
        rc = dg_fail(err, err_len, DG_ERR_IO, "summaryPath %.120s: %s", path, strerror(errno));
    else if (after.st_dev != before.st_dev || after.st_ino != before.st_ino)
        rc = dg_fail(err, err_len, DG_ERR_DENIED,
                     "summaryPath %.120s was replaced while being checked; leave the file alone "
                     "and call discuss-callback again",
                     path);
    else if ((rc = check_leaf_stat(&after, path, max_bytes, err, err_len)) == DG_OK)
        rc = read_through(fd, path, max_bytes, size, err, err_len);
    if (rc != DG_OK) {
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return DG_OK;
}

int dg_workspace_open(const char *workspace, const char *path, int64_t max_bytes,
                      dg_workspace_file *out, char *err, size_t err_len)
{
    out->fd = -1;
    out->rel_path = NULL;
    out->size = 0;
    char *rel;
    int rc = ws_relative(workspace, path, &rel, err, err_len);
    if (rc != DG_OK)
        return rc;
    int dirfd = open(workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        rc = dg_fail(err, err_len, errno == ENOENT ? DG_ERR_NOT_FOUND : DG_ERR_IO,
                     "the initiator's workspace %s cannot be opened: %s", workspace,
                     strerror(errno));
        free(rel);
        return rc;
    }
    char *leaf = NULL;
    int64_t size = 0;
    if ((rc = ws_walk_folders(&dirfd, rel, &leaf, path, err, err_len)) == DG_OK &&
        (rc = open_leaf(dirfd, leaf, workspace, path, max_bytes, &out->fd, &size, err, err_len)) ==
            DG_OK) {
        out->size = size;
        out->rel_path = rel;
        rel = NULL;
    }
    close(dirfd);
    free(rel);
    return rc;
}
