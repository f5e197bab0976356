/*
 * ws_accept.h -- the one piece of crypto a websocket handshake needs:
 * Sec-WebSocket-Accept = base64(SHA-1(key + RFC 6455 GUID)). Used by the
 * server side (ws_server.c, and the fake Discord's gateway for MHD's 101)
 * and the test client (to check it).
 * Pure functions, any thread.
 */
#ifndef DG_WS_ACCEPT_H
#define DG_WS_ACCEPT_H

#include <stddef.h>
#include <stdint.h>

/* SHA-1 of len bytes into out (20 bytes). */
void ws_sha1(const void *data, size_t len, uint8_t out[20]);

/* Standard base64 (with padding) of len bytes into out, NUL-terminated;
 * out_len must be >= 4 * ((len + 2) / 3) + 1. Returns the text length,
 * or 0 when out is too small. */
size_t ws_base64(const uint8_t *in, size_t len, char *out, size_t out_len);

/* The Sec-WebSocket-Accept value for a client's key into out (29 bytes:
 * 28 characters + NUL). */
void ws_accept_key(const char *client_key, char out[29]);

#endif
