//! `ward redact [--secret V]... [--secrets-file F] [--stats]` (SPEC §12): standard input to
//! standard output through the full redactor (R24–R29).
//!
//! The input is streamed ([`Redactor::redact_stream_with`]): the output is exactly what
//! redacting the whole input at once would give, however the input arrives, while memory
//! stays about one window (128 KiB) and its look-behind, whatever the input's size; only a
//! stretch whose redaction depends on bytes further ahead than a window (a URL's userinfo
//! still waiting for its `@`, say) makes the window grow, for as long as that stretch
//! lasts. Input need not be UTF-8: bytes outside the redacted spans pass through unchanged.
//! `--stats` counts exactly what redacting the whole input would count.
//!
//! Exit status: 0 on success; 2 for bad flags, a secret the redactor refuses (too short,
//! inside or overlapping a placeholder), a secrets file that cannot be read or is not
//! UTF-8, or an input/output error. Messages name the problem, never a secret's value.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ward_core::redact::{RedactError, Redactor, Rule, StreamOptions};

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

/// Runs `ward redact` on the process's standard streams.
pub fn run(args: &RedactArgs) -> ExitCode {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let stderr = io::stderr();
    match execute(
        args,
        &mut stdin.lock(),
        &mut stdout.lock(),
        &mut stderr.lock(),
    ) {
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
        let mut lines = String::new();
        for rule in Rule::ALL {
            lines.push_str(&format!("{}\t{}\n", rule.name(), report.count(rule)));
        }
        lines.push_str(&format!("placeholders\t{}\n", report.placeholders));
        diagnostics
            .write_all(lines.as_bytes())
            .map_err(RedactCommandError::Output)?;
    }
    Ok(())
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
