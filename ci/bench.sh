#!/usr/bin/env bash
# The benchmark job, from a fresh Debian machine as root: install the peer
# tool (best-effort), build, and run testam on two ranks through the
# launcher. Arguments go to testam: --quick (a smoke run, < 20 s),
# --json PATH (default bench-results/testam.json), --reps N.
# Benches report; they never fail on timing. This script fails only if the
# build fails or the benchmark breaks.
set -euo pipefail
cd "$(dirname "$0")/.."

section() { printf '\n=== %s ===\n' "$*"; }

section "peer tool: ucx_perftest (best-effort)"
if command -v ucx_perftest >/dev/null 2>&1; then
    echo "found $(command -v ucx_perftest)"
elif command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    if apt-get update && apt-get install -y ucx-utils; then
        echo "installed ucx-utils"
    else
        echo "could not install ucx-utils: testam will skip the UCX comparison"
    fi
else
    echo "ucx_perftest is not installed and cannot be (needs apt-get as root): testam will skip the UCX comparison"
fi

section "build"
command -v cargo >/dev/null 2>&1 || { echo "cargo is not installed (https://rustup.rs)" >&2; exit 1; }
cargo build --release -p rgex -p rgex-benches

# Where testam writes: its --json argument (the last one wins), and the
# SVG next to it with the extension replaced, as testam does.
json=bench-results/testam.json
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
    if [ "${args[i]}" = "--json" ]; then
        json=${args[i + 1]}
    fi
done
dir=$(dirname -- "$json")
base=$(basename -- "$json")
case "$base" in
    ?*.*) svg="$dir/${base%.*}.svg" ;;
    *) svg="$dir/$base.svg" ;;
esac
mkdir -p "$dir"
log="$dir/testam.log"

section "testam: 2 ranks, bound to CPUs"
target/release/rgex-run -n 2 --bind --timeout 900 target/release/testam "$@" 2>&1 | tee "$log"

section "results"
echo "JSON records: $(realpath -- "$json")"
echo "SVG plot:     $(realpath -- "$svg")"
echo "full output:  $(realpath -- "$log")"
