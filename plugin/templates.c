/*
 * templates.c -- the embedded template set, overrides from templatesDir,
 * placeholder validation and single-pass plain-text rendering.
 *
 * Placeholder syntax (see templates.h): `{word}` where word is one or more
 * ASCII letters is a placeholder and must be one of the known names; any
 * other brace (`{}`, `{ x }`, `{"json": 1}`, `{a_b}`) is literal text. So a
 * template can show JSON examples, and a typo such as `{sumaryPath}` is an
 * init error instead of text that silently never gets filled.
 */
#include "templates.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "openclaw/plugin.h"
#include "status.h"

/* An override larger than this is surely not a message template. */
#define DG_TPL_MAX_BYTES (64 * 1024)

struct dg_templates {
    size_t n;
    char **names;
    char **texts;
};

/* Every placeholder, and where its value sits in dg_tpl_vars. */
#define KNOWN(f)                                                                                   \
    {                                                                                              \
#f, offsetof(dg_tpl_vars, f)                                                               \
    }
static const struct {
    const char *name;
    size_t off;
} placeholders[] = {
    KNOWN(discussGuide),
    KNOWN(initiatorMention),
    KNOWN(participantMentions),
    KNOWN(summaryPath),
    KNOWN(discussionChannel),
    KNOWN(originChannel),
    KNOWN(status),
    KNOWN(maxAgentMessages),
    KNOWN(agentMention),
    KNOWN(skippedAgent),
    KNOWN(policy),
    KNOWN(scope),
    KNOWN(mode),
    KNOWN(turnOrder),
    KNOWN(speaker),
    KNOWN(passed),
    KNOWN(agentMessages),
    KNOWN(maxBytes),
    KNOWN(error),
    KNOWN(reason),
    KNOWN(summaryTemplate),
    KNOWN(summaryPreview),
    KNOWN(sessions),
    KNOWN(failed),
    KNOWN(agent),
    KNOWN(outOfOrder),
    KNOWN(command),
    KNOWN(question),
    KNOWN(suggestion),
    KNOWN(budgetWhat),
    KNOWN(budgetUsed),
    KNOWN(budgetLimit),
    KNOWN(budgetKey),
    KNOWN(budgetSetting),
    KNOWN(budgetUntil),
    KNOWN(report),
};
#undef KNOWN
#define N_KNOWN (sizeof placeholders / sizeof placeholders[0])

static void set_err(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t err_len, const char *fmt, ...)
{
    if (!err || err_len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Length of the placeholder token starting at s ("{word}"), 0 if s does not
 * start one. The word is s+1 .. s+len-2. */
static size_t placeholder_len(const char *s)
{
    if (s[0] != '{' || !is_alpha(s[1]))
        return 0;
    size_t i = 1;
    while (is_alpha(s[i]))
        i++;
    return s[i] == '}' ? i + 1 : 0;
}

/* Index into placeholders of the word s[0..len), or -1. */
static int known_index(const char *s, size_t len)
{
    for (size_t i = 0; i < N_KNOWN; i++)
        if (strlen(placeholders[i].name) == len && memcmp(placeholders[i].name, s, len) == 0)
            return (int)i;
    return -1;
}

/* The placeholders each template is rendered with (the code that renders
 * it fills exactly these; any other would always come out empty); the
 * session-model texts are used as they are. README, Templates, says the same. */
static const struct {
    const char *name;
    const char *receives; /* space-separated, each name once */
} receives[] = {
    {"kickoff.md", "discussGuide initiatorMention participantMentions discussionChannel "
                   "originChannel status summaryPath summaryTemplate"},
    {"idle.md", "discussGuide initiatorMention discussionChannel originChannel status "
                "summaryPath"},
    {"closed.md", "discussionChannel status"},
    {"result.md", "discussGuide initiatorMention summaryPath discussionChannel originChannel "
                  "status summaryPreview"},
    {"rest.md", "maxAgentMessages"},
    {"budget.md", "budgetWhat budgetUsed budgetLimit budgetKey budgetSetting budgetUntil"},
    {"budget_discussion.md", "budgetWhat budgetUsed budgetLimit budgetKey budgetSetting "
                             "initiatorMention "
                             "summaryPath"},
    {"timeout.md", "discussGuide initiatorMention discussionChannel originChannel status "
                   "summaryPath"},
    {"wrapup.md", "discussGuide initiatorMention discussionChannel originChannel status "
                  "summaryPath"},
    {"command_hint.md", "command"},
    {"open_question.md", "agentMention agent question"},
    {"creation_undone.md", "initiatorMention discussionChannel"},
    {"session_model_channel.md", ""},
    {"session_model_thread.md", ""},
    /* Replies to `!dirigent` commands (after the reply prefix). */
    {"admin_help.md", ""},
    {"admin_unknown.md", "command"},
    {"admin_unknown_suggest.md", "command suggestion"},
    {"admin_closed.md", ""},
    {"admin_rest.md", ""},
    {"admin_wake.md", "agentMention"},
    {"admin_wake_nobody.md", ""},
    {"admin_wake_not_agent.md", "agent"},
    {"admin_not_admin.md", ""},
    {"admin_skip.md", "skippedAgent agentMention"},
    {"admin_skip_initiator.md", "skippedAgent"},
    {"admin_skip_dormant.md", "skippedAgent"},
    {"admin_skip_nobody.md", ""},
    {"admin_status.md", "policy scope mode turnOrder speaker passed agentMessages "
                        "maxAgentMessages"},
    {"admin_status_closed.md", ""},
    {"admin_close_path_long.md", "maxBytes"},
    {"admin_close_not_discussion.md", ""},
    {"admin_close_already.md", ""},
    {"admin_close_refused.md", "error reason"},
    {"admin_close_done.md", "summaryPath originChannel"},
    {"admin_close_done_nosummary.md", "originChannel"},
    {"admin_rotate_unsupported.md", "scope"},
    {"admin_rotate_unavailable.md", "scope"},
    {"admin_rotate_done.md", "sessions scope"},
    {"admin_rotate_partial.md", "sessions failed scope"},
    {"admin_cancel_unsupported.md", "scope speaker"},
    {"admin_cancel_nobody.md", "scope"},
    {"admin_cancel_unavailable.md", "scope speaker"},
    {"admin_cancel_done.md", "scope speaker"},
    {"admin_cancel_failed.md", "scope speaker"},
    {"admin_cancel_idle.md", "scope speaker"},
    {"admin_order.md", "turnOrder outOfOrder"},
    {"admin_add.md", "agent turnOrder"},
    {"admin_add_already.md", "agent turnOrder"},
    {"admin_remove.md", "agent turnOrder"},
    {"admin_remove_not_member.md", "agent turnOrder"},
    {"admin_member_unknown.md", ""},
    {"admin_resume.md", "scope agentMention"},
    {"admin_resume_none.md", "scope"},
    {"admin_cost.md", "report"},
};

/* What template `name` (a file name, or a path ending in one) receives:
 * static string, or NULL for a name that is no template. */
static const char *receives_of(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (size_t i = 0; i < sizeof receives / sizeof receives[0]; i++)
        if (!strcmp(receives[i].name, base))
            return receives[i].receives;
    return NULL;
}

static int word_in(const char *list, const char *w, size_t len)
{
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ' ');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == len && !memcmp(p, w, len))
            return 1;
        p += l + (e != NULL);
    }
    return 0;
}

int dg_templates_check_text(const char *name, const char *text, char *err, size_t err_len)
{
    const char *gets = receives_of(name);
    for (const char *s = text; *s; s++) {
        size_t len = placeholder_len(s);
        if (len == 0)
            continue;
        if (known_index(s + 1, len - 2) >= 0 && gets && !word_in(gets, s + 1, len - 2)) {
            char list[256] = "";
            for (const char *p = gets; *p;) {
                const char *e = strchr(p, ' ');
                size_t l = e ? (size_t)(e - p) : strlen(p), used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s{%.*s}", used ? " " : "", (int)l, p);
                p += l + (e != NULL);
            }
            set_err(err, err_len,
                    "template %s: placeholder {%.*s} is never filled in this template; it "
                    "receives %s (fix or remove it; README's Templates section lists what each "
                    "template receives)",
                    name, (int)(len - 2), s + 1, *list ? list : "no placeholders");
            return DG_ERR_INVALID;
        }
        if (known_index(s + 1, len - 2) < 0) {
            char list[512] = "";
            for (size_t i = 0; i < N_KNOWN; i++) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s{%s}", i ? " " : "",
                         placeholders[i].name);
            }
            set_err(err, err_len,
                    "template %s: unknown placeholder {%.*s}; known placeholders are %s (fix "
                    "or remove it)",
                    name, (int)(len - 2), s + 1, list);
            return DG_ERR_INVALID;
        }
        s += len - 1;
    }
    return DG_OK;
}

void dg_templates_free(dg_templates *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->names[i]);
        free(t->texts[i]);
    }
    free(t->names);
    free(t->texts);
    free(t);
}

static int index_of(const dg_templates *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->names[i], name) == 0)
            return (int)i;
    return -1;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Read dir/name into a new string. templatesDir is operator config (trusted),
 * so a symlinked file is fine; it must end at a regular file. */
static int read_override(int dirfd, const char *dir, const char *name, char **out, char *err,
                         size_t err_len)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        set_err(err, err_len,
                "templatesDir %s: cannot open %s: %s (it must be a readable "
                "regular file)",
                dir, name, strerror(errno));
        return DG_ERR_IO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        set_err(err, err_len, "templatesDir %s: %s is not a regular file", dir, name);
        return DG_ERR_INVALID;
    }
    if (st.st_size > DG_TPL_MAX_BYTES) {
        close(fd);
        set_err(err, err_len, "templatesDir %s: %s is %lld bytes, over the limit of %d", dir, name,
                (long long)st.st_size, DG_TPL_MAX_BYTES);
        return DG_ERR_INVALID;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        set_err(err, err_len, "out of memory reading template %s", name);
        return DG_ERR_NOMEM;
    }
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            set_err(err, err_len, "templatesDir %s: reading %s: %s", dir, name, strerror(errno));
            free(buf);
            close(fd);
            return DG_ERR_IO;
        }
        if (r == 0 || (got += (size_t)r) == (size_t)st.st_size)
            break;
    }
    close(fd);
    buf[got] = '\0';
    if (strlen(buf) != got) {
        free(buf);
        set_err(err, err_len, "templatesDir %s: %s contains a NUL byte", dir, name);
        return DG_ERR_INVALID;
    }
    *out = buf;
    return DG_OK;
}

/* Templates posted by the moderator (the session-model texts are prompt
 * additions and may be blank on purpose). */
static int is_moderator_message(const char *name)
{
    static const char *const names[] = {"kickoff.md",       "idle.md",           "closed.md",
                                        "result.md",        "rest.md",           "timeout.md",
                                        "wrapup.md",        "command_hint.md",   "budget.md",
                                        "open_question.md", "creation_undone.md"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return strncmp(name, "admin_", 6) == 0; /* the command replies */
}

static int blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
            return 0;
    return 1;
}

/* Apply every *.md file of dir over the embedded set. A .md file whose name
 * is not a known template is refused (a typo would otherwise be ignored);
 * other files are ignored. */
static int load_overrides(dg_templates *t, const char *dir, char *err, size_t err_len)
{
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        set_err(err, err_len, "templatesDir %s: cannot open folder: %s", dir, strerror(errno));
        return DG_ERR_IO;
    }
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        set_err(err, err_len, "templatesDir %s: cannot list folder: %s", dir, strerror(errno));
        return DG_ERR_IO;
    }
    int rc = DG_OK;
    struct dirent *e;
    while (rc == DG_OK && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || !ends_with(e->d_name, ".md"))
            continue;
        int i = index_of(t, e->d_name);
        if (i < 0) {
            char known[1024] = "";
            for (size_t k = 0; k < t->n; k++) {
                size_t used = strlen(known);
                snprintf(known + used, sizeof known - used, "%s%s", k ? " " : "", t->names[k]);
            }
            set_err(err, err_len,
                    "templatesDir %s: %s is not a known template name "
                    "(known: %s); rename or remove it",
                    dir, e->d_name, known);
            rc = DG_ERR_INVALID;
            break;
        }
        char *text = NULL;
        rc = read_override(dirfd, dir, e->d_name, &text, err, err_len);
        if (rc != DG_OK)
            break;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        rc = dg_templates_check_text(path, text, err, err_len);
        if (rc == DG_OK && is_moderator_message(e->d_name) && blank(text)) {
            set_err(err, err_len,
                    "templatesDir %s: %s is empty; a moderator message needs "
                    "text (Discord refuses an empty message): write it or remove the file to "
                    "keep the built-in one",
                    dir, e->d_name);
            rc = DG_ERR_INVALID;
        }
        if (rc != DG_OK) {
            free(text);
            break;
        }
        free(t->texts[i]);
        t->texts[i] = text;
    }
    closedir(d);
    return rc;
}

int dg_templates_load(const char *dir, dg_templates **out, char *err, size_t err_len)
{
    *out = NULL;
    size_t n = 0;
    while (dg_embedded_templates[n].name)
        n++;
    dg_templates *t = calloc(1, sizeof *t);
    if (!t || !(t->names = calloc(n ? n : 1, sizeof *t->names)) ||
        !(t->texts = calloc(n ? n : 1, sizeof *t->texts))) {
        dg_templates_free(t);
        set_err(err, err_len, "out of memory loading templates");
        return DG_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        t->names[i] = strdup(dg_embedded_templates[i].name);
        t->texts[i] = strdup(dg_embedded_templates[i].text);
        t->n = i + 1;
        if (!t->names[i] || !t->texts[i]) {
            dg_templates_free(t);
            set_err(err, err_len, "out of memory loading templates");
            return DG_ERR_NOMEM;
        }
        int rc = dg_templates_check_text(t->names[i], t->texts[i], err, err_len);
        if (rc != DG_OK) {
            dg_templates_free(t);
            return rc;
        }
    }
    if (dir && *dir) {
        int rc = load_overrides(t, dir, err, err_len);
        if (rc != DG_OK) {
            dg_templates_free(t);
            return rc;
        }
    }
    *out = t;
    return DG_OK;
}

const char *dg_templates_get(const dg_templates *t, const char *name)
{
    if (!t || !name)
        return NULL;
    int i = index_of(t, name);
    return i < 0 ? NULL : t->texts[i];
}

static const char *var_value(const dg_tpl_vars *v, int idx)
{
    return v ? *(const char *const *)((const char *)v + placeholders[idx].off) : NULL;
}

char *dg_templates_render(const dg_templates *t, const char *name, const dg_tpl_vars *vars)
{
    const char *text = dg_templates_get(t, name);
    if (!text)
        return NULL;
    /* Two passes over the template (measure, then copy); values are copied
     * verbatim and never scanned, which is what keeps them inert. */
    size_t need = 0; /* 0 in the measuring pass */
    for (;;) {
        char *out = NULL;
        if (need && !(out = malloc(need)))
            return NULL;
        size_t o = 0;
        for (const char *s = text; *s;) {
            size_t len = placeholder_len(s);
            int idx = len ? known_index(s + 1, len - 2) : -1;
            if (idx >= 0) {
                const char *val = var_value(vars, idx);
                size_t vl = val ? strlen(val) : 0;
                if (out && vl)
                    memcpy(out + o, val, vl);
                o += vl;
                s += len;
            } else {
                if (out)
                    out[o] = *s;
                o++;
                s++;
            }
        }
        if (out) {
            out[o] = '\0';
            return out;
        }
        need = o + 1;
    }
}

char *dg_templates_render_trim(const dg_templates *t, const char *name, const dg_tpl_vars *vars)
{
    char *text = dg_templates_render(t, name, vars);
    if (text) {
        size_t n = strlen(text);
        while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
            text[--n] = '\0';
    }
    return text;
}
