#!/bin/sh
# The playground's post command (make demo KEEP=1 copies it into the run
# folder as `post`, next to playground.env, which scripts/demo.sh wrote):
#
#   <run folder>/post work|discussion|discussion-N|CHANNEL_ID TEXT
#
# posts TEXT as alice (the demo's human, an admin of the plugin) in #work,
# in a discussion channel (discussion: the story's, the first one opened;
# discussion-N: the N-th, in the order they were opened; threads are not
# discussions), or in the channel
# of that id, through the fake Discord's REST API, with alice's token. @planner, @reviewer, @coder and @moderator become
# mentions (<@id>). Exits 0 when the fake Discord accepted the message; 1,
# saying why, when it is over Discord's 2,000 characters (checked before
# sending), when the fake refused it (its answer), or when it is not running.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
[ -r "$HERE/playground.env" ] ||
    { echo "post: $HERE/playground.env is missing; run make demo KEEP=1 first" >&2; exit 2; }
. "$HERE/playground.env"
usage() { echo "usage: $0 work|discussion|discussion-N|CHANNEL_ID TEXT" >&2; exit 2; }
[ $# -eq 2 ] || usage
case $1 in
work) ch=$PG_WORK ;;
discussion | discussion-[1-9] | discussion-[1-9]*[0-9])
    k=${1#discussion}
    k=${k#-}
    case ${k:-1} in *[!0-9]*) usage ;; esac
    # The discussion channels, in the order they were opened: every channel
    # with messages but #work, the archive index and threads (the fake's
    # record lists messages oldest first; a discussion starts with its
    # kickoff; the fake writes a channel's "id" then its "type", 11 or 12
    # for a thread).
    fake=${PG_URL%/api/v10}/_fake
    threads=$(curl -sf "$fake/channels" | grep -o '"id":"[0-9]*","type":1[12][,}]' |
        sed 's/^"id":"//; s/".*$//' | tr '\n' ' ')
    list=$(curl -sf "$fake/messages" | grep -o '"channel_id":"[0-9]*"' |
        sed 's/^"channel_id":"//; s/"$//' |
        awk -v w="${PG_WORK:-}" -v a="${PG_ARCHIVE:-}" -v t="$threads" '
            BEGIN { n = split(t, v, " "); for (i = 1; i <= n; i++) thread[v[i]] = 1 }
            $0 != w && $0 != a && !($0 in thread) && !seen[$0]++')
    ch=$(printf '%s\n' "$list" | sed -n "${k:-1}p")
    [ -n "$ch" ] || [ "${k:-1}" != 1 ] || ch=$PG_DISCUSSION
    if [ -z "$ch" ]; then
        echo "post: there is no $1: $(printf '%s\n' "$list" | grep -c .) discussion channel(s) so far" >&2
        exit 2
    fi
    ;;
*[!0-9]* | '') usage ;;
*) ch=$1 ;;
esac
# What Discord gets: the mentions written as <@id> (they count so).
sub=$(printf '%s' "$2" | sed -e "s/@planner/<@$PG_PLANNER>/g" -e "s/@reviewer/<@$PG_REVIEWER>/g" \
    -e "s/@coder/<@$PG_CODER>/g" -e "s/@moderator/<@$PG_MOD>/g")
# Discord takes at most 2000 characters (not bytes): count the bytes that
# start a UTF-8 character, whatever the locale.
n=$(printf '%s' "$sub" | LC_ALL=C tr -d '\200-\277' | wc -c | tr -d ' ')
if [ "$n" -gt 2000 ]; then
    echo "post: the message is $n characters long, over Discord's 2,000-character limit" \
        "(a mention counts as its <@id>); nothing was posted: shorten it or post it in parts" >&2
    exit 1
fi
# JSON string: backslashes and quotes escaped, line breaks as \n.
text=$(printf '%s' "$sub" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' |
    awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }')
resp=$(curl -s -w '\n%{http_code}' -X POST -H "Authorization: Bot $PG_ALICE_TOKEN" \
    -H 'Content-Type: application/json' -d "{\"content\":\"$text\"}" \
    "$PG_URL/channels/$ch/messages")
rc=$?
if [ $rc -ne 0 ]; then
    echo "post: the fake Discord at $PG_URL is not running or does not answer (curl exit $rc)" >&2
    exit 1
fi
code=$(printf '%s\n' "$resp" | tail -n 1)
case $code in
2??) exit 0 ;;
esac
# Discord's answer: its message and those of the fields it refused.
why=$(printf '%s\n' "$resp" | sed '$d' | grep -o '"message": *"[^"]*"' |
    sed 's/^"message": *"//; s/"$//' | awk 'NR > 1 { printf ": " } { printf "%s", $0 }')
echo "post: the fake Discord refused the message (HTTP $code): ${why:-no reason given}" >&2
exit 1
