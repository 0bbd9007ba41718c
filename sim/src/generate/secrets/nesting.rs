//! Plantings of secrets inside and across one another (R29): a key nested in another rule's
//! span, configured values inside or over the end of other spans.

use crate::rng::SimRng;
use crate::scenario::{PlantedSecret, SecretShape};

use super::{Labels, Planting, part, token};

/// One of seven shapes of nested or overlapping spans: a key as a `Bearer` credential or as a
/// URL password (nested in another rule's span), a configured value inside a key body or
/// inside a home path's user name, a key inside a configured value, and a configured value
/// that overlaps the end of a user name or of a credential and runs on past it (R29:
/// overlapping and touching spans merge into one placeholder). The configured values are the
/// parts of shape [`SecretShape::Configured`]; the run must list them.
pub fn nested(rng: &mut SimRng, labels: &mut Labels) -> Planting {
    let body = token(rng, 28);
    let key_text = format!("sk-{body}");
    let mut parts = Vec::new();
    let shape = rng.below(7);
    let text = match shape {
        0 => key_as_credential(rng, labels, &mut parts, &key_text),
        1 => key_as_url_password(labels, &mut parts, &key_text),
        2 => configured_in_key(rng, labels, &mut parts, &body, &key_text),
        3 => key_in_configured(rng, labels, &mut parts, &key_text),
        4 => configured_in_user_name(rng, labels, &mut parts),
        5 => configured_across_user_name(rng, labels, &mut parts),
        _ => configured_across_credential(rng, labels, &mut parts),
    };
    // The first four shapes plant the key too.
    if shape <= 3 {
        parts.push(part(labels, "key", body, SecretShape::KeyBody));
    }
    Planting { text, parts }
}

/// [`nested`] shape 0: a key as a `Bearer` or `Basic` credential (R25 around R26).
fn key_as_credential(
    rng: &mut SimRng,
    labels: &mut Labels,
    parts: &mut Vec<PlantedSecret>,
    key_text: &str,
) -> String {
    let scheme = *rng.pick(&["Bearer", "bearer", "Basic"]);
    parts.push(part(
        labels,
        "credential",
        key_text.to_owned(),
        SecretShape::Credential,
    ));
    if rng.percent(50) {
        format!("Authorization: {scheme} {key_text}")
    } else {
        format!("use {scheme} {key_text} for the call")
    }
}

/// [`nested`] shape 1: a key as a URL's password.
fn key_as_url_password(
    labels: &mut Labels,
    parts: &mut Vec<PlantedSecret>,
    key_text: &str,
) -> String {
    parts.push(part(
        labels,
        "url-password",
        key_text.to_owned(),
        SecretShape::UrlPassword,
    ));
    format!("connect to https://admin:{key_text}@db.example.com/prices")
}

/// [`nested`] shape 2: a configured value inside a key's body.
fn configured_in_key(
    rng: &mut SimRng,
    labels: &mut Labels,
    parts: &mut Vec<PlantedSecret>,
    body: &str,
    key_text: &str,
) -> String {
    let start = rng.range_usize(0, 12);
    let inner = body[start..start + rng.range_usize(10, 16)].to_owned();
    parts.push(part(labels, "configured", inner, SecretShape::Configured));
    format!("key={key_text};")
}

/// [`nested`] shape 3: a key inside a configured value.
fn key_in_configured(
    rng: &mut SimRng,
    labels: &mut Labels,
    parts: &mut Vec<PlantedSecret>,
    key_text: &str,
) -> String {
    let value = format!("{} {key_text}", token(rng, 10));
    parts.push(part(
        labels,
        "configured",
        value.clone(),
        SecretShape::Configured,
    ));
    format!("values {value} end")
}

/// [`nested`] shape 4: a configured value inside a home path's user name.
fn configured_in_user_name(
    rng: &mut SimRng,
    labels: &mut Labels,
    parts: &mut Vec<PlantedSecret>,
) -> String {
    let name = token(rng, 16);
    let start = rng.range_usize(0, 6);
    let inner = name[start..start + 10].to_owned();
    parts.push(part(labels, "configured", inner, SecretShape::Configured));
    parts.push(part(labels, "user", name.clone(), SecretShape::UserName));
    format!("the file is in /home/{name}/exports on my machine")
}

/// [`nested`] shape 5: a configured value over the end of a user name, on into the folder.
fn configured_across_user_name(
    rng: &mut SimRng,
    labels: &mut Labels,
    parts: &mut Vec<PlantedSecret>,
) -> String {
    let (name, folder) = (token(rng, 10), token(rng, 10));
    let across = format!("{}/{}", &name[4..], &folder[..5]);
    parts.push(part(labels, "configured", across, SecretShape::Configured));
    parts.push(part(labels, "user", name.clone(), SecretShape::UserName));
    format!("the file is in /Users/{name}/{folder}/chart.csv")
}

/// [`nested`] shape 6: a configured value over the end of a credential, on into the next
/// word.
fn configured_across_credential(
    rng: &mut SimRng,
    labels: &mut Labels,
    parts: &mut Vec<PlantedSecret>,
) -> String {
    let (credential, word) = (token(rng, 24), token(rng, 8));
    let across = format!("{} {word}", &credential[18..]);
    parts.push(part(labels, "configured", across, SecretShape::Configured));
    parts.push(part(
        labels,
        "credential",
        credential.clone(),
        SecretShape::Credential,
    ));
    format!("Authorization: Bearer {credential} {word} end")
}
