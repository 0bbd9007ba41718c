//! The `ward tools` and `ward call` commands, run as a user would run them.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn ward(arguments: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ward"))
        .args(arguments)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ward starts");
    // A command may exit before reading its input; a closed pipe is not a test failure.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn envelope(arguments: &[&str], stdin: &str) -> Value {
    let output = ward(arguments, stdin);
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
    let output = ward(&["tools", "--json"], "");
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
        serde_json::from_slice(&ward(&["tools", "--json", "--with-code-interpreter"], "").stdout)
            .unwrap();
    assert_eq!(with_code.len(), 29);
}

#[test]
fn tools_read_only_lists_read_only_tools_only() {
    let output = ward(
        &["tools", "--json", "--read-only", "--with-code-interpreter"],
        "",
    );
    let tools: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(tools.len(), 11);
    assert!(tools.iter().all(|tool| tool["safety"] == "read-only"));
    let text = String::from_utf8(ward(&["tools", "--read-only"], "").stdout).unwrap();
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
        let output = ward(arguments, "");
        assert_eq!(output.status.code(), Some(2), "{arguments:?}");
        assert!(!output.stderr.is_empty());
    }
    let output = ward(&["call", "panes_list"], "\u{0}");
    assert_eq!(
        output.status.code(),
        Some(0),
        "NUL is valid UTF-8; the entry point answers"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_ward"))
        .args(["call", "panes_list"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
