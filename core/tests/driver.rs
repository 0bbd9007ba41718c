//! The run driver against a scripted provider (R11–R23), observed only at the boundaries:
//! what the provider receives, what tool bodies see, the session store and the events.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use support::*;
use ward_core::deadline::CancelToken;
use ward_core::driver::{Limits, RunError, RunOptions, RunOutcome, StartError, StartRunInput};
use ward_core::envelope::ToolResult;
use ward_core::events::EventKind;
use ward_core::provider::{ProviderError, ProviderErrorKind};
use ward_core::session::Message;
use ward_core::tool::{Safety, UserResponder};

const SECRET: &str = "prov-9f8e7d6c5b4a3210";

fn input(prompt: &str) -> StartRunInput {
    StartRunInput {
        prompt: prompt.to_owned(),
        ..StartRunInput::default()
    }
}

#[tokio::test(start_paused = true)]
async fn a_write_in_a_read_only_run_is_refused_and_its_body_never_runs() {
    let recorder = Recorder::new(&[], vec![]);
    let mut session = session(&recorder);
    let before = session.chart().snapshot();
    let mut provider = ScriptedProvider::new(vec![
        reply(vec![
            call("c1", "drawings_clear", "{}"),
            call("c2", "panes_list", "{}"),
        ]),
        say("done"),
    ]);
    let read_only = StartRunInput {
        read_only: true,
        ..input("look only")
    };
    let (report, _events) = run(
        &mut session,
        read_only,
        &mut provider,
        RunOptions::default(),
    )
    .await;

    assert_eq!(
        report.outcome,
        RunOutcome::Completed {
            text: "done".into()
        }
    );
    let registry = session.registry();
    for request in &provider.received {
        assert!(
            request
                .tools
                .iter()
                .all(|name| registry.get(name).unwrap().meta().safety() == Safety::ReadOnly)
        );
        assert!(request.system_prompt.contains("read-only"));
    }
    let results = results_of_turn(session.store().messages("session-1"), 0);
    assert_eq!(code(&results[0].1), "TOOL_NOT_ALLOWED");
    let error = results[0].1.error().unwrap();
    assert!(!error.retryable);
    assert_eq!(
        error.message,
        "Tool 'drawings_clear' is not allowed in a read-only run."
    );
    assert!(!results[0].1.state_changed);
    assert_eq!(code(&results[1].1), "OK");
    assert!(!recorder.ran("drawings_clear"));
    assert!(recorder.ran("panes_list"));
    assert_eq!(session.chart().snapshot(), before);
}

#[tokio::test(start_paused = true)]
async fn a_switched_off_tool_is_neither_offered_nor_run() {
    let recorder = Recorder::new(&[], vec![]);
    let mut session = session(&recorder);
    let mut provider = ScriptedProvider::new(vec![reply(vec![call("c1", "panes_list", "{}")])]);
    let disabled = StartRunInput {
        disabled_tools: BTreeSet::from(["panes_list".to_owned()]),
        ..input("list panes")
    };
    run(&mut session, disabled, &mut provider, RunOptions::default()).await;

    assert!(
        provider
            .received
            .iter()
            .all(|request| !request.tools.contains(&"panes_list".to_owned()))
    );
    assert!(
        provider.received[0]
            .tools
            .contains(&"drawing_create".to_owned())
    );
    let results = results_of_turn(session.store().messages("session-1"), 0);
    assert_eq!(code(&results[0].1), "TOOL_NOT_ALLOWED");
    assert_eq!(
        results[0].1.error().unwrap().message,
        "Tool 'panes_list' is switched off in the agent settings."
    );
    assert!(!recorder.ran("panes_list"));
}

#[tokio::test(start_paused = true)]
async fn a_ten_error_input_reports_exactly_five() {
    let recorder = Recorder::new(&[], vec![]);
    let mut session = session(&recorder);
    let arguments = json!({
        "symbol": 1, "period": "hourly", "adjustment": "x", "limit": 0,
        "a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6
    })
    .to_string();
    let mut provider = ScriptedProvider::new(vec![reply(vec![call(
        "c1",
        "market_bars_query",
        &arguments,
    )])]);
    run(
        &mut session,
        input("bars"),
        &mut provider,
        RunOptions::default(),
    )
    .await;

    let results = results_of_turn(session.store().messages("session-1"), 0);
    let error = results[0].1.error().unwrap();
    assert_eq!(error.code, "TOOL_INPUT_INVALID");
    let fields = error.fields.as_ref().unwrap();
    assert_eq!(fields.len(), 5);
    let paths: Vec<&str> = fields.iter().map(|field| field.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/a", "/adjustment", "/b", "/c", "/d"],
        "members in key order"
    );
    assert!(!error.message.contains("hourly"));
    assert!(!recorder.ran("market_bars_query"));
}

#[tokio::test(start_paused = true)]
async fn parallel_results_come_back_in_call_order_whatever_order_they_finish_in() {
    let recorder = Recorder::new(
        &[
            ("panes_list", 30),
            ("settings_get", 10),
            ("comparisons_list", 20),
        ],
        vec![],
    );
    let mut session = session(&recorder);
    let batch = vec![
        call("call_9", "panes_list", "{}"),
        call("call_10", "settings_get", "{}"),
        call("call_11", "comparisons_list", "{}"),
    ];
    let mut provider = ScriptedProvider::new(vec![reply(batch)]);
    let (_, events) = run(
        &mut session,
        input("read"),
        &mut provider,
        RunOptions::default(),
    )
    .await;

    let results = results_of_turn(session.store().messages("session-1"), 0);
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["call_9", "call_10", "call_11"]);
    let completion: Vec<String> = finished(&events).into_iter().map(|(_, id, _)| id).collect();
    assert_eq!(completion, ["call_10", "call_11", "call_9"]);
    let records = recorder.records();
    assert!(
        records
            .iter()
            .all(|record| record.start_ms == records[0].start_ms),
        "{records:?}"
    );
    // The second request carries the results in call order too.
    let second = &provider.received[1].transcript;
    let order: Vec<&str> = second
        .iter()
        .filter_map(|message| match message {
            Message::Tool { call_id, .. } => Some(&**call_id),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["call_9", "call_10", "call_11"]);
}

#[tokio::test(start_paused = true)]
async fn a_mixed_batch_runs_one_call_at_a_time_in_order() {
    let recorder = Recorder::new(
        &[
            ("panes_list", 30),
            ("settings_update", 20),
            ("settings_get", 10),
        ],
        vec![],
    );
    let mut session = session(&recorder);
    let batch = vec![
        call("r1", "panes_list", "{}"),
        call("w1", "settings_update", r#"{"theme":"dark"}"#),
        call("r2", "settings_get", "{}"),
    ];
    let mut provider = ScriptedProvider::new(vec![reply(batch)]);
    run(
        &mut session,
        input("mixed"),
        &mut provider,
        RunOptions::default(),
    )
    .await;

    let records = recorder.records();
    let tools: Vec<&str> = records.iter().map(|record| record.tool.as_str()).collect();
    assert_eq!(tools, ["panes_list", "settings_update", "settings_get"]);
    for pair in records.windows(2) {
        assert!(pair[0].end_ms.unwrap() <= pair[1].start_ms, "{records:?}");
    }
    let results = results_of_turn(session.store().messages("session-1"), 0);
    assert!(results[1].1.state_changed);
    assert_eq!(
        results[2].1,
        ToolResult::success(
            json!({"settings": session.chart().snapshot().settings}),
            false
        )
    );
}

#[tokio::test(start_paused = true)]
async fn duplicate_empty_and_over_long_ids_are_refused_and_not_run() {
    let recorder = Recorder::new(&[], vec![]);
    let mut session = session(&recorder);
    let long = "x".repeat(161);
    let batch = vec![
        call("a", "panes_list", "{}"),
        call("a", "settings_get", "{}"),
        call("", "comparisons_list", "{}"),
        call(&long, "drawings_list", "{}"),
        call(&"y".repeat(160), "settings_get", "{}"),
    ];
    let mut provider = ScriptedProvider::new(vec![reply(batch)]);
    run(
        &mut session,
        input("ids"),
        &mut provider,
        RunOptions::default(),
    )
    .await;

    let results = results_of_turn(session.store().messages("session-1"), 0);
    let codes: Vec<&str> = results.iter().map(|(_, result)| code(result)).collect();
    assert_eq!(
        codes,
        [
            "OK",
            "DUPLICATE_CALL_ID",
            "INVALID_CALL_ID",
            "INVALID_CALL_ID",
            "OK"
        ]
    );
    let ran: Vec<String> = recorder
        .records()
        .into_iter()
        .map(|record| record.tool)
        .collect();
    assert_eq!(ran, ["panes_list", "settings_get"]);
}

#[tokio::test(start_paused = true)]
async fn the_turn_limit_ends_an_endless_tool_loop() {
    let recorder = Recorder::new(&[], vec![]);
    let mut session = session(&recorder);
    let mut provider = ScriptedProvider::new(vec![]);
    provider.endless = Some(vec![
        call("c1", "panes_list", "{}"),
        call("c2", "settings_get", "{}"),
    ]);
    let limited = StartRunInput {
        limits: Limits {
            turns_max: 3,
            ..Limits::default()
        },
        ..input("loop")
    };
    let (report, events) = run(&mut session, limited, &mut provider, RunOptions::default()).await;

    let RunOutcome::Failed { error } = &report.outcome else {
        panic!("{report:?}")
    };
    assert_eq!(error.code, "TOOL_LOOP_LIMIT");
    assert_eq!(error.message, "The agent stopped after 3 tool turns.");
    assert!(error.retryable);
    assert_eq!(error.recommended_action, "Refine the request and retry.");
    assert_eq!(report.batches, 3);
    assert_eq!(recorder.records().len(), 6);
    let last = results_of_turn(session.store().messages("session-1"), 3);
    assert_eq!(
        last.iter()
            .map(|(_, result)| code(result))
            .collect::<Vec<_>>(),
        ["ABORTED", "ABORTED"]
    );
    assert_eq!(finished(&events).len(), 8);
}

#[tokio::test(start_paused = true)]
async fn calls_past_the_batch_cap_get_too_many_calls() {
    let recorder = Recorder::new(&[], vec![]);
    let mut session = session(&recorder);
    let batch: Vec<_> = (0..40)
        .map(|index| call(&format!("c{index}"), "settings_get", "{}"))
        .collect();
    let mut provider = ScriptedProvider::new(vec![reply(batch)]);
    run(
        &mut session,
        input("many"),
        &mut provider,
        RunOptions::default(),
    )
    .await;

    let results = results_of_turn(session.store().messages("session-1"), 0);
    assert_eq!(results.len(), 40);
    assert!(results[..32].iter().all(|(_, result)| result.is_success()));
    for (_, result) in &results[32..] {
        let error = result.error().unwrap();
        assert_eq!(error.code, "TOO_MANY_CALLS");
        assert_eq!(
            error.recommended_action,
            "Send at most 32 tool calls in one message."
        );
    }
    assert_eq!(recorder.records().len(), 32);
}

#[tokio::test(start_paused = true)]
async fn cancel_mid_sequential_batch_completes_the_running_write_and_starts_nothing_after() {
    let recorder = Recorder::new(&[("settings_update", 100)], vec![]);
    let mut session = session(&recorder);
    let batch = vec![
        call("w1", "settings_update", r#"{"theme":"dark"}"#),
        call("w2", "settings_update", r#"{"showGrid":false}"#),
        call("w3", "settings_update", r#"{"crosshair":false}"#),
    ];
    let mut provider = ScriptedProvider::new(vec![reply(batch)]);
    let cancel = CancelToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        canceller.cancel();
    });
    let options = RunOptions {
        cancel: Some(cancel),
        ..RunOptions::default()
    };
    let (report, events) = run(&mut session, input("write"), &mut provider, options).await;

    assert_eq!(report.outcome, RunOutcome::Cancelled);
    let results = results_of_turn(session.store().messages("session-1"), 0);
    let codes: Vec<&str> = results.iter().map(|(_, result)| code(result)).collect();
    assert_eq!(
        codes,
        ["OK", "OK", "ABORTED"],
        "the write running at cancel completes"
    );
    let records = recorder.records();
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|record| record.start_ms < 150));
    let settings = session.chart().snapshot().settings;
    assert_eq!(
        (
            settings.theme.as_str(),
            settings.show_grid,
            settings.crosshair
        ),
        ("dark", false, true)
    );
    // The terminal event comes after every result.
    let terminal = events
        .iter()
        .position(|event| event.kind.is_terminal())
        .unwrap();
    assert!(
        events[..terminal]
            .iter()
            .filter(|event| matches!(event.kind, EventKind::ToolFinished { .. }))
            .count()
            == 3
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_mid_parallel_batch_abandons_running_reads() {
    let recorder = Recorder::new(&[("panes_list", 50), ("settings_get", 500)], vec![]);
    let mut session = session(&recorder);
    let batch = vec![
        call("r1", "panes_list", "{}"),
        call("r2", "settings_get", "{}"),
    ];
    let mut provider = ScriptedProvider::new(vec![reply(batch)]);
    let cancel = CancelToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let options = RunOptions {
        cancel: Some(cancel),
        ..RunOptions::default()
    };
    let (report, events) = run(&mut session, input("read"), &mut provider, options).await;

    assert_eq!(report.outcome, RunOutcome::Cancelled);
    let results = results_of_turn(session.store().messages("session-1"), 0);
    assert_eq!(
        results
            .iter()
            .map(|(_, result)| code(result))
            .collect::<Vec<_>>(),
        ["OK", "ABORTED"]
    );
    assert_eq!(
        events.last().unwrap().time_ms,
        100,
        "the run ends at the cancel instant"
    );
}

#[tokio::test(start_paused = true)]
async fn the_inactivity_deadline_fails_the_run_and_aborts_the_running_read() {
    let recorder = Recorder::new(&[("panes_list", 5_000)], vec![]);
    let mut session = session(&recorder);
    let mut provider = ScriptedProvider::new(vec![reply(vec![call("r1", "panes_list", "{}")])]);
    let short = StartRunInput {
        limits: Limits {
            inactivity_timeout_ms: 1_000,
            ..Limits::default()
        },
        ..input("slow")
    };
    let (report, events) = run(&mut session, short, &mut provider, RunOptions::default()).await;

    let RunOutcome::Failed { error } = &report.outcome else {
        panic!("{report:?}")
    };
    assert_eq!(error.code, "DEADLINE_EXCEEDED");
    assert!(error.retryable);
    assert_eq!(error.recommended_action, "Retry with a narrower request.");
    let results = results_of_turn(session.store().messages("session-1"), 0);
    assert_eq!(code(&results[0].1), "ABORTED");
    assert_eq!(events.last().unwrap().time_ms, 1_000);
}

struct SlowUser;

impl UserResponder for SlowUser {
    fn answer<'a>(
        &'a self,
        _question: &'a str,
        options: &'a [String],
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_secs(600)).await;
            options.first().cloned()
        })
    }
}

#[tokio::test(start_paused = true)]
async fn the_deadline_is_paused_while_the_user_answers() {
    let recorder = Recorder::new(&[], vec![]);
    let mut session = session(&recorder);
    let question = r#"{"question":"Which pane?","options":["main","pane-1"]}"#;
    let mut provider = ScriptedProvider::new(vec![
        reply(vec![call("q1", "ask_user", question)]),
        say("thanks"),
    ]);
    let options = RunOptions {
        user: Arc::new(SlowUser),
        ..RunOptions::default()
    };
    let (report, _) = run(&mut session, input("ask"), &mut provider, options).await;

    assert_eq!(
        report.outcome,
        RunOutcome::Completed {
            text: "thanks".into()
        }
    );
    let results = results_of_turn(session.store().messages("session-1"), 0);
    assert_eq!(
        results[0].1,
        ToolResult::success(json!({"answer": "main"}), false)
    );
}

#[tokio::test(start_paused = true)]
async fn retryable_provider_errors_are_retried_with_backoff() {
    let recorder = Recorder::new(&[], vec![]);
    let mut session = session(&recorder);
    let mut limited = ProviderError::new(ProviderErrorKind::RateLimited, "slow down");
    limited.retry_after_ms = Some(7_000);
    let mut provider = ScriptedProvider::new(vec![
        Step::Fail(limited),
        Step::Fail(ProviderError::new(
            ProviderErrorKind::Unavailable,
            "overloaded",
        )),
        say("ok"),
    ]);
    let (report, _) = run(
        &mut session,
        input("hi"),
        &mut provider,
        RunOptions::default(),
    )
    .await;

    assert_eq!(report.outcome, RunOutcome::Completed { text: "ok".into() });
    let times: Vec<(u32, u64)> = provider
        .received
        .iter()
        .map(|request| (request.attempt, request.at_ms))
        .collect();
    // Retry-after 7 s honoured, then the second backoff of 2 s.
    assert_eq!(times, [(0, 0), (1, 7_000), (2, 9_000)]);
}

#[tokio::test(start_paused = true)]
async fn exhausted_retries_and_fatal_errors_fail_the_run() {
    for (steps, attempts, expected) in [
        (
            vec![Step::Fail(ProviderError::new(ProviderErrorKind::Unavailable, "down")); 3],
            3,
            "PROVIDER_UNAVAILABLE",
        ),
        (
            vec![Step::Fail(ProviderError::new(
                ProviderErrorKind::Authentication,
                "bad key",
            ))],
            1,
            "PROVIDER_AUTHENTICATION",
        ),
        (vec![Step::Delay(61_000); 3], 3, "PROVIDER_TIMEOUT"),
    ] {
        let recorder = Recorder::new(&[], vec![]);
        let mut session = session(&recorder);
        let mut provider = ScriptedProvider::new(steps);
        let patient = StartRunInput {
            limits: Limits {
                inactivity_timeout_ms: 3_600_000,
                ..Limits::default()
            },
            ..input("hi")
        };
        let (report, _) = run(&mut session, patient, &mut provider, RunOptions::default()).await;
        let RunOutcome::Failed { error } = &report.outcome else {
            panic!("{report:?}")
        };
        assert_eq!(error.code, expected);
        assert_eq!(provider.received.len(), attempts, "{expected}");
        assert!(recorder.records().is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn a_secret_echoed_into_arguments_is_refused_and_never_recorded() {
    let recorder = Recorder::new(&[], vec![]);
    let mut session = session(&recorder);
    let arguments = json!({"query": format!("key {SECRET}")}).to_string();
    let escaped = r#"{"query":"\u0070rov-9f8e7d6c5b4a3210"}"#;
    let mut provider = ScriptedProvider::new(vec![
        reply(vec![
            call("c1", "web_search", &arguments),
            call("c2", "web_search", escaped),
        ]),
        say(&format!("the key is {SECRET}")),
    ]);
    let secret = StartRunInput {
        secrets: vec![SECRET.to_owned()],
        ..input("search")
    };
    let (report, events) = run(&mut session, secret, &mut provider, RunOptions::default()).await;

    let results = results_of_turn(session.store().messages("session-1"), 0);
    for (_, result) in &results {
        let error = result.error().unwrap();
        assert_eq!(error.code, "SECRET_IN_INPUT");
        assert!(!error.retryable);
    }
    assert!(!recorder.ran("web_search"));
    let store = serde_json::to_string(session.store().messages("session-1")).unwrap();
    let stream = serde_json::to_string(&events).unwrap();
    let requests: String = provider.received.iter().map(Received::text).collect();
    for text in [&store, &stream, &requests] {
        assert!(!text.contains(SECRET));
    }
    assert_eq!(
        report.outcome,
        RunOutcome::Completed {
            text: "the key is [REDACTED]".into()
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_result_carrying_a_secret_is_redacted_before_the_next_request() {
    let planted = json!({"results": [{"title": format!("leaked {SECRET}"), SECRET: true}]});
    let recorder = Recorder::new(&[], vec![("web_search", Plant::Data(planted))]);
    let mut session = session(&recorder);
    let mut provider = ScriptedProvider::new(vec![reply(vec![call(
        "c1",
        "web_search",
        r#"{"query":"news"}"#,
    )])]);
    let secret = StartRunInput {
        secrets: vec![SECRET.to_owned()],
        ..input("search")
    };
    let (_, events) = run(&mut session, secret, &mut provider, RunOptions::default()).await;

    assert!(recorder.ran("web_search"));
    let second = provider.received[1].text();
    assert!(!second.contains(SECRET));
    assert!(second.contains("leaked [REDACTED]"));
    assert!(!serde_json::to_string(&events).unwrap().contains(SECRET));
}

#[tokio::test(start_paused = true)]
async fn the_prompt_is_redacted_in_the_store_and_in_every_request_of_every_turn() {
    let recorder = Recorder::new(&[], vec![]);
    let mut session = session(&recorder);
    let mut provider = ScriptedProvider::new(vec![
        reply(vec![call("c1", "panes_list", "{}")]),
        reply(vec![call("c2", "settings_get", "{}")]),
        say("done"),
    ]);
    let prompt = format!(
        "my key is {SECRET}, please look at the chart. Authorization: Bearer Tk8Qz2Lw9Xv4Rb7Nm3Pd6 \
         and sk-proj-Ab3Cd5Ef7Gh9Jk2Mn4Pq from C:\\Users\\Qz7Rk2Wm\\Desktop"
    );
    let planted = [
        SECRET,
        "Tk8Qz2Lw9Xv4Rb7Nm3Pd6",
        "Ab3Cd5Ef7Gh9Jk2Mn4Pq",
        "Qz7Rk2Wm",
    ];
    let secret = StartRunInput {
        secrets: vec![SECRET.to_owned()],
        ..input(&prompt)
    };
    let (_, events) = run(&mut session, secret, &mut provider, RunOptions::default()).await;

    assert_eq!(provider.received.len(), 3);
    let store = serde_json::to_string(session.store().messages("session-1")).unwrap();
    let stream = serde_json::to_string(&events).unwrap();
    for request in &provider.received {
        let text = request.text();
        assert!(text.contains("my key is [REDACTED], please look"), "{text}");
        assert!(
            text.contains("Authorization: [REDACTED] and [REDACTED] from [LOCAL_PATH]"),
            "{text}"
        );
    }
    for part in planted {
        for text in provider
            .received
            .iter()
            .map(Received::text)
            .chain([store.clone(), stream.clone()])
        {
            assert!(!text.contains(part), "{part} leaked");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn read_only_never_leaks_between_runs_of_a_session() {
    let recorder = Recorder::new(&[], vec![]);
    let mut session = session(&recorder);
    let write = || call("w", "settings_update", r#"{"theme":"dark"}"#);
    for (read_only, expected) in [
        (true, "TOOL_NOT_ALLOWED"),
        (false, "OK"),
        (true, "TOOL_NOT_ALLOWED"),
    ] {
        let mut provider = ScriptedProvider::new(vec![reply(vec![write()])]);
        let run_input = StartRunInput {
            read_only,
            ..input("theme")
        };
        run(
            &mut session,
            run_input,
            &mut provider,
            RunOptions::default(),
        )
        .await;
        let offers_writes = provider.received[0]
            .tools
            .contains(&"settings_update".to_owned());
        assert_eq!(offers_writes, !read_only);
        let messages = session.store().messages("session-1");
        let last = messages.iter().rev().find_map(|message| match &**message {
            Message::Tool { result, .. } => Some(result.clone()),
            _ => None,
        });
        assert_eq!(code(&last.unwrap()), expected);
    }
    // Later runs resend the earlier runs' transcript.
    assert_eq!(
        session
            .store()
            .messages("session-1")
            .iter()
            .filter(|m| matches!(&***m, Message::User { .. }))
            .count(),
        3
    );
}

#[tokio::test(start_paused = true)]
async fn a_failing_write_is_rolled_back_and_a_panic_is_an_internal_error() {
    let recorder = Recorder::new(
        &[],
        vec![
            ("settings_update", Plant::FailAfter),
            ("settings_reset", Plant::Panic),
        ],
    );
    let mut session = session(&recorder);
    let before = session.chart().snapshot();
    let mut provider = ScriptedProvider::new(vec![reply(vec![
        call("w1", "settings_update", r#"{"theme":"dark"}"#),
        call("w2", "settings_reset", "{}"),
    ])]);
    run(
        &mut session,
        input("fail"),
        &mut provider,
        RunOptions::default(),
    )
    .await;

    let results = results_of_turn(session.store().messages("session-1"), 0);
    assert_eq!(code(&results[0].1), "PLANTED_FAILURE");
    let internal = results[1].1.error().unwrap();
    assert_eq!(internal.code, "INTERNAL_ERROR");
    assert!(!internal.retryable);
    assert!(!internal.message.contains("PANICPAYLOAD"));
    assert!(results.iter().all(|(_, result)| !result.state_changed));
    assert_eq!(session.chart().snapshot(), before);
}

#[tokio::test(start_paused = true)]
async fn limits_and_secrets_out_of_range_are_refused_at_start() {
    let recorder = Recorder::new(&[], vec![]);
    let mut session = session(&recorder);
    let mut provider = ScriptedProvider::new(vec![]);
    let mut events = Vec::new();
    for limits in [
        Limits {
            turns_max: 0,
            ..Limits::default()
        },
        Limits {
            turns_max: 21,
            ..Limits::default()
        },
        Limits {
            calls_per_batch_max: 0,
            ..Limits::default()
        },
        Limits {
            provider_timeout_ms: 10,
            ..Limits::default()
        },
        Limits {
            inactivity_timeout_ms: 999,
            ..Limits::default()
        },
        Limits {
            provider_retries_max: 6,
            ..Limits::default()
        },
    ] {
        let refused = session
            .run(
                StartRunInput {
                    limits,
                    ..input("x")
                },
                &mut provider,
                &mut events,
                RunOptions::default(),
            )
            .await;
        let Err(RunError::Start(StartError::Limits(error))) = refused else {
            panic!("{limits:?} accepted")
        };
        assert!(error.to_string().contains("must be between"), "{error}");
    }
    let short = StartRunInput {
        secrets: vec!["abc".into()],
        ..input("x")
    };
    let refused = session
        .run(short, &mut provider, &mut events, RunOptions::default())
        .await;
    assert!(matches!(
        refused,
        Err(RunError::Start(StartError::Secrets(_)))
    ));
    assert!(events.is_empty() && provider.received.is_empty());
}

#[tokio::test(start_paused = true)]
async fn events_follow_the_documented_sequence() {
    let recorder = Recorder::new(&[("panes_list", 5)], vec![]);
    let mut session = session(&recorder);
    let mut provider = ScriptedProvider::new(vec![
        reply(vec![call("c1", "panes_list", "{}")]),
        say("bye"),
    ]);
    let (_, events) = run(
        &mut session,
        input("hello"),
        &mut provider,
        RunOptions::default(),
    )
    .await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| match &event.kind {
            EventKind::RunStarted { .. } => "run.started",
            EventKind::UserMessageCreated { .. } => "user.message.created",
            EventKind::AssistantMessageCompleted { .. } => "assistant.message.completed",
            EventKind::ToolStarted { .. } => "tool.started",
            EventKind::ToolFinished { .. } => "tool.finished",
            EventKind::RunCompleted { .. } => "run.completed",
            EventKind::RunFailed { .. } => "run.failed",
            EventKind::RunCancelled => "run.cancelled",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "run.started",
            "user.message.created",
            "assistant.message.completed",
            "tool.started",
            "tool.finished",
            "assistant.message.completed",
            "run.completed"
        ]
    );
    let json: Value = serde_json::to_value(&events[4]).unwrap();
    assert_eq!(json["type"], "tool.finished");
    assert_eq!(json["timeMs"], 5);
    assert_eq!(json["result"]["success"], true);
}
