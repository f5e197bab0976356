/*
 * och_util.c -- small string helpers of the host core.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "och_internal.h"

char *och_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

char *och_path_join(const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    int slash = dl > 0 && dir[dl - 1] == '/';
    return dg_sprintf("%s%s%s", dir, slash ? "" : "/", name);
}

int och_str_in(const char *s, char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

int och_json_array_has(const json_t *arr, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
            return 1;
    }
    return 0;
}
