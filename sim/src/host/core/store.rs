//! Where ward's core behind the protocol keeps its sessions: in memory (`ward serve`, and
//! ward's core in process for every plain campaign), or in a durable store (SPEC §16, §17:
//! `ward serve --store DIR`, and the crash explorer's core on its simulated disk).
//!
//! A durable core announces its store in `ready.durable` and claims R30–R35. Every message it
//! commits is reported as an `append` once the commit returned: an append is an acknowledged
//! commit, so what crosses the boundary is what a later crash must not lose (I16). After a
//! crash the world sends `reset` and `recover`: the core reopens the store and takes up the
//! run a crash cut, if any (R33, R34).

use std::sync::{Arc, Mutex};

use ward_core::chart::ChartState;
use ward_core::durable::DurableStore;
use ward_core::session::{Record, SessionStore, StoreError};

use super::{Shared, lock};
use crate::protocol::{Durable, FromAdapter};

/// Opens the durable store: in the directory `reset` gave (`None` when it gave none).
pub type Opener = Box<dyn FnMut(Option<&str>) -> Result<DurableStore, String>>;

/// How the core keeps its sessions.
pub(super) enum Keeping {
    /// In memory: every reset forgets them.
    Memory,
    /// In a durable store, opened at each `reset`.
    Durable {
        /// Opens the store.
        opener: Opener,
        /// What `ready` says of the store.
        described: Durable,
        /// The store, once a reset opened it.
        store: Option<Arc<Mutex<DurableStore>>>,
    },
}

/// The session store of one session: its records in memory, or the durable store every
/// session of the core shares. Every message committed is reported as an append.
pub(super) struct HostStore {
    kept: Kept,
    shared: Arc<Mutex<Shared>>,
}

enum Kept {
    Memory(Vec<Record>),
    Durable(Arc<Mutex<DurableStore>>),
}

impl HostStore {
    /// A new session's store, in memory.
    pub(super) fn memory(shared: &Arc<Mutex<Shared>>) -> HostStore {
        HostStore {
            kept: Kept::Memory(Vec::new()),
            shared: Arc::clone(shared),
        }
    }

    /// A session's store in the durable store `store`.
    pub(super) fn durable(
        store: &Arc<Mutex<DurableStore>>,
        shared: &Arc<Mutex<Shared>>,
    ) -> HostStore {
        HostStore {
            kept: Kept::Durable(Arc::clone(store)),
            shared: Arc::clone(shared),
        }
    }
}

pub(super) fn locked(store: &Mutex<DurableStore>) -> std::sync::MutexGuard<'_, DurableStore> {
    store
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SessionStore for HostStore {
    fn journal(&self, session_id: &str) -> Result<Vec<Record>, StoreError> {
        match &self.kept {
            Kept::Memory(records) => Ok(records.clone()),
            Kept::Durable(store) => locked(store).journal(session_id),
        }
    }

    fn commit(
        &mut self,
        session_id: &str,
        records: &[Record],
        chart: Option<&Arc<ChartState>>,
    ) -> Result<(), StoreError> {
        match &mut self.kept {
            Kept::Memory(kept) => kept.extend_from_slice(records),
            Kept::Durable(store) => locked(store).commit(session_id, records, chart)?,
        }
        let mut shared = lock(&self.shared);
        for record in records {
            if let Record::Message { message } = record {
                shared.outbox.push(FromAdapter::Append {
                    message: (**message).clone(),
                });
            }
        }
        Ok(())
    }

    fn chart(&self, session_id: &str) -> Result<Option<ChartState>, StoreError> {
        match &self.kept {
            Kept::Memory(_) => Ok(None),
            Kept::Durable(store) => SessionStore::chart(&*locked(store), session_id),
        }
    }
}
