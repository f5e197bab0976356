/*
 * host_test_util.h -- helpers for the host-core and ABI suites: a capturing
 * log sink and plugin folders built from the fixture plugins.
 */
#ifndef HOST_TEST_UTIL_H
#define HOST_TEST_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <jansson.h>
#include "ochost.h"

/*
 * A log capture usable as an och_log_fn (user = the capture). Lines are
 * stored as "<level> <source or host>: <message>\n". Thread-safe.
 */
typedef struct host_test_log {
    pthread_mutex_t mu;
    char *text; /* owned; NUL-terminated, "" when empty */
    size_t len;
} host_test_log;

void host_test_log_init(host_test_log *l);
void host_test_log_free(host_test_log *l);
void host_test_log_sink(void *user, int level, const char *source, const char *message);
/* Snapshot of the text so far: malloc'd, the caller frees. */
char *host_test_log_text(host_test_log *l);
/* True when some line contains every one of the NULL-terminated needles. */
int host_test_log_has(host_test_log *l, ...);
/* Messages (only the message part) of the lines from `source` that start
 * with `prefix`, joined by '|': malloc'd, the caller frees. Reads the
 * dispatch order the probe fixture logs. */
char *host_test_log_seq(host_test_log *l, const char *source, const char *prefix);

/* Path of fixture plugin <name> in the build dir: malloc'd, caller frees. */
char *host_test_fixture(const char *name);

/* Copy a file (mode 0755). 0 on success. */
int host_test_copy(const char *from, const char *to);

/*
 * Make the plugin folder <parent>/<folder>/ holding a copy of fixture
 * `fixture` named <lib> and a manifest.json with id, library=<lib>,
 * abi {abi_major, abi_minor}, entry, a configSchema, plus the members of
 * `extra` (borrowed, may be NULL; its keys replace the defaults, a JSON null
 * value removes the key). Returns the folder (malloc'd; caller frees).
 * Aborts the test on failure.
 */
char *host_test_plugin_dir(const char *parent, const char *folder, const char *fixture,
                           const char *lib, const char *id, int abi_major, int abi_minor,
                           const json_t *extra);

/* A host with the capture as its sink (debug level), configured with the
 * JSON text `config` (which must be valid); aborts the test otherwise. */
och_host *host_test_host(host_test_log *log, const char *config);

#endif
