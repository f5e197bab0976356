/*
 * summary.c -- summary path convention, required headings and the preview
 * (summary.h).
 */
#include "summary.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "openclaw/plugin.h"
#include "status.h"
#include "errors.h"

struct dg_summary_rules {
    char *text;
    char *headings[DG_SUMMARY_MAX_HEADINGS];
    size_t n;
};

/* s[0..n) without blanks at both ends: start into *b, length returned. */
static size_t trim(const char *s, size_t n, const char **b)
{
    while (n && (*s == ' ' || *s == '\t' || *s == '\r')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    *b = s;
    return n;
}

void dg_summary_rules_free(dg_summary_rules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->headings[i]);
    free(r->text);
    free(r);
}

const char *dg_summary_rules_text(const dg_summary_rules *r)
{
    return r ? r->text : NULL;
}

static int read_all(int fd, char *buf, size_t cap, size_t *len)
{
    size_t n = 0;
    for (;;) {
        ssize_t k = pread(fd, buf + n, cap - n, (off_t)n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0 || (n += (size_t)k) == cap)
            break;
    }
    *len = n;
    return 0;
}

int dg_summary_rules_load(const char *path, dg_summary_rules **out, char *err, size_t err_len)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"discussion.summaryTemplate\" %s %s; it must name a readable "
                       "file of headings (lines starting with '#'): fix the path or remove the "
                       "key",
                       path, fd < 0 ? strerror(e) : "is not a regular file");
    }
    if (sb.st_size > DG_SUMMARY_TEMPLATE_MAX_BYTES) {
        close(fd);
        return dg_fail(err, err_len, DG_ERR_INVALID,
                       "config: \"discussion.summaryTemplate\" %s is larger than %d bytes; it "
                       "lists headings, keep it short",
                       path, DG_SUMMARY_TEMPLATE_MAX_BYTES);
    }
    dg_summary_rules *r = calloc(1, sizeof *r);
    char *text = malloc(DG_SUMMARY_TEMPLATE_MAX_BYTES + 1);
    size_t len = 0;
    int rd = text && r ? read_all(fd, text, DG_SUMMARY_TEMPLATE_MAX_BYTES, &len) : 0;
    close(fd);
    if (!r || !text) {
        free(text);
        free(r);
        return DG_ERR_NOMEM;
    }
    text[len] = '\0';
    r->text = text;
    int rc = rd != 0 || strlen(text) != len ? DG_ERR_INVALID : DG_OK;
    for (const char *s = text; rc == DG_OK && *s;) {
        const char *e = strchr(s, '\n');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        const char *b;
        size_t tl = trim(s, l, &b);
        if (tl && b[0] == '#') {
            if (r->n == DG_SUMMARY_MAX_HEADINGS) {
                rc = DG_ERR_INVALID;
                break;
            }
            if (!(r->headings[r->n] = strndup(b, tl)))
                rc = DG_ERR_NOMEM;
            else
                r->n++;
        }
        s += l + (e != NULL);
    }
    if (rc == DG_OK && r->n == 0)
        rc = DG_ERR_INVALID;
    if (rc == DG_ERR_INVALID)
        dg_fail(err, err_len, rc,
                "config: \"discussion.summaryTemplate\" %s must be readable text with 1 to %d "
                "heading lines (lines starting with '#', e.g. \"## Decision\"); fix the file "
                "or remove the key",
                path, DG_SUMMARY_MAX_HEADINGS);
    if (rc != DG_OK) {
        dg_summary_rules_free(r);
        return rc;
    }
    *out = r;
    return DG_OK;
}

/* A heading is only ever a short line: longer lines are not compared. */
#define LINE_MAX_CMP 512

int dg_summary_check_headings(const dg_summary_rules *r, int fd, const char *path, char *err,
                              size_t err_len)
{
    if (!r || r->n == 0)
        return DG_OK;
    int found[DG_SUMMARY_MAX_HEADINGS] = {0};
    char buf[8192], line[LINE_MAX_CMP + 1];
    size_t ll = 0;
    int overlong = 0;
    off_t off = 0;
    for (;;) {
        ssize_t k = pread(fd, buf, sizeof buf, off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return dg_fail(err, err_len, DG_ERR_IO, "summaryPath %.120s cannot be read: %s", path,
                           strerror(errno));
        off += k;
        for (ssize_t i = 0; i <= k; i++) {
            int end = i == k ? k == 0 : buf[i] == '\n';
            if (!end) {
                if (i == k)
                    break;
                if (ll < LINE_MAX_CMP)
                    line[ll++] = buf[i];
                else
                    overlong = 1;
                continue;
            }
            const char *b;
            size_t tl = trim(line, ll, &b);
            for (size_t h = 0; !overlong && h < r->n; h++)
                if (strlen(r->headings[h]) == tl && memcmp(r->headings[h], b, tl) == 0)
                    found[h] = 1;
            ll = 0;
            overlong = 0;
        }
        if (k == 0)
            break;
    }
    char missing[600] = "";
    size_t nmiss = 0;
    for (size_t h = 0; h < r->n; h++) {
        if (found[h])
            continue;
        size_t used = strlen(missing);
        snprintf(missing + used, sizeof missing - used, "%s\"%s\"", nmiss ? ", " : "",
                 r->headings[h]);
        nmiss++;
    }
    if (!nmiss)
        return DG_OK;
    return dg_fail(err, err_len, DG_ERR_INVALID,
                   "summaryPath %.120s lacks %s required heading%s: %s; add %s as line%s of "
                   "their own (the kickoff lists the summary template) and call "
                   "discuss-callback again (nothing was changed)",
                   path, nmiss == 1 ? "a" : "these", nmiss == 1 ? "" : "s", missing,
                   nmiss == 1 ? "it" : "them", nmiss == 1 ? "" : "s");
}

/* Bytes of the UTF-8 character starting with c (1 for a stray byte). */
static size_t u8_len(unsigned char c)
{
    return c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
}

#define ZWSP "\xE2\x80\x8B"

char *dg_summary_preview(int fd, long chars)
{
    if (chars <= 0)
        return strdup("");
    size_t cap = (size_t)chars * 4;
    char *raw = malloc(cap + 1);
    size_t n = 0;
    if (!raw || read_all(fd, raw, cap, &n) != 0) {
        free(raw);
        return NULL;
    }
    /* The first `chars` characters (a character cut by cap is dropped). */
    size_t end = 0, count = 0;
    while (end < n && count < (size_t)chars) {
        size_t l = u8_len((unsigned char)raw[end]);
        if (end + l > n)
            break;
        end += l;
        count++;
    }
    int cut = end < n;
    if (cut) {
        size_t b = end;
        while (b > 0 && raw[b - 1] != '\n')
            b--;
        if (b == 0) {
            b = end;
            while (b > 0 && raw[b - 1] != ' ')
                b--;
        }
        if (b > 0)
            end = b;
    }
    while (end > 0 && (raw[end - 1] == ' ' || raw[end - 1] == '\n' || raw[end - 1] == '\r' ||
                       raw[end - 1] == '\t'))
        end--;
    size_t start = 0;
    while (start < end && (raw[start] == '\n' || raw[start] == '\r'))
        start++;
    if (start >= end) {
        free(raw);
        return strdup("");
    }
    /* Worst case: every byte an '@' (plus ZWSP) or a line break (plus "> "). */
    char *out = malloc((end - start) * 4 + 16);
    if (!out) {
        free(raw);
        return NULL;
    }
    size_t o = 0;
    int bol = 1;
    for (size_t i = start; i < end; i++) {
        char c = raw[i];
        if (c == '\r' || c == '\0')
            continue;
        if (bol) {
            memcpy(out + o, "> ", 2);
            o += 2;
            bol = 0;
        }
        out[o++] = c;
        if (c == '\n')
            bol = 1;
        else if (c == '@' || (c == '<' && i + 1 < end &&
                              (raw[i + 1] == '@' || raw[i + 1] == '#' || raw[i + 1] == '&' ||
                               raw[i + 1] == '/' || raw[i + 1] == ':' || raw[i + 1] == 't'))) {
            memcpy(out + o, ZWSP, 3);
            o += 3;
        }
    }
    if (cut) {
        memcpy(out + o, bol ? "> ..." : " ...", bol ? 5 : 4);
        o += bol ? 5 : 4;
    }
    out[o] = '\0';
    free(raw);
    return out;
}

char *dg_summary_suggested_path(const char *dir, const char *channel_name, const char *channel_id)
{
    const char *name = channel_name && *channel_name ? channel_name : channel_id;
    size_t len = strlen(dir) + strlen(name ? name : "") + 8;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%s/%s.md", dir, name ? name : "summary");
    return s;
}

int dg_summary_open(const char *workspace, const char *dir, const char *path, int64_t max_bytes,
                    dg_workspace_file *out, char *err, size_t err_len)
{
    if (dir && *dir && path && *path && !strchr(path, '/') && strcmp(path, ".") != 0 &&
        strcmp(path, "..") != 0) {
        size_t len = strlen(dir) + strlen(path) + 2;
        char *in_dir = malloc(len);
        if (!in_dir)
            return dg_fail(err, err_len, DG_ERR_NOMEM, "out of memory; try again");
        snprintf(in_dir, len, "%s/%s", dir, path);
        int rc = dg_workspace_open(workspace, in_dir, max_bytes, out, err, err_len);
        free(in_dir);
        if (rc != DG_ERR_NOT_FOUND)
            return rc;
        if (err && err_len)
            err[0] = '\0';
    }
    return dg_workspace_open(workspace, path, max_bytes, out, err, err_len);
}

/* Length of the white-space character at s (n bytes left), 0 if none:
 * ASCII space, tab, line breaks, and the UTF-8 spaces an editor may leave
 * (no-break, the U+2000 block, zero width, ideographic, byte-order mark). */
static size_t space_len(const unsigned char *s, size_t n)
{
    if (*s == ' ' || (*s >= '\t' && *s <= '\r'))
        return 1;
    if (n >= 2 && s[0] == 0xC2 && s[1] == 0xA0)
        return 2;
    if (n >= 3 && s[0] == 0xE2 && s[1] == 0x80 && (s[2] <= 0x8B || s[2] == 0xAF))
        return 3;
    if (n >= 3 && s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F)
        return 3;
    if (n >= 3 && s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80)
        return 3;
    if (n >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF)
        return 3;
    return 0;
}

int dg_summary_check_text(int fd, const char *path, char *err, size_t err_len)
{
    unsigned char buf[8192 + 4];
    size_t keep = 0;
    for (;;) {
        ssize_t r = read(fd, buf + keep, sizeof buf - 4 - keep);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return dg_fail(err, err_len, DG_ERR_IO, "summaryPath %.120s cannot be read: %s", path,
                           strerror(errno));
        size_t n = keep + (size_t)r, i = 0;
        while (i < n) {
            size_t l = space_len(buf + i, n - i);
            if (l)
                i += l;
            else if (r > 0 && n - i < 3 && buf[i] >= 0xC2)
                break; /* a multi-byte character cut by the read: finish it next time */
            else
                return DG_OK;
        }
        if (r == 0)
            break;
        keep = n - i;
        memmove(buf, buf + i, keep);
    }
    return dg_fail(err, err_len, DG_ERR_INVALID,
                   "summaryPath %.120s is empty or only white space; a summary needs at least "
                   "one character that is not a space: write the summary into it and call "
                   "discuss-callback again (nothing was changed)",
                   path);
}
