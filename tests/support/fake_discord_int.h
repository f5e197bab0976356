/*
 * fake_discord_int.h -- the fake Discord's state and the functions its files
 * share (tests only; the suites use fake_discord.h):
 *
 *   fake_discord.c          start, stop, libmicrohttpd glue, the test API
 *   fake_discord_state.c    helpers, state lookups, channels and messages
 *   fake_discord_rest.c     replies, channels and messages endpoints
 *   fake_discord_routes.c   guild, users, threads, commands, the rest of the
 *                           REST surface, rate limits, faults, dispatch
 *   fake_discord_control.c  the /_test control endpoints
 *
 * Every function here runs with fd->mu held unless it says otherwise.
 */
#ifndef FAKE_DISCORD_INT_H
#define FAKE_DISCORD_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "fake_discord.h"
#include "fake_discord_gateway.h"
#include "http_server.h"
#include "snowflake.h"
#include "str_map.h"

#define DISCORD_EPOCH_MS 1420070400000ull
#define PERM_VIEW (1ull << 10)
#define PERM_SEND (1ull << 11)
#define PERM_HISTORY (1ull << 16)
/* What @everyone may do in the fake guild (no ADMINISTRATOR: overwrites
 * must matter): reactions, view, send, embed, attach, history, mention
 * everyone, external emoji, threads (create/send). */
#define PERM_EVERYONE                                                                              \
    ((1ull << 6) | PERM_VIEW | PERM_SEND | (1ull << 14) | (1ull << 15) | PERM_HISTORY |            \
     (1ull << 17) | (1ull << 18) | (1ull << 35) | (1ull << 38))
#define CHAN_PUBLIC_THREAD 11
/* Application flags: the privileged intents granted (presence, members,
 * message content); clients warn or ignore content without them. */
#define APP_FLAGS ((1 << 12) | (1 << 14) | (1 << 18))
#define MAX_BODY (1u << 20)

typedef struct fd_user {
    char *token; /* NULL: a human without API access */
    char id[24];
    char *username;
    int bot;
} fd_user;

typedef struct fd_msg {
    uint64_t id;
    char *author;
    char *nonce; /* NULL when none */
    json_t *obj;
} fd_msg;

typedef struct fd_chan {
    char id[24];
    json_t *obj;
    fd_msg *msgs; /* in id order */
    size_t n, cap;
    dg_map nonces; /* nonce -> id of the newest message carrying it (a
                             uint64_t in the pointer; the key is that message's) */
} fd_chan;

typedef struct fd_fault {
    char route[192];
    int kind;
    int count;
    double retry_after;
    long delay_ms;
} fd_fault;

typedef struct fd_bucket {
    char key[192];
    int64_t window_start;
    int used;
} fd_bucket;

struct fake_discord {
    struct MHD_Daemon *mhd;
    int port;
    char url[64];
    char guild[24];
    int no_perm;
    int lean;             /* see fake_discord_options.lean */
    size_t lean_requests; /* lean: Discord requests since the last clear */

    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC; broadcast on every change */
    int stopping;

    /* Response latency (fake_discord_options.latency_us): sleepers wait on
     * their own condition, broadcast only at stop, so the broadcasts of
     * fd->cond on every request do not wake them all each time. */
    long latency_us;
    pthread_mutex_t lat_mu;
    pthread_cond_t lat_cond; /* CLOCK_MONOTONIC */
    int lat_stop;            /* under lat_mu */

    fd_user *users;
    size_t n_users, cap_users;
    fd_chan **chans;
    size_t n_chans, cap_chans;
    dg_map chan_ix; /* id -> fd_chan: a post looks its channel up once,
                             however many channels a long bench made */
    fd_fault *faults;
    size_t n_faults, cap_faults;
    double fail_rate, fail_retry_after;
    uint64_t rng;
    int rl_limit;
    double rl_window;
    dg_map buckets; /* key -> fd_bucket (malloc'd, owns its key) */
    json_t *requests;
    long seq;
    uint64_t last_id;
    fd_gateway *gw;
    char joined_at[48];   /* every member joined when the fake started */
    json_t *commands;     /* application id -> array of application commands */
    json_t *roles;        /* the guild's roles beyond @everyone (role objects) */
    json_t *member_roles; /* user id -> array of role ids */
};


typedef struct reply {
    int status;   /* -1: drop the connection */
    json_t *body; /* owned */
    char *text;   /* owned; when set, sent instead of body (already serialised) */
    char hdr[8][2][96];
    int n_hdr;
} reply;

/* A request's body (http_server.h). */
typedef dg_http_body fd_req;

/* ---- fake_discord_state.c ---- */
/* Monotonic milliseconds (any thread). */
int64_t fd_mono_ms(void);
/* Room for one more of n elements in *arr (capacity *cap); 0 or -1. */
int fd_grow(void **arr, size_t *cap, size_t n, size_t elem);
uint64_t fd_next_id(fake_discord *fd);
void fd_iso_now(char *out, size_t len);
double fd_rand01(fake_discord *fd);
/* The route template and major parameter of a request (rate-limit keys). */
void fd_routes_of(const char *method, const char *path, char *tmpl, size_t tl, char *major,
                  size_t ml);
/* Lookups: borrowed from fd; NULL when none. */
fd_user *fd_user_by_token(fake_discord *fd, const char *token);
fd_user *fd_user_by_id(fake_discord *fd, const char *id);
fd_chan *fd_chan_by_id(fake_discord *fd, const char *id);
/* A user / member object: a new reference. */
json_t *fd_user_json(fake_discord *fd, const char *id);
json_t *fd_member_json(fake_discord *fd, const char *id, int with_user);
/* Permissions: a bit set from JSON, and a user's in a channel. */
uint64_t fd_perm_value(json_t *v);
uint64_t fd_perms_in(fake_discord *fd, fd_chan *ch, const char *user);
/* dg_map callbacks. */
int fd_ptr_differs(void *val, void *arg);
int fd_id_differs(void *val, void *arg);
void fd_ignore_dropped(void *val, void *arg);
void fd_buckets_forget(fake_discord *fd);
/* A channel or message into the state (owned by fd; NULL when out of memory). */
fd_chan *fd_chan_add(fake_discord *fd, const char *id, json_t *obj);
fd_msg *fd_msg_add(fake_discord *fd, fd_chan *ch, const char *author, const char *content,
                   json_t *nonce, json_t *allowed, json_t *extra_mentions);

/* ---- fake_discord_rest.c ---- */
/* A reply under construction; fd_send_reply sends and frees it. */
void fd_add_hdr(reply *r, const char *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void fd_set_reply(reply *r, int status, json_t *body);
void fd_err_reply(reply *r, int status, int code, const char *msg);
void fd_form_error(reply *r, const char *field, const char *code, const char *msg);
void fd_rate_limited(reply *r, double ra, int global, const char *bucket);
enum MHD_Result fd_send_reply(struct MHD_Connection *c, reply *r);
/* The channel endpoints; each fills r. */
json_t *fd_channel_from(fake_discord *fd, json_t *body, const char *id, reply *r);
void fd_api_create_channel(fake_discord *fd, const char *guild, json_t *body, reply *r);
void fd_api_list_channels(fake_discord *fd, const char *guild, reply *r);
fd_msg *fd_msg_of_id(fd_chan *ch, uint64_t id);
void fd_api_post_message(fake_discord *fd, fd_chan *ch, const char *user, json_t *body, reply *r);
void fd_api_get_messages(fake_discord *fd, fd_chan *ch, const char *user, struct MHD_Connection *c,
                         reply *r);
void fd_chan_free(fd_chan *ch);
void fd_api_delete_channel(fake_discord *fd, const char *id, reply *r);

/* ---- fake_discord_routes.c ---- */
fd_chan *fd_thread_add(fake_discord *fd, fd_chan *parent, const char *id, json_t *name,
                       const char *owner, reply *r);
fd_msg *fd_msg_by_id(fd_chan *ch, const char *id);
/* One Discord request (fd->mu not held: it takes it). */
enum MHD_Result fd_api(fake_discord *fd, struct MHD_Connection *c, const char *method,
                       const char *path, fd_req *rq);

/* ---- fake_discord_control.c ---- */
json_t *fd_messages_locked(fake_discord *fd, const char *channel);
int fd_add_user_locked(fake_discord *fd, const char *token, const char *id, const char *username,
                       int bot);
int fd_add_fault_locked(fake_discord *fd, const char *route, int kind, int count, double ra,
                        long delay);
void fd_clear_faults_locked(fake_discord *fd);
/* One /_test request (fd->mu not held: it takes it). */
enum MHD_Result fd_control(fake_discord *fd, struct MHD_Connection *c, const char *method,
                           const char *path, fd_req *rq);

#endif
