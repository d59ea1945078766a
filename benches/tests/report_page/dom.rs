//! Just enough of an HTML reader for the report page's tables: each
//! table's caption and rows, each row's and cell's `data-rec`, each
//! cell's text (tags dropped, entities decoded, spaces collapsed).
//! Reads both the page as bench-page wrote it and chromium's dump of
//! the rendered DOM.

/// One cell.
#[derive(Debug, Default)]
pub struct Cell {
    /// `th` or `td`.
    pub header: bool,
    /// Its `data-rec`, if any.
    pub rec: Option<String>,
    /// Its text.
    pub text: String,
}

/// One row.
#[derive(Debug, Default)]
pub struct Row {
    /// Its `data-rec`, if any.
    pub rec: Option<String>,
    /// Its cells.
    pub cells: Vec<Cell>,
}

/// One table.
#[derive(Debug, Default)]
pub struct Table {
    /// Its caption's text.
    pub caption: String,
    /// Its rows, the header's first.
    pub rows: Vec<Row>,
}

impl Table {
    /// The header row: the first row of `th` cells only.
    pub fn header(&self) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| !r.cells.is_empty() && r.cells.iter().all(|c| c.header))
    }
}

/// Where text goes while reading.
#[derive(PartialEq)]
enum In {
    Nothing,
    Caption,
    Cell,
}

/// Every table of `html`, in order (tables do not nest in the page).
pub fn tables(html: &str) -> Vec<Table> {
    let mut out: Vec<Table> = Vec::new();
    let mut table: Option<Table> = None;
    let mut into = In::Nothing;
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        push_text(&mut table, &into, text);
        let Some(gt) = rest[lt..].find('>') else {
            break;
        };
        let tag = &rest[lt + 1..lt + gt];
        rest = &rest[lt + gt + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        // A tag between words separates them (<br>, a block <span>).
        push_text(&mut table, &into, " ");
        match (name.as_str(), closing) {
            ("table", false) => table = Some(Table::default()),
            ("table", true) => {
                if let Some(t) = table.take() {
                    out.push(t);
                }
                into = In::Nothing;
            }
            ("caption", false) => into = In::Caption,
            ("caption", true) => into = In::Nothing,
            ("tr", false) => {
                if let Some(t) = &mut table {
                    t.rows.push(Row {
                        rec: attr(tag, "data-rec"),
                        cells: Vec::new(),
                    });
                }
            }
            ("th" | "td", false) => {
                if let Some(row) = table.as_mut().and_then(|t| t.rows.last_mut()) {
                    row.cells.push(Cell {
                        header: name == "th",
                        rec: attr(tag, "data-rec"),
                        text: String::new(),
                    });
                    into = In::Cell;
                }
            }
            ("th" | "td", true) => into = In::Nothing,
            _ => {}
        }
    }
    for t in &mut out {
        t.caption = squash(&t.caption);
        for r in &mut t.rows {
            for c in &mut r.cells {
                c.text = squash(&c.text);
            }
        }
    }
    out
}

fn push_text(table: &mut Option<Table>, into: &In, text: &str) {
    let Some(t) = table else { return };
    match into {
        In::Caption => t.caption.push_str(&decode(text)),
        In::Cell => {
            if let Some(c) = t.rows.last_mut().and_then(|r| r.cells.last_mut()) {
                c.text.push_str(&decode(text));
            }
        }
        In::Nothing => {}
    }
}

/// The value of attribute `name` in a start tag's text, decoded.
fn attr(tag: &str, name: &str) -> Option<String> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[at..].find('"')?;
    Some(decode(&tag[at..at + end]))
}

/// Whitespace runs (and no-break spaces) as one space, trimmed.
pub fn squash(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c == '\u{a0}')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Decode the character references the page and chromium's dump use.
fn decode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let Some(semi) = rest.find(';').filter(|&i| i <= 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let name = &rest[1..semi];
        let ch = match name {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some('\u{a0}'),
            "times" => Some('×'),
            "le" => Some('≤'),
            "ge" => Some('≥'),
            "middot" => Some('·'),
            _ => name
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn the_reader_finds_cells_headers_and_records() {
    let t = tables(
        "<p>x</p><table><caption>ns &amp; <i>more</i></caption><thead><tr><th>size</th><th>put<span>rgex</span></th></tr></thead>\
         <tbody><tr data-rec=\"a.json#0\"><th>8</th><td data-rec=\"b.json#1\"><b>1.23</b><br>1.00 .. 2.00 &times; 3</td></tr></tbody></table>",
    );
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].caption, "ns & more");
    assert_eq!(
        t[0].header().map(|h| h.cells[1].text.as_str()),
        Some("put rgex")
    );
    let row = &t[0].rows[1];
    assert_eq!(row.rec.as_deref(), Some("a.json#0"));
    assert_eq!(row.cells[1].rec.as_deref(), Some("b.json#1"));
    assert_eq!(row.cells[1].text, "1.23 1.00 .. 2.00 × 3");
}
