//! Where I18 looks past one encoding: the base64 runs of a store's bytes, decoded.
//!
//! A store that serialises its records and then base64-encodes them (DBOS's default
//! serializer writes base64 of a pickle, SPEC §17's stores are any) keeps a prompt's secret
//! at rest one decoding away, while none of its bytes, read as they are, holds 8 characters
//! of it. I18 therefore also reads every run of the base64 alphabet long enough to encode 8
//! bytes, decoded. A run is read at each of its four alignments, so a run that starts with
//! alphabet characters of something else (a JSON key's last letters, an escape's `n`) is
//! still decoded where its encoding starts. The standard and URL-safe alphabets are read as
//! one (`-` as `+`, `_` as `/`); padding ends a run. One level: base64 inside base64, hex,
//! compression and encryption are not undone (a store that encrypts its records keeps its
//! secrets, which is what I18 asks).
//!
//! Decoding every run of every write is dear (ward's own crash campaign, seeds 0..20000 on
//! two jobs: 94.4 s against 59.5 s without it), so a write is decoded only when its bytes,
//! as they are, share 8 characters with one of a secret's [`variants`]: 8 bytes of a secret
//! inside a base64 stream are encoded by 10 characters that depend on those bytes alone, and
//! those are characters of the secret encoded at one of the three byte alignments, in one
//! of the two alphabets. (A stream that switches alphabet inside those 10 characters passes
//! the filter only when something else in the same write does; no encoder writes one.)

use base64::Engine;
use base64::alphabet::STANDARD;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// The fewest characters that encode 8 bytes (I18's run of a secret).
const RUN_CHARS_MIN: usize = 11;

/// Standard base64, padding and trailing bits as they come.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// The characters of `secret`'s base64 encodings that its bytes alone decide: encoded after
/// 0, 1 and 2 other bytes, without the characters those bytes or the ones after the secret
/// share, in the standard and the URL-safe alphabet.
pub fn variants(secret: &str) -> Vec<String> {
    let mut variants = Vec::with_capacity(6);
    if secret.len() < 8 {
        // Shorter than I18's run: nothing of it is looked for.
        return variants;
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for before in 0..3 {
            let mut bytes = vec![0; before];
            bytes.extend_from_slice(secret.as_bytes());
            let encoded = engine.encode(&bytes);
            let (first, end) = ((8 * before).div_ceil(6), 8 * bytes.len() / 6);
            variants.push(encoded[first..end].to_owned());
        }
    }
    variants
}

/// A byte of either base64 alphabet, as the standard one reads it.
fn standard(byte: u8) -> Option<u8> {
    match byte {
        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' => Some(byte),
        b'-' => Some(b'+'),
        b'_' => Some(b'/'),
        _ => None,
    }
}

/// Every run of `bytes` in the base64 alphabets, at least [`RUN_CHARS_MIN`] long, decoded
/// at each of its four alignments, in the order of the runs.
pub fn decoded(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut decoded = Vec::new();
    let mut run: Vec<u8> = Vec::new();
    for &byte in bytes.iter().chain([&b'=']) {
        if let Some(byte) = standard(byte) {
            run.push(byte);
            continue;
        }
        if run.len() >= RUN_CHARS_MIN {
            for skip in 0..4 {
                let aligned = &run[skip..];
                // A single character past the last quad encodes no whole byte.
                let whole = aligned.len() - usize::from(aligned.len() % 4 == 1);
                if let Ok(bytes) = LENIENT.decode(&aligned[..whole]) {
                    decoded.push(bytes);
                }
            }
        }
        run.clear();
    }
    decoded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded_inside(secret: &[u8], before: &str, after: &str) -> Vec<u8> {
        let mut text = before.as_bytes().to_vec();
        text.extend(
            base64::engine::general_purpose::STANDARD
                .encode(secret)
                .bytes(),
        );
        text.extend(after.bytes());
        text
    }

    fn holds(decoded: &[Vec<u8>], needle: &[u8]) -> bool {
        decoded
            .iter()
            .any(|bytes| bytes.windows(needle.len()).any(|window| window == needle))
    }

    #[test]
    fn a_secret_encoded_at_any_offset_is_decoded() {
        let secret = b"\x80\x04\x95 Authorization: Bearer sk-test-0123456789abcdef";
        for before in ["{\"inputs\": \"", "x", "ab", "abc", "\\n"] {
            let text = encoded_inside(secret, before, "\"}");
            assert!(
                holds(&decoded(&text), b"sk-test-0123456789abcdef"),
                "{before:?}"
            );
        }
    }

    #[test]
    fn url_safe_and_unpadded_runs_are_decoded() {
        let secret = b"??>>token-ABCDEFGH??>>";
        let text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret);
        assert!(text.contains('-') || text.contains('_'), "{text}");
        assert!(holds(&decoded(text.as_bytes()), b"token-ABCDEFGH"));
    }

    #[test]
    fn eight_bytes_of_a_secret_encoded_anywhere_hold_ten_characters_of_a_variant() {
        let secret = "Bearer-sk_0123456789abcdef";
        let variants = variants(secret);
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            for before in 0..5 {
                for start in 0..=secret.len() - 8 {
                    let mut bytes = vec![0xFF; before];
                    bytes.extend_from_slice(&secret.as_bytes()[start..start + 8]);
                    bytes.extend_from_slice(&[0xFE; 3]);
                    let encoded = engine.encode(&bytes);
                    let shared = (encoded.as_bytes().windows(10)).any(|window| {
                        variants
                            .iter()
                            .any(|v| v.as_bytes().windows(10).any(|w| w == window))
                    });
                    assert!(shared, "{before} {start} {encoded}");
                }
            }
        }
    }

    #[test]
    fn a_secret_shorter_than_eight_bytes_has_no_variants() {
        assert!(variants("").is_empty() && variants("1234567").is_empty());
        assert_eq!(variants("12345678").len(), 6);
    }

    #[test]
    fn short_runs_and_plain_text_give_nothing_secret() {
        assert!(decoded(b"a b c, words of ten: abcdefghij").is_empty());
        let text = encoded_inside(b"12345678", "", "");
        assert_eq!(text.len(), 12);
        assert!(holds(&decoded(&text), b"12345678"));
        assert!(decoded(&text[..10]).is_empty());
    }
}
