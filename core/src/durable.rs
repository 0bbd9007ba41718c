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
//! and redacting the prompt (R15) before it reaches [`DurableStore::append`] is its caller's
//! duty, and the run driver's (R30).
//!
//! # Commits (R30, R31, R35)
//!
//! Every append is one write transaction committed with redb's `Immediate` durability: when
//! `append` returns `Ok`, the record survives any later crash (I16). A result of a call that
//! changed the chart commits with the chart in one transaction
//! ([`DurableStore::commit_with_chart`]): after a crash before that commit neither is there,
//! and the call is as if its body never ran (R31). An intent ([`Record::Intent`]) is appended
//! before the body of a call whose effect lives outside the store starts (R32).
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
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::chart::ChartState;
use crate::session::Message;

pub use redb::{BackendError, StorageBackend};

/// Every session's journal: (session, sequence number) → CRC-32 and JSON of a [`Record`].
const JOURNAL: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("journal");

/// Every session's chart: session → CRC-32 and JSON of a [`ChartState`].
const CHARTS: TableDefinition<&str, &[u8]> = TableDefinition::new("charts");

/// The limits a run started with (R34 keeps them on resume), as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredLimits {
    /// `turns_max`.
    pub turns_max: u32,
    /// `calls_per_batch_max`.
    pub calls_per_batch_max: u32,
    /// `provider_timeout_ms`.
    pub provider_timeout_ms: u64,
    /// `inactivity_timeout_ms`.
    pub inactivity_timeout_ms: u64,
    /// `provider_retries_max`.
    pub provider_retries_max: u32,
}

impl From<crate::driver::Limits> for StoredLimits {
    fn from(limits: crate::driver::Limits) -> StoredLimits {
        StoredLimits {
            turns_max: limits.turns_max,
            calls_per_batch_max: limits.calls_per_batch_max,
            provider_timeout_ms: limits.provider_timeout_ms,
            inactivity_timeout_ms: limits.inactivity_timeout_ms,
            provider_retries_max: limits.provider_retries_max,
        }
    }
}

/// One record of a session's journal (R30).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "camelCase")]
pub enum Record {
    /// A run began: its policy, its limits and its prompt, redacted (R15).
    #[serde(rename_all = "camelCase")]
    RunStarted {
        /// The run's number in its session, from 0.
        run: u32,
        /// Whether the run is read-only (R11).
        read_only: bool,
        /// The tools switched off (R13), in order.
        disabled: Vec<String>,
        /// The run's limits (R19).
        limits: StoredLimits,
        /// The prompt, redacted.
        prompt: String,
    },
    /// A message entered the transcript: a reply, or a call's result (guarded, R22).
    Message {
        /// The message.
        message: Message,
    },
    /// The body of a call whose effect lives outside the store is about to start (R32).
    #[serde(rename_all = "camelCase")]
    Intent {
        /// The call's id (guarded).
        call_id: String,
        /// The tool.
        tool: String,
    },
    /// The run ended.
    RunEnded {
        /// The run's number in its session.
        run: u32,
        /// How it ended: `completed`, or the code of the error that ended it.
        outcome: String,
    },
}

/// Why the store refused or stopped.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The database could not be opened, or its committed data is damaged (R35).
    #[error("the session store cannot be opened: {0}")]
    Open(String),
    /// A stored record or chart is damaged (R35).
    #[error("the session store is damaged: {0}")]
    Damaged(String),
    /// A write, sync or commit failed: the store stopped (R35).
    #[error("the session store failed to commit: {0}")]
    Failed(String),
    /// An earlier failure stopped the store; nothing is acknowledged after it (R35).
    #[error("the session store stopped after an earlier failure: {0}")]
    Stopped(String),
}

/// The journal and the charts of every session, in one redb database.
pub struct DurableStore {
    database: Database,
    /// The first failure, after which nothing is acknowledged.
    stopped: Option<String>,
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
    /// Opens the database in the file at `path`, creating it when absent.
    pub fn open(path: &Path) -> Result<DurableStore, StoreError> {
        let database = Database::builder()
            .set_check_integrity_on_open(true)
            .create(path)
            .map_err(|error| StoreError::Open(format!("{}: {error}", path.display())))?;
        Ok(DurableStore::with(database))
    }

    /// Opens the database on `backend`, creating it when the backend is empty; after a crash,
    /// the database is the last commit that returned.
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
            stopped: None,
        }
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
    /// record survives any crash. Returns the record's sequence number.
    pub fn append(&mut self, session: &str, record: &Record) -> Result<u64, StoreError> {
        self.commit(session, record, None)
    }

    /// Appends `record` and replaces the chart of `session` with `chart` in one transaction
    /// (R31): after a crash, both are there or neither is.
    pub fn commit_with_chart(
        &mut self,
        session: &str,
        record: &Record,
        chart: &ChartState,
    ) -> Result<u64, StoreError> {
        self.commit(session, record, Some(chart))
    }

    fn commit(
        &mut self,
        session: &str,
        record: &Record,
        chart: Option<&ChartState>,
    ) -> Result<u64, StoreError> {
        self.running()?;
        // A record that does not serialise never reached the backend: refused, not a crash.
        let unserialisable = |error: serde_json::Error| StoreError::Failed(error.to_string());
        let json = serde_json::to_vec(record).map_err(unserialisable)?;
        let chart_json = chart
            .map(serde_json::to_vec)
            .transpose()
            .map_err(unserialisable)?;
        let committed = write(&self.database, session, &json, chart_json.as_deref());
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
fn damaged(session: &str, what: impl std::fmt::Display) -> StoreError {
    StoreError::Damaged(format!("session {session:?}: {what}"))
}

/// One write transaction, committed in two phases: the record (JSON) at the end of the
/// journal of `session`, and the chart (JSON) when there is one. Returns the record's sequence
/// number.
fn write(
    database: &Database,
    session: &str,
    json: &[u8],
    chart_json: Option<&[u8]>,
) -> Result<u64, redb::Error> {
    let mut transaction = database.begin_write()?;
    // Two phases: a crash part way through a commit never leaves the database pointing at a
    // commit whose pages an attacker could shape through the records they control (model
    // replies, tool results); one sync more per commit.
    transaction.set_two_phase_commit(true);
    let sequence = {
        let mut journal = transaction.open_table(JOURNAL)?;
        let sequence = journal
            .range((session, 0)..=(session, u64::MAX))?
            .next_back()
            .transpose()?
            .map_or(0, |(key, _)| key.value().1 + 1);
        journal.insert((session, sequence), sealed(json).as_slice())?;
        sequence
    };
    if let Some(chart_json) = chart_json {
        let mut charts = transaction.open_table(CHARTS)?;
        charts.insert(session, sealed(chart_json).as_slice())?;
    }
    transaction.commit()?;
    Ok(sequence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> Record {
        Record::Message {
            message: Message::User {
                text: text.to_owned(),
            },
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
            assert_eq!(store.append("a", &message("one")).unwrap(), 0);
            assert_eq!(store.append("b", &message("other")).unwrap(), 0);
            assert_eq!(store.append("a", &message("two")).unwrap(), 1);
        }
        let store = DurableStore::open(&path).unwrap();
        assert_eq!(
            store.records("a").unwrap(),
            vec![message("one"), message("two")]
        );
        assert_eq!(store.records("b").unwrap(), vec![message("other")]);
        assert_eq!(store.chart("a").unwrap(), None);
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
    fn a_sealed_value_with_a_flipped_bit_is_refused() {
        let json = br#"{"record":"message"}"#;
        let mut bytes = sealed(json);
        assert_eq!(unsealed(&bytes), Some(&json[..]));
        bytes[7] ^= 0x04;
        assert_eq!(unsealed(&bytes), None);
        assert_eq!(unsealed(&bytes[..3]), None);
    }
}
