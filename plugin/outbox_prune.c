/*
 * outbox_prune.c -- retention: sent/failed rows and closed-notice marks
 * older than outbox.retentionSec are deleted by the dispatcher,
 * PRUNE_BATCH rows per transaction (the store lock is released in
 * between), at most PRUNE_ROUNDS batches per table each PRUNE_EVERY_MS; the
 * first round runs before the first pass. Discussions are the archive and
 * stay.
 */
#include "outbox_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_cost.h"
#include "store_discuss.h"

#define PRUNE_BATCH 500
#define PRUNE_ROUNDS 20
#define PRUNE_EVERY_MS (10L * 60 * 1000)

enum { PRUNE_OUTBOX, PRUNE_NOTICES, PRUNE_COST };

static const char *const PRUNED[] = {"sent messages", "closed-notice marks", "cost ledger rows"};

/* One bounded round of one table's pruning; returns rows removed, or -1
 * when the store failed (logged). */
static long prune_table(dg_outbox *ob, int which, int64_t before)
{
    dg_plugin *p = ob->p;
    long total = 0;
    for (int round = 0; round < PRUNE_ROUNDS && !outbox_stopping(ob); round++) {
        long removed = 0;
        int rc = dg_store_begin(p->store);
        if (rc == DG_OK) {
            rc = which == PRUNE_NOTICES
                     ? dg_store_discussion_notices_prune(p->store, before, PRUNE_BATCH, &removed)
                 : which == PRUNE_COST
                     ? dg_store_cost_prune(p->store, before, PRUNE_BATCH, &removed)
                     : dg_store_outbox_prune(p->store, before, PRUNE_BATCH, &removed);
            if (rc == DG_OK)
                rc = dg_store_commit(p->store);
            else
                dg_store_rollback(p->store);
        }
        if (rc != DG_OK) {
            dg_log(p, OC_LOG_WARN,
                   "outbox: could not delete old %s (%s); tried again in %ld "
                   "minutes",
                   PRUNED[which], dg_status_name(rc), PRUNE_EVERY_MS / 60000);
            return -1;
        }
        total += removed;
        if (removed < PRUNE_BATCH)
            break;
    }
    return total;
}

void outbox_prune_due(dg_outbox *ob)
{
    OUTBOX_ON_DISPATCHER(ob);
    if (outbox_mono_ms() < ob->next_prune || ob->p->cfg.outbox_retention_sec <= 0)
        return;
    ob->next_prune = outbox_mono_ms() + PRUNE_EVERY_MS;
    int64_t before = dg_now_ms(ob->p) - (int64_t)ob->p->cfg.outbox_retention_sec * 1000;
    long rows = prune_table(ob, PRUNE_OUTBOX, before);
    long marks = prune_table(ob, PRUNE_NOTICES, before);
    long runs = prune_table(ob, PRUNE_COST, before);
    if (rows > 0 || marks > 0 || runs > 0)
        dg_log(ob->p, OC_LOG_DEBUG,
               "outbox: deleted %ld sent or failed messages, %ld closed-notice marks and %ld "
               "cost ledger rows older than outbox.retentionSec (%lds)",
               rows > 0 ? rows : 0, marks > 0 ? marks : 0, runs > 0 ? runs : 0,
               ob->p->cfg.outbox_retention_sec);
}
