/*
 * store_discuss_index.c -- SQL of the discussion index (schema v9):
 * store_discuss_index.h.
 */
#include "store_discuss_index.h"

#include <stdlib.h>
#include <string.h>

#include "store_db.h"
#include "store_int.h"

/*
 * Migration v8 -> v9: channel_name is the Discord name the
 * channel was created with (NULL on older rows: the channel id stands in);
 * the members index serves "the discussions of this agent".
 */
const char dg_schema_v9_discuss_index[] =
    "ALTER TABLE discussions ADD COLUMN channel_name TEXT;"
    "CREATE INDEX discussion_members_agent ON discussion_members(agent_id, discussion_id);";

static const char SQL_SET_NAME[] = "UPDATE discussions SET channel_name = ? WHERE id = ?";

int dg_store_discussion_set_name(dg_store *st, int64_t id, const char *name)
{
    DG_ASSERT_IN_TXN(st);
    dg_stmt *s = dg_store_stmt(st, SQL_SET_NAME);
    if (!s)
        return DG_ERR_IO;
    dg_store_bind_text(s, 1, name);
    dg_bind_int64(s, 2, id);
    return dg_store_run(s);
}

/* One text column of the discussion row id into *out. */
static int text_of(dg_store *st, const char *sql, int64_t id, char **out)
{
    *out = NULL;
    dg_stmt *s = dg_store_stmt(st, sql);
    if (!s)
        return DG_ERR_IO;
    dg_bind_int64(s, 1, id);
    int rc = dg_step(s), status = DG_OK;
    if (rc == DG_ROW) {
        if (!dg_col_null(s, 0) && !(*out = dg_store_col_dup(s, 0)))
            status = DG_ERR_NOMEM;
    } else {
        status = rc == DG_DONE ? DG_ERR_NOT_FOUND : DG_ERR_IO;
    }
    dg_reset(s);
    return status;
}

static const char SQL_NAME[] = "SELECT channel_name FROM discussions WHERE id = ?";
static const char SQL_CHANNEL[] = "SELECT discussion_channel_id FROM discussions WHERE id = ?";

int dg_store_discussion_name(dg_store *st, int64_t id, char **name)
{
    DG_ASSERT_IN_TXN(st);
    return text_of(st, SQL_NAME, id, name);
}

int dg_store_discussion_channel_of(dg_store *st, int64_t id, char **channel_id)
{
    DG_ASSERT_IN_TXN(st);
    int rc = text_of(st, SQL_CHANNEL, id, channel_id);
    return rc == DG_OK && !*channel_id ? DG_ERR_NOT_FOUND : rc;
}

static const char SQL_LIST_AGENT[] =
    "SELECT d.discussion_channel_id FROM discussions d"
    " WHERE d.id IN (SELECT discussion_id FROM discussion_members WHERE agent_id = ?1)"
    "   AND (?2 = 0 OR d.status = 'active')"
    " ORDER BY d.created_at_ms DESC, d.id DESC LIMIT ?3 OFFSET ?4";
/* Its parameters are the ones above less the agent: PostgreSQL refuses a
 * statement with a parameter it never sees (it cannot type $1). */
static const char SQL_LIST_ALL[] = "SELECT d.discussion_channel_id FROM discussions d"
                                   " WHERE (?1 = 0 OR d.status = 'active')"
                                   " ORDER BY d.created_at_ms DESC, d.id DESC LIMIT ?2 OFFSET ?3";

int dg_store_discussion_list(dg_store *st, const char *agent_id, int active_only, size_t offset,
                             size_t limit, char ***channels, size_t *n, int *more)
{
    DG_ASSERT_IN_TXN(st);
    *channels = NULL;
    *n = 0;
    *more = 0;
    dg_stmt *s = dg_store_stmt(st, agent_id ? SQL_LIST_AGENT : SQL_LIST_ALL);
    if (!s)
        return DG_ERR_IO;
    int k = agent_id ? 1 : 0;
    if (agent_id)
        dg_store_bind_text(s, 1, agent_id);
    dg_bind_int64(s, k + 1, active_only ? 1 : 0);
    /* One row more than the page says whether there is a next page. */
    dg_bind_int64(s, k + 2, (int64_t)limit + 1);
    dg_bind_int64(s, k + 3, (int64_t)offset);
    char **v = limit ? calloc(limit, sizeof *v) : NULL;
    int rc, status = limit && !v ? DG_ERR_NOMEM : DG_OK;
    while (status == DG_OK && (rc = dg_step(s)) == DG_ROW) {
        if (*n == limit) {
            *more = 1;
            break;
        }
        if (!(v[*n] = dg_store_col_dup(s, 0)))
            status = DG_ERR_NOMEM;
        else
            (*n)++;
    }
    if (status == DG_OK && !*more && rc != DG_DONE)
        status = DG_ERR_IO;
    dg_reset(s);
    if (status != DG_OK) {
        for (size_t i = 0; i < *n; i++)
            free(v[i]);
        free(v);
        *n = 0;
        return status;
    }
    if (*n == 0) {
        free(v);
        v = NULL;
    }
    *channels = v;
    return DG_OK;
}
