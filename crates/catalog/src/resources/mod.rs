//! Every resource of the API, declared once. Field order is render order; `indexed` marks the
//! fields whose equality and prefix (`@`) filters must be served by an index.
//!
//! Each submodule declares the resources of one part of the API, with the words their fields
//! hold and the paths code names; [`declare`] lists them all in the order the docs do.

mod events;
mod files;
mod merchandise;
mod offers;
mod orders;
mod organisations;
mod users;

pub use events::{
    BATCH_EVENT, DELIVERY_STATUSES, DELIVERY_TYPES, DeliveryStatus, EVENT_TYPES, MAX_BATCH_EVENTS,
};
pub use files::{FILE_STATUSES, FILE_TYPES, FileStatus, file_paths};
pub use orders::ADDRESS_PARTS;
pub use users::USER_STATUSES;

use crate::model::{Resource, UserType, WriteAction, timestamp};

// Scope (docs/API.md, "Scope: who sees what"): who sees which records. A sponsor follows the company rules over the
// sponsor's companies; admins see everything; a user type without a rule sees nothing.
const COMPANY: &[UserType] = &[UserType::Company];
const HOST: &[UserType] = &[UserType::Host];
const WAREHOUSE: &[UserType] = &[UserType::Warehouse];
/// Every non-admin type (sponsors follow the company rules).
const EVERYONE: &[UserType] = &[UserType::Company, UserType::Host, UserType::Warehouse];

// Who writes what (docs/API.md, "Who writes what"): per action and user type, the paths whose value must be one
// of the caller's ids, like scope. Admins write everything; sponsors follow the company rules
// (over their own companies) unless a rule names them; a type without a rule writes nothing.
const WRITE: WriteAction = WriteAction::Write;
const DISPATCH: WriteAction = WriteAction::Dispatch;
const SPONSOR: &[UserType] = &[UserType::Sponsor];
/// Company and sponsor users: the owners of brands, warehouses and their catalogues.
const OWNERS: &[UserType] = &[UserType::Company];
/// Every non-admin type, for what each writes of its own (its API keys).
const SELF_SERVICE: &[UserType] = EVERYONE;

const WAREHOUSE_CANNOT_SEE_MONEY: &[UserType] = &[UserType::Warehouse];
const HOST_CANNOT_SEE_IMPORTS: &[UserType] = &[UserType::Host];
/// A brand store's stock rules and price adjustment: hosts see their effect, the offer.
const HOST_CANNOT_SEE_RULES: &[UserType] = &[UserType::Host];

/// The declarations, in the order the docs list them, each with the fields every record has
/// (`updatedDate`, [`with_common_fields`]).
pub fn declare() -> Vec<Resource> {
    declared().into_iter().map(with_common_fields).collect()
}

/// What every record carries, declared once (docs/API.md, "Writes: concurrency and idempotency"): `updatedDate`, the time
/// of the last write of the record, set by every writer (JSON writes, files, the demo loader),
/// never by a client. It renders last.
fn with_common_fields(resource: Resource) -> Resource {
    resource.field(
        timestamp(UPDATED_DATE)
            .indexed()
            .stamped()
            .doc("When the record was last written (by the API or a file); read-only."),
    )
}

/// The path of the field every writer stamps with the time of the write.
pub const UPDATED_DATE: &str = "updatedDate";

fn declared() -> Vec<Resource> {
    vec![
        organisations::company(),
        organisations::brand(),
        organisations::warehouse(),
        organisations::host(),
        organisations::store(),
        organisations::brand_store(),
        merchandise::product(),
        merchandise::variant(),
        merchandise::stock(),
        orders::order(),
        orders::order_item(),
        users::user(),
        files::file(),
        merchandise::price(),
        merchandise::image(),
        users::api_key(),
        events::webhook(),
        events::webhook_delivery(),
        events::event_problem(),
        offers::offer(),
    ]
}
