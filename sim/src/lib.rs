//! ward-sim: the simulator library and the `ward` command-line program.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod cli;
