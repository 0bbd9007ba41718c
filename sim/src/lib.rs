//! ward-sim: the simulator library.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod redact_cmd;
