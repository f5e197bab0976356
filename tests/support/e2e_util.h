/*
 * e2e_util.h -- helpers of the end-to-end suite (tests/check_e2e.c): the
 * fake Discord and the reference gateway as subprocesses from DG_BUILD_DIR,
 * on 127.0.0.1, with the demo's users, tokens and plugin folder.
 *
 * Every wait is bounded; a helper that cannot do its job aborts the test
 * (ck_abort) after killing what it started.
 */
#ifndef E2E_UTIL_H
#define E2E_UTIL_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>

/* Ids of the demo (demo/host.json). */
#define E2E_GUILD "100000000000000001"
#define E2E_WORK "300000000000000001"
#define E2E_ARCHIVE "300000000000000002" /* discussion.archiveChannelId of demo/host.json */
#define E2E_MOD "200000000000000001"
#define E2E_PLANNER "200000000000000011"
#define E2E_REVIEWER "200000000000000012"
#define E2E_CODER "200000000000000013"
#define E2E_ALICE "200000000000000021"

typedef struct e2e_run {
    char *dir; /* run folder (temp), removed by e2e_stop */
    pid_t fake_pid;
    char url[128];          /* http://127.0.0.1:PORT/api/v10 */
    char base[128];         /* http://127.0.0.1:PORT */
    pid_t gw_pid;           /* the running ocgw, 0 when none */
    int gw_starts;          /* ocgw processes started (log files ocgw-<n>.out/.err) */
    const char *cwd;        /* working directory of the next ocgw (NULL: the runner's) */
    const char *const *env; /* NULL-terminated "NAME=value" set for the next ocgw after
                             * the demo's (another OCGW_STATE, a store url); NULL: none */
} e2e_run;

/* The monotonic clock in milliseconds: for the deadlines of bounded waits
 * (never to time what is tested). */
long e2e_now_ms(void);

/* Sleep ms milliseconds (a poll's pause between two looks). */
void e2e_nap(long ms);

/* Start build/fake-discord with the extra arguments (NULL-terminated array
 * or NULL), register the demo's users, and make the run folder with the
 * plugin folder plugins/dirigent (manifest.json + dirigent.so). */
void e2e_start(e2e_run *r, const char *const *fake_args);

/* Kill the gateway (if running) and the fake, remove the run folder unless
 * env E2E_KEEP is set (then its path is printed). */
void e2e_stop(e2e_run *r);

/* Start build/ocgw --config <config> <args...> with the demo's environment
 * (OCGW_API_BASE, OCGW_STATE, OCGW_WORK, OCGW_PLUGINS, the tokens) and, if
 * die_at is not NULL, OCGW_DIE_AT. stdout/stderr go to
 * <dir>/ocgw-<n>.out/.err. Returns the pid (also in r->gw_pid). */
pid_t e2e_ocgw_start(e2e_run *r, const char *config, const char *const *args, const char *die_at);

/* Wait up to timeout_ms for the gateway to end. Returns 1 with *status (a
 * waitpid status) when it ended, 0 on timeout (still running). */
int e2e_ocgw_wait(e2e_run *r, long timeout_ms, int *status);

/* Send sig to the gateway and reap it (bounded); returns the waitpid status. */
int e2e_ocgw_kill(e2e_run *r, int sig);

/* GET base+path (a control endpoint); a new JSON reference or NULL. */
json_t *e2e_get(e2e_run *r, const char *path);

/* POST body (JSON text) to base+path; 0 on a 2xx answer. */
int e2e_post(e2e_run *r, const char *path, const char *body);

/* The text of <dir>/<name> (malloc'd) or NULL. */
char *e2e_read(e2e_run *r, const char *name);

/* Number of messages the fake holds (all channels), -1 when unreachable. */
long e2e_message_count(e2e_run *r);

/* One message a channel's history must hold: its author's user id and a
 * text its content contains (NULL: any content). */
typedef struct e2e_want {
    const char *author;
    const char *marker;
} e2e_want;

/* The fake's messages of channel, in order, are exactly n, the i-th by
 * w[i].author and containing w[i].marker; otherwise the test fails
 * (ck_assert_msg) naming the channel, the message's place, what was found
 * and what was expected. */
void e2e_check_channel(e2e_run *r, const char *channel, const e2e_want *w, size_t n);

#endif
