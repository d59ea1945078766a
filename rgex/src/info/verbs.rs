//! The verbs devices and their ports, and the software device, as
//! `rgex-info` shows them.

use rgex_ibv::verbs::{DeviceChoice, DeviceSummary, LinkLayer, Verbs};

/// A verbs device: its attributes and ports, or why it could not be
/// opened.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceReport {
    /// The device name (`mlx5_0`, `soft0`).
    pub name: String,
    /// What it offers, or why it could not be opened and queried.
    pub detail: Result<DeviceDetail, String>,
}

/// What a device offers.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceDetail {
    /// `IBV_ATOMIC_NONE`, `IBV_ATOMIC_HCA` or `IBV_ATOMIC_GLOB`.
    pub atomic_cap: &'static str,
    /// Whether the ibv conduit offloads atomics to it.
    pub atomics: bool,
    /// The inline size a QP asking for `inline_asked` bytes was granted,
    /// or why no QP could be made.
    pub max_inline: Result<u32, String>,
    /// What that QP asked for (`RGEX_IBV_INLINE`).
    pub inline_asked: u32,
    /// Largest memory region.
    pub max_mr_size: u64,
    /// Queue pairs.
    pub max_qp: u32,
    /// Work requests per queue.
    pub max_qp_wr: u32,
    /// Each port.
    pub ports: Vec<PortReport>,
}

/// One port, or why it could not be queried.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PortReport {
    /// The port number (1-based).
    pub port: u8,
    /// Its state and link, or the query's error.
    pub detail: Result<PortDetail, String>,
}

/// A port's state and link.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PortDetail {
    /// `ACTIVE`, `DOWN`, ...
    pub state: &'static str,
    /// `InfiniBand` or `Ethernet (RoCE)`.
    pub link_layer: &'static str,
    /// MTU in use, bytes.
    pub active_mtu: usize,
    /// Largest MTU, bytes.
    pub max_mtu: usize,
    /// Local identifier (InfiniBand).
    pub lid: u16,
}

fn report(s: DeviceSummary) -> DeviceReport {
    let ports = s
        .ports
        .into_iter()
        .map(|(port, attr)| PortReport {
            port,
            detail: attr
                .map(|a| PortDetail {
                    state: a.state.name(),
                    link_layer: match a.link_layer {
                        LinkLayer::InfiniBand => "InfiniBand",
                        LinkLayer::Ethernet => "Ethernet (RoCE)",
                    },
                    active_mtu: a.active_mtu.bytes(),
                    max_mtu: a.max_mtu.bytes(),
                    lid: a.lid,
                })
                .map_err(|e| e.to_string()),
        })
        .collect();
    DeviceReport {
        name: s.name,
        detail: Ok(DeviceDetail {
            atomic_cap: s.atomic_cap,
            atomics: s.attr.atomics,
            max_inline: s.max_inline.map_err(|e| e.to_string()),
            inline_asked: s.inline_asked,
            max_mr_size: s.attr.max_mr_size,
            max_qp: s.attr.max_qp,
            max_qp_wr: s.attr.max_qp_wr,
            ports,
        }),
    }
}

/// The RDMA devices libibverbs lists, each with every port, or why none
/// (no RDMA device, or libibverbs missing). `inline`: what the probe QP
/// asks for.
pub fn real_devices(inline: u32) -> Result<Vec<DeviceReport>, String> {
    let list = rgex_ibv::real::describe_devices(inline).map_err(|e| e.to_string())?;
    Ok(list
        .into_iter()
        .map(|(name, summary)| match summary {
            Ok(s) => report(s),
            Err(e) => DeviceReport {
                name,
                detail: Err(format!("cannot be opened: {e}")),
            },
        })
        .collect())
}

/// The software device (`RGEX_IBV_DEVICE=soft`), opened to ask it.
pub fn soft_device(inline: u32) -> DeviceReport {
    match rgex_ibv::soft::SoftVerbs::open(&DeviceChoice::default()) {
        Ok(v) => report(DeviceSummary::of_opened(&v, inline)),
        Err(e) => DeviceReport {
            name: "soft0".into(),
            detail: Err(format!("cannot be opened: {e}")),
        },
    }
}
