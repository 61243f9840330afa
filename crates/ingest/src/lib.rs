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
pub mod report;
mod stock;
pub mod worker;

pub use process::MAX_ATTEMPTS;
pub use report::Report;
pub use worker::{Signals, WorkerSettings, Workers};
