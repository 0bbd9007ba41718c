//! Property suite: read-only runs and switched-off tools (R4, R11–R13, I1–I3, I13).
//!
//! Registries are either the chart catalogue (with or without the opt-in
//! `code_interpreter`) or synthetic ones of random read-only and destructive, parallel and
//! sequential tools; policies are a read-only flag and a set of switched-off names that mixes
//! registered names with near misses (other letter case, white space, prefixes) and unknown
//! names. The suite checks:
//!
//! - resolution offers exactly the registered tools that are not switched off (and, in a
//!   read-only run, only the read-only ones), in registration order: it never holds a
//!   destructive tool in a read-only run, holds every read-only tool that is not switched
//!   off, and names match exactly;
//! - execution refuses exactly what resolution does not offer, with R3's message (read-only
//!   first, then switched off); a refused call changes nothing and its body never runs; an
//!   offered tool with a valid input reaches its body; an unknown name is `TOOL_NOT_FOUND`
//!   whose hint lists exactly the offered names;
//! - through the driver, over a session of runs with changing policies, every request
//!   offers the tools its own run resolves (read-only never leaks between runs), and no
//!   switched-off or refused body runs;
//! - registration refuses a destructive tool declared parallel (R2).

mod strategies;
mod support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};
use strategies::{config, regressions};
use support::{ScriptedProvider, code, reply, say};
use ward_core::chart::SharedChart;
use ward_core::chart::tools::{CatalogueOptions, register_tools};
use ward_core::driver::{RunOptions, Session, StartRunInput};
use ward_core::envelope::{ToolError, codes};
use ward_core::fault::FaultSet;
use ward_core::guard::SecretGuard;
use ward_core::policy::{self, RunPolicy};
use ward_core::registry::{CallIds, CallScope, Registry, RegistryBuilder, RegistryError};
use ward_core::session::MemoryStore;
use ward_core::tool::{ExecutionMode, Safety, ToolBody, ToolCall, ToolContext, ToolSpec};

/// The tool bodies that ran, by name, in order.
type Ran = Arc<Mutex<Vec<String>>>;

struct Recorded {
    inner: Arc<dyn ToolBody>,
    name: String,
    ran: Ran,
}

impl ToolBody for Recorded {
    fn call<'a>(
        &'a self,
        context: &'a ToolContext,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        self.ran.lock().unwrap().push(self.name.clone());
        self.inner.call(context, input)
    }
}

/// Which registry a case uses.
#[derive(Clone, Debug)]
enum Shape {
    /// The chart catalogue.
    Catalogue { code_interpreter: bool },
    /// Synthetic tools `tool_0`, `tool_1`, … with these declarations.
    Synthetic(Vec<(Safety, ExecutionMode)>),
}

fn shape() -> impl Strategy<Value = Shape> {
    let declaration = (
        prop_oneof![Just(Safety::ReadOnly), Just(Safety::Destructive)],
        prop_oneof![
            Just(ExecutionMode::Parallel),
            Just(ExecutionMode::Sequential)
        ],
    );
    prop_oneof![
        any::<bool>().prop_map(|code_interpreter| Shape::Catalogue { code_interpreter }),
        proptest::collection::vec(declaration, 0..10).prop_map(Shape::Synthetic),
    ]
}

fn synthetic_schema() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": false})
}

/// Builds the registry of `shape` with every body recorded in `ran`. A destructive tool
/// declared parallel must be refused (R2) and is left out.
fn build(shape: &Shape, ran: &Ran) -> Result<Registry, TestCaseError> {
    let mut builder = RegistryBuilder::new();
    match shape {
        Shape::Catalogue { code_interpreter } => {
            register_tools(
                &mut builder,
                CatalogueOptions {
                    code_interpreter: *code_interpreter,
                },
            )
            .expect("the catalogue registers");
        }
        Shape::Synthetic(declarations) => {
            for (index, (safety, execution_mode)) in declarations.iter().enumerate() {
                let spec = ToolSpec {
                    name: format!("tool_{index}"),
                    label: "Synthetic".to_owned(),
                    description: "A synthetic tool.".to_owned(),
                    parameters: synthetic_schema(),
                    safety: *safety,
                    execution_mode: *execution_mode,
                };
                let body = |_: &ToolContext, _: Value| Ok(json!({"ok": true}));
                let registered = builder.register(spec, body);
                let parallel_write =
                    *safety == Safety::Destructive && *execution_mode == ExecutionMode::Parallel;
                if parallel_write {
                    prop_assert!(
                        matches!(registered, Err(RegistryError::DestructiveParallel { .. })),
                        "a destructive parallel tool was registered: {registered:?}"
                    );
                } else {
                    prop_assert!(registered.is_ok(), "{registered:?}");
                }
            }
        }
    }
    let ran = Arc::clone(ran);
    builder.wrap_bodies(|meta, inner| {
        Arc::new(Recorded {
            inner,
            name: meta.name().to_owned(),
            ran: Arc::clone(&ran),
        })
    });
    Ok(builder.build())
}

/// Names a policy may switch off besides registered ones: near misses and unknown names.
const NEAR_MISSES: &[&str] = &[
    "TOOL_0",
    "tool_0 ",
    " tool_1",
    "tool_",
    "tool_00",
    "Panes_list",
    "panes_list ",
    "drawing",
    "settings_update\n",
    "",
    "no_such_tool",
];

/// A name picked from the registry (by index) or a near miss.
#[derive(Clone, Debug)]
enum Name {
    Registered(Index),
    Other(&'static str),
}

fn name() -> impl Strategy<Value = Name> {
    prop_oneof![
        3 => any::<Index>().prop_map(Name::Registered),
        1 => proptest::sample::select(NEAR_MISSES).prop_map(Name::Other),
    ]
}

fn resolve_name(registry: &Registry, name: &Name) -> String {
    match name {
        Name::Registered(index) if !registry.is_empty() => registry
            .tools()
            .nth(index.index(registry.len()))
            .expect("in range")
            .name()
            .to_owned(),
        Name::Registered(_) => "tool_0".to_owned(),
        Name::Other(name) => (*name).to_owned(),
    }
}

fn policy_of(registry: &Registry, read_only: bool, disabled: &[Name]) -> RunPolicy {
    RunPolicy {
        read_only,
        disabled: disabled
            .iter()
            .map(|name| resolve_name(registry, name))
            .collect(),
    }
}

/// What the policy allows, written from R12–R13 directly.
fn allowed(registry: &Registry, policy: &RunPolicy) -> Vec<String> {
    registry
        .tools()
        .filter(|tool| !policy.disabled.contains(tool.name()))
        .filter(|tool| !policy.read_only || tool.meta().safety() == Safety::ReadOnly)
        .map(|tool| tool.name().to_owned())
        .collect()
}

/// A valid argument text for `name`, or `{}` for names that are not registered.
fn valid_arguments(
    registry: &Registry,
    name: &str,
    runner: &mut proptest::test_runner::TestRunner,
) -> String {
    let Some(tool) = registry.get(name) else {
        return "{}".to_owned();
    };
    strategies::valid(tool.meta().parameters())
        .new_tree(runner)
        .expect("valid inputs generate")
        .current()
        .to_string()
}

/// One case of the pure properties: a registry, a policy, and the calls to make.
#[derive(Clone, Debug)]
struct Case {
    shape: Shape,
    read_only: bool,
    disabled: Vec<Name>,
    calls: Vec<Name>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        shape(),
        any::<bool>(),
        proptest::collection::vec(name(), 0..6),
        proptest::collection::vec(name(), 1..12),
    )
        .prop_map(|(shape, read_only, disabled, calls)| Case {
            shape,
            read_only,
            disabled,
            calls,
        })
}

/// R4, R12 (resolution), R13: exactly the allowed tools, in registration order.
fn check_resolution(case: &Case) -> Result<(), TestCaseError> {
    let registry = build(&case.shape, &Ran::default())?;
    let policy = policy_of(&registry, case.read_only, &case.disabled);
    let offered: Vec<String> = (registry.offered(&policy).iter())
        .map(|tool| tool.name().to_owned())
        .collect();
    prop_assert_eq!(&offered, &allowed(&registry, &policy));
    for tool in registry.tools() {
        let offers = policy::offers(tool.meta(), &policy);
        prop_assert_eq!(offers, offered.iter().any(|name| name == tool.name()));
        if case.read_only {
            prop_assert!(
                !offers || tool.meta().is_read_only(),
                "{} offered in a read-only run",
                tool.name()
            );
        }
        if policy.is_disabled(tool.name()) {
            prop_assert!(!offers, "switched-off {} offered", tool.name());
        }
    }
    Ok(())
}

/// R3, R12 (execution), R13, I13: the entry point refuses exactly what resolution does
/// not offer, with R3's message, never runs a refused body and always runs an offered body
/// given a valid input.
fn check_execution(case: &Case, faults: FaultSet) -> Result<(), TestCaseError> {
    let ran = Ran::default();
    let registry = build(&case.shape, &ran)?;
    let policy = policy_of(&registry, case.read_only, &case.disabled);
    let offered = allowed(&registry, &policy);
    let offered_names: Vec<&str> = offered.iter().map(String::as_str).collect();
    let guard = SecretGuard::default();
    let scope = CallScope {
        policy: &policy,
        offered: &offered_names,
        guard: &guard,
        faults,
    };
    let chart = SharedChart::new(3);
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for (index, name) in case.calls.iter().enumerate() {
        let name = resolve_name(&registry, name);
        let call = ToolCall {
            id: format!("call_{index}"),
            name: name.clone(),
            arguments: valid_arguments(&registry, &name, &mut runner),
        };
        let before = (chart.snapshot(), chart.undo_depth());
        ran.lock().unwrap().clear();
        let context = ToolContext::standalone(chart.clone(), &call);
        let result = futures::executor::block_on(registry.execute(
            &scope,
            &mut CallIds::default(),
            &call,
            &context,
        ));
        let body_ran = ran.lock().unwrap().contains(&name);
        let Some(tool) = registry.get(&name) else {
            prop_assert_eq!(code(&result), codes::TOOL_NOT_FOUND);
            prop_assert!(!body_ran);
            let hint = &result.error().unwrap().recommended_action;
            prop_assert_eq!(
                hint,
                &format!("Call one of the available tools: {}.", offered.join(", "))
            );
            continue;
        };
        let offers = offered.contains(&name);
        let checked = policy::check_execution(tool.meta(), &policy);
        prop_assert_eq!(
            checked.is_ok(),
            offers,
            "{}: resolution and execution disagree",
            name
        );
        if offers {
            prop_assert_ne!(code(&result), codes::TOOL_NOT_ALLOWED);
            prop_assert_ne!(
                code(&result),
                codes::TOOL_INPUT_INVALID,
                "{}: {}",
                name,
                call.arguments
            );
            prop_assert!(
                body_ran,
                "{} was offered, given a valid input, and did not run",
                name
            );
            continue;
        }
        prop_assert_eq!(code(&result), codes::TOOL_NOT_ALLOWED);
        prop_assert!(!body_ran, "{} ran without being offered", name);
        let error = result.error().unwrap();
        prop_assert!(!error.retryable);
        let expected = if case.read_only && !tool.meta().is_read_only() {
            format!("Tool '{name}' is not allowed in a read-only run.")
        } else {
            format!("Tool '{name}' is switched off in the agent settings.")
        };
        prop_assert_eq!(&error.message, &expected);
        prop_assert_eq!(checked.err(), Some(error.clone()));
        prop_assert!(!result.state_changed);
        prop_assert_eq!(
            &(chart.snapshot(), chart.undo_depth()),
            &before,
            "a refused call changed the chart"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(256, regressions!("prop_policy")))]

    /// R4, R12 (resolution), R13: exactly the allowed tools, in registration order.
    #[test]
    fn resolution_offers_exactly_what_the_policy_allows(case in case()) {
        check_resolution(&case)?;
    }

    /// R3, R12 (execution), R13, I13: execution refuses exactly what resolution does not
    /// offer.
    #[test]
    fn execution_refuses_exactly_what_resolution_does_not_offer(case in case()) {
        check_execution(&case, FaultSet::EMPTY)?;
    }
}

/// One run of a session: its policy and the calls its provider sends in its one batch.
#[derive(Clone, Debug)]
struct RunPlan {
    read_only: bool,
    disabled: Vec<Name>,
    calls: Vec<Name>,
}

fn run_plan() -> impl Strategy<Value = RunPlan> {
    (
        any::<bool>(),
        proptest::collection::vec(name(), 0..5),
        proptest::collection::vec(name(), 0..6),
    )
        .prop_map(|(read_only, disabled, calls)| RunPlan {
            read_only,
            disabled,
            calls,
        })
}

/// R11, I1–I3, I13 through the driver: each run of a session offers what its own policy
/// allows, in every request, and runs exactly the offered bodies it is asked for.
fn check_session(
    code_interpreter: bool,
    plans: &[RunPlan],
    faults: FaultSet,
) -> Result<(), TestCaseError> {
    let ran = Ran::default();
    let registry = build(&Shape::Catalogue { code_interpreter }, &ran)?;
    let mut session = Session::new(
        "session",
        registry.clone(),
        SharedChart::new(5),
        MemoryStore::new(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for plan in plans {
        let policy = policy_of(&registry, plan.read_only, &plan.disabled);
        let offered = allowed(&registry, &policy);
        let calls: Vec<ToolCall> = plan
            .calls
            .iter()
            .enumerate()
            .map(|(index, name)| {
                let name = resolve_name(&registry, name);
                ToolCall {
                    id: format!("call_{index}"),
                    arguments: valid_arguments(&registry, &name, &mut runner),
                    name,
                }
            })
            .collect();
        let steps = if calls.is_empty() {
            vec![say("nothing to do")]
        } else {
            vec![reply(calls.clone()), say("done")]
        };
        let mut provider = ScriptedProvider::new(steps);
        let input = StartRunInput {
            prompt: "look at the chart".to_owned(),
            read_only: plan.read_only,
            disabled_tools: policy.disabled.clone(),
            ..StartRunInput::default()
        };
        ran.lock().unwrap().clear();
        let mut events = Vec::new();
        let options = RunOptions {
            faults,
            ..RunOptions::default()
        };
        runtime
            .block_on(session.run(input, &mut provider, &mut events, options))
            .expect("the run starts");
        for request in &provider.received {
            prop_assert_eq!(
                &request.tools,
                &offered,
                "a request offered other tools than its run allows"
            );
        }
        let ran_now: BTreeSet<String> = ran.lock().unwrap().iter().cloned().collect();
        let expected: BTreeSet<String> = calls
            .iter()
            .map(|call| call.name.clone())
            .filter(|name| offered.contains(name))
            .collect();
        prop_assert_eq!(ran_now, expected, "bodies run against the run's policy");
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(64, regressions!("prop_policy_driver")))]

    /// R11, I1–I3, I13 through the driver, over a session of runs with changing policies.
    #[test]
    fn every_run_of_a_session_offers_and_runs_what_its_own_policy_allows(
        code_interpreter in any::<bool>(),
        plans in proptest::collection::vec(run_plan(), 1..5),
    ) {
        check_session(code_interpreter, &plans, FaultSet::EMPTY)?;
    }
}

/// The suite catches the seeded bugs of I1, I2, I3 and I13 (SPEC §11).
#[cfg(not(feature = "fault-injection"))]
#[test]
#[ignore = "the seeded bugs compile only with `--features ward-core/fault-injection`"]
fn the_suite_catches_the_policy_bugs_of_the_catalogue() {}

/// The suite catches the seeded bugs of I1, I2, I3 and I13 (SPEC §11).
#[cfg(feature = "fault-injection")]
#[test]
fn the_suite_catches_the_policy_bugs_of_the_catalogue() {
    use strategies::fails_somewhere;
    use ward_core::fault::Fault;
    for fault in [
        Fault::ReadonlyNoExecCheck,
        Fault::ReadonlyBlocksReads,
        Fault::DisabledStillRuns,
    ] {
        let faults = FaultSet::only(fault);
        assert!(
            fails_somewhere(64, case(), |case| check_execution(&case, faults)),
            "{fault} went unnoticed"
        );
    }
    let sessions = || (any::<bool>(), proptest::collection::vec(run_plan(), 1..5));
    for fault in [
        Fault::ReadonlyOffersWrites,
        Fault::ReadonlyNoExecCheck,
        Fault::DisabledStillRuns,
    ] {
        let faults = FaultSet::only(fault);
        assert!(
            fails_somewhere(
                32,
                sessions(),
                |(code_interpreter, plans): (bool, Vec<RunPlan>)| {
                    check_session(code_interpreter, &plans, faults)
                }
            ),
            "{fault} went unnoticed through the driver"
        );
    }
}
