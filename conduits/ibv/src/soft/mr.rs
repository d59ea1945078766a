//! Registered memory regions and the key, bounds and access checks an
//! HCA makes on every local SGE and every remote access.

use crate::verbs::Access;
use std::collections::HashMap;

/// One registered region.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MrEntry {
    pub pd: u32,
    pub addr: u64,
    pub len: u64,
    pub access: Access,
}

/// A device's regions by key (lkey and rkey are the same number, as on
/// many HCAs; keys are never reused, so a stale key fails its check).
#[derive(Debug, Default)]
pub(crate) struct MrTable {
    map: HashMap<u32, MrEntry>,
    next_key: u32,
}

impl MrTable {
    /// Register; returns the key.
    pub fn insert(&mut self, e: MrEntry) -> u32 {
        // Keys start above 0x100 and skip 0 on wrap (0 would look unset).
        self.next_key = self.next_key.wrapping_add(1).max(0x101);
        let key = self.next_key;
        self.map.insert(key, e);
        key
    }

    /// Deregister.
    pub fn remove(&mut self, key: u32) {
        self.map.remove(&key);
    }

    /// Whether `addr .. addr + len` lies in region `key` of `pd` and the
    /// region grants `need`. A zero-length access checks nothing, as on
    /// an HCA.
    pub fn check(&self, key: u32, pd: u32, addr: u64, len: u64, need: Access) -> bool {
        if len == 0 {
            return true;
        }
        let Some(e) = self.map.get(&key) else {
            return false;
        };
        let end = addr.checked_add(len);
        e.pd == pd
            && addr >= e.addr
            && end.is_some_and(|end| end <= e.addr + e.len)
            && e.access.contains(need)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_key_pd_bounds_and_access() {
        let mut t = MrTable::default();
        let k = t.insert(MrEntry {
            pd: 1,
            addr: 1000,
            len: 100,
            access: Access::LOCAL_WRITE | Access::REMOTE_READ,
        });
        assert!(t.check(k, 1, 1000, 100, Access::REMOTE_READ));
        assert!(t.check(k, 1, 1050, 50, Access::empty()));
        assert!(!t.check(k, 1, 1050, 51, Access::empty()), "past the end");
        assert!(!t.check(k, 1, 999, 1, Access::empty()), "before the start");
        assert!(!t.check(k, 2, 1000, 1, Access::empty()), "another PD");
        assert!(!t.check(k, 1, 1000, 8, Access::REMOTE_WRITE), "not granted");
        assert!(!t.check(k + 1, 1, 1000, 8, Access::empty()), "unknown key");
        assert!(!t.check(k, 1, u64::MAX, 2, Access::empty()), "overflow");
        assert!(t.check(k + 1, 1, 0, 0, Access::REMOTE_WRITE), "zero length");
        t.remove(k);
        assert!(!t.check(k, 1, 1000, 8, Access::empty()), "deregistered");
    }
}
