//! `scenario_json`: a thin shell over [`ward_checks::scenario::check_scenario_json`]: the bytes are a
//! scenario file, refused cleanly or run with every invariant holding. A failure is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(failure) = ward_checks::scenario::check_scenario_json(data) {
        panic!("scenario_json: {failure}");
    }
});
