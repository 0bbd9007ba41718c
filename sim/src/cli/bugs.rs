//! `ward bugs [--json]`: the seeded bug catalogue (SPEC §11).

use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use ward_core::fault::Fault;

/// Arguments of `ward bugs`.
#[derive(Args, Debug, Clone, Default)]
pub struct BugsArgs {
    /// An array of {name, invariant, description}.
    #[arg(long)]
    pub json: bool,
}

/// Prints the catalogue.
pub fn run(args: &BugsArgs) -> ExitCode {
    if args.json {
        let bugs: Vec<_> = Fault::ALL
            .iter()
            .map(|fault| json!({"name": fault.name(), "invariant": fault.invariant(), "description": fault.description()}))
            .collect();
        say!("{}", serde_json::Value::Array(bugs));
        return ExitCode::SUCCESS;
    }
    say!("{:30} {:9} description", "name", "invariant");
    for fault in Fault::ALL {
        say!(
            "{:30} {:9} {}",
            fault.name(),
            fault.invariant(),
            fault.description()
        );
    }
    ExitCode::SUCCESS
}
