/*
 * discuss_ledger.c -- the tool-call ledger: a call with a toolCallId is
 * identified by (tool, toolCallId, fingerprint of caller and params); its
 * stored result answers a repeat, and a call in flight in this instance
 * (p->inflight) is not mistaken for the remains of a crash.
 */
#include "discuss_int.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

/* Hash one field: NULL and "" differ, and fields cannot run into each other
 * (the tool layer refuses strings with NUL bytes). */
static void fp_add(uint64_t *h, const char *s)
{
    *h = (*h ^ (s ? 's' : 'n')) * FNV_PRIME;
    for (; s && *s; s++)
        *h = (*h ^ (unsigned char)*s) * FNV_PRIME;
    *h = (*h ^ 0) * FNV_PRIME;
}

static void fp_add_count(uint64_t *h, size_t n)
{
    char num[24];
    snprintf(num, sizeof num, "%zu", n);
    fp_add(h, num);
}

static uint64_t fp_caller(const char *tool, const dg_caller *c)
{
    uint64_t h = FNV_OFFSET;
    fp_add(&h, tool);
    fp_add(&h, c->agent_id);
    fp_add(&h, c->session_key);
    fp_add(&h, c->channel_id);
    fp_add(&h, c->thread_id);
    return h;
}

static void idem_finish(discuss_idem *ic, const char *tool, const char *call_id, uint64_t h)
{
    ic->tool = tool;
    ic->call_id = call_id;
    ic->recovering = 0;
    snprintf(ic->fp, sizeof ic->fp, "%016llx", (unsigned long long)h);
    uint64_t m = FNV_OFFSET;
    fp_add(&m, call_id);
    fp_add(&m, ic->fp);
    snprintf(ic->marker, sizeof ic->marker, "dg-call:%016llx", (unsigned long long)m);
}

void discuss_idem_of_row(discuss_idem *ic, const char *tool, const char *call_id, const char *fp)
{
    uint64_t h = strtoull(fp, NULL, 16);
    idem_finish(ic, tool, call_id, h);
}

void discuss_idem_for_create(discuss_idem *ic, const dg_caller *c, const dg_channel_request *r)
{
    uint64_t h = fp_caller(TOOL_CREATE, c);
    fp_add(&h, r->name);
    fp_add(&h, r->topic);
    fp_add(&h, r->parent_id);
    fp_add_count(&h, r->n_participants);
    for (size_t i = 0; i < r->n_participants; i++)
        fp_add(&h, r->participants[i]);
    fp_add_count(&h, r->n_allowed_user_ids);
    for (size_t i = 0; i < r->n_allowed_user_ids; i++)
        fp_add(&h, r->allowed_user_ids[i]);
    fp_add(&h, r->callback_channel_id);
    fp_add(&h, r->discuss_guide);
    idem_finish(ic, TOOL_CREATE, c->tool_call_id, h);
}

void discuss_idem_for_callback(discuss_idem *ic, const dg_caller *c, const char *summary_path)
{
    uint64_t h = fp_caller(TOOL_CALLBACK, c);
    fp_add(&h, summary_path);
    idem_finish(ic, TOOL_CALLBACK, c->tool_call_id, h);
}

/* The recorded row of ic in a short transaction (caller clears *row). */
int discuss_idem_lookup(dg_plugin *p, const discuss_idem *ic, dg_tool_call_row *row)
{
    memset(row, 0, sizeof *row);
    if (dg_store_begin(p->store) != DG_OK)
        return DG_ERR_IO;
    int rc = dg_store_tool_call_get(p->store, ic->tool, ic->call_id, ic->fp, row);
    return dg_store_end(p->store, rc);
}

/*
 * Calls with a toolCallId in progress in this plugin instance
 * (p->inflight): an intent row of a call still running is not the remains
 * of a crash, and a repeat arriving meanwhile must not "recover" (and so
 * duplicate) it. A plugin's calls have all returned before its shutdown.
 */
struct dg_inflight {
    char *key;
    struct dg_inflight *next;
};
typedef struct dg_inflight inflight;

static char *inflight_key(const discuss_idem *ic)
{
    size_t n = strlen(ic->tool) + strlen(ic->call_id) + sizeof ic->fp + 3;
    char *k = malloc(n);
    if (k)
        snprintf(k, n, "%s\x1f%s\x1f%s", ic->tool, ic->call_id, ic->fp);
    return k;
}

/* DG_OK (claimed: release it), DG_ERR_CONFLICT (running), DG_ERR_NOMEM. */
int discuss_inflight_claim(dg_plugin *p, const discuss_idem *ic)
{
    inflight *e = calloc(1, sizeof *e);
    char *k = inflight_key(ic);
    if (!e || !k) {
        free(e);
        free(k);
        return DG_ERR_NOMEM;
    }
    pthread_mutex_lock(&p->inflight_mu);
    for (inflight *x = p->inflight; x; x = x->next) {
        if (strcmp(x->key, k) == 0) {
            pthread_mutex_unlock(&p->inflight_mu);
            free(e);
            free(k);
            return DG_ERR_CONFLICT;
        }
    }
    e->key = k;
    e->next = p->inflight;
    p->inflight = e;
    pthread_mutex_unlock(&p->inflight_mu);
    return DG_OK;
}

void discuss_inflight_release(dg_plugin *p, const discuss_idem *ic)
{
    char *k = inflight_key(ic);
    pthread_mutex_lock(&p->inflight_mu);
    for (inflight **pp = &p->inflight; k && *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->key, k) == 0) {
            inflight *e = *pp;
            *pp = e->next;
            free(e->key);
            free(e);
            break;
        }
    }
    pthread_mutex_unlock(&p->inflight_mu);
    free(k);
}
