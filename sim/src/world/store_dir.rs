//! The directory a durable runtime keeps its store in (SPEC §17 P8): one per execution,
//! empty at its first `reset`, kept across that execution's crashes, removed at its end.
//!
//! It lies under the system's temporary folder, named by the process and a counter, so that
//! executions on several threads never share one; its path is given to the runtime in
//! `reset.storeDir` and never enters a trace or a digest.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Directories made so far by this process.
static MADE: AtomicU64 = AtomicU64::new(0);

/// A store directory, removed with everything in it when dropped.
pub struct StoreDir {
    path: PathBuf,
}

impl StoreDir {
    /// A new, empty directory.
    pub fn new() -> Result<StoreDir, String> {
        let path = std::env::temp_dir().join(format!(
            "ward-store-{}-{}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|error| format!("{}: {error}", path.display()))?;
        Ok(StoreDir { path })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where it is, as `reset.storeDir` names it.
    pub fn name(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }

    /// Every file's bytes in it and its folders, in path order (what I18 scans).
    pub fn bytes(&self) -> Vec<u8> {
        bytes_under(&self.path)
    }
}

/// Every file's bytes under `dir` and its folders, in path order.
pub fn bytes_under(dir: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    append_under(dir, &mut bytes);
    bytes
}

fn append_under(dir: &Path, bytes: &mut Vec<u8>) {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|entry| Some(entry.ok()?.path()))
                .collect()
        })
        .unwrap_or_default();
    paths.sort();
    for path in paths {
        let folder = std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_dir());
        if folder {
            append_under(&path, bytes);
        } else if let Ok(read) = std::fs::read(&path) {
            bytes.extend_from_slice(&read);
        }
    }
}

impl Drop for StoreDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
