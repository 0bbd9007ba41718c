//! Drop mode (SPEC §17 P9, P12): the crash explorer's plans, crashed at lockstep boundaries,
//! give the same trace, the same bytes on disk and the same durable verdicts in process
//! (ward's core on real files) and through `ward serve --store DIR`, seed by seed, with the
//! correct core and with a seeded bug; played in kill mode (`SIGKILL` to the adapter's whole
//! process group) at the same boundaries they give the same digests again; `ward run
//! --crashes --runtime CMD` reports I15–I19 for a durable adapter and refuses one that
//! declares no store; an adapter that dies in `recover`, cannot open its store after a crash
//! or hangs after one is a violation naming the crash, never a hang of ward.

mod common;

use common::{last_line, ward};
use ward_core::fault::{Fault, FaultSet};
use ward_sim::crash::CrashKind;
use ward_sim::explore::{explore_on, explore_seed};

/// Seeds compared seed by seed.
const SEEDS: u64 = 60;

fn serve(bug: Option<Fault>) -> String {
    let bug = bug.map_or(String::new(), |bug| format!(" --bug {}", bug.name()));
    // The directory is the fallback for a reset without one; every reset here gives one.
    let base = std::env::temp_dir().join("ward-drop-mode-unused");
    format!(
        "'{}' serve --store '{}'{bug}",
        env!("CARGO_BIN_EXE_ward"),
        base.display()
    )
}

/// Plans drawn against `ward serve`, explored there and in process: the same digest and the
/// same verdict; returns how many drops happened.
fn same_in_process_and_over_the_wire(seeds: std::ops::Range<u64>, bug: Option<Fault>) -> usize {
    let faults: FaultSet = bug.into_iter().collect();
    let command = serve(bug);
    let mut drops = 0;
    for seed in seeds {
        let wire = explore_seed(seed, faults, Some(&command));
        assert!(
            wire.plan
                .crashes
                .iter()
                .all(|crash| crash.kind == CrashKind::Drop),
            "seed {seed}: {:?}",
            wire.plan.crashes
        );
        let here = explore_on(&wire.plan, faults, None);
        assert_eq!(here.crashed.failure, wire.crashed.failure, "seed {seed}");
        assert_eq!(
            here.digest(),
            wire.digest(),
            "seed {seed}: in process and through ward serve differ"
        );
        assert_eq!(here.verdict.breaches, wire.verdict.breaches, "seed {seed}");
        drops += wire.crashes()[CrashKind::ALL.len()] as usize;
    }
    drops
}

/// An adapter that is `ward serve --store` with `filter`, a shell loop over ward's lines,
/// in front of its standard input: its command.
fn behind(folder: &std::path::Path, filter: &str) -> String {
    let script = folder.join("adapter.sh");
    std::fs::write(&script, format!("#!/bin/sh\n{filter} | {}\n", serve(None))).unwrap();
    format!("sh '{}'", script.display())
}

/// `ward run --crashes --runtime command --seeds seeds --jobs 1 --json` (failures under
/// `out`): its exit status and summary.
fn crash_campaign(
    command: &str,
    seeds: &str,
    out: Option<&std::path::Path>,
) -> (Option<i32>, serde_json::Value) {
    let mut arguments = vec![
        "run",
        "--crashes",
        "--runtime",
        command,
        "--seeds",
        seeds,
        "--jobs",
        "1",
        "--json",
    ];
    let out = out.map(|out| out.to_string_lossy().into_owned());
    if let Some(out) = &out {
        arguments.extend(["--out", out.as_str()]);
    }
    let output = ward(&arguments);
    let summary = last_line(&String::from_utf8_lossy(&output.stdout));
    (output.status.code(), summary)
}

#[test]
fn the_core_dropped_at_boundaries_is_the_same_in_process_and_through_ward_serve() {
    let drops = same_in_process_and_over_the_wire(0..SEEDS, None);
    println!("{SEEDS} plans, {drops} drops: the same digests and verdicts");
    assert!(
        drops > SEEDS as usize,
        "most plans drop the runtime: {drops}"
    );
    for seed in 0..SEEDS {
        let exploration = explore_seed(seed, FaultSet::EMPTY, Some(&serve(None)));
        assert_eq!(exploration.verdict.breaches, [], "seed {seed}");
    }
}

#[test]
fn a_seeded_bug_is_caught_the_same_way_in_process_and_through_ward_serve() {
    let bug = Fault::TurnsResetOnResume;
    same_in_process_and_over_the_wire(0..20, Some(bug));
    let caught = (0..200).any(|seed| {
        let exploration = explore_seed(seed, FaultSet::only(bug), Some(&serve(Some(bug))));
        (exploration.verdict.breaches.iter()).any(|breach| breach.invariant().id() == "I19")
    });
    assert!(
        caught,
        "{bug} caught by I19 through ward serve within 200 plans"
    );
}

#[test]
fn a_crash_campaign_against_an_adapter_reports_every_durable_invariant() {
    let command = serve(None);
    let (status, summary) = crash_campaign(&command, "0..30", None);
    assert_eq!(status, Some(0), "{summary}");
    assert_eq!(summary["violations"], 0);
    for invariant in ["I15", "I16", "I17", "I18", "I19"] {
        assert!(
            summary["byInvariant"][invariant]["armed"].as_u64().unwrap() > 0,
            "{invariant}: {summary}"
        );
    }
    assert!(summary["crashes"]["crashes"]["drop"].as_u64().unwrap() > 0);
    // Plans 0 and 20 were played in kill mode too, and gave the same digests (P9).
    assert!(summary["byInvariant"]["I11"]["armed"].as_u64().unwrap() >= 2);
    assert_eq!(summary["byInvariant"]["I11"]["violated"], 0);
    // The durability profile (P11): a model request cut by a drop is asked again, and a
    // body of R32 cut by one gets OUTCOME_UNKNOWN, never a rerun.
    let profile = &summary["crashes"]["profile"];
    assert!(
        profile["in a model request"]["asked again"]
            .as_u64()
            .unwrap()
            > 0,
        "{profile}"
    );
    assert!(
        profile["in an outside-effect body"]
            .get("ran again")
            .is_none(),
        "{profile}"
    );
}

#[test]
fn a_crash_campaign_against_a_runtime_without_a_store_is_refused() {
    let command = format!("'{}' serve", env!("CARGO_BIN_EXE_ward"));
    let output = ward(&["run", "--crashes", "--runtime", &command, "--seeds", "0..3"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("declares no durable store"), "{stderr}");
}

#[test]
fn an_adapter_that_dies_in_recover_is_a_durability_violation_naming_the_crash() {
    // `ward serve` behind a filter that ends the adapter when `recover` comes.
    let folder = common::folder("dies-in-recover");
    let filter = r#"while IFS= read -r line; do case "$line" in *'"type":"recover"'*) exit 3;; esac; printf '%s\n' "$line"; done"#;
    let command = behind(&folder, filter);
    let (status, summary) = crash_campaign(&command, "0..2", Some(&folder));
    assert_eq!(status, Some(1), "{summary}");
    let failure = &summary["firstFailure"];
    assert_eq!(failure["invariant"], "I16", "{summary}");
    let explanation = failure["explanation"].as_str().unwrap();
    assert!(
        explanation.contains("in answer to recover"),
        "{explanation}"
    );
    assert!(
        explanation.contains("(the crash: crashed after answer "),
        "{explanation}"
    );
    assert!(
        failure["replay"].as_str().unwrap().contains("--runtime"),
        "{summary}"
    );
}

#[test]
fn an_adapter_that_cannot_open_its_store_after_a_crash_is_a_violation_naming_it() {
    // `ward serve` behind a filter that, at the first reset after a crash, says it cannot
    // open the store and exits, as an adapter whose store will not open does.
    let folder = common::folder("store-refused");
    let filter = r#"crashed=0; while IFS= read -r line; do case "$line" in *'"type":"crash"'*) crashed=1;; *'"type":"reset"'*) if [ $crashed = 1 ]; then echo 'cannot open the store: database disk image is malformed' >&2; exit 3; fi;; esac; printf '%s\n' "$line"; done"#;
    let command = behind(&folder, filter);
    let (status, summary) = crash_campaign(&command, "0..3", Some(&folder));
    assert_eq!(status, Some(1), "{summary}");
    let failure = &summary["firstFailure"];
    assert_eq!(failure["invariant"], "I16", "{summary}");
    let explanation = failure["explanation"].as_str().unwrap();
    for said in [
        "in answer to reset",
        "cannot open the store: database disk image is malformed",
        "(the crash: crashed after answer ",
    ] {
        assert!(explanation.contains(said), "{said}: {explanation}");
    }
}

#[test]
fn an_adapter_that_hangs_after_a_crash_is_stopped_by_the_watchdog_and_named() {
    // `ward serve` behind a filter that stops answering at `crash`. The plan is explored
    // once (a campaign would also shrink it, each candidate waiting out the watchdog).
    let folder = common::folder("hangs-after-crash");
    let filter = r#"while IFS= read -r line; do case "$line" in *'"type":"crash"'*) sleep 60;; esac; printf '%s\n' "$line"; done"#;
    let command = behind(&folder, filter);
    let explored = explore_seed(0, FaultSet::EMPTY, Some(&command));
    let said: Vec<&str> = (explored.verdict.breaches.iter())
        .map(|breach| breach.message.as_str())
        .collect();
    assert!(
        said.iter()
            .any(|message| message.contains("no idle within")
                && message.contains("in answer to crash")),
        "{said:?}"
    );
}
