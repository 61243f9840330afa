//! Updates of one record's fields by id, column by column, stamping the record and moving
//! its version; for an optimistic write on condition of the version read or of rules.

use super::{set_field, stamp_update};
use crate::db::WriteTx;
use crate::error::StoreResult;
use brandhub_catalog::{Cell, Field, Resource};
use sea_query::{Alias, Expr, ExprTrait, Query, UpdateStatement};

impl WriteTx {
    /// Sets the given fields (and their folded copies) of the record `id`, column by column (a
    /// concurrent change of other columns is kept), its stamped fields to now and its version
    /// one up; whether it wrote (nothing to set writes nothing, and the version stays).
    /// `read_at`: the record's version when it was read, which an optimistic write
    /// ([`WriteTx::is_optimistic`]) makes a condition of the update.
    pub async fn update_cells(
        &mut self,
        resource: &'static Resource,
        id: &str,
        cells: &[(&'static Field, Cell)],
        read_at: Option<i64>,
    ) -> StoreResult<bool> {
        if cells.is_empty() {
            return Ok(false);
        }
        let mut update = self.cells_update(resource, id, cells);
        // Read unlocked, the record is written only while its version is still the one read.
        let read_at = self.is_optimistic().then_some(read_at).flatten();
        if let Some(version) = read_at {
            update.and_where(Expr::col(Alias::new(crate::schema::ROW_VERSION)).eq(version));
        }
        self.update_unanswered(resource.table, update, &[id], read_at.is_some())
            .await?;
        self.announce(resource, [id], false).await?;
        Ok(true)
    }

    /// [`WriteTx::update_cells`] of a record that was not read, for an optimistic write: the
    /// update writes only while the record satisfies every one of `conditions` (the caller's
    /// scope and rules, a precondition), and the commit tells the version it wrote
    /// ([`WriteTx::update_unread`]); if it writes nothing, the write fails with
    /// [`crate::StoreError::raced`] and nothing of it is written.
    pub(crate) async fn update_cells_unread(
        &mut self,
        resource: &'static Resource,
        id: &str,
        cells: &[(&'static Field, Cell)],
        conditions: Vec<Expr>,
    ) -> StoreResult<()> {
        let mut update = self.cells_update(resource, id, cells);
        for condition in conditions {
            update.and_where(condition);
        }
        self.update_unread(resource.table, update, id).await?;
        self.announce(resource, [id], false).await
    }

    /// The update of [`WriteTx::update_cells`]: the fields given and their folded copies,
    /// the stamped fields and the version, of the record `id`.
    fn cells_update(
        &self,
        resource: &'static Resource,
        id: &str,
        cells: &[(&'static Field, Cell)],
    ) -> UpdateStatement {
        let mut update = Query::update();
        update.table(Alias::new(resource.table));
        // The stamped field is set by `stamp_update` alone: PostgreSQL refuses a column
        // assigned twice in one UPDATE.
        for (field, cell) in cells.iter().filter(|(field, _)| !field.stamped) {
            set_field(&mut update, field, cell);
        }
        stamp_update(&mut update, resource, &self.now_timestamp());
        update.and_where(Expr::col(Alias::new("id")).eq(id));
        update
    }
}
