//! File processing (docs/API.md, "Files: uploads and processing"): [`Workers`] claim queued uploads from the database's job
//! queue and apply each file type within its brand (`product`, `stock`, `price`, `image`,
//! `dispatch`), each file in one transaction with its final status and counters; [`Report`]
//! words what was skipped into the file's `detail.error`. [`authority`] says what each file
//! may write: checked at upload and again at processing. [`layout`] says where each upload
//! column's value is, so that exports can be uploaded again.

pub mod authority;
mod dispatch;
mod image;
pub mod layout;
mod lookup;
mod price;
mod process;
mod product;
pub mod queue;
mod report;
mod stock;
mod worker;

pub use worker::{FileTally, Outcome, Signals, WorkerSettings, Workers};
