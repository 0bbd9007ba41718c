//! Runtimes behind the protocol (SPEC §15): what answers ward's messages.
//!
//! - [`core`]: ward's own core, in process, the runtime `ward serve` speaks for (P5).

pub mod core;
pub mod process;
