//! The registry: every `RGEX_` variable rgex reads, one entry each, the
//! single source `rgex-info`, the README's table, the unknown-variable
//! warning and every layer's typed configuration read from.
//!
//! Each entry is a constant a reader names ([`SEGMENT_SIZE`]); [`VARS`]
//! lists them all in this order.

use super::{Fallback, Var};
use Fallback::{Behaviour, Value};

/// Declares each entry as a constant and lists them all in `VARS`.
macro_rules! registry {
    ($($id:ident: $name:literal, $fallback:expr, $reader:literal, $meaning:literal;)*) => {
        $(
            #[doc = concat!("`", $name, "`: ", $meaning)]
            pub const $id: Var = Var {
                name: $name,
                fallback: $fallback,
                reader: $reader,
                meaning: $meaning,
            };
        )*
        /// Every registered variable, grouped by who reads it.
        pub const VARS: &[Var] = &[$($id),*];
    };
}

registry! {
    // The job and the conduit.
    CONDUIT: "RGEX_CONDUIT", Value("smp"), "rgex",
        "the conduit: smp, ofi, ibv or scc";
    SEGMENT_SIZE: "RGEX_SEGMENT_SIZE", Value("32M"), "smp, scc",
        "segment per rank, a size such as 64M (ofi and ibv register smp's)";
    HOST: "RGEX_HOST", Behaviour("the host name"), "smp",
        "the node name ranks compare to find who shares memory (tests split one machine into nodes with it)";
    POLITE: "RGEX_POLITE", Behaviour("on when a node runs more ranks than CPUs"), "rgex-core",
        "1: wait by yielding the CPU instead of spinning";
    BOOTSTRAP: "RGEX_BOOTSTRAP", Behaviour("PMIx under srun, mpirun or prterun, else a job of one rank"), "rgex-run",
        "set by rgex-run: the launcher's bootstrap socket";
    JOB: "RGEX_JOB", Behaviour("solo and the process id"), "rgex-run",
        "set by rgex-run: the job's id, which names its shared-memory objects";
    RANK: "RGEX_RANK", Behaviour("0"), "rgex-run",
        "set by rgex-run: this process's rank";
    SIZE: "RGEX_SIZE", Behaviour("1"), "rgex-run",
        "set by rgex-run: the number of ranks";
    // The layers.
    RMA: "RGEX_RMA", Value("auto"), "rgex-endpoint",
        "auto (direct copies to node-local peers) or reference (RMA over active messages everywhere)";
    PROGRESS_THREAD: "RGEX_PROGRESS_THREAD", Value("0"), "rgex-endpoint",
        "1: start a progress thread at init that polls while the application computes and sleeps on the conduit's wait object when idle (smp: a futex senders ring; ofi: the CQ's fd where the provider has one, tcp here; ibv: the completion channel, or the soft device's wake socket; else 200 us parks)";
    COLL_BOARD: "RGEX_COLL_BOARD", Value("1"), "rgex-endpoint",
        "1: the world team's collectives run on the members' shared-memory boards when every member has one mapped (smp, or the node-local bypass with the whole job on one node); 0: over active messages everywhere";
    PROGRESS_IDLE_MS: "RGEX_PROGRESS_IDLE_MS", Value("10"), "rgex-endpoint",
        "a progress thread's longest sleep on its wait object, in milliseconds, at least 1: a safety net, since senders wake a sleeping thread";
    LOG: "RGEX_LOG", Value("rgex=warn"), "rgex",
        "which diagnostics init's stderr subscriber prints, as tracing filter directives: warn, rgex_net=debug,rgex=warn, off, ... (rgex=warn: rgex's errors and warnings; ignored when the application sets its own subscriber first)";
    ATOMICS: "RGEX_ATOMICS", Value("auto"), "rgex-atomics",
        "auto (the fastest every member offers), or require reference (active messages), shared (CPU atomics on mapped segments) or offload (the conduit's NIC atomics); a requirement some member cannot meet fails domain creation";
    VIS: "RGEX_VIS", Value("auto"), "rgex-vis",
        "the VIS mechanism: auto, direct, rma, am or native (the conduit's own vector transfer)";
    PGAS_RAW: "RGEX_PGAS_RAW", Behaviour("64K, a quarter of a segment under 256K"), "rgex-pgas",
        "bytes at the start of every segment kept out of the shared heap for raw rgex RMA through pg.client() (Pgas::raw_range), a size such as 300K; 0 for none";
    PGAS_WINDOW: "RGEX_PGAS_WINDOW", Value("256"), "rgex-pgas",
        "calls a rank may have waiting unserved at each target (rpc, rpc_ff, rput_then's call, dist_object fetches), 1 to 2^32-1";
    // When a rank dies or hangs.
    BACKTRACE: "RGEX_BACKTRACE", Value("0"), "rgex",
        "1: a rank killed by SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT, or panicking, prints a backtrace of every thread (by gdb; without it, of the failing thread, unwound in the process), each line prefixed [rank R], then dies as it would have (rgex-run reports 128+N)";
    GDB: "RGEX_GDB", Value("gdb"), "rgex",
        "the debugger RGEX_BACKTRACE runs as gdb -batch -p PID, a path or a name looked up in PATH; 0: none, unwind in the process instead";
    FREEZE: "RGEX_FREEZE", Value("0"), "rgex",
        "1: a rank that crashes (RGEX_BACKTRACE's signals, or a panic) stops before it dies and prints [rank R] frozen: gdb -p PID, then waits RGEX_FREEZE_SECS";
    FREEZE_ON_ERROR: "RGEX_FREEZE_ON_ERROR", Value("0"), "rgex",
        "1: as RGEX_FREEZE, and also where rgex reports an error no caller is told of (an ERROR line of its diagnostics): the thread that reports it stops there, then goes on";
    FREEZE_SECS: "RGEX_FREEZE_SECS", Value("300"), "rgex",
        "seconds a frozen rank waits for a debugger before it goes on, 1 to 86400 (in gdb, set {int}&rgex_thaw = 1 ends the wait at once)";
    // When a job is slow: statistics and tracing.
    STATS: "RGEX_STATS", Value("0"), "rgex",
        "count, per rank: 1 (or all) for every category, else a list of am, rma, atomics, vis, coll, poll, net, pgas (AMs by kind and size, FP/NP, would-blocks, malformed; puts and gets by path (mapped, native, reference, cma) and by completion (blocking, event, nbi, counted), puts-with-signal by path; atomics by implementation and op; VIS by mechanism; collectives; polls and time blocked in waits; the network kit's stalls, retries, backlog peak and read-backs; rgex-pgas's rpcs, batches, window stalls and heap); read by Client::stats(), written at exit to RGEX_STATS_FILE";
    STATS_FILE: "RGEX_STATS_FILE", Behaviour("none: counts are not written"), "rgex",
        "where each rank writes its counts as JSON at finalize and at exit, %r the rank (rgex-run --stats sets it)";
    TRACE: "RGEX_TRACE", Value("0"), "rgex",
        "trace, per rank, the categories of RGEX_STATS (1 for all), or a tracing filter (rgex=debug,rgex::rma=trace: trace is every event, debug the spans alone): an event a line for each AM injected and delivered, RMA operation started and completed, atomic and VIS operation, poll that delivered, would-block and network stall, with peer, size, handler, path and the time in ns since init; spans for waits that blocked and collectives";
    TRACE_FILE: "RGEX_TRACE_FILE", Value("rgex-trace-%r.jsonl"), "rgex",
        "where each rank writes its trace, one JSON object a line, %r the rank";
    // smp.
    SMP_QUEUE_DEPTH: "RGEX_SMP_QUEUE_DEPTH", Value("64"), "smp",
        "AM queue cells per receiver, a power of two from 2 to 1048576";
    SMP_MAX_MEDIUM: "RGEX_SMP_MAX_MEDIUM", Value("64K"), "smp",
        "largest Medium payload, at least 512";
    // The network conduits' kit.
    SHM_BYPASS: "RGEX_SHM_BYPASS", Value("1"), "ofi, ibv",
        "1 sends node-local peers (this rank too) through shared memory, 0 through the network; the segment lives in shared memory either way";
    // ofi.
    OFI_LIBRARY: "RGEX_OFI_LIBRARY", Value("libfabric.so.1"), "ofi",
        "the libfabric to load, a path or a name the dynamic loader searches";
    OFI_PROVIDER: "RGEX_OFI_PROVIDER", Behaviour("libfabric's choice"), "ofi",
        "the provider as fi_info -l names it: tcp;ofi_rxm, sockets, shm, verbs;ofi_rxm, cxi, gni, ...";
    OFI_DOMAIN: "RGEX_OFI_DOMAIN", Behaviour("libfabric's choice"), "ofi",
        "the domain (NIC) name: lo, mlx5_0, cxi0, ...";
    OFI_MAX_MEDIUM: "RGEX_OFI_MAX_MEDIUM", Value("8K"), "ofi",
        "largest Medium payload to a network peer, 512 to 1M (node-local peers: RGEX_SMP_MAX_MEDIUM)";
    OFI_WINDOW: "RGEX_OFI_WINDOW", Value("8"), "ofi",
        "credits per sender and direction (messages it may have unconsumed at a receiver), 2 to 4096; receive buffers follow from it";
    OFI_SEND_BUFFERS: "RGEX_OFI_SEND_BUFFERS", Value("64"), "ofi",
        "registered send buffers for requests, 2 to 65536 (replies get half as many, RMA bounce buffers and atomic operands 32)";
    OFI_TIMEOUT: "RGEX_OFI_TIMEOUT", Value("300"), "ofi",
        "seconds a peer we wait on may stay silent (pings unanswered) before it is declared dead, 0: never; it bounds every wait on a network peer: credits, AM replies, barriers and collectives, RMA, atomics, VIS, peer_gone";
    OFI_PUT_COMPLETION: "RGEX_OFI_PUT_COMPLETION", Value("auto"), "ofi",
        "how a put learns it landed: delivery (FI_DELIVERY_COMPLETE on each write), readback (NBI puts: a read after the writes, asked when someone waits) or auto (readback on tcp, sockets, shm and udp, delivery elsewhere)";
    OFI_INJECT: "RGEX_OFI_INJECT", Behaviour("the provider's inject size"), "ofi",
        "largest AM message, header included, sent with fi_inject (no send completion to reap, the send buffer is free at once), at most the provider's inject size; 0: never";
    // scc.
    SCC_CHECK: "RGEX_SCC_CHECK", Value("0"), "scc",
        "1 reports stale reads (and fails the job), strict panics at the first";
    SCC_DEPTH: "RGEX_SCC_DEPTH", Value("4"), "scc",
        "message slots per sender in each receiver's buffer, a power of two";
    SCC_MAX_MEDIUM: "RGEX_SCC_MAX_MEDIUM", Value("1K"), "scc",
        "largest Medium payload, 512 to 1M";
    SCC_TIMEOUT: "RGEX_SCC_TIMEOUT", Value("120"), "scc",
        "seconds any wait may last before it fails naming what it waited for";
    // ibv.
    IBV_LIBRARY: "RGEX_IBV_LIBRARY", Value("libibverbs.so.1"), "ibv",
        "the libibverbs to load, a path or a name the dynamic loader searches";
    IBV_DEVICE: "RGEX_IBV_DEVICE", Behaviour("the first device with an active port"), "ibv",
        "the RDMA device as ibv_devices lists it (mlx5_0, ...), or soft for the software verbs device";
    IBV_PORT: "RGEX_IBV_PORT", Behaviour("the first active port"), "ibv",
        "the device's port, from 1";
    IBV_GID_INDEX: "RGEX_IBV_GID_INDEX", Value("0"), "ibv",
        "the GID table index, 0 to 255: InfiniBand addresses peers by LID and ignores it; RoCE needs the index of the GID of the interface's address and RoCE version, usually v2 (show_gids, or /sys/class/infiniband/DEV/ports/PORT/gid_attrs/types/INDEX)";
    IBV_QP_TIMEOUT: "RGEX_IBV_QP_TIMEOUT", Value("18"), "ibv",
        "ACK timeout code, 0 to 31: a request unanswered for 4.096 us x 2^code is retried (18: about 1.07 s); 0 waits forever (verbs then never finds a dead peer)";
    IBV_RETRY_COUNT: "RGEX_IBV_RETRY_COUNT", Value("7"), "ibv",
        "retries of an unanswered request, 0 to 7, before it completes IBV_WC_RETRY_EXC_ERR and the peer is declared dead (with the defaults, after about 8 s)";
    IBV_RNR_RETRY: "RGEX_IBV_RNR_RETRY", Value("6"), "ibv",
        "retries after a receiver-not-ready NAK, 0 to 7 (7: forever), before IBV_WC_RNR_RETRY_EXC_ERR; the credits keep a receive posted for every message, so an RNR is a bug, reported rather than waited out (the receiver asks for 2.56 ms between retries)";
    IBV_MTU: "RGEX_IBV_MTU", Behaviour("the port's active MTU"), "ibv",
        "path MTU in bytes: 256, 512, 1024, 2048 or 4096, at most the port's active MTU; each pair of ranks uses the smaller of their two";
    IBV_INLINE: "RGEX_IBV_INLINE", Value("128"), "ibv",
        "largest AM message (header and payload) sent inline, copied into the work request at post time so the send buffer is free at once; at most what the QP grants (the conduit uses the smaller); 0: never";
    IBV_SQ_DEPTH: "RGEX_IBV_SQ_DEPTH", Value("128"), "ibv",
        "send work requests outstanding per QP (one QP per rank), 1 to 1048576 and at most the device's max_qp_wr; a full queue makes a post wait in the kit's backlog (IMMEDIATE: would-block)";
    IBV_MAX_MEDIUM: "RGEX_IBV_MAX_MEDIUM", Value("8K"), "ibv",
        "largest Medium payload to a network peer, 512 to 1M (node-local peers: RGEX_SMP_MAX_MEDIUM)";
    IBV_WINDOW: "RGEX_IBV_WINDOW", Value("8"), "ibv",
        "credits per sender and direction (messages it may have unconsumed at a receiver), 2 to 4096; receive buffers follow from it";
    IBV_SEND_BUFFERS: "RGEX_IBV_SEND_BUFFERS", Value("64"), "ibv",
        "registered send buffers for requests, 2 to 65536 (replies get half as many, RMA bounce buffers and atomic operands 32)";
    IBV_TIMEOUT: "RGEX_IBV_TIMEOUT", Value("300"), "ibv",
        "seconds a peer we wait on may stay silent (pings unanswered) before it is declared dead, 0: never; it bounds every wait on a network peer: credits, AM replies, barriers and collectives, RMA, atomics, VIS, peer_gone";
    IBV_SOFT_SERVICE: "RGEX_IBV_SOFT_SERVICE", Value("1"), "ibv",
        "soft device: 0 turns off the per-process service thread that answers RDMA while no verb is called";
    IBV_SOFT_FAULTS: "RGEX_IBV_SOFT_FAULTS", Behaviour("none"), "ibv",
        "soft device, testing: faults to inject, comma-separated: drop_every=N, drop_all=1, loss_pct=P (each packet lost with probability P%), reorder_every=N (every Nth packet sent after the next), delay_us=U (each packet held U us), kill_after_ms=M (then the device stops answering)";
    IBV_SOFT_WIRE: "RGEX_IBV_SOFT_WIRE", Value("shm"), "ibv",
        "soft device: how its packets travel, shm (rings in shared memory, one host) or udp (datagrams, across hosts, as rxe's RoCEv2); the same on every rank";
    IBV_SOFT_ADDR: "RGEX_IBV_SOFT_ADDR", Value("127.0.0.1"), "ibv",
        "soft device, udp wire: this host's IPv4 address to bind, or an interface's name whose address to bind (each host its own: the cluster tests give cl0)";
    // PMIx.
    PMIX_LIBRARY: "RGEX_PMIX_LIBRARY", Value("libpmix.so.2"), "rgex-pmix",
        "the libpmix to load, a path or a name the dynamic loader searches";
    // Testing and benchmarks.
    SHMEM_BENCH: "RGEX_SHMEM_BENCH", Behaviour("shmem_bench_rgex beside testshmem"), "rgex-benches",
        "benchmarks: the rgex-shmem build of shmem/bench/shmem_bench.c that testshmem runs (ci/bench.sh builds it)";
    FAULT_SWEEP_PAUSE_MS: "RGEX_FAULT_SWEEP_PAUSE_MS", Behaviour("no pause"), "rgex-endpoint",
        "testing (fault-injection builds): milliseconds between a fault sweep's sends";
    FAULT_CMA_REFUSED: "RGEX_FAULT_CMA_REFUSED", Behaviour("the kernel decides"), "rgex-endpoint",
        "testing (fault-injection builds): 1 makes this process find cross-memory attach refused, as Yama's ptrace_scope 2 would, so node-local peers' client segments take active messages";
    SKIP_LOG: "RGEX_SKIP_LOG", Behaviour("skips go to stderr only"), "rgex-tests",
        "testing: the file the conduit matrix collects skipped tests in";
    MPI_PEER: "RGEX_MPI_PEER", Behaviour("mpi_peer next to the benchmark"), "rgex-benches",
        "benchmarks: the MPI peer program to compare with";
    MPI_COLL: "RGEX_MPI_COLL", Behaviour("mpi_coll next to testcoll"), "rgex-benches",
        "benchmarks: the MPI collectives program testcoll compares with";
    SHMEM_LIBDIR: "RGEX_SHMEM_LIBDIR", Behaviour("the workspace's target/<profile>"), "oshcc",
        "rgex-shmem: where oshcc finds librgex_shmem and its headers' build";
    SHMEM_PROFILE: "RGEX_SHMEM_PROFILE", Behaviour("whichever of debug and release was built last"),
        "oshcc, oshrun", "rgex-shmem: the cargo profile oshcc and oshrun take the library and rgex-run from";
    RUN: "RGEX_RUN", Behaviour("rgex-run beside oshrun, else in the profile's target dir, else on PATH"),
        "oshrun", "rgex-shmem: the rgex-run that oshrun starts the job with";
}
