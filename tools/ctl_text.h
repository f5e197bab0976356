/*
 * ctl_text.h -- stored text made fit for JSON and the terminal before
 * dirigent-ctl prints it (its commands and the status page): a database
 * written by hand or by a damaged writer may hold text that is not UTF-8,
 * which jansson refuses, so a row would vanish from the output. Each
 * function replaces, in place, every malformed byte of the structure's
 * strings with '?' (utf8.h's dg_utf8_valid_copy); when memory runs out a
 * string is left as it was. Any thread, on structures it owns.
 */
#ifndef DG_CTL_TEXT_H
#define DG_CTL_TEXT_H

#include <stddef.h>

#include "discuss_status.h"
#include "store_outbox.h"
#include "store_transitions.h"
#include "turn_view.h"

/* *s (malloc'd, or NULL) made well-formed; the old string is freed. */
void dg_ctl_text_fix(char **s);

void dg_ctl_text_fix_view(dg_turn_view *v);
void dg_ctl_text_fix_discussion(dg_discussion_info *i);
void dg_ctl_text_fix_outbox_rows(dg_outbox_row *v, size_t n);
void dg_ctl_text_fix_transitions(dg_transition *v, size_t n);

#endif
