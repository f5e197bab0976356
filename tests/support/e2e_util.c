/*
 * e2e_util.c -- subprocess plumbing of the end-to-end suite; see e2e_util.h.
 */
#include "e2e_util.h"

#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

long e2e_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void e2e_nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char *bpath(const char *name)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", tu_build_dir(), name) < 0)
        ck_abort_msg("out of memory");
    return p;
}

static void fail_run(e2e_run *r, const char *msg)
{
    if (r->gw_pid > 0)
        kill(r->gw_pid, SIGKILL);
    if (r->fake_pid > 0)
        kill(r->fake_pid, SIGKILL);
    ck_abort_msg("%s (run folder %s)", msg, r->dir ? r->dir : "?");
}

/* ---- HTTP to the control endpoints -------------------------------------------------- */

typedef struct buf {
    char *p;
    size_t n;
} buf;

static size_t on_data(char *d, size_t sz, size_t nm, void *u)
{
    buf *b = u;
    size_t add = sz * nm;
    char *np = realloc(b->p, b->n + add + 1);
    if (!np)
        return 0;
    memcpy(np + b->n, d, add);
    b->p = np;
    b->n += add;
    b->p[b->n] = 0;
    return add;
}

static long http(e2e_run *r, const char *method, const char *path, const char *body, buf *out)
{
    CURL *c = curl_easy_init();
    if (!c)
        return -1;
    char url[512];
    snprintf(url, sizeof url, "%s%s", r->base, path);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    long code = -1;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return code;
}

json_t *e2e_get(e2e_run *r, const char *path)
{
    buf b = {0};
    long code = http(r, "GET", path, NULL, &b);
    json_t *j = code / 100 == 2 && b.p ? json_loads(b.p, 0, NULL) : NULL;
    free(b.p);
    return j;
}

int e2e_post(e2e_run *r, const char *path, const char *body)
{
    buf b = {0};
    long code = http(r, "POST", path, body, &b);
    free(b.p);
    return code / 100 == 2 ? 0 : -1;
}

long e2e_message_count(e2e_run *r)
{
    json_t *m = e2e_get(r, "/_fake/messages");
    long n = json_is_array(m) ? (long)json_array_size(m) : -1;
    json_decref(m);
    return n;
}

static const char *sget(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

void e2e_check_channel(e2e_run *r, const char *channel, const e2e_want *w, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "/_fake/messages?channel=%s", channel);
    json_t *msgs = e2e_get(r, path);
    ck_assert_msg(json_is_array(msgs), "cannot read the messages of %s", channel);
    ck_assert_msg(json_array_size(msgs) == n, "channel %s holds %zu messages, the story has %zu",
                  channel, json_array_size(msgs), n);
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(msgs, i);
        const char *author = sget(json_object_get(m, "author"), "id");
        const char *content = sget(m, "content");
        ck_assert_msg(author && !strcmp(author, w[i].author),
                      "channel %s message %zu: author %s, expected %s (\"%s\")", channel, i + 1,
                      author, w[i].author, content);
        ck_assert_msg(!w[i].marker || (content && strstr(content, w[i].marker)),
                      "channel %s message %zu lacks \"%s\": \"%s\"", channel, i + 1, w[i].marker,
                      content);
    }
    json_decref(msgs);
}

char *e2e_read(e2e_run *r, const char *name)
{
    char *p = tu_path(r->dir, name);
    FILE *f = fopen(p, "rb");
    free(p);
    if (!f)
        return NULL;
    char *text = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&text, &n);
    char chunk[4096];
    size_t k;
    while (mem && (k = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, k, mem);
    if (mem)
        fclose(mem);
    fclose(f);
    return text;
}

/* ---- the fake ------------------------------------------------------------------------------ */

static void add_user(e2e_run *r, const char *token, const char *id, int bot, const char *name)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"token\":\"%s\",\"userId\":\"%s\",\"bot\":%s,\"username\":\"%s\"}", token, id,
             bot ? "true" : "false", name);
    if (e2e_post(r, "/_fake/users", body) != 0)
        fail_run(r, "cannot register a user at the fake Discord");
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char chunk[8192];
    size_t k;
    int ok = in && out;
    while (ok && (k = fread(chunk, 1, sizeof chunk, in)) > 0)
        ok = fwrite(chunk, 1, k, out) == k;
    if (in)
        fclose(in);
    if (out && fclose(out) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

void e2e_start(e2e_run *r, const char *const *fake_args)
{
    memset(r, 0, sizeof *r);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    r->dir = tu_mkdtemp();
    char *url_file = tu_path(r->dir, "fake-url");
    char *fake = bpath("fake-discord");
    const char *argv[32];
    int a = 0;
    argv[a++] = fake;
    argv[a++] = "--guild";
    argv[a++] = E2E_GUILD;
    argv[a++] = "--channel";
    argv[a++] = E2E_WORK;
    argv[a++] = "--channel"; /* the archive index of demo/host.json */
    argv[a++] = E2E_ARCHIVE;
    argv[a++] = "--url-file";
    argv[a++] = url_file;
    for (int i = 0; fake_args && fake_args[i] && a < 30; i++)
        argv[a++] = fake_args[i];
    argv[a] = NULL;
    char *log = tu_path(r->dir, "fake-discord.log");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(fake, (char *const *)argv);
        _exit(127);
    }
    r->fake_pid = pid;
    free(log);
    long t0 = e2e_now_ms();
    char *text = NULL;
    while (e2e_now_ms() - t0 < 10000) {
        FILE *f = fopen(url_file, "r");
        if (f) {
            char line[128] = "";
            if (fgets(line, sizeof line, f))
                text = strdup(line);
            fclose(f);
            if (text && strstr(text, "/api/v10"))
                break;
            free(text);
            text = NULL;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            r->fake_pid = 0;
            break;
        }
        e2e_nap(20);
    }
    free(url_file);
    free(fake);
    if (!text)
        fail_run(r, "build/fake-discord did not start within 10 s");
    text[strcspn(text, "\r\n")] = 0;
    snprintf(r->url, sizeof r->url, "%s", text);
    snprintf(r->base, sizeof r->base, "%.*s", (int)(strstr(text, "/api/v10") - text), text);
    free(text);

    add_user(r, "e2e-moderator-token", E2E_MOD, 1, "moderator");
    add_user(r, "e2e-planner-token", E2E_PLANNER, 1, "planner");
    add_user(r, "e2e-reviewer-token", E2E_REVIEWER, 1, "reviewer");
    add_user(r, "e2e-coder-token", E2E_CODER, 1, "coder");
    add_user(r, "e2e-alice-token", E2E_ALICE, 0, "alice");

    char *plugins = tu_path(r->dir, "plugins");
    char *pdir = tu_path(plugins, "dirigent");
    mkdir(plugins, 0755);
    mkdir(pdir, 0755);
    char *man = tu_path(pdir, "manifest.json");
    char *lib = tu_path(pdir, "dirigent.so");
    char *so = bpath("dirigent.so");
    if (copy_file("manifest.json", man) != 0 || copy_file(so, lib) != 0)
        fail_run(r, "cannot make the plugin folder (manifest.json, dirigent.so)");
    free(man);
    free(lib);
    free(so);
    free(pdir);
    free(plugins);
}

void e2e_stop(e2e_run *r)
{
    if (r->gw_pid > 0) {
        kill(r->gw_pid, SIGKILL);
        waitpid(r->gw_pid, NULL, 0);
        r->gw_pid = 0;
    }
    if (r->fake_pid > 0) {
        kill(r->fake_pid, SIGTERM);
        long t0 = e2e_now_ms();
        while (waitpid(r->fake_pid, NULL, WNOHANG) == 0) {
            if (e2e_now_ms() - t0 > 3000) {
                kill(r->fake_pid, SIGKILL);
                waitpid(r->fake_pid, NULL, 0);
                break;
            }
            e2e_nap(10);
        }
        r->fake_pid = 0;
    }
    if (r->dir) {
        if (getenv("E2E_KEEP"))
            fprintf(stderr, "e2e: run folder kept: %s\n", r->dir);
        else
            tu_rmtree(r->dir);
        free(r->dir);
        r->dir = NULL;
    }
}

/* ---- the gateway ------------------------------------------------------------------------ */

pid_t e2e_ocgw_start(e2e_run *r, const char *config, const char *const *args, const char *die_at)
{
    char *gw = bpath("ocgw");
    char *abs_gw = realpath(gw, NULL); /* it must still be found after a chdir */
    if (abs_gw) {
        free(gw);
        gw = abs_gw;
    }
    const char *argv[32];
    int a = 0;
    argv[a++] = gw;
    argv[a++] = "--config";
    argv[a++] = config;
    for (int i = 0; args && args[i] && a < 30; i++)
        argv[a++] = args[i];
    argv[a] = NULL;
    r->gw_starts++;
    char name[64];
    snprintf(name, sizeof name, "ocgw-%d.out", r->gw_starts);
    char *out = tu_path(r->dir, name);
    snprintf(name, sizeof name, "ocgw-%d.err", r->gw_starts);
    char *err = tu_path(r->dir, name);
    char *state = tu_path(r->dir, "state"), *work = tu_path(r->dir, "work");
    char *plugins = tu_path(r->dir, "plugins");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo >= 0)
            dup2(fo, 1);
        if (fe >= 0)
            dup2(fe, 2);
        setenv("OCGW_API_BASE", r->url, 1);
        setenv("OCGW_STATE", state, 1);
        setenv("OCGW_WORK", work, 1);
        setenv("OCGW_PLUGINS", plugins, 1);
        setenv("DIRIGENT_MODERATOR_TOKEN", "e2e-moderator-token", 1);
        setenv("DEMO_PLANNER_TOKEN", "e2e-planner-token", 1);
        setenv("DEMO_REVIEWER_TOKEN", "e2e-reviewer-token", 1);
        setenv("DEMO_CODER_TOKEN", "e2e-coder-token", 1);
        setenv("DEMO_ALICE_TOKEN", "e2e-alice-token", 1);
        for (const char *const *e = r->env; e && *e; e++)
            putenv((char *)*e);
        if (r->cwd && chdir(r->cwd) != 0)
            _exit(126);
        if (die_at)
            setenv("OCGW_DIE_AT", die_at, 1);
        else
            unsetenv("OCGW_DIE_AT");
        execv(gw, (char *const *)argv);
        _exit(127);
    }
    free(gw);
    free(out);
    free(err);
    free(state);
    free(work);
    free(plugins);
    r->gw_pid = pid;
    return pid;
}

int e2e_ocgw_wait(e2e_run *r, long timeout_ms, int *status)
{
    long t0 = e2e_now_ms();
    for (;;) {
        int st = 0;
        pid_t p = waitpid(r->gw_pid, &st, WNOHANG);
        if (p == r->gw_pid) {
            r->gw_pid = 0;
            if (status)
                *status = st;
            return 1;
        }
        if (p < 0 && errno != EINTR)
            return 0;
        if (e2e_now_ms() - t0 >= timeout_ms)
            return 0;
        e2e_nap(10);
    }
}

int e2e_ocgw_kill(e2e_run *r, int sig)
{
    if (r->gw_pid <= 0)
        return 0;
    kill(r->gw_pid, sig);
    int st = 0;
    if (!e2e_ocgw_wait(r, 10000, &st)) {
        kill(r->gw_pid, SIGKILL);
        waitpid(r->gw_pid, &st, 0);
        r->gw_pid = 0;
    }
    return st;
}
