#!/usr/bin/env bash
# The benchmark job, from a fresh Debian machine as root: install the peer
# tools (ucx_perftest; Open MPI, whose peer program benches/peers/mpi_peer.c
# is built with mpicc; best-effort), build, and run every bench through the
# launcher:
# testam, testsmall, rma_mt, testfaddperf and testvisperf on two ranks,
# testimm (with RGEX_SMP_QUEUE_DEPTH=4) on eight; then testam and
# testsmall over the ofi conduit (providers tcp;ofi_rxm, sockets and shm,
# loopback), testfaddperf over tcp and sockets, and testvisperf over tcp
# and shm, each against the provider's own floor (fi_pingpong), skipped
# if this build has no ofi
# conduit; testam, testsmall and testfaddperf over the ibv conduit on the
# software verbs device (the emulation's figures, labelled so); testcoll; then
# OpenSHMEM beside Open MPI's (testshmem, shmem/bench/shmem_bench.c);
# last the scc epochs in modelled cycles; at the end one HTML page of it all,
# bench-results/index.html (bench-page: every JSON file's tables, rgex
# beside its floors and peers, every SVG plot inlined, the machine as
# described before the benches ran, testam's round table; self-contained,
# to open in a browser). Arguments go to every
# bench: --quick (a smoke run, < 20 s each), --reps N, --json PATH
# (testam's records; the other benches write <bench>.json in the same
# directory).
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

section "peer tool: Open MPI (mpicc, mpirun; best-effort)"
# Installed whenever apt-get can: ci/deps.sh brings openmpi-bin (mpicc and
# mpirun) for the tests, but not libopenmpi-dev, whose mpi.h the peer
# program needs, so "mpicc is there" does not mean it can build it.
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    if apt-get install -y openmpi-bin libopenmpi-dev >/dev/null ||
        { apt-get update >/dev/null && apt-get install -y openmpi-bin libopenmpi-dev >/dev/null; }; then
        echo "Open MPI: openmpi-bin and libopenmpi-dev installed"
    else
        echo "could not install Open MPI: the benches will skip the MPI comparison"
    fi
elif command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
    echo "found $(command -v mpicc) and $(command -v mpirun)"
else
    echo "mpicc is not installed and cannot be (needs apt-get as root): the benches will skip the MPI comparison"
fi

section "system packages"
bash ci/deps.sh

section "build"
command -v cargo >/dev/null 2>&1 || { echo "cargo is not installed (https://rustup.rs)" >&2; exit 1; }
cargo build --release -p rgex -p rgex-benches -p rgex-shmem
# The Open MPI peer, next to the benches (rgex_benches::mpi looks there).
if command -v mpicc >/dev/null 2>&1; then
    mpicc -O2 -o target/release/mpi_peer benches/peers/mpi_peer.c ||
        echo "mpicc failed: the benches will skip the MPI comparison"
    # testcoll's peer (rgex's collectives beside Open MPI's).
    mpicc -O2 -o target/release/mpi_coll benches/peers/mpi_coll.c ||
        echo "mpicc failed on mpi_coll: testcoll will skip the MPI comparison"
fi

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

section "machine (for the report page)"
target/release/bench-page --machine "$dir/machine.json" --note "ci/bench.sh${*:+ $*}"

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

# The ofi conduit over loopback, per provider: testam and testsmall, plus
# testfaddperf (tcp, sockets) and testvisperf (tcp, shm), on two ranks,
# node-local traffic through the network
# (RGEX_SHM_BYPASS=0). Each bench measures the raw provider in the same run
# (fi_pingpong, see benches/src/fabric.rs) and reports its figures against
# it. Network rule: libfabric uses the loopback interface only. The sockets
# provider's progress thread spins FI_SOCKETS_PE_WAITTIME ms (default 10)
# after every wake-up; on a small node that turns each transfer into a wait
# for a time slice (milliseconds), so its runs set 0, for rgex and the
# floor alike. Records go to $dir/ofi-<provider>/ (';' becomes '_'). A build
# without the ofi conduit (rgex::init: "this build offers ...") skips the
# section; any other failure fails the script.
ofi_providers=("tcp;ofi_rxm" "sockets" "shm")
ofi_dirs=()
# testvisperf runs over tcp and shm: its inter-node set (64-byte
# elements) and its remote case (the AM pipeline, NP vs FP) across a real
# network stack and across a provider whose messages cost a fifth as
# much (where a copy saved weighs more); its shared-copy set needs a
# mapped peer and says it is skipped. testfaddperf skips shm, whose
# atomics the conduit declines (its AM reference is measured on tcp).
ofi_benches_for() {
    case $1 in
    "tcp;ofi_rxm") echo testam testsmall testfaddperf testvisperf ;;
    shm) echo testam testsmall testvisperf ;;
    *) echo testam testsmall testfaddperf ;;
    esac
}
run_ofi_bench() {
    local prov=$1 bench=$2 out=$3
    local bind=--bind
    [ 2 -le "$(nproc)" ] || bind=
    local extra=()
    [ "$prov" != sockets ] || extra=(FI_SOCKETS_PE_WAITTIME=0)
    section "ofi ($prov) $bench: 2 ranks${bind:+, bound to CPUs}"
    env RGEX_CONDUIT=ofi RGEX_OFI_PROVIDER="$prov" RGEX_SHM_BYPASS=0 \
        FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo "${extra[@]}" \
        target/release/rgex-run -n 2 $bind --timeout 900 "target/release/$bench" \
        "${args[@]}" --json "$out/$bench.json" 2>&1 | tee "$out/$bench.log"
}
ofi_skipped=
for prov in "${ofi_providers[@]}"; do
    out="$dir/ofi-${prov//;/_}"
    mkdir -p "$out"
    for bench in $(ofi_benches_for "$prov"); do
        if ! run_ofi_bench "$prov" "$bench" "$out"; then
            if grep -q "this build offers" "$out/$bench.log"; then
                ofi_skipped=$(grep -m1 "this build offers" "$out/$bench.log" | sed 's/^.*error: //')
                break 2
            fi
            echo "ofi ($prov) $bench failed (log: $out/$bench.log)" >&2
            exit 1
        fi
    done
    ofi_dirs+=("$out")
done
if [ -n "$ofi_skipped" ]; then
    section "ofi conduit"
    echo "skipped: the ofi conduit is not available in this build ($ofi_skipped)"
fi

# The ibv conduit on the software verbs device (RGEX_IBV_DEVICE=soft, the
# bypass off so both ranks go through it): testam, testsmall and
# testfaddperf as a functional check. Their figures are the emulation's
# (an HCA emulated over shared memory by the ranks' own engines), not a
# network's: every record names the device so (rgex_benches::label), and
# there is no provider floor to compare with. Records go to $dir/ibv-soft/.
ibv_out="$dir/ibv-soft"
mkdir -p "$ibv_out"
for bench in testam testsmall testfaddperf; do
    bind=--bind
    [ 2 -le "$(nproc)" ] || bind=
    section "ibv (software verbs device: the emulation's figures) $bench: 2 ranks${bind:+, bound to CPUs}"
    env RGEX_CONDUIT=ibv RGEX_IBV_DEVICE=soft RGEX_SHM_BYPASS=0 \
        target/release/rgex-run -n 2 $bind --timeout 900 "target/release/$bench" \
        "${args[@]}" --json "$ibv_out/$bench.json" 2>&1 | tee "$ibv_out/$bench.log"
done

# The scc conduit's epochs in modelled cycles (48 emulated cores in one
# process; deterministic, under a second).
# Collectives: testcoll starts its own jobs (rgex-run and mpirun, 2, 4 and
# 8 ranks, interleaved rounds).
section "testcoll: rgex's collectives beside Open MPI's, 2, 4 and 8 ranks"
target/release/testcoll "${args[@]}" --json "$dir/testcoll.json" 2>&1 | tee "$dir/testcoll.log"

# OpenSHMEM: the same C program (shmem/bench/shmem_bench.c) built with
# rgex's oshcc and with Open MPI's (on PATH from openmpi-bin and
# libopenmpi-dev, installed above); testshmem runs the two in interleaved
# rounds, over shared memory (smp; UCX posix) and loopback tcp (ofi
# tcp;ofi_rxm; UCX tcp), with the cache-line floor, and writes
# testshmem.json and testshmem-tcp.json. Open MPI's crash in
# shmem_finalize (UCX 1.13) comes after its last figure and is reported
# as the peer's defect.
section "testshmem: rgex-shmem beside Open MPI's OpenSHMEM, 2 PEs"
RGEX_SHMEM_LIBDIR=target/release shmem/bin/oshcc -O2 -o target/release/shmem_bench_rgex shmem/bench/shmem_bench.c
rm -f target/release/shmem_bench_ompi
if command -v oshcc >/dev/null 2>&1 && command -v oshrun >/dev/null 2>&1; then
    oshcc -O2 -o target/release/shmem_bench_ompi shmem/bench/shmem_bench.c ||
        echo "Open MPI's oshcc failed: testshmem will skip the Open MPI comparison"
else
    echo "Open MPI's oshcc or oshrun is missing: testshmem will skip the Open MPI comparison"
fi
target/release/testshmem "${args[@]}" --json "$dir/testshmem.json" 2>&1 | tee "$dir/testshmem.log"

section "scc_epochs: modelled cycles of post/start/complete/wait vs targets"
scc_args=()
for a in "$@"; do [ "$a" = --quick ] && scc_args+=(--quick); done
target/release/scc_epochs "${scc_args[@]}" --json "$dir/scc_epochs.json" 2>&1 | tee "$dir/scc_epochs.log"

section "results"
echo "JSON records: $(realpath -- "$json")"
echo "SVG plot:     $(realpath -- "$svg")"
echo "full output:  $(realpath -- "$log")"
for bench in testsmall testimm rma_mt testfaddperf testvisperf; do
    echo "$bench: $(realpath -- "$dir/$bench.json") $(realpath -- "$dir/$bench.svg") $(realpath -- "$dir/$bench.log")"
done
echo "scc_epochs: $(realpath -- "$dir/scc_epochs.json") $(realpath -- "$dir/scc_epochs.log")"
echo "testcoll: $(realpath -- "$dir/testcoll.json") $(realpath -- "$dir/testcoll.log")"
echo "testshmem: $(realpath -- "$dir/testshmem.json") $(realpath -- "$dir/testshmem-tcp.json") $(realpath -- "$dir/testshmem.log")"
echo "ibv (software verbs device): $(realpath -- "$ibv_out")"
for out in "${ofi_dirs[@]}"; do
    for bench in testam testsmall testfaddperf testvisperf; do
        [ -f "$out/$bench.log" ] || continue
        echo "$(basename -- "$out") $bench: $(realpath -- "$out/$bench.json") $(realpath -- "$out/$bench.log")"
    done
done
if [ -n "$ofi_skipped" ]; then
    echo "ofi: skipped (not in this build)"
fi

# One page of every JSON file and plot under $dir (files an earlier run
# left there too: each section says when its file was written). A file
# it cannot read fails the script, as a broken bench would.
section "report page"
target/release/bench-page "$dir"
