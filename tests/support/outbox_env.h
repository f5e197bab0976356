/*
 * outbox_env.h -- a hand-built dg_plugin for the outbox suites and the
 * outbox benchmark: a store file, a Discord client pointed at a fake, and a
 * test host-call table whose log keeps every line (to look for the token).
 */
#ifndef DG_OUTBOX_ENV_H
#define DG_OUTBOX_ENV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "dirigent.h"
#include "chat.h"
#include "store_outbox.h" /* dg_outbox_state */

#define OBE_TOKEN "mod-Tok3n.SECRET-value"                     /* the moderator's token in tests */
#define OBE_MOD_ID "900000000000000001"                        /* its user id */
#define OBE_SLACK_TOKEN "xoxb-9999-8888-OutboxModeratorSecret" /* the same on Slack */
#define OBE_SLACK_MOD_ID "UOBXMOD1"

typedef struct obe {
    dg_plugin p; /* store + chat client; its host table logs only (other calls NULL);
                    outbox left to the test */
    pthread_mutex_t log_mu;
    char *log; /* every line: "<level> <text>\n"; owned */
    size_t log_len;
} obe;

/*
 * Build e: open (or create) the store at db_path and a client for base_url
 * with OBE_TOKEN. tune (may be NULL) supplies timeouts, attempts and
 * back-off; its api_base/token/log fields are ignored. The client logs raw
 * lines (before dg_log's scrubbing) into the same capture, prefixed
 * "client:". Returns 0, or -1 with a reason in err.
 */
int obe_open(obe *e, const char *base_url, const char *db_path, const dg_chat_options *tune,
             char *err, size_t err_len);

/* The same for tune->platform (DG_PLATFORM_SLACK: OBE_SLACK_TOKEN and no
 * pacing ahead of Slack's limits, as against a fake; tune NULL: Discord). */
int obe_open_on(obe *e, const char *base_url, const char *db_path, const dg_chat_options *tune,
                char *err, size_t err_len);

/* Stop e->p.outbox if set, free client, store and config strings. */
void obe_close(obe *e);

/* Snapshot of the log: malloc'd, caller frees (never NULL unless OOM). */
char *obe_log_text(obe *e);

/* 1 when some log line contains needle. */
int obe_log_has(obe *e, const char *needle);

/* How many rows of e's store are in state, in a transaction of its own;
 * -1 when the store fails. */
int64_t obe_count(obe *e, dg_outbox_state state);

/* The reason of the one row of chan when it failed for good: malloc'd,
 * caller frees; NULL when chan holds another number of rows, or its row is
 * not failed. */
char *obe_failed_reason(obe *e, const char *chan);

/* A crash test's child learns the fake's URL and its channel from its
 * parent on fd, as "URL\nCHANNEL\n" (the parent forks before any thread
 * exists, then starts the fake). 0, or -1 when the pipe ends first. */
int obe_child_args(int fd, char *url, size_t url_len, char *chan, size_t chan_len);

/* Monotonic milliseconds (same clock as the fake's "tMs"). */
long long obe_mono_ms(void);

#endif
