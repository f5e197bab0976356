/*
 * check_docs.c -- the documentation's relative links: every link of README.md,
 * the markdown files of docs/ and the other READMEs that names a file of the repository finds
 * it, and every #anchor matches a heading of its target by GitHub's slug rules
 * (lower case; letters, digits, spaces, '-' and '_' kept, the rest dropped;
 * spaces become '-'; a repeated heading gets -1, -2, ...). Links to other
 * sites are not followed (tests never call real services). Runs from the top
 * folder, as `make check` does.
 */
#include <check.h>
#include <ctype.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"

/* A growable text; the test owns it and frees .s. */
typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void text_add(text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        ck_assert_ptr_nonnull(t->s);
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void text_addf(text *t, const char *fmt, const char *a, const char *b, int line)
{
    char buf[1200];
    int n = snprintf(buf, sizeof buf, fmt, a, b, line);
    text_add(t, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* The whole file, malloc'd (the caller frees), or NULL when it cannot be read. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *s = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&s, &cap, '\0', f);
    fclose(f);
    if (n < 0) {
        free(s);
        return strdup("");
    }
    return s;
}

/* A fenced code block opens or closes on this line (``` or ~~~, indented
 * up to three spaces past any list indentation: GitHub accepts fences inside
 * list items). */
static int is_fence(const char *line)
{
    while (*line == ' ')
        line++;
    return !strncmp(line, "```", 3) || !strncmp(line, "~~~", 3);
}

/* GitHub's anchor of one heading's text (without the leading #s), into out
 * (size n). Inline code keeps its text, link syntax keeps the link's text,
 * emphasis marks go; then GitHub's rule. Bytes of multi-byte UTF-8 characters
 * are kept (letters of other scripts are; emoji would not be, and no heading
 * here has one). */
static void slug(const char *h, char *out, size_t n)
{
    /* First the rendered text: drop "](...)" of links, '[', ']', '`', '*'. */
    char plain[1024];
    size_t k = 0;
    for (const char *p = h; *p && k + 1 < sizeof plain; p++) {
        if (p[0] == ']' && p[1] == '(') {
            const char *e = strchr(p, ')');
            if (e) {
                p = e;
                continue;
            }
        }
        if (*p == '[' || *p == ']' || *p == '`' || *p == '*')
            continue;
        plain[k++] = *p;
    }
    plain[k] = '\0';
    /* Trailing spaces and closing #s of an ATX heading are not its text. */
    while (k && (plain[k - 1] == ' ' || plain[k - 1] == '#'))
        plain[--k] = '\0';
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)plain; *p && o + 1 < n; p++) {
        if (*p >= 0x80 || isalnum(*p) || *p == '-' || *p == '_')
            out[o++] = (char)(*p >= 0x80 ? *p : tolower(*p));
        else if (*p == ' ')
            out[o++] = '-';
    }
    out[o] = '\0';
}

/* Every anchor of a markdown file, each followed by '\n', malloc'd; the
 * caller frees. Headings inside fenced code are not headings. */
static char *anchors_of(const char *md)
{
    text all = {0};
    text_add(&all, "\n", 1);
    int fenced = 0;
    for (const char *line = md; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        if (is_fence(buf))
            fenced = !fenced;
        else if (!fenced && buf[0] == '#') {
            const char *p = buf;
            while (*p == '#')
                p++;
            if (p - buf <= 6 && *p == ' ') {
                char s[1024], key[1104]; /* "\n" try "\n" */
                slug(p + 1, s, sizeof s);
                /* A repeat of an earlier anchor gets -1, -2, ... */
                snprintf(key, sizeof key, "\n%s\n", s);
                char try[1100];
                snprintf(try, sizeof try, "%s", s);
                for (int i = 1; strstr(all.s, key); i++) {
                    snprintf(try, sizeof try, "%s-%d", s, i);
                    snprintf(key, sizeof key, "\n%s\n", try);
                }
                text_add(&all, try, strlen(try));
                text_add(&all, "\n", 1);
            }
        }
        line += len + (eol ? 1 : 0);
    }
    return all.s;
}

/* Checks the links of the markdown file `path` (relative to the working
 * folder); appends one line per broken link to *errors. Returns the number
 * of relative links it checked. */
static int check_links(const char *path, text *errors)
{
    char *md = slurp(path);
    if (!md) {
        text_addf(errors, "%s: cannot be read%s (line %d)\n", path, "", 0);
        return 0;
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        dir[0] = '\0';
    int checked = 0, fenced = 0, lineno = 0;
    for (const char *line = md; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        char buf[4096];
        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        lineno++;
        line += len + (eol ? 1 : 0);
        if (is_fence(buf)) {
            fenced = !fenced;
            continue;
        }
        if (fenced)
            continue;
        int code = 0;
        for (char *p = buf; *p; p++) {
            if (*p == '`') {
                code = !code; /* a link inside inline code is only text */
                continue;
            }
            if (code || p[0] != ']' || p[1] != '(')
                continue;
            char *start = p + 2, *end = strchr(start, ')');
            if (!end)
                break;
            char target[1024];
            snprintf(target, sizeof target, "%.*s", (int)(end - start), start);
            p = end;
            char *sp = strchr(target, ' '); /* [x](path "title") */
            if (sp)
                *sp = '\0';
            if (strchr(target, ':') && strcspn(target, ":") < strcspn(target, "/#"))
                continue; /* https:, mailto: ...: another site */
            checked++;
            char *hash = strchr(target, '#');
            if (hash)
                *hash++ = '\0';
            char file[2100];
            if (target[0])
                snprintf(file, sizeof file, "%s%s", dir, target);
            else
                snprintf(file, sizeof file, "%s", path);
            struct stat st;
            if (stat(file, &st) != 0) {
                text_addf(errors, "%s: the link to %s names no file (line %d)\n", path, file,
                          lineno);
                continue;
            }
            if (!hash || !*hash)
                continue;
            char *other = S_ISREG(st.st_mode) ? slurp(file) : NULL;
            char *anchors = other ? anchors_of(other) : NULL;
            char want[1100];
            snprintf(want, sizeof want, "\n%s\n", hash);
            if (!anchors || !strstr(anchors, want)) {
                char what[2300];
                snprintf(what, sizeof what, "%s#%s", file, hash);
                text_addf(errors, "%s: the anchor of %s matches no heading there (line %d)\n", path,
                          what, lineno);
            }
            free(anchors);
            free(other);
        }
    }
    free(md);
    return checked;
}

START_TEST(slugs_follow_githubs_rule)
{
    static const char *const cases[][2] = {
        {"Use it in OpenClaw", "use-it-in-openclaw"},
        {"The operator's view: dirigent-ctl", "the-operators-view-dirigent-ctl"},
        {"Sharing a store (several processes on one SQLite file)",
         "sharing-a-store-several-processes-on-one-sqlite-file"},
        {"Quick start (Debian 12)", "quick-start-debian-12"},
        {"`before_agent_reply` (the claim)", "before_agent_reply-the-claim"},
        {"[Links](x.md) and *emphasis*", "links-and-emphasis"},
        {"What works, what is measured, what is not done",
         "what-works-what-is-measured-what-is-not-done"},
        {"ABI 1.1: session_reset / run_abort", "abi-11-session_reset--run_abort"},
        {"Closing #s ##", "closing-s"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char s[256];
        slug(cases[i][0], s, sizeof s);
        ck_assert_msg(!strcmp(s, cases[i][1]), "slug of \"%s\" is \"%s\", GitHub's \"%s\"",
                      cases[i][0], s, cases[i][1]);
    }
}
END_TEST

START_TEST(a_broken_link_or_anchor_is_found)
{
    char *tmp = tu_mkdtemp();
    char *sub = tu_path(tmp, "docs");
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    char *a = tu_path(tmp, "a.md");
    char *b = tu_path(sub, "b.md");
    ck_assert_int_eq(tu_write_file(b, "# B\n\n## Part\n\n## Part\n\n```\n# not a heading\n```\n"
                                      "[back](../a.md#top) [gone](../nothing.md)\n"),
                     0);
    ck_assert_int_eq(
        tu_write_file(a, "# Top\n\n"
                         "[ok](docs/b.md) [ok](docs/b.md#part) [second](docs/b.md#part-1)\n"
                         "[self](#top) [web](https://example.com/x#y) [dir](docs)\n"
                         "`[in code](missing.md)`\n"
                         "```\n[fenced](missing.md)\n```\n"
                         "[bad file](docs/c.md)\n"
                         "[bad anchor](docs/b.md#part-2)\n"
                         "[fenced heading](docs/b.md#not-a-heading)\n"
                         "[bad self](#nowhere \"title\")\n"),
        0);
    text errors = {0};
    ck_assert_int_eq(check_links(a, &errors), 9);
    ck_assert_ptr_nonnull(errors.s);
    const char *want[] = {"docs/c.md names no file (line 9)",
                          "docs/b.md#part-2 matches no heading there (line 10)",
                          "docs/b.md#not-a-heading matches no heading there (line 11)",
                          "a.md#nowhere matches no heading there (line 12)"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(errors.s, want[i]), "not reported: %s; reported:\n%s", want[i],
                      errors.s);
    size_t lines = 0;
    for (const char *p = errors.s; *p; p++)
        lines += *p == '\n';
    ck_assert_msg(lines == 4, "reported more than the four broken links:\n%s", errors.s);
    free(errors.s);
    /* The other file's links resolve from its own folder. */
    text e2 = {0};
    ck_assert_int_eq(check_links(b, &e2), 2);
    ck_assert_msg(e2.s && strstr(e2.s, "nothing.md names no file") && !strstr(e2.s, "a.md"), "%s",
                  e2.s ? e2.s : "(nothing reported)");
    free(e2.s);
    free(a), free(b), free(sub);
    tu_rmtree(tmp);
    free(tmp);
}
END_TEST

START_TEST(every_link_of_the_docs_resolves)
{
    glob_t g;
    ck_assert_int_eq(glob("docs/*.md", 0, NULL, &g), 0);
    ck_assert_msg(g.gl_pathc >= 6,
                  "docs/ holds %zu markdown files; expected the six the README "
                  "links to",
                  g.gl_pathc);
    text errors = {0};
    int checked = check_links("README.md", &errors);
    ck_assert_msg(checked >= 10, "README.md has only %d relative links: is the parser broken?",
                  checked);
    for (size_t i = 0; i < g.gl_pathc; i++)
        checked += check_links(g.gl_pathv[i], &errors);
    static const char *const more[] = {"bridge/openclaw/README.md", "demo/README.md", NULL};
    for (const char *const *m = more; *m; m++)
        checked += check_links(*m, &errors);
    globfree(&g);
    ck_assert_msg(!errors.s, "broken links in the documentation (fix the link or the heading):\n%s",
                  errors.s);
}
END_TEST

Suite *make_docs_suite(void)
{
    Suite *s = suite_create("docs");
    TCase *tc = tcase_create("links");
    tcase_add_test(tc, slugs_follow_githubs_rule);
    tcase_add_test(tc, a_broken_link_or_anchor_is_found);
    tcase_add_test(tc, every_link_of_the_docs_resolves);
    suite_add_tcase(s, tc);
    return s;
}
