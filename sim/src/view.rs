//! A run's trace arranged for the oracles: requests, replies, and batches with their bodies,
//! events and snapshots. Built only from the boundary records of [`world`](crate::world).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use ward_core::chart::ChartState;
use ward_core::envelope::ToolResult;
use ward_core::events::{Event, EventKind};
use ward_core::session::Message;
use ward_core::tool::ToolCall;

use crate::scenario::RunScript;
use crate::world::{Record, RunTrace};

/// A request the provider received.
#[derive(Debug)]
pub struct RequestView<'a> {
    /// Virtual ms.
    pub at_ms: u64,
    /// Turn.
    pub turn: u32,
    /// Attempt within the turn (R18).
    pub attempt: u32,
    /// The system prompt.
    pub system_prompt: &'a str,
    /// Whether the system prompt differs from the previous request's.
    pub new_system_prompt: bool,
    /// The offered tools.
    pub tools: &'a [Arc<str>],
    /// How many leading messages this request shares with the previous request's transcript.
    pub kept: usize,
    /// The messages after those this request shares with the previous request's transcript
    /// (equal messages, seen in an earlier request).
    pub appended: &'a [Arc<Message>],
}

/// A reply the provider gave.
#[derive(Debug)]
pub struct ReplyView<'a> {
    /// Virtual ms.
    pub at_ms: u64,
    /// Turn.
    pub turn: u32,
    /// Attempt within the turn (R18).
    pub attempt: u32,
    /// The calls.
    pub calls: &'a [ToolCall],
    /// The reply's text.
    pub text: &'a str,
    /// The error code when the provider failed instead.
    pub error: Option<&'a str>,
}

/// A tool body's execution.
#[derive(Debug)]
pub struct BodyView<'a> {
    /// The batch it belongs to.
    pub batch: usize,
    /// The call's position in its batch.
    pub index: usize,
    /// The tool.
    pub tool: &'a str,
    /// The call id as the body saw it.
    pub call_id: &'a str,
    /// The input it received.
    pub input: &'a Value,
    /// Start, virtual ms.
    pub start_ms: u64,
    /// End, virtual ms; `None` when abandoned.
    pub end_ms: Option<u64>,
    /// How it ended (`ok`, its error code, or `panic`); `None` when abandoned.
    pub outcome: Option<&'a str>,
    /// What it returned, in runs with configured secret values (R22).
    pub output: Option<&'a Result<Value, ward_core::envelope::ToolError>>,
}

/// One call's result as the event stream reported it.
#[derive(Debug)]
pub struct Finished<'a> {
    /// The event's sequence number.
    pub seq: u64,
    /// Virtual ms.
    pub at_ms: u64,
    /// The call's position.
    pub index: usize,
    /// The call id (guarded).
    pub call_id: &'a str,
    /// The envelope.
    pub result: &'a ToolResult,
}

/// One batch: a reply with calls and everything that followed until the next request.
#[derive(Debug)]
pub struct BatchView<'a> {
    /// The turn of the reply.
    pub turn: u32,
    /// The batch's start instant: the reply's time.
    pub at_ms: u64,
    /// The calls as sent.
    pub calls: &'a [ToolCall],
    /// Indices into [`RunView::bodies`].
    pub bodies: Vec<usize>,
    /// `tool.started` events: (seq, call index).
    pub started: Vec<(u64, usize)>,
    /// `tool.finished` events.
    pub finished: Vec<Finished<'a>>,
}

impl BatchView<'_> {
    /// The `tool.finished` events of call `index`.
    pub fn finished_of(&self, index: usize) -> impl Iterator<Item = &Finished<'_>> {
        self.finished
            .iter()
            .filter(move |finished| finished.index == index)
    }

    /// The `tool.started` event of call `index`.
    pub fn started_of(&self, index: usize) -> Option<u64> {
        self.started
            .iter()
            .find(|(_, started)| *started == index)
            .map(|(seq, _)| *seq)
    }
}

/// What the runtime's entry point returned at the end of a run.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    /// `run.completed`, `run.failed` or `run.cancelled`.
    pub outcome: &'a str,
    /// The failure's code.
    pub code: Option<&'a str>,
    /// Batches run.
    pub batches: u32,
    /// Calls that got a result.
    pub calls: u32,
}

/// One run, arranged.
#[derive(Debug)]
pub struct RunView<'a> {
    /// The trace.
    pub trace: &'a RunTrace,
    /// The script.
    pub script: &'a RunScript,
    /// Requests, in order.
    pub requests: Vec<RequestView<'a>>,
    /// Replies, in order.
    pub replies: Vec<ReplyView<'a>>,
    /// Batches, in order.
    pub batches: Vec<BatchView<'a>>,
    /// Every body.
    pub bodies: Vec<BodyView<'a>>,
    /// Every event.
    pub events: Vec<&'a Event>,
    /// Session store appends.
    pub appends: Vec<&'a Arc<Message>>,
    /// Snapshots by event sequence number.
    pub snapshots: Snapshots<'a>,
    /// When the scenario cancelled the run.
    pub cancel_at: Option<u64>,
    /// States restored by undo at the end of the session (only on the session's last run).
    pub undone: Vec<&'a ChartState>,
    /// What the runtime's entry point returned, when the run started.
    pub report: Option<Report<'a>>,
}

impl<'a> RunView<'a> {
    /// Arranges `trace`.
    pub fn new(trace: &'a RunTrace, script: &'a RunScript) -> RunView<'a> {
        let mut arranger = Arranger {
            view: RunView {
                trace,
                script,
                requests: Vec::new(),
                replies: Vec::new(),
                batches: Vec::new(),
                bodies: Vec::new(),
                // Most records of a run are events: room for all of them, allocated once.
                events: Vec::with_capacity(trace.records.len()),
                appends: Vec::new(),
                snapshots: Snapshots::default(),
                cancel_at: None,
                undone: Vec::new(),
                report: None,
            },
            open_starts: Vec::new(),
            system_prompt: "",
            offered: &[],
            state: None,
        };
        for record in &trace.records {
            arranger.record(record);
        }
        arranger.view
    }

    /// The requests whose tool list differs from the previous request's (the first one
    /// included): a check of the offer needs to look at each list once.
    pub fn new_offers(&self) -> impl Iterator<Item = &RequestView<'a>> {
        let mut previous: Option<&[Arc<str>]> = None;
        self.requests.iter().filter(move |request| {
            let same = previous == Some(request.tools);
            previous = Some(request.tools);
            !same
        })
    }

    /// The terminal event, if exactly one was last.
    pub fn terminal(&self) -> Option<&'a Event> {
        self.events
            .last()
            .copied()
            .filter(|event| event.kind.is_terminal())
    }

    /// The terminal event's time, or the last record's time.
    pub fn end_ms(&self) -> u64 {
        self.events.last().map_or(0, |event| event.time_ms)
    }

    /// Whether the body of call `index` of `batch` ran.
    pub fn body_ran(&self, batch: &BatchView<'_>, index: usize) -> bool {
        batch
            .bodies
            .iter()
            .any(|&body| self.bodies[body].index == index)
    }

    /// Whether the run was stopped by cancellation or its deadline.
    pub fn was_stopped(&self) -> bool {
        match self.terminal().map(|event| &event.kind) {
            Some(EventKind::RunCancelled) => true,
            Some(EventKind::RunFailed { error }) => error.code == "DEADLINE_EXCEEDED",
            _ => false,
        }
    }

    /// Whether the run ended on its turn limit.
    pub fn hit_turn_limit(&self) -> bool {
        matches!(self.terminal().map(|event| &event.kind), Some(EventKind::RunFailed { error }) if error.code == "TOOL_LOOP_LIMIT")
    }
}

/// A body that has started and not yet ended, by the call it runs.
#[derive(Debug)]
struct OpenBody<'a> {
    /// The call's position in its batch.
    index: usize,
    /// The call id as the body saw it.
    call_id: &'a str,
    /// Its place in [`RunView::bodies`].
    body: usize,
}

/// A [`RunView`] being built, one record at a time, with what the records leave implicit: the
/// system prompt and tool list of the last request that sent them, the last full snapshot,
/// and the bodies still open.
struct Arranger<'a> {
    view: RunView<'a>,
    /// A run has a handful of bodies open at once.
    open_starts: Vec<OpenBody<'a>>,
    system_prompt: &'a str,
    offered: &'a [Arc<str>],
    state: Option<&'a ChartState>,
}

impl<'a> Arranger<'a> {
    /// Adds `record` to the view.
    fn record(&mut self, record: &'a Record) {
        let view = &mut self.view;
        match record {
            Record::Request { .. } | Record::Reply { .. } => self.exchange(record),
            Record::BodyStart { .. } | Record::BodyEnd { .. } => self.body(record),
            Record::Event(event) => self.event(event),
            Record::Append { message } => view.appends.push(message),
            Record::Snapshot { seq, state } => self.snapshot(*seq, state.as_deref()),
            Record::Cancel { at_ms } => view.cancel_at = Some(*at_ms),
            Record::Undo { state } => view.undone.push(state),
            Record::Report {
                outcome,
                code,
                batches,
                calls,
            } => {
                view.report = Some(Report {
                    outcome,
                    code: code.as_deref(),
                    batches: *batches,
                    calls: *calls,
                })
            }
            // A crash trace is read by the durable invariants (`crate::oracle::durable`).
            Record::Answer { .. } | Record::Crash { .. } | Record::Recover { .. } => {}
        }
    }

    /// A request or a reply: a reply with calls opens a batch.
    fn exchange(&mut self, record: &'a Record) {
        let view = &mut self.view;
        match record {
            Record::Request {
                at_ms,
                turn,
                attempt,
                system_prompt: new_prompt,
                tools,
                kept,
                appended,
            } => {
                if let Some(text) = new_prompt {
                    self.system_prompt = text;
                }
                if let Some(names) = tools {
                    self.offered = names;
                }
                view.requests.push(RequestView {
                    at_ms: *at_ms,
                    turn: *turn,
                    attempt: *attempt,
                    system_prompt: self.system_prompt,
                    new_system_prompt: new_prompt.is_some(),
                    tools: self.offered,
                    kept: *kept,
                    appended,
                });
            }
            Record::Reply {
                at_ms,
                turn,
                attempt,
                text,
                calls,
                error,
            } => {
                view.replies.push(ReplyView {
                    at_ms: *at_ms,
                    turn: *turn,
                    attempt: *attempt,
                    calls,
                    text,
                    error: error.as_deref(),
                });
                if error.is_none() && !calls.is_empty() {
                    view.batches.push(BatchView {
                        turn: *turn,
                        at_ms: *at_ms,
                        calls,
                        bodies: Vec::new(),
                        started: Vec::new(),
                        finished: Vec::new(),
                    });
                }
            }
            _ => {}
        }
    }

    /// A body's start, in the current batch (none before the first), or its end.
    fn body(&mut self, record: &'a Record) {
        let view = &mut self.view;
        match record {
            Record::BodyStart {
                at_ms,
                index,
                call_id,
                tool,
                input,
            } => {
                let Some(batch) = view.batches.len().checked_sub(1) else {
                    return;
                };
                let body = view.bodies.len();
                let open = (self.open_starts.iter_mut())
                    .find(|open| open.index == *index && open.call_id == &**call_id);
                match open {
                    Some(open) => open.body = body,
                    None => self.open_starts.push(OpenBody {
                        index: *index,
                        call_id,
                        body,
                    }),
                }
                view.batches[batch].bodies.push(body);
                view.bodies.push(BodyView {
                    batch,
                    index: *index,
                    tool,
                    call_id,
                    input,
                    start_ms: *at_ms,
                    end_ms: None,
                    outcome: None,
                    output: None,
                });
            }
            Record::BodyEnd {
                at_ms,
                index,
                call_id,
                outcome,
                output,
                ..
            } => {
                let open = (self.open_starts.iter())
                    .position(|open| open.index == *index && open.call_id == &**call_id);
                if let Some(open) = open {
                    let body = self.open_starts.swap_remove(open).body;
                    view.bodies[body].end_ms = Some(*at_ms);
                    view.bodies[body].outcome = Some(outcome);
                    view.bodies[body].output = output.as_deref();
                }
            }
            _ => {}
        }
    }

    /// An event, and the current batch's `tool.started` or `tool.finished`.
    fn event(&mut self, event: &'a Event) {
        let view = &mut self.view;
        view.events.push(event);
        let Some(batch) = view.batches.len().checked_sub(1) else {
            return;
        };
        match &event.kind {
            EventKind::ToolStarted { index, .. } => {
                view.batches[batch].started.push((event.seq, *index))
            }
            EventKind::ToolFinished {
                index,
                call_id,
                result,
                ..
            } => {
                view.batches[batch].finished.push(Finished {
                    seq: event.seq,
                    at_ms: event.time_ms,
                    index: *index,
                    call_id,
                    result,
                });
            }
            _ => {}
        }
    }

    /// A snapshot: `None` is the same as the run's previous snapshot. The world always
    /// records a run's first snapshot in full.
    fn snapshot(&mut self, seq: u64, taken: Option<&'a ChartState>) {
        if let Some(taken) = taken {
            self.state = Some(taken);
        }
        debug_assert!(
            self.state.is_some(),
            "a run's first snapshot holds its state"
        );
        if let Some(state) = self.state {
            self.view.snapshots.by_seq.insert(seq, state);
        }
    }
}

/// Chart snapshots by the sequence number of the event they were taken at.
#[derive(Debug, Default)]
pub struct Snapshots<'a> {
    by_seq: BTreeMap<u64, &'a ChartState>,
}

impl<'a> Snapshots<'a> {
    /// The snapshot taken at event `seq`.
    pub fn at(&self, seq: u64) -> Option<&'a ChartState> {
        self.by_seq.get(&seq).copied()
    }

    /// Every snapshot of the run, in the order of the events they were taken at.
    pub fn in_order(&self) -> impl Iterator<Item = (u64, &'a ChartState)> + '_ {
        self.by_seq.iter().map(|(&seq, &state)| (seq, state))
    }
}
