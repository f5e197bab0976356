/*
 * ctl_doctor.h -- `dirigent-ctl doctor`: checks an OpenClaw config the way
 * the plugin will meet it, before the first start (ctl_doctor.c).
 */
#ifndef DG_CTL_DOCTOR_H
#define DG_CTL_DOCTOR_H

#include <stddef.h>

#include "config.h"
#include "must_check.h"

/*
 * Run the doctor with dirigent-ctl's argv; argv[cmd] is "doctor". Prints
 * one line per finding (ok / warn / error, what, the fix), or one JSON
 * object with --json. Returns the exit status: 0 without errors, 1 with
 * one or more, 2 for a usage error. Main thread.
 */
int dg_ctl_doctor_main(int argc, char **argv, int cmd);

/*
 * The plugin config a config file holds (FILE, or "-" for stdin:
 * plugins.entries.dirigent.config), resolved and parsed as the plugin does
 * (${VAR}s, environment overrides, relative paths from the config's
 * folder) into *cfg: release with dg_config_free (zeroed on failure).
 * OC_OK, or a negative oc_status with the reason in err. Main thread.
 */
int dg_ctl_config_load(const char *file, dg_config *cfg, char *err, size_t err_len) DG_MUST_CHECK;

/*
 * The store of the plugin a config file names (FILE, or "-" for stdin),
 * resolved as the plugin does (${VAR}s, env DIRIGENT_STORE_URL, relative
 * dbPath from the config's folder): *store is a new string (the SQLite
 * path or the postgresql:// url; caller frees). OC_OK, or a negative
 * oc_status with the reason in err. Main thread.
 */
int dg_ctl_config_store(const char *file, char **store, char *err, size_t err_len) DG_MUST_CHECK;

#endif
