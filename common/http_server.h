/*
 * http_server.h -- the scaffolding two small HTTP servers on libmicrohttpd
 * share (servers/dirigent-noreply.c, tests/support/fake_discord.c): a
 * request body gathered across MHD's calls with a size bound, a response
 * built from a malloc'd text, and the port a daemon was bound to.
 * No state; each function runs on the MHD thread that serves the request.
 */
#ifndef DG_HTTP_SERVER_H
#define DG_HTTP_SERVER_H

#include <stddef.h>
#include <microhttpd.h>

#include "buf.h"

/* The body of one request. Start from {0}; dg_http_body_free at the end
 * of the request (MHD's completion callback). */
typedef struct dg_http_body {
    dg_buf buf;    /* buf.s NUL-terminated once anything arrived */
    int too_large; /* a chunk would have passed max: answer 413 */
} dg_http_body;

/*
 * Take MHD's upload chunk (data, *size bytes) into b and set *size to 0.
 * Once the body would pass max bytes, too_large is set and this and every
 * later chunk are dropped (the server keeps draining and answers 413 at
 * the end). 0, or -1 when out of memory.
 */
int dg_http_body_take(dg_http_body *b, const char *data, size_t *size, size_t max);

/* Free what b holds. */
void dg_http_body_free(dg_http_body *b);

/*
 * A response whose body is text (len bytes, malloc'd; taken over: MHD
 * frees it, or this function when it fails) with Content-Type type (NULL:
 * none). NULL when out of memory. Add headers, then dg_http_queue.
 */
struct MHD_Response *dg_http_response(char *text, size_t len, const char *type);

/* Queue r with status on c and drop this reference to r. */
enum MHD_Result dg_http_queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r);

/* The port d listens on (the one picked when it was asked for port 0),
 * or fallback when MHD cannot say. */
unsigned dg_http_bound_port(struct MHD_Daemon *d, unsigned fallback);

#endif
