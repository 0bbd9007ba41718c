//! What the simulator's test crates share: the repository's files, fresh folders, and
//! starting the `ward` program and reading what it printed.

// Each test crate compiles this module on its own and uses only some of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

pub mod kill;
pub mod replay;

/// The repository's root folder, where `corpus/` and `deploy/` live.
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh, empty folder for one test's files, named after the test crate and the process so
/// that test crates and runs side by side never share one.
pub fn folder(test: &str) -> PathBuf {
    let folder = std::env::temp_dir().join(format!(
        "ward-{}-{}-{test}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    folder
}

/// Starts `ward ARGUMENTS` with `stdin` as its standard input and both outputs piped.
pub fn spawn_ward(arguments: &[&str], stdin: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ward"))
        .args(arguments)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ward starts")
}

/// Runs `ward ARGUMENTS` with no standard input, to its end.
pub fn ward(arguments: &[&str]) -> Output {
    spawn_ward(arguments, Stdio::null())
        .wait_with_output()
        .expect("ward ends")
}

/// Runs `ward ARGUMENTS` with `input` as its standard input, to its end.
pub fn ward_with_input(arguments: &[&str], input: impl AsRef<[u8]>) -> Output {
    let mut child = spawn_ward(arguments, Stdio::piped());
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.as_ref().to_vec();
    // Written from another thread, so that a large input cannot deadlock against a full
    // output pipe; a command may exit before reading its input, and a closed pipe is not a
    // test failure.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().expect("ward ends");
    writer.join().expect("the writer ends");
    output
}

/// `ward merge --json FILES`.
pub fn merge(files: &[PathBuf]) -> Output {
    let mut arguments = vec!["merge", "--json"];
    arguments.extend(files.iter().map(|file| file.to_str().unwrap()));
    ward(&arguments)
}

/// What a command wrote to its standard error, as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The last line of a file or output, as JSON.
pub fn last_line(text: &str) -> Value {
    serde_json::from_str(text.lines().last().unwrap_or_default())
        .unwrap_or_else(|error| panic!("{error}: {text}"))
}

/// The invariants a campaign of `ward run --runtime command --seeds seeds --json` broke (each
/// with at least one violated run), its shrunk failures written under a fresh folder named
/// `test`.
pub fn broken_invariants(command: &str, seeds: &str, test: &str) -> Vec<String> {
    let out = folder(test);
    let arguments = [
        "run",
        "--runtime",
        command,
        "--seeds",
        seeds,
        "--json",
        "--out",
    ];
    let output = ward(&[&arguments[..], &[out.to_str().unwrap()]].concat());
    let summary = last_line(&String::from_utf8_lossy(&output.stdout));
    let _ = std::fs::remove_dir_all(out);
    let by_invariant = summary["byInvariant"].as_object().expect("byInvariant");
    (by_invariant.iter())
        .filter(|(_, counts)| counts["violated"].as_u64().unwrap_or(0) > 0)
        .map(|(id, _)| id.clone())
        .collect()
}
