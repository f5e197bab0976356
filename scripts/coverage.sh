#!/bin/sh
# Line and branch coverage per source file from a gcov build.
#   sh scripts/coverage.sh <build-dir> <folder>...
# For every <folder>/*.c with counters in <build-dir>/obj/<folder>/, runs
# gcov -b (no .gcov files written) and prints one row per file: executable
# lines, % lines run, branches, % branches taken at least once; then one
# total per folder (weighted by lines). Files no test ran show 0%.
set -eu
b=$1; shift
printf '%-34s %7s %8s %9s %9s\n' file lines "lines%" branches "taken%"
for d in "$@"; do
    tl=0; tc=0; tb=0; tt=0
    for src in "$d"/*.c; do
        [ -f "$src" ] || continue
        obj="$b/obj/$d/$(basename "$src" .c).gcno"
        [ -f "$obj" ] || continue
        out=$(gcov -b -n -o "$b/obj/$d" "$src" 2>/dev/null | awk -v f="$src" '
            /^File / {on = ($0 ~ "^File .*" f "'"'"'$"); next}
            on && /^Lines executed:/ {split($2,a,"%"); sub(/.*:/,"",a[1]); l=$4; lp=a[1]}
            on && /^Taken at least once:/ {split($4,a,"%"); sub(/.*:/,"",a[1]); bt=a[1]; br=$6}
            on && /^No branches/ {bt=100; br=0}
            on && /^$/ {on=0}
            END {printf "%s %s %s %s\n", l+0, lp+0, br+0, bt+0}')
        l=$(echo "$out" | cut -d' ' -f1); lp=$(echo "$out" | cut -d' ' -f2)
        br=$(echo "$out" | cut -d' ' -f3); bt=$(echo "$out" | cut -d' ' -f4)
        printf '%-34s %7d %7.1f%% %9d %8.1f%%\n' "$src" "$l" "$lp" "$br" "$bt"
        tl=$((tl + l)); tb=$((tb + br))
        tc=$(awk -v a="$tc" -v l="$l" -v p="$lp" 'BEGIN{printf "%d", a + l*p/100 + 0.5}')
        tt=$(awk -v a="$tt" -v l="$br" -v p="$bt" 'BEGIN{printf "%d", a + l*p/100 + 0.5}')
    done
    [ "$tl" -gt 0 ] && printf '%-34s %7d %7.1f%% %9d %8.1f%%\n' "TOTAL $d/" "$tl" \
        "$(awk -v c="$tc" -v l="$tl" 'BEGIN{print 100*c/l}')" "$tb" \
        "$(awk -v c="$tt" -v l="$tb" 'BEGIN{print l ? 100*c/l : 100}')"
done
