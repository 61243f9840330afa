//! Storage: the database side of the pipeline. Pools and the schema for SQLite and PostgreSQL
//! ([`db`], [`schema`]), executing read plans with batched relation loads ([`read`]) and cached
//! counts ([`count`], [`versions`]), rendering pages ([`render`]), exports in chunks as tables
//! ([`export`], [`table`]), writing records ([`write`]),
//! users, keys and grants ([`accounts`], [`grants`]), and the queue of uploaded files ([`jobs`],
//! timed by [`clock`]); what it tells an operator about itself ([`stats`]).

pub mod accounts;
pub mod clock;
pub mod count;
pub mod db;
pub mod export;
pub mod grants;
pub mod ids;
pub mod jobs;
pub mod page;
pub mod read;
pub mod render;
pub mod schema;
pub mod stats;
pub mod table;
pub mod users;
pub mod versions;
pub mod write;

pub use accounts::{Caller, NewKey};
pub use clock::Clock;
pub use db::{Backend, Store, StoreOptions, Timing, WriteTx};
pub use export::{EXPORT_CHUNK, ExportChunk};
pub use grants::Grant;
pub use jobs::ClaimedJob;
pub use page::RenderedPage;
pub use read::PageData;
pub use stats::{CacheStats, HitsMisses, PoolStats, QueueDepth};
pub use table::{TableCell, TableColumn, table_columns};
pub use users::NewUser;
pub use versions::Versions;
