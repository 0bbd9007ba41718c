//! Writes an input of the structure-aware `scenario` fuzz target as a scenario file:
//!
//! ```sh
//! cargo run -q -p ward-checks --example fuzz_to_scenario -- fuzz/artifacts/scenario/crash-… \
//!     > corpus/scenarios/fuzz/NAME.json
//! ```
//!
//! The binary corpus of the target goes stale when `ward_checks::scenario::FuzzScenario` changes;
//! the scenario file does not, and `cargo test` replays it (`checks/tests/scenario_corpus_replay.rs`).

use std::process::ExitCode;

use ward_checks::scenario::FuzzScenario;
use ward_sim::world::World;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: fuzz_to_scenario FILE");
        return ExitCode::from(2);
    };
    let data = match std::fs::read(&path) {
        Ok(data) => data,
        Err(error) => {
            eprintln!("{path}: {error}");
            return ExitCode::from(2);
        }
    };
    let Some(fuzz) = FuzzScenario::decode(&data) else {
        eprintln!("{path}: the bytes run out before a scenario is complete");
        return ExitCode::from(2);
    };
    if std::env::var_os("FUZZ_DEBUG").is_some() {
        eprintln!("{fuzz:#?}");
    }
    let world = World::new();
    println!("{}", fuzz.to_scenario(world.registry(true)).to_json());
    ExitCode::SUCCESS
}
