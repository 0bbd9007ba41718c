//! The seed's redactor, exactly as SPEC §7 writes it: a test oracle and a benchmark
//! baseline; nothing relies on it for protection.
//!
//! Its rules run one after another on the text the previous rule left: authorization
//! values, then `sk-` keys, then home paths, then each exact value in list order. That
//! order is what leaves fragments (once a pattern has replaced part of a value, the exact
//! pass cannot find it),
//! which is why [`super::Redactor`] exists.
//!
//! [`redact`] compiles the patterns with Unicode `\s` and ASCII `\b`, as the spec says.
//! [`Baseline::ascii`] compiles them in ASCII mode over bytes, the fastest form the seed's
//! rules can take, for the benches.
//!
//! ```
//! use ward_core::redact::baseline;
//!
//! assert_eq!(baseline::redact("Explain the basic concepts", &[]), "Explain the [REDACTED]");
//! assert_eq!(baseline::redact("k=sk-abcdefghijk-", &[]), "k=sk-abcdefghijk-");
//! ```

use std::sync::OnceLock;

use regex::bytes::Regex;

use super::{LOCAL_PATH, REDACTED};

/// The seed's patterns, in the order it applies them, with their placeholders.
///
/// ```
/// use ward_core::redact::baseline::Baseline;
///
/// let seed = Baseline::ascii();
/// assert_eq!(seed.redact_bytes(b"see /home/bob/x and key-value-123", &["key-value-123"]), b"see [LOCAL_PATH]/x and [REDACTED]");
/// assert_eq!(seed.pattern_matches(b"/home/bob/x"), [(3, 0..9)]);
/// ```
#[derive(Clone, Debug)]
pub struct Baseline {
    rules: Vec<(Regex, &'static str)>,
}

impl Baseline {
    /// The seed as SPEC §7 writes it: Unicode `\s`, ASCII `\b`.
    pub fn unicode() -> Baseline {
        Baseline::compile(&[
            r"(?i)(?-u:\b)(?:Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+",
            r"(?-u:\b)sk-[A-Za-z0-9_-]{12,}(?-u:\b)",
            r"/Users/[^/\s]+",
            r"/home/[^/\s]+",
            r"[A-Za-z]:\\Users\\[^\\\s]+",
        ])
    }

    /// The same patterns in ASCII mode (ASCII `\s`, byte classes): the benchmark baseline.
    pub fn ascii() -> Baseline {
        Baseline::compile(&[
            r"(?i-u)\b(?:Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+",
            r"(?-u)\bsk-[A-Za-z0-9_-]{12,}\b",
            r"(?-u)/Users/[^/\s]+",
            r"(?-u)/home/[^/\s]+",
            r"(?-u)[A-Za-z]:\\Users\\[^\\\s]+",
        ])
    }

    fn compile(patterns: &[&str; 5]) -> Baseline {
        let placeholders = [REDACTED, REDACTED, LOCAL_PATH, LOCAL_PATH, LOCAL_PATH];
        let rules = patterns
            .iter()
            .zip(placeholders)
            // The patterns are constants of this file; the unit tests compile both sets.
            .filter_map(|(pattern, placeholder)| {
                Regex::new(pattern).ok().map(|regex| (regex, placeholder))
            })
            .collect();
        Baseline { rules }
    }

    /// Applies the seed's rules in order, then replaces each exact value in list order.
    pub fn redact_bytes(&self, text: &[u8], secrets: &[&str]) -> Vec<u8> {
        let mut current = text.to_vec();
        for (regex, placeholder) in &self.rules {
            current = regex
                .replace_all(&current, placeholder.as_bytes())
                .into_owned();
        }
        for secret in secrets.iter().filter(|secret| !secret.is_empty()) {
            current = replace_all(&current, secret.as_bytes(), REDACTED.as_bytes());
        }
        current
    }

    /// The byte ranges of `text` that each of the seed's pattern rules, applied alone to
    /// the original text, would replace, with the rule's index (0 auth, 1 `sk-`, 2–4 paths).
    pub fn pattern_matches(&self, text: &[u8]) -> Vec<(usize, std::ops::Range<usize>)> {
        let mut found = Vec::new();
        for (index, (regex, _)) in self.rules.iter().enumerate() {
            found.extend(
                regex
                    .find_iter(text)
                    .map(|matched| (index, matched.range())),
            );
        }
        found
    }
}

fn replace_all(text: &[u8], needle: &[u8], replacement: &[u8]) -> Vec<u8> {
    let mut output = Vec::with_capacity(text.len());
    let mut copied_until = 0;
    for position in memchr::memmem::find_iter(text, needle) {
        if position < copied_until {
            continue;
        }
        output.extend_from_slice(&text[copied_until..position]);
        output.extend_from_slice(replacement);
        copied_until = position + needle.len();
    }
    output.extend_from_slice(&text[copied_until..]);
    output
}

/// The seed's redaction of `text` (Unicode mode), with `secrets` replaced in list order.
pub fn redact(text: &str, secrets: &[&str]) -> String {
    static SEED: OnceLock<Baseline> = OnceLock::new();
    let output = SEED
        .get_or_init(Baseline::unicode)
        .redact_bytes(text.as_bytes(), secrets);
    String::from_utf8(output)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_pattern_sets_compile() {
        assert_eq!(Baseline::unicode().rules.len(), 5);
        assert_eq!(Baseline::ascii().rules.len(), 5);
    }

    #[test]
    fn the_seed_leaves_the_fragments_the_issue_describes() {
        // Once the sk- rule has replaced part of a value, the exact pass cannot find it.
        let secret = "sk-abcdefghijklmnop-tail-value";
        assert_eq!(
            redact(
                "x sk-abcdefghijklmnop-tail-value",
                &["abcdefghijklmnop-tail-value!"]
            ),
            "x [REDACTED]"
        );
        let out = redact(
            "prefix-value sk-abcdefghijklmnop",
            &["value sk-abcdefghijklmnop"],
        );
        assert_eq!(out, "prefix-value [REDACTED]");
        assert!(out.contains("value"));
        assert_eq!(redact(secret, &[]), "[REDACTED]");
        assert_eq!(
            redact(r"c:\users\x and C:\Users\John Smith\x", &[]),
            r"c:\users\x and [LOCAL_PATH] Smith\x"
        );
        assert_eq!(
            redact("B\u{200B}earer abc123456789", &[]),
            "B\u{200B}earer abc123456789"
        );
        assert_eq!(
            redact("Authorization: Bearer abc$def;x", &[]),
            "Authorization: [REDACTED]$def;x"
        );
    }
}
