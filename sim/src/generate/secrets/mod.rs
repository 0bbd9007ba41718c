//! Planted secrets of every shape of SPEC §7 and §10, each labelled, unique and
//! high-entropy, so that ordinary text never contains one by chance.
//!
//! Each planting returns the text to put in a prompt and the labelled parts that must never
//! be seen again outside a placeholder. Only shapes the redactor must remove are planted:
//! a credential always looks like one (R25), a key body is long enough (R26), a user name
//! with spaces is always followed by a separator (R27).

mod nesting;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::catalogue::{KEY_FAMILIES, KeyFamily};
use crate::rng::{ALPHANUMERIC, SimRng};
use crate::scenario::{PlantedSecret, SecretShape};

pub use nesting::nested;

/// Invisible format characters of R28.
const INVISIBLE: &[&str] = &[
    "\u{200B}", "\u{200C}", "\u{200D}", "\u{2060}", "\u{FEFF}", "\u{00AD}",
];

/// Text to place in a prompt, and the secret parts it carries.
#[derive(Debug, Clone)]
pub struct Planting {
    /// The text.
    pub text: String,
    /// The parts, labelled.
    pub parts: Vec<PlantedSecret>,
}

/// Makes fresh labels: `<shape>-<n>`.
#[derive(Debug, Default)]
pub struct Labels {
    next: u32,
}

impl Labels {
    fn make(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}-{}", self.next)
    }
}

/// A high-entropy token of `length` characters that starts with a letter-digit pair, so it
/// can never be an ordinary word.
pub fn token(rng: &mut SimRng, length: usize) -> String {
    let mut text = String::with_capacity(length);
    text.push(char::from(*rng.pick(b"ABCDEFGHJKLMNPQRSTUVWXYZ")));
    text.push(char::from(*rng.pick(b"23456789")));
    text.push_str(&rng.string(ALPHANUMERIC, length.saturating_sub(2)));
    text
}

/// A token of a length drawn from `low..=high`.
pub fn token_between(rng: &mut SimRng, low: usize, high: usize) -> String {
    let length = rng.range_usize(low, high);
    token(rng, length)
}

fn part(labels: &mut Labels, prefix: &str, value: String, shape: SecretShape) -> PlantedSecret {
    PlantedSecret {
        label: labels.make(prefix),
        value,
        shape,
    }
}

/// A configured value: what a run lists in `secrets`.
pub fn configured(rng: &mut SimRng, labels: &mut Labels) -> PlantedSecret {
    let value = format!("cfg{}", token_between(rng, 14, 28));
    part(labels, "configured", value, SecretShape::Configured)
}

/// A configured exact value of `chars` characters (at least 3; R24 refuses fewer than 8),
/// half the time with a two-byte character, so that it holds more bytes than characters.
pub fn configured_of(rng: &mut SimRng, labels: &mut Labels, chars: usize) -> PlantedSecret {
    let head = if rng.percent(50) { "cfé" } else { "cfg" };
    let value = format!("{head}{}", token(rng, chars.saturating_sub(3)));
    part(labels, "configured", value, SecretShape::Configured)
}

/// An authorization value (R25, R28): scheme in some letter case, maybe behind a header
/// context, maybe with an invisible character inside the scheme word.
pub fn credential(rng: &mut SimRng, labels: &mut Labels) -> Planting {
    let scheme = *rng.pick(&["Bearer", "bearer", "BEARER", "Basic", "basic"]);
    let scheme = if rng.percent(30) {
        let cut = rng.range_usize(1, scheme.len() - 1);
        format!(
            "{}{}{}",
            &scheme[..cut],
            rng.pick(INVISIBLE),
            &scheme[cut..]
        )
    } else {
        scheme.to_owned()
    };
    let mut credential = token_between(rng, 20, 40);
    if rng.percent(50) {
        credential.push_str(&rng.string(b"._~+/=-", 2));
        credential.push_str(&token(rng, 6));
    }
    let text = match rng.below(3) {
        0 => format!("Authorization: {scheme} {credential}"),
        1 => format!("\"authorization\": \"{scheme} {credential}\""),
        _ => format!("use {scheme} {credential} for the call"),
    };
    Planting {
        text,
        parts: vec![part(
            labels,
            "credential",
            credential,
            SecretShape::Credential,
        )],
    }
}

/// An authorization value at one of R25's thresholds, each of which the rule must still
/// redact: without header context, a `Bearer` credential of exactly 8 characters with a digit,
/// one ending in `=` padding, a JWT-shaped one, or one of exactly 20 characters; a `Basic`
/// credential that decodes to `user:password` (padded or not); with header context (a header
/// or JSON key ending in `authorization`), a short credential of 6, after a line break or
/// not; and an invisible format character inside the credential (R28).
pub fn credential_at_threshold(rng: &mut SimRng, labels: &mut Labels) -> Planting {
    let (text, credential) = match rng.below(8) {
        0 => {
            let credential = token(rng, 8);
            (format!("use Bearer {credential} for the call"), credential)
        }
        1 => {
            let credential = format!("{}=", token(rng, 7));
            (format!("use bearer {credential} now"), credential)
        }
        2 => {
            let credential = format!(
                "eyJ{}.eyJ{}.{}",
                token(rng, 6),
                token(rng, 8),
                token(rng, 8)
            );
            (format!("send Bearer {credential} please"), credential)
        }
        3 => {
            let credential = token(rng, 20);
            (format!("use Basic {credential} there"), credential)
        }
        4 => {
            let credential = basic_credential(rng);
            (format!("log in with basic {credential} today"), credential)
        }
        5 => {
            let credential = token(rng, 6);
            let header = *rng.pick(&["Authorization: Bearer", "proxy-authorization= Basic"]);
            let gap = if rng.percent(50) { "\n" } else { " " };
            (format!("{header}{gap}{credential}"), credential)
        }
        6 => {
            let credential = token(rng, 6);
            (
                format!("\"X-Authorization\": \"Bearer {credential}\""),
                credential,
            )
        }
        _ => {
            let credential = token(rng, 24);
            let cut = rng.range_usize(2, 20);
            let (head, tail) = credential.split_at(cut);
            let text = format!(
                "use Bearer {head}{}{tail} for the call",
                rng.pick(INVISIBLE)
            );
            (text, credential)
        }
    };
    Planting {
        text,
        parts: vec![part(
            labels,
            "credential",
            credential,
            SecretShape::Credential,
        )],
    }
}

/// A `Basic` credential that decodes to `user:password`, padded or (half the time) not. A
/// word of letters alone is never a credential without header context (R25): the encoding
/// must hold something else.
fn basic_credential(rng: &mut SimRng) -> String {
    let strip = rng.percent(50);
    let mut credential = String::new();
    while credential.chars().all(char::is_alphabetic) {
        let secret = format!("{}:{}", token(rng, 6), token(rng, 10));
        credential = STANDARD.encode(secret.as_bytes());
        if strip {
            credential = credential.trim_end_matches('=').to_owned();
        }
    }
    credential
}

/// A key of one of R26's families with the fewest key characters its rule redacts
/// ([`KEY_FAMILIES`]).
pub fn shortest_key(rng: &mut SimRng, labels: &mut Labels) -> Planting {
    let KeyFamily { prefix, chars_min } = *rng.pick(&KEY_FAMILIES);
    let mut body = token(rng, chars_min);
    if prefix == "AKIA" {
        body = body.to_uppercase();
    }
    Planting {
        text: format!("my key is {prefix}{body} for the data feed"),
        parts: vec![part(labels, "key", body, SecretShape::KeyBody)],
    }
}

/// An API key of one of the families of R26; the body is the secret part.
pub fn key(rng: &mut SimRng, labels: &mut Labels) -> Planting {
    let (text, body) = match rng.below(9) {
        0 => {
            let body = token_between(rng, 20, 48);
            (format!("sk-{body}"), body)
        }
        1 => {
            let body = token(rng, 32);
            (format!("sk-proj-{body}"), body)
        }
        2 => {
            let body = token(rng, 40);
            (format!("sk-ant-api03-{body}"), body)
        }
        3 => {
            let body = token(rng, 24);
            (format!("sk_live_{body}"), body)
        }
        4 => {
            let body = token(rng, 36);
            (format!("ghp_{body}"), body)
        }
        5 => {
            let body = token(rng, 16).to_uppercase();
            (format!("AKIA{body}"), body)
        }
        6 => {
            let body = token(rng, 24);
            (
                format!("xoxb-{}-{body}", rng.range(100_000_000, 999_999_999)),
                body,
            )
        }
        7 => {
            let (header, payload, signature) = (token(rng, 20), token(rng, 30), token(rng, 24));
            (format!("eyJ{header}.eyJ{payload}.{signature}"), payload)
        }
        _ => {
            let body = token(rng, 48);
            (
                format!("-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"),
                body,
            )
        }
    };
    let text = match rng.below(3) {
        0 => format!("my key is {text}"),
        1 => format!("key={text};"),
        _ => format!("({text})"),
    };
    Planting {
        text,
        parts: vec![part(labels, "key", body, SecretShape::KeyBody)],
    }
}

/// A home path with a user name (R27): every hardened shape.
pub fn home_path(rng: &mut SimRng, labels: &mut Labels) -> Planting {
    let name = token_between(rng, 6, 12);
    let spaced = format!("{} {}", token(rng, 6), token(rng, 7));
    let accented = format!("J{}ö{}", rng.range(10, 99), token(rng, 6));
    let dotted = format!("{}.{}{}", token(rng, 4), token(rng, 5), rng.range(10, 99));
    let (text, names): (String, Vec<String>) = match rng.below(10) {
        0 => (format!("/Users/{name}/Documents/chart.csv"), vec![name]),
        1 => (format!("/home/{name}/exports"), vec![name]),
        2 => (format!("C:\\Users\\{name}\\Desktop\\notes.txt"), vec![name]),
        3 => (format!("c:\\users\\{name}\\AppData"), vec![name]),
        4 => (format!("C:/Users/{name}/Downloads"), vec![name]),
        5 => (format!("\\\\?\\C:\\Users\\{name}\\data"), vec![name]),
        6 => (format!("/mnt/c/Users/{name}/work"), vec![name]),
        7 => (
            format!("C:\\Users\\{spaced}\\Desktop"),
            spaced.split(' ').map(str::to_owned).collect(),
        ),
        8 => (format!("/home/{accented}/x"), vec![accented]),
        _ => (format!("/Users/{dotted}/Library"), vec![dotted]),
    };
    let parts = names
        .into_iter()
        .map(|name| part(labels, "user", name, SecretShape::UserName))
        .collect();
    Planting {
        text: format!("the file is in {text} on my machine"),
        parts,
    }
}

/// A password in URL userinfo (R26).
pub fn url_password(rng: &mut SimRng, labels: &mut Labels) -> Planting {
    let password = token_between(rng, 12, 24);
    let scheme = *rng.pick(&["https", "postgres", "redis", "ftp"]);
    let text = format!("connect to {scheme}://admin:{password}@db.example.com:5432/prices");
    Planting {
        text,
        parts: vec![part(
            labels,
            "url-password",
            password,
            SecretShape::UrlPassword,
        )],
    }
}

/// A configured value written right against a key, so that part of the value and part of the
/// pattern overlap: a redactor that applies patterns before values leaves a fragment of the
/// value behind.
pub fn configured_touching_a_key(
    rng: &mut SimRng,
    labels: &mut Labels,
) -> (PlantedSecret, Planting) {
    let lead = token_between(rng, 10, 16);
    let body = token(rng, 24);
    let key_text = format!("sk-{body}");
    let value = format!("{lead} {}", &key_text[..rng.range_usize(6, 12)]);
    let secret = part(labels, "configured", value, SecretShape::Configured);
    let planting = Planting {
        text: format!("token {lead} {key_text} end"),
        parts: vec![part(labels, "key", body, SecretShape::KeyBody)],
    };
    (secret, planting)
}

/// Two configured values overlapping one another in the text.
pub fn overlapping_configured(
    rng: &mut SimRng,
    labels: &mut Labels,
) -> (PlantedSecret, PlantedSecret, String) {
    let (a, b, c) = (token(rng, 10), token(rng, 10), token(rng, 10));
    let first = part(
        labels,
        "configured",
        format!("{a}{b}"),
        SecretShape::Configured,
    );
    let second = part(
        labels,
        "configured",
        format!("{b}{c}"),
        SecretShape::Configured,
    );
    (first, second, format!("values {a}{b}{c} here"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plantings_carry_their_parts() {
        let mut rng = SimRng::new(3);
        let mut labels = Labels::default();
        for _ in 0..200 {
            for planting in [
                credential(&mut rng, &mut labels),
                key(&mut rng, &mut labels),
                home_path(&mut rng, &mut labels),
                url_password(&mut rng, &mut labels),
                nested(&mut rng, &mut labels),
            ] {
                for part in &planting.parts {
                    assert!(
                        planting.text.contains(&part.value),
                        "{} in {}",
                        part.value,
                        planting.text
                    );
                    assert!(part.value.chars().count() >= 6);
                }
            }
        }
    }
}
