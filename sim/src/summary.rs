//! Campaign summaries (SPEC §12, §13): the JSON object `ward run --json` prints last, and
//! `ward merge`, which combines the summaries of one campaign's shards into the summary of
//! the whole campaign.
//!
//! A summary says which campaign it belongs to — `wardVersion`, `seedRange`, `shard`, `bug`
//! and `rerunEvery` — and what the campaign found: `seeds`, `runs`, `toolCalls`, `turns`,
//! `violations` (failing seeds), `byInvariant` (armed, violated, first seed), `misbehaviours`,
//! `firstFailure` (seed, invariant, explanation, replay command), `elapsedMs`, `runsPerSec`
//! and `traceDigest`. An unsharded campaign is shard 1 of 1 (`--shard 1/1` runs the same
//! seeds), so a merged summary has the same shape as a run's, and merging one whole
//! campaign's summary gives it back. `sim/summary.schema.json` ([`SUMMARY_SCHEMA`]) is the
//! format. The build profile and `--jobs` are not part of a campaign: every build of one
//! version gives the same traces for the same seeds (I11), so shards built or run differently
//! merge, and only their times differ.
//!
//! # Merging
//!
//! [`merge`] refuses, naming the file, anything that is not one whole campaign:
//!
//! - a file that is not a summary: not JSON (with its line and column), or not the format
//!   (with the JSON Pointer of the fault), or a summary that contradicts itself (a shard
//!   `K/N` with `K > N`, a seed count that is not its shard's, a first failure outside it);
//! - a summary of another ward version ([`Summary::parse`] reads its own version's only):
//!   seeds may generate other scenarios from one version to the next, so neither the counts
//!   nor the replay command would mean the same;
//! - shards of different campaigns: another seed range, bug, rerun share, shard count or
//!   runtime;
//! - a shard given twice (both files are named), and missing shards (each `K` is named).
//!
//! The shards of a range hold disjoint seeds, so counts add up, `firstSeed` is the lowest of
//! the shards', and the trace digest is the XOR of the shards' (SPEC §12: the campaign digest
//! is an XOR over seeds). The first failure is the one `ward run` would pick over the whole
//! range: the lowest failing seed, or, with a bug, the lowest seed that breaks the bug's
//! invariant when any shard found one. Its replay command is `ward replay SEED [--bug NAME]`,
//! which regenerates the seed on any machine; the shard's shrunk scenario file stays where
//! that shard wrote it.
//!
//! Shards run side by side, so the merged `elapsedMs` is the longest shard's, and
//! `runsPerSec` is the whole campaign's runs over that time: the throughput of the fleet, not
//! of one machine. (Shards run one after another took the sum; ward cannot tell.)

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;

use serde::{Deserialize, Serialize};
use ward_core::fault::Fault;

use crate::oracle::Invariant;

/// The version of ward that writes and reads summaries.
pub const WARD_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The summary format's JSON Schema.
pub const SUMMARY_SCHEMA: &str = include_str!("../summary.schema.json");

/// Missing shards named one by one in a refusal; the rest are counted.
const MISSING_NAMED_MAX: usize = 10;

/// A half-open range of seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedRange {
    /// The first seed.
    pub start: u64,
    /// One past the last seed.
    pub end: u64,
}

impl From<&Range<u64>> for SeedRange {
    fn from(range: &Range<u64>) -> SeedRange {
        SeedRange {
            start: range.start,
            end: range.end,
        }
    }
}

impl fmt::Display for SeedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// Shard `index` of `count`: the seeds `s` with `s % count == index - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shard {
    /// `K`, from 1.
    pub index: u64,
    /// `N`, at least 1.
    pub count: u64,
}

impl Shard {
    /// The whole range: shard 1 of 1.
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    /// Whether `seed` belongs to this shard.
    pub fn holds(self, seed: u64) -> bool {
        self.count > 0 && seed % self.count == self.index.wrapping_sub(1)
    }

    /// How many seeds of `range` belong to this shard.
    ///
    /// ```
    /// use ward_sim::summary::{SeedRange, Shard};
    /// let range = SeedRange { start: 3, end: 10 };
    /// // Seeds 3..10 of shard 2 of 4 (s % 4 == 1): 5 and 9.
    /// assert_eq!(Shard { index: 2, count: 4 }.seeds_in(range), 2);
    /// assert_eq!(Shard::WHOLE.seeds_in(range), 7);
    /// ```
    pub fn seeds_in(self, range: SeedRange) -> u64 {
        // Seeds below `end` that the shard holds, less those below `start`.
        let below = |end: u64| match (self.count, self.index.checked_sub(1)) {
            (0, _) | (_, None) => 0,
            (count, Some(remainder)) => end / count + u64::from(end % count > remainder),
        };
        below(range.end).saturating_sub(below(range.start))
    }
}

impl From<(u64, u64)> for Shard {
    fn from((index, count): (u64, u64)) -> Shard {
        Shard { index, count }
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What a campaign found about one invariant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InvariantCounts {
    /// Runs in which the invariant's situation arose.
    pub armed: u64,
    /// Runs in which it was violated.
    pub violated: u64,
    /// The lowest seed that violated it.
    pub first_seed: Option<u64>,
    /// Whether the runtime claims every rule the invariant rests on (P2); an unclaimed
    /// invariant's breaks are counted in `notClaimed`, never as violations.
    #[serde(default = "claimed", skip_serializing_if = "is_claimed")]
    pub claimed: bool,
    /// Runs that broke the invariant while the runtime does not claim it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_claimed: u64,
}

impl Default for InvariantCounts {
    fn default() -> Self {
        InvariantCounts {
            armed: 0,
            violated: 0,
            first_seed: None,
            claimed: true,
            not_claimed: 0,
        }
    }
}

fn claimed() -> bool {
    true
}

fn is_claimed(claimed: &bool) -> bool {
    *claimed
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// The runtime a campaign checked, as its adapter described it (P2); absent for ward's own
/// core in process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuntimeSummary {
    /// The adapter command.
    pub command: String,
    /// The runtime's name.
    pub name: String,
    /// Its exact version.
    pub version: String,
    /// The rules it claims.
    pub claims: Vec<String>,
    /// Why each rule it does not claim is not claimed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub notes: BTreeMap<String, String>,
}

/// The failure a campaign reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailureSummary {
    /// The seed.
    pub seed: u64,
    /// The invariant it broke, e.g. `I2`.
    pub invariant: String,
    /// The oracle's explanation.
    pub explanation: String,
    /// The one command that replays it (none when its shrunk scenario could not be written).
    pub replay: Option<String>,
}

/// How often the checks that predict a whole record could predict it (SPEC §9's exact
/// checks): I4's error lists and R22's guarded records. A record not predicted is still
/// checked by the rules every record obeys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExactCounts {
    /// `TOOL_INPUT_INVALID` results of registered tools that I4 checked.
    pub input_errors: u64,
    /// Of those, the ones whose whole error list the oracle predicted.
    pub input_errors_predicted: u64,
    /// Of those, the ones the runtime's list matched, element by element.
    pub input_errors_matched: u64,
    /// Records with a configured value or a fragment of one to replace, checked by I8.
    pub guarded_records: u64,
    /// Of those, the ones whose guarded form the oracle predicted.
    pub guarded_records_predicted: u64,
    /// Of those, the ones the runtime's record matched.
    pub guarded_records_matched: u64,
}

impl ExactCounts {
    /// Adds `other`, saturating (counts may come from files).
    pub fn add(&mut self, other: &ExactCounts) {
        let add = |count: &mut u64, other: u64| *count = count.saturating_add(other);
        add(&mut self.input_errors, other.input_errors);
        add(
            &mut self.input_errors_predicted,
            other.input_errors_predicted,
        );
        add(&mut self.input_errors_matched, other.input_errors_matched);
        add(&mut self.guarded_records, other.guarded_records);
        add(
            &mut self.guarded_records_predicted,
            other.guarded_records_predicted,
        );
        add(
            &mut self.guarded_records_matched,
            other.guarded_records_matched,
        );
    }
}

impl From<crate::oracle::Exactness> for ExactCounts {
    fn from(exact: crate::oracle::Exactness) -> ExactCounts {
        ExactCounts {
            input_errors: u64::from(exact.input_errors),
            input_errors_predicted: u64::from(exact.input_errors_predicted),
            input_errors_matched: u64::from(exact.input_errors_matched),
            guarded_records: u64::from(exact.guarded_records),
            guarded_records_predicted: u64::from(exact.guarded_records_predicted),
            guarded_records_matched: u64::from(exact.guarded_records_matched),
        }
    }
}

/// What `ward run --crashes` adds beside the verdict (whose I15–I19 are in `byInvariant`):
/// each seed's plan of the crash explorer ([`crate::crash`]) and its crashes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrashSummary {
    /// Plans explored (one per seed).
    pub plans: u64,
    /// Crashes the plans held; `crashes` counts those that happened (a session may end
    /// before a crash is reached).
    pub planned: u64,
    /// Processes that ran them, over every crash and resume.
    pub processes: u64,
    /// Crashes that happened, per kind (`kill`, `powerLoss`, `writeError`, `syncError`).
    pub crashes: BTreeMap<String, u64>,
    /// Results of R32's calls cut by a crash (`OUTCOME_UNKNOWN`).
    pub outcome_unknown: u64,
    /// The durability profile (SPEC §17 P11): per crash point, what recovery did, counted
    /// over the crashes that happened ([`crate::oracle::durable::profile`]).
    #[serde(default)]
    pub profile: BTreeMap<String, BTreeMap<String, u64>>,
    /// XOR of every plan's mixed digest, as 16 hex digits.
    #[serde(with = "hex_digest")]
    pub digest: u64,
}

impl CrashSummary {
    /// Adds `other`'s counts, saturating (counts may come from files).
    pub fn add(&mut self, other: &CrashSummary) {
        self.plans = self.plans.saturating_add(other.plans);
        self.planned = self.planned.saturating_add(other.planned);
        self.processes = self.processes.saturating_add(other.processes);
        for (kind, count) in &other.crashes {
            let slot = self.crashes.entry(kind.clone()).or_default();
            *slot = slot.saturating_add(*count);
        }
        self.outcome_unknown = self.outcome_unknown.saturating_add(other.outcome_unknown);
        for (point, recoveries) in &other.profile {
            let row = self.profile.entry(point.clone()).or_default();
            for (recovery, count) in recoveries {
                let slot = row.entry(recovery.clone()).or_default();
                *slot = slot.saturating_add(*count);
            }
        }
        self.digest ^= other.digest;
    }
}

/// The summary of a campaign or of one shard of it (module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Summary {
    /// The ward that ran it ([`WARD_VERSION`]).
    pub ward_version: String,
    /// The campaign's whole seed range, also for a shard.
    pub seed_range: SeedRange,
    /// Which shard of the range; [`Shard::WHOLE`] for an unsharded or merged campaign.
    pub shard: Shard,
    /// The seeded bug switched on, by catalogue name.
    pub bug: Option<String>,
    /// One seed in this many was rerun to check determinism (0: none).
    pub rerun_every: u64,
    /// The runtime behind its adapter; absent for ward's own core in process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSummary>,
    /// Seeds run.
    pub seeds: u64,
    /// Runs executed.
    pub runs: u64,
    /// Calls that got a result.
    pub tool_calls: u64,
    /// Provider replies.
    pub turns: u64,
    /// Seeds with at least one violation.
    pub violations: u64,
    /// Per invariant id (`I1`…).
    pub by_invariant: BTreeMap<String, InvariantCounts>,
    /// Per misbehaviour, how often it was generated.
    pub misbehaviours: BTreeMap<String, u64>,
    /// How often the exact checks could predict the whole record they compare.
    #[serde(default)]
    pub exact: ExactCounts,
    /// The failure to look at first.
    pub first_failure: Option<FailureSummary>,
    /// Wall-clock time (the longest shard's, for a merged campaign).
    pub elapsed_ms: u64,
    /// Runs per second of `elapsedMs`, to one decimal.
    pub runs_per_sec: f64,
    /// XOR of every seed's mixed trace digest, as 16 hex digits.
    #[serde(with = "hex_digest")]
    pub trace_digest: u64,
    /// The crash explorer's findings, with `--crashes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crashes: Option<CrashSummary>,
}

/// Runs per second of `elapsed_ms` (at least 1 ms), to one decimal.
pub fn runs_per_sec(runs: u64, elapsed_ms: u64) -> f64 {
    (runs as f64 * 1000.0 / elapsed_ms.max(1) as f64 * 10.0).round() / 10.0
}

/// The command that replays the crash plan of `seed` with `bug` switched on, against the
/// runtime behind `runtime` when the campaign crashed one.
pub fn crash_replay_command(seed: u64, bug: Option<&str>, runtime: Option<&str>) -> String {
    let mut command = match bug {
        Some(bug) => format!("ward replay --crashes {seed} --bug {bug}"),
        None => format!("ward replay --crashes {seed}"),
    };
    if let Some(runtime) = runtime {
        command.push_str(&format!(" --runtime {}", single_quoted(runtime)));
    }
    command
}

/// The command that replays `seed` of a campaign with `bug` switched on, against the
/// runtime behind `runtime` when the campaign checked one.
pub fn replay_command(seed: u64, bug: Option<&str>, runtime: Option<&str>) -> String {
    let mut command = match bug {
        Some(bug) => format!("ward replay {seed} --bug {bug}"),
        None => format!("ward replay {seed}"),
    };
    if let Some(runtime) = runtime {
        command.push_str(&format!(" --runtime {}", single_quoted(runtime)));
    }
    command
}

/// `text` as one shell word in single quotes (a quote inside written `'\''`).
pub(crate) fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The trace digest as 16 lowercase hex digits.
mod hex_digest {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(digest: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{digest:016x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.len() != 16 {
            return Err(serde::de::Error::custom("a digest is 16 hex digits"));
        }
        u64::from_str_radix(&text, 16).map_err(serde::de::Error::custom)
    }
}

/// Why a file is not a usable summary.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// The file cannot be read.
    #[error("{path}: cannot read: {reason}")]
    Read {
        /// The file.
        path: String,
        /// The system's reason.
        reason: String,
    },
    /// The file holds nothing.
    #[error(
        "{path}: empty; a summary is the JSON object that `ward run --json` prints as its last line"
    )]
    Empty {
        /// The file.
        path: String,
    },
    /// Not JSON.
    #[error("{path}: line {line} column {column}: not valid JSON: {reason}")]
    Json {
        /// The file.
        path: String,
        /// The line of the fault, from 1.
        line: usize,
        /// The column of the fault, from 1.
        column: usize,
        /// The parser's reason.
        reason: String,
    },
    /// A summary of another version of ward.
    #[error(
        "{path}: a summary of ward {found}, but this is ward {WARD_VERSION}; use the ward that ran the campaign"
    )]
    Version {
        /// The file.
        path: String,
        /// The version it names.
        found: String,
    },
    /// JSON, but not a summary, or one that contradicts itself.
    #[error("{path}: not a ward summary: at {pointer}: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// The JSON Pointer of the fault.
        pointer: String,
        /// What is wrong.
        reason: String,
    },
}

impl Summary {
    /// The summary as one line of JSON.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads the summary in `text`: the whole text as one JSON document, or, when its last
    /// non-empty line opens an object, that line (`ward run --json` prints the summary as its
    /// last line, and a file may hold the lines before it). `path` names the source in errors.
    pub fn parse(text: &str, path: &str) -> Result<Summary, SummaryError> {
        let lines: Vec<&str> = text.lines().collect();
        let Some(last_index) = lines.iter().rposition(|line| !line.trim().is_empty()) else {
            return Err(SummaryError::Empty {
                path: path.to_owned(),
            });
        };
        let (document, lines_before) = if lines[last_index].trim_start().starts_with('{') {
            (lines[last_index], last_index)
        } else {
            (text, 0)
        };
        let value: serde_json::Value =
            serde_json::from_str(document).map_err(|error| SummaryError::Json {
                path: path.to_owned(),
                line: lines_before + error.line(),
                column: error.column(),
                reason: reason_without_position(&error),
            })?;
        // Another version's summary may have another format: the version is named first.
        if let Some(found) = value.get("wardVersion").and_then(serde_json::Value::as_str)
            && found != WARD_VERSION
        {
            return Err(SummaryError::Version {
                path: path.to_owned(),
                found: found.to_owned(),
            });
        }
        let invalid = |pointer: &str, reason: String| SummaryError::Invalid {
            path: path.to_owned(),
            pointer: pointer.to_owned(),
            reason,
        };
        static VALIDATOR: std::sync::OnceLock<Result<jsonschema::Validator, String>> =
            std::sync::OnceLock::new();
        if let Some(fault) = crate::schema::check(&VALIDATOR, SUMMARY_SCHEMA, "summary", &value) {
            return Err(invalid(&fault.pointer, fault.reason));
        }
        let summary: Summary =
            serde_json::from_value(value).map_err(|error| invalid("/", error.to_string()))?;
        summary
            .check()
            .map_err(|(pointer, reason)| invalid(&pointer, reason))?;
        Ok(summary)
    }

    /// Reads the summary in the file at `path` (see [`Summary::parse`]).
    pub fn read(path: &Path) -> Result<Summary, SummaryError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| SummaryError::Read {
            path: name.clone(),
            reason: error.to_string(),
        })?;
        Summary::parse(&text, &name)
    }

    /// Checks what the schema cannot: the shard lies in its count, the seed count is the
    /// shard's, the failures lie in the shard, the bug is in the catalogue. The pointer of the
    /// fault and the reason.
    fn check(&self) -> Result<(), (String, String)> {
        let fault = |pointer: &str, reason: String| Err((pointer.to_owned(), reason));
        if self.seed_range.start >= self.seed_range.end {
            return fault("/seedRange", format!("{} is empty", self.seed_range));
        }
        if self.shard.index > self.shard.count {
            return fault("/shard", format!("shard {} does not exist", self.shard));
        }
        let expected = self.shard.seeds_in(self.seed_range);
        if self.seeds != expected {
            let reason = format!(
                "{} seeds, but shard {} of seeds {} has {expected}",
                self.seeds, self.shard, self.seed_range
            );
            return fault("/seeds", reason);
        }
        if self.violations > self.seeds {
            return fault("/violations", "more failing seeds than seeds".to_owned());
        }
        if (self.violations > 0) != self.first_failure.is_some() {
            let reason = "a first failure is given exactly when a seed failed".to_owned();
            return fault("/firstFailure", reason);
        }
        let outside = |seed: u64| {
            !(self.seed_range.start..self.seed_range.end).contains(&seed) || !self.shard.holds(seed)
        };
        let not_in_shard = |seed: u64| format!("seed {seed} is not in shard {}", self.shard);
        if let Some(failure) = self
            .first_failure
            .as_ref()
            .filter(|failure| outside(failure.seed))
        {
            return fault("/firstFailure/seed", not_in_shard(failure.seed));
        }
        for (id, counts) in &self.by_invariant {
            if let Some(seed) = counts.first_seed.filter(|&seed| outside(seed)) {
                return fault(&format!("/byInvariant/{id}/firstSeed"), not_in_shard(seed));
            }
        }
        match self.bug.as_deref().map(str::parse::<Fault>) {
            Some(Err(error)) => fault("/bug", error.to_string()),
            _ => Ok(()),
        }
    }

    /// The invariant a seeded bug is caught by, which the first failure is about when any
    /// seed breaks it (as `ward run --bug` picks it).
    fn focus(&self) -> Option<&'static str> {
        let bug = self.bug.as_deref()?.parse::<Fault>().ok()?;
        Some(Invariant::catching(bug).id())
    }
}

/// serde_json's message without its " at line L column C", which the caller states itself.
fn reason_without_position(error: &serde_json::Error) -> String {
    let message = error.to_string();
    match message.rfind(" at line ") {
        Some(end) => message[..end].to_owned(),
        None => message,
    }
}

/// A shard's summary and the file it came from.
#[derive(Clone, Debug)]
pub struct ShardFile {
    /// The file, as the user named it.
    pub path: String,
    /// Its summary.
    pub summary: Summary,
}

/// Why shard summaries do not make one campaign (module docs).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No summaries at all.
    #[error("no summaries to merge")]
    Nothing,
    /// A shard of another campaign than the first file's.
    #[error("{path}: not a shard of the campaign of {first}: {difference}")]
    OtherCampaign {
        /// The file.
        path: String,
        /// The first file, whose campaign the others must share.
        first: String,
        /// What differs, this file's against the first's.
        difference: String,
    },
    /// A file given twice.
    #[error("{path}: given twice")]
    GivenTwice {
        /// The file.
        path: String,
    },
    /// A shard given twice.
    #[error("{path}: shard {shard} again; {earlier} is shard {shard} too")]
    Repeated {
        /// The later file.
        path: String,
        /// The earlier file.
        earlier: String,
        /// The shard both hold.
        shard: Shard,
    },
    /// Shards not given.
    #[error("shards of seeds {range} missing: {missing} (given: {given})")]
    Missing {
        /// The campaign's seed range.
        range: SeedRange,
        /// The missing shards, `K/N`, the first few named.
        missing: String,
        /// The files given and their shards.
        given: String,
    },
}

/// The merged campaign, and which file its first failure came from.
#[derive(Clone, Debug)]
pub struct Merged {
    /// The whole campaign's summary.
    pub summary: Summary,
    /// The file whose first failure is the campaign's, as an index into the files merged.
    pub first_failure_from: Option<usize>,
}

/// Merges the summaries of every shard of one campaign (module docs).
pub fn merge(files: &[ShardFile]) -> Result<Merged, MergeError> {
    let first = files.first().ok_or(MergeError::Nothing)?;
    for file in files {
        if let Some(difference) = campaign_difference(&file.summary, &first.summary) {
            return Err(MergeError::OtherCampaign {
                path: file.path.clone(),
                first: first.path.clone(),
                difference,
            });
        }
    }
    let mut shards: BTreeMap<u64, usize> = BTreeMap::new();
    for (index, file) in files.iter().enumerate() {
        if let Some(&earlier) = shards.get(&file.summary.shard.index) {
            if files[earlier].path == file.path {
                return Err(MergeError::GivenTwice {
                    path: file.path.clone(),
                });
            }
            return Err(MergeError::Repeated {
                path: file.path.clone(),
                earlier: files[earlier].path.clone(),
                shard: file.summary.shard,
            });
        }
        shards.insert(file.summary.shard.index, index);
    }
    let count = first.summary.shard.count;
    let missing_count = count.saturating_sub(shards.len() as u64);
    if missing_count > 0 {
        // The shard indices given are distinct and at most `count`, so the first few missing
        // ones turn up within `files.len() + MISSING_NAMED_MAX` steps.
        let mut missing: Vec<String> = (1..=count)
            .filter(|index| !shards.contains_key(index))
            .take(MISSING_NAMED_MAX)
            .map(|index| Shard { index, count }.to_string())
            .collect();
        if missing_count > missing.len() as u64 {
            missing.push(format!("and {} more", missing_count - missing.len() as u64));
        }
        let given: Vec<String> = shards
            .values()
            .map(|&index| format!("{} {}", files[index].path, files[index].summary.shard))
            .collect();
        return Err(MergeError::Missing {
            range: first.summary.seed_range,
            missing: missing.join(", "),
            given: given.join(", "),
        });
    }
    Ok(combine(files))
}

/// What sets `summary`'s campaign apart from `first`'s, if anything.
fn campaign_difference(summary: &Summary, first: &Summary) -> Option<String> {
    // Both are of this ward's version: `Summary::parse` reads no other.
    let bug = |summary: &Summary| summary.bug.clone().unwrap_or_else(|| "none".to_owned());
    if summary.seed_range != first.seed_range {
        Some(format!(
            "seeds {} against {}",
            summary.seed_range, first.seed_range
        ))
    } else if summary.bug != first.bug {
        Some(format!("bug {} against {}", bug(summary), bug(first)))
    } else if summary.shard.count != first.shard.count {
        Some(format!(
            "shard {} against {} (another shard count)",
            summary.shard, first.shard
        ))
    } else if summary.rerun_every != first.rerun_every {
        Some(format!(
            "rerun every {} against every {}",
            summary.rerun_every, first.rerun_every
        ))
    } else if summary.crashes.is_some() != first.crashes.is_some() {
        let crashes = |summary: &Summary| {
            if summary.crashes.is_some() {
                "on"
            } else {
                "off"
            }
        };
        Some(format!(
            "crashes {} against {}",
            crashes(summary),
            crashes(first)
        ))
    } else if summary.runtime != first.runtime {
        let runtime = |summary: &Summary| {
            summary.runtime.as_ref().map_or_else(
                || "ward's core in process".to_owned(),
                |runtime| {
                    format!(
                        "{} {} (`{}`)",
                        runtime.name, runtime.version, runtime.command
                    )
                },
            )
        };
        Some(format!(
            "runtime {} against {}",
            runtime(summary),
            runtime(first)
        ))
    } else {
        None
    }
}

/// Adds up the summaries of every shard of one campaign, checked by [`merge`].
fn combine(files: &[ShardFile]) -> Merged {
    let first = &files[0].summary;
    let mut whole = Summary {
        ward_version: first.ward_version.clone(),
        seed_range: first.seed_range,
        shard: Shard::WHOLE,
        bug: first.bug.clone(),
        rerun_every: first.rerun_every,
        runtime: first.runtime.clone(),
        seeds: 0,
        runs: 0,
        tool_calls: 0,
        turns: 0,
        violations: 0,
        by_invariant: BTreeMap::new(),
        misbehaviours: BTreeMap::new(),
        exact: ExactCounts::default(),
        first_failure: None,
        elapsed_ms: 0,
        runs_per_sec: 0.0,
        trace_digest: 0,
        crashes: first.crashes.as_ref().map(|_| CrashSummary::default()),
    };
    for ShardFile { summary, .. } in files {
        add_shard(&mut whole, summary);
    }
    whole.runs_per_sec = runs_per_sec(whole.runs, whole.elapsed_ms);
    let first_failure_from = first_failure_of(files);
    whole.first_failure = first_failure_from.and_then(|index| {
        let failure = files[index].summary.first_failure.clone()?;
        let durable = Invariant::from_id(&failure.invariant).is_some_and(Invariant::is_durable);
        let runtime = (whole.runtime.as_ref()).map(|runtime| runtime.command.as_str());
        let replay = if durable {
            crash_replay_command(failure.seed, whole.bug.as_deref(), runtime)
        } else {
            replay_command(failure.seed, whole.bug.as_deref(), runtime)
        };
        Some(FailureSummary {
            replay: Some(replay),
            ..failure
        })
    });
    Merged {
        summary: whole,
        first_failure_from,
    }
}

/// Adds a shard's counts to the whole campaign's. Counts from files saturate rather than
/// overflow: a crafted file must not panic ward.
fn add_shard(whole: &mut Summary, summary: &Summary) {
    whole.seeds = whole.seeds.saturating_add(summary.seeds);
    whole.runs = whole.runs.saturating_add(summary.runs);
    whole.tool_calls = whole.tool_calls.saturating_add(summary.tool_calls);
    whole.turns = whole.turns.saturating_add(summary.turns);
    whole.violations = whole.violations.saturating_add(summary.violations);
    whole.elapsed_ms = whole.elapsed_ms.max(summary.elapsed_ms);
    whole.trace_digest ^= summary.trace_digest;
    for (id, counts) in &summary.by_invariant {
        let slot = whole.by_invariant.entry(id.clone()).or_default();
        slot.armed = slot.armed.saturating_add(counts.armed);
        slot.violated = slot.violated.saturating_add(counts.violated);
        slot.not_claimed = slot.not_claimed.saturating_add(counts.not_claimed);
        slot.claimed &= counts.claimed;
        slot.first_seed = match (slot.first_seed, counts.first_seed) {
            (Some(seed), Some(other)) => Some(seed.min(other)),
            (seed, other) => seed.or(other),
        };
    }
    for (name, count) in &summary.misbehaviours {
        let slot = whole.misbehaviours.entry(name.clone()).or_default();
        *slot = slot.saturating_add(*count);
    }
    whole.exact.add(&summary.exact);
    if let (Some(whole), Some(shard)) = (&mut whole.crashes, &summary.crashes) {
        whole.add(shard);
    }
}

/// The file holding the campaign's first failure: the lowest failing seed, or with a bug the
/// lowest seed that breaks the bug's invariant when any shard found one.
fn first_failure_of(files: &[ShardFile]) -> Option<usize> {
    let focus = files.first()?.summary.focus();
    files
        .iter()
        .enumerate()
        .filter_map(|(index, file)| Some((file.summary.first_failure.as_ref()?, index)))
        // A failure of the bug's invariant first, then the lowest seed.
        .min_by_key(|(failure, _)| {
            (
                focus.is_some_and(|focus| failure.invariant != focus),
                failure.seed,
            )
        })
        .map(|(_, index)| index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(index: u64, failure: Option<(u64, &str)>) -> ShardFile {
        let failure = failure.map(|(seed, invariant)| FailureSummary {
            seed,
            invariant: invariant.to_owned(),
            explanation: String::new(),
            replay: None,
        });
        ShardFile {
            path: format!("shard-{index}.json"),
            summary: Summary {
                ward_version: WARD_VERSION.to_owned(),
                seed_range: SeedRange { start: 0, end: 10 },
                shard: Shard { index, count: 2 },
                bug: Some("error-limit-six".to_owned()),
                rerun_every: 0,
                runtime: None,
                seeds: 5,
                runs: 5,
                tool_calls: 0,
                turns: 0,
                violations: u64::from(failure.is_some()),
                by_invariant: BTreeMap::new(),
                misbehaviours: BTreeMap::new(),
                exact: ExactCounts::default(),
                first_failure: failure,
                elapsed_ms: 1,
                runs_per_sec: 0.0,
                trace_digest: index,
                crashes: None,
            },
        }
    }

    #[test]
    fn with_a_bug_the_first_failure_breaks_its_invariant_before_a_lower_seed_that_does_not() {
        // error-limit-six is caught by I4: seed 7's I4 failure comes before seed 2's I2 one.
        let files = [shard(1, Some((2, "I2"))), shard(2, Some((7, "I4")))];
        let merged = merge(&files).expect("one campaign");
        assert_eq!(merged.first_failure_from, Some(1));
        let failure = merged.summary.first_failure.expect("a failure");
        assert_eq!((failure.seed, failure.invariant.as_str()), (7, "I4"));
        assert_eq!(
            failure.replay.as_deref(),
            Some("ward replay 7 --bug error-limit-six")
        );
        // With no failure of the bug's invariant, the lowest failing seed.
        let files = [shard(1, Some((4, "I2"))), shard(2, Some((3, "I6")))];
        assert_eq!(
            merge(&files).expect("one campaign").first_failure_from,
            Some(1)
        );
    }

    fn served(command: &str) -> RuntimeSummary {
        RuntimeSummary {
            command: command.to_owned(),
            name: "ward-core".to_owned(),
            version: WARD_VERSION.to_owned(),
            claims: vec!["R3".to_owned()],
            notes: BTreeMap::new(),
        }
    }

    #[test]
    fn shards_of_one_runtime_merge_with_its_replay_command_and_others_are_refused() {
        let mut files = [shard(1, Some((2, "I4"))), shard(2, None)];
        for file in &mut files {
            file.summary.runtime = Some(served("ward serve"));
        }
        let merged = merge(&files).expect("one campaign");
        assert_eq!(merged.summary.runtime, Some(served("ward serve")));
        let replay = merged
            .summary
            .first_failure
            .and_then(|failure| failure.replay);
        assert_eq!(
            replay.as_deref(),
            Some("ward replay 2 --bug error-limit-six --runtime 'ward serve'")
        );
        files[1].summary.runtime = None;
        let error = merge(&files).expect_err("another runtime").to_string();
        assert!(
            error.contains("runtime ward's core in process against ward-core"),
            "{error}"
        );
    }
}
