//! A simulated disk under the durable store (SPEC §16): a [`StorageBackend`] that keeps a
//! durable image and a volatile one, so that the simulator can cut power at any storage call
//! and reopen the store from what a real disk could have kept.
//!
//! Reads see the volatile image: every write so far. A sync makes the volatile image durable.
//! A **crash** of the process keeps every write in the volatile image (the operating system
//! holds them) and none of them durable: a power loss after the crash can still lose them. A
//! **power loss** keeps the durable image and, of the changes since the last sync, taken in
//! the order they were made, each write whole, torn (each of the disk's 512-byte sectors it
//! touches kept or not) or not at all, and each change of length or not: a drive persists
//! what it was not told to keep in no order of its own, so a later write may survive an
//! earlier one; a part that survives holds the bytes last written there. A planned
//! **failure** makes one storage call return an I/O error (the first write or change of
//! length, or the first sync, at or after a given call); a planned **cut** makes one call and
//! every later one fail, as the last thing a dying process did. Every choice comes
//! from the [`SimRng`] the caller passes: the same seed, the same image, byte for byte.
//!
//! The disk counts its storage calls, so that a scenario names a cut by its position, and
//! keeps every write's bytes, synced or not, so that a check can scan all that reached the
//! backend (I18). After a failed sync the operating system may have dropped the pages it
//! could not write (Linux does): a crash after one keeps none of the unsynced writes, the worst
//! case.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use ward_core::durable::{BackendError, StorageBackend};

use crate::rng::SimRng;

/// The sector a torn write keeps whole sectors of.
pub const SECTOR_BYTES: usize = 512;

/// What one storage call did, kept until the next sync.
#[derive(Clone, Debug)]
enum Unsynced {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

/// What a storage call does, as far as a planned failure cares: a change of length counts as
/// a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Read,
    Write,
    Sync,
}

/// A planned failure of one storage call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The first write or change of length at or after the `n`th call (from 0) fails; later
    /// calls go on.
    Write(u64),
    /// The first sync at or after the `n`th call fails; later calls go on.
    Sync(u64),
    /// The `n`th call and every later one fail: the process died there.
    Cut(u64),
}

#[derive(Debug, Default)]
struct State {
    durable: Vec<u8>,
    volatile: Vec<u8>,
    unsynced: Vec<Unsynced>,
    /// Storage calls so far (reads, writes, syncs, lengths).
    calls: u64,
    failure: Option<Failure>,
    /// The cut has happened: every call fails.
    dead: bool,
    /// A sync failed since the last one that succeeded.
    sync_failed: bool,
    /// The planned failure happened.
    failed: bool,
    /// Every write's bytes since the disk was made, in the order written.
    written: Vec<Vec<u8>>,
}

/// A simulated disk; clones share it, so the simulator keeps a handle while the store owns
/// another.
#[derive(Clone, Debug, Default)]
pub struct SimulatedDisk {
    state: Arc<Mutex<State>>,
}

fn dead() -> io::Error {
    io::Error::other("the simulated process died at this storage call")
}

fn planned(what: &str) -> io::Error {
    io::Error::other(format!("a planned {what} error of the simulated disk"))
}

/// The simulated disk lives in memory: an end past what an image may hold is an error, not
/// an allocation that aborts.
fn beyond_memory(end: u64) -> io::Result<()> {
    match usize::try_from(end) {
        Ok(end) if end <= IMAGE_BYTES_MAX => Ok(()),
        _ => Err(io::Error::other(format!(
            "an end at byte {end}, past the simulated disk's {IMAGE_BYTES_MAX} bytes"
        ))),
    }
}

/// The largest image the simulated disk holds: 4 GiB.
pub const IMAGE_BYTES_MAX: usize = 4 << 30;

/// Applies one change to an image; its end was checked by [`beyond_memory`].
fn apply(image: &mut Vec<u8>, change: &Unsynced) {
    match change {
        Unsynced::Write { offset, data } => {
            let start = usize::try_from(*offset).unwrap_or(usize::MAX);
            let end = start.saturating_add(data.len());
            if image.len() < end {
                image.resize(end, 0);
            }
            image[start..end].copy_from_slice(data);
        }
        Unsynced::SetLen(length) => image.resize(usize::try_from(*length).unwrap_or(usize::MAX), 0),
    }
}

impl SimulatedDisk {
    /// An empty disk.
    pub fn new() -> SimulatedDisk {
        SimulatedDisk::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Plans `failure` (replacing any earlier plan).
    pub fn plan(&self, failure: Option<Failure>) {
        self.lock().failure = failure;
    }

    /// Storage calls so far.
    pub fn calls(&self) -> u64 {
        self.lock().calls
    }

    /// Whether a cut has happened.
    pub fn is_dead(&self) -> bool {
        self.lock().dead
    }

    /// Whether the planned failure (a cut, a write or a sync error) has happened.
    pub fn has_failed(&self) -> bool {
        self.lock().failed
    }

    /// Every write's bytes since the disk was made, synced or not, in order.
    pub fn written(&self) -> Vec<Vec<u8>> {
        self.lock().written.clone()
    }

    /// The disk after the process crashed: every write readable, none made durable by the
    /// crash, nothing planned; after a failed sync, none of the unsynced writes.
    pub fn after_crash(&self) -> SimulatedDisk {
        let state = self.lock();
        let (volatile, unsynced) = if state.sync_failed {
            (state.durable.clone(), Vec::new())
        } else {
            (state.volatile.clone(), state.unsynced.clone())
        };
        SimulatedDisk::with(state.durable.clone(), volatile, unsynced, &state.written)
    }

    /// A disk holding `durable` and `volatile` with `unsynced` between them, nothing planned,
    /// and the writes of the disk it follows.
    fn with(
        durable: Vec<u8>,
        volatile: Vec<u8>,
        unsynced: Vec<Unsynced>,
        written: &[Vec<u8>],
    ) -> SimulatedDisk {
        SimulatedDisk {
            state: Arc::new(Mutex::new(State {
                durable,
                volatile,
                unsynced,
                written: written.to_vec(),
                ..State::default()
            })),
        }
    }

    /// The disk after a power loss: the durable image, and of the changes since the last
    /// sync, in their order, each write whole, torn at sectors or dropped, and each change of
    /// length or not, as `rng` chooses.
    pub fn after_power_loss(&self, rng: &mut SimRng) -> SimulatedDisk {
        let state = self.lock();
        let mut image = state.durable.clone();
        for change in &state.unsynced {
            match change {
                Unsynced::Write { offset, data } => match rng.below(3) {
                    0 => apply(&mut image, change),
                    1 => {
                        // The write's pieces at the disk's sector boundaries, each kept or not.
                        let mut start = 0;
                        while start < data.len() {
                            let at = offset + start as u64;
                            let to_boundary = SECTOR_BYTES - (at % SECTOR_BYTES as u64) as usize;
                            let end = (start + to_boundary).min(data.len());
                            if rng.percent(50) {
                                let piece = Unsynced::Write {
                                    offset: at,
                                    data: data[start..end].to_vec(),
                                };
                                apply(&mut image, &piece);
                            }
                            start = end;
                        }
                    }
                    _ => {}
                },
                Unsynced::SetLen(_) => {
                    if rng.percent(50) {
                        apply(&mut image, change);
                    }
                }
            }
        }
        SimulatedDisk::with(image.clone(), image, Vec::new(), &state.written)
    }

    /// Counts one call of `kind` and fails it as planned.
    fn call(state: &mut State, kind: Call) -> io::Result<()> {
        let call = state.calls;
        state.calls += 1;
        if state.dead {
            return Err(dead());
        }
        let failed = match state.failure {
            Some(Failure::Cut(at)) if at == call => {
                state.dead = true;
                dead()
            }
            Some(Failure::Write(at)) if at <= call && kind == Call::Write => planned("write"),
            Some(Failure::Sync(at)) if at <= call && kind == Call::Sync => planned("sync"),
            _ => return Ok(()),
        };
        if !state.dead {
            // A write or sync failure happens once; later calls go on.
            state.failure = None;
        }
        state.failed = true;
        Err(failed)
    }
}

impl StorageBackend for SimulatedDisk {
    fn len(&self) -> Result<u64, BackendError> {
        let mut state = self.lock();
        SimulatedDisk::call(&mut state, Call::Read)?;
        Ok(state.volatile.len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), BackendError> {
        let mut state = self.lock();
        SimulatedDisk::call(&mut state, Call::Read)?;
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let Some(bytes) = state.volatile.get(start..start.saturating_add(out.len())) else {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "a read past the end of the simulated disk",
            )
            .into());
        };
        out.copy_from_slice(bytes);
        Ok(())
    }

    fn set_len(&self, len: u64) -> Result<(), BackendError> {
        let mut state = self.lock();
        SimulatedDisk::call(&mut state, Call::Write)?;
        beyond_memory(len)?;
        let change = Unsynced::SetLen(len);
        apply(&mut state.volatile, &change);
        state.unsynced.push(change);
        Ok(())
    }

    fn sync_data(&self) -> Result<(), BackendError> {
        let mut state = self.lock();
        if let Err(error) = SimulatedDisk::call(&mut state, Call::Sync) {
            // A sync the disk failed, not one a dead process never made.
            state.sync_failed |= !state.dead;
            return Err(error.into());
        }
        state.durable = state.volatile.clone();
        state.unsynced.clear();
        state.sync_failed = false;
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), BackendError> {
        let mut state = self.lock();
        SimulatedDisk::call(&mut state, Call::Write)?;
        beyond_memory(offset.saturating_add(data.len() as u64))?;
        let change = Unsynced::Write {
            offset,
            data: data.to_vec(),
        };
        apply(&mut state.volatile, &change);
        state.written.push(data.to_vec());
        state.unsynced.push(change);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(disk: &SimulatedDisk) -> Vec<u8> {
        let mut bytes = vec![0; usize::try_from(disk.len().unwrap()).unwrap()];
        disk.read(0, &mut bytes).unwrap();
        bytes
    }

    #[test]
    fn a_power_loss_keeps_what_was_synced_and_a_crash_keeps_every_write_undurably() {
        let disk = SimulatedDisk::new();
        disk.write(0, &[1; 1024]).unwrap();
        disk.sync_data().unwrap();
        disk.write(256, &[2; 1024]).unwrap();
        disk.write(0, &[3; 100]).unwrap();
        let crashed = disk.after_crash();
        let mut expected = vec![3; 100];
        expected.extend([1; 156]);
        expected.extend([2; 1024]);
        assert_eq!(image(&crashed), expected);
        // Over many seeds a power loss keeps, of each sector a write touched, the old bytes
        // or the new ones, never a part of a sector's piece of one write.
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let lost = crashed.after_power_loss(&mut SimRng::new(seed));
            let bytes = image(&lost);
            assert!(
                bytes.len() == 1024 || bytes.len() == 1280,
                "{}",
                bytes.len()
            );
            for (sector, chunk) in bytes.chunks(SECTOR_BYTES).enumerate() {
                let pieces: Vec<u8> = chunk
                    .iter()
                    .copied()
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect();
                seen.insert((sector, pieces.clone()));
                match sector {
                    0 => assert!(
                        [vec![1], vec![1, 2], vec![1, 3], vec![1, 2, 3], vec![2, 3]]
                            .contains(&pieces),
                        "sector 0 holds {pieces:?}"
                    ),
                    _ => assert!(
                        [vec![1], vec![2], vec![0], vec![1, 2], vec![0, 2]].contains(&pieces),
                        "sector {sector} holds {pieces:?}"
                    ),
                }
            }
        }
        // The first 100 bytes are the newest write's or the synced ones, both seen.
        assert!(seen.contains(&(0, vec![1, 2, 3])) || seen.contains(&(0, vec![1, 3])));
        assert!(seen.contains(&(0, vec![1])));
    }

    #[test]
    fn an_end_past_the_image_limit_is_an_error() {
        let disk = SimulatedDisk::new();
        assert!(disk.set_len(u64::MAX).is_err());
        assert!(disk.write(u64::MAX - 2, b"xyz").is_err());
        assert_eq!(disk.len().unwrap(), 0);
    }

    #[test]
    fn a_cut_fails_its_call_and_every_later_one() {
        let disk = SimulatedDisk::new();
        disk.plan(Some(Failure::Cut(1)));
        disk.write(0, b"kept").unwrap();
        assert!(disk.write(4, b"lost").is_err());
        assert!(disk.sync_data().is_err());
        assert!(disk.is_dead());
        assert_eq!(disk.calls(), 3);
        assert_eq!(disk.after_crash().len().unwrap(), 4);
        assert_eq!(disk.written(), vec![b"kept".to_vec()]);
    }

    #[test]
    fn a_crash_after_a_failed_sync_keeps_no_unsynced_write() {
        let disk = SimulatedDisk::new();
        disk.write(0, b"synced").unwrap();
        disk.sync_data().unwrap();
        disk.plan(Some(Failure::Sync(disk.calls() + 1)));
        disk.write(0, b"SYNCED").unwrap();
        assert!(disk.sync_data().is_err());
        assert_eq!(image(&disk.after_crash()), b"synced");
    }
}
