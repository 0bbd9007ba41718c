//! The first failure of a campaign, shrunk and written where `--out` says: a scenario file
//! for a violation of a scenario (`ward replay FILE`), a crash plan file for a breach of a
//! crash plan (`ward replay FILE` explores it again); each is printed with the one command
//! that replays it.

use std::path::{Path, PathBuf};

use crate::campaign::{CampaignConfig, Failure, FirstFailure};
use crate::oracle::Invariant;
use crate::shrink;
use crate::summary::single_quoted;

/// Shrinks `first` while the same check fails, writes it under `directory`, prints where and
/// how to replay it, and returns the replay command (`None` when nothing could be written).
pub fn shrink_and_write(
    first: &FirstFailure,
    config: &CampaignConfig,
    directory: &Path,
) -> Option<String> {
    match &first.failure {
        Failure::Scenario {
            violation,
            scenario,
        } => {
            let engine = config.engine();
            let shrunk =
                shrink::shrink(&engine, scenario, violation.breach, shrink::EXECUTIONS_MAX);
            let path =
                match write_failure(directory, first.seed, violation.invariant, &shrunk.scenario) {
                    Ok(path) => path,
                    Err(error) => {
                        tell!("ward: cannot write the shrunk scenario: {error}");
                        return None;
                    }
                };
            tell!(
                "first failure: seed {}: {}\nshrunk from {} to {} ({} executions): {}",
                first.seed,
                violation,
                shrunk.before,
                shrunk.after,
                shrunk.executions,
                path.display()
            );
            Some(replay_file(config, &path))
        }
        Failure::CrashPlan(_) => match write_plan_failure(directory, first.seed, config) {
            Ok(Some(written)) => {
                tell!(
                    "first failure: seed {}: {}\nshrunk from {} to {} ({} explorations): {}",
                    first.seed,
                    first.failure.explanation(),
                    written.before,
                    written.after,
                    written.explorations,
                    written.path.display()
                );
                Some(replay_file(config, &written.path))
            }
            Ok(None) => Some(crate::campaign::crash_replay(
                first.seed,
                config.bug,
                config.runtime.as_deref(),
            )),
            Err(error) => {
                tell!("ward: cannot write the shrunk crash plan: {error}");
                None
            }
        },
    }
}

/// Prints and returns the command that replays the file at `path`, through the campaign's
/// runtime when it checked one.
fn replay_file(config: &CampaignConfig, path: &Path) -> String {
    let command = match &config.runtime {
        Some(runtime) => format!(
            "ward replay --runtime {} {}",
            single_quoted(runtime),
            quoted(path)
        ),
        None => format!("ward replay {}", quoted(path)),
    };
    tell!("replay: {command}");
    command
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
    use crate::crash::{self, file::PlanFile};
    use crate::shrink::plan as shrink;
    let bug = config.bug;
    let faults: ward_core::fault::FaultSet = bug.into_iter().collect();
    let runtime = config.runtime.as_deref();
    let exploration = crate::explore::explore_seed(seed, faults, runtime);
    let wanted = bug.map(Invariant::catching);
    let Some(target) = exploration.verdict.reported(wanted) else {
        return Ok(None);
    };
    let report = |stall: &crate::stall::Stall| {
        let replay = crate::campaign::crash_replay(seed, bug, config.runtime.as_deref());
        tell!("ward: shrinking: {stall}; replay: {replay}");
    };
    let shrunk = crate::stall::watched(config.stall_after, 1, report, |watchdog| {
        let plan = &exploration.plan;
        shrink::shrink(
            plan,
            faults,
            runtime,
            target,
            shrink::EXPLORATIONS_MAX,
            watchdog,
        )
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
        "The crash explorer's plan of seed {seed}, shrunk while it fails {} ({:?}): {}",
        target.invariant(),
        target.breach,
        target.message
    );
    let file = PlanFile::new(shrunk.plan.clone(), bug, description);
    std::fs::create_dir_all(directory)?;
    let bug_name = bug.map(|bug| format!("-{bug}")).unwrap_or_default();
    let path = directory.join(format!(
        "seed-{seed}-{}{bug_name}.crash.json",
        target.invariant()
    ));
    std::fs::write(&path, file.to_json() + "\n")?;
    Ok(Some(WrittenPlan {
        path,
        before: size(&exploration.plan),
        after: size(&shrunk.plan),
        explorations: shrunk.explorations,
    }))
}

/// Writes a shrunk scenario; returns its path.
fn write_failure(
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

/// `path` as one shell word: quoted when it holds anything but plain characters.
fn quoted(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c);
    match text.chars().all(plain) {
        true => text,
        false => single_quoted(&text),
    }
}
