//! Trace digests and trace files (SPEC §10).
//!
//! - [`digest`]: a fixed hash (XXH3-64, the same on every platform and every run; never
//!   `DefaultHasher`) over every boundary record of every run, in order. Two executions of a
//!   scenario are identical exactly when their digests are (I11). The digest reads contents
//!   only: a runtime that shares one record between places and one that sends equal copies
//!   give the same digest.
//! - [`write_jsonl`]: `--trace F.jsonl`, one boundary record per line.
//! - [`chrome_trace`]: `--chrome-trace F.json`, the Trace Event Format that Perfetto and
//!   `chrome://tracing` open: one process per run, provider turns as slices on the
//!   provider's track, every tool call a complete event on its own track, violations as
//!   instants.

use std::io::{self, Write};
use std::sync::Arc;

use serde_json::{Value, json};
use ward_core::chart::ChartState;
use ward_core::envelope::{Outcome, ToolError, ToolResult};
use ward_core::events::{Event, EventKind};
use ward_core::session::Message;
use ward_core::tool::ToolCall;
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use crate::oracle::Violation;
use crate::world::{Record, Trace};

/// The digest of a trace.
pub fn digest(trace: &Trace) -> u64 {
    let mut digester = Digester {
        hasher: Xxh3::new(),
        buffer: Vec::with_capacity(BUFFER_BYTES),
        data: Seen::default(),
        calls: Seen::default(),
        nested: 0,
    };
    for run in &trace.runs {
        digester.u64(run.session as u64);
        digester.u64(run.run as u64);
        for record in &run.records {
            digester.record(record);
        }
        if let Some(error) = &run.start_error {
            digester.str(error);
        }
    }
    digester.flush();
    digester.hasher.digest()
}

/// Fields are gathered in a buffer of this size and hashed in large chunks: one hasher call
/// per field would cost more than the hashing itself. Where the input is cut does not change
/// the hash.
const BUFFER_BYTES: usize = 64 * 1024;

/// Feeds every field of a record to the hash, each with its length or a tag, so that
/// different records never feed the same bytes.
///
/// Result data and call lists are fed as the hash of their contents: one result reaches the
/// events and a message of the store and of the next request, one list of calls the reply,
/// the events and those messages, and each distinct content is walked once per trace
/// ([`Seen`]). Measured with callgrind over seeds 0..2000, `campaign` profile: 1.491 billion
/// instructions for the campaign without the memo, 1.415 billion memoising data, 1.386
/// billion memoising data and calls (7.0 %). Memoising whole messages as well cost 1.3 % more
/// (1.404 billion), so messages are walked wherever they occur.
struct Digester {
    hasher: Xxh3,
    buffer: Vec<u8>,
    data: Seen<Value>,
    calls: Seen<[ToolCall]>,
    /// How many contents are being hashed on their own (see [`Digester::content`]).
    nested: u32,
}

/// Contents already hashed in this trace, with their hashes. Equality decides whether a
/// content was seen (for the `Eq` types kept here, `==` on two `Arc`s that share an
/// allocation answers at once; equal copies are found too, by comparing them).
struct Seen<T: ?Sized> {
    hashed: Vec<(Arc<T>, u64)>,
}

impl<T: ?Sized> Default for Seen<T> {
    fn default() -> Self {
        Seen { hashed: Vec::new() }
    }
}

impl<T: ?Sized + Eq> Seen<T> {
    /// The hash of a content equal to `content`, if one was hashed.
    fn get(&self, content: &Arc<T>) -> Option<u64> {
        self.hashed
            .iter()
            .find(|(seen, _)| seen == content)
            .map(|(_, hash)| *hash)
    }

    fn insert(&mut self, content: &Arc<T>, hash: u64) {
        self.hashed.push((Arc::clone(content), hash));
    }
}

/// Writes `value` as the digest reads it: a tag per node, lengths before strings, arrays and
/// objects, numbers as 8 bytes.
fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.push(0),
        Value::Bool(flag) => out.push(1 + u8::from(*flag)),
        Value::Number(number) => {
            let bits = match (number.as_u64(), number.as_i64()) {
                (Some(unsigned), _) => unsigned,
                (None, Some(signed)) => signed as u64 ^ 0x8000_0000_0000_0000,
                _ => number.as_f64().unwrap_or(0.0).to_bits(),
            };
            out.push(3);
            out.extend_from_slice(&bits.to_le_bytes());
        }
        Value::String(text) => {
            out.push(4);
            write_str(out, text);
        }
        Value::Array(items) => {
            out.push(5);
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            items.iter().for_each(|item| write_value(out, item));
        }
        Value::Object(members) => {
            out.push(6);
            out.extend_from_slice(&(members.len() as u64).to_le_bytes());
            for (key, member) in members {
                write_str(out, key);
                write_value(out, member);
            }
        }
    }
}

/// Writes `text` with its length before it.
fn write_str(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
}

impl Digester {
    fn flush(&mut self) {
        self.hasher.update(&self.buffer);
        self.buffer.clear();
    }

    /// Hashes the buffer once it is full, unless a content is being hashed on its own (its
    /// bytes must stay together).
    fn flush_if_full(&mut self) {
        if self.nested == 0 && self.buffer.len() >= BUFFER_BYTES {
            self.flush();
        }
    }

    /// Feeds the hash of `content`: computed by `write` the first time an equal content comes
    /// by in this trace, looked up in `memo` after that.
    fn content<T: ?Sized + Eq>(
        &mut self,
        memo: fn(&mut Digester) -> &mut Seen<T>,
        content: &Arc<T>,
        write: impl FnOnce(&mut Digester, &T),
    ) {
        let hash = match memo(self).get(content) {
            Some(hash) => hash,
            None => {
                let start = self.buffer.len();
                self.nested += 1;
                write(self, content);
                self.nested -= 1;
                let hash = xxh3_64(&self.buffer[start..]);
                self.buffer.truncate(start);
                memo(self).insert(content, hash);
                hash
            }
        };
        self.u64(hash);
    }

    fn u64(&mut self, value: u64) {
        self.buffer.extend_from_slice(&value.to_le_bytes());
        self.flush_if_full();
    }

    fn tag(&mut self, tag: u8) {
        self.buffer.push(tag);
        self.flush_if_full();
    }

    fn str(&mut self, text: &str) {
        write_str(&mut self.buffer, text);
        self.flush_if_full();
    }

    fn value(&mut self, value: &Value) {
        write_value(&mut self.buffer, value);
        self.flush_if_full();
    }

    fn calls(&mut self, calls: &Arc<[ToolCall]>) {
        self.content(
            |digester| &mut digester.calls,
            calls,
            |digester, calls| {
                digester.u64(calls.len() as u64);
                for call in calls {
                    digester.str(&call.id);
                    digester.str(&call.name);
                    digester.str(&call.arguments);
                }
            },
        );
    }

    fn error(&mut self, error: &ToolError) {
        self.str(&error.code);
        self.str(&error.message);
        self.tag(u8::from(error.retryable));
        self.str(&error.recommended_action);
        for field in error.fields.iter().flatten() {
            self.str(&field.path);
            self.str(&field.message);
        }
    }

    fn result(&mut self, result: &ToolResult) {
        self.tag(u8::from(result.state_changed));
        match &result.outcome {
            Outcome::Success(data) => {
                self.tag(1);
                self.content(|digester| &mut digester.data, data, Digester::value);
            }
            Outcome::Failure(error) => {
                self.tag(0);
                self.error(error);
            }
        }
    }

    fn message(&mut self, message: &Arc<Message>) {
        self.message_fields(message);
    }

    fn message_fields(&mut self, message: &Message) {
        match message {
            Message::User { text } => {
                self.tag(1);
                self.str(text);
            }
            Message::Assistant { text, calls } => {
                self.tag(2);
                self.str(text);
                self.calls(calls);
            }
            Message::Tool {
                call_id,
                name,
                result,
            } => {
                self.tag(3);
                self.str(call_id);
                self.str(name);
                self.result(result);
            }
        }
    }

    fn event(&mut self, event: &Event) {
        self.u64(event.seq);
        self.u64(event.time_ms);
        match &event.kind {
            EventKind::RunStarted { read_only, tools } => {
                self.tag(1);
                self.tag(u8::from(*read_only));
                self.u64(tools.len() as u64);
                tools.iter().for_each(|tool| self.str(tool));
            }
            EventKind::UserMessageCreated { text } => {
                self.tag(2);
                self.str(text);
            }
            EventKind::AssistantMessageCompleted { turn, text, calls } => {
                self.tag(3);
                self.u64(u64::from(*turn));
                self.str(text);
                self.calls(calls);
            }
            EventKind::ToolStarted {
                index,
                call_id,
                name,
            } => {
                self.tag(4);
                self.u64(*index as u64);
                self.str(call_id);
                self.str(name);
            }
            EventKind::ToolFinished {
                index,
                call_id,
                name,
                result,
            } => {
                self.tag(5);
                self.u64(*index as u64);
                self.str(call_id);
                self.str(name);
                self.result(result);
            }
            EventKind::RunCompleted { text } => {
                self.tag(6);
                self.str(text);
            }
            EventKind::RunFailed { error } => {
                self.tag(7);
                self.error(error);
            }
            EventKind::RunCancelled => self.tag(8),
        }
    }

    fn state(&mut self, state: &ChartState) {
        // Serialising plain chart data cannot fail.
        let _ = serde_json::to_writer(&mut self.buffer, state);
        self.flush_if_full();
    }

    fn record(&mut self, record: &Record) {
        match record {
            Record::Request { .. } | Record::Reply { .. } => self.exchange(record),
            Record::BodyStart { .. } | Record::BodyEnd { .. } => self.body(record),
            Record::Event(event) => {
                self.tag(5);
                self.event(event);
            }
            Record::Append { message } => {
                self.tag(6);
                self.message(message);
            }
            Record::Snapshot { seq, state } => {
                self.tag(7);
                self.u64(*seq);
                match state {
                    Some(state) => {
                        self.tag(1);
                        self.state(state);
                    }
                    None => self.tag(0),
                }
            }
            Record::Answer { at_ms, answer } => {
                self.tag(8);
                self.u64(*at_ms);
                self.str(answer.as_deref().unwrap_or("\u{0}"));
            }
            Record::Cancel { at_ms } => {
                self.tag(9);
                self.u64(*at_ms);
            }
            Record::Undo { state } => {
                self.tag(10);
                self.state(state);
            }
            Record::Report {
                outcome,
                code,
                batches,
                calls,
            } => {
                self.tag(11);
                self.str(outcome);
                self.str(code.as_deref().unwrap_or("\u{0}"));
                self.u64(u64::from(*batches));
                self.u64(u64::from(*calls));
            }
        }
    }

    /// A request (tag 1) or a reply (tag 2).
    fn exchange(&mut self, record: &Record) {
        match record {
            Record::Request {
                at_ms,
                turn,
                attempt,
                system_prompt,
                tools,
                kept,
                appended,
            } => {
                self.tag(1);
                self.u64(*at_ms);
                self.u64(u64::from(*turn));
                self.u64(u64::from(*attempt));
                self.str(system_prompt.as_deref().unwrap_or("\u{0}"));
                if let Some(tools) = tools {
                    self.u64(tools.len() as u64);
                    tools.iter().for_each(|tool| self.str(tool));
                }
                self.u64(*kept as u64);
                self.u64(appended.len() as u64);
                appended.iter().for_each(|message| self.message(message));
            }
            Record::Reply {
                at_ms,
                turn,
                attempt,
                text,
                calls,
                error,
            } => {
                self.tag(2);
                self.u64(*at_ms);
                self.u64(u64::from(*turn));
                self.u64(u64::from(*attempt));
                self.str(text);
                self.calls(calls);
                self.str(error.as_deref().unwrap_or(""));
            }
            _ => {}
        }
    }

    /// A body's start (tag 3) or end (tag 4).
    fn body(&mut self, record: &Record) {
        match record {
            Record::BodyStart {
                at_ms,
                index,
                call_id,
                tool,
                input,
            } => {
                self.tag(3);
                self.u64(*at_ms);
                self.u64(*index as u64);
                self.str(call_id);
                self.str(tool);
                self.value(input);
            }
            Record::BodyEnd {
                at_ms,
                index,
                call_id,
                tool,
                outcome,
            } => {
                self.tag(4);
                self.u64(*at_ms);
                self.u64(*index as u64);
                self.str(call_id);
                self.str(tool);
                self.str(outcome);
            }
            _ => {}
        }
    }
}

/// Writes every record of `trace` as one JSON line, each tagged with its session and run.
pub fn write_jsonl(trace: &Trace, output: &mut dyn Write) -> io::Result<()> {
    for run in &trace.runs {
        if let Some(error) = &run.start_error {
            let line = json!({"session": run.session, "run": run.run, "record": "startError", "error": error});
            writeln!(output, "{line}")?;
        }
        for record in &run.records {
            let mut line = serde_json::to_value(record).unwrap_or(Value::Null);
            if let Value::Object(members) = &mut line {
                members.insert("session".to_owned(), json!(run.session));
                members.insert("run".to_owned(), json!(run.run));
            }
            writeln!(output, "{line}")?;
        }
    }
    Ok(())
}

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
