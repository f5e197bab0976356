/*
 * scrub.h -- keeping a secret (the moderator token) out of text that leaves
 * the plugin: log lines, error messages, tool results, stored last_error.
 *
 * Used by discord/ (also linked into ocgw) and plugin/log.c; no state, any
 * thread.
 */
#ifndef DG_SCRUB_H
#define DG_SCRUB_H

#include <stddef.h>

/* Shortest run of a secret's characters that is masked on its own: long enough
 * that a log line's own words (a token may contain "moderator") stay
 * readable, short enough that no useful piece of a Discord token passes. */
#define DG_SCRUB_MIN_RUN 10

/*
 * Overwrite with '*' every run of text that spells a piece of secret of at
 * least DG_SCRUB_MIN_RUN characters (the whole secret when it is shorter),
 * compared without regard to ASCII case: the whole token, a truncated
 * "Bot xxxx...", its tail. text is modified in place; NULL or an empty
 * secret changes nothing.
 */
void dg_scrub_secret(char *text, const char *secret);

/*
 * Decode JSON string escapes found in text, in place (\" \\ \/ \b \f \n \r
 * \t and \u with four hex digits, surrogate pairs included, to UTF-8; a malformed escape is kept
 * as written). For text that is not a whole JSON document (a cut-off or
 * non-JSON error body) so that a JSON-escaped spelling of the secret is
 * seen by dg_scrub_secret. Never lengthens text.
 */
void dg_unescape_json_text(char *text);

/*
 * Make body fit for a log line: control characters become spaces, then
 * it is cut to at most max_bytes bytes (never inside a UTF-8 sequence),
 * with "..." appended when it was cut (max_bytes + 4 bytes of room needed).
 */
void dg_cut_for_log(char *text, size_t max_bytes);

#endif
