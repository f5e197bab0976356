#!/bin/sh
# make demo: the seed's section 12 story (a discussion channel with callback)
# through the reference gateway build/ocgw, the real build/dirigent.so and
# the fake Discord build/fake-discord, all on 127.0.0.1.
#
#   sh scripts/demo.sh [BUILD_DIR] [--verbose] [--keep]
#
#   --verbose  the gateway's internal lines too (variables, prompt context)
#   --keep     the playground: after the story the fake Discord and the
#              gateway keep running, and the script prints how to post as
#              the human (alice) and how to stop; SIGINT/SIGTERM stop both
#
# Everything written at run time goes to a fresh folder under $TMPDIR (or
# /tmp) that is kept for inspection: the gateway state, the plugin's SQLite
# database, the agents' workspaces and the logs. Exits 0 only when the story
# happened exactly as demo/story.json says (checked by ocgw --expect against
# the fake Discord's channel histories), and the fake's record shows every
# moderator message once.
set -u
B=build
VERBOSE=
KEEP=0
for a in "$@"; do
    case $a in
    --verbose) VERBOSE=--verbose ;;
    --keep) KEEP=1 ;;
    -*) echo "demo: unknown option $a (use --verbose, --keep)" >&2; exit 2 ;;
    *) B=$a ;;
    esac
done
DEMO_NAME=demo
# Run from the top folder, as every path below is.
[ -r scripts/demo-lib.sh ] ||
    { echo "demo: scripts/demo-lib.sh is missing; run 'make demo' from the top folder" >&2; exit 2; }
# shellcheck source=scripts/demo-lib.sh
. scripts/demo-lib.sh
demo_check_files
RUN=$(mktemp -d "${TMPDIR:-/tmp}/dirigent-demo.XXXXXX") || exit 2

demo_start_fake
GW=
echo $FAKE >"$RUN/fake-discord.pid"
# Whatever ends the script (the story, Ctrl-C, kill) stops what it started.
SERVE=
stop() {
    [ -z "$SERVE" ] || kill $SERVE 2>/dev/null
    [ -z "$GW" ] || kill $GW 2>/dev/null
    kill $FAKE 2>/dev/null
    [ -z "$GW" ] || wait $GW 2>/dev/null
    [ -z "$SERVE" ] || wait $SERVE 2>/dev/null
    wait $FAKE 2>/dev/null
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
demo_wait_fake
demo_register_users

demo_plugin_folder
mkdir -p "$RUN/work"

export OCGW_API_BASE="$URL" OCGW_STATE="$RUN/state" OCGW_WORK="$RUN/work" OCGW_PLUGINS="$RUN/plugins"

# The playground's status page (dirigent-ctl serve, read-only) from the
# start: it shows the story's scopes and discussion as they happen.
# It reads the gateway's own config (the OCGW_* variables filled in), so
# it shows the playground's budgets' limits and prices.
PAGE=
if [ "$KEEP" = 1 ]; then
    sed -e "s|\${OCGW_STATE}|$OCGW_STATE|g" -e "s|\${OCGW_API_BASE}|$OCGW_API_BASE|g" \
        -e "s|\${OCGW_WORK}|$OCGW_WORK|g" -e "s|\${OCGW_PLUGINS}|$OCGW_PLUGINS|g" \
        demo/host.json >"$RUN/openclaw.json"
    "$B/dirigent-ctl" serve --listen "${DEMO_SERVE_LISTEN:-127.0.0.1:0}" \
        --openclaw-config "$RUN/openclaw.json" >"$RUN/serve.out" 2>"$RUN/serve.log" &
    SERVE=$!
    i=0
    while ! grep -q '^dirigent-ctl serve: http' "$RUN/serve.out" 2>/dev/null && [ $i -lt 100 ] &&
        kill -0 $SERVE 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
    PAGE=$(sed -n 's/^dirigent-ctl serve: \(http[^ ]*\).*/\1/p' "$RUN/serve.out")
    [ -n "$PAGE" ] || echo "demo: the status page did not start (see $RUN/serve.log)" >&2
fi

echo "== Dirigent demo: a private discussion channel with a callback =="
echo "   fake Discord $URL, run folder $RUN"
[ -z "$PAGE" ] || echo "   status page $PAGE (dirigent-ctl serve; refreshes every 2 s)"
echo
# The transcript is shown as it comes and kept: its last line is the value.
{ "$B/ocgw" --config demo/host.json --expect demo/story.json $VERBOSE 2>"$RUN/ocgw.log"
  echo $? >"$RUN/ocgw.rc"; } | tee "$RUN/transcript.txt"
rc=$(cat "$RUN/ocgw.rc" 2>/dev/null || echo 1)

# The fake's own record: every REST request, by whom.
demo_fetch_record
total=$(demo_rest_total)
echo
echo "== the fake Discord's record =="
echo "  REST requests           $total"
# One "METHOD USERID" line per request. ocgw polls with an agent's token,
# so a GET made with an agent's token is the gateway's, not the agent's.
grep -oE '"method":"[A-Z]+","path":"[^"]*","query":(null|"[^"]*"),"route":"[^"]*","authorization":(null|"[^"]*"),"authUserId":(null|"[0-9]+")' \
    "$RUN/requests.json" |
    sed 's/^"method":"\([A-Z]*\)".*"authUserId":"\{0,1\}\([0-9a-z]*\)"\{0,1\}$/\1 \2/' >"$RUN/requests.txt"
n=$(grep -c " $MOD\$" "$RUN/requests.txt")
echo "    by the plugin         $n (the moderator bot's token)"
n=$(grep -v " $MOD\$" "$RUN/requests.txt" | grep -c '^GET ')
echo "    reads by ocgw         $n (polling and look-ups, with an agent's token)"
for pair in planner:$PLANNER reviewer:$REVIEWER coder:$CODER alice:$ALICE; do
    n=$(grep -v '^GET ' "$RUN/requests.txt" | grep -c " ${pair#*:}\$")
    printf '    posts by %-10s   %s\n' "${pair%%:*}" "$n"
done
# Each moderator message exactly once: no nonce twice among its messages.
demo_count_moderator
echo "  moderator messages      $mods (duplicate nonces: $dups)"
# The gateway's count (its totals, above) is of the same messages: every
# channel the moderator writes is one the gateway serves or watches (the
# archive index, discussion.archiveChannelId, is watched: its line is in
# the transcript where it was posted).
gwmods=$(sed -n 's/^  moderator messages *\([0-9][0-9]*\)$/\1/p' "$RUN/transcript.txt" | tail -n 1)
if [ "$rc" -eq 0 ] && [ "${gwmods:-x}" != "$mods" ]; then
    echo "demo: the gateway counted ${gwmods:-no} moderator messages, the fake Discord $mods" >&2
    rc=1
fi
echo
echo "state database (plugin):  $RUN/state/dirigent.db"
echo "gateway state:            $RUN/state/ocgw-state.json, $RUN/state/sessions.json"
echo "workspaces:               $RUN/work"
echo "logs:                     $RUN/ocgw.log, $RUN/fake-discord.log"
if [ "$rc" -ne 0 ] || [ "$dups" -ne 0 ]; then
    echo "demo: FAILED (ocgw exit $rc; the gateway log is $RUN/ocgw.log)" >&2
    [ "$rc" -ne 0 ] || rc=1
    exit "$rc"
fi
# The value line ocgw computed from its counters (runs, claimed, swapped).
value=$(sed -n 's/^== value: \(.*\) ==$/\1/p' "$RUN/transcript.txt" | tail -n 1)
# What the story cost as the plugin's cost ledger recorded it: the totals
# line of dirigent-ctl cost on the story's store.
"$B/dirigent-ctl" --db "$RUN/state/dirigent.db" cost >"$RUN/cost.txt" 2>"$RUN/cost.err" ||
    { echo "demo: FAILED: dirigent-ctl cost could not read the story's store ($RUN/cost.err)" >&2; exit 1; }
cost=$(sed -n 's/^total: //p' "$RUN/cost.txt")
[ -n "$cost" ] ||
    { echo "demo: FAILED: the cost ledger recorded no run of the story ($RUN/cost.txt)" >&2; exit 1; }
# The ledger and the gateway count the same runs: ocgw's totals say "agent
# runs N" and its value line "..., M made" (the value compares with OpenClaw
# alone, which makes no run on the moderator's posts), the ledger "N runs,
# ..., M granted, A avoided".
v_runs=$(sed -n 's/^  agent runs  *\([0-9][0-9]*\)$/\1/p' "$RUN/transcript.txt" | tail -n 1)
v_made=$(printf '%s\n' "$value" | sed -n 's/.*, \([0-9][0-9]*\) made.*/\1/p')
c_runs=$(printf '%s\n' "$cost" | sed -n 's/^\([0-9][0-9]*\) runs,.*/\1/p')
c_made=$(printf '%s\n' "$cost" | sed -n 's/.*, \([0-9][0-9]*\) granted,.*/\1/p')
if [ -z "$v_runs" ] || [ "$v_runs" != "$c_runs" ] || [ "$v_made" != "$c_made" ]; then
    echo "demo: FAILED: the cost ledger ($cost) does not agree with the gateway's count (${value:-none})" >&2
    exit 1
fi
if [ "$KEEP" != 1 ]; then
    echo "demo: OK: ${value:-no value line in the transcript}"
    echo "demo: cost of the story (dirigent-ctl cost): $cost"
    exit 0
fi

# ---- the playground ------------------------------------------------------------
# The same gateway again on the same state (it resumes where the story
# ended), run by this script until Ctrl-C or a signal.
DISC=$(sed -n 's/.*"discussion": *"\([0-9]*\)".*/\1/p' "$RUN/state/ocgw-state.json" | head -n 1)
cat >"$RUN/playground.env" <<ENV
PG_URL=$URL
PG_WORK=$WORK
PG_DISCUSSION=$DISC
PG_ARCHIVE=$ARCHIVE
PG_MOD=$MOD
PG_PLANNER=$PLANNER
PG_REVIEWER=$REVIEWER
PG_CODER=$CODER
PG_ALICE_TOKEN=$DEMO_ALICE_TOKEN
PG_PAGE=$PAGE
ENV
cp scripts/demo-post.sh "$RUN/post" && chmod +x "$RUN/post"
# The playground's config: demo/host.json with every agent in #work (the
# story keeps planner alone there), so a question typed there gets one
# answer and the others are visibly claimed. Scenario paths made absolute:
# the file lives in the run folder.
sed -e 's|"agents": \["planner"\] }|"agents": ["planner", "reviewer", "coder"] }|' \
    -e "s|\"scenario\": \"scenarios/|\"scenario\": \"$(pwd)/demo/scenarios/|" \
    demo/host.json >"$RUN/playground.json"
grep -q '"agents": \["planner", "reviewer", "coder"\]' "$RUN/playground.json" ||
    { echo "demo: could not put every agent in #work for the playground ($RUN/playground.json)" >&2; exit 1; }
# JUDGE=1 (make playground JUDGE=1): the chair asks a judge who speaks next, the
# gateway's scripted decision model (ABI 1.2 decide) answering: the first
# candidate for a question, then "nobody" once it is answered.
if [ "${DEMO_JUDGE:-0}" = 1 ]; then
    answers=""
    for i in 1 2 3 4 5 6 7 8 9 10; do
        answers="$answers{\"label\": \"\$first\", \"probability\": 0.9},"
        answers="$answers{\"label\": \"\$nobody\", \"probability\": 0.85},"
    done
    sed -i -e 's|"turn": { "timeoutSec": 60 },|"turn": { "timeoutSec": 60 }, "judge": { "source": "host", "timeoutMs": 3000 },|' \
        -e "s|^  \"humans\": \[|  \"decisions\": { \"answers\": [${answers%,}] },\n  \"humans\": [|" \
        "$RUN/playground.json"
    grep -q '"decisions"' "$RUN/playground.json" && grep -q '"source": "host"' "$RUN/playground.json" ||
        { echo "demo: could not give the playground a judge ($RUN/playground.json)" >&2; exit 1; }
fi
"$B/ocgw" --config "$RUN/playground.json" $VERBOSE 2>>"$RUN/ocgw.log" &
GW=$!
echo $GW >"$RUN/ocgw.pid"
# The turn manager learns a channel's order as its agents are seen there:
# one message in #work makes reviewer and coder known, so the first
# question typed there already gets a single answer.
"$RUN/post" work '!dirigent status' ||
    echo "demo: the playground's first message to #work was not posted; the first question there may get more than one answer" >&2
echo
echo "demo: OK: ${value:-no value line in the transcript}"
echo "demo: cost of the story (dirigent-ctl cost): $cost"
echo
echo "== playground: the fake Discord ($URL) and the gateway keep running =="
echo "#work now has all three agents. From another terminal, post as alice (the human, an"
echo "admin of the plugin):"
echo "  $RUN/post work 'what would you change first?'   # one agent answers, the others are claimed"
echo "  $RUN/post work '@planner please design how a discussion ends'   # a new discussion, live"
echo "  $RUN/post work '!dirigent status'"
echo "  $RUN/post discussion '!dirigent status'      # the story's discussion (discussion-1)"
echo "  $RUN/post discussion 'anyone here?'          # closed: the moderator's notice"
echo "  $RUN/post discussion-2 'hello'               # the next discussion opened; or a channel id"
[ -z "$PAGE" ] || echo "Status page (scopes and budgets, discussions, runs per hour, cost, outbox; refreshes every 2 s): $PAGE"
echo "What happens shows below. Stop both with Ctrl-C here, or: kill $$"
echo "(the fake Discord's control API, e.g. $BASE/_fake/messages, is in demo/README.md)"
echo "playground ready"
# Stopping the playground is how it is meant to end: not a failure.
trap 'echo; echo "playground stopped"; exit 0' INT TERM
wait $GW
rc=$?
GW=
exit $rc
