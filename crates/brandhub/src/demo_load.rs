//! Loading the demo data set: the generator runs on a blocking thread and streams chunks to
//! the store, which writes them all in one transaction (all or nothing), then creates the demo
//! users' keys with their documented secrets and refreshes the planner's statistics.

use brandhub_catalog::Res;
use brandhub_catalog::{Cell, Layout, Record, UPDATED_DATE, catalog};
use brandhub_demo::{Chunk, DemoOptions, DemoSummary, generate};
use brandhub_query::plan::CountPlan;
use brandhub_store::accounts::grants::default_grants;
use brandhub_store::accounts::secret_hash;
use brandhub_store::write::{EntryPoint, Outcome, WritePlan};
use brandhub_store::{Store, StoreError, StoreResult, Timing, WriteTx};
use tokio::sync::mpsc;

/// The moment a demo is loaded at, for [`DemoOptions::now`]: the clock's seconds since the
/// Unix epoch, so that the demo's prices dated around it start and end while it is shown.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Whether the database holds no users (a fresh database).
pub async fn is_empty(store: &Store) -> StoreResult<bool> {
    let users = catalog().get(Res::User);
    let plan = CountPlan::everything(users);
    let timing = Timing::default();
    let versions = store.versions(&timing).await?;
    Ok(store.count(&plan, &versions, &timing).await? == 0)
}

/// Loads the demo data; refuses a database that has users.
pub async fn load_demo(store: &Store, options: DemoOptions) -> StoreResult<DemoSummary> {
    if !is_empty(store).await? {
        return Err(StoreError::Conflict {
            detail: "The database is not empty; the demo data set loads into an empty database only (brandhub demo --replace starts over).".into(),
            field: None,
        });
    }
    let (sender, receiver) = mpsc::channel::<Chunk>(4);
    let generator = tokio::task::spawn_blocking(move || {
        generate(&options, &mut |chunk| {
            // The receiver only stops early when a write failed; that error is reported below.
            let _ = sender.blocking_send(chunk);
        })
    });
    // The stream is taken by the plan's one run.
    let mut streamed = Some((receiver, generator));
    let summary = store
        .execute(WritePlan::locking(EntryPoint::Demo), |mut tx, _| {
            let streamed = streamed.take();
            Box::pin(async move {
                let Some((receiver, generator)) = streamed else {
                    return (tx, Err(StoreError::Internal));
                };
                let stepped = write_demo(&mut tx, receiver, generator).await;
                (tx, stepped.map(Outcome::Commit))
            })
        })
        .await?;
    for credential in &summary.credentials {
        store
            .set_password(&credential.user_id, &demo_password(credential.user_type))
            .await?;
    }
    store.analyze().await?;
    Ok(summary)
}

/// The portal password of a demo user of this type: the same on every machine, like the demo
/// keys, so that the README can show them.
pub fn demo_password(user_type: brandhub_catalog::UserType) -> String {
    format!("{}-portal-demo", user_type.as_str())
}

/// The demo's records and its users' keys, written inside the load's transaction as the
/// generator streams them.
async fn write_demo(
    tx: &mut WriteTx,
    mut receiver: mpsc::Receiver<Chunk>,
    generator: tokio::task::JoinHandle<DemoSummary>,
) -> StoreResult<DemoSummary> {
    let mut failure = None;
    while let Some(mut chunk) = receiver.recv().await {
        if failure.is_none()
            && let Err(error) = tx.insert_records(chunk.resource, &mut chunk.records).await
        {
            failure = Some(error);
            receiver.close();
        }
    }
    if let Some(error) = failure {
        return Err(error);
    }
    let summary = generator.await.map_err(|e| {
        tracing::error!(error = %e, "the demo generator failed");
        StoreError::Internal
    })?;
    let keys = catalog().get(Res::ApiKey);
    let layout = Layout::of(keys);
    let mut records: Vec<Record> = summary
        .credentials
        .iter()
        .map(|credential| {
            let mut record = Record::empty(keys);
            record.cells[layout.cell("id")] = Cell::Text(credential.key_id.clone());
            record.cells[layout.cell("fk_user")] = Cell::Text(credential.user_id.clone());
            record.cells[layout.cell("name")] = credential.key_name.as_str().into();
            record.cells[layout.cell("prefix")] = credential.secret[..8].into();
            record.cells[layout.cell("createdDate")] = "2026-01-01T00:00:00".into();
            record.cells[layout.cell(UPDATED_DATE)] = "2026-01-01T00:00:00".into();
            record.cells[layout.cell("revoked")] = false.into();
            record.cells[layout.cell("secretHash")] = secret_hash(&credential.secret).into();
            record.lists[layout.list("grants")] = default_grants(credential.user_type)
                .iter()
                .map(ToString::to_string)
                .collect();
            record
        })
        .collect();
    tx.insert_records(keys, &mut records).await?;
    Ok(summary)
}
