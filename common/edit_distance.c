/*
 * edit_distance.c -- how far apart two short words are (for "did you
 * mean" answers to a mistyped command).
 */
#include "edit_distance.h"

#include <ctype.h>

size_t dg_edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
    /* Optimal string alignment, ASCII case folded, on three rows. */
    enum { MAX = DG_EDIT_DISTANCE_MAX };
    if (na > MAX || nb > MAX)
        return (size_t)-1;
    size_t r0[MAX + 1], r1[MAX + 1], r2[MAX + 1];
    size_t *pp = r0, *prev = r1, *cur = r2;
    for (size_t j = 0; j <= nb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= na; i++) {
        cur[0] = i;
        int ca = tolower((unsigned char)a[i - 1]);
        for (size_t j = 1; j <= nb; j++) {
            int cb = tolower((unsigned char)b[j - 1]);
            size_t best = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && pp[j - 2] + 1 < best)
                best = pp[j - 2] + 1; /* two neighbours swapped */
            cur[j] = best;
        }
        size_t *t = pp;
        pp = prev;
        prev = cur;
        cur = t;
    }
    return prev[nb];
}
