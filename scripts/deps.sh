#!/bin/sh
# Install the Debian packages the build needs, but only those missing.
# As root it installs them with apt-get; otherwise it prints the command.
#   sh scripts/deps.sh PKG...     the given packages (make deps passes the build's)
#   sh scripts/deps.sh --fuzz     the optional fuzzing toolchain (make fuzz):
#                                 clang and libFuzzer's runtime; make check
#                                 never needs them
set -eu
if [ "${1:-}" = "--fuzz" ]; then
    set -- clang libclang-rt-14-dev
fi
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "dirigent: missing packages:$missing" >&2
    echo "dirigent: install them with: sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "dirigent: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing
