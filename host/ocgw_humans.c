/*
 * ocgw_humans.c -- scripted humans: each posts the steps of its script in
 * order, a step with "after" once a matching message was seen. Where each
 * stands is kept in the state file ("humans"), so a restarted gateway goes
 * on where it stopped; each post carries a nonce of (human, step, channel),
 * so a resend after a crash is no duplicate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocgw.h"

static long next_step(const json_t *me)
{
    return (long)json_integer_value(json_object_get(me, "next"));
}

static json_t *human_state(ocgw *g, const ocgw_human *h)
{
    json_t *hs = ocgw_state_obj(&g->st, "humans");
    json_t *me = json_object_get(hs, h->id);
    if (!json_is_object(me)) {
        json_object_set_new(hs, h->id, json_pack("{s:i, s:{}}", "next", 0, "seen"));
        me = json_object_get(hs, h->id);
    }
    return me;
}

/* The steps whose "after" message was seen: step index -> the thread its
 * reply goes to. Borrowed from me. */
static json_t *seen_afters(json_t *me)
{
    json_t *seen = json_object_get(me, "seen");
    if (!json_is_object(seen)) {
        json_object_set_new(me, "seen", json_object());
        seen = json_object_get(me, "seen");
    }
    return seen;
}

void ocgw_humans_observe(ocgw *g, const ocgw_msg *m)
{
    for (size_t i = 0; i < g->cfg.n_humans; i++) {
        const ocgw_human *h = &g->cfg.humans[i];
        if (!h->local)
            continue; /* another gateway posts its script */
        json_t *me = human_state(g, h);
        json_t *seen = seen_afters(me);
        /* A step's trigger may arrive before the steps ahead of it are
         * posted (one poll brings both, or a post waits for a retry):
         * remembered, it is not missed. A message triggers one step, the
         * first whose trigger it matches. */
        for (long k = next_step(me); k < (long)h->n_steps; k++) {
            const ocgw_human_step *s = &h->steps[k];
            char key[24];
            snprintf(key, sizeof key, "%ld", k);
            if (!s->has_after || json_object_get(seen, key) ||
                !ocgw_match_msg(g, &s->after, m, NULL))
                continue;
            /* The thread a reply goes to: the message's own, or the one it
             * starts. */
            json_object_set_new(seen, key, json_string(m->thread_id ? m->thread_id : m->id));
            break;
        }
    }
}

int ocgw_humans_fire(ocgw *g)
{
    for (size_t i = 0; i < g->cfg.n_humans; i++) {
        const ocgw_human *h = &g->cfg.humans[i];
        if (!h->local)
            continue;
        json_t *me = human_state(g, h);
        long next;
        json_t *seen = seen_afters(me);
        while ((next = next_step(me)) < (long)h->n_steps) {
            const ocgw_human_step *s = &h->steps[next];
            char key[24];
            snprintf(key, sizeof key, "%ld", next);
            if (s->has_after && !json_object_get(seen, key))
                break;
            const char *ch = ocgw_channel_ref(g, s->channel);
            if (!ch)
                break; /* the channel is not known yet (a variable not bound) */
            char err[400];
            char *content = ocgw_subst(g, s->content, NULL, err, sizeof err);
            if (!content) {
                och_log(g->host, OC_LOG_ERROR, OCGW_SOURCE, "humans[%s].script[%ld]: %s; skipped",
                        h->id, next, err);
                json_object_set_new(me, "next", json_integer(next + 1));
                ocgw_save_state(g);
                continue;
            }
            json_t *ids = ocgw_user_mentions(content);
            const char *mention[100];
            size_t nm = 0, k;
            json_t *v;
            json_array_foreach(ids, k, v)
                if (nm < 100)
                    mention[nm++] = json_string_value(v);
            char nonce[26], idx[24];
            snprintf(idx, sizeof idx, "%ld", next);
            ocgw_nonce(nonce, 'h', h->id, idx, ch);
            dg_discord_err e;
            int rc;
            if (g->cfg.slack) {
                ocgw_slack_err se;
                const char *th =
                    s->in_thread ? json_string_value(json_object_get(seen, key)) : NULL;
                rc = ocgw_slack_post(h->sc, ch, th, content, nonce, NULL, &se);
                memset(&e, 0, sizeof e);
                e.attempts = se.attempts;
                e.retryable = se.retryable;
                snprintf(e.message, sizeof e.message, "%s", se.message);
            } else {
                rc = dg_discord_post_message(h->dc, ch, content, mention, nm, nonce, NULL, &e);
            }
            ocgw_rest_post(g, e.attempts, h->id);
            json_decref(ids);
            if (rc != OC_OK && e.retryable) {
                free(content);
                och_log(g->host, OC_LOG_WARN, OCGW_SOURCE, "human %s: post failed for now (%s)",
                        h->id, e.message);
                return 1;
            }
            if (rc == OC_OK) {
                char *line = ocgw_pretty(g, content, 50);
                ocgw_say(g, "[#%s] %s (scripted human) posts \"%s\"", ocgw_chan_label(g, ch), h->id,
                         line ? line : "");
                free(line);
                ocgw_state_count(&g->st, "humanPosts", 1);
            } else {
                ocgw_say(g, "[#%s] %s (human, scripted): %s refused the post: %s",
                         ocgw_chan_label(g, ch), h->id, g->cfg.slack ? "Slack" : "Discord",
                         e.message);
            }
            free(content);
            json_object_set_new(me, "next", json_integer(next + 1));
            ocgw_save_state(g);
            ocgw_maybe_die(g, "after-human");
        }
    }
    return 0;
}

int ocgw_humans_done(ocgw *g)
{
    for (size_t i = 0; i < g->cfg.n_humans; i++)
        if (g->cfg.humans[i].local &&
            next_step(human_state(g, &g->cfg.humans[i])) < (long)g->cfg.humans[i].n_steps)
            return 0;
    return 1;
}
