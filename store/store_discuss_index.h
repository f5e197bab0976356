/*
 * store_discuss_index.h -- the SQL of the discussion index (schema v9):
 * each discussion's Discord channel name (the summary path
 * convention <summaryDir>/<name>.md, the archive line's title) and the
 * look-ups of the discussion_status / discussion_list tools.
 *
 * Every function here runs inside a store transaction and returns DG_OK or
 * a negative dg_status (DG_ERR_IO for SQLite errors).
 */
#ifndef DG_STORE_DISCUSS_INDEX_H
#define DG_STORE_DISCUSS_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include "store_records.h"
#include "store.h"
#include "must_check.h"

/* Record the channel name of discussion id (NULL: none). */
int dg_store_discussion_set_name(dg_store *st, int64_t id, const char *name) DG_MUST_CHECK;

/* The channel name of discussion id into *name (malloc'd, caller frees;
 * NULL when none was recorded, rows before v9). */
int dg_store_discussion_name(dg_store *st, int64_t id, char **name) DG_MUST_CHECK;

/* The discussion channel of discussion id into *channel_id (malloc'd,
 * caller frees); DG_ERR_NOT_FOUND when there is no such discussion. */
int dg_store_discussion_channel_of(dg_store *st, int64_t id, char **channel_id) DG_MUST_CHECK;

/*
 * Discussions agent_id initiated or was invited to (agent_id NULL: all),
 * newest first (creation time, then id), skipping `offset`, at most `limit`;
 * only active ones when active_only. Channel ids into *channels (malloc'd
 * array of malloc'd strings, caller frees each and the array; NULL when *n
 * is 0); *more is 1 when rows beyond the page exist.
 */
int dg_store_discussion_list(dg_store *st, const char *agent_id, int active_only, size_t offset,
                             size_t limit, char ***channels, size_t *n, int *more) DG_MUST_CHECK;

#endif
