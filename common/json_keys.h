/*
 * json_keys.h -- the "only these keys" rule of config files, tool params
 * and scenario files, written once. Each caller words its own error (the
 * plugin's config names the README, a tool names the accepted keys).
 */
#ifndef DG_JSON_KEYS_H
#define DG_JSON_KEYS_H

#include <jansson.h>

/* The first key of obj (in jansson's order) that is not in allowed
 * (NULL-terminated), borrowed from obj; NULL when every key is allowed or
 * obj is no object. */
const char *dg_json_unknown_key(const json_t *obj, const char *const *allowed);

#endif
