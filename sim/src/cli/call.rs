//! `ward call TOOL [--read-only] [--disable TOOL]... [--secret V]... [--with-code-interpreter]`:
//! one call through the entry point, on a fresh default chart.
//!
//! Standard input is the raw argument text, exactly as a model would send it. The envelope
//! is printed as one JSON line and the exit code is 0 whenever an envelope is printed,
//! success or failure: a refusal is the runtime's answer, not a misuse of `ward`. Misuse
//! (bad flags, a secret the guard refuses, standard input that is not UTF-8 text) exits 2.

use std::collections::BTreeSet;
use std::io::Read;
use std::process::ExitCode;

use clap::Args;
use ward_core::chart::SharedChart;
use ward_core::chart::tools::{CatalogueOptions, registry};
use ward_core::guard::SecretGuard;
use ward_core::policy::RunPolicy;
use ward_core::tool::ToolCall;

/// The seed of the default chart's market.
pub const DEFAULT_CHART_SEED: u64 = 42;

/// Arguments of `ward call`.
#[derive(Args, Debug, Clone)]
pub struct CallArgs {
    /// The tool to call.
    pub tool: String,
    /// Run the call as part of a read-only run.
    #[arg(long)]
    pub read_only: bool,
    /// Switch a tool off (repeatable).
    #[arg(long = "disable", value_name = "TOOL")]
    pub disabled: Vec<String>,
    /// A configured secret value the call must not carry (repeatable).
    #[arg(long = "secret", value_name = "V")]
    pub secrets: Vec<String>,
    /// Also register the opt-in `code_interpreter`.
    #[arg(long)]
    pub with_code_interpreter: bool,
}

/// Runs the call and prints its envelope.
pub fn run(args: &CallArgs) -> ExitCode {
    let mut raw = Vec::new();
    if let Err(error) = std::io::stdin().read_to_end(&mut raw) {
        return super::usage_error(format!("cannot read standard input: {error}"));
    }
    let arguments = match String::from_utf8(raw) {
        Ok(text) => text,
        Err(error) => {
            return super::usage_error(format!(
                "standard input is not UTF-8 text (invalid byte at offset {})",
                error.utf8_error().valid_up_to()
            ));
        }
    };
    let guard = match SecretGuard::new(&args.secrets) {
        Ok(guard) => guard,
        Err(error) => return super::usage_error(format!("--secret: {error}")),
    };
    let options = CatalogueOptions {
        code_interpreter: args.with_code_interpreter,
    };
    let registry = match registry(options) {
        Ok(registry) => registry,
        Err(error) => {
            return super::usage_error(format!("the built-in catalogue is invalid: {error}"));
        }
    };
    let policy = RunPolicy {
        read_only: args.read_only,
        disabled: args.disabled.iter().cloned().collect::<BTreeSet<_>>(),
    };
    let call = ToolCall {
        id: "call-1".to_owned(),
        name: args.tool.clone(),
        arguments,
    };
    let chart = SharedChart::new(DEFAULT_CHART_SEED);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return super::usage_error(format!("cannot start the runtime: {error}")),
    };
    let result = runtime.block_on(registry.execute_standalone(&policy, &guard, &chart, &call));
    let result = guard.result(result);
    say!("{}", result.to_json());
    ExitCode::SUCCESS
}
