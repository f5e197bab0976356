/*
 * md_code.c -- blank out the code of a Discord message (md_code.h).
 */
#include "md_code.h"

#include <string.h>

/* Length of the run of backticks at p. */
static size_t run_len(const char *p)
{
    size_t n = 0;
    while (p[n] == '`')
        n++;
    return n;
}

int dg_md_blank_code(char *text)
{
    int any = 0;
    char *p = text ? strpbrk(text, "`\\") : NULL;
    while (p && *p) {
        if (*p == '\\') {
            p += p[1] ? 2 : 1; /* "\`" is a literal backtick */
        } else {
            size_t n = run_len(p);
            char *q = p + n, *end = NULL;
            while ((q = strchr(q, '`')) != NULL) {
                size_t m = run_len(q);
                if (m == n) {
                    end = q + m;
                    break;
                }
                q += m;
            }
            if (end) {
                memset(p, ' ', (size_t)(end - p));
                any = 1;
                p = end;
            } else {
                p += n; /* never closed: plain backticks */
            }
        }
        p = *p ? strpbrk(p, "`\\") : NULL;
    }
    return any;
}
