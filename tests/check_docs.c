/*
 * check_docs.c -- the documentation's relative links: every link of README.md,
 * the markdown files of docs/ and the other READMEs that names a file of the repository finds
 * it, and every #anchor matches a heading of its target by GitHub's slug rules
 * (lower case; letters, digits, spaces, '-' and '_' kept, the rest dropped;
 * spaces become '-'; a repeated heading gets -1, -2, ...). Links to other
 * sites are not followed (tests never call real services). And the facts the
 * documentation repeats from the programs, so they cannot drift apart: the
 * README's length, the admin commands, the package's runtime packages, the
 * glibc floor, and no measured duration or count of the test runs (those
 * change with every run; docs/benchmarks.md dates its measurements). Runs
 * from the top folder, as `make check` does.
 */
#include <check.h>
#include <ctype.h>
#include <glob.h>
#include <regex.h>
#include <stdarg.h>
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

/* Appends a printf-formatted line to t. */
__attribute__((format(printf, 2, 3))) static void text_printf(text *t, const char *fmt, ...)
{
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
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

/* ---- facts the documentation repeats from the programs --------------------- */

/* The README is read in one sitting by a newcomer; the detail goes to docs/. */
enum { README_MAX_LINES = 300 };

static size_t line_count(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* "\n" + key + "\n" is in the list "\nword\n...". */
static int listed(const char *list, const char *key, size_t n)
{
    char want[128];
    snprintf(want, sizeof want, "\n%.*s\n", (int)n, key);
    return strstr(list, want) != NULL;
}

/* The admin subcommands of the table `admin_subs` in plugin/turns.c (which the
 * parser and the did-you-mean both read) as "\nword\nword\n", malloc'd; the
 * caller frees. NULL when the table is not found. */
static char *admin_words(const char *src)
{
    const char *t = strstr(src, "admin_subs[] = {");
    const char *end = t ? strstr(t, "};") : NULL;
    if (!end)
        return NULL;
    text words = {0};
    text_add(&words, "\n", 1);
    for (const char *p = strstr(t, "{\""); p && p < end; p = strstr(p, "{\"")) {
        p += 2;
        const char *q = strchr(p, '"');
        if (!q || q > end)
            break;
        text_add(&words, p, (size_t)(q - p));
        text_add(&words, "\n", 1);
        p = q;
    }
    return words.s;
}

/* The configuration reference's `admins` row must list exactly the admin
 * commands of `words`, as `!dirigent a|b|...` (a table cell writes \|).
 * Appends what differs to *errors. */
static void check_admins_row(const char *path, const char *md, const char *words, text *errors)
{
    const char *row = strstr(md, "\n| `admins` |");
    const char *eol = row ? strchr(row + 1, '\n') : NULL;
    const char *list = row ? strstr(row, "`!dirigent ") : NULL;
    if (!list || (eol && list > eol)) {
        text_printf(errors, "%s: no `admins` row with a `!dirigent a|b|...` list\n", path);
        return;
    }
    list += strlen("`!dirigent ");
    const char *close = strchr(list, '`');
    text named = {0};
    text_add(&named, "\n", 1);
    for (const char *p = list; close && p < close;) {
        size_t n = strcspn(p, "\\|`");
        if (n) {
            char w[128];
            snprintf(w, sizeof w, "%.*s", (int)n, p);
            if (!listed(words, p, n))
                text_printf(errors, "%s: the admins row names `%s`, which is no admin command\n",
                            path, w);
            text_add(&named, p, n);
            text_add(&named, "\n", 1);
        }
        p += n;
        while (p < close && (*p == '\\' || *p == '|'))
            p++;
    }
    for (const char *w = words + 1; *w; w += strcspn(w, "\n") + 1)
        if (!listed(named.s, w, strcspn(w, "\n"))) {
            char one[128];
            snprintf(one, sizeof one, "%.*s", (int)strcspn(w, "\n"), w);
            text_printf(errors, "%s: the admins row leaves out the admin command `%s`\n", path,
                        one);
        }
    free(named.s);
}

/* The section under `heading` (up to the next heading of its level) names
 * every admin command of `words` in code (`word` or `word ...`). */
static void check_commands_named(const char *path, const char *md, const char *heading,
                                 const char *words, text *errors)
{
    const char *sec = strstr(md, heading);
    if (!sec) {
        text_printf(errors, "%s: no heading \"%s\"\n", path, heading);
        return;
    }
    const char *end = strstr(sec + strlen(heading), "\n## ");
    size_t len = end ? (size_t)(end - sec) : strlen(sec);
    for (const char *w = words + 1; *w; w += strcspn(w, "\n") + 1) {
        int n = (int)strcspn(w, "\n");
        char a[128], b[128];
        snprintf(a, sizeof a, "`%.*s`", n, w);
        snprintf(b, sizeof b, "`%.*s ", n, w);
        char *part = strndup(sec, len);
        ck_assert_ptr_nonnull(part);
        if (!strstr(part, a) && !strstr(part, b))
            text_printf(errors, "%s: \"%s\" does not name the admin command %s\n", path, heading,
                        a);
        free(part);
    }
}

/* The value a shell script assigns with `prefix` (e.g. `NAME="`) up to the
 * next `stop` character, malloc'd; the caller frees. NULL when absent. */
static char *shell_value(const char *sh, const char *prefix, char stop)
{
    const char *p = sh ? strstr(sh, prefix) : NULL;
    if (!p)
        return NULL;
    p += strlen(prefix);
    const char *e = strchr(p, stop);
    return e ? strndup(p, (size_t)(e - p)) : NULL;
}

/* Every `apt-get install lib...` of the markdown text must install exactly
 * `pkgs` (the runtime packages of the release package: what the install
 * check puts into its Debian 12 root, and nothing else). Words in the text
 * may break across lines. Returns how many such lines it found. */
static int check_apt_lines(const char *path, const char *md, const char *pkgs, text *errors)
{
    int found = 0;
    for (const char *p = strstr(md, "apt-get"); p; p = strstr(p + 1, "apt-get")) {
        const char *q = p + strlen("apt-get");
        q += strspn(q, " \n");
        if (strncmp(q, "install", 7) != 0)
            continue;
        q += 7;
        q += strspn(q, " \n");
        while (*q == '-') { /* options: -y, --no-install-recommends */
            q += strcspn(q, " \n`");
            q += strspn(q, " \n");
        }
        if (strncmp(q, "lib", 3) != 0)
            continue;
        found++;
        char list[512];
        size_t o = 0;
        for (; *q && !strchr("`);", *q) && o + 1 < sizeof list; q++)
            if (*q != '\n' && *q != ' ')
                list[o++] = *q;
            else if (o && list[o - 1] != ' ')
                list[o++] = ' ';
        while (o && list[o - 1] == ' ')
            o--;
        list[o] = '\0';
        if (strcmp(list, pkgs) != 0) {
            int line = 1;
            for (const char *c = md; c < p; c++)
                line += *c == '\n';
            text_printf(errors,
                        "%s: `apt-get install %s` (line %d) is not the package's runtime "
                        "packages, \"%s\" (RUNTIME_PKGS of scripts/check-install.sh)\n",
                        path, list, line, pkgs);
        }
    }
    return found;
}

/* Every "glibc N.N" of the text is `floor`, the one scripts/release-check.sh
 * holds every release file to. */
static void check_glibc(const char *path, const char *md, const char *floor, text *errors)
{
    for (const char *p = strstr(md, "glibc "); p; p = strstr(p + 1, "glibc ")) {
        const char *v = p + strlen("glibc ");
        if (!isdigit((unsigned char)*v))
            continue;
        size_t n = strspn(v, "0123456789.");
        while (n && v[n - 1] == '.')
            n--;
        if (n != strlen(floor) || strncmp(v, floor, n) != 0) {
            char got[32];
            snprintf(got, sizeof got, "%.*s", (int)(n < 31 ? n : 31), v);
            text_printf(errors, "%s: names glibc %s, but the release floor is %s\n", path, got,
                        floor);
        }
    }
}

/* Whether a line states a measured duration of a build, test or CI run
 * ("about 4 minutes") or a count of tests ("1,111 Check tests in 49 suites").
 * Those change with every run and machine, so one page would soon
 * contradict another; docs/benchmarks.md dates its measurements instead. A
 * duration the program promises ("within about 2 s" of a shutdown) names no
 * run and passes. */
static int states_run_figure(const char *line)
{
    static const char *const run_words[] = {"make ", "CI", ".ci/run", "stage", "suite", "fuzz"};
    regex_t duration, long_duration, count;
    ck_assert_int_eq(regcomp(&duration,
                             "(about|takes?|took) [0-9][0-9.,]*(-[0-9.,]+)? ?"
                             "(minutes?|min|seconds?|s|hours?)([^a-z]|$)",
                             REG_EXTENDED | REG_ICASE | REG_NOSUB),
                     0);
    /* Minutes and hours "about" are a run's, whatever the line names. */
    ck_assert_int_eq(regcomp(&long_duration,
                             "(about|takes?|took) ([0-9][0-9.,]*(-[0-9.,]+)?|one|two|three|four|"
                             "five|ten|a few) ?(minutes?|min|hours?)([^a-z]|$)",
                             REG_EXTENDED | REG_ICASE | REG_NOSUB),
                     0);
    ck_assert_int_eq(regcomp(&count,
                             "[0-9][0-9,]* (Check )?(tests|checks|suites)([^a-z]|$)"
                             "|Checks: [0-9]",
                             REG_EXTENDED | REG_NOSUB),
                     0);
    int about_runs = 0;
    for (size_t i = 0; i < sizeof run_words / sizeof *run_words; i++)
        about_runs |= strstr(line, run_words[i]) != NULL;
    int hit = (about_runs && regexec(&duration, line, 0, NULL, 0) == 0) ||
              regexec(&long_duration, line, 0, NULL, 0) == 0 ||
              regexec(&count, line, 0, NULL, 0) == 0;
    regfree(&duration);
    regfree(&long_duration);
    regfree(&count);
    return hit;
}

/* Appends each line of md that states_run_figure() to *errors. */
static void check_no_run_figures(const char *path, const char *md, text *errors)
{
    int lineno = 0;
    for (const char *line = md; *line;) {
        size_t len = strcspn(line, "\n");
        char *one = strndup(line, len);
        ck_assert_ptr_nonnull(one);
        lineno++;
        if (states_run_figure(one))
            text_printf(errors,
                        "%s: line %d states how long a run takes or how many tests there are "
                        "(remove it, or date it in docs/benchmarks.md): %.120s\n",
                        path, lineno, one);
        free(one);
        line += len + (line[len] ? 1 : 0);
    }
}

START_TEST(the_readme_fits_in_300_lines)
{
    char *md = slurp("README.md");
    ck_assert_ptr_nonnull(md);
    size_t n = line_count(md);
    ck_assert_msg(n <= README_MAX_LINES,
                  "README.md has %zu lines, more than %d: move detail into docs/ and link it", n,
                  (int)README_MAX_LINES);
    free(md);
}
END_TEST

START_TEST(the_fact_checks_find_drift)
{
    const char *words = "\nstatus\nrest\nhelp\n";
    text e = {0};
    check_admins_row(
        "c.md", "x\n| `admins` | array | `[]` | (`!dirigent status\\|rest\\|help`) |\n", words, &e);
    ck_assert_ptr_null(e.s);
    check_admins_row("c.md", "x\n| `admins` | array | `[]` | (`!dirigent status\\|wake`) |\n",
                     words, &e);
    ck_assert_ptr_nonnull(e.s);
    ck_assert_msg(strstr(e.s, "names `wake`, which is no admin command") &&
                      strstr(e.s, "leaves out the admin command `rest`") &&
                      strstr(e.s, "leaves out the admin command `help`"),
                  "%s", e.s);
    free(e.s), e = (text){0};
    check_commands_named("b.md", "## Admin commands\n- `status`: x\n- `rest` y\n## Next\n`help`",
                         "## Admin commands", words, &e);
    ck_assert_msg(e.s && strstr(e.s, "does not name the admin command `help`") &&
                      !strstr(e.s, "`rest`"),
                  "%s", e.s ? e.s : "(nothing reported)");
    free(e.s), e = (text){0};
    ck_assert_int_eq(check_apt_lines("r.md",
                                     "`apt-get install -y libcurl4 libpq5` (libcurl4t64)\n"
                                     "`apt-get\ninstall libcurl4\nlibpq5`; apt-get install npm",
                                     "libcurl4 libpq5", &e),
                     2);
    ck_assert_ptr_null(e.s);
    ck_assert_int_eq(check_apt_lines("r.md", "one\n`apt-get install libjansson4 libpq5 libcurl4`",
                                     "libcurl4 libpq5", &e),
                     1);
    ck_assert_msg(e.s && strstr(e.s, "`apt-get install libjansson4 libpq5 libcurl4` (line 2)"),
                  "%s", e.s ? e.s : "(nothing reported)");
    free(e.s), e = (text){0};
    check_glibc("g.md", "glibc 2.35 or newer; glibc's loader", "2.35", &e);
    ck_assert_ptr_null(e.s);
    check_glibc("g.md", "(glibc 2.34.)", "2.35", &e);
    ck_assert_msg(e.s && strstr(e.s, "names glibc 2.34, but the release floor is 2.35"), "%s",
                  e.s ? e.s : "(nothing reported)");
    free(e.s), e = (text){0};
    static const char *const figures[] = {
        "`make check` runs every suite (about 4 minutes here)",
        "| `make compare` | ... (heavy: about 35 minutes on 2 loaded cores) |",
        "  - `slack-dirigent` (about 15 minutes) plays the story",
        "Works and is tested (`make check`, 1,111 Check tests in 49 suites on 5 December",
        "99%: Checks: 1155, Failures: 1",
        "CI takes about 30-40 s more",
        "It takes about two minutes (each turn is a fresh OpenClaw process)",
    };
    for (size_t i = 0; i < sizeof figures / sizeof *figures; i++)
        ck_assert_msg(states_run_figure(figures[i]), "not caught: %s", figures[i]);
    static const char *const fine[] = {
        "`shutdown` returns within about 2 s even when Discord hangs",
        "the outbox thread (at start, then every 10 minutes, in batches of 500)",
        "`make fuzz-ci` fuzzes each target for `FUZZ_CI_SECONDS` (60)",
        "the `*_pg` suites start their own server",
    };
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++)
        ck_assert_msg(!states_run_figure(fine[i]), "taken for a run's figure: %s", fine[i]);
}
END_TEST

START_TEST(the_docs_state_the_programs_facts)
{
    char *turns = slurp("plugin/turns.c");
    char *words = turns ? admin_words(turns) : NULL;
    ck_assert_msg(words && line_count(words) >= 10,
                  "the admin_subs table of plugin/turns.c was not found (or has under 10 "
                  "commands): is the parser here broken?");
    char *install = slurp("scripts/check-install.sh");
    char *pkgs = shell_value(install, "\nRUNTIME_PKGS=\"", '"');
    ck_assert_msg(pkgs && *pkgs, "RUNTIME_PKGS=\"...\" not found in scripts/check-install.sh");
    char *release = slurp("scripts/release-check.sh");
    char *floor = shell_value(release, "FLOOR=${GLIBC_FLOOR:-", '}');
    ck_assert_msg(floor && isdigit((unsigned char)*floor),
                  "FLOOR=${GLIBC_FLOOR:-...} not found in scripts/release-check.sh");
    text errors = {0};
    char *config = slurp("docs/configuration.md");
    char *behaviour = slurp("docs/behaviour.md");
    ck_assert_ptr_nonnull(config);
    ck_assert_ptr_nonnull(behaviour);
    check_admins_row("docs/configuration.md", config, words, &errors);
    check_commands_named("docs/behaviour.md", behaviour, "\n## Admin commands", words, &errors);
    glob_t g;
    ck_assert_int_eq(glob("docs/*.md", 0, NULL, &g), 0);
    int apt_lines = 0;
    for (size_t i = 0; i <= g.gl_pathc; i++) {
        const char *path = i < g.gl_pathc ? g.gl_pathv[i] : "README.md";
        char *md = slurp(path);
        ck_assert_ptr_nonnull(md);
        int n = check_apt_lines(path, md, pkgs, &errors);
        if (!strcmp(path, "README.md"))
            ck_assert_msg(n >= 1, "README.md names no `apt-get install %s` for the package", pkgs);
        apt_lines += n;
        check_glibc(path, md, floor, &errors);
        /* docs/benchmarks.md is where measurements live, each with its date. */
        if (strcmp(path, "docs/benchmarks.md") != 0)
            check_no_run_figures(path, md, &errors);
        free(md);
    }
    globfree(&g);
    ck_assert_msg(!errors.s, "the documentation disagrees with the programs:\n%s", errors.s);
    free(config), free(behaviour), free(words), free(turns);
    free(install), free(pkgs), free(release), free(floor);
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
    TCase *facts = tcase_create("facts");
    tcase_add_test(facts, the_readme_fits_in_300_lines);
    tcase_add_test(facts, the_fact_checks_find_drift);
    tcase_add_test(facts, the_docs_state_the_programs_facts);
    suite_add_tcase(s, facts);
    return s;
}
