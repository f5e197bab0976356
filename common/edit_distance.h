/*
 * edit_distance.h -- the edit distance of two short words.
 */
#ifndef DG_EDIT_DISTANCE_H
#define DG_EDIT_DISTANCE_H

#include <stddef.h>

/* Edit distance (insertions, deletions, substitutions, and swaps of two
 * neighbours each count 1; ASCII case ignored) of a[0..na) and b[0..nb);
 * (size_t)-1 when either is longer than DG_EDIT_DISTANCE_MAX bytes. No
 * allocation. Any thread. */
#define DG_EDIT_DISTANCE_MAX 64
size_t dg_edit_distance(const char *a, size_t na, const char *b, size_t nb);

#endif
