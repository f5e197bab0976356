/*
 * fake_slack_int.h -- the fake Slack's private header: its model and what
 * its three files share: fake_slack.c (HTTP, recording, faults, control
 * endpoints, start/stop), fake_slack_state.c (the model's plumbing, the
 * listeners, the public functions on the model) and fake_slack_api.c (the
 * built-in Web API methods). Only these files include it. Functions marked "fs->mu
 * held" run under the fake's lock, on the thread of the request.
 */
#ifndef DG_FAKE_SLACK_INT_H
#define DG_FAKE_SLACK_INT_H

#include <pthread.h>
#include <stdint.h>

#include "fake_slack.h"

#define FS_MAX_METHODS 32
#define FS_MAX_LISTENERS 8

typedef struct fs_user {
    char id[24];
    char *name;
    char *token; /* NULL: a human without API access */
    int bot;
    char bot_id[24];
    char app_id[24];
    char *scopes; /* ",a,b," (commas around every scope), NULL: every scope */
} fs_user;

typedef struct fs_app_token {
    char *token;
    char app_id[24];
} fs_app_token;

typedef struct fs_msg {
    char ts[24];
    char thread_ts[24]; /* "" at top level */
    json_t *obj;        /* as conversations.history shows it, metadata included */
} fs_msg;

typedef struct fs_chan {
    char id[16];
    char *name;
    int is_private;
    int archived;
    char creator[24];
    long long created; /* unix seconds */
    json_t *members;   /* array of user id strings */
    fs_msg *msgs;      /* ts order */
    size_t n, cap;
} fs_chan;

typedef struct fs_fault {
    char method[64];
    int kind;
    int count;
    int retry_after;
    long delay_ms;
    char error[64];
} fs_fault;

typedef struct fs_method {
    char name[64];
    fake_slack_method_fn fn;
    void *ud;
} fs_method;

typedef struct fs_listener {
    fake_slack_event_fn fn;
    void *ud;
} fs_listener;

struct fake_slack {
    struct MHD_Daemon *mhd;
    int port;
    char url[64];
    char team[24];
    char team_name[64];
    long latency_us;

    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC; broadcast on every change */
    int stopping;

    fs_user *users;
    size_t n_users, cap_users;
    fs_app_token *app_tokens;
    size_t n_app_tokens, cap_app_tokens;
    fs_chan **chans;
    size_t n_chans, cap_chans;
    fs_fault *faults;
    size_t n_faults, cap_faults;
    fs_method methods[FS_MAX_METHODS];
    size_t n_methods;
    fs_listener listeners[FS_MAX_LISTENERS];
    size_t n_listeners;

    json_t *requests; /* recorded Web API requests */
    long seq;
    long long last_ts_us; /* the newest message ts, microseconds */
    unsigned long next_chan;

    json_t *events; /* queued events not delivered yet (objects) */
    int delivering; /* a thread is delivering events */
};

/* What a built-in method answers: body (owned) or HTTP 500 when NULL. */
typedef struct fs_answer {
    json_t *body;
} fs_answer;

/* ---- fake_slack.c ---------------------------------------------------------- */

/* CLOCK_MONOTONIC in ms. Any thread. */
long long fsi_mono_ms(void);

/* Member k of object o as a string, or NULL. */
const char *fsi_jstr(const json_t *o, const char *k);

/* The added handler of method, or NULL (fs->mu held). */
const fs_method *fsi_added_method(fake_slack *fs, const char *method);

/* ---- fake_slack_state.c (fs->mu held unless said) ---------------------------- */

/* Free what a user record holds. */
void fsi_user_free(fs_user *u);

/* Deliver queued events to the listeners, in order, on this thread
 * (fake_slack_on_message). fs->mu NOT held. */
void fsi_deliver(fake_slack *fs);

fs_user *fsi_user_by_id(fake_slack *fs, const char *id);
/* The user whose token it is, or NULL (NULL token too). */
fs_user *fsi_user_by_token(fake_slack *fs, const char *token);
/* The app of an app-level token, or NULL. */
const char *fsi_app_of_token(fake_slack *fs, const char *token);
fs_chan *fsi_chan_by_id(fake_slack *fs, const char *id);
fs_chan *fsi_chan_by_name(fake_slack *fs, const char *name);

/* A new channel (id NULL: the next "C..." id); NULL out of memory. */
fs_chan *fsi_chan_add(fake_slack *fs, const char *id, const char *name, int is_private,
                      const char *creator);

/* Is user a member of ch. */
int fsi_is_member(const fs_chan *ch, const char *user);

/* Add user to ch's members (and queue member_joined_channel). 0 or -1. */
int fsi_join(fake_slack *fs, fs_chan *ch, const char *user);

/* Store a message (obj taken: "ts" and "channel"-less Slack fields set by
 * the caller except ts, which is made here and written to ts_out). Queues
 * the "message" event. NULL out of memory. */
fs_msg *fsi_msg_add(fake_slack *fs, fs_chan *ch, json_t *obj, const char *thread_ts);

/* The channel object of conversations.info (NEW reference). */
json_t *fsi_chan_json(fake_slack *fs, const fs_chan *ch, int with_members);

/* Slack's channel name rule: NULL when name is fine, else the error code
 * conversations.create gives ("invalid_name_required", ...). */
const char *fsi_name_error(const char *name);

/* {"ok":false,"error":code} (NEW reference). */
json_t *fsi_err(const char *code);

/* An argument as text: a JSON string as is, a number or boolean written
 * out into buf; NULL when absent or of another type. */
const char *fsi_arg(const json_t *args, const char *key, char *buf, size_t buf_len);

/* An argument as a boolean: true, "true", "1", 1. */
int fsi_arg_bool(const json_t *args, const char *key);

/* ---- fake_slack_api.c ------------------------------------------------------- */

/*
 * Run built-in method for caller (a bot user, resolved from the token).
 * Returns 1 and fills a->body when the method is built in, else 0.
 * fs->mu held.
 */
int fsa_call(fake_slack *fs, const char *method, fs_user *caller, const json_t *args, fs_answer *a);

#endif
