//! An execution of a crash plan as the boundary shows it, in order (each observation with
//! its tick, its place in the whole execution): every message the store acknowledged (an
//! `append`), every provider request with its whole transcript and the turn its transcript
//! says it is, every reply as sent, every body start and whether its result was delivered,
//! every crash and recovery, each run's report, and ward's chart (the last snapshot, and every
//! state undo walks back through at the session's end). The durable invariants read only this
//! (SPEC §9, §17): never the runtime's journal or its store.
//!
//! What a run **kept** is read at the boundary too: the run's part of the session's last
//! transcript that shows it (from its prompt to the next run's), followed by what it
//! acknowledged after that request. A commit a crash cut after it was durable and before it
//! was acknowledged is never appended, but a transcript shown after the crash holds it. A
//! run whose last commit no later transcript shows, cut by a crash after its last request,
//! is seen only up to what was shown or acknowledged ([`Story::end_unseen`]): the boundary
//! cannot tell a commit the crash cut once it was durable from one the runtime lost. Every
//! plan's session closes with a run of its own so that no run of the plan is left so.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ward_core::chart::ChartState;
use ward_core::session::Message;
use ward_core::tool::ToolCall;

use crate::world::{Record, Trace};

/// A message the store acknowledged.
#[derive(Clone, Debug)]
pub struct Appended {
    /// The run it was appended in, from 0 over the whole scenario.
    pub run: usize,
    /// The process that appended it, from 0.
    pub process: usize,
    /// When.
    pub tick: usize,
    /// The message.
    pub message: Arc<Message>,
}

/// A provider request.
#[derive(Clone, Debug)]
pub struct Asked {
    /// The run, from 0.
    pub run: usize,
    /// The process that asked.
    pub process: usize,
    /// How many messages had been appended before it, over every run.
    pub after: usize,
    /// When.
    pub tick: usize,
    /// The turn: the replies of the run its transcript holds after the run's prompt.
    pub turn: usize,
    /// The system prompt.
    pub system_prompt: Arc<str>,
    /// The tools offered, in order.
    pub tools: Vec<Arc<str>>,
    /// The whole transcript.
    pub transcript: Vec<Arc<Message>>,
}

/// A body start.
#[derive(Clone, Debug)]
pub struct Started {
    /// The run.
    pub run: usize,
    /// The process.
    pub process: usize,
    /// When.
    pub tick: usize,
    /// When its result was delivered to the runtime, if it was.
    pub delivered: Option<usize>,
    /// The call's position in its batch.
    pub index: usize,
    /// The call, as the body sees it.
    pub call_id: Arc<str>,
    /// The tool.
    pub tool: Arc<str>,
}

/// A reply with calls, as the provider sent it.
#[derive(Clone, Debug)]
pub struct Replied {
    /// The run.
    pub run: usize,
    /// The turn it answered: the turn of the run's last request.
    pub turn: usize,
    /// When.
    pub tick: usize,
    /// The calls, raw.
    pub calls: Arc<[ToolCall]>,
}

/// A crash.
#[derive(Clone, Copy, Debug)]
pub struct Crashed {
    /// The run it cut.
    pub run: usize,
    /// How many messages had been appended before it, over every run.
    pub after: usize,
    /// When.
    pub tick: usize,
}

/// One execution read at its boundary.
#[derive(Clone, Debug, Default)]
pub struct Story {
    /// Every acknowledged message, in order.
    pub appended: Vec<Appended>,
    /// Every request, in order.
    pub asked: Vec<Asked>,
    /// Every body start, in order.
    pub started: Vec<Started>,
    /// Every reply with calls, in order.
    pub replies: Vec<Replied>,
    /// Every crash, in order: crash `n` killed process `n`.
    pub crashes: Vec<Crashed>,
    /// How many times a fresh process was asked to recover a run.
    pub recoveries: usize,
    /// What each run's entry point reported at its end, as JSON, by run.
    pub reports: BTreeMap<usize, String>,
    /// When each run's report came, by run.
    pub reported: BTreeMap<usize, usize>,
    /// The chart ward's bodies left, as the last snapshot shows it.
    pub chart: Option<Arc<ChartState>>,
    /// Each state undo walked back through at the session's end: the chart's history.
    pub history: Vec<Arc<ChartState>>,
    /// What each run kept, by run.
    pub kept: Vec<Vec<Arc<Message>>>,
    /// The runs whose trace ends with a `recover` the fresh runtime answered with nothing:
    /// it took up nothing, the run's end (if the store kept it) never reported.
    pub recovered_nothing: BTreeSet<usize>,
    ticks: usize,
}

impl Story {
    /// Reads `trace`.
    pub fn of(trace: &Trace) -> Story {
        let mut story = Story::default();
        for (run, run_trace) in trace.runs.iter().enumerate() {
            let mut asking = Asking::default();
            for record in &run_trace.records {
                story.read(run, record, &mut asking);
                story.ticks += 1;
            }
            // The session's undo comes after its last run's records.
            let last = (run_trace.records.iter().rev())
                .find(|record| !matches!(record, Record::Undo { .. }));
            if matches!(last, Some(Record::Recover { .. })) {
                story.recovered_nothing.insert(run);
            }
        }
        story.kept = (0..trace.runs.len())
            .map(|run| story.kept_by(run))
            .collect();
        story
    }

    fn read(&mut self, run: usize, record: &Record, asking: &mut Asking) {
        let (process, after, tick) = (self.crashes.len(), self.appended.len(), self.ticks);
        match record {
            Record::Crash { .. } => self.crashes.push(Crashed { run, after, tick }),
            Record::Recover { .. } => self.recoveries += 1,
            Record::Append { message } => self.appended.push(Appended {
                run,
                process,
                tick,
                message: Arc::clone(message),
            }),
            Record::Reply {
                calls, error: None, ..
            } if !calls.is_empty() => {
                let asked = self.asked.iter().rev().find(|asked| asked.run == run);
                self.replies.push(Replied {
                    run,
                    turn: asked.map_or(0, |asked| asked.turn),
                    tick,
                    calls: Arc::clone(calls),
                });
            }
            Record::Request { .. } => {
                let asked = asking.read(record);
                self.asked.push(Asked {
                    run,
                    process,
                    after,
                    tick,
                    ..asked
                });
            }
            Record::BodyStart {
                index,
                call_id,
                tool,
                ..
            } => self.started.push(Started {
                run,
                process,
                tick,
                delivered: None,
                index: *index,
                call_id: Arc::clone(call_id),
                tool: Arc::clone(tool),
            }),
            Record::BodyEnd { index, call_id, .. } => {
                let started = self.started.iter_mut().rev().find(|start| {
                    (start.run, start.process, start.index) == (run, process, *index)
                        && start.call_id == *call_id
                        && start.delivered.is_none()
                });
                if let Some(start) = started {
                    start.delivered = Some(tick);
                }
            }
            Record::Snapshot {
                state: Some(state), ..
            } => self.chart = Some(Arc::clone(state)),
            Record::Undo { state } => self.history.push(Arc::clone(state)),
            Record::Report { .. } => {
                let report = serde_json::to_string(record).unwrap_or_default();
                self.reports.insert(run, report);
                self.reported.insert(run, tick);
            }
            _ => {}
        }
    }

    /// The acknowledged messages of `run`, in order.
    pub fn messages_of(&self, run: usize) -> impl Iterator<Item = &Arc<Message>> {
        (self.appended.iter())
            .filter(move |appended| appended.run == run)
            .map(|appended| &appended.message)
    }

    /// Whether what `run` kept may end before what it kept without crashes: no later run's
    /// request shows it, and a crash came after its last request (what that process
    /// committed last may be kept and never shown).
    pub fn end_unseen(&self, run: usize) -> bool {
        let since = (self.asked.iter().rev())
            .find(|asked| asked.run == run)
            .map_or(0, |asked| asked.tick);
        !self.asked.iter().any(|asked| asked.run > run)
            && (self.crashes.iter()).any(|crash| crash.run == run && crash.tick > since)
    }

    /// What `run` kept: its part of the last transcript that shows it (the run's prompt is
    /// the user message as far from the transcript's last as the runs between them), then what
    /// it acknowledged after that request.
    fn kept_by(&self, run: usize) -> Vec<Arc<Message>> {
        let last = self.asked.iter().rev().find(|asked| asked.run >= run);
        let (mut kept, since) = match last {
            Some(asked) => {
                let prompts: Vec<usize> = (asked.transcript.iter().enumerate())
                    .filter(|(_, message)| matches!(***message, Message::User { .. }))
                    .map(|(at, _)| at)
                    .collect();
                let nth = (prompts.len().checked_sub(1 + asked.run - run))
                    .and_then(|nth| prompts.get(nth).map(|&at| (nth, at)));
                let part = nth.map_or(&[][..], |(nth, at)| {
                    let end = prompts
                        .get(nth + 1)
                        .copied()
                        .unwrap_or(asked.transcript.len());
                    &asked.transcript[at..end]
                });
                let since = if asked.run == run {
                    asked.tick
                } else {
                    usize::MAX
                };
                (part.to_vec(), since)
            }
            None => (Vec::new(), 0),
        };
        let later =
            (self.appended.iter()).filter(|appended| appended.run == run && appended.tick >= since);
        kept.extend(later.map(|appended| Arc::clone(&appended.message)));
        kept
    }
}

/// A run's requests so far: each recorded as a change of the one before (its system prompt
/// and tools when they changed, the transcript's kept head and what follows it).
#[derive(Default)]
struct Asking {
    system_prompt: Arc<str>,
    tools: Vec<Arc<str>>,
    transcript: Vec<Arc<Message>>,
}

impl Asking {
    fn read(&mut self, record: &Record) -> Asked {
        if let Record::Request {
            system_prompt,
            tools,
            kept,
            appended,
            ..
        } = record
        {
            if let Some(text) = system_prompt {
                self.system_prompt = Arc::from(text.as_str());
            }
            if let Some(names) = tools {
                self.tools.clone_from(names);
            }
            self.transcript.truncate(*kept);
            self.transcript.extend(appended.iter().cloned());
        }
        Asked {
            run: 0,
            process: 0,
            after: 0,
            tick: 0,
            turn: turn_of(&self.transcript),
            system_prompt: Arc::clone(&self.system_prompt),
            tools: self.tools.clone(),
            transcript: self.transcript.clone(),
        }
    }
}

/// The replies after the run's prompt (the transcript's last user message).
pub fn turn_of(transcript: &[Arc<Message>]) -> usize {
    let prompt = transcript
        .iter()
        .rposition(|message| matches!(**message, Message::User { .. }));
    transcript[prompt.map_or(0, |at| at + 1)..]
        .iter()
        .filter(|message| matches!(***message, Message::Assistant { .. }))
        .count()
}
