//! The command line every bench shares: `--quick`, `--json PATH`,
//! `--reps N`, plus bench-specific options, and writing the outputs.

use crate::report::{write_json, Plot, Record};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Options every bench takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opts {
    /// A smoke run (short repetitions, well under 20 s).
    pub quick: bool,
    /// Where the JSON records go; the SVG plots go next to it.
    pub json: PathBuf,
    /// Repetitions per point (at least 1; the default is 5).
    pub reps: usize,
}

/// Parse a positive number for option `name`.
pub fn positive(name: &str, v: Option<String>) -> Result<u64, String> {
    let v = v.ok_or(format!("{name} needs a number"))?;
    v.parse()
        .ok()
        .filter(|&n| n >= 1)
        .ok_or(format!("{name} {v:?}: not a positive number"))
}

impl Opts {
    /// Parse `args` (without the program name) for bench `bench`; `extra`
    /// is offered every argument this function does not know, with the
    /// rest of the arguments, and returns `Ok(false)` if it does not know
    /// it either. `Ok(None)` for `--help`.
    ///
    /// ```
    /// use rgex_benches::cli::Opts;
    /// let args = ["--quick", "--reps", "7"].map(String::from);
    /// let o = Opts::parse("x", args.into_iter(), |_, _| Ok(false)).unwrap().unwrap();
    /// assert!(o.quick && o.reps == 7 && o.json.ends_with("x.json"));
    /// ```
    pub fn parse(
        bench: &str,
        mut args: impl Iterator<Item = String>,
        mut extra: impl FnMut(&str, &mut dyn Iterator<Item = String>) -> Result<bool, String>,
    ) -> Result<Option<Opts>, String> {
        let mut o = Opts {
            quick: false,
            json: PathBuf::from(format!("bench-results/{bench}.json")),
            reps: 5,
        };
        while let Some(a) = args.next() {
            match a.as_str() {
                "--quick" => o.quick = true,
                "--json" => o.json = args.next().ok_or("--json needs a path")?.into(),
                "--reps" => o.reps = positive("--reps", args.next())? as usize,
                "-h" | "--help" => return Ok(None),
                other => {
                    if !extra(other, &mut args)? {
                        return Err(format!("unknown argument {other:?} (try --help)"));
                    }
                }
            }
        }
        Ok(Some(o))
    }

    /// Target duration of one repetition: `quick` or `full`.
    pub fn target(&self, quick: Duration, full: Duration) -> Duration {
        if self.quick {
            quick
        } else {
            full
        }
    }

    /// The path of the plot with `suffix` (`""` for the main one): next
    /// to the JSON, extension `.svg`.
    pub fn svg(&self, suffix: &str) -> PathBuf {
        let stem = self
            .json
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        self.json.with_file_name(format!("{stem}{suffix}.svg"))
    }

    /// Write the records and the plots (`(suffix, plot)`), then print
    /// where they went.
    pub fn write(&self, records: &[Record], plots: &[(&str, Plot)]) -> Result<(), String> {
        write_json(&self.json, records)
            .map_err(|e| format!("write {}: {e}", self.json.display()))?;
        println!("\nJSON records: {}", self.json.display());
        for (suffix, p) in plots {
            let path = self.svg(suffix);
            p.write(&path)
                .map_err(|e| format!("write {}: {e}", path.display()))?;
            println!("SVG plot:     {}", display(&path));
        }
        Ok(())
    }
}

fn display(p: &Path) -> String {
    p.display().to_string()
}
