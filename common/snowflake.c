/*
 * snowflake.c -- see snowflake.h.
 */
#include "snowflake.h"

#include <string.h>

int dg_snowflake_valid(const char *s)
{
    if (!s || !*s || s[0] == '0')
        return 0;
    size_t n = 0;
    for (const char *c = s; *c; c++, n++)
        if (*c < '0' || *c > '9')
            return 0;
    if (n > 20)
        return 0;
    /* 20 digits may still overflow 64 bits. */
    return n < 20 || strcmp(s, "18446744073709551615") <= 0;
}

int dg_snowflake_cmp(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb)
        return la < lb ? -1 : 1;
    return strcmp(a, b);
}
