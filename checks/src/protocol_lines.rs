//! The `protocol_lines` check: any bytes as an adapter's standard output, through ward's own
//! reader of it ([`next_answer`], the function the process host reads with; SPEC §15 P1, P3,
//! P6). The outcome is answers or a named violation, never a panic or a hang.
//!
//! # Input
//!
//! The bytes an adapter writes, as they are: no selector, no header. The committed corpus
//! (`corpus/protocol_lines/`) is cut from real adapters' output, one to a few answers a file.
//!
//! # Properties
//!
//! The check reads the input to its end with [`next_answer`], then judges what it read
//! against its own reading of the framing: a line is the bytes up to `\n` (the last one may
//! lack it); a line longer than [`LINE_BYTES_MAX`] bytes without its `\n` is too long; then
//! trailing `\r`s go, and the rest must be UTF-8, JSON, valid against the schema and a
//! [`FromAdapter`].
//!
//! - P1: each message read is, in order, the message of the next line; the reader skips no
//!   line and reads none twice; a message re-encoded by ward decodes to the same message.
//! - P3: every answer is one or more messages ending with `idle` (or `ready`) and holding no
//!   other; an answer is returned as soon as its `idle` is read.
//! - P6: the reading stops with a [`Broken`] exactly at the first line that is not a
//!   message, its reason non-empty and naming what is wrong (too long, not UTF-8, not JSON,
//!   not a message of the protocol), and naming the line itself when it is text; or at the
//!   end of output inside an answer, naming how many messages went without `idle`; or at the
//!   end of output between answers, with no violation.
//! - The outcome does not depend on how the output arrives: read through a small buffer from
//!   a source that gives a few bytes at a time, as a pipe does, it is the same.
//! - No hang: each call of [`next_answer`] reads at least one line or ends the reading, so
//!   the reading takes at most one call more than the input has lines.

use std::io::{BufRead, BufReader, Read};

use serde_json::Value;
use ward_sim::host::process::{Broken, decode, next_answer};
use ward_sim::protocol::{FromAdapter, LINE_BYTES_MAX, schema};

use crate::CheckResult;

/// The bytes a trickling source gives per read.
const TRICKLE_BYTES: usize = 3;
/// The capacity of the buffer over a trickling source.
const TRICKLE_BUFFER_BYTES: usize = 16;

/// Everything the reader made of one output: its answers, then how the reading ended
/// (`None`: the output ended between answers).
#[derive(Debug, PartialEq)]
struct Reading {
    answers: Vec<Vec<FromAdapter>>,
    end: Option<Broken>,
}

/// What the check's own reading expects of one line.
#[derive(Debug)]
enum Expected {
    Message(Box<FromAdapter>),
    TooLong,
    NotUtf8,
    NotJson(String),
    NotMessage(String),
}

/// Checks one fuzz input; see the module docs.
pub fn check_protocol_lines(data: &[u8]) -> CheckResult {
    let reading = read_all(data, data.len())?;
    let trickle = Trickle { rest: data };
    let trickled = read_all(
        BufReader::with_capacity(TRICKLE_BUFFER_BYTES, trickle),
        data.len(),
    )?;
    ensure!(
        trickled == reading,
        "the reading depends on how the output arrives: {reading:?} at once, {trickled:?} a few bytes at a time"
    );
    judge(data, &reading)
}

/// Reads `output` (of `bytes` bytes) to its end as the process host does.
fn read_all(mut output: impl BufRead, bytes: usize) -> Result<Reading, String> {
    let mut answers = Vec::new();
    // Each answer takes at least one line, and each line at least one byte: more answers
    // than bytes would be a reader that returns answers without reading (a hang).
    while answers.len() <= bytes {
        match next_answer(&mut output) {
            Ok(Some(answer)) => answers.push(answer),
            Ok(None) => return Ok(Reading { answers, end: None }),
            Err(broken) => {
                return Ok(Reading {
                    answers,
                    end: Some(broken),
                });
            }
        }
    }
    Err(format!(
        "the reader returned {} answers from {bytes} bytes without ending",
        answers.len()
    ))
}

/// Judges `reading` against the check's own reading of `data`.
fn judge(data: &[u8], reading: &Reading) -> CheckResult {
    let lines = lines_of(data);
    let mut position = 0;
    for (number, answer) in reading.answers.iter().enumerate() {
        ensure!(!answer.is_empty(), "answer {number} holds no message");
        for (offset, message) in answer.iter().enumerate() {
            let Some(line) = lines.get(position) else {
                return Err(format!(
                    "answer {number} holds more messages than the output has lines ({})",
                    lines.len()
                ));
            };
            match expect(line) {
                Expected::Message(expected) => ensure!(
                    *expected == *message,
                    "line {}: the reader read {message:?}, the line is {expected:?}",
                    position + 1
                ),
                other => {
                    return Err(format!(
                        "line {}: the reader read {message:?} from a line it must refuse ({other:?})",
                        position + 1
                    ));
                }
            }
            let last = offset + 1 == answer.len();
            ensure!(
                ends_answer(message) == last,
                "answer {number}: message {offset} of {} ends an answer: {}",
                answer.len(),
                ends_answer(message)
            );
            check_round_trip(message)?;
            position += 1;
        }
    }
    match &reading.end {
        None => {
            ensure!(
                position == lines.len(),
                "the reading stopped at line {} of {} without a violation",
                position + 1,
                lines.len()
            );
            Ok(())
        }
        Some(broken) => judge_broken(&lines, position, broken),
    }
}

/// Judges the violation that ended the reading after `position` lines went into answers.
fn judge_broken(lines: &[&[u8]], position: usize, broken: &Broken) -> CheckResult {
    ensure!(
        !broken.reason.trim().is_empty(),
        "a violation without a reason: {broken:?}"
    );
    // The lines of the unfinished answer: messages, none of which ends an answer.
    let mut at = position;
    let first_refused = loop {
        let Some(line) = lines.get(at) else {
            break None;
        };
        match expect(line) {
            Expected::Message(message) if ends_answer(&message) => {
                return Err(format!(
                    "line {} ends an answer the reader did not return ({broken:?})",
                    at + 1
                ));
            }
            Expected::Message(message) => check_round_trip(&message)?,
            refused => break Some(refused),
        }
        at += 1;
    };
    let Some(refused) = first_refused else {
        let unfinished = at - position;
        ensure!(
            unfinished > 0,
            "a violation at the end of an output that ended between answers: {broken:?}"
        );
        ensure!(
            broken.ended && broken.line.is_none(),
            "the output ended inside an answer, but the violation says otherwise: {broken:?}"
        );
        ensure!(
            broken.reason.contains(&format!("{unfinished} message"))
                && broken.reason.contains("idle"),
            "the end inside an answer of {unfinished} messages is not named so: {broken:?}"
        );
        return Ok(());
    };
    ensure!(
        !broken.ended,
        "line {} breaks the protocol, but the violation is the end of the output: {broken:?}",
        at + 1
    );
    judge_refusal(at + 1, &refused, broken)
}

/// Judges the violation of the refused line `number` (from 1).
fn judge_refusal(number: usize, refused: &Expected, broken: &Broken) -> CheckResult {
    let (named, line) = match refused {
        Expected::Message(_) => unreachable!("a message is not refused"),
        Expected::TooLong => (
            broken.reason == format!("a line longer than {LINE_BYTES_MAX} bytes"),
            None,
        ),
        Expected::NotUtf8 => (broken.reason.contains("not UTF-8"), None),
        Expected::NotJson(text) => (broken.reason.starts_with("not JSON: "), Some(text)),
        Expected::NotMessage(text) => (
            broken.reason.starts_with("not a message of the protocol"),
            Some(text),
        ),
    };
    ensure!(
        named,
        "line {number} ({refused:?}) is refused for the wrong reason: {broken:?}"
    );
    ensure!(
        broken.line.as_ref() == line,
        "the violation of line {number} ({refused:?}) does not name the line as it is: {broken:?}"
    );
    Ok(())
}

/// A message ward encodes decodes to itself.
fn check_round_trip(message: &FromAdapter) -> CheckResult {
    let encoded = serde_json::to_string(message)
        .map_err(|error| format!("{message:?} does not encode: {error}"))?;
    match decode(&encoded) {
        Ok(decoded) => ensure!(
            decoded == *message,
            "{message:?} encodes as {encoded}, which decodes to {decoded:?}"
        ),
        Err(broken) => {
            return Err(format!(
                "{message:?} encodes as {encoded}, which is refused: {}",
                broken.reason
            ));
        }
    }
    Ok(())
}

/// Whether `message` ends an answer.
fn ends_answer(message: &FromAdapter) -> bool {
    matches!(
        message,
        FromAdapter::Idle { .. } | FromAdapter::Ready { .. }
    )
}

/// The lines of `data`, each without its `\n`; the last may lack one, and nothing after a
/// last `\n` is a line.
fn lines_of(data: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = data.split(|&byte| byte == b'\n').collect();
    if lines.last().is_some_and(|line| line.is_empty()) {
        lines.pop();
    }
    lines
}

/// What one line (without its `\n`) must be read as.
fn expect(line: &[u8]) -> Expected {
    if line.len() > LINE_BYTES_MAX {
        return Expected::TooLong;
    }
    let end = line
        .iter()
        .rposition(|&byte| byte != b'\r')
        .map_or(0, |last| last + 1);
    let Ok(text) = std::str::from_utf8(&line[..end]) else {
        return Expected::NotUtf8;
    };
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Expected::NotJson(text.to_owned());
    };
    if !schema().is_valid(&value) {
        return Expected::NotMessage(text.to_owned());
    }
    match serde_json::from_value::<FromAdapter>(value) {
        Ok(message) => Expected::Message(Box::new(message)),
        Err(_) => Expected::NotMessage(text.to_owned()),
    }
}

/// A source that gives a few bytes per read, as a pipe gives what the writer flushed.
struct Trickle<'a> {
    rest: &'a [u8],
}

impl Read for Trickle<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let count = buffer.len().min(TRICKLE_BYTES).min(self.rest.len());
        buffer[..count].copy_from_slice(&self.rest[..count]);
        self.rest = &self.rest[count..];
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &str = r#"{"type":"event","event":{"seq":0,"timeMs":0,"type":"run.started","readOnly":true,"tools":["panes_list"]}}"#;
    const IDLE: &str = r#"{"type":"idle","atMs":40}"#;

    fn read(data: &[u8]) -> Reading {
        read_all(data, data.len()).expect("the reading ends")
    }

    fn broken(data: &[u8]) -> Broken {
        let reading = read(data);
        check_protocol_lines(data).expect("the check holds");
        reading.end.expect("a violation")
    }

    #[test]
    fn a_whole_answer_is_its_messages() {
        let data = format!("{IDLE}\r\n{IDLE}\n");
        let reading = read(data.as_bytes());
        assert_eq!(reading.end, None);
        assert_eq!(reading.answers.len(), 2);
        assert!(matches!(
            reading.answers[0][..],
            [FromAdapter::Idle { at_ms: 40, .. }]
        ));
        check_protocol_lines(data.as_bytes()).expect("the check holds");
    }

    #[test]
    fn an_answer_without_idle_is_a_violation_naming_its_messages() {
        let violation = broken(format!("{IDLE}\n{{\"type\":\"modelCancel\",\"requestId\":\"r0\"}}\n{{\"type\":\"bodyCancel\",\"bodyId\":\"b0\"}}\n").as_bytes());
        assert!(violation.ended, "{violation:?}");
        assert!(
            violation.reason.contains("2 message(s) without idle"),
            "{violation:?}"
        );
    }

    #[test]
    fn a_line_that_is_not_json_is_a_violation_naming_the_line() {
        let violation = broken(format!("{IDLE}\nhello\n{IDLE}\n").as_bytes());
        assert!(violation.reason.starts_with("not JSON: "), "{violation:?}");
        assert_eq!(violation.line.as_deref(), Some("hello"));
        assert!(!violation.ended);
    }

    #[test]
    fn an_unknown_field_or_type_is_a_violation_naming_the_line() {
        for line in [
            r#"{"type":"idle","atMs":0,"at":0}"#,
            r#"{"type":"nap"}"#,
            r#"{"type":"idle"}"#,
        ] {
            let violation = broken(format!("{line}\n").as_bytes());
            assert!(
                violation
                    .reason
                    .starts_with("not a message of the protocol"),
                "{violation:?}"
            );
            assert_eq!(violation.line.as_deref(), Some(line));
        }
    }

    #[test]
    fn a_line_that_is_not_utf8_is_a_violation() {
        let violation = broken(b"{\"type\":\"idle\",\"atMs\":0}\n\xff\xfe\n");
        assert!(violation.reason.contains("not UTF-8"), "{violation:?}");
        assert_eq!(violation.line, None);
    }

    #[test]
    fn a_line_of_the_longest_length_is_read_and_one_byte_more_is_refused() {
        let mut line = IDLE.as_bytes().to_vec();
        line.resize(LINE_BYTES_MAX, b' ');
        line.push(b'\n');
        let reading = read(&line);
        assert_eq!((reading.answers.len(), reading.end), (1, None));
        line.pop();
        line.extend_from_slice(b" \n");
        let violation = read(&line).end.expect("too long");
        assert_eq!(
            violation.reason,
            format!("a line longer than {LINE_BYTES_MAX} bytes")
        );
        check_protocol_lines(&line).expect("the check holds");
    }

    #[test]
    fn an_event_answer_round_trips() {
        let data = format!("{EVENT}\n{IDLE}\n");
        let reading = read(data.as_bytes());
        assert_eq!(reading.answers.first().map(Vec::len), Some(2));
        check_protocol_lines(data.as_bytes()).expect("the check holds");
    }

    #[test]
    fn the_check_fires_on_a_reading_that_is_not_the_output() {
        let data = format!("{EVENT}\nhello\n");
        let mut reading = read(data.as_bytes());
        judge(data.as_bytes(), &reading).expect("the true reading holds");
        let true_end = reading.end.clone();
        // A violation that does not name the line, names no reason, or is the end of output.
        for tamper in [
            |broken: &mut Broken| broken.line = None,
            |broken: &mut Broken| broken.reason.clear(),
            |broken: &mut Broken| broken.ended = true,
        ] {
            let mut end = true_end.clone().expect("a violation");
            tamper(&mut end);
            reading.end = Some(end);
            assert!(judge(data.as_bytes(), &reading).is_err(), "{reading:?}");
        }
        // A line skipped, and an answer cut before its idle.
        let data = format!("{IDLE}\n{EVENT}\n{IDLE}\n");
        let mut reading = read(data.as_bytes());
        judge(data.as_bytes(), &reading).expect("the true reading holds");
        reading.answers[1].remove(0);
        assert!(judge(data.as_bytes(), &reading).is_err());
        let mut reading = read(data.as_bytes());
        reading.answers[1].pop();
        assert!(judge(data.as_bytes(), &reading).is_err());
    }
}
