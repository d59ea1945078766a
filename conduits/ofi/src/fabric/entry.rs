//! The entries of an `fi_getinfo` answer, read out for listing (what
//! `rgex-info` shows of each provider and domain).

use super::info::Info;
use libfabric_sys as sys;
use std::ffi::{c_char, CStr};

/// One entry of an [`Info`] list: a provider on a domain, with what it
/// offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The provider (`tcp;ofi_rxm`, `sockets`, `shm`).
    pub provider: String,
    /// The domain (an interface, a NIC).
    pub domain: String,
    /// The fabric (a network, a subnet).
    pub fabric: String,
    /// `caps`: the capability bits ([`caps_names`]).
    pub caps: u64,
    /// The largest message sent inline (`fi_inject`).
    pub inject_size: usize,
    /// The largest message and RMA transfer.
    pub max_msg_size: usize,
    /// The memory-registration mode bits ([`Info::mr_mode_names`]).
    pub mr_mode: u64,
}

fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: libfabric's name fields are NUL-terminated strings owned by
    // the info list, which outlives this call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl Info {
    /// Every entry of the list, best first.
    pub fn entries(&self) -> Vec<Entry> {
        let mut out = Vec::new();
        let mut p = self.raw();
        while !p.is_null() {
            // SAFETY: `p` is an entry of the list this Info owns; every
            // entry fi_getinfo returns has its attribute structs.
            let e = unsafe { &*p };
            // SAFETY: as above: the attribute pointers are valid.
            let entry = unsafe {
                Entry {
                    provider: text((*e.fabric_attr).prov_name),
                    domain: text((*e.domain_attr).name),
                    fabric: text((*e.fabric_attr).name),
                    caps: e.caps,
                    inject_size: (*e.tx_attr).inject_size,
                    max_msg_size: (*e.ep_attr).max_msg_size,
                    mr_mode: (*e.domain_attr).mr_mode as u32 as u64,
                }
            };
            out.push(entry);
            p = e.next;
        }
        out
    }
}

/// The names of the capability bits rgex cares about in `caps`.
pub fn caps_names(caps: u64) -> Vec<&'static str> {
    const NAMES: [(u64, &str); 9] = [
        (sys::FI_MSG, "FI_MSG"),
        (sys::FI_RMA, "FI_RMA"),
        (sys::FI_ATOMIC, "FI_ATOMIC"),
        (sys::FI_READ, "FI_READ"),
        (sys::FI_WRITE, "FI_WRITE"),
        (sys::FI_SEND, "FI_SEND"),
        (sys::FI_RECV, "FI_RECV"),
        (sys::FI_REMOTE_READ, "FI_REMOTE_READ"),
        (sys::FI_REMOTE_WRITE, "FI_REMOTE_WRITE"),
    ];
    NAMES
        .iter()
        .filter(|(b, _)| caps & b != 0)
        .map(|(_, n)| *n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::Hints;

    #[test]
    fn the_tcp_provider_is_listed_with_messages_and_rma() {
        let info = Info::get(&Hints {
            ep_type: sys::FI_EP_RDM,
            caps: sys::FI_MSG,
            ..Hints::default()
        })
        .expect("libfabric lists RDM providers here");
        let entries = info.entries();
        assert!(!entries.is_empty());
        let tcp = entries
            .iter()
            .find(|e| e.provider.contains("tcp"))
            .unwrap_or_else(|| panic!("no tcp provider in {entries:?}"));
        assert!(caps_names(tcp.caps).contains(&"FI_MSG"), "{tcp:?}");
        assert_eq!(
            caps_names(sys::FI_RMA | sys::FI_ATOMIC),
            ["FI_RMA", "FI_ATOMIC"]
        );
    }
}
