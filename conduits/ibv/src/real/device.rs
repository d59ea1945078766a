//! Device discovery, opening, and the device and port queries.
//!
//! `ibv_get_device_list` failing (`ENOSYS` where the kernel has no RDMA
//! support) or finding nothing is "no RDMA device here"
//! ([`VerbsError::NoDevice`]) with the reason, never a crash.

use std::ffi::{c_int, CStr};
use std::ptr::NonNull;

use super::abi::{
    atomic_cap_name, IbvContext, IbvDevice, IbvDeviceAttr, IbvGid, IbvPortAttrCompat,
    IBV_ATOMIC_NONE, IBV_LINK_LAYER_ETHERNET, IBV_LINK_LAYER_INFINIBAND, IBV_PORT_ACTIVE,
};
use super::errno::{last_errno, rc_errno};
use super::library::Library;
use super::objects;
use crate::verbs::{
    DeviceAttr, DeviceChoice, DeviceSummary, Gid, LinkLayer, Mtu, PortAttr, PortState, QpCaps,
    VerbsError, VerbsResult,
};
use std::sync::Arc;

/// Where the kernel lists RDMA devices.
const SYSFS: &str = "/sys/class/infiniband";

/// The array `ibv_get_device_list` returned, freed on drop.
pub(crate) struct DeviceList {
    lib: &'static Library,
    list: NonNull<*mut IbvDevice>,
    len: usize,
}

impl DeviceList {
    /// The devices here; none, or no RDMA support, is `NoDevice`.
    pub(crate) fn get(lib: &'static Library) -> VerbsResult<DeviceList> {
        let mut num: c_int = 0;
        // SAFETY: the verb writes the count into `num` and returns a
        // NULL-terminated array it allocated, or NULL with errno set.
        let list = unsafe { (lib.fns.ibv_get_device_list)(&mut num) };
        let Some(list) = NonNull::new(list) else {
            let e = last_errno();
            let what = if e == libc::ENOSYS {
                "ENOSYS: this kernel has no RDMA support (no ib_uverbs)".to_string()
            } else {
                format!("{}", std::io::Error::from_raw_os_error(e))
            };
            return Err(VerbsError::NoDevice {
                why: format!("ibv_get_device_list found none ({what}; {})", sysfs_state()),
            });
        };
        let dl = DeviceList {
            lib,
            list,
            len: usize::try_from(num).unwrap_or(0),
        };
        if dl.len == 0 {
            return Err(VerbsError::NoDevice {
                why: format!(
                    "ibv_get_device_list found none (an empty list; {}; a device needs its \
                     provider, package ibverbs-providers / rdma-core)",
                    sysfs_state()
                ),
            });
        }
        Ok(dl)
    }

    /// The devices with their names.
    pub(crate) fn devices(&self) -> impl Iterator<Item = (*mut IbvDevice, String)> + '_ {
        (0..self.len).map(move |i| {
            // SAFETY: i < len, the count the library returned for this array.
            let dev = unsafe { *self.list.as_ptr().add(i) };
            (dev, self.name(dev))
        })
    }

    fn name(&self, dev: *mut IbvDevice) -> String {
        // SAFETY: `dev` is an entry of the live list.
        let p = unsafe { (self.lib.fns.ibv_get_device_name)(dev) };
        if p.is_null() {
            return "?".to_string();
        }
        // SAFETY: a NUL-terminated name owned by the device.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: the array the library returned, freed once; contexts
        // opened from it stay valid (libibverbs refcounts devices).
        unsafe { (self.lib.fns.ibv_free_device_list)(self.list.as_ptr()) };
    }
}

/// What `/sys/class/infiniband` says, for the no-device reason.
fn sysfs_state() -> String {
    match std::fs::read_dir(SYSFS) {
        Err(_) => format!("{SYSFS} is absent"),
        Ok(entries) => {
            let names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            if names.is_empty() {
                format!("{SYSFS} is empty")
            } else {
                format!("{SYSFS} lists {}", names.join(", "))
            }
        }
    }
}

/// The names of the RDMA devices here, as libibverbs lists them. None,
/// or a kernel without RDMA support, is [`VerbsError::NoDevice`] with
/// the reason; a missing library is [`VerbsError::Library`].
pub fn device_names() -> VerbsResult<Vec<String>> {
    let lib = Library::system()?;
    let list = DeviceList::get(lib)?;
    Ok(list.devices().map(|(_, n)| n).collect())
}

/// An opened device context, closed on drop (after the device list it
/// came from is freed: the context holds its own device reference).
pub(crate) struct Context {
    pub(crate) lib: &'static Library,
    pub(crate) raw: NonNull<IbvContext>,
}

// SAFETY: libibverbs contexts may be used from any thread; the verbs
// called on one QP or CQ are serialised by the caller (the trait's
// contract), and the context itself is only read.
unsafe impl Send for Context {}
// SAFETY: as for Send.
unsafe impl Sync for Context {}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context opened by this object, closed once, after
        // every object created on it (each holds this Context alive).
        let rc = unsafe { (self.lib.fns.ibv_close_device)(self.raw.as_ptr()) };
        if rc != 0 {
            tracing::error!(
                "ibv_close_device failed: {}",
                std::io::Error::from_raw_os_error(rc_errno(rc))
            );
        }
    }
}

/// An opened device with its chosen port, as queried at open.
pub(crate) struct Opened {
    pub(crate) ctx: Context,
    pub(crate) name: String,
    pub(crate) attr: DeviceAttr,
    pub(crate) port: u8,
    pub(crate) port_attr: PortAttr,
    pub(crate) gid: Gid,
}

/// Open the device and port `choice` names (by default the first device
/// with an active port, and its first active port).
pub(crate) fn open(choice: &DeviceChoice) -> VerbsResult<Opened> {
    let lib = Library::system()?;
    let list = DeviceList::get(lib)?;
    let names: Vec<String> = list.devices().map(|(_, n)| n).collect();
    let mut refusals = Vec::new();
    for (dev, name) in list.devices() {
        if choice.name.as_ref().is_some_and(|want| *want != name) {
            continue;
        }
        match open_one(lib, dev, &name, choice) {
            Ok(opened) => return Ok(opened),
            // A named device's failure is the answer; otherwise try the next.
            Err(e) if choice.name.is_some() => return Err(e),
            Err(e) => refusals.push(format!("{name}: {e}")),
        }
    }
    Err(VerbsError::NoDevice {
        why: match &choice.name {
            Some(want) => format!(
                "device {want:?} not found; libibverbs lists {}",
                names.join(", ")
            ),
            None => format!("no device has a usable port: {}", refusals.join("; ")),
        },
    })
}

/// Open `dev` and pick its port.
fn open_one(
    lib: &'static Library,
    dev: *mut IbvDevice,
    name: &str,
    choice: &DeviceChoice,
) -> VerbsResult<Opened> {
    let (ctx, da) = open_context(lib, dev, name)?;
    let raw = ctx.raw;
    let ports = da.phys_port_cnt;
    let (port, pa) = match choice.port {
        Some(p) if p == 0 || p > ports => {
            return Err(VerbsError::NoDevice {
                why: format!("device {name} has no port {p} (its ports are 1 to {ports})"),
            });
        }
        Some(p) => {
            let pa = query_port(&ctx, name, p)?;
            if pa.state != IBV_PORT_ACTIVE {
                return Err(VerbsError::NoDevice {
                    why: format!(
                        "port {p} of device {name} is not active ({})",
                        PortState::from_code(pa.state).name()
                    ),
                });
            }
            (p, pa)
        }
        None => {
            let mut states = Vec::new();
            let mut found = None;
            for p in 1..=ports {
                let pa = query_port(&ctx, name, p)?;
                if pa.state == IBV_PORT_ACTIVE {
                    found = Some((p, pa));
                    break;
                }
                states.push(format!(
                    "port {p} {}",
                    PortState::from_code(pa.state).name()
                ));
            }
            found.ok_or_else(|| VerbsError::NoDevice {
                why: format!(
                    "device {name} has no active port ({})",
                    if states.is_empty() {
                        "it reports no ports".to_string()
                    } else {
                        states.join(", ")
                    }
                ),
            })?
        }
    };
    let port_attr = port_attr(name, port, &pa)?;
    let mut gid = IbvGid::default();
    // SAFETY: a live context, an open port, a 16-byte GID out-parameter.
    let rc = unsafe {
        (lib.fns.ibv_query_gid)(raw.as_ptr(), port, c_int::from(choice.gid_index), &mut gid)
    };
    if rc != 0 {
        return Err(VerbsError::call(
            "ibv_query_gid",
            rc_errno(rc),
            format!(
                "device {name} port {port} GID index {} (table of {} entries)",
                choice.gid_index, pa.gid_tbl_len
            ),
        ));
    }
    Ok(Opened {
        attr: device_attr(&da),
        name: name.to_string(),
        ctx,
        port,
        port_attr,
        gid: gid.raw,
    })
}

/// Open `dev`'s context and query the device.
fn open_context(
    lib: &'static Library,
    dev: *mut IbvDevice,
    name: &str,
) -> VerbsResult<(Context, IbvDeviceAttr)> {
    // SAFETY: `dev` is an entry of the live device list.
    let raw = unsafe { (lib.fns.ibv_open_device)(dev) };
    let Some(raw) = NonNull::new(raw) else {
        return Err(VerbsError::call(
            "ibv_open_device",
            last_errno(),
            format!("device {name}"),
        ));
    };
    let ctx = Context { lib, raw };
    // SAFETY: IbvDeviceAttr is plain data; all-zero is valid.
    let mut da: IbvDeviceAttr = unsafe { std::mem::zeroed() };
    // SAFETY: a live context and a struct of the verb's layout.
    let rc = unsafe { (lib.fns.ibv_query_device)(raw.as_ptr(), &mut da) };
    if rc != 0 {
        return Err(VerbsError::call(
            "ibv_query_device",
            rc_errno(rc),
            format!("device {name}"),
        ));
    }
    Ok((ctx, da))
}

/// Every RDMA device here with its attributes and every port (active
/// or not), and the inline size a QP asking for `inline` bytes gets on
/// it; each device's failure is given with its name. None, or no RDMA
/// support, is [`VerbsError::NoDevice`]; a missing library
/// [`VerbsError::Library`].
pub fn describe_devices(inline: u32) -> VerbsResult<Vec<(String, VerbsResult<DeviceSummary>)>> {
    let lib = Library::system()?;
    let list = DeviceList::get(lib)?;
    Ok(list
        .devices()
        .map(|(dev, name)| {
            let summary = describe_one(lib, dev, &name, inline);
            (name, summary)
        })
        .collect())
}

/// One device of [`describe_devices`].
fn describe_one(
    lib: &'static Library,
    dev: *mut IbvDevice,
    name: &str,
    inline: u32,
) -> VerbsResult<DeviceSummary> {
    let (ctx, da) = open_context(lib, dev, name)?;
    let ports = (1..=da.phys_port_cnt)
        .map(|p| {
            (
                p,
                query_port(&ctx, name, p).and_then(|pa| port_attr(name, p, &pa)),
            )
        })
        .collect();
    let attr = device_attr(&da);
    let ctx = Arc::new(ctx);
    Ok(DeviceSummary {
        name: name.to_string(),
        atomic_cap: atomic_cap_name(da.atomic_cap),
        ports,
        max_inline: probe_inline(&ctx, attr.max_cqe, inline),
        inline_asked: inline,
        attr,
    })
}

/// The inline size granted to an RC QP asking for `inline` bytes (the QP
/// is destroyed at once; no port needs to be active to make one).
fn probe_inline(ctx: &Arc<Context>, max_cqe: u32, inline: u32) -> VerbsResult<u32> {
    let pd = objects::alloc_pd(ctx)?;
    let cq = objects::create_cq(ctx, 2, max_cqe)?;
    let caps = QpCaps {
        max_send_wr: 1,
        max_recv_wr: 1,
        max_inline_data: inline,
    };
    let qp = objects::create_qp(ctx, &pd, &cq, &cq, None, &caps)?;
    Ok(qp.caps.max_inline_data)
}

/// `ibv_query_port` through the exported symbol (the compat struct).
fn query_port(ctx: &Context, name: &str, port: u8) -> VerbsResult<IbvPortAttrCompat> {
    // SAFETY: plain data; all-zero is valid.
    let mut pa: IbvPortAttrCompat = unsafe { std::mem::zeroed() };
    // SAFETY: a live context; the exported ibv_query_port@IBVERBS_1.1
    // fills exactly a `struct _compat_ibv_port_attr`.
    let rc = unsafe { (ctx.lib.fns.ibv_query_port)(ctx.raw.as_ptr(), port, &mut pa) };
    if rc != 0 {
        return Err(VerbsError::call(
            "ibv_query_port",
            rc_errno(rc),
            format!("device {name} port {port}"),
        ));
    }
    Ok(pa)
}

/// The trait's view of the device attributes.
fn device_attr(da: &IbvDeviceAttr) -> DeviceAttr {
    let u = |v: c_int| u32::try_from(v).unwrap_or(0);
    DeviceAttr {
        max_mr_size: da.max_mr_size,
        max_qp: u(da.max_qp),
        max_qp_wr: u(da.max_qp_wr),
        max_cqe: u(da.max_cqe),
        max_srq_wr: u(da.max_srq_wr),
        max_qp_init_rd_atom: u(da.max_qp_init_rd_atom),
        max_qp_rd_atom: u(da.max_qp_rd_atom),
        atomics: da.atomic_cap != IBV_ATOMIC_NONE,
    }
}

/// The trait's view of a port.
fn port_attr(name: &str, port: u8, pa: &IbvPortAttrCompat) -> VerbsResult<PortAttr> {
    let mtu = |code: u32, which: &str| {
        mtu_from_code(code).ok_or_else(|| {
            VerbsError::call(
                "ibv_query_port",
                libc::EPROTO,
                format!("device {name} port {port}: unknown {which} MTU code {code}"),
            )
        })
    };
    Ok(PortAttr {
        state: PortState::from_code(pa.state),
        max_mtu: mtu(pa.max_mtu, "max")?,
        active_mtu: mtu(pa.active_mtu, "active")?,
        lid: pa.lid,
        link_layer: match pa.link_layer {
            IBV_LINK_LAYER_ETHERNET => LinkLayer::Ethernet,
            // UNSPECIFIED (0) is what old kernels report for InfiniBand.
            0 | IBV_LINK_LAYER_INFINIBAND => LinkLayer::InfiniBand,
            other => {
                return Err(VerbsError::call(
                    "ibv_query_port",
                    libc::EPROTO,
                    format!("device {name} port {port}: unknown link layer {other}"),
                ));
            }
        },
    })
}

/// `enum ibv_mtu` (1 to 5) as the trait's MTU.
pub(crate) fn mtu_from_code(code: u32) -> Option<Mtu> {
    Some(match code {
        1 => Mtu::M256,
        2 => Mtu::M512,
        3 => Mtu::M1024,
        4 => Mtu::M2048,
        5 => Mtu::M4096,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtu_codes_match_the_trait() {
        for m in [Mtu::M256, Mtu::M512, Mtu::M1024, Mtu::M2048, Mtu::M4096] {
            assert_eq!(mtu_from_code(m as u32), Some(m));
        }
        assert_eq!(mtu_from_code(0), None);
        assert_eq!(mtu_from_code(6), None);
    }

    #[test]
    fn an_unknown_link_layer_is_an_error_naming_the_port() {
        // SAFETY: plain data; all-zero is valid.
        let mut pa: IbvPortAttrCompat = unsafe { std::mem::zeroed() };
        pa.state = IBV_PORT_ACTIVE;
        pa.max_mtu = 5;
        pa.active_mtu = 3;
        pa.lid = 7;
        pa.link_layer = IBV_LINK_LAYER_ETHERNET;
        let a = port_attr("mlx5_0", 1, &pa).unwrap();
        assert_eq!(
            (a.state, a.active_mtu, a.lid, a.link_layer),
            (PortState::Active, Mtu::M1024, 7, LinkLayer::Ethernet)
        );
        pa.link_layer = 9;
        let e = port_attr("mlx5_0", 1, &pa).unwrap_err().to_string();
        assert!(
            e.contains("mlx5_0 port 1") && e.contains("link layer 9"),
            "{e}"
        );
    }
}
