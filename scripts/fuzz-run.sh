#!/bin/sh
# Run libFuzzer targets one after the other, each for a bounded time.
#   sh scripts/fuzz-run.sh <bin-dir> <seconds-per-target> <target>...
# Seeds come from tests/fuzz/corpus/<target>/ (never written); what a run
# finds goes to <bin-dir>/../corpus/<target>/, crashes to
# <bin-dir>/../artifacts/. Each target: 1 GB RSS, 10 s per input, inputs up
# to 16 KB, one process (the machine is shared). Prints one line per
# target; exits 1 when any target found a crash, leak or hang (its log
# tail is printed, with the command that reproduces it).
set -u
bin=$1; secs=$2; shift 2
out=$(dirname "$bin")
mkdir -p "$out/corpus" "$out/artifacts" "$out/logs"
failed=""
start=$(date +%s)
for t in "$@"; do
    seeds="tests/fuzz/corpus/$t"
    mkdir -p "$out/corpus/$t"
    [ -d "$seeds" ] || seeds=""
    log="$out/logs/$t.log"
    t0=$(date +%s)
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
    "$bin/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=512 \
        -max_len=16384 -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" \
        "$out/corpus/$t" $seeds >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    corp=$(ls "$out/corpus/$t" | wc -l)
    if [ $rc -eq 0 ]; then
        printf 'fuzz %-34s ok    %6s runs, %s, corpus %s, %ss\n' "$t" "${runs:-?}" "${cov:-cov: ?}" "$corp" $(( $(date +%s) - t0 ))
    else
        printf 'fuzz %-34s FOUND (exit %d) -- %s\n' "$t" $rc "$log"
        grep -E 'ERROR|SUMMARY|fuzz_|runtime error|Test unit written' "$log" | head -20
        echo "  reproduce: $bin/$t <the artifact above>"
        failed="$failed $t"
    fi
done
echo "fuzz: $# targets, $(( $(date +%s) - start ))s${failed:+, FAILED:$failed}"
[ -z "$failed" ]
