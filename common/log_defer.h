/*
 * log_defer.h -- which threads must not hand a log line to the host
 * directly (plugin/log.c says why). A property of the calling thread only:
 * the store, below the plugin, marks its transactions here and the
 * plugin's logging reads the mark, so neither calls the other.
 */
#ifndef DG_LOG_DEFER_H
#define DG_LOG_DEFER_H

/* A plugin-owned thread calls this once when it starts: its lines always
 * go through the log pump. Calling thread. */
void dg_log_own_thread(void);

/* Bracket a store transaction (it holds the store and turn writer locks):
 * lines logged in between go through the log pump. Nestable; calling
 * thread. */
void dg_log_defer_begin(void);
void dg_log_defer_end(void);

/* 1 when the calling thread is marked (inside a bracket, or a
 * plugin-owned thread): its lines go through the log pump. */
int dg_log_deferred(void);

#endif
