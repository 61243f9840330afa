//! Processing one claimed file: read its record and bytes, parse the sheet and match its
//! header (a failure there fails the file with the reason, nothing applied), then apply it in
//! ONE transaction that also marks the job done and writes the file's final status and
//! counters. A crash anywhere before the commit leaves nothing applied and the job claimable
//! again once its heartbeat is old.

use crate::authority::{Target, checked_per_record};
use crate::report::Report;
use crate::worker::{Context, Outcome};
use crate::{dispatch, image, price, product, stock};
use brandhub_catalog::Res;
use brandhub_catalog::{Cell, FileStatus, Layout, Record, catalog, file_paths};
use brandhub_filestore::StoreError;
use brandhub_problem::{Lang, Words, words};
use brandhub_query::judge::Verdict;
use brandhub_query::plan::Viewer;
use brandhub_sheet::{ColumnMap, FileType, Format, Table};
use brandhub_store::rights::principal;
use brandhub_store::write::{EntryPoint, Outcome as WriteOutcome, WritePlan};
use brandhub_store::{ClaimedJob, WriteTx};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A file is given up (failed) after this many claims: one that keeps killing or stalling its
/// workers must not be retried forever.
pub const MAX_ATTEMPTS: i64 = 3;

/// Why a file was not applied.
#[derive(Debug)]
pub(crate) enum ProcessError {
    /// The file itself is at fault (unreadable, a required column missing): it is `failed`
    /// with this reason, and nothing is applied.
    Fail(Words),
    /// Something passing went wrong (the database, the file store): retried later; the
    /// text is for the log.
    Retry(String),
    /// Another worker holds the job now; this one stops without writing anything.
    Lost,
}

impl From<brandhub_store::StoreError> for ProcessError {
    /// A refusal (such as a conflict with a unique value) comes from what the file says:
    /// trying again cannot help, so the file fails with it. A failing database may pass.
    fn from(error: brandhub_store::StoreError) -> ProcessError {
        use brandhub_store::StoreError;
        match error {
            StoreError::Internal
            | StoreError::Unavailable
            | StoreError::Config(_)
            | StoreError::Unreadable(_) => ProcessError::Retry(error.to_string()),
            refused => ProcessError::Fail(refused.words()),
        }
    }
}

/// What a processor needs to know of the file record.
#[derive(Debug, Clone)]
pub(crate) struct FileJob {
    pub id: String,
    pub brand: String,
    /// The user who uploaded the file: its rights now decide what the file may write.
    pub user: String,
    pub file_type: FileType,
    pub file_name: String,
    pub warehouse: Option<String>,
    pub host: Option<String>,
    /// The price period as record timestamps (`YYYY-MM-DDT00:00:00`); no end is permanent.
    pub start: Option<String>,
    pub end: Option<String>,
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` → `YYYY-MM-DDTHH:MM:SS`; the all-zero "no end date" → `None`.
fn record_timestamp(precise: Option<&str>) -> Option<String> {
    let precise = precise.filter(|p| *p != brandhub_catalog::NO_END_DATE)?;
    precise.get(..19).map(str::to_string)
}

impl FileJob {
    fn from_record(record: &Record) -> Result<FileJob, String> {
        let file = catalog().get(Res::File);
        let l = Layout::of(file);
        let text = |path: &str| {
            record.cells[l.cell(path)]
                .as_text()
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        };
        let kind = text(file_paths::FILE_TYPE).unwrap_or_default();
        let file_type =
            FileType::parse(&kind).ok_or_else(|| format!("unknown file type \"{kind}\""))?;
        Ok(FileJob {
            id: record.id().to_string(),
            brand: text(file_paths::BRAND).unwrap_or_default(),
            user: text(file_paths::USER).unwrap_or_default(),
            file_type,
            file_name: text(file_paths::FILE_NAME).unwrap_or_default(),
            warehouse: text(file_paths::WAREHOUSE),
            host: text(file_paths::HOST),
            start: record_timestamp(text(file_paths::START).as_deref()),
            end: record_timestamp(text(file_paths::END).as_deref()),
        })
    }
}

/// A file read and matched, ready to apply.
pub(crate) struct Prepared {
    file: FileJob,
    table: Table,
    map: ColumnMap,
}

/// Keeps a claimed job's heartbeat fresh until dropped; notes when the claim was lost.
struct Heartbeat {
    task: tokio::task::JoinHandle<()>,
}

impl Heartbeat {
    fn start(context: &Arc<Context>, file_id: &str, lost: Arc<AtomicBool>) -> Heartbeat {
        let store = context.store.clone();
        let worker = context.worker.clone();
        let file_id = file_id.to_string();
        let every = (context.settings.job_timeout / 4).max(Duration::from_millis(500));
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                match store.heartbeat_job(&file_id, &worker).await {
                    Ok(true) => {}
                    Ok(false) => {
                        lost.store(true, Ordering::Relaxed);
                        return;
                    }
                    Err(error) => tracing::warn!(%error, file = %file_id, "a heartbeat failed"),
                }
            }
        });
        Heartbeat { task }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Processes one claimed job to its end: applied, failed, retried later, or given up to the
/// worker that took it over.
pub(crate) async fn run(context: Arc<Context>, job: ClaimedJob) {
    let lost = Arc::new(AtomicBool::new(false));
    let heartbeat = Heartbeat::start(&context, &job.file_id, lost.clone());
    let prepared = prepare(&context, &job).await;
    if lost.load(Ordering::Relaxed) {
        tracing::info!(file = %job.file_id, "another worker took the file over");
        return;
    }
    // From here the apply transaction's lock on the job protects the claim.
    drop(heartbeat);
    let rows = prepared.as_ref().map_or(0, |p| rows_read(&p.table));
    let outcome = match prepared {
        Ok(prepared) => apply(&context, prepared).await,
        Err(error) => Err(error),
    };
    let tally = context.signals.tally();
    let finished = match outcome {
        Ok(()) => {
            tally.record(Outcome::Processed);
            Ok(())
        }
        Err(ProcessError::Fail(reason)) => {
            tally.record(Outcome::Failed);
            fail(&context, &job.file_id, &reason, rows).await
        }
        Err(ProcessError::Lost) => {
            tracing::info!(file = %job.file_id, "another worker took the file over");
            Ok(())
        }
        Err(ProcessError::Retry(error)) if job.attempts >= MAX_ATTEMPTS => {
            tracing::error!(%error, file = %job.file_id, attempts = job.attempts, "giving the file up");
            tally.record(Outcome::Failed);
            fail(
                &context,
                &job.file_id,
                &words!(
                    "the file could not be processed in {} attempts; the server log has the cause",
                    "die Datei konnte in {} Versuchen nicht verarbeitet werden; das Serverprotokoll nennt die Ursache",
                    job.attempts
                ),
                rows,
            )
            .await
        }
        Err(ProcessError::Retry(error)) => {
            tally.record(Outcome::Retried);
            let delay = 5_000 * job.attempts.max(1);
            tracing::warn!(%error, file = %job.file_id, retry_in_ms = delay, "processing will be retried");
            context
                .store
                .release_job(
                    &job.file_id,
                    &context.worker,
                    context.store.clock().now_millis() + delay,
                )
                .await
        }
    };
    if let Err(error) = finished {
        // The job stays claimed; after the timeout another worker tries again.
        tracing::error!(%error, file = %job.file_id, "the file's outcome was not recorded");
    }
    context.signals.notify_finished();
}

/// Reads the file record and bytes, parses the sheet and matches its header.
async fn prepare(context: &Context, job: &ClaimedJob) -> Result<Prepared, ProcessError> {
    if job.attempts > MAX_ATTEMPTS {
        return Err(ProcessError::Fail(words!(
            "processing was interrupted {} times; the file is too much for the server to process",
            "die Verarbeitung wurde {} Mal unterbrochen; die Datei ist zu groß für den Server",
            job.attempts - 1
        )));
    }
    let record = context
        .store
        .file_record(&job.file_id)
        .await?
        .ok_or_else(|| {
            ProcessError::Fail(words!(
                "the file record is gone",
                "der Datensatz der Datei ist nicht mehr da"
            ))
        })?;
    let file = FileJob::from_record(&record).map_err(|e| ProcessError::Fail(e.into()))?;
    let format = Format::from_file_name(&file.file_name).ok_or_else(|| {
        ProcessError::Fail(words!(
            "\"{}\" is not a spreadsheet name (.xlsx, .xlsm, .xls, .ods or .csv)",
            "\"{}\" ist kein Tabellenname (.xlsx, .xlsm, .xls, .ods oder .csv)",
            file.file_name
        ))
    })?;
    let bytes = match context.files.get_bytes(&file.id).await {
        Ok(bytes) => bytes,
        Err(StoreError::NotFound { .. }) => {
            return Err(ProcessError::Fail(words!(
                "the uploaded bytes are missing from the file store",
                "die hochgeladenen Bytes fehlen im Dateispeicher"
            )));
        }
        Err(error) => {
            return Err(ProcessError::Retry(format!(
                "the file store failed: {error}"
            )));
        }
    };
    let limits = context.settings.limits;
    // Parsing is CPU work: off the async threads.
    let table = tokio::task::spawn_blocking(move || brandhub_sheet::read(&bytes, format, &limits))
        .await
        .map_err(|error| ProcessError::Retry(format!("the sheet reader stopped: {error}")))?
        .map_err(|error| ProcessError::Fail(error.words()))?;
    let map = ColumnMap::match_headers(file.file_type, table.header())
        .map_err(|error| ProcessError::Fail(error.words()))?;
    // Progress: the rows found, while the file is applied.
    let rows = rows_read(&table) as i64;
    let plan = WritePlan::locking(EntryPoint::FileStatus);
    let id = file.id.as_str();
    context
        .store
        .execute(plan, |mut tx, _| {
            Box::pin(async move {
                let stepped = tx
                    .update_file(id, &[(file_paths::ROWS_READ, Cell::Integer(rows))])
                    .await;
                (tx, stepped.map(WriteOutcome::Commit))
            })
        })
        .await?;
    Ok(Prepared { file, table, map })
}

/// Applies a prepared file and records its outcome, in one transaction.
async fn apply(context: &Context, prepared: Prepared) -> Result<(), ProcessError> {
    let Prepared { file, table, map } = prepared;
    let lang = language_of(&context.store, &file.user).await;
    let mut report = Report::new(rows_read(&table), map.unknown());
    // Rows the reader skipped (a cell longer than a cell may be) are reported like bad rows.
    for skipped in table.skipped() {
        report.skip(skipped.number, skipped.reason.clone());
    }
    let plan = WritePlan::locking(EntryPoint::Sheet(file.file_type.as_str()));
    let (file_ref, table_ref, map_ref) = (&file, &table, &map);
    let report = context
        .store
        .execute(plan, |mut tx, _| {
            let mut report = report.clone();
            Box::pin(async move {
                let applied = apply_in(
                    &mut tx,
                    context,
                    (file_ref, lang),
                    table_ref,
                    map_ref,
                    &mut report,
                )
                .await;
                let outcome = match applied {
                    Ok(()) => WriteOutcome::Commit(Ok(report)),
                    Err(error) => WriteOutcome::RollBack(Err(error)),
                };
                (tx, Ok(outcome))
            })
        })
        .await??;
    tracing::info!(
        file = %file.id,
        file_type = file.file_type.as_str(),
        rows = report.rows_read,
        applied = report.rows_applied,
        skipped = report.rows_skipped,
        "file processed"
    );
    Ok(())
}

/// A file's rows and its job's outcome, written inside the transaction of [`apply`]: its
/// step.
async fn apply_in(
    tx: &mut WriteTx,
    context: &Context,
    (file, lang): (&FileJob, Lang),
    table: &Table,
    map: &ColumnMap,
    report: &mut Report,
) -> Result<(), ProcessError> {
    if !tx.finish_job(&file.id, &context.worker).await? {
        return Err(ProcessError::Lost);
    }
    let brand_table = catalog().get(Res::Brand).table;
    if !tx.lock_record(brand_table, &file.brand).await? {
        return Err(ProcessError::Fail(words!(
            "the file's brand no longer exists",
            "die Marke der Datei existiert nicht mehr"
        )));
    }
    let uploader = uploader_rights(tx, file).await?;
    match file.file_type {
        FileType::Product => product::apply(tx, file, table, map, report).await?,
        FileType::Stock => stock::apply(tx, file, table, map, report).await?,
        FileType::Price => price::apply(tx, file, table, map, report).await?,
        FileType::Image => image::apply(tx, file, table, map, report).await?,
        FileType::OrderDispatch => dispatch::apply(tx, file, table, map, report, &uploader).await?,
    }
    tx.record_skipped_rows(&file.id, &report.skipped_rows_in(lang))
        .await?;
    let (status, error) = outcome(file.file_type, report, lang);
    tx.update_file(
        &file.id,
        &[
            (file_paths::STATUS, status.as_str().into()),
            (file_paths::ERROR, Cell::Text(error)),
            (
                file_paths::ROWS_READ,
                Cell::Integer(report.rows_read as i64),
            ),
            (
                file_paths::ROWS_APPLIED,
                Cell::Integer(report.rows_applied as i64),
            ),
            (
                file_paths::ROWS_SKIPPED,
                Cell::Integer(report.rows_skipped as i64),
            ),
        ],
    )
    .await?;
    Ok(())
}

/// The status and `detail.error` of an applied file: `processed` with its warnings, except
/// that a dispatch file of which no row applied is `failed` (nothing was shipped, which a
/// green "processed" would hide), its warnings after a sentence saying so. Its skipped rows
/// stay downloadable as its error report.
fn outcome(file_type: FileType, report: &Report, lang: Lang) -> (FileStatus, String) {
    let text = report.text_in(lang);
    if file_type == FileType::OrderDispatch && report.rows_applied == 0 {
        let mut error = nothing_shipped().in_lang(lang).to_string();
        if !text.is_empty() {
            error.push('\n');
            error.push_str(&text);
        }
        return (FileStatus::Failed, error);
    }
    (FileStatus::Processed, text)
}

/// The first line of `detail.error` of a dispatch file of which no row applied.
pub(crate) fn nothing_shipped() -> Words {
    words!(
        "No row of the file was applied, so nothing was shipped.",
        "Keine Zeile der Datei wurde übernommen, daher wurde nichts versendet."
    )
}

/// The language of a user's `detail.lang` if the API speaks it, else English: the language
/// a file's `detail.error` and error report are kept in (its uploader's).
async fn language_of(store: &brandhub_store::Store, user: &str) -> Lang {
    store
        .text_field_of(Res::User, "detail.lang", user)
        .await
        .ok()
        .flatten()
        .flatten()
        .and_then(|tag| Lang::from_tag(&tag))
        .unwrap_or_default()
}

/// The language of the uploader of file `file_id` ([`language_of`]).
async fn uploaders_language(store: &brandhub_store::Store, file_id: &str) -> Lang {
    let user = store
        .text_field_of(Res::File, file_paths::USER, file_id)
        .await
        .ok()
        .flatten()
        .flatten();
    match user {
        Some(user) => language_of(store, &user).await,
        None => Lang::default(),
    }
}

/// The uploader as it is now, if it may still write what the file writes (rights can change
/// between upload and processing); otherwise the file fails with the reason, nothing applied.
async fn uploader_rights(tx: &mut WriteTx, file: &FileJob) -> Result<Viewer, ProcessError> {
    let changed = words!(
        ": the uploader's rights changed after the upload, so nothing was applied",
        ": die Rechte des Hochladenden haben sich nach dem Upload geändert, daher wurde nichts übernommen"
    );
    let Some(user) = principal(tx, &file.user).await? else {
        return Err(ProcessError::Fail(words!(
            "the uploader (user '{}') no longer exists; nothing was applied",
            "der Hochladende (Benutzer '{}') existiert nicht mehr; nichts wurde übernommen",
            file.user
        )));
    };
    if !user.active {
        return Err(ProcessError::Fail(words!(
            "the uploader ({}) is disabled; nothing was applied",
            "der Hochladende ({}) ist gesperrt; nichts wurde übernommen",
            user.email
        )));
    }
    let viewer = user.viewer();
    let target = Target {
        file_type: file.file_type,
        brand: &file.brand,
        warehouse: file.warehouse.as_deref(),
        host: file.host.as_deref(),
    };
    match target.verdict(tx, &viewer).await? {
        Verdict::Yes => {}
        Verdict::Open if checked_per_record(file.file_type) => {}
        _ => {
            let (resource, id) = target.refused_record();
            let label =
                crate::lookup::labels(tx, crate::lookup::resource(resource), &[id.to_string()])
                    .await?
                    .remove(&id.to_ascii_uppercase())
                    .unwrap_or_else(|| id.to_string());
            return Err(ProcessError::Fail(
                target.refusal(&viewer, &label).then(&changed),
            ));
        }
    }
    if let Some((resource, id)) = target.unseen(tx, &viewer).await? {
        return Err(ProcessError::Fail(words!(
            "the uploader does not see the {resource} '{id}' the file names (it is gone, or the uploader's rights changed after the upload), so nothing was applied",
            "der Hochladende sieht {resource} '{id}' nicht, das die Datei nennt (es ist weg, oder seine Rechte haben sich nach dem Upload geändert), daher wurde nichts übernommen"
        )));
    }
    Ok(viewer)
}

/// The data rows of a sheet: those read and those the reader skipped.
fn rows_read(table: &Table) -> usize {
    table.rows().len() + table.skipped().len()
}

/// A reason as `detail.error` shows it, like the demo's: a capitalised sentence with a stop.
fn reason_sentence(reason: &str) -> String {
    let mut chars = reason.trim().chars();
    let mut sentence: String = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => return "The file could not be processed.".to_string(),
    };
    if !sentence.ends_with('.') {
        sentence.push('.');
    }
    sentence
}

/// Marks a file failed with the reason, nothing applied; the job is done.
async fn fail(
    context: &Context,
    file_id: &str,
    reason: &Words,
    rows: usize,
) -> brandhub_store::StoreResult<()> {
    let lang = uploaders_language(&context.store, file_id).await;
    let error = reason_sentence(reason.in_lang(lang));
    let plan = WritePlan::locking(EntryPoint::FileStatus);
    let failed = context
        .store
        .execute(plan, |mut tx, _| {
            let error = error.clone();
            Box::pin(async move {
                let stepped = async {
                    if !tx.finish_job(file_id, &context.worker).await? {
                        return Ok(WriteOutcome::RollBack(false));
                    }
                    tx.update_file(
                        file_id,
                        &[
                            (file_paths::STATUS, FileStatus::Failed.as_str().into()),
                            (file_paths::ERROR, Cell::Text(error)),
                            (file_paths::ROWS_READ, Cell::Integer(rows as i64)),
                            (file_paths::ROWS_APPLIED, Cell::Integer(0)),
                            (file_paths::ROWS_SKIPPED, Cell::Integer(0)),
                        ],
                    )
                    .await?;
                    Ok(WriteOutcome::Commit(true))
                }
                .await;
                (tx, stepped)
            })
        })
        .await?;
    if !failed {
        tracing::info!(file = %file_id, "another worker took the file over");
        return Ok(());
    }
    tracing::info!(file = %file_id, %reason, "file failed");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{reason_sentence, record_timestamp};

    #[test]
    fn reasons_read_as_sentences() {
        assert_eq!(
            reason_sentence("missing required column: Barcode"),
            "Missing required column: Barcode."
        );
        assert_eq!(reason_sentence("the brand is gone."), "The brand is gone.");
        assert_eq!(reason_sentence(""), "The file could not be processed.");
    }

    #[test]
    fn price_periods_become_record_timestamps() {
        assert_eq!(
            record_timestamp(Some("2024-03-15T00:00:00.000Z")).as_deref(),
            Some("2024-03-15T00:00:00")
        );
        assert_eq!(record_timestamp(Some("0000-00-00T00:00:00.000Z")), None);
        assert_eq!(record_timestamp(None), None);
    }
}
