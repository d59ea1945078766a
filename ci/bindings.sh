#!/usr/bin/env bash
# The committed bindings (conduits/ofi/libfabric-sys/src/bindings.rs,
# pmix/pmix-sys/src/bindings.rs) still match the installed headers:
# regenerate them with bindgen and fail on any difference, so they cannot
# drift silently. The normal build needs
# none of this (the bindings are committed and libfabric is loaded at run
# time); only this check needs the headers, libclang and pkg-config, which
# it installs when missing (Debian, as root). Called by ci/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
dpkg -s libfabric-dev >/dev/null 2>&1 || need+=(libfabric-dev)
dpkg -s libpmix-dev >/dev/null 2>&1 || need+=(libpmix-dev)
dpkg -s libclang-dev >/dev/null 2>&1 || need+=(libclang-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if [ ${#need[@]} -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "installing for the bindings check: ${need[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y "${need[@]}" >/dev/null 2>&1 ||
            { apt-get update >/dev/null && apt-get install -y "${need[@]}"; }
    else
        echo "the bindings check needs: ${need[*]} (install them with apt-get as root)" >&2
        exit 1
    fi
fi

conduits/ofi/libfabric-sys/regenerate.sh --check
pmix/pmix-sys/regenerate.sh --check
