//! `ward run [--seeds A..B|N] [--jobs N] [--bug NAME] [--shard K/N] [--json] [--out DIR]`, and
//! `ward` alone, the default campaign over seeds `0..100000`.
//!
//! Exit 0 when every invariant held, 1 on a violation (after shrinking the first failing
//! seed, writing its scenario file and printing the one command that replays it), 2 on
//! misuse. The table of counts goes to standard error; `--json` prints the campaign's
//! [`Summary`] last, on standard output, naming its campaign (version, seed range, shard,
//! bug) so that `ward merge` can combine the shards of a range.

use std::io::IsTerminal;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use ward_core::fault::Fault;

use crate::campaign::{self, CampaignConfig};
use crate::oracle::Invariant;
use crate::shrink;
use crate::summary::{SeedRange, Summary, single_quoted};

/// The default campaign's seeds.
pub const DEFAULT_SEEDS: Range<u64> = 0..100_000;

/// Arguments of `ward run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Seeds: `A..B` (half-open) or `N` (meaning `0..N`).
    #[arg(long, value_parser = parse_seeds, default_value = "0..100000")]
    pub seeds: Range<u64>,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Switch on a seeded bug of the catalogue (`ward bugs` lists them).
    #[arg(long, value_parser = parse_bug)]
    pub bug: Option<Fault>,
    /// Run only shard K of N (seeds with seed % N == K - 1); shard digests XOR to the whole.
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<(u64, u64)>,
    /// Print the report as one JSON object, last.
    #[arg(long)]
    pub json: bool,
    /// Where shrunk failing scenarios are written.
    #[arg(long, default_value = "target/ward/failures")]
    pub out: PathBuf,
    /// Rerun one seed in this many to check determinism (0: never).
    #[arg(long, default_value_t = 20)]
    pub rerun_every: u64,
    /// Check the runtime behind this adapter command (run with `sh -c`; PROTOCOL.md) instead
    /// of ward's own core in process; e.g. `--runtime 'ward serve'`. A seeded bug given with
    /// `--bug` only steers generation: the adapter must switch it on itself.
    #[arg(long)]
    pub runtime: Option<String>,
    /// Also crash and resume durable sessions of ward's core: each seed drives the crash
    /// explorer's plan of that seed, checked for I15–I19 (SPEC §16).
    #[arg(long)]
    pub crashes: bool,
    /// Report a seed still running after this many seconds of wall-clock time, and exit 1:
    /// its runtime never ends the run (0: never).
    #[arg(long, value_name = "SECS", default_value_t = crate::stall::DEFAULT_LIMIT.as_secs())]
    pub stall_after: u64,
}

impl Default for RunArgs {
    fn default() -> Self {
        RunArgs {
            seeds: DEFAULT_SEEDS,
            jobs: None,
            bug: None,
            shard: None,
            json: false,
            out: PathBuf::from("target/ward/failures"),
            rerun_every: 20,
            runtime: None,
            crashes: false,
            stall_after: crate::stall::DEFAULT_LIMIT.as_secs(),
        }
    }
}

/// Parses `A..B` or `N`.
pub fn parse_seeds(text: &str) -> Result<Range<u64>, String> {
    let number = |part: &str| {
        part.trim()
            .parse::<u64>()
            .map_err(|_| format!("'{part}' is not a seed number"))
    };
    let range = match text.split_once("..") {
        Some((from, to)) => number(from)?..number(to)?,
        None => 0..number(text)?,
    };
    if range.is_empty() {
        return Err(format!(
            "the seed range {text} is empty; write A..B with A < B, or N for 0..N"
        ));
    }
    Ok(range)
}

/// Parses a catalogue name.
pub fn parse_bug(text: &str) -> Result<Fault, String> {
    text.parse::<Fault>().map_err(|error| error.to_string())
}

/// Whether `bug` breaks durable sessions (caught by I15–I19, which only crashes arm).
pub fn durable_bug(bug: Fault) -> bool {
    Invariant::from_id(bug.invariant()).is_none()
}

/// Parses a catalogue name for a scenario (`ward replay`, `ward serve`): a bug of durable
/// sessions is refused, since a scenario holds no crash (`ward run --crashes` explores those).
pub fn parse_scenario_bug(text: &str) -> Result<Fault, String> {
    let fault = parse_bug(text)?;
    if durable_bug(fault) {
        return Err(format!(
            "'{fault}' is caught by {} under crash faults, which a scenario does not hold; `ward run --crashes --bug {fault}` explores it, `ward replay --crashes SEED --bug {fault}` replays one plan",
            fault.invariant()
        ));
    }
    Ok(fault)
}

/// Parses `K/N` with 1 ≤ K ≤ N.
pub fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let invalid = || format!("'{text}' is not a shard; write K/N with 1 <= K <= N");
    let (shard, shards) = text.split_once('/').ok_or_else(invalid)?;
    let shard: u64 = shard.trim().parse().map_err(|_| invalid())?;
    let shards: u64 = shards.trim().parse().map_err(|_| invalid())?;
    if shard == 0 || shards == 0 || shard > shards {
        return Err(invalid());
    }
    Ok((shard, shards))
}

/// Runs the campaign.
pub fn run(args: &RunArgs) -> ExitCode {
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |count| count.get()));
    if jobs == 0 {
        return super::usage_error("--jobs must be at least 1");
    }
    if let Some(bug) = args.bug.filter(|bug| durable_bug(*bug) && !args.crashes) {
        return super::usage_error(format!(
            "'{bug}' is caught by {} under crash faults: add --crashes",
            bug.invariant()
        ));
    }
    if args.crashes && args.runtime.is_some() {
        return super::usage_error(
            "--crashes explores ward's own core: the protocol does not carry crashes yet",
        );
    }
    let config = CampaignConfig {
        seeds: args.seeds.clone(),
        jobs,
        bug: args.bug,
        shard: args.shard,
        rerun_every: args.rerun_every,
        runtime: args.runtime.clone(),
        crashes: args.crashes,
        stall_after: (args.stall_after > 0).then(|| Duration::from_secs(args.stall_after)),
    };
    let total = config.shard().seeds_in(SeedRange::from(&config.seeds));
    let progress = Progress::new(total);
    let mut report = campaign::run(&config, &|done| progress.update(done));
    progress.finish();

    let mut replay = None;
    if let Some(failure) = &report.first_failure {
        let engine = config.engine();
        let shrunk = shrink::shrink(
            &engine,
            &failure.scenario,
            failure.violation.breach,
            shrink::EXECUTIONS_MAX,
        );
        match write_failure(
            &args.out,
            failure.seed,
            failure.violation.invariant,
            &shrunk.scenario,
        ) {
            Ok(path) => {
                tell!(
                    "first failure: seed {}: {}\nshrunk from {} to {} ({} executions): {}",
                    failure.seed,
                    failure.violation,
                    shrunk.before,
                    shrunk.after,
                    shrunk.executions,
                    path.display()
                );
                let command = match &args.runtime {
                    Some(runtime) => format!(
                        "ward replay --runtime {} {}",
                        single_quoted(runtime),
                        quoted(&path)
                    ),
                    None => format!("ward replay {}", quoted(&path)),
                };
                tell!("replay: {command}");
                replay = Some(command);
            }
            Err(error) => tell!("ward: cannot write the shrunk scenario: {error}"),
        }
    }
    let durable_failure =
        (report.crashes.as_mut()).and_then(|crashes| crashes.first_failure.as_mut());
    if let Some(failure) = durable_failure {
        match write_plan_failure(&args.out, failure.seed, &config) {
            Ok(Some(written)) => {
                tell!(
                    "first durable failure: seed {}: {}: {}\nshrunk from {} to {} ({} explorations): {}",
                    failure.seed,
                    failure.invariant,
                    failure.explanation,
                    written.before,
                    written.after,
                    written.explorations,
                    written.path.display()
                );
                failure.replay = Some(format!("ward replay {}", quoted(&written.path)));
            }
            Ok(None) => {}
            Err(error) => tell!("ward: cannot write the shrunk crash plan: {error}"),
        }
    }
    let summary = report.to_summary(&config, replay);
    report_summary(&summary, &format!("{jobs} jobs"), args.json)
}

/// A shrunk crash plan, written.
struct WrittenPlan {
    path: PathBuf,
    /// The plan's size before shrinking and after (runs, calls, crashes).
    before: String,
    after: String,
    explorations: usize,
}

/// Shrinks the crash plan of `seed` while it fails the same check as its first breach (of the
/// invariant that catches `bug`, when one does) and writes it as a crash plan file. `None`
/// when the plan does not fail again.
fn write_plan_failure(
    directory: &Path,
    seed: u64,
    config: &CampaignConfig,
) -> std::io::Result<Option<WrittenPlan>> {
    use crate::crash::{self, file::PlanFile, shrink};
    let bug = config.bug;
    let faults: ward_core::fault::FaultSet = bug.into_iter().collect();
    let exploration = crash::explore_seed(seed, faults);
    let wanted = bug.map(ward_core::fault::Fault::invariant);
    let Some(target) = exploration.verdict.reported(wanted) else {
        return Ok(None);
    };
    let report = |stall: &crate::stall::Stall| {
        let replay = crate::campaign::crash_replay(seed, bug);
        tell!("ward: shrinking: {stall}; replay: {replay}");
    };
    let shrunk = crate::stall::watched(config.stall_after, 1, report, |watchdog| {
        let plan = &exploration.plan;
        shrink::shrink(plan, faults, target, shrink::EXPLORATIONS_MAX, watchdog)
    });
    let size = |plan: &crash::Plan| {
        format!(
            "{} run(s), {} call(s), {} crash(es)",
            plan.runs.len(),
            plan.calls(),
            plan.crashes.len()
        )
    };
    let description = format!(
        "The crash explorer's plan of seed {seed}, shrunk while it fails {} ({}): {}",
        target.invariant, target.check, target.message
    );
    let file = PlanFile::new(shrunk.plan.clone(), bug, description);
    std::fs::create_dir_all(directory)?;
    let bug_name = bug.map(|bug| format!("-{bug}")).unwrap_or_default();
    let path = directory.join(format!(
        "seed-{seed}-{}{bug_name}.crash.json",
        target.invariant
    ));
    std::fs::write(&path, file.to_json() + "\n")?;
    Ok(Some(WrittenPlan {
        path,
        before: size(&exploration.plan),
        after: size(&shrunk.plan),
        explorations: shrunk.explorations,
    }))
}

/// `path` as one shell word: quoted when it holds anything but plain characters.
fn quoted(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c);
    match text.chars().all(plain) {
        true => text,
        false => single_quoted(&text),
    }
}

/// Prints a campaign's table (`how` says how it ran), then its summary as one JSON line with
/// `json`; the exit status: 1 when a seed failed, else 0 (SPEC §12, for `run` and `merge`).
pub fn report_summary(summary: &Summary, how: &str, json: bool) -> ExitCode {
    print_summary(summary, how);
    if json {
        say!("{}", summary.to_json_line());
    }
    let crash_violations = summary
        .crashes
        .as_ref()
        .map_or(0, |crashes| crashes.violations);
    if summary.violations > 0 || crash_violations > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Writes a shrunk scenario; returns its path.
pub fn write_failure(
    directory: &Path,
    seed: u64,
    invariant: Invariant,
    scenario: &crate::scenario::Scenario,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(directory)?;
    let bug = scenario
        .bug
        .as_deref()
        .map(|bug| format!("-{bug}"))
        .unwrap_or_default();
    let path = directory.join(format!("seed-{seed}-{invariant}{bug}.json"));
    std::fs::write(&path, scenario.to_json() + "\n")?;
    Ok(path)
}

/// Prints a summary as the table `ward run` and `ward merge` show on standard error; `how`
/// closes the first line (`2 jobs`, `4 shards side by side`).
pub fn print_summary(summary: &Summary, how: &str) {
    tell!(
        "ward: {} seeds, {} runs, {} tool calls, {} provider turns in {:.1} s ({:.0} runs/s, {how})",
        summary.seeds,
        summary.runs,
        summary.tool_calls,
        summary.turns,
        summary.elapsed_ms as f64 / 1000.0,
        summary.runs_per_sec
    );
    if let Some(runtime) = &summary.runtime {
        tell!(
            "runtime: {} {} (adapter `{}`), claiming {} rules",
            runtime.name,
            runtime.version,
            runtime.command,
            runtime.claims.len()
        );
    }
    tell!("{:9} {:>10} {:>9}", "invariant", "armed", "violated");
    for invariant in Invariant::ALL {
        let counts = summary
            .by_invariant
            .get(invariant.id())
            .copied()
            .unwrap_or_default();
        let share = 100.0 * counts.armed as f64 / summary.runs.max(1) as f64;
        if !counts.claimed {
            tell!(
                "{:9} {:>10} {:>9}   not claimed: {} runs broke it (rests on {})",
                invariant.id(),
                counts.armed,
                "-",
                counts.not_claimed,
                invariant.rules().join(", ")
            );
            continue;
        }
        tell!(
            "{:9} {:>10} {:>9}   ({share:.1}% of runs armed)",
            invariant.id(),
            counts.armed,
            counts.violated
        );
    }
    let exact = summary.exact;
    let share = |part: u64, whole: u64| 100.0 * part as f64 / whole.max(1) as f64;
    tell!(
        "exact: {} of {} input error lists predicted ({:.1}%), {} of {} guarded records ({:.1}%)",
        exact.input_errors_predicted,
        exact.input_errors,
        share(exact.input_errors_predicted, exact.input_errors),
        exact.guarded_records_predicted,
        exact.guarded_records,
        share(exact.guarded_records_predicted, exact.guarded_records)
    );
    tell!("trace digest: {:016x}", summary.trace_digest);
    let crash_violations = summary
        .crashes
        .as_ref()
        .map_or(0, |crashes| crashes.violations);
    if let Some(crashes) = &summary.crashes {
        print_crashes(crashes);
    }
    if summary.violations == 0 && crash_violations == 0 {
        tell!("all invariants held");
    } else if summary.violations > 0 {
        tell!("{} seeds violated an invariant", summary.violations);
    }
}

/// The crash explorer's part of the table (`--crashes`).
fn print_crashes(crashes: &crate::summary::CrashSummary) {
    let kinds: Vec<String> = (crashes.crashes.iter())
        .map(|(kind, count)| format!("{count} {kind}"))
        .collect();
    tell!(
        "crashes: {} plans, {} processes; {} planned, of which {}; {} OUTCOME_UNKNOWN results",
        crashes.plans,
        crashes.processes,
        crashes.planned,
        kinds.join(", "),
        crashes.outcome_unknown
    );
    for (id, counts) in &crashes.by_invariant {
        let share = 100.0 * counts.armed as f64 / crashes.plans.max(1) as f64;
        tell!(
            "{id:9} {:>10} {:>9}   ({share:.1}% of plans armed)",
            counts.armed,
            counts.violated
        );
    }
    tell!("crash digest: {:016x}", crashes.digest);
    match &crashes.first_failure {
        None => {}
        Some(failure) => {
            tell!(
                "{} plans violated a durable invariant; first: seed {}: {}: {}",
                crashes.violations,
                failure.seed,
                failure.invariant,
                failure.explanation
            );
            if let Some(replay) = &failure.replay {
                tell!("replay: {replay}");
            }
        }
    }
}

/// A progress bar on a terminal, plain lines every tenth otherwise.
struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    reported: std::sync::atomic::AtomicU64,
}

impl Progress {
    fn new(total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            if let Ok(style) =
                ProgressStyle::with_template("{bar:40} {pos}/{len} seeds {per_sec} eta {eta}")
            {
                bar.set_style(style);
            }
            bar
        });
        Progress {
            bar,
            total,
            reported: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn update(&self, done: u64) {
        match &self.bar {
            Some(bar) => bar.set_position(done),
            None => {
                let tenth = (done * 10 / self.total.max(1)).min(10);
                let previous = self
                    .reported
                    .fetch_max(tenth, std::sync::atomic::Ordering::Relaxed);
                if tenth > previous {
                    tell!("ward: {done}/{} seeds", self.total);
                }
            }
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
