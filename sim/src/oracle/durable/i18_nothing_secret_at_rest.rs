//! I18. Nothing secret at rest: no planted secret part and no 8 characters of a configured
//! secret in any byte written to the storage backend, synced or not.
//!
//! Every write to every simulated disk of both executions (the one without crashes too) is
//! scanned, as bytes, for every run of 8 consecutive characters of each planted credential
//! and of each configured value (the plan's secrets are ASCII, so a JSON string holds them
//! as they are).

use memchr::memmem;

use super::{DurableBreach, DurableCheck};
use crate::oracle::Breach;

/// The shortest run of a secret's characters that counts (SPEC §9, I8 and I18).
const WINDOW_CHARS: usize = 8;

/// Checks I18.
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    let secrets = (check
        .plan
        .planted
        .iter()
        .map(|part| ("planted credential", part)))
    .chain(
        check
            .plan
            .secrets
            .iter()
            .map(|value| ("configured value", value)),
    );
    let mut windows = Vec::new();
    for (label, secret) in secrets {
        for start in 0..=secret.len().saturating_sub(WINDOW_CHARS) {
            if let Some(window) = secret.get(start..start + WINDOW_CHARS) {
                windows.push((label, secret, memmem::Finder::new(window.as_bytes())));
            }
        }
    }
    for (execution, name) in [
        (check.reference, "without crashes"),
        (check.crashed, "with crashes"),
    ] {
        for (write, bytes) in execution.written.iter().enumerate() {
            if let Some((label, secret, _)) = windows
                .iter()
                .find(|(_, _, finder)| finder.find(bytes).is_some())
            {
                breaches.push(DurableBreach {
                    breach: Breach::SecretAtRest,
                    message: format!(
                        "write {write} to the disk ({name}) holds 8 characters of the {label} {secret:?}"
                    ),
                });
                return;
            }
        }
    }
}
