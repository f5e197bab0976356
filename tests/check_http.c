/*
 * check_http.c -- the chat-platform clients' shared request core
 * (http/http_client.h) on its own, against a one-shot server on a
 * loopback socket of this process: what a request puts on the wire, the
 * answer's body and headers, the body's cap, the call's time bound, the
 * abort switch ending a transfer in flight and a sleep, back-off within
 * its bounds, the secret scrubbed from log lines.
 */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_client.h"
#include "log_level.h"
#include "status.h"

/* A client of the core with its own lock and condition, as a platform
 * client embeds one. */
typedef struct core {
    dgh_client h;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    char log[1024];
} core;

static void sink(void *state, int level, const char *message)
{
    core *c = state;
    snprintf(c->log, sizeof c->log, "%d %s", level, message);
}

static core *core_open(long backoff_base_ms, long backoff_max_ms)
{
    ck_assert_int_eq(dgh_global_init(), CURLE_OK);
    core *c = calloc(1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    dgh_limits lim = {.timeout_ms = 60000,
                      .connect_ms = 5000,
                      .backoff_base_ms = backoff_base_ms,
                      .backoff_max_ms = backoff_max_ms,
                      .max_attempts = 3,
                      .max_idle = 2};
    ck_assert_int_eq(dgh_init(&c->h, &lim, sink, c, &c->mu, &c->cond), DG_OK);
    return c;
}

static void core_close(core *c)
{
    dgh_destroy(&c->h);
    free(c);
}

/* A listening socket on 127.0.0.1 and its URL. */
typedef struct server {
    int fd;
    char url[64];
    char request[4096]; /* what the one connection sent */
    const char *answer; /* written back whole, then the connection closes */
} server;

static void server_open(server *s, const char *answer)
{
    memset(s, 0, sizeof *s);
    s->answer = answer;
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(s->fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(s->fd, 4), 0);
    socklen_t al = sizeof a;
    ck_assert_int_eq(getsockname(s->fd, (struct sockaddr *)&a, &al), 0);
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%u/x", (unsigned)ntohs(a.sin_port));
}

/* Serve one connection: read the request (head and, by Content-Length,
 * body), write the answer, close. The server's thread. */
static void *serve_one(void *arg)
{
    server *s = arg;
    int c = accept(s->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    size_t len = 0;
    for (;;) {
        ssize_t n = read(c, s->request + len, sizeof s->request - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        s->request[len] = '\0';
        const char *end = strstr(s->request, "\r\n\r\n");
        const char *cl = strstr(s->request, "Content-Length: ");
        if (end && (!cl || strlen(end + 4) >= (size_t)atol(cl + 16)))
            break;
    }
    if (write(c, s->answer, strlen(s->answer)) < 0)
        perror("serve_one");
    close(c);
    return NULL;
}

typedef struct seen {
    char x_test[32];
    int lines;
} seen;

/* The header callback of a test: counts the lines and keeps X-Test's. */
static size_t on_header(char *line, size_t size, size_t nmemb, void *ud)
{
    seen *h = ud;
    size_t n = size * nmemb;
    h->lines++;
    if (n > 8 && !strncmp(line, "X-Test: ", 8))
        snprintf(h->x_test, sizeof h->x_test, "%.*s", (int)(n - 10), line + 8);
    return n;
}

START_TEST(exchange_sends_the_request_and_reads_the_answer)
{
    core *c = core_open(10, 100);
    server s;
    server_open(&s, "HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-Test: yes\r\n"
                    "Connection: close\r\n\r\nhello");
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, serve_one, &s), 0);
    const char *const lines[] = {"Authorization: Bearer sekrit", "Content-Type: text/plain"};
    char base[80];
    snprintf(base, sizeof base, "%.*s//", (int)strlen(s.url) - 2, s.url);
    ck_assert_int_eq(dgh_set_endpoint(&c->h, base, lines, 2), DG_OK);
    size_t hl = strlen(s.url) - 2; /* the trailing '/' dropped */
    ck_assert_msg(strlen(c->h.base) == hl && !strncmp(c->h.base, s.url, hl), "%s", c->h.base);
    ck_assert_str_eq(c->h.headers->data, lines[0]);
    seen h = {0};
    char url[96];
    snprintf(url, sizeof url, "%s/x", c->h.base);
    dgh_request r = {.method = "PUT",
                     .url = url,
                     .user_agent = "ua-test/1",
                     .body = "payload",
                     .fresh = 1,
                     .on_header = on_header,
                     .header_data = &h};
    dgh_body b = {0};
    long http = -1;
    char cerr[CURL_ERROR_SIZE];
    CURLcode cc = dgh_exchange(&c->h, dgh_mono_ms() + 30000, &r, &b, &http, cerr);
    pthread_join(t, NULL);
    ck_assert_msg(cc == CURLE_OK, "%d %s", (int)cc, cerr);
    ck_assert_int_eq(http, 201);
    ck_assert_str_eq(b.s, "hello");
    ck_assert_uint_eq(b.len, 5);
    ck_assert_str_eq(h.x_test, "yes");
    ck_assert_int_ge(h.lines, 4);
    ck_assert_msg(!strncmp(s.request, "PUT /x HTTP/1.1\r\n", 17), "%s", s.request);
    ck_assert_msg(strstr(s.request, "\r\nUser-Agent: ua-test/1\r\n"), "%s", s.request);
    ck_assert_msg(strstr(s.request, "\r\nAuthorization: Bearer sekrit\r\n"), "%s", s.request);
    ck_assert_msg(strstr(s.request, "\r\n\r\npayload"), "%s", s.request);
    dgh_body_free(&b);
    close(s.fd);
    core_close(c);
}
END_TEST

typedef struct job {
    core *c;
    const char *url;
    CURLcode cc;
    long http;
    char cerr[CURL_ERROR_SIZE];
} job;

static void *exchange_thread(void *arg)
{
    job *j = arg;
    dgh_request r = {.method = "GET", .url = j->url};
    dgh_body b = {0};
    j->cc = dgh_exchange(&j->c->h, dgh_mono_ms() + 60000, &r, &b, &j->http, j->cerr);
    dgh_body_free(&b);
    return NULL;
}

/* A server that takes the connection and never answers: only the abort
 * switch ends the transfer before the minute of its bound (the suite's
 * timeout is shorter, so a switch that did not work fails the test). */
START_TEST(abort_ends_a_transfer_in_flight)
{
    core *c = core_open(10, 100);
    server s;
    server_open(&s, "");
    job j = {.c = c, .url = s.url};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, exchange_thread, &j), 0);
    int conn = accept(s.fd, NULL, NULL); /* the transfer is on the wire */
    ck_assert_int_ge(conn, 0);
    dgh_set_abort(&c->h, 1);
    pthread_join(t, NULL);
    ck_assert_int_eq(j.cc, DGH_ABORTED);
    ck_assert_int_eq(j.http, 0);
    ck_assert_int_eq(dgh_sleep_until(&c->h, dgh_mono_ms() + 60000), -1);
    dgh_set_abort(&c->h, 0);
    ck_assert_int_eq(dgh_sleep_until(&c->h, dgh_mono_ms()), 0);
    close(conn);
    close(s.fd);
    core_close(c);
}
END_TEST

START_TEST(no_time_left_sends_nothing)
{
    core *c = core_open(10, 100);
    server s;
    server_open(&s, "");
    dgh_request r = {.method = "GET", .url = s.url};
    dgh_body b = {0};
    long http = -1;
    char cerr[CURL_ERROR_SIZE];
    ck_assert_int_eq(dgh_exchange(&c->h, dgh_mono_ms(), &r, &b, &http, cerr), DGH_NO_TIME);
    ck_assert_int_eq(http, 0);
    ck_assert_str_eq(cerr, "");
    fcntl(s.fd, F_SETFL, O_NONBLOCK);
    ck_assert_int_lt(accept(s.fd, NULL, NULL), 0); /* no connection was made */
    close(s.fd);
    core_close(c);
}
END_TEST

START_TEST(body_stops_at_its_cap_and_clears)
{
    dgh_body b = {0};
    char chunk[4096];
    memset(chunk, 'a', sizeof chunk);
    ck_assert_uint_eq(dgh_on_body(chunk, 1, 10, &b), 10);
    ck_assert_uint_eq(b.len, 10);
    ck_assert_uint_eq(b.s[10], '\0');
    dgh_body_clear(&b); /* a small buffer stays for the next answer */
    ck_assert_ptr_nonnull(b.s);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_str_eq(b.s, "");
    size_t fed = 0;
    while (dgh_on_body(chunk, 1, sizeof chunk, &b) == sizeof chunk)
        fed += sizeof chunk;
    ck_assert_int_eq(b.too_big, 1);
    ck_assert_uint_lt(fed, DGH_MAX_BODY);
    ck_assert_uint_gt(fed + 2 * sizeof chunk, DGH_MAX_BODY);
    char cerr[CURL_ERROR_SIZE] = "Failure writing output";
    ck_assert_str_eq(dgh_reason(CURLE_WRITE_ERROR, &b, cerr), "answer larger than 8388608 bytes");
    dgh_body_clear(&b); /* a large one goes */
    ck_assert_ptr_null(b.s);
    ck_assert_int_eq(b.too_big, 0);
    char other[CURL_ERROR_SIZE] = "";
    ck_assert_str_eq(dgh_reason(CURLE_COULDNT_CONNECT, &b, other),
                     curl_easy_strerror(CURLE_COULDNT_CONNECT));
    dgh_body_free(&b);
}
END_TEST

START_TEST(backoff_doubles_within_its_cap_with_jitter)
{
    core *c = core_open(100, 400);
    /* failures -> the step; the wait is in [step/2, step]. */
    static const long step[] = {0, 100, 200, 400, 400, 400};
    for (int f = 1; f <= 5; f++)
        for (int i = 0; i < 200; i++) {
            long w = dgh_backoff_ms(&c->h, f);
            ck_assert_msg(w >= step[f] / 2 && w <= step[f], "failures %d: %ld", f, w);
        }
    core_close(c);
    c = core_open(500, 300); /* a cap below the base caps the first step too */
    ck_assert_int_le(dgh_backoff_ms(&c->h, 1), 300);
    core_close(c);
}
END_TEST

START_TEST(limits_take_defaults_and_cap_the_connect_bound)
{
    const dgh_limits dflt = {15000, 5000, 250, 4000, 5, 4};
    struct {
        long timeout_ms, connect_timeout_ms, backoff_base_ms, backoff_max_ms;
        int max_attempts, max_idle_handles;
    } o = {.timeout_ms = 2000, .max_attempts = 2};
    const dgh_limits given = DGH_LIMITS_GIVEN(&o);
    dgh_limits l;
    dgh_limits_pick(&l, &given, &dflt);
    ck_assert_int_eq(l.timeout_ms, 2000);
    ck_assert_int_eq(l.connect_ms, 2000); /* default 5000, above the call's bound */
    ck_assert_int_eq(l.backoff_base_ms, 250);
    ck_assert_int_eq(l.backoff_max_ms, 4000);
    ck_assert_int_eq(l.max_attempts, 2);
    ck_assert_int_eq(l.max_idle, 4);
}
END_TEST

START_TEST(log_lines_lose_the_secret)
{
    core *c = core_open(10, 100);
    dgh_log(&c->h, DG_LOG_WARN, "before %s", "x");
    ck_assert_str_eq(c->log, "2 before x");
    const char *secret = "xoxb-1234567890-abcdefghij";
    c->h.secret = secret;
    dgh_log(&c->h, DG_LOG_INFO, "echo: %s and its tail %s", secret, secret + 8);
    ck_assert_msg(!strstr(c->log, "1234567890"), "%s", c->log);
    ck_assert_msg(!strstr(c->log, "abcdefghij"), "%s", c->log);
    ck_assert_msg(!strncmp(c->log, "1 echo: ", 8), "%s", c->log);
    core_close(c);
}
END_TEST

Suite *make_http_suite(void)
{
    Suite *s = suite_create("http");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, exchange_sends_the_request_and_reads_the_answer);
    tcase_add_test(tc, abort_ends_a_transfer_in_flight);
    tcase_add_test(tc, no_time_left_sends_nothing);
    tcase_add_test(tc, body_stops_at_its_cap_and_clears);
    tcase_add_test(tc, backoff_doubles_within_its_cap_with_jitter);
    tcase_add_test(tc, limits_take_defaults_and_cap_the_connect_bound);
    tcase_add_test(tc, log_lines_lose_the_secret);
    suite_add_tcase(s, tc);
    return s;
}
