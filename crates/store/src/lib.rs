//! Storage: the database side of the pipeline. Pools and the schema for SQLite and PostgreSQL
//! ([`db`], [`schema`]), executing read plans with batched relation loads ([`read`]) and cached
//! counts ([`count`], [`versions`]), rendering pages ([`render`]), exports in chunks as tables
//! ([`export`], [`table`]), writing records ([`write`]; the generic write pipeline of the
//! catalog's writable resources: [`records`], and set-up documents through it: [`import`]),
//! users, keys and grants ([`accounts`], [`grants`]), a user's rights as they are now
//! ([`rights`]), the queue of uploaded files ([`jobs`], timed by [`clock`]), what it tells an
//! operator about itself ([`stats`]), what bounds a webhook's deliveries
//! ([`webhook_bounds`]), and copies of an SQLite database taken while it is in use
//! ([`snapshot`]).

pub mod accounts;
pub mod changes;
pub(crate) mod checkpoint;
pub mod clock;
pub mod count;
pub mod db;
pub mod error;
pub mod events;
pub mod export;
pub mod external;
pub mod idempotency;
pub mod ids;
pub mod import;
pub mod jobs;
pub mod offers;
pub mod orders;
pub mod page;
pub mod policy;
pub mod precondition;
pub mod read;
pub(crate) mod recheck;
pub mod records;
pub(crate) mod related;
pub mod render;
pub mod rights;
pub mod row_log;
pub mod schema;
pub mod snapshot;
pub mod stats;
pub mod table;
pub mod versions;
pub mod webhook_bounds;
pub mod write;
pub(crate) mod write_turn;

pub use accounts::grants::Grant;
pub use accounts::sessions::{NewInvitation, NewSession};
pub use accounts::users::NewUser;
pub use accounts::{Caller, NewKey};
pub use clock::Clock;
pub use db::{Backend, CallerCheck, Store, StoreOptions, Timing, WriteTx};
pub use error::{StoreError, StoreResult};
pub use events::{AttemptResult, DeliveryClaim, FanOut};
pub use export::{EXPORT_CHUNK, ExportChunk};
pub use idempotency::KeptAnswer;
pub use jobs::ClaimedJob;
pub use page::RenderedPage;
pub use read::PageData;
pub use rights::Principal;
pub use stats::{CacheStats, HitsMisses, PoolStats, QueueDepth};
pub use table::{TableCell, TableColumn, table_columns};
pub use versions::Versions;
