//! `brandhub backup` and `brandhub restore`: the embedded SQLite database and the local store
//! of uploaded files, copied while servers run into one file, and put back into an empty data
//! dir.
//!
//! The backup is a zip archive: its central directory lists what it holds, so a restore
//! checks the whole backup before it writes anything, and every entry carries a CRC-32 that
//! the restore checks as it reads, so a damaged file is refused rather than restored (a tar
//! archive checks its headers only). The `zip` crate is already the workspace's, for
//! spreadsheets. It holds [`MANIFEST_ENTRY`], the database copy at [`DATABASE_ENTRY`] and each
//! uploaded file under [`FILES_PREFIX`], named by its key.
//!
//! The database is copied first ([`brandhub_store::snapshot`]: one consistent view, writers
//! never held up), then the files: an upload's bytes are stored before its record commits, so
//! every file the copy refers to is already in the store when the files are listed. A file
//! uploaded after the copy may come along too, unreferenced and harmless.
//!
//! PostgreSQL is backed up with its own tools (`pg_dump`, `pg_restore`): both commands refuse
//! a PostgreSQL database URL and name them. With the files in an S3 bucket, `backup` copies the
//! database alone and says so: the bucket is kept by its own tools (versioning, replication).

use crate::cli::Cli;
use crate::commands::{CommandError, database_url, open_store};
use brandhub_filestore::{Place, is_key};
use brandhub_store::snapshot::{self, TableCounts};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What a backup is, as its manifest's `format` says.
pub const FORMAT: &str = "brandhub-backup";

/// The version of the backup's layout; a restore refuses any other.
pub const FORMAT_VERSION: u64 = 1;

/// The manifest's entry in the archive.
pub const MANIFEST_ENTRY: &str = "brandhub-backup.json";

/// The database copy's entry in the archive.
pub const DATABASE_ENTRY: &str = "database/brandhub.db";

/// The folder of the uploaded files' entries in the archive (each named by its key).
pub const FILES_PREFIX: &str = "files/";

/// What a backup holds, written into it and checked by the restore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`] of the build that wrote it.
    pub format_version: u64,
    /// The version of the brandhub that wrote it.
    pub brandhub_version: String,
    /// When the database was copied, `YYYY-MM-DDTHH:MM:SSZ`.
    pub created_at: String,
    pub database: DatabasePart,
    pub files: FilesPart,
}

/// The database copy in a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DatabasePart {
    /// Its size.
    pub bytes: u64,
    /// Its rows by table.
    pub tables: TableCounts,
}

/// The uploaded files in a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FilesPart {
    /// How many it holds.
    pub count: u64,
    /// Their sizes added up.
    pub bytes: u64,
    /// Where the files were instead (`s3://…`) when the backup holds none because the store
    /// was a bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elsewhere: Option<String>,
}

/// The refusal of a PostgreSQL database URL, naming the tools that back it up and where the
/// uploaded files are.
fn postgres_refusal(command: &str, place: &Place) -> CommandError {
    let files = match place {
        Place::Directory(store) => format!("the directory {}", store.display()),
        Place::Bucket(bucket) => format!("the bucket {bucket}, with the bucket's own tools"),
    };
    CommandError(format!(
        "brandhub {command} works on the embedded SQLite database, and this database is \
         PostgreSQL: use PostgreSQL's own tools instead (the URL is the --database-url or \
         BRANDHUB_DATABASE_URL), for example\n  \
         pg_dump --format=custom --file=brandhub.dump \"$BRANDHUB_DATABASE_URL\"\n  \
         pg_restore --dbname=\"$BRANDHUB_DATABASE_URL\" brandhub.dump   (into an empty database)\n\
         and copy the uploaded files after the dump, so that the copy holds every file the dump \
         refers to: {files}"
    ))
}

/// The database file of the command line's SQLite URL, or the refusal of a PostgreSQL one.
fn sqlite_database(cli: &Cli, command: &str, place: &Place) -> Result<PathBuf, CommandError> {
    let url = database_url(cli);
    snapshot::sqlite_file(&url).ok_or_else(|| postgres_refusal(command, place))
}

/// Where the uploaded files are, as the command line says.
fn file_place(cli: &Cli) -> Result<Place, CommandError> {
    Place::of(cli.file_store.as_deref(), &cli.data_dir).map_err(|e| CommandError(e.to_string()))
}

fn io_error(what: impl std::fmt::Display) -> impl Fn(std::io::Error) -> CommandError {
    move |e| CommandError(format!("{what}: {e}"))
}

/// The directory a path is in (`.` for a bare name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Makes a directory's entries (a rename, a new file) durable.
fn sync_dir(dir: &Path) -> Result<(), CommandError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error(format!("cannot sync {}", dir.display())))
}

/// `brandhub backup FILE`: the database copied as one consistent view, then the local files,
/// written to `output` (which must not exist yet) only once complete.
pub async fn backup(cli: &Cli, output: &Path) -> Result<(), CommandError> {
    let place = file_place(cli)?;
    let database = sqlite_database(cli, "backup", &place)?;
    if output.exists() {
        return Err(CommandError(format!(
            "{} exists already: name a new file (a backup never replaces another)",
            output.display()
        )));
    }
    let started = Instant::now();
    let dir = parent_of(output);
    let work = tempfile::Builder::new()
        .prefix(".brandhub-backup-")
        .tempdir_in(&dir)
        .map_err(io_error(format!(
            "cannot make a working directory in {}",
            dir.display()
        )))?;
    let copy = work.path().join("brandhub.db");
    let created_at = format!("{}Z", brandhub_store::ids::now_timestamp());
    let tables = snapshot::copy_sqlite(&database, &copy)
        .await
        .map_err(|e| CommandError(e.to_string()))?;
    let output = output.to_path_buf();
    let written = tokio::task::spawn_blocking(move || {
        let written = write_archive(&copy, tables, created_at, &place, &dir, &output);
        drop(work);
        written.map(|manifest| (manifest, place))
    })
    .await
    .map_err(|e| CommandError(format!("the backup stopped: {e}")))?;
    let (manifest, place) = written?;
    let records: u64 = manifest.database.tables.values().sum();
    println!(
        "backed up the database ({records} rows in {} tables, {} bytes) and {} uploaded files ({} bytes) in {:.1} s",
        manifest.database.tables.len(),
        manifest.database.bytes,
        manifest.files.count,
        manifest.files.bytes,
        started.elapsed().as_secs_f64()
    );
    if let Place::Bucket(bucket) = place {
        eprintln!(
            "note: the uploaded files are in {bucket}, not in this backup: keep them with the \
             bucket's own tools (versioning, replication)"
        );
    }
    Ok(())
}

/// Writes the archive of the database copy at `copy` and the files of `place` into a new file
/// of `dir`, then moves it to `output` unless that appeared meanwhile.
fn write_archive(
    copy: &Path,
    tables: TableCounts,
    created_at: String,
    place: &Place,
    dir: &Path,
    output: &Path,
) -> Result<Manifest, CommandError> {
    let partial = tempfile::Builder::new()
        .prefix(".brandhub-backup-")
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(io_error(format!("cannot write in {}", dir.display())))?;
    let failed = io_error(format!("cannot write the backup {}", output.display()));
    let zip_failed =
        |e: zip::result::ZipError| CommandError(format!("cannot write the backup: {e}"));
    let mut archive = zip::ZipWriter::new(BufWriter::new(partial.as_file())).set_auto_large_file();
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);

    archive
        .start_file(DATABASE_ENTRY, options)
        .map_err(zip_failed)?;
    let database_bytes = copy_into(copy, &mut archive).map_err(&failed)?;

    let mut files = FilesPart {
        count: 0,
        bytes: 0,
        elsewhere: None,
    };
    match place {
        Place::Directory(store) => {
            for key in stored_keys(store)? {
                let path = store.join(&key);
                archive
                    .start_file(format!("{FILES_PREFIX}{key}"), options)
                    .map_err(zip_failed)?;
                files.bytes += copy_into(&path, &mut archive).map_err(io_error(format!(
                    "cannot read the uploaded file {}",
                    path.display()
                )))?;
                files.count += 1;
            }
        }
        Place::Bucket(bucket) => files.elsewhere = Some(bucket.clone()),
    }

    let manifest = Manifest {
        format: FORMAT.to_string(),
        format_version: FORMAT_VERSION,
        brandhub_version: env!("CARGO_PKG_VERSION").to_string(),
        created_at,
        database: DatabasePart {
            bytes: database_bytes,
            tables,
        },
        files,
    };
    archive
        .start_file(MANIFEST_ENTRY, options)
        .map_err(zip_failed)?;
    let text = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| CommandError(format!("cannot write the manifest: {e}")))?;
    archive.write_all(&text).map_err(&failed)?;
    archive
        .finish()
        .map_err(zip_failed)?
        .into_inner()
        .map_err(|e| failed(e.into_error()))?;
    partial.as_file().sync_all().map_err(&failed)?;
    partial.persist_noclobber(output).map_err(|e| {
        CommandError(format!(
            "cannot put the backup at {}: {}",
            output.display(),
            e.error
        ))
    })?;
    sync_dir(dir)?;
    Ok(manifest)
}

/// Copies the file at `path` into `to`; returns its size.
fn copy_into(path: &Path, to: &mut impl Write) -> std::io::Result<u64> {
    std::io::copy(&mut BufReader::new(File::open(path)?), to)
}

/// The keys of the complete files of a local store, in order (none when it was never made).
/// Uploads being written have other names ([`is_key`]) and are left out.
fn stored_keys(store: &Path) -> Result<Vec<String>, CommandError> {
    let listing = match std::fs::read_dir(store) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(format!("cannot list {}", store.display()))(e)),
    };
    let mut keys = Vec::new();
    for entry in listing {
        let entry = entry.map_err(io_error(format!("cannot list {}", store.display())))?;
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        match entry.file_name().to_str() {
            Some(name) if is_file && is_key(name) => keys.push(name.to_string()),
            _ => {}
        }
    }
    keys.sort();
    Ok(keys)
}

/// `brandhub restore FILE`: checks the whole backup, then puts its database and files into
/// the data dir, which must hold neither yet.
pub async fn restore(cli: &Cli, input: &Path) -> Result<(), CommandError> {
    let place = file_place(cli)?;
    let database = sqlite_database(cli, "restore", &place)?;
    let started = Instant::now();
    let staged = {
        let (database, place, input) = (database.clone(), place.clone(), input.to_path_buf());
        tokio::task::spawn_blocking(move || stage(&input, &database, &place))
            .await
            .map_err(|e| CommandError(format!("the restore stopped: {e}")))??
    };
    let manifest = staged.put_in_place(&database, &place)?;
    // Opening migrates a backup of an older build; then nothing this build needs may lack.
    let store = open_store(cli).await?;
    let gaps = store.schema_gaps().await;
    store.close().await;
    let gaps = gaps?;
    if !gaps.is_empty() {
        return Err(CommandError(format!(
            "the restored database lacks what brandhub needs: {}",
            gaps.join(", ")
        )));
    }
    let records: u64 = manifest.database.tables.values().sum();
    println!(
        "restored the database ({records} rows in {} tables) and {} uploaded files from the \
         backup made by brandhub {} at {}, in {:.1} s",
        manifest.database.tables.len(),
        manifest.files.count,
        manifest.brandhub_version,
        manifest.created_at,
        started.elapsed().as_secs_f64()
    );
    if let Some(bucket) = &manifest.files.elsewhere {
        eprintln!(
            "note: the backup holds no uploaded files: they were in {bucket}, which the server \
             reads with --file-store {bucket}"
        );
    }
    Ok(())
}

/// A backup checked and unpacked beside where it goes.
struct Staged {
    manifest: Manifest,
    /// The database copy, checked, beside the database's place.
    database: PathBuf,
    /// The files, in a directory beside the store's, when the backup holds any.
    files: Option<PathBuf>,
}

/// The file a part is unpacked into before it is moved to `path`.
fn staging_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".restoring");
    PathBuf::from(name)
}

/// Refuses a target that holds a database or uploaded files already.
fn refuse_filled_target(database: &Path, place: &Place) -> Result<(), CommandError> {
    let mut log = database.as_os_str().to_owned();
    log.push("-wal");
    for path in [database, Path::new(&log)] {
        if path.exists() {
            return Err(CommandError(format!(
                "{} exists: restore only into an empty data dir (no database, no uploaded \
                 files), so that nothing is overwritten; move it away or choose another \
                 --data-dir",
                path.display()
            )));
        }
    }
    if let Place::Directory(store) = place
        && std::fs::read_dir(store).is_ok_and(|mut entries| entries.next().is_some())
    {
        return Err(CommandError(format!(
            "{} holds uploaded files: restore only into an empty data dir (no database, no \
             uploaded files), so that nothing is overwritten; move it away or choose another \
             --data-dir",
            store.display()
        )));
    }
    Ok(())
}

/// Reads and checks the backup at `input`, and unpacks it beside `database` and the store of
/// `place`: nothing is where a server would find it yet.
fn stage(input: &Path, database: &Path, place: &Place) -> Result<Staged, CommandError> {
    let not_backup = |why: String| {
        CommandError(format!(
            "{} is not a brandhub backup: {why}",
            input.display()
        ))
    };
    let file = File::open(input).map_err(io_error(format!("cannot read {}", input.display())))?;
    let mut archive = zip::ZipArchive::new(BufReader::new(file))
        .map_err(|e| not_backup(format!("it is no zip archive ({e})")))?;
    let manifest = read_manifest(&mut archive).map_err(not_backup)?;
    let keys = check_entries(&mut archive, &manifest).map_err(|why| {
        CommandError(format!(
            "the backup {} is damaged or incomplete: {why}",
            input.display()
        ))
    })?;
    refuse_filled_target(database, place)?;
    let store = match (place, keys.is_empty()) {
        (_, true) => None,
        (Place::Directory(store), false) => Some(store.clone()),
        (Place::Bucket(bucket), false) => {
            return Err(CommandError(format!(
                "the backup holds {} uploaded files, and --file-store is {bucket}: restore puts \
                 files into the local store only; restore without --file-store, then copy the \
                 directory `files` of the data dir into the bucket",
                keys.len()
            )));
        }
    };
    let damaged =
        |why: String| CommandError(format!("the backup {} is damaged: {why}", input.display()));

    let staged_database = staging_path(database);
    let database_dir = parent_of(database);
    std::fs::create_dir_all(&database_dir)
        .map_err(io_error(format!("cannot make {}", database_dir.display())))?;
    // A copy left by a restore that stopped is this restore's to replace.
    remove_database(&staged_database);
    unpack(&mut archive, DATABASE_ENTRY, &staged_database).map_err(&damaged)?;
    let checked = tokio::runtime::Handle::current()
        .block_on(snapshot::check_sqlite(&staged_database))
        .map_err(|e| damaged(e.to_string()))
        .and_then(
            |tables| match differences(&manifest.database.tables, &tables) {
                None => Ok(()),
                Some(difference) => Err(damaged(format!(
                    "its database does not hold what its manifest says ({difference})"
                ))),
            },
        );
    if let Err(error) = checked {
        remove_database(&staged_database);
        return Err(error);
    }

    let files = match store {
        None => None,
        Some(store) => {
            let staged_files = staging_path(&store);
            let unpacked = unpack_files(&mut archive, &keys, &staged_files).map_err(&damaged);
            if let Err(error) = unpacked {
                remove_database(&staged_database);
                let _ = std::fs::remove_dir_all(&staged_files);
                return Err(error);
            }
            Some(staged_files)
        }
    };
    Ok(Staged {
        manifest,
        database: staged_database,
        files,
    })
}

/// Removes an unpacked database copy and whatever SQLite kept beside it.
fn remove_database(path: &Path) {
    let _ = std::fs::remove_file(path);
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut beside = path.as_os_str().to_owned();
        beside.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(beside));
    }
}

/// The manifest of an archive, checked to be a backup this build restores.
fn read_manifest<R: Read + std::io::Seek>(
    archive: &mut zip::ZipArchive<R>,
) -> Result<Manifest, String> {
    let mut entry = archive
        .by_name(MANIFEST_ENTRY)
        .map_err(|_| format!("it has no {MANIFEST_ENTRY}"))?;
    if entry.size() > 16 << 20 {
        return Err(format!(
            "its {MANIFEST_ENTRY} is too large to be a manifest"
        ));
    }
    let mut text = Vec::new();
    entry
        .read_to_end(&mut text)
        .map_err(|e| format!("its {MANIFEST_ENTRY} cannot be read ({e})"))?;
    parse_manifest(&text)
}

/// Parses a manifest, telling a foreign file, a newer format and a damaged manifest apart.
pub fn parse_manifest(text: &[u8]) -> Result<Manifest, String> {
    let value: serde_json::Value = serde_json::from_slice(text)
        .map_err(|e| format!("its {MANIFEST_ENTRY} is not JSON ({e})"))?;
    if value["format"] != FORMAT {
        return Err(format!(
            "its {MANIFEST_ENTRY} does not say \"format\": \"{FORMAT}\""
        ));
    }
    match value["formatVersion"].as_u64() {
        Some(FORMAT_VERSION) => {}
        Some(newer) if newer > FORMAT_VERSION => {
            return Err(format!(
                "it has format version {newer}, made by brandhub {}; this brandhub {} restores \
                 version {FORMAT_VERSION}: restore it with a brandhub as new as the one that \
                 made it",
                value["brandhubVersion"].as_str().unwrap_or("(unnamed)"),
                env!("CARGO_PKG_VERSION")
            ));
        }
        _ => {
            return Err(format!(
                "its {MANIFEST_ENTRY} has no format version this brandhub knows"
            ));
        }
    }
    serde_json::from_value(value).map_err(|e| format!("its {MANIFEST_ENTRY} is damaged ({e})"))
}

/// Checks that the archive holds exactly what the manifest says, by its directory (the
/// bytes are checked as they are unpacked); returns the files' keys.
fn check_entries<R: Read + std::io::Seek>(
    archive: &mut zip::ZipArchive<R>,
    manifest: &Manifest,
) -> Result<Vec<String>, String> {
    let mut keys = Vec::new();
    let mut file_bytes = 0u64;
    let mut database = None;
    for index in 0..archive.len() {
        let entry = archive
            .by_index_raw(index)
            .map_err(|e| format!("entry {index} cannot be read ({e})"))?;
        let name = entry.name().map_err(|e| format!("entry {index}: {e}"))?;
        if name == MANIFEST_ENTRY {
            continue;
        }
        if name == DATABASE_ENTRY {
            database = Some(entry.size());
        } else if let Some(key) = name.strip_prefix(FILES_PREFIX)
            && is_key(key)
        {
            keys.push(key.to_string());
            file_bytes += entry.size();
        } else {
            return Err(format!("it holds {name:?}, which no backup holds"));
        }
    }
    match database {
        None => return Err(format!("it has no {DATABASE_ENTRY}")),
        Some(bytes) if bytes != manifest.database.bytes => {
            return Err(format!(
                "its database has {bytes} bytes, its manifest says {}",
                manifest.database.bytes
            ));
        }
        Some(_) => {}
    }
    if keys.len() as u64 != manifest.files.count || file_bytes != manifest.files.bytes {
        return Err(format!(
            "it holds {} uploaded files of {file_bytes} bytes, its manifest says {} of {}",
            keys.len(),
            manifest.files.count,
            manifest.files.bytes
        ));
    }
    Ok(keys)
}

/// The first table whose rows differ between what a manifest says and what a database holds.
fn differences(said: &TableCounts, found: &TableCounts) -> Option<String> {
    let tables = said.keys().chain(found.keys());
    for table in tables {
        let (said, found) = (said.get(table), found.get(table));
        if said != found {
            let rows = |n: Option<&u64>| n.map_or("no table".to_string(), |n| format!("{n} rows"));
            return Some(format!(
                "table {table}: {} found, {} said",
                rows(found),
                rows(said)
            ));
        }
    }
    None
}

/// Unpacks the entry `name` into the file `to` (replacing one a restore that stopped left),
/// checking its CRC-32, and syncs it.
fn unpack<R: Read + std::io::Seek>(
    archive: &mut zip::ZipArchive<R>,
    name: &str,
    to: &Path,
) -> Result<(), String> {
    let mut entry = archive
        .by_name(name)
        .map_err(|e| format!("{name} cannot be read ({e})"))?;
    let _ = std::fs::remove_file(to);
    let file = File::create_new(to).map_err(|e| format!("cannot write {}: {e}", to.display()))?;
    let mut writer = BufWriter::new(file);
    let copied = std::io::copy(&mut entry, &mut writer)
        .and_then(|_| writer.into_inner().map_err(|e| e.into_error()))
        .and_then(|file| file.sync_all())
        .map_err(|e| format!("{name} cannot be unpacked ({e})"));
    if copied.is_err() {
        let _ = std::fs::remove_file(to);
    }
    copied
}

/// Unpacks the files of `keys` into the new directory `dir`.
fn unpack_files<R: Read + std::io::Seek>(
    archive: &mut zip::ZipArchive<R>,
    keys: &[String],
    dir: &Path,
) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    for key in keys {
        unpack(archive, &format!("{FILES_PREFIX}{key}"), &dir.join(key))?;
    }
    sync_dir(dir).map_err(|e| e.0)
}

impl Staged {
    /// Moves the files, then the database, to their places: a server finds a database only
    /// once everything is there.
    fn put_in_place(self, database: &Path, place: &Place) -> Result<Manifest, CommandError> {
        if let (Some(staged), Place::Directory(store)) = (&self.files, place) {
            // An empty store directory (made by a server that stored nothing) gives way.
            if store.exists() {
                std::fs::remove_dir(store)
                    .map_err(io_error(format!("cannot replace {}", store.display())))?;
            }
            std::fs::rename(staged, store).map_err(io_error(format!(
                "cannot move the files to {}",
                store.display()
            )))?;
            sync_dir(&parent_of(store))?;
        }
        std::fs::rename(&self.database, database).map_err(io_error(format!(
            "cannot move the database to {}",
            database.display()
        )))?;
        sync_dir(&parent_of(database))?;
        Ok(self.manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            format: FORMAT.to_string(),
            format_version: FORMAT_VERSION,
            brandhub_version: "0.1.0".to_string(),
            created_at: "2031-01-01T00:00:00Z".to_string(),
            database: DatabasePart {
                bytes: 4096,
                tables: TableCounts::from([("brand".to_string(), 3)]),
            },
            files: FilesPart {
                count: 1,
                bytes: 10,
                elsewhere: None,
            },
        }
    }

    #[test]
    fn manifests_read_back_as_written() {
        let text = serde_json::to_vec(&manifest()).unwrap();
        assert_eq!(parse_manifest(&text).unwrap(), manifest());
        let shown = String::from_utf8(text).unwrap();
        assert!(shown.contains("\"formatVersion\":1"), "{shown}");
        assert!(!shown.contains("elsewhere"), "{shown}");
    }

    #[test]
    fn foreign_newer_and_damaged_manifests_are_told_apart() {
        let foreign = parse_manifest(br#"{"name": "something else"}"#).unwrap_err();
        assert!(foreign.contains("does not say"), "{foreign}");
        assert!(
            parse_manifest(b"\x00\x01")
                .unwrap_err()
                .contains("not JSON")
        );
        let mut newer = serde_json::to_value(manifest()).unwrap();
        newer["formatVersion"] = 2.into();
        newer["brandhubVersion"] = "9.0.0".into();
        let newer = parse_manifest(newer.to_string().as_bytes()).unwrap_err();
        assert!(
            newer.contains("format version 2, made by brandhub 9.0.0"),
            "{newer}"
        );
        let mut damaged = serde_json::to_value(manifest()).unwrap();
        damaged["database"]["bytes"] = "many".into();
        let damaged = parse_manifest(damaged.to_string().as_bytes()).unwrap_err();
        assert!(damaged.contains("is damaged"), "{damaged}");
    }

    #[test]
    fn table_differences_name_the_table() {
        let said = TableCounts::from([("a".to_string(), 1), ("b".to_string(), 2)]);
        assert_eq!(differences(&said, &said), None);
        let fewer = TableCounts::from([("a".to_string(), 1), ("b".to_string(), 1)]);
        assert_eq!(
            differences(&said, &fewer).unwrap(),
            "table b: 1 rows found, 2 rows said"
        );
        let missing = TableCounts::from([("a".to_string(), 1)]);
        assert_eq!(
            differences(&said, &missing).unwrap(),
            "table b: no table found, 2 rows said"
        );
    }
}
