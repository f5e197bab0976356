/*
 * ws_server.c -- the websocket server layer of the test fakes: connection
 * threads, queued output, frame input, close handshakes, the own listener
 * with its HTTP/1.1 head, and stop. The protocols live in the callbacks.
 */
#include "ws_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ws_accept.h"
#include "ws_frame.h"

/* A request head longer than this is dropped unanswered. */
#define WS_MAX_HEAD 8192

typedef struct ws_out {
    uint8_t *buf;
    size_t len;
    struct ws_out *next;
} ws_out;

struct ws_conn {
    ws_server *s;
    int sock, efd;
    pthread_t thread;
    long id;
    int adopted; /* upgraded by someone else: a websocket from the start */
    void (*release)(void *);
    void *release_arg;
    uint8_t *in; /* thread only */
    size_t in_len, in_cap;
    /* under the lock: */
    int64_t opened_ms;
    int ws; /* a websocket: listed, and its callbacks run */
    int closing, done;
    ws_out *out_head, *out_tail;
    ws_conn *next;
    alignas(max_align_t) unsigned char data[]; /* the owner's block */
};

struct ws_server {
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    ws_server_cbs cbs;
    void *ud;
    size_t data_size;
    long io_timeout_ms;
    int lfd, stop_efd;
    pthread_t accept_thread;
    int accept_started;
    /* under the lock: */
    int stopping;
    long next_id;
    ws_conn *conns; /* newest first */
};

int64_t ws_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- output (locked) ------------------------------------------------------------- */

static void wake(ws_conn *c)
{
    uint64_t one = 1;
    ssize_t w = write(c->efd, &one, sizeof one);
    (void)w; /* a saturated counter still wakes the thread */
}

static void queue_frame(ws_conn *c, int opcode, const void *p, size_t len)
{
    ws_out *o = calloc(1, sizeof *o);
    if (!o)
        return;
    o->buf = ws_frame_build(1, opcode, p, len, NULL, &o->len);
    if (!o->buf) {
        free(o);
        return;
    }
    if (c->out_tail)
        c->out_tail->next = o;
    else
        c->out_head = o;
    c->out_tail = o;
    wake(c);
}

void ws_conn_send_text(ws_conn *c, const char *text)
{
    if (!c->closing)
        queue_frame(c, WS_OP_TEXT, text, strlen(text));
}

void ws_conn_send_json(ws_conn *c, json_t *j)
{
    char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (t)
        ws_conn_send_text(c, t);
    free(t);
    json_decref(j);
}

void ws_conn_close(ws_conn *c, int code, const char *reason)
{
    if (c->closing)
        return;
    uint8_t p[125];
    size_t rl = strlen(reason);
    if (rl > sizeof p - 2)
        rl = sizeof p - 2;
    p[0] = (uint8_t)(code >> 8);
    p[1] = (uint8_t)code;
    memcpy(p + 2, reason, rl);
    queue_frame(c, WS_OP_CLOSE, p, rl + 2);
    c->closing = 1;
}

static void drop_queue(ws_conn *c)
{
    while (c->out_head) {
        ws_out *n = c->out_head->next;
        free(c->out_head->buf);
        free(c->out_head);
        c->out_head = n;
    }
    c->out_tail = NULL;
}

/* ---- socket I/O (without the lock) -------------------------------------------------- */

/* Write all of buf within timeout_ms; 0 or -1. */
static int write_all(int sock, const void *buf, size_t len, long timeout_ms)
{
    const uint8_t *b = buf;
    int64_t until = ws_now_ms() + timeout_ms;
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(sock, b + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        int64_t left = until - ws_now_ms();
        if (left <= 0)
            return -1;
        struct pollfd pf = {sock, POLLOUT, 0};
        poll(&pf, 1, (int)left);
    }
    return 0;
}

/* Flush the queue: 1 when a close frame went out, -1 on a dead socket. */
static int flush(ws_conn *c)
{
    ws_server *s = c->s;
    pthread_mutex_lock(s->mu);
    ws_out *o = c->out_head;
    c->out_head = c->out_tail = NULL;
    pthread_mutex_unlock(s->mu);
    int rc = 0, sent_close = 0;
    while (o) {
        ws_out *n = o->next;
        if (rc == 0 && write_all(c->sock, o->buf, o->len, s->io_timeout_ms) != 0)
            rc = -1;
        if (rc == 0 && (o->buf[0] & 0x0F) == WS_OP_CLOSE)
            sent_close = 1;
        free(o->buf);
        free(o);
        o = n;
    }
    return rc ? -1 : sent_close;
}

/* Read more bytes into c->in (grown up to a bound); -1 on end or error. */
static int read_some(ws_conn *c)
{
    if (c->in_cap - c->in_len < 4096) {
        size_t cap = c->in_cap ? c->in_cap * 2 : 8192;
        if (cap > 4 * WS_SERVER_MAX_MESSAGE)
            cap = 4 * WS_SERVER_MAX_MESSAGE;
        uint8_t *ni = cap > c->in_cap ? realloc(c->in, cap) : NULL;
        if (ni) {
            c->in = ni;
            c->in_cap = cap;
        }
    }
    if (c->in_cap == c->in_len)
        return -1; /* cannot happen with the bound above; do not spin */
    ssize_t r = recv(c->sock, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        return -1;
    if (r > 0)
        c->in_len += (size_t)r;
    return 0;
}

/* ---- input --------------------------------------------------------------------------- */

/* Take the complete frames out of c->in. Returns 1 when the client closed
 * (its close is answered), 0 to go on. Without the lock (takes it). */
static int consume(ws_conn *c, uint8_t **msg, size_t *msg_len, int *msg_op)
{
    ws_server *s = c->s;
    size_t at = 0;
    int closed = 0;
    while (!closed) {
        ws_frame_hdr h;
        if (!ws_frame_parse(c->in + at, c->in_len - at, &h))
            break;
        int control = h.opcode >= 8;
        int bad = h.rsv || !h.masked || (control && (!h.fin || h.len > 125)) ||
                  (h.opcode != WS_OP_CONT && h.opcode != WS_OP_TEXT && h.opcode != WS_OP_BINARY &&
                   !control) ||
                  (h.opcode == WS_OP_CONT && !*msg_op) ||
                  ((h.opcode == WS_OP_TEXT || h.opcode == WS_OP_BINARY) && *msg_op);
        if (bad || h.len > WS_SERVER_MAX_MESSAGE || *msg_len + h.len > WS_SERVER_MAX_MESSAGE) {
            pthread_mutex_lock(s->mu);
            ws_conn_close(c, bad ? 1002 : 1009, bad ? "Protocol error." : "Message too big.");
            pthread_mutex_unlock(s->mu);
            c->in_len = 0; /* nothing after it is read */
            return 0;
        }
        if (c->in_len - at - h.hdr_len < h.len)
            break;
        uint8_t *p = c->in + at + h.hdr_len;
        ws_frame_unmask(p, (size_t)h.len, h.mask);
        at += h.hdr_len + (size_t)h.len;
        pthread_mutex_lock(s->mu);
        if (h.opcode == WS_OP_PING) {
            queue_frame(c, WS_OP_PONG, p, (size_t)h.len);
        } else if (h.opcode == WS_OP_CLOSE) {
            /* Echo the code (RFC 6455 5.5.1) unless ours went out first. */
            if (!c->closing) {
                uint8_t code[2] = {0x03, 0xE8}; /* 1000 */
                if (h.len >= 2)
                    memcpy(code, p, 2);
                queue_frame(c, WS_OP_CLOSE, code, 2);
                c->closing = 1;
            }
            closed = 1;
        } else if (h.opcode != WS_OP_PONG && !c->closing) {
            uint8_t *nm = realloc(*msg, *msg_len + (size_t)h.len + 1);
            if (nm) {
                *msg = nm;
                memcpy(nm + *msg_len, p, (size_t)h.len);
                *msg_len += (size_t)h.len;
                if (h.opcode != WS_OP_CONT)
                    *msg_op = h.opcode;
                if (h.fin) {
                    if (s->cbs.message)
                        s->cbs.message(s->ud, c, *msg_op, (const char *)nm, *msg_len);
                    *msg_len = 0;
                    *msg_op = 0;
                }
            }
        }
        pthread_mutex_unlock(s->mu);
    }
    memmove(c->in, c->in + at, c->in_len - at);
    c->in_len -= at;
    return closed;
}

/* ---- the connection thread -------------------------------------------------------- */

/* The websocket's life: the greeting, then frames until either side
 * closes or the server stops. */
static void serve(ws_conn *c)
{
    ws_server *s = c->s;
    uint8_t *msg = NULL;
    size_t msg_len = 0;
    int msg_op = 0, client_closed = 0;
    int64_t close_deadline = 0;

    pthread_mutex_lock(s->mu);
    if (!c->adopted) {
        c->ws = 1;
        c->opened_ms = ws_now_ms();
    }
    if (s->cbs.opened)
        s->cbs.opened(s->ud, c);
    pthread_mutex_unlock(s->mu);
    /* Bytes read past the HTTP request belong to the websocket. */
    if (c->in_len)
        client_closed = consume(c, &msg, &msg_len, &msg_op);

    for (;;) {
        pthread_mutex_lock(s->mu);
        int stopping = s->stopping;
        if (stopping)
            ws_conn_close(c, 1001, "Server stopping.");
        int closing = c->closing;
        pthread_mutex_unlock(s->mu);
        int f = flush(c);
        /* On stop the close frame is sent but its answer not awaited (RFC
         * 6455 lets the server end TCP first): stop stays prompt. */
        if (f < 0 || client_closed || stopping)
            break;
        if (closing && !close_deadline)
            close_deadline = ws_now_ms() + s->io_timeout_ms;
        int64_t wait = 1000;
        if (close_deadline && (wait = close_deadline - ws_now_ms()) <= 0)
            break;
        struct pollfd pf[2] = {{c->sock, POLLIN, 0}, {c->efd, POLLIN, 0}};
        if (poll(pf, 2, (int)wait) < 0 && errno != EINTR)
            break;
        if (pf[1].revents & POLLIN) {
            uint64_t v;
            ssize_t r = read(c->efd, &v, sizeof v);
            (void)r;
        }
        if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (read_some(c) != 0)
                break;
            client_closed = consume(c, &msg, &msg_len, &msg_op);
        }
    }
    free(msg);
}

/* Read the request head into head (NUL-terminated; leftover bytes stay in
 * c->in); 0, or -1 on end, timeout, a head too long, or stop. */
static int read_head(ws_conn *c, char *head, size_t n)
{
    int64_t until = ws_now_ms() + c->s->io_timeout_ms;
    for (;;) {
        if (c->in_len) {
            void *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
            if (end) {
                size_t hl = (size_t)((uint8_t *)end - c->in) + 4;
                if (hl >= n)
                    return -1;
                memcpy(head, c->in, hl);
                head[hl] = '\0';
                memmove(c->in, c->in + hl, c->in_len - hl);
                c->in_len -= hl;
                return 0;
            }
            if (c->in_len >= WS_MAX_HEAD)
                return -1;
        }
        int64_t left = until - ws_now_ms();
        if (left <= 0)
            return -1;
        struct pollfd pf[2] = {{c->sock, POLLIN, 0}, {c->efd, POLLIN, 0}};
        if (poll(pf, 2, (int)left) < 0 && errno != EINTR)
            return -1;
        if (pf[1].revents & POLLIN)
            return -1; /* stopping */
        if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) && read_some(c) != 0)
            return -1;
    }
}

/* A connection of the own listener: its request, then maybe a websocket. */
static void serve_http(ws_conn *c)
{
    ws_server *s = c->s;
    char head[WS_MAX_HEAD + 1], method[8], target[512];
    if (read_head(c, head, sizeof head) != 0 ||
        sscanf(head, "%7s %511s HTTP/1.1", method, target) != 2 || !s->cbs.request)
        return;
    if (s->cbs.request(s->ud, c, method, target, head) == 1)
        serve(c);
}

static void *conn_main(void *arg)
{
    ws_conn *c = arg;
    ws_server *s = c->s;
    if (c->adopted)
        serve(c);
    else
        serve_http(c);
    pthread_mutex_lock(s->mu);
    if (c->ws && s->cbs.closed)
        s->cbs.closed(s->ud, c);
    c->done = 1;
    drop_queue(c);
    pthread_cond_broadcast(s->cv);
    pthread_mutex_unlock(s->mu);
    if (c->release)
        c->release(c->release_arg); /* the HTTP server closes the socket */
    else
        shutdown(c->sock, SHUT_RDWR);
    return NULL;
}

/* ---- connections ------------------------------------------------------------------ */

static ws_conn *conn_new(ws_server *s, int sock)
{
    ws_conn *c = calloc(1, sizeof *c + s->data_size);
    if (!c)
        return NULL;
    c->s = s;
    c->sock = sock;
    c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->efd < 0) {
        free(c);
        return NULL;
    }
    return c;
}

/* Free c; its socket is closed unless an HTTP server takes it back. */
static void conn_free(ws_conn *c)
{
    if (!c->release)
        close(c->sock);
    close(c->efd);
    free(c->in);
    free(c);
}

/* Start c's thread and list it; 1, or 0 (stopping, or no thread) with c
 * untouched. *stopping (may be NULL) says whether stop had begun. */
static int conn_start(ws_server *s, ws_conn *c, int *stopping)
{
    pthread_mutex_lock(s->mu);
    c->id = ++s->next_id;
    int stop = s->stopping;
    int ok = !stop && pthread_create(&c->thread, NULL, conn_main, c) == 0;
    if (ok) {
        c->next = s->conns;
        s->conns = c;
        pthread_cond_broadcast(s->cv);
    }
    pthread_mutex_unlock(s->mu);
    if (stopping)
        *stopping = stop;
    return ok;
}

static void reap(ws_server *s, int all)
{
    for (;;) {
        pthread_mutex_lock(s->mu);
        ws_conn **pp = &s->conns, *c = NULL;
        while (*pp && !((*pp)->done || all))
            pp = &(*pp)->next;
        if (*pp) {
            c = *pp;
            *pp = c->next;
        }
        pthread_mutex_unlock(s->mu);
        if (!c)
            return;
        pthread_join(c->thread, NULL);
        conn_free(c);
    }
}

void ws_server_reap(ws_server *s)
{
    reap(s, 0);
}

void ws_server_adopt(ws_server *s, int sock, const void *extra_in, size_t extra_in_size,
                     void (*release)(void *), void *release_arg)
{
    ws_conn *c = conn_new(s, sock);
    if (c && extra_in_size && (c->in = malloc(extra_in_size + 8192))) {
        memcpy(c->in, extra_in, extra_in_size);
        c->in_len = extra_in_size;
        c->in_cap = extra_in_size + 8192;
    }
    if (!c || (extra_in_size && !c->in)) {
        if (c) {
            close(c->efd);
            free(c);
        }
        if (release)
            release(release_arg);
        else
            close(sock);
        return;
    }
    c->adopted = 1;
    c->ws = 1; /* listed from now on, as its thread may not have run yet */
    c->opened_ms = ws_now_ms();
    c->release = release;
    c->release_arg = release_arg;
    int stopping;
    if (conn_start(s, c, &stopping))
        return;
    /* Upgraded just as stop began: say so as every other socket hears. */
    static const uint8_t bye[] = {0x88, 0x02, 0x03, 0xE9}; /* close 1001 */
    if (stopping)
        write_all(sock, bye, sizeof bye, s->io_timeout_ms);
    conn_free(c);
    if (release)
        release(release_arg);
}

static void *accept_main(void *arg)
{
    ws_server *s = arg;
    for (;;) {
        struct pollfd pf[2] = {{s->lfd, POLLIN, 0}, {s->stop_efd, POLLIN, 0}};
        if (poll(pf, 2, 1000) < 0 && errno != EINTR)
            break;
        if (pf[1].revents & POLLIN)
            break;
        reap(s, 0);
        if (!(pf[0].revents & POLLIN))
            continue;
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        ws_conn *c = conn_new(s, fd);
        if (!c) {
            close(fd);
            continue;
        }
        if (!conn_start(s, c, NULL))
            conn_free(c);
    }
    return NULL;
}

static int listen_loopback(int port, int *out_port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    *out_port = ntohs(a.sin_port);
    return fd;
}

int ws_server_listen(ws_server *s, int port, int *out_port)
{
    if (s->lfd >= 0) {
        errno = EALREADY;
        return -1;
    }
    s->lfd = listen_loopback(port, out_port);
    if (s->lfd < 0)
        return -1;
    s->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->stop_efd < 0)
        return -1; /* the listener is closed by ws_server_shutdown */
    int e = pthread_create(&s->accept_thread, NULL, accept_main, s);
    if (e != 0) {
        errno = e;
        return -1;
    }
    s->accept_started = 1;
    return 0;
}

/* ---- the server -------------------------------------------------------------------- */

ws_server *ws_server_new(pthread_mutex_t *mu, pthread_cond_t *cv, const ws_server_cbs *cbs,
                         void *ud, size_t conn_data_size, long io_timeout_ms)
{
    ws_server *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->mu = mu;
    s->cv = cv;
    s->cbs = *cbs;
    s->ud = ud;
    s->data_size = conn_data_size;
    s->io_timeout_ms = io_timeout_ms;
    s->lfd = s->stop_efd = -1;
    return s;
}

void ws_server_shutdown(ws_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(s->mu);
    s->stopping = 1;
    for (ws_conn *c = s->conns; c; c = c->next)
        wake(c);
    pthread_mutex_unlock(s->mu);
    if (s->accept_started) {
        uint64_t one = 1;
        ssize_t w = write(s->stop_efd, &one, sizeof one);
        (void)w;
        pthread_join(s->accept_thread, NULL);
        s->accept_started = 0;
    }
    reap(s, 1);
    if (s->lfd >= 0)
        close(s->lfd);
    s->lfd = -1;
}

void ws_server_free(ws_server *s)
{
    if (!s)
        return;
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->stop_efd >= 0)
        close(s->stop_efd);
    free(s);
}

int ws_server_stopping(const ws_server *s)
{
    return s->stopping;
}

ws_conn *ws_server_next(const ws_server *s, const ws_conn *prev)
{
    ws_conn *c = prev ? prev->next : s->conns;
    while (c && (!c->ws || c->done))
        c = c->next;
    return c;
}

void *ws_conn_data(ws_conn *c)
{
    return c->data;
}

long ws_conn_id(const ws_conn *c)
{
    return c->id;
}

int64_t ws_conn_opened_ms(const ws_conn *c)
{
    return c->opened_ms;
}

int ws_conn_closing(const ws_conn *c)
{
    return c->closing;
}

/* ---- HTTP ---------------------------------------------------------------------------- */

int ws_http_header(const char *head, const char *name, char *out, size_t n)
{
    size_t nl = strlen(name);
    for (const char *l = strstr(head, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
        const char *h = l + 2;
        if (strncasecmp(h, name, nl) != 0 || h[nl] != ':')
            continue;
        h += nl + 1;
        while (*h == ' ' || *h == '\t')
            h++;
        size_t len = strcspn(h, "\r\n");
        while (len && (h[len - 1] == ' ' || h[len - 1] == '\t'))
            len--;
        if (len >= n)
            return -1;
        memcpy(out, h, len);
        out[len] = '\0';
        return 0;
    }
    return -1;
}

int ws_http_query(const char *target, const char *key, char *out, size_t n)
{
    const char *q = strchr(target, '?');
    size_t kl = strlen(key);
    for (const char *p = q; p && *p; p = strchr(p + 1, '&')) {
        const char *k = p + 1;
        if (strncmp(k, key, kl) != 0 || k[kl] != '=')
            continue;
        size_t len = strcspn(k + kl + 1, "&# ");
        if (len >= n)
            return -1;
        memcpy(out, k + kl + 1, len);
        out[len] = '\0';
        return 0;
    }
    return -1;
}

int ws_http_is_upgrade(const char *head)
{
    char key[64], ver[8], up[32];
    return ws_http_header(head, "Sec-WebSocket-Key", key, sizeof key) == 0 &&
           ws_http_header(head, "Sec-WebSocket-Version", ver, sizeof ver) == 0 &&
           strcmp(ver, "13") == 0 && ws_http_header(head, "Upgrade", up, sizeof up) == 0 &&
           strcasecmp(up, "websocket") == 0;
}

int ws_conn_respond(ws_conn *c, int status, const char *reason, const char *body)
{
    char head[256];
    size_t bl = strlen(body);
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      status, reason, bl);
    if (hl < 0 || (size_t)hl >= sizeof head)
        return -1;
    if (write_all(c->sock, head, (size_t)hl, c->s->io_timeout_ms) != 0)
        return -1;
    return write_all(c->sock, body, bl, c->s->io_timeout_ms);
}

int ws_conn_upgrade(ws_conn *c, const char *head)
{
    char key[64], accept[29], resp[256];
    if (!ws_http_is_upgrade(head) || ws_http_header(head, "Sec-WebSocket-Key", key, sizeof key))
        return -1;
    ws_accept_key(key, accept);
    int n = snprintf(resp, sizeof resp,
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
                     accept);
    return write_all(c->sock, resp, (size_t)n, c->s->io_timeout_ms);
}
