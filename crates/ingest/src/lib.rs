//! File processing (CONTRACT §8): [`Workers`] claim queued uploads from the database's job
//! queue and apply each file type within its brand (`product`, `stock`, `price`, `image`,
//! `dispatch`), each file in one transaction with its final status and counters; [`Report`]
//! words what was skipped into the file's `detail.error`. [`layout`] says where each upload
//! column's value is, so that exports can be uploaded again.

mod dispatch;
mod image;
pub mod layout;
mod lookup;
mod price;
mod process;
mod product;
mod report;
mod stock;
mod worker;

pub use worker::{FileTally, Outcome, Signals, WorkerSettings, Workers};
