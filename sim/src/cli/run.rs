//! `ward run [--seeds A..B|N] [--jobs N] [--bug NAME] [--shard K/N] [--json] [--out DIR]`, and
//! `ward` alone, the default campaign over seeds `0..100000`.
//!
//! Exit 0 when every invariant held, 1 on a violation (after shrinking the first failing
//! seed, writing its scenario file and printing the one command that replays it), 2 on
//! misuse. The table of counts goes to standard error; `--json` prints the campaign's
//! [`Summary`](crate::summary::Summary) last, on standard output, naming its campaign (version, seed range, shard,
//! bug) so that `ward merge` can combine the shards of a range.

use std::io::IsTerminal;
use std::ops::Range;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use ward_core::fault::Fault;

use crate::campaign::{self, CampaignConfig};
use crate::oracle::Invariant;
use crate::summary::SeedRange;

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
    /// Report a seed still running after this many seconds of wall-clock time (the machine's
    /// pauses left out), and exit 1: its runtime never ends the run (0: never).
    #[arg(long, value_name = "SECS", default_value_t = crate::stall::DEFAULT_LIMIT.as_secs())]
    pub stall_after: u64,
    /// Pin worker W and the adapter processes it starts to the W-th processor this process may
    /// run on (the lockstep never runs both at once): faster with processors to spare and a
    /// single-threaded adapter, slower for one that works on several threads; the same
    /// digests. Two pinned campaigns side by side share their processors.
    #[arg(long)]
    pub pin: bool,
    /// Write each seed's trace digest, crash digest (with --crashes) and violated invariants
    /// to FILE, one line per seed in seed order: two campaigns that differ differ on the lines
    /// of the seeds that ran otherwise (`diff`).
    #[arg(long, value_name = "FILE")]
    pub seed_digests: Option<PathBuf>,
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
            pin: false,
            seed_digests: None,
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

/// Whether the runtime behind `command` can be crashed: it answers `ready` with a durable
/// store (SPEC §17 P7). A runtime without one is never crashed, so `--crashes` is refused.
fn durable_runtime(command: &str) -> Result<(), String> {
    use crate::protocol::Runtime;
    let host = crate::host::process::ProcessHost::spawn(command)
        .map_err(|violation| format!("--runtime {command}: {}", violation.message))?;
    match host.ready().and_then(|ready| ready.durable.as_ref()) {
        Some(_) => Ok(()),
        None => Err(format!(
            "--crashes: `{command}` declares no durable store in ready.durable (SPEC §17 P7), so it is never crashed"
        )),
    }
}

/// Whether `bug` breaks durable sessions (caught by I15–I19, which only crashes arm).
pub fn durable_bug(bug: Fault) -> bool {
    Invariant::catching(bug).is_durable()
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
    if let (true, Some(command)) = (args.crashes, &args.runtime)
        && let Err(why) = durable_runtime(command)
    {
        return super::usage_error(why);
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
        pin: args.pin,
    };
    let digests_file = match args
        .seed_digests
        .as_deref()
        .map(super::seed_digests::create)
    {
        Some(Err(why)) => return super::usage_error(why),
        Some(Ok(file)) => Some(file),
        None => None,
    };
    let total = config.shard().seeds_in(SeedRange::from(&config.seeds));
    let progress = Progress::new(total);
    let report = campaign::run(&config, &|done| progress.update(done));
    progress.finish();
    if let Some(file) = digests_file
        && let Err(error) = super::seed_digests::write(file, &report.per_seed)
    {
        tell!("ward: --seed-digests: {error}");
        return ExitCode::from(2);
    }
    let replay = (report.first_failure.as_ref())
        .and_then(|first| super::failure::shrink_and_write(first, &config, &args.out));
    let summary = report.to_summary(&config, replay);
    super::table::report_summary(&summary, &format!("{jobs} jobs"), args.json)
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
