#!/bin/sh
# make demo-shared: the demo's story (scripts/demo.sh) played by two
# gateways on one PostgreSQL store: gateway A runs planner and the scripted
# human alice, gateway B runs reviewer and coder. Both load the same
# demo/host.json (the plugin on each knows all three agents: the turn order
# is shared through the store) and talk to the same fake Discord on
# 127.0.0.1; --run-only splits the agents, --name labels each one's lines.
#
#   sh scripts/demo-shared.sh [BUILD_DIR] [--verbose]
#
# A throw-away PostgreSQL server (initdb + pg_ctl, unix socket only, in the
# run folder; as root it runs as the user nobody: postgres refuses root) is
# started and stopped by the script. Exits 0 only when gateway A's story
# check (--expect demo/story.json, against the fake Discord's channel
# histories, which both gateways write to) passed, gateway B stopped
# cleanly, and no message is in Discord twice.
set -u
B=build
VERBOSE=
for a in "$@"; do
    case $a in
    --verbose) VERBOSE=--verbose ;;
    -*) echo "demo-shared: unknown option $a (use --verbose)" >&2; exit 2 ;;
    *) B=$a ;;
    esac
done
DEMO_NAME=demo-shared
# Run from the top folder, as every path below is.
[ -r scripts/demo-lib.sh ] ||
    { echo "demo-shared: scripts/demo-lib.sh is missing; run 'make demo-shared' from the top folder" >&2; exit 2; }
# shellcheck source=scripts/demo-lib.sh
. scripts/demo-lib.sh
demo_check_files
PGBIN=${DG_PG_BINDIR:-}
if [ -z "$PGBIN" ]; then
    for d in /usr/lib/postgresql/*/bin /usr/local/bin; do
        [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && PGBIN=$d
    done
fi
[ -n "$PGBIN" ] && [ -x "$PGBIN/initdb" ] && [ -x "$PGBIN/pg_ctl" ] ||
    { echo "demo-shared: no PostgreSQL server binaries (initdb, pg_ctl): install postgresql (make deps as root) or set DG_PG_BINDIR" >&2; exit 2; }
RUN=$(mktemp -d "${TMPDIR:-/tmp}/dirigent-demo-shared.XXXXXX") || exit 2
PGDIR=$RUN/pg
mkdir -p "$PGDIR"
AS=
if [ "$(id -u)" -eq 0 ]; then
    # postgres refuses to run as root: the server runs as nobody, who must
    # reach its folder.
    chmod 711 "$RUN"
    chown nobody "$PGDIR" || { echo "demo-shared: cannot give $PGDIR to the user nobody" >&2; exit 2; }
    AS="runuser -u nobody --"
fi
PGPASS=demo-shared-pg-password
echo "$PGPASS" >"$PGDIR/pw"
chmod 644 "$PGDIR/pw"

FAKE=
PG_UP=0
stop() {
    [ -z "$FAKE" ] || { kill $FAKE 2>/dev/null; wait $FAKE 2>/dev/null; }
    [ "$PG_UP" = 0 ] || $AS "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast -w stop >>"$PGDIR/tool.log" 2>&1
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

$AS "$PGBIN/initdb" -D "$PGDIR/data" -U dirigent --pwfile "$PGDIR/pw" -A scram-sha-256 \
    -E UTF8 --locale=C --no-sync >"$PGDIR/tool.log" 2>&1 ||
    { echo "demo-shared: initdb failed (see $PGDIR/tool.log)" >&2; exit 1; }
$AS "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w -t 60 \
    -o "-h '' -k $PGDIR -p 5432 -c fsync=off" start >>"$PGDIR/tool.log" 2>&1 ||
    { echo "demo-shared: the PostgreSQL server did not start (see $PGDIR/server.log)" >&2; exit 1; }
PG_UP=1
# Both plugins take the store from here; it wins over dbPath in host.json.
export DIRIGENT_STORE_URL="postgresql://dirigent:$PGPASS@/postgres?host=$PGDIR&port=5432"

demo_start_fake
demo_wait_fake
demo_register_users
demo_plugin_folder
export OCGW_API_BASE="$URL" OCGW_PLUGINS="$RUN/plugins"

echo "== Dirigent demo: two gateways on one PostgreSQL store =="
echo "   gateway A runs planner (and alice), gateway B runs reviewer and coder"
echo "   fake Discord $URL, run folder $RUN"
echo
# Each gateway has its own state folder and workspaces (as on two machines);
# the plugin's state is the shared PostgreSQL database. Their transcripts go
# to one pipe, a whole line at a time, each line prefixed with its gateway.
{
    OCGW_STATE="$RUN/state-b" OCGW_WORK="$RUN/work-b" "$B/ocgw" --config demo/host.json \
        --run-only reviewer,coder --name B $VERBOSE 2>"$RUN/ocgw-b.log" &
    GWB=$!
    OCGW_STATE="$RUN/state-a" OCGW_WORK="$RUN/work-a" "$B/ocgw" --config demo/host.json \
        --run-only planner,alice --name A --expect demo/story.json $VERBOSE 2>"$RUN/ocgw-a.log"
    echo $? >"$RUN/ocgw-a.rc"
    # The story is complete: B stops (SIGTERM fires gateway_stop, prints its totals).
    kill -TERM $GWB 2>/dev/null
    wait $GWB
    echo $? >"$RUN/ocgw-b.rc"
} | tee "$RUN/transcript.txt"
rca=$(cat "$RUN/ocgw-a.rc" 2>/dev/null || echo 1)
rcb=$(cat "$RUN/ocgw-b.rc" 2>/dev/null || echo 1)

demo_fetch_record
echo
echo "== who ran which agent (from the transcript) =="
for gw in A B; do
    ran=$(sed -n "s/^$gw| *\([a-z]*\): real model .*/\1/p" "$RUN/transcript.txt" | sort -u | tr '\n' ' ')
    printf '  gateway %s: real runs of %s\n' $gw "${ran:-nobody}"
done
# Both gateways' value lines together: the runs of `make demo`, split.
runs=0; avoided=0
for gw in A B; do
    r=$(sed -n "s/^$gw| == value: without the plugin all \([0-9]*\) agent runs.*: \([0-9]*\) avoided.*/\1 \2/p" "$RUN/transcript.txt" | tail -n 1)
    set -- $r
    runs=$((runs + ${1:-0})); avoided=$((avoided + ${2:-0}))
done
echo "  both gateways: OpenClaw alone would have made $runs model calls; $((runs - avoided)) made, $avoided avoided"
echo "== the fake Discord's record =="
# Each moderator message once: no nonce twice among the stored messages;
# a nonce POSTed more than once was a post resent (Discord, and the fake,
# answer a resent nonce with the first message).
demo_count_moderator
resent=$(grep -o '"nonce": *"[^"]*"' "$RUN/requests.json" | sort | uniq -c | awk '$1 > 1 { n += $1 - 1 } END { print n + 0 }')
echo "  REST requests           $(demo_rest_total)"
echo "  moderator messages      $mods (duplicate nonces: $dups; posts resent under their nonce: $resent)"
echo
echo "state (plugin):           PostgreSQL in $PGDIR (stopped)"
echo "gateway states:           $RUN/state-a, $RUN/state-b"
echo "logs:                     $RUN/ocgw-a.log, $RUN/ocgw-b.log, $RUN/fake-discord.log"
if [ "$rca" -ne 0 ] || [ "$rcb" -ne 0 ] || [ "$dups" -ne 0 ]; then
    echo "demo-shared: FAILED (gateway A exit $rca, gateway B exit $rcb, duplicate nonces $dups)" >&2
    exit 1
fi
echo "demo-shared: OK: the story happened with its agents on two gateways sharing one store"
