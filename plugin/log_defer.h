/*
 * log_defer.h -- which threads must not hand a log line to the host
 * directly (log.c says why). Part of the logging of dirigent.h, apart so
 * that the store, below the plugin, can mark its transactions.
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

#endif
