//! `protocol_lines`: a thin shell over [`ward_checks::check_protocol_lines`]: the bytes are an
//! adapter's standard output, read by ward's own reader into answers or a named violation.
//! A failed property is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(failure) = ward_checks::check_protocol_lines(data) {
        panic!("protocol_lines: {failure}");
    }
});
