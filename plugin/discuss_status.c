/*
 * discuss_status.c -- reading discussions for the status and list tools and
 * the operator's CLI (discuss_status.h). One short read transaction each.
 */
#include <assert.h>
#include "discuss_status.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "dirigent.h"
#include "scope.h"
#include "store_discuss.h"
#include "store_discuss_index.h"

void dg_discussion_info_clear(dg_discussion_info *i)
{
    if (!i)
        return;
    dg_discussion_clear(&i->d);
    free(i->channel_name);
    dg_turn_view_clear(&i->turn);
    memset(i, 0, sizeof *i);
}

void dg_discussion_infos_free(dg_discussion_info *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        dg_discussion_info_clear(&v[i]);
    free(v);
}

int dg_discussion_has_member(const dg_discussion *d, const char *agent_id)
{
    if (!agent_id)
        return 0;
    for (size_t i = 0; i < d->n_turn_order; i++)
        if (strcmp(d->turn_order[i], agent_id) == 0)
            return 1;
    return 0;
}

int dg_discussion_info_load_locked(dg_store *st, const dg_config *cfg, const char *channel_id,
                                   int64_t now_ms, dg_discussion_info *out)
{
    assert(dg_store_held(st));
    memset(out, 0, sizeof *out);
    int rc = dg_store_discussion_by_channel(st, channel_id, &out->d);
    if (rc == DG_OK)
        rc = dg_store_discussion_name(st, out->d.id, &out->channel_name);
    dg_scope sc;
    if (rc == DG_OK)
        rc = dg_scope_conversation(channel_id, &sc);
    if (rc == DG_OK)
        rc = dg_turn_view_load(st, cfg, &sc, now_ms, &out->turn);
    dg_cost_filter f = {.channel_id = channel_id};
    if (rc == DG_OK)
        rc = dg_store_cost_sum(st, &f, &out->cost);
    out->now_ms = now_ms;
    if (rc != DG_OK)
        dg_discussion_info_clear(out);
    return rc;
}

int dg_discuss_status(dg_plugin *p, const dg_caller *caller, int64_t discussion_id,
                      const char *channel_id, dg_discussion_info *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    int named = discussion_id > 0 || channel_id;
    const char *own = caller ? caller->channel_id : NULL;
    if (!named && !own)
        return dg_fail(err, err_len, DG_ERR_NOT_FOUND,
                       "this call has no channel; pass discussionId or channelId of the "
                       "discussion you want");
    if (dg_store_begin(p->store) != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO,
                       "the plugin's state store is busy or failing; "
                       "try again");
    char *by_id = NULL;
    int rc = DG_OK;
    if (discussion_id > 0)
        rc = dg_store_discussion_channel_of(p->store, discussion_id, &by_id);
    const char *channel = by_id ? by_id : channel_id ? channel_id : own;
    if (rc == DG_OK)
        rc = dg_discussion_info_load_locked(p->store, &p->cfg, channel, dg_now_ms(p), out);
    dg_store_commit(p->store);
    if (rc == DG_ERR_NOT_FOUND) {
        if (discussion_id > 0)
            dg_fail(err, err_len, rc,
                    "there is no discussion %lld; discussion_list shows "
                    "yours with their ids",
                    (long long)discussion_id);
        else
            dg_fail(err, err_len, rc, "channel %s is not a discussion channel; %s", channel,
                    named
                        ? "discussion_list shows your discussions"
                        : "call this from a discussion channel, or pass discussionId or channelId");
    } else if (rc != DG_OK) {
        dg_fail(err, err_len, rc == DG_ERR_NOMEM ? rc : DG_ERR_IO,
                "reading the discussion failed (%s); try again", dg_status_name(rc));
    } else if (named && !dg_discussion_has_member(&out->d, caller ? caller->agent_id : NULL)) {
        rc = dg_fail(err, err_len, DG_ERR_DENIED,
                     "discussion %lld is not yours: only its initiator and participants may "
                     "read its status; discussion_list shows the ones you are part of",
                     (long long)out->d.id);
    }
    free(by_id);
    if (rc != DG_OK)
        dg_discussion_info_clear(out);
    return rc;
}

int dg_discuss_list(dg_plugin *p, const dg_caller *caller, size_t offset, size_t limit,
                    dg_discussion_info **out, size_t *n, int *more, char *err, size_t err_len)
{
    *out = NULL;
    *n = 0;
    *more = 0;
    if (!caller || !caller->agent_id || !*caller->agent_id)
        return dg_fail(err, err_len, DG_ERR_DENIED,
                       "this call carries no agent id, so there "
                       "are no discussions of yours to list");
    if (dg_store_begin(p->store) != DG_OK)
        return dg_fail(err, err_len, DG_ERR_IO,
                       "the plugin's state store is busy or failing; "
                       "try again");
    char **ch = NULL;
    size_t k = 0;
    int rc = dg_store_discussion_list(p->store, caller->agent_id, 0, offset, limit, &ch, &k, more);
    dg_discussion_info *v = rc == DG_OK && k ? calloc(k, sizeof *v) : NULL;
    if (rc == DG_OK && k && !v)
        rc = DG_ERR_NOMEM;
    int64_t now = dg_now_ms(p);
    for (size_t i = 0; rc == DG_OK && i < k; i++) {
        rc = dg_discussion_info_load_locked(p->store, &p->cfg, ch[i], now, &v[i]);
        if (rc == DG_OK)
            (*n)++;
    }
    dg_store_commit(p->store);
    for (size_t i = 0; i < k; i++)
        free(ch[i]);
    free(ch);
    if (rc != DG_OK) {
        dg_discussion_infos_free(v, *n);
        *n = 0;
        *more = 0;
        return dg_fail(err, err_len, rc == DG_ERR_NOMEM ? rc : DG_ERR_IO,
                       "listing your discussions failed (%s); try again", dg_status_name(rc));
    }
    *out = v;
    return DG_OK;
}
