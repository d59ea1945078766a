#!/usr/bin/env bash
# The benchmark job, from a fresh Debian machine as root: install the peer
# tool (best-effort), build, and run every bench through the launcher:
# testam, testsmall, rma_mt and testfaddperf on two ranks, testimm (with
# RGEX_SMP_QUEUE_DEPTH=4) on eight. Arguments go to every bench: --quick (a smoke run, < 20 s
# each), --reps N, --json PATH (testam's records; the other benches write
# <bench>.json in the same directory).
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
        echo "could not install ucx-utils: testam and testsmall will skip the UCX comparison"
    fi
else
    echo "ucx_perftest is not installed and cannot be (needs apt-get as root): testam and testsmall will skip the UCX comparison"
fi

section "system packages"
bash ci/deps.sh

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

# The other benches: the same arguments, their records next to testam's
# (a later --json wins, so each gets its own file).
run_bench() {
    local bench=$1 ranks=$2
    shift 2
    local bind=--bind
    [ "$ranks" -le "$(nproc)" ] || bind=
    section "$bench: $ranks ranks${bind:+, bound to CPUs}"
    "$@" target/release/rgex-run -n "$ranks" $bind --timeout 900 "target/release/$bench" \
        "${args[@]}" --json "$dir/$bench.json" 2>&1 | tee "$dir/$bench.log"
}
run_bench testsmall 2 env
# Small receive queues (room for about three 4 KiB messages plus one), so
# an inattentive receiver pushes back. IMMEDIATE's gain is bounded by
# 1 - 1/receivers (with one receiver there is nobody to move on to), so
# this runs 8 ranks: 7 receivers, which mostly sleep, so oversubscribing
# 2 CPUs costs little here.
run_bench testimm 8 env RGEX_SMP_QUEUE_DEPTH=4
run_bench rma_mt 2 env
run_bench testfaddperf 2 env
run_bench testvisperf 2 env

section "results"
echo "JSON records: $(realpath -- "$json")"
echo "SVG plot:     $(realpath -- "$svg")"
echo "full output:  $(realpath -- "$log")"
for bench in testsmall testimm rma_mt testfaddperf testvisperf; do
    echo "$bench: $(realpath -- "$dir/$bench.json") $(realpath -- "$dir/$bench.svg") $(realpath -- "$dir/$bench.log")"
done
