//! Cells bounded before calamine opens a zip-based workbook (.xlsx, .xlsm, .ods). calamine reads
//! each string whole (every shared string when it opens an .xlsx, each cell of an .ods), and
//! quick-xml holds each text run and each tag whole while reading it: one crafted cell of a few
//! hundred megabytes costs gigabytes, although it compresses into a small file.
//!
//! This streams the XML parts of the archive first, holding at most one tag at a time. A cell
//! (an .xlsx shared string or cell, an .ods cell) with more characters than the cell limit is
//! replaced by a short marker carrying its length, in a copy of the archive that only rewrites
//! the parts holding such cells; the reader then skips the cell's row with that reason. A tag
//! (or comment) or a text outside any cell larger than [`MAX_MARKUP`] refuses the file: no real
//! workbook has one.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{Cursor, Read, Write};

use crate::error::SheetError;
use crate::format::Format;
use crate::limits::human_bytes;

/// The longest tag, comment, processing instruction or text outside a cell accepted. A cell
/// at Excel's limit written as attributes (an .ods `office:string-value`) stays far below.
pub(crate) const MAX_MARKUP: usize = 1024 * 1024;

/// Bytes after a `&` that still count as one entity (`&#x10FFFF;` is the longest real one).
const MAX_ENTITY: u8 = 16;

/// Starts and ends the text that stands for a cell too long to keep. U+FDD0 is a noncharacter:
/// no spreadsheet program writes it, and a file that does only skips its own row.
const MARKER: char = '\u{FDD0}';
const MARKER_WORDS: &str = "overlong cell of ";

/// The length of the cell that a marker stands for, when `text` is one.
pub(crate) fn overlong(text: &str) -> Option<u64> {
    text.strip_prefix(MARKER)?
        .strip_prefix(MARKER_WORDS)?
        .strip_suffix(MARKER)?
        .parse()
        .ok()
}

fn marker(chars: u64) -> String {
    format!("{MARKER}{MARKER_WORDS}{chars}{MARKER}")
}

/// How a format's XML names its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// `<si>` shared strings and `<c>` cells.
    Xlsx,
    /// `<table:table-cell>` cells, whose `<text:s text:c="N"/>` stands for N spaces and whose
    /// paragraphs each add a line break.
    Ods,
}

impl Dialect {
    fn of(format: Format) -> Option<Dialect> {
        match format {
            Format::Xlsx | Format::Xlsm => Some(Dialect::Xlsx),
            Format::Ods => Some(Dialect::Ods),
            Format::Xls | Format::Csv => None,
        }
    }

    /// Whether an element (by local name) is a cell whose text is measured.
    fn is_cell(self, local: &[u8]) -> bool {
        match self {
            Dialect::Xlsx => local == b"si" || local == b"c",
            Dialect::Ods => local == b"table-cell" || local == b"covered-table-cell",
        }
    }

    /// Characters an element inside a cell adds when the cell is read (besides its text).
    fn added_chars(self, local: &[u8], tag: &[u8]) -> u64 {
        match (self, local) {
            (Dialect::Ods, b"s") => attribute(tag, b"c")
                .and_then(|c| std::str::from_utf8(c).ok()?.trim().parse().ok())
                .unwrap_or(1),
            // A paragraph after the first adds a line break (counted by the caller).
            (Dialect::Ods, b"tab" | b"line-break") => 1,
            _ => 0,
        }
    }

    /// What replaces a cell too long to keep: its start tag (rewritten for .xlsx cells, whose
    /// type must become an inline string) and its content.
    fn replacement(self, tag: &[u8], chars: u64) -> Vec<u8> {
        let name = tag_name(tag);
        let prefix = match name.iter().rposition(|b| *b == b':') {
            Some(colon) => &name[..=colon],
            None => &b""[..],
        };
        let text = marker(chars);
        let mut out = Vec::new();
        match (self, local_name(name)) {
            (Dialect::Xlsx, b"c") => {
                out.push(b'<');
                out.extend_from_slice(name);
                if let Some(reference) = attribute(tag, b"r") {
                    out.extend_from_slice(b" r=\"");
                    out.extend_from_slice(reference);
                    out.push(b'"');
                }
                out.extend_from_slice(b" t=\"inlineStr\">");
                for part in [&b"<"[..], prefix, b"is><", prefix, b"t>"] {
                    out.extend_from_slice(part);
                }
                out.extend_from_slice(text.as_bytes());
                for part in [&b"</"[..], prefix, b"t></", prefix, b"is>"] {
                    out.extend_from_slice(part);
                }
            }
            (Dialect::Xlsx, _) => {
                out.extend_from_slice(tag);
                for part in [&b"<"[..], prefix, b"t>"] {
                    out.extend_from_slice(part);
                }
                out.extend_from_slice(text.as_bytes());
                for part in [&b"</"[..], prefix, b"t>"] {
                    out.extend_from_slice(part);
                }
            }
            (Dialect::Ods, _) => {
                // calamine reads paragraphs by this exact name.
                out.extend_from_slice(tag);
                out.extend_from_slice(b"<text:p>");
                out.extend_from_slice(text.as_bytes());
                out.extend_from_slice(b"</text:p>");
            }
        }
        out
    }
}

/// The workbook as calamine may read it: the bytes themselves when no cell is too long, else a
/// copy whose too-long cells are markers. Refuses markup past [`MAX_MARKUP`].
pub(crate) fn guard(
    bytes: &[u8],
    format: Format,
    max_chars: usize,
) -> Result<Cow<'_, [u8]>, SheetError> {
    let Some(dialect) = Dialect::of(format) else {
        return Ok(Cow::Borrowed(bytes));
    };
    let unreadable = |e: &dyn std::fmt::Display| SheetError::unreadable(format, e);
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| unreadable(&e))?;
    // Per part: the cells (by their order in it) to replace, with their lengths.
    let mut long: BTreeMap<usize, BTreeMap<u64, u64>> = BTreeMap::new();
    for index in 0..archive.len() {
        let entry = archive.by_index(index).map_err(|e| unreadable(&e))?;
        let name = entry.name().map_err(|e| unreadable(&e))?.into_owned();
        if !is_xml(&name) {
            continue;
        }
        let mut scanner = Scanner::new(dialect, max_chars, None);
        stream(entry, &mut scanner, None).map_err(|e| e.into_sheet_error(format, &name))?;
        if !scanner.long.is_empty() {
            long.insert(index, scanner.long);
        }
    }
    if long.is_empty() {
        return Ok(Cow::Borrowed(bytes));
    }
    rewrite(&mut archive, dialect, max_chars, long, format).map(Cow::Owned)
}

/// Copies the archive, rewriting the parts that hold cells too long and copying the others
/// as they are (still compressed).
fn rewrite(
    archive: &mut zip::ZipArchive<Cursor<&[u8]>>,
    dialect: Dialect,
    max_chars: usize,
    mut long: BTreeMap<usize, BTreeMap<u64, u64>>,
    format: Format,
) -> Result<Vec<u8>, SheetError> {
    let unreadable = |e: &dyn std::fmt::Display| SheetError::unreadable(format, e);
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    for index in 0..archive.len() {
        match long.remove(&index) {
            None => {
                let entry = archive.by_index_raw(index).map_err(|e| unreadable(&e))?;
                writer.raw_copy_file(entry).map_err(|e| unreadable(&e))?;
            }
            Some(replace) => {
                let entry = archive.by_index(index).map_err(|e| unreadable(&e))?;
                let name = entry.name().map_err(|e| unreadable(&e))?.into_owned();
                writer
                    .start_file(name.as_str(), options)
                    .map_err(|e| unreadable(&e))?;
                let mut scanner = Scanner::new(dialect, max_chars, Some(replace));
                stream(entry, &mut scanner, Some(&mut writer))
                    .map_err(|e| e.into_sheet_error(format, &name))?;
            }
        }
    }
    let cursor = writer.finish().map_err(|e| unreadable(&e))?;
    Ok(cursor.into_inner())
}

/// Whether an archive part is XML that calamine may parse.
fn is_xml(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.ends_with(".xml") || name.ends_with(".rels")
}

/// Why a part could not be streamed.
enum StreamError {
    Io(std::io::Error),
    Markup,
    Text,
}

impl StreamError {
    fn into_sheet_error(self, format: Format, part: &str) -> SheetError {
        match self {
            StreamError::Io(e) => SheetError::unreadable(format, format!("{part}: {e}")),
            StreamError::Markup => SheetError::TooLarge {
                reason: format!(
                    "{part} holds a tag or comment larger than {}",
                    human_bytes(MAX_MARKUP as u64)
                ),
            },
            StreamError::Text => SheetError::TooLarge {
                reason: format!(
                    "{part} holds a text outside any cell larger than {}",
                    human_bytes(MAX_MARKUP as u64)
                ),
            },
        }
    }
}

/// Feeds a part through the scanner, writing what it passes on to `out` (when rewriting).
fn stream(
    mut part: impl Read,
    scanner: &mut Scanner,
    mut out: Option<&mut dyn Write>,
) -> Result<(), StreamError> {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut passed = Vec::new();
    loop {
        let read = part.read(&mut chunk).map_err(StreamError::Io)?;
        if read == 0 {
            break;
        }
        scanner.feed(&chunk[..read], out.is_some().then_some(&mut passed))?;
        if let Some(out) = out.as_mut() {
            out.write_all(&passed).map_err(StreamError::Io)?;
            passed.clear();
        }
    }
    scanner.finish(out.is_some().then_some(&mut passed));
    if let Some(out) = out.as_mut() {
        out.write_all(&passed).map_err(StreamError::Io)?;
    }
    Ok(())
}

/// Where the scanner is in the XML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Character data; `entity` counts the bytes since a `&` while inside `&…;`.
    Text { entity: u8 },
    /// Inside `<…>` (kept in `markup`); `quote` is the open attribute quote, if any.
    Markup { quote: Option<u8> },
    /// Inside `<!--…-->`.
    Comment,
    /// Inside `<![CDATA[…]]>`: text, passed on as it comes.
    Cdata,
    /// Inside `<!…>` other than the two above (kept in `markup`); `depth` counts `[`.
    Declaration { depth: u32 },
}

/// The cell being read.
#[derive(Debug)]
struct OpenCell {
    /// Its order among the part's cells.
    ordinal: u64,
    chars: u64,
    /// Cells nested inside it (an .ods cell may hold a table), counted as its own text.
    depth: u32,
    /// Whether it is being replaced (its content is not passed on).
    replaced: bool,
    /// Whether an .ods paragraph started in it (each further one adds a line break).
    paragraph: bool,
}

/// A streaming, allocation-bounded reader of XML that measures the text of each cell.
struct Scanner {
    dialect: Dialect,
    max_chars: u64,
    state: State,
    /// The current tag or declaration, from its `<`.
    markup: Vec<u8>,
    /// Bytes of the current text run outside cells.
    run: usize,
    /// The last bytes of a comment or CDATA section, to find its end.
    tail: [u8; 2],
    cell: Option<OpenCell>,
    cells: u64,
    /// Scanning: the cells found too long. Rewriting: the cells to replace.
    long: BTreeMap<u64, u64>,
    rewriting: bool,
}

impl Scanner {
    fn new(dialect: Dialect, max_chars: usize, replace: Option<BTreeMap<u64, u64>>) -> Scanner {
        Scanner {
            dialect,
            max_chars: max_chars as u64,
            state: State::Text { entity: 0 },
            markup: Vec::new(),
            run: 0,
            tail: [0; 2],
            cell: None,
            cells: 0,
            rewriting: replace.is_some(),
            long: replace.unwrap_or_default(),
        }
    }

    /// Whether bytes of text are passed on now (not inside a replaced cell).
    fn passing(&self) -> bool {
        !self.cell.as_ref().is_some_and(|c| c.replaced)
    }

    /// Counts a run of plain text: characters inside a cell, bytes outside.
    fn count_run(&mut self, run: &[u8]) -> Result<(), StreamError> {
        match &mut self.cell {
            Some(cell) => {
                let chars = run.iter().filter(|b| (**b as i8) >= -0x40).count();
                cell.chars = cell.chars.saturating_add(chars as u64);
            }
            None => {
                self.run = self.run.saturating_add(run.len());
                if self.run > MAX_MARKUP {
                    return Err(StreamError::Text);
                }
            }
        }
        Ok(())
    }

    fn count_text(&mut self, byte: u8) -> Result<(), StreamError> {
        match &mut self.cell {
            Some(cell) => {
                if byte & 0xC0 != 0x80 {
                    cell.chars += 1;
                }
            }
            None => {
                self.run += 1;
                if self.run > MAX_MARKUP {
                    return Err(StreamError::Text);
                }
            }
        }
        Ok(())
    }

    fn feed(&mut self, input: &[u8], mut out: Option<&mut Vec<u8>>) -> Result<(), StreamError> {
        let mut at = 0;
        while at < input.len() {
            // Plain text up to the next markup or entity, taken in one piece: a cell of
            // hundreds of megabytes is measured at memory speed.
            if self.state == (State::Text { entity: 0 }) {
                let rest = &input[at..];
                let run = &rest[..memchr::memchr2(b'<', b'&', rest).unwrap_or(rest.len())];
                self.count_run(run)?;
                if let Some(out) = out.as_mut().filter(|_| self.passing()) {
                    out.extend_from_slice(run);
                }
                at += run.len();
                if at == input.len() {
                    break;
                }
            }
            let byte = input[at];
            at += 1;
            match self.state {
                State::Text { entity } => {
                    if byte == b'<' {
                        self.state = State::Markup { quote: None };
                        self.run = 0;
                        self.markup.clear();
                        self.markup.push(byte);
                        continue;
                    }
                    if let Some(out) = out.as_mut().filter(|_| self.passing()) {
                        out.push(byte);
                    }
                    if entity > 0 {
                        // An entity is one character; past any real entity's length, the
                        // bytes count as text again (the XML reader refuses them anyway).
                        self.state = State::Text {
                            entity: if byte == b';' || entity >= MAX_ENTITY {
                                0
                            } else {
                                entity + 1
                            },
                        };
                        if entity < MAX_ENTITY {
                            continue;
                        }
                    }
                    if byte == b'&' {
                        self.state = State::Text { entity: 1 };
                    }
                    self.count_text(byte)?;
                }
                State::Markup { quote } => {
                    self.push_markup(byte)?;
                    match (quote, byte) {
                        (Some(q), _) if byte == q => self.state = State::Markup { quote: None },
                        (Some(_), _) => {}
                        (None, b'"' | b'\'') if self.markup.len() > 2 => {
                            self.state = State::Markup { quote: Some(byte) }
                        }
                        (None, b'>') => self.end_tag(out.as_deref_mut()),
                        (None, _) if self.markup == b"<!--" => {
                            self.state = State::Comment;
                            self.tail = [0; 2];
                        }
                        (None, _) if self.markup == b"<![CDATA[" => {
                            if let Some(out) = out.as_mut().filter(|_| self.passing()) {
                                out.extend_from_slice(&self.markup);
                            }
                            self.state = State::Cdata;
                            self.tail = [0; 2];
                        }
                        (None, _)
                            if self.markup.len() > 2
                                && self.markup[1] == b'!'
                                && !b"<![CDATA[".starts_with(&self.markup)
                                && !b"<!--".starts_with(&self.markup) =>
                        {
                            self.state = State::Declaration { depth: 0 };
                        }
                        _ => {}
                    }
                }
                State::Comment => {
                    self.push_markup(byte)?;
                    if byte == b'>' && self.tail == *b"--" {
                        self.end_markup(out.as_deref_mut());
                    }
                    self.tail = [self.tail[1], byte];
                }
                State::Declaration { depth } => {
                    self.push_markup(byte)?;
                    match byte {
                        b'[' => self.state = State::Declaration { depth: depth + 1 },
                        b']' => {
                            self.state = State::Declaration {
                                depth: depth.saturating_sub(1),
                            }
                        }
                        b'>' if depth == 0 => self.end_markup(out.as_deref_mut()),
                        _ => {}
                    }
                }
                State::Cdata => {
                    if let Some(out) = out.as_mut().filter(|_| self.passing()) {
                        out.push(byte);
                    }
                    if byte == b'>' && self.tail == *b"]]" {
                        // The `]]` were counted as text.
                        if let Some(cell) = &mut self.cell {
                            cell.chars = cell.chars.saturating_sub(2);
                        }
                        self.state = State::Text { entity: 0 };
                        self.run = 0;
                    } else {
                        self.count_text(byte)?;
                    }
                    self.tail = [self.tail[1], byte];
                }
            }
        }
        Ok(())
    }

    /// At the end of the part: whatever is left is passed on for the XML reader to judge.
    fn finish(&mut self, out: Option<&mut Vec<u8>>) {
        if let Some(out) = out
            && matches!(
                self.state,
                State::Markup { .. } | State::Comment | State::Declaration { .. }
            )
            && self.passing()
        {
            out.extend_from_slice(&self.markup);
        }
    }

    fn push_markup(&mut self, byte: u8) -> Result<(), StreamError> {
        if self.markup.len() >= MAX_MARKUP {
            return Err(StreamError::Markup);
        }
        self.markup.push(byte);
        Ok(())
    }

    /// A comment, declaration or processing instruction ended: passed on as it was.
    fn end_markup(&mut self, out: Option<&mut Vec<u8>>) {
        if let Some(out) = out.filter(|_| self.passing()) {
            out.extend_from_slice(&self.markup);
        }
        self.state = State::Text { entity: 0 };
    }

    /// A tag ended: cells start and end here.
    fn end_tag(&mut self, out: Option<&mut Vec<u8>>) {
        self.state = State::Text { entity: 0 };
        let tag = std::mem::take(&mut self.markup);
        let closing = tag.get(1) == Some(&b'/');
        let empty = tag.ends_with(b"/>");
        let special = matches!(tag.get(1), Some(b'?' | b'!'));
        let name = tag_name(&tag);
        let local = local_name(name);
        let is_cell = !special && self.dialect.is_cell(local);
        let mut replacement = None;
        match &mut self.cell {
            None if is_cell && !closing => {
                let ordinal = self.cells;
                self.cells += 1;
                let replaced = self.rewriting && !empty && self.long.contains_key(&ordinal);
                if replaced {
                    let chars = self.long.get(&ordinal).copied().unwrap_or_default();
                    replacement = Some(self.dialect.replacement(&tag, chars));
                }
                if !empty {
                    self.cell = Some(OpenCell {
                        ordinal,
                        chars: 0,
                        depth: 0,
                        replaced,
                        paragraph: false,
                    });
                }
            }
            Some(cell) if is_cell && !closing && !empty => cell.depth += 1,
            Some(cell) if is_cell && closing && cell.depth > 0 => cell.depth -= 1,
            Some(cell) if is_cell && closing => {
                if !self.rewriting && cell.chars > self.max_chars {
                    self.long.insert(cell.ordinal, cell.chars);
                }
                // The end tag is passed on below, replaced cell or not.
                self.cell = None;
            }
            Some(cell) if !closing && !special => {
                let mut added = self.dialect.added_chars(local, &tag);
                if self.dialect == Dialect::Ods && local == b"p" {
                    added = u64::from(cell.paragraph);
                    cell.paragraph = true;
                }
                cell.chars = cell.chars.saturating_add(added);
            }
            _ => {}
        }
        if let Some(out) = out {
            match replacement {
                Some(replacement) => out.extend_from_slice(&replacement),
                None if self.passing() => out.extend_from_slice(&tag),
                None => {}
            }
        }
        self.markup = tag;
        self.markup.clear();
    }
}

/// The name of a tag: `<x:c r="A1">` → `x:c`, `</c>` → `c`.
fn tag_name(tag: &[u8]) -> &[u8] {
    let start = if tag.get(1) == Some(&b'/') { 2 } else { 1 };
    let rest = tag.get(start..).unwrap_or_default();
    let end = rest
        .iter()
        .position(|b| b.is_ascii_whitespace() || *b == b'/' || *b == b'>')
        .unwrap_or(rest.len());
    &rest[..end]
}

/// A name without its namespace prefix.
fn local_name(name: &[u8]) -> &[u8] {
    match name.iter().rposition(|b| *b == b':') {
        Some(colon) => &name[colon + 1..],
        None => name,
    }
}

/// The raw value of an attribute of a tag, found by its local name.
fn attribute<'t>(tag: &'t [u8], wanted: &[u8]) -> Option<&'t [u8]> {
    let name = tag_name(tag);
    let start = tag.iter().position(|b| *b == b'<')? + 1 + name.len();
    let mut rest = tag.get(start..)?;
    loop {
        let skip = rest.iter().position(|b| !b.is_ascii_whitespace())?;
        rest = &rest[skip..];
        let eq = rest.iter().position(|b| *b == b'=')?;
        let attribute = rest[..eq].trim_ascii();
        rest = rest[eq + 1..].trim_ascii_start();
        let quote = *rest.first()?;
        if quote != b'"' && quote != b'\'' {
            return None;
        }
        let end = rest[1..].iter().position(|b| *b == quote)?;
        let value = &rest[1..1 + end];
        if local_name(attribute) == wanted {
            return Some(value);
        }
        rest = &rest[end + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(dialect: Dialect, max: usize, xml: &str) -> BTreeMap<u64, u64> {
        let mut scanner = Scanner::new(dialect, max, None);
        // Byte by byte and whole: the result may not depend on how the stream is cut.
        for byte in xml.as_bytes() {
            scanner.feed(&[*byte], None).ok().unwrap();
        }
        let whole = {
            let mut s = Scanner::new(dialect, max, None);
            s.feed(xml.as_bytes(), None).ok().unwrap();
            s.long
        };
        assert_eq!(scanner.long, whole);
        whole
    }

    fn rewrite_xml(dialect: Dialect, max: usize, xml: &str) -> String {
        let long = scan(dialect, max, xml);
        let mut scanner = Scanner::new(dialect, max, Some(long));
        let mut out = Vec::new();
        scanner.feed(xml.as_bytes(), Some(&mut out)).ok().unwrap();
        scanner.finish(Some(&mut out));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn cells_are_measured_in_characters() {
        assert_eq!(
            scan(
                Dialect::Xlsx,
                0,
                "<?xml version=\"1.0\"?><sst><si><t>ab</t></si></sst>"
            ),
            BTreeMap::from([(0, 2)])
        );
        let sst = r#"<?xml version="1.0"?><sst count="3"><si><t>ab&amp;c</t></si><si><r><t>Ä</t></r><r><rPr><b/></rPr><t xml:space="preserve">ÖÜ&#x41;</t></r></si><si><t><![CDATA[<12345>]]></t></si></sst>"#;
        assert_eq!(scan(Dialect::Xlsx, 7, sst), BTreeMap::new());
        assert_eq!(
            scan(Dialect::Xlsx, 3, sst),
            BTreeMap::from([(0, 4), (1, 4), (2, 7)])
        );
    }

    #[test]
    fn ods_spaces_and_paragraphs_count() {
        let content = r#"<table:table-row><table:table-cell office:value-type="string"><text:p>a<text:s text:c="1000000"/>b</text:p><text:p/></table:table-cell><table:table-cell><text:p>x</text:p></table:table-cell></table:table-row>"#;
        assert_eq!(
            scan(Dialect::Ods, 10, content),
            BTreeMap::from([(0, 1_000_003)])
        );
    }

    #[test]
    fn long_cells_are_replaced_and_the_rest_kept() {
        let sheet = r#"<sheetData><row r="7"><c r="A7" t="s"><v>0</v></c><x:c r="B7" s="1" t="inlineStr"><x:is><x:t>0123456789</x:t></x:is></x:c><c r="C7"><v>1234567890123</v></c><c r="D7"/></row></sheetData>"#;
        assert_eq!(
            rewrite_xml(Dialect::Xlsx, 5, sheet),
            format!(
                r#"<sheetData><row r="7"><c r="A7" t="s"><v>0</v></c><x:c r="B7" t="inlineStr"><x:is><x:t>{}</x:t></x:is></x:c><c r="C7" t="inlineStr"><is><t>{}</t></is></c><c r="D7"/></row></sheetData>"#,
                marker(10),
                marker(13)
            )
        );
        let sst = "<sst><si><t>short</t></si><!-- a <note> --><si><t>far too long</t></si></sst>";
        assert_eq!(
            rewrite_xml(Dialect::Xlsx, 5, sst),
            format!(
                "<sst><si><t>short</t></si><!-- a <note> --><si><t>{}</t></si></sst>",
                marker(12)
            )
        );
        let ods = r#"<table:table-cell office:value-type="string" table:number-columns-repeated="2"><text:p>too long</text:p></table:table-cell>"#;
        assert_eq!(
            rewrite_xml(Dialect::Ods, 3, ods),
            format!(
                r#"<table:table-cell office:value-type="string" table:number-columns-repeated="2"><text:p>{}</text:p></table:table-cell>"#,
                marker(8)
            )
        );
    }

    #[test]
    fn markers_read_back() {
        assert_eq!(overlong(&marker(400_000_000)), Some(400_000_000));
        assert_eq!(overlong("overlong cell of 5"), None);
        assert_eq!(overlong(""), None);
    }

    #[test]
    fn huge_markup_and_loose_text_are_refused() {
        let mut scanner = Scanner::new(Dialect::Xlsx, 100, None);
        let tag = format!("<c r=\"{}\">", "A".repeat(MAX_MARKUP));
        assert!(matches!(
            scanner.feed(tag.as_bytes(), None),
            Err(StreamError::Markup)
        ));
        let mut scanner = Scanner::new(Dialect::Xlsx, 100, None);
        let text = format!("<sheetData>{}</sheetData>", "x".repeat(MAX_MARKUP + 1));
        assert!(matches!(
            Scanner::new(Dialect::Xlsx, 100, None).feed(
                format!("<a>&{}</a>", "x".repeat(MAX_MARKUP + 100)).as_bytes(),
                None
            ),
            Err(StreamError::Text)
        ));
        assert!(matches!(
            scanner.feed(text.as_bytes(), None),
            Err(StreamError::Text)
        ));
        // The same text inside a cell is only measured.
        let mut scanner = Scanner::new(Dialect::Xlsx, 100, None);
        let cell = format!("<si><t>{}</t></si>", "x".repeat(MAX_MARKUP + 1));
        assert!(scanner.feed(cell.as_bytes(), None).is_ok());
        assert_eq!(scanner.long.get(&0), Some(&(MAX_MARKUP as u64 + 1)));
    }

    #[test]
    fn attributes_are_found_by_local_name() {
        let tag = br#"<text:s  text:c = "12" other='a>b'/>"#;
        assert_eq!(attribute(tag, b"c"), Some(&b"12"[..]));
        assert_eq!(attribute(tag, b"other"), Some(&b"a>b"[..]));
        assert_eq!(attribute(tag, b"r"), None);
        assert_eq!(tag_name(b"</x:c>"), b"x:c");
        assert_eq!(local_name(b"table:table-cell"), b"table-cell");
    }
}
