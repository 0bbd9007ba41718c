//! Trace digests and trace files (SPEC §10).
//!
//! - [`digest`]: a fixed hash (XXH3-64, the same on every platform and every run; never
//!   `DefaultHasher`) over every boundary record of every run, in order. Two executions of a
//!   scenario are identical exactly when their digests are (I11). The digest reads contents
//!   only: a runtime that shares one record between places and one that sends equal copies
//!   give the same digest.
//! - [`write_jsonl`]: `--trace F.jsonl`, one boundary record per line.
//! - [`chrome_trace`]: `--chrome-trace F.json`, the Trace Event Format that Perfetto and
//!   `chrome://tracing` open: one process per run, provider turns as slices on the
//!   provider's track, every tool call a complete event on its own track, violations as
//!   instants.

mod chrome;
mod digester;

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::world::Trace;

pub use chrome::chrome_trace;
pub use digester::digest;

/// Writes every record of `trace` as one JSON line, each tagged with its session and run.
pub fn write_jsonl(trace: &Trace, output: &mut dyn Write) -> io::Result<()> {
    for run in &trace.runs {
        if let Some(error) = &run.start_error {
            let line = json!({"session": run.session, "run": run.run, "record": "startError", "error": error});
            writeln!(output, "{line}")?;
        }
        for record in &run.records {
            let mut line = serde_json::to_value(record).unwrap_or(Value::Null);
            if let Value::Object(members) = &mut line {
                members.insert("session".to_owned(), json!(run.session));
                members.insert("run".to_owned(), json!(run.run));
            }
            writeln!(output, "{line}")?;
        }
    }
    Ok(())
}
