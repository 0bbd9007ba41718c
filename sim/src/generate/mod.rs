//! Generated scenarios (SPEC §10): a plausible model that builds valid calls from the
//! offered schemas and reacts to results, mixed with every misbehaviour of the
//! specification, chosen per seed by swarm testing.
//!
//! **Swarm testing.** Each seed first draws which misbehaviours are on and how often (a rate
//! per decision point), so that some seeds hammer one failure mode and others mix many;
//! campaigns cover combinations that a fixed mix would make rare.
//!
//! **Reactions.** The provider's script is fixed when the scenario is generated, so a
//! generated run is an ordinary scenario file. Where the model must react to what it
//! received (correct a refused input, obey an injected instruction), the script holds a
//! reaction that the provider evaluates on the results it actually received.
//!
//! **Edges.** Each limit of the SPEC is also generated at limit − 1, the limit and limit + 1,
//! with a fixed probability per decision point ([`EDGE_PER_MILLE`]; less for the costly ones) rather than a swarm-drawn
//! one, so every seed range visits them: inputs with 4, 5 and 6 errors (the cap of 5), argument
//! text of 256 KiB ± 1 byte, call ids of 160 ± 1 characters (in ASCII or two-byte letters),
//! batches at the cap ± 1, runs that call tools for the turn limit ± 1 turns, tools that take
//! the inactivity timeout ± 1 ms from the run's start or from activity 1 ms before the
//! deadline would fire (a provider reply, a call of the same batch finishing), provider answers at the provider timeout ± 1 ms, and as many
//! retryable provider errors in a row as the retries allow, and one more, with `retry-after`
//! at the 60 s cap ± 1 ms, configured values of 8 characters and echoes of 7, 8 and 9
//! characters of one. Each is a misbehaviour named `edge-…`, counted like the others.
//!
//! Every random choice comes from one [`SimRng`] seeded with the seed.
//!
//! | file | what |
//! |---|---|
//! | `swarm.rs` | the misbehaviours, and which of them a seed turns on and how often |
//! | `edges.rs` | the SPEC's limits the edges are generated around |
//! | `plan.rs` | what generation reads from a registry, once per campaign |
//! | `runs.rs` | sessions and runs: the offer, the limits |
//! | `prompt.rs` | a run's prompt, with the secrets planted in it |
//! | `behaviours.rs` | what each tool body does in a run: latency, faults, injections |
//! | `turns.rs` | the provider's script: batches, provider errors and timeouts |
//! | `calls.rs` | one batch's calls, plausible or misbehaving |
//! | `misbehave.rs` | the misbehaviours of one call's arguments, combined |
//! | `args/`, `secrets.rs`, `vocabulary.rs` | tool arguments (valid and broken), planted secrets, words and ids |

pub mod args;
pub mod secrets;
pub mod vocabulary;

mod behaviours;
mod calls;
mod edges;
mod misbehave;
mod plan;
mod prompt;
mod runs;
mod swarm;
mod turns;

use ward_core::fault::Fault;
use ward_core::registry::Registry;

use crate::rng::SimRng;
use crate::scenario::{PlantedSecret, SCENARIO_VERSION, Scenario};
use plan::Catalogue;
use secrets::Labels;

pub use plan::Plan;
pub use swarm::{EDGE_PER_MILLE, Misbehaviour, Swarm};

/// A generated scenario and how often each misbehaviour was applied.
#[derive(Clone, Debug)]
pub struct Generated {
    /// The scenario.
    pub scenario: Scenario,
    /// Count per misbehaviour, in [`Misbehaviour::ALL`] order.
    pub misbehaviours: Vec<u32>,
}

/// Generates the scenario of `seed` against the tools of `registry` (the registry with the
/// opt-in tools; a scenario may leave them out). Campaigns build the [`Plan`] once and call
/// [`Plan::generate`].
pub fn generate(seed: u64, registry: &Registry, bug: Option<Fault>) -> Generated {
    Plan::new(registry).generate(seed, bug)
}

impl Plan {
    /// Generates the scenario of `seed`.
    pub fn generate(&self, seed: u64, bug: Option<Fault>) -> Generated {
        let mut rng = SimRng::new(seed);
        let swarm = Swarm::draw(&mut rng);
        let code_interpreter = rng.percent(20);
        let catalogue: &Catalogue = self.catalogue(code_interpreter);
        let mut generator = Generator {
            rng,
            swarm,
            counts: vec![0; Misbehaviour::ALL.len()],
            labels: Labels::default(),
            secrets: Vec::new(),
            plan: self,
            catalogue,
        };
        let sessions_count = if generator.rng.percent(15) { 2 } else { 1 };
        let sessions = (0..sessions_count).map(|_| generator.session()).collect();
        Generated {
            scenario: Scenario {
                version: SCENARIO_VERSION,
                seed: Some(seed),
                description: None,
                bug: bug.map(|fault| fault.name().to_owned()),
                chart_seed: seed % 1000,
                code_interpreter,
                secrets: generator.secrets,
                sessions,
                expect: None,
            },
            misbehaviours: generator.counts,
        }
    }
}

/// The state of one scenario being generated, shared by the files of this module: each adds
/// the methods of one part of the scenario.
struct Generator<'p> {
    rng: SimRng,
    swarm: Swarm,
    /// How often each misbehaviour fired, in [`Misbehaviour::ALL`] order.
    counts: Vec<u32>,
    labels: Labels,
    /// Every secret planted so far, in the order planted.
    secrets: Vec<PlantedSecret>,
    plan: &'p Plan,
    /// The tools the scenario registers.
    catalogue: &'p Catalogue,
}

impl Generator<'_> {
    /// Whether `misbehaviour` fires at this decision point; counts it when it does.
    fn fire(&mut self, misbehaviour: Misbehaviour) -> bool {
        let fires = if misbehaviour.is_edge() {
            self.rng.below(1000) < misbehaviour.edge_per_mille()
        } else {
            let rate = self.swarm.rate(misbehaviour);
            rate > 0 && self.rng.percent(rate)
        };
        if fires {
            self.counts[misbehaviour as usize] += 1;
        }
        fires
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ward_core::chart::tools::{CatalogueOptions, registry};

    #[test]
    fn the_same_seed_generates_the_same_scenario() {
        let registry = registry(CatalogueOptions {
            code_interpreter: true,
        })
        .unwrap();
        for seed in 0..50 {
            let first = generate(seed, &registry, None);
            let second = generate(seed, &registry, None);
            assert_eq!(first.scenario, second.scenario);
            assert_eq!(first.misbehaviours, second.misbehaviours);
        }
        assert_ne!(
            generate(1, &registry, None).scenario,
            generate(2, &registry, None).scenario
        );
    }

    #[test]
    fn generated_scenarios_are_valid_scenario_files() {
        let registry = registry(CatalogueOptions {
            code_interpreter: true,
        })
        .unwrap();
        for seed in 0..100 {
            let scenario = generate(seed, &registry, Some(Fault::NoTurnLimit)).scenario;
            let text = scenario.to_json();
            let back = Scenario::from_json(&text, "generated")
                .unwrap_or_else(|error| panic!("seed {seed}: {error}"));
            assert_eq!(back, scenario);
        }
    }
}
