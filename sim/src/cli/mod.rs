//! The subcommands of the `ward` program (SPEC §12). Each module holds one subcommand's
//! arguments and its `run` function, which returns the process exit code: 0 on success, 2 on
//! misuse or bad input, with a message on standard error that names the problem.

pub mod bugs;
pub mod call;
pub mod redact;
pub mod replay;
pub mod run;
pub mod tools;

use std::process::ExitCode;

/// Prints `message` as a usage or input error and returns exit code 2.
pub fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("ward: {message}");
    ExitCode::from(2)
}
