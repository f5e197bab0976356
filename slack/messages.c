/*
 * messages.c -- posts as the moderator, the text limit, and finding a
 * post again by the idempotency key its metadata carries. Slack has no
 * message nonce: exactly once after a crash comes from looking before a
 * resend. See slack.h.
 */
#include "slack_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

#define FIND_PAGE_DEFAULT 100
#define FIND_PAGE_MAX 999
#define FIND_PAGES_DEFAULT 3

int dg_slack_check_text(const char *text, size_t limit, char *why, size_t why_len)
{
    char scratch[4];
    if (!why || !why_len) {
        why = scratch;
        why_len = sizeof scratch;
    }
    why[0] = '\0';
    if (!text || !*text) {
        snprintf(why, why_len, "the message text is empty: Slack needs some text (no_text)");
        return DG_ERR_INVALID;
    }
    long n = dg_utf8_count_valid(text);
    if (n < 0) {
        snprintf(why, why_len, "the message text is not valid UTF-8: Slack takes UTF-8 only");
        return DG_ERR_INVALID;
    }
    if ((size_t)n > limit) {
        snprintf(why, why_len,
                 "the message text has %ld characters, more than the limit of %zu (Slack "
                 "advises at most %d and truncates above %d): split it into several messages",
                 n, limit, DG_SLACK_TEXT_DEFAULT, DG_SLACK_TEXT_HARD);
        return DG_ERR_INVALID;
    }
    return DG_OK;
}

/* A key as it may travel: 1..DG_SLACK_MAX_KEY bytes of printable ASCII. */
static int key_ok(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    if (n == 0 || n > DG_SLACK_MAX_KEY)
        return 0;
    for (const char *p = key; *p; p++)
        if (*p < 0x21 || *p > 0x7e)
            return 0;
    return 1;
}

/* The post's checks before any request; DG_OK or the error in err. */
static int post_args_ok(const dg_slack *s, const dg_slack_post_spec *p, dg_slack_err *err)
{
    char why[320];
    if (!p || !dg_slack_channel_id_valid(p->channel_id))
        return dgs_fail(err, DG_ERR_INVALID, 0, 0,
                        "chat.postMessage: the channel id must be C, G or D and 2..20 upper-case "
                        "letters or digits (e.g. C0123ABCD)");
    if (p->thread_ts && !dg_slack_ts_valid(p->thread_ts))
        return dgs_fail(err, DG_ERR_INVALID, 0, 0,
                        "chat.postMessage: thread_ts must be a message ts such as "
                        "1700000000.000100 (the thread's parent), or none for the channel");
    if (dg_slack_check_text(p->text, s->max_text, why, sizeof why) != DG_OK)
        return dgs_fail(err, DG_ERR_INVALID, 0, 0, "chat.postMessage: %s", why);
    if (p->key && !key_ok(p->key))
        return dgs_fail(err, DG_ERR_INVALID, 0, 0,
                        "chat.postMessage: the idempotency key must be 1..%d bytes of printable "
                        "ASCII without spaces",
                        DG_SLACK_MAX_KEY);
    return DG_OK;
}

/* The post's form body into form; 0 or -1 out of memory. */
static int post_form(const dg_slack_post_spec *p, dg_buf *form)
{
    if (dgs_form_add(form, "channel", p->channel_id) != 0 ||
        dgs_form_add(form, "text", p->text) != 0)
        return -1;
    if (p->thread_ts && dgs_form_add(form, "thread_ts", p->thread_ts) != 0)
        return -1;
    /* Mentions in the text are meant: <@U...> pings; no links unfurled. */
    if (dgs_form_add(form, "unfurl_links", "false") != 0 ||
        dgs_form_add(form, "unfurl_media", "false") != 0)
        return -1;
    if (!p->key)
        return 0;
    json_t *meta = json_pack("{s:s, s:{s:s}}", "event_type", DG_SLACK_OUTBOX_EVENT, "event_payload",
                             "key", p->key);
    char *text = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
    json_decref(meta);
    int rc = text ? dgs_form_add(form, "metadata", text) : -1;
    free(text);
    return rc;
}

int dg_slack_post(dg_slack *s, const dg_slack_post_spec *p, dg_slack_posted *out, dg_slack_err *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (err)
        memset(err, 0, sizeof *err);
    int rc = post_args_ok(s, p, err);
    if (rc != DG_OK)
        return rc;
    dg_buf form = {0};
    if (post_form(p, &form) != 0) {
        dg_buf_free(&form);
        return dgs_fail(err, DG_ERR_NOMEM, 0, 1, "out of memory");
    }
    json_t *ans = NULL;
    rc = dgs_call(s, "chat.postMessage", p->channel_id, form.s, 0, &ans, err);
    dg_buf_free(&form);
    if (rc != DG_OK)
        return rc;
    dg_slack_posted got;
    dgs_copy_str(ans, "channel", got.channel_id, sizeof got.channel_id);
    dgs_copy_str(ans, "ts", got.ts, sizeof got.ts);
    json_decref(ans);
    if (!dg_slack_ts_valid(got.ts))
        return dgs_fail(err, DG_ERR_IO, 200, 0,
                        "Slack answered chat.postMessage without a message ts; the post may "
                        "exist: look it up by its key before posting again");
    if (out)
        *out = got;
    return DG_OK;
}

/* The message of msgs carrying key (and, when self is known, posted by
 * self), or NULL. */
static const json_t *with_key(const json_t *msgs, const char *key, const char *self)
{
    size_t i;
    const json_t *m;
    json_array_foreach(msgs, i, m) {
        const json_t *meta = json_object_get(m, "metadata");
        const char *type = json_string_value(json_object_get(meta, "event_type"));
        const char *k =
            json_string_value(json_object_get(json_object_get(meta, "event_payload"), "key"));
        const char *user = json_string_value(json_object_get(m, "user"));
        if (type && k && !strcmp(type, DG_SLACK_OUTBOX_EVENT) && !strcmp(k, key) &&
            (!self[0] || (user && !strcmp(user, self))))
            return m;
    }
    return NULL;
}

/* The form of one page of history or replies; 0 or -1 out of memory. */
static int find_form(dg_buf *form, const char *channel_id, const char *thread_ts, int page,
                     const char *oldest, const char *cursor)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", page);
    if (dgs_form_add(form, "channel", channel_id) != 0 || dgs_form_add(form, "limit", lim) != 0 ||
        dgs_form_add(form, "include_all_metadata", "true") != 0)
        return -1;
    if (thread_ts && dgs_form_add(form, "ts", thread_ts) != 0)
        return -1;
    if (oldest && dgs_form_add(form, "oldest", oldest) != 0)
        return -1;
    if (cursor && *cursor && dgs_form_add(form, "cursor", cursor) != 0)
        return -1;
    return 0;
}

int dg_slack_find_by_key(dg_slack *s, const char *channel_id, const char *thread_ts,
                         const char *key, const dg_slack_find_opts *opts, int *found,
                         dg_slack_posted *out, dg_slack_err *err)
{
    *found = 0;
    if (out)
        memset(out, 0, sizeof *out);
    if (err)
        memset(err, 0, sizeof *err);
    if (!dg_slack_channel_id_valid(channel_id) || !key_ok(key) ||
        (thread_ts && !dg_slack_ts_valid(thread_ts)) ||
        (opts && opts->oldest && !dg_slack_ts_valid(opts->oldest)))
        return dgs_fail(err, DG_ERR_INVALID, 0, 0,
                        "find by key: needs a channel id (C...), a key of 1..%d printable bytes, "
                        "and thread_ts / oldest as message ts (1700000000.000100) when given",
                        DG_SLACK_MAX_KEY);
    int page = opts && opts->page_size > 0 ? opts->page_size : FIND_PAGE_DEFAULT;
    int pages = opts && opts->max_pages > 0 ? opts->max_pages : FIND_PAGES_DEFAULT;
    if (page > FIND_PAGE_MAX)
        page = FIND_PAGE_MAX;
    const char *method = thread_ts ? "conversations.replies" : "conversations.history";
    char self[DG_SLACK_ID_LEN], cursor[256] = "";
    pthread_mutex_lock(&s->mu);
    snprintf(self, sizeof self, "%s", s->self_id);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < pages && !*found; i++) {
        dg_buf form = {0};
        json_t *ans = NULL;
        int rc = find_form(&form, channel_id, thread_ts, page, opts ? opts->oldest : NULL, cursor)
                     ? dgs_fail(err, DG_ERR_NOMEM, 0, 1, "out of memory")
                     : dgs_call(s, method, NULL, form.s, 1, &ans, err);
        dg_buf_free(&form);
        if (rc != DG_OK)
            return rc;
        const json_t *m = with_key(json_object_get(ans, "messages"), key, self);
        if (m) {
            *found = 1;
            if (out) {
                snprintf(out->channel_id, sizeof out->channel_id, "%s", channel_id);
                dgs_copy_str(m, "ts", out->ts, sizeof out->ts);
            }
        }
        dgs_copy_str(json_object_get(ans, "response_metadata"), "next_cursor", cursor,
                     sizeof cursor);
        int more = json_is_true(json_object_get(ans, "has_more")) && cursor[0];
        json_decref(ans);
        if (!more)
            break;
    }
    return DG_OK;
}
