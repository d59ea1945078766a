#!/usr/bin/env bash
# The conduit matrix: the multi-process conformance suite (AM, NP, RMA, LC,
# IMMEDIATE, NBI, teams, collectives, atomics, VIS, jobs started by mpirun
# through PMIx, jobs spanning two emulated nodes, faults) on every conduit
# and provider this machine can run, and the layers above rgex (the
# examples, rgex-pgas's jobs, rgex-shmem's C tests) on every conduit (see
# scope `suite`): ofi on loopback only, ibv on the software verbs device
# (RGEX_IBV_DEVICE=soft: an HCA emulated over shared memory), and scc on
# its emulated non-coherent memory with the stale-read checker on. Called
# by ci/test.sh; run alone with `bash ci/conduits.sh [ROW...]` (rows: see
# `rows` below).
set -euo pipefail
cd "$(dirname "$0")/.."

# Network rule: libfabric may only use the loopback interface.
export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo

# name | environment | scope. Scope `full`: the whole suite below;
# `mixed`: only the jobs spanning two emulated nodes. With the bypass on
# and every rank on this node, smp carries all but the mixed jobs' remote
# half, and the bypass's routing is the same code whatever the network
# (ShmBypass over NetConduit): ibv-soft-bypass (the ibv conduit's issue
# asks for its whole suite with the bypass on; about 75 s) runs it whole,
# the ofi bypass rows only where their network carries something
# (mixed), and rgex-shmem's C tests. ofi-tcp-bypass ran it whole too
# until session 34: 170 s a CI run, of which the mixed jobs and the C
# tests were 46 s; the rest was smp under another name. Scope `suite`:
# the whole suite less rgex-examples and rgex-pgas. Those reach a
# conduit only through rgex's API, which the suite checks on every row,
# and their own code is the same whatever the provider: they run on
# every conduit and bypass setting (ofi-tcp, both ibv rows, scc), not
# again on ofi's other providers (about 40 s a row).
# rgex-shmem's C tests run on every row (issue 41 asks for each
# provider with the bypass on and off): 28 s on ofi-shm, 200 s on
# ofi-sockets (2 cores, measured once).
#
# VIS_CASES=20 (vis_conformance's random strided and list cases per rank
# pair; 60 elsewhere, smp's included): on ofi without the bypass the RMA
# mechanism makes one put or get per list fragment through the provider,
# and the list cases were most of each such VIS job (four ranks over tcp:
# 23 s with 60 cases, 10 s with 20). Twenty still take every combination
# of put or get, form, vector or indexed, and a large region for each
# kind and direction (see `cases` in tests/src/bin/vis_conformance.rs),
# so the provider still carries many puts and gets of 1 to 3000
# bytes; the other 40 add fragment layouts, which rgex-vis cuts the same
# way on every conduit (all 60 run on smp and on the other rows).
rows=(
    "ofi-tcp|RGEX_CONDUIT=ofi RGEX_OFI_PROVIDER=tcp;ofi_rxm RGEX_SHM_BYPASS=0 VIS_CASES=20|full"
    "ofi-sockets|RGEX_CONDUIT=ofi RGEX_OFI_PROVIDER=sockets RGEX_SHM_BYPASS=0 VIS_CASES=20|suite"
    "ofi-shm|RGEX_CONDUIT=ofi RGEX_OFI_PROVIDER=shm RGEX_SHM_BYPASS=0 VIS_CASES=20|suite"
    "ofi-tcp-bypass|RGEX_CONDUIT=ofi RGEX_OFI_PROVIDER=tcp;ofi_rxm RGEX_SHM_BYPASS=1|mixed"
    "ofi-sockets-bypass|RGEX_CONDUIT=ofi RGEX_OFI_PROVIDER=sockets RGEX_SHM_BYPASS=1|mixed"
    "ofi-shm-bypass|RGEX_CONDUIT=ofi RGEX_OFI_PROVIDER=shm RGEX_SHM_BYPASS=1|mixed"
    "ibv-soft|RGEX_CONDUIT=ibv RGEX_IBV_DEVICE=soft RGEX_SHM_BYPASS=0|full"
    "ibv-soft-bypass|RGEX_CONDUIT=ibv RGEX_IBV_DEVICE=soft RGEX_SHM_BYPASS=1|full"
    "scc|RGEX_CONDUIT=scc RGEX_SCC_CHECK=1|full"
    "ibv-soft-udp|RGEX_CONDUIT=ibv RGEX_IBV_DEVICE=soft RGEX_SHM_BYPASS=0 RGEX_IBV_SOFT_WIRE=udp RGEX_IBV_SOFT_ADDR=127.0.0.1|loss"
    "cluster|RGEX_CONDUIT=ofi RGEX_OFI_PROVIDER=tcp;ofi_rxm RGEX_SHM_BYPASS=1 RGEX_CLUSTER_TESTS=1|cluster"
    "cluster-ibv|RGEX_CONDUIT=ibv RGEX_IBV_DEVICE=soft RGEX_IBV_SOFT_WIRE=udp RGEX_SHM_BYPASS=1 RGEX_CLUSTER_TESTS=1|cluster"
)
# cluster: jobs across the hosts of ci/cluster.sh's test cluster (3 hosts
# x 2 ranks under srun --mpi=pmix: smp to the rank on one's own host, ofi
# tcp over the bridge to the four others; tests/tests/cluster.rs, root
# only), and a host lost mid-job. Opt-in, run only when named
# (`bash ci/conduits.sh cluster`): about 4 min on 2 cores
# (atomics_conformance's token ring of 5000 hops over six oversubscribed
# ranks is 100 s of it; the lost host 30 s, mostly Slurm noticing the
# node failure), past the budget of a row.
# loss: the soft verbs device's UDP wire (on loopback here; across hosts
# in the cluster row): the device's own semantic suite on that wire, then
# the AM and RMA conformance programs with packets lost at 0.1%, 1% and
# 5% and every 50th reordered, every check exact. The jobs (loss_jobs)
# are the two-rank ones, one at a time: the AM programs with their
# floods (one with tiny queues), and the RMA programs on the native and
# the reference path. The ACK timeout is 16 ms there (code 12): a lost
# packet that is the last of a burst, or a lost ACK, costs one timeout,
# and a blocking RMA job at 5% meets about a thousand (77 s at 67 ms,
# 22 s at 16 ms; at the default 1 s it would take minutes). That short a
# timeout needs each rank on a CPU: the soft device is software, so a
# rank ACKs only when it polls, and 7 unanswered timeouts (112 ms) end
# the QP. With 8 ranks, or several jobs at once, on 2 cores a live rank
# was declared dead that way (even at 67 ms, a CI run in session 32), so
# the jobs of 3 to 8 ranks run in the ibv rows, on the shared-memory wire.
loss_jobs=(two_ranks two_ranks_flood_with_tiny_queues mapped_two_ranks reference_two_ranks)
# mixed: jobs spanning two emulated nodes (runs on the rows with the
# bypass on, where node-local and remote peers meet in one job).
suites=(--test am --test rma --test coll --test atomics --test vis --test protocol --test pmix --test mixed --test futures --test cancel --test progress_thread --test settings --test segments --test endpoints --test signal --test stats)
# faults, departure and lifecycle run after the others: ranks die or leave early (see stale_shm below).

# libfabric's shm provider names its shared-memory file "pid:domain:ep";
# a rank killed by the faults tests leaves it behind, and when the pid is
# recycled (pid_max is 32768 here) a new endpoint fails fi_enable with
# EBUSY (libfabric issue #6476). Remove the files of processes that are gone.
stale_shm() {
    local f pid
    for f in /dev/shm/*; do
        [[ $(basename -- "$f") =~ ^([0-9]+):[0-9]+:[0-9]+$ ]] || continue
        pid=${BASH_REMATCH[1]}
        [ -d "/proc/$pid" ] || rm -f -- "$f"
    done
}

mkdir -p target
want=("$@")
failed=()
# Every cargo command here selects the whole workspace (--workspace, then
# the test targets by name), as ci/test.sh's `cargo test --workspace`
# does: features are resolved over the packages selected, and `-p
# rgex-tests` alone leaves rgex-core's `testing` and rgex-net's
# `loopback` (dev-dependency features) off, so it rebuilt most crates a
# second time, and `-p rgex-pgas` and `-p rgex-shmem` a third and a
# fourth (175 s of the matrix on 2 cores). With one selection the
# workspace test step's build serves the matrix whole. Test target
# names are unique in the workspace but for `run` (rgex-examples',
# rgex-pgas'), which the layers run both of.
# rgex-shmem's C tests build the library (cdylib) and rgex-run themselves.
cargo build --workspace --bins --tests --examples >/dev/null
for row in "${rows[@]}"; do
    name=${row%%|*}
    scope=${row##*|}
    envs=${row#*|}
    envs=${envs%|*}
    if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx "$name"; then
        continue
    fi
    if [ "$scope" = cluster ] && [ ${#want[@]} -eq 0 ]; then
        echo "matrix $name: opt-in, not run (bash ci/conduits.sh cluster; see the comment at its row)"
        continue
    fi
    printf '\n--- conduit matrix: %s (%s; %s)\n' "$name" "$envs" "$scope"
    row_start=$SECONDS
    stale_shm
    export RGEX_SKIP_LOG="$PWD/target/matrix-$name.skips"
    rm -f "$RGEX_SKIP_LOG"
    # shellcheck disable=SC2086 # word splitting of the row's settings is wanted
    # (in run_row's bodies)
    if [ "$scope" = cluster ]; then
        # FI_TCP_IFACE=cl0 on the hosts: tests/tests/cluster.rs sets it
        # for the ranks (the matrix's lo is this machine's, not theirs).
        run_row() { env $envs cargo test --workspace --test cluster -- --test-threads=2 2>&1; }
    elif [ "$scope" = loss ]; then
        run_row() {
            env $envs cargo test --workspace --test soft_device 2>&1 || return 1
            local pct
            for pct in 0.1 1 5; do
                echo "--- $name: loss_pct=$pct"
                env $envs RGEX_IBV_QP_TIMEOUT=12 RGEX_IBV_SOFT_FAULTS="loss_pct=$pct,reorder_every=50" \
                    cargo test --workspace --test am --test rma -- --exact --test-threads=1 "${loss_jobs[@]}" 2>&1 || return 1
            done
        }
    elif [ "$scope" = mixed ]; then
        run_row() {
            env $envs cargo test --workspace --test mixed 2>&1 &&
                env $envs cargo test --workspace --test c 2>&1
        }
    else
        layers() {
            if [ "$scope" = suite ]; then
                env $envs cargo test --workspace --test c 2>&1
            else
                env $envs cargo test --workspace --test run 2>&1 &&
                    env $envs cargo test --workspace --test c 2>&1
            fi
        }
        run_row() {
            env $envs cargo test --no-fail-fast --workspace "${suites[@]}" 2>&1 &&
                layers &&
                env $envs cargo test --workspace --test faults --test departure --test lifecycle --test stopped_peer 2>&1
        }
        if [ "$scope" = suite ]; then
            echo "matrix $name: scope suite: rgex-examples and rgex-pgas run on ofi-tcp, not here (ci/conduits.sh says why); rgex-shmem's C tests run here"
        fi
    fi
    if run_row | tee "target/matrix-$name.log" |
        grep -E '^test result|FAILED|panicked'; [ "${PIPESTATUS[0]}" = 0 ]; then
        echo "matrix $name: passed ($((SECONDS - row_start)) s)"
    else
        echo "matrix $name: FAILED after $((SECONDS - row_start)) s (log: target/matrix-$name.log)"
        failed+=("$name")
    fi
    # Skipped checks and tests (a skip is not a pass): how many, and which.
    if [ -f "$RGEX_SKIP_LOG" ]; then
        echo "matrix $name: $(wc -l <"$RGEX_SKIP_LOG") skips"
        sort "$RGEX_SKIP_LOG" | uniq -c | sed 's/^/    /'
    else
        echo "matrix $name: no skips"
    fi
done
stale_shm
if [ ${#failed[@]} -gt 0 ]; then
    echo "conduit matrix failed: ${failed[*]}"
    exit 1
fi
echo "conduit matrix passed"
