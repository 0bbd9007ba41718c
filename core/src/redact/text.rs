//! Byte-level text helpers shared by every rule (R25–R28).
//!
//! The redactor works on bytes so that `redact_bytes` can take input that is not UTF-8. These
//! helpers decode one character at a time where a rule needs to know about Unicode (white
//! space, invisible format characters); an invalid byte counts as one character that is
//! neither white space nor invisible, so broken input never stops a scan and never panics.

/// The length of the UTF-8 sequence that a lead byte announces (1 for an invalid lead byte).
#[inline]
pub(crate) fn sequence_len(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 1,
    }
}

/// The length of the longest prefix of `bytes` that ends with no UTF-8 sequence cut short:
/// `bytes` itself unless one of its last three bytes starts a sequence longer than what
/// follows it. Every character of the prefix decodes as it would with more bytes after it.
pub(crate) fn complete_len(bytes: &[u8]) -> usize {
    let len = bytes.len();
    (len.saturating_sub(3)..len)
        .find(|&index| index + sequence_len(bytes[index]) > len)
        .unwrap_or(len)
}

/// Decodes the character at `index`: `(Some(char), length)` for a valid sequence, or
/// `(None, 1)` for a byte that does not start one.
#[inline]
pub(crate) fn decode_at(text: &[u8], index: usize) -> (Option<char>, usize) {
    let Some(&lead) = text.get(index) else {
        return (None, 0);
    };
    if lead < 0x80 {
        return (Some(char::from(lead)), 1);
    }
    let length = sequence_len(lead);
    if length == 1 {
        return (None, 1);
    }
    match text.get(index..index + length).map(std::str::from_utf8) {
        Some(Ok(decoded)) => (decoded.chars().next(), length),
        _ => (None, 1),
    }
}

/// The length of the character at `index` (1 for an invalid byte, 0 past the end).
#[inline]
pub(crate) fn char_len_at(text: &[u8], index: usize) -> usize {
    match text.get(index) {
        None => 0,
        Some(&lead) if lead < 0x80 => 1,
        Some(_) => decode_at(text, index).1,
    }
}

/// Where the character that holds the byte at `index` starts: `index` itself unless it is
/// inside a valid UTF-8 sequence (a byte that is not UTF-8 stands alone).
pub(crate) fn char_start(text: &[u8], index: usize) -> usize {
    (1..=3)
        .filter(|&back| back <= index)
        .find(|&back| {
            let (character, length) = decode_at(text, index - back);
            character.is_some() && length > back
        })
        .map_or(index, |back| index - back)
}

/// The length of the white-space character at `index` (any Unicode `White_Space`, as the
/// regex class `\s`), or 0 when the character there is not white space.
#[inline]
pub(crate) fn white_space_len_at(text: &[u8], index: usize) -> usize {
    match text.get(index) {
        None => 0,
        Some(&byte) if byte < 0x80 => usize::from(matches!(byte, b' ' | b'\t'..=b'\r')),
        // Every non-ASCII white-space character starts with one of these lead bytes.
        Some(&(0xC2 | 0xE1 | 0xE2 | 0xE3)) => match decode_at(text, index) {
            (Some(character), length) if character.is_whitespace() => length,
            _ => 0,
        },
        Some(_) => 0,
    }
}

/// Whether `byte` is an ASCII letter or digit: the "letter or digit" of the left-boundary
/// checks (R25, R26). Non-ASCII letters are not word characters here, exactly as the seed's
/// ASCII `\b`, so a key after `é` is still found.
#[inline]
pub(crate) fn is_alphanumeric(byte: u8) -> bool {
    byte.is_ascii_alphanumeric()
}

/// Byte classes, one bit each, looked up in [`CLASSES`] so that the hot loops of the rules
/// test one table entry per byte.
pub(crate) mod class {
    /// `[A-Za-z0-9]`.
    pub(crate) const ALPHANUMERIC: u8 = 1;
    /// `[A-Za-z0-9_-]`: key characters (R26) and the base64url alphabet of JWTs.
    pub(crate) const KEY: u8 = 2;
    /// `[A-Za-z0-9_]`.
    pub(crate) const WORD: u8 = 4;
    /// `[A-Z0-9]`: the body of an AWS access key id.
    pub(crate) const UPPER_DIGIT: u8 = 8;
    /// ASCII bytes that end an authorization credential (R25): white space, quotes, comma,
    /// semicolon, closing brackets.
    pub(crate) const CREDENTIAL_END: u8 = 16;
    /// `[A-Za-z0-9+/=]`: base64 (PEM bodies).
    pub(crate) const BASE64: u8 = 64;
}

const fn classes() -> [u8; 256] {
    let mut table = [0u8; 256];
    let mut index = 0;
    while index < 256 {
        let byte = index as u8;
        let mut bits = 0;
        if byte.is_ascii_alphanumeric() {
            bits |= class::ALPHANUMERIC | class::KEY | class::WORD | class::BASE64;
        }
        if byte == b'_' || byte == b'-' {
            bits |= class::KEY;
        }
        if byte == b'_' {
            bits |= class::WORD;
        }
        if byte.is_ascii_uppercase() || byte.is_ascii_digit() {
            bits |= class::UPPER_DIGIT;
        }
        if matches!(
            byte,
            b' ' | b'\t'..=b'\r' | b'"' | b'\'' | b'`' | b',' | b';' | b')' | b']' | b'}' | b'>'
        ) {
            bits |= class::CREDENTIAL_END;
        }
        if byte == b'+' || byte == b'/' || byte == b'=' {
            bits |= class::BASE64;
        }
        table[index] = bits;
        index += 1;
    }
    table
}

/// The class bits of every byte.
pub(crate) static CLASSES: [u8; 256] = classes();

/// Whether `byte` belongs to any of the classes in `mask`.
#[inline]
pub(crate) fn is(byte: u8, mask: u8) -> bool {
    CLASSES[usize::from(byte)] & mask != 0
}

/// The end of the run of bytes from `start` that belong to a class of `mask`.
#[inline]
pub(crate) fn run_end(text: &[u8], start: usize, mask: u8) -> usize {
    let rest = text.get(start..).unwrap_or_default();
    start
        + rest
            .iter()
            .position(|&byte| !is(byte, mask))
            .unwrap_or(rest.len())
}

/// The end of the run of bytes from `start` that satisfy `accept` (ASCII-only predicates).
#[inline]
pub(crate) fn run_end_by(text: &[u8], start: usize, accept: impl Fn(u8) -> bool) -> usize {
    let rest = text.get(start..).unwrap_or_default();
    start
        + rest
            .iter()
            .position(|&byte| !accept(byte))
            .unwrap_or(rest.len())
}
/// Whether `text[start..]` begins with `word`, ignoring ASCII case.
#[inline]
pub(crate) fn starts_with_ignore_case(text: &[u8], start: usize, word: &[u8]) -> bool {
    text.get(start..start + word.len())
        .is_some_and(|candidate| candidate.eq_ignore_ascii_case(word))
}

/// Whether `text[start..]` begins with `word` exactly.
#[inline]
pub(crate) fn starts_with(text: &[u8], start: usize, word: &[u8]) -> bool {
    text.get(start..start + word.len()) == Some(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn white_space_is_unicode_white_space() {
        for space in [
            " ", "\t", "\n", "\u{0B}", "\u{85}", "\u{A0}", "\u{1680}", "\u{2003}", "\u{2028}",
            "\u{202F}", "\u{205F}", "\u{3000}",
        ] {
            assert_eq!(
                white_space_len_at(space.as_bytes(), 0),
                space.len(),
                "{space:?}"
            );
        }
        for other in ["a", "\u{200B}", "\u{2014}", "\u{E9}", "\u{FEFF}"] {
            assert_eq!(white_space_len_at(other.as_bytes(), 0), 0, "{other:?}");
        }
    }

    #[test]
    fn complete_len_cuts_only_a_sequence_cut_short() {
        assert_eq!(complete_len(b"abc"), 3);
        assert_eq!(complete_len("a\u{2014}".as_bytes()), 4);
        assert_eq!(complete_len(&"a\u{2014}".as_bytes()[..3]), 1);
        assert_eq!(complete_len(&"\u{1F600}".as_bytes()[..3]), 0);
        assert_eq!(complete_len(b"\xC3\xA9\xE2"), 2);
        assert_eq!(complete_len(b"\xFF\xFE"), 2);
        assert_eq!(complete_len(b""), 0);
    }

    #[test]
    fn char_start_steps_back_only_inside_a_valid_sequence() {
        let text = "a\u{3000}\u{1F600}b".as_bytes();
        assert_eq!(
            (0..text.len())
                .map(|index| char_start(text, index))
                .collect::<Vec<_>>(),
            [0, 1, 1, 1, 4, 4, 4, 4, 8]
        );
        // Stray continuation bytes and a sequence cut short stand alone.
        let stray = b"\x80\x80\xE3\x80x";
        assert_eq!(
            (0..stray.len())
                .map(|index| char_start(stray, index))
                .collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
    }

    #[test]
    fn invalid_bytes_decode_as_one_opaque_character() {
        assert_eq!(decode_at(b"\xFFabc", 0), (None, 1));
        assert_eq!(decode_at(b"\xE2\x80", 0), (None, 1));
        assert_eq!(decode_at("é".as_bytes(), 0), (Some('é'), 2));
        assert_eq!(decode_at(b"", 0), (None, 0));
        assert_eq!(char_len_at(b"\xE2\x80", 0), 1);
    }
}
