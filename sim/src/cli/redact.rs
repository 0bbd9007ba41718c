//! `ward redact [--secret V]... [--secrets-file F] [--stats] [--spans]` (SPEC §12): standard
//! input to standard output through the full redactor (R24–R29).
//!
//! The input is streamed ([`Redactor::redact_stream_with`]): the output is exactly what
//! redacting the whole input at once would give, however the input arrives, while memory
//! stays about one window (128 KiB) and its look-behind, whatever the input's size; only a
//! stretch whose redaction depends on bytes further ahead than a window (a URL's userinfo
//! still waiting for its `@`, say) makes the window grow, for as long as that stretch
//! lasts. Standard input is read ahead and standard output written behind on threads of
//! their own ([`super::pipe`], 6 MiB of blocks at most), so the kernel's copies overlap
//! the redaction. Input need not be UTF-8: bytes outside the redacted spans pass through
//! unchanged.
//! `--stats` counts exactly what redacting the whole input would count.
//!
//! `--spans` lists the spans instead (line, byte range, rules, the span in up to 40
//! characters of context each side) for the real-text audit of SPEC §13. It does not
//! stream: it reads the whole input into memory and lists the spans of
//! [`Redactor::redact_report`] (memory about twice the input), as an audit of real text
//! needs every span with its line and context, not gigabytes of throughput.
//!
//! Exit status: 0 on success; 2 for bad flags, a secret the redactor refuses (too short,
//! inside or overlapping a placeholder), a secrets file that cannot be read or is not
//! UTF-8, or an input/output error. Messages name the problem, never a secret's value.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ward_core::redact::{RedactError, Redactor, Rule, Span, StreamOptions};

use super::pipe::{ReadAhead, WriteBehind};

/// The arguments of `ward redact`.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RedactArgs {
    /// A secret value to redact wherever it occurs (repeatable; at least 8 characters).
    #[arg(long = "secret", value_name = "V")]
    pub secrets: Vec<String>,
    /// A UTF-8 file with one secret value per line (empty lines are skipped, a trailing
    /// carriage return is removed).
    #[arg(long = "secrets-file", value_name = "F")]
    pub secrets_file: Option<PathBuf>,
    /// Print the candidate count of every rule, and the number of placeholders written, on
    /// standard error.
    #[arg(long)]
    pub stats: bool,
    /// Instead of the redacted text, list every span it would replace, one per line:
    /// `<line>:<start>..<end>`, the rules, and the span in its surrounding text (the
    /// real-text audit of SPEC §13). Reads the whole input. Spans of configured values are
    /// shown masked; pattern spans are shown as matched, so keep the listing local.
    #[arg(long)]
    pub spans: bool,
}

/// Characters of context shown on each side of a span by `--spans`.
const SPAN_CONTEXT_CHARS: usize = 40;

/// The text of `range` with every configured value's span in it masked (R24: a listing
/// never shows a configured value, not even as another span's context).
fn masked(bytes: &[u8], range: std::ops::Range<usize>, spans: &[Span]) -> String {
    let mut text = Vec::new();
    let mut at = range.start;
    let first = spans.partition_point(|span| span.end <= range.start);
    for span in spans[first..]
        .iter()
        .take_while(|span| span.start < range.end)
    {
        if !span.rules.contains(Rule::ExactValue) {
            continue;
        }
        text.extend_from_slice(&bytes[at..span.start.max(at)]);
        text.extend_from_slice(CONFIGURED_VALUE.as_bytes());
        at = span.end.min(range.end).max(at);
    }
    text.extend_from_slice(&bytes[at..range.end]);
    String::from_utf8_lossy(&text).into_owned()
}

/// What `--spans` shows for a configured value.
const CONFIGURED_VALUE: &str = "<configured value>";

/// One `--spans` line for `spans[index]`: where the span is (`line`, from 1), its rules, and
/// the span in its context, with control characters escaped so each span stays on one line.
fn span_line(bytes: &[u8], spans: &[Span], index: usize, line: usize) -> String {
    let span = &spans[index];
    let rules: Vec<&str> = span.rules.iter().map(Rule::name).collect();
    let reach = 4 * SPAN_CONTEXT_CHARS;
    let before = masked(bytes, span.start.saturating_sub(reach)..span.start, spans);
    let before: String = {
        let tail: Vec<char> = before.chars().rev().take(SPAN_CONTEXT_CHARS).collect();
        tail.into_iter().rev().collect()
    };
    let after = masked(bytes, span.end..bytes.len().min(span.end + reach), spans);
    let after: String = after.chars().take(SPAN_CONTEXT_CHARS).collect();
    let inside = masked(bytes, span.range(), spans);
    let escape = |text: &str| text.escape_debug().to_string();
    format!(
        "{line}:{}..{}\t{}\t{}\u{27E6}{}\u{27E7}{}\n",
        span.start,
        span.end,
        rules.join("+"),
        escape(&before),
        escape(&inside),
        escape(&after)
    )
}

/// Why `ward redact` stopped.
#[derive(Debug, thiserror::Error)]
pub enum RedactCommandError {
    /// The secrets file could not be read.
    #[error("cannot read the secrets file {path}: {source}")]
    SecretsFile {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: io::Error,
    },
    /// The secrets file is not UTF-8.
    #[error("the secrets file {path} is not valid UTF-8 (line {line})")]
    SecretsFileEncoding {
        /// The file.
        path: PathBuf,
        /// The first line that is not UTF-8, from 1.
        line: usize,
    },
    /// The redactor refused a secret. Secrets are numbered in the order given: every
    /// `--secret` first, then the lines of the secrets file.
    #[error("{0} (secrets are numbered: every --secret first, then the secrets file's lines)")]
    Secret(#[from] RedactError),
    /// Standard input could not be read.
    #[error("cannot read standard input: {0}")]
    Input(io::Error),
    /// Standard output or standard error could not be written.
    #[error("cannot write the output: {0}")]
    Output(io::Error),
}

/// Runs `ward redact` on the process's standard streams, read ahead and written behind on
/// threads of their own ([`super::pipe`]).
pub fn run(args: &RedactArgs) -> ExitCode {
    let mut input = ReadAhead::spawn(io::stdin());
    let mut output = WriteBehind::spawn(io::stdout());
    let stderr = io::stderr();
    let result = execute(args, &mut input, &mut output, &mut stderr.lock());
    // What was redacted before an error is written too.
    let finished = output.finish().map_err(RedactCommandError::Output);
    let result = result.and(finished);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(RedactCommandError::Output(error)) if error.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::from(super::BROKEN_PIPE_STATUS)
        }
        Err(error) => {
            tell!("ward redact: {error}");
            ExitCode::from(2)
        }
    }
}

/// Runs `ward redact` on the given streams.
pub fn execute(
    args: &RedactArgs,
    input: &mut dyn Read,
    output: &mut dyn Write,
    diagnostics: &mut dyn Write,
) -> Result<(), RedactCommandError> {
    let mut secrets = args.secrets.clone();
    if let Some(path) = &args.secrets_file {
        secrets.extend(read_secrets_file(path)?);
    }
    let redactor = Redactor::new(&secrets)?;
    if args.spans {
        return list_spans(&redactor, args, input, output, diagnostics);
    }
    let options = StreamOptions {
        count_rules: args.stats,
        ..StreamOptions::default()
    };
    let mut input = Attributed {
        inner: input,
        failed: false,
    };
    let report = redactor
        .redact_stream_with(&mut input, output, &options)
        .map_err(|error| {
            if input.failed {
                RedactCommandError::Input(error)
            } else {
                RedactCommandError::Output(error)
            }
        })?;
    if args.stats {
        write_stats(diagnostics, &report.counts, report.placeholders)?;
    }
    Ok(())
}

/// `--spans`: the whole input is read into memory (a listing needs every span with its
/// line and context, and is meant for audits of real text, not for gigabytes of logs), then
/// every span of [`Redactor::redact_report`] is listed.
fn list_spans(
    redactor: &Redactor,
    args: &RedactArgs,
    input: &mut dyn Read,
    output: &mut dyn Write,
    diagnostics: &mut dyn Write,
) -> Result<(), RedactCommandError> {
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .map_err(RedactCommandError::Input)?;
    let report = redactor.redact_report(&bytes);
    let (mut line, mut counted_until) = (1, 0);
    for (index, span) in report.spans.iter().enumerate() {
        line += memchr::memchr_iter(b'\n', &bytes[counted_until..span.start]).count();
        counted_until = span.start;
        output
            .write_all(span_line(&bytes, &report.spans, index, line).as_bytes())
            .map_err(RedactCommandError::Output)?;
    }
    output.flush().map_err(RedactCommandError::Output)?;
    if args.stats {
        write_stats(diagnostics, &report.counts, report.spans.len() as u64)?;
    }
    Ok(())
}

/// `--stats`: the candidate count of every rule, then the placeholders written.
fn write_stats(
    diagnostics: &mut dyn Write,
    counts: &[u64; Rule::COUNT],
    placeholders: u64,
) -> Result<(), RedactCommandError> {
    let mut lines = String::new();
    for rule in Rule::ALL {
        lines.push_str(&format!("{}\t{}\n", rule.name(), counts[rule.index()]));
    }
    lines.push_str(&format!("placeholders\t{placeholders}\n"));
    diagnostics
        .write_all(lines.as_bytes())
        .map_err(RedactCommandError::Output)
}

/// The input, remembering whether reading it failed (so that an error is reported as the
/// input's or the output's).
struct Attributed<'a> {
    inner: &'a mut dyn Read,
    failed: bool,
}

impl Read for Attributed<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buffer);
        self.failed |= read
            .as_ref()
            .is_err_and(|error| error.kind() != io::ErrorKind::Interrupted);
        read
    }
}

/// The secrets of a file: one per line.
fn read_secrets_file(path: &Path) -> Result<Vec<String>, RedactCommandError> {
    let bytes = std::fs::read(path).map_err(|source| RedactCommandError::SecretsFile {
        path: path.to_path_buf(),
        source,
    })?;
    let mut secrets = Vec::new();
    for (index, line) in bytes.split(|&byte| byte == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let secret =
            std::str::from_utf8(line).map_err(|_| RedactCommandError::SecretsFileEncoding {
                path: path.to_path_buf(),
                line: index + 1,
            })?;
        secrets.push(secret.to_string());
    }
    Ok(secrets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(args: &RedactArgs, input: &[u8]) -> Result<(Vec<u8>, String), RedactCommandError> {
        let mut output = Vec::new();
        let mut diagnostics = Vec::new();
        execute(args, &mut &input[..], &mut output, &mut diagnostics)?;
        Ok((output, String::from_utf8_lossy(&diagnostics).into_owned()))
    }

    #[test]
    fn spans_list_line_range_rules_and_context_with_values_masked() {
        let args = RedactArgs {
            secrets: vec!["provider-key-0123456789".into()],
            spans: true,
            ..RedactArgs::default()
        };
        let (output, _) = redact(
            &args,
            b"a basic loop\nkey provider-key-0123456789 in /home/bob/x\n",
        )
        .expect("runs");
        let listing = String::from_utf8(output).expect("UTF-8");
        assert_eq!(
            listing,
            "2:17..40\texact-value\ta basic loop\\nkey \u{27E6}<configured value>\u{27E7} in /home/bob/x\\n\n\
             2:44..53\thome-path\ta basic loop\\nkey <configured value> in \u{27E6}/home/bob\u{27E7}/x\\n\n"
        );
    }

    #[test]
    fn stats_count_every_rule_in_a_fixed_order() {
        let args = RedactArgs {
            secrets: vec!["provider-key-0123456789".into()],
            stats: true,
            ..RedactArgs::default()
        };
        let (output, stats) = redact(
            &args,
            b"provider-key-0123456789 /home/bob/x Bearer abcdefgh1",
        )
        .expect("runs");
        assert_eq!(output, b"[REDACTED] [LOCAL_PATH]/x [REDACTED]");
        let names: Vec<&str> = stats
            .lines()
            .map(|line| line.split('\t').next().unwrap_or(""))
            .collect();
        assert_eq!(names.len(), Rule::COUNT + 1);
        assert!(
            stats.contains("exact-value\t1\n")
                && stats.contains("home-path\t1\n")
                && stats.contains("auth-value\t1\n")
        );
        assert!(stats.ends_with("placeholders\t3\n"));
    }

    #[test]
    fn output_and_stats_are_those_of_the_whole_input() {
        let args = RedactArgs {
            secrets: vec!["provider-key-0123456789".into()],
            stats: true,
            ..RedactArgs::default()
        };
        let mut input = Vec::new();
        for line in 0..20_000 {
            input.extend_from_slice(
                format!(
                    "{line} GET /api Authorization: Bearer tok{line}abcdefgh key=provider-key-0123456789 \
                     home=/home/user{line}/x url=https://u:pw{line}@db/x sk-proj-{line}abcdefghijklmnop\r\n"
                )
                .as_bytes(),
            );
        }
        let (output, stats) = redact(&args, &input).expect("runs");
        let redactor = Redactor::new(&args.secrets).expect("valid");
        let whole = redactor.redact_report(&input);
        assert!(output == *whole.output);
        for rule in Rule::ALL {
            assert!(stats.contains(&format!("{}\t{}\n", rule.name(), whole.count(rule))));
        }
        assert!(stats.ends_with(&format!("placeholders\t{}\n", whole.spans.len())));
    }

    #[test]
    fn a_failing_input_is_reported_as_the_input() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("disk on fire"))
            }
        }
        let mut output = Vec::new();
        let error = execute(
            &RedactArgs::default(),
            &mut Failing,
            &mut output,
            &mut Vec::new(),
        )
        .expect_err("the input fails");
        assert!(matches!(error, RedactCommandError::Input(_)), "{error}");
        // Read ahead on a thread of its own, as `run` reads standard input, it still is.
        let error = execute(
            &RedactArgs::default(),
            &mut ReadAhead::spawn(Failing),
            &mut output,
            &mut Vec::new(),
        )
        .expect_err("the input fails");
        assert!(
            matches!(&error, RedactCommandError::Input(inner) if inner.to_string() == "disk on fire"),
            "{error}"
        );
    }

    #[test]
    fn refused_secret_names_its_position_not_its_value() {
        let args = RedactArgs {
            secrets: vec!["long-enough-value".into(), "abc".into()],
            ..RedactArgs::default()
        };
        let error = redact(&args, b"x").expect_err("short secret").to_string();
        assert!(
            error.contains("secret #2") && !error.contains("abc"),
            "{error}"
        );
    }
}
