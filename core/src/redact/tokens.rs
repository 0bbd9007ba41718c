//! Structured secrets (R26): JSON Web Tokens, PEM private key blocks and URL passwords.
//!
//! Each has a bound on the work a failed candidate can cost:
//! - a JWT's dot-separated base64url runs are computed once and cached, so `eyJ-eyJ-eyJ…`
//!   (every anchor inside one run) or `eyJ.` repeated stays linear;
//! - the search for `-----END ` after a `-----BEGIN … PRIVATE KEY-----` header is cached
//!   and only ever moves forward, so many headers without an END cost one search; a block
//!   longer than [`PEM_LEN_MAX`] or without an END is redacted from its header through the
//!   base64 body lines that follow it (a truncated key is still key material);
//! - a URL's userinfo run stops at `/`, so `://u:` repeated without `@` scans each byte once.
//!
//! Each also has a bound on how far ahead its verdict reads, so that the streaming
//! redactor decides it from a bounded window (SPEC §7) and writes exactly what whole-text
//! redaction writes. The bounds are ward's decision, not the SPEC's, and are far beyond
//! any real token: a JWT header longer than [`JWT_HEADER_LEN_MAX`] (8 KiB) is no JWT
//! header; a URL password ends at the last `@` within [`USERINFO_LEN_MAX`] (8 KiB) of the
//! `://`; a PEM block's END line is searched for over [`PEM_LEN_MAX`] (64 KiB), and a
//! block without one is redacted through its base64 body (the one bound that errs towards
//! redacting: a truncated key is still key material).
//!
//! Each returns a [`Verdict`] for the streaming redactor: how far it read and, for a span
//! that exists whatever follows but ends in a run still going at the end of the text (a
//! JWT's payload or signature, a PEM body), how it grows.

use memchr::memmem;

use super::Rule;
use super::context::Context;
use super::growth::{Growth, Tail, Verdict};
use super::span::Span;
use super::text::{
    char_len_at, class, is, is_alphanumeric, run_end, run_end_by, starts_with, white_space_len_at,
};
use super::work::Work;

/// The longest PEM block (header to END line) searched for its END line, in bytes.
pub(crate) const PEM_LEN_MAX: usize = 64 * 1024;
/// The longest PEM label (`RSA PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`, …).
const PEM_LABEL_LEN_MAX: usize = 64;
/// The shortest JWT header or payload segment, in bytes (`eyJ` included).
const JWT_SEGMENT_LEN_MIN: usize = 8;
/// The longest JWT header segment, in bytes (`eyJ` included): a longer run is no JWT
/// header. Servers refuse header fields past about 8 KiB, so no token that travels in one
/// has a longer header.
pub(crate) const JWT_HEADER_LEN_MAX: usize = 8 * 1024;
/// The most bytes after a URL's `://` searched for the `@` that ends its userinfo: an `@`
/// farther on ends no password. RFC 9110 (section 4.1) asks for URIs of 8,000 octets to
/// work, and none longer is expected to.
pub(crate) const USERINFO_LEN_MAX: usize = 8 * 1024;
/// A PEM anchor (`-BEGIN`) is found at the last of the five dashes that start the block.
pub(crate) const PEM_ANCHOR_BACK: usize = 4;
/// `-----END ` and `-----`: the END line's opening and the closing dashes.
const PEM_END_OPEN_LEN: usize = 9;
const PEM_DASHES_LEN: usize = 5;

/// The maximal base64url runs met so far, so that a run is read once however many anchors
/// it holds.
#[derive(Default)]
pub(crate) struct RunCache {
    runs: [(usize, usize); 4],
    next: usize,
}

impl RunCache {
    fn run_end(&mut self, text: &[u8], start: usize, work: &mut Work) -> usize {
        if let Some(&(_, end)) = self
            .runs
            .iter()
            .find(|&&(run_start, end)| run_start <= start && start <= end && end > 0)
        {
            return end;
        }
        let end = run_end(text, start, class::KEY);
        work.verified_bytes += (end - start) as u64;
        self.runs[self.next] = (start, end);
        self.next = (self.next + 1) % self.runs.len();
        end
    }
}

/// A JWT (`eyJ<header>.eyJ<payload>[.<signature>]`) at `start`.
pub(crate) fn jwt(
    context: &Context<'_>,
    work: &mut Work,
    runs: &mut RunCache,
    start: usize,
) -> Verdict {
    let text = context.text;
    if !starts_with(text, start, b"eyJ") || !context.boundary_before(start) {
        return Verdict::none(start + 3);
    }
    let header_end = runs.run_end(text, start, work);
    if header_end - start < JWT_SEGMENT_LEN_MIN {
        return Verdict::none(header_end + 1);
    }
    if header_end - start > JWT_HEADER_LEN_MAX {
        return Verdict::none(start + JWT_HEADER_LEN_MAX + 1);
    }
    // The `.` after the header, then `eyJ`.
    let dot_reach = header_end + 4;
    if text.get(header_end) != Some(&b'.') || !starts_with(text, header_end + 1, b"eyJ") {
        return Verdict::none(dot_reach);
    }
    let payload_start = header_end + 1;
    let payload_end = runs.run_end(text, payload_start, work);
    if payload_end - payload_start < JWT_SEGMENT_LEN_MIN {
        return Verdict::none(payload_end + 1);
    }
    let signature_end = match text.get(payload_end) {
        Some(b'.') => Some(runs.run_end(text, payload_end + 1, work)),
        _ => None,
    };
    let (end, reach, growth) = signature(payload_start, payload_end, signature_end);
    Verdict::found(Span::new(start, end, Rule::Jwt), reach).growing_at_end(text, growth)
}

/// The end of a JWT whose payload run `payload_start..payload_end` is long enough, read on
/// from `payload_start`: the span's end, the verdict's reach and how it grows.
pub(crate) fn jwt_signature(
    text: &[u8],
    payload_start: usize,
    payload_end: usize,
) -> (usize, usize, Growth) {
    let signature_end = match text.get(payload_end) {
        Some(b'.') => Some(run_end(text, payload_end + 1, class::KEY)),
        _ => None,
    };
    signature(payload_start, payload_end, signature_end)
}

/// A non-empty signature joins the token with its `.`; an empty one leaves the `.` out.
fn signature(
    payload_start: usize,
    payload_end: usize,
    signature_end: Option<usize>,
) -> (usize, usize, Growth) {
    match signature_end {
        Some(signature_end) if signature_end > payload_end + 1 => (
            signature_end,
            signature_end + 1,
            Growth::new(Tail::JwtSignature, payload_end + 1, signature_end),
        ),
        // A `.` right at the end: a signature may follow it.
        Some(_) => (
            payload_end,
            payload_end + 2,
            Growth::new(Tail::JwtPayload, payload_start, payload_end),
        ),
        None => (
            payload_end,
            payload_end + 1,
            Growth::new(Tail::JwtPayload, payload_start, payload_end),
        ),
    }
}

/// The forward-only search for PEM END lines.
#[derive(Default)]
pub(crate) struct PemEnds {
    /// The last search: where it started and what it found.
    last: Option<(usize, Option<usize>)>,
}

impl PemEnds {
    /// The first `-----END ` at or after `from`.
    fn find(&mut self, text: &[u8], from: usize, work: &mut Work) -> Option<usize> {
        if let Some((searched_from, found)) = self.last
            && searched_from <= from
            && found.is_none_or(|position| position >= from)
        {
            return found;
        }
        let rest = text.get(from..).unwrap_or_default();
        let found = memmem::find(rest, b"-----END ").map(|offset| from + offset);
        work.searched_bytes += (found.map_or(rest.len(), |position| position - from + 9)) as u64;
        self.last = Some((from, found));
        found
    }
}

fn is_pem_label_byte(byte: u8) -> bool {
    byte.is_ascii_uppercase() || byte.is_ascii_digit() || byte == b' '
}

/// A PEM private key block whose `BEGIN` is at `begin` (so the block starts 5 bytes before).
pub(crate) fn pem_private_key(
    context: &Context<'_>,
    work: &mut Work,
    ends: &mut PemEnds,
    begin: usize,
) -> Verdict {
    let text = context.text;
    let Some(start) = begin.checked_sub(5) else {
        return Verdict::none(begin + 6);
    };
    if !starts_with(text, start, b"-----BEGIN ") {
        return Verdict::none(start + 11);
    }
    let label_start = begin + 6;
    let label_end = run_end_by(text, label_start, is_pem_label_byte);
    work.verified_bytes += (label_end - label_start).min(PEM_LABEL_LEN_MAX + 1) as u64;
    let label = &text[label_start..label_end];
    if label.len() > PEM_LABEL_LEN_MAX {
        return Verdict::none(label_start + PEM_LABEL_LEN_MAX + 1);
    }
    if !starts_with(text, label_end, b"-----") || memmem::find(label, b"PRIVATE KEY").is_none() {
        return Verdict::none(label_end + PEM_DASHES_LEN);
    }
    let header_end = label_end + PEM_DASHES_LEN;
    let found = ends.find(text, header_end, work);
    let (end, reach, growth) = match found {
        Some(end_line) if end_line - header_end <= PEM_LEN_MAX => {
            let end_label_start = end_line + PEM_END_OPEN_LEN;
            let label_run_end = run_end_by(text, end_label_start, is_pem_label_byte)
                .min(end_label_start + PEM_LABEL_LEN_MAX);
            work.verified_bytes += (label_run_end - end_label_start) as u64;
            let dashes_reach = label_run_end + PEM_DASHES_LEN;
            if starts_with(text, label_run_end, b"-----") {
                (dashes_reach, dashes_reach, None)
            } else {
                let (end, reach) = cut_short_end(text, work, end_label_start, label_run_end);
                (end, reach.max(dashes_reach), None)
            }
        }
        _ => {
            // No END line starts within PEM_LEN_MAX of the header: every position up to
            // there was searched (or the text ended first).
            let searched = found
                .map_or(text.len() + 1, |end_line| end_line + PEM_END_OPEN_LEN)
                .min(header_end + PEM_LEN_MAX + PEM_END_OPEN_LEN);
            let (end, body_reach) = body_end_from(text, header_end);
            work.verified_bytes += (end - header_end) as u64;
            let growth =
                (searched <= text.len()).then(|| Growth::new(Tail::PemBody, header_end, end));
            (end, searched.max(body_reach), growth)
        }
    };
    let verdict = Verdict::found(Span::new(start, end, Rule::PemPrivateKey), reach);
    match growth {
        Some(growth) => verdict.growing_at_end(text, growth),
        None => verdict,
    }
}

/// Where the span of a block whose END line is cut short ends: after the label's last word
/// (trailing spaces stay outside), or, when something is glued to that word
/// (`-----END Rsk-proj-…`), at the next white space, so the glued token is covered whole and
/// no token can start inside the span on a second pass (R29 (d)). Also returns the reach.
fn cut_short_end(
    text: &[u8],
    work: &mut Work,
    label_start: usize,
    label_run_end: usize,
) -> (usize, usize) {
    let mut end = label_run_end;
    while end > label_start && text[end - 1] == b' ' {
        end -= 1;
    }
    if end < label_run_end || !text.get(end).is_some_and(|&byte| is_alphanumeric(byte)) {
        return (end, end + 1);
    }
    let mut glued_end = end;
    while glued_end < text.len() && white_space_len_at(text, glued_end) == 0 {
        glued_end += char_len_at(text, glued_end);
    }
    work.verified_bytes += (glued_end - end) as u64;
    (glued_end, glued_end + 1)
}

/// The end of the base64 body lines from `start` (line breaks, also written as the escapes
/// `\n` and `\r` of a JSON string, and base64 characters), and the reach of that answer.
pub(crate) fn body_end_from(text: &[u8], start: usize) -> (usize, usize) {
    let mut index = start;
    loop {
        match text.get(index) {
            Some(b'\n' | b'\r') => index += 1,
            Some(b'\\') if matches!(text.get(index + 1), Some(b'n' | b'r')) => index += 2,
            Some(&byte) if is(byte, class::BASE64) => index += 1,
            // A `\` was read with the byte after it.
            Some(b'\\') => return (index, index + 2),
            _ => return (index, index + 1),
        }
    }
}

/// Whether `byte` ends a URL's userinfo (RFC 3986 excludes these, and white space).
fn ends_userinfo(byte: u8) -> bool {
    matches!(
        byte,
        b'/' | b'?'
            | b'#'
            | b'['
            | b']'
            | b'"'
            | b'\''
            | b'<'
            | b'>'
            | b'`'
            | b'\\'
            | b'{'
            | b'}'
            | b'|'
            | b'^'
    ) || byte.is_ascii_whitespace()
        || byte == 0x0B
}

/// The password of `scheme://user:PASSWORD@host`, where `separator` is the position of
/// `://`. The user part stays; the password runs from the first `:` to the last `@` of the
/// userinfo, so a password with an unencoded `@` is covered whole. Only the first
/// [`USERINFO_LEN_MAX`] bytes after the `://` are searched.
pub(crate) fn url_password(context: &Context<'_>, work: &mut Work, separator: usize) -> Verdict {
    let text = context.text;
    if !starts_with(text, separator, b"://") {
        return Verdict::none(separator + 3);
    }
    let start = separator + 3;
    let limit = text.len().min(start + USERINFO_LEN_MAX);
    let mut index = start;
    let mut colon = None;
    let mut last_at = None;
    while index < limit {
        let byte = text[index];
        if byte < 0x80 {
            if ends_userinfo(byte) {
                break;
            }
            if byte == b':' && colon.is_none() {
                colon = Some(index);
            } else if byte == b'@' {
                last_at = Some(index);
            }
            index += 1;
        } else {
            if white_space_len_at(text, index) > 0 {
                break;
            }
            index += char_len_at(text, index);
        }
    }
    work.verified_bytes += (index - start) as u64;
    // The userinfo's end (or the search's limit) was read: a later `@` would move the
    // password's end.
    let reach = index + 1;
    let span = match (colon, last_at) {
        (Some(colon), Some(at)) if colon + 1 < at => {
            Some(Span::new(colon + 1, at, Rule::UrlPassword))
        }
        _ => None,
    };
    Verdict::of(span, reach)
}
