/*
 * discuss_archive.c -- one archive index line per closed discussion
 * (discuss_archive.h).
 */
#include "discuss_archive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "outbox.h"
#include "store_discuss_index.h"

static void day_time(int64_t ms, char *buf, size_t len)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&s, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M", &tm))
        snprintf(buf, len, "?");
}

int dg_discuss_archive_locked(dg_plugin *p, const dg_discussion *d, const char *end_status,
                              const char *summary_path, int64_t closed_ms)
{
    const char *archive = p->cfg.archive_channel_id;
    if (!archive)
        return DG_OK;
    char *name = NULL;
    int rc = dg_store_discussion_name(p->store, d->id, &name);
    if (rc != DG_OK)
        return rc;
    char opened[32], closed[32];
    day_time(d->created_at_ms, opened, sizeof opened);
    day_time(closed_ms, closed, sizeof closed);
    /* The summary path is the agent's; it is shown in a code span so no
     * character of it formats the line (pings are off: no mention ids). */
    const char *path = summary_path ? summary_path : "none";
    size_t len = strlen(path) + (name ? strlen(name) : 0) + strlen(d->initiator_agent_id) +
                 strlen(d->discussion_channel_id) * 2 + 160;
    char *line = malloc(len);
    if (!line) {
        free(name);
        return DG_ERR_NOMEM;
    }
    int tick = strchr(path, '`') != NULL;
    snprintf(line, len, "%s | initiator %s | %s -> %s UTC | <#%s> | %s | summary %s%s%s",
             name ? name : d->discussion_channel_id, d->initiator_agent_id, opened, closed,
             d->discussion_channel_id, end_status, tick ? "``" : "`", path, tick ? "``" : "`");
    rc = dg_outbox_enqueue(p->store, archive, line, NULL, 0, closed_ms);
    free(line);
    free(name);
    return rc;
}
