//! The SPEC's limits the `edge-…` misbehaviours are generated around (SPEC §4, R6, R18,
//! R19), and the draw of a value at one of them. The numbers are the catalogue's
//! ([`crate::catalogue`]), the table every oracle judges by, as draw bounds.

use crate::catalogue;
use crate::rng::SimRng;

/// The field errors a refused input lists at most (R6).
pub(super) const FIELD_ERRORS_MAX: u64 = catalogue::FIELD_ERRORS_MAX as u64;
/// The bytes of raw argument text a call may carry (R3, `PAYLOAD_TOO_LARGE`).
pub(super) const ARGUMENT_BYTES_MAX: u64 = catalogue::ARGUMENT_BYTES_MAX as u64;
/// The characters of a call id the runtime accepts (SPEC §4, `INVALID_CALL_ID`).
pub(super) const CALL_ID_CHARS_MAX: u64 = catalogue::CALL_ID_CHARS_MAX as u64;
/// The provider's request timeout (R19), by default.
pub(super) const PROVIDER_TIMEOUT_MS: u64 = catalogue::DEFAULT_LIMITS.provider_timeout_ms;
/// The retries of a retryable provider error (R18), by default.
pub(super) const RETRIES_MAX: u64 = catalogue::DEFAULT_LIMITS.provider_retries_max as u64;
/// The cap on a provider's `retry-after` (R18).
pub(super) const RETRY_WAIT_MAX_MS: u64 = catalogue::RETRY_WAIT_MAX_MS;

/// One of limit − 1, the limit and limit + 1.
pub(super) fn around(rng: &mut SimRng, limit: u64) -> u64 {
    (limit + rng.range(0, 2)).saturating_sub(1)
}
