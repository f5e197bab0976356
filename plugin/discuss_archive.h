/*
 * discuss_archive.h -- the archive index: with
 * discussion.archiveChannelId set, every discussion that closes (callback,
 * expiry, admin close) gets one line there, queued in the outbox in the
 * transaction that closes it, so each line is posted exactly once.
 * (Owner: discussion area.)
 */
#ifndef DG_DISCUSS_ARCHIVE_H
#define DG_DISCUSS_ARCHIVE_H

#include <stdint.h>
#include "dirigent.h"
#include "discuss.h"
#include "must_check.h"

/*
 * Queue the index line of d, closing at closed_ms with end_status
 * ("completed", "expired", "closed-by-admin") and summary_path (NULL: none):
 * "<name> | initiator <id> | <opened> -> <closed> UTC | <#channel> | <status> |
 * summary <path>". Inside the caller's store transaction; DG_OK without
 * doing anything when no archive channel is configured; a negative
 * dg_status otherwise (the caller rolls back). Any thread.
 */
int dg_discuss_archive_locked(dg_plugin *p, const dg_discussion *d, const char *end_status,
                              const char *summary_path, int64_t closed_ms) DG_MUST_CHECK;

#endif
