//! Symmetric static data (OpenSHMEM 1.5 section 3): the program's
//! global and static variables are symmetric objects. Every PE runs the
//! same executable, so a variable lies at the same offset from the start
//! of its writable data on every PE (whatever address randomisation did
//! to the base). `shmem_init` finds that range, the main program's
//! writable `PT_LOAD` segment (its data and bss) less the part that
//! becomes read-only after relocation (`PT_GNU_RELRO`), through
//! `dl_iterate_phdr`, and registers it with rgex as a client segment
//! (collectively, `Endpoint::register_segment_raw`): an address in it is
//! that segment's offset, which peers reach by RMA and AMOs as they do
//! the heap (node-local peers by cross-memory attach or rgex's active
//! messages, see rgex's client segments).

use crate::fatal::OrDie;
use rgex::{ClientSegment, Endpoint, Team};
use std::ffi::c_void;
use std::sync::Arc;

/// The registered static data of this PE.
pub struct Statics {
    /// Its first byte here.
    pub start: usize,
    /// Its length.
    pub len: usize,
    /// The rgex client segment over it.
    pub segment: ClientSegment,
}

/// The main program's writable data: (start, length).
fn data_range() -> Option<(usize, usize)> {
    struct Found {
        range: Option<(usize, usize)>,
    }
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> i32 {
        // SAFETY: dl_iterate_phdr passes a valid info and our `Found`.
        let (info, found) = unsafe { (&*info, &mut *data.cast::<Found>()) };
        let mut load: Option<(usize, usize)> = None;
        let mut relro_end = 0usize;
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: dlpi_phdr has dlpi_phnum headers.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
            let end = start + ph.p_memsz as usize;
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_W != 0 && load.is_none() {
                load = Some((start, end));
            }
            if ph.p_type == libc::PT_GNU_RELRO {
                relro_end = end;
            }
        }
        if let Some((s, e)) = load {
            let s = s.max(relro_end.min(e));
            if e > s {
                found.range = Some((s, e - s));
            }
        }
        1 // the first object is the main program: stop there
    }
    let mut found = Found { range: None };
    // SAFETY: `each` reads only what dl_iterate_phdr hands it, and
    // `found` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut found as *mut Found).cast()) };
    found.range
}

/// Register the main program's static data (collective over `world`).
pub fn register(ep: &Arc<Endpoint>, world: &Team, me: u32) -> Option<Statics> {
    let (start, len) = data_range().unwrap_or((0, 0));
    // SAFETY: the range is the executable's writable data, valid for the
    // process's life (the segment is never deregistered); the program
    // touches its symmetric variables only as the OpenSHMEM memory model
    // allows (as it does the heap).
    let segment = unsafe { ep.register_segment_raw(world, start as *mut u8, len) }
        .or_die(me, "shmem_init (symmetric static data)");
    (len > 0).then_some(Statics {
        start,
        len,
        segment,
    })
}

impl Statics {
    /// The rgex offset of `len` bytes at `ptr`, if they are static data.
    #[inline]
    pub fn offset(&self, ptr: *const u8, len: usize) -> Option<u64> {
        let off = (ptr as usize).checked_sub(self.start)?;
        (off.checked_add(len)? <= self.len).then(|| self.segment.base() + off as u64)
    }
}
