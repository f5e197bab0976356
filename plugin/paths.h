/*
 * paths.h -- safe resolution and open of a file an agent names inside its
 * workspace (the discussion summary of discuss-callback).
 *
 * The path comes from a model and is untrusted; the workspace comes from the
 * host's tool context (trusted). Rules:
 *   - relative paths are taken from the workspace; an absolute path must lie
 *     inside the workspace (as given, or as realpath() resolves it) and is
 *     reduced to the relative form;
 *   - `.` and empty components are dropped, `..` is resolved lexically and
 *     may not climb above the workspace;
 *   - NO symbolic link is followed below the workspace, not even one that
 *     points inside it (decision: the stored relative path then names the
 *     real file, and there is no resolve/recheck race to get wrong). The
 *     workspace path itself may contain symlinks (the host chose it);
 *   - the walk is done with openat(O_NOFOLLOW|O_DIRECTORY) component by
 *     component from an O_DIRECTORY fd of the workspace; the leaf is
 *     checked with fstatat(AT_SYMLINK_NOFOLLOW) (so a FIFO or device is
 *     never opened), opened O_RDONLY|O_NOFOLLOW|O_NONBLOCK, and the opened
 *     inode must be the one checked, a regular file with one link (a hard
 *     link could alias a file outside), within the size limit, and
 *     actually readable to its end;
 *   - a path ending in '/' (or a last component '.') names a folder, as for
 *     the file system: a file there is refused (ENOTDIR, DG_ERR_INVALID).
 * Statuses: DG_ERR_NOT_FOUND when a component or the file does not exist;
 * DG_ERR_DENIED for anything that leaves the workspace (absolute elsewhere,
 * `..` escape, symlink, hard link) or cannot be read; DG_ERR_INVALID for an
 * empty path, a non-regular file, or an oversize file. Messages say what to
 * do next.
 */
#ifndef DG_PATHS_H
#define DG_PATHS_H

#include <stddef.h>
#include <stdint.h>
#include "must_check.h"

typedef struct dg_workspace_file {
    int fd;         /* open O_RDONLY at offset 0; the caller closes it */
    char *rel_path; /* normalised, relative to the workspace; caller frees */
    int64_t size;   /* bytes */
} dg_workspace_file;

/*
 * Resolve `path` inside `workspace` (absolute) and open it. max_bytes > 0 is
 * the largest size accepted. On DG_OK *out is filled (close fd, free
 * rel_path). Otherwise a negative dg_status, an actionable sentence in err,
 * and *out = {-1, NULL, 0}. Any thread; no global state.
 */
int dg_workspace_open(const char *workspace, const char *path, int64_t max_bytes,
                      dg_workspace_file *out, char *err, size_t err_len) DG_MUST_CHECK;

/* Close the fd and free rel_path of f; safe on a failed/zeroed result. */
void dg_workspace_file_close(dg_workspace_file *f);

/*
 * Lexical normalisation of a relative path: drop `.` and empty components,
 * resolve `..`. Returns a new string (caller frees) or NULL when `..`
 * climbs above the start, the path is absolute, or out of memory
 * (*escapes set to 1 for the `..` case). "" for a path that is only dots.
 */
char *dg_path_normalise(const char *rel, int *escapes) DG_MUST_CHECK;

#endif
