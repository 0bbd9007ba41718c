//! `validate`: a thin shell over [`ward_checks::check_validate`], whose docs give the input
//! format and the properties asserted. A failed property is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(failure) = ward_checks::check_validate(data) {
        panic!("validate: {failure}");
    }
});
