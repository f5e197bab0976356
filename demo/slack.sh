#!/bin/sh
# make demo PLATFORM=slack: the demo's story (a private discussion with a
# callback, then a thread in #work) through the reference gateway
# build/ocgw on Slack: the real build/dirigent.so with a `slack` block,
# the fake Slack build/fake-slack, all on 127.0.0.1.
#
#   sh demo/slack.sh [BUILD_DIR] [--verbose]
#
# Everything written at run time goes to a fresh folder under $TMPDIR (or
# /tmp), kept for inspection. Exits 0 only when the story happened exactly
# as demo/slack-story.json says (checked by ocgw --expect against the fake
# Slack's channel histories, thread replies included), every moderator
# message is in the fake's record once (no outbox key twice), the gateway
# and the fake count the same moderator messages, and the plugin's cost
# ledger counts the runs the gateway made.
set -u
B=build
VERBOSE=
for a in "$@"; do
    case $a in
    --verbose) VERBOSE=--verbose ;;
    --keep) echo "demo: the playground (KEEP=1) is Discord's only; run make demo KEEP=1" >&2; exit 2 ;;
    -*) echo "demo: unknown option $a (use --verbose)" >&2; exit 2 ;;
    *) B=$a ;;
    esac
done
for f in "$B/ocgw" "$B/fake-slack" "$B/dirigent.so" "$B/dirigent-ctl" demo/slack-host.json \
    demo/slack-story.json; do
    [ -e "$f" ] || { echo "demo: $f is missing; run 'make demo PLATFORM=slack' from the top folder" >&2; exit 2; }
done
command -v curl >/dev/null 2>&1 ||
    { echo "demo: the curl command is missing; install it (apt-get install curl, or make deps as root)" >&2; exit 2; }

# The ids of demo/slack-host.json, and the tokens the fake maps to each user.
WORK=C0WORK0001
MOD=U0MODERATR
PLANNER=U0PLANNE1
REVIEWER=U0REVIEW2
CODER=U0CODER03
ALICE=U0ALICE04
export DIRIGENT_SLACK_MODERATOR_TOKEN=xoxb-demo-moderator
export DEMO_SLACK_PLANNER_TOKEN=xoxb-demo-planner
export DEMO_SLACK_REVIEWER_TOKEN=xoxb-demo-reviewer
export DEMO_SLACK_CODER_TOKEN=xoxb-demo-coder
export DEMO_SLACK_ALICE_TOKEN=xoxp-demo-alice

RUN=$(mktemp -d "${TMPDIR:-/tmp}/dirigent-demo-slack.XXXXXX") || exit 2
# #work: planner, alice and the moderator app (invited, as on a real
# workspace).
"$B/fake-slack" --team T0DEMO0001 --team-name dirigent-demo \
    --bot "$DIRIGENT_SLACK_MODERATOR_TOKEN=$MOD=moderator" \
    --bot "$DEMO_SLACK_PLANNER_TOKEN=$PLANNER=planner" \
    --bot "$DEMO_SLACK_REVIEWER_TOKEN=$REVIEWER=reviewer" \
    --bot "$DEMO_SLACK_CODER_TOKEN=$CODER=coder" \
    --human "$ALICE=alice" \
    --channel "$WORK=work=$PLANNER,$ALICE,$MOD" \
    >"$RUN/fake-slack.out" 2>"$RUN/fake-slack.log" &
FAKE=$!
GW=
stop() {
    [ -z "$GW" ] || kill $GW 2>/dev/null
    kill $FAKE 2>/dev/null
    wait $FAKE 2>/dev/null
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
i=0
while ! grep -q '^http' "$RUN/fake-slack.out" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
URL=$(sed -n '1s/^\(http[^ ]*\).*/\1/p' "$RUN/fake-slack.out")
[ -n "$URL" ] || { echo "demo: the fake Slack did not start (see $RUN/fake-slack.log)" >&2; exit 1; }
BASE=${URL%/api}
# alice is a person: a user token (chat:write as herself), no bot.
curl -sf -X POST -H 'Content-Type: application/json' \
    -d "{\"user_id\":\"$ALICE\",\"name\":\"alice\",\"token\":\"$DEMO_SLACK_ALICE_TOKEN\",\"bot\":false}" \
    "$BASE/_fake/users" >/dev/null || { echo "demo: cannot give alice her token at the fake" >&2; exit 1; }

mkdir -p "$RUN/plugins/dirigent" "$RUN/work"
cp manifest.json "$RUN/plugins/dirigent/manifest.json"
ln -s "$(pwd)/$B/dirigent.so" "$RUN/plugins/dirigent/dirigent.so"
export OCGW_API_BASE="$URL" OCGW_STATE="$RUN/state" OCGW_WORK="$RUN/work" OCGW_PLUGINS="$RUN/plugins"

echo "== Dirigent demo on Slack: a private discussion channel with a callback, and a thread =="
echo "   fake Slack $URL, run folder $RUN"
echo
{ "$B/ocgw" --config demo/slack-host.json --expect demo/slack-story.json $VERBOSE 2>"$RUN/ocgw.log"
  echo $? >"$RUN/ocgw.rc"; } | tee "$RUN/transcript.txt"
rc=$(cat "$RUN/ocgw.rc" 2>/dev/null || echo 1)

# The fake's own record: every Web API request, by whom; every message.
curl -sf "$BASE/_fake/requests" >"$RUN/requests.json" || echo '[]' >"$RUN/requests.json"
curl -sf "$BASE/_fake/messages" >"$RUN/messages.json" || echo '[]' >"$RUN/messages.json"
# One "METHOD USERID" line per request (the fake records "method" before
# "userId" in each object).
grep -oE '"method": *"[a-zA-Z.]+"|"userId": *(null|"[A-Z0-9]+")' "$RUN/requests.json" |
    sed 's/.*: *"\{0,1\}\([A-Za-z0-9.]*\)"\{0,1\}$/\1/' | paste -d' ' - - >"$RUN/requests.txt"
total=$(wc -l <"$RUN/requests.txt")
echo
echo "== the fake Slack's record =="
echo "  Web API requests        $total"
n=$(grep -c " $MOD\$" "$RUN/requests.txt")
echo "    by the plugin         $n (the moderator app's token)"
n=$(grep -v " $MOD\$" "$RUN/requests.txt" | grep -c '^conversations\.')
echo "    reads by ocgw         $n (polling and look-ups, with an agent's token)"
for pair in planner:$PLANNER reviewer:$REVIEWER coder:$CODER alice:$ALICE; do
    n=$(grep '^chat\.postMessage ' "$RUN/requests.txt" | grep -c " ${pair#*:}\$")
    printf '    posts by %-10s   %s\n' "${pair%%:*}" "$n"
done
# Each moderator message exactly once: its outbox key (metadata) once; each
# agent's and alice's post once: its nonce (metadata) once.
dups=$(grep -oE '"(key|nonce)": *"[^"]*"' "$RUN/messages.json" | sort | uniq -d | wc -l)
mods=$(grep -oE "\"user\": *\"$MOD\"" "$RUN/messages.json" | wc -l)
echo "  moderator messages      $mods (duplicate outbox keys or nonces: $dups)"
gwmods=$(sed -n 's/^  moderator messages *\([0-9][0-9]*\)$/\1/p' "$RUN/transcript.txt" | tail -n 1)
if [ "$rc" -eq 0 ] && [ "${gwmods:-x}" != "$mods" ]; then
    echo "demo: the gateway counted ${gwmods:-no} moderator messages, the fake Slack $mods" >&2
    rc=1
fi
echo
echo "state database (plugin):  $RUN/state/dirigent.db"
echo "gateway state:            $RUN/state/ocgw-state.json, $RUN/state/sessions.json"
echo "workspaces:               $RUN/work"
echo "logs:                     $RUN/ocgw.log, $RUN/fake-slack.log"
if [ "$rc" -ne 0 ] || [ "$dups" -ne 0 ]; then
    echo "demo: FAILED (ocgw exit $rc; the gateway log is $RUN/ocgw.log)" >&2
    [ "$rc" -ne 0 ] || rc=1
    exit "$rc"
fi
value=$(sed -n 's/^== value: \(.*\) ==$/\1/p' "$RUN/transcript.txt" | tail -n 1)
"$B/dirigent-ctl" --db "$RUN/state/dirigent.db" cost >"$RUN/cost.txt" 2>"$RUN/cost.err" ||
    { echo "demo: FAILED: dirigent-ctl cost could not read the story's store ($RUN/cost.err)" >&2; exit 1; }
cost=$(sed -n 's/^total: //p' "$RUN/cost.txt")
[ -n "$cost" ] ||
    { echo "demo: FAILED: the cost ledger recorded no run of the story ($RUN/cost.txt)" >&2; exit 1; }
# The value line compares with OpenClaw alone (no run on the moderator's
# posts); the ledger counts every run: compare with the totals' "agent runs".
v_runs=$(sed -n 's/^  agent runs  *\([0-9][0-9]*\)$/\1/p' "$RUN/transcript.txt" | tail -n 1)
v_made=$(printf '%s\n' "$value" | sed -n 's/.*, \([0-9][0-9]*\) made.*/\1/p')
c_runs=$(printf '%s\n' "$cost" | sed -n 's/^\([0-9][0-9]*\) runs,.*/\1/p')
c_made=$(printf '%s\n' "$cost" | sed -n 's/.*, \([0-9][0-9]*\) granted,.*/\1/p')
if [ -z "$v_runs" ] || [ "$v_runs" != "$c_runs" ] || [ "$v_made" != "$c_made" ]; then
    echo "demo: FAILED: the cost ledger ($cost) does not agree with the gateway's count (${value:-none})" >&2
    exit 1
fi
echo "demo: OK: ${value:-no value line in the transcript}"
echo "demo: cost of the story (dirigent-ctl cost): $cost"
exit 0
