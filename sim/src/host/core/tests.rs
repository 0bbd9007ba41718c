//! ward's core driven message by message: what it reports, and when time moves.

use serde_json::json;
use ward_core::tool::ToolCall;

use super::*;

fn catalogue() -> Vec<ToolDescription> {
    let mut builder = RegistryBuilder::new();
    register_tools(&mut builder, CatalogueOptions::default()).unwrap();
    builder
        .build()
        .tools()
        .map(|tool| ToolDescription::of(tool.meta()))
        .collect()
}

fn limits() -> WireLimits {
    WireLimits {
        turns_max: 8,
        calls_per_batch_max: 32,
        provider_timeout_ms: 60_000,
        inactivity_timeout_ms: 120_000,
        provider_retries_max: 2,
    }
}

fn started(host: &mut CoreHost, prompt: &str) -> Vec<FromAdapter> {
    host.handle(ToAdapter::Hello { protocol: VERSION }).unwrap();
    let reset = host
        .handle(ToAdapter::Reset {
            seed: 3,
            tools: Some(catalogue().into()),
            store_dir: None,
        })
        .unwrap();
    assert_eq!(
        reset,
        [FromAdapter::Idle {
            at_ms: 0,
            next_timer_ms: NextTimer::None
        }]
    );
    host.handle(ToAdapter::StartRun(StartRun {
        session: "s".to_owned(),
        prompt: prompt.to_owned(),
        read_only: false,
        disabled_tools: Vec::new(),
        secrets: Vec::new(),
        limits: limits(),
    }))
    .unwrap()
}

/// The message types of `messages`, events by their own type.
fn kinds(messages: &[FromAdapter]) -> Vec<String> {
    messages
        .iter()
        .map(|message| match message {
            FromAdapter::Event { event } => serde_json::to_value(event).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned(),
            other => serde_json::to_value(other).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned(),
        })
        .collect()
}

fn idle_at(messages: &[FromAdapter]) -> u64 {
    match messages.last() {
        Some(FromAdapter::Idle { at_ms, .. }) => *at_ms,
        other => panic!("no idle at the end: {other:?}"),
    }
}

#[test]
fn a_run_goes_step_by_step_and_every_answer_ends_idle() {
    let mut host = CoreHost::new(FaultSet::EMPTY).unwrap();
    let ready = host.handle(ToAdapter::Hello { protocol: VERSION }).unwrap();
    assert!(
        matches!(&ready[..], [FromAdapter::Ready { claims, .. }] if claims.len() == CLAIMS.len())
    );
    let start = started(&mut host, "List the drawings.");
    assert_eq!(
        kinds(&start),
        [
            "run.started",
            "append",
            "user.message.created",
            "modelRequest",
            "idle"
        ]
    );
    let moved = host.handle(ToAdapter::Advance { to_ms: 100 }).unwrap();
    assert_eq!(kinds(&moved), ["idle"]);
    assert_eq!(
        idle_at(&moved),
        100,
        "no timer of the core is due before 100 ms"
    );
    let batch = host
        .handle(ToAdapter::ModelReply {
            request_id: "r0".to_owned(),
            text: String::new(),
            calls: vec![ToolCall {
                id: "call_9".to_owned(),
                name: "drawings_list".to_owned(),
                arguments: r#"{"paneId":"main"}"#.to_owned(),
            }],
        })
        .unwrap();
    assert_eq!(
        kinds(&batch),
        [
            "append",
            "assistant.message.completed",
            "tool.started",
            "bodyStart",
            "idle"
        ]
    );
    let FromAdapter::BodyStart { body_id, input, .. } = &batch[3] else {
        panic!("{batch:?}")
    };
    assert_eq!(input, &json!({"paneId": "main"}));
    let result = host
        .handle(ToAdapter::BodyResult {
            body_id: body_id.clone(),
            result: BodyOutcome::Data(json!({"drawings": []})),
            changed: false,
        })
        .unwrap();
    assert_eq!(
        kinds(&result),
        ["tool.finished", "append", "modelRequest", "idle"]
    );
    let end = host
        .handle(ToAdapter::ModelReply {
            request_id: "r1".to_owned(),
            text: "Done.".to_owned(),
            calls: Vec::new(),
        })
        .unwrap();
    assert_eq!(
        kinds(&end),
        [
            "append",
            "assistant.message.completed",
            "run.completed",
            "runEnd",
            "idle"
        ]
    );
    assert_eq!(idle_at(&end), 100);
}

#[test]
fn advance_stops_at_the_cores_own_timers() {
    let mut host = CoreHost::new(FaultSet::EMPTY).unwrap();
    started(&mut host, "Hello.");
    // The request timed out after 60 s: the core's timer fires before the target.
    let timeout = host.handle(ToAdapter::Advance { to_ms: 500_000 }).unwrap();
    assert_eq!(idle_at(&timeout), 60_000, "{timeout:?}");
    // Then the backoff of R18 (1 s), and the retry.
    let retry = host.handle(ToAdapter::Advance { to_ms: 500_000 }).unwrap();
    assert_eq!(idle_at(&retry), 61_000, "{retry:?}");
    assert_eq!(kinds(&retry), ["modelRequest", "idle"]);
}

/// The timer `idle` names.
fn next_timer(messages: &[FromAdapter]) -> NextTimer {
    match messages.last() {
        Some(FromAdapter::Idle { next_timer_ms, .. }) => *next_timer_ms,
        other => panic!("no idle: {other:?}"),
    }
}

#[test]
fn idle_names_the_cores_next_timer_and_a_delivery_before_it_carries_its_instant() {
    let mut host = CoreHost::new(FaultSet::EMPTY).unwrap();
    let asked = started(&mut host, "Hello.");
    // The provider's timeout (60 s) is the earliest timer; R19's deadline (120 s) is later.
    assert_eq!(next_timer(&asked), NextTimer::At(60_000), "{asked:?}");
    let reply = ToAdapter::ModelReply {
        request_id: "r0".to_owned(),
        text: "Hi.".to_owned(),
        calls: Vec::new(),
    };
    // After the timeout, the delivery is ward's misuse: the core's timer fires first.
    let mut late = CoreHost::new(FaultSet::EMPTY).unwrap();
    started(&mut late, "Hello.");
    let refused = late.handle_at(reply.clone(), Some(60_001)).unwrap_err();
    assert!(refused.0.contains("due at 60000 ms"), "{refused}");
    // At the timeout's very instant, the reply is taken: the delivery wins the tie (P3).
    let done = host.handle_at(reply, Some(60_000)).unwrap();
    assert_eq!(idle_at(&done), 60_000, "{done:?}");
    assert!(kinds(&done).contains(&"runEnd".to_owned()), "{done:?}");
    assert_eq!(next_timer(&done), NextTimer::None, "{done:?}");
    let instant_on_advance = host.handle_at(ToAdapter::Advance { to_ms: 70_000 }, Some(70_000));
    assert!(instant_on_advance.is_err());
}

#[test]
fn a_failed_write_the_core_rolls_back_is_reported_before_its_result() {
    let mut host = CoreHost::new(FaultSet::EMPTY).unwrap();
    started(&mut host, "Clear the drawings.");
    let batch = host
        .handle(ToAdapter::ModelReply {
            request_id: "r0".to_owned(),
            text: String::new(),
            calls: vec![ToolCall {
                id: "call_9".to_owned(),
                name: "drawings_clear".to_owned(),
                arguments: r#"{"paneId":"main"}"#.to_owned(),
            }],
        })
        .unwrap();
    let Some(FromAdapter::BodyStart { body_id, .. }) = batch
        .iter()
        .find(|message| matches!(message, FromAdapter::BodyStart { .. }))
    else {
        panic!("{batch:?}")
    };
    let failed = host
        .handle(ToAdapter::BodyResult {
            body_id: body_id.clone(),
            result: BodyOutcome::Error(ToolError::domain("TOOL_FAILED", "It failed.", "Retry.")),
            changed: true,
        })
        .unwrap();
    assert_eq!(kinds(&failed)[..2], ["rollback", "tool.finished"]);
    let FromAdapter::Event { event } = &failed[1] else {
        panic!()
    };
    let EventKind::ToolFinished { result, .. } = &event.kind else {
        panic!()
    };
    assert!(!result.state_changed);
}

#[test]
fn an_answer_to_nothing_is_refused() {
    let mut host = CoreHost::new(FaultSet::EMPTY).unwrap();
    started(&mut host, "Hello.");
    let error = host
        .handle(ToAdapter::BodyResult {
            body_id: "b7".to_owned(),
            result: BodyOutcome::Data(json!(null)),
            changed: false,
        })
        .unwrap_err();
    assert_eq!(error.0, "no body b7");
}

#[test]
fn every_provider_failure_reaches_the_core_as_the_code_the_simulator_expects() {
    use crate::catalogue::provider_error;
    use crate::scenario::FailureKind;
    use crate::world::lockstep::wire_kind;
    for kind in [
        FailureKind::Authentication,
        FailureKind::Permission,
        FailureKind::ModelNotFound,
        FailureKind::RateLimited,
        FailureKind::Unavailable,
        FailureKind::Timeout,
        FailureKind::MalformedResponse,
    ] {
        let core = provider_kind(wire_kind(kind));
        assert_eq!(core.code(), provider_error(kind).code, "{kind:?}");
        assert_eq!(
            core.is_retryable(),
            provider_error(kind).retryable,
            "{kind:?}"
        );
    }
}

/// A durable host on a file in `folder`.
fn durable_host(folder: &std::path::Path) -> CoreHost {
    let folder = folder.to_path_buf();
    let opener: Opener = Box::new(move |store_dir: Option<&str>| {
        let folder = store_dir.map_or_else(|| folder.clone(), std::path::PathBuf::from);
        std::fs::create_dir_all(&folder).map_err(|error| error.to_string())?;
        ward_core::durable::DurableStore::open_unlocked(&folder.join("ward.redb"))
            .map_err(|error| error.to_string())
    });
    let described = Durable {
        store: "a redb file".to_owned(),
        version: "redb".to_owned(),
        drop: "leaks its handle".to_owned(),
    };
    CoreHost::durable(FaultSet::EMPTY, opener, described).unwrap()
}

#[test]
fn a_durable_host_takes_up_the_run_a_crash_cut() {
    let folder = std::env::temp_dir().join(format!("ward-durable-host-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let mut host = durable_host(&folder);
    let ready = host.handle(ToAdapter::Hello { protocol: VERSION }).unwrap();
    let [
        FromAdapter::Ready {
            claims, durable, ..
        },
    ] = &ready[..]
    else {
        panic!("{ready:?}");
    };
    assert!(durable.is_some() && claims.iter().any(|rule| rule == "R31"));
    let start = started(&mut host, "Draw a line.");
    assert_eq!(kinds(&start).last().map(String::as_str), Some("idle"));
    let reply = ToAdapter::ModelReply {
        request_id: "r0".to_owned(),
        text: String::new(),
        calls: vec![ToolCall {
            id: "call_9".to_owned(),
            name: "drawing_create".to_owned(),
            arguments: r#"{"kind":"horizontal-line","paneId":"main","anchors":[{"price":7}]}"#
                .to_owned(),
        }],
    };
    let batch = host.handle(reply).unwrap();
    let key = batch.iter().find_map(|message| match message {
        FromAdapter::BodyStart {
            idempotency_key, ..
        } => idempotency_key.clone(),
        _ => None,
    });
    assert_eq!(key.as_deref(), Some("s/0/call_9"));
    // The process dies while the write runs: its result was never committed.
    let dropped = host.handle(ToAdapter::Crash).unwrap();
    assert_eq!(kinds(&dropped), ["idle"]);
    let mut again = durable_host(&folder);
    again
        .handle(ToAdapter::Hello { protocol: VERSION })
        .unwrap();
    again
        .handle(ToAdapter::Reset {
            seed: 3,
            tools: Some(catalogue().into()),
            store_dir: None,
        })
        .unwrap();
    let recovered = again
        .handle(ToAdapter::Recover {
            secrets: Vec::new(),
        })
        .unwrap();
    // The reply was committed: the batch runs again, the write's body with the same key.
    let key = recovered.iter().find_map(|message| match message {
        FromAdapter::BodyStart {
            idempotency_key, ..
        } => idempotency_key.clone(),
        _ => None,
    });
    assert_eq!(
        key.as_deref(),
        Some("s/0/call_9"),
        "{:?}",
        kinds(&recovered)
    );
    let _ = std::fs::remove_dir_all(&folder);
}

#[test]
fn a_reset_without_tools_keeps_the_last_catalogue_and_needs_one() {
    let mut host = CoreHost::new(FaultSet::EMPTY).unwrap();
    let ready = host.handle(ToAdapter::Hello { protocol: VERSION }).unwrap();
    assert!(matches!(
        ready.as_slice(),
        [FromAdapter::Ready {
            catalogue_kept: true,
            ..
        }]
    ));
    let kept = |seed| ToAdapter::Reset {
        seed,
        tools: None,
        store_dir: None,
    };
    let refused = host.handle(kept(1)).unwrap_err();
    assert!(
        refused.0.contains("no catalogue before it"),
        "{}",
        refused.0
    );
    let given = ToAdapter::Reset {
        seed: 2,
        tools: Some(catalogue().into()),
        store_dir: None,
    };
    assert!(host.handle(given).is_ok());
    assert!(host.handle(kept(3)).is_ok());
    // A different catalogue, given, is still refused: keeping is not accepting anything.
    let mut other = catalogue();
    other.pop();
    let changed = ToAdapter::Reset {
        seed: 4,
        tools: Some(other.into()),
        store_dir: None,
    };
    assert!(host.handle(changed).is_err());
}
