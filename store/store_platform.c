/*
 * store_platform.c -- the chat platform of the store's rows (schema v19):
 * the migration that gives the outbox, the discussions and the turn
 * channels a platform column, and the one check of a platform name the
 * writers share.
 */
#include "store_int.h"

#include <string.h>

/*
 * Migration v18 -> v19: rows know their chat platform. Dirigent managed
 * Discord alone until now, so every existing row is Discord's (the
 * default says so, without a rewrite of the rows). A Slack channel id
 * already differs from a snowflake, but a dispatcher of one platform must
 * skip the other's rows without parsing ids, and a discussion or a
 * channel's turn record must say where it lives. thread_id: the thread of
 * an outbox row on Slack, its parent message's ts (NULL: the channel
 * itself); a Discord thread is a channel of its own and needs none. The
 * CHECKs are two comparisons, not IN (...): SQLite builds an ephemeral
 * table for an IN list on every insert (see v11). Both back ends accept a
 * CHECK and a constant default in ADD COLUMN; the text is the same.
 */
#define PLATFORM_COL                                                                               \
    " ADD COLUMN platform TEXT NOT NULL DEFAULT 'discord'"                                         \
    " CHECK (platform = 'discord' OR platform = 'slack');"

const char dg_schema_v19_platform[] =
    "ALTER TABLE outbox" PLATFORM_COL "ALTER TABLE outbox ADD COLUMN thread_id TEXT;"
    "ALTER TABLE discussions" PLATFORM_COL "ALTER TABLE turn_channels" PLATFORM_COL;

const char *dg_store_platform_of(const char *name)
{
    if (!name || !strcmp(name, "discord"))
        return "discord";
    if (!strcmp(name, "slack"))
        return "slack";
    return NULL;
}

const char *dg_store_platform_col(const char *text)
{
    const char *p = dg_store_platform_of(text);
    return p ? p : "discord"; /* the CHECK admits nothing else */
}
