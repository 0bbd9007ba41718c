//! `ward replay SEED|FILE [--crashes] [--bug NAME] [--trace F.jsonl] [--chrome-trace F.json]`:
//! reruns one seed or scenario file, reports every violation, and writes traces on request.
//!
//! The run is executed twice and the trace digests compared, so a replay also checks I11.
//! With `--crashes`, a seed names the crash explorer's plan of that seed (SPEC §16); a crash
//! plan file (`ward run --crashes` writes one, shrunk, for its first failure) is recognised by
//! its `crashPlan`. A plan is explored twice too, its crash digests compared, and checked for
//! I15–I19; `--trace` writes every step of the execution with crashes as JSON lines: each
//! process opening the store, runs started and resumed, requests, body starts, acknowledged
//! commits, and each crash.
//! Exit 0 when every invariant held, 1 on a violation, 2 on misuse or a bad file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use ward_core::events::EventKind;
use ward_core::fault::{Fault, FaultSet};

use crate::crash::Plan;
use crate::crash::file::PlanFile;

use crate::scenario::Scenario;
use crate::simulate::{Engine, faults_of};
use crate::trace;
use crate::world::Record;

/// Arguments of `ward replay`.
#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    /// A seed number, or a scenario or crash plan file.
    pub target: String,
    /// With a seed: replay the crash explorer's plan of that seed (I15–I19).
    #[arg(long)]
    pub crashes: bool,
    /// Switch on a seeded bug (in addition to any the file names).
    #[arg(long, value_parser = super::run::parse_bug)]
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
    let plan = match plan_of(args) {
        Ok(plan) => plan,
        Err(message) => return super::usage_error(message),
    };
    if let Some((plan, bug)) = plan {
        return replay_plan(args, &plan, bug);
    }
    if let Some(bug) = args.bug.filter(|bug| super::run::durable_bug(*bug)) {
        return super::usage_error(format!(
            "'{bug}' is caught by {} under crash faults, which a scenario does not hold; `ward replay --crashes SEED --bug {bug}` replays the crash explorer's plan of a seed",
            bug.invariant()
        ));
    }
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
    if let Err(message) = write_traces(args, &checked) {
        return super::usage_error(message);
    }
    for run in &checked.trace.runs {
        say_end(run);
    }
    say!("trace digest: {:016x}", checked.digest);
    // As in a campaign: an invariant resting on a rule the runtime does not claim is reported
    // `not claimed`, never violated; a breach of the protocol counts whatever it claims (P6).
    let (claimed, not_claimed) = (&checked.verdict.violations, &checked.verdict.not_claimed);
    for violation in not_claimed {
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

/// Writes the scenario's records with `--trace` and its Perfetto file with `--chrome-trace`.
fn write_traces(args: &ReplayArgs, checked: &crate::simulate::Checked) -> Result<(), String> {
    let cannot = |path: &std::path::Path, error: std::io::Error| {
        format!("cannot write {}: {error}", path.display())
    };
    if let Some(path) = &args.trace {
        let written = File::create(path).and_then(|file| {
            let mut output = BufWriter::new(file);
            trace::write_jsonl(&checked.trace, &mut output)?;
            output.flush()
        });
        written.map_err(|error| cannot(path, error))?;
    }
    if let Some(path) = &args.chrome_trace {
        let document = trace::chrome_trace(&checked.trace, &checked.verdict.violations);
        std::fs::write(path, document.to_string()).map_err(|error| cannot(path, error))?;
    }
    Ok(())
}

/// How a run ended: its terminal event, or why it did not start.
fn say_end(run: &crate::world::RunTrace) {
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
        (None, Some(terminal)) => say!("session {} run {}: {terminal}", run.session, run.run),
        (None, None) => say!("session {} run {}: no terminal event", run.session, run.run),
    }
}

fn terminal_name(kind: &EventKind) -> String {
    match kind {
        EventKind::RunCompleted { .. } => "run.completed".to_owned(),
        EventKind::RunFailed { error } => format!("run.failed {}", error.code),
        EventKind::RunCancelled => "run.cancelled".to_owned(),
        _ => "?".to_owned(),
    }
}

/// The crash plan `args` names, with the bug its file names: the explorer's plan of the seed
/// with `--crashes`, or a crash plan file. `None` for a scenario.
fn plan_of(args: &ReplayArgs) -> Result<Option<(Plan, Option<Fault>)>, String> {
    if let Ok(seed) = args.target.parse::<u64>() {
        return Ok(args.crashes.then(|| {
            let faults = args.bug.into_iter().collect();
            (
                crate::explore::plan_of_seed(seed, faults, args.runtime.as_deref()),
                None,
            )
        }));
    }
    let text = std::fs::read_to_string(&args.target)
        .map_err(|error| format!("cannot read {}: {error}", args.target))?;
    let value = serde_json::from_str::<serde_json::Value>(&text).ok();
    let Some(value) = value.filter(PlanFile::is_plan) else {
        if args.crashes {
            return Err(format!(
                "{}: --crashes replays a seed's crash plan or a crash plan file (one that names `crashPlan`)",
                args.target
            ));
        }
        return Ok(None);
    };
    let file = PlanFile::from_value(value, &args.target).map_err(|error| error.to_string())?;
    let bug = file.fault()?;
    Ok(Some((file.crash_plan, bug)))
}

/// Explores `plan` twice under the file's bug and `--bug`, reports every breach of I15–I19,
/// and writes the execution's steps with `--trace`.
fn replay_plan(args: &ReplayArgs, plan: &Plan, bug: Option<Fault>) -> ExitCode {
    if args.runtime.is_some() && !plan.crashes.is_empty() && !plan.drops() {
        return super::usage_error(
            "this crash plan's crashes are storage faults of ward's own core's simulated disk; a runtime behind an adapter is crashed by drops (a plan of `ward run --crashes --runtime CMD`)",
        );
    }
    if args.chrome_trace.is_some() {
        return super::usage_error(
            "--chrome-trace draws a scenario's runs; a crash plan's steps are written with --trace",
        );
    }
    let faults: FaultSet = bug.into_iter().chain(args.bug).collect();
    let runtime = args.runtime.as_deref();
    let exploration = crate::explore::explore_on(plan, faults, runtime);
    let again = crate::explore::explore_on(plan, faults, runtime);
    if let Some(path) = &args.trace {
        let written = File::create(path).and_then(|file| {
            let mut output = BufWriter::new(file);
            trace::write_jsonl(&exploration.crashed.trace, &mut output)?;
            output.flush()
        });
        if let Err(error) = written {
            return super::usage_error(format!("cannot write {}: {error}", path.display()));
        }
    }
    say_processes(plan, &exploration.crashed);
    say!("crash digest: {:016x}", exploration.digest());
    let mut breaches: Vec<String> = exploration
        .verdict
        .breaches
        .iter()
        .map(ToString::to_string)
        .collect();
    if again.digest() != exploration.digest() {
        breaches.push(format!(
            "I11: the same plan gave crash digests {:016x} and {:016x}",
            exploration.digest(),
            again.digest()
        ));
    }
    // As in a campaign: a breach of an invariant resting on a rule the runtime does not
    // claim is reported `not claimed`, never violated (P2).
    let not_claimed = &exploration.verdict.not_claimed;
    for breach in not_claimed {
        say!("not claimed: {breach}");
    }
    if breaches.is_empty() {
        say!(
            "{}",
            if not_claimed.is_empty() {
                "all durable invariants held"
            } else {
                "all claimed durable invariants held"
            }
        );
        return ExitCode::SUCCESS;
    }
    for breach in breaches {
        say!("violated: {breach}");
    }
    ExitCode::from(1)
}

/// The plan's processes: how each ended, and what the crashed execution asked and
/// acknowledged.
fn say_processes(plan: &Plan, crashed: &crate::crash::Execution) {
    say!(
        "plan: {} run(s), {} crash(es) planned; {} process(es)",
        plan.runs.len(),
        plan.crashes.len(),
        crashed.processes.len()
    );
    for (number, process) in crashed.processes.iter().enumerate() {
        let end = match (process.crashed, process.crash) {
            (true, Some(crash)) if crash.kind == crate::crash::CrashKind::Drop => {
                format!("dropped after answer {} or the first past it", crash.at)
            }
            (true, Some(crash)) => {
                format!("died at storage call {} ({})", crash.at, crash.kind.name())
            }
            _ => "went on to the end".to_owned(),
        };
        say!("process {number}: {end}");
    }
    if let Some(failure) = &crashed.failure {
        say!("stopped short: {failure}");
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
