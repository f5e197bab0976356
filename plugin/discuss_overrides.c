/*
 * discuss_overrides.c -- the no-reply session overrides a closed
 * discussion channel owes: recorded in the closing transaction (or when a
 * session is first seen there), applied with session_patch after commit,
 * re-driven after a crash (dg_discuss_resume).
 */
#include "discuss_int.h"

/* ---- overrides ---------------------------------------------------------------- */

/* Apply every recorded, not yet applied override; mark the ones the host
 * took. Returns the number applied. Runs without holding the store lock
 * while calling the host. */
size_t discuss_apply_pending(dg_plugin *p)
{
    size_t applied_total = 0;
    for (;;) {
        char **keys = NULL;
        int64_t *ids = NULL;
        size_t n = 0;
        if (dg_store_begin(p->store) != DG_OK)
            return applied_total;
        int rc = dg_store_discussion_overrides_pending(p->store, OVERRIDE_BATCH, &keys, &ids, &n);
        dg_store_end(p->store, rc);
        if (rc != DG_OK || n == 0)
            return applied_total;
        size_t ok = 0;
        char *done = calloc(n, 1);
        for (size_t i = 0; done && i < n; i++) {
            /* Without a no-reply pair (a host with claim hooks) the closed
             * channel's runs are claimed: nothing to switch, the row is done. */
            int prc = !p->cfg.no_reply_provider
                          ? DG_OK
                          : p->host.session_patch(p->host.ctx, keys[i], p->cfg.no_reply_provider,
                                                  p->cfg.no_reply_model);
            if (prc == DG_OK) {
                done[i] = 1;
                ok++;
            } else {
                dg_log(p, OC_LOG_WARN,
                       "discussion: session_patch(%s) failed (%s); it is "
                       "retried at the next start",
                       keys[i], dg_status_name(prc));
            }
        }
        if (ok && dg_store_begin(p->store) == DG_OK) {
            int64_t now = dg_now_ms(p);
            int mrc = DG_OK;
            for (size_t i = 0; i < n && mrc == DG_OK; i++)
                if (done[i])
                    mrc = dg_store_discussion_override_applied(p->store, ids[i], keys[i], now);
            dg_store_end(p->store, mrc);
        }
        free(done);
        discuss_free_strv(keys, n);
        free(ids);
        applied_total += ok;
        /* Stop when a batch did not fully go through (the rest waits for the
         * next start) or when it was the last one. */
        if (ok < n || n < OVERRIDE_BATCH)
            return applied_total;
    }
}

void dg_discuss_resume(dg_plugin *p)
{
    if (!p || !p->store || !p->host.session_patch)
        return;
    size_t n = discuss_apply_pending(p);
    if (n)
        dg_log(p, OC_LOG_INFO,
               "discussion: re-applied %zu no-reply session override(s) owed "
               "by closed discussions",
               n);
    if (dg_store_begin(p->store) == DG_OK) {
        long removed = 0;
        dg_store_end(p->store, dg_store_tool_calls_prune(p->store, dg_now_ms(p) - TOOL_CALL_KEEP_MS,
                                                         &removed));
        if (removed)
            dg_log(p, OC_LOG_DEBUG, "discussion: forgot %ld old tool-call results", removed);
    }
}

void dg_discuss_session_seen(dg_plugin *p, const char *session_key, const char *agent_id,
                             const char *channel_id)
{
    if (!p || !session_key || !*session_key || !channel_id)
        return;
    /* A closed channel stays closed and an applied override stays
     * applied, so a session handled once is answered from memory, without
     * a write transaction or the store lock ingest needs. */
    if (dg_seen_set_has(p->closed_seen, session_key, channel_id))
        return;
    if (dg_store_begin(p->store) != DG_OK)
        return;
    int64_t id = 0;
    dg_discussion_status s = DG_DISCUSSION_NONE;
    int state = 0, rc = dg_store_discussion_probe(p->store, channel_id, &id, &s);
    if (rc == DG_OK && s == DG_DISCUSSION_CLOSED)
        rc = dg_store_discussion_override_state(p->store, id, session_key, &state);
    if (rc == DG_OK && s == DG_DISCUSSION_CLOSED && state == 0)
        rc = dg_store_discussion_override_add(p->store, id, session_key, agent_id, dg_now_ms(p),
                                              NULL);
    rc = dg_store_end(p->store, rc);
    if (rc != DG_OK) {
        dg_log(p, OC_LOG_ERROR, "discussion: recording session %s in channel %s failed (%s)",
               session_key, channel_id, dg_status_name(rc));
        return;
    }
    if (s != DG_DISCUSSION_CLOSED)
        return;
    if (state == 2) {
        dg_seen_set_add(p->closed_seen, session_key, channel_id); /* best effort: a cache */
        return;
    }
    int prc = !p->cfg.no_reply_provider
                  ? DG_OK
                  : p->host.session_patch(p->host.ctx, session_key, p->cfg.no_reply_provider,
                                          p->cfg.no_reply_model);
    if (prc != DG_OK) {
        dg_log(p, OC_LOG_WARN, "discussion: session_patch(%s) failed (%s); retried later",
               session_key, dg_status_name(prc));
        return;
    }
    if (dg_store_begin(p->store) != DG_OK)
        return;
    if (dg_store_discussion_override_applied(p->store, id, session_key, dg_now_ms(p)) != DG_OK)
        dg_store_rollback(p->store);
    else if (dg_store_commit(p->store) == DG_OK)
        dg_seen_set_add(p->closed_seen, session_key, channel_id); /* best effort: a cache */
    dg_log(p, OC_LOG_INFO,
           "discussion: session %s first seen in closed channel %s: "
           "routed to the no-reply model",
           session_key, channel_id);
}
