#!/usr/bin/env bash
# The build needs only Rust (issue 30, point 2): build the workspace,
# all targets, in an environment where pkg-config, clang,
# libclang and the -dev headers cannot be found, and check that no build
# script could look for them. The headers stay installed on the CI
# machine (ci/bindings.sh and the tests use them), so the check has two
# halves:
#   1. nothing in the build graph (the workspace's build scripts, and every
#      normal, build and dev dependency) uses pkg-config, bindgen, cc,
#      cmake or clang-sys;
#   2. the build runs with PATH holding only the toolchain (cargo, rustc)
#      and the linker (cc, ld), PKG_CONFIG=/bin/false, LIBCLANG_PATH and
#      PKG_CONFIG_PATH pointing at an empty directory, CPATH and
#      C_INCLUDE_PATH unset (env -i), in its own target directory so
#      nothing built with the full environment is reused.
# Called by ci/test.sh. The build is the dev profile with debug info off,
# of the libraries and binaries (every build script, every crate compiled
# and every program linked, the test programs of rgex-tests included): it
# proves what the build needs, not what it ships. The test harnesses
# (--all-targets) compile the same crates again with cfg(test) and link
# the same libraries; half 1 covers their dev-dependencies, and building
# them too took this check from about 120 s to 240 s on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

echo "build scripts and dependencies that could look for a system library:"
found=0
if grep -rln "pkg_config\|bindgen\|cc::Build" --include=build.rs --exclude-dir=target --exclude-dir=gen .; then
    found=1
fi
if cargo tree --workspace --locked -e normal,build,dev --prefix none --format '{p}' |
    awk '{print $1}' | sort -u | grep -E '^(bindgen|pkg-config|cc|cmake|clang-sys|system-deps|vcpkg)$'; then
    found=1
fi
if [ "$found" = 1 ]; then
    echo "the build must not need pkg-config, bindgen, a C compiler or cmake (issue 30)" >&2
    exit 1
fi
echo "none"

sysroot=$(rustc --print sysroot)
bin=$(mktemp -d)
empty=$(mktemp -d)
trap 'rm -rf "$bin" "$empty"' EXIT
# The linker rustc runs (cc) and the one cc runs (ld); nothing else.
ln -s "$(command -v cc)" "$bin/cc"
ln -s "$(command -v ld)" "$bin/ld"
start=$(date +%s)
env -i \
    HOME="$HOME" \
    CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" \
    PATH="$sysroot/bin:$bin" \
    PKG_CONFIG=/bin/false \
    PKG_CONFIG_PATH="$empty" \
    LIBCLANG_PATH="$empty" \
    CARGO_TARGET_DIR="$root/target/nodev" \
    CARGO_PROFILE_DEV_DEBUG=0 \
    cargo build --workspace --lib --bins --locked --quiet
echo "the workspace builds (libraries and binaries) with only cargo, rustc and the linker" \
     "on PATH: $(($(date +%s) - start)) s"
