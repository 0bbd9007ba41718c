//! The chart state machine's reference side, used by `prop_chart_state_machine`:
//!
//! - [`catalogue`]: the model's own knowledge of the catalogue (SPEC §8);
//! - [`model`]: the reference model of the chart, its tools and undo;
//! - [`aiming`]: the strategies that aim transitions at the model's state.

pub mod aiming;
pub mod catalogue;
pub mod model;
