#!/usr/bin/env bash
# rgex-pgas against lamellar (its shmem lamellae, one process per PE on
# this node) and against raw rgex, in the same run: builds everything in
# release, then runs interleaved rounds on each rank count of
#   rgex-pgas dht        vs lamellar dht (AMs)       vs raw rgex dht (AMs)
#   rgex-pgas histogram  (rpc_ff, atomics, batched) vs lamellar histogram (am,
#                        atomics, batch_add)
# and prints each tool's best round and the ratios rgex-pgas/lamellar and
# rgex-pgas/raw rgex. Every program checks its own results exactly; a
# failed check fails the script. Timings are reported, never judged.
#
# Usage: pgas/bench-lamellar/run.sh [--quick] [--rounds N] [--ranks "2 4"]
#        [--keys K] [--window W] [--updates U] [--bins B] [--no-bind]
#        [--no-build]
# Environment: LAMELLAR_THREADS (threads per lamellar PE, default 2: a
# main thread and one worker, lamellar's minimum), LAMELLAR_HEAP_SIZE
# (bytes, default 1 GiB), NICE (niceness of the builds, default 10).
# --bind (the default) binds rank i to CPU i mod ncpu on both sides
# (rgex-run --bind; taskset for lamellar, as lamellar's own launcher
# script does); --no-bind leaves placement to the kernel.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

rounds=3
ranks="2 4"
keys=20000
window=64
updates=200000
bins=1024
bind=1
build=1
timeout_s=300
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) rounds=3 keys=1000 updates=5000 bins=256 timeout_s=120 ;;
        --rounds) rounds=$2; shift ;;
        --ranks) ranks=$2; shift ;;
        --keys) keys=$2; shift ;;
        --window) window=$2; shift ;;
        --updates) updates=$2; shift ;;
        --bins) bins=$2; shift ;;
        --no-bind) bind=0 ;;
        --no-build) build=0 ;;
        *) echo "run.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done
export LAMELLAR_THREADS=${LAMELLAR_THREADS:-2}
export LAMELLAR_HEAP_SIZE=${LAMELLAR_HEAP_SIZE:-$((1 << 30))}

section() { printf '\n=== %s ===\n' "$*"; }

if [ "$build" = 1 ]; then
    section "build (release)"
    (cd "$root" &&
        nice -n "${NICE:-10}" cargo build --release -p rgex-pgas --examples &&
        nice -n "${NICE:-10}" cargo build --release -p rgex-examples --bin dht &&
        nice -n "${NICE:-10}" cargo build --release -p rgex --bin rgex-run)
    (cd "$here" && nice -n "${NICE:-10}" cargo build --release --bins)
fi
rel=$root/target/release
lrel=$here/target/release
for f in "$rel/rgex-run" "$rel/dht" "$rel/examples/dht" "$rel/examples/histogram" \
    "$lrel/lamellar_dht" "$lrel/lamellar_histogram"; do
    [ -x "$f" ] || { echo "run.sh: $f is not built (run without --no-build)" >&2; exit 1; }
done

ncpu=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One rgex job: rank 0's output (rgex-run prefixes each line with the rank).
rgex_job() {
    local n=$1
    shift
    local b=()
    [ "$bind" = 1 ] && b=(--bind)
    "$rel/rgex-run" -n "$n" "${b[@]}" --timeout "$timeout_s" "$@" >"$work/out" 2>&1 || {
        echo "FAILED: rgex-run -n $n $*" >&2
        cat "$work/out" >&2
        return 1
    }
    cat "$work/out"
}

# One lamellar shmem job: one process per PE with lamellar's environment
# (LAMELLAR_BACKEND=shmem, LAMELLAR_NUM_PES, LAMELLAR_PE_ID, a job id of
# its own that names its shared-memory segments); PE 0's output. The
# segments the job leaves in /dev/shm (named lamellar_<hash>) are the
# ones that were not there before it, and are removed.
lamellar_job() {
    local n=$1
    shift
    local job=$(((RANDOM << 15 | RANDOM) + 1))
    local before
    before=$(cd /dev/shm && ls -d lamellar_* 2>/dev/null | sort || true)
    local pids=() pe
    for ((pe = 0; pe < n; pe++)); do
        local pin=()
        [ "$bind" = 1 ] && pin=(taskset -c $((pe % ncpu)))
        LAMELLAR_BACKEND=shmem LAMELLAR_NUM_PES=$n LAMELLAR_PE_ID=$pe LAMELLAR_JOB_ID=$job \
            timeout "$timeout_s" "${pin[@]}" "$@" >"$work/pe$pe" 2>&1 &
        pids+=($!)
    done
    local rc=0 p
    for p in "${pids[@]}"; do
        wait "$p" || rc=$?
    done
    local after
    after=$(cd /dev/shm && ls -d lamellar_* 2>/dev/null | sort || true)
    comm -13 <(echo "$before") <(echo "$after") | while read -r f; do
        [ -n "$f" ] && rm -f "/dev/shm/$f"
    done
    if [ "$rc" != 0 ]; then
        echo "FAILED (status $rc): lamellar job of $n PEs: $*" >&2
        for ((pe = 0; pe < n; pe++)); do
            echo "--- PE $pe" >&2
            tail -20 "$work/pe$pe" >&2
        done
        return 1
    fi
    cat "$work/pe0"
}

# The number before WORD in the output on stdin ("12345 inserts/s").
rate() { grep -o "[0-9.]* $1" | head -1 | cut -d' ' -f1; }

# Require the program's own line saying its results were checked.
checked() {
    grep -q "$1" <<<"$2" || {
        echo "run.sh: no '$1' line in:" >&2
        echo "$2" >&2
        return 1
    }
}

# best[name] = the highest rate seen over the rounds.
declare -A best
record() {
    local key=$1 v=$2
    [ -n "$v" ] || { echo "run.sh: no rate for $key" >&2; exit 1; }
    printf '  %-40s %14.0f\n' "$key" "$v"
    if [ -z "${best[$key]:-}" ] || awk -v a="$v" -v b="${best[$key]}" 'BEGIN { exit !(a > b) }'; then
        best[$key]=$v
    fi
}

section "parameters"
echo "ranks: $ranks; rounds: $rounds; dht: $keys keys per rank, window $window;" \
    "histogram: $updates updates per rank into $bins bins per rank;" \
    "bind: $bind; LAMELLAR_THREADS=$LAMELLAR_THREADS; cpus: $ncpu"
echo "note: raw rgex's dht (examples/src/bin/dht.rs) has its own workload (values of 0..=200" \
    "bytes, a hashed owner, every request issued before any answer is awaited); rgex-pgas's dht" \
    "runs it too ('raw' mode) for the pgas/raw ratio"

for ((round = 1; round <= rounds; round++)); do
    for n in $ranks; do
        section "round $round, $n ranks"
        out=$(rgex_job "$n" "$rel/examples/dht" "$keys" "$window")
        checked "pgas dht: $((keys * n)) keys on $n ranks ($keys inserted by each), every find exact" "$out"
        record "dht inserts/s $n rgex-pgas" "$(rate inserts/s <<<"$out")"
        record "dht finds/s $n rgex-pgas" "$(rate finds/s <<<"$out")"

        out=$(lamellar_job "$n" "$lrel/lamellar_dht" "$keys" "$window")
        checked "lamellar dht: $((keys * n)) keys on $n ranks ($keys inserted by each), every find exact" "$out"
        record "dht inserts/s $n lamellar" "$(rate inserts/s <<<"$out")"
        record "dht finds/s $n lamellar" "$(rate finds/s <<<"$out")"

        # rgex-pgas on raw rgex's own workload, for the pgas/raw ratio.
        out=$(rgex_job "$n" "$rel/examples/dht" "$keys" 0 raw)
        checked "pgas dht: $((keys * n)) keys on $n ranks ($keys inserted by each), every find exact" "$out"
        record "dht inserts/s $n rgex-pgas raw-workload" "$(rate inserts/s <<<"$out")"
        record "dht finds/s $n rgex-pgas raw-workload" "$(rate finds/s <<<"$out")"
        # The same with a future per insert instead of one promise.
        out=$(rgex_job "$n" "$rel/examples/dht" "$keys" 0 raw-futures)
        checked "pgas dht: $((keys * n)) keys on $n ranks ($keys inserted by each), every find exact" "$out"
        record "dht inserts/s $n rgex-pgas raw-futures" "$(rate inserts/s <<<"$out")"

        out=$(rgex_job "$n" "$rel/dht" "$keys" rate)
        checked "dht: $((keys * n)) keys on $n ranks ($keys inserted by each), every lookup exact" "$out"
        record "dht inserts/s $n raw rgex" "$(rate inserts/s <<<"$out")"
        record "dht finds/s $n raw rgex" "$(rate lookups/s <<<"$out")"

        for how in rpc_ff atomics batched; do
            out=$(rgex_job "$n" "$rel/examples/histogram" "$how" "$updates" "$bins")
            checked "pgas histogram ($how): $((updates * n)) updates into $((bins * n)) bins on $n ranks, every bin exact" "$out"
            record "histogram $how $n rgex-pgas" "$(rate updates/s <<<"$out")"
        done
        for how in am atomics batch_add; do
            out=$(lamellar_job "$n" "$lrel/lamellar_histogram" "$how" "$updates" "$bins")
            checked "lamellar histogram ($how): $((updates * n)) updates into $((bins * n)) bins on $n ranks, every bin exact" "$out"
            record "histogram $how $n lamellar" "$(rate updates/s <<<"$out")"
        done
    done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
section "best of $rounds rounds (ops/s, all ranks) and ratios"
printf '%-6s %-22s %14s %14s %14s %10s %10s\n' ranks measure rgex-pgas lamellar "raw rgex" pgas/lam pgas/raw
for n in $ranks; do
    for m in inserts finds; do
        p=${best["dht $m/s $n rgex-pgas"]}
        l=${best["dht $m/s $n lamellar"]}
        r=${best["dht $m/s $n raw rgex"]}
        pr=${best["dht $m/s $n rgex-pgas raw-workload"]}
        printf '%-6s %-22s %14.0f %14.0f %14.0f %10s %10s\n' "$n" "dht $m/s" "$p" "$l" "$r" \
            "$(ratio "$p" "$l")" "$(ratio "$pr" "$r")"
    done
    pf=${best["dht inserts/s $n rgex-pgas raw-futures"]}
    r=${best["dht inserts/s $n raw rgex"]}
    printf '%-6s %-22s %14.0f %14s %14.0f %10s %10s\n' "$n" "dht inserts/s, futures" "$pf" - "$r" - \
        "$(ratio "$pf" "$r")"
    # rgex-pgas's better variant against lamellar's better AM-style and
    # atomic-style variants, and each pair as measured.
    pr=${best["histogram rpc_ff $n rgex-pgas"]}
    pa=${best["histogram atomics $n rgex-pgas"]}
    pb=${best["histogram batched $n rgex-pgas"]}
    la=${best["histogram am $n lamellar"]}
    lt=${best["histogram atomics $n lamellar"]}
    lb=${best["histogram batch_add $n lamellar"]}
    printf '%-6s %-22s %14.0f %14.0f %14s %10s\n' "$n" "hist rpc_ff vs am" "$pr" "$la" - "$(ratio "$pr" "$la")"
    printf '%-6s %-22s %14.0f %14.0f %14s %10s\n' "$n" "hist atomics vs atomics" "$pa" "$lt" - "$(ratio "$pa" "$lt")"
    printf '%-6s %-22s %14.0f %14.0f %14s %10s\n' "$n" "hist batched vs batch_add" "$pb" "$lb" - "$(ratio "$pb" "$lb")"
done
echo
echo "pgas/raw compares rgex-pgas's dht run on raw rgex's own workload (its 'raw' mode) with raw rgex's dht:"
echo "its inserts are counted by one promise, as raw rgex counts acknowledgements; the 'futures' row"
echo "keeps a future per insert ('raw-futures' mode)."
