#!/usr/bin/env bash
# A test cluster on this machine, run by Slurm (issue 42):
#
#   bash ci/cluster.sh up [-H HOSTS]      start it (default 3 hosts)
#   bash ci/cluster.sh run SRUN-ARGS...   srun --mpi=pmix SRUN-ARGS on it,
#                                         e.g. run -N 3 -n 6 PROGRAM ARGS
#   bash ci/cluster.sh host N CMD...      run CMD on host N (its namespaces)
#   bash ci/cluster.sh lose N             host N lost: its link down, then
#                                         every process on it killed
#                                         (slurmd, slurmstepd, ranks)
#   bash ci/cluster.sh down               stop it, leaving nothing behind
#   bash ci/cluster.sh status             what is running
#
# Each host hostN (N = 1..H) is a network namespace, a UTS namespace with
# the hostname hostN and a mount namespace with private tmpfs on /dev/shm
# and /tmp (Slurm's PMIx plugin and libpmix keep per-node rendezvous
# files in /tmp, as on real nodes) and the cluster's /etc/hosts bound
# over the machine's. One
# holder process (`sleep infinity`) keeps a host's namespaces alive;
# everything else enters them with nsenter. The hosts' interfaces, all
# named cl0 (so FI_TCP_IFACE=cl0 is right on every host), are veth pairs
# to a bridge br0 in a namespace of its own. Addresses: hostN is
# 198.18.0.N/24 (the benchmarking range); they exist only inside these
# namespaces, which have no other route: nothing else on the machine is
# reachable from them, or is ever a target. No interface is ever created
# in the machine's own namespace (veth pairs are made in the bridge's
# namespace with their far end placed straight into the host's).
#
# Daemons: munged in the bridge's namespace (its socket is a file, so
# every host reaches it), slurmctld on host1, one slurmd per host
# (`slurmd -N hostN` in that host's namespaces). Debian's slurm-wlm 22.05,
# installed here when missing; its mpi_pmix plugin gives srun --mpi=pmix.
# No cgroups: proctrack/linuxproc, task/none. State, logs, spools
# (SlurmdSpoolDir per node) and the munge key lie under $RGEX_CLUSTER_DIR
# (default /var/tmp/rgex-cluster; not under /tmp, which is per host).
#
# `down` kills every process whose network or mount namespace is one of
# the cluster's (their inodes are written to $RGEX_CLUSTER_DIR/ns the
# moment each holder starts, so a half-made cluster is found too), waits
# for them to go (the namespaces, their interfaces and their /dev/shm
# tmpfs go with the last of them), then removes the directory. The
# machine's own /dev/shm and mount table are never touched.
#
# Testing hooks: RGEX_CLUSTER_FAIL_AFTER=STAGE (hosts, bridge, munge,
# slurmctld, slurmd) makes `up` fail after that stage, as a half-done up
# (tests/tests/cluster.rs checks that `down` still cleans everything).
set -euo pipefail

DIR=${RGEX_CLUSTER_DIR:-/var/tmp/rgex-cluster}
NET=198.18.0
IFACE=cl0
export SLURM_CONF=$DIR/slurm.conf

die() {
    echo "cluster: $*" >&2
    exit 1
}

need_root() {
    [ "$(id -u)" = 0 ] || die "needs root (network, UTS and mount namespaces, and the Slurm daemons)"
}

# Debian's Slurm and munge, installed when missing (as ci/deps.sh does).
deps() {
    local need=()
    command -v slurmctld >/dev/null 2>&1 || need+=(slurmctld)
    command -v slurmd >/dev/null 2>&1 || need+=(slurmd)
    command -v srun >/dev/null 2>&1 || need+=(slurm-wlm)
    command -v munged >/dev/null 2>&1 || need+=(munge)
    [ ${#need[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 || die "missing packages: ${need[*]} (no apt-get here to install them)"
    echo "cluster: installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y "${need[@]}" >/dev/null 2>&1 ||
        { apt-get update >/dev/null 2>&1 && apt-get install -y "${need[@]}" >/dev/null 2>&1; } ||
        die "could not install ${need[*]} with apt-get"
}

fail_after() {
    if [ "${RGEX_CLUSTER_FAIL_AFTER:-}" = "$1" ]; then
        die "failing after stage $1 (RGEX_CLUSTER_FAIL_AFTER)"
    fi
}

# The pid of host N's holder (N = 0: the bridge's namespace).
holder() {
    local f=$DIR/holder-$1.pid
    [ -s "$f" ] || die "no holder for ${2:-host $1} (is the cluster up? bash ci/cluster.sh up)"
    cat "$f"
}

# Start a holder: `unshare FLAGS` around a shell that writes its pid,
# runs SETUP and becomes `sleep infinity`. Its namespaces' inodes are
# recorded before anything else happens in them.
start_holder() {
    local n=$1 flags=$2 setup=$3 pid i
    rm -f "$DIR/holder-$n.pid"
    # shellcheck disable=SC2086 # the flags are words
    setsid unshare $flags -- /bin/sh -c "echo \$\$ > '$DIR/holder-$n.pid.tmp' && mv '$DIR/holder-$n.pid.tmp' '$DIR/holder-$n.pid' && $setup && exec sleep infinity" \
        </dev/null >>"$DIR/log/holder-$n.log" 2>&1 &
    for i in $(seq 100); do
        [ -s "$DIR/holder-$n.pid" ] && break
        sleep 0.05
    done
    pid=$(holder "$n")
    # Only the namespaces this holder made: the bridge's holder keeps the
    # machine's mount namespace, which must never be listed (down kills
    # what is in a listed namespace).
    local ns
    for ns in net mnt; do
        if [ "$(stat -L -c %i "/proc/$pid/ns/$ns")" != "$(stat -L -c %i "/proc/$$/ns/$ns")" ]; then
            stat -L -c %i "/proc/$pid/ns/$ns" >>"$DIR/ns"
        fi
    done
    # The setup runs after the pid is written: wait for the sleep.
    for i in $(seq 100); do
        [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sleep ] && return 0
        [ -d "/proc/$pid" ] || break
        sleep 0.05
    done
    die "holder $n did not come up (log: $DIR/log/holder-$n.log)"
}

# Run CMD in host N's namespaces.
on_host() {
    local n=$1 pid
    shift
    pid=$(holder "$n")
    nsenter -t "$pid" --net --uts --mount --wd="$PWD" -- "$@"
}

write_conf() {
    local hosts=$1 n
    {
        echo "127.0.0.1 localhost"
        for n in $(seq "$hosts"); do echo "$NET.$n host$n"; done
    } >"$DIR/hosts"
    cat >"$SLURM_CONF" <<EOF
# The test cluster of ci/cluster.sh (generated; removed by down).
ClusterName=rgex
SlurmctldHost=host1($NET.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=10
KillWait=5
UnkillableStepTimeout=30
InactiveLimit=0
MinJobAge=10
EOF
    # Two CPUs a node (whatever the machine has: config_overrides), so
    # srun's block distribution puts -n 6 -N 3 two ranks on each host;
    # more ranks than that need srun --overcommit.
    for n in $(seq "$hosts"); do
        echo "NodeName=host$n NodeAddr=$NET.$n CPUs=2 State=UNKNOWN" >>"$SLURM_CONF"
    done
    echo "PartitionName=hosts Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4" >>"$SLURM_CONF"
}

up() {
    local hosts=3 n
    while [ $# -gt 0 ]; do
        case $1 in
        -H) hosts=$2; shift 2 ;;
        *) die "up: unknown argument $1 (usage: up [-H HOSTS])" ;;
        esac
    done
    [[ $hosts =~ ^[0-9]+$ ]] && [ "$hosts" -ge 1 ] && [ "$hosts" -le 200 ] ||
        die "up: -H $hosts: the number of hosts must be 1 to 200 (one address each in $NET.0/24)"
    need_root
    case $DIR/ in /tmp/* | /dev/shm/*) die "RGEX_CLUSTER_DIR=$DIR: it must not lie under /tmp or /dev/shm (each host has its own of those)" ;; esac
    [ -e "$DIR" ] && die "$DIR exists: the cluster is up or was left half-made (bash ci/cluster.sh down)"
    deps
    mkdir -p "$DIR"/{log,run,ctld,munge,spool}
    : >"$DIR/ns"
    echo "$hosts" >"$DIR/hosts.count"
    write_conf "$hosts"

    for n in $(seq "$hosts"); do
        start_holder "$n" "--net --uts --mount --propagation private" \
            "hostname host$n && mount -t tmpfs -o mode=1777,size=1g rgex-shm /dev/shm && mount -t tmpfs -o mode=1777,size=1g rgex-tmp /tmp && mount --bind '$DIR/hosts' /etc/hosts && ip link set lo up"
    done
    fail_after hosts

    start_holder 0 "--net" "ip link set lo up && ip link add br0 type bridge && ip link set br0 up"
    local br pid
    br=$(holder 0)
    for n in $(seq "$hosts"); do
        pid=$(holder "$n")
        nsenter -t "$br" --net -- ip link add "h$n" type veth peer name "$IFACE" netns "$pid"
        nsenter -t "$br" --net -- ip link set "h$n" master br0 up
        on_host "$n" ip addr add "$NET.$n/24" dev "$IFACE"
        on_host "$n" ip link set "$IFACE" up
    done
    fail_after bridge

    # munge: a key of the cluster's own, a socket under $DIR.
    dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 0400 "$DIR/munge/munge.key"
    chmod 0700 "$DIR/munge"
    nsenter -t "$br" --net -- munged --force --socket="$DIR/munge/munge.socket" \
        --key-file="$DIR/munge/munge.key" --pid-file="$DIR/munge/munged.pid" \
        --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed"
    fail_after munge

    on_host 1 slurmctld -i
    fail_after slurmctld
    for n in $(seq "$hosts"); do
        mkdir -p "$DIR/spool/host$n"
        on_host "$n" slurmd -N "host$n"
    done
    fail_after slurmd
    on_host 1 srun --mpi=list 2>&1 | grep -qx '[[:space:]]*pmix' ||
        die "srun --mpi=list does not list pmix: Slurm's mpi_pmix plugin is missing (Debian: slurm-wlm-basic-plugins; it needs libpmix2)"

    # Every node idle (bounded: 60 s).
    local i state=
    for i in $(seq 300); do
        state=$(on_host 1 sinfo -h -N -o '%N %T' 2>/dev/null || true)
        if [ -n "$state" ] && ! grep -qv ' idle$' <<<"$state" &&
            [ "$(wc -l <<<"$state")" = "$hosts" ]; then
            echo "cluster: up: $hosts hosts ($NET.1-$hosts on $IFACE), slurmctld on host1, state in $DIR"
            return 0
        fi
        sleep 0.2
    done
    die "the nodes did not become idle within 60 s: $(tr '\n' ';' <<<"$state") (logs: $DIR/log)"
}

run() {
    need_root
    [ -s "$DIR/holder-1.pid" ] || die "the cluster is not up (bash ci/cluster.sh up)"
    # srun forwards this environment (--export=ALL is its default), less
    # this script's own settings (rgex warns of RGEX_ names it does not read).
    on_host 1 env -u RGEX_CLUSTER_DIR -u RGEX_CLUSTER_TESTS -u RGEX_CLUSTER_FAIL_AFTER \
        srun --mpi=pmix "$@"
}

host() {
    local n=${1:-}
    [[ $n =~ ^[0-9]+$ ]] || die "host: usage: host N CMD..."
    shift
    on_host "$n" "$@"
}

# Host N lost mid-job: its link goes down first (so no peer hears a
# connection reset: they must find out by their own timeouts), then every
# process in its network namespace but its holder is killed.
lose() {
    local n=${1:-} pid inode p
    [[ $n =~ ^[0-9]+$ ]] || die "lose: usage: lose N"
    pid=$(holder "$n")
    on_host "$n" ip link set "$IFACE" down
    inode=$(stat -L -c %i "/proc/$pid/ns/net")
    for p in $({ stat -L -c '%i %n' /proc/[0-9]*/ns/net 2>/dev/null || true; } |
        awk -v ns="$inode" '$1 == ns { split($2, f, "/"); print f[3] }'); do
        [ "$p" = "$pid" ] || kill -KILL "$p" 2>/dev/null || true
    done
    echo "cluster: host$n lost (link down, its processes killed)"
}

# Refuse a list of namespaces that names this script's own (the
# machine's): down would kill every process on the machine.
check_list() {
    local ns own
    [ -s "$DIR/ns" ] || return 0
    for ns in net mnt; do
        own=$(stat -L -c %i "/proc/$$/ns/$ns")
        if grep -qx "$own" "$DIR/ns"; then
            die "$DIR/ns lists this machine's own $ns namespace ($own): refusing to kill its processes (remove $DIR by hand)"
        fi
    done
}

# Every pid whose network or mount namespace is one of the cluster's
# (after check_list).
members() {
    [ -s "$DIR/ns" ] || return 0
    # One stat for all: "inode /proc/PID/ns/KIND" lines; the pids of
    # those whose inode is listed.
    # (Some are unreadable, and processes end meanwhile: stat fails then.)
    { stat -L -c '%i %n' /proc/[0-9]*/ns/net /proc/[0-9]*/ns/mnt 2>/dev/null || true; } |
        awk -v list="$DIR/ns" 'BEGIN { while ((getline l < list) > 0) ours[l] = 1 }
            ($1 in ours) { split($2, f, "/"); print f[3] }' | sort -un
}

down() {
    need_root
    [ -d "$DIR" ] || { echo "cluster: down: nothing to do ($DIR does not exist)"; return 0; }
    local i left=
    check_list
    for i in $(seq 100); do
        left=$(members | tr '\n' ' ')
        [ -z "$left" ] && break
        # shellcheck disable=SC2086 # a list of pids
        kill -KILL $left 2>/dev/null || true
        sleep 0.1
    done
    [ -z "$left" ] || die "down: processes still in the cluster's namespaces after 10 s: $left"
    rm -rf -- "$DIR"
    echo "cluster: down"
}

status() {
    [ -d "$DIR" ] || { echo "cluster: down"; return 0; }
    check_list
    echo "cluster: state in $DIR; processes in its namespaces:"
    local p
    for p in $(members); do
        echo "  $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
    done
    [ -s "$DIR/holder-1.pid" ] && on_host 1 sinfo -N 2>/dev/null || true
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
up) up "$@" ;;
down) down ;;
run) run "$@" ;;
host) host "$@" ;;
lose) need_root; lose "$@" ;;
status) status ;;
*) die "usage: bash ci/cluster.sh up [-H HOSTS] | run SRUN-ARGS... | host N CMD... | lose N | down | status" ;;
esac
