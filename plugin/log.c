/*
 * log.c -- logging through the host (its table's log, host_calls.h).
 *
 * Why lines are sometimes queued: a host may run its own code on one
 * thread only and relay a host call made on another thread to it, blocking
 * the caller until that thread is free (the Node bridge does: koffi runs a
 * callback from a foreign thread on Node's main thread). If that main
 * thread is itself inside a synchronous call into the plugin that waits for
 * a lock the logging thread holds, both wait for ever. So a line is handed
 * to the host directly only when the calling thread holds nothing: the
 * plugin's own threads (outbox, turn sweeper) and any thread inside a store
 * transaction (which holds the store and the turn writer locks) queue the
 * line instead, and the log pump, a thread that holds no lock, delivers it.
 * Lines keep their order per thread; the queue is bounded (a burst beyond
 * it is counted and reported, never blocks).
 */
#include "dirigent.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scrub.h"

#define LOG_QUEUE_CAP 4096

typedef struct queued_line {
    int level;
    char *text;
} queued_line;

struct dg_log_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    queued_line ring[LOG_QUEUE_CAP];
    size_t head, n;
    long dropped;
    int stop;
    int running; /* the pump thread exists */
    pthread_t thread;
};

/* Hand one line to the host. The calling thread holds no plugin lock. */
static void deliver(const dg_plugin *p, int level, const char *text)
{
    p->host.log(p->host.ctx, level, text);
}

/* Pops every queued line and delivers it, the queue unlocked while the
 * host runs. Reports lines dropped on overflow. Pump or shutdown thread. */
static void drain(const dg_plugin *p, dg_log_queue *q, int wait)
{
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (wait && !q->stop && q->n == 0 && !q->dropped)
            pthread_cond_wait(&q->cv, &q->mu);
        if (q->n == 0 && !q->dropped)
            break;
        long dropped = q->dropped;
        q->dropped = 0;
        queued_line l = {0, NULL};
        if (q->n) {
            l = q->ring[q->head];
            q->head = (q->head + 1) % LOG_QUEUE_CAP;
            q->n--;
        }
        pthread_mutex_unlock(&q->mu);
        if (dropped) {
            char note[160];
            snprintf(note, sizeof note,
                     "dirigent: %ld log lines were dropped (more than %d "
                     "waiting at once)",
                     dropped, LOG_QUEUE_CAP);
            deliver(p, OC_LOG_WARN, note);
        }
        if (l.text) {
            deliver(p, l.level, l.text);
            free(l.text);
        }
        pthread_mutex_lock(&q->mu);
        if (q->stop && wait)
            wait = 0; /* stop requested: deliver what is left, then end */
    }
    pthread_mutex_unlock(&q->mu);
}


static void *pump(void *arg)
{
    const dg_plugin *p = arg;
    dg_log_own_thread();
    dg_log_queue *q = p->logq;
    for (;;) {
        drain(p, q, 1);
        pthread_mutex_lock(&q->mu);
        int stop = q->stop && q->n == 0;
        pthread_mutex_unlock(&q->mu);
        if (stop)
            return NULL;
    }
}

int dg_log_queue_new(dg_log_queue **out)
{
    dg_log_queue *q = calloc(1, sizeof *q);
    if (!q)
        return DG_ERR_NOMEM;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    *out = q;
    return DG_OK;
}

int dg_log_pump_start(dg_plugin *p)
{
    dg_log_queue *q = p ? p->logq : NULL;
    if (!q)
        return DG_ERR_INVALID;
    pthread_mutex_lock(&q->mu);
    int rc = DG_OK;
    if (!q->running && !q->stop) {
        if (pthread_create(&q->thread, NULL, pump, p) == 0)
            q->running = 1;
        else
            rc = DG_ERR_NOMEM;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

void dg_log_queue_free(dg_plugin *p)
{
    dg_log_queue *q = p ? p->logq : NULL;
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    int running = q->running;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (running)
        pthread_join(q->thread, NULL);
    /* What no pump delivered (it never started, or lines came late) goes
     * out from the shutdown thread, which may call the host. */
    drain(p, q, 0);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
    p->logq = NULL;
}

/* Queue a copy of text; 0, or -1 when there is no running queue (the
 * caller then delivers it directly). */
static int enqueue(const dg_plugin *p, int level, const char *text)
{
    dg_log_queue *q = p->logq;
    if (!q)
        return -1;
    pthread_mutex_lock(&q->mu);
    if (q->stop && !q->running) {
        pthread_mutex_unlock(&q->mu);
        return -1;
    }
    if (q->n == LOG_QUEUE_CAP) {
        q->dropped++;
    } else {
        char *copy = strdup(text);
        if (!copy) {
            q->dropped++;
        } else {
            q->ring[(q->head + q->n) % LOG_QUEUE_CAP] = (queued_line){level, copy};
            q->n++;
        }
    }
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return 0;
}

void dg_log(const dg_plugin *p, int level, const char *fmt, ...)
{
    if (!p || !p->host.log)
        return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    dg_scrub_secret(buf, p->cfg.moderator_token); /* also a piece of it */
    if (dg_log_deferred() && enqueue(p, level, buf) == 0)
        return;
    deliver(p, level, buf);
}
