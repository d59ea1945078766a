//! Generates the typed, sized and `mem` entry points of `shmem.h`
//! (OpenSHMEM 1.5's type tables) as `extern "C"` functions calling the
//! generic ones of rma.rs, amo.rs, wait.rs and signal.rs.

use std::fmt::Write;

/// The standard RMA types (OpenSHMEM 1.5 table 5): TYPENAME, Rust type.
const RMA: &[(&str, &str)] = &[
    ("float", "f32"),
    ("double", "f64"),
    ("longdouble", "crate::LongDouble"),
    ("char", "std::ffi::c_char"),
    ("schar", "std::ffi::c_schar"),
    ("short", "std::ffi::c_short"),
    ("int", "std::ffi::c_int"),
    ("long", "std::ffi::c_long"),
    ("longlong", "std::ffi::c_longlong"),
    ("uchar", "std::ffi::c_uchar"),
    ("ushort", "std::ffi::c_ushort"),
    ("uint", "std::ffi::c_uint"),
    ("ulong", "std::ffi::c_ulong"),
    ("ulonglong", "std::ffi::c_ulonglong"),
    ("int8", "i8"),
    ("int16", "i16"),
    ("int32", "i32"),
    ("int64", "i64"),
    ("uint8", "u8"),
    ("uint16", "u16"),
    ("uint32", "u32"),
    ("uint64", "u64"),
    ("size", "usize"),
    ("ptrdiff", "isize"),
];

/// The sized forms: SIZE in bits, or `mem` (bytes).
const SIZED: &[(&str, usize)] = &[("8", 1), ("16", 2), ("32", 4), ("64", 8), ("128", 16)];

/// The extended AMO types (table 7); the standard ones are these less
/// float and double (table 6).
const AMO_EXT: &[&str] = &[
    "float",
    "double",
    "int",
    "long",
    "longlong",
    "uint",
    "ulong",
    "ulonglong",
    "int32",
    "int64",
    "uint32",
    "uint64",
    "size",
    "ptrdiff",
];

/// The bitwise AMO types (table 8).
const AMO_BIT: &[&str] = &[
    "uint",
    "ulong",
    "ulonglong",
    "int32",
    "int64",
    "uint32",
    "uint64",
];

/// The point-to-point synchronisation types (table 10).
const SYNC: &[&str] = &[
    "short",
    "int",
    "long",
    "longlong",
    "ushort",
    "uint",
    "ulong",
    "ulonglong",
    "int32",
    "int64",
    "uint32",
    "uint64",
    "size",
    "ptrdiff",
];

fn rust_type(name: &str) -> &'static str {
    RMA.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .expect("a table 5 type")
}

/// One `extern "C"` function: its C prototype (for the docs), Rust
/// parameters, return type and body (an unsafe call); written twice, as
/// `name` and as its profiling name, `p` + `name` (each holding the body: see
/// `entry!` in lib.rs for why neither calls the other).
fn emit(out: &mut String, c: &str, name: &str, params: &str, ret: &str, body: &str) {
    let ret = if ret.is_empty() {
        String::new()
    } else {
        format!(" -> {ret}")
    };
    for f in [name.to_string(), format!("p{name}")] {
        if body.starts_with("crate::amo::op(") || body.contains("|pe| crate::amo::op(") {
            // Every pointer is checked symmetric and only rgex touches it.
            writeln!(
                out,
                "/// `{c}`.\n#[no_mangle]\npub extern \"C\" fn {f}({params}){ret} {{\n    {body}\n}}\n"
            )
            .unwrap();
            continue;
        }
        writeln!(
            out,
            "/// `{c}`.\n///\n/// # Safety\n/// The OpenSHMEM 1.5 contract: local buffers hold the elements named.\n\
             #[no_mangle]\npub unsafe extern \"C\" fn {f}({params}){ret} {{\n    \
             // SAFETY: the caller's contract, forwarded; symmetric addresses and\n    \
             // PEs are checked by the callee.\n    unsafe {{ {body} }}\n}}\n"
        )
        .unwrap();
    }
}

/// [`emit`] the routine and its `shmem_ctx_` form (a context first; `pe`
/// is a PE of the context's team).
fn emit_both(out: &mut String, c: &str, name: &str, params: &str, ret: &str, body: &str) {
    emit(out, c, name, params, ret, body);
    let ctx_name = name.replacen("shmem_", "shmem_ctx_", 1);
    let ctx_c = c
        .replacen(name, &ctx_name, 1)
        .replacen('(', "(shmem_ctx_t ctx, ", 1);
    let quoted = format!("\"{name}\"");
    let ctx_quoted = format!("\"{ctx_name}\"");
    let inner = body.replace(&quoted, &ctx_quoted);
    let (inner, semi) = match inner.strip_suffix(';') {
        Some(i) => (i, ";"),
        None => (inner.as_str(), ""),
    };
    emit(
        out,
        &ctx_c,
        &ctx_name,
        &format!("ctx: *const crate::ctx::CtxObj, {params}"),
        ret,
        &format!("crate::ctx::with({ctx_quoted}, ctx, pe, |pe| {inner}){semi}"),
    );
}

fn rma(out: &mut String, n: &str, t: &str, elem: &str, typed: bool) {
    let ctype = if typed { n } else { "void" };
    let (put, get) = if typed {
        (format!("shmem_{n}_put"), format!("shmem_{n}_get"))
    } else {
        (format!("shmem_put{n}"), format!("shmem_get{n}"))
    };
    let bytes = |f: &str| format!("crate::rma::bytes(\"{f}\", nelems, {elem})");
    for (f, op, d) in [(&put, "put", "*mut"), (&get, "get", "*mut")] {
        emit_both(
            out,
            &format!("void {f}({ctype} *dest, const {ctype} *source, size_t nelems, int pe)"),
            f,
            &format!("dest: {d} {t}, source: *const {t}, nelems: usize, pe: std::ffi::c_int"),
            "",
            &format!(
                "crate::rma::{op}(\"{f}\", dest.cast(), source.cast(), {}, pe)",
                bytes(f)
            ),
        );
        let nbi = format!("{f}_nbi");
        emit_both(
            out,
            &format!("void {nbi}({ctype} *dest, const {ctype} *source, size_t nelems, int pe)"),
            &nbi,
            &format!("dest: {d} {t}, source: *const {t}, nelems: usize, pe: std::ffi::c_int"),
            "",
            &format!(
                "crate::rma::{op}_nbi(\"{nbi}\", dest.cast(), source.cast(), {}, pe)",
                bytes(&nbi)
            ),
        );
    }
    if n != "mem" {
        let (iput, iget) = if typed {
            (format!("shmem_{n}_iput"), format!("shmem_{n}_iget"))
        } else {
            (format!("shmem_iput{n}"), format!("shmem_iget{n}"))
        };
        for (f, op) in [(&iput, "iput"), (&iget, "iget")] {
            emit_both(
                out,
                &format!(
                    "void {f}({ctype} *dest, const {ctype} *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)"
                ),
                f,
                &format!(
                    "dest: *mut {t}, source: *const {t}, dst: isize, sst: isize, nelems: usize, pe: std::ffi::c_int"
                ),
                "",
                &format!("crate::rma::{op}(\"{f}\", dest.cast(), source.cast(), dst, sst, nelems, {elem}, pe)"),
            );
        }
    }
    let sig = if typed {
        format!("shmem_{n}_put_signal")
    } else {
        format!("shmem_put{n}_signal")
    };
    for f in [sig.clone(), format!("{sig}_nbi")] {
        emit_both(
            out,
            &format!(
                "void {f}({ctype} *dest, const {ctype} *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)"
            ),
            &f,
            &format!(
                "dest: *mut {t}, source: *const {t}, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: std::ffi::c_int, pe: std::ffi::c_int"
            ),
            "",
            &format!(
                "crate::signal::put_signal(\"{f}\", dest.cast(), source.cast(), {}, sig_addr, signal, sig_op, pe)",
                bytes(&f)
            ),
        );
    }
    if typed && n != "longdouble" {
        let p = format!("shmem_{n}_p");
        emit_both(
            out,
            &format!("void {p}({n} *dest, {n} value, int pe)"),
            &p,
            &format!("dest: *mut {t}, value: {t}, pe: std::ffi::c_int"),
            "",
            &format!("crate::rma::p(\"{p}\", dest, value, pe)"),
        );
        let g = format!("shmem_{n}_g");
        emit_both(
            out,
            &format!("{n} {g}(const {n} *source, int pe)"),
            &g,
            &format!("source: *const {t}, pe: std::ffi::c_int"),
            t,
            &format!("crate::rma::g(\"{g}\", source, pe)"),
        );
    }
}

fn amo(out: &mut String, n: &str) {
    let t = rust_type(n);
    let pe = "pe: std::ffi::c_int";
    let z = "crate::amo::zero()";
    // (suffix, op, operands in C, Rust params, a, b, fetches)
    let mut ops: Vec<(&str, &str, &str, String, &str, &str, bool)> = vec![
        (
            "fetch",
            "Get",
            "const TYPE *source",
            format!("source: *const {t}"),
            z,
            z,
            true,
        ),
        (
            "set",
            "Set",
            "TYPE *dest, TYPE value",
            format!("dest: *mut {t}, value: {t}"),
            "value",
            z,
            false,
        ),
        (
            "swap",
            "Swap",
            "TYPE *dest, TYPE value",
            format!("dest: *mut {t}, value: {t}"),
            "value",
            z,
            true,
        ),
    ];
    if n != "float" && n != "double" {
        ops.extend([
            (
                "compare_swap",
                "Fcas",
                "TYPE *dest, TYPE cond, TYPE value",
                format!("dest: *mut {t}, cond: {t}, value: {t}"),
                "cond",
                "value",
                true,
            ),
            (
                "fetch_inc",
                "Finc",
                "TYPE *dest",
                format!("dest: *mut {t}"),
                z,
                z,
                true,
            ),
            (
                "inc",
                "Inc",
                "TYPE *dest",
                format!("dest: *mut {t}"),
                z,
                z,
                false,
            ),
            (
                "fetch_add",
                "Fadd",
                "TYPE *dest, TYPE value",
                format!("dest: *mut {t}, value: {t}"),
                "value",
                z,
                true,
            ),
            (
                "add",
                "Add",
                "TYPE *dest, TYPE value",
                format!("dest: *mut {t}, value: {t}"),
                "value",
                z,
                false,
            ),
        ]);
    }
    if AMO_BIT.contains(&n) {
        for (s, op, f) in [
            ("and", "And", "fetch_and"),
            ("or", "Or", "fetch_or"),
            ("xor", "Xor", "fetch_xor"),
        ] {
            let fop: &str = match op {
                "And" => "Fand",
                "Or" => "For",
                _ => "Fxor",
            };
            ops.push((
                f,
                fop,
                "TYPE *dest, TYPE value",
                format!("dest: *mut {t}, value: {t}"),
                "value",
                z,
                true,
            ));
            ops.push((
                s,
                op,
                "TYPE *dest, TYPE value",
                format!("dest: *mut {t}, value: {t}"),
                "value",
                z,
                false,
            ));
        }
    }
    for (suffix, op, cargs, params, a, b, fetches) in ops {
        let f = format!("shmem_{n}_atomic_{suffix}");
        let target = if suffix == "fetch" { "source" } else { "dest" };
        let call = format!("crate::amo::op(\"{f}\", {target}, rgex::AtomicOp::{op}, {a}, {b}, pe)");
        let cargs_t = cargs.replace("TYPE", n);
        if fetches {
            emit_both(
                out,
                &format!("{n} {f}({cargs_t}, int pe)"),
                &f,
                &format!("{params}, {pe}"),
                t,
                &call,
            );
            let nbi = format!("{f}_nbi");
            let call = call.replace(&format!("\"{f}\""), &format!("\"{nbi}\""));
            emit_both(
                out,
                &format!("void {nbi}({n} *fetch, {cargs_t}, int pe)"),
                &nbi,
                &format!("fetch: *mut {t}, {params}, {pe}"),
                "",
                &format!("crate::amo::store(\"{nbi}\", fetch, {call})"),
            );
        } else {
            emit_both(
                out,
                &format!("void {f}({cargs_t}, int pe)"),
                &f,
                &format!("{params}, {pe}"),
                "",
                &format!("{call};"),
            );
        }
    }
}

fn sync(out: &mut String, n: &str) {
    let t = rust_type(n);
    let f = format!("shmem_{n}_wait_until");
    emit(
        out,
        &format!("void {f}({n} *ivar, int cmp, {n} cmp_value)"),
        &f,
        &format!("ivar: *mut {t}, cmp: std::ffi::c_int, cmp_value: {t}"),
        "",
        &format!("crate::wait::wait_until(\"{f}\", ivar, cmp, cmp_value)"),
    );
    let f = format!("shmem_{n}_test");
    emit(
        out,
        &format!("int {f}({n} *ivar, int cmp, {n} cmp_value)"),
        &f,
        &format!("ivar: *mut {t}, cmp: std::ffi::c_int, cmp_value: {t}"),
        "std::ffi::c_int",
        &format!("crate::wait::test(\"{f}\", ivar, cmp, cmp_value)"),
    );
    for (verb, call) in [("wait_until", "wait_words"), ("test", "test_words")] {
        for (mode, m) in [("all", "All"), ("any", "Any"), ("some", "Some")] {
            for vector in [false, true] {
                let f = format!(
                    "shmem_{n}_{verb}_{mode}{}",
                    if vector { "_vector" } else { "" }
                );
                let ret_c = match (verb, mode) {
                    ("wait_until", "all") => "void",
                    ("test", "all") => "int",
                    _ => "size_t",
                };
                let ret_r = match ret_c {
                    "void" => "",
                    "int" => "std::ffi::c_int",
                    _ => "usize",
                };
                let (vc, vr, vv) = if vector {
                    (
                        format!("{n} *cmp_values"),
                        format!("cmp_values: *mut {t}"),
                        "crate::wait::Values::Each(cmp_values)",
                    )
                } else {
                    (
                        format!("{n} cmp_value"),
                        format!("cmp_value: {t}"),
                        "crate::wait::Values::One(cmp_value)",
                    )
                };
                let (ic, ir, iv) = if mode == "some" {
                    ("size_t *indices, ", "indices: *mut usize, ", "indices")
                } else {
                    ("", "", "indices: std::ptr::null_mut()")
                };
                let conv = match ret_r {
                    "" => ";",
                    "std::ffi::c_int" => " as std::ffi::c_int",
                    _ => "",
                };
                emit(
                    out,
                    &format!("{ret_c} {f}({n} *ivars, size_t nelems, {ic}const int *status, int cmp, {vc})"),
                    &f,
                    &format!("ivars: *mut {t}, nelems: usize, {ir}status: *const std::ffi::c_int, cmp: std::ffi::c_int, {vr}"),
                    ret_r,
                    &format!(
                        "crate::wait::{call}(\"{f}\", crate::wait::Words {{ ivars, n: nelems, status, {iv}, cmp, values: {vv} }}, crate::wait::Mode::{m}){conv}"
                    ),
                );
            }
        }
    }
}

/// The reduction types (OpenSHMEM 1.5 table 12): TYPENAME, Rust type, and
/// which operator groups apply ("b" bitwise, "o" max/min, "a" sum/prod).
/// long double's are inline in shmem.h (combined in C).
const REDUCE: &[(&str, &str, &str)] = &[
    ("char", "std::ffi::c_char", "o a"),
    ("schar", "std::ffi::c_schar", "o a"),
    ("short", "std::ffi::c_short", "o a"),
    ("int", "std::ffi::c_int", "o a"),
    ("long", "std::ffi::c_long", "o a"),
    ("longlong", "std::ffi::c_longlong", "o a"),
    ("ptrdiff", "isize", "o a"),
    ("uchar", "std::ffi::c_uchar", "b o a"),
    ("ushort", "std::ffi::c_ushort", "b o a"),
    ("uint", "std::ffi::c_uint", "b o a"),
    ("ulong", "std::ffi::c_ulong", "b o a"),
    ("ulonglong", "std::ffi::c_ulonglong", "b o a"),
    ("int8", "i8", "b o a"),
    ("int16", "i16", "b o a"),
    ("int32", "i32", "b o a"),
    ("int64", "i64", "b o a"),
    ("uint8", "u8", "b o a"),
    ("uint16", "u16", "b o a"),
    ("uint32", "u32", "b o a"),
    ("uint64", "u64", "b o a"),
    ("size", "usize", "b o a"),
    ("float", "f32", "o a"),
    ("double", "f64", "o a"),
    ("complexf", "crate::reduce_ops::ComplexF", "a"),
    ("complexd", "crate::reduce_ops::ComplexD", "a"),
];

/// The deprecated `_to_all` reductions' types (long double inline too).
const TO_ALL: &[(&str, &str, &str)] = &[
    ("short", "std::ffi::c_short", "b o a"),
    ("int", "std::ffi::c_int", "b o a"),
    ("long", "std::ffi::c_long", "b o a"),
    ("longlong", "std::ffi::c_longlong", "b o a"),
    ("float", "f32", "o a"),
    ("double", "f64", "o a"),
    ("complexf", "crate::reduce_ops::ComplexF", "a"),
    ("complexd", "crate::reduce_ops::ComplexD", "a"),
];

fn ops_of(groups: &str) -> Vec<&'static str> {
    let mut v = Vec::new();
    for g in groups.split(' ') {
        match g {
            "b" => v.extend(["and", "or", "xor"]),
            "o" => v.extend(["max", "min"]),
            _ => v.extend(["sum", "prod"]),
        }
    }
    v
}

fn reductions(out: &mut String) {
    let team = "team: *const crate::team::TeamObj";
    for (n, t, g) in REDUCE {
        for op in ops_of(g) {
            let f = format!("shmem_{n}_{op}_reduce");
            emit(
                out,
                &format!("int {f}(shmem_team_t team, {n} *dest, const {n} *source, size_t nreduce)"),
                &f,
                &format!("{team}, dest: *mut {t}, source: *const {t}, nreduce: usize"),
                "std::ffi::c_int",
                &format!("crate::coll::reduce(\"{f}\", team, dest, source, nreduce, crate::reduce_ops::{op}::<{t}>)"),
            );
        }
    }
    for (n, t, g) in TO_ALL {
        for op in ops_of(g) {
            let f = format!("shmem_{n}_{op}_to_all");
            emit(
                out,
                &format!("void {f}({n} *dest, const {n} *source, int nreduce, int PE_start, int logPE_stride, int PE_size, {n} *pWrk, long *pSync)"),
                &f,
                &format!("dest: *mut {t}, source: *const {t}, nreduce: std::ffi::c_int, pe_start: std::ffi::c_int, log_pe_stride: std::ffi::c_int, pe_size: std::ffi::c_int, _p_wrk: *mut {t}, p_sync: *mut std::ffi::c_long"),
                "",
                &format!("crate::activeset::to_all(\"{f}\", dest, source, crate::coll::count(\"{f}\", nreduce), pe_start, log_pe_stride, pe_size, p_sync, crate::reduce_ops::{op}::<{t}>)"),
            );
        }
    }
}

/// The team collectives of one RMA type (or `mem`, bytes).
fn collectives(out: &mut String, n: &str, t: &str, elem: &str) {
    let team = "team: *const crate::team::TeamObj";
    let typed = n != "mem";
    let ctype = if typed { n } else { "void" };
    let name = |c: &str| {
        if typed {
            format!("shmem_{n}_{c}")
        } else {
            format!("shmem_{c}mem")
        }
    };
    let bytes = |f: &str| format!("crate::rma::bytes(\"{f}\", nelems, {elem})");
    let f = name("broadcast");
    emit(
        out,
        &format!("int {f}(shmem_team_t team, {ctype} *dest, const {ctype} *source, size_t nelems, int PE_root)"),
        &f,
        &format!("{team}, dest: *mut {t}, source: *const {t}, nelems: usize, pe_root: std::ffi::c_int"),
        "std::ffi::c_int",
        &format!("crate::coll::broadcast(\"{f}\", team, dest.cast(), source.cast(), {}, pe_root)", bytes(&f)),
    );
    for (c, fixed) in [("collect", false), ("fcollect", true)] {
        let f = name(c);
        emit(
            out,
            &format!(
                "int {f}(shmem_team_t team, {ctype} *dest, const {ctype} *source, size_t nelems)"
            ),
            &f,
            &format!("{team}, dest: *mut {t}, source: *const {t}, nelems: usize"),
            "std::ffi::c_int",
            &format!(
                "crate::coll::collect(\"{f}\", team, dest.cast(), source.cast(), {}, {fixed})",
                bytes(&f)
            ),
        );
    }
    let f = name("alltoall");
    emit(
        out,
        &format!("int {f}(shmem_team_t team, {ctype} *dest, const {ctype} *source, size_t nelems)"),
        &f,
        &format!("{team}, dest: *mut {t}, source: *const {t}, nelems: usize"),
        "std::ffi::c_int",
        &format!(
            "crate::coll::alltoall(\"{f}\", team, dest.cast(), source.cast(), {})",
            bytes(&f)
        ),
    );
    let f = name("alltoalls");
    emit(
        out,
        &format!("int {f}(shmem_team_t team, {ctype} *dest, const {ctype} *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems)"),
        &f,
        &format!("{team}, dest: *mut {t}, source: *const {t}, dst: isize, sst: isize, nelems: usize"),
        "std::ffi::c_int",
        &format!("crate::coll::alltoalls(\"{f}\", team, dest.cast(), source.cast(), dst, sst, nelems, {elem})"),
    );
}

/// The deprecated active-set collectives of 32- and 64-bit elements.
fn active_set(out: &mut String, bits: usize) {
    let size = bits / 8;
    let set = "pe_start: std::ffi::c_int, log_pe_stride: std::ffi::c_int, pe_size: std::ffi::c_int, p_sync: *mut std::ffi::c_long";
    let cset = "int PE_start, int logPE_stride, int PE_size, long *pSync";
    let args = "pe_start, log_pe_stride, pe_size, p_sync";
    let f = format!("shmem_broadcast{bits}");
    emit(
        out,
        &format!("void {f}(void *dest, const void *source, size_t nelems, int PE_root, {cset})"),
        &f,
        &format!("dest: *mut u8, source: *const u8, nelems: usize, pe_root: std::ffi::c_int, {set}"),
        "",
        &format!("crate::activeset::broadcast(\"{f}\", dest, source, crate::rma::bytes(\"{f}\", nelems, {size}), pe_root, {args})"),
    );
    for (c, fixed) in [("collect", false), ("fcollect", true)] {
        let f = format!("shmem_{c}{bits}");
        emit(
            out,
            &format!("void {f}(void *dest, const void *source, size_t nelems, {cset})"),
            &f,
            &format!("dest: *mut u8, source: *const u8, nelems: usize, {set}"),
            "",
            &format!("crate::activeset::collect(\"{f}\", dest, source, crate::rma::bytes(\"{f}\", nelems, {size}), {fixed}, {args})"),
        );
    }
    let f = format!("shmem_alltoall{bits}");
    emit(
        out,
        &format!("void {f}(void *dest, const void *source, size_t nelems, {cset})"),
        &f,
        &format!("dest: *mut u8, source: *const u8, nelems: usize, {set}"),
        "",
        &format!("crate::activeset::alltoall(\"{f}\", dest, source, 1, 1, nelems, {size}, {args})"),
    );
    let f = format!("shmem_alltoalls{bits}");
    emit(
        out,
        &format!("void {f}(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, {cset})"),
        &f,
        &format!("dest: *mut u8, source: *const u8, dst: isize, sst: isize, nelems: usize, {set}"),
        "",
        &format!("crate::activeset::alltoall(\"{f}\", dest, source, dst, sst, nelems, {size}, {args})"),
    );
}

fn main() {
    let mut out = String::from("// Generated by build.rs: do not edit.\n\n");
    for (n, t) in RMA {
        rma(&mut out, n, t, &format!("size_of::<{t}>()"), true);
    }
    for (n, bytes) in SIZED {
        rma(
            &mut out,
            n,
            &format!("[u8; {bytes}]"),
            &bytes.to_string(),
            false,
        );
    }
    rma(&mut out, "mem", "u8", "1", false);
    for n in AMO_EXT {
        amo(&mut out, n);
    }
    for n in SYNC {
        sync(&mut out, n);
    }
    for (n, t) in RMA {
        collectives(&mut out, n, t, &format!("size_of::<{t}>()"));
    }
    collectives(&mut out, "mem", "u8", "1");
    reductions(&mut out);
    active_set(&mut out, 32);
    active_set(&mut out, 64);
    let dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(format!("{dir}/typed.rs"), out).expect("OUT_DIR is writable");
    println!("cargo:rerun-if-changed=build.rs");
}
