//! The journal side of the run driver (R30–R34): what a session's journal says of its runs —
//! how many started, and the run a crash cut: where it was cut (before a reply, in a batch),
//! which of its calls were refused, which had their intent committed (R32) — and so what
//! [`Session::resume`](super::Session::resume) takes up.

#[allow(clippy::wildcard_imports)]
use super::*;

/// What [`Session::drive`] runs: a new run, or the rest of one a crash cut.
pub(super) struct Plan<'a> {
    pub(super) run_number: u32,
    /// The session's transcript as committed, not yet guarded for this run.
    pub(super) history: Vec<Arc<Message>>,
    pub(super) limits: Limits,
    /// The prompt: raw for a new run; for a resumed one, as journaled (redacted).
    pub(super) prompt: &'a str,
    pub(super) resume: Option<Resume>,
}

/// Where a cut run takes up again.
#[derive(Clone, Debug)]
pub(super) struct Resume {
    /// Batches the run had run (R34 keeps its turn count).
    pub(super) batches: u32,
    /// Calls that had their result.
    pub(super) calls: u32,
    /// The turn of the next request.
    pub(super) turn: u32,
    pub(super) cut: Cut,
}

/// What the journal's last step of a cut run leaves to do.
#[derive(Clone, Debug)]
pub(super) enum Cut {
    /// Ask the provider (R33): the last step was the prompt or a batch's results.
    Ask,
    /// The last step was a reply without calls: the run completed but its end was not
    /// committed.
    Completed { text: String },
    /// The last step was a reply with calls whose results were not committed: the batch
    /// runs again, but for the calls whose intent was committed (R32).
    Batch {
        calls: Arc<[ToolCall]>,
        intents: BTreeSet<usize>,
        refusals: BTreeMap<usize, ToolError>,
    },
}

/// The run a crash cut, as its journal has it.
pub(super) struct CutRun {
    pub(super) run: u32,
    pub(super) read_only: bool,
    pub(super) disabled: Vec<String>,
    pub(super) limits: Limits,
    pub(super) prompt: String,
    pub(super) resume: Resume,
}

impl CutRun {
    /// The session's last run, when it has no end; `None` when every run ended.
    pub(super) fn find(journal: &[Record], faults: FaultSet) -> Option<CutRun> {
        let start = journal
            .iter()
            .rposition(|record| matches!(record, Record::RunStarted { .. }))?;
        let Record::RunStarted {
            run,
            read_only,
            disabled,
            limits,
            prompt,
        } = &journal[start]
        else {
            return None;
        };
        let steps = &journal[start + 1..];
        if steps
            .iter()
            .any(|record| matches!(record, Record::RunEnded { .. }))
        {
            return None;
        }
        let replies = steps
            .iter()
            .filter(|record| is_reply(record).is_some())
            .count();
        let cut = resumed_cut(faults, steps, cut_of(steps));
        let batches_run = steps
            .iter()
            .filter(|record| is_reply(record).is_some_and(|calls| !calls.is_empty()))
            .count()
            - usize::from(matches!(cut, Cut::Batch { .. }));
        Some(CutRun {
            run: *run,
            read_only: resumed_read_only(faults, *read_only),
            disabled: disabled.clone(),
            limits: Limits::from(*limits),
            prompt: prompt.clone(),
            resume: Resume {
                batches: resumed_batches(faults, u32::try_from(batches_run).unwrap_or(u32::MAX)),
                calls: u32::try_from(
                    steps
                        .iter()
                        .filter(|record| {
                            matches!(record, Record::Message { message }
                            if matches!(**message, Message::Tool { .. }))
                        })
                        .count(),
                )
                .unwrap_or(u32::MAX),
                turn: u32::try_from(replies).unwrap_or(u32::MAX),
                cut,
            },
        })
    }
}

/// The calls of a reply record; `None` for any other record.
pub(super) fn is_reply(record: &Record) -> Option<&Arc<[ToolCall]>> {
    match record {
        Record::Message { message } => match &**message {
            Message::Assistant { calls, .. } => Some(calls),
            _ => None,
        },
        _ => None,
    }
}

/// What the last committed step of a cut run leaves to do (`steps`: its records after its
/// start).
pub(super) fn cut_of(steps: &[Record]) -> Cut {
    let Some(last) = steps
        .iter()
        .rposition(|record| matches!(record, Record::Message { .. }))
    else {
        return Cut::Ask;
    };
    let Record::Message { message } = &steps[last] else {
        return Cut::Ask;
    };
    match &**message {
        Message::Assistant { text, calls } if calls.is_empty() => {
            Cut::Completed { text: text.clone() }
        }
        Message::Assistant { calls, .. } => Cut::Batch {
            calls: Arc::clone(calls),
            intents: intents_after(&steps[last + 1..]),
            refusals: refusals_after(&steps[last + 1..]),
        },
        Message::User { .. } | Message::Tool { .. } => Cut::Ask,
    }
}

/// The settled results journaled with a reply, by batch position.
pub(super) fn refusals_after(records: &[Record]) -> BTreeMap<usize, ToolError> {
    records
        .iter()
        .filter_map(|record| match record {
            Record::Settled { index, error } => Some((*index as usize, error.clone())),
            _ => None,
        })
        .collect()
}

/// The batch positions of the intents among `records`.
pub(super) fn intents_after(records: &[Record]) -> BTreeSet<usize> {
    records
        .iter()
        .filter_map(|record| match record {
            Record::Intent { index, .. } => Some(*index as usize),
            _ => None,
        })
        .collect()
}
