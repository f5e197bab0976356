/*
 * och_sessions.c -- the host's session table: which sessions exist in which
 * channel, and their persistent provider/model overrides (what OpenClaw's
 * sessions.patch keeps in its session store).
 *
 * The table is a sorted array under sess_mu. With a state file, every
 * change is written through before the call returns, atomically (temp file,
 * fsync, rename, fsync of the folder): a host killed at any moment restarts
 * with either the old or the new table, never a torn one. A failed write
 * undoes the change in memory and returns OC_ERR_IO, so memory never claims
 * what the disk does not hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "och_internal.h"

#define STATE_VERSION 1

static void session_clear(och_session *s)
{
    free(s->key);
    free(s->agent_id);
    free(s->channel_id);
    free(s->thread_id);
    free(s->provider);
    free(s->model);
    memset(s, 0, sizeof *s);
}

void och_sessions_free(och_host *h)
{
    for (size_t i = 0; i < h->n_sessions; i++)
        session_clear(&h->sessions[i]);
    free(h->sessions);
    h->sessions = NULL;
    h->n_sessions = h->cap_sessions = 0;
    free(h->state_path);
    h->state_path = NULL;
}

/* Index of key, or the insertion point as -(i+1). Caller holds sess_mu. */
static long find(const och_host *h, const char *key)
{
    OCH_ASSERT_HELD((pthread_mutex_t *)&h->sess_mu);
    size_t lo = 0, hi = h->n_sessions;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(h->sessions[mid].key, key);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(long)lo - 1;
}

/* Inserts an empty session for key at position `at`; NULL when out of memory. */
static och_session *insert_at(och_host *h, size_t at, const char *key)
{
    if (dg_grow(&h->sessions, &h->cap_sessions, h->n_sessions, sizeof *h->sessions, 16))
        return NULL;
    char *k = strdup(key);
    if (!k)
        return NULL;
    memmove(&h->sessions[at + 1], &h->sessions[at], (h->n_sessions - at) * sizeof *h->sessions);
    h->n_sessions++;
    memset(&h->sessions[at], 0, sizeof *h->sessions);
    h->sessions[at].key = k;
    return &h->sessions[at];
}

static void remove_at(och_host *h, size_t at)
{
    session_clear(&h->sessions[at]);
    memmove(&h->sessions[at], &h->sessions[at + 1], (h->n_sessions - at - 1) * sizeof *h->sessions);
    h->n_sessions--;
}

/* ---- state file ------------------------------------------------------------------ */

static int set_opt(json_t *o, const char *k, const char *v)
{
    return v ? json_object_set_new(o, k, json_string(v)) : 0;
}

static json_t *table_json(const och_host *h)
{
    json_t *arr = json_array();
    json_t *root = json_pack("{s:i,s:o}", "version", STATE_VERSION, "sessions", arr);
    if (!root)
        return NULL;
    for (size_t i = 0; i < h->n_sessions; i++) {
        const och_session *s = &h->sessions[i];
        json_t *o = json_pack("{s:s}", "sessionKey", s->key);
        if (!o || set_opt(o, "agentId", s->agent_id) || set_opt(o, "channelId", s->channel_id) ||
            set_opt(o, "threadId", s->thread_id) || set_opt(o, "providerOverride", s->provider) ||
            set_opt(o, "modelOverride", s->model) ||
            (s->generation && json_object_set_new(o, "generation", json_integer(s->generation)))) {
            json_decref(o);
            json_decref(root);
            return NULL;
        }
        if (json_array_append_new(arr, o)) { /* steals o even on failure */
            json_decref(root);
            return NULL;
        }
    }
    return root;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int fsync_dir_of(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return -1;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(copy);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Writes the table to the state file; caller holds sess_mu. On failure
 * returns OC_ERR_IO / OC_ERR_NOMEM and a reason in why. */
static int save(const och_host *h, char *why, size_t why_len)
{
    OCH_ASSERT_HELD((pthread_mutex_t *)&h->sess_mu);
    if (!h->state_path)
        return OC_OK;
    json_t *root = table_json(h);
    char *text = root ? json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
    json_decref(root);
    char *tmp = dg_sprintf("%s.tmp.%ld", h->state_path, (long)getpid());
    if (!text || !tmp) {
        free(text);
        free(tmp);
        snprintf(why, why_len, "out of memory");
        return OC_ERR_NOMEM;
    }
    int rc = OC_ERR_IO;
    const char *step = "create";
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        step = "write";
        if (write_all(fd, text, strlen(text)) == 0 && write_all(fd, "\n", 1) == 0) {
            step = "fsync";
            if (fsync(fd) == 0) {
                step = "close";
                int c = close(fd);
                fd = -1;
                if (c == 0) {
                    step = "rename";
                    if (rename(tmp, h->state_path) == 0)
                        rc = OC_OK;
                }
            }
        }
    }
    if (rc) {
        snprintf(why, why_len, "cannot %s %s: %s", step, tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlink(tmp);
    } else if (fsync_dir_of(h->state_path) != 0) {
        /* The new file is in place (rename is atomic); only its durability
         * across a power cut is in doubt. Not a reason to undo the change. */
        och_log((och_host *)h, OC_LOG_WARN, NULL,
                "session state file %s: fsync of its folder "
                "failed: %s",
                h->state_path, strerror(errno));
    }
    free(text);
    free(tmp);
    return rc;
}

/* Persist after a change; on failure the caller undoes the change. */
static int persist(och_host *h, const char *what)
{
    char why[512];
    int rc = save(h, why, sizeof why);
    if (rc)
        och_log(h, OC_LOG_ERROR, NULL,
                "session state file %s not written (%s): %s; the change "
                "was undone",
                h->state_path, what, why);
    return rc;
}

static int dup_field(const json_t *o, const char *k, char **out, int required)
{
    const json_t *v = json_object_get(o, k);
    if (!v)
        return required ? -1 : 0;
    if (!json_is_string(v) || json_string_length(v) == 0)
        return -1;
    return (*out = strdup(json_string_value(v))) ? 0 : -1;
}

static int load_state(och_host *h, const char *path, char *err, size_t err_len)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, err_len,
                 "session state file %s: line %d column %d: %s; fix or remove the file (it is "
                 "never overwritten while it cannot be read)",
                 path, je.line, je.column, je.text);
        return OC_ERR_IO;
    }
    int rc = OC_OK;
    const json_t *ver = json_object_get(root, "version");
    const json_t *arr = json_object_get(root, "sessions");
    if (!json_is_integer(ver) || json_integer_value(ver) != STATE_VERSION || !json_is_array(arr)) {
        snprintf(err, err_len,
                 "session state file %s: expected {\"version\": %d, \"sessions\": [...]}; it "
                 "was written by another version or is not a state file",
                 path, STATE_VERSION);
        rc = OC_ERR_IO;
    }
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o) {
        if (rc)
            break;
        och_session s = {0};
        if (dup_field(o, "sessionKey", &s.key, 1) || dup_field(o, "agentId", &s.agent_id, 0) ||
            dup_field(o, "channelId", &s.channel_id, 0) ||
            dup_field(o, "threadId", &s.thread_id, 0) ||
            dup_field(o, "providerOverride", &s.provider, 0) ||
            dup_field(o, "modelOverride", &s.model, 0) || !s.provider != !s.model ||
            !s.agent_id != !s.channel_id) {
            snprintf(err, err_len,
                     "session state file %s: sessions[%zu] is malformed (sessionKey required; "
                     "agentId with channelId; providerOverride with modelOverride)",
                     path, i);
            session_clear(&s);
            rc = OC_ERR_IO;
            break;
        }
        json_t *gen = json_object_get(o, "generation");
        if (json_is_integer(gen) && json_integer_value(gen) > 0)
            s.generation = (long)json_integer_value(gen);
        long at = find(h, s.key);
        if (at >= 0) {
            snprintf(err, err_len, "session state file %s: sessions[%zu] repeats key %s", path, i,
                     s.key);
            session_clear(&s);
            rc = OC_ERR_IO;
            break;
        }
        och_session *slot = insert_at(h, (size_t)(-at - 1), s.key);
        if (!slot) {
            snprintf(err, err_len, "session state file %s: out of memory", path);
            session_clear(&s);
            rc = OC_ERR_NOMEM;
            break;
        }
        free(s.key);
        s.key = slot->key;
        *slot = s;
    }
    json_decref(root);
    return rc;
}

int och_host_set_state_file(och_host *h, const char *path, char *err, size_t err_len)
{
    char scratch[8];
    if (!err || !err_len) {
        err = scratch;
        err_len = sizeof scratch;
    }
    err[0] = '\0';
    if (!h || !path || !*path) {
        snprintf(err, err_len, "och_host_set_state_file: a non-empty path is required");
        return OC_ERR_INVALID;
    }
    pthread_mutex_lock(&h->sess_mu);
    int rc = OC_OK;
    struct stat st;
    /* Sessions touched before now stay; the file's are added to them. */
    if (stat(path, &st) == 0) {
        rc = load_state(h, path, err, err_len);
        if (!rc && !(h->state_path = strdup(path)))
            rc = OC_ERR_NOMEM;
    } else if (errno != ENOENT) {
        snprintf(err, err_len, "session state file %s: %s", path, strerror(errno));
        rc = OC_ERR_IO;
    } else if (!(h->state_path = strdup(path))) {
        rc = OC_ERR_NOMEM;
    } else {
        char why[512];
        if ((rc = save(h, why, sizeof why))) {
            snprintf(err, err_len,
                     "session state file %s cannot be created (%s); make its folder writable or "
                     "choose another path",
                     path, why);
        }
    }
    if (rc) {
        free(h->state_path);
        h->state_path = NULL;
    }
    pthread_mutex_unlock(&h->sess_mu);
    return rc;
}

/* ---- the table --------------------------------------------------------------------- */

/* NULL, or text jansson takes as a string: the session list and the state
 * file are JSON, so anything else could never be listed or written. */
static int utf8_or_null(const char *s)
{
    if (!s)
        return 1;
    json_t *j = json_string(s);
    json_decref(j);
    return j != NULL;
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int och_session_touch(och_host *h, const char *key, const char *agent_id, const char *channel_id,
                      const char *thread_id)
{
    if (!h || !key || !*key || !agent_id || !*agent_id || !channel_id || !*channel_id ||
        (thread_id && !*thread_id) || !utf8_or_null(key) || !utf8_or_null(agent_id) ||
        !utf8_or_null(channel_id) || !utf8_or_null(thread_id))
        return OC_ERR_INVALID;
    pthread_mutex_lock(&h->sess_mu);
    int rc = OC_OK;
    long at = find(h, key);
    och_session *s = at >= 0 ? &h->sessions[at] : NULL;
    if (s && same(s->agent_id, agent_id) && same(s->channel_id, channel_id) &&
        same(s->thread_id, thread_id))
        goto out; /* nothing new: no write */
    char *a = strdup(agent_id), *c = strdup(channel_id), *t = och_strdup(thread_id);
    if (!a || !c || (thread_id && !t)) {
        free(a);
        free(c);
        free(t);
        rc = OC_ERR_NOMEM;
        goto out;
    }
    int created = 0;
    if (!s) {
        at = -at - 1;
        if (!(s = insert_at(h, (size_t)at, key))) {
            free(a);
            free(c);
            free(t);
            rc = OC_ERR_NOMEM;
            goto out;
        }
        created = 1;
    }
    char *oa = s->agent_id, *oc = s->channel_id, *ot = s->thread_id;
    s->agent_id = a;
    s->channel_id = c;
    s->thread_id = t;
    if ((rc = persist(h, "touch"))) {
        if (created) {
            remove_at(h, (size_t)at);
        } else {
            s->agent_id = oa;
            s->channel_id = oc;
            s->thread_id = ot;
            free(a);
            free(c);
            free(t);
        }
        goto out;
    }
    free(oa);
    free(oc);
    free(ot);
out:
    pthread_mutex_unlock(&h->sess_mu);
    return rc;
}

int och_session_patch(och_host *h, const char *key, const char *provider, const char *model)
{
    if (!h || !key || !*key || !provider != !model || (provider && (!*provider || !*model)) ||
        !utf8_or_null(key) || !utf8_or_null(provider) || !utf8_or_null(model))
        return OC_ERR_INVALID;
    pthread_mutex_lock(&h->sess_mu);
    int rc = OC_OK;
    long at = find(h, key);
    och_session *s = at >= 0 ? &h->sessions[at] : NULL;
    if (!provider) {
        if (!s || !s->provider)
            goto out; /* nothing to clear */
    } else if (s && same(s->provider, provider) && same(s->model, model)) {
        goto out;
    }
    char *np = och_strdup(provider), *nm = och_strdup(model);
    if (provider && (!np || !nm)) {
        free(np);
        free(nm);
        rc = OC_ERR_NOMEM;
        goto out;
    }
    int created = 0;
    if (!s) {
        at = -at - 1;
        if (!(s = insert_at(h, (size_t)at, key))) {
            free(np);
            free(nm);
            rc = OC_ERR_NOMEM;
            goto out;
        }
        created = 1;
    }
    char *op = s->provider, *om = s->model;
    s->provider = np;
    s->model = nm;
    /* A key that was only ever patched and is now cleared holds nothing. */
    int drop = !s->provider && !s->agent_id;
    och_session saved = {0};
    if (drop) {
        saved = *s;
        memmove(&h->sessions[at], &h->sessions[at + 1],
                (h->n_sessions - (size_t)at - 1) * sizeof *h->sessions);
        h->n_sessions--;
    }
    if ((rc = persist(h, "session_patch"))) {
        if (drop) {
            memmove(&h->sessions[at + 1], &h->sessions[at],
                    (h->n_sessions - (size_t)at) * sizeof *h->sessions);
            h->n_sessions++;
            h->sessions[at] = saved;
            s = &h->sessions[at];
        }
        if (created) {
            remove_at(h, (size_t)at);
        } else {
            s->provider = op;
            s->model = om;
            free(np);
            free(nm);
        }
        goto out;
    }
    if (drop) {
        saved.provider = op;
        saved.model = om;
        session_clear(&saved);
    } else {
        free(op);
        free(om);
    }
out:
    pthread_mutex_unlock(&h->sess_mu);
    return rc;
}

int och_session_override(och_host *h, const char *key, char **provider, char **model)
{
    if (provider)
        *provider = NULL;
    if (model)
        *model = NULL;
    if (!h || !key || !provider || !model)
        return OC_ERR_INVALID;
    pthread_mutex_lock(&h->sess_mu);
    int rc = OC_ERR_NOT_FOUND;
    long at = find(h, key);
    if (at >= 0 && h->sessions[at].provider) {
        *provider = strdup(h->sessions[at].provider);
        *model = strdup(h->sessions[at].model);
        rc = OC_OK;
        if (!*provider || !*model) {
            free(*provider);
            free(*model);
            *provider = *model = NULL;
            rc = OC_ERR_NOMEM;
        }
    }
    pthread_mutex_unlock(&h->sess_mu);
    return rc;
}

json_t *och_sessions_list(och_host *h, const char *channel_id)
{
    json_t *arr = json_array();
    if (!arr || !h || !channel_id)
        return arr;
    pthread_mutex_lock(&h->sess_mu);
    for (size_t i = 0; i < h->n_sessions; i++) {
        const och_session *s = &h->sessions[i];
        if (!s->channel_id || strcmp(s->channel_id, channel_id) != 0)
            continue;
        json_t *o = json_pack("{s:s,s:s,s:s}", "sessionKey", s->key, "agentId", s->agent_id,
                              "channelId", s->channel_id);
        if (!o || set_opt(o, "threadId", s->thread_id)) {
            json_decref(o);
            json_decref(arr);
            arr = NULL;
            break;
        }
        if (json_array_append_new(arr, o)) { /* steals o even on failure */
            json_decref(arr);
            arr = NULL;
            break;
        }
    }
    pthread_mutex_unlock(&h->sess_mu);
    return arr;
}

/* ---- ABI 1.1: session_reset, run_abort ------------------------------------------------ */

int och_session_reset(och_host *h, const char *key)
{
    if (!h || !key || !*key)
        return OC_ERR_INVALID;
    pthread_mutex_lock(&h->sess_mu);
    long at = find(h, key);
    int rc = OC_ERR_NOT_FOUND;
    if (at >= 0) {
        h->sessions[at].generation++;
        if ((rc = persist(h, "session_reset")))
            h->sessions[at].generation--;
    }
    pthread_mutex_unlock(&h->sess_mu);
    return rc;
}

char *och_session_id(och_host *h, const char *key)
{
    if (!h || !key)
        return NULL;
    pthread_mutex_lock(&h->sess_mu);
    long at = find(h, key);
    long gen = at >= 0 ? h->sessions[at].generation : 0;
    pthread_mutex_unlock(&h->sess_mu);
    size_t len = strlen(key) + 24;
    char *id = malloc(len);
    if (id && gen)
        snprintf(id, len, "%s#%ld", key, gen);
    else if (id)
        snprintf(id, len, "%s", key);
    return id;
}

int och_run_begin(och_host *h, const char *key)
{
    if (!h || !key)
        return OC_ERR_INVALID;
    pthread_mutex_lock(&h->sess_mu);
    long at = find(h, key);
    if (at >= 0) {
        h->sessions[at].running = 1;
        h->sessions[at].abort_requested = 0;
    }
    pthread_mutex_unlock(&h->sess_mu);
    return at >= 0 ? OC_OK : OC_ERR_NOT_FOUND;
}

int och_run_end(och_host *h, const char *key)
{
    if (!h || !key)
        return 0;
    pthread_mutex_lock(&h->sess_mu);
    long at = find(h, key);
    int aborted = 0;
    if (at >= 0) {
        aborted = h->sessions[at].abort_requested;
        h->sessions[at].running = 0;
        h->sessions[at].abort_requested = 0;
    }
    pthread_mutex_unlock(&h->sess_mu);
    return aborted;
}

int och_run_abort(och_host *h, const char *key)
{
    if (!h || !key || !*key)
        return OC_ERR_INVALID;
    pthread_mutex_lock(&h->sess_mu);
    long at = find(h, key);
    int rc = at >= 0 && h->sessions[at].running ? OC_OK : OC_ERR_NOT_FOUND;
    if (rc == OC_OK)
        h->sessions[at].abort_requested = 1;
    pthread_mutex_unlock(&h->sess_mu);
    return rc;
}
