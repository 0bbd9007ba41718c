//! `scenario` (structure-aware): a thin shell over [`ward_checks::scenario::check_scenario`]. The
//! bytes decode with `arbitrary` into a `ward_checks::scenario::FuzzScenario`, which becomes a valid
//! scenario run through the simulator with every invariant checked. A violation is a crash;
//! `cargo run -p ward-checks --example fuzz_to_scenario -- FILE` writes the crasher as a JSON
//! scenario.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(failure) = ward_checks::scenario::check_scenario(data) {
        panic!("scenario: {failure}");
    }
});
