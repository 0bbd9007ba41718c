//! ward-sim: the simulator library and the `ward` command-line program.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod cli;
pub mod catalogue;
pub mod generate;
pub mod invariants;
pub mod rng;
pub mod scenario;
pub mod simulate;
pub mod trace;
pub mod view;
pub mod world;
