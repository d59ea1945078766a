//! Find libfabric through pkg-config, generate bindings for its headers
//! with bindgen, and compile the shim of its static inline calls.

use std::env;
use std::path::PathBuf;

/// The oldest libfabric whose API the shim and the conduit use.
const MIN_VERSION: &str = "1.10";

/// Flag macros (`FI_MSG`, `FI_MR_LOCAL`, ...) as `u64`, the type of the
/// fields they go into; error numbers (`FI_EAGAIN`, ...) as `i32`, the
/// type calls return them in.
#[derive(Debug)]
struct MacroTypes;

impl bindgen::callbacks::ParseCallbacks for MacroTypes {
    fn int_macro(&self, name: &str, _value: i64) -> Option<bindgen::callbacks::IntKind> {
        use bindgen::callbacks::IntKind;
        let errno = name.len() > 4
            && name.starts_with("FI_E")
            && name[3..]
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
        if errno
            || (name.starts_with('E')
                && name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()))
        {
            Some(IntKind::I32)
        } else if name.starts_with("FI_") {
            Some(IntKind::U64)
        } else {
            None
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=shim/shim.h");
    println!("cargo:rerun-if-changed=shim/shim.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");

    let lib = pkg_config::Config::new()
        .atleast_version(MIN_VERSION)
        .probe("libfabric")
        .unwrap_or_else(|e| {
            panic!(
                "libfabric-sys: libfabric >= {MIN_VERSION} was not found through pkg-config \
                 (install libfabric-dev, or point PKG_CONFIG_PATH at your libfabric's lib/pkgconfig): {e}"
            )
        });
    println!("cargo:version={}", lib.version);

    let mut shim = cc::Build::new();
    shim.file("shim/shim.c").warnings(true);
    for dir in &lib.include_paths {
        shim.include(dir);
        println!("cargo:include={}", dir.display());
    }
    shim.compile("rgex_fabric_shim");

    let mut gen = bindgen::Builder::default()
        .header("shim/shim.h")
        .allowlist_function("fi_.*")
        .allowlist_function("rfi_.*")
        .allowlist_type("fi_.*")
        .allowlist_type("fid.*")
        .allowlist_var("FI_.*")
        .allowlist_var("rfi_.*")
        .allowlist_var("E[A-Z0-9]+")
        // The shim exports these; the inline originals have no symbol.
        .blocklist_function("fi_(close|domain|endpoint|av_open|cq_open|cntr_open|mr_reg|mr_bind|mr_enable|mr_key|mr_desc|ep_bind|enable|getname|setopt|getopt|av_insert|av_straddr|send|sendmsg|senddata|inject|recv|recvmsg|write|writemsg|read|readmsg|atomic|fetch_atomic|compare_atomic|atomicmsg|query_atomic|atomicvalid|fetch_atomicvalid|compare_atomicvalid|cq_read|cq_readerr|cq_strerror|cntr_read|cntr_readerr|cntr_add|cntr_set|cntr_wait|cancel|allocinfo)")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .derive_default(true)
        .layout_tests(false)
        .prepend_enum_name(false)
        .parse_callbacks(Box::new(MacroTypes))
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for dir in &lib.include_paths {
        gen = gen.clang_arg(format!("-I{}", dir.display()));
    }
    let bindings = gen.generate().expect(
        "libfabric-sys: bindgen could not read the libfabric headers (is libclang installed?)",
    );
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("libfabric-sys: writing bindings.rs");
}
