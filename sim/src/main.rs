//! `ward`: the command-line program of ward (SPEC §12).
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ward_sim::cli::{call, tools};

/// A deterministic simulation, property-testing and fuzzing harness for the tool runtime of
/// an AI chart agent.
#[derive(Parser, Debug)]
#[command(name = "ward", version, about, long_about = None)]
struct Ward {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Lists the tool catalogue.
    Tools(tools::ToolsArgs),
    /// Runs one tool call on a fresh default chart; standard input is the raw argument text.
    Call(call::CallArgs),
}

fn main() -> ExitCode {
    let ward = Ward::parse();
    match ward.command {
        Some(Command::Tools(args)) => tools::run(&args),
        Some(Command::Call(args)) => call::run(&args),
        None => {
            eprintln!(
                "ward: simulation campaigns are not built yet.\n\
                 Available now: `ward tools` (the catalogue) and `ward call TOOL` (one call).\n\
                 See `ward --help`."
            );
            ExitCode::from(2)
        }
    }
}
