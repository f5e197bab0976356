/*
 * ws_frame.c -- RFC 6455 section 5.2 frame headers.
 */
#include "ws_frame.h"

#include <stdlib.h>
#include <string.h>

int ws_frame_parse(const uint8_t *buf, size_t n, ws_frame_hdr *h)
{
    if (n < 2)
        return 0;
    memset(h, 0, sizeof *h);
    h->fin = (buf[0] >> 7) & 1;
    h->rsv = (buf[0] >> 4) & 7;
    h->opcode = buf[0] & 0x0F;
    h->masked = (buf[1] >> 7) & 1;
    uint64_t len = buf[1] & 0x7F;
    size_t at = 2;
    if (len == 126) {
        if (n < 4)
            return 0;
        len = (uint64_t)buf[2] << 8 | buf[3];
        at = 4;
    } else if (len == 127) {
        if (n < 10)
            return 0;
        len = 0;
        for (int i = 0; i < 8; i++)
            len = len << 8 | buf[2 + i];
        at = 10;
    }
    if (h->masked) {
        if (n < at + 4)
            return 0;
        memcpy(h->mask, buf + at, 4);
        at += 4;
    }
    h->len = len;
    h->hdr_len = at;
    return 1;
}

void ws_frame_unmask(uint8_t *p, size_t n, const uint8_t mask[4])
{
    for (size_t i = 0; i < n; i++)
        p[i] ^= mask[i & 3];
}

uint8_t *ws_frame_build(int fin, int opcode, const void *payload, size_t len, const uint8_t *mask,
                        size_t *out_len)
{
    size_t hl = 2 + (len >= 65536 ? 8 : len >= 126 ? 2 : 0) + (mask ? 4 : 0);
    uint8_t *f = malloc(hl + len + 1);
    if (!f)
        return NULL;
    f[0] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0F));
    size_t at = 2;
    if (len >= 65536) {
        f[1] = 127;
        for (int i = 0; i < 8; i++)
            f[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
        at = 10;
    } else if (len >= 126) {
        f[1] = 126;
        f[2] = (uint8_t)(len >> 8);
        f[3] = (uint8_t)len;
        at = 4;
    } else {
        f[1] = (uint8_t)len;
    }
    if (mask) {
        f[1] |= 0x80;
        memcpy(f + at, mask, 4);
        at += 4;
    }
    if (len)
        memcpy(f + at, payload, len);
    if (mask)
        ws_frame_unmask(f + at, len, mask);
    *out_len = at + len;
    return f;
}
