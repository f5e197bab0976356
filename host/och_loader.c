/*
 * och_loader.c -- plugin discovery, manifest checks, dlopen, version checks,
 * init; and the oc_host_api each plugin receives.
 *
 * Order of the checks for one candidate, cheapest and safest first: the
 * manifest (no code of the plugin runs), the host config's verdict on the id
 * (duplicate, deny, allow, enabled), the manifest's ABI, and only then
 * dlopen (which runs the library's constructors), the entry symbol, the
 * plugin's own table, and init.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "och_internal.h"

/* Smallest oc_plugin / oc_tool a v1.0 plugin can hand us: every field of 1.0. */
#define PLUGIN_V1_SIZE (offsetof(oc_plugin, shutdown) + sizeof(((oc_plugin *)0)->shutdown))

/* ---- the oc_host_api handed to plugins -------------------------------------- */

static int api_register_tool(oc_host *p, const oc_tool *tool)
{
    if (!p)
        return OC_ERR_INVALID;
    if (!atomic_load(&p->in_init)) {
        och_log(p->host, OC_LOG_ERROR, p->id,
                "register_tool(%s) refused: tools may only be registered inside init",
                tool && tool->struct_size >= sizeof(oc_tool) && tool->name ? tool->name : "?");
        return OC_ERR_DENIED;
    }
    return och_tools_register(p, tool);
}

static int api_on(oc_host *p, const char *hook, oc_hook_fn fn, int priority)
{
    if (!p)
        return OC_ERR_INVALID;
    if (!atomic_load(&p->in_init)) {
        och_log(p->host, OC_LOG_ERROR, p->id,
                "on(%s) refused: hooks may only be registered inside init", hook ? hook : "NULL");
        return OC_ERR_DENIED;
    }
    return och_hooks_register(p, hook, fn, priority);
}

static int api_session_patch(oc_host *p, const char *key, const char *provider, const char *model)
{
    if (!p)
        return OC_ERR_INVALID;
    int rc = och_session_patch(p->host, key, provider, model);
    if (rc)
        och_log(p->host, OC_LOG_WARN, p->id, "session_patch(%s, %s, %s) failed: %s",
                key ? key : "NULL", provider ? provider : "NULL", model ? model : "NULL",
                oc_status_name(rc));
    else
        och_log(p->host, OC_LOG_DEBUG, p->id, "session_patch(%s) -> %s/%s", key,
                provider ? provider : "(cleared)", model ? model : "(cleared)");
    return rc;
}

static json_t *api_sessions_list(oc_host *p, const char *channel_id)
{
    return och_sessions_list(p ? p->host : NULL, channel_id);
}

static int api_session_reset(oc_host *p, const char *key)
{
    if (!p)
        return OC_ERR_INVALID;
    int rc = och_session_reset(p->host, key);
    och_log(p->host, rc == OC_OK ? OC_LOG_INFO : OC_LOG_WARN, p->id, "session_reset(%s): %s",
            key ? key : "NULL",
            rc == OC_OK ? "the next message opens a fresh session" : oc_status_name(rc));
    return rc;
}

static int api_run_abort(oc_host *p, const char *key)
{
    if (!p)
        return OC_ERR_INVALID;
    int rc = och_run_abort(p->host, key);
    och_log(p->host, OC_LOG_INFO, p->id, "run_abort(%s): %s", key ? key : "NULL",
            rc == OC_OK              ? "the run in flight is aborted"
            : rc == OC_ERR_NOT_FOUND ? "no run in flight"
                                     : oc_status_name(rc));
    return rc;
}

static int api_decide(oc_host *p, const json_t *request, json_t **answer)
{
    if (answer)
        *answer = NULL;
    if (!p || !answer)
        return OC_ERR_INVALID;
    int rc = och_decide(p->host, request, answer);
    if (rc != OC_OK)
        och_log(p->host, OC_LOG_INFO, p->id, "decide: %s", oc_status_name(rc));
    return rc;
}

static void api_log(oc_host *p, int level, const char *message)
{
    if (!p)
        return;
    och_log(p->host, level, p->id, "%s", message ? message : "(null)");
}

void och_plugin_api_fill(och_plugin *p)
{
    p->api.abi_major = OC_ABI_MAJOR;
    p->api.abi_minor = OC_ABI_MINOR;
    p->api.struct_size = sizeof(oc_host_api);
    p->api.host = p;
    p->api.register_tool = api_register_tool;
    p->api.on = api_on;
    p->api.session_patch = api_session_patch;
    p->api.sessions_list = api_sessions_list;
    p->api.log = api_log;
    p->api.session_reset = api_session_reset;
    p->api.run_abort = api_run_abort;
    p->api.decide = api_decide;
}

/* ---- candidates ---------------------------------------------------------------- */

static och_plugin *add_candidate(och_host *h, const char *dir)
{
    if (dg_grow(&h->plugins, &h->cap_plugins, h->n_plugins, sizeof *h->plugins, 8))
        return NULL;
    och_plugin *p = calloc(1, sizeof *p);
    if (!p || !(p->dir = strdup(dir))) {
        free(p);
        return NULL;
    }
    p->host = h;
    p->state = OCH_PLUGIN_REFUSED;
    och_plugin_api_fill(p);
    h->plugins[h->n_plugins++] = p;
    return p;
}

/* Record why p is not loaded and log it. The reason is a sentence. */
static void set_outcome(och_plugin *p, och_plugin_state state, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set_outcome(och_plugin *p, och_plugin_state state, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    free(p->reason);
    p->reason = s;
    p->state = state;
    och_log(p->host, level, p->id, "plugin %s in %s %s: %s", p->id ? p->id : "(no id)", p->dir,
            och_plugin_state_name(state) /* e.g. "refused" */, s ? s : "(out of memory)");
}

static int valid_id(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

/* A manifest is a few KiB; a bigger file is not one, and is not read into
 * memory whole. */
#define OCH_MANIFEST_MAX (1024 * 1024)

/* The whole regular file at path if it holds at most max bytes: malloc'd
 * (the caller frees), its length in *len. NULL with a sentence in why
 * otherwise. Opened without blocking, so a FIFO put in the file's place
 * cannot hang discovery. */
static char *read_bounded(const char *path, size_t max, size_t *len, char *why, size_t why_len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why, why_len, "cannot read it (%s)", strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
        if (S_ISREG(st.st_mode))
            snprintf(why, why_len,
                     "it is %lld bytes, more than the %zu bytes a manifest may "
                     "have; is it the right file?",
                     (long long)st.st_size, max);
        else
            snprintf(why, why_len, "it is not a regular file");
        close(fd);
        return NULL;
    }
    /* One byte more than fstat said: filling it means the file grew. */
    size_t cap = (size_t)st.st_size + 1;
    char *buf = malloc(cap);
    if (!buf) {
        snprintf(why, why_len, "out of memory");
        close(fd);
        return NULL;
    }
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(why, why_len, "cannot read it (%s)", strerror(errno));
            free(buf);
            buf = NULL;
        }
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf)
        return NULL;
    if (n == cap) {
        snprintf(why, why_len, "it changed while it was read; try again");
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* path (dir/manifest.json) as JSON, or NULL with p refused with the reason. */
static json_t *load_manifest_json(och_plugin *p, const char *path)
{
    char why[256];
    size_t len = 0;
    char *text = read_bounded(path, OCH_MANIFEST_MAX, &len, why, sizeof why);
    if (!text) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR, "%s: %s", path, why);
        return NULL;
    }
    json_error_t je;
    json_t *m = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!m)
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                    "%s: line %d column %d: %s; fix the manifest", path, je.line, je.column,
                    je.text);
    return m;
}

/* The manifest's optional strings, abi, library, entry and configSchema;
 * 0, or -1 with p refused with the reason. */
static int check_manifest_members(och_plugin *p, const json_t *m, const char *path)
{
    static const char *const opt_strings[] = {"name", "version", "description"};
    for (size_t i = 0; i < sizeof opt_strings / sizeof *opt_strings; i++) {
        const json_t *v = json_object_get(m, opt_strings[i]);
        if (v && !json_is_string(v)) {
            set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR, "%s: \"%s\" must be a string", path,
                        opt_strings[i]);
            return -1;
        }
    }
    const json_t *abi = json_object_get(m, "abi");
    const json_t *maj = json_object_get(abi, "major"), *min = json_object_get(abi, "minor");
    if (!json_is_object(abi) || !json_is_integer(maj) || !json_is_integer(min) ||
        json_integer_value(maj) < 0 || json_integer_value(min) < 0) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                    "%s: \"abi\" must be {\"major\": <int>, \"minor\": <int>} (this host "
                    "speaks %d.%d)",
                    path, OC_ABI_MAJOR, OC_ABI_MINOR);
        return -1;
    }
    const char *ls = json_string_value(json_object_get(m, "library"));
    if (!ls || !*ls || strchr(ls, '/') || strcmp(ls, ".") == 0 || strcmp(ls, "..") == 0) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                    "%s: \"library\" must be the file name of the .so next to the manifest "
                    "(no folders)",
                    path);
        return -1;
    }
    const json_t *entry = json_object_get(m, "entry");
    if (entry &&
        (!json_is_string(entry) || strcmp(json_string_value(entry), OC_PLUGIN_ENTRY_SYMBOL) != 0)) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                    "%s: \"entry\" must be \"%s\", the one entry symbol of ABI %d", path,
                    OC_PLUGIN_ENTRY_SYMBOL, OC_ABI_MAJOR);
        return -1;
    }
    if (!json_is_object(json_object_get(m, "configSchema"))) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                    "%s: \"configSchema\" is required and must be a JSON Schema object", path);
        return -1;
    }
    return 0;
}

/* The manifest's contracts, library path and version into p; 0, or -1
 * with p refused with the reason. */
static int take_manifest(och_plugin *p, const json_t *m, const char *path)
{
    const json_t *contracts = json_object_get(m, "contracts");
    const json_t *version = json_object_get(m, "version");
    if (contracts) {
        const json_t *t = json_object_get(contracts, "tools");
        const json_t *hk = json_object_get(contracts, "hooks");
        if (!json_is_object(contracts) || (t && !json_is_array(t)) || (hk && !json_is_array(hk))) {
            set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                        "%s: \"contracts\" must be {\"tools\": [names], \"hooks\": [names]}", path);
            return -1;
        }
        p->contracts_tools = (json_t *)t;
        p->contracts_hooks = (json_t *)hk;
    }
    if (!(p->library = och_path_join(p->dir, json_string_value(json_object_get(m, "library")))) ||
        (version && !(p->version = strdup(json_string_value(version))))) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR, "out of memory");
        return -1;
    }
    return 0;
}

/* Reads and checks dir/manifest.json into p. 0 when usable; otherwise p is
 * marked refused with the reason. */
static int read_manifest(och_plugin *p)
{
    char *path = och_path_join(p->dir, "manifest.json");
    if (!path) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR, "out of memory");
        return -1;
    }
    json_t *m = load_manifest_json(p, path);
    int bad = 1;
    if (m) {
        p->manifest = m;
        const json_t *id = json_object_get(m, "id");
        if (!json_is_object(m))
            set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR, "%s: expected a JSON object", path);
        else if (!json_is_string(id) || !valid_id(json_string_value(id)))
            set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                        "%s: \"id\" must be a non-empty string of letters, digits, '.', '_' or '-'",
                        path);
        else if (!(p->id = strdup(json_string_value(id))))
            set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR, "out of memory");
        else
            bad = check_manifest_members(p, m, path) || take_manifest(p, m, path);
    }
    free(path);
    return bad ? -1 : 0;
}

/* The config's verdict on an id; 0 when it may load. */
static int config_verdict(och_host *h, och_plugin *p)
{
    for (size_t i = 0; i + 1 < h->n_plugins; i++) {
        och_plugin *q = h->plugins[i];
        if (q != p && q->id && strcmp(q->id, p->id) == 0) {
            set_outcome(p, OCH_PLUGIN_DUPLICATE, OC_LOG_WARN,
                        "id \"%s\" was already found in %s, which wins (first in discovery "
                        "order); remove one of them",
                        p->id, q->dir);
            return -1;
        }
    }
    if (och_str_in(p->id, h->deny, h->n_deny)) {
        set_outcome(p, OCH_PLUGIN_DENIED, OC_LOG_INFO, "listed in plugins.deny");
        return -1;
    }
    if (h->n_allow && !och_str_in(p->id, h->allow, h->n_allow)) {
        set_outcome(p, OCH_PLUGIN_NOT_ALLOWED, OC_LOG_INFO,
                    "not listed in plugins.allow (only listed plugins load when it is non-empty)");
        return -1;
    }
    const och_entry_cfg *e = och_config_entry(h, p->id);
    if (e && !e->enabled) {
        set_outcome(p, OCH_PLUGIN_DISABLED, OC_LOG_INFO, "plugins.entries.%s.enabled is false",
                    p->id);
        return -1;
    }
    return 0;
}

/* Version rule of the ABI, in words; 0 when compatible. */
static int check_version(och_plugin *p, long major, long minor, const char *who)
{
    if (major != OC_ABI_MAJOR) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                    "%s ABI major %ld but this host speaks ABI %d.%d; a different major is "
                    "incompatible: build the plugin against openclaw/plugin.h of ABI %d",
                    who, major, OC_ABI_MAJOR, OC_ABI_MINOR, OC_ABI_MAJOR);
        return -1;
    }
    if (minor > OC_ABI_MINOR) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                    "%s ABI %ld.%ld but this host only offers ABI %d.%d (minor %ld is newer "
                    "than the host's %d): upgrade the host",
                    who, major, minor, OC_ABI_MAJOR, OC_ABI_MINOR, minor, OC_ABI_MINOR);
        return -1;
    }
    return 0;
}

static void unload(och_plugin *p)
{
    if (p->dl) {
        dlclose(p->dl);
        p->dl = NULL;
    }
    p->table = NULL;
}

/* The library opened and its entry called: its table, or NULL with p
 * refused with the reason (and the library closed). */
static const oc_plugin *open_library(och_plugin *p)
{
    struct stat st;
    if (stat(p->library, &st) != 0) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                    "library %s named by manifest.json cannot be found (%s); build or install "
                    "it next to the manifest",
                    p->library, strerror(errno));
        return NULL;
    }
    dlerror();
    p->dl = dlopen(p->library, RTLD_NOW | RTLD_LOCAL);
    if (!p->dl) {
        const char *e = dlerror();
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR, "dlopen(%s) failed: %s", p->library,
                    e ? e : "unknown error");
        return NULL;
    }
    dlerror();
    void *sym = dlsym(p->dl, OC_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
        const char *e = dlerror();
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                    "%s does not export the entry symbol %s (%s); a plugin must export it with "
                    "default visibility",
                    p->library, OC_PLUGIN_ENTRY_SYMBOL, e ? e : "not found");
        unload(p);
        return NULL;
    }
    oc_plugin_entry_fn entry;
    /* POSIX guarantees the object/function pointer conversion for dlsym. */
    memcpy(&entry, &sym, sizeof entry);
    const oc_plugin *t = entry();
    if (!t) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR, "%s() returned NULL",
                    OC_PLUGIN_ENTRY_SYMBOL);
        unload(p);
    }
    return t;
}

/* The table the library gave, against the ABI and the manifest; 0, or -1
 * with p refused with the reason (the library stays open). */
static int check_table(och_host *h, och_plugin *p, const oc_plugin *t)
{
    /* abi_major, abi_minor and struct_size are the first three fields of
     * every version, so they can be read before the size is checked. */
    if (check_version(p, (long)t->abi_major, (long)t->abi_minor, "the library reports"))
        return -1;
    if (t->struct_size < PLUGIN_V1_SIZE) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                    "its oc_plugin table is %u bytes, smaller than the %zu bytes of ABI %d.0; "
                    "set struct_size = sizeof(oc_plugin) and rebuild",
                    (unsigned)t->struct_size, (size_t)PLUGIN_V1_SIZE, OC_ABI_MAJOR);
        return -1;
    }
    if (!t->id || strcmp(t->id, p->id) != 0) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                    "the library's id \"%s\" differs from the manifest's id \"%s\"; they must "
                    "be the same",
                    t->id ? t->id : "(NULL)", p->id);
        return -1;
    }
    if (!t->init || !t->shutdown) {
        set_outcome(p, OCH_PLUGIN_REFUSED, OC_LOG_ERROR,
                    "its oc_plugin table has no %s function; init and shutdown are mandatory",
                    !t->init ? "init" : "shutdown");
        return -1;
    }
    const json_t *abi = json_object_get(p->manifest, "abi");
    if (t->abi_minor != json_integer_value(json_object_get(abi, "minor")))
        och_log(h, OC_LOG_WARN, p->id,
                "manifest.json declares ABI %lld.%lld, the library %u.%u; keep them equal",
                (long long)json_integer_value(json_object_get(abi, "major")),
                (long long)json_integer_value(json_object_get(abi, "minor")),
                (unsigned)t->abi_major, (unsigned)t->abi_minor);
    return 0;
}

/* Call the plugin's init with its config; on failure what it registered
 * is dropped, p marked failed with its reason and the library closed. */
static void init_plugin(och_host *h, och_plugin *p, const oc_plugin *t)
{
    const och_entry_cfg *e = och_config_entry(h, p->id);
    json_t *empty = NULL;
    const json_t *cfg = e && e->config ? e->config : (empty = json_object());
    char err[1024] = "";
    void *state = NULL;
    atomic_store(&p->in_init, 1);
    int rc = t->init(&p->api, cfg, &state, err, sizeof err);
    atomic_store(&p->in_init, 0);
    json_decref(empty);
    err[sizeof err - 1] = '\0';
    if (rc != OC_OK) {
        och_tools_drop_plugin(h, p);
        och_hooks_drop_plugin(h, p);
        set_outcome(p, OCH_PLUGIN_FAILED, OC_LOG_ERROR, "init failed with %s%s: %s",
                    oc_status_name(rc), rc > 0 ? " (not an oc_status)" : "",
                    err[0] ? err : "(the plugin gave no reason)");
        unload(p);
        return;
    }
    p->state_ptr = state;
    p->state = OCH_PLUGIN_LOADED;
    p->load_index = h->n_loaded++;
    atomic_store(&p->active, 1);
    och_log(h, OC_LOG_INFO, p->id, "plugin %s %s loaded from %s (ABI %u.%u)", p->id,
            p->version ? p->version : "", p->dir, (unsigned)t->abi_major, (unsigned)t->abi_minor);
}

static void load_one(och_host *h, och_plugin *p)
{
    if (read_manifest(p) || config_verdict(h, p))
        return;
    const json_t *abi = json_object_get(p->manifest, "abi");
    if (check_version(p, (long)json_integer_value(json_object_get(abi, "major")),
                      (long)json_integer_value(json_object_get(abi, "minor")),
                      "its manifest.json declares"))
        return;
    const oc_plugin *t = open_library(p);
    if (!t)
        return;
    if (check_table(h, p, t)) {
        unload(p);
        return;
    }
    p->table = t;
    if (t->version) {
        char *v = strdup(t->version);
        if (v) {
            free(p->version);
            p->version = v;
        }
    }
    init_plugin(h, p, t);
}

/* ---- discovery ------------------------------------------------------------------ */

static int has_manifest(const char *dir)
{
    char *m = och_path_join(dir, "manifest.json");
    struct stat st;
    int ok = m && stat(m, &st) == 0 && S_ISREG(st.st_mode);
    free(m);
    return ok;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Plugin folders inside `dir`, sorted by name, appended as candidates. */
static int scan_folder(och_host *h, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        och_log(h, OC_LOG_ERROR, NULL, "plugins.load.paths: cannot read folder %s: %s", dir,
                strerror(errno));
        return OC_OK;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = OC_OK;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (dg_grow(&names, &cap, n, sizeof *names, 16) || !(names[n] = strdup(de->d_name))) {
            rc = OC_ERR_NOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        char *sub = rc ? NULL : och_path_join(dir, names[i]);
        struct stat st;
        if (!rc && !sub)
            rc = OC_ERR_NOMEM;
        if (!rc && stat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (has_manifest(sub)) {
                och_plugin *p = add_candidate(h, sub);
                if (!p)
                    rc = OC_ERR_NOMEM;
                else
                    load_one(h, p);
            } else {
                och_log(h, OC_LOG_DEBUG, NULL, "%s: no manifest.json, not a plugin folder", sub);
            }
        }
        free(sub);
        free(names[i]);
    }
    free(names);
    return rc;
}

int och_host_load(och_host *h)
{
    if (!h)
        return OC_ERR_INVALID;
    if (h->load_done)
        return OC_ERR_CONFLICT;
    h->load_done = 1;
    int rc = OC_OK;
    for (size_t i = 0; !rc && i < h->n_load_paths; i++) {
        const char *lp = h->load_paths[i];
        if (has_manifest(lp)) {
            och_plugin *p = add_candidate(h, lp);
            if (!p)
                rc = OC_ERR_NOMEM;
            else
                load_one(h, p);
        } else {
            rc = scan_folder(h, lp);
        }
    }
    /* Names in the config that matched nothing are probably typos. */
    for (size_t i = 0; i < h->n_entries; i++)
        if (och_plugin_state_of(h, h->entries[i].id) < 0)
            och_log(h, OC_LOG_WARN, NULL,
                    "plugins.entries.%s: no plugin with this id was found in plugins.load.paths",
                    h->entries[i].id);
    for (size_t i = 0; i < h->n_allow; i++)
        if (och_plugin_state_of(h, h->allow[i]) < 0)
            och_log(h, OC_LOG_WARN, NULL,
                    "plugins.allow lists \"%s\" but no plugin with this id was found", h->allow[i]);
    och_log(h, OC_LOG_INFO, NULL, "%zu plugin(s) found, %zu loaded", h->n_plugins, h->n_loaded);
    return rc;
}
