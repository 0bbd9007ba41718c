//! The subcommands of the `ward` program (SPEC §12). Each module holds one subcommand's
//! arguments and its `run` function, which returns the process exit code: 0 on success, 2 on
//! misuse or bad input, with a message on standard error that names the problem.
//!
//! Reports go to standard output through [`say`]: when the reader goes away (a closed pipe,
//! as in `ward tools | head -1`) the program ends quietly with status 141, as a Unix filter
//! killed by `SIGPIPE` would (the output was cut short, and a script with `pipefail` should
//! know); any other write error ends it with status 2 and a message. Messages and progress
//! go to standard error through [`tell`], which drops what it cannot write (nobody is left
//! to tell). Neither panics.

/// `eprintln!` without the panic: see [`tell`].
macro_rules! tell {
    ($($argument:tt)*) => {
        $crate::cli::tell(format_args!($($argument)*))
    };
}

/// `println!` for reports: see [`say`].
macro_rules! say {
    ($($argument:tt)*) => {
        $crate::cli::say(format_args!($($argument)*))
    };
}

pub mod bugs;
pub mod call;
pub mod doctor;
mod failure;
pub mod merge;
pub mod pipe;
pub mod redact;
pub mod replay;
pub mod run;
mod seed_digests;
pub mod serve;
mod table;
pub mod tools;

use std::process::ExitCode;

/// The exit status of a program whose standard output was closed by its reader.
pub const BROKEN_PIPE_STATUS: u8 = 141;

/// Writes one line to standard output, or ends the program (module docs) if it cannot.
pub fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = writeln!(stdout, "{line}") {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(i32::from(BROKEN_PIPE_STATUS));
        }
        tell!("ward: cannot write to standard output: {error}");
        std::process::exit(2);
    }
}

/// Writes one line to standard error; a line that cannot be written is dropped.
pub fn tell(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Prints `message` as a usage or input error and returns exit code 2.
pub fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    tell!("ward: {message}");
    ExitCode::from(2)
}
