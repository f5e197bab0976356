#!/bin/sh
# The C files against .clang-format (the style of the code as it is).
#   sh scripts/format.sh check [FILE...]  lists each file that differs from what
#                                        clang-format makes of it, with the number
#                                        of its lines that would change; exit 1
#                                        when any does (make format-check, in CI)
#   sh scripts/format.sh fix [FILE...]    rewrites them in place (make format)
# Without FILEs: every .c and .h git tracks (every one below the top folder
# outside build*/ when this is no git checkout). CLANG_FORMAT names the
# program (default clang-format-14, else clang-format); it must be version 14,
# as other versions break some lines differently. sh scripts/deps.sh --format
# (make deps-format) installs it.
set -eu
mode=${1:-}
case $mode in
check | fix) shift ;;
*) echo "usage: sh scripts/format.sh check|fix [FILE...]" >&2; exit 2 ;;
esac
cf=${CLANG_FORMAT:-}
if [ -z "$cf" ]; then
    cf=$(command -v clang-format-14 || command -v clang-format || true)
fi
if [ -z "$cf" ] || ! command -v "$cf" >/dev/null 2>&1; then
    echo "dirigent: clang-format 14 is missing; make deps-format installs it (as root)" >&2
    exit 2
fi
ver=$("$cf" --version | sed -n 's/.*clang-format version \([0-9][0-9]*\)\..*/\1/p')
if [ "$ver" != 14 ]; then
    echo "dirigent: $cf is version ${ver:-unknown}; .clang-format is checked with version 14 (make deps-format installs it)" >&2
    exit 2
fi
[ -f .clang-format ] || { echo "dirigent: no .clang-format here (run from the top folder)" >&2; exit 2; }
if [ $# -eq 0 ]; then
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # shellcheck disable=SC2046
        set -- $(git ls-files '*.c' '*.h')
    else
        # shellcheck disable=SC2046
        set -- $(find . -path './build*' -prune -o -name '*.[ch]' -type f -print | LC_ALL=C sort)
    fi
fi
if [ "$mode" = fix ]; then
    "$cf" -i --style=file "$@"
    exit 0
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
bad=0
total=0
for f in "$@"; do
    "$cf" --style=file "$f" > "$tmp"
    if ! cmp -s "$f" "$tmp"; then
        n=$(diff "$f" "$tmp" | grep -c '^<' || true)
        echo "$f: $n lines differ from .clang-format"
        bad=$((bad + 1))
        total=$((total + n))
    fi
done
if [ "$bad" -gt 0 ]; then
    echo "dirigent: $bad files ($total lines) drift from .clang-format: make format rewrites them (diff them with: $cf --style=file FILE | diff FILE -)"
    exit 1
fi
