//! The fuzzing setup agrees with itself (SPEC §13): the targets ClusterFuzzLite builds are
//! the targets of `fuzz/Cargo.toml`, each has a source file, a corpus folder and a
//! dictionary, and `arbitrary` is pinned to one exact version on both sides (the binary
//! corpus of the structure-aware target decodes only with the version it was found with).

use std::collections::BTreeSet;
use std::path::PathBuf;

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repository().join(path))
        .unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// The `name = "…"` of every `[[bin]]` table of `fuzz/Cargo.toml`.
fn cargo_targets() -> BTreeSet<String> {
    let manifest = read("fuzz/Cargo.toml");
    let mut targets = BTreeSet::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
            continue;
        }
        if let Some(name) = in_bin
            .then(|| line.strip_prefix("name = \""))
            .flatten()
            .and_then(|rest| rest.strip_suffix('"'))
        {
            targets.insert(name.to_owned());
        }
    }
    targets
}

/// The `TARGETS=(…)` list of `.clusterfuzzlite/build.sh`.
fn build_script_targets() -> BTreeSet<String> {
    let script = read(".clusterfuzzlite/build.sh");
    let line = script
        .lines()
        .find_map(|line| line.strip_prefix("TARGETS=("))
        .expect("build.sh lists its TARGETS=(…)");
    line.trim_end_matches(')')
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[test]
fn clusterfuzzlite_builds_exactly_the_cargo_fuzz_targets() {
    let targets = cargo_targets();
    assert_eq!(
        targets,
        BTreeSet::from(
            [
                "redact",
                "validate",
                "tool_args",
                "scenario",
                "scenario_json",
                "protocol_lines"
            ]
            .map(str::to_owned)
        )
    );
    assert_eq!(build_script_targets(), targets);
    for target in &targets {
        let root = repository();
        assert!(
            root.join(format!("fuzz/fuzz_targets/{target}.rs"))
                .is_file(),
            "{target}"
        );
        assert!(root.join(format!("corpus/{target}")).is_dir(), "{target}");
        let inputs = std::fs::read_dir(root.join(format!("corpus/{target}")))
            .unwrap()
            .count();
        assert!(
            inputs >= 20,
            "corpus/{target} holds {inputs} inputs, fewer than 20"
        );
    }
    for dictionary in [
        "redact",
        "validate",
        "tool_args",
        "scenario_json",
        "protocol_lines",
    ] {
        assert!(
            repository()
                .join(format!("corpus/dict/{dictionary}.dict"))
                .is_file(),
            "{dictionary}"
        );
    }
}

/// The version requirement of `arbitrary` in a manifest.
fn arbitrary_requirement(path: &str) -> String {
    read(path)
        .lines()
        .find_map(|line| {
            let rest = line.trim().strip_prefix("arbitrary = ")?;
            let version = rest.split("version = \"").nth(1)?;
            Some(version.split('"').next()?.to_owned())
        })
        .unwrap_or_else(|| panic!("{path} does not declare arbitrary with a version"))
}

/// The version of `arbitrary` a lock file resolved.
fn arbitrary_locked(path: &str) -> String {
    let lock = read(path);
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"arbitrary\"" {
            let version = lines.next().unwrap_or_default();
            return version
                .trim_start_matches("version = \"")
                .trim_end_matches('"')
                .to_owned();
        }
    }
    panic!("{path} does not lock arbitrary")
}

#[test]
fn arbitrary_is_pinned_to_one_exact_version_on_both_sides() {
    let workspace = arbitrary_requirement("Cargo.toml");
    let fuzz = arbitrary_requirement("fuzz/Cargo.toml");
    assert!(workspace.starts_with('='), "the workspace pins {workspace}");
    assert_eq!(workspace, fuzz);
    let exact = workspace.trim_start_matches('=');
    assert_eq!(arbitrary_locked("Cargo.lock"), exact);
    assert_eq!(arbitrary_locked("fuzz/Cargo.lock"), exact);
}
