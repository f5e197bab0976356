/*
 * ctl_serve.c -- `dirigent-ctl serve` (ctl_serve.h): its options, the
 * listening rule, the token and the routes on libmicrohttpd.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ctl_doctor.h"
#include "ctl_serve.h"
#include "http_server.h"
#include "openclaw/plugin.h"
#include "store_operator.h"

static const char SERVE_USAGE[] =
    "usage: dirigent-ctl serve [--listen HOST:PORT] [--token T] [--db PATH |\n"
    "                          --store-url URL | --openclaw-config FILE]\n"
    "  A read-only status page of the store: http://HOST:PORT/ (every managed scope\n"
    "  with its budget, the discussions with their timelines, runs made and avoided\n"
    "  per hour, the cost ledger's totals, the outbox), /api/status (the same as\n"
    "  JSON) and /chart.svg.\n"
    "  --listen HOST:PORT  default 127.0.0.1:8377; PORT 0 picks a free one. Any\n"
    "                      address but loopback (127.0.0.0/8, ::1) needs a token.\n"
    "  --token T           (or env DIRIGENT_CTL_TOKEN) every request must carry it:\n"
    "                      Authorization: Bearer T, or ?token=T (open the page as\n"
    "                      http://HOST:PORT/?token=T).\n"
    "  The store: --db, --store-url or --openclaw-config as for the other commands\n"
    "  (or env DIRIGENT_STORE_URL); only --openclaw-config gives the page the\n"
    "  budgets' limits and the prices. Stops on Ctrl-C / SIGTERM.\n";

/* How long a connection may stay silent (seconds): before its request line,
 * while its headers come, between keep-alive requests; the page's own
 * script asks every 2 s, so a browser's connection stays. */
#define SERVE_IDLE_SEC 3u
/* ... and once its request line carried a wrong ?token= */
#define SERVE_WRONG_TOKEN_SEC 1u
/* Connections at once, and from one address: a single client cannot take
 * every slot, many cannot exhaust the file descriptors. */
#define SERVE_MAX_CONNECTIONS 512u
#define SERVE_MAX_PER_ADDRESS 16u

struct dg_serve {
    struct MHD_Daemon *d;
    char *path;
    char *token;
    const dg_config *cfg; /* borrowed; NULL: none given */
};

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int dg_serve_listen_parse(const char *spec, dg_serve_listen *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    const char *colon = spec ? strrchr(spec, ':') : NULL;
    const char *host = spec, *host_end = colon;
    if (spec && spec[0] == '[') { /* [v6]:port */
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':') {
            snprintf(err, err_len,
                     "--listen \"%s\": an IPv6 address is written [ADDR]:PORT, "
                     "e.g. [::1]:8377",
                     spec);
            return OC_ERR_INVALID;
        }
        host = spec + 1;
        host_end = close;
        colon = close + 1;
    }
    char *end = NULL;
    unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
    size_t hl = host_end ? (size_t)(host_end - host) : 0;
    if (!colon || !colon[1] || *end || port > 65535 || hl == 0 || hl >= sizeof out->host) {
        snprintf(err, err_len,
                 "--listen \"%s\" must be HOST:PORT with a numeric address and "
                 "a port 0-65535, e.g. 127.0.0.1:8377 (0: any free port)",
                 spec ? spec : "");
        return OC_ERR_INVALID;
    }
    memcpy(out->host, host, hl);
    out->host[hl] = '\0';
    out->port = (unsigned)port;
    if (!strcmp(out->host, "localhost"))
        snprintf(out->host, sizeof out->host, "127.0.0.1");
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, out->host, &a4) == 1) {
        out->loopback = (ntohl(a4.s_addr) >> 24) == 127;
    } else if (inet_pton(AF_INET6, out->host, &a6) == 1) {
        out->ipv6 = 1;
        out->loopback = IN6_IS_ADDR_LOOPBACK(&a6);
    } else {
        snprintf(err, err_len,
                 "--listen \"%s\": the host must be a numeric IPv4 or IPv6 "
                 "address (or localhost), e.g. 127.0.0.1:8377",
                 spec);
        return OC_ERR_INVALID;
    }
    return OC_OK;
}

int dg_serve_listen_allowed(const dg_serve_listen *l, const char *token, char *err, size_t err_len)
{
    if (l->loopback || (token && *token))
        return OC_OK;
    snprintf(err, err_len,
             "--listen %s: an address other than loopback (127.0.0.1, ::1) "
             "needs a token, as anyone who reaches it could read every scope and discussion; "
             "give --token T (or env DIRIGENT_CTL_TOKEN), or listen on 127.0.0.1",
             l->host);
    return OC_ERR_INVALID;
}

/* Equal in time independent of where they differ (not of the length). */
static int same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;
    for (size_t i = 0; i < la; i++)
        d |= (unsigned char)a[i] ^ (unsigned char)b[i < lb ? i : 0];
    return d == 0 && lb > 0;
}

int dg_serve_token_ok(const char *token, const char *auth, const char *query)
{
    if (!token || !*token)
        return 1;
    int ok = 0;
    if (auth && strncmp(auth, "Bearer ", 7) == 0)
        ok |= same_secret(token, auth + 7);
    if (query)
        ok |= same_secret(token, query);
    return ok;
}

/* The raw value of parameter name in the query of uri, percent-decoded into
 * out; 1 when there, 0 when not (or too long for out). */
static int query_param(const char *uri, const char *name, char *out, size_t out_len)
{
    const char *q = strchr(uri, '?');
    size_t nl = strlen(name);
    for (const char *p = q; p && *p; p = strchr(p + 1, '&')) {
        if (strncmp(p + 1, name, nl) != 0 || p[1 + nl] != '=')
            continue;
        size_t n = 0;
        for (const char *v = p + 2 + nl; *v && *v != '&' && *v != '#'; v++) {
            char c = *v;
            if (c == '+') {
                c = ' ';
            } else if (c == '%' && isxdigit((unsigned char)v[1]) && isxdigit((unsigned char)v[2])) {
                char hex[3] = {v[1], v[2], '\0'};
                c = (char)strtol(hex, NULL, 16);
                v += 2;
            }
            if (n + 1 >= out_len)
                return 0;
            out[n++] = c;
        }
        out[n] = '\0';
        return 1;
    }
    return 0;
}

int dg_serve_request_line_verdict(const char *token, const char *uri)
{
    if (!token || !*token)
        return DG_SERVE_LINE_OK;
    char given[512];
    if (!uri || !query_param(uri, "token", given, sizeof given))
        return DG_SERVE_LINE_UNPROVEN;
    return dg_serve_token_ok(token, NULL, given) ? DG_SERVE_LINE_OK : DG_SERVE_LINE_WRONG;
}

/* MHD's URI callback, on the daemon's one thread, as soon as the request
 * line is in (before the headers): a wrong ?token= gets a short leash, so
 * a client that guesses cannot hold a slot while it dawdles over its
 * headers; the answer (401) still waits for them, as HTTP wants. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *c)
{
    const dg_serve *s = cls;
    if (dg_serve_request_line_verdict(s->token, uri) == DG_SERVE_LINE_WRONG)
        MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, SERVE_WRONG_TOKEN_SEC);
    return NULL;
}

int dg_serve_answer(const char *path, const dg_config *cfg, const char *url, const char *token,
                    int64_t now_ms, unsigned *status, const char **type, char **body, size_t *len)
{
    *body = NULL;
    *status = 200;
    int page = !strcmp(url, "/") || !strcmp(url, "/index.html");
    int api = !strcmp(url, "/api/status"), chart = !strcmp(url, "/chart.svg");
    if (!page && !api && !chart) {
        *status = 404;
        *type = "text/plain; charset=utf-8";
        *body = dg_sprintf("not found: the status page is /, its data /api/status, its chart "
                           "/chart.svg\n");
    } else {
        json_t *snap = dg_serve_snapshot(path, cfg, now_ms);
        if (snap && page) {
            *type = "text/html; charset=utf-8";
            *body = dg_serve_page(snap, token);
        } else if (snap && api) {
            *type = "application/json";
            *body = json_dumps(snap, JSON_INDENT(1) | JSON_SORT_KEYS);
        } else if (snap) {
            dg_serve_hour h[DG_SERVE_HOURS];
            dg_serve_hours_of(snap, now_ms, h);
            *type = "image/svg+xml";
            *body = dg_serve_chart_svg(h, DG_SERVE_HOURS);
        }
        json_decref(snap);
    }
    if (!*body)
        return -1;
    *len = strlen(*body);
    return 0;
}

/* MHD's request callback, on the daemon's one thread. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version, (void)upload, (void)con_cls;
    dg_serve *s = cls;
    if (*upload_size) { /* a GET has no body: drop what comes */
        *upload_size = 0;
        return MHD_YES;
    }
    char *body = NULL;
    size_t len = 0;
    unsigned status;
    const char *type = "text/plain; charset=utf-8";
    int refused = 0;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        status = 405;
        body = dg_sprintf("read-only: only GET is answered\n");
    } else if (!dg_serve_token_ok(s->token,
                                  MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
                                  MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token"))) {
        refused = 1;
        status = 401;
        body = dg_sprintf("a token is required: open the page as /?token=T, or send "
                          "Authorization: Bearer T\n");
    } else if (dg_serve_answer(s->path, s->cfg, url, s->token, wall_ms(), &status, &type, &body,
                               &len) != 0) {
        return MHD_NO;
    }
    if (!body)
        return MHD_NO;
    len = strlen(body);
    struct MHD_Response *r = dg_http_response(body, len, type);
    if (!r)
        return MHD_NO;
    if (refused) /* the slot goes back at once */
        MHD_add_response_header(r, "Connection", "close");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    /* Nothing from elsewhere: the page is self-contained. */
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; script-src 'unsafe-inline'; "
                            "style-src 'unsafe-inline'; img-src 'self' data:; "
                            "connect-src 'self'; base-uri 'none'; form-action 'none'");
    return dg_http_queue(c, status, r);
}

int dg_serve_start(const dg_serve_listen *l, const char *path, const dg_config *cfg,
                   const char *token, dg_serve **out, unsigned *port, char *err, size_t err_len)
{
    *out = NULL;
    dg_serve *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path)) || (token && *token && !(s->token = strdup(token)))) {
        dg_serve_stop(s);
        snprintf(err, err_len, "out of memory");
        return OC_ERR_NOMEM;
    }
    s->cfg = cfg;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD;
    if (l->ipv6) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)l->port);
        inet_pton(AF_INET6, l->host, &a6->sin6_addr);
        flags |= MHD_USE_IPv6;
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)l->port);
        inet_pton(AF_INET, l->host, &a4->sin_addr);
    }
    s->d = MHD_start_daemon(flags, (uint16_t)l->port, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_TIMEOUT, SERVE_IDLE_SEC,
                            MHD_OPTION_CONNECTION_LIMIT, SERVE_MAX_CONNECTIONS,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, SERVE_MAX_PER_ADDRESS,
                            MHD_OPTION_URI_LOG_CALLBACK, on_request_line, s, MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, err_len, "cannot listen on %s port %u (%s); pick another --listen", l->host,
                 l->port, strerror(errno));
        dg_serve_stop(s);
        return OC_ERR_IO;
    }
    *port = dg_http_bound_port(s->d, l->port);
    *out = s;
    return OC_OK;
}

void dg_serve_stop(dg_serve *s)
{
    if (!s)
        return;
    if (s->d)
        MHD_stop_daemon(s->d);
    free(s->path);
    free(s->token);
    free(s);
}

int dg_ctl_serve_main(int argc, char **argv, int first)
{
    const char *listen = "127.0.0.1:8377", *token = getenv("DIRIGENT_CTL_TOKEN");
    const char *db = NULL, *url = NULL, *config = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (i == first)
            continue;
        if (!strcmp(a, "--listen") && has)
            listen = argv[++i];
        else if (!strcmp(a, "--token") && has)
            token = argv[++i];
        else if (!strcmp(a, "--db") && has)
            db = argv[++i];
        else if (!strcmp(a, "--store-url") && has)
            url = argv[++i];
        else if (!strcmp(a, "--openclaw-config") && has)
            config = argv[++i];
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(SERVE_USAGE, stdout);
            return 0;
        } else {
            fprintf(stderr, "dirigent-ctl serve: unknown option or missing value \"%s\"\n%s", a,
                    SERVE_USAGE);
            return 2;
        }
    }
    char err[1024] = "";
    dg_serve_listen l;
    if (dg_serve_listen_parse(listen, &l, err, sizeof err) != OC_OK ||
        dg_serve_listen_allowed(&l, token, err, sizeof err) != OC_OK) {
        fprintf(stderr, "dirigent-ctl serve: %s\n", err);
        return 2;
    }
    const char *env = getenv("DIRIGENT_STORE_URL");
    if (!db && !url && !config && env && *env)
        url = env;
    if ((db != NULL) + (url != NULL) + (config != NULL) != 1) {
        fprintf(stderr,
                "dirigent-ctl serve: give one store: --db PATH, --store-url URL (or "
                "env DIRIGENT_STORE_URL) or --openclaw-config FILE\n%s",
                SERVE_USAGE);
        return 2;
    }
    if ((db && !*db) || (url && !*url) || (config && !*config)) {
        fprintf(stderr, "dirigent-ctl serve: --db, --store-url and --openclaw-config need a "
                        "value; an empty one was given\n");
        return 2;
    }
    if (url && !dg_store_is_url(url)) {
        fprintf(stderr, "dirigent-ctl serve: --store-url (or DIRIGENT_STORE_URL) must be a "
                        "postgresql:// or postgres:// url; a SQLite file goes to --db\n");
        return 2;
    }
    dg_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (config && dg_ctl_config_load(config, &cfg, err, sizeof err) != OC_OK) {
        fprintf(stderr, "dirigent-ctl serve: --openclaw-config %s: %s\n", config, err);
        return 1;
    }
    const char *path = config ? (cfg.store_url ? cfg.store_url : cfg.db_path) : url ? url : db;
    /* Block the stop signals before MHD starts its thread, so only sigwait
     * below receives them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    dg_serve *s = NULL;
    unsigned port = 0;
    if (dg_serve_start(&l, path, config ? &cfg : NULL, token, &s, &port, err, sizeof err) !=
        OC_OK) {
        fprintf(stderr, "dirigent-ctl serve: %s\n", err);
        dg_config_free(&cfg);
        return 1;
    }
    struct stat sb;
    if (!dg_store_is_url(path) && stat(path, &sb) != 0)
        fprintf(stderr,
                "dirigent-ctl serve: no database at %s yet; the page shows it once "
                "the plugin has created it\n",
                path);
    printf(l.ipv6 ? "dirigent-ctl serve: http://[%s]:%u/%s\n"
                  : "dirigent-ctl serve: "
                    "http://%s:%u/%s\n",
           l.host, port, token && *token ? "?token=..." : "");
    fflush(stdout);
    int sig = 0;
    while (sigwait(&stop, &sig) != 0)
        ;
    dg_serve_stop(s);
    dg_config_free(&cfg);
    return 0;
}
