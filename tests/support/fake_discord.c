/*
 * fake_discord.c -- in-process fake Discord REST server on libmicrohttpd.
 * See fake_discord.h for the endpoints, faults and ownership rules.
 */
#include "fake_discord.h"
#include "fake_discord_gateway.h"
#include "http_server.h"
#include "md_code.h"
#include "openclaw/plugin.h"
#include "str_map.h"
#include "utf8.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

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

/* ---- small helpers ---------------------------------------------------------------- */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    void *na = realloc(*arr, nc * elem);
    if (!na)
        return -1;
    *arr = na;
    *cap = nc;
    return 0;
}

static int is_snowflake(const char *s)
{
    if (!s || !*s || s[0] == '0')
        return 0;
    size_t n = 0;
    for (const char *c = s; *c; c++, n++)
        if (*c < '0' || *c > '9')
            return 0;
    return n < 20 || (n == 20 && strcmp(s, "18446744073709551615") <= 0);
}

static uint64_t next_id(fake_discord *fd)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    uint64_t id = (ms - DISCORD_EPOCH_MS) << 22;
    if (id <= fd->last_id)
        id = fd->last_id + 1;
    fd->last_id = id;
    return id;
}

static void iso_now(char *out, size_t len)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, len - n, ".%03ld000+00:00", (long)(ts.tv_nsec / 1000000) % 1000);
}

static double rand01(fake_discord *fd)
{
    fd->rng ^= fd->rng >> 12;
    fd->rng ^= fd->rng << 25;
    fd->rng ^= fd->rng >> 27;
    return (double)((fd->rng * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

static const char *const fault_names[FD_FAULT_KIND_COUNT] = {
    "429",   "global429",  "500",  "500after",  "403",
    "delay", "delayafter", "drop", "dropafter", "shapeafter",
};

const char *fake_discord_fault_name(fake_discord_fault_kind k)
{
    return (unsigned)k < FD_FAULT_KIND_COUNT ? fault_names[k] : "unknown";
}

int fake_discord_fault_parse(const char *name)
{
    for (int i = 0; name && i < FD_FAULT_KIND_COUNT; i++)
        if (!strcasecmp(name, fault_names[i]))
            return i;
    return -1;
}

/* Route template ("POST /channels/{id}/messages") and bucket key with the
 * major id kept ("POST /channels/123/messages"). */
static void routes_of(const char *method, const char *path, char *tmpl, size_t tl, char *major,
                      size_t ml)
{
    size_t t = (size_t)snprintf(tmpl, tl, "%s ", method);
    size_t m = (size_t)snprintf(major, ml, "%s ", method);
    int have_major = 0;
    const char *p = path, *prev = "";
    size_t prev_len = 0;
    while (*p) {
        if (*p == '/') {
            if (t + 1 < tl)
                tmpl[t++] = '/';
            if (m + 1 < ml)
                major[m++] = '/';
            p++;
            continue;
        }
        const char *seg = p;
        while (*p && *p != '/')
            p++;
        size_t len = (size_t)(p - seg);
        int digits = 1;
        for (size_t i = 0; i < len; i++)
            digits &= seg[i] >= '0' && seg[i] <= '9';
        int major_ctx =
            (prev_len == 8 && (!strncmp(prev, "channels", 8) || !strncmp(prev, "webhooks", 8))) ||
            (prev_len == 6 && !strncmp(prev, "guilds", 6));
        const char *tput = digits ? "{id}" : seg;
        size_t tlen = digits ? 4 : len;
        const char *mput = tput;
        size_t mlen = tlen;
        if (digits && major_ctx && !have_major) {
            have_major = 1;
            mput = seg;
            mlen = len;
        }
        if (t + tlen < tl) {
            memcpy(tmpl + t, tput, tlen);
            t += tlen;
        }
        if (m + mlen < ml) {
            memcpy(major + m, mput, mlen);
            m += mlen;
        }
        prev = seg;
        prev_len = len;
    }
    tmpl[t] = '\0';
    major[m] = '\0';
}

/* ---- state lookups (fd->mu held) ------------------------------------------------------ */

static fd_user *user_by_token(fake_discord *fd, const char *token)
{
    for (size_t i = 0; token && i < fd->n_users; i++)
        if (fd->users[i].token && !strcmp(fd->users[i].token, token))
            return &fd->users[i];
    return NULL;
}

static fd_user *user_by_id(fake_discord *fd, const char *id)
{
    for (size_t i = 0; i < fd->n_users; i++)
        if (!strcmp(fd->users[i].id, id))
            return &fd->users[i];
    return NULL;
}

static fd_chan *chan_by_id(fake_discord *fd, const char *id)
{
    return id ? dg_map_get(&fd->chan_ix, id) : NULL;
}

/* A Discord user object; unknown ids get a made-up name (a human). */
static json_t *user_json(fake_discord *fd, const char *id)
{
    fd_user *u = user_by_id(fd, id);
    char name[40];
    snprintf(name, sizeof name, "user-%s", strlen(id) > 6 ? id + strlen(id) - 6 : id);
    const char *un = u && u->username ? u->username : name;
    return json_pack("{s:s, s:s, s:b, s:s, s:s, s:n, s:i}", "id", id, "username", un, "bot",
                     u ? u->bot : 0, "discriminator", "0", "global_name", un, "avatar",
                     "public_flags", 0);
}

/* A guild member object for user id (with the user inside when with_user). */
static json_t *member_json(fake_discord *fd, const char *id, int with_user)
{
    json_t *roles = json_object_get(fd->member_roles, id);
    json_t *m =
        json_pack("{s:o, s:s, s:b, s:b, s:i, s:b, s:n, s:n, s:n}", "roles",
                  roles ? json_deep_copy(roles) : json_array(), "joined_at", fd->joined_at, "deaf",
                  0, "mute", 0, "flags", 0, "pending", 0, "nick", "avatar", "premium_since");
    if (m && with_user)
        json_object_set_new(m, "user", user_json(fd, id));
    return m;
}

static uint64_t perm_value(json_t *v)
{
    if (json_is_string(v))
        return strtoull(json_string_value(v), NULL, 10);
    if (json_is_integer(v))
        return (uint64_t)json_integer_value(v);
    return 0;
}

/* Permissions of user in channel from its overwrites (guild base: all). */
static uint64_t perms_in(fake_discord *fd, fd_chan *ch, const char *user)
{
    uint64_t perms = ~0ull;
    /* A (public) thread has no overwrites of its own: its parent decides. */
    if (json_integer_value(json_object_get(ch->obj, "type")) == CHAN_PUBLIC_THREAD) {
        fd_chan *parent = chan_by_id(fd, json_string_value(json_object_get(ch->obj, "parent_id")));
        if (parent)
            ch = parent;
    }
    json_t *ows = json_object_get(ch->obj, "permission_overwrites");
    size_t i;
    json_t *ow;
    json_array_foreach(ows, i, ow) {
        const char *id = json_string_value(json_object_get(ow, "id"));
        if (id && !strcmp(id, fd->guild) && json_integer_value(json_object_get(ow, "type")) == 0) {
            perms &= ~perm_value(json_object_get(ow, "deny"));
            perms |= perm_value(json_object_get(ow, "allow"));
        }
    }
    json_array_foreach(ows, i, ow) {
        const char *id = json_string_value(json_object_get(ow, "id"));
        if (id && user && !strcmp(id, user) &&
            json_integer_value(json_object_get(ow, "type")) == 1) {
            perms &= ~perm_value(json_object_get(ow, "deny"));
            perms |= perm_value(json_object_get(ow, "allow"));
        }
    }
    return perms;
}

/* dg_map_retain filters: keep what is not arg (a pointer), or whose id
 * (a uint64_t in the pointer) is not *arg. */
static int ptr_differs(void *val, void *arg)
{
    return val != arg;
}

static int id_differs(void *val, void *arg)
{
    return (uint64_t)(uintptr_t)val != *(const uint64_t *)arg;
}

static void ignore_dropped(void *val, void *arg)
{
    (void)val;
    (void)arg;
}

/* Every rate-limit bucket is forgotten (a new limit starts them afresh). */
static void free_bucket(void *val, void *unused)
{
    (void)unused;
    free(val);
}

static void buckets_forget(fake_discord *fd)
{
    dg_map_each(&fd->buckets, free_bucket, NULL);
    dg_map_clear(&fd->buckets);
}

static fd_chan *chan_add(fake_discord *fd, const char *id, json_t *obj)
{
    if (grow((void **)&fd->chans, &fd->cap_chans, fd->n_chans, sizeof *fd->chans))
        return NULL;
    fd_chan *ch = calloc(1, sizeof *ch);
    if (!ch)
        return NULL;
    snprintf(ch->id, sizeof ch->id, "%s", id);
    if (dg_map_put(&fd->chan_ix, ch->id, ch) != OC_OK) {
        free(ch);
        return NULL;
    }
    ch->obj = obj;
    fd->chans[fd->n_chans++] = ch;
    int thread = json_integer_value(json_object_get(obj, "type")) == CHAN_PUBLIC_THREAD;
    fdg_dispatch(fd->gw, thread ? "THREAD_CREATE" : "CHANNEL_CREATE", obj, ch->id);
    pthread_cond_broadcast(&fd->cond);
    return ch;
}

/* Store a message and dispatch MESSAGE_CREATE to the bots that see the
 * channel. extra_mentions: user ids mentioned besides <@id> in content
 * (borrowed, may be NULL). */
static fd_msg *msg_add(fake_discord *fd, fd_chan *ch, const char *author, const char *content,
                       json_t *nonce, json_t *allowed, json_t *extra_mentions)
{
    if (grow((void **)&ch->msgs, &ch->cap, ch->n, sizeof *ch->msgs))
        return NULL;
    uint64_t id = next_id(fd);
    char ids[24], ts[48];
    snprintf(ids, sizeof ids, "%llu", (unsigned long long)id);
    iso_now(ts, sizeof ts);

    /* Who is pinged: <@id>/<@!id> users as allowed_mentions permits;
     * @everyone/@here only when allowed. */
    json_t *parse = json_object_get(allowed, "parse");
    json_t *users = json_object_get(allowed, "users");
    int parse_users = !allowed, parse_everyone = !allowed;
    size_t i;
    json_t *v;
    json_array_foreach(parse, i, v) {
        if (json_is_string(v) && !strcmp(json_string_value(v), "users"))
            parse_users = 1;
        if (json_is_string(v) && !strcmp(json_string_value(v), "everyone"))
            parse_everyone = 1;
    }
    json_t *mentions = json_array();
    /* As Discord: nobody is pinged from inside code. */
    char *plain = strdup(content);
    if (!plain) {
        json_decref(mentions);
        return NULL;
    }
    dg_md_blank_code(plain);
    for (const char *p = strstr(plain, "<@"); p; p = strstr(p + 2, "<@")) {
        const char *q = p + 2;
        if (*q == '!')
            q++;
        const char *s = q;
        while (*q >= '0' && *q <= '9')
            q++;
        if (*q != '>' || q == s || q - s > 20)
            continue;
        char uid[24];
        snprintf(uid, sizeof uid, "%.*s", (int)(q - s), s);
        int ok = parse_users;
        json_array_foreach(users, i, v) {
            if (json_is_string(v) && !strcmp(json_string_value(v), uid))
                ok = 1;
        }
        json_t *m;
        size_t k;
        json_array_foreach(mentions, k, m) {
            if (!strcmp(json_string_value(json_object_get(m, "id")), uid))
                ok = 0;
        }
        if (ok)
            json_array_append_new(mentions, user_json(fd, uid));
    }
    json_array_foreach(extra_mentions, i, v) {
        const char *uid = json_string_value(v);
        int dup = !is_snowflake(uid);
        json_t *m;
        size_t k;
        json_array_foreach(mentions, k, m) {
            if (!dup && !strcmp(json_string_value(json_object_get(m, "id")), uid))
                dup = 1;
        }
        if (!dup)
            json_array_append_new(mentions, user_json(fd, uid));
    }
    /* Guild messages carry the author's member object (without its user),
     * and so do the mentions. */
    json_array_foreach(mentions, i, v)
        json_object_set_new(v, "member",
                            member_json(fd, json_string_value(json_object_get(v, "id")), 0));
    int everyone = parse_everyone && (strstr(plain, "@everyone") || strstr(plain, "@here"));
    free(plain);

    json_t *obj = json_pack("{s:s, s:i, s:s, s:s, s:o, s:s, s:s, s:b, s:b, s:b, s:o, s:[], s:[]}",
                            "id", ids, "type", 0, "channel_id", ch->id, "guild_id", fd->guild,
                            "author", user_json(fd, author), "content", content, "timestamp", ts,
                            "tts", 0, "pinned", 0, "mention_everyone", everyone, "mentions",
                            mentions, "mention_roles", "attachments");
    if (!obj)
        return NULL;
    json_object_set_new(obj, "edited_timestamp", json_null());
    json_object_set_new(obj, "embeds", json_array());
    json_object_set_new(obj, "components", json_array());
    json_object_set_new(obj, "flags", json_integer(0));
    json_object_set_new(obj, "member", member_json(fd, author, 0));
    if (nonce && !json_is_null(nonce))
        json_object_set(obj, "nonce", nonce);
    fd_msg *m = &ch->msgs[ch->n++];
    m->id = id;
    m->author = strdup(author);
    m->nonce = NULL;
    if (json_is_string(nonce)) {
        m->nonce = strdup(json_string_value(nonce));
    } else if (json_is_integer(nonce)) {
        char b[32];
        snprintf(b, sizeof b, "%" JSON_INTEGER_FORMAT, json_integer_value(nonce));
        m->nonce = strdup(b);
    }
    /* Out of memory: this nonce is not found again (a test fake). */
    if (m->nonce)
        (void)dg_map_put(&ch->nonces, m->nonce, (void *)(uintptr_t)id);
    m->obj = obj;
    json_t *tc = json_object_get(ch->obj, "message_count");
    if (tc)
        json_object_set_new(ch->obj, "message_count", json_integer(json_integer_value(tc) + 1));
    if (!fd->lean)
        fdg_dispatch(fd->gw, "MESSAGE_CREATE", obj, ch->id);
    pthread_cond_broadcast(&fd->cond);
    return m;
}

/* ---- replies -------------------------------------------------------------------------- */

typedef struct reply {
    int status;   /* -1: drop the connection */
    json_t *body; /* owned */
    char *text;   /* owned; when set, sent instead of body (already serialised) */
    char hdr[8][2][96];
    int n_hdr;
} reply;

static void add_hdr(reply *r, const char *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_hdr(reply *r, const char *k, const char *fmt, ...)
{
    if (r->n_hdr >= 8)
        return;
    snprintf(r->hdr[r->n_hdr][0], sizeof r->hdr[0][0], "%s", k);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->hdr[r->n_hdr][1], sizeof r->hdr[0][1], fmt, ap);
    va_end(ap);
    r->n_hdr++;
}

static void set_reply(reply *r, int status, json_t *body)
{
    json_decref(r->body);
    free(r->text);
    r->text = NULL;
    r->status = status;
    r->body = body;
}

/* An answer serialised now, under fd->mu, from an object the server keeps
 * (no deep copy of it to serialise after the unlock). */
static void set_reply_of(reply *r, int status, const json_t *obj)
{
    set_reply(r, status, NULL);
    free(r->text);
    r->text = json_dumps(obj, JSON_COMPACT);
    if (!r->text)
        r->status = 500;
}

static void err_reply(reply *r, int status, int code, const char *msg)
{
    set_reply(r, status, json_pack("{s:s, s:i}", "message", msg, "code", code));
}

static void form_error(reply *r, const char *field, const char *code, const char *msg)
{
    set_reply(r, 400,
              json_pack("{s:s, s:i, s:{s:{s:[{s:s, s:s}]}}}", "message", "Invalid Form Body",
                        "code", 50035, "errors", field, "_errors", "code", code, "message", msg));
}

static void rate_limited(reply *r, double ra, int global, const char *bucket)
{
    set_reply(r, 429,
              json_pack("{s:s, s:f, s:b}", "message", "You are being rate limited.", "retry_after",
                        ra, "global", global));
    add_hdr(r, "Retry-After", "%ld", (long)(ra + 0.999));
    if (global) {
        add_hdr(r, "X-RateLimit-Global", "true");
        add_hdr(r, "X-RateLimit-Scope", "global");
    } else {
        add_hdr(r, "X-RateLimit-Bucket", "%s", bucket);
        add_hdr(r, "X-RateLimit-Limit", "1");
        add_hdr(r, "X-RateLimit-Remaining", "0");
        add_hdr(r, "X-RateLimit-Reset-After", "%.3f", ra);
        add_hdr(r, "X-RateLimit-Scope", "user");
    }
}

static enum MHD_Result send_reply(struct MHD_Connection *c, reply *r)
{
    char *text = r->text ? r->text : r->body ? json_dumps(r->body, JSON_COMPACT) : strdup("");
    json_decref(r->body);
    r->body = NULL;
    r->text = NULL;
    if (!text)
        return MHD_NO;
    struct MHD_Response *resp = dg_http_response(text, strlen(text), "application/json");
    if (!resp)
        return MHD_NO;
    for (int i = 0; i < r->n_hdr; i++)
        MHD_add_response_header(resp, r->hdr[i][0], r->hdr[i][1]);
    return dg_http_queue(c, (unsigned)r->status, resp);
}

/* ---- the Discord endpoints (fd->mu held) ------------------------------------------------ */

static int name_ok(const char *name, int type, reply *r)
{
    long n = name ? (long)dg_utf8_count(name) : 0;
    if (n < 1 || n > 100) {
        form_error(r, "name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
        return 0;
    }
    if (type == 0) {
        for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
            if (*c <= 0x20 || *c == 0x7f || (*c >= 'A' && *c <= 'Z')) {
                form_error(r, "name", "CHANNEL_NAME_INVALID",
                           "Text channel names must be lower case without spaces.");
                return 0;
            }
        }
    }
    return 1;
}

/* Build a channel object from a create body; NULL with r set on refusal. */
static json_t *channel_from(fake_discord *fd, json_t *body, const char *id, reply *r)
{
    json_t *tv = json_object_get(body, "type");
    int type = tv ? (int)json_integer_value(tv) : 0;
    if (tv && (!json_is_integer(tv) || (type != 0 && type != 4))) {
        form_error(r, "type", "BASE_TYPE_CHOICES", "Value must be one of {0, 4}.");
        return NULL;
    }
    const char *name = json_string_value(json_object_get(body, "name"));
    if (!name_ok(name, type, r))
        return NULL;
    json_t *topic = json_object_get(body, "topic");
    if (topic && !json_is_null(topic) &&
        (!json_is_string(topic) || (long)dg_utf8_count(json_string_value(topic)) > 1024)) {
        form_error(r, "topic", "BASE_TYPE_MAX_LENGTH", "Must be 1024 or fewer in length.");
        return NULL;
    }
    json_t *parent = json_object_get(body, "parent_id");
    if (parent && !json_is_null(parent) && !is_snowflake(json_string_value(parent))) {
        form_error(r, "parent_id", "NUMBER_TYPE_COERCE", "Value is not snowflake.");
        return NULL;
    }
    json_t *ows = json_object_get(body, "permission_overwrites");
    json_t *ows_out = json_array();
    if (ows && !json_is_array(ows)) {
        json_decref(ows_out);
        form_error(r, "permission_overwrites", "BASE_TYPE_ARRAY", "Must be an array.");
        return NULL;
    }
    size_t i;
    json_t *ow;
    json_array_foreach(ows, i, ow) {
        const char *oid = json_string_value(json_object_get(ow, "id"));
        json_t *ot = json_object_get(ow, "type");
        json_t *al = json_object_get(ow, "allow"), *de = json_object_get(ow, "deny");
        int bad = !is_snowflake(oid) || !json_is_integer(ot) ||
                  (json_integer_value(ot) != 0 && json_integer_value(ot) != 1) ||
                  (al && !json_is_string(al) && !json_is_integer(al)) ||
                  (de && !json_is_string(de) && !json_is_integer(de));
        if (bad) {
            json_decref(ows_out);
            form_error(r, "permission_overwrites", "BASE_TYPE_BAD",
                       "Each overwrite needs a snowflake id, type 0 or 1, allow and deny.");
            return NULL;
        }
        char a[24], d[24];
        snprintf(a, sizeof a, "%llu", (unsigned long long)perm_value(al));
        snprintf(d, sizeof d, "%llu", (unsigned long long)perm_value(de));
        json_array_append_new(ows_out, json_pack("{s:s, s:I, s:s, s:s}", "id", oid, "type",
                                                 json_integer_value(ot), "allow", a, "deny", d));
    }
    return json_pack("{s:s, s:i, s:s, s:s, s:i, s:o, s:O?, s:O?, s:b}", "id", id, "type", type,
                     "guild_id", fd->guild, "name", name, "position", (int)fd->n_chans,
                     "permission_overwrites", ows_out, "topic", json_is_null(topic) ? NULL : topic,
                     "parent_id", json_is_null(parent) ? NULL : parent, "nsfw", 0);
}

static void api_create_channel(fake_discord *fd, const char *guild, json_t *body, reply *r)
{
    if (strcmp(guild, fd->guild) != 0) {
        err_reply(r, 404, 10004, "Unknown Guild");
        return;
    }
    if (!json_is_object(body)) {
        err_reply(r, 400, 50109, "The request body contains invalid JSON.");
        return;
    }
    char id[24];
    snprintf(id, sizeof id, "%llu", (unsigned long long)next_id(fd));
    json_t *obj = channel_from(fd, body, id, r);
    if (!obj)
        return;
    if (!chan_add(fd, id, obj)) {
        json_decref(obj);
        err_reply(r, 500, 0, "500: Internal Server Error");
        return;
    }
    set_reply(r, 201, json_deep_copy(obj));
}

/* Every channel of the guild, as Discord lists them to a bot in the guild
 * (private ones included: the bot made them). */
static void api_list_channels(fake_discord *fd, const char *guild, reply *r)
{
    if (strcmp(guild, fd->guild) != 0) {
        err_reply(r, 404, 10004, "Unknown Guild");
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < fd->n_chans; i++)
        json_array_append_new(arr, json_deep_copy(fd->chans[i]->obj));
    set_reply(r, 200, arr);
}

/* Message id in ch, or NULL (binary search: msgs are in id order). */
static fd_msg *msg_of_id(fd_chan *ch, uint64_t id)
{
    size_t lo = 0, hi = ch->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ch->msgs[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ch->n && ch->msgs[lo].id == id ? &ch->msgs[lo] : NULL;
}

static fd_msg *nonce_hit(fd_chan *ch, const char *author, const char *nonce)
{
    void *newest = dg_map_get(&ch->nonces, nonce);
    if (!newest)
        return NULL;
    fd_msg *m = msg_of_id(ch, (uint64_t)(uintptr_t)newest);
    if (m && !strcmp(m->author, author))
        return m;
    /* The newest message with this nonce is another author's: look further. */
    for (size_t i = ch->n; i-- > 0;)
        if (ch->msgs[i].nonce && !strcmp(ch->msgs[i].nonce, nonce) &&
            !strcmp(ch->msgs[i].author, author))
            return &ch->msgs[i];
    return NULL;
}

static void api_post_message(fake_discord *fd, fd_chan *ch, const char *user, json_t *body,
                             reply *r)
{
    if (!fd->no_perm &&
        (perms_in(fd, ch, user) & (PERM_VIEW | PERM_SEND)) != (PERM_VIEW | PERM_SEND)) {
        err_reply(r, 403, 50001, "Missing Access");
        return;
    }
    if (!json_is_object(body)) {
        err_reply(r, 400, 50109, "The request body contains invalid JSON.");
        return;
    }
    json_t *cv = json_object_get(body, "content");
    if (cv && !json_is_string(cv)) {
        form_error(r, "content", "BASE_TYPE_STRING", "Must be a string.");
        return;
    }
    const char *content = cv ? json_string_value(cv) : "";
    long n = (long)dg_utf8_count(content);
    if (n > 2000) {
        form_error(r, "content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
        return;
    }
    int blank = 1;
    for (const char *c = content; *c && blank; c++)
        blank = (*c == ' ' || *c == '\n' || *c == '\t' || *c == '\r');
    if (blank) {
        err_reply(r, 400, 50006, "Cannot send an empty message");
        return;
    }
    json_t *nonce = json_object_get(body, "nonce");
    char nb[32];
    const char *nonce_s = NULL;
    if (nonce && !json_is_null(nonce)) {
        if (json_is_string(nonce)) {
            nonce_s = json_string_value(nonce);
        } else if (json_is_integer(nonce)) {
            snprintf(nb, sizeof nb, "%" JSON_INTEGER_FORMAT, json_integer_value(nonce));
            nonce_s = nb;
        } else {
            form_error(r, "nonce", "BASE_TYPE_BAD", "Must be a string or an integer.");
            return;
        }
        if (strlen(nonce_s) > 25) {
            form_error(r, "nonce", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.");
            return;
        }
    }
    json_t *allowed = json_object_get(body, "allowed_mentions");
    if (allowed && !json_is_null(allowed)) {
        json_t *parse = json_object_get(allowed, "parse");
        int parse_users = 0;
        size_t i;
        json_t *v;
        json_array_foreach(parse, i, v) {
            const char *s = json_string_value(v);
            if (!s || (strcmp(s, "users") && strcmp(s, "roles") && strcmp(s, "everyone"))) {
                form_error(r, "allowed_mentions.parse", "BASE_TYPE_CHOICES",
                           "Value must be one of ('roles', 'users', 'everyone').");
                return;
            }
            parse_users |= !strcmp(s, "users");
        }
        if (parse_users && json_array_size(json_object_get(allowed, "users")) > 0) {
            form_error(r, "allowed_mentions", "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                       "parse:[\"users\"] and users: [ids] are mutually exclusive.");
            return;
        }
        if (json_array_size(json_object_get(allowed, "users")) > 100) {
            form_error(r, "allowed_mentions.users", "BASE_TYPE_MAX_LENGTH",
                       "Must be 100 or fewer in length.");
            return;
        }
    } else {
        allowed = NULL;
    }
    if (nonce_s && json_is_true(json_object_get(body, "enforce_nonce"))) {
        fd_msg *hit = nonce_hit(ch, user, nonce_s);
        if (hit && hit->obj) {
            set_reply_of(r, 200, hit->obj);
            return;
        }
        if (hit) { /* lean: the first message's id, not its whole body */
            char idt[48];
            snprintf(idt, sizeof idt, "{\"id\":\"%llu\"}", (unsigned long long)hit->id);
            set_reply(r, 200, NULL);
            r->text = strdup(idt);
            r->status = r->text ? 200 : 500;
            return;
        }
    }
    fd_msg *m = msg_add(fd, ch, user, content, nonce, allowed, NULL);
    if (!m) {
        err_reply(r, 500, 0, "500: Internal Server Error");
        return;
    }
    set_reply_of(r, 200, m->obj);
    if (fd->lean) {
        json_decref(m->obj);
        m->obj = NULL;
    }
}

static void api_get_messages(fake_discord *fd, fd_chan *ch, const char *user,
                             struct MHD_Connection *c, reply *r)
{
    if (!fd->no_perm &&
        (perms_in(fd, ch, user) & (PERM_VIEW | PERM_HISTORY)) != (PERM_VIEW | PERM_HISTORY)) {
        err_reply(r, 403, 50001, "Missing Access");
        return;
    }
    const char *ls = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    const char *after = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "after");
    const char *before = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "before");
    long limit = 50;
    if (ls) {
        char *end;
        limit = strtol(ls, &end, 10);
        if (*end || limit < 1 || limit > 100) {
            form_error(r, "limit", "NUMBER_TYPE_MAX", "int value should be between 1 and 100.");
            return;
        }
    }
    if ((after && !is_snowflake(after)) || (before && !is_snowflake(before))) {
        form_error(r, after && !is_snowflake(after) ? "after" : "before", "NUMBER_TYPE_COERCE",
                   "Value is not snowflake.");
        return;
    }
    uint64_t a = after ? strtoull(after, NULL, 10) : 0;
    uint64_t b = before ? strtoull(before, NULL, 10) : UINT64_MAX;
    /* Indices of matching messages (ascending), then the window Discord
     * returns: the oldest `limit` after `after`, else the newest `limit`. */
    size_t lo = 0, hi = ch->n; /* [lo, hi) */
    while (lo < ch->n && ch->msgs[lo].id <= a)
        lo++;
    while (hi > lo && ch->msgs[hi - 1].id >= b)
        hi--;
    if (hi - lo > (size_t)limit) {
        if (after)
            hi = lo + (size_t)limit;
        else
            lo = hi - (size_t)limit;
    }
    json_t *arr = json_array();
    for (size_t i = hi; i-- > lo;)
        if (ch->msgs[i].obj) /* lean: bodies are not kept */
            json_array_append_new(arr, json_deep_copy(ch->msgs[i].obj));
    set_reply(r, 200, arr);
}

static void chan_free(fd_chan *ch)
{
    dg_map_clear(&ch->nonces);
    for (size_t k = 0; k < ch->n; k++) {
        free(ch->msgs[k].author);
        free(ch->msgs[k].nonce);
        json_decref(ch->msgs[k].obj);
    }
    free(ch->msgs);
    json_decref(ch->obj);
    free(ch);
}

static void api_delete_channel(fake_discord *fd, const char *id, reply *r)
{
    for (size_t i = 0; i < fd->n_chans; i++) {
        fd_chan *ch = fd->chans[i];
        if (strcmp(ch->id, id))
            continue;
        set_reply(r, 200, json_deep_copy(ch->obj));
        /* Told before it goes: who could see it is decided by it. */
        int thread = json_integer_value(json_object_get(ch->obj, "type")) == CHAN_PUBLIC_THREAD;
        fdg_dispatch(fd->gw, thread ? "THREAD_DELETE" : "CHANNEL_DELETE", ch->obj, ch->id);
        memmove(&fd->chans[i], &fd->chans[i + 1], (fd->n_chans - i - 1) * sizeof *fd->chans);
        fd->n_chans--;
        /* Out of memory: the index keeps it (a test fake). */
        (void)dg_map_retain(&fd->chan_ix, ptr_differs, ignore_dropped, ch);
        chan_free(ch);
        pthread_cond_broadcast(&fd->cond);
        return;
    }
    err_reply(r, 404, 10003, "Unknown Channel");
}

/* ---- guild, users, threads, application commands (fd->mu held) ---------------------- */

static json_t *everyone_role(fake_discord *fd)
{
    char perms[24];
    snprintf(perms, sizeof perms, "%llu", (unsigned long long)PERM_EVERYONE);
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:b, s:b, s:b, s:i, s:n, s:n}", "id", fd->guild,
                     "name", "@everyone", "permissions", perms, "position", 0, "color", 0, "hoist",
                     0, "managed", 0, "mentionable", 0, "flags", 0, "icon", "unicode_emoji");
}

/* The guild as REST GET /guilds/{id} returns it. */
static json_t *guild_json(fake_discord *fd)
{
    json_t *g = json_pack(
        "{s:s, s:s, s:n, s:s, s:s, s:[o], s:[], s:[], s:i, s:i, s:i, s:i, s:i, s:n, s:n, "
        "s:s, s:i, s:b}",
        "id", fd->guild, "name", "Fake Guild", "icon", "owner_id", "100000000000000009",
        "preferred_locale", "en-US", "roles", everyone_role(fd), "emojis", "features",
        "verification_level", 0, "default_message_notifications", 0, "explicit_content_filter", 0,
        "mfa_level", 0, "nsfw_level", 0, "system_channel_id", "afk_channel_id", "description", "",
        "premium_tier", 0, "premium_progress_bar_enabled", 0);
    if (g)
        json_object_set_new(g, "stickers", json_array());
    return g;
}

json_t *fdi_guild_create(fake_discord *fd)
{
    json_t *g = guild_json(fd);
    json_t *chans = json_array(), *threads = json_array(), *members = json_array();
    for (size_t i = 0; i < fd->n_chans; i++) {
        json_t *o = fd->chans[i]->obj;
        int thread = json_integer_value(json_object_get(o, "type")) == CHAN_PUBLIC_THREAD;
        json_array_append(thread ? threads : chans, o);
    }
    for (size_t i = 0; i < fd->n_users; i++)
        json_array_append_new(members, member_json(fd, fd->users[i].id, 1));
    json_object_set_new(g, "channels", chans);
    json_object_set_new(g, "threads", threads);
    json_object_set_new(g, "members", members);
    json_object_set_new(g, "member_count", json_integer((json_int_t)fd->n_users));
    json_object_set_new(g, "joined_at", json_string(fd->joined_at));
    json_object_set_new(g, "large", json_false());
    json_object_set_new(g, "unavailable", json_false());
    json_object_set_new(g, "voice_states", json_array());
    json_object_set_new(g, "presences", json_array());
    json_object_set_new(g, "stage_instances", json_array());
    json_object_set_new(g, "guild_scheduled_events", json_array());
    json_object_set_new(g, "soundboard_sounds", json_array());
    return g;
}

pthread_mutex_t *fdi_mutex(fake_discord *fd)
{
    return &fd->mu;
}

pthread_cond_t *fdi_cond(fake_discord *fd)
{
    return &fd->cond;
}

void fdi_changed(fake_discord *fd)
{
    pthread_cond_broadcast(&fd->cond);
}

const char *fdi_user_for_token(fake_discord *fd, const char *token)
{
    fd_user *u = user_by_token(fd, token);
    return u ? u->id : NULL;
}

json_t *fdi_user_json(fake_discord *fd, const char *user_id)
{
    return user_json(fd, user_id);
}

int fdi_can_view(fake_discord *fd, const char *channel_id, const char *user_id)
{
    fd_chan *ch = chan_by_id(fd, channel_id);
    return ch && (fd->no_perm || (perms_in(fd, ch, user_id) & PERM_VIEW));
}

int fdi_port(const fake_discord *fd)
{
    return fd->port;
}

int fdi_app_flags(void)
{
    return APP_FLAGS;
}

/* A public thread (type 11) under parent, id given (a message's id when
 * started from one) or new. NULL with r set when refused. */
static fd_chan *thread_add(fake_discord *fd, fd_chan *parent, const char *id, json_t *name,
                           const char *owner, reply *r)
{
    const char *nm = json_string_value(name);
    long n = nm ? (long)dg_utf8_count(nm) : 0;
    if (n < 1 || n > 100) {
        form_error(r, "name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
        return NULL;
    }
    int ptype = (int)json_integer_value(json_object_get(parent->obj, "type"));
    if (ptype != 0) {
        err_reply(r, 400, 50024, "Cannot execute action on this channel type");
        return NULL;
    }
    char tid[24];
    if (id)
        snprintf(tid, sizeof tid, "%s", id);
    else
        snprintf(tid, sizeof tid, "%llu", (unsigned long long)next_id(fd));
    if (chan_by_id(fd, tid)) {
        err_reply(r, 400, 160004, "A thread has already been created for this message");
        return NULL;
    }
    char ts[48];
    iso_now(ts, sizeof ts);
    json_t *obj = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:n, s:i, s:i, s:i, s:i, s:i, "
                            "s:{s:b, s:i, s:s, s:b, s:s}}",
                            "id", tid, "type", CHAN_PUBLIC_THREAD, "guild_id", fd->guild,
                            "parent_id", parent->id, "owner_id", owner, "name", nm,
                            "last_message_id", "rate_limit_per_user", 0, "message_count", 0,
                            "member_count", 1, "total_message_sent", 0, "flags", 0,
                            "thread_metadata", "archived", 0, "auto_archive_duration", 1440,
                            "archive_timestamp", ts, "locked", 0, "create_timestamp", ts);
    fd_chan *ch = obj ? chan_add(fd, tid, obj) : NULL;
    if (!ch) {
        json_decref(obj);
        err_reply(r, 500, 0, "500: Internal Server Error");
    }
    return ch;
}

static fd_msg *msg_by_id(fd_chan *ch, const char *id)
{
    fd_msg *m = msg_of_id(ch, strtoull(id, NULL, 10));
    return m && m->obj ? m : NULL; /* lean: unknown */
}

/* The stored commands of an application (created on first use). */
static json_t *commands_of(fake_discord *fd, const char *app)
{
    json_t *arr = json_object_get(fd->commands, app);
    if (!arr) {
        arr = json_array();
        json_object_set_new(fd->commands, app, arr);
    }
    return arr;
}

/* A command as Discord echoes it: the body with id, application_id and
 * version filled in. NULL with r set when the body lacks a name. */
static json_t *command_from(fake_discord *fd, const char *app, json_t *body, const char *id,
                            reply *r)
{
    if (!json_is_object(body) || !json_is_string(json_object_get(body, "name"))) {
        form_error(r, "name", "BASE_TYPE_REQUIRED", "This field is required");
        return NULL;
    }
    json_t *c = json_deep_copy(body);
    char nid[24];
    if (id)
        snprintf(nid, sizeof nid, "%s", id);
    else
        snprintf(nid, sizeof nid, "%llu", (unsigned long long)next_id(fd));
    json_object_set_new(c, "id", json_string(nid));
    json_object_set_new(c, "application_id", json_string(app));
    json_object_set_new(c, "version", json_string(nid));
    if (!json_object_get(c, "type"))
        json_object_set_new(c, "type", json_integer(1));
    if (!json_object_get(c, "description"))
        json_object_set_new(c, "description", json_string(""));
    return c;
}

/* GET/POST/PUT/PATCH/DELETE /applications/{app}[/guilds/{g}]/commands[/{cmd}]:
 * stored per application (guild commands share the store). */
static void api_commands(fake_discord *fd, const char *method, const char *app, const char *cmd,
                         json_t *body, reply *r)
{
    json_t *arr = commands_of(fd, app);
    size_t i;
    json_t *c;
    if (!cmd && !strcmp(method, "GET")) {
        set_reply(r, 200, json_deep_copy(arr));
    } else if (!cmd && !strcmp(method, "PUT")) {
        if (!json_is_array(body)) {
            err_reply(r, 400, 50109, "The request body contains invalid JSON.");
            return;
        }
        json_t *out = json_array();
        json_array_foreach(body, i, c) {
            json_t *one = command_from(fd, app, c, NULL, r);
            if (!one) {
                json_decref(out);
                return;
            }
            json_array_append_new(out, one);
        }
        json_object_set_new(fd->commands, app, json_deep_copy(out));
        set_reply(r, 200, out);
    } else if (!cmd && !strcmp(method, "POST")) {
        json_t *one = command_from(fd, app, body, NULL, r);
        if (one) {
            json_array_append(arr, one);
            set_reply(r, 201, one);
        }
    } else if (cmd) {
        json_array_foreach(arr, i, c) {
            if (strcmp(json_string_value(json_object_get(c, "id")), cmd))
                continue;
            if (!strcmp(method, "DELETE")) {
                json_array_remove(arr, i);
                set_reply(r, 204, NULL);
            } else if (!strcmp(method, "PATCH") && json_is_object(body)) {
                json_object_update(c, body);
                set_reply(r, 200, json_deep_copy(c));
            } else {
                set_reply(r, 200, json_deep_copy(c));
            }
            return;
        }
        err_reply(r, 404, 10063, "Unknown application command");
    } else {
        err_reply(r, 405, 0, "405: Method Not Allowed");
    }
}

static json_t *application_json(fake_discord *fd, const char *user)
{
    fd_user *u = user_by_id(fd, user);
    const char *name = u && u->username ? u->username : "fake-app";
    return json_pack("{s:s, s:s, s:n, s:s, s:b, s:b, s:i, s:s, s:o, s:o, s:n, s:[]}", "id", user,
                     "name", name, "icon", "description", "", "bot_public", 1,
                     "bot_require_code_grant", 0, "flags", APP_FLAGS, "verify_key",
                     "0000000000000000000000000000000000000000000000000000000000000000", "owner",
                     json_pack("{s:s, s:s, s:s, s:s}", "id", "100000000000000009", "username",
                               "fake-owner", "discriminator", "0", "global_name", "fake-owner"),
                     "bot", user_json(fd, user), "team", "tags");
}

static void gateway_info(fake_discord *fd, int bot, reply *r)
{
    char url[64];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d", fd->port);
    if (bot)
        set_reply(r, 200,
                  json_pack("{s:s, s:i, s:{s:i, s:i, s:i, s:i}}", "url", url, "shards", 1,
                            "session_start_limit", "total", 1000, "remaining", 1000, "reset_after",
                            0, "max_concurrency", 1));
    else
        set_reply(r, 200, json_pack("{s:s}", "url", url));
}

/* PATCH (own messages only: content) or DELETE a message; the gateway
 * hears MESSAGE_UPDATE / MESSAGE_DELETE. */
static void api_edit_or_delete(fake_discord *fd, const char *method, const char *chan,
                               const char *mid, const char *user, json_t *body, reply *r)
{
    fd_chan *ch = chan_by_id(fd, chan);
    fd_msg *m = ch ? msg_by_id(ch, mid) : NULL;
    if (!ch) {
        err_reply(r, 404, 10003, "Unknown Channel");
        return;
    }
    if (!fd->no_perm && !(perms_in(fd, ch, user) & PERM_VIEW)) {
        err_reply(r, 403, 50001, "Missing Access");
        return;
    }
    if (!m) {
        err_reply(r, 404, 10008, "Unknown Message");
        return;
    }
    if (!strcmp(method, "DELETE")) {
        /* Deleting others' messages needs MANAGE_MESSAGES, which bots here
         * have (the guild base is every permission). */
        json_t *ev =
            json_pack("{s:s, s:s, s:s}", "id", mid, "channel_id", ch->id, "guild_id", fd->guild);
        uint64_t gone = m->id;
        char *nonce = m->nonce;
        free(m->author);
        json_decref(m->obj);
        size_t at = (size_t)(m - ch->msgs);
        memmove(m, m + 1, (ch->n - at - 1) * sizeof *m);
        ch->n--;
        /* The index names the newest message with each nonce (its key is
         * that message's string): when it named this one, the next older
         * message with the nonce (another author's) takes its place. */
        if (nonce && (uint64_t)(uintptr_t)dg_map_get(&ch->nonces, nonce) == gone) {
            fd_msg *older = NULL;
            for (size_t i = ch->n; i-- > 0 && !older;)
                if (ch->msgs[i].nonce && !strcmp(ch->msgs[i].nonce, nonce))
                    older = &ch->msgs[i];
            if (!older ||
                dg_map_put(&ch->nonces, older->nonce, (void *)(uintptr_t)older->id) != OC_OK)
                (void)dg_map_retain(&ch->nonces, id_differs, ignore_dropped, &gone);
        }
        free(nonce);
        fdg_dispatch(fd->gw, "MESSAGE_DELETE", ev, ch->id);
        json_decref(ev);
        set_reply(r, 204, NULL);
        return;
    }
    if (strcmp(m->author, user) != 0) {
        err_reply(r, 403, 50005, "Cannot edit a message authored by another user");
        return;
    }
    json_t *cv = json_object_get(body, "content");
    if (cv && (!json_is_string(cv) || (long)dg_utf8_count(json_string_value(cv)) > 2000)) {
        form_error(r, "content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
        return;
    }
    if (cv)
        json_object_set(m->obj, "content", cv);
    char ts[48];
    iso_now(ts, sizeof ts);
    json_object_set_new(m->obj, "edited_timestamp", json_string(ts));
    fdg_dispatch(fd->gw, "MESSAGE_UPDATE", m->obj, ch->id);
    pthread_cond_broadcast(&fd->cond);
    set_reply(r, 200, json_deep_copy(m->obj));
}

/* The routes a gateway client (OpenClaw's Discord plugin) needs beyond
 * channels and messages. 1 when handled (r set), 0 when not this route. */
static int api_more(fake_discord *fd, const char *method, const char *path, const char *tmpl,
                    const char *user, json_t *body, reply *r)
{
    char a[32], b[32], e[128];
    if (!strcmp(tmpl, "GET /gateway/bot")) {
        gateway_info(fd, 1, r);
    } else if (!strcmp(tmpl, "GET /users/@me")) {
        set_reply(r, 200, user_json(fd, user));
    } else if (!strcmp(tmpl, "GET /users/{id}") && sscanf(path, "/users/%23[0-9]", a) == 1) {
        if (user_by_id(fd, a))
            set_reply(r, 200, user_json(fd, a));
        else
            err_reply(r, 404, 10013, "Unknown User");
    } else if (!strcmp(tmpl, "GET /oauth2/applications/@me") ||
               !strcmp(tmpl, "GET /applications/@me")) {
        set_reply(r, 200, application_json(fd, user));
    } else if (!strncmp(path, "/applications/", 14) && strstr(path, "/commands")) {
        char cmd[32] = "";
        int n = sscanf(path, "/applications/%23[0-9]/commands/%23[0-9]", a, cmd);
        if (n < 1)
            n = sscanf(path, "/applications/%23[0-9]/guilds/%23[0-9]/commands/%23[0-9]", a, b,
                       cmd) >= 2
                    ? 1 + (cmd[0] != 0)
                    : 0;
        if (n < 1)
            return 0;
        api_commands(fd, method, a, cmd[0] ? cmd : NULL, body, r);
    } else if (!strcmp(tmpl, "GET /guilds/{id}") && sscanf(path, "/guilds/%23[0-9]", a) == 1) {
        if (strcmp(a, fd->guild))
            err_reply(r, 404, 10004, "Unknown Guild");
        else
            set_reply(r, 200, guild_json(fd));
    } else if (!strcmp(tmpl, "GET /guilds/{id}/roles") &&
               sscanf(path, "/guilds/%23[0-9]", a) == 1) {
        if (strcmp(a, fd->guild))
            err_reply(r, 404, 10004, "Unknown Guild");
        else {
            json_t *all = json_pack("[o]", everyone_role(fd));
            json_array_extend(all, fd->roles);
            set_reply(r, 200, all);
        }
    } else if (!strcmp(tmpl, "GET /guilds/{id}/members/{id}") &&
               sscanf(path, "/guilds/%23[0-9]/members/%23[0-9]", a, b) == 2) {
        if (strcmp(a, fd->guild))
            err_reply(r, 404, 10004, "Unknown Guild");
        else if (!user_by_id(fd, b))
            err_reply(r, 404, 10007, "Unknown Member");
        else
            set_reply(r, 200, member_json(fd, b, 1));
    } else if (!strcmp(tmpl, "GET /guilds/{id}/members") &&
               sscanf(path, "/guilds/%23[0-9]", a) == 1) {
        json_t *arr = json_array();
        for (size_t i = 0; i < fd->n_users; i++)
            json_array_append_new(arr, member_json(fd, fd->users[i].id, 1));
        set_reply(r, 200, arr);
    } else if (!strcmp(tmpl, "GET /channels/{id}/messages/{id}") &&
               sscanf(path, "/channels/%23[0-9]/messages/%23[0-9]", a, b) == 2) {
        fd_chan *ch = chan_by_id(fd, a);
        fd_msg *m = ch ? msg_by_id(ch, b) : NULL;
        if (!ch)
            err_reply(r, 404, 10003, "Unknown Channel");
        else if (!fd->no_perm && (perms_in(fd, ch, user) & (PERM_VIEW | PERM_HISTORY)) !=
                                     (PERM_VIEW | PERM_HISTORY))
            err_reply(r, 403, 50001, "Missing Access");
        else if (!m)
            err_reply(r, 404, 10008, "Unknown Message");
        else
            set_reply(r, 200, json_deep_copy(m->obj));
    } else if ((!strcmp(tmpl, "PATCH /channels/{id}/messages/{id}") ||
                !strcmp(tmpl, "DELETE /channels/{id}/messages/{id}")) &&
               sscanf(path, "/channels/%23[0-9]/messages/%23[0-9]", a, b) == 2) {
        api_edit_or_delete(fd, method, a, b, user, body, r);
    } else if (!strcmp(tmpl, "GET /guilds/{id}/threads/active")) {
        json_t *arr = json_array();
        for (size_t i = 0; i < fd->n_chans; i++)
            if (json_integer_value(json_object_get(fd->chans[i]->obj, "type")) ==
                CHAN_PUBLIC_THREAD)
                json_array_append(arr, fd->chans[i]->obj);
        set_reply(r, 200, json_pack("{s:o, s:[]}", "threads", arr, "members"));
    } else if ((!strcmp(method, "PUT") || !strcmp(method, "DELETE")) &&
               sscanf(path, "/channels/%23[0-9]/thread-members/%127s", a, e) == 2) {
        if (!chan_by_id(fd, a))
            err_reply(r, 404, 10003, "Unknown Channel");
        else
            set_reply(r, 204, NULL); /* joining/leaving is not modelled */
    } else if (!strcmp(tmpl, "POST /channels/{id}/typing") &&
               sscanf(path, "/channels/%23[0-9]", a) == 1) {
        fd_chan *ch = chan_by_id(fd, a);
        if (!ch)
            err_reply(r, 404, 10003, "Unknown Channel");
        else if (!fd->no_perm && !(perms_in(fd, ch, user) & PERM_VIEW))
            err_reply(r, 403, 50001, "Missing Access");
        else
            set_reply(r, 204, NULL);
    } else if ((!strcmp(method, "PUT") || !strcmp(method, "DELETE")) &&
               sscanf(path, "/channels/%23[0-9]/messages/%23[0-9]/reactions/%127[^/]", a, b, e) ==
                   3) {
        fd_chan *ch = chan_by_id(fd, a);
        if (!ch)
            err_reply(r, 404, 10003, "Unknown Channel");
        else if (!msg_by_id(ch, b))
            err_reply(r, 404, 10008, "Unknown Message");
        else
            set_reply(r, 204, NULL);
    } else if ((!strcmp(tmpl, "POST /channels/{id}/threads") &&
                sscanf(path, "/channels/%23[0-9]", a) == 1) ||
               (!strcmp(tmpl, "POST /channels/{id}/messages/{id}/threads") &&
                sscanf(path, "/channels/%23[0-9]/messages/%23[0-9]", a, b) == 2)) {
        int from_msg = strstr(tmpl, "/messages/") != NULL;
        fd_chan *ch = chan_by_id(fd, a);
        if (!ch)
            err_reply(r, 404, 10003, "Unknown Channel");
        else if (!fd->no_perm &&
                 (perms_in(fd, ch, user) & (PERM_VIEW | PERM_SEND)) != (PERM_VIEW | PERM_SEND))
            err_reply(r, 403, 50001, "Missing Access");
        else if (from_msg && !msg_by_id(ch, b))
            err_reply(r, 404, 10008, "Unknown Message");
        else {
            fd_chan *t =
                thread_add(fd, ch, from_msg ? b : NULL, json_object_get(body, "name"), user, r);
            if (t)
                set_reply(r, 201, json_deep_copy(t->obj));
        }
    } else {
        return 0;
    }
    return 1;
}

/* Route bucket window; 1 when the request may go on. Adds headers. */
static int bucket_take(fake_discord *fd, const char *major, const char *tmpl, reply *r)
{
    fd_bucket *bk = dg_map_get(&fd->buckets, major);
    if (!bk) {
        if (!(bk = calloc(1, sizeof *bk)))
            return 1;
        snprintf(bk->key, sizeof bk->key, "%s", major);
        if (dg_map_put(&fd->buckets, bk->key, bk) != OC_OK) {
            free(bk);
            return 1;
        }
    }
    int64_t now = mono_ms();
    int64_t win = (int64_t)(fd->rl_window * 1000.0);
    if (win < 1)
        win = 1;
    if (now - bk->window_start >= win) {
        bk->window_start = now;
        bk->used = 0;
    }
    double reset_after = (double)(bk->window_start + win - now) / 1000.0;
    unsigned h = 2166136261u;
    for (const char *p = tmpl; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    char bucket[16];
    snprintf(bucket, sizeof bucket, "%08x", h);
    if (bk->used >= fd->rl_limit) {
        rate_limited(r, reset_after > 0.001 ? reset_after : 0.001, 0, bucket);
        return 0;
    }
    bk->used++;
    add_hdr(r, "X-RateLimit-Bucket", "%s", bucket);
    add_hdr(r, "X-RateLimit-Limit", "%d", fd->rl_limit);
    add_hdr(r, "X-RateLimit-Remaining", "%d", fd->rl_limit - bk->used);
    add_hdr(r, "X-RateLimit-Reset-After", "%.3f", reset_after);
    return 1;
}

/* Process one Discord request; r holds the answer. */
static void api_process(fake_discord *fd, struct MHD_Connection *c, const char *method,
                        const char *path, const char *tmpl, const char *major, const char *user,
                        json_t *body, reply *r)
{
    if (!strcmp(tmpl, "GET /gateway")) {
        gateway_info(fd, 0, r); /* Discord serves it without a token */
        return;
    }
    if (!user) {
        err_reply(r, 401, 0, "401: Unauthorized");
        return;
    }
    if (!bucket_take(fd, major, tmpl, r))
        return;
    char id[32];
    if (!strcmp(tmpl, "POST /guilds/{id}/channels") &&
        sscanf(path, "/guilds/%23[0-9]/channels", id) == 1) {
        api_create_channel(fd, id, body, r);
        return;
    }
    if (!strcmp(tmpl, "GET /guilds/{id}/channels") &&
        sscanf(path, "/guilds/%23[0-9]/channels", id) == 1) {
        api_list_channels(fd, id, r);
        return;
    }
    int is_msgs = !strcmp(tmpl, "POST /channels/{id}/messages") ||
                  !strcmp(tmpl, "GET /channels/{id}/messages");
    int is_chan = !strcmp(tmpl, "GET /channels/{id}");
    if (!strcmp(tmpl, "DELETE /channels/{id}") && sscanf(path, "/channels/%23[0-9]", id) == 1) {
        api_delete_channel(fd, id, r);
        return;
    }
    if ((is_msgs || is_chan) && sscanf(path, "/channels/%23[0-9]", id) == 1) {
        fd_chan *ch = chan_by_id(fd, id);
        if (!ch) {
            err_reply(r, 404, 10003, "Unknown Channel");
            return;
        }
        if (is_chan) {
            if (!fd->no_perm && !(perms_in(fd, ch, user) & PERM_VIEW))
                err_reply(r, 403, 50001, "Missing Access");
            else
                set_reply(r, 200, json_deep_copy(ch->obj));
        } else if (method[0] == 'P') {
            api_post_message(fd, ch, user, body, r);
        } else {
            api_get_messages(fd, ch, user, c, r);
        }
        return;
    }
    if (!api_more(fd, method, path, tmpl, user, body, r))
        err_reply(r, 404, 0, "404: Not Found");
}

/* Wait until stop or delay_ms passed (fd->mu held). */
static void delay_locked(fake_discord *fd, long delay_ms)
{
    int64_t until = mono_ms() + delay_ms + 1; /* +1: never early through truncation */
    while (!fd->stopping && mono_ms() < until) {
        struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
        pthread_cond_timedwait(&fd->cond, &fd->mu, &ts);
    }
}

/* Next fault for this request, or -1 (fd->mu held). */
static int take_fault(fake_discord *fd, const char *tmpl, const char *concrete, double *ra,
                      long *delay)
{
    for (size_t i = 0; i < fd->n_faults; i++) {
        fd_fault *f = &fd->faults[i];
        if (strcmp(f->route, "*") && strcmp(f->route, tmpl) && strcmp(f->route, concrete))
            continue;
        int kind = f->kind;
        *ra = f->retry_after;
        *delay = f->delay_ms;
        if (--f->count <= 0) {
            memmove(f, f + 1, (fd->n_faults - i - 1) * sizeof *f);
            fd->n_faults--;
        }
        return kind;
    }
    if (fd->fail_rate > 0 && rand01(fd) < fd->fail_rate) {
        double x = rand01(fd);
        *ra = fd->fail_retry_after;
        *delay = 0;
        return x < 0.4 ? FD_FAULT_429 : x < 0.7 ? FD_FAULT_500 : FD_FAULT_500_AFTER;
    }
    return -1;
}

/* A request's body (http_server.h). */
typedef dg_http_body fd_req;

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    char **q = cls;
    char *n = NULL;
    if (asprintf(&n, "%s%s%s%s%s", *q ? *q : "", *q ? "&" : "", key, value ? "=" : "",
                 value ? value : "") < 0)
        return MHD_YES;
    free(*q);
    *q = n;
    return MHD_YES;
}

/* The configured response latency, slept on the connection's own thread
 * (MHD runs a thread per connection) without the server lock; ends early
 * at stop. */
static void latency_wait(fake_discord *fd)
{
    if (fd->latency_us <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = (int64_t)ts.tv_nsec + (int64_t)fd->latency_us * 1000;
    ts.tv_sec += (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    pthread_mutex_lock(&fd->lat_mu);
    while (!fd->lat_stop && pthread_cond_timedwait(&fd->lat_cond, &fd->lat_mu, &ts) == 0)
        ;
    pthread_mutex_unlock(&fd->lat_mu);
}

static enum MHD_Result api(fake_discord *fd, struct MHD_Connection *c, const char *method,
                           const char *path, fd_req *rq)
{
    char tmpl[192], major[192];
    routes_of(method, path, tmpl, sizeof tmpl, major, sizeof major);
    char concrete[192];
    snprintf(concrete, sizeof concrete, "%s %s", method, path);
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
    char *query = NULL;
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_query, &query);
    json_t *body = NULL;
    if (rq->buf.len)
        body = json_loadb(rq->buf.s, rq->buf.len, 0, NULL);

    reply r;
    memset(&r, 0, sizeof r);
    pthread_mutex_lock(&fd->mu);
    const char *user = NULL;
    if (auth && !strncmp(auth, "Bot ", 4)) {
        fd_user *u = user_by_token(fd, auth + 4);
        user = u ? u->id : NULL;
    }
    double ra = 0.05;
    long delay = 0;
    int fault = take_fault(fd, tmpl, concrete, &ra, &delay);
    if (ra <= 0)
        ra = 0.05;
    json_t *rec =
        fd->lean
            ? NULL
            : json_pack(
                  "{s:I, s:I, s:s, s:s, s:s?, s:s, s:s?, s:s?, s:s?, s:s?, s:s?, s:O?, s:i, s:s?}",
                  "seq", (json_int_t)++fd->seq, "tMs", (json_int_t)mono_ms(), "method", method,
                  "path", path, "query", query, "route", tmpl, "authorization", auth, "authUserId",
                  user, "userAgent", ua, "contentType", ct, "expect", expect, "body", body,
                  "status", 0, "fault", fault >= 0 ? fault_names[fault] : NULL);
    free(query);
    if (fd->lean) {
        fd->lean_requests++;
        pthread_cond_broadcast(&fd->cond);
    }
    if (rec && !body && rq->buf.len)
        json_object_set_new(rec, "body", json_stringn_nocheck(rq->buf.s, rq->buf.len));
    if (rec && !json_object_get(rec, "body"))
        json_object_set_new(rec, "body", json_null());
    if (rec && !json_object_get(rec, "authUserId"))
        json_object_set_new(rec, "authUserId", json_null());
    if (rec) {
        /* The client's TCP port tells connections apart (reuse checks). */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
            json_object_set_new(
                rec, "clientPort",
                json_integer(ntohs(((const struct sockaddr_in *)ci->client_addr)->sin_port)));
        json_array_append(fd->requests, rec);
        pthread_cond_broadcast(&fd->cond);
    }

    int drop = 0;
    switch (fault) {
    case FD_FAULT_429:
    case FD_FAULT_GLOBAL_429: {
        unsigned h = 2166136261u;
        for (const char *p = tmpl; *p; p++)
            h = (h ^ (unsigned char)*p) * 16777619u;
        char bucket[16];
        snprintf(bucket, sizeof bucket, "%08x", h);
        rate_limited(&r, ra, fault == FD_FAULT_GLOBAL_429, bucket);
        break;
    }
    case FD_FAULT_500: err_reply(&r, 500, 0, "500: Internal Server Error"); break;
    case FD_FAULT_403: err_reply(&r, 403, 50013, "Missing Permissions"); break;
    case FD_FAULT_DROP: drop = 1; break;
    default:
        if (fault == FD_FAULT_DELAY)
            delay_locked(fd, delay);
        if (fd->stopping) {
            drop = 1;
            break;
        }
        api_process(fd, c, method, path, tmpl, major, user, body, &r);
        if (fault == FD_FAULT_500_AFTER) {
            r.n_hdr = 0;
            err_reply(&r, 500, 0, "500: Internal Server Error");
        } else if (fault == FD_FAULT_DROP_AFTER) {
            drop = 1;
        } else if (fault == FD_FAULT_SHAPE_AFTER && r.status == 200) {
            int was_array = r.body ? json_is_array(r.body) : r.text && r.text[0] == '[';
            r.n_hdr = 0;
            set_reply(&r, 200,
                      was_array ? json_pack("{s:b}", "unexpected", 1)
                                : json_pack("[s]", "unexpected"));
        } else if (fault == FD_FAULT_DELAY_AFTER) {
            delay_locked(fd, delay);
            if (fd->stopping)
                drop = 1;
        }
        break;
    }
    if (rec) {
        json_object_set_new(rec, "status", json_integer(drop ? -1 : r.status));
        json_decref(rec);
    }
    pthread_cond_broadcast(&fd->cond);
    pthread_mutex_unlock(&fd->mu);
    json_decref(body);
    if (drop) {
        set_reply(&r, 0, NULL);
        return MHD_NO;
    }
    latency_wait(fd);
    return send_reply(c, &r);
}

/* ---- control endpoints ------------------------------------------------------------------ */

static int cmp_msg(const void *a, const void *b)
{
    const fd_msg *x = *(const fd_msg *const *)a, *y = *(const fd_msg *const *)b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Messages of one channel or all, oldest first across channels. */
static json_t *messages_locked(fake_discord *fd, const char *channel)
{
    size_t total = 0;
    for (size_t i = 0; i < fd->n_chans; i++)
        if (!channel || !strcmp(fd->chans[i]->id, channel))
            total += fd->chans[i]->n;
    fd_msg **all = total ? malloc(total * sizeof *all) : NULL;
    json_t *arr = json_array();
    if (total && !all)
        return arr;
    size_t k = 0;
    for (size_t i = 0; i < fd->n_chans; i++) {
        fd_chan *ch = fd->chans[i];
        if (channel && strcmp(ch->id, channel))
            continue;
        for (size_t m = 0; m < ch->n; m++)
            if (ch->msgs[m].obj) /* lean: bodies are not kept */
                all[k++] = &ch->msgs[m];
    }
    if (k > 1)
        qsort(all, k, sizeof *all, cmp_msg);
    for (size_t i = 0; i < k; i++)
        json_array_append_new(arr, json_deep_copy(all[i]->obj));
    free(all);
    return arr;
}

static int add_user_locked(fake_discord *fd, const char *token, const char *id,
                           const char *username, int bot)
{
    /* A human may come without a token (no API access, only a name). */
    if ((bot && (!token || !*token)) || (token && !*token) || !is_snowflake(id))
        return -1;
    fd_user *u = token ? user_by_token(fd, token) : user_by_id(fd, id);
    if (u && !token && u->token)
        u = NULL; /* a token user keeps its entry; this is another one */
    if (!u) {
        if (grow((void **)&fd->users, &fd->cap_users, fd->n_users, sizeof *fd->users))
            return -1;
        u = &fd->users[fd->n_users];
        memset(u, 0, sizeof *u);
        if (token && !(u->token = strdup(token)))
            return -1;
        fd->n_users++;
    }
    snprintf(u->id, sizeof u->id, "%s", id);
    free(u->username);
    u->username = username ? strdup(username) : NULL;
    u->bot = bot;
    return 0;
}

static int add_fault_locked(fake_discord *fd, const char *route, int kind, int count, double ra,
                            long delay)
{
    if (!route || kind < 0 || kind >= FD_FAULT_KIND_COUNT || count < 1 ||
        grow((void **)&fd->faults, &fd->cap_faults, fd->n_faults, sizeof *fd->faults))
        return -1;
    fd_fault *f = &fd->faults[fd->n_faults++];
    memset(f, 0, sizeof *f);
    snprintf(f->route, sizeof f->route, "%s", route);
    f->kind = kind;
    f->count = count;
    f->retry_after = ra > 0 ? ra : 0.05;
    f->delay_ms = delay;
    return 0;
}

static void clear_faults_locked(fake_discord *fd)
{
    fd->n_faults = 0;
    fd->fail_rate = 0;
}

static enum MHD_Result control(fake_discord *fd, struct MHD_Connection *c, const char *method,
                               const char *path, fd_req *rq)
{
    reply r;
    memset(&r, 0, sizeof r);
    json_t *body = rq->buf.len ? json_loadb(rq->buf.s, rq->buf.len, 0, NULL) : NULL;
    int get = !strcmp(method, "GET"), post = !strcmp(method, "POST"),
        del = !strcmp(method, "DELETE");
    pthread_mutex_lock(&fd->mu);
    if (get && !strcmp(path, "/_fake/health")) {
        set_reply(&r, 200, json_pack("{s:b, s:s}", "ok", 1, "guildId", fd->guild));
    } else if (get && !strcmp(path, "/_fake/requests")) {
        const char *since = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
        long s = since ? strtol(since, NULL, 10) : 0;
        json_t *arr = json_array();
        size_t i;
        json_t *rec;
        json_array_foreach(fd->requests, i, rec) {
            if (json_integer_value(json_object_get(rec, "seq")) > s)
                json_array_append_new(arr, json_deep_copy(rec));
        }
        set_reply(&r, 200, arr);
    } else if (del && !strcmp(path, "/_fake/requests")) {
        json_array_clear(fd->requests);
        set_reply(&r, 200, json_pack("{s:b}", "ok", 1));
    } else if (get && !strcmp(path, "/_fake/messages")) {
        const char *ch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "channel");
        set_reply(&r, 200, messages_locked(fd, ch));
    } else if (post && !strcmp(path, "/_fake/messages")) {
        const char *ch = json_string_value(json_object_get(body, "channelId"));
        const char *th = json_string_value(json_object_get(body, "threadId"));
        const char *au = json_string_value(json_object_get(body, "authorId"));
        const char *ct = json_string_value(json_object_get(body, "content"));
        json_t *mentions = json_object_get(body, "mentions");
        json_t *mk = json_object_get(body, "createThread");
        fd_chan *chan = chan_by_id(fd, th ? th : ch);
        if (!chan || !is_snowflake(au) || !ct || (mentions && !json_is_array(mentions)) ||
            (mk && !json_is_string(mk))) {
            err_reply(&r, 400, 0,
                      "need channelId or threadId (an existing channel or thread), "
                      "authorId (snowflake), content; mentions: array of user ids; "
                      "createThread: a thread name");
        } else {
            fd_msg *m = msg_add(fd, chan, au, ct, NULL, NULL, mentions);
            if (!m) {
                err_reply(&r, 500, 0, "out of memory");
            } else if (mk) {
                char mid[24];
                snprintf(mid, sizeof mid, "%llu", (unsigned long long)m->id);
                json_t *obj = json_deep_copy(m->obj);
                fd_chan *t = thread_add(fd, chan, mid, mk, au, &r);
                if (t) {
                    json_object_set(obj, "thread", t->obj);
                    set_reply(&r, 200, obj);
                } else {
                    json_decref(obj);
                }
            } else {
                set_reply(&r, 200, json_deep_copy(m->obj));
            }
        }
    } else if (post && !strcmp(path, "/_fake/threads")) {
        const char *ch = json_string_value(json_object_get(body, "channelId"));
        const char *mid = json_string_value(json_object_get(body, "messageId"));
        const char *owner = json_string_value(json_object_get(body, "ownerId"));
        fd_chan *chan = chan_by_id(fd, ch);
        if (!chan || (mid && !msg_by_id(chan, mid)) || (owner && !is_snowflake(owner))) {
            err_reply(&r, 400, 0,
                      "need channelId (an existing text channel), name; messageId "
                      "(a message of it) and ownerId (snowflake) are optional");
        } else {
            fd_chan *t = thread_add(fd, chan, mid, json_object_get(body, "name"),
                                    owner ? owner : "100000000000000009", &r);
            if (t)
                set_reply(&r, 200, json_deep_copy(t->obj));
        }
    } else if (get && !strcmp(path, "/_fake/gateway")) {
        set_reply(&r, 200, fdg_sessions(fd->gw));
    } else if (get && !strcmp(path, "/_fake/channels")) {
        json_t *arr = json_array();
        for (size_t i = 0; i < fd->n_chans; i++)
            json_array_append_new(arr, json_deep_copy(fd->chans[i]->obj));
        set_reply(&r, 200, arr);
    } else if (post && !strcmp(path, "/_fake/channels")) {
        const char *id = json_string_value(json_object_get(body, "id"));
        const char *g = json_string_value(json_object_get(body, "guildId"));
        char nid[24];
        if (id)
            snprintf(nid, sizeof nid, "%s", id);
        else
            snprintf(nid, sizeof nid, "%llu", (unsigned long long)next_id(fd));
        if (!json_is_object(body) || (id && !is_snowflake(id)) || chan_by_id(fd, nid) ||
            (g && strcmp(g, fd->guild))) {
            err_reply(&r, 400, 0,
                      "need a JSON object; id must be a new snowflake; guildId "
                      "must be the fake's guild");
        } else {
            json_t *spec = json_deep_copy(body);
            if (!json_object_get(spec, "name"))
                json_object_set_new(spec, "name", json_string("general"));
            json_t *obj = channel_from(fd, spec, nid, &r);
            json_decref(spec);
            if (obj && chan_add(fd, nid, obj))
                set_reply(&r, 200, json_deep_copy(obj));
            else if (obj)
                json_decref(obj);
        }
    } else if (post && !strcmp(path, "/_fake/users")) {
        json_t *bot = json_object_get(body, "bot");
        if (add_user_locked(fd, json_string_value(json_object_get(body, "token")),
                            json_string_value(json_object_get(body, "userId")),
                            json_string_value(json_object_get(body, "username")),
                            bot ? json_is_true(bot) : 1))
            err_reply(&r, 400, 0,
                      "need userId (snowflake) and token (string; optional for "
                      "bot:false)");
        else
            set_reply(&r, 200, json_pack("{s:b}", "ok", 1));
    } else if (post && !strcmp(path, "/_fake/faults")) {
        json_t *cnt = json_object_get(body, "count");
        const char *route = json_string_value(json_object_get(body, "route"));
        if (add_fault_locked(
                fd, route ? route : "*",
                fake_discord_fault_parse(json_string_value(json_object_get(body, "kind"))),
                cnt ? (int)json_integer_value(cnt) : 1,
                json_number_value(json_object_get(body, "retryAfter")),
                (long)json_integer_value(json_object_get(body, "delayMs"))))
            err_reply(&r, 400, 0,
                      "need kind (429, global429, 500, 500after, 403, delay, "
                      "delayafter, drop, dropafter), count >= 1, route");
        else
            set_reply(&r, 200, json_pack("{s:b}", "ok", 1));
    } else if (del && !strcmp(path, "/_fake/faults")) {
        clear_faults_locked(fd);
        set_reply(&r, 200, json_pack("{s:b}", "ok", 1));
    } else if (post && !strcmp(path, "/_fake/fail-rate")) {
        double rate = json_number_value(json_object_get(body, "rate"));
        if (rate < 0 || rate > 1) {
            err_reply(&r, 400, 0, "rate must be between 0 and 1");
        } else {
            json_t *seed = json_object_get(body, "seed");
            fd->fail_rate = rate;
            fd->rng =
                seed ? (uint64_t)json_integer_value(seed) * 2654435761u + 1 : 88172645463325252ull;
            double ra = json_number_value(json_object_get(body, "retryAfter"));
            fd->fail_retry_after = ra > 0 ? ra : 0.05;
            set_reply(&r, 200, json_pack("{s:b}", "ok", 1));
        }
    } else if (post && !strcmp(path, "/_fake/roles")) {
        /* {id, name?, permissions (decimal string or integer), members?: [user ids]} */
        const char *id = json_string_value(json_object_get(body, "id"));
        const char *name = json_string_value(json_object_get(body, "name"));
        json_t *pv = json_object_get(body, "permissions");
        json_t *members = json_object_get(body, "members");
        if (!id || !is_snowflake(id) || (!json_is_string(pv) && !json_is_integer(pv)) ||
            (members && !json_is_array(members))) {
            err_reply(&r, 400, 0, "need id (a snowflake), permissions, members?: [user ids]");
        } else {
            char perms[24];
            snprintf(perms, sizeof perms, "%llu", (unsigned long long)perm_value(pv));
            json_array_append_new(
                fd->roles, json_pack("{s:s, s:s, s:s, s:i, s:i, s:b, s:b, s:b, s:i}", "id", id,
                                     "name", name ? name : "role", "permissions", perms, "position",
                                     (int)json_array_size(fd->roles) + 1, "color", 0, "hoist", 0,
                                     "managed", 0, "mentionable", 0, "flags", 0));
            size_t i;
            json_t *m;
            json_array_foreach(members, i, m) {
                const char *uid = json_string_value(m);
                if (!uid)
                    continue;
                json_t *arr = json_object_get(fd->member_roles, uid);
                if (!arr) {
                    arr = json_array();
                    json_object_set_new(fd->member_roles, uid, arr);
                }
                json_array_append_new(arr, json_string(id));
            }
            set_reply(&r, 200, json_pack("{s:b}", "ok", 1));
        }
    } else if (post && !strcmp(path, "/_fake/rate-limit")) {
        int limit = (int)json_integer_value(json_object_get(body, "limit"));
        double win = json_number_value(json_object_get(body, "windowSec"));
        if (limit < 1 || win <= 0) {
            err_reply(&r, 400, 0, "need limit >= 1 and windowSec > 0");
        } else {
            fd->rl_limit = limit;
            fd->rl_window = win;
            set_reply(&r, 200, json_pack("{s:b}", "ok", 1));
        }
    } else {
        err_reply(&r, 404, 0, "unknown control endpoint; see tests/support/fake_discord.h");
    }
    pthread_mutex_unlock(&fd->mu);
    json_decref(body);
    return send_reply(c, &r);
}

/* ---- libmicrohttpd glue --------------------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    fake_discord *fd = cls;
    fd_req *rq = *con_cls;
    if (!rq) {
        rq = calloc(1, sizeof *rq);
        if (!rq)
            return MHD_NO;
        *con_cls = rq;
        return MHD_YES;
    }
    if (*upload_data_size) {
        /* Bodies of MAX_BODY bytes or more are answered 413. */
        return dg_http_body_take(rq, upload_data, upload_data_size, MAX_BODY - 1) ? MHD_NO
                                                                                  : MHD_YES;
    }
    const char *path = url;
    if (!strncmp(path, "/api/v10", 8) && (path[8] == '/' || path[8] == '\0'))
        path += 8;
    if (rq->too_large) {
        reply r;
        memset(&r, 0, sizeof r);
        err_reply(&r, 413, 40005, "Request entity too large");
        return send_reply(c, &r);
    }
    if (!strncmp(path, "/_fake/", 7))
        return control(fd, c, method, path, rq);
    /* The gateway shares the port: a websocket upgrade at "/" (the URL
     * GET /gateway/bot hands out). */
    const char *upg = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
    if (!strcmp(method, "GET") && upg && !strcasecmp(upg, "websocket") && !strcmp(url, "/"))
        return fdg_upgrade(fd->gw, c);
    return api(fd, c, method, path, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    fd_req *rq = *con_cls;
    if (rq) {
        dg_http_body_free(rq);
        free(rq);
        *con_cls = NULL;
    }
}

/* ---- public API -------------------------------------------------------------------------------- */

int fake_discord_start(const fake_discord_options *o, fake_discord **out, char *err, size_t err_len)
{
    char scratch[4];
    if (!err || !err_len) {
        err = scratch;
        err_len = sizeof scratch;
    }
    *out = NULL;
    fake_discord_options def;
    memset(&def, 0, sizeof def);
    if (!o)
        o = &def;
    if (o->port < 0 || o->port > 65535 || (o->guild_id && !is_snowflake(o->guild_id)) ||
        o->heartbeat_ms < 0) {
        snprintf(err, err_len,
                 "fake-discord: port must be 0..65535, guild a snowflake, "
                 "heartbeat_ms >= 0");
        return -1;
    }
    fake_discord *fd = calloc(1, sizeof *fd);
    if (!fd) {
        snprintf(err, err_len, "fake-discord: out of memory");
        return -1;
    }
    snprintf(fd->guild, sizeof fd->guild, "%s", o->guild_id ? o->guild_id : "100000000000000001");
    fd->no_perm = o->no_permission_checks;
    fd->lean = o->lean;
    fd->latency_us = o->latency_us > 0 ? o->latency_us : 0;
    fd->rl_limit = 10000;
    fd->rl_window = 1.0;
    fd->fail_retry_after = 0.05;
    fd->rng = 88172645463325252ull;
    fd->requests = json_array();
    fd->commands = json_object();
    fd->roles = json_array();
    fd->member_roles = json_object();
    iso_now(fd->joined_at, sizeof fd->joined_at);
    fd->gw = fdg_new(fd, o->heartbeat_ms);
    pthread_mutex_init(&fd->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&fd->cond, &ca);
    pthread_mutex_init(&fd->lat_mu, NULL);
    pthread_cond_init(&fd->lat_cond, &ca);
    pthread_condattr_destroy(&ca);

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)o->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!fd->gw || !fd->requests || !fd->commands) {
        snprintf(err, err_len, "fake-discord: out of memory");
        fake_discord_stop(fd);
        return -1;
    }
    fd->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                   MHD_ALLOW_UPGRADE,
                               0, NULL, NULL, on_request, fd, MHD_OPTION_SOCK_ADDR,
                               (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
                               fd, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_END);
    if (!fd->mhd) {
        snprintf(err, err_len, "fake-discord: cannot listen on 127.0.0.1:%d (in use?)", o->port);
        fake_discord_stop(fd);
        return -1;
    }
    fd->port = (int)dg_http_bound_port(fd->mhd, (unsigned)o->port);
    snprintf(fd->url, sizeof fd->url, "http://127.0.0.1:%d/api/v10", fd->port);
    *out = fd;
    return 0;
}

void fake_discord_stop(fake_discord *fd)
{
    if (!fd)
        return;
    pthread_mutex_lock(&fd->mu);
    fd->stopping = 1;
    pthread_cond_broadcast(&fd->cond);
    pthread_mutex_unlock(&fd->mu);
    pthread_mutex_lock(&fd->lat_mu);
    fd->lat_stop = 1;
    pthread_cond_broadcast(&fd->lat_cond);
    pthread_mutex_unlock(&fd->lat_mu);
    /* Websockets first: MHD must not see upgraded sockets still open. */
    fdg_shutdown(fd->gw);
    if (fd->mhd)
        MHD_stop_daemon(fd->mhd);
    fdg_free(fd->gw);
    json_decref(fd->commands);
    json_decref(fd->roles);
    json_decref(fd->member_roles);
    for (size_t i = 0; i < fd->n_users; i++) {
        free(fd->users[i].token);
        free(fd->users[i].username);
    }
    free(fd->users);
    for (size_t i = 0; i < fd->n_chans; i++)
        chan_free(fd->chans[i]);
    free(fd->chans);
    dg_map_clear(&fd->chan_ix);
    free(fd->faults);
    buckets_forget(fd);
    json_decref(fd->requests);
    pthread_cond_destroy(&fd->cond);
    pthread_mutex_destroy(&fd->mu);
    pthread_cond_destroy(&fd->lat_cond);
    pthread_mutex_destroy(&fd->lat_mu);
    free(fd);
}

int fake_discord_port(const fake_discord *fd)
{
    return fd->port;
}

const char *fake_discord_url(const fake_discord *fd)
{
    return fd->url;
}

const char *fake_discord_guild_id(const fake_discord *fd)
{
    return fd->guild;
}

int fake_discord_add_user(fake_discord *fd, const char *token, const char *user_id,
                          const char *username, int bot)
{
    pthread_mutex_lock(&fd->mu);
    int rc = add_user_locked(fd, token, user_id, username, bot);
    pthread_mutex_unlock(&fd->mu);
    return rc;
}

int fake_discord_add_role(fake_discord *fd, const char *role_id, const char *name,
                          uint64_t permissions)
{
    if (!is_snowflake(role_id))
        return -1;
    char perms[24];
    snprintf(perms, sizeof perms, "%llu", (unsigned long long)permissions);
    pthread_mutex_lock(&fd->mu);
    int rc = json_array_append_new(
        fd->roles, json_pack("{s:s, s:s, s:s, s:i, s:i, s:b, s:b, s:b, s:i}", "id", role_id, "name",
                             name ? name : "role", "permissions", perms, "position",
                             (int)json_array_size(fd->roles) + 1, "color", 0, "hoist", 0, "managed",
                             0, "mentionable", 0, "flags", 0));
    pthread_mutex_unlock(&fd->mu);
    return rc ? -1 : 0;
}

int fake_discord_grant_role(fake_discord *fd, const char *user_id, const char *role_id)
{
    if (!is_snowflake(user_id) || !is_snowflake(role_id))
        return -1;
    pthread_mutex_lock(&fd->mu);
    json_t *arr = json_object_get(fd->member_roles, user_id);
    if (!arr) {
        arr = json_array();
        json_object_set_new(fd->member_roles, user_id, arr);
    }
    int rc = json_array_append_new(arr, json_string(role_id));
    pthread_mutex_unlock(&fd->mu);
    return rc ? -1 : 0;
}

int fake_discord_set_overwrites(fake_discord *fd, const char *channel_id, const json_t *overwrites)
{
    if (!json_is_array(overwrites))
        return -1;
    pthread_mutex_lock(&fd->mu);
    fd_chan *ch = chan_by_id(fd, channel_id);
    int rc =
        ch ? json_object_set_new(ch->obj, "permission_overwrites", json_deep_copy(overwrites)) : -1;
    pthread_mutex_unlock(&fd->mu);
    return rc ? -1 : 0;
}

int fake_discord_add_channel(fake_discord *fd, const char *id, const char *name, char *id_out)
{
    if (id && !is_snowflake(id))
        return -1;
    pthread_mutex_lock(&fd->mu);
    char nid[24];
    if (id)
        snprintf(nid, sizeof nid, "%s", id);
    else
        snprintf(nid, sizeof nid, "%llu", (unsigned long long)next_id(fd));
    int rc = -1;
    if (!chan_by_id(fd, nid)) {
        json_t *obj = json_pack("{s:s, s:i, s:s, s:s, s:i, s:[], s:b}", "id", nid, "type", 0,
                                "guild_id", fd->guild, "name", name ? name : "general", "position",
                                (int)fd->n_chans, "permission_overwrites", "nsfw", 0);
        if (obj && chan_add(fd, nid, obj))
            rc = 0;
        else
            json_decref(obj);
    }
    pthread_mutex_unlock(&fd->mu);
    if (rc == 0 && id_out)
        snprintf(id_out, 24, "%s", nid);
    return rc;
}

int fake_discord_add_fault(fake_discord *fd, const char *route, fake_discord_fault_kind kind,
                           int count, double retry_after_s, long delay_ms)
{
    pthread_mutex_lock(&fd->mu);
    int rc = add_fault_locked(fd, route, (int)kind, count, retry_after_s, delay_ms);
    pthread_mutex_unlock(&fd->mu);
    return rc;
}

void fake_discord_clear_faults(fake_discord *fd)
{
    pthread_mutex_lock(&fd->mu);
    clear_faults_locked(fd);
    pthread_mutex_unlock(&fd->mu);
}

void fake_discord_set_fail_rate(fake_discord *fd, double rate, unsigned seed, double retry_after_s)
{
    pthread_mutex_lock(&fd->mu);
    fd->fail_rate = rate < 0 ? 0 : rate > 1 ? 1 : rate;
    fd->rng = (uint64_t)seed * 2654435761u + 1;
    fd->fail_retry_after = retry_after_s > 0 ? retry_after_s : 0.05;
    pthread_mutex_unlock(&fd->mu);
}

void fake_discord_set_rate_limit(fake_discord *fd, int limit, double window_s)
{
    pthread_mutex_lock(&fd->mu);
    fd->rl_limit = limit > 0 ? limit : 1;
    fd->rl_window = window_s > 0 ? window_s : 1.0;
    buckets_forget(fd);
    pthread_mutex_unlock(&fd->mu);
}

json_t *fake_discord_requests(fake_discord *fd, long since)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&fd->mu);
    size_t i;
    json_t *rec;
    json_array_foreach(fd->requests, i, rec) {
        if (json_integer_value(json_object_get(rec, "seq")) > since)
            json_array_append_new(arr, json_deep_copy(rec));
    }
    pthread_mutex_unlock(&fd->mu);
    return arr;
}

size_t fake_discord_request_count(fake_discord *fd)
{
    pthread_mutex_lock(&fd->mu);
    size_t n = fd->lean ? fd->lean_requests : json_array_size(fd->requests);
    pthread_mutex_unlock(&fd->mu);
    return n;
}

void fake_discord_clear_requests(fake_discord *fd)
{
    pthread_mutex_lock(&fd->mu);
    json_array_clear(fd->requests);
    fd->lean_requests = 0;
    pthread_mutex_unlock(&fd->mu);
}

static size_t count_locked(fake_discord *fd, const char *channel)
{
    size_t n = 0;
    for (size_t i = 0; i < fd->n_chans; i++)
        if (!channel || !strcmp(fd->chans[i]->id, channel))
            n += fd->chans[i]->n;
    return n;
}

/* Wait (fd->mu held) until pred or timeout; returns pred's last value. */
static int wait_locked(fake_discord *fd, long timeout_ms, int (*pred)(fake_discord *, const void *),
                       const void *arg)
{
    int64_t until = mono_ms() + timeout_ms;
    int ok;
    while (!(ok = pred(fd, arg)) && !fd->stopping && mono_ms() < until) {
        struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
        pthread_cond_timedwait(&fd->cond, &fd->mu, &ts);
    }
    return ok;
}

typedef struct wait_arg {
    const char *channel;
    size_t n;
} wait_arg;

static int pred_requests(fake_discord *fd, const void *a)
{
    return (fd->lean ? fd->lean_requests : json_array_size(fd->requests)) >=
           ((const wait_arg *)a)->n;
}

static int pred_messages(fake_discord *fd, const void *a)
{
    const wait_arg *w = a;
    return count_locked(fd, w->channel) >= w->n;
}

int fake_discord_wait_requests(fake_discord *fd, size_t n, long timeout_ms)
{
    wait_arg w = {NULL, n};
    pthread_mutex_lock(&fd->mu);
    int ok = wait_locked(fd, timeout_ms, pred_requests, &w);
    pthread_mutex_unlock(&fd->mu);
    return ok ? 0 : -1;
}

json_t *fake_discord_messages(fake_discord *fd, const char *channel_id)
{
    pthread_mutex_lock(&fd->mu);
    json_t *arr = messages_locked(fd, channel_id);
    pthread_mutex_unlock(&fd->mu);
    return arr;
}

size_t fake_discord_message_count(fake_discord *fd, const char *channel_id)
{
    pthread_mutex_lock(&fd->mu);
    size_t n = count_locked(fd, channel_id);
    pthread_mutex_unlock(&fd->mu);
    return n;
}

int fake_discord_wait_messages(fake_discord *fd, const char *channel_id, size_t n, long timeout_ms)
{
    wait_arg w = {channel_id, n};
    pthread_mutex_lock(&fd->mu);
    int ok = wait_locked(fd, timeout_ms, pred_messages, &w);
    pthread_mutex_unlock(&fd->mu);
    return ok ? 0 : -1;
}

json_t *fake_discord_channel(fake_discord *fd, const char *channel_id)
{
    pthread_mutex_lock(&fd->mu);
    fd_chan *ch = chan_by_id(fd, channel_id);
    json_t *obj = ch ? json_deep_copy(ch->obj) : NULL;
    pthread_mutex_unlock(&fd->mu);
    return obj;
}

json_t *fake_discord_channels(fake_discord *fd)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&fd->mu);
    for (size_t i = 0; i < fd->n_chans; i++)
        json_array_append_new(arr, json_deep_copy(fd->chans[i]->obj));
    pthread_mutex_unlock(&fd->mu);
    return arr;
}

int fake_discord_inject_message(fake_discord *fd, const char *channel_id, const char *author_id,
                                const char *content, char *id_out)
{
    if (!is_snowflake(author_id) || !content)
        return -1;
    pthread_mutex_lock(&fd->mu);
    fd_chan *ch = chan_by_id(fd, channel_id);
    fd_msg *m = ch ? msg_add(fd, ch, author_id, content, NULL, NULL, NULL) : NULL;
    if (m && id_out)
        snprintf(id_out, 24, "%llu", (unsigned long long)m->id);
    pthread_mutex_unlock(&fd->mu);
    return m ? 0 : -1;
}

json_t *fake_discord_gateway_sessions(fake_discord *fd)
{
    pthread_mutex_lock(&fd->mu);
    json_t *arr = fdg_sessions(fd->gw);
    pthread_mutex_unlock(&fd->mu);
    return arr;
}

static int pred_identified(fake_discord *fd, const void *a)
{
    return fdg_identified(fd->gw) >= ((const wait_arg *)a)->n;
}

int fake_discord_wait_gateway(fake_discord *fd, size_t n, long timeout_ms)
{
    wait_arg w = {NULL, n};
    pthread_mutex_lock(&fd->mu);
    int ok = wait_locked(fd, timeout_ms, pred_identified, &w);
    pthread_mutex_unlock(&fd->mu);
    return ok ? 0 : -1;
}

int fake_discord_add_thread(fake_discord *fd, const char *channel_id, const char *message_id,
                            const char *name, char *id_out)
{
    pthread_mutex_lock(&fd->mu);
    fd_chan *ch = chan_by_id(fd, channel_id);
    reply r;
    memset(&r, 0, sizeof r);
    json_t *nm = json_string(name ? name : "thread");
    fd_chan *t = ch && (!message_id || msg_by_id(ch, message_id))
                     ? thread_add(fd, ch, message_id, nm, "100000000000000009", &r)
                     : NULL;
    json_decref(nm);
    set_reply(&r, 0, NULL);
    if (t && id_out)
        snprintf(id_out, 24, "%s", t->id);
    pthread_mutex_unlock(&fd->mu);
    return t ? 0 : -1;
}

int fake_discord_inject(fake_discord *fd, const char *channel_id, const char *author_id,
                        const char *content, const char *const *mentions, char *id_out)
{
    if (!is_snowflake(author_id) || !content)
        return -1;
    json_t *ms = json_array();
    for (size_t i = 0; mentions && mentions[i]; i++)
        json_array_append_new(ms, json_string(mentions[i]));
    pthread_mutex_lock(&fd->mu);
    fd_chan *ch = chan_by_id(fd, channel_id);
    fd_msg *m = ch ? msg_add(fd, ch, author_id, content, NULL, NULL, ms) : NULL;
    if (m && id_out)
        snprintf(id_out, 24, "%llu", (unsigned long long)m->id);
    pthread_mutex_unlock(&fd->mu);
    json_decref(ms);
    return m ? 0 : -1;
}
