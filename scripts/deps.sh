#!/bin/sh
# Install the Debian packages the build needs, but only those missing.
# As root it installs them with apt-get; otherwise it prints the command.
#   sh scripts/deps.sh PKG...     the given packages (make deps passes the build's)
#   sh scripts/deps.sh --missing PKG...   prints those of PKG not installed, on
#                                 one line (nothing when none), installs nothing
#   sh scripts/deps.sh --format   clang-format 14 for make format and make
#                                 format-check (CI runs the check)
#   sh scripts/deps.sh --fuzz     the optional fuzzing toolchain (make fuzz):
#                                 clang and libFuzzer's runtime; make check
#                                 never needs them
#   sh scripts/deps.sh --browser  Debian's chromium for make check-browser
#                                 (the status page in a headless browser)
#   sh scripts/deps.sh --fresh    debootstrap for make check-fresh (the
#                                 quick start in a fresh Debian 12 root)
#   sh scripts/deps.sh --release ARCH...   the release build (make release,
#                                 make package) for x64 and/or arm64: for arm64
#                                 the cross compiler, the arm64 libraries
#                                 (multiarch: adds the arm64 architecture to
#                                 dpkg) and qemu-user for make check-release;
#                                 debootstrap for make check-install.
#                                 Not libpq-dev:arm64: it would replace the
#                                 amd64 one; the link names libpq.so.5 itself.
set -eu
only_list=""
if [ "${1:-}" = "--missing" ]; then
    only_list=1
    shift
elif [ "${1:-}" = "--fuzz" ]; then
    set -- clang libclang-rt-14-dev
elif [ "${1:-}" = "--format" ]; then
    set -- clang-format-14
elif [ "${1:-}" = "--browser" ]; then
    set -- chromium
elif [ "${1:-}" = "--fresh" ]; then
    set -- debootstrap
elif [ "${1:-}" = "--release" ]; then
    shift
    pkgs="libsqlite3-dev libjansson-dev libcurl4-openssl-dev libmicrohttpd-dev libpq-dev"
    for a in "$@"; do
        case $a in
        x64) pkgs="$pkgs debootstrap" ;; # make check-install's chroot
        arm64)
            if ! dpkg --print-foreign-architectures | grep -qx arm64; then
                if [ "$(id -u)" -ne 0 ]; then
                    echo "dirigent: the arm64 release build needs arm64 packages: sudo dpkg --add-architecture arm64 && sudo apt-get update, then make release again" >&2
                    exit 1
                fi
                echo "dirigent: adding the arm64 architecture to dpkg (multiarch)"
                dpkg --add-architecture arm64
                apt-get update -qq
            fi
            pkgs="$pkgs gcc-aarch64-linux-gnu libc6-dev-arm64-cross binutils-aarch64-linux-gnu
                  libsqlite3-dev:arm64 libjansson-dev:arm64 libcurl4-openssl-dev:arm64
                  libmicrohttpd-dev:arm64 libpq5:arm64 libgnutls30:arm64 qemu-user qemu-user-binfmt" ;;
        *) echo "dirigent: the release build knows x64 and arm64, not $a" >&2; exit 2 ;;
        esac
    done
    # shellcheck disable=SC2086
    set -- $pkgs
fi
# One dpkg-query for all (every build starts here); a package dpkg does not
# know is missing too. Names may carry an architecture (libpq5:arm64).
installed=$(dpkg-query -W -f='${Package}:${Architecture} ${Status}\n' "$@" 2>/dev/null |
            sed -n 's/ install ok installed$//p')
native=$(dpkg --print-architecture 2>/dev/null || echo none)
missing=""
for p in "$@"; do
    case $p in *:*) want=$p ;; *) want="$p:$native $p:all" ;; esac
    found=""
    for w in $want; do
        printf '%s\n' "$installed" | grep -qxF "$w" && found=1
    done
    [ -n "$found" ] || missing="$missing $p"
done
if [ -n "$only_list" ]; then
    [ -z "$missing" ] || echo "${missing# }"
    exit 0
fi
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
