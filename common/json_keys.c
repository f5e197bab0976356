/*
 * json_keys.c -- the "only these keys" rule (json_keys.h).
 */
#include "json_keys.h"

#include <string.h>

const char *dg_json_unknown_key(const json_t *obj, const char *const *allowed)
{
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val) {
        const char *const *a = allowed;
        while (*a && strcmp(*a, key) != 0)
            a++;
        if (!*a)
            return key;
    }
    return NULL;
}
