/*
 * http_server.c -- shared scaffolding of the small HTTP servers
 * (http_server.h).
 */
#include "http_server.h"

#include <stdlib.h>

int dg_http_body_take(dg_http_body *b, const char *data, size_t *size, size_t max)
{
    size_t n = *size;
    *size = 0;
    if (b->too_large || n > max - b->buf.len) {
        b->too_large = 1;
        return 0;
    }
    return dg_buf_add(&b->buf, data, n);
}

void dg_http_body_free(dg_http_body *b)
{
    dg_buf_free(&b->buf);
    b->too_large = 0;
}

struct MHD_Response *dg_http_response(char *text, size_t len, const char *type)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return NULL;
    }
    if (type)
        MHD_add_response_header(r, "Content-Type", type);
    return r;
}

enum MHD_Result dg_http_queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

unsigned dg_http_bound_port(struct MHD_Daemon *d, unsigned fallback)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : fallback;
}
