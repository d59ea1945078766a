//! Choosing the libfabric provider: the hints asked for, the wishes
//! dropped in turn, and what the provider granted.

use crate::fabric::{FiError, Hints, Info};
use crate::{OfiConfig, PutCompletion};
use libfabric_sys as sys;
use std::sync::Arc;

/// Memory-registration modes rgex knows how to handle. `FI_MR_RAW`
/// (keys longer than 64 bits) is refused.
pub(crate) const MR_MODES: u64 = sys::FI_MR_LOCAL
    | sys::FI_MR_VIRT_ADDR
    | sys::FI_MR_ALLOCATED
    | sys::FI_MR_PROV_KEY
    | sys::FI_MR_ENDPOINT;

/// What the provider granted, as the conduit uses it.
#[derive(Clone, Debug)]
pub struct Provider {
    /// Provider name (`tcp;ofi_rxm`, ...).
    pub name: Arc<str>,
    /// Domain name.
    pub domain: String,
    /// Capabilities granted.
    pub caps: u64,
    /// Memory-registration modes required.
    pub mr_mode: u64,
    /// Transmit ordering offered.
    pub tx_order: u64,
    /// Puts and Long writes may request `FI_DELIVERY_COMPLETE`.
    pub delivery_complete: bool,
    /// How non-blocking puts learn they landed (always
    /// [`ReadBack`](PutCompletion::ReadBack) without delivery-complete).
    pub put_completion: PutCompletion,
    /// Largest transfer in one operation.
    pub max_msg: usize,
    /// Largest AM message sent with `fi_inject` (0: none): the provider's
    /// inject size, capped by `RGEX_OFI_INJECT`.
    pub inject_size: usize,
    /// Thread safety the provider itself gives.
    pub threading: sys::fi_threading,
    /// `FI_PROGRESS_MANUAL` or `FI_PROGRESS_AUTO` for data.
    pub data_progress: sys::fi_progress,
}

impl Provider {
    /// What `info` (the entry [`choose`] returned) grants, under `cfg`.
    pub(crate) fn granted(info: &Info, cfg: &OfiConfig) -> Provider {
        let dc = info.tx_op_flags() & sys::FI_DELIVERY_COMPLETE != 0;
        Provider {
            name: info.provider().into(),
            domain: info.domain_name(),
            caps: info.caps(),
            mr_mode: info.mr_mode(),
            tx_order: info.tx_msg_order(),
            delivery_complete: dc,
            put_completion: if dc {
                cfg.put_completion
                    .unwrap_or_else(|| PutCompletion::default_for(&info.provider()))
            } else {
                PutCompletion::ReadBack
            },
            max_msg: info.max_msg_size().max(4096),
            inject_size: info.inject_size().min(cfg.inject.unwrap_or(usize::MAX)),
            threading: info.threading(),
            data_progress: info.data_progress(),
        }
    }

    /// True if local buffers need a registration descriptor (`FI_MR_LOCAL`).
    pub fn mr_local(&self) -> bool {
        self.mr_mode & sys::FI_MR_LOCAL != 0
    }

    /// True if atomics were granted (`FI_ATOMIC`).
    pub fn atomics(&self) -> bool {
        self.caps & sys::FI_ATOMIC != 0
    }

    /// True if a send posted after a write reaches the target after it
    /// (`FI_ORDER_SAW`), so a Long's header need not wait for the write.
    pub fn send_after_write(&self) -> bool {
        self.tx_order & sys::FI_ORDER_SAW != 0
    }
}

/// The hints for one attempt of [`choose`]: each flag is a wish that may
/// be dropped.
pub(crate) fn hints_for(
    cfg: &OfiConfig,
    rx_size: usize,
    atomic: bool,
    saw: bool,
    dc: bool,
    manual: bool,
) -> Hints {
    let mut caps = sys::FI_MSG
        | sys::FI_RMA
        | sys::FI_READ
        | sys::FI_WRITE
        | sys::FI_SEND
        | sys::FI_RECV
        | sys::FI_REMOTE_READ
        | sys::FI_REMOTE_WRITE;
    if atomic {
        caps |= sys::FI_ATOMIC;
    }
    Hints {
        caps,
        mode: sys::FI_CONTEXT | sys::FI_CONTEXT2,
        ep_type: sys::FI_EP_RDM,
        provider: cfg.provider.clone(),
        domain: cfg.domain.clone(),
        node: None,
        mr_mode: MR_MODES,
        threading: sys::FI_THREAD_DOMAIN,
        av_type: sys::FI_AV_TABLE,
        tx_msg_order: sys::FI_ORDER_SAS | if saw { sys::FI_ORDER_SAW } else { 0 },
        rx_msg_order: sys::FI_ORDER_SAS,
        tx_op_flags: if dc { sys::FI_DELIVERY_COMPLETE } else { 0 },
        data_progress: if manual {
            sys::FI_PROGRESS_MANUAL
        } else {
            sys::FI_PROGRESS_UNSPEC
        },
        tx_size: 0,
        rx_size,
    }
}

/// Ask for the best offer first: atomics, then send-after-write ordering,
/// then delivery-complete, then manual data progress; drop wishes (the
/// last first) until a provider answers.
///
/// Manual progress: the conduit drives progress itself (every poll reads
/// the CQ, and the [`ticker`](rgex_net::ticker) does when nobody polls), so a
/// provider's own progress thread only competes with the polling threads
/// for the CPU. With the sockets provider's default `FI_PROGRESS_AUTO`,
/// its progress thread is the only thing that moves data (`fi_cq_read`
/// merely reads what that thread queued), and on a node with more busy
/// threads than cores every message waited for that thread to be
/// scheduled, twice per round trip. On a loaded 2-core host that was
/// about 200 Short round trips a second against about 19,000 with manual
/// progress (`ofi_check` reports the rate), so the AM-carried atomics
/// conformance test, a long chain of round trips, looked hung, and floods
/// ran at a sixth to a tenth of tcp;ofi_rxm's rate. Providers that cannot
/// progress manually answer the hint-less retry.
///
/// `rx_size`: the receives the conduit posts (the geometry's `n_recv`).
pub(crate) fn choose(cfg: &OfiConfig, rx_size: usize) -> std::result::Result<Info, FiError> {
    let mut first_err = None;
    for atomic in [true, false] {
        for saw in [true, false] {
            for dc in [true, false] {
                for manual in [true, false] {
                    match Info::get(&hints_for(cfg, rx_size, atomic, saw, dc, manual)) {
                        Ok(i) => return Ok(i),
                        Err(e) => {
                            first_err.get_or_insert(e);
                        }
                    }
                }
            }
        }
    }
    Err(first_err.expect("at least one attempt"))
}
