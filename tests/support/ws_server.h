/*
 * ws_server.h -- the server side of RFC 6455 for the test fakes (the fake
 * Discord's gateway, the fake Slack's Socket Mode): one thread per
 * connection that alone reads and writes its socket, frames queued by any
 * thread under the owner's lock and sent by that thread (woken with an
 * eventfd, so a slow client never blocks the thread that queued), pings
 * answered, close handshakes, message size limits, and stop. The owner
 * keeps only its protocol, in the callbacks.
 *
 * Connections come two ways: a socket an HTTP server already upgraded
 * (ws_server_adopt, e.g. from MHD's upgrade callback), or the server's own
 * loopback listener (ws_server_listen), where each connection's HTTP/1.1
 * request head goes to the `request` callback, which answers it or
 * upgrades it (ws_conn_upgrade).
 *
 * Locking: one lock, the owner's mutex (given to ws_server_new). Functions
 * marked "locked" expect it held; the connection threads take it around
 * every state change and never hold it across socket I/O. The owner's
 * condition is broadcast when a connection is added and when one ends.
 *
 * Memory: the server owns its connections. Each has a zeroed block of
 * conn_data_size bytes for the owner's per-connection state
 * (ws_conn_data), freed with the connection; a ws_conn is valid until its
 * `closed` callback returns (for a connection that never became a
 * websocket: until `request` returns) and must not be kept past that.
 */
#ifndef DG_WS_SERVER_H
#define DG_WS_SERVER_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* A client message (all fragments together) above this is refused with
 * close 1009. */
#define WS_SERVER_MAX_MESSAGE (64 * 1024)

typedef struct ws_server ws_server;
typedef struct ws_conn ws_conn;

typedef struct ws_server_cbs {
    /* An HTTP request on the own listener (method, target as on the request
     * line, head: the whole head with its CRLFs, borrowed for the call).
     * The connection's thread, WITHOUT the lock. Answer with
     * ws_conn_respond and return 0 (the connection then closes), or call
     * ws_conn_upgrade and return 1 when it returned 0 (the websocket is
     * served). NULL for servers that only adopt. */
    int (*request)(void *ud, ws_conn *c, const char *method, const char *target, const char *head);
    /* The websocket is up: queue the greeting here. The connection's
     * thread, lock held. */
    void (*opened)(void *ud, ws_conn *c);
    /* A whole data message (fragments joined): opcode WS_OP_TEXT or
     * WS_OP_BINARY, p borrowed for the call (not NUL-terminated). Not
     * called once the connection is closing. The connection's thread, lock
     * held. */
    void (*message)(void *ud, ws_conn *c, int opcode, const char *p, size_t len);
    /* The websocket ended (either side closed, the socket failed, or stop);
     * the last call for c: drop every pointer to it. Only for connections
     * that became websockets. The connection's thread, lock held. */
    void (*closed)(void *ud, ws_conn *c);
} ws_server_cbs;

/* A server using the owner's mu and cv (both must outlive it; they need
 * not be initialised yet), cbs copied, ud passed to every callback.
 * io_timeout_ms bounds a request head, a blocked write and the wait for
 * the client's answer to a close. NULL when out of memory. Free with
 * ws_server_free after ws_server_shutdown. */
ws_server *ws_server_new(pthread_mutex_t *mu, pthread_cond_t *cv, const ws_server_cbs *cbs,
                         void *ud, size_t conn_data_size, long io_timeout_ms);

/* Listen on 127.0.0.1:port (0: any free port) with an accept thread of
 * its own; the bound port in *out_port. 0, or -1 with errno set. Once, on
 * the thread that created the server, without the lock. */
int ws_server_listen(ws_server *s, int port, int *out_port);

/* Take over sock, already upgraded to a websocket by an HTTP server;
 * extra_in: bytes that server read past the request (copied). release
 * (may be NULL: then the socket is closed) hands the socket back to that
 * server; it is called once, from the connection's thread at its end or
 * right here when no thread can be started (out of memory, or stopping:
 * then a close 1001 goes out first). Any thread, without the lock. */
void ws_server_adopt(ws_server *s, int sock, const void *extra_in, size_t extra_in_size,
                     void (*release)(void *), void *release_arg);

/* Join and free connections whose thread ended. Without the lock. */
void ws_server_reap(ws_server *s);

/* Close every websocket (1001, its answer not awaited), stop the listener
 * and join every thread; connections arriving from now on are refused.
 * Without the lock. NULL is fine. */
void ws_server_shutdown(ws_server *s);

/* Free; after ws_server_shutdown. NULL is fine. */
void ws_server_free(ws_server *s);

/* 1 once ws_server_shutdown has begun (locked). */
int ws_server_stopping(const ws_server *s);

/* The websockets that have not ended, newest first: prev NULL gives the
 * first, NULL after the last (locked). */
ws_conn *ws_server_next(const ws_server *s, const ws_conn *prev);

/* The owner's per-connection block (conn_data_size bytes, zeroed at
 * first). Any thread that may use c. */
void *ws_conn_data(ws_conn *c);

/* 1, 2, ... in the order the server took connections (locked). */
long ws_conn_id(const ws_conn *c);

/* ws_now_ms() when the websocket came up (adopted, or answered 101) (locked). */
int64_t ws_conn_opened_ms(const ws_conn *c);

/* 1 once a close frame is queued (by either side); nothing but control
 * frames goes out after it (locked). */
int ws_conn_closing(const ws_conn *c);

/* Queue a text frame; dropped when the connection is closing (locked). */
void ws_conn_send_text(ws_conn *c, const char *text);

/* Queue j (stolen; NULL is fine) as one compact text frame (locked). */
void ws_conn_send_json(ws_conn *c, json_t *j);

/* Queue a close frame (code, reason cut to fit 125 bytes) unless one is
 * queued already; the connection ends once it is sent and the client
 * answered, or io_timeout_ms passed (locked). */
void ws_conn_close(ws_conn *c, int code, const char *reason);

/* ---- for the request callback: the connection's thread, without the lock ---- */

/* Answer with an HTTP/1.1 status line, Content-Type: application/json and
 * body; 0 or -1. */
int ws_conn_respond(ws_conn *c, int status, const char *reason, const char *body);

/* Answer 101 to head, a websocket upgrade (see ws_http_is_upgrade); 0, or
 * -1 when head is none (nothing is sent then) or the write failed. */
int ws_conn_upgrade(ws_conn *c, const char *head);

/* 1 when head asks for a websocket this server speaks: Upgrade: websocket,
 * a Sec-WebSocket-Key and Sec-WebSocket-Version 13. */
int ws_http_is_upgrade(const char *head);

/* Value of header name in head (case-insensitive name, blanks trimmed)
 * into out; 0, or -1 when absent or longer than n - 1. */
int ws_http_header(const char *head, const char *name, char *out, size_t n);

/* Query parameter key of target into out, not percent-decoded (the values
 * the fakes read are ids); 0, or -1 when absent or longer than n - 1. */
int ws_http_query(const char *target, const char *key, char *out, size_t n);

/* Milliseconds of CLOCK_MONOTONIC (the clock of ws_conn_opened_ms). */
int64_t ws_now_ms(void);

#endif
