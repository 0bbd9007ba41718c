//! `tool_args`: a thin shell over [`ward_checks::check_tool_args`], whose docs give the input
//! format and the properties asserted. A failed property is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(failure) = ward_checks::check_tool_args(data) {
        panic!("tool_args: {failure}");
    }
});
