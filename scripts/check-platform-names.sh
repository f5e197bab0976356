#!/bin/sh
# The core does not know a chat platform: no file of the given folders
# (make check-platform-names passes every part that neither is a platform's
# client nor includes one: plugin/, hooks/, store/, common/, servers/)
# includes a platform client's header (discord.h, slack.h, their
# internals, or the clients' request core http_client.h) or names its API
# (dg_discord_*, dg_slack_*, DG_DISCORD_*, DG_SLACK_*, dgh_*); they go
# through chat/chat.h. The config's discord block
# (cfg.discord_*) and the words in messages and comments are not the
# client, and are allowed.
#
#   sh scripts/check-platform-names.sh DIR...
# A DIR that does not exist is skipped. Exit status 0 when nothing is
# found, 1 otherwise (each offender listed as file:line: text); 2 without
# a DIR.
set -eu
[ $# -gt 0 ] || { echo "check-platform-names: name the folders (make check-platform-names passes them)" >&2; exit 2; }
dirs=""
for d in "$@"; do
    [ -d "$d" ] && dirs="$dirs $d"
done
[ -n "$dirs" ] || exit 0
# shellcheck disable=SC2086
found=$(grep -rnE --include='*.c' --include='*.h' \
    '#[[:space:]]*include[[:space:]]*"((discord|slack)(_int)?|http_client)\.h"|\b((dg|DG)_(discord|DISCORD|slack|SLACK)_|dgh_)[A-Za-z0-9_]+' \
    $dirs || true)
[ -z "$found" ] && exit 0
echo "check-platform-names: the core names a platform client; use chat/chat.h instead:"
printf '%s\n' "$found"
exit 1
