//! Writes a -sys crate's `src/bindings.rs` from the installed headers of
//! its library, limited to that library's allowlist: libfabric-sys's
//! ([`libfabric`]) or pmix-sys's ([`pmix`]). Each crate's `gen/wrapper.h`
//! includes the headers and declares one function-pointer typedef per
//! call it resolves at run time.
//!
//! Usage: `rgex-bindings-gen LIBRARY OUT [CLANG_ARG...]`, LIBRARY being
//! `libfabric` or `pmix` and the clang arguments `pkg-config --cflags`
//! of it; the crates' `regenerate.sh` run it.

mod libfabric;
mod pmix;

use bindgen::callbacks::ParseCallbacks;

/// What one library's bindings hold.
pub struct Allowlist {
    /// The name given on the command line.
    pub name: &'static str,
    /// The header bindgen reads, from the repository root.
    pub wrapper: &'static str,
    /// The root structs and typedefs; bindgen adds what they refer to.
    pub types: &'static [&'static str],
    /// Types bound as opaque blobs of the right size (referred to through
    /// pointers only), which also stops bindgen from following them.
    pub opaque: &'static [&'static str],
    /// The constants.
    pub vars: &'static [&'static str],
    /// The integer types of macros, where bindgen's guess is not wanted.
    pub macro_types: Option<fn() -> Box<dyn ParseCallbacks>>,
    /// The comment the file starts with.
    pub header: &'static str,
}

/// The libraries the generator knows.
const LIBRARIES: [Allowlist; 2] = [libfabric::LIBFABRIC, pmix::PMIX];

fn main() {
    let usage = "usage: rgex-bindings-gen libfabric|pmix OUT [CLANG_ARG...]";
    let mut args = std::env::args().skip(1);
    let name = args.next().expect(usage);
    let lib = LIBRARIES
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("{usage}: no library {name:?}"));
    let out = args.next().expect(usage);
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut b = bindgen::Builder::default()
        .header(format!("{root}/{}", lib.wrapper))
        .allowlist_recursively(true)
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .layout_tests(true)
        .generate_comments(false)
        .disable_header_comment()
        .clang_args(args);
    if let Some(callbacks) = lib.macro_types {
        b = b.parse_callbacks(callbacks());
    }
    for t in lib.types {
        b = b.allowlist_type(format!("^{t}$"));
    }
    for t in lib.opaque {
        b = b.opaque_type(format!("^{t}$"));
    }
    for v in lib.vars {
        b = b.allowlist_var(format!("^{v}$"));
    }
    let bindings = b.generate().unwrap_or_else(|e| {
        panic!(
            "bindgen could not read the {} headers (is libclang installed?): {e}",
            lib.name
        )
    });
    std::fs::write(&out, format!("{}{bindings}", lib.header)).expect("writing the bindings");
}
