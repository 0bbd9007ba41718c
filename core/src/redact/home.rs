//! Home paths (R27): `/Users/<name>`, `/home/<name>`, `<drive>:\Users\<name>` become
//! `[LOCAL_PATH]`, and the rest of the path stays.
//!
//! The anchor is the end of a `Users` segment (`rs\` or `rs/`, found case-insensitively),
//! or `/home/`. From a `Users` anchor the rule checks the word, then looks *back* for a
//! root, with bounded steps:
//! - a drive, any case: `C:\Users\`, `c:/users/`, JSON-escaped `C:\\Users\\`, and after a
//!   `\\?\` prefix (which stays);
//! - WSL: `/mnt/c/Users/` (the span starts at `/mnt`);
//! - UNC: `\\host\share\Users\`, `\\host\Users\`, `\\?\UNC\host\share\Users\`, and the
//!   same with forward slashes unless the `//` follows a `:` (a URL); the span starts at
//!   the leading separators. When a `:` blocks the root, the candidate it would have made
//!   is kept aside ([`UsersSegment::after_colon`]) and taken once every span is known if
//!   another span covers that `:` (`/Users/://host/Users/x`, a value ending in `:`), or
//!   the root before it does (a chain `/Users/://h\Users\://k\Users\x`, taken left to
//!   right): the output would otherwise show `]//host/Users/x`, which a second pass would
//!   take for a path (R29 (d)). Such an anchor is verified twice, with and without the
//!   `:` (bounded: twice the root's and name's bytes);
//! - the seed's own `/Users/` (exact case) anywhere.
//!
//! Each separator is `/`, `\` or an escaped `\\`. The user name runs, as in the seed, to the
//! next white space or separator: for the seed's `X:\Users\` form only `\` ends it (the
//! seed's `[^\\\s]+`), for `/Users/` and `/home/` only `/` (the seed's `[^/\s]+`), for the
//! hardened forms either. A name followed by a space continues over up to two further
//! words (at most 64 bytes with their spaces), each one space apart, when a separator follows the last word directly
//! (`C:\Users\John Smith\Desktop` leaves no `Smith`); words there hold letters, digits,
//! `-`, `_`, `.`, `'` and non-ASCII letters, so a sentence (`/home/bob is here, and/or …`)
//! is not taken for a name. A placeholder (`[`) ends a word, so a second pass over the
//! output never accepts a name the first pass refused (R29 (d)). That look-ahead stops at a
//! separator or at a character a root needs (`:`, `\`, `/`), so no two candidates read the
//! same look-ahead bytes twice.
//!
//! Whether a home is taken never waits for the end of its name: a home in a URL's path or
//! after a `:` is decided from what precedes it, and its span, if taken, grows with the
//! name across a streaming window (`growth::Tail::UserName`).
//!
//! **URLs.** A home root (with its name) inside a URL's path stays: after `scheme://` (a
//! scheme of at least two characters, so `C://` is no URL, and not `file`, whose paths are
//! local) with no white space (any Unicode white space), control character, quote, `<`,
//! `>` or backtick between the `://` and the root
//! (`http://www.1024cores.net/home/lock-free`, `https://host/Users/x`), and at most
//! [`URL_PATH_MAX`] (1,024) bytes after the `://` (invisible format characters, R28, not
//! counted). The bound is ward's decision, not the SPEC's: a root farther into a URL is
//! taken for a local path and redacted. It errs on the safe side (a home path that stays
//! could name a user; a URL path redacted loses nothing secret), no real URL puts a home
//! root that deep, and it bounds how far back the rule reads, so the streaming redactor
//! decides such a root from a bounded look-behind ([`URL_LOOK_BEHIND_MAX`]) and writes
//! exactly what whole-text redaction writes. The driver sees `://` anchors in order and
//! keeps one [`UrlRun`]: the last `://` seen and how far its URL is known to run, so each
//! byte after a `://` is read once whatever the number of roots in that URL. Such a path
//! is kept aside and redacted after all if the span of a rule that needs nothing else to
//! decide (a configured value, a key, a home path outside a URL, a certain authorization
//! value…), or a home taken before it in a URL's path or after a `:` whose name runs into
//! the scheme, covers part of its URL's `scheme://` (the output would show no URL there). A
//! root without a name inside a URL joins a span that starts right after it, as anywhere
//! else.
//!
//! A root followed directly by a separator or white space has no name (nor has one
//! followed only by invisible characters, R28: the rules read the view, and a name nobody
//! can see names nobody, though the seed's `/home/[^/\s]+` would take it); if another span
//! starts right there (`/Users/` before a configured value that starts with `/`), the root
//! joins it, as the output would otherwise show `/Users/[REDACTED]`, which a second pass
//! would take for a path (R29 (d)). The driver resolves these once every span is known.

use super::Rule;
use super::span::Span;
use super::text::{
    char_len_at, char_start, starts_with, starts_with_ignore_case, white_space_len_at,
};
use super::work::Work;

/// The longest UNC host or share segment read backwards, in bytes.
const SEGMENT_LEN_MAX: usize = 255;
/// The most space-separated words a user name may add to its first word.
const NAME_EXTRA_WORDS_MAX: usize = 2;
/// The most bytes those words may add.
const NAME_EXTRA_LEN_MAX: usize = 64;
/// How far before a `Users` anchor (its `rs`) a root may start: `use` of `Users`, a
/// separator, two UNC segments with their separators, and the longest introducer
/// (`\\?\UNC\`).
pub(crate) const ROOT_BACK_MAX: usize = 3 + 2 + 2 * (SEGMENT_LEN_MAX + 2) + 8;
/// The farthest a home candidate reads back from its anchor: its root and the `:` before
/// a `//` root.
pub(crate) const LOOK_BEHIND_MAX: usize = ROOT_BACK_MAX + 1;
/// The farthest a home anchor reads past its position when it finds no root: `/home/`,
/// or `rs` and the separator after `Users`.
pub(crate) const FAILED_REACH_MAX: usize = 6;

/// The longest URL scheme read backwards from its `:`, in bytes.
const SCHEME_LEN_MAX: usize = 32;
/// How many bytes after its `://` a home root may start and still lie in a URL's path
/// (R27): a root farther in is a local path (ward's bound; see the module docs).
pub(crate) const URL_PATH_MAX: usize = 1024;
/// The farthest the URL check reads back from a home anchor: the root (up to
/// [`ROOT_BACK_MAX`] before it), the URL path before the root, the `://` and the scheme.
/// The spans that may cover that `scheme://` lie in the same stretch.
pub(crate) const URL_LOOK_BEHIND_MAX: usize = ROOT_BACK_MAX + URL_PATH_MAX + 3 + SCHEME_LEN_MAX;

/// The last `scheme://` the driver saw, and how far its URL is known to run (R27).
#[derive(Debug, Default)]
pub(crate) struct UrlRun {
    /// The scheme's first byte and the end of its `://`; `None` before any URL, or when
    /// the last `://` has no scheme, or a `file` one.
    url: Option<(usize, usize)>,
    /// Bytes after the `://` up to here are URL bytes.
    checked_until: usize,
    /// Where the URL ends, once found.
    end: Option<usize>,
}

impl UrlRun {
    /// A `://` whose `:` is at `colon`.
    pub(crate) fn on_separator(&mut self, text: &[u8], work: &mut Work, colon: usize) {
        let lowest = colon.saturating_sub(SCHEME_LEN_MAX);
        let mut start = colon;
        while start > lowest
            && (text[start - 1].is_ascii_alphanumeric()
                || matches!(text[start - 1], b'+' | b'-' | b'.'))
        {
            start -= 1;
        }
        work.verified_bytes += (colon - start) as u64;
        // The scheme starts at its first letter.
        while start < colon && !text[start].is_ascii_alphabetic() {
            start += 1;
        }
        let scheme = &text[start..colon];
        let separator_end = colon + 3;
        *self = if scheme.len() < 2 || scheme.eq_ignore_ascii_case(b"file") {
            UrlRun::default()
        } else {
            UrlRun {
                url: Some((start, separator_end)),
                checked_until: separator_end,
                end: None,
            }
        };
    }

    /// If `position` lies in the path of the last URL, at most [`URL_PATH_MAX`] bytes after
    /// its `://`: that URL's scheme start and the end of its `://`.
    pub(crate) fn holding(
        &mut self,
        text: &[u8],
        work: &mut Work,
        position: usize,
    ) -> Option<(usize, usize)> {
        let (scheme_start, separator_end) = self.url?;
        if position < separator_end || position - separator_end > URL_PATH_MAX {
            return None;
        }
        if self.end.is_none() && self.checked_until < position {
            let from = self.checked_until;
            let stop = (from..position).find(|&index| ends_url(text, index));
            work.verified_bytes += (stop.unwrap_or(position) - from) as u64;
            match stop {
                Some(end) => self.end = Some(end),
                None => self.checked_until = position,
            }
        }
        match self.end {
            Some(end) if end < position => None,
            _ => Some((scheme_start, separator_end)),
        }
    }
}

/// Whether the character at `index` ends a URL written in text: white space (any Unicode
/// white space: `http://h/x\u{A0}/home/bob` is a URL, then a home path), a control
/// character, a quote, `<`, `>` or a backtick.
fn ends_url(text: &[u8], index: usize) -> bool {
    let byte = text[index];
    if byte < 0x80 {
        return byte.is_ascii_whitespace()
            || byte.is_ascii_control()
            || matches!(byte, b'"' | b'\'' | b'<' | b'>' | b'`');
    }
    white_space_len_at(text, index) > 0
}

/// What a home-path anchor produced.
#[derive(Clone, Copy)]
pub(crate) enum HomeCandidate {
    /// A root and a user name.
    Found {
        /// The root and the name.
        span: Span,
        /// The name's first byte and what ends it.
        name: UserName,
    },
    /// A root without a name: redacted only if another span starts at `name_start`.
    Nameless { start: usize, name_start: usize },
}

/// Where a user name starts and which characters end it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UserName {
    /// The name's first byte.
    pub(crate) start: usize,
    /// What ends it.
    pub(crate) ends: NameEnd,
}

/// Which characters end a user name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NameEnd {
    /// `/` (the seed's `/Users/` and `/home/`, and WSL).
    Slash,
    /// `\` (the seed's `X:\Users\`).
    Backslash,
    /// `/` or `\` (every hardened Windows form).
    Either,
}

impl NameEnd {
    fn is_separator(self, byte: u8) -> bool {
        match self {
            NameEnd::Slash => byte == b'/',
            NameEnd::Backslash => byte == b'\\',
            NameEnd::Either => byte == b'/' || byte == b'\\',
        }
    }
}

/// A separator at `index`: its length (`\\` counts as one escaped separator).
fn separator_at(text: &[u8], index: usize) -> Option<(usize, u8)> {
    match text.get(index)? {
        b'/' => Some((1, b'/')),
        b'\\' if text.get(index + 1) == Some(&b'\\') => Some((2, b'\\')),
        b'\\' => Some((1, b'\\')),
        _ => None,
    }
}

/// The separator that ends right before `index`: where it starts, and its byte.
fn separator_before(text: &[u8], index: usize) -> Option<(usize, u8)> {
    let before = index.checked_sub(1)?;
    match text.get(before)? {
        b'/' => Some((before, b'/')),
        b'\\' if before >= 1 && text[before - 1] == b'\\' => Some((before - 1, b'\\')),
        b'\\' => Some((before, b'\\')),
        _ => None,
    }
}

/// What a `Users` anchor produced.
pub(crate) struct UsersSegment {
    /// The candidate, as the text reads.
    pub(crate) candidate: Option<HomeCandidate>,
    /// When a `//` root was refused only because a `:` precedes it: that `:`'s position and
    /// the candidate the root makes, to be taken if another span covers the `:`.
    pub(crate) after_colon: Option<(usize, HomeCandidate)>,
}

/// From a `Users` anchor (`rs` at `anchor`).
pub(crate) fn users_segment(text: &[u8], work: &mut Work, anchor: usize) -> UsersSegment {
    let mut blocked_colon = None;
    let candidate = users_candidate(text, work, anchor, &mut blocked_colon);
    let after_colon = blocked_colon.and_then(|colon| {
        let mut unblocked = Some(colon);
        let candidate = users_candidate(text, work, anchor, &mut unblocked)?;
        Some((colon, candidate))
    });
    UsersSegment {
        candidate,
        after_colon,
    }
}

/// The candidate of a `Users` anchor. A `//` root after a `:` is refused unless
/// `colon` already holds that `:`'s position; when one is refused, `colon` is set to it.
fn users_candidate(
    text: &[u8],
    work: &mut Work,
    anchor: usize,
    colon: &mut Option<usize>,
) -> Option<HomeCandidate> {
    let users = anchor.checked_sub(3)?;
    if !starts_with_ignore_case(text, users, b"users") {
        return None;
    }
    let (after_len, after_byte) = separator_at(text, users + 5)?;
    let (separator_start, before_byte) = separator_before(text, users)?;
    let exact_unix = before_byte == b'/'
        && after_len == 1
        && after_byte == b'/'
        && starts_with(text, users, b"Users");
    let seed_windows = before_byte == b'\\'
        && separator_start + 1 == users
        && after_len == 1
        && after_byte == b'\\';
    let (start, mut name_end) = if let Some(drive) = drive_root(text, separator_start) {
        (
            drive,
            if seed_windows {
                NameEnd::Backslash
            } else {
                NameEnd::Either
            },
        )
    } else if let Some(wsl) = wsl_root(text, separator_start, before_byte) {
        (wsl, NameEnd::Slash)
    } else if let Some(unc) = unc_root(text, separator_start, work, colon) {
        (unc, NameEnd::Either)
    } else if exact_unix {
        (separator_start, NameEnd::Slash)
    } else {
        return None;
    };
    // Wherever the seed's `/Users/[^/\s]+` matches, the name runs at least as far.
    if exact_unix {
        name_end = NameEnd::Slash;
    }
    Some(with_name(
        text,
        work,
        start,
        users + 5 + after_len,
        name_end,
    ))
}

/// From a `/home/` anchor at `start`.
pub(crate) fn home(text: &[u8], work: &mut Work, start: usize) -> Option<HomeCandidate> {
    if !starts_with(text, start, b"/home/") {
        return None;
    }
    Some(with_name(text, work, start, start + 6, NameEnd::Slash))
}

/// `X:` before the separator that starts at `separator_start`.
fn drive_root(text: &[u8], separator_start: usize) -> Option<usize> {
    let letter = separator_start.checked_sub(2)?;
    (text[letter + 1] == b':' && text[letter].is_ascii_alphabetic()).then_some(letter)
}

/// `/mnt/x` before the separator that starts at `separator_start`.
fn wsl_root(text: &[u8], separator_start: usize, separator: u8) -> Option<usize> {
    let start = separator_start.checked_sub(6)?;
    (separator == b'/'
        && text[separator_start - 1].is_ascii_alphabetic()
        && starts_with(text, start, b"/mnt/"))
    .then_some(start)
}

fn is_segment_byte(byte: u8) -> bool {
    !(byte.is_ascii_whitespace()
        || byte.is_ascii_control()
        || matches!(
            byte,
            b'\\' | b'/' | b':' | b'*' | b'?' | b'"' | b'<' | b'>' | b'|' | b'[' | b']'
        ))
}

/// A UNC root (`\\host\share` or `\\host`, `\\?\UNC\host\share`, `//host/share`) ending at
/// `separator_start`: where it starts.
/// `colon` as in [`users_candidate`].
fn unc_root(
    text: &[u8],
    separator_start: usize,
    work: &mut Work,
    colon: &mut Option<usize>,
) -> Option<usize> {
    let mut segment_end = separator_start;
    for _segment in 0..2 {
        let lowest = segment_end.saturating_sub(SEGMENT_LEN_MAX);
        let mut segment_start = segment_end;
        while segment_start > lowest && is_segment_byte(text[segment_start - 1]) {
            // Unicode white space ends a segment as ASCII white space does (a URL ends
            // there, so a root read across it would lie in a URL only in the input).
            let character = char_start(text, segment_start - 1);
            if text[segment_start - 1] >= 0x80 && white_space_len_at(text, character) > 0 {
                break;
            }
            segment_start -= 1;
        }
        work.verified_bytes += (segment_end - segment_start) as u64;
        if segment_start == segment_end {
            return None;
        }
        if let Some(root) = unc_introducer(text, segment_start, colon) {
            return Some(root);
        }
        let (separator, _) = separator_before(text, segment_start)?;
        segment_end = separator;
    }
    None
}

/// The start of `\\`, `\\?\UNC\` or `//` (not after `:`, unless `colon` holds that `:`'s
/// position; when refused, `colon` is set to it) that ends at `index`.
fn unc_introducer(text: &[u8], index: usize, colon: &mut Option<usize>) -> Option<usize> {
    let before = &text[..index];
    if before.len() >= 8 && before[before.len() - 8..].eq_ignore_ascii_case(b"\\\\?\\unc\\") {
        return Some(index - 8);
    }
    if before.ends_with(b"\\\\") {
        let mut start = index - 2;
        while start > 0 && index - start < 8 && text[start - 1] == b'\\' {
            start -= 1;
        }
        return Some(start);
    }
    if before.ends_with(b"//") {
        let root = index - 2;
        let after_colon = root.checked_sub(1).filter(|&before| text[before] == b':');
        if after_colon.is_none() || after_colon == *colon {
            return Some(root);
        }
        *colon = after_colon;
    }
    None
}

/// The user name from `name_start`, and the candidate it makes.
fn with_name(
    text: &[u8],
    work: &mut Work,
    start: usize,
    name_start: usize,
    ends: NameEnd,
) -> HomeCandidate {
    let word_end = first_word_end(text, name_start, ends);
    work.verified_bytes += (word_end - name_start) as u64;
    if word_end == name_start {
        return HomeCandidate::Nameless { start, name_start };
    }
    let end = spaced_name_end(text, work, word_end).unwrap_or(word_end);
    HomeCandidate::Found {
        span: Span::new(start, end, Rule::HomePath),
        name: UserName {
            start: name_start,
            ends,
        },
    }
}

/// Where the first word of a user name that runs on from `from` ends.
fn first_word_end(text: &[u8], from: usize, ends: NameEnd) -> usize {
    let mut index = from;
    while let Some(&byte) = text.get(index) {
        if ends.is_separator(byte) || white_space_len_at(text, index) > 0 {
            break;
        }
        index += char_len_at(text, index);
    }
    index
}

/// The end of a user name read on from `from`, a position inside its first word (for the
/// streaming redactor): where the name ends, with its further words, and one past the last
/// byte read to know it.
pub(crate) fn name_end_from(text: &[u8], from: usize, ends: NameEnd) -> (usize, usize) {
    let word_end = first_word_end(text, from, ends);
    let (joined, stop) = spaced_words(text, word_end);
    (joined.unwrap_or(word_end), stop + 1)
}

fn is_name_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'\'') || byte >= 0x80
}

/// Where a name that continues over space-separated words ends, if a separator follows
/// its last word directly.
fn spaced_name_end(text: &[u8], work: &mut Work, name_end: usize) -> Option<usize> {
    let (result, stop) = spaced_words(text, name_end);
    work.verified_bytes += (stop - name_end) as u64;
    result
}

/// One past the last byte read to end a home candidate whose span ends at `end`: the byte
/// that ended its name and the words [`spaced_name_end`] looked at after it (for the
/// streaming redactor).
pub(crate) fn name_reach(text: &[u8], end: usize) -> usize {
    spaced_words(text, end).1 + 1
}

/// [`spaced_name_end`]'s answer, and the position of the last byte it read.
fn spaced_words(text: &[u8], name_end: usize) -> (Option<usize>, usize) {
    let mut index = name_end;
    let mut words = 0;
    let result = loop {
        if text.get(index) != Some(&b' ') || words == NAME_EXTRA_WORDS_MAX {
            break None;
        }
        words += 1;
        index += 1;
        let word_start = index;
        while let Some(&byte) = text.get(index) {
            if !is_name_word_byte(byte) || white_space_len_at(text, index) > 0 {
                break;
            }
            index += char_len_at(text, index);
            if index - name_end > NAME_EXTRA_LEN_MAX {
                break;
            }
        }
        if index == word_start || index - name_end > NAME_EXTRA_LEN_MAX {
            break None;
        }
        match text.get(index) {
            Some(b'\\' | b'/') => break Some(index),
            Some(b' ') => {}
            _ => break None,
        }
    };
    (result, index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Option<&str> {
        let bytes = text.as_bytes();
        let mut work = Work::default();
        let anchor = text
            .to_ascii_lowercase()
            .find("rs\\")
            .or_else(|| text.to_ascii_lowercase().find("rs/"))?;
        match users_segment(bytes, &mut work, anchor).candidate? {
            HomeCandidate::Found { span, .. } => Some(&text[span.range()]),
            HomeCandidate::Nameless { .. } => Some(""),
        }
    }

    #[test]
    fn roots_of_every_form() {
        assert_eq!(found(r"at C:\Users\alice\x"), Some(r"C:\Users\alice"));
        assert_eq!(found(r"at c:\users\alice\x"), Some(r"c:\users\alice"));
        assert_eq!(found(r"at C:/Users/alice/x"), Some(r"C:/Users/alice"));
        assert_eq!(found(r#""C:\\Users\\alice\\x""#), Some(r"C:\\Users\\alice"));
        assert_eq!(found(r"\\?\C:\Users\alice\x"), Some(r"C:\Users\alice"));
        assert_eq!(
            found(r"\\fs01\home$\Users\alice\x"),
            Some(r"\\fs01\home$\Users\alice")
        );
        assert_eq!(found(r"\\fs01\users\alice"), Some(r"\\fs01\users\alice"));
        assert_eq!(
            found(r"\\?\UNC\fs01\c$\Users\alice"),
            Some(r"\\?\UNC\fs01\c$\Users\alice")
        );
        assert_eq!(found("/mnt/c/Users/alice/x"), Some("/mnt/c/Users/alice"));
        assert_eq!(found("/mnt/d/users/alice/x"), Some("/mnt/d/users/alice"));
        assert_eq!(found("x/Users/alice/x"), Some("/Users/alice"));
        assert_eq!(
            found(r"C:\Users\John Smith\Desktop"),
            Some(r"C:\Users\John Smith")
        );
        assert_eq!(found(r"C:\Users\ alice"), Some(""));
    }

    #[test]
    fn not_a_home_path() {
        assert_eq!(found("https://example.com/users/alice"), None);
        assert_eq!(found("the users/groups table"), None);
        assert_eq!(found("/srv/users/alice"), None);
        assert_eq!(found(r"C:\Program Files\Users\x"), None);
    }

    #[test]
    fn sentences_are_not_names() {
        let text = "/Users/bob is in here and/or there";
        let mut work = Work::default();
        match users_segment(text.as_bytes(), &mut work, 4).candidate {
            Some(HomeCandidate::Found { span, .. }) => {
                assert_eq!(&text[span.range()], "/Users/bob")
            }
            _ => panic!("expected a home path"),
        }
    }
}
