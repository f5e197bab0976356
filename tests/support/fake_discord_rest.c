/*
 * fake_discord_rest.c -- the fake Discord's replies, and its channel and
 * message endpoints: create, list, post, read, delete (see fake_discord_int.h).
 */
#include "fake_discord_int.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- replies -------------------------------------------------------------------------- */


void fd_add_hdr(reply *r, const char *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void fd_add_hdr(reply *r, const char *k, const char *fmt, ...)
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

void fd_set_reply(reply *r, int status, json_t *body)
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
    fd_set_reply(r, status, NULL);
    free(r->text);
    r->text = json_dumps(obj, JSON_COMPACT);
    if (!r->text)
        r->status = 500;
}

void fd_err_reply(reply *r, int status, int code, const char *msg)
{
    fd_set_reply(r, status, json_pack("{s:s, s:i}", "message", msg, "code", code));
}

void fd_form_error(reply *r, const char *field, const char *code, const char *msg)
{
    fd_set_reply(r, 400,
                 json_pack("{s:s, s:i, s:{s:{s:[{s:s, s:s}]}}}", "message", "Invalid Form Body",
                           "code", 50035, "errors", field, "_errors", "code", code, "message",
                           msg));
}

void fd_rate_limited(reply *r, double ra, int global, const char *bucket)
{
    fd_set_reply(r, 429,
                 json_pack("{s:s, s:f, s:b}", "message", "You are being rate limited.",
                           "retry_after", ra, "global", global));
    fd_add_hdr(r, "Retry-After", "%ld", (long)(ra + 0.999));
    if (global) {
        fd_add_hdr(r, "X-RateLimit-Global", "true");
        fd_add_hdr(r, "X-RateLimit-Scope", "global");
    } else {
        fd_add_hdr(r, "X-RateLimit-Bucket", "%s", bucket);
        fd_add_hdr(r, "X-RateLimit-Limit", "1");
        fd_add_hdr(r, "X-RateLimit-Remaining", "0");
        fd_add_hdr(r, "X-RateLimit-Reset-After", "%.3f", ra);
        fd_add_hdr(r, "X-RateLimit-Scope", "user");
    }
}

enum MHD_Result fd_send_reply(struct MHD_Connection *c, reply *r)
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
        fd_form_error(r, "name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
        return 0;
    }
    if (type == 0) {
        for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
            if (*c <= 0x20 || *c == 0x7f || (*c >= 'A' && *c <= 'Z')) {
                fd_form_error(r, "name", "CHANNEL_NAME_INVALID",
                              "Text channel names must be lower case without spaces.");
                return 0;
            }
        }
    }
    return 1;
}

/* Build a channel object from a create body; NULL with r set on refusal. */
json_t *fd_channel_from(fake_discord *fd, json_t *body, const char *id, reply *r)
{
    json_t *tv = json_object_get(body, "type");
    int type = tv ? (int)json_integer_value(tv) : 0;
    if (tv && (!json_is_integer(tv) || (type != 0 && type != 4))) {
        fd_form_error(r, "type", "BASE_TYPE_CHOICES", "Value must be one of {0, 4}.");
        return NULL;
    }
    const char *name = json_string_value(json_object_get(body, "name"));
    if (!name_ok(name, type, r))
        return NULL;
    json_t *topic = json_object_get(body, "topic");
    if (topic && !json_is_null(topic) &&
        (!json_is_string(topic) || (long)dg_utf8_count(json_string_value(topic)) > 1024)) {
        fd_form_error(r, "topic", "BASE_TYPE_MAX_LENGTH", "Must be 1024 or fewer in length.");
        return NULL;
    }
    json_t *parent = json_object_get(body, "parent_id");
    if (parent && !json_is_null(parent) && !dg_snowflake_valid(json_string_value(parent))) {
        fd_form_error(r, "parent_id", "NUMBER_TYPE_COERCE", "Value is not snowflake.");
        return NULL;
    }
    json_t *ows = json_object_get(body, "permission_overwrites");
    json_t *ows_out = json_array();
    if (ows && !json_is_array(ows)) {
        json_decref(ows_out);
        fd_form_error(r, "permission_overwrites", "BASE_TYPE_ARRAY", "Must be an array.");
        return NULL;
    }
    size_t i;
    json_t *ow;
    json_array_foreach(ows, i, ow) {
        const char *oid = json_string_value(json_object_get(ow, "id"));
        json_t *ot = json_object_get(ow, "type");
        json_t *al = json_object_get(ow, "allow"), *de = json_object_get(ow, "deny");
        int bad = !dg_snowflake_valid(oid) || !json_is_integer(ot) ||
                  (json_integer_value(ot) != 0 && json_integer_value(ot) != 1) ||
                  (al && !json_is_string(al) && !json_is_integer(al)) ||
                  (de && !json_is_string(de) && !json_is_integer(de));
        if (bad) {
            json_decref(ows_out);
            fd_form_error(r, "permission_overwrites", "BASE_TYPE_BAD",
                          "Each overwrite needs a snowflake id, type 0 or 1, allow and deny.");
            return NULL;
        }
        char a[24], d[24];
        snprintf(a, sizeof a, "%llu", (unsigned long long)fd_perm_value(al));
        snprintf(d, sizeof d, "%llu", (unsigned long long)fd_perm_value(de));
        json_array_append_new(ows_out, json_pack("{s:s, s:I, s:s, s:s}", "id", oid, "type",
                                                 json_integer_value(ot), "allow", a, "deny", d));
    }
    return json_pack("{s:s, s:i, s:s, s:s, s:i, s:o, s:O?, s:O?, s:b}", "id", id, "type", type,
                     "guild_id", fd->guild, "name", name, "position", (int)fd->n_chans,
                     "permission_overwrites", ows_out, "topic", json_is_null(topic) ? NULL : topic,
                     "parent_id", json_is_null(parent) ? NULL : parent, "nsfw", 0);
}

void fd_api_create_channel(fake_discord *fd, const char *guild, json_t *body, reply *r)
{
    if (strcmp(guild, fd->guild) != 0) {
        fd_err_reply(r, 404, 10004, "Unknown Guild");
        return;
    }
    if (!json_is_object(body)) {
        fd_err_reply(r, 400, 50109, "The request body contains invalid JSON.");
        return;
    }
    char id[24];
    snprintf(id, sizeof id, "%llu", (unsigned long long)fd_next_id(fd));
    json_t *obj = fd_channel_from(fd, body, id, r);
    if (!obj)
        return;
    if (!fd_chan_add(fd, id, obj)) {
        json_decref(obj);
        fd_err_reply(r, 500, 0, "500: Internal Server Error");
        return;
    }
    fd_set_reply(r, 201, json_deep_copy(obj));
}

/* Every channel of the guild, as Discord lists them to a bot in the guild
 * (private ones included: the bot made them). */
void fd_api_list_channels(fake_discord *fd, const char *guild, reply *r)
{
    if (strcmp(guild, fd->guild) != 0) {
        fd_err_reply(r, 404, 10004, "Unknown Guild");
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < fd->n_chans; i++)
        json_array_append_new(arr, json_deep_copy(fd->chans[i]->obj));
    fd_set_reply(r, 200, arr);
}

/* Message id in ch, or NULL (binary search: msgs are in id order). */
fd_msg *fd_msg_of_id(fd_chan *ch, uint64_t id)
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
    fd_msg *m = fd_msg_of_id(ch, (uint64_t)(uintptr_t)newest);
    if (m && !strcmp(m->author, author))
        return m;
    /* The newest message with this nonce is another author's: look further. */
    for (size_t i = ch->n; i-- > 0;)
        if (ch->msgs[i].nonce && !strcmp(ch->msgs[i].nonce, nonce) &&
            !strcmp(ch->msgs[i].author, author))
            return &ch->msgs[i];
    return NULL;
}

/* allowed_mentions as Discord checks it: 1 when valid, else 0 with r filled. */
static int allowed_mentions_ok(json_t *allowed, reply *r)
{
    json_t *parse = json_object_get(allowed, "parse");
    int parse_users = 0;
    size_t i;
    json_t *v;
    json_array_foreach(parse, i, v) {
        const char *s = json_string_value(v);
        if (!s || (strcmp(s, "users") && strcmp(s, "roles") && strcmp(s, "everyone"))) {
            fd_form_error(r, "allowed_mentions.parse", "BASE_TYPE_CHOICES",
                          "Value must be one of ('roles', 'users', 'everyone').");
            return 0;
        }
        parse_users |= !strcmp(s, "users");
    }
    if (parse_users && json_array_size(json_object_get(allowed, "users")) > 0) {
        fd_form_error(r, "allowed_mentions", "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                      "parse:[\"users\"] and users: [ids] are mutually exclusive.");
        return 0;
    }
    if (json_array_size(json_object_get(allowed, "users")) > 100) {
        fd_form_error(r, "allowed_mentions.users", "BASE_TYPE_MAX_LENGTH",
                      "Must be 100 or fewer in length.");
        return 0;
    }
    return 1;
}

void fd_api_post_message(fake_discord *fd, fd_chan *ch, const char *user, json_t *body, reply *r)
{
    if (!fd->no_perm &&
        (fd_perms_in(fd, ch, user) & (PERM_VIEW | PERM_SEND)) != (PERM_VIEW | PERM_SEND)) {
        fd_err_reply(r, 403, 50001, "Missing Access");
        return;
    }
    if (!json_is_object(body)) {
        fd_err_reply(r, 400, 50109, "The request body contains invalid JSON.");
        return;
    }
    json_t *cv = json_object_get(body, "content");
    if (cv && !json_is_string(cv)) {
        fd_form_error(r, "content", "BASE_TYPE_STRING", "Must be a string.");
        return;
    }
    const char *content = cv ? json_string_value(cv) : "";
    long n = (long)dg_utf8_count(content);
    if (n > 2000) {
        fd_form_error(r, "content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
        return;
    }
    int blank = 1;
    for (const char *c = content; *c && blank; c++)
        blank = (*c == ' ' || *c == '\n' || *c == '\t' || *c == '\r');
    if (blank) {
        fd_err_reply(r, 400, 50006, "Cannot send an empty message");
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
            fd_form_error(r, "nonce", "BASE_TYPE_BAD", "Must be a string or an integer.");
            return;
        }
        if (strlen(nonce_s) > 25) {
            fd_form_error(r, "nonce", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.");
            return;
        }
    }
    json_t *allowed = json_object_get(body, "allowed_mentions");
    if (json_is_null(allowed))
        allowed = NULL;
    if (allowed && !allowed_mentions_ok(allowed, r))
        return;
    if (nonce_s && json_is_true(json_object_get(body, "enforce_nonce"))) {
        fd_msg *hit = nonce_hit(ch, user, nonce_s);
        if (hit && hit->obj) {
            set_reply_of(r, 200, hit->obj);
            return;
        }
        if (hit) { /* lean: the first message's id, not its whole body */
            char idt[48];
            snprintf(idt, sizeof idt, "{\"id\":\"%llu\"}", (unsigned long long)hit->id);
            fd_set_reply(r, 200, NULL);
            r->text = strdup(idt);
            r->status = r->text ? 200 : 500;
            return;
        }
    }
    fd_msg *m = fd_msg_add(fd, ch, user, content, nonce, allowed, NULL);
    if (!m) {
        fd_err_reply(r, 500, 0, "500: Internal Server Error");
        return;
    }
    set_reply_of(r, 200, m->obj);
    if (fd->lean) {
        json_decref(m->obj);
        m->obj = NULL;
    }
}

void fd_api_get_messages(fake_discord *fd, fd_chan *ch, const char *user, struct MHD_Connection *c,
                         reply *r)
{
    if (!fd->no_perm &&
        (fd_perms_in(fd, ch, user) & (PERM_VIEW | PERM_HISTORY)) != (PERM_VIEW | PERM_HISTORY)) {
        fd_err_reply(r, 403, 50001, "Missing Access");
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
            fd_form_error(r, "limit", "NUMBER_TYPE_MAX", "int value should be between 1 and 100.");
            return;
        }
    }
    if ((after && !dg_snowflake_valid(after)) || (before && !dg_snowflake_valid(before))) {
        fd_form_error(r, after && !dg_snowflake_valid(after) ? "after" : "before",
                      "NUMBER_TYPE_COERCE", "Value is not snowflake.");
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
    fd_set_reply(r, 200, arr);
}

void fd_chan_free(fd_chan *ch)
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

void fd_api_delete_channel(fake_discord *fd, const char *id, reply *r)
{
    for (size_t i = 0; i < fd->n_chans; i++) {
        fd_chan *ch = fd->chans[i];
        if (strcmp(ch->id, id))
            continue;
        fd_set_reply(r, 200, json_deep_copy(ch->obj));
        /* Told before it goes: who could see it is decided by it. */
        int thread = json_integer_value(json_object_get(ch->obj, "type")) == CHAN_PUBLIC_THREAD;
        fdg_dispatch(fd->gw, thread ? "THREAD_DELETE" : "CHANNEL_DELETE", ch->obj, ch->id);
        memmove(&fd->chans[i], &fd->chans[i + 1], (fd->n_chans - i - 1) * sizeof *fd->chans);
        fd->n_chans--;
        /* Out of memory: the index keeps it (a test fake). */
        (void)dg_map_retain(&fd->chan_ix, fd_ptr_differs, fd_ignore_dropped, ch);
        fd_chan_free(ch);
        pthread_cond_broadcast(&fd->cond);
        return;
    }
    fd_err_reply(r, 404, 10003, "Unknown Channel");
}
