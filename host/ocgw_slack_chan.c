/*
 * ocgw_slack_chan.c -- what the gateway does in a Slack channel with an
 * agent's (or a scripted human's) token: read its new messages, thread
 * replies included, read who is in it, post. Used by ocgw.c (polling,
 * learned channels), ocgw_run.c and ocgw_humans.c (posts) and
 * ocgw_expect.c (whole histories); calls only ocgw_slack.c and the
 * utilities.
 *
 * Polling a Slack channel: conversations.history gives the top-level
 * messages, newest first, each thread's parent with its latest_reply;
 * conversations.replies gives a thread. Slack's ts grows with the time of
 * posting, so one read of the history fixes a bound: every message whose
 * ts is at or below the highest ts that read shows (a top-level message or
 * a latest_reply) was posted before it, and is found by it or by the
 * replies of a thread it names. Messages above the bound wait for the next
 * poll: a reply is never taken before a top-level message posted earlier.
 * Threads are found through the newest POLL_PAGES pages of the history: a
 * reply under an older parent is not seen.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ocgw.h"

#define POLL_PAGE 100
#define POLL_PAGES 10

static const char *sget(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* ocgw_slack_call within one operation of several calls: e->attempts
 * counts the requests of them all (the operation zeroes e first). */
static int call(ocgw_slack *sc, const char *method, const char *const *args, json_t **answer,
                ocgw_slack_err *e)
{
    int before = e->attempts;
    int rc = ocgw_slack_call(sc, method, args, answer, e);
    e->attempts += before;
    return rc;
}

void ocgw_msg_from_slack(const json_t *sm, const char *channel_id, ocgw_msg *m)
{
    memset(m, 0, sizeof *m);
    const char *ts = sget(sm, "ts"), *th = sget(sm, "thread_ts");
    m->id = strdup(ts ? ts : "0");
    m->channel_id = strdup(channel_id);
    /* A parent carries its own ts as thread_ts: it is top level. */
    if (th && ts && strcmp(th, ts))
        m->thread_id = strdup(th);
    const char *user = sget(sm, "user");
    m->author_id = strdup(user ? user : "0");
    m->author_bot = json_object_get(sm, "bot_id") != NULL;
    m->content = strdup(sget(sm, "text") ? sget(sm, "text") : "");
    json_t *ids = ocgw_user_mentions(m->content);
    m->mentions = calloc(json_array_size(ids) + 1, sizeof *m->mentions);
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v)
        if (m->mentions)
            m->mentions[m->n_mentions++] = strdup(json_string_value(v));
    json_decref(ids);
}

int ocgw_slack_latest(ocgw_slack *sc, const char *channel_id, char *out, size_t out_len,
                      ocgw_slack_err *e)
{
    /* The newest page of the history: a reply under any of its parents may
     * be newer than the newest top-level message. */
    char lim[16];
    snprintf(lim, sizeof lim, "%d", POLL_PAGE);
    const char *args[] = {"channel", channel_id, "limit", lim, NULL};
    json_t *ans = NULL;
    int rc = ocgw_slack_call(sc, "conversations.history", args, &ans, e);
    if (rc == OC_OK) {
        snprintf(out, out_len, "0");
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(ans, "messages"), i, m) {
            const char *ts = sget(m, "ts"), *lr = sget(m, "latest_reply");
            if (ts && ocgw_id_cmp(ts, out) > 0)
                snprintf(out, out_len, "%s", ts);
            if (lr && ocgw_id_cmp(lr, out) > 0)
                snprintf(out, out_len, "%s", lr);
        }
    }
    json_decref(ans);
    return rc;
}

static int add_msg(ocgw_msg **out, size_t *n, size_t *cap, const json_t *sm, const char *channel_id)
{
    if (dg_grow(out, cap, *n, sizeof **out, 32))
        return -1;
    ocgw_msg_from_slack(sm, channel_id, &(*out)[(*n)++]);
    return 0;
}

static int by_id(const void *a, const void *b)
{
    return ocgw_id_cmp(((const ocgw_msg *)a)->id, ((const ocgw_msg *)b)->id);
}

/* The replies of thread parent_ts in (after, bound] into out. */
static int read_thread(ocgw_slack *sc, const char *channel_id, const char *parent_ts,
                       const char *after, const char *bound, ocgw_msg **out, size_t *n, size_t *cap,
                       ocgw_slack_err *e)
{
    char cursor[64] = "";
    for (int page = 0; page < POLL_PAGES; page++) {
        const char *args[] = {
            "channel", channel_id, "ts", parent_ts, "limit", "200", *cursor ? "cursor" : NULL,
            cursor,    NULL};
        json_t *ans = NULL;
        int rc = call(sc, "conversations.replies", args, &ans, e);
        if (rc != OC_OK)
            return rc;
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(ans, "messages"), i, m) {
            const char *ts = sget(m, "ts");
            if (!ts || !strcmp(ts, parent_ts) || ocgw_id_cmp(ts, after) <= 0 ||
                ocgw_id_cmp(ts, bound) > 0)
                continue;
            if (add_msg(out, n, cap, m, channel_id)) {
                json_decref(ans);
                return OC_ERR_NOMEM;
            }
        }
        const char *next = sget(json_object_get(ans, "response_metadata"), "next_cursor");
        snprintf(cursor, sizeof cursor, "%s", next ? next : "");
        json_decref(ans);
        if (!*cursor)
            break;
    }
    return OC_OK;
}

int ocgw_slack_poll(ocgw_slack *sc, const char *channel_id, const char *after, ocgw_msg **out,
                    size_t *n_out, char *bound, size_t bound_len, ocgw_slack_err *e)
{
    *out = NULL;
    *n_out = 0;
    memset(e, 0, sizeof *e);
    size_t cap = 0;
    snprintf(bound, bound_len, "%s", after);
    json_t *parents = json_array(); /* ts of threads with replies after `after` */
    char cursor[64] = "";
    int rc = OC_OK;
    for (int page = 0; page < POLL_PAGES && rc == OC_OK; page++) {
        char lim[16];
        snprintf(lim, sizeof lim, "%d", POLL_PAGE);
        const char *args[] = {"channel", channel_id, "limit", lim, *cursor ? "cursor" : NULL,
                              cursor,    NULL};
        json_t *ans = NULL;
        if ((rc = call(sc, "conversations.history", args, &ans, e)) != OC_OK)
            break;
        json_t *msgs = json_object_get(ans, "messages");
        size_t i;
        json_t *m;
        int older = 0; /* this page reached messages at or below `after` */
        /* The first page fixes the bound (see the top of the file). */
        json_array_foreach(msgs, i, m) {
            const char *ts = sget(m, "ts"), *lr = sget(m, "latest_reply");
            if (page == 0 && ts && ocgw_id_cmp(ts, bound) > 0)
                snprintf(bound, bound_len, "%s", ts);
            if (page == 0 && lr && ocgw_id_cmp(lr, bound) > 0)
                snprintf(bound, bound_len, "%s", lr);
        }
        json_array_foreach(msgs, i, m) {
            const char *ts = sget(m, "ts"), *lr = sget(m, "latest_reply");
            if (!ts)
                continue;
            older |= ocgw_id_cmp(ts, after) <= 0;
            if (lr && ocgw_id_cmp(lr, after) > 0)
                json_array_append_new(parents, json_string(ts));
            if (ocgw_id_cmp(ts, after) > 0 && ocgw_id_cmp(ts, bound) <= 0 &&
                add_msg(out, n_out, &cap, m, channel_id))
                rc = OC_ERR_NOMEM;
        }
        const char *next = sget(json_object_get(ans, "response_metadata"), "next_cursor");
        snprintf(cursor, sizeof cursor, "%s", next ? next : "");
        json_decref(ans);
        if (!*cursor || older)
            break;
    }
    size_t i;
    json_t *p;
    json_array_foreach(parents, i, p) {
        if (rc != OC_OK)
            break;
        rc = read_thread(sc, channel_id, json_string_value(p), after, bound, out, n_out, &cap, e);
    }
    json_decref(parents);
    if (rc != OC_OK) {
        for (size_t k = 0; k < *n_out; k++)
            ocgw_msg_free(&(*out)[k]);
        free(*out);
        *out = NULL;
        *n_out = 0;
        return rc;
    }
    if (*n_out > 1)
        qsort(*out, *n_out, sizeof **out, by_id);
    return OC_OK;
}

int ocgw_slack_channel(ocgw_slack *sc, const char *channel_id, json_t **info, json_t **members,
                       ocgw_slack_err *e)
{
    *info = *members = NULL;
    memset(e, 0, sizeof *e);
    const char *args[] = {"channel", channel_id, NULL};
    json_t *ans = NULL;
    int rc = call(sc, "conversations.info", args, &ans, e);
    if (rc != OC_OK)
        return rc;
    *info = json_incref(json_object_get(ans, "channel"));
    json_decref(ans);
    *members = json_array();
    char cursor[64] = "";
    for (int page = 0; page < POLL_PAGES; page++) {
        const char *margs[] = {"channel", channel_id, "limit", "200", *cursor ? "cursor" : NULL,
                               cursor,    NULL};
        if ((rc = call(sc, "conversations.members", margs, &ans, e)) != OC_OK)
            break;
        json_array_extend(*members, json_object_get(ans, "members"));
        const char *next = sget(json_object_get(ans, "response_metadata"), "next_cursor");
        snprintf(cursor, sizeof cursor, "%s", next ? next : "");
        json_decref(ans);
        if (!*cursor)
            break;
    }
    if (rc != OC_OK) {
        json_decref(*info);
        json_decref(*members);
        *info = *members = NULL;
    }
    return rc;
}

/* Whether a post carrying nonce is among the newest messages of the
 * channel (or of the thread under thread_ts): 1 found (*ts_out set when
 * asked), 0 not there, or an error code with e. */
static int find_posted(ocgw_slack *sc, const char *channel_id, const char *thread_ts,
                       const char *nonce, char **ts_out, ocgw_slack_err *e)
{
    const char *args[] = {"channel",
                          channel_id,
                          "limit",
                          "100",
                          "include_all_metadata",
                          "true",
                          thread_ts ? "ts" : NULL,
                          thread_ts,
                          NULL};
    json_t *ans = NULL;
    int rc = call(sc, thread_ts ? "conversations.replies" : "conversations.history", args, &ans, e);
    if (rc != OC_OK)
        return rc;
    size_t i;
    json_t *sm;
    int found = 0;
    json_array_foreach(json_object_get(ans, "messages"), i, sm) {
        const json_t *meta = json_object_get(sm, "metadata");
        const char *n = sget(json_object_get(meta, "event_payload"), "nonce");
        if (n && !strcmp(n, nonce) && sget(meta, "event_type") &&
            !strcmp(sget(meta, "event_type"), "ocgw_post")) {
            found = 1;
            if (ts_out && sget(sm, "ts"))
                *ts_out = strdup(sget(sm, "ts"));
            break;
        }
    }
    json_decref(ans);
    return found;
}

/* A failure after which the post may exist: the request may have reached
 * Slack (no answer, or a 5xx), as opposed to a refusal. */
static int outcome_unknown(const ocgw_slack_err *e)
{
    return !strcmp(e->code, "transport") || !strcmp(e->code, "http_5xx");
}

int ocgw_slack_post(ocgw_slack *sc, const char *channel_id, const char *thread_ts, const char *text,
                    const char *nonce, char **ts_out, ocgw_slack_err *e)
{
    if (ts_out)
        *ts_out = NULL;
    /* The nonce rides in the message's metadata: Slack has no nonce, and a
     * reader of the channel can still tell a post sent twice. */
    char *meta =
        dg_sprintf("{\"event_type\":\"ocgw_post\",\"event_payload\":{\"nonce\":\"%s\"}}", nonce);
    const char *args[] = {"channel",
                          channel_id,
                          "text",
                          text,
                          "metadata",
                          meta ? meta : "",
                          thread_ts ? "thread_ts" : NULL,
                          thread_ts,
                          NULL};
    json_t *ans = NULL;
    int rc = OC_OK, looked = 0;
    memset(e, 0, sizeof *e);
    /* The last try of this nonce ended without knowing whether Slack
     * stored it: look before posting again (Slack has no idempotency key). */
    if (ocgw_slack_doubted(sc, nonce)) {
        ocgw_slack_err le;
        memset(&le, 0, sizeof le);
        int f = find_posted(sc, channel_id, thread_ts, nonce, ts_out, &le);
        if (f < 0) {
            free(meta);
            *e = le;
            e->retryable = 1; /* the doubt stays: the next try looks again */
            return OC_ERR_IO;
        }
        looked = le.attempts;
        if (f == 1) {
            e->attempts = looked;
            ocgw_slack_doubt(sc, NULL);
            free(meta);
            return OC_OK;
        }
    }
    rc = ocgw_slack_call(sc, "chat.postMessage", args, &ans, e);
    e->attempts += looked;
    if (rc == OC_OK && ts_out && sget(ans, "ts"))
        *ts_out = strdup(sget(ans, "ts"));
    json_decref(ans);
    /* At once, while the answer's loss is fresh; the doubt stays for the
     * caller's next try when the lookup cannot tell either. */
    if (rc != OC_OK && outcome_unknown(e)) {
        ocgw_slack_doubt(sc, nonce);
        ocgw_slack_err le;
        memset(&le, 0, sizeof le);
        int f = find_posted(sc, channel_id, thread_ts, nonce, ts_out, &le);
        e->attempts += le.attempts;
        if (f == 1) {
            ocgw_slack_doubt(sc, NULL);
            memset(e->code, 0, sizeof e->code);
            e->message[0] = 0;
            e->retryable = 0;
            rc = OC_OK;
        } else if (f == 0) {
            ocgw_slack_doubt(sc, NULL);
        }
    } else {
        ocgw_slack_doubt(sc, NULL);
    }
    free(meta);
    return rc;
}
