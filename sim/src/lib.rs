//! ward-sim: the simulator library and the `ward` command-line program.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod campaign;
pub mod catalogue;
pub mod cli;
pub mod generate;
pub mod oracle;
pub mod rng;
pub mod scenario;
pub mod shrink;
pub mod simulate;
pub mod trace;
pub mod view;
pub mod world;
