/*
 * utf8.h -- the UTF-8 rules every part uses, written once: counting code
 * points, the length of a well-formed sequence, decoding one code point,
 * cutting without splitting a character, and a valid copy of any text.
 * No state, any thread.
 */
#ifndef DG_UTF8_H
#define DG_UTF8_H

#include <stddef.h>
#include "must_check.h"

/* Code points of s: the bytes that are no continuation byte (so a
 * malformed byte counts as one). */
size_t dg_utf8_count(const char *s);

/*
 * Length (1 to 4) of the well-formed UTF-8 sequence that starts at s, or 0
 * when the bytes there are none: a stray continuation byte, a lead byte
 * C0, C1 or above F4, a sequence cut short (by the end of the string too),
 * an overlong form or a surrogate (the rules of jansson and Discord).
 */
size_t dg_utf8_seq_len(const char *s);

/* Code points of s, or -1 when s is not well-formed UTF-8 (seq_len). */
long dg_utf8_count_valid(const char *s);

/*
 * Decode the code point at s, n bytes left; *len gets the bytes it took.
 * Lenient: a byte that does not start a complete sequence decodes as
 * itself, length 1 (callers treat it as an ordinary character).
 */
unsigned long dg_utf8_decode(const char *s, size_t n, size_t *len);

/* Bytes of the first max_chars code points of s (all of s when shorter). */
size_t dg_utf8_prefix(const char *s, size_t max_chars);

/* The start of the character that holds byte i of s: i moved back over
 * continuation bytes (never below 0). */
size_t dg_utf8_char_start(const char *s, size_t i);

/*
 * A copy of s that is well-formed UTF-8 (malloc'd, the caller frees; NULL
 * when out of memory): a sequence cut short at the end goes, any other
 * malformed byte becomes '?'.
 */
char *dg_utf8_valid_copy(const char *s) DG_MUST_CHECK;

#endif
