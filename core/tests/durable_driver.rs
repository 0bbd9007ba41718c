//! The run driver over a store that can fail (SPEC §16): a failed commit stops the run
//! (R35), a later `run` is refused until the cut run is resumed, a resume on the same
//! session object restores the committed chart (R31), and a resumed batch's call of R32 gets
//! `OUTCOME_UNKNOWN` even when the run is stopped before it (R32, R20).

mod support;

use std::sync::Arc;

use futures::future::BoxFuture;
use ward_core::chart::tools::{CatalogueOptions, registry};
use ward_core::chart::{ChartState, SharedChart};
use ward_core::deadline::CancelToken;
use ward_core::driver::{RunError, RunOptions, RunOutcome, Session, StartRunInput};
use ward_core::events::Event;
use ward_core::session::{MemoryStore, Message, Record, SessionStore, StoreError, StoredLimits};
use ward_core::tool::UserResponder;

use support::{ScriptedProvider, call, code, reply, say};

/// A memory store whose commit number `fail_at` (from 0) fails, once.
struct Failing {
    inner: MemoryStore,
    commits: usize,
    fail_at: Option<usize>,
}

impl SessionStore for Failing {
    fn journal(&self, session_id: &str) -> Result<Vec<Record>, StoreError> {
        self.inner.journal(session_id)
    }

    fn commit(
        &mut self,
        session_id: &str,
        records: &[Record],
        chart: Option<&Arc<ChartState>>,
    ) -> Result<(), StoreError> {
        let number = self.commits;
        self.commits += 1;
        if self.fail_at == Some(number) {
            return Err(StoreError::Failed("a planned failure".to_owned()));
        }
        self.inner.commit(session_id, records, chart)
    }

    fn chart(&self, session_id: &str) -> Result<Option<ChartState>, StoreError> {
        self.inner.chart(session_id)
    }
}

fn draw(id: &str) -> ward_core::tool::ToolCall {
    call(
        id,
        "drawing_create",
        r#"{"kind":"horizontal-line","paneId":"main","anchors":[{"price":10}]}"#,
    )
}

fn input() -> StartRunInput {
    StartRunInput {
        prompt: "Mark the level.".to_owned(),
        ..StartRunInput::default()
    }
}

fn run_on<S: SessionStore>(
    session: &mut Session<S>,
    provider: &mut ScriptedProvider,
    resume: bool,
    options: RunOptions,
) -> Result<ward_core::driver::RunReport, RunError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let mut events: Vec<Event> = Vec::new();
    runtime.block_on(async {
        if resume {
            session
                .resume(Vec::new(), provider, &mut events, options)
                .await
        } else {
            session.run(input(), provider, &mut events, options).await
        }
    })
}

#[test]
fn a_failed_commit_stops_the_run_and_a_resume_of_the_same_session_writes_once() {
    let registry = registry(CatalogueOptions::default()).unwrap();
    // Commits: 0 the start, 1 the reply, 2 the batch's results with the chart.
    let store = Failing {
        inner: MemoryStore::new(),
        commits: 0,
        fail_at: Some(2),
    };
    let mut session = Session::new("s", registry, SharedChart::new(0), store);
    let mut provider = ScriptedProvider::new(vec![reply(vec![draw("call_1")]), say("Done.")]);
    let failed = run_on(&mut session, &mut provider, false, RunOptions::default());
    assert!(matches!(failed, Err(RunError::Store(_))), "{failed:?}");
    assert_eq!(session.chart().snapshot().drawings.len(), 1, "the body ran");

    let refused = run_on(&mut session, &mut provider, false, RunOptions::default());
    assert_eq!(refused.unwrap_err(), RunError::Unfinished);

    let mut provider = ScriptedProvider::new(vec![say("Done.")]);
    let resumed = run_on(&mut session, &mut provider, true, RunOptions::default()).unwrap();
    assert!(matches!(resumed.outcome, RunOutcome::Completed { .. }));
    assert_eq!(
        session.chart().snapshot().drawings.len(),
        1,
        "the write that did not commit is as if it never ran, and ran once on resume"
    );
    assert_eq!(
        session
            .store()
            .inner
            .chart("s")
            .unwrap()
            .map(|chart| chart.drawings.len()),
        Some(1)
    );
}

/// A user who cancels the run when asked, and never answers.
struct Cancelling(CancelToken);

impl UserResponder for Cancelling {
    fn answer<'a>(&'a self, _: &'a str, _: &'a [String]) -> BoxFuture<'a, Option<String>> {
        self.0.cancel();
        Box::pin(std::future::pending())
    }
}

#[test]
fn a_call_after_its_intent_is_outcome_unknown_even_when_the_resumed_run_is_stopped_first() {
    let registry = registry(CatalogueOptions {
        code_interpreter: true,
    })
    .unwrap();
    let calls: Arc<[ward_core::tool::ToolCall]> = vec![
        call(
            "call_1",
            "ask_user",
            r#"{"question":"Which?","options":["a","b"]}"#,
        ),
        call(
            "call_2",
            "code_interpreter",
            r#"{"language":"python","code":"print(1)"}"#,
        ),
    ]
    .into();
    let mut store = MemoryStore::new();
    let journal = [
        Record::RunStarted {
            run: 0,
            read_only: false,
            disabled: Vec::new(),
            limits: StoredLimits::from(ward_core::driver::Limits::default()),
            prompt: "Run it.".to_owned(),
        },
        Record::Message {
            message: Arc::new(Message::User {
                text: "Run it.".to_owned(),
            }),
        },
        Record::Message {
            message: Arc::new(Message::Assistant {
                text: String::new(),
                calls,
            }),
        },
        Record::Intent {
            index: 1,
            call_id: "call_2".to_owned(),
            tool: "code_interpreter".to_owned(),
        },
    ];
    store.commit("s", &journal, None).unwrap();
    let mut session = Session::open("s", registry, SharedChart::new(0), store).unwrap();
    let cancel = CancelToken::new();
    let options = RunOptions {
        cancel: Some(cancel.clone()),
        user: Arc::new(Cancelling(cancel)),
        ..RunOptions::default()
    };
    let mut provider = ScriptedProvider::new(vec![say("Done.")]);
    let report = run_on(&mut session, &mut provider, true, options).unwrap();
    assert_eq!(report.outcome, RunOutcome::Cancelled);
    let results: Vec<(String, String)> = (session.store().messages("s").iter())
        .filter_map(|message| match &**message {
            Message::Tool {
                call_id, result, ..
            } => Some((call_id.to_string(), code(result).to_owned())),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("call_1".to_owned(), "ABORTED".to_owned()),
            ("call_2".to_owned(), "OUTCOME_UNKNOWN".to_owned())
        ]
    );
}

#[test]
fn a_guarded_call_whose_id_repeats_a_clean_one_is_journaled_with_its_refusal() {
    // The second call repeats the first one's id and carries a configured value, so the
    // guard changes it: a resumed batch only has its guarded form, and the journal keeps
    // the refusal it meets as sent (R3, R22, R33). The first call is clean and journaled
    // with nothing, but its id still counts for the calls after it.
    const SECRET: &str = "sk-live-0123456789abcdef";
    let registry = registry(CatalogueOptions::default()).unwrap();
    let mut session = Session::new("s", registry, SharedChart::new(0), MemoryStore::new());
    let leaky = call(
        "call_1",
        "drawing_create",
        &format!(
            r#"{{"kind":"text","paneId":"main","anchors":[{{"price":10}}],"text":"{SECRET}"}}"#
        ),
    );
    let mut provider =
        ScriptedProvider::new(vec![reply(vec![draw("call_1"), leaky]), say("Done.")]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let input = StartRunInput {
        secrets: vec![SECRET.to_owned()],
        ..input()
    };
    let mut events: Vec<Event> = Vec::new();
    let report = runtime
        .block_on(session.run(input, &mut provider, &mut events, RunOptions::default()))
        .unwrap();
    assert!(matches!(report.outcome, RunOutcome::Completed { .. }));
    let settled: Vec<(u32, String)> = (session.store().journal("s").unwrap().into_iter())
        .filter_map(|record| match record {
            Record::Settled { index, error } => Some((index, error.code.to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(settled, vec![(1, "DUPLICATE_CALL_ID".to_owned())]);
}

/// The drawings on the committed chart after a run of one chart write whose commit number
/// `fail_at` fails, resumed on the same session object.
fn drawings_after_a_failed_commit(fail_at: usize, faults: ward_core::fault::FaultSet) -> usize {
    let registry = registry(CatalogueOptions::default()).unwrap();
    let store = Failing {
        inner: MemoryStore::new(),
        commits: 0,
        fail_at: Some(fail_at),
    };
    let mut session = Session::new("s", registry, SharedChart::new(0), store);
    let options = RunOptions {
        faults,
        ..RunOptions::default()
    };
    let mut provider = ScriptedProvider::new(vec![reply(vec![draw("call_1")]), say("Done.")]);
    if run_on(&mut session, &mut provider, false, options.clone()).is_err() {
        let mut provider = ScriptedProvider::new(vec![say("Done.")]);
        match run_on(&mut session, &mut provider, true, options) {
            // The start never committed: the run never began.
            Err(RunError::NothingToResume) => return 0,
            resumed => assert!(resumed.is_ok(), "{resumed:?}"),
        }
    }
    let committed = session.store().inner.chart("s").unwrap();
    committed.map_or(0, |chart| chart.drawings.len())
}

/// R31 at the core's own API, where the chart lives in the store: whichever commit fails
/// after the run's start, the write is applied once (I15). Over the protocol ward's chart is the world's (SPEC §17 P10)
/// and a rerun body is recognised by its idempotency key, so a chart committed apart from
/// its result shows nowhere on the wire: `result-apart-from-write` is caught here.
#[test]
fn a_chart_write_is_applied_once_whichever_commit_fails() {
    use ward_core::fault::{Fault, FaultSet};
    // Commits: 0 the start, 1 the reply, 2 the results with the chart, 3 the closing reply.
    // Cut at 0 the run never began; at 1 the reply is asked for again and the model, asked
    // again, only answers.
    let correct = (0..6).map(|fail_at| drawings_after_a_failed_commit(fail_at, FaultSet::EMPTY));
    assert_eq!(correct.collect::<Vec<_>>(), [0, 0, 1, 1, 1, 1]);
    if cfg!(feature = "fault-injection") {
        let twice = (0..6).filter(|&fail_at| {
            drawings_after_a_failed_commit(fail_at, FaultSet::only(Fault::ResultApartFromWrite))
                == 2
        });
        assert_eq!(
            twice.collect::<Vec<_>>(),
            [3],
            "result-apart-from-write: the chart commits at 2 without its result, which commit 3 fails to add, so the resumed run draws again"
        );
    }
}
