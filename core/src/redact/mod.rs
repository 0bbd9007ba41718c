//! Redaction (SPEC §7, R24–R29): secrets and home paths never leave the runtime.
//!
//! ```
//! use ward_core::redact::Redactor;
//!
//! let redactor = Redactor::new(["tvly-0123456789abcdef"])?;
//! let prompt = "Authorization: Bearer abc$def;x key=tvly-0123456789abcdef in C:\\Users\\John Smith\\Desktop";
//! assert_eq!(
//!     redactor.redact(prompt),
//!     "Authorization: [REDACTED];x key=[REDACTED] in [LOCAL_PATH]\\Desktop",
//! );
//! // Nothing to redact: the input comes back borrowed.
//! assert!(matches!(redactor.redact("Explain the basic concepts"), std::borrow::Cow::Borrowed(_)));
//! # Ok::<(), ward_core::redact::RedactError>(())
//! ```
//!
//! # Design
//!
//! The seed's rules (`baseline`) run one after another, so once an earlier pattern has
//! replaced part of a secret the exact-value pass cannot find it. Here every rule reports
//! candidate *spans* on the same text, the original input; overlapping or touching spans
//! merge, and each merged span becomes one placeholder, `[REDACTED]` if any secret rule took
//! part, else `[LOCAL_PATH]` (R29). The output is written in one pass.
//!
//! | rule ([`Rule`]) | spec | module |
//! |---|---|---|
//! | `exact-value` | R24 | `exact` |
//! | `auth-value` | R25 | `auth` |
//! | `sk-key`, `github-token`, `aws-key-id`, `slack-token` | R26 | `keys` |
//! | `jwt`, `pem-private-key`, `url-password` | R26 | `tokens` |
//! | `home-path` | R27 | `home` |
//!
//! - **Invisible characters (R28)** (soft hyphen, zero-width characters, directional
//!   marks, word joiner, BOM) are removed from a *view* of the input before any rule runs;
//!   spans found on the view are mapped back, so each covers the invisible characters inside
//!   it and right after it (`invisible`). Configured values are matched without theirs.
//! - **Speed.** The pattern rules start at rare anchors (`sk-`, `eyJ`, `rer` of `bearer` in
//!   every case, …) found by one Teddy SIMD search with hand-placed buckets, and at `_`,
//!   `\` and `/` found by one `memchr3`; each anchor is then verified exactly on the text
//!   (`anchors`). Up to four configured values ride along the Teddy search through their
//!   rarest three-byte window; more use an overlapping Aho-Corasick search, and
//!   [`Redactor::values_only`] one `memmem` per value (`exact`). ASCII input skips the
//!   invisible-character scan, input without invisible characters is never copied, and
//!   input with nothing to redact is returned borrowed. Figures: `benches/README.md`.
//! - **Linear work (R29 (f)).** Every rule's failed candidate reads a bounded number of
//!   bytes or bytes no other candidate of that rule reads again; a successful one covers the
//!   later anchors inside it. [`Redactor::redact_report`] returns a [`Work`] counter that
//!   the tests check on adversarial inputs.
//! - **Idempotence (R29 (d)).** A rule's context is judged as the output will show it: a
//!   character inside a configured value counts as a boundary (it becomes `]`), an
//!   authorization credential that holds another span is judged with that span's
//!   placeholder in it, a home root whose name is another span joins it, and values that
//!   could overlap a placeholder are refused. Redacting the output again changes nothing.
//! - **UTF-8.** [`Redactor::redact_bytes`] takes any bytes; invalid bytes count as
//!   ordinary characters (never white space) and pass through unchanged unless inside a
//!   span. For `&str` input every span starts and ends on a character boundary, so the
//!   output is valid UTF-8.
//! - **Work counter.** [`Redactor::redact_report`] also returns per-rule candidate counts
//!   (`ward redact --stats`) and the [`Work`] counter behind R29 (f).
//! - **Streaming.** [`Redactor::redact_stream`] writes exactly what [`Redactor::redact_bytes`]
//!   of the whole input would, from any reader, holding a window (128 KiB) instead of the
//!   input: every rule reports how far its verdict read, and only what no later byte can
//!   change is written; a span still growing at a window's end (a key, a credential, a
//!   configured value repeated back to back, a PEM body) is carried on, not held. The
//!   design, the bounds it relies on and the few stretches that no streamer can decide in
//!   bounded memory: `stream.rs`.
//! - **Limits.** No input length limit; positions are `usize`. Bounded look-arounds: a
//!   header context skips at most 64 bytes of white space; a UNC host or share segment is
//!   at most 255 bytes; a PEM block is searched for its END line over at most 64 KiB; a
//!   user name adds at most two space-separated words (64 bytes).
//!
//! [`baseline`] keeps the seed's algorithm as a test oracle and benchmark baseline.

mod anchors;
mod auth;
pub mod baseline;
mod context;
mod engine;
mod exact;
mod growth;
mod home;
mod invisible;
mod keys;
mod rule;
mod span;
mod stream;
mod text;
mod tokens;
mod window;
mod work;

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

pub use exact::SECRET_CHARS_MIN;
pub use rule::{Rule, RuleSet};
pub use span::Span;
pub use stream::{StreamOptions, StreamReport, WINDOW_BYTES_DEFAULT, WINDOW_BYTES_MIN};
pub use work::Work;

use anchors::AnchorScanner;
use exact::ExactValues;

/// The placeholder of a span that any secret rule took part in.
///
/// ```
/// use ward_core::redact::{REDACTED, Redactor};
///
/// let redactor = Redactor::new(Vec::<String>::new())?;
/// assert_eq!(redactor.redact("sk-abcdefghijklmnop"), REDACTED);
/// # Ok::<(), ward_core::redact::RedactError>(())
/// ```
pub const REDACTED: &str = "[REDACTED]";
/// The placeholder of a span that only the home-path rule (R27) formed.
///
/// ```
/// use ward_core::redact::{LOCAL_PATH, Redactor};
///
/// let redactor = Redactor::new(Vec::<String>::new())?;
/// assert_eq!(redactor.redact("/home/alice"), LOCAL_PATH);
/// # Ok::<(), ward_core::redact::RedactError>(())
/// ```
pub const LOCAL_PATH: &str = "[LOCAL_PATH]";

/// Why a redactor could not be built. Messages name the secret by its position in the
/// list (1 for the first), never by its value.
///
/// ```
/// use ward_core::redact::{RedactError, Redactor};
///
/// let error = Redactor::new(["a-long-enough-value", "hunter2"]).unwrap_err();
/// assert!(matches!(error, RedactError::SecretTooShort { index: 2, characters: 7, minimum: 8 }));
/// assert!(error.to_string().starts_with("secret #2 has 7 characters"));
/// assert!(!error.to_string().contains("hunter2"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RedactError {
    /// A configured value is too short to be told apart from ordinary text (R24).
    #[error(
        "secret #{index} has {characters} characters; a secret value needs at least {minimum} (invisible format characters are not counted)"
    )]
    SecretTooShort {
        /// The value's position in the list, from 1.
        index: usize,
        /// Its length in characters.
        characters: usize,
        /// The minimum.
        minimum: usize,
    },
    /// A configured value occurs inside a placeholder text, so every output holding that
    /// placeholder would contain it (R24).
    #[error(
        "secret #{index} occurs inside the placeholder text {placeholder}, so it cannot be redacted"
    )]
    SecretInsidePlaceholder {
        /// The value's position in the list, from 1.
        index: usize,
        /// The placeholder.
        placeholder: &'static str,
    },
    /// A configured value contains a placeholder text or overlaps one at an end, so a
    /// placeholder and the text beside it could form it again (R29 (d)).
    #[error(
        "secret #{index} contains or overlaps the placeholder text {placeholder} (it begins with the placeholder's end or ends with its beginning), so redacted text could form it again"
    )]
    SecretOverlapsPlaceholder {
        /// The value's position in the list, from 1.
        index: usize,
        /// The placeholder.
        placeholder: &'static str,
    },
    /// The values could not be compiled into a matcher (for example too many to fit).
    #[error("the secret values could not be compiled into a matcher: {message}")]
    Matcher {
        /// The matcher's explanation.
        message: String,
    },
}

/// The redactor: configured secret values (R24) and, unless built with
/// [`Redactor::values_only`], every pattern rule (R25–R27), all with R28 and R29.
///
/// Cheap to clone (the matchers are shared), `Send` and `Sync`.
///
/// ```
/// use ward_core::redact::Redactor;
///
/// let redactor = Redactor::new(Vec::<String>::new())?;
/// assert_eq!(redactor.redact("key sk-proj-abcdefghijk-"), "key [REDACTED]");
/// assert_eq!(redactor.redact("B\u{200B}earer abc123456789"), "[REDACTED]");
/// assert_eq!(redactor.redact("c:\\users\\x\\y"), "[LOCAL_PATH]\\y");
/// # Ok::<(), ward_core::redact::RedactError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Redactor {
    values: ExactValues,
    anchors: Option<Arc<AnchorScanner>>,
    /// The scanner with the configured values woven into the anchor search, built the first
    /// time a large input comes by: for large inputs it saves one pass per value, for small
    /// ones (prompts, one per run) building it would cost more than it saves.
    woven: Arc<OnceLock<Option<Arc<AnchorScanner>>>>,
}

/// From this input size on, the values ride along the anchor search (prompts are usually
/// shorter, and a run redacts one prompt).
const WOVEN_BYTES_MIN: usize = 1024;

/// The scanner of the pattern rules alone; always the same, so built once per process.
fn value_free_scanner() -> Result<Arc<AnchorScanner>, RedactError> {
    static VALUE_FREE: OnceLock<Result<Arc<AnchorScanner>, String>> = OnceLock::new();
    VALUE_FREE
        .get_or_init(|| {
            AnchorScanner::new(&[])
                .map(Arc::new)
                .map_err(|error| error.to_string())
        })
        .clone()
        .map_err(|message| RedactError::Matcher { message })
}

/// The outcome of one redaction: the output, the merged spans, per-rule counts and the work
/// counter (R29 (f)).
///
/// ```
/// use ward_core::redact::{Redactor, Rule};
///
/// let redactor = Redactor::new(Vec::<String>::new())?;
/// let report = redactor.redact_report(b"Bearer abcdefgh1 and Basic concepts");
/// assert_eq!(&*report.output, b"[REDACTED] and Basic concepts");
/// assert_eq!(report.count(Rule::AuthValue), 1);
/// assert_eq!(report.spans.len(), 1);
/// # Ok::<(), ward_core::redact::RedactError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Redaction<'a> {
    /// The redacted bytes (borrowed when nothing matched).
    pub output: Cow<'a, [u8]>,
    /// The merged spans, in input coordinates.
    pub spans: Vec<Span>,
    /// Candidate matches per rule, before merging, indexed by [`Rule::index`].
    pub counts: [u64; Rule::COUNT],
    /// The steps the redaction took.
    pub work: Work,
}

impl Redaction<'_> {
    /// The candidate count of one rule.
    pub fn count(&self, rule: Rule) -> u64 {
        self.counts[rule.index()]
    }
}

impl Redactor {
    /// Every rule (R24–R28): used on the user's prompt.
    ///
    /// ```
    /// use ward_core::redact::{RedactError, Redactor};
    ///
    /// assert!(Redactor::new(["provider-key-0123456789"]).is_ok());
    /// assert!(matches!(Redactor::new(["abc"]), Err(RedactError::SecretTooShort { index: 1, .. })));
    /// ```
    pub fn new<I, S>(secrets: I) -> Result<Redactor, RedactError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let values = ExactValues::new(secrets)?;
        Ok(Redactor {
            values,
            anchors: Some(value_free_scanner()?),
            woven: Arc::new(OnceLock::new()),
        })
    }

    /// Only the exact-value rule (R24, with R28): the guard of R22, applied to every record
    /// entering the transcript, the session store and the events.
    ///
    /// ```
    /// use ward_core::redact::Redactor;
    ///
    /// let guard = Redactor::values_only(["search-key-0123456789"])?;
    /// assert_eq!(guard.redact("echo search-key-0123456789"), "echo [REDACTED]");
    /// assert_eq!(guard.redact("/home/alice sk-abcdefghijklmnop"), "/home/alice sk-abcdefghijklmnop");
    /// # Ok::<(), ward_core::redact::RedactError>(())
    /// ```
    pub fn values_only<I, S>(secrets: I) -> Result<Redactor, RedactError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Ok(Redactor {
            values: ExactValues::new(secrets)?,
            anchors: None,
            woven: Arc::new(OnceLock::new()),
        })
    }

    /// Only the exact-value rule of this redactor, sharing its compiled values (a run's guard
    /// and its prompt redactor search the same values; building them once per run is enough).
    pub(crate) fn values_only_of(&self) -> Redactor {
        Redactor {
            values: self.values.clone(),
            anchors: None,
            woven: Arc::new(OnceLock::new()),
        }
    }

    /// The configured values, invisible format characters removed, sorted, without
    /// duplicates.
    pub(crate) fn values(&self) -> &[String] {
        self.values.values()
    }

    /// Redacts text; borrowed when nothing matched.
    ///
    /// ```
    /// use std::borrow::Cow;
    /// use ward_core::redact::Redactor;
    ///
    /// let redactor = Redactor::new(Vec::<String>::new())?;
    /// assert_eq!(redactor.redact("see /Users/alice/notes.txt"), "see [LOCAL_PATH]/notes.txt");
    /// assert!(matches!(redactor.redact("plain text"), Cow::Borrowed("plain text")));
    /// # Ok::<(), ward_core::redact::RedactError>(())
    /// ```
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = engine::find(&self.values, self.scanner_for(text.len()), text.as_bytes()).spans;
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        // The rules only produce character boundaries; `render_text` checks each one as it
        // slices (which it must do anyway), and should one ever not be, the spans are
        // widened to boundaries and the text rendered again.
        Cow::Owned(render_text(text, &spans).unwrap_or_else(|| {
            let spans = char_aligned(text, spans);
            render_text(text, &spans).unwrap_or_else(|| {
                String::from_utf8_lossy(&render(text.as_bytes(), &spans)).into_owned()
            })
        }))
    }

    /// Redacts bytes that need not be UTF-8; everything outside the spans passes through
    /// unchanged.
    ///
    /// ```
    /// use ward_core::redact::Redactor;
    ///
    /// let redactor = Redactor::new(Vec::<String>::new())?;
    /// assert_eq!(&*redactor.redact_bytes(b"\xFF token sk-abcdefghijklmn \xFE"), b"\xFF token [REDACTED] \xFE");
    /// # Ok::<(), ward_core::redact::RedactError>(())
    /// ```
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        self.redact_report(bytes).output
    }

    /// The merged spans that [`Redactor::redact`] replaces, with the rules that formed each.
    ///
    /// ```
    /// use ward_core::redact::{Redactor, Rule};
    ///
    /// let redactor = Redactor::new(Vec::<String>::new())?;
    /// let spans = redactor.redact_spans("/home/sk-abcdefghijklmnop/x");
    /// assert_eq!(spans.len(), 1);
    /// assert_eq!(spans[0].rules.iter().collect::<Vec<_>>(), [Rule::SkKey, Rule::HomePath]);
    /// assert_eq!(spans[0].placeholder(), "[REDACTED]");
    /// # Ok::<(), ward_core::redact::RedactError>(())
    /// ```
    pub fn redact_spans(&self, text: &str) -> Vec<Span> {
        self.char_aligned_spans(text)
    }

    /// Redacts bytes and reports the spans, per-rule counts and the work done (for
    /// `ward redact --stats` and the linear-work property, R29 (f)).
    ///
    /// ```
    /// use ward_core::redact::{Redactor, Rule};
    ///
    /// let redactor = Redactor::new(["value-0123456789"])?;
    /// let report = redactor.redact_report(b"value-0123456789 sk-abcdefghijklmnop");
    /// assert_eq!(&*report.output, b"[REDACTED] [REDACTED]");
    /// assert_eq!((report.count(Rule::ExactValue), report.count(Rule::SkKey)), (1, 1));
    /// assert!(report.work.total() > 0);
    /// # Ok::<(), ward_core::redact::RedactError>(())
    /// ```
    pub fn redact_report<'a>(&self, bytes: &'a [u8]) -> Redaction<'a> {
        let found = engine::find(&self.values, self.scanner_for(bytes.len()), bytes);
        let output = if found.spans.is_empty() {
            Cow::Borrowed(bytes)
        } else {
            Cow::Owned(render(bytes, &found.spans))
        };
        Redaction {
            output,
            spans: found.spans,
            counts: found.counts,
            work: found.work,
        }
    }

    /// The anchor scanner for an input of `length` bytes: with the values woven in for large
    /// inputs (built on first use), the value-free one otherwise (values are then searched
    /// on their own first). Both find the same spans.
    fn scanner_for(&self, length: usize) -> Option<&AnchorScanner> {
        let anchors = self.anchors.as_deref()?;
        if length < WOVEN_BYTES_MIN || self.values.is_empty() {
            return Some(anchors);
        }
        let woven = self
            .woven
            .get_or_init(|| AnchorScanner::new(self.values.values()).ok().map(Arc::new));
        Some(woven.as_deref().unwrap_or(anchors))
    }

    /// The spans of `text`, widened (never narrowed) to character boundaries.
    fn char_aligned_spans(&self, text: &str) -> Vec<Span> {
        char_aligned(
            text,
            engine::find(&self.values, self.scanner_for(text.len()), text.as_bytes()).spans,
        )
    }
}

/// Spans widened (never narrowed) to character boundaries. The rules only produce
/// boundaries already; this keeps the `&str` API total should one ever not.
fn char_aligned(text: &str, mut spans: Vec<Span>) -> Vec<Span> {
    let mut widened = false;
    for span in &mut spans {
        debug_assert!(text.is_char_boundary(span.start) && text.is_char_boundary(span.end));
        while !text.is_char_boundary(span.start) {
            span.start -= 1;
            widened = true;
        }
        while !text.is_char_boundary(span.end) {
            span.end += 1;
            widened = true;
        }
    }
    if widened { span::merge(spans) } else { spans }
}

/// Writes `text` with each span replaced by its placeholder, without validating the
/// output again (placeholders are ASCII); `None` if a span does not start and end on a
/// character boundary.
fn render_text(text: &str, spans: &[Span]) -> Option<String> {
    let mut output = String::with_capacity(text.len() + spans.len() * LOCAL_PATH.len());
    let mut copied_until = 0;
    for span in spans {
        output.push_str(text.get(copied_until..span.start)?);
        output.push_str(span.placeholder());
        copied_until = span.end;
    }
    output.push_str(text.get(copied_until..)?);
    Some(output)
}

/// Writes `input` with each span replaced by its placeholder.
fn render(input: &[u8], spans: &[Span]) -> Vec<u8> {
    let mut output = Vec::with_capacity(input.len() + spans.len() * LOCAL_PATH.len());
    let mut copied_until = 0;
    for span in spans {
        debug_assert!(
            copied_until <= span.start && span.start < span.end && span.end <= input.len()
        );
        output.extend_from_slice(&input[copied_until..span.start]);
        output.extend_from_slice(span.placeholder().as_bytes());
        copied_until = span.end;
    }
    output.extend_from_slice(&input[copied_until..]);
    output
}

#[cfg(test)]
mod tests;
