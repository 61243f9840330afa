//! Turning generated values into catalog records and handing them out in chunks.

use brandhub_catalog::{Cell, Layout, Record, Resource, UPDATED_DATE, catalog};

use crate::Chunk;
use crate::ids::Id;

/// The most records one chunk holds.
pub const CHUNK_RECORDS: usize = 10_000;

/// A resource with its layout looked up once, and a blank record to start every record from.
pub(crate) struct Table {
    pub(crate) resource: &'static Resource,
    layout: Layout,
    blank: Record,
    /// The cells of `updatedDate` and of `createdDate` (when the resource has one).
    stamp: Option<(usize, Option<usize>)>,
}

impl Table {
    /// The table of the named catalog resource.
    pub(crate) fn new(name: &str) -> Table {
        let resource = catalog()
            .resource(name)
            .unwrap_or_else(|| panic!("the catalog has no resource {name}"));
        let layout = Layout::of(resource);
        let stamp = resource.field_named(UPDATED_DATE).map(|field| {
            let created = resource
                .field_named("createdDate")
                .map(|created| layout.cell(&created.path));
            (layout.cell(&field.path), created)
        });
        Table {
            resource,
            layout,
            blank: Record::empty(resource),
            stamp,
        }
    }

    /// The cell indexes of these paths, in order: look them up once, set them many times.
    pub(crate) fn cells<const N: usize>(&self, paths: [&str; N]) -> [usize; N] {
        paths.map(|path| self.layout.cell(path))
    }

    /// The cell indexes of subfields of one object (`shipAddress` and `line1`, ...).
    pub(crate) fn cells_under<const N: usize>(&self, object: &str, names: [&str; N]) -> [usize; N] {
        names.map(|name| self.layout.cell(&format!("{object}.{name}")))
    }

    /// The list index of a list field.
    pub(crate) fn list(&self, path: &str) -> usize {
        self.layout.list(path)
    }

    /// A record with every value unset and the given id.
    pub(crate) fn record(&self, id: Id) -> Record {
        let mut record = self.blank.clone();
        record.cells[0] = id.cell();
        record
    }
}

impl Id {
    /// The id as a text cell.
    pub(crate) fn cell(self) -> Cell {
        Cell::Text(self.text())
    }
}

/// An optional id as a cell (null when absent).
pub(crate) fn id_or_null(id: Option<Id>) -> Cell {
    id.map_or(Cell::Null, Id::cell)
}

/// A money amount in hundredths as a number cell (exact decimal division, the same everywhere).
pub(crate) fn money(cents: i64) -> Cell {
    Cell::Number(cents as f64 / 100.0)
}

/// Collects records into chunks of one resource and hands each full chunk to the sink; counts
/// what it handed out per resource.
pub(crate) struct Emitter<'a> {
    sink: &'a mut dyn FnMut(Chunk),
    resource: Option<&'static Resource>,
    records: Vec<Record>,
    counts: Vec<(&'static str, u64)>,
}

impl<'a> Emitter<'a> {
    /// An emitter handing chunks to the sink.
    pub(crate) fn new(sink: &'a mut dyn FnMut(Chunk)) -> Emitter<'a> {
        Emitter {
            sink,
            resource: None,
            records: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// Adds a record; a chunk of another resource or a full chunk is handed out first. A
    /// record without `updatedDate` gets its `createdDate`, or the demo world's last moment.
    pub(crate) fn push(&mut self, table: &Table, mut record: Record) {
        if let Some((updated, created)) = table.stamp
            && record.cells[updated].is_unset()
        {
            record.cells[updated] = created
                .map(|c| record.cells[c].clone())
                .filter(|c| !c.is_unset())
                .unwrap_or_else(|| Cell::Text(crate::time::timestamp(crate::time::END - 1)));
        }
        let same = self
            .resource
            .is_some_and(|r| std::ptr::eq(r, table.resource));
        if !same || self.records.len() >= CHUNK_RECORDS {
            self.flush();
            self.resource = Some(table.resource);
        }
        self.records.push(record);
        match self.counts.last_mut() {
            Some((name, count)) if *name == table.resource.name => *count += 1,
            _ => {
                // A resource counted before and resumed later keeps one entry.
                if let Some(entry) = self
                    .counts
                    .iter_mut()
                    .find(|(name, _)| *name == table.resource.name)
                {
                    entry.1 += 1;
                } else {
                    self.counts.push((table.resource.name, 1));
                }
            }
        }
    }

    /// Hands out the records collected so far as one chunk: the next record starts a new chunk,
    /// so it may refer to everything before it.
    pub(crate) fn flush(&mut self) {
        if let Some(resource) = self.resource.take()
            && !self.records.is_empty()
        {
            let records = std::mem::replace(&mut self.records, Vec::with_capacity(CHUNK_RECORDS));
            (self.sink)(Chunk { resource, records });
        }
    }

    /// Hands out what is left and returns the counts per resource, in generation order.
    pub(crate) fn finish(mut self) -> Vec<(&'static str, u64)> {
        self.flush();
        self.counts
    }
}
