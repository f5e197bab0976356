/*
 * ctl_doctor_net.c -- what the doctor finds before asking any platform:
 * an example's placeholders left in the config (offline), and whether the
 * name of a platform's API host resolves, so that a DNS or proxy problem
 * is reported as the network's and not as a refused token.
 */
#include "ctl_doctor_int.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

int doctor_is_placeholder(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n > 5 && (!strncasecmp(s, "your_", 5) || !strncasecmp(s, "your-", 5) ||
                     (s[0] == '<' && s[n - 1] == '>'));
}

/* The fix for a placeholder at path (a key when is_key). Static text. */
static const char *placeholder_fix(const char *path, int is_key)
{
    if (is_key && !strcmp(path, "channels.discord.guilds"))
        return "write your server's id there (Discord: right-click the server, Copy Server "
               "ID); OpenClaw does not substitute ${VAR} in keys";
    if (is_key && strstr(path, ".channels"))
        return "write the channel's id there (Discord: right-click the channel, Copy Channel "
               "ID; Slack: the channel's details, at the bottom)";
    return "replace it with the real value (an example's placeholder was left in)";
}

/* Every key and string below v (at path) that is a placeholder. */
static void walk(doctor *d, json_t *v, const char *path)
{
    char below[512];
    if (json_is_object(v)) {
        const char *k;
        json_t *sub;
        json_object_foreach(v, k, sub) {
            if (doctor_is_placeholder(k))
                doctor_sayf(d, DOCTOR_ERROR, placeholder_fix(path, 1),
                            "config: %s%shas the key \"%.64s\", a placeholder", path,
                            *path ? " " : "", k);
            snprintf(below, sizeof below, "%s%s%s", path, *path ? "." : "", k);
            walk(d, sub, below);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *sub;
        json_array_foreach(v, i, sub) {
            snprintf(below, sizeof below, "%s[%zu]", path, i);
            walk(d, sub, below);
        }
    } else if (json_is_string(v) && doctor_is_placeholder(json_string_value(v))) {
        doctor_sayf(d, DOCTOR_ERROR, placeholder_fix(path, 0),
                    "config: %s is \"%.64s\", a placeholder", path, json_string_value(v));
    }
}

void doctor_check_placeholders(doctor *d)
{
    int before = d->errors;
    walk(d, d->root, "");
    if (d->errors == before)
        doctor_say(d, DOCTOR_OK, "config: no placeholder (YOUR_..., <...>) left in", NULL);
}

/* 1 when curl would reach a URL of scheme through a proxy (it resolves the
 * host there, not here). */
static int proxied(const char *scheme)
{
    const char *names[] = {!strcmp(scheme, "https") ? "https_proxy" : "http_proxy",
                           !strcmp(scheme, "https") ? "HTTPS_PROXY" : "HTTP_PROXY", "all_proxy",
                           "ALL_PROXY"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return 1;
    }
    return 0;
}

int doctor_host_resolves(doctor *d, const char *platform, const char *key, const char *base)
{
    const char *sep = base ? strstr(base, "://") : NULL;
    if (!sep)
        return 1; /* the plugin's validation has said what is wrong */
    char scheme[8] = "", host[256] = "";
    snprintf(scheme, sizeof scheme, "%.*s", (int)(sep - base), base);
    const char *h = sep + 3;
    size_t n = h[0] == '[' ? strcspn(h + 1, "]") : strcspn(h, ":/?#");
    snprintf(host, sizeof host, "%.*s", (int)n, h[0] == '[' ? h + 1 : h);
    if (!*host || proxied(scheme))
        return 1;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (res)
        freeaddrinfo(res);
    if (rc == 0)
        return 1;
    char fix[DOCTOR_TEXT_MAX];
    snprintf(fix, sizeof fix,
             "check DNS/proxy on this machine (resolv.conf, https_proxy), or correct %s; "
             "the tokens are not at fault, they were not tried",
             key);
    doctor_sayf(d, DOCTOR_ERROR, fix, "%s: cannot resolve %s (%s %s): %s", platform, host, key,
                base, gai_strerror(rc));
    return 0;
}
