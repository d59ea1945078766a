#!/usr/bin/env bash
# Every test of rgex, from a fresh machine: the README's test command and
# what .ci/run calls. Installs what it needs; keep it under 30 minutes on
# 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

section() { printf '\n=== %s ===\n' "$*"; }

section "system packages"
bash ci/deps.sh

section "toolchain components"
rustup component add rustfmt clippy >/dev/null 2>&1 || echo "rustup could not add rustfmt/clippy; using what is installed"

section "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings

section "unit, doc and multi-process tests"
mkdir -p target
cargo test --workspace 2>&1 | tee target/test.log
# One summary line for the CI reader, computed from cargo's own lines.
awk '/^test result:/ { p += $4; f += $6; i += $8 } END { printf "%d passed, %d failed, %d skipped\n", p, f, i }' target/test.log

section "loom model checking of the shared-memory ring"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p rgex-smp --release --lib loom

section "conduit matrix: the conformance suite on ofi (tcp, sockets, shm; loopback only)"
bash ci/conduits.sh
