/*
 * fake_slack_main.c -- build/fake-slack: the fake Slack (Web API and Socket
 * Mode) as a process, for the OpenClaw stage and manual runs.
 *
 *   fake-slack [--port N] [--socket-port N] [--team ID] [--team-name NAME]
 *              [--bot TOKEN=USERID[=NAME]]... [--human USERID[=NAME]]...
 *              [--app APPTOKEN=APPID=BOTUSERID]... [--channel ID=NAME[=U1,U2...]]...
 *              [--socket-url-file PATH]
 *
 * Binds 127.0.0.1 (port 0 = any free port), prints the Web API base
 * (http://127.0.0.1:PORT/api, what SLACK_API_URL takes) as the first stdout
 * line and flushes, then serves until SIGTERM or SIGINT. Besides the
 * fake's own Web API methods it serves apps.connections.open
 * (fake_slack_socket.h) and the reactions.* and agents.sessions.* methods
 * OpenClaw's Slack plugin calls (fake_slack_openclaw.h). The Socket Mode
 * websocket and its control endpoints have a port of their own; its base
 * (http://127.0.0.1:SPORT) goes to --socket-url-file, written before the
 * stdout line. Control endpoints: tests/support/fake_slack.h (/_fake/ on
 * the Web API port) and tests/support/fake_slack_socket.h (/_fake/socket/).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_slack.h"
#include "fake_slack_openclaw.h"
#include "fake_slack_socket.h"

#define MAX_ITEMS 64

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fake-slack [options]\n"
            "  --port N                  Web API port on 127.0.0.1, 0 = any free port (default 0)\n"
            "  --socket-port N           Socket Mode websocket port, 0 = any (default 0)\n"
            "  --team ID                 the workspace's team id (default T00000001)\n"
            "  --team-name NAME          its name (default dirigent-test)\n"
            "  --bot TOKEN=USERID[=NAME] a bot user and its bot token (repeatable)\n"
            "  --human USERID[=NAME]     a human member without a token (repeatable)\n"
            "  --app APPTOKEN=APPID=BOTUSERID  a Socket Mode app: its xapp- token, app id and\n"
            "                            bot user (a --bot; repeatable)\n"
            "  --channel ID=NAME[=U1,U2] a public channel and its members (repeatable)\n"
            "  --socket-url-file PATH    write the Socket Mode base URL to PATH\n"
            "  -h, --help                this text\n"
            "  --version                 the version\n"
            "Prints the Web API base URL on the first stdout line; stops on SIGTERM/SIGINT.\n");
}

static int parse_port(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > 65535)
        return -1;
    *out = (int)v;
    return 0;
}

/* Write text to path atomically (tmp + rename): a reader never sees half. */
static int write_atomic(const char *path, const char *text)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= sizeof tmp)
        return -1;
    FILE *f = fopen(tmp, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    if (ok && rename(tmp, path) != 0)
        ok = 0;
    if (!ok)
        unlink(tmp);
    return ok ? 0 : -1;
}

/* Split v at '=' into at most n fields (v is modified); the count. */
static int split(char *v, char **f, int n)
{
    int k = 0;
    f[k++] = v;
    for (char *p = v; *p && k < n; p++)
        if (*p == '=') {
            *p = '\0';
            f[k++] = p + 1;
        }
    return k;
}

typedef struct items {
    char *v[MAX_ITEMS];
    int n;
} items;

static int add_item(items *it, const char *opt, const char *v)
{
    if (it->n == MAX_ITEMS) {
        fprintf(stderr, "fake-slack: at most %d %s options\n", MAX_ITEMS, opt);
        return -1;
    }
    if (!(it->v[it->n] = strdup(v))) {
        fprintf(stderr, "fake-slack: out of memory\n");
        return -1;
    }
    it->n++;
    return 0;
}

/* Add everything the options named; 0, or -1 after saying why. */
static int populate(fake_slack *fs, fake_slack_socket *ss, items *bots, items *humans, items *apps,
                    items *chans)
{
    char *f[4];
    for (int i = 0; i < bots->n; i++) {
        int k = split(bots->v[i], f, 3);
        fake_slack_user_spec u = {
            .user_id = f[1], .name = k > 2 ? f[2] : NULL, .token = f[0], .bot = 1};
        if (k < 2 || !*f[0] || fake_slack_add_user(fs, &u) != 0) {
            fprintf(stderr, "fake-slack: --bot takes TOKEN=USERID[=NAME] with a Slack user id "
                            "(U then 2..20 of A-Z0-9)\n");
            return -1;
        }
    }
    for (int i = 0; i < humans->n; i++) {
        int k = split(humans->v[i], f, 2);
        fake_slack_user_spec u = {.user_id = f[0], .name = k > 1 ? f[1] : NULL};
        if (fake_slack_add_user(fs, &u) != 0) {
            fprintf(stderr, "fake-slack: --human takes USERID[=NAME] with a Slack user id\n");
            return -1;
        }
    }
    for (int i = 0; i < apps->n; i++) {
        if (split(apps->v[i], f, 3) != 3 || fake_slack_socket_add_app(ss, f[0], f[1], f[2]) != 0) {
            fprintf(stderr, "fake-slack: --app takes APPTOKEN=APPID=BOTUSERID, each token once\n");
            return -1;
        }
    }
    for (int i = 0; i < chans->n; i++) {
        int k = split(chans->v[i], f, 3);
        const char *members[MAX_ITEMS + 1];
        int m = 0;
        for (char *p = k > 2 ? strtok(f[2], ",") : NULL; p && m < MAX_ITEMS; p = strtok(NULL, ","))
            members[m++] = p;
        members[m] = NULL;
        if (k < 2 || fake_slack_add_channel(fs, f[0], f[1], 0, members, NULL) != 0) {
            fprintf(stderr, "fake-slack: --channel takes ID=NAME[=U1,U2...] (a C... id, a Slack "
                            "channel name, known members), each id and name once\n");
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    fake_slack_options o;
    memset(&o, 0, sizeof o);
    int socket_port = 0;
    const char *url_file = NULL;
    items bots = {0}, humans = {0}, apps = {0}, chans = {0};
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--version")) {
            printf("fake-slack %s\n", DG_VERSION);
            return 0;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) {
            fprintf(stderr, "fake-slack: %s needs a value\n", a);
            rc = 2;
        } else if (!strcmp(a, "--port") || !strcmp(a, "--socket-port")) {
            if (parse_port(v, !strcmp(a, "--port") ? &o.port : &socket_port) != 0) {
                fprintf(stderr, "fake-slack: %s must be 0..65535, got %s\n", a, v);
                rc = 2;
            }
        } else if (!strcmp(a, "--team")) {
            o.team_id = v;
        } else if (!strcmp(a, "--team-name")) {
            o.team_name = v;
        } else if (!strcmp(a, "--socket-url-file")) {
            url_file = v;
        } else if (!strcmp(a, "--bot") || !strcmp(a, "--human") || !strcmp(a, "--app") ||
                   !strcmp(a, "--channel")) {
            items *it = a[2] == 'b' ? &bots : a[2] == 'h' ? &humans : a[2] == 'a' ? &apps : &chans;
            if (add_item(it, a, v) != 0)
                rc = 2;
        } else {
            fprintf(stderr, "fake-slack: unknown option %s\n", a);
            usage(stderr);
            rc = 2;
        }
    }

    /* The stop signals are blocked in every thread (the servers' threads
     * inherit the mask) and taken with sigwait below. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[256];
    fake_slack *fs = NULL;
    fake_slack_socket *ss = NULL;
    fake_slack_openclaw *oc = NULL;
    if (rc == 0 && fake_slack_start(&o, &fs, err, sizeof err) != 0) {
        fprintf(stderr, "fake-slack: %s\n", err);
        rc = 1;
    }
    if (rc == 0 && fake_slack_socket_start(fs, socket_port, &ss, err, sizeof err) != 0) {
        fprintf(stderr, "fake-slack: %s\n", err);
        rc = 1;
    }
    if (rc == 0 && fake_slack_openclaw_start(fs, &oc) != 0) {
        fprintf(stderr, "fake-slack: cannot add the reactions.* and agents.sessions.* methods\n");
        rc = 1;
    }
    if (rc == 0 && populate(fs, ss, &bots, &humans, &apps, &chans) != 0)
        rc = 2;
    if (rc == 0 && url_file) {
        char line[64];
        snprintf(line, sizeof line, "http://127.0.0.1:%d\n", fake_slack_socket_port(ss));
        if (write_atomic(url_file, line) != 0) {
            fprintf(stderr, "fake-slack: cannot write --socket-url-file %s\n", url_file);
            rc = 1;
        }
    }
    if (rc == 0) {
        printf("%s\n", fake_slack_url(fs));
        fflush(stdout);
        int sig = 0;
        sigwait(&stop, &sig);
        fprintf(stderr, "fake-slack: stopping on signal %d\n", sig);
    }
    /* The Web API first: it ends every call into the socket part. */
    fake_slack_stop(fs);
    fake_slack_socket_stop(ss);
    fake_slack_openclaw_free(oc);
    for (int i = 0; i < MAX_ITEMS; i++) {
        free(bots.v[i]);
        free(humans.v[i]);
        free(apps.v[i]);
        free(chans.v[i]);
    }
    return rc;
}
