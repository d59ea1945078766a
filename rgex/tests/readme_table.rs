//! Each README's table of variables is the registry's, as `rgex-info
//! --markdown [READER]` prints it (`rgex::info::READMES` says which README
//! holds which): edit `rgex_core::config::vars`, then paste the command's
//! output between the README's markers.

use rgex::info::{markdown, readers, Readme, Selection, READMES, TABLE_END, VARS};
use std::process::Command;

/// `readme`'s lines from its table's opening marker to the closing one,
/// or why there are none.
fn readme_table(readme: &Readme) -> Result<String, String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(readme.path);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("{} cannot be read: {e}", readme.path))?;
    let open = readme.selection.begin();
    let begin = text
        .find(&open)
        .ok_or_else(|| format!("{} has no line {open:?}", readme.path))?;
    let end = text[begin..]
        .find(TABLE_END)
        .ok_or_else(|| format!("{} has no line {TABLE_END:?} after its table", readme.path))?
        + begin
        + TABLE_END.len();
    Ok(format!("{}\n", &text[begin..end]))
}

#[test]
fn every_readme_table_is_the_registry() {
    let mut wrong = Vec::new();
    for readme in READMES {
        let want = markdown(readme.selection);
        match readme_table(readme) {
            Ok(have) if have == want => {}
            Ok(have) => {
                let first = have
                    .lines()
                    .zip(want.lines())
                    .find(|(h, w)| h != w)
                    .map_or("(one is longer)".to_string(), |(h, w)| {
                        format!("README: {h}\nregistry: {w}")
                    });
                wrong.push(format!(
                    "{}'s table of variables differs from the registry; replace it with \
                     `{}`'s output. First difference:\n{first}",
                    readme.path,
                    readme.selection.command()
                ));
            }
            Err(why) => wrong.push(format!(
                "{why}; put `{}`'s output there",
                readme.selection.command()
            )),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn each_table_has_a_row_per_selected_variable() {
    for readme in READMES {
        let table = markdown(readme.selection);
        let rows: Vec<&str> = table
            .lines()
            .filter(|l| l.starts_with("| `RGEX_"))
            .collect();
        let vars: Vec<_> = readme.selection.vars().collect();
        assert!(!vars.is_empty(), "{}: no variable selected", readme.path);
        assert_eq!(rows.len(), vars.len(), "{}", readme.path);
        for (row, v) in rows.iter().zip(&vars) {
            assert!(row.starts_with(&format!("| `{}` | ", v.name)), "{row}");
            assert_eq!(row.matches(" | ").count(), 3, "four cells: {row}");
        }
    }
    assert_eq!(Selection::All.vars().count(), VARS.len());
}

#[test]
fn a_conduit_table_lists_its_own_variables_and_the_bypass() {
    for (who, prefix) in [("ofi", "RGEX_OFI_"), ("ibv", "RGEX_IBV_")] {
        let listed: Vec<&str> = Selection::ReadBy(who).vars().map(|v| v.name).collect();
        for v in VARS {
            // The kit's bypass is both network conduits'.
            let theirs = v.name.starts_with(prefix) || v.name == "RGEX_SHM_BYPASS";
            assert_eq!(
                listed.contains(&v.name),
                theirs,
                "{}: reader {:?}, {who}'s table",
                v.name,
                v.reader
            );
        }
    }
}

#[test]
fn rgex_info_markdown_prints_each_table() {
    for readme in READMES {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rgex-info"));
        cmd.arg("--markdown");
        if let Selection::ReadBy(who) = readme.selection {
            cmd.arg(who);
        }
        let out = cmd.output().expect("rgex-info runs");
        assert!(out.status.success(), "{}: {out:?}", readme.path);
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            markdown(readme.selection),
            "{}",
            readme.path
        );
    }
}

#[test]
fn rgex_info_markdown_refuses_a_reader_nobody_is() {
    let out = Command::new(env!("CARGO_BIN_EXE_rgex-info"))
        .args(["--markdown", "ofl"])
        .output()
        .expect("rgex-info runs");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("no RGEX_ variable is read by \"ofl\"") && err.contains(&readers().join(", ")),
        "{err}"
    );
}
