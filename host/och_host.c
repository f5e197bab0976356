/*
 * och_host.c -- life cycle of an och_host, the choice of its log sink, and
 * the record of discovered plugins.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "och_internal.h"

void och_host_set_log(och_host *h, och_log_fn fn, void *user, int min_level)
{
    if (!h)
        return;
    h->log_fn = fn ? fn : och_log_stderr;
    h->log_user = fn ? user : NULL;
    h->log_min = min_level;
}

och_host *och_host_new(void)
{
    och_host *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->log_fn = och_log_stderr;
    h->log_min = OC_LOG_INFO;
    if (pthread_rwlock_init(&h->reg_lock, NULL) != 0) {
        free(h);
        return NULL;
    }
    if (pthread_mutex_init(&h->sess_mu, NULL) != 0) {
        pthread_rwlock_destroy(&h->reg_lock);
        free(h);
        return NULL;
    }
    return h;
}

static void plugin_record_free(och_plugin *p)
{
    free(p->id);
    free(p->dir);
    free(p->version);
    free(p->reason);
    free(p->library);
    json_decref(p->manifest);
    free(p);
}

void och_host_free(och_host *h)
{
    if (!h)
        return;
    /* Loaded plugins, newest first. Their threads may still call host
     * functions until their shutdown returns, so the registries and the
     * session table stay intact through this loop. */
    for (size_t k = h->n_loaded; k-- > 0;) {
        for (size_t i = 0; i < h->n_plugins; i++) {
            och_plugin *p = h->plugins[i];
            if (p->state != OCH_PLUGIN_LOADED || p->load_index != k)
                continue;
            och_log(h, OC_LOG_DEBUG, NULL, "shutting down plugin %s", p->id);
            atomic_store(&p->active, 0);
            p->table->shutdown(p->state_ptr);
            p->state_ptr = NULL;
        }
    }
    /* The tool structs and names live in the plugins' memory: forget them
     * before the libraries go. */
    och_tools_free(h);
    och_hooks_free(h);
    for (size_t k = h->n_loaded; k-- > 0;) {
        for (size_t i = 0; i < h->n_plugins; i++) {
            och_plugin *p = h->plugins[i];
            if (p->state == OCH_PLUGIN_LOADED && p->load_index == k && p->dl) {
                dlclose(p->dl);
                p->dl = NULL;
            }
        }
    }
    for (size_t i = 0; i < h->n_plugins; i++)
        plugin_record_free(h->plugins[i]);
    free(h->plugins);
    och_sessions_free(h);
    och_config_free(h);
    pthread_rwlock_destroy(&h->reg_lock);
    pthread_mutex_destroy(&h->sess_mu);
    free(h);
}

const char *och_plugin_state_name(och_plugin_state state)
{
    switch (state) {
    case OCH_PLUGIN_LOADED: return "loaded";
    case OCH_PLUGIN_DUPLICATE: return "duplicate";
    case OCH_PLUGIN_DENIED: return "denied";
    case OCH_PLUGIN_NOT_ALLOWED: return "not-allowed";
    case OCH_PLUGIN_DISABLED: return "disabled";
    case OCH_PLUGIN_REFUSED: return "refused";
    case OCH_PLUGIN_FAILED: return "failed";
    }
    return "unknown";
}

size_t och_plugin_count(const och_host *h)
{
    return h ? h->n_plugins : 0;
}

int och_plugin_get(const och_host *h, size_t i, och_plugin_info *out)
{
    if (!h || !out || i >= h->n_plugins)
        return OC_ERR_NOT_FOUND;
    const och_plugin *p = h->plugins[i];
    out->id = p->id;
    out->dir = p->dir;
    out->version = p->version;
    out->state = p->state;
    out->reason = p->state == OCH_PLUGIN_LOADED ? NULL : p->reason;
    return OC_OK;
}

int och_plugin_state_of(const och_host *h, const char *id)
{
    if (!h || !id)
        return -1;
    for (size_t i = 0; i < h->n_plugins; i++)
        if (h->plugins[i]->id && strcmp(h->plugins[i]->id, id) == 0)
            return (int)h->plugins[i]->state;
    return -1;
}
