//! The Node kit's template (`adapters/node/template.js`, P13): a tiny hand-written runtime
//! behind ward in one file, run as the kit's README page runs it. `ward doctor` finds it
//! healthy, and a campaign finds exactly the one class of failure the page explains (I5: a
//! repeated key reaches the body through `JSON.parse`). Without Node and the adapters'
//! packages the tests say why they did not run.

mod common;

use common::replay::adapter;
use common::{broken_invariants, repository, ward};

/// The template's adapter command, run from the repository's root, or `None` (said why) when
/// it cannot run here.
fn template() -> Option<String> {
    let command = adapter("template")
        .map_err(|why| eprintln!("skipped: the template cannot run here: {why}"))
        .ok()?;
    Some(format!("cd '{}' && {command}", repository().display()))
}

#[test]
fn the_template_is_healthy() {
    let Some(command) = template() else { return };
    let output = ward(&["doctor", "--runtime", &command, "--seeds", "0..3"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("handshake: ok: ward-template 1.0.0"),
        "{stdout}"
    );
}

#[test]
fn a_campaign_finds_the_repeated_key_and_nothing_else() {
    let Some(command) = template() else { return };
    assert_eq!(broken_invariants(&command, "0..80", "campaign"), ["I5"]);
}
