/*
 * check_paths.c -- the summary file must be a regular file inside the
 * initiator's workspace: every way out (../, absolute elsewhere, symlinked
 * file or folder, /proc/self/environ, hard link), every wrong kind (FIFO,
 * folder, socket), size, missing, unreadable, and a swap race.
 */
/*
 * Lines of plugin/paths.c no test here can reach (the coverage aim names
 * each; every other line runs in make check):
 *   dir_failure and dg_workspace_open: fstatat failing with an errno other than
 *     ENOENT, EACCES, ENAMETOOLONG (EIO, ENOMEM from the kernel).
 *   read_through: read() interrupted (EINTR) or failing (EIO), and
 *     lseek() failing: not on a regular file of a local file system.
 *   read_through: the file grown past the bound between fstat and read,
 *     and dg_workspace_open: the leaf gone (ENOENT), turned into a symlink
 *     (ELOOP) or replaced (another inode) between fstatat and openat, or
 *     changed in kind or size between the two stats: races with another
 *     writer of the workspace; test_swap_race provokes them and meets
 *     some of them on some runs, never all on every run.
 *   dg_workspace_open: fstat failing on the descriptor just opened.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "openclaw/plugin.h"
#include "paths.h"
#include "failalloc.h"
#include "testutil.h"

static char *root; /* temp folder: root/ws is the workspace, root/out is outside */
static char *ws;
static char err[1024];

static char *P(const char *rel)
{
    return tu_path(root, rel);
}

static void mkdir_p(const char *rel)
{
    char *p = P(rel);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    free(p);
}

static void write_rel(const char *rel, const char *text)
{
    char *p = P(rel);
    ck_assert_int_eq(tu_write_file(p, text), 0);
    free(p);
}

static void symlink_rel(const char *target, const char *rel)
{
    char *p = P(rel);
    ck_assert_int_eq(symlink(target, p), 0);
    free(p);
}

static void setup(void)
{
    root = tu_mkdtemp();
    ws = P("ws");
    mkdir_p("ws");
    mkdir_p("ws/plans");
    mkdir_p("ws/plans/discussions");
    mkdir_p("out");
    write_rel("ws/plans/discussions/summary.md", "# Summary\nall agreed\n");
    write_rel("out/secret.md", "outside the workspace\n");
    err[0] = '\0';
}

static void teardown(void)
{
    tu_rmtree(root);
    free(root);
    free(ws);
}

/* Open path and expect status, the messages naming the case as `what`; on
 * OC_OK returns the file (caller closes). */
static dg_workspace_file expect_as(const char *what, const char *path, int64_t max, int status)
{
    dg_workspace_file f;
    int rc = dg_workspace_open(ws, path, max, &f, err, sizeof err);
    ck_assert_msg(rc == status, "%s: expected %s, got %s (%s)", what, oc_status_name(status),
                  oc_status_name(rc), err);
    if (rc != OC_OK) {
        ck_assert_int_eq(f.fd, -1);
        ck_assert_ptr_null(f.rel_path);
        ck_assert_msg(strlen(err) > 20, "%s: refusal without an explanation: '%s'", what, err);
    }
    return f;
}

static dg_workspace_file expect(const char *path, int64_t max, int status)
{
    return expect_as(path, path, max, status);
}

START_TEST(test_relative_ok)
{
    dg_workspace_file f = expect("plans/discussions/summary.md", 1 << 20, OC_OK);
    ck_assert_str_eq(f.rel_path, "plans/discussions/summary.md");
    ck_assert_int_eq(f.size, 21);
    char buf[64] = {0};
    ck_assert_int_eq(read(f.fd, buf, sizeof buf - 1), 21);
    ck_assert_str_eq(buf, "# Summary\nall agreed\n");
    dg_workspace_file_close(&f);
    ck_assert_int_eq(f.fd, -1);
}
END_TEST

START_TEST(test_normalised)
{
    dg_workspace_file f = expect("./plans//discussions/./summary.md", 1 << 20, OC_OK);
    ck_assert_str_eq(f.rel_path, "plans/discussions/summary.md");
    dg_workspace_file_close(&f);
    f = expect("plans/x/../discussions/summary.md", 1 << 20, OC_OK);
    ck_assert_str_eq(f.rel_path, "plans/discussions/summary.md");
    dg_workspace_file_close(&f);
}
END_TEST

START_TEST(test_absolute_inside)
{
    char *abs = tu_path(ws, "plans/discussions/summary.md");
    dg_workspace_file f = expect(abs, 1 << 20, OC_OK);
    ck_assert_str_eq(f.rel_path, "plans/discussions/summary.md");
    dg_workspace_file_close(&f);
    free(abs);
}
END_TEST

START_TEST(test_absolute_inside_real_workspace)
{
    /* The host names the workspace through a symlink; the agent passes the
     * real (resolved) absolute path: still inside. */
    symlink_rel("ws", "ws-link");
    char *link = P("ws-link");
    char real[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(ws, real));
    char *abs = tu_path(real, "plans/discussions/summary.md");
    dg_workspace_file f;
    int rc = dg_workspace_open(link, abs, 1 << 20, &f, err, sizeof err);
    ck_assert_msg(rc == OC_OK, "%s", err);
    ck_assert_str_eq(f.rel_path, "plans/discussions/summary.md");
    dg_workspace_file_close(&f);
    free(abs);
    free(link);
}
END_TEST

/* What some refusals need laid out in the workspace first. */
static void sibling_workspace(void)
{
    mkdir_p("ws2");
    write_rel("ws2/x.md", "x");
}

static void link_to_outside_file(void)
{
    char *target = P("out/secret.md");
    symlink_rel(target, "ws/plans/discussions/link.md");
    free(target);
}

static void link_to_environ(void)
{
    symlink_rel("/proc/self/environ", "ws/env.md");
}

static void link_inside(void)
{
    symlink_rel("summary.md", "ws/plans/discussions/alias.md");
}

static void folder_link_outside(void)
{
    char *target = P("out");
    symlink_rel(target, "ws/plans/evil");
    free(target);
}

static void folder_link_inside(void)
{
    symlink_rel("discussions", "ws/plans/d");
}

static void fifo(void)
{
    char *p = P("ws/fifo.md");
    ck_assert_int_eq(mkfifo(p, 0644), 0);
    free(p);
}

static void hard_link(void)
{
    char *a = P("out/secret.md"), *b = P("ws/hard.md");
    ck_assert_int_eq(link(a, b), 0);
    free(a);
    free(b);
}

/* A path the summary tool must refuse: the path as given (AS_IS), or
 * absolute below the workspace (IN_WS; NULL: the workspace itself) or the
 * temp folder (IN_ROOT); the status; words the message must hold (none:
 * any explanation, which expect_as asks of every refusal); what the case
 * lays out first. */
enum { AS_IS, IN_WS, IN_ROOT };
typedef struct refusal {
    int base;
    const char *path;
    int status;
    const char *words[2];
    void (*prep)(void);
} refusal;

static const refusal refusals[] = {
    /* Empty, or nothing left once normalised. */
    {AS_IS, "", OC_ERR_INVALID, {"empty"}, NULL},
    {AS_IS, ".", OC_ERR_INVALID, {NULL}, NULL},
    {AS_IS, "plans/..", OC_ERR_INVALID, {NULL}, NULL},
    /* Climbing out with "..". */
    {AS_IS, "../out/secret.md", OC_ERR_DENIED, {".."}, NULL},
    {AS_IS, "plans/../../out/secret.md", OC_ERR_DENIED, {NULL}, NULL},
    {AS_IS, "../ws/plans/discussions/summary.md", OC_ERR_DENIED, {NULL}, NULL},
    /* Absolute, elsewhere. */
    {IN_ROOT, "out/secret.md", OC_ERR_DENIED, {"outside your workspace"}, NULL},
    {AS_IS, "/proc/self/environ", OC_ERR_DENIED, {NULL}, NULL},
    {AS_IS, "/etc/passwd", OC_ERR_DENIED, {NULL}, NULL},
    /* A sibling whose name starts like the workspace is not inside it. */
    {IN_ROOT, "ws2/x.md", OC_ERR_DENIED, {NULL}, sibling_workspace},
    /* Lexically inside, really outside. */
    {IN_WS, "../out/secret.md", OC_ERR_DENIED, {NULL}, NULL},
    /* "/.." is "/": outside any workspace. */
    {AS_IS, "/..", OC_ERR_DENIED, {NULL}, NULL},
    {AS_IS, "/../..", OC_ERR_DENIED, {NULL}, NULL},
    /* The workspace's own absolute path names the folder, not a file. */
    {IN_WS, NULL, OC_ERR_INVALID, {"workspace folder itself"}, NULL},
    {IN_WS, "", OC_ERR_INVALID, {NULL}, NULL},
    /* A symlinked file, out of the workspace. */
    {AS_IS, "plans/discussions/link.md", OC_ERR_DENIED, {"symbolic link"}, link_to_outside_file},
    {AS_IS, "env.md", OC_ERR_DENIED, {NULL}, link_to_environ},
    /* Decision: even a symlink that stays inside is refused (paths.h). */
    {AS_IS, "plans/discussions/alias.md", OC_ERR_DENIED, {"symbolic link"}, link_inside},
    /* A symlinked folder on the way. */
    {AS_IS,
     "plans/evil/secret.md",
     OC_ERR_DENIED,
     {"folder 'evil' is a symbolic link"},
     folder_link_outside},
    /* Even a folder link that stays inside. */
    {AS_IS, "plans/d/summary.md", OC_ERR_DENIED, {NULL}, folder_link_inside},
    /* And through an absolute path. */
    {IN_WS, "plans/evil/secret.md", OC_ERR_DENIED, {NULL}, folder_link_outside},
    /* Not a regular file: returns at once, never blocks. */
    {AS_IS, "fifo.md", OC_ERR_INVALID, {"not a regular file"}, fifo},
    {AS_IS, "plans/discussions", OC_ERR_INVALID, {"folder"}, NULL},
    {AS_IS, "plans/discussions/", OC_ERR_INVALID, {NULL}, NULL},
    /* Missing. */
    {AS_IS, "plans/discussions/nope.md", OC_ERR_NOT_FOUND, {"does not exist"}, NULL},
    {AS_IS, "plans/nofolder/x.md", OC_ERR_NOT_FOUND, {NULL}, NULL},
    {IN_WS, "nope.md", OC_ERR_NOT_FOUND, {NULL}, NULL},
    /* A file on the way, as if a folder. */
    {AS_IS, "plans/discussions/summary.md/x", OC_ERR_INVALID, {NULL}, NULL},
    /* 'summary.md/' is not 'summary.md': the file system says ENOTDIR
     * (not a folder), and so does the plugin. */
    {AS_IS, "plans/discussions/summary.md/", OC_ERR_INVALID, {"not a folder", "summaryPath"}, NULL},
    {AS_IS, "plans/discussions/summary.md//", OC_ERR_INVALID, {NULL}, NULL},
    {AS_IS, "plans/discussions/summary.md/.", OC_ERR_INVALID, {NULL}, NULL},
    {IN_WS, "plans/discussions/summary.md/", OC_ERR_INVALID, {NULL}, NULL},
    /* A hard link to a file outside. */
    {AS_IS, "hard.md", OC_ERR_DENIED, {"hard link"}, hard_link},
};
#define N_REFUSALS (int)(sizeof refusals / sizeof *refusals)

/* Refusal _i, in a workspace of its own (the fixture's). */
START_TEST(test_refusal)
{
    const refusal *c = &refusals[_i];
    if (c->prep)
        c->prep();
    static const char *const shown[] = {"", "<ws>/", "<root>/"};
    char what[160];
    snprintf(what, sizeof what, "refusal %d '%s%s'", _i, c->path ? shown[c->base] : "<ws>",
             c->path ? c->path : "");
    char *path = c->base == IN_ROOT ? P(c->path)
                 : c->base == IN_WS ? (c->path ? tu_path(ws, c->path) : strdup(ws))
                                    : strdup(c->path);
    expect_as(what, path, 1 << 20, c->status);
    for (int k = 0; k < 2 && c->words[k]; k++)
        ck_assert_msg(strstr(err, c->words[k]), "%s: '%s' not in: %s", what, c->words[k], err);
    free(path);
}
END_TEST

START_TEST(test_socket)
{
    char *p = P("ws/sock.md");
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(s, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    ck_assert_uint_lt(strlen(p), sizeof a.sun_path);
    strcpy(a.sun_path, p);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    expect("sock.md", 1 << 20, OC_ERR_INVALID);
    close(s);
    free(p);
}
END_TEST

START_TEST(test_oversize)
{
    expect("plans/discussions/summary.md", 20, OC_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "maxSummaryBytes"));
    dg_workspace_file f = expect("plans/discussions/summary.md", 21, OC_OK); /* exactly the limit */
    dg_workspace_file_close(&f);
}
END_TEST

START_TEST(test_name_too_long)
{
    /* A file or folder name longer than the file system allows is a bad
     * path (refused as such, with a hint), not a storage failure. */
    char name[400], path[480];
    memset(name, 'a', 300);
    name[300] = '\0';
    snprintf(path, sizeof path, "plans/%s.md", name);
    expect(path, 1 << 20, OC_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "too long"));
    snprintf(path, sizeof path, "%s/summary.md", name);
    expect(path, 1 << 20, OC_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "too long"));
    /* A path of thousands of characters still leaves room for the rule
     * and the hint in a 1 KiB message. */
    char *lng = malloc(4000);
    lng[0] = '\0';
    for (int i = 0; i < 700; i++)
        strcat(lng, "x/../");
    strcat(lng, "../out/secret.md");
    expect(lng, 1 << 20, OC_ERR_DENIED);
    ck_assert_msg(strstr(err, "climbs out") && strstr(err, "e.g. plans/"), "%s", err);
    free(lng);
}
END_TEST

START_TEST(test_trailing_slash_on_file)
{
    /* The plugin refuses 'summary.md/' (the refusals above), agreeing with
     * the kernel: open() refuses it the same way. */
    char *real = P("ws/plans/discussions/summary.md/");
    ck_assert_int_eq(open(real, O_RDONLY), -1);
    ck_assert_int_eq(errno, ENOTDIR);
    free(real);
    /* Without the slash it is still fine. */
    dg_workspace_file f = expect("plans/discussions/summary.md", 1 << 20, OC_OK);
    dg_workspace_file_close(&f);
}
END_TEST

/* Give up root's right to ignore file modes (CAP_DAC_OVERRIDE,
 * CAP_DAC_READ_SEARCH) while staying uid 0: the files of the test (root's)
 * are then checked by their modes, and a gcov build can still write its
 * counters (root's files too). 0, or -1 when the kernel refused. */
static int drop_dac_caps(void)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) != 0)
        return -1;
    for (int i = 0; i < 2; i++)
        data[i].effective = data[i].permitted = 0;
    return syscall(SYS_capset, &hdr, data) == 0 ? 0 : -1;
}

/* A forked child's end: _exit, so that nothing of the parent runs again in
 * the child: no atexit handler, and no LeakSanitizer pass over what the
 * parent had allocated before the fork (an ASan build would count it as
 * the child's leak). Under make coverage (DG_COVERAGE set) it is exit, so
 * that the gcov build writes the counters of what the child ran; the
 * parent flushed stdio before the fork: nothing is written twice. */
static void child_exit(int code, int coverage_run)
{
    if (coverage_run)
        exit(code);
    _exit(code);
}

/* Expect OC_ERR_DENIED with `word` in the message for path, as an
 * unprivileged user: root reads everything, so when the suite runs as root
 * the check runs in a child that drops to nobody (the parent, still root,
 * cleans up afterwards). */
static void expect_denied_unprivileged(const char *path, const char *word)
{
    if (geteuid() != 0) {
        expect(path, 1 << 20, OC_ERR_DENIED);
        ck_assert_ptr_nonnull(strstr(err, word));
        return;
    }
    ck_assert_int_eq(chmod(root, 0755), 0);
    int coverage_run = getenv("DG_COVERAGE") != NULL;
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* Without root's file rights (staying root, so that a gcov build
         * may write its counters), else as nobody. */
        if (drop_dac_caps() != 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(3);
        dg_workspace_file f;
        int rc = dg_workspace_open(ws, path, 1 << 20, &f, err, sizeof err);
        child_exit(rc == OC_ERR_DENIED && strstr(err, word) ? 0 : 1, coverage_run);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
}

/* What a file or folder on the way without a permission gives, as an
 * unprivileged user: the entry made mode `mode`, the words the refusal
 * must hold. A folder that can be read but not searched (r--): the walk
 * opens it, but cannot look inside; the leaf's own folder so: the file
 * cannot even be looked at. */
typedef struct perm_refusal {
    const char *entry;
    mode_t mode;
    const char *word;
} perm_refusal;

static const perm_refusal perm_refusals[] = {
    {"ws/plans/discussions/summary.md", 0, "not readable"},
    {"ws/plans", 0, "not readable"},
    {"ws/plans", 0444, "not accessible"},
    {"ws/plans/discussions", 0444, "not accessible"},
};
#define N_PERM_REFUSALS (int)(sizeof perm_refusals / sizeof *perm_refusals)

START_TEST(test_permission_refusal)
{
    const perm_refusal *c = &perm_refusals[_i];
    /* On the stack, not malloc'd: the child that checks the refusal is a
     * fork of this process, and a leak check at its end (valgrind checks
     * every forked child, even one ending by _exit) would count a block
     * only this frame points to as lost. */
    char p[PATH_MAX];
    ck_assert_int_lt(snprintf(p, sizeof p, "%s/%s", root, c->entry), (int)sizeof p);
    struct stat was;
    ck_assert_int_eq(stat(p, &was), 0);
    ck_assert_msg(chmod(p, c->mode) == 0, "case %d: chmod %s", _i, c->entry);
    expect_denied_unprivileged("plans/discussions/summary.md", c->word);
    ck_assert_int_eq(chmod(p, was.st_mode & 07777), 0);
}
END_TEST

START_TEST(test_bad_workspace)
{
    dg_workspace_file f;
    ck_assert_int_eq(dg_workspace_open("relative/ws", "a.md", 10, &f, err, sizeof err),
                     OC_ERR_INVALID);
    ck_assert_int_eq(dg_workspace_open(NULL, "a.md", 10, &f, err, sizeof err), OC_ERR_INVALID);
}
END_TEST

START_TEST(test_path_longer_than_path_max)
{
    char *p = malloc(PATH_MAX + 2);
    ck_assert_ptr_nonnull(p);
    memset(p, 'a', PATH_MAX + 1);
    p[PATH_MAX + 1] = '\0';
    expect(p, 1 << 20, OC_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "longer than"));
    free(p);
}
END_TEST

START_TEST(test_workspace_missing_or_a_file)
{
    dg_workspace_file f;
    char *gone = P("no-such-ws");
    ck_assert_int_eq(dg_workspace_open(gone, "a.md", 10, &f, err, sizeof err), OC_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(err, "cannot be opened"));
    char *file = P("out/secret.md");
    ck_assert_int_eq(dg_workspace_open(file, "a.md", 10, &f, err, sizeof err), OC_ERR_IO);
    free(gone);
    free(file);
}
END_TEST

START_TEST(test_normalise)
{
    int esc = 0;
    char *s = dg_path_normalise("a/./b//c/../d", &esc);
    ck_assert_str_eq(s, "a/b/d");
    free(s);
    ck_assert_ptr_null(dg_path_normalise("a/../..", &esc));
    ck_assert_int_eq(esc, 1);
    ck_assert_ptr_null(dg_path_normalise("/abs", &esc));
    ck_assert_int_eq(esc, 0);
    s = dg_path_normalise("./.", &esc);
    ck_assert_str_eq(s, "");
    free(s);
}
END_TEST

/* A racer swaps the summary between a regular file and a symlink to the
 * outside file while the checker opens it: whatever opens must never be
 * the outside file. */
static atomic_int race_stop; /* the swapper thread reads it */
static void *swapper(void *arg)
{
    (void)arg;
    char *f = P("ws/r.md"), *tmp = P("ws/r.tmp"), *lnk = P("ws/r.lnk"), *out = P("out/secret.md");
    while (!race_stop) {
        unlink(tmp);
        tu_write_file(tmp, "inside\n");
        rename(tmp, f);
        unlink(lnk);
        if (symlink(out, lnk) == 0)
            rename(lnk, f);
    }
    free(f);
    free(tmp);
    free(lnk);
    free(out);
    return NULL;
}

START_TEST(test_swap_race)
{
    struct stat outside;
    char *out = P("out/secret.md");
    ck_assert_int_eq(stat(out, &outside), 0);
    write_rel("ws/r.md", "inside\n");
    pthread_t t;
    race_stop = 0;
    ck_assert_int_eq(pthread_create(&t, NULL, swapper, NULL), 0);
    int ok = 0, refused = 0;
    for (int i = 0; i < 3000; i++) {
        dg_workspace_file f;
        int rc = dg_workspace_open(ws, "r.md", 1 << 20, &f, err, sizeof err);
        if (rc == OC_OK) {
            struct stat st;
            ck_assert_int_eq(fstat(f.fd, &st), 0);
            ck_assert_msg(!(st.st_ino == outside.st_ino && st.st_dev == outside.st_dev),
                          "opened the file outside the workspace");
            char buf[16] = {0};
            ck_assert_int_eq(read(f.fd, buf, sizeof buf - 1), 7);
            ck_assert_str_eq(buf, "inside\n");
            ok++;
            dg_workspace_file_close(&f);
        } else {
            ck_assert_msg(rc == OC_ERR_DENIED || rc == OC_ERR_NOT_FOUND, "%s: %s",
                          oc_status_name(rc), err);
            refused++;
        }
    }
    race_stop = 1;
    pthread_join(t, NULL);
    ck_assert_int_eq(ok + refused, 3000);
    free(out);
}
END_TEST

/* No descriptor left for the walk (RLIMIT_NOFILE at the lowest free one,
 * plus the workspace's): a folder, then the leaf, that cannot be opened
 * is an OC_ERR_IO naming it and errno's words, with nothing left open. */
START_TEST(test_out_of_descriptors)
{
    write_rel("ws/top.md", "# top\n");
    struct rlimit was;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &was), 0);
    int lowest = dup(0);
    ck_assert_int_ge(lowest, 0);
    close(lowest);
    struct rlimit tight = {.rlim_cur = (rlim_t)lowest + 1, .rlim_max = was.rlim_max};
    static const char *const paths[] = {"plans/discussions/summary.md", "top.md"};
    static const char *const words[] = {"cannot open folder 'plans'", "cannot be opened"};
    for (int i = 0; i < 2; i++) {
        dg_workspace_file f;
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &tight), 0);
        int rc = dg_workspace_open(ws, paths[i], 1 << 20, &f, err, sizeof err);
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &was), 0);
        ck_assert_msg(rc == OC_ERR_IO && strstr(err, words[i]), "%s: %d (%s)", paths[i], rc, err);
        ck_assert_int_eq(f.fd, -1);
        int again = dup(0);
        ck_assert_int_eq(again, lowest); /* nothing left open */
        close(again);
    }
    dg_workspace_file_close(NULL); /* nothing to close: nothing happens */
}
END_TEST

/* Opening a summary with each allocation failing in turn (failalloc.h): a
 * status, no descriptor and no path left open or leaked (SANITIZE=1). */
START_TEST(test_out_of_memory)
{
    ck_assert(fa_available());
    /* Relative, absolute in the workspace, and absolute through the real
     * path of a workspace the host names by a symlink (abs_to_rel's copies). */
    symlink_rel("ws", "ws-link");
    char *link_ws = P("ws-link");
    char *abs = tu_path(ws, "plans/discussions/summary.md");
    const char *const wss[] = {ws, ws, link_ws};
    const char *const paths[] = {"plans/./discussions/../discussions/summary.md", abs, abs};
    for (int k = 0; k < 3; k++) {
        long n;
        for (n = 1; n < 100000; n++) {
            dg_workspace_file f;
            fa_arm_own(n);
            int rc = dg_workspace_open(wss[k], paths[k], 1 << 20, &f, err, sizeof err);
            int esc = 0;
            char *norm = dg_path_normalise("a/./b/../c", &esc);
            int hit = fa_disarm();
            ck_assert_msg(rc == OC_OK || rc == OC_ERR_NOMEM, "allocation %ld: %d (%s)", n, rc, err);
            if (rc == OC_OK) {
                ck_assert_str_eq(f.rel_path, "plans/discussions/summary.md");
                dg_workspace_file_close(&f);
            } else {
                ck_assert_int_eq(f.fd, -1);
            }
            free(norm);
            if (!hit) {
                ck_assert_int_eq(rc, OC_OK);
                break;
            }
        }
        ck_assert_int_gt(n, 1);
    }
    free(abs);
    free(link_ws);
}
END_TEST

Suite *make_paths_suite(void)
{
    Suite *s = suite_create("paths");
    TCase *tc = tcase_create("paths");
    tcase_add_test(tc, test_out_of_memory);
    tcase_add_test(tc, test_out_of_descriptors);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_relative_ok);
    tcase_add_test(tc, test_normalised);
    tcase_add_test(tc, test_absolute_inside);
    tcase_add_test(tc, test_absolute_inside_real_workspace);
    tcase_add_loop_test(tc, test_refusal, 0, N_REFUSALS);
    tcase_add_test(tc, test_socket);
    tcase_add_test(tc, test_oversize);
    tcase_add_test(tc, test_trailing_slash_on_file);
    tcase_add_test(tc, test_name_too_long);
    tcase_add_loop_test(tc, test_permission_refusal, 0, N_PERM_REFUSALS);
    tcase_add_test(tc, test_bad_workspace);
    tcase_add_test(tc, test_normalise);
    tcase_add_test(tc, test_path_longer_than_path_max);
    tcase_add_test(tc, test_workspace_missing_or_a_file);
    tcase_add_test(tc, test_swap_race);
    suite_add_tcase(s, tc);
    return s;
}
