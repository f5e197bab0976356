/*
 * ws_client.c -- the test websocket client (see ws_client.h).
 */
#include "ws_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ws_accept.h"
#include "ws_frame.h"

struct ws_client {
    int sock;
    uint8_t *buf;
    size_t len, cap;
    uint32_t mask_seed;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read more bytes into c->buf until the deadline; 1 got some, 0 timeout,
 * -1 end of stream or error. */
static int fill(ws_client *c, int64_t until)
{
    if (c->cap - c->len < 4096) {
        size_t cap = c->cap ? c->cap * 2 : 16384;
        uint8_t *nb = realloc(c->buf, cap);
        if (!nb)
            return -1;
        c->buf = nb;
        c->cap = cap;
    }
    int64_t left = until - mono_ms();
    if (left <= 0)
        return 0;
    struct pollfd pf = {c->sock, POLLIN, 0};
    int pr = poll(&pf, 1, (int)left);
    if (pr == 0)
        return 0;
    if (pr < 0)
        return errno == EINTR ? 0 : -1;
    ssize_t r = recv(c->sock, c->buf + c->len, c->cap - c->len, 0);
    if (r <= 0)
        return -1;
    c->len += (size_t)r;
    return 1;
}

static int send_all(int sock, const void *p, size_t len)
{
    const uint8_t *b = p;
    int64_t until = mono_ms() + 5000;
    while (len) {
        ssize_t w = send(sock, b, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            b += w;
            len -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        int64_t left = until - mono_ms();
        if (left <= 0)
            return -1;
        struct pollfd pf = {sock, POLLOUT, 0};
        poll(&pf, 1, (int)left);
    }
    return 0;
}

ws_client *ws_client_connect(int port, const char *path_query, long timeout_ms, int *http_status)
{
    if (http_status)
        *http_status = 0;
    int64_t until = mono_ms() + timeout_ms;
    ws_client *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->mask_seed = (uint32_t)port * 2654435761u + (uint32_t)mono_ms();
    c->sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (c->sock < 0 || connect(c->sock, (struct sockaddr *)&sa, sizeof sa) != 0) {
        ws_client_close(c);
        return NULL;
    }
    /* A fixed key is fine for tests; the answer is checked against it. */
    const char *key = "dGhlIHNhbXBsZSBub25jZQ==";
    char req[512];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n\r\n",
                     path_query, port, key);
    if (n < 0 || (size_t)n >= sizeof req || send_all(c->sock, req, (size_t)n) != 0) {
        ws_client_close(c);
        return NULL;
    }
    char *end = NULL;
    while (!end) {
        if (fill(c, until) <= 0) {
            ws_client_close(c);
            return NULL;
        }
        c->buf[c->len < c->cap ? c->len : c->cap - 1] = 0;
        end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    }
    size_t hl = (size_t)(end - (char *)c->buf) + 4;
    int status = 0;
    sscanf((char *)c->buf, "HTTP/1.1 %d", &status);
    if (http_status)
        *http_status = status;
    char want[29];
    ws_accept_key(key, want);
    int ok = status == 101 && memmem(c->buf, hl, want, strlen(want)) != NULL;
    memmove(c->buf, c->buf + hl, c->len - hl);
    c->len -= hl;
    if (!ok) {
        ws_client_close(c);
        return NULL;
    }
    return c;
}

int ws_client_send(ws_client *c, int fin, int opcode, const void *p, size_t len)
{
    c->mask_seed = c->mask_seed * 1103515245u + 12345u;
    uint8_t mask[4] = {(uint8_t)(c->mask_seed >> 24), (uint8_t)(c->mask_seed >> 16),
                       (uint8_t)(c->mask_seed >> 8), (uint8_t)c->mask_seed | 1};
    size_t fl;
    uint8_t *f = ws_frame_build(fin, opcode, p, len, mask, &fl);
    if (!f)
        return -1;
    int rc = send_all(c->sock, f, fl);
    free(f);
    return rc;
}

int ws_client_send_json(ws_client *c, json_t *j)
{
    char *t = json_dumps(j, JSON_COMPACT);
    int rc = t ? ws_client_send(c, 1, WS_OP_TEXT, t, strlen(t)) : -1;
    free(t);
    return rc;
}

int ws_client_read(ws_client *c, long timeout_ms, char **out, size_t *len)
{
    int64_t until = mono_ms() + timeout_ms;
    *out = NULL;
    *len = 0;
    for (;;) {
        ws_frame_hdr h;
        if (ws_frame_parse(c->buf, c->len, &h) && c->len - h.hdr_len >= h.len) {
            char *p = malloc((size_t)h.len + 1);
            if (!p)
                return -2;
            memcpy(p, c->buf + h.hdr_len, (size_t)h.len);
            p[h.len] = 0;
            if (h.masked)
                ws_frame_unmask((uint8_t *)p, (size_t)h.len, h.mask);
            size_t used = h.hdr_len + (size_t)h.len;
            memmove(c->buf, c->buf + used, c->len - used);
            c->len -= used;
            *out = p;
            *len = (size_t)h.len;
            return h.opcode;
        }
        int f = fill(c, until);
        if (f == 0)
            return -1;
        if (f < 0)
            return -2;
    }
}

json_t *ws_client_next_json(ws_client *c, long timeout_ms, int *close_code)
{
    int64_t until = mono_ms() + timeout_ms;
    if (close_code)
        *close_code = 0;
    for (;;) {
        int64_t left = until - mono_ms();
        char *p;
        size_t n;
        int op = ws_client_read(c, left > 0 ? left : 0, &p, &n);
        if (op < 0)
            return NULL;
        if (op == WS_OP_CLOSE) {
            if (close_code && n >= 2)
                *close_code = ((unsigned char)p[0] << 8) | (unsigned char)p[1];
            free(p);
            return NULL;
        }
        if (op == WS_OP_TEXT) {
            json_t *j = json_loadb(p, n, 0, NULL);
            free(p);
            return j;
        }
        free(p);
    }
}

json_t *ws_client_wait_dispatch(ws_client *c, const char *event, long timeout_ms)
{
    int64_t until = mono_ms() + timeout_ms;
    for (;;) {
        int64_t left = until - mono_ms();
        if (left <= 0)
            return NULL;
        json_t *j = ws_client_next_json(c, left, NULL);
        if (!j)
            return NULL;
        const char *t = json_string_value(json_object_get(j, "t"));
        if (t && !strcmp(t, event))
            return j;
        json_decref(j);
    }
}

void ws_client_close(ws_client *c)
{
    if (!c)
        return;
    if (c->sock >= 0)
        close(c->sock);
    free(c->buf);
    free(c);
}
