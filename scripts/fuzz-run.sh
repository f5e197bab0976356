#!/bin/sh
# Run libFuzzer targets, each for a bounded time.
#   [FUZZ_JOBS=n] sh scripts/fuzz-run.sh <bin-dir> <seconds-per-target> <target>...
# Each target first replays its whole corpus (the seeds of
# tests/fuzz/corpus/<target>/, never written, and what earlier runs found in
# <bin-dir>/../corpus/<target>/), then tries new inputs until its time is
# up; new finds go to <bin-dir>/../corpus/<target>/, crashes to
# <bin-dir>/../artifacts/. Each target: 1 GB RSS, FUZZ_TIMEOUT (10) s per
# input, inputs up to 16 KB, one process. FUZZ_JOBS (1) targets run side by
# side (CI: one per core; the machine is shared, so 1 by default). Prints one
# line per target in the order given; exits 1 when any target found a
# crash, leak or hang (its log tail is printed, with the command that
# reproduces it).
set -u
bin=$1; secs=$2; shift 2
jobs=${FUZZ_JOBS:-1}
tmo=${FUZZ_TIMEOUT:-10}
out=$(dirname "$bin")
mkdir -p "$out/corpus" "$out/artifacts" "$out/logs"
start=$(date +%s)

# One target; its report line goes to $out/logs/<target>.result, which
# starts with "ok" or "FOUND" (the caller prints them in order).
run_one() {
    t=$1
    seeds="tests/fuzz/corpus/$t"
    mkdir -p "$out/corpus/$t"
    [ -d "$seeds" ] || seeds=""
    log="$out/logs/$t.log"
    res="$out/logs/$t.result"
    t0=$(date +%s)
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
    "$bin/$t" -max_total_time="$secs" -timeout="$tmo" -rss_limit_mb=1024 -malloc_limit_mb=512 \
        -max_len=16384 -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" \
        "$out/corpus/$t" $seeds >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    corp=$(ls "$out/corpus/$t" | wc -l)
    if [ $rc -eq 0 ]; then
        printf 'ok fuzz %-34s ok    %6s runs, %s, corpus %s, %ss\n' "$t" "${runs:-?}" \
            "${cov:-cov: ?}" "$corp" $(( $(date +%s) - t0 )) >"$res"
    else
        {
            printf 'FOUND fuzz %-34s FOUND (exit %d) -- %s\n' "$t" $rc "$log"
            grep -E 'ERROR|SUMMARY|fuzz_|runtime error|Test unit written' "$log" | head -20
            echo "  reproduce: $bin/$t <the artifact above>"
        } >"$res"
    fi
}

# Round-robin lanes, one background shell each: every target has the same
# time bound, so the lanes end together.
for t in "$@"; do rm -f "$out/logs/$t.result"; done
lane=0
while [ $lane -lt "$jobs" ]; do
    i=0; mine=""
    for t in "$@"; do
        [ $((i % jobs)) -eq $lane ] && mine="$mine $t"
        i=$((i + 1))
    done
    ( for t in $mine; do run_one "$t"; done ) &
    lane=$((lane + 1))
done
wait

failed=""
for t in "$@"; do
    res="$out/logs/$t.result"
    if [ -f "$res" ] && head -1 "$res" | grep -q '^ok '; then
        sed 's/^ok //' "$res"
    else
        [ -f "$res" ] && sed 's/^FOUND //' "$res" || echo "fuzz $t: no result (the run was killed?)"
        failed="$failed $t"
    fi
done
echo "fuzz: $# targets, $jobs at a time, ${secs}s each, $(( $(date +%s) - start ))s${failed:+, FAILED:$failed}"
[ -z "$failed" ]
