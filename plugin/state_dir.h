/*
 * state_dir.h -- where the plugin's files live: relative `dbPath` and
 * `templatesDir` made absolute against one documented base, and the
 * database's folder made ready before the store opens it.
 *
 * Base of relative paths, first that applies:
 *   1. the folder of the host's config file, when the host says where that is
 *      in env OPENCLAW_CONFIG_PATH (OpenClaw's own variable; ocgw sets it);
 *   2. env DIRIGENT_STATE_DIR;
 *   3. the working directory.
 */
#ifndef DG_STATE_DIR_H
#define DG_STATE_DIR_H

#include <stddef.h>
#include "must_check.h"

/*
 * The base for relative paths (see above): *out is a malloc'd absolute
 * folder the caller frees, *from a static phrase naming where it came from
 * ("the folder of OPENCLAW_CONFIG_PATH", ...). Returns DG_OK or a negative
 * dg_status with err. Thread: init only (reads the environment and cwd).
 */
int dg_state_dir_base(char **out, const char **from, char *err, size_t err_len) DG_MUST_CHECK;

/* path when absolute, else base/path (a leading "./" dropped): malloc'd,
 * the caller frees; NULL when out of memory. */
char *dg_state_dir_join(const char *base, const char *path) DG_MUST_CHECK;

/*
 * Make db_path's folder ready: db_path itself must not be a folder (refused
 * naming it); its missing parent folders are created, mode 0700 (only the
 * missing last levels). *created receives the topmost folder created
 * (malloc'd, the caller frees; NULL when none was needed), so a later
 * failure can take them back with dg_state_dir_undo_db. Returns DG_OK,
 * DG_ERR_INVALID or DG_ERR_IO with a sentence naming the folder and errno's
 * text, DG_ERR_NOMEM. Thread: init only.
 */
int dg_state_dir_prepare_db(const char *db_path, char **created, char *err,
                            size_t err_len) DG_MUST_CHECK;

/* Remove the empty folders dg_state_dir_prepare_db created for db_path, from its
 * parent up to `created` (best effort; NULL does nothing). */
void dg_state_dir_undo_db(const char *db_path, const char *created);

#endif
