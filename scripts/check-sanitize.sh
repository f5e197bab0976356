#!/bin/sh
# Every suite of an ASan+UBSan build, failing on a sanitizer report of any
# kind (make check-sanitize; CI runs it).
#   sh scripts/check-sanitize.sh <build-dir>
# Runs <build-dir>/check_all as make check does (CK_RUN_SUITE and the other
# CK_ variables of the environment apply). Every sanitized process of the
# run (the runner, each test's forked child, and the programs the suites
# start: ocgw, the fake servers, dirigent-ctl, dirigent-noreply) writes its
# AddressSanitizer and LeakSanitizer reports to
# <build-dir>/sanitizer-reports/asan.<pid> instead of stderr: the report of a
# program a test starts and stops would otherwise be lost in its captured
# output, with no failed check to show for it.
# UndefinedBehaviorSanitizer does not follow log_path in GCC's split runtime
# (libubsan.so's __sanitizer_set_report_path binds to libasan.so's, so its
# own reports stay on stderr); the build stops at the first one
# (-fno-sanitize-recover=undefined, exit status 1), and the run's own output
# (runner, test children, programs writing to the inherited stderr) is kept
# in <build-dir>/sanitizer-reports.out and searched for them.
# Fails when a check fails or when any report was found; each is named and
# printed.
set -u
b=${1:?usage: check-sanitize.sh <build-dir>}
[ -x "$b/check_all" ] || { echo "check-sanitize: no $b/check_all (make SANITIZE=1 test-deps)"; exit 2; }
reports=$(cd "$b" && pwd)/sanitizer-reports
out=$reports.out
rm -rf "$reports" "$out" && mkdir -p "$reports" || exit 2
start=$(date +%s)
# The caller's options first: ours come later and win.
{
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}halt_on_error=1:detect_leaks=1:log_path=$reports/asan" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan" \
    DG_BUILD_DIR="$b" "$b/check_all"
    echo "check-sanitize: check_all status $?"
} 2>&1 | tee "$out"
rc=$(sed -n 's/^check-sanitize: check_all status \([0-9]*\)$/\1/p' "$out" | tail -1)
took=$(( $(date +%s) - start ))
found=$(find "$reports" -type f | sort)
ub=$(grep -n -E 'runtime error:|ERROR: [A-Za-z]*Sanitizer|SUMMARY: [A-Za-z]*Sanitizer' "$out")
for f in $found; do
    echo "==== sanitizer report: $f"
    cat "$f"
done
[ -z "$ub" ] || printf '==== sanitizer reports in the output (%s):\n%s\n' "$out" "$ub"
if [ -n "$found" ] || [ -n "$ub" ]; then
    echo "check-sanitize: FAILED: $(echo "$found" | grep -c .) report file(s) in $reports," \
         "$(echo "$ub" | grep -c .) report line(s) in $out"
    rc=1
elif [ "${rc:-1}" -ne 0 ]; then
    echo "check-sanitize: FAILED: the suites failed (status ${rc:-unknown}), no sanitizer report"
    rc=${rc:-1}
else
    echo "check-sanitize: every suite passed, no sanitizer report"
fi
echo "check-sanitize: $took s"
exit "$rc"
