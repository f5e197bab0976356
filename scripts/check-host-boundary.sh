#!/bin/sh
# The core calls the host only through its host-call table
# (plugin/host_calls.h, dg_plugin.host), which the entry point fills from
# the host's oc_host_api (hooks/host_api.c): no file of plugin/ reaches an
# oc_host_api (`->api`, as in p->api->log or j->p->api->decide) or asks what
# the host's table carries (OC_HOST_API_HAS). Comments are not exempt: the
# rule is simple enough to hold everywhere.
#
#   sh scripts/check-host-boundary.sh [DIR...]
# DIRs default to plugin (when it exists). Exit status 0 when nothing is
# found, 1 otherwise (each offender listed as file:line: text).
set -eu
[ $# -gt 0 ] || set -- plugin
dirs=""
for d in "$@"; do
    [ -d "$d" ] && dirs="$dirs $d"
done
[ -n "$dirs" ] || exit 0
# shellcheck disable=SC2086
found=$(grep -rnE --include='*.c' --include='*.h' '(->|\.)api\b|\bOC_HOST_API_HAS\b' $dirs || true)
[ -z "$found" ] && exit 0
echo "check-host-boundary: the core calls the host around its table; use p->host (plugin/host_calls.h):"
printf '%s\n' "$found"
exit 1
