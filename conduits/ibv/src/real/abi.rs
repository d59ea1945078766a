//! The parts of `<infiniband/verbs.h>` the real backend uses, written by
//! hand: `#[repr(C)]` structs laid out exactly as rdma-core's (the
//! libibverbs 1.1 ABI, stable since rdma-core's first release), and the
//! constants the backend passes or reads.
//!
//! The layouts were checked once against rdma-core 44's verbs.h (Debian
//! libibverbs-dev 44.0-2, x86_64) with a C program printing `sizeof`
//! and `offsetof`; the unit tests below hold those numbers. Nothing
//! here needs the header at build time.
//!
//! Only the fields the backend reads or writes have meaningful names;
//! the rest are kept for the layout. Structs the library allocates
//! (context, PD, MR, CQ, SRQ, QP) are only ever read through pointers
//! it returned.

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `struct ibv_device` (opaque: only its pointer is passed).
#[repr(C)]
pub(crate) struct IbvDevice {
    _opaque: [u8; 0],
}

/// `struct ibv_comp_channel`: the fd a CQ's events are read from.
#[repr(C)]
pub(crate) struct IbvCompChannel {
    pub context: *mut IbvContext,
    pub fd: c_int,
    pub refcnt: c_int,
}

/// `int (*req_notify_cq)(struct ibv_cq *, int solicited_only)`.
pub(crate) type ReqNotifyCqFn = unsafe extern "C" fn(*mut IbvCq, c_int) -> c_int;

/// `int (*poll_cq)(struct ibv_cq *, int, struct ibv_wc *)`.
pub(crate) type PollCqFn = unsafe extern "C" fn(*mut IbvCq, c_int, *mut IbvWc) -> c_int;
/// `int (*post_send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **)`.
pub(crate) type PostSendFn =
    unsafe extern "C" fn(*mut IbvQp, *mut IbvSendWr, *mut *mut IbvSendWr) -> c_int;
/// `int (*post_recv)(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **)`.
pub(crate) type PostRecvFn =
    unsafe extern "C" fn(*mut IbvQp, *mut IbvRecvWr, *mut *mut IbvRecvWr) -> c_int;
/// `int (*post_srq_recv)(struct ibv_srq *, struct ibv_recv_wr *, struct ibv_recv_wr **)`.
pub(crate) type PostSrqRecvFn =
    unsafe extern "C" fn(*mut IbvSrq, *mut IbvRecvWr, *mut *mut IbvRecvWr) -> c_int;

/// A slot of the ops table the backend does not call (`_compat_*`
/// placeholders and verbs it does not use): only its size matters.
type Unused = Option<unsafe extern "C" fn()>;

/// `struct ibv_context_ops`: 32 function pointers, in verbs.h's order,
/// the `_compat_` placeholders included. The inline verbs of verbs.h
/// (`ibv_poll_cq`, `ibv_post_send`, `ibv_post_recv`,
/// `ibv_post_srq_recv`) call through it, and so does the backend.
#[repr(C)]
pub(crate) struct IbvContextOps {
    /// `_compat_query_device` .. `_compat_dereg_mr` (7 slots), then
    /// `alloc_mw`, `bind_mw`, `dealloc_mw`, `_compat_create_cq`.
    _before_poll_cq: [Unused; 11],
    /// `poll_cq` (slot 11).
    pub poll_cq: Option<PollCqFn>,
    /// `req_notify_cq` (slot 12).
    pub req_notify_cq: Option<ReqNotifyCqFn>,
    /// `_compat_cq_event`, `_compat_resize_cq`, `_compat_destroy_cq`,
    /// `_compat_create_srq`, `_compat_modify_srq`, `_compat_query_srq`,
    /// `_compat_destroy_srq`.
    _before_post_srq_recv: [Unused; 7],
    /// `post_srq_recv` (slot 20).
    pub post_srq_recv: Option<PostSrqRecvFn>,
    /// `_compat_create_qp`, `_compat_query_qp`, `_compat_modify_qp`,
    /// `_compat_destroy_qp`.
    _before_post_send: [Unused; 4],
    /// `post_send` (slot 25).
    pub post_send: Option<PostSendFn>,
    /// `post_recv` (slot 26).
    pub post_recv: Option<PostRecvFn>,
    /// `_compat_create_ah`, `_compat_destroy_ah`, `_compat_attach_mcast`,
    /// `_compat_detach_mcast`, `_compat_async_event`.
    _after_post_recv: [Unused; 5],
}

/// `struct ibv_context`.
#[repr(C)]
pub(crate) struct IbvContext {
    /// The device it was opened on.
    pub device: *mut IbvDevice,
    /// The provider's ops table.
    pub ops: IbvContextOps,
    /// `cmd_fd`.
    pub cmd_fd: c_int,
    /// `async_fd`.
    pub async_fd: c_int,
    /// `num_comp_vectors`.
    pub num_comp_vectors: c_int,
    /// `mutex` (`pthread_mutex_t`).
    _mutex: libc::pthread_mutex_t,
    /// `abi_compat`.
    _abi_compat: *mut c_void,
}

/// `enum ibv_atomic_cap`: `IBV_ATOMIC_NONE`.
pub(crate) const IBV_ATOMIC_NONE: u32 = 0;

/// The name of an `enum ibv_atomic_cap` value.
pub(crate) const fn atomic_cap_name(cap: u32) -> &'static str {
    match cap {
        IBV_ATOMIC_NONE => "IBV_ATOMIC_NONE",
        1 => "IBV_ATOMIC_HCA",
        2 => "IBV_ATOMIC_GLOB",
        _ => "an unknown ibv_atomic_cap",
    }
}

/// `struct ibv_device_attr`.
#[repr(C)]
pub(crate) struct IbvDeviceAttr {
    pub fw_ver: [c_char; 64],
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: c_int,
    pub max_qp_wr: c_int,
    pub device_cap_flags: c_uint,
    pub max_sge: c_int,
    pub max_sge_rd: c_int,
    pub max_cq: c_int,
    pub max_cqe: c_int,
    pub max_mr: c_int,
    pub max_pd: c_int,
    pub max_qp_rd_atom: c_int,
    pub max_ee_rd_atom: c_int,
    pub max_res_rd_atom: c_int,
    pub max_qp_init_rd_atom: c_int,
    pub max_ee_init_rd_atom: c_int,
    /// `enum ibv_atomic_cap`.
    pub atomic_cap: u32,
    pub max_ee: c_int,
    pub max_rdd: c_int,
    pub max_mw: c_int,
    pub max_raw_ipv6_qp: c_int,
    pub max_raw_ethy_qp: c_int,
    pub max_mcast_grp: c_int,
    pub max_mcast_qp_attach: c_int,
    pub max_total_mcast_qp_attach: c_int,
    pub max_ah: c_int,
    pub max_fmr: c_int,
    pub max_map_per_fmr: c_int,
    pub max_srq: c_int,
    pub max_srq_wr: c_int,
    pub max_srq_sge: c_int,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

/// `enum ibv_port_state`: `IBV_PORT_ACTIVE`.
pub(crate) const IBV_PORT_ACTIVE: u32 = 4;
/// `IBV_LINK_LAYER_INFINIBAND` (`UNSPECIFIED`, 0, is InfiniBand too).
pub(crate) const IBV_LINK_LAYER_INFINIBAND: u8 = 1;
/// `IBV_LINK_LAYER_ETHERNET`.
pub(crate) const IBV_LINK_LAYER_ETHERNET: u8 = 2;

/// `struct _compat_ibv_port_attr`: what the exported `ibv_query_port`
/// (`IBVERBS_1.1`) fills. verbs.h's `ibv_query_port` is an inline over
/// it (or over the extended context's `query_port` with the larger
/// `struct ibv_port_attr`, which only adds `port_cap_flags2`); the
/// library copies exactly this many bytes.
#[repr(C)]
pub(crate) struct IbvPortAttrCompat {
    /// `enum ibv_port_state`.
    pub state: u32,
    /// `enum ibv_mtu`.
    pub max_mtu: u32,
    /// `enum ibv_mtu`.
    pub active_mtu: u32,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
}

/// `union ibv_gid` (16 bytes, aligned as its `__be64` view).
#[repr(C, align(8))]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvGid {
    pub raw: [u8; 16],
}

/// `struct ibv_pd`.
#[repr(C)]
pub(crate) struct IbvPd {
    pub context: *mut IbvContext,
    pub handle: u32,
}

/// `struct ibv_mr`.
#[repr(C)]
pub(crate) struct IbvMr {
    pub context: *mut IbvContext,
    pub pd: *mut IbvPd,
    pub addr: *mut c_void,
    pub length: usize,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

/// `struct ibv_cq`.
#[repr(C)]
pub(crate) struct IbvCq {
    pub context: *mut IbvContext,
    pub channel: *mut IbvCompChannel,
    pub cq_context: *mut c_void,
    pub handle: u32,
    /// Entries granted (at least those asked).
    pub cqe: c_int,
    _mutex: libc::pthread_mutex_t,
    _cond: libc::pthread_cond_t,
    pub comp_events_completed: u32,
    pub async_events_completed: u32,
}

/// `struct ibv_srq_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvSrqAttr {
    pub max_wr: u32,
    pub max_sge: u32,
    pub srq_limit: u32,
}

/// `struct ibv_srq_init_attr`.
#[repr(C)]
pub(crate) struct IbvSrqInitAttr {
    pub srq_context: *mut c_void,
    pub attr: IbvSrqAttr,
}

/// `struct ibv_srq`.
#[repr(C)]
pub(crate) struct IbvSrq {
    pub context: *mut IbvContext,
    pub srq_context: *mut c_void,
    pub pd: *mut IbvPd,
    pub handle: u32,
    _mutex: libc::pthread_mutex_t,
    _cond: libc::pthread_cond_t,
    pub events_completed: u32,
}

/// `enum ibv_qp_type`: `IBV_QPT_RC`.
pub(crate) const IBV_QPT_RC: u32 = 2;

/// `struct ibv_qp`.
#[repr(C)]
pub(crate) struct IbvQp {
    pub context: *mut IbvContext,
    pub qp_context: *mut c_void,
    pub pd: *mut IbvPd,
    pub send_cq: *mut IbvCq,
    pub recv_cq: *mut IbvCq,
    pub srq: *mut IbvSrq,
    pub handle: u32,
    pub qp_num: u32,
    /// `enum ibv_qp_state`, as last set through the library.
    pub state: u32,
    /// `enum ibv_qp_type`.
    pub qp_type: u32,
    _mutex: libc::pthread_mutex_t,
    _cond: libc::pthread_cond_t,
    pub events_completed: u32,
}

/// `struct ibv_qp_cap`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvQpCap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

/// `struct ibv_qp_init_attr`.
#[repr(C)]
pub(crate) struct IbvQpInitAttr {
    pub qp_context: *mut c_void,
    pub send_cq: *mut IbvCq,
    pub recv_cq: *mut IbvCq,
    pub srq: *mut IbvSrq,
    pub cap: IbvQpCap,
    /// `enum ibv_qp_type`.
    pub qp_type: u32,
    pub sq_sig_all: c_int,
}

/// `struct ibv_global_route`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvGlobalRoute {
    pub dgid: IbvGid,
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
}

/// `struct ibv_ah_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvAhAttr {
    pub grh: IbvGlobalRoute,
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
}

/// `struct ibv_qp_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvQpAttr {
    /// `enum ibv_qp_state`.
    pub qp_state: u32,
    /// `enum ibv_qp_state`.
    pub cur_qp_state: u32,
    /// `enum ibv_mtu`.
    pub path_mtu: u32,
    /// `enum ibv_mig_state`.
    pub path_mig_state: u32,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: c_uint,
    pub cap: IbvQpCap,
    pub ah_attr: IbvAhAttr,
    pub alt_ah_attr: IbvAhAttr,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub en_sqd_async_notify: u8,
    pub sq_draining: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    pub rate_limit: u32,
}

/// `enum ibv_qp_attr_mask` bits used.
pub(crate) mod qp_mask {
    use std::ffi::c_int;
    pub const STATE: c_int = 1 << 0;
    pub const ACCESS_FLAGS: c_int = 1 << 3;
    pub const PKEY_INDEX: c_int = 1 << 4;
    pub const PORT: c_int = 1 << 5;
    pub const AV: c_int = 1 << 7;
    pub const PATH_MTU: c_int = 1 << 8;
    pub const TIMEOUT: c_int = 1 << 9;
    pub const RETRY_CNT: c_int = 1 << 10;
    pub const RNR_RETRY: c_int = 1 << 11;
    pub const RQ_PSN: c_int = 1 << 12;
    pub const MAX_QP_RD_ATOMIC: c_int = 1 << 13;
    pub const MIN_RNR_TIMER: c_int = 1 << 15;
    pub const SQ_PSN: c_int = 1 << 16;
    pub const MAX_DEST_RD_ATOMIC: c_int = 1 << 17;
    pub const DEST_QPN: c_int = 1 << 20;
}

/// `struct ibv_sge`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvSge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// `wr.rdma` of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvRdma {
    pub remote_addr: u64,
    pub rkey: u32,
}

/// `wr.atomic` of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvAtomic {
    pub remote_addr: u64,
    pub compare_add: u64,
    pub swap: u64,
    pub rkey: u32,
}

/// `wr.ud` of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvUd {
    pub ah: *mut c_void,
    pub remote_qpn: u32,
    pub remote_qkey: u32,
}

/// The `wr` union of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union IbvSendWrWr {
    pub rdma: IbvRdma,
    pub atomic: IbvAtomic,
    pub ud: IbvUd,
}

/// `struct ibv_send_wr`. The trailing unions (`qp_type.xrc`, and
/// `bind_mw` / `tso`, 48 bytes) are not used by RC sends; they are kept
/// zeroed for the layout.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvSendWr {
    pub wr_id: u64,
    pub next: *mut IbvSendWr,
    pub sg_list: *mut IbvSge,
    pub num_sge: c_int,
    /// `enum ibv_wr_opcode`.
    pub opcode: u32,
    pub send_flags: c_uint,
    /// `imm_data` (big-endian) or `invalidate_rkey`.
    pub imm_data: u32,
    pub wr: IbvSendWrWr,
    /// `qp_type.xrc.remote_srqn`.
    pub xrc_remote_srqn: u32,
    /// `bind_mw` / `tso` (a pointer, a key and a 32-byte bind info).
    _bind_mw_tso: [u64; 6],
}

impl IbvSendWr {
    /// A zeroed work request (no SGE, no next).
    pub fn zeroed() -> Self {
        IbvSendWr {
            wr_id: 0,
            next: std::ptr::null_mut(),
            sg_list: std::ptr::null_mut(),
            num_sge: 0,
            opcode: 0,
            send_flags: 0,
            imm_data: 0,
            wr: IbvSendWrWr {
                atomic: IbvAtomic {
                    remote_addr: 0,
                    compare_add: 0,
                    swap: 0,
                    rkey: 0,
                },
            },
            xrc_remote_srqn: 0,
            _bind_mw_tso: [0; 6],
        }
    }
}

/// `enum ibv_wr_opcode` values used.
pub(crate) mod wr_opcode {
    pub const RDMA_WRITE: u32 = 0;
    pub const RDMA_WRITE_WITH_IMM: u32 = 1;
    pub const SEND: u32 = 2;
    pub const SEND_WITH_IMM: u32 = 3;
    pub const RDMA_READ: u32 = 4;
    pub const ATOMIC_CMP_AND_SWP: u32 = 5;
    pub const ATOMIC_FETCH_AND_ADD: u32 = 6;
}

/// `struct ibv_recv_wr`.
#[repr(C)]
pub(crate) struct IbvRecvWr {
    pub wr_id: u64,
    pub next: *mut IbvRecvWr,
    pub sg_list: *mut IbvSge,
    pub num_sge: c_int,
}

/// `struct ibv_wc`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvWc {
    pub wr_id: u64,
    /// `enum ibv_wc_status`.
    pub status: u32,
    /// `enum ibv_wc_opcode`.
    pub opcode: u32,
    pub vendor_err: u32,
    pub byte_len: u32,
    /// `imm_data` (big-endian) or `invalidated_rkey`.
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: c_uint,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

/// `enum ibv_wc_opcode` values.
pub(crate) mod wc_opcode {
    pub const SEND: u32 = 0;
    pub const RDMA_WRITE: u32 = 1;
    pub const RDMA_READ: u32 = 2;
    pub const COMP_SWAP: u32 = 3;
    pub const FETCH_ADD: u32 = 4;
    pub const RECV: u32 = 1 << 7;
    pub const RECV_RDMA_WITH_IMM: u32 = RECV + 1;
}

/// `IBV_WC_WITH_IMM` in `wc_flags`.
pub(crate) const IBV_WC_WITH_IMM: c_uint = 1 << 1;

#[cfg(test)]
mod tests {
    //! Sizes and offsets printed by a C program compiled against
    //! rdma-core 44's verbs.h (Debian libibverbs-dev 44.0-2, x86_64 glibc:
    //! `pthread_mutex_t` 40 bytes, `pthread_cond_t` 48), by hand, once.
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    #[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
    fn library_allocated_structs() {
        assert_eq!(size_of::<IbvContextOps>(), 256);
        assert_eq!(offset_of!(IbvContextOps, poll_cq), 88);
        assert_eq!(offset_of!(IbvContextOps, req_notify_cq), 96);
        assert_eq!(offset_of!(IbvContextOps, post_srq_recv), 160);
        assert_eq!(offset_of!(IbvContextOps, post_send), 200);
        assert_eq!(offset_of!(IbvContextOps, post_recv), 208);
        assert_eq!(size_of::<IbvContext>(), 328);
        assert_eq!(offset_of!(IbvContext, ops), 8);
        assert_eq!(offset_of!(IbvContext, cmd_fd), 264);
        assert_eq!(size_of::<IbvPd>(), 16);
        assert_eq!(size_of::<IbvMr>(), 48);
        assert_eq!(offset_of!(IbvMr, lkey), 36);
        assert_eq!(offset_of!(IbvMr, rkey), 40);
        assert_eq!(size_of::<IbvCq>(), 128);
        assert_eq!(offset_of!(IbvCq, cqe), 28);
        assert_eq!(size_of::<IbvSrq>(), 128);
        assert_eq!(size_of::<IbvQp>(), 160);
        assert_eq!(offset_of!(IbvQp, qp_num), 52);
        assert_eq!(offset_of!(IbvQp, state), 56);
    }

    #[test]
    fn query_structs() {
        assert_eq!(size_of::<IbvDeviceAttr>(), 232);
        assert_eq!(offset_of!(IbvDeviceAttr, max_mr_size), 80);
        assert_eq!(offset_of!(IbvDeviceAttr, max_qp), 108);
        assert_eq!(offset_of!(IbvDeviceAttr, max_qp_rd_atom), 144);
        assert_eq!(offset_of!(IbvDeviceAttr, atomic_cap), 164);
        assert_eq!(offset_of!(IbvDeviceAttr, max_srq_wr), 216);
        assert_eq!(offset_of!(IbvDeviceAttr, phys_port_cnt), 227);
        // The full struct ibv_port_attr is 52 (port_cap_flags2 at 48).
        assert_eq!(size_of::<IbvPortAttrCompat>(), 48);
        assert_eq!(offset_of!(IbvPortAttrCompat, active_mtu), 8);
        assert_eq!(offset_of!(IbvPortAttrCompat, lid), 34);
        assert_eq!(offset_of!(IbvPortAttrCompat, link_layer), 46);
        assert_eq!((size_of::<IbvGid>(), align_of::<IbvGid>()), (16, 8));
    }

    #[test]
    fn queue_and_qp_attrs() {
        assert_eq!(size_of::<IbvSrqInitAttr>(), 24);
        assert_eq!(size_of::<IbvQpCap>(), 20);
        assert_eq!(size_of::<IbvQpInitAttr>(), 64);
        assert_eq!(offset_of!(IbvQpInitAttr, cap), 32);
        assert_eq!(offset_of!(IbvQpInitAttr, qp_type), 52);
        assert_eq!(offset_of!(IbvQpInitAttr, sq_sig_all), 56);
        assert_eq!(size_of::<IbvGlobalRoute>(), 24);
        assert_eq!(offset_of!(IbvGlobalRoute, sgid_index), 20);
        assert_eq!(size_of::<IbvAhAttr>(), 32);
        assert_eq!(offset_of!(IbvAhAttr, dlid), 24);
        assert_eq!(offset_of!(IbvAhAttr, is_global), 29);
        assert_eq!(offset_of!(IbvAhAttr, port_num), 30);
        assert_eq!(size_of::<IbvQpAttr>(), 144);
        assert_eq!(offset_of!(IbvQpAttr, dest_qp_num), 28);
        assert_eq!(offset_of!(IbvQpAttr, qp_access_flags), 32);
        assert_eq!(offset_of!(IbvQpAttr, cap), 36);
        assert_eq!(offset_of!(IbvQpAttr, ah_attr), 56);
        assert_eq!(offset_of!(IbvQpAttr, alt_ah_attr), 88);
        assert_eq!(offset_of!(IbvQpAttr, pkey_index), 120);
        assert_eq!(offset_of!(IbvQpAttr, max_rd_atomic), 126);
        assert_eq!(offset_of!(IbvQpAttr, port_num), 129);
        assert_eq!(offset_of!(IbvQpAttr, timeout), 130);
        assert_eq!(offset_of!(IbvQpAttr, rnr_retry), 132);
        assert_eq!(offset_of!(IbvQpAttr, alt_timeout), 134);
        assert_eq!(offset_of!(IbvQpAttr, rate_limit), 136);
    }

    #[test]
    fn work_requests_and_completions() {
        assert_eq!(size_of::<IbvSge>(), 16);
        assert_eq!(size_of::<IbvSendWr>(), 128);
        assert_eq!(offset_of!(IbvSendWr, num_sge), 24);
        assert_eq!(offset_of!(IbvSendWr, opcode), 28);
        assert_eq!(offset_of!(IbvSendWr, send_flags), 32);
        assert_eq!(offset_of!(IbvSendWr, imm_data), 36);
        assert_eq!(offset_of!(IbvSendWr, wr), 40);
        assert_eq!(offset_of!(IbvSendWr, wr) + offset_of!(IbvRdma, rkey), 48);
        assert_eq!(
            offset_of!(IbvSendWr, wr) + offset_of!(IbvAtomic, compare_add),
            48
        );
        assert_eq!(offset_of!(IbvSendWr, wr) + offset_of!(IbvAtomic, swap), 56);
        assert_eq!(offset_of!(IbvSendWr, wr) + offset_of!(IbvAtomic, rkey), 64);
        assert_eq!(offset_of!(IbvSendWr, xrc_remote_srqn), 72);
        assert_eq!(offset_of!(IbvSendWr, _bind_mw_tso), 80);
        assert_eq!(size_of::<IbvRecvWr>(), 32);
        assert_eq!(size_of::<IbvWc>(), 48);
        assert_eq!(offset_of!(IbvWc, status), 8);
        assert_eq!(offset_of!(IbvWc, opcode), 12);
        assert_eq!(offset_of!(IbvWc, vendor_err), 16);
        assert_eq!(offset_of!(IbvWc, byte_len), 20);
        assert_eq!(offset_of!(IbvWc, imm_data), 24);
        assert_eq!(offset_of!(IbvWc, qp_num), 28);
        assert_eq!(offset_of!(IbvWc, src_qp), 32);
        assert_eq!(offset_of!(IbvWc, wc_flags), 36);
        assert_eq!(offset_of!(IbvWc, pkey_index), 40);
        assert_eq!(offset_of!(IbvWc, slid), 42);
        assert_eq!(offset_of!(IbvWc, sl), 44);
        assert_eq!(offset_of!(IbvWc, dlid_path_bits), 45);
    }
}
