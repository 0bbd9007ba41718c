//! The protocol end to end (SPEC §15): ward's own core behind `ward serve` leaves the same
//! trace as in process (P5), a seeded bug is caught through it, and a misbehaving adapter is
//! a violation that names what went wrong, never a hang or a panic, after which the campaign
//! goes on with a fresh process (P6).

use std::sync::Arc;
use std::time::Duration;

use ward_core::fault::Fault;
use ward_core::tool::{ExecutionMode, Safety};
use ward_sim::campaign::{self, CampaignConfig};
use ward_sim::host::process::ProcessHost;
use ward_sim::oracle::Invariant;
use ward_sim::protocol::{Runtime, ToAdapter, ToolDescription};
use ward_sim::simulate::Engine;

/// `ward serve`, from the binary cargo built for these tests.
fn serve(arguments: &str) -> String {
    format!("'{}' serve {arguments}", env!("CARGO_BIN_EXE_ward"))
}

/// What every broken adapter says first: a valid `ready`.
const READY: &str =
    r#"{"type":"ready","protocol":1,"runtime":{"name":"broken","version":"0"},"claims":[]}"#;
const IDLE: &str = r#"{"type":"idle","atMs":0}"#;

/// A one-job campaign over `seeds` against the adapter `command`, with `bug` steering
/// generation.
fn campaign_against(
    command: String,
    seeds: std::ops::Range<u64>,
    bug: Option<Fault>,
) -> CampaignConfig {
    CampaignConfig {
        seeds,
        jobs: 1,
        bug,
        shard: None,
        rerun_every: 0,
        runtime: Some(command),
        crashes: false,
        stall_after: None,
        pin: false,
    }
}

/// The explanation of the first violation of `seed` against `command`.
fn first_violation(command: &str, seed: u64) -> String {
    let engine = Engine::with_runtime_watchdog(command, Duration::from_millis(500));
    let outcome = engine.run_seed(seed, None, false);
    let violation = outcome.checked.verdict.violations.first().cloned();
    violation
        .map(|violation| violation.explanation)
        .unwrap_or_default()
}

#[test]
fn ward_serve_leaves_the_same_trace_as_the_core_in_process() {
    let in_process = Engine::new();
    let served = Engine::with_runtime(&serve(""));
    for seed in 0..150 {
        let here = in_process.run_seed(seed, None, false).checked;
        // Rerun through the pipe too: the same seed, the same messages (P4, I11).
        let there = served.run_seed(seed, None, true).checked;
        assert_eq!(here.verdict.violations, [], "seed {seed} in process");
        assert_eq!(
            there.verdict.violations,
            [],
            "seed {seed} through ward serve"
        );
        assert_eq!(
            here.digest, there.digest,
            "seed {seed}: the wire lost something"
        );
    }
    let ready = served.ready().expect("the adapter said ready");
    assert_eq!(ready.runtime.name, "ward-core");
    assert!(ready.claims.iter().any(|rule| rule == "R3"));
}

#[test]
fn a_pinned_campaign_leaves_the_same_digest_as_a_free_one() {
    // `--pin` decides where the processes run, never what they do (`ward_sim::host::pin`).
    let free = campaign_against(serve(""), 0..40, None);
    let pinned = CampaignConfig {
        jobs: 2,
        pin: true,
        ..free.clone()
    };
    let (free, pinned) = (
        campaign::run(&free, &|_| {}),
        campaign::run(&pinned, &|_| {}),
    );
    assert_eq!(free.failing_seeds, 0);
    assert_eq!(pinned.trace_digest, free.trace_digest);
    assert_eq!(
        (pinned.runs, pinned.tool_calls),
        (free.runs, free.tool_calls)
    );
}

/// An adapter that keeps its catalogue and answers every message with `idle`, writing each
/// line it reads to `log`.
fn keeping_adapter(log: &std::path::Path) -> String {
    let ready = r#"{"type":"ready","protocol":2,"catalogueKept":true,"runtime":{"name":"keeper","version":"0"},"claims":[]}"#;
    format!(
        r#"while IFS= read -r line; do printf '%s\n' "$line" >> '{}'; case "$line" in *'"hello"'*) echo '{ready}';; *) echo '{IDLE}';; esac; done"#,
        log.display()
    )
}

fn tool(name: &str) -> ToolDescription {
    ToolDescription {
        name: name.to_owned(),
        label: name.to_owned(),
        description: format!("The {name} tool."),
        parameters: serde_json::json!({"type": "object"}),
        safety: Safety::ReadOnly,
        execution_mode: ExecutionMode::Parallel,
    }
}

#[test]
fn a_reset_leaves_out_only_the_catalogue_the_process_was_last_sent() {
    let folder = std::env::temp_dir().join(format!("ward-kept-catalogue-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("a folder");
    let log = folder.join("in.jsonl");
    let command = keeping_adapter(&log);
    let one: Arc<[ToolDescription]> = Arc::from([tool("panes_list")]);
    let two: Arc<[ToolDescription]> = Arc::from([tool("panes_list"), tool("drawings_list")]);
    let reset = |seed, tools: &Arc<[ToolDescription]>| ToAdapter::Reset {
        seed,
        tools: Some(Arc::clone(tools)),
        store_dir: None,
    };
    let mut host = ProcessHost::spawn(&command).expect("the adapter starts");
    for (seed, tools) in [(1, &one), (2, &one), (3, &two), (4, &two), (5, &one)] {
        host.exchange(reset(seed, tools)).expect("idle");
    }
    // An equal catalogue that is not the same allocation is the same catalogue.
    let copy: Arc<[ToolDescription]> = Arc::from([tool("panes_list")]);
    host.exchange(reset(6, &copy)).expect("idle");
    drop(host);
    // A new process (a kill, a restart after a violation) is sent the catalogue again.
    let mut again = ProcessHost::spawn(&command).expect("the adapter starts");
    again.exchange(reset(7, &one)).expect("idle");
    drop(again);
    let lines = std::fs::read_to_string(&log).expect("the log");
    let resets: Vec<(u64, bool)> = lines
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("JSON"))
        .filter(|message| message["type"] == "reset")
        .map(|message| {
            (
                message["seed"].as_u64().unwrap(),
                message.get("tools").is_some(),
            )
        })
        .collect();
    let _ = std::fs::remove_dir_all(&folder);
    assert_eq!(
        resets,
        [
            (1, true),
            (2, false),
            (3, true),
            (4, false),
            (5, true),
            (6, false),
            (7, true)
        ]
    );
}

#[test]
fn a_seeded_bug_is_caught_through_the_protocol() {
    let engine = Engine::with_runtime(&serve("--bug no-turn-limit"));
    let caught = (0..200).find(|&seed| {
        let outcome = engine.run_seed(seed, Some(Fault::NoTurnLimit), false);
        outcome.checked.verdict.first(Invariant::I10).is_some()
    });
    assert!(
        caught.is_some(),
        "no-turn-limit through ward serve was not caught"
    );
}

#[test]
fn a_line_that_is_not_json_is_a_violation_naming_the_line() {
    let explanation = first_violation("echo hello", 0);
    assert!(
        explanation.contains("protocol violation: not JSON"),
        "{explanation}"
    );
    assert!(explanation.contains("in answer to hello"), "{explanation}");
    assert!(explanation.contains("the line: hello"), "{explanation}");
}

#[test]
fn an_adapter_that_exits_is_a_violation_with_its_status() {
    let explanation = first_violation("exit 3", 0);
    assert!(explanation.contains("the adapter exited"), "{explanation}");
    assert!(explanation.contains('3'), "{explanation}");
}

#[test]
fn a_message_the_protocol_does_not_know_is_a_violation_at_its_pointer() {
    let command = format!("read l; echo '{READY}'; read l; echo '{{\"type\":\"nap\"}}'; sleep 5");
    let explanation = first_violation(&command, 0);
    assert!(
        explanation.contains("not a message of the protocol"),
        "{explanation}"
    );
    assert!(explanation.contains("in answer to reset"), "{explanation}");
}

#[test]
fn an_answer_before_ready_is_a_violation() {
    let command = format!("read l; echo '{IDLE}'; sleep 5");
    let explanation = first_violation(&command, 0);
    assert!(explanation.contains("not ready"), "{explanation}");
}

#[test]
fn a_rollback_of_a_body_that_does_not_exist_is_a_violation() {
    let command = format!(
        "read l; echo '{READY}'; read l; echo '{IDLE}'; read l; echo '{{\"type\":\"rollback\",\"bodyId\":\"b9\"}}'; echo '{IDLE}'; sleep 5"
    );
    let explanation = first_violation(&command, 0);
    assert!(explanation.contains("rollback of b9"), "{explanation}");
}

#[test]
fn a_request_keeping_more_than_the_last_one_sent_is_a_violation() {
    // The run's first request claims to keep 3 messages of a request never sent.
    let request = r#"{"type":"modelRequest","requestId":"r0","systemPrompt":"","transcriptKept":3,"transcript":[],"tools":[]}"#;
    let command = format!(
        "read l; echo '{READY}'; read l; echo '{IDLE}'; read l; echo '{request}'; echo '{IDLE}'; sleep 5"
    );
    let explanation = first_violation(&command, 0);
    assert!(
        explanation.contains("keeps 3 messages of the last one's transcript, which held 0"),
        "{explanation}"
    );
}

#[test]
fn an_adapter_that_closes_its_output_and_lives_on_is_a_violation_not_a_hang() {
    let command = format!("read l; echo '{READY}'; exec 1>&-; sleep 30");
    let explanation = first_violation(&command, 0);
    assert!(
        explanation.contains("closed its output and had not exited 500 ms later"),
        "{explanation}"
    );
}

#[test]
fn an_adapter_whose_clock_never_moves_is_a_violation_not_a_hang() {
    // It answers every message, `advance` included, with idle at 0 ms.
    let command = format!("read l; echo '{READY}'; while read l; do echo '{IDLE}'; done");
    let explanation = first_violation(&command, 0);
    assert!(
        explanation.contains("each answered idle at 0 ms with nothing done"),
        "{explanation}"
    );
}

#[test]
fn an_adapter_that_never_answers_is_stopped_by_the_watchdog() {
    let command = format!("read l; echo '{READY}'; sleep 30");
    let explanation = first_violation(&command, 0);
    assert!(
        explanation.contains("no idle within 500 ms"),
        "{explanation}"
    );
}

#[test]
fn an_adapter_that_writes_without_end_and_without_idle_is_stopped_by_the_watchdog() {
    // Three million valid lines (seconds of ward's reading) and no `idle`: the stream is timed
    // out and the adapter's group killed before it ends, so the marker it would write at its
    // end is never written. (That a read whose bytes are there at once reads the clock too is
    // `process.rs`'s own test: a pipe runs dry now and then, which times the flood out anyway.)
    let marker = std::env::temp_dir().join(format!("ward-flood-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let flood = r#"yes '{"type":"modelCancel","requestId":"r"}' | head -n 3000000"#;
    let command = format!(
        "read l; echo '{READY}'; read l; {flood}; touch {}; sleep 30",
        marker.display()
    );
    let explanation = first_violation(&command, 0);
    assert!(
        explanation.contains("no idle within 500 ms"),
        "{explanation}"
    );
    assert!(!marker.exists(), "the stream was read to its end");
}

#[test]
fn a_slow_start_is_not_a_hang_but_a_hello_never_answered_is() {
    // The handshake holds the process's start: three watchdogs of 500 ms pass, six do not.
    let slow = format!("sleep 1.5; {}", serve(""));
    assert_eq!(first_violation(&slow, 0), "");
    let explanation = first_violation("sleep 30", 0);
    assert!(
        explanation.contains("no idle within 3000 ms, in answer to hello"),
        "{explanation}"
    );
}

#[test]
fn a_campaign_goes_on_past_an_adapter_killed_mid_run_and_names_it() {
    // The adapter's input is cut after 60 lines: `ward serve` sees its input end and exits
    // in the middle of a scenario; every later scenario gets a fresh process and the same fate.
    let command = format!(
        "i=0; while [ $i -lt 60 ] && read -r l; do printf '%s\\n' \"$l\"; i=$((i+1)); done | {}",
        serve("")
    );
    let config = campaign_against(command, 0..6, None);
    let report = campaign::run(&config, &|_| {});
    assert_eq!(report.seeds, 6, "the campaign stopped early");
    let failure = report.first_failure.expect("the killed adapter is named");
    assert_eq!(failure.failure.invariant(), Invariant::P6);
    assert!(
        failure.failure.explanation().contains("the adapter exited"),
        "{}",
        failure.failure.explanation()
    );
}

#[test]
fn an_invariant_resting_on_an_unclaimed_rule_is_reported_not_claimed() {
    // ward's core with a bug that breaks R7, behind an adapter that does not claim R7.
    let command = format!(
        "{} | sed -u 's/\"R7\",//'",
        serve("--bug error-echoes-value")
    );
    let config = campaign_against(command, 0..40, Some(Fault::ErrorEchoesValue));
    let report = campaign::run(&config, &|_| {});
    let ready = report.runtime.as_ref().expect("the adapter said ready");
    assert!(!ready.claims.iter().any(|rule| rule == "R7"));
    let summary = report.to_summary(&config, None);
    let i4 = summary.by_invariant["I4"];
    assert!(!i4.claimed);
    assert_eq!(i4.violated, 0, "an unclaimed invariant is never violated");
    assert!(i4.not_claimed > 0, "the bug broke I4 in no run");
    assert!(summary.by_invariant["I1"].claimed);
    let json = serde_json::to_value(&summary).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(ward_sim::summary::SUMMARY_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(
        validator.is_valid(&json),
        "the summary does not match its schema: {json}"
    );
    assert_eq!(json["byInvariant"]["I4"]["claimed"], false);
    assert_eq!(json["runtime"]["name"], "ward-core");
}

#[test]
fn a_broken_protocol_is_a_finding_even_when_the_runtime_claims_nothing() {
    // `ready` claims no rule, so every invariant is unclaimed; the garbage after it still fails.
    let command = format!("read l; echo '{READY}'; read l; echo garbage");
    let config = campaign_against(command, 0..3, None);
    let report = campaign::run(&config, &|_| {});
    assert_eq!(
        report.failing_seeds, 3,
        "a protocol violation was dropped as not claimed"
    );
    let failure = report
        .first_failure
        .as_ref()
        .expect("the violation is reported");
    assert_eq!(failure.failure.invariant(), Invariant::P6);
    assert!(
        failure.failure.explanation().contains("not JSON"),
        "{}",
        failure.failure.explanation()
    );
    // A row and a count of its own, in the summary and its JSON, whatever the claims.
    let summary = report.to_summary(&config, None);
    assert_eq!(summary.violations, 3);
    let protocol = summary.by_invariant["P6"];
    assert_eq!((protocol.violated, protocol.claimed), (3, true));
    assert_eq!(protocol.first_seed, Some(0));
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["byInvariant"]["P6"]["violated"], 3);
    assert!(json["byInvariant"]["I14"]["claimed"] == false);
    assert_eq!(json["byInvariant"]["I14"]["violated"], 0);
}
