//! What a device offers, port by port, as `rgex-info` shows it (the
//! conduit itself opens one port: [`Verbs::open`](super::Verbs::open)).

use super::{DeviceAttr, PortAttr, QpCaps, Verbs, VerbsResult};

/// A device's attributes and every port.
#[derive(Clone, Debug)]
pub struct DeviceSummary {
    /// The device (`mlx5_0`, `soft0`).
    pub name: String,
    /// Its limits.
    pub attr: DeviceAttr,
    /// Its atomics capability as verbs.h names it (`IBV_ATOMIC_NONE`,
    /// `IBV_ATOMIC_HCA`, `IBV_ATOMIC_GLOB`).
    pub atomic_cap: &'static str,
    /// Each port, 1-based, or why it could not be queried.
    pub ports: Vec<(u8, VerbsResult<PortAttr>)>,
    /// The inline size a QP asking for `inline_asked` bytes was granted,
    /// or why it could not be made.
    pub max_inline: VerbsResult<u32>,
    /// What the QP asked for (`RGEX_IBV_INLINE`).
    pub inline_asked: u32,
}

impl DeviceSummary {
    /// The summary of an opened device: its one opened port, and the
    /// inline size a QP asking for `inline` bytes is granted.
    pub fn of_opened<V: Verbs>(v: &V, inline: u32) -> DeviceSummary {
        let attr = *v.device_attr();
        DeviceSummary {
            name: v.device_name().to_string(),
            atomic_cap: if attr.atomics {
                "IBV_ATOMIC_HCA"
            } else {
                "IBV_ATOMIC_NONE"
            },
            ports: vec![(v.port(), Ok(*v.port_attr()))],
            max_inline: probe_inline(v, inline),
            inline_asked: inline,
            attr,
        }
    }
}

/// The inline size granted to an RC QP asking for `inline` bytes (the QP
/// is destroyed at once).
fn probe_inline<V: Verbs>(v: &V, inline: u32) -> VerbsResult<u32> {
    let pd = v.alloc_pd()?;
    let cq = v.create_cq(2)?;
    let caps = QpCaps {
        max_send_wr: 1,
        max_recv_wr: 1,
        max_inline_data: inline,
    };
    let qp = v.create_qp(&pd, &cq, &cq, None, &caps)?;
    Ok(V::qp_caps(&qp).max_inline_data)
}
