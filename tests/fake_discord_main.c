/*
 * fake_discord_main.c -- build/fake-discord: the fake Discord REST server as a
 * process, for the demo, end-to-end tests and manual runs.
 *
 *   fake-discord [--port N] [--guild ID] [--user TOKEN=USERID[=NAME]]... [--channel ID]...
 *                [--fail-rate F] [--seed S] [--retry-after SEC] [--url-file PATH]
 *                [--no-permission-checks] [--heartbeat-ms MS] [--human USERID[=NAME]]...
 *
 * Binds 127.0.0.1 (port 0 = any free port), prints its base URL
 * (http://127.0.0.1:PORT/api/v10) as the first stdout line and flushes, then
 * serves until SIGTERM or SIGINT. Control endpoints under /_fake/ (see
 * tests/support/fake_discord.h) let other processes drive and inspect it.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_discord.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: fake-discord [options]\n"
               "  --port N                 port on 127.0.0.1, 0 = any free port (default 0)\n"
               "  --guild ID               the guild's id (a snowflake)\n"
               "  --user TOKEN=USERID[=NAME]  a bot: token, user id, username (repeatable)\n"
               "  --human USERID[=NAME]    a human member without a token (repeatable)\n"
               "  --channel ID             a text channel of the guild (repeatable)\n"
               "  --fail-rate F            fraction 0..1 of requests that fail (429/500)\n"
               "  --seed S                 seed of the failure choice (default 1)\n"
               "  --retry-after SEC        retry_after of the injected 429s (above 0, at most 60)\n"
               "  --url-file PATH          also write the base URL to PATH\n"
               "  --no-permission-checks   serve every request whatever the overwrites say\n"
               "  --heartbeat-ms MS        gateway HELLO heartbeat_interval (default 41250)\n"
               "  -h, --help               this text\n"
               "  --version                the version\n"
               "REST and the gateway websocket (ws://127.0.0.1:PORT) share the port.\n"
               "Prints its base URL on the first stdout line; stops on SIGTERM/SIGINT.\n");
}

/* Options that take a value. */
static int takes_value(const char *a)
{
    static const char *const known[] = {"--port",         "--guild",       "--user", "--channel",
                                        "--fail-rate",    "--retry-after", "--seed", "--url-file",
                                        "--heartbeat-ms", "--human",       NULL};
    for (const char *const *k = known; *k; k++)
        if (!strcmp(*k, a))
            return 1;
    return 0;
}

/* Write text to path atomically (tmp file + rename), so a reader never sees
 * half a URL. */
static int write_atomic(const char *path, const char *text)
{
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    if (!tmp)
        return -1;
    snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    if (ok && rename(tmp, path) != 0)
        ok = 0;
    if (!ok)
        unlink(tmp);
    free(tmp);
    return ok ? 0 : -1;
}

/* A Discord id as the fake takes it: 1-20 digits, no leading zero, within
 * 64 bits (the rule of fake_discord.c). */
static int snowflake_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 20 || s[0] == '0' || strspn(s, "0123456789") != n)
        return 0;
    return n < 20 || strcmp(s, "18446744073709551615") <= 0;
}

/* A finite number in lo..hi (lo itself excluded when open_lo); strtod
 * alone would take "", "nan" and "inf". */
static int parse_double(const char *s, double lo, double hi, int open_lo, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || (open_lo && v <= lo) || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    fake_discord_options o;
    memset(&o, 0, sizeof o);
    const char *url_file = NULL;
    double fail_rate = 0, retry_after = 0.05;
    long seed = 1;

    /* First pass: check everything; users and channels are added after the
     * start by a second walk over argv. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("fake-discord %s\n", DG_VERSION);
            return 0;
        } else if (!strcmp(a, "--no-permission-checks")) {
            o.no_permission_checks = 1;
            continue;
        }
        if (!takes_value(a)) {
            fprintf(stderr, "fake-discord: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
        if (!v) {
            fprintf(stderr, "fake-discord: %s needs a value\n", a);
            usage(stderr);
            return 2;
        }
        i++;
        if (!strcmp(a, "--port")) {
            if (parse_long(v, 0, 65535, &n)) {
                fprintf(stderr, "fake-discord: --port must be 0..65535, got %s\n", v);
                return 2;
            }
            o.port = (int)n;
        } else if (!strcmp(a, "--guild")) {
            if (!snowflake_ok(v)) {
                fprintf(stderr,
                        "fake-discord: --guild must be a snowflake (1-20 digits), "
                        "got \"%s\"\n",
                        v);
                return 2;
            }
            o.guild_id = v;
        } else if (!strcmp(a, "--user")) {
            const char *eq = strchr(v, '=');
            const char *eq2 = eq ? strchr(eq + 1, '=') : NULL;
            char id[32] = "";
            size_t idl = !eq ? 0 : eq2 ? (size_t)(eq2 - eq - 1) : strlen(eq + 1);
            if (eq)
                snprintf(id, sizeof id, "%.*s", (int)(idl < 31 ? idl : 31), eq + 1);
            if (!eq || eq == v || idl > 20 || !snowflake_ok(id) || (eq2 && !eq2[1])) {
                fprintf(stderr,
                        "fake-discord: --user takes TOKEN=USERID[=NAME] (a non-empty "
                        "token, a snowflake user id, a non-empty name), got \"%s\"\n",
                        v);
                return 2;
            }
        } else if (!strcmp(a, "--channel")) {
            /* added after start */
            if (!snowflake_ok(v)) {
                fprintf(stderr,
                        "fake-discord: --channel must be a snowflake (1-20 digits), "
                        "got \"%s\"\n",
                        v);
                return 2;
            }
        } else if (!strcmp(a, "--fail-rate")) {
            if (parse_double(v, 0, 1, 0, &fail_rate)) {
                fprintf(stderr, "fake-discord: --fail-rate must be a number in 0..1, got \"%s\"\n",
                        v);
                return 2;
            }
        } else if (!strcmp(a, "--retry-after")) {
            if (parse_double(v, 0, 60, 1, &retry_after)) {
                fprintf(stderr,
                        "fake-discord: --retry-after must be seconds above 0, at most 60, "
                        "got \"%s\"\n",
                        v);
                return 2;
            }
        } else if (!strcmp(a, "--seed")) {
            if (parse_long(v, 0, 0x7fffffffL, &seed)) {
                fprintf(stderr, "fake-discord: --seed must be a non-negative integer\n");
                return 2;
            }
        } else if (!strcmp(a, "--heartbeat-ms")) {
            if (parse_long(v, 1, 3600000L, &n)) {
                fprintf(stderr, "fake-discord: --heartbeat-ms must be 1..3600000, got \"%s\"\n", v);
                return 2;
            }
            o.heartbeat_ms = n;
        } else if (!strcmp(a, "--human")) {
            const char *eq = strchr(v, '=');
            size_t idl = eq ? (size_t)(eq - v) : strlen(v);
            char id[32];
            snprintf(id, sizeof id, "%.*s", (int)(idl < 31 ? idl : 31), v);
            if (idl > 20 || !snowflake_ok(id) || (eq && !eq[1])) {
                fprintf(stderr,
                        "fake-discord: --human takes USERID[=NAME] (a snowflake, a "
                        "non-empty name), got \"%s\"\n",
                        v);
                return 2;
            }
        } else if (!strcmp(a, "--url-file")) {
            url_file = v;
        } else {
            fprintf(stderr, "fake-discord: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }

    /* Block the stop signals in every thread (the server's threads inherit
     * the mask) and take them with sigwait below. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[256];
    fake_discord *fd = NULL;
    if (fake_discord_start(&o, &fd, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int rc = 0;
    for (int i = 1; i + 1 < argc && rc == 0; i++) {
        if (!strcmp(argv[i], "--no-permission-checks") || !strcmp(argv[i], "-h") ||
            !strcmp(argv[i], "--help"))
            continue;
        const char *opt = argv[i], *val = argv[++i];
        if (!strcmp(opt, "--channel")) {
            if (fake_discord_add_channel(fd, val, NULL, NULL) != 0) {
                fprintf(stderr, "fake-discord: --channel %s is given twice\n", val);
                rc = 2;
            }
            continue;
        }
        if (!strcmp(opt, "--human")) {
            char id[32];
            const char *eq = strchr(val, '=');
            size_t idl = eq ? (size_t)(eq - val) : strlen(val);
            snprintf(id, sizeof id, "%.*s", (int)idl, val);
            if (fake_discord_add_user(fd, NULL, id, eq ? eq + 1 : NULL, 0) != 0) {
                fprintf(stderr, "fake-discord: --human %s: the fake could not add it\n", val);
                rc = 1;
            }
            continue;
        }
        if (strcmp(opt, "--user") != 0)
            continue;
        char *dup = strdup(val);
        char *eq = dup ? strchr(dup, '=') : NULL;
        if (!eq) {
            free(dup);
            fprintf(stderr, "fake-discord: out of memory\n");
            rc = 1;
            break;
        }
        *eq = '\0';
        char *name = strchr(eq + 1, '=');
        if (name)
            *name++ = '\0';
        if (fake_discord_add_user(fd, dup, eq + 1, name, 1) != 0) {
            fprintf(stderr,
                    "fake-discord: --user %s=%s: the fake could not add it (out of "
                    "memory)\n",
                    dup, eq + 1);
            rc = 1;
        }
        free(dup);
    }
    if (rc == 0 && fail_rate > 0)
        fake_discord_set_fail_rate(fd, fail_rate, (unsigned)seed, retry_after);
    /* The file first: whoever saw the stdout line can read the file too. */
    if (rc == 0 && url_file) {
        char line[96];
        snprintf(line, sizeof line, "%s\n", fake_discord_url(fd));
        if (write_atomic(url_file, line) != 0) {
            fprintf(stderr, "fake-discord: cannot write --url-file %s\n", url_file);
            rc = 1;
        }
    }
    if (rc == 0) {
        printf("%s\n", fake_discord_url(fd));
        fflush(stdout);
    }
    if (rc == 0) {
        int sig = 0;
        sigwait(&stop, &sig);
        fprintf(stderr, "fake-discord: stopping on signal %d\n", sig);
    }
    fake_discord_stop(fd);
    return rc;
}
