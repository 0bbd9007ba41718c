//! Shared inputs for the ward benches: committed ASCII prose and a fixed, seeded generator
//! of secret-dense text, so that tests and benches measure the same bytes.
//!
//! ```
//! let prose = ward_benches::prose(4096);
//! assert_eq!(prose.len(), 4096);
//! let dense = ward_benches::secret_dense(4096, ward_benches::DENSE_SEED);
//! assert_eq!(dense, ward_benches::secret_dense(4096, ward_benches::DENSE_SEED));
//! ```

/// About 56 KiB of plain English prose about charts and markets, written for these benches:
/// ASCII only, no secrets, no home paths.
pub const PROSE: &str = include_str!("../data/prose.txt");

/// 56 KiB of clean log lines (`benches/scripts/log.py 56KiB … --clean`): timestamped HTTP,
/// database and storage messages with a `/` every few words and nothing to redact.
pub const LOG: &str = include_str!("../data/log.txt");

/// The secret values configured in every redaction bench (provider key, search key).
pub const SECRETS: [&str; 2] = ["prov-3f9a1c7e5b2d8046a1c3", "srch-7d41b09e62c5f8a3"];

/// The seed of the secret-dense generator used by the benches.
pub const DENSE_SEED: u64 = 0x05EE_D0FD_E45E;

/// The average distance between two findings in [`secret_dense`] text, in bytes.
pub const DENSE_FINDING_SPACING: usize = 64;

/// A 200-byte prompt with one home path and one key: the shape of a real request.
pub const PROMPT_200: &str = "Draw a trend line on the weekly chart of 600519 from the March low to the June high, then read my notes in /Users/alice/charts/notes.txt and use key sk-proj-a1B2c3D4e5F6g7H8 for the web search please.";

/// `len` bytes of the committed prose, repeated as often as needed.
pub fn prose(len: usize) -> String {
    repeated(PROSE, len)
}

/// `len` bytes of the committed clean log lines, repeated as often as needed.
pub fn log(len: usize) -> String {
    repeated(LOG, len)
}

/// `len` bytes of `text` (ASCII, so any byte offset is a character boundary), repeated.
fn repeated(text: &str, len: usize) -> String {
    debug_assert!(text.is_ascii() && !text.is_empty());
    let mut repeated = text.repeat(len.div_ceil(text.len()));
    repeated.truncate(len);
    repeated
}

/// SplitMix64: a tiny, fixed generator, so the bench input never changes with a dependency.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    fn push_chars(&mut self, text: &mut String, alphabet: &[u8], count: usize) {
        for _ in 0..count {
            text.push(char::from(alphabet[self.below(alphabet.len())]));
        }
    }
}

const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0234567";
const BASE64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";

/// One finding of a random family (every rule of SPEC §7 is represented).
fn finding(random: &mut SplitMix64, text: &mut String) {
    match random.below(10) {
        0 => {
            text.push_str("Authorization: Bearer ");
            random.push_chars(text, ALPHANUMERIC, 24);
        }
        1 => {
            text.push_str("sk-proj-");
            random.push_chars(text, ALPHANUMERIC, 20);
        }
        2 => {
            text.push_str("ghp_");
            random.push_chars(text, ALPHANUMERIC, 36);
        }
        3 => {
            text.push_str("AKIA");
            random.push_chars(text, UPPER_DIGITS, 16);
        }
        4 => {
            text.push_str("eyJhbGciOiJIUzI1NiJ9.eyJ");
            random.push_chars(text, BASE64URL, 16);
            text.push('.');
            random.push_chars(text, BASE64URL, 22);
        }
        5 => {
            text.push_str("https://admin:");
            random.push_chars(text, ALPHANUMERIC, 12);
            text.push_str("@db.example");
        }
        6 => {
            text.push_str("/Users/");
            random.push_chars(text, LOWER, 6);
            text.push_str("/data.csv");
        }
        7 => {
            text.push_str("C:\\Users\\");
            random.push_chars(text, LOWER, 6);
            text.push_str("\\Desktop");
        }
        8 => text.push_str(SECRETS[random.below(SECRETS.len())]),
        _ => {
            text.push_str("xoxb-");
            random.push_chars(text, ALPHANUMERIC, 24);
        }
    }
}

/// `len` bytes of secret-dense text: prose with a finding every
/// [`DENSE_FINDING_SPACING`] bytes on average (findings included), from a fixed seed.
pub fn secret_dense(len: usize, seed: u64) -> String {
    let mut random = SplitMix64(seed);
    let mut text = String::with_capacity(len + 128);
    let mut words = PROSE.split(' ').cycle().skip(random.below(1000));
    while text.len() < len {
        let gap_end = text.len() + random.below(DENSE_FINDING_SPACING);
        while text.len() < gap_end {
            text.push_str(words.next().unwrap_or("chart"));
            text.push(' ');
        }
        finding(&mut random, &mut text);
        text.push(' ');
    }
    text.truncate(len);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use ward_core::redact::{Redactor, Rule};

    #[test]
    fn prose_is_clean_ascii() {
        assert!(PROSE.is_ascii());
        assert!(PROSE.len() > 50 * 1024);
        let redactor = Redactor::new(SECRETS).expect("valid secrets");
        assert!(redactor.redact_spans(PROSE).is_empty());
        // The seed takes "basic concepts" for a credential; ward does not.
        assert!(
            ward_core::redact::baseline::redact(PROSE, &SECRETS)
                .contains("explains the [REDACTED] of charting")
        );
    }

    #[test]
    fn prompt_is_200_bytes_with_two_findings() {
        assert_eq!(PROMPT_200.len(), 200);
        let redactor = Redactor::new(SECRETS).expect("valid secrets");
        assert_eq!(redactor.redact_spans(PROMPT_200).len(), 2);
    }

    #[test]
    fn dense_text_has_a_finding_every_64_bytes_of_every_rule() {
        let len = 1 << 20;
        let text = secret_dense(len, DENSE_SEED);
        assert_eq!(text.len(), len);
        let redactor = Redactor::new(SECRETS).expect("valid secrets");
        let report = redactor.redact_report(text.as_bytes());
        let per_finding = len / report.spans.len();
        assert!(
            (48..=80).contains(&per_finding),
            "one finding per {per_finding} bytes"
        );
        for rule in Rule::ALL {
            if rule != Rule::PemPrivateKey {
                assert!(report.count(rule) > 0, "{rule} missing");
            }
        }
    }
}
