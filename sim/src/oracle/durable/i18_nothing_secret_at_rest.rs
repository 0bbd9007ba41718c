//! I18. Nothing secret at rest: no planted secret part and no 8 characters of a configured
//! secret in any byte written to the storage backend, synced or not.
//!
//! Every write to every simulated disk of both executions (the one without crashes too), or,
//! for a runtime crashed at lockstep boundaries (drop or kill mode), every file of its store
//! directory as it stands after each crash and at the end (what a real file shows: bytes a
//! runtime wrote and overwrote between two snapshots are not seen), is scanned, as bytes, for
//! every run of 8 consecutive characters of each planted credential and of each configured
//! value (the plan's secrets are ASCII, so a JSON string holds them as they are), with the
//! guard's own reading of a text (`crate::oracle::guarded`): a run of 8 bytes or more shares
//! a 4-byte gram with a secret at one of every 5 positions. A write none of whose bytes holds
//! one is scanned again with its base64 runs decoded ([`super::encoded`]): a secret one
//! decoding away is at rest all the same.

use super::{DurableBreach, DurableCheck, encoded};
use crate::oracle::Breach;
use crate::oracle::guarded::Expected;

/// Checks I18.
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    let plan = check.plan;
    let secrets: Vec<(&str, &String)> = (plan.planted.iter())
        .map(|part| ("planted credential", part))
        .chain((plan.secrets.iter()).map(|value| ("configured value", value)))
        .collect();
    let values: Vec<&str> = secrets.iter().map(|(_, secret)| secret.as_str()).collect();
    let scanner = Expected::new(&values);
    let variants: Vec<String> = values
        .iter()
        .flat_map(|value| encoded::variants(value))
        .collect();
    let encodings = Expected::new(&variants.iter().map(String::as_str).collect::<Vec<_>>());
    for (execution, name) in [
        (check.reference, "without crashes"),
        (check.crashed, "with crashes"),
    ] {
        for (write, bytes) in execution.written.iter().enumerate() {
            let Some((held, how)) = held(&scanner, &encodings, bytes) else {
                continue;
            };
            let (label, secret) = (secrets.iter())
                .find(|(_, secret)| {
                    (0..held.len().saturating_sub(7))
                        .filter_map(|at| held.get(at..at + 8))
                        .any(|window| secret.contains(window))
                })
                .map_or(("secret", ""), |(label, secret)| (*label, secret.as_str()));
            breaches.push(DurableBreach {
                breach: Breach::SecretAtRest,
                message: format!(
                    "write {write} to the disk ({name}) holds 8 characters of the {label} {secret:?}{how}"
                ),
            });
            return;
        }
    }
}

/// The first stretch of `bytes` sharing 8 characters with a secret, as they are or with a
/// base64 run decoded (only when `bytes` share 8 characters with a secret's encodings,
/// `encodings`), and how it was held.
fn held(scanner: &Expected, encodings: &Expected, bytes: &[u8]) -> Option<(String, &'static str)> {
    let first = |bytes: &[u8]| {
        (scanner.stretches(bytes).first())
            .map(|&(start, end)| String::from_utf8_lossy(&bytes[start..end]).into_owned())
    };
    if let Some(held) = first(bytes) {
        return Some((held, ""));
    }
    if encodings.stretches(bytes).is_empty() {
        return None;
    }
    (encoded::decoded(bytes).iter())
        .find_map(|decoded| first(decoded))
        .map(|held| (held, ", base64-encoded"))
}
