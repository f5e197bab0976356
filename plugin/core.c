/*
 * core.c -- building and freeing the plugin's core (dg_plugin).
 *
 * dg_core_new builds a dg_plugin step by step (config, templates, store,
 * Discord client, turn engine, the caller's handlers, outbox dispatcher,
 * turn timeouts); any failure unwinds what was built so far and leaves
 * nothing running. The entry point (hooks/entry.c) calls it from init.
 */
#include "turns_judge.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openclaw/plugin.h"
#include "status.h"
#include "core.h"
#include "dirigent.h"
#include "chat.h"
#include "discuss.h"
#include "seen_set.h"
#include "outbox.h"
#include "state_dir.h"
#include "store.h"
#include "summary.h"
#include "templates.h"
#include "turns_engine.h"

#ifndef DG_VERSION
#define DG_VERSION "0.0.0"
#endif

/* The calls every host has (host_calls.h); the others are optional. */
static int check_host(const dg_host_calls *host, char *err, size_t err_len)
{
    if (!host || !host->log || !host->sessions || !host->session_patch) {
        snprintf(err, err_len,
                 "dirigent: the host-call table lacks log, sessions or session_patch "
                 "(all three are required)");
        return DG_ERR_INVALID;
    }
    return DG_OK;
}

/* The chat clients log through the host like the rest of the plugin.
 * Called on whichever thread makes the request. */
static void discord_log(void *state, int level, const char *message)
{
    dg_log(state, level, "discord: %s", message);
}

static void slack_log(void *state, int level, const char *message)
{
    dg_log(state, level, "slack: %s", message);
}

void dg_core_free(dg_plugin *p)
{
    if (!p)
        return;
    dg_judge_free(p->judge); /* its worker applies verdicts through the engine */
    p->judge = NULL;
    dg_turns_stop(p->turns); /* its thread kicks the outbox */
    dg_outbox_stop(p->outbox);
    dg_outbox_stop(p->slack_outbox);
    dg_turns_free(p->turns);
    dg_chat_free(p->chat);
    dg_chat_free(p->slack);
    dg_store_close(p->store);
    dg_templates_free(p->templates);
    dg_summary_rules_free(p->summary_rules);
    dg_log_queue_free(p); /* after every thread that could queue a line */
    dg_config_free(&p->cfg);
    dg_seen_set_free(p->closed_seen);
    pthread_mutex_destroy(&p->inflight_mu); /* no tool call runs at shutdown */
    free(p);
}

/* The store the config names: PostgreSQL, or the SQLite file dbPath,
 * whose missing folder is created here (a folder as dbPath is refused) and
 * taken back when the store then cannot open. */
static int open_store(dg_plugin *p, char *err, size_t err_len)
{
    char *created = NULL;
    int rc;
    if (p->cfg.store_url) {
        if ((rc = dg_store_open(p->cfg.store_url, &p->store, err, err_len)))
            return rc;
    } else if ((rc = dg_state_dir_prepare_db(p->cfg.db_path, &created, err, err_len))) {
        return rc;
    } else if ((rc = dg_store_open(p->cfg.db_path, &p->store, err, err_len))) {
        dg_state_dir_undo_db(p->cfg.db_path, created);
        free(created);
        return rc;
    }
    if (created)
        dg_log(p, OC_LOG_INFO, "dirigent: created the folder %s for dbPath (mode 0700)", created);
    free(created);
    dg_log(p, OC_LOG_INFO,
           "dirigent: database %s, templates %s (relative paths are taken from "
           "%s: %s)",
           dg_store_where(p->store), p->cfg.templates_dir ? p->cfg.templates_dir : "built in",
           p->cfg.path_base_from, p->cfg.path_base);
    return DG_OK;
}

/* The lines that tell the operator what started, and what is missing. */
static void log_ready(dg_plugin *p)
{
    dg_log(p, OC_LOG_INFO,
           "dirigent %s ready: sessionPolicy=%s db=%s schema=%d (was %d) agents=%zu%s%s%s%s%s%s",
           DG_VERSION, dg_session_policy_name(p->cfg.session_policy), dg_store_where(p->store),
           dg_store_schema_version(), dg_store_opened_version(p->store), p->cfg.n_agents,
           p->cfg.has_discord ? " discord=" : "", p->cfg.has_discord ? p->cfg.discord_api_base : "",
           !p->cfg.has_discord      ? ""
           : p->cfg.moderator_token ? " moderator token set"
                                    : " moderator token not set (moderator silent)",
           p->cfg.has_slack ? " slack=" : "", p->cfg.has_slack ? p->cfg.slack_api_base : "",
           !p->cfg.has_slack              ? ""
           : p->cfg.slack_moderator_token ? " moderator token set"
                                          : " moderator token not set (moderator silent)");
    if (p->cfg.has_discord && !p->cfg.moderator_token)
        dg_log(p, OC_LOG_WARN,
               "dirigent: no Discord moderator token (discord.moderatorToken or env "
               "DIRIGENT_MODERATOR_TOKEN): moderator messages are queued and sent once a token "
               "is configured");
    if (p->cfg.has_slack && !p->cfg.slack_moderator_token)
        dg_log(p, OC_LOG_WARN,
               "dirigent: no Slack moderator token (env DIRIGENT_SLACK_MODERATOR_TOKEN, the "
               "moderator app's xoxb- token): moderator messages on Slack are queued and sent "
               "once a token is configured");
}

int dg_core_new(const dg_host_calls *host, const json_t *config, dg_core_attach_fn attach,
                void *attach_ctx, dg_plugin **out, char *err, size_t err_len)
{
    *out = NULL;
    int rc = check_host(host, err, err_len);
    if (rc)
        return rc;

    dg_plugin *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_len, "dirigent: out of memory");
        return DG_ERR_NOMEM;
    }
    p->host = *host;
    dg_set_clock(p, NULL, NULL);
    pthread_mutex_init(&p->inflight_mu, NULL);
    if ((rc = dg_log_queue_new(&p->logq)) || !(p->closed_seen = dg_seen_set_new())) {
        dg_log_queue_free(p);
        pthread_mutex_destroy(&p->inflight_mu);
        free(p);
        snprintf(err, err_len, "dirigent: out of memory");
        return DG_ERR_NOMEM;
    }

    if ((rc = dg_config_parse(config, &p->cfg, err, err_len)))
        goto fail;
    if ((rc = dg_templates_load(p->cfg.templates_dir, &p->templates, err, err_len)))
        goto fail;
    if (p->cfg.summary_template &&
        (rc = dg_summary_rules_load(p->cfg.summary_template, &p->summary_rules, err, err_len)))
        goto fail;
    if ((rc = open_store(p, err, err_len)))
        goto fail;
    if (p->cfg.has_discord && p->cfg.moderator_token) {
        dg_chat_options o = {
            .platform = DG_PLATFORM_DISCORD,
            .api_base = p->cfg.discord_api_base,
            .token = p->cfg.moderator_token,
            .space_id = p->cfg.discord_guild_id,
            .timeout_ms = p->cfg.discord_timeout_ms,
            .log = discord_log,
            .log_state = p,
        };
        if ((rc = dg_chat_new(&o, &p->chat, err, err_len)))
            goto fail;
    }
    if (p->cfg.has_slack && p->cfg.slack_moderator_token) {
        dg_chat_options o = {
            .platform = DG_PLATFORM_SLACK,
            .api_base = p->cfg.slack_api_base,
            .token = p->cfg.slack_moderator_token,
            .timeout_ms = p->cfg.slack_timeout_ms,
            .log = slack_log,
            .log_state = p,
        };
        if ((rc = dg_chat_new(&o, &p->slack, err, err_len)))
            goto fail;
    }
    if ((rc = dg_turns_new(p, &p->turns))) {
        snprintf(err, err_len, "dirigent: the turn engine could not start (%s)",
                 dg_status_name(rc));
        goto fail;
    }
    if ((rc = dg_judge_new(p, dg_turns_judge_apply, p->turns, &p->judge))) {
        snprintf(err, err_len, "dirigent: the judge could not start (%s)", dg_status_name(rc));
        goto fail;
    }
    if ((rc = attach(p, attach_ctx, err, err_len)))
        goto fail;
    if (p->chat && (rc = dg_outbox_start_on(p, p->chat, NULL, &p->outbox, err, err_len)))
        goto fail;
    if (p->slack && (rc = dg_outbox_start_on(p, p->slack, NULL, &p->slack_outbox, err, err_len)))
        goto fail;
    /* Effects owed by a previous run (session overrides) are re-driven by
     * the first hook or tool call: the host's session table is only ours to
     * patch once init has returned (dg_plugin_settle). */
    /* Turn timeouts apply even when no event comes (a hung speaker). */
    dg_turns_start(p->turns);

    log_ready(p);
    *out = p;
    return DG_OK;

fail:
    dg_core_free(p);
    /* Some steps (the dbPath folder, the config's path base) answer
     * DG_ERR_NOMEM without a text: the host must still get a reason. */
    if (!err[0])
        snprintf(err, err_len, "dirigent: %s while starting; start the gateway again",
                 rc == DG_ERR_NOMEM ? "out of memory" : dg_status_name(rc));
    return rc;
}

void dg_plugin_settle(dg_plugin *p)
{
    if (!p || atomic_load_explicit(&p->settled, memory_order_acquire))
        return;
    if (atomic_exchange(&p->settled, 1))
        return;
    if (dg_log_pump_start(p) != DG_OK)
        dg_log(p, OC_LOG_ERROR,
               "dirigent: the log pump thread could not start; lines of the "
               "plugin's own threads are delivered at shutdown only");
    dg_discuss_resume(p);
}
