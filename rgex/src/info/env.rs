//! Every `RGEX_` environment variable rgex reads, with what it means: one
//! table, shown by `rgex-info` (a test checks that every `RGEX_` name in
//! the crates' sources is in it).

/// One environment variable and its meaning.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct EnvVar {
    /// The name (`RGEX_CONDUIT`).
    pub name: &'static str,
    /// What it sets, its values and default.
    pub meaning: &'static str,
}

const fn v(name: &'static str, meaning: &'static str) -> EnvVar {
    EnvVar { name, meaning }
}

/// The variables, grouped by who reads them.
pub const ENV_VARS: &[EnvVar] = &[
    // Job and conduit choice.
    v("RGEX_CONDUIT", "the conduit: smp (default), ofi, ibv or scc"),
    v("RGEX_SEGMENT_SIZE", "segment per rank, e.g. 64M (default 32M)"),
    v("RGEX_HOST", "the node name ranks compare to find who shares memory (default: the host name)"),
    v("RGEX_POLITE", "1: wait by sleeping instead of spinning (default: on when a node runs more ranks than CPUs)"),
    v("RGEX_BOOTSTRAP", "set by rgex-run: the launcher's bootstrap socket (unset: PMIx under srun/mpirun/prterun, else a job of one rank)"),
    v("RGEX_JOB", "set by rgex-run: the job's id (names shared-memory objects)"),
    v("RGEX_RANK", "set by rgex-run: this process's rank"),
    v("RGEX_SIZE", "set by rgex-run: the number of ranks"),
    v("RGEX_RMA", "auto (default: direct copies to node-local peers) or reference (RMA over active messages everywhere)"),
    v("RGEX_ATOMICS", "auto (default), or require reference (active messages), shared (CPU atomics on mapped segments) or offload (the conduit's NIC atomics)"),
    v("RGEX_PROGRESS_THREAD", "1: start a progress thread at init that polls while the application computes and sleeps on the conduit's wait object when idle (smp: a futex senders ring; ofi: the CQ's fd where the provider has one, tcp here; ibv: the completion channel, or the soft device's wake socket; else 200 us parks); default 0"),
    v("RGEX_PROGRESS_IDLE_MS", "a progress thread's longest sleep on its wait object, in milliseconds, at least 1 (default 10): a safety net, since senders wake a sleeping thread"),
    v("RGEX_VIS", "VIS mechanism: auto (default), direct, rma or am"),
    v("RGEX_LOG", "which diagnostics init's stderr subscriber prints, as tracing filter directives: warn, rgex_net=debug,rgex=warn, off, ... (default rgex=warn: rgex's errors and warnings; ignored when the application sets its own subscriber first)"),
    v("RGEX_PGAS_RAW", "rgex-pgas: bytes at the start of every segment kept out of the shared heap for raw rgex RMA through pg.client() (Pgas::raw_range), e.g. 300K; 0 for none (default 64K, a quarter of a segment under 256K)"),
    v("RGEX_PGAS_WINDOW", "rgex-pgas: calls a rank may have waiting unserved at each target (rpc, rpc_ff, rput_then's call, dist_object fetches), 1 to 2^32-1 (default 256)"),
    // smp.
    v("RGEX_SMP_QUEUE_DEPTH", "smp: AM queue cells per receiver, a power of two from 2 to 1048576 (default 64)"),
    v("RGEX_SMP_MAX_MEDIUM", "smp: largest Medium payload (default 64K, at least 512)"),
    // ofi.
    v("RGEX_OFI_LIBRARY", "ofi: the libfabric to load, a path or a name the dynamic loader searches (default libfabric.so.1)"),
    v("RGEX_OFI_PROVIDER", "ofi: the provider as fi_info -l names it: tcp;ofi_rxm, sockets, shm, verbs;ofi_rxm, cxi, ... (default: libfabric's choice)"),
    v("RGEX_OFI_DOMAIN", "ofi: the domain (NIC) name: lo, mlx5_0, cxi0, ... (default: libfabric's choice)"),
    v("RGEX_SHM_BYPASS", "ofi: 1 (default) sends node-local peers through shared memory, 0 through the network"),
    v("RGEX_OFI_MAX_MEDIUM", "ofi: largest Medium payload to a network peer (default 8K)"),
    v("RGEX_OFI_WINDOW", "ofi: credits per sender and direction, 2 to 4096 (default 8)"),
    v("RGEX_OFI_SEND_BUFFERS", "ofi: registered send buffers for requests (default 64)"),
    v("RGEX_OFI_TIMEOUT", "ofi: seconds a peer we wait on may stay silent (pings unanswered) before it is declared dead; covers every wait: credits, AM replies, barriers and collectives, RMA, atomics, VIS, peer_gone (default 300, 0: never)"),
    v("RGEX_OFI_PUT_COMPLETION", "ofi: how a put learns it landed: delivery, readback or auto (default)"),
    v("RGEX_OFI_INJECT", "ofi: largest AM message sent with fi_inject (default: the provider's inject size; 0: never)"),
    // scc.
    v("RGEX_SCC_CHECK", "scc: 1 reports stale reads (and fails the job), strict panics at the first"),
    v("RGEX_SCC_DEPTH", "scc: message slots per sender in each receiver's buffer"),
    v("RGEX_SCC_MAX_MEDIUM", "scc: largest Medium payload"),
    v("RGEX_SCC_TIMEOUT", "scc: seconds a peer may stay silent before it is declared dead"),
    // ibv.
    v("RGEX_IBV_LIBRARY", "ibv: the libibverbs to load, a path or a name the dynamic loader searches (default libibverbs.so.1)"),
    v("RGEX_IBV_DEVICE", "ibv: the RDMA device (mlx5_0, ...; default the first with an active port), or soft for the software device"),
    v("RGEX_IBV_PORT", "ibv: the device's port (default the first active one)"),
    v("RGEX_IBV_GID_INDEX", "ibv: the GID table index (RoCE; default 0)"),
    v("RGEX_IBV_QP_TIMEOUT", "ibv: ACK timeout code 0 to 31, 4.096 us x 2^code before a retry (default 18, about 1.07 s; 0: forever)"),
    v("RGEX_IBV_RETRY_COUNT", "ibv: retries of an unanswered request, 0 to 7, before the peer is declared dead (default 7)"),
    v("RGEX_IBV_RNR_RETRY", "ibv: retries after a receiver-not-ready NAK, 0 to 7 (default 6; 7: forever)"),
    v("RGEX_IBV_MTU", "ibv: path MTU in bytes, 256 to 4096 (default the port's active MTU)"),
    v("RGEX_IBV_INLINE", "ibv: largest AM message sent inline (default 128; 0: never)"),
    v("RGEX_IBV_SQ_DEPTH", "ibv: send work requests outstanding per QP (default 128)"),
    v("RGEX_IBV_MAX_MEDIUM", "ibv: largest Medium payload to a network peer, 512 to 1M (default 8K)"),
    v("RGEX_IBV_WINDOW", "ibv: credits per sender and direction, 2 to 4096 (default 8); receive buffers follow from it"),
    v("RGEX_IBV_SEND_BUFFERS", "ibv: registered send buffers for requests (default 64)"),
    v("RGEX_IBV_TIMEOUT", "ibv: seconds a peer we wait on may stay silent (pings unanswered) before it is declared dead; covers every wait: credits, AM replies, barriers and collectives, RMA, atomics, VIS, peer_gone (default 300, 0: never)"),
    v("RGEX_IBV_SOFT_SERVICE", "ibv soft device: 0 turns off the per-process service thread that answers RDMA while no verb is called (default 1)"),
    v("RGEX_IBV_SOFT_FAULTS", "ibv soft device: faults to inject (testing)"),
    // PMIx.
    v("RGEX_PMIX_LIBRARY", "PMIx bootstrap: the libpmix to load, a path or a name the dynamic loader searches (default libpmix.so.2)"),
    // Testing.
    v("RGEX_FAULT_SWEEP_PAUSE_MS", "testing (fault-injection builds): pause between a fault sweep's sends"),
];

/// The entry for `name`, if rgex reads it.
pub fn lookup(name: &str) -> Option<&'static EnvVar> {
    ENV_VARS.iter().find(|e| e.name == name)
}
