//! Replays every committed input of the simulator's fuzz targets (`corpus/scenario/`,
//! `corpus/scenario_json/`, SPEC §13) through the check function the target calls, on
//! stable Rust, and the crashers of the structure-aware target kept as scenario files
//! (`corpus/scenarios/fuzz/`). One test per target.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ward_checks::CheckResult;
use ward_checks::scenario::{
    FuzzScenario, check_scenario_file, check_scenario_json, check_scenario_thoroughly,
};
use ward_sim::scenario::Scenario;

fn corpus(folder: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(folder)
}

/// The files of `folder`, sorted; the folder must hold at least one.
fn files(folder: &Path, extension: Option<&str>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap_or_else(|error| panic!("{}: {error}", folder.display()))
        .map(|entry| entry.expect("a readable corpus entry").path())
        .filter(|path| path.is_file())
        .filter(|path| {
            extension
                .is_none_or(|extension| path.extension().is_some_and(|found| found == extension))
        })
        .collect();
    paths.sort();
    assert!(
        !paths.is_empty(),
        "{} holds no input: the corpus must not be empty",
        folder.display()
    );
    paths
}

/// Runs `check` on every file of `corpus/<target>/` (`ward_checks::replay_folder`).
fn replay(target: &str, check: fn(&[u8]) -> CheckResult) {
    if let Err(failures) = ward_checks::replay_folder(&corpus(target), check) {
        panic!("{failures}");
    }
}

#[test]
fn replay_corpus_scenario() {
    replay("scenario", check_scenario_thoroughly);
}

#[test]
fn replay_corpus_scenario_json() {
    replay("scenario_json", check_scenario_json);
}

/// Crashers of the structure-aware target, written as scenario files (its binary corpus
/// goes stale when the `arbitrary` type changes; these do not).
#[test]
fn replay_scenario_crashers_as_files() {
    let folder = corpus("scenarios/fuzz");
    if !folder.is_dir() {
        return;
    }
    for path in files(&folder, Some("json")) {
        let text = std::fs::read_to_string(&path).expect("a readable scenario file");
        let scenario = Scenario::from_json(&text, &path.display().to_string())
            .unwrap_or_else(|error| panic!("{error}"));
        if let Err(failure) = check_scenario_file(&scenario) {
            panic!("{}: {failure}", path.display());
        }
    }
}

/// What the structure-aware corpus exercises: one label per choice a [`FuzzScenario`] can
/// make, so that minimising the corpus never silently drops a misbehaviour.
fn census(fuzz: &FuzzScenario, labels: &mut BTreeSet<String>) {
    let mut add = |label: String| {
        labels.insert(label);
    };
    if let Some(crashes) = &fuzz.crashes {
        for &(_, kind) in crashes
            .crashes
            .iter()
            .take(ward_checks::scenario::CRASHES_MAX)
        {
            let kind = ward_sim::crash::CrashKind::ALL[usize::from(kind) % 4];
            add(format!("crash {}", kind.name()));
        }
    }
    for session in &fuzz.sessions {
        if session.runs.len() > 1 {
            add("several runs".into());
        }
        for run in &session.runs {
            add(format!("read-only {}", run.read_only));
            if !run.disabled.is_empty() {
                add("switched-off tools".into());
            }
            if run.cancel_at_ms.is_some() {
                add("cancel".into());
            }
            if run.limits.turns_max.is_some() {
                add("turn limit".into());
            }
            if run.limits.calls_per_batch_max.is_some() {
                add("batch cap".into());
            }
            for piece in &run.prompt {
                add(format!("prompt {}", variant(piece)));
            }
            for answer in &run.answers {
                add(format!(
                    "answer {}",
                    answer.text.as_ref().map_or("none".into(), variant)
                ));
            }
            for (_, behaviour) in &run.tools {
                add(format!("effect {}", variant(&behaviour.effect)));
                add(format!("latency {}", variant(&behaviour.latency)));
            }
            for turn in &run.turns {
                if turn.error.is_some() {
                    add("provider error".into());
                }
                add(format!("provider delay {}", variant(&turn.delay)));
                if turn.retry_invalid {
                    add("react retry-invalid".into());
                }
                if turn.follow_injection {
                    add("react follow-injection".into());
                }
                for call in &turn.calls {
                    add(format!("id {}", variant(&call.id)));
                    add(format!("arguments {}", variant(&call.arguments)));
                    add(format!("tool {}", variant(&call.tool)));
                }
            }
        }
    }
}

/// The name of an enum value's variant, from its debug form.
fn variant(value: &impl std::fmt::Debug) -> String {
    let text = format!("{value:?}");
    text.split(['(', ' ', '{'])
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn the_scenario_corpus_exercises_every_choice() {
    let mut labels = BTreeSet::new();
    for path in files(&corpus("scenario"), None) {
        let data = std::fs::read(&path).expect("a readable corpus file");
        if let Some(fuzz) = FuzzScenario::decode(&data) {
            census(&fuzz, &mut labels);
        }
    }
    let expected = [
        "several runs",
        "read-only true",
        "read-only false",
        "switched-off tools",
        "cancel",
        "turn limit",
        "batch cap",
        "provider error",
        "react retry-invalid",
        "react follow-injection",
        "prompt Credential",
        "prompt Key",
        "prompt HomePath",
        "prompt UrlPassword",
        "prompt Configured",
        "prompt ConfiguredTouchingKey",
        "prompt OverlappingConfigured",
        "prompt Free",
        "effect Fail",
        "effect Panic",
        "effect LeakConfigured",
        "effect Inject",
        "latency Long",
        "provider delay Long",
        "answer none",
        "id Empty",
        "id Long",
        "id Repeat",
        "arguments Valid",
        "arguments Invalid",
        "arguments DuplicateKey",
        "arguments NotJson",
        "arguments Empty",
        "arguments EchoConfigured",
        "arguments Huge",
        "arguments Free",
        "tool Unknown",
        "crash kill",
        "crash powerLoss",
        "crash writeError",
        "crash syncError",
    ];
    let missing: Vec<&str> = expected
        .into_iter()
        .filter(|label| !labels.contains(*label))
        .collect();
    assert!(
        missing.is_empty(),
        "corpus/scenario never exercises {missing:?}"
    );
}
