/*
 * ws_client.h -- a minimal blocking websocket client for the Check suites
 * (plain sockets, 127.0.0.1 only): connect with the RFC 6455 handshake,
 * send masked frames, read frames with a deadline. One thread owns a
 * client; nothing is shared.
 */
#ifndef DG_WS_CLIENT_H
#define DG_WS_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

typedef struct ws_client ws_client;

/* Connect to ws://127.0.0.1:port<path_query> within timeout_ms. Returns a
 * client (free with ws_client_close) or NULL; *http_status (may be NULL)
 * gets the handshake's HTTP status (101 on success, 0 when none). */
ws_client *ws_client_connect(int port, const char *path_query, long timeout_ms, int *http_status);

/* Send one frame (masked as a client must); fin 0 starts or continues a
 * fragmented message. 0 or -1. */
int ws_client_send(ws_client *c, int fin, int opcode, const void *p, size_t len);

/* Send a JSON value as one text frame (j borrowed). 0 or -1. */
int ws_client_send_json(ws_client *c, json_t *j);

/* Read the next frame within timeout_ms: its opcode (>= 0) with the
 * payload as a NEW malloc'd NUL-terminated buffer in *out (caller frees)
 * and its length in *len; -1 on timeout, -2 when the connection ended.
 * Fragments are returned as they come (no reassembly). */
int ws_client_read(ws_client *c, long timeout_ms, char **out, size_t *len);

/* The next text frame parsed as JSON (NEW reference), skipping pings and
 * pongs, within timeout_ms; NULL on timeout, end or a close frame (then
 * *close_code, may be NULL, gets its code, else 0). */
json_t *ws_client_next_json(ws_client *c, long timeout_ms, int *close_code);

/* Wait for a dispatch with t == event (others skipped) within timeout_ms;
 * NEW reference of the whole payload, or NULL. */
json_t *ws_client_wait_dispatch(ws_client *c, const char *event, long timeout_ms);

/* Close the socket (no close handshake) and free. NULL is fine. */
void ws_client_close(ws_client *c);

#endif
