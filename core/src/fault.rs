//! Fault injection (SPEC §11): the seeded bugs of the catalogue, compiled in only with the
//! `fault-injection` cargo feature.
//!
//! One name for one mechanism: a seeded bug of the catalogue is a [`Fault`], named on the
//! command line by its catalogue name (`ward run --bug NAME`, listed by `ward bugs`, SPEC
//! §12), and compiled in by the `fault-injection` feature (of `ward-core`, and of `ward-sim`,
//! which turns on the core's).
//!
//! This module is a leaf: it names the bugs ([`Fault`]), holds a run's set of them
//! ([`FaultSet`]) and provides the [`fault!`](crate::fault!) check, and it imports nothing of
//! the crate. Each bug lives where the rule it breaks lives, as one line at that rule:
//!
//! - where the broken behaviour is a condition, the line is a [`fault!`](crate::fault!)
//!   check (`if !fault!(faults, Fault::PartialWriteOnError) { rollback }`);
//! - where it needs more, the line calls a small private helper of that same module, under
//!   its heading "Seeded bugs (SPEC §11)", which takes the correct value and returns the
//!   broken one when its fault is on, and the correct value untouched otherwise. Each helper
//!   names its catalogue entry and says what goes wrong.
//!
//! The run's set reaches that code through the run's own configuration, never through the
//! signature of a pure rule: [`RunOptions::faults`](crate::driver::RunOptions::faults) for
//! the driver's steps, [`CallScope::faults`](crate::registry::CallScope::faults) for the
//! entry point and the scheduler. The policy functions, the scheduler's R17 verdict, the
//! validator and the redactor take no fault at all: a bug of theirs is applied by their
//! caller to the value they return.
//!
//! | module | bugs |
//! |---|---|
//! | `driver` | `readonly-offers-writes`, `redact-patterns-before-values`, `redact-first-turn-only`, `redact-windows-case-sensitive`, `no-turn-limit`, `nondeterministic-order`, `drop-result-on-cancel`, `duplicate-id-overwrite` |
//! | `registry` | `readonly-no-exec-check`, `readonly-blocks-reads`, `disabled-still-runs`, `error-limit-six`, `error-echoes-value`, `validate-after-domain`, `partial-write-on-error` |
//! | `schedule` | `sequential-first-call-only`, `sequential-ignored`, `always-sequential`, `results-completion-order`, `write-after-cancel`, `intent-after-start` |
//! | `driver` (the journal) | `write-replayed-on-resume`, `result-apart-from-write`, `readonly-lost-on-resume`, `turns-reset-on-resume`, `raw-prompt-journaled` |
//! | `durable` | `ack-before-sync` |
//!
//! Every check goes through the [`fault!`](crate::fault!) macro. Without the feature the
//! macro expands to the constant `false`, so every helper returns the value it was given and
//! the optimiser removes it; with the feature, a check is one bit test. No fault is ever on
//! unless a caller asks for it by name.
//!
//! ```
//! use ward_core::fault::{Fault, FaultSet};
//!
//! let faults = FaultSet::only(Fault::NoTurnLimit);
//! assert!(!ward_core::fault!(FaultSet::EMPTY, Fault::NoTurnLimit), "no fault is on unless asked for");
//! assert_eq!(ward_core::fault!(faults, Fault::NoTurnLimit), cfg!(feature = "fault-injection"));
//! ```

use std::fmt;
use std::str::FromStr;

macro_rules! faults {
    ($($variant:ident = $name:literal, $invariant:literal, $description:literal;)*) => {
        /// One seeded bug of the catalogue (SPEC §11).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        pub enum Fault {
            $(
                #[doc = $description]
                $variant,
            )*
        }

        impl Fault {
            /// Every fault, in catalogue order.
            pub const ALL: &'static [Fault] = &[$(Fault::$variant),*];

            /// The catalogue name, e.g. `readonly-no-exec-check`.
            pub fn name(self) -> &'static str {
                match self { $(Fault::$variant => $name,)* }
            }

            /// The invariant the catalogue says catches it, e.g. `I2`.
            pub fn invariant(self) -> &'static str {
                match self { $(Fault::$variant => $invariant,)* }
            }

            /// What goes wrong, in one line.
            pub fn description(self) -> &'static str {
                match self { $(Fault::$variant => $description,)* }
            }
        }
    };
}

faults! {
    ReadonlyNoExecCheck = "readonly-no-exec-check", "I2",
        "execution does not re-check read-only (only the list is filtered)";
    ReadonlyOffersWrites = "readonly-offers-writes", "I1",
        "a read-only run's tool list includes destructive tools";
    ReadonlyBlocksReads = "readonly-blocks-reads", "I13",
        "a read-only run refuses sequential read-only tools (`ask_user`)";
    DisabledStillRuns = "disabled-still-runs", "I3",
        "switched-off tools are hidden but still run";
    ErrorLimitSix = "error-limit-six", "I4",
        "six field errors are reported";
    ErrorEchoesValue = "error-echoes-value", "I4",
        "error messages quote the input value";
    ValidateAfterDomain = "validate-after-domain", "I5",
        "a tool body runs before validation";
    ResultsCompletionOrder = "results-completion-order", "I6",
        "results are returned in completion order";
    DuplicateIdOverwrite = "duplicate-id-overwrite", "I6",
        "a repeated call id overwrites the first result";
    DropResultOnCancel = "drop-result-on-cancel", "I6",
        "cancelled calls get no result";
    SequentialFirstCallOnly = "sequential-first-call-only", "I7",
        "a batch is sequential only if its first call is";
    SequentialIgnored = "sequential-ignored", "I7",
        "every batch runs in parallel";
    AlwaysSequential = "always-sequential", "I12",
        "every batch runs one call at a time";
    RedactPatternsBeforeValues = "redact-patterns-before-values", "I8",
        "patterns run before exact values, leaving fragments";
    RedactFirstTurnOnly = "redact-first-turn-only", "I8",
        "the raw prompt is kept in the transcript and resent on later turns";
    RedactWindowsCaseSensitive = "redact-windows-case-sensitive", "I8",
        "`c:\\users\\…` is not redacted";
    PartialWriteOnError = "partial-write-on-error", "I9",
        "a failing write leaves part of its change behind";
    NoTurnLimit = "no-turn-limit", "I10",
        "the turn limit is not enforced";
    WriteAfterCancel = "write-after-cancel", "I10",
        "a sequential batch keeps starting calls after cancel";
    NondeterministicOrder = "nondeterministic-order", "I11",
        "something iterates a randomly seeded hash map";
    WriteReplayedOnResume = "write-replayed-on-resume", "I15",
        "a chart write whose result was committed runs again after a resume";
    ResultApartFromWrite = "result-apart-from-write", "I15",
        "a chart write and its result commit in two transactions";
    IntentAfterStart = "intent-after-start", "I15",
        "the intent of an outside-effect call is committed after its body starts";
    AckBeforeSync = "ack-before-sync", "I16",
        "a commit is acknowledged before the store syncs it";
    ReadonlyLostOnResume = "readonly-lost-on-resume", "I19",
        "a resumed read-only run forgets that it is read-only";
    TurnsResetOnResume = "turns-reset-on-resume", "I19",
        "a resumed run counts its turns from zero";
    RawPromptJournaled = "raw-prompt-journaled", "I18",
        "the prompt is journaled before it is redacted";
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not in the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown bug '{0}'; `ward bugs` lists the catalogue")]
pub struct UnknownFault(pub String);

impl FromStr for Fault {
    type Err = UnknownFault;

    fn from_str(name: &str) -> Result<Fault, UnknownFault> {
        Fault::ALL
            .iter()
            .copied()
            .find(|fault| fault.name() == name)
            .ok_or_else(|| UnknownFault(name.to_owned()))
    }
}

/// The faults switched on for a run: a bit set over [`Fault`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FaultSet(u32);

const _: () = assert!(Fault::ALL.len() <= 32, "FaultSet holds at most 32 faults");

impl FaultSet {
    /// No fault: the correct runtime.
    pub const EMPTY: FaultSet = FaultSet(0);

    /// A set holding one fault.
    pub fn only(fault: Fault) -> FaultSet {
        FaultSet::EMPTY.with(fault)
    }

    /// This set plus `fault`.
    #[must_use]
    pub fn with(self, fault: Fault) -> FaultSet {
        FaultSet(self.0 | 1 << fault as u8)
    }

    /// Whether `fault` is on. Call it through [`fault!`](crate::fault!), which compiles to
    /// `false` without the `fault-injection` feature.
    pub fn contains(self, fault: Fault) -> bool {
        self.0 & (1 << fault as u8) != 0
    }

    /// Whether no fault is on.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The faults on, in catalogue order.
    pub fn iter(self) -> impl Iterator<Item = Fault> {
        Fault::ALL
            .iter()
            .copied()
            .filter(move |fault| self.contains(*fault))
    }
}

impl FromIterator<Fault> for FaultSet {
    fn from_iter<I: IntoIterator<Item = Fault>>(faults: I) -> FaultSet {
        faults.into_iter().fold(FaultSet::EMPTY, FaultSet::with)
    }
}

/// Whether a seeded bug is on: `fault!(faults, Fault::Name)`.
///
/// Constant `false` unless `ward-core` is built with the `fault-injection` feature.
#[macro_export]
macro_rules! fault {
    ($faults:expr, $fault:expr) => {{
        #[cfg(feature = "fault-injection")]
        let on = $crate::fault::FaultSet::contains($faults, $fault);
        #[cfg(not(feature = "fault-injection"))]
        let on = {
            let _ = (&$faults, &$fault);
            false
        };
        on
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_has_twenty_seven_unique_names_that_parse_back() {
        assert_eq!(Fault::ALL.len(), 27);
        let mut names: Vec<&str> = Fault::ALL.iter().map(|f| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 27);
        for fault in Fault::ALL {
            assert_eq!(fault.name().parse::<Fault>(), Ok(*fault));
            assert!(fault.invariant().starts_with('I'));
        }
        assert!("no-such-bug".parse::<Fault>().is_err());
    }

    #[test]
    fn sets_hold_exactly_what_was_added() {
        let set = FaultSet::only(Fault::NoTurnLimit).with(Fault::SequentialIgnored);
        assert!(set.contains(Fault::NoTurnLimit));
        assert!(set.contains(Fault::SequentialIgnored));
        assert!(!set.contains(Fault::AlwaysSequential));
        assert_eq!(set.iter().count(), 2);
        assert!(FaultSet::EMPTY.is_empty());
    }
}
