//! The limits of a run (R19, checked at the start by R14): each limit's default and range is
//! one named [`LimitRange`] that [`Limits::default`], [`Limits::check`] and the docs share;
//! beside them, the bounds no configuration changes ([`TURNS_HARD_MAX`], the backoff), and
//! the limits' journaled form ([`StoredLimits`], R34).

use crate::session::StoredLimits;

/// No run takes more turns than this, whatever its configuration or faults.
pub const TURNS_HARD_MAX: u32 = 100;
/// The longest backoff between two provider attempts.
pub const BACKOFF_MS_MAX: u64 = 60_000;
/// The first backoff; each retry doubles it.
pub const BACKOFF_MS_FIRST: u64 = 1_000;

/// One limit of R19 as [`Limits::check`] and the docs read it: its field name, default and
/// accepted range (inclusive), in the limit's own unit (batches, calls, milliseconds,
/// retries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitRange {
    /// The field of [`Limits`] it bounds.
    pub name: &'static str,
    /// The value of [`Limits::default`].
    pub default: u64,
    /// The smallest value accepted.
    pub min: u64,
    /// The largest value accepted.
    pub max: u64,
}

impl LimitRange {
    /// Whether `value` is accepted.
    pub const fn contains(&self, value: u64) -> bool {
        self.min <= value && value <= self.max
    }
}

/// The limits of a run (R19), each with its [`LimitRange`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Batches run at most; default and range: [`Limits::TURNS_MAX`].
    pub turns_max: u32,
    /// Calls per batch at most; default and range: [`Limits::CALLS_PER_BATCH_MAX`].
    pub calls_per_batch_max: u32,
    /// A provider request times out after this; default and range:
    /// [`Limits::PROVIDER_TIMEOUT_MS`].
    pub provider_timeout_ms: u64,
    /// The run fails after this long without activity; default and range:
    /// [`Limits::INACTIVITY_TIMEOUT_MS`].
    pub inactivity_timeout_ms: u64,
    /// Retries of a retryable provider error per turn; default and range:
    /// [`Limits::PROVIDER_RETRIES_MAX`].
    pub provider_retries_max: u32,
}

impl Limits {
    /// `turns_max`: batches per run.
    pub const TURNS_MAX: LimitRange = LimitRange {
        name: "turns_max",
        default: 8,
        min: 1,
        max: 20,
    };
    /// `calls_per_batch_max`: calls run per batch.
    pub const CALLS_PER_BATCH_MAX: LimitRange = LimitRange {
        name: "calls_per_batch_max",
        default: 32,
        min: 1,
        max: 128,
    };
    /// `provider_timeout_ms`: one provider request, in milliseconds.
    pub const PROVIDER_TIMEOUT_MS: LimitRange = LimitRange {
        name: "provider_timeout_ms",
        default: 60_000,
        min: 1_000,
        max: 600_000,
    };
    /// `inactivity_timeout_ms`: time without activity, in milliseconds.
    pub const INACTIVITY_TIMEOUT_MS: LimitRange = LimitRange {
        name: "inactivity_timeout_ms",
        default: 120_000,
        min: 1_000,
        max: 3_600_000,
    };
    /// `provider_retries_max`: retries of a retryable provider error per turn.
    pub const PROVIDER_RETRIES_MAX: LimitRange = LimitRange {
        name: "provider_retries_max",
        default: 2,
        min: 0,
        max: 5,
    };
}

impl Default for Limits {
    fn default() -> Self {
        // Every default fits its field: the ranges' maxima do (checked below).
        Limits {
            turns_max: Limits::TURNS_MAX.default as u32,
            calls_per_batch_max: Limits::CALLS_PER_BATCH_MAX.default as u32,
            provider_timeout_ms: Limits::PROVIDER_TIMEOUT_MS.default,
            inactivity_timeout_ms: Limits::INACTIVITY_TIMEOUT_MS.default,
            provider_retries_max: Limits::PROVIDER_RETRIES_MAX.default as u32,
        }
    }
}

/// A limit outside its range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} is {value}; it must be between {min} and {max}")]
pub struct LimitError {
    /// The limit.
    pub name: &'static str,
    /// The value given.
    pub value: u64,
    /// The smallest value accepted.
    pub min: u64,
    /// The largest value accepted.
    pub max: u64,
}

impl Limits {
    /// Every limit with its range, in the order of the fields.
    pub fn ranges(&self) -> [(LimitRange, u64); 5] {
        [
            (Limits::TURNS_MAX, u64::from(self.turns_max)),
            (
                Limits::CALLS_PER_BATCH_MAX,
                u64::from(self.calls_per_batch_max),
            ),
            (Limits::PROVIDER_TIMEOUT_MS, self.provider_timeout_ms),
            (Limits::INACTIVITY_TIMEOUT_MS, self.inactivity_timeout_ms),
            (
                Limits::PROVIDER_RETRIES_MAX,
                u64::from(self.provider_retries_max),
            ),
        ]
    }

    /// Refuses a limit outside its range: the first, in the order of the fields.
    ///
    /// ```
    /// use ward_core::driver::Limits;
    /// let limits = Limits { turns_max: 21, ..Limits::default() };
    /// let error = limits.check().unwrap_err();
    /// assert_eq!(error.to_string(), "turns_max is 21; it must be between 1 and 20");
    /// assert_eq!(Limits::default().check(), Ok(()));
    /// ```
    pub fn check(&self) -> Result<(), LimitError> {
        for (range, value) in self.ranges() {
            if !range.contains(value) {
                return Err(LimitError {
                    name: range.name,
                    value,
                    min: range.min,
                    max: range.max,
                });
            }
        }
        Ok(())
    }
}

impl From<Limits> for StoredLimits {
    fn from(limits: Limits) -> StoredLimits {
        StoredLimits {
            turns_max: limits.turns_max,
            calls_per_batch_max: limits.calls_per_batch_max,
            provider_timeout_ms: limits.provider_timeout_ms,
            inactivity_timeout_ms: limits.inactivity_timeout_ms,
            provider_retries_max: limits.provider_retries_max,
        }
    }
}

impl From<StoredLimits> for Limits {
    fn from(limits: StoredLimits) -> Limits {
        Limits {
            turns_max: limits.turns_max,
            calls_per_batch_max: limits.calls_per_batch_max,
            provider_timeout_ms: limits.provider_timeout_ms,
            inactivity_timeout_ms: limits.inactivity_timeout_ms,
            provider_retries_max: limits.provider_retries_max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_is_inside_its_range_and_every_range_fits_its_field() {
        for (range, _) in Limits::default().ranges() {
            assert!(range.contains(range.default), "{}", range.name);
            assert!(range.max <= u64::from(u32::MAX), "{}", range.name);
        }
    }
}
