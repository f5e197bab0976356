#!/bin/sh
# The size rule of the product's code: no function in plugin/, store/, hooks/,
# http/, discord/ or slack/ longer than 100 lines, no such file longer than 1,000, unless a
# comment says why it must be one piece:
#   - a function: a comment line holding "one piece: <why>" in the comment
#     right above the function (between it and the function only blank lines
#     or more comment);
#   - a file: "one piece: <why>" in the file's first comment.
# A function's lines run from the first line of its signature to its closing
# brace (the code's style: the body opens with "{" alone at column 0 and
# closes with "}" at column 0).
#
#   sh scripts/check-length.sh [--allow FILE] DIR...
# make check-length passes every part's folder and the tests' helpers (the
# Makefile's LENGTH_DIRS, derived from its list of parts, so the list lives
# in one place); a DIR that does not exist is skipped. FILE (default
# scripts/length-allow.txt) lists known offenders still being worked on, one
# a line: "function NAME: reason" or "file PATH: reason"; # starts a comment.
# An entry that no longer matches an offender fails the check too (remove it).
# Exit status 0 when every offender is explained, 1 otherwise (the offenders
# are listed, one a line, with what to do); 2 on a usage error.
set -eu
allow=scripts/length-allow.txt
if [ "${1:-}" = "--allow" ]; then
    [ $# -ge 2 ] || { echo "check-length: --allow needs a file" >&2; exit 2; }
    allow=$2
    shift 2
fi
[ $# -gt 0 ] || { echo "check-length: name the folders (make check-length passes them all)" >&2; exit 2; }
dirs=""
for d in "$@"; do
    [ -d "$d" ] && dirs="$dirs $d"
done
[ -n "$dirs" ] || { echo "check-length: none of $* exists (run from the top folder)" >&2; exit 2; }
[ -f "$allow" ] || allow=/dev/null

# shellcheck disable=SC2086
files=$(find $dirs -name '*.[ch]' -type f | LC_ALL=C sort)
[ -n "$files" ] || exit 0

# One line per offender: "function NAME PATH:LINE LINES" or "file PATH LINES".
offenders=$(
    # shellcheck disable=SC2086
    awk -v FMAX=100 -v LMAX=1000 '
    function reset_comment() { cmt = ""; }
    FNR == 1 {
        if (prev_file != "" && prev_lines > LMAX && !file_ok)
            print "file", prev_file, prev_lines
        file_ok = 0; first_comment = 1; in_first = 0; in_cmt = 0
        cmt = ""; sig = 0; body = 0
    }
    {
        prev_file = FILENAME; prev_lines = FNR
        line = $0
        # The file header: the first comment of the file.
        if (first_comment) {
            if (line ~ /^[ \t]*\/\*/ || line ~ /^[ \t]*\/\//) in_first = 1
            if (in_first && line ~ /one piece: *[^ *]/) file_ok = 1
            if (in_first && (line ~ /\*\// || line ~ /^[ \t]*\/\//)) { first_comment = 0 }
            else if (!in_first && line !~ /^[ \t]*$/) first_comment = 0
        }
        if (body) {
            if (line ~ /^}/) {
                n = FNR - start + 1
                if (n > FMAX && !fn_ok)
                    print "function", name, FILENAME ":" start, n
                body = 0; reset_comment()
            }
            next
        }
        # Comments outside functions: remember the one right above what follows.
        if (in_cmt) {
            cmt = cmt "\n" line
            if (line ~ /\*\//) in_cmt = 0
            next
        }
        if (line ~ /^[ \t]*\/\*/) {
            if (!sig_pending) cmt = line; else cmt = cmt "\n" line
            if (line !~ /\*\//) in_cmt = 1
            next
        }
        if (line ~ /^[ \t]*\/\//) { cmt = cmt "\n" line; next }
        if (line ~ /^[ \t]*$/) { sig_pending = 0; next }
        if (line == "{") {
            # A body: its signature began at the last column-0 line.
            start = sig_start; name = sig_name
            if (name == "") name = "?"
            fn_ok = (sig_cmt ~ /one piece: *[^ *]/)
            body = 1; sig_pending = 0
            next
        }
        if (line ~ /^[A-Za-z_]/) {
            # A new top-level line: a signature starts here (or a declaration).
            sig_start = FNR; sig_cmt = cmt; sig_pending = 1
            s = line
            sub(/\(.*/, "", s)
            n2 = split(s, parts, /[^A-Za-z0-9_]+/)
            sig_name = ""
            for (i = n2; i >= 1; i--) if (parts[i] != "") { sig_name = parts[i]; break }
            # __attribute__((...)) on its own line: the signature is the next line.
            if (line ~ /^__attribute__/) { sig_name = ""; keep_attr = 1 }
            else if (keep_attr) { keep_attr = 0; sig_start = attr_start; sig_cmt = attr_cmt }
            if (line ~ /^__attribute__/) { attr_start = FNR; attr_cmt = cmt }
            if (line ~ /;[ \t]*$/ || line ~ /}[ \t]*;?[ \t]*$/) reset_comment()
            next
        }
        if (line ~ /;[ \t]*$/ && !sig_pending) reset_comment()
    }
    END {
        if (prev_file != "" && prev_lines > LMAX && !file_ok)
            print "file", prev_file, prev_lines
    }' $files
)

# The allowed ones: "function NAME" or "file PATH" keys.
keys=$(sed -e 's/#.*//' -e 's/:.*//' -e 's/[ \t]*$//' "$allow" | grep -v '^[ \t]*$' || true)

status=0
bad=$(printf '%s\n' "$offenders" | while read -r kind a b c; do
    [ -n "$kind" ] || continue
    if printf '%s\n' "$keys" | grep -qxF "$kind $a"; then continue; fi
    if [ "$kind" = function ]; then
        echo "$b: function $a has $c lines (at most 100): split it, or say why it must be one piece in a comment line \"one piece: <why>\" right above it"
    else
        echo "$a: $b lines (at most 1,000): split the file, or say why it must be one piece in a line \"one piece: <why>\" of its first comment"
    fi
done)
if [ -n "$bad" ]; then
    printf '%s\n' "$bad"
    status=1
fi

stale=$(printf '%s\n' "$keys" | while read -r kind a; do
    [ -n "$kind" ] || continue
    if ! printf '%s\n' "$offenders" | awk '{print $1, $2}' | grep -qxF "$kind $a"; then
        echo "$allow: \"$kind $a\" is no offender any more: remove the line"
    fi
done)
if [ -n "$stale" ]; then
    printf '%s\n' "$stale"
    status=1
fi
exit $status
