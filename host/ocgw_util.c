/*
 * ocgw_util.c -- small helpers of the reference gateway: time, strings,
 * files, hashing, the NO_REPLY rule, mention parsing.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ocgw.h"
#include "utf8.h"

int64_t ocgw_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ocgw_sleep_ms(long ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    /* A signal cuts the sleep short: the loop then sees the stop flag. */
    nanosleep(&ts, NULL);
}

char *ocgw_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

uint64_t ocgw_hash(const char *first, ...)
{
    uint64_t h = 1469598103934665603ull;
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *)) {
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
            h ^= *p;
            h *= 1099511628211ull;
        }
        h ^= 0xff; /* part separator, so ("ab","c") != ("a","bc") */
        h *= 1099511628211ull;
    }
    va_end(ap);
    return h;
}

int ocgw_mkdirs(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    if (!path || !*path || strlen(path) >= sizeof buf) {
        errno = EINVAL;
        return -1;
    }
    strcpy(buf, path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, mode) != 0 && errno != EEXIST)
        return -1;
    struct stat sb;
    if (stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

int ocgw_write_file(const char *path, const char *data, size_t len, int do_fsync)
{
    char *tmp = dg_sprintf("%s.tmp.%ld", path, (long)getpid());
    if (!tmp)
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            unlink(tmp);
            free(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if ((do_fsync && fsync(fd) != 0) || close(fd) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

char *ocgw_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

char *ocgw_abspath(const char *base, const char *path)
{
    if (!path)
        return NULL;
    if (path[0] == '/')
        return strdup(path);
    if (base && *base)
        return dg_sprintf("%s/%s", base, path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    return dg_sprintf("%s/%s", cwd, path);
}

/* The silent-reply rule of OpenClaw (shared/reference/openclaw.md): only
 * the token, case-insensitive, white space and punctuation around it
 * ignored, repeated tokens, a JSON string or {"action":"NO_REPLY"} too. */
int ocgw_is_silent(const char *text)
{
    if (!text)
        return 0;
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    if (j) {
        int silent = 0;
        if (json_is_string(j))
            silent = ocgw_is_silent(json_string_value(j));
        else if (json_is_object(j) && json_object_size(j) == 1 &&
                 json_is_string(json_object_get(j, "action")))
            silent = ocgw_is_silent(json_string_value(json_object_get(j, "action")));
        json_decref(j);
        if (silent)
            return 1;
    }
    int tokens = 0;
    const char *p = text;
    for (;;) {
        while (*p && (isspace((unsigned char)*p) || ispunct((unsigned char)*p)) && *p != '_')
            p++;
        if (!*p)
            break;
        if (strncasecmp(p, "NO_REPLY", 8) != 0)
            return 0;
        p += 8;
        tokens++;
        if (*p && !isspace((unsigned char)*p) && !ispunct((unsigned char)*p))
            return 0;
        if (*p == '_')
            return 0;
    }
    return tokens > 0;
}

char *ocgw_oneline(const char *text, size_t max)
{
    if (!text)
        return strdup("");
    size_t n = strlen(text);
    /* max counts characters, not bytes: a UTF-8 character takes up to 4
     * bytes, so the copy is bounded by the text's own length. */
    char *out = malloc(n + 4);
    if (!out)
        return NULL;
    size_t o = 0, chars = 0;
    for (size_t i = 0; i < n && chars < max; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n' || c == '\r' || c == '\t')
            c = ' ';
        out[o++] = (char)c;
        if ((c & 0xC0) != 0x80)
            chars++;
    }
    /* Do not cut a UTF-8 sequence in half. */
    if (o < n)
        o = dg_utf8_char_start(text, o);
    if (o < n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = 0;
    return out;
}

char *ocgw_value_line(long runs, long avoided)
{
    if (runs <= 0)
        return dg_sprintf("no agent ran, so there was no model call to avoid");
    if (avoided < 0)
        avoided = 0;
    if (avoided > runs)
        avoided = runs; /* counters of a hand-edited state: never above 100% */
    long pct = (avoided * 100 + runs / 2) / runs;
    if (runs == 1)
        return dg_sprintf("without the plugin the one agent run would have called a model: "
                          "%ld avoided (%ld%%), %ld made",
                          avoided, pct, runs - avoided);
    return dg_sprintf("without the plugin all %ld agent runs would have called a model: "
                      "%ld avoided (%ld%%), %ld made",
                      runs, avoided, pct, runs - avoided);
}

char *ocgw_value_line_made(long alone, long made)
{
    if (made <= alone || alone <= 0)
        return ocgw_value_line(alone, alone - made);
    return dg_sprintf("without the plugin all %ld agent runs would have called a model: "
                      "0 avoided (0%%), %ld made (%ld more)",
                      alone, made, made - alone);
}

/* The id of a reference at q (after "<@", "<@!" or "<#"), ending at '>'
 * (or Slack's '|' before a label, then '>'): Discord's digits, or Slack's
 * upper-case id. Its length, 0 when q holds none. */
static size_t ref_id(const char *q)
{
    size_t n = 0;
    if (*q >= 'A' && *q <= 'Z')
        while ((q[n] >= 'A' && q[n] <= 'Z') || (q[n] >= '0' && q[n] <= '9'))
            n++;
    else
        while (q[n] >= '0' && q[n] <= '9')
            n++;
    if (n == 0 || n > (*q >= 'A' ? 21u : 20u))
        return 0;
    if (q[n] == '>' || (q[0] >= 'A' && q[n] == '|' && strchr(q + n, '>')))
        return n;
    return 0;
}

static json_t *refs(const char *text, const char *open)
{
    json_t *arr = json_array();
    size_t ol = strlen(open);
    for (const char *p = text ? strstr(text, open) : NULL; p && arr; p = strstr(p + 1, open)) {
        const char *q = p + ol;
        if (*open == '<' && open[1] == '@' && *q == '!')
            q++;
        size_t len = ref_id(q);
        if (!len)
            continue;
        char id[24];
        memcpy(id, q, len);
        id[len] = 0;
        int seen = 0;
        size_t i;
        json_t *v;
        json_array_foreach(arr, i, v)
            seen |= !strcmp(json_string_value(v), id);
        if (!seen)
            json_array_append_new(arr, json_string(id));
    }
    return arr;
}

int ocgw_id_cmp(const char *a, const char *b)
{
    /* Whole part by length then digits, then the fraction (Slack's ts). */
    size_t ia = strcspn(a, "."), ib = strcspn(b, ".");
    while (ia > 1 && *a == '0')
        a++, ia--;
    while (ib > 1 && *b == '0')
        b++, ib--;
    if (ia != ib)
        return ia < ib ? -1 : 1;
    int c = strncmp(a, b, ia);
    if (c)
        return c < 0 ? -1 : 1;
    const char *fa = a[ia] == '.' ? a + ia + 1 : "", *fb = b[ib] == '.' ? b + ib + 1 : "";
    c = strcmp(fa, fb);
    return c < 0 ? -1 : c > 0;
}

json_t *ocgw_user_mentions(const char *text)
{
    return refs(text, "<@");
}

json_t *ocgw_channel_refs(const char *text)
{
    return refs(text, "<#");
}
