//! Check functions shared by the fuzz targets (`fuzz/`, SPEC §13) and the stable corpus
//! replay (`core/tests/corpus_replay.rs`).
//!
//! Each check takes the raw bytes of one fuzz input, runs it through the runtime, and
//! returns `Err` with a message a person can act on when a property of the specification
//! does not hold. A fuzz target is a thin shell that turns an `Err` into a crash; the
//! replay test runs every committed corpus file through the same function on stable Rust.
//! Nothing a check's input controls may panic the runtime: a panic is a finding too.
//!
//! | check | input | properties |
//! |---|---|---|
//! | [`check_redact`] | configured values, a NUL byte, then the text | R24, R29 (a), (c), (d), (e), linear work (f) |
//! | [`check_validate`] | a tool selector byte, then argument text | R6–R8: the verdict is `jsonschema`'s, 1–5 errors equal to the first of [`all_errors`](crate::validation::ToolSchema::all_errors), valid paths, no value echoed |
//! | [`check_tool_args`] | a tool selector byte, a flags byte, then argument text | R3 and SPEC §4 through the entry point: one well-formed envelope, the refusal R3's order calls for, no panic, a failure leaves the chart as it was, `stateChanged` truthful |
//!
//! Input formats are chosen so that the committed corpus files stay readable and the
//! dictionaries in `corpus/dict/` apply to the text part. Each check documents its format.

/// Returns `Err(message)` from the enclosing check when `condition` is false.
macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err(format!($($message)+));
        }
    };
}

mod messages;
mod redact;
mod tool_args;
mod validate;

pub use redact::check_redact;
pub use tool_args::check_tool_args;
pub use validate::check_validate;

/// What a check returns: `Err` names the property that failed and how.
pub type CheckResult = Result<(), String>;
