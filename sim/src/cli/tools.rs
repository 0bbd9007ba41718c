//! `ward tools [--read-only] [--with-code-interpreter] [--json]`: the catalogue.

use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use ward_core::chart::tools::{CatalogueOptions, registry};
use ward_core::policy::RunPolicy;

/// Arguments of `ward tools`.
#[derive(Args, Debug, Clone, Default)]
pub struct ToolsArgs {
    /// Only the tools a read-only run is offered.
    #[arg(long)]
    pub read_only: bool,
    /// Also register the opt-in `code_interpreter`.
    #[arg(long)]
    pub with_code_interpreter: bool,
    /// An array of {name, label, safety, executionMode, parameters}.
    #[arg(long)]
    pub json: bool,
}

/// Prints the catalogue.
pub fn run(args: &ToolsArgs) -> ExitCode {
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
        ..RunPolicy::default()
    };
    let tools = registry.offered(&policy);
    if args.json {
        let listed: Vec<_> = tools
            .iter()
            .map(|tool| {
                let meta = tool.meta();
                json!({
                    "name": meta.name(),
                    "label": meta.label(),
                    "safety": meta.safety(),
                    "executionMode": meta.execution_mode(),
                    "parameters": meta.parameters(),
                })
            })
            .collect();
        say!("{}", serde_json::Value::Array(listed));
        return ExitCode::SUCCESS;
    }
    let width = tools
        .iter()
        .map(|tool| tool.name().len())
        .max()
        .unwrap_or(4);
    say!("{:width$}  {:11}  {:10}  label", "name", "safety", "mode");
    for tool in tools {
        let meta = tool.meta();
        say!(
            "{:width$}  {:11}  {:10}  {}",
            meta.name(),
            meta.safety().as_str(),
            meta.execution_mode().as_str(),
            meta.label()
        );
    }
    ExitCode::SUCCESS
}
