/*
 * messages.c -- message endpoints of the Discord client: post a message
 * (and build the post body the pipe in pipe.c shares), read messages.
 * See discord.h.
 */
#include "discord_int.h"

#include "utf8.h"

/* Bytes of s as a JSON string's inside (quotes not counted), escaped the
 * way jansson's compact dump escapes it: \" \\ \b \f \n \r \t, other
 * control characters as \u00XX, everything else (UTF-8 included) as is. */
static size_t json_str_len(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
            n += 2;
        else if (c < 0x20)
            n += 6;
        else
            n++;
    }
    return n;
}

/* Write s quoted and escaped (as json_str_len counts) at out; returns the
 * end of what was written. */
static char *json_str_put(char *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    *out++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        const char *esc = c == '"'    ? "\\\""
                          : c == '\\' ? "\\\\"
                          : c == '\b' ? "\\b"
                          : c == '\f' ? "\\f"
                          : c == '\n' ? "\\n"
                          : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t"
                                      : NULL;
        if (esc) {
            *out++ = esc[0];
            *out++ = esc[1];
        } else if (c < 0x20) {
            memcpy(out, "\\u00", 4);
            out[4] = hex[c >> 4];
            out[5] = hex[c & 15];
            out += 6;
        } else {
            *out++ = (char)c;
        }
    }
    *out++ = '"';
    return out;
}

/* Check a post's arguments and build its JSON body into *json (malloc'd,
 * caller frees). Returns DG_OK or the error set in err.
 *
 * The body is written directly, not built as a jansson tree and dumped
 * (then read back, see dgd_dump_checked): that was a large share of the
 * outbox's instructions per message, for a body of four fixed members.
 * The text is the one jansson's compact dump gives for {"content",
 * "allowed_mentions": {"parse": [], "users": [...]}, "nonce",
 * "enforce_nonce": true} in that order (the discord suite compares the two
 * on hostile texts). */
int dgd_post_body(const char *channel_id, const char *content, const char *const *mention_ids,
                  size_t n_mentions, const char *nonce, char **json, dg_discord_err *err)
{
    *json = NULL;
    if (!dg_snowflake_valid(channel_id))
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "post message: channel id must be a snowflake (1-20 digits)");
    long n = content ? dg_utf8_count_valid(content) : -1;
    if (n <= 0 || n > DG_DISCORD_MAX_CONTENT)
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "post message: content must be valid UTF-8 of 1 to %d characters "
                           "(has %ld); split longer text",
                           DG_DISCORD_MAX_CONTENT, n);
    if (nonce && (!*nonce || strlen(nonce) > DG_DISCORD_MAX_NONCE))
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "post message: nonce must be 1 to %d characters", DG_DISCORD_MAX_NONCE);
    if (n_mentions > 100 || (n_mentions && !mention_ids))
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "post message: at most 100 mention ids, given as an array");
    static const char k_content[] = "{\"content\":";
    static const char k_mentions[] = ",\"allowed_mentions\":{\"parse\":[],\"users\":[";
    static const char k_nonce[] = ",\"nonce\":";
    static const char k_enforce[] = ",\"enforce_nonce\":true";
    size_t len = sizeof k_content + 2 + json_str_len(content) + sizeof k_mentions + 2;
    for (size_t i = 0; i < n_mentions; i++) {
        if (!dg_snowflake_valid(mention_ids[i]))
            return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                               "post message: mention %zu is not a snowflake", i);
        len += strlen(mention_ids[i]) + 3; /* a snowflake needs no escape */
    }
    if (nonce)
        len += sizeof k_nonce + 2 + json_str_len(nonce) + sizeof k_enforce;
    char *out = malloc(len + 1);
    if (!out)
        return dgd_set_err(err, DG_ERR_NOMEM, 0, 1, "post message: out of memory");
    char *w = out;
    memcpy(w, k_content, sizeof k_content - 1);
    w = json_str_put(w + sizeof k_content - 1, content);
    memcpy(w, k_mentions, sizeof k_mentions - 1);
    w += sizeof k_mentions - 1;
    size_t listed = 0;
    for (size_t i = 0; i < n_mentions; i++) {
        int dup = 0;
        for (size_t k = 0; k < i && !dup; k++)
            dup = !strcmp(mention_ids[k], mention_ids[i]);
        if (dup)
            continue;
        if (listed++)
            *w++ = ',';
        w = json_str_put(w, mention_ids[i]);
    }
    *w++ = ']';
    *w++ = '}';
    if (nonce) {
        memcpy(w, k_nonce, sizeof k_nonce - 1);
        w = json_str_put(w + sizeof k_nonce - 1, nonce);
        memcpy(w, k_enforce, sizeof k_enforce - 1);
        w += sizeof k_enforce - 1;
    }
    *w++ = '}';
    *w = '\0';
    *json = out;
    return DG_OK;
}

int dg_discord_post_message(dg_discord *d, const char *channel_id, const char *content,
                            const char *const *mention_ids, size_t n_mentions, const char *nonce,
                            char **message_id, dg_discord_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (message_id)
        *message_id = NULL;
    if (!d)
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0, "post message: no client");
    char *json = NULL;
    int rc = dgd_post_body(channel_id, content, mention_ids, n_mentions, nonce, &json, err);
    if (rc != DG_OK)
        return rc;
    char path[64];
    snprintf(path, sizeof path, "/channels/%s/messages", channel_id);
    json_t *resp = NULL;
    rc = dgd_do_request(d, "POST", path, json, nonce != NULL, &resp, err);
    free(json);
    if (rc != DG_OK)
        return rc;
    const char *id = json_string_value(json_object_get(resp, "id"));
    if (!id) {
        json_decref(resp);
        return dgd_set_err(err, DG_ERR_IO, err ? err->http_status : 0, 1,
                           "post message: Discord's answer has no message id");
    }
    if (message_id && !(*message_id = strdup(id))) {
        json_decref(resp);
        return dgd_set_err(err, DG_ERR_NOMEM, 0, 1, "post message: out of memory");
    }
    json_decref(resp);
    return DG_OK;
}

static int cmp_snowflake(const void *a, const void *b)
{
    const dg_discord_message *x = a, *y = b;
    return dg_snowflake_cmp(x->id, y->id);
}

void dg_discord_messages_free(dg_discord_message *msgs, size_t n)
{
    if (!msgs)
        return;
    for (size_t i = 0; i < n; i++) {
        free(msgs[i].id);
        free(msgs[i].channel_id);
        free(msgs[i].author_id);
        free(msgs[i].content);
        free(msgs[i].nonce);
        for (size_t k = 0; k < msgs[i].n_mentions; k++)
            free(msgs[i].mention_ids[k]);
        free(msgs[i].mention_ids);
    }
    free(msgs);
}

/* Fill m from one message object; 0 or -1 (malformed / no memory). */
static int read_message(json_t *j, dg_discord_message *m)
{
    const char *id = json_string_value(json_object_get(j, "id"));
    json_t *author = json_object_get(j, "author");
    const char *aid = json_string_value(json_object_get(author, "id"));
    if (!id || !aid)
        return -1;
    m->id = strdup(id);
    m->author_id = strdup(aid);
    m->author_bot = json_is_true(json_object_get(author, "bot"));
    m->channel_id = dgd_strdup(json_string_value(json_object_get(j, "channel_id")));
    const char *c = json_string_value(json_object_get(j, "content"));
    m->content = strdup(c ? c : "");
    json_t *nonce = json_object_get(j, "nonce");
    if (json_is_string(nonce)) {
        m->nonce = strdup(json_string_value(nonce));
    } else if (json_is_integer(nonce)) {
        char b[32];
        snprintf(b, sizeof b, "%" JSON_INTEGER_FORMAT, json_integer_value(nonce));
        m->nonce = strdup(b);
    }
    json_t *mentions = json_object_get(j, "mentions");
    size_t nm = json_is_array(mentions) ? json_array_size(mentions) : 0;
    if (nm) {
        m->mention_ids = calloc(nm, sizeof *m->mention_ids);
        if (!m->mention_ids)
            return -1;
        for (size_t i = 0; i < nm; i++) {
            const char *uid = json_string_value(json_object_get(json_array_get(mentions, i), "id"));
            if (uid && !(m->mention_ids[m->n_mentions++] = strdup(uid)))
                return -1;
        }
    }
    return m->id && m->author_id && m->content ? 0 : -1;
}

int dg_discord_get_messages(dg_discord *d, const char *channel_id, const char *after_id, int limit,
                            dg_discord_message **msgs, size_t *n, dg_discord_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (msgs)
        *msgs = NULL;
    if (n)
        *n = 0;
    if (!d || !msgs || !n)
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0, "get messages: missing argument");
    if (!dg_snowflake_valid(channel_id))
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "get messages: channel id must be a snowflake (1-20 digits)");
    if (after_id && !dg_snowflake_valid(after_id))
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "get messages: after must be a message id (snowflake)");
    if (limit < 1 || limit > 100)
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0, "get messages: limit must be 1..100");
    char path[128];
    if (after_id)
        snprintf(path, sizeof path, "/channels/%s/messages?after=%s&limit=%d", channel_id, after_id,
                 limit);
    else
        snprintf(path, sizeof path, "/channels/%s/messages?limit=%d", channel_id, limit);
    json_t *resp;
    int rc = dgd_get_json(d, "get messages", path, JSON_ARRAY, &resp, err);
    if (rc != DG_OK)
        return rc;
    size_t cnt = json_array_size(resp);
    dg_discord_message *out = cnt ? calloc(cnt, sizeof *out) : NULL;
    if (cnt && !out) {
        json_decref(resp);
        return dgd_set_err(err, DG_ERR_NOMEM, 0, 1, "get messages: out of memory");
    }
    for (size_t i = 0; i < cnt; i++) {
        if (read_message(json_array_get(resp, i), &out[i]) != 0) {
            dg_discord_messages_free(out, cnt);
            json_decref(resp);
            return dgd_set_err(err, DG_ERR_IO, err ? err->http_status : 0, 1,
                               "get messages: message %zu of Discord's answer is malformed", i);
        }
    }
    json_decref(resp);
    if (cnt > 1)
        qsort(out, cnt, sizeof *out, cmp_snowflake);
    *msgs = out;
    *n = cnt;
    return DG_OK;
}
