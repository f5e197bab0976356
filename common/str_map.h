/*
 * str_map.h -- a small string-keyed hash map (open addressing): the turn
 * engine's in-memory mirror, the Discord client's rate-limit routes. Not
 * thread-safe by itself: its user guards it. Keys and values are borrowed:
 * the value owns its key string, which must stay put while the entry
 * exists. Entries are added, dropped all at once (dg_map_clear) or by a
 * filter (dg_map_retain).
 */
#ifndef DG_STR_MAP_H
#define DG_STR_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct dg_map_slot {
    uint64_t hash;
    const char *key; /* NULL: empty slot */
    void *val;
} dg_map_slot;

typedef struct dg_map {
    dg_map_slot *slots;
    size_t cap; /* power of two, 0 before the first put */
    size_t n;
} dg_map;

/* A 64-bit hash of a NUL-terminated string (in memory only: the function
 * may change between builds, so never store it). */
uint64_t dg_map_hash(const char *key);

/* Zeroed map; nothing to allocate until the first put. */
void dg_map_init(dg_map *m);

/* Value for key or NULL. */
void *dg_map_get(const dg_map *m, const char *key);

/* dg_map_get with h = dg_map_hash(key) already known. */
void *dg_map_get_hashed(const dg_map *m, const char *key, uint64_t h);

/* Ask for the line of key's first slot without waiting for it (a lookup
 * coming soon finds it cached); returns key's hash for that lookup. */
uint64_t dg_map_prefetch(const dg_map *m, const char *key);

/* Insert or replace; DG_OK or DG_ERR_NOMEM. */
int dg_map_put(dg_map *m, const char *key, void *val);

/* Call fn on every value (order unspecified), e.g. to free them. */
void dg_map_each(const dg_map *m, void (*fn)(void *val, void *arg), void *arg);

/* Drop every entry (values untouched) and free the table. */
void dg_map_clear(dg_map *m);

/* Keep only the entries whose value keep() accepts; each other value is
 * passed to drop() (which may free it, key included) once it is out of the
 * map. keep() must not depend on values dropped before it. DG_OK, or
 * DG_ERR_NOMEM with the map unchanged and nothing dropped. */
int dg_map_retain(dg_map *m, int (*keep)(void *val, void *arg), void (*drop)(void *val, void *arg),
                  void *arg);

#endif
