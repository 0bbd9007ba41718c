//! Fault injection (SPEC §11): the seeded bugs of the catalogue, compiled in only with the
//! `fault-injection` cargo feature.
//!
//! A run's configuration carries a [`FaultSet`]. Each seeded bug is one line in the code it
//! breaks, at the rule it breaks, so a reader of that rule can skip it:
//!
//! - where the broken behaviour is a condition, the line is a [`fault!`](crate::fault!)
//!   check (`if !fault!(faults, Fault::PartialWriteOnError) { rollback }`);
//! - where it needs more, the line calls a helper of this module that takes the correct
//!   value and returns the broken one when its fault is on, and the correct value untouched
//!   otherwise. Each helper names its catalogue entry and says what goes wrong.
//!
//! A helper has one shape: the check, the broken value, and the correct value it was given.
//!
//! ```text
//! /// `no-turn-limit` (I10): the run's `turns_max` is not enforced; only
//! /// [`TURNS_HARD_MAX`] stops it.
//! pub fn turn_limit(faults: FaultSet, turns_max: u32) -> u32 {
//!     if crate::fault!(faults, Fault::NoTurnLimit) {
//!         return TURNS_HARD_MAX;
//!     }
//!     turns_max
//! }
//! ```
//!
//! ```
//! use ward_core::driver::TURNS_HARD_MAX;
//! use ward_core::fault::{self, Fault, FaultSet};
//!
//! // The correct code, with the hook of `no-turn-limit` on the line that sets the limit:
//! let turns_max = fault::turn_limit(FaultSet::EMPTY, 8);
//! assert_eq!(turns_max, 8, "no fault is on unless asked for");
//!
//! // What the simulator sees under `--bug no-turn-limit` (only with the feature on):
//! let broken = fault::turn_limit(FaultSet::only(Fault::NoTurnLimit), 8);
//! let expected = if cfg!(feature = "fault-injection") { TURNS_HARD_MAX } else { 8 };
//! assert_eq!(broken, expected);
//! ```
//!
//! Every check, in a hook or in a helper, goes through the [`fault!`](crate::fault!) macro.
//! Without the feature the macro expands to the constant `false`, so every helper returns
//! the value it was given and the optimiser removes it; with the feature, a hook is one bit
//! test. No fault is ever on unless a caller asks for it by name.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde_json::Value;

use crate::driver::TURNS_HARD_MAX;
use crate::envelope::{FieldError, codes};
use crate::redact::Redactor;
use crate::schedule::CallResult;
use crate::session::Message;
use crate::tool::{ToolCall, ToolMeta};

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

// ---------------------------------------------------------------------------------------------
// The helpers: each takes the correct value and returns the broken one when its fault is on.

/// `readonly-blocks-reads` (I13): a read-only run also refuses every sequential tool, so
/// `ask_user`, which only reads, is refused as if it wrote. Takes whether the correct check
/// refuses `tool`.
pub fn read_only_refusal(faults: FaultSet, refused: bool, tool: &ToolMeta) -> bool {
    if crate::fault!(faults, Fault::ReadonlyBlocksReads) {
        return refused || tool.is_sequential();
    }
    refused
}

/// `error-limit-six` (I4): one field error more than the limit is reported.
pub fn error_limit(faults: FaultSet, errors_max: usize) -> usize {
    if crate::fault!(faults, Fault::ErrorLimitSix) {
        return errors_max + 1;
    }
    errors_max
}

/// `error-echoes-value` (I4): each field error's message starts with the input value at its
/// path (`"sk-…" must be a number`), quoting whatever the model sent.
pub fn echo_values(faults: FaultSet, input: &Value, errors: Vec<FieldError>) -> Vec<FieldError> {
    if !crate::fault!(faults, Fault::ErrorEchoesValue) {
        return errors;
    }
    errors
        .into_iter()
        .map(|mut error| {
            let pointer = if error.path == "/" { "" } else { &error.path };
            let value = input.pointer(pointer).unwrap_or(input);
            error.message = format!("{value} {}", error.message);
            error
        })
        .collect()
}

/// `validate-after-domain` (I5): the validation verdict does not gate the body. Takes the
/// verdict and returns `Ok` when the fault is on, so the body runs on input its schema
/// refuses and its own result, whatever it is, goes back to the model.
pub fn validation_verdict<E>(faults: FaultSet, verdict: Result<(), E>) -> Result<(), E> {
    if crate::fault!(faults, Fault::ValidateAfterDomain) {
        return Ok(());
    }
    verdict
}

/// `always-sequential` (I12), `sequential-ignored` (I7), `sequential-first-call-only` (I7):
/// R17's verdict on a batch, broken three ways: every batch runs one call at a time; every
/// batch runs in parallel; a batch runs one call at a time only when its first call names a
/// sequential tool. Takes the correct verdict, the calls and the test of one call.
pub fn sequential(
    faults: FaultSet,
    sequential: bool,
    calls: &[ToolCall],
    names_sequential: impl Fn(&ToolCall) -> bool,
) -> bool {
    if crate::fault!(faults, Fault::AlwaysSequential) {
        return true;
    }
    if crate::fault!(faults, Fault::SequentialIgnored) {
        return false;
    }
    if crate::fault!(faults, Fault::SequentialFirstCallOnly) {
        return calls.first().is_some_and(names_sequential);
    }
    sequential
}

/// `drop-result-on-cancel`, `duplicate-id-overwrite` (I6): the results of a batch as they
/// enter the transcript, with some lost. Under the first, every `ABORTED` result is dropped,
/// so a cancelled call has none; under the second, results are keyed by call id, so a
/// repeated id's result replaces the first one in place and the repeat has none.
pub fn results_entered(faults: FaultSet, results: Vec<CallResult>) -> Vec<CallResult> {
    let mut results = results;
    if crate::fault!(faults, Fault::DropResultOnCancel) {
        results.retain(|result| result.result.error_code() != Some(codes::ABORTED));
    }
    if crate::fault!(faults, Fault::DuplicateIdOverwrite) {
        let mut keyed: Vec<CallResult> = Vec::with_capacity(results.len());
        for result in results {
            match keyed.iter_mut().find(|kept| kept.call_id == result.call_id) {
                Some(kept) => *kept = result,
                None => keyed.push(result),
            }
        }
        results = keyed;
    }
    results
}

/// `redact-patterns-before-values` (I8): the prompt is redacted in two passes, the pattern
/// rules first and the configured values on what they left, so a value that a pattern span
/// cut through survives in fragments; the guard does not look again. Takes the correctly
/// redacted prompt, the raw one and the run's redactor.
pub fn prompt_redaction(
    faults: FaultSet,
    redacted: String,
    prompt: &str,
    redactor: &Redactor,
) -> String {
    if !crate::fault!(faults, Fault::RedactPatternsBeforeValues) {
        return redacted;
    }
    // The run's redactor compiled the same pattern rules, so this cannot fail here.
    let Ok(patterns) = Redactor::new(Vec::<String>::new()) else {
        return redacted;
    };
    let patterns_first = patterns.redact(prompt);
    redactor
        .values_only_of()
        .redact(&patterns_first)
        .into_owned()
}

/// `redact-first-turn-only` (I8): the transcript a request shows. The first turn shows the
/// redacted prompt; every later turn resends the raw prompt in place of the run's redacted
/// user message (the last one of the transcript). The store and the events keep the
/// redacted text.
pub fn request_transcript<'t>(
    faults: FaultSet,
    transcript: &'t [Arc<Message>],
    prompt: &str,
    turn: u32,
) -> Cow<'t, [Arc<Message>]> {
    if turn == 0 || !crate::fault!(faults, Fault::RedactFirstTurnOnly) {
        return Cow::Borrowed(transcript);
    }
    let mut shown = transcript.to_vec();
    let user = shown
        .iter_mut()
        .rev()
        .find(|message| matches!(***message, Message::User { .. }));
    if let Some(user) = user {
        *user = Arc::new(Message::User {
            text: prompt.to_owned(),
        });
    }
    Cow::Owned(shown)
}

/// `no-turn-limit` (I10): the run's `turns_max` is not enforced; only
/// [`TURNS_HARD_MAX`] stops it.
pub fn turn_limit(faults: FaultSet, turns_max: u32) -> u32 {
    if crate::fault!(faults, Fault::NoTurnLimit) {
        return TURNS_HARD_MAX;
    }
    turns_max
}

/// `nondeterministic-order` (I11): the tool names of `run.started` go through a randomly
/// seeded `HashSet`, so their order changes from one run to the next.
pub fn hash_order(faults: FaultSet, names: Vec<Arc<str>>) -> Vec<Arc<str>> {
    if !crate::fault!(faults, Fault::NondeterministicOrder) {
        return names;
    }
    let shuffled: HashSet<Arc<str>> = names.into_iter().collect();
    shuffled.into_iter().collect()
}

/// `redact-windows-case-sensitive` (I8): the `Users` segment of a home path counts only when
/// spelled `Users`, so `c:\users\…` is not redacted. Takes whether the segment at `start`
/// of `text` matched in any case.
pub fn users_segment(faults: FaultSet, matched: bool, text: &[u8], start: usize) -> bool {
    if crate::fault!(faults, Fault::RedactWindowsCaseSensitive) {
        return matched
            && text
                .get(start..)
                .is_some_and(|rest| rest.starts_with(b"Users"));
    }
    matched
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
    fn the_catalogue_has_twenty_unique_names_that_parse_back() {
        assert_eq!(Fault::ALL.len(), 20);
        let mut names: Vec<&str> = Fault::ALL.iter().map(|f| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 20);
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
