//! `ward replay SEED|FILE [--bug NAME] [--trace F.jsonl] [--chrome-trace F.json]`: reruns one
//! seed or scenario file, reports every violation, and writes traces on request.
//!
//! The run is executed twice and the trace digests compared, so a replay also checks I11.
//! Exit 0 when every invariant held, 1 on a violation, 2 on misuse or a bad file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use ward_core::events::EventKind;
use ward_core::fault::Fault;

use crate::scenario::Scenario;
use crate::simulate::{Engine, faults_of};
use crate::trace;
use crate::world::Record;

/// Arguments of `ward replay`.
#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    /// A seed number, or a scenario file.
    pub target: String,
    /// Switch on a seeded bug (in addition to any the file names).
    #[arg(long, value_parser = super::run::parse_scenario_bug)]
    pub bug: Option<Fault>,
    /// Write every boundary record as JSON lines.
    #[arg(long, value_name = "F.jsonl")]
    pub trace: Option<PathBuf>,
    /// Write a Trace Event Format file (open it in Perfetto).
    #[arg(long, value_name = "F.json")]
    pub chrome_trace: Option<PathBuf>,
    /// Replay against the runtime behind this adapter command (as `ward run --runtime`).
    #[arg(long)]
    pub runtime: Option<String>,
}

/// Replays.
pub fn run(args: &ReplayArgs) -> ExitCode {
    let engine = match &args.runtime {
        Some(command) => Engine::with_runtime(command),
        None => Engine::new(),
    };
    let scenario = match load(&engine, args) {
        Ok(scenario) => scenario,
        Err(message) => return super::usage_error(message),
    };
    let faults = faults_of(&scenario, args.bug);
    let mut checked = engine.check(&scenario, faults);
    engine.rerun(&scenario, faults, &mut checked);
    let violations = &checked.verdict.violations;
    if let Some(path) = &args.trace {
        let written = File::create(path).and_then(|file| {
            let mut output = BufWriter::new(file);
            trace::write_jsonl(&checked.trace, &mut output)?;
            output.flush()
        });
        if let Err(error) = written {
            return super::usage_error(format!("cannot write {}: {error}", path.display()));
        }
    }
    if let Some(path) = &args.chrome_trace {
        let document = trace::chrome_trace(&checked.trace, violations);
        if let Err(error) = std::fs::write(path, document.to_string()) {
            return super::usage_error(format!("cannot write {}: {error}", path.display()));
        }
    }
    for run in &checked.trace.runs {
        let terminal = run.records.iter().rev().find_map(|record| match record {
            Record::Event(event) if event.kind.is_terminal() => Some(terminal_name(&event.kind)),
            _ => None,
        });
        match (&run.start_error, terminal) {
            (Some(error), _) => say!(
                "session {} run {}: did not start: {error}",
                run.session,
                run.run
            ),
            (None, Some(terminal)) => {
                say!("session {} run {}: {terminal}", run.session, run.run)
            }
            (None, None) => say!("session {} run {}: no terminal event", run.session, run.run),
        }
    }
    say!("trace digest: {:016x}", checked.digest);
    // As in a campaign: an invariant resting on a rule the runtime does not claim is reported
    // `not claimed`, never violated; a breach of the protocol counts whatever it claims (P6).
    let (claimed, not_claimed): (Vec<_>, Vec<_>) = violations.iter().partition(|violation| {
        checked.trace.protocol_violation.is_some() || engine.claims(violation.invariant)
    });
    for violation in &not_claimed {
        say!("not claimed: {violation}");
    }
    if claimed.is_empty() {
        say!(
            "{}",
            if not_claimed.is_empty() {
                "all invariants held"
            } else {
                "all claimed invariants held"
            }
        );
        return ExitCode::SUCCESS;
    }
    for violation in claimed {
        say!("violated: {violation}");
    }
    ExitCode::from(1)
}

fn terminal_name(kind: &EventKind) -> String {
    match kind {
        EventKind::RunCompleted { .. } => "run.completed".to_owned(),
        EventKind::RunFailed { error } => format!("run.failed {}", error.code),
        EventKind::RunCancelled => "run.cancelled".to_owned(),
        _ => "?".to_owned(),
    }
}

fn load(engine: &Engine, args: &ReplayArgs) -> Result<Scenario, String> {
    if let Ok(seed) = args.target.parse::<u64>() {
        return Ok(engine.generate(seed, args.bug).scenario);
    }
    let text = std::fs::read_to_string(&args.target)
        .map_err(|error| format!("cannot read {}: {error}", args.target))?;
    Scenario::from_json(&text, &args.target).map_err(|error| error.to_string())
}
