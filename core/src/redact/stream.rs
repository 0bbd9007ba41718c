//! Streaming redaction (SPEC §7, R24–R29): [`Redactor::redact_stream`] writes exactly the
//! bytes that [`Redactor::redact_bytes`] of the whole input would write, however the reader
//! splits the input, holding a window of it rather than all of it.
//!
//! ```
//! use ward_core::redact::{Redactor, StreamOptions};
//!
//! let redactor = Redactor::new(["provider-key-0123456789"])?;
//! let input = "Authorization:\r\n  Bearer abc$def;x\nkey provider-key-0123456789provider-key-0123456789\n";
//! let options = StreamOptions { window_bytes: 16, count_rules: false };
//! let mut output = Vec::new();
//! // However small the window, the output is that of the whole text.
//! redactor.redact_stream_with(input.as_bytes(), &mut output, &options)?;
//! assert_eq!(output, redactor.redact(input).as_bytes());
//! assert_eq!(output, b"Authorization:\r\n  [REDACTED];x\nkey [REDACTED]\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Design
//!
//! Each window runs the whole-text engine (`engine::find_window`) over a buffer holding a
//! look-behind context and then the new input, and writes out only what is provably final;
//! the rest is read again, with more input after it, by the next window. Final means: the
//! whole input would give the same verdict on every candidate found before the *cut*, and
//! every span starting before the cut. Merging (R29) is what makes this delicate: touching
//! spans become one placeholder, `[REDACTED]` if any secret rule took part, so a span
//! reaching the cut may still grow, and its placeholder is written only once it closes.
//!
//! **Verdicts.** Run on a window, a rule reads "end of text" where the input goes on. So
//! every rule reports, with its span, its *reach*: one past the last byte its verdict
//! depended on, beyond the window when it read where the window ends (`growth::Verdict`).
//! A window only ends on a whole UTF-8 sequence, so a character is never decoded from half
//! of its bytes. Each candidate is then
//! - *settled*, when its reach is inside the window: the verdict is final;
//! - *growing*, when its span exists whatever follows but ends in a run that reaches the
//!   window's end: a key past its 12 (or 10, 16, 20) characters, a credential certain
//!   however it goes on (R25: a header context, or 20 characters that no continuation makes
//!   a plain word, or for `Bearer` 8 with a digit; `auth::stays_certain`), a JWT's payload
//!   or signature, a PEM body once no END line can start within 64 KiB of its header (R26);
//! - *unsettled* otherwise: nothing of it is kept.
//!
//! **The cut** is the least of these positions, lowered until all hold at once (a
//! fixpoint: the cut only moves back, over finitely many candidates):
//! - `window::TAIL_PATTERNS` before the window's end (or the longest configured value, if
//!   longer): an anchor is recognised only whole (`anchors::HIT_REACH_MAX`, 11 bytes), a
//!   value only whole, and a home root may start `home::ROOT_BACK_MAX` (527) bytes before
//!   its `Users` anchor;
//! - the earliest start any unsettled candidate's span could have (`window::span_back_max`
//!   before its anchor);
//! - where a growing span stops being certain (a JWT's `.` that a signature may follow);
//! - the start of any candidate decided once all spans are known (R25 uncertain
//!   credentials, R27 nameless roots, roots after a `:` and roots in a URL's path) whose
//!   decision reads a span at or after the cut, or a span reaching the cut that may still
//!   turn secret;
//! - the anchor of any growing span whose run starts after the cut, or of any span that
//!   starts after the cut though its anchor is before it (a URL's password): these are
//!   found again by the next window.
//!
//! Everything before the cut is written; a span touching it stays *open*. A window that
//! cannot move its cut reads twice as much before trying again, so a stretch that stays
//! undecided costs linear work (R29 (f): the work counter is checked on adversarial inputs).
//!
//! **What crosses the cut.**
//! - *Look-behind.* The next window starts with the last `max(window::LOOK_BEHIND_MAX,
//!   longest value) + 8` bytes before the cut, as the R28 view sees them (invisible
//!   characters removed: every rule reads the view, so a run of invisible characters cannot
//!   push a look-behind out of reach). The bounds: a header context (R25) reads
//!   `auth::HEADER_LOOK_BEHIND_MAX` (145) bytes back, a home root and the `:` before it
//!   (R27) `home::LOOK_BEHIND_MAX` (528), the URL a root may lie in (R27: the root, at most
//!   `home::URL_PATH_MAX`, 1,024, bytes of URL path, the `://` and a 32-byte scheme)
//!   `home::URL_LOOK_BEHIND_MAX` (1,586), a left boundary (R25, R26) one; a character
//!   inside a configured value counts as a boundary, so values reaching into the cut are
//!   kept whole. Candidates found before the cut are not looked at again.
//! - *The spans in the look-behind*: R27 keeps a root in a URL's path unless a span of a
//!   rule that needs nothing else to decide covers part of that URL's `scheme://`, which
//!   may lie in the look-behind, and such a span may have been found by an earlier window
//!   (a key ending in the scheme), or a home that earlier window took in a URL's path or
//!   after a `:` (its name running into the scheme). So the spans of those rules
//!   (configured values included) and those homes that reach into the next window's
//!   look-behind cross the cut too, merged: at most one per byte of the look-behind.
//! - *The open span*: where it starts (when inside the context), its end and its rules. The
//!   next window merges it with what touches it, and the decisions that read other spans
//!   see it as the whole text would.
//! - *Growing spans*, each resumed at the next window's start as the run it ends in
//!   (`growth::Tail`). Exact because every prefix is made of its run's characters (`sk-` of
//!   key characters, …), so the run's end is the same from any byte inside it.
//! - *Per rule, where its last span ends*: the engine skips anchors inside a rule's own
//!   span (`sk-sk-sk-…`), which changes the per-rule counts, not the output.
//! - *Counts*: a candidate counts in the window where it is found before the cut, so
//!   [`StreamReport::counts`] equals [`super::Redaction::counts`] of the whole input.
//!
//! # Memory
//!
//! A window reads [`WINDOW_BYTES_DEFAULT`] (128 KiB) of new input at a time. The buffer
//! holds that, the context (1,594 bytes, or 8 more than the longest value) and the
//! undecided tail read again (at least 538 bytes, for the anchors and roots that may start
//! there).
//! The engine adds, per window: a copy of the window without its invisible characters when
//! it has any; about 100 bytes per span of a pattern rule (the span, where it ends for its
//! rule, and its tally when counting) and per candidate decided at the end; configured
//! values merge as they are found, so a value found at every byte costs one span. The
//! densest spans are one per 8 bytes (`a://:p@ ` repeated), about 2 MiB of bookkeeping per
//! window. Measured peaks of `ward redact --stats` (resident set, with its allocator's
//! retained pages and the command's 6 MiB of read-ahead and write-behind blocks; the
//! `a://:p@ ` figure is the worst found): 26 MB on 1 GiB of log text with secrets
//! throughout (`benches/scripts/log.py`), 49 MB on 256 MiB of `a://:p@ ` (12-01): under
//! the 64 MiB of SPEC §7, and so is every input (below). Giant spans stream in that
//! memory: a credential or key of any length, a configured value repeated back to back, a
//! PEM body, JWT payloads and signatures, wide white space after a scheme word, a long
//! user name. A larger window reads in larger steps, with bookkeeping in proportion.
//!
//! A PEM block's END line is searched for over 64 KiB after its header
//! (`tokens::PEM_LEN_MAX`), so a window narrower than that grows to 64 KiB and more while
//! a header waits; the default window never does.
//!
//! # Every verdict waits a bounded distance
//!
//! An exact streamer must hold a stretch whose verdict waits on a byte further ahead: each
//! of the 2ⁿ texts such a stretch of n bytes can hold comes out verbatim or as a
//! placeholder according to that byte. So every rule stops reading ahead at a bound of
//! its own, in whole text and streaming alike (ward's decisions, each beside its rule, far
//! beyond anything real text holds):
//! - a JWT header is at most 8 KiB (`tokens::JWT_HEADER_LEN_MAX`); a URL password ends at
//!   the last `@` within 8 KiB of the `://` (`tokens::USERINFO_LEN_MAX`); a PEM block's END
//!   line is searched for over 64 KiB (`tokens::PEM_LEN_MAX`);
//! - white space wider than 256 bytes after a scheme word is redacted with whatever
//!   credential follows (`auth::SCHEME_GAP_MAX`; the seed's `\s+` reads any white space
//!   there, so R29 (b) holds); a credential longer than 1,024 bytes looks like one
//!   whatever its characters (`auth::PLAIN_WORD_LEN_MAX`); a scheme word inside a
//!   credential counts as redacted whatever its own decision, so a chain
//!   `Bearer x=bearer x=bearer …` is decided link by link;
//! - a user name's further words add at most 64 bytes; a home in a URL's path or after a
//!   `:` is decided from what precedes it, never from where its name ends, and its span
//!   grows with the name when taken (`engine::pass::PatternPass::home_path`); a root
//!   followed by another root is taken whatever that root's decision, so
//!   `/home//home//home/…` is decided root by root;
//! - a run of more than 16 invisible characters stays in the R28 view
//!   (`invisible::INVISIBLE_RUN_MAX`), so the view of a window is known once the run ends
//!   or passes the bound (a window never ends inside a run whose fate is open:
//!   `invisible::decided_len`).
//!
//! Each bound is in bytes of the view, so invisible characters between the bytes a rule
//! reads (at most 16 in a row) widen it in the input by up to 49 times: still bounded.
//! The window grows, doubling, to hold a stretch that waits, and shrinks back after it.
//! `stretches_that_wait_on_a_later_byte_wait_a_bounded_distance` holds each shape to its
//! bound, and `any_motif_repeated_streams_in_bounded_memory` (a property) holds any
//! opening followed by any motif of the rules' pieces repeated over many look-ahead
//! lengths to the farthest one. Measured peaks of `ward redact` on 32 MiB of each shape
//! that grew the window before these bounds (12-02, `/usr/bin/time`): 23–48 MB, the
//! largest chains of roots (`/Users//Users/x…`, 48 MB) and of credentials (44 MB), and
//! 28–43 MB with 16 zero-width spaces after every character; before, 126–859 MB.

//! # What the streaming relies on
//!
//! The rules' exported bounds above, behind and ahead (R27's URL check among them: ward
//! reads a root as in a URL's path only up to `home::URL_PATH_MAX` bytes after the `://`,
//! in whole text too, which is what makes its look-behind bounded), each rule's
//! `growth::Verdict` (its reach, and the growth of a span that exists whatever follows),
//! `auth::stays_certain` (a certain credential stays certain however it continues), and a
//! cut on a character's first byte (a growing run or an invisible run is read on from
//! there). A rule that reads farther back or ahead, or whose decision can turn back as its
//! match grows, must update those, or the unit tests of this module (exactness and bounded
//! memory) and the streaming property of `core/tests/redact_properties.rs` fail.

use std::io::{self, BufWriter, Read, Write};

use super::engine;
use super::invisible::decided_len;
use super::span::Span;
use super::text::complete_len;
use super::window::{Frame, LOOK_BEHIND_MAX, Settled};
use super::{Redactor, Rule, Work};

/// The default number of new input bytes each window reads: 128 KiB. Larger windows are
/// no faster (the fixed cost of a window is re-reading about 2 KiB) and keep more
/// bookkeeping on span-dense input.
pub const WINDOW_BYTES_DEFAULT: usize = 128 << 10;

/// The smallest window accepted (smaller requests are raised to it).
pub const WINDOW_BYTES_MIN: usize = 16;

/// How [`Redactor::redact_stream_with`] runs.
///
/// ```
/// use ward_core::redact::{Redactor, StreamOptions};
///
/// let redactor = Redactor::new(["provider-key-0123456789"])?;
/// let options = StreamOptions { window_bytes: 64, count_rules: true };
/// let mut output = Vec::new();
/// let report = redactor.redact_stream_with(&b"key provider-key-0123456789 at /home/bob/x"[..], &mut output, &options)?;
/// assert_eq!(output, b"key [REDACTED] at [LOCAL_PATH]/x");
/// assert_eq!(report.placeholders, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamOptions {
    /// New input bytes read per window (at least [`WINDOW_BYTES_MIN`]); the default is
    /// [`WINDOW_BYTES_DEFAULT`]. Memory is about this plus the look-behind context, except
    /// while a stretch of input cannot be decided within it (see the module docs).
    pub window_bytes: usize,
    /// Whether to count the candidates of every rule ([`StreamReport::counts`]), as
    /// [`Redactor::redact_report`] does for whole text. Off by default: counting configured
    /// values costs one more search of them.
    pub count_rules: bool,
}

impl Default for StreamOptions {
    fn default() -> StreamOptions {
        StreamOptions {
            window_bytes: WINDOW_BYTES_DEFAULT,
            count_rules: false,
        }
    }
}

/// What one streaming redaction did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamReport {
    /// Input bytes read.
    pub bytes_read: u64,
    /// Output bytes written.
    pub bytes_written: u64,
    /// Placeholders written (merged spans).
    pub placeholders: u64,
    /// Candidates per rule, indexed by [`Rule::index`], when
    /// [`StreamOptions::count_rules`] is on (zero otherwise): the same as
    /// [`super::Redaction::counts`] for the whole input.
    pub counts: [u64; Rule::COUNT],
    /// Windows run.
    pub windows: u64,
    /// The largest the input buffer grew, in bytes.
    pub buffer_bytes_max: usize,
    /// The steps the redaction took, over every window (R29 (f): linear in the input).
    pub work: Work,
}

impl StreamReport {
    /// The candidate count of one rule.
    pub fn count(&self, rule: Rule) -> u64 {
        self.counts[rule.index()]
    }
}

impl Redactor {
    /// Redacts `reader` into `writer` with bounded memory: the bytes written are exactly
    /// those of [`Redactor::redact_bytes`] of everything read, however the reader splits
    /// them. The writer is flushed at the end.
    ///
    /// ```
    /// use ward_core::redact::Redactor;
    ///
    /// let redactor = Redactor::new(Vec::<String>::new())?;
    /// let input = b"Authorization: Bearer abc123def\nsee /Users/alice/notes.txt";
    /// let mut output = Vec::new();
    /// redactor.redact_stream(&input[..], &mut output)?;
    /// assert_eq!(output, &*redactor.redact_bytes(input));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn redact_stream<R: Read, W: Write>(
        &self,
        reader: R,
        writer: W,
    ) -> io::Result<StreamReport> {
        self.redact_stream_with(reader, writer, &StreamOptions::default())
    }

    /// [`Redactor::redact_stream`] with a window size and per-rule counts of one's choice.
    pub fn redact_stream_with<R: Read, W: Write>(
        &self,
        mut reader: R,
        writer: W,
        options: &StreamOptions,
    ) -> io::Result<StreamReport> {
        let mut writer = BufWriter::with_capacity(OUTPUT_BUFFER_BYTES, writer);
        let mut stream = Stream::new(self, options);
        let result = stream.run(&mut reader, &mut writer);
        let flushed = writer.flush();
        result?;
        flushed?;
        Ok(stream.report)
    }
}

/// The output buffer: placeholders and short stretches between spans are gathered here.
const OUTPUT_BUFFER_BYTES: usize = 64 << 10;

/// The state between two windows.
struct Stream<'r> {
    redactor: &'r Redactor,
    window_bytes: usize,
    /// `[look-behind context (a view) | input not yet settled]`.
    buffer: Vec<u8>,
    /// Bytes of `buffer` holding data.
    filled: usize,
    frame: Frame,
    report: StreamReport,
}

impl<'r> Stream<'r> {
    fn new(redactor: &'r Redactor, options: &StreamOptions) -> Stream<'r> {
        Stream {
            redactor,
            window_bytes: options.window_bytes.max(WINDOW_BYTES_MIN),
            buffer: Vec::new(),
            filled: 0,
            frame: Frame {
                from: 0,
                last: false,
                open: None,
                covered_until: [0; Rule::COUNT],
                carried: Vec::new(),
                resumes: Vec::new(),
                context_len: LOOK_BEHIND_MAX.max(redactor.values.longest()) + CONTEXT_SLACK,
                count: options.count_rules,
            },
            report: StreamReport::default(),
        }
    }

    fn run(&mut self, reader: &mut dyn Read, writer: &mut dyn Write) -> io::Result<()> {
        if self.redactor.values.is_empty() && self.redactor.anchors.is_none() {
            // Nothing to find: the input is the output.
            let copied = io::copy(reader, writer)?;
            self.report.bytes_read = copied;
            self.report.bytes_written = copied;
            return Ok(());
        }
        let scanner = self.redactor.scanner_for(usize::MAX);
        loop {
            let last = self.fill(reader)?;
            let end = if last {
                self.filled
            } else {
                let complete = complete_len(&self.buffer[..self.filled]).max(self.frame.from);
                decided_len(&self.buffer[..complete], self.frame.from).max(self.frame.from)
            };
            self.frame.last = last;
            let settled = engine::find_window(
                &self.redactor.values,
                scanner,
                &self.buffer[..end],
                &self.frame,
            );
            self.report.windows += 1;
            self.report.work.add(&settled.work);
            if settled.progress {
                let open = self.emit(&settled, writer)?;
                self.advance(settled, open);
            }
            if last {
                return Ok(());
            }
        }
    }

    /// Reads until the unsettled input is `window_bytes` longer than it was, and at least
    /// twice as long (so a stretch that stays undecided is read in doubling steps and the
    /// work stays linear); returns whether the input ended.
    fn fill(&mut self, reader: &mut dyn Read) -> io::Result<bool> {
        let retained = self.filled - self.frame.from;
        let want = self.frame.from + (retained + self.window_bytes).max(2 * retained);
        if self.buffer.len() < want {
            self.buffer.resize(want, 0);
        } else if self.buffer.len() > 2 * want {
            // A long undecided stretch is over: give its memory back.
            self.buffer.truncate(want);
            self.buffer.shrink_to_fit();
        }
        self.report.buffer_bytes_max = self.report.buffer_bytes_max.max(self.buffer.len());
        while self.filled < want {
            match reader.read(&mut self.buffer[self.filled..want]) {
                Ok(0) => return Ok(true),
                Ok(read) => {
                    self.filled += read;
                    self.report.bytes_read += read as u64;
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        Ok(false)
    }

    /// Writes the input from the window's start up to what it settled, each closed span as
    /// its placeholder; returns the span still open there, if any.
    fn emit(&mut self, settled: &Settled, writer: &mut dyn Write) -> io::Result<Option<Span>> {
        let live = self.frame.from;
        let mut cursor = live;
        let mut open = None;
        for span in &settled.spans {
            if span.start < live {
                // Only the span left open by the window before reaches into this one; the
                // others lie in the look-behind context, written already.
                if self.frame.open.is_none() || span.end < live {
                    debug_assert!(span.end <= live, "a span crosses a settled cut");
                    continue;
                }
            } else {
                self.write(writer, span.start, cursor)?;
                cursor = span.start;
            }
            if !self.frame.last && span.end >= settled.until {
                open = Some(*span);
                break;
            }
            let placeholder = span.placeholder().as_bytes();
            writer.write_all(placeholder)?;
            self.report.bytes_written += placeholder.len() as u64;
            self.report.placeholders += 1;
            cursor = span.end;
        }
        if open.is_none() {
            self.write(writer, settled.until, cursor)?;
        }
        Ok(open)
    }

    /// Drops what the window settled, keeping the view of its last bytes as the next
    /// window's look-behind, and carries the open span, the growing spans and where each
    /// rule's last span ended into the next frame.
    fn advance(&mut self, settled: Settled, open: Option<Span>) {
        let until = settled.until;
        let context_len = settled.context.len();
        debug_assert!(context_len <= until && until <= self.filled);
        self.buffer.copy_within(until..self.filled, context_len);
        self.buffer[..context_len].copy_from_slice(&settled.context);
        self.filled = context_len + (self.filled - until);
        let shift = |position: usize| {
            if position >= until {
                context_len + (position - until)
            } else {
                0
            }
        };
        self.frame.open = open.map(|span| Span {
            start: settled.open_start_in_context.unwrap_or(0),
            end: shift(span.end),
            rules: span.rules,
        });
        self.frame.covered_until = settled.covered_until.map(shift);
        self.frame.carried = settled.carried;
        self.frame.resumes = settled.resumes;
        self.frame.from = context_len;
        for (total, count) in self.report.counts.iter_mut().zip(settled.counts) {
            *total += count;
        }
    }

    fn write(&mut self, writer: &mut dyn Write, until: usize, from: usize) -> io::Result<()> {
        if until > from {
            writer.write_all(&self.buffer[from..until])?;
            self.report.bytes_written += (until - from) as u64;
        }
        Ok(())
    }
}

/// Bytes of look-behind kept beyond the rules' bounds.
const CONTEXT_SLACK: usize = 8;

#[cfg(test)]
mod tests;
