/*
 * bench_table.h -- the one table `make bench` ends with. Every bench adds
 * its rows: the figure and its floor (p50, with p99 beside), measured
 * interleaved round by round in the same run, the ratio at p50 (p99
 * beside), the aim and whether the p50 ratio meets it. Nothing else
 * decides "met". Main thread only.
 */
#ifndef DG_BENCH_TABLE_H
#define DG_BENCH_TABLE_H

#include <sched.h>
#include <stdbool.h>

/* higher: the aim is ratio >= aim (throughput); else ratio <= aim (cost).
 * unit: of the figures ("us/msg", "us"). Strings are copied. */
void bench_row(const char *what, const char *unit, double fig50, double fig99,
               const char *floor_what, double floor50, double floor99, double ratio50,
               double ratio99, int higher, double aim);

/* A bench says first how many rows it will add (its sizes and options
 * decide): fewer at the end is a missing row. Once per bench, before its
 * first bench_row. */
void bench_expect(const char *bench, int n_rows);

/* Print the table (bench_main, after every bench). With check set (quick
 * mode): also say which bench added fewer rows than it expected and which
 * row has no figure (not a positive, finite number); 0 when none, else -1.
 * The aims are printed either way, never checked. */
int bench_table_print(int check);

/* BENCH_QUICK set to 1: every bench runs a short pass (its quick size).
 * (bool: bench_main runs every `int bench_<name>(void)` it finds.) */
bool bench_quick(void);

/* The size named by env, else quick or full as bench_quick says. */
long bench_size(const char *env, long full, long quick);

/* Each bench runs in a process of its own (bench_main): its rows go back
 * to the parent through a pipe. bench_table_write: every row added so far
 * onto fd; bench_table_read: rows from fd until its end, added to this
 * process's table. 0, or -1 on a short write or a torn row. */
int bench_table_write(int fd);
int bench_table_read(int fd);

/* Forget the rows (a forked bench starts from none: its parent has them). */
void bench_table_clear(void);

/* p (0..1) of n sorted samples. */
double bench_pct(const double *sorted, long n, double p);

/* Sort n samples ascending in place. */
void bench_sort(double *v, long n);

/* A size from the environment (name unset or empty: dflt). */
long bench_env_long(const char *name, long dflt);

/* CLOCK_MONOTONIC in nanoseconds. */
double bench_now_ns(void);

/* A bench with a server beside its client pins the server to CPU 1 and
 * the client to CPU 0, alike for both sides of a ratio: on two cores,
 * whether the scheduler puts a client beside its server decides a round
 * trip more than the code. bench_pin_begin: 1 when env (default 1; "0"
 * leaves the scheduler alone) allows it and CPUs 0 and 1 are both this
 * process's, with the calling thread's mask in *saved for bench_pin_end.
 * bench_pin_self: the calling thread, and the threads and processes it
 * starts from then on, on cpu. */
int bench_pin_begin(const char *env, cpu_set_t *saved);
void bench_pin_self(int cpu);
void bench_pin_end(const cpu_set_t *saved);

#endif
