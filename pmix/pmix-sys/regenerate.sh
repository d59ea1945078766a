#!/usr/bin/env bash
# Regenerate src/bindings.rs from the installed PMIx headers (needs
# libpmix-dev, libclang and pkg-config; the normal build needs none of
# them). With --check, write to a temporary file and fail if it differs
# from the committed one (ci/bindings.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$here/src/bindings.rs"
if [ "${1:-}" = --check ]; then out=$(mktemp --suffix=.rs); trap 'rm -f "$out"' EXIT; fi
# shellcheck disable=SC2046 # the flags are separate words
# The generator (tools/bindings-gen, shared with the other -sys crate)
# reads gen/wrapper.h and its allowlist for pmix.
cargo run --quiet --locked --manifest-path "$root/tools/bindings-gen/Cargo.toml" \
    --target-dir "$root/target/gen" -- pmix "$out" $(pkg-config --cflags pmix)
# The same formatting as `cargo fmt` gives the committed file.
rustfmt --edition 2021 "$out"
if [ "${1:-}" = --check ]; then
    if ! diff -u "$here/src/bindings.rs" "$out"; then
        echo "pmix-sys: src/bindings.rs differs from what the installed headers" \
             "(PMIx $(pkg-config --modversion pmix)) give; run $here/regenerate.sh" >&2
        exit 1
    fi
    echo "pmix-sys: bindings match PMIx $(pkg-config --modversion pmix)'s headers"
fi
