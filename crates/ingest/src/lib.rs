//! File processing (CONTRACT §8): [`Workers`] claim queued uploads from the database's job
//! queue and apply each file type within its brand (`product`, `stock`, `price`, `image`,
//! `dispatch`), each file in one transaction with its final status and counters; [`Report`]
//! words what was skipped into the file's `detail.error`.

mod dispatch;
mod image;
mod lookup;
mod price;
mod process;
mod product;
mod report;
mod stock;
mod worker;

pub use worker::{FileTally, Outcome, Signals, WorkerSettings, Workers};
