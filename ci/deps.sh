#!/usr/bin/env bash
# System packages the build needs, installed when missing (Debian, as root):
#   libfabric-dev, libfabric-bin  the ofi conduit's tests (libfabric1, loaded at run time;
#                                 the headers for ci/bindings.sh; fi_info, fi_pingpong)
#   clang, libclang-dev           bindgen, only for ci/bindings.sh's check of the committed
#                                 bindings (libfabric-sys, pmix-sys); the build needs neither
#   pkg-config                    finds the libfabric and PMIx headers for that check; and
#                                 rgex-shmem's install test builds C with rgex-shmem.pc
#   libpmix-dev                   the PMIx bootstrap's tests (libpmix2, loaded at run time
#                                 under srun --mpi=pmix, mpirun, prterun; headers for the check)
#   openmpi-bin                   mpirun, a PMIx launcher for the bootstrap's tests
#   libibverbs1, ibverbs-providers  the ibv conduit's real backend, loaded at run time
#                                 (no -dev package: nothing is linked; its tests load it)
#   gdb                           RGEX_BACKTRACE's backtrace of every thread (the diagnosis
#                                 tests check it; without gdb they check the in-process one)
#   chromium                      best-effort: the report page's browser test
#                                 (benches/tests/report_page) renders bench-page's page
#                                 headless; without it that test says it is skipped
# Sourced by ci/test.sh and ci/bench.sh; idempotent and quiet when all is there.
set -euo pipefail

need=()
dpkg -s libfabric-dev >/dev/null 2>&1 || need+=(libfabric-dev)
command -v fi_pingpong >/dev/null 2>&1 || need+=(libfabric-bin)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
dpkg -s libclang-dev >/dev/null 2>&1 || need+=(libclang-dev)
command -v clang >/dev/null 2>&1 || need+=(clang)
dpkg -s libpmix-dev >/dev/null 2>&1 || need+=(libpmix-dev)
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
dpkg -s libibverbs1 >/dev/null 2>&1 || need+=(libibverbs1)
dpkg -s ibverbs-providers >/dev/null 2>&1 || need+=(ibverbs-providers)
command -v gdb >/dev/null 2>&1 || need+=(gdb)

if [ ${#need[@]} -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "installing: ${need[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y "${need[@]}" >/dev/null 2>&1 ||
            { apt-get update >/dev/null && apt-get install -y "${need[@]}"; }
    else
        echo "missing system packages: ${need[*]} (install them with apt-get as root)" >&2
        exit 1
    fi
else
    echo "system packages present (libfabric $(pkg-config --modversion libfabric 2>/dev/null || echo '?'), PMIx $(pkg-config --modversion pmix 2>/dev/null || echo '?'))"
fi

# Debian's chromium, best-effort (large, and only one test needs it).
if ! command -v chromium >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        if apt-get install -y chromium >/dev/null 2>&1 ||
            { apt-get update >/dev/null 2>&1 && apt-get install -y chromium >/dev/null 2>&1; }; then
            echo "installed chromium (the report page's browser test)"
        else
            echo "could not install chromium: the report page's browser test will say it is skipped"
        fi
    else
        echo "chromium is not installed (apt-get install chromium, as root): the report page's browser test will say it is skipped"
    fi
fi
