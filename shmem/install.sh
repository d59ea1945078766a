#!/usr/bin/env bash
# install.sh: build rgex-shmem with cargo and install it under a prefix.
#
#   bash shmem/install.sh --prefix DIR [--profile NAME] [--target-dir DIR] [-- SELECTION]
#
# Builds librgex_shmem (.so and .a) and rgex-run with cargo (profile
# release unless --profile names another: dev, or one of the workspace's
# own), in $CARGO_TARGET_DIR, else the workspace's target/, unless
# --target-dir names another; then installs
#   DIR/lib/librgex_shmem.so, DIR/lib/librgex_shmem.a
#   DIR/lib/pkgconfig/rgex-shmem.pc
#   DIR/include/shmem.h, DIR/include/shmemx.h, DIR/include/pshmem.h
#   DIR/bin/oshcc, DIR/bin/oshrun, DIR/bin/rgex-run
# The installed oshcc and oshrun find the library, the headers and
# rgex-run beside themselves: nothing of the source tree is needed.
# After --, cargo build's selection instead of `-p rgex-shmem -p rgex
# --lib --bin rgex-run` (cargo resolves features over what it selects:
# shmem/tests/install.rs passes the selection `cargo test --workspace`
# builds, so the script builds nothing twice with other features).
set -euo pipefail

# The synopsis (the header's fourth line) on stderr; --help prints the
# whole header.
usage() {
    sed -n '4s/^# *//p' "$0" >&2
}

fail() {
    echo "install.sh: $*" >&2
    exit 2
}

prefix=
profile=release
selection=(-p rgex-shmem -p rgex --lib --bin rgex-run)
target_dir=
while [ $# -gt 0 ]; do
    case $1 in
        --prefix | --profile | --target-dir)
            [ $# -ge 2 ] && [ -n "$2" ] || fail "$1 needs a value (see --help)"
            case $2 in -*) fail "$1 needs a value, not the option '$2' (see --help)" ;; esac
            case $1 in
                --prefix) prefix=$2 ;;
                --profile) profile=$2 ;;
                --target-dir) target_dir=$2 ;;
            esac
            shift 2
            ;;
        --prefix=* | --profile=* | --target-dir=*)
            value=${1#*=}
            [ -n "$value" ] || fail "${1%%=*} needs a value (see --help)"
            case $1 in
                --prefix=*) prefix=$value ;;
                --profile=*) profile=$value ;;
                --target-dir=*) target_dir=$value ;;
            esac
            shift
            ;;
        --)
            shift
            [ $# -gt 0 ] || fail "-- needs cargo build's selection after it (see --help)"
            selection=("$@")
            break
            ;;
        -h | --help)
            sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"
            exit 0
            ;;
        *)
            usage
            fail "unknown argument '$1' (the options are --prefix, --profile, --target-dir, --help)"
            ;;
    esac
done
[ -n "$prefix" ] || { usage; fail "--prefix DIR is required (where lib/, include/ and bin/ go)"; }
case $prefix in
    *[[:space:]]*) fail "--prefix '$prefix' holds whitespace, which rgex-shmem.pc's flags cannot carry" ;;
esac

# The prefix: made if missing, and writable, before the build is paid for.
mkdir -p -- "$prefix" 2>/dev/null || fail "--prefix $prefix: cannot create the directory"
[ -d "$prefix" ] || fail "--prefix $prefix is not a directory"
prefix=$(cd -- "$prefix" && pwd)
for d in bin include lib lib/pkgconfig; do
    mkdir -p -- "$prefix/$d" 2>/dev/null && [ -w "$prefix/$d" ] ||
        fail "--prefix $prefix: $prefix/$d is not writable (choose a prefix of yours, or run as its owner)"
done

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cargo=${CARGO:-cargo}
target=${target_dir:-${CARGO_TARGET_DIR:-$root/target}}
mkdir -p -- "$target" 2>/dev/null || fail "--target-dir $target: cannot create the directory"
target=$(cd -- "$target" && pwd)
# Cargo's output directory for a profile: dev and test build into debug,
# bench into release, every other profile into its own name.
case $profile in
    dev | test) out=$target/debug ;;
    bench) out=$target/release ;;
    *) out=$target/$profile ;;
esac

echo "install.sh: building rgex-shmem and rgex-run (profile $profile, target $target)"
(cd "$root" && "$cargo" build --profile "$profile" --target-dir "$target" \
    "${selection[@]}") ||
    fail "cargo build --profile $profile failed (its messages are above)"

# The crate's version, for the pkg-config file: cargo pkgid ends
# in '#rgex-shmem@VERSION' (or '#VERSION' on older cargo).
pkgid=$(cd "$root" && "$cargo" pkgid -p rgex-shmem)
version=${pkgid##*[#@]}
[ -n "$version" ] || fail "no version in cargo pkgid's answer '$pkgid'"

for f in "$out/librgex_shmem.so" "$out/librgex_shmem.a" "$out/rgex-run"; do
    [ -f "$f" ] || fail "$f is missing after the build"
done
install -m 0755 "$out/librgex_shmem.so" "$prefix/lib/"
install -m 0644 "$out/librgex_shmem.a" "$prefix/lib/"
install -m 0644 "$here/include/shmem.h" "$here/include/shmemx.h" "$here/include/pshmem.h" \
    "$prefix/include/"
install -m 0755 "$here/bin/oshcc" "$here/bin/oshrun" "$out/rgex-run" "$prefix/bin/"

# Libs carries an rpath to libdir, as oshcc's link line does, so that a
# program runs without LD_LIBRARY_PATH. Libs.private: what the static
# library needs besides (Rust's standard library on glibc), for
# `pkg-config --static`.
cat >"$prefix/lib/pkgconfig/rgex-shmem.pc" <<EOF
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: rgex-shmem
Description: OpenSHMEM 1.5 for C programs on rgex
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lrgex_shmem
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
EOF

echo "install.sh: installed rgex-shmem $version in $prefix"
echo "  compile: $prefix/bin/oshcc prog.c -o prog"
echo "       or: cc prog.c \$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs rgex-shmem)"
echo "  run:     $prefix/bin/oshrun -np 2 ./prog"
