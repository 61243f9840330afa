//! The read pipeline's pure stages, after PostgREST's ApiRequest → Plan → Query:
//!
//! 1. [`parse`]: the raw URL query and JSON body become a typed [`request::ReadRequest`];
//! 2. [`plan`]: the request is resolved against the catalog and the caller's [`plan::Viewer`]
//!    into a [`plan::ReadPlan`] or [`plan::CountPlan`];
//! 3. [`sql`]: plans become sea-query statements with bound values.
//!
//! [`limits`] declares, once, how large a request may be; the parser and the planner enforce it.
//!
//! Writes have a stage of their own, [`write`]: a JSON body checked against the catalog, with
//! the headers that make it conditional in [`conditions`]; and
//! [`judge`] decides from what is known of a record about to be written whether a catalog
//! rule (who may write it, who would see it) holds.
//!
//! Nothing here touches a network or a database, so each stage is tested alone.

pub mod bulk;
pub mod changes;
pub mod conditions;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz;
pub mod import;
pub mod intake;
pub mod judge;
pub mod lifecycle;
pub mod limits;
pub mod parse;
pub mod plan;
pub mod request;
pub mod sql;
pub mod text;
pub mod write;
