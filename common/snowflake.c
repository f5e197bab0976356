/*
 * snowflake.c -- see snowflake.h.
 */
#include "snowflake.h"

#include <string.h>

int dg_snowflake_cmp(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb)
        return la < lb ? -1 : 1;
    return strcmp(a, b);
}
