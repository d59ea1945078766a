//! Aligned text tables.

use std::fmt;

/// A text table: a header row and data rows, printed with every column
/// padded to its widest cell (the first column left-aligned, the others
/// right-aligned, as figures are).
///
/// ```
/// let mut t = rgex_benches::report::Table::new(["size", "ns"]);
/// t.row(["0", "250"]);
/// t.row(["65536", "9000"]);
/// let text = t.to_string();
/// assert!(text.contains("65536"));
/// assert_eq!(text.lines().count(), 4); // header, rule, two rows
/// ```
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headings.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Append a row (missing cells print empty, extra cells are kept).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = Vec::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate() {
                let n = c.chars().count();
                match w.get_mut(i) {
                    Some(x) => *x = (*x).max(n),
                    None => w.push(n),
                }
            }
        }
        w
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self.widths();
        let line = |f: &mut fmt::Formatter<'_>, r: &[String]| -> fmt::Result {
            for (i, width) in w.iter().enumerate() {
                let c = r.get(i).map_or("", String::as_str);
                let sep = if i == 0 { "" } else { "  " };
                if i == 0 {
                    write!(f, "{sep}{c:<width$}")?;
                } else {
                    write!(f, "{sep}{c:>width$}")?;
                }
            }
            writeln!(f)
        };
        line(f, &self.header)?;
        let total = w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
        writeln!(f, "{}", "-".repeat(total))?;
        for r in &self.rows {
            line(f, r)?;
        }
        Ok(())
    }
}
