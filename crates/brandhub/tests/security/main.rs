//! The security suite: each class of hostile request found in review, sent over HTTPS to the
//! real server on both backends. Every answer must be a 4xx problem+json, never a 500 or a
//! crash, and the server must still answer afterwards. One module per class of finding.

#[path = "../common/mod.rs"]
mod common;

mod authority;
mod edge;
mod limits;
mod master_writes;
mod order_scope;
mod price_hosts;
