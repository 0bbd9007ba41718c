//! What the command-line test crates share: starting the `ward` program.

use std::process::{Child, Command, Stdio};

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
