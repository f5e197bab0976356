#!/bin/sh
# release-check.sh -- what make release promises of each release build: that
# it loads on a stock Debian 12 / Ubuntu 22.04 without any -dev package.
#
#   sh scripts/release-check.sh BUILD_DIR ARCH [NM]
#
# Refuses (and names the file and what to do) when a release file needs a
# shared library outside the allowed list below, needs a glibc symbol
# newer than GLIBC_FLOOR (default 2.35, Ubuntu 22.04's glibc), exports
# anything but oc_plugin_entry (dirigent.so) or a SQLite/jansson symbol
# (the static copies must stay private), or is built for another machine.
set -eu
B=${1:?usage: release-check.sh BUILD_DIR ARCH [NM]}
ARCH=${2:?usage: release-check.sh BUILD_DIR ARCH [NM]}
NM=${3:-nm}
FLOOR=${GLIBC_FLOOR:-2.35}

fail() {
    echo "release-check: $*" >&2
    exit 1
}
case $ARCH in
x64) MACHINE='Advanced Micro Devices X86-64' ;;
arm64) MACHINE='AArch64' ;;
*) fail "unknown ARCH $ARCH (x64 or arm64)" ;;
esac

# The shared libraries each file may need: glibc, and the runtime packages
# a user installs (libcurl4, libpq5; libgnutls30, which libmicrohttpd needs
# in dirigent-noreply and dirigent-ctl serve, comes with apt itself);
# libjansson.so.4 only as the copy the package carries beside dirigent.so.
# glibc's dynamic loader counts as glibc (arm64 objects name it).
allowed() {
    echo "ld-linux-aarch64.so.1 ld-linux-x86-64.so.2"
    case $1 in
    dirigent.so) echo "libjansson.so.4 libcurl.so.4 libpq.so.5 libm.so.6 libc.so.6" ;;
    libjansson.so.4) echo "libc.so.6" ;;
    dirigent-ctl) echo "libgnutls.so.30 libcurl.so.4 libpq.so.5 libm.so.6 libc.so.6" ;;
    dirigent-noreply) echo "libgnutls.so.30 libcurl.so.4 libm.so.6 libc.so.6" ;;
    esac
}
# "2.34" > "2.35"? (versions as major.minor)
newer() {
    [ "$(printf '%s\n%s\n' "$1" "$2" | sort -t. -k1,1n -k2,2n | tail -n 1)" = "$1" ] && [ "$1" != "$2" ]
}

for f in dirigent.so libjansson.so.4 dirigent-ctl dirigent-noreply; do
    p=$B/$f
    [ -f "$p" ] || fail "$p is missing (make RELEASE=$ARCH release-build)"
    m=$(readelf -h "$p" | sed -n 's/^ *Machine: *//p')
    [ "$m" = "$MACHINE" ] || fail "$p is built for \"$m\", not $ARCH ($MACHINE); remove $B and build again"
    for lib in $(readelf -d "$p" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        case " $(allowed "$f" | tr '\n' ' ') " in
        *" $lib "*) ;;
        *) fail "$p needs $lib, which a stock Debian 12 / Ubuntu 22.04 may lack: link it statically (its PIC .a) or add it to the runtime packages the report names (scripts/release-check.sh)" ;;
        esac
    done
    top=$(readelf -W --dyn-syms "$p" | grep -o '@GLIBC_[0-9][0-9.]*' | sed 's/@GLIBC_//' |
        sort -u -t. -k1,1n -k2,2n -k3,3n | tail -n 1)
    if [ -n "$top" ] && newer "$top" "$FLOOR"; then
        syms=$(readelf -W --dyn-syms "$p" | grep "@GLIBC_$top" | awk '{print $8}' | tr '\n' ' ')
        fail "$p needs glibc $top ($syms) but the floor is $FLOOR (Ubuntu 22.04): avoid those functions or build on an older system"
    fi
    leaked=$("$NM" -D --defined-only "$p" | awk '{print $3}' | grep -E '^(sqlite3|json|jansson|MHD)_' | head -n 3 | tr '\n' ' ' || true)
    [ -z "$leaked" ] || [ "$f" = libjansson.so.4 ] ||
        fail "$p exports $leaked: the static libraries must stay hidden (-Wl,--exclude-libs,ALL)"
    echo "release-check: $p: $ARCH, glibc >= ${top:-any}, needs $(readelf -d "$p" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
done
ex=$("$NM" -D --defined-only "$B/dirigent.so" | awk '{print $3}' | grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' | sort -u | tr '\n' ' ')
[ "$ex" = "oc_plugin_entry " ] || fail "$B/dirigent.so exports more than oc_plugin_entry: $ex"
