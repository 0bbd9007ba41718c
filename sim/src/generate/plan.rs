//! What generation reads from a registry, worked out once per campaign rather than per seed.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use ward_core::registry::Registry;

use super::args;

/// What generation reads from a registry, worked out once rather than per seed: the tools
/// with whether each only reads (with and without the opt-in `code_interpreter`), and each
/// tool's published schema and argument plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// By whether the scenario registers `code_interpreter`.
    catalogues: [Catalogue; 2],
    /// Each tool's schema and argument plan, by name.
    pub(super) arguments: BTreeMap<Arc<str>, ToolArguments>,
}

/// A tool's published schema, and how to build valid input for it.
#[derive(Clone, Debug)]
pub(super) struct ToolArguments {
    /// The schema the model is offered.
    pub(super) schema: Value,
    /// The plan of its valid inputs.
    pub(super) arguments: args::Arguments,
}

/// A registered tool, as a run's offer and its calls draw it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct RegisteredTool {
    pub(super) name: Arc<str>,
    /// Whether it only reads.
    pub(super) reads_only: bool,
}

/// The tools one kind of scenario registers.
#[derive(Clone, Debug)]
pub(super) struct Catalogue {
    /// In name order.
    pub(super) registered: Vec<RegisteredTool>,
    /// Their names: those that only read, and those that change something.
    pub(super) reads: Vec<Arc<str>>,
    pub(super) writes: Vec<Arc<str>>,
    /// The reads that run in parallel (every read but the sequential `ask_user`), in name
    /// order: the deadline edge's batches.
    pub(super) parallel_reads: Vec<Arc<str>>,
}

impl Catalogue {
    fn new(registry: &Registry, code_interpreter: bool) -> Catalogue {
        let mut registered: Vec<RegisteredTool> = registry
            .tools()
            .filter(|tool| code_interpreter || tool.name() != "code_interpreter")
            .map(|tool| RegisteredTool {
                name: Arc::clone(tool.meta().shared_name()),
                reads_only: tool.meta().is_read_only(),
            })
            .collect();
        // In name order: a run's tool behaviours are drawn in this order into a map kept in
        // name order.
        registered.sort();
        let names = |reads: bool| {
            registered
                .iter()
                .filter(|tool| tool.reads_only == reads)
                .map(|tool| Arc::clone(&tool.name))
                .collect()
        };
        let mut parallel_reads: Vec<Arc<str>> = registry
            .tools()
            .filter(|tool| tool.meta().is_read_only() && !tool.meta().is_sequential())
            .map(|tool| Arc::clone(tool.meta().shared_name()))
            .collect();
        parallel_reads.sort();
        Catalogue {
            reads: names(true),
            writes: names(false),
            parallel_reads,
            registered,
        }
    }
}

impl Plan {
    /// The plan of `registry` (the registry with the opt-in tools).
    pub fn new(registry: &Registry) -> Plan {
        Plan {
            catalogues: [
                Catalogue::new(registry, false),
                Catalogue::new(registry, true),
            ],
            arguments: registry
                .tools()
                .map(|tool| {
                    let schema = tool.meta().parameters();
                    let arguments = ToolArguments {
                        schema: schema.clone(),
                        arguments: args::Arguments::compile(tool.name(), schema),
                    };
                    (Arc::clone(tool.meta().shared_name()), arguments)
                })
                .collect(),
        }
    }

    /// The tools a scenario registers, by whether it registers `code_interpreter`.
    pub(super) fn catalogue(&self, code_interpreter: bool) -> &Catalogue {
        &self.catalogues[usize::from(code_interpreter)]
    }
}
