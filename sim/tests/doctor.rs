//! `ward doctor` (SPEC §18, P15): healthy on ward's own core behind the protocol, and each of
//! three broken adapters named by the check it fails: a message off the schema, a clock ward
//! does not move, and randomness no seed controls. Each broken adapter is `ward serve` with a
//! shell filter on its output.

mod common;

use common::{folder, ward};

/// `ward serve`, as an adapter command.
fn serve() -> String {
    format!("'{}' serve", env!("CARGO_BIN_EXE_ward"))
}

/// An adapter that is `ward serve` with `filter` on its output: its command.
fn behind(test: &str, filter: &str) -> String {
    let script = folder(test).join("adapter.sh");
    std::fs::write(&script, format!("#!/bin/sh\n{} | {filter}\n", serve())).unwrap();
    format!("sh '{}'", script.display())
}

/// `ward doctor --runtime command --seeds 0..3`: its exit status and standard output.
fn doctor(command: &str) -> (Option<i32>, String) {
    let output = ward(&["doctor", "--runtime", command, "--seeds", "0..3"]);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.code(), stdout)
}

#[test]
fn wards_own_core_is_healthy() {
    let (status, stdout) = doctor(&serve());
    assert_eq!(status, Some(0), "{stdout}");
    assert!(stdout.contains("handshake: ok: ward-core"), "{stdout}");
    // Every reply at ward's instant, and some to judge: `clock: N of N replies …`, N > 0.
    let clock = stdout
        .lines()
        .find(|line| line.starts_with("clock: "))
        .expect("a clock line");
    let counts: Vec<u64> = (clock.split(' ').filter_map(|word| word.parse().ok())).collect();
    assert!(
        counts.len() == 2 && counts[0] == counts[1] && counts[0] > 0,
        "{clock}"
    );
    assert!(stdout.contains("checked as violations: P6 I1"), "{stdout}");
    assert!(stdout.ends_with("healthy\n"), "{stdout}");
}

#[test]
fn a_message_off_the_schema_is_a_protocol_problem() {
    let command = behind(
        "off-schema",
        r#"sed -u 's/"type":"idle"/"type":"idle","extra":1/'"#,
    );
    let (status, stdout) = doctor(&command);
    assert_eq!(status, Some(1), "{stdout}");
    assert!(
        stdout.contains("protocol: problem: parallel reads: protocol violation: not a message of the protocol: at /"),
        "{stdout}"
    );
    assert!(
        stdout.contains(r#"the line: {"type":"idle","extra":1"#),
        "{stdout}"
    );
}

#[test]
fn a_clock_ward_does_not_move_is_a_clock_problem() {
    let command = behind("clock", r#"sed -u -E 's/"timeMs":[0-9]+/"timeMs":0/g'"#);
    let (status, stdout) = doctor(&command);
    assert_eq!(status, Some(1), "{stdout}");
    assert!(stdout.contains("clock: problem: "), "{stdout}");
    assert!(stdout.contains("said `timeMs` 0"), "{stdout}");
    assert!(!stdout.contains("determinism: problem"), "{stdout}");
}

#[test]
fn randomness_no_seed_controls_is_a_determinism_problem() {
    // A random number from the operating system in every `run.completed` text.
    let filter = r#"while IFS= read -r line; do
  case "$line" in
    *'"type":"run.completed"'*)
      r=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
      line=$(printf '%s\n' "$line" | sed "s/\"text\":\"/\"text\":\"$r /") ;;
  esac
  printf '%s\n' "$line"
done"#;
    let (status, stdout) = doctor(&behind("unseeded", filter));
    assert_eq!(status, Some(1), "{stdout}");
    assert!(stdout.contains("determinism: problem: seed "), "{stdout}");
    assert!(stdout.contains("gave trace digests"), "{stdout}");
    assert!(!stdout.contains("protocol: problem"), "{stdout}");
}

#[test]
fn misuse_exits_2() {
    let output = ward(&["doctor"]);
    assert_eq!(output.status.code(), Some(2));
    let output = ward(&["doctor", "--runtime", &serve(), "--seeds", "5..2"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(common::stderr(&output).contains("5..2"));
}

/// `ward serve --store`, durable: its command.
fn durable_serve(test: &str) -> String {
    format!(
        "{} --store '{}'",
        serve(),
        folder(test).join("fallback").display()
    )
}

#[test]
fn wards_own_durable_core_recovers_from_every_crash() {
    let (status, stdout) = doctor(&durable_serve("durable"));
    assert_eq!(status, Some(0), "{stdout}");
    assert!(stdout.contains("durable: a redb file"), "{stdout}");
    assert!(stdout.contains("crashes: 3 crash plans"), "{stdout}");
    assert!(
        stdout.contains("claims: checked as violations: P6 I1"),
        "{stdout}"
    );
    assert!(stdout.contains(" I15 I16 I17 I18 I19"), "{stdout}");
}

#[test]
fn an_adapter_that_cannot_recover_is_a_crashes_problem() {
    // Its input ends at the first `recover`: the runtime exits in answer to it.
    let script = folder("no-recover").join("adapter.sh");
    let filter = r#"sed -u '/"type":"recover"/q'"#;
    let body = format!(
        "#!/bin/sh\n{filter} | {}\n",
        durable_serve("no-recover-store")
    );
    std::fs::write(&script, body).unwrap();
    let (status, stdout) = doctor(&format!("sh '{}'", script.display()));
    assert_eq!(status, Some(1), "{stdout}");
    assert!(stdout.contains("crashes: problem: seed "), "{stdout}");
    assert!(
        stdout.contains("fix: on `crash` drop the runtime"),
        "{stdout}"
    );
}

#[test]
fn a_rule_neither_claimed_nor_noted_is_a_claims_problem() {
    let command = behind("silent", r#"sed -u 's/"R20",//'"#);
    let (status, stdout) = doctor(&command);
    assert_eq!(status, Some(1), "{stdout}");
    assert!(
        stdout.contains("claims: problem: neither claimed nor noted: R20"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "claims: I6 checked in runs no stop touched, not claimed in the others: missing R20"
        ),
        "{stdout}"
    );
}
