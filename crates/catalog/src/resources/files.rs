//! Uploaded files: the kinds of spreadsheet, the statuses a file goes through and the paths
//! of the file record that code names, with the declaration of `file` that holds them.

use super::{COMPANY, WAREHOUSE};
use crate::handle::Res;
use crate::model::{
    Anchor::{Companies, Warehouse},
    Domain, Resource, fk, id_field, integer, object, precise_timestamp, text, timestamp,
};

/// The kinds of spreadsheet an upload can be (docs/API.md, "Files: uploads and processing"), as `file.fileType` names them.
pub const FILE_TYPES: [&str; 5] = ["product", "stock", "price", "image", "orderDispatch"];

/// A file's way through processing: `pending` → `processing` → `processed` or `failed`. Code
/// that sets or tests a file's status names it by this type, never by a copy of the word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileStatus {
    Pending,
    Processing,
    Processed,
    Failed,
}

impl FileStatus {
    /// Every status, in the order a file goes through them.
    pub const ALL: [FileStatus; 4] = [
        FileStatus::Pending,
        FileStatus::Processing,
        FileStatus::Processed,
        FileStatus::Failed,
    ];

    /// The word `file.status` holds.
    pub const fn as_str(self) -> &'static str {
        match self {
            FileStatus::Pending => "pending",
            FileStatus::Processing => "processing",
            FileStatus::Processed => "processed",
            FileStatus::Failed => "failed",
        }
    }

    /// The status a stored word names.
    pub fn named(word: &str) -> Option<FileStatus> {
        FileStatus::ALL.into_iter().find(|s| s.as_str() == word)
    }

    /// Whether processing is over, so that nothing about the file changes any more (an
    /// upload waiting with `?wait=` answers then).
    pub const fn is_final(self) -> bool {
        matches!(self, FileStatus::Processed | FileStatus::Failed)
    }
}

/// The words of [`FileStatus`], as the `file.status` domain lists them.
pub const FILE_STATUSES: [&str; 4] = [
    FileStatus::Pending.as_str(),
    FileStatus::Processing.as_str(),
    FileStatus::Processed.as_str(),
    FileStatus::Failed.as_str(),
];

/// The paths of the file record that code reads and writes besides the API (the upload that
/// records a file, the worker that reports on it, the demo loader), named once; a catalog test
/// checks that each is a field of `file`.
pub mod file_paths {
    pub const STATUS: &str = "status";
    pub const FILE_TYPE: &str = "fileType";
    pub const FILE_NAME: &str = "fileName";
    pub const BRAND: &str = "fk_brand";
    pub const USER: &str = "fk_user";
    pub const CREATED: &str = "createdDate";
    pub const MIME: &str = "detail.fileMime";
    pub const HOST: &str = "detail.host";
    pub const WAREHOUSE: &str = "detail.warehouse";
    pub const START: &str = "detail.startDate";
    pub const END: &str = "detail.endDate";
    pub const ERROR: &str = "detail.error";
    pub const ROWS_READ: &str = "detail.rowsRead";
    pub const ROWS_APPLIED: &str = "detail.rowsApplied";
    pub const ROWS_SKIPPED: &str = "detail.rowsSkipped";
    /// Every path above, for the test that holds them to the declaration.
    pub const ALL: [&str; 15] = [
        STATUS,
        FILE_TYPE,
        FILE_NAME,
        BRAND,
        USER,
        CREATED,
        MIME,
        HOST,
        WAREHOUSE,
        START,
        END,
        ERROR,
        ROWS_READ,
        ROWS_APPLIED,
        ROWS_SKIPPED,
    ];
}

impl FileStatus {
    /// The event a file reaching this status is announced as, if any.
    pub const fn event(self) -> Option<&'static str> {
        match self {
            FileStatus::Processed => Some("file.processed"),
            FileStatus::Failed => Some("file.failed"),
            FileStatus::Pending | FileStatus::Processing => None,
        }
    }
}

pub(super) fn file() -> Resource {
    Resource::new(
        Res::File.name(),
        "file",
        "An uploaded spreadsheet and the result of processing it.",
    )
    .labelled("{fileName}")
    .relation_fk(fk("fk_brand", "file_brand"), "brand")
    .relation_fk(fk("fk_user", "file_user"), "user")
    .field(
        text("fileType")
            .indexed()
            .short()
            .domain(Domain::OneOf(&FILE_TYPES)),
    )
    .field(text("fileName").indexed())
    .field(timestamp("createdDate").indexed().required())
    .field(
        text("status")
            .indexed()
            .short()
            .domain(Domain::OneOf(&FILE_STATUSES)),
    )
    .field(object(
        "detail",
        vec![
            text("fileMime"),
            id_field("host")
                .refers_to("host")
                .doc("Host id, for price files."),
            id_field("warehouse")
                .refers_to("warehouse")
                .doc("Warehouse id, for stock files."),
            precise_timestamp("startDate"),
            precise_timestamp("endDate"),
            text("error")
                .long()
                .doc("Problems found while processing; empty when none."),
            integer("rowsRead"),
            integer("rowsApplied"),
            integer("rowsSkipped"),
        ],
    ))
    .template(&["file_brand", "file_user"])
    .uploaded()
    .scope(COMPANY, &[&[("file_brand.fk_company", Companies)]])
    .scope(WAREHOUSE, &[&[("file_user.fk_warehouse", Warehouse)]])
}
