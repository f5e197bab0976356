/*
 * bench_table.c -- rows of the summary table (see bench_table.h).
 */
#include "bench_table.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROWS 32

typedef struct row {
    char what[64], unit[16], floor_what[48];
    double fig50, fig99, floor50, floor99, ratio50, ratio99, aim;
    int higher;
    int expects; /* > 0: no figure, the number of rows its bench adds next */
} row;

/* The bench program's table: filled by the benches, printed by main. */
static row rows[MAX_ROWS];
static int n_rows;

void bench_row(const char *what, const char *unit, double fig50, double fig99,
               const char *floor_what, double floor50, double floor99, double ratio50,
               double ratio99, int higher, double aim)
{
    if (n_rows == MAX_ROWS)
        return;
    row *r = &rows[n_rows++];
    memset(r, 0, sizeof *r); /* a forked bench's slots hold its parent's rows */
    snprintf(r->what, sizeof r->what, "%s", what);
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    snprintf(r->floor_what, sizeof r->floor_what, "%s", floor_what);
    r->fig50 = fig50;
    r->fig99 = fig99;
    r->floor50 = floor50;
    r->floor99 = floor99;
    r->ratio50 = ratio50;
    r->ratio99 = ratio99;
    r->higher = higher;
    r->aim = aim;
}

void bench_expect(const char *bench, int n)
{
    if (n_rows == MAX_ROWS || n <= 0)
        return;
    row *r = &rows[n_rows++];
    memset(r, 0, sizeof *r);
    snprintf(r->what, sizeof r->what, "%s", bench);
    r->expects = n;
}

/* A figure a quick run must have produced. */
static int has_figure(double v)
{
    return isfinite(v) && v > 0;
}

/* Quick mode's check: the rows each bench expected, all with figures. */
static int check_rows(void)
{
    int bad = 0;
    for (int i = 0; i < n_rows; i++) {
        if (!rows[i].expects)
            continue;
        int got = 0;
        for (int j = i + 1; j < n_rows && !rows[j].expects; j++)
            got++;
        if (got < rows[i].expects) {
            printf("MISSING: %s added %d of its %d rows\n", rows[i].what, got, rows[i].expects);
            bad = 1;
        }
    }
    for (int i = 0; i < n_rows; i++) {
        const row *r = &rows[i];
        if (!r->expects &&
            !(has_figure(r->fig50) && has_figure(r->floor50) && has_figure(r->ratio50) &&
              has_figure(r->fig99) && has_figure(r->floor99) && has_figure(r->ratio99))) {
            printf("NO FIGURE: %s\n", r->what);
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

int bench_table_print(int check)
{
    if (!n_rows)
        return 0;
    printf("\n== summary (p50, p99 in brackets; each figure and its floor interleaved round by "
           "round in this run; met/missed from the p50 ratio)\n");
    printf("%-34s %-22s %-30s %-16s %-8s %s\n", "figure", "p50 (p99)", "floor: p50 (p99)",
           "ratio p50 (p99)", "aim", "verdict");
    int met_all = 1;
    for (int i = 0; i < n_rows; i++) {
        row *r = &rows[i];
        if (r->expects)
            continue;
        char fig[40], flo[64], rat[32], aim[16];
        snprintf(fig, sizeof fig, "%.2f (%.2f) %s", r->fig50, r->fig99, r->unit);
        snprintf(flo, sizeof flo, "%s %.2f (%.2f)", r->floor_what, r->floor50, r->floor99);
        snprintf(rat, sizeof rat, "%.2fx (%.2fx)", r->ratio50, r->ratio99);
        snprintf(aim, sizeof aim, "%s %.2fx", r->higher ? ">=" : "<=", r->aim);
        int met = r->higher ? r->ratio50 >= r->aim : r->ratio50 <= r->aim;
        met_all &= met;
        printf("%-34s %-22s %-30s %-16s %-8s %s\n", r->what, fig, flo, rat, aim,
               met ? "met" : "MISSED");
    }
    printf("aims: %s%s\n", met_all ? "all met" : "some MISSED (see above)",
           check ? " (a quick run: not judged)" : "");
    return check ? check_rows() : 0;
}

void bench_table_clear(void)
{
    n_rows = 0;
}

int bench_table_write(int fd)
{
    const char *at = (const char *)rows;
    size_t left = (size_t)n_rows * sizeof *rows;
    while (left) {
        ssize_t w = write(fd, at, left);
        if (w <= 0)
            return -1;
        at += w;
        left -= (size_t)w;
    }
    return 0;
}

int bench_table_read(int fd)
{
    row r;
    size_t got = 0;
    for (;;) {
        ssize_t n = read(fd, (char *)&r + got, sizeof r - got);
        if (n <= 0)
            return n == 0 && got == 0 ? 0 : -1;
        got += (size_t)n;
        if (got < sizeof r)
            continue;
        if (n_rows < MAX_ROWS)
            rows[n_rows++] = r;
        got = 0;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_sort(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
}

double bench_pct(const double *sorted, long n, double p)
{
    if (n <= 0)
        return 0;
    long i = (long)(p * (double)(n - 1) + 0.5);
    return sorted[i];
}

bool bench_quick(void)
{
    return bench_env_long("BENCH_QUICK", 0) == 1;
}

long bench_size(const char *env, long full, long quick)
{
    return bench_env_long(env, bench_quick() ? quick : full);
}

long bench_env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int bench_pin_begin(const char *env, cpu_set_t *saved)
{
    if (bench_env_long(env, 1) == 0 || sched_getaffinity(0, sizeof *saved, saved) != 0)
        return 0;
    return CPU_ISSET(0, saved) && CPU_ISSET(1, saved);
}

void bench_pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

void bench_pin_end(const cpu_set_t *saved)
{
    pthread_setaffinity_np(pthread_self(), sizeof *saved, saved);
}
