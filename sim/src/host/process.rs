//! A runtime in another process, behind its adapter (SPEC §15, P1, P6).
//!
//! The adapter is started with `sh -c COMMAND`; ward writes one message per line on its
//! standard input and reads its answers from its standard output, each line checked against
//! the protocol's schema before it is read as a message. Its standard error is its log: ward
//! keeps the last lines for the report of a violation.
//!
//! A misbehaving adapter is a [`Violation`], never a hang or a panic of ward: it exited or
//! closed its output, wrote a line that is not JSON or not a message of the protocol, or sent
//! no `idle` within the watchdog ([`WATCHDOG`], real time: the one place real time enters,
//! outside every trace and digest; time the machine was awake, so that a pause of the whole
//! machine never counts as the adapter's, [`crate::awake`]). After a violation the process is
//! killed; the caller starts a fresh one for the next scenario.
//!
//! ward reads the adapter's output on its own thread, each read polling awake for a moment
//! ([`super::spin`]) and then waiting in `poll(2)` for what is left of the watchdog, a
//! [`SLICE`] at a time ([`Watched`]): no thread and no channel between the pipe and the
//! lockstep, so an exchange costs the two processes' work and, at most, the pipe's two
//! wake-ups.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, BufWriter, ErrorKind, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::spin;
use crate::awake::AwakeClock;
use crate::protocol::{
    FromAdapter, LINE_BYTES_MAX, Ready, Runtime, RuntimeId, ToAdapter, ToolDescription, VERSION,
    VERSION_MIN, Violation, at, schema,
};

/// How long ward waits for the adapter's next line before it calls the adapter hung.
pub const WATCHDOG: Duration = Duration::from_secs(10);

/// The longest ward waits in one `poll(2)`: the watchdog reads its clock at least this often,
/// so that a pause of the machine shows as a gap ([`crate::awake`]). Ten wake-ups a second
/// while an adapter works, none while it answers within the spin.
const SLICE: Duration = Duration::from_millis(100);

/// How many watchdogs ward gives the answer to `hello`: it holds the process's start and the
/// loading of its runtime (a thousand modules for some SDKs), which a loaded machine slows
/// most; a runtime that is hung is still found, later.
const HANDSHAKE_WATCHDOGS: u32 = 6;

/// How many lines of the adapter's standard error a violation quotes.
const STDERR_LINES_KEPT: usize = 8;

/// An adapter process.
pub struct ProcessHost {
    command: String,
    child: Child,
    /// Whether `child` was killed and waited for: its group id may name another group since.
    reaped: bool,
    input: BufWriter<ChildStdin>,
    output: BufReader<Watched>,
    /// Whether a line broke the protocol or the output ended: nothing after it is read.
    broken: bool,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// The thread keeping `stderr`'s tail, which ends at the end of the adapter's standard error.
    stderr_reader: Option<std::thread::JoinHandle<()>>,
    ready: Ready,
    /// The type of the message ward sent last, which the answer being read is to.
    sent: &'static str,
    watchdog: Duration,
    /// The catalogue of the last `reset` this process was sent, for an adapter that keeps it
    /// (`ready.catalogueKept`): a `reset` with the same one leaves `tools` out.
    catalogue: Option<Arc<[ToolDescription]>>,
}

impl ProcessHost {
    /// Starts `command` and shakes hands with it, with the default [`WATCHDOG`].
    pub fn spawn(command: &str) -> Result<ProcessHost, Violation> {
        ProcessHost::spawn_with(command, WATCHDOG)
    }

    /// Starts `command` and shakes hands with it; `watchdog` is how long ward waits for each
    /// line.
    pub fn spawn_with(command: &str, watchdog: Duration) -> Result<ProcessHost, Violation> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            // Its own process group, so that a kill reaches the runtime `sh` started, not
            // only `sh` (which does not exec a command's last process).
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| Violation::new(format!("cannot start `{command}`: {error}")))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err(Violation::new(format!("`{command}` has no pipes")));
        };
        let kept = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&kept);
        let stderr_reader = std::thread::spawn(move || keep_tail(stderr, &tail));
        let mut host = ProcessHost {
            command: command.to_owned(),
            child,
            reaped: false,
            input: BufWriter::new(stdin),
            output: BufReader::new(Watched::new(stdout)),
            broken: false,
            stderr: kept,
            stderr_reader: Some(stderr_reader),
            ready: Ready {
                protocol: VERSION,
                runtime: RuntimeId {
                    name: String::new(),
                    version: String::new(),
                },
                claims: Vec::new(),
                notes: std::collections::BTreeMap::new(),
                durable: None,
                catalogue_kept: false,
            },
            sent: "hello",
            watchdog,
            catalogue: None,
        };
        host.shake_hands()?;
        Ok(host)
    }

    /// `hello`, answered by a `ready` of a protocol ward speaks, and nothing else, within
    /// [`HANDSHAKE_WATCHDOGS`] watchdogs.
    fn shake_hands(&mut self) -> Result<(), Violation> {
        self.write(&ToAdapter::Hello { protocol: VERSION }, None)?;
        let watchdog = self.watchdog;
        self.watchdog = watchdog * HANDSHAKE_WATCHDOGS;
        let answer = self.read_answer();
        self.watchdog = watchdog;
        let mut answer = answer?;
        match (answer.pop(), answer.is_empty()) {
            (
                Some(FromAdapter::Ready {
                    protocol,
                    runtime,
                    claims,
                    notes,
                    durable,
                    catalogue_kept,
                }),
                true,
            ) if (VERSION_MIN..=VERSION).contains(&protocol) => {
                if (durable.is_some() || catalogue_kept) && protocol < 2 {
                    let why = "ready names a durable store or a kept catalogue, which protocol 1 does not know";
                    return Err(self.violation(why.to_owned(), None));
                }
                self.ready = Ready {
                    protocol,
                    runtime,
                    claims,
                    notes,
                    durable,
                    catalogue_kept,
                };
                Ok(())
            }
            (Some(FromAdapter::Ready { protocol, .. }), true) => Err(self.violation(
                format!("the adapter speaks protocol {protocol}, not {VERSION_MIN} to {VERSION}"),
                None,
            )),
            _ => {
                let first = answer.first().map_or_else(|| "idle".to_owned(), kind);
                Err(self.violation(format!("the first answer is {first}, not ready"), None))
            }
        }
    }

    fn write(&mut self, message: &ToAdapter, at_ms: Option<u64>) -> Result<(), Violation> {
        self.sent = message_type(message);
        let line = match self.kept_catalogue(message) {
            Some(kept) => at::encode(&kept, at_ms),
            None => at::encode(message, at_ms),
        }
        .map_err(Violation::new)?;
        let written = writeln!(self.input, "{line}").and_then(|()| self.input.flush());
        written.map_err(|error| {
            // A closed input is, most often, an adapter that went away. What it wrote before
            // says more than the closed pipe: its output is read to its end (or to a broken
            // line) within the watchdog, and then its exit status, if it has one.
            if let Some(broken) = self.rest_broken() {
                return self.violation(broken.reason, broken.line.as_deref());
            }
            let mut status = self.child.try_wait();
            for _ in 0..10 {
                if !matches!(status, Ok(None)) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
                status = self.child.try_wait();
            }
            let reason = match status {
                Ok(Some(status)) => format!("the adapter exited ({status})"),
                _ => format!("cannot write to the adapter: {error}"),
            };
            self.violation(reason, None)
        })
    }

    /// For an adapter that keeps its catalogue, a `reset` whose catalogue is the one the last
    /// `reset` sent: the same `reset` without `tools`. Every other `reset` is remembered.
    fn kept_catalogue(&mut self, message: &ToAdapter) -> Option<ToAdapter> {
        let ToAdapter::Reset {
            seed,
            tools: Some(tools),
            store_dir,
        } = message
        else {
            return None;
        };
        let kept = self.ready.catalogue_kept
            && (self.catalogue.as_ref()).is_some_and(|last| **last == **tools);
        if !kept {
            self.catalogue = Some(Arc::clone(tools));
            return None;
        }
        Some(ToAdapter::Reset {
            seed: *seed,
            tools: None,
            store_dir: store_dir.clone(),
        })
    }

    /// The adapter's next answer: every message up to its `idle` (or `ready`), within the
    /// watchdog.
    fn read_answer(&mut self) -> Result<Vec<FromAdapter>, Violation> {
        let read = match self.broken {
            true => Ok(None),
            false => self.next_within_watchdog(),
        };
        match read {
            Ok(Some(answer)) => Ok(answer),
            Err(_) if self.output.get_ref().timed_out => Err(self.violation(
                format!("no idle within {} ms", self.watchdog.as_millis()),
                None,
            )),
            Err(broken) if !broken.ended => {
                Err(self.violation(broken.reason, broken.line.as_deref()))
            }
            Ok(None) | Err(_) => {
                let reason = match self.exit_status() {
                    Some(status) => format!("the adapter exited ({status})"),
                    None => format!(
                        "the adapter closed its output and had not exited {} ms later",
                        self.watchdog.as_millis()
                    ),
                };
                Err(self.violation(reason, None))
            }
        }
    }

    /// The next answer on the output, its reads bounded by the watchdog from now; a broken
    /// line or the output's end ends the reading for good.
    fn next_within_watchdog(&mut self) -> Result<Option<Vec<FromAdapter>>, Broken> {
        self.output.get_mut().arm(self.watchdog);
        let read = next_answer(&mut self.output);
        self.broken = !matches!(read, Ok(Some(_)));
        read
    }

    /// After a failed write: the line that broke the protocol in what the adapter wrote up to
    /// its output's end (answers read over within the watchdog), if one did.
    fn rest_broken(&mut self) -> Option<Broken> {
        while !self.broken {
            match self.next_within_watchdog() {
                Ok(_) => {}
                Err(broken) if broken.ended || self.output.get_ref().timed_out => return None,
                Err(broken) => return Some(broken),
            }
        }
        None
    }

    /// The adapter's exit status once it exits, within the watchdog; `None` if it is still
    /// running then (it closed its output and lives on: never waited for without end).
    fn exit_status(&mut self) -> Option<String> {
        let step = Duration::from_millis(10);
        let mut waited = Duration::ZERO;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status.to_string()),
                Err(error) => return Some(error.to_string()),
                Ok(None) if waited >= self.watchdog => return None,
                Ok(None) => {
                    std::thread::sleep(step);
                    waited += step;
                }
            }
        }
    }

    /// A violation naming the command, the line and the adapter's last words; the process is
    /// killed.
    fn violation(&mut self, message: String, line: Option<&str>) -> Violation {
        self.kill();
        self.read_stderr_to_its_end();
        let mut text = format!(
            "{message}, in answer to {} (adapter `{}`)",
            self.sent, self.command
        );
        if let Some(line) = line {
            let shown: String = line.chars().take(300).collect();
            text.push_str(&format!("; the line: {shown}"));
        }
        let tail = self
            .stderr
            .lock()
            .map(|tail| tail.iter().cloned().collect::<Vec<_>>());
        if let Ok(tail) = tail
            && !tail.is_empty()
        {
            text.push_str(&format!("; its standard error ends: {}", tail.join(" | ")));
        }
        Violation::new(text)
    }
}

impl ProcessHost {
    /// Waits, within the watchdog, until the adapter's standard error is read to its end (its
    /// group killed, no writer is left), so that a violation quotes what the adapter said last
    /// before it went, not what happened to be read by then.
    fn read_stderr_to_its_end(&mut self) {
        let Some(reader) = self.stderr_reader.take() else {
            return;
        };
        let step = Duration::from_millis(1);
        let mut waited = Duration::ZERO;
        while !reader.is_finished() && waited < self.watchdog {
            std::thread::sleep(step);
            waited += step;
        }
        if reader.is_finished() {
            let _ = reader.join();
        }
    }

    /// Kills the adapter with `SIGKILL` (SPEC §17 P9, kill mode), every process of its
    /// group, and waits for it.
    pub fn kill(&mut self) {
        if std::mem::replace(&mut self.reaped, true) {
            return;
        }
        let group = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Runtime for ProcessHost {
    fn exchange(&mut self, message: ToAdapter) -> Result<Vec<FromAdapter>, Violation> {
        self.answer(&message, None)
    }

    fn exchange_at(
        &mut self,
        message: ToAdapter,
        at_ms: u64,
    ) -> Result<Vec<FromAdapter>, Violation> {
        self.answer(&message, Some(at_ms))
    }

    fn ready(&self) -> Option<&Ready> {
        Some(&self.ready)
    }
}

impl ProcessHost {
    /// Writes `message` (with its instant) and reads the answer to it.
    fn answer(
        &mut self,
        message: &ToAdapter,
        at_ms: Option<u64>,
    ) -> Result<Vec<FromAdapter>, Violation> {
        self.write(message, at_ms)?;
        let answer = self.read_answer()?;
        if answer
            .iter()
            .any(|message| matches!(message, FromAdapter::Ready { .. }))
        {
            return Err(self.violation("ready out of turn".to_owned(), None));
        }
        Ok(answer)
    }
}

impl Drop for ProcessHost {
    fn drop(&mut self) {
        self.kill();
    }
}

fn message_type(message: &ToAdapter) -> &'static str {
    match message {
        ToAdapter::Hello { .. } => "hello",
        ToAdapter::Reset { .. } => "reset",
        ToAdapter::StartRun(_) => "startRun",
        ToAdapter::Advance { .. } => "advance",
        ToAdapter::ModelReply { .. } => "modelReply",
        ToAdapter::ModelError { .. } => "modelError",
        ToAdapter::BodyResult { .. } => "bodyResult",
        ToAdapter::BodyPanic { .. } => "bodyPanic",
        ToAdapter::Answer { .. } => "answer",
        ToAdapter::Cancel => "cancel",
        ToAdapter::Crash => "crash",
        ToAdapter::Recover { .. } => "recover",
    }
}

fn kind(message: &FromAdapter) -> String {
    serde_json::to_value(message)
        .ok()
        .and_then(|value| value["type"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Why reading an adapter's output stopped short of an answer's end (P6): a line that breaks
/// the protocol, or the end of the output inside an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broken {
    /// Why, in words for the report of the violation; never empty.
    pub reason: String,
    /// The line, when it is UTF-8 text within the limit.
    pub line: Option<String>,
    /// Whether the output ended inside an answer rather than a line breaking it; the process
    /// host names the adapter's exit then.
    pub ended: bool,
}

impl Broken {
    fn new(reason: impl Into<String>, line: Option<&str>) -> Broken {
        Broken {
            reason: reason.into(),
            line: line.map(str::to_owned),
            ended: false,
        }
    }
}

/// The adapter's output, each read waiting in `poll(2)` until the watchdog is spent at most:
/// past it a read fails `TimedOut` and `timed_out` says so. Real time the machine was awake,
/// for the watchdog alone.
struct Watched<R = ChildStdout> {
    stdout: R,
    /// Time awake since the answer's first read was armed ([`Watched::arm`]).
    clock: AwakeClock,
    limit: Duration,
    timed_out: bool,
    /// How long a read polls awake before it sleeps ([`spin`]).
    spin: Duration,
}

impl<R> Watched<R> {
    fn new(stdout: R) -> Watched<R> {
        Watched {
            stdout,
            clock: AwakeClock::start(),
            limit: Duration::ZERO,
            timed_out: false,
            spin: spin::budget(),
        }
    }

    /// Gives the reads from now `limit` of time awake.
    fn arm(&mut self, limit: Duration) {
        self.clock = AwakeClock::start();
        self.limit = limit;
    }

    /// What is left of the limit awake; `TimedOut` (and `timed_out` set) once it is spent.
    fn left(&mut self) -> std::io::Result<Duration> {
        let left = self.clock.left(self.limit, SLICE);
        if left.is_zero() {
            self.timed_out = true;
            return Err(ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl<R: Read + std::os::fd::AsFd> Read for Watched<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        // Every read reads the clock, also one that finds its bytes at once: an adapter that
        // writes without end and without `idle` is timed out, its stream counted in full.
        self.left()?;
        if spin::ready_within(&self.stdout, self.spin) {
            return self.stdout.read(buffer);
        }
        loop {
            let timeout =
                Timespec::try_from(self.left()?.min(SLICE)).map_err(std::io::Error::other)?;
            let mut fds = [PollFd::new(&self.stdout, PollFlags::IN)];
            match poll(&mut fds, Some(&timeout)) {
                // A slice spent: the loop's head reads the clock again.
                Ok(0) => {}
                // Readable, or hung up or in error: the read says which.
                Ok(_) => return self.stdout.read(buffer),
                Err(rustix::io::Errno::INTR) => {}
                Err(error) => return Err(error.into()),
            }
        }
    }
}

/// The next answer on an adapter's output, read as the process host reads it (P1, P3): its
/// messages up to and including `idle` (or `ready`), one per line, each line at most
/// [`LINE_BYTES_MAX`] bytes without its `\n`, UTF-8, JSON, and a message of the schema and of
/// [`FromAdapter`]. `Ok(None)` when the output ends between answers. A line too long, not
/// UTF-8, not JSON or not a message, or the end of the output inside an answer, is
/// [`Broken`], and nothing after it is read.
pub fn next_answer(reader: &mut impl BufRead) -> Result<Option<Vec<FromAdapter>>, Broken> {
    let mut answer = Vec::new();
    loop {
        let Some(message) = next_message(reader)? else {
            if answer.is_empty() {
                return Ok(None);
            }
            return Err(Broken {
                reason: format!(
                    "the output ended inside an answer: {} message(s) without idle",
                    answer.len()
                ),
                line: None,
                ended: true,
            });
        };
        let ends = matches!(
            message,
            FromAdapter::Idle { .. } | FromAdapter::Ready { .. }
        );
        answer.push(message);
        if ends {
            return Ok(Some(answer));
        }
    }
}

/// The next line as a message; `None` at the end of the output.
fn next_message(reader: &mut impl BufRead) -> Result<Option<FromAdapter>, Broken> {
    let mut line = Vec::new();
    // The longest line, its `\n` and one byte more: a longer line is known without reading it.
    let read = reader
        .take(LINE_BYTES_MAX as u64 + 2)
        .read_until(b'\n', &mut line);
    match read {
        Ok(0) => return Ok(None),
        Ok(_) => {}
        Err(error) => {
            let reason = format!("cannot read the adapter's output: {error}");
            return Err(Broken::new(reason, None));
        }
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    if line.len() > LINE_BYTES_MAX {
        let reason = format!("a line longer than {LINE_BYTES_MAX} bytes");
        return Err(Broken::new(reason, None));
    }
    while line.last() == Some(&b'\r') {
        line.pop();
    }
    match String::from_utf8(line) {
        Ok(text) => decode(&text).map(Some),
        Err(_) => Err(Broken::new("a line that is not UTF-8", None)),
    }
}

/// One line, without its `\n`, as a message of the protocol: JSON, valid against the schema,
/// and a [`FromAdapter`].
pub fn decode(line: &str) -> Result<FromAdapter, Broken> {
    let value: Value = serde_json::from_str(line)
        .map_err(|error| Broken::new(format!("not JSON: {error}"), Some(line)))?;
    if !schema().is_valid(&value) {
        let reason = match schema().iter_errors(&value).next() {
            Some(error) => {
                let pointer = error.instance_path().to_string();
                let at = if pointer.is_empty() {
                    "/".to_owned()
                } else {
                    pointer
                };
                format!("not a message of the protocol: at {at}: {error}")
            }
            None => "not a message of the protocol".to_owned(),
        };
        return Err(Broken::new(reason, Some(line)));
    }
    serde_json::from_value(value).map_err(|error| {
        Broken::new(
            format!("not a message of the protocol: {error}"),
            Some(line),
        )
    })
}

fn keep_tail(stderr: impl Read, tail: &Mutex<VecDeque<String>>) {
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { return };
        let Ok(mut tail) = tail.lock() else { return };
        if tail.len() == STDERR_LINES_KEPT {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An adapter's output that is a file of 64 bytes, armed with `limit` and read once:
    /// `poll(2)` finds a file readable at once, so every read has its bytes there, as from an
    /// adapter that never stops writing.
    fn read_once_within(name: &str, limit: Duration) -> Watched<std::fs::File> {
        let path = std::env::temp_dir().join(format!("ward-watched-{name}-{}", std::process::id()));
        std::fs::write(&path, [b'x'; 64]).expect("a temporary file");
        let file = std::fs::File::open(&path).expect("the file just written");
        let _ = std::fs::remove_file(&path);
        let mut output = Watched::new(file);
        output.arm(limit);
        assert_eq!(output.read(&mut [0; 8]).expect("within the limit"), 8);
        output
    }

    #[test]
    fn a_read_past_the_limit_times_out_though_its_bytes_are_there() {
        let mut output = read_once_within("past", Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(60));
        let error = output.read(&mut [0; 8]).expect_err("the limit is spent");
        assert_eq!(error.kind(), ErrorKind::TimedOut);
        assert!(output.timed_out);
    }

    #[test]
    fn a_pause_between_reads_is_not_the_adapters_time() {
        // 1.5 s without a reading, past a slice and a second: a pause, which counts a slice.
        let mut output = read_once_within("pause", Duration::from_millis(500));
        std::thread::sleep(Duration::from_millis(1_500));
        assert_eq!(output.read(&mut [0; 8]).expect("a pause is not counted"), 8);
        assert!(!output.timed_out);
    }
}
