//! The `ward tools` and `ward call` commands, run as a user would run them.

mod common;

use std::io::Write;
use std::process::Stdio;

use common::{folder, spawn_ward, ward, ward_with_input};
use serde_json::Value;

fn envelope(arguments: &[&str], stdin: &str) -> Value {
    let output = ward_with_input(arguments, stdin);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "one envelope line: {text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn tools_json_lists_the_catalogue_with_safety_and_mode() {
    let output = ward(&["tools", "--json"]);
    assert_eq!(output.status.code(), Some(0));
    let tools: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(tools.len(), 28);
    let find = |name: &str| {
        tools
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(find("panes_list")["safety"], "read-only");
    assert_eq!(find("panes_list")["executionMode"], "parallel");
    assert_eq!(find("ask_user")["executionMode"], "sequential");
    assert_eq!(find("drawing_create")["safety"], "destructive");
    assert_eq!(
        find("drawing_create")["parameters"]["additionalProperties"],
        false
    );
    for tool in &tools {
        for key in ["name", "label", "safety", "executionMode", "parameters"] {
            assert!(tool.get(key).is_some(), "{key} missing in {tool}");
        }
    }
    let with_code: Vec<Value> =
        serde_json::from_slice(&ward(&["tools", "--json", "--with-code-interpreter"]).stdout)
            .unwrap();
    assert_eq!(with_code.len(), 29);
}

#[test]
fn tools_read_only_lists_read_only_tools_only() {
    let output = ward(&["tools", "--json", "--read-only", "--with-code-interpreter"]);
    let tools: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(tools.len(), 11);
    assert!(tools.iter().all(|tool| tool["safety"] == "read-only"));
    let text = String::from_utf8(ward(&["tools", "--read-only"]).stdout).unwrap();
    assert!(text.contains("ask_user") && !text.contains("destructive"));
}

#[test]
fn an_invalid_input_is_an_envelope_at_its_pointer_without_the_value() {
    let result = envelope(
        &["call", "market_bars_query"],
        r#"{"symbol":"sk-notechoed123456"}"#,
    );
    assert_eq!(result["success"], false);
    assert_eq!(result["stateChanged"], false);
    let result = envelope(&["call", "market_bars_query"], r#"{"symbol":1}"#);
    let error = &result["error"];
    assert_eq!(error["code"], "TOOL_INPUT_INVALID");
    assert_eq!(error["retryable"], true);
    assert_eq!(result["stateChanged"], false);
    let paths: Vec<&str> = error["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|field| field["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/symbol"));
    let many = r#"{"symbol":1,"period":"x","adjustment":"y","limit":0,"a":1,"b":2,"c":3,"d":4,"e":5,"f":6}"#;
    let result = envelope(&["call", "market_bars_query"], many);
    assert_eq!(result["error"]["fields"].as_array().unwrap().len(), 5);
    let result = envelope(&["call", "panes_list"], "{");
    let fields = result["error"]["fields"].as_array().unwrap();
    assert_eq!(fields.len(), 1);
    assert_eq!(fields[0]["path"], "/");
}

#[test]
fn refusals_are_envelopes_with_exit_code_zero() {
    let result = envelope(&["call", "drawings_clear", "--read-only"], "");
    assert_eq!(result["error"]["code"], "TOOL_NOT_ALLOWED");
    assert_eq!(result["error"]["retryable"], false);
    let result = envelope(&["call", "panes_list", "--disable", "panes_list"], "");
    assert_eq!(result["error"]["code"], "TOOL_NOT_ALLOWED");
    let result = envelope(&["call", "no_such_tool"], "{}");
    assert_eq!(result["error"]["code"], "TOOL_NOT_FOUND");
    let missing = r#"{"kind":"trend-line","paneId":"pane-9","anchors":[{"price":1},{"price":2}]}"#;
    let result = envelope(&["call", "drawing_create"], missing);
    assert_eq!(result["error"]["code"], "UNKNOWN_PANE_ID");
    assert_eq!(
        result["error"]["recommendedAction"],
        "Use one of the pane ids: main, pane-1, pane-2."
    );
    let huge = format!(r#"{{"query":"{}"}}"#, "x".repeat(300 * 1024));
    let result = envelope(&["call", "web_search"], &huge);
    assert_eq!(result["error"]["code"], "PAYLOAD_TOO_LARGE");
    let result = envelope(
        &["call", "web_search", "--secret", "provider-key-123"],
        r#"{"query":"provider-key-123"}"#,
    );
    assert_eq!(result["error"]["code"], "SECRET_IN_INPUT");
    let result = envelope(&["call", "settings_update"], r#"{"theme":"dark"}"#);
    assert_eq!(result["success"], true);
    assert_eq!(result["stateChanged"], true);
}

#[test]
fn misuse_exits_two_with_a_message() {
    for arguments in [
        &["call"][..],
        &["call", "x", "--secret", "short"],
        &["tools", "--bogus"],
        &["no-such-command"],
    ] {
        let output = ward(arguments);
        assert_eq!(output.status.code(), Some(2), "{arguments:?}");
        assert!(!output.stderr.is_empty());
    }
    let output = ward_with_input(&["call", "panes_list"], "\u{0}");
    assert_eq!(
        output.status.code(),
        Some(0),
        "NUL is valid UTF-8; the entry point answers"
    );
    let mut child = spawn_ward(&["call", "panes_list"], Stdio::piped());
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&[b'{', 0xff, b'}'])
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not UTF-8"));
}

#[test]
fn run_and_replay_refuse_bad_input_with_a_message() {
    let output = ward(&["run", "--seeds", "5..1"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("empty"));
    for arguments in [
        &["run", "--shard", "3/2"][..],
        &["run", "--bug", "no-such-bug"],
        &["replay", "/no/such/file.json"],
    ] {
        let output = ward(arguments);
        assert_eq!(output.status.code(), Some(2), "{arguments:?}");
    }
    let folder = folder("misspelled");
    let file = folder.join("misspelled.json");
    std::fs::write(&file, r#"{"version": 1, "sessions": [{"runs": [{"prompt": "x", "turns": [], "readOnyl": true}]}]}"#).unwrap();
    let output = ward(&["replay", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(
        message.contains("/sessions/0/runs/0") && message.contains("readOnyl"),
        "{message}"
    );
}

#[test]
fn a_small_campaign_holds_and_replay_writes_traces() {
    let output = ward(&["run", "--seeds", "0..40", "--jobs", "2", "--json"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let report: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(report["violations"], 0);
    assert_eq!(report["seeds"], 40);
    // The exact line counts what the runtime matched, beside what was checked and predicted.
    let exact = &report["exact"];
    let (matched, checked) = (&exact["inputErrorsMatched"], &exact["inputErrors"]);
    assert!(
        matched.as_u64().unwrap() > 0 && matched == checked,
        "{exact}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line =
        format!("exact: the runtime matched {matched} of {checked} input error lists (100.0%;");
    assert!(stderr.contains(&line), "{stderr}");
    for key in [
        "runs",
        "toolCalls",
        "byInvariant",
        "misbehaviours",
        "elapsedMs",
        "runsPerSec",
        "traceDigest",
    ] {
        assert!(report.get(key).is_some(), "{key} missing");
    }
    let one = ward(&["run", "--seeds", "0..40", "--jobs", "1", "--json"]);
    let single: Value = serde_json::from_str(
        String::from_utf8(one.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(single["traceDigest"], report["traceDigest"]);

    let folder = folder("traces");
    let (jsonl, chrome) = (folder.join("t.jsonl"), folder.join("t.json"));
    let output = ward(&[
        "replay",
        "42",
        "--trace",
        jsonl.to_str().unwrap(),
        "--chrome-trace",
        chrome.to_str().unwrap(),
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let document: Value = serde_json::from_str(&std::fs::read_to_string(&chrome).unwrap()).unwrap();
    assert!(!document["traceEvents"].as_array().unwrap().is_empty());
    let lines = std::fs::read_to_string(&jsonl).unwrap();
    assert!(
        lines
            .lines()
            .all(|line| serde_json::from_str::<Value>(line).is_ok())
    );
    assert!(lines.contains("\"record\":\"request\""));
}

#[test]
fn seed_digests_name_every_seed_and_what_it_violated() {
    let folder = folder("seed-digests");
    let (two, one) = (folder.join("two.tsv"), folder.join("one.tsv"));
    for (jobs, file) in [("2", &two), ("1", &one)] {
        let output = ward(&[
            "run",
            "--seeds",
            "3..40",
            "--jobs",
            jobs,
            "--seed-digests",
            file.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
    }
    let text = std::fs::read_to_string(&two).unwrap();
    assert_eq!(text, std::fs::read_to_string(&one).unwrap());
    let seeds: Vec<&str> = text
        .lines()
        .map(|line| line.split('\t').next().unwrap())
        .collect();
    let expected: Vec<String> = (3..40).map(|seed| seed.to_string()).collect();
    assert_eq!(seeds, expected);
    assert!(text.lines().all(|line| line.ends_with("\t-\t-")), "{text}");

    // With crashes and a bug of durable sessions: the plan's digest, and the invariant.
    let file = folder.join("crashes.tsv");
    let output = ward(&[
        "run",
        "--crashes",
        "--bug",
        "turns-reset-on-resume",
        "--seeds",
        "0..2",
        "--out",
        folder.to_str().unwrap(),
        "--seed-digests",
        file.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let text = std::fs::read_to_string(&file).unwrap();
    let first: Vec<&str> = text.lines().next().unwrap().split('\t').collect();
    assert_eq!(first[0], "0");
    assert!(first[2].len() == 16 && first[3].contains("I19"), "{text}");

    let output = ward(&[
        "run",
        "--seeds",
        "0..2",
        "--seed-digests",
        "/no/such/dir/d.tsv",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("/no/such/dir/d.tsv"));
}

#[test]
fn a_seeded_bug_is_reported_shrunk_and_replayable() {
    let folder = folder("failures");
    let output = ward(&[
        "run",
        "--seeds",
        "0..60",
        "--bug",
        "readonly-offers-writes",
        "--json",
        "--out",
        folder.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_str(
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(report["firstFailure"]["invariant"], "I1");
    let replay = report["firstFailure"]["replay"].as_str().unwrap();
    let file = replay.strip_prefix("ward replay ").unwrap();
    let output = ward(&["replay", file]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stdout).contains("violated: I1"));
}

#[test]
fn bugs_lists_the_catalogue() {
    let output = ward(&["bugs", "--json"]);
    let bugs: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(bugs.len(), 27);
    assert!(bugs.iter().all(|bug| bug["name"].is_string()
        && bug["invariant"].is_string()
        && bug["description"].is_string()));
}

/// Runs `ward ARGUMENTS` with its standard output closed by the reader from the start; its
/// exit status and standard error.
fn ward_without_reader(arguments: &[&str]) -> (Option<i32>, String) {
    let mut child = spawn_ward(arguments, Stdio::null());
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("ward ends");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_reader_that_goes_away_ends_the_program_quietly() {
    // A process spawned by a test running in parallel may hold the read end for an instant
    // (between its fork and its exec), so a write can still succeed: the program then ends
    // normally. What must never happen is a panic or a message; and the broken-pipe path
    // must be taken at least once.
    let mut broken = 0;
    for _attempt in 0..10 {
        for arguments in [&["tools", "--json"][..], &["bugs"], &["replay", "42"]] {
            let (status, stderr) = ward_without_reader(arguments);
            assert!(
                matches!(status, Some(0 | 141)),
                "{arguments:?}: {status:?} {stderr}"
            );
            assert!(stderr.is_empty(), "{arguments:?}: {stderr}");
            broken += usize::from(status == Some(141));
        }
    }
    assert!(broken > 0, "no run saw its reader gone");
}

#[test]
fn a_bug_of_durable_sessions_is_caught_with_crashes_and_refused_without() {
    let refused = ward(&["run", "--seeds", "0..10", "--bug", "raw-prompt-journaled"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("add --crashes"));
    let folder = folder("crash-plans");
    let output = ward(&[
        "run",
        "--crashes",
        "--seeds",
        "0..20",
        "--jobs",
        "1",
        "--json",
        "--bug",
        "raw-prompt-journaled",
        "--out",
        folder.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let failure = &summary["firstFailure"];
    assert_eq!(failure["invariant"], "I18");
    assert_eq!(failure["seed"], 0);
    // The durable failure counts like any other: in `violations` and in `byInvariant`.
    assert!(summary["violations"].as_u64().unwrap() > 0, "{summary}");
    assert!(summary["byInvariant"]["I18"]["violated"].as_u64().unwrap() > 0);
    assert_eq!(summary["byInvariant"]["I18"]["firstSeed"], 0);
    // The failing plan, shrunk, is a file that replays as the same failure, with its steps.
    let replay = failure["replay"].as_str().unwrap();
    let file = replay.strip_prefix("ward replay ").unwrap();
    assert!(
        file.ends_with("seed-0-I18-raw-prompt-journaled.crash.json"),
        "{file}"
    );
    let trace = folder.join("plan.jsonl");
    let replayed = ward(&["replay", file, "--trace", trace.to_str().unwrap()]);
    assert_eq!(replayed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&replayed.stdout).contains("violated: I18: write "));
    let steps = std::fs::read_to_string(&trace).unwrap();
    // The trace is what crossed the seam, as for a scenario: the run's start, its messages,
    // its report.
    assert!(
        steps
            .lines()
            .next()
            .unwrap()
            .contains(r#""type":"run.started""#),
        "{steps}"
    );
    assert!(steps.contains(r#""record":"report""#), "{steps}");
    // A seed's plan replays with --crashes; without, the bug is refused for a scenario.
    let seed = ward(&["replay", "--crashes", "0", "--bug", "raw-prompt-journaled"]);
    assert_eq!(seed.status.code(), Some(1));
    let replay = ward(&["replay", "0", "--bug", "raw-prompt-journaled"]);
    assert_eq!(replay.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&replay.stderr).contains("ward replay --crashes SEED"));
}

#[test]
fn a_bad_crash_plan_file_is_refused_naming_its_fault() {
    let folder = folder("bad-plan");
    let file = folder.join("plan.json");
    std::fs::write(
        &file,
        r#"{"version": 1, "crashPlan": {"seed": 1, "secrets": [], "planted": [], "runs": [], "crashes": []}}"#,
    )
    .unwrap();
    let output = ward(&["replay", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("at /crashPlan/runs"), "{stderr}");
    // Crashes out of order, and drops mixed with crashes at storage calls.
    let run = r#"{"prompt": "Mark it.", "readOnly": false, "disabled": [], "turnsMax": 1, "replies": []}"#;
    for (crashes, pointer) in [
        (
            r#"[{"at": 9, "kind": "kill"}, {"at": 3, "kind": "kill"}]"#,
            "at /crashPlan/crashes/1/at",
        ),
        (
            r#"[{"at": 3, "kind": "drop"}, {"at": 9, "kind": "kill"}]"#,
            "at /crashPlan/crashes",
        ),
    ] {
        let text = format!(
            r#"{{"version": 1, "crashPlan": {{"seed": 1, "secrets": [], "planted": [], "runs": [{run}], "crashes": {crashes}}}}}"#
        );
        std::fs::write(&file, text).unwrap();
        let output = ward(&["replay", file.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(pointer), "{stderr}");
    }
}

#[test]
fn an_adapter_that_writes_a_line_that_is_not_json_has_a_protocol_row_and_count() {
    // It claims nothing, so every invariant is `not claimed`; the protocol still counts.
    let ready =
        r#"{"type":"ready","protocol":1,"runtime":{"name":"broken","version":"0"},"claims":[]}"#;
    let adapter = format!("read l; echo '{ready}'; read l; echo garbage");
    // Its shrunk failure goes to a folder of the test's own, not the working tree.
    let folder = folder("protocol-row");
    let output = ward(&[
        "run",
        "--runtime",
        &adapter,
        "--seeds",
        "0..3",
        "--jobs",
        "1",
        "--json",
        "--out",
        folder.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let row = stderr
        .lines()
        .find(|line| line.starts_with("P6 "))
        .unwrap_or_else(|| panic!("no protocol row:\n{stderr}"));
    let counts: Vec<&str> = row.split_whitespace().take(3).collect();
    assert_eq!(counts, ["P6", "3", "3"], "{row}");
    assert!(stderr.contains("3 seeds violated an invariant"), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["violations"], 3);
    assert_eq!(summary["byInvariant"]["P6"]["violated"], 3);
    assert_eq!(summary["firstFailure"]["invariant"], "P6");
    assert!(
        (summary["firstFailure"]["explanation"].as_str().unwrap()).contains("not JSON"),
        "{summary}"
    );
}
