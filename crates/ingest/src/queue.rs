//! The upload side of the queue: the record of a newly uploaded file (`pending`, with what its
//! part name says) and the job a worker of any process claims, written in one transaction.
//! The server stores the bytes and calls [`enqueue`]; the workers ([`crate::Workers`]) take
//! it from there.

use brandhub_catalog::Res;
use brandhub_catalog::{Cell, FileStatus, Layout, NO_END_DATE, Record, catalog, file_paths};
use brandhub_sheet::{Format, PartName};
use brandhub_store::ids::now_timestamp;
use brandhub_store::{Store, StoreResult};
use chrono::NaiveDate;

/// A file whose bytes are stored, about to be recorded and queued.
#[derive(Debug, Clone, Copy)]
pub struct Upload<'a> {
    /// The new file's id, under which its bytes are stored.
    pub id: &'a str,
    /// The uploading user's id.
    pub user: &'a str,
    /// What the part name says: the file type and its arguments.
    pub part: &'a PartName,
    /// The file name as uploaded, without folders.
    pub file_name: &'a str,
    /// The spreadsheet format its extension names.
    pub format: Format,
}

/// Records the file as `pending` and queues its job, in one transaction.
pub async fn enqueue(store: &Store, upload: &Upload<'_>) -> StoreResult<()> {
    store.create_file(pending_file(upload)).await
}

/// The new file record: `pending`, no rows yet, with what the part name says.
fn pending_file(upload: &Upload<'_>) -> Record {
    let file = catalog().get(Res::File);
    let layout = Layout::of(file);
    let mut record = Record::empty(file);
    let mut set = |path: &str, cell: Cell| record.cells[layout.cell(path)] = cell;
    let part = upload.part;
    set("id", Cell::Text(upload.id.to_string()));
    set(file_paths::BRAND, Cell::Text(part.brand.clone()));
    set(file_paths::USER, Cell::Text(upload.user.to_string()));
    set(file_paths::FILE_TYPE, part.file_type.as_str().into());
    set(
        file_paths::FILE_NAME,
        Cell::Text(upload.file_name.to_string()),
    );
    set(file_paths::CREATED, Cell::Text(now_timestamp()));
    set(file_paths::STATUS, FileStatus::Pending.as_str().into());
    set(file_paths::MIME, upload.format.mime().into());
    set(file_paths::ERROR, Cell::Text(String::new()));
    for path in [
        file_paths::ROWS_READ,
        file_paths::ROWS_APPLIED,
        file_paths::ROWS_SKIPPED,
    ] {
        set(path, Cell::Integer(0));
    }
    if let Some(warehouse) = &part.warehouse {
        set(file_paths::WAREHOUSE, Cell::Text(warehouse.clone()));
    }
    if let Some(host) = &part.host {
        set(file_paths::HOST, Cell::Text(host.clone()));
    }
    let precise = |day: NaiveDate| format!("{}T00:00:00.000Z", day.format("%Y-%m-%d"));
    if let Some(start) = part.start {
        set(file_paths::START, Cell::Text(precise(start)));
        let end = part.end.map_or_else(|| NO_END_DATE.to_string(), precise);
        set(file_paths::END, Cell::Text(end));
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use brandhub_sheet::{FileType, parse_part_name};

    #[test]
    fn a_pending_price_file_carries_its_part_name() {
        let part = parse_part_name("price,b1,h1,01/02/2024,").unwrap();
        let upload = Upload {
            id: "F1",
            user: "U1",
            part: &part,
            file_name: "prices.csv",
            format: Format::Csv,
        };
        let record = pending_file(&upload);
        let file = catalog().get(Res::File);
        let layout = Layout::of(file);
        let text = |path: &str| {
            record.cells[layout.cell(path)]
                .as_text()
                .map(str::to_string)
        };
        assert_eq!(text(file_paths::STATUS).as_deref(), Some("pending"));
        assert_eq!(
            text(file_paths::FILE_TYPE).as_deref(),
            Some(FileType::Price.as_str())
        );
        assert_eq!(text(file_paths::BRAND).as_deref(), Some("B1"));
        assert_eq!(text(file_paths::HOST).as_deref(), Some("H1"));
        assert_eq!(
            text(file_paths::START).as_deref(),
            Some("2024-02-01T00:00:00.000Z")
        );
        assert_eq!(text(file_paths::END).as_deref(), Some(NO_END_DATE));
        assert_eq!(
            record.cells[layout.cell(file_paths::ROWS_READ)],
            Cell::Integer(0)
        );
    }
}
