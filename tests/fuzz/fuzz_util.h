/*
 * fuzz_util.h -- small helpers of the unit fuzz targets: a private temp
 * folder per input (made and removed inside one LLVMFuzzerTestOneInput,
 * so no state survives into the next input) and splitting an input.
 */
#ifndef DG_FUZZ_UTIL_H
#define DG_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A new folder under $TMPDIR (or /tmp): malloc'd path the caller frees
 * after fz_rmtree. Aborts when none can be made (a broken environment). */
char *fz_mkdtemp(const char *tag);

/* Remove a folder tree without following symlinks (best effort). */
void fz_rmtree(const char *path);

/* Write size bytes to dir/name; 0 on success. */
int fz_write(const char *dir, const char *name, const void *data, size_t size);

/* Split data at NUL bytes into at most max C strings (malloc'd copies in
 * out[], the caller frees each with fz_free_parts); missing parts are
 * NULL. Returns how many parts there were. */
size_t fz_split(const uint8_t *data, size_t size, char **out, size_t max);
void fz_free_parts(char **parts, size_t n);

#endif
