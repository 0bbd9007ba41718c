//! A simulated disk under the durable store (SPEC §16): a [`StorageBackend`] that keeps a
//! durable image and a volatile one, so that the simulator can cut power at any storage call
//! and reopen the store from what a real disk could have kept.
//!
//! Reads see the volatile image: every write so far. A sync makes the volatile image durable.
//! A **crash** of the process keeps every write (the operating system holds them and writes
//! them out); a **power loss** keeps the durable image and, of the writes since the last sync,
//! each one whole, torn at a sector boundary (its first sectors only, as a drive that lost
//! power part way through), or not at all, applied in an order the seed chooses (a drive
//! reorders what it was not told to keep in order). A planned **failure** makes one storage
//! call return an I/O error, a write or a sync; a planned **cut** makes one call and every
//! later one fail, as the last thing a dying process did. Every choice comes from the
//! [`SimRng`] the caller passes: the same seed, the same image, byte for byte.
//!
//! The disk counts its storage calls, so a scenario names a cut by its position; and it keeps
//! every byte written, synced or not, for I18 to scan.

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

/// A planned failure of one storage call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The `n`th call (from 0) fails if it is a write; later calls go on.
    Write(u64),
    /// The `n`th call fails if it is a sync; later calls go on.
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
    /// Every byte written since the disk was made, in the order written.
    written: Vec<u8>,
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
        Unsynced::SetLen(length) => image.resize(usize::try_from(*length).unwrap_or(0), 0),
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

    /// Every byte written to the disk since it was made, synced or not, in order.
    pub fn written(&self) -> Vec<u8> {
        self.lock().written.clone()
    }

    /// The disk after the process crashed: every write kept, nothing planned.
    pub fn after_crash(&self) -> SimulatedDisk {
        let state = self.lock();
        SimulatedDisk::with_image(state.volatile.clone(), state.written.clone())
    }

    /// The disk after a power loss: the durable image, and of the unsynced writes each kept
    /// whole, torn at a sector or dropped, in an order `rng` chooses.
    pub fn after_power_loss(&self, rng: &mut SimRng) -> SimulatedDisk {
        let state = self.lock();
        let mut image = state.durable.clone();
        let mut unsynced = state.unsynced.clone();
        // A Fisher–Yates shuffle: the drive's order.
        for index in (1..unsynced.len()).rev() {
            let other = rng.range_usize(0, index + 1);
            unsynced.swap(index, other);
        }
        for change in &unsynced {
            match change {
                Unsynced::Write { offset, data } => match rng.below(3) {
                    0 => apply(&mut image, change),
                    1 => {
                        let sectors = data.len().div_ceil(SECTOR_BYTES);
                        let kept = rng.range_usize(0, sectors) * SECTOR_BYTES;
                        let torn = Unsynced::Write {
                            offset: *offset,
                            data: data[..kept.min(data.len())].to_vec(),
                        };
                        apply(&mut image, &torn);
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
        SimulatedDisk::with_image(image, state.written.clone())
    }

    fn with_image(image: Vec<u8>, written: Vec<u8>) -> SimulatedDisk {
        SimulatedDisk {
            state: Arc::new(Mutex::new(State {
                durable: image.clone(),
                volatile: image,
                written,
                ..State::default()
            })),
        }
    }

    /// Counts one call and fails it as planned; `kind` is `"write"`, `"sync"` or another.
    fn call(state: &mut State, kind: &str) -> io::Result<()> {
        let call = state.calls;
        state.calls += 1;
        if state.dead {
            return Err(dead());
        }
        match state.failure {
            Some(Failure::Cut(at)) if at == call => {
                state.dead = true;
                Err(dead())
            }
            Some(Failure::Write(at)) if at == call && kind == "write" => Err(planned("write")),
            Some(Failure::Sync(at)) if at == call && kind == "sync" => Err(planned("sync")),
            _ => Ok(()),
        }
    }
}

impl StorageBackend for SimulatedDisk {
    fn len(&self) -> Result<u64, BackendError> {
        let mut state = self.lock();
        SimulatedDisk::call(&mut state, "len")?;
        Ok(state.volatile.len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), BackendError> {
        let mut state = self.lock();
        SimulatedDisk::call(&mut state, "read")?;
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
        SimulatedDisk::call(&mut state, "write")?;
        let change = Unsynced::SetLen(len);
        apply(&mut state.volatile, &change);
        state.unsynced.push(change);
        Ok(())
    }

    fn sync_data(&self) -> Result<(), BackendError> {
        let mut state = self.lock();
        SimulatedDisk::call(&mut state, "sync")?;
        state.durable = state.volatile.clone();
        state.unsynced.clear();
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), BackendError> {
        let mut state = self.lock();
        SimulatedDisk::call(&mut state, "write")?;
        let change = Unsynced::Write {
            offset,
            data: data.to_vec(),
        };
        apply(&mut state.volatile, &change);
        state.written.extend_from_slice(data);
        state.unsynced.push(change);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_power_loss_keeps_what_was_synced_and_a_crash_keeps_every_write() {
        let disk = SimulatedDisk::new();
        disk.write(0, &[1; 1024]).unwrap();
        disk.sync_data().unwrap();
        disk.write(0, &[2; 1024]).unwrap();
        let crashed = disk.after_crash();
        let mut read = [0; 1024];
        crashed.read(0, &mut read).unwrap();
        assert_eq!(read, [2; 1024]);
        // Over many seeds a power loss keeps the old bytes, the new ones, or the first sector
        // of the new ones, never anything else.
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let lost = disk.after_power_loss(&mut SimRng::new(seed));
            lost.read(0, &mut read).unwrap();
            let twos = read.iter().take_while(|&&byte| byte == 2).count();
            assert!(read[twos..].iter().all(|&byte| byte == 1));
            assert_eq!(twos % SECTOR_BYTES, 0);
            seen.insert(twos);
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![0, 512, 1024]);
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
        assert_eq!(disk.written(), b"kept");
    }
}
