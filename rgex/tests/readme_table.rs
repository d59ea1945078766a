//! README.md's table of variables is the registry's, as
//! `rgex-info --markdown` prints it: edit `rgex_core::config::vars`, then
//! paste `rgex-info --markdown` between the README's markers.

use std::process::Command;

/// README.md's lines from the table's opening marker to its closing one.
fn readme_table() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md is readable");
    let begin = readme
        .find(rgex::info::TABLE_BEGIN)
        .unwrap_or_else(|| panic!("README.md has no line {:?}", rgex::info::TABLE_BEGIN));
    let end = readme[begin..]
        .find(rgex::info::TABLE_END)
        .unwrap_or_else(|| panic!("README.md has no line {:?}", rgex::info::TABLE_END))
        + begin
        + rgex::info::TABLE_END.len();
    format!("{}\n", &readme[begin..end])
}

#[test]
fn the_readme_table_is_the_registry() {
    let want = rgex::info::markdown();
    let have = readme_table();
    if have != want {
        let first = have
            .lines()
            .zip(want.lines())
            .find(|(h, w)| h != w)
            .map_or("(one is longer)".to_string(), |(h, w)| {
                format!("README: {h}\nregistry: {w}")
            });
        panic!(
            "README.md's table of variables differs from the registry; replace it with \
             `rgex-info --markdown`'s output. First difference:\n{first}"
        );
    }
}

#[test]
fn the_table_has_a_row_per_registered_variable() {
    let table = rgex::info::markdown();
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| `RGEX_"))
        .collect();
    assert_eq!(rows.len(), rgex::info::VARS.len());
    for (row, v) in rows.iter().zip(rgex::info::VARS) {
        assert!(row.starts_with(&format!("| `{}` | ", v.name)), "{row}");
        assert_eq!(row.matches(" | ").count(), 3, "four cells: {row}");
    }
}

#[test]
fn rgex_info_markdown_prints_the_table() {
    let out = Command::new(env!("CARGO_BIN_EXE_rgex-info"))
        .arg("--markdown")
        .output()
        .expect("rgex-info runs");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        rgex::info::markdown()
    );
}
