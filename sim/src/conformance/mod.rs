//! Conformance probes of ward's own core: the rules a scenario cannot exercise, because they
//! act before any run — R2 (what registration accepts, [`registration`]), R8a (any schema a
//! runtime developer registers: the official JSON Schema Test Suite through the entry point,
//! [`suite`]) and R8 (the cost of reporting errors, counted in allocations, [`cost`]). They
//! call `ward_core` directly, so they judge ward's core in this process and never a runtime
//! behind the protocol: the oracle does not run them. `cargo test` does
//! (`sim/tests/simulator_alone.rs`, whose check of the core cargo-mutants runs).

pub mod cost;
pub mod registration;
pub mod suite;

use crate::catalogue::Schemas;

/// How ward's core disagrees with R2, R8a or R8, if it does: the first disagreement found,
/// named.
pub fn disagreement(schemas: &Schemas) -> Option<String> {
    registration::disagreement()
        .or_else(suite::disagreement)
        .or_else(|| cost::disagreement(schemas))
}
