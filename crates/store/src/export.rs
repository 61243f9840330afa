//! Exports (docs/API.md, "Exports: CSV and XLSX"): every record a list request finds, read in chunks. Each chunk is
//! one keyset statement ([`brandhub_query::sql::export_statement`]: after the last record's
//! order keys and id, never an offset) and then the same batched loads of related entities as
//! a page, so memory holds one chunk whatever the count. The records become rows of a table
//! ([`crate::table`]).

use crate::db::{Backend, Kind, Store, Timing};
use crate::error::StoreResult;
use crate::read::NodeData;
use brandhub_catalog::{Cell, FieldType};
use brandhub_query::plan::{Operand, ReadPlan, Viewer};
use brandhub_query::sql::{Keyset, export_statement, node_columns};

/// Records read per chunk: enough that the statements' cost is spread over many rows, few
/// enough that a chunk with its related records stays within a few megabytes.
pub const EXPORT_CHUNK: u64 = 2_000;

/// One chunk of an export: its records with their related entities, and where the next
/// chunk starts (`None` after the last).
#[derive(Debug)]
pub struct ExportChunk {
    pub node: NodeData,
    pub next: Option<Keyset>,
}

/// How an order key's value decodes: text keys are compared by their folded copies (text).
fn key_kind(ty: FieldType) -> Kind {
    Kind::of(ty)
}

fn operand(cell: &Cell) -> Option<Operand> {
    match cell {
        Cell::Null => None,
        Cell::Text(text) => Some(Operand::Text(text.clone())),
        Cell::Integer(n) => Some(Operand::Integer(*n)),
        Cell::Number(n) => Some(Operand::Number(*n)),
        Cell::Boolean(b) => Some(Operand::Boolean(*b)),
    }
}

impl Store {
    /// The chunk of a plan's records after `after` (the first chunk when `None`), at most
    /// `limit` of them (page and page size of the plan do not apply).
    pub async fn export_chunk(
        &self,
        plan: &ReadPlan,
        viewer: &Viewer,
        after: Option<&Keyset>,
        limit: u64,
        timing: &Timing,
    ) -> StoreResult<ExportChunk> {
        let columns = node_columns(&plan.selection, None);
        let mut kinds: Vec<Kind> = columns.iter().map(|f| Kind::of(f.ty)).collect();
        kinds.extend(plan.order.iter().map(|key| key_kind(key.path.field.ty)));
        let statement = export_statement(plan, after, limit, self.backend() == Backend::Sqlite);
        let mut rows = self.fetch_export_rows(&statement, &kinds, timing).await?;
        let next = if (rows.len() as u64) < limit {
            None
        } else {
            rows.last().map(|last| Keyset {
                keys: last[columns.len()..].iter().map(operand).collect(),
                id: last[0].as_text().unwrap_or_default().to_string(),
            })
        };
        for row in &mut rows {
            row.truncate(columns.len());
        }
        let mut node = NodeData {
            columns,
            rows,
            ..NodeData::default()
        };
        node.index_by(0);
        self.load_node(
            &plan.selection,
            &mut node,
            viewer,
            &crate::versions::Versions::default(),
            timing,
        )
        .await?;
        Ok(ExportChunk { node, next })
    }
}
