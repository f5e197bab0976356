/*
 * fake_discord_state.c -- the fake Discord's small helpers, state lookups,
 * permissions, and adding channels and messages (see fake_discord_int.h).
 */
#include "fake_discord_int.h"
#include "md_code.h"
#include "openclaw/plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- small helpers ---------------------------------------------------------------- */

int64_t fd_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int fd_grow(void **arr, size_t *cap, size_t n, size_t elem)
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

uint64_t fd_next_id(fake_discord *fd)
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

void fd_iso_now(char *out, size_t len)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, len - n, ".%03ld000+00:00", (long)(ts.tv_nsec / 1000000) % 1000);
}

double fd_rand01(fake_discord *fd)
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
void fd_routes_of(const char *method, const char *path, char *tmpl, size_t tl, char *major,
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

fd_user *fd_user_by_token(fake_discord *fd, const char *token)
{
    for (size_t i = 0; token && i < fd->n_users; i++)
        if (fd->users[i].token && !strcmp(fd->users[i].token, token))
            return &fd->users[i];
    return NULL;
}

fd_user *fd_user_by_id(fake_discord *fd, const char *id)
{
    for (size_t i = 0; i < fd->n_users; i++)
        if (!strcmp(fd->users[i].id, id))
            return &fd->users[i];
    return NULL;
}

fd_chan *fd_chan_by_id(fake_discord *fd, const char *id)
{
    return id ? dg_map_get(&fd->chan_ix, id) : NULL;
}

/* A Discord user object; unknown ids get a made-up name (a human). */
json_t *fd_user_json(fake_discord *fd, const char *id)
{
    fd_user *u = fd_user_by_id(fd, id);
    char name[40];
    snprintf(name, sizeof name, "user-%s", strlen(id) > 6 ? id + strlen(id) - 6 : id);
    const char *un = u && u->username ? u->username : name;
    return json_pack("{s:s, s:s, s:b, s:s, s:s, s:n, s:i}", "id", id, "username", un, "bot",
                     u ? u->bot : 0, "discriminator", "0", "global_name", un, "avatar",
                     "public_flags", 0);
}

/* A guild member object for user id (with the user inside when with_user). */
json_t *fd_member_json(fake_discord *fd, const char *id, int with_user)
{
    json_t *roles = json_object_get(fd->member_roles, id);
    json_t *m =
        json_pack("{s:o, s:s, s:b, s:b, s:i, s:b, s:n, s:n, s:n}", "roles",
                  roles ? json_deep_copy(roles) : json_array(), "joined_at", fd->joined_at, "deaf",
                  0, "mute", 0, "flags", 0, "pending", 0, "nick", "avatar", "premium_since");
    if (m && with_user)
        json_object_set_new(m, "user", fd_user_json(fd, id));
    return m;
}

uint64_t fd_perm_value(json_t *v)
{
    if (json_is_string(v))
        return strtoull(json_string_value(v), NULL, 10);
    if (json_is_integer(v))
        return (uint64_t)json_integer_value(v);
    return 0;
}

/* Permissions of user in channel from its overwrites (guild base: all). */
uint64_t fd_perms_in(fake_discord *fd, fd_chan *ch, const char *user)
{
    uint64_t perms = ~0ull;
    /* A (public) thread has no overwrites of its own: its parent decides. */
    if (json_integer_value(json_object_get(ch->obj, "type")) == CHAN_PUBLIC_THREAD) {
        fd_chan *parent =
            fd_chan_by_id(fd, json_string_value(json_object_get(ch->obj, "parent_id")));
        if (parent)
            ch = parent;
    }
    json_t *ows = json_object_get(ch->obj, "permission_overwrites");
    size_t i;
    json_t *ow;
    json_array_foreach(ows, i, ow) {
        const char *id = json_string_value(json_object_get(ow, "id"));
        if (id && !strcmp(id, fd->guild) && json_integer_value(json_object_get(ow, "type")) == 0) {
            perms &= ~fd_perm_value(json_object_get(ow, "deny"));
            perms |= fd_perm_value(json_object_get(ow, "allow"));
        }
    }
    json_array_foreach(ows, i, ow) {
        const char *id = json_string_value(json_object_get(ow, "id"));
        if (id && user && !strcmp(id, user) &&
            json_integer_value(json_object_get(ow, "type")) == 1) {
            perms &= ~fd_perm_value(json_object_get(ow, "deny"));
            perms |= fd_perm_value(json_object_get(ow, "allow"));
        }
    }
    return perms;
}

/* dg_map_retain filters: keep what is not arg (a pointer), or whose id
 * (a uint64_t in the pointer) is not *arg. */
int fd_ptr_differs(void *val, void *arg)
{
    return val != arg;
}

int fd_id_differs(void *val, void *arg)
{
    return (uint64_t)(uintptr_t)val != *(const uint64_t *)arg;
}

void fd_ignore_dropped(void *val, void *arg)
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

void fd_buckets_forget(fake_discord *fd)
{
    dg_map_each(&fd->buckets, free_bucket, NULL);
    dg_map_clear(&fd->buckets);
}

fd_chan *fd_chan_add(fake_discord *fd, const char *id, json_t *obj)
{
    if (fd_grow((void **)&fd->chans, &fd->cap_chans, fd->n_chans, sizeof *fd->chans))
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

/* Who content pings, as Discord: <@id>/<@!id> users as allowed_mentions
 * permits (never from inside code), plus extra_mentions; each with its
 * member object. A new array (NULL when out of memory); *everyone: 1 when
 * @everyone/@here pings (only when allowed). */
static json_t *mentions_of(fake_discord *fd, const char *content, json_t *allowed,
                           json_t *extra_mentions, int *everyone)
{
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
            json_array_append_new(mentions, fd_user_json(fd, uid));
    }
    json_array_foreach(extra_mentions, i, v) {
        const char *uid = json_string_value(v);
        int dup = !dg_snowflake_valid(uid);
        json_t *m;
        size_t k;
        json_array_foreach(mentions, k, m) {
            if (!dup && !strcmp(json_string_value(json_object_get(m, "id")), uid))
                dup = 1;
        }
        if (!dup)
            json_array_append_new(mentions, fd_user_json(fd, uid));
    }
    /* Guild messages carry the author's member object (without its user),
     * and so do the mentions. */
    json_array_foreach(mentions, i, v)
        json_object_set_new(v, "member",
                            fd_member_json(fd, json_string_value(json_object_get(v, "id")), 0));
    *everyone = parse_everyone && (strstr(plain, "@everyone") || strstr(plain, "@here"));
    free(plain);

    return mentions;
}

/* Store a message and dispatch MESSAGE_CREATE to the bots that see the
 * channel. extra_mentions: user ids mentioned besides <@id> in content
 * (borrowed, may be NULL). */
fd_msg *fd_msg_add(fake_discord *fd, fd_chan *ch, const char *author, const char *content,
                   json_t *nonce, json_t *allowed, json_t *extra_mentions)
{
    if (fd_grow((void **)&ch->msgs, &ch->cap, ch->n, sizeof *ch->msgs))
        return NULL;
    uint64_t id = fd_next_id(fd);
    char ids[24], ts[48];
    snprintf(ids, sizeof ids, "%llu", (unsigned long long)id);
    fd_iso_now(ts, sizeof ts);

    int everyone = 0;
    json_t *mentions = mentions_of(fd, content, allowed, extra_mentions, &everyone);
    if (!mentions)
        return NULL;
    json_t *obj = json_pack("{s:s, s:i, s:s, s:s, s:o, s:s, s:s, s:b, s:b, s:b, s:o, s:[], s:[]}",
                            "id", ids, "type", 0, "channel_id", ch->id, "guild_id", fd->guild,
                            "author", fd_user_json(fd, author), "content", content, "timestamp", ts,
                            "tts", 0, "pinned", 0, "mention_everyone", everyone, "mentions",
                            mentions, "mention_roles", "attachments");
    if (!obj)
        return NULL;
    json_object_set_new(obj, "edited_timestamp", json_null());
    json_object_set_new(obj, "embeds", json_array());
    json_object_set_new(obj, "components", json_array());
    json_object_set_new(obj, "flags", json_integer(0));
    json_object_set_new(obj, "member", fd_member_json(fd, author, 0));
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
