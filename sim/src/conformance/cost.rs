//! R8: reporting errors has bounded cost. "Finding the first 5 errors
//! of a large invalid input must not require collecting every error." Time is no verdict a
//! deterministic simulator can give, but the work of collecting an error is visible in a
//! count that is: every error a runtime collects is at least one heap allocation (its path),
//! so a runtime that collects every error of an input allocates in proportion to the number
//! of errors, and one that stops at the fifth does not.
//!
//! When the program has installed an allocation counter ([`count_allocations_with`]), the
//! probe registers every published tool schema that has an
//! array-typed property as the parameters of a read-only tool of its own, and calls it through
//! the registry's entry point twice: with that property holding [`SMALL`] and [`LARGE`] items
//! of a value no published item schema accepts (`true`), every other member left out. Both
//! calls must get `TOOL_INPUT_INVALID` with the same number of field errors, and the larger
//! may allocate at most [`GROWTH_MAX`] more times than the smaller: the parse of the larger
//! array grows its list a few times more, the 18,000 further errors a runtime that collects
//! them all would record are at least 18,000 allocations more. The items themselves allocate
//! nothing when parsed (`true` is no string), so the count sees the error walk only.
//!
//! Counting is per thread and is the counter's business: the simulator asks it to count the
//! allocations of one closure on the calling thread. The test of the simulator alone
//! (`sim/tests/simulator_alone.rs`) installs `allocation-counter`'s allocator; the `ward`
//! program keeps mimalloc for speed and installs none, so there R8's cost goes unchecked. A
//! runtime behind the protocol (§15) is a process of its own whose allocations the simulator
//! does not see; this check is of the core in this process ([`super`]).

use std::sync::OnceLock;

use futures::FutureExt;
use serde_json::{Map, Value};
use ward_core::chart::SharedChart;
use ward_core::envelope::Outcome;
use ward_core::guard::SecretGuard;
use ward_core::policy::RunPolicy;
use ward_core::tool::ToolCall;

use crate::catalogue::Schemas;

/// Counts the heap allocations the calling thread makes while it runs the closure.
pub type AllocationCounter = fn(&mut dyn FnMut()) -> u64;

/// Items in the smaller call.
pub const SMALL: usize = 2_000;

/// Items in the larger call: well under the argument limit (5 bytes an item).
pub const LARGE: usize = 20_000;

/// How many more allocations the larger call may make than the smaller.
pub const GROWTH_MAX: u64 = 200;

static COUNTER: OnceLock<AllocationCounter> = OnceLock::new();

/// Installs the counter the check of R8's cost uses, before the first [`super::disagreement`]
/// is made; a second call changes nothing.
pub fn count_allocations_with(counter: AllocationCounter) {
    let _ = COUNTER.set(counter);
}

/// The first way the runtime's error reporting costs more than R8 allows, computed once per
/// process; `None` also when no counter is installed.
pub fn disagreement(schemas: &Schemas) -> Option<String> {
    static FOUND: OnceLock<Option<String>> = OnceLock::new();
    FOUND
        .get_or_init(|| first_disagreement(*COUNTER.get()?, schemas))
        .clone()
}

fn first_disagreement(counter: AllocationCounter, schemas: &Schemas) -> Option<String> {
    let chart = SharedChart::new(0);
    let policy = RunPolicy::default();
    let guard = SecretGuard::default();
    for tool in schemas.registration_order() {
        let Some(parameters) = schemas.parsed(tool) else {
            continue;
        };
        let arrays = parameters
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(_, member)| member.get("type").is_some_and(|kind| kind == "array"));
        for (member, _) in arrays {
            let description = "Validates one large invalid input.";
            let Ok(registry) = super::suite::probe("cost_probe", description, parameters) else {
                return Some(format!(
                    "R8, {tool}: registration refused its published schema"
                ));
            };
            let mut measured = [(0_u64, None::<usize>); 2];
            for (slot, items) in measured.iter_mut().zip([SMALL, LARGE]) {
                let mut input = Map::new();
                input.insert(member.clone(), Value::Array(vec![Value::Bool(true); items]));
                let call = ToolCall {
                    id: "cost".to_owned(),
                    name: "cost_probe".to_owned(),
                    arguments: Value::Object(input).to_string(),
                };
                let mut fields = None;
                let allocations = counter(&mut || {
                    let result = registry
                        .execute_standalone(&policy, &guard, &chart, &call)
                        .now_or_never();
                    fields = result.map(|result| match &result.outcome {
                        Outcome::Failure(error) if error.code == "TOOL_INPUT_INVALID" => {
                            error.fields.as_ref().map_or(0, Vec::len)
                        }
                        _ => 0,
                    });
                });
                *slot = (allocations, fields);
            }
            let named = |what: String| {
                format!("R8, {tool}, `{member}` holding {SMALL} and {LARGE} items `true`: {what}")
            };
            let [(small, small_fields), (large, large_fields)] = measured;
            match (small_fields, large_fields) {
                (Some(a), Some(b)) if a > 0 && a == b => {}
                _ => {
                    return Some(named(format!(
                        "TOOL_INPUT_INVALID with the same field errors twice expected, got \
                         {small_fields:?} and {large_fields:?} errors"
                    )));
                }
            }
            if large.saturating_sub(small) > GROWTH_MAX {
                return Some(named(format!(
                    "{small} and {large} allocations: the error walk grows with the errors \
                     beyond the first five, more than {GROWTH_MAX} allocations more"
                )));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::world::World;

    fn schemas() -> Schemas {
        Schemas::compile(World::new().registry(true))
    }

    fn counted(run: &mut dyn FnMut()) -> u64 {
        allocation_counter::measure(run).count_total
    }

    #[test]
    fn the_cores_error_walk_does_not_grow_with_the_errors() {
        assert_eq!(first_disagreement(counted, &schemas()), None);
    }

    #[test]
    fn a_counter_that_sees_the_walk_grow_is_a_disagreement() {
        thread_local! {
            static CALLS: Cell<u64> = const { Cell::new(0) };
        }
        // One allocation per item: what collecting every error would cost at the least.
        fn growing(run: &mut dyn FnMut()) -> u64 {
            run();
            let calls = CALLS.with(|calls| calls.replace(calls.get() + 1));
            if calls.is_multiple_of(2) {
                SMALL as u64
            } else {
                LARGE as u64
            }
        }
        let found = first_disagreement(growing, &schemas()).expect("a disagreement");
        assert!(found.contains("grows with the errors"), "{found}");
        assert!(found.starts_with("R8, "), "{found}");
    }

    #[test]
    fn the_probes_cover_every_published_array_member() {
        let schemas = schemas();
        let probed: usize = schemas
            .registration_order()
            .iter()
            .filter_map(|tool| schemas.parsed(tool)?.get("properties")?.as_object())
            .map(|members| {
                members
                    .values()
                    .filter(|member| member.get("type").is_some_and(|kind| kind == "array"))
                    .count()
            })
            .sum();
        assert!(probed >= 3, "{probed} array members");
    }
}
