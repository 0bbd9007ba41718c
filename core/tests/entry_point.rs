//! The registry (R1–R4) and its single entry point, in R3's order, with every code of
//! SPEC §4.

mod support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use support::code;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use ward_core::chart::SharedChart;
use ward_core::chart::tools::{CatalogueOptions, register_tools, registry};
use ward_core::envelope::{ToolError, ToolResult};
use ward_core::guard::SecretGuard;
use ward_core::policy::{self, RunPolicy};
use ward_core::registry::{Registry, RegistryBuilder, RegistryError};
use ward_core::tool::{ExecutionMode, Safety, ToolBody, ToolCall, ToolContext, ToolSpec};

const SECRET: &str = "search-KEY-0a1b2c3d4e";

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        label: "A tool".to_owned(),
        description: "Does a thing.".to_owned(),
        parameters: json!({"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": false}),
        safety: Safety::ReadOnly,
        execution_mode: ExecutionMode::Parallel,
    }
}

fn noop(_: &ToolContext, _: Value) -> Result<Value, ToolError> {
    Ok(json!({}))
}

fn refusal(refused: ToolSpec) -> RegistryError {
    let mut builder = RegistryBuilder::new();
    builder.register(spec("taken"), noop).unwrap();
    builder.register(refused, noop).unwrap_err()
}

#[test]
fn registration_refuses_everything_r2_lists() {
    let cases: Vec<(ToolSpec, &str)> = vec![
        (
            ToolSpec {
                name: "  ".into(),
                ..spec("x")
            },
            "EmptyName",
        ),
        (
            ToolSpec {
                name: "has space".into(),
                ..spec("x")
            },
            "InvalidName",
        ),
        (
            ToolSpec {
                name: "naïve".into(),
                ..spec("x")
            },
            "InvalidName",
        ),
        (
            ToolSpec {
                name: "a".repeat(65),
                ..spec("x")
            },
            "InvalidName",
        ),
        (
            ToolSpec {
                label: " ".into(),
                ..spec("x")
            },
            "EmptyLabel",
        ),
        (
            ToolSpec {
                description: "\n".into(),
                ..spec("x")
            },
            "EmptyDescription",
        ),
        (
            ToolSpec {
                parameters: json!({"type": "string"}),
                ..spec("x")
            },
            "ParametersNotObject",
        ),
        (
            ToolSpec {
                parameters: json!(true),
                ..spec("x")
            },
            "ParametersNotObject",
        ),
        (
            ToolSpec {
                parameters: json!({"type": "object", "properties": {"n": {"type": 5}}}),
                ..spec("x")
            },
            "SchemaDoesNotCompile",
        ),
        (spec("taken"), "NameConflict"),
        (
            ToolSpec {
                safety: Safety::Destructive,
                execution_mode: ExecutionMode::Parallel,
                ..spec("x")
            },
            "DestructiveParallel",
        ),
    ];
    for (spec, expected) in cases {
        let error = refusal(spec);
        assert!(
            format!("{error:?}").starts_with(expected),
            "{error:?} is not {expected}"
        );
        assert!(!error.to_string().is_empty());
    }
    assert_eq!(refusal(spec("taken")).code(), "TOOL_NAME_CONFLICT");
    // The longest valid name and every allowed character.
    let mut builder = RegistryBuilder::new();
    builder.register(spec(&"a".repeat(64)), noop).unwrap();
    builder.register(spec("Az09_-"), noop).unwrap();
}

struct Harness {
    registry: Registry,
    chart: SharedChart,
    policy: RunPolicy,
    guard: SecretGuard,
}

impl Harness {
    fn new(policy: RunPolicy) -> Harness {
        Harness {
            registry: registry(CatalogueOptions::default()).unwrap(),
            chart: SharedChart::new(1),
            policy,
            guard: SecretGuard::new([SECRET]).unwrap(),
        }
    }

    fn call(&self, name: &str, arguments: &str) -> ToolResult {
        self.call_with_id("call-1", name, arguments)
    }

    fn call_with_id(&self, id: &str, name: &str, arguments: &str) -> ToolResult {
        let call = ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        };
        futures::executor::block_on(self.registry.execute_standalone(
            &self.policy,
            &self.guard,
            &self.chart,
            &call,
        ))
    }
}

#[test]
fn the_checks_run_in_r3_order() {
    let read_only_off = RunPolicy {
        read_only: true,
        disabled: BTreeSet::from(["drawings_clear".to_owned()]),
    };
    let harness = Harness::new(read_only_off);
    let huge = format!("{{\"query\":\"{}{SECRET}\"}}", "x".repeat(300 * 1024));
    // Each line breaks its own check and every later one.
    assert_eq!(
        code(&harness.call_with_id("", "no_such_tool", "{")),
        "INVALID_CALL_ID"
    );
    assert_eq!(code(&harness.call("no_such_tool", "{")), "TOOL_NOT_FOUND");
    let both = harness.call("drawings_clear", &huge);
    assert_eq!(
        both.error().unwrap().message,
        "Tool 'drawings_clear' is not allowed in a read-only run."
    );
    let harness = Harness::new(RunPolicy {
        read_only: false,
        disabled: BTreeSet::from(["web_search".to_owned()]),
    });
    let off = harness.call("web_search", &huge);
    assert_eq!(
        off.error().unwrap().message,
        "Tool 'web_search' is switched off in the agent settings."
    );
    let harness = Harness::new(RunPolicy::normal());
    assert_eq!(
        code(&harness.call("web_search", &huge)),
        "PAYLOAD_TOO_LARGE"
    );
    assert_eq!(
        code(&harness.call("web_search", &format!("{{{SECRET}"))),
        "SECRET_IN_INPUT"
    );
    assert_eq!(code(&harness.call("web_search", "{")), "TOOL_INPUT_INVALID");
    assert_eq!(code(&harness.call("web_search", r#"{"query":"x"}"#)), "OK");
}

#[test]
fn tool_not_found_lists_only_the_tools_offered_in_the_run() {
    let harness = Harness::new(RunPolicy {
        read_only: true,
        disabled: BTreeSet::from(["web_search".to_owned()]),
    });
    let result = harness.call("made_up_tool", "{}");
    let error = result.error().unwrap();
    assert!(error.retryable);
    assert!(
        error
            .recommended_action
            .starts_with("Call one of the available tools: panes_list, ")
    );
    assert!(error.recommended_action.contains("ask_user"));
    for hidden in [
        "web_search",
        "drawing_create",
        "panes_clear",
        "settings_update",
    ] {
        assert!(
            !error.recommended_action.contains(hidden),
            "{hidden} leaked into the hint"
        );
    }
    assert!(
        !error.message.contains("made_up_tool"),
        "names from the model are not quoted"
    );
}

#[test]
fn payload_limit_is_256_kib_exactly() {
    let harness = Harness::new(RunPolicy::normal());
    let padding = |total: usize| format!("{{\"query\":\"a\"}}{}", " ".repeat(total - 13));
    assert_eq!(
        code(&harness.call("web_search", &padding(256 * 1024))),
        "OK"
    );
    let error = harness.call("web_search", &padding(256 * 1024 + 1));
    assert_eq!(code(&error), "PAYLOAD_TOO_LARGE");
    assert_eq!(
        error.error().unwrap().recommended_action,
        "Send a smaller input."
    );
}

#[test]
fn a_secret_is_found_in_escaped_spellings_and_in_keys() {
    let harness = Harness::new(RunPolicy::normal());
    for arguments in [
        format!(r#"{{"query":"{SECRET}"}}"#),
        r#"{"query":"\u0073earch-KEY-0a1b2c3d4e"}"#.to_owned(),
        format!(r#"{{"{SECRET}":1}}"#),
    ] {
        let result = harness.call("web_search", &arguments);
        assert_eq!(code(&result), "SECRET_IN_INPUT", "{arguments}");
        assert!(!result.error().unwrap().retryable);
    }
}

#[test]
fn input_errors_follow_r6_and_r7() {
    let harness = Harness::new(RunPolicy::normal());
    let result = harness.call("market_bars_query", r#"{"symbol":1}"#);
    let error = result.error().unwrap();
    assert_eq!(error.code, "TOOL_INPUT_INVALID");
    assert!(error.retryable);
    assert!(!result.state_changed);
    assert_eq!(
        error.recommended_action,
        "Correct the invalid field and retry the request."
    );
    assert!(error.message.starts_with("The tool input is invalid: "));
    // The documented order: a value's own errors (here the root's missing property) before
    // the errors of its members.
    let fields = error.fields.as_ref().unwrap();
    assert_eq!(fields[0].path, "/");
    assert_eq!(fields[0].message, "missing required property 'period'");
    assert_eq!(fields[1].path, "/symbol");
    assert_eq!(fields[1].message, "must be a string");
    assert_eq!(
        error.message,
        "The tool input is invalid: /: missing required property 'period'; /symbol: must be a string"
    );

    let wrong = r#"{"symbol":"","period":"hourly","adjustment":7,"limit":900,"u1":1,"u2":2,"u3":3,"u4":4,"u5":5,"u6":6}"#;
    let fields = harness
        .call("market_bars_query", wrong)
        .error()
        .unwrap()
        .fields
        .clone()
        .unwrap();
    assert_eq!(fields.len(), 5);
    for field in &fields {
        for value in ["hourly", "900", "u1\":"] {
            assert!(!field.message.contains(value), "{field}");
        }
    }
    // Empty text means `{}`; `{` is one error at the root.
    assert_eq!(code(&harness.call("panes_list", "")), "OK");
    let broken = harness.call("panes_list", "{");
    let fields = broken.error().unwrap().fields.as_ref().unwrap();
    assert_eq!(fields.len(), 1);
    assert_eq!(fields[0].path, "/");
    let duplicate = harness.call("settings_update", r#"{"theme":"dark","theme":"light"}"#);
    assert_eq!(
        duplicate.error().unwrap().fields.as_ref().unwrap()[0].path,
        "/"
    );
}

#[test]
fn state_changed_tells_the_truth() {
    let harness = Harness::new(RunPolicy::normal());
    assert!(
        harness
            .call("settings_update", r#"{"theme":"dark"}"#)
            .state_changed
    );
    assert!(
        !harness
            .call("settings_update", r#"{"theme":"dark"}"#)
            .state_changed,
        "same value, no change"
    );
    assert!(
        !harness.call("drawings_clear", "{}").state_changed,
        "nothing to clear"
    );
    assert!(!harness.call("settings_get", "{}").state_changed);
    assert_eq!(harness.chart.undo_depth(), 1);
}

struct Logged {
    log: Arc<Mutex<Vec<String>>>,
    name: String,
    inner: Arc<dyn ToolBody>,
}

impl ToolBody for Logged {
    fn call<'a>(
        &'a self,
        context: &'a ToolContext,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        self.log.lock().unwrap().push(self.name.clone());
        self.inner.call(context, input)
    }
}

#[test]
fn wrapped_bodies_see_every_admitted_call_and_nothing_else() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut builder = RegistryBuilder::new();
    register_tools(&mut builder, CatalogueOptions::default()).unwrap();
    let log = Arc::clone(&seen);
    builder.wrap_bodies(move |meta, inner| {
        Arc::new(Logged {
            log: Arc::clone(&log),
            name: meta.name().to_owned(),
            inner,
        })
    });
    let harness = Harness {
        registry: builder.build(),
        ..Harness::new(RunPolicy::read_only())
    };
    assert_eq!(code(&harness.call("panes_list", "{}")), "OK");
    assert_eq!(code(&harness.call("panes_clear", "{}")), "TOOL_NOT_ALLOWED");
    assert_eq!(
        code(&harness.call("settings_get", r#"{"x":1}"#)),
        "TOOL_INPUT_INVALID"
    );
    assert_eq!(*seen.lock().unwrap(), ["panes_list"]);
}

#[test]
fn resolution_and_execution_agree_on_what_a_policy_allows() {
    let registry = registry(CatalogueOptions {
        code_interpreter: true,
    })
    .unwrap();
    let policies = [
        RunPolicy::normal(),
        RunPolicy::read_only(),
        RunPolicy {
            read_only: false,
            disabled: registry
                .tools()
                .map(|tool| tool.name().to_owned())
                .collect(),
        },
        RunPolicy {
            read_only: true,
            disabled: BTreeSet::from(["ask_user".to_owned(), "no_such".to_owned()]),
        },
    ];
    for policy in &policies {
        let offered: BTreeSet<&str> = registry
            .offered(policy)
            .iter()
            .map(|tool| tool.name())
            .collect();
        for tool in registry.tools() {
            let allowed = policy::check_execution(tool.meta(), policy).is_ok();
            assert_eq!(
                allowed,
                offered.contains(tool.name()),
                "{} under {policy:?}",
                tool.name()
            );
            if policy.read_only && !tool.meta().is_read_only() {
                assert!(!allowed);
            }
        }
    }
}
