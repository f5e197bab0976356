/*
 * seen_set.c -- thread-safe string set over dg_map (see seen_set.h).
 */
#include "seen_set.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "openclaw/plugin.h"
#include "status.h"
#include "str_map.h"

struct dg_seen_set {
    pthread_mutex_t mu; /* guards map */
    dg_map map;         /* key -> the same malloc'd key string (owned) */
};

dg_seen_set *dg_seen_set_new(void)
{
    dg_seen_set *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->mu, NULL);
    dg_map_init(&s->map);
    return s;
}

static void free_val(void *val, void *arg)
{
    (void)arg;
    free(val);
}

void dg_seen_set_free(dg_seen_set *s)
{
    if (!s)
        return;
    dg_map_each(&s->map, free_val, NULL);
    dg_map_clear(&s->map);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* "a\x1fb" into buf (len bytes) when it fits: returns buf; otherwise a
 * malloc'd copy the caller frees (NULL when out of memory). */
static char *join(char *buf, size_t len, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *k = la + lb + 2 <= len ? buf : malloc(la + lb + 2);
    if (!k)
        return NULL;
    memcpy(k, a, la);
    k[la] = 0x1f;
    memcpy(k + la + 1, b, lb + 1);
    return k;
}

int dg_seen_set_has(dg_seen_set *s, const char *a, const char *b)
{
    if (!s || !a || !b)
        return 0;
    char buf[256];
    char *k = join(buf, sizeof buf, a, b);
    if (!k)
        return 0;
    pthread_mutex_lock(&s->mu);
    int has = dg_map_get(&s->map, k) != NULL;
    pthread_mutex_unlock(&s->mu);
    if (k != buf)
        free(k);
    return has;
}

int dg_seen_set_add(dg_seen_set *s, const char *a, const char *b)
{
    if (!s || !a || !b)
        return DG_ERR_INVALID;
    char *k = join(NULL, 0, a, b);
    if (!k)
        return DG_ERR_NOMEM;
    pthread_mutex_lock(&s->mu);
    int rc = DG_OK;
    if (dg_map_get(&s->map, k)) {
        free(k);
    } else {
        if (s->map.n >= DG_SEEN_SET_MAX) {
            dg_map_each(&s->map, free_val, NULL);
            dg_map_clear(&s->map);
        }
        rc = dg_map_put(&s->map, k, k);
        if (rc != DG_OK)
            free(k);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}
