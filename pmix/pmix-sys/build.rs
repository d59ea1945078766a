//! Find the PMIx client library through pkg-config and generate bindings
//! for its header with bindgen.

use std::env;
use std::path::PathBuf;

/// The oldest PMIx whose client API (`PMIx_Value_load`, fence with
/// `PMIX_COLLECT_DATA`) the bootstrap uses.
const MIN_VERSION: &str = "3.0";

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let lib = pkg_config::Config::new()
        .atleast_version(MIN_VERSION)
        .probe("pmix")
        .unwrap_or_else(|e| {
            panic!(
                "pmix-sys: PMIx >= {MIN_VERSION} was not found through pkg-config \
                 (install libpmix-dev, or point PKG_CONFIG_PATH at your PMIx's lib/pkgconfig): {e}"
            )
        });
    println!("cargo:version={}", lib.version);
    let mut gen = bindgen::Builder::default()
        .header("wrapper.h")
        .allowlist_function("PMIx_(Init|Initialized|Finalize|Put|Commit|Fence|Get|Error_string|Value_load|Value_destruct|Abort)")
        .allowlist_type("pmix_.*")
        .allowlist_var("PMIX_(SUCCESS|ERR_.*|GLOBAL|BYTE_OBJECT|UINT32|BOOL|STRING|MAX_NSLEN|MAX_KEYLEN|JOB_SIZE|LOCAL_SIZE|COLLECT_DATA|HOSTNAME)")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .derive_default(true)
        .layout_tests(false)
        .prepend_enum_name(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for dir in &lib.include_paths {
        gen = gen.clang_arg(format!("-I{}", dir.display()));
    }
    let bindings = gen
        .generate()
        .expect("pmix-sys: bindgen could not read pmix.h (is libclang installed?)");
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("pmix-sys: writing bindings.rs");
}
