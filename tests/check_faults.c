/*
 * check_faults.c -- storage and Discord faults as repeatable tests that
 * print their figures (make check-faults runs this suite together with the
 * store suite's foreign/newer/in-memory database cases and the outbox
 * suite's injected store failures, which are not repeated here):
 *   - a full disk: a real 2 MB tmpfs in a private mount namespace (root
 *     only; skipped with a message otherwise) that fills up while Discord
 *     accepts a message the store cannot record;
 *   - a read-only database (a read-only remount of that tmpfs as root, a
 *     0444 file and folder otherwise): refused at open, file unchanged;
 *   - corrupt pages: a database with a page overwritten is refused at
 *     open naming the file, not accepted to fail in every hook later;
 *   - kill -9 of a sending process at several points, then a restart:
 *     exact counts;
 *   - every hostile mode of the fake Discord (429, global 429, 500,
 *     500-after-processing, drop, drop-after, delay, delay-after).
 * Each prints "faults <case>: rows N, delivered N, duplicates 0, lost 0"
 * (and what else it measured) to stdout.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_discord.h"
#include "outbox.h"
#include "outbox_env.h"
#include "store.h"
#include "store_outbox.h"
#include "testutil.h"

static const dg_discord_options quick_client = {
    .timeout_ms = 3000,
    .backoff_base_ms = 5,
    .backoff_max_ms = 40,
};

static const dg_outbox_options quick_outbox = {
    .backoff_base_ms = 20,
    .backoff_max_ms = 200,
};

typedef struct fenv {
    char *dir;
    char *db;
    fake_discord *fd;
    char chan[24];
    obe e;
    int opened;
} fenv;

static void fake_up(fenv *f)
{
    char err[200];
    ck_assert_msg(fake_discord_start(NULL, &f->fd, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(fake_discord_add_user(f->fd, OBE_TOKEN, OBE_MOD_ID, "moderator", 1), 0);
    ck_assert_int_eq(fake_discord_add_channel(f->fd, NULL, "general", f->chan), 0);
}

static void env_up(fenv *f)
{
    char err[256];
    ck_assert_msg(obe_open(&f->e, fake_discord_url(f->fd), f->db, &quick_client, err,
                           sizeof err) == 0, "%s", err);
    f->opened = 1;
}

static void outbox_start(fenv *f)
{
    char err[256];
    ck_assert_msg(dg_outbox_start_opts(&f->e.p, &quick_outbox, &f->e.p.outbox, err,
                                       sizeof err) == OC_OK, "%s", err);
}

static void env_close(fenv *f)
{
    if (f->opened) {
        char *log = obe_log_text(&f->e);
        ck_assert_msg(!strstr(log, OBE_TOKEN), "token in the log");
        free(log);
        obe_close(&f->e);
    }
    f->opened = 0;
}

static void fenv_free(fenv *f)
{
    env_close(f);
    if (f->fd)
        fake_discord_stop(f->fd);
    tu_rmtree(f->dir);
    free(f->dir);
    free(f->db);
}

static void enqueue_n(obe *e, const char *chan, int n, const char *tag)
{
    ck_assert_int_eq(dg_store_begin(e->p.store), OC_OK);
    for (int i = 0; i < n; i++) {
        char text[64];
        snprintf(text, sizeof text, "%s-%03d", tag, i);
        ck_assert_int_eq(dg_outbox_enqueue(e->p.store, chan, text, NULL, 0, dg_now_ms(&e->p)),
                         OC_OK);
    }
    ck_assert_int_eq(dg_store_commit(e->p.store), OC_OK);
}

/* The figures of a run: rows owed, messages Discord holds, how many texts
 * it holds twice or more, owed texts it does not hold, and nonces POSTed
 * more than once (a resend Discord deduplicated by nonce). */
typedef struct figures {
    int rows, delivered, duplicates, lost, reposts;
    size_t requests;
} figures;

static figures count_figures(fake_discord *fd, const char *chan, int rows, const char *tag)
{
    figures g = {.rows = rows};
    json_t *msgs = fake_discord_messages(fd, chan);
    g.delivered = (int)json_array_size(msgs);
    for (int i = 0; i < rows; i++) {
        char text[64];
        snprintf(text, sizeof text, "%s-%03d", tag, i);
        int seen = 0;
        for (size_t k = 0; k < json_array_size(msgs); k++)
            seen += !strcmp(json_string_value(json_object_get(json_array_get(msgs, k), "content")),
                            text);
        g.lost += seen == 0;
        g.duplicates += seen > 1 ? seen - 1 : 0;
    }
    json_decref(msgs);
    json_t *reqs = fake_discord_requests(fd, 0);
    g.requests = json_array_size(reqs);
    json_t *nonces = json_object();
    for (size_t i = 0; i < json_array_size(reqs); i++) {
        const char *n = json_string_value(
            json_object_get(json_object_get(json_array_get(reqs, i), "body"), "nonce"));
        if (!n)
            continue;
        json_int_t c = json_integer_value(json_object_get(nonces, n));
        json_object_set_new(nonces, n, json_integer(c + 1));
        g.reposts += c == 1;
    }
    json_decref(nonces);
    json_decref(reqs);
    return g;
}

static void print_figures(const char *name, const figures *g, const char *extra)
{
    printf("faults %-26s rows %d, delivered %d, duplicates %d, lost %d; %zu requests, %d "
           "nonce(s) re-posted%s%s\n", name, g->rows, g->delivered, g->duplicates, g->lost,
           g->requests, g->reposts, extra ? "; " : "", extra ? extra : "");
    fflush(stdout);
}

static void assert_exact(const figures *g)
{
    ck_assert_int_eq(g->delivered, g->rows);
    ck_assert_int_eq(g->duplicates, 0);
    ck_assert_int_eq(g->lost, 0);
}

static void wait_idle(fenv *f, long ms)
{
    ck_assert_msg(dg_outbox_wait_idle(f->e.p.outbox, ms) == OC_OK, "outbox not idle after %ld ms",
                  ms);
}

static int64_t outbox_count(obe *e, int state)
{
    int64_t n = -1;
    ck_assert_int_eq(dg_store_begin(e->p.store), OC_OK);
    dg_store_outbox_count(e->p.store, state, &n);
    dg_store_commit(e->p.store);
    return n;
}

/* ---- a private tmpfs (root) ----------------------------------------------------------- */

/* Mount a size-limited tmpfs on dir in a mount namespace of this test
 * process alone (Check forks each test). Must run before any thread
 * exists (unshare refuses a threaded process). 0, or -1 with why. */
static int private_tmpfs(const char *dir, const char *size, char *why, size_t n)
{
    if (geteuid() != 0) {
        snprintf(why, n, "not root");
        return -1;
    }
    char opts[64];
    snprintf(opts, sizeof opts, "size=%s,mode=0700", size);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("dgfaults", dir, "tmpfs", 0, opts) != 0) {
        snprintf(why, n, "unshare/mount: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* Fill the file system of dir until it is full; returns the filler path
 * (malloc'd). */
static char *fill_disk(const char *dir)
{
    char *path = tu_path(dir, "filler");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    static char block[4096];
    memset(block, 'x', sizeof block);
    while (write(fd, block, sizeof block) > 0)
        ;
    /* The last bytes of the last page. */
    while (write(fd, block, 1) > 0)
        ;
    close(fd);
    return path;
}

/* Empty the WAL so the store's next write needs new space. */
static void checkpoint_truncate(const char *db)
{
    sqlite3 *c = NULL;
    ck_assert_int_eq(sqlite3_open_v2(db, &c, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(c, 5000);
    ck_assert_int_eq(sqlite3_exec(c, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(c);
}

START_TEST(full_disk_on_a_small_tmpfs)
{
    fenv f = {0};
    f.dir = tu_mkdtemp();
    char *disk = tu_path(f.dir, "disk");
    ck_assert_int_eq(mkdir(disk, 0700), 0);
    char why[200];
    if (private_tmpfs(disk, "2m", why, sizeof why) != 0) {
        printf("faults full-disk                 SKIPPED: needs root for a private tmpfs (%s)\n",
               why);
        fflush(stdout);
        free(disk);
        tu_rmtree(f.dir);
        free(f.dir);
        return;
    }
    f.db = tu_path(disk, "dirigent.db");
    fake_up(&f);
    env_up(&f);
    enqueue_n(&f.e, f.chan, 20, "full");
    checkpoint_truncate(f.db);
    char *filler = fill_disk(disk);
    outbox_start(&f);
    /* Discord takes the first message; the store cannot record it. */
    ck_assert_int_eq(fake_discord_wait_messages(f.fd, f.chan, 1, 10000), 0);
    usleep(1500 * 1000);
    figures during = count_figures(f.fd, f.chan, 20, "full");
    /* Nothing is sent twice and the order holds while the disk is full. The
     * dispatcher records what Discord accepted in batches (outbox.c: up to
     * 64 rows, about 20 ms late), so it may have posted up to one batch
     * before the failing commit tells it the store is full. */
    ck_assert_int_ge(during.delivered, 1);
    ck_assert_int_eq(during.reposts, 0);
    ck_assert(obe_log_has(&f.e, "not sent again"));
    ck_assert_int_eq(unlink(filler), 0);
    wait_idle(&f, 20000);
    figures g = count_figures(f.fd, f.chan, 20, "full");
    char extra[128];
    snprintf(extra, sizeof extra, "%zu requests while full (%d messages), sent rows %lld",
             during.requests, during.delivered, (long long)outbox_count(&f.e, DG_OUTBOX_SENT));
    print_figures("full-disk (2 MB tmpfs)", &g, extra);
    assert_exact(&g);
    ck_assert_int_eq(g.reposts, 0);
    ck_assert_int_eq(outbox_count(&f.e, DG_OUTBOX_SENT), 20);
    env_close(&f);
    fake_discord_stop(f.fd);
    f.fd = NULL;
    umount2(disk, MNT_DETACH);
    free(filler);
    free(disk);
    fenv_free(&f);
}
END_TEST

/* The bytes of a file (malloc'd, *n its size) or NULL. */
static char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    *n = b ? fread(b, 1, (size_t)len, fp) : 0;
    fclose(fp);
    return b;
}

/* A database of ours with some outbox rows, closed cleanly (no WAL left). */
static void make_db(const char *db, int rows)
{
    dg_store *st = NULL;
    char err[256];
    ck_assert_msg(dg_store_open(db, &st, err, sizeof err) == OC_OK, "%s", err);
    ck_assert_int_eq(dg_store_begin(st), OC_OK);
    for (int i = 0; i < rows; i++) {
        char text[600];
        snprintf(text, sizeof text, "%0500d", i);
        ck_assert_int_eq(dg_outbox_enqueue(st, "300000000000000001", text, NULL, 0, 1000), OC_OK);
    }
    ck_assert_int_eq(dg_store_commit(st), OC_OK);
    dg_store_close(st);
}

START_TEST(read_only_database_refused_untouched)
{
    char *dir = tu_mkdtemp();
    char *disk = tu_path(dir, "disk");
    ck_assert_int_eq(mkdir(disk, 0700), 0);
    char why[200];
    int tmpfs = private_tmpfs(disk, "4m", why, sizeof why) == 0;
    char *db = tu_path(disk, "dirigent.db");
    make_db(db, 10);
    size_t n0 = 0, n1 = 0;
    char *before = slurp(db, &n0);
    ck_assert_ptr_nonnull(before);
    const char *how;
    if (tmpfs) {
        ck_assert_int_eq(mount(NULL, disk, NULL, MS_REMOUNT | MS_RDONLY, NULL), 0);
        how = "read-only file system";
    } else {
        chmod(db, 0444);
        chmod(disk, 0555);
        how = "0444 file in a 0555 folder";
    }
    dg_store *st = NULL;
    char err[512] = "";
    int rc = dg_store_open(db, &st, err, sizeof err);
    if (rc == OC_OK)
        dg_store_close(st);
    char *after = slurp(db, &n1);
    printf("faults read-only database       %s: %s (%s); file %s\n", how,
           rc == OC_OK ? "ACCEPTED" : "refused at open", err,
           n0 == n1 && !memcmp(before, after, n0) ? "unchanged" : "CHANGED");
    fflush(stdout);
    ck_assert_int_eq(rc, OC_ERR_IO);
    ck_assert_msg(strstr(err, db), "the refusal names the file: %s", err);
    ck_assert(n0 == n1 && !memcmp(before, after, n0));
    free(before);
    free(after);
    if (tmpfs)
        umount2(disk, MNT_DETACH);
    else
        chmod(disk, 0700);
    tu_rmtree(dir);
    free(db);
    free(disk);
    free(dir);
}
END_TEST

/* Page `page` (1-based, 4096 bytes) of db overwritten with garbage. */
static void corrupt_page(const char *db, int page)
{
    int fd = open(db, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)(0xA5 ^ (i * 31));
    ck_assert_int_eq(pwrite(fd, junk, sizeof junk, (off_t)(page - 1) * 4096), (ssize_t)sizeof junk);
    close(fd);
}

static void corrupt_case(int page, const char *name)
{
    char *dir = tu_mkdtemp();
    char *db = tu_path(dir, "dirigent.db");
    make_db(db, 40);
    corrupt_page(db, page);
    size_t n0 = 0, n1 = 0;
    char *before = slurp(db, &n0);
    dg_store *st = NULL;
    char err[512] = "";
    int rc = dg_store_open(db, &st, err, sizeof err);
    if (rc == OC_OK)
        dg_store_close(st);
    char *after = slurp(db, &n1);
    int same = before && after && n0 == n1 && !memcmp(before, after, n0);
    printf("faults %-26s %s (%s); file %s\n", name, rc == OC_OK ? "ACCEPTED" : "refused at open",
           err, same ? "unchanged" : "CHANGED");
    fflush(stdout);
    ck_assert_msg(rc != OC_OK, "a corrupt database was accepted");
    ck_assert_msg(strstr(err, db), "the refusal names the file: %s", err);
    ck_assert(same);
    free(before);
    free(after);
    tu_rmtree(dir);
    free(db);
    free(dir);
}

START_TEST(corrupt_header_refused)
{
    corrupt_case(1, "corrupt page 1 (header)");
}
END_TEST

START_TEST(corrupt_data_page_refused)
{
    /* A page past the schema: the outbox table's rows. */
    corrupt_case(5, "corrupt page 5 (rows)");
}
END_TEST

/* ---- kill -9 while sending -------------------------------------------------------------- */

#define KILL_ROWS 60

/* The sending child: waits for the URL and channel, owes KILL_ROWS rows,
 * sends until killed. */
static void sender_child(int rfd, const char *db)
{
    alarm(60); /* never outlive a failed test */
    char buf[256];
    size_t got = 0;
    while (got < sizeof buf - 1) {
        ssize_t r = read(rfd, buf + got, sizeof buf - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        buf[got] = '\0';
        if (strchr(buf, '\n') && strchr(strchr(buf, '\n') + 1, '\n'))
            break;
    }
    char *nl = strchr(buf, '\n');
    if (!nl)
        _exit(2);
    *nl = '\0';
    char *chan = nl + 1;
    chan[strcspn(chan, "\n")] = '\0';
    obe e;
    char err[256];
    if (obe_open(&e, buf, db, &quick_client, err, sizeof err) != 0)
        _exit(3);
    if (dg_store_begin(e.p.store) != OC_OK)
        _exit(4);
    for (int i = 0; i < KILL_ROWS; i++) {
        char text[64];
        snprintf(text, sizeof text, "kill-%03d", i);
        if (dg_outbox_enqueue(e.p.store, chan, text, NULL, 0, dg_now_ms(&e.p)) != OC_OK)
            _exit(5);
    }
    if (dg_store_commit(e.p.store) != OC_OK ||
        dg_outbox_start_opts(&e.p, &quick_outbox, &e.p.outbox, err, sizeof err) != OC_OK)
        _exit(6);
    for (;;)
        pause();
}

static const int kill_after[] = {1, 20, 45};

START_TEST(kill9_while_sending)
{
    int at = kill_after[_i];
    fenv f = {0};
    f.dir = tu_mkdtemp();
    f.db = tu_path(f.dir, "dirigent.db");
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    pid_t pid = fork(); /* before any thread exists */
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(pfd[1]);
        sender_child(pfd[0], f.db);
    }
    close(pfd[0]);
    fake_up(&f);
    /* Every answer a little late: the kill lands while a POST is in flight
     * (accepted by Discord, not yet recorded) as often as not. */
    ck_assert_int_eq(fake_discord_add_fault(f.fd, "*", FD_FAULT_DELAY_AFTER, 1000, 0, 15), 0);
    char line[200];
    int len = snprintf(line, sizeof line, "%s\n%s\n", fake_discord_url(f.fd), f.chan);
    ck_assert_int_eq(write(pfd[1], line, (size_t)len), len);
    close(pfd[1]);
    int waited = fake_discord_wait_messages(f.fd, f.chan, (size_t)at, 30000);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert_msg(waited == 0, "the child never posted %d messages (status %d)", at, status);
    ck_assert(WIFSIGNALED(status));
    size_t at_kill = fake_discord_message_count(f.fd, f.chan);

    fake_discord_clear_faults(f.fd);
    env_up(&f);
    outbox_start(&f);
    wait_idle(&f, 30000);
    figures g = count_figures(f.fd, f.chan, KILL_ROWS, "kill");
    char name[64], extra[96];
    snprintf(name, sizeof name, "kill -9 after %d message(s)", at);
    snprintf(extra, sizeof extra, "%zu delivered before the kill, sent rows %lld", at_kill,
             (long long)outbox_count(&f.e, DG_OUTBOX_SENT));
    print_figures(name, &g, extra);
    assert_exact(&g);
    /* Only what Discord accepted but the dispatcher had not recorded yet: the
     * POST in flight and the rows of the mark batch not yet committed (at
     * most one batch, 64 rows); each is re-posted with its nonce, so Discord
     * keeps one message (assert_exact: no duplicate, nothing lost). */
    ck_assert_int_le(g.reposts, 64);
    ck_assert_int_eq(outbox_count(&f.e, DG_OUTBOX_SENT), KILL_ROWS);
    fenv_free(&f);
}
END_TEST

/* ---- a hostile Discord ------------------------------------------------------------------ */

static const fake_discord_fault_kind modes[] = {
    FD_FAULT_429, FD_FAULT_GLOBAL_429, FD_FAULT_500, FD_FAULT_500_AFTER,
    FD_FAULT_DROP, FD_FAULT_DROP_AFTER, FD_FAULT_DELAY, FD_FAULT_DELAY_AFTER,
};

START_TEST(hostile_discord_mode)
{
    fake_discord_fault_kind k = modes[_i];
    fenv f = {0};
    f.dir = tu_mkdtemp();
    f.db = tu_path(f.dir, "dirigent.db");
    fake_up(&f);
    env_up(&f);
    enqueue_n(&f.e, f.chan, 20, "hostile");
    /* Every other request of the first 20 meets the fault. */
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(fake_discord_add_fault(f.fd, "*", k, 1, 0.01, 50), 0);
        ck_assert_int_eq(fake_discord_add_fault(f.fd, "*", FD_FAULT_DELAY, 1, 0, 0), 0);
    }
    outbox_start(&f);
    wait_idle(&f, 60000);
    figures g = count_figures(f.fd, f.chan, 20, "hostile");
    char name[64];
    snprintf(name, sizeof name, "discord %s", fake_discord_fault_name(k));
    print_figures(name, &g, NULL);
    assert_exact(&g);
    ck_assert_int_eq(outbox_count(&f.e, DG_OUTBOX_SENT), 20);
    /* In order. */
    json_t *msgs = fake_discord_messages(f.fd, f.chan);
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        char want[64];
        snprintf(want, sizeof want, "hostile-%03zu", i);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(msgs, i), "content")),
                         want);
    }
    json_decref(msgs);
    fenv_free(&f);
}
END_TEST

Suite *make_faults_suite(void)
{
    Suite *s = suite_create("faults");
    TCase *st = tcase_create("storage");
    tcase_set_timeout(st, 60);
    tcase_add_test(st, full_disk_on_a_small_tmpfs);
    tcase_add_test(st, read_only_database_refused_untouched);
    tcase_add_test(st, corrupt_header_refused);
    tcase_add_test(st, corrupt_data_page_refused);
    suite_add_tcase(s, st);
    TCase *kl = tcase_create("kill");
    tcase_set_timeout(kl, 90);
    tcase_add_loop_test(kl, kill9_while_sending, 0, (int)(sizeof kill_after / sizeof *kill_after));
    suite_add_tcase(s, kl);
    TCase *dc = tcase_create("discord");
    tcase_set_timeout(dc, 90);
    tcase_add_loop_test(dc, hostile_discord_mode, 0, (int)(sizeof modes / sizeof *modes));
    suite_add_tcase(s, dc);
    return s;
}
