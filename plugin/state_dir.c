/*
 * state_dir.c -- see state_dir.h.
 */
#include "state_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.h"
#include "openclaw/plugin.h"
#include "status.h"

char *dg_state_dir_join(const char *base, const char *path)
{
    if (path[0] == '/' || !base)
        return strdup(path);
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/')
        bl--;
    char *out = NULL;
    if (!*path || !strcmp(path, "."))
        return strndup(base, bl);
    if (asprintf(&out, "%.*s/%s", (int)bl, base, path) < 0)
        return NULL;
    return out;
}

int dg_state_dir_base(char **out, const char **from, char *err, size_t err_len)
{
    *out = NULL;
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        return dg_fail(err, err_len, DG_ERR_IO,
                       "config: cannot read the working directory (%s), which relative paths are "
                       "taken from; give dbPath and templatesDir as absolute paths",
                       strerror(errno));
    const char *cfg = getenv("OPENCLAW_CONFIG_PATH");
    const char *state = getenv("DIRIGENT_STATE_DIR");
    if (cfg && *cfg) {
        const char *slash = strrchr(cfg, '/');
        char *dir = !slash         ? strdup(".")
                    : slash == cfg ? strdup("/")
                                   : strndup(cfg, (size_t)(slash - cfg));
        if (!dir)
            return DG_ERR_NOMEM;
        *out = dg_state_dir_join(cwd, dir);
        free(dir);
        *from = "the folder of the host's config file (OPENCLAW_CONFIG_PATH)";
    } else if (state && *state) {
        *out = dg_state_dir_join(cwd, state);
        *from = "DIRIGENT_STATE_DIR";
    } else {
        *out = strdup(cwd);
        *from = "the working directory";
    }
    return *out ? DG_OK : DG_ERR_NOMEM;
}

int dg_state_dir_prepare_db(const char *db_path, char **created, char *err, size_t err_len)
{
    *created = NULL;
    struct stat sb;
    if (stat(db_path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"dbPath\" %s is a folder; give the database file's path, e.g. "
                       "%s/dirigent.db",
                       db_path, db_path);
    char *dir = strdup(db_path);
    if (!dir)
        return DG_ERR_NOMEM;
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) {
        free(dir);
        return DG_OK;
    }
    *slash = '\0';
    if (stat(dir, &sb) == 0) {
        free(dir);
        return DG_OK; /* not a folder: the store's open says so */
    }
    /* Create the missing levels top-down: find the first missing one. */
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char keep = *p;
        *p = '\0';
        int rc = 0;
        if (stat(dir, &sb) != 0) {
            if (mkdir(dir, 0700) != 0 && errno != EEXIST)
                rc = -1;
            else if (!*created && !(*created = strdup(dir))) {
                rmdir(dir); /* the first level made: no copy names it for the undo */
                rc = -2;
            }
        }
        if (rc) {
            int e = errno;
            int st = rc == -2 ? DG_ERR_NOMEM
                              : dg_fail(err, err_len, DG_ERR_IO,
                                        "config: \"dbPath\" %s: cannot create the folder %s: %s; "
                                        "create it yourself or choose another dbPath",
                                        db_path, dir, strerror(e));
            *p = keep;
            dg_state_dir_undo_db(db_path, *created);
            free(*created);
            *created = NULL;
            free(dir);
            return st;
        }
        *p = keep;
        if (!keep)
            break;
    }
    free(dir);
    return DG_OK;
}

void dg_state_dir_undo_db(const char *db_path, const char *created)
{
    if (!created)
        return;
    char *dir = strdup(db_path);
    if (!dir)
        return;
    size_t cl = strlen(created);
    for (char *slash; (slash = strrchr(dir, '/')) && slash != dir;) {
        *slash = '\0';
        /* A level that is not there (ENOENT, ENAMETOOLONG) is the one whose
         * mkdir failed: go on up to the levels that were made. A level
         * that is not empty (something was put into it since) stops here. */
        if (strlen(dir) < cl || (rmdir(dir) != 0 && (errno == ENOTEMPTY || errno == EEXIST)))
            break;
    }
    free(dir);
}
