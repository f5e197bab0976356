/*
 * och_config.c -- the `plugins` part of an OpenClaw-shaped host config.
 *
 * Strict on purpose: an unknown key or a wrong type inside `plugins` is an
 * error naming the key, because a typo in `enabled` or `deny` would
 * otherwise load (or hide) a plugin silently.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "och_internal.h"

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "something else";
}

static int fail(char *err, size_t err_len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t err_len, int rc, const char *fmt, ...)
{
    if (err && err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* Unknown keys of obj (named `where`) against a NULL-terminated list. */
static int check_keys(const json_t *obj, const char *where, const char *const *known, char *err,
                      size_t err_len)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        int ok = 0;
        for (size_t i = 0; known[i]; i++)
            if (strcmp(k, known[i]) == 0)
                ok = 1;
        if (!ok) {
            char list[256] = "";
            for (size_t i = 0; known[i]; i++) {
                strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
                strncat(list, known[i], sizeof list - strlen(list) - 1);
            }
            return fail(err, err_len, OC_ERR_INVALID,
                        "%s.%s: unknown key (known keys: %s); fix the spelling or remove it", where,
                        k, list);
        }
    }
    return OC_OK;
}

/* Copy an array of non-empty strings into *out (malloc'd array of malloc'd
 * strings). */
static int string_array(const json_t *arr, const char *where, const char *what, char ***out,
                        size_t *n_out, char *err, size_t err_len)
{
    if (!json_is_array(arr))
        return fail(err, err_len, OC_ERR_INVALID, "%s: expected an array of %s, got %s", where,
                    what, type_name(arr));
    size_t n = json_array_size(arr);
    char **v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return fail(err, err_len, OC_ERR_NOMEM, "%s: out of memory", where);
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(arr, i);
        if (!json_is_string(s) || json_string_length(s) == 0) {
            int rc = fail(err, err_len, OC_ERR_INVALID,
                          "%s[%zu]: expected %s (a non-empty string), got %s", where, i, what,
                          json_is_string(s) ? "an empty string" : type_name(s));
            for (size_t j = 0; j < i; j++)
                free(v[j]);
            free(v);
            return rc;
        }
        v[i] = strdup(json_string_value(s));
        if (!v[i]) {
            for (size_t j = 0; j < i; j++)
                free(v[j]);
            free(v);
            return fail(err, err_len, OC_ERR_NOMEM, "%s: out of memory", where);
        }
    }
    *out = v;
    *n_out = n;
    return OC_OK;
}

static int read_load(och_host *h, const json_t *load, const char *base_dir, char *err,
                     size_t err_len)
{
    static const char *const known[] = {"paths", NULL};
    if (!json_is_object(load))
        return fail(err, err_len, OC_ERR_INVALID, "plugins.load: expected an object, got %s",
                    type_name(load));
    int rc = check_keys(load, "plugins.load", known, err, err_len);
    if (rc)
        return rc;
    const json_t *paths = json_object_get(load, "paths");
    if (!paths)
        return OC_OK;
    char **raw = NULL;
    size_t n = 0;
    if ((rc = string_array(paths, "plugins.load.paths", "a folder path", &raw, &n, err, err_len)))
        return rc;
    h->load_paths = calloc(n ? n : 1, sizeof *h->load_paths);
    if (!h->load_paths)
        rc = fail(err, err_len, OC_ERR_NOMEM, "plugins.load.paths: out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        char *joined =
            raw[i][0] == '/' || !base_dir ? och_strdup(raw[i]) : och_path_join(base_dir, raw[i]);
        char resolved[PATH_MAX];
        struct stat st;
        if (!joined) {
            rc = fail(err, err_len, OC_ERR_NOMEM, "plugins.load.paths: out of memory");
        } else if (!realpath(joined, resolved) || stat(resolved, &st) != 0) {
            rc = fail(err, err_len, OC_ERR_INVALID,
                      "plugins.load.paths[%zu]: folder \"%s\" cannot be used (%s); create it or "
                      "fix the path",
                      i, joined, strerror(errno));
        } else if (!S_ISDIR(st.st_mode)) {
            rc = fail(err, err_len, OC_ERR_INVALID,
                      "plugins.load.paths[%zu]: \"%s\" is not a folder; give the plugin folder "
                      "(the one holding manifest.json) or a folder of plugin folders",
                      i, joined);
        } else if (!(h->load_paths[i] = strdup(resolved))) {
            rc = fail(err, err_len, OC_ERR_NOMEM, "plugins.load.paths: out of memory");
        } else {
            h->n_load_paths = i + 1;
        }
        free(joined);
    }
    for (size_t i = 0; i < n; i++)
        free(raw[i]);
    free(raw);
    return rc;
}

static int read_entries(och_host *h, const json_t *entries, char *err, size_t err_len)
{
    /* `hooks` is OpenClaw's per-plugin hook policy (allowConversationAccess,
     * allowPromptInjection); this host grants every native hook, so it is
     * accepted for config compatibility and checked only for its shape. */
    static const char *const known[] = {"enabled", "config", "hooks", NULL};
    if (!json_is_object(entries))
        return fail(err, err_len, OC_ERR_INVALID,
                    "plugins.entries: expected an object (plugin id -> {enabled, config}), got %s",
                    type_name(entries));
    size_t n = json_object_size(entries);
    h->entries = calloc(n ? n : 1, sizeof *h->entries);
    if (!h->entries)
        return fail(err, err_len, OC_ERR_NOMEM, "plugins.entries: out of memory");
    const char *id;
    json_t *e;
    json_object_foreach((json_t *)entries, id, e) {
        char where[300];
        snprintf(where, sizeof where, "plugins.entries.%s", id);
        if (!json_is_object(e))
            return fail(err, err_len, OC_ERR_INVALID,
                        "%s: expected an object {enabled, config}, got %s", where, type_name(e));
        int rc = check_keys(e, where, known, err, err_len);
        if (rc)
            return rc;
        const json_t *en = json_object_get(e, "enabled");
        const json_t *cfg = json_object_get(e, "config");
        if (en && !json_is_boolean(en))
            return fail(err, err_len, OC_ERR_INVALID, "%s.enabled: expected true or false, got %s",
                        where, type_name(en));
        const json_t *hk = json_object_get(e, "hooks");
        if (hk && !json_is_object(hk))
            return fail(err, err_len, OC_ERR_INVALID,
                        "%s.hooks: expected an object (OpenClaw hook policy), got %s", where,
                        type_name(hk));
        if (cfg && !json_is_object(cfg))
            return fail(err, err_len, OC_ERR_INVALID,
                        "%s.config: expected an object (the plugin's config), got %s", where,
                        type_name(cfg));
        och_entry_cfg *ec = &h->entries[h->n_entries];
        if (!(ec->id = strdup(id)))
            return fail(err, err_len, OC_ERR_NOMEM, "plugins.entries: out of memory");
        h->n_entries++;
        ec->enabled = en ? json_is_true(en) : 1;
        /* A deep copy: the embedder may free its config after this call. */
        if (cfg && !(ec->config = json_deep_copy(cfg)))
            return fail(err, err_len, OC_ERR_NOMEM, "plugins.entries: out of memory");
    }
    return OC_OK;
}

int och_host_configure(och_host *h, const json_t *config, const char *base_dir, char *err,
                       size_t err_len)
{
    static const char *const known[] = {"load", "allow", "deny", "entries", NULL};
    if (err && err_len)
        err[0] = '\0';
    if (!h)
        return fail(err, err_len, OC_ERR_INVALID, "och_host_configure: no host");
    if (h->configured || h->load_done)
        return fail(err, err_len, OC_ERR_CONFLICT,
                    "och_host_configure: already configured; create a new host to change the "
                    "config");
    if (!json_is_object(config))
        return fail(err, err_len, OC_ERR_INVALID, "host config: expected an object, got %s",
                    config ? type_name(config) : "nothing");
    const json_t *plugins = json_object_get(config, "plugins");
    int rc = OC_OK;
    if (plugins) {
        if (!json_is_object(plugins))
            rc = fail(err, err_len, OC_ERR_INVALID, "plugins: expected an object, got %s",
                      type_name(plugins));
        if (!rc)
            rc = check_keys(plugins, "plugins", known, err, err_len);
        const json_t *v;
        if (!rc && (v = json_object_get(plugins, "load")))
            rc = read_load(h, v, base_dir, err, err_len);
        if (!rc && (v = json_object_get(plugins, "allow")))
            rc = string_array(v, "plugins.allow", "a plugin id", &h->allow, &h->n_allow, err,
                              err_len);
        if (!rc && (v = json_object_get(plugins, "deny")))
            rc = string_array(v, "plugins.deny", "a plugin id", &h->deny, &h->n_deny, err, err_len);
        if (!rc && (v = json_object_get(plugins, "entries")))
            rc = read_entries(h, v, err, err_len);
    }
    if (rc) {
        och_config_free(h);
        return rc;
    }
    h->configured = 1;
    return OC_OK;
}

const och_entry_cfg *och_config_entry(const och_host *h, const char *id)
{
    for (size_t i = 0; i < h->n_entries; i++)
        if (strcmp(h->entries[i].id, id) == 0)
            return &h->entries[i];
    return NULL;
}

static void free_strings(char ***v, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free((*v)[i]);
    free(*v);
    *v = NULL;
    *n = 0;
}

void och_config_free(och_host *h)
{
    /* load_paths may be partly filled after an error: free up to the
     * allocated count, which n_load_paths tracks. */
    free_strings(&h->load_paths, &h->n_load_paths);
    free_strings(&h->allow, &h->n_allow);
    free_strings(&h->deny, &h->n_deny);
    for (size_t i = 0; i < h->n_entries; i++) {
        free(h->entries[i].id);
        json_decref(h->entries[i].config);
    }
    free(h->entries);
    h->entries = NULL;
    h->n_entries = 0;
    h->configured = 0;
}
