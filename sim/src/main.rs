//! The `ward` command.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ward_sim::redact_cmd::{self, RedactArgs};

/// ward: deterministic simulation, property testing and fuzzing of an AI chart agent's tool runtime.
#[derive(Parser)]
#[command(name = "ward", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Redact standard input to standard output (secrets, keys, home paths).
    Redact(RedactArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Redact(args) => redact_cmd::run(&args),
    }
}
