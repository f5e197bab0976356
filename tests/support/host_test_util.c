/*
 * host_test_util.c -- see host_test_util.h.
 */
#include "host_test_util.h"

#include <check.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

void host_test_log_init(host_test_log *l)
{
    pthread_mutex_init(&l->mu, NULL);
    l->text = calloc(1, 1);
    l->len = 0;
}

void host_test_log_free(host_test_log *l)
{
    free(l->text);
    l->text = NULL;
    pthread_mutex_destroy(&l->mu);
}

void host_test_log_sink(void *user, int level, const char *source, const char *message)
{
    host_test_log *l = user;
    char *line = NULL;
    int n = asprintf(&line, "%d %s: %s\n", level, source ? source : "host", message);
    if (n < 0)
        return;
    pthread_mutex_lock(&l->mu);
    char *t = realloc(l->text, l->len + (size_t)n + 1);
    if (t) {
        memcpy(t + l->len, line, (size_t)n + 1);
        l->text = t;
        l->len += (size_t)n;
    }
    pthread_mutex_unlock(&l->mu);
    free(line);
}

char *host_test_log_text(host_test_log *l)
{
    pthread_mutex_lock(&l->mu);
    char *s = strdup(l->text);
    pthread_mutex_unlock(&l->mu);
    ck_assert_ptr_nonnull(s);
    return s;
}

int host_test_log_has(host_test_log *l, ...)
{
    char *text = host_test_log_text(l);
    int found = 0;
    for (char *line = strtok(text, "\n"); line && !found; line = strtok(NULL, "\n")) {
        va_list ap;
        va_start(ap, l);
        int all = 1;
        for (const char *needle; (needle = va_arg(ap, const char *));)
            if (!strstr(line, needle))
                all = 0;
        va_end(ap);
        found = all;
    }
    free(text);
    return found;
}

char *host_test_log_seq(host_test_log *l, const char *source, const char *prefix)
{
    char *text = host_test_log_text(l);
    char *out = calloc(1, 1);
    size_t len = 0;
    ck_assert_ptr_nonnull(out);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *colon = strstr(line, ": ");
        char *sp = strchr(line, ' ');
        if (!colon || !sp || sp > colon)
            continue;
        size_t sl = (size_t)(colon - sp - 1);
        if (source && (strlen(source) != sl || strncmp(sp + 1, source, sl) != 0))
            continue;
        const char *msg = colon + 2;
        if (strncmp(msg, prefix, strlen(prefix)) != 0)
            continue;
        size_t ml = strlen(msg);
        char *t = realloc(out, len + ml + 2);
        ck_assert_ptr_nonnull(t);
        out = t;
        if (len)
            out[len++] = '|';
        memcpy(out + len, msg, ml + 1);
        len += ml;
    }
    free(text);
    return out;
}

char *host_test_fixture(const char *name)
{
    char *p = NULL;
    ck_assert_int_ge(asprintf(&p, "%s/tests/plugins/%s.so", tu_build_dir(), name), 0);
    return p;
}

int host_test_copy(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    if (out < 0) {
        close(in);
        return -1;
    }
    char buf[65536];
    ssize_t n;
    int rc = 0;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            rc = -1;
    if (n < 0)
        rc = -1;
    close(in);
    if (close(out) != 0)
        rc = -1;
    return rc;
}

char *host_test_plugin_dir(const char *parent, const char *folder, const char *fixture,
                           const char *lib, const char *id, int abi_major, int abi_minor,
                           const json_t *extra)
{
    char *dir = tu_path(parent, folder);
    ck_assert_msg(mkdir(dir, 0755) == 0 || access(dir, F_OK) == 0, "mkdir %s", dir);
    if (fixture) {
        char *src = host_test_fixture(fixture);
        char *dst = tu_path(dir, lib);
        ck_assert_msg(host_test_copy(src, dst) == 0, "cannot copy %s to %s (is it built?)", src,
                      dst);
        free(src);
        free(dst);
    }
    json_t *m =
        json_pack("{s:s,s:s,s:s,s:s,s:{s:i,s:i},s:s,s:s,s:{s:s},s:{s:[],s:[]}}", "id", id, "name",
                  id, "version", "0.0.1", "description", "a test fixture", "abi", "major",
                  abi_major, "minor", abi_minor, "library", lib, "entry", "oc_plugin_entry",
                  "configSchema", "type", "object", "contracts", "tools", "hooks");
    ck_assert_ptr_nonnull(m);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)extra, k, v) {
        if (json_is_null(v))
            json_object_del(m, k);
        else
            json_object_set(m, k, v);
    }
    char *mp = tu_path(dir, "manifest.json");
    ck_assert_int_eq(json_dump_file(m, mp, JSON_INDENT(2)), 0);
    json_decref(m);
    free(mp);
    return dir;
}

och_host *host_test_host(host_test_log *log, const char *config)
{
    och_host *h = och_host_new();
    ck_assert_ptr_nonnull(h);
    och_host_set_log(h, host_test_log_sink, log, OC_LOG_DEBUG);
    json_t *cfg = tu_json(config);
    char err[512] = "";
    int rc = och_host_configure(h, cfg, NULL, err, sizeof err);
    json_decref(cfg);
    ck_assert_msg(rc == OC_OK, "configure failed: %s", err);
    return h;
}
