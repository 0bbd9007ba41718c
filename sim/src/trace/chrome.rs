//! The Chrome trace (`--chrome-trace F.json`): the Trace Event Format document of a trace.

use serde_json::{Value, json};
use ward_core::events::{Event, EventKind};

use crate::oracle::Violation;
use crate::world::{Record, Trace};

/// The Trace Event Format document of `trace`. Times are virtual milliseconds, written in
/// microseconds as the format expects.
pub fn chrome_trace(trace: &Trace, violations: &[Violation]) -> Value {
    let mut events = Vec::new();
    let mut next_track = 1u64;
    for (position, run) in trace.runs.iter().enumerate() {
        let pid = position as u64 + 1;
        events.push(json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": format!("session {} run {}", run.session, run.run)}}));
        events.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": 0, "args": {"name": "provider"}}));
        let mut chrome_run = ChromeRun {
            pid,
            request_at: None,
            end_ms: 0,
            calls: Vec::new(),
        };
        for record in &run.records {
            chrome_run.record(record, &mut events, &mut next_track);
        }
        for call in &chrome_run.calls {
            let (start, end) = call.interval();
            events.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": call.track, "args": {"name": format!("call {} {}", call.call_id, call.tool)}}));
            events.push(slice(
                pid,
                call.track,
                &call.tool,
                start,
                end,
                json!({"callId": call.call_id, "index": call.index, "result": call.code}),
            ));
        }
        for violation in violations
            .iter()
            .filter(|violation| violation.session == run.session && violation.run == run.run)
        {
            events.push(json!({
                "ph": "i", "s": "p", "name": format!("{} violated", violation.invariant),
                "pid": pid, "tid": 0, "ts": chrome_run.end_ms * 1000,
                "args": {"explanation": violation.explanation}
            }));
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms"})
}

fn slice(pid: u64, tid: u64, name: &str, start_ms: u64, end_ms: u64, args: Value) -> Value {
    json!({
        "ph": "X", "name": name, "pid": pid, "tid": tid,
        "ts": start_ms * 1000, "dur": end_ms.saturating_sub(start_ms) * 1000,
        "args": args
    })
}

/// One run's process in the Chrome trace while its records are read: provider turns become
/// slices as their replies come, calls are collected to be written after the records.
struct ChromeRun {
    pid: u64,
    /// When the request of the reply to come was sent.
    request_at: Option<u64>,
    /// The last event's time: where the run's violations are marked.
    end_ms: u64,
    calls: Vec<ChromeCall>,
}

impl ChromeRun {
    /// Reads `record`; a reply adds its slice to `events`, a call seen first takes the next
    /// track.
    fn record(&mut self, record: &Record, events: &mut Vec<Value>, next_track: &mut u64) {
        match record {
            Record::Request { at_ms, .. } => self.request_at = Some(*at_ms),
            Record::Reply {
                at_ms,
                turn,
                attempt,
                error,
                calls,
                ..
            } => {
                let start = self.request_at.take().unwrap_or(*at_ms);
                let name = match error {
                    Some(code) => format!("turn {turn} attempt {attempt}: {code}"),
                    None => format!("turn {turn}: {} calls", calls.len()),
                };
                let args = json!({"turn": turn, "attempt": attempt});
                events.push(slice(self.pid, 0, &name, start, *at_ms, args));
            }
            Record::Event(event) => {
                self.end_ms = self.end_ms.max(event.time_ms);
                self.event(event, next_track);
            }
            Record::BodyStart { at_ms, index, .. } => {
                if let Some(call) = self.open_call(*index) {
                    call.body = Some(BodySpan {
                        start_ms: *at_ms,
                        end_ms: None,
                    });
                }
            }
            Record::BodyEnd { at_ms, index, .. } => {
                let running = self.calls.iter_mut().rev().find(|call| {
                    call.index == *index && call.body.is_some_and(|body| body.end_ms.is_none())
                });
                if let Some(body) = running.and_then(|call| call.body.as_mut()) {
                    body.end_ms = Some(*at_ms);
                }
            }
            _ => {}
        }
    }

    /// `tool.started` opens a call; `tool.finished` closes the open call of its index, or
    /// a new one when no `tool.started` opened it.
    fn event(&mut self, event: &Event, next_track: &mut u64) {
        match &event.kind {
            EventKind::ToolStarted {
                index,
                call_id,
                name,
            } => {
                let call = ChromeCall::new(*index, call_id, name, event.time_ms, next_track);
                self.calls.push(call);
            }
            EventKind::ToolFinished {
                index,
                call_id,
                name,
                result,
            } => {
                if self.open_call(*index).is_none() {
                    let call = ChromeCall::new(*index, call_id, name, event.time_ms, next_track);
                    self.calls.push(call);
                }
                if let Some(call) = self.open_call(*index) {
                    call.end_ms = Some(event.time_ms);
                    call.code = result.error_code().unwrap_or("OK").to_owned();
                }
            }
            _ => {}
        }
    }

    /// The latest call of `index` that has not finished.
    fn open_call(&mut self, index: usize) -> Option<&mut ChromeCall> {
        (self.calls.iter_mut().rev()).find(|call| call.index == index && call.end_ms.is_none())
    }
}

/// One call on its own track: the body's interval when a body ran, else from
/// `tool.started` (or `tool.finished`) to `tool.finished`.
struct ChromeCall {
    index: usize,
    call_id: String,
    tool: String,
    track: u64,
    started_ms: u64,
    end_ms: Option<u64>,
    body: Option<BodySpan>,
    code: String,
}

/// When a call's body ran: its end is `None` while it runs, and stays so when abandoned.
#[derive(Clone, Copy)]
struct BodySpan {
    start_ms: u64,
    end_ms: Option<u64>,
}

impl ChromeCall {
    fn new(
        index: usize,
        call_id: &str,
        tool: &str,
        started_ms: u64,
        next_track: &mut u64,
    ) -> ChromeCall {
        let track = *next_track;
        *next_track += 1;
        ChromeCall {
            index,
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            track,
            started_ms,
            end_ms: None,
            body: None,
            code: String::new(),
        }
    }

    fn interval(&self) -> (u64, u64) {
        let end = self.end_ms.unwrap_or(self.started_ms);
        match self.body {
            Some(body) => (body.start_ms, body.end_ms.unwrap_or(end)),
            None => (self.started_ms, end),
        }
    }
}
