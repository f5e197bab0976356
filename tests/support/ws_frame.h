/*
 * ws_frame.h -- RFC 6455 frame headers: parse one, build one. Shared by the
 * fakes' websocket server, ws_server.c (reads masked frames, writes plain
 * ones), and the test client (the other way round). Pure functions, any
 * thread.
 */
#ifndef DG_WS_FRAME_H
#define DG_WS_FRAME_H

#include <stddef.h>
#include <stdint.h>

enum {
    WS_OP_CONT = 0x0,
    WS_OP_TEXT = 0x1,
    WS_OP_BINARY = 0x2,
    WS_OP_CLOSE = 0x8,
    WS_OP_PING = 0x9,
    WS_OP_PONG = 0xA,
};

typedef struct ws_frame_hdr {
    int fin;
    int rsv; /* the three RSV bits; nonzero is a protocol error here */
    int opcode;
    int masked;
    uint8_t mask[4];
    uint64_t len;   /* payload length */
    size_t hdr_len; /* bytes before the payload */
} ws_frame_hdr;

/* Parse the header at buf (n bytes available): 1 with *h filled, 0 when
 * more bytes are needed. The payload follows at buf + h->hdr_len. */
int ws_frame_parse(const uint8_t *buf, size_t n, ws_frame_hdr *h);

/* XOR payload bytes with the mask (masking and unmasking are the same). */
void ws_frame_unmask(uint8_t *p, size_t n, const uint8_t mask[4]);

/* A whole frame as a NEW malloc'd buffer (caller frees), its size in
 * *out_len; mask NULL: unmasked (server to client), else the payload is
 * masked with it (client to server). NULL when out of memory. */
uint8_t *ws_frame_build(int fin, int opcode, const void *payload, size_t len, const uint8_t *mask,
                        size_t *out_len);

#endif
