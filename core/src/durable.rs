//! Durable sessions (SPEC §16): the journal of R30 and the chart of R31 in one embedded
//! database, [redb](https://www.redb.org) (copy-on-write B-trees, checksummed pages, a commit
//! that is durable when it returns), over any [`StorageBackend`]: a file, or the simulator's
//! disk that keeps a durable and a volatile image.
//!
//! # What is stored
//!
//! One table holds every session's journal, keyed by (session, sequence number): each
//! [`Record`] is its JSON behind a CRC-32 of that JSON, so that a damaged record is refused on
//! reading (R35), never read back as another. A second table holds each session's chart as
//! JSON, with the same check. The store writes what it is given: guarding every record (R22)
//! and redacting the prompt (R15) before it reaches [`DurableStore::commit_records`] is its
//! caller's duty, and the run driver's (R30).
//!
//! # Commits (R30, R31, R35)
//!
//! Every commit (one step of a run, [`SessionStore::commit`]) is one write transaction
//! committed with redb's `Immediate` durability: when it returns `Ok`, its records survive any
//! later crash (I16). The results of a batch that changed the chart commit with the chart in
//! one transaction: after a crash before that commit neither is there, and each call is as if
//! its body never ran (R31). An intent ([`Record::Intent`]) is committed before the body of a
//! call whose effect lives outside the store starts (R32).
//!
//! A failed write, sync or commit is a crash (R35): the store stops, and every later call
//! returns [`StoreError::Stopped`] naming the first failure, so that nothing after it is
//! acknowledged. The way on is to reopen the store from what the backend holds, as after a
//! crash.
//!
//! # Opening (R35)
//!
//! [`DurableStore::open_on`] runs redb's recovery (after a crash, the database is the last
//! commit that returned) with its integrity check on open, which reads every page against its
//! checksum. [`DurableStore::records`] checks every record's CRC and sequence. Either failure
//! is a [`StoreError`] naming what is damaged; the store never resumes from wrong data.
//!
//! # Beyond one machine
//!
//! The store is one process's: redb locks its file. Sessions shared by several machines would
//! keep the same two tables on a database server (PostgreSQL, FoundationDB) with a lease per
//! session: a runtime takes the session's lease (a row with an owner and an expiry) before it
//! resumes a run, and every commit carries the lease's fencing token (a number that grows
//! with each new owner) and is refused by the server when a newer owner holds the session,
//! so a runtime that paused past its lease cannot commit a second chart write.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use std::sync::Arc;

use crate::chart::ChartState;
use crate::fault::{Fault, FaultSet};
use crate::session::SessionStore;
pub use crate::session::{Record, StoreError, StoredLimits};

pub use redb::{BackendError, StorageBackend};

/// The exact version of redb that writes the store (what a durable runtime names in its
/// `ready`, SPEC §17 P7); a test keeps it the one `Cargo.lock` pins.
pub const REDB_VERSION: &str = "5.0.0";

/// Every session's journal: (session, sequence number) → CRC-32 and JSON of a [`Record`].
const JOURNAL: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("journal");

/// Every session's chart: session → CRC-32 and JSON of a [`ChartState`].
const CHARTS: TableDefinition<&str, &[u8]> = TableDefinition::new("charts");

/// The journal and the charts of every session, in one redb database.
pub struct DurableStore {
    database: Database,
    /// The file of a store opened without its lock, which [`DurableStore::sever`] closes.
    unlocked: Option<Arc<std::sync::Mutex<Option<std::fs::File>>>>,
    /// The first failure, after which nothing is acknowledged.
    stopped: Option<String>,
    /// The seeded bugs on for this store (SPEC §11); empty outside the simulator.
    faults: FaultSet,
}

impl std::fmt::Debug for DurableStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableStore")
            .field("stopped", &self.stopped)
            .finish_non_exhaustive()
    }
}

/// The stored form of `json`: its CRC-32, little-endian, then the JSON.
fn sealed(json: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(json.len() + 4);
    bytes.extend_from_slice(&crc32fast::hash(json).to_le_bytes());
    bytes.extend_from_slice(json);
    bytes
}

/// The JSON of a stored value, when its CRC-32 holds.
fn unsealed(bytes: &[u8]) -> Option<&[u8]> {
    let (crc, json) = bytes.split_first_chunk::<4>()?;
    (u32::from_le_bytes(*crc) == crc32fast::hash(json)).then_some(json)
}

impl DurableStore {
    /// Opens the database in the file at `path`, creating it when absent. A new database is
    /// made beside it and renamed into place once made, so that a crash while it is made
    /// leaves no file, never one that does not open.
    pub fn open(path: &Path) -> Result<DurableStore, StoreError> {
        let failed = |error: &dyn std::fmt::Display| {
            StoreError::Open(format!("{}: {error}", path.display()))
        };
        if !path.exists() {
            let mut fresh = path.as_os_str().to_owned();
            fresh.push(".new");
            let fresh = Path::new(&fresh);
            let _ = std::fs::remove_file(fresh);
            drop(Database::create(fresh).map_err(|error| failed(&error))?);
            std::fs::rename(fresh, path).map_err(|error| failed(&error))?;
            if let Some(folder) = path
                .parent()
                .filter(|folder| !folder.as_os_str().is_empty())
            {
                std::fs::File::open(folder)
                    .and_then(|folder| folder.sync_all())
                    .map_err(|error| failed(&error))?;
            }
        }
        let database = Database::builder()
            .set_check_integrity_on_open(true)
            .create(path)
            .map_err(|error| failed(&error))?;
        Ok(DurableStore::with(database))
    }

    /// Opens the database in the file at `path` (made as [`DurableStore::open`] makes it)
    /// without redb's lock on the file: for a process that drops a store without closing it,
    /// as a kill leaves it, and opens the same file again (the protocol's drop mode, SPEC §17
    /// P9). A store dropped so writes nothing more: redb's close, which writes the allocator's
    /// state and a clean shutdown, never runs, and the next open recovers as after a kill.
    /// Two stores on one file at once are the caller's to prevent.
    pub fn open_unlocked(path: &Path) -> Result<DurableStore, StoreError> {
        if !path.exists() {
            drop(DurableStore::open(path)?);
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|error| StoreError::Open(format!("{}: {error}", path.display())))?;
        let file = Arc::new(std::sync::Mutex::new(Some(file)));
        let mut store = DurableStore::open_on(UnlockedFile(Arc::clone(&file)))?;
        store.unlocked = Some(file);
        Ok(store)
    }

    /// Closes the file of a store opened by [`DurableStore::open_unlocked`] under it, as a
    /// kill closes a process's files: every later read, write or sync fails, so that dropping
    /// the store afterwards (redb's close) changes nothing on disk. A store on any other
    /// backend is left as it is.
    pub fn sever(&self) {
        if let Some(file) = &self.unlocked {
            let mut file = file
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *file = None;
        }
    }

    /// Opens the database on `backend`, creating it when the backend is empty; after a crash,
    /// the database is the last commit that returned. A backend has no rename: a crash while
    /// the database is first made may leave a backend that does not open, so a caller makes
    /// the database (opens it once) before it holds anything.
    pub fn open_on(backend: impl StorageBackend) -> Result<DurableStore, StoreError> {
        let database = Database::builder()
            .set_check_integrity_on_open(true)
            .create_with_backend(backend)
            .map_err(|error| StoreError::Open(error.to_string()))?;
        Ok(DurableStore::with(database))
    }

    fn with(database: Database) -> DurableStore {
        DurableStore {
            database,
            unlocked: None,
            stopped: None,
            faults: FaultSet::EMPTY,
        }
    }

    /// Switches the seeded bugs `faults` on for this store's commits (SPEC §11).
    pub fn set_faults(&mut self, faults: FaultSet) {
        self.faults = faults;
    }

    /// The first failure, if the store has stopped.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    fn running(&self) -> Result<(), StoreError> {
        match &self.stopped {
            Some(failure) => Err(StoreError::Stopped(failure.clone())),
            None => Ok(()),
        }
    }

    /// Stops the store at `failure` (R35) and returns it.
    fn stop(&mut self, failure: impl std::fmt::Display) -> StoreError {
        let failure = failure.to_string();
        self.stopped.get_or_insert_with(|| failure.clone());
        StoreError::Failed(failure)
    }

    /// Appends `record` to the journal of `session`, durably: when this returns `Ok`, the
    /// record survives any crash.
    pub fn append(&mut self, session: &str, record: &Record) -> Result<(), StoreError> {
        self.commit_records(session, std::slice::from_ref(record), None)
    }

    /// Appends `records` and, when given, replaces the chart of `session` with `chart`, in
    /// one transaction (R31): after a crash, all of it is there or none of it is.
    pub fn commit_records(
        &mut self,
        session: &str,
        records: &[Record],
        chart: Option<&ChartState>,
    ) -> Result<(), StoreError> {
        self.running()?;
        // A record that does not serialise never reached the backend: refused, not a crash.
        let unserialisable = |error: serde_json::Error| StoreError::Failed(error.to_string());
        let json = (records.iter())
            .map(serde_json::to_vec)
            .collect::<Result<Vec<_>, _>>()
            .map_err(unserialisable)?;
        let chart_json = chart
            .map(serde_json::to_vec)
            .transpose()
            .map_err(unserialisable)?;
        let synced = !crate::fault!(self.faults, Fault::AckBeforeSync);
        let committed = write(
            &self.database,
            session,
            &json,
            chart_json.as_deref(),
            synced,
        );
        committed.map_err(|error| self.stop(error))
    }

    /// `table`, in a read transaction of its own; `None` before anything was written to it.
    fn table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        table: TableDefinition<K, V>,
        session: &str,
    ) -> Result<Option<redb::ReadOnlyTable<K, V>>, StoreError> {
        self.running()?;
        let transaction = self
            .database
            .begin_read()
            .map_err(|error| damaged(session, error))?;
        match transaction.open_table(table) {
            Ok(opened) => Ok(Some(opened)),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
            Err(error) => Err(damaged(session, error)),
        }
    }

    /// Every session the journal holds, by name, in order: what a process that reopens the
    /// store after a crash looks through for a run to take up.
    pub fn sessions(&self) -> Result<Vec<String>, StoreError> {
        let Some(journal) = self.table(JOURNAL, "every session")? else {
            return Ok(Vec::new());
        };
        let damaged = |error: &dyn std::fmt::Display| StoreError::Damaged(error.to_string());
        let mut names: Vec<String> = Vec::new();
        for entry in journal.iter().map_err(|error| damaged(&error))? {
            let (key, _) = entry.map_err(|error| damaged(&error))?;
            let name = key.value().0;
            if names.last().map(String::as_str) != Some(name) {
                names.push(name.to_owned());
            }
        }
        Ok(names)
    }

    /// The journal of `session`, in order (empty for a new session). A damaged record, or a
    /// gap in the sequence, is an error (R35).
    pub fn records(&self, session: &str) -> Result<Vec<Record>, StoreError> {
        let Some(journal) = self.table(JOURNAL, session)? else {
            return Ok(Vec::new());
        };
        let range = journal
            .range((session, 0)..=(session, u64::MAX))
            .map_err(|error| damaged(session, error))?;
        let mut records = Vec::new();
        for (expected, entry) in (0_u64..).zip(range) {
            let (key, value) = entry.map_err(|error| damaged(session, error))?;
            let sequence = key.value().1;
            if sequence != expected {
                return Err(damaged(session, format!("record {expected} is missing")));
            }
            let json = unsealed(value.value())
                .ok_or_else(|| damaged(session, format!("record {sequence} fails its CRC-32")))?;
            let record = serde_json::from_slice(json).map_err(|error| {
                damaged(session, format!("record {sequence} does not read: {error}"))
            })?;
            records.push(record);
        }
        Ok(records)
    }

    /// The chart of `session` as last committed, if a write committed one.
    pub fn chart(&self, session: &str) -> Result<Option<ChartState>, StoreError> {
        let Some(charts) = self.table(CHARTS, session)? else {
            return Ok(None);
        };
        let Some(value) = charts
            .get(session)
            .map_err(|error| damaged(session, error))?
        else {
            return Ok(None);
        };
        let json = unsealed(value.value())
            .ok_or_else(|| damaged(session, "the chart fails its CRC-32"))?;
        serde_json::from_slice(json)
            .map(Some)
            .map_err(|error| damaged(session, format!("the chart does not read: {error}")))
    }
}

/// The error of a damaged part of `session`'s data (R35).
/// A file as redb's storage, without a lock ([`DurableStore::open_unlocked`]).
#[derive(Debug)]
struct UnlockedFile(Arc<std::sync::Mutex<Option<std::fs::File>>>);

impl UnlockedFile {
    /// The file, unless the store was severed ([`DurableStore::sever`]).
    fn with<T>(
        &self,
        act: impl FnOnce(&mut std::fs::File) -> std::io::Result<T>,
    ) -> Result<T, BackendError> {
        let mut file = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match file.as_mut() {
            Some(file) => Ok(act(file)?),
            None => Err(BackendError::Io(std::io::Error::other(
                "the store was severed",
            ))),
        }
    }
}

impl StorageBackend for UnlockedFile {
    fn len(&self) -> Result<u64, BackendError> {
        self.with(|file| Ok(file.metadata()?.len()))
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), BackendError> {
        use std::io::{Read, Seek, SeekFrom};
        self.with(|file| {
            file.seek(SeekFrom::Start(offset))?;
            file.read_exact(out)
        })
    }

    fn set_len(&self, len: u64) -> Result<(), BackendError> {
        self.with(|file| file.set_len(len))
    }

    fn sync_data(&self) -> Result<(), BackendError> {
        self.with(|file| file.sync_data())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), BackendError> {
        use std::io::{Seek, SeekFrom, Write};
        self.with(|file| {
            file.seek(SeekFrom::Start(offset))?;
            file.write_all(data)
        })
    }
}

fn damaged(session: &str, what: impl std::fmt::Display) -> StoreError {
    StoreError::Damaged(format!("session {session:?}: {what}"))
}

/// One write transaction, committed in two phases: the records (JSON) at the end of the
/// journal of `session`, and the chart (JSON) when there is one. `synced` is `false` only
/// under the seeded bug `ack-before-sync`: the commit returns before anything is synced.
fn write(
    database: &Database,
    session: &str,
    records: &[Vec<u8>],
    chart_json: Option<&[u8]>,
    synced: bool,
) -> Result<(), redb::Error> {
    let mut transaction = database.begin_write()?;
    // Two phases: a crash part way through a commit never leaves the database pointing at a
    // commit whose pages an attacker could shape through the records they control (model
    // replies, tool results); one sync more per commit.
    transaction.set_two_phase_commit(true);
    if !synced {
        transaction.set_durability(redb::Durability::None)?;
    }
    {
        let mut journal = transaction.open_table(JOURNAL)?;
        let next = journal
            .range((session, 0)..=(session, u64::MAX))?
            .next_back()
            .transpose()?
            .map_or(0, |(key, _)| key.value().1 + 1);
        for (sequence, json) in (next..).zip(records) {
            journal.insert((session, sequence), sealed(json).as_slice())?;
        }
    }
    if let Some(chart_json) = chart_json {
        let mut charts = transaction.open_table(CHARTS)?;
        charts.insert(session, sealed(chart_json).as_slice())?;
    }
    transaction.commit()?;
    Ok(())
}

impl SessionStore for DurableStore {
    fn journal(&self, session_id: &str) -> Result<Vec<Record>, StoreError> {
        self.records(session_id)
    }

    fn commit(
        &mut self,
        session_id: &str,
        records: &[Record],
        chart: Option<&Arc<ChartState>>,
    ) -> Result<(), StoreError> {
        self.commit_records(session_id, records, chart.map(|chart| &**chart))
    }

    fn chart(&self, session_id: &str) -> Result<Option<ChartState>, StoreError> {
        DurableStore::chart(self, session_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Message;

    fn message(text: &str) -> Record {
        Record::Message {
            message: Arc::new(Message::User {
                text: text.to_owned(),
            }),
        }
    }

    #[test]
    fn records_come_back_in_order_per_session_and_survive_a_reopen() {
        let directory = std::env::temp_dir().join(format!("ward-durable-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join("sessions.redb");
        let _ = std::fs::remove_file(&path);
        {
            let mut store = DurableStore::open(&path).unwrap();
            assert_eq!(store.records("a").unwrap(), vec![]);
            store.append("a", &message("one")).unwrap();
            store.append("b", &message("other")).unwrap();
            store.append("a", &message("two")).unwrap();
        }
        let store = DurableStore::open(&path).unwrap();
        assert_eq!(
            store.records("a").unwrap(),
            vec![message("one"), message("two")]
        );
        assert_eq!(store.records("b").unwrap(), vec![message("other")]);
        assert_eq!(store.chart("a").unwrap(), None);
        assert_eq!(store.sessions().unwrap(), ["a", "b"]);
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn a_record_that_fails_its_crc_or_leaves_a_gap_is_refused() {
        let directory =
            std::env::temp_dir().join(format!("ward-durable-damaged-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join("sessions.redb");
        let _ = std::fs::remove_file(&path);
        let mut store = DurableStore::open(&path).unwrap();
        store.append("a", &message("one")).unwrap();
        store.append("b", &message("one")).unwrap();
        // Bytes redb keeps whole (its pages' checksums hold) but that are no sealed record.
        let transaction = store.database.begin_write().unwrap();
        {
            let mut journal = transaction.open_table(JOURNAL).unwrap();
            let mut bad = sealed(br#"{"record":"runEnded","run":0,"outcome":"completed"}"#);
            bad[10] ^= 0x01;
            journal.insert(("a", 1), bad.as_slice()).unwrap();
            let later = sealed(br#"{"record":"runEnded","run":0,"outcome":"completed"}"#);
            journal.insert(("b", 2), later.as_slice()).unwrap();
        }
        transaction.commit().unwrap();
        let refused = store.records("a").unwrap_err();
        assert_eq!(
            refused,
            StoreError::Damaged("session \"a\": record 1 fails its CRC-32".to_owned())
        );
        let gap = store.records("b").unwrap_err();
        assert_eq!(
            gap,
            StoreError::Damaged("session \"b\": record 1 is missing".to_owned())
        );
        drop(store);
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn the_redb_version_named_is_the_one_the_lock_file_pins() {
        let lock = include_str!("../../Cargo.lock");
        let pinned = lock
            .split("[[package]]")
            .find(|package| package.contains("name = \"redb\""))
            .and_then(|package| package.lines().find(|line| line.starts_with("version = ")))
            .map(|line| line.trim_start_matches("version = ").trim_matches('"'));
        assert_eq!(pinned, Some(REDB_VERSION));
    }

    #[test]
    fn a_sealed_value_with_a_flipped_bit_is_refused() {
        let json = br#"{"record":"message"}"#;
        let mut bytes = sealed(json);
        assert_eq!(unsealed(&bytes), Some(&json[..]));
        bytes[7] ^= 0x04;
        assert_eq!(unsealed(&bytes), None);
        assert_eq!(unsealed(&bytes[..3]), None);
    }
}
