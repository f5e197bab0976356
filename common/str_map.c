/*
 * str_map.c -- string-keyed open-addressing hash map (see str_map.h).
 */
#include "str_map.h"

#include <stdlib.h>
#include <string.h>

#include "status.h"

/* Eight bytes at p as one integer (any alignment). */
static uint64_t load8(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

/* Eight bytes at a time, not one (the ingest hashes a channel id and a
 * message id, 18-20 bytes each, per message), with splitmix64's mixing
 * steps; a key of 8 bytes or more ends with its last 8, overlapping the
 * word before (the length is mixed in). In memory only: never stored. */
uint64_t dg_map_hash(const char *key)
{
    const unsigned char *p = (const unsigned char *)key;
    size_t n = strlen(key);
    uint64_t h = 0x9E3779B97F4A7C15ull ^ ((uint64_t)n * 0xff51afd7ed558ccdull);
    uint64_t w = 0;
    if (n >= 8) {
        for (; n > 8; p += 8, n -= 8) {
            h = (h ^ load8(p)) * 0xbf58476d1ce4e5b9ull;
            h ^= h >> 31;
        }
        w = load8(p + n - 8);
    } else {
        for (size_t i = 0; i < n; i++)
            w |= (uint64_t)p[i] << (8 * i);
    }
    h = (h ^ w) * 0x94d049bb133111ebull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

void dg_map_init(dg_map *m)
{
    memset(m, 0, sizeof *m);
}

static dg_map_slot *find(const dg_map *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        dg_map_slot *s = &m->slots[i];
        if (!s->key || (s->hash == h && strcmp(s->key, key) == 0))
            return s;
    }
}

void *dg_map_get_hashed(const dg_map *m, const char *key, uint64_t h)
{
    if (!m->cap)
        return NULL;
    dg_map_slot *s = find(m, key, h);
    return s->key ? s->val : NULL;
}

void *dg_map_get(const dg_map *m, const char *key)
{
    return dg_map_get_hashed(m, key, dg_map_hash(key));
}

uint64_t dg_map_prefetch(const dg_map *m, const char *key)
{
    uint64_t h = dg_map_hash(key);
    if (m->cap)
        __builtin_prefetch(&m->slots[(size_t)h & (m->cap - 1)]);
    return h;
}

static int grow(dg_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    dg_map_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return DG_ERR_NOMEM;
    dg_map old = *m;
    m->slots = slots;
    m->cap = cap;
    for (size_t i = 0; i < old.cap; i++)
        if (old.slots[i].key)
            *find(m, old.slots[i].key, old.slots[i].hash) = old.slots[i];
    free(old.slots);
    return DG_OK;
}

int dg_map_put(dg_map *m, const char *key, void *val)
{
    /* Load factor at most 1/2 keeps probes short. */
    if ((m->n + 1) * 2 > m->cap && grow(m))
        return DG_ERR_NOMEM;
    uint64_t h = dg_map_hash(key);
    dg_map_slot *s = find(m, key, h);
    if (!s->key)
        m->n++;
    s->hash = h;
    s->key = key;
    s->val = val;
    return DG_OK;
}

void dg_map_each(const dg_map *m, void (*fn)(void *val, void *arg), void *arg)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            fn(m->slots[i].val, arg);
}

void dg_map_clear(dg_map *m)
{
    free(m->slots);
    dg_map_init(m);
}

int dg_map_retain(dg_map *m, int (*keep)(void *val, void *arg), void (*drop)(void *val, void *arg),
                  void *arg)
{
    if (!m->cap)
        return DG_OK;
    /* Rebuilt into a fresh table: open addressing has no plain delete. */
    dg_map_slot *slots = calloc(m->cap, sizeof *slots);
    if (!slots)
        return DG_ERR_NOMEM;
    dg_map old = *m;
    m->slots = slots;
    m->n = 0;
    for (size_t i = 0; i < old.cap; i++) {
        dg_map_slot *o = &old.slots[i];
        if (!o->key)
            continue;
        if (keep(o->val, arg)) {
            *find(m, o->key, o->hash) = *o;
            m->n++;
        } else {
            drop(o->val, arg); /* its key lives in it: not used after this */
        }
    }
    free(old.slots);
    return DG_OK;
}
