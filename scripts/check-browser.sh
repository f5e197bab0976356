#!/bin/sh
# make check-browser: the status page of `dirigent-ctl serve` in a real
# headless browser (Debian's chromium, driven from Node over the DevTools
# protocol by tests/browser/status_page.mjs; no npm package).
#
#   sh scripts/check-browser.sh [BUILD_DIR]
#
# Runs the playground (scripts/demo.sh --keep), which starts the status
# page on the story's store before the story; loads the page as soon as
# its URL is printed; asserts no console error, page exception or failed
# request, that the demo's #work (channel 300000000000000001) and its
# discussion (csm-discussion) appear; then, the story over, posts a
# request in #work that opens a second discussion and asserts that the page
# redraws in place until it shows it, with the cost ledger's totals and the
# budget column drawn by the page's script. Bounded waits only (no sleeps that
# must be long enough). Needs chromium (sh scripts/deps.sh --browser) and
# node 18+.
set -u
B=${1:-build}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
fail() {
    echo "check-browser: FAILED: $*" >&2
    exit 1
}
[ -x "$CHROMIUM" ] ||
    fail "$CHROMIUM is missing: install it with sh scripts/deps.sh --browser (as root; Debian's chromium), or set CHROMIUM"
command -v node >/dev/null 2>&1 || fail "node (18 or newer) is missing"
node -e 'process.exit(+process.versions.node.split(".")[0] >= 18 ? 0 : 1)' ||
    fail "node $(node --version) is too old: 18 or newer is needed"
for f in "$B/dirigent-ctl" "$B/ocgw" "$B/fake-discord" "$B/dirigent.so"; do
    [ -x "$f" ] || [ -f "$f" ] || fail "$f is missing; run make first"
done

T=$(mktemp -d "${TMPDIR:-/tmp}/dirigent-browser.XXXXXX") || exit 1
DEMO=
cleanup() {
    [ -z "$DEMO" ] || { kill $DEMO 2>/dev/null; wait $DEMO 2>/dev/null; }
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

DEMO_SERVE_LISTEN=127.0.0.1:0 sh scripts/demo.sh "$B" --keep >"$T/demo.out" 2>&1 &
DEMO=$!
i=0
while ! grep -q '^   status page http' "$T/demo.out" && [ $i -lt 600 ] && kill -0 $DEMO 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
done
PAGE=$(sed -n 's/^   status page \(http[^ ]*\).*/\1/p' "$T/demo.out")
RUN=$(sed -n 's/^   fake Discord .*, run folder //p' "$T/demo.out")
if [ -z "$PAGE" ] || [ -z "$RUN" ]; then
    cat "$T/demo.out" >&2
    fail "the playground printed no status page URL (above)"
fi
echo "check-browser: status page $PAGE, playground $RUN"
node tests/browser/status_page.mjs --url "$PAGE" --chromium "$CHROMIUM" \
    --scope 300000000000000001 --discussion csm-discussion \
    --ready-file "$T/demo.out" --ready 'playground ready' \
    --poke "$RUN/post work '@planner please design how a discussion ends' >/dev/null" \
    --after '(discussion 2,' --redrawn-shows 'today (UTC): cost: |every run kept|limits: '
rc=$?
if [ $rc -ne 0 ]; then
    echo "check-browser: the playground's output:" >&2
    cat "$T/demo.out" >&2
    fail "the status page test failed (above); run folder $RUN"
fi
rm -rf "$T"
echo "check-browser: OK"
