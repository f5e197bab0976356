/*
 * agent_id.c -- see agent_id.h.
 */
#include "agent_id.h"

#include <string.h>

int dg_agent_id_valid(const char *s)
{
    if (!s)
        return 0;
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '-' && c != '_')))
            return 0;
    }
    return 1;
}
