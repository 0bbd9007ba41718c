//! API keys and tokens (R26): `sk-`/`sk_` keys, GitHub tokens, AWS access key ids and Slack
//! tokens.
//!
//! Each token starts at an anchor that is not preceded by a letter or digit (see
//! [`Context::boundary_before`]), and runs greedily over its key characters, so the whole
//! token is replaced: `sk-abcdefghijk-` loses its trailing `-` too, and no tail is left.
//! A run either reaches its minimum length and becomes a span, or is shorter than that
//! minimum, so a failed candidate costs a bounded number of steps and a successful one
//! covers every later anchor inside it (skipped by the caller): `sk-sk-sk-…` is linear.
//!
//! | rule | starts with | then |
//! |---|---|---|
//! | `sk-key` | `sk-`, `sk_` | ≥ 12 of `[A-Za-z0-9_-]` |
//! | `github-token` | `ghp_` `gho_` `ghu_` `ghs_` `ghr_`, `github_pat_` | ≥ 20 of `[A-Za-z0-9_]` |
//! | `aws-key-id` | `AKIA`, `ASIA` | 16 of `[A-Z0-9]`, then any further `[A-Za-z0-9]` |
//! | `slack-token` | `xox` + one of `abposr` + `-` | ≥ 10 of `[A-Za-z0-9_-]` |
//!
//! Every prefix is made of the characters of its token's run, so a token that reaches the
//! end of a window grows as one run of its class from any byte inside it ([`Tail::Class`],
//! used by the streaming redactor).

use super::Rule;
use super::context::Context;
use super::growth::{Growth, Tail, Verdict};
use super::span::Span;
use super::text::{class, run_end, starts_with};
use super::work::Work;

/// Key characters of `sk-` keys (at least this many after the prefix).
pub(crate) const SK_KEY_CHARS_MIN: usize = 12;
const GITHUB_CHARS_MIN: usize = 20;
const AWS_ID_CHARS: usize = 16;
const SLACK_CHARS_MIN: usize = 10;

/// A run of at least `minimum` characters of `accept` after a prefix at `start`.
fn token(
    context: &Context<'_>,
    work: &mut Work,
    start: usize,
    prefix_len: usize,
    minimum: usize,
    mask: u8,
    rule: Rule,
) -> Verdict {
    if !context.boundary_before(start) {
        return Verdict::none(start + prefix_len);
    }
    let body = start + prefix_len;
    let end = run_end(context.text, body, mask);
    work.verified_bytes += (end - body) as u64;
    if end - body < minimum {
        return Verdict::none(end + 1);
    }
    Verdict::found(Span::new(start, end, rule), end + 1)
        .growing_at_end(context.text, Growth::new(Tail::Class(mask), start, end))
}

/// `sk-…` or `sk_…` at `start` (the anchor matched case-insensitively; the prefix is exact).
pub(crate) fn sk_key(context: &Context<'_>, work: &mut Work, start: usize) -> Verdict {
    if !(starts_with(context.text, start, b"sk-") || starts_with(context.text, start, b"sk_")) {
        return Verdict::none(start + 3);
    }
    token(
        context,
        work,
        start,
        3,
        SK_KEY_CHARS_MIN,
        class::KEY,
        Rule::SkKey,
    )
}

/// `ghp_…` and its siblings at `start`.
pub(crate) fn github_short(context: &Context<'_>, work: &mut Work, start: usize) -> Verdict {
    let prefix_ok = starts_with(context.text, start, b"gh")
        && matches!(
            context.text.get(start + 2),
            Some(b'p' | b'o' | b'u' | b's' | b'r')
        )
        && context.text.get(start + 3) == Some(&b'_');
    if !prefix_ok {
        return Verdict::none(start + 4);
    }
    token(
        context,
        work,
        start,
        4,
        GITHUB_CHARS_MIN,
        class::WORD,
        Rule::GithubToken,
    )
}

/// `github_pat_…` at `start`.
pub(crate) fn github_pat(context: &Context<'_>, work: &mut Work, start: usize) -> Verdict {
    if !starts_with(context.text, start, b"github_pat_") {
        return Verdict::none(start + 11);
    }
    token(
        context,
        work,
        start,
        11,
        GITHUB_CHARS_MIN,
        class::WORD,
        Rule::GithubToken,
    )
}

/// `AKIA…` or `ASIA…` at `start`.
pub(crate) fn aws_key_id(context: &Context<'_>, work: &mut Work, start: usize) -> Verdict {
    let text = context.text;
    if !(starts_with(text, start, b"AKIA") || starts_with(text, start, b"ASIA")) {
        return Verdict::none(start + 4);
    }
    let id = start + 4;
    let upper_end = run_end(text, id, class::UPPER_DIGIT).min(id + AWS_ID_CHARS);
    work.verified_bytes += (upper_end - id) as u64;
    if upper_end - id < AWS_ID_CHARS || !context.boundary_before(start) {
        return Verdict::none(upper_end + 1);
    }
    let end = run_end(text, upper_end, class::ALPHANUMERIC);
    work.verified_bytes += (end - upper_end) as u64;
    Verdict::found(Span::new(start, end, Rule::AwsKeyId), end + 1).growing_at_end(
        text,
        Growth::new(Tail::Class(class::ALPHANUMERIC), start, end),
    )
}

/// `xoxb-…` and its siblings at `start`.
pub(crate) fn slack_token(context: &Context<'_>, work: &mut Work, start: usize) -> Verdict {
    let prefix_ok = starts_with(context.text, start, b"xox")
        && matches!(
            context.text.get(start + 3),
            Some(b'a' | b'b' | b'p' | b'o' | b's' | b'r')
        )
        && context.text.get(start + 4) == Some(&b'-');
    if !prefix_ok {
        return Verdict::none(start + 5);
    }
    token(
        context,
        work,
        start,
        5,
        SLACK_CHARS_MIN,
        class::KEY,
        Rule::SlackToken,
    )
}
