/*
 * pipe.c -- pipelined posts: several message posts in flight at once on
 * one curl multi, driven by the caller's thread. Each post keeps every
 * rule of dg_discord_post_message: rate-limit permits (never waited for
 * here: a post whose permit is not there yet waits on its own timer while
 * the others go on), 429 retries, 5xx and transport retries with the
 * client's back-off, the call's time bound, the abort switch. Handles are
 * configured once; per attempt only the URL, the body and the remaining
 * time are set. See discord.h.
 */
#include "discord_int.h"

#include <time.h>

/* A post's request (dg_discord_post_prepare): its body is owned. */
struct dg_discord_post {
    char route[96];
    char url[256];
    char *json;
    size_t json_len;
};

typedef struct preq {
    int used;   /* 1: a post owns this entry */
    int active; /* its transfer is in the multi */
    uint64_t tag;
    dg_discord_post req; /* taken over from dg_discord_pipe_submit */
    int64_t deadline, not_before;
    int failures, n429;
    CURL *easy; /* configured once at pipe_new */
    dgd_xfer x;
    char cerr[CURL_ERROR_SIZE];
    dg_discord_err e;
} preq;

struct dg_discord_pipe {
    dg_discord *d;
    CURLM *multi;
    size_t cap, busy;
    preq *reqs;
    atomic_int woken; /* set by dg_discord_pipe_wakeup */
    int settled;      /* the last call ended on a curl_multi_perform that
                                  left nothing to read: the next may poll first */
};

/* Take route's permit without waiting. 1: taken; 0: not before *until
 * (monotonic ms; -1: when another request of the route ends); -1: aborted;
 * -2: out of memory. */
static int rl_try(dg_discord *d, const char *route, int64_t *until)
{
    pthread_mutex_lock(&d->mu);
    int rc = 0;
    int64_t now = dgh_mono_ms();
    if (dgh_aborted(&d->http)) {
        rc = -1;
    } else if (d->global_until > now) {
        *until = d->global_until;
    } else {
        dgd_route *r = dgd_route_get(d, route);
        if (!r) {
            rc = -2;
        } else if (!r->known) {
            if (r->inflight == 0) {
                r->inflight++;
                rc = 1;
            } else {
                *until = -1;
            }
        } else {
            if (r->remaining <= 0 && r->reset_at <= now)
                r->remaining = r->limit > 0 ? r->limit : 1;
            if (r->remaining > 0) {
                r->remaining--;
                r->inflight++;
                rc = 1;
            } else {
                *until = r->reset_at;
            }
        }
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

int dg_discord_pipe_new(dg_discord *d, size_t cap, dg_discord_pipe **out)
{
    *out = NULL;
    if (!d || cap == 0 || cap > 256)
        return DG_ERR_INVALID;
    dg_discord_pipe *p = calloc(1, sizeof *p);
    if (!p)
        return DG_ERR_NOMEM;
    p->d = d;
    p->cap = cap;
    p->reqs = calloc(cap, sizeof *p->reqs);
    p->multi = curl_multi_init();
    if (!p->reqs || !p->multi) {
        dg_discord_pipe_free(p);
        return DG_ERR_NOMEM;
    }
    curl_multi_setopt(p->multi, CURLMOPT_MAXCONNECTS, (long)cap + 2);
    for (size_t i = 0; i < cap; i++) {
        preq *q = &p->reqs[i];
        CURL *e = q->easy = curl_easy_init();
        if (!e) {
            dg_discord_pipe_free(p);
            return DG_ERR_NOMEM;
        }
        curl_easy_setopt(e, CURLOPT_PRIVATE, q);
        /* Every post here carries a nonce: a resend on a dead keep-alive
         * connection returns the first message, so reuse is safe (not
         * fresh). connect_ms is at most timeout_ms (dgh_limits_pick). */
        dgh_easy_setup(e, d->http.connect_ms, &q->x.body, dgd_on_header, &q->x, q->cerr, 0);
        curl_easy_setopt(e, CURLOPT_POST, 1L);
    }
    *out = p;
    return DG_OK;
}

/* Forget q's last answer; its buffer stays for the next one (no
 * allocation per post) unless an unusually large answer grew it. */
static void xfer_clear(dgd_xfer *x)
{
    dgh_body_clear(&x->body);
    memset(&x->h, 0, sizeof x->h);
}

/* End q: its result into *done; the entry is free again. */
static void preq_finish(dg_discord_pipe *p, preq *q, int rc, char *message_id,
                        dg_discord_done *done)
{
    if (q->active) {
        curl_multi_remove_handle(p->multi, q->easy);
        q->active = 0;
    }
    dgh_scrub(&p->d->http, q->e.message);
    done->tag = q->tag;
    done->rc = rc;
    done->message_id = message_id;
    done->err = q->e;
    free(q->req.json);
    q->req.json = NULL;
    xfer_clear(&q->x);
    q->used = 0;
    p->busy--;
}

void dg_discord_pipe_free(dg_discord_pipe *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->reqs && i < p->cap; i++) {
        preq *q = &p->reqs[i];
        if (q->active) {
            curl_multi_remove_handle(p->multi, q->easy);
            dgd_rl_release(p->d, q->req.route, NULL, 0, 0, 0);
        }
        free(q->req.json);
        dgh_body_free(&q->x.body);
        if (q->easy)
            curl_easy_cleanup(q->easy);
    }
    free(p->reqs);
    if (p->multi)
        curl_multi_cleanup(p->multi);
    free(p);
}

size_t dg_discord_pipe_busy(const dg_discord_pipe *p)
{
    return p ? p->busy : 0;
}

void dg_discord_pipe_wakeup(dg_discord_pipe *p)
{
#if LIBCURL_VERSION_NUM >= 0x074400
    if (p) {
        atomic_store(&p->woken, 1);
        curl_multi_wakeup(p->multi);
    }
#else
    if (p)
        atomic_store(&p->woken, 1);
#endif
}

int dg_discord_post_prepare(const dg_discord *d, const char *channel_id, const char *content,
                            const char *const *mention_ids, size_t n_mentions, const char *nonce,
                            dg_discord_post **out, dg_discord_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    *out = NULL;
    if (!d || !nonce)
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0,
                           "post message: a pipelined post needs a "
                           "nonce");
    dg_discord_post *post = malloc(sizeof *post);
    if (!post)
        return dgd_set_err(err, DG_ERR_NOMEM, 0, 1, "post message: out of memory");
    int rc = dgd_post_body(channel_id, content, mention_ids, n_mentions, nonce, &post->json, err);
    if (rc != DG_OK) {
        free(post);
        return rc;
    }
    post->json_len = strlen(post->json);
    char path[64];
    snprintf(path, sizeof path, "/channels/%s/messages", channel_id);
    dgd_route_key("POST", path, post->route, sizeof post->route);
    snprintf(post->url, sizeof post->url, "%s%s", d->http.base, path);
    *out = post;
    return DG_OK;
}

void dg_discord_post_free(dg_discord_post *post)
{
    if (post) {
        free(post->json);
        free(post);
    }
}

int dg_discord_pipe_submit(dg_discord_pipe *p, uint64_t tag, dg_discord_post *post,
                           dg_discord_err *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!p || !post) {
        dg_discord_post_free(post);
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0, "post message: no pipe or no post");
    }
    if (p->busy == p->cap) {
        dg_discord_post_free(post);
        return dgd_set_err(err, DG_ERR_INVALID, 0, 1, "post message: the pipe is full");
    }
    preq *q = NULL;
    for (size_t i = 0; i < p->cap && !q; i++)
        if (!p->reqs[i].used)
            q = &p->reqs[i];
    q->used = 1;
    q->active = 0;
    q->tag = tag;
    q->req = *post; /* the body with it */
    free(post);
    int64_t now = dgh_mono_ms();
    q->deadline = now + p->d->http.timeout_ms;
    q->not_before = now;
    q->failures = q->n429 = 0;
    memset(&q->e, 0, sizeof q->e);
    xfer_clear(&q->x);
    p->busy++;
    return DG_OK;
}

int dg_discord_pipe_post(dg_discord_pipe *p, uint64_t tag, const char *channel_id,
                         const char *content, const char *const *mention_ids, size_t n_mentions,
                         const char *nonce, dg_discord_err *err)
{
    if (!p) {
        if (err)
            memset(err, 0, sizeof *err);
        return dgd_set_err(err, DG_ERR_INVALID, 0, 0, "post message: no pipe");
    }
    dg_discord_post *post = NULL;
    int rc = dg_discord_post_prepare(p->d, channel_id, content, mention_ids, n_mentions, nonce,
                                     &post, err);
    return rc == DG_OK ? dg_discord_pipe_submit(p, tag, post, err) : rc;
}

/* Start q's next attempt if it is due and has its permit; otherwise
 * push its timer. Returns 1 when q ended (result in *done). */
static int preq_start(dg_discord_pipe *p, preq *q, int64_t now, dg_discord_done *done)
{
    dg_discord *d = p->d;
    int64_t until = 0;
    int r = rl_try(d, q->req.route, &until);
    if (r == -1) {
        dgd_aborted_err(&q->e, q->req.route);
        preq_finish(p, q, DG_ERR_IO, NULL, done);
        return 1;
    }
    if (r == -2) {
        dgd_set_err(&q->e, DG_ERR_NOMEM, 0, 1, "out of memory for rate-limit state");
        preq_finish(p, q, DG_ERR_NOMEM, NULL, done);
        return 1;
    }
    if (r == 0) {
        if (until > q->deadline) {
            q->e.retry_after_ms = (long)(until - now);
            dgd_set_err(&q->e, DG_ERR_IO, q->e.http_status, 1,
                        "rate limited: %s is held back for another %lld ms, longer than this call "
                        "may wait; try again later",
                        q->req.route, (long long)(until - now));
            preq_finish(p, q, DG_ERR_IO, NULL, done);
            return 1;
        }
        if (until < 0 && now >= q->deadline) {
            dgd_set_err(&q->e, DG_ERR_IO, 0, 1,
                        "timed out: %s waited for another request on a "
                        "route whose bucket is not known yet; try again later",
                        q->req.route);
            preq_finish(p, q, DG_ERR_IO, NULL, done);
            return 1;
        }
        q->not_before = until < 0 ? now + 2 : until;
        return 0;
    }
    long tmo = (long)(q->deadline - now);
    if (tmo <= 0) {
        dgd_rl_release(d, q->req.route, NULL, 0, 0, 0);
        dgd_set_err(&q->e, DG_ERR_IO, q->e.http_status, 1,
                    "timed out: %s got no answer within %ld ms; try again later", q->req.route,
                    d->http.timeout_ms);
        preq_finish(p, q, DG_ERR_IO, NULL, done);
        return 1;
    }
    q->cerr[0] = '\0';
    xfer_clear(&q->x);
    curl_easy_setopt(q->easy, CURLOPT_URL, q->req.url);
    curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, q->req.json);
    curl_easy_setopt(q->easy, CURLOPT_POSTFIELDSIZE, (long)q->req.json_len);
    /* "Expect:" only where a curl may add "Expect: 100-continue" and wait
     * up to a second for the server's 100: bodies over 1 KB in older curl
     * (the curl of Debian 12 does it only past 1 MB, which no post reaches). */
    curl_easy_setopt(q->easy, CURLOPT_HTTPHEADER,
                     q->req.json_len >= 1024 ? d->http.headers : d->short_headers);
    curl_easy_setopt(q->easy, CURLOPT_TIMEOUT_MS, tmo);
    if (curl_multi_add_handle(p->multi, q->easy) != CURLM_OK) {
        dgd_rl_release(d, q->req.route, NULL, 0, 0, 0);
        dgd_set_err(&q->e, DG_ERR_IO, 0, 1, "%s could not be started", q->req.route);
        preq_finish(p, q, DG_ERR_IO, NULL, done);
        return 1;
    }
    q->active = 1;
    return 0;
}

/* A retry of q after a failure: wait, or end q when no time is left.
 * Returns 1 when q ended. */
static int preq_retry(dg_discord_pipe *p, preq *q, long http, const char *why,
                      dg_discord_done *done)
{
    dg_discord *d = p->d;
    if (q->failures >= d->http.max_attempts) {
        if (http)
            dgd_set_err(&q->e, DG_ERR_IO, http, 1,
                        "Discord answered %ld to %s %d times: %s; try "
                        "again later",
                        http, q->req.route, q->failures, why);
        else
            dgd_set_err(&q->e, DG_ERR_IO, 0, 1,
                        "no answer from Discord for %s after %d attempt%s: "
                        "%s",
                        q->req.route, q->e.attempts, q->e.attempts == 1 ? "" : "s", why);
        preq_finish(p, q, DG_ERR_IO, NULL, done);
        return 1;
    }
    long wait = dgh_backoff_ms(&d->http, q->failures);
    if (http)
        dgh_log(&d->http, DG_LOG_WARN, "discord: %s answered %ld (%s); retry %d of %d in %ld ms",
                q->req.route, http, why, q->failures, d->http.max_attempts - 1, wait);
    else
        dgh_log(&d->http, DG_LOG_WARN, "discord: %s failed (%s); retry %d of %d in %ld ms",
                q->req.route, why, q->failures, d->http.max_attempts - 1, wait);
    if (dgh_mono_ms() + wait >= q->deadline) {
        dgd_set_err(&q->e, DG_ERR_IO, http, 1,
                    "timed out: %s failed (%s) and no time is left in "
                    "its %ld ms to retry",
                    q->req.route, why, d->http.timeout_ms);
        preq_finish(p, q, DG_ERR_IO, NULL, done);
        return 1;
    }
    q->not_before = dgh_mono_ms() + wait;
    return 0;
}

/* Skip one JSON string at *p (at its opening quote); 0 or -1. */
static int skip_string(const char **p, const char *end)
{
    const char *s = *p + 1;
    while (s < end && *s != '"')
        s += *s == '\\' ? 2 : 1;
    if (s >= end)
        return -1;
    *p = s + 1;
    return 0;
}

/*
 * The "id" member of a JSON object's top level, copied into out, without
 * building the object: a posted message comes back as ~1.5 KB of nested
 * author, member and mention objects, and parsing and freeing them all was
 * most of the dispatcher's CPU per message. Nested
 * values are skipped by bracket depth, strings by their quotes. Returns 0,
 * or -1 when the text is not an object with a plain (escape-free) string
 * id: the caller then parses it properly.
 */
static int top_level_id(const char *s, size_t len, char *out, size_t out_len)
{
    const char *p = s, *end = s + len;
    while (p < end && strchr(" \t\r\n", *p))
        p++;
    if (p >= end || *p++ != '{')
        return -1;
    int depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            const char *k = p;
            if (skip_string(&p, end) != 0)
                return -1;
            if (depth > 0)
                continue;
            size_t kl = (size_t)(p - k);
            while (p < end && strchr(" \t\r\n", *p))
                p++;
            if (p >= end || *p != ':')
                continue; /* a string value of the top level, not a key */
            p++;
            while (p < end && strchr(" \t\r\n", *p))
                p++;
            if (kl == 4 && !memcmp(k, "\"id\"", 4) && p < end && *p == '"') {
                const char *v = p + 1, *ve = memchr(v, '"', (size_t)(end - v));
                if (!ve || memchr(v, '\\', (size_t)(ve - v)) || ve == v ||
                    (size_t)(ve - v) >= out_len)
                    return -1;
                memcpy(out, v, (size_t)(ve - v));
                out[ve - v] = '\0';
                return 0;
            }
            continue;
        }
        if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']') {
            if (depth-- == 0)
                return -1; /* the object ended without an id */
        }
        p++;
    }
    return -1;
}

/* q's transfer ended with cc. Returns 1 when q ended (result in *done). */
static int preq_done(dg_discord_pipe *p, preq *q, CURLcode cc, dg_discord_done *done)
{
    dg_discord *d = p->d;
    curl_multi_remove_handle(p->multi, q->easy);
    q->active = 0;
    long http = 0;
    if (cc == CURLE_OK)
        curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &http);
    q->e.attempts++;
    long ra = 0;
    int global = 0;
    if (cc == CURLE_OK && http == 429)
        ra = dgd_retry_after_of(&q->x, &global);
    dgd_rl_release(d, q->req.route, cc == CURLE_OK ? &q->x.h : NULL, cc == CURLE_OK ? http : 0, ra,
                   global);
    if (cc != CURLE_OK) {
        q->failures++;
        const char *why = dgh_reason(cc, &q->x.body, q->cerr);
        if (cc == CURLE_OPERATION_TIMEDOUT || dgh_mono_ms() >= q->deadline) {
            dgd_set_err(&q->e, DG_ERR_IO, 0, 1,
                        "timed out: %s got no answer within %ld ms (%s); try again later",
                        q->req.route, d->http.timeout_ms, why);
            preq_finish(p, q, DG_ERR_IO, NULL, done);
            return 1;
        }
        char whyc[CURL_ERROR_SIZE];
        snprintf(whyc, sizeof whyc, "%s", why);
        return preq_retry(p, q, 0, whyc, done);
    }
    q->e.http_status = http;
    if (http >= 200 && http < 300) {
        char idb[72];
        const char *id = NULL;
        json_t *j = NULL;
        if (q->x.body.len && top_level_id(q->x.body.s, q->x.body.len, idb, sizeof idb) == 0)
            id = idb;
        else if (q->x.body.len)
            id = json_string_value(
                json_object_get(j = json_loadb(q->x.body.s, q->x.body.len, 0, NULL), "id"));
        char *mid = id ? strdup(id) : NULL;
        json_decref(j);
        if (!mid) {
            dgd_set_err(&q->e, DG_ERR_IO, http, 1,
                        id ? "post message: out of memory"
                           : "post message: Discord's answer has no "
                             "message id");
            preq_finish(p, q, DG_ERR_IO, NULL, done);
            return 1;
        }
        q->e.message[0] = '\0';
        preq_finish(p, q, DG_OK, mid, done);
        return 1;
    }
    char dmsg[400];
    dgd_discord_message(d, &q->x, http, dmsg, sizeof dmsg, &q->e.discord_code);
    if (http == 429) {
        q->n429++;
        dgh_log(&d->http, DG_LOG_DEBUG, "discord: %s rate limited (%s), waiting %ld ms",
                q->req.route, global ? "global" : "route", ra);
        if (q->n429 >= DGD_MAX_429_PER_CALL) {
            dgd_set_err(&q->e, DG_ERR_IO, http, 1,
                        "rate limited: %s answered 429 %d times in a row; try again later",
                        q->req.route, q->n429);
            preq_finish(p, q, DG_ERR_IO, NULL, done);
            return 1;
        }
        q->not_before = dgh_mono_ms(); /* the permit waits retry_after */
        return 0;
    }
    if (http >= 500) {
        q->failures++;
        return preq_retry(p, q, http, dmsg, done);
    }
    int rc = dgd_set_err(&q->e, dgd_status_rc(http), http, 0, "Discord refused %s with %ld: %s%s",
                         q->req.route, http, dmsg,
                         http == 403   ? "; give the bot that permission in the channel or guild"
                         : http == 401 ? "; check the bot token"
                                       : "");
    if (q->e.discord_code) {
        size_t used = strlen(q->e.message);
        snprintf(q->e.message + used, sizeof q->e.message - used, " (Discord code %d)",
                 q->e.discord_code);
    }
    preq_finish(p, q, rc, NULL, done);
    return 1;
}

size_t dg_discord_pipe_run(dg_discord_pipe *p, long wait_ms, dg_discord_done *done)
{
    if (!p || p->busy == 0)
        return 0;
    dg_discord *d = p->d;
    int64_t until = dgh_mono_ms() + (wait_ms > 0 ? wait_ms : 0);
    size_t nd = 0;
    /* Called again to wait right after a call whose perform left the
     * transfers settled, nothing started since: poll before performing
     * again. A perform there only found nothing to read (one system call
     * and a pass over curl's state per post). */
    int skip_perform = p->settled && wait_ms > 0;
    p->settled = 0;
    for (;;) {
        int64_t now = dgh_mono_ms(), wake = until;
        int ab = dgh_aborted(&d->http);
        for (size_t i = 0; i < p->cap; i++) {
            preq *q = &p->reqs[i];
            if (!q->used || q->active)
                continue;
            if (ab) {
                dgd_aborted_err(&q->e, q->req.route);
                preq_finish(p, q, DG_ERR_IO, NULL, &done[nd++]);
            } else if (q->not_before <= now) {
                nd += (size_t)preq_start(p, q, now, &done[nd]);
                skip_perform = 0; /* a transfer to put on the wire */
            }
            if (q->used && !q->active && q->not_before < wake)
                wake = q->not_before;
        }
        if (!skip_perform || ab || nd) {
            int running = 0;
            curl_multi_perform(p->multi, &running);
            CURLMsg *m;
            int left;
            while ((m = curl_multi_info_read(p->multi, &left))) {
                if (m->msg != CURLMSG_DONE)
                    continue;
                preq *q = NULL;
                curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&q);
                if (q && q->active)
                    nd += (size_t)preq_done(p, q, m->data.result, &done[nd]);
            }
        }
        skip_perform = 0;
        if (ab) {
            /* Transfers in flight are abandoned; their posts stay unsent. */
            for (size_t i = 0; i < p->cap; i++) {
                preq *q = &p->reqs[i];
                if (q->used && q->active) {
                    dgd_rl_release(d, q->req.route, NULL, 0, 0, 0);
                    dgd_aborted_err(&q->e, q->req.route);
                    preq_finish(p, q, DG_ERR_IO, NULL, &done[nd++]);
                }
            }
        }
        if (nd || p->busy == 0 || atomic_exchange(&p->woken, 0))
            return nd;
        now = dgh_mono_ms();
        if (now >= until) {
            p->settled = 1; /* performed just now, nothing ended, nothing started after */
            return 0;
        }
        /* Any not-yet-started post that became due goes round again. */
        int due = 0;
        for (size_t i = 0; i < p->cap && !due; i++)
            due = p->reqs[i].used && !p->reqs[i].active && p->reqs[i].not_before <= now;
        if (due)
            continue;
        int64_t t = (wake < until ? wake : until) - now;
        if (t > DGH_POLL_MS)
            t = DGH_POLL_MS;
        if (t < 0)
            t = 0;
        curl_multi_poll(p->multi, NULL, 0, (int)t, NULL);
    }
}
