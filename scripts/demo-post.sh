#!/bin/sh
# The playground's post command (make demo KEEP=1 copies it into the run
# folder as `post`, next to playground.env, which scripts/demo.sh wrote):
#
#   <run folder>/post work|discussion TEXT
#
# posts TEXT as alice (the demo's human, an admin of the plugin) in #work or
# in the discussion channel of the story, through the fake Discord's REST
# API, with alice's token. @planner, @reviewer, @coder and @moderator become
# mentions (<@id>). Exits 0 when the fake Discord accepted the message.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
[ -r "$HERE/playground.env" ] ||
    { echo "post: $HERE/playground.env is missing; run make demo KEEP=1 first" >&2; exit 2; }
. "$HERE/playground.env"
usage() { echo "usage: $0 work|discussion TEXT" >&2; exit 2; }
[ $# -eq 2 ] || usage
case $1 in
work) ch=$PG_WORK ;;
discussion) ch=$PG_DISCUSSION ;;
*) usage ;;
esac
# JSON string: backslashes and quotes escaped, line breaks as \n.
text=$(printf '%s' "$2" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' \
    -e "s/@planner/<@$PG_PLANNER>/g" -e "s/@reviewer/<@$PG_REVIEWER>/g" \
    -e "s/@coder/<@$PG_CODER>/g" -e "s/@moderator/<@$PG_MOD>/g" | awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }')
curl -sf -o /dev/null -X POST -H "Authorization: Bot $PG_ALICE_TOKEN" \
    -H 'Content-Type: application/json' -d "{\"content\":\"$text\"}" \
    "$PG_URL/channels/$ch/messages" ||
    { echo "post: the fake Discord at $PG_URL refused the message or is not running" >&2; exit 1; }
