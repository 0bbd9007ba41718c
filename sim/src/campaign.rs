//! Campaigns (SPEC §10, §12): many seeds, checked in parallel, reported in seed order.
//!
//! `jobs` worker threads each own an [`Engine`] (and a paused-clock tokio runtime) and
//! take seeds in small chunks from a shared counter; results are merged in seed order, so
//! the report and its `traceDigest` do not depend on `jobs`. The campaign digest combines the
//! seeds' trace digests with XOR (each first mixed with its seed), so the digests of the
//! shards of a range XOR to the digest of the whole range, and [`crate::summary::merge`]
//! combines the shards' summaries into the whole range's.
//!
//! A share of the seeds (default 1 in 20) is run twice and the two trace digests compared: a
//! mismatch is an I11 violation.
//!
//! With `crashes`, each seed also drives the crash explorer's plan of that seed
//! ([`crate::crash`]): durable sessions crashed and resumed, checked for I15–I19. Its verdict
//! counts like the scenario's (a seed fails when either does; `byInvariant` gains I15–I19),
//! its crashes and digest go into the summary's `crashes`.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use ward_core::fault::Fault;

use crate::crash::CrashKind;
use crate::explore;
use crate::generate::Misbehaviour;
use crate::oracle::durable::profile::Profile;
use crate::oracle::durable::{DurableBreach, DurableVerdict, INVARIANTS};
use crate::oracle::{Exactness, Invariant, Violation};
use crate::protocol::Ready;
use crate::scenario::Scenario;
use crate::simulate::{Engine, is_rerun};
use crate::stall::{self, Stall, Work};
use crate::summary::{
    self, CrashSummary, ExactCounts, FailureSummary, InvariantCounts, RuntimeSummary, SeedRange,
    Shard, Summary, WARD_VERSION,
};

/// What to run.
#[derive(Debug, Clone)]
pub struct CampaignConfig {
    /// The seeds, half-open.
    pub seeds: Range<u64>,
    /// Worker threads.
    pub jobs: usize,
    /// The seeded bug to switch on.
    pub bug: Option<Fault>,
    /// `(k, n)`: only seeds `s` with `s % n == k - 1`.
    pub shard: Option<(u64, u64)>,
    /// Rerun one seed in this many to check determinism (0: never).
    pub rerun_every: u64,
    /// The adapter command of the runtime under test (`None`: ward's own core in process).
    pub runtime: Option<String>,
    /// Also explore each seed's plan of the crash explorer (I15–I19, [`crate::crash`]).
    pub crashes: bool,
    /// A seed still running after this long is reported and the process exits with status 1
    /// ([`crate::stall`]); `None`: never.
    pub stall_after: Option<Duration>,
    /// Each worker and the adapter processes it starts share one processor
    /// ([`crate::host::pin`]): a speed switch, never a verdict's or a digest's.
    pub pin: bool,
}

impl CampaignConfig {
    /// A worker's engine: one adapter process per worker, reused for every scenario.
    pub fn engine(&self) -> Engine {
        match &self.runtime {
            Some(command) => Engine::with_runtime(command),
            None => Engine::new(),
        }
    }

    /// The shard run: `--shard K/N`, or the whole range.
    pub fn shard(&self) -> Shard {
        self.shard.map_or(Shard::WHOLE, Shard::from)
    }
}

/// What one seed contributed.
#[derive(Debug, Clone)]
struct SeedSummary {
    seed: u64,
    runs: u32,
    tool_calls: u32,
    turns: u32,
    /// Per invariant, the runs (for I15–I19, the plans) in which its situation arose.
    armed: [u32; Invariant::COUNT],
    exact: Exactness,
    /// Per invariant, the runs (for I15–I19, the plans) that violated it.
    violated: [u32; Invariant::COUNT],
    /// Per invariant, runs that broke it while the runtime does not claim it.
    not_claimed: [u32; Invariant::COUNT],
    misbehaviours: Vec<u32>,
    digest: u64,
    /// What the seed reports, when it failed: its scenario's violation or its crash plan's
    /// breach.
    failure: Option<Failure>,
    /// The crash explorer's plan of the seed, with `--crashes`.
    durable: Option<DurableSeed>,
}

/// What one seed's crash plan came to, beyond its verdict.
#[derive(Debug, Clone)]
struct DurableSeed {
    planned: u64,
    crashes: [u64; 5],
    processes: u64,
    outcome_unknown: u64,
    digest: u64,
    /// Whether the plan was also played in kill mode (I11, [`explore::KILL_RERUN_EVERY`]).
    killed: bool,
    /// Its durability profile (P11).
    profile: Profile,
}

/// The explorer's plan of `seed`, explored under `bug`: its counts and its verdict.
fn explore(seed: u64, bug: Option<Fault>, runtime: Option<&str>) -> (DurableSeed, DurableVerdict) {
    let faults = bug.into_iter().collect();
    let exploration = explore::explore_seed(seed, faults, runtime);
    let durable = DurableSeed {
        planned: exploration.planned() as u64,
        crashes: exploration.crashes(),
        processes: exploration.crashed.processes.len() as u64,
        outcome_unknown: exploration.outcome_unknown() as u64,
        digest: exploration.digest(),
        killed: exploration.killed,
        profile: exploration.verdict.profile.clone(),
    };
    (durable, exploration.verdict)
}

/// What a failing seed reports: a violation of its scenario (shrunk as a scenario file) or a
/// breach of its crash plan (shrunk as a crash plan file).
#[derive(Debug, Clone)]
pub enum Failure {
    /// A violation of the seed's scenario, and the scenario, for shrinking.
    Scenario {
        /// The violation.
        violation: Violation,
        /// The generated scenario.
        scenario: Box<Scenario>,
    },
    /// A breach of I15–I19 of the seed's crash plan (regenerated from the seed to shrink).
    CrashPlan(DurableBreach),
}

impl Failure {
    /// The invariant broken.
    pub fn invariant(&self) -> Invariant {
        match self {
            Failure::Scenario { violation, .. } => violation.invariant,
            Failure::CrashPlan(breach) => breach.invariant(),
        }
    }

    /// What went wrong, located.
    pub fn explanation(&self) -> String {
        match self {
            Failure::Scenario { violation, .. } => violation.to_string(),
            Failure::CrashPlan(breach) => breach.to_string(),
        }
    }
}

/// The first failing seed.
#[derive(Debug, Clone)]
pub struct FirstFailure {
    /// The seed.
    pub seed: u64,
    /// What it reports.
    pub failure: Failure,
}

/// A campaign's results.
#[derive(Debug, Clone)]
pub struct CampaignReport {
    /// Seeds run.
    pub seeds: u64,
    /// Runs executed.
    pub runs: u64,
    /// Calls that got a result.
    pub tool_calls: u64,
    /// Provider replies.
    pub turns: u64,
    /// Seeds with at least one violation, of their scenario or of their crash plan.
    pub failing_seeds: u64,
    /// Per invariant: runs (for I15–I19, plans) in which its situation arose, and in which it
    /// was violated.
    pub by_invariant: [(u64, u64); Invariant::COUNT],
    /// Per misbehaviour, how often it was generated.
    pub misbehaviours: Vec<(&'static str, u64)>,
    /// How often the exact checks could predict the whole record.
    pub exact: ExactCounts,
    /// The failure to shrink and report: the lowest failing seed's, or, when a seeded bug is
    /// on, the lowest seed's that breaks the invariant the catalogue names for it (if any).
    pub first_failure: Option<FirstFailure>,
    /// Per invariant, the lowest seed that violated it.
    pub first_seed_by_invariant: [Option<u64>; Invariant::COUNT],
    /// Per invariant, runs that broke it while the runtime does not claim it (P2).
    pub not_claimed: [u64; Invariant::COUNT],
    /// The runtime behind its adapter, as it described itself; `None` in process.
    pub runtime: Option<Ready>,
    /// Wall-clock time of the campaign.
    pub elapsed_ms: u64,
    /// XOR of every seed's mixed trace digest.
    pub trace_digest: u64,
    /// The crash explorer's counts, with `--crashes`.
    pub crashes: Option<CrashSummary>,
    /// Each seed's digests and violated invariants, in seed order.
    pub per_seed: Vec<SeedDigest>,
}

/// One seed's part of a campaign's digests: two campaigns of the same seeds whose digests
/// differ differ on the seeds that ran otherwise (`ward run --seed-digests`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedDigest {
    /// The seed.
    pub seed: u64,
    /// Its scenario's trace digest (I11's), before the campaign mixes it in.
    pub trace: u64,
    /// Its crash plan's digest, with `--crashes`.
    pub crash: Option<u64>,
    /// The invariants it violated, of its scenario or of its crash plan, in order.
    pub violated: Vec<Invariant>,
}

impl CampaignReport {
    /// The report as the summary `ward run --json` prints (SPEC §12), given the campaign's
    /// configuration and the replay command of the first failure. `byInvariant` holds the
    /// protocol (P6) and I1–I14, and I15–I19 when crashes ran.
    pub fn to_summary(&self, config: &CampaignConfig, replay: Option<String>) -> Summary {
        let by_invariant = Invariant::ALL
            .iter()
            .filter(|invariant| config.crashes || !invariant.is_durable())
            .map(|invariant| {
                let (armed, violated) = self.by_invariant[invariant.index()];
                let claimed = self
                    .runtime
                    .as_ref()
                    .is_none_or(|ready| invariant.is_claimed_by(&ready.claims));
                let counts = InvariantCounts {
                    armed,
                    violated,
                    first_seed: self.first_seed_by_invariant[invariant.index()],
                    claimed,
                    not_claimed: self.not_claimed[invariant.index()],
                };
                (invariant.id().to_owned(), counts)
            })
            .collect();
        let misbehaviours = self
            .misbehaviours
            .iter()
            .map(|(name, count)| ((*name).to_owned(), *count))
            .collect();
        let first_failure = self.first_failure.as_ref().map(|first| FailureSummary {
            seed: first.seed,
            invariant: first.failure.invariant().id().to_owned(),
            explanation: match &first.failure {
                Failure::Scenario { violation, .. } => violation.explanation.clone(),
                Failure::CrashPlan(breach) => breach.message.clone(),
            },
            replay,
        });
        Summary {
            ward_version: WARD_VERSION.to_owned(),
            seed_range: SeedRange::from(&config.seeds),
            shard: config.shard(),
            bug: config.bug.map(|bug| bug.name().to_owned()),
            rerun_every: config.rerun_every,
            runtime: self.runtime.as_ref().map(|ready| RuntimeSummary {
                command: config.runtime.clone().unwrap_or_default(),
                name: ready.runtime.name.clone(),
                version: ready.runtime.version.clone(),
                claims: ready.claims.clone(),
                notes: ready.notes.clone(),
            }),
            seeds: self.seeds,
            runs: self.runs,
            tool_calls: self.tool_calls,
            turns: self.turns,
            violations: self.failing_seeds,
            by_invariant,
            exact: self.exact,
            misbehaviours,
            first_failure,
            elapsed_ms: self.elapsed_ms,
            runs_per_sec: summary::runs_per_sec(self.runs, self.elapsed_ms),
            trace_digest: self.trace_digest,
            crashes: self.crashes.clone(),
        }
    }
}

/// Seeds taken from the shared counter at a time.
const CHUNK_SEEDS: u64 = 32;

/// Runs a campaign; `progress` is called with the number of seeds done so far.
pub fn run(config: &CampaignConfig, progress: &(dyn Fn(u64) + Sync)) -> CampaignReport {
    let started = Instant::now();
    let shard = config.shard();
    let seeds: Vec<u64> = config
        .seeds
        .clone()
        .filter(|&seed| shard.holds(seed))
        .collect();
    let shared = Shared {
        config,
        seeds: &seeds,
        next: AtomicU64::new(0),
        done: AtomicU64::new(0),
        collected: Mutex::new(Vec::with_capacity(seeds.len())),
        ready: Mutex::new(None),
        progress,
    };
    let jobs = config.jobs.max(1);
    let report_stall = |stall: &Stall| {
        let replay = match stall.work {
            Work::Scenario => {
                let bug = config.bug.map(|bug| bug.name());
                summary::replay_command(stall.seed, bug, config.runtime.as_deref())
            }
            Work::CrashPlan => crash_replay(stall.seed, config.bug, config.runtime.as_deref()),
        };
        eprintln!("ward: {stall}; replay: {replay}");
    };
    stall::watched(config.stall_after, jobs, report_stall, |watchdog| {
        std::thread::scope(|scope| {
            for worker in 0..jobs {
                let shared = &shared;
                scope.spawn(move || shared.work(worker, watchdog));
            }
        });
    });
    let mut summaries = (shared.collected.into_inner()).unwrap_or_else(PoisonError::into_inner);
    summaries.sort_by_key(|summary| summary.seed);
    let focus = config.bug.map(Invariant::catching);
    let mut report = merge(summaries, started, focus);
    report.runtime = (shared.ready.into_inner()).unwrap_or_else(PoisonError::into_inner);
    report
}

/// What the workers of a campaign share: the seeds, the next chunk to take, what they found.
struct Shared<'c> {
    config: &'c CampaignConfig,
    seeds: &'c [u64],
    next: AtomicU64,
    done: AtomicU64,
    collected: Mutex<Vec<SeedSummary>>,
    ready: Mutex<Option<Ready>>,
    progress: &'c (dyn Fn(u64) + Sync),
}

impl Shared<'_> {
    /// One worker: its own engine, chunks of seeds taken until none are left, each seed's
    /// scenario (and crash plan) marked for the stall watchdog while it runs.
    fn work(&self, worker: usize, watchdog: Option<&stall::Watchdog>) {
        let config = self.config;
        if config.pin
            && let Err(why) = crate::host::pin::pin_worker(worker)
        {
            eprintln!("ward: worker {worker} runs unpinned: {why}");
        }
        let engine = config.engine();
        let mut local = Vec::new();
        loop {
            let from = self.next.fetch_add(CHUNK_SEEDS, Ordering::Relaxed);
            if from >= self.seeds.len() as u64 {
                break;
            }
            let to = (from + CHUNK_SEEDS).min(self.seeds.len() as u64);
            for &seed in &self.seeds[from as usize..to as usize] {
                let mark = |work| watchdog.map(|watchdog| watchdog.running(worker, seed, work));
                let mut summary = {
                    let _running = mark(Work::Scenario);
                    summarise(&engine, seed, config)
                };
                if config.crashes {
                    let _running = mark(Work::CrashPlan);
                    let (durable, verdict) = explore(seed, config.bug, config.runtime.as_deref());
                    summary.add_durable(durable, &verdict, config.bug);
                }
                local.push(summary);
            }
            (self.progress)(self.done.fetch_add(to - from, Ordering::Relaxed) + (to - from));
        }
        let mut collected = self
            .collected
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        collected.extend(local);
        if let Some(said) = engine.ready() {
            let mut ready = self.ready.lock().unwrap_or_else(PoisonError::into_inner);
            ready.get_or_insert(said);
        }
    }
}

/// The summary of `seed`'s scenario; its crash plan, with `--crashes`, is explored apart (the
/// stall watchdog names which of the two runs) and added by [`SeedSummary::add_durable`].
fn summarise(engine: &Engine, seed: u64, config: &CampaignConfig) -> SeedSummary {
    let outcome = engine.run_seed(seed, config.bug, is_rerun(seed, config.rerun_every));
    let checked = &outcome.checked;
    let verdict = &checked.verdict;
    let focus = config.bug.map(Invariant::catching);
    let reported = (verdict.violations.iter())
        .find(|violation| Some(violation.invariant) == focus)
        .or_else(|| {
            verdict
                .violations
                .iter()
                .min_by_key(|violation| violation.invariant)
        });
    SeedSummary {
        seed,
        runs: checked.runs(),
        tool_calls: checked.tool_calls(),
        turns: checked.turns(),
        armed: verdict.armed,
        exact: verdict.exact,
        violated: runs_of(&verdict.violations),
        not_claimed: runs_of(&verdict.not_claimed),
        misbehaviours: outcome.misbehaviours,
        digest: checked.digest,
        failure: reported.map(|violation| Failure::Scenario {
            violation: violation.clone(),
            scenario: Box::new(outcome.scenario.clone()),
        }),
        durable: None,
    }
}

impl SeedSummary {
    /// Adds the seed's crash plan: its counts, its verdict's armed and violated invariants,
    /// and its breach as the seed's failure when the scenario has none (or when the breach is
    /// of the invariant that catches `bug` and the scenario's failure is not).
    fn add_durable(&mut self, durable: DurableSeed, verdict: &DurableVerdict, bug: Option<Fault>) {
        for (invariant, armed) in INVARIANTS.iter().zip(verdict.armed) {
            self.armed[invariant.index()] += u32::from(armed);
            let violated = (verdict.breaches.iter()).any(|breach| breach.invariant() == *invariant);
            self.violated[invariant.index()] += u32::from(violated);
            let unclaimed =
                (verdict.not_claimed.iter()).any(|breach| breach.invariant() == *invariant);
            self.not_claimed[invariant.index()] += u32::from(unclaimed);
        }
        // A plan played in kill mode too is a rerun that must give the same digest (P9, I11).
        let rerun_differs =
            (verdict.breaches.iter()).any(|breach| breach.invariant() == Invariant::I11);
        self.armed[Invariant::I11.index()] += u32::from(durable.killed);
        self.violated[Invariant::I11.index()] += u32::from(rerun_differs);
        let focus = bug.map(Invariant::catching);
        if let Some(breach) = verdict.reported(focus) {
            let replace = match &self.failure {
                None => true,
                Some(failure) => {
                    failure.invariant() != focus.unwrap_or(failure.invariant())
                        && Some(breach.invariant()) == focus
                }
            };
            if replace {
                self.failure = Some(Failure::CrashPlan(breach.clone()));
            }
        }
        self.durable = Some(durable);
    }
}

/// Per invariant, the runs `violations` break it in.
fn runs_of(violations: &[Violation]) -> [u32; Invariant::COUNT] {
    let mut runs: Vec<(Invariant, usize, usize)> = violations
        .iter()
        .map(|violation| (violation.invariant, violation.session, violation.run))
        .collect();
    runs.sort();
    runs.dedup();
    let mut counts = [0; Invariant::COUNT];
    for (invariant, _, _) in runs {
        counts[invariant.index()] += 1;
    }
    counts
}

/// The command that replays the crash plan of `seed` with `bug` on, against the runtime
/// behind `runtime` when one was crashed.
pub fn crash_replay(seed: u64, bug: Option<Fault>, runtime: Option<&str>) -> String {
    summary::crash_replay_command(seed, bug.map(Fault::name), runtime)
}

/// Mixes a seed into its trace digest before the XOR, so that equal traces of different
/// seeds do not cancel out.
pub fn mixed_digest(seed: u64, digest: u64) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..].copy_from_slice(&digest.to_le_bytes());
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// Merges seed summaries (in seed order). The first failure is the lowest failing seed; with
/// `focus`, the lowest seed that breaks that invariant when any does.
fn merge(
    summaries: Vec<SeedSummary>,
    started: Instant,
    focus: Option<Invariant>,
) -> CampaignReport {
    let mut report = CampaignReport {
        seeds: summaries.len() as u64,
        runs: 0,
        tool_calls: 0,
        turns: 0,
        failing_seeds: 0,
        by_invariant: [(0, 0); Invariant::COUNT],
        misbehaviours: Misbehaviour::ALL
            .iter()
            .map(|misbehaviour| (misbehaviour.name(), 0))
            .collect(),
        exact: ExactCounts::default(),
        first_failure: None,
        first_seed_by_invariant: [None; Invariant::COUNT],
        not_claimed: [0; Invariant::COUNT],
        runtime: None,
        elapsed_ms: 0,
        trace_digest: 0,
        crashes: None,
        per_seed: Vec::with_capacity(summaries.len()),
    };
    for summary in summaries {
        report.per_seed.push(SeedDigest {
            seed: summary.seed,
            trace: summary.digest,
            crash: summary.durable.as_ref().map(|durable| durable.digest),
            violated: (Invariant::ALL.iter())
                .filter(|invariant| summary.violated[invariant.index()] > 0)
                .copied()
                .collect(),
        });
        if let Some(durable) = &summary.durable {
            report.add_durable(summary.seed, durable);
        }
        report.add_counts(&summary);
        if let Some(failure) = summary.failure {
            report.add_failure(summary.seed, failure, focus);
        }
    }
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    report
}

impl CampaignReport {
    /// Adds a seed's crash plan's counts.
    fn add_durable(&mut self, seed: u64, durable: &DurableSeed) {
        let crashes = self.crashes.get_or_insert_with(CrashSummary::default);
        crashes.add(&CrashSummary {
            plans: 1,
            planned: durable.planned,
            processes: durable.processes,
            crashes: (CrashKind::ALL.iter().chain([&CrashKind::Drop]))
                .zip(durable.crashes)
                .filter(|(kind, count)| **kind != CrashKind::Drop || *count > 0)
                .map(|(kind, count)| (kind.name().to_owned(), count))
                .collect(),
            outcome_unknown: durable.outcome_unknown,
            profile: durable.profile.clone(),
            digest: mixed_digest(seed, durable.digest),
        });
    }

    /// Adds what every seed contributes: its counts, and its digest to the campaign's.
    fn add_counts(&mut self, summary: &SeedSummary) {
        self.runs += u64::from(summary.runs);
        self.tool_calls += u64::from(summary.tool_calls);
        self.turns += u64::from(summary.turns);
        self.trace_digest ^= mixed_digest(summary.seed, summary.digest);
        for (index, slot) in self.by_invariant.iter_mut().enumerate() {
            slot.0 += u64::from(summary.armed[index]);
            slot.1 += u64::from(summary.violated[index]);
            if summary.violated[index] > 0 {
                self.first_seed_by_invariant[index].get_or_insert(summary.seed);
            }
        }
        for (slot, count) in self.misbehaviours.iter_mut().zip(&summary.misbehaviours) {
            slot.1 += u64::from(*count);
        }
        for (slot, count) in self.not_claimed.iter_mut().zip(summary.not_claimed) {
            *slot += u64::from(count);
        }
        self.exact.add(&ExactCounts::from(summary.exact));
    }

    /// Adds a failing seed: it becomes the first failure when none came before, or when it is
    /// the first to break `focus` after failures of other invariants.
    fn add_failure(&mut self, seed: u64, failure: Failure, focus: Option<Invariant>) {
        self.failing_seeds += 1;
        let replace = match &self.first_failure {
            None => true,
            Some(first) => {
                Some(first.failure.invariant()) != focus && Some(failure.invariant()) == focus
            }
        };
        if replace {
            self.first_failure = Some(FirstFailure { seed, failure });
        }
    }
}
