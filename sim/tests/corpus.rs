//! The hand-written scenario corpus (`corpus/scenarios/`): one file per known failure of
//! agent runtimes. Each file states the result codes and terminal events the correct core
//! gives, and the seeded bug it must catch; this test checks both.

mod common;

use std::path::PathBuf;

use common::repository;
use ward_core::events::EventKind;
use ward_core::fault::{Fault, FaultSet};
use ward_sim::oracle::Invariant;
use ward_sim::scenario::{ExpectedRun, Scenario};
use ward_sim::simulate::{Checked, Engine};
use ward_sim::view::RunView;

fn corpus() -> Vec<(PathBuf, Scenario)> {
    let folder = repository().join("corpus/scenarios");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&folder)
        .expect("corpus/scenarios exists")
        .map(|entry| entry.expect("a readable entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "json")
        })
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "corpus/scenarios holds no scenario");
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let scenario = Scenario::from_json(&text, &path.display().to_string())
                .unwrap_or_else(|error| panic!("{error}"));
            (path, scenario)
        })
        .collect()
}

/// What the correct core did, in the expectation's shape.
fn observed(scenario: &Scenario, checked: &Checked) -> Vec<Vec<ExpectedRun>> {
    let mut sessions: Vec<Vec<ExpectedRun>> = vec![Vec::new(); scenario.sessions.len()];
    let scripts = scenario.sessions.iter().flat_map(|session| &session.runs);
    for (trace, script) in checked.trace.runs.iter().zip(scripts) {
        let view = RunView::new(trace, script);
        let (terminal, code) = match view.terminal().map(|event| &event.kind) {
            Some(EventKind::RunCompleted { .. }) => ("run.completed", None),
            Some(EventKind::RunFailed { error }) => ("run.failed", Some(error.code.clone())),
            Some(EventKind::RunCancelled) => ("run.cancelled", None),
            _ => ("none", None),
        };
        let batches = view
            .batches
            .iter()
            .map(|batch| {
                (0..batch.calls.len())
                    .map(|index| {
                        batch
                            .finished_of(index)
                            .next()
                            .map_or("MISSING".to_owned(), |finished| {
                                finished.result.error_code().unwrap_or("OK").to_owned()
                            })
                    })
                    .collect()
            })
            .collect();
        sessions[trace.session].push(ExpectedRun {
            terminal: terminal.to_owned(),
            code,
            batches,
        });
    }
    sessions
}

#[test]
fn every_corpus_scenario_passes_on_the_correct_core_with_its_stated_results() {
    let engine = Engine::new();
    for (path, scenario) in corpus() {
        assert!(
            scenario.bug.is_none(),
            "{}: corpus files run the correct core; name the bug under expect.catches",
            path.display()
        );
        let expect = scenario
            .expect
            .as_ref()
            .unwrap_or_else(|| panic!("{} states no expectation", path.display()));
        let checked = engine.check(&scenario, FaultSet::EMPTY);
        assert!(
            checked.verdict.violations.is_empty(),
            "{}: {:?}",
            path.display(),
            checked.verdict.violations
        );
        assert_eq!(
            observed(&scenario, &checked),
            expect.runs,
            "{}",
            path.display()
        );
        let mut again = engine.check(&scenario, FaultSet::EMPTY);
        engine.rerun(&scenario, FaultSet::EMPTY, &mut again);
        assert_eq!(
            again.verdict.first(Invariant::I11),
            None,
            "{}",
            path.display()
        );
    }
}

#[test]
fn every_corpus_scenario_catches_its_bug() {
    let engine = Engine::new();
    for (path, scenario) in corpus() {
        let catch = &scenario.expect.as_ref().unwrap().catches;
        let fault: Fault = catch
            .bug
            .parse()
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let invariant = Invariant::from_id(&catch.invariant).unwrap();
        let faults = FaultSet::only(fault);
        let mut checked = engine.check(&scenario, faults);
        if invariant == Invariant::I11 {
            engine.rerun(&scenario, faults, &mut checked);
        }
        let caught = checked.verdict.first(invariant).is_some();
        assert!(
            caught,
            "{}: {} was not caught by {invariant}; violations {:?}",
            path.display(),
            fault.name(),
            checked.verdict.violations
        );
    }
}
